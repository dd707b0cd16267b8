/* cli_streams.c — standard output and error that fail (issue 46): a reader
 * that stops reading (SIGPIPE, EPIPE) never costs the files asked for, a
 * full or closed stdout is exit 3 with a message, and a closed stderr never
 * lets a later file take descriptor 2. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static char out[1 << 16], err[1 << 16];

static const char *tpath(test_ctx *T, int slot, const char *name)
{
    static char paths[8][600];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", T->tmp, name);
    return paths[slot];
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Runs `kgl ARGS` with its stdout a pipe whose read end is closed before it
 * starts (as once `| grep -m1 …` has quit: every write to it fails), with
 * SIGPIPE at its default as a shell leaves it, and stderr into err. Returns
 * the exit status, or 128 + the signal that killed it (141: SIGPIPE). */
static int run_kgl_reader_gone(test_ctx *T, const char *args, char *e, size_t cap)
{
    char cmd[8192];
    const char *err_path = tpath(T, 7, ".stderr_reader_gone");
    snprintf(cmd, sizeof cmd, "exec '%s' %s 2>'%s' </dev/null", T->kgl, args, err_path);
    int fd[2];
    if (pipe(fd) != 0) return -1;
    close(fd[0]); /* no reader, before kgl writes a byte: the same every run */
    pid_t pid = fork();
    if (pid < 0) return close(fd[1]), -1;
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        dup2(fd[1], STDOUT_FILENO);
        close(fd[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    int st;
    while (waitpid(pid, &st, 0) < 0) {}
    e[0] = 0;
    test_read_all(err_path, e, cap);
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

#define FAMILY "--train data/walkthrough/family.train.tsv --valid data/walkthrough/family.valid.tsv " \
               "--test data/walkthrough/family.test.tsv"

/* `kgl train … --save p.st | grep -m1 '^all'` died of SIGPIPE in its report
   (an ensemble's JSON is 18 KB, past stdout's buffer) before --save was
   written. Now the saves come before the report, and a reader that is gone
   is not an error: the work is done and saved, exit 0, nothing said. */
TEST(cli_reader_gone_train_saves_and_exits_0)
{
    char args[2048];
    const char *save = tpath(T, 0, "p.st"), *member1 = tpath(T, 1, "p.m1.st"), *log = tpath(T, 2, "p.csv");
    snprintf(args, sizeof args, "train " FAMILY " --dim 16 --steps 30 --ensemble 2 --json --save '%s' --log '%s'", save, log);
    int rc = run_kgl_reader_gone(T, args, err, sizeof err);
    if (!CHECK(rc == 0)) printf("    exit %d, stderr: %s\n", rc, err);
    CHECK(exists(save) && exists(member1) && exists(log));
    CHECK(strstr(err, "standard output") == NULL); /* the reader chose to stop: no message */
    kgl_st_file f;
    char e[512];
    if (CHECK(kgl_st_read(save, &f, e, sizeof e))) {
        CHECK(strcmp(kgl_st_meta(&f, "step"), "30") == 0); /* trained to the end */
        kgl_st_free(&f);
    }
}

/* `kgl heads --svg DIR | true` wrote no SVG: the pictures come before the tables. */
TEST(cli_reader_gone_heads_writes_its_pictures)
{
    char args[2048];
    const char *ck = tpath(T, 0, "h.st"), *dir = tpath(T, 1, "pics");
    snprintf(args, sizeof args, "train " FAMILY " --dim 16 --heads 4 --steps 5 --quiet --save '%s'", ck);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    snprintf(args, sizeof args, "heads --checkpoint '%s' --train data/walkthrough/family.train.tsv --svg '%s'", ck,
             dir);
    int rc = run_kgl_reader_gone(T, args, err, sizeof err);
    if (!CHECK(rc == 0)) printf("    exit %d, stderr: %s\n", rc, err);
    CHECK(exists(tpath(T, 2, "pics/head0.svg")) && exists(tpath(T, 3, "pics/head3.svg")) &&
          exists(tpath(T, 4, "pics/heads.svg")) && exists(tpath(T, 5, "pics/spec.svg")));
}

/* Results written to a full or a closed stdout were lost with exit 0. Every
   command checks the last flush of stdout: exit 3 and what failed. */
TEST(cli_stdout_that_cannot_be_written_is_exit_3)
{
    char cmd[4096];
    const char *ck = tpath(T, 0, "c.st");
    snprintf(cmd, sizeof cmd, "train --steps 5 --quiet --save '%s'", ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char commands[8][1024];
    snprintf(commands[0], sizeof commands[0], "eval --checkpoint '%s'", ck);
    snprintf(commands[1], sizeof commands[1], "eval --checkpoint '%s' --json", ck);
    snprintf(commands[2], sizeof commands[2], "train --steps 3");
    snprintf(commands[3], sizeof commands[3], "predict --checkpoint '%s' --head alice --relation advises", ck);
    snprintf(commands[4], sizeof commands[4], "split --triples data/walkthrough/family.train.tsv --out '%s/s'", T->tmp);
    snprintf(commands[5], sizeof commands[5], "heads --checkpoint '%s'", ck);
    snprintf(commands[6], sizeof commands[6], "export --checkpoint '%s' --out '%s/x'", ck, T->tmp);
    snprintf(commands[7], sizeof commands[7], "--help");
    static const char *const sinks[][2] = {{">/dev/full", "No space left on device"}, {">&-", "Bad file descriptor"}};
    for (int k = 0; k < 8; k++)
        for (int s = 0; s < 2; s++) {
            char run[2200];
            snprintf(run, sizeof run, "'%.1000s' %.1000s %s", T->kgl, commands[k], sinks[s][0]);
            int rc = run_sh(T, run, out, sizeof out, err, sizeof err);
            char want[256], name[32];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(commands[k], " "), commands[k]);
            snprintf(want, sizeof want, "kgl%s%s: cannot write the results to standard output: %s",
                     name[0] == '-' ? "" : " ", name[0] == '-' ? "" : name, sinks[s][1]);
            if (!CHECK(rc == 3 && strstr(err, want)))
                printf("    kgl %s %s: exit %d, stderr: %s\n", commands[k], sinks[s][0], rc, err);
        }
    /* a status that already says what failed is kept: 2, not 3 */
    snprintf(cmd, sizeof cmd, "'%s' eval --checkpoint /nonexistent.st >/dev/full", T->kgl);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 2);
}

/* With stderr closed (2>&-) the log's temporary was opened as descriptor 2
   and the progress lines landed inside the CSV. */
TEST(cli_closed_stderr_keeps_the_log_clean)
{
    const char *log = tpath(T, 0, "q.csv"), *ck = tpath(T, 1, "q.st");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' train --steps 20 --log-every 1 --save '%s' --log '%s' 2>&-", T->kgl, ck, log);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char *text = test_slurp(log, NULL);
    if (!CHECK(text != NULL)) return;
    CHECK(strncmp(text, "step,loss,", 10) == 0);
    CHECK(strstr(text, "elapsed") == NULL);
    CHECK(test_count(text, "\n") == 21); /* the header and 20 rows */
    free(text);
}
