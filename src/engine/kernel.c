/* kernel.c — blocked dense loops for the ops (see kernel.h for the contract:
 * every output element is one running sum in reduction order, so the bits
 * are those of the plain loop).
 *
 * A tile of 4 x 4 outputs keeps 16 independent sums in flight: the plain
 * loop's single dependent chain waits for each addition to finish (about 4
 * cycles), a tile issues a multiply and an add every cycle. Element (i, k)
 * of A is A[i·ai + k·ak] and (k, j) of B is B[k·bk + j·bj], so one body
 * serves the three layouts; the wrappers pass the unit strides as constants
 * and the compiler specialises each. */
#include <stddef.h>

#include "kernel.h"

#define A_(i, k) A[(ptrdiff_t)(i) * ai + (ptrdiff_t)(k) * ak]
#define B_(k, j) B[(ptrdiff_t)(k) * bk + (ptrdiff_t)(j) * bj]
#define C_(i, j) C[(ptrdiff_t)(i) * ldc + (j)]

static inline __attribute__((always_inline)) void gemm(int M, int N, int K, const double *A, ptrdiff_t ai,
                                                       ptrdiff_t ak, const double *B, ptrdiff_t bk, ptrdiff_t bj,
                                                       double *C, int ldc, int mode)
{
    int i = 0;
    for (; i + 4 <= M; i += 4) {
        int j = 0;
        for (; j + 4 <= N; j += 4) {
            double c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
            double c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
            if (mode == KGL_INTO) {
                c00 = C_(i, j), c01 = C_(i, j + 1), c02 = C_(i, j + 2), c03 = C_(i, j + 3);
                c10 = C_(i + 1, j), c11 = C_(i + 1, j + 1), c12 = C_(i + 1, j + 2), c13 = C_(i + 1, j + 3);
                c20 = C_(i + 2, j), c21 = C_(i + 2, j + 1), c22 = C_(i + 2, j + 2), c23 = C_(i + 2, j + 3);
                c30 = C_(i + 3, j), c31 = C_(i + 3, j + 1), c32 = C_(i + 3, j + 2), c33 = C_(i + 3, j + 3);
            }
            for (int k = 0; k < K; k++) {
                double a0 = A_(i, k), a1 = A_(i + 1, k), a2 = A_(i + 2, k), a3 = A_(i + 3, k);
                double b0 = B_(k, j), b1 = B_(k, j + 1), b2 = B_(k, j + 2), b3 = B_(k, j + 3);
                c00 += a0 * b0, c01 += a0 * b1, c02 += a0 * b2, c03 += a0 * b3;
                c10 += a1 * b0, c11 += a1 * b1, c12 += a1 * b2, c13 += a1 * b3;
                c20 += a2 * b0, c21 += a2 * b1, c22 += a2 * b2, c23 += a2 * b3;
                c30 += a3 * b0, c31 += a3 * b1, c32 += a3 * b2, c33 += a3 * b3;
            }
            if (mode != KGL_AFTER) {
                C_(i, j) = c00, C_(i, j + 1) = c01, C_(i, j + 2) = c02, C_(i, j + 3) = c03;
                C_(i + 1, j) = c10, C_(i + 1, j + 1) = c11, C_(i + 1, j + 2) = c12, C_(i + 1, j + 3) = c13;
                C_(i + 2, j) = c20, C_(i + 2, j + 1) = c21, C_(i + 2, j + 2) = c22, C_(i + 2, j + 3) = c23;
                C_(i + 3, j) = c30, C_(i + 3, j + 1) = c31, C_(i + 3, j + 2) = c32, C_(i + 3, j + 3) = c33;
            } else {
                C_(i, j) += c00, C_(i, j + 1) += c01, C_(i, j + 2) += c02, C_(i, j + 3) += c03;
                C_(i + 1, j) += c10, C_(i + 1, j + 1) += c11, C_(i + 1, j + 2) += c12, C_(i + 1, j + 3) += c13;
                C_(i + 2, j) += c20, C_(i + 2, j + 1) += c21, C_(i + 2, j + 2) += c22, C_(i + 2, j + 3) += c23;
                C_(i + 3, j) += c30, C_(i + 3, j + 1) += c31, C_(i + 3, j + 2) += c32, C_(i + 3, j + 3) += c33;
            }
        }
        for (; j < N; j++) { /* the last columns: four rows at a time */
            double c0 = 0, c1 = 0, c2 = 0, c3 = 0;
            if (mode == KGL_INTO) c0 = C_(i, j), c1 = C_(i + 1, j), c2 = C_(i + 2, j), c3 = C_(i + 3, j);
            for (int k = 0; k < K; k++) {
                double b = B_(k, j);
                c0 += A_(i, k) * b, c1 += A_(i + 1, k) * b, c2 += A_(i + 2, k) * b, c3 += A_(i + 3, k) * b;
            }
            if (mode != KGL_AFTER) C_(i, j) = c0, C_(i + 1, j) = c1, C_(i + 2, j) = c2, C_(i + 3, j) = c3;
            else C_(i, j) += c0, C_(i + 1, j) += c1, C_(i + 2, j) += c2, C_(i + 3, j) += c3;
        }
    }
    for (; i < M; i++) { /* the last rows: four columns at a time */
        int j = 0;
        for (; j + 4 <= N; j += 4) {
            double c0 = 0, c1 = 0, c2 = 0, c3 = 0;
            if (mode == KGL_INTO) c0 = C_(i, j), c1 = C_(i, j + 1), c2 = C_(i, j + 2), c3 = C_(i, j + 3);
            for (int k = 0; k < K; k++) {
                double a = A_(i, k);
                c0 += a * B_(k, j), c1 += a * B_(k, j + 1), c2 += a * B_(k, j + 2), c3 += a * B_(k, j + 3);
            }
            if (mode != KGL_AFTER) C_(i, j) = c0, C_(i, j + 1) = c1, C_(i, j + 2) = c2, C_(i, j + 3) = c3;
            else C_(i, j) += c0, C_(i, j + 1) += c1, C_(i, j + 2) += c2, C_(i, j + 3) += c3;
        }
        for (; j < N; j++) {
            double c = mode == KGL_INTO ? C_(i, j) : 0;
            for (int k = 0; k < K; k++) c += A_(i, k) * B_(k, j);
            if (mode != KGL_AFTER) C_(i, j) = c;
            else C_(i, j) += c;
        }
    }
}

