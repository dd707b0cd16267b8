/* studies_benchmark_runs.c — a benchmark's runs through the library
 * (kgl_benchmark_check_options, kgl_benchmark_run_all), as a C program
 * linking libkgl calls them: each run a `kgl train` process, its result
 * read back into the dataset's runs, what they say through the caller's
 * callback; a run that fails stops the starts; a refusal of the options
 * is found before any run. */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

static char out[1 << 14], err[1 << 14];

/* What the runner said, line after line. */
typedef struct said {
    char text[1 << 15];
    int messages;
} said;

static void collect(void *ctx, const char *text)
{
    said *s = ctx;
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof s->text - n, "%s\n", text);
    s->messages++;
}

/* DIR/kg/acad (the academic world, one valid and one test triple), DIR/cfg/
   acad.args holding `options` and an empty DIR/bout, DIR = T->tmp/`dir`;
   the dataset opened for `n_seeds` runs (and their baseline's). */
static bool academic_benchmark(test_ctx *T, const char *dir, const char *options, int n_seeds, bool baseline,
                               kgl_benchmark_dataset *d, char *root, size_t cap)
{
    snprintf(root, cap, "%s/%s", T->tmp, dir);
    char cmd[8192], cfg[1200], kg[1200];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/kg/acad %s/cfg %s/bout && grep -v '^#' data/academic.tsv > %s/kg/acad/train.txt && "
             "printf 'carol\\tadvises\\tdave\\n' > %s/kg/acad/valid.txt && "
             "printf 'dave\\tabout\\tnesy\\n' > %s/kg/acad/test.txt && printf -- '%s\\n' > %s/cfg/acad.args",
             root, root, root, root, root, root, options, root);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return false;
    snprintf(cfg, sizeof cfg, "%s/cfg", root);
    snprintf(kg, sizeof kg, "%s/kg", root);
    char why[2048];
    kgl_benchmark_config_status cs = kgl_benchmark_dataset_open(d, "acad", NULL, cfg, kg, n_seeds, baseline, why,
                                                                sizeof why);
    if (!CHECK(cs == KGL_BENCHMARK_CONFIG_OK)) {
        printf("    %s\n", why);
        kgl_benchmark_dataset_free(d);
        return false;
    }
    return true;
}

static bool exists(const char *root, const char *name)
{
    char path[2400];
    snprintf(path, sizeof path, "%s/%s", root, name);
    return access(path, F_OK) == 0;
}

/* Two seeds and their baseline, one run at a time: four `kgl train`
   processes whose results land in runs[] and baseline_runs[], each said
   when it starts and ends, their files in OUT. */
TEST(benchmark_runner_runs_each_run_and_reads_its_result)
{
    static kgl_benchmark_dataset d;
    char root[1200], kg[1300], bout[1300];
    if (!academic_benchmark(T, "runs", "--dim 8 --steps 20 --eval-every 10", 2, true, &d, root, sizeof root)) return;
    snprintf(kg, sizeof kg, "%s/kg", root);
    snprintf(bout, sizeof bout, "%s/bout", root);
    kgl_benchmark_spec specs[2] = {{&d, false}, {&d, true}};
    const unsigned long long seeds[2] = {1, 2};
    static said s;
    kgl_benchmark_runner b = {.program = T->kgl, .data = kg, .out = bout, .specs = specs, .n_specs = 2,
                              .seeds = seeds, .n_seeds = 2, .jobs = 1, .threads = 1, .say = collect, .ctx = &s};
    CHECK(kgl_benchmark_check_options(&b) == KGL_BENCHMARK_DONE);
    CHECK(s.messages == 0); /* the check says nothing when kgl train agrees */
    static kgl_benchmark_outcome ran;
    CHECK(kgl_benchmark_run_all(&b, &ran) == KGL_BENCHMARK_DONE);
    CHECK(ran.total == 4 && ran.spawned == 4 && ran.results == 4 && ran.stop_signal == 0 && !*ran.stopped);
    for (int k = 0; k < 2; k++) {
        const kgl_benchmark_run *layer = &d.runs[k], *none = &d.baseline_runs[k];
        CHECK(layer->seed == seeds[k] && none->seed == seeds[k]);
        CHECK(layer->steps == 20 && layer->best_step >= 10 && layer->best_step <= 20);
        /* the test MRR, both directions, realistic ties: a fraction (NaN fails) */
        CHECK(layer->m[1][0][2][0] > 0 && layer->m[1][0][2][0] <= 1);
        CHECK(none->m[1][0][2][0] > 0 && none->m[1][0][2][0] <= 1);
        CHECK(!layer->no_layer && none->no_layer);
        CHECK(layer->seconds > 0 && none->seconds > 0);
    }
    CHECK(exists(bout, "acad-seed1.json") && exists(bout, "acad-seed2.err") && exists(bout, "acad-seed2-none.json") &&
          exists(bout, "acad-seed1-none.safetensors"));
    if (!CHECK(s.messages == 8 && strstr(s.text, "acad seed 1: ") && strstr(s.text, " train --train ") &&
               strstr(s.text, "acad seed 2 (--context none): test MRR ")))
        printf("    %s\n", s.text);
    kgl_benchmark_dataset_free(&d);
}

