/* vmath.h — vectorised kernels in kgl_real (float64, or float32 under
 * -DKGL_FLOAT32): exp, one softmax row (forward and backward) and the Adam
 * update (private to the engine).
 *
 * Every kernel has three paths — portable C, AVX2+FMA, AVX-512F — chosen at
 * run time by kgl_isa_active() (cpu.h). All three perform the same IEEE
 * operations per element in the same order (no fused multiply-add anywhere),
 * so they return the same bits, whatever the pointers' alignment and wherever
 * an element sits in the array (vmath.c explains how). No allocation, no
 * global state.
 *
 * Reductions (the max and Σ of softmax, the Σ p·g of its backward) go over
 * L lanes, L = 8 in float64 and 16 in float32: element j goes to lane
 * j mod L, then the lanes are combined by the tree l_i ∘ l_{i+L/2} (i < L/2),
 * the same on the first half, ..., l0 ∘ l1; for L = 8 that is
 * ((l0∘l4)∘(l2∘l6)) ∘ ((l1∘l5)∘(l3∘l7)). The sums accumulate in double in
 * both precisions, from +0. */
#ifndef KGL_VMATH_H
#define KGL_VMATH_H

#include <stddef.h>

#include "cpu.h"
#include "kgl/engine.h" /* kgl_real */

/* y[i] = exp(x[i]) for 0 <= i < n (y may equal x). Error < 1 ulp of
 * kgl_real over its whole range (float64: measured max ~0.66 ulp against a
 * long-double reference; float32: 0.73 ulp, every float checked against
 * double exp); exp(+inf) = +inf, exp(-inf) = +0, NaN -> NaN, overflow ->
 * +inf, underflow -> gradual (subnormal results), then +0. */
void kgl_vexp(const kgl_real *x, kgl_real *y, int n);

/* One softmax row, stable: m = max_j z[j] (in kgl_real); e[j] = exp(z[j] - m)
 * (z[j] - m and exp in kgl_real); S = Σ_j e[j] summed in double in the lane
 * order above; p[j] = e[j] / S in float64, p[j] = e[j] · (float)(1 / S) in
 * float32 (a multiply: 1 / S divided in double, rounded to float once).
 * Returns log Σ_j exp(z[j]) = m + log(S), in double. p may equal z; n >= 1.
 * A row of only -inf (a fully masked row) gives p = 0 and returns -inf; a
 * row holding +inf or NaN gives p = NaN and returns NaN (a NaN among -infs
 * too: it is never read as a mask). */
double kgl_softmax_row(const kgl_real *z, kgl_real *p, int n);

/* The softmax backward for one row, dz = J g with J = diag(p) − p pᵀ:
 *   dz[j] = p[j] (g[j] − gp)      (dz[j] += ... if add != 0),
 * gp = Σ_k p[k] g[k], each product (double)p[k]·g[k] (exact for floats),
 * summed in double in the lane order above, then rounded to kgl_real once;
 * g[j] − gp, the product and the add are kgl_real operations. */
void kgl_softmax_row_backward(const kgl_real *p, const kgl_real *g, kgl_real *dz, int n, int add);

/* One Adam / AdamW step over n parameters, exactly the loop of
 * kgl_optim_step (params.c), with per-step scalars computed by the caller:
 *   step_size = lr / (1 − β1ᵗ),  bc2_sqrt = √(1 − β2ᵗ),  keep = 1 − lr·wd.
 * For each i:
 *   θ ← θ · keep                          (skipped when keep == 1)
 *   m ← m + (1 − β1)(g − m)
 *   v ← v·β2 + (1 − β2)·g·g               (left to right: ((1 − β2)·g)·g)
 *   θ ← θ − step_size · (m / (√v / bc2_sqrt + eps))
 * Bit-identical to params.c's scalar loop (and to each other ISA path).
 * θ, g, m, v and every operation are kgl_real. In float32 the scalars are
 * converted to float once per call, 1 − β in double first; the loop is
 * exactly (and params.c's scalar loop must be this, to keep the bits):
 *   float b1c = (float)(1.0 - beta1), b2 = (float)beta2, b2c = (float)(1.0 - beta2);
 *   float ep = (float)eps, st = (float)step_size, bc = (float)bc2_sqrt, kp = (float)keep;
 *   for (size_t i = 0; i < n; i++) {
 *       if (kp != 1.0f) theta[i] *= kp;
 *       m[i] += b1c * (g[i] - m[i]);
 *       v[i] = v[i] * b2 + b2c * g[i] * g[i];
 *       float denom = sqrtf(v[i]) / bc + ep;
 *       theta[i] -= st * (m[i] / denom);
 *   }
 * (one rounding per operation: compiled without FMA contraction.) */
void kgl_adam_update(kgl_real *theta, const kgl_real *g, kgl_real *m, kgl_real *v, size_t n, double beta1,
                     double beta2, double eps, double step_size, double bc2_sqrt, double keep);

/* kgl_softmax_row for each of `rows` rows of n entries (z and p [rows, n],
 * p may equal z; lse NULL or [rows], the returned log-sum-exps, double as
 * kgl_softmax_row's): the same bits, faster for short rows (their
 * exponentials taken together in one kgl_vexp call). */
void kgl_softmax_block(const kgl_real *z, kgl_real *p, int rows, int n, double *lse);

/* The same kernels on a chosen path (tests and benchmarks compare them): an
 * ISA the CPU lacks falls back to the best one it has. */
void kgl_vexp_isa(kgl_isa isa, const kgl_real *x, kgl_real *y, int n);
double kgl_softmax_row_isa(kgl_isa isa, const kgl_real *z, kgl_real *p, int n);
void kgl_softmax_row_backward_isa(kgl_isa isa, const kgl_real *p, const kgl_real *g, kgl_real *dz, int n, int add);
void kgl_adam_update_isa(kgl_isa isa, kgl_real *theta, const kgl_real *g, kgl_real *m, kgl_real *v, size_t n,
                         double beta1, double beta2, double eps, double step_size, double bc2_sqrt,
                         double keep);

#endif
