/* engine_kernels_f32.c — the packed GEMM (src/engine/kernel.c) in float32,
 * on every ISA path this CPU has (linked against the f32 library).
 *
 * In float, each element of C is one chain over k in increasing order:
 *   avx2 / avx512:  c = fmaf(a_ik, b_kj, c)
 *   portable:       c = c + a_ik * b_kj, the product and the sum each rounded to float
 * so every result is checked two ways:
 *  (a) exact: the bits of that loop, written here, for any thread count,
 *      path (direct / packed / packed B shared by tasks), blocking, C offset
 *      and vector ISA (AVX2 and AVX-512 give the same bits);
 *  (b) accurate: within float round-off of the sum computed in double (see
 *      gemm_tolerance).
 *
 * The loops written here must compile as written: gcc does not contract
 * a*b + c into an fma in ISO C mode (-std=c11), and clang is told so by the
 * pragma below; the portable chain is one rounding per statement. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/cpu.h"
#include "engine/kernel.h"
#include "engine/pool.h"
#include "test.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

_Static_assert(sizeof(kgl_real) == sizeof(float), "tests/f32 is built with -DKGL_FLOAT32");

/* ------------------------------------------------------------- helpers */

static float unif_pm1(kgl_rng *r) { return (float)(2.0 * kgl_rng_uniform(r) - 1.0); } /* [-1, 1) */
static int below(kgl_rng *r, int n) { return (int)kgl_rng_below(r, (uint32_t)n); }

static uint32_t bits_of(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}
static bool same_bits(const float *a, const float *b, size_t n) { return n == 0 || memcmp(a, b, n * sizeof *a) == 0; }

typedef struct {
    int ta, tb;
    const char *name;
} gemm_layout;
static const gemm_layout layouts[3] = {{0, 0, "nn"}, {0, 1, "nt"}, {1, 0, "tn"}};

/* X(i, k) of an operand used as rows x depth, stored as given (t = 1: stored transposed). */
static float op_at(const float *X, int ld, int t, int i, int k)
{
    return t ? X[(size_t)k * ld + i] : X[(size_t)i * ld + k];
}

/* The defining loop of one element of C (kernel.h), in float. */
static float gemm_defining(int isa, const float *A, int lda, int ta, const float *B, int ldb, int tb, int i, int j,
                           int K, float c)
{
    for (int k = 0; k < K; k++) {
        float a = op_at(A, lda, ta, i, k), b = op_at(B, ldb, !tb, j, k);
        if (isa == KGL_ISA_PORTABLE) {
            float t = a * b;
            c = c + t;
        } else {
            c = fmaf(a, b, c);
        }
    }
    return c;
}

/* How far the float result may be from the double sum s = c0 + sum_k a_ik b_kj, given S = |c0| + sum_k |a_ik b_kj|.
 * The float chain is recursive summation of K + 1 terms (c0 first), each product exact (fma) or rounded once
 * (portable), so |c32 - exact| <= gamma_{K+1} S with gamma_n = n u / (1 - n u), u = 2^-24 (Higham, Accuracy and
 * Stability of Numerical Algorithms, 3.1). The double sum (products of floats are exact in double) errs by at most
 * (K+1) 2^-53 S, 2^-29 times less. Here (K+1) u < 2^-10, so 1.01 (K+1) u S covers both with room to spare; an error
 * of one dropped or repeated term (|a b| up to 1, against S/K of 1/4 on average) is far outside it. */
static double gemm_tolerance(int K, double S) { return 1.01 * (K + 1) * 0x1p-24 * S; }

/* ---------------------------------------------------------------- GEMM */

enum { GUARD = 8 }; /* elements of poison before and after every buffer */
static const float SENTINEL = 12345.0f;

/* One call of one configuration, checked: every element (samples = 0) or that many random ones
 *  - exact: the bits of the defining loop (strict: +0 and -0 differ);
 *  - accurate: within gemm_tolerance of the double sum;
 *  - no stray writes: the ldc padding of every row and GUARD elements on each side of C keep their sentinel;
 *  - no stray reads: A's and B's lda/ldb padding and guards hold NaN, which would reach C (and break both
 *    checks above) if read.
 * The whole C is copied to out (M x N, contiguous) when out is not NULL. Returns true when all hold; prints
 * the configuration otherwise. */
