/* io_tmpfiles.c — the temporaries behind every file kgl writes
 * (src/io/tmpfiles.c): the registry a signal handler empties gives each
 * temporary a slot of its own, and a save whose temporary name is already
 * taken (by chance, or by someone's file or link) draws another name, leaves
 * that file alone and succeeds; a FIFO is written in place, a folder
 * refused, and a set of files whose rename fails halfway says which is which. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/internal.h"
#include "test.h"

TEST(tmp_registry_gives_each_temporary_its_own_slot)
{
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/a.tmp", T->tmp);
    snprintf(b, sizeof b, "%s/b.tmp", T->tmp);
    write_tmp(T, 0, "a.tmp", "a", 1);
    write_tmp(T, 1, "b.tmp", "b", 1);
    int sa = kgl_tmp_register(a), sb = kgl_tmp_register(b);
    CHECK(sa >= 0 && sb >= 0 && sa != sb);
    /* what a signal handler does: both temporaries go */
    kgl_tmp_remove_all();
    CHECK(access(a, F_OK) != 0 && access(b, F_OK) != 0);
    /* an unregistered slot is free again, and a file no longer registered stays */
    write_tmp(T, 0, "a.tmp", "a", 1);
    sa = kgl_tmp_register(a);
    kgl_tmp_unregister(sa);
    kgl_tmp_remove_all();
    CHECK(access(a, F_OK) == 0);
}

/* The first draw's name (all digits 0) taken by a file placed there: */
static int draws;
static uint64_t zero_then_random(void) { return draws++ == 0 ? 0 : kgl_random64(); }

TEST(save_succeeds_when_its_temporary_name_is_taken)
{
    char path[4200], taken[4300], e[4400];
    snprintf(path, sizeof path, "%s/out.txt", T->tmp);
    snprintf(taken, sizeof taken, "%s.%ld.%016d.tmp", path, (long)getpid(), 0);
    write_tmp(T, 0, "placed", "someone's", 9);
    char placed[4300];
    snprintf(placed, sizeof placed, "%s/placed", T->tmp);
    CHECK(rename(placed, taken) == 0);
    kgl_tmp_name_source = zero_then_random;
    kgl_outfile o;
    bool opened = kgl_outfile_open(&o, path, e, sizeof e);
    kgl_tmp_name_source = kgl_random64;
    if (!CHECK(opened)) {
        printf("    %s\n", e);
        return;
    }
    CHECK(draws == 2 && strcmp(o.tmp, taken) != 0);
    fputs("whole\n", o.f);
    CHECK(kgl_outfile_commit(&o, e, sizeof e));
    size_t n;
    char *got = test_slurp(path, &n), *kept = test_slurp(taken, &n);
    CHECK(got && strcmp(got, "whole\n") == 0);
    CHECK(kept && strcmp(kept, "someone's") == 0);
    free(got);
    free(kept);
}

/* A FIFO's reader, on a thread of its own: reads everything into `got`. */
typedef struct fifo_reader {
    const char *path;
    char got[256];
} fifo_reader;

static void *read_fifo(void *arg)
{
    fifo_reader *r = arg;
    FILE *f = fopen(r->path, "rb");
    size_t n = f ? fread(r->got, 1, sizeof r->got - 1, f) : 0;
    r->got[n] = 0;
    if (f) fclose(f);
    return NULL;
}

/* Issue 46: a FIFO was replaced by a regular file (the temporary renamed
   over it). It is written directly: no temporary, still a FIFO after. */
TEST(outfile_writes_a_fifo_in_place)
{
    fifo_reader r = {0};
    char path[4200], e[4400];
    snprintf(path, sizeof path, "%s/pipe", T->tmp);
    if (!CHECK(mkfifo(path, 0600) == 0)) return;
    r.path = path;
    pthread_t reader;
    if (!CHECK(pthread_create(&reader, NULL, read_fifo, &r) == 0)) return;
    kgl_outfile o;
    bool opened = kgl_outfile_open(&o, path, e, sizeof e); /* waits for the reader */
    if (CHECK(opened)) {
        CHECK(o.tmp == NULL);
        fputs("through the pipe\n", o.f);
        CHECK(kgl_outfile_commit(&o, e, sizeof e));
    }
    pthread_join(reader, NULL);
    CHECK(strcmp(r.got, "through the pipe\n") == 0);
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode));
}

