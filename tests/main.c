/* main.c — the test runner: every TEST in tests/ (*.c), in file order.
 *   build/kgl_tests [--kgl PATH] [SUBSTRING]   (runs the tests whose name contains SUBSTRING) */
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define X(name) void test_##name(test_ctx *T);
#include "test_list.h"
#undef X

static const struct {
    const char *name;
    void (*fn)(test_ctx *);
} tests[] = {
#define X(name) {#name, test_##name},
#include "test_list.h"
#undef X
};

bool test_check(test_ctx *T, bool ok, const char *what, const char *file, int line)
{
    if (!ok) {
        T->failures++;
        printf("    %s:%d: check failed: %s\n", file, line, what);
    }
    return ok;
}

bool test_check_near(test_ctx *T, double got, double want, double tol, const char *what, const char *file, int line)
{
    bool ok = fabs(got - want) <= tol;
    if (!ok) {
        T->failures++;
        printf("    %s:%d: %s = %.17g, want %.17g ± %g\n", file, line, what, got, want, tol);
    }
    return ok;
}

void test_skip(test_ctx *T, const char *why)
{
    T->skipped = true;
    printf("    skipped: %s\n", why);
}

static void read_file_into(const char *path, char *buf, size_t cap)
{
    if (!buf || cap == 0) return;
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
}

int run_sh(test_ctx *T, const char *cmd, char *out, size_t out_cap, char *err, size_t err_cap)
{
    char out_path[512], err_path[512], full[8192];
    snprintf(out_path, sizeof out_path, "%s/.stdout", T->tmp);
    snprintf(err_path, sizeof err_path, "%s/.stderr", T->tmp);
    snprintf(full, sizeof full, "(%s) >'%s' 2>'%s' </dev/null", cmd, out_path, err_path);
    int st = system(full);
    read_file_into(out_path, out, out_cap);
    read_file_into(err_path, err, err_cap);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

int run_kgl(test_ctx *T, const char *args, char *out, size_t out_cap, char *err, size_t err_cap)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s", T->kgl, args);
    return run_sh(T, cmd, out, out_cap, err, err_cap);
}

const char *write_tmp(test_ctx *T, int slot, const char *name, const char *text, size_t len)
{
    static char paths[8][512];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", T->tmp, name);
    FILE *f = fopen(paths[slot], "wb");
    if (!f) {
        printf("    cannot write %s\n", paths[slot]);
        T->failures++;
        return paths[slot];
    }
    fwrite(text, 1, len, f);
    fclose(f);
    return paths[slot];
}

int main(int argc, char **argv)
{
    const char *kgl = "build/kgl", *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kgl") == 0 && i + 1 < argc)
            kgl = argv[++i];
        else
            filter = argv[i];
    }
    char tmp[] = "/tmp/kgl-tests-XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 2;
    }
    int passed = 0, failed = 0, skipped = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        test_ctx T = {tests[i].name, kgl, tmp, 0, false};
        tests[i].fn(&T);
        if (T.failures) {
            failed++;
            printf("FAIL %s\n", tests[i].name);
        } else {
            passed++;
            if (T.skipped) skipped++;
            printf("%s %s\n", T.skipped ? "skip" : "ok  ", tests[i].name);
        }
        fflush(stdout);
    }
    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf '%s'", tmp);
    if (system(rm) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    if (skipped) printf("(%d of the passed tests were skipped, see above)\n", skipped);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