void kgl_gemm_nn(int M, int N, int K, const double *A, int lda, const double *B, int ldb, double *C, int ldc, int mode)
{
    gemm(M, N, K, A, lda, 1, B, ldb, 1, C, ldc, mode);
}

void kgl_gemm_nt(int M, int N, int K, const double *A, int lda, const double *B, int ldb, double *C, int ldc, int mode)
{
    gemm(M, N, K, A, lda, 1, B, 1, ldb, C, ldc, mode);
}

void kgl_gemm_tn(int M, int N, int K, const double *A, int lda, const double *B, int ldb, double *C, int ldc, int mode)
{
    gemm(M, N, K, A, 1, lda, B, ldb, 1, C, ldc, mode);
}

void kgl_readout_rows(const double *C, const double *R, const double *E, int n, int d, const int *heads,
                      const int *rels, int b0, int b1, double *Y, double *v)
{
    for (int b = b0; b < b1; b++) {
        const double *c = C + (size_t)heads[b] * d, *r = R + (size_t)rels[b] * d;
        double *vb = v + (size_t)(b - b0) * d;
        for (int k = 0; k < d; k++) vb[k] = c[k] * r[k];
    }
    /* Y[b0:b1] = V Eᵀ, each entry summed over c in order from 0 */
    kgl_gemm_nt(b1 - b0, n, d, v, d, E, d, Y + (size_t)b0 * n, n, KGL_SET);
}

void kgl_readout_grad_e(const double *G, const double *C, const double *R, int n, int d, const int *heads,
                        const int *rels, int B, int j0, int j1, double *dE)
{
    /* a tile of 4 entities j x 4 features c, the examples b in order */
    int j = j0;
    for (; j + 4 <= j1; j += 4) {
        int k = 0;
        for (; k + 4 <= d; k += 4) {
            double e[4][4];
            for (int jj = 0; jj < 4; jj++)
                for (int kk = 0; kk < 4; kk++) e[jj][kk] = dE[(size_t)(j + jj) * d + k + kk];
            for (int b = 0; b < B; b++) {
                const double *c = C + (size_t)heads[b] * d + k, *r = R + (size_t)rels[b] * d + k;
                const double *g = G + (size_t)b * n + j;
                for (int jj = 0; jj < 4; jj++) {
                    double gj = g[jj];
                    e[jj][0] += gj * c[0] * r[0];
                    e[jj][1] += gj * c[1] * r[1];
                    e[jj][2] += gj * c[2] * r[2];
                    e[jj][3] += gj * c[3] * r[3];
                }
            }
            for (int jj = 0; jj < 4; jj++)
                for (int kk = 0; kk < 4; kk++) dE[(size_t)(j + jj) * d + k + kk] = e[jj][kk];
        }
        for (; k < d; k++)
            for (int jj = 0; jj < 4; jj++) {
                double e = dE[(size_t)(j + jj) * d + k];
                for (int b = 0; b < B; b++)
                    e += G[(size_t)b * n + j + jj] * C[(size_t)heads[b] * d + k] * R[(size_t)rels[b] * d + k];
                dE[(size_t)(j + jj) * d + k] = e;
            }
    }
    for (; j < j1; j++)
        for (int k = 0; k < d; k++) {
            double e = dE[(size_t)j * d + k];
            for (int b = 0; b < B; b++) e += G[(size_t)b * n + j] * C[(size_t)heads[b] * d + k] * R[(size_t)rels[b] * d + k];
            dE[(size_t)j * d + k] = e;
        }
}
