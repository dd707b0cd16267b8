/* cli_files.c — the files kgl writes (issue 25): every temporary is created
 * exclusively under a name nobody can guess, so a link placed at the old,
 * predictable names never redirects a write; two runs writing one log leave
 * one run's whole log. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

static char out[1 << 16], err[1 << 16];

/* Whether the file at path holds exactly `text`. */
static bool holds(const char *path, const char *text)
{
    char *s = test_slurp(path, NULL);
    bool same = s && strcmp(s, text) == 0;
    free(s);
    return same;
}

static bool regular(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Shell words that place a link to `victim` at every name a temporary of
   each file in `files` (space-separated paths) had before issue 25: F.tmp
   (the log, saturation, benchmark), F.PID.tmp (--ranks, export) and
   F.PID.K.tmp (checkpoints), PID being the shell's, which `exec` hands to
   kgl. */
static void links_at_old_names(char *cmd, size_t cap, const char *victim, const char *files)
{
    snprintf(cmd, cap,
             "for f in %s; do for s in tmp $$.tmp $$.0.tmp $$.1.tmp $$.2.tmp; do ln -s '%s' \"$f.$s\"; done; done; ",
             files, victim);
}

/* Defect 2: the log's temporary out.csv.tmp (and --ranks' and export's
   PATH.PID.tmp) followed a link placed there and overwrote its target. */
TEST(temporaries_never_follow_a_placed_link)
{
    char dir[600], victim[700], cmd[16384], links[8192], files[4096], path[800];
    snprintf(dir, sizeof dir, "%s/links", T->tmp);
    mkdir(dir, 0777);
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    FILE *f = fopen(victim, "w");
    if (!CHECK(f != NULL)) return;
    fputs("PRECIOUS\n", f);
    fclose(f);

    /* kgl train: the log and the checkpoint */
    snprintf(files, sizeof files, "'%s/out.csv' '%s/m.st'", dir, dir);
    links_at_old_names(links, sizeof links, victim, files);
    snprintf(cmd, sizeof cmd, "%s exec '%s' train --steps 5 --quiet --log '%s/out.csv' --save '%s/m.st'", links, T->kgl,
             dir, dir);
    int rc = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 0)) printf("    rc %d: %s\n", rc, err);
    CHECK(holds(victim, "PRECIOUS\n"));
    snprintf(path, sizeof path, "%s/out.csv", dir);
    char *log = test_slurp(path, NULL);
    CHECK(regular(path) && log && strncmp(log, "step,loss,", 10) == 0 && test_count(log, "\n") == 2 &&
          strstr(log, "\n5,"));
    free(log);
    snprintf(path, sizeof path, "%s/m.st", dir);
    kgl_st_file st;
    char e[512];
    if (CHECK(regular(path) && kgl_st_read(path, &st, e, sizeof e))) {
        CHECK(strcmp(kgl_st_meta(&st, "step"), "5") == 0);
        kgl_st_free(&st);
    }

    /* kgl eval --ranks, kgl grad --out */
    snprintf(files, sizeof files, "'%s/r.tsv'", dir);
    links_at_old_names(links, sizeof links, victim, files);
    snprintf(cmd, sizeof cmd, "%s exec '%s' eval --checkpoint '%s/m.st' --ranks '%s/r.tsv' >/dev/null", links, T->kgl,
             dir, dir);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(files, sizeof files, "'%s/g.st'", dir);
    links_at_old_names(links, sizeof links, victim, files);
    snprintf(cmd, sizeof cmd, "%s exec '%s' grad --checkpoint '%s/m.st' --out '%s/g.st' >/dev/null", links, T->kgl, dir,
             dir);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(holds(victim, "PRECIOUS\n"));
    snprintf(path, sizeof path, "%s/r.tsv", dir);
    char *ranks = test_slurp(path, NULL);
    CHECK(regular(path) && ranks && strncmp(ranks, "split\thead\t", 11) == 0 && test_count(ranks, "\n") == 43);
    free(ranks);
    snprintf(path, sizeof path, "%s/g.st", dir);
    if (CHECK(regular(path) && kgl_st_read(path, &st, e, sizeof e))) {
        CHECK(strcmp(kgl_st_meta(&st, "format"), "kgl-grad/1") == 0);
        kgl_st_free(&st);
    }

    /* kgl export and kgl heads --svg: every file of the folder */
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/emb' '%s/pic'", dir, dir);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    static const char *const emb[] = {"entities.tsv", "relations.tsv", "context.tsv",
                                      "vectors.tsv",  "context_vectors.tsv", "metadata.tsv"};
    /* lines: a header and 13 entities, 5 relations and their inverses; no header */
    static const int emb_lines[] = {14, 11, 14, 13, 13, 13};
    static const char *const pic[] = {"head0.svg", "head1.svg", "heads.svg", "spec.svg"};
    size_t used = 0;
    for (size_t k = 0; k < 6; k++) used += (size_t)snprintf(files + used, sizeof files - used, "'%s/emb/%s' ", dir, emb[k]);
    for (size_t k = 0; k < 4; k++) used += (size_t)snprintf(files + used, sizeof files - used, "'%s/pic/%s' ", dir, pic[k]);
    links_at_old_names(links, sizeof links, victim, files);
    snprintf(cmd, sizeof cmd, "%s exec '%s' export --checkpoint '%s/m.st' --out '%s/emb' >/dev/null", links, T->kgl, dir,
             dir);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "%s exec '%s' heads --checkpoint '%s/m.st' --svg '%s/pic' >/dev/null", links, T->kgl, dir,
             dir);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(holds(victim, "PRECIOUS\n"));
    for (size_t k = 0; k < 6; k++) {
        snprintf(path, sizeof path, "%s/emb/%s", dir, emb[k]);
        char *s = test_slurp(path, NULL);
        if (!CHECK(regular(path) && s && test_count(s, "\n") == emb_lines[k])) printf("    %s\n", path);
        free(s);
    }
    for (size_t k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/pic/%s", dir, pic[k]);
        char *s = test_slurp(path, NULL);
        if (!CHECK(regular(path) && s && strncmp(s, "<?xml", 5) == 0)) printf("    %s\n", path);
        free(s);
    }

    /* kgl saturation: its CSV files (and pictures) */
    static const char *const sat[] = {"saturation.csv", "saturation_seeds.csv", "saturation_summary.csv",
                                      "saturation.svg"};
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/sat'", dir);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    used = 0;
    for (size_t k = 0; k < 4; k++) used += (size_t)snprintf(files + used, sizeof files - used, "'%s/sat/%s' ", dir, sat[k]);
    links_at_old_names(links, sizeof links, victim, files);
    snprintf(cmd, sizeof cmd,
             "%s exec '%s' saturation --dk 4 --scale sqrt --init-scale 1 --steps 3 --seeds 1 --quiet --out '%s/sat' "
             ">/dev/null",
             links, T->kgl, dir);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(holds(victim, "PRECIOUS\n"));
    for (size_t k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/sat/%s", dir, sat[k]);
        if (!CHECK(regular(path))) printf("    %s\n", path);
    }
}

