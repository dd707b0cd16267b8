/* cmd_benchmark.c — `kgl benchmark`: the public link-prediction benchmarks
 * (UMLS, Kinship, Nations, and the mid-size Family) with the configurations recorded in
 * data/bench/, beside the
 * published numbers. Each run is a `kgl train` process (its own log and best
 * checkpoint; with --baseline, every dataset and seed also run with
 * --context none appended, the same budget without the layer, in the same
 * list of runs); this command starts them, reads their --json output back
 * (kgl_benchmark_read_run), prints one markdown table per dataset
 * (kgl_benchmark_table_write, src/studies/benchmark_table.c) and writes
 * results.json (kgl_benchmark_write_results). The configurations, the
 * published rows and the aggregation are the library's (src/studies/benchmark.c).
 *
 * The runs are the library's too (kgl_benchmark_check_options and
 * kgl_benchmark_run_all, src/studies/benchmark_runs.c: each a `kgl train`
 * process, --jobs at a time); this file says what they say through the
 * one progress line (progress.h) and draws the line from the runner's
 * counts. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

static const char help[] =
    "usage: kgl benchmark [--data DIR] [--datasets umls,kinship,nations,family]\n"
    "                     [--seeds 1,2,3,4,5] [--recipe FILE | --configs DIR] [--out DIR]\n"
    "                     [--jobs N] [--baseline]\n\n"
    "Trains on each dataset with one recipe (default data/bench/auto.args: kgl\n"
    "train --recipe FILE, its formulas computed from each dataset), or with the\n"
    "options in CONFIGS/<dataset>.args (given as --recipe too, so formulas work\n"
    "there as well), once per seed (the options must include\n"
    "--eval-every K: model selection on the valid split), each run a `kgl train`\n"
    "process writing\n"
    "OUT/<dataset>-seed<S>.{json,csv,safetensors} (its output, its training log,\n"
    "the best checkpoint). Then prints one markdown table per\n"
    "dataset: the filtered test MRR, Hits@1/3/10 and mean rank, both directions (mean\n"
    "and standard deviation over the seeds; realistic and optimistic tie ranks)\n"
    "beside the published rows, and writes OUT/results.json.\n\n"
    "  --data DIR       holds <dataset>/{train,valid,test}.txt (default data/kg)\n"
    "  --datasets A,B   default umls,kinship,nations,family with the default\n"
    "                   recipe; with --recipe or --configs the first three\n"
    "                   (Family, 3,007 entities, needs a recipe that sizes itself)\n"
    "  --seeds S,...    default 1,2,3,4,5\n"
    "  --recipe FILE    the recipe for every dataset (default data/bench/auto.args,\n"
    "                   the recipe that sizes itself: recipe.args on a small graph)\n"
    "  --configs DIR    per-dataset options DIR/<dataset>.args instead of a recipe\n"
    "                   (data/bench holds the hand-tuned umls.args, kinship.args\n"
    "                   and nations.args; data/bench/baseline the same graphs\n"
    "                   without the layer, --context none)\n"
    "  --out DIR        default build/benchmark\n"
    "  --jobs N         runs at the same time (default 1: each run has the machine)\n"
    "  --baseline       also run every dataset and seed with --context none appended\n"
    "                   (the readout on the embeddings, no layer) at the same budget:\n"
    "                   the same options and steps, a run of its own writing\n"
    "                   OUT/<dataset>-seed<S>-none.{json,csv,safetensors}. Its rows\n"
    "                   go right below the layer's, then a line with the difference\n"
    "                   of the test means (layer - baseline) in MRR and Hits@1 and\n"
    "                   whether the layer's is >= the baseline's; results.json gets\n"
    "                   \"baseline\":{...} under each dataset. Refused when the\n"
    "                   options already say --context none\n"
    "While it runs, one line on stderr gives the steps of all the runs, the time\n"
    "elapsed and an ETA (redrawn on a terminal, else at each tenth and every\n"
    "KGL_PROGRESS_SECONDS, default 60); each run's own lines are in OUT/*.err.\n"
    "Before any run, each dataset's options (and, with --baseline, them with\n"
    "--context none) go through `kgl train --check`.\n"
    "Ctrl-C or SIGTERM is passed on to the runs going, which stop after their\n"
    "current step (a second one: at once); a stopped run keeps its .err, not its\n"
    ".json, and no results.json is written.\n"
    "exit status: 0 done, 1 a run failed, 2 bad arguments, missing files or a bad option\n"
    "in a configuration (kgl train's message is shown), 130 interrupted\n";

#define MAX_DATASETS 8

/* The threads of a run: the cores shared by the runs at the same time. */
static int run_threads(int jobs)
{
    int threads = kgl_cores() / jobs;
    return threads < 1 ? 1 : threads;
}

