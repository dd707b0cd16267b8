/* children.c — jobs that are other programs: kgl benchmark's runs, each a
 * `kgl train` process, not a kgl_run_train in the calling process, because
 * a run must fail alone (kgl_die exits the whole process). What a runner
 * needs of such a process it gets through channels meant for it: its
 * steps down a pipe (lines "DONE TOTAL", KGL_PROGRESS_FD), its exit status,
 * its stdout and stderr where it was told to write them.
 *
 * SIGINT and SIGTERM reach the runner alone (each child is in a process
 * group of its own, so that a terminal's Ctrl-C does not reach the children
 * twice, from the terminal and passed on): kgl_children_signal passes each
 * one on to the children going, which stop after their current step as kgl
 * train does (a second signal: at once). The children going are one slot
 * per worker of the runner, lock-free atomics the handler may read from any
 * thread. Each signal reaches each child once: the handler and a worker
 * that has just started its child both catch the child up to the signals
 * counted, and a compare-and-swap on the count it has had decides who sends
 * each. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kgl/engine.h"
#include "internal.h"

extern char **environ;

static _Atomic pid_t child_of_slot[KGL_CHILD_SLOTS];
static atomic_int signals_had[KGL_CHILD_SLOTS]; /* the signals passed on to the slot's child */
static atomic_int stop_signal, signals_seen;

/* Passes the signals seen and not yet passed on to the child in `slot`. */
static void catch_up(int slot)
{
    pid_t pid = atomic_load(&child_of_slot[slot]);
    int seen = atomic_load(&signals_seen), had = atomic_load(&signals_had[slot]);
    while (pid > 0 && had < seen)
        if (atomic_compare_exchange_weak(&signals_had[slot], &had, had + 1)) kill(pid, atomic_load(&stop_signal)), had++;
}

void kgl_children_signal(int sig)
{
    atomic_store(&stop_signal, sig);
    atomic_fetch_add(&signals_seen, 1);
    for (int k = 0; k < KGL_CHILD_SLOTS; k++) catch_up(k);
}

int kgl_children_stop_signal(void) { return atomic_load(&stop_signal); }

pid_t kgl_child_spawn(char **argv, int out_fd, int err_fd, int steps_fd, char **envp, int slot)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none;
    sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    if (steps_fd >= 0) posix_spawn_file_actions_adddup2(&fa, steps_fd, 3);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none); /* not this thread's mask */
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    pid_t pid = 0;
    int seen = atomic_load(&signals_seen), e = 0; /* before the check: a signal after it is caught up below */
    if (!atomic_load(&stop_signal)) {
        e = posix_spawn(&pid, argv[0], &fa, &attr, argv, envp);
        if (!e) {
            atomic_store(&signals_had[slot], seen);
            atomic_store(&child_of_slot[slot], pid);
            catch_up(slot); /* a signal the handler passed on before the slot held the child */
        }
    }
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (e) {
        errno = e;
        return -1;
    }
    return pid;
}

int kgl_child_wait(int slot)
{
    pid_t pid = atomic_load(&child_of_slot[slot]);
    siginfo_t info;
    /* the slot is left before the child is reaped: its pid cannot be
       another process's while the handler may still send to it */
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {}
    atomic_store(&child_of_slot[slot], 0);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return status;
}

kgl_child_outcome kgl_child_capture(char **argv, char **envp, int slot, char **said, int *status)
{
    *said = NULL, *status = 0;
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC), fd[2] = {-1, -1};
    if (devnull < 0 || pipe(fd) != 0) {
        int e = errno;
        if (devnull >= 0) close(devnull);
        errno = e;
        return KGL_CHILD_NO_PIPE;
    }
    fcntl(fd[0], F_SETFD, FD_CLOEXEC);
    fcntl(fd[1], F_SETFD, FD_CLOEXEC);
    pid_t pid = kgl_child_spawn(argv, devnull, fd[1], -1, envp, slot);
    int spawn_errno = errno;
    close(devnull);
    close(fd[1]);
    size_t len = 0, cap = 1 << 16;
    char *text = kgl_xmalloc(cap);
    for (ssize_t got; pid > 0 && (got = read(fd[0], text + len, cap - len - 1)) != 0;) {
        if (got > 0) len += (size_t)got;
        else if (errno != EINTR) break;
        if (cap - len < 2) text = kgl_xrealloc_for(text, cap *= 2, "a program's messages");
    }
    text[len] = 0;
    close(fd[0]);
    *said = text;
    if (pid > 0) *status = kgl_child_wait(slot);
    errno = spawn_errno;
    return pid > 0 ? KGL_CHILD_ENDED : pid == 0 ? KGL_CHILD_NOT_STARTED : KGL_CHILD_CANNOT_START;
}