/* Defect 2, in the library: kgl_benchmark_write_results wrote through
   path.tmp. */
TEST(temporaries_of_benchmark_results_never_follow_a_link)
{
    char victim[600], path[600], link[700], e[1024];
    snprintf(victim, sizeof victim, "%s/victim.json", T->tmp);
    snprintf(path, sizeof path, "%s/results.json", T->tmp);
    snprintf(link, sizeof link, "%s.tmp", path);
    FILE *f = fopen(victim, "w");
    if (!CHECK(f != NULL)) return;
    fputs("PRECIOUS\n", f);
    fclose(f);
    CHECK(symlink(victim, link) == 0);
    CHECK(kgl_benchmark_write_results(path, NULL, 0, e, sizeof e));
    CHECK(holds(victim, "PRECIOUS\n"));
    CHECK(regular(path) && holds(path, "{}\n"));
}

/* Whether the CSV text is one run's whole log: a header, then rows 1..steps
   with as many fields as the header, and nothing else (no NUL byte). */
static bool one_whole_log(const char *text, size_t len, long steps)
{
    if (!text || strlen(text) != len) return false; /* a NUL byte inside */
    const char *line = text, *nl = strchr(line, '\n');
    if (!nl || strncmp(line, "step,", 5) != 0) return false;
    int fields = 1;
    for (const char *p = line; p < nl; p++) fields += *p == ',';
    long step = 0;
    for (line = nl + 1; *line; line = nl + 1) {
        if (!(nl = strchr(line, '\n'))) return false;
        int n = 1;
        for (const char *p = line; p < nl; p++) n += *p == ',';
        if (n != fields || strtol(line, NULL, 10) != ++step) return false;
    }
    return step == steps;
}

