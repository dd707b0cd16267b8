/* vmath.c — vectorised float64 kernels (see vmath.h).
 *
 * ========================================================================
 * exp(x)
 * ========================================================================
 * 1. Range reduction. Write x = k·ln2 + r with k = round(x / ln2), so that
 *    |r| <= ln2/2 ≈ 0.3466 and exp(x) = 2^k · exp(r).
 *    - k: t = x·log2(e) + 1.5·2^52 rounds x·log2(e) to an integer (at that
 *      magnitude the spacing of doubles is 1), and k = t − 1.5·2^52 exactly.
 *      (No float→int conversion, so no undefined behaviour for NaN.)
 *    - ln2 = LN2HI + LN2LO (Cody & Waite): LN2HI has 33 significant bits, so
 *      k·LN2HI is exact for |k| < 2^20, and hi = x − k·LN2HI is exact too
 *      (Sterbenz: x and k·LN2HI are within a factor 2 of each other).
 *      lo = k·LN2LO, r = hi − lo (one rounding) and the rounding error of
 *      that subtraction, c = (hi − r) − lo (Fast2Sum), is carried along:
 *      exp(hi − lo) = exp(r + c) ≈ exp(r)·(1 + c).
 * 2. Approximation on |r| <= ln2/2:
 *        exp(r) = 1 + r + r²·q(r),   q(r) = (e^r − 1 − r)/r² ≈ Σ_{i=0..10} C_i r^i,
 *    q a degree-10 near-minimax (Chebyshev-interpolation) fit computed with
 *    50-digit arithmetic (mpmath). With the coefficients rounded to double,
 *    |r²·(q_fit − q)| < 3e-19 ≈ 0.003 ulp of 1. q is evaluated in Estrin
 *    form (pairs C_2i + C_2i+1·r, then Horner in r²). 1 + r is kept as an
 *    unevaluated sum h + hl (h = 1 + r, hl = (1 − h) + r, exact by Fast2Sum
 *    since |r| < 1), and
 *        p = h + (hl + (r²·q + c)),
 *    so the only rounding error of size ~ulp(1) is the last addition (0.5
 *    ulp); the small terms add ≲ 0.3 ulp in the worst case (rounding of r²
 *    and of r²·q, each ≲ 0.07 ulp of p; the approximation exp(r+c) ≈
 *    exp(r) + c, ≲ 0.05 ulp). Measured over 3·10^6 arguments: max 0.66 ulp
 *    (normal results), 0.77 ulp of 2^−1074 (subnormal results).
 * 3. Reconstruction: exp(x) = p · 2^k. 2^k is not representable for
 *    k = 1024 nor (as a normal) for k < −1022, so k = k1 + k2 with
 *    k1 = round(k/2), k2 = k − k1, and y = (p·2^k1)·2^k2. The first product is
 *    exact (p·2^k1 stays normal); the second rounds once, giving +inf on
 *    overflow and the correctly rounded subnormal of p·2^k (a double rounding
 *    of the exact value, error < 1 ulp of the subnormal) on gradual underflow,
 *    and +0 below half the smallest subnormal. 2^k1 is built from bits: for
 *    u = k1 + (1.5·2^52 + 1023) the low 12 bits of u's representation are
 *    k1 + 1023, and shifting the representation left by 52 puts them in the
 *    exponent field: 2^k1 exactly (k1 and k2 lie in [−538, 512]).
 * 4. Specials: x is first clamped to [−746, 710] by comparisons that let NaN
 *    through (NaN → NaN). exp(710) overflows, so x >= 710 and +inf → +inf;
 *    exp(−746) < 2^−1075 rounds to 0, so x <= −746 and −inf → +0. ±0 → 1.
 *    Tiny |x|: r = x, h = 1 + x, and p rounds correctly.
 *
 * Same bits on every path. The portable C function and the AVX2 / AVX-512
 * functions perform the same IEEE-754 double operations (add, sub, mul, div,
 * sqrt, min/max by comparison, integer shift of the bits) in the same order
 * for every element, with no fused multiply-add (FMA would round differently
 * and the portable path cannot afford libm's software fma()). Hence the three
 * paths agree bit for bit. That requires the compiler not to contract a·b + c
 * into an FMA: gcc does not under -std=c11 (ISO mode implies
 * -ffp-contract=off; the Makefile also says so explicitly), and clang is told
 * by the STDC FP_CONTRACT pragma below. The array tail (n not a multiple of
 * the vector width) goes through the same vector code with masked loads and
 * stores, so an element's result never depends on its position or on the
 * pointer's alignment (all loads are unaligned loads).
 *
 * Reductions (softmax's max and Σ, the backward's ⟨p, g⟩) use 8 lanes in
 * every path: element j goes to lane j mod 8 (AVX-512: one register; AVX2:
 * two 4-wide registers, lanes 0–3 and 4–7; portable: an array of 8), and the
 * lanes are combined by the fixed tree (l0∘l4, l1∘l5, l2∘l6, l3∘l7), then
 * (a∘c, b∘d), then the last pair. The empty lanes of a partial last block
 * add +0 (the portable path skips them): lane sums start at +0, so x + (+0)
 * = x bit for bit. For the max, the empty lanes hold −inf in every path.
 *
 * Old-code comparison: kgl_adam_update is bit-identical to params.c's loop.
 * kgl_softmax_row is NOT bit-identical to ops.c's softmax_rows (which uses
 * libm exp and a sequential sum): exp differs from glibc's by at most 1 ulp,
 * and the sum is taken in the 8-lane order above.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vmath.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define EXP_LOG2E 0x1.71547652b82fep0
#define EXP_LN2HI 0x1.62e42fee00000p-1
#define EXP_LN2LO 0x1.a39ef35793c76p-33
#define EXP_SHIFT 0x1.8p52
#define EXP_SHIFT_BIAS (0x1.8p52 + 1023.0)
#define EXP_XMIN (-746.0)
#define EXP_XMAX 710.0

#define EXP_C0 0x1.0000000000000p-1
#define EXP_C1 0x1.5555555555557p-3
#define EXP_C2 0x1.5555555555556p-5
#define EXP_C3 0x1.11111111100dcp-7
#define EXP_C4 0x1.6c16c16c162d4p-10
#define EXP_C5 0x1.a01a01abe7fe1p-13
#define EXP_C6 0x1.a01a01a6d889cp-16
#define EXP_C7 0x1.71de0231960ebp-19
#define EXP_C8 0x1.27e4db646b17ep-22
#define EXP_C9 0x1.af4de97ca4194p-26
#define EXP_C10 0x1.1f730349868cep-29

/* ---------------------------------------------------------------- portable */

