/* engine_kernels.c — the dense kernels below the ops: the packed GEMM
 * (src/engine/kernel.c), the thread pool (pool.c) and the vector exp /
 * softmax row / Adam update (vmath.c), on every ISA path this CPU has.
 *
 * Ported from the standalone programs the kernels were written with
 * (test_gemm.c and test_vmath.c), with shape lists and sample counts trimmed
 * so that the whole file runs in about a second at -O3 and well under a
 * minute under ASan + UBSan at -O1 (make sanitize); each trimmed list says
 * what it keeps. The AVX-512 code of vmath.c is also run on a CPU without
 * AVX-512, on a lane-by-lane model of its intrinsics, by a separate binary
 * (tests/emulated/vmath_avx512.c, built and run by `make test`).
 *
 * Bit-for-bit comparisons with a loop written here need that loop compiled
 * as written: gcc does not contract a*b + c into an fma in ISO C mode
 * (-std=c11), and clang is told so by the pragma below; the loops are also
 * written one rounding per statement where it matters. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/cpu.h"
#include "engine/kernel.h"
#include "engine/pool.h"
#include "engine/vmath.h"
#include "test.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* ------------------------------------------------------------- helpers */

/* splitmix64, explicit state: every test draws its own reproducible inputs. */
typedef struct {
    uint64_t s;
} krng;

static uint64_t krng_next(krng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double krng_unif(krng *r) { return (double)(krng_next(r) >> 11) * 0x1p-53; } /* [0, 1) */
static double krng_pm1(krng *r) { return 2.0 * krng_unif(r) - 1.0; }                 /* [-1, 1) */
static int krng_int(krng *r, int n) { return (int)(krng_next(r) % (uint64_t)n); }
static double krng_norm(krng *r)
{
    double u = krng_unif(r) + 0x1p-54, v = krng_unif(r);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}
static bool same_bits(const double *a, const double *b, size_t n) { return n == 0 || memcmp(a, b, n * sizeof *a) == 0; }

/* The ISAs to test: every one from portable up to the best this CPU has
 * (kgl_isa_best ignores KGL_ISA, so KGL_ISA=portable make test still runs
 * the vector paths here). */
static int isa_list(kgl_isa *out)
{
    int n = 0;
    for (int i = 0; i <= (int)kgl_isa_best(); i++) out[n++] = (kgl_isa)i;
    return n;
}

/* ---------------------------------------------------------------- GEMM */

typedef struct {
    int ta, tb;
    const char *name;
} gemm_layout;
static const gemm_layout layouts[3] = {{0, 0, "nn"}, {0, 1, "nt"}, {1, 0, "tn"}};

/* X(i, k) of an operand used as rows x depth, stored as given (t = 1: stored transposed). */
static double op_at(const double *X, int ld, int t, int i, int k) { return t ? X[(size_t)k * ld + i] : X[(size_t)i * ld + k]; }

/* The defining loop of one element of C (kernel.h): an fma chain in k order
 * for the vector ISAs, a rounded multiply then a rounded add for the
 * portable path (two statements: nothing can fuse them). */
static double gemm_defining(int isa, const double *A, int lda, int ta, const double *B, int ldb, int tb, int i, int j,
                            int K, double c)
{
    for (int k = 0; k < K; k++) {
        double a = op_at(A, lda, ta, i, k), b = op_at(B, ldb, !tb, j, k);
        if (isa == KGL_ISA_PORTABLE) {
            double t = a * b;
            c = c + t;
        } else {
            c = fma(a, b, c);
        }
    }
    return c;
}

enum { GUARD = 8 };           /* elements of poison before and after every buffer */
static const double SENTINEL = 12345.0;

/* One call of one configuration, checked element by element:
 *  - exact: the bits of the defining loop above (strict, +0 and -0 differ);
 *  - accurate: against a long double triple loop, |err| <= 4 (K+1) eps S with
 *    S = |C0| + sum_k |a_ik b_kj| (C0 = 0 for SET). Recursive summation of m
 *    terms errs by at most gamma_m S, gamma_m = m u / (1 - m u), u = eps/2
 *    (Higham, Accuracy and Stability of Numerical Algorithms, 3.1); here
 *    m = K + 1 terms, each product rounded at most once (portable) or not at
 *    all (fma), so (K+1) eps S bounds it with a factor 2 to spare, and the
 *    factor 4 leaves room for the long double reference's own rounding
 *    (64-bit significand: 2^11 times finer, negligible at these K);
 *  - no stray writes: the ldc padding of every row and GUARD elements on each
 *    side of C keep their sentinel;
 *  - no stray reads: A's and B's lda/ldb padding and guards hold NaN, which
 *    would reach C (and break both checks above) if read.
 * Returns true when all hold; prints the configuration otherwise. */
static bool gemm_case(kgl_pool *p, krng *r, int isa, int path, const gemm_layout *L, int M, int N, int K, int mode,
                      int pad)
{
    int acols = L->ta ? M : K, bcols = L->tb ? K : N;
    int arows = L->ta ? K : M, brows = L->tb ? N : K;
    int lda = acols + pad, ldb = bcols + pad, ldc = N + pad + 1;
    if (lda < 1) lda = 1;
    if (ldb < 1) ldb = 1;
    size_t na = (size_t)arows * lda, nb = (size_t)brows * ldb, nc = (size_t)M * ldc;
    double *Abuf = malloc(sizeof(double) * (na + 2 * GUARD)), *Bbuf = malloc(sizeof(double) * (nb + 2 * GUARD));
    double *Cbuf = malloc(sizeof(double) * (nc + 2 * GUARD)), *C0 = malloc(sizeof(double) * (nc + 1));
    double *A = Abuf + GUARD, *B = Bbuf + GUARD, *C = Cbuf + GUARD;
    for (size_t i = 0; i < na + 2 * GUARD; i++) Abuf[i] = NAN;
    for (size_t i = 0; i < nb + 2 * GUARD; i++) Bbuf[i] = NAN;
    for (int i = 0; i < arows; i++)
        for (int k = 0; k < acols; k++) A[(size_t)i * lda + k] = krng_pm1(r);
    for (int i = 0; i < brows; i++)
        for (int k = 0; k < bcols; k++) B[(size_t)i * ldb + k] = krng_pm1(r);
    for (size_t i = 0; i < nc + 2 * GUARD; i++) Cbuf[i] = SENTINEL;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = krng_pm1(r);
    memcpy(C0, C, sizeof(double) * nc);

    kgl_gemm_for_tests(isa, path, L->ta, L->tb, p, M, N, K, A, lda, B, ldb, C, ldc, mode);

    bool exact_ok = true, acc_ok = true, pad_ok = true;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double c0 = mode == KGL_ADD ? C0[(size_t)i * ldc + j] : 0.0;
            long double s = c0, mag = fabs(c0);
            for (int k = 0; k < K; k++) {
                long double t = (long double)op_at(A, lda, L->ta, i, k) * op_at(B, ldb, !L->tb, j, k);
                s += t, mag += fabsl(t);
            }
            double got = C[(size_t)i * ldc + j];
            double want = gemm_defining(isa, A, lda, L->ta, B, ldb, L->tb, i, j, K, c0);
            if (bits_of(got) != bits_of(want)) exact_ok = false;
            if (!(fabsl((long double)got - s) <= 4.0L * (K + 1) * 0x1p-52L * mag)) acc_ok = false;
        }
        for (int j = N; j < ldc; j++)
            if (C[(size_t)i * ldc + j] != SENTINEL) pad_ok = false;
    }
    for (int g = 0; g < GUARD; g++)
        if (Cbuf[g] != SENTINEL || C[nc + (size_t)g] != SENTINEL) pad_ok = false;
    bool ok = exact_ok && acc_ok && pad_ok;
    if (!ok)
        printf("    %s %s path=%d mode=%d M=%d N=%d K=%d pad=%d threads=%d: exact=%d accurate=%d untouched=%d\n",
               kgl_isa_name((kgl_isa)isa), L->name, path, mode, M, N, K, pad, kgl_pool_threads(p), exact_ok, acc_ok,
               pad_ok);
    free(Abuf), free(Bbuf), free(Cbuf), free(C0);
    return ok;
}

