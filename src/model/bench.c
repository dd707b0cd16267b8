/* bench.c — `kgl bench`: how fast kgl trains and evaluates, measured the way
 * the PyTorch peer measures itself, so that the two can be run side by side
 * and compared as a ratio.
 *
 * A step is one step of `kgl train` itself (kgl_trainer_compute_batch, then
 * kgl_trainer_update): the forward pass over the whole entity set, the
 * readout and cross entropy of the first `batch` examples in file order
 * (forward examples, then their reciprocals), backward, and Adam. The batch
 * is the same every step, so every step does the same work; `warmup` steps
 * run first (the first step sizes the arenas and touches their pages), then
 * `reps` steps are timed one by one. The evaluation is one filtered ranking
 * of every training triple in both directions, the context included. The
 * GEMM figure is C = A B at 1024³ on kgl's own kernel, the best of 5, which
 * says how close the kernel gets to the machine's peak. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "engine/internal.h"
#include "engine/kernel.h"
#include "kgl/model.h"

void kgl_bench_defaults(kgl_bench_spec *s)
{
    memset(s, 0, sizeof *s);
    kgl_config_defaults(&s->model);
    s->batch = 1024;
    s->reps = 20;
    s->warmup = 3;
    s->threads = 0;
    s->seed = 1;
    s->eval = true;
    s->gemm = true;
}

/* The process's peak resident memory so far, in MB (Linux reports KiB). */
static double peak_rss_mb(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return NAN;
    return (double)ru.ru_maxrss / 1024.0;
}

double kgl_bench_gemm_gflops(kgl_pool *pool, int size, int reps)
{
    size_t n = (size_t)size * (size_t)size;
    kgl_real *a = kgl_xmalloc(n * sizeof(kgl_real)), *b = kgl_xmalloc(n * sizeof(kgl_real));
    kgl_real *c = kgl_xmalloc(n * sizeof(kgl_real));
    kgl_rng rng;
    kgl_rng_seed(&rng, 1);
    for (size_t i = 0; i < n; i++) a[i] = kgl_rng_uniform(&rng) - 0.5, b[i] = kgl_rng_uniform(&rng) - 0.5;
    double best = INFINITY;
    for (int r = 0; r < reps + 1; r++) { /* the first call touches c's pages */
        double t0 = kgl_seconds();
        kgl_gemm_nn(pool, size, size, size, a, size, b, size, c, size, KGL_SET);
        double dt = kgl_seconds() - t0;
        if (r > 0 && dt < best) best = dt;
    }
    free(a);
    free(b);
    free(c);
    return 2.0 * (double)size * (double)size * (double)size / best / 1e9;
}

/* The scale curve's graphs: n entities e0 … e(n−1), 20 relations r0 … r19,
   and 10 n triples (h, r, t), h and t uniform and distinct, r uniform, drawn
   in that order from a generator seeded with 0x53594e ("SYN"); repeats are
   one triple (the loader keeps the first), so the mean degree is about 20. */
char *kgl_bench_synthetic(int n, size_t *len)
{
    size_t triples = 10 * (size_t)n, cap = triples * 32 + 1, used = 0;
    char *text = kgl_xmalloc(cap);
    kgl_rng rng;
    kgl_rng_seed(&rng, 0x53594e);
    for (size_t k = 0; k < triples; k++) {
        uint32_t h = kgl_rng_below(&rng, (uint32_t)n), t = kgl_rng_below(&rng, (uint32_t)n - 1);
        if (t >= h) t++; /* uniform over the others */
        uint32_t r = kgl_rng_below(&rng, 20);
        used += (size_t)snprintf(text + used, cap - used, "e%u\tr%u\te%u\n", h, r, t);
    }
    *len = used;
    return text;
}

