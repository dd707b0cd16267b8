/* checkpoint.c — the model and its optimiser state as a safetensors file
 * (README, "The model, exactly"), written atomically and validated on load. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

#define FORMAT "kgl/1"

/* Each optimiser's state in the file: a tensor per parameter for each of
   its buffers (m, then v), named by these prefixes; a sum of squares is
   never negative, which loading checks. */
static const struct optimizer_state {
    int n_state;
    const char *prefix[2];
    bool squares[2];
} optimizer_states[] = {
    [KGL_OPT_ADAM] = {2, {"adam.m.", "adam.v."}, {false, true}},
    [KGL_OPT_SGD] = {1, {"sgd.momentum.", NULL}, {false, false}},
    [KGL_OPT_ADAGRAD] = {1, {"adagrad.sum.", NULL}, {true, false}},
};

bool kgl_checkpoint_save(const char *path, const kgl_model *m, const kgl_dataset *ds, const kgl_train_state *st,
                         char *err, size_t err_cap)
{
    const kgl_params *ps = &m->params;
    const kgl_config *c = &m->cfg;
    const struct optimizer_state *os = &optimizer_states[st->optim.kind];
    /* parameters, then the optimiser's state under adam.m./adam.v. (or
       sgd.momentum. for SGD, adagrad.sum. for Adagrad) */
    int n_state = os->n_state;
    int n = ps->n * (1 + n_state);
    kgl_st_entry *entries = kgl_xcalloc((size_t)n, sizeof *entries);
    char(*names)[KGL_NAME_MAX + 16] = kgl_xcalloc((size_t)n, sizeof *names);
    for (int k = 0; k < ps->n; k++) {
        const kgl_param *p = &ps->p[k];
        const kgl_real *data[3] = {p->t.data, p->m, p->v};
        const char *prefix[3] = {"", os->prefix[0], os->prefix[1]};
        for (int s = 0; s <= n_state; s++) {
            int e = s * ps->n + k;
            snprintf(names[e], sizeof names[e], "%s%s", prefix[s], p->name);
            entries[e].name = names[e];
            entries[e].data = data[s];
            if (p->vector) { /* [1, d] in memory, [d] in the file, as the README lists it */
                entries[e].ndim = 1;
                entries[e].shape[0] = p->t.cols;
            } else {
                entries[e].ndim = 2;
                entries[e].shape[0] = p->t.rows;
                entries[e].shape[1] = p->t.cols;
            }
        }
    }
    /* a C program may leave base_lr 0: the schedule's base is then the rate itself */
    kgl_train_state state = *st;
    if (!(state.base_lr > 0)) state.base_lr = st->optim.lr;
    kgl_config cfg = *c;
    /* the metadata: every saved option by its row, then the state of the run */
    enum { MAX_KEYS = 96 };
    const char *meta[2 * MAX_KEYS];
    char values[MAX_KEYS][64];
    int n_meta = 0;
    meta[2 * n_meta] = "format", meta[2 * n_meta + 1] = FORMAT, n_meta++;
    for (int k = 0; k < kgl_n_train_options; k++) {
        const kgl_option *o = &kgl_train_options[k];
        if (!o->key) continue;
        if (n_meta >= MAX_KEYS / 2) kgl_die("checkpoint: more than %d options to save", MAX_KEYS / 2);
        const void *field = kgl_option_value(o, &cfg, &state, NULL);
        if (o->type == KGL_OPTION_TEXT) { /* as it is: a text may be longer than a number */
            meta[2 * n_meta + 1] = field;
        } else {
            kgl_option_format(o, field, values[n_meta], sizeof values[n_meta]);
            meta[2 * n_meta + 1] = values[n_meta];
        }
        meta[2 * n_meta] = o->key;
        n_meta++;
    }
    char step[32], lr[64], b1[64], b2[64], eps[64], shuffle[96], cursor[32], drop_state[96];
    snprintf(step, sizeof step, "%ld", st->step);
    snprintf(lr, sizeof lr, "%.17g", st->optim.lr);
    snprintf(b1, sizeof b1, "%.17g", st->optim.beta1);
    snprintf(b2, sizeof b2, "%.17g", st->optim.beta2);
    snprintf(eps, sizeof eps, "%.17g", st->optim.eps);
    snprintf(shuffle, sizeof shuffle, "%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64, st->epoch_rng.s[0],
             st->epoch_rng.s[1], st->epoch_rng.s[2], st->epoch_rng.s[3]);
    snprintf(cursor, sizeof cursor, "%d", st->cursor);
    snprintf(drop_state, sizeof drop_state, "%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64,
             st->dropout_rng.s[0], st->dropout_rng.s[1], st->dropout_rng.s[2], st->dropout_rng.s[3]);
    char *entities = kgl_join(ds->entity_names, ds->n_entities, '\n');
    char *relations = kgl_join(ds->relation_names, ds->n_relations, '\n');
    const char *run[] = {
        "step", step, "entities", entities, "relations", relations, "lr", lr, "beta1", b1, "beta2", b2, "eps", eps,
        "shuffle_state", shuffle, "batch_cursor", cursor, "dropout_state", drop_state,
        "ensemble_members", st->members, "precision", KGL_PRECISION,
        "run_id", st->run_id, /* last: left out when empty */
    };
    int n_run = (int)(sizeof run / sizeof run[0]) / 2 - (st->run_id[0] ? 0 : 1);
    memcpy(meta + 2 * n_meta, run, 2 * (size_t)n_run * sizeof *run);
    n_meta += n_run;
    bool ok = kgl_st_write(path, entries, n, meta, n_meta, err, err_cap);
    free(entities);
    free(relations);
    free(entries);
    free(names);
    return ok;
}

