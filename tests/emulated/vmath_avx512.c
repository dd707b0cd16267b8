/* vmath_avx512.c — vmath.c's AVX-512 path on a CPU without AVX-512.
 *
 * Built by `make test` as build/vmath_emulated from src/engine/vmath.c and
 * src/engine/cpu.c compiled with -DVMATH_EMULATE_AVX512: vmath.c then runs
 * its AVX-512 functions on src/engine/avx512_emul.h, a lane-by-lane model of
 * the intrinsics it uses (Intel SDM semantics, masked tails included), and
 * kgl_*_isa(KGL_ISA_AVX512, ...) reaches them on an AVX2 CPU. The lane
 * layout, the masked tails and the reduction trees of that code are thereby
 * checked here: every kernel must give the same bits as the portable path
 * (vmath.h's promise) on random inputs of every tail length, at several
 * alignments, with specials. The main suite (tests/engine_kernels.c,
 * tests/f32/engine_vmath_f32.c) covers accuracy and the paths this CPU runs
 * natively. Written in kgl_real: built with -DKGL_FLOAT32 as well, it checks
 * the float32 kernels (16 lanes) the same way.
 *
 * Not part of kgl_tests (the tests/ wildcard sees one folder level only); its own last
 * line is "N passed, N failed", and it exits 1 on a failure. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engine/cpu.h"
#include "engine/vmath.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "emulated.h"
static double rnorm(void)
{
    double u = runif() + 0x1p-54, v = runif();
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static int same(const kgl_real *a, const kgl_real *b, int n) { return n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0; }

#ifdef KGL_FLOAT32
enum { W = 16 }; /* lanes of the AVX-512 code */
static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72283f, 88.72284f, -0x1.9fe368p6f,
                                 -0x1.9fe36ap6f, -104.0f, -87.33655f, FLT_MAX, -FLT_MAX, 0x1p-149f, -0x1p-149f,
                                 1e-30f, 0.34657359f, -0.6931472f};
#define EXP_LO (-104.0) /* the range with finite nonzero results, roughly */
#define EXP_HI 88.8
#define SUB_HI (-87.3) /* results below it are subnormal */
#else
enum { W = 8 };
static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 709.78271289338403, 709.7827128933839,
                                  -745.1332191019411, -745.2, -746.0, -708.3964185322641, DBL_MAX, -DBL_MAX,
                                  0x1p-1074, -0x1p-1074, 1e-300, 0.34657359027997264, -0.6931471805599453};
#define EXP_LO (-745.2)
#define EXP_HI 709.8
#define SUB_HI (-708.2)
#endif
#define NSPEC ((int)(sizeof specials / sizeof specials[0]))

/* A value for exp: mostly over the finite range, sometimes a special. */
static kgl_real exp_arg(void)
{
    uint64_t k = rnext() % 16;
    if (k == 0) return specials[rnext() % NSPEC];
    if (k == 1) return (kgl_real)(EXP_LO + (SUB_HI - EXP_LO) * runif()); /* subnormal results */
    return (kgl_real)(EXP_LO + (EXP_HI - EXP_LO) * runif());
}

/* A softmax row entry of one of several kinds. */
static kgl_real row_entry(int kind)
{
    switch (kind) {
    case 0: return (kgl_real)rnorm();
    case 1: return runif() < 0.3 ? -INFINITY : (kgl_real)(30 * rnorm()); /* masked entries */
    case 2: return (kgl_real)(1000 + 5 * rnorm());
    case 3: return (kgl_real)(EXP_LO + 5 + 10 * runif());
    default: return -INFINITY; /* fully masked */
    }
}

enum { MAXN = 300, PAD = 8 };
static const kgl_real SENTINEL = -12345.0;

