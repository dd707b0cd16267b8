/* ops_check.h — what the op files (ops.c, ops_segment.c) share: the inputs
 * of their gradient-check cases, the default tolerance, loops compiled for
 * each instruction set, and the ops defined outside ops.c that its registry
 * lists. Not public. */
#ifndef KGL_OPS_CHECK_H
#define KGL_OPS_CHECK_H

#include "cpu.h"
#include "kgl/engine.h"

/* A differentiable check input in `keep`: N(0, scale²) entries plus `shift`. */
kgl_tensor *kgl_check_input(kgl_arena *keep, kgl_rng *rng, int rows, int cols, double scale, double shift);
/* A copy of n indices in `keep`. */
int *kgl_check_indices(kgl_arena *keep, int n, const int *values);

#define KGL_DEFAULT_TOL 1e-6
#define KGL_DEFAULT_TOL_REASON                                                                                  \
    "smooth op, O(1) values: central-difference truncation ~h^2 = 1e-10 and round-off ~1e-16/h = 1e-11 stay "   \
    "far below 1e-6"

/* A task's loop of plain C on the CPU's vectors: write its body as
 * `INLINE void name_body(void *ctx, int task, int worker)`, then
 * ISA_CLONES(name) compiles it three times, for any x86-64, for AVX2 and for
 * AVX-512 (a target attribute on the same inlined body), and name_for_isa()
 * returns the one kgl_isa_active() asks for (KGL_ISA=portable forces the
 * first). Every clone performs the same IEEE operations per element in the
 * same order when nothing is fused into an FMA: gcc contracts nothing in ISO
 * C mode, and a file using the clones turns clang's contraction within a
 * statement off (#pragma STDC FP_CONTRACT OFF, as ops.c and ops_segment.c
 * do; AVX-512F has FMA), so all three give the same bits. */
#define INLINE static inline __attribute__((always_inline))
typedef void (*task_fn)(void *ctx, int task, int worker);
#if defined(__x86_64__)
#define ISA_CLONES(name)                                                                                               \
    static void name##_portable(void *ctx, int task, int worker) { name##_body(ctx, task, worker); }                  \
    __attribute__((target("avx2"))) static void name##_avx2(void *ctx, int task, int worker)                          \
    {                                                                                                                  \
        name##_body(ctx, task, worker);                                                                                \
    }                                                                                                                  \
    __attribute__((target("avx512f,avx512vl,avx512dq"))) static void name##_avx512(void *ctx, int task, int worker)   \
    {                                                                                                                  \
        name##_body(ctx, task, worker);                                                                                \
    }                                                                                                                  \
    static task_fn name##_for_isa(void)                                                                               \
    {                                                                                                                  \
        kgl_isa isa = kgl_isa_active();                                                                                \
        return isa == KGL_ISA_AVX512 ? name##_avx512 : isa == KGL_ISA_AVX2 ? name##_avx2 : name##_portable;            \
    }
#else
#define ISA_CLONES(name)                                                                                               \
    static void name##_portable(void *ctx, int task, int worker) { name##_body(ctx, task, worker); }                  \
    static task_fn name##_for_isa(void) { return name##_portable; }
#endif

/* The fixed tree over 16 double lanes (column j in lane j mod 16): l_i + l_{i+8},
 * l_i + l_{i+4}, l_i + l_{i+2}, l_0 + l_1 (acc is consumed). Layer norm's row sums, the
 * segment scores' dot products and the cross entropy's label-smoothing term use it, so the ISA clones add their lanes as vectors and
 * every path gives the same bits. Levels written out: gcc keeps a loop over them in memory. */
#define KGL_LANES 16
INLINE double kgl_lane_tree(double acc[KGL_LANES])
{
    for (int l = 0; l < 8; l++) acc[l] += acc[l + 8];
    for (int l = 0; l < 4; l++) acc[l] += acc[l + 4];
    for (int l = 0; l < 2; l++) acc[l] += acc[l + 2];
    return acc[0] + acc[1];
}

/* Σ_j x_j over a row of n, in the 16 lanes and the tree above (the tail's columns go to
   lanes 0, 1, ...): layer norm's μ, and the label-smoothing term of the cross entropy's
   loss (Σ_j z_j over every entity: one chain in column order ran at the adder's latency,
   2.5 % of the samples of FB15k-237's float32 training step; data/report/speed.md). */
INLINE double kgl_lane_sum(const kgl_real *x, int n)
{
    double acc[KGL_LANES] = {0};
    int full = n - n % KGL_LANES;
    for (int j = 0; j < full; j += KGL_LANES)
        for (int l = 0; l < KGL_LANES; l++) acc[l] += x[j + l];
    for (int j = full; j < n; j++) acc[j - full] += x[j];
    return kgl_lane_tree(acc);
}

/* ops_segment.c: the neighbourhood context's attention */
extern const kgl_op kgl_op_segment_scores, kgl_op_segment_softmax, kgl_op_segment_weighted_sum, kgl_op_segment_head_sums,
    kgl_op_gather_sum_rows;

#endif
