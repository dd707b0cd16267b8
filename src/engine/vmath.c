/* vmath.c — vectorised kernels in kgl_real (see vmath.h): float64, or
 * float32 when the library is built with -DKGL_FLOAT32.
 *
 * One algorithm per kernel and precision. The portable functions are written
 * once, in kgl_real; the vector functions once per precision and ISA (float64:
 * 8 lanes in AVX-512, 4 in AVX2; float32: 16 and 8), each the portable
 * function's operations lane by lane.
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
 * float32: the same four steps in float, with the constants of float:
 *    k from t = x·log2(e) + 1.5·2^23; LN2HI = 0x1.62e4p-1 has 15 significant
 *    bits, so k·LN2HI is exact for |k| < 2^9 (here |k| <= 150); q of degree
 *    4, a Remez fit of weight r²/e^r on |r| <= 0.3467 (mpmath, 50 digits),
 *    whose float coefficients leave |r²·(q_fit − q)| / e^r < 3.7e-9 ≈ 2^−28
 *    (0.06 ulp); 2^k1 from the low 9 bits of u = k1 + (1.5·2^23 + 127)
 *    shifted left by 23. Step 4 differs: x is clamped to 89 from above
 *    (exp(89) overflows float), but below XZERO = −0x1.9fe368p6 ≈ −103.972
 *    (the last float whose exp rounds to 2^−149, not to 0) the lane is
 *    computed at x = 0 and its result replaced by +0. Clamping it instead
 *    would compute an underflowing product, and x86 vector units take a
 *    microcode assist on every one: measured, an exp(−inf) cost 14 times an
 *    ordinary exp, and softmax rows meet them in every masked entry and
 *    every partial last block (the −inf lanes). Hence k ∈ [−150, 128] and
 *    k1, k2 ∈ [−75, 64]. Measured on every one of the 2^32 floats against
 *    double exp: max 0.727 ulp (normal results), 0.790 units of 2^−149
 *    (subnormal results); the same classes of specials as above. The
 *    AVX-512 path reconstructs with one vscalefps, p·2^k rounded once:
 *    exactly the value of the two products (the first is exact), so still
 *    the same bits.
 *
 * Same bits on every path. The portable C function and the AVX2 / AVX-512
 * functions perform the same IEEE-754 operations (add, sub, mul, div, sqrt,
 * min/max by comparison, integer shift of the bits; float32's vscalefps is
 * the correctly rounded p·2^k above) in the same order for every element,
 * with no fused multiply-add (FMA would round differently and the portable
 * path cannot afford libm's software fma()). Hence the three paths agree bit
 * for bit. That requires the compiler not to contract a·b + c into an FMA:
 * gcc does not under -std=c11 (ISO mode implies -ffp-contract=off), and
 * clang is told by the STDC FP_CONTRACT pragma below. The array tail (n not a
 * multiple of the vector width) goes through the same vector code with
 * masked loads and stores, so an element's result never depends on its
 * position or on the pointer's alignment (all loads are unaligned loads).
 *
 * Reductions (softmax's max and Σ, the backward's ⟨p, g⟩) use L lanes in
 * every path, L = 8 in float64 and 16 in float32: element j goes to lane
 * j mod L, and the lanes are combined by the fixed tree l_i ∘ l_{i+L/2} for
 * i < L/2, then the same on the first half, down to l0 ∘ l1 — for L = 8:
 * (l0∘l4, l1∘l5, l2∘l6, l3∘l7), then (a∘c, b∘d), then the last pair. The
 * sums accumulate in double in both precisions (a float converts exactly,
 * and so does the product of two floats: 48 significant bits). The lanes:
 *    float64  AVX-512: one 8-double register; AVX2: two 4-double registers
 *             (lanes 0–3, 4–7).
 *    float32  max: AVX-512 one 16-float register, AVX2 two 8-float ones;
 *             sums: AVX-512 two 8-double registers (lanes 0–7, 8–15), AVX2
 *             four 4-double registers (0–3, 4–7, 8–11, 12–15).
 *    portable an array of L.
 * The empty lanes of a partial last block add +0 (the portable path skips
 * them): lane sums start at +0 and can never become −0, so x + (+0) = x bit
 * for bit. For the max, the empty lanes hold −inf in every path.
 *
 * Softmax normalisation: float64 p = e / S; float32 p = e · r with
 * r = (float)(1 / S) (the division in double, rounded once to float): a
 * multiply per entry instead of a division, ten times slower in float32's
 * vectors; the error is ≲ 1 ulp of p more than the exp's.
 *
 * Old-code comparison: kgl_adam_update is bit-identical to params.c's loop.
 * kgl_softmax_row is NOT bit-identical to ops.c's softmax_rows (which uses
 * libm exp and a sequential sum): exp differs from glibc's by at most 1 ulp,
 * and the sum is taken in the lane order above.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vmath.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#ifdef KGL_FLOAT32
#define LANES 16 /* of the reductions */
typedef uint32_t real_bits;
#define EXP_MANT_BITS 23
#define EXP_LOG2E 0x1.715476p0f
#define EXP_LN2HI 0x1.62e4p-1f
#define EXP_LN2LO 0x1.7f7d1cp-20f
#define EXP_SHIFT 0x1.8p23f
#define EXP_SHIFT_BIAS (0x1.8p23f + 127.0f)
#define EXP_XZERO (-0x1.9fe368p6f) /* below it, exp rounds to +0 */
#define EXP_XMAX 89.0f

