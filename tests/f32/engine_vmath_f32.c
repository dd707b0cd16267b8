/* engine_vmath_f32.c — vmath.c built with -DKGL_FLOAT32: the float exp, the
 * softmax row (forward, backward, in blocks) and the Adam update, on every
 * ISA path this CPU has (tests/engine_kernels.c does the same for float64).
 *
 * Every path must give the same bits as every other, for every length
 * (1..70 and longer: all tails of the 8- and 16-wide vectors) and any
 * alignment; the accuracy is checked against double (or long double)
 * references computed here, with the tolerances derived where they are used;
 * Adam against the scalar float loop that vmath.h documents.
 *
 * Bit-for-bit comparisons with a loop written here need that loop compiled
 * as written: gcc does not contract a*b + c into an fma in ISO C mode
 * (-std=c11), and clang is told so by the pragma below. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/cpu.h"
#include "engine/vmath.h"
#include "test.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

_Static_assert(sizeof(kgl_real) == sizeof(float), "tests/f32 is built with -DKGL_FLOAT32");

#define U 0x1p-24 /* the unit round-off of float */

/* splitmix64, explicit state: every test draws its own reproducible inputs. */
typedef struct {
    uint64_t s;
} frng;

static uint64_t frng_next(frng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double frng_unif(frng *r) { return (double)(frng_next(r) >> 11) * 0x1p-53; } /* [0, 1) */
static double frng_norm(frng *r)
{
    double u = frng_unif(r) + 0x1p-54, v = frng_unif(r);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static uint32_t fbits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}
static uint64_t dbits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}
static bool same_bits(const float *a, const float *b, size_t n) { return n == 0 || memcmp(a, b, n * sizeof *a) == 0; }

/* The ISAs to test: every one from portable up to the best this CPU has
 * (kgl_isa_best ignores KGL_ISA, so KGL_ISA=portable still tests them all). */
static int isa_list(kgl_isa *out)
{
    int n = 0;
    for (int i = 0; i <= (int)kgl_isa_best(); i++) out[n++] = (kgl_isa)i;
    return n;
}

/* ----------------------------------------------------------------- exp */

/* |y - exact| in ulps of float at exact's own binade (frexp, so a value just
 * below a power of two is not judged with the ulp above it); results below
 * FLT_MIN in units of 2^-149; +inf counts as 2^128, and above 2^128 only +inf
 * is right. The double exp is the reference: its error (< 1 ulp of double,
 * 2^-29 ulp of float) is far below the resolution that matters here. */
static double ulp_err(float y, double exact)
{
    if (exact >= 0x1p128) return isinf(y) ? 0 : 1e9;
    double ulp;
    if (exact < FLT_MIN) ulp = 0x1p-149;
    else {
        int e;
        frexp(exact, &e);
        ulp = ldexp(1.0, e - 24);
    }
    double yv = isinf(y) ? 0x1p128 : (double)y;
    return fabs(yv - exact) / ulp;
}

#define EXP_ZERO_BELOW (-0x1.9fe368p6f) /* vmath.c's EXP_XZERO: exp(x) rounds to +0 below it */

/* Errors of one path over a set of arguments. */
typedef struct {
    double max_normal, max_sub;
    float x_normal, x_sub;
    long nan_bad, sign_bad, differ; /* differ: from the portable path's bits */
} exp_stats;

static void exp_measure(const float *x, float ys[][1 << 16], int ni, int n, exp_stats *st)
{
    for (int i = 0; i < n; i++) {
        double ex = exp((double)x[i]);
        for (int a = 0; a < ni; a++) {
            float y = ys[a][i];
            if (memcmp(&y, &ys[0][i], sizeof y) != 0) st[a].differ++;
            if (isnan(x[i])) {
                st[a].nan_bad += !isnan(y);
                continue;
            }
            st[a].sign_bad += signbit(y) != 0;
            double e = ulp_err(y, ex);
            if (ex < FLT_MIN) {
                if (e > st[a].max_sub) st[a].max_sub = e, st[a].x_sub = x[i];
            } else if (e > st[a].max_normal) st[a].max_normal = e, st[a].x_normal = x[i];
        }
    }
}

/* kgl_vexp against double exp on each path. Arguments: a stride through all
 * 2^32 bit patterns (every 1021st: all signs, exponents, NaN payloads,
 * subnormal inputs), then dense bands: the subnormal-result range
 * [-104, -87.3], the overflow edge [88.5, 88.8], |x| < 0.7 (k = 0), |x| <
 * 2^-20, and the specials. Bounds (vmath.c's header): < 1 ulp for normal
 * results (the analysis gives 0.5 + ~0.3; measured on every float 0.727), and
 * < 1 unit of 2^-149 for subnormal ones (p 2^k rounded once from p within
 * 0.3 ulp: measured 0.790). All paths must give the same bits, NaN payloads
 * included (one NaN operand propagates unchanged on every path). */