static bool gemm_case(kgl_pool *p, kgl_rng *r, int isa, int path, const gemm_layout *L, int M, int N, int K, int mode,
                      int pad, int samples, float *out)
{
    int acols = L->ta ? M : K, bcols = L->tb ? K : N;
    int arows = L->ta ? K : M, brows = L->tb ? N : K;
    int lda = acols + pad, ldb = bcols + pad, ldc = N + pad + 1;
    if (lda < 1) lda = 1;
    if (ldb < 1) ldb = 1;
    size_t na = (size_t)arows * lda, nb = (size_t)brows * ldb, nc = (size_t)M * ldc;
    float *Abuf = malloc(sizeof(float) * (na + 2 * GUARD)), *Bbuf = malloc(sizeof(float) * (nb + 2 * GUARD));
    float *Cbuf = malloc(sizeof(float) * (nc + 2 * GUARD)), *C0 = malloc(sizeof(float) * (nc + 1));
    float *A = Abuf + GUARD, *B = Bbuf + GUARD, *C = Cbuf + GUARD;
    for (size_t i = 0; i < na + 2 * GUARD; i++) Abuf[i] = NAN;
    for (size_t i = 0; i < nb + 2 * GUARD; i++) Bbuf[i] = NAN;
    for (int i = 0; i < arows; i++)
        for (int k = 0; k < acols; k++) A[(size_t)i * lda + k] = unif_pm1(r);
    for (int i = 0; i < brows; i++)
        for (int k = 0; k < bcols; k++) B[(size_t)i * ldb + k] = unif_pm1(r);
    for (size_t i = 0; i < nc + 2 * GUARD; i++) Cbuf[i] = SENTINEL;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = unif_pm1(r);
    memcpy(C0, C, sizeof(float) * nc);

    kgl_gemm_for_tests(isa, path, L->ta, L->tb, p, M, N, K, A, lda, B, ldb, C, ldc, mode);

    bool exact_ok = true, acc_ok = true, pad_ok = true;
    int n_checks = samples > 0 && M > 0 && N > 0 ? samples : M * N;
    for (int e = 0; e < n_checks; e++) {
        int i = samples > 0 ? below(r, M) : e / N, j = samples > 0 ? below(r, N) : e % N;
        float c0 = mode == KGL_ADD ? C0[(size_t)i * ldc + j] : 0.0f;
        double s = c0, mag = fabs((double)c0);
        for (int k = 0; k < K; k++) {
            double t = (double)op_at(A, lda, L->ta, i, k) * op_at(B, ldb, !L->tb, j, k);
            s += t, mag += fabs(t);
        }
        float got = C[(size_t)i * ldc + j];
        float want = gemm_defining(isa, A, lda, L->ta, B, ldb, L->tb, i, j, K, c0);
        if (bits_of(got) != bits_of(want)) exact_ok = false;
        if (!(fabs((double)got - s) <= gemm_tolerance(K, mag))) acc_ok = false;
    }
    for (int i = 0; i < M; i++)
        for (int j = N; j < ldc; j++)
            if (C[(size_t)i * ldc + j] != SENTINEL) pad_ok = false;
    for (int g = 0; g < GUARD; g++)
        if (Cbuf[g] != SENTINEL || C[nc + (size_t)g] != SENTINEL) pad_ok = false;
    if (out)
        for (int i = 0; i < M; i++) memcpy(out + (size_t)i * N, C + (size_t)i * ldc, sizeof(float) * N);
    bool ok = exact_ok && acc_ok && pad_ok;
    if (!ok)
        printf("    %s %s path=%d mode=%d M=%d N=%d K=%d pad=%d threads=%d: exact=%d accurate=%d untouched=%d\n",
               kgl_isa_name((kgl_isa)isa), L->name, path, mode, M, N, K, pad, kgl_pool_threads(p), exact_ok, acc_ok,
               pad_ok);
    free(Abuf), free(Bbuf), free(Cbuf), free(C0);
    return ok;
}

/* Every size from 0 to 70 in each of M, N and K (M = s, N = 70 - s, K = s·37 mod 71: each a permutation of
 * 0..70), so every remainder modulo every micro-tile (4, 6 x 16, 12 x 32) and the direct path's in-place
 * edges; every ISA x path (direct, packed, packed B) x layout x mode, on pools of 1, 2 and 3 threads. The
 * packed-B path (kgl_gemm_pack_b, then kgl_gemm_packed_b_on, with the ISA forced) reads A in place on an ISA
 * with an edge kernel when B is at most four panels wide. */
