/* engine_jobs.c — the one runner of several trainings at once
 * (kgl_jobs_run, src/engine/jobs.c): every job runs exactly once, at most
 * J at a time, in job order; a failure starts no more and halts the ones
 * running; the first failure in job order is the result's; a stop starts
 * no more; the progress counters reach the total. */
#include <stdatomic.h>
#include <time.h>

#include "test.h"

#define N_JOBS 12

/* What the test jobs share. */
typedef struct probe {
    atomic_int runs[N_JOBS];   /* how many times each job ran */
    atomic_int running, most;  /* jobs running now, and the most at once */
    atomic_int bad_worker;     /* a worker index outside [0, J) */
    int workers;
    int fail_job, fail_status; /* job fail_job returns fail_status (-1: none fails) */
    int second_fail;           /* another job that fails, with status 7 (-1: none) */
    int waits_for_halt;        /* this job runs until it sees the halt (-1: none) */
    atomic_int saw_halt;       /* it did */
    int stop_after;            /* stop asks no more jobs once this many ran (-1: never) */
    atomic_int ran;
    long last_done, last_total;
    int last_jobs_done, calls;
    bool counts_steady;        /* every callback's sums equal the sums of the jobs' own */
} probe;

static void nap(long microseconds)
{
    struct timespec ts = {0, microseconds * 1000};
    nanosleep(&ts, NULL);
}

/* Each job: 5 steps of 5 steps planned, reported one by one. */
static int probe_job(kgl_jobs *jobs, int job, int worker, void *ctx)
{
    probe *p = ctx;
    atomic_fetch_add(&p->runs[job], 1);
    atomic_fetch_add(&p->ran, 1);
    if (worker < 0 || worker >= p->workers) atomic_store(&p->bad_worker, 1);
    int now = atomic_fetch_add(&p->running, 1) + 1;
    for (int most = atomic_load(&p->most); now > most && !atomic_compare_exchange_weak(&p->most, &most, now);) {}
    if (job == p->waits_for_halt) { /* at most 5 s: then the halt never came */
        for (int k = 0; k < 5000 && !kgl_jobs_halted(jobs); k++) nap(1000);
        atomic_store(&p->saw_halt, kgl_jobs_halted(jobs));
    }
    for (long step = 1; step <= 5; step++) {
        nap(200); /* long enough for the jobs to overlap */
        kgl_jobs_report(jobs, job, step, 5);
    }
    atomic_fetch_sub(&p->running, 1);
    if (job == p->second_fail) return 7;
    return job == p->fail_job ? p->fail_status : 0;
}

static void probe_progress(const kgl_jobs_progress *at, void *ctx)
{
    probe *p = ctx;
    long done = 0, total = 0;
    for (int k = 0; k < at->jobs; k++) done += at->job[k].done, total += at->job[k].total;
    if (done != at->steps_done || total != at->steps) p->counts_steady = false;
    p->last_done = at->steps_done, p->last_total = at->steps, p->last_jobs_done = at->jobs_done;
    p->calls++;
}

static bool probe_stop(void *ctx)
{
    probe *p = ctx;
    return p->stop_after >= 0 && atomic_load(&p->ran) >= p->stop_after;
}

static kgl_jobs_result run_probe(probe *p, int at_most)
{
    p->workers = at_most;
    p->counts_steady = true;
    kgl_jobs_spec spec = {N_JOBS, at_most, 5, probe_job, probe_stop, probe_progress, p};
    return kgl_jobs_run(&spec);
}

static probe quiet_probe(void)
{
    probe p;
    memset(&p, 0, sizeof p);
    p.fail_job = p.second_fail = p.waits_for_halt = p.stop_after = -1;
    return p;
}

TEST(jobs_run_each_job_once_at_most_j_at_a_time_and_count_every_step)
{
    for (int at_most = 1; at_most <= 3; at_most++) {
        probe p = quiet_probe();
        kgl_jobs_result r = run_probe(&p, at_most);
        CHECK(r.status == 0 && r.failed == -1 && r.started == N_JOBS);
        for (int k = 0; k < N_JOBS; k++) CHECK(atomic_load(&p.runs[k]) == 1);
        CHECK(atomic_load(&p.most) <= at_most);
        CHECK(atomic_load(&p.bad_worker) == 0);
        CHECK(p.counts_steady);
        /* the last callback, at the last job's end: every step of every job */
        CHECK(p.last_done == 5L * N_JOBS && p.last_total == 5L * N_JOBS && p.last_jobs_done == N_JOBS);
        CHECK(p.calls == 6 * N_JOBS); /* 5 reports and the end, each job */
    }
    /* with 3 workers and jobs of a millisecond, the jobs do overlap (else J
       would not be shown to be used at all) */
    probe p = quiet_probe();
    run_probe(&p, 3);
    CHECK(atomic_load(&p.most) >= 2);
}

TEST(jobs_a_failure_starts_no_more_and_halts_the_running)
{
    /* one worker: jobs 0..4 ran, job 4 failed, nothing after it started */
    probe p = quiet_probe();
    p.fail_job = 4, p.fail_status = 3;
    kgl_jobs_result r = run_probe(&p, 1);
    CHECK(r.status == 3 && r.failed == 4 && r.started == 5);
    for (int k = 0; k < N_JOBS; k++) CHECK(atomic_load(&p.runs[k]) == (k <= 4));
    /* two workers: job 0 runs until it sees the halt that job 1's failure sets */
    probe q = quiet_probe();
    q.waits_for_halt = 0, q.fail_job = 1, q.fail_status = 1;
    r = run_probe(&q, 2);
    CHECK(atomic_load(&q.saw_halt) == 1);
    CHECK(r.status == 1 && r.failed == 1);
    CHECK(r.started < N_JOBS);
    for (int k = 0; k < N_JOBS; k++) CHECK(atomic_load(&q.runs[k]) == (k < r.started));
}

TEST(jobs_the_first_failure_in_job_order_is_the_result)
{
    /* job 0 waits for the halt that job 1's failure (status 7) sets, then
       fails with status 2: it ends last, but comes first in job order */
    probe p = quiet_probe();
    p.waits_for_halt = 0, p.fail_job = 0, p.fail_status = 2, p.second_fail = 1;
    kgl_jobs_result r = run_probe(&p, 2);
    CHECK(atomic_load(&p.saw_halt) == 1);
    CHECK(r.status == 2 && r.failed == 0);
}

TEST(jobs_a_stop_starts_no_more)
{
    probe p = quiet_probe();
    p.stop_after = 3;
    kgl_jobs_result r = run_probe(&p, 1);
    CHECK(r.status == 0 && r.started == 3);
    for (int k = 0; k < N_JOBS; k++) CHECK(atomic_load(&p.runs[k]) == (k < 3));
    CHECK(p.last_jobs_done == 3 && p.last_done == 15);
}

TEST(jobs_total_shrinks_when_a_job_says_so)
{
    /* kgl_jobs_report's total replaces the job's plan: a job that stops
       early takes its steps not done out of the sum */
    probe p = quiet_probe();
    kgl_jobs_spec spec = {1, 1, 100, probe_job, NULL, probe_progress, &p};
    p.workers = 1, p.counts_steady = true;
    kgl_jobs_result r = kgl_jobs_run(&spec);
    CHECK(r.status == 0 && r.started == 1);
    CHECK(p.last_done == 5 && p.last_total == 5 && p.counts_steady);
}