TEST(f32_vexp_within_1_ulp_of_double_exp_on_every_path)
{
    static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 88.72283f, 88.72284f, 89.0f, 1e30f,
                               FLT_MAX, -FLT_MAX, EXP_ZERO_BELOW, -0x1.9fe36ap6f, -104.0f, -1000.0f, -87.33654f,
                               -87.33655f, 0x1p-149f, -0x1p-149f, 0x1p-24f, -0x1p-25f, 0.34657359f, -0.34657359f,
                               0.6931472f, 1.0f, -1.0f};
    const int nsp = (int)(sizeof sp / sizeof sp[0]);
    enum { CHUNK = 1 << 16, STRIDE = 1021 };
    kgl_isa isas[3];
    int ni = isa_list(isas);
    static float xs[CHUNK], ys[3][CHUNK];
    exp_stats st[3];
    memset(st, 0, sizeof st);
    frng r = {2024};
    uint64_t b = 0;
    for (int band = 0; band <= 5; band++) {
        int n = 0;
        if (band == 0) /* the stride through every bit pattern, a chunk at a time */
            for (; n < CHUNK && b < 0x100000000ull; b += STRIDE) {
                uint32_t w = (uint32_t)b;
                memcpy(&xs[n++], &w, sizeof w);
            }
        else if (band == 5)
            for (; n < nsp; n++) xs[n] = sp[n];
        else
            for (; n < CHUNK; n++) {
                double t = frng_unif(&r);
                xs[n] = (float)(band == 1   ? -104.0 + (104.0 - 87.3) * t
                                : band == 2 ? 88.5 + 0.3 * t
                                : band == 3 ? (t - 0.5) * 1.4
                                            : (t - 0.5) * 0x1p-19);
            }
        for (int a = 0; a < ni; a++) kgl_vexp_isa(isas[a], xs, ys[a], n);
        exp_measure(xs, ys, ni, n, st);
        if (band == 0 && b < 0x100000000ull) band--; /* more of the stride */
    }
    for (int a = 0; a < ni; a++) {
        printf("    vexp f32 [%s]: max %.3f ulp (normal results, at x = %a), %.3f units of 2^-149 (subnormal, at "
               "x = %a)\n",
               kgl_isa_name(isas[a]), st[a].max_normal, st[a].x_normal, st[a].max_sub, st[a].x_sub);
        CHECK(st[a].max_normal < 1.0);
        CHECK(st[a].max_sub < 1.0);
        CHECK(st[a].nan_bad == 0);
        CHECK(st[a].sign_bad == 0);
        CHECK(st[a].differ == 0);
        /* exact values: exp(±0) = 1, exp(+inf) = exp(89) = +inf, exp(-inf) = +0,
         * the last nonzero result 2^-149 and the first +0 below it */
        const float in[8] = {0.0f, -0.0f, INFINITY, 89.0f, -INFINITY, EXP_ZERO_BELOW, -0x1.9fe36ap6f, -1e30f};
        float s[8];
        kgl_vexp_isa(isas[a], in, s, 8);
        CHECK(s[0] == 1 && s[1] == 1 && isinf(s[2]) && s[2] > 0 && isinf(s[3]) && fbits(s[4]) == 0 &&
              s[5] == 0x1p-149f && fbits(s[6]) == 0 && fbits(s[7]) == 0);
    }
}

enum { MAXLEN = 70, GUARD = 16 };
static const float SENTINEL = 12345.0f;

/* An element's result does not depend on its position, the pointer's
 * alignment (16 offsets: every position in a 64-byte vector) or the length
 * (1..70: every tail of the 8- and 16-wide paths); nothing outside the n
 * outputs is written; in place (y == x) gives the same bits; every path the
 * same bits; the dispatched kgl_vexp is the active path. */
