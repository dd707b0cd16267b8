/* ops_check.h — what the op files (ops.c, ops_segment.c) share: the inputs
 * of their gradient-check cases, the default tolerance, and the ops defined
 * outside ops.c that its registry lists. Not public. */
#ifndef KGL_OPS_CHECK_H
#define KGL_OPS_CHECK_H

#include "kgl/engine.h"

/* A differentiable check input in `keep`: N(0, scale²) entries plus `shift`. */
kgl_tensor *kgl_check_input(kgl_arena *keep, kgl_rng *rng, int rows, int cols, double scale, double shift);
/* A copy of n indices in `keep`. */
int *kgl_check_indices(kgl_arena *keep, int n, const int *values);

#define KGL_DEFAULT_TOL 1e-6
#define KGL_DEFAULT_TOL_REASON                                                                                  \
    "smooth op, O(1) values: central-difference truncation ~h^2 = 1e-10 and round-off ~1e-16/h = 1e-11 stay "   \
    "far below 1e-6"

/* ops_segment.c: the neighbourhood context's attention */
extern const kgl_op kgl_op_segment_scores, kgl_op_segment_softmax, kgl_op_segment_weighted_sum, kgl_op_segment_head_sums,
    kgl_op_gather_sum_rows;

#endif
