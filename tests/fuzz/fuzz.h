/* fuzz.h — one libFuzzer harness per parser (`make fuzz`). Built alone, a
 * harness is LLVMFuzzerTestOneInput; tests/fuzz_replay.c includes them all
 * with KGL_FUZZ_REPLAY defined, so that `make test` replays every seed and
 * every regression input (tests/fuzz/corpus/NAME/, tests/fuzz/regressions/)
 * through the same code without clang. A harness returns 0 and must never
 * crash, leak or hang, whatever the bytes. */
#ifndef KGL_FUZZ_H
#define KGL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#ifdef KGL_FUZZ_REPLAY
#define FUZZ_TARGET(name) int fuzz_##name(const uint8_t *data, size_t size)
#else
#define FUZZ_TARGET(name) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
#endif

#endif
