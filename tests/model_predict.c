/* model_predict.c — kgl_predict, the C API behind `kgl predict`: its scores
 * are the evaluation's own bits, its ranks the evaluation's ranks (both
 * directions, with and without reciprocal relations), a trained model
 * answers the academic world's questions, the filter drops known answers
 * while the probabilities stay those of the whole softmax, and a checkpoint
 * opens without any triples file. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 16], err[1 << 14];

static bool load_academic(kgl_dataset *ds)
{
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    return kgl_dataset_load(ds, &src, 1, e, sizeof e);
}

/* Trains with `kgl train ARGS --save DIR/NAME` and loads that checkpoint
   for the academic world into m. */
static bool trained(test_ctx *T, const char *args, const char *name, const kgl_dataset *ds, kgl_model *m)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train %s --save %s/%s", args, T->tmp, name);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return false;
    snprintf(cmd, sizeof cmd, "%s/%s", T->tmp, name);
    return test_model_load(T, cmd, ds, m);
}

/* Field by field (a struct's padding bytes are not ours to compare); the
   numbers to the bit. */
static bool same_answers(const kgl_answer *a, const kgl_answer *b, int count)
{
    for (int k = 0; k < count; k++)
        if (a[k].entity != b[k].entity || memcmp(&a[k].score, &b[k].score, sizeof(double)) != 0 ||
            memcmp(&a[k].prob, &b[k].prob, sizeof(double)) != 0 || a[k].known != b[k].known)
            return false;
    return true;
}

/* The realistic filtered rank of `target` read off a FILTERED answer list
   (every entity but the known ones, best first): 1 + the answers scoring
   higher + half of those scoring the same. No call to kgl_filtered_rank. */
static double rank_in_list(const kgl_answer *a, int count, double target_score)
{
    long higher = 0, equal = 0;
    for (int k = 0; k < count; k++) {
        higher += a[k].score > target_score;
        equal += a[k].score == target_score;
    }
    return 1.0 + (double)higher + (double)equal / 2;
}

/* After 5 steps (ranks still spread between 1 and 13) the evaluation and
   kgl_predict must agree exactly: the evaluation's last chunk of scores (the
   21 head queries) equals kgl_predict_scores bit for bit, and every triple's
   rank from the filtered list (the target itself is known, so it is the one
   entity we put back: it is not in the list) equals kgl_evaluate's rank for
   that triple, tail and head. Equality, no tolerance: the same products in
   the same order must give the same bits. */
static void ranks_match_evaluation(test_ctx *T, bool reciprocal)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    if (!trained(T, reciprocal ? "--steps 5" : "--steps 5 --no-reciprocal", "five.st", &ds, &m)) return;
    CHECK(m.cfg.reciprocal == reciprocal);
    int n = ds.n_entities, n_rel = ds.n_relations;
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_model_context(&m, &t, &f); /* as kgl eval does */
    kgl_eval ev;
    kgl_eval_init(&ev, n, n_rel);
    const kgl_triple *tr = ds.splits[0].triples;
    int n_tr = ds.splits[0].n;
    kgl_evaluate(&m, f.context, &ds, tr, n_tr, &ev);
    double *states = malloc((size_t)n * m.cfg.dim * sizeof(double)), *scores = malloc((size_t)n * sizeof(double));
    kgl_context_states(&m, states);
    kgl_answer *list = malloc((size_t)n * sizeof *list);
    int mismatched_bits = 0, mismatched_ranks = 0, spread = 0;
    for (int k = 0; k < n_tr; k++) {
        kgl_predict_scores(&m, states, tr[k].tail, n_rel + tr[k].rel, scores);
        mismatched_bits += memcmp(scores, ev.scores + (size_t)k * n, (size_t)n * sizeof(double)) != 0;
        for (int dir = 0; dir < 2; dir++) {
            int entity = dir == 0 ? tr[k].head : tr[k].tail, target = dir == 0 ? tr[k].tail : tr[k].head;
            int row = dir == 0 ? tr[k].rel : n_rel + tr[k].rel;
            kgl_predict_scores(&m, states, entity, row, scores);
            int count = kgl_predict(&m, states, &ds, entity, row, n, true, list);
            double want = (ev.rank_lo[dir * n_tr + k] + ev.rank_hi[dir * n_tr + k]) / 2;
            double got = rank_in_list(list, count, scores[target]);
            mismatched_ranks += got != want;
            spread += want > 2;
        }
    }
    CHECK(mismatched_bits == 0);
    CHECK(mismatched_ranks == 0);
    CHECK(spread >= 5); /* the comparison is not only among first places */

    /* kgl_rank_triples (what `kgl eval --ranks` writes): the same ranks and
       answer scores, and its top wrong answer is the first unknown entry of
       the filtered list (the list is every entity but the known ones) */
    kgl_ranked *rk = malloc((size_t)2 * n_tr * sizeof *rk);
    kgl_rank_triples(&m, states, &ds, tr, n_tr, rk);
    int bad_rank = 0, bad_score = 0, bad_wrong = 0;
    for (int k = 0; k < 2 * n_tr; k++) {
        const kgl_triple *x = &tr[k % n_tr];
        bool tail = k < n_tr;
        int entity = tail ? x->head : x->tail, row = tail ? x->rel : n_rel + x->rel, target = tail ? x->tail : x->head;
        bad_rank += rk[k].rank != (ev.rank_lo[k] + ev.rank_hi[k]) / 2;
        kgl_predict_scores(&m, states, entity, row, scores);
        bad_score += memcmp(&rk[k].score, &scores[target], sizeof(double)) != 0;
        int count = kgl_predict(&m, states, &ds, entity, row, 1, true, list);
        bad_wrong += count != 1 || list[0].entity != rk[k].top_wrong || list[0].score != rk[k].top_wrong_score;
    }
    CHECK(bad_rank == 0 && bad_score == 0 && bad_wrong == 0);
    free(rk);
    free(list);
    free(scores);
    free(states);
    kgl_eval_free(&ev);
    kgl_tape_free(&t);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

