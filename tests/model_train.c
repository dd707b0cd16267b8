/* model_train.c — kgl train, eval and grad: the academic world is learned by
 * every seed, runs are bit-reproducible, resume is exact, kgl grad agrees
 * with finite differences, checkpoints open in Python, and every malformed
 * input gets file:line and exit status 2. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 17], err[1 << 14];

static bool load_academic(kgl_dataset *ds)
{
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    return kgl_dataset_load(ds, &src, 1, e, sizeof e);
}

TEST(filtered_rank_ties_and_filters)
{
    double s[5] = {1.0, 3.0, 3.0, 2.0, 0.5};
    CHECK(kgl_filtered_rank(s, 5, 1, NULL, 0) == 1.5);       /* tied with entity 2: (1 + 2)/2 */
    int known[1] = {2};
    CHECK(kgl_filtered_rank(s, 5, 1, known, 1) == 1.0);      /* entity 2 is another known answer */
    CHECK(kgl_filtered_rank(s, 5, 3, NULL, 0) == 3.0);       /* two higher */
    int known2[2] = {1, 3};                                  /* the target itself may be in the list */
    CHECK(kgl_filtered_rank(s, 5, 3, known2, 2) == 2.0);
    double nan_s[3] = {NAN, 1, 2};
    CHECK(kgl_filtered_rank(nan_s, 3, 0, NULL, 0) == 3.0);   /* a NaN target ranks last */
    CHECK(kgl_filtered_rank(nan_s, 3, 2, NULL, 0) == 2.0);   /* a NaN rival counts as higher */
    double all_equal[4] = {0, 0, 0, 0};
    CHECK(kgl_filtered_rank(all_equal, 4, 0, NULL, 0) == 2.5); /* realistic: (1 + 4)/2 */
}

/* The specified evaluation on a model whose scores we can predict: with every
   parameter zero but E, each score is 0, so every rank is the tie rank. */
TEST(evaluate_counts_both_directions)
{
    kgl_dataset ds;
    CHECK(load_academic(&ds));
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = ds.n_entities;
    cfg.n_relations = ds.n_relations;
    kgl_model m;
    kgl_model_create(&m, &cfg); /* all zeros: every score is 0 */
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_model_context(&m, &t, &f);
    kgl_eval ev;
    kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
    kgl_evaluate(&m, f.context, &ds, ds.splits[0].triples, ds.splits[0].n, &ev);
    CHECK(ev.tail.n == 21 && ev.head.n == 21 && ev.both.n == 42);
    /* (alice, advises, dave): 13 candidates, erin filtered → 11 rivals all
       tied → rank 1 + 11/2 = 6.5 */
    int advises = kgl_dataset_relation_id(&ds, "advises");
    CHECK(ev.rel_tail[advises].n == 3);
    /* advises tails: alice→{dave, erin} filters one rival each: 6.5, 6.5; bob→carol: 7 */
    CHECK_NEAR(ev.rel_tail[advises].mrr, (1 / 6.5 + 1 / 6.5 + 1 / 7.0) / 3, 1e-15);
    CHECK(ev.rel_tail[advises].hits1 == 0 && ev.rel_tail[advises].hits10 == 1);
    /* Every direction and relation, from the triples alone: with all 13 scores
       tied, a query with k other known answers ranks 1 + (12 − k)/2 (the mean
       of optimistic 1 and pessimistic 13 − k); optimistic ranks are all 1. */
    const kgl_triple *tr = ds.splits[0].triples;
    int n = ds.splits[0].n;
    for (int reciprocal = 1; reciprocal >= 0; reciprocal--) {
        if (!reciprocal) { /* the head direction's other path: C[j] against R[r] ⊙ E[t] */
            kgl_tape_free(&t);
            kgl_model_free(&m);
            cfg.reciprocal = false;
            kgl_model_create(&m, &cfg);
            kgl_tape_init(&t);
            t.recording = false;
            kgl_model_context(&m, &t, &f);
            kgl_evaluate(&m, f.context, &ds, tr, n, &ev);
        }
        double tail_rr = 0, head_rr = 0, rel_head_rr[16] = {0};
        int rel_n[16] = {0};
        for (int k = 0; k < n; k++) {
            int other_tails = 0, other_heads = 0;
            for (int j = 0; j < n; j++) {
                if (j == k || tr[j].rel != tr[k].rel) continue;
                other_tails += tr[j].head == tr[k].head && tr[j].tail != tr[k].tail;
                other_heads += tr[j].tail == tr[k].tail && tr[j].head != tr[k].head;
            }
            tail_rr += 1 / (1 + (12 - other_tails) / 2.0);
            head_rr += 1 / (1 + (12 - other_heads) / 2.0);
            if (tr[k].rel < 16) rel_head_rr[tr[k].rel] += 1 / (1 + (12 - other_heads) / 2.0), rel_n[tr[k].rel]++;
        }
        CHECK_NEAR(ev.tail.mrr, tail_rr / n, 1e-15);
        CHECK_NEAR(ev.head.mrr, head_rr / n, 1e-15);
        CHECK_NEAR(ev.both.mrr, (tail_rr + head_rr) / (2 * n), 1e-15);
        for (int r = 0; r < ds.n_relations && r < 16; r++)
            CHECK_NEAR(ev.rel_head[r].mrr, rel_head_rr[r] / rel_n[r], 1e-15);
        CHECK(ev.head_optimistic.mrr == 1 && ev.tail_optimistic.mrr == 1 && ev.both_optimistic.n == 2 * n);
        CHECK(ev.head.hits1 == 0 && ev.head.hits10 == 1);
    }
    kgl_eval_free(&ev);
    kgl_tape_free(&t);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* The acceptance test: seeds 1–10, --until-fit --steps 1000, all fit. */
TEST(every_seed_fits_the_academic_world)
{
    int fits = 0;
    for (int seed = 1; seed <= 10; seed++) {
        char args[128];
        snprintf(args, sizeof args, "train --until-fit --steps 1000 --seed %d --json", seed);
        int st = run_kgl(T, args, out, sizeof out, err, sizeof err);
        CHECK(st == 0);
        long fit = -1;
        const char *p = strstr(out, "\"fit_step\":");
        if (CHECK(p != NULL)) fit = strtol(p + 11, NULL, 10);
        CHECK(fit > 0 && fit <= 1000);
        /* fit means Hits@1 = 1 in both directions on the training triples */
        CHECK(strstr(out, "\"train\":{\"tail\":{\"mrr\":1,\"hits1\":1,") != NULL);
        CHECK(strstr(out, "\"head\":{\"mrr\":1,\"hits1\":1,") != NULL);
        fits += fit > 0;
    }
    CHECK(fits == 10);
}

TEST(make_run_default_learns_every_relation)
{
    CHECK(run_kgl(T, "train --quiet", out, sizeof out, err, sizeof err) == 0);
    const char *rels[5] = {"about", "advises", "affiliated", "authored", "cites"};
    for (int r = 0; r < 5; r++) {
        /* relation row: n, then tail MRR H@1 H@3 H@10 MR, head MRR … MR, all perfect */
        char row[128];
        snprintf(row, sizeof row, "\n%-10s", rels[r]);
        const char *p = strstr(out, row);
        if (!CHECK(p != NULL)) continue;
        double v[11];
        CHECK(sscanf(p + 1 + strlen(rels[r]), "%lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3],
                     &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]) == 11);
        CHECK(v[2] == 1.0 && v[7] == 1.0);  /* tail and head Hits@1 */
        CHECK(v[5] == 1.0 && v[10] == 1.0); /* and their mean ranks */
    }
    CHECK(strstr(out, "fit: every training triple ranks first (tail and head) after step") != NULL);
    CHECK(strstr(out, "head specialisation spec[h][r]") != NULL);
}

