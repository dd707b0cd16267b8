/* cmd_benchmark.c — `kgl benchmark`: the public link-prediction benchmarks
 * (UMLS, Kinship, Nations) with the configurations recorded in data/bench/, beside the
 * published numbers. Each run is a `kgl train` process (its own log and best
 * checkpoint; with --baseline, every dataset and seed also run with
 * --context none appended, the same budget without the layer, in the same
 * list of runs); this command starts them, reads their --json output back
 * (kgl_benchmark_read_run), prints one markdown table per dataset and writes
 * results.json (kgl_benchmark_write_results). The configurations, the
 * published rows and the aggregation are the library's (src/studies/benchmark.c).
 *
 * The runs are jobs of the one runner (kgl_jobs_run: --jobs at a time, no
 * start after a failure or a signal), each job a process it starts and
 * waits for, not kgl_run_train in this process, because a run must fail
 * alone: kgl_die (out of memory, bad input) exits the whole process and
 * would take the other runs and the report down with it, a run's stderr
 * is its own .err file that users read, and a run with --precision f32 is
 * the other binary. What the runner needs of a process it gets through
 * channels meant for it (the library's children, kgl/engine.h: started,
 * followed, passed Ctrl-C, waited for): the steps down a pipe
 * (KGL_PROGRESS_FD, progress_send_steps), the exit status, the --json on
 * stdout. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

static const char help[] =
    "usage: kgl benchmark [--data DIR] [--datasets umls,kinship,nations]\n"
    "                     [--seeds 1,2,3,4,5] [--recipe FILE | --configs DIR] [--out DIR]\n"
    "                     [--jobs N] [--baseline]\n\n"
    "Trains on each dataset with one recipe (default data/bench/recipe.args: kgl\n"
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
    "  --datasets A,B   default umls,kinship,nations\n"
    "  --seeds S,...    default 1,2,3,4,5\n"
    "  --recipe FILE    the recipe for every dataset (default data/bench/recipe.args)\n"
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

/* What runs train: a dataset's options, or (--baseline) the same options
   with --context none appended: the same budget without the layer, a run
   list of its own beside the layer's. The runs are the specs' seeds, spec
   by spec: run k is specs[k / n_seeds] with seed k % n_seeds, so a spec's
   runs are neighbours (the ETA guesses a run not started from them). */
typedef struct run_spec {
    kgl_benchmark_dataset *job;
    bool baseline;
} run_spec;

/* Where a spec's runs keep their results. */
static kgl_benchmark_run *spec_runs(const run_spec *spec)
{
    return spec->baseline ? spec->job->baseline_runs : spec->job->runs;
}

/* "umls seed 3", or "umls seed 3 (--context none)" for a baseline's run. */
static const char *run_label(char *buf, size_t cap, const run_spec *spec, unsigned long long seed)
{
    snprintf(buf, cap, "%s seed %llu%s", spec->job->name, seed, spec->baseline ? " (--context none)" : "");
    return buf;
}

/* The command of one run (spec, seed), argv[0] `self`, in `cmd`
   (kgl_benchmark_run_argv); with `check`, kgl train --check of the same
   options. */
static char **run_argv(kgl_benchmark_command *cmd, const char *self, const run_spec *spec, const char *data,
                       const char *out, unsigned long long seed, int threads, bool check)
{
    return kgl_benchmark_run_argv(cmd, self, spec->job, spec->baseline, data, out, seed, threads, check);
}

/* SIGINT and SIGTERM reach kgl benchmark alone (each run in a process
   group of its own): kgl_children_signal passes each one on to the runs
   going, which stop after their current step as kgl train does (a second
   signal: at once); the runner then starts nothing more, waits for them
   and exits 130. The runs going are one slot per worker of the runner
   (check_options uses slot 0 before it starts). */

/* Every spec's options as its runs get them, through `kgl train --check`
   (kgl train's own parser: no second list of its options here), before any
   run starts: a mistake in a recipe is found now, not when the dataset's
   first run fails after the others trained. kgl train's messages (its data
   warnings too) are shown only when it refuses. Returns 0, or an exit
   status after reporting. */
