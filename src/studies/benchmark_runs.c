/* benchmark_runs.c — the runs of a benchmark (`kgl benchmark`): each one a
 * `kgl train` process, started, followed and waited for by the one runner
 * (kgl_jobs_run: `jobs` at a time, no start after a failure or a signal),
 * its --json result read back, its files kept or discarded by how it
 * ended. The command that calls it parses and prints: what the runs say
 * comes to it through its `say` callback, their steps through `progress`.
 *
 * A run is a process of its own, not kgl_run_train in this one, because a
 * run must fail alone: kgl_die (out of memory, bad input) exits the whole
 * process and would take the other runs and the report down with it, a
 * run's stderr is its own .err file that users read, and a run with
 * --precision f32 is the other binary. What the runner needs of a process
 * it gets through channels meant for it (the library's children,
 * kgl/engine.h: started, followed, passed Ctrl-C, waited for): the steps
 * down a pipe (KGL_PROGRESS_FD), the exit status, the --json on stdout. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kgl/studies.h"
#include "engine/internal.h"

extern char **environ;

kgl_benchmark_run *kgl_benchmark_spec_runs(const kgl_benchmark_spec *spec)
{
    return spec->baseline ? spec->dataset->baseline_runs : spec->dataset->runs;
}

const char *kgl_benchmark_run_label(char *buf, size_t cap, const kgl_benchmark_spec *spec, unsigned long long seed)
{
    snprintf(buf, cap, "%s seed %llu%s", spec->dataset->name, seed, spec->baseline ? " (--context none)" : "");
    return buf;
}

/* A message to the runner's caller, formatted (cut at 4 KB). */
static void say(const kgl_benchmark_runner *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const kgl_benchmark_runner *b, const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    b->say(b->ctx, text);
}

/* The command of one run (spec, seed) in `cmd`; with `check`, kgl train
   --check of the same options. */
static char **run_argv(kgl_benchmark_command *cmd, const kgl_benchmark_runner *b, const kgl_benchmark_spec *spec,
                       unsigned long long seed, bool check)
{
    return kgl_benchmark_run_argv(cmd, b->program, spec->dataset, spec->baseline, b->data, b->out, seed, b->threads,
                                  check);
}

/* kgl train's refusal, said whole: its messages (said) after ours, their
   last newline the caller's. */
static void say_refusal(const kgl_benchmark_runner *b, const kgl_benchmark_spec *spec, const char *said)
{
    const kgl_benchmark_dataset *d = spec->dataset;
    size_t n = strlen(said);
    if (n && said[n - 1] == '\n') n--;
    size_t cap = n + strlen(d->name) + strlen(d->config_path) + 200;
    char *text = kgl_xmalloc(cap);
    snprintf(text, cap, "kgl train refuses the options for %s (%s%s), checked before any run:%s%.*s", d->name,
             d->config_path, spec->baseline ? " with --context none, for --baseline" : "", *said ? "\n" : "", (int)n,
             said);
    b->say(b->ctx, text);
    free(text);
}

/* A recipe's line in kgl train --check's messages (KGL_RECIPE_SAID … its
   counts KGL_RECIPE_SAID_OPTIONS OPTIONS, at the start of a line) gives the
   options it computed for the dataset: kept for the table, which would
   otherwise show every guarded line of a recipe that sizes itself. A run
   without the line leaves chosen_text empty. */
static void keep_chosen_options(kgl_benchmark_dataset *d, const char *said)
{
    const char *at = said;
    while ((at = strstr(at, KGL_RECIPE_SAID)) != NULL && at != said && at[-1] != '\n') at++;
    const char *end = at ? at + strcspn(at, "\n") : NULL, *options = at ? strstr(at, KGL_RECIPE_SAID_OPTIONS) : NULL;
    if (!options || options > end) {
        d->chosen_text[0] = 0;
        return;
    }
    options += strlen(KGL_RECIPE_SAID_OPTIONS);
    snprintf(d->chosen_text, sizeof d->chosen_text, "%.*s", (int)(end - options), options);
}

