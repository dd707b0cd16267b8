/* probe.c — tests for the test runner itself: linked with tests/main.c into
 * build/runner_probe (outside the tests/ wildcard, so not part of kgl_tests).
 * tests/layout_runner.c runs it with one filter at a time and checks that each
 * misbehaving test below makes the runner fail, with the test's name. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

TEST(probe_passes) { CHECK(1 + 1 == 2); }

TEST(probe_fails_a_check) { CHECK(1 + 1 == 3); }

TEST(probe_segfaults)
{
    raise(SIGSEGV);
    CHECK(true);
}

TEST(probe_aborts)
{
    (void)T;
    abort();
}

TEST(probe_exits_zero)
{
    (void)T;
    exit(0); /* a helper that exits 0: the tests after it must not be lost */
}

TEST(probe_exits_three)
{
    (void)T;
    exit(3);
}

TEST(probe_sleeps)
{
    sleep(60); /* run with KGL_TEST_TIMEOUT=1 */
    CHECK(true);
}

TEST(probe_hangs_in_a_shell)
{
    /* the timeout must kill the shell it started too, not wait for it */
    char out[16], err[16];
    run_sh(T, "sleep 60", out, sizeof out, err, sizeof err);
    CHECK(true);
}

TEST(probe_skips) { test_skip(T, "a probe of skips"); }

TEST(probe_failing_skip)
{
    test_skip(T, "a skip does not hide a failed check");
    CHECK(0 > 1);
}

/* Written the ways the old grep-built list missed. */
TEST(probe_Upper_Case) { CHECK(2 + 2 == 5); }

    TEST(probe_indented) { CHECK(2 + 2 == 5); }

TEST (probe_spaced) { CHECK(2 + 2 == 5); }

TEST(probe_scratch_is_private)
{
    /* T->tmp is this test's own, empty directory */
    char out[64] = "", err[64];
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -v '^\\.std' | wc -l", T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(atoi(out) == 0);
    CHECK(strstr(T->tmp, "probe_scratch_is_private") != NULL);
}
