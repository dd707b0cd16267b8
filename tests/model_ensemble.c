/* tests/model_ensemble.c — an ensemble's filtered ranking
 * (kgl_evaluate_ensemble) against the same ranking computed here from each
 * member's scores, and the relation-prediction term of the loss
 * (--relation-loss) and the N3 term (--n3) against their definitions. */
#include <stdlib.h>

#include "test.h"

/* Twelve triples over six people and three relations, enough for two
   members trained from different seeds to disagree on some ranks. */
static const char family[] = "ann\tparent\tbob\nann\tparent\tcat\nbob\tparent\tdan\ncat\tparent\teve\n"
                             "dan\tsibling\teve\neve\tsibling\tdan\nbob\tsibling\tcat\ncat\tsibling\tbob\n"
                             "ann\tlikes\tdan\nbob\tlikes\teve\ncat\tlikes\tfay\nfay\tparent\tann\n";

static bool train_readout(test_ctx *T, kgl_dataset *ds, kgl_trainer *tr, uint64_t seed, int steps,
                          kgl_readout_kind readout)
{
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.readout = readout;
    cfg.dim = 8;
    cfg.heads = 2;
    kgl_train_config tc = {1024, seed, {0}, NULL, 1, false, false};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer_init(tr, ds, ds->splits[0].triples, ds->splits[0].n, &cfg, &tc);
    for (int s = 0; s < steps; s++)
        if (!CHECK(isfinite(kgl_trainer_step(tr)))) return false;
    return true;
}

static bool train(test_ctx *T, kgl_dataset *ds, kgl_trainer *tr, uint64_t seed, int steps)
{
    return train_readout(T, ds, tr, seed, steps, KGL_READOUT_DIAGONAL);
}

static bool load_family(test_ctx *T, kgl_dataset *ds)
{
    kgl_source src = {"family.tsv", family, sizeof family - 1};
    char e[256];
    return CHECK(kgl_dataset_load(ds, &src, 1, e, sizeof e));
}

/* The mean over the members of softmax(scores) for one query. */
static void mixture(const kgl_model *const *m, const double *const *C, int members, int entity, int row, double *p)
{
    int n = m[0]->cfg.n_entities;
    double *s = malloc((size_t)n * sizeof *s);
    for (int j = 0; j < n; j++) p[j] = 0;
    for (int k = 0; k < members; k++) {
        kgl_predict_scores(m[k], C[k], entity, row, s);
        double mx = s[0], z = 0;
        for (int j = 1; j < n; j++) mx = fmax(mx, s[j]);
        for (int j = 0; j < n; j++) z += exp(s[j] - mx);
        for (int j = 0; j < n; j++) p[j] += exp(s[j] - mx) / z / members;
    }
    free(s);
}

