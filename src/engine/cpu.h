/* cpu.h — which vector instructions the kernels use (private to the engine).
 *
 * Chosen once per process from the CPU's features (cpuid, through the
 * compiler's __builtin_cpu_supports) and the environment variable KGL_ISA
 * (portable | avx2 | avx512), which can only lower the choice: asking for an
 * ISA the CPU lacks falls back to the best one it has. Every kernel has a
 * portable C path, so kgl runs on any x86-64 (and any other) CPU. */
#ifndef KGL_CPU_H
#define KGL_CPU_H

typedef enum { KGL_ISA_PORTABLE = 0, KGL_ISA_AVX2 = 1, KGL_ISA_AVX512 = 2 } kgl_isa;

/* The ISA in use (computed on the first call, thread-safe). */
kgl_isa kgl_isa_active(void);
/* The best ISA this CPU supports, ignoring KGL_ISA. */
kgl_isa kgl_isa_best(void);
/* "portable", "avx2" (AVX2 + FMA) or "avx512" (AVX-512F + FMA). */
const char *kgl_isa_name(kgl_isa isa);

#endif
