/* test.h — the test runner's small vocabulary.
 *
 * A test is `TEST(name) { ... }` in any tests/ (*.c) file; the Makefile lists
 * them for tests/main.c. Each CHECK that fails prints file:line and the
 * condition; a test passes when none of its checks failed. The runner ends
 * with "N passed, N failed" and exits 1 if anything failed. */
#ifndef KGL_TEST_H
#define KGL_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "kgl.h"

typedef struct test_ctx {
    const char *name;
    const char *kgl;   /* path of the kgl binary under test */
    const char *tmp;   /* a scratch directory for this run */
    int failures;      /* failed checks in the current test */
    bool skipped;
} test_ctx;

#define TEST(name) void test_##name(test_ctx *T)

bool test_check(test_ctx *T, bool ok, const char *what, const char *file, int line);
bool test_check_near(test_ctx *T, double got, double want, double tol, const char *what, const char *file, int line);
void test_skip(test_ctx *T, const char *why);

#define CHECK(cond) test_check(T, (cond), #cond, __FILE__, __LINE__)
/* |got − want| <= tol, written so that a NaN fails */
#define CHECK_NEAR(got, want, tol) test_check_near(T, (got), (want), (tol), #got, __FILE__, __LINE__)

/* Runs `kgl ARGS` through sh; captures stdout and stderr (each up to
 * cap − 1 bytes, NUL-terminated) and returns the exit status (or -1). */
int run_kgl(test_ctx *T, const char *args, char *out, size_t out_cap, char *err, size_t err_cap);
/* Runs an arbitrary shell command the same way. */
int run_sh(test_ctx *T, const char *cmd, char *out, size_t out_cap, char *err, size_t err_cap);
/* Writes `text` to a file in T->tmp and returns its path (static buffer per slot 0..7). */
const char *write_tmp(test_ctx *T, int slot, const char *name, const char *text, size_t len);

/* Number of malloc/calloc/realloc calls made so far (tests/alloc_count.c). */
long test_alloc_count(void);

#endif
