/* walkthrough.c — kgl as a user meets it: the installed library with its
 * pkg-config file, a program built against it (tests/example/), make
 * uninstall, and the README's walkthrough run exactly as it is written. */
#include <libgen.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "test.h"

static char out[1 << 17], err[1 << 15];

/* The folder the binary under test was built in (build/, build/clang/, build/sanitize/…). */
static const char *build_dir(test_ctx *T)
{
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s", T->kgl);
    return dirname(dir);
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The files `make install` puts under PREFIX (the Makefile's INSTALLED list). */
static const char *const installed[] = {"bin/kgl", "lib/libkgl.a", "lib/pkgconfig/kgl.pc", "include/kgl.h",
                                        "include/kgl/engine.h", "include/kgl/io.h", "include/kgl/model.h",
                                        "include/kgl/studies.h"};
#define N_INSTALLED (int)(sizeof installed / sizeof installed[0])

/* `make test` installs kgl into BUILD/stage and builds tests/example/predict_family.c
 * with `pkg-config --cflags --libs kgl` against it. The program trains on the
 * walkthrough's family graph and asks who Jack's parents are; `kgl train` with
 * the same options and `kgl predict` must give the same answer with the same
 * score, to the last bit (the library is the program's engine, not a copy). */
TEST(example_program_built_against_installed_kgl_answers_as_the_cli)
{
    char path[2048], cmd[4096];
    for (int k = 0; k < N_INSTALLED; k++) {
        snprintf(path, sizeof path, "%s/stage/%s", build_dir(T), installed[k]);
        if (!is_file(path)) printf("    missing: %s\n", path);
        CHECK(is_file(path));
    }
    snprintf(cmd, sizeof cmd, "cat '%s/stage/lib/pkgconfig/kgl.pc'", build_dir(T));
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "Version: " KGL_VERSION "\n") != NULL);
    CHECK(strstr(out, "Libs: -L${libdir} -lkgl -lm -pthread") != NULL);

    snprintf(cmd, sizeof cmd, "'%s/example/predict_family' data/walkthrough/family.train.tsv", build_dir(T));
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    const char *first = strstr(out, "\n1\t");
    CHECK(first != NULL);
    if (!first) return;
    char name[64] = "";
    double score = NAN;
    CHECK(sscanf(first + 3, "%63[^\t]\t%lf", name, &score) == 2);
    /* Victor is Jack's other parent: married to Rosalind, who is Jack's
       parent in train, while "Victor parent_of Jack" itself is held out. */
    CHECK(strcmp(name, "Victor") == 0);

    snprintf(cmd, sizeof cmd,
             "train --train data/walkthrough/family.train.tsv --dim 32 --heads 4 --weight-decay 0.5 --steps 1000 "
             "--seed 1 --quiet --save %s/family.safetensors",
             T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd,
             "predict --checkpoint %s/family.safetensors --train data/walkthrough/family.train.tsv "
             "--relation parent_of --tail Jack --top 1 --json",
             T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    const char *s = strstr(out, "\"entity\":\"Victor\",\"score\":");
    CHECK(s != NULL);
    double cli_score = s ? strtod(s + strlen("\"entity\":\"Victor\",\"score\":"), NULL) : NAN;
    CHECK(cli_score == score); /* both printed with 17 significant digits: the same double */
}

/* make uninstall removes exactly what make install wrote: a copy of the
 * staged installation, with a file of someone else's beside ours, is left
 * with that file only. */
TEST(make_uninstall_removes_exactly_the_installed_files)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cp -R '%s/stage' '%s/prefix' && echo other > '%s/prefix/lib/other.txt' && "
             "make -s uninstall PREFIX='%s/prefix' && find '%s/prefix' -type f | sort",
             build_dir(T), T->tmp, T->tmp, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char want[2048];
    snprintf(want, sizeof want, "%s/prefix/lib/other.txt\n", T->tmp);
    CHECK(strcmp(out, want) == 0);
    if (strcmp(out, want) != 0) printf("    left: %s\n", out);
    /* include/kgl/ was ours alone, so it goes too */
    snprintf(cmd, sizeof cmd, "test ! -e '%s/prefix/include/kgl'", T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    /* a relative PREFIX is refused before anything is removed */
    CHECK(run_sh(T, "make -s uninstall PREFIX=relative/dir", out, sizeof out, err, sizeof err) != 0);
    CHECK(strstr(err, "PREFIX must be an absolute path") != NULL);
}
