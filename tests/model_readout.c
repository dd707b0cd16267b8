/* tests/model_readout.c — the complex readout (--readout complex): the
 * training scores, kgl_predict_scores and kgl_evaluate's ranks against its
 * definition computed here in C99 complex arithmetic; kgl train keeps it in
 * the checkpoint, and refuses what it cannot go with. And the readout's
 * entity dropout (--entity-dropout) against its definition. */
#include <complex.h>
#include <stdlib.h>

#include "test.h"

/* Twelve triples over six people and three relations (as model_ensemble.c). */
static const char family[] = "ann\tparent\tbob\nann\tparent\tcat\nbob\tparent\tdan\ncat\tparent\teve\n"
                             "dan\tsibling\teve\neve\tsibling\tdan\nbob\tsibling\tcat\ncat\tsibling\tbob\n"
                             "ann\tlikes\tdan\nbob\tlikes\teve\ncat\tlikes\tfay\nfay\tparent\tann\n";

/* The family above, and the default layer at width 8 for it. */
static bool load_family(kgl_dataset *ds, kgl_config *cfg)
{
    kgl_source src = {"family.tsv", family, sizeof family - 1};
    char e[256];
    if (!kgl_dataset_load(ds, &src, 1, e, sizeof e)) return false;
    kgl_config_defaults(cfg);
    cfg->dim = 8;
    return true;
}

/* Re Σ_k c_k r_k conj(e_k) over the d/2 complex numbers of rows laid out
   [re | im] — written from the definition, not from the library's helper. */
static double complex_score(const double *c, const double *r, const double *e, int d)
{
    int h = d / 2;
    double complex s = 0;
    for (int k = 0; k < h; k++)
        s += (c[k] + I * c[h + k]) * (r[k] + I * r[h + k]) * conj(e[k] + I * e[h + k]);
    return creal(s);
}

/* Scores of O(1) numbers, each a sum of d/2 = 4 complex triple products:
   rounding leaves ~1e-15; 1e-12 says the same function, not the same bits. */
