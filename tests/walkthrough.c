/* walkthrough.c — kgl as a user meets it: the installed library with its
 * pkg-config file, a program built against it (tests/example/), make
 * uninstall, and the README's walkthrough run exactly as it is written. */
#include <libgen.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
static const char *const installed[] = {"bin/kgl", "lib/libkgl.a", "lib/pkgconfig/kgl.pc", "bin/kgl-f32",
                                        "lib/libkgl-f32.a", "lib/pkgconfig/kgl-f32.pc", "include/kgl.h",
                                        "include/kgl/engine.h", "include/kgl/io.h", "include/kgl/model.h",
                                        "include/kgl/studies.h"};
#define N_INSTALLED (int)(sizeof installed / sizeof installed[0])

/* `make test` installs kgl into BUILD/stage and builds tests/example/predict_family.c
 * with `pkg-config --cflags --libs kgl` against it. The program trains on the
 * walkthrough's family graph, keeps the model best on valid (kgl_run_train)
 * and asks who Jack's parents are; `kgl train` with the same options must
 * choose the same step with the same valid MRR, and `kgl predict` give the
 * same answer with the same score, to the last bit (the library is the
 * program's engine, not a copy). */
/* The example program built as `program` answers as `kgl train` and `kgl
   predict` run with `precision` (the same options) do, to the last bit. */
static void example_answers_as_the_cli(test_ctx *T, const char *program, const char *precision)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s/example/%s' data/walkthrough/family.train.tsv", build_dir(T), program);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    long best_step = -1;
    char best_mrr[64] = "", *line = strstr(out, "best valid MRR ");
    CHECK(line && sscanf(line, "best valid MRR %63s at step %ld", best_mrr, &best_step) == 2);
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
             "train --train data/walkthrough/family.train.tsv --valid data/walkthrough/family.valid.tsv "
             "--eval-every 100 --dim 32 --heads 4 --weight-decay 0.5 --steps 1000 --seed 1 --json %s "
             "--save %s/family-%s.safetensors",
             precision, T->tmp, program);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char cli_step[32] = "", cli_mrr[64] = "", step[32];
    CHECK(test_json_raw(out, "best_step", cli_step, sizeof cli_step));
    CHECK(test_json_raw(out, "best_valid_mrr", cli_mrr, sizeof cli_mrr));
    snprintf(step, sizeof step, "%ld", best_step);
    /* the same step chosen, with the same MRR (both %.17g: the same double) */
    if (!CHECK(strcmp(cli_step, step) == 0 && strcmp(cli_mrr, best_mrr) == 0))
        printf("    the example: step %s, MRR %s; kgl train: step %s, MRR %s\n", step, best_mrr, cli_step, cli_mrr);
    snprintf(cmd, sizeof cmd,
             "predict %s --checkpoint %s/family-%s.safetensors --train data/walkthrough/family.train.tsv "
             "--relation parent_of --tail Jack --top 1 --json",
             precision, T->tmp, program);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    const char *s = strstr(out, "\"entity\":\"Victor\",\"score\":");
    CHECK(s != NULL);
    double cli_score = s ? strtod(s + strlen("\"entity\":\"Victor\",\"score\":"), NULL) : NAN;
    CHECK(cli_score == score); /* both printed with 17 significant digits: the same double */
}

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
    snprintf(cmd, sizeof cmd, "cat '%s/stage/lib/pkgconfig/kgl-f32.pc'", build_dir(T));
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "Cflags: -I${includedir} -DKGL_FLOAT32\n") != NULL);
    CHECK(strstr(out, "Libs: -L${libdir} -lkgl-f32 -lm -pthread") != NULL);
    example_answers_as_the_cli(T, "predict_family", "");
    /* the same source against kgl-f32 answers as kgl --precision f32 */
    example_answers_as_the_cli(T, "predict_family_f32", "--precision f32");
}

