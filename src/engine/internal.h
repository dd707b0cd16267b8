/* internal.h — helpers shared by the library's sources (every layer may use
 * them: the engine is the lowest layer), not public. */
#ifndef KGL_INTERNAL_H
#define KGL_INTERNAL_H

#include "cpu.h"
#include "kgl/engine.h"

/* A programming error inside the library (a broken invariant, a shape
 * mismatch): print "kgl: message" and abort. Input errors made by people
 * never come here; they are reported with file:line and a status. */
_Noreturn void kgl_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* An allocation of `bytes` for `what` failed: the program's handler
 * (kgl_set_out_of_memory_handler), else "kgl: out of memory: ..." and abort.
 * kgl_xmalloc and its kin (kgl/engine.h) come here instead of returning NULL. */
_Noreturn void kgl_out_of_memory(const char *what, size_t bytes);
/* kgl_rng_keep_mask on one ISA's path (clamped to what the CPU has): AVX-512 draws a long mask in eight
   lanes (rng.c), the others in one stream; the tests compare the two. */
void kgl_rng_keep_mask_isa(kgl_isa isa, kgl_rng *rng, unsigned char *keep, size_t n, double p);

/* qsort comparators, ascending. */
static inline int kgl_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}
/* pairs of ints (key, index), by key then index: a stable order by key */
static inline int kgl_cmp_int_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0]) return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}
static inline int kgl_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* parts[0..n) joined by sep, NUL-terminated, from kgl_xmalloc ("" for n = 0). */
char *kgl_join(char *const *parts, int n, char sep);

/* Records a node for `op` with the given inputs (copied into the arena). */
kgl_node *kgl_record(kgl_tape *t, const kgl_op *op, kgl_tensor *out, int n_in, kgl_tensor *const *in);
/* Output of an op: grad allocated iff the tape records and an input has one. */
kgl_tensor *kgl_op_output(kgl_tape *t, int rows, int cols, int n_in, kgl_tensor *const *in);

/* Runs fn(ctx, task, worker) for every task: on the pool's threads when
 * there is enough work to pay for waking them (work in flops, or element
 * operations), else here, in task order, as worker 0 (the caller's own
 * slot); with no pool (NULL), here. Either way each task computes the same
 * bits. */
#define KGL_PARALLEL_MIN_WORK 200000.0
static inline void kgl_parallel(kgl_pool *p, int n_tasks, double work, void (*fn)(void *ctx, int task, int worker),
                                void *ctx)
{
    if (!p || n_tasks < 2 || work < KGL_PARALLEL_MIN_WORK || kgl_pool_threads(p) < 2) {
        for (int t = 0; t < n_tasks; t++) fn(ctx, t, 0);
        return;
    }
    kgl_pool_run(p, n_tasks, fn, ctx);
}

/* A scatter-add's backward (dT[idx[b]] += G[b]) splits the rows of dT among
 * its tasks: blocks of KGL_OWNED_ROWS rows dealt round-robin, so that the
 * rows many copies land in (hubs) spread over the threads. A task walks
 * every copy in order and adds those in its rows: each element still gets
 * its additions in copy order, whatever the number of tasks. */
#define KGL_OWNED_ROWS 8
static inline bool kgl_owns_row(int row, int task, int tasks)
{
    return tasks <= 1 || (row / KGL_OWNED_ROWS) % tasks == task;
}

/* Prefetching rows read or written in an index's order. A gather or a
 * scatter-add walks rows scattered over a table of megabytes (on FB15k-237's
 * graph step the batch's 8,028 distinct entities, 19,000 (entity, relation)
 * keys): the order is the index's, which the hardware cannot guess, so each
 * row would be a wait for memory. The loops ask for the row KGL_AHEAD places
 * on in the index while they work on this one. A hint only: no number
 * changes, and a row is never touched that the loop would not touch. */
#define KGL_AHEAD 4
static inline void kgl_prefetch_row(const void *row, size_t bytes)
{
    for (size_t k = 0; k < bytes; k += 64) __builtin_prefetch((const char *)row + k, 0, 3);
}
/* A scatter-add's task (kgl_owns_row) asks for the gradient row that copy
   i + KGL_AHEAD of idx adds to, when that row is the task's. (A read hint:
   write hints measured the same.) */
static inline void kgl_prefetch_owned_row(const kgl_real *grad, const int *idx, int i, int n, int d, int task,
                                          int tasks)
{
    if (i + KGL_AHEAD >= n) return;
    int row = idx ? idx[i + KGL_AHEAD] : i + KGL_AHEAD;
    if (kgl_owns_row(row, task, tasks)) kgl_prefetch_row(grad + (size_t)row * d, (size_t)d * sizeof(kgl_real));
}

/* The end of a task's span [lo, lo + step) of n things: the last span is short. */
static inline size_t span_end(size_t lo, size_t step, size_t n) { return n - lo < step ? n : lo + step; }

/* Seconds on a monotonic clock (for timings the library reports). */
double kgl_seconds(void);

#endif