TEST(gemm_f32_every_size_0_to_70_exact_and_accurate)
{
    kgl_pool *pools[3] = {kgl_pool_create(1), kgl_pool_create(2), kgl_pool_create(3)};
    kgl_rng r;
    kgl_rng_seed(&r, 1);
    int bad = 0, cases = 0;
    for (int isa = 0; isa <= (int)kgl_isa_best(); isa++)
        for (int l = 0; l < 3; l++)
            for (int mode = 0; mode < 2; mode++)
                for (int s = 0; s <= 70; s++)
                    for (int path = KGL_PATH_DIRECT; path <= KGL_PATH_PACKED_B; path++) {
                        cases++;
                        if (!gemm_case(pools[(s + path) % 3], &r, isa, path, &layouts[l], s, 70 - s, s * 37 % 71,
                                       mode, s % 3, 0, NULL) &&
                            ++bad > 20)
                            goto done;
                    }
done:
    CHECK(bad == 0);
    CHECK(cases > 0);
    for (int t = 0; t < 3; t++) kgl_pool_free(pools[t]);
}

/* Every M x N of sizes around the float micro-tiles (0, 1, one below / at / above 6, 12, 16 and 32) with K
 * in {0, 1, 7, 32}, every ISA x path (direct, packed, packed B) x layout x mode: full tiles next to edge tiles
 * of every kind (K only sets the length of the chains; the 0..70 test above runs every K). */
TEST(gemm_f32_tile_edges_exact_and_accurate)
{
    static const int sizes[] = {0, 1, 5, 6, 7, 11, 12, 13, 16, 17, 31, 32, 33}, depths[] = {0, 1, 7, 32};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]), nd = (int)(sizeof depths / sizeof depths[0]);
    kgl_pool *p1 = kgl_pool_create(1);
    kgl_rng r;
    kgl_rng_seed(&r, 2);
    int bad = 0;
    for (int isa = 0; isa <= (int)kgl_isa_best(); isa++)
        for (int l = 0; l < 3; l++)
            for (int mode = 0; mode < 2; mode++)
                for (int a = 0; a < ns; a++)
                    for (int b = 0; b < ns; b++)
                        for (int c = 0; c < nd; c++)
                            for (int path = KGL_PATH_DIRECT; path <= KGL_PATH_PACKED_B; path++)
                                if (!gemm_case(p1, &r, isa, path, &layouts[l], sizes[a], sizes[b], depths[c], mode,
                                               (a + b + c) % 3, 0, NULL) &&
                                    ++bad > 20)
                                    goto done;
done:
    CHECK(bad == 0);
    kgl_pool_free(p1);
}

/* Shapes that cross the float blocking — K over two KC slices, M over MC, N over NC — and 300^3, every ISA x
 * path (auto, direct, packed, packed B) x layout x mode, padded leading dimensions, 1 and 2 threads. The big ones check
 * 300 sampled elements against the loops (the padding and guards in full). */
TEST(gemm_f32_blocking_and_300_exact_and_accurate)
{
    static const int shapes[][3] = {{37, 19, 2 * KGL_GEMM_KC + 88}, {KGL_GEMM_MC + 1, 17, KGL_GEMM_KC + 9},
                                    {3, KGL_GEMM_NC + 5, 9},        {13, 29, KGL_GEMM_KC},
                                    {KGL_GEMM_MC + 13, 45, 70},     {300, 300, 300}};
    kgl_pool *p1 = kgl_pool_create(1), *p2 = kgl_pool_create(2);
    kgl_rng r;
    kgl_rng_seed(&r, 3);
    int bad = 0;
    for (int isa = 0; isa <= (int)kgl_isa_best(); isa++)
        for (int l = 0; l < 3; l++)
            for (int mode = 0; mode < 2; mode++)
                for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                    for (int path = KGL_PATH_AUTO; path <= KGL_PATH_PACKED_B; path++) {
                        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                        if (K > KGL_GEMM_KC && (path == KGL_PATH_DIRECT || path == KGL_PATH_PACKED))
                            continue; /* both are the packed path, as auto is */
                        int samples = (double)M * N * K > 1e6 ? 300 : 0;
                        bad += !gemm_case((s + path) & 1 ? p2 : p1, &r, isa, path, &layouts[l], M, N, K, mode,
                                          (int)s % 4, samples, NULL);
                    }
    CHECK(bad == 0);
    kgl_pool_free(p1);
    kgl_pool_free(p2);
}

