/* tests/model_kvsall.c — 1-N / KvsAll targets (kgl train --targets kvsall):
 * the multi-answer cross entropy by hand, the queries the trainer builds
 * and the loss of its step, batches and epochs counted in queries, an exact
 * resume, and a fit of the academic world. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 16], err[1 << 14];

/* One row z = (0, ln 3, 0, 0) with the answers {1, 2}: softmax p = (1, 3, 1,
   1)/6, target q = (0, ½, ½, 0), so L = ln 6 − (ln 3)/2 and ∂L/∂z = p − q =
   (1/6, 0, −1/3, 1/6); smoothed by ε, q = 0.8 q + ε/4. A row with one answer
   is kgl_cross_entropy's loss. Values O(1) from a handful of operations: a
   few ulps, so 1e-14. */
TEST(kvsall_multilabel_ce_by_hand)
{
    kgl_tape t;
    kgl_tape_init(&t);
    kgl_tensor *z = kgl_tensor_new(&t, 1, 4, true);
    const double row[4] = {0, log(3.0), 0, 0};
    memcpy(z->data, row, sizeof row);
    static const int off[] = {0, 2}, answers[] = {1, 2};
    kgl_tensor *L = kgl_multilabel_ce(&t, z, off, answers, 0.0);
    CHECK_NEAR(L->data[0], log(6.0) - log(3.0) / 2, 1e-14);
    kgl_backward(&t, L);
    const double grad[4] = {1.0 / 6, 0, -1.0 / 3, 1.0 / 6};
    for (int j = 0; j < 4; j++) CHECK_NEAR(z->grad[j], grad[j], 1e-14);

    kgl_tape_reset(&t);
    z = kgl_tensor_new(&t, 1, 4, true);
    memcpy(z->data, row, sizeof row);
    L = kgl_multilabel_ce(&t, z, off, answers, 0.2);
    CHECK_NEAR(L->data[0], log(6.0) - (0.8 * log(3.0) / 2 + 0.05 * log(3.0)), 1e-14);
    kgl_backward(&t, L);
    const double q[4] = {0.05, 0.45, 0.45, 0.05}, p[4] = {1.0 / 6, 0.5, 1.0 / 6, 1.0 / 6};
    for (int j = 0; j < 4; j++) CHECK_NEAR(z->grad[j], p[j] - q[j], 1e-14);

    /* two rows, one answer each: the one-hot cross entropy, mean over rows */
    kgl_tape_reset(&t);
    z = kgl_tensor_new(&t, 2, 4, true);
    const double two[8] = {0.3, -1.2, 2.0, 0.1, 1.5, 0.2, -0.7, 0.9};
    memcpy(z->data, two, sizeof two);
    static const int off1[] = {0, 1, 2}, ans1[] = {2, 0};
    double multi = kgl_multilabel_ce(&t, z, off1, ans1, 0.1)->data[0];
    double onehot = kgl_cross_entropy(&t, z, ans1, 0.1)->data[0];
    CHECK_NEAR(multi, onehot, 1e-14);
    kgl_tape_free(&t);
}

/* a r b, a r c, b r c, c s a: with reciprocals the 8 examples are 6 queries
   (relation row, then head): (a,r):{b,c} (b,r):{c} (c,s):{a} (b,r⁻¹):{a}
   (c,r⁻¹):{a,b} (a,s⁻¹):{c}. */
static bool tiny_trainer(test_ctx *T, kgl_dataset *ds, kgl_trainer *tr, int batch)
{
    static const char text[] = "a\tr\tb\na\tr\tc\nb\tr\tc\nc\ts\ta\n";
    kgl_source src = {"tiny.tsv", text, sizeof text - 1};
    char e[256];
    if (!CHECK(kgl_dataset_load(ds, &src, 1, e, sizeof e))) return false;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    kgl_train_config tc = {batch, 5, {0}, NULL, 1, false, false};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer_init(tr, ds, ds->splits[0].triples, ds->splits[0].n, &cfg, &tc);
    kgl_trainer_set_kvsall(tr);
    return true;
}