TEST(predict_ranks_are_the_evaluation_ranks) { ranks_match_evaluation(T, true); }

/* Without reciprocal relations a head query scores C[j]·R[r]·E[t] with
   every candidate as the head, as kgl eval does; same exact comparison. */
TEST(predict_ranks_are_the_evaluation_ranks_without_reciprocals) { ranks_match_evaluation(T, false); }

/* What a user asks after training on the academic world (100 steps fit it:
   every training triple ranks first). */
TEST(predict_answers_the_academic_world)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    if (!trained(T, "--steps 100", "fit.st", &ds, &m)) return;
    int n = ds.n_entities, advises = kgl_dataset_relation_id(&ds, "advises");
    int alice = kgl_dataset_entity_id(&ds, "alice"), bob = kgl_dataset_entity_id(&ds, "bob");
    int carol = kgl_dataset_entity_id(&ds, "carol"), dave = kgl_dataset_entity_id(&ds, "dave");
    int erin = kgl_dataset_entity_id(&ds, "erin");
    kgl_answer a[13], all[13];

    /* (alice, advises, ?): her two students first, both known; NULL states
       (computed inside) give the same answers as given states */
    int count = kgl_predict(&m, NULL, &ds, alice, advises, 3, false, a);
    CHECK(count == 3);
    CHECK((a[0].entity == dave && a[1].entity == erin) || (a[0].entity == erin && a[1].entity == dave));
    CHECK(a[0].known && a[1].known && !a[2].known);
    CHECK(a[0].score >= a[1].score && a[1].score >= a[2].score);

    /* the whole unfiltered list: probabilities are a softmax (sum 1 to
       round-off of 13 terms, 1e-12 is ample) and follow the scores */
    CHECK(kgl_predict(&m, NULL, &ds, alice, advises, n, false, all) == n);
    double sum = 0;
    for (int k = 0; k < n; k++) sum += all[k].prob;
    CHECK_NEAR(sum, 1.0, 1e-12);
    CHECK(all[0].prob > all[n - 1].prob);
    CHECK(same_answers(a, all, 3)); /* top 3 is the head of the full list */

    /* filtered: dave and erin are gone, the rest keep their unfiltered
       probabilities (so the list's top is all[2], with the same prob bits) */
    count = kgl_predict(&m, NULL, &ds, alice, advises, n, true, a);
    CHECK(count == n - 2);
    bool students = false;
    for (int k = 0; k < count; k++) students |= a[k].entity == dave || a[k].entity == erin || a[k].known;
    CHECK(!students);
    CHECK(a[0].entity == all[2].entity && a[0].prob == all[2].prob);

    /* the head query (?, advises, carol) through advises⁻¹: bob */
    count = kgl_predict(&m, NULL, &ds, carol, ds.n_relations + advises, 1, false, a);
    CHECK(count == 1 && a[0].entity == bob && a[0].known);
    /* nothing known: no answer marked, none filtered */
    CHECK(kgl_predict(&m, NULL, NULL, alice, advises, n, true, all) == n);
    int marked = 0;
    for (int k = 0; k < n; k++) marked += all[k].known;
    CHECK(marked == 0);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* A checkpoint alone gives the names and the same model: its answers are
   the bits of the model opened against the triples, with nothing known. */
