/* kernel.h — the dense loops the ops spend their time in (src/engine/kernel.c).
 * Private to the library.
 *
 * Every kernel computes each output element as one running sum over the
 * reduction index in increasing order, exactly as the plain triple loop it
 * replaces; the blocking only decides how many such sums run side by side
 * (a 4 x 4 tile of independent accumulators instead of one dependent chain).
 * So the results are bit-identical to the plain loops, whatever the tile
 * shape, and each output element is written by exactly one call: splitting
 * the rows of C between threads cannot change a bit either. */
#ifndef KGL_KERNEL_H
#define KGL_KERNEL_H

#include <stdbool.h>

/* How the sum meets C:
 *   KGL_SET:   C = ((0 + t_0) + t_1) + …          C's old value is not read
 *   KGL_INTO:  C = ((C + t_0) + t_1) + …          the terms land in C one by one
 *   KGL_AFTER: C = C + (((0 + t_0) + t_1) + …)    the sum first, then added */
enum { KGL_SET = 0, KGL_INTO = 1, KGL_AFTER = 2 };

/* C[M,N] ⊕= A[M,K] B[K,N];  t_k = A[i,k] B[k,j] */
void kgl_gemm_nn(int M, int N, int K, const double *A, int lda, const double *B, int ldb, double *C, int ldc,
                 int mode);
/* C[M,N] ⊕= A[M,K] B[N,K]ᵀ;  t_k = A[i,k] B[j,k] */
void kgl_gemm_nt(int M, int N, int K, const double *A, int lda, const double *B, int ldb, double *C, int ldc,
                 int mode);
/* C[M,N] ⊕= A[K,M]ᵀ B[K,N];  t_k = A[k,i] B[k,j] */
void kgl_gemm_tn(int M, int N, int K, const double *A, int lda, const double *B, int ldb, double *C, int ldc,
                 int mode);

/* The trilinear readout for examples b in [b0, b1):
 *   Y[b, j] = Σ_c (C[heads[b], c] R[rels[b], c]) E[j, c]   (sum in c order)
 * v (d doubles per example of the block, scratch) receives C ⊙ R. */
void kgl_readout_rows(const double *C, const double *R, const double *E, int n, int d, const int *heads,
                      const int *rels, int b0, int b1, double *Y, double *v);
/* dE[j, c] = ((dE[j, c] + (G[0, j] C[h_0, c]) R[r_0, c]) + (G[1, j] C[h_1, c]) R[r_1, c]) + …
 * for rows j in [j0, j1), the examples in order. */
void kgl_readout_grad_e(const double *G, const double *C, const double *R, int n, int d, const int *heads,
                        const int *rels, int B, int j0, int j1, double *dE);

#endif