#define EXP_C0 0x1.fffffcp-2f
#define EXP_C1 0x1.555492p-3f
#define EXP_C2 0x1.5558f2p-5f
#define EXP_C3 0x1.123a0ap-7f
#define EXP_C4 0x1.6a23f0p-10f
#else
#define LANES 8
typedef uint64_t real_bits;
#define EXP_MANT_BITS 52
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
#endif

/* ---------------------------------------------------------------- portable */

static inline kgl_real pow2_from_shifted(kgl_real u)
{
    real_bits b;
    memcpy(&b, &u, sizeof b);
    b <<= EXP_MANT_BITS;
    kgl_real s;
    memcpy(&s, &b, sizeof s);
    return s;
}

/* q(r) of step 2, Estrin form. */
static inline kgl_real exp_poly(kgl_real r, kgl_real r2)
{
#ifdef KGL_FLOAT32
    float e0 = EXP_C0 + EXP_C1 * r, e1 = EXP_C2 + EXP_C3 * r;
    float q = EXP_C4 * r2 + e1;
    return q * r2 + e0;
#else
    double e0 = EXP_C0 + EXP_C1 * r, e1 = EXP_C2 + EXP_C3 * r, e2 = EXP_C4 + EXP_C5 * r;
    double e3 = EXP_C6 + EXP_C7 * r, e4 = EXP_C8 + EXP_C9 * r;
    double q = EXP_C10 * r2 + e4;
    q = q * r2 + e3;
    q = q * r2 + e2;
    q = q * r2 + e1;
    return q * r2 + e0;
#endif
}

/* Steps 1–3 of the header, x at most EXP_XMAX after the clamp. */
static inline kgl_real exp_reduced(kgl_real x)
{
    x = EXP_XMAX < x ? EXP_XMAX : x; /* the same selection as (v)minp */
    kgl_real t = x * EXP_LOG2E + EXP_SHIFT;
    kgl_real k = t - EXP_SHIFT;
    kgl_real hi = x - k * EXP_LN2HI;
    kgl_real lo = k * EXP_LN2LO;
    kgl_real r = hi - lo;
    kgl_real c = (hi - r) - lo;
    kgl_real r2 = r * r;
    kgl_real q = exp_poly(r, r2);
    kgl_real h = 1 + r, hl = (1 - h) + r; /* h + hl = 1 + r exactly (Fast2Sum) */
    kgl_real p = h + (hl + (r2 * q + c));
    kgl_real u = k * (kgl_real)0.5 + EXP_SHIFT_BIAS;
    kgl_real k1 = u - EXP_SHIFT_BIAS;
    kgl_real w = (k - k1) + EXP_SHIFT_BIAS;
    return (p * pow2_from_shifted(u)) * pow2_from_shifted(w);
}

#ifdef KGL_FLOAT32
/* x < XZERO: computed at x = 0, then replaced by +0 (header, step 4). */
static inline float exp_scalar(float x)
{
    int zero = x < EXP_XZERO;
    float y = exp_reduced(zero ? 0.0f : x);
    return zero ? 0.0f : y;
}
#else
static inline double exp_scalar(double x) { return exp_reduced(EXP_XMIN > x ? EXP_XMIN : x); } /* = (v)maxpd */
#endif

static void vexp_portable(const kgl_real *x, kgl_real *y, int n)
{
    for (int i = 0; i < n; i++) y[i] = exp_scalar(x[i]);
}

static inline kgl_real max_sel(kgl_real a, kgl_real b) { return a > b ? a : b; } /* = maxp(a, b) */

/* The row's maximum: lane j mod LANES, then the fixed tree (levels written
 * out, as in lane_sum). */
static inline kgl_real row_max(const kgl_real *z, int n)
{
    kgl_real mx[LANES];
    for (int l = 0; l < LANES; l++) mx[l] = -INFINITY;
    for (int j = 0; j < n; j++) mx[j % LANES] = max_sel(mx[j % LANES], z[j]);
    if (n % LANES) /* the vector paths fill a partial block's empty lanes with -inf */
        for (int l = n % LANES; l < LANES; l++) mx[l] = max_sel(mx[l], -INFINITY);
#if LANES == 16
    for (int l = 0; l < 8; l++) mx[l] = max_sel(mx[l], mx[l + 8]);
#endif
    for (int l = 0; l < 4; l++) mx[l] = max_sel(mx[l], mx[l + 4]);
    for (int l = 0; l < 2; l++) mx[l] = max_sel(mx[l], mx[l + 2]);
    return max_sel(mx[0], mx[1]);
}

/* The fixed tree over the lane sums (acc is consumed). Its levels are
 * written out: gcc keeps a loop over the level in memory (slower). */
static inline double lane_sum(double acc[LANES])
{
#if LANES == 16
    for (int l = 0; l < 8; l++) acc[l] += acc[l + 8];
#endif
    for (int l = 0; l < 4; l++) acc[l] += acc[l + 4];
    for (int l = 0; l < 2; l++) acc[l] += acc[l + 2];
    return acc[0] + acc[1];
}

