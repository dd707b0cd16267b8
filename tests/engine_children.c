/* engine_children.c — jobs that are other programs (src/engine/children.c):
 * a child's steps come down its pipe into the runner's counts; what it
 * says on stderr is captured with its status; a stop signal reaches the
 * children going, in any slot, and starts no more; the environment a child
 * gets names the pipe once; the child's side finds its pipe and sends its
 * steps down it. Each test runs in a process of its own (the
 * stop signal is process-wide). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

extern char **environ;

/* What the progress callback saw last. */
typedef struct steps_seen {
    long done, total;
    int reports;
    int status; /* the child's */
    char **argv;
} steps_seen;

static void record_steps(const kgl_jobs_progress *at, void *ctx)
{
    steps_seen *s = ctx;
    s->done = at->steps_done, s->total = at->steps;
    s->reports++;
}

/* The one job: the child, started with its pipe and followed to its end. */
static int child_job(kgl_jobs *jobs, int job, int worker, void *ctx)
{
    steps_seen *s = ctx;
    int steps_fd = -1;
    pid_t pid = kgl_child_spawn_steps(s->argv, STDOUT_FILENO, STDERR_FILENO, environ, worker, &steps_fd);
    if (pid <= 0) return 1;
    s->status = kgl_child_follow(steps_fd, worker, jobs, job);
    return 0;
}

/* The lines "DONE TOTAL" are the job's counts: DONE above TOTAL counts as
   TOTAL, a line not of two numbers is skipped, one cut off by the end is
   not a count, and at the end the steps are what the last line said. */
TEST(children_steps_come_down_the_pipe_into_the_runner)
{
    char *argv[] = {"/bin/sh", "-c",
                    "printf '3 10\\n' >&3; printf 'not steps\\n' >&3; printf '12 10\\n6 8\\n' >&3; "
                    "printf '7 9' >&3; exit 4", NULL};
    steps_seen s = {.argv = argv};
    kgl_jobs_spec spec = {.n = 1, .at_most = 1, .run = child_job, .progress = record_steps, .ctx = &s};
    kgl_jobs_result r = kgl_jobs_run(&spec);
    CHECK(r.status == 0);
    /* 3/10, 10/10, 6/8, then the end: 6/6 (the cut line "7 9" never counted) */
    if (!CHECK(s.done == 6 && s.total == 6)) printf("    steps %ld/%ld\n", s.done, s.total);
    CHECK(s.reports >= 4);
    CHECK(WIFEXITED(s.status) && WEXITSTATUS(s.status) == 4);
}

/* A child that never writes a line keeps the plan: no count is made up. */
TEST(children_a_silent_child_reports_no_steps)
{
    char *argv[] = {"/bin/sh", "-c", "exit 0", NULL};
    steps_seen s = {.argv = argv};
    kgl_jobs_spec spec = {.n = 1, .at_most = 1, .job_steps = 50, .run = child_job, .progress = record_steps, .ctx = &s};
    kgl_jobs_run(&spec);
    if (!CHECK(s.done == 0 && s.total == 50)) printf("    steps %ld/%ld\n", s.done, s.total);
    CHECK(WIFEXITED(s.status) && WEXITSTATUS(s.status) == 0);
}

/* stderr whole (longer than the first buffer), stdout not, and the status. */
TEST(children_capture_keeps_what_it_says_and_its_status)
{
    char *argv[] = {"/bin/sh", "-c", "echo out; echo said >&2; head -c 100000 /dev/zero | tr '\\0' x >&2; exit 3",
                    NULL};
    char *said = NULL;
    int status = -1;
    kgl_child_outcome ran = kgl_child_capture(argv, environ, 5, &said, &status);
    CHECK(ran == KGL_CHILD_ENDED);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    if (!CHECK(said && strncmp(said, "said\n", 5) == 0 && strlen(said) == 5 + 100000 && !strstr(said, "out")))
        printf("    said %zu bytes\n", said ? strlen(said) : 0);
    free(said);
    char *missing[] = {"/no/such/program", NULL};
    ran = kgl_child_capture(missing, environ, 5, &said, &status);
    CHECK(ran == KGL_CHILD_CANNOT_START);
    free(said);
}