/* Every file the runs write (OUT/<dataset>-seed<S>[-none].{json,err,csv,
   safetensors} and OUT/results.json) is a file of its own, not a
   configuration or data file they read (cli_files_distinct). */
static bool files_distinct(const kgl_benchmark_spec *specs, int n_specs, const unsigned long long *seeds, int n_seeds,
                           const char *data, const char *out, bool recipe)
{
    static const char *const split[3] = {"train", "valid", "test"}, *const ext[4] = {"json", "err", "csv", "safetensors"};
    /* per dataset its configuration, 3 splits and, per spec (its layer's and
       its baseline's), 4 files a seed; results.json */
    static char paths[MAX_DATASETS * (4 + 2 * 4 * KGL_BENCHMARK_MAX_SEEDS) + 1][1200];
    static cli_file files[sizeof paths / sizeof paths[0]];
    int n = 0;
    for (int j = 0; j < n_specs; j++) {
        const kgl_benchmark_dataset *job = specs[j].dataset;
        if (!specs[j].baseline) { /* a dataset's first spec: what it reads */
            files[n++] = (cli_file){recipe ? "--recipe" : "--configs", job->config_path, false, NULL};
            for (int s = 0; s < 3; s++, n++) {
                snprintf(paths[n], sizeof paths[n], "%s/%s/%s.txt", data, job->name, split[s]);
                files[n] = (cli_file){"--data", paths[n], false, NULL};
            }
        }
        for (int i = 0; i < n_seeds; i++)
            for (int e = 0; e < 4; e++, n++) {
                kgl_benchmark_run_path(paths[n], sizeof paths[n], out, job->name, seeds[i], specs[j].baseline, ext[e]);
                files[n] = (cli_file){"--out", paths[n], true, NULL};
            }
    }
    snprintf(paths[n], sizeof paths[n], "%s/results.json", out);
    files[n] = (cli_file){"--out", paths[n], true, NULL};
    return cli_files_distinct("benchmark", files, n + 1);
}

/* "1,2,3" → seeds */
static int parse_seeds(cli_args *a, const char *text, unsigned long long *seeds)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(p, &end, 10);
        if (end == p || errno || (*end && *end != ',') || *p == '-' || n >= KGL_BENCHMARK_MAX_SEEDS) {
            cli_usage_error(a, "--seeds expects up to %d whole numbers separated by commas, got '%s'",
                            KGL_BENCHMARK_MAX_SEEDS, text);
            return -1;
        }
        seeds[n++] = s;
        p = *end ? end + 1 : end;
    }
    if (n == 0) cli_usage_error(a, "--seeds is empty");
    return n ? n : -1;
}

/* --out names a folder, made with its parents when missing: refused
   before anything else when it, or a folder it would be made in, is a file
   (it used to fail only at the first run, "cannot start kgl: Not a
   directory"). */