/* p = e / S (float64) or e · (float)(1 / S) (float32): see the header. */
#ifdef KGL_FLOAT32
static inline float normaliser(double s) { return (float)(1.0 / s); }
static inline float normalise(float e, float r) { return e * r; }
#else
static inline double normaliser(double s) { return s; }
static inline double normalise(double e, double s) { return e / s; }
#endif

/* A row whose max is -inf: every entry -inf (a fully masked row: no weight
   anywhere, log-sum-exp -inf) or NaN, which the max passes over: then the
   row is NaN, p and the result, so that a NaN in the logits is never read as
   a mask. Checked before p is written (p may be z). */
static double masked_row(const kgl_real *z, kgl_real *p, int n)
{
    bool nan = false;
    for (int j = 0; j < n; j++) nan = nan || z[j] != z[j];
    for (int j = 0; j < n; j++) p[j] = nan ? (kgl_real)NAN : 0;
    return nan ? NAN : -INFINITY;
}

static double softmax_portable(const kgl_real *z, kgl_real *p, int n)
{
    kgl_real m = row_max(z, n);
    if (m == -INFINITY) return masked_row(z, p, n);
    double acc[LANES] = {0};
    for (int j = 0; j < n; j++) {
        kgl_real e = exp_scalar(z[j] - m);
        p[j] = e;
        acc[j % LANES] += e;
    }
    double s = lane_sum(acc);
    kgl_real r = normaliser(s);
    for (int j = 0; j < n; j++) p[j] = normalise(p[j], r);
    return m + log(s);
}

static void softmax_backward_portable(const kgl_real *p, const kgl_real *g, kgl_real *dz, int n, int add)
{
    double acc[LANES] = {0};
    for (int j = 0; j < n; j++) acc[j % LANES] += (double)p[j] * g[j];
    kgl_real gp = (kgl_real)lane_sum(acc);
    if (add)
        for (int j = 0; j < n; j++) dz[j] += p[j] * (g[j] - gp);
    else
        for (int j = 0; j < n; j++) dz[j] = p[j] * (g[j] - gp);
}

/* Adam's per-step scalars, converted to kgl_real once (1 − β in double
 * first): every path uses these values. */
typedef struct {
    kgl_real one_m_b1, beta2, one_m_b2, eps, step_size, bc2_sqrt, keep;
    int decay; /* keep != 1 (multiplying by 1 would change no bit anyway) */
} adam_scalars;

static adam_scalars adam_scalars_of(double beta1, double beta2, double eps, double step_size, double bc2_sqrt,
                                    double keep)
{
    adam_scalars a = {(kgl_real)(1.0 - beta1), (kgl_real)beta2, (kgl_real)(1.0 - beta2), (kgl_real)eps,
                      (kgl_real)step_size, (kgl_real)bc2_sqrt, (kgl_real)keep, 0};
    a.decay = a.keep != 1;
    return a;
}

static void adam_portable(kgl_real *theta, const kgl_real *g, kgl_real *m, kgl_real *v, size_t n, adam_scalars a)
{
    for (size_t i = 0; i < n; i++) {
        if (a.decay) theta[i] *= a.keep;
        m[i] += a.one_m_b1 * (g[i] - m[i]);
        v[i] = v[i] * a.beta2 + a.one_m_b2 * g[i] * g[i];
#ifdef KGL_FLOAT32
        float denom = sqrtf(v[i]) / a.bc2_sqrt + a.eps;
#else
        double denom = sqrt(v[i]) / a.bc2_sqrt + a.eps;
#endif
        theta[i] -= a.step_size * (m[i] / denom);
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

/* The fixed 8 → 4 → 2 → 1 tree of a sum of 8 double lanes (vmath.c's header);
 * in AVX2 the lanes are two registers, 0–3 and 4–7. */
static inline T512 double hsum8(__m512d v)
{
    __m256d a = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
    __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(b, _mm_unpackhi_pd(b, b)));
}

static inline T256 double hsum4x2(__m256d a, __m256d b)
{
    __m256d v = _mm256_add_pd(a, b);
    __m128d w = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(w, _mm_unpackhi_pd(w, w)));
}

#ifdef KGL_FLOAT32
/* ---- AVX-512, float32: 16 lanes; the sums in two 8-double registers */

static inline T512 __m512 exp16(__m512 x)
{
    __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_XZERO), _CMP_NLT_UQ); /* !(x < XZERO): NaN lives */
    x = _mm512_maskz_mov_ps(live, x);
    x = _mm512_min_ps(_mm512_set1_ps(EXP_XMAX), x); /* (XMAX < x) ? XMAX : x — NaN passes */
    __m512 shift = _mm512_set1_ps(EXP_SHIFT);
    __m512 t = _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(EXP_LOG2E)), shift);
    __m512 k = _mm512_sub_ps(t, shift);
    __m512 hi = _mm512_sub_ps(x, _mm512_mul_ps(k, _mm512_set1_ps(EXP_LN2HI)));
    __m512 lo = _mm512_mul_ps(k, _mm512_set1_ps(EXP_LN2LO));
    __m512 r = _mm512_sub_ps(hi, lo);
    __m512 c = _mm512_sub_ps(_mm512_sub_ps(hi, r), lo);
    __m512 r2 = _mm512_mul_ps(r, r);
    __m512 e0 = _mm512_add_ps(_mm512_set1_ps(EXP_C0), _mm512_mul_ps(_mm512_set1_ps(EXP_C1), r));
    __m512 e1 = _mm512_add_ps(_mm512_set1_ps(EXP_C2), _mm512_mul_ps(_mm512_set1_ps(EXP_C3), r));
    __m512 q = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(EXP_C4), r2), e1);
    q = _mm512_add_ps(_mm512_mul_ps(q, r2), e0);
    __m512 one = _mm512_set1_ps(1.0f);
    __m512 h = _mm512_add_ps(one, r), hl = _mm512_add_ps(_mm512_sub_ps(one, h), r);
    __m512 p = _mm512_add_ps(h, _mm512_add_ps(hl, _mm512_add_ps(_mm512_mul_ps(r2, q), c)));
    return _mm512_maskz_mov_ps(live, _mm512_scalef_ps(p, k)); /* p·2^k rounded once: exp_reduced's two products */
}