TEST(checkpoint_opens_without_triples)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    if (!trained(T, "--steps 30", "alone.st", &ds, &m)) return;
    char path[1024], e[1024];
    snprintf(path, sizeof path, "%s/alone.st", T->tmp);
    kgl_dataset names;
    kgl_checkpoint ck;
    if (!CHECK(kgl_checkpoint_open_standalone(path, &names, &ck, e, sizeof e))) return;
    CHECK(names.n_entities == ds.n_entities && names.n_relations == ds.n_relations && names.n_splits == 0);
    bool same = true;
    for (int i = 0; i < ds.n_entities; i++) same &= strcmp(names.entity_names[i], ds.entity_names[i]) == 0;
    for (int r = 0; r < ds.n_relations; r++) same &= strcmp(names.relation_names[r], ds.relation_names[r]) == 0;
    CHECK(same);
    CHECK(kgl_dataset_entity_id(&names, "erin") == kgl_dataset_entity_id(&ds, "erin"));
    kgl_model alone;
    kgl_model_create(&alone, &ck.cfg);
    kgl_checkpoint_apply(&ck, &alone);
    kgl_answer a[13], b[13];
    int alice = kgl_dataset_entity_id(&ds, "alice");
    int na = kgl_predict(&alone, NULL, &names, alice, 0, 13, true, a);
    int nb = kgl_predict(&m, NULL, NULL, alice, 0, 13, false, b);
    CHECK(na == 13 && nb == 13 && same_answers(a, b, 13));
    kgl_model_free(&alone);
    kgl_checkpoint_close(&ck);
    kgl_dataset_free(&names);

    /* names out of byte order cannot be looked up by binary search: refused */
    char *swap = ds.entity_names[0];
    ds.entity_names[0] = ds.entity_names[1];
    ds.entity_names[1] = swap;
    kgl_train_state st;
    memset(&st, 0, sizeof st);
    kgl_optim_defaults(&st.optim);
    snprintf(path, sizeof path, "%s/unsorted.st", T->tmp);
    CHECK(kgl_checkpoint_save(path, &m, &ds, &st, e, sizeof e));
    CHECK(!kgl_checkpoint_open_standalone(path, &names, &ck, e, sizeof e));
    CHECK(strstr(e, "unsorted.st: metadata 'entities': 'alice' does not come after 'bob'") != NULL);
    CHECK(names.entity_names == NULL && ck.file == NULL); /* nothing left to free */
    ds.entity_names[1] = ds.entity_names[0];
    ds.entity_names[0] = swap;
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* Equal scores come out by entity id, lower first (kgl/model.h, kgl_predict
   and kgl_ranked's top_wrong). With every entity embedding zero, every
   candidate's score is exactly 0 (a sum of products with 0), so the whole
   list is one tie: the order is the documented one, read off a plain loop
   over the ids that skips the known answers. */
TEST(predict_and_top_wrong_break_ties_by_lower_id)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = ds.n_entities, cfg.n_relations = ds.n_relations, cfg.dim = 8, cfg.heads = 2;
    kgl_model m;
    kgl_model_create(&m, &cfg);
    kgl_rng rng;
    kgl_rng_seed(&rng, 3);
    kgl_model_init(&m, &rng);
    memset(m.entity_emb->data, 0, kgl_numel(m.entity_emb) * sizeof(double));
    int n = ds.n_entities, alice = kgl_dataset_entity_id(&ds, "alice"), advises = kgl_dataset_relation_id(&ds, "advises");
    int n_known = 0;
    const int *known = kgl_dataset_known(&ds, alice, advises, &n_known);
    if (!CHECK(n_known == 2)) return; /* dave and erin */
    kgl_answer a[13];
    /* unfiltered: ids 0, 1, 2, 3, 4 */
    CHECK(kgl_predict(&m, NULL, &ds, alice, advises, 5, false, a) == 5);
    for (int k = 0; k < 5; k++) CHECK(a[k].entity == k && a[k].score == 0);
    /* filtered: the first five ids that are not known answers */
    CHECK(kgl_predict(&m, NULL, &ds, alice, advises, 5, true, a) == 5);
    int want_ids[5], w = 0;
    for (int j = 0; j < n && w < 5; j++)
        if (j != known[0] && j != known[1]) want_ids[w++] = j;
    for (int k = 0; k < 5; k++) CHECK(a[k].entity == want_ids[k] && !a[k].known);
    /* top_wrong of (alice, advises, dave): the lowest id that is neither dave nor known */
    kgl_triple tr = {alice, advises, kgl_dataset_entity_id(&ds, "dave")};
    kgl_ranked rk[2];
    kgl_rank_triples(&m, NULL, &ds, &tr, 1, rk);
    int want = 0;
    while (want == tr.tail || want == known[0] || want == known[1]) want++;
    CHECK(rk[0].top_wrong == want && rk[0].top_wrong_score == 0);
    /* the head query (?, advises, dave): known heads are alice only */
    const int *heads = kgl_dataset_known(&ds, tr.tail, ds.n_relations + advises, &n_known);
    want = 0;
    while (want == tr.head || (n_known > 0 && want == heads[0])) want++;
    CHECK(n_known == 1 && rk[1].top_wrong == want);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* kgl_model_finite: a trained model is finite; its entity embeddings made
   1e300 times larger are finite numbers, but the layer's arithmetic on them
   is not, and that is said with the tensor where it shows first. */
TEST(model_finite_names_the_tensor_too_large_for_finite_arithmetic)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    if (!trained(T, "--steps 5 --quiet", "finite.st", &ds, &m)) return;
    char why[1024] = "";
    CHECK(kgl_model_finite(&m, "finite.st", why, sizeof why) && why[0] == 0);
    for (size_t k = 0; k < kgl_numel(m.entity_emb); k++) m.entity_emb->data[k] *= 1e300;
    CHECK(!kgl_model_finite(&m, "huge.st", why, sizeof why));
    if (!CHECK(strncmp(why, "huge.st: ", 9) == 0 && strstr(why, "(tensor ") &&
               strstr(why, "too large for finite arithmetic")))
        printf("    %s\n", why);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* kgl_question_make: names to ids for each kind of question, and each
 * unknown name said after its option (or its place), near names or none. */
TEST(questions_from_names_and_their_mistakes)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    int alice = kgl_dataset_entity_id(&ds, "alice"), dave = kgl_dataset_entity_id(&ds, "dave");
    int advises = kgl_dataset_relation_id(&ds, "advises");
    kgl_question q;
    char e[KGL_QUESTION_ERR_CAP];
    CHECK(kgl_question_make(&ds, "alice", "advises", NULL, NULL, &q, e, sizeof e));
    CHECK(q.entity == alice && q.relation == advises && !q.ask_head && q.tail == -1);
    CHECK(kgl_question_make(&ds, NULL, "advises", "dave", NULL, &q, e, sizeof e));
    CHECK(q.entity == dave && q.relation == advises && q.ask_head && q.tail == -1);
    CHECK(kgl_question_make(&ds, "alice", "advises", "dave", NULL, &q, e, sizeof e));
    CHECK(q.entity == alice && q.relation == advises && q.tail == dave);
    CHECK(!kgl_question_make(&ds, "alice", "advisess", NULL, NULL, &q, e, sizeof e));
    CHECK(strcmp(e, "--relation: unknown relation 'advisess'; did you mean 'advises'?") == 0);
    CHECK(!kgl_question_make(&ds, NULL, "advises", "zzzzzzzz", NULL, &q, e, sizeof e));
    CHECK(strcmp(e, "--tail: unknown entity 'zzzzzzzz' (none is close)") == 0);
    CHECK(!kgl_question_make(&ds, "alicee", "advises", NULL, "q.tsv:3", &q, e, sizeof e));
    CHECK(strcmp(e, "q.tsv:3: unknown entity 'alicee'; did you mean 'alice'?") == 0);
    CHECK(!kgl_question_make(&ds, "alice", "advises", "bobb", NULL, &q, e, sizeof e));
    CHECK(strcmp(e, "--tail: unknown entity 'bobb'; did you mean 'bob'?") == 0);
    kgl_dataset_free(&ds);
}

