/* cli_exit_codes.c — one table of exit statuses (0 ok, 1 non-finite loss,
 * 2 bad arguments or input, 3 an output could not be written, 130
 * interrupted), outputs checked before the first step, a log that fails
 * mid-run, temporaries, the memory estimate, Ctrl-C keeping the work and
 * resuming from it bit for bit (issue 13). */
#include <ctype.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

static char out[65536], err[65536];

static const char *cpath(test_ctx *T, int slot, const char *name)
{
    static char paths[8][512];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", T->tmp, name);
    return paths[slot];
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

TEST(cli_exit_status_table_in_help)
{
    static const char *const table =
        "exit status: 0 done, 1 the loss became non-finite, 2 bad arguments or input (an output\n"
        "path that cannot be written, or a run that needs more memory than is available), 3 an\n"
        "output failed while it was written, 130 interrupted (Ctrl-C or SIGTERM)\n";
    static const char *const cmds[] = {"--help", "train --help", "eval --help", "grad --help", "heads --help",
                                       "saturation --help"};
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        CHECK(run_kgl(T, cmds[k], out, sizeof out, err, sizeof err) == 0);
        if (!CHECK(strstr(out, table) != NULL)) printf("    kgl %s: no exit-status table\n", cmds[k]);
    }
}

/* Each status of the table, from kgl train. */
TEST(cli_exit_status_each_code)
{
    char cmd[2048];
    CHECK(run_kgl(T, "train --steps 2 --quiet", out, sizeof out, err, sizeof err) == 0);
    CHECK(run_kgl(T, "train --scale 1e300 --init-scale 1e6 --steps 5 --quiet", out, sizeof out, err, sizeof err) == 1);
    CHECK(run_kgl(T, "train --dim 0", out, sizeof out, err, sizeof err) == 2);
    CHECK(run_kgl(T, "train --train /nonexistent.tsv", out, sizeof out, err, sizeof err) == 2);
    /* 2: a save path that cannot be written is a bad argument, refused
       before the first step */
    snprintf(cmd, sizeof cmd, "train --steps 2 --quiet --save '%s'", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "is a folder, not a file") != NULL);
    /* 3: a save that fails while it is written (a file-size limit of 4
       blocks, 2-4 KB, as a full disk: the checkpoint is 13.6 KB) */
    snprintf(cmd, sizeof cmd, "trap '' XFSZ; ulimit -f 4; '%s' train --steps 2 --quiet --save '%s'", T->kgl,
             cpath(T, 1, "big.st"));
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 3);
    CHECK(!exists(cpath(T, 1, "big.st")));
    /* 130: SIGTERM as well as SIGINT */
    const char *ck = cpath(T, 0, "term.st");
    snprintf(cmd, sizeof cmd,
             "'%s' train --steps 100000000 --quiet --log-every 1 --log '%s.csv' --save '%s' & p=$!; "
             "while [ \"$(cat '%s.csv'.*.tmp 2>/dev/null | wc -l)\" -lt 5 ]; do sleep 0.01; done; "
             "kill -TERM $p; wait $p",
             T->kgl, ck, ck, ck);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 130);
    CHECK(strstr(err, "kgl train: interrupted (SIGTERM) after step") != NULL);
    CHECK(exists(ck));
    /* grad --out into a missing folder: 2, before any work */
    snprintf(cmd, sizeof cmd, "grad --checkpoint '%s' --out /nonexistent/g.st", ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl grad: --out /nonexistent/g.st: the folder /nonexistent does not exist") != NULL);
    snprintf(cmd, sizeof cmd, "heads --checkpoint '%s' --svg /nonexistent/pictures", ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
}

/* Defect 8: --save into a missing folder trained to the end, then failed;
   it must fail before training, as a bad argument (exit 2). */
TEST(cli_outputs_checked_before_the_first_step)
{
    static const char *const cases[][2] = {
        {"--save /nonexistent/m.st", "kgl train: --save /nonexistent/m.st: the folder /nonexistent does not exist"},
        {"--log /nonexistent/l.csv", "kgl train: --log /nonexistent/l.csv: the folder /nonexistent does not exist"},
        {"--save ''", "kgl train: --save: the path is empty"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "train --steps 100000000 %s", cases[k][0]);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
        if (!CHECK(strstr(err, cases[k][1]) != NULL)) printf("    stderr: %s\n", err);
        CHECK(strstr(err, "step") == NULL && out[0] == 0); /* nothing was trained */
    }
}

/* Defect 7: a log that cannot be written (here: past the file-size limit,
   as a full disk) was reported only at the end, without the reason, and
   --save was skipped. */
TEST(cli_log_failure_reported_at_once_and_save_goes_on)
{
    const char *log = cpath(T, 0, "big.csv"), *ck = cpath(T, 1, "saved.st");
    char cmd[2048];
    /* ulimit -f counts 512-byte blocks in dash, 1024 in bash: 64 is 32-64 KB,
       room for the 13.6 KB checkpoint but not for 300 log rows */
    snprintf(cmd, sizeof cmd,
             "trap '' XFSZ; ulimit -f 64; '%s' train --steps 300 --log-every 1 --log '%s' --save '%s' --quiet", T->kgl,
             log, ck);
    int rc = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    CHECK(rc == 3);
    if (!CHECK(strstr(err, "cannot write the log") && strstr(err, "File too large") &&
               strstr(err, "training goes on without it")))
        printf("    rc %d, stderr: %s\n", rc, err);
    CHECK(strstr(out, "300 steps in") != NULL); /* trained to the end */
    kgl_st_file f;
    char e[512];
    CHECK(kgl_st_read(ck, &f, e, sizeof e)); /* and saved */
    CHECK(strcmp(kgl_st_meta(&f, "step"), "300") == 0);
    kgl_st_free(&f);
    /* the broken log is not left behind, nor its temporary */
    snprintf(cmd, sizeof cmd, "ls '%s'* 2>/dev/null | wc -l", log);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0 && strtol(out, NULL, 10) == 0);
}

