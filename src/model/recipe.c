/* recipe.c — `kgl train --recipe FILE`: training options written once for
 * every graph, with the settings that depend on the graph's size given as
 * formulas of its counts and computed here.
 *
 * A recipe is the words of `kgl train` options, whitespace-separated; '#'
 * starts a comment to the end of its line. A word that starts with '=' is a
 * formula, replaced by its value:
 *
 *   formula := '=' sum
 *   sum     := product (('+' | '-') product)*
 *   product := unary (('*' | '/') unary)*
 *   unary   := '-' unary | atom
 *   atom    := number | name | func '(' sum (',' sum)* ')' | '(' sum ')'
 *   names   n_entities, n_relations, n_train (training triples), n_pairs (the
 *           distinct ordered (head, tail) pairs the training triples link)
 *   funcs   min(a, b, ...), max(a, b, ...), round(x), ceil(x), sqrt(x), log2(x)
 *
 * A line may start with a guard, the word "=if(COND)": COND is two sums
 * compared by one of < <= > >= == !=, and when it is false the rest of the
 * line is left out (its formulas are not evaluated). One recipe can so hold
 * the options of graphs of every size, each line saying for which.
 *
 * A formula is one word (no spaces), nested at most KGL_RECIPE_MAX_DEPTH
 * deep (parentheses, function calls and signs: each level is a few frames of
 * this recursive descent, so the bound keeps its stack small). Its value is written back as a whole
 * number when it is one, else with 15 significant digits; `kgl train` then
 * parses and range-checks it as if it had been typed. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

typedef struct parser {
    const char *s, *p;
    const kgl_recipe_vars *v;
    char *why;
    size_t cap;
    int depth; /* of nesting at P->p */
    bool failed;
} parser;

/* "what at 'the rest'", the rest cut short: a formula may be long. */
static double fail(parser *P, const char *what)
{
    if (!P->failed) {
        const char *rest = *P->p ? P->p : "the end";
        int keep = (int)kgl_utf8_prefix(rest, 24, SIZE_MAX); /* whole characters */
        snprintf(P->why, P->cap, "%s at '%.*s%s'", what, keep, rest, rest[keep] ? "..." : "");
    }
    P->failed = true;
    return NAN;
}

/* One level deeper (a parenthesis, a function's arguments, a sign); false
   past KGL_RECIPE_MAX_DEPTH. The caller steps back out (depth--) after. */
static bool deeper(parser *P)
{
    if (++P->depth <= KGL_RECIPE_MAX_DEPTH) return true;
    char what[64];
    snprintf(what, sizeof what, "nested more than %d deep", KGL_RECIPE_MAX_DEPTH);
    fail(P, what);
    return false;
}

static double sum(parser *P);

static const char *const var_names[] = {"n_entities", "n_relations", "n_train", "n_pairs"};
static const char *const func_names[] = {"min", "max", "round", "ceil", "sqrt", "log2"};
#define N_VARS ((int)(sizeof var_names / sizeof var_names[0]))
#define N_FUNCS ((int)(sizeof func_names / sizeof func_names[0]))
#define VAR_LIST "n_entities, n_relations, n_train, n_pairs" /* the names above, for messages */
#define FUNC_LIST "min, max, round, ceil, sqrt, log2"

static double atom(parser *P)
{
    const char *p = P->p;
    if (isdigit((unsigned char)*p) || *p == '.') {
        char *end;
        double x = strtod(p, &end);
        P->p = end;
        return x;
    }
    if (*p == '(') {
        if (!deeper(P)) return NAN;
        P->p++;
        double x = sum(P);
        if (*P->p != ')') return fail(P, "expected ')'");
        P->p++;
        P->depth--;
        return x;
    }
    if (!isalpha((unsigned char)*p) && *p != '_') return fail(P, "expected a number, a name or '('");
    char name[32];
    size_t n = 0;
    while ((isalnum((unsigned char)*p) || *p == '_') && n + 1 < sizeof name) name[n++] = *p++;
    name[n] = 0;
    P->p = p;
    double vars[N_VARS] = {(double)P->v->n_entities, (double)P->v->n_relations, (double)P->v->n_train,
                           (double)P->v->n_pairs};
    for (int k = 0; k < N_VARS; k++)
        if (strcmp(name, var_names[k]) == 0) return vars[k];
    int f = -1;
    for (int k = 0; k < N_FUNCS; k++)
        if (strcmp(name, func_names[k]) == 0) f = k;
    if (f < 0) {
        if (P->failed) return NAN;
        const char *all[N_VARS + N_FUNCS];
        for (int k = 0; k < N_VARS + N_FUNCS; k++) all[k] = k < N_VARS ? var_names[k] : func_names[k - N_VARS];
        char near[256];
        int shown = kgl_near_matches(name, all, N_VARS + N_FUNCS, 3, near, sizeof near);
        snprintf(P->why, P->cap, "unknown name '%s'%s%s (names: " VAR_LIST "; functions: " FUNC_LIST ")", name,
                 shown ? "; did you mean " : "", shown ? near : "");
        P->failed = true;
        return NAN;
    }
    if (*P->p != '(') return fail(P, "expected '(' after a function name");
    if (!deeper(P)) return NAN;
    P->p++;
    double args[16];
    int n_args = 0;
    for (;;) {
        double x = sum(P);
        if (P->failed) return NAN;
        if (n_args < 16) args[n_args++] = x;
        if (*P->p == ',') {
            P->p++;
            continue;
        }
        if (*P->p != ')') return fail(P, "expected ',' or ')'");
        P->p++;
        P->depth--;
        break;
    }
    bool one = f >= 2;
    if (one && n_args != 1) return fail(P, "this function takes one argument");
    double x = args[0];
    switch (f) {
    case 0:
    case 1:
        for (int k = 1; k < n_args; k++) x = f == 0 ? fmin(x, args[k]) : fmax(x, args[k]);
        return x;
    case 2: return round(x);
    case 3: return ceil(x);
    case 4: return sqrt(x);
    default: return log2(x);
    }
}

