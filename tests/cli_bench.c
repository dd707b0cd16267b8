/* cli_bench.c — `kgl bench`: the JSON compare.sh reads, the readable line,
 * and its usage errors. Times are not asserted (they are measured, not
 * tested): only that they are positive and ordered as their names say. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 14], err[1 << 14];

static double json_value(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

TEST(cli_bench_json_has_what_compare_reads)
{
    int rc = run_kgl(T, "bench --train data/academic.tsv --dim 8 --heads 2 --reps 5 --warmup 1 --threads 2 --json", out,
                     sizeof out, err, sizeof err);
    CHECK(rc == 0);
    double median = json_value(out, "step_ms_median"), min = json_value(out, "step_ms_min");
    double mean = json_value(out, "step_ms_mean");
    CHECK(min > 0 && min <= median && min <= mean);
    CHECK(json_value(out, "eval_s") > 0);
    CHECK(json_value(out, "gemm_gflops") > 0);
    CHECK(json_value(out, "peak_rss_mb") > 0);
    CHECK(json_value(out, "threads") == 2);
    /* the case's sizes: 13 entities, 5 relations, 21 triples = 42 examples, all in the batch */
    CHECK(json_value(out, "entities") == 13 && json_value(out, "relations") == 5);
    CHECK(json_value(out, "examples") == 42 && json_value(out, "batch") == 42);
    /* the first step's loss is that of kgl train's first step (seed 1):
       "step 1/300 loss 2.6..." — the same model, batch and parameters */
    char tout[1 << 13];
    CHECK(run_kgl(T, "train --steps 1 --log-every 1 --json", tout, sizeof tout, err, sizeof err) == 0);
    double train_loss = json_value(tout, "final_loss");
    CHECK_NEAR(json_value(out, "first_loss"), train_loss, 1e-12 * fabs(train_loss));
    CHECK(strstr(out, "\"isa\":\"") != NULL);
}

TEST(cli_bench_readable_line_and_usage_errors)
{
    CHECK(run_kgl(T, "bench --train data/academic.tsv --reps 2 --warmup 0 --no-eval --no-gemm", out, sizeof out, err,
                  sizeof err) == 0);
    CHECK(strstr(out, "step   median") != NULL && strstr(out, "memory") != NULL);
    CHECK(strstr(out, "eval ") == NULL && strstr(out, "gemm ") == NULL);
    CHECK(run_kgl(T, "bench", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--train F (or --synthetic N) is required") != NULL);
    CHECK(run_kgl(T, "bench --train data/academic.tsv --synthetic 100", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--train and --synthetic are two graphs") != NULL);
    /* the scale curve's graph: 100 entities, 20 relations, about 1,000 triples, and every context */
    CHECK(run_kgl(T, "bench --synthetic 100 --context graph --neighbours 8 --reps 1 --warmup 0 --no-gemm --json", out,
                  sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\"entities\":100,\"relations\":20,") != NULL && strstr(out, "\"context\":\"graph\"") != NULL);
    CHECK(run_kgl(T, "bench --synthetic 100 --context none --reps 1 --warmup 0 --no-gemm", out, sizeof out, err,
                  sizeof err) == 0);
    CHECK(strstr(out, "context none") != NULL);
    /* --qk-norm and --query-relation reach the model: its parameters are counted (d 8, H 2: γ, β of
       width 4 for queries and keys, 16; Pq, 2 m x d = 320 on the 20 relations), and the JSON says so */
    long params[3];
    const char *variants[3] = {"", " --qk-norm", " --qk-norm --query-relation"};
    for (int k = 0; k < 3; k++) {
        char args[300];
        snprintf(args, sizeof args, "bench --synthetic 100 --context graph --neighbours 8 --reps 1 --warmup 0 --no-eval "
                                    "--no-gemm --json%s", variants[k]);
        CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
        const char *p = strstr(out, "\"params\":");
        params[k] = p ? strtol(p + 9, NULL, 10) : -1;
    }
    CHECK(params[1] - params[0] == 16 && params[2] - params[1] == 320);
    CHECK(strstr(out, "\"qk_norm\":true") != NULL && strstr(out, "\"query\":\"relation\"") != NULL);
    /* --hide-asked-relation reaches the model: the question (i, r) loses i's edges of relation r, so
       the first step's loss (same seed, same batch) changes, and the JSON says so */
    double first_loss[2];
    for (int k = 0; k < 2; k++) {
        char args[300];
        snprintf(args, sizeof args, "bench --synthetic 100 --context graph --neighbours 8 --query-relation --reps 1 "
                                    "--warmup 0 --no-eval --no-gemm --json%s", k ? " --hide-asked-relation" : "");
        CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
        const char *p = strstr(out, "\"first_loss\":");
        first_loss[k] = p ? strtod(p + 13, NULL) : NAN;
    }
    CHECK(isfinite(first_loss[0]) && isfinite(first_loss[1]) && first_loss[0] != first_loss[1]);
    CHECK(strstr(out, "\"asked_edges\":\"hidden\"") != NULL);
    /* --relation-token reaches the model: P gains 2 m rows of d (20 relations, d 8: 320 parameters), and
       with it the question alone (--neighbours 0) is a step of its own; without it K 0 is refused */
    long token_params[2];
    for (int k = 0; k < 2; k++) {
        char args[300];
        snprintf(args, sizeof args, "bench --synthetic 100 --context graph --neighbours %d --query-relation --reps 1 "
                                    "--warmup 0 --no-eval --no-gemm --json%s", k ? 0 : 8, k ? " --relation-token" : "");
        CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
        const char *p = strstr(out, "\"params\":");
        token_params[k] = p ? strtol(p + 9, NULL, 10) : -1;
    }
    CHECK(token_params[1] - token_params[0] == 320 && strstr(out, "\"relation_token\":true") != NULL);
    CHECK(strstr(out, "\"neighbours\":0") != NULL);
    CHECK(run_kgl(T, "bench --synthetic 100 --context graph --neighbours 0 --query-relation", out, sizeof out, err,
                  sizeof err) == 2);
    CHECK(strstr(err, "0 with --relation-token") != NULL);
    CHECK(run_kgl(T, "bench --synthetic 100 --context graph --hide-asked-relation", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--hide-asked-relation") != NULL);
    CHECK(run_kgl(T, "bench --synthetic 100 --query-relation", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--query-relation needs --context graph") != NULL);
    CHECK(run_kgl(T, "bench --train data/academic.tsv --dim 8 --heads 3", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "does not divide") != NULL);
    CHECK(run_kgl(T, "bench --train data/academic.tsv --reps 0", out, sizeof out, err, sizeof err) == 2);
    CHECK(run_kgl(T, "bench --train /nonexistent/triples.tsv", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "/nonexistent/triples.tsv") != NULL);
}
