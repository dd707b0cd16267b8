/* model_split.c — kgl_split_triples (kgl split) on many random graphs,
 * dense and sparse: every entity and relation of valid and test is in
 * train, each relation's share is the rule's (within one triple of its
 * proportion, never its last triple), a relation short of its share kept
 * every triple it left in train for an entity's sake, and the same seed
 * gives the same split. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* Up to max_n distinct random triples over n_ent entities and m relations
   (duplicates drawn are dropped, as the reader drops them); returns how
   many. A small n_ent with many triples is dense, a large one sparse. */
static int random_triples(kgl_rng *rng, kgl_triple *tr, int max_n, int n_ent, int m)
{
    int n = 0;
    for (int k = 0; k < max_n; k++) {
        kgl_triple t = {(int)kgl_rng_below(rng, (uint32_t)n_ent), (int)kgl_rng_below(rng, (uint32_t)m),
                        (int)kgl_rng_below(rng, (uint32_t)n_ent)};
        bool seen = false;
        for (int j = 0; j < n && !seen; j++) seen = tr[j].head == t.head && tr[j].rel == t.rel && tr[j].tail == t.tail;
        if (!seen) tr[n++] = t;
    }
    return n;
}

TEST(split_keeps_valid_and_test_names_in_train_and_each_relations_share)
{
    enum { MAX_N = 400, MAX_E = 120, MAX_M = 9 };
    static kgl_triple tr[MAX_N];
    kgl_rng rng;
    kgl_rng_seed(&rng, 2026);
    int bad_names = 0, bad_counts = 0, bad_share = 0, bad_short = 0, kept = 0, held = 0, graphs = 300;
    for (int g = 0; g < graphs; g++) {
        int n_ent = 2 + (int)kgl_rng_below(&rng, MAX_E - 1), m = 1 + (int)kgl_rng_below(&rng, MAX_M);
        int n = random_triples(&rng, tr, 1 + (int)kgl_rng_below(&rng, MAX_N), n_ent, m);
        double valid = 0.45 * kgl_rng_uniform(&rng), test = g % 7 == 0 ? 0 : 0.45 * kgl_rng_uniform(&rng);
        kgl_split_plan plan;
        kgl_split_triples(&plan, tr, n, n_ent, m, valid, test, (uint64_t)g);
        /* every name of valid and test is in train */
        bool ent_in_train[MAX_E] = {false}, rel_in_train[MAX_M] = {false};
        int count[3] = {0, 0, 0}, rel_count[MAX_M][3] = {{0}}, size[MAX_M] = {0};
        for (int k = 0; k < n; k++) {
            int p = plan.part[k];
            if (p > 2) {
                bad_counts++;
                continue;
            }
            count[p]++;
            rel_count[tr[k].rel][p]++;
            size[tr[k].rel]++;
            if (p == KGL_PART_TRAIN) ent_in_train[tr[k].head] = ent_in_train[tr[k].tail] = rel_in_train[tr[k].rel] = true;
        }
        for (int k = 0; k < n; k++)
            bad_names += plan.part[k] != KGL_PART_TRAIN &&
                         !(ent_in_train[tr[k].head] && ent_in_train[tr[k].tail] && rel_in_train[tr[k].rel]);
        /* the counts agree with the parts */
        for (int p = 0; p < 3; p++) bad_counts += count[p] != plan.count[p];
        bad_counts += plan.asked[KGL_PART_VALID] != (int)floor(n * valid + 0.5) ||
                      plan.asked[KGL_PART_TEST] != (int)floor(n * test + 0.5);
        for (int p = KGL_PART_VALID; p <= KGL_PART_TEST; p++) {
            int targets = 0;
            for (int r = 0; r < m; r++) {
                const int *target = plan.rel_target + 3 * r;
                bad_counts += rel_count[r][p] != plan.rel_count[3 * r + p] || rel_count[r][p] > target[p];
                targets += target[p];
                /* the share: at most the proportion rounded up, at least it rounded down where the
                   relation has room (it keeps one triple in train) */
                long long whole = (long long)size[r] * plan.asked[p];
                int floor_share = (int)(whole / n), ceil_share = (int)((whole + n - 1) / n);
                int room = size[r] - 1 - target[3 - p]; /* less the other part's target */
                bad_share += target[p] > ceil_share || target[p] < (floor_share < room ? floor_share : room) ||
                             target[KGL_PART_VALID] + target[KGL_PART_TEST] > (size[r] ? size[r] - 1 : 0);
            }
            bad_share += targets > plan.asked[p];
        }
        /* a relation short of a target: every triple it left in train was kept for an entity */
        for (int r = 0; r < m; r++) {
            const int *target = plan.rel_target + 3 * r;
            bool short_of = rel_count[r][1] < target[1] || rel_count[r][2] < target[2];
            bad_short += short_of && plan.rel_kept[r] != rel_count[r][0];
            kept += plan.rel_kept[r];
        }
        held += count[1] + count[2];
        /* the same seed, the same split */
        kgl_split_plan again;
        kgl_split_triples(&again, tr, n, n_ent, m, valid, test, (uint64_t)g);
        bad_counts += memcmp(plan.part, again.part, (size_t)n) != 0;
        kgl_split_plan_free(&again);
        kgl_split_plan_free(&plan);
    }
    CHECK(bad_names == 0);
    CHECK(bad_counts == 0);
    CHECK(bad_share == 0);
    CHECK(bad_short == 0);
    /* the graphs were varied enough to keep triples, and to hold many out */
    printf("    %d graphs: %d triples held out, %d kept in train for an entity\n", graphs, held, kept);
    CHECK(kept > 100 && held > 5000);
}