static double unary(parser *P)
{
    if (*P->p == '-') {
        if (!deeper(P)) return NAN;
        P->p++;
        double x = -unary(P);
        P->depth--;
        return x;
    }
    return atom(P);
}

static double product(parser *P)
{
    double x = unary(P);
    while (!P->failed && (*P->p == '*' || *P->p == '/')) {
        char op = *P->p++;
        double y = unary(P);
        x = op == '*' ? x * y : x / y;
    }
    return x;
}

static double sum(parser *P)
{
    double x = product(P);
    while (!P->failed && (*P->p == '+' || *P->p == '-')) {
        char op = *P->p++;
        double y = product(P);
        x = op == '+' ? x + y : x - y;
    }
    return x;
}

bool kgl_recipe_eval(const char *formula, const kgl_recipe_vars *v, double *value, char *why, size_t cap)
{
    parser P = {formula, formula, v, why, cap, 0, false};
    double x = sum(&P);
    if (!P.failed && *P.p) fail(&P, "unexpected character");
    if (P.failed) return false;
    if (!isfinite(x)) {
        snprintf(why, cap, "the value is %g, not a finite number", x);
        return false;
    }
    *value = x;
    return true;
}

bool kgl_recipe_condition(const char *cond, const kgl_recipe_vars *v, bool *holds, char *why, size_t cap)
{
    static const char *const ops[] = {"<=", ">=", "==", "!=", "<", ">"}; /* two-character ones first */
    parser P = {cond, cond, v, why, cap, 0, false};
    double a = sum(&P);
    int op = -1;
    for (int k = 0; k < 6 && !P.failed && op < 0; k++)
        if (strncmp(P.p, ops[k], strlen(ops[k])) == 0) op = k;
    if (!P.failed && op < 0) fail(&P, "expected a comparison (< <= > >= == !=)");
    if (P.failed) return false;
    P.p += strlen(ops[op]);
    double b = sum(&P);
    if (!P.failed && *P.p) fail(&P, "unexpected character");
    if (P.failed) return false;
    if (!isfinite(a) || !isfinite(b)) {
        snprintf(why, cap, "a side of the comparison is %g, not a finite number", isfinite(a) ? b : a);
        return false;
    }
    bool r[6] = {a <= b, a >= b, a == b, a != b, a < b, a > b};
    *holds = r[op];
    return true;
}

/* The triples' (head, tail) pairs sorted (kgl_cmp_int_pair): a pair is
   distinct where it differs from the one before. Once a run, before training. */
long kgl_distinct_pairs(const kgl_triple *tr, int n)
{
    if (n <= 0) return 0;
    int *pair = kgl_xmalloc((size_t)n * 2 * sizeof *pair);
    for (int k = 0; k < n; k++) pair[2 * k] = tr[k].head, pair[2 * k + 1] = tr[k].tail;
    qsort(pair, (size_t)n, 2 * sizeof *pair, kgl_cmp_int_pair);
    long distinct = 1;
    for (int k = 1; k < n; k++) distinct += kgl_cmp_int_pair(pair + 2 * k, pair + 2 * (k - 1)) != 0;
    free(pair);
    return distinct;
}

void kgl_recipe_format(double x, char *out, size_t cap)
{
    if (fabs(x) < 1e15 && x == floor(x)) snprintf(out, cap, "%.0f", x); /* a count stays a count */
    else snprintf(out, cap, "%.15g", x);
}

