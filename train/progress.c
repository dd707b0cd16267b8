/* progress.c — the one progress line of long work (progress.h). */
#include "progress.h"

#include "kgl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double progress_every(void)
{
    const char *s = getenv("KGL_PROGRESS_SECONDS");
    char *end;
    double x = s ? strtod(s, &end) : 0;
    return s && end != s && !*end && x > 0 && isfinite(x) ? x : 60;
}

double progress_delay(void)
{
    double every = progress_every();
    return every < 1 ? every : 1;
}

int terminal_columns(FILE *f)
{
    struct winsize ws;
    return ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

int format_duration(double seconds, char *buf, size_t cap)
{
    if (!(seconds >= 0)) seconds = 0;
    if (seconds < 59.95) return snprintf(buf, cap, "%.1fs", seconds);
    long t = lround(seconds);
    if (t < 3600) return snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    t = lround(seconds / 60);
    return snprintf(buf, cap, "%ldh%02ldm", t / 60, t % 60);
}

int progress_times(const progress_at *at, char *buf, size_t cap)
{
    char elapsed[32], left[32];
    format_duration(at->elapsed, elapsed, sizeof elapsed);
    /* no ETA from the first few steps: their pace is mostly setting up */
    if (at->done < at->total / 200 || at->done <= 0 || at->total <= at->done)
        return snprintf(buf, cap, "%s elapsed", elapsed);
    format_duration(at->elapsed * (at->total - at->done) / at->done, left, sizeof left);
    return snprintf(buf, cap, "%s elapsed, ETA %s", elapsed, left);
}

void progress_start(progress *p, FILE *f, bool tty, double total, double delay, double now)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    p->tty = tty;
    p->every = progress_every();
    p->delay = delay;
    p->t0 = now;
    p->shown_at = now - 1;
    p->total = total;
    p->steps_fd = -1;
    pthread_mutex_init(&p->lock, NULL);
}

void progress_send_steps(progress *p)
{
    p->steps_fd = kgl_child_steps_pipe();
    p->sent_at = p->t0 - 1, p->sent_done = p->sent_total = -1;
}

/* The counts down the pipe (under the lock): at most every
   PROGRESS_TTY_SECONDS unless the work is done or it is the `last`. */
static void send_steps(progress *p, double now, bool last)
{
    if (p->steps_fd < 0 || (p->done == p->sent_done && p->total == p->sent_total)) return;
    if (!last && p->done < p->total && now - p->sent_at < PROGRESS_TTY_SECONDS) return;
    if (!kgl_child_send_steps(p->steps_fd, p->done, p->total)) p->steps_fd = -1; /* the reader is gone */
    p->sent_at = now, p->sent_done = p->done, p->sent_total = p->total;
}

bool progress_due(progress *p, double work, double more, bool force, double now, progress_at *at)
{
    pthread_mutex_lock(&p->lock);
    p->done += work;
    p->total += more;
    send_steps(p, now, false);
    double elapsed = now - p->t0;
    bool shown = p->shown_at >= p->t0;
    int tenths = p->total > 0 ? (int)floor(10 * p->done / p->total) : 0;
    bool due;
    if (force) due = shown || elapsed >= p->delay;
    else if (elapsed < p->delay) due = false;
    else if (!shown) due = true;
    else if (p->tty) due = now - p->shown_at >= PROGRESS_TTY_SECONDS;
    else due = tenths > p->tenths || now - p->shown_at >= p->every;
    if (due) {
        p->shown_at = now;
        p->tenths = tenths;
        *at = (progress_at){p->done, p->total, elapsed};
    }
    pthread_mutex_unlock(&p->lock);
    return due;
}

/* The line in place again (under the lock): cut to the terminal's width
   (a line that wraps cannot be redrawn), padded over a longer one before it. */
static void draw(progress *p)
{
    int cols = terminal_columns(p->f);
    size_t n = cols > 1 ? kgl_utf8_prefix(p->line, (size_t)cols - 1, SIZE_MAX) : strlen(p->line); /* whole characters */
    int width = (int)kgl_utf8_chars(p->line, n);
    fprintf(p->f, "\r%.*s%*s", (int)n, p->line, p->width > width ? p->width - width : 0, "");
    fflush(p->f);
    p->width = width;
}

void progress_show(progress *p, const char *line)
{
    pthread_mutex_lock(&p->lock);
    snprintf(p->line, sizeof p->line, "%s", line);
    if (p->tty) draw(p);
    else fprintf(p->f, "%s\n", line);
    pthread_mutex_unlock(&p->lock);
}

void progress_print(progress *p, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(text, sizeof text, fmt, ap) >= (int)sizeof text) /* cut short: at a character's end */
        text[kgl_utf8_prefix(text, SIZE_MAX, sizeof text - 1)] = 0;
    va_end(ap);
    pthread_mutex_lock(&p->lock);
    if (p->tty && p->width > 0) {
        int width = (int)kgl_utf8_chars(text, SIZE_MAX);
        fprintf(p->f, "\r%s%*s\n", text, p->width > width ? p->width - width : 0, "");
        p->width = 0;
        draw(p);
    } else {
        fprintf(p->f, "%s\n", text);
    }
    pthread_mutex_unlock(&p->lock);
}

void eval_progress_update(void *ctx, long done, long total)
{
    eval_progress *e = ctx;
    progress_at at;
    bool due = progress_due(e->line, (double)(done - e->counted), 0, false, now_seconds(), &at);
    e->counted = done < total ? done : 0; /* 0: the next evaluation starts */
    if (!due) return;
    char text[PROGRESS_LINE_MAX], times[128];
    progress_times(&at, times, sizeof times);
    snprintf(text, sizeof text, "%s: %.0f/%.0f queries, %s; ranking %s", e->cmd, at.done, at.total, times, e->what);
    progress_show(e->line, text);
}

void progress_clear(progress *p)
{
    pthread_mutex_lock(&p->lock);
    if (p->tty && p->width > 0) {
        fprintf(p->f, "\r%*s\r", p->width, "");
        fflush(p->f);
    }
    p->width = 0;
    p->line[0] = 0;
    pthread_mutex_unlock(&p->lock);
}

void progress_stop(progress *p)
{
    pthread_mutex_lock(&p->lock);
    send_steps(p, now_seconds(), true);
    if (p->tty && p->width > 0) fputc('\n', p->f);
    p->width = 0;
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_destroy(&p->lock);
}
