/* avx512_emul.h — TEST ONLY: a scalar model of the few AVX-512 intrinsics
 * vmath.c and kernel.c use, so that their AVX-512 code (lane layout, masked
 * tails, the reduction tree, the GEMM's micro- and edge kernels) can be run
 * on a CPU without AVX-512. Included by vmath.c only when built with
 * -DVMATH_EMULATE_AVX512 (the Makefile's build/vmath_emulated), by kernel.c
 * only with -DKERNEL_EMULATE_AVX512 (build/gemm_emulated); never in the library.
 *
 * Each function follows the instruction's definition in Intel's SDM, lane by
 * lane: VMAXPD dst = (a > b) ? a : b, VMINPD dst = (a < b) ? a : b (so a NaN
 * in either operand yields b), masked loads read only the selected lanes,
 * VFMADD231PD/PS dst = a·b + c rounded once (C's fma, fmaf).
 * The float32 build (-DKGL_FLOAT32) uses the _ps ones below as well:
 * VSCALEFPS dst = a · 2^floor(b) rounded once (a NaN operand propagates as
 * in an add), VCMPPS with the one predicate vmath.c uses. */
#ifndef KGL_AVX512_EMUL_H
#define KGL_AVX512_EMUL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct { double d[8]; } emu_m512d;
typedef struct { uint64_t u[8]; } emu_m512i;
typedef unsigned char emu_mmask8;

#undef __m512d
#define __m512d emu_m512d
#define __m512i emu_m512i
#define __mmask8 emu_mmask8

#define EMU_MAP(expr)              \
    emu_m512d r_;                  \
    for (int l = 0; l < 8; l++) {  \
        r_.d[l] = (expr);          \
    }                              \
    return r_

static inline emu_m512d emu_set1_pd(double x) { EMU_MAP(x); }
static inline emu_m512d emu_setzero_pd(void) { EMU_MAP(0.0); }
static inline emu_m512d emu_add_pd(emu_m512d a, emu_m512d b) { EMU_MAP(a.d[l] + b.d[l]); }
static inline emu_m512d emu_sub_pd(emu_m512d a, emu_m512d b) { EMU_MAP(a.d[l] - b.d[l]); }
static inline emu_m512d emu_mul_pd(emu_m512d a, emu_m512d b) { EMU_MAP(a.d[l] * b.d[l]); }
static inline emu_m512d emu_div_pd(emu_m512d a, emu_m512d b) { EMU_MAP(a.d[l] / b.d[l]); }
static inline emu_m512d emu_sqrt_pd(emu_m512d a) { EMU_MAP(sqrt(a.d[l])); }
static inline emu_m512d emu_fmadd_pd(emu_m512d a, emu_m512d b, emu_m512d c) { EMU_MAP(fma(a.d[l], b.d[l], c.d[l])); }
static inline emu_m512d emu_max_pd(emu_m512d a, emu_m512d b) { EMU_MAP(a.d[l] > b.d[l] ? a.d[l] : b.d[l]); }
static inline emu_m512d emu_min_pd(emu_m512d a, emu_m512d b) { EMU_MAP(a.d[l] < b.d[l] ? a.d[l] : b.d[l]); }
static inline emu_m512d emu_loadu_pd(const void *p)
{
    emu_m512d r;
    memcpy(&r, p, sizeof r);
    return r;
}
static inline void emu_storeu_pd(void *p, emu_m512d a) { memcpy(p, &a, sizeof a); }
static inline emu_m512d emu_mask_loadu_pd(emu_m512d src, emu_mmask8 k, const void *p)
{
    for (int l = 0; l < 8; l++)
        if (k >> l & 1) memcpy(&src.d[l], (const double *)p + l, sizeof(double));
    return src;
}
static inline emu_m512d emu_maskz_loadu_pd(emu_mmask8 k, const void *p)
{
    return emu_mask_loadu_pd(emu_setzero_pd(), k, p);
}
static inline void emu_mask_storeu_pd(void *p, emu_mmask8 k, emu_m512d a)
{
    for (int l = 0; l < 8; l++)
        if (k >> l & 1) memcpy((double *)p + l, &a.d[l], sizeof(double));
}
static inline emu_m512i emu_castpd_si512(emu_m512d a)
{
    emu_m512i r;
    memcpy(&r, &a, sizeof r);
    return r;
}
static inline emu_m512d emu_castsi512_pd(emu_m512i a)
{
    emu_m512d r;
    memcpy(&r, &a, sizeof r);
    return r;
}
static inline emu_m512i emu_slli_epi64(emu_m512i a, unsigned s)
{
    for (int l = 0; l < 8; l++) a.u[l] = s > 63 ? 0 : a.u[l] << s;
    return a;
}
/* The 256-bit halves come back as real __m256d (AVX, available here). */
static inline __attribute__((target("avx2,fma"))) __m256d emu_castpd512_pd256(emu_m512d a)
{
    return _mm256_loadu_pd(a.d);
}
static inline __attribute__((target("avx2,fma"))) __m256d emu_extractf64x4_pd(emu_m512d a, int i)
{
    return _mm256_loadu_pd(a.d + 4 * (i & 1));
}

