/* cli_benchmark_runs.c — kgl benchmark's runs (issue 46): each run's .json
 * and .err go through exclusive temporaries like every other output (never
 * through a link placed at their names); SIGTERM sent to the benchmark is
 * passed on to its runs, which it waits for, keeping no stopped run's
 * .json; every dataset's options are checked before any run; --out must
 * be a folder. And --baseline (issue 48): every run again with --context
 * none, at the same budget, beside the layer's row. */
#include <math.h>
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

/* With --jobs 2 the runs are started by two workers of the runner
   (kgl_jobs_run), one of them a thread of its own: SIGTERM reaches both
   runs going, each once (a second would stop it at once, without its
   step's row), and the benchmark waits for both and exits 130. */
TEST(benchmark_passes_sigterm_on_to_runs_of_two_workers)
{
    if (!academic_dataset(T, "--dim 8 --steps 3000000 --eval-every 1000000")) return;
    char cmd[16384], cwd[4096], kgl[8400];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    if (T->kgl[0] == '/') snprintf(kgl, sizeof kgl, "%s", T->kgl);
    else snprintf(kgl, sizeof kgl, "%s/%s", cwd, T->kgl);
    /* SIGTERM once both runs train (their logs' temporaries exist); the
       runs' pids are read from every thread's children */
    snprintf(cmd, sizeof cmd,
             "cd '%s' || exit 1; '%s' benchmark --data kg --configs cfg --datasets acad --seeds 1,2,3 --jobs 2 "
             "--out bout 2> b.err & b=$!; "
             "for i in $(seq 200); do ls bout/acad-seed1.csv.*.tmp bout/acad-seed2.csv.*.tmp >/dev/null 2>&1 && break; "
             "sleep 0.05; done; runs=$(cat /proc/$b/task/*/children); kill -TERM $b; wait $b; st=$?; "
             "for run in $runs; do if kill -0 $run 2>/dev/null; then echo \"alive\"; kill -KILL $run; "
             "else echo \"gone\"; fi; done; echo status $st",
             T->tmp, kgl);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    if (!CHECK(strcmp(out, "gone\ngone\nstatus 130\n") == 0)) printf("    %s", out);
    char path[4200];
    snprintf(path, sizeof path, "%s/b.err", T->tmp);
    char *said = test_slurp(path, NULL);
    /* both runs named among the stopped, in whichever order they stopped (a
       loaded machine stops either first; the progress lines above it differ) */
    const char *stopped = said ? strstr(said, "stopped after their current step: ") : NULL;
    const char *end = stopped ? strstr(stopped, " (each one's .err") : NULL;
    bool both = false;
    if (end) {
        char list[256];
        snprintf(list, sizeof list, "%.*s", (int)(end - stopped), stopped);
        both = strstr(list, "acad seed 1") && strstr(list, "acad seed 2") && !strstr(list, "acad seed 3");
    }
    if (!CHECK(said && strstr(said, "kgl benchmark: interrupted (SIGTERM): 0 of 3 runs finished") && both &&
               strstr(said, "; 1 not started;")))
        printf("    %s\n", said ? said : "(no stderr)");
    free(said);
    for (int seed = 1; seed <= 2; seed++) { /* each stopped after its step, once: not "at once" */
        snprintf(path, sizeof path, "%s/bout/acad-seed%d.err", T->tmp, seed);
        char *run = test_slurp(path, NULL);
        if (!CHECK(run && strstr(run, "kgl train: interrupted (SIGTERM) after step ")))
            printf("    seed %d: %s\n", seed, run ? run : "(none)");
        free(run);
    }
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

/* metrics.test.both.<metric> of a run's --json output (NaN when missing),
   and its "context" and "steps" in *context (a copy) and *steps. */
static double run_test_metric(const char *path, const char *metric, char *context, size_t context_cap, double *steps)
{
    size_t n = 0;
    char *text = test_slurp(path, &n);
    kgl_json_doc doc;
    char why[256];
    double v = NAN;
    snprintf(context, context_cap, "?");
    *steps = NAN;
    if (text && kgl_json_parse(text, n, &doc, why, sizeof why)) {
        const kgl_json *m = kgl_json_get(kgl_json_get(kgl_json_get(kgl_json_get(doc.root, "metrics"), "test"), "both"),
                                         metric);
        const kgl_json *c = kgl_json_get(doc.root, "context"), *s = kgl_json_get(doc.root, "steps");
        if (m && m->type == KGL_JSON_NUMBER) v = m->num;
        if (c && c->type == KGL_JSON_STRING) snprintf(context, context_cap, "%s", c->str);
        if (s && s->type == KGL_JSON_NUMBER) *steps = s->num;
        kgl_json_free(&doc);
    }
    free(text);
    return v;
}

/* The number after `label` in `text` (NaN when absent). */
static double number_after(const char *text, const char *label)
{
    const char *p = strstr(text, label);
    double x;
    return p && sscanf(p + strlen(label), "%lf", &x) == 1 ? x : NAN;
}

/* --baseline: each seed's run again with --context none (its own files,
   OUT/acad-seed1-none.*), its rows right below the layer's, the difference
   of the means (layer − baseline) in test MRR and Hits@1 with whether the
   layer's is at least the baseline's, and both in results.json. */
TEST(benchmark_baseline_runs_beside_the_layer)
{
    /* Nations (402 test queries, so the two runs' numbers differ), 20 steps */
    const char *data = getenv("KG_DATA") && *getenv("KG_DATA") ? getenv("KG_DATA") : "data/kg";
    const char *tiny = "--dim 8 --heads 2 --steps 20 --eval-every 10\n";
    write_tmp(T, 0, "tiny.args", tiny, strlen(tiny));
    char cmd[16384], path[4200], context[32];
    snprintf(cmd, sizeof cmd, "benchmark --data %s --recipe %s/tiny.args --datasets nations --seeds 1 --baseline "
             "--out %s/bout", data, T->tmp, T->tmp);
    int rc = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 0)) printf("    rc %d: %s\n", rc, err);
    static const char *const ext[4] = {"json", "err", "csv", "safetensors"};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/bout/nations-seed1-none.%s", T->tmp, ext[k]);
        if (!CHECK(regular(path))) printf("    missing: %s\n", path);
        snprintf(path, sizeof path, "%s/bout/nations-seed1.%s", T->tmp, ext[k]);
        if (!CHECK(regular(path))) printf("    missing: %s\n", path);
    }
    double layer[2], none[2], layer_steps, none_steps;
    static const char *const metric[2] = {"mrr", "hits1"};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/bout/nations-seed1.json", T->tmp);
        layer[k] = run_test_metric(path, metric[k], context, sizeof context, &layer_steps);
        CHECK(strcmp(context, "full") == 0);
        snprintf(path, sizeof path, "%s/bout/nations-seed1-none.json", T->tmp);
        none[k] = run_test_metric(path, metric[k], context, sizeof context, &none_steps);
        if (!CHECK(strcmp(context, "none") == 0)) printf("    the baseline's context: %s\n", context);
        CHECK(layer[k] >= 0 && layer[k] <= 1 && none[k] >= 0 && none[k] <= 1);
    }
    CHECK(layer_steps == 20 && none_steps == 20); /* the same budget */
    /* the baseline's row right below the layer's, in both tie kinds, with the baseline run's numbers */
    static const char *const ties[2] = {"realistic", "optimistic"};
    for (int o = 0; o < 2; o++) {
        char layer_row[256], none_row[256];
        snprintf(layer_row, sizeof layer_row, "| **kgl**, one model, %s ties (seed 1) |", ties[o]);
        snprintf(none_row, sizeof none_row, "\n| **kgl, no layer** (`--context none`, the same options and steps), "
                 "%s ties (seed 1) |", ties[o]);
        const char *row = strstr(out, layer_row), *below = row ? strchr(row, '\n') : NULL;
        if (!CHECK(below && strncmp(below, none_row, strlen(none_row)) == 0)) printf("%s\n", out);
        if (o == 0 && below) {
            char cells[64];
            snprintf(cells, sizeof cells, " %.3f | %.3f |", none[0], none[1]);
            CHECK(strncmp(below + strlen(none_row), cells, strlen(cells)) == 0);
        }
    }
    /* the difference line: layer − baseline, rounded to 3 digits (so within 0.0005 of the exact one) */
    const char *diff = strstr(out, "\nLayer − baseline (`--context none`), test, both directions, realistic ties");
    if (CHECK(diff != NULL)) {
        for (int k = 0; k < 2; k++) {
            double expected = layer[k] - none[k], said = number_after(diff, k ? ", Hits@1 " : ": MRR ");
            if (!CHECK(fabs(said - expected) <= 0.0005 + 1e-12))
                printf("    %s: said %g, the runs' JSON give %g\n", metric[k], said, expected);
        }
        char verdict[160];
        snprintf(verdict, sizeof verdict, "the layer's mean is ≥ the baseline's: MRR %s, Hits@1 %s.",
                 layer[0] >= none[0] ? "yes" : "no", layer[1] >= none[1] ? "yes" : "no");
        if (!CHECK(strstr(diff, verdict) != NULL)) printf("    expected: %s\n%s\n", verdict, diff);
    }
    CHECK(strstr(err, "2 of 2 runs done") != NULL); /* the progress line counts the baseline's run */
    /* results.json: the layer's fields as before, the baseline's beside them */
    snprintf(path, sizeof path, "%s/bout/results.json", T->tmp);
    size_t n = 0;
    char *text = test_slurp(path, &n), why[256];
    kgl_json_doc doc;
    if (CHECK(text && kgl_json_parse(text, n, &doc, why, sizeof why))) {
        const kgl_json *d = kgl_json_get(doc.root, "nations"), *base = kgl_json_get(d, "baseline");
        const kgl_json *dm = kgl_json_get(base, "layer_minus_baseline"), *ge = kgl_json_get(base, "layer_at_least_baseline");
        const kgl_json *runs = kgl_json_get(base, "runs"), *config = kgl_json_get(base, "config");
        CHECK(runs && runs->type == KGL_JSON_ARRAY && runs->len == 1);
        CHECK(config && config->type == KGL_JSON_STRING && strstr(config->str, "--context none"));
        for (int k = 0; k < 2; k++) {
            const kgl_json *lv = kgl_json_get(kgl_json_get(kgl_json_get(d, "test"), "both"), metric[k]);
            const kgl_json *bv = kgl_json_get(kgl_json_get(kgl_json_get(base, "test"), "both"), metric[k]);
            const kgl_json *dv = kgl_json_get(dm, metric[k]), *gv = kgl_json_get(ge, metric[k]);
            /* numbers written to round-trip: the same doubles */
            CHECK(lv && lv->type == KGL_JSON_NUMBER && lv->num == layer[k]);
            CHECK(bv && bv->type == KGL_JSON_NUMBER && bv->num == none[k]);
            CHECK(dv && dv->type == KGL_JSON_NUMBER && fabs(dv->num - (layer[k] - none[k])) <= 1e-12);
            CHECK(gv && gv->type == (layer[k] >= none[k] ? KGL_JSON_TRUE : KGL_JSON_FALSE));
        }
        kgl_json_free(&doc);
    }
    free(text);
}