static inline double pow2_from_shifted(double u)
{
    uint64_t b;
    memcpy(&b, &u, sizeof b);
    b <<= 52;
    double s;
    memcpy(&s, &b, sizeof s);
    return s;
}

static inline double exp_scalar(double x)
{
    x = EXP_XMIN > x ? EXP_XMIN : x; /* the same selections as (v)maxpd / (v)minpd */
    x = EXP_XMAX < x ? EXP_XMAX : x;
    double t = x * EXP_LOG2E + EXP_SHIFT;
    double k = t - EXP_SHIFT;
    double hi = x - k * EXP_LN2HI;
    double lo = k * EXP_LN2LO;
    double r = hi - lo;
    double c = (hi - r) - lo;
    double r2 = r * r;
    double e0 = EXP_C0 + EXP_C1 * r, e1 = EXP_C2 + EXP_C3 * r, e2 = EXP_C4 + EXP_C5 * r;
    double e3 = EXP_C6 + EXP_C7 * r, e4 = EXP_C8 + EXP_C9 * r;
    double q = EXP_C10 * r2 + e4;
    q = q * r2 + e3;
    q = q * r2 + e2;
    q = q * r2 + e1;
    q = q * r2 + e0;
    double h = 1.0 + r, hl = (1.0 - h) + r; /* h + hl = 1 + r exactly (Fast2Sum) */
    double p = h + (hl + (r2 * q + c));
    double u = k * 0.5 + EXP_SHIFT_BIAS;
    double k1 = u - EXP_SHIFT_BIAS;
    double w = (k - k1) + EXP_SHIFT_BIAS;
    return (p * pow2_from_shifted(u)) * pow2_from_shifted(w);
}

static void vexp_portable(const double *x, double *y, int n)
{
    for (int i = 0; i < n; i++) y[i] = exp_scalar(x[i]);
}

static inline double max_sel(double a, double b) { return a > b ? a : b; } /* = maxpd(a, b) */

static double softmax_portable(const double *z, double *p, int n)
{
    double mx[8], acc[8];
    for (int l = 0; l < 8; l++) mx[l] = -INFINITY, acc[l] = 0.0;
    for (int j = 0; j < n; j++) mx[j & 7] = max_sel(mx[j & 7], z[j]);
    if (n & 7) /* the vector paths fill a partial block's empty lanes with -inf */
        for (int l = n & 7; l < 8; l++) mx[l] = max_sel(mx[l], -INFINITY);
    for (int l = 0; l < 4; l++) mx[l] = max_sel(mx[l], mx[l + 4]);
    for (int l = 0; l < 2; l++) mx[l] = max_sel(mx[l], mx[l + 2]);
    double m = max_sel(mx[0], mx[1]);
    if (m == -INFINITY) {
        for (int j = 0; j < n; j++) p[j] = 0.0;
        return -INFINITY;
    }
    for (int j = 0; j < n; j++) {
        double e = exp_scalar(z[j] - m);
        p[j] = e;
        acc[j & 7] += e;
    }
    for (int l = 0; l < 4; l++) acc[l] += acc[l + 4];
    for (int l = 0; l < 2; l++) acc[l] += acc[l + 2];
    double s = acc[0] + acc[1];
    for (int j = 0; j < n; j++) p[j] = p[j] / s;
    return m + log(s);
}

