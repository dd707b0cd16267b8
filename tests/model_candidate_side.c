/* model_candidate_side.c — --candidate-states λ (README, "The neighbourhood
 * context"): a head question (?, r, t), asked as (t, r⁻¹, ?), adds to each
 * candidate j's score λ times the score j's own forward question (j, r)
 * gives t; tail questions are left alone. Checked against the definition
 * computed here from the states kgl_model_query_states gives, for both
 * readouts; the evaluation (which sorts the head questions by relation and
 * puts the ranks back), kgl_predict and kgl_rank_triples agree; and the
 * option's rules on the command line. */
#include <complex.h>
#include <stdlib.h>

#include "test.h"

static char out[1 << 16], err[1 << 14];

static bool load_academic(kgl_dataset *ds)
{
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    return kgl_dataset_load(ds, &src, 1, e, sizeof e);
}

/* Trains a graph-context model asking the relation with `extra` options (the steps among them) for
   the academic world and loads its checkpoint into m. */
static bool trained(test_ctx *T, const char *extra, const char *name, const kgl_dataset *ds, kgl_model *m)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "train --context graph --query-relation --hide-asked-relation --neighbours 3 --dim 8 --heads 2 "
             "%s --save %s/%s --quiet",
             extra, T->tmp, name);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) {
        printf("    %s\n", err);
        return false;
    }
    snprintf(cmd, sizeof cmd, "%s/%s", T->tmp, name);
    if (!test_model_load(T, cmd, ds, m)) return false;
    kgl_model_set_graph(m, ds->splits[0].triples, ds->splits[0].n); /* the model owns it */
    return true;
}

/* Every question of every entity and relation row: the head questions'
   scores are the plain scores (λ = 0) plus λ Σ_c S_(j,r)[c] · (the
   readout's product of R[r] and E[t])[c], the tail questions' the plain
   scores to the bit. The sum here is in long double, the kernel's in
   kgl_real with fused multiply-adds: d = 8 terms of size O(1-10) differ by
   a few ulps, far inside 1e-12 (1 + |score|); a missing, doubled or
   transposed term moves a score by O(0.01-1). */
static void side_is_the_definition(test_ctx *T, bool complex_readout)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    if (!trained(T, complex_readout ? "--steps 20 --candidate-states 0.5 --readout complex" : "--steps 20 --candidate-states 0.5",
                 "side.st", &ds, &m)) {
        kgl_dataset_free(&ds);
        return;
    }
    CHECK(m.cfg.candidate_states == 0.5);
    int n = ds.n_entities, n_rel = ds.n_relations, d = m.cfg.dim, h = d / 2;
    kgl_real *with = malloc((size_t)n * sizeof(kgl_real)), *plain = malloc((size_t)n * sizeof(kgl_real));
    kgl_real *S = malloc((size_t)n * d * sizeof(kgl_real));
    int *ids = malloc((size_t)n * sizeof(int)), *asked = malloc((size_t)n * sizeof(int));
    kgl_pool *pool = kgl_pool_create(1);
    double worst = 0, moved = 0;
    int tail_bits = 0;
    for (int row = 0; row < 2 * n_rel; row++) {
        int r = row % n_rel;
        for (int j = 0; j < n; j++) ids[j] = j, asked[j] = r;
        kgl_model_query_states(&m, pool, ids, asked, n, S); /* S_(j,r) for every candidate */
        const kgl_real *R = m.relation_emb->data + (size_t)r * d;
        for (int t = 0; t < n; t++) {
            kgl_predict_scores(&m, NULL, t, row, with);
            m.cfg.candidate_states = 0;
            kgl_predict_scores(&m, NULL, t, row, plain);
            m.cfg.candidate_states = 0.5;
            if (row < n_rel) { /* a tail question: unchanged */
                tail_bits += memcmp(with, plain, (size_t)n * sizeof(kgl_real)) != 0;
                continue;
            }
            const kgl_real *E = m.entity_emb->data + (size_t)t * d;
            for (int j = 0; j < n; j++) {
                const kgl_real *s = S + (size_t)j * d;
                long double forward = 0; /* the readout's score of (j, r, t) from j's state */
                if (!complex_readout)
                    for (int c = 0; c < d; c++) forward += (long double)s[c] * R[c] * E[c];
                else
                    for (int c = 0; c < h; c++)
                        forward += creal((s[c] + I * s[h + c]) * (R[c] + I * R[h + c]) * conj(E[c] + I * E[h + c]));
                double want = (double)(plain[j] + 0.5L * forward);
                double err_j = fabs(with[j] - want) / (1 + fabs(want));
                if (!(err_j <= worst)) worst = err_j; /* NaN sticks */
                if (fabs(with[j] - plain[j]) > moved) moved = fabs(with[j] - plain[j]);
            }
        }
    }
    CHECK(tail_bits == 0);
    if (!CHECK(worst <= 1e-12)) printf("    worst relative error %g\n", worst);
    CHECK(moved > 1e-3); /* the side is there: a check that cannot see it would pass with it gone */
    kgl_pool_free(pool);
    free(asked);
    free(ids);
    free(S);
    free(plain);
    free(with);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

