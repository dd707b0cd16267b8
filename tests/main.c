/* main.c — the test runner: every TEST in tests/ (*.c), sorted by file and line.
 *
 *   build/kgl_tests [--kgl PATH] [--list] [--fail-fast] [SUBSTRING...]
 *
 * With SUBSTRINGs, runs the tests whose name contains any of them; a SUBSTRING
 * that matches no test is an error. Each test runs in a forked child process
 * with its own scratch directory (T->tmp) and its own process group. The child
 * writes a "returned" record down a pipe after the test function returns; the
 * test FAILs, with its name, when a check failed, when the child dies of a
 * signal, exits non-zero, exits (even with status 0) without that record, or
 * outlives the timeout: KGL_TEST_TIMEOUT seconds (default 120, 0 = none) per
 * test, after which its whole process group is killed. The last line is always
 * "N passed, N failed" (", N skipped" appended when a test skipped); the exit
 * status is 1 when a test failed, no test ran, or a filter matched nothing. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

typedef struct test_entry {
    const char *name, *file;
    int line;
    void (*fn)(test_ctx *);
} test_entry;

/* Registration runs before main and must not allocate (tests/alloc_count.c
 * counts every malloc), so the table is static; 4096 is far above the suite. */
#define MAX_TESTS 4096
static test_entry tests[MAX_TESTS];
static size_t n_tests;
static bool too_many_tests;

void test_register(const char *name, void (*fn)(test_ctx *), const char *file, int line)
{
    if (n_tests == MAX_TESTS) {
        too_many_tests = true;
        return;
    }
    tests[n_tests++] = (test_entry){name, file, line, fn};
}

static int by_file_then_line(const void *a, const void *b)
{
    const test_entry *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

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

/* Runs fn(ctx) in a child process with its stderr captured into err (cap
 * bytes, terminated); returns whether it died of SIGABRT, kgl_die's end. */
bool test_dies(void (*fn)(void *), void *ctx, char *err, size_t cap)
{
    int fd[2];
    if (pipe(fd) != 0) return false;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        fn(ctx);
        _exit(0);
    }
    close(fd[1]);
    size_t used = 0;
    ssize_t got;
    while (used + 1 < cap && (got = read(fd[0], err + used, cap - 1 - used)) > 0) used += (size_t)got;
    err[used] = 0;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

bool test_same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *x = test_slurp(a, &na), *y = test_slurp(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

char *test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!b) {
        fclose(f);
        return NULL;
    }
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    b[got] = 0;
    if (len) *len = got;
    return b;
}

bool test_read_all(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return true;
}

int test_count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

