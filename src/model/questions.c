/* questions.c — the questions `kgl predict` asks, from names to ids: one
 * from the command line's names, or every line of a queries file read whole
 * before any is answered, each mistake said as "file:line: what is wrong"
 * (the near names of one misspelt, kgl_near_matches); the triples among
 * them ranked together; each answer as kgl predict --json writes it, and as
 * the tables it prints. The answering is predict.c's. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

static void say(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t cap, const char *fmt, ...)
{
    if (!err || cap == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

/* "WHERE: unknown entity 'x'; did you mean 'y'?" (or " (none is close)"). */
static bool unknown_name(const char *where, const char *what, const char *name, char *const *names, int n, char *err,
                         size_t cap)
{
    char near[512];
    int k = kgl_near_matches(name, (const char *const *)names, n, 5, near, sizeof near);
    say(err, cap, "%s: unknown %s '%s'%s%s%s", where, what, name, k ? "; did you mean " : " (none is close)",
        k ? near : "", k ? "?" : "");
    return false;
}

bool kgl_question_make(const kgl_dataset *ds, const char *head, const char *relation, const char *tail,
                       const char *where, kgl_question *q, char *err, size_t cap)
{
    q->ask_head = head == NULL;
    q->tail = -1;
    q->relation = kgl_dataset_relation_id(ds, relation);
    if (q->relation < 0)
        return unknown_name(where ? where : "--relation", "relation", relation, ds->relation_names, ds->n_relations,
                            err, cap);
    q->entity = kgl_dataset_entity_id(ds, head ? head : tail);
    if (q->entity < 0)
        return unknown_name(where ? where : head ? "--head" : "--tail", "entity", head ? head : tail,
                            ds->entity_names, ds->n_entities, err, cap);
    if (head && tail && (q->tail = kgl_dataset_entity_id(ds, tail)) < 0)
        return unknown_name(where ? where : "--tail", "entity", tail, ds->entity_names, ds->n_entities, err, cap);
    return true;
}

/* A queries line with '?' for a model that has an entity named '?': asks
   for the head (or tail), or names that entity in a triple to score. The
   command line's --head and --tail take names only, so it asks either. */
static bool ambiguous_mark(const char *where, bool head_asked, char *const *f, char *err, size_t cap)
{
    if (head_asked)
        say(err, cap, "%s: '?' as the head could ask for it or name the entity '?' of this model; ask on the command "
            "line, where --head and --tail take names only: --relation '%s' --tail '%s' asks for the heads, --head "
            "'?' --relation '%s' --tail '%s' scores the triple", where, f[1], f[2], f[1], f[2]);
    else
        say(err, cap, "%s: '?' as the tail could ask for it or name the entity '?' of this model; ask on the command "
            "line, where --head and --tail take names only: --head '%s' --relation '%s' asks for the tails, --head "
            "'%s' --relation '%s' --tail '?' scores the triple", where, f[0], f[1], f[0], f[1]);
    return false;
}

/* One line's three fields as a question (or a triple) into q; false with
   "file:line: ..." in err. */
static bool line_question(const kgl_dataset *ds, const char *where, char *const *f, int nf, kgl_question *q, char *err,
                          size_t cap)
{
    if (nf != 3) {
        say(err, cap, "%s: expected 3 tab-separated fields (head, relation, tail; '?' as the head or the tail asks "
            "for it), got %d", where, nf);
        return false;
    }
    /* a model with a relation named '?' has no other: the middle field, which
       never asks, names it; an entity named '?' makes a '?' ambiguous */
    bool head_asked = strcmp(f[0], "?") == 0, tail_asked = strcmp(f[2], "?") == 0;
    if (strcmp(f[1], "?") == 0 && kgl_dataset_relation_id(ds, "?") < 0) {
        say(err, cap, "%s: the relation cannot be asked for; put '?' in the head or the tail", where);
        return false;
    }
    if ((head_asked || tail_asked) && kgl_dataset_entity_id(ds, "?") >= 0)
        return ambiguous_mark(where, head_asked, f, err, cap);
    if (head_asked && tail_asked) {
        say(err, cap, "%s: both the head and the tail are '?'; ask for one of them, or give both to score the triple",
            where);
        return false;
    }
    return kgl_question_make(ds, head_asked ? NULL : f[0], f[1], tail_asked ? NULL : f[2], where, q, err, cap);
}