TEST(candidate_side_adds_each_candidates_forward_score) { side_is_the_definition(T, false); }

/* The complex readout: λ Re Σ S_(j,r) R[r] conj(E[t]) over the d/2 complex numbers. */
TEST(candidate_side_adds_each_candidates_forward_score_complex) { side_is_the_definition(T, true); }

/* The evaluation ranks its head questions grouped by relation (each
   relation's candidate states once) and puts each rank back in its
   triple's place; kgl_predict and kgl_rank_triples rank one question at a
   time. Their ranks must be the evaluation's, and the answer scores
   kgl_rank_triples reports kgl_predict_scores' bits. The training triples
   are not in relation order, so a rank put back in the wrong place shows. */
TEST(candidate_side_ranks_are_the_evaluations)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    if (!trained(T, "--steps 3 --candidate-states 1", "rank.st", &ds, &m)) {
        kgl_dataset_free(&ds);
        return;
    }
    int n = ds.n_entities, n_rel = ds.n_relations;
    const kgl_triple *tr = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, unsorted = 0;
    for (int k = 1; k < n_tr; k++) unsorted += tr[k].rel < tr[k - 1].rel;
    CHECK(unsorted > 0);
    kgl_eval ev;
    kgl_eval_init(&ev, n, n_rel);
    kgl_evaluate(&m, NULL, &ds, tr, n_tr, &ev);
    kgl_real *scores = malloc((size_t)n * sizeof(kgl_real));
    kgl_answer *list = malloc((size_t)n * sizeof *list);
    kgl_ranked *rk = malloc((size_t)2 * n_tr * sizeof *rk);
    kgl_rank_triples(&m, NULL, &ds, tr, n_tr, rk);
    int bad_predict = 0, bad_ranked = 0, bad_score = 0, spread = 0;
    for (int k = 0; k < 2 * n_tr; k++) {
        const kgl_triple *x = &tr[k % n_tr];
        bool tail = k < n_tr;
        int entity = tail ? x->head : x->tail, row = tail ? x->rel : n_rel + x->rel, target = tail ? x->tail : x->head;
        double want = (ev.rank_lo[k] + ev.rank_hi[k]) / 2;
        kgl_predict_scores(&m, NULL, entity, row, scores);
        int count = kgl_predict(&m, NULL, &ds, entity, row, n, true, list);
        double got = 1; /* the filtered list holds every entity but the known ones: the target is not in it */
        for (int a = 0; a < count; a++) got += (list[a].score > scores[target]) + 0.5 * (list[a].score == scores[target]);
        bad_predict += got != want;
        bad_ranked += rk[k].rank != want;
        double answer_score = scores[target]; /* widened as kgl_ranked keeps it */
        bad_score += memcmp(&rk[k].score, &answer_score, sizeof answer_score) != 0;
        spread += !tail && want > 2;
    }
    CHECK(bad_predict == 0 && bad_ranked == 0 && bad_score == 0);
    if (!CHECK(spread >= 3)) printf("    %d head ranks above 2\n", spread); /* not only first places compared */
    free(rk);
    free(list);
    free(scores);
    kgl_eval_free(&ev);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* On the command line: it needs a question's own state, a value >= 0, is
   kept in the checkpoint (metadata candidate_states) and used by kgl eval,
   and --context none after it runs the baseline with a warning that names it. */