/* The baseline is the layer's run with --context none added, nothing else:
   the same options and budget, kgl train's warning that the layer's options
   change nothing, the readout's parameters alone (E 13x8, R 10x8: 184; the
   layer's more). Options that already say --context none are refused: their
   runs are the baseline. */
TEST(benchmark_baseline_is_the_layer_options_with_context_none)
{
    if (!academic_dataset(T, "--dim 8 --heads 2 --ffn 8 --steps 20 --eval-every 10")) return;
    char cmd[16384], path[4200];
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 2 --baseline --out %s/bout",
             T->tmp, T->tmp, T->tmp);
    int rc = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 0)) printf("    rc %d: %s\n", rc, err);
    char said[8400];
    snprintf(said, sizeof said, " --recipe %s/cfg/acad.args --context none --seed 2 --save %s/bout/acad-seed2-none.safetensors",
             T->tmp, T->tmp);
    if (!CHECK(strstr(err, said) != NULL)) printf("    expected: %s\n%s\n", said, err);
    snprintf(path, sizeof path, "%s/bout/acad-seed2-none.err", T->tmp);
    char *text = test_slurp(path, NULL);
    CHECK(text && strstr(text, "warning: --context none has no layer, so --ffn changes nothing"));
    free(text);
    snprintf(path, sizeof path, "%s/bout/acad-seed2.err", T->tmp);
    text = test_slurp(path, NULL);
    CHECK(text && !strstr(text, "--context none"));
    free(text);
    snprintf(path, sizeof path, "%s/bout/results.json", T->tmp);
    size_t n = 0;
    char why[256];
    text = test_slurp(path, &n);
    kgl_json_doc doc;
    if (CHECK(text && kgl_json_parse(text, n, &doc, why, sizeof why))) {
        const kgl_json *d = kgl_json_get(doc.root, "acad"), *base = kgl_json_get(d, "baseline");
        const kgl_json *lp = kgl_json_get(d, "params"), *bp = kgl_json_get(base, "params");
        CHECK(lp && lp->type == KGL_JSON_NUMBER && lp->num > 456); /* 456 without the feed-forward block */
        CHECK(bp && bp->type == KGL_JSON_NUMBER && bp->num == 184);
        const kgl_json *runs = kgl_json_get(base, "runs");
        const kgl_json *steps = runs && runs->len == 1 ? kgl_json_get(&runs->child[0], "steps") : NULL;
        CHECK(steps && steps->type == KGL_JSON_NUMBER && steps->num == 20);
        kgl_json_free(&doc);
    }
    free(text);
    CHECK(strstr(out, "\nBaseline: no layer (`--context none`), 184 parameters;") != NULL);
    /* options that are the baseline already */
    snprintf(cmd, sizeof cmd, "printf -- '--dim 8 --steps 20 --eval-every 10 --context none\\n' > %s/cfg/acad.args",
             T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 1 --baseline --out %s/nout",
             T->tmp, T->tmp, T->tmp);
    rc = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 2 && strstr(err, "acad.args: --baseline: the options already say --context none") &&
               !strstr(err, "seed 1")))
        printf("    rc %d: %s\n", rc, err);
}