/* ---- loading --------------------------------------------------------------- */

static bool fail(char *err, size_t cap, const char *path, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool fail(char *err, size_t cap, const char *path, const char *fmt, ...)
{
    int k = snprintf(err, cap, "%s: ", path);
    va_list ap;
    va_start(ap, fmt);
    if (k >= 0 && (size_t)k < cap) vsnprintf(err + k, cap - (size_t)k, fmt, ap);
    va_end(ap);
    return false;
}

bool kgl_ensemble_members_valid(const char *members, char *why, size_t cap)
{
    if (!*members) return true; /* no other members: a model of its own */
    const char *p = members;
    for (int line = 1;; line++) {
        size_t len = strcspn(p, "\n");
        bool blank = true;
        for (size_t i = 0; i < len; i++) blank = blank && isspace((unsigned char)p[i]);
        if (blank) {
            snprintf(why, cap, "line %d is blank", line);
            return false;
        }
        int earlier = 1;
        for (const char *q = members; q < p; q += strcspn(q, "\n") + 1, earlier++)
            if (strcspn(q, "\n") == len && strncmp(q, p, len) == 0) {
                snprintf(why, cap, "line %d repeats line %d ('%.*s')", line, earlier,
                         (int)kgl_utf8_prefix(p, 80, len), p);
                return false;
            }
        if (!p[len]) return true;
        p += len + 1;
    }
}

static const char *need_meta(const kgl_st_file *f, const char *key, const char *path, char *err, size_t cap)
{
    const char *v = kgl_st_meta(f, key);
    if (!v) fail(err, cap, path, "metadata has no '%s' (is this a kgl checkpoint?)", key);
    return v;
}

static bool meta_long(const kgl_st_file *f, const char *key, long lo, long hi, long *out, const char *path, char *err,
                      size_t cap)
{
    const char *v = need_meta(f, key, path, err, cap);
    if (!v) return false;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return fail(err, cap, path, "metadata '%s' is '%s', expected a whole number from %ld to %ld", key, v, lo, hi);
    *out = x;
    return true;
}

/* The precision the metadata names, "f32" or "f64" (absent: "f64", saved
   before float32 existed). */
static bool file_precision(const kgl_st_file *f, char precision[4], const char *path, char *err, size_t cap)
{
    const char *v = kgl_st_meta(f, "precision");
    if (v && strcmp(v, "f32") != 0 && strcmp(v, "f64") != 0)
        return fail(err, cap, path, "metadata 'precision' is '%s', expected f32 or f64", v);
    snprintf(precision, 4, "%s", v ? v : "f64");
    return true;
}

/* A finite number from lo to hi; lo itself excluded when lo_open, hi when hi_open. */
static bool meta_range(const kgl_st_file *f, const char *key, double lo, bool lo_open, double hi, bool hi_open,
                       double *out, const char *path, char *err, size_t cap)
{
    const char *v = need_meta(f, key, path, err, cap);
    if (!v) return false;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x) || x < lo || x > hi || (lo_open && x == lo) || (hi_open && x == hi))
        return fail(err, cap, path, "metadata '%s' is '%s', expected a number %s %g %s %g", key, v,
                    lo_open ? "above" : "from", lo, hi_open ? "to below" : lo_open ? "and at most" : "to", hi);
    *out = x;
    return true;
}