/* Defect 5: a benchmark .args file with --test=F replaced the dataset's split. */
TEST(cli_benchmark_args_equals_forms_refused)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/hcfg", T->tmp);
    mkdir(dir, 0777);
    static const char *const words[] = {"--test=x.txt", "--train=x.txt", "--valid=x.txt", "--save=m.st",
                                        "--log=l.csv",  "--seed=3",      "--resume=m.st", "--test"};
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        char path[700], text[256], e[2048];
        snprintf(path, sizeof path, "%s/x.args", dir);
        snprintf(text, sizeof text, "--eval-every 5 %s\n", words[k]);
        FILE *f = fopen(path, "w");
        if (!CHECK(f != NULL)) return;
        fputs(text, f);
        fclose(f);
        kgl_benchmark_dataset d;
        kgl_benchmark_config_status s = kgl_benchmark_load_config(&d, dir, "x", e, sizeof e);
        CHECK(s == KGL_BENCHMARK_CONFIG_INVALID);
        char want[64];
        snprintf(want, sizeof want, "%.*s is set by kgl benchmark", (int)strcspn(words[k], "="), words[k]);
        if (!CHECK(strstr(e, want) != NULL)) printf("    %s: %s\n", words[k], e);
        kgl_benchmark_dataset_free(&d);
    }
    /* --eval-every=5 is model selection too */
    char path[700], e[2048];
    snprintf(path, sizeof path, "%s/y.args", dir);
    FILE *f = fopen(path, "w");
    if (!CHECK(f != NULL)) return;
    fputs("--eval-every=5 --steps 10\n", f);
    fclose(f);
    kgl_benchmark_dataset d;
    CHECK(kgl_benchmark_load_config(&d, dir, "y", e, sizeof e) == KGL_BENCHMARK_CONFIG_OK);
    kgl_benchmark_dataset_free(&d);
}

/* Defect 3: options that cannot fit aborted with "out of memory". */
TEST(cli_memory_estimate_refuses_what_cannot_fit)
{
    /* the case (604 M parameters) with 16,000 MB available, whatever
       this machine has */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "KGL_MEMORY_MB=16000 '%s' train --dim 4096 --ffn 65536 --steps 1", T->kgl);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 2);
    if (!CHECK(strstr(err, "kgl train: this run needs about 21.4 GB") &&
               strstr(err, "this machine has 16.8 GB available")))
        printf("    stderr: %s\n", err);
    /* the same estimate passes a run that fits */
    snprintf(cmd, sizeof cmd, "KGL_MEMORY_MB=16000 '%s' train --dim 64 --steps 1 --quiet", T->kgl);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    /* an ensemble keeps all its members: one fits in 100 MB, 64 do not */
    snprintf(cmd, sizeof cmd, "KGL_MEMORY_MB=100 '%s' train --dim 256 --steps 1 --quiet", T->kgl);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "KGL_MEMORY_MB=100 '%s' train --dim 256 --steps 1 --ensemble 64 --quiet", T->kgl);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 2 && strstr(err, "for 64 models") &&
          strstr(err, " or --ensemble 9\n"));
}

/* Defect 6: temporaries of killed writers were never removed; a live
   process's must never be. */