static int check_options(const char *self, const run_spec *specs, int n_specs, const char *data,
                         const char *out, unsigned long long seed, int threads)
{
    int st = 0;
    for (int j = 0; j < n_specs && !st; j++) {
        kgl_benchmark_command cmd;
        char *said;
        int status;
        kgl_child_outcome ran = kgl_child_capture(run_argv(&cmd, self, &specs[j], data, out, seed, threads, true),
                                                  environ, 0, &said, &status);
        if (ran == KGL_CHILD_NO_PIPE) {
            fprintf(stderr, "kgl benchmark: cannot check the options: %s\n", strerror(errno));
            return EXIT_USAGE;
        }
        int spawn_errno = errno, stop_signal = kgl_children_stop_signal();
        if (stop_signal) {
            fprintf(stderr, "kgl benchmark: interrupted (%s) while checking the options; no run started\n",
                    stop_signal == SIGTERM ? "SIGTERM" : "SIGINT");
            st = EXIT_INTERRUPTED;
        } else if (ran == KGL_CHILD_CANNOT_START) {
            fprintf(stderr, "kgl benchmark: cannot start %s: %s\n", self, strerror(spawn_errno));
            st = EXIT_USAGE;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "kgl benchmark: kgl train refuses the options for %s (%s%s), checked before any run:\n%s",
                    specs[j].job->name, specs[j].job->config_path,
                    specs[j].baseline ? " with --context none, for --baseline" : "", said);
            st = WIFEXITED(status) && WEXITSTATUS(status) == EXIT_USAGE ? EXIT_USAGE : 1;
        }
        free(said);
    }
    return st;
}

/* One run going: its process (in its worker's slot), its stdout (the
   --json result) and stderr (its progress lines and messages) as
   kgl_outfile temporaries, created exclusively like every output (never
   through a link placed at OUT/<dataset>-seed<S>.json), renamed into place
   once it has ended, and the pipe its steps come down
   (progress_send_steps: kgl train's counts, not its text). */
typedef struct run_proc {
    kgl_benchmark_command cmd; /* its command's words */
    pid_t pid;
    int run;          /* spec j, seed s: j * n_seeds + s */
    int slot;         /* its worker's */
    kgl_outfile json, err;
    int steps_fd;     /* the pipe's end it is read from */
    double started;   /* now_seconds() */
} run_proc;

/* Starts run r->run with its steps' pipe on descriptor 3 and
   KGL_PROGRESS_FD=3 in `envp`; false after reporting (or, when a signal
   came first, without a word: nothing started). */
static bool start_run(run_proc *r, const char *self, const run_spec *spec, const char *data, const char *out,
                      unsigned long long seed, int threads, char **envp, progress *line)
{
    char json_path[1200], err_path[1200], why[2800], label[160];
    kgl_benchmark_run_path(json_path, sizeof json_path, out, spec->job->name, seed, spec->baseline, "json");
    kgl_benchmark_run_path(err_path, sizeof err_path, out, spec->job->name, seed, spec->baseline, "err");
    if (!kgl_outfile_open(&r->json, json_path, why, sizeof why)) {
        progress_print(line, "kgl benchmark: %s", why);
        return false;
    }
    if (!kgl_outfile_open(&r->err, err_path, why, sizeof why)) {
        kgl_outfile_discard(&r->json);
        progress_print(line, "kgl benchmark: %s", why);
        return false;
    }
    char **argv = run_argv(&r->cmd, self, spec, data, out, seed, threads, false), command[8192];
    size_t n = (size_t)snprintf(command, sizeof command, "%s", self);
    for (int k = 1; argv[k] && n < sizeof command; k++) n += (size_t)snprintf(command + n, sizeof command - n, " %s", argv[k]);
    r->pid = kgl_child_spawn_steps(argv, fileno(r->json.f), fileno(r->err.f), envp, r->slot, &r->steps_fd);
    int spawn_errno = errno;
    if (r->pid <= 0) {
        if (r->pid < 0) progress_print(line, "kgl benchmark: cannot start %s: %s", self, strerror(spawn_errno));
        kgl_outfile_discard(&r->json);
        kgl_outfile_discard(&r->err);
        return false;
    }
    r->started = now_seconds();
    progress_print(line, "kgl benchmark: %s: %s", run_label(label, sizeof label, spec, seed), command);
    return true;
}

