/* rng.c — the explicit, seeded random number generator (see kgl.h). */
#include <math.h>
#include <string.h>

#include "kgl/engine.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void kgl_rng_seed(kgl_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t kgl_rng_next(kgl_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* The top 53 bits of a draw as a double in [0, 1). */
static inline double unit_interval(uint64_t x) { return (double)(x >> 11) * 0x1.0p-53; }

double kgl_rng_uniform(kgl_rng *rng) { return unit_interval(kgl_rng_next(rng)); }

void kgl_rng_keep_mask(kgl_rng *rng, unsigned char *keep, size_t n, double p)
{
    /* kgl_rng_uniform's draws, in order, in one loop of this file, where the
       generator inlines and its state stays in registers */
    for (size_t i = 0; i < n; i++) keep[i] = unit_interval(kgl_rng_next(rng)) >= p;
}

/* ---- Jumping ahead: the state n draws on, without the n draws ----------------
 * The state update of xoshiro256 is linear over GF(2): s ← M s for a fixed
 * 256 × 256 bit matrix M (XORs, shifts and rotations of bits). M satisfies its
 * characteristic polynomial P (Cayley–Hamilton), so with
 *     c(x) = xⁿ mod P(x) = Σ_{i<256} c_i xⁱ,
 * Mⁿ = c(M) and the state n draws on is Mⁿ s = Σ_i c_i Mⁱ s: run the generator
 * 256 steps from s and XOR together the states i whose c_i is 1. xⁿ mod P is
 * built from n's bits, high to low: square, then times x where the bit is 1
 * (about 2 log₂ n products of polynomials of degree < 256, microseconds).
 * P (degree 256, its x²⁵⁶ term implicit below) was found by Berlekamp–Massey
 * on one bit of the state sequence, and checked then against the authors'
 * published jump() constant, which is x^(2¹²⁸) mod P; the tests check jumps
 * against draws (up to a million) and that jumps compose. */
typedef struct gf2_poly {
    uint64_t w[4]; /* the coefficient of xⁱ is bit i % 64 of w[i / 64] */
} gf2_poly;

static const gf2_poly xoshiro256_charpoly = {
    {0x9d116f2bb0f0f001ULL, 0x0280002bcefd1a5eULL, 0x04b4edcf26259f85ULL, 0x0003c03c3f3ecb19ULL}};

/* a ← a · x mod P */
static void poly_times_x(gf2_poly *a)
{
    uint64_t overflow = a->w[3] >> 63; /* the x²⁵⁶ term, replaced by P's lower terms */
    for (int k = 3; k > 0; k--) a->w[k] = a->w[k] << 1 | a->w[k - 1] >> 63;
    a->w[0] <<= 1;
    for (int k = 0; k < 4; k++) a->w[k] ^= -overflow & xoshiro256_charpoly.w[k];
}

/* a · b mod P, Horner over b's bits from the highest: r ← r · x (+ a). */
static gf2_poly poly_product(const gf2_poly *a, const gf2_poly *b)
{
    gf2_poly r = {{0, 0, 0, 0}};
    for (int i = 255; i >= 0; i--) {
        poly_times_x(&r);
        uint64_t bit = b->w[i / 64] >> (i % 64) & 1;
        for (int k = 0; k < 4; k++) r.w[k] ^= -bit & a->w[k];
    }
    return r;
}

void kgl_rng_advance(kgl_rng *rng, uint64_t n)
{
    gf2_poly c = {{1, 0, 0, 0}}; /* xⁿ mod P, n's bits from the highest one set */
    int top = 63;
    while (top >= 0 && !(n >> top & 1)) top--;
    for (int bit = top; bit >= 0; bit--) {
        c = poly_product(&c, &c);
        if (n >> bit & 1) poly_times_x(&c);
    }
    uint64_t sum[4] = {0, 0, 0, 0};
    for (int i = 0; i < 256; i++) {
        uint64_t take = c.w[i / 64] >> (i % 64) & 1;
        for (int k = 0; k < 4; k++) sum[k] ^= -take & rng->s[k];
        kgl_rng_next(rng);
    }
    memcpy(rng->s, sum, sizeof sum);
}

/* kgl_rng_keep_mask_on: one block of the mask a task, each task's generator
   jumped to its block's first draw; the last block's leaves the stream's end. */
typedef struct mask_job {
    kgl_rng start, end;
    unsigned char *keep;
    size_t n, block;
    int tasks;
    double p;
} mask_job;

static void mask_block(void *ctx, int task, int worker)
{
    (void)worker;
    mask_job *J = ctx;
    kgl_rng r = J->start;
    size_t lo = (size_t)task * J->block, hi = task == J->tasks - 1 ? J->n : lo + J->block;
    if (lo) kgl_rng_advance(&r, lo);
    kgl_rng_keep_mask(&r, J->keep + lo, hi - lo, J->p);
    if (task == J->tasks - 1) J->end = r;
}

/* Below this many draws a mask is drawn here: a jump costs about as much as
   a few thousand draws, and waking a thread more. */
#define MASK_PARALLEL_MIN 65536

void kgl_rng_keep_mask_on(kgl_pool *pool, kgl_rng *rng, unsigned char *keep, size_t n, double p)
{
    int tasks = pool ? kgl_pool_threads(pool) : 1;
    if (tasks < 2 || n < MASK_PARALLEL_MIN) {
        kgl_rng_keep_mask(rng, keep, n, p);
        return;
    }
    mask_job J = {*rng, *rng, keep, n, n / (size_t)tasks, tasks, p};
    kgl_pool_run(pool, tasks, mask_block, &J);
    *rng = J.end;
}

double kgl_rng_normal(kgl_rng *rng)
{
    /* Box–Muller; 1 - u1 lies in (0, 1], so the log is finite. */
    double u1 = kgl_rng_uniform(rng);
    double u2 = kgl_rng_uniform(rng);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2) /* 2 pi */;
}

uint32_t kgl_rng_below(kgl_rng *rng, uint32_t n)
{
    /* Lemire (2019): the high half of a 32x32 product, rejecting the biased low part. */
    uint32_t x = (uint32_t)(kgl_rng_next(rng) >> 32);
    uint64_t m = (uint64_t)x * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            x = (uint32_t)(kgl_rng_next(rng) >> 32);
            m = (uint64_t)x * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

void kgl_rng_permutation(kgl_rng *rng, int *perm, int n)
{
    for (int k = 0; k < n; k++) perm[k] = k;
    for (int k = n - 1; k > 0; k--) {
        int j = (int)kgl_rng_below(rng, (uint32_t)k + 1);
        int tmp = perm[k];
        perm[k] = perm[j];
        perm[j] = tmp;
    }
}