/* Word k, "=if(COND)": the first word of its line, or an error; a false
   COND sets *skipped_line to the line, whose other words are left out. */
static bool guard(const kgl_recipe *r, int k, const char *name, const kgl_recipe_vars *v, int *skipped_line,
                  char *err, size_t cap)
{
    const char *w = r->argv[k];
    int keep = (int)kgl_utf8_prefix(w, 40, SIZE_MAX); /* whole characters */
    const char *cut = w[keep] ? "..." : "";
    size_t len = strlen(w);
    if (k > 0 && r->line[k - 1] == r->line[k]) {
        snprintf(err, cap, "%s:%d: '%.*s%s' is a guard: it must be the first word of its line", name, r->line[k],
                 keep, w, cut);
        return false;
    }
    char cond[512], why[512];
    if (len < 6 || w[len - 1] != ')' || len - 5 >= sizeof cond) {
        snprintf(err, cap, "%s:%d: guard '%.*s%s': write it as one word, =if(COND), e.g. =if(n_entities<=500)",
                 name, r->line[k], keep, w, cut);
        return false;
    }
    memcpy(cond, w + 4, len - 5);
    cond[len - 5] = '\0';
    bool holds;
    if (!kgl_recipe_condition(cond, v, &holds, why, sizeof why)) {
        snprintf(err, cap, "%s:%d: guard '%.*s%s': %s", name, r->line[k], keep, w, cut, why);
        return false;
    }
    if (!holds) *skipped_line = r->line[k];
    return true;
}

static bool read_words(kgl_recipe *r, const char *name, const kgl_recipe_vars *v, char *err, size_t cap)
{
    r->argc = kgl_text_words(&r->file, r->argv, r->line, KGL_RECIPE_MAX_WORDS, err, cap);
    if (r->argc < 0) {
        r->argc = 0;
        return false;
    }
    size_t used = 0;
    int kept = 0, skipped_line = 0; /* the words kept so far; the line a false guard leaves out (0: none) */
    for (int k = 0; k < r->argc; k++) {
        const char *w = r->argv[k];
        if (strncmp(w, "=if(", 4) == 0) {
            if (!guard(r, k, name, v, &skipped_line, err, cap)) return false;
            continue;
        }
        /* the options that name the data and the run's files belong to the command line */
        const kgl_option *o = kgl_train_option_named(w, strcspn(w, "="));
        if (o && (o->flags & KGL_OPTION_FILE)) {
            if (strcmp(o->name, "--relations") == 0) /* loaded and filtered before a recipe is read */
                snprintf(err, cap, "%s:%d: %s filters the triples before a recipe is read: give it on the "
                         "command line", name, r->line[k], o->name);
            else
                snprintf(err, cap, "%s:%d: %s belongs on the command line, not in a recipe", name, r->line[k],
                         o->name);
            return false;
        }
        if (r->line[k] == skipped_line) continue; /* its guard is false (a file option is refused all the same) */
        if (w[0] == '=') {
            double x;
            char why[512];
            if (!kgl_recipe_eval(w + 1, v, &x, why, sizeof why)) {
                int keep = (int)kgl_utf8_prefix(w, 40, SIZE_MAX); /* whole characters */
                snprintf(err, cap, "%s:%d: formula '%.*s%s': %s", name, r->line[k], keep, w, w[keep] ? "..." : "",
                         why);
                return false;
            }
            kgl_recipe_format(x, r->values[kept], sizeof r->values[kept]);
            w = r->values[kept];
        }
        r->argv[kept] = (char *)w, r->line[kept] = r->line[k];
        used += (size_t)snprintf(r->text + used, used < sizeof r->text ? sizeof r->text - used : 0, "%s%s",
                                 kept ? " " : "", w);
        kept++;
        if (used >= sizeof r->text) {
            snprintf(err, cap, "%s:%d: the options are too long", name, r->line[k]);
            return false;
        }
    }
    r->argc = kept;
    return true;
}

bool kgl_recipe_from_memory(kgl_recipe *r, const char *name, const char *text, size_t len,
                            const kgl_recipe_vars *v, char *err, size_t cap)
{
    memset(r, 0, sizeof *r);
    kgl_text_from_memory(&r->file, name, text, len);
    if (read_words(r, name, v, err, cap)) return true;
    kgl_recipe_free(r); /* nothing to free after a failure */
    return false;
}

bool kgl_recipe_load(kgl_recipe *r, const char *path, const kgl_recipe_vars *v, char *err, size_t cap)
{
    kgl_text t;
    memset(r, 0, sizeof *r);
    if (!kgl_text_open(&t, path, err, cap)) return false;
    bool ok = kgl_recipe_from_memory(r, path, t.buf, t.len, v, err, cap);
    kgl_text_close(&t);
    return ok;
}

