/* io_tmpfiles.c — the temporaries behind every file kgl writes
 * (src/io/tmpfiles.c): the registry a signal handler empties gives each
 * temporary a slot of its own, and a save whose temporary name is already
 * taken (by chance, or by someone's file or link) draws another name, leaves
 * that file alone and succeeds. */
#include <stdlib.h>
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
