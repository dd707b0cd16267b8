/* text.c — reading text files line by line, with errors people can act on. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/io.h"
#include "engine/internal.h"
#include "io/internal.h"

/* A UTF-8 byte-order mark (EF BB BF), which some editors on Windows write
   at the start of a file, is not part of the first name: reading starts
   after it, so every reader (triples, types, CSV) is rid of it. */
static void skip_bom(kgl_text *t)
{
    if (t->len >= 3 && memcmp(t->buf, "\xef\xbb\xbf", 3) == 0) t->pos = 3;
}

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
    skip_bom(t);
    return true;
}

void kgl_text_from_memory(kgl_text *t, const char *name, const char *data, size_t len)
{
    memset(t, 0, sizeof *t);
    t->name = kgl_strdup(name);
    t->buf = kgl_xmalloc(len + 1);
    memcpy(t->buf, data, len);
    t->buf[len] = 0;
    t->len = len;
    skip_bom(t);
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

/* A continuation byte (10xxxxxx) is inside a character, never its start. */
static bool utf8_continuation(unsigned char c) { return (c & 0xc0) == 0x80; }

size_t kgl_utf8_chars(const char *s, size_t n)
{
    size_t chars = 0;
    for (size_t k = 0; k < n && s[k]; k++) chars += !utf8_continuation((unsigned char)s[k]);
    return chars;
}

int kgl_utf8_columns(const char *s)
{
    int w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned cp = *p;
        int len = cp < 0x80 ? 1 : cp < 0xe0 ? 2 : cp < 0xf0 ? 3 : 4;
        if (len > 1) {
            cp &= 0x3fu >> (len - 1);
            for (int k = 1; k < len && p[k]; k++) cp = (cp << 6) | (p[k] & 0x3f);
        }
        for (int k = 0; k < len && *p; k++) p++;
        if (cp >= 0x300 && cp <= 0x36f) continue;
        bool wide = (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) ||
                    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
                    (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6);
        w += wide ? 2 : 1;
    }
    return w;
}

size_t kgl_utf8_prefix(const char *s, size_t max_chars, size_t max_bytes)
{
    size_t end = 0, chars = 0;
    while (s[end] && chars < max_chars) {
        size_t next = end + 1; /* the character at `end` is kept whole or not at all */
        while (s[next] && utf8_continuation((unsigned char)s[next])) next++;
        if (next > max_bytes) break;
        end = next;
        chars++;
    }
    return end;
}

void kgl_table_cell(FILE *f, const char *s, int width)
{
    size_t w = (size_t)(width < 0 ? -(long)width : width);
    size_t keep = kgl_utf8_prefix(s, w, SIZE_MAX);
    int pad = (int)(w - kgl_utf8_chars(s, keep));
    if (width < 0) fprintf(f, "%.*s%*s", (int)keep, s, pad, "");
    else fprintf(f, "%*s%.*s", pad, "", (int)keep, s);
}

int kgl_table_width(const char *s) { return (int)kgl_utf8_chars(s, SIZE_MAX); }

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

int kgl_text_words(kgl_text *t, char **words, int *lines, int max, char *err, size_t err_cap)
{
    char *p = t->buf + t->pos, *end = t->buf + t->len;
    int line = 1, n = 0;
    /* a NUL byte would end the words there, with the rest of the file unread */
    const char *nul = memchr(p, '\0', (size_t)(end - p));
    if (nul) {
        const char *start = p;
        for (const char *q = p; q < nul; q++)
            if (*q == '\n') line++, start = q + 1;
        snprintf(err, err_cap, "%s:%d: line contains a NUL byte (column %zu)", t->name, line, (size_t)(nul - start) + 1);
        return -1;
    }
    while (p < end) {
        if (*p == '#') {
            while (p < end && *p != '\n') p++;
            continue;
        }
        if (isspace((unsigned char)*p)) {
            line += *p == '\n';
            *p++ = 0;
            continue;
        }
        if (n >= max) {
            snprintf(err, err_cap, "%s:%d: more than %d words", t->name, line, max);
            return -1;
        }
        if (lines) lines[n] = line;
        words[n++] = p;
        while (p < end && !isspace((unsigned char)*p) && *p != '#') p++;
        if (p < end && *p == '#') { /* a comment glued to a word */
            *p++ = 0;
            while (p < end && *p != '\n') p++;
        }
    }
    return n;
}

