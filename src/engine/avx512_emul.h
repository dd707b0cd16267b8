/* avx512_emul.h — TEST ONLY: a scalar model of the few AVX-512 intrinsics
 * vmath.c uses, so that its AVX-512 code (lane layout, masked tails, the
 * reduction tree) can be run on a CPU without AVX-512. Included by vmath.c
 * only when built with -DVMATH_EMULATE_AVX512 (the Makefile's
 * test_vmath_emu512); never in the library.
 *
 * Each function follows the instruction's definition in Intel's SDM, lane by
 * lane: VMAXPD dst = (a > b) ? a : b, VMINPD dst = (a < b) ? a : b (so a NaN
 * in either operand yields b), masked loads read only the selected lanes. */
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
