/* test_bench.c — what the benchmark work added: the blocked kernels give the
 * plain loops' bits, and the like. */
#include <stdlib.h>

#include "kernel.h"
#include "test.h"

static void fill(double *x, int n, kgl_rng *rng)
{
    for (int i = 0; i < n; i++) x[i] = kgl_rng_normal(rng);
}

/* The contract of kernel.h: each output is one running sum in reduction
   order, so the blocked kernels equal the plain loops bit for bit, for every
   shape (tiles and remainders) and every mode. Compared with ==. */
TEST(blocked_kernels_equal_plain_loops_bit_for_bit)
{
    static const int sizes[] = {1, 3, 4, 5, 8, 9};
    enum { NS = sizeof sizes / sizeof sizes[0], MAX = 9 };
    kgl_rng rng;
    kgl_rng_seed(&rng, 11);
    double A[MAX * MAX], B[MAX * MAX], C0[MAX * MAX], C[MAX * MAX], want[MAX * MAX];
    long compared = 0, differ = 0;
    for (int layout = 0; layout < 3; layout++)
        for (int mode = KGL_SET; mode <= KGL_AFTER; mode++)
            for (int a = 0; a < NS; a++)
                for (int b = 0; b < NS; b++)
                    for (int c = 0; c < NS; c++) {
                        int M = sizes[a], N = sizes[b], K = sizes[c];
                        fill(A, MAX * MAX, &rng);
                        fill(B, MAX * MAX, &rng);
                        fill(C0, MAX * MAX, &rng);
                        for (int i = 0; i < M; i++)
                            for (int j = 0; j < N; j++) {
                                double s = mode == KGL_INTO ? C0[i * N + j] : 0;
                                for (int k = 0; k < K; k++) {
                                    double x = layout == 2 ? A[k * M + i] : A[i * K + k];
                                    double y = layout == 1 ? B[j * K + k] : B[k * N + j];
                                    s += x * y;
                                }
                                want[i * N + j] = mode == KGL_AFTER ? C0[i * N + j] + s : s;
                            }
                        memcpy(C, C0, sizeof C);
                        if (layout == 0) kgl_gemm_nn(M, N, K, A, K, B, N, C, N, mode);
                        if (layout == 1) kgl_gemm_nt(M, N, K, A, K, B, K, C, N, mode);
                        if (layout == 2) kgl_gemm_tn(M, N, K, A, M, B, N, C, N, mode);
                        for (int i = 0; i < M * N; i++, compared++) differ += C[i] != want[i];
                        for (int i = M * N; i < MAX * MAX; i++) differ += C[i] != C0[i]; /* nothing else written */
                    }
    CHECK(compared == 3 * 3 * 30 * 30 * NS); /* layouts x modes x ΣM x ΣN x |K| */
    CHECK(differ == 0);

    /* the readout: Y[b,j] = Σ_c (C[h]R[r])_c E[j,c], and dE's three-factor terms */
    enum { n = 7, d = 6, NB = 5 };
    double Cm[4 * d], R[3 * d], E[n * d], Y[NB * n], V[NB * d], G[NB * n], dE[n * d], dE_want[n * d];
    int heads[NB] = {0, 3, 1, 3, 2}, rels[NB] = {2, 0, 1, 2, 2};
    fill(Cm, 4 * d, &rng), fill(R, 3 * d, &rng), fill(E, n * d, &rng), fill(G, NB * n, &rng), fill(dE, n * d, &rng);
    memcpy(dE_want, dE, sizeof dE);
    kgl_readout_rows(Cm, R, E, n, d, heads, rels, 0, NB, Y, V);
    kgl_readout_grad_e(G, Cm, R, n, d, heads, rels, NB, 0, n, dE);
    differ = 0;
    for (int b = 0; b < NB; b++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < d; k++) s += Cm[heads[b] * d + k] * R[rels[b] * d + k] * E[j * d + k];
            differ += Y[b * n + j] != s;
        }
    for (int j = 0; j < n; j++)
        for (int k = 0; k < d; k++) {
            double e = dE_want[j * d + k];
            for (int b = 0; b < NB; b++) e += G[b * n + j] * Cm[heads[b] * d + k] * R[rels[b] * d + k];
            differ += dE[j * d + k] != e;
        }
    CHECK(differ == 0);
}
