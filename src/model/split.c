/* split.c — one triples file into train, valid and test (`kgl split`): per
 * relation in the asked proportions, every entity and relation of valid and
 * test kept in train, reproducible from a seed. The rule is stated in
 * kgl/model.h ("splitting"); this file follows it step by step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

/* perm = a random order of 0 .. n−1 (Fisher–Yates over the identity). */
typedef struct share {
    long long remainder; /* c_r · asked mod n */
    int order;           /* the relation's place in the seeded order: breaks ties */
    int rel;
} share;

/* Largest remainder first; ties in the seeded order. */
static int larger_remainder_first(const void *a, const void *b)
{
    const share *x = a, *y = b;
    if (x->remainder != y->remainder) return x->remainder > y->remainder ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* Step 1 for one part p: `asked` triples shared out over the relations in
   proportion to their sizes, never a relation's last triple. */
static void share_out(kgl_split_plan *plan, const int *size, const int *order, int p, int asked, share *s)
{
    int m = plan->n_relations, n = plan->n, given = 0;
    int *target = plan->rel_target;
    for (int r = 0; r < m; r++) {
        long long whole = (long long)size[r] * asked;
        int room = size[r] - 1 - target[3 * r + KGL_PART_VALID] - target[3 * r + KGL_PART_TEST];
        room = room > 0 ? room : 0; /* a relation without triples has none */
        int floor_share = (int)(whole / n);
        target[3 * r + p] = floor_share < room ? floor_share : room; /* the floor fits but for a 1-triple relation */
        given += target[3 * r + p];
        s[r] = (share){whole % n, order[r], r};
    }
    qsort(s, (size_t)m, sizeof *s, larger_remainder_first);
    for (int k = 0; k < m && given < asked; k++) {
        int r = s[k].rel;
        if (target[3 * r + KGL_PART_VALID] + target[3 * r + KGL_PART_TEST] < size[r] - 1) {
            target[3 * r + p]++;
            given++;
        }
    }
}

void kgl_split_triples(kgl_split_plan *plan, const kgl_triple *tr, int n, int n_entities, int n_relations,
                       double valid, double test, uint64_t seed)
{
    if (!(valid >= 0 && test >= 0 && valid + test < 1))
        kgl_die("kgl_split_triples: fractions valid %g and test %g (each at least 0, together below 1)", valid, test);
    memset(plan, 0, sizeof *plan);
    int m = n_relations;
    plan->n = n;
    plan->n_relations = m;
    plan->part = kgl_xcalloc((size_t)(n ? n : 1), 1);
    plan->rel_count = kgl_xcalloc((size_t)3 * m + 1, sizeof(int));
    plan->rel_target = kgl_xcalloc((size_t)3 * m + 1, sizeof(int));
    plan->rel_kept = kgl_xcalloc((size_t)m + 1, sizeof(int));
    plan->asked[KGL_PART_VALID] = (int)floor(n * valid + 0.5);
    plan->asked[KGL_PART_TEST] = (int)floor(n * test + 0.5);
    plan->asked[KGL_PART_TRAIN] = n - plan->asked[KGL_PART_VALID] - plan->asked[KGL_PART_TEST];

    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    int *size = kgl_xcalloc((size_t)m + 1, sizeof(int)), *order = kgl_xmalloc(((size_t)m + 1) * sizeof(int));
    int *rel_perm = kgl_xmalloc(((size_t)m + 1) * sizeof(int)), *perm = kgl_xmalloc(((size_t)n + 1) * sizeof(int));
    for (int k = 0; k < n; k++) size[tr[k].rel]++;
    kgl_rng_permutation(&rng, rel_perm, m);
    for (int k = 0; k < m; k++) order[rel_perm[k]] = k;
    share *s = kgl_xmalloc(((size_t)m + 1) * sizeof *s);
    share_out(plan, size, order, KGL_PART_VALID, plan->asked[KGL_PART_VALID], s);
    share_out(plan, size, order, KGL_PART_TEST, plan->asked[KGL_PART_TEST], s);
    for (int r = 0; r < m; r++) {
        int *target = plan->rel_target + 3 * r;
        target[KGL_PART_TRAIN] = size[r] - target[KGL_PART_VALID] - target[KGL_PART_TEST];
    }

    /* Step 2: in_train[e] counts the triples left in train that name e (a
       triple (e, r, e) once). */
    int *in_train = kgl_xcalloc((size_t)n_entities + 1, sizeof(int));
    for (int k = 0; k < n; k++) {
        in_train[tr[k].head]++;
        if (tr[k].tail != tr[k].head) in_train[tr[k].tail]++;
    }
    kgl_rng_permutation(&rng, perm, n);
    for (int k = 0; k < n; k++) {
        const kgl_triple *t = &tr[perm[k]];
        int r = t->rel, *got = plan->rel_count + 3 * r, *want = plan->rel_target + 3 * r;
        int p = got[KGL_PART_VALID] < want[KGL_PART_VALID]  ? KGL_PART_VALID
                : got[KGL_PART_TEST] < want[KGL_PART_TEST] ? KGL_PART_TEST
                                                           : KGL_PART_TRAIN;
        if (p != KGL_PART_TRAIN && (in_train[t->head] < 2 || in_train[t->tail] < 2)) {
            p = KGL_PART_TRAIN; /* its head or tail would leave train with it */
            plan->rel_kept[r]++;
            plan->kept++;
        }
        if (p != KGL_PART_TRAIN) {
            in_train[t->head]--;
            if (t->tail != t->head) in_train[t->tail]--;
        }
        plan->part[perm[k]] = (unsigned char)p;
        got[p]++;
        plan->count[p]++;
    }
    free(in_train);
    free(s);
    free(perm);
    free(rel_perm);
    free(order);
    free(size);
}

void kgl_split_plan_free(kgl_split_plan *plan)
{
    free(plan->part);
    free(plan->rel_count);
    free(plan->rel_target);
    free(plan->rel_kept);
    memset(plan, 0, sizeof *plan);
}

/* Each part written whole to a temporary beside its path, then the three
   renamed together (kgl_outfile_commit_set), so that a full disk replaces
   none of them and a failed rename says which are new. */
bool kgl_split_write_parts(const kgl_dataset *ds, const kgl_split_plan *plan, const char *const paths[3], char *err,
                           size_t err_cap)
{
    const kgl_split *sp = &ds->splits[0];
    kgl_outfile o[3];
    for (int p = 0; p < 3; p++) {
        if (!kgl_outfile_open(&o[p], paths[p], err, err_cap)) {
            for (int q = 0; q < p; q++) kgl_outfile_discard(&o[q]);
            return false;
        }
        for (int k = 0; k < sp->n; k++) {
            if (plan->part[k] != p) continue;
            const kgl_triple *t = &sp->triples[k];
            fprintf(o[p].f, "%s\t%s\t%s\n", ds->entity_names[t->head], ds->relation_names[t->rel],
                    ds->entity_names[t->tail]);
        }
    }
    return kgl_outfile_commit_set(o, 3, err, err_cap);
}

/* ------------------------------------------------------------ the report --
 * What `kgl split` prints once the files are written: how many triples went
 * where, per relation, and why a part is short of what it asked. */
static const char *const split_part_names[3] = {"train", "valid", "test"};

/* Relations of part p short of their share because triples were kept:
   "a 1, b 2", at most 5 named. */
static void write_short(FILE *f, const kgl_dataset *ds, const kgl_split_plan *plan, int p)
{
    int shown = 0, more = 0;
    for (int r = 0; r < ds->n_relations; r++) {
        int missing = plan->rel_target[3 * r + p] - plan->rel_count[3 * r + p];
        if (missing <= 0) continue;
        if (shown < 5) fprintf(f, "%s%s %d", shown ? ", " : "", ds->relation_names[r], missing), shown++;
        else more++;
    }
    if (more) fprintf(f, " and %d more relation%s", more, more == 1 ? "" : "s");
}

void kgl_split_report_write(FILE *f, const kgl_dataset *ds, const kgl_split_plan *plan, const char *input,
                            const double *fraction, uint64_t seed, const char *const paths[3])
{
    int m = ds->n_relations, w = 8;
    for (int r = 0; r < m; r++)
        if (kgl_table_width(ds->relation_names[r]) > w) w = kgl_table_width(ds->relation_names[r]);
    if (w > 40) w = 40;
    fprintf(f, "%s: %d triple%s, %d entit%s, %d relation%s; --valid %g --test %g --seed %llu\n\n", input, plan->n,
               plan->n == 1 ? "" : "s", ds->n_entities, ds->n_entities == 1 ? "y" : "ies", m, m == 1 ? "" : "s",
               fraction[KGL_PART_VALID], fraction[KGL_PART_TEST], (unsigned long long)seed);
    fprintf(f, "%-*s %8s %8s %8s %8s %8s\n", w, "relation", "triples", "train", "valid", "test", "kept");
    for (int r = 0; r < m; r++) {
        const int *c = plan->rel_count + 3 * r;
        kgl_table_cell(f, ds->relation_names[r], -w); /* cut between characters, padded by them */
        fprintf(f, " %8d %8d %8d %8d %8d\n", c[0] + c[1] + c[2], c[0], c[1], c[2], plan->rel_kept[r]);
    }
    fprintf(f, "%-*s %8d %8d %8d %8d %8d\n\n", w, "all", plan->n, plan->count[0], plan->count[1], plan->count[2],
               plan->kept);
    int pw = 0, cw = snprintf(NULL, 0, "%d", plan->n); /* the file names' and counts' widths */
    for (int p = 0; p < 3; p++)
        if ((int)strlen(paths[p]) > pw) pw = (int)strlen(paths[p]);
    for (int p = 0; p < 3; p++) {
        if (!*paths[p]) continue;
        fprintf(f, "%-*s  %*d triple%s", pw, paths[p], cw, plan->count[p], plan->count[p] == 1 ? "" : "s");
        if (p == KGL_PART_TRAIN) {
            fprintf(f, "\n");
            continue;
        }
        if (fraction[p] == 0) {
            fprintf(f, " (none asked: --%s 0)\n", split_part_names[p]);
            continue;
        }
        fprintf(f, " (asked %d: %g of %d is %g)", plan->asked[p], fraction[p], plan->n, fraction[p] * plan->n);
        int targets = 0;
        for (int r = 0; r < m; r++) targets += plan->rel_target[3 * r + p];
        if (plan->count[p] < plan->asked[p]) {
            fprintf(f, "; %d short:", plan->asked[p] - plan->count[p]);
            if (targets < plan->asked[p])
                fprintf(f, " %d because each relation keeps a triple in train%s", plan->asked[p] - targets,
                           targets > plan->count[p] ? "," : "");
            if (targets > plan->count[p]) {
                fprintf(f, " %d because triples were kept (", targets - plan->count[p]);
                write_short(f, ds, plan, p);
                fprintf(f, ")");
            }
        }
        fprintf(f, "\n");
    }
    if (plan->kept)
        fprintf(f, "kept in train: %d triple%s drawn for valid or test whose head or tail was in no other "
                   "triple left in train; later triples of %s relation%s took %s place%s where there were any\n",
                   plan->kept, plan->kept == 1 ? "" : "s", plan->kept == 1 ? "its" : "their", plan->kept == 1 ? "" : "s",
                   plan->kept == 1 ? "its" : "their", plan->kept == 1 ? "" : "s");
    else
        fprintf(f, "kept in train: none (no triple drawn for valid or test held an entity's last training triple)\n");
}

void kgl_split_report_json(FILE *f, const kgl_dataset *ds, const kgl_split_plan *plan, const char *input,
                           const double *fraction, uint64_t seed, const char *const paths[3])
{
    kgl_json_writer w;
    kgl_json_writer_init(&w, f);
    kgl_json_begin_object(&w);
    kgl_json_field_string(&w, "input", input);
    kgl_json_field_int(&w, "triples", plan->n);
    kgl_json_field_int(&w, "entities", ds->n_entities);
    kgl_json_field_int(&w, "relations", ds->n_relations);
    kgl_json_key(&w, "seed");
    kgl_json_put_uint(&w, (unsigned long long)seed);
    kgl_json_field_int(&w, "duplicates", ds->splits[0].n_duplicates);
    kgl_json_field_int(&w, "kept", plan->kept);
    kgl_json_key(&w, "files");
    kgl_json_begin_object(&w);
    for (int p = 0; p < 3; p++) {
        if (!*paths[p]) continue;
        kgl_json_key(&w, split_part_names[p]);
        kgl_json_begin_object(&w);
        kgl_json_field_string(&w, "path", paths[p]);
        kgl_json_field_int(&w, "triples", plan->count[p]);
        kgl_json_field_int(&w, "asked", plan->asked[p]);
        kgl_json_field_number(&w, "fraction", p == KGL_PART_TRAIN ? 1 - fraction[1] - fraction[2] : fraction[p]);
        kgl_json_end_object(&w);
    }
    kgl_json_end_object(&w);
    kgl_json_key(&w, "per_relation");
    kgl_json_begin_object(&w);
    for (int r = 0; r < ds->n_relations; r++) {
        const int *c = plan->rel_count + 3 * r;
        kgl_json_key(&w, ds->relation_names[r]);
        kgl_json_begin_object(&w);
        kgl_json_field_int(&w, "triples", c[0] + c[1] + c[2]);
        kgl_json_field_int(&w, "train", c[0]);
        kgl_json_field_int(&w, "valid", c[1]);
        kgl_json_field_int(&w, "test", c[2]);
        kgl_json_field_int(&w, "kept", plan->rel_kept[r]);
        kgl_json_end_object(&w);
    }
    kgl_json_end_object(&w);
    kgl_json_end_object(&w);
    kgl_json_newline(&w);
    kgl_json_writer_finish(&w);
}