static bool meta_double(const kgl_st_file *f, const char *key, double lo, double hi, double *out, const char *path,
                        char *err, size_t cap)
{
    return meta_range(f, key, lo, false, hi, false, out, path, err, cap);
}

/* The names list (joined by \n) must be the loaded one, in id order. */
static bool same_names(const char *joined, char *const *names, int n, const char *what, const char *plural,
                       const char *path, char *err, size_t cap)
{
    const char *p = joined;
    int count = 0;
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (count < n && (strlen(names[count]) != len || memcmp(names[count], p, len) != 0))
            return fail(err, cap, path,
                        "%s %d is '%.*s' in the checkpoint but '%s' in the triples (ids number the names of every "
                        "file a model was trained with: give the same --train, --valid and --test)",
                        what, count, (int)len, p, names[count]);
        count++;
        if (!nl) break;
        p = nl + 1;
    }
    if (count != n)
        return fail(err, cap, path,
                    "the checkpoint has %d %s, the triples have %d (a model is tied to its data: give the same "
                    "--train, --valid and --test it was trained with)",
                    count, plural, n);
    return true;
}

static bool check_tensor(const kgl_st_file *f, const char *name, const kgl_tensor *want, bool vec, const char *path,
                         char *err, size_t cap, bool required, bool *present)
{
    const kgl_st_tensor *t = kgl_st_find(f, name);
    *present = t != NULL;
    if (!t) return required ? fail(err, cap, path, "tensor '%s' is missing", name) : true;
    bool ok = vec ? t->ndim == 1 && t->shape[0] == want->cols
                  : t->ndim == 2 && t->shape[0] == want->rows && t->shape[1] == want->cols;
    if (!ok) {
        if (vec) return fail(err, cap, path, "tensor '%s' should have shape [%d]", name, want->cols);
        return fail(err, cap, path, "tensor '%s' should have shape [%d, %d] for this model", name, want->rows,
                    want->cols);
    }
    size_t n = kgl_numel(want);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(t->data[i])) return fail(err, cap, path, "tensor '%s' holds %g at index %zu", name, t->data[i], i);
    return true;
}

/* Adam's second moment is a running mean of squared gradients: a negative
   value (an edited file) would make its square root NaN at the next step. */
static bool no_negative(const kgl_st_file *f, const char *name, size_t n, const char *path, char *err, size_t cap)
{
    const kgl_st_tensor *t = kgl_st_find(f, name);
    for (size_t i = 0; t && i < n; i++)
        if (t->data[i] < 0)
            return fail(err, cap, path,
                        "tensor '%s' holds %g at index %zu; Adam's second moment (a mean of squared gradients) cannot "
                        "be negative",
                        name, t->data[i], i);
    return true;
}

/* "a, b or c", an empty word as '' (for messages that list the words). */
static const char *word_list(const char *const *words, int n, char *out, size_t cap)
{
    size_t used = 0;
    if (cap) out[0] = 0;
    for (int k = 0; k < n && used < cap; k++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s", k == 0 ? "" : k == n - 1 ? " or " : ", ",
                                 words[k][0] ? words[k] : "''");
    return out;
}

