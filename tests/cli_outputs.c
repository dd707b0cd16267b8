/* cli_outputs.c — outputs that are not regular files (issue 46): a
 * character device or a FIFO given as --log, --save or --ranks is written as
 * it is, never replaced by a regular file (as root, --log /dev/null would
 * have replaced the system's /dev/null); one device may be several outputs;
 * a folder or a disk is refused. */
#define _XOPEN_SOURCE 700 /* mknod, S_IFCHR */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "test.h"

static char out[1 << 16], err[1 << 16];

static bool is_fifo(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

static bool is_char_device(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

/* kgl by its full path, for commands run in T->tmp */
static const char *kgl_path(test_ctx *T)
{
    static char path[8400];
    char cwd[4096];
    if (T->kgl[0] == '/' || !getcwd(cwd, sizeof cwd)) snprintf(path, sizeof path, "%s", T->kgl);
    else snprintf(path, sizeof path, "%s/%s", cwd, T->kgl);
    return path;
}

/* Runs `kgl ARGS` (ARGS naming T->tmp/f, a FIFO made here) while a reader
   copies the FIFO into T->tmp/copy; true when kgl exits 0 and the FIFO is
   still one. The reader gives up after 20 s, so that a kgl that replaced
   the FIFO (and so never opened it) does not leave the test waiting. */
static bool through_fifo(test_ctx *T, const char *args)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && rm -f f copy && mkfifo f && { timeout 20 cat f > copy & } && '%s' %s; rc=$?; wait; exit $rc",
             T->tmp, kgl_path(T), args);
    int rc = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/f", T->tmp);
    bool ok = rc == 0 && is_fifo(fifo);
    if (!ok) printf("    kgl %s: rc %d, %s\n    stderr: %s", args, rc, is_fifo(fifo) ? "still a FIFO" : "no longer a FIFO",
                    err);
    return ok;
}

TEST(outputs_that_are_fifos_are_written_in_place)
{
    char copy[4200];
    snprintf(copy, sizeof copy, "%s/copy", T->tmp);
    /* the log: its CSV reaches the reader */
    if (CHECK(through_fifo(T, "train --steps 3 --quiet --log f"))) {
        char *text = test_slurp(copy, NULL);
        CHECK(text && strncmp(text, "step,loss,", 10) == 0 && test_count(text, "\n") == 2);
        free(text);
    }
    /* the checkpoint: the reader's copy is a checkpoint of step 3 */
    if (CHECK(through_fifo(T, "train --steps 3 --quiet --save f"))) {
        kgl_st_file st;
        char e[512];
        if (CHECK(kgl_st_read(copy, &st, e, sizeof e))) {
            CHECK(strcmp(kgl_st_meta(&st, "step"), "3") == 0);
            kgl_st_free(&st);
        }
    }
    /* eval --ranks: a header and the 42 ranks of the academic world */
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "train --steps 3 --quiet --save '%s/m.st'", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    if (CHECK(through_fifo(T, "eval --checkpoint m.st --ranks f"))) {
        char *text = test_slurp(copy, NULL);
        CHECK(text && strncmp(text, "split\thead\t", 11) == 0 && test_count(text, "\n") == 43);
        free(text);
    }
    /* one FIFO as two outputs would mix two files in one stream: refused
       (before it is opened: with no reader, a kgl that opened it would wait
       there, so it gets 10 s) */
    snprintf(cmd, sizeof cmd, "cd '%s' && timeout 10 '%s' train --steps 3 --quiet --log f --save f", T->tmp,
             kgl_path(T));
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 2 && strstr(err, "--log f is the same file as --save f"));
}

/* A character device (a copy of /dev/null's, made with mknod, which needs
   root: skipped without it) stays a device, and may be given twice. */
TEST(outputs_that_are_character_devices_stay_devices)
{
    char dev[4200], cmd[9000];
    snprintf(dev, sizeof dev, "%s/fakenull", T->tmp);
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) != 0) {
        if (errno == EPERM) test_skip(T, "mknod needs root");
        else CHECK(false);
        return;
    }
    snprintf(cmd, sizeof cmd, "train --steps 3 --quiet --log %s", dev);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(is_char_device(dev));
    /* --log and --save both to it: a device keeps nothing that writing could destroy */
    snprintf(cmd, sizeof cmd, "train --steps 3 --quiet --log %s --save %s", dev, dev);
    int rc = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 0)) printf("    rc %d: %s", rc, err);
    CHECK(is_char_device(dev));
    /* a disk is refused, before any work */
    char disk[4200];
    snprintf(disk, sizeof disk, "%s/fakedisk", T->tmp);
    if (CHECK(mknod(disk, S_IFBLK | 0600, makedev(7, 250)) == 0)) {
        snprintf(cmd, sizeof cmd, "train --steps 3 --quiet --save %s", disk);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 &&
              strstr(err, "is a block device (a disk), not a file: give a file's path"));
        struct stat st;
        CHECK(lstat(disk, &st) == 0 && S_ISBLK(st.st_mode));
    }
}

/* An ensemble writes member k beside --save and --log (F.m1, …): beside a
   FIFO or a device that would be a new regular file in its folder (as root,
   /dev/null.m1 in /dev). Refused before any training, naming the file. */
TEST(ensemble_beside_a_fifo_is_refused)
{
    char fifo[4200], beside[4300], cmd[8800];
    snprintf(fifo, sizeof fifo, "%s/f", T->tmp);
    snprintf(beside, sizeof beside, "%s/f.m1", T->tmp);
    if (!CHECK(mkfifo(fifo, 0600) == 0)) return;
    snprintf(cmd, sizeof cmd, "train --ensemble 2 --steps 2 --log %s", fifo);
    char o[4096], e[4096];
    CHECK(run_kgl(T, cmd, o, sizeof o, e, sizeof e) == 2);
    CHECK(strstr(e, "member 1 would be written beside it as") != NULL);
    struct stat sb;
    CHECK(stat(beside, &sb) != 0);
}