static void softmax_backward_portable(const double *p, const double *g, double *dz, int n, int add)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int j = 0; j < n; j++) acc[j & 7] += p[j] * g[j];
    for (int l = 0; l < 4; l++) acc[l] += acc[l + 4];
    for (int l = 0; l < 2; l++) acc[l] += acc[l + 2];
    double gp = acc[0] + acc[1];
    if (add)
        for (int j = 0; j < n; j++) dz[j] += p[j] * (g[j] - gp);
    else
        for (int j = 0; j < n; j++) dz[j] = p[j] * (g[j] - gp);
}

static void adam_portable(double *theta, const double *g, double *m, double *v, size_t n, double beta1,
                          double beta2, double eps, double step_size, double bc2_sqrt, double keep)
{
    double one_m_b1 = 1.0 - beta1, one_m_b2 = 1.0 - beta2;
    for (size_t i = 0; i < n; i++) {
        if (keep != 1.0) theta[i] *= keep;
        m[i] += one_m_b1 * (g[i] - m[i]);
        v[i] = v[i] * beta2 + one_m_b2 * g[i] * g[i];
        double denom = sqrt(v[i]) / bc2_sqrt + eps;
        theta[i] -= step_size * (m[i] / denom);
    }
}

/* ------------------------------------------------------------------- x86 */
#if defined(__x86_64__)
#include <immintrin.h>

#define T256 __attribute__((target("avx2,fma")))
#if defined(VMATH_EMULATE_AVX512)
/* TEST ONLY (make test builds it when the CPU lacks AVX-512): the AVX-512
 * code below runs on a scalar model of its intrinsics, on an AVX2 CPU. */
#include "avx512_emul.h"
#define T512 T256
#else
#define T512 __attribute__((target("avx512f,avx512vl,avx512dq,fma")))
#endif

/* ---- AVX-512: 8 lanes */

static inline T512 __m512d exp8(__m512d x)
{
    x = _mm512_max_pd(_mm512_set1_pd(EXP_XMIN), x); /* (XMIN > x) ? XMIN : x — NaN passes */
    x = _mm512_min_pd(_mm512_set1_pd(EXP_XMAX), x); /* (XMAX < x) ? XMAX : x */
    __m512d shift = _mm512_set1_pd(EXP_SHIFT), sb = _mm512_set1_pd(EXP_SHIFT_BIAS);
    __m512d t = _mm512_add_pd(_mm512_mul_pd(x, _mm512_set1_pd(EXP_LOG2E)), shift);
    __m512d k = _mm512_sub_pd(t, shift);
    __m512d hi = _mm512_sub_pd(x, _mm512_mul_pd(k, _mm512_set1_pd(EXP_LN2HI)));
    __m512d lo = _mm512_mul_pd(k, _mm512_set1_pd(EXP_LN2LO));
    __m512d r = _mm512_sub_pd(hi, lo);
    __m512d c = _mm512_sub_pd(_mm512_sub_pd(hi, r), lo);
    __m512d r2 = _mm512_mul_pd(r, r);
#define P8(a, b) _mm512_add_pd(_mm512_set1_pd(a), _mm512_mul_pd(_mm512_set1_pd(b), r))
    __m512d e0 = P8(EXP_C0, EXP_C1), e1 = P8(EXP_C2, EXP_C3), e2 = P8(EXP_C4, EXP_C5);
    __m512d e3 = P8(EXP_C6, EXP_C7), e4 = P8(EXP_C8, EXP_C9);
#undef P8
    __m512d q = _mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(EXP_C10), r2), e4);
    q = _mm512_add_pd(_mm512_mul_pd(q, r2), e3);
    q = _mm512_add_pd(_mm512_mul_pd(q, r2), e2);
    q = _mm512_add_pd(_mm512_mul_pd(q, r2), e1);
    q = _mm512_add_pd(_mm512_mul_pd(q, r2), e0);
    __m512d one = _mm512_set1_pd(1.0);
    __m512d h = _mm512_add_pd(one, r), hl = _mm512_add_pd(_mm512_sub_pd(one, h), r);
    __m512d p = _mm512_add_pd(h, _mm512_add_pd(hl, _mm512_add_pd(_mm512_mul_pd(r2, q), c)));
    __m512d u = _mm512_add_pd(_mm512_mul_pd(k, _mm512_set1_pd(0.5)), sb);
    __m512d k1 = _mm512_sub_pd(u, sb);
    __m512d w = _mm512_add_pd(_mm512_sub_pd(k, k1), sb);
    __m512d s1 = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_castpd_si512(u), 52));
    __m512d s2 = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_castpd_si512(w), 52));
    return _mm512_mul_pd(_mm512_mul_pd(p, s1), s2);
}