/* Word k into a word option's field: a bool (two words) or an enum. */
static void set_word(const kgl_option *o, void *field, int k)
{
    if (o->size == sizeof(bool)) *(bool *)field = k != 0;
    else *(int *)field = k;
}

/* Option o's value from its key (which is present) into its field, within
   what a checkpoint may hold. */
static bool meta_option(const kgl_st_file *f, const kgl_option *o, void *field, const char *path, char *err,
                        size_t cap)
{
    const char *v = kgl_st_meta(f, o->key);
    double lo = o->file_hi != 0 ? o->file_lo : o->lo, hi = o->file_hi != 0 ? o->file_hi : o->hi;
    switch (o->type) {
    case KGL_OPTION_WHOLE: {
        long x;
        if (!meta_long(f, o->key, (long)lo, (long)hi, &x, path, err, cap)) return false;
        if (o->size == sizeof(int)) *(int *)field = (int)x;
        else *(long *)field = x;
        return true;
    }
    case KGL_OPTION_SEED: {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        /* the rule of --seed: digits only ("-1" would wrap to 2^64 - 1) */
        if (errno || end == v || *end || v[0] < '0' || v[0] > '9')
            return fail(err, cap, path, "metadata '%s' is '%s', expected a whole number >= 0", o->key, v);
        *(uint64_t *)field = (uint64_t)x;
        return true;
    }
    case KGL_OPTION_REAL: return meta_double(f, o->key, lo, hi, field, path, err, cap);
    case KGL_OPTION_TEXT:
        if (strlen(v) >= o->size)
            return fail(err, cap, path, "metadata '%s' is longer than %zu bytes", o->key, o->size - 1);
        memcpy(field, v, strlen(v) + 1);
        return true;
    default: /* a word: of a flag, of a choice, or in place of a number */
        for (int k = 0; k < o->n_words; k++)
            if (strcmp(v, o->words[k]) == 0) {
                set_word(o, field, k);
                return true;
            }
        if (o->type == KGL_OPTION_WORD_OR_NUMBER) {
            set_word(o, field, o->n_words);
            return meta_double(f, o->key, lo, hi, (double *)((char *)field - o->offset + o->number_offset), path,
                               err, cap);
        }
        char list[512];
        return fail(err, cap, path, "metadata '%s' is '%s', expected %s", o->key, v,
                    word_list(o->words, o->n_words, list, sizeof list));
    }
}

/* Four words of hexadecimal into a generator's state. */
static bool meta_rng(const kgl_st_file *f, const char *key, kgl_rng *r, const char *path, char *err, size_t cap)
{
    const char *v = kgl_st_meta(f, key);
    int used = 0;
    if (sscanf(v, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 "%n", &r->s[0], &r->s[1], &r->s[2], &r->s[3],
               &used) != 4 ||
        v[used] != 0)
        return fail(err, cap, path, "metadata '%s' is '%s', expected four hexadecimal words", key, v);
    return true;
}

/* The options kgl train saved (a row of kgl_train_options each), into c
   and st: a required one must be there; one absent from an older file
   keeps its default. */
static bool read_options(const kgl_st_file *f, kgl_config *c, kgl_train_state *st, const char *path, char *err,
                         size_t cap)
{
    for (int k = 0; k < kgl_n_train_options; k++) {
        const kgl_option *o = &kgl_train_options[k];
        if (!o->key) continue;
        if (!kgl_st_meta(f, o->key)) {
            if ((o->flags & KGL_OPTION_REQUIRED) && !need_meta(f, o->key, path, err, cap)) return false;
            continue;
        }
        if (!meta_option(f, o, kgl_option_value(o, c, st, NULL), path, err, cap)) return false;
    }
    /* the graph context's K (older files, of the full context, have none) */
    if (c->context == KGL_CONTEXT_GRAPH && !need_meta(f, "neighbours", path, err, cap)) return false;
    if (c->hide_asked && !c->query_relation)
        return fail(err, cap, path, "metadata 'asked_edges' is 'hidden' but 'query' is not 'relation'");
    if (c->relation_token && !c->query_relation)
        return fail(err, cap, path, "metadata 'relation_token' is '1' but 'query' is not 'relation'");
    return true;
}