/* Defect 5: two runs writing one --log tore it (one exited 0 with the
   other's rows and NUL bytes in it, the other failed to rename). */
TEST(temporaries_two_runs_writing_one_log_leave_one_whole_log)
{
    char log[600], cmd[4096];
    snprintf(log, sizeof log, "%s/shared.csv", T->tmp);
    /* different heads: their logs have different columns; 3000 and 2000
       steps of a row each take long enough (0.1-0.3 s) to overlap */
    snprintf(cmd, sizeof cmd,
             "'%s' train --steps 3000 --log-every 1 --log '%s' --quiet >/dev/null & a=$!; "
             "'%s' train --heads 1 --steps 2000 --log-every 1 --log '%s' --quiet >/dev/null & b=$!; "
             "wait $a; ra=$?; wait $b; echo $ra $?",
             T->kgl, log, T->kgl, log);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    if (!CHECK(strcmp(out, "0 0\n") == 0)) printf("    exit statuses %s    %s\n", out, err);
    size_t len = 0;
    char *text = test_slurp(log, &len);
    bool two_heads = text && strstr(text, ",h1_max_prob_mean,") != NULL;
    CHECK(one_whole_log(text, len, two_heads ? 3000 : 2000));
    free(text);
    snprintf(cmd, sizeof cmd, "ls '%s'.* 2>/dev/null | wc -l", log); /* no temporary left */
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0 && strtol(out, NULL, 10) == 0);
}

/* Defect 3: an output equal to an input destroyed the input, exit 0
   (--save tr.tsv --train tr.tsv, --ranks c.st --checkpoint c.st, ...). Each
   case: exit 2 before any work, the message naming both, every file as it
   was. */
