/* layout_runner.c — the test runner (tests/main.c) fails when it should.
 *
 * build/runner_probe is tests/main.c linked with tests/runner/probe.c, whose
 * tests misbehave on purpose; build/runner_empty is the runner with no test.
 * Both sit beside the kgl binary under test (make test builds them). Each
 * case runs the probe with one filter and checks the exit status, the FAIL
 * line naming the test, and the closing line, which must be the last. */
#include <stdlib.h>
#include <time.h>

#include "test.h"

static char probe_out[16384], probe_err[4096];

/* Runs `ENV <dir of T->kgl>/BIN ARGS`; returns the exit status. */
static int run_probe(test_ctx *T, const char *env, const char *bin, const char *args)
{
    char dir[512], cmd[2048];
    snprintf(dir, sizeof dir, "%s", T->kgl);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    snprintf(cmd, sizeof cmd, "%s '%s/%s' %s", env, dir, bin, args);
    return run_sh(T, cmd, probe_out, sizeof probe_out, probe_err, sizeof probe_err);
}

/* The last line of probe_out (without its newline), in a static buffer. */
static const char *last_line(void)
{
    static char line[256];
    size_t n = strlen(probe_out);
    if (n && probe_out[n - 1] == '\n') n--;
    size_t start = n;
    while (start > 0 && probe_out[start - 1] != '\n') start--;
    size_t len = n - start < sizeof line - 1 ? n - start : sizeof line - 1;
    memcpy(line, probe_out + start, len);
    line[len] = 0;
    return line;
}

static void expect(test_ctx *T, const char *args, int status, const char *has, const char *closing)
{
    int st = run_probe(T, "KGL_TEST_TIMEOUT=20", "runner_probe", args);
    bool a = CHECK(st == status), b = CHECK(strstr(probe_out, has) != NULL);
    bool c = CHECK(strcmp(last_line(), closing) == 0);
    if (!a || !b || !c)
        printf("    runner_probe %s -> status %d, output:\n%s\n", args, st, probe_out);
}

TEST(runner_passes_a_passing_test) { expect(T, "probe_passes", 0, "ok   probe_passes", "1 passed, 0 failed"); }

TEST(runner_fails_a_failed_check)
{
    expect(T, "probe_fails_a_check", 1, "FAIL probe_fails_a_check (1 failed check)", "0 passed, 1 failed");
}

TEST(runner_fails_a_crash_and_runs_on)
{
    /* under AddressSanitizer the SEGV is reported and the child exits 1; either way a FAIL */
    expect(T, "probe_segfaults probe_passes", 1, "FAIL probe_segfaults (", "1 passed, 1 failed");
    CHECK(strstr(probe_out, "ok   probe_passes") != NULL);
    expect(T, "probe_aborts", 1, "FAIL probe_aborts (killed by signal 6", "0 passed, 1 failed");
}

TEST(runner_fails_an_early_exit)
{
    expect(T, "probe_exits_zero probe_passes", 1, "FAIL probe_exits_zero (exited with status 0 before the test returned)",
           "1 passed, 1 failed");
    CHECK(strstr(probe_out, "ok   probe_passes") != NULL);
    expect(T, "probe_exits_three", 1, "FAIL probe_exits_three (exited with status 3 before", "0 passed, 1 failed");
}

TEST(runner_times_out_and_kills_the_group)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int st = run_probe(T, "KGL_TEST_TIMEOUT=1", "runner_probe", "probe_sleeps");
    CHECK(st == 1);
    CHECK(strstr(probe_out, "FAIL probe_sleeps (timed out after 1 s") != NULL);
    CHECK(strcmp(last_line(), "0 passed, 1 failed") == 0);
    st = run_probe(T, "KGL_TEST_TIMEOUT=1", "runner_probe", "probe_hangs_in_a_shell");
    CHECK(st == 1);
    CHECK(strstr(probe_out, "FAIL probe_hangs_in_a_shell (timed out after 1 s") != NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    /* two 1 s timeouts; the sleeps are 60 s, so 30 s means a timeout did not work
     * (or the shell's sleep was waited for) */
    double secs = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    CHECK(secs < 30);
    /* and a bad value is refused, not read as "no timeout" */
    CHECK(run_probe(T, "KGL_TEST_TIMEOUT=soon", "runner_probe", "probe_passes") == 1);
}

TEST(runner_counts_skips_apart)
{
    expect(T, "probe_skips probe_passes", 0, "skip probe_skips", "1 passed, 0 failed, 1 skipped");
    expect(T, "probe_failing_skip", 1, "FAIL probe_failing_skip", "0 passed, 1 failed");
    /* only skips: nothing was checked, but nothing failed */
    expect(T, "probe_skips", 0, "skip probe_skips", "0 passed, 0 failed, 1 skipped");
}

TEST(runner_finds_every_spelling_of_TEST)
{
    /* the three fail on purpose: found and run, they fail the run */
    expect(T, "probe_Upper_Case", 1, "FAIL probe_Upper_Case", "0 passed, 1 failed");
    expect(T, "probe_indented", 1, "FAIL probe_indented", "0 passed, 1 failed");
    expect(T, "probe_spaced", 1, "FAIL probe_spaced", "0 passed, 1 failed");
    /* --list names all 14 probes, in file order */
    CHECK(run_probe(T, "", "runner_probe", "--list") == 0);
    CHECK(strcmp(last_line(), "14 tests") == 0);
    const char *up = strstr(probe_out, "probe_Upper_Case\t"), *sp = strstr(probe_out, "probe_spaced\t");
    CHECK(up && sp && up < sp);
}

TEST(runner_fails_when_nothing_runs)
{
    expect(T, "no_such_test", 1, "no test name contains \"no_such_test\"", "0 passed, 0 failed");
    /* one filter matching nothing fails the run even when another matches */
    expect(T, "probe_passes no_such_test", 1, "no_such_test", "0 passed, 0 failed");
    int st = run_probe(T, "", "runner_empty", "");
    CHECK(st == 1);
    CHECK(strstr(probe_out, "no test ran") != NULL);
    CHECK(strcmp(last_line(), "0 passed, 0 failed") == 0);
    CHECK(run_probe(T, "", "runner_probe", "--no-such-option") == 1);
}

TEST(runner_gives_each_test_its_own_scratch)
{
    expect(T, "probe_scratch_is_private", 0, "ok   probe_scratch_is_private", "1 passed, 0 failed");
}