/* The tensors of f against the model c describes: the sizes first (before
   any allocation is sized by the metadata), then every parameter with its
   shape and finite values, the optimiser's state all or none, and nothing
   else. Sets ck->has_state. */
static bool read_tensors(const kgl_st_file *f, const kgl_config *c, const kgl_train_state *st, kgl_checkpoint *ck,
                         const char *path, char *err, size_t cap)
{
    /* The sizes in the metadata against the file's own tensors before any
       allocation is sized by them: an edited d_model or ffn cannot make the
       probe model below larger than the tensors this file holds. */
    {
        struct {
            const char *name;
            int rows, cols;
            bool needed;
        } sized[] = {{"entity_emb", c->n_entities, c->dim, true},
                     {"attn.wq", c->dim, c->dim, c->context != KGL_CONTEXT_NONE},
                     {"ffn.w1", c->dim, c->ffn, c->ffn > 0}};
        for (size_t k = 0; k < sizeof sized / sizeof sized[0]; k++) {
            if (!sized[k].needed) continue;
            const kgl_st_tensor *t = kgl_st_find(f, sized[k].name);
            if (!t) {
                fail(err, cap, path, "tensor '%s' is missing", sized[k].name);
                return false;
            }
            if (t->ndim != 2 || t->shape[0] != sized[k].rows || t->shape[1] != sized[k].cols) {
                char shape[64];
                if (t->ndim == 2) snprintf(shape, sizeof shape, "[%" PRId64 ", %" PRId64 "]", t->shape[0], t->shape[1]);
                else snprintf(shape, sizeof shape, "[%" PRId64 "]", t->shape[0]);
                fail(err, cap, path,
                     "tensor '%s' has shape %s but the metadata (d_model %d, ffn %d) and the %d entities need [%d, %d]",
                     sized[k].name, shape, c->dim, c->ffn, c->n_entities, sized[k].rows, sized[k].cols);
                return false;
            }
        }
    }

    /* every tensor the model needs, with its shape; optimiser state all or none */
    {
        kgl_model probe;
        kgl_model_create(&probe, c);
        const struct optimizer_state *os = &optimizer_states[st->optim.kind];
        int state_found = 0, state_needed = 0;
        bool ok = true;
        for (int k = 0; k < probe.params.n && ok; k++) {
            const kgl_param *p = &probe.params.p[k];
            bool present;
            ok = check_tensor(f, p->name, &p->t, p->vector, path, err, cap, true, &present);
            char name[KGL_NAME_MAX + 16];
            for (int s = 0; s < os->n_state && ok; s++) {
                snprintf(name, sizeof name, "%s%.*s", os->prefix[s], KGL_NAME_MAX, p->name);
                ok = check_tensor(f, name, &p->t, p->vector, path, err, cap, false, &present);
                if (ok && present && os->squares[s]) ok = no_negative(f, name, kgl_numel(&p->t), path, err, cap);
                state_needed++;
                state_found += present;
            }
        }
        if (ok && state_found && state_found != state_needed)
            ok = fail(err, cap, path, "optimiser state is incomplete (%d of %d tensors)", state_found, state_needed);
        /* and nothing else: every tensor of the file is one of those */
        for (int k = 0; k < f->n && ok; k++) {
            const char *name = f->tensors[k].name;
            bool expected = false;
            for (int q = 0; q < probe.params.n && !expected; q++) {
                const char *pn = probe.params.p[q].name;
                char with[KGL_NAME_MAX + 16];
                expected = strcmp(name, pn) == 0;
                for (int s = 0; s < os->n_state && !expected && state_found; s++) {
                    snprintf(with, sizeof with, "%s%.*s", os->prefix[s], KGL_NAME_MAX, pn); /* a name holds at most KGL_NAME_MAX */
                    expected = strcmp(name, with) == 0;
                }
            }
            if (!expected)
                ok = fail(err, cap, path, "unexpected tensor '%s' for this model (d_model %d, ffn %d, optimizer %s)",
                          name, c->dim, c->ffn, kgl_optimizer_names[st->optim.kind]);
        }
        kgl_model_free(&probe);
        if (!ok) return false;
        ck->has_state = state_found > 0;
    }
    return true;
}