TEST(ensemble_ranks_by_the_mean_of_the_members_probabilities)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    enum { MEMBERS = 3 };
    kgl_trainer tr[MEMBERS];
    const kgl_model *models[MEMBERS];
    const kgl_tensor *states[MEMBERS];
    const double *C[MEMBERS];
    for (int k = 0; k < MEMBERS; k++) {
        /* trained for 5, 40 and 200 steps: members of different confidence,
           whose probabilities (not their raw exponentials or logits) must be averaged */
        if (!train(T, &ds, &tr[k], 11 + 1000 * (uint64_t)k, k == 0 ? 5 : k == 1 ? 40 : 200)) return;
        kgl_forward f;
        states[k] = kgl_trainer_context(&tr[k], &f);
        models[k] = &tr[k].model;
        C[k] = states[k]->data;
    }
    /* every (head, relation, tail) there could be, known or not: many
       queries, most of them far from any answer, where rules differ */
    int n = ds.n_entities, m = ds.n_relations, n3 = 0;
    kgl_triple *t3 = malloc((size_t)n * n * m * sizeof *t3);
    for (int h = 0; h < n; h++)
        for (int r = 0; r < m; r++)
            for (int t = 0; t < n; t++) t3[n3++] = (kgl_triple){h, r, t};
    kgl_eval ev;
    kgl_eval_init(&ev, n, m);
    kgl_evaluate_ensemble(models, C, MEMBERS, &ds, t3, n3, &ev);
    /* the same by hand: each direction's query, its mixture, the filtered rank */
    double *p = malloc((size_t)n * sizeof *p), tail_rr = 0, head_rr = 0;
    for (int k = 0; k < n3; k++) {
        int count;
        mixture(models, C, MEMBERS, t3[k].head, t3[k].rel, p);
        const int *known = kgl_dataset_known(&ds, t3[k].head, t3[k].rel, &count);
        tail_rr += 1 / kgl_filtered_rank(p, n, t3[k].tail, known, count);
        mixture(models, C, MEMBERS, t3[k].tail, m + t3[k].rel, p);
        known = kgl_dataset_known(&ds, t3[k].tail, m + t3[k].rel, &count);
        head_rr += 1 / kgl_filtered_rank(p, n, t3[k].head, known, count);
    }
    /* ranks are whole or half numbers; the two mixtures differ by rounding
       (an order of sums), which moves no rank here: the means agree to the
       last bits of a sum of 108 reciprocals */
    CHECK_NEAR(ev.tail.mrr, tail_rr / n3, 1e-14);
    CHECK_NEAR(ev.head.mrr, head_rr / n3, 1e-14);
    CHECK_NEAR(ev.both.mrr, (tail_rr + head_rr) / (2 * n3), 1e-14);
    /* the members disagree somewhere, or this test would not tell a mixture from one member */
    kgl_eval one;
    kgl_eval_init(&one, n, m);
    bool differ = false;
    for (int k = 0; k < MEMBERS; k++) {
        kgl_evaluate(models[k], states[k], &ds, t3, n3, &one);
        differ |= one.both.mrr != ev.both.mrr;
    }
    CHECK(differ);
    /* an ensemble of one model twice ranks as the model alone */
    const kgl_model *twice[2] = {models[0], models[0]};
    const double *twice_states[2] = {C[0], C[0]};
    kgl_evaluate(models[0], states[0], &ds, t3, n3, &one);
    kgl_evaluate_ensemble(twice, twice_states, 2, &ds, t3, n3, &ev);
    CHECK(ev.both.mrr == one.both.mrr && ev.both.hits1 == one.both.hits1 && ev.both.hits3 == one.both.hits3);
    free(p);
    free(t3);
    kgl_eval_free(&ev);
    kgl_eval_free(&one);
    for (int k = 0; k < MEMBERS; k++) kgl_trainer_free(&tr[k]);
    kgl_dataset_free(&ds);
}

/* kgl_predict_ensemble's prob is the MEAN of the members' softmax (the
   mixture above, computed here from each member's scores), its score the log
   of that, and kgl_rank_triples_ensemble gives the same prob and score. The
   mixture is summed in another order than the library's (|Δ| of a few ulps of
   a probability <= 1): 1e-14. A sum instead of a mean would be off by a factor
   of 3; the probabilities of all entities add to 1. */
TEST(ensemble_prob_is_the_mean_of_the_members_softmax)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    enum { MEMBERS = 3 };
    kgl_trainer tr[MEMBERS];
    const kgl_model *models[MEMBERS];
    const double *C[MEMBERS];
    for (int k = 0; k < MEMBERS; k++) {
        if (!train(T, &ds, &tr[k], 21 + 1000 * (uint64_t)k, 10 + 40 * k)) return;
        kgl_forward f;
        models[k] = &tr[k].model;
        C[k] = kgl_trainer_context(&tr[k], &f)->data;
    }
    int n = ds.n_entities, m = ds.n_relations, bad_prob = 0, bad_score = 0, bad_rank = 0;
    double *p = malloc((size_t)n * sizeof *p);
    kgl_answer *a = malloc((size_t)n * sizeof *a);
    for (int e = 0; e < n; e++)
        for (int row = 0; row < 2 * m; row++) {
            mixture(models, C, MEMBERS, e, row, p);
            if (!CHECK(kgl_predict_ensemble(models, C, MEMBERS, &ds, e, row, n, false, a) == n)) break;
            double sum = 0;
            for (int k = 0; k < n; k++) {
                sum += a[k].prob;
                bad_prob += !(fabs(a[k].prob - p[a[k].entity]) <= 1e-14);
                bad_score += a[k].score != log(a[k].prob);
            }
            bad_prob += !(fabs(sum - 1) <= 1e-14);
        }
    /* each triple's tail and head question, as eval --ranks writes them */
    const kgl_triple *t3 = ds.splits[0].triples;
    int n3 = ds.splits[0].n;
    kgl_ranked *rk = malloc((size_t)2 * n3 * sizeof *rk);
    kgl_rank_triples_ensemble(models, C, MEMBERS, &ds, t3, n3, rk);
    for (int k = 0; k < 2 * n3; k++) {
        const kgl_triple *x = &t3[k % n3];
        bool tail = k < n3;
        mixture(models, C, MEMBERS, tail ? x->head : x->tail, tail ? x->rel : m + x->rel, p);
        double want = p[tail ? x->tail : x->head];
        bad_rank += !(fabs(rk[k].prob - want) <= 1e-14) || rk[k].score != log(rk[k].prob);
    }
    CHECK(bad_prob == 0);
    CHECK(bad_score == 0);
    CHECK(bad_rank == 0);
    free(rk);
    free(a);
    free(p);
    for (int k = 0; k < MEMBERS; k++) kgl_trainer_free(&tr[k]);
    kgl_dataset_free(&ds);
}