static inline T512 __mmask8 tail_mask8(int left) { return (__mmask8)((1u << left) - 1u); }

static T512 void vexp_avx512(const double *x, double *y, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm512_storeu_pd(y + i, exp8(_mm512_loadu_pd(x + i)));
    if (i < n) {
        __mmask8 k = tail_mask8(n - i);
        _mm512_mask_storeu_pd(y + i, k, exp8(_mm512_maskz_loadu_pd(k, x + i)));
    }
}

/* The fixed 8 → 4 → 2 → 1 tree on one 8-lane register (vmath.c's header). */
static inline T512 double hmax8(__m512d v)
{
    __m256d a = _mm256_max_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
    __m128d b = _mm_max_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    __m128d c = _mm_max_sd(b, _mm_unpackhi_pd(b, b)); /* (b0 > b1) ? b0 : b1 */
    return _mm_cvtsd_f64(c);
}

static inline T512 double hsum8(__m512d v)
{
    __m256d a = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
    __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(b, _mm_unpackhi_pd(b, b)));
}

static T512 double softmax_avx512(const double *z, double *p, int n)
{
    const __m512d ninf = _mm512_set1_pd(-INFINITY);
    __m512d mv = ninf;
    int j = 0;
    for (; j + 8 <= n; j += 8) mv = _mm512_max_pd(mv, _mm512_loadu_pd(z + j));
    __mmask8 tk = tail_mask8(n - j);
    int tail = j < n;
    if (tail) mv = _mm512_max_pd(mv, _mm512_mask_loadu_pd(ninf, tk, z + j));
    double m = hmax8(mv);
    if (m == -INFINITY) {
        for (j = 0; j < n; j++) p[j] = 0.0;
        return -INFINITY;
    }
    __m512d mm = _mm512_set1_pd(m), acc = _mm512_setzero_pd();
    for (j = 0; j + 8 <= n; j += 8) {
        __m512d e = exp8(_mm512_sub_pd(_mm512_loadu_pd(z + j), mm));
        _mm512_storeu_pd(p + j, e);
        acc = _mm512_add_pd(acc, e);
    }
    if (tail) {
        __m512d e = exp8(_mm512_sub_pd(_mm512_mask_loadu_pd(ninf, tk, z + j), mm)); /* off lanes: +0 */
        _mm512_mask_storeu_pd(p + j, tk, e);
        acc = _mm512_add_pd(acc, e);
    }
    double s = hsum8(acc);
    __m512d sv = _mm512_set1_pd(s);
    for (j = 0; j + 8 <= n; j += 8) _mm512_storeu_pd(p + j, _mm512_div_pd(_mm512_loadu_pd(p + j), sv));
    if (tail) _mm512_mask_storeu_pd(p + j, tk, _mm512_div_pd(_mm512_maskz_loadu_pd(tk, p + j), sv));
    return m + log(s);
}

static T512 void softmax_backward_avx512(const double *p, const double *g, double *dz, int n, int add)
{
    __m512d acc = _mm512_setzero_pd();
    int j = 0;
    for (; j + 8 <= n; j += 8) acc = _mm512_add_pd(acc, _mm512_mul_pd(_mm512_loadu_pd(p + j), _mm512_loadu_pd(g + j)));
    __mmask8 tk = tail_mask8(n - j);
    int tail = j < n;
    if (tail)
        acc = _mm512_add_pd(acc, _mm512_mul_pd(_mm512_maskz_loadu_pd(tk, p + j), _mm512_maskz_loadu_pd(tk, g + j)));
    __m512d gp = _mm512_set1_pd(hsum8(acc));
    for (j = 0; j + 8 <= n; j += 8) {
        __m512d d = _mm512_mul_pd(_mm512_loadu_pd(p + j), _mm512_sub_pd(_mm512_loadu_pd(g + j), gp));
        if (add) d = _mm512_add_pd(_mm512_loadu_pd(dz + j), d);
        _mm512_storeu_pd(dz + j, d);
    }
    if (tail) {
        __m512d d = _mm512_mul_pd(_mm512_maskz_loadu_pd(tk, p + j), _mm512_sub_pd(_mm512_maskz_loadu_pd(tk, g + j), gp));
        if (add) d = _mm512_add_pd(_mm512_maskz_loadu_pd(tk, dz + j), d);
        _mm512_mask_storeu_pd(dz + j, tk, d);
    }
}

