/* cmd_bench.c — `kgl bench`: times training steps, one evaluation and the
 * GEMM (kgl_bench_run in src/model/bench.c); prints a line or JSON. */
#include <string.h>

#include "common.h"

static const char help[] =
    "usage: kgl bench --train F|--synthetic N [MODEL OPTIONS] [--batch B] [--reps R]\n"
    "                 [--warmup W] [--threads T] [--seed N] [--no-eval] [--no-gemm] [--json]\n\n"
    "Times steady-state training steps of kgl train itself: the forward pass over the\n"
    "whole entity set, the readout and cross entropy of the first B examples in file\n"
    "order (forward triples, then their reciprocals), backward and Adam, on the same\n"
    "batch every step. W warm-up steps run first (they size the arenas), then R steps\n"
    "are timed one by one. Then one filtered evaluation of every training triple in\n"
    "both directions, kgl's own GEMM at 1024^3, and the peak resident memory.\n"
    "--json prints what a comparison script reads (data/report/speed.md).\n\n"
    "  --train F     training triples (required)\n"
    "  MODEL OPTIONS every option of kgl train's model, from its table and as it reads\n"
    "                them (kgl train --help): --dim D, --heads H, --ffn F (defaults 8, 2, 0),\n"
    "                --layers L, --qk-norm, --context C (full, graph or none),\n"
    "                --neighbours K, --query-relation, --hide-asked-relation,\n"
    "                --relation-token, --readout R, --temperature T, ...\n"
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
        } else if (cli_is(&a, "--synthetic")) {
            if (!cli_int(&a, 2, 1 << 24, &v)) return EXIT_USAGE;
            s.synthetic = (int)v;
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
            /* a row of kgl train's table that belongs to the model: read as kgl train reads it */
            const kgl_option *row = kgl_train_option_named(a.opt, strlen(a.opt));
            if (!row || row->kind != KGL_OPTION_MODEL) return cli_unknown(&a);
            if (!table_option(&a, row, &s.model, NULL, NULL)) return EXIT_USAGE;
        }
    }
    if (!s.train && !s.synthetic) return cli_usage_error(&a, "--train F (or --synthetic N) is required");
    if (s.train && s.synthetic) return cli_usage_error(&a, "--train and --synthetic are two graphs: give one");
    const char *graph = s.train ? s.train : "synthetic";
    if (s.model.dim % s.model.heads)
        return cli_usage_error(&a, "--heads %d does not divide --dim %d", s.model.heads, s.model.dim);
    kgl_bench_result r;
    char err[1024];
    if (!kgl_bench_run(&s, &r, err, sizeof err)) {
        fprintf(stderr, "kgl bench: %s\n", err);
        return strstr(err, "non-finite") ? 1 : 2;
    }
    if (json) kgl_bench_result_json(stdout, &s, &r, graph);
    else kgl_bench_result_write(stdout, &s, &r, graph);
    return 0;
}
