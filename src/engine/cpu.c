/* cpu.c — the ISA the kernels dispatch on (see cpu.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "kgl/engine.h"

kgl_isa kgl_isa_best(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) return KGL_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return KGL_ISA_AVX2;
#endif
    return KGL_ISA_PORTABLE;
}

static kgl_isa active_isa;
static pthread_once_t active_once = PTHREAD_ONCE_INIT;

static void choose_isa(void)
{
    kgl_isa best = kgl_isa_best(), want = best;
    const char *env = getenv("KGL_ISA");
    if (env && strcmp(env, "portable") == 0) want = KGL_ISA_PORTABLE;
    else if (env && strcmp(env, "avx2") == 0) want = KGL_ISA_AVX2;
    active_isa = want < best ? want : best;
}

kgl_isa kgl_isa_active(void)
{
    pthread_once(&active_once, choose_isa);
    return active_isa;
}

const char *kgl_isa_name(kgl_isa isa)
{
    static const char *const names[] = {"portable", "avx2", "avx512"};
    return names[isa];
}

const char *kgl_kernels_isa(void) { return kgl_isa_name(kgl_isa_active()); }
