/* pool.c — persistent thread pool (see pool.h).
 *
 * A job is (fn, ctx, n_tasks). Its tasks are handed out through one 64-bit
 * ticket: the job's generation, its task count and the next unclaimed task,
 * packed so that one compare-and-swap claims a task of exactly that job —
 * a worker that wakes late, after the job it was woken for has finished,
 * sees another generation (or no task left) and claims nothing. Each
 * finished task is counted; the caller runs tasks too and returns once all
 * n_tasks are counted, so it never waits for a worker that took no task
 * (on a busy machine that worker may not run for milliseconds). Job fields
 * are written before the ticket is published (release) and read after a
 * claim (acquire); they cannot change while a claimed task runs, because
 * the caller does not publish the next job before every task is counted.
 * Idle workers spin briefly on the ticket, then sleep on `wake`. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "kernel.h"
#include "pool.h"
#include "kgl/engine.h"
#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* How many polls a thread spins before it sleeps (tens of microseconds;
   short: on a busy machine a spinning thread takes a core another needs). */
enum { SPIN_POLLS = 4000 };

/* ticket = generation (24 bits) | n_tasks (20 bits) | next task (20 bits) */
#define TASK_BITS 20
#define TASK_MASK ((1ull << TASK_BITS) - 1)
#define MAX_TASKS ((int)TASK_MASK)
static uint64_t ticket_make(uint64_t gen, uint64_t n, uint64_t next)
{
    return (gen & 0xffffff) << (2 * TASK_BITS) | (n & TASK_MASK) << TASK_BITS | (next & TASK_MASK);
}
static int ticket_n(uint64_t t) { return (int)((t >> TASK_BITS) & TASK_MASK); }
static int ticket_next(uint64_t t) { return (int)(t & TASK_MASK); }

/* each thread's GEMM workspace, a whole number of cache lines */
#define WS_STRIDE (((size_t)KGL_GEMM_WORKSPACE + 63) / 64 * 64)

struct kgl_pool {
    int threads;
    pthread_t *workers;     /* threads-1 of them */
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* a new job or stop */
    _Atomic uint64_t ticket; /* see above */
    atomic_int finished;    /* tasks of the current job counted as done */
    atomic_int sleepers;    /* workers asleep on `wake` */
    atomic_int stop;
    unsigned gen;           /* the caller's generation counter */
    void (*fn)(void *ctx, int task, int worker);
    void *ctx;
    unsigned char *ws;      /* threads * ws_stride bytes, 64-byte aligned */
    size_t ws_stride;
};

typedef struct {
    kgl_pool *p;
    int id;
} worker_arg;

/* Claims a task of the job `t` describes; false when none is left (or the
   ticket moved on to another job). */
static bool claim(kgl_pool *p, uint64_t t, int *task)
{
    while (ticket_next(t) < ticket_n(t)) {
        if (atomic_compare_exchange_weak_explicit(&p->ticket, &t, t + 1, memory_order_acq_rel, memory_order_acquire)) {
            *task = ticket_next(t);
            return true;
        }
    }
    return false;
}

/* Runs tasks of the current job until none are left. */
static void run_tasks(kgl_pool *p, int worker)
{
    int task;
    while (claim(p, atomic_load_explicit(&p->ticket, memory_order_acquire), &task)) {
        p->fn(p->ctx, task, worker);
        atomic_fetch_add_explicit(&p->finished, 1, memory_order_release);
    }
}

/* A worker's life: wait for a ticket with a task left (spin, then sleep), run tasks. */
static void *worker_main(void *arg)
{
    kgl_pool *p = ((worker_arg *)arg)->p;
    int id = ((worker_arg *)arg)->id;
    free(arg);
    for (;;) {
        uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
        for (int i = 0; i < SPIN_POLLS && ticket_next(t) >= ticket_n(t) &&
                        !atomic_load_explicit(&p->stop, memory_order_relaxed);
             i++) {
            CPU_RELAX();
            t = atomic_load_explicit(&p->ticket, memory_order_acquire);
        }
        if (ticket_next(t) >= ticket_n(t)) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add_explicit(&p->sleepers, 1, memory_order_acq_rel);
            for (;;) {
                t = atomic_load_explicit(&p->ticket, memory_order_acquire);
                if (ticket_next(t) < ticket_n(t) || atomic_load_explicit(&p->stop, memory_order_acquire)) break;
                pthread_cond_wait(&p->wake, &p->mu);
            }
            atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_acq_rel);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) return NULL;
        run_tasks(p, id);
    }
}

static kgl_pool *pool_create_or_null(int threads)
{
    if (threads < 1) threads = 1;
    kgl_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->threads = threads;
    p->ws_stride = WS_STRIDE;
    void *ws = NULL;
    if (posix_memalign(&ws, 64, p->ws_stride * (size_t)threads) != 0) {
        free(p);
        return NULL;
    }
    p->ws = ws;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    atomic_init(&p->ticket, ticket_make(0, 0, 0));
    atomic_init(&p->finished, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->stop, 0);
    p->workers = calloc((size_t)threads, sizeof *p->workers);
    if (!p->workers) {
        p->threads = 1;
        kgl_pool_free(p);
        return NULL;
    }
    for (int i = 1; i < threads; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a || (a->p = p, a->id = i, pthread_create(&p->workers[i - 1], NULL, worker_main, a) != 0)) {
            free(a);
            p->threads = i; /* join only the workers that exist */
            kgl_pool_free(p);
            return NULL;
        }
    }
    return p;
}

void kgl_pool_free(kgl_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->stop, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->threads; i++) pthread_join(p->workers[i - 1], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p->ws);
    free(p);
}

int kgl_pool_threads(const kgl_pool *p) { return p->threads; }

kgl_real *kgl_pool_gemm_workspace(kgl_pool *p, int worker)
{
    return (kgl_real *)(void *)(p->ws + (size_t)worker * p->ws_stride);
}

void kgl_pool_run(kgl_pool *p, int n_tasks, void (*fn)(void *ctx, int task, int worker), void *ctx)
{
    if (n_tasks <= 0) return;
    if (n_tasks == 1 || p->threads == 1 || n_tasks > MAX_TASKS) {
        for (int t = 0; t < n_tasks; t++) fn(ctx, t, 0);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    p->gen++;
    atomic_store_explicit(&p->ticket, ticket_make(p->gen, (uint64_t)n_tasks, 0), memory_order_release);
    if (atomic_load_explicit(&p->sleepers, memory_order_acquire) > 0) {
        pthread_mutex_lock(&p->mu); /* a sleeper re-checks the ticket under this lock: no lost wake-up */
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    run_tasks(p, 0);
    /* every task is claimed; wait for the ones still running elsewhere */
    for (int i = 0; atomic_load_explicit(&p->finished, memory_order_acquire) < n_tasks; i++) {
        if (i < SPIN_POLLS) CPU_RELAX();
        else sched_yield();
    }
}

int kgl_cores(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : cores > KGL_MAX_THREADS ? KGL_MAX_THREADS : (int)cores;
}

kgl_pool *kgl_pool_create(int threads)
{
    if (threads < 1) threads = kgl_cores(); /* one per online core */
    kgl_pool *p = pool_create_or_null(threads);
    if (!p) { /* its workspaces, or its threads' stacks, did not fit */
        char what[64];
        snprintf(what, sizeof what, "a pool of %d thread%s", threads, threads == 1 ? "" : "s");
        kgl_out_of_memory(what, WS_STRIDE * (size_t)threads);
    }
    return p;
}