int kgl_benchmark_check_options(const kgl_benchmark_runner *b)
{
    int st = KGL_BENCHMARK_DONE;
    for (int j = 0; j < b->n_specs && !st; j++) {
        kgl_benchmark_command cmd;
        char *said;
        int status;
        kgl_child_outcome ran =
            kgl_child_capture(run_argv(&cmd, b, &b->specs[j], b->seeds[0], true), environ, 0, &said, &status);
        if (ran == KGL_CHILD_NO_PIPE) {
            say(b, "cannot check the options: %s", strerror(errno));
            return KGL_BENCHMARK_REFUSED;
        }
        int spawn_errno = errno, stop_signal = kgl_children_stop_signal();
        if (stop_signal) {
            say(b, "interrupted (%s) while checking the options; no run started",
                stop_signal == SIGTERM ? "SIGTERM" : "SIGINT");
            st = KGL_BENCHMARK_INTERRUPTED;
        } else if (ran == KGL_CHILD_CANNOT_START) {
            say(b, "cannot start %s: %s", b->program, strerror(spawn_errno));
            st = KGL_BENCHMARK_REFUSED;
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            say_refusal(b, &b->specs[j], said);
            st = WIFEXITED(status) && WEXITSTATUS(status) == KGL_BENCHMARK_REFUSED ? KGL_BENCHMARK_REFUSED
                                                                                  : KGL_BENCHMARK_RUN_FAILED;
        } else if (!b->specs[j].baseline) {
            keep_chosen_options(b->specs[j].dataset, said);
        }
        free(said);
    }
    return st;
}

/* One run going: its process (in its worker's slot), its stdout (the
   --json result) and stderr (its progress lines and messages) as
   kgl_outfile temporaries, created exclusively like every output (never
   through a link placed at OUT/<dataset>-seed<S>.json), renamed into place
   once it has ended, and the pipe its steps come down (kgl train's counts,
   not its text). */
typedef struct run_proc {
    kgl_benchmark_command cmd; /* its command's words */
    pid_t pid;
    int run;          /* spec j, seed s: j * n_seeds + s */
    int slot;         /* its worker's */
    kgl_outfile json, err;
    int steps_fd;     /* the pipe's end it is read from */
    double started;   /* kgl_seconds() */
} run_proc;

/* Starts run r->run with its steps' pipe on descriptor 3 and
   KGL_PROGRESS_FD=3 in `envp`; false after saying why (or, when a signal
   came first, without a word: nothing started). */
static bool start_run(run_proc *r, const kgl_benchmark_runner *b, const kgl_benchmark_spec *spec,
                      unsigned long long seed, char **envp)
{
    char json_path[1200], err_path[1200], why[2800], label[160];
    kgl_benchmark_run_path(json_path, sizeof json_path, b->out, spec->dataset->name, seed, spec->baseline, "json");
    kgl_benchmark_run_path(err_path, sizeof err_path, b->out, spec->dataset->name, seed, spec->baseline, "err");
    if (!kgl_outfile_open(&r->json, json_path, why, sizeof why)) {
        say(b, "%s", why);
        return false;
    }
    if (!kgl_outfile_open(&r->err, err_path, why, sizeof why)) {
        kgl_outfile_discard(&r->json);
        say(b, "%s", why);
        return false;
    }
    char **argv = run_argv(&r->cmd, b, spec, seed, false), command[8192];
    size_t n = (size_t)snprintf(command, sizeof command, "%s", b->program);
    for (int k = 1; argv[k] && n < sizeof command; k++) n += (size_t)snprintf(command + n, sizeof command - n, " %s", argv[k]);
    r->pid = kgl_child_spawn_steps(argv, fileno(r->json.f), fileno(r->err.f), envp, r->slot, &r->steps_fd);
    int spawn_errno = errno;
    if (r->pid <= 0) {
        if (r->pid < 0) say(b, "cannot start %s: %s", b->program, strerror(spawn_errno));
        kgl_outfile_discard(&r->json);
        kgl_outfile_discard(&r->err);
        return false;
    }
    r->started = kgl_seconds();
    say(b, "%s: %s", kgl_benchmark_run_label(label, sizeof label, spec, seed), command);
    return true;
}