TEST(f32_vexp_tails_alignment_and_in_place_on_every_path)
{
    kgl_isa isas[3];
    int ni = isa_list(isas);
    frng r = {77};
    static float pool[4096];
    for (int i = 0; i < 4096; i++) {
        int k = (int)(frng_next(&r) % 8);
        pool[i] = k == 0 ? -INFINITY : k == 1 ? (float)(-104 + 17 * frng_unif(&r)) : (float)(30 * frng_norm(&r));
    }
    int bad_pos = 0, bad_stray = 0, bad_inplace = 0, bad_isa = 0;
    static float buf[MAXLEN + 2 * GUARD], out[3][MAXLEN + 2 * GUARD];
    for (int len = 1; len <= MAXLEN; len++)
        for (int off = 0; off < 16; off++) {
            for (int a = 0; a < ni; a++) {
                for (int i = 0; i < len; i++) buf[off + i] = pool[(len * 131 + i * 97 + off) % 4096];
                float *o = out[a] + GUARD + (15 - off);
                for (int i = 0; i < MAXLEN + 2 * GUARD; i++) out[a][i] = SENTINEL;
                kgl_vexp_isa(isas[a], buf + off, o, len);
                for (int i = 0; i < MAXLEN + 2 * GUARD; i++)
                    if ((out[a] + i < o || out[a] + i >= o + len) && out[a][i] != SENTINEL) bad_stray++;
                for (int i = 0; i < len; i++) {
                    float one;
                    kgl_vexp_isa(isas[a], buf + off + i, &one, 1);
                    if (fbits(one) != fbits(o[i])) bad_pos++;
                }
                kgl_vexp_isa(isas[a], buf + off, buf + off, len);
                if (!same_bits(buf + off, o, (size_t)len)) bad_inplace++;
                if (a > 0 && !same_bits(o, out[0] + GUARD + (15 - off), (size_t)len)) bad_isa++;
            }
        }
    CHECK(bad_pos == 0);
    CHECK(bad_stray == 0);
    CHECK(bad_inplace == 0);
    CHECK(bad_isa == 0);
    float z = 0.25f, y1, y2;
    kgl_vexp(&z, &y1, 1);
    kgl_vexp_isa(kgl_isa_active(), &z, &y2, 1);
    CHECK(fbits(y1) == fbits(y2));
}

/* ------------------------------------------------------------- softmax */

enum { SM_KINDS = 11, SM_MAXN = 14541 };
static const char *const sm_kind_name[SM_KINDS] = {
    "N(0,1)",    "N(0,30^2)", "1000+N", "-inf mix",  "1e30 spread", "+-50 saturated", "-FLT_MAX..0",
    "equal",     "one alive", "-95..-90 (subnormal exps)",         "-42..0 (exps over 60 binades)"};

static void sm_fill(frng *r, float *z, int n, int kind)
{
    for (int j = 0; j < n; j++) switch (kind) {
        case 0: z[j] = (float)frng_norm(r); break;
        case 1: z[j] = (float)(30 * frng_norm(r)); break;
        case 2: z[j] = (float)(1000 + 5 * frng_norm(r)); break;                                /* large offset */
        case 3: z[j] = frng_unif(r) < 0.3 ? -INFINITY : (float)(3 * frng_norm(r)); break;    /* masked entries */
        case 4: z[j] = (float)((2 * frng_unif(r) - 1) * 1e30); break;                         /* huge spread */
        case 5: z[j] = (float)((frng_unif(r) < 0.5 ? -50.0 : 50.0) + frng_norm(r)); break;   /* saturated */
        case 6: z[j] = (float)(-FLT_MAX * frng_unif(r)); break;                               /* exps underflow */
        case 7: z[j] = 7.25f; break;                                                          /* all equal */
        case 8: z[j] = j == n / 2 ? 1.0f : -INFINITY; break;                                  /* one alive */
        case 9: z[j] = j == 0 ? 0.0f : (float)(-95 + 5 * frng_unif(r)); break;                /* subnormal exps */
        default: z[j] = (float)(-42 * frng_unif(r)); break; /* S's double sum rounds: its order shows */
        }
}

/* Σ t_j in vmath.h's order: element j in lane j mod 16 (lanes start at +0),
 * then lanes i and i + 8, i and i + 4, i and i + 2, 0 and 1. */
static double documented_sum(const double *t, int n)
{
    double l[16] = {0};
    for (int j = 0; j < n; j++) l[j % 16] += t[j];
    for (int w = 8; w > 0; w /= 2)
        for (int i = 0; i < w; i++) l[i] += l[i + w];
    return l[0];
}

/* kgl_softmax_row as vmath.h specifies it, from kgl_vexp (tested above):
 * e = exp(z − m) in float, S in double in the documented order, p = e ·
 * (float)(1 / S), returns m + log S. */
static double documented_softmax(const float *z, float *p, int n)
{
    static double e[SM_MAXN];
    float m = -INFINITY;
    for (int j = 0; j < n; j++)
        if (z[j] > m) m = z[j];
    if (m == -INFINITY) {
        for (int j = 0; j < n; j++) p[j] = 0;
        return -INFINITY;
    }
    for (int j = 0; j < n; j++) p[j] = z[j] - m;
    kgl_vexp_isa(KGL_ISA_PORTABLE, p, p, n);
    for (int j = 0; j < n; j++) e[j] = p[j];
    double s = documented_sum(e, n);
    float r = (float)(1.0 / s);
    for (int j = 0; j < n; j++) p[j] = p[j] * r;
    return m + log(s);
}