bool kgl_questions_read(const char *cmd, const char *path, const kgl_dataset *ds, kgl_question **out, int *n_out,
                        char *err, size_t cap)
{
    kgl_text t;
    char why[1024];
    if (strcmp(path, "-") == 0) path = "/dev/stdin"; /* a pipe or a file, as kgl_text_open reads any */
    if (!kgl_text_open(&t, path, why, sizeof why)) {
        say(err, cap, "kgl %s: --queries %s", cmd, why);
        return false;
    }
    kgl_question *qs = NULL;
    int n = 0, room = 0, nf, got = 0;
    bool ok = true;
    char *f[4];
    while (ok && (got = kgl_text_next(&t, '\t', f, 4, &nf, why, sizeof why)) == 1) {
        char where[1100];
        snprintf(where, sizeof where, "%s:%d", path, t.lineno);
        if (n == room) {
            room = room ? 2 * room : 16;
            kgl_question *grown = realloc(qs, (size_t)room * sizeof *qs);
            if (!grown) {
                say(err, cap, "kgl %s: out of memory reading %s", cmd, path);
                ok = false;
                break;
            }
            qs = grown;
        }
        if ((ok = line_question(ds, where, f, nf, &qs[n], err, cap))) n++;
    }
    if (ok && got < 0) ok = (say(err, cap, "%s", why), false);
    if (ok && n == 0)
        ok = (say(err, cap, "%s: no questions (each line is head<TAB>relation<TAB>tail, with '?' as the head or the "
                  "tail to ask for it)", path), false);
    kgl_text_close(&t);
    if (!ok) {
        free(qs);
        return false;
    }
    *out = qs;
    *n_out = n;
    return true;
}

kgl_ranked *kgl_questions_rank(const kgl_model *const *models, const kgl_real *const *states, int members,
                               const kgl_dataset *ds, const kgl_question *qs, int n_q, int *n_triples)
{
    int n_t = 0;
    for (int k = 0; k < n_q; k++) n_t += qs[k].tail >= 0;
    kgl_triple *triples = kgl_xmalloc((size_t)(n_t ? n_t : 1) * sizeof *triples);
    kgl_ranked *ranked = kgl_xmalloc((size_t)(n_t ? 2 * n_t : 1) * sizeof *ranked);
    for (int k = 0, t = 0; k < n_q; k++)
        if (qs[k].tail >= 0) triples[t++] = (kgl_triple){qs[k].entity, qs[k].relation, qs[k].tail};
    if (n_t) kgl_rank_triples_ensemble(models, states, members, ds, triples, n_t, ranked);
    free(triples);
    *n_triples = n_t;
    return ranked;
}

/* "query":{"head":…,"relation":…,"tail":…}, null for the one asked. */
static void json_query(kgl_json_writer *w, const char *head, const char *relation, const char *tail)
{
    kgl_json_key(w, "query");
    kgl_json_begin_object(w);
    if (head) kgl_json_field_string(w, "head", head);
    else kgl_json_field_null(w, "head");
    kgl_json_field_string(w, "relation", relation);
    if (tail) kgl_json_field_string(w, "tail", tail);
    else kgl_json_field_null(w, "tail");
    kgl_json_end_object(w);
}

void kgl_question_json(kgl_json_writer *w, const kgl_dataset *ds, const kgl_question *q, const kgl_answer *a,
                       int count, bool have_known, bool filter, int n_left_out)
{
    const char *asked_of = ds->entity_names[q->entity];
    kgl_json_begin_object(w);
    json_query(w, q->ask_head ? NULL : asked_of, ds->relation_names[q->relation], q->ask_head ? asked_of : NULL);
    kgl_json_field_string(w, "direction", q->ask_head ? "head" : "tail");
    kgl_json_field_bool(w, "filter", filter);
    if (have_known) kgl_json_field_int(w, "known_left_out", n_left_out);
    else kgl_json_field_null(w, "known_left_out");
    kgl_json_key(w, "answers");
    kgl_json_begin_array(w);
    for (int k = 0; k < count; k++) {
        kgl_json_begin_object(w);
        kgl_json_field_int(w, "rank", k + 1);
        kgl_json_field_string(w, "entity", ds->entity_names[a[k].entity]);
        kgl_json_field_number(w, "score", a[k].score);
        kgl_json_field_number(w, "prob", a[k].prob);
        if (have_known) kgl_json_field_bool(w, "known", a[k].known);
        else kgl_json_field_null(w, "known");
        kgl_json_end_object(w);
    }
    kgl_json_end_array(w);
    kgl_json_end_object(w);
}

