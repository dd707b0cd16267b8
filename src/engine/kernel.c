/* kernel.c — the GEMM in kgl_real (double, or float under KGL_FLOAT32):
 * packed, register-blocked, multi-threaded.
 *
 * The loop nest is GotoBLAS's (as in BLIS), for C[M,N] (+)= A[M,K] B[K,N]:
 *
 *   for jc over N in steps of NC          a column block of C and B
 *     for pc over K in steps of KC        a slice of the sum
 *       pack B[pc:+KC, jc:+NC]            into NR-wide panels, k-major (lives in L3)
 *       for ic over M in steps of MC      a row block of C and A
 *         pack A[ic:+MC, pc:+KC]          into MR-tall panels, k-major (lives in L2)
 *         for jr over NC in steps of NR   (the macro-kernel; one B panel stays in L1)
 *           for ir over MC in steps of MR
 *             micro-kernel: an MR x NR tile of C held in vector registers gets kc
 *             rank-1 updates (broadcast A[i,k], load B[k, j:j+NR], fma), in k order
 *
 * Packing makes both operands unit-stride whatever the layout (NN, NT, TN),
 * so one micro-kernel serves all three. Panels of A are zero-padded to MR; the last panel of B is
 * packed only as wide as it is (nr < NR: the edge kernel reads j < nr), sparing the zeros.
 * An edge tile (fewer than MR rows or NR columns left) goes through an edge
 * kernel that runs the same per-element chain on the valid rows only, with
 * masked loads and stores for the columns.
 *
 * Determinism: each element of C is one chain, c = fma(a_ik, b_kj, c) for k
 * in increasing order, started from 0 (KGL_SET) or C (KGL_ADD); a KC slice
 * stores the chain to C and the next slice reloads it, which is exact. So
 * the blocking, the row/column split between threads, the small-matrix path
 * and the choice AVX2 / AVX-512 cannot change a bit. The portable path runs
 * the same chain with a rounded multiply and a rounded add.
 *
 * Threads: C is cut into one row block or column block per thread (whichever
 * balances better, in whole micro-tiles); each thread runs the nest above on
 * its block with its own packing buffers from the pool. Tiny products skip
 * packing and threads (the "direct" path): the micro-kernel reads A and B in
 * place (B's panels are packed when B is transposed).
 *
 * Precision. The file is written once, in kgl_real. The vector kernels use a
 * few names (ymm_*, zmm_*, under "vectors of kgl_real") that stand for the
 * _pd intrinsics or, under KGL_FLOAT32, the _ps ones; a micro-tile is MR rows
 * by two vectors, so in float a register holds twice the columns:
 *
 *              MR x NR (double / float)   accumulators   per k: B loads, A broadcasts, FMAs
 *   portable    4 x 4                     16 scalars
 *   AVX2        6 x 8  / 6 x 16           12 ymm         2, 6, 12
 *   AVX-512    12 x 16 / 12 x 32          24 zmm         2, 12, 24
 *
 * Both precisions run the same chain per element (an FMA rounds once, in
 * kgl_real), so everything said above about the bits holds in float too.
 *
 * Roofline. A core with two FMA ports retires two vector FMAs a cycle: on
 * AVX-512, 2 x 16 floats x 2 flops x clock (about 184 GFLOP/s at the 2.9 GHz
 * an Ice Lake Xeon keeps under AVX-512; 92 in double), on AVX2 2 x 8 x 2 x
 * clock (about 104 at 3.3 GHz). The tile is chosen so the FMAs are the
 * bottleneck: per k the AVX-512 tile issues 24 FMAs (12 cycles on two ports)
 * against 14 loads (7 cycles on two load ports), from 24 accumulators + 2 of
 * B + 1 broadcast = 27 of the 32 registers, and each value of B loaded from
 * L1 serves 12 FMAs. Alone in L1, the 12 x 32 float tile runs at ~87% of the
 * peak (6 x 64 and 8 x 48 tiles, fewer loads per FMA, ran up to 10% faster,
 * 14 x 32 no faster); the whole 1024^3 product at ~70%, as OpenBLAS's sgemm
 * on the same core. On a Zen 4 core (a 512-bit FMA takes both 256-bit
 * pipes, so one a cycle) the tile alone runs at 97-99% of that core's peak
 * and the readout's products at ~86% (speed.md, "A deeper slice"). 12 x 2
 * vectors keeps one kernel for both precisions and 32-wide float panels
 * (the model's products are often that narrow). The
 * macro-kernel prefetches the next tile of C, whose rows lie ldc apart in
 * memory, while the current one runs (see prefetch_tile). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>
#if defined(KERNEL_EMULATE_AVX512)
/* TEST ONLY (make test's build/gemm_emulated): the AVX-512 kernels below run on a scalar model of their
 * intrinsics, so that a CPU without AVX-512 checks them too; never in the library. */
#include "avx512_emul.h"
#endif
#endif

#define KC_MAX KGL_GEMM_KC
#define NC KGL_GEMM_NC

/* Below this many flops (2MNK) the direct path is used (with K <= KC). */
#define DIRECT_MAX_FLOPS 40000.0
/* For choosing the split between threads, in flop-equivalents: packing one element of A or B, and waking
 * the pool's workers and waiting for them (a few microseconds). */
#define PACK_COST 16.0
#define WAKE_COST 200000.0
/* kgl_gemm_packed_b_on reads A in place, unpacked, when B has at most this many NR-wide panels: a packed
 * panel of A would be read only that many times, so copying it costs more than the strided reads it saves
 * (attention's products with one side d_k: d_k = 32 is 4 panels of AVX2 doubles, 1 of AVX-512 floats). */
#define IN_PLACE_A_MAX_PANELS 4
/* How far ahead along a row the packing of rows far apart asks for elements (pack_body): 128 bytes in float. */
#define PACK_AHEAD 32

/* A micro-kernel: the MR x NR tile c (row stride ldc) = (add ? c : 0) + sum over k < kc of
 * a(:,k) b(k,:), with a(r,k) = a[r*ars + k*aks] and b(k,j) = b[k*bks + j]. */
