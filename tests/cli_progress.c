/* cli_progress.c — the one progress line of long work (train/progress.c):
 * its text and pace (the helper itself, included whole, as cli_memory.c
 * includes memory.c), then what each command shows: kgl train (a model; an
 * ensemble, one line for all its members, their summaries once and their
 * details in --log; --quiet's summary), kgl benchmark, kgl saturation, kgl
 * eval, and on a real terminal (a pseudo-terminal from libc's
 * posix_openpt: no libutil needed). Lines come at each tenth of the work in
 * a log, or every KGL_PROGRESS_SECONDS, which the tests set small. */
#define _XOPEN_SOURCE 700 /* posix_openpt, grantpt, unlockpt, ptsname */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "test.h"
#include "../train/progress.c"

static char out[1 << 18], err[1 << 16];

/* "12.3s", "8m31s", "2h05m" → seconds; -1 when s is none of them. */
static double seconds_of(const char *s)
{
    int a, b;
    double x;
    if (sscanf(s, "%dh%dm", &a, &b) == 2) return a * 3600.0 + b * 60.0;
    if (sscanf(s, "%dm%ds", &a, &b) == 2) return a * 60.0 + b;
    if (sscanf(s, "%lfs", &x) == 1) return x;
    return -1;
}

/* A line's "E elapsed" and "ETA T" in seconds (eta -1 when it has none). */
static bool line_times(const char *line, double *elapsed, double *eta)
{
    const char *e = strstr(line, " elapsed");
    if (!e) return false;
    const char *w = e;
    while (w > line && w[-1] != ' ') w--;
    *elapsed = seconds_of(w);
    const char *t = strstr(line, "ETA ");
    *eta = t && t < line + strcspn(line, "\n") ? seconds_of(t + 4) : -1;
    return *elapsed >= 0;
}

/* The next line of *text (NUL-terminated in place), or NULL at the end. */
static char *next_line(char **text)
{
    if (!*text || !**text) return NULL;
    char *line = *text, *nl = strchr(line, '\n');
    if (nl) *nl = 0, *text = nl + 1;
    else *text = line + strlen(line);
    return line;
}