TEST(cli_stale_temporaries_removed_at_next_save)
{
    const char *ck = cpath(T, 0, "stale.st");
    char dead[700], live[700], other[700], dead_hex[700], live_hex[700], dead_log[700], cmd[2048];
    /* a pid that has exited: the shell's own, after it is gone */
    CHECK(run_sh(T, "sh -c 'echo $$'", out, sizeof out, err, sizeof err) == 0);
    long pid = strtol(out, NULL, 10);
    CHECK(pid > 0 && kill((pid_t)pid, 0) != 0);
    snprintf(dead, sizeof dead, "%s.%ld.0.tmp", ck, pid);
    snprintf(live, sizeof live, "%s.%ld.0.tmp", ck, (long)getpid());
    snprintf(other, sizeof other, "%s.x.%ld.0.tmp", ck, pid); /* another file's name */
    /* the names of issue 25: 16 random hex digits, for every output (the log too) */
    snprintf(dead_hex, sizeof dead_hex, "%s.%ld.00ff00ff00ff00ff.tmp", ck, pid);
    snprintf(live_hex, sizeof live_hex, "%s.%ld.00ff00ff00ff00ff.tmp", ck, (long)getpid());
    snprintf(dead_log, sizeof dead_log, "%s.csv.%ld.0123456789abcdef.tmp", ck, pid);
    const char *names[6] = {dead, live, other, dead_hex, live_hex, dead_log};
    for (int k = 0; k < 6; k++) {
        FILE *f = fopen(names[k], "w");
        CHECK(f != NULL);
        if (f) fclose(f);
    }
    snprintf(cmd, sizeof cmd, "train --steps 1 --quiet --save '%s' --log '%s.csv'", ck, ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(!exists(dead) && !exists(dead_hex) && !exists(dead_log));
    CHECK(exists(live) && exists(live_hex));
    CHECK(exists(other));
    unlink(live);
    unlink(live_hex);
    unlink(other);
}

static bool same_tensors(test_ctx *T, const char *a, const char *b)
{
    kgl_st_file x, y;
    char e[512];
    if (!CHECK(kgl_st_read(a, &x, e, sizeof e))) return false;
    if (!CHECK(kgl_st_read(b, &y, e, sizeof e))) {
        kgl_st_free(&x);
        return false;
    }
    bool same = x.n == y.n && x.n > 0;
    for (int i = 0; i < x.n && same; i++) {
        const kgl_st_tensor *u = &x.tensors[i], *v = kgl_st_find(&y, u->name);
        same = v && v->shape[0] == u->shape[0] && v->shape[1] == u->shape[1] &&
               memcmp(u->data, v->data, (size_t)(u->shape[0] * u->shape[1]) * sizeof(double)) == 0;
        if (!same) printf("    tensor %s differs\n", u->name);
    }
    static const char *const keys[] = {"step", "shuffle_state", "batch_cursor", "dropout_state"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0] && same; k++) {
        same = strcmp(kgl_st_meta(&x, keys[k]), kgl_st_meta(&y, keys[k])) == 0;
        if (!same) printf("    metadata %s differs\n", keys[k]);
    }
    kgl_st_free(&x);
    kgl_st_free(&y);
    return same;
}

/* Ctrl-C keeps the work: interrupted at some step k (2 threads), resumed
   for the rest (1 thread) = one uninterrupted run, bit for bit, with
   shuffled mini-batches and dropout. */
TEST(cli_interrupt_then_resume_is_exact)
{
    const char *a = cpath(T, 0, "int_a.st"), *b = cpath(T, 1, "int_b.st"), *c = cpath(T, 2, "int_c.st");
    const char *opts = "--dim 16 --batch 8 --dropout 0.1 --attn-dropout 0.05 --quiet";
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s' train %s --threads 2 --steps 100000000 --log-every 1 --log '%s.csv' --save '%s' & p=$!; "
             "while [ \"$(cat '%s.csv'.*.tmp 2>/dev/null | wc -l)\" -lt 40 ]; do sleep 0.01; done; "
             "kill -INT $p; wait $p",
             T->kgl, opts, a, a, a);
    int rc = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    CHECK(rc == 130);
    CHECK(strstr(err, "kgl train: interrupted (SIGINT) after step") != NULL);
    CHECK(strstr(out, "train: 42 triples") || strstr(out, "train: 21 triples")); /* the results so far */
    kgl_st_file f;
    char e[512];
    if (!CHECK(kgl_st_read(a, &f, e, sizeof e))) return;
    long k = strtol(kgl_st_meta(&f, "step"), NULL, 10);
    kgl_st_free(&f);
    CHECK(k >= 40);
    char log[600], lastline[64];
    snprintf(log, sizeof log, "%s.csv", a);
    snprintf(cmd, sizeof cmd, "tail -n 1 '%s' | cut -d, -f1", log);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(lastline, sizeof lastline, "%ld\n", k);
    CHECK(strcmp(out, lastline) == 0); /* the log ends at the step saved */
    long rest = 60;
    snprintf(cmd, sizeof cmd, "train %s --threads 1 --resume '%s' --steps %ld --save '%s'", opts, a, rest, b);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "train %s --threads 1 --steps %ld --save '%s'", opts, k + rest, c);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(same_tensors(T, b, c));
}