/* An extra term of the loss against its definition: after a few steps of
   training, the loss on every training example (odd ones reversed) with
   `with` minus the loss without it is `weight` times term(...), computed
   here from the model's tensors; term must be at least `at_least` (a term
   worth measuring). */
typedef double term_fn(const kgl_model *m, const double *C, const kgl_batch *b);

static void check_loss_term(test_ctx *T, uint64_t seed, kgl_readout_kind readout, const kgl_regularisers *with,
                            double weight, term_fn *term, double at_least)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_trainer tr;
    if (!train_readout(T, &ds, &tr, seed, 10, readout)) return;
    kgl_batch batch = test_alternating_batch(&ds);
    kgl_tape t;
    kgl_tape_init(&t);
    kgl_forward f;
    double plain = test_loss(&tr.model, &t, &batch, NULL, &f);
    double want = term(&tr.model, f.context->data, &batch);
    double got = test_loss(&tr.model, &t, &batch, with, &f) - plain;
    CHECK(want >= at_least);
    CHECK_NEAR(got, weight * want, 1e-12);
    kgl_tape_free(&t);
    test_batch_free(&batch);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* mean_b Σ_c |C[i_b,c]|³ + |R[r_b,c]|³ + |E[t_b,c]|³ */
static double mean_cubed_norms(const kgl_model *m, const double *C, const kgl_batch *b)
{
    int d = m->cfg.dim;
    const double *E = m->entity_emb->data, *R = m->relation_emb->data;
    double cubes = 0;
    for (int k = 0; k < b->n; k++)
        for (int c = 0; c < d; c++) {
            double x[3] = {C[b->head[k] * d + c], R[b->rel[k] * d + c], E[b->tail[k] * d + c]};
            for (int j = 0; j < 3; j++) cubes += fabs(x[j]) * fabs(x[j]) * fabs(x[j]);
        }
    return cubes / b->n;
}

/* --relation-loss λ adds λ · the relation-prediction cross entropy over
   every relation row k (inverses included). Both sides are O(1) sums of
   ~10^2 products: 1e-12 is a thousand times their rounding. */
TEST(relation_loss_is_the_relation_prediction_cross_entropy)
{
    kgl_regularisers with = {.relation_loss = 0.7};
    check_loss_term(T, 5, KGL_READOUT_DIAGONAL, &with, 0.7, test_relation_prediction_ce, 0.1);
}

/* ... and with the complex readout, which scores every relation k as the
   main readout scores (i, k, t) (1e-12 as above). */
TEST(relation_loss_with_the_complex_readout_is_its_cross_entropy)
{
    kgl_regularisers with = {.relation_loss = 0.7};
    check_loss_term(T, 7, KGL_READOUT_COMPLEX, &with, 0.7, test_relation_prediction_ce, 0.1);
}

/* --n3 λ adds λ · the batch mean of the cubed absolute values of the rows
   each example multiplies (O(1) sums of ~10^3 cubes: 1e-12 likewise). */
TEST(n3_is_the_mean_cubed_norm_of_the_rows_an_example_uses)
{
    kgl_regularisers with = {.n3 = 0.02};
    check_loss_term(T, 6, KGL_READOUT_DIAGONAL, &with, 0.02, mean_cubed_norms, 1);
}
