/* rng.c — the explicit, seeded random number generator (see kgl.h). */
#include <math.h>
#include <string.h>

#include "internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

/* kgl_rng_uniform's draws, in order, in one loop of this file, where the
   generator inlines and its state stays in registers */
static void keep_mask_one_stream(kgl_rng *rng, unsigned char *keep, size_t n, double p)
{
    for (size_t i = 0; i < n; i++) keep[i] = unit_interval(kgl_rng_next(rng)) >= p;
}

static void keep_mask_lanes(kgl_isa isa, kgl_rng *rng, unsigned char *keep, size_t n, double p);
static bool keep_mask_in_lanes(kgl_isa isa, size_t n, double p);

void kgl_rng_keep_mask_isa(kgl_isa isa, kgl_rng *rng, unsigned char *keep, size_t n, double p)
{
    isa = isa < kgl_isa_best() ? isa : kgl_isa_best();
    if (keep_mask_in_lanes(isa, n, p)) keep_mask_lanes(isa, rng, keep, n, p);
    else keep_mask_one_stream(rng, keep, n, p);
}

void kgl_rng_keep_mask(kgl_rng *rng, unsigned char *keep, size_t n, double p)
{
    kgl_rng_keep_mask_isa(kgl_isa_active(), rng, keep, n, p);
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

/* xⁿ mod P, n's bits from the highest one set (the costly half of a jump: about 2 log₂ n products) */
static gf2_poly jump_polynomial(uint64_t n)
{
    gf2_poly c = {{1, 0, 0, 0}};
    int top = 63;
    while (top >= 0 && !(n >> top & 1)) top--;
    for (int bit = top; bit >= 0; bit--) {
        c = poly_product(&c, &c);
        if (n >> bit & 1) poly_times_x(&c);
    }
    return c;
}

/* s ← c(M) s: 256 steps of the generator (the cheap half of a jump) */
static void jump_by(kgl_rng *rng, const gf2_poly *c)
{
    uint64_t sum[4] = {0, 0, 0, 0};
    for (int i = 0; i < 256; i++) {
        uint64_t take = c->w[i / 64] >> (i % 64) & 1;
        for (int k = 0; k < 4; k++) sum[k] ^= -take & rng->s[k];
        kgl_rng_next(rng);
    }
    memcpy(rng->s, sum, sizeof sum);
}

void kgl_rng_advance(kgl_rng *rng, uint64_t n)
{
    gf2_poly c = jump_polynomial(n);
    jump_by(rng, &c);
}

/* ---- A long mask in eight lanes ----------------------------------------------
 * One stream runs at the latency of its state update (each draw needs the one
 * before): about 1.5 ns a draw, 4.6 ms for the 3 million of FB15k-237's input
 * dropout. So a long mask is cut into eight runs of equal length `len` (a
 * multiple of 8), run j drawn by a copy of the generator jumped j · len draws
 * on (one jump polynomial, applied seven times in turn), the eight copies in
 * the eight 64-bit lanes of AVX-512 registers (AVX2: two registers of four);
 * the last copy then draws on to the mask's end alone, and its state is the
 * stream's there. Whether a draw keeps: its 53 top bits u give u · 2⁻⁵³ >= p,
 * and since p · 2⁵³ is exact (p in [0, 1)) and u an integer, that is
 * u >= ⌈p · 2⁵³⌉ in integers. Every operation is on integers, so the mask and
 * the final state are the one stream's to the bit (tests/engine_ops.c): 0.9 ms
 * for those 3 million draws on one Zen 4 core (AVX2: 1.15 ms). */
#define MASK_LANES 8
/* Below this many draws one stream: the jump polynomial costs about 15 µs (10,000 draws). */
#define MASK_LANES_MIN 65536

static bool keep_mask_in_lanes(kgl_isa isa, size_t n, double p)
{
#if defined(__x86_64__)
    return isa >= KGL_ISA_AVX2 && n >= MASK_LANES_MIN && p >= 0 && p < 1;
#else
    (void)isa, (void)n, (void)p;
    return false;
#endif
}

#if defined(__x86_64__)
/* The eight copies' states word by word (w[k][j] = lane j's s[k]: a vector register's lanes), and back. */
static inline void lanes_to_words(const kgl_rng lane[MASK_LANES], uint64_t w[4][MASK_LANES])
{
    for (int j = 0; j < MASK_LANES; j++)
        for (int k = 0; k < 4; k++) w[k][j] = lane[j].s[k];
}

static inline void words_to_lanes(uint64_t w[4][MASK_LANES], kgl_rng lane[MASK_LANES])
{
    for (int j = 0; j < MASK_LANES; j++)
        for (int k = 0; k < 4; k++) lane[j].s[k] = w[k][j];
}

/* Eight draws of each lane, byte d of masks holding draw d's keep bits (lane j in bit j), into keep + j · len + i:
   bit j of each byte, shifted down to bit 0, is lane j's byte. */
static inline void spread_lane_bytes(uint64_t masks, unsigned char *keep, size_t len, size_t i)
{
    for (int j = 0; j < MASK_LANES; j++) {
        uint64_t bytes = masks >> j & 0x0101010101010101ULL;
        memcpy(keep + (size_t)j * len + i, &bytes, 8);
    }
}

/* The eight copies in lanes, len draws each (len a multiple of 8), into keep + j · len. */
__attribute__((target("avx512f"))) static void keep_mask_lanes_avx512(kgl_rng lane[MASK_LANES], unsigned char *keep,
                                                                      size_t len, uint64_t threshold)
{
    uint64_t w[4][MASK_LANES];
    lanes_to_words(lane, w);
    __m512i s0 = _mm512_loadu_si512(w[0]), s1 = _mm512_loadu_si512(w[1]), s2 = _mm512_loadu_si512(w[2]),
            s3 = _mm512_loadu_si512(w[3]), t = _mm512_set1_epi64((long long)threshold);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t masks = 0; /* byte d: draw i + d of each lane, lane j in bit j */
        for (int d = 0; d < 8; d++) {
            /* kgl_rng_next, lane by lane: result rotl(s1 · 5, 7) · 9 (the products as shifts and adds) */
            __m512i s1x5 = _mm512_add_epi64(_mm512_slli_epi64(s1, 2), s1);
            __m512i rot = _mm512_rol_epi64(s1x5, 7);
            __m512i result = _mm512_add_epi64(_mm512_slli_epi64(rot, 3), rot);
            __m512i shifted = _mm512_slli_epi64(s1, 17);
            s2 = _mm512_xor_si512(s2, s0);
            s3 = _mm512_xor_si512(s3, s1);
            s1 = _mm512_xor_si512(s1, s2);
            s0 = _mm512_xor_si512(s0, s3);
            s2 = _mm512_xor_si512(s2, shifted);
            s3 = _mm512_rol_epi64(s3, 45);
            __mmask8 kept = _mm512_cmpge_epu64_mask(_mm512_srli_epi64(result, 11), t);
            masks |= (uint64_t)kept << (8 * d);
        }
        spread_lane_bytes(masks, keep, len, i);
    }
    _mm512_storeu_si512(w[0], s0), _mm512_storeu_si512(w[1], s1);
    _mm512_storeu_si512(w[2], s2), _mm512_storeu_si512(w[3], s3);
    words_to_lanes(w, lane);
}