/* A folder as the output: refused at open, not after the work. */
TEST(outfile_refuses_a_folder)
{
    char path[4200], e[4400];
    snprintf(path, sizeof path, "%s/folder", T->tmp);
    if (!CHECK(mkdir(path, 0700) == 0)) return;
    kgl_outfile o;
    bool opened = kgl_outfile_open(&o, path, e, sizeof e);
    if (opened) kgl_outfile_discard(&o);
    CHECK(!opened && strstr(e, "folder: is a folder, not a file: give a file's path"));
}

/* A rename that fails once the temporary is written (the name became a
   folder meanwhile): the temporary is removed, the message says why. */
TEST(outfile_failed_rename_removes_the_temporary)
{
    char path[4200], inner[4300], e[8192];
    snprintf(path, sizeof path, "%s/late", T->tmp);
    kgl_outfile o;
    if (!CHECK(kgl_outfile_open(&o, path, e, sizeof e))) return;
    fputs("whole\n", o.f);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(inner, sizeof inner, "%s/x", path);
    FILE *f = fopen(inner, "w");
    if (CHECK(f != NULL)) fclose(f);
    CHECK(!kgl_outfile_commit(&o, e, sizeof e));
    char want[8400];
    snprintf(want, sizeof want, "%s: cannot replace it with the new file: ", path);
    CHECK(strncmp(e, want, strlen(want)) == 0);
    char cmd[4400];
    static char out[4096], err[4096];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp", T->tmp);
    run_sh(T, cmd, out, sizeof out, err, sizeof err);
    CHECK(strcmp(out, "0\n") == 0);
}

/* A set whose third rename fails (its name became a folder after the
   files were opened): the message says which files are new and which are
   as they were, and no temporary is left. */
TEST(outfile_set_says_which_files_a_failed_rename_left)
{
    static const char *const names[3] = {"s.train.tsv", "s.valid.tsv", "s.test.tsv"};
    char paths[3][4200], e[8192], inner[4300];
    kgl_outfile o[3];
    for (int k = 0; k < 3; k++) {
        snprintf(paths[k], sizeof paths[k], "%s/%s", T->tmp, names[k]);
        write_tmp(T, k, names[k], "old\n", 4);
        if (!CHECK(kgl_outfile_open(&o[k], paths[k], e, sizeof e))) return;
        fprintf(o[k].f, "new %d\n", k);
    }
    /* s.test.tsv becomes a folder that is not empty: a file cannot be renamed over it */
    CHECK(unlink(paths[2]) == 0 && mkdir(paths[2], 0700) == 0);
    snprintf(inner, sizeof inner, "%s/x", paths[2]);
    FILE *f = fopen(inner, "w");
    if (CHECK(f != NULL)) fclose(f);
    CHECK(!kgl_outfile_commit_set(o, 3, e, sizeof e));
    char want[16384];
    snprintf(want, sizeof want, "%s: cannot replace it with the new file: ", paths[2]);
    CHECK(strncmp(e, want, strlen(want)) == 0);
    snprintf(want, sizeof want, "; already replaced: %s, %s; not replaced (as they were): %s", paths[0], paths[1],
             paths[2]);
    if (!CHECK(strstr(e, want) != NULL)) printf("    %s\n", e);
    char *a = test_slurp(paths[0], NULL), *b = test_slurp(paths[1], NULL);
    CHECK(a && b && strcmp(a, "new 0\n") == 0 && strcmp(b, "new 1\n") == 0);
    free(a);
    free(b);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp", T->tmp);
    static char out[4096], err[4096];
    run_sh(T, cmd, out, sizeof out, err, sizeof err);
    CHECK(strcmp(out, "0\n") == 0);
}
