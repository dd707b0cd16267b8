/* json.c — the one JSON writer (every --json output, results.json and
 * checkpoint headers go through it) and parsing JSON text (safetensors
 * headers, our own JSON files). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/io.h"
#include "engine/internal.h"
#include "io/internal.h"

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f); /* JSON has no NaN or infinity */
}

/* ------------------------------------------------------------- the writer --
 * The writer keeps, for each open container, its kind and how many values it
 * holds so far: that decides the comma. A key leaves `after_key` set so the
 * value that follows writes no comma of its own. */

void kgl_json_writer_init(kgl_json_writer *w, FILE *f)
{
    memset(w, 0, sizeof *w);
    w->f = f;
}

static const char *container_name(char open) { return open == '{' ? "an object" : "an array"; }

/* Before any value: the comma (and a pending newline) inside an array, the
 * key's check inside an object. */
static void before_value(kgl_json_writer *w, const char *what)
{
    if (w->depth == 0) return; /* a top-level value */
    int d = w->depth - 1;
    if (w->open[d] == '{') {
        if (!w->after_key) kgl_die("JSON writer: %s in an object without its key (a bug in kgl)", what);
        w->after_key = false;
    } else {
        if (w->members[d] > 0) fputc(',', w->f);
        if (w->members[d] > 0 && w->newline_pending) fputc('\n', w->f);
        w->newline_pending = false;
    }
    w->members[d]++;
}

void kgl_json_key(kgl_json_writer *w, const char *key)
{
    if (w->depth == 0 || w->open[w->depth - 1] != '{')
        kgl_die("JSON writer: the key \"%s\" outside an object (a bug in kgl)", key);
    if (w->after_key) kgl_die("JSON writer: the key \"%s\" where a value was due (a bug in kgl)", key);
    if (w->members[w->depth - 1] > 0) fputc(',', w->f);
    if (w->members[w->depth - 1] > 0 && w->newline_pending) fputc('\n', w->f);
    w->newline_pending = false;
    json_string(w->f, key);
    fputc(':', w->f);
    w->after_key = true;
}

static void begin(kgl_json_writer *w, char open)
{
    before_value(w, container_name(open));
    if (w->depth == KGL_JSON_MAX_DEPTH)
        kgl_die("JSON writer: nesting deeper than %d containers (a bug in kgl)", KGL_JSON_MAX_DEPTH);
    w->open[w->depth] = open;
    w->members[w->depth] = 0;
    w->depth++;
    fputc(open, w->f);
}

static void end(kgl_json_writer *w, char open, char close)
{
    if (w->depth == 0 || w->open[w->depth - 1] != open)
        kgl_die("JSON writer: the end of %s where %s is open (a bug in kgl)", container_name(open),
                w->depth == 0 ? "nothing" : container_name(w->open[w->depth - 1]));
    if (w->after_key) kgl_die("JSON writer: the end of an object where a key's value was due (a bug in kgl)");
    w->depth--;
    w->newline_pending = false;
    fputc(close, w->f);
}

void kgl_json_begin_object(kgl_json_writer *w) { begin(w, '{'); }
void kgl_json_end_object(kgl_json_writer *w) { end(w, '{', '}'); }
void kgl_json_begin_array(kgl_json_writer *w) { begin(w, '['); }
void kgl_json_end_array(kgl_json_writer *w) { end(w, '[', ']'); }

void kgl_json_put_string(kgl_json_writer *w, const char *s)
{
    before_value(w, "a string");
    json_string(w->f, s);
}

void kgl_json_put_number(kgl_json_writer *w, double v)
{
    before_value(w, "a number");
    json_number(w->f, v);
}

void kgl_json_put_int(kgl_json_writer *w, long long v)
{
    before_value(w, "a number");
    fprintf(w->f, "%lld", v);
}

void kgl_json_put_uint(kgl_json_writer *w, unsigned long long v)
{
    before_value(w, "a number");
    fprintf(w->f, "%llu", v);
}

void kgl_json_put_bool(kgl_json_writer *w, bool v)
{
    before_value(w, "a boolean");
    fputs(v ? "true" : "false", w->f);
}