/* Validates the read file `f` (taken over: freed on failure) against the
   names of ds and fills ck. */
static bool open_read(kgl_st_file *f, const char *path, const kgl_dataset *ds, kgl_checkpoint *ck, char *err,
                      size_t cap)
{
    ck->file = f;
    const char *v;
    kgl_config *c = &ck->cfg;
    kgl_config_defaults(c);
    kgl_train_state *st = &ck->st;
    kgl_train_state_defaults(st);
    if (!(v = need_meta(f, "format", path, err, cap))) goto bad;
    if (strcmp(v, FORMAT) != 0) {
        fail(err, cap, path, "format is '%s'; this kgl reads '%s'", v, FORMAT);
        goto bad;
    }
    /* the last rate used; the schedule's base (metadata base_lr, --lr) is the same in older files */
    if (kgl_st_meta(f, "lr") && !meta_double(f, "lr", 0, 1e6, &st->optim.lr, path, err, cap)) goto bad;
    st->base_lr = st->optim.lr;
    if (!read_options(f, c, st, path, err, cap)) goto bad;
    if (!file_precision(f, ck->precision, path, err, cap)) goto bad;
    if (!meta_long(f, "step", 0, 1L << 53, &st->step, path, err, cap)) goto bad;
    if (!(v = need_meta(f, "entities", path, err, cap))) goto bad;
    if (!same_names(v, ds->entity_names, ds->n_entities, "entity", "entities", path, err, cap)) goto bad;
    if (!(v = need_meta(f, "relations", path, err, cap))) goto bad;
    if (!same_names(v, ds->relation_names, ds->n_relations, "relation", "relations", path, err, cap)) goto bad;
    c->n_entities = ds->n_entities;
    c->n_relations = ds->n_relations;
    const char *cfg_err = kgl_config_error(c);
    if (cfg_err) {
        fail(err, cap, path, "invalid model: %s", cfg_err);
        goto bad;
    }

    /* the state of the run: optional (a checkpoint written elsewhere may lack it) */
    /* Adam divides by 1 − betaᵗ (beta below 1) and by √v̂ + eps (eps above 0) */
    struct {
        const char *key;
        double *dst;
        bool is_eps;
    } adam[] = {{"beta1", &st->optim.beta1, false}, {"beta2", &st->optim.beta2, false}, {"eps", &st->optim.eps, true}};
    for (size_t k = 0; k < sizeof adam / sizeof adam[0]; k++)
        if (kgl_st_meta(f, adam[k].key) && !meta_range(f, adam[k].key, 0, adam[k].is_eps, 1, !adam[k].is_eps,
                                                       adam[k].dst, path, err, cap))
            goto bad;
    if ((v = kgl_st_meta(f, "ensemble_members"))) {
        if (strlen(v) >= sizeof st->members) {
            fail(err, cap, path, "metadata 'ensemble_members' is longer than %zu bytes", sizeof st->members - 1);
            goto bad;
        }
        char why[600];
        if (!kgl_ensemble_members_valid(v, why, sizeof why)) {
            fail(err, cap, path, "metadata 'ensemble_members': %s; it lists each other member's file once, one a line",
                 why);
            goto bad;
        }
        snprintf(st->members, sizeof st->members, "%s", v);
    }
    if ((v = kgl_st_meta(f, "run_id"))) {
        if (strlen(v) != sizeof st->run_id - 1 || strspn(v, "0123456789abcdef") != strlen(v)) {
            fail(err, cap, path, "metadata 'run_id' is '%s', expected 16 hexadecimal digits", v);
            goto bad;
        }
        memcpy(st->run_id, v, sizeof st->run_id);
    }
    if (kgl_st_meta(f, "shuffle_state")) {
        long x;
        if (!meta_rng(f, "shuffle_state", &st->epoch_rng, path, err, cap)) goto bad;
        if (!meta_long(f, "batch_cursor", 0, 1L << 30, &x, path, err, cap)) goto bad;
        st->cursor = (int)x;
    } else {
        kgl_rng_seed(&st->epoch_rng, st->seed ^ 0x53485546464c45ULL);
    }
    st->optim.step = st->step;
    if (kgl_st_meta(f, "dropout_state")) { /* absent in checkpoints written before the regularisers */
        if (!meta_rng(f, "dropout_state", &st->dropout_rng, path, err, cap)) goto bad;
        st->has_dropout_rng = true;
    }

    if (!read_tensors(f, c, st, ck, path, err, cap)) goto bad;
    return true;
bad:
    kgl_st_free(f);
    free(f);
    ck->file = NULL;
    return false;
}