/* Whether a run's end was a signal's doing: killed, or stopped by one
   after its current step (kgl train's 130). */
static bool run_stopped(int status)
{
    return WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == KGL_BENCHMARK_INTERRUPTED);
}

/* A run has ended: its .err is kept whatever happened (the user reads there
   why it failed or where it stopped). Its .json too, unless a signal
   stopped it: it then printed the results of the step it had reached, which
   must not pass for a finished run's, so no .json is written and an older
   one at that name (an earlier benchmark's, beside this run's .csv and
   .safetensors now) is removed. False after saying which file could not be
   written. */
static bool keep_run_files(run_proc *r, int status, const kgl_benchmark_runner *b)
{
    char why[2800];
    bool ok = kgl_outfile_commit(&r->err, why, sizeof why);
    if (!ok) say(b, "%s", why);
    if (run_stopped(status)) {
        bool replaces = r->json.tmp != NULL; /* a regular file's name, not a device's */
        char older[1200];
        snprintf(older, sizeof older, "%s", r->json.path);
        kgl_outfile_discard(&r->json);
        if (replaces) unlink(older);
    } else if (!kgl_outfile_commit(&r->json, why, sizeof why)) {
        say(b, "%s", why);
        ok = false;
    }
    return ok;
}

/* What the runs share while the runner has them (the jobs' context). */
typedef struct bench_runs {
    const kgl_benchmark_runner *b;
    char **envp;                 /* the environment with KGL_PROGRESS_FD=3 */
    atomic_int spawned, results; /* runs started; runs with a result */
    atomic_int failed;           /* the status of the first run to fail, in time (0: none) */
    pthread_mutex_t stopped_lock;
    kgl_benchmark_outcome *outcome; /* its `stopped` list, under stopped_lock */
} bench_runs;

/* A run has ended with `status`: its files kept (keep_run_files), then its
   result read and said, or its failure shown from its .err. Returns 0 (a
   result), -1 (stopped by a signal the benchmark passed on: named in
   `stopped`, a list for the last message), or what the status becomes:
   REFUSED for kgl train's 2 (a bad option, bad input), else RUN_FAILED. */
static int end_run(run_proc *r, int status, const kgl_benchmark_runner *b, char *stopped, size_t stopped_cap)
{
    const kgl_benchmark_spec *spec = &b->specs[r->run / b->n_seeds];
    kgl_benchmark_run *res = &kgl_benchmark_spec_runs(spec)[r->run % b->n_seeds];
    double wall = kgl_seconds() - r->started;
    char err_path[1200], label[160];
    kgl_benchmark_run_label(label, sizeof label, spec, res->seed);
    snprintf(err_path, sizeof err_path, "%s", r->err.path); /* kept before the commit forgets it */
    bool kept = keep_run_files(r, status, b);
    if (kgl_children_stop_signal() && run_stopped(status)) {
        size_t used = strlen(stopped);
        snprintf(stopped + used, stopped_cap - used, "%s%s", used ? ", " : "", label);
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char why[1400];
        kgl_text text;
        bool shown = kgl_text_open(&text, err_path, why, sizeof why);
        say(b, "%s failed (%s):\n%.2000s", label, err_path, shown ? text.buf : why);
        if (shown) kgl_text_close(&text);
        /* a bad option in the .args file is bad input, like any other */
        return WIFEXITED(status) && WEXITSTATUS(status) == KGL_BENCHMARK_REFUSED ? KGL_BENCHMARK_REFUSED
                                                                                : KGL_BENCHMARK_RUN_FAILED;
    }
    if (!kept) return KGL_BENCHMARK_RUN_FAILED;
    char path[1200], why[2800];
    kgl_benchmark_run_path(path, sizeof path, b->out, spec->dataset->name, res->seed, spec->baseline, "json");
    if (!kgl_benchmark_read_run(path, res, why, sizeof why)) {
        say(b, "%s", why);
        return KGL_BENCHMARK_RUN_FAILED;
    }
    res->seconds = wall;
    /* the largest peak resident memory of the runs waited for so far
       (POSIX keeps no per-child figure; Linux reports KiB) */
    struct rusage usage;
    res->peak_mb = getrusage(RUSAGE_CHILDREN, &usage) == 0 ? (double)usage.ru_maxrss / 1024.0 : NAN;
    say(b, "%s: test MRR %.3f H@1 %.3f, best valid MRR %.3f at step %ld, %.0f s", label, res->m[1][0][2][0],
        res->m[1][0][2][1], res->m[0][0][2][0], res->best_step, wall);
    return 0;
}