/* Every small shape, every ISA x path (direct, packed, packed B: kgl_gemm_pack_b
 * and kgl_gemm_packed_b_on, which on this ISA's tile may read A in place) x layout x mode. The
 * full cube of the helper's edge list (0..17 around the 4/8/12/16-wide
 * micro-tiles) is kept: 11^3 shapes are cheap. */
TEST(gemm_small_shapes_exact_and_accurate)
{
    static const int small[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17};
    const int ns = (int)(sizeof small / sizeof small[0]);
    kgl_pool *p1 = kgl_pool_create(1);
    krng r = {1};
    int bad = 0, cases = 0;
    for (int isa = 0; isa <= (int)kgl_isa_best(); isa++)
        for (int l = 0; l < 3; l++)
            for (int mode = 0; mode < 2; mode++)
                for (int a = 0; a < ns; a++)
                    for (int b = 0; b < ns; b++)
                        for (int c = 0; c < ns; c++)
                            for (int path = KGL_PATH_DIRECT; path <= KGL_PATH_PACKED_B; path++) {
                                cases++;
                                if (!gemm_case(p1, &r, isa, path, &layouts[l], small[a], small[b], small[c], mode,
                                               (a + b + c) % 3) &&
                                    ++bad > 20)
                                    goto done;
                            }
done:
    CHECK(bad == 0);
    CHECK(cases > 0);
    kgl_pool_free(p1);
}

/* Larger edge shapes: random draws from the helper's list (trimmed: 12 per
 * configuration instead of 60, and M*N*K <= 4e5 so the long double reference
 * stays cheap under the sanitizers), all three path choices, 1 and 2
 * threads, padded leading dimensions; plus fixed shapes that cross the
 * blocking: K > 2 KC (three depth slices), M > MC, N > NC, on every path
 * (packed B too). */
TEST(gemm_edge_shapes_blocking_and_padding)
{
    static const int all[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 135, 257};
    const int na = (int)(sizeof all / sizeof all[0]);
    static const int fixed[][3] = {{37, 19, 2 * KGL_GEMM_KC + 88}, {KGL_GEMM_MC + 1, 17, KGL_GEMM_KC + 9},
                                   {3, KGL_GEMM_NC + 5, 9}, {13, 29, KGL_GEMM_KC}};
    kgl_pool *p1 = kgl_pool_create(1), *p2 = kgl_pool_create(2);
    krng r = {2};
    int bad = 0;
    for (int isa = 0; isa <= (int)kgl_isa_best(); isa++)
        for (int l = 0; l < 3; l++)
            for (int mode = 0; mode < 2; mode++) {
                for (int t = 0; t < 12; t++) {
                    int M, N, K;
                    do M = all[krng_int(&r, na)], N = all[krng_int(&r, na)], K = all[krng_int(&r, na)];
                    while ((double)M * N * K > 4e5);
                    bad += !gemm_case(t & 1 ? p2 : p1, &r, isa, t % 3, &layouts[l], M, N, K, mode, krng_int(&r, 5));
                }
                for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; f++)
                    for (int path = KGL_PATH_AUTO; path <= KGL_PATH_PACKED_B; path++)
                        bad += !gemm_case(f & 1 ? p2 : p1, &r, isa, path, &layouts[l], fixed[f][0], fixed[f][1],
                                          fixed[f][2], mode, (int)f);
            }
    CHECK(bad == 0);
    kgl_pool_free(p1);
    kgl_pool_free(p2);
}

/* A full call into C placed at buf + offset (a contiguous M x N C). */
static double *gemm_into(kgl_pool *p, int isa, const gemm_layout *L, int M, int N, int K, int mode, const double *A,
                         int lda, const double *B, int ldb, const double *Cinit, int offset, double *buf)
{
    double *C = buf + offset;
    memcpy(C, Cinit, sizeof(double) * (size_t)M * N);
    kgl_gemm_for_tests(isa, KGL_PATH_AUTO, L->ta, L->tb, p, M, N, K, A, lda, B, ldb, C, N, mode);
    return C;
}

/* 1, 2 and 3 threads give the same bits, wherever C sits (offsets of 1-3
 * doubles: misaligned for every vector width); a sample of the elements of
 * the big result equals the defining loop. Shapes (trimmed from seven to
 * four, each <= 6e6 multiply-adds) that make the pool split C by rows
 * (M >> N), by columns (N >> M), across KC slices and MC blocks, and over
 * NC. */