static bool out_folder_ok(const char *out)
{
    char prefix[1200];
    size_t len = strlen(out);
    if (len == 0 || len >= sizeof prefix) {
        fprintf(stderr, "kgl benchmark: --out: the path is %s\n", len ? "too long" : "empty");
        return false;
    }
    for (size_t k = 1; k <= len; k++) {
        if (out[k] != '/' && out[k] != 0) continue;
        memcpy(prefix, out, k);
        prefix[k] = 0;
        struct stat st;
        if (stat(prefix, &st) != 0 || S_ISDIR(st.st_mode)) continue;
        if (k == len)
            fprintf(stderr, "kgl benchmark: --out %s is a file; --out must be a folder (it is made if missing)\n", out);
        else
            fprintf(stderr, "kgl benchmark: --out %s: %s is a file, not a folder; --out must be a folder (it is made "
                            "if missing)\n", out, prefix);
        return false;
    }
    return true;
}

/* The tables and results.json, once every run has its result. */
static int report_all(const kgl_benchmark_dataset *job, int n_jobs, const char *out, int jobs, bool baseline)
{
    for (int j = 0; j < n_jobs; j++) kgl_benchmark_table_write(stdout, &job[j], jobs, run_threads(jobs));
    char path[1200], err[1400];
    snprintf(path, sizeof path, "%s/results.json", out);
    if (!kgl_benchmark_write_results(path, job, n_jobs, err, sizeof err)) {
        fprintf(stderr, "kgl benchmark: %s\n", err);
        return 1;
    }
    printf("\nwritten: %s/results.json; per run: %s/<dataset>-seed<S>%s.{json,csv,safetensors}\n", out, out,
           baseline ? "[-none]" : "");
    return 0;
}

/* The one line of kgl benchmark while its runs go, and what it counted
   last (under the runner's lock). */
typedef struct bench_line {
    progress line;
    const kgl_benchmark_spec *specs;
    int n_seeds;
    double shown_done, shown_total;
} bench_line;

/* What the runs say before the line starts (kgl_benchmark_check_options). */
static void say_plain(void *ctx, const char *text)
{
    (void)ctx;
    fprintf(stderr, "kgl benchmark: %s\n", text);
}

/* What the runs say while they go: lines of their own above the line. */
static void say_on_line(void *ctx, const char *text)
{
    bench_line *b = ctx;
    progress_print(&b->line, "kgl benchmark: %s", text);
}

/* The runner's progress callback: one line for the whole benchmark, the
   steps of every run (done, and to do: a run that has not said its steps
   counted as another of its dataset, else as the mean run), elapsed time
   and the ETA from the pace of all of it, then the runs done and those
   running, with their steps. The runs are every spec's: a baseline's count
   as the layer's do. */
static void overall_progress(const kgl_jobs_progress *at, void *ctx)
{
    bench_line *b = ctx;
    int n_seeds = b->n_seeds;
    kgl_benchmark_steps steps = kgl_benchmark_steps_of(at, n_seeds);
    double d = steps.done, t = steps.total;
    bool guessed = steps.guessed, known = steps.known > 0;
    progress_at pa;
    bool due = progress_due(&b->line, d - b->shown_done, t - b->shown_total, at->jobs_done == at->jobs,
                            now_seconds(), &pa);
    b->shown_done = d, b->shown_total = t;
    if (!due) return;
    char text[PROGRESS_LINE_MAX], times[128];
    size_t n = 0, cap = sizeof text;
    progress_times(&pa, times, sizeof times);
    if (known)
        n += (size_t)snprintf(text, cap, "kgl benchmark: %.0f/%s%.0f steps, %s; %d of %d runs done", d,
                              guessed ? "~" : "", t, times, at->jobs_done, at->jobs);
    else /* no run has said its steps yet */
        n += (size_t)snprintf(text, cap, "kgl benchmark: %s; %d of %d runs done", times, at->jobs_done, at->jobs);
    for (int r = 0, shown = 0; r < at->jobs && n < cap; r++) {
        if (!at->job[r].running) continue;
        char label[160];
        const kgl_benchmark_spec *spec = &b->specs[r / n_seeds];
        n += (size_t)snprintf(text + n, cap - n, "%s %s", shown++ ? "," : ", running",
                              kgl_benchmark_run_label(label, sizeof label, spec,
                                                      kgl_benchmark_spec_runs(spec)[r % n_seeds].seed));
        if (n < cap && at->job[r].reported)
            n += (size_t)snprintf(text + n, cap - n, " (%ld/%ld)", at->job[r].done, at->job[r].total);
    }
    progress_show(&b->line, text);
}