/* Whole results compared bit for bit: pools of 1, 2 and 3 threads, C at offsets of 1-3 floats (misaligned for
 * every vector width), every path (direct, packed, packed B), and AVX2 against AVX-512 (the portable path against
 * itself). Shapes that make the pool split C by rows (M >> N), by columns (N >> M), cross KC slices and MC
 * blocks, and NC; the readout of a graph (N large, K small). Each shape and layout runs one mode (alternating:
 * the mode only sets where the chains start). */
TEST(gemm_f32_same_bits_for_threads_paths_offsets_and_isas)
{
    static const int big[][3] = {{9, 700, 300},  {700, 9, 300}, {150, 130, 300}, {60, KGL_GEMM_NC + 52, 16},
                                 {40, 3000, 64}};
    kgl_pool *pools[3] = {kgl_pool_create(1), kgl_pool_create(2), kgl_pool_create(3)};
    kgl_rng r;
    kgl_rng_seed(&r, 4);
    int bad_threads = 0, bad_offset = 0, bad_path = 0, bad_isa = 0, bad_exact = 0;
    for (size_t s = 0; s < sizeof big / sizeof big[0]; s++)
        for (int l = 0; l < 3; l++) {
            const int mode = (int)(s + l) % 2;
            const gemm_layout *L = &layouts[l];
            int M = big[s][0], N = big[s][1], K = big[s][2];
            int lda = L->ta ? M : K, ldb = L->tb ? K : N;
            size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
            float *A = malloc(sizeof(float) * na), *B = malloc(sizeof(float) * nb), *C0 = malloc(sizeof(float) * nc);
            float *X = malloc(sizeof(float) * nc), *Y = malloc(sizeof(float) * (nc + 3));
            float *vec = malloc(sizeof(float) * nc); /* the first vector ISA's result */
            for (size_t i = 0; i < na; i++) A[i] = unif_pm1(&r);
            for (size_t i = 0; i < nb; i++) B[i] = unif_pm1(&r);
            for (size_t i = 0; i < nc; i++) C0[i] = unif_pm1(&r);
            for (int isa = 0; isa <= (int)kgl_isa_best(); isa++) {
                /* the reference run: 1 thread, path chosen by the library */
                memcpy(X, C0, sizeof(float) * nc);
                kgl_gemm_for_tests(isa, KGL_PATH_AUTO, L->ta, L->tb, pools[0], M, N, K, A, lda, B, ldb, X, N, mode);
                for (int t = 0; t < 3; t++)
                    for (int off = 0; off <= 3; off++)
                        for (int path = KGL_PATH_AUTO; path <= KGL_PATH_PACKED_B; path++) {
                            if ((t == 0 && off == 0 && path == KGL_PATH_AUTO) || (off > 0 && path != KGL_PATH_AUTO))
                                continue;
                            float *C = Y + off;
                            memcpy(C, C0, sizeof(float) * nc);
                            kgl_gemm_for_tests(isa, path, L->ta, L->tb, pools[t], M, N, K, A, lda, B, ldb, C, N,
                                               mode);
                            if (!same_bits(X, C, nc)) {
                                if (off) bad_offset++;
                                else if (path != KGL_PATH_AUTO) bad_path++;
                                else bad_threads++;
                            }
                        }
                if (isa == KGL_ISA_AVX2) memcpy(vec, X, sizeof(float) * nc);
                else if (isa > KGL_ISA_AVX2 && !same_bits(vec, X, nc)) bad_isa++;
                for (int e = 0; e < 100; e++) {
                    int i = below(&r, M), j = below(&r, N);
                    float c0 = mode == KGL_ADD ? C0[(size_t)i * N + j] : 0.0f;
                    float want = gemm_defining(isa, A, lda, L->ta, B, ldb, L->tb, i, j, K, c0);
                    if (bits_of(want) != bits_of(X[(size_t)i * N + j])) bad_exact++;
                }
            }
            free(A), free(B), free(C0), free(X), free(Y), free(vec);
        }
    CHECK(bad_threads == 0);
    CHECK(bad_offset == 0);
    CHECK(bad_path == 0);
    CHECK(bad_isa == 0);
    CHECK(bad_exact == 0);
    for (int t = 0; t < 3; t++) kgl_pool_free(pools[t]);
}

