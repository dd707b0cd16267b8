/* kernel.h — matrix multiply in kgl_real (double, or float under KGL_FLOAT32) for kgl (kernel.c).
 *
 * All matrices are row-major with leading dimensions (in elements). M, N or
 * K may be 0; with K = 0, KGL_SET writes zeros. C must not alias A or B.
 *
 * Each element of C is one running sum over k in increasing order, started
 * from 0 (KGL_SET) or from C's old value (KGL_ADD):
 *   avx2 / avx512:  c = fma(a_ik, b_kj, c)            for k = 0, 1, ..., K-1
 *   portable:       c = c + a_ik * b_kj (rounded twice) for k = 0, 1, ..., K-1
 * The blocking, the number of threads and how the work is split change only
 * which sums run side by side, never the operations inside one sum, so the
 * bits are the same for any thread count, any pool and any C offset; AVX2
 * and AVX-512 give the same bits as each other (and as a scalar fma() loop);
 * the portable path gives those of the plain mul+add loop. In float the
 * chain is the same in float arithmetic (fmaf; a float multiply and add). */
#ifndef KGL_KERNEL_H
#define KGL_KERNEL_H

#include "kgl/engine.h" /* kgl_real */
#include "pool.h"

enum { KGL_SET = 0, KGL_ADD = 1 }; /* C = A·B  or  C += A·B (the sum starts from C's value) */

/* Blocking constants (elements; the largest over the ISAs); see kernel.c. */
#ifdef KGL_FLOAT32
enum {
    KGL_GEMM_KC = 384,  /* depth of a packed block (the k extent a micro-kernel call runs; AVX-512's) */
    KGL_GEMM_MC = 144,  /* rows of C per packed block of A */
    KGL_GEMM_NC = 4096, /* columns of C per packed block of B */
};
#else
enum {
    KGL_GEMM_KC = 256,  /* depth of a packed block (the k extent a micro-kernel call runs) */
    KGL_GEMM_MC = 144,  /* rows of C per packed block of A */
    KGL_GEMM_NC = 2048, /* columns of C per packed block of B */
};
#endif
/* Bytes of per-thread packing space the GEMM needs: a KC x NC block of B and an MC x KC block of A. */
#define KGL_GEMM_WORKSPACE ((unsigned long)(KGL_GEMM_KC * KGL_GEMM_NC + KGL_GEMM_MC * KGL_GEMM_KC) * sizeof(kgl_real))

/* C[M,N] (+)= A[M,K] B[K,N] */
void kgl_gemm_nn(kgl_pool *p, int M, int N, int K, const kgl_real *A, int lda, const kgl_real *B, int ldb, kgl_real *C,
                 int ldc, int mode);
/* C[M,N] (+)= A[M,K] B[N,K]^T */
void kgl_gemm_nt(kgl_pool *p, int M, int N, int K, const kgl_real *A, int lda, const kgl_real *B, int ldb, kgl_real *C,
                 int ldc, int mode);
/* C[M,N] (+)= A[K,M]^T B[K,N] */
void kgl_gemm_tn(kgl_pool *p, int M, int N, int K, const kgl_real *A, int lda, const kgl_real *B, int ldb, kgl_real *C,
                 int ldc, int mode);

/* For tests and benchmarks only: the same GEMM with the ISA and the path forced.
 * isa: a kgl_isa value no higher than kgl_isa_best() (lower values are honoured, higher ones clamped);
 * ta, tb: 0 = as stored, 1 = transposed (ta = tb = 1 is not supported);
 * path: KGL_PATH_AUTO, KGL_PATH_DIRECT (unpacked small-matrix path; used only if K <= KC), KGL_PATH_PACKED,
 * or KGL_PATH_PACKED_B: B packed as kgl_gemm_pack_b packs it (into memory this call allocates), then
 * kgl_gemm_packed_b_on on worker 0, both with this ISA's micro-tile. */
enum { KGL_PATH_AUTO = 0, KGL_PATH_DIRECT = 1, KGL_PATH_PACKED = 2, KGL_PATH_PACKED_B = 3 };
void kgl_gemm_for_tests(int isa, int path, int ta, int tb, kgl_pool *p, int M, int N, int K, const kgl_real *A,
                        int lda, const kgl_real *B, int ldb, kgl_real *C, int ldc, int mode);


/* B packed once for many products that share it (B(k, j) = B[k·ldb + j], or
 * B[j·ldb + k] when transposed): kgl_gemm_packed_b_size(K, N) kgl_reals
 * (doubles, or floats in the f32 build) hold it; then C[M,N] (+)= A B with A(i, k) = A[i·lda + k] (or A[k·lda + i]
 * when a_transposed), run by one thread in a task. When B is at most four
 * NR-wide panels (attention's d_k side), A is read in place rather than
 * packed: each of its panels would serve only that many tiles. The bits are
 * those of the calls above. */
size_t kgl_gemm_packed_b_size(int K, int N);
void kgl_gemm_pack_b(int K, int N, const kgl_real *B, int ldb, int transposed, kgl_real *packed);
void kgl_gemm_packed_b_on(kgl_pool *p, int worker, int M, int N, int K, const kgl_real *A, int lda, int a_transposed,
                          const kgl_real *packed, kgl_real *C, int ldc, int mode);

#endif
