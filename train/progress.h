/* progress.h — the one progress line of long work (kgl train and its
 * ensembles and evaluations, kgl eval, kgl benchmark, kgl saturation): how
 * much is done, the time elapsed and an ETA from the pace of all the work
 * done so far (every member's or run's steps, not the current one's alone).
 *
 * On a terminal it is one line redrawn in place (a carriage return, at most
 * ten times a second, never longer than the terminal is wide); lines of
 * their own (a member's summary, a warning) appear above it. Elsewhere (a
 * log, a pipe, a benchmark run's .err file) it is a plain line at the
 * start, at each tenth of the work and at least every KGL_PROGRESS_SECONDS
 * seconds (default 60). Every function may be called from any thread. */
#ifndef KGL_PROGRESS_H
#define KGL_PROGRESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define PROGRESS_TTY_SECONDS 0.1 /* the fastest a terminal's line is redrawn */
#define PROGRESS_LINE_MAX 512

typedef struct progress {
    FILE *f;
    bool tty;            /* redrawn in place */
    double every;        /* plain lines: at least every `every` seconds */
    double delay;        /* no line before `delay` seconds: quick work says nothing */
    double t0, shown_at; /* the start; the last line shown (t0 - 1: none yet) */
    double done, total;  /* work, in the caller's unit (steps, queries) */
    int tenths;          /* plain lines: the tenths of the work shown */
    int width;           /* the line in place: its columns on screen (0: none) */
    char line[PROGRESS_LINE_MAX]; /* the line in place, redrawn below a line of its own */
    int steps_fd;        /* progress_send_steps's pipe (-1: none) */
    double sent_at, sent_done, sent_total; /* what went down it last, and when */
    pthread_mutex_t lock;
} progress;

/* What progress_due saw, for the caller's line. */
typedef struct progress_at {
    double done, total, elapsed;
} progress_at;

/* Starts at time `now` (now_seconds()) with `total` units of work to do. */
void progress_start(progress *p, FILE *f, bool tty, double total, double delay, double now);
/* Adds `work` to the work done and `more` to the total (negative: work
 * that will not be done, as a member that stopped early), and says whether
 * a line is due now (`force`: the last line, due if any line was or the
 * work took `delay`); then *at holds the counts for the caller's line,
 * which it passes to progress_show. */
bool progress_due(progress *p, double work, double more, bool force, double now, progress_at *at);
/* The counts, done and total, also go down a pipe to the program that
 * started this one, when it asked: KGL_PROGRESS_FD=N in the environment
 * names the pipe's end, an open FIFO N >= 3 (kgl benchmark asks it of its
 * `kgl train` runs: their steps, for its own line, never read back from
 * the text of their .err files). Each is one line "DONE TOTAL\n" (whole
 * numbers), sent at most ten times a second, at once when the work is
 * done, and at progress_stop; a full pipe drops a line (the next one says
 * it again), a reader gone ends them. Without KGL_PROGRESS_FD, nothing. */
void progress_send_steps(progress *p);
/* The line, in place on a terminal (cut to its width), else a plain line. */
void progress_show(progress *p, const char *line);
/* A line of its own: above the line in place, which is drawn again below it. */
void progress_print(progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Erases the line in place (before output that goes to stdout, which may
 * be the same terminal); it is drawn again at the next line due. */
void progress_clear(progress *p);
/* Leaves the line in place on the screen (a newline after it) and ends. */
void progress_stop(progress *p);

/* Evaluations on the line (kgl_eval's progress callback): each chunk of
 * queries ranked is work done, shown as "CMD: 12288/81864 queries, 12.3s
 * elapsed, ETA 1m50s; ranking WHAT"; the line's total counts the queries
 * of every evaluation to come. Set `what` before each evaluation. Every
 * line puts its counts and times first: a narrow terminal cuts the end. */
typedef struct eval_progress {
    progress *line;
    const char *cmd, *what;
    long counted; /* the current evaluation's queries counted so far */
} eval_progress;
void eval_progress_update(void *ctx, long done, long total);

/* "12.3s elapsed, ETA 18.4s": elapsed × (total − done) / done, the pace of
 * all the work so far; without the ETA before half a percent is done. */
int progress_times(const progress_at *at, char *buf, size_t cap);
/* 12.3s under a minute, 8m31s under an hour, then 2h05m. */
int format_duration(double seconds, char *buf, size_t cap);
/* The monotonic clock, in seconds: every time the commands measure. */
double now_seconds(void);
/* KGL_PROGRESS_SECONDS if it is a positive number, else 60. */
double progress_every(void);
/* The delay of work that may be quick (an evaluation): a second, or
 * KGL_PROGRESS_SECONDS if that is less. */
double progress_delay(void);
/* The columns of the terminal f is, or 0 when unknown. */
int terminal_columns(FILE *f);

#endif