TEST(progress_durations_and_eta_text)
{
    char b[64];
    static const struct {
        double s;
        const char *text;
    } cases[] = {{0, "0.0s"}, {12.34, "12.3s"}, {59.94, "59.9s"}, {59.96, "1m00s"}, {72, "1m12s"},
                 {511, "8m31s"}, {3599.4, "59m59s"}, {3600, "1h00m"}, {7500, "2h05m"}, {-1, "0.0s"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        format_duration(cases[k].s, b, sizeof b);
        if (!CHECK(strcmp(b, cases[k].text) == 0)) printf("    %g s -> %s, want %s\n", cases[k].s, b, cases[k].text);
    }
    /* the ETA is the pace of all the work so far: 72 s for 72 of 583 steps leaves 511 s */
    progress_times(&(progress_at){72, 583, 72}, b, sizeof b);
    CHECK(strcmp(b, "1m12s elapsed, ETA 8m31s") == 0);
    progress_times(&(progress_at){25, 100, 10}, b, sizeof b);
    CHECK(strcmp(b, "10.0s elapsed, ETA 30.0s") == 0);
    /* none before half a percent is done (setting up), none when all is */
    progress_times(&(progress_at){1, 300, 0.5}, b, sizeof b);
    CHECK(strcmp(b, "0.5s elapsed") == 0);
    progress_times(&(progress_at){300, 300, 2}, b, sizeof b);
    CHECK(strcmp(b, "2.0s elapsed") == 0);
    setenv("KGL_PROGRESS_SECONDS", "2.5", 1);
    CHECK(progress_every() == 2.5 && progress_delay() == 1);
    setenv("KGL_PROGRESS_SECONDS", "0.2", 1);
    CHECK(progress_every() == 0.2 && progress_delay() == 0.2);
    setenv("KGL_PROGRESS_SECONDS", "soon", 1);
    CHECK(progress_every() == 60);
    unsetenv("KGL_PROGRESS_SECONDS");
    CHECK(progress_every() == 60);
}

/* When a line is due, with the clock given: in a log at the start, at each
   tenth of the work and every `every` seconds; on a terminal at most ten
   times a second; quick work (a delay) says nothing, not even at its end. */
TEST(progress_lines_come_at_a_sane_rate)
{
    setenv("KGL_PROGRESS_SECONDS", "30", 1);
    progress p;
    progress_at at;
    int lines = 0;
    progress_start(&p, stderr, false, 1000, 0, 100.0);
    for (int step = 1; step <= 1000; step++) lines += progress_due(&p, 1, 0, false, 100.0 + step * 0.01, &at);
    CHECK(lines == 11); /* step 1, then 100, 200, ..., 1000 */
    CHECK(at.done == 1000 && at.total == 1000 && fabs(at.elapsed - 10) < 1e-9);
    CHECK(!progress_due(&p, 0, 0, false, 111, &at));
    CHECK(progress_due(&p, 0, 0, false, 141, &at)); /* 30 s since the last line */
    CHECK(progress_due(&p, 0, 0, true, 141.5, &at)); /* forced */
    progress_stop(&p);

    /* work taken back (a member that stopped early) lowers the total */
    progress_start(&p, stderr, false, 1000, 0, 0);
    CHECK(progress_due(&p, 500, -400, false, 1, &at) && at.done == 500 && at.total == 600);
    progress_stop(&p);

    progress_start(&p, stderr, true, 1000, 0, 0);
    lines = 0;
    for (int step = 1; step <= 1000; step++) lines += progress_due(&p, 1, 0, false, step * 0.001, &at);
    CHECK(lines >= 10 && lines <= 11); /* one second: ten redraws (and the first) */
    progress_stop(&p);

    progress_start(&p, stderr, false, 100, 1.0, 0);
    lines = 0;
    for (int k = 1; k <= 100; k++) lines += progress_due(&p, 1, 0, false, k * 0.009, &at);
    CHECK(lines == 0 && !progress_due(&p, 0, 0, true, 0.95, &at)); /* 0.9 s of work: nothing */
    CHECK(progress_due(&p, 0, 0, false, 1.2, &at)); /* past the delay: a line */
    progress_stop(&p);
    unsetenv("KGL_PROGRESS_SECONDS");
}

/* On a terminal the line is redrawn in place (\r), padded over a longer one;
   a line of its own goes above it, and the line is drawn again below. */
TEST(progress_line_in_place_is_redrawn_over_itself)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!CHECK(f != NULL)) return;
    progress p;
    progress_start(&p, f, true, 10, 0, 0);
    progress_show(&p, "step 1/10, long");
    progress_show(&p, "step 2/10");
    progress_print(&p, "member 0 done");
    progress_clear(&p);
    progress_print(&p, "a line");
    progress_show(&p, "step 10/10");
    progress_stop(&p);
    fclose(f);
    const char *want = "\rstep 1/10, long"
                       "\rstep 2/10      "
                       "\rmember 0 done\n"
                       "\rstep 2/10"
                       "\r         \r"
                       "a line\n"
                       "\rstep 10/10\n";
    if (!CHECK(strcmp(buf, want) == 0)) printf("    got %s\n", buf);
    free(buf);
}

/* kgl train in a log: "step N/300, E elapsed, ETA T; loss …" at the start
   and at each tenth of the steps, elapsed growing and the ETA falling. */
TEST(train_progress_in_a_log_at_each_tenth)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "KGL_PROGRESS_SECONDS= '%s' train --steps 300 --log-every 7", T->kgl);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    long want[] = {1, 30, 60, 90, 120, 150, 180, 210, 240, 270, 300};
    int n = 0;
    char *text = err, *line;
    double last_elapsed = -1;
    while ((line = next_line(&text))) {
        long step, last;
        double elapsed, eta;
        if (!CHECK(sscanf(line, "step %ld/%ld, ", &step, &last) == 2 && line_times(line, &elapsed, &eta))) {
            printf("    %s\n", line);
            continue;
        }
        CHECK(n < 11 && step == want[n] && last == 300);
        CHECK(strstr(line, "; loss ") && strstr(line, ", train H@1 "));
        CHECK(elapsed >= last_elapsed);
        CHECK((eta < 0) == (step == 1 || step == 300)); /* no ETA from one step; none at the end */
        last_elapsed = elapsed;
        n++;
    }
    CHECK(n == 11); /* not every --log-every: that is the CSV log's */
}

