/* gemm_avx512.c — kernel.c's AVX-512 GEMM on a CPU without AVX-512.
 *
 * Built by `make test` as build/gemm_emulated (and build/gemm_emulated_f32)
 * from src/engine/kernel.c compiled with -DKERNEL_EMULATE_AVX512: its
 * AVX-512 micro-kernel and edge kernel (12 x 2 zmm) then run on
 * src/engine/avx512_emul.h, a lane-by-lane model of their intrinsics, and
 * kgl_gemm_for_tests(KGL_ISA_AVX512, ...) reaches them on an AVX2 CPU; the
 * rest of the library comes from libkgl.a. kernel.h promises that every
 * element of C is one chain over k in increasing order: c = fma(a, b, c) on
 * AVX2 and AVX-512 alike (so they give the same bits, in float too: the
 * chain is per element, whatever the tile), c = c + a·b rounded twice on the
 * portable path. So, on shapes around the AVX-512 tile (MR = 12 rows, NR =
 * 2 x 8 doubles or 2 x 16 floats: M, N of 1, tile ± 1, several tiles and a
 * remainder), depths around the blocking (KC ± 1, several slices), every
 * layout the API has (NN, NT, TN), KGL_SET and KGL_ADD, B unpacked (the
 * direct path), packed by the nest and packed once (kgl_gemm_pack_b), one
 * and two threads, each element is checked bit for bit against
 *   - the AVX2 path (run natively) and a scalar fma() loop: the AVX-512 result;
 *   - a scalar multiply-then-add loop: the portable result (its own chain:
 *     it differs from the fma chain by design, so it is not compared with it);
 * and the padding of C (ldc > N) and guards around it keep their sentinel,
 * while the padding of A and B holds NaN, which would reach C if read.
 *
 * Not part of kgl_tests (the tests/ wildcard sees one folder level only); its
 * last line is "N passed, N failed", and it exits 1 on a failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu.h"
#include "engine/kernel.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#ifdef KGL_FLOAT32
#define FMA fmaf
#else
#define FMA fma
#endif

#include "emulated.h"

enum { GUARD = 8 };
static const kgl_real SENTINEL = -12345;

typedef struct {
    const char *name;
    int ta, tb;
} layout;
static const layout layouts[] = {{"NN", 0, 0}, {"NT", 0, 1}, {"TN", 1, 0}};

/* A(i, k) and B(k, j) of a layout, as kernel.h stores them. */
static kgl_real a_at(const kgl_real *A, int lda, int ta, int i, int k) { return ta ? A[k * lda + i] : A[i * lda + k]; }
static kgl_real b_at(const kgl_real *B, int ldb, int tb, int k, int j) { return tb ? B[j * ldb + k] : B[k * ldb + j]; }

/* The two chains of kernel.h, element (i, j), from c0. */
static kgl_real fma_chain(const kgl_real *A, int lda, int ta, const kgl_real *B, int ldb, int tb, int i, int j, int K,
                          kgl_real c)
{
    for (int k = 0; k < K; k++) c = FMA(a_at(A, lda, ta, i, k), b_at(B, ldb, tb, k, j), c);
    return c;
}
static kgl_real muladd_chain(const kgl_real *A, int lda, int ta, const kgl_real *B, int ldb, int tb, int i, int j,
                             int K, kgl_real c)
{
    for (int k = 0; k < K; k++) {
        kgl_real t = a_at(A, lda, ta, i, k) * b_at(B, ldb, tb, k, j);
        c += t;
    }
    return c;
}

static int same_bits(kgl_real x, kgl_real y) { return memcmp(&x, &y, sizeof x) == 0; }

/* Counts of elements that differ, per comparison, over every case run. */
static long bad_vs_avx2, bad_vs_fma, bad_portable, bad_stray, cases;