static inline T512 __mmask16 tail_mask16(int left) { return (__mmask16)((1u << left) - 1u); }

static T512 void vexp_avx512(const float *x, float *y, int n)
{
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp16(_mm512_loadu_ps(x + i)));
    if (i < n) {
        __mmask16 k = tail_mask16(n - i);
        _mm512_mask_storeu_ps(y + i, k, exp16(_mm512_maskz_loadu_ps(k, x + i)));
    }
}

/* The tree's last three levels on 8 float lanes: l_i ∘ l_{i+4}, l_i ∘ l_{i+2}, l0 ∘ l1. */
static inline T256 float hmax8f(__m256 a)
{
    __m128 b = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    b = _mm_max_ps(b, _mm_movehl_ps(b, b));
    return _mm_cvtss_f32(_mm_max_ss(b, _mm_shuffle_ps(b, b, 1))); /* (b0 > b1) ? b0 : b1 */
}

static inline T512 __m256 upper8(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

/* Lanes 0–7 and 8–15 of v, converted (exactly) to double. */
static inline T512 __m512d lower8_pd(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
static inline T512 __m512d upper8_pd(__m512 v) { return _mm512_cvtps_pd(upper8(v)); }

static T512 double softmax_avx512(const float *z, float *p, int n)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 mv = ninf;
    int j = 0;
    for (; j + 16 <= n; j += 16) mv = _mm512_max_ps(mv, _mm512_loadu_ps(z + j));
    __mmask16 tk = tail_mask16(n - j);
    int tail = j < n;
    if (tail) mv = _mm512_max_ps(mv, _mm512_mask_loadu_ps(ninf, tk, z + j));
    float m = hmax8f(_mm256_max_ps(_mm512_castps512_ps256(mv), upper8(mv)));
    if (m == -INFINITY) return masked_row(z, p, n);
    __m512 mm = _mm512_set1_ps(m);
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (j = 0; j + 16 <= n; j += 16) {
        __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(z + j), mm));
        _mm512_storeu_ps(p + j, e);
        lo = _mm512_add_pd(lo, lower8_pd(e));
        hi = _mm512_add_pd(hi, upper8_pd(e));
    }
    __m512 et = _mm512_setzero_ps(); /* the tail's exps stay in a register: a load of a masked store stalls */
    if (tail) {
        et = exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, tk, z + j), mm)); /* off lanes: +0 */
        lo = _mm512_add_pd(lo, lower8_pd(et));
        hi = _mm512_add_pd(hi, upper8_pd(et));
    }
    double s = hsum8(_mm512_add_pd(lo, hi));
    __m512 rv = _mm512_set1_ps(normaliser(s));
    for (j = 0; j + 16 <= n; j += 16) _mm512_storeu_ps(p + j, _mm512_mul_ps(_mm512_loadu_ps(p + j), rv));
    if (tail) _mm512_mask_storeu_ps(p + j, tk, _mm512_mul_ps(et, rv));
    return m + log(s);
}

static T512 void softmax_backward_avx512(const float *p, const float *g, float *dz, int n, int add)
{
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512 pv = _mm512_loadu_ps(p + j), gv = _mm512_loadu_ps(g + j);
        lo = _mm512_add_pd(lo, _mm512_mul_pd(lower8_pd(pv), lower8_pd(gv)));
        hi = _mm512_add_pd(hi, _mm512_mul_pd(upper8_pd(pv), upper8_pd(gv)));
    }
    __mmask16 tk = tail_mask16(n - j);
    int tail = j < n;
    if (tail) {
        __m512 pv = _mm512_maskz_loadu_ps(tk, p + j), gv = _mm512_maskz_loadu_ps(tk, g + j);
        lo = _mm512_add_pd(lo, _mm512_mul_pd(lower8_pd(pv), lower8_pd(gv)));
        hi = _mm512_add_pd(hi, _mm512_mul_pd(upper8_pd(pv), upper8_pd(gv)));
    }
    __m512 gp = _mm512_set1_ps((float)hsum8(_mm512_add_pd(lo, hi)));
    for (j = 0; j + 16 <= n; j += 16) {
        __m512 d = _mm512_mul_ps(_mm512_loadu_ps(p + j), _mm512_sub_ps(_mm512_loadu_ps(g + j), gp));
        if (add) d = _mm512_add_ps(_mm512_loadu_ps(dz + j), d);
        _mm512_storeu_ps(dz + j, d);
    }
    if (tail) {
        __m512 d = _mm512_mul_ps(_mm512_maskz_loadu_ps(tk, p + j), _mm512_sub_ps(_mm512_maskz_loadu_ps(tk, g + j), gp));
        if (add) d = _mm512_add_ps(_mm512_maskz_loadu_ps(tk, dz + j), d);
        _mm512_mask_storeu_ps(dz + j, tk, d);
    }
}