/* The runner's job: run `run` as a `kgl train` process in its worker's
   slot, followed to its end, its result read. 0, or the status it makes
   (RUN_FAILED, REFUSED): the runner then starts no more. A run stopped by
   a signal is not a failure; the stop does it. */
static int bench_job(kgl_jobs *jobs, int run, int worker, void *ctx)
{
    bench_runs *s = ctx;
    const kgl_benchmark_runner *b = s->b;
    run_proc r = {.run = run, .slot = worker};
    const kgl_benchmark_spec *spec = &b->specs[run / b->n_seeds];
    if (!start_run(&r, b, spec, b->seeds[run % b->n_seeds], s->envp)) {
        if (kgl_children_stop_signal()) return 0; /* nothing started */
        int none = 0;
        atomic_compare_exchange_strong(&s->failed, &none, KGL_BENCHMARK_RUN_FAILED);
        return KGL_BENCHMARK_RUN_FAILED;
    }
    atomic_fetch_add(&s->spawned, 1);
    /* each line of its steps' pipe is the runner's count of the job; at
       the end its steps are what its last line said, all it did (fewer
       than planned if it stopped early) */
    int status = kgl_child_follow(r.steps_fd, r.slot, jobs, run);
    pthread_mutex_lock(&s->stopped_lock); /* the list of runs stopped */
    int st = end_run(&r, status, b, s->outcome->stopped, sizeof s->outcome->stopped);
    pthread_mutex_unlock(&s->stopped_lock);
    int none = 0;
    if (st > 0) atomic_compare_exchange_strong(&s->failed, &none, st);
    if (st == 0) atomic_fetch_add(&s->results, 1);
    return st > 0 ? st : 0;
}

/* The caller's progress callback, with its own context. */
static void bench_progress(const kgl_jobs_progress *at, void *ctx)
{
    const kgl_benchmark_runner *b = ((bench_runs *)ctx)->b;
    b->progress(at, b->ctx);
}

static bool bench_stop(void *ctx)
{
    (void)ctx;
    return kgl_children_stop_signal() != 0;
}

int kgl_benchmark_run_all(const kgl_benchmark_runner *b, kgl_benchmark_outcome *outcome)
{
    int total = b->n_specs * b->n_seeds;
    *outcome = (kgl_benchmark_outcome){.total = total};
    bench_runs s = {.b = b, .envp = kgl_environment_with("KGL_PROGRESS_FD=3"), .outcome = outcome};
    pthread_mutex_init(&s.stopped_lock, NULL);
    for (int k = 0; k < total; k++)
        kgl_benchmark_spec_runs(&b->specs[k / b->n_seeds])[k % b->n_seeds].seed = b->seeds[k % b->n_seeds];
    kgl_jobs_spec runner = {.n = total, .at_most = b->jobs, .run = bench_job, .stop = bench_stop,
                            .progress = b->progress ? bench_progress : NULL, .ctx = &s};
    kgl_jobs_run(&runner);
    free(s.envp);
    pthread_mutex_destroy(&s.stopped_lock);
    outcome->stop_signal = kgl_children_stop_signal();
    outcome->results = atomic_load(&s.results);
    outcome->spawned = atomic_load(&s.spawned);
    if (outcome->stop_signal) return KGL_BENCHMARK_INTERRUPTED;
    return atomic_load(&s.failed);
}