TEST(gemm_same_bits_for_1_2_3_threads_and_any_c_offset)
{
    static const int big[][3] = {{9, 700, 300}, {700, 9, 300}, {150, 130, 300}, {60, KGL_GEMM_NC + 52, 16}};
    kgl_pool *pools[3] = {kgl_pool_create(1), kgl_pool_create(2), kgl_pool_create(3)};
    krng r = {3};
    int bad_threads = 0, bad_offset = 0, bad_exact = 0;
    for (int isa = 0; isa <= (int)kgl_isa_best(); isa++)
        for (size_t s = 0; s < sizeof big / sizeof big[0]; s++)
            for (int l = 0; l < 3; l++)
                for (int mode = 0; mode < 2; mode++) {
                    const gemm_layout *L = &layouts[l];
                    int M = big[s][0], N = big[s][1], K = big[s][2];
                    int lda = L->ta ? M : K, ldb = L->tb ? K : N;
                    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
                    double *A = malloc(sizeof(double) * na), *B = malloc(sizeof(double) * nb);
                    double *C0 = malloc(sizeof(double) * nc), *X = malloc(sizeof(double) * (nc + 4)),
                           *Y = malloc(sizeof(double) * (nc + 4));
                    for (size_t i = 0; i < na; i++) A[i] = krng_pm1(&r);
                    for (size_t i = 0; i < nb; i++) B[i] = krng_pm1(&r);
                    for (size_t i = 0; i < nc; i++) C0[i] = krng_pm1(&r);
                    double *c1 = gemm_into(pools[0], isa, L, M, N, K, mode, A, lda, B, ldb, C0, 0, X);
                    for (int t = 1; t < 3; t++) {
                        double *ct = gemm_into(pools[t], isa, L, M, N, K, mode, A, lda, B, ldb, C0, 0, Y);
                        if (!same_bits(c1, ct, nc)) bad_threads++;
                    }
                    for (int off = 1; off <= 3; off++) {
                        double *co = gemm_into(pools[off % 3], isa, L, M, N, K, mode, A, lda, B, ldb, C0, off, Y);
                        if (!same_bits(c1, co, nc)) bad_offset++;
                    }
                    for (int k = 0; k < 100; k++) {
                        int i = krng_int(&r, M), j = krng_int(&r, N);
                        double c0 = mode == KGL_ADD ? C0[(size_t)i * N + j] : 0.0;
                        double want = gemm_defining(isa, A, lda, L->ta, B, ldb, L->tb, i, j, K, c0);
                        if (bits_of(want) != bits_of(c1[(size_t)i * N + j])) bad_exact++;
                    }
                    free(A), free(B), free(C0), free(X), free(Y);
                }
    CHECK(bad_threads == 0);
    CHECK(bad_offset == 0);
    CHECK(bad_exact == 0);
    for (int t = 0; t < 3; t++) kgl_pool_free(pools[t]);
}

/* kgl_gemm_nn/nt/tn run on kgl_isa_active() and give the bits of the test
 * hook with that ISA forced. */
