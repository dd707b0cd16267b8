/* cmd_bench.c — `kgl bench`: times training steps, one evaluation and the
 * GEMM (kgl_bench_run in src/model/bench.c); prints a line or JSON. */
#include <math.h>
#include <string.h>

#include "common.h"

static const char help[] =
    "usage: kgl bench --train F|--synthetic N [--dim D] [--heads H] [--ffn F] [--qk-norm] [--context C]\n"
    "                 [--neighbours K] [--query-relation [--hide-asked-relation] [--relation-token]]\n"
    "                 [--batch B] [--reps R]\n"
    "                 [--warmup W] [--threads T] [--seed N] [--no-eval] [--no-gemm] [--json]\n\n"
    "Times steady-state training steps of kgl train itself: the forward pass over the\n"
    "whole entity set, the readout and cross entropy of the first B examples in file\n"
    "order (forward triples, then their reciprocals), backward and Adam, on the same\n"
    "batch every step. W warm-up steps run first (they size the arenas), then R steps\n"
    "are timed one by one. Then one filtered evaluation of every training triple in\n"
    "both directions, kgl's own GEMM at 1024^3, and the peak resident memory.\n"
    "--json prints what a comparison script reads (data/report/speed.md).\n\n"
    "  --train F     training triples (required)\n"
    "  --dim D, --heads H, --ffn F   the model (defaults 8, 2, 0)\n"
    "  --qk-norm     each head's queries and keys layer-normalised, as kgl train\n"
    "  --context C   full (default), graph or none, as kgl train; --neighbours K (default 50);\n"
    "                --query-relation: a graph context's query sees the asked relation;\n"
    "                --hide-asked-relation: and never its entity's edges of that relation;\n"
    "                --relation-token: the asked relation a token of the question (K may be 0)\n"
    "  --synthetic N instead of --train: a random graph of N entities, 20 relations and\n"
    "                10 N triples (mean degree about 20; data/report/large.md)\n"
    "  --batch B     examples per step (default 1024)\n"
    "  --reps R      timed steps (default 20)\n"
    "  --warmup W    untimed steps first (default 3)\n"
    "  --threads T   threads (default 0: every core); results are the same bits for any T\n"
    "  --seed N      initialisation seed (default 1)\n"
    "  --no-eval     skip the evaluation;  --no-gemm  skip the GEMM\n"
    "  --json        one JSON object: step_ms_median, step_ms_min, step_ms_mean, eval_s,\n"
    "                gemm_gflops, peak_rss_mb, threads, isa, precision, and the case's sizes\n"
    "exit status: 0 done, 2 bad arguments or input, 1 the loss became non-finite\n";

