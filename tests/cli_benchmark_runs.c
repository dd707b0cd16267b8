/* cli_benchmark_runs.c — kgl benchmark's runs (issue 46): each run's .json
 * and .err go through exclusive temporaries like every other output (never
 * through a link placed at their names); SIGTERM sent to the benchmark is
 * passed on to its runs, which it waits for, keeping no stopped run's
 * .json; every dataset's options are checked before any run; --out must
 * be a folder. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

static char out[1 << 16], err[1 << 16];

/* T->tmp/kg/acad (the academic world, one valid and one test triple) and
   T->tmp/cfg/acad.args holding `options`. */
static bool academic_dataset(test_ctx *T, const char *options)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/kg/acad %s/cfg %s/bout && grep -v '^#' data/academic.tsv > %s/kg/acad/train.txt && "
             "printf 'carol\\tadvises\\tdave\\n' > %s/kg/acad/valid.txt && "
             "printf 'dave\\tabout\\tnesy\\n' > %s/kg/acad/test.txt && printf -- '%s\\n' > %s/cfg/acad.args",
             T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, options, T->tmp);
    return CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
}

static bool regular(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The files of OUT whose names end in .tmp (temporaries left behind). */
static int temporaries(test_ctx *T, const char *dir)
{
    char cmd[8400];
    static char o[4096], e[4096];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c '[.]tmp$'", dir);
    run_sh(T, cmd, o, sizeof o, e, sizeof e);
    return atoi(o);
}

/* A link placed at OUT/acad-seed1.json (or .err) made the run's output
   overwrite the link's target (the files were opened with O_TRUNC). */
TEST(benchmark_run_files_never_follow_a_placed_link)
{
    if (!academic_dataset(T, "--dim 8 --steps 20 --eval-every 10")) return;
    char victim[2][4200], cmd[16384], path[4200];
    static const char *const ext[2] = {"json", "err"};
    for (int k = 0; k < 2; k++) { /* one victim each: one file as two outputs would be refused */
        snprintf(victim[k], sizeof victim[k], "%s/victim.%s", T->tmp, ext[k]);
        write_tmp(T, k, ext[k][0] == 'j' ? "victim.json" : "victim.err", "PRECIOUS\n", 9);
        snprintf(cmd, sizeof cmd, "ln -s '%s' '%s/bout/acad-seed1.%s'", victim[k], T->tmp, ext[k]);
        CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    }
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 1 --out %s/bout", T->tmp,
             T->tmp, T->tmp);
    int rc = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 0)) printf("    rc %d: %s\n", rc, err);
    for (int k = 0; k < 2; k++) {
        char *v = test_slurp(victim[k], NULL);
        CHECK(v && strcmp(v, "PRECIOUS\n") == 0);
        free(v);
    }
    snprintf(path, sizeof path, "%s/bout/acad-seed1.json", T->tmp);
    char *json = test_slurp(path, NULL);
    CHECK(regular(path) && json && json[0] == '{' && strstr(json, "\"best_valid_mrr\":"));
    free(json);
    snprintf(path, sizeof path, "%s/bout/acad-seed1.err", T->tmp);
    CHECK(regular(path));
    snprintf(path, sizeof path, "%s/bout", T->tmp);
    CHECK(temporaries(T, path) == 0);
}

/* A run that fails keeps its files for the user to read: its .err (where
   kgl train says why) is in place, named in the benchmark's message. SGD
   at a learning rate of 1e6 makes the loss NaN by step 6 (kgl train's
   exit 1). */
TEST(benchmark_failed_run_keeps_its_err_file)
{
    if (!academic_dataset(T, "--dim 8 --steps 200 --eval-every 100 --optimizer sgd --lr 1e6")) return;
    char cmd[16384], path[4200];
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 1 --out %s/bout", T->tmp,
             T->tmp, T->tmp);
    int rc = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    snprintf(path, sizeof path, "%s/bout/acad-seed1.err", T->tmp);
    char *text = test_slurp(path, NULL);
    if (!CHECK(rc == 1 && strstr(err, "acad seed 1 failed (") && strstr(err, path) && regular(path) && text &&
               strstr(text, "the loss is NaN")))
        printf("    rc %d: %s\n    .err: %s\n", rc, err, text ? text : "(none)");
    free(text);
    snprintf(path, sizeof path, "%s/bout", T->tmp);
    CHECK(temporaries(T, path) == 0);
}