void kgl_json_put_null(kgl_json_writer *w)
{
    before_value(w, "null");
    fputs("null", w->f);
}

/* Whether text is one JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool is_json_number(const char *text)
{
    const char *p = text;
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else return false;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return false;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return false;
        while (*p >= '0' && *p <= '9') p++;
    }
    return *p == 0;
}

void kgl_json_put_number_text(kgl_json_writer *w, const char *text)
{
    if (!is_json_number(text)) kgl_die("JSON writer: \"%s\" is not a JSON number (a bug in kgl)", text);
    before_value(w, "a number");
    fputs(text, w->f);
}

/* At the top, or right after a container opened, the newline is written at
 * once; between members it waits for the comma, so that it ends the line. */
void kgl_json_newline(kgl_json_writer *w)
{
    if (w->depth == 0 || w->members[w->depth - 1] == 0 || w->after_key)
        fputc('\n', w->f);
    else
        w->newline_pending = true;
}

void kgl_json_field_string(kgl_json_writer *w, const char *key, const char *s)
{
    kgl_json_key(w, key);
    kgl_json_put_string(w, s);
}

void kgl_json_field_number(kgl_json_writer *w, const char *key, double v)
{
    kgl_json_key(w, key);
    kgl_json_put_number(w, v);
}

void kgl_json_field_int(kgl_json_writer *w, const char *key, long long v)
{
    kgl_json_key(w, key);
    kgl_json_put_int(w, v);
}

void kgl_json_field_bool(kgl_json_writer *w, const char *key, bool v)
{
    kgl_json_key(w, key);
    kgl_json_put_bool(w, v);
}

void kgl_json_field_null(kgl_json_writer *w, const char *key)
{
    kgl_json_key(w, key);
    kgl_json_put_null(w);
}

void kgl_json_field_numbers(kgl_json_writer *w, const char *key, const double *v, int n)
{
    if (key) kgl_json_key(w, key);
    kgl_json_begin_array(w);
    for (int i = 0; i < n; i++) kgl_json_put_number(w, v[i]);
    kgl_json_end_array(w);
}

void kgl_json_field_ints(kgl_json_writer *w, const char *key, const int *v, int n)
{
    if (key) kgl_json_key(w, key);
    kgl_json_begin_array(w);
    for (int i = 0; i < n; i++) kgl_json_put_int(w, v[i]);
    kgl_json_end_array(w);
}

void kgl_json_field_strings(kgl_json_writer *w, const char *key, const char *const *v, int n)
{
    if (key) kgl_json_key(w, key);
    kgl_json_begin_array(w);
    for (int i = 0; i < n; i++) kgl_json_put_string(w, v[i]);
    kgl_json_end_array(w);
}

void kgl_json_field_matrix(kgl_json_writer *w, const char *key, const double *v, int rows, int cols)
{
    if (key) kgl_json_key(w, key);
    kgl_json_begin_array(w);
    for (int i = 0; i < rows; i++) kgl_json_field_numbers(w, NULL, v + (size_t)i * cols, cols);
    kgl_json_end_array(w);
}

void kgl_json_writer_finish(kgl_json_writer *w)
{
    if (w->depth > 0) kgl_die("JSON writer: %s left open (a bug in kgl)", container_name(w->open[w->depth - 1]));
}

/* ------------------------------------------------------------- parsing --
 * Two passes over the text with one recursive-descent parser. The first
 * validates everything but duplicate keys and counts what the tree needs: the
 * nodes, the bytes of the decoded strings and number texts, and the number of
 * children of every container, in the order the containers open. The second
 * allocates all of it as one block and fills it; each container's children are
 * placed side by side because their count is already known. Duplicate keys are
 * found in the second pass, by sorting each object's keys. */

typedef struct parser {
    const unsigned char *s;
    size_t n, pos;
    bool build; /* second pass: fill the tree */
    /* counts, from the first pass */
    size_t n_nodes, n_bytes, max_members;
    size_t *counts, n_counts, counts_cap, next_count;
    /* the tree, second pass */
    kgl_json *pool;
    size_t pool_used;
    char *strs;
    size_t strs_used;
    const kgl_json **scratch;
    /* the first error */
    char *err;
    size_t err_cap, err_at;
    bool failed;
} parser;