/* The ensemble's one line counts the steps of every member, so its elapsed
   time never restarts and its ETA, from the pace of all the steps done,
   falls from member to member instead of starting over with each (the
   benchmark's old ETA said "0m12s" and a minute later "1m17s"). Four
   members one at a time, a line at each tenth (each ~0.2 s). */
TEST(ensemble_progress_is_one_line_with_a_sane_eta)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "KGL_PROGRESS_SECONDS= '%s' train --dim 32 --heads 2 --ffn 64 --steps 1500 --ensemble 4 --ensemble-jobs 1 "
             "--threads 1",
             T->kgl);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    char *text = err, *line;
    int lines = 0, members = 0;
    double last_elapsed = -1, last_eta = -1, predicted = -1, final = -1;
    while ((line = next_line(&text))) {
        double done, total, elapsed, eta;
        if (strncmp(line, "member ", 7) == 0) {
            members++;
            continue;
        }
        if (!CHECK(sscanf(line, "ensemble 4 models, one at a time: %lf/%lf steps, ", &done, &total) == 2 &&
                   line_times(line, &elapsed, &eta))) {
            printf("    %s\n", line);
            continue;
        }
        lines++;
        CHECK(total == 6000 && elapsed >= last_elapsed);
        /* The pace of a tenth of the steps on a shared machine varies by up to
           a quarter, and the times are printed to 0.1 s: an ETA that grows by
           more than that restarted (a member's whole time, ≥ 0.4 s here).
           Checked from the second member on, where a restart would show:
           within the first, the pace is measured over 0.1–0.3 s, and on a
           loaded machine (two threads of another run) it rose 0.4 s → 0.9 s
           there in 2 of 3 suites. */
        if (eta >= 0 && last_eta >= 0 && done > total / 4 && !CHECK(eta <= 1.25 * last_eta + 0.15))
            printf("    the ETA rose from %.1f s to %.1f s: %s\n", last_eta, eta, line);
        if (predicted < 0 && done >= 1200 && eta >= 0) predicted = elapsed + eta; /* a fifth done: the whole */
        if (eta >= 0) last_eta = eta;
        last_elapsed = elapsed;
        final = elapsed;
    }
    CHECK(lines >= 11 && members == 4);
    /* What a fifth of the work foretold against what it took, within a factor
       of three. The ETA this guards against counts the running member only:
       at a fifth (1,200 of 6,000 steps, member 0 at 1,200 of its 1,500) it
       foretells 1.25 × the elapsed time for a run of 5 ×, a factor of four
       off. A factor of two failed once on a machine loaded to 9 on 2 cores
       (0.5 s foretold, 1.1 s taken: the pace of a 1-second run moves that
       much under load). */
    if (!CHECK(predicted > 0 && final > 0 && predicted >= final / 3 && predicted <= 3 * final))
        printf("    predicted %.1f s, took %.1f s\n", predicted, final);
}

/* Members at once (--ensemble-jobs 2) do not interleave their progress: the
   screen gets the ensemble's line and each member's summary once; every
   member's details (each logged step, each evaluation) are in its --log. */