int main(void)
{
    emul_seed(0x243f6a8885a308d3ull);
    kgl_isa best = kgl_isa_best();
    if (best < KGL_ISA_AVX2) { /* the model returns real 256-bit halves: it needs AVX2 */
        printf("vmath_emulated: this CPU has no AVX2; the AVX-512 model cannot run (nothing tested)\n");
        printf("0 passed, 0 failed\n");
        return 0;
    }
    printf("vmath_emulated: vmath.c's AVX-512 path (%s) %s, compared with the portable path\n", KGL_PRECISION,
           best == KGL_ISA_AVX512 ? "(emulated, on a CPU that has AVX-512)" : "emulated by avx512_emul.h");
    /* lengths: every tail of the 8- or 16-wide blocks over several blocks, and longer rows */
    static int lens[64];
    int nl = 0;
    for (int n = 1; n <= 41; n++) lens[nl++] = n;
    lens[nl++] = 64, lens[nl++] = 135, lens[nl++] = 257, lens[nl++] = MAXN;
    static kgl_real x[MAXN + 2 * PAD], y0[MAXN + 2 * PAD], y1[MAXN + 2 * PAD], g[MAXN + 2 * PAD];
    static kgl_real d0[MAXN + 2 * PAD], d1[MAXN + 2 * PAD];
    int bad_exp = 0, bad_inplace = 0, bad_stray = 0, bad_sm = 0, bad_bw = 0, bad_bw_add = 0, bad_adam = 0, runs = 0;
    for (int li = 0; li < nl; li++)
        for (int off = 0; off < 3; off++) {
            int n = lens[li];
            kgl_real *xs = x + PAD + off, *a = y0 + PAD, *b = y1 + PAD + (2 - off);
            runs++;
            /* outputs: sentinels around the AVX-512 path's, checked after every kernel below */
            for (int i = 0; i < MAXN + 2 * PAD; i++) y1[i] = d1[i] = SENTINEL;
            /* exp, out of place and in place */
            for (int i = 0; i < n; i++) xs[i] = exp_arg();
            kgl_vexp_isa(KGL_ISA_PORTABLE, xs, a, n);
            kgl_vexp_isa(KGL_ISA_AVX512, xs, b, n);
            for (int i = 0; i < n; i++)
                if (memcmp(&a[i], &b[i], sizeof a[i]) != 0 && !(isnan(a[i]) && isnan(b[i]))) bad_exp++;
            kgl_vexp_isa(KGL_ISA_AVX512, xs, xs, n);
            for (int i = 0; i < n; i++)
                if (memcmp(&a[i], &xs[i], sizeof a[i]) != 0 && !(isnan(a[i]) && isnan(xs[i]))) bad_inplace++;
            /* softmax row (and its log-sum-exp) and the backward, both modes */
            for (int kind = 0; kind < 5; kind++) {
                for (int i = 0; i < n; i++) xs[i] = row_entry(kind);
                double l0 = kgl_softmax_row_isa(KGL_ISA_PORTABLE, xs, a, n);
                double l1 = kgl_softmax_row_isa(KGL_ISA_AVX512, xs, b, n);
                if (!same(a, b, n) || memcmp(&l0, &l1, sizeof l0) != 0) bad_sm++;
                if (l0 == -INFINITY) continue;
                for (int i = 0; i < n; i++) g[PAD + i] = (kgl_real)rnorm();
                kgl_real *e0 = d0 + PAD + off, *e1 = d1 + PAD;
                kgl_softmax_row_backward_isa(KGL_ISA_PORTABLE, a, g + PAD, e0, n, 0);
                kgl_softmax_row_backward_isa(KGL_ISA_AVX512, a, g + PAD, e1, n, 0);
                if (!same(e0, e1, n)) bad_bw++;
                for (int i = 0; i < n; i++) e0[i] = e1[i] = (kgl_real)(0.25 * i - 1);
                kgl_softmax_row_backward_isa(KGL_ISA_PORTABLE, a, g + PAD, e0, n, 1);
                kgl_softmax_row_backward_isa(KGL_ISA_AVX512, a, g + PAD, e1, n, 1);
                if (!same(e0, e1, n)) bad_bw_add++;
            }
            for (int i = 0; i < MAXN + 2 * PAD; i++)
                if ((y1 + i < b || y1 + i >= b + n) && y1[i] != SENTINEL) bad_stray++;
            for (int i = 0; i < MAXN + 2 * PAD; i++)
                if ((i < PAD || i >= PAD + n) && d1[i] != SENTINEL) bad_stray++;
            /* Adam, with and without weight decay (keep != 1 / == 1), three steps */
            for (int wd = 0; wd < 2; wd++) {
                static kgl_real w[2][MAXN + PAD], m[2][MAXN + PAD], v[2][MAXN + PAD];
                for (int i = 0; i < n; i++) {
                    w[0][i] = w[1][i + off] = (kgl_real)rnorm();
                    m[0][i] = m[1][i + off] = 0;
                    v[0][i] = v[1][i + off] = 0;
                }
                for (int t = 1; t <= 3; t++) {
                    for (int i = 0; i < n; i++) g[PAD + i] = (kgl_real)(i % 11 == 0 ? 0.0 : rnorm() * pow(10.0, i % 5 - 3));
                    double bc1 = 1.0 - pow(0.9, t), bc2_sqrt = sqrt(1.0 - pow(0.999, t));
                    double step = 0.01 / bc1, keep = wd ? 1.0 - 0.01 * 0.01 : 1.0;
                    kgl_adam_update_isa(KGL_ISA_PORTABLE, w[0], g + PAD, m[0], v[0], (size_t)n, 0.9, 0.999, 1e-8, step,
                                        bc2_sqrt, keep);
                    kgl_adam_update_isa(KGL_ISA_AVX512, w[1] + off, g + PAD, m[1] + off, v[1] + off, (size_t)n, 0.9,
                                        0.999, 1e-8, step, bc2_sqrt, keep);
                    if (!same(w[0], w[1] + off, n) || !same(m[0], m[1] + off, n) || !same(v[0], v[1] + off, n))
                        bad_adam++;
                }
            }
        }
    /* the specials on their own, every one at every lane position */
    int bad_spec = 0;
    for (int s = 0; s < NSPEC; s++)
        for (int pos = 0; pos < W; pos++) {
            kgl_real in[W + 1], o0[W + 1], o1[W + 1];
            for (int i = 0; i < W + 1; i++) in[i] = (kgl_real)(0.5 * i);
            in[pos] = specials[s];
            kgl_vexp_isa(KGL_ISA_PORTABLE, in, o0, W + 1);
            kgl_vexp_isa(KGL_ISA_AVX512, in, o1, W + 1);
            for (int i = 0; i < W + 1; i++)
                if (memcmp(&o0[i], &o1[i], sizeof o0[i]) != 0 && !(isnan(o0[i]) && isnan(o1[i]))) bad_spec++;
            double l0 = kgl_softmax_row_isa(KGL_ISA_PORTABLE, in, o0, W + 1);
            double l1 = kgl_softmax_row_isa(KGL_ISA_AVX512, in, o1, W + 1);
            if (!(memcmp(&l0, &l1, sizeof l0) == 0 || (isnan(l0) && isnan(l1)))) bad_spec++;
            for (int i = 0; i < W + 1; i++)
                if (memcmp(&o0[i], &o1[i], sizeof o0[i]) != 0 && !(isnan(o0[i]) && isnan(o1[i]))) bad_spec++;
        }
    char what[160];
    snprintf(what, sizeof what, "vexp: avx512 = portable, bit for bit (%d lengths x 3 alignments)", runs / 3);
    check(bad_exp == 0, what);
    check(bad_inplace == 0, "vexp in place (y == x): avx512 = portable");
    check(bad_sm == 0, "softmax_row: avx512 = portable (p and log-sum-exp; N(0,1), masked, offset, subnormal, all -inf)");
    check(bad_bw == 0, "softmax_row_backward add=0: avx512 = portable");
    check(bad_bw_add == 0, "softmax_row_backward add=1: avx512 = portable");
    check(bad_stray == 0, "avx512 masked tails write nothing outside the n outputs (sentinels)");
    check(bad_adam == 0, "adam_update: avx512 = portable (Adam and AdamW, 3 steps, misaligned)");
    check(bad_spec == 0, "specials at every lane position (exp and softmax): avx512 = portable (NaN = NaN)");
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail != 0;
}
