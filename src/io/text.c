/* text.c — reading text files line by line, with errors people can act on. */
#include <errno.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/io.h"
#include "engine/internal.h"

bool kgl_text_open(kgl_text *t, const char *path, char *err, size_t err_cap)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_cap, "%s: cannot open: %s", path, strerror(errno));
        return false;
    }
    /* Regular files and pipes only (a device such as /dev/zero never ends),
       and never more than KGL_FILE_MAX bytes: the buffer cannot grow until
       memory runs out. */
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        snprintf(err, err_cap, "%s: cannot read: %s", path, strerror(errno));
        fclose(f);
        return false;
    }
    if (S_ISDIR(sb.st_mode)) {
        snprintf(err, err_cap, "%s: cannot read: %s", path, strerror(EISDIR));
        fclose(f);
        return false;
    }
    if (!S_ISREG(sb.st_mode) && !S_ISFIFO(sb.st_mode)) {
        snprintf(err, err_cap, "%s: is %s, not a regular file; kgl reads regular files and pipes", path,
                 S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device" : "a socket or other special file");
        fclose(f);
        return false;
    }
    if (S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > KGL_FILE_MAX) {
        snprintf(err, err_cap, "%s: the file is %" PRIu64 " bytes; the limit is %" PRIu64 " bytes (%d MiB)", path,
                 (uint64_t)sb.st_size, (uint64_t)KGL_FILE_MAX, (int)(KGL_FILE_MAX >> 20));
        fclose(f);
        return false;
    }
    size_t cap = S_ISREG(sb.st_mode) ? (size_t)sb.st_size + 2 : (size_t)1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(err, err_cap, "%s: cannot read: %zu bytes do not fit in memory", path, cap);
        fclose(f);
        return false;
    }
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= KGL_FILE_MAX + 2) break; /* len is KGL_FILE_MAX + 1: too long */
            size_t ncap = cap > (KGL_FILE_MAX + 2) / 2 ? KGL_FILE_MAX + 2 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                snprintf(err, err_cap, "%s: cannot read: %zu bytes do not fit in memory", path, ncap);
                fclose(f);
                return false;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - 1 - len, f);
        len += got;
        if (got == 0) break;
    }
    bool too_long = len > KGL_FILE_MAX;
    bool bad = ferror(f);
    int saved_errno = errno;
    fclose(f);
    if (too_long) {
        free(buf);
        snprintf(err, err_cap, "%s: longer than the limit of %" PRIu64 " bytes (%d MiB)", path, (uint64_t)KGL_FILE_MAX,
                 (int)(KGL_FILE_MAX >> 20));
        return false;
    }
    if (bad) {
        free(buf);
        snprintf(err, err_cap, "%s: cannot read: %s", path, strerror(saved_errno));
        return false;
    }
    buf[len] = 0;
    t->name = kgl_strdup(path);
    t->buf = buf;
    t->len = len;
    return true;
}

void kgl_text_from_memory(kgl_text *t, const char *name, const char *data, size_t len)
{
    memset(t, 0, sizeof *t);
    t->name = kgl_strdup(name);
    t->buf = malloc(len + 1);
    if (!t->buf) kgl_die("out of memory");
    memcpy(t->buf, data, len);
    t->buf[len] = 0;
    t->len = len;
}

void kgl_text_close(kgl_text *t)
{
    free(t->name);
    free(t->buf);
    memset(t, 0, sizeof *t);
}

bool kgl_utf8_valid(const unsigned char *s, size_t n, size_t *bad_offset)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        unsigned cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            goto bad;
        }
        if (i + k >= n) goto bad; /* truncated sequence */
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) goto bad;
            cp = (cp << 6) | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) goto bad;
        i += k + 1;
        continue;
    bad:
        if (bad_offset) *bad_offset = i;
        return false;
    }
    return true;
}

int kgl_text_next(kgl_text *t, char sep, char **fields, int max_fields, int *n_fields, char *err, size_t err_cap)
{
    while (t->pos < t->len) {
        char *line = t->buf + t->pos;
        size_t rest = t->len - t->pos;
        char *nl = memchr(line, '\n', rest);
        size_t n = nl ? (size_t)(nl - line) : rest;
        t->pos += n + (nl ? 1 : 0);
        t->lineno++;
        if (n > KGL_LINE_MAX) {
            snprintf(err, err_cap, "%s:%d: line is %zu bytes long; the limit is %d", t->name, t->lineno, n,
                     KGL_LINE_MAX);
            return -1;
        }
        if (memchr(line, '\0', n)) {
            snprintf(err, err_cap, "%s:%d: line contains a NUL byte (column %zu)", t->name, t->lineno,
                     (size_t)((char *)memchr(line, '\0', n) - line) + 1);
            return -1;
        }
        size_t bad;
        if (!kgl_utf8_valid((const unsigned char *)line, n, &bad)) {
            snprintf(err, err_cap, "%s:%d: invalid UTF-8 at byte %zu of the line", t->name, t->lineno, bad + 1);
            return -1;
        }
        if (n > 0 && line[n - 1] == '\r') n--;
        line[n] = 0;
        if (n == 0 || line[0] == '#') continue;
        int count = 0;
        char *start = line;
        for (;;) {
            char *s = strchr(start, sep);
            if (count < max_fields) fields[count] = start;
            count++;
            if (!s) break;
            *s = 0;
            start = s + 1;
        }
        *n_fields = count;
        return 1;
    }
    return 0;
}