/* The pipes and the processes are made one at a time, so that no child
   started by another worker meanwhile inherits this child's pipe (which
   would then not end with this child): its ends are close-on-exec before
   any other start. */
static pthread_mutex_t spawning = PTHREAD_MUTEX_INITIALIZER;

pid_t kgl_child_spawn_steps(char **argv, int out_fd, int err_fd, char **envp, int slot, int *steps_fd)
{
    int fd[2] = {-1, -1};
    pid_t pid = -1;
    pthread_mutex_lock(&spawning);
    if (pipe(fd) == 0) {
        fcntl(fd[0], F_SETFD, FD_CLOEXEC);
        fcntl(fd[1], F_SETFD, FD_CLOEXEC);
        fcntl(fd[1], F_SETFL, O_NONBLOCK); /* a child never waits for the runner to read its steps */
        pid = kgl_child_spawn(argv, out_fd, err_fd, fd[1], envp, slot);
        int e = errno;
        close(fd[1]);
        errno = e;
    }
    int e = errno;
    pthread_mutex_unlock(&spawning);
    if (pid <= 0 && fd[0] >= 0) close(fd[0]);
    *steps_fd = pid > 0 ? fd[0] : -1;
    errno = e;
    return pid;
}

int kgl_child_follow(int steps_fd, int slot, kgl_jobs *jobs, int job)
{
    char buf[4096];
    size_t used = 0;
    long done = -1, total = -1;
    for (;;) {
        ssize_t got = read(steps_fd, buf + used, sizeof buf - 1 - used);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        used += (size_t)got;
        buf[used] = 0;
        char *line = buf, *nl;
        for (; (nl = strchr(line, '\n')); line = nl + 1) {
            long d, t;
            if (sscanf(line, "%ld %ld", &d, &t) == 2 && d >= 0 && t >= 0) {
                done = d < t ? d : t, total = t;
                kgl_jobs_report(jobs, job, done, total);
            }
        }
        used = strlen(line); /* a line not yet whole waits for its end */
        memmove(buf, line, used);
        if (used == sizeof buf - 1) used = 0; /* not a line of steps */
    }
    close(steps_fd);
    if (done >= 0) kgl_jobs_report(jobs, job, done, done);
    return kgl_child_wait(slot);
}

char **kgl_environment_with(const char *setting)
{
    size_t name = strcspn(setting, "=") + 1; /* "NAME=" */
    int n = 0;
    while (environ[n]) n++;
    char **envp = kgl_xcalloc((size_t)n + 2, sizeof *envp);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strncmp(environ[i], setting, name) != 0) envp[k++] = environ[i];
    envp[k++] = (char *)setting;
    envp[k] = NULL;
    return envp;
}

/* ---- the child's side of the steps' pipe ---------------------------------- */

int kgl_child_steps_pipe(void)
{
    const char *text = getenv("KGL_PROGRESS_FD");
    char *end;
    long fd = text ? strtol(text, &end, 10) : -1;
    struct stat st;
    if (!text || *end || fd < 3 || fd > INT_MAX || fstat((int)fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return -1;
    return (int)fd;
}

bool kgl_child_send_steps(int fd, double done, double total)
{
    char text[64];
    int n = snprintf(text, sizeof text, "%.0f %.0f\n", done, total);
    return write(fd, text, (size_t)n) >= 0 || errno == EAGAIN || errno == EINTR; /* EPIPE: SIGPIPE is ignored */
}