/* kgl_questions_read: a file read whole, in order, comments and blank lines
 * skipped; each malformed line said with its place, nothing returned. */
TEST(questions_read_from_a_file)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const char good[] = "# questions\nalice\tadvises\t?\n\n?\tadvises\tdave\nalice\tadvises\tdave\n";
    const char *path = write_tmp(T, 0, "q.tsv", good, sizeof good - 1);
    kgl_question *qs = NULL;
    int n = 0;
    char e[KGL_QUESTION_ERR_CAP] = "";
    CHECK(kgl_questions_read("predict", path, &ds, &qs, &n, e, sizeof e));
    CHECK(n == 3 && qs);
    if (n == 3 && qs) {
        CHECK(!qs[0].ask_head && qs[0].tail < 0 && qs[0].entity == kgl_dataset_entity_id(&ds, "alice"));
        CHECK(qs[1].ask_head && qs[1].tail < 0 && qs[1].entity == kgl_dataset_entity_id(&ds, "dave"));
        CHECK(!qs[2].ask_head && qs[2].tail == kgl_dataset_entity_id(&ds, "dave"));
    }
    free(qs);
    static const struct { const char *text, *want; } bad[] = {
        {"alice\tadvises\n", ":1: expected 3 tab-separated fields (head, relation, tail; '?' as the head or the "
                             "tail asks for it), got 2"},
        {"alice\tadvises\t?\nalice\t?\tdave\n", ":2: the relation cannot be asked for; put '?' in the head or the "
                                                "tail"},
        {"?\tadvises\t?\n", ":1: both the head and the tail are '?'; ask for one of them, or give both to score the "
                            "triple"},
        {"alice\tadvisess\t?\n", ":1: unknown relation 'advisess'; did you mean 'advises'?"},
        {"alice\tadvises\t?\nx\xff\tb\tc\n", ":2: invalid UTF-8 at byte 2 of the line"}, /* after a good line */
        {"# nothing\n", ": no questions (each line is head<TAB>relation<TAB>tail, with '?' as the head or the tail "
                        "to ask for it)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        path = write_tmp(T, 1, "bad.tsv", bad[k].text, strlen(bad[k].text));
        char want[2048];
        snprintf(want, sizeof want, "%s%s", path, bad[k].want);
        qs = NULL;
        n = -1;
        bool ok = kgl_questions_read("predict", path, &ds, &qs, &n, e, sizeof e);
        CHECK(!ok && qs == NULL && n == -1);
        if (!CHECK(strcmp(e, want) == 0)) fprintf(stderr, "got  %s\nwant %s\n", e, want);
    }
    CHECK(!kgl_questions_read("predict", "/nonexistent/q.tsv", &ds, &qs, &n, e, sizeof e));
    CHECK(strncmp(e, "kgl predict: --queries /nonexistent/q.tsv: ", 43) == 0);
    kgl_dataset_free(&ds);
}