static inline T512 void adam16(float *theta, const float *g, float *m, float *v, __mmask16 k, const adam_scalars *a)
{
    __m512 th = _mm512_maskz_loadu_ps(k, theta), gv = _mm512_maskz_loadu_ps(k, g);
    __m512 mv = _mm512_maskz_loadu_ps(k, m), vv = _mm512_maskz_loadu_ps(k, v);
    if (a->decay) th = _mm512_mul_ps(th, _mm512_set1_ps(a->keep));
    mv = _mm512_add_ps(mv, _mm512_mul_ps(_mm512_set1_ps(a->one_m_b1), _mm512_sub_ps(gv, mv)));
    vv = _mm512_add_ps(_mm512_mul_ps(vv, _mm512_set1_ps(a->beta2)),
                       _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(a->one_m_b2), gv), gv));
    __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vv), _mm512_set1_ps(a->bc2_sqrt)),
                                 _mm512_set1_ps(a->eps));
    th = _mm512_sub_ps(th, _mm512_mul_ps(_mm512_set1_ps(a->step_size), _mm512_div_ps(mv, denom)));
    _mm512_mask_storeu_ps(m, k, mv);
    _mm512_mask_storeu_ps(v, k, vv);
    _mm512_mask_storeu_ps(theta, k, th);
}

static T512 void adam_avx512(float *theta, const float *g, float *m, float *v, size_t n, adam_scalars a)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) adam16(theta + i, g + i, m + i, v + i, 0xffff, &a);
    if (i < n) adam16(theta + i, g + i, m + i, v + i, tail_mask16((int)(n - i)), &a);
}

/* ---- AVX2, float32: 8 lanes; the max in two registers (16 lanes), the sums in four 4-double ones */

static inline T256 __m256 exp8f(__m256 x)
{
    __m256 zero = _mm256_cmp_ps(x, _mm256_set1_ps(EXP_XZERO), _CMP_LT_OQ);
    x = _mm256_andnot_ps(zero, x);
    x = _mm256_min_ps(_mm256_set1_ps(EXP_XMAX), x);
    __m256 shift = _mm256_set1_ps(EXP_SHIFT), sb = _mm256_set1_ps(EXP_SHIFT_BIAS);
    __m256 t = _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(EXP_LOG2E)), shift);
    __m256 k = _mm256_sub_ps(t, shift);
    __m256 hi = _mm256_sub_ps(x, _mm256_mul_ps(k, _mm256_set1_ps(EXP_LN2HI)));
    __m256 lo = _mm256_mul_ps(k, _mm256_set1_ps(EXP_LN2LO));
    __m256 r = _mm256_sub_ps(hi, lo);
    __m256 c = _mm256_sub_ps(_mm256_sub_ps(hi, r), lo);
    __m256 r2 = _mm256_mul_ps(r, r);
    __m256 e0 = _mm256_add_ps(_mm256_set1_ps(EXP_C0), _mm256_mul_ps(_mm256_set1_ps(EXP_C1), r));
    __m256 e1 = _mm256_add_ps(_mm256_set1_ps(EXP_C2), _mm256_mul_ps(_mm256_set1_ps(EXP_C3), r));
    __m256 q = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(EXP_C4), r2), e1);
    q = _mm256_add_ps(_mm256_mul_ps(q, r2), e0);
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 h = _mm256_add_ps(one, r), hl = _mm256_add_ps(_mm256_sub_ps(one, h), r);
    __m256 p = _mm256_add_ps(h, _mm256_add_ps(hl, _mm256_add_ps(_mm256_mul_ps(r2, q), c)));
    __m256 u = _mm256_add_ps(_mm256_mul_ps(k, _mm256_set1_ps(0.5f)), sb);
    __m256 k1 = _mm256_sub_ps(u, sb);
    __m256 w = _mm256_add_ps(_mm256_sub_ps(k, k1), sb);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(u), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(w), 23));
    return _mm256_andnot_ps(zero, _mm256_mul_ps(_mm256_mul_ps(p, s1), s2));
}

/* Lanes [0, left) set (left may be <= 0 or >= 8). */
static inline T256 __m256i tail_mask8(int left)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static T256 void vexp_avx2(const float *x, float *y, int n)
{
    int i = 0;
    for (; i + 16 <= n; i += 16) { /* two independent vectors per iteration, for latency */
        __m256 a = exp8f(_mm256_loadu_ps(x + i)), b = exp8f(_mm256_loadu_ps(x + i + 8));
        _mm256_storeu_ps(y + i, a);
        _mm256_storeu_ps(y + i + 8, b);
    }
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp8f(_mm256_loadu_ps(x + i)));
    if (i < n) {
        __m256i k = tail_mask8(n - i);
        _mm256_maskstore_ps(y + i, k, exp8f(_mm256_maskload_ps(x + i, k)));
    }
}