/* A stand-in for kgl: agrees to every --check, then fails each run with
   status `status`, after a line on its stderr. */
static const char *failing_program(test_ctx *T, int slot, const char *name, int status)
{
    char text[256];
    int n = snprintf(text, sizeof text,
                     "#!/bin/sh\ncase \"$*\" in *--check*) exit 0 ;; esac\necho 'it went wrong' >&2\nexit %d\n", status);
    const char *path = write_tmp(T, slot, name, text, (size_t)n);
    chmod(path, 0755);
    return path;
}

/* A run that fails: its .err kept and shown, no .json read, no run
   started after it; kgl train's 2 (bad input) is REFUSED, another
   failure RUN_FAILED. */
TEST(benchmark_runner_stops_starting_after_a_failed_run)
{
    static const int status[2] = {2, 1}, expected[2] = {KGL_BENCHMARK_REFUSED, KGL_BENCHMARK_RUN_FAILED};
    for (int k = 0; k < 2; k++) {
        static kgl_benchmark_dataset d;
        char root[1200], kg[1300], bout[1300], dir[16], name[32];
        snprintf(dir, sizeof dir, "fail%d", k);
        if (!academic_benchmark(T, dir, "--dim 8 --steps 20 --eval-every 10", 3, false, &d, root, sizeof root)) return;
        snprintf(kg, sizeof kg, "%s/kg", root);
        snprintf(bout, sizeof bout, "%s/bout", root);
        snprintf(name, sizeof name, "fails%d.sh", k);
        kgl_benchmark_spec spec = {&d, false};
        const unsigned long long seeds[3] = {1, 2, 3};
        static said s;
        s = (said){0};
        kgl_benchmark_runner b = {.program = failing_program(T, k, name, status[k]), .data = kg, .out = bout,
                                  .specs = &spec, .n_specs = 1, .seeds = seeds, .n_seeds = 3, .jobs = 1,
                                  .threads = 1, .say = collect, .ctx = &s};
        CHECK(kgl_benchmark_check_options(&b) == KGL_BENCHMARK_DONE);
        static kgl_benchmark_outcome ran;
        CHECK(kgl_benchmark_run_all(&b, &ran) == expected[k]);
        CHECK(ran.total == 3 && ran.spawned == 1 && ran.results == 0);
        CHECK(exists(bout, "acad-seed1.err") && !exists(bout, "acad-seed2.err"));
        if (!CHECK(strstr(s.text, "acad seed 1 failed (") && strstr(s.text, "acad-seed1.err):\nit went wrong")))
            printf("    %s\n", s.text);
        kgl_benchmark_dataset_free(&d);
    }
}

/* Options kgl train refuses: found by the check, before any run, its
   message said after the line naming the dataset and its file. */
TEST(benchmark_runner_check_says_kgl_trains_refusal)
{
    static kgl_benchmark_dataset d;
    char root[1200], kg[1300], bout[1300];
    if (!academic_benchmark(T, "check", "--dim 8 --steps 20 --eval-every 10 --no-such-option", 1, false, &d, root,
                            sizeof root))
        return;
    snprintf(kg, sizeof kg, "%s/kg", root);
    snprintf(bout, sizeof bout, "%s/bout", root);
    kgl_benchmark_spec spec = {&d, false};
    const unsigned long long seed = 1;
    static said s;
    kgl_benchmark_runner b = {.program = T->kgl, .data = kg, .out = bout, .specs = &spec, .n_specs = 1,
                              .seeds = &seed, .n_seeds = 1, .jobs = 1, .threads = 1, .say = collect, .ctx = &s};
    CHECK(kgl_benchmark_check_options(&b) == KGL_BENCHMARK_REFUSED);
    if (!CHECK(s.messages == 1 && strstr(s.text, "kgl train refuses the options for acad (") &&
               strstr(s.text, "acad.args), checked before any run:\nkgl train: ") &&
               strstr(s.text, "--no-such-option")))
        printf("    %s\n", s.text);
    CHECK(!exists(bout, "acad-seed1.err"));
    kgl_benchmark_dataset_free(&d);
}