static void count_progress(void *ctx, long done, long total)
{
    long *last = ctx;
    if (done > last[0] && done <= total) last[0] = done, last[1] = total;
}

/* kgl_ranks_write: the header, then each triple's tail query and, after
 * all of them, its head query, with kgl_rank_triples' numbers to the bit
 * (%.17g reads back to the same double); the progress told of all 2n. */
TEST(ranks_written_as_tsv_rows_of_the_triples_ranks)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    if (!trained(T, "--steps 30", "ranks.st", &ds, &m)) return;
    const kgl_split *sp = &ds.splits[0];
    int n = sp->n;
    kgl_ranked *want = malloc((size_t)2 * n * sizeof *want);
    kgl_rank_triples(&m, NULL, &ds, sp->triples, n, want);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    kgl_ranks_write_header(f);
    const kgl_model *models[1] = {&m};
    const kgl_real *states[1] = {NULL}; /* computed inside */
    long seen[2] = {0, 0};
    CHECK(kgl_ranks_write(f, models, states, 1, &ds, "valid", sp->triples, n, count_progress, seen));
    fclose(f);
    CHECK(seen[0] == 2L * n && seen[1] == 2L * n);
    char *line = strtok(text, "\n");
    CHECK(line && strcmp(line, "split\thead\trelation\ttail\tdirection\trank\tscore\ttop_wrong\ttop_wrong_score") == 0);
    int rows = 0;
    while ((line = strtok(NULL, "\n")) && rows < 2 * n) {
        const kgl_triple *t = &sp->triples[rows % n];
        const kgl_ranked *x = &want[rows];
        char expect[1024], other[256] = "";
        if (x->top_wrong >= 0) snprintf(other, sizeof other, "%s\t%.17g", ds.entity_names[x->top_wrong], x->top_wrong_score);
        else snprintf(other, sizeof other, "\t");
        snprintf(expect, sizeof expect, "valid\t%s\t%s\t%s\t%s\t%.17g\t%.17g\t%s", ds.entity_names[t->head],
                 ds.relation_names[t->rel], ds.entity_names[t->tail], rows < n ? "tail" : "head", x->rank, x->score,
                 other);
        if (!CHECK(strcmp(line, expect) == 0)) {
            fprintf(stderr, "row %d: got  %s\n        want %s\n", rows, line, expect);
            break;
        }
        rows++;
    }
    CHECK(rows == 2 * n && line == NULL);
    free(text);
    free(want);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* kgl_export_tsv writes the files kgl_export_files names, each what its
 * name says: metadata.tsv the entity names a line each, vectors.tsv numbers
 * only, entities.tsv a header and a named row per entity. */