/* ---- float32: 16 lanes */
typedef struct { float f[16]; } emu_m512;
typedef uint16_t emu_mmask16;

#undef __m512
#define __m512 emu_m512
#define __mmask16 emu_mmask16

#define EMU_MAP16(expr)            \
    emu_m512 r_;                   \
    for (int l = 0; l < 16; l++) { \
        r_.f[l] = (expr);          \
    }                              \
    return r_

static inline emu_m512 emu_set1_ps(float x) { EMU_MAP16(x); }
static inline emu_m512 emu_setzero_ps(void) { EMU_MAP16(0.0f); }
static inline emu_m512 emu_add_ps(emu_m512 a, emu_m512 b) { EMU_MAP16(a.f[l] + b.f[l]); }
static inline emu_m512 emu_sub_ps(emu_m512 a, emu_m512 b) { EMU_MAP16(a.f[l] - b.f[l]); }
static inline emu_m512 emu_mul_ps(emu_m512 a, emu_m512 b) { EMU_MAP16(a.f[l] * b.f[l]); }
static inline emu_m512 emu_div_ps(emu_m512 a, emu_m512 b) { EMU_MAP16(a.f[l] / b.f[l]); }
static inline emu_m512 emu_sqrt_ps(emu_m512 a) { EMU_MAP16(sqrtf(a.f[l])); }
static inline emu_m512 emu_fmadd_ps(emu_m512 a, emu_m512 b, emu_m512 c) { EMU_MAP16(fmaf(a.f[l], b.f[l], c.f[l])); }
static inline emu_m512 emu_max_ps(emu_m512 a, emu_m512 b) { EMU_MAP16(a.f[l] > b.f[l] ? a.f[l] : b.f[l]); }
static inline emu_m512 emu_min_ps(emu_m512 a, emu_m512 b) { EMU_MAP16(a.f[l] < b.f[l] ? a.f[l] : b.f[l]); }
static inline float emu_scalef1(float a, float b)
{
    if (isnan(a) || isnan(b)) return a + b;
    return scalbnf(a, (int)floorf(b)); /* b is an integer in [-150, 128] here */
}
static inline emu_m512 emu_scalef_ps(emu_m512 a, emu_m512 b) { EMU_MAP16(emu_scalef1(a.f[l], b.f[l])); }
static inline emu_m512 emu_maskz_mov_ps(emu_mmask16 k, emu_m512 a) { EMU_MAP16(k >> l & 1 ? a.f[l] : 0.0f); }
static inline emu_mmask16 emu_cmp_ps_mask(emu_m512 a, emu_m512 b, int imm)
{
    (void)imm; /* always _CMP_NLT_UQ: not (a < b), true for NaN */
    emu_mmask16 k = 0;
    for (int l = 0; l < 16; l++)
        if (!(a.f[l] < b.f[l])) k |= (emu_mmask16)(1u << l);
    return k;
}
static inline emu_m512 emu_loadu_ps(const void *p)
{
    emu_m512 r;
    memcpy(&r, p, sizeof r);
    return r;
}
static inline void emu_storeu_ps(void *p, emu_m512 a) { memcpy(p, &a, sizeof a); }
static inline emu_m512 emu_mask_loadu_ps(emu_m512 src, emu_mmask16 k, const void *p)
{
    for (int l = 0; l < 16; l++)
        if (k >> l & 1) memcpy(&src.f[l], (const float *)p + l, sizeof(float));
    return src;
}
static inline emu_m512 emu_maskz_loadu_ps(emu_mmask16 k, const void *p)
{
    return emu_mask_loadu_ps(emu_setzero_ps(), k, p);
}
static inline void emu_mask_storeu_ps(void *p, emu_mmask16 k, emu_m512 a)
{
    for (int l = 0; l < 16; l++)
        if (k >> l & 1) memcpy((float *)p + l, &a.f[l], sizeof(float));
}
static inline emu_m512d emu_castps_pd(emu_m512 a)
{
    emu_m512d r;
    memcpy(&r, &a, sizeof r);
    return r;
}
static inline __attribute__((target("avx2,fma"))) __m256 emu_castps512_ps256(emu_m512 a)
{
    return _mm256_loadu_ps(a.f);
}
static inline __attribute__((target("avx2,fma"))) emu_m512d emu_cvtps_pd(__m256 a)
{
    float f[8];
    _mm256_storeu_ps(f, a);
    EMU_MAP((double)f[l]);
}