static inline T512 void adam8(double *theta, const double *g, double *m, double *v, __mmask8 k, __m512d b1c,
                              __m512d b2, __m512d b2c, __m512d eps, __m512d step, __m512d bc2, __m512d keep,
                              int decay)
{
    __m512d th = _mm512_maskz_loadu_pd(k, theta), gv = _mm512_maskz_loadu_pd(k, g);
    __m512d mv = _mm512_maskz_loadu_pd(k, m), vv = _mm512_maskz_loadu_pd(k, v);
    if (decay) th = _mm512_mul_pd(th, keep);
    mv = _mm512_add_pd(mv, _mm512_mul_pd(b1c, _mm512_sub_pd(gv, mv)));
    vv = _mm512_add_pd(_mm512_mul_pd(vv, b2), _mm512_mul_pd(_mm512_mul_pd(b2c, gv), gv));
    __m512d denom = _mm512_add_pd(_mm512_div_pd(_mm512_sqrt_pd(vv), bc2), eps);
    th = _mm512_sub_pd(th, _mm512_mul_pd(step, _mm512_div_pd(mv, denom)));
    _mm512_mask_storeu_pd(m, k, mv);
    _mm512_mask_storeu_pd(v, k, vv);
    _mm512_mask_storeu_pd(theta, k, th);
}

static T512 void adam_avx512(double *theta, const double *g, double *m, double *v, size_t n, double beta1,
                             double beta2, double eps, double step_size, double bc2_sqrt, double keep)
{
    __m512d b1c = _mm512_set1_pd(1.0 - beta1), b2 = _mm512_set1_pd(beta2), b2c = _mm512_set1_pd(1.0 - beta2);
    __m512d ev = _mm512_set1_pd(eps), st = _mm512_set1_pd(step_size), bc = _mm512_set1_pd(bc2_sqrt);
    __m512d kv = _mm512_set1_pd(keep);
    int decay = keep != 1.0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) adam8(theta + i, g + i, m + i, v + i, 0xff, b1c, b2, b2c, ev, st, bc, kv, decay);
    if (i < n) adam8(theta + i, g + i, m + i, v + i, tail_mask8((int)(n - i)), b1c, b2, b2c, ev, st, bc, kv, decay);
}

/* ---- AVX2: 4 lanes; the reductions use two registers (8 lanes) */

static inline T256 __m256d exp4(__m256d x)
{
    x = _mm256_max_pd(_mm256_set1_pd(EXP_XMIN), x);
    x = _mm256_min_pd(_mm256_set1_pd(EXP_XMAX), x);
    __m256d shift = _mm256_set1_pd(EXP_SHIFT), sb = _mm256_set1_pd(EXP_SHIFT_BIAS);
    __m256d t = _mm256_add_pd(_mm256_mul_pd(x, _mm256_set1_pd(EXP_LOG2E)), shift);
    __m256d k = _mm256_sub_pd(t, shift);
    __m256d hi = _mm256_sub_pd(x, _mm256_mul_pd(k, _mm256_set1_pd(EXP_LN2HI)));
    __m256d lo = _mm256_mul_pd(k, _mm256_set1_pd(EXP_LN2LO));
    __m256d r = _mm256_sub_pd(hi, lo);
    __m256d c = _mm256_sub_pd(_mm256_sub_pd(hi, r), lo);
    __m256d r2 = _mm256_mul_pd(r, r);
#define P4(a, b) _mm256_add_pd(_mm256_set1_pd(a), _mm256_mul_pd(_mm256_set1_pd(b), r))
    __m256d e0 = P4(EXP_C0, EXP_C1), e1 = P4(EXP_C2, EXP_C3), e2 = P4(EXP_C4, EXP_C5);
    __m256d e3 = P4(EXP_C6, EXP_C7), e4 = P4(EXP_C8, EXP_C9);
#undef P4
    __m256d q = _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(EXP_C10), r2), e4);
    q = _mm256_add_pd(_mm256_mul_pd(q, r2), e3);
    q = _mm256_add_pd(_mm256_mul_pd(q, r2), e2);
    q = _mm256_add_pd(_mm256_mul_pd(q, r2), e1);
    q = _mm256_add_pd(_mm256_mul_pd(q, r2), e0);
    __m256d one = _mm256_set1_pd(1.0);
    __m256d h = _mm256_add_pd(one, r), hl = _mm256_add_pd(_mm256_sub_pd(one, h), r);
    __m256d p = _mm256_add_pd(h, _mm256_add_pd(hl, _mm256_add_pd(_mm256_mul_pd(r2, q), c)));
    __m256d u = _mm256_add_pd(_mm256_mul_pd(k, _mm256_set1_pd(0.5)), sb);
    __m256d k1 = _mm256_sub_pd(u, sb);
    __m256d w = _mm256_add_pd(_mm256_sub_pd(k, k1), sb);
    __m256d s1 = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(u), 52));
    __m256d s2 = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(w), 52));
    return _mm256_mul_pd(_mm256_mul_pd(p, s1), s2);
}

/* Lanes [0, left) set (left may be <= 0 or >= 4). */
static inline T256 __m256i tail_mask4(int left)
{
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(left), _mm256_setr_epi64x(0, 1, 2, 3));
}