/* The backward as specified: gp = Σ (double)p_k g_k in the documented order,
 * rounded to float; dz_j = p_j (g_j − gp) in float. */
static void documented_backward(const float *p, const float *g, float *dz, int n)
{
    static double t[SM_MAXN];
    for (int j = 0; j < n; j++) t[j] = (double)p[j] * g[j];
    float gp = (float)documented_sum(t, n);
    for (int j = 0; j < n; j++) dz[j] = p[j] * (g[j] - gp);
}

/* buf[0, n + 2 GUARD) but buf[at, at + n) still holds the sentinel. */
static bool untouched(const float *buf, int at, int n)
{
    for (int j = 0; j < n + 2 * GUARD; j++)
        if ((j < at || j >= at + n) && buf[j] != SENTINEL) return false;
    return true;
}

/* kgl_softmax_row, its log-sum-exp and its backward on every path, for
 * lengths 1..70 (every tail), 127..129, 1000 and 14541, ten kinds of rows;
 * against long double references of the same float inputs.
 * Tolerances (u = 2^-24, the float unit round-off; m = max z; d_j = z_j − m):
 *  - p_j within (7 + |d_j| + Σ_k p_k |d_k|) u p_j + 2^-148: z_j − m rounds
 *    once in float (relative u on d_j, so |d_j| u on exp(d_j)); the exp
 *    errs by < 1 ulp (<= 2u relative); S, summed in double (n 2^-53, below
 *    u here), inherits the exps' errors, at most 2u + Σ p_k |d_k| u
 *    relative; (float)(1/S) and the product round once each (u + u); the
 *    2^-148 covers subnormal exps and p (absolute 2^-149 each);
 *  - the log-sum-exp (double) within (2 + Σ p_k |d_k|) u + n 2^-53 +
 *    2^-52 |lse|: log S inherits S's relative error as an absolute one;
 *  - |Σ p − 1| <= 2u + n 2^-52: the exps cancel (S is their own sum, to
 *    n 2^-53), leaving the rounding of 1/S and of each product;
 *  - nothing is written outside the n outputs (masked tails);
 *  - p, the log-sum-exp and the backward are, bit for bit, what vmath.h
 *    specifies (documented_softmax / documented_backward below);
 *  - backward vs p_j (g_j − Σ p_k g_k) in long double: |err_j| <= (3u +
 *    n 2^-52) p_j (|g_j| + Σ |p_k g_k|) + 2^-148: the products p_k g_k are
 *    exact in double and summed to n 2^-53, gp rounds to float (u), g_j − gp
 *    and the product by p_j round once each. */