/* Whether a run's end was a signal's doing: killed, or stopped by one
   after its current step (kgl train's 130). */
static bool run_stopped(int status)
{
    return WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_INTERRUPTED);
}

/* A run has ended: its .err is kept whatever happened (the user reads there
   why it failed or where it stopped). Its .json too, unless a signal
   stopped it: it then printed the results of the step it had reached, which
   must not pass for a finished run's, so no .json is written and an older
   one at that name (an earlier benchmark's, beside this run's .csv and
   .safetensors now) is removed. False after reporting a file that could
   not be written. */
static bool keep_run_files(run_proc *r, int status, progress *line)
{
    char why[2800];
    bool ok = kgl_outfile_commit(&r->err, why, sizeof why);
    if (!ok) progress_print(line, "kgl benchmark: %s", why);
    if (run_stopped(status)) {
        bool replaces = r->json.tmp != NULL; /* a regular file's name, not a device's */
        char older[1200];
        snprintf(older, sizeof older, "%s", r->json.path);
        kgl_outfile_discard(&r->json);
        if (replaces) unlink(older);
    } else if (!kgl_outfile_commit(&r->json, why, sizeof why)) {
        progress_print(line, "kgl benchmark: %s", why);
        ok = false;
    }
    return ok;
}

/* The threads of a run: the cores shared by the runs at the same time. */
static int run_threads(int jobs)
{
    int threads = kgl_cores() / jobs;
    return threads < 1 ? 1 : threads;
}

/* One row of kgl's in a dataset's table: `what` (the model), the tie kind
   (o: optimistic) and the test metrics, mean ± std over the seeds. */
static void print_kgl_row(const char *what, const kgl_benchmark_run *runs, int n_seeds, int o)
{
    if (n_seeds > 1)
        printf("| %s, %s ties (mean ± std, %d seeds) |", what, o ? "optimistic" : "realistic", n_seeds);
    else
        printf("| %s, %s ties (seed %llu) |", what, o ? "optimistic" : "realistic", runs[0].seed);
    for (int k = 0; k < KGL_BENCHMARK_METRICS; k++) {
        double mean, sd;
        int digits = strcmp(kgl_benchmark_metrics[k], "mr") == 0 ? 2 : 3; /* a rank, or a fraction */
        kgl_benchmark_mean_std(runs, n_seeds, 1, o, 2, k, &mean, &sd);
        if (n_seeds > 1) printf(" %.*f ± %.*f |", digits, mean, digits, sd);
        else printf(" %.*f |", digits, mean);
    }
    printf("\n");
}

/* Like with like: the published rows are single models, so an ensemble's
   row says it is one, and what a run of it costs. */
static void model_label(char *what, size_t cap, const kgl_benchmark_run *runs, int n_seeds, bool baseline)
{
    const char *none = baseline ? ", no layer" : "", *same = baseline ? " (`--context none`, the same options and steps)" : "";
    if (runs[0].ensemble > 1)
        snprintf(what, cap, "**kgl, ensemble of %ld%s**%s (%ld models trained a run, %.0f s a run)", runs[0].ensemble,
                 none, same, runs[0].ensemble, kgl_benchmark_cost_of(runs, n_seeds).mean_seconds);
    else if (baseline)
        snprintf(what, cap, "**kgl, no layer**%s", same);
    else
        snprintf(what, cap, "**kgl**, one model");
}

/* Below the table of a dataset run with --baseline: what the baseline was,
   and the layer's test means less the baseline's, in MRR and Hits@1. */