static T256 void vexp_avx2(const double *x, double *y, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) { /* two independent vectors per iteration, for latency */
        __m256d a = exp4(_mm256_loadu_pd(x + i)), b = exp4(_mm256_loadu_pd(x + i + 4));
        _mm256_storeu_pd(y + i, a);
        _mm256_storeu_pd(y + i + 4, b);
    }
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(y + i, exp4(_mm256_loadu_pd(x + i)));
    if (i < n) {
        __m256i k = tail_mask4(n - i);
        _mm256_maskstore_pd(y + i, k, exp4(_mm256_maskload_pd(x + i, k)));
    }
}

static inline T256 double hmax4x2(__m256d a, __m256d b)
{
    __m256d v = _mm256_max_pd(a, b);
    __m128d w = _mm_max_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_max_sd(w, _mm_unpackhi_pd(w, w)));
}

static inline T256 double hsum4x2(__m256d a, __m256d b)
{
    __m256d v = _mm256_add_pd(a, b);
    __m128d w = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(w, _mm_unpackhi_pd(w, w)));
}

/* Load 4 doubles at lanes where mask is set, `fill` elsewhere. */
static inline T256 __m256d load_fill4(const double *a, __m256i k, __m256d fill)
{
    return _mm256_blendv_pd(fill, _mm256_maskload_pd(a, k), _mm256_castsi256_pd(k));
}

static T256 double softmax_avx2(const double *z, double *p, int n)
{
    const __m256d ninf = _mm256_set1_pd(-INFINITY);
    __m256d ma = ninf, mb = ninf;
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        ma = _mm256_max_pd(ma, _mm256_loadu_pd(z + j));
        mb = _mm256_max_pd(mb, _mm256_loadu_pd(z + j + 4));
    }
    int tail = j < n;
    __m256i ka = tail_mask4(n - j), kb = tail_mask4(n - j - 4);
    if (tail) {
        ma = _mm256_max_pd(ma, load_fill4(z + j, ka, ninf));
        mb = _mm256_max_pd(mb, load_fill4(z + j + 4, kb, ninf));
    }
    double m = hmax4x2(ma, mb);
    if (m == -INFINITY) {
        for (j = 0; j < n; j++) p[j] = 0.0;
        return -INFINITY;
    }
    __m256d mm = _mm256_set1_pd(m), sa = _mm256_setzero_pd(), sb = _mm256_setzero_pd();
    for (j = 0; j + 8 <= n; j += 8) {
        __m256d ea = exp4(_mm256_sub_pd(_mm256_loadu_pd(z + j), mm));
        __m256d eb = exp4(_mm256_sub_pd(_mm256_loadu_pd(z + j + 4), mm));
        _mm256_storeu_pd(p + j, ea);
        _mm256_storeu_pd(p + j + 4, eb);
        sa = _mm256_add_pd(sa, ea);
        sb = _mm256_add_pd(sb, eb);
    }
    if (tail) { /* the tail's results go through a buffer: a masked store is slow on some CPUs (AMD's) */
        _Alignas(32) double t[8];
        __m256d ea = exp4(_mm256_sub_pd(load_fill4(z + j, ka, ninf), mm));
        __m256d eb = exp4(_mm256_sub_pd(load_fill4(z + j + 4, kb, ninf), mm));
        _mm256_store_pd(t, ea);
        _mm256_store_pd(t + 4, eb);
        for (int k = 0; k < n - j; k++) p[j + k] = t[k];
        sa = _mm256_add_pd(sa, ea);
        sb = _mm256_add_pd(sb, eb);
    }
    double s = hsum4x2(sa, sb);
    __m256d sv = _mm256_set1_pd(s);
    for (j = 0; j + 4 <= n; j += 4) _mm256_storeu_pd(p + j, _mm256_div_pd(_mm256_loadu_pd(p + j), sv));
    for (; j < n; j++) p[j] = p[j] / s; /* the same division, lane by lane */
    return m + log(s);
}

static T256 void softmax_backward_avx2(const double *p, const double *g, double *dz, int n, int add)
{
    __m256d sa = _mm256_setzero_pd(), sb = _mm256_setzero_pd();
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        sa = _mm256_add_pd(sa, _mm256_mul_pd(_mm256_loadu_pd(p + j), _mm256_loadu_pd(g + j)));
        sb = _mm256_add_pd(sb, _mm256_mul_pd(_mm256_loadu_pd(p + j + 4), _mm256_loadu_pd(g + j + 4)));
    }
    if (j < n) {
        __m256i ka = tail_mask4(n - j), kb = tail_mask4(n - j - 4);
        sa = _mm256_add_pd(sa, _mm256_mul_pd(_mm256_maskload_pd(p + j, ka), _mm256_maskload_pd(g + j, ka)));
        sb = _mm256_add_pd(sb, _mm256_mul_pd(_mm256_maskload_pd(p + j + 4, kb), _mm256_maskload_pd(g + j + 4, kb)));
    }
    __m256d gp = _mm256_set1_pd(hsum4x2(sa, sb));
    for (j = 0; j + 4 <= n; j += 4) {
        __m256d d = _mm256_mul_pd(_mm256_loadu_pd(p + j), _mm256_sub_pd(_mm256_loadu_pd(g + j), gp));
        if (add) d = _mm256_add_pd(_mm256_loadu_pd(dz + j), d);
        _mm256_storeu_pd(dz + j, d);
    }
    double gps = _mm256_cvtsd_f64(gp);
    for (; j < n; j++) { /* the same operations, lane by lane (no masked store) */
        double d = p[j] * (g[j] - gps);
        dz[j] = add ? dz[j] + d : d;
    }
}