TEST(f32_softmax_row_against_long_double_on_every_path)
{
    kgl_isa isas[3];
    int ni = isa_list(isas);
    static float z[SM_MAXN + 2 * GUARD], p[3][SM_MAXN + 8], q[SM_MAXN + 8], g[SM_MAXN + 8], d[3][SM_MAXN + 8],
        d2[SM_MAXN + 2 * GUARD];
    int lens[80], nl = 0;
    for (int n = 1; n <= 70; n++) lens[nl++] = n;
    lens[nl++] = 127, lens[nl++] = 128, lens[nl++] = 129, lens[nl++] = 1000, lens[nl++] = SM_MAXN;
    frng r = {4711};
    int bad_p[SM_KINDS] = {0}, bad_lse[SM_KINDS] = {0}, bad_sum = 0, bad_isa = 0, bad_align = 0, bad_inplace = 0;
    int bad_bw = 0, bad_bw_isa = 0, bad_bw_align = 0, bad_bw_add = 0, bad_stray = 0, bad_spec = 0, rows = 0;
    double worst_p = 0, worst_sum = 0, worst_bw = 0;
    for (int li = 0; li < nl; li++) {
        int n = lens[li];
        for (int kind = 0; kind < SM_KINDS; kind++)
            for (int rep = 0; rep < (n > 200 ? 1 : 3); rep++) {
                rows++;
                sm_fill(&r, z, n, kind);
                double lse[3];
                for (int a = 0; a < ni; a++) lse[a] = kgl_softmax_row_isa(isas[a], z, p[a], n);
                float m = z[0];
                for (int j = 1; j < n; j++)
                    if (z[j] > m) m = z[j];
                long double s = 0, psum = 0, spread = 0;
                if (m != -INFINITY)
                    for (int j = 0; j < n; j++) s += expl((long double)z[j] - m);
                for (int j = 0; j < n; j++)
                    if (z[j] != -INFINITY) spread += expl((long double)z[j] - m) / s * ((long double)m - z[j]);
                for (int j = 0; j < n; j++) {
                    long double pr = m == -INFINITY ? 0.0L : expl((long double)z[j] - m) / s;
                    long double dj = z[j] == -INFINITY ? 0.0L : (long double)m - z[j];
                    long double tol = (7 + dj + spread) * U * pr + 0x1p-148L;
                    long double err = fabsl(p[0][j] - pr);
                    if (!(err <= tol)) bad_p[kind]++;
                    else if (pr > 1e-30L && (double)(err / (pr * U) - dj - spread) > worst_p)
                        worst_p = (double)(err / (pr * U) - dj - spread); /* the part of the bound that is 7 */
                    psum += p[0][j];
                }
                if (m == -INFINITY) { /* a fully masked row: p = 0, returns -inf */
                    if (!(lse[0] == -INFINITY && psum == 0)) bad_lse[kind]++;
                } else {
                    long double lref = (long double)m + logl(s);
                    long double tol = (2 + spread) * U + n * 0x1p-53L + 0x1p-52L * fabsl(lref);
                    if (!(fabsl(lse[0] - lref) <= tol)) bad_lse[kind]++;
                    double se = (double)fabsl(psum - 1);
                    if (!(se <= 2 * U + n * 0x1p-52)) bad_sum++;
                    if (se / U > worst_sum) worst_sum = se / U;
                }
                for (int a = 1; a < ni; a++)
                    if (!same_bits(p[a], p[0], (size_t)n) || dbits(lse[a]) != dbits(lse[0])) bad_isa++;
                double lspec = documented_softmax(z, q, n);
                if (!same_bits(q, p[0], (size_t)n) || dbits(lspec) != dbits(lse[0])) bad_spec++;
                /* the row at +1 float, the output at +3 (nothing written around it), and in
                 * place (p == z) */
                for (int a = 0; a < ni; a++) {
                    memcpy(q + 1, z, (size_t)n * sizeof *z);
                    for (int j = 0; j < n + 2 * GUARD; j++) d2[j] = SENTINEL;
                    double l2 = kgl_softmax_row_isa(isas[a], q + 1, d2 + 3, n);
                    if (!same_bits(d2 + 3, p[0], (size_t)n) || dbits(l2) != dbits(lse[0])) bad_align++;
                    if (!untouched(d2, 3, n)) bad_stray++;
                    double l3 = kgl_softmax_row_isa(isas[a], q + 1, q + 1, n);
                    if (!same_bits(q + 1, p[0], (size_t)n) || dbits(l3) != dbits(lse[0])) bad_inplace++;
                }

                if (m == -INFINITY) continue;
                /* backward */
                for (int j = 0; j < n; j++) g[j] = (float)frng_norm(&r);
                for (int a = 0; a < ni; a++) kgl_softmax_row_backward_isa(isas[a], p[0], g, d[a], n, 0);
                long double dot = 0, absdot = 0;
                for (int k = 0; k < n; k++) {
                    dot += (long double)p[0][k] * g[k];
                    absdot += fabsl((long double)p[0][k] * g[k]);
                }
                for (int j = 0; j < n; j++) {
                    long double ref = (long double)p[0][j] * ((long double)g[j] - dot);
                    long double scale = (long double)p[0][j] * (fabsl((long double)g[j]) + absdot);
                    long double err = fabsl(d[0][j] - ref);
                    if (!(err <= (3 * U + n * 0x1p-52L) * scale + 0x1p-148L)) bad_bw++;
                    if (scale > 0x1p-100L && (double)(err / scale) > worst_bw) worst_bw = (double)(err / scale);
                }
                for (int a = 1; a < ni; a++)
                    if (!same_bits(d[a], d[0], (size_t)n)) bad_bw_isa++;
                documented_backward(p[0], g, q, n);
                if (!same_bits(q, d[0], (size_t)n)) bad_spec++;
                for (int a = 0; a < ni; a++) {
                    memcpy(q + 1, p[0], (size_t)n * sizeof *z);
                    memcpy(d2 + 3, g, (size_t)n * sizeof *z);
                    float *dz = z + 2; /* a third alignment for the output */
                    for (int j = 0; j < n + 2 * GUARD; j++) z[j] = SENTINEL;
                    kgl_softmax_row_backward_isa(isas[a], q + 1, d2 + 3, dz, n, 0);
                    if (!same_bits(dz, d[0], (size_t)n)) bad_bw_align++;
                    if (!untouched(z, 2, n)) bad_stray++;
                    /* add = 1: dz0 + (the add = 0 result), bit for bit */
                    for (int j = 0; j < n; j++) dz[j] = 0.5f * (float)j - 3;
                    kgl_softmax_row_backward_isa(isas[a], q + 1, d2 + 3, dz, n, 1);
                    for (int j = 0; j < n; j++)
                        if (fbits(dz[j]) != fbits((0.5f * (float)j - 3) + d[0][j])) bad_bw_add++;
                }
            }
    }
    for (int kind = 0; kind < SM_KINDS; kind++) {
        if (bad_p[kind] || bad_lse[kind])
            printf("    %s rows: %d p and %d lse out of tolerance\n", sm_kind_name[kind], bad_p[kind], bad_lse[kind]);
        CHECK(bad_p[kind] == 0);
        CHECK(bad_lse[kind] == 0);
    }
    printf("    softmax_row f32: %d rows; worst |p - p*| / p* - (|d| + sum p|d|) u = %.2g u (bound 7), worst |sum p - 1| "
           "= %.2g u, worst backward err / (p (|g| + sum|pg|)) = %.2g u\n",
           rows, worst_p, worst_sum, worst_bw / U);
    CHECK(bad_sum == 0);
    CHECK(bad_isa == 0);
    CHECK(bad_align == 0);
    CHECK(bad_inplace == 0);
    CHECK(bad_bw == 0);
    CHECK(bad_bw_isa == 0);
    CHECK(bad_bw_align == 0);
    CHECK(bad_bw_add == 0);
    CHECK(bad_stray == 0);
    CHECK(bad_spec == 0);

    /* Backward rows whose float gp depends on the order of the double sum
     * (Σ p g is exact in double and rounds to float once, so random rows
     * almost never show it): 1 + 2^-23 in lane 0 and −2^-24 in lane 1 make
     * the float midpoint 1 + 2^-24; then pairs +t, −t (|t| ~ 2^-50..2^-56)
     * that cancel exactly, and one ±2^-58: the exact sum is the midpoint
     * ± 2^-58, but which of the t survive their meeting with the midpoint
     * depends on the order, and decides the float gp (1 or 1 + 2^-23). Every
     * path must give the documented order's bits; the rows do tell orders
     * apart (a sequential sum differs on some). */
    {
        enum { NB = 70 };
        float pb[NB], gb[NB], want[NB], got[NB], seq[NB];
        int rows_differ = 0, bad_order = 0;
        for (int row = 0; row < 400; row++) {
            int nb = 16 + (int)(frng_next(&r) % (NB - 15));
            pb[0] = 1, gb[0] = 1 + 0x1p-23f;
            pb[1] = 1, gb[1] = -0x1p-24f;
            for (int j = 2; j + 1 < nb; j += 2) {
                float t = ldexpf((float)(frng_next(&r) >> 40 | 1u << 23), -23 - 50 - (int)(frng_next(&r) % 7));
                pb[j] = pb[j + 1] = 0x1p-25f;
                gb[j] = t * 0x1p25f, gb[j + 1] = -t * 0x1p25f;
            }
            if (nb % 2) pb[nb - 1] = 0x1p-29f, gb[nb - 1] = frng_next(&r) & 1 ? 0x1p-29f : -0x1p-29f;
            documented_backward(pb, gb, want, nb);
            double t = 0;
            for (int j = 0; j < nb; j++) t += (double)pb[j] * gb[j];
            for (int j = 0; j < nb; j++) seq[j] = pb[j] * (gb[j] - (float)t);
            rows_differ += !same_bits(want, seq, (size_t)nb);
            for (int a = 0; a < ni; a++) {
                kgl_softmax_row_backward_isa(isas[a], pb, gb, got, nb, 0);
                bad_order += !same_bits(got, want, (size_t)nb);
            }
        }
        printf("    backward order rows: %d of 400 differ between the documented and a sequential sum\n",
               rows_differ);
        CHECK(rows_differ > 0);
        CHECK(bad_order == 0);
    }

    /* specials: +inf or NaN in the row gives NaN; n = 1 gives p = 1, lse = z */
    for (int a = 0; a < ni; a++) {
        float zz[5] = {1, INFINITY, 2, 3, 4}, pp[5];
        double l = kgl_softmax_row_isa(isas[a], zz, pp, 5);
        CHECK(isnan(l) && isnan(pp[0]));
        zz[1] = NAN;
        l = kgl_softmax_row_isa(isas[a], zz, pp, 5);
        CHECK(isnan(l) && isnan(pp[0]) && isnan(pp[4]));
        float one = 3.5f;
        l = kgl_softmax_row_isa(isas[a], &one, pp, 1);
        CHECK(pp[0] == 1.0f && l == 3.5);
    }
    /* the dispatched entry points are the active path */
    float zz[19], pa[19], pb[19], ga[19], da[19], db[19];
    for (int j = 0; j < 19; j++) zz[j] = (float)frng_norm(&r), ga[j] = (float)frng_norm(&r);
    double la = kgl_softmax_row(zz, pa, 19), lb = kgl_softmax_row_isa(kgl_isa_active(), zz, pb, 19);
    CHECK(dbits(la) == dbits(lb) && same_bits(pa, pb, 19));
    kgl_softmax_row_backward(pa, ga, da, 19, 0);
    kgl_softmax_row_backward_isa(kgl_isa_active(), pa, ga, db, 19, 0);
    CHECK(same_bits(da, db, 19));
}