TEST(same_seed_same_loss_bits)
{
    static char a[1 << 17], b[1 << 17];
    CHECK(run_kgl(T, "train --steps 40 --seed 7 --ffn 8 --json", out, sizeof out, err, sizeof err) == 0);
    snprintf(a, sizeof a, "%s", out);
    CHECK(run_kgl(T, "train --steps 40 --seed 7 --ffn 8 --json", out, sizeof out, err, sizeof err) == 0);
    snprintf(b, sizeof b, "%s", out);
    /* identical up to the wall-clock field */
    char *sa = strstr(a, "\"seconds\""), *sb = strstr(b, "\"seconds\"");
    CHECK(sa && sb && sa - a == sb - b && strncmp(a, b, (size_t)(sa - a)) == 0);
    CHECK(strstr(a, "\"final_loss\":") != NULL);
    CHECK(run_kgl(T, "train --steps 40 --seed 8 --ffn 8 --json", out, sizeof out, err, sizeof err) == 0);
    CHECK(strncmp(out, a, (size_t)(sa - a)) != 0); /* another seed, another run */
}

/* The CSV log: header, one row per logged step, 17 significant digits. */
TEST(train_log_csv)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --steps 25 --log-every 10 --log %s/log.csv --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char path[600];
    snprintf(path, sizeof path, "%s/log.csv", T->tmp);
    FILE *f = fopen(path, "r");
    if (!CHECK(f != NULL)) return;
    char line[4096];
    CHECK(fgets(line, sizeof line, f) && strncmp(line, "step,loss,main_loss,aux_loss,lr,seconds", 39) == 0);
    long steps[4];
    int rows = 0;
    while (fgets(line, sizeof line, f) && rows < 4) {
        double loss, main_loss;
        CHECK(sscanf(line, "%ld,%lf,%lf,", &steps[rows], &loss, &main_loss) == 3);
        CHECK(loss == main_loss); /* no supervision: loss = main */
        CHECK(strstr(line, ",,") != NULL); /* aux_loss empty: NaN in pandas */
        rows++;
    }
    fclose(f);
    CHECK(rows == 3 && steps[0] == 10 && steps[1] == 20 && steps[2] == 25);
}

/* A checkpoint resumed with another optimiser: the new one starts with no
   state and its own constants, and says so. Adam's first moment read as
   Adagrad's sum of squares would be negative in places: √ of it is NaN, the
   run would stop, and the saved sums below would not all be g² sums. */