/* kgl_gemm_nn/nt/tn run on kgl_isa_active() and give the bits of the test hook with that ISA forced. */
TEST(gemm_f32_public_entry_points_use_the_active_isa)
{
    int M = 37, N = 45, K = 41;
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *C1 = malloc(sizeof(float) * M * N), *C2 = malloc(sizeof(float) * M * N);
    kgl_rng r;
    kgl_rng_seed(&r, 5);
    for (int i = 0; i < M * K; i++) A[i] = unif_pm1(&r);
    for (int i = 0; i < K * N; i++) B[i] = unif_pm1(&r);
    int isa = (int)kgl_isa_active();
    for (int threads = 1; threads <= 2; threads++) {
        kgl_pool *p = kgl_pool_create(threads);
        for (int l = 0; l < 3; l++) {
            const gemm_layout *L = &layouts[l];
            int lda = L->ta ? M : K, ldb = L->tb ? K : N;
            for (int mode = 0; mode < 2; mode++) {
                for (int i = 0; i < M * N; i++) C1[i] = C2[i] = (float)i;
                if (l == 0) kgl_gemm_nn(p, M, N, K, A, lda, B, ldb, C1, N, mode);
                if (l == 1) kgl_gemm_nt(p, M, N, K, A, lda, B, ldb, C1, N, mode);
                if (l == 2) kgl_gemm_tn(p, M, N, K, A, lda, B, ldb, C1, N, mode);
                kgl_gemm_for_tests(isa, KGL_PATH_AUTO, L->ta, L->tb, p, M, N, K, A, lda, B, ldb, C2, N, mode);
                CHECK(same_bits(C1, C2, (size_t)M * N));
            }
        }
        kgl_pool_free(p);
    }
    free(A), free(B), free(C1), free(C2);
}

/* ---- packed B in tasks: one GEMM per pool task, each on its worker's workspace (as attention runs them) */

/* M x N x K: N of one to four AVX2 panels (5, 16, 20, 29, 32, 64: attention's d_k side) reads A in place, wider
 * packs it (33 on AVX-512, 300); M not a multiple of the micro-tile; K over one, two or three KC slices. */
enum { ON_SHAPES = 8 };
static const int on_shapes[ON_SHAPES][3] = {{7, 5, 3},       {37, 29, 41},  {150, 33, KGL_GEMM_KC + 44},
                                            {9, 300, 70},    {260, 20, 30}, {16, 16, 2 * KGL_GEMM_KC + 1},
                                            {67, 32, 2 * KGL_GEMM_KC + 3}, {50, 64, 100}};

typedef struct {
    kgl_pool *p;
    int layout, mode;
    const float *A, *B; /* big enough for every shape, ld = the shape's own dimension */
    float *C[ON_SHAPES];
    float *packed[ON_SHAPES]; /* each shape's B, packed by its task */
    int worker_bad;
} on_job;

/* worker < 0: the pooled call; else what an op's task runs (attention): B packed once with kgl_gemm_pack_b,
 * then kgl_gemm_packed_b_on on the task's worker (`packed` holds kgl_gemm_packed_b_size(K, N) elements). */
static void gemm_on_call(kgl_pool *p, int worker, int layout, int M, int N, int K, const float *A, const float *B,
                         float *C, int mode, float *packed)
{
    const gemm_layout *L = &layouts[layout];
    int lda = L->ta ? M : K, ldb = L->tb ? K : N;
    if (worker < 0) {
        if (layout == 0) kgl_gemm_nn(p, M, N, K, A, lda, B, ldb, C, N, mode);
        if (layout == 1) kgl_gemm_nt(p, M, N, K, A, lda, B, ldb, C, N, mode);
        if (layout == 2) kgl_gemm_tn(p, M, N, K, A, lda, B, ldb, C, N, mode);
    } else {
        kgl_gemm_pack_b(K, N, B, ldb, L->tb, packed);
        kgl_gemm_packed_b_on(p, worker, M, N, K, A, lda, L->ta, packed, C, N, mode);
    }
}
static void on_task(void *ctx, int task, int worker)
{
    on_job *j = ctx;
    if (worker < 0 || worker >= kgl_pool_threads(j->p)) __atomic_store_n(&j->worker_bad, 1, __ATOMIC_RELAXED);
    const int *s = on_shapes[task];
    gemm_on_call(j->p, worker, j->layout, s[0], s[1], s[2], j->A, j->B, j->C[task], j->mode, j->packed[task]);
}