/* make, as a user runs it: not as a sub-make of `make test` (whose
   MAKEFLAGS would add "Entering directory" lines and its own variables). */
#define MAKE_ALONE "env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make --no-print-directory -s"

/* make uninstall removes exactly what make install wrote: a copy of the
 * staged installation, with a file of someone else's beside ours, is left
 * with that file only. */
TEST(make_uninstall_removes_exactly_the_installed_files)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cp -R '%s/stage' '%s/prefix' && echo other > '%s/prefix/lib/other.txt' && "
             MAKE_ALONE " uninstall PREFIX='%s/prefix' && find '%s/prefix' -type f | sort",
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
    CHECK(run_sh(T, MAKE_ALONE " uninstall PREFIX=relative/dir", out, sizeof out, err, sizeof err) != 0);
    CHECK(strstr(err, "PREFIX must be an absolute path") != NULL);
}

/* The README's walkthrough, run as written: every `$ ` line of the
 * ```console blocks of its "Walkthrough" section is run with sh in an empty
 * folder that holds only `data` (the repository's) and `build/kgl` (the
 * binary under test), in order; each must exit 0, and every output line the
 * README shows under it (but `…`) must be a line of what it printed
 * (trailing blanks ignored). So the README cannot drift from the program. */
#define WALK_MAX_CMDS 32
#define WALK_MAX_LINES 64

static void rstrip(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = '\0';
}

/* Whether `line` is one of the lines of `text` (both without trailing blanks). */
static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r')) len--;
        if (len == n && strncmp(p, line, n) == 0) return true;
        if (!end) break;
        p = end + 1;
    }
    return false;
}

TEST(readme_walkthrough_runs_as_written)
{
    static char readme[1 << 18], both[(1 << 17) + (1 << 15) + 2];
    FILE *f = fopen("README.md", "rb");
    CHECK(f != NULL);
    if (!f) return;
    size_t len = fread(readme, 1, sizeof readme - 1, f);
    fclose(f);
    readme[len] = '\0';
    char *sec = strstr(readme, "\n## Walkthrough");
    CHECK(sec != NULL);
    if (!sec) return;
    char *next = strstr(sec + 1, "\n## ");
    if (next) *next = '\0';

    /* the folder: data/ and build/kgl only */
    char cmd[16384], cwd[4096], data[4200], kgl[8400];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(data, sizeof data, "%s/data", cwd);
    if (T->kgl[0] == '/')
        snprintf(kgl, sizeof kgl, "%s", T->kgl);
    else
        snprintf(kgl, sizeof kgl, "%s/%s", cwd, T->kgl);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/wt/build' && ln -s '%s' '%s/wt/data' && ln -s '%s' '%s/wt/build/kgl'", T->tmp,
             data, T->tmp, kgl, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);

    /* parse the console blocks into commands and the lines shown under them */
    char *cmds[WALK_MAX_CMDS], *shown[WALK_MAX_CMDS][WALK_MAX_LINES];
    int n_cmds = 0, n_shown[WALK_MAX_CMDS] = {0};
    bool in_block = false;
    for (char *line = strtok(sec, "\n"); line; line = strtok(NULL, "\n")) {
        rstrip(line);
        if (strncmp(line, "```", 3) == 0) {
            in_block = strcmp(line, "```console") == 0;
            continue;
        }
        if (!in_block) continue;
        if (strncmp(line, "$ ", 2) == 0) {
            CHECK(n_cmds < WALK_MAX_CMDS);
            if (n_cmds == WALK_MAX_CMDS) return;
            cmds[n_cmds++] = line + 2;
        } else if (n_cmds > 0 && strcmp(line, "…") != 0) {
            int c = n_cmds - 1;
            CHECK(n_shown[c] < WALK_MAX_LINES);
            if (n_shown[c] < WALK_MAX_LINES) shown[c][n_shown[c]++] = line;
        }
    }
    /* the six steps are there: train, eval, predict (head and tail questions), heads, export */
    const char *steps[] = {"kgl train ", "kgl eval ", "--tail Jack", "--head Nigel", "kgl heads ", "kgl export "};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        bool found = false;
        for (int c = 0; c < n_cmds; c++) found = found || strstr(cmds[c], steps[s]) != NULL;
        if (!found) printf("    the walkthrough has no command with '%s'\n", steps[s]);
        CHECK(found);
    }

    for (int c = 0; c < n_cmds; c++) {
        snprintf(cmd, sizeof cmd, "cd '%s/wt' && %s", T->tmp, cmds[c]);
        int status = run_sh(T, cmd, out, sizeof out, err, sizeof err);
        if (status != 0) printf("    '%s' exited %d: %s\n", cmds[c], status, err);
        CHECK(status == 0);
        snprintf(both, sizeof both, "%s\n%s", out, err);
        for (int k = 0; k < n_shown[c]; k++) {
            bool ok = has_line(both, shown[c][k]);
            if (!ok) printf("    '%s' did not print the README's line:\n      %s\n", cmds[c], shown[c][k]);
            CHECK(ok);
        }
    }
    snprintf(cmd, sizeof cmd, "cd '%s/wt' && test -s family.safetensors && test -s ranks.tsv && test -s figs/query.svg",
             T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
}