TEST(resume_with_another_optimizer_starts_afresh)
{
    char cmd[2048], a[400], b[400];
    snprintf(a, sizeof a, "%s/adam.st", T->tmp);
    snprintf(b, sizeof b, "%s/adagrad.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --steps 20 --quiet --save %s", a);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "train --resume %s --optimizer adagrad --lr 0.1 --steps 20 --quiet --save %s", a, b);
    int rc = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 0)) printf("    rc %d: %s\n", rc, err);
    CHECK(strstr(err, "was trained with another optimiser; this one starts with no state") != NULL);
    kgl_st_file f;
    char e[512];
    if (!CHECK(kgl_st_read(b, &f, e, sizeof e))) return;
    const char *opt = kgl_st_meta(&f, "optimizer"), *eps = kgl_st_meta(&f, "eps");
    CHECK(opt && strcmp(opt, "adagrad") == 0);
    CHECK(eps && strtod(eps, NULL) == KGL_ADAGRAD_EPS); /* Adagrad's own, not the checkpoint's 1e-8 */
    CHECK(kgl_st_find(&f, "adam.m.attn.wq") == NULL);
    const kgl_st_tensor *sum = kgl_st_find(&f, "adagrad.sum.attn.wq");
    if (CHECK(sum != NULL)) {
        size_t n = (size_t)(sum->shape[0] * sum->shape[1]); /* shape[1] is 1 for a vector */
        double lowest = INFINITY, highest = 0;
        for (size_t i = 0; i < n; i++) {
            lowest = fmin(lowest, sum->data[i]);
            highest = fmax(highest, sum->data[i]);
        }
        CHECK(lowest >= 0 && highest > 0); /* 20 steps of squared gradients, nothing carried from Adam */
    }
    kgl_st_free(&f);
    /* and the same checkpoint resumed with its own optimiser says nothing */
    snprintf(cmd, sizeof cmd, "train --resume %s --steps 2 --quiet", b);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "another optimiser") == NULL);
}

/* 50 steps, save, resume for 50 more = 100 steps in one run, bit for bit;
   also from a --steps 0 checkpoint, and with shuffled mini-batches (the
   checkpoint carries the shuffle state and the position in the epoch). */
TEST(resume_is_exact)
{
    static const char *const variants[] = {"", "--batch 10", "--ffn 8 --supervise-heads advises=0,authored=1",
                                           "--optimizer sgd --momentum 0.9 --lr 0.1 --batch 16",
                                           "--optimizer adagrad --lr 0.1 --batch 16 --weight-decay 0.1",
                                           /* the dropout stream and the regularisers are in the checkpoint */
                                           "--batch 10 --ffn 8 --dropout 0.2 --attn-dropout 0.1 --hidden-dropout 0.2 --label-smoothing 0.1",
                                           "--dropout 0.1 --lr-schedule cosine --decay-steps 100 --warmup 10",
                                           /* data/bench/umls.args at this scale: the remedies' parameters resume too */
                                           ("--qk-norm --temperature learn --batch 10 --lr-schedule cosine --decay-steps 100 "
                                            "--weight-decay 0.4 --label-smoothing 0.2 --hidden-dropout 0.1"),
                                           /* the graph context's neighbourhoods are drawn per step, so they resume too */
                                           "--context graph --neighbours 3 --batch 10 --dropout 0.1 --qk-norm --ffn 8",
                                           /* and their edge dropout's rate */
                                           "--context graph --neighbours 3 --batch 10 --edge-dropout 0.3 --source-dropout 0.2",
                                           "--context none --batch 10 --hidden-dropout 0.2",
                                           "--batch 10 --entity-dropout 0.3 --hidden-dropout 0.1"};
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        char cmd[1024], straight[64], resumed[64];
        snprintf(cmd, sizeof cmd, "train %s --steps 100 --json", variants[v]);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        CHECK(test_json_raw(out, "final_loss", straight, sizeof straight));
        for (int first = 0; first <= 50; first += 50) {
            snprintf(cmd, sizeof cmd, "train %s --steps %d --save %s/r.st --quiet", variants[v], first, T->tmp);
            CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
            snprintf(cmd, sizeof cmd, "train --resume %s/r.st --steps %d --json", T->tmp, 100 - first);
            CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
            CHECK(strstr(out, "{\"steps\":100,") == out);
            CHECK(test_json_raw(out, "final_loss", resumed, sizeof resumed));
            if (!CHECK(strcmp(straight, resumed) == 0))
                printf("    variant '%s', resumed after %d: %s vs %s\n", variants[v], first, resumed, straight);
        }
    }
    char cmd[1024];
    /* a schedule that has ended is said, not silently run at its floor */
    snprintf(cmd, sizeof cmd, "train --lr-schedule cosine --steps 5 --save %s/c.st --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "train --resume %s/c.st --steps 1 --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "decay ended at step 5;") != NULL);
    snprintf(cmd, sizeof cmd, "train --resume %s/c.st --steps 1 --decay-steps 10 --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "decay ended") == NULL);
    /* a model option that contradicts the checkpoint is refused */
    snprintf(cmd, sizeof cmd, "train --resume %s/r.st --dim 16", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--dim differs from the checkpoint") != NULL);
}

/* Parses "advises=0,authored=1" the way a reader of the checkpoint would. */
static void head_map(const kgl_dataset *ds, const char *spec, int *head_of)
{
    for (int r = 0; r < ds->n_relations; r++) head_of[r] = -1;
    char copy[512];
    snprintf(copy, sizeof copy, "%s", spec);
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        *eq = 0;
        head_of[kgl_dataset_relation_id(ds, tok)] = atoi(eq + 1);
    }
}