typedef void ukernel(int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b, ptrdiff_t bks,
                     kgl_real *c, ptrdiff_t ldc, int add);

/* An edge kernel: like a micro-kernel, on the top-left mr x nr (<= MR x NR) part of a tile only; it reads
 * only rows r < mr of a and columns j < nr of b, and touches only that part of c. */
typedef void ekernel(int mr, int nr, int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b,
                     ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add);

/* One ISA's micro-tile and blocking, and its kernels: for full tiles of packed and of in-place operands, and
 * for edge tiles of either. */
typedef struct {
    int mr, nr, mc, kc;
    ukernel *packed, *strided;
    ekernel *edge;
} isa_cfg;

#define INLINE static inline __attribute__((always_inline))

/* ------------------------------------------------------------------ portable */

enum { P_MR = 4, P_NR = 4 };

/* c += a*b as a rounded multiply then a rounded add: two statements, so no compiler setting that contracts
 * only within an expression (clang's default) can fuse them; GCC fuses across statements only with
 * -ffp-contract=fast, which is not its default in ISO C mode (-std=c11). */
#define MULADD(c, a, b)                                                                                                \
    do {                                                                                                               \
        kgl_real t_ = (a) * (b);                                                                                       \
        (c) += t_;                                                                                                     \
    } while (0)

/* Portable 4 x 4 micro-kernel body: 16 scalar accumulators (the compiler may pair them into SSE2 vectors). */
INLINE void portable_body(int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b, ptrdiff_t bks,
                          kgl_real *c, ptrdiff_t ldc, int add)
{
    kgl_real c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
    kgl_real c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
#define LOAD_ROW(r) (c##r##0 = c[r * ldc], c##r##1 = c[r * ldc + 1], c##r##2 = c[r * ldc + 2], c##r##3 = c[r * ldc + 3])
#define MULADD_ROW(r)                                                                                                  \
    do {                                                                                                               \
        kgl_real ar = a[r * ars];                                                                                      \
        MULADD(c##r##0, ar, b0); MULADD(c##r##1, ar, b1);                                                              \
        MULADD(c##r##2, ar, b2); MULADD(c##r##3, ar, b3);                                                              \
    } while (0)
#define STORE_ROW(r) (c[r * ldc] = c##r##0, c[r * ldc + 1] = c##r##1, c[r * ldc + 2] = c##r##2, c[r * ldc + 3] = c##r##3)
    if (add) LOAD_ROW(0), LOAD_ROW(1), LOAD_ROW(2), LOAD_ROW(3);
    for (int k = 0; k < kc; k++, a += aks, b += bks) {
        kgl_real b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
        MULADD_ROW(0);
        MULADD_ROW(1);
        MULADD_ROW(2);
        MULADD_ROW(3);
    }
    STORE_ROW(0), STORE_ROW(1), STORE_ROW(2), STORE_ROW(3);
#undef LOAD_ROW
#undef MULADD_ROW
#undef STORE_ROW
}

/* Portable edge kernel: the mr x nr part of a 4 x 4 tile, element by element (same chain as portable_body). */
static void portable_edge(int mr, int nr, int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b,
                          ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add)
{
    kgl_real acc[P_MR][P_NR];
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) acc[r][j] = add ? c[r * ldc + j] : 0.0;
    for (int k = 0; k < kc; k++, a += aks, b += bks)
        for (int r = 0; r < mr; r++)
            for (int j = 0; j < nr; j++) MULADD(acc[r][j], a[r * ars], b[j]);
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) c[r * ldc + j] = acc[r][j];
}

/* Portable micro-kernel on packed panels. */
static void portable_packed(int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b, ptrdiff_t bks,
                            kgl_real *c, ptrdiff_t ldc, int add)
{
    (void)ars, (void)aks, (void)bks;
    portable_body(kc, a, 1, P_MR, b, P_NR, c, ldc, add);
}

/* Portable micro-kernel on operands in place. */
static void portable_strided(int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b, ptrdiff_t bks,
                             kgl_real *c, ptrdiff_t ldc, int add)
{
    portable_body(kc, a, ars, aks, b, bks, c, ldc, add);
}

#if defined(__x86_64__)

/* ------------------------------------------------------------------ vectors of kgl_real */

/* The vector kernels are written in these names: a ymm (AVX2) holds Y_LANES kgl_reals, a zmm (AVX-512)
 * Z_LANES. load and store are unaligned; bcast(p) puts *p in every lane; fma(a, b, c) = a·b + c rounded
 * once; ymm_first(n) and zmm_first(n) are the masks of lanes j < n (maskload reads, and maskstore writes, only
 * those; maskload gives 0 in the others). */
#ifdef KGL_FLOAT32
typedef __m256 ymm_t;
typedef __m512 zmm_t;
enum { Y_LANES = 8, Z_LANES = 16 };
#define ymm_load _mm256_loadu_ps
#define ymm_store _mm256_storeu_ps
#define ymm_zero _mm256_setzero_ps
#define ymm_bcast _mm256_broadcast_ss
#define ymm_fma _mm256_fmadd_ps
#define ymm_maskload _mm256_maskload_ps
#define ymm_maskstore _mm256_maskstore_ps
#define ymm_first(n) _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define zmm_load _mm512_loadu_ps
#define zmm_store _mm512_storeu_ps
#define zmm_zero _mm512_setzero_ps
#define zmm_bcast(p) _mm512_set1_ps(*(p))
#define zmm_fma _mm512_fmadd_ps
typedef __mmask16 zmask_t;
#define zmm_maskload(p, m) _mm512_maskz_loadu_ps(m, p)
#define zmm_maskstore(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#else
typedef __m256d ymm_t;
typedef __m512d zmm_t;
enum { Y_LANES = 4, Z_LANES = 8 };
#define ymm_load _mm256_loadu_pd
#define ymm_store _mm256_storeu_pd
#define ymm_zero _mm256_setzero_pd
#define ymm_bcast _mm256_broadcast_sd
#define ymm_fma _mm256_fmadd_pd
#define ymm_maskload _mm256_maskload_pd
#define ymm_maskstore _mm256_maskstore_pd
#define ymm_first(n) _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3))
#define zmm_load _mm512_loadu_pd
#define zmm_store _mm512_storeu_pd
#define zmm_zero _mm512_setzero_pd
#define zmm_bcast(p) _mm512_set1_pd(*(p))
#define zmm_fma _mm512_fmadd_pd
typedef __mmask8 zmask_t;
#define zmm_maskload(p, m) _mm512_maskz_loadu_pd(m, p)
#define zmm_maskstore(p, m, v) _mm512_mask_storeu_pd(p, m, v)
#endif
#define zmm_first(n) ((zmask_t)((n) <= 0 ? 0u : (n) >= Z_LANES ? ~0u : (1u << (n)) - 1))