/* The recipe's computed options, as the manual's `kgl train` section
 * (data/report/manual.md) shows them for Nations, are what kgl prints for
 * that command: a change to data/bench/recipe.args that the manual missed
 * fails here. (`--steps 1` keeps the run short; the line then shows the
 * run's --steps 1 where the manual's shows the recipe's, and says so at its
 * end.) */
TEST(manual_recipe_line_is_what_kgl_prints)
{
    char *manual = test_slurp("data/report/manual.md", NULL);
    if (!CHECK(manual != NULL)) return;
    const char *prompt = "\n  $ build/kgl ";
    char *at = strstr(manual, "\n  $ build/kgl train --recipe data/bench/recipe.args");
    if (CHECK(at != NULL)) {
        char *args = at + strlen(prompt), *eol = strchr(args, '\n');
        char *shown = eol ? eol + 1 : NULL, *shown_end = shown ? strchr(shown, '\n') : NULL;
        if (CHECK(eol && shown_end && strncmp(shown, "  kgl train: recipe ", 20) == 0)) {
            *eol = '\0';
            *shown_end = '\0';
            rstrip(shown);
            char cmd[2048];
            snprintf(cmd, sizeof cmd, "%s --steps 1", args); /* not --quiet: it hides the line */
            CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
            char want[4096] = "";
            const char *steps = strstr(shown, " --steps ");
            if (CHECK(steps != NULL))
                snprintf(want, sizeof want, "%.*s --steps 1%s (--steps from the command line)",
                         (int)(steps - shown - 2), shown + 2, steps + 9 + strspn(steps + 9, "0123456789"));
            bool ok = has_line(err, want);
            if (!ok) printf("    kgl printed:\n%s\n    the manual shows (with --steps 1):\n%s\n", err, want);
            CHECK(ok);
        }
    }
    free(manual);
}

/* The repository stands alone: nothing in it sends a reader to material
 * outside the clone (the model's specification is README's "The model,
 * exactly"; the benchmark data is data/kg). The patterns are split so that
 * this file does not match itself. */
TEST(nothing_points_outside_the_clone)
{
    static const char *const patterns[] = {"MODEL" ".md", "../" "shared", "shared/" "kg", "shared/" "bench"};
    for (size_t k = 0; k < sizeof patterns / sizeof patterns[0]; k++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd,
                 "grep -rIlF '%s' README.md Makefile .ci src include train tests data 2>/dev/null; true",
                 patterns[k]);
        CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
        if (out[0]) printf("    '%s' appears in:\n%s", patterns[k], out);
        CHECK(out[0] == '\0');
    }
}