/* Another seed, another split (of the same sizes); a relation of one
   triple stays in train. */
TEST(split_seed_changes_the_split_not_its_sizes)
{
    static kgl_triple tr[200];
    kgl_rng rng;
    kgl_rng_seed(&rng, 7);
    int n = random_triples(&rng, tr, 199, 15, 3);
    tr[n++] = (kgl_triple){0, 3, 1}; /* relation 3: one triple */
    kgl_split_plan a, b;
    kgl_split_triples(&a, tr, n, 15, 4, 0.2, 0.2, 1);
    kgl_split_triples(&b, tr, n, 15, 4, 0.2, 0.2, 2);
    CHECK(memcmp(a.part, b.part, (size_t)n) != 0);
    for (int p = 0; p < 3; p++) CHECK(a.count[p] == b.count[p]);
    CHECK(a.part[n - 1] == KGL_PART_TRAIN && b.part[n - 1] == KGL_PART_TRAIN);
    CHECK(a.rel_target[3 * 3 + KGL_PART_VALID] == 0 && a.rel_target[3 * 3 + KGL_PART_TEST] == 0);
    kgl_split_plan_free(&a);
    kgl_split_plan_free(&b);
}

/* Ten relations of the same three triples 0 → 1 → 2 → 3 (every entity in
   ten triples or more, so nothing is kept) and --valid 0.1: 3 triples
   asked, each relation's share 0.3, a tie ten ways. The seeded order breaks
   it: over 20 seeds every relation gets a triple at some seed, not always
   the first three ids. */
TEST(split_ties_go_to_relations_in_a_seeded_order)
{
    kgl_triple tr[30];
    for (int r = 0, k = 0; r < 10; r++)
        for (int j = 0; j < 3; j++, k++) tr[k] = (kgl_triple){j, r, j + 1};
    int chosen[10] = {0};
    for (int seed = 1; seed <= 20; seed++) {
        kgl_split_plan plan;
        kgl_split_triples(&plan, tr, 30, 4, 10, 0.1, 0, (uint64_t)seed);
        CHECK(plan.count[KGL_PART_VALID] == 3 && plan.kept == 0);
        for (int r = 0; r < 10; r++) chosen[r] += plan.rel_target[3 * r + KGL_PART_VALID];
        kgl_split_plan_free(&plan);
    }
    int never = 0;
    for (int r = 0; r < 10; r++) never += chosen[r] == 0;
    CHECK(never == 0);
}

/* The parts of one line each, "h\tr\tt\n", of the triples of `part`, in the
   plan's order, by name: what kgl_split_write_parts must have written. */
static char *expected_part(const kgl_dataset *ds, const kgl_split_plan *plan, int part)
{
    const kgl_split *sp = &ds->splits[0];
    size_t cap = 1, n = 0;
    for (int k = 0; k < sp->n; k++) cap += 300;
    char *text = malloc(cap);
    text[0] = 0;
    for (int k = 0; k < sp->n; k++) {
        if (plan->part[k] != part) continue;
        const kgl_triple *t = &sp->triples[k];
        n += (size_t)snprintf(text + n, cap - n, "%s\t%s\t%s\n", ds->entity_names[t->head], ds->relation_names[t->rel],
                              ds->entity_names[t->tail]);
    }
    return text;
}

/* kgl split's files through the library: each part its triples by name in
   the order given, an empty file for a part asked for none (an older file
   there replaced); a part that cannot be written leaves every path as it
   was, the error naming it. */