bool kgl_checkpoint_precision(const char *path, char precision[4], char *err, size_t cap)
{
    kgl_st_file f;
    if (!kgl_st_read_header(path, &f, err, cap)) return false;
    bool ok = file_precision(&f, precision, path, err, cap);
    kgl_st_free(&f);
    return ok;
}

bool kgl_checkpoint_open(const char *path, const kgl_dataset *ds, kgl_checkpoint *ck, char *err, size_t cap)
{
    memset(ck, 0, sizeof *ck);
    kgl_st_file *f = kgl_xcalloc(1, sizeof *f);
    if (!kgl_st_read(path, f, err, cap)) {
        free(f);
        return false;
    }
    return open_read(f, path, ds, ck, err, cap);
}

/* Splits a checkpoint's names list ("a\nb\nc") into owned strings, which
   must be strictly increasing in byte order: kgl gives ids in that order,
   and kgl_dataset_entity_id finds a name by binary search. */
static bool split_names(const char *joined, const char *what, char ***out, int *n_out, const char *path, char *err,
                        size_t cap)
{
    int n = 1;
    for (const char *p = joined; *p; p++) n += *p == '\n';
    char **names = kgl_xcalloc((size_t)n, sizeof *names);
    const char *p = joined;
    for (int k = 0; k < n; k++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        names[k] = kgl_xmalloc(len + 1);
        memcpy(names[k], p, len);
        names[k][len] = 0;
        p = nl ? nl + 1 : p + len;
        bool inverse = strcmp(what, "relations") == 0 && kgl_inverse_name(names[k]); /* as a triples file */
        bool ok = len > 0 && !inverse && (k == 0 || strcmp(names[k - 1], names[k]) < 0);
        if (!ok) {
            if (len == 0) fail(err, cap, path, "metadata '%s': name %d is empty", what, k);
            else if (inverse) fail(err, cap, path, "metadata '%s': '%s' ends with '" KGL_INVERSE_SUFFIX "', which "
                                   "names the inverse of a relation", what, names[k]);
            else fail(err, cap, path, "metadata '%s': '%s' does not come after '%s' (names must be unique and in "
                      "byte order, as kgl writes them)", what, names[k], names[k - 1]);
            for (int q = 0; q <= k; q++) free(names[q]);
            free(names);
            return false;
        }
    }
    *out = names;
    *n_out = n;
    return true;
}