TEST(candidate_states_command_line)
{
    char cmd[1024];
    CHECK(run_kgl(T, "train --candidate-states 0.5 --steps 1", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--candidate-states needs --query-relation") != NULL);
    CHECK(run_kgl(T, "train --context graph --query-relation --candidate-states -1", out, sizeof out, err,
                  sizeof err) == 2);
    CHECK(strstr(err, "--candidate-states") != NULL);
    snprintf(cmd, sizeof cmd,
             "train --context graph --query-relation --neighbours 3 --candidate-states 0.25 --steps 10 --save %s/c.st "
             "--quiet",
             T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "%s/c.st", T->tmp);
    size_t len = 0;
    char *st = test_slurp(cmd, &len);
    CHECK(st && len > 8 && strstr(st + 8, "\"candidate_states\":\"0.25\""));
    free(st);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/c.st --json", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(run_kgl(T, "train --context graph --query-relation --candidate-states 0.5 --context none --steps 5", out,
                  sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "--candidate-states") != NULL);
}

/* The same files for --ranks FILE and --json predictions, or false. */
static bool same_file(const char *a, const char *b)
{
    size_t la = 0, lb = 0;
    char *x = test_slurp(a, &la), *y = test_slurp(b, &lb);
    bool same = x && y && la == lb && la > 0 && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* kgl eval and kgl predict --candidate-states L: the side is an evaluation-
   time choice, so a model trained without it, ranked with L, gives the
   ranks of the same model trained with L (the same seed: the option does
   not touch training, and no --valid chooses a step), byte for byte; L 0
   takes it away again; the override changes the ranks (else the test could
   not fail); a model that does not ask the relation is refused. */
TEST(candidate_states_at_evaluation_time)
{
    char cmd[1536], a[600], b[600];
    const char *base = "train --context graph --query-relation --hide-asked-relation --neighbours 3 --dim 8 --heads 2 "
                       "--steps 20 --quiet";
    snprintf(cmd, sizeof cmd, "%s --save %s/without.st", base, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "%s --candidate-states 0.5 --save %s/with.st", base, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    const char *ranks[][3] = {{"without", "--candidate-states 0.5", "w5"}, {"with", "", "with"},
                              {"with", "--candidate-states 0", "w0"},     {"without", "", "without"}};
    for (int k = 0; k < 4; k++) {
        snprintf(cmd, sizeof cmd, "eval --checkpoint %s/%s.st %s --ranks %s/%s.tsv", T->tmp, ranks[k][0], ranks[k][1],
                 T->tmp, ranks[k][2]);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        /* a changed value is said */
        CHECK((strstr(err, "asks its head questions with --candidate-states") != NULL) == (ranks[k][1][0] != 0));
    }
    snprintf(a, sizeof a, "%s/w5.tsv", T->tmp), snprintf(b, sizeof b, "%s/with.tsv", T->tmp);
    CHECK(same_file(a, b));
    snprintf(a, sizeof a, "%s/w0.tsv", T->tmp), snprintf(b, sizeof b, "%s/without.tsv", T->tmp);
    CHECK(same_file(a, b));
    snprintf(a, sizeof a, "%s/with.tsv", T->tmp);
    CHECK(!same_file(a, b));
    /* kgl predict: a head question's answers, every entity's score */
    static char said[3][sizeof out];
    const char *asked[][2] = {{"without", "--candidate-states 0.5"}, {"with", ""}, {"without", ""}};
    for (int k = 0; k < 3; k++) {
        snprintf(cmd, sizeof cmd,
                 "predict --checkpoint %s/%s.st %s --train data/academic.tsv --relation advises --tail alice "
                 "--no-filter --top 13 --json",
                 T->tmp, asked[k][0], asked[k][1]);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        CHECK(strstr(out, "\"rank\":13") != NULL);
        memcpy(said[k], out, sizeof out);
    }
    CHECK(strcmp(said[0], said[1]) == 0);
    CHECK(strcmp(said[1], said[2]) != 0);
    snprintf(cmd, sizeof cmd, "train --steps 3 --quiet --save %s/plain.st", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/plain.st --candidate-states 1", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--candidate-states needs a model that asks the relation") != NULL);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/with.st --candidate-states -1", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
}