typedef struct full_loss_ctx {
    kgl_model *m;
    kgl_tape *t;
    kgl_batch *b;
    kgl_supervision *sup;
} full_loss_ctx;

static double full_loss(void *vctx)
{
    full_loss_ctx *c = vctx;
    kgl_tape_reset(c->t);
    c->t->recording = false;
    kgl_forward f;
    kgl_model_loss(c->m, c->t, c->b, c->sup, &f);
    return f.loss->data[0];
}

/* kgl grad's output against central differences of the full loss at a saved
   checkpoint, every element of every parameter (FFN and head supervision
   on, so every op of the layer is in the loss). */
TEST(grad_command_matches_finite_differences)
{
    char cmd[2048], ck[600], gr[600];
    snprintf(ck, sizeof ck, "%s/g.st", T->tmp);
    snprintf(gr, sizeof gr, "%s/grad.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --steps 30 --ffn 8 --supervise-heads advises=0,authored=1 --save %s --quiet", ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "grad --checkpoint %s --out %s --json", ck, gr);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    double printed = NAN;
    CHECK(sscanf(out, "{\"ensemble\":1,\"member\":0,\"loss\":%lf", &printed) == 1);

    kgl_dataset ds;
    CHECK(load_academic(&ds));
    kgl_checkpoint c;
    char e[1024];
    if (!CHECK(kgl_checkpoint_open(ck, &ds, &c, e, sizeof e))) return;
    /* the loaded state says 30 updates were applied, and its optimiser agrees
       (kgl_train_state: optim's step = step), as a C user resuming by hand reads it */
    CHECK(c.st.step == 30 && c.st.optim.step == 30);
    kgl_model m;
    kgl_model_create(&m, &c.cfg);
    kgl_checkpoint_apply(&c, &m);
    int head_of[16];
    head_map(&ds, c.st.supervise, head_of);
    kgl_supervision sup = {head_of, c.st.aux_weight};
    const kgl_split *sp = &ds.splits[0];
    int n = 2 * sp->n, h[64], r[64], t[64];
    for (int k = 0; k < sp->n; k++) {
        h[k] = sp->triples[k].head, r[k] = sp->triples[k].rel, t[k] = sp->triples[k].tail;
        h[sp->n + k] = t[k], r[sp->n + k] = ds.n_relations + r[k], t[sp->n + k] = h[k];
    }
    kgl_batch b = {n, h, r, t, NULL};
    kgl_tape tape;
    kgl_tape_init(&tape);
    full_loss_ctx ctx = {&m, &tape, &b, &sup};
    CHECK(full_loss(&ctx) == printed); /* the same computation, the same bits (17 digits round-trip) */

    kgl_st_file g;
    if (!CHECK(kgl_st_read(gr, &g, e, sizeof e))) return;
    CHECK(strcmp(kgl_st_meta(&g, "format"), "kgl-grad/1") == 0);
    CHECK(g.n == m.params.n);
    long checked = 0;
    for (int k = 0; k < m.params.n; k++) {
        kgl_param *p = &m.params.p[k];
        const kgl_st_tensor *gt = kgl_st_find(&g, p->name);
        if (!CHECK(gt != NULL)) continue;
        CHECK((size_t)(gt->shape[0] * gt->shape[1]) == kgl_numel(&p->t));
        kgl_fd_stats st = {0};
        st.first_bad = -1;
        kgl_fd_compare(p->t.data, gt->data, kgl_numel(&p->t), 1e-5, 1e-6, full_loss, &ctx, &st);
        if (st.failures) printf("    %s: %s\n", p->name, "finite differences disagree");
        CHECK(st.failures == 0 && st.nonzero);
        CHECK(st.max_rel_err <= 1e-6);
        checked += st.checks;
    }
    CHECK(checked == 616); /* every element of the 14 parameters (d 8, FFN 8) */
    kgl_st_free(&g);
    kgl_tape_free(&tape);
    kgl_model_free(&m);
    kgl_checkpoint_close(&c);
    kgl_dataset_free(&ds);
}

/* A checkpoint opens with 20 lines of stdlib Python (json + struct), and holds
   what the README specifies with the right shapes and values. */
TEST(checkpoint_opens_in_python)
{
    char cmd[1024], ck[600];
    snprintf(ck, sizeof ck, "%s/py.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --steps 20 --ffn 4 --save %s --quiet", ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "command -v python3 >/dev/null || exit 77; python3 tests/read_safetensors.py %s", ck);
    int st = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    if (st == 77) {
        test_skip(T, "python3 not installed");
        return;
    }
    CHECK(st == 0);
    static const char *const shapes[] = {"entity_emb [13, 8]", "relation_emb [10, 8]", "attn.wq [8, 8]",
                                         "attn.wo [8, 8]",     "ln1.gamma [8]",        "ln1.beta [8]",
                                         "ffn.w1 [8, 4]",      "ffn.b1 [4]",           "ffn.w2 [4, 8]",
                                         "ln2.beta [8]",       "adam.m.entity_emb [13, 8]", "adam.v.ffn.w2 [4, 8]"};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        char line[128];
        snprintf(line, sizeof line, "%s%s [", k ? "\n" : "", shapes[k]);
        if (!CHECK(strstr(out, line) != NULL)) printf("    missing: %s\n", shapes[k]);
    }
    /* values: Python's repr of entity_emb[0][0] equals our double, exactly */
    kgl_st_file f;
    char e[512];
    if (!CHECK(kgl_st_read(ck, &f, e, sizeof e))) return;
    const char *p = strstr(out, "entity_emb [13, 8] [");
    double first = NAN;
    if (CHECK(p != NULL)) first = strtod(p + 20, NULL);
    CHECK(first == kgl_st_find(&f, "entity_emb")->data[0]);
    CHECK(strstr(out, "\"entities\": \"alice\\nbob\\ncarol\\ncmu\\ndave\\nerin\\nlogic\\nmit\\nml\\nnesy\\np1\\np2\\np3\"") !=
          NULL);
    CHECK(strstr(out, "\"format\": \"kgl/1\"") && strstr(out, "\"step\": \"20\"") && strstr(out, "\"ffn\": \"4\""));
    CHECK(strstr(out, "\"relations\": \"about\\nadvises\\naffiliated\\nauthored\\ncites\"") != NULL);
    kgl_st_free(&f);
}