/* The same in AVX2: lanes 0-3 in one register, 4-7 in another; the rotations as two shifts, and the
   comparison signed (u and the threshold are below 2⁵³): a lane keeps where the threshold is not above u. */
__attribute__((target("avx2"))) static inline __m256i rotl4(__m256i x, int k)
{
    return _mm256_or_si256(_mm256_slli_epi64(x, k), _mm256_srli_epi64(x, 64 - k));
}

__attribute__((target("avx2"))) static inline unsigned next4_kept(__m256i s[4], __m256i t)
{
    __m256i s1x5 = _mm256_add_epi64(_mm256_slli_epi64(s[1], 2), s[1]);
    __m256i rot = rotl4(s1x5, 7);
    __m256i result = _mm256_add_epi64(_mm256_slli_epi64(rot, 3), rot);
    __m256i shifted = _mm256_slli_epi64(s[1], 17);
    s[2] = _mm256_xor_si256(s[2], s[0]);
    s[3] = _mm256_xor_si256(s[3], s[1]);
    s[1] = _mm256_xor_si256(s[1], s[2]);
    s[0] = _mm256_xor_si256(s[0], s[3]);
    s[2] = _mm256_xor_si256(s[2], shifted);
    s[3] = rotl4(s[3], 45);
    __m256i dropped = _mm256_cmpgt_epi64(t, _mm256_srli_epi64(result, 11));
    return ~(unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(dropped)) & 0xF;
}

__attribute__((target("avx2"))) static void keep_mask_lanes_avx2(kgl_rng lane[MASK_LANES], unsigned char *keep,
                                                                 size_t len, uint64_t threshold)
{
    uint64_t w[4][MASK_LANES];
    lanes_to_words(lane, w);
    __m256i lo[4], hi[4], t = _mm256_set1_epi64x((long long)threshold);
    for (int k = 0; k < 4; k++)
        lo[k] = _mm256_loadu_si256((const __m256i *)w[k]), hi[k] = _mm256_loadu_si256((const __m256i *)(w[k] + 4));
    for (size_t i = 0; i < len; i += 8) {
        uint64_t masks = 0; /* as in AVX-512: byte d holds draw i + d of each lane, lane j in bit j */
        for (int d = 0; d < 8; d++) {
            unsigned kept = next4_kept(lo, t);
            kept |= next4_kept(hi, t) << 4;
            masks |= (uint64_t)kept << (8 * d);
        }
        spread_lane_bytes(masks, keep, len, i);
    }
    for (int k = 0; k < 4; k++)
        _mm256_storeu_si256((__m256i *)w[k], lo[k]), _mm256_storeu_si256((__m256i *)(w[k] + 4), hi[k]);
    words_to_lanes(w, lane);
}
#endif

static void keep_mask_lanes(kgl_isa isa, kgl_rng *rng, unsigned char *keep, size_t n, double p)
{
#if defined(__x86_64__)
    size_t len = n / MASK_LANES / 8 * 8;
    kgl_rng lane[MASK_LANES];
    gf2_poly run = jump_polynomial(len);
    lane[0] = *rng;
    for (int j = 1; j < MASK_LANES; j++) lane[j] = lane[j - 1], jump_by(&lane[j], &run);
    uint64_t threshold = (uint64_t)ceil(p * 0x1p53);
    if (isa == KGL_ISA_AVX512) keep_mask_lanes_avx512(lane, keep, len, threshold);
    else keep_mask_lanes_avx2(lane, keep, len, threshold);
    *rng = lane[MASK_LANES - 1];
    keep_mask_one_stream(rng, keep + MASK_LANES * len, n - MASK_LANES * len, p);
#else
    (void)isa;
    keep_mask_one_stream(rng, keep, n, p);
#endif
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