TEST(export_writes_the_files_it_names)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    if (!trained(T, "--steps 5", "export.st", &ds, &m)) return;
    char dir[1024], path[1100], e[1024];
    snprintf(dir, sizeof dir, "%s/export", T->tmp);
    if (!CHECK(kgl_export_tsv(&m, &ds, dir, e, sizeof e))) return;
    char *text[KGL_EXPORT_FILES];
    for (int k = 0; k < KGL_EXPORT_FILES; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, kgl_export_files[k]);
        CHECK((text[k] = test_slurp(path, NULL)) != NULL);
    }
    CHECK(strcmp(kgl_export_files[0], "entities.tsv") == 0 && strcmp(kgl_export_files[5], "metadata.tsv") == 0);
    if (text[0] && text[3] && text[5]) {
        CHECK(strncmp(text[5], "alice\nbob\ncarol\n", 16) == 0); /* metadata.tsv */
        CHECK(strchr("-0123456789", text[3][0]) != NULL);        /* vectors.tsv: a number first */
        char *row = strchr(text[0], '\n');                        /* entities.tsv: the header, then alice's row */
        CHECK(row && strncmp(row + 1, "alice\t", 6) == 0);
    }
    for (int k = 0; k < KGL_EXPORT_FILES; k++) free(text[k]);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* kgl_questions_rank ranks the triples among the questions, in their
 * order, with kgl_rank_triples' numbers; the JSON of a question's answers
 * and of a triple's ranks names each field, null where nothing is known. */
