/* emulated.h — what the emulated-ISA test programs (gemm_avx512.c,
 * vmath_avx512.c) share: a check that counts and prints, and a seeded
 * splitmix64 stream. Each program starts the stream from its own seed
 * (emul_seed) so that their inputs stay what they were. */
#ifndef KGL_TESTS_EMULATED_H
#define KGL_TESTS_EMULATED_H

#include <stdint.h>
#include <stdio.h>

static int n_pass, n_fail;

static void check(int ok, const char *what)
{
    if (ok) n_pass++;
    else n_fail++;
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
}

static uint64_t rs;
static void emul_seed(uint64_t seed) { rs = seed; }
static uint64_t rnext(void)
{
    uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* uniform on [0, 1) with 53 random bits */
static double runif(void) { return (double)(rnext() >> 11) * 0x1p-53; }

#endif