#undef _mm512_set1_ps
#define _mm512_set1_ps emu_set1_ps
#undef _mm512_setzero_ps
#define _mm512_setzero_ps emu_setzero_ps
#undef _mm512_add_ps
#define _mm512_add_ps emu_add_ps
#undef _mm512_sub_ps
#define _mm512_sub_ps emu_sub_ps
#undef _mm512_mul_ps
#define _mm512_mul_ps emu_mul_ps
#undef _mm512_div_ps
#define _mm512_div_ps emu_div_ps
#undef _mm512_sqrt_ps
#define _mm512_sqrt_ps emu_sqrt_ps
#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps emu_fmadd_ps
#undef _mm512_max_ps
#define _mm512_max_ps emu_max_ps
#undef _mm512_min_ps
#define _mm512_min_ps emu_min_ps
#undef _mm512_scalef_ps
#define _mm512_scalef_ps emu_scalef_ps
#undef _mm512_maskz_mov_ps
#define _mm512_maskz_mov_ps emu_maskz_mov_ps
#undef _mm512_cmp_ps_mask
#define _mm512_cmp_ps_mask emu_cmp_ps_mask
#undef _mm512_loadu_ps
#define _mm512_loadu_ps emu_loadu_ps
#undef _mm512_storeu_ps
#define _mm512_storeu_ps emu_storeu_ps
#undef _mm512_mask_loadu_ps
#define _mm512_mask_loadu_ps emu_mask_loadu_ps
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps emu_maskz_loadu_ps
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps emu_mask_storeu_ps
#undef _mm512_castps_pd
#define _mm512_castps_pd emu_castps_pd
#undef _mm512_castps512_ps256
#define _mm512_castps512_ps256 emu_castps512_ps256
#undef _mm512_cvtps_pd
#define _mm512_cvtps_pd emu_cvtps_pd

#undef _mm512_set1_pd
#define _mm512_set1_pd emu_set1_pd
#undef _mm512_setzero_pd
#define _mm512_setzero_pd emu_setzero_pd
#undef _mm512_add_pd
#define _mm512_add_pd emu_add_pd
#undef _mm512_sub_pd
#define _mm512_sub_pd emu_sub_pd
#undef _mm512_mul_pd
#define _mm512_mul_pd emu_mul_pd
#undef _mm512_div_pd
#define _mm512_div_pd emu_div_pd
#undef _mm512_sqrt_pd
#define _mm512_sqrt_pd emu_sqrt_pd
#undef _mm512_fmadd_pd
#define _mm512_fmadd_pd emu_fmadd_pd
#undef _mm512_max_pd
#define _mm512_max_pd emu_max_pd
#undef _mm512_min_pd
#define _mm512_min_pd emu_min_pd
#undef _mm512_loadu_pd
#define _mm512_loadu_pd emu_loadu_pd
#undef _mm512_storeu_pd
#define _mm512_storeu_pd emu_storeu_pd
#undef _mm512_mask_loadu_pd
#define _mm512_mask_loadu_pd emu_mask_loadu_pd
#undef _mm512_maskz_loadu_pd
#define _mm512_maskz_loadu_pd emu_maskz_loadu_pd
#undef _mm512_mask_storeu_pd
#define _mm512_mask_storeu_pd emu_mask_storeu_pd
#undef _mm512_castpd_si512
#define _mm512_castpd_si512 emu_castpd_si512
#undef _mm512_castsi512_pd
#define _mm512_castsi512_pd emu_castsi512_pd
#undef _mm512_slli_epi64
#define _mm512_slli_epi64 emu_slli_epi64
#undef _mm512_castpd512_pd256
#define _mm512_castpd512_pd256 emu_castpd512_pd256
#undef _mm512_extractf64x4_pd
#define _mm512_extractf64x4_pd emu_extractf64x4_pd

#endif