/* Issue 46: Ctrl-C before the first evaluation of --eval-every reported
   "best valid MRR 0.0000 at step -1 ...; the checkpoint is of that model"
   while the checkpoint was of the last step, and --json said nothing of the
   interruption. */
TEST(cli_interrupt_before_any_evaluation_says_so)
{
    const char *ck = cpath(T, 0, "noeval.st");
    static const char *const forms[] = {"", "--json"};
    for (int json = 0; json < 2; json++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd,
                 "'%s' train --train data/walkthrough/family.train.tsv --valid data/walkthrough/family.valid.tsv "
                 "--dim 16 --steps 100000000 --eval-every 1000000 --log-every 1 --log '%s.csv' --save '%s' %s & p=$!; "
                 "while [ \"$(cat '%s.csv'.*.tmp 2>/dev/null | wc -l)\" -lt 5 ]; do sleep 0.01; done; "
                 "kill -INT $p; wait $p",
                 T->kgl, ck, ck, forms[json], ck);
        CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 130);
        kgl_st_file f;
        char e[512];
        if (!CHECK(kgl_st_read(ck, &f, e, sizeof e))) return;
        char step[32], want[160];
        snprintf(step, sizeof step, "%s", kgl_st_meta(&f, "step"));
        kgl_st_free(&f);
        if (json) {
            CHECK(strstr(out, "\"interrupted\":true") != NULL);
            CHECK(strstr(out, "\"best_step\":null,\"best_valid_mrr\":null,\"evaluations\":0") != NULL);
        } else {
            snprintf(want, sizeof want,
                     "model selection: no evaluation ran (--eval-every 1000000); the metrics above and the checkpoint "
                     "are of the last step, %s\n", step);
            if (!CHECK(strstr(out, want) != NULL)) printf("    stdout: %s\n", out);
            CHECK(strstr(out, "step -1") == NULL);
        }
    }
    /* "interrupted" is always there */
    CHECK(run_kgl(T, "train --steps 2 --json --quiet", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\"interrupted\":false") != NULL);
}

/* A row for the step Ctrl-C stopped at, between logged steps: its per-head
   columns were never measured at that step, so they are empty (pandas:
   NaN), not the last measurement's values or uninitialised memory. */
TEST(cli_interrupt_row_leaves_unmeasured_heads_empty)
{
    const char *ck = cpath(T, 0, "rowint.st");
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s' train --dim 16 --steps 100000000 --log-every 100000000 --log '%s.csv' --save '%s' --quiet & p=$!; "
             "while ! ls '%s.csv'.*.tmp >/dev/null 2>&1; do sleep 0.01; done; sleep 0.3; kill -INT $p; wait $p",
             T->kgl, ck, ck, ck);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 130);
    char log[600];
    snprintf(log, sizeof log, "%s.csv", ck);
    FILE *f = fopen(log, "r");
    if (!CHECK(f != NULL)) return;
    char header[8192], row[8192], last[8192] = "";
    bool read_header = fgets(header, sizeof header, f) != NULL;
    int rows = 0;
    while (fgets(row, sizeof row, f)) rows++, snprintf(last, sizeof last, "%s", row);
    fclose(f);
    CHECK(read_header);
    CHECK(rows == 1); /* only the stop row: no step was due a row */
    /* the fields of the columns named h<k>_...: every one empty */
    int heads_fields = 0, empty = 0, col = 0;
    const char *hc = header, *rc = last; /* the starts of column col's name and field */
    for (;;) {
        if (hc[0] == 'h' && isdigit((unsigned char)hc[1])) {
            heads_fields++;
            empty += *rc == ',' || *rc == '\n' || *rc == '\0';
        }
        col++;
        hc += strcspn(hc, ",\n"), rc += strcspn(rc, ",\n");
        if (*hc != ',' || *rc != ',') break;
        hc++, rc++;
    }
    CHECK(col > 6);
    CHECK(heads_fields >= 2 * 11); /* two heads, eleven columns each (and their spec columns) */
    if (!CHECK(empty == heads_fields)) printf("    %d of %d head fields not empty: %s\n", heads_fields - empty, heads_fields, last);
}