bool kgl_checkpoint_open_standalone(const char *path, kgl_dataset *names, kgl_checkpoint *ck, char *err, size_t cap)
{
    memset(ck, 0, sizeof *ck);
    memset(names, 0, sizeof *names);
    kgl_st_file *f = kgl_xcalloc(1, sizeof *f);
    if (!kgl_st_read(path, f, err, cap)) {
        free(f);
        return false;
    }
    const char *ents = need_meta(f, "entities", path, err, cap);
    const char *rels = ents ? need_meta(f, "relations", path, err, cap) : NULL;
    bool ok = ents && rels && split_names(ents, "entities", &names->entity_names, &names->n_entities, path, err, cap) &&
              split_names(rels, "relations", &names->relation_names, &names->n_relations, path, err, cap);
    if (!ok) {
        kgl_st_free(f);
        free(f);
        kgl_dataset_free(names);
        return false;
    }
    /* an empty filter index: every (entity, relation row) knows no answer */
    size_t keys = (size_t)names->n_entities * (size_t)(2 * names->n_relations);
    names->known_offsets = kgl_xcalloc(keys + 1, sizeof(int));
    names->known = kgl_xmalloc(sizeof(int));
    if (!open_read(f, path, names, ck, err, cap)) {
        kgl_dataset_free(names);
        return false;
    }
    return true;
}

void kgl_checkpoint_apply(const kgl_checkpoint *ck, kgl_model *m)
{
    const kgl_st_file *f = ck->file;
    const struct optimizer_state *os = &optimizer_states[ck->st.optim.kind];
    for (int k = 0; k < m->params.n; k++) {
        kgl_param *p = &m->params.p[k];
        size_t bytes = kgl_numel(&p->t) * sizeof(kgl_real);
        memcpy(p->t.data, kgl_st_find(f, p->name)->data, bytes);
        char name[KGL_NAME_MAX + 16];
        memset(p->m, 0, bytes);
        memset(p->v, 0, bytes);
        if (!ck->has_state) continue;
        kgl_real *buffer[2] = {p->m, p->v};
        for (int s = 0; s < os->n_state; s++) {
            snprintf(name, sizeof name, "%s%.*s", os->prefix[s], KGL_NAME_MAX, p->name);
            memcpy(buffer[s], kgl_st_find(f, name)->data, bytes);
        }
    }
}

void kgl_checkpoint_close(kgl_checkpoint *ck)
{
    if (ck->file) {
        kgl_st_free(ck->file);
        free(ck->file);
    }
    ck->file = NULL;
}

/* Where the names joined by \n in a checkpoint's metadata first differ from
   `names`: -1 when they are the same list. *count is how many it lists, and
   its name at the difference (if it has one) goes to got. */
static int first_difference(const char *joined, char *const *names, int n, int *count, char *got, size_t cap)
{
    int at = -1;
    *count = 0;
    for (const char *p = joined;; (*count)++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (at < 0 && (*count >= n || strlen(names[*count]) != len || memcmp(names[*count], p, len) != 0)) {
            at = *count;
            snprintf(got, cap, "%.*s", (int)len, p);
        }
        if (!nl) {
            (*count)++;
            break;
        }
        p = nl + 1;
    }
    return at >= 0 ? at : *count != n ? *count : -1;
}

bool kgl_checkpoint_names_differ(const char *path, const kgl_dataset *ds, kgl_names_difference *d)
{
    memset(d, 0, sizeof *d);
    kgl_st_file f;
    char err[1024];
    if (!kgl_st_read(path, &f, err, sizeof err)) return false;
    const char *ents = kgl_st_meta(&f, "entities"), *rels = kgl_st_meta(&f, "relations");
    bool other = false;
    if (ents && rels) {
        char ent_got[sizeof d->name], rel_got[sizeof d->name];
        int ent_at = first_difference(ents, ds->entity_names, ds->n_entities, &d->n_entities, ent_got, sizeof ent_got);
        int rel_at = first_difference(rels, ds->relation_names, ds->n_relations, &d->n_relations, rel_got,
                                      sizeof rel_got);
        other = ent_at >= 0 || rel_at >= 0;
        d->entity = ent_at >= 0;
        d->at = d->entity ? ent_at : rel_at;
        memcpy(d->name, d->entity ? ent_got : rel_got, sizeof d->name);
    }
    kgl_st_free(&f);
    return other;
}
