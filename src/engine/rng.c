/* rng.c — the explicit, seeded random number generator (see kgl.h). */
#include <math.h>

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