__attribute__((format(printf, 3, 4))) static bool fail(parser *p, size_t at, const char *fmt, ...)
{
    if (p->failed) return false;
    p->failed = true;
    p->err_at = at;
    if (!p->err || p->err_cap == 0) return false;
    int k = snprintf(p->err, p->err_cap, "at byte %zu: ", at);
    if (k >= 0 && (size_t)k < p->err_cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + k, p->err_cap - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* What stands at `at`, for "found ..." in messages. */
static const char *found(const parser *p, size_t at, char *buf, size_t cap)
{
    if (at >= p->n) return "the end of the text";
    unsigned c = p->s[at];
    if (c >= 0x21 && c < 0x7f)
        snprintf(buf, cap, "'%c'", (char)c);
    else
        snprintf(buf, cap, "byte 0x%02x", c);
    return buf;
}

static void skip_ws(parser *p)
{
    while (p->pos < p->n) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static bool expected(parser *p, const char *what)
{
    char buf[16];
    return fail(p, p->pos, "expected %s, found %s", what, found(p, p->pos, buf, sizeof buf));
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 (the rules of
 * kgl_utf8_valid: no overlongs, no surrogates, at most U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t k;
    unsigned cp, min;
    if (s[0] < 0x80) return 1;
    if ((s[0] & 0xe0) == 0xc0)
        k = 1, cp = s[0] & 0x1fu, min = 0x80;
    else if ((s[0] & 0xf0) == 0xe0)
        k = 2, cp = s[0] & 0x0fu, min = 0x800;
    else if ((s[0] & 0xf8) == 0xf0)
        k = 3, cp = s[0] & 0x07u, min = 0x10000;
    else
        return 0;
    if (k >= n) return 0;
    for (size_t j = 1; j <= k; j++) {
        if ((s[j] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[j] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return k + 1;
}

static int hex4(const unsigned char *s, size_t n)
{
    if (n < 4) return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = s[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t put_utf8(unsigned long cp, unsigned char *out)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string at p->pos (which is '"'). In the second pass the decoded bytes and
 * a NUL go to the string area and *out / *out_len describe them. */
static bool parse_string(parser *p, const char **out, size_t *out_len)
{
    size_t start = p->pos++;
    unsigned char *dst = p->build ? (unsigned char *)p->strs + p->strs_used : NULL;
    size_t len = 0;
    for (;;) {
        if (p->pos >= p->n) return fail(p, p->pos, "unterminated string (it starts at byte %zu)", start);
        unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20)
            return fail(p, p->pos, "control character 0x%02x in a string (write it as an escape)", c);
        if (c != '\\') {
            size_t k = utf8_seq(p->s + p->pos, p->n - p->pos);
            if (k == 0) return fail(p, p->pos, "invalid UTF-8 in a string");
            if (dst) memcpy(dst + len, p->s + p->pos, k);
            len += k;
            p->pos += k;
            continue;
        }
        size_t esc = p->pos;
        if (esc + 1 >= p->n) return fail(p, esc + 1, "unterminated string (it starts at byte %zu)", start);
        unsigned char e = p->s[esc + 1], one;
        p->pos += 2;
        switch (e) {
        case '"': one = '"'; break;
        case '\\': one = '\\'; break;
        case '/': one = '/'; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': {
            int hi = hex4(p->s + p->pos, p->n - p->pos);
            if (hi < 0) return fail(p, esc, "expected 4 hex digits after \\u");
            p->pos += 4;
            unsigned long cp = (unsigned long)hi;
            if (hi >= 0xdc00 && hi <= 0xdfff)
                return fail(p, esc, "unpaired surrogate \\u%04x (a low surrogate must follow a high one)", hi);
            if (hi >= 0xd800 && hi <= 0xdbff) {
                int lo = -1;
                if (p->pos + 1 < p->n && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u')
                    lo = hex4(p->s + p->pos + 2, p->n - p->pos - 2);
                if (lo < 0xdc00 || lo > 0xdfff)
                    return fail(p, esc, "unpaired surrogate \\u%04x (expected a low surrogate \\udc00-\\udfff after it)",
                                hi);
                p->pos += 6;
                cp = 0x10000 + (((unsigned long)hi - 0xd800) << 10) + ((unsigned long)lo - 0xdc00);
            }
            unsigned char tmp[4];
            size_t k = put_utf8(cp, tmp);
            if (dst) memcpy(dst + len, tmp, k);
            len += k;
            continue;
        }
        default: {
            char buf[16];
            return fail(p, esc, "invalid escape: backslash followed by %s", found(p, esc + 1, buf, sizeof buf));
        }
        }
        if (dst) dst[len] = one;
        len++;
    }
    if (dst) {
        dst[len] = 0;
        *out = (const char *)dst;
        *out_len = len;
        p->strs_used += len + 1;
    } else {
        p->n_bytes += len + 1;
    }
    return true;
}

static bool is_digit(const parser *p, size_t at) { return at < p->n && p->s[at] >= '0' && p->s[at] <= '9'; }

static bool parse_number(parser *p, kgl_json *v)
{
    size_t start = p->pos;
    if (p->pos < p->n && p->s[p->pos] == '-') p->pos++;
    if (!is_digit(p, p->pos)) return expected(p, "a digit");
    if (p->s[p->pos] == '0') {
        p->pos++;
        if (is_digit(p, p->pos)) return fail(p, start, "a number cannot start with the digit 0 (leading zero)");
    } else {
        while (is_digit(p, p->pos)) p->pos++;
    }
    if (p->pos < p->n && p->s[p->pos] == '.') {
        p->pos++;
        if (!is_digit(p, p->pos)) return expected(p, "a digit after the decimal point");
        while (is_digit(p, p->pos)) p->pos++;
    }
    if (p->pos < p->n && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->n && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
        if (!is_digit(p, p->pos)) return expected(p, "a digit in the exponent");
        while (is_digit(p, p->pos)) p->pos++;
    }
    size_t len = p->pos - start;
    if (!v) {
        p->n_bytes += len + 1;
        return true;
    }
    char *text = p->strs + p->strs_used;
    memcpy(text, p->s + start, len);
    text[len] = 0;
    p->strs_used += len + 1;
    v->str = text;
    v->len = len;
    v->num = strtod(text, NULL); /* the "C" locale: kgl never calls setlocale */
    return true;
}

static bool parse_value(parser *p, kgl_json *v, int depth);

/* First pass: reserve a count slot for a container, in opening order. */
static bool open_container(parser *p, size_t *slot)
{
    if (p->n_counts == p->counts_cap) {
        size_t cap = p->counts_cap ? 2 * p->counts_cap : 64;
        size_t *c = realloc(p->counts, cap * sizeof *c);
        if (!c) {
            if (p->err && p->err_cap) snprintf(p->err, p->err_cap, "out of memory: %zu containers", p->n_counts);
            p->failed = true;
            p->err_at = SIZE_MAX;
            return false;
        }
        p->counts = c;
        p->counts_cap = cap;
    }
    p->counts[p->n_counts] = 0;
    *slot = p->n_counts++;
    return true;
}

static int cmp_keys(const void *a, const void *b)
{
    const kgl_json *x = *(const kgl_json *const *)a, *y = *(const kgl_json *const *)b;
    size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
    int c = memcmp(x->key, y->key, n);
    if (c) return c;
    if (x->key_len != y->key_len) return x->key_len < y->key_len ? -1 : 1;
    return x->key_offset < y->key_offset ? -1 : x->key_offset > y->key_offset;
}

/* Second pass: the first key (in text order) that repeats an earlier one. */
static bool check_duplicates(parser *p, const kgl_json *obj)
{
    if (obj->len < 2) return true;
    for (size_t i = 0; i < obj->len; i++) p->scratch[i] = &obj->child[i];
    qsort(p->scratch, obj->len, sizeof *p->scratch, cmp_keys);
    const kgl_json *dup = NULL;
    for (size_t i = 1; i < obj->len; i++) {
        const kgl_json *a = p->scratch[i - 1], *b = p->scratch[i];
        bool same = a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0;
        if (same && (!dup || b->key_offset < dup->key_offset)) dup = b;
    }
    if (!dup) return true;
    char shown[96];
    return fail(p, dup->key_offset, "duplicate key \"%s\" in an object",
                kgl_show(shown, sizeof shown, dup->key, dup->key_len));
}

static bool parse_container(parser *p, kgl_json *v, int depth, bool object)
{
    size_t at = p->pos;
    if (depth >= KGL_JSON_MAX_DEPTH) return fail(p, at, "nesting deeper than %d levels", KGL_JSON_MAX_DEPTH);
    char close = object ? '}' : ']';
    size_t slot = 0, count = 0;
    if (v) {
        v->type = object ? KGL_JSON_OBJECT : KGL_JSON_ARRAY;
        v->len = p->counts[p->next_count++];
        v->child = p->pool + p->pool_used;
        p->pool_used += v->len;
    } else {
        if (!open_container(p, &slot)) return false;
    }
    p->pos++;
    skip_ws(p);
    if (p->pos < p->n && p->s[p->pos] == close) {
        p->pos++;
        return true;
    }
    for (;;) {
        kgl_json *c = v ? &v->child[count] : NULL;
        if (!v) p->n_nodes++;
        if (object) {
            if (p->pos >= p->n || p->s[p->pos] != '"') return expected(p, count ? "a string key" : "a string key or '}'");
            size_t key_at = p->pos;
            const char *key = NULL;
            size_t key_len = 0;
            if (!parse_string(p, &key, &key_len)) return false;
            skip_ws(p);
            if (p->pos >= p->n || p->s[p->pos] != ':') return expected(p, "':' after the key");
            p->pos++;
            skip_ws(p);
            if (!parse_value(p, c, depth + 1)) return false;
            if (c) {
                c->key = key;
                c->key_len = key_len;
                c->key_offset = key_at;
            }
        } else {
            if (!parse_value(p, c, depth + 1)) return false;
        }
        count++;
        skip_ws(p);
        if (p->pos < p->n && p->s[p->pos] == ',') {
            p->pos++;
            skip_ws(p);
            continue;
        }
        if (p->pos < p->n && p->s[p->pos] == close) {
            p->pos++;
            break;
        }
        return expected(p, object ? "',' or '}'" : "',' or ']'");
    }
    if (!v) {
        p->counts[slot] = count;
        if (object && count > p->max_members) p->max_members = count;
        return true;
    }
    return object ? check_duplicates(p, v) : true;
}

static bool literal(parser *p, kgl_json *v, const char *word, kgl_json_type type)
{
    size_t k = strlen(word);
    if (p->n - p->pos < k || memcmp(p->s + p->pos, word, k) != 0) {
        return fail(p, p->pos, "expected a value (%s?)", word);
    }
    p->pos += k;
    if (v) v->type = type;
    return true;
}

static bool parse_value(parser *p, kgl_json *v, int depth)
{
    if (v) {
        memset(v, 0, sizeof *v);
        v->offset = p->pos;
    }
    if (p->pos >= p->n) return expected(p, "a value");
    switch (p->s[p->pos]) {
    case '{': return parse_container(p, v, depth, true);
    case '[': return parse_container(p, v, depth, false);
    case '"':
        if (v) v->type = KGL_JSON_STRING;
        return parse_string(p, v ? &v->str : NULL, v ? &v->len : NULL);
    case 't': return literal(p, v, "true", KGL_JSON_TRUE);
    case 'f': return literal(p, v, "false", KGL_JSON_FALSE);
    case 'n': return literal(p, v, "null", KGL_JSON_NULL);
    default:
        if (p->s[p->pos] == '-' || is_digit(p, p->pos)) {
            if (v) v->type = KGL_JSON_NUMBER;
            return parse_number(p, v);
        }
        return expected(p, "a value");
    }
}

static bool run_pass(parser *p, kgl_json *root)
{
    p->pos = 0;
    skip_ws(p);
    if (!root) p->n_nodes++;
    if (!parse_value(p, root, 0)) return false;
    skip_ws(p);
    if (p->pos < p->n) {
        char buf[16];
        return fail(p, p->pos, "unexpected %s after the JSON value", found(p, p->pos, buf, sizeof buf));
    }
    return true;
}

bool kgl_json_parse(const char *text, size_t len, kgl_json_doc *doc, char *err, size_t err_cap)
{
    memset(doc, 0, sizeof *doc);
    parser p = {0};
    p.s = (const unsigned char *)text;
    p.n = len;
    p.err = err;
    p.err_cap = err_cap;
    bool ok = run_pass(&p, NULL);
    if (ok) {
        /* A hostile text can need far more memory than its size (a node per
         * two bytes): failing to get it is an error, not an abort. */
        size_t nodes = p.n_nodes * sizeof(kgl_json);
        char *block = malloc(nodes + p.n_bytes);
        p.scratch = malloc((p.max_members ? p.max_members : 1) * sizeof *p.scratch);
        if (!block || !p.scratch) {
            free(block);
            free(p.scratch);
            free(p.counts);
            if (err && err_cap)
                snprintf(err, err_cap, "out of memory: the tree of %zu values needs %zu bytes", p.n_nodes,
                         nodes + p.n_bytes);
            doc->error_at = SIZE_MAX;
            return false;
        }
        p.pool = (kgl_json *)block;
        p.pool_used = 1;
        p.strs = block + nodes;
        p.build = true;
        ok = run_pass(&p, p.pool);
        free(p.scratch);
        if (ok) {
            doc->root = p.pool;
            doc->block_ = block;
        } else {
            free(block);
        }
    }
    free(p.counts);
    if (!ok) doc->error_at = p.err_at;
    return ok;
}

void kgl_json_free(kgl_json_doc *doc)
{
    free(doc->block_);
    memset(doc, 0, sizeof *doc);
}

const kgl_json *kgl_json_get(const kgl_json *obj, const char *key)
{
    if (!obj || obj->type != KGL_JSON_OBJECT) return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < obj->len; i++)
        if (obj->child[i].key_len == n && memcmp(obj->child[i].key, key, n) == 0) return &obj->child[i];
    return NULL;
}

bool kgl_json_int64(const kgl_json *v, int64_t *out)
{
    if (!v || v->type != KGL_JSON_NUMBER) return false;
    const char *s = v->str;
    bool neg = *s == '-';
    if (neg) s++;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, x = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false; /* a fraction or an exponent */
        unsigned d = (unsigned)(*s - '0');
        if (x > (limit - d) / 10) return false;
        x = x * 10 + d;
    }
    if (neg)
        *out = x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x;
    else
        *out = (int64_t)x;
    return true;
}

const char *kgl_json_type_name(kgl_json_type t)
{
    switch (t) {
    case KGL_JSON_NULL: return "null";
    case KGL_JSON_FALSE:
    case KGL_JSON_TRUE: return "a boolean";
    case KGL_JSON_NUMBER: return "a number";
    case KGL_JSON_STRING: return "a string";
    case KGL_JSON_ARRAY: return "a list";
    case KGL_JSON_OBJECT: return "an object";
    }
    return "?";
}

const char *kgl_show(char *buf, size_t cap, const char *s, size_t n)
{
    enum { LIMIT = 60 };
    size_t o = 0;
    if (cap == 0) return buf;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char tmp[8];
        size_t k;
        if (i >= LIMIT && (c & 0xc0) != 0x80) { /* cut only between UTF-8 sequences */
            memcpy(tmp, "...", 3);
            k = 3;
            if (o + k < cap) memcpy(buf + o, tmp, k), o += k;
            break;
        }
        if (c == '\n')
            k = 2, memcpy(tmp, "\\n", 2);
        else if (c == '\t')
            k = 2, memcpy(tmp, "\\t", 2);
        else if (c < 0x20 || c == 0x7f)
            k = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", c);
        else
            k = 1, tmp[0] = (char)c;
        if (o + k >= cap) break;
        memcpy(buf + o, tmp, k);
        o += k;
    }
    buf[o] = 0;
    return buf;
}