TEST(split_parts_written_as_one_set)
{
    kgl_dataset ds;
    char err[4096], paths[3][4200], dir[4200];
    kgl_source src = {"data/kg/nations/train.txt", NULL, 0};
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, err, sizeof err))) return;
    const kgl_split *sp = &ds.splits[0];
    kgl_split_plan plan;
    kgl_split_triples(&plan, sp->triples, sp->n, ds.n_entities, ds.n_relations, 0, 0.2, 4);
    static const char *const part[3] = {"train", "valid", "test"};
    for (int p = 0; p < 3; p++) snprintf(paths[p], sizeof paths[p], "%s/s.%s.tsv", T->tmp, part[p]);
    write_tmp(T, 0, "s.valid.tsv", "old\tsplit\tleft\n", 15);
    const char *const set[3] = {paths[0], paths[1], paths[2]};
    CHECK(kgl_split_write_parts(&ds, &plan, set, err, sizeof err));
    for (int p = 0; p < 3; p++) {
        char *want = expected_part(&ds, &plan, p), *got = test_slurp(paths[p], NULL);
        if (!CHECK(got && strcmp(got, want) == 0)) printf("    %s differs\n", paths[p]);
        CHECK(p == 1 ? *want == 0 : *want != 0); /* --valid 0: an empty file */
        free(want);
        free(got);
    }
    /* the test part's folder is missing: nothing new anywhere */
    snprintf(dir, sizeof dir, "%s/gone", T->tmp);
    snprintf(paths[2], sizeof paths[2], "%s/gone/s.test.tsv", T->tmp);
    write_tmp(T, 1, "s.train.tsv", "kept\tas\tit was\n", 15);
    CHECK(!kgl_split_write_parts(&ds, &plan, set, err, sizeof err) && strstr(err, dir));
    char *train = test_slurp(paths[0], NULL);
    CHECK(train && strcmp(train, "kept\tas\tit was\n") == 0);
    free(train);
    kgl_split_plan_free(&plan);
    kgl_dataset_free(&ds);
}

/* kgl split's report through the library, on a memory stream: Nations
   split 0.1 / 0.2 with seed 4. The text names the input and the fractions,
   has a row per relation with its counts (a relation's row here: its
   triples, train, valid, test and kept, from the plan) and the totals'
   row, and each file's line; the JSON carries the same numbers. */
TEST(split_report_written_as_text_and_json)
{
    kgl_dataset ds;
    char err[4096];
    kgl_source src = {"data/kg/nations/train.txt", NULL, 0};
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, err, sizeof err))) return;
    const kgl_split *sp = &ds.splits[0];
    kgl_split_plan plan;
    const double fraction[3] = {0.7, 0.1, 0.2};
    kgl_split_triples(&plan, sp->triples, sp->n, ds.n_entities, ds.n_relations, fraction[1], fraction[2], 4);
    const char *const paths[3] = {"n.train.tsv", "n.valid.tsv", "n.test.tsv"};
    char *text = NULL, *json = NULL;
    size_t text_n = 0, json_n = 0;
    FILE *f = open_memstream(&text, &text_n);
    kgl_split_report_write(f, &ds, &plan, "nations.txt", fraction, 4, paths);
    fclose(f);
    f = open_memstream(&json, &json_n);
    kgl_split_report_json(f, &ds, &plan, "nations.txt", fraction, 4, paths);
    fclose(f);
    char want[512];
    snprintf(want, sizeof want, "nations.txt: %d triples, %d entities, %d relations; --valid 0.1 --test 0.2 --seed 4\n",
             plan.n, ds.n_entities, ds.n_relations);
    CHECK(strncmp(text, want, strlen(want)) == 0);
    int r = 3; /* one relation's row, and the totals' */
    const int *c = plan.rel_count + 3 * r;
    char cells[128];
    snprintf(cells, sizeof cells, " %8d %8d %8d %8d %8d\n", c[0] + c[1] + c[2], c[0], c[1], c[2], plan.rel_kept[r]);
    const char *row = strstr(text, ds.relation_names[r]);
    CHECK(row && strstr(row, cells) && strchr(row, '\n') == strstr(row, cells) + strlen(cells) - 1);
    snprintf(cells, sizeof cells, " %8d %8d %8d %8d %8d\n", plan.n, plan.count[0], plan.count[1], plan.count[2],
             plan.kept);
    CHECK(strstr(text, cells) != NULL);
    int count_width = snprintf(NULL, 0, "%d", plan.n); /* the paths padded to the longest, the counts to n's */
    snprintf(want, sizeof want, "%-11s  %*d triples (asked %d: 0.2 of %d is", paths[2], count_width, plan.count[2],
             plan.asked[2], plan.n);
    if (!CHECK(strstr(text, want) != NULL)) printf("    no '%s' in:\n%s", want, text);
    CHECK(strstr(text, "kept in train: ") != NULL);
    kgl_json_doc doc;
    if (CHECK(kgl_json_parse(json, json_n, &doc, err, sizeof err))) {
        const kgl_json *test = kgl_json_get(kgl_json_get(doc.root, "files"), "test");
        const kgl_json *rel = kgl_json_get(kgl_json_get(doc.root, "per_relation"), ds.relation_names[r]);
        const kgl_json *triples = kgl_json_get(test, "triples"), *valid = kgl_json_get(rel, "valid");
        CHECK(triples && triples->type == KGL_JSON_NUMBER && triples->num == plan.count[2]);
        CHECK(valid && valid->type == KGL_JSON_NUMBER && valid->num == c[1]);
        const kgl_json *seed = kgl_json_get(doc.root, "seed");
        CHECK(seed && seed->type == KGL_JSON_NUMBER && seed->num == 4);
        kgl_json_free(&doc);
    }
    free(text);
    free(json);
    kgl_split_plan_free(&plan);
    kgl_dataset_free(&ds);
}