/* SIGTERM to the benchmark's own pid left its run going, an orphan that
   kept writing. It is passed on: the run stops after its current step, the
   benchmark waits for it and exits 130; the run's .err says where it
   stopped, and no .json passes for a finished run's (an older one at that
   name, beside this run's .csv and .safetensors now, is removed). */
TEST(benchmark_passes_sigterm_on_to_its_runs)
{
    /* a run of about a minute: it is stopped long before */
    if (!academic_dataset(T, "--dim 8 --steps 3000000 --eval-every 1000000")) return;
    write_tmp(T, 0, "bout/acad-seed1.json", "{\"older\":1}\n", 12);
    char cmd[16384], cwd[4096], kgl[8400];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    if (T->kgl[0] == '/') snprintf(kgl, sizeof kgl, "%s", T->kgl);
    else snprintf(kgl, sizeof kgl, "%s/%s", cwd, T->kgl);
    /* SIGTERM once the run trains (its log's temporary exists); prints the
       run's pid, whether it was still alive after the benchmark ended (then
       kills it, by its pid), and the benchmark's status */
    snprintf(cmd, sizeof cmd,
             "cd '%s' || exit 1; '%s' benchmark --data kg --configs cfg --datasets acad --seeds 1,2 --out bout 2> b.err & b=$!; "
             "for i in $(seq 200); do ls bout/acad-seed1.csv.*.tmp >/dev/null 2>&1 && break; sleep 0.05; done; "
             "run=$(cat /proc/$b/task/$b/children); kill -TERM $b; wait $b; st=$?; "
             "if kill -0 $run 2>/dev/null; then echo \"$run alive\"; kill -KILL $run; else echo \"$run gone\"; fi; "
             "echo status $st",
             T->tmp, kgl);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char *said = NULL, path[4200];
    if (!CHECK(strstr(out, " gone\nstatus 130\n") != NULL)) printf("    %s", out);
    snprintf(path, sizeof path, "%s/b.err", T->tmp);
    said = test_slurp(path, NULL);
    if (!CHECK(said && strstr(said, "kgl benchmark: interrupted (SIGTERM): 0 of 2 runs finished") &&
               strstr(said, "stopped after their current step: acad seed 1 (") && strstr(said, "; 1 not started;")))
        printf("    %s\n", said ? said : "(no stderr)");
    free(said);
    snprintf(path, sizeof path, "%s/bout/acad-seed1.err", T->tmp);
    char *run = test_slurp(path, NULL);
    CHECK(run && strstr(run, "kgl train: interrupted (SIGTERM) after step "));
    free(run);
    snprintf(path, sizeof path, "%s/bout/acad-seed1.json", T->tmp);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/bout/acad-seed2.err", T->tmp); /* never started */
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/bout", T->tmp);
    CHECK(temporaries(T, path) == 0);
}

/* Found before anything starts: a recipe option kgl train does not know
   (it was found when the dataset's first run failed, after the datasets
   before it had trained), and an --out that is a file ("cannot start
   .../kgl: Not a directory"). */
TEST(benchmark_checks_options_and_out_before_any_run)
{
    if (!academic_dataset(T, "--dim 8 --steps 20 --eval-every 10")) return;
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/kg/typo && cp %s/kg/acad/* %s/kg/typo/ && "
             "printf -- '--steps 5 --eval-every 5\\n--frobnicate 3\\n' > %s/cfg/typo.args",
             T->tmp, T->tmp, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets acad,typo --seeds 1 --out %s/tout",
             T->tmp, T->tmp, T->tmp);
    int rc = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 2 && strstr(err, "kgl benchmark: kgl train refuses the options for typo (") &&
               strstr(err, "typo.args:2: unknown option '--frobnicate'") && !strstr(err, "seed 1")))
        printf("    rc %d: %s\n", rc, err);
    char path[4200];
    snprintf(path, sizeof path, "%s/tout", T->tmp); /* nothing ran: not even the folder was made */
    CHECK(access(path, F_OK) != 0);

    write_tmp(T, 0, "afile", "x\n", 2);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 1 --out %s/afile", T->tmp,
             T->tmp, T->tmp);
    rc = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 2 && strstr(err, "afile is a file; --out must be a folder (it is made if missing)\n") &&
               !strstr(err, "seed 1")))
        printf("    rc %d: %s\n", rc, err);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 1 --out %s/afile/sub",
             T->tmp, T->tmp, T->tmp);
    rc = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    CHECK(rc == 2 && strstr(err, "afile is a file, not a folder; --out must be a folder"));
}