bool kgl_bench_run(const kgl_bench_spec *s, kgl_bench_result *out, char *err, size_t err_cap)
{
    memset(out, 0, sizeof *out);
    if (!s->train && s->synthetic < 1) {
        snprintf(err, err_cap, "no training triples given (--train F, or --synthetic N)");
        return false;
    }
    if (s->reps < 1 || s->warmup < 0 || s->batch < 1) {
        snprintf(err, err_cap, "reps must be at least 1, warmup at least 0 and batch at least 1");
        return false;
    }
    kgl_dataset ds;
    kgl_source src = {s->train, NULL, 0};
    char *text = s->synthetic > 0 ? kgl_bench_synthetic(s->synthetic, &src.len) : NULL;
    if (text) src = (kgl_source){"synthetic", text, src.len};
    bool loaded = kgl_dataset_load(&ds, &src, 1, err, err_cap);
    free(text);
    if (!loaded) return false;
    kgl_config cfg = s->model;
    cfg.n_entities = ds.n_entities;
    cfg.n_relations = ds.n_relations;
    const char *bad = kgl_config_error(&cfg);
    if (bad) {
        snprintf(err, err_cap, "%s", bad);
        kgl_dataset_free(&ds);
        return false;
    }
    kgl_train_config tc;
    memset(&tc, 0, sizeof tc);
    tc.batch = s->batch;
    tc.seed = s->seed;
    kgl_optim_defaults(&tc.optim);
    tc.aux_weight = 1;

    kgl_pool *pool = kgl_pool_create(s->threads);
    kgl_trainer tr;
    const kgl_split *train = &ds.splits[0];
    kgl_trainer_init(&tr, &ds, train->triples, train->n, &cfg, &tc);
    kgl_trainer_set_pool(&tr, pool);
    int B = s->batch < tr.n_examples ? s->batch : tr.n_examples;
    kgl_batch batch = {B, tr.ex_head, tr.ex_rel, tr.ex_tail, NULL}; /* the first B examples in file order */

    double *times = kgl_xmalloc((size_t)s->reps * sizeof(double));
    bool ok = true;
    for (int k = 0; k < s->warmup + s->reps && ok; k++) {
        double t0 = kgl_seconds();
        double loss = kgl_trainer_compute_batch(&tr, &batch);
        if (isfinite(loss)) kgl_trainer_update(&tr);
        double dt = kgl_seconds() - t0;
        if (k == 0) out->first_loss = loss;
        if (!isfinite(loss)) {
            snprintf(err, err_cap, "the loss became non-finite at step %d", k + 1);
            ok = false;
        }
        if (k >= s->warmup) times[k - s->warmup] = dt;
    }
    if (ok) {
        qsort(times, (size_t)s->reps, sizeof(double), kgl_cmp_double);
        double sum = 0;
        for (int k = 0; k < s->reps; k++) sum += times[k];
        out->step_ms_min = 1e3 * times[0];
        out->step_ms_median = 1e3 * (s->reps % 2 ? times[s->reps / 2]
                                                  : 0.5 * (times[s->reps / 2 - 1] + times[s->reps / 2]));
        out->step_ms_mean = 1e3 * sum / s->reps;
        out->eval_s = NAN;
        if (s->eval) {
            kgl_eval ev;
            kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
            double t0 = kgl_seconds();
            kgl_tensor *C = kgl_trainer_states(&tr);
            kgl_eval_set_pool(&ev, pool);
            kgl_evaluate(&tr.model, C, &ds, train->triples, train->n, &ev);
            out->eval_s = kgl_seconds() - t0;
            out->train_mrr = ev.both.mrr;
            kgl_eval_free(&ev);
        }
        out->peak_rss_mb = peak_rss_mb(); /* before the GEMM's own 24 MB */
        out->gemm_gflops = s->gemm ? kgl_bench_gemm_gflops(pool, 1024, 5) : NAN;
        out->threads = kgl_pool_threads(pool);
        out->isa = kgl_kernels_isa();
        out->n_entities = ds.n_entities;
        out->n_relations = ds.n_relations;
        out->n_examples = tr.n_examples;
        out->batch = B;
        out->params = (long)tr.model.params.total;
    }
    free(times);
    kgl_trainer_free(&tr);
    kgl_pool_free(pool);
    kgl_dataset_free(&ds);
    return ok;
}