TEST(questions_ranked_and_written_as_json)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    if (!trained(T, "--steps 10", "rankq.st", &ds, &m)) return;
    int alice = kgl_dataset_entity_id(&ds, "alice"), bob = kgl_dataset_entity_id(&ds, "bob");
    int dave = kgl_dataset_entity_id(&ds, "dave"), advises = kgl_dataset_relation_id(&ds, "advises");
    kgl_question qs[3] = {{alice, advises, false, dave}, {bob, advises, true, -1}, {bob, advises, false, dave}};
    const kgl_model *models[1] = {&m};
    const kgl_real *states[1] = {NULL};
    int n_t = -1;
    kgl_ranked *got = kgl_questions_rank(models, states, 1, &ds, qs, 3, &n_t);
    kgl_triple tr[2] = {{alice, advises, dave}, {bob, advises, dave}};
    kgl_ranked want[4];
    kgl_rank_triples(&m, NULL, &ds, tr, 2, want);
    CHECK(n_t == 2);
    for (int k = 0; k < 4 && n_t == 2; k++)
        CHECK(got[k].rank == want[k].rank && got[k].score == want[k].score && got[k].top_wrong == want[k].top_wrong);
    free(got);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    kgl_json_writer w;
    kgl_json_writer_init(&w, f);
    kgl_answer a[1] = {{dave, 2, 0.5, true}};
    kgl_question_json(&w, &ds, &qs[1], a, 1, true, false, 0); /* (?, advises, bob) */
    kgl_json_newline(&w);
    kgl_ranked r[2] = {{1.5, 2, 0.25, -1, NAN}, {3, -1, 0.125, alice, 0.5}};
    kgl_question_triple_json(&w, &ds, &qs[0], r, -1, true);
    kgl_json_newline(&w);
    kgl_json_writer_finish(&w);
    fclose(f);
    const char *want_json =
        "{\"query\":{\"head\":null,\"relation\":\"advises\",\"tail\":\"bob\"},\"direction\":\"head\",\"filter\":false,"
        "\"known_left_out\":0,\"answers\":[{\"rank\":1,\"entity\":\"dave\",\"score\":2,\"prob\":0.5,\"known\":true}]}\n"
        "{\"query\":{\"head\":\"alice\",\"relation\":\"advises\",\"tail\":\"dave\"},\"direction\":\"triple\","
        "\"filter\":true,\"known\":null,\"tail\":{\"rank\":1.5,\"score\":2,\"prob\":0.25,\"top_other\":null,"
        "\"top_other_score\":null},\"head\":{\"rank\":3,\"score\":-1,\"prob\":0.125,\"top_other\":\"alice\","
        "\"top_other_score\":0.5}}\n";
    if (!CHECK(text && strcmp(text, want_json) == 0)) fprintf(stderr, "got  %s\nwant %s\n", text, want_json);
    free(text);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* kgl predict's tables as the library writes them (kgl_question_write,
   kgl_question_triple_write) to a memory stream, for answers and ranks
   made by hand: the question, the caption the filter and the known answers
   decide, a row per answer in its columns; a triple's two questions with
   the rank (a tie's half shown), score, probability and best other answer. */
TEST(predict_tables_as_text)
{
    kgl_dataset ds;
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char err[KGL_QUESTION_ERR_CAP];
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, err, sizeof err))) return;
    kgl_question q, t;
    if (!CHECK(kgl_question_make(&ds, "alice", "advises", NULL, "test", &q, err, sizeof err) &&
               kgl_question_make(&ds, "alice", "advises", "carol", "test", &t, err, sizeof err)))
        return;
    int carol = t.tail, dave = -1;
    for (int e = 0; e < ds.n_entities; e++)
        if (strcmp(ds.entity_names[e], "dave") == 0) dave = e;
    if (!CHECK(dave >= 0)) return;
    kgl_answer a[2] = {{carol, 2.5, 0.5, true}, {dave, 1.25, 0.25, false}};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!CHECK(f != NULL)) return;
    kgl_question_write(f, &ds, &q, a, 2, 2, true, false, 0);
    fclose(f);
    const char *want = "(alice, advises, ?)  top 2, known answers marked\n"
                       "rank  tail        score        prob  known\n"
                       "   1  carol      2.5000         0.5  yes\n"
                       "   2  dave       1.2500        0.25  no\n";
    if (!CHECK(text && strcmp(text, want) == 0)) printf("    got\n%s    want\n%s", text, want);
    free(text);
    f = open_memstream(&text, &len);
    kgl_question_write(f, &ds, &q, a + 1, 1, 1, true, true, 1); /* filtered: carol, known, left out */
    fclose(f);
    CHECK(text && strncmp(text, "(alice, advises, ?)  top 1, 1 known answer left out\n", 52) == 0 && !strstr(text, "carol"));
    free(text);

    kgl_ranked r[2] = {{1, 2.5, 0.5, dave, 1}, {1.5, 0.75, 0.125, -1, NAN}};
    f = open_memstream(&text, &len);
    kgl_question_triple_write(f, &ds, &t, r, 1, true);
    fclose(f);
    want = "(alice, advises, carol)  a known triple; filtered ranks (the other known answers left out)\n"
           "question                 rank       score        prob  top other answer\n"
           "(alice, advises, ?)         1      2.5000         0.5  dave\n"
           "(?, advises, carol)       1.5      0.7500       0.125  (none)\n";
    if (!CHECK(text && strcmp(text, want) == 0)) printf("    got\n%s    want\n%s", text, want);
    free(text);
    kgl_dataset_free(&ds);
}