/* --json: one object (compare.sh reads it); a number not measured is null */
static void print_json(const kgl_bench_spec *s, const kgl_bench_result *r, const char *graph)
{
    kgl_json_writer w; /* a number not measured (--no-eval, --no-gemm) is null */
    kgl_json_writer_init(&w, stdout);
    kgl_json_begin_object(&w);
    kgl_json_field_string(&w, "impl", "kgl");
    kgl_json_field_string(&w, "train", graph);
    kgl_json_field_int(&w, "dim", s->dim);
    kgl_json_field_int(&w, "heads", s->heads);
    kgl_json_field_int(&w, "ffn", s->ffn);
    kgl_json_field_bool(&w, "qk_norm", s->qk_norm);
    kgl_json_field_string(&w, "context", kgl_context_name(s->context));
    kgl_json_field_int(&w, "neighbours", s->neighbours);
    kgl_json_field_string(&w, "query", s->query_relation ? "relation" : "entity");
    kgl_json_field_string(&w, "asked_edges", s->hide_asked ? "hidden" : "shown");
    kgl_json_field_bool(&w, "relation_token", s->relation_token);
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
static void print_text(const kgl_bench_spec *s, const kgl_bench_result *r, const char *graph)
{
    char ctx[96];
    if (s->context == KGL_CONTEXT_GRAPH)
        snprintf(ctx, sizeof ctx, "graph K %d%s%s%s", s->neighbours, s->query_relation ? ", query asks the relation" : "",
                 s->hide_asked ? ", its edges hidden" : "", s->relation_token ? ", the relation a token" : "");
    else snprintf(ctx, sizeof ctx, "%s", kgl_context_name(s->context));
    printf("kgl bench %s: n %d, d %d, H %d%s, ffn %d, context %s, batch %d, %d thread%s (%s, %s)\n", graph,
           r->n_entities, s->dim, s->heads, s->qk_norm ? " qk-norm" : "", s->ffn, ctx, r->batch, r->threads,
           r->threads == 1 ? "" : "s", r->isa, KGL_PRECISION);
    printf("  step   median %10.3f ms   min %10.3f ms   mean %10.3f ms   (%d timed, %d warm-up)\n",
           r->step_ms_median, r->step_ms_min, r->step_ms_mean, s->reps, s->warmup);
    if (s->eval) printf("  eval   %10.3f s   (%d queries, train MRR %.4f)\n", r->eval_s, r->n_examples, r->train_mrr);
    if (s->gemm) printf("  gemm   %10.1f GFLOP/s at 1024^3\n", r->gemm_gflops);
    printf("  memory %10.0f MB peak resident\n", r->peak_rss_mb);
}

int cmd_bench(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "bench", argc, argv);
    a.help = help;
    kgl_bench_spec s;
    kgl_bench_defaults(&s);
    bool json = false;
    long v;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (cli_is(&a, "--train")) {
            if (!(s.train = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--dim")) {
            if (!cli_int(&a, 1, 1 << 16, &v)) return EXIT_USAGE;
            s.dim = (int)v;
        } else if (cli_is(&a, "--heads")) {
            if (!cli_int(&a, 1, KGL_MAX_HEADS, &v)) return EXIT_USAGE;
            s.heads = (int)v;
        } else if (cli_is(&a, "--ffn")) {
            if (!cli_int(&a, 0, 1 << 20, &v)) return EXIT_USAGE;
            s.ffn = (int)v;
        } else if (cli_is(&a, "--synthetic")) {
            if (!cli_int(&a, 2, 1 << 24, &v)) return EXIT_USAGE;
            s.synthetic = (int)v;
        } else if (cli_is(&a, "--context")) {
            int k;
            if (!cli_word(&a, kgl_context_names, 3, &k)) return EXIT_USAGE;
            s.context = (kgl_context_kind)k;
        } else if (cli_is(&a, "--neighbours")) { /* 0 only with --relation-token: kgl_config_error says so */
            if (!cli_int(&a, 0, KGL_MAX_NEIGHBOURS, &v)) return EXIT_USAGE;
            s.neighbours = (int)v;
        } else if (cli_is(&a, "--qk-norm")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            s.qk_norm = true;
        } else if (cli_is(&a, "--query-relation")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            s.query_relation = true;
        } else if (cli_is(&a, "--hide-asked-relation")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            s.hide_asked = true;
        } else if (cli_is(&a, "--relation-token")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            s.relation_token = true;
        } else if (cli_is(&a, "--batch")) {
            if (!cli_int(&a, 1, 1 << 30, &v)) return EXIT_USAGE;
            s.batch = (int)v;
        } else if (cli_is(&a, "--reps")) {
            if (!cli_int(&a, 1, 1000000, &v)) return EXIT_USAGE;
            s.reps = (int)v;
        } else if (cli_is(&a, "--warmup")) {
            if (!cli_int(&a, 0, 1000000, &v)) return EXIT_USAGE;
            s.warmup = (int)v;
        } else if (cli_is(&a, "--threads")) {
            if (!cli_int(&a, 0, KGL_MAX_THREADS, &v)) return EXIT_USAGE;
            s.threads = (int)v;
        } else if (cli_is(&a, "--seed")) {
            if (!cli_u64(&a, &s.seed)) return EXIT_USAGE;
        } else if (cli_is(&a, "--no-eval")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            s.eval = false;
        } else if (cli_is(&a, "--no-gemm")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            s.gemm = false;
        } else if (cli_is(&a, "--json")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            json = true;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!s.train && !s.synthetic) return cli_usage_error(&a, "--train F (or --synthetic N) is required");
    if (s.train && s.synthetic) return cli_usage_error(&a, "--train and --synthetic are two graphs: give one");
    const char *graph = s.train ? s.train : "synthetic";
    if (s.dim % s.heads) return cli_usage_error(&a, "--heads %d does not divide --dim %d", s.heads, s.dim);
    kgl_bench_result r;
    char err[1024];
    if (!kgl_bench_run(&s, &r, err, sizeof err)) {
        fprintf(stderr, "kgl bench: %s\n", err);
        return strstr(err, "non-finite") ? 1 : 2;
    }
    if (json) print_json(&s, &r, graph);
    else print_text(&s, &r, graph);
    return 0;
}
