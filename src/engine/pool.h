/* pool.h — a small persistent thread pool for kgl's dense kernels.
 *
 * A pool of T threads is the caller plus T-1 pthread workers created once.
 * kgl_pool_run() hands out task numbers 0..n-1 (claimed dynamically through
 * an atomic counter, the caller taking part) and returns when all are done.
 * Idle workers spin briefly, then sleep on a condition variable, so a call
 * costs microseconds. Each thread also owns a GEMM workspace (packing
 * buffers), allocated once at creation, so kernels never allocate.
 *
 * A pool serves one caller at a time: kgl_pool_run() and the GEMMs that use
 * the pool must not be called concurrently on the same pool, nor from inside
 * one of its tasks. */
#ifndef KGL_POOL_H
#define KGL_POOL_H

#include "kgl/engine.h" /* kgl_real */

typedef struct kgl_pool kgl_pool;

/* A pool of `threads` (>= 1) threads: threads-1 workers plus the caller. NULL only if creation fails. */
kgl_pool *kgl_pool_create(int threads);
/* Stops and joins the workers and frees the pool (NULL is fine). */
void kgl_pool_free(kgl_pool *p);
/* The number of threads, the caller included. */
int kgl_pool_threads(const kgl_pool *p);
/* Runs fn(ctx, task, worker) for task = 0..n_tasks-1 and returns when all are done. worker in
 * [0, threads) names the thread running the task (the caller is 0). n_tasks <= 1 or a 1-thread
 * pool runs inline. Which worker runs which task is not specified. */
void kgl_pool_run(kgl_pool *p, int n_tasks, void (*fn)(void *ctx, int task, int worker), void *ctx);
/* Scratch for the GEMM packing buffers of one worker: >= KGL_GEMM_WORKSPACE bytes, 64-byte aligned. */
kgl_real *kgl_pool_gemm_workspace(kgl_pool *p, int worker);

#endif