TEST(kvsall_queries_and_the_loss_of_a_step)
{
    kgl_dataset ds;
    kgl_trainer tr;
    if (!tiny_trainer(T, &ds, &tr, 1024)) return;
    /* entities a b c = 0 1 2; relations r s = 0 1; inverses 2 3 */
    static const int head[6] = {0, 1, 2, 1, 2, 0}, rel[6] = {0, 0, 1, 2, 2, 3};
    static const int off[7] = {0, 2, 3, 4, 5, 7, 8}, answers[8] = {1, 2, 2, 0, 0, 0, 1, 2};
    CHECK(tr.n_examples == 6);
    for (int q = 0; q < 6 && q < tr.n_examples; q++) CHECK(tr.ex_head[q] == head[q] && tr.ex_rel[q] == rel[q]);
    for (int q = 0; q <= 6; q++) CHECK(tr.q_off[q] == off[q]);
    for (int k = 0; k < 8; k++) CHECK(tr.q_answers[k] == answers[k]);

    /* the step's loss, recomputed from the states C at the same parameters:
       mean over queries of lse_j s[j] − mean over answers of s[t] */
    int n = 3, d = tr.model.cfg.dim;
    double *C = malloc((size_t)n * d * sizeof *C);
    memcpy(C, kgl_trainer_states(&tr)->data, (size_t)n * d * sizeof *C);
    const double *R = tr.model.relation_emb->data, *E = tr.model.entity_emb->data;
    double want = 0;
    for (int q = 0; q < 6; q++) {
        double s[3], mx = -INFINITY, z = 0, target = 0;
        for (int j = 0; j < n; j++) {
            s[j] = 0;
            for (int c = 0; c < d; c++) s[j] += C[head[q] * d + c] * R[rel[q] * d + c] * E[j * d + c];
            if (s[j] > mx) mx = s[j];
        }
        for (int j = 0; j < n; j++) z += exp(s[j] - mx);
        for (int k = off[q]; k < off[q + 1]; k++) target += s[answers[k]];
        want += mx + log(z) - target / (off[q + 1] - off[q]);
    }
    want /= 6;
    double loss = kgl_trainer_compute(&tr);
    /* the same sums in other orders (GEMM, vector exp): round-off of O(1) terms */
    CHECK_NEAR(loss, want, 1e-12);
    free(C);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);

    /* --batch counts queries: 4, then the last 2 of the epoch, each query once */
    if (!tiny_trainer(T, &ds, &tr, 4)) return;
    int seen[6] = {0};
    for (int step = 0; step < 2; step++) {
        kgl_trainer_step(&tr);
        int size = step == 0 ? 4 : 2;
        CHECK(tr.cursor == (step == 0 ? 4 : 0));
        for (int b = 0; b < size; b++) {
            for (int q = 0; q < 6; q++)
                if (tr.b_head[b] == head[q] && tr.b_rel[b] == rel[q]) {
                    seen[q]++;
                    /* the batch carries that query's answers */
                    CHECK(tr.b_off[b + 1] - tr.b_off[b] == off[q + 1] - off[q]);
                    CHECK(memcmp(tr.b_answers + tr.b_off[b], answers + off[q],
                                 (size_t)(off[q + 1] - off[q]) * sizeof(int)) == 0);
                }
        }
    }
    for (int q = 0; q < 6; q++) CHECK(seen[q] == 1);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* --relation-loss with 1-N targets: one triple (i, r, t) per query, t drawn
   from the query's answers by the trainer's dropout stream in batch order
   (kgl_rng_below over the answer count, none for a single answer); without
   a stream (a loss outside training), the first answer. The term is λ ·
   mean over queries of lse_k s[k] − s[r], s[k] = Σ_c C[i,c] E[t,c] R[k,c]
   over all 4 relation rows (test_relation_prediction_ce with the drawn
   tails). O(1) sums of d products: 1e-12. */
static double relation_term(const kgl_model *m, const double *C, int n, const int *head, const int *rel,
                            const int *tail)
{
    kgl_batch b = {n, head, rel, tail, NULL};
    return test_relation_prediction_ce(m, C, &b);
}