/* Every malformed input: file:line, what is wrong, exit status 2. */
TEST(malformed_triples_exit_2_with_file_and_line)
{
    static char longline[KGL_LINE_MAX + 100];
    memset(longline, 'x', sizeof longline - 1);
    longline[sizeof longline - 1] = 0;
    struct {
        const char *text;
        size_t len;
        const char *message;
    } cases[] = {
        {"a\tr\tb\nc\td\n", 0, "bad.tsv:2: expected 3 tab-separated fields (head, relation, tail), found 2"},
        {"a\tr\tb\tc\n", 0, "bad.tsv:1: expected 3 tab-separated fields (head, relation, tail), found 4"},
        {"a\t\tb\n", 0, "bad.tsv:1: empty relation field"},
        {"\tr\tb\n", 0, "bad.tsv:1: empty head field"},
        {"a\tr\tb\n   \n", 0, "bad.tsv:2: expected 3 tab-separated fields"},
        {"a\tr\tb\nx\ty\0z\tw\n", 13, "bad.tsv:2: line contains a NUL byte"},
        {"a\tr\tb\n\xff\tr\tb\n", 0, "bad.tsv:2: invalid UTF-8"},
        {longline, 0, "bad.tsv:1: line is 65635 bytes long; the limit is 65536"},
        {"", 0, "bad.tsv: no triples"},
        {"# only a comment\n\n", 0, "bad.tsv: no triples"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len = cases[k].len ? cases[k].len : strlen(cases[k].text);
        write_tmp(T, 0, "bad.tsv", cases[k].text, len);
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "train --train %s/bad.tsv --steps 1", T->tmp);
        int st = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
        CHECK(st == 2);
        if (!CHECK(strstr(err, cases[k].message) != NULL)) printf("    case %zu: got '%s'\n", k, err);
        CHECK(strncmp(err, T->tmp, strlen(T->tmp)) == 0); /* the message starts with the path */
    }
    /* an unreadable path, and an error in the second file names that file */
    CHECK(run_kgl(T, "train --train /nonexistent/x.tsv", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "/nonexistent/x.tsv: cannot open: No such file or directory") != NULL);
    write_tmp(T, 1, "good.tsv", "a\tr\tb\n", 6);
    write_tmp(T, 2, "bad2.tsv", "a\tr\n", 4);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "eval --checkpoint x --train %s/good.tsv --valid %s/bad2.tsv", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "bad2.tsv:1: expected 3") != NULL);
}

TEST(utf8_names_duplicates_and_spaces_train)
{
    const char text[] = "# Korean and spaced names\n"
                        "\xea\xb9\x80\xec\xb2\xa0\xec\x88\x98\tadvises\tJane Doe\n" /* 김철수 */
                        "Jane Doe\tauthored\tpaper one\n"
                        "\xea\xb9\x80\xec\xb2\xa0\xec\x88\x98\tadvises\tJane Doe\r\n" /* the same triple again */
                        "paper one\tabout\tlogic\n";
    write_tmp(T, 0, "k.tsv", text, sizeof text - 1);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --train %s/k.tsv --until-fit --steps 500 --json", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "k.tsv: 1 duplicate triple counted once (first at line 4)") != NULL);
    CHECK(strstr(out, "\"train\":{\"tail\":{\"mrr\":1,\"hits1\":1,\"hits3\":1,\"hits10\":1,\"mr\":1,\"n\":3}") != NULL);
}

TEST(train_option_errors_exit_2)
{
    struct {
        const char *args, *message;
    } cases[] = {
        {"train --heads 3", "--heads must divide --dim"},
        {"train --dim 0", "--dim expects a whole number from 1"},
        {"train --scale banana", "--scale expects sqrt, none or a positive number"},
        {"train --relations advises,frobs", "--relations: no relation 'frobs' in the triples"},
        {"train --supervise-heads advises=2", "--supervise-heads: head '2' for advises must be a number from 0 to 1"},
        {"train --supervise-heads advises", "'advises' is not RELATION=HEAD"},
        {"train --supervise-heads nope=0", "no relation 'nope'"},
        {"train --optimizer rmsprop", "--optimizer expects adam, sgd or adagrad"},
        {"train --momentum 0.9", "--momentum applies to --optimizer sgd"},
        {"train --resume /nonexistent.st", "/nonexistent.st"},
        {"eval", "--checkpoint is required"},
        {"grad --checkpoint x", "--out is required"},
        {"train --steps -1", "--steps expects a whole number"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        CHECK(run_kgl(T, cases[k].args, out, sizeof out, err, sizeof err) == 2);
        if (!CHECK(strstr(err, cases[k].message) != NULL)) printf("    %s: got '%s'\n", cases[k].args, err);
    }
    CHECK(run_kgl(T, "train --help", out, sizeof out, err, sizeof err) == 0);
    static const char *const opts[] = {"--train", "--valid", "--test", "--relations", "--dim", "--heads", "--ffn",
                                       "--scale", "--init-scale", "--steps", "--lr", "--batch", "--weight-decay",
                                       "--seed", "--no-reciprocal", "--supervise-heads", "--aux-weight", "--until-fit",
                                       "--log", "--log-every", "--save", "--resume", "--json", "--quiet",
                                       "--optimizer", "--momentum"};
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) CHECK(strstr(out, opts[k]) != NULL);
}