TEST(outputs_equal_to_an_input_are_refused)
{
    char dir[600], cmd[32768], cwd[4096], kgl[8400];
    snprintf(dir, sizeof dir, "%s/same", T->tmp);
    /* the commands run in dir, as a user types them: kgl by its full path */
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    if (T->kgl[0] == '/') snprintf(kgl, sizeof kgl, "%s", T->kgl);
    else snprintf(kgl, sizeof kgl, "%s/%s", cwd, T->kgl);
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/pic' '%s/emb' '%s/bm/d/tiny' '%s/bm/out' && cd '%s' && "
             "'%s' train --steps 5 --quiet --save c.st >/dev/null && "
             "'%s' train --steps 5 --quiet --ensemble 2 --save e.st >/dev/null && "
             "'%s' train --steps 2 --quiet --context graph --neighbours 4 --save pic/relations.svg >/dev/null && "
             "cp c.st pic/head1.svg && cp c.st pic/query.svg && ln -s tr.tsv link.tsv && "
             "printf -- '--dim 8 --steps 5 --eval-every 5\\n' > bm/out/tiny-seed1.json",
             dir, dir, dir, dir, dir, kgl, kgl, kgl);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) {
        printf("    %s\n", err);
        return;
    }
    write_tmp(T, 0, "same/tr.tsv", (const char *)kgl_academic_tsv, kgl_academic_tsv_len);
    write_tmp(T, 1, "same/emb/entities.tsv", (const char *)kgl_academic_tsv, kgl_academic_tsv_len);
    write_tmp(T, 2, "same/r.args", "--dim 8\n", 8);
    write_tmp(T, 3, "same/bm/d/tiny/train.txt", "a\tr\tb\nb\tr\tc\n", 12);
    write_tmp(T, 4, "same/bm/d/tiny/valid.txt", "a\tr\tc\n", 6);
    write_tmp(T, 5, "same/bm/d/tiny/test.txt", "c\tr\ta\n", 6);
    write_tmp(T, 6, "same/x.m1.tsv", (const char *)kgl_academic_tsv, kgl_academic_tsv_len);
    /* a copy of every file, to compare after each case */
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -rf ../same.orig && cp -a . ../same.orig", dir);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    static const char *const cases[][2] = {
        {"train --train tr.tsv --save tr.tsv", "kgl train: --save tr.tsv is the same file as --train tr.tsv, which "
                                               "writing it would destroy; give another path\n"},
        {"train --train tr.tsv --log tr.tsv", "kgl train: --log tr.tsv is the same file as --train tr.tsv"},
        {"train --train tr.tsv --save link.tsv", "kgl train: --save link.tsv is the same file as --train tr.tsv"},
        {"train --recipe r.args --train tr.tsv --save ./r.args --quiet",
         "kgl train: --save ./r.args is the same file as --recipe r.args"},
        {"train --resume c.st --log c.st", "kgl train: --log c.st is the same file as --resume c.st"},
        /* two outputs, neither written yet */
        {"train --save F --log ../same/F", "kgl train: --log ../same/F is the same file as --save F; give another path\n"},
        {"train --ensemble 2 --save n.st --log n.m1.st", "kgl train: --save (member 1) n.m1.st is the same file as "
                                                         "--log n.m1.st"},
        {"train --ensemble 2 --save x.tsv --train x.m1.tsv", "kgl train: --save (member 1) x.m1.tsv is the same file "
                                                             "as --train x.m1.tsv"},
        {"eval --checkpoint c.st --ranks c.st", "kgl eval: --ranks c.st is the same file as --checkpoint c.st"},
        {"eval --checkpoint c.st --ranks tr.tsv --train tr.tsv", "kgl eval: --ranks tr.tsv is the same file as --train"},
        {"eval --checkpoint e.st --ranks e.m1.st", "kgl eval: --ranks e.m1.st is the same file as the checkpoint e.m1.st"},
        {"grad --checkpoint c.st --out ./c.st", "kgl grad: --out ./c.st is the same file as --checkpoint c.st"},
        {"grad --checkpoint e.st --member 1 --out e.m1.st", "kgl grad: --out e.m1.st is the same file as the "
                                                            "checkpoint e.m1.st"},
        {"export --checkpoint c.st --train emb/entities.tsv --out emb", "kgl export: --out emb/entities.tsv is the same "
                                                                        "file as --train emb/entities.tsv"},
        {"heads --checkpoint pic/head1.svg --svg pic", "kgl heads: --svg pic/head1.svg is the same file as "
                                                       "--checkpoint pic/head1.svg"},
        {"heads --checkpoint pic/query.svg --svg pic --query alice,advises", "kgl heads: --svg pic/query.svg is the "
                                                                             "same file as --checkpoint pic/query.svg"},
        /* a graph model's study draws relations.svg alone */
        {"heads --checkpoint pic/relations.svg --svg pic", "kgl heads: --svg pic/relations.svg is the same file as "
                                                           "--checkpoint pic/relations.svg"},
        {"benchmark --data bm/d --datasets tiny --seeds 1 --recipe bm/out/tiny-seed1.json --out bm/out",
         "kgl benchmark: --out bm/out/tiny-seed1.json is the same file as --recipe bm/out/tiny-seed1.json"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s", dir, kgl, cases[k][0]);
        int rc = run_sh(T, cmd, out, sizeof out, err, sizeof err);
        bool refused = rc == 2 && strstr(err, cases[k][1]) == err && !*out;
        if (!CHECK(refused)) printf("    kgl %s: rc %d\n    stderr: %s", cases[k][0], rc, err);
        snprintf(cmd, sizeof cmd, "cd '%s' && diff -r --no-dereference . ../same.orig", dir);
        if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("    kgl %s:\n%s", cases[k][0], out);
    }
    /* resuming in place is what --resume F --save F is for */
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' train --resume c.st --save c.st --steps 3 --quiet", dir, kgl);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    kgl_st_file st;
    char e[512], path[800];
    snprintf(path, sizeof path, "%s/c.st", dir);
    if (CHECK(kgl_st_read(path, &st, e, sizeof e))) {
        CHECK(strcmp(kgl_st_meta(&st, "step"), "8") == 0);
        kgl_st_free(&st);
    }
}