/* kgl_softmax_block (short rows: one vexp call for the block, the max and
 * sum passes written as the portable row's) is kgl_softmax_row row by row,
 * to the bit, lse included, for every length 1..70 (both sides of its
 * short-row threshold), with a fully masked row, a NaN, saturated rows and a
 * masked entry; in place too. */
TEST(f32_softmax_block_equals_softmax_row_bit_for_bit)
{
    frng r = {99};
    enum { ROWS = 70, MAXN = 70 };
    static float z[ROWS * MAXN], pb[ROWS * MAXN], pr[ROWS * MAXN];
    static double lb[ROWS], lr[ROWS];
    long differ = 0, compared = 0;
    for (int n = 1; n <= MAXN; n++) {
        for (int k = 0; k < ROWS * n; k++) z[k] = (float)(3 * frng_norm(&r));
        for (int j = 0; j < n; j++) z[5 * n + j] = -INFINITY;              /* a fully masked row */
        z[7 * n + n / 2] = NAN;                                             /* a NaN */
        for (int j = 0; j < n; j++) z[9 * n + j] = j % 3 ? -80.0f : 80.0f;  /* saturated */
        for (int j = 0; j < n; j++) z[10 * n + j] = j % 2 ? -1e30f : 0.0f;  /* exps far below 2^-149 */
        z[11 * n] = -INFINITY;                                              /* one masked entry */
        kgl_softmax_block(z, pb, ROWS, n, lb);
        for (int i = 0; i < ROWS; i++) lr[i] = kgl_softmax_row(z + i * n, pr + i * n, n);
        differ += memcmp(pb, pr, (size_t)ROWS * n * sizeof(float)) != 0;
        differ += memcmp(lb, lr, sizeof lb) != 0;
        compared++;
        /* in place, as the ops call it */
        memcpy(pb, z, (size_t)ROWS * n * sizeof(float));
        kgl_softmax_block(pb, pb, ROWS, n, NULL);
        differ += memcmp(pb, pr, (size_t)ROWS * n * sizeof(float)) != 0;
    }
    CHECK(compared == MAXN);
    CHECK(differ == 0);
    CHECK(pr[5 * MAXN] == 0.0f && lr[5] == -INFINITY); /* the masked row of the last length */
}