TEST(kvsall_relation_loss_asks_about_one_drawn_answer_a_query)
{
    kgl_dataset ds;
    kgl_trainer tr;
    if (!tiny_trainer(T, &ds, &tr, 1024)) return;
    CHECK(kgl_config_relation_rows(&tr.model.cfg) == 4);
    double plain = kgl_trainer_compute(&tr);
    kgl_regularisers with = {.relation_loss = 0.7};
    kgl_trainer_set_regularisers(&tr, &with);
    kgl_rng stream = tr.dropout_rng; /* the draws the step will make */
    double loss = kgl_trainer_compute(&tr);
    /* the whole graph is one batch, in file order (the queries above) */
    int n = 6, drawn[6], first[6], moved = 0;
    const double *C = kgl_trainer_states(&tr)->data;
    for (int q = 0; q < n; q++) {
        int count = tr.q_off[q + 1] - tr.q_off[q], pick = count > 1 ? (int)kgl_rng_below(&stream, (uint32_t)count) : 0;
        drawn[q] = tr.q_answers[tr.q_off[q] + pick];
        first[q] = tr.q_answers[tr.q_off[q]];
        moved += pick != 0;
    }
    CHECK_NEAR(loss - plain, 0.7 * relation_term(&tr.model, C, n, tr.ex_head, tr.ex_rel, drawn), 1e-12);
    /* the stream moved on by exactly those draws */
    CHECK(memcmp(&stream, &tr.dropout_rng, sizeof stream) == 0);
    /* seed 1 draws a second answer for at least one of the two queries that
       have two, so the drawn and the first-answer terms differ here */
    CHECK(moved > 0);
    /* without a stream: the first answers */
    kgl_tape t;
    kgl_tape_init(&t);
    kgl_batch b = {n, tr.ex_head, tr.ex_rel, tr.ex_tail, NULL};
    kgl_forward f;
    kgl_model_loss_multi(&tr.model, &t, &b, tr.q_off, tr.q_answers, NULL, &with, &f);
    double no_stream = f.loss->data[0];
    kgl_model_loss_multi(&tr.model, &t, &b, tr.q_off, tr.q_answers, NULL, NULL, &f);
    double base = f.loss->data[0];
    CHECK_NEAR(no_stream - base, 0.7 * relation_term(&tr.model, f.context->data, n, tr.ex_head, tr.ex_rel, first),
               1e-12);
    CHECK(fabs(relation_term(&tr.model, f.context->data, n, tr.ex_head, tr.ex_rel, first) -
               relation_term(&tr.model, f.context->data, n, tr.ex_head, tr.ex_rel, drawn)) > 1e-9);
    /* the term's gradient (no stream: fixed answers) against central
       differences of the whole loss in E and R, which it reaches through the
       tails and every relation row: h = 1e-5 in double precision leaves
       O(h²) + 1e-16/h ≈ 1e-10, so 1e-6 relative */
    kgl_params_zero_grad(&tr.model.params);
    kgl_tape_reset(&t);
    kgl_model_loss_multi(&tr.model, &t, &b, tr.q_off, tr.q_answers, NULL, &with, &f);
    kgl_backward(&t, f.loss);
    int checked = 0;
    for (int which = 0; which < 2; which++) {
        kgl_tensor *P = which ? tr.model.relation_emb : tr.model.entity_emb;
        size_t count = kgl_numel(P);
        for (size_t i = 0; i < count; i += count / 7 + 1) {
            double g = P->grad[i], x = P->data[i], h = 1e-5, up, down;
            P->data[i] = x + h;
            kgl_tape_reset(&t);
            kgl_model_loss_multi(&tr.model, &t, &b, tr.q_off, tr.q_answers, NULL, &with, &f);
            up = f.loss->data[0];
            P->data[i] = x - h;
            kgl_tape_reset(&t);
            kgl_model_loss_multi(&tr.model, &t, &b, tr.q_off, tr.q_answers, NULL, &with, &f);
            down = f.loss->data[0];
            P->data[i] = x;
            double fd = (up - down) / (2 * h);
            checked += g != 0;
            if (!CHECK_NEAR(g, fd, 1e-6 * (1 + fabs(fd)))) printf("    %s[%zu]\n", which ? "R" : "E", i);
        }
    }
    CHECK(checked > 4);
    kgl_tape_free(&t);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* The checkpoint says the run trains against all answers (metadata
   targets), so a resume without --targets continues it bit for bit, with
   the position among the queries in the middle of an epoch. */
TEST(kvsall_resume_is_exact)
{
    static const char *const variants[] = {
        "--targets kvsall --batch 10",
        "--targets kvsall --batch 7 --label-smoothing 0.1 --hidden-dropout 0.2 --dropout 0.1 --weight-decay 0.3",
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        char cmd[1024], straight[64], resumed[64];
        snprintf(cmd, sizeof cmd, "train %s --steps 60 --json", variants[v]);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        CHECK(test_json_raw(out, "final_loss", straight, sizeof straight));
        snprintf(cmd, sizeof cmd, "train %s --steps 33 --save %s/k.st --quiet", variants[v], T->tmp);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        snprintf(cmd, sizeof cmd, "train --resume %s/k.st --steps 27 --json", T->tmp);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        CHECK(test_json_raw(out, "final_loss", resumed, sizeof resumed));
        if (!CHECK(strcmp(straight, resumed) == 0)) printf("    '%s': %s vs %s\n", variants[v], resumed, straight);
    }
    /* and a 1-vs-all run is another run */
    char cmd[1024], one[64], all[64];
    CHECK(run_kgl(T, "train --batch 10 --steps 20 --json", out, sizeof out, err, sizeof err) == 0);
    CHECK(test_json_raw(out, "final_loss", one, sizeof one));
    CHECK(run_kgl(T, "train --batch 10 --steps 20 --targets kvsall --json", out, sizeof out, err, sizeof err) == 0);
    CHECK(test_json_raw(out, "final_loss", all, sizeof all));
    CHECK(strcmp(one, all) != 0);
    snprintf(cmd, sizeof cmd, "train --targets kvsall --supervise-heads advises=0 --steps 1 --quiet");
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--supervise-heads needs --targets 1vsall") != NULL);
    CHECK(run_kgl(T, "train --targets kvs --steps 1", out, sizeof out, err, sizeof err) == 2);
}

/* The academic world is fitted (every training triple ranks first, tail and
   head) within 300 steps for seeds 1-3 (measured: steps 100, 49, 63). */
TEST(kvsall_fits_the_academic_world)
{
    for (int seed = 1; seed <= 3; seed++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "train --targets kvsall --steps 300 --seed %d --json", seed);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        const char *p = strstr(out, "\"fit_step\":");
        long fit = p ? strtol(p + 11, NULL, 10) : -1;
        if (!CHECK(fit >= 1 && fit <= 300)) printf("    seed %d: fit step %ld\n", seed, fit);
    }
}