/* One shape in one layout and mode on one path: the three ISAs, checked. */
static void one_case(kgl_pool *p, const layout *L, int path, int M, int N, int K, int mode)
{
    int arows = L->ta ? K : M, acols = L->ta ? M : K, brows = L->tb ? N : K, bcols = L->tb ? K : N;
    int lda = acols + 1, ldb = bcols + 2, ldc = N + 3;
    size_t na = (size_t)arows * lda + 2 * GUARD, nb = (size_t)brows * ldb + 2 * GUARD, nc = (size_t)M * ldc;
    kgl_real *Abuf = malloc(na * sizeof *Abuf), *Bbuf = malloc(nb * sizeof *Bbuf), *C0 = malloc(nc * sizeof *C0);
    kgl_real *Cbuf[3];
    for (size_t i = 0; i < na; i++) Abuf[i] = NAN;
    for (size_t i = 0; i < nb; i++) Bbuf[i] = NAN;
    kgl_real *A = Abuf + GUARD, *B = Bbuf + GUARD;
    for (int r = 0; r < arows; r++)
        for (int c = 0; c < acols; c++) A[r * lda + c] = (kgl_real)(2 * runif() - 1);
    for (int r = 0; r < brows; r++)
        for (int c = 0; c < bcols; c++) B[r * ldb + c] = (kgl_real)(2 * runif() - 1);
    for (size_t i = 0; i < nc; i++) C0[i] = (int)(i % ldc) < N ? (kgl_real)(2 * runif() - 1) : SENTINEL;
    for (int isa = 0; isa < 3; isa++) {
        Cbuf[isa] = malloc((nc + 2 * GUARD) * sizeof *Cbuf[isa]);
        for (int g = 0; g < GUARD; g++) Cbuf[isa][g] = Cbuf[isa][GUARD + nc + g] = SENTINEL;
        memcpy(Cbuf[isa] + GUARD, C0, nc * sizeof *C0);
        kgl_gemm_for_tests(isa, path, L->ta, L->tb, p, M, N, K, A, lda, B, ldb, Cbuf[isa] + GUARD, ldc, mode);
    }
    const kgl_real *Cp = Cbuf[KGL_ISA_PORTABLE] + GUARD, *C2 = Cbuf[KGL_ISA_AVX2] + GUARD,
                   *C5 = Cbuf[KGL_ISA_AVX512] + GUARD;
    long before = bad_vs_avx2 + bad_vs_fma + bad_portable + bad_stray;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            size_t at = (size_t)i * ldc + j;
            kgl_real c0 = mode == KGL_ADD ? C0[at] : 0;
            bad_vs_avx2 += !same_bits(C5[at], C2[at]);
            bad_vs_fma += !same_bits(C5[at], fma_chain(A, lda, L->ta, B, ldb, L->tb, i, j, K, c0));
            bad_portable += !same_bits(Cp[at], muladd_chain(A, lda, L->ta, B, ldb, L->tb, i, j, K, c0));
        }
        for (int j = N; j < ldc; j++) bad_stray += C5[(size_t)i * ldc + j] != SENTINEL;
    }
    for (int g = 0; g < GUARD; g++)
        bad_stray += Cbuf[KGL_ISA_AVX512][g] != SENTINEL || Cbuf[KGL_ISA_AVX512][GUARD + nc + g] != SENTINEL;
    if (bad_vs_avx2 + bad_vs_fma + bad_portable + bad_stray > before && before == 0)
        printf("     first failure: %s path %d mode %d M %d N %d K %d threads %d\n", L->name, path, mode, M, N, K,
               kgl_pool_threads(p));
    cases++;
    for (int isa = 0; isa < 3; isa++) free(Cbuf[isa]);
    free(Abuf), free(Bbuf), free(C0);
}

int main(void)
{
    emul_seed(0x13198a2e03707344ull);
    if (kgl_isa_best() < KGL_ISA_AVX2) { /* the model returns real 256-bit halves, and AVX2 is compared: it needs AVX2 */
        printf("gemm_emulated: this CPU has no AVX2; the AVX-512 model cannot run (nothing tested)\n");
        printf("0 passed, 0 failed\n");
        return 0;
    }
    printf("gemm_emulated: kernel.c's AVX-512 GEMM (%s) %s\n", KGL_PRECISION,
           kgl_isa_best() == KGL_ISA_AVX512 ? "emulated, on a CPU that has AVX-512" : "emulated by avx512_emul.h");
    const int Z = 64 / (int)sizeof(kgl_real), NR = 2 * Z, MR = 12; /* the AVX-512 tile: 12 x 2 zmm */
    kgl_pool *p1 = kgl_pool_create(1), *p2 = kgl_pool_create(2);
    /* every small shape around the tile: rows 1, MR ± 1, 2 MR + 1; columns 1, one zmm ± 1, NR ± 1, 2 NR + 3 */
    const int ms[] = {1, 5, MR - 1, MR, MR + 1, 2 * MR + 1};
    const int ns[] = {1, Z - 1, Z, Z + 1, NR - 1, NR, NR + 1, 2 * NR + 3};
    const int ks[] = {0, 1, 2, 9};
    for (int l = 0; l < 3; l++)
        for (int mode = 0; mode < 2; mode++)
            for (int path = KGL_PATH_DIRECT; path <= KGL_PATH_PACKED_B; path++)
                for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
                    for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
                        for (size_t c = 0; c < sizeof ks / sizeof *ks; c++)
                            one_case(p1, &layouts[l], path, ms[a], ns[b], ks[c], mode);
    long small = cases;
    /* depths around the blocking (the AVX-512 KC is 192 for doubles and 256 for floats: both ± 1, and three
       slices), more rows than one MC block (144), B wider than IN_PLACE_A_MAX_PANELS panels (packed B then
       packs A), on one and two threads */
    const int big[][3] = {{13, NR + 1, 191}, {13, NR + 1, 192}, {13, NR + 1, 193}, {MR + 1, NR - 1, 255},
                          {MR + 1, NR - 1, 256}, {MR + 1, NR - 1, 257}, {145, 5 * NR + 3, 2 * 256 + 3},
                          {2 * MR, 5 * NR, 40}};
    for (size_t s = 0; s < sizeof big / sizeof *big; s++)
        for (int l = 0; l < 3; l++)
            for (int mode = 0; mode < 2; mode++)
                for (int path = KGL_PATH_AUTO; path <= KGL_PATH_PACKED_B; path++)
                    one_case(s & 1 ? p2 : p1, &layouts[l], path, big[s][0], big[s][1], big[s][2], mode);
    char what[200];
    snprintf(what, sizeof what, "avx512 = avx2, bit for bit (%ld small cases and %ld around the blocking)", small,
             cases - small);
    check(bad_vs_avx2 == 0, what);
    check(bad_vs_fma == 0, "avx512 = the scalar fma chain over k in increasing order (kernel.h)");
    check(bad_portable == 0, "portable = the scalar multiply-then-add chain (kernel.h)");
    check(bad_stray == 0, "avx512 edge tiles write nothing outside C's N columns (sentinels in ldc padding and guards)");
    kgl_pool_free(p1);
    kgl_pool_free(p2);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail != 0;
}