static void print_baseline_lines(const kgl_benchmark_dataset *job)
{
    const kgl_benchmark_run *base = job->baseline_runs;
    int n_seeds = job->n_runs;
    double vm, vs;
    kgl_benchmark_mean_std(base, n_seeds, 0, 0, 2, 0, &vm, &vs);
    printf("Baseline: no layer (`--context none`), %ld parameters; the same options and steps with `--context none` "
           "appended; valid MRR %.3f ± %.3f; wall time per run %.1f s on average.\n",
           base[0].params, vm, vs, kgl_benchmark_cost_of(base, n_seeds).mean_seconds);
    double mrr = kgl_benchmark_layer_minus_baseline(job, 0), hits1 = kgl_benchmark_layer_minus_baseline(job, 1);
    printf("Layer − baseline (`--context none`), test, both directions, realistic ties, means over %d seed%s: "
           "MRR %+.3f, Hits@1 %+.3f; the layer's mean is ≥ the baseline's: MRR %s, Hits@1 %s.\n",
           n_seeds, n_seeds == 1 ? "" : "s", mrr, hits1, mrr >= 0 ? "yes" : "no", hits1 >= 0 ? "yes" : "no");
}

/* One dataset's markdown table: kgl's rows (realistic and optimistic ties;
   with --baseline each followed by its baseline's) beside the published
   ones, then the options, the valid MRR and the times. */
static void print_table(const kgl_benchmark_dataset *job, int jobs)
{
    const kgl_benchmark_run *runs = job->runs;
    int n_seeds = job->n_runs;
    printf("\n### %s: filtered test ranking, both directions (%ld queries)\n\n", kgl_benchmark_display_name(job->name),
           runs[0].n_test);
    printf("| model | MRR | Hits@1 | Hits@3 | Hits@10 | MR |\n|---|---:|---:|---:|---:|---:|\n");
    double vm, vs;
    char what[200], base_what[240];
    model_label(what, sizeof what, runs, n_seeds, false);
    model_label(base_what, sizeof base_what, job->baseline_runs, n_seeds, true);
    for (int o = 0; o < 2; o++) {
        print_kgl_row(what, runs, n_seeds, o);
        if (job->baseline) print_kgl_row(base_what, job->baseline_runs, n_seeds, o);
    }
    for (int p = 0; p < kgl_benchmark_n_published; p++) {
        const kgl_benchmark_published *pub = &kgl_benchmark_published_rows[p];
        if (strcmp(pub->dataset, job->name) != 0) continue;
        printf("| %s (%s) |", pub->model, pub->source);
        for (int k = 0; k < KGL_BENCHMARK_METRICS; k++) { /* as published: two digits or three; a dash where not reported */
            if (isnan(pub->v[k])) printf(" — |");
            else printf(" %.*f |", pub->v[k] * 100 == round(pub->v[k] * 100) ? 2 : 3, pub->v[k]);
        }
        printf("\n");
    }
    kgl_benchmark_mean_std(runs, n_seeds, 0, 0, 2, 0, &vm, &vs);
    const char *model = runs[0].no_layer ? "no layer (`--context none`: the readout on the embeddings)" : "one layer",
               *members = runs[0].no_layer ? "models without the layer (`--context none`)" : "one-layer models";
    if (runs[0].ensemble > 1)
        printf("\nkgl: an ensemble of %ld %s (each selected on valid at its own best step), %ld "
               "parameters in all; options (`%s`): `%s`.\n",
               runs[0].ensemble, members, runs[0].params, job->config_path, job->args_text);
    else
        printf("\nkgl: %s, %ld parameters; options (`%s`): `%s`.\n", model, runs[0].params, job->config_path,
               job->args_text);
    kgl_benchmark_cost cost = kgl_benchmark_cost_of(runs, n_seeds);
    printf("Valid MRR (what selected the model) %.3f ± %.3f. Wall time per run %.1f s on average, %.1f s at most "
           "(%d run%s at a time, %d cores, %d thread%s a run); peak resident memory of a run at most %.0f MB.\n",
           vm, vs, cost.mean_seconds, cost.max_seconds, jobs, jobs == 1 ? "" : "s", kgl_cores(), run_threads(jobs),
           run_threads(jobs) == 1 ? "" : "s", cost.peak_mb);
    printf("Per seed: ");
    for (int i = 0; i < n_seeds; i++) {
        const kgl_benchmark_run *r = &runs[i];
        printf("%sseed %llu test MRR %.3f H@1 %.3f (", i ? "; " : "", r->seed, r->m[1][0][2][0], r->m[1][0][2][1]);
        long first, last;
        kgl_benchmark_member_steps(r, &first, &last);
        if (r->n_members > 1)
            printf("the %d members' best valid steps %ld to %ld", r->n_members, first, last);
        else
            printf("best valid at step %ld", first);
        printf(" of %ld, %.1f s)", r->steps, r->seconds);
    }
    printf(".\n");
    if (job->baseline) print_baseline_lines(job);
}