/* Optimal string alignment distance (Damerau–Levenshtein without repeated
 * edits of a substring) of the lowercased strings, capped: two rows of the
 * dynamic programme plus the one before them, for the transposition. Names
 * longer than NEAR_MAX_LEN are compared on their first NEAR_MAX_LEN bytes. */
#define NEAR_MAX_LEN 128
static int near_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na > NEAR_MAX_LEN) na = NEAR_MAX_LEN;
    if (nb > NEAR_MAX_LEN) nb = NEAR_MAX_LEN;
    int rows[3][NEAR_MAX_LEN + 1];
    int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= nb; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        cur[0] = (int)i;
        int ca = tolower((unsigned char)a[i - 1]);
        for (size_t j = 1; j <= nb; j++) {
            int cb = tolower((unsigned char)b[j - 1]);
            int best = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < best) best = prev[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) && tolower((unsigned char)a[i - 2]) == cb &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        int *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[nb];
}

static bool contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0) return false;
    for (; *hay; hay++) {
        size_t k = 0;
        while (k < n && hay[k] && tolower((unsigned char)hay[k]) == tolower((unsigned char)needle[k])) k++;
        if (k == n) return true;
    }
    return false;
}

int kgl_near_matches(const char *word, const char *const *candidates, int n_candidates, int max_shown,
                     char *out, size_t out_cap)
{
    if (out_cap) out[0] = '\0';
    if (!word || max_shown <= 0 || out_cap == 0) return 0;
    int limit = (int)(strlen(word) / 3);
    if (limit < 2) limit = 2;
    /* Keep the best max_shown (distance, index) pairs by insertion; a
     * containment counts as distance limit (shown, after the closer ones). */
    enum { MAX_KEEP = 16 };
    if (max_shown > MAX_KEEP) max_shown = MAX_KEEP;
    int keep_d[MAX_KEEP], keep_i[MAX_KEEP], n_keep = 0;
    for (int c = 0; c < n_candidates; c++) {
        if (!candidates[c]) continue;
        int d = near_distance(word, candidates[c]);
        if (d > limit) {
            if (strlen(word) >= 3 && (contains_ci(candidates[c], word) || contains_ci(word, candidates[c])))
                d = limit;
            else
                continue;
        }
        int at = n_keep;
        while (at > 0 && keep_d[at - 1] > d) at--;
        if (at >= max_shown) continue;
        if (n_keep < max_shown) n_keep++;
        for (int k = n_keep - 1; k > at; k--) {
            keep_d[k] = keep_d[k - 1];
            keep_i[k] = keep_i[k - 1];
        }
        keep_d[at] = d;
        keep_i[at] = c;
    }
    size_t used = 0;
    for (int k = 0; k < n_keep; k++) {
        int w = snprintf(out + used, out_cap - used, "%s'%s'", k ? ", " : "", candidates[keep_i[k]]);
        if (w < 0 || (size_t)w >= out_cap - used) {
            out[used] = '\0';
            return k;
        }
        used += (size_t)w;
    }
    return n_keep;
}

bool kgl_path_error(char *err, size_t cap, const char *path, const char *fmt, ...)
{
    if (!err || cap == 0) return false;
    int n = snprintf(err, cap, "%s: ", path ? path : "(no path)");
    if (n < 0 || (size_t)n >= cap) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

void kgl_csv_field(FILE *f, const char *s, const char *specials)
{
    if (!strpbrk(s, specials)) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}