/* Load 8 floats at lanes where mask is set, `fill` elsewhere. */
static inline T256 __m256 load_fill8(const float *a, __m256i k, __m256 fill)
{
    return _mm256_blendv_ps(fill, _mm256_maskload_ps(a, k), _mm256_castsi256_ps(k));
}

/* Lanes 0–3 of x into *lo, lanes 4–7 into *hi, as doubles. */
static inline T256 void add4x2_pd(__m256d *lo, __m256d *hi, __m256 x)
{
    *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
}

/* The products a·b of lanes 0–3 into *lo, of lanes 4–7 into *hi, in double (exact). */
static inline T256 void dot4x2_pd(__m256d *lo, __m256d *hi, __m256 a, __m256 b)
{
    __m256d al = _mm256_cvtps_pd(_mm256_castps256_ps128(a)), bl = _mm256_cvtps_pd(_mm256_castps256_ps128(b));
    __m256d ah = _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)), bh = _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1));
    *lo = _mm256_add_pd(*lo, _mm256_mul_pd(al, bl));
    *hi = _mm256_add_pd(*hi, _mm256_mul_pd(ah, bh));
}

static T256 double softmax_avx2(const float *z, float *p, int n)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 ma = ninf, mb = ninf;
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        ma = _mm256_max_ps(ma, _mm256_loadu_ps(z + j));
        mb = _mm256_max_ps(mb, _mm256_loadu_ps(z + j + 8));
    }
    int tail = j < n;
    __m256i ka = tail_mask8(n - j), kb = tail_mask8(n - j - 8);
    if (tail) {
        ma = _mm256_max_ps(ma, load_fill8(z + j, ka, ninf));
        mb = _mm256_max_ps(mb, load_fill8(z + j + 8, kb, ninf));
    }
    float m = hmax8f(_mm256_max_ps(ma, mb));
    if (m == -INFINITY) return masked_row(z, p, n);
    __m256 mm = _mm256_set1_ps(m);
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0; /* lanes 0–3, 4–7, 8–11, 12–15 */
    for (j = 0; j + 16 <= n; j += 16) {
        __m256 ea = exp8f(_mm256_sub_ps(_mm256_loadu_ps(z + j), mm));
        __m256 eb = exp8f(_mm256_sub_ps(_mm256_loadu_ps(z + j + 8), mm));
        _mm256_storeu_ps(p + j, ea);
        _mm256_storeu_ps(p + j + 8, eb);
        add4x2_pd(&s0, &s1, ea);
        add4x2_pd(&s2, &s3, eb);
    }
    __m256 ea = _mm256_setzero_ps(), eb = ea; /* the tail's exps, kept in registers */
    if (tail) {
        ea = exp8f(_mm256_sub_ps(load_fill8(z + j, ka, ninf), mm));
        eb = exp8f(_mm256_sub_ps(load_fill8(z + j + 8, kb, ninf), mm));
        add4x2_pd(&s0, &s1, ea);
        add4x2_pd(&s2, &s3, eb);
    }
    double s = hsum4x2(_mm256_add_pd(s0, s2), _mm256_add_pd(s1, s3));
    __m256 rv = _mm256_set1_ps(normaliser(s));
    for (j = 0; j + 16 <= n; j += 16) {
        _mm256_storeu_ps(p + j, _mm256_mul_ps(_mm256_loadu_ps(p + j), rv));
        _mm256_storeu_ps(p + j + 8, _mm256_mul_ps(_mm256_loadu_ps(p + j + 8), rv));
    }
    if (tail) { /* through a buffer: a masked store is slow on some CPUs (AMD's) */
        _Alignas(32) float t[16];
        _mm256_store_ps(t, _mm256_mul_ps(ea, rv));
        _mm256_store_ps(t + 8, _mm256_mul_ps(eb, rv));
        for (int k = 0; k < n - j; k++) p[j + k] = t[k];
    }
    return m + log(s);
}

static T256 void softmax_backward_avx2(const float *p, const float *g, float *dz, int n, int add)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        dot4x2_pd(&s0, &s1, _mm256_loadu_ps(p + j), _mm256_loadu_ps(g + j));
        dot4x2_pd(&s2, &s3, _mm256_loadu_ps(p + j + 8), _mm256_loadu_ps(g + j + 8));
    }
    if (j < n) {
        __m256i ka = tail_mask8(n - j), kb = tail_mask8(n - j - 8);
        dot4x2_pd(&s0, &s1, _mm256_maskload_ps(p + j, ka), _mm256_maskload_ps(g + j, ka));
        dot4x2_pd(&s2, &s3, _mm256_maskload_ps(p + j + 8, kb), _mm256_maskload_ps(g + j + 8, kb));
    }
    float gps = (float)hsum4x2(_mm256_add_pd(s0, s2), _mm256_add_pd(s1, s3));
    __m256 gp = _mm256_set1_ps(gps);
    for (j = 0; j + 8 <= n; j += 8) {
        __m256 d = _mm256_mul_ps(_mm256_loadu_ps(p + j), _mm256_sub_ps(_mm256_loadu_ps(g + j), gp));
        if (add) d = _mm256_add_ps(_mm256_loadu_ps(dz + j), d);
        _mm256_storeu_ps(dz + j, d);
    }
    for (; j < n; j++) { /* the same operations, lane by lane (no masked store) */
        float d = p[j] * (g[j] - gps);
        dz[j] = add ? dz[j] + d : d;
    }
}