TEST(ensemble_members_at_once_keep_their_details_in_the_log)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/kg && grep -v '^#' data/academic.tsv > %s/kg/train.txt && "
             "printf 'carol\\tadvises\\tdave\\n' > %s/kg/valid.txt && "
             "KGL_PROGRESS_SECONDS=0.01 '%s' train --train %s/kg/train.txt --valid %s/kg/valid.txt --steps 200 "
             "--eval-every 50 --log-every 20 --ensemble 3 --ensemble-jobs 2 --threads 2 --log %s/run.csv",
             T->tmp, T->tmp, T->tmp, T->kgl, T->tmp, T->tmp, T->tmp);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    int summaries[3] = {0}, lines = 0;
    char *text = err, *line;
    while ((line = next_line(&text))) {
        int k;
        double done, total;
        if (sscanf(line, "member %d  seed ", &k) == 1 && k >= 0 && k < 3) {
            CHECK(strstr(line, "  200 steps in ") && strstr(line, "  best valid MRR "));
            summaries[k]++;
        } else if (sscanf(line, "ensemble 3 models, 2 at a time: %lf/%lf steps, ", &done, &total) == 2) {
            CHECK(total == 600 && done <= total);
            lines++;
        } else {
            CHECK(!"a line that is neither the ensemble's nor a member's summary");
            printf("    %s\n", line);
        }
    }
    CHECK(summaries[0] == 1 && summaries[1] == 1 && summaries[2] == 1 && lines >= 11);
    for (int k = 0; k < 3; k++) { /* rows every 20 steps and at the 4 evaluations (50, 150 besides) */
        char path[1024];
        if (k) snprintf(path, sizeof path, "%s/run.m%d.csv", T->tmp, k);
        else snprintf(path, sizeof path, "%s/run.csv", T->tmp);
        char *log = test_slurp(path, NULL), *p = log;
        int rows = 0, evaluated = 0;
        for (char *row; (row = next_line(&p));) {
            rows++;
            evaluated += row[strlen(row) - 1] != ','; /* valid_mrr, valid_hits1, valid_hits10 filled */
        }
        CHECK(log && rows == 1 + 12 && evaluated == 1 + 4);
        free(log);
    }
}

/* --quiet: no progress, but a final summary of one line on stderr (what was
   trained, in how long, each split's metrics), for a model and an ensemble. */
TEST(quiet_keeps_a_final_summary)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/kg && grep -v '^#' data/academic.tsv > %s/kg/train.txt && "
             "printf 'carol\\tadvises\\tdave\\n' > %s/kg/valid.txt && printf 'dave\\tabout\\tnesy\\n' > %s/kg/test.txt",
             T->tmp, T->tmp, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd,
             "KGL_PROGRESS_SECONDS=0.001 '%s' train --train %s/kg/train.txt --valid %s/kg/valid.txt --test %s/kg/test.txt "
             "--steps 100 --eval-every 50 --quiet",
             T->kgl, T->tmp, T->tmp, T->tmp);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    double elapsed, eta;
    const char *model = "kgl train: a model (d_model 8, 2 heads), 100 steps in ",
               *ensemble = "kgl train: an ensemble of 3 models (d_model 8, 2 heads), 30 steps each, in ";
    if (!CHECK(strncmp(err, model, strlen(model)) == 0 &&
               strchr(err, '\n') == err + strlen(err) - 1 && strstr(err, ", final loss ") &&
               strstr(err, ", best valid at step ") && strstr(err, "; train MRR ") && strstr(err, "; valid MRR ") &&
               strstr(err, "; test MRR ") && strstr(err, " H@10 ")))
        printf("    stderr: %s\n", err);
    CHECK(!line_times(err, &elapsed, &eta)); /* not a progress line */
    snprintf(cmd, sizeof cmd,
             "KGL_PROGRESS_SECONDS=0.001 '%s' train --train %s/kg/train.txt --test %s/kg/test.txt --steps 30 --ensemble 3 "
             "--quiet --json",
             T->kgl, T->tmp, T->tmp);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    if (!CHECK(strncmp(err, ensemble, strlen(ensemble)) == 0 &&
               strchr(err, '\n') == err + strlen(err) - 1 && strstr(err, "; test MRR ")))
        printf("    stderr: %s\n", err);
    CHECK(out[0] == '{'); /* stdout is the JSON, as without --quiet */
}

/* kgl benchmark: one line for all its runs (the steps of every run, a run
   not started counted as another of its dataset), each run's own lines in
   its .err file. Two runs of a two-member ensemble, one after the other. */