/* ------------------------------------------------------------------ AVX2: 6 x 2 ymm */

#define TARGET_AVX2 __attribute__((target("avx2,fma")))
enum { A2_MR = 6, A2_NR = 2 * Y_LANES };

/* AVX2 6 x 2-ymm micro-kernel body: 12 ymm accumulators, 2 loads of B and 6 broadcasts of A per k. */
INLINE TARGET_AVX2 void avx2_body(int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b,
                                  ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add)
{
    ymm_t c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
#define LOAD_ROW(r) (c##r##0 = ymm_load(c + r * ldc), c##r##1 = ymm_load(c + r * ldc + Y_LANES))
#define ZERO_ROW(r) (c##r##0 = ymm_zero(), c##r##1 = ymm_zero())
#define FMA_ROW(r) (t = ymm_bcast(a + r * ars), c##r##0 = ymm_fma(t, b0, c##r##0), c##r##1 = ymm_fma(t, b1, c##r##1))
#define STORE_ROW(r) (ymm_store(c + r * ldc, c##r##0), ymm_store(c + r * ldc + Y_LANES, c##r##1))
    if (add) {
        LOAD_ROW(0), LOAD_ROW(1), LOAD_ROW(2), LOAD_ROW(3), LOAD_ROW(4), LOAD_ROW(5);
    } else {
        ZERO_ROW(0), ZERO_ROW(1), ZERO_ROW(2), ZERO_ROW(3), ZERO_ROW(4), ZERO_ROW(5);
    }
    for (int k = 0; k < kc; k++, a += aks, b += bks) {
        ymm_t b0 = ymm_load(b), b1 = ymm_load(b + Y_LANES), t;
        FMA_ROW(0), FMA_ROW(1), FMA_ROW(2), FMA_ROW(3), FMA_ROW(4), FMA_ROW(5);
    }
    STORE_ROW(0), STORE_ROW(1), STORE_ROW(2), STORE_ROW(3), STORE_ROW(4), STORE_ROW(5);
#undef LOAD_ROW
#undef ZERO_ROW
#undef FMA_ROW
#undef STORE_ROW
}

/* AVX2 micro-kernel on packed panels. */
static TARGET_AVX2 void avx2_packed(int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b,
                                    ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add)
{
    (void)ars, (void)aks, (void)bks;
    avx2_body(kc, a, 1, A2_MR, b, A2_NR, c, ldc, add);
}

/* AVX2 micro-kernel on operands in place. */
static TARGET_AVX2 void avx2_strided(int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b,
                                     ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add)
{
    avx2_body(kc, a, ars, aks, b, bks, c, ldc, add);
}

/* AVX2 edge tile body: rows r < R (a compile-time constant) of the 6 x 2-ymm tile, columns masked by m0 / m1
 * (B and C are read and written through the masks only). Each element runs the same fma chain as in avx2_body. */
INLINE TARGET_AVX2 void avx2_edge_body(const int R, int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks,
                                       const kgl_real *b, ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add,
                                       __m256i m0, __m256i m1)
{
    ymm_t z = ymm_zero();
    ymm_t c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
#define LOAD_ROW(r)                                                                                                    \
    if (R > r) c##r##0 = ymm_maskload(c + r * ldc, m0), c##r##1 = ymm_maskload(c + r * ldc + Y_LANES, m1)
#define FMA_ROW(r)                                                                                                     \
    if (R > r) t = ymm_bcast(a + r * ars), c##r##0 = ymm_fma(t, b0, c##r##0), c##r##1 = ymm_fma(t, b1, c##r##1)
#define STORE_ROW(r)                                                                                                   \
    if (R > r) ymm_maskstore(c + r * ldc, m0, c##r##0), ymm_maskstore(c + r * ldc + Y_LANES, m1, c##r##1)
    if (add) {
        LOAD_ROW(0); LOAD_ROW(1); LOAD_ROW(2); LOAD_ROW(3); LOAD_ROW(4); LOAD_ROW(5);
    }
    for (int k = 0; k < kc; k++, a += aks, b += bks) {
        ymm_t b0 = ymm_maskload(b, m0), b1 = ymm_maskload(b + Y_LANES, m1), t;
        FMA_ROW(0); FMA_ROW(1); FMA_ROW(2); FMA_ROW(3); FMA_ROW(4); FMA_ROW(5);
    }
    STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3); STORE_ROW(4); STORE_ROW(5);
#undef LOAD_ROW
#undef FMA_ROW
#undef STORE_ROW
}