/* --json: one object (compare.sh reads it); a number not measured is null */
void kgl_bench_result_json(FILE *f, const kgl_bench_spec *s, const kgl_bench_result *r, const char *graph)
{
    kgl_json_writer w; /* a number not measured (--no-eval, --no-gemm) is null */
    kgl_json_writer_init(&w, f);
    kgl_json_begin_object(&w);
    kgl_json_field_string(&w, "impl", "kgl");
    kgl_json_field_string(&w, "train", graph);
    kgl_json_field_int(&w, "dim", s->model.dim);
    kgl_json_field_int(&w, "heads", s->model.heads);
    kgl_json_field_int(&w, "ffn", s->model.ffn);
    kgl_json_field_int(&w, "layers", s->model.layers);
    kgl_json_field_bool(&w, "qk_norm", s->model.qk_norm);
    kgl_json_field_string(&w, "context", kgl_context_name(s->model.context));
    kgl_json_field_int(&w, "neighbours", s->model.neighbours);
    kgl_json_field_string(&w, "query", s->model.query_relation ? "relation" : "entity");
    kgl_json_field_string(&w, "asked_edges", s->model.hide_asked ? "hidden" : "shown");
    kgl_json_field_bool(&w, "relation_token", s->model.relation_token);
    kgl_json_field_bool(&w, "outer_residual", s->model.outer_residual);
    kgl_json_field_int(&w, "batch", r->batch);
    kgl_json_field_int(&w, "threads", r->threads);
    kgl_json_field_string(&w, "isa", r->isa);
    kgl_json_field_string(&w, "precision", KGL_PRECISION);
    kgl_json_field_int(&w, "entities", r->n_entities);
    kgl_json_field_int(&w, "relations", r->n_relations);
    kgl_json_field_int(&w, "examples", r->n_examples);
    kgl_json_field_int(&w, "params", r->params);
    kgl_json_field_int(&w, "reps", s->reps);
    kgl_json_field_int(&w, "warmup", s->warmup);
    kgl_json_field_number(&w, "step_ms_median", r->step_ms_median);
    kgl_json_field_number(&w, "step_ms_min", r->step_ms_min);
    kgl_json_field_number(&w, "step_ms_mean", r->step_ms_mean);
    kgl_json_field_number(&w, "eval_s", s->eval ? r->eval_s : NAN);
    kgl_json_field_number(&w, "train_mrr", s->eval ? r->train_mrr : NAN);
    kgl_json_field_number(&w, "first_loss", r->first_loss);
    kgl_json_field_number(&w, "gemm_gflops", s->gemm ? r->gemm_gflops : NAN);
    kgl_json_field_number(&w, "peak_rss_mb", r->peak_rss_mb);
    kgl_json_end_object(&w);
    kgl_json_newline(&w);
    kgl_json_writer_finish(&w);
}

/* The table a person reads */
void kgl_bench_result_write(FILE *f, const kgl_bench_spec *s, const kgl_bench_result *r, const char *graph)
{
    const kgl_config *m = &s->model;
    char ctx[96];
    if (m->context == KGL_CONTEXT_GRAPH)
        snprintf(ctx, sizeof ctx, "graph K %d%s%s%s", m->neighbours,
                 m->query_relation ? ", query asks the relation" : "", m->hide_asked ? ", its edges hidden" : "",
                 m->relation_token ? ", the relation a token" : "");
    else snprintf(ctx, sizeof ctx, "%s", kgl_context_name(m->context));
    char stack[48] = ""; /* a stack's depth (one layer says nothing), and the outer residual */
    if (m->layers > 1) snprintf(stack, sizeof stack, ", %d layers", m->layers);
    if (m->outer_residual) snprintf(stack + strlen(stack), sizeof stack - strlen(stack), ", outer residual");
    fprintf(f, "kgl bench %s: n %d, d %d, H %d%s, ffn %d%s, context %s, batch %d, %d thread%s (%s, %s)\n", graph,
            r->n_entities, m->dim, m->heads, m->qk_norm ? " qk-norm" : "", m->ffn, stack, ctx, r->batch, r->threads,
            r->threads == 1 ? "" : "s", r->isa, KGL_PRECISION);
    fprintf(f, "  step   median %10.3f ms   min %10.3f ms   mean %10.3f ms   (%d timed, %d warm-up)\n",
            r->step_ms_median, r->step_ms_min, r->step_ms_mean, s->reps, s->warmup);
    if (s->eval)
        fprintf(f, "  eval   %10.3f s   (%d queries, train MRR %.4f)\n", r->eval_s, r->n_examples, r->train_mrr);
    if (s->gemm) fprintf(f, "  gemm   %10.1f GFLOP/s at 1024^3\n", r->gemm_gflops);
    fprintf(f, "  memory %10.0f MB peak resident\n", r->peak_rss_mb);
}
