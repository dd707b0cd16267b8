/* pool.c — persistent thread pool (see pool.h).
 *
 * A job is published by storing (fn, ctx, n_tasks), resetting the task
 * counter and bumping the generation number; workers notice the new
 * generation (by spinning for a short while, else by waking on `wake`),
 * claim tasks with an atomic fetch-add until none are left, and count
 * themselves out through `active`. The caller runs tasks too, then waits
 * (spinning, then on `done`) until every worker has counted out, so no
 * worker still touches the job when kgl_pool_run() returns. */
#include <pthread.h>
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

/* How many polls a thread spins before it sleeps (a few tens of microseconds). */
enum { SPIN_POLLS = 20000 };

struct kgl_pool {
    int threads;
    pthread_t *workers;     /* threads-1 of them */
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* a new job or stop */
    pthread_cond_t done;    /* active reached 0 */
    atomic_uint gen;        /* job generation, bumped by each parallel run */
    atomic_int next_task;   /* the next unclaimed task */
    atomic_int active;      /* workers not yet finished with the current job */
    atomic_int stop;
    int n_tasks;
    void (*fn)(void *ctx, int task, int worker);
    void *ctx;
    unsigned char *ws;      /* threads * ws_stride bytes, 64-byte aligned */
    size_t ws_stride;
};

typedef struct {
    kgl_pool *p;
    int id;
} worker_arg;

/* Claims and runs tasks of the current job until none are left. */
static void run_tasks(kgl_pool *p, int worker)
{
    int n = p->n_tasks;
    for (int t; (t = atomic_fetch_add_explicit(&p->next_task, 1, memory_order_relaxed)) < n;)
        p->fn(p->ctx, t, worker);
}

/* A worker's life: wait for a new generation (spin, then sleep), run tasks, count out. */
static void *worker_main(void *arg)
{
    kgl_pool *p = ((worker_arg *)arg)->p;
    int id = ((worker_arg *)arg)->id;
    free(arg);
    unsigned seen = 0; /* the generation at creation (not a load here: a job may already be published) */
    for (;;) {
        unsigned g = seen;
        for (int i = 0; i < SPIN_POLLS && g == seen && !atomic_load_explicit(&p->stop, memory_order_relaxed); i++) {
            CPU_RELAX();
            g = atomic_load_explicit(&p->gen, memory_order_acquire);
        }
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
                   !atomic_load_explicit(&p->stop, memory_order_relaxed))
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) return NULL;
        seen = g;
        run_tasks(p, id);
        if (atomic_fetch_sub_explicit(&p->active, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static kgl_pool *pool_create_or_null(int threads)
{
    if (threads < 1) threads = 1;
    kgl_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->threads = threads;
    p->ws_stride = ((size_t)KGL_GEMM_WORKSPACE + 63) / 64 * 64;
    void *ws = NULL;
    if (posix_memalign(&ws, 64, p->ws_stride * (size_t)threads) != 0) {
        free(p);
        return NULL;
    }
    p->ws = ws;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->gen, 0u);
    atomic_init(&p->next_task, 0);
    atomic_init(&p->active, 0);
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
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p->ws);
    free(p);
}

int kgl_pool_threads(const kgl_pool *p) { return p->threads; }

double *kgl_pool_gemm_workspace(kgl_pool *p, int worker)
{
    return (double *)(void *)(p->ws + (size_t)worker * p->ws_stride);
}

void kgl_pool_run(kgl_pool *p, int n_tasks, void (*fn)(void *ctx, int task, int worker), void *ctx)
{
    if (n_tasks <= 0) return;
    if (n_tasks == 1 || p->threads == 1) {
        for (int t = 0; t < n_tasks; t++) fn(ctx, t, 0);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    atomic_store_explicit(&p->next_task, 0, memory_order_relaxed);
    atomic_store_explicit(&p->active, p->threads - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->mu); /* a sleeping worker re-checks gen under this lock: no lost wake-up */
    atomic_fetch_add_explicit(&p->gen, 1u, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_tasks(p, 0);
    for (int i = 0; i < SPIN_POLLS && atomic_load_explicit(&p->active, memory_order_acquire) != 0; i++) CPU_RELAX();
    if (atomic_load_explicit(&p->active, memory_order_acquire) != 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load_explicit(&p->active, memory_order_acquire) != 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

kgl_pool *kgl_pool_create(int threads)
{
    if (threads < 1) { /* one per online core */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores < 1 ? 1 : cores > KGL_MAX_THREADS ? KGL_MAX_THREADS : (int)cores;
    }
    kgl_pool *p = pool_create_or_null(threads);
    if (!p) kgl_die("cannot create a pool of %d threads", threads);
    return p;
}