/* ---------------------------------------------------------------- Adam */

/* The float Adam loop exactly as vmath.h writes it (params.c's scalar loop
 * must be this one). */
static void adam_documented_loop(float *theta, const float *g, float *m, float *v, size_t n, double beta1,
                                 double beta2, double eps, double step_size, double bc2_sqrt, double keep)
{
    float b1c = (float)(1.0 - beta1), b2 = (float)beta2, b2c = (float)(1.0 - beta2);
    float ep = (float)eps, st = (float)step_size, bc = (float)bc2_sqrt, kp = (float)keep;
    for (size_t i = 0; i < n; i++) {
        if (kp != 1.0f) theta[i] *= kp;
        m[i] += b1c * (g[i] - m[i]);
        v[i] = v[i] * b2 + b2c * g[i] * g[i];
        float denom = sqrtf(v[i]) / bc + ep;
        theta[i] -= st * (m[i] / denom);
    }
}

/* Five steps of Adam and of AdamW on every path and the dispatched entry,
 * sizes 1..70 (every tail of the 8- and 16-wide paths) and 10007, at
 * offsets 0..3 (misaligned), gradients spanning 1e-4..1e2 with exact zeros,
 * per-step scalars computed as kgl_optim_step computes them (double), one
 * case with lr = 3e-4, β2 = 0.98, and one with a keep that rounds to 1.0f:
 * θ, m and v identical bit for bit to the documented loop. */