/* A stop signal reaches the child of every slot, not only the first
   worker's, and after it nothing starts. */
TEST(children_a_stop_signal_reaches_every_slot_and_starts_no_more)
{
    char *argv[] = {"/bin/sleep", "20", NULL};
    int slots[2] = {0, KGL_CHILD_SLOTS - 1};
    for (int k = 0; k < 2; k++) CHECK(kgl_child_spawn(argv, STDOUT_FILENO, STDERR_FILENO, -1, environ, slots[k]) > 0);
    CHECK(kgl_children_stop_signal() == 0);
    kgl_children_signal(SIGTERM);
    CHECK(kgl_children_stop_signal() == SIGTERM);
    for (int k = 0; k < 2; k++) {
        int status = kgl_child_wait(slots[k]);
        if (!CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)) printf("    slot %d: status %d\n", slots[k], status);
    }
    CHECK(kgl_child_spawn(argv, STDOUT_FILENO, STDERR_FILENO, -1, environ, 1) == 0);
}

/* KGL_PROGRESS_FD=3 once, in place of the one this process had; the rest kept. */
TEST(children_environment_names_the_pipe_once)
{
    setenv("KGL_PROGRESS_FD", "9", 1);
    setenv("KGL_CHILDREN_TEST", "kept", 1);
    char **envp = kgl_environment_with("KGL_PROGRESS_FD=3");
    int fds = 0, kept = 0;
    for (int k = 0; envp[k]; k++) {
        fds += strncmp(envp[k], "KGL_PROGRESS_FD=", 16) == 0;
        CHECK(strcmp(envp[k], "KGL_PROGRESS_FD=9") != 0);
        kept += strcmp(envp[k], "KGL_CHILDREN_TEST=kept") == 0;
    }
    CHECK(fds == 1 && kept == 1);
    free(envp);
}

/* The child's side: KGL_PROGRESS_FD names a pipe of 3 or more, or there is
   none (unset, not a number, below 3, a file that is not a pipe); a line
   sent is "DONE TOTAL" whole numbers, what kgl_child_follow reads; and with
   the reader gone the sender is told to stop. */
TEST(children_send_steps_down_the_pipe_their_parent_named)
{
    int p[2];
    if (!CHECK(pipe(p) == 0)) return;
    int fd = p[1] >= 3 ? p[1] : fcntl(p[1], F_DUPFD, 3);
    char text[32];
    snprintf(text, sizeof text, "%d", fd);
    CHECK(unsetenv("KGL_PROGRESS_FD") == 0 && kgl_child_steps_pipe() == -1);
    setenv("KGL_PROGRESS_FD", text, 1);
    CHECK(kgl_child_steps_pipe() == fd);
    setenv("KGL_PROGRESS_FD", "2", 1); /* stderr: never a steps' pipe */
    CHECK(kgl_child_steps_pipe() == -1);
    snprintf(text, sizeof text, "%dx", fd);
    setenv("KGL_PROGRESS_FD", text, 1);
    CHECK(kgl_child_steps_pipe() == -1);
    char path[600];
    snprintf(path, sizeof path, "%s/not-a-pipe", T->tmp);
    int file = open(path, O_CREAT | O_WRONLY, 0600);
    snprintf(text, sizeof text, "%d", file);
    setenv("KGL_PROGRESS_FD", text, 1);
    CHECK(file >= 3 && kgl_child_steps_pipe() == -1);
    close(file);
    CHECK(kgl_child_send_steps(fd, 5, 12) && kgl_child_send_steps(fd, 12, 12));
    char got[64] = "";
    ssize_t n = read(p[0], got, sizeof got - 1);
    CHECK(n > 0 && strcmp(got, "5 12\n12 12\n") == 0);
    signal(SIGPIPE, SIG_IGN); /* as kgl train does: a write to a pipe without a reader fails with EPIPE */
    close(p[0]);
    CHECK(!kgl_child_send_steps(fd, 13, 12));
    close(fd);
    unsetenv("KGL_PROGRESS_FD");
}