TEST(complex_readout_is_its_definition)
{
    kgl_dataset ds;
    kgl_config cfg;
    if (!CHECK(load_family(&ds, &cfg))) return;
    cfg.heads = 2;
    cfg.readout = KGL_READOUT_COMPLEX;
    kgl_train_config tc = {1024, 3, {0}, NULL, 1, false, false};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer tr;
    kgl_trainer_init(&tr, &ds, ds.splits[0].triples, ds.splits[0].n, &cfg, &tc);
    for (int s = 0; s < 40; s++)
        if (!CHECK(isfinite(kgl_trainer_step(&tr)))) return;
    const kgl_model *m = &tr.model;
    int n = ds.n_entities, nr = ds.n_relations, d = cfg.dim, nb = ds.splits[0].n;
    /* the training forward pass: every triple, the odd ones reversed */
    kgl_batch batch = test_alternating_batch(&ds);
    const int *head = batch.head, *rel = batch.rel;
    kgl_tape t;
    kgl_tape_init(&t);
    kgl_forward f;
    test_loss(m, &t, &batch, NULL, &f);
    const double *C = f.context->data, *E = m->entity_emb->data, *R = m->relation_emb->data;
    double worst = 0, diagonal_gap = 0;
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < n; j++) {
            const double *c = C + (size_t)head[b] * d, *r = R + (size_t)rel[b] * d, *ej = E + (size_t)j * d;
            double want = complex_score(c, r, ej, d), diag = 0;
            for (int k = 0; k < d; k++) diag += c[k] * r[k] * ej[k];
            worst = fmax(worst, fabs(f.scores->data[(size_t)b * n + j] - want));
            diagonal_gap = fmax(diagonal_gap, fabs(diag - want));
        }
    CHECK(worst <= 1e-12);
    CHECK(diagonal_gap > 0.01); /* the two readouts differ here: the test can tell them apart */
    /* the evaluation's scores, and its filtered ranks, are the same function */
    double *s = malloc((size_t)n * sizeof *s), rr = 0;
    worst = 0;
    for (int b = 0; b < nb; b++) {
        kgl_predict_scores(m, C, head[b], rel[b], s);
        for (int j = 0; j < n; j++)
            worst = fmax(worst, fabs(s[j] - complex_score(C + (size_t)head[b] * d, R + (size_t)rel[b] * d,
                                                          E + (size_t)j * d, d)));
    }
    CHECK(worst <= 1e-12);
    const kgl_triple *tr3 = ds.splits[0].triples;
    for (int b = 0; b < nb; b++) { /* tail then head queries of every triple, as kgl_evaluate ranks them */
        int count;
        for (int j = 0; j < n; j++) s[j] = complex_score(C + (size_t)tr3[b].head * d, R + (size_t)tr3[b].rel * d,
                                                         E + (size_t)j * d, d);
        const int *known = kgl_dataset_known(&ds, tr3[b].head, tr3[b].rel, &count);
        rr += 1 / kgl_filtered_rank(s, n, tr3[b].tail, known, count);
        for (int j = 0; j < n; j++) s[j] = complex_score(C + (size_t)tr3[b].tail * d,
                                                         R + (size_t)(nr + tr3[b].rel) * d, E + (size_t)j * d, d);
        known = kgl_dataset_known(&ds, tr3[b].tail, nr + tr3[b].rel, &count);
        rr += 1 / kgl_filtered_rank(s, n, tr3[b].head, known, count);
    }
    kgl_eval ev;
    kgl_eval_init(&ev, n, nr);
    kgl_evaluate(m, f.context, &ds, tr3, nb, &ev);
    CHECK(ev.both.mrr < 1); /* not every rank is 1: a wrong readout would show */
    CHECK_NEAR(ev.both.mrr, rr / (2 * nb), 1e-14);
    kgl_eval_free(&ev);
    free(s);
    kgl_tape_free(&t);
    test_batch_free(&batch);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* kgl train --readout complex: the checkpoint keeps it (kgl eval ranks as
   training did; resuming with the other readout is refused), and the
   options it cannot go with are refused with a reason. */