TEST(checkpoint_validation_messages)
{
    char cmd[1024], ck[600];
    snprintf(ck, sizeof ck, "%s/v.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --steps 0 --save %s --quiet", ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    /* tied to its data: another entity set is refused with the first difference */
    write_tmp(T, 0, "other.tsv", "alice\tadvises\tzed\n", 18);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s --train %s/other.tsv", ck, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "entity 1 is 'bob' in the checkpoint but 'zed' in the triples") != NULL);
    /* not a safetensors file */
    const char *junk = write_tmp(T, 1, "junk.st", "hello, world", 12);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s", junk);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "junk.st: ") != NULL);
    /* a safetensors file without kgl's metadata */
    kgl_st_entry e = {"x", 1, {2, 1}, (const double[]){1, 2}};
    char msg[512], path[600];
    snprintf(path, sizeof path, "%s/plain.st", T->tmp);
    CHECK(kgl_st_write(path, &e, 1, NULL, 0, msg, sizeof msg));
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "metadata has no 'format'") != NULL);
    /* eval of the saved model agrees with train's own report of the same model */
    snprintf(cmd, sizeof cmd, "train --steps 60 --save %s --json", ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char *train_metrics = strstr(out, "\"metrics\":{");
    char *spec = strstr(out, ",\"spec\"");
    if (!CHECK(train_metrics && spec)) return;
    *spec = 0;
    char expected[8192];
    snprintf(expected, sizeof expected, "%s", train_metrics);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s --json", ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "{\"step\":60,") == out);
    CHECK(strstr(out, expected) != NULL);
}

TEST(non_finite_loss_stops_training)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --scale 1e300 --init-scale 1e6 --steps 5 --save %s/nan.st", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 1);
    CHECK(strstr(err, "kgl train: step 1: the loss is NaN; training stopped before this step's update") != NULL);
    snprintf(cmd, sizeof cmd, "test -e %s/nan.st", T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) != 0); /* no checkpoint of a failed run */
}

TEST(no_allocation_inside_a_training_step)
{
    kgl_dataset ds;
    CHECK(load_academic(&ds));
    /* the specified layer with an FFN; then the extensions that add ops to
       the step: the complex readout, N3, the hidden dropout's gather and the entity
       dropout's copy of E */
    for (int variant = 0; variant < 3; variant++) {
        kgl_config cfg;
        kgl_config_defaults(&cfg);
        cfg.ffn = 8;
        if (variant == 1) cfg.readout = KGL_READOUT_COMPLEX;
        /* the neighbourhood context: sampled segments every step, in buffers
           sized once (its evaluation builds each state block on a tape of its
           own, which allocates: steps alone are counted here) */
        bool graph = variant == 2;
        if (graph) cfg.context = KGL_CONTEXT_GRAPH, cfg.neighbours = 3, cfg.qk_norm = true;
        kgl_train_config tc = {10, 3, {0}, NULL, 1, false, false};
        kgl_optim_defaults(&tc.optim);
        kgl_trainer tr;
        kgl_trainer_init(&tr, &ds, ds.splits[0].triples, ds.splits[0].n, &cfg, &tc);
        kgl_regularisers reg = {.hidden_dropout = 0.1, .label_smoothing = 0.1, .n3 = 0.01, .entity_dropout = 0.2};
        kgl_regularisers graph_reg = {.dropout = 0.1, .attn_dropout = 0.1, .hidden_dropout = 0.1};
        if (variant == 1) kgl_trainer_set_regularisers(&tr, &reg);
        if (graph) kgl_trainer_set_regularisers(&tr, &graph_reg);
        kgl_eval ev;
        kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
        for (int s = 0; s < 6; s++) { /* one epoch sizes the arenas */
            kgl_trainer_step(&tr);
            if (!graph) kgl_trainer_fits(&tr, &ev);
        }
        long before = test_alloc_count();
        for (int s = 0; s < 40; s++) {
            kgl_trainer_step(&tr); /* shuffled mini-batches: epochs begin inside this loop */
            if (!graph) kgl_trainer_fits(&tr, &ev);
        }
        CHECK(test_alloc_count() == before);
        kgl_eval_free(&ev);
        kgl_trainer_free(&tr);
    }
    kgl_dataset_free(&ds);
}

/* Hits@1 counts rank 1 only: a target tied with one rival ranks 1.5 (the mean
 * of 1 and 2), which is not a hit, though its optimistic rank 1 is. Two
 * entities, one triple, a model of zeros: both directions tie. */
