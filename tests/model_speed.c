/* model_speed.c — what the speed work must not change: the same bits for
 * any number of threads, the fused attention equal to its composition, the
 * evaluation's ranks equal to a plain loop's, and no allocation in a step. */
#include <stdlib.h>

#include "test.h"

/* A random graph big enough that every kernel splits its work: 150
   entities (three attention blocks of 64 rows), 7 relations, 900 triples
   (1800 examples: a batch of 512 is several row blocks of the readout). */
static bool random_graph(kgl_dataset *ds, uint64_t seed, int n_ent, int n_rel, int n_tri)
{
    size_t cap = (size_t)n_tri * 32 + 1;
    char *text = malloc(cap);
    size_t len = 0;
    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    for (int k = 0; k < n_tri; k++)
        len += (size_t)snprintf(text + len, cap - len, "e%u\tr%u\te%u\n", kgl_rng_below(&rng, (uint32_t)n_ent),
                                kgl_rng_below(&rng, (uint32_t)n_rel), kgl_rng_below(&rng, (uint32_t)n_ent));
    kgl_source src = {"random.tsv", text, len};
    char err[256];
    bool ok = kgl_dataset_load(ds, &src, 1, err, sizeof err);
    if (!ok) printf("    %s\n", err);
    free(text);
    return ok;
}

typedef struct variant {
    const char *name;
    int dim, heads, ffn;
    bool qk_norm, learn_temperature, supervise, composed;
    kgl_context_kind context;
} variant;

static const variant variants[] = {
    {"plain", 32, 4, 0, false, false, false, false, KGL_CONTEXT_FULL},
    /* a hidden layer of 150 x 1536 elements: GELU and the bias add split into tasks too */
    {"ffn", 32, 2, 1536, false, false, false, false, KGL_CONTEXT_FULL},
    {"qk-norm + learned temperature", 32, 4, 0, true, true, false, false, KGL_CONTEXT_FULL},
    {"supervised heads (composed attention)", 32, 4, 0, false, false, true, false, KGL_CONTEXT_FULL},
    {"composed attention", 16, 2, 16, false, false, false, true, KGL_CONTEXT_FULL},
    /* the neighbourhood context: sampled segments, the projections of a batch's distinct entities */
    {"graph context", 32, 4, 64, true, true, false, false, KGL_CONTEXT_GRAPH},
};

/* Trains `steps` steps of a variant on `threads` threads; returns the
   parameters and Adam moments (caller frees). */
static double *train_bits(const kgl_dataset *ds, const variant *v, int threads, int steps, size_t *n_out)
{
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.dim = v->dim, cfg.heads = v->heads, cfg.ffn = v->ffn;
    cfg.qk_norm = v->qk_norm, cfg.learn_temperature = v->learn_temperature;
    cfg.context = v->context;
    int head_of[16];
    for (int r = 0; r < 16; r++) head_of[r] = r < 2 ? r : -1;
    kgl_train_config tc = {512, 7, {0}, v->supervise ? head_of : NULL, 1, false, false};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer tr;
    kgl_trainer_init(&tr, ds, ds->splits[0].triples, ds->splits[0].n, &cfg, &tc);
    tr.model.composed_attention = v->composed;
    kgl_pool *pool = kgl_pool_create(threads);
    kgl_trainer_set_pool(&tr, pool);
    for (int s = 0; s < steps; s++) kgl_trainer_step(&tr);
    size_t n = 4 * tr.model.params.total;
    double *out = malloc(n * sizeof *out);
    memcpy(out, tr.model.params.block, n * sizeof *out);
    *n_out = n;
    kgl_trainer_free(&tr);
    kgl_pool_free(pool);
    return out;
}

/* Every kernel splits work into tasks that write their own outputs, each
   computed by the same operations wherever it runs; so 1, 2 and 3 threads
   give the same parameters, gradients and moments, bit for bit. */
