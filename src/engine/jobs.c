/* jobs.c — the one way kgl runs several trainings at once (kgl/engine.h,
 * section "jobs"): an ensemble's members (src/model/run.c), the saturation
 * grid's runs (src/studies/saturation.c) and kgl benchmark's `kgl train`
 * processes (train/cmd_benchmark.c) are jobs of this runner.
 *
 * Jobs 0 … n − 1 are taken in order by `at_most` workers: the calling
 * thread is worker 0, the others are pthreads (one that cannot start
 * leaves its jobs to the rest). A worker takes the next job under the lock
 * unless a job has failed or the caller asks to stop; a failure also sets
 * `halt`, which the jobs running poll. Progress is counters: each job says
 * its steps done and to do, the runner keeps the sums, and the caller's
 * callback reads them under the same lock, one call at a time. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/engine.h"
#include "internal.h"

struct kgl_jobs {
    const kgl_jobs_spec *spec;
    pthread_mutex_t lock;
    atomic_int halt;          /* a job has failed: the running ones stop, no more start */
    int next;                 /* jobs 0..next-1 have started (under lock) */
    kgl_jobs_result result;   /* status and failed (under lock) */
    kgl_jobs_progress at;     /* the sums (under lock) */
    kgl_job_steps *job;       /* [n]: each job's counts (under lock) */
};

typedef struct jobs_worker {
    kgl_jobs *jobs;
    int index;
    pthread_t thread;
    bool started; /* a thread of its own (worker 0 is the calling thread) */
} jobs_worker;

bool kgl_jobs_halted(const kgl_jobs *jobs) { return atomic_load(&((kgl_jobs *)jobs)->halt) != 0; }

/* The callback, with the lock held: one call at a time, the counts steady. */
static void show(kgl_jobs *jobs)
{
    if (jobs->spec->progress) jobs->spec->progress(&jobs->at, jobs->spec->ctx);
}

void kgl_jobs_report(kgl_jobs *jobs, int job, long done, long total)
{
    pthread_mutex_lock(&jobs->lock);
    kgl_job_steps *j = &jobs->job[job];
    jobs->at.steps_done += done - j->done;
    jobs->at.steps += total - j->total;
    j->done = done, j->total = total, j->reported = true;
    show(jobs);
    pthread_mutex_unlock(&jobs->lock);
}

/* The next job to start, or -1: none left, a job has failed, or stop. */
static int take_job(kgl_jobs *jobs)
{
    const kgl_jobs_spec *spec = jobs->spec;
    pthread_mutex_lock(&jobs->lock);
    bool go = jobs->next < spec->n && !atomic_load(&jobs->halt) && !(spec->stop && spec->stop(spec->ctx));
    int k = go ? jobs->next++ : -1;
    if (k >= 0) jobs->job[k].running = true, jobs->at.running++;
    pthread_mutex_unlock(&jobs->lock);
    return k;
}

/* Job k has returned `status`: the first failure in job order is the
   runs', and any failure halts the rest. */
static void end_job(kgl_jobs *jobs, int k, int status)
{
    pthread_mutex_lock(&jobs->lock);
    kgl_jobs_result *r = &jobs->result;
    if (status && (r->status == 0 || k < r->failed)) r->status = status, r->failed = k;
    if (status) atomic_store(&jobs->halt, 1);
    jobs->job[k].running = false, jobs->job[k].ended = true;
    jobs->at.running--, jobs->at.jobs_done++;
    show(jobs);
    pthread_mutex_unlock(&jobs->lock);
}

static void *work(void *arg)
{
    jobs_worker *w = arg;
    kgl_jobs *jobs = w->jobs;
    for (int k; (k = take_job(jobs)) >= 0;) end_job(jobs, k, jobs->spec->run(jobs, k, w->index, jobs->spec->ctx));
    return NULL;
}

int kgl_jobs_workers(const kgl_jobs_spec *spec)
{
    int n = spec->n < 1 ? 1 : spec->n;
    return spec->at_most < 1 ? 1 : spec->at_most > n ? n : spec->at_most;
}

kgl_jobs_result kgl_jobs_run(const kgl_jobs_spec *spec)
{
    kgl_jobs jobs = {.spec = spec, .result = {0, -1, 0, 0}};
    pthread_mutex_init(&jobs.lock, NULL);
    atomic_init(&jobs.halt, 0);
    int n = spec->n < 0 ? 0 : spec->n, workers = kgl_jobs_workers(spec);
    jobs.job = kgl_xcalloc((size_t)n + 1, sizeof *jobs.job);
    for (int k = 0; k < n; k++) jobs.job[k].total = spec->job_steps;
    jobs.at = (kgl_jobs_progress){0, (long)n * spec->job_steps, 0, n, 0, jobs.job};
    jobs_worker *w = kgl_xcalloc((size_t)workers, sizeof *w);
    for (int k = 0; k < workers; k++) w[k].jobs = &jobs, w[k].index = k;
    double t0 = kgl_seconds();
    for (int k = 1; k < workers; k++) w[k].started = pthread_create(&w[k].thread, NULL, work, &w[k]) == 0;
    work(&w[0]); /* this thread is worker 0 */
    for (int k = 1; k < workers; k++)
        if (w[k].started) pthread_join(w[k].thread, NULL);
    jobs.result.started = jobs.next;
    jobs.result.seconds = kgl_seconds() - t0;
    free(w);
    free(jobs.job);
    pthread_mutex_destroy(&jobs.lock);
    return jobs.result;
}