static inline T256 void adam4(__m256d *th, __m256d gv, __m256d *mv, __m256d *vv, __m256d b1c, __m256d b2,
                              __m256d b2c, __m256d eps, __m256d step, __m256d bc2, __m256d keep, int decay)
{
    if (decay) *th = _mm256_mul_pd(*th, keep);
    *mv = _mm256_add_pd(*mv, _mm256_mul_pd(b1c, _mm256_sub_pd(gv, *mv)));
    *vv = _mm256_add_pd(_mm256_mul_pd(*vv, b2), _mm256_mul_pd(_mm256_mul_pd(b2c, gv), gv));
    __m256d denom = _mm256_add_pd(_mm256_div_pd(_mm256_sqrt_pd(*vv), bc2), eps);
    *th = _mm256_sub_pd(*th, _mm256_mul_pd(step, _mm256_div_pd(*mv, denom)));
}

static T256 void adam_avx2(double *theta, const double *g, double *m, double *v, size_t n, double beta1,
                           double beta2, double eps, double step_size, double bc2_sqrt, double keep)
{
    __m256d b1c = _mm256_set1_pd(1.0 - beta1), b2 = _mm256_set1_pd(beta2), b2c = _mm256_set1_pd(1.0 - beta2);
    __m256d ev = _mm256_set1_pd(eps), st = _mm256_set1_pd(step_size), bc = _mm256_set1_pd(bc2_sqrt);
    __m256d kv = _mm256_set1_pd(keep);
    int decay = keep != 1.0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d th = _mm256_loadu_pd(theta + i), mv = _mm256_loadu_pd(m + i), vv = _mm256_loadu_pd(v + i);
        adam4(&th, _mm256_loadu_pd(g + i), &mv, &vv, b1c, b2, b2c, ev, st, bc, kv, decay);
        _mm256_storeu_pd(m + i, mv);
        _mm256_storeu_pd(v + i, vv);
        _mm256_storeu_pd(theta + i, th);
    }
    if (i < n) {
        __m256i k = tail_mask4((int)(n - i));
        __m256d th = _mm256_maskload_pd(theta + i, k), mv = _mm256_maskload_pd(m + i, k);
        __m256d vv = _mm256_maskload_pd(v + i, k);
        adam4(&th, _mm256_maskload_pd(g + i, k), &mv, &vv, b1c, b2, b2c, ev, st, bc, kv, decay);
        _mm256_maskstore_pd(m + i, k, mv);
        _mm256_maskstore_pd(v + i, k, vv);
        _mm256_maskstore_pd(theta + i, k, th);
    }
}
#endif /* __x86_64__ */

/* -------------------------------------------------------------- dispatch */

static kgl_isa usable(kgl_isa want)
{
    kgl_isa best = kgl_isa_best();
#if defined(VMATH_EMULATE_AVX512)
    if (best == KGL_ISA_AVX2) best = KGL_ISA_AVX512;
#endif
    return want < best ? want : best;
}

void kgl_vexp_isa(kgl_isa isa, const double *x, double *y, int n)
{
    switch (usable(isa)) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: vexp_avx512(x, y, n); return;
    case KGL_ISA_AVX2: vexp_avx2(x, y, n); return;
#endif
    default: vexp_portable(x, y, n); return;
    }
}

double kgl_softmax_row_isa(kgl_isa isa, const double *z, double *p, int n)
{
    switch (usable(isa)) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: return softmax_avx512(z, p, n);
    case KGL_ISA_AVX2: return softmax_avx2(z, p, n);
#endif
    default: return softmax_portable(z, p, n);
    }
}

void kgl_softmax_row_backward_isa(kgl_isa isa, const double *p, const double *g, double *dz, int n, int add)
{
    switch (usable(isa)) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: softmax_backward_avx512(p, g, dz, n, add); return;
    case KGL_ISA_AVX2: softmax_backward_avx2(p, g, dz, n, add); return;
#endif
    default: softmax_backward_portable(p, g, dz, n, add); return;
    }
}

void kgl_adam_update_isa(kgl_isa isa, double *theta, const double *g, double *m, double *v, size_t n,
                         double beta1, double beta2, double eps, double step_size, double bc2_sqrt, double keep)
{
    switch (usable(isa)) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: adam_avx512(theta, g, m, v, n, beta1, beta2, eps, step_size, bc2_sqrt, keep); return;
    case KGL_ISA_AVX2: adam_avx2(theta, g, m, v, n, beta1, beta2, eps, step_size, bc2_sqrt, keep); return;
#endif
    default: adam_portable(theta, g, m, v, n, beta1, beta2, eps, step_size, bc2_sqrt, keep); return;
    }
}