/* A run made by hand: every metric of both splits, both tie kinds and
   directions set to the same five numbers (halves and quarters, exact). */
static kgl_benchmark_run table_run(unsigned long long seed, double valid_mrr, double mrr, double hits1)
{
    kgl_benchmark_run r = {.seed = seed, .n_test = 402, .seconds = 1.5, .peak_mb = 10, .best_step = 20, .steps = 40,
                           .params = 1264, .ensemble = 1, .layers = 1, .n_members = 1, .member_best_step = {20}};
    const double test[KGL_BENCHMARK_METRICS] = {mrr, hits1, 0.75, 1, 2};
    for (int o = 0; o < 2; o++)
        for (int d = 0; d < 3; d++)
            for (int k = 0; k < KGL_BENCHMARK_METRICS; k++) {
                r.m[1][o][d][k] = test[k];
                r.m[0][o][d][k] = k == 0 ? valid_mrr : test[k];
            }
    return r;
}

/* One dataset's markdown table as kgl benchmark prints it
   (kgl_benchmark_table_write), written to a memory stream for a dataset
   made by hand with two seeds and --baseline: the caption, kgl's rows and
   the baseline's, a published row, the options, the times, each seed, and
   the layer less the baseline. */
TEST(benchmark_table_names_each_number)
{
    static kgl_benchmark_dataset d; /* large: not on the stack */
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "nations");
    snprintf(d.config_path, sizeof d.config_path, "cfg/nations.args");
    snprintf(d.args_text, sizeof d.args_text, "--dim 8 --eval-every 10");
    d.n_runs = 2, d.baseline = true;
    for (int i = 0; i < 2; i++) {
        d.runs[i] = table_run(1 + i, 0.375, 0.5, 0.25);
        d.baseline_runs[i] = table_run(1 + i, 0.25, 0.25, 0.125);
        d.baseline_runs[i].no_layer = true, d.baseline_runs[i].params = 992;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!CHECK(f != NULL)) return;
    kgl_benchmark_table_write(f, &d, 1, 2);
    fclose(f);
    const char *want[] = {
        "\n### Nations: filtered test ranking, both directions (402 queries)\n\n"
        "| model | MRR | Hits@1 | Hits@3 | Hits@10 | MR |\n|---|---:|---:|---:|---:|---:|\n"
        "| **kgl**, one model, realistic ties (mean ± std, 2 seeds) | 0.500 ± 0.000 | 0.250 ± 0.000 | 0.750 ± 0.000 | "
        "1.000 ± 0.000 | 2.00 ± 0.00 |\n"
        "| **kgl, no layer** (`--context none`, the same options and steps), realistic ties (mean ± std, 2 seeds) | "
        "0.250 ± 0.000 | 0.125 ± 0.000 |",
        "\n| **kgl**, one model, optimistic ties (mean ± std, 2 seeds) | 0.500 ± 0.000 |",
        "\n| ConvE (Dettmers et al. 2018) | 0.82 | 0.72 | 0.88 | 1.00 | — |\n",
        "\nkgl: one layer, 1264 parameters; options (`cfg/nations.args`): `--dim 8 --eval-every 10`.\n",
        "Valid MRR (what selected the model) 0.375 ± 0.000. Wall time per run 1.5 s on average, 1.5 s at most (1 run "
        "at a time, ",
        "2 threads a run); peak resident memory of a run at most 10 MB.\n",
        "Per seed: seed 1 test MRR 0.500 H@1 0.250 (best valid at step 20 of 40, 1.5 s); seed 2 test MRR 0.500",
        "Baseline: no layer (`--context none`), 992 parameters;",
        "Layer − baseline (`--context none`), test, both directions, realistic ties, means over 2 seeds: MRR +0.250, "
        "Hits@1 +0.125; the layer's mean is ≥ the baseline's: MRR yes, Hits@1 yes.\n",
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        if (!CHECK(text && strstr(text, want[k]) != NULL)) printf("    missing '%s' in\n%s\n", want[k], text);
    free(text);
}