/* The runs (kgl_benchmark_run_all, `jobs` at a time), said on the line,
   then the report. Returns the exit status: 0, 1 a run failed, 2 a run
   refused its input, 130 interrupted (the runs going stopped after their
   step). */
static int run_all(kgl_benchmark_runner *runner, kgl_benchmark_dataset *job, int n_jobs)
{
    static bench_line b; /* one per process */
    b = (bench_line){.specs = runner->specs, .n_seeds = runner->n_seeds};
    runner->say = say_on_line, runner->progress = overall_progress, runner->ctx = &b;
    /* The overall line (progress.h): in place on a terminal; elsewhere at
       each tenth of all the steps and at least every KGL_PROGRESS_SECONDS
       (60 by default). The runs' own lines (every --progress line of kgl
       train) are in their .err files. */
    progress_start(&b.line, stderr, isatty(STDERR_FILENO), 0, 0, now_seconds());
    static kgl_benchmark_outcome ran; /* 4 KB: one per process */
    int st = kgl_benchmark_run_all(runner, &ran);
    progress_stop(&b.line);
    const char *out = runner->out;
    if (ran.stop_signal) {
        fprintf(stderr, "kgl benchmark: interrupted (%s): %d of %d runs finished, their files in %s",
                ran.stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", ran.results, ran.total, out);
        if (*ran.stopped)
            fprintf(stderr, "; stopped after their current step: %s (each one's .err says where; no .json: a stopped "
                            "run's results are not a finished run's)", ran.stopped);
        fprintf(stderr, "; %d not started; no tables and no results.json\n", ran.total - ran.spawned);
        return EXIT_INTERRUPTED;
    }
    return st ? st : report_all(job, n_jobs, out, runner->jobs, runner->n_specs > n_jobs);
}

/* A dataset's options (its recipe, or CONFIGS/<name>.args) read and
   checked, and its three files found (kgl_benchmark_dataset_open); false
   after reporting (*job is to be freed either way). */
static bool load_dataset(kgl_benchmark_dataset *job, const char *name, const char *recipe, const char *configs,
                         const char *data, int n_seeds, bool baseline)
{
    char err[1400];
    /* the library refuses it too; here the message names the option */
    if (strlen(configs) + 1 + strlen(name) + 5 >= sizeof job->config_path) {
        fprintf(stderr, "kgl benchmark: --configs path too long\n");
        return false;
    }
    kgl_benchmark_config_status cs =
        kgl_benchmark_dataset_open(job, name, recipe, configs, data, n_seeds, baseline, err, sizeof err);
    if (cs == KGL_BENCHMARK_CONFIG_INVALID) fprintf(stderr, "%s\n", err);
    else if (cs == KGL_BENCHMARK_CONFIG_UNREADABLE) fprintf(stderr, "kgl benchmark: %s\n", err);
    else if (cs == KGL_BENCHMARK_DATA_UNREADABLE)
        fprintf(stderr, "kgl benchmark: %s\n(the data folder is %s; give another with --data DIR, or KG_DATA=DIR for "
                        "make benchmark)\n", err, data);
    return cs == KGL_BENCHMARK_CONFIG_OK;
}

int cmd_benchmark(int argc, char **argv)
{
    const char *data = "data/kg", *configs = NULL, *out = "build/benchmark";
    const char *datasets = NULL, *seed_text = "1,2,3,4,5", *recipe = NULL;
    long jobs = 1;
    bool baseline = false;
    cli_args a;
    cli_init(&a, "benchmark", argc, argv);
    a.help = help;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (cli_is(&a, "--data")) {
            if (!(data = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--datasets")) {
            if (!(datasets = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--seeds")) {
            if (!(seed_text = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--configs")) {
            if (!(configs = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--recipe")) {
            if (!(recipe = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--out")) {
            if (!(out = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--jobs")) {
            if (!cli_int(&a, 1, 64, &jobs)) return EXIT_USAGE;
        } else if (cli_is(&a, "--baseline")) {
            baseline = true;
        } else {
            return cli_unknown(&a);
        }
    }
    if (configs && recipe) return cli_usage_error(&a, "--recipe and --configs: give one");
    if (!out_folder_ok(out)) return EXIT_USAGE;
    /* Family (3,007 entities) needs a recipe that sizes itself: the default one;
       the hand-tuned files and the other recipes are for the three small graphs */
    if (!datasets) datasets = configs || recipe ? "umls,kinship,nations" : "umls,kinship,nations,family";
    if (!configs && !recipe) recipe = "data/bench/auto.args";
    if (!configs) configs = "";
    unsigned long long seeds[KGL_BENCHMARK_MAX_SEEDS];
    int n_seeds = parse_seeds(&a, seed_text, seeds);
    if (n_seeds < 0) return EXIT_USAGE;

    static kgl_benchmark_dataset job[MAX_DATASETS];
    const char *names[MAX_DATASETS];
    int n_jobs = 0, st = 0;
    char *list = kgl_strdup(datasets);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        if (n_jobs == MAX_DATASETS || strlen(tok) >= sizeof job[0].name || strchr(tok, '/')) {
            free(list);
            return cli_usage_error(&a, "--datasets expects up to %d names separated by commas", MAX_DATASETS);
        }
        names[n_jobs++] = tok;
    }
    if (n_jobs == 0) {
        free(list);
        return cli_usage_error(&a, "--datasets is empty");
    }
    /* everything is checked before the first run starts */
    int n_loaded = 0;
    for (int j = 0; j < n_jobs && !st; j++, n_loaded++)
        if (!load_dataset(&job[j], names[j], recipe, configs, data, n_seeds, baseline)) st = EXIT_USAGE;
    free(list);
    static kgl_benchmark_spec specs[2 * MAX_DATASETS];
    int n_specs = 0;
    for (int j = 0; j < n_jobs; j++) {
        specs[n_specs++] = (kgl_benchmark_spec){&job[j], false};
        if (baseline) specs[n_specs++] = (kgl_benchmark_spec){&job[j], true};
    }
    if (!st && !files_distinct(specs, n_specs, seeds, n_seeds, data, out, recipe != NULL)) st = EXIT_USAGE;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (!st && n <= 0) {
        fprintf(stderr, "kgl benchmark: cannot find its own executable (/proc/self/exe)\n");
        st = EXIT_USAGE;
    }
    kgl_benchmark_runner runner = {.program = self, .data = data, .out = out, .specs = specs, .n_specs = n_specs,
                                   .seeds = seeds, .n_seeds = n_seeds, .jobs = (int)jobs,
                                   .threads = run_threads((int)jobs), .say = say_plain};
    if (!st) {
        self[n] = 0;
        /* from here on, its children get SIGINT and SIGTERM from it: each
           run in a process group of its own, they reach kgl benchmark alone,
           which passes them on (kgl_children_signal) */
        cli_on_stop_signals(kgl_children_signal);
        st = kgl_benchmark_check_options(&runner);
    }
    if (!st) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "%s", out);
        for (char *p = cmd + 1; *p; p++) /* mkdir -p */
            if (*p == '/') {
                *p = 0;
                mkdir(cmd, 0755);
                *p = '/';
            }
        if (mkdir(cmd, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "kgl benchmark: cannot create %s: %s\n", out, strerror(errno));
            st = EXIT_USAGE;
        }
    }
    if (st) {
        for (int j = 0; j < n_loaded; j++) kgl_benchmark_dataset_free(&job[j]);
        return st;
    }

    st = run_all(&runner, job, n_jobs);
    for (int j = 0; j < n_jobs; j++) kgl_benchmark_dataset_free(&job[j]);
    return st;
}