/* kgl_isa_active() already lies within kgl_isa_best(), so no clamping here. */
void kgl_vexp(const double *x, double *y, int n)
{
    switch (kgl_isa_active()) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: vexp_avx512(x, y, n); return;
    case KGL_ISA_AVX2: vexp_avx2(x, y, n); return;
#endif
    default: vexp_portable(x, y, n); return;
    }
}

double kgl_softmax_row(const double *z, double *p, int n)
{
    switch (kgl_isa_active()) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: return softmax_avx512(z, p, n);
    case KGL_ISA_AVX2: return softmax_avx2(z, p, n);
#endif
    default: return softmax_portable(z, p, n);
    }
}

void kgl_softmax_row_backward(const double *p, const double *g, double *dz, int n, int add)
{
    switch (kgl_isa_active()) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: softmax_backward_avx512(p, g, dz, n, add); return;
    case KGL_ISA_AVX2: softmax_backward_avx2(p, g, dz, n, add); return;
#endif
    default: softmax_backward_portable(p, g, dz, n, add); return;
    }
}

void kgl_adam_update(double *theta, const double *g, double *m, double *v, size_t n, double beta1, double beta2,
                     double eps, double step_size, double bc2_sqrt, double keep)
{
    switch (kgl_isa_active()) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: adam_avx512(theta, g, m, v, n, beta1, beta2, eps, step_size, bc2_sqrt, keep); return;
    case KGL_ISA_AVX2: adam_avx2(theta, g, m, v, n, beta1, beta2, eps, step_size, bc2_sqrt, keep); return;
#endif
    default: adam_portable(theta, g, m, v, n, beta1, beta2, eps, step_size, bc2_sqrt, keep); return;
    }
}

/* ---- many short rows at once ------------------------------------------------
 * A row of a dozen entries is too short to keep the vector exp busy: its
 * chain of dependent operations, not the arithmetic, sets the time. So for
 * short rows the exponentials of a whole block of rows are taken in one
 * kgl_vexp call over contiguous memory, between a max pass and a sum pass
 * written exactly as softmax_portable's (8 lanes, the same trees). exp,
 * subtraction, the sums and the division are the same operations as
 * kgl_softmax_row's on every path, so the bits are the same (a test). */
#define BLOCK_ROWS 64

void kgl_softmax_block(const double *z, double *p, int rows, int n, double *lse)
{
    if (n >= 32) { /* long rows keep the row kernel busy on their own */
        for (int r = 0; r < rows; r++) {
            double l = kgl_softmax_row(z + (size_t)r * n, p + (size_t)r * n, n);
            if (lse) lse[r] = l;
        }
        return;
    }
    double m[BLOCK_ROWS];
    for (int r0 = 0; r0 < rows; r0 += BLOCK_ROWS) {
        int r1 = r0 + BLOCK_ROWS < rows ? r0 + BLOCK_ROWS : rows;
        for (int r = r0; r < r1; r++) {
            const double *zr = z + (size_t)r * n;
            double mx[8];
            for (int l = 0; l < 8; l++) mx[l] = -INFINITY;
            for (int j = 0; j < n; j++) mx[j & 7] = max_sel(mx[j & 7], zr[j]);
            if (n & 7)
                for (int l = n & 7; l < 8; l++) mx[l] = max_sel(mx[l], -INFINITY);
            for (int l = 0; l < 4; l++) mx[l] = max_sel(mx[l], mx[l + 4]);
            for (int l = 0; l < 2; l++) mx[l] = max_sel(mx[l], mx[l + 2]);
            m[r - r0] = max_sel(mx[0], mx[1]);
            double *pr = p + (size_t)r * n;
            double mr = m[r - r0];
            for (int j = 0; j < n; j++) pr[j] = mr == -INFINITY ? -INFINITY : zr[j] - mr;
        }
        kgl_vexp(p + (size_t)r0 * n, p + (size_t)r0 * n, (r1 - r0) * n);
        for (int r = r0; r < r1; r++) {
            double *pr = p + (size_t)r * n, acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (m[r - r0] == -INFINITY) { /* a fully masked row: no weight anywhere */
                for (int j = 0; j < n; j++) pr[j] = 0.0;
                if (lse) lse[r] = -INFINITY;
                continue;
            }
            for (int j = 0; j < n; j++) acc[j & 7] += pr[j];
            for (int l = 0; l < 4; l++) acc[l] += acc[l + 4];
            for (int l = 0; l < 2; l++) acc[l] += acc[l + 2];
            double sum = acc[0] + acc[1];
            for (int j = 0; j < n; j++) pr[j] = pr[j] / sum;
            if (lse) lse[r] = m[r - r0] + log(sum);
        }
    }
}