TEST(tie_rank_one_and_a_half_is_not_a_hit)
{
    static const char text[] = "a\tr\tb\n";
    kgl_source src = {"two.tsv", text, sizeof text - 1};
    kgl_dataset ds;
    char e[512];
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e))) return;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = ds.n_entities;
    cfg.n_relations = ds.n_relations;
    kgl_model m;
    kgl_model_create(&m, &cfg);
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_model_context(&m, &t, &f);
    kgl_eval ev;
    kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
    kgl_evaluate(&m, f.context, &ds, ds.splits[0].triples, ds.splits[0].n, &ev);
    CHECK(ev.both.n == 2);
    CHECK_NEAR(ev.both.mrr, 1 / 1.5, 1e-15);
    CHECK(ev.tail.hits1 == 0 && ev.head.hits1 == 0 && ev.both.hits1 == 0);
    CHECK(ev.tail.hits3 == 1 && ev.head.hits10 == 1);
    CHECK(ev.both_optimistic.hits1 == 1 && ev.both_optimistic.mrr == 1);
    CHECK(ev.both.mr == 1.5 && ev.tail.mr == 1.5 && ev.both_optimistic.mr == 1); /* the mean rank */
    kgl_eval_free(&ev);
    kgl_tape_free(&t);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* A checkpoint that cannot be written fails the run (exit status not 0) and
 * says which file. */
TEST(unwritable_checkpoint_fails_the_run)
{
    static char out[1 << 14], err[1 << 14];
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --steps 2 --quiet --save %s/no/such/folder/x.st", T->tmp);
    int st = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    CHECK(st != 0 && st != -1);
    CHECK(strstr(err, "no/such/folder/x.st") != NULL);
}

/* Blanks `"key":"value"` and one comma beside it in a JSON object text (the
 * length stays, so a safetensors header keeps its size). */
static bool blank_member(char *json, size_t len, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    char *p = strstr(json, pat);
    if (!p || (size_t)(p - json) >= len) return false;
    char *q = strchr(p + strlen(pat), '"');
    if (!q) return false;
    char *after = q + 1;
    while (*after == ' ') after++;
    if (*after == ',') {
        q = after;
    } else {
        while (p > json && p[-1] != ',') p--;
        if (p > json) p--;
    }
    memset(p, ' ', (size_t)(q - p) + 1);
    return true;
}

/* A checkpoint from before the shuffle state was saved (no shuffle_state, no
 * batch_cursor) resumes at the start of an epoch with the shuffle stream
 * seeded from seed ^ "SHUFFLE" (0x53485546464c45), as kgl_trainer_init seeds it. */
TEST(checkpoint_without_shuffle_state_seeds_the_stream)
{
    static char out[1 << 14], err[1 << 14], bytes[1 << 20];
    char cmd[1024], path[600], old[600];
    snprintf(path, sizeof path, "%s/new.st", T->tmp);
    snprintf(old, sizeof old, "%s/old.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --steps 3 --seed 5 --batch 8 --quiet --save %s", path);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    FILE *f = fopen(path, "rb");
    if (!CHECK(f != NULL)) return;
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | (unsigned char)bytes[i];
    if (!CHECK(n > 8 && hlen < n - 8)) return;
    char saved = bytes[8 + hlen];
    bytes[8 + hlen] = 0;
    CHECK(blank_member(bytes + 8, hlen, "shuffle_state"));
    CHECK(blank_member(bytes + 8, hlen, "batch_cursor"));
    bytes[8 + hlen] = saved;
    f = fopen(old, "wb");
    if (!CHECK(f != NULL)) return;
    CHECK(fwrite(bytes, 1, n, f) == n);
    fclose(f);
    kgl_dataset ds;
    CHECK(load_academic(&ds));
    kgl_checkpoint ck;
    char e[512];
    if (CHECK(kgl_checkpoint_open(old, &ds, &ck, e, sizeof e))) {
        kgl_rng want;
        kgl_rng_seed(&want, 5 ^ 0x53485546464c45ULL);
        CHECK(memcmp(ck.st.epoch_rng.s, want.s, sizeof want.s) == 0);
        CHECK(ck.st.cursor == 0 && ck.st.step == 3);
        kgl_checkpoint_close(&ck);
    } else {
        printf("    %s\n", e);
    }
    kgl_dataset_free(&ds);
}

/* kgl_memory_needed, the estimate kgl train checks before it allocates:
   every model keeps its parameters (and ranking scratch) until the report,
   but only the models training at once (jobs) hold a step's tape, and with
   selection on valid a snapshot. So each job more adds the same amount, the
   same whether 2 or 4 members share it, and selecting adds a snapshot per
   job; the parameters and the attention are counted per member and per
   job. The address space holds at least the resident set, and float32's
   values take half the bytes. */