/* Reads OUT/<dataset>-seed<S>[-none].json into r (its seed set); false after reporting. */
static bool read_run(const char *out, const run_spec *spec, kgl_benchmark_run *r)
{
    char path[1200], err[2800];
    kgl_benchmark_run_path(path, sizeof path, out, spec->job->name, r->seed, spec->baseline, "json");
    if (kgl_benchmark_read_run(path, r, err, sizeof err)) return true;
    fprintf(stderr, "kgl benchmark: %s\n", err);
    return false;
}

/* Every file the runs write (OUT/<dataset>-seed<S>[-none].{json,err,csv,
   safetensors} and OUT/results.json) is a file of its own, not a
   configuration or data file they read (cli_files_distinct). */
static bool files_distinct(const run_spec *specs, int n_specs, const unsigned long long *seeds, int n_seeds,
                           const char *data, const char *out, bool recipe)
{
    static const char *const split[3] = {"train", "valid", "test"}, *const ext[4] = {"json", "err", "csv", "safetensors"};
    /* per dataset its configuration, 3 splits and, per spec (its layer's and
       its baseline's), 4 files a seed; results.json */
    static char paths[MAX_DATASETS * (4 + 2 * 4 * KGL_BENCHMARK_MAX_SEEDS) + 1][1200];
    static cli_file files[sizeof paths / sizeof paths[0]];
    int n = 0;
    for (int j = 0; j < n_specs; j++) {
        const kgl_benchmark_dataset *job = specs[j].job;
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

/* A run has ended with `status`: its files kept (keep_run_files), then its
   result read and said, or its failure shown from its .err. Returns 0 (a
   result), -1 (stopped by a signal the benchmark passed on: named in
   `stopped`, a list for the last message), or what the exit status becomes:
   2 for kgl train's 2 (a bad option, bad input), else 1. */
static int end_run(run_proc *r, int status, const run_spec *specs, int n_seeds, const char *out,
                   progress *line, char *stopped, size_t stopped_cap)
{
    const run_spec *spec = &specs[r->run / n_seeds];
    kgl_benchmark_run *res = &spec_runs(spec)[r->run % n_seeds];
    double wall = now_seconds() - r->started;
    char err_path[1200], label[160];
    run_label(label, sizeof label, spec, res->seed);
    snprintf(err_path, sizeof err_path, "%s", r->err.path); /* kept before the commit forgets it */
    bool kept = keep_run_files(r, status, line);
    if (kgl_children_stop_signal() && run_stopped(status)) {
        size_t used = strlen(stopped);
        snprintf(stopped + used, stopped_cap - used, "%s%s", used ? ", " : "", label);
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char why[1400];
        kgl_text text;
        bool shown = kgl_text_open(&text, err_path, why, sizeof why);
        progress_print(line, "kgl benchmark: %s failed (%s):\n%.2000s", label, err_path, shown ? text.buf : why);
        if (shown) kgl_text_close(&text);
        /* a bad option in the .args file is bad input, like any other */
        return WIFEXITED(status) && WEXITSTATUS(status) == EXIT_USAGE ? EXIT_USAGE : 1;
    }
    if (!kept || !read_run(out, spec, res)) return 1;
    res->seconds = wall;
    /* the largest peak resident memory of the runs waited for so far
       (POSIX keeps no per-child figure; Linux reports KiB) */
    struct rusage usage;
    res->peak_mb = getrusage(RUSAGE_CHILDREN, &usage) == 0 ? (double)usage.ru_maxrss / 1024.0 : NAN;
    progress_print(line, "kgl benchmark: %s: test MRR %.3f H@1 %.3f, best valid MRR %.3f at step %ld, %.0f s", label,
                   res->m[1][0][2][0], res->m[1][0][2][1], res->m[0][0][2][0], res->best_step, wall);
    return 0;
}

/* The tables and results.json, once every run has its result. */
static int report_all(const kgl_benchmark_dataset *job, int n_jobs, const char *out, int jobs, bool baseline)
{
    for (int j = 0; j < n_jobs; j++) print_table(&job[j], jobs);
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

/* What the runs share while the runner has them (the jobs' context). */
typedef struct bench_runs {
    const char *self, *data, *out;
    const run_spec *specs;
    const unsigned long long *seeds;
    int n_seeds, jobs;
    char **envp;                      /* the environment with KGL_PROGRESS_FD=3 */
    progress line;
    double shown_done, shown_total;   /* what the line counted last (under the runner's lock) */
    atomic_int spawned, results;      /* runs started; runs with a result */
    atomic_int failed;                /* the status of the first run to fail, in time (0: none) */
    pthread_mutex_t stopped_lock;
    char stopped[4096];               /* the runs a signal stopped, for the last message */
} bench_runs;

/* The runner's progress callback: one line for the whole benchmark, the
   steps of every run (done, and to do: a run that has not said its steps
   counted as another of its dataset, else as the mean run), elapsed time
   and the ETA from the pace of all of it, then the runs done and those
   running, with their steps. The runs are every spec's: a baseline's count
   as the layer's do. */
static void overall_progress(const kgl_jobs_progress *at, void *ctx)
{
    bench_runs *b = ctx;
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
        const run_spec *spec = &b->specs[r / n_seeds];
        n += (size_t)snprintf(text + n, cap - n, "%s %s", shown++ ? "," : ", running",
                              run_label(label, sizeof label, spec, spec_runs(spec)[r % n_seeds].seed));
        if (n < cap && at->job[r].reported)
            n += (size_t)snprintf(text + n, cap - n, " (%ld/%ld)", at->job[r].done, at->job[r].total);
    }
    progress_show(&b->line, text);
}

/* The runner's job: run `run` as a `kgl train` process in its worker's
   slot, followed to its end, its result read. 0, or the exit status it
   makes (1 a run failed, 2 it refused its input): the runner then starts
   no more. A run stopped by a signal is not a failure; the stop does it. */
static int bench_job(kgl_jobs *jobs, int run, int worker, void *ctx)
{
    bench_runs *b = ctx;
    run_proc r = {.run = run, .slot = worker};
    const run_spec *spec = &b->specs[run / b->n_seeds];
    if (!start_run(&r, b->self, spec, b->data, b->out, b->seeds[run % b->n_seeds], run_threads(b->jobs), b->envp,
                   &b->line)) {
        if (kgl_children_stop_signal()) return 0; /* nothing started */
        int none = 0;
        atomic_compare_exchange_strong(&b->failed, &none, 1);
        return 1;
    }
    atomic_fetch_add(&b->spawned, 1);
    /* each line of its steps' pipe is the runner's count of the job; at
       the end its steps are what its last line said, all it did (fewer
       than planned if it stopped early) */
    int status = kgl_child_follow(r.steps_fd, r.slot, jobs, run);
    pthread_mutex_lock(&b->stopped_lock); /* the list of runs stopped */
    int st = end_run(&r, status, b->specs, b->n_seeds, b->out, &b->line, b->stopped, sizeof b->stopped);
    pthread_mutex_unlock(&b->stopped_lock);
    int none = 0;
    if (st > 0) atomic_compare_exchange_strong(&b->failed, &none, st);
    if (st == 0) atomic_fetch_add(&b->results, 1);
    return st > 0 ? st : 0;
}

static bool bench_stop(void *ctx)
{
    (void)ctx;
    return kgl_children_stop_signal() != 0;
}

/* The runs, `jobs` at a time (the runner, kgl_jobs_run), each timed from
   start to exit, then the report. Returns the exit status: 0, 1 a run
   failed, 2 a run refused its input, 130 interrupted (the runs going
   stopped after their step). */
static int run_all(const char *self, const run_spec *specs, int n_specs, kgl_benchmark_dataset *job, int n_jobs,
                   const unsigned long long *seeds, int n_seeds, const char *data, const char *out, int jobs)
{
    int total = n_specs * n_seeds;
    static bench_runs b; /* one per process */
    b = (bench_runs){.self = self, .data = data, .out = out, .specs = specs, .seeds = seeds, .n_seeds = n_seeds,
                     .jobs = jobs, .envp = kgl_environment_with("KGL_PROGRESS_FD=3")};
    pthread_mutex_init(&b.stopped_lock, NULL);
    for (int k = 0; k < total; k++) spec_runs(&specs[k / n_seeds])[k % n_seeds].seed = seeds[k % n_seeds];
    /* The overall line (progress.h): in place on a terminal; elsewhere at
       each tenth of all the steps and at least every KGL_PROGRESS_SECONDS
       (60 by default). The runs' own lines (every --progress line of kgl
       train) are in their .err files. */
    progress_start(&b.line, stderr, isatty(STDERR_FILENO), 0, 0, now_seconds());
    kgl_jobs_spec runner = {.n = total, .at_most = jobs, .run = bench_job, .stop = bench_stop,
                            .progress = overall_progress, .ctx = &b};
    kgl_jobs_run(&runner);
    progress_stop(&b.line);
    free(b.envp);
    pthread_mutex_destroy(&b.stopped_lock);
    int sig = kgl_children_stop_signal(), results = atomic_load(&b.results), spawned = atomic_load(&b.spawned);
    if (sig) {
        fprintf(stderr, "kgl benchmark: interrupted (%s): %d of %d runs finished, their files in %s",
                sig == SIGTERM ? "SIGTERM" : "SIGINT", results, total, out);
        if (*b.stopped)
            fprintf(stderr, "; stopped after their current step: %s (each one's .err says where; no .json: a stopped "
                            "run's results are not a finished run's)", b.stopped);
        fprintf(stderr, "; %d not started; no tables and no results.json\n", total - spawned);
        return EXIT_INTERRUPTED;
    }
    int failed = atomic_load(&b.failed);
    return failed ? failed : report_all(job, n_jobs, out, jobs, n_specs > n_jobs);
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
    const char *datasets = "umls,kinship,nations", *seed_text = "1,2,3,4,5", *recipe = NULL;
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
    if (!configs && !recipe) recipe = "data/bench/recipe.args";
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
    static run_spec specs[2 * MAX_DATASETS];
    int n_specs = 0;
    for (int j = 0; j < n_jobs; j++) {
        specs[n_specs++] = (run_spec){&job[j], false};
        if (baseline) specs[n_specs++] = (run_spec){&job[j], true};
    }
    if (!st && !files_distinct(specs, n_specs, seeds, n_seeds, data, out, recipe != NULL)) st = EXIT_USAGE;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (!st && n <= 0) {
        fprintf(stderr, "kgl benchmark: cannot find its own executable (/proc/self/exe)\n");
        st = EXIT_USAGE;
    }
    if (!st) {
        self[n] = 0;
        cli_on_stop_signals(kgl_children_signal); /* from here on, its children get SIGINT and SIGTERM from it */
        st = check_options(self, specs, n_specs, data, out, seeds[0], run_threads((int)jobs));
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

    st = run_all(self, specs, n_specs, job, n_jobs, seeds, n_seeds, data, out, (int)jobs);
    for (int j = 0; j < n_jobs; j++) kgl_benchmark_dataset_free(&job[j]);
    return st;
}