TEST(f32_adam_update_same_bits_as_the_documented_loop)
{
    enum { N = 10007 };
    static float w0[N + 4], m0[N + 4], v0[N + 4], g[N + 4], w1[N + 4], m1[N + 4], v1[N + 4];
    size_t sizes[72];
    int ns = 0;
    for (int s = 1; s <= 70; s++) sizes[ns++] = (size_t)s;
    sizes[ns++] = N;
    frng r = {31337};
    for (int isa = -1; isa <= (int)kgl_isa_best(); isa++)
        for (int wd = 0; wd < 3; wd++) {
            int bad = 0;
            for (int si = 0; si < ns; si++) {
                size_t n = sizes[si];
                int off = si & 3;
                double lr = si % 5 == 3 ? 3e-4 : 0.01, beta1 = 0.9, beta2 = si % 5 == 3 ? 0.98 : 0.999;
                double weight_decay = wd == 0 ? 0.0 : wd == 1 ? 0.01 : 1e-6; /* 1 - 1e-8 is 1.0f */
                for (size_t i = 0; i < n; i++) {
                    w0[i] = w1[off + i] = (float)frng_norm(&r);
                    m0[i] = m1[off + i] = 0;
                    v0[i] = v1[off + i] = 0;
                }
                for (int step = 1; step <= 5; step++) {
                    for (size_t i = 0; i < n; i++)
                        g[off + i] = (i % 13 == 0) ? 0.0f : (float)(frng_norm(&r) * pow(10.0, (double)(i % 7) - 4));
                    double bc1 = 1.0 - pow(beta1, step), bc2_sqrt = sqrt(1.0 - pow(beta2, step));
                    double step_size = lr / bc1, keep = weight_decay != 0 ? 1.0 - lr * weight_decay : 1.0;
                    adam_documented_loop(w0, g + off, m0, v0, n, beta1, beta2, 1e-8, step_size, bc2_sqrt, keep);
                    if (isa < 0)
                        kgl_adam_update(w1 + off, g + off, m1 + off, v1 + off, n, beta1, beta2, 1e-8, step_size,
                                        bc2_sqrt, keep);
                    else
                        kgl_adam_update_isa((kgl_isa)isa, w1 + off, g + off, m1 + off, v1 + off, n, beta1, beta2,
                                            1e-8, step_size, bc2_sqrt, keep);
                    if (!same_bits(w0, w1 + off, n) || !same_bits(m0, m1 + off, n) || !same_bits(v0, v1 + off, n))
                        bad++;
                }
            }
            if (bad)
                printf("    %s, weight decay case %d: %d steps differ from the documented loop\n",
                       isa < 0 ? "kgl_adam_update" : kgl_isa_name((kgl_isa)isa), wd, bad);
            CHECK(bad == 0);
        }
}

#include "softmax_masked_rows.h"
TEST(f32_softmax_masked_row_is_all_minus_inf_and_a_nan_row_stays_nan)
{
    check_softmax_masked_and_nan_rows(T);
}

/* GELU in float32 (ops.c: Φ from erfc, the exponent P(u) − z² rounded to
 * float before kgl_vexp), against x·erfc(−x/√2)/2 in double, on 4,801
 * points of [−12, 12] where y is a normal float. Per point, the relative
 * error is at most (z² + 4)·U, z² = x²/2: the exponent's rounding, |P − z²|
 * ≤ z² + 1.3, times U; kgl_vexp's 0.73 ulp (1.5 U); y's own rounding (1 U);
 * the double arithmetic around them (≪ U). (Measured: 3.9e-6 at x ≈ −11.5,
 * where z² = 66.) And the tail stays: GELU(−10) = −7.62e-23 is a normal
 * float, not the 0 that 1 + erf(x/√2) would give. */
TEST(gelu_f32_error_follows_the_exponent)
{
    kgl_tape t;
    kgl_tape_init(&t);
    enum { N = 4801 };
    kgl_tensor *x = kgl_tensor_new(&t, 1, N, false);
    for (int i = 0; i < N; i++) x->data[i] = (float)(-12.0 + 24.0 * i / (N - 1));
    kgl_tensor *y = kgl_gelu(&t, x);
    int over = 0, checked = 0;
    for (int i = 0; i < N; i++) {
        double v = x->data[i], want = v * 0.5 * erfc(-v * 0.70710678118654752440);
        if (!(fabs(want) >= FLT_MIN)) continue;
        checked++;
        double rel = fabs(y->data[i] - want) / fabs(want);
        over += !(rel <= (0.5 * v * v + 4) * U);
    }
    CHECK(checked > 4700);
    CHECK(over == 0);
    int at_minus_10 = (int)lround((-10.0 + 12.0) * (N - 1) / 24.0);
    CHECK(x->data[at_minus_10] == -10.0f);
    CHECK(fabs(y->data[at_minus_10] / -7.619853024160593e-23 - 1.0) <= 60 * U);
    kgl_tape_free(&t);
}