void kgl_recipe_free(kgl_recipe *r)
{
    kgl_text_close(&r->file);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------ a recipe beside the command line */

/* The number of words of the option at w[k]: 2 for "--name value", 1 for a
   flag or "--name=value" (no value starts with "--"). */
static int option_words(char *const *w, int n, int k)
{
    return strchr(w[k], '=') || k + 1 >= n || strncmp(w[k + 1], "--", 2) == 0 ? 1 : 2;
}

static bool same_option(const char *a, const char *b)
{
    size_t na = strcspn(a, "="), nb = strcspn(b, "=");
    return na == nb && strncmp(a, b, na) == 0;
}

char **kgl_recipe_command_line(const kgl_recipe *r, int argc, char **argv, int *n)
{
    char **words = kgl_xmalloc((size_t)(argc + r->argc + 1) * sizeof *words);
    *n = 0;
    words[(*n)++] = argv[0];
    for (int k = 0; k < r->argc; k++) words[(*n)++] = r->argv[k];
    for (int k = 1; k < argc; k++) words[(*n)++] = argv[k];
    words[*n] = NULL;
    return words;
}

void kgl_recipe_as_run(const kgl_recipe *r, int argc, char **argv, char *line, size_t line_cap, char *given,
                       size_t given_cap)
{
    size_t used = 0, n_given = 0;
    line[0] = given[0] = 0;
    for (int k = 0; k < r->argc; k += option_words(r->argv, r->argc, k)) {
        char *const *w = r->argv + k;
        int words = option_words(r->argv, r->argc, k);
        bool overridden = false;
        for (int j = 1; j < argc; j += option_words(argv, argc, j)) /* the last one wins */
            if (same_option(argv[j], r->argv[k])) w = argv + j, words = option_words(argv, argc, j), overridden = true;
        if (overridden)
            n_given += (size_t)snprintf(given + n_given, n_given < given_cap ? given_cap - n_given : 0, "%s%.*s",
                                        n_given ? ", " : "", (int)strcspn(w[0], "="), w[0]);
        for (int q = 0; q < words; q++)
            used += (size_t)snprintf(line + used, used < line_cap ? line_cap - used : 0, "%s%s", used ? " " : "",
                                     w[q]);
    }
}

/* ------------------------------------------------ formulas on the command line */

bool kgl_formula_at(char *const *argv, int k)
{
    if (k < 2 || argv[k][0] != '=' || strncmp(argv[k - 1], "--", 2) != 0 || strchr(argv[k - 1], '=')) return false;
    const kgl_option *option = kgl_train_option_named(argv[k - 1], strlen(argv[k - 1]));
    return !(option && (option->flags & KGL_OPTION_FILE));
}

void kgl_formulas_find(kgl_formulas *cf, int argc, char **argv)
{
    memset(cf, 0, sizeof *cf);
    for (int k = 1; k < argc; k++) cf->count += kgl_formula_at(argv, k);
    if (!cf->count) return;
    cf->first = kgl_xmalloc((size_t)(argc + 1) * sizeof *cf->first);
    for (int k = 0; k < argc; k++) {
        if (k + 1 < argc && kgl_formula_at(argv, k + 1)) k++; /* the option and its formula */
        else cf->first[cf->first_argc++] = argv[k];
    }
    cf->first[cf->first_argc] = NULL;
}

bool kgl_formulas_compute(kgl_formulas *cf, int argc, char **argv, const kgl_recipe_vars *vars, char *err,
                          size_t cap)
{
    free(cf->words);
    free(cf->values);
    cf->words = kgl_xmalloc((size_t)(argc + 1) * sizeof *cf->words);
    cf->values = kgl_xmalloc((size_t)argc * sizeof *cf->values);
    for (int k = 0; k < argc; k++) {
        cf->words[k] = argv[k];
        if (!kgl_formula_at(argv, k)) continue;
        double x;
        char why[512];
        if (!kgl_recipe_eval(argv[k] + 1, vars, &x, why, sizeof why)) {
            int keep = (int)kgl_utf8_prefix(argv[k], 60, SIZE_MAX); /* whole characters */
            snprintf(err, cap, "%s %.*s%s: %s", argv[k - 1], keep, argv[k], argv[k][keep] ? "..." : "", why);
            return false;
        }
        kgl_recipe_format(x, cf->values[k], sizeof cf->values[k]);
        cf->words[k] = cf->values[k];
    }
    cf->words[argc] = NULL;
    return true;
}

bool kgl_formulas_computed(const kgl_formulas *cf, int k) { return cf->words && cf->words[k] == cf->values[k]; }

void kgl_formulas_free(kgl_formulas *cf)
{
    free(cf->first);
    free(cf->words);
    free(cf->values);
    memset(cf, 0, sizeof *cf);
}
