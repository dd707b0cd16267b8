/* test.h — the test runner's small vocabulary.
 *
 * A test is `TEST(name) { ... }` in any tests/ (*.c) file. The macro itself
 * registers the test (a constructor that runs before main), so whatever the
 * compiler sees as a TEST — indented, `TEST (x)`, any case — is run: no list
 * is kept by hand or by grep. Each CHECK that fails prints file:line and the
 * condition; a test passes when none of its checks failed. tests/main.c runs
 * every test in a child process of its own (a crash, an exit, a timeout is
 * that test's FAIL), ends with "N passed, N failed" (", N skipped" after it
 * when a test skipped) and exits 1 if anything failed or nothing ran. */
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

/* Called by the constructor TEST defines; tests are run sorted by file and line. */
void test_register(const char *name, void (*fn)(test_ctx *), const char *file, int line);

/* The test function keeps external linkage, so two tests of one name fail at link. */
#define TEST(name)                                                                         \
    void test_##name(test_ctx *T);                                                        \
    __attribute__((constructor)) static void test_register_##name(void)                   \
    {                                                                                      \
        test_register(#name, test_##name, __FILE__, __LINE__);                             \
    }                                                                                      \
    void test_##name(test_ctx *T)

bool test_check(test_ctx *T, bool ok, const char *what, const char *file, int line);
bool test_check_near(test_ctx *T, double got, double want, double tol, const char *what, const char *file, int line);
/* Marks the test skipped (counted apart from passes; a failed check still fails it). */
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

/* A whole file, NUL-terminated, in memory from malloc (the caller frees it;
 * *len, when given, its bytes); NULL when it cannot be read. */
char *test_slurp(const char *path, size_t *len);
/* Whether files a and b both exist and hold the same bytes. */
bool test_same_file(const char *a, const char *b);
/* Runs fn(ctx) in a child process, its stderr into err; whether it died of SIGABRT (kgl_die). */
bool test_dies(void (*fn)(void *), void *ctx, char *err, size_t cap);
/* The examples of ds's first split as one batch, the odd ones reversed
 * through their inverse relation (row m + r); free with test_batch_free. */
kgl_batch test_alternating_batch(const kgl_dataset *ds);
void test_batch_free(kgl_batch *b);
/* The model of the checkpoint at path, for the entities and relations of ds,
 * into m (a failed CHECK and false when it does not open). */
bool test_model_load(test_ctx *T, const char *path, const kgl_dataset *ds, kgl_model *m);
/* The loss of a forward pass on b (nothing recorded; reg NULL: none), its
 * tensors left in *f; the tape is reset first. */
double test_loss(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const kgl_regularisers *reg, kgl_forward *f);
/* Up to cap − 1 bytes of a file into buf, NUL-terminated; false when absent. */
bool test_read_all(const char *path, char *buf, size_t cap);
/* How many times needle occurs in hay (not overlapping). */
int test_count(const char *hay, const char *needle);
/* The raw text of the value of "key" in a flat JSON object as kgl prints it
 * (up to the next ',' or '}'), e.g. a number's 17 digits exactly as written;
 * false when the key is absent or the value does not fit. */
bool test_json_raw(const char *json, const char *key, char *buf, size_t cap);

/* Number of malloc/calloc/realloc calls made so far (tests/alloc_count.c). */
long test_alloc_count(void);

/* CSV files as the studies write them (no field holds a comma): field `col`
 * (0-based) of a line into buf; the index of column `name` in the header
 * (-1 if absent); the line after the `row`-th newline (row 1: the first data
 * row; NULL past the end); field `col` as a number (NaN when empty). */
const char *test_csv_field(const char *line, int col, char *buf, size_t cap);
int test_csv_column(const char *csv, const char *name);
const char *test_csv_line(const char *csv, int row);
double test_csv_num(const char *line, int col);

/* Whether the suite is built with AddressSanitizer (make sanitize), which
 * reserves terabytes of address space and counts its shadow memory as
 * resident: memory-limit tests skip under it. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* The readout's score of (c, q, e) written out (diagonal or complex), and
   the relation-prediction cross entropy of a batch from it: mean_b
   (logsumexp_k s[b,k] − s[b,r_b]) over every relation row k (fixtures.c). */
double test_readout_score(bool is_complex, const double *c, const double *q, const double *e, int d);
double test_relation_prediction_ce(const kgl_model *m, const double *C, const kgl_batch *b);

#endif