TEST(benchmark_overall_progress_line)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/kg/acad %s/cfg && grep -v '^#' data/academic.tsv > %s/kg/acad/train.txt && "
             "printf 'carol\\tadvises\\tdave\\n' > %s/kg/acad/valid.txt && "
             "printf 'dave\\tabout\\tnesy\\n' > %s/kg/acad/test.txt && "
             "printf -- '--dim 32 --heads 2 --ffn 64 --steps 1500 --eval-every 500 --ensemble 2\\n' > %s/cfg/acad.args && "
             "KGL_PROGRESS_SECONDS=0.2 '%s' benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 1,2 --out %s/bout",
             T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, T->kgl, T->tmp, T->tmp, T->tmp);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("%s\n", err);
    CHECK(strstr(err, "6000/6000 steps, ") && strstr(err, "; 2 of 2 runs done\n"));
    /* "kgl benchmark: 2400/~6000 steps, 0.6s elapsed, ETA 0.9s; 0 of 2 runs done, running acad seed 1 (2400/3000)" */
    char *text = err, *line;
    int lines = 0, guessed = 0, running = 0;
    double last_elapsed = -1;
    while ((line = next_line(&text))) {
        double done, total, elapsed, eta;
        char *at = strstr(line, "kgl benchmark: ");
        if (!at || !line_times(line, &elapsed, &eta)) continue;
        bool guess = sscanf(at, "kgl benchmark: %lf/~%lf steps, ", &done, &total) == 2;
        if (!CHECK(guess || sscanf(at, "kgl benchmark: %lf/%lf steps, ", &done, &total) == 2)) {
            printf("    %s\n", line);
            continue;
        }
        lines++;
        guessed += guess;
        running += strstr(line, ", running acad seed ") != NULL;
        CHECK(total == 6000 && done <= total && elapsed >= last_elapsed); /* the second run counted as the first */
        last_elapsed = elapsed;
    }
    CHECK(lines >= 3 && guessed >= 1 && running >= 1);
    /* the run's own progress, in its .err file */
    char path[1024];
    snprintf(path, sizeof path, "%s/bout/acad-seed1.err", T->tmp);
    char *run = test_slurp(path, NULL);
    CHECK(run && strstr(run, "ensemble 2 models, 2 at a time: 3000/3000 steps, ") && strstr(run, "member 1  seed 1001  1500 steps"));
    free(run);
}

/* kgl train's steps for the program that started it (progress_send_steps):
   with KGL_PROGRESS_FD=3 naming a pipe, lines "DONE TOTAL" on it, --quiet
   too, never decreasing, the last one all the steps (an ensemble's members'
   together); on a descriptor that is no pipe, nothing, and the run is the
   same. */
TEST(train_sends_its_steps_down_kgl_progress_fd)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "(KGL_PROGRESS_FD=3 '%s' train --train data/academic.tsv --dim 8 --steps 300 --ensemble 2 --quiet "
             "3>&1 1>/dev/null 2>/dev/null) | cat", T->kgl);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    char *text = out, *line;
    long last_done = -1, last_total = -1;
    int lines = 0;
    while ((line = next_line(&text))) {
        long done, total;
        if (!CHECK(sscanf(line, "%ld %ld", &done, &total) == 2 && done >= last_done && done <= total)) {
            printf("    %s\n", line);
            continue;
        }
        last_done = done, last_total = total, lines++;
    }
    CHECK(lines >= 2 && last_done == 600 && last_total == 600);
    /* descriptor 3 a file, not a pipe: nothing is written there */
    snprintf(cmd, sizeof cmd,
             "KGL_PROGRESS_FD=3 '%s' train --train data/academic.tsv --dim 8 --steps 30 --quiet 3>'%s/steps.txt' "
             ">/dev/null && wc -c < '%s/steps.txt'", T->kgl, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0 && atoi(out) == 0);
}

/* kgl benchmark's line takes each run's steps from the run's pipe, not
   from the text of its .err file: with OUT/acad-seed1.err a FIFO (read
   by a `cat` of the test's), which the benchmark cannot read back, the
   line still counts the run's 20 steps (it used to say none). */
TEST(benchmark_steps_come_down_a_pipe_not_out_of_the_err_text)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/kg/acad %s/cfg %s/bout && grep -v '^#' data/academic.tsv > %s/kg/acad/train.txt && "
             "printf 'carol\\tadvises\\tdave\\n' > %s/kg/acad/valid.txt && "
             "printf 'dave\\tabout\\tnesy\\n' > %s/kg/acad/test.txt && "
             "printf -- '--dim 8 --steps 20 --eval-every 10\\n' > %s/cfg/acad.args && mkfifo %s/bout/acad-seed1.err && "
             "{ cat %s/bout/acad-seed1.err > %s/run.err & } && "
             "KGL_PROGRESS_SECONDS=0.01 '%s' benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 1 --out %s/bout",
             T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, T->kgl, T->tmp, T->tmp,
             T->tmp);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("%s\n", err);
    if (!CHECK(strstr(err, "kgl benchmark: 20/20 steps, ") && strstr(err, "; 1 of 1 runs done\n")))
        printf("    %s\n", err);
}