TEST(complex_readout_from_the_command_line)
{
    static char out[1 << 17], out2[1 << 17], err[1 << 13];
    char cmd[2048];
    CHECK(run_kgl(T, "train --readout complex --dim 6 --heads 3 --steps 1", out, sizeof out, err, sizeof err) == 0);
    CHECK(run_kgl(T, "train --readout complex --dim 9 --heads 3", out, sizeof out, err, sizeof err) == 2 &&
          strstr(err, "an even --dim"));
    CHECK(run_kgl(T, "train --readout complex --no-reciprocal", out, sizeof out, err, sizeof err) == 2 &&
          strstr(err, "reciprocal"));
    CHECK(run_kgl(T, "train --readout complex --lookup", out, sizeof out, err, sizeof err) == 2 &&
          strstr(err, "--lookup needs --readout diagonal"));
    /* with the relation loss (since it scores relations with the complex product too) */
    CHECK(run_kgl(T, "train --readout complex --relation-loss 0.5 --dim 6 --heads 3 --steps 1", out, sizeof out, err,
                  sizeof err) == 0);
    CHECK(run_kgl(T, "train --readout polar", out, sizeof out, err, sizeof err) == 2);
    snprintf(cmd, sizeof cmd, "train --readout complex --steps 60 --save %s/cx.safetensors --json --quiet", T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/cx.safetensors --json", T->tmp);
    if (!CHECK(run_kgl(T, cmd, out2, sizeof out2, err, sizeof err) == 0)) return;
    char a[64], b[64];
    const char *ta = strstr(out, "\"train\":"), *tb = strstr(out2, "\"train\":");
    CHECK(ta && tb && test_json_raw(ta, "mrr", a, sizeof a) && test_json_raw(tb, "mrr", b, sizeof b) &&
          strcmp(a, b) == 0);
    /* the same steps with the specified readout are another model */
    if (!CHECK(run_kgl(T, "train --steps 60 --json --quiet", out2, sizeof out2, err, sizeof err) == 0)) return;
    tb = strstr(out2, "\"train\":");
    CHECK(tb && test_json_raw(tb, "mrr", b, sizeof b) && strcmp(a, b) != 0);
    snprintf(cmd, sizeof cmd, "train --resume %s/cx.safetensors --readout diagonal --steps 1", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 && strstr(err, "--readout differs"));
    snprintf(cmd, sizeof cmd, "train --resume %s/cx.safetensors --steps 1 --json --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
}

/* --entity-dropout: the readout scores each example against E ⊙ mask / (1 − p),
   one mask on the whole table drawn from the dropout stream, while the query
   side (here C = E, no context) stays whole. The loss written out here from
   that definition; O(1) scores, a mean of 12 log-sum-exps: rounding leaves
   ~1e-15, and 1e-12 says the same function. Evaluation (no stream) drops
   nothing. */
TEST(entity_dropout_is_its_definition)
{
    kgl_dataset ds;
    kgl_config cfg;
    if (!CHECK(load_family(&ds, &cfg))) return;
    cfg.context = KGL_CONTEXT_NONE;
    cfg.n_entities = ds.n_entities;
    cfg.n_relations = ds.n_relations;
    kgl_model m;
    kgl_model_create(&m, &cfg);
    kgl_rng rng;
    kgl_rng_seed(&rng, 7);
    kgl_model_init(&m, &rng);
    kgl_batch batch = test_alternating_batch(&ds);
    int n = ds.n_entities, d = cfg.dim, nb = batch.n;
    const double p = 0.4;
    kgl_rng stream, copy;
    kgl_rng_seed(&stream, 11);
    copy = stream;
    kgl_regularisers reg = {.entity_dropout = p, .rng = &stream};
    kgl_tape t;
    kgl_tape_init(&t);
    kgl_forward f;
    double dropped = test_loss(&m, &t, &batch, &reg, &f);
    double whole = test_loss(&m, &t, &batch, NULL, &f);
    unsigned char *keep = malloc((size_t)n * d);
    kgl_rng_keep_mask(&copy, keep, (size_t)n * d, p);
    const double *E = m.entity_emb->data, *R = m.relation_emb->data;
    double want = 0, want_whole = 0, *s = malloc((size_t)n * sizeof *s), *w = malloc((size_t)n * sizeof *w);
    for (int b = 0; b < nb; b++) {
        const double *c = E + (size_t)batch.head[b] * d, *r = R + (size_t)batch.rel[b] * d;
        double top = -INFINITY, top_w = -INFINITY, z = 0, z_w = 0;
        for (int j = 0; j < n; j++) {
            s[j] = w[j] = 0;
            for (int k = 0; k < d; k++) {
                size_t at = (size_t)j * d + k;
                s[j] += c[k] * r[k] * (keep[at] ? E[at] / (1 - p) : 0);
                w[j] += c[k] * r[k] * E[at];
            }
            top = fmax(top, s[j]), top_w = fmax(top_w, w[j]);
        }
        for (int j = 0; j < n; j++) z += exp(s[j] - top), z_w += exp(w[j] - top_w);
        want += (top + log(z) - s[batch.tail[b]]) / nb;
        want_whole += (top_w + log(z_w) - w[batch.tail[b]]) / nb;
    }
    CHECK_NEAR(dropped, want, 1e-12);
    CHECK_NEAR(whole, want_whole, 1e-12);
    CHECK(fabs(dropped - whole) > 1e-3); /* the mask bites: the test can tell the two apart */
    free(s);
    free(w);
    free(keep);
    kgl_tape_free(&t);
    test_batch_free(&batch);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}
