/* vmath.h — vectorised float64 kernels: exp, one softmax row (forward and
 * backward) and the Adam update (private to the engine).
 *
 * Every kernel has three paths — portable C, AVX2+FMA, AVX-512F — chosen at
 * run time by kgl_isa_active() (cpu.h). All three perform the same IEEE
 * operations per element in the same order (no fused multiply-add anywhere),
 * so they return the same bits, whatever the pointers' alignment and wherever
 * an element sits in the array (vmath.c explains how). No allocation, no
 * global state. */
#ifndef KGL_VMATH_H
#define KGL_VMATH_H

#include <stddef.h>

#include "cpu.h"
#include "kgl/engine.h" /* kgl_real */

/* y[i] = exp(x[i]) for 0 <= i < n (y may equal x). Error < 1 ulp over the
 * whole double range (measured max ~0.52 ulp against a long-double
 * reference); exp(+inf) = +inf, exp(-inf) = +0, NaN -> NaN, overflow -> +inf,
 * underflow -> gradual (subnormal results), then +0. */
void kgl_vexp(const kgl_real *x, kgl_real *y, int n);

/* One softmax row, stable: m = max_j z[j]; p[j] = exp(z[j] - m) / S with
 * S = Σ_j exp(z[j] - m). Returns log Σ_j exp(z[j]) = m + log(S). p may equal
 * z; n >= 1. S is summed in 8 lanes (element j goes to lane j mod 8), then
 * the lanes are added in the fixed tree ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
 * A row of only -inf (a fully masked row) gives p = 0 and returns -inf; a
 * row holding +inf or NaN gives NaN. */
double kgl_softmax_row(const kgl_real *z, kgl_real *p, int n);

/* The softmax backward for one row, dz = J g with J = diag(p) − p pᵀ:
 *   dz[j] = p[j] (g[j] − Σ_k p[k] g[k])      (dz[j] += ... if add != 0).
 * Σ_k p[k] g[k] is summed in the same 8-lane order as kgl_softmax_row. */
void kgl_softmax_row_backward(const kgl_real *p, const kgl_real *g, kgl_real *dz, int n, int add);

/* One Adam / AdamW step over n parameters, exactly the loop of
 * kgl_optim_step (params.c), with per-step scalars computed by the caller:
 *   step_size = lr / (1 − β1ᵗ),  bc2_sqrt = √(1 − β2ᵗ),  keep = 1 − lr·wd.
 * For each i:
 *   θ ← θ · keep                          (skipped when keep == 1)
 *   m ← m + (1 − β1)(g − m)
 *   v ← v·β2 + (1 − β2)·g·g               (left to right: ((1 − β2)·g)·g)
 *   θ ← θ − step_size · (m / (√v / bc2_sqrt + eps))
 * Bit-identical to params.c's scalar loop (and to each other ISA path). */
void kgl_adam_update(kgl_real *theta, const kgl_real *g, kgl_real *m, kgl_real *v, size_t n, double beta1,
                     double beta2, double eps, double step_size, double bc2_sqrt, double keep);

/* kgl_softmax_row for each of `rows` rows of n entries (z and p [rows, n],
 * p may equal z; lse NULL or [rows]): the same bits, faster for short rows
 * (their exponentials taken together in one kgl_vexp call). */
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