/* kgl saturation: the steps of every run of the grid, in a log too. */
TEST(saturation_progress_line)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "KGL_PROGRESS_SECONDS= '%s' saturation --dk 4,16 --scale sqrt --init-scale 1 --seeds 2 --steps 50 --jobs 2 "
             "--out %s/sat",
             T->kgl, T->tmp);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    CHECK(strstr(err, "200/200 steps, ") && strstr(err, "; 4/4 runs done\n"));
    char *text = err, *line;
    int lines = 0;
    double last_done = -1;
    while ((line = next_line(&text))) {
        double done, total, elapsed, eta;
        int runs, all;
        if (!CHECK(sscanf(line, "kgl saturation: %lf/%lf steps, ", &done, &total) == 2 && line_times(line, &elapsed, &eta) &&
                   sscanf(strchr(line, ';'), "; %d/%d runs done", &runs, &all) == 2)) {
            printf("    %s\n", line);
            continue;
        }
        CHECK(total == 200 && all == 4 && done >= last_done);
        last_done = done;
        lines++;
    }
    CHECK(lines >= 11);
    /* --json and --quiet: none */
    snprintf(cmd, sizeof cmd, "'%s' saturation --dk 4 --scale sqrt --init-scale 1 --seeds 1 --steps 20 --out %s/sat --quiet",
             T->kgl, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0 && err[0] == 0);
}

/* Evaluation of a big graph says where it is (kgl eval; kgl train's
   evaluations, --eval-every's and the report's); a quick one says nothing.
   A graph of 2,000 entities and 20,000 triples stands for a big one
   (19,000 to train: 38,000 queries, and 2,000 of 1,000 valid triples). */
TEST(eval_progress_on_a_big_graph)
{
    char cmd[4096];
    const char *d = T->tmp;
    snprintf(cmd, sizeof cmd,
             "awk 'BEGIN { srand(7); while (n < 20000) { h = int(rand() * 2000); r = int(rand() * 10); "
             "t = int(rand() * 2000); if (!((h, r, t) in seen)) { seen[h, r, t]; n++; "
             "printf \"e%%d\\tr%%d\\te%%d\\n\", h, r, t } } }' > %s/all.txt && "
             "head -n 19000 %s/all.txt > %s/train.txt && tail -n 1000 %s/all.txt > %s/valid.txt",
             d, d, d, d, d);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd,
             /* 1 ms: the report ranks its 40,000 queries in about 13 ms on a fast core, so 20 ms (as it was)
                let it finish before its first line now and then */
             "KGL_PROGRESS_SECONDS=0.001 '%s' train --train %s/train.txt --valid %s/valid.txt --context none --steps 2 "
             "--eval-every 1 --save %s/m.st",
             T->kgl, d, d, d);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    /* "step 1/2, 0.1s elapsed; loss 8.006432, ranking valid 1024/2000" and the report's rankings */
    CHECK(strstr(err, ", ranking valid ") && strstr(err, "/2000\n"));
    CHECK(strstr(err, "kgl train: ") && strstr(err, "/40000 queries, ") && strstr(err, "; ranking train for the report\n"));
    snprintf(cmd, sizeof cmd, "KGL_PROGRESS_SECONDS=0.001 '%s' eval --checkpoint %s/m.st --train %s/train.txt --valid %s/valid.txt",
             T->kgl, d, d, d);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    char *text = err, *line;
    int lines = 0;
    double last_done = 0;
    while ((line = next_line(&text))) {
        double done, total, elapsed, eta;
        if (strncmp(line, "kgl eval: ", 10) != 0) continue; /* the loader's notes */
        if (!CHECK(sscanf(line, "kgl eval: %lf/%lf queries, ", &done, &total) == 2 && line_times(line, &elapsed, &eta) &&
                   (strstr(line, "; ranking train") || strstr(line, "; ranking valid")))) {
            printf("    %s\n", line);
            continue;
        }
        CHECK(total == 40000 && done > last_done);
        last_done = done;
        lines++;
    }
    CHECK(lines >= 2 && last_done == 40000);
    /* the academic world ranks in a blink: no line (the delay is a second) */
    snprintf(cmd, sizeof cmd, "'%s' train --steps 5 --save %s/small.st --quiet && KGL_PROGRESS_SECONDS= '%s' eval --checkpoint %s/small.st",
             T->kgl, d, T->kgl, d);
    if (CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) CHECK(strstr(err, "queries") == NULL);
}

