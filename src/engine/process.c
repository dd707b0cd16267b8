/* process.c — what every source of the library needs of the process, apart
 * from the tape: stopping on a broken invariant (kgl_die), allocation that
 * never returns NULL (kgl_xmalloc and its kin, through the program's
 * out-of-memory handler), small string helpers and the clock. Kept out of
 * tape.c so that the arena, the pool and the tape each depend on this file
 * alone, not on one another. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kgl/engine.h"
#include "internal.h"

void kgl_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kgl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static kgl_out_of_memory_handler oom_handler;

void kgl_set_out_of_memory_handler(kgl_out_of_memory_handler handler) { oom_handler = handler; }

void kgl_out_of_memory(const char *what, size_t bytes)
{
    if (oom_handler) oom_handler(what, bytes);
    fprintf(stderr, "kgl: out of memory: %s (%zu bytes)\n", what, bytes);
    abort();
}

void *kgl_xmalloc_for(size_t n, const char *what)
{
    void *p = malloc(n ? n : 1);
    if (!p) kgl_out_of_memory(what, n);
    return p;
}

void *kgl_xcalloc_for(size_t n, size_t size, const char *what)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) kgl_out_of_memory(what, size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
    return p;
}

void *kgl_xrealloc_for(void *p, size_t n, const char *what)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) kgl_out_of_memory(what, n);
    return q;
}

char *kgl_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(kgl_xmalloc(n), s, n);
}

char *kgl_join(char *const *parts, int n, char sep)
{
    size_t len = 1;
    for (int k = 0; k < n; k++) len += strlen(parts[k]) + 1;
    char *s = kgl_xmalloc(len), *p = s;
    for (int k = 0; k < n; k++) {
        size_t l = strlen(parts[k]);
        memcpy(p, parts[k], l);
        p += l;
        if (k + 1 < n) *p++ = sep;
    }
    *p = '\0';
    return s;
}

double kgl_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