static inline T256 void adam8f(__m256 *th, __m256 gv, __m256 *mv, __m256 *vv, const adam_scalars *a)
{
    if (a->decay) *th = _mm256_mul_ps(*th, _mm256_set1_ps(a->keep));
    *mv = _mm256_add_ps(*mv, _mm256_mul_ps(_mm256_set1_ps(a->one_m_b1), _mm256_sub_ps(gv, *mv)));
    *vv = _mm256_add_ps(_mm256_mul_ps(*vv, _mm256_set1_ps(a->beta2)),
                        _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(a->one_m_b2), gv), gv));
    __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(*vv), _mm256_set1_ps(a->bc2_sqrt)),
                                 _mm256_set1_ps(a->eps));
    *th = _mm256_sub_ps(*th, _mm256_mul_ps(_mm256_set1_ps(a->step_size), _mm256_div_ps(*mv, denom)));
}

static T256 void adam_avx2(float *theta, const float *g, float *m, float *v, size_t n, adam_scalars a)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 th = _mm256_loadu_ps(theta + i), mv = _mm256_loadu_ps(m + i), vv = _mm256_loadu_ps(v + i);
        adam8f(&th, _mm256_loadu_ps(g + i), &mv, &vv, &a);
        _mm256_storeu_ps(m + i, mv);
        _mm256_storeu_ps(v + i, vv);
        _mm256_storeu_ps(theta + i, th);
    }
    if (i < n) {
        __m256i k = tail_mask8((int)(n - i));
        __m256 th = _mm256_maskload_ps(theta + i, k), mv = _mm256_maskload_ps(m + i, k);
        __m256 vv = _mm256_maskload_ps(v + i, k);
        adam8f(&th, _mm256_maskload_ps(g + i, k), &mv, &vv, &a);
        _mm256_maskstore_ps(m + i, k, mv);
        _mm256_maskstore_ps(v + i, k, vv);
        _mm256_maskstore_ps(theta + i, k, th);
    }
}

#else /* float64 */
/* ---- AVX-512, float64: 8 lanes */

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
    if (m == -INFINITY) return masked_row(z, p, n);
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

static T512 void adam_avx512(double *theta, const double *g, double *m, double *v, size_t n, adam_scalars a)
{
    __m512d b1c = _mm512_set1_pd(a.one_m_b1), b2 = _mm512_set1_pd(a.beta2), b2c = _mm512_set1_pd(a.one_m_b2);
    __m512d ev = _mm512_set1_pd(a.eps), st = _mm512_set1_pd(a.step_size), bc = _mm512_set1_pd(a.bc2_sqrt);
    __m512d kv = _mm512_set1_pd(a.keep);
    int decay = a.decay;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) adam8(theta + i, g + i, m + i, v + i, 0xff, b1c, b2, b2c, ev, st, bc, kv, decay);
    if (i < n) adam8(theta + i, g + i, m + i, v + i, tail_mask8((int)(n - i)), b1c, b2, b2c, ev, st, bc, kv, decay);
}

/* ---- AVX2, float64: 4 lanes; the reductions use two registers (8 lanes) */

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
    if (m == -INFINITY) return masked_row(z, p, n);
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

static T256 void adam_avx2(double *theta, const double *g, double *m, double *v, size_t n, adam_scalars a)
{
    __m256d b1c = _mm256_set1_pd(a.one_m_b1), b2 = _mm256_set1_pd(a.beta2), b2c = _mm256_set1_pd(a.one_m_b2);
    __m256d ev = _mm256_set1_pd(a.eps), st = _mm256_set1_pd(a.step_size), bc = _mm256_set1_pd(a.bc2_sqrt);
    __m256d kv = _mm256_set1_pd(a.keep);
    int decay = a.decay;
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
#endif /* float32 / float64 */
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

/* The public entry points: the kgl_*_isa ones clamp the ISA asked for to the
 * CPU's; kgl_isa_active() already lies within kgl_isa_best(). */

static inline void vexp_on(kgl_isa isa, const kgl_real *x, kgl_real *y, int n)
{
    switch (isa) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: vexp_avx512(x, y, n); return;
    case KGL_ISA_AVX2: vexp_avx2(x, y, n); return;
#endif
    default: vexp_portable(x, y, n); return;
    }
}

static inline double softmax_on(kgl_isa isa, const kgl_real *z, kgl_real *p, int n)
{
    switch (isa) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: return softmax_avx512(z, p, n);
    case KGL_ISA_AVX2: return softmax_avx2(z, p, n);
#endif
    default: return softmax_portable(z, p, n);
    }
}

static inline void softmax_backward_on(kgl_isa isa, const kgl_real *p, const kgl_real *g, kgl_real *dz, int n,
                                       int add)
{
    switch (isa) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: softmax_backward_avx512(p, g, dz, n, add); return;
    case KGL_ISA_AVX2: softmax_backward_avx2(p, g, dz, n, add); return;
#endif
    default: softmax_backward_portable(p, g, dz, n, add); return;
    }
}

