/* fuzz_replay.c — every libFuzzer harness of tests/fuzz/ compiled into the
 * test binary (KGL_FUZZ_REPLAY renames each LLVMFuzzerTestOneInput), and
 * every input of its seed corpus (tests/fuzz/corpus/NAME/) and of the
 * regressions (tests/fuzz/regressions/NAME/: what `make fuzz` found, once
 * fixed) replayed through it, under whatever sanitizers this build has. */
#include <dirent.h>
#include <stdlib.h>

#define KGL_FUZZ_REPLAY
#include "../train/args.c" /* the CLI's option parser, which fuzz_args.c drives */
#include "fuzz/fuzz_args.c"
#include "fuzz/fuzz_formula.c"
#include "fuzz/fuzz_json.c"
#include "fuzz/fuzz_memo.c"
#include "fuzz/fuzz_safetensors.c"
#include "fuzz/fuzz_triples.c"
#include "fuzz/fuzz_types.c"
#include "test.h"

typedef int (*fuzz_fn)(const uint8_t *, size_t);

/* Runs fn on every file of dir; returns how many (0 when dir is absent). */
static int replay_dir(test_ctx *T, const char *dir, fuzz_fn fn)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!CHECK(f != NULL)) continue;
        uint8_t *buf = malloc(1 << 20);
        size_t len = fread(buf, 1, 1 << 20, f);
        fclose(f);
        CHECK(fn(buf, len) == 0);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

TEST(fuzz_corpus_and_regressions_replay)
{
    static const struct {
        const char *name;
        fuzz_fn fn;
    } h[] = {{"triples", fuzz_triples}, {"types", fuzz_types}, {"safetensors", fuzz_safetensors},
             {"json", fuzz_json},       {"memo", fuzz_memo},   {"args", fuzz_args},
             {"formula", fuzz_formula}};
    int total = 0;
    for (size_t k = 0; k < sizeof h / sizeof h[0]; k++) {
        char dir[256];
        snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", h[k].name);
        int seeds = replay_dir(T, dir, h[k].fn);
        if (!CHECK(seeds > 0)) printf("    no seed inputs in %s\n", dir);
        snprintf(dir, sizeof dir, "tests/fuzz/regressions/%s", h[k].name);
        total += seeds + replay_dir(T, dir, h[k].fn);
    }
    printf("    %d inputs replayed through %zu harnesses\n", total, sizeof h / sizeof h[0]);
    /* the args harness writes each input to a file of its own folder: none left behind */
    char left[64];
    snprintf(left, sizeof left, "/tmp/kgl_fuzz_args.%ld", (long)getpid());
    struct stat st;
    if (!CHECK(stat(left, &st) != 0)) printf("    %s is left behind\n", left);
}