void kgl_question_triple_json(kgl_json_writer *w, const kgl_dataset *ds, const kgl_question *q, const kgl_ranked *r,
                              int known, bool filter)
{
    kgl_json_begin_object(w);
    json_query(w, ds->entity_names[q->entity], ds->relation_names[q->relation], ds->entity_names[q->tail]);
    kgl_json_field_string(w, "direction", "triple");
    kgl_json_field_bool(w, "filter", filter);
    if (known < 0) kgl_json_field_null(w, "known"); /* no triples given */
    else kgl_json_field_bool(w, "known", known);
    for (int dir = 0; dir < 2; dir++) {
        kgl_json_key(w, dir ? "head" : "tail");
        kgl_json_begin_object(w);
        kgl_json_field_number(w, "rank", r[dir].rank);
        kgl_json_field_number(w, "score", r[dir].score);
        kgl_json_field_number(w, "prob", r[dir].prob);
        if (r[dir].top_wrong >= 0) kgl_json_field_string(w, "top_other", ds->entity_names[r[dir].top_wrong]);
        else kgl_json_field_null(w, "top_other");
        kgl_json_field_number(w, "top_other_score", r[dir].top_wrong_score);
        kgl_json_end_object(w);
    }
    kgl_json_end_object(w);
}

/* ---------------------------------------------- kgl predict's tables -- */

/* (alice, advises, ?) */
static void write_question(FILE *f, const kgl_dataset *ds, const kgl_question *q)
{
    const char *e = ds->entity_names[q->entity], *r = ds->relation_names[q->relation];
    if (q->ask_head) fprintf(f, "(?, %s, %s)", r, e);
    else fprintf(f, "(%s, %s, ?)", e, r);
}

void kgl_question_write(FILE *f, const kgl_dataset *ds, const kgl_question *q, const kgl_answer *a, int count, int top,
                        bool have_known, bool filter, int n_left_out)
{
    const char *col = q->ask_head ? "head" : "tail";
    int w = (int)strlen(col);
    for (int k = 0; k < count; k++) {
        int len = kgl_table_width(ds->entity_names[a[k].entity]);
        if (len > w) w = len;
    }
    write_question(f, ds, q);
    if (!have_known) fprintf(f, "  top %d (no triples given: known answers are not marked)\n", top);
    else if (filter) fprintf(f, "  top %d, %d known answer%s left out\n", top, n_left_out, n_left_out == 1 ? "" : "s");
    else fprintf(f, "  top %d, known answers marked\n", top);
    fprintf(f, "%4s  %-*s  %10s  %10s%s\n", "rank", w, col, "score", "prob", have_known && !filter ? "  known" : "");
    for (int k = 0; k < count; k++) {
        fprintf(f, "%4d  ", k + 1);
        kgl_table_cell(f, ds->entity_names[a[k].entity], -w);
        fprintf(f, "  %10.4f  %10.4g%s\n", a[k].score, a[k].prob,
               have_known && !filter ? (a[k].known ? "  yes" : "  no") : "");
    }
}

/* A rank: whole, or half way between two (ties count as the mean of the
   optimistic and the pessimistic rank). */
static void write_rank(FILE *f, double rank) { fprintf(f, "%8.*f", rank == floor(rank) ? 0 : 1, rank); }

/* A triple's two questions, with the rank, score and probability of its
   tail and of its head (ranked: kgl_rank_triples), and the best other
   answer. known: whether the triple is a known one (-1: no triples given). */
void kgl_question_triple_write(FILE *f, const kgl_dataset *ds, const kgl_question *q, const kgl_ranked *r, int known,
                               bool filter)
{
    char *const *ent = ds->entity_names;
    const char *h = ent[q->entity], *rel = ds->relation_names[q->relation], *t = ent[q->tail];
    /* "(h, rel, ?)" and "(?, rel, t)", printed whole (a fixed buffer cut
       long names, mid-character), padded to the wider */
    int width[2] = {kgl_table_width(h) + kgl_table_width(rel) + 7, kgl_table_width(rel) + kgl_table_width(t) + 7};
    int w = (int)strlen("question");
    for (int dir = 0; dir < 2; dir++)
        if (width[dir] > w) w = width[dir];
    const char *is = known ? "a known triple" : "not a known triple";
    fprintf(f, "(%s, %s, %s)  ", h, rel, t);
    if (known < 0) fprintf(f, "ranked among all %d entities (no triples given: nothing is known)\n", ds->n_entities);
    else if (filter) fprintf(f, "%s; filtered ranks (the other known answers left out)\n", is);
    else fprintf(f, "%s; ranked among all %d entities (known answers too)\n", is, ds->n_entities);
    fprintf(f, "%-*s  %8s  %10s  %10s  %s\n", w, "question", "rank", "score", "prob", "top other answer");
    for (int dir = 0; dir < 2; dir++) {
        if (dir == 0) fprintf(f, "(%s, %s, ?)", h, rel);
        else fprintf(f, "(?, %s, %s)", rel, t);
        fprintf(f, "%*s  ", w - width[dir], "");
        write_rank(f, r[dir].rank);
        fprintf(f, "  %10.4f  %10.4g  %s\n", r[dir].score, r[dir].prob,
               r[dir].top_wrong >= 0 ? ent[r[dir].top_wrong] : "(none)");
    }
}