static inline void adam_on(kgl_isa isa, kgl_real *theta, const kgl_real *g, kgl_real *m, kgl_real *v, size_t n,
                           adam_scalars a)
{
    switch (isa) {
#if defined(__x86_64__)
    case KGL_ISA_AVX512: adam_avx512(theta, g, m, v, n, a); return;
    case KGL_ISA_AVX2: adam_avx2(theta, g, m, v, n, a); return;
#endif
    default: adam_portable(theta, g, m, v, n, a); return;
    }
}

void kgl_vexp_isa(kgl_isa isa, const kgl_real *x, kgl_real *y, int n) { vexp_on(usable(isa), x, y, n); }
void kgl_vexp(const kgl_real *x, kgl_real *y, int n) { vexp_on(kgl_isa_active(), x, y, n); }

double kgl_softmax_row_isa(kgl_isa isa, const kgl_real *z, kgl_real *p, int n) { return softmax_on(usable(isa), z, p, n); }
double kgl_softmax_row(const kgl_real *z, kgl_real *p, int n) { return softmax_on(kgl_isa_active(), z, p, n); }

void kgl_softmax_row_backward_isa(kgl_isa isa, const kgl_real *p, const kgl_real *g, kgl_real *dz, int n, int add)
{
    softmax_backward_on(usable(isa), p, g, dz, n, add);
}
void kgl_softmax_row_backward(const kgl_real *p, const kgl_real *g, kgl_real *dz, int n, int add)
{
    softmax_backward_on(kgl_isa_active(), p, g, dz, n, add);
}

void kgl_adam_update_isa(kgl_isa isa, kgl_real *theta, const kgl_real *g, kgl_real *m, kgl_real *v, size_t n,
                         double beta1, double beta2, double eps, double step_size, double bc2_sqrt, double keep)
{
    adam_on(usable(isa), theta, g, m, v, n, adam_scalars_of(beta1, beta2, eps, step_size, bc2_sqrt, keep));
}
void kgl_adam_update(kgl_real *theta, const kgl_real *g, kgl_real *m, kgl_real *v, size_t n, double beta1,
                     double beta2, double eps, double step_size, double bc2_sqrt, double keep)
{
    adam_on(kgl_isa_active(), theta, g, m, v, n, adam_scalars_of(beta1, beta2, eps, step_size, bc2_sqrt, keep));
}

/* ---- many short rows at once ------------------------------------------------
 * A row of a dozen entries is too short to keep the vector exp busy: its
 * chain of dependent operations, not the arithmetic, sets the time. So for
 * short rows the exponentials of a whole block of rows are taken in one
 * kgl_vexp call over contiguous memory, between a max pass and a sum pass
 * written exactly as softmax_portable's (the same lanes, the same trees). exp,
 * subtraction, the sums and the normalisation are the same operations as
 * kgl_softmax_row's on every path, so the bits are the same (a test). */
#define BLOCK_ROWS 64
/* Rows this long keep the row kernel busy on their own. Measured (AVX-512,
 * rows of random N(0,3)): float64's block wins up to 31 entries; float32's
 * up to 12–15 only, its row kernel being three times cheaper per entry while
 * the block's scalar passes are not. */
#ifdef KGL_FLOAT32
#define ROW_ALONE_N 16
#else
#define ROW_ALONE_N 32
#endif

void kgl_softmax_block(const kgl_real *z, kgl_real *p, int rows, int n, double *lse)
{
    if (n >= ROW_ALONE_N) {
        for (int r = 0; r < rows; r++) {
            double l = kgl_softmax_row(z + (size_t)r * n, p + (size_t)r * n, n);
            if (lse) lse[r] = l;
        }
        return;
    }
    kgl_real m[BLOCK_ROWS];
    bool nan_row[BLOCK_ROWS];
    for (int r0 = 0; r0 < rows; r0 += BLOCK_ROWS) {
        int r1 = r0 + BLOCK_ROWS < rows ? r0 + BLOCK_ROWS : rows;
        for (int r = r0; r < r1; r++) {
            const kgl_real *zr = z + (size_t)r * n;
            kgl_real *pr = p + (size_t)r * n, mr = m[r - r0] = row_max(zr, n);
            nan_row[r - r0] = false;
            if (mr == -INFINITY) /* masked, unless a NaN hid from the max (masked_row) */
                for (int j = 0; j < n; j++) nan_row[r - r0] = nan_row[r - r0] || zr[j] != zr[j];
            for (int j = 0; j < n; j++) pr[j] = mr == -INFINITY ? -INFINITY : zr[j] - mr;
        }
        kgl_vexp(p + (size_t)r0 * n, p + (size_t)r0 * n, (r1 - r0) * n);
        for (int r = r0; r < r1; r++) {
            kgl_real *pr = p + (size_t)r * n;
            if (m[r - r0] == -INFINITY) { /* a fully masked row: no weight anywhere (or a NaN row: NaN) */
                for (int j = 0; j < n; j++) pr[j] = nan_row[r - r0] ? (kgl_real)NAN : 0;
                if (lse) lse[r] = nan_row[r - r0] ? NAN : -INFINITY;
                continue;
            }
            double acc[LANES] = {0};
            for (int j = 0; j < n; j++) acc[j % LANES] += pr[j];
            double sum = lane_sum(acc);
            kgl_real nrm = normaliser(sum);
            for (int j = 0; j < n; j++) pr[j] = normalise(pr[j], nrm);
            if (lse) lse[r] = m[r - r0] + log(sum);
        }
    }
}