/* kgl_gemm_pack_b + kgl_gemm_packed_b_on inside the tasks of a 3-thread pool (several workers packing at once
 * into their own workspaces) equal the pooled calls bit for bit, for every layout and mode; and the pooled
 * calls equal the defining loop (so both do). */
TEST(gemm_f32_packed_b_in_tasks_equals_the_pooled_calls)
{
    size_t cap = 0;
    for (int s = 0; s < ON_SHAPES; s++) {
        size_t a = (size_t)on_shapes[s][0] * on_shapes[s][2], b = (size_t)on_shapes[s][2] * on_shapes[s][1];
        if (a > cap) cap = a;
        if (b > cap) cap = b;
    }
    float *A = malloc(sizeof(float) * cap), *B = malloc(sizeof(float) * cap);
    kgl_rng r;
    kgl_rng_seed(&r, 6);
    for (size_t i = 0; i < cap; i++) A[i] = unif_pm1(&r), B[i] = unif_pm1(&r);
    kgl_pool *p = kgl_pool_create(3);
    on_job j = {.p = p, .A = A, .B = B};
    float *want[ON_SHAPES], *init[ON_SHAPES];
    for (int s = 0; s < ON_SHAPES; s++) {
        size_t nc = (size_t)on_shapes[s][0] * on_shapes[s][1];
        j.C[s] = malloc(sizeof(float) * nc), want[s] = malloc(sizeof(float) * nc), init[s] = malloc(sizeof(float) * nc);
        j.packed[s] = malloc(sizeof(float) * kgl_gemm_packed_b_size(on_shapes[s][2], on_shapes[s][1]));
        for (size_t i = 0; i < nc; i++) init[s][i] = unif_pm1(&r);
    }
    int bad = 0, bad_exact = 0, isa = (int)kgl_isa_active();
    for (int l = 0; l < 3; l++)
        for (int mode = 0; mode < 2; mode++) {
            const gemm_layout *L = &layouts[l];
            j.layout = l, j.mode = mode;
            for (int s = 0; s < ON_SHAPES; s++) {
                int M = on_shapes[s][0], N = on_shapes[s][1], K = on_shapes[s][2];
                size_t nc = (size_t)M * N;
                memcpy(want[s], init[s], nc * sizeof(float));
                memcpy(j.C[s], init[s], nc * sizeof(float));
                gemm_on_call(p, -1, l, M, N, K, A, B, want[s], mode, NULL);
                for (int e = 0; e < 50; e++) {
                    int i = below(&r, M), jj = below(&r, N);
                    float c0 = mode == KGL_ADD ? init[s][(size_t)i * N + jj] : 0.0f;
                    float d = gemm_defining(isa, A, L->ta ? M : K, L->ta, B, L->tb ? K : N, L->tb, i, jj, K, c0);
                    if (bits_of(d) != bits_of(want[s][(size_t)i * N + jj])) bad_exact++;
                }
            }
            kgl_pool_run(p, ON_SHAPES, on_task, &j);
            for (int s = 0; s < ON_SHAPES; s++)
                if (!same_bits(j.C[s], want[s], (size_t)on_shapes[s][0] * on_shapes[s][1])) {
                    bad++;
                    printf("    %s mode=%d %dx%dx%d: packed-B task differs from the pooled call\n", layouts[l].name,
                           mode, on_shapes[s][0], on_shapes[s][1], on_shapes[s][2]);
                }
        }
    CHECK(bad == 0);
    CHECK(bad_exact == 0);
    CHECK(j.worker_bad == 0);
    for (int s = 0; s < ON_SHAPES; s++) free(j.C[s]), free(want[s]), free(init[s]), free(j.packed[s]);
    free(A), free(B);
    kgl_pool_free(p);
}