TEST(training_is_the_same_bits_for_any_thread_count)
{
    kgl_dataset ds;
    CHECK(random_graph(&ds, 5, 150, 7, 900));
    for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
        size_t n1, n2, n3;
        double *one = train_bits(&ds, &variants[k], 1, 6, &n1);
        double *two = train_bits(&ds, &variants[k], 2, 6, &n2);
        double *three = train_bits(&ds, &variants[k], 3, 6, &n3);
        bool same = n1 == n2 && n1 == n3 && memcmp(one, two, n1 * sizeof *one) == 0 &&
                    memcmp(one, three, n1 * sizeof *one) == 0;
        if (!same) printf("    %s: the bits differ between thread counts\n", variants[k].name);
        CHECK(same);
        bool moved = false; /* and training did something: Adam's moments are not all zero */
        for (size_t i = n1 / 2; i < n1 && !moved; i++) moved = one[i] != 0;
        CHECK(moved);
        free(one), free(two), free(three);
    }
    kgl_dataset_free(&ds);
}

/* The fused attention op and the composition of elementary ops compute the
   same function: loss and every parameter's gradient agree to round-off.
   Tolerance 1e-12 relative: both sum the same products, in orders that
   differ only inside the kernels (FMA chains vs separate scale passes), a
   few ulp per element, far below 1e-12 after the loss's reductions. */
TEST(fused_attention_equals_its_composition)
{
    kgl_dataset ds;
    CHECK(random_graph(&ds, 9, 90, 5, 400));
    for (int qk = 0; qk < 2; qk++) {
        kgl_config cfg;
        kgl_config_defaults(&cfg);
        cfg.n_entities = ds.n_entities, cfg.n_relations = ds.n_relations;
        cfg.dim = 24, cfg.heads = 3, cfg.ffn = 12;
        cfg.qk_norm = qk, cfg.learn_temperature = qk;
        kgl_model m;
        kgl_model_create(&m, &cfg);
        kgl_rng rng;
        kgl_rng_seed(&rng, 3);
        kgl_model_init(&m, &rng);
        if (qk) m.layer[0].log_temperature->data[1] = 0.4, m.layer[0].log_temperature->data[2] = -0.3;
        int B = 300, *h = malloc(B * sizeof *h), *r = malloc(B * sizeof *r), *t = malloc(B * sizeof *t);
        for (int b = 0; b < B; b++) {
            kgl_triple x = ds.splits[0].triples[b];
            h[b] = x.head, r[b] = x.rel, t[b] = x.tail;
        }
        kgl_batch batch = {B, h, r, t, NULL};
        size_t total = m.params.total;
        double loss[2], *grad[2];
        for (int composed = 0; composed < 2; composed++) {
            m.composed_attention = composed;
            kgl_tape tape;
            kgl_tape_init(&tape);
            kgl_params_zero_grad(&m.params);
            kgl_forward f;
            kgl_model_loss(&m, &tape, &batch, NULL, &f);
            CHECK((f.logits_attn[0] != NULL) == (composed == 1)); /* the path asked for was taken */
            kgl_backward(&tape, f.loss);
            loss[composed] = f.loss->data[0];
            grad[composed] = malloc(total * sizeof(double));
            memcpy(grad[composed], m.params.block + total, total * sizeof(double));
            kgl_tape_free(&tape);
        }
        CHECK_NEAR(loss[0], loss[1], 1e-12 * fabs(loss[1]));
        double worst = 0, gmax = 0;
        for (size_t i = 0; i < total; i++) {
            double d = fabs(grad[0][i] - grad[1][i]);
            if (d > worst) worst = d;
            if (fabs(grad[1][i]) > gmax) gmax = fabs(grad[1][i]);
        }
        CHECK(gmax > 0);
        CHECK(worst <= 1e-12 * gmax);
        if (!(worst <= 1e-12 * gmax)) printf("    qk %d: max |Δgrad| %.3g of max |grad| %.3g\n", qk, worst, gmax);
        free(grad[0]), free(grad[1]), free(h), free(r), free(t);
        kgl_model_free(&m);
    }
    kgl_dataset_free(&ds);
}

/* The realistic filtered rank by plain loops: each score a long-double
   sum, then the candidates counted one by one. */