TEST(gemm_public_entry_points_use_the_active_isa)
{
    int M = 37, N = 29, K = 41;
    double *A = malloc(sizeof(double) * M * K), *B = malloc(sizeof(double) * K * N);
    double *C1 = malloc(sizeof(double) * M * N), *C2 = malloc(sizeof(double) * M * N);
    krng r = {4};
    for (int i = 0; i < M * K; i++) A[i] = krng_pm1(&r);
    for (int i = 0; i < K * N; i++) B[i] = krng_pm1(&r);
    int isa = (int)kgl_isa_active();
    for (int threads = 1; threads <= 2; threads++) {
        kgl_pool *p = kgl_pool_create(threads);
        for (int l = 0; l < 3; l++) {
            const gemm_layout *L = &layouts[l];
            int lda = L->ta ? M : K, ldb = L->tb ? K : N;
            for (int mode = 0; mode < 2; mode++) {
                for (int i = 0; i < M * N; i++) C1[i] = C2[i] = (double)i;
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

/* M x N x K. N up to four 8-wide panels reads A in place (5, 29, 20, 16, 32: attention's d_k side),
   wider packs it (33, 300); M not a multiple of the micro-tile, K over one or two KC slices. */
enum { ON_SHAPES = 7 };
static const int on_shapes[ON_SHAPES][3] = {{7, 5, 3},     {37, 29, 41},  {150, 33, KGL_GEMM_KC + 44},
                                            {9, 300, 70}, {260, 20, 30}, {16, 16, 2 * KGL_GEMM_KC + 1},
                                            {67, 32, 2 * KGL_GEMM_KC + 3}};

typedef struct {
    kgl_pool *p;
    int layout, mode;
    const double *A, *B; /* big enough for every shape, ld = the shape's own dimension */
    double *C[ON_SHAPES];
    double *packed[ON_SHAPES]; /* each shape's B, packed by its task */
    int worker_bad;
} on_job;

/* worker < 0: the pooled call; else what an op's task runs (attention):
   B packed once with kgl_gemm_pack_b, then kgl_gemm_packed_b_on on the
   task's worker (`packed` holds kgl_gemm_packed_b_size(K, N)). */
static void gemm_on_call(kgl_pool *p, int worker, int layout, int M, int N, int K, const double *A, const double *B,
                         double *C, int mode, double *packed)
{
    const gemm_layout *L = &layouts[layout];
    int lda = L->ta ? M : K, ldb = L->tb ? K : N;
    if (worker < 0) { /* the pooled call */
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

/* kgl_gemm_packed_b_on inside the tasks of a 3-thread pool (several workers packing
 * at once into their own workspaces) equal the pooled calls bit for bit,
 * for small (direct) and packed shapes, every layout and mode. */
TEST(gemm_packed_b_in_tasks_equals_the_pooled_calls)
{
    size_t cap = 0;
    for (int s = 0; s < ON_SHAPES; s++) {
        size_t a = (size_t)on_shapes[s][0] * on_shapes[s][2], b = (size_t)on_shapes[s][2] * on_shapes[s][1];
        if (a > cap) cap = a;
        if (b > cap) cap = b;
    }
    double *A = malloc(sizeof(double) * cap), *B = malloc(sizeof(double) * cap);
    krng r = {5};
    for (size_t i = 0; i < cap; i++) A[i] = krng_pm1(&r), B[i] = krng_pm1(&r);
    kgl_pool *p = kgl_pool_create(3);
    on_job j = {.p = p, .A = A, .B = B};
    double *want[ON_SHAPES], *init[ON_SHAPES];
    for (int s = 0; s < ON_SHAPES; s++) {
        size_t nc = (size_t)on_shapes[s][0] * on_shapes[s][1];
        j.C[s] = malloc(sizeof(double) * nc), want[s] = malloc(sizeof(double) * nc), init[s] = malloc(sizeof(double) * nc);
        j.packed[s] = malloc(sizeof(double) * kgl_gemm_packed_b_size(on_shapes[s][2], on_shapes[s][1]));
        for (size_t i = 0; i < nc; i++) init[s][i] = krng_pm1(&r);
    }
    int bad = 0;
    for (int l = 0; l < 3; l++)
        for (int mode = 0; mode < 2; mode++) {
            j.layout = l, j.mode = mode;
            for (int s = 0; s < ON_SHAPES; s++) {
                size_t nc = (size_t)on_shapes[s][0] * on_shapes[s][1];
                memcpy(want[s], init[s], nc * sizeof(double));
                memcpy(j.C[s], init[s], nc * sizeof(double));
                gemm_on_call(p, -1, l, on_shapes[s][0], on_shapes[s][1], on_shapes[s][2], A, B, want[s], mode, NULL);
            }
            kgl_pool_run(p, ON_SHAPES, on_task, &j);
            for (int s = 0; s < ON_SHAPES; s++)
                if (!same_bits(j.C[s], want[s], (size_t)on_shapes[s][0] * on_shapes[s][1])) {
                    bad++;
                    printf("    %s mode=%d %dx%dx%d: packed-B task differs from the pooled call\n", layouts[l].name, mode,
                           on_shapes[s][0], on_shapes[s][1], on_shapes[s][2]);
                }
        }
    CHECK(bad == 0);
    CHECK(j.worker_bad == 0);
    for (int s = 0; s < ON_SHAPES; s++) free(j.C[s]), free(want[s]), free(init[s]), free(j.packed[s]);
    free(A), free(B);
    kgl_pool_free(p);
}

/* No GEMM allocates, whatever the path, layout, mode and thread count, nor
 * the packed-B products inside pool tasks (malloc, calloc and realloc are counted
 * by tests/alloc_count.c). The helper's 300^3 shape is trimmed to 160 x 160 x
 * 300 (still packed, over one KC slice). */
TEST(gemm_allocates_nothing)
{
    static const int dims[][3] = {{160, 160, 300}, {13, 8, 8}, {135, 64, 64}, {5, 300, 300}, {300, 7, 300}};
    const int cap = 300 * 300;
    double *A = malloc(sizeof(double) * cap), *B = malloc(sizeof(double) * cap), *C = malloc(sizeof(double) * cap);
    krng r = {6};
    for (int i = 0; i < cap; i++) A[i] = krng_pm1(&r), B[i] = krng_pm1(&r), C[i] = 0;
    for (int threads = 1; threads <= 2; threads++) {
        kgl_pool *p = kgl_pool_create(threads);
        long before = test_alloc_count();
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
            for (int mode = 0; mode < 2; mode++) {
                int M = dims[d][0], N = dims[d][1], K = dims[d][2];
                kgl_gemm_nn(p, M, N, K, A, K, B, N, C, N, mode);
                kgl_gemm_nt(p, M, N, K, A, K, B, K, C, N, mode);
                kgl_gemm_tn(p, M, N, K, A, M, B, N, C, N, mode);
                for (int path = KGL_PATH_DIRECT; path <= KGL_PATH_PACKED; path++)
                    kgl_gemm_for_tests((int)kgl_isa_best(), path, 0, 0, p, M, N, K, A, K, B, N, C, N, mode);
            }
        long seen = test_alloc_count() - before;
        if (seen) printf("    %d thread(s): %ld allocations inside kgl_gemm_*\n", threads, seen);
        CHECK(seen == 0);
        kgl_pool_free(p);
    }
    /* packed-B products, in tasks of a 2-thread pool */
    kgl_pool *p = kgl_pool_create(2);
    on_job j = {.p = p, .A = A, .B = B, .layout = 1, .mode = KGL_ADD};
    double *Cs[ON_SHAPES];
    for (int s = 0; s < ON_SHAPES; s++) Cs[s] = malloc(sizeof(double) * on_shapes[s][0] * on_shapes[s][1]);
    for (int s = 0; s < ON_SHAPES; s++)
        j.C[s] = Cs[s], j.packed[s] = malloc(sizeof(double) * kgl_gemm_packed_b_size(on_shapes[s][2], on_shapes[s][1]));
    long before = test_alloc_count();
    kgl_pool_run(p, ON_SHAPES, on_task, &j); /* results unused: only allocations are counted */
    CHECK(test_alloc_count() == before);
    for (int s = 0; s < ON_SHAPES; s++) free(Cs[s]), free(j.packed[s]);
    kgl_pool_free(p);
    free(A), free(B), free(C);
}

/* ---------------------------------------------------------------- pool */

typedef struct {
    int threads, worker_bad;
    int hits[64];
} pool_probe;

static void probe_task(void *ctx, int task, int worker)
{
    pool_probe *pp = ctx;
    __atomic_fetch_add(&pp->hits[task], 1, __ATOMIC_RELAXED);
    if (worker < 0 || worker >= pp->threads) __atomic_store_n(&pp->worker_bad, 1, __ATOMIC_RELAXED);
}

/* Every task runs exactly once with a worker id in [0, threads), over many
 * calls in a row (0..36 tasks; 1000 calls per pool, trimmed from 2000; 150
 * for 3 threads, because a pool with more threads than cores waits for a
 * descheduled worker to count out of every call, ~1 ms each on a 2-core
 * machine), for pools of 1, 2 and 3 threads; each worker's GEMM workspace is
 * 64-byte aligned and they do not overlap. */
TEST(pool_runs_every_task_once_on_a_valid_worker)
{
    for (int threads = 1; threads <= 3; threads++) {
        kgl_pool *p = kgl_pool_create(threads);
        CHECK(kgl_pool_threads(p) == threads);
        pool_probe pp;
        int bad_count = 0, bad_worker = 0;
        for (int rep = 0; rep < (threads < 3 ? 1000 : 150); rep++) {
            int n = rep % 37;
            memset(&pp, 0, sizeof pp);
            pp.threads = threads;
            kgl_pool_run(p, n, probe_task, &pp);
            for (int t = 0; t < 64; t++) bad_count += pp.hits[t] != (t < n);
            bad_worker += pp.worker_bad;
        }
        CHECK(bad_count == 0);
        CHECK(bad_worker == 0);
        for (int w = 0; w < threads; w++) {
            double *ws = kgl_pool_gemm_workspace(p, w);
            CHECK(ws != NULL && ((uintptr_t)ws & 63) == 0);
            if (w > 0) {
                long gap = (long)((char *)ws - (char *)kgl_pool_gemm_workspace(p, w - 1));
                CHECK(labs(gap) >= (long)KGL_GEMM_WORKSPACE);
            }
        }
        kgl_pool_free(p);
    }
}

/* kgl_pool_create(0) means one thread per online core: at least one, at most
 * KGL_MAX_THREADS, and it runs tasks like any other pool. */
TEST(pool_create_0_gives_at_least_one_thread)
{
    kgl_pool *p = kgl_pool_create(0);
    CHECK(p != NULL);
    int t = kgl_pool_threads(p);
    CHECK(t >= 1 && t <= KGL_MAX_THREADS);
    pool_probe pp;
    memset(&pp, 0, sizeof pp);
    pp.threads = t;
    kgl_pool_run(p, 40, probe_task, &pp);
    int bad = 0;
    for (int i = 0; i < 64; i++) bad += pp.hits[i] != (i < 40);
    CHECK(bad == 0 && pp.worker_bad == 0);
    printf("    kgl_pool_create(0): %d threads\n", t);
    kgl_pool_free(p);
}

/* ----------------------------------------------------------------- exp */

/* |y - exact| in ulps of the exact value: ulp from exact's own binade
 * (frexpl, so a value just below a power of two is not judged with the ulp
 * above it); subnormal results in units of 2^-1074. */
static double ulp_err(double y, long double exact)
{
    long double ulp;
    if ((double)exact < DBL_MIN) ulp = 0x1p-1074L;
    else {
        int e;
        frexpl(exact, &e);
        ulp = ldexpl(1.0L, e - 53);
    }
    return (double)(fabsl((long double)y - exact) / ulp);
}

/* Distance in representations between two non-negative finite doubles. */
static double rep_dist(double a, double b)
{
    uint64_t x = bits_of(a), y = bits_of(b);
    return (double)(x > y ? x - y : y - x);
}

/* kgl_vexp against expl on each ISA path. Samples (trimmed from the helper's
 * 3e6 to ~6e5): uniform over the whole finite-result range [-745.2, 709.8],
 * log-spaced magnitudes 1e-300..746 of both signs, the subnormal-result band
 * [-745.2, -708.3], the overflow edge, tiny |x| and |x| < 0.7 (k = 0, the
 * reduction's own interval), and the specials.
 * Bounds: vmath.c's error analysis gives 0.5 ulp (the final rounding) plus
 * < 0.3 ulp from the reduction and the polynomial, so < 1 ulp (faithful) for
 * normal results; a subnormal result is p 2^k rounded once, where p's
 * relative error (< 0.3 * 2^-52) is < 0.3 units of 2^-1074 at that scale,
 * so < 0.8 units of 2^-1074 in all (bound: 1 unit); glibc's exp is < 0.51 ulp, so ours and glibc's are at most one
 * representation apart. All paths must give the same bits. */
TEST(vexp_within_1_ulp_of_expl_on_every_path)
{
    static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN,
                                709.782712893383973096, /* largest finite result */
                                709.78271289338403,     /* first overflow */
                                710.0, 1e308, DBL_MAX, -DBL_MAX,
                                -708.3964185322641, /* ~DBL_MIN result */
                                -708.39641853226425,
                                -744.4400719213812, /* 2 * 2^-1074 */
                                -745.1332191019411, /* smallest subnormal result */
                                -745.1332191019412, -745.2, -746.0, -1000.0, 0x1p-1074, -0x1p-1074, 0x1p-53,
                                -0x1p-53, 0x1p-54, -0x1p-54, 1e-300, -1e-300, 1.0, -1.0, 0.34657359027997264,
                                -0.34657359027997264, 0.6931471805599453, 0.5, 88.7, -88.7};
    const int nsp = (int)(sizeof sp / sizeof sp[0]);
    enum { NX = 600000 };
    kgl_isa isas[3];
    int ni = isa_list(isas);
    double *xs = malloc(sizeof(double) * (NX + 64)), *ys[3];
    for (int a = 0; a < ni; a++) ys[a] = malloc(sizeof(double) * (NX + 64));
    krng r = {12345};
    int n = 0;
    for (int i = 0; i < 200000; i++) xs[n++] = -745.2 + (709.8 + 745.2) * krng_unif(&r);
    for (int i = 0; i < 200000; i++) {
        double x = pow(10.0, -300 + (300 + 2.8727) * krng_unif(&r)); /* 1e-300 .. 746 */
        x = (krng_next(&r) & 1) ? -x : x;
        xs[n++] = x < -745.2 ? -745.2 : x > 709.8 ? 709.8 : x;
    }
    for (int i = 0; i < 80000; i++) xs[n++] = -745.2 + (745.2 - 708.3) * krng_unif(&r);
    for (int i = 0; i < 40000; i++) xs[n++] = 709.0 + 0.8 * krng_unif(&r);
    for (int i = 0; i < 40000; i++) xs[n++] = (krng_unif(&r) - 0.5) * 1e-6;
    for (int i = 0; i < 40000; i++) xs[n++] = (krng_unif(&r) - 0.5) * 1.4;
    for (int i = 0; i < nsp; i++) xs[n++] = sp[i];
    for (int a = 0; a < ni; a++) kgl_vexp_isa(isas[a], xs, ys[a], n);

    for (int a = 0; a < ni; a++) {
        double max_exact = 0, max_libm = 0, max_sub = 0, x_exact = 0;
        int nan_bad = 0, cls_bad = 0;
        for (int i = 0; i < n; i++) {
            double x = xs[i], y = ys[a][i], e = exp(x);
            long double ex = expl((long double)x);
            if (isnan(x)) {
                nan_bad += !isnan(y);
                continue;
            }
            /* class (inf / zero / finite) and sign as libm's; at the underflow edge
             * 0 and 2^-1074 may differ (both are within one subnormal unit) */
            if (isinf(e) != isinf(y) || (e == 0) != (y == 0) || signbit(y) || isnan(y))
                if (!(e <= 0x1p-1074 && y <= 0x1p-1074 && !signbit(y))) cls_bad++;
            if (isinf(e) || isinf(y)) continue;
            double ue = ulp_err(y, ex);
            if ((double)ex < DBL_MIN) {
                if (ue > max_sub) max_sub = ue;
                continue;
            }
            if (ue > max_exact) max_exact = ue, x_exact = x;
            double ul = rep_dist(y, e);
            if (ul > max_libm) max_libm = ul;
        }
        printf("    vexp [%s] %d points: max %.3f ulp vs expl (normal results, at x = %.17g), %.3f units of "
               "2^-1074 (subnormal), %.0f ulp vs glibc exp\n",
               kgl_isa_name(isas[a]), n, max_exact, x_exact, max_sub, max_libm);
        CHECK(max_exact < 1.0);
        CHECK(max_sub <= 1.0);
        CHECK(max_libm <= 1.0);
        CHECK(nan_bad == 0);
        CHECK(cls_bad == 0);
        /* exact values of the specials */
        const double in[6] = {0.0, -0.0, INFINITY, -INFINITY, 709.78271289338403, -746.0};
        double s[6];
        kgl_vexp_isa(isas[a], in, s, 6);
        CHECK(s[0] == 1 && s[1] == 1 && isinf(s[2]) && s[2] > 0 && bits_of(s[3]) == 0 && isinf(s[4]) && s[4] > 0 &&
              bits_of(s[5]) == 0);
    }
    for (int a = 1; a < ni; a++) CHECK(same_bits(ys[a], ys[0], (size_t)n));

    /* an element's result does not depend on its position, the pointer's
     * alignment or the length (tails), nothing outside the outputs is
     * written; in place (y == x) gives the same bits */
    int bad = 0;
    double buf[80], out[80], one;
    for (int a = 0; a < ni; a++)
        for (int len = 1; len <= 40; len++)
            for (int off = 0; off < 8; off++) {
                for (int i = 0; i < len; i++) buf[off + i] = xs[(len * 131 + i * 7919) % n];
                for (int i = 0; i < 80; i++) out[i] = SENTINEL;
                kgl_vexp_isa(isas[a], buf + off, out + (7 - off), len);
                for (int i = 0; i < 80; i++) /* the masked tail writes nothing past the n outputs */
                    if ((i < 7 - off || i >= 7 - off + len) && out[i] != SENTINEL) bad++;
                for (int i = 0; i < len; i++) {
                    kgl_vexp_isa(isas[a], buf + off + i, &one, 1);
                    if (bits_of(one) != bits_of(out[7 - off + i])) bad++;
                }
                kgl_vexp_isa(isas[a], buf + off, buf + off, len);
                if (!same_bits(buf + off, out + (7 - off), (size_t)len)) bad++;
            }
    CHECK(bad == 0);
    double z = 0.25, y1, y2;
    kgl_vexp(&z, &y1, 1);
    kgl_vexp_isa(kgl_isa_active(), &z, &y2, 1);
    CHECK(bits_of(y1) == bits_of(y2));
    free(xs);
    for (int a = 0; a < ni; a++) free(ys[a]);
}

/* ------------------------------------------------------------- softmax */

enum { SM_KINDS = 10, SM_MAXN = 2048 };
static const char *const sm_kind_name[SM_KINDS] = {"N(0,1)", "N(0,30^2)", "1000+N", "-inf mix", "1e300 spread",
                                                   "+-50 saturated", "-DBL_MAX..0", "equal", "one alive",
                                                   "-740..-730"};

static void sm_fill(krng *r, double *z, int n, int kind)
{
    for (int j = 0; j < n; j++) switch (kind) {
        case 0: z[j] = krng_norm(r); break;
        case 1: z[j] = 30 * krng_norm(r); break;
        case 2: z[j] = 1000 + 5 * krng_norm(r); break;                                 /* large offset */
        case 3: z[j] = krng_unif(r) < 0.3 ? -INFINITY : 3 * krng_norm(r); break;     /* masked entries */
        case 4: z[j] = krng_pm1(r) * 1e300; break;                                     /* huge spread */
        case 5: z[j] = (krng_unif(r) < 0.5 ? -50.0 : 50.0) + krng_norm(r); break;    /* saturated */
        case 6: z[j] = -DBL_MAX * krng_unif(r); break;                                 /* exp underflows to 0 */
        case 7: z[j] = 7.25; break;                                                    /* all equal */
        case 8: z[j] = j == n / 2 ? 1.0 : -INFINITY; break;                            /* one alive */
        default: z[j] = -740 + 10 * krng_unif(r); break;                              /* subnormal exps */
        }
}

/* kgl_softmax_row and its backward against long double, for lengths 1..40
 * (every tail of the 4- and 8-wide paths), 63..65, 135, 1001 and 2047
 * (trimmed from 1..70 + 135, 1000, 2047, 2048 and from 6 rows per kind to 3:
 * the explicit J g is O(n^2) in long double) and ten kinds of rows.
 * Tolerances (eps = DBL_EPSILON):
 *  - p_j within (n+3) eps p_j (+ 2^-1072 for subnormal p) of the long double
 *    softmax of the same double differences z - m: each exp is within 1 ulp,
 *    S = sum of n such terms errs by at most (n-1) u S from the additions plus
 *    eps S from the terms, and the division adds u: < (n+3) eps in all;
 *  - the returned log-sum-exp within 4 eps |lse| + (n+2) eps: log S inherits
 *    S's relative error as an absolute one, m + log S rounds once more;
 *  - |sum p - 1| <= n eps (summed in long double): the computed S is the sum
 *    of the computed exps within (n-1) u S, so sum e_j / S = 1 within
 *    (n-1) u, and each quotient rounds by u: n u = n eps / 2, a factor 2 to
 *    spare;
 *  - backward vs J g with J = diag(p) - p p^T built explicitly in long double:
 *    |err_j| <= (n+4) eps p_j (|g_j| + sum_k |p_k g_k|) + 2^-1070: the dot
 *    product <p, g> errs by at most n u sum |p_k g_k| (8 lanes and a tree are
 *    no worse than one recursive sum), then g_j - <p,g> and the product by p_j
 *    round once each. */
TEST(softmax_row_against_long_double_on_every_path)
{
    kgl_isa isas[3];
    int ni = isa_list(isas);
    static double z[SM_MAXN + 8], p[3][SM_MAXN + 8], q[SM_MAXN + 8], g[SM_MAXN + 8], d[3][SM_MAXN + 8],
        d2[SM_MAXN + 8];
    int lens[50], nl = 0;
    for (int n = 1; n <= 40; n++) lens[nl++] = n;
    lens[nl++] = 63, lens[nl++] = 64, lens[nl++] = 65, lens[nl++] = 135, lens[nl++] = 1001, lens[nl++] = 2047;
    krng r = {777};
    int bad_p[SM_KINDS] = {0}, bad_lse[SM_KINDS] = {0}, bad_sum = 0, bad_isa = 0, bad_align = 0, bad_inplace = 0;
    int bad_bw = 0, bad_bw_isa = 0, bad_bw_align = 0, bad_bw_add = 0, rows = 0;
    double worst_p = 0, worst_sum = 0, worst_bw = 0;
    for (int li = 0; li < nl; li++) {
        int n = lens[li];
        for (int kind = 0; kind < SM_KINDS; kind++)
            for (int rep = 0; rep < (n > 100 ? 1 : 3); rep++) {
                rows++;
                sm_fill(&r, z, n, kind);
                double lse[3];
                for (int a = 0; a < ni; a++) lse[a] = kgl_softmax_row_isa(isas[a], z, p[a], n);
                double m = z[0];
                for (int j = 1; j < n; j++)
                    if (z[j] > m) m = z[j];
                long double s = 0, psum = 0;
                if (m != -INFINITY)
                    for (int j = 0; j < n; j++) s += expl((long double)(z[j] - m));
                for (int j = 0; j < n; j++) {
                    long double pr = m == -INFINITY ? 0.0L : expl((long double)(z[j] - m)) / s;
                    long double tol = (n + 3) * 0x1p-52L * pr + 0x1p-1072L;
                    if (!(fabsl(p[0][j] - pr) <= tol)) bad_p[kind]++;
                    else if (pr > 1e-300 && (double)(fabsl(p[0][j] - pr) / pr) > worst_p)
                        worst_p = (double)(fabsl(p[0][j] - pr) / pr);
                    psum += p[0][j];
                }
                if (m == -INFINITY) { /* a fully masked row: p = 0, returns -inf */
                    if (!(lse[0] == -INFINITY && psum == 0)) bad_lse[kind]++;
                } else {
                    long double lref = (long double)m + logl(s);
                    if (!(fabsl(lse[0] - lref) <= 4 * DBL_EPSILON * fabsl(lref) + (n + 2) * DBL_EPSILON))
                        bad_lse[kind]++;
                    double se = (double)fabsl(psum - 1);
                    if (!(se <= n * DBL_EPSILON)) bad_sum++;
                    if (se / n > worst_sum) worst_sum = se / n;
                }
                for (int a = 1; a < ni; a++)
                    if (!same_bits(p[a], p[0], (size_t)n) || bits_of(lse[a]) != bits_of(lse[0])) bad_isa++;
                /* the row at +1 double, and in place (p == z) */
                for (int a = 0; a < ni; a++) {
                    memcpy(q + 1, z, (size_t)n * sizeof *z);
                    double l2 = kgl_softmax_row_isa(isas[a], q + 1, d2 + 1, n);
                    if (!same_bits(d2 + 1, p[0], (size_t)n) || bits_of(l2) != bits_of(lse[0])) bad_align++;
                    double l3 = kgl_softmax_row_isa(isas[a], q + 1, q + 1, n);
                    if (!same_bits(q + 1, p[0], (size_t)n) || bits_of(l3) != bits_of(lse[0])) bad_inplace++;
                }

                if (m == -INFINITY) continue;
                /* backward: dz = J g, J = diag(p) - p p^T, explicit */
                for (int j = 0; j < n; j++) g[j] = krng_norm(&r);
                for (int a = 0; a < ni; a++) kgl_softmax_row_backward_isa(isas[a], p[0], g, d[a], n, 0);
                long double absdot = 0;
                for (int k = 0; k < n; k++) absdot += fabsl((long double)p[0][k] * g[k]);
                for (int j = 0; j < n; j++) {
                    long double acc = 0;
                    for (int k = 0; k < n; k++) {
                        long double J = (j == k ? (long double)p[0][j] : 0.0L) - (long double)p[0][j] * p[0][k];
                        acc += J * g[k];
                    }
                    long double scale = fabsl((long double)p[0][j]) * (fabsl((long double)g[j]) + absdot);
                    long double err = fabsl(d[0][j] - acc);
                    if (!(err <= (n + 4) * DBL_EPSILON * scale + 0x1p-1070L)) bad_bw++;
                    if (scale > 0 && (double)(err / scale) > worst_bw) worst_bw = (double)(err / scale);
                }
                for (int a = 1; a < ni; a++)
                    if (!same_bits(d[a], d[0], (size_t)n)) bad_bw_isa++;
                for (int a = 0; a < ni; a++) {
                    memcpy(q + 1, p[0], (size_t)n * sizeof *z);
                    memcpy(d2 + 3, g, (size_t)n * sizeof *z);
                    double *dz = z; /* a third alignment for the output */
                    kgl_softmax_row_backward_isa(isas[a], q + 1, d2 + 3, dz, n, 0);
                    if (!same_bits(dz, d[0], (size_t)n)) bad_bw_align++;
                    /* add = 1: dz0 + (the add = 0 result), bit for bit */
                    for (int j = 0; j < n; j++) dz[j] = 0.5 * j - 3;
                    kgl_softmax_row_backward_isa(isas[a], q + 1, d2 + 3, dz, n, 1);
                    for (int j = 0; j < n; j++)
                        if (bits_of(dz[j]) != bits_of((0.5 * j - 3) + d[0][j])) bad_bw_add++;
                }
            }
    }
    for (int kind = 0; kind < SM_KINDS; kind++) {
        if (bad_p[kind] || bad_lse[kind])
            printf("    %s rows: %d p and %d lse out of tolerance\n", sm_kind_name[kind], bad_p[kind], bad_lse[kind]);
        CHECK(bad_p[kind] == 0);
        CHECK(bad_lse[kind] == 0);
    }
    printf("    softmax_row: %d rows; worst |p - p*| / p* = %.2g eps, worst |sum p - 1| / n = %.2g eps, worst backward "
           "err / (p (|g| + sum|pg|)) = %.2g eps\n",
           rows, worst_p / DBL_EPSILON, worst_sum / DBL_EPSILON, worst_bw / DBL_EPSILON);
    CHECK(bad_sum == 0);
    CHECK(bad_isa == 0);
    CHECK(bad_align == 0);
    CHECK(bad_inplace == 0);
    CHECK(bad_bw == 0);
    CHECK(bad_bw_isa == 0);
    CHECK(bad_bw_align == 0);
    CHECK(bad_bw_add == 0);

    /* specials: +inf or NaN in the row gives NaN; n = 1 gives p = 1, lse = z */
    for (int a = 0; a < ni; a++) {
        double zz[5] = {1, INFINITY, 2, 3, 4}, pp[5];
        double l = kgl_softmax_row_isa(isas[a], zz, pp, 5);
        CHECK(isnan(l) && isnan(pp[0]));
        zz[1] = NAN;
        l = kgl_softmax_row_isa(isas[a], zz, pp, 5);
        CHECK(isnan(l) && isnan(pp[0]) && isnan(pp[4]));
        double one = 3.5;
        l = kgl_softmax_row_isa(isas[a], &one, pp, 1);
        CHECK(pp[0] == 1.0 && l == 3.5);
    }
    /* the dispatched entry points are the active path */
    double zz[11], pa[11], pb[11], ga[11], da[11], db[11];
    for (int j = 0; j < 11; j++) zz[j] = krng_norm(&r), ga[j] = krng_norm(&r);
    double la = kgl_softmax_row(zz, pa, 11), lb = kgl_softmax_row_isa(kgl_isa_active(), zz, pb, 11);
    CHECK(bits_of(la) == bits_of(lb) && same_bits(pa, pb, 11));
    kgl_softmax_row_backward(pa, ga, da, 11, 0);
    kgl_softmax_row_backward_isa(kgl_isa_active(), pa, ga, db, 11, 0);
    CHECK(same_bits(da, db, 11));
}

/* ---------------------------------------------------------------- Adam */

/* The Adam / AdamW loop of kgl_optim_step (src/engine/params.c), copied as it
 * stood before the vector kernel took it over; vmath.h promises its bits. */
typedef struct {
    double lr, beta1, beta2, eps, weight_decay;
    long step;
} ref_optim;

static void adam_reference_step(ref_optim *o, double *theta, const double *g, double *m, double *v, size_t n)
{
    o->step++;
    double t = (double)o->step;
    double bc1 = 1.0 - pow(o->beta1, t), bc2_sqrt = sqrt(1.0 - pow(o->beta2, t));
    double step_size = o->lr / bc1, keep = 1.0 - o->lr * o->weight_decay;
    if (o->weight_decay != 0)
        for (size_t i = 0; i < n; i++) theta[i] *= keep;
    for (size_t i = 0; i < n; i++) {
        m[i] += (1.0 - o->beta1) * (g[i] - m[i]);
        v[i] = v[i] * o->beta2 + (1.0 - o->beta2) * g[i] * g[i];
        double denom = sqrt(v[i]) / bc2_sqrt + o->eps;
        theta[i] -= step_size * (m[i] / denom);
    }
}

/* The same step on the vector kernel, with the per-step scalars computed as
 * kgl_optim_step computes them (keep = 1 without weight decay). isa < 0:
 * the dispatched kgl_adam_update. */
static void adam_vector_step(int isa, ref_optim *o, double *theta, const double *g, double *m, double *v, size_t n)
{
    o->step++;
    double t = (double)o->step;
    double bc1 = 1.0 - pow(o->beta1, t), bc2_sqrt = sqrt(1.0 - pow(o->beta2, t));
    double step_size = o->lr / bc1, keep = o->weight_decay != 0 ? 1.0 - o->lr * o->weight_decay : 1.0;
    if (isa < 0) kgl_adam_update(theta, g, m, v, n, o->beta1, o->beta2, o->eps, step_size, bc2_sqrt, keep);
    else kgl_adam_update_isa((kgl_isa)isa, theta, g, m, v, n, o->beta1, o->beta2, o->eps, step_size, bc2_sqrt, keep);
}

/* Five steps of Adam and of AdamW (wd = 0.01), on every path and the
 * dispatched entry, for sizes around the vector widths and a large odd one,
 * at an aligned and a misaligned offset, gradients spanning 1e-4..1e2 with
 * exact zeros: theta, m and v identical bit for bit to the scalar loop. */
TEST(adam_update_same_bits_as_the_scalar_loop)
{
    enum { N = 10007 };
    static double w0[N + 1], m0[N + 1], v0[N + 1], g[N + 1], w1[N + 1], m1[N + 1], v1[N + 1];
    static const size_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 1000, N};
    krng r = {4242};
    for (int isa = -1; isa <= (int)kgl_isa_best(); isa++)
        for (int wd = 0; wd < 2; wd++) {
            int bad = 0;
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                size_t n = sizes[si];
                int off = (int)(si & 1);
                ref_optim o0 = {0.01, 0.9, 0.999, 1e-8, wd ? 0.01 : 0.0, 0};
                if (si == 3) o0.lr = 3e-4, o0.beta2 = 0.98;
                ref_optim o1 = o0;
                for (size_t i = 0; i < n; i++) {
                    w0[i] = w1[off + i] = krng_norm(&r);
                    m0[i] = m1[off + i] = 0;
                    v0[i] = v1[off + i] = 0;
                }
                for (int step = 0; step < 5; step++) {
                    for (size_t i = 0; i < n; i++)
                        g[i] = (i % 13 == 0) ? 0.0 : krng_norm(&r) * pow(10.0, (double)(i % 7) - 4);
                    adam_reference_step(&o0, w0, g, m0, v0, n);
                    memmove(g + off, g, n * sizeof *g);
                    adam_vector_step(isa, &o1, w1 + off, g + off, m1 + off, v1 + off, n);
                    if (!same_bits(w0, w1 + off, n) || !same_bits(m0, m1 + off, n) || !same_bits(v0, v1 + off, n))
                        bad++;
                }
            }
            if (bad)
                printf("    %s, %s: %d steps differ from the scalar loop\n",
                       isa < 0 ? "kgl_adam_update" : kgl_isa_name((kgl_isa)isa), wd ? "AdamW" : "Adam", bad);
            CHECK(bad == 0);
        }
}

/* kgl_softmax_block (many short rows: one vexp call for the block) is
   kgl_softmax_row row by row, to the bit, for every length around the
   8-lane structure, rows of -inf (masked), a NaN, saturated rows, and the
   long-row path (n >= 32); the lse values too. Compared with memcmp. */
TEST(softmax_block_equals_softmax_row_bit_for_bit)
{
    kgl_rng rng;
    kgl_rng_seed(&rng, 17);
    enum { ROWS = 70, MAXN = 40 };
    static double z[ROWS * MAXN], pb[ROWS * MAXN], pr[ROWS * MAXN], lb[ROWS], lr[ROWS];
    long differ = 0, compared = 0;
    for (int n = 1; n <= MAXN; n++) {
        for (int k = 0; k < ROWS * n; k++) z[k] = 3 * kgl_rng_normal(&rng);
        for (int j = 0; j < n; j++) z[5 * n + j] = -INFINITY;               /* a fully masked row */
        z[7 * n + n / 2] = NAN;                                              /* a NaN */
        for (int j = 0; j < n; j++) z[9 * n + j] = j % 3 ? -800.0 : 800.0;  /* saturated */
        z[11 * n] = -INFINITY;                                               /* one masked entry */
        kgl_softmax_block(z, pb, ROWS, n, lb);
        for (int r = 0; r < ROWS; r++) lr[r] = kgl_softmax_row(z + r * n, pr + r * n, n);
        differ += memcmp(pb, pr, (size_t)ROWS * n * sizeof(double)) != 0;
        differ += memcmp(lb, lr, sizeof lb) != 0;
        compared++;
        /* in place, as the ops call it */
        memcpy(pb, z, (size_t)ROWS * n * sizeof(double));
        kgl_softmax_block(pb, pb, ROWS, n, NULL);
        differ += memcmp(pb, pr, (size_t)ROWS * n * sizeof(double)) != 0;
    }
    CHECK(compared == MAXN);
    CHECK(differ == 0);
    CHECK(pr[5 * MAXN] == 0.0 && lr[5] == -INFINITY); /* the masked row of the last length */
}

#include "softmax_masked_rows.h"
TEST(softmax_masked_row_is_all_minus_inf_and_a_nan_row_stays_nan)
{
    check_softmax_masked_and_nan_rows(T);
}