/* Runs `kgl ARGS` with stderr on a pseudo-terminal `columns` wide (stdout
   to /dev/null) and returns what the terminal received, or NULL. */
static char *on_a_terminal(test_ctx *T, const char *const *args, int columns, size_t *len)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
        if (master >= 0) close(master);
        return NULL;
    }
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    if (slave < 0) {
        close(master);
        return NULL;
    }
    struct winsize ws = {.ws_row = 24, .ws_col = (unsigned short)columns};
    ioctl(slave, TIOCSWINSZ, &ws);
    struct termios tio; /* the bytes as written: no \n -> \r\n */
    if (tcgetattr(slave, &tio) == 0) {
        tio.c_oflag &= ~(tcflag_t)OPOST;
        tcsetattr(slave, TCSANOW, &tio);
    }
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(null, 1), dup2(slave, 2);
        close(master);
        char *argv[32];
        int n = 0;
        argv[n++] = (char *)T->kgl;
        for (; args[n - 1] && n < 31; n++) argv[n] = (char *)args[n - 1];
        argv[n] = NULL;
        execv(T->kgl, argv);
        _exit(127);
    }
    close(slave);
    size_t cap = 1 << 20, used = 0;
    char *buf = malloc(cap);
    for (ssize_t got; buf && (got = read(master, buf + used, cap - 1 - used)) > 0;) used += (size_t)got; /* EIO at the end */
    int status = 0;
    waitpid(pid, &status, 0);
    close(master);
    if (buf) buf[used] = 0;
    *len = used;
    test_check(T, WIFEXITED(status) && WEXITSTATUS(status) == 0, "kgl exits 0 on a terminal", __FILE__, __LINE__);
    return buf;
}

/* On a terminal an ensemble with members at once is one line redrawn in
   place, never wider than the terminal, with each member's summary above
   it once, and the line left on the screen at the end. */
TEST(progress_on_a_terminal)
{
    static const char *const args[] = {"train", "--dim", "32", "--heads", "2", "--steps", "600", "--ensemble", "3",
                                       "--ensemble-jobs", "2", "--threads", "2", NULL};
    size_t len;
    char *tty = on_a_terminal(T, args, 60, &len);
    if (!tty) {
        test_skip(T, "no pseudo-terminal (posix_openpt)");
        return;
    }
    int newlines = 0, redraws = 0, summaries = 0;
    for (char *p = tty; *p;) { /* each piece between \r and \r or \n */
        size_t n = strcspn(p, "\r\n");
        if (n > 59 && strncmp(p, "member ", 7) != 0) {
            CHECK(!"a line in place wider than the terminal");
            printf("    %.*s\n", (int)n, p);
        }
        if (strncmp(p, "member ", 7) == 0) summaries++, CHECK(p[n] == '\n');
        else if (n && strncmp(p, "ensemble 3 models, 2 at a time: ", 32) == 0) redraws++;
        else if (n && strspn(p, " ") != n) CHECK(!"a piece that is neither the line nor a summary"), printf("    %.*s\n", (int)n, p);
        newlines += p[n] == '\n';
        p += n + (p[n] != 0);
    }
    CHECK(summaries == 3 && newlines == 4 && redraws >= 5); /* the summaries and the last line */
    if (!CHECK(len > 0 && tty[len - 1] == '\n' && strstr(tty, "1800/1800 steps, ")))
        printf("    the terminal's last bytes: %s\n", len > 300 ? tty + len - 300 : tty);
    free(tty);
}
