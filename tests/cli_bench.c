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

/* kgl bench reads the model's options from kgl train's table, so a row it
   never names takes effect: --layers 2 (a stack; width 8, 2 heads, no FFN:
   a layer's Wq, Wk, Wv, Wo, 4 x 64, and its norm's gamma and beta, 16, so
   272 more parameters; the JSON and the line say so) and --readout complex
   (the same parameters, another first loss). A training option (dropout)
   is not the model's: refused, as an unknown option is, with kgl bench's
   hint. */
TEST(cli_bench_reads_the_model_options_from_the_table)
{
    const char *base = "bench --train data/academic.tsv --reps 1 --warmup 0 --no-eval --no-gemm --json";
    const char *more[3] = {"", " --layers 2", " --readout complex"};
    long params[3];
    double first_loss[3];
    for (int k = 0; k < 3; k++) {
        char args[300];
        snprintf(args, sizeof args, "%s%s", base, more[k]);
        CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
        params[k] = (long)json_value(out, "params");
        first_loss[k] = json_value(out, "first_loss");
        if (k == 1) CHECK(json_value(out, "layers") == 2);
    }
    CHECK(params[1] - params[0] == 272 && params[2] == params[0]);
    CHECK(isfinite(first_loss[2]) && first_loss[2] != first_loss[0]);
    CHECK(run_kgl(T, "bench --train data/academic.tsv --layers 2 --reps 1 --warmup 0 --no-eval --no-gemm", out,
                  sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "ffn 0, 2 layers, context full") != NULL);
    CHECK(run_kgl(T, "bench --train data/academic.tsv --dropout 0.1", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--dropout") != NULL && strstr(err, "kgl bench --help") != NULL);
    CHECK(run_kgl(T, "bench --train data/academic.tsv --layers 9", out, sizeof out, err, sizeof err) == 2);
}

/* kgl bench's line and JSON through the library, on memory streams, from a
   result filled in by hand: every number the text and JSON carry is one of
   these, in its place; an evaluation and a GEMM not measured are left out
   of the text and null in the JSON. */
TEST(bench_result_written_as_text_and_json)
{
    kgl_bench_spec s;
    kgl_bench_defaults(&s);
    s.model.dim = 384, s.model.heads = 4, s.model.context = KGL_CONTEXT_GRAPH, s.model.neighbours = 0;
    s.model.query_relation = true, s.model.relation_token = true, s.reps = 5, s.warmup = 3, s.eval = false;
    kgl_bench_result r = {.step_ms_median = 207.9, .step_ms_min = 204.5, .step_ms_mean = 208.25, .gemm_gflops = 103.5,
                          .peak_rss_mb = 812, .first_loss = 9.5, .threads = 1, .n_entities = 14541,
                          .n_relations = 237, .n_examples = 544230, .batch = 1024, .params = 6903172, .isa = "avx512"};
    char *text = NULL, *json = NULL;
    size_t text_n = 0, json_n = 0;
    FILE *f = open_memstream(&text, &text_n);
    kgl_bench_result_write(f, &s, &r, "fb.txt");
    fclose(f);
    f = open_memstream(&json, &json_n);
    kgl_bench_result_json(f, &s, &r, "fb.txt");
    fclose(f);
    const char *first = "kgl bench fb.txt: n 14541, d 384, H 4, ffn 0, context graph K 0, query asks the relation, "
                        "the relation a token, batch 1024, 1 thread (avx512, " KGL_PRECISION ")\n";
    CHECK(strncmp(text, first, strlen(first)) == 0);
    CHECK(strstr(text, "  step   median    207.900 ms   min    204.500 ms   mean    208.250 ms   (5 timed, 3 warm-up)\n"));
    CHECK(strstr(text, "  gemm        103.5 GFLOP/s at 1024^3\n") && !strstr(text, "  eval "));
    CHECK(strstr(text, "  memory        812 MB peak resident\n"));
    kgl_json_doc doc;
    char why[256];
    if (CHECK(kgl_json_parse(json, json_n, &doc, why, sizeof why))) {
        const kgl_json *median = kgl_json_get(doc.root, "step_ms_median"), *eval = kgl_json_get(doc.root, "eval_s");
        const kgl_json *params = kgl_json_get(doc.root, "params"), *token = kgl_json_get(doc.root, "relation_token");
        CHECK(median && median->type == KGL_JSON_NUMBER && median->num == 207.9);
        CHECK(eval && eval->type == KGL_JSON_NULL);
        CHECK(params && params->type == KGL_JSON_NUMBER && params->num == 6903172);
        CHECK(token && token->type == KGL_JSON_TRUE);
        kgl_json_free(&doc);
    }
    free(text);
    free(json);
}