static void plain_ranks(const kgl_model *m, const double *C, const kgl_dataset *ds, int i, int r, int target,
                        bool head, double *rank)
{
    int n = m->cfg.n_entities, d = m->cfg.dim, count;
    const double *E = m->entity_emb->data, *R = m->relation_emb->data;
    long double s_target = 0;
    long double *s = malloc((size_t)n * sizeof *s);
    for (int j = 0; j < n; j++) {
        long double acc = 0;
        for (int c = 0; c < d; c++) acc += (long double)C[(size_t)i * d + c] * R[(size_t)r * d + c] * E[(size_t)j * d + c];
        s[j] = acc;
    }
    s_target = s[target];
    const int *known = kgl_dataset_known(ds, i, r, &count);
    long higher = 0, equal = 0;
    for (int j = 0; j < n; j++) {
        bool filtered = false;
        for (int k = 0; k < count; k++) filtered = filtered || known[k] == j;
        if (filtered || j == target) continue;
        higher += s[j] > s_target;
        equal += s[j] == s_target;
    }
    (void)head;
    *rank = 1.0 + (double)higher + (double)equal / 2;
    free(s);
}

/* Evaluation scores chunks of queries with one matrix product and ranks the
   rows in parallel; on a UMLS-sized graph (135 entities, 46 relations,
   2,000 triples, d 64) every rank equals the plain loop's, so the MRR is
   the plain loop's to the last bit of its sum (1e-15: the same ranks,
   summed in the same order). */
TEST(evaluation_ranks_equal_a_plain_loop)
{
    kgl_dataset ds;
    CHECK(random_graph(&ds, 21, 135, 46, 2000));
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = ds.n_entities, cfg.n_relations = ds.n_relations;
    cfg.dim = 64, cfg.heads = 4;
    kgl_model m;
    kgl_model_create(&m, &cfg);
    kgl_rng rng;
    kgl_rng_seed(&rng, 1);
    kgl_model_init(&m, &rng);
    kgl_tape tape;
    kgl_tape_init(&tape);
    tape.recording = false;
    kgl_forward f;
    kgl_model_context(&m, &tape, &f);
    const kgl_triple *tr = ds.splits[0].triples;
    int n = ds.splits[0].n, m_rel = ds.n_relations;
    double mrr = 0;
    for (int k = 0; k < n; k++) {
        double rt, rh;
        plain_ranks(&m, f.context->data, &ds, tr[k].head, tr[k].rel, tr[k].tail, false, &rt);
        plain_ranks(&m, f.context->data, &ds, tr[k].tail, m_rel + tr[k].rel, tr[k].head, true, &rh);
        mrr += 1.0 / rt + 1.0 / rh;
    }
    mrr /= 2.0 * n;
    for (int threads = 1; threads <= 2; threads++) {
        kgl_pool *pool = kgl_pool_create(threads);
        kgl_eval ev;
        kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
        kgl_eval_set_pool(&ev, pool);
        kgl_evaluate(&m, f.context, &ds, tr, n, &ev);
        CHECK(ev.both.n == 2L * n);
        CHECK_NEAR(ev.both.mrr, mrr, 1e-15);
        kgl_eval_free(&ev);
        kgl_pool_free(pool);
    }
    kgl_tape_free(&tape);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* With a pool of two threads too, a step and an evaluation allocate nothing
   once the first step has sized the arenas. */
TEST(no_allocation_inside_a_threaded_training_step)
{
    kgl_dataset ds;
    CHECK(random_graph(&ds, 5, 150, 7, 900));
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.dim = 32, cfg.heads = 4, cfg.ffn = 32;
    kgl_train_config tc = {512, 3, {0}, NULL, 1, false, false};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer tr;
    kgl_trainer_init(&tr, &ds, ds.splits[0].triples, ds.splits[0].n, &cfg, &tc);
    kgl_pool *pool = kgl_pool_create(2);
    kgl_trainer_set_pool(&tr, pool);
    kgl_eval ev;
    kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
    kgl_eval_set_pool(&ev, pool);
    for (int s = 0; s < 5; s++) kgl_trainer_step(&tr), kgl_trainer_fits(&tr, &ev); /* an epoch sizes the arenas */
    long before = test_alloc_count();
    for (int s = 0; s < 10; s++) {
        kgl_trainer_step(&tr);
        kgl_trainer_fits(&tr, &ev);
    }
    CHECK(test_alloc_count() == before);
    kgl_eval_free(&ev);
    kgl_trainer_free(&tr);
    kgl_pool_free(pool);
    kgl_dataset_free(&ds);
}