TEST(memory_needed_counts_a_step_for_each_job_and_the_parameters_for_each_member)
{
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = 500, cfg.n_relations = 10, cfg.dim = 32;
    kgl_memory_run r = {.cfg = cfg, .tc = {.batch = 256}, .n_train = 5000, .ranked = 500, .triples = 6000,
                        .members = 4, .jobs = 1, .threads = 2};
    kgl_memory_plan p;
    kgl_trainer_plan(&r.cfg, &r.tc, &r.reg, r.n_train, r.ranked, sizeof(kgl_real), &p);
    kgl_memory_need one_job, four_jobs, two_one, two_two, selecting, f32;
    kgl_memory_needed(&r, sizeof(kgl_real), &one_job);
    r.jobs = 4;
    kgl_memory_needed(&r, sizeof(kgl_real), &four_jobs);
    r.selecting = true;
    kgl_memory_needed(&r, sizeof(kgl_real), &selecting);
    r.selecting = false, r.members = 2, r.jobs = 1;
    kgl_memory_needed(&r, sizeof(kgl_real), &two_one);
    r.jobs = 2;
    kgl_memory_needed(&r, sizeof(kgl_real), &two_two);
    kgl_memory_needed(&r, 4, &f32);
    double per_job = two_two.resident - two_one.resident;
    /* differences of sums of the same terms: equal to rounding (1e-9 of the whole) */
    CHECK(per_job > 0.5 * p.step);
    CHECK_NEAR(four_jobs.resident - one_job.resident, 3 * per_job, 1e-9 * four_jobs.resident);
    /* 1.1: the slack the estimate gives malloc (MALLOC_SLACK, src/model/train.c) */
    CHECK_NEAR(selecting.resident - four_jobs.resident, 4 * 1.1 * p.snapshot, 1e-9 * selecting.resident);
    CHECK(one_job.parameters == 4 * p.parameters && two_one.parameters == 2 * p.parameters);
    CHECK(one_job.attention == p.attention && four_jobs.attention == 4 * p.attention);
    CHECK(four_jobs.address_space > four_jobs.resident && one_job.address_space > one_job.resident);
    if (sizeof(kgl_real) == 8) CHECK(f32.resident < two_two.resident);
}

/* --supervise-heads REL=HEAD,...: head_of[r] for the named relations, -1
   for the others, and each mistake's message. */
TEST(supervision_parse_and_its_messages)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    int head_of[5];
    char e[4096];
    if (CHECK(kgl_supervision_parse("advises=0,cites=3", &ds, 4, head_of, e, sizeof e)))
        CHECK(head_of[0] == -1 && head_of[1] == 0 && head_of[2] == -1 && head_of[3] == -1 && head_of[4] == 3);
    CHECK(!kgl_supervision_parse("advises", &ds, 4, head_of, e, sizeof e));
    CHECK(strcmp(e, "--supervise-heads: 'advises' is not RELATION=HEAD") == 0);
    CHECK(!kgl_supervision_parse("advises=4", &ds, 4, head_of, e, sizeof e));
    CHECK(strcmp(e, "--supervise-heads: head '4' for advises must be a number from 0 to 3") == 0);
    CHECK(!kgl_supervision_parse("advises=x", &ds, 4, head_of, e, sizeof e) && strstr(e, "head 'x' for advises"));
    CHECK(!kgl_supervision_parse("advises=-1", &ds, 4, head_of, e, sizeof e) && strstr(e, "head '-1' for advises"));
    CHECK(!kgl_supervision_parse("cites=1,cites=2", &ds, 4, head_of, e, sizeof e));
    CHECK(strcmp(e, "--supervise-heads: relation 'cites' is assigned twice") == 0);
    CHECK(!kgl_supervision_parse("advices=1", &ds, 4, head_of, e, sizeof e));
    CHECK(strstr(e, "--supervise-heads: no relation 'advices' in the triples; did you mean 'advises'?") == e);
    CHECK(!kgl_supervision_parse(",", &ds, 4, head_of, e, sizeof e));
    CHECK(strcmp(e, "--supervise-heads: the list is empty") == 0);
    kgl_dataset_free(&ds);
}

/* The last batch of an epoch under an eighth of the others, and the batch
   size that makes every batch of the epoch equal. */
TEST(trainer_short_last_batch_rule)
{
    static kgl_trainer tr; /* the rule reads the examples and the batch size only */
    long last = -1, equal = -1, batches = -1;
    tr.n_examples = 10432, tr.cfg.batch = 5200; /* UMLS: 10432 = 2 x 5200 + 32 */
    CHECK(kgl_trainer_short_last_batch(&tr, &last, &equal, &batches));
    CHECK(last == 32 && batches == 3 && equal == 3478);
    tr.cfg.batch = 1024; /* a last batch of 192: above an eighth (128) */
    CHECK(!kgl_trainer_short_last_batch(&tr, &last, &equal, &batches));
    tr.n_examples = 42, tr.cfg.batch = 40; /* the academic world: 2 of 40 */
    CHECK(kgl_trainer_short_last_batch(&tr, &last, &equal, &batches) && last == 2 && batches == 2 && equal == 21);
    tr.n_examples = 40 + 5, tr.cfg.batch = 40; /* 5 is exactly an eighth: no warning */
    CHECK(!kgl_trainer_short_last_batch(&tr, &last, &equal, &batches));
    tr.n_examples = 40 + 4;
    CHECK(kgl_trainer_short_last_batch(&tr, &last, &equal, &batches) && last == 4);
    tr.n_examples = 80; /* equal batches */
    CHECK(!kgl_trainer_short_last_batch(&tr, &last, &equal, &batches));
    tr.n_examples = 30; /* one batch: the whole epoch */
    CHECK(!kgl_trainer_short_last_batch(&tr, &last, &equal, &batches));
}