/* AVX2 edge kernel: an mr x nr part of a 6 x 2-ymm tile, without a temporary copy. */
static TARGET_AVX2 void avx2_edge(int mr, int nr, int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks,
                                  const kgl_real *b, ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add)
{
    __m256i m0 = ymm_first(nr), m1 = ymm_first(nr - Y_LANES);
    switch (mr) {
    case 1: avx2_edge_body(1, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 2: avx2_edge_body(2, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 3: avx2_edge_body(3, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 4: avx2_edge_body(4, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 5: avx2_edge_body(5, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    default: avx2_edge_body(6, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    }
}

/* ------------------------------------------------------------------ AVX-512: 12 x 2 zmm */

#if defined(KERNEL_EMULATE_AVX512)
#define TARGET_AVX512 TARGET_AVX2
#else
#define TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,fma")))
#endif
enum { A5_MR = 12, A5_NR = 2 * Z_LANES };

/* AVX-512 12 x 2-zmm micro-kernel body: 24 zmm accumulators, 2 loads of B and 12 broadcasts of A per k. */
INLINE TARGET_AVX512 void avx512_body(int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b,
                                      ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add)
{
    zmm_t c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    zmm_t c60, c61, c70, c71, c80, c81, c90, c91, cA0, cA1, cB0, cB1;
#define LOAD_ROW(r, i) (c##r##0 = zmm_load(c + i * ldc), c##r##1 = zmm_load(c + i * ldc + Z_LANES))
#define ZERO_ROW(r) (c##r##0 = zmm_zero(), c##r##1 = zmm_zero())
#define FMA_ROW(r, i)                                                                                                  \
    (t = zmm_bcast(a + i * ars), c##r##0 = zmm_fma(t, b0, c##r##0), c##r##1 = zmm_fma(t, b1, c##r##1))
#define STORE_ROW(r, i) (zmm_store(c + i * ldc, c##r##0), zmm_store(c + i * ldc + Z_LANES, c##r##1))
    if (add) {
        LOAD_ROW(0, 0), LOAD_ROW(1, 1), LOAD_ROW(2, 2), LOAD_ROW(3, 3), LOAD_ROW(4, 4), LOAD_ROW(5, 5);
        LOAD_ROW(6, 6), LOAD_ROW(7, 7), LOAD_ROW(8, 8), LOAD_ROW(9, 9), LOAD_ROW(A, 10), LOAD_ROW(B, 11);
    } else {
        ZERO_ROW(0), ZERO_ROW(1), ZERO_ROW(2), ZERO_ROW(3), ZERO_ROW(4), ZERO_ROW(5);
        ZERO_ROW(6), ZERO_ROW(7), ZERO_ROW(8), ZERO_ROW(9), ZERO_ROW(A), ZERO_ROW(B);
    }
    for (int k = 0; k < kc; k++, a += aks, b += bks) {
        zmm_t b0 = zmm_load(b), b1 = zmm_load(b + Z_LANES), t;
        FMA_ROW(0, 0), FMA_ROW(1, 1), FMA_ROW(2, 2), FMA_ROW(3, 3), FMA_ROW(4, 4), FMA_ROW(5, 5);
        FMA_ROW(6, 6), FMA_ROW(7, 7), FMA_ROW(8, 8), FMA_ROW(9, 9), FMA_ROW(A, 10), FMA_ROW(B, 11);
    }
    STORE_ROW(0, 0), STORE_ROW(1, 1), STORE_ROW(2, 2), STORE_ROW(3, 3), STORE_ROW(4, 4), STORE_ROW(5, 5);
    STORE_ROW(6, 6), STORE_ROW(7, 7), STORE_ROW(8, 8), STORE_ROW(9, 9), STORE_ROW(A, 10), STORE_ROW(B, 11);
#undef LOAD_ROW
#undef ZERO_ROW
#undef FMA_ROW
#undef STORE_ROW
}

/* AVX-512 micro-kernel on packed panels. */
static TARGET_AVX512 void avx512_packed(int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b,
                                        ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add)
{
    (void)ars, (void)aks, (void)bks;
    avx512_body(kc, a, 1, A5_MR, b, A5_NR, c, ldc, add);
}

/* AVX-512 micro-kernel on operands in place. */
static TARGET_AVX512 void avx512_strided(int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks, const kgl_real *b,
                                         ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add)
{
    avx512_body(kc, a, ars, aks, b, bks, c, ldc, add);
}

/* AVX-512 edge tile body: rows r < R (a compile-time constant) of the 12 x 2-zmm tile, columns masked by m0 / m1
 * (B and C are read and written through the masks only). Each element runs the same fma chain as in avx512_body. */
INLINE TARGET_AVX512 void avx512_edge_body(const int R, int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks,
                                           const kgl_real *b, ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add,
                                           zmask_t m0, zmask_t m1)
{
    zmm_t z = zmm_zero();
    zmm_t c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
    zmm_t c60 = z, c61 = z, c70 = z, c71 = z, c80 = z, c81 = z, c90 = z, c91 = z, cA0 = z, cA1 = z, cB0 = z, cB1 = z;
#define LOAD_ROW(r, i)                                                                                                 \
    if (R > i) c##r##0 = zmm_maskload(c + i * ldc, m0), c##r##1 = zmm_maskload(c + i * ldc + Z_LANES, m1)
#define FMA_ROW(r, i)                                                                                                  \
    if (R > i) t = zmm_bcast(a + i * ars), c##r##0 = zmm_fma(t, b0, c##r##0), c##r##1 = zmm_fma(t, b1, c##r##1)
#define STORE_ROW(r, i)                                                                                                \
    if (R > i) zmm_maskstore(c + i * ldc, m0, c##r##0), zmm_maskstore(c + i * ldc + Z_LANES, m1, c##r##1)
    if (add) {
        LOAD_ROW(0, 0); LOAD_ROW(1, 1); LOAD_ROW(2, 2); LOAD_ROW(3, 3); LOAD_ROW(4, 4); LOAD_ROW(5, 5);
        LOAD_ROW(6, 6); LOAD_ROW(7, 7); LOAD_ROW(8, 8); LOAD_ROW(9, 9); LOAD_ROW(A, 10); LOAD_ROW(B, 11);
    }
    for (int k = 0; k < kc; k++, a += aks, b += bks) {
        zmm_t b0 = zmm_maskload(b, m0), b1 = zmm_maskload(b + Z_LANES, m1), t;
        FMA_ROW(0, 0); FMA_ROW(1, 1); FMA_ROW(2, 2); FMA_ROW(3, 3); FMA_ROW(4, 4); FMA_ROW(5, 5);
        FMA_ROW(6, 6); FMA_ROW(7, 7); FMA_ROW(8, 8); FMA_ROW(9, 9); FMA_ROW(A, 10); FMA_ROW(B, 11);
    }
    STORE_ROW(0, 0); STORE_ROW(1, 1); STORE_ROW(2, 2); STORE_ROW(3, 3); STORE_ROW(4, 4); STORE_ROW(5, 5);
    STORE_ROW(6, 6); STORE_ROW(7, 7); STORE_ROW(8, 8); STORE_ROW(9, 9); STORE_ROW(A, 10); STORE_ROW(B, 11);
#undef LOAD_ROW
#undef FMA_ROW
#undef STORE_ROW
}

/* AVX-512 edge kernel: an mr x nr part of a 12 x 2-zmm tile, without a temporary copy. */
static TARGET_AVX512 void avx512_edge(int mr, int nr, int kc, const kgl_real *a, ptrdiff_t ars, ptrdiff_t aks,
                                      const kgl_real *b, ptrdiff_t bks, kgl_real *c, ptrdiff_t ldc, int add)
{
    zmask_t m0 = zmm_first(nr), m1 = zmm_first(nr - Z_LANES);
    switch (mr) {
    case 1: avx512_edge_body(1, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 2: avx512_edge_body(2, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 3: avx512_edge_body(3, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 4: avx512_edge_body(4, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 5: avx512_edge_body(5, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 6: avx512_edge_body(6, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 7: avx512_edge_body(7, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 8: avx512_edge_body(8, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 9: avx512_edge_body(9, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 10: avx512_edge_body(10, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    case 11: avx512_edge_body(11, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    default: avx512_edge_body(12, kc, a, ars, aks, b, bks, c, ldc, add, m0, m1); break;
    }
}

#endif /* __x86_64__ */

/* The per-ISA blocking (elements): KC * NR * sizeof(kgl_real) bytes (one B panel) stays inside L1 (48 KB on
 * the Ice Lake Xeon these were tuned on), MC * KC * sizeof(kgl_real) (the A block) inside L2 (1.25 MB); MC is
 * a multiple of MR. In float, of KC in 128..384 and MC in 144..480, KC = 256 and MC = 144 were the fastest or
 * within noise of it on every shape timed there (1024^3, 512^3, 1024 x 14541 x 64 in NN / NT / TN, 14541 x 64
 * x 1024). The float AVX-512 KC is 384 since (a B panel of 48 KB, read from L2 once L1 is full: per k the
 * tile reads 176 bytes in 24 FMA cycles, far below L2's rate): a slice of the sum stores C and the next one
 * reloads it, and the step's products with K = 384 (the graph step's width: the readout's S Eᵀ, whose C is
 * 1,024 x 14,505, and the layer's projections) now run in one slice, G E and Gᵀ S in a third fewer. On a
 * Zen 4 core the FB15k-237 graph step is about 1 % faster (524-527 -> 516-520 ms, alternated; speed.md).
 * The AVX2 float tile keeps the double blocking, also measured best. */
#ifdef KGL_FLOAT32
enum { P_MC = 128, P_KC = 256, A2_MC = 96, A2_KC = 256, A5_MC = 144, A5_KC = 384 };
#else
enum { P_MC = 128, P_KC = 256, A2_MC = 96, A2_KC = 256, A5_MC = 144, A5_KC = 192 };
#endif
/* KGL_GEMM_WORKSPACE holds every ISA's blocks, and an A block is whole micro-panels. */
_Static_assert(P_KC <= (int)KC_MAX && P_MC <= (int)KGL_GEMM_MC && P_MC % P_MR == 0, "portable blocking");
#if defined(__x86_64__)
_Static_assert(A2_KC <= (int)KC_MAX && A2_MC <= (int)KGL_GEMM_MC && A2_MC % A2_MR == 0, "AVX2 blocking");
_Static_assert(A5_KC <= (int)KC_MAX && A5_MC <= (int)KGL_GEMM_MC && A5_MC % A5_MR == 0, "AVX-512 blocking");
#endif

/* The per-ISA configurations, indexed by kgl_isa. */
static const isa_cfg configs[] = {
    {P_MR, P_NR, P_MC, P_KC, portable_packed, portable_strided, portable_edge},
#if defined(__x86_64__)
    {A2_MR, A2_NR, A2_MC, A2_KC, avx2_packed, avx2_strided, avx2_edge},
    {A5_MR, A5_NR, A5_MC, A5_KC, avx512_packed, avx512_strided, avx512_edge},
#endif
};

/* ------------------------------------------------------------------ packing */

/* Packs a w-wide, kc-deep panel k-major: dst[k*w + r] = src[r*sr + k*sk] for r < n, 0 for n <= r < w. */
INLINE void pack_body(kgl_real *restrict dst, const kgl_real *restrict src, int n, const int w, int kc, ptrdiff_t sr,
                      ptrdiff_t sk)
{
    if (n == w && sr == 1) { /* rows of the panel are contiguous in memory */
        /* Each k reads w elements of a row sk apart; the next panel reads the next w of the same kc rows, too
         * many streams for the hardware's prefetcher when the rows are far apart (the readout's dE = Gᵀ S packs
         * 256 rows of G 14,505 apart). So each row asks for its elements PACK_AHEAD on, two or three panels
         * ahead: that product went from 120.8 to 116.3 ms (medians of six, f32, one Zen 4 core; speed.md). */
        for (int k = 0; k < kc; k++) {
            /* the address as an integer: past the operand's end it is asked for, never formed as a pointer */
            __builtin_prefetch((const void *)((uintptr_t)(src + k * sk) + PACK_AHEAD * sizeof *src), 0, 3);
            for (int r = 0; r < w; r++) dst[(ptrdiff_t)k * w + r] = src[k * sk + r];
        }
    } else if (n == w && sk == 1) { /* a transpose: w streams, each contiguous in k */
        int k = 0;
        for (; k + 4 <= kc; k += 4)
            for (int r = 0; r < w; r++) {
                const kgl_real *s = src + r * sr + k;
                kgl_real *d = dst + (ptrdiff_t)k * w + r;
                d[0] = s[0], d[w] = s[1], d[2 * w] = s[2], d[3 * w] = s[3];
            }
        for (; k < kc; k++)
            for (int r = 0; r < w; r++) dst[(ptrdiff_t)k * w + r] = src[r * sr + k];
    } else {
        for (int k = 0; k < kc; k++)
            for (int r = 0; r < w; r++) dst[(ptrdiff_t)k * w + r] = r < n ? src[r * sr + k * sk] : 0.0;
    }
}

/* pack_body with the panel width known at compile time for the widths the micro-kernels use. */
static void pack_panel(kgl_real *restrict dst, const kgl_real *restrict src, int n, int w, int kc, ptrdiff_t sr,
                       ptrdiff_t sk)
{
    switch (w) {
    case 4: pack_body(dst, src, n, 4, kc, sr, sk); break;
    case 6: pack_body(dst, src, n, 6, kc, sr, sk); break;
    case 8: pack_body(dst, src, n, 8, kc, sr, sk); break;
    case 12: pack_body(dst, src, n, 12, kc, sr, sk); break;
    case 16: pack_body(dst, src, n, 16, kc, sr, sk); break;
    case 32: pack_body(dst, src, n, 32, kc, sr, sk); break;
    default: pack_body(dst, src, n, w, kc, sr, sk); break;
    }
}

/* ------------------------------------------------------------------ drivers */

/* One GEMM call: C(i,j) (+)= sum_k A(i,k) B(k,j), A(i,k) = A[i*ars + k*acs], B(k,j) = B[k*brs + j*bcs]. */
typedef struct {
    const isa_cfg *f;
    int M, N, K, mode;
    const kgl_real *A;
    ptrdiff_t ars, acs;
    const kgl_real *B;
    ptrdiff_t brs, bcs;
    kgl_real *C;
    ptrdiff_t ldc;
    kgl_pool *pool;
    int split_rows, chunk; /* parallel task t owns rows (or columns) [t*chunk, (t+1)*chunk) */
} gemm_job;

static inline int imin(int a, int b) { return a < b ? a : b; }

/* Asks for the rows r < mr, columns j < nr of a tile of C to be brought into the cache (for writing): its
 * lines are read by the micro-kernel's first loads (KGL_ADD) or, for its last stores, fetched from memory
 * (KGL_SET), so their misses, issued one tile ahead, overlap with that tile's k-loop. */
static inline void prefetch_tile(const kgl_real *c, ptrdiff_t ldc, int mr, int nr)
{
    for (int i = 0; i < mr; i++) {
        const char *row = (const char *)(c + i * ldc), *end = (const char *)(c + i * ldc + nr - 1);
        for (const char *p = row; p < end; p += 64) __builtin_prefetch(p, 1, 3);
        __builtin_prefetch(end, 1, 3);
    }
}

/* The macro-kernel: C[0:mc, 0:nc] (+)= packed A block (mc x kc) times packed B block (kc x nc). */
static void macro_kernel(const isa_cfg *f, int mc, int nc, int kc, const kgl_real *ap, const kgl_real *bp, kgl_real *C,
                         ptrdiff_t ldc, int add)
{
    const int MR = f->mr, NR = f->nr;
    for (int jr = 0; jr < nc; jr += NR) {
        int nr = imin(NR, nc - jr);
        const kgl_real *b = bp + (ptrdiff_t)jr * kc;
        for (int ir = 0; ir < mc; ir += MR) {
            int mr = imin(MR, mc - ir);
            const kgl_real *a = ap + (ptrdiff_t)ir * kc;
            kgl_real *c = C + ir * ldc + jr;
            /* the next tile: down this column, or the top of the next one */
            if (ir + MR < mc) prefetch_tile(c + MR * ldc, ldc, imin(MR, mc - ir - MR), nr);
            else if (jr + NR < nc) prefetch_tile(C + jr + NR, ldc, imin(MR, mc), imin(NR, nc - jr - NR));
            if (mr == MR && nr == NR) f->packed(kc, a, 1, MR, b, NR, c, ldc, add);
            else f->edge(mr, nr, kc, a, 1, MR, b, nr, c, ldc, add); /* an edge panel of B is nr wide */
        }
    }
}

/* The packed loop nest (see the top of the file) on the block C[i0:i1, j0:j1], with one thread's workspace. */
static void gemm_block(const gemm_job *g, int i0, int i1, int j0, int j1, kgl_real *ws)
{
    const isa_cfg *f = g->f;
    const int MR = f->mr, NR = f->nr, MC = f->mc, KC = f->kc;
    kgl_real *bp = ws, *ap = ws + (ptrdiff_t)KC_MAX * NC;
    for (int jc = j0; jc < j1; jc += NC) {
        int nc = imin(NC, j1 - jc);
        for (int pc = 0; pc < g->K; pc += KC) {
            int kc = imin(KC, g->K - pc);
            int add = pc > 0 || g->mode == KGL_ADD;
            for (int jr = 0; jr < nc; jr += NR)
                pack_panel(bp + (ptrdiff_t)jr * kc, g->B + pc * g->brs + (jc + jr) * g->bcs, imin(NR, nc - jr),
                           imin(NR, nc - jr), kc, g->bcs, g->brs);
            for (int ic = i0; ic < i1; ic += MC) {
                int mc = imin(MC, i1 - ic);
                for (int ir = 0; ir < mc; ir += MR)
                    pack_panel(ap + (ptrdiff_t)ir * kc, g->A + (ic + ir) * g->ars + pc * g->acs, imin(MR, mc - ir), MR,
                               kc, g->ars, g->acs);
                macro_kernel(f, mc, nc, kc, ap, bp, g->C + ic * g->ldc + jc, g->ldc, add);
            }
        }
    }
}

/* The direct path for small products (K <= KC): micro-kernels read A and B in place; only B's panels
 * are packed when B is transposed (so not contiguous along j). */
static void gemm_direct(const gemm_job *g, kgl_real *pb)
{
    const isa_cfg *f = g->f;
    const int MR = f->mr, NR = f->nr, K = g->K;
    for (int j0 = 0; j0 < g->N; j0 += NR) {
        int nr = imin(NR, g->N - j0);
        const kgl_real *b = g->B + j0 * g->bcs;
        ptrdiff_t bks = g->brs;
        if (g->bcs != 1) { /* an edge panel is packed only as wide as it is: the edge kernel reads j < nr */
            pack_panel(pb, b, nr, nr, K, g->bcs, g->brs);
            b = pb, bks = nr;
        }
        for (int i0 = 0; i0 < g->M; i0 += MR) {
            int mr = imin(MR, g->M - i0);
            const kgl_real *a = g->A + i0 * g->ars;
            kgl_real *c = g->C + i0 * g->ldc + j0;
            if (mr == MR && nr == NR) f->strided(K, a, g->ars, g->acs, b, bks, c, g->ldc, g->mode);
            else f->edge(mr, nr, K, a, g->ars, g->acs, b, bks, c, g->ldc, g->mode);
        }
    }
}

/* A pool task: the packed nest on this task's row or column block of C. */
static void gemm_task(void *ctx, int task, int worker)
{
    const gemm_job *g = ctx;
    kgl_real *ws = kgl_pool_gemm_workspace(g->pool, worker);
    int lo = task * g->chunk;
    if (g->split_rows) gemm_block(g, lo, imin(g->M, lo + g->chunk), 0, g->N, ws);
    else gemm_block(g, 0, g->M, lo, imin(g->N, lo + g->chunk), ws);
}

/* Chooses the path and the split between threads, and runs the GEMM. */
static void gemm(int isa, int path, kgl_pool *p, int M, int N, int K, const kgl_real *A, ptrdiff_t ars, ptrdiff_t acs,
                 const kgl_real *B, ptrdiff_t brs, ptrdiff_t bcs, kgl_real *C, ptrdiff_t ldc, int mode)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        if (mode == KGL_SET)
            for (int i = 0; i < M; i++) memset(C + i * ldc, 0, (size_t)N * sizeof *C);
        return;
    }
    gemm_job g = {&configs[isa], M, N, K, mode, A, ars, acs, B, brs, bcs, C, ldc, p, 1, M};
    double flops = 2.0 * M * N * K;
    if (K <= KC_MAX && (path == KGL_PATH_DIRECT || (path == KGL_PATH_AUTO && flops < DIRECT_MAX_FLOPS))) {
        gemm_direct(&g, kgl_pool_gemm_workspace(p, 0));
        return;
    }
    /* Serial, or one block per thread cut along rows or columns (in whole micro-tiles): whichever has the
     * least estimated time for its slowest thread, counting padded flops, packing (each thread packs all of
     * the operand it does not split) and the cost of waking the other threads. */
    const int T = kgl_pool_threads(p), MR = g.f->mr, NR = g.f->nr;
    const int mti = (M + MR - 1) / MR, nti = (N + NR - 1) / NR;
    const double mt = mti, nt = nti, per_r = (mti + T - 1) / T, per_c = (nti + T - 1) / T;
    double serial = 2.0 * mt * MR * nt * NR * K + PACK_COST * ((double)M * K + (double)K * N);
    double rows = 2.0 * per_r * MR * nt * NR * K + PACK_COST * (per_r * MR * K + (double)K * N) + WAKE_COST;
    double cols = 2.0 * mt * MR * per_c * NR * K + PACK_COST * ((double)M * K + per_c * NR * K) + WAKE_COST;
    if (T == 1 || (serial <= rows && serial <= cols)) {
        gemm_block(&g, 0, M, 0, N, kgl_pool_gemm_workspace(p, 0));
        return;
    }
    g.split_rows = rows <= cols;
    g.chunk = g.split_rows ? (int)per_r * MR : (int)per_c * NR;
    int n_tasks = ((g.split_rows ? M : N) + g.chunk - 1) / g.chunk;
    kgl_pool_run(p, n_tasks, gemm_task, &g);
}


/* The ISA to use: the active one, or a requested one clamped to what the CPU and this build have. */
static int pick_isa(int want)
{
#if defined(__x86_64__)
    int best = (int)kgl_isa_best();
#if defined(KERNEL_EMULATE_AVX512)
    if (best == KGL_ISA_AVX2) best = KGL_ISA_AVX512; /* the model needs AVX2 only */
#endif
    if (want < 0) return (int)kgl_isa_active();
    return want < best ? want : best;
#else
    (void)want;
    return KGL_ISA_PORTABLE;
#endif
}

void kgl_gemm_nn(kgl_pool *p, int M, int N, int K, const kgl_real *A, int lda, const kgl_real *B, int ldb, kgl_real *C,
                 int ldc, int mode)
{
    gemm(pick_isa(-1), KGL_PATH_AUTO, p, M, N, K, A, lda, 1, B, ldb, 1, C, ldc, mode);
}

void kgl_gemm_nt(kgl_pool *p, int M, int N, int K, const kgl_real *A, int lda, const kgl_real *B, int ldb, kgl_real *C,
                 int ldc, int mode)
{
    gemm(pick_isa(-1), KGL_PATH_AUTO, p, M, N, K, A, lda, 1, B, 1, ldb, C, ldc, mode);
}

void kgl_gemm_tn(kgl_pool *p, int M, int N, int K, const kgl_real *A, int lda, const kgl_real *B, int ldb, kgl_real *C,
                 int ldc, int mode)
{
    gemm(pick_isa(-1), KGL_PATH_AUTO, p, M, N, K, A, 1, lda, B, ldb, 1, C, ldc, mode);
}


/* ---- B packed once, shared by many products ---------------------------------
 * Attention multiplies every block of rows by the same K_hᵀ, V_h, K_h, Q_h or
 * G_h. Packing that operand once per head (into the micro-kernel's panels:
 * for each KC block of k, the NR-wide panels of kc × NR, the last one kc × nr) spares
 * every task its own packing, and keeps the micro-kernel reading B
 * contiguously (read in place, rows 2,048 elements apart all fall in one L1
 * set). Each element's chain is that of every other path. */
static int packed_width(int N, int nr) { return (N + nr - 1) / nr * nr; }

size_t kgl_gemm_packed_b_size(int K, int N)
{
    const isa_cfg *f = &configs[pick_isa(-1)];
    return (size_t)(K > 0 ? K : 0) * (size_t)packed_width(N > 0 ? N : 0, f->nr);
}

/* kgl_gemm_pack_b with the ISA's panels: B(k, j) = B[k*brs + j*bcs]. */
static void pack_b(const isa_cfg *f, int K, int N, const kgl_real *B, ptrdiff_t brs, ptrdiff_t bcs, kgl_real *packed)
{
    size_t npad = (size_t)packed_width(N, f->nr);
    for (int pc = 0; pc < K; pc += f->kc) {
        int kc = imin(f->kc, K - pc);
        kgl_real *block = packed + (size_t)pc * npad;
        for (int jr = 0; jr < N; jr += f->nr)
            pack_panel(block + (ptrdiff_t)jr * kc, B + pc * brs + jr * bcs, imin(f->nr, N - jr), imin(f->nr, N - jr), kc,
                       bcs, brs);
    }
}

/* kgl_gemm_packed_b_on with the ISA's kernels: A(i, k) = A[i*ars + k*acs]. */
static void packed_b_on(const isa_cfg *f, kgl_pool *p, int worker, int M, int N, int K, const kgl_real *A,
                        ptrdiff_t ars, ptrdiff_t acs, const kgl_real *packed, kgl_real *C, ptrdiff_t ldc, int mode)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        if (mode == KGL_SET)
            for (int i = 0; i < M; i++) memset(C + (ptrdiff_t)i * ldc, 0, (size_t)N * sizeof *C);
        return;
    }
    size_t npad = (size_t)packed_width(N, f->nr);
    if ((int)npad <= IN_PLACE_A_MAX_PANELS * f->nr) {
        /* Few columns: each MR-row slab of A (in place) meets every B panel while it is in L1. The same
         * chains as below: k in increasing order, each KC slice stored to C and reloaded by the next. */
        const int MR = f->mr, NR = f->nr;
        for (int pc = 0; pc < K; pc += f->kc) {
            int kc = imin(f->kc, K - pc);
            int add = pc > 0 || mode == KGL_ADD;
            const kgl_real *bp = packed + (size_t)pc * npad;
            for (int ir = 0; ir < M; ir += MR) {
                int mr = imin(MR, M - ir);
                const kgl_real *a = A + ir * ars + pc * acs;
                for (int jr = 0; jr < N; jr += NR) {
                    int nr = imin(NR, N - jr);
                    kgl_real *c = C + (ptrdiff_t)ir * ldc + jr;
                    if (mr == MR && nr == NR) f->strided(kc, a, ars, acs, bp + (ptrdiff_t)jr * kc, NR, c, ldc, add);
                    else f->edge(mr, nr, kc, a, ars, acs, bp + (ptrdiff_t)jr * kc, nr, c, ldc, add);
                }
            }
        }
        return;
    }
    kgl_real *ap = kgl_pool_gemm_workspace(p, worker) + (ptrdiff_t)KC_MAX * NC;
    for (int pc = 0; pc < K; pc += f->kc) {
        int kc = imin(f->kc, K - pc);
        int add = pc > 0 || mode == KGL_ADD;
        for (int ic = 0; ic < M; ic += f->mc) {
            int mc = imin(f->mc, M - ic);
            for (int ir = 0; ir < mc; ir += f->mr)
                pack_panel(ap + (ptrdiff_t)ir * kc, A + (ic + ir) * ars + pc * acs, imin(f->mr, mc - ir), f->mr, kc,
                           ars, acs);
            macro_kernel(f, mc, N, kc, ap, packed + (size_t)pc * npad, C + (ptrdiff_t)ic * ldc, ldc, add);
        }
    }
}

void kgl_gemm_pack_b(int K, int N, const kgl_real *B, int ldb, int transposed, kgl_real *packed)
{
    pack_b(&configs[pick_isa(-1)], K, N, B, transposed ? 1 : ldb, transposed ? ldb : 1, packed);
}

void kgl_gemm_packed_b_on(kgl_pool *p, int worker, int M, int N, int K, const kgl_real *A, int lda, int a_transposed,
                          const kgl_real *packed, kgl_real *C, int ldc, int mode)
{
    packed_b_on(&configs[pick_isa(-1)], p, worker, M, N, K, A, a_transposed ? 1 : lda, a_transposed ? lda : 1, packed,
                C, ldc, mode);
}

void kgl_gemm_for_tests(int isa, int path, int ta, int tb, kgl_pool *p, int M, int N, int K, const kgl_real *A,
                        int lda, const kgl_real *B, int ldb, kgl_real *C, int ldc, int mode)
{
    isa = pick_isa(isa < 0 ? 0 : isa);
    ptrdiff_t ars = ta ? 1 : lda, acs = ta ? lda : 1, brs = tb ? 1 : ldb, bcs = tb ? ldb : 1;
    if (path != KGL_PATH_PACKED_B) {
        gemm(isa, path, p, M, N, K, A, ars, acs, B, brs, bcs, C, ldc, mode);
        return;
    }
    const isa_cfg *f = &configs[isa];
    size_t n = (size_t)(K > 0 ? K : 0) * (size_t)packed_width(N > 0 ? N : 0, f->nr);
    kgl_real *packed = kgl_xmalloc(n * sizeof *packed);
    pack_b(f, K, N, B, brs, bcs, packed);
    packed_b_on(f, p, 0, M, N, K, A, ars, acs, packed, C, ldc, mode);
    free(packed);
}