bool test_json_raw(const char *json, const char *key, char *buf, size_t cap)
{
    char quoted[128];
    snprintf(quoted, sizeof quoted, "\"%s\":", key);
    const char *p = strstr(json, quoted);
    if (!p) return false;
    p += strlen(quoted);
    size_t n = strcspn(p, ",}");
    if (n + 1 > cap) return false;
    memcpy(buf, p, n);
    buf[n] = 0;
    return true;
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

/* What the child sends after the test function returned. */
typedef struct returned_record {
    uint32_t magic;
    int32_t failures;
    int32_t skipped;
} returned_record;
#define RETURNED_MAGIC 0x6b676c74u /* "kglt" */

static volatile sig_atomic_t timed_out, interrupted;
static volatile pid_t current_child; /* its process group, while a test runs */

static void on_alarm(int sig)
{
    (void)sig;
    timed_out = 1;
}

static void on_interrupt(int sig)
{
    interrupted = sig;
    if (current_child > 0) kill(-current_child, SIGKILL);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void child_run(const test_entry *t, test_ctx *T, int wfd)
{
    /* Its own process group, so that a timeout kills the shells and kgl
     * processes a test started, not only the test. */
    setpgid(0, 0);
    signal(SIGALRM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    t->fn(T);
    fflush(stdout);
    returned_record r = {RETURNED_MAGIC, T->failures, T->skipped ? 1 : 0};
    ssize_t n = write(wfd, &r, sizeof r);
    close(wfd);
    /* exit (not _exit): atexit work such as LeakSanitizer's check runs per test,
     * and a non-zero status from it fails this test. */
    exit(n == (ssize_t)sizeof r ? 0 : 3);
}

typedef enum { RESULT_PASS, RESULT_SKIP, RESULT_FAIL } result;

static result run_one(const test_entry *t, const char *kgl, const char *root_tmp, unsigned timeout, int index)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s/%03d-%s", root_tmp, index, t->name);
    tmp[sizeof tmp - 1] = 0;
    if (mkdir(tmp, 0700) != 0) {
        printf("FAIL %s (cannot create %s: %s)\n", t->name, tmp, strerror(errno));
        return RESULT_FAIL;
    }
    test_ctx T = {t->name, kgl, tmp, 0, false};
    int fds[2];
    if (pipe(fds) != 0) {
        printf("FAIL %s (pipe: %s)\n", t->name, strerror(errno));
        return RESULT_FAIL;
    }
    fflush(stdout);
    fflush(stderr);
    double t0 = now_seconds();
    pid_t pid = fork();
    if (pid < 0) {
        printf("FAIL %s (fork: %s)\n", t->name, strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return RESULT_FAIL;
    }
    if (pid == 0) {
        close(fds[0]);
        /* The shells a test starts must not hold the pipe open after it exits. */
        fcntl(fds[1], F_SETFD, FD_CLOEXEC);
        child_run(t, &T, fds[1]);
    }
    setpgid(pid, pid); /* also here: no race with the kill below */
    current_child = pid;
    close(fds[1]);

    timed_out = 0;
    if (timeout) alarm(timeout);
    /* Read the record first (EOF comes when the child exits, or when it closed
     * the pipe), then reap; SIGALRM interrupts either (no SA_RESTART). */
    returned_record r = {0, 0, 0};
    size_t got = 0;
    while (got < sizeof r && !timed_out && !interrupted) {
        ssize_t n = read(fds[0], (char *)&r + got, sizeof r - got);
        if (n > 0)
            got += (size_t)n;
        else if (n == 0 || errno != EINTR)
            break;
    }
    if (timed_out || interrupted) kill(-pid, SIGKILL);
    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
        if (timed_out || interrupted) kill(-pid, SIGKILL);
    }
    alarm(0);
    /* Whatever the test left running in its group goes with it. */
    kill(-pid, SIGKILL);
    current_child = 0;
    close(fds[0]);
    double secs = now_seconds() - t0;

    char why[200] = "";
    if (timed_out)
        snprintf(why, sizeof why, "timed out after %u s (KGL_TEST_TIMEOUT)", timeout);
    else if (interrupted)
        snprintf(why, sizeof why, "interrupted");
    else if (w < 0)
        snprintf(why, sizeof why, "waitpid: %s", strerror(errno));
    else if (WIFSIGNALED(status))
        snprintf(why, sizeof why, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (!WIFEXITED(status))
        snprintf(why, sizeof why, "stopped");
    else if (got != sizeof r || r.magic != RETURNED_MAGIC)
        snprintf(why, sizeof why, "exited with status %d before the test returned", WEXITSTATUS(status));
    else if (WEXITSTATUS(status) != 0)
        snprintf(why, sizeof why, "exited with status %d after the test returned", WEXITSTATUS(status));
    else if (r.failures)
        snprintf(why, sizeof why, "%d failed check%s", (int)r.failures, r.failures == 1 ? "" : "s");
    if (why[0]) {
        printf("FAIL %s (%s)\n", t->name, why);
        return RESULT_FAIL;
    }
    printf("%s %s  %.2fs\n", r.skipped ? "skip" : "ok  ", t->name, secs);
    return r.skipped ? RESULT_SKIP : RESULT_PASS;
}

static unsigned timeout_from_env(bool *ok)
{
    *ok = true;
    const char *s = getenv("KGL_TEST_TIMEOUT");
    if (!s || !*s) return 120;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || errno || v > 86400 || s[0] == '-') {
        *ok = false;
        return 0;
    }
    return (unsigned)v;
}

int main(int argc, char **argv)
{
    /* Line-buffered, so a test that crashes keeps the lines it printed. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *kgl = "build/kgl";
    const char **filters = calloc((size_t)argc, sizeof *filters);
    int n_filters = 0;
    bool list = false, fail_fast = false, usage_error = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kgl") == 0 && i + 1 < argc)
            kgl = argv[++i];
        else if (strcmp(argv[i], "--list") == 0)
            list = true;
        else if (strcmp(argv[i], "--fail-fast") == 0)
            fail_fast = true;
        else if (argv[i][0] == '-') {
            printf("unknown option %s (usage: kgl_tests [--kgl PATH] [--list] [--fail-fast] [SUBSTRING...])\n", argv[i]);
            usage_error = true;
        } else
            filters[n_filters++] = argv[i];
    }
    bool timeout_ok;
    unsigned timeout = timeout_from_env(&timeout_ok);
    if (!timeout_ok) {
        printf("KGL_TEST_TIMEOUT must be a whole number of seconds (0 = none)\n");
        usage_error = true;
    }
    if (too_many_tests) {
        printf("more than %d tests: raise MAX_TESTS in tests/main.c\n", MAX_TESTS);
        usage_error = true;
    }
    qsort(tests, n_tests, sizeof tests[0], by_file_then_line);

    /* Which tests run, and does every filter match one? */
    bool *selected = calloc(n_tests ? n_tests : 1, sizeof *selected);
    int n_selected = 0;
    for (size_t i = 0; i < n_tests; i++) {
        selected[i] = n_filters == 0;
        for (int f = 0; f < n_filters && !selected[i]; f++)
            selected[i] = strstr(tests[i].name, filters[f]) != NULL;
        n_selected += selected[i];
    }
    for (int f = 0; f < n_filters; f++) {
        bool any = false;
        for (size_t i = 0; i < n_tests && !any; i++) any = strstr(tests[i].name, filters[f]) != NULL;
        if (!any) {
            printf("no test name contains \"%s\"\n", filters[f]);
            usage_error = true;
        }
    }
    if (list) {
        for (size_t i = 0; i < n_tests; i++)
            if (selected[i]) printf("%s\t%s:%d\n", tests[i].name, tests[i].file, tests[i].line);
        printf("%d tests\n", n_selected);
        free(selected);
        free(filters);
        return usage_error || n_selected == 0 ? 1 : 0;
    }

    int passed = 0, failed = 0, skipped = 0;
    char tmp[] = "/tmp/kgl-tests-XXXXXX";
    if (usage_error) {
        failed = 0;
    } else if (!mkdtemp(tmp)) {
        printf("mkdtemp: %s\n", strerror(errno));
        usage_error = true;
    } else {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sigemptyset(&sa.sa_mask);
        sa.sa_handler = on_alarm; /* no SA_RESTART: read and waitpid return EINTR */
        sigaction(SIGALRM, &sa, NULL);
        sa.sa_handler = on_interrupt;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        double t0 = now_seconds();
        int index = 0;
        for (size_t i = 0; i < n_tests && !interrupted; i++) {
            if (!selected[i]) continue;
            result res = run_one(&tests[i], kgl, tmp, timeout, index++);
            if (res == RESULT_FAIL) failed++;
            else if (res == RESULT_SKIP) skipped++;
            else passed++;
            if (fail_fast && failed) {
                printf("(--fail-fast: stopped after the first failure)\n");
                break;
            }
        }
        char rm[600];
        snprintf(rm, sizeof rm, "rm -rf '%s'", tmp);
        if (system(rm) != 0) fprintf(stderr, "could not remove %s\n", tmp);
        printf("(%d tests in %.1f s)\n", passed + failed + skipped, now_seconds() - t0);
        if (interrupted) printf("interrupted by signal %d\n", (int)interrupted);
        if (passed + failed + skipped == 0) printf("no test ran\n");
    }
    free(selected);
    free(filters);
    /* The closing line, always last: CI reads it. */
    if (skipped)
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else
        printf("%d passed, %d failed\n", passed, failed);
    return failed || usage_error || interrupted || passed + skipped == 0 ? 1 : 0;
}
