/* io_svg.c — the SVG writer: every picture is well-formed XML (checked by
 * the small parser below and, when python3 is present, by ElementTree), has
 * one cell per value and one point per sample, escapes its text, says what it
 * could not draw, is byte-for-byte deterministic, and leaves no file behind
 * when it fails. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "test.h"

/* ------------------------------------------------- a small XML parser --
 * Checks well-formedness (XML 1.0 as far as SVG files use it: declaration,
 * comments, elements, quoted attributes without duplicates, the five named
 * entities and character references, one root, valid UTF-8, no control
 * characters) and keeps every element with its attributes and its own text,
 * both unescaped. No DOCTYPE, CDATA or non-ASCII names: we never write them. */
typedef struct xattr {
    char *name, *value;
} xattr;

typedef struct xel {
    char *name;
    int parent, depth;
    int n_attr;
    xattr *attr;
    char *text; /* text directly inside, unescaped (NULL if none) */
} xel;

typedef struct xdoc {
    xel *el;
    int n, cap;
    char err[256];
} xdoc;

typedef struct xparser {
    const char *s;
    size_t len, i;
    xdoc *d;
} xparser;

static bool xerr(xparser *p, const char *what)
{
    snprintf(p->d->err, sizeof p->d->err, "byte %zu: %s", p->i, what);
    return false;
}

static bool name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':'; }
static bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }
static bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static char *dup_n(const char *s, size_t n)
{
    char *r = malloc(n + 1);
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

static void append(char **dst, size_t *len, const char *s, size_t n)
{
    *dst = realloc(*dst, *len + n + 1);
    memcpy(*dst + *len, s, n);
    *len += n;
    (*dst)[*len] = 0;
}

static bool xml_char_ok(unsigned long c)
{
    return c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) ||
           (c >= 0x10000 && c <= 0x10ffff);
}

/* At '&': a valid reference, appended (decoded) to *out. */
static bool reference(xparser *p, char **out, size_t *len)
{
    const char *s = p->s + p->i + 1;
    const char *semi = memchr(s, ';', p->len - p->i - 1);
    if (!semi || semi - s > 10) return xerr(p, "'&' that does not start a reference");
    size_t n = (size_t)(semi - s);
    static const struct {
        const char *name, *ch;
    } named[] = {{"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
    for (size_t k = 0; k < 5; k++)
        if (strlen(named[k].name) == n && memcmp(s, named[k].name, n) == 0) {
            append(out, len, named[k].ch, 1);
            p->i += n + 2;
            return true;
        }
    if (n >= 2 && s[0] == '#') {
        bool hex = s[1] == 'x';
        size_t start = hex ? 2 : 1;
        if (start >= n) return xerr(p, "empty character reference");
        unsigned long c = 0;
        for (size_t k = start; k < n; k++) {
            char ch = s[k];
            int dgt = ch >= '0' && ch <= '9' ? ch - '0'
                      : hex && ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                      : hex && ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                                      : -1;
            if (dgt < 0 || c > 0x10ffff) return xerr(p, "bad character reference");
            c = c * (hex ? 16 : 10) + (unsigned long)dgt;
        }
        if (!xml_char_ok(c)) return xerr(p, "character reference to a character XML forbids");
        char u[4];
        size_t un = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (un == 1) u[0] = (char)c;
        else if (un == 2) u[0] = (char)(0xc0 | c >> 6), u[1] = (char)(0x80 | (c & 0x3f));
        else if (un == 3) u[0] = (char)(0xe0 | c >> 12), u[1] = (char)(0x80 | ((c >> 6) & 0x3f)), u[2] = (char)(0x80 | (c & 0x3f));
        else
            u[0] = (char)(0xf0 | c >> 18), u[1] = (char)(0x80 | ((c >> 12) & 0x3f)),
            u[2] = (char)(0x80 | ((c >> 6) & 0x3f)), u[3] = (char)(0x80 | (c & 0x3f));
        append(out, len, u, un);
        p->i += n + 2;
        return true;
    }
    return xerr(p, "unknown entity");
}

static bool read_name(xparser *p, size_t *start, size_t *n)
{
    if (p->i >= p->len || !name_start(p->s[p->i])) return xerr(p, "expected a name");
    *start = p->i;
    while (p->i < p->len && name_char(p->s[p->i])) p->i++;
    *n = p->i - *start;
    return true;
}

static void skip_space(xparser *p)
{
    while (p->i < p->len && space(p->s[p->i])) p->i++;
}

/* Comments, processing instructions (the declaration) and white space. */
static bool misc(xparser *p, bool *more)
{
    *more = false;
    if (p->len - p->i >= 4 && memcmp(p->s + p->i, "<!--", 4) == 0) {
        const char *end = strstr(p->s + p->i + 4, "--");
        if (!end || end[2] != '>') return xerr(p, "'--' inside a comment, or an unclosed comment");
        p->i = (size_t)(end - p->s) + 3;
        *more = true;
    } else if (p->len - p->i >= 2 && memcmp(p->s + p->i, "<?", 2) == 0) {
        const char *end = strstr(p->s + p->i + 2, "?>");
        if (!end) return xerr(p, "unclosed processing instruction");
        p->i = (size_t)(end - p->s) + 2;
        *more = true;
    }
    return true;
}

static void xml_free(xdoc *d)
{
    for (int k = 0; k < d->n; k++) {
        free(d->el[k].name);
        free(d->el[k].text);
        for (int a = 0; a < d->el[k].n_attr; a++) free(d->el[k].attr[a].name), free(d->el[k].attr[a].value);
        free(d->el[k].attr);
    }
    free(d->el);
    memset(d, 0, sizeof *d);
}

static bool xml_parse(const char *s, size_t len, xdoc *d)
{
    memset(d, 0, sizeof *d);
    xparser P = {s, len, 0, d}, *p = &P;
    size_t bad;
    if (!kgl_utf8_valid((const unsigned char *)s, len, &bad)) {
        p->i = bad;
        return xerr(p, "invalid UTF-8");
    }
    for (size_t k = 0; k < len; k++)
        if ((unsigned char)s[k] < 0x20 && !space(s[k])) {
            p->i = k;
            return xerr(p, "control character");
        }
    if (len >= 5 && memcmp(s, "<?xml", 5) == 0 && !space(s[5])) return xerr(p, "bad XML declaration");
    int stack[256], depth = 0;
    bool root_seen = false, more;
    for (;;) { /* prolog */
        skip_space(p);
        if (!misc(p, &more)) return false;
        if (!more) break;
    }
    if (p->i >= len || s[p->i] != '<') return xerr(p, "no root element");
    while (p->i < len) {
        char c = s[p->i];
        if (depth == 0 && root_seen) { /* after the root: only misc */
            skip_space(p);
            if (p->i >= len) break;
            if (!misc(p, &more)) return false;
            if (!more) return xerr(p, "content after the root element");
            continue;
        }
        if (c == '<') {
            if (!misc(p, &more)) return false;
            if (more) continue;
            if (p->i + 1 < len && s[p->i + 1] == '!') return xerr(p, "DOCTYPE or CDATA (not expected)");
            if (p->i + 1 < len && s[p->i + 1] == '/') { /* end tag */
                p->i += 2;
                size_t st, n;
                if (!read_name(p, &st, &n)) return false;
                skip_space(p);
                if (p->i >= len || s[p->i] != '>') return xerr(p, "end tag without '>'");
                p->i++;
                if (depth == 0) return xerr(p, "end tag with nothing open");
                const char *open = d->el[stack[depth - 1]].name;
                if (strlen(open) != n || memcmp(open, s + st, n) != 0) return xerr(p, "end tag does not match");
                depth--;
                continue;
            }
            p->i++;
            size_t st, n;
            if (!read_name(p, &st, &n)) return false;
            if (d->n == d->cap) d->cap = d->cap ? 2 * d->cap : 256, d->el = realloc(d->el, sizeof *d->el * (size_t)d->cap);
            xel *e = &d->el[d->n];
            memset(e, 0, sizeof *e);
            e->name = dup_n(s + st, n);
            e->parent = depth ? stack[depth - 1] : -1;
            e->depth = depth;
            int me = d->n++;
            for (;;) {
                size_t before = p->i;
                skip_space(p);
                if (p->i >= len) return xerr(p, "unclosed start tag");
                if (s[p->i] == '>' || (s[p->i] == '/' && p->i + 1 < len && s[p->i + 1] == '>')) break;
                if (p->i == before) return xerr(p, "attributes must be separated by white space");
                size_t ast, an;
                if (!read_name(p, &ast, &an)) return false;
                skip_space(p);
                if (p->i >= len || s[p->i] != '=') return xerr(p, "attribute without '='");
                p->i++;
                skip_space(p);
                if (p->i >= len || (s[p->i] != '"' && s[p->i] != '\'')) return xerr(p, "unquoted attribute value");
                char q = s[p->i++];
                char *val = calloc(1, 1);
                size_t vlen = 0;
                while (p->i < len && s[p->i] != q) {
                    if (s[p->i] == '<') return free(val), xerr(p, "'<' in an attribute value");
                    if (s[p->i] == '&') {
                        if (!reference(p, &val, &vlen)) return free(val), false;
                    } else {
                        append(&val, &vlen, s + p->i, 1);
                        p->i++;
                    }
                }
                if (p->i >= len) return free(val), xerr(p, "unclosed attribute value");
                p->i++;
                e = &d->el[me];
                for (int a = 0; a < e->n_attr; a++)
                    if (strlen(e->attr[a].name) == an && memcmp(e->attr[a].name, s + ast, an) == 0)
                        return free(val), xerr(p, "duplicate attribute");
                e->attr = realloc(e->attr, sizeof *e->attr * (size_t)(e->n_attr + 1));
                e->attr[e->n_attr].name = dup_n(s + ast, an);
                e->attr[e->n_attr].value = val;
                e->n_attr++;
            }
            if (depth == 0) {
                if (root_seen) return xerr(p, "a second root element");
                root_seen = true;
            }
            if (s[p->i] == '/') {
                p->i += 2;
            } else {
                p->i++;
                if (depth == 256) return xerr(p, "nesting too deep for this checker");
                stack[depth++] = me;
            }
            continue;
        }
        /* character data */
        if (depth == 0) return xerr(p, "text outside the root element");
        xel *e = &d->el[stack[depth - 1]];
        size_t tl = e->text ? strlen(e->text) : 0;
        if (c == '&') {
            if (!reference(p, &e->text, &tl)) return false;
        } else {
            if (c == '>' && p->i >= 2 && s[p->i - 1] == ']' && s[p->i - 2] == ']') return xerr(p, "']]>' in text");
            append(&e->text, &tl, s + p->i, 1);
            p->i++;
        }
    }
    if (depth) return xerr(p, "unclosed element at the end");
    if (!root_seen) return xerr(p, "no root element");
    return true;
}

static const char *xattr_get(const xel *e, const char *name)
{
    for (int a = 0; a < e->n_attr; a++)
        if (strcmp(e->attr[a].name, name) == 0) return e->attr[a].value;
    return NULL;
}

static bool has_class(const xel *e, const char *cls)
{
    const char *c = xattr_get(e, "class");
    size_t n = strlen(cls);
    while (c && *c) {
        while (*c == ' ') c++;
        size_t k = strcspn(c, " ");
        if (k == n && strncmp(c, cls, n) == 0) return true;
        c += k;
    }
    return false;
}

/* Element indices for the queries below: ANYWHERE as a scope means the
 * whole document; NONE is what a query returns when nothing matches (as a
 * scope it contains nothing). */
#define ANYWHERE (-1)
#define NONE (-2)

/* The first child of element i named `name`, or NONE. */
static int child(const xdoc *d, int i, const char *name)
{
    if (i < 0) return NONE;
    for (int j = i + 1; j < d->n && d->el[j].depth > d->el[i].depth; j++)
        if (d->el[j].parent == i && strcmp(d->el[j].name, name) == 0) return j;
    return NONE;
}

/* Whether j lies inside element i. */
static bool within(const xdoc *d, int j, int i)
{
    if (i < 0) return false;
    for (int k = d->el[j].parent; k >= 0; k = d->el[k].parent)
        if (k == i) return true;
    return false;
}

/* The tooltip of element i; "" when there is no such element or title
 * (so that a missing element fails a check instead of crashing the run). */
static const char *title_of(const xdoc *d, int i)
{
    int t = child(d, i, "title");
    return t >= 0 && d->el[t].text ? d->el[t].text : "";
}

/* Attribute `name` of element i, or "" (no element or no attribute). */
static const char *attr_at(const xdoc *d, int i, const char *name)
{
    const char *v = i >= 0 && i < d->n ? xattr_get(&d->el[i], name) : NULL;
    return v ? v : "";
}

/* The text directly inside element i, or "". */
static const char *text_at(const xdoc *d, int i)
{
    return i >= 0 && i < d->n && d->el[i].text ? d->el[i].text : "";
}

/* Elements named `name` (any when NULL) with class `cls` (any when NULL) inside `scope`. */
static int count(const xdoc *d, const char *name, const char *cls, int scope)
{
    int n = 0;
    for (int j = 0; j < d->n; j++)
        if ((!name || strcmp(d->el[j].name, name) == 0) && (!cls || has_class(&d->el[j], cls)) &&
            (scope == ANYWHERE || within(d, j, scope)))
            n++;
    return n;
}

/* The k-th (0-based) element named `name` with class `cls` inside scope, or NONE. */
static int nth(const xdoc *d, const char *name, const char *cls, int scope, int k)
{
    for (int j = 0; j < d->n; j++)
        if ((!name || strcmp(d->el[j].name, name) == 0) && (!cls || has_class(&d->el[j], cls)) &&
            (scope == ANYWHERE || within(d, j, scope)) && k-- == 0)
            return j;
    return NONE;
}

/* The texts of class cls inside scope, joined with spaces (the lines of a
   wrapped text read as one). */
static const char *joined(const xdoc *d, const char *cls, int scope, char *buf, size_t cap)
{
    buf[0] = 0;
    for (int k = 0, j; (j = nth(d, "text", cls, scope, k)) >= 0; k++)
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", k ? " " : "", text_at(d, j));
    return buf;
}

/* Whether some <text> element reads exactly s. */
static bool has_text(const xdoc *d, const char *s)
{
    for (int j = 0; j < d->n; j++)
        if (strcmp(d->el[j].name, "text") == 0 && d->el[j].text && strcmp(d->el[j].text, s) == 0) return true;
    return false;
}

/* rect elements with a <title> child: the heatmap cells. */
static int titled_rects(const xdoc *d)
{
    int n = 0;
    for (int j = 0; j < d->n; j++)
        if (strcmp(d->el[j].name, "rect") == 0 && child(d, j, "title") >= 0) n++;
    return n;
}

/* Coordinate pairs in a polyline's points attribute. */
static int point_pairs(const char *pts)
{
    int n = 0;
    for (const char *c = pts; c && *c; c++)
        if (*c == ',') n++;
    return n;
}

/* ------------------------------------------------------------ helpers -- */

/* Reads and parses path; a test check fails when it is not well-formed. */
static bool load(test_ctx *T, const char *path, xdoc *d)
{
    size_t len = 0;
    char *s = test_slurp(path, &len);
    if (!CHECK(s != NULL)) return memset(d, 0, sizeof *d), false;
    bool ok = xml_parse(s, len, d);
    if (!ok) printf("    %s: not well-formed: %s\n", path, d->err);
    CHECK(ok);
    if (ok) {
        CHECK(strcmp(d->el[0].name, "svg") == 0);
        CHECK(strcmp(attr_at(d, 0, "xmlns"), "http://www.w3.org/2000/svg") == 0);
        CHECK(*attr_at(d, 0, "viewBox") != 0);
    }
    free(s);
    return ok;
}

static const char *tmp_path(test_ctx *T, char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", T->tmp, name);
    return buf;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ------------------------------------------------------- the checker -- */

TEST(svg_xml_checker_rejects_bad_xml)
{
    static const char *const good[] = {
        "<a/>",
        "<?xml version=\"1.0\"?>\n<!-- c --><a x='1' y=\"&lt;&amp;&#x41;&#66;\"><b>t &gt; u</b><c/></a>\n",
    };
    static const char *const bad[] = {
        "<a><b></a></b>",       /* crossed */
        "<a>",                  /* unclosed */
        "<a x=1/>",             /* unquoted */
        "<a x='1' x='2'/>",     /* duplicate attribute */
        "<a x='1'y='2'/>",      /* no space between attributes */
        "<a x='<'/>",           /* '<' in a value */
        "<a>&foo;</a>",         /* unknown entity */
        "<a>AT&T</a>",          /* bare '&' */
        "<a>&#1;</a>",          /* forbidden character */
        "<a/><b/>",             /* two roots */
        "<a/>text",             /* text after the root */
        "<a>\x01</a>",          /* control character */
        "<a>\xc3\x28</a>",      /* invalid UTF-8 */
        "<a><!-- x -- y --></a>", /* '--' in a comment */
        "</a>",
        "",
    };
    xdoc d;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        bool ok = xml_parse(good[i], strlen(good[i]), &d);
        if (!CHECK(ok)) printf("    good[%zu]: %s\n", i, d.err);
        xml_free(&d);
    }
    CHECK(xml_parse(good[1], strlen(good[1]), &d));
    CHECK(d.n == 3 && strcmp(attr_at(&d, 0, "y"), "<&AB") == 0 && strcmp(d.el[1].text, "t > u") == 0);
    CHECK(d.el[1].parent == 0 && d.el[2].parent == 0 && child(&d, 0, "c") == 2);
    xml_free(&d);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (!CHECK(!xml_parse(bad[i], strlen(bad[i]), &d))) printf("    bad[%zu] accepted: %s\n", i, bad[i]);
        xml_free(&d);
    }
}

/* ---------------------------------------------------------- heatmaps -- */

TEST(svg_heatmap_cells_tooltips_escaping)
{
    /* 3 x 4 values from 0 to 1: the minimum is viridis' first anchor, the
     * maximum its last, 0.5 the middle anchor #21908c, and 1/16 halfway
     * between #440154 and #472d7b, rounded: #461768 */
    static const double v[12] = {0, 0.25, 0.5, 1, 0.125, 0.375, 0.625, 0.875, 0.0625, 0.2, 0.3, 0.4};
    static const char *const rows[3] = {"alice", "\xea\xb9\x80\xeb\xaf\xbc\xec\xa4\x80", "a<&>\"'b"}; /* 김민준 */
    static const char *const cols[4] = {"MIT", "x", "y", "z"};
    kgl_heatmap h = {.title = "Head 0 <attention>", .rows = 3, .cols = 4, .values = v, .row_labels = rows,
                     .col_labels = cols, .row_axis = "query entity", .col_axis = "key entity", .vmin = NAN,
                     .vmax = NAN, .value_label = "attention weight", .annotate = true};
    char path[512], err[512];
    tmp_path(T, path, sizeof path, "cells.svg");
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    CHECK(titled_rects(&d) == 12);
    CHECK(count(&d, "rect", "cell", ANYWHERE) == 12);
    /* cells are written row-major: cell k is (k / 4, k % 4) */
    CHECK(strcmp(title_of(&d, nth(&d, "rect", "cell", ANYWHERE, 4)), "\xea\xb9\x80\xeb\xaf\xbc\xec\xa4\x80 \xe2\x86\x92 MIT: 0.125") == 0);
    CHECK(strcmp(title_of(&d, nth(&d, "rect", "cell", ANYWHERE, 11)), "a<&>\"'b \xe2\x86\x92 z: 0.4") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 0), "fill"), "#440154") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 3), "fill"), "#fde725") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 2), "fill"), "#21908c") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 8), "fill"), "#461768") == 0);
    /* labels, axis titles, title, legend and printed values are on the page */
    CHECK(has_text(&d, "a<&>\"'b") && has_text(&d, "\xea\xb9\x80\xeb\xaf\xbc\xec\xa4\x80") && has_text(&d, "MIT"));
    CHECK(has_text(&d, "query entity") && has_text(&d, "key entity") && has_text(&d, "Head 0 <attention>"));
    CHECK(has_text(&d, "attention weight") && has_text(&d, "0.30") && has_text(&d, "1.00")); /* values in cells */
    CHECK(count(&d, "text", NULL, nth(&d, "g", "row-labels", ANYWHERE, 0)) == 3);
    CHECK(count(&d, "text", NULL, nth(&d, "g", "col-labels", ANYWHERE, 0)) == 4);
    CHECK(count(&d, "g", "colorbar", ANYWHERE) == 1);
    /* the colour bar: its title, the line naming the scale, its ends (the
       data's 0 and 1) and round ticks 0.2 ... 0.8 between them */
    int bar = nth(&d, "g", "colorbar", ANYWHERE, 0);
    CHECK(has_text(&d, "0.2") && has_text(&d, "0.8"));
    CHECK(count(&d, "text", NULL, bar) - count(&d, "text", "scale", bar) == 1 + 2 + 4);
    CHECK(strcmp(text_at(&d, nth(&d, "text", "lo", bar, 0)), "0") == 0);
    CHECK(strcmp(text_at(&d, nth(&d, "text", "hi", bar, 0)), "1") == 0);
    char line[512];
    CHECK(strcmp(joined(&d, "scale", bar, line, sizeof line), "linear scale, from the smallest value to the largest") == 0);
    CHECK(strcmp(title_of(&d, 0), "Head 0 <attention>") == 0);
    xml_free(&d);
    /* the escaping in the file itself */
    char *raw = test_slurp(path, NULL);
    CHECK(raw && strstr(raw, "a&lt;&amp;&gt;&quot;&apos;b") != NULL);
    free(raw);
}

TEST(svg_heatmap_outlines_nan_and_clamping)
{
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = i / 15.0;
    v[5] = NAN;
    v[9] = -INFINITY;
    unsigned char out[16] = {0};
    out[0] = out[5] = out[6] = out[10] = out[15] = 1;
    kgl_heatmap h = {.rows = 4, .cols = 4, .values = v, .vmin = NAN, .vmax = NAN, .outline = out,
                     .outline_label = "true tail (advises)", .value_label = "attention weight"};
    char path[512], err[512];
    tmp_path(T, path, sizeof path, "outline.svg");
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    CHECK(titled_rects(&d) == 16);
    CHECK(count(&d, "rect", "outlined", ANYWHERE) == 5);
    CHECK(count(&d, "path", NULL, nth(&d, "g", "outlines", ANYWHERE, 0)) == 2); /* black, then white */
    CHECK(strstr(title_of(&d, nth(&d, "rect", "cell", ANYWHERE, 6)), "[true tail (advises)]") != NULL);
    CHECK(strstr(title_of(&d, nth(&d, "rect", "cell", ANYWHERE, 1)), "[") == NULL);
    CHECK(has_text(&d, "true tail (advises) (5)"));
    /* non-finite: hatched, said in the tooltip and counted in the legend; the scale ignores them */
    int nan_cell = nth(&d, "rect", "cell", ANYWHERE, 5), inf_cell = nth(&d, "rect", "cell", ANYWHERE, 9);
    CHECK(strcmp(attr_at(&d, nan_cell, "fill"), "url(#kgl-nan)") == 0);
    CHECK(strcmp(attr_at(&d, inf_cell, "fill"), "url(#kgl-nan)") == 0);
    CHECK(strcmp(title_of(&d, nan_cell), "1 \xe2\x86\x92 1: NaN (not finite: drawn hatched grey) [true tail (advises)]") == 0);
    CHECK(strstr(title_of(&d, inf_cell), ": -Inf (not finite") != NULL);
    CHECK(count(&d, "pattern", NULL, ANYWHERE) == 1 && has_text(&d, "not finite (2)"));
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 0), "fill"), "#440154") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 15), "fill"), "#fde725") == 0);
    xml_free(&d);

    /* a fixed scale: values beyond it take the end colours and are counted */
    h.vmin = 0.2, h.vmax = 0.6, h.outline = NULL;
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    if (!load(T, path, &d)) return;
    CHECK(count(&d, "rect", "outlined", ANYWHERE) == 0 && count(&d, "g", "outlines", ANYWHERE) == 0);
    CHECK(has_text(&d, "below the scale (3)") && has_text(&d, "above the scale (6)")); /* 0, 1/15, 2/15; 10/15..15/15 less 9 */
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 15), "fill"), "#fde725") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 0), "fill"), "#440154") == 0);
    xml_free(&d);

    /* nothing finite at all still draws */
    double all_nan[4] = {NAN, NAN, INFINITY, NAN};
    kgl_heatmap z = {.rows = 2, .cols = 2, .values = all_nan};
    CHECK(kgl_svg_heatmap(path, &z, err, sizeof err));
    if (!load(T, path, &d)) return;
    CHECK(titled_rects(&d) == 4 && has_text(&d, "not finite (4)"));
    xml_free(&d);
}

static double *ramp(int n, double scale)
{
    double *v = malloc(sizeof *v * (size_t)n);
    for (int i = 0; i < n; i++) v[i] = scale * sin(i * 0.37) * cos(i * 0.011);
    return v;
}

/* The width attribute of the first cell. */
static int cell_size(const xdoc *d) { return atoi(attr_at(d, nth(d, "rect", "cell", ANYWHERE, 0), "width")); }

TEST(svg_heatmap_sizes_adapt_13_and_135)
{
    static const char *const names[13] = {"alice", "bob", "carol", "dave", "erin", "MIT", "Stanford",
                                          "KAIST", "databases", "machine_learning", "theory", "logic", "systems"};
    double *v = ramp(13 * 13, 1);
    kgl_heatmap h = {.title = "13", .rows = 13, .cols = 13, .values = v, .row_labels = names, .col_labels = names,
                     .row_axis = "query", .col_axis = "key", .vmin = NAN, .vmax = NAN};
    char path[512], err[512];
    tmp_path(T, path, sizeof path, "h13.svg");
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    xdoc d;
    if (load(T, path, &d)) {
        CHECK(titled_rects(&d) == 169);
        CHECK(cell_size(&d) >= 28 && cell_size(&d) <= 36);
        int cl = nth(&d, "g", "col-labels", ANYWHERE, 0);
        CHECK(count(&d, "text", NULL, cl) == 13 && count(&d, "text", NULL, nth(&d, "g", "row-labels", ANYWHERE, 0)) == 13);
        CHECK(strstr(attr_at(&d, nth(&d, "text", NULL, cl, 0), "transform"), "rotate(-45") != NULL);
        CHECK(has_text(&d, "machine_learning") && has_text(&d, "key"));
        xml_free(&d);
    }
    free(v);

    /* up to 80 rows or columns, cells of at least 11 px and every label: a
       query.svg of 64 heads and the readout over 48 entities */
    v = ramp(65 * 48, 1);
    kgl_heatmap strip = {.rows = 65, .cols = 48, .values = v, .vmin = NAN, .vmax = NAN};
    tmp_path(T, path, sizeof path, "h65.svg");
    CHECK(kgl_svg_heatmap(path, &strip, err, sizeof err));
    if (load(T, path, &d)) {
        CHECK(cell_size(&d) >= 11);
        CHECK(count(&d, "text", NULL, nth(&d, "g", "row-labels", ANYWHERE, 0)) == 65);
        CHECK(count(&d, "text", NULL, nth(&d, "g", "col-labels", ANYWHERE, 0)) == 48);
        xml_free(&d);
    }
    free(v);

    int n = 135;
    v = ramp(n * n, 3);
    kgl_heatmap big = {.title = "135", .rows = n, .cols = n, .values = v, .row_axis = "query", .col_axis = "key",
                       .vmin = NAN, .vmax = NAN, .annotate = true};
    tmp_path(T, path, sizeof path, "h135.svg");
    CHECK(kgl_svg_heatmap(path, &big, err, sizeof err));
    if (load(T, path, &d)) {
        CHECK(titled_rects(&d) == n * n);
        CHECK(cell_size(&d) >= 3 && cell_size(&d) < 28);
        int shown = count(&d, "text", NULL, nth(&d, "g", "row-labels", ANYWHERE, 0));
        CHECK(shown >= 10 && shown < n);
        /* rows are labelled as densely as their spacing allows (4 px cells, 7 px
           text: every 2nd), the 45° column labels every 5th */
        CHECK(has_text(&d, "query (every 2nd labelled)") && has_text(&d, "key (every 5th labelled)") &&
              has_text(&d, "130"));
        CHECK(count(&d, "g", "values", ANYWHERE) == 0); /* cells too small to print values in */
        char want[64];
        snprintf(want, sizeof want, "1 \xe2\x86\x92 2: %.4g", v[n + 2]);
        CHECK(strcmp(title_of(&d, nth(&d, "rect", "cell", ANYWHERE, n + 2)), want) == 0);
        xml_free(&d);
    }
    free(v);
}

TEST(svg_heatmap_grid_shares_one_scale)
{
    static const double a[4] = {0.5, 1, 1.5, 2};                          /* 2 x 2 */
    static const double b[9] = {-1, 0, 0.5, 0, 0, 0, 0, 0, 0};            /* 3 x 3: holds the minimum */
    static const double c[8] = {0.5, 0, 0, 0, 0, 0, 0, 3};                /* 2 x 4: holds the maximum */
    kgl_heatmap p[3] = {
        {.title = "head 0", .rows = 2, .cols = 2, .values = a, .vmin = NAN, .vmax = NAN, .value_label = "weight"},
        {.title = "head 1", .rows = 3, .cols = 3, .values = b, .vmin = NAN, .vmax = NAN},
        {.title = "head 2", .rows = 2, .cols = 4, .values = c, .vmin = NAN, .vmax = NAN},
    };
    char path[512], err[512];
    tmp_path(T, path, sizeof path, "grid.svg");
    CHECK(kgl_svg_heatmap_grid(path, "all heads", p, 3, 2, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    CHECK(titled_rects(&d) == 4 + 9 + 8);
    CHECK(count(&d, "g", "heatmap", ANYWHERE) == 3 && count(&d, "g", "colorbar", ANYWHERE) == 1);
    for (int k = 0; k < 3; k++) CHECK(count(&d, "rect", "cell", nth(&d, "g", "heatmap", ANYWHERE, k)) == p[k].rows * p[k].cols);
    CHECK(has_text(&d, "all heads") && has_text(&d, "head 0") && has_text(&d, "head 2") && has_text(&d, "weight"));
    int g0 = nth(&d, "g", "heatmap", ANYWHERE, 0), g1 = nth(&d, "g", "heatmap", ANYWHERE, 1), g2 = nth(&d, "g", "heatmap", ANYWHERE, 2);
    /* the same value has the same colour in every panel; the ends are the global ones */
    const char *half0 = attr_at(&d, nth(&d, "rect", "cell", g0, 0), "fill");
    CHECK(strcmp(half0, attr_at(&d, nth(&d, "rect", "cell", g1, 2), "fill")) == 0);
    CHECK(strcmp(half0, attr_at(&d, nth(&d, "rect", "cell", g2, 0), "fill")) == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", g1, 0), "fill"), "#440154") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", g2, 7), "fill"), "#fde725") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", g0, 3), "fill"), "#fde725") != 0); /* 2 < 3 */
    CHECK(strcmp(title_of(&d, nth(&d, "g", "colorbar", ANYWHERE, 0)), "colour scale (viridis): -1 to 3") == 0);
    /* cells of every panel have one size and start at the same offset in their slot */
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", g0, 0), "x"), attr_at(&d, nth(&d, "rect", "cell", g2, 0), "x")) == 0);
    xml_free(&d);

    /* a panel's own bounds widen the shared scale */
    p[0].vmin = -2, p[0].vmax = 2;
    CHECK(kgl_svg_heatmap_grid(path, NULL, p, 3, 3, err, sizeof err));
    if (!load(T, path, &d)) return;
    CHECK(strcmp(title_of(&d, nth(&d, "g", "colorbar", ANYWHERE, 0)), "colour scale (viridis): -2 to 3") == 0);
    CHECK(count(&d, "g", "colorbar", ANYWHERE) == 1 && titled_rects(&d) == 21);
    xml_free(&d);
}

TEST(svg_same_input_same_bytes)
{
    double *v = ramp(7 * 5, 1);
    v[3] = NAN;
    static const char *const rows[7] = {"a", "b", "c", "d", "e", "f", "\xea\xb9\x80"};
    kgl_heatmap h = {.title = "t", .rows = 7, .cols = 5, .values = v, .row_labels = rows, .vmin = NAN, .vmax = NAN,
                     .annotate = true};
    char p1[512], p2[512], err[512];
    tmp_path(T, p1, sizeof p1, "same1.svg");
    tmp_path(T, p2, sizeof p2, "same2.svg");
    CHECK(kgl_svg_heatmap(p1, &h, err, sizeof err) && kgl_svg_heatmap(p2, &h, err, sizeof err));
    CHECK(test_same_file(p1, p2));
    v[10] += 1e-3; /* any change shows */
    CHECK(kgl_svg_heatmap(p2, &h, err, sizeof err));
    CHECK(!test_same_file(p1, p2));
    free(v);

    double x[50], y[50];
    for (int i = 0; i < 50; i++) x[i] = i, y[i] = exp(-i / 7.0);
    kgl_series s[2] = {{"loss", 50, x, y}, {NULL, 50, NULL, y}};
    kgl_lineplot lp = {.title = "loss", .x_label = "step", .log_y = true, .series = s, .n_series = 2};
    CHECK(kgl_svg_lineplot(p1, &lp, err, sizeof err) && kgl_svg_lineplot(p2, &lp, err, sizeof err));
    CHECK(test_same_file(p1, p2));
}

/* -------------------------------------------------------- line plots -- */

/* The y (or x) tick labels of the n-th line plot. */
static int tick_labels(const xdoc *d, int plot, const char *cls, const char **out, int cap)
{
    int g = nth(d, "g", cls, plot, 0), n = 0;
    for (int j = g + 1; g >= 0 && j < d->n && d->el[j].depth > d->el[g].depth; j++)
        if (strcmp(d->el[j].name, "text") == 0 && n < cap) out[n++] = text_at(d, j);
    return n;
}

TEST(svg_lineplot_points_legend_styles)
{
    double x1[5] = {0, 9, 18, 27, 37}, y1[5] = {0.87, 0.5, 0.3, 0.2, 0.13};
    double y2[7] = {0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5};
    double x3[80], y3[80];
    for (int i = 0; i < 80; i++) x3[i] = i * 0.45, y3[i] = 0.5 + 0.3 * sin(i * 0.2);
    kgl_series s[3] = {{"train <loss> & \xea\xb9\x80", 5, x1, y1}, {"valid", 7, NULL, y2}, {NULL, 80, x3, y3}};
    kgl_lineplot lp = {.title = "loss vs step", .x_label = "step", .y_label = "loss", .series = s, .n_series = 3};
    char path[512], err[512];
    tmp_path(T, path, sizeof path, "lines.svg");
    CHECK(kgl_svg_lineplot(path, &lp, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    CHECK(count(&d, "g", "series", ANYWHERE) == 3);
    const char *strokes[3], *dashes[3];
    for (int k = 0; k < 3; k++) {
        int g = nth(&d, "g", "series", ANYWHERE, k);
        CHECK(count(&d, "polyline", NULL, g) == 1);
        CHECK(point_pairs(attr_at(&d, nth(&d, "polyline", NULL, g, 0), "points")) == s[k].n);
        CHECK(count(&d, NULL, "pt", g) == (s[k].n <= 60 ? s[k].n : 0)); /* markers only for few points */
        strokes[k] = attr_at(&d, g, "stroke");
        dashes[k] = attr_at(&d, g, "stroke-dasharray");
    }
    CHECK(*strokes[0] && strcmp(strokes[0], strokes[1]) != 0 && strcmp(strokes[1], strokes[2]) != 0 && strcmp(strokes[0], strokes[2]) != 0);
    CHECK(!*dashes[0] && *dashes[1] && *dashes[2] && strcmp(dashes[1], dashes[2]) != 0); /* solid, then dashed */
    /* marker tooltips: the label, escaped in the file, and the point; x NULL means 0, 1, ... */
    int g0 = nth(&d, "g", "series", ANYWHERE, 0), g1 = nth(&d, "g", "series", ANYWHERE, 1);
    CHECK(strcmp(title_of(&d, nth(&d, NULL, "pt", g0, 1)), "train <loss> & \xea\xb9\x80: (9, 0.5)") == 0);
    CHECK(strcmp(title_of(&d, nth(&d, NULL, "pt", g1, 6)), "valid: (6, 0.5)") == 0);
    /* one legend entry per series, with its label */
    int leg = nth(&d, "g", "legend", ANYWHERE, 0);
    CHECK(count(&d, "g", "entry", leg) == 3);
    CHECK(has_text(&d, "train <loss> & \xea\xb9\x80") && has_text(&d, "valid") && has_text(&d, "series 3"));
    CHECK(strcmp(title_of(&d, nth(&d, "g", "entry", leg, 1)), "valid: 7 points") == 0);
    CHECK(count(&d, NULL, "key", leg) == 3 && count(&d, "line", NULL, leg) == 3);
    /* round ticks: x over 0..37 -> 0 10 20 30 40; y over 0.13..0.87 -> 0.1 0.2 ... 0.9 */
    const char *t[32];
    int n = tick_labels(&d, ANYWHERE, "x-ticks", t, 32);
    CHECK(n == 5 && strcmp(t[0], "0") == 0 && strcmp(t[1], "10") == 0 && strcmp(t[4], "40") == 0);
    n = tick_labels(&d, ANYWHERE, "y-ticks", t, 32);
    CHECK(n == 9 && strcmp(t[0], "0.1") == 0 && strcmp(t[1], "0.2") == 0 && strcmp(t[8], "0.9") == 0);
    CHECK(has_text(&d, "loss vs step") && has_text(&d, "step") && has_text(&d, "loss"));
    CHECK(count(&d, "text", "note", ANYWHERE) == 0);
    xml_free(&d);
    char *raw = test_slurp(path, NULL);
    CHECK(raw && strstr(raw, "train &lt;loss&gt; &amp; ") != NULL);
    free(raw);
}

TEST(svg_lineplot_log_axis_decades)
{
    double x[10] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
    double y[10] = {20, 3, 0.5, 0, 0.02, -1, 1e-3, 3e-4, 2e-4, 1e-4};
    kgl_series s = {"ratio", 10, x, y};
    kgl_lineplot lp = {.title = "log", .log_y = true, .log_x = true, .series = &s, .n_series = 1};
    char path[512], err[512];
    tmp_path(T, path, sizeof path, "log.svg");
    CHECK(kgl_svg_lineplot(path, &lp, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    const char *t[32];
    int n = tick_labels(&d, ANYWHERE, "y-ticks", t, 32);
    /* one style per axis (issue 11): 10⁻⁴ needs a power, so every label is one */
    static const char *const want_y[7] = {"10\xe2\x81\xbb\xe2\x81\xb4", "10\xe2\x81\xbb\xc2\xb3",
                                          "10\xe2\x81\xbb\xc2\xb2", "10\xe2\x81\xbb\xc2\xb9",
                                          "10\xe2\x81\xb0", "10\xc2\xb9", "10\xc2\xb2"};
    CHECK(n == 7);
    for (int i = 0; i < n && i < 7; i++) CHECK(strcmp(t[i], want_y[i]) == 0 || printf("    tick %d: %s\n", i, t[i]) < 0);
    n = tick_labels(&d, ANYWHERE, "x-ticks", t, 32);
    CHECK(n == 4 && strcmp(t[0], "1") == 0 && strcmp(t[1], "10") == 0 && strcmp(t[3], "1000") == 0);
    /* decades are equally spaced */
    int yt = nth(&d, "g", "y-ticks", ANYWHERE, 0);
    double y0 = atof(attr_at(&d, nth(&d, "line", NULL, yt, 0), "y1"));
    double y1 = atof(attr_at(&d, nth(&d, "line", NULL, yt, 1), "y1"));
    double y6 = atof(attr_at(&d, nth(&d, "line", NULL, yt, 6), "y1"));
    CHECK_NEAR(y0 - y6, 6 * (y0 - y1), 0.05);
    CHECK(count(&d, "line", NULL, nth(&d, "g", "minor", ANYWHERE, 0)) == 8 * 6 + 8 * 3); /* 2..9 in each decade */
    /* the two non-positive values are skipped: the line breaks there */
    int g = nth(&d, "g", "series", ANYWHERE, 0);
    CHECK(count(&d, "polyline", NULL, g) == 2);
    CHECK(point_pairs(attr_at(&d, nth(&d, "polyline", NULL, g, 0), "points")) == 3);
    CHECK(point_pairs(attr_at(&d, nth(&d, "polyline", NULL, g, 1), "points")) == 4);
    CHECK(count(&d, NULL, "pt", g) == 8); /* 3 + 1 isolated + 4 */
    CHECK(has_text(&d, "2 points not drawn: 2 non-positive on a log axis"));
    CHECK(strcmp(title_of(&d, nth(&d, "g", "entry", ANYWHERE, 0)), "ratio: 10 points, 2 not drawn (2 non-positive on a log axis)") == 0);
    xml_free(&d);
}

TEST(svg_lineplot_nonfinite_breaks_the_line)
{
    double y[8] = {1, 2, 3, NAN, 5, 6, INFINITY, 8};
    double x[8] = {0, 1, 2, 3, 4, -INFINITY, 6, 7};
    double big_y[200];
    for (int i = 0; i < 200; i++) big_y[i] = i == 100 ? NAN : i;
    kgl_series s[2] = {{"a", 8, x, y}, {"b", 200, NULL, big_y}};
    kgl_lineplot lp = {.series = s, .n_series = 2};
    char path[512], err[512];
    tmp_path(T, path, sizeof path, "nan.svg");
    CHECK(kgl_svg_lineplot(path, &lp, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    int g = nth(&d, "g", "series", ANYWHERE, 0);
    /* points 0-2, then 4 alone, then 7 alone: one polyline and markers for all 5 drawn points */
    CHECK(count(&d, "polyline", NULL, g) == 1);
    CHECK(point_pairs(attr_at(&d, nth(&d, "polyline", NULL, g, 0), "points")) == 3);
    CHECK(count(&d, NULL, "pt", g) == 5);
    /* 200 points: no markers, but the isolated... none here: two runs of 100 and 99 */
    int g1 = nth(&d, "g", "series", ANYWHERE, 1);
    CHECK(count(&d, "polyline", NULL, g1) == 2 && count(&d, NULL, "pt", g1) == 0);
    CHECK(point_pairs(attr_at(&d, nth(&d, "polyline", NULL, g1, 0), "points")) == 100);
    CHECK(point_pairs(attr_at(&d, nth(&d, "polyline", NULL, g1, 1), "points")) == 99);
    CHECK(has_text(&d, "4 points not drawn: 4 not finite"));
    CHECK(strcmp(title_of(&d, nth(&d, "g", "entry", ANYWHERE, 0)), "a: 8 points, 3 not drawn (3 not finite)") == 0);
    xml_free(&d);
}

TEST(svg_lineplot_grid_of_diagnostics)
{
    double y[4][30];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 30; i++) y[k][i] = (k + 1) * exp(-i / (5.0 + k));
    kgl_series s[4] = {{"loss", 30, NULL, y[0]}, {"grad norm", 30, NULL, y[1]}, {"entropy", 30, NULL, y[2]},
                       {"max weight", 30, NULL, y[3]}};
    kgl_lineplot p[5] = {
        {.title = "loss", .log_y = true, .series = &s[0], .n_series = 1},
        {.title = "gradient", .series = &s[1], .n_series = 1},
        {.title = "attention", .x_label = "step", .series = &s[2], .n_series = 2},
        {.title = "empty"},
        {.title = "only bad", .log_y = true, .series = (kgl_series[]){{"neg", 2, NULL, (double[]){-1, 0}}}, .n_series = 1},
    };
    char path[512], err[512];
    tmp_path(T, path, sizeof path, "lpgrid.svg");
    CHECK(kgl_svg_lineplot_grid(path, "every diagnostic vs step", p, 5, 2, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    CHECK(count(&d, "g", "lineplot", ANYWHERE) == 5);
    for (int k = 0; k < 5; k++) {
        int g = nth(&d, "g", "lineplot", ANYWHERE, k);
        CHECK(count(&d, "g", "series", g) == p[k].n_series);
        CHECK(count(&d, "g", "entry", g) == p[k].n_series);
        CHECK(count(&d, "rect", "frame", g) == 1);
    }
    CHECK(has_text(&d, "every diagnostic vs step") && has_text(&d, "attention") && has_text(&d, "max weight"));
    CHECK(count(&d, "text", "note", nth(&d, "g", "lineplot", ANYWHERE, 3)) == 1 && has_text(&d, "no data"));
    CHECK(has_text(&d, "2 points not drawn: 2 non-positive on a log axis"));
    /* plot areas line up: the frames of plots 0 and 2 start at the same x */
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "frame", ANYWHERE, 0), "x"), attr_at(&d, nth(&d, "rect", "frame", ANYWHERE, 2), "x")) == 0);
    xml_free(&d);
}

/* ----------------------------------------------------- text, failure -- */

TEST(svg_bad_text_in_labels_is_replaced_or_shortened)
{
    static const char *const rows[3] = {"bad \xc3\x28 utf8", "ctrl\001\037char", "overlong \xc0\xaf"};
    static const char *const cols[2] = {"a_very_long_entity_name_that_goes_on_and_on", "\xef\xbf\xbe"};
    double v[6] = {1, 2, 3, 4, 5, 6};
    char korean[601] = ""; /* 200 × 김: an axis title longer than any buffer, cut only between characters */
    for (int i = 0; i < 200; i++) strcat(korean, "\xea\xb9\x80");
    kgl_heatmap h = {.rows = 3, .cols = 2, .values = v, .row_labels = rows, .col_labels = cols, .row_axis = korean};
    char path[512], err[512];
    tmp_path(T, path, sizeof path, "badtext.svg");
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    CHECK(has_text(&d, "bad \xef\xbf\xbd( utf8") && has_text(&d, "ctrl\xef\xbf\xbd\xef\xbf\xbd\x63har"));
    CHECK(has_text(&d, "overlong \xef\xbf\xbd\xef\xbf\xbd")); /* each byte of an overlong '/' */
    /* the axis title is longer than the 3 rows it stands beside: it wraps,
       between characters (a word wider than its room), on 12 lines at most,
       the last shortened with "…", its tooltip holding the rest */
    char joined[1024] = "";
    int lines = 0, last = -1;
    for (int ax; (ax = nth(&d, "text", "axis-title", ANYWHERE, lines)) >= 0; lines++) {
        if (strlen(joined) + strlen(text_at(&d, ax)) < sizeof joined) strcat(joined, text_at(&d, ax));
        last = ax;
    }
    size_t jl = strlen(joined);
    CHECK(lines == 12 && jl > 3 && strncmp(joined, korean, jl - 3) == 0 && strcmp(joined + jl - 3, "\xe2\x80\xa6") == 0);
    CHECK(strstr(joined, "\xef\xbf\xbd") == NULL);
    const char *rest = last >= 0 ? title_of(&d, last) : "", *shown_last = last >= 0 ? text_at(&d, last) : "";
    size_t rl = strlen(rest), sl = strlen(shown_last) > 3 ? strlen(shown_last) - 3 : 0;
    if (rl > 3 && strcmp(rest + rl - 3, "\xe2\x80\xa6") == 0) rl -= 3; /* the tooltip's own cap (256 bytes) */
    CHECK(rl % 3 == 0 && rl > sl && strncmp(rest, korean, rl) == 0 && strncmp(rest, shown_last, sl) == 0);
    int cl = nth(&d, "g", "col-labels", ANYWHERE, 0);
    const char *shown = text_at(&d, nth(&d, "text", NULL, cl, 0)); /* shortened on the page ... */
    CHECK(strncmp(shown, "a_very_long_entity", 18) == 0 && strlen(shown) < 40 &&
          strcmp(shown + strlen(shown) - 3, "\xe2\x80\xa6") == 0);
    CHECK(strstr(title_of(&d, nth(&d, "rect", "cell", ANYWHERE, 0)), "a_very_long_entity_name_that_goes_on_and_on") != NULL); /* not in the tooltip */
    CHECK(strcmp(text_at(&d, nth(&d, "text", NULL, cl, 1)), "\xef\xbf\xbd") == 0); /* U+FFFE is no XML character */
    xml_free(&d);
}

/* Names in dir other than . and .. */
static int dir_entries(const char *dir, char *first, size_t cap)
{
    DIR *dp = opendir(dir);
    if (!dp) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            if (n++ == 0 && first) snprintf(first, cap, "%s", e->d_name);
        }
    closedir(dp);
    return n;
}

TEST(svg_failed_write_reports_and_leaves_nothing)
{
    double v[1] = {1};
    kgl_heatmap h = {.rows = 1, .cols = 1, .values = v};
    char err[512] = "";
    CHECK(!kgl_svg_heatmap("/nonexistent/dir/x.svg", &h, err, sizeof err));
    CHECK(strcmp(err, "/nonexistent/dir/x.svg: cannot create a temporary file beside it: No such file or directory") == 0 ||
          printf("    %s\n", err) < 0);
    CHECK(!file_exists("/nonexistent/dir/x.svg"));

    /* the target is a folder: refused before a temporary is written (the
     * rename failing after it is tests/io_tmpfiles.c's) */
    char dir[512], target[600], first[256] = "";
    tmp_path(T, dir, sizeof dir, "svgfail");
    mkdir(dir, 0755);
    snprintf(target, sizeof target, "%s/taken.svg", dir);
    mkdir(target, 0755);
    kgl_series s = {"s", 1, NULL, v};
    kgl_lineplot lp = {.series = &s, .n_series = 1};
    err[0] = 0;
    CHECK(!kgl_svg_lineplot(target, &lp, err, sizeof err));
    CHECK(strncmp(err, target, strlen(target)) == 0 && strstr(err, ": is a folder, not a file: give a file's path"));
    CHECK(dir_entries(dir, first, sizeof first) == 1 && strcmp(first, "taken.svg") == 0);

    /* a good write replaces an existing file, and leaves only it */
    snprintf(target, sizeof target, "%s/ok.svg", dir);
    FILE *f = fopen(target, "w");
    if (f) fputs("old", f), fclose(f);
    CHECK(kgl_svg_lineplot(target, &lp, err, sizeof err));
    char *raw = test_slurp(target, NULL);
    CHECK(raw && strncmp(raw, "<?xml", 5) == 0);
    free(raw);
    CHECK(dir_entries(dir, NULL, 0) == 2);
    /* the usual permissions, as every output kgl writes (kgl_outfile) */
    mode_t mask = umask(0);
    umask(mask);
    struct stat st;
    CHECK(stat(target, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask));
}

TEST(svg_bad_arguments_are_reported)
{
    char path[512], err[512];
    tmp_path(T, path, sizeof path, "never.svg");
    double v[4] = {1, 2, 3, 4};
    kgl_heatmap h = {.rows = 0, .cols = 2, .values = v};
    CHECK(!kgl_svg_heatmap(path, &h, err, sizeof err));
    CHECK(strncmp(err, path, strlen(path)) == 0 && strstr(err, "heatmap has 0 x 2 cells") != NULL);
    h.rows = 2, h.values = NULL;
    CHECK(!kgl_svg_heatmap(path, &h, err, sizeof err) && strstr(err, ": heatmap has no values") != NULL);
    h.values = v, h.vmin = 1, h.vmax = 0;
    CHECK(!kgl_svg_heatmap(path, &h, err, sizeof err) && strstr(err, "vmin 1 is above vmax 0") != NULL);
    h.vmin = h.vmax = NAN;
    CHECK(!kgl_svg_heatmap_grid(path, NULL, &h, 1, 0, err, sizeof err) && strstr(err, "n_cols is 0") != NULL);
    kgl_heatmap two[2] = {h, h};
    two[1].cols = -1;
    CHECK(!kgl_svg_heatmap_grid(path, NULL, two, 2, 2, err, sizeof err) && strstr(err, "panel 1 has 2 x -1") != NULL);
    CHECK(!kgl_svg_heatmap(path, NULL, err, sizeof err) && strstr(err, "no heatmap") != NULL);
    kgl_series s = {"s", 3, NULL, NULL};
    kgl_lineplot lp = {.series = &s, .n_series = 1};
    CHECK(!kgl_svg_lineplot(path, &lp, err, sizeof err) && strstr(err, "series 0 has no y values") != NULL);
    s.n = -1, s.y = v;
    CHECK(!kgl_svg_lineplot(path, &lp, err, sizeof err) && strstr(err, "series 0 has -1 points") != NULL);
    CHECK(!kgl_svg_lineplot_grid(path, NULL, &lp, 0, 1, err, sizeof err) && strstr(err, "no line plot") != NULL);
    CHECK(!file_exists(path));
    CHECK(!kgl_svg_heatmap(NULL, &h, NULL, 0)); /* no message buffer: still false, no crash */
}

/* ------------------------------------------------- a second opinion -- */

TEST(svg_python_elementtree_agrees)
{
    char out[4096], errs[4096];
    if (run_sh(T, "command -v python3", out, sizeof out, errs, sizeof errs) != 0) {
        test_skip(T, "python3 not found: ElementTree cross-check not run");
        return;
    }
    char paths[4][512], err[512];
    double *v = ramp(13 * 13, 1);
    v[7] = NAN;
    unsigned char outl[169] = {0};
    outl[3] = outl[100] = 1;
    static const char *const names[13] = {"<&>\"'", "\xea\xb9\x80\xeb\xaf\xbc\xec\xa4\x80", "c", "d", "e", "f", "g",
                                          "h", "i", "j", "k", "l", "m"};
    kgl_heatmap h = {.title = "t & <u>", .rows = 13, .cols = 13, .values = v, .row_labels = names,
                     .col_labels = names, .row_axis = "q", .col_axis = "k", .vmin = NAN, .vmax = NAN,
                     .outline = outl, .outline_label = "tail \"x\"", .value_label = "w", .annotate = true};
    kgl_heatmap panels[2] = {h, h};
    panels[1].rows = 5;
    double y[20];
    for (int i = 0; i < 20; i++) y[i] = i == 4 ? -1 : exp(-i * 0.3);
    kgl_series s[2] = {{"a<b", 20, NULL, y}, {"\xea\xb9\x80", 20, NULL, y}};
    kgl_lineplot lp = {.title = "l", .log_y = true, .series = s, .n_series = 2};
    kgl_lineplot lps[2] = {lp, lp};
    lps[1].log_y = false;
    CHECK(kgl_svg_heatmap(tmp_path(T, paths[0], 512, "py0.svg"), &h, err, sizeof err));
    CHECK(kgl_svg_heatmap_grid(tmp_path(T, paths[1], 512, "py1.svg"), "g", panels, 2, 2, err, sizeof err));
    CHECK(kgl_svg_lineplot(tmp_path(T, paths[2], 512, "py2.svg"), &lp, err, sizeof err));
    CHECK(kgl_svg_lineplot_grid(tmp_path(T, paths[3], 512, "py3.svg"), "G", lps, 2, 1, err, sizeof err));
    free(v);
    /* ElementTree counts every element and the rects with a <title>; ours must agree */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import sys, xml.etree.ElementTree as ET; S = \"{http://www.w3.org/2000/svg}\"; "
             "rs = [ET.parse(f).getroot() for f in sys.argv[1:]]; "
             "print(\" \".join(\"%%d/%%d\" %% (sum(1 for _ in r.iter()), "
             "sum(1 for e in r.iter(S + \"rect\") if e.find(S + \"title\") is not None)) for r in rs))' "
             "'%s' '%s' '%s' '%s'",
             paths[0], paths[1], paths[2], paths[3]);
    int st = run_sh(T, cmd, out, sizeof out, errs, sizeof errs);
    if (!CHECK(st == 0)) printf("    python3: %s\n", errs);
    char want[256] = "";
    size_t n = 0;
    for (int k = 0; k < 4; k++) {
        xdoc d;
        if (load(T, paths[k], &d))
            n += (size_t)snprintf(want + n, sizeof want - n, "%s%d/%d", k ? " " : "", d.n, titled_rects(&d));
        xml_free(&d);
    }
    snprintf(want + n, sizeof want - n, "\n");
    CHECK(strcmp(out, want) == 0 || printf("    python3: %s    ours:    %s", out, want) < 0);
    CHECK(strstr(want, "/169 ") != NULL); /* the 13 x 13 heatmap's cells */
}

/* ------------------------------------------------------------ layout --
 * Every text's box, as the layout estimates it (kgl_svg_text_width: DejaVu
 * Sans advances; 0.76 em above the baseline, 0.24 em below), placed as the
 * SVG places it (x, y, dy, text-anchor, font-size and font-weight of the
 * element or its groups, rotate() on the text, translate() on its groups),
 * must lie inside the page, and no two boxes may overlap. */
typedef struct tbox {
    double p[4][2]; /* corners on the page, in order around the box */
    int el;
} tbox;

/* An attribute of element i or of its nearest ancestor that has it. */
static const char *inherited(const xdoc *d, int i, const char *name)
{
    for (int k = i; k >= 0; k = d->el[k].parent) {
        const char *v = xattr_get(&d->el[k], name);
        if (v) return v;
    }
    return NULL;
}

/* Sum of the translate(x y) of element i's ancestors. */
static void translation(const xdoc *d, int i, double *tx, double *ty)
{
    *tx = *ty = 0;
    for (int k = d->el[i].parent; k >= 0; k = d->el[k].parent) {
        const char *t = xattr_get(&d->el[k], "transform");
        double x, y;
        if (t && sscanf(t, "translate(%lf %lf)", &x, &y) == 2) *tx += x, *ty += y;
    }
}

static int text_boxes(const xdoc *d, tbox *out, int cap)
{
    int n = 0;
    for (int i = 0; i < d->n && n < cap; i++) {
        const xel *e = &d->el[i];
        if (strcmp(e->name, "text") != 0 || !e->text || !*e->text) continue;
        double fs = atof(inherited(d, i, "font-size") ? inherited(d, i, "font-size") : "11");
        const char *anchor = inherited(d, i, "text-anchor");
        const char *weight = inherited(d, i, "font-weight");
        double w = kgl_svg_text_width(e->text, fs, weight && strcmp(weight, "bold") == 0);
        double x = atof(attr_at(d, i, "x")), y = atof(attr_at(d, i, "y"));
        const char *dy = xattr_get(e, "dy");
        if (dy) y += atof(dy) * (strstr(dy, "em") ? fs : 1);
        double x0 = x - w * (anchor && strcmp(anchor, "middle") == 0 ? 0.5 : anchor && strcmp(anchor, "end") == 0 ? 1 : 0);
        double corner[4][2] = {{x0, y - 0.76 * fs}, {x0 + w, y - 0.76 * fs}, {x0 + w, y + 0.24 * fs}, {x0, y + 0.24 * fs}};
        double a = 0, cx = 0, cy = 0;
        const char *t = xattr_get(e, "transform");
        if (t) sscanf(t, "rotate(%lf %lf %lf)", &a, &cx, &cy);
        double c = cos(a * 3.14159265358979323846 / 180), s = sin(a * 3.14159265358979323846 / 180), tx, ty;
        translation(d, i, &tx, &ty);
        for (int k = 0; k < 4; k++) {
            double px = corner[k][0] - cx, py = corner[k][1] - cy;
            out[n].p[k][0] = cx + px * c - py * s + tx;
            out[n].p[k][1] = cy + px * s + py * c + ty;
        }
        out[n++].el = i;
    }
    return n;
}

/* Whether two convex quadrilaterals overlap by more than `slack` px
   (separating axes: the edge normals of both). */
static bool boxes_overlap(const tbox *a, const tbox *b, double slack)
{
    const tbox *q[2] = {a, b};
    for (int which = 0; which < 2; which++)
        for (int k = 0; k < 4; k++) {
            const double *p0 = q[which]->p[k], *p1 = q[which]->p[(k + 1) % 4];
            double nx = p0[1] - p1[1], ny = p1[0] - p0[0], len = hypot(nx, ny);
            if (len == 0) continue;
            nx /= len, ny /= len;
            double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
            for (int m = 0; m < 2; m++)
                for (int v = 0; v < 4; v++) {
                    double t = q[m]->p[v][0] * nx + q[m]->p[v][1] * ny;
                    lo[m] = fmin(lo[m], t), hi[m] = fmax(hi[m], t);
                }
            if (hi[0] - slack <= lo[1] || hi[1] - slack <= lo[0]) return false;
        }
    return true;
}

/* The heatmap cells (rect class="cell"), as boxes on the page. */
static int cell_boxes(const xdoc *d, tbox *out, int cap)
{
    int n = 0;
    for (int i = 0; i < d->n && n < cap; i++) {
        if (strcmp(d->el[i].name, "rect") != 0 || !has_class(&d->el[i], "cell")) continue;
        double tx, ty, x = atof(attr_at(d, i, "x")), y = atof(attr_at(d, i, "y"));
        double w = atof(attr_at(d, i, "width")), h = atof(attr_at(d, i, "height"));
        translation(d, i, &tx, &ty);
        double c[4][2] = {{x, y}, {x + w, y}, {x + w, y + h}, {x, y + h}};
        for (int k = 0; k < 4; k++) out[n].p[k][0] = c[k][0] + tx, out[n].p[k][1] = c[k][1] + ty;
        out[n++].el = i;
    }
    return n;
}

/* Whether element i lies in a <g class="values"> (the numbers printed in cells). */
static bool in_values(const xdoc *d, int i)
{
    for (int k = d->el[i].parent; k >= 0; k = d->el[k].parent)
        if (has_class(&d->el[k], "values")) return true;
    return false;
}

static void bounds(const tbox *b, double *x0, double *y0, double *x1, double *y1)
{
    *x0 = *y0 = INFINITY, *x1 = *y1 = -INFINITY;
    for (int k = 0; k < 4; k++)
        *x0 = fmin(*x0, b->p[k][0]), *x1 = fmax(*x1, b->p[k][0]), *y0 = fmin(*y0, b->p[k][1]),
        *y1 = fmax(*y1, b->p[k][1]);
}

/* Checks one picture; prints the first few offenders. */
static void check_layout(test_ctx *T, const char *path)
{
    xdoc d;
    if (!load(T, path, &d)) return;
    double W = atof(attr_at(&d, 0, "width")), H = atof(attr_at(&d, 0, "height"));
    static tbox box[20000];
    int n = text_boxes(&d, box, 20000), outside = 0, overlaps = 0;
    CHECK(n > 0 && n < 20000);
    for (int i = 0; i < n; i++) {
        bool in = true;
        for (int k = 0; k < 4; k++)
            in = in && box[i].p[k][0] >= -0.5 && box[i].p[k][0] <= W + 0.5 && box[i].p[k][1] >= -0.5 &&
                 box[i].p[k][1] <= H + 0.5;
        if (!in && outside++ < 3)
            printf("    %s: '%s' (%.0f,%.0f)-(%.0f,%.0f) outside %.0f x %.0f\n", path, d.el[box[i].el].text,
                   box[i].p[0][0], box[i].p[0][1], box[i].p[2][0], box[i].p[2][1], W, H);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (boxes_overlap(&box[i], &box[j], 0.5) && overlaps++ < 3)
                printf("    %s: '%s' overlaps '%s'\n", path, d.el[box[i].el].text, d.el[box[j].el].text);
    /* no label on a cell (the values printed in cells aside) */
    static tbox cells[1000000 / 8];
    int nc = cell_boxes(&d, cells, (int)(sizeof cells / sizeof cells[0])), on_cells = 0;
    for (int i = 0; i < n; i++) {
        if (in_values(&d, box[i].el)) continue;
        double a0, b0, a1, b1;
        bounds(&box[i], &a0, &b0, &a1, &b1);
        for (int j = 0; j < nc; j++) {
            double c0, d0, c1, d1;
            bounds(&cells[j], &c0, &d0, &c1, &d1);
            if (c0 >= a1 || a0 >= c1 || d0 >= b1 || b0 >= d1) continue; /* far apart */
            if (boxes_overlap(&box[i], &cells[j], 0.5) && on_cells++ < 3)
                printf("    %s: '%s' lies on a cell\n", path, d.el[box[i].el].text);
        }
    }
    CHECK(outside == 0);
    CHECK(overlaps == 0);
    CHECK(on_cells == 0);
    xml_free(&d);
}

/* The checker itself: boxes it must call overlapping and outside. */
TEST(svg_layout_checker_finds_overlap_and_overflow)
{
    const char *svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" height=\"50\" viewBox=\"0 0 100 50\" "
                      "font-size=\"10\"><text x=\"10\" y=\"20\">abc</text><text x=\"20\" y=\"22\">def</text>"
                      "<g transform=\"translate(90 0)\"><text x=\"0\" y=\"40\">far</text></g>"
                      "<text x=\"50\" y=\"45\" transform=\"rotate(-90 50 45)\">up</text></svg>";
    xdoc d;
    CHECK(xml_parse(svg, strlen(svg), &d));
    tbox box[8];
    int n = text_boxes(&d, box, 8);
    CHECK(n == 4);
    if (n == 4) {
        CHECK(boxes_overlap(&box[0], &box[1], 0.5));  /* 'abc' at 10..~29 and 'def' from 20 */
        CHECK(!boxes_overlap(&box[0], &box[2], 0.5));
        CHECK(box[2].p[1][0] > 100);                   /* 'far' runs past the right edge */
        CHECK(fabs(box[3].p[0][0] - (50 - 7.6)) < 1e-9 && box[3].p[1][1] < box[3].p[0][1]); /* rotated upwards */
    }
    xml_free(&d);
}

static char lay_out[1 << 16], lay_err[1 << 14];

/* The estimate against librsvg's rendering with DejaVu Sans (measured on
   this machine: rsvg-convert of the text at 20 px, the ink from x = 1 to
   594 regular, to 670 bold; ink lacks the last glyph's right side bearing,
   ~0.05 em, so the advance is a pixel or two wider: 6 px tolerance). */
TEST(svg_text_width_matches_dejavu_sans)
{
    const char *abc = "abcdefghijklmnopqrstuvwxyz_abcdefghijklmnopqrstuvwxyz";
    CHECK_NEAR(kgl_svg_text_width(abc, 20, false), 596, 6);
    CHECK_NEAR(kgl_svg_text_width(abc, 20, true), 672, 8); /* bold: 1.13 x, measured 670 */
    /* capitals and digits are wider than the old flat 0.6 em: 685 px measured */
    CHECK_NEAR(kgl_svg_text_width("ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 WWWWWWWWWW", 20, false), 688, 8);
    CHECK_NEAR(kgl_svg_text_width("\xea\xb9\x80", 10, false), 10, 1e-12); /* a wide character: 1 em */
}

/* The pictures `kgl heads` draws, on the academic world and on UMLS (long
   relation and entity names, 135 entities: 46 relations, so spec.svg has a
   row per relation), and a query's. */
TEST(svg_layout_kgl_heads_pictures)
{
    char cmd[2048], path[1024];
    static const char *const pics[] = {"head0.svg", "heads.svg", "spec.svg", "query.svg"};
    snprintf(cmd, sizeof cmd, "train --supervise-heads advises=0,authored=1 --save %s/a.st --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/a.st --svg %s/a", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/a.st --query alice,advises^-1 --svg %s/a", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/a/%s", T->tmp, pics[k]);
        check_layout(T, path);
    }
    const char *umls = "data/kg/umls/train.txt";
    if (!file_exists(umls)) {
        test_skip(T, "data/kg/umls/train.txt is missing");
        return;
    }
    snprintf(cmd, sizeof cmd, "train --train %s --dim 32 --heads 4 --steps 30 --save %s/u.st --quiet", umls, T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/u.st --train %s --svg %s/u", T->tmp, umls, T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    snprintf(cmd, sizeof cmd,
             "heads --checkpoint %s/u.st --train %s --query "
             "therapeutic_or_preventive_procedure,conceptually_related_to --svg %s/u",
             T->tmp, umls, T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/u/%s", T->tmp, pics[k]);
        check_layout(T, path);
    }
}

/* The library's own layouts with long, wide and many labels: a heatmap, a
   grid of panels with long titles and outlines, line plots with long
   titles, axis labels and series names. */
TEST(svg_layout_long_labels)
{
    static const char *const rows[4] = {"conceptually_related_to_something_else", "x", "\xea\xb9\x80\xea\xb9\x80\xea\xb9\x80", "WWWWWWWWWWWWWWWWWWWWWWWW"};
    static const char *const cols[3] = {"MMMMMMMMMMMMMMMMMMMMMMMMMM", "i", "developmental_form_of"};
    double v[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    unsigned char ol[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
    const char *notes[2] = {"a note that is rather long and has to be shortened somewhere along the way", "2. b"};
    kgl_heatmap h = {.title = "a page title that is long enough to be wider than the heatmap under it",
                     .rows = 4, .cols = 3, .values = v, .row_labels = rows, .col_labels = cols,
                     .row_axis = "a row axis title longer than four rows", .col_axis = "a column axis title",
                     .outline = ol, .outline_label = "true tail (conceptually_related_to)", .value_label = "value",
                     .annotate = true, .notes = notes, .n_notes = 2};
    char path[512], err[512];
    CHECK(kgl_svg_heatmap(tmp_path(T, path, sizeof path, "lay1.svg"), &h, err, sizeof err));
    check_layout(T, path);
    kgl_heatmap panels[3] = {h, h, h};
    panels[1].title = "head 1: best relation conceptually_related_to (spec 0.43), a second clause that wraps";
    panels[2].title = "head_2_a_title_without_any_space_at_all_that_must_be_shortened_with_an_ellipsis";
    CHECK(kgl_svg_heatmap_grid(tmp_path(T, path, sizeof path, "lay2.svg"), "grid", panels, 3, 2, err, sizeof err));
    check_layout(T, path);

    double x[5] = {1, 10, 100, 1000, 10000}, y1[5] = {1e-9, 1e-5, 1e-3, 0.1, 1}, y2[5] = {5, 4, 3, 2, 1};
    kgl_series s[2] = {{"a series with a very long name, longer than the legend allows", 5, x, y1},
                       {"WWWWWWWW", 5, x, y2}};
    kgl_lineplot lp = {.title = "a line plot whose title is much longer than its plot area is wide, as they say",
                       .x_label = "step (an x axis label that is long)", .y_label = "a y label far longer than the plot is high, truly",
                       .log_y = true, .log_x = true, .series = s, .n_series = 2};
    CHECK(kgl_svg_lineplot(tmp_path(T, path, sizeof path, "lay3.svg"), &lp, err, sizeof err));
    check_layout(T, path);
    kgl_lineplot grid[3] = {lp, lp, lp};
    grid[1].log_y = false;
    CHECK(kgl_svg_lineplot_grid(tmp_path(T, path, sizeof path, "lay4.svg"), "three plots on a page", grid, 3, 2, err,
                                sizeof err));
    check_layout(T, path);
}

/* -------------------------------------------------- scales and sizes -- */

/* The colour-bar texts of the picture: its low end, its high end, and the
   line naming the scale. */
static void bar_texts(const xdoc *d, const char **lo, const char **hi, char *scale, size_t cap)
{
    int bar = nth(d, "g", "colorbar", ANYWHERE, 0);
    *lo = text_at(d, nth(d, "text", "lo", bar, 0));
    *hi = text_at(d, nth(d, "text", "hi", bar, 0));
    joined(d, "scale", bar, scale, cap);
}

TEST(svg_heatmap_log_auto_and_row_scales)
{
    /* log from the data: the largest value (1) down 4 decades; 1e-8 and 0
       lie below it (the bottom colour, counted, "≤" on the bar's end);
       0.01 sits halfway: viridis' middle anchor */
    static const double v[6] = {1, 0.01, 1e-8, 0.1, 0.001, 0};
    kgl_heatmap h = {.rows = 2, .cols = 3, .values = v, .vmin = NAN, .vmax = NAN, .scale = KGL_COLOUR_LOG,
                     .value_label = "weight"};
    char path[512], err[512], scale[512];
    const char *lo, *hi;
    tmp_path(T, path, sizeof path, "log.svg");
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    bar_texts(&d, &lo, &hi, scale, sizeof scale);
    CHECK(strcmp(hi, "1") == 0 && strcmp(lo, "\xe2\x89\xa4 0.0001") == 0); /* ≤ 0.0001 */
    CHECK(strcmp(scale, "log scale, at most 4 decades below the largest value") == 0);
    CHECK(has_text(&d, "below the scale (2)") && has_text(&d, "10\xe2\x81\xbb\xc2\xb2")); /* a decade tick: 10⁻² */
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 1), "fill"), "#21908c") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 0), "fill"), "#fde725") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 5), "fill"), "#440154") == 0);
    xml_free(&d);

    /* automatic: a few large values over many small ones take a log scale,
       values that spread over a linear one keep it; the picture says which */
    double peaky[100], spread[100];
    for (int k = 0; k < 100; k++) peaky[k] = k % 25 ? 0.001 : 1, spread[k] = k / 99.0; /* 4 large: under 5% */
    h = (kgl_heatmap){.rows = 10, .cols = 10, .values = peaky, .vmin = NAN, .vmax = NAN, .scale = KGL_COLOUR_AUTO};
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    if (!load(T, path, &d)) return;
    bar_texts(&d, &lo, &hi, scale, sizeof scale);
    CHECK(strstr(scale, "log scale (automatic: on a linear one, 95% of the cells would take its darkest tenth)") || printf("    %s\n", scale) < 0);
    CHECK(strcmp(lo, "0.001") == 0 && strcmp(hi, "1") == 0);
    xml_free(&d);
    h.values = spread;
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    if (!load(T, path, &d)) return;
    bar_texts(&d, &lo, &hi, scale, sizeof scale);
    CHECK(strcmp(scale, "linear scale, from the smallest value to the largest (automatic: the values spread over it)") == 0);
    CHECK(strcmp(lo, "0") == 0 && strcmp(hi, "1") == 0);
    xml_free(&d);

    /* a row scale: each row from 0 to its own maximum, printed right of it */
    static const double rows[6] = {1, 2, 4, 10, 20, 40};
    h = (kgl_heatmap){.rows = 2, .cols = 3, .values = rows, .scale = KGL_COLOUR_ROW};
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    if (!load(T, path, &d)) return;
    bar_texts(&d, &lo, &hi, scale, sizeof scale);
    CHECK(strcmp(lo, "0") == 0 && strcmp(hi, "the row's maximum") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 2), "fill"), "#fde725") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 5), "fill"), "#fde725") == 0);
    CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, 4), "fill"), "#21908c") == 0); /* 20 of 40 */
    int rm = nth(&d, "g", "row-max", ANYWHERE, 0);
    CHECK(count(&d, "text", NULL, rm) == 2 && strcmp(text_at(&d, nth(&d, "text", NULL, rm, 1)), "40") == 0);
    xml_free(&d);
    check_layout(T, path);
}

/* max_rows / max_cols: the columns with the largest sums, then the rows
   with the largest sums over them, in their order; a line says what is left
   out; a cell stays under 400 bytes however long its names. */
TEST(svg_heatmap_draws_the_largest_rows_and_columns)
{
    enum { n = 100 };
    static double v[n * n];
    for (int i = 0; i < n; i++) /* columns 3, 13, ..., 93 and rows 0, 7, ..., 98 hold the mass */
        for (int j = 0; j < n; j++) v[i * n + j] = (j % 10 == 3 ? 1 : 0.01) * (i % 7 == 0 ? 1 : 0.1);
    kgl_heatmap h = {.title = "largest", .rows = n, .cols = n, .values = v, .vmin = NAN, .vmax = NAN, .max_rows = 15,
                     .max_cols = 10, .value_label = "weight"};
    char path[512], err[512], line[1024];
    tmp_path(T, path, sizeof path, "largest.svg");
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    CHECK(titled_rects(&d) == 150);
    CHECK(strcmp(title_of(&d, nth(&d, "rect", "cell", ANYWHERE, 0)), "0 \xe2\x86\x92 3: 1") == 0);
    CHECK(strcmp(title_of(&d, nth(&d, "rect", "cell", ANYWHERE, 149)), "98 \xe2\x86\x92 93: 1") == 0);
    int rl = nth(&d, "g", "row-labels", ANYWHERE, 0), cl = nth(&d, "g", "col-labels", ANYWHERE, 0);
    CHECK(count(&d, "text", NULL, rl) == 15 && count(&d, "text", NULL, cl) == 10); /* every one drawn is labelled */
    CHECK(strcmp(text_at(&d, nth(&d, "text", NULL, rl, 1)), "7") == 0 && strcmp(text_at(&d, nth(&d, "text", NULL, cl, 1)), "13") == 0);
    joined(&d, "summary", ANYWHERE, line, sizeof line);
    CHECK(strncmp(line, "Drawn: the 10 of 100 columns with the largest sums, and the 15 of 100 rows with the largest "
                        "sums over them: ", 100) == 0);
    CHECK(strstr(line, "% of the total weight; the cells not drawn hold values from 0.001 to 0.1") != NULL);
    xml_free(&d);
    check_layout(T, path);

    /* 64 x 64 drawn of 300 x 300, names of 1,000 bytes, every cell outlined */
    enum { big = 300 };
    static char names[big][1001];
    static const char *labels[big];
    static unsigned char out[big * big];
    static double w[big * big];
    for (int i = 0; i < big; i++) {
        char num[16]; /* "17xxx…x": 1,000 bytes, unique by their start */
        int k = snprintf(num, sizeof num, "%d", i);
        memset(names[i], 'x', 1000);
        memcpy(names[i], num, (size_t)k);
        labels[i] = names[i];
    }
    for (int k = 0; k < big * big; k++) w[k] = sin(k * 0.1), out[k] = 1;
    char long_label[2000];
    memset(long_label, 'y', sizeof long_label - 1);
    long_label[sizeof long_label - 1] = 0;
    h = (kgl_heatmap){.rows = big, .cols = big, .values = w, .row_labels = labels, .col_labels = labels,
                      .max_rows = 64, .max_cols = 64, .outline = out, .outline_label = long_label};
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    FILE *f = fopen(path, "rb");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (f) fclose(f);
    CHECK(size > 0 && size < 64 * 64 * 400L);
    if (load(T, path, &d)) {
        CHECK(titled_rects(&d) == 64 * 64);
        xml_free(&d);
    }
}

/* ---------------------------------------------- kgl heads at any size -- */

/* The value in a cell's tooltip "row → col: value", before a " (not
   finite…)" or " [outline label]" that may follow it. */
static double tooltip_value(const char *t)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", t);
    char *arrow = strstr(buf, "\xe2\x86\x92"), *cut, *colon = NULL;
    if (!arrow) return NAN;
    if ((cut = strstr(arrow, " ["))) *cut = 0;
    if ((cut = strstr(arrow, " (not finite"))) *cut = 0;
    for (char *p = arrow; (p = strstr(p, ": ")); p += 2) colon = p;
    return colon ? strtod(colon + 2, NULL) : NAN;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* What a heatmap picture says of itself, checked against its cells: it is
 * at most max_bytes; it has one colour bar, whose ends are the range of
 * the values drawn (log: the largest, and the smallest positive or "≤" a
 * floor some cell lies below; a row scale: each row's maximum printed right
 * of it); every row and column drawn is labelled, or an axis title says
 * which are. */
static void check_heatmap_facts(test_ctx *T, const char *path, long max_bytes)
{
    long size = file_size(path);
    if (!CHECK(size > 0 && size <= max_bytes)) printf("    %s: %ld bytes\n", path, size);
    xdoc d;
    if (!load(T, path, &d)) return;
    CHECK(count(&d, "g", "colorbar", ANYWHERE) == 1);
    const char *lo, *hi;
    char scale[1024], want[64];
    bar_texts(&d, &lo, &hi, scale, sizeof scale);
    bool row_scale = strncmp(scale, "each row", 8) == 0, log_scale = strstr(scale, "log scale") != NULL;
    bool ratio_scale = strstr(scale, "centred on 1") != NULL;
    enum { MAX_ROWS = 4096 };
    typedef struct drawn_row {
        int group, cells; /* its heatmap panel; its cells */
        double y, max;    /* its centre; its largest finite value */
    } drawn_row;
    static drawn_row row[MAX_ROWS];
    int n_rows = 0;
    double mn = INFINITY, mx = -INFINITY, pos = INFINITY;
    for (int i = 0; i < d.n; i++) {
        if (strcmp(d.el[i].name, "rect") != 0 || !has_class(&d.el[i], "cell")) continue;
        int group = d.el[i].parent;
        while (group >= 0 && !has_class(&d.el[group], "heatmap")) group = d.el[group].parent;
        double v = tooltip_value(title_of(&d, i)), y = atof(attr_at(&d, i, "y")) + atof(attr_at(&d, i, "height")) / 2;
        int r = 0;
        while (r < n_rows && !(row[r].group == group && fabs(row[r].y - y) < 0.01)) r++;
        if (r == n_rows && n_rows < MAX_ROWS) row[n_rows++] = (drawn_row){group, 0, y, -INFINITY};
        if (r < MAX_ROWS) row[r].cells++;
        if (!isfinite(v)) continue;
        mn = fmin(mn, v), mx = fmax(mx, v);
        if (v > 0) pos = fmin(pos, v);
        if (r < MAX_ROWS) row[r].max = fmax(row[r].max, v);
    }
    CHECK(n_rows > 0 && mn <= mx);
    if (row_scale) {
        CHECK(strcmp(hi, "the row's maximum") == 0 && (strcmp(lo, "0") == 0 || strcmp(lo, "0 or the row's minimum") == 0));
        int shown = 0;
        for (int i = 0; i < d.n; i++) { /* each row's maximum, right of it */
            if (strcmp(d.el[i].name, "text") != 0 || d.el[i].parent < 0 || !has_class(&d.el[d.el[i].parent], "row-max"))
                continue;
            double y = atof(attr_at(&d, i, "y"));
            for (int r = 0; r < n_rows; r++)
                if (fabs(row[r].y - y) < 0.01 && within(&d, i, row[r].group)) {
                    snprintf(want, sizeof want, "%.4g", row[r].max == 0 ? 0.0 : row[r].max);
                    shown++;
                    if (!CHECK(strcmp(text_at(&d, i), want) == 0)) printf("    row max %s, want %s\n", text_at(&d, i), want);
                }
        }
        CHECK(shown > 0);
    } else if (ratio_scale) { /* 1/2^k .. 2^k, 2^k the power of 2 at or above the largest value (at least 2) */
        int k = mx > 1 ? (int)ceil(log2(mx) - 1e-9) : pos < INFINITY ? (int)ceil(-log2(pos) - 1e-9) : 1;
        k = k < 1 ? 1 : k > 10 ? 10 : k;
        snprintf(want, sizeof want, "%s%.0f", mx > ldexp(1, k) ? "\xe2\x89\xa5 " : "", ldexp(1, k)); /* ≥ */
        if (!CHECK(strcmp(hi, want) == 0)) printf("    %s: bar's top %s, want %s\n", path, hi, want);
        snprintf(want, sizeof want, "%s1/%.0f", mn < ldexp(1, -k) ? "\xe2\x89\xa4 " : "", ldexp(1, k)); /* ≤ */
        if (!CHECK(strcmp(lo, want) == 0)) printf("    %s: bar's bottom %s, want %s\n", path, lo, want);
    } else {
        snprintf(want, sizeof want, "%.4g", mx == 0 ? 0.0 : mx);
        if (!CHECK(strcmp(hi, want) == 0)) printf("    %s: bar's top %s, largest value drawn %s\n", path, hi, want);
        if (log_scale && strncmp(lo, "\xe2\x89\xa4 ", 4) == 0) { /* a floor, with cells below it */
            CHECK(atof(lo + 4) > mn);
        } else {
            snprintf(want, sizeof want, "%.4g", log_scale ? pos : mn == 0 ? 0.0 : mn);
            if (!CHECK(strcmp(lo, want) == 0)) printf("    %s: bar's bottom %s, smallest value drawn %s\n", path, lo, want);
        }
    }
    /* no text is cut but names (row and column labels, shortened with "…") */
    for (int i = 0; i < d.n; i++) {
        size_t len = d.el[i].text ? strlen(d.el[i].text) : 0;
        if (strcmp(d.el[i].name, "text") != 0 || len < 3 || strcmp(d.el[i].text + len - 3, "\xe2\x80\xa6") != 0) continue;
        int p = d.el[i].parent;
        if (!CHECK(p >= 0 && (has_class(&d.el[p], "row-labels") || has_class(&d.el[p], "col-labels"))))
            printf("    %s: cut: '%s'\n", path, d.el[i].text);
    }
    /* every row and column drawn is labelled, or an axis title says which are */
    for (int g = 0; g < d.n; g++) {
        if (strcmp(d.el[g].name, "g") != 0 || !has_class(&d.el[g], "heatmap")) continue;
        int rows = 0, cells = 0;
        for (int r = 0; r < n_rows; r++)
            if (row[r].group == g) rows++, cells += row[r].cells;
        int cols = rows ? cells / rows : 0;
        int row_labels = count(&d, "text", NULL, nth(&d, "g", "row-labels", g, 0));
        int col_labels = count(&d, "text", NULL, nth(&d, "g", "col-labels", g, 0));
        char axes[1024];
        joined(&d, "axis-title", g, axes, sizeof axes);
        bool thinned = strstr(axes, "labelled)") != NULL;
        if (!CHECK(rows > 0 && ((row_labels == rows && col_labels == cols) || thinned)))
            printf("    %s: %d x %d cells, %d row and %d column labels, axis titles '%s'\n", path, rows, cols, row_labels,
                   col_labels, axes);
    }
    xml_free(&d);
}

/* A graph like a newcomer's: n entities (country_001, Republic_of_Place_12),
   6 relations, 6 n triples from a fixed generator; written in T->tmp. */
static const char *newcomer_graph(test_ctx *T, int slot, int n)
{
    static const char *const rel[6] = {"speaks", "borders", "exports_to", "member_of", "capital_of_region",
                                       "trades_with"};
    size_t cap = (size_t)n * 6 * 80, len = 0;
    char *text = malloc(cap), name[2][32], file[32];
    unsigned x = 12345;
    for (int k = 0; k < 6 * n; k++) {
        int e[3];
        for (int s = 0; s < 3; s++) x = x * 1664525u + 1013904223u, e[s] = (int)((x >> 8) % (unsigned)(s < 2 ? n : 6));
        if (e[0] == e[1]) e[1] = (e[1] + 1) % n;
        for (int s = 0; s < 2; s++)
            snprintf(name[s], sizeof name[s], e[s] % 3 ? "country_%03d" : "Republic_of_Place_%d", e[s]);
        len += (size_t)snprintf(text + len, cap - len, "%s\t%s\t%s\n", name[0], rel[e[2]], name[1]);
    }
    snprintf(file, sizeof file, "newcomer%d.tsv", n);
    const char *path = write_tmp(T, slot, file, text, len);
    free(text);
    return path;
}

/* The pictures kgl heads draws of a graph of n entities (full context:
   head<h>.svg, heads.svg, spec.svg, query.svg; neighbourhood context:
   relations.svg): laid out (check_layout), under 1 MB, at most 4,096 cells,
   saying what they show (check_heatmap_facts), every head named; query.svg's
   cells of at least 11 px. */
static void check_heads_pictures(test_ctx *T, int n, const char *model)
{
    char cmd[2048], path[1024], dir[600];
    const char *g = newcomer_graph(T, 0, n);
    int H = n < 500 ? 4 : 2;
    snprintf(dir, sizeof dir, "%s/p%d", T->tmp, n);
    snprintf(cmd, sizeof cmd, "train --train %s %s --heads %d --save %s/m%d.st --quiet --threads 1", g, model, H,
             T->tmp, n);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/m%d.st --train %s --svg %s", T->tmp, n, g, dir);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/m%d.st --train %s --query country_001,speaks --svg %s", T->tmp, n,
             g, dir);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    snprintf(cmd, sizeof cmd, "train --train %s %s --heads %d --context graph --neighbours 8 --save %s/g%d.st --quiet "
             "--threads 1 && %s heads --checkpoint %s/g%d.st --train %s --svg %s", g, model, H, T->tmp, n, T->kgl,
             T->tmp, n, g, dir);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);

    char pics[8][32];
    int n_pics = 0;
    for (int h = 0; h < H; h++) snprintf(pics[n_pics++], sizeof pics[0], "head%d.svg", h);
    snprintf(pics[n_pics++], sizeof pics[0], "heads.svg");
    snprintf(pics[n_pics++], sizeof pics[0], "spec.svg");
    snprintf(pics[n_pics++], sizeof pics[0], "query.svg");
    snprintf(pics[n_pics++], sizeof pics[0], "relations.svg");
    for (int k = 0; k < n_pics; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, pics[k]);
        check_layout(T, path);
        check_heatmap_facts(T, path, 1000000);
        xdoc d;
        if (!load(T, path, &d)) continue;
        int cells = titled_rects(&d);
        CHECK(cells > 0 && cells <= 4096);
        /* every head named: a map's page title, a panel title of heads.svg, a row or column of the others */
        for (int h = 0; h < (k < H ? 1 : H); h++) {
            char name[32], title[40];
            snprintf(name, sizeof name, "head %d", k < H ? k : h);
            snprintf(title, sizeof title, "%s:", name);
            bool found = k < H ? strncmp(title_of(&d, 0), title, strlen(title)) == 0 : has_text(&d, name);
            for (int i = 0; i < d.n && !found && strcmp(pics[k], "heads.svg") == 0; i++)
                found = strcmp(d.el[i].name, "text") == 0 && strncmp(text_at(&d, i), title, strlen(title)) == 0;
            if (!CHECK(found)) printf("    %s: no '%s'\n", path, name);
        }
        if (k < H && n > 64) { /* a map of more entities than it draws says what it left out */
            char line[1024];
            joined(&d, "summary", ANYWHERE, line, sizeof line);
            snprintf(cmd, sizeof cmd, "Drawn: the 64 of %d columns with the largest sums, and the 64 of %d rows", n, n);
            if (!CHECK(strncmp(line, cmd, strlen(cmd)) == 0)) printf("    %s: '%s'\n", path, line);
        }
        if (strcmp(pics[k], "query.svg") == 0) {
            CHECK(has_text(&d, "readout p(j)") && cell_size(&d) >= 11);
            CHECK(count(&d, "text", NULL, nth(&d, "g", "row-labels", ANYWHERE, 0)) == H + 1);
        }
        xml_free(&d);
    }
}

TEST(svg_layout_kgl_heads_at_124_entities)
{
    check_heads_pictures(T, 124, "--dim 16 --steps 30");
}

TEST(svg_layout_kgl_heads_at_1000_entities)
{
    check_heads_pictures(T, 1000, "--dim 8 --steps 3");
}

/* kgl heads --colour-scale: the scale each picture says it uses; a bad name
   or no --svg is refused with exit 2. */
TEST(svg_kgl_heads_colour_scale_option)
{
    char cmd[2048], path[1024], scale[1024];
    const char *lo, *hi;
    snprintf(cmd, sizeof cmd, "train --save %s/c.st --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/c.st --colour-scale log", T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 2);
    CHECK(strstr(lay_err, "kgl heads: --colour-scale needs --svg DIR") != NULL);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/c.st --svg %s/c --colour-scale viridis", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 2);
    CHECK(strstr(lay_err, "--colour-scale 'viridis': expected auto, linear, log or row") != NULL);
    static const struct {
        const char *scale, *pic, *says;
    } cases[] = {
        {"log", "head0.svg", "log scale"},
        {"log", "heads.svg", "one scale for every panel: log scale"},
        {"row", "heads.svg", "each row on its own scale"},
        {"linear", "spec.svg", "linear scale, from the smallest value to the largest"},
        {"linear", "query.svg", "linear scale, from the smallest value to the largest"},
        /* its rows are different distributions, each drawn as a multiple of its
           uniform 1/n (it was a row scale of raw values, which drew near-uniform
           rows as structure): one scale centred on 1 */
        {"auto", "query.svg", "log scale centred on 1"},
        {"auto", "head0.svg", "log scale centred on 1"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bool query = strcmp(cases[k].pic, "query.svg") == 0;
        snprintf(cmd, sizeof cmd, "heads --checkpoint %s/c.st --svg %s/c%zu --colour-scale %s%s", T->tmp, T->tmp, k,
                 cases[k].scale, query ? " --query alice,advises" : "");
        CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
        snprintf(path, sizeof path, "%s/c%zu/%s", T->tmp, k, cases[k].pic);
        xdoc d;
        if (!load(T, path, &d)) continue;
        bar_texts(&d, &lo, &hi, scale, sizeof scale);
        if (!CHECK(strncmp(scale, cases[k].says, strlen(cases[k].says)) == 0)) printf("    %s: '%s'\n", path, scale);
        xml_free(&d);
        check_heatmap_facts(T, path, 1000000);
    }
}

/* ------------------------------------- attention against uniform -- */

static const kgl_json *json_member(const kgl_json *o, const char *key)
{
    static const kgl_json null_value = {0};
    const kgl_json *v = o ? kgl_json_get(o, key) : NULL;
    return v ? v : &null_value;
}

/* kgl heads --query --svg on a --context graph stack (--layers 2, 2 heads):
   query.svg has a row per layer and head and a column per token of the
   question's neighbourhood ("(itself) alice", "advises dave", …), each cell
   the weight --json gives times the tokens (1: uniform; the tooltip has 4
   significant digits, hence 5e-4 relative), the true answers' tokens
   outlined in every row, one scale centred on 1; laid out, saying what it
   shows. It used to be refused (exit 2). */
TEST(svg_kgl_heads_graph_query_per_layer_and_head)
{
    char cmd[2048], path[1024], e[512], want[600];
    snprintf(cmd, sizeof cmd,
             "train --context graph --neighbours 3 --query-relation --dim 8 --heads 2 --layers 2 --steps 60 "
             "--save %s/g.st --quiet", T->tmp);
    if (!CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/g.st --query alice,advises --svg %s/q", T->tmp, T->tmp);
    if (!CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0)) printf("    %s", lay_err);
    snprintf(want, sizeof want, "picture: %s/q/query.svg", T->tmp);
    CHECK(strstr(lay_out, want) != NULL);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/g.st --query alice,advises --json", T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    kgl_json_doc q = {0};
    if (!CHECK(kgl_json_parse(lay_out, strlen(lay_out), &q, e, sizeof e))) return;
    const kgl_json *tokens = json_member(q.root, "tokens");
    snprintf(path, sizeof path, "%s/q/query.svg", T->tmp);
    xdoc d;
    if (!CHECK(tokens->type == KGL_JSON_ARRAY && tokens->len >= 2) || !load(T, path, &d)) {
        kgl_json_free(&q);
        return;
    }
    int n_tokens = (int)tokens->len, true_tokens = 0, matched = 0;
    CHECK(count(&d, "text", NULL, nth(&d, "g", "row-labels", ANYWHERE, 0)) == 4);
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 2; h++) {
            snprintf(want, sizeof want, "layer %d, head %d", l, h);
            CHECK(has_text(&d, want));
        }
    CHECK(titled_rects(&d) == 4 * n_tokens);
    CHECK(has_text(&d, "(itself) alice"));
    for (int t = 0; t < n_tokens; t++) {
        const kgl_json *tok = &tokens->child[t];
        char label[300];
        const char *ent = json_member(tok, "entity")->str, *rel = json_member(tok, "relation")->str;
        if (t == 0) snprintf(label, sizeof label, "(itself) %s", ent ? ent : "?");
        else snprintf(label, sizeof label, "%s %s", rel ? rel : "?", ent ? ent : "?");
        bool answer = json_member(tok, "true_answer")->type == KGL_JSON_TRUE;
        true_tokens += answer;
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < 2; h++) {
                double w = json_member(tok, "layers")->child[l].child[h].num;
                snprintf(want, sizeof want, "layer %d, head %d \xe2\x86\x92 %s: ", l, h, label);
                for (int i = 0; i < d.n; i++) {
                    if (strcmp(d.el[i].name, "rect") != 0 || !has_class(&d.el[i], "cell") ||
                        strncmp(title_of(&d, i), want, strlen(want)) != 0)
                        continue;
                    matched++;
                    CHECK_NEAR(tooltip_value(title_of(&d, i)), w * n_tokens, 5e-4 * w * n_tokens + 1e-12);
                    CHECK(has_class(&d.el[i], "outlined") == answer);
                }
            }
    }
    CHECK(matched == 4 * n_tokens);
    CHECK(true_tokens >= 1 && count(&d, "rect", "outlined", ANYWHERE) == 4 * true_tokens); /* alice advises dave, erin */
    const char *lo, *hi;
    char scale[1024];
    bar_texts(&d, &lo, &hi, scale, sizeof scale);
    CHECK(strncmp(scale, "log scale centred on 1", 22) == 0);
    xml_free(&d);
    kgl_json_free(&q);
    check_layout(T, path);
    check_heatmap_facts(T, path, 1000000);
}

/* Cells drawn in another colour than the ratio scale's neutral one (1:
   uniform), among the cells whose tooltip starts with `rows` ("" for all);
   *cells counts those cells. */
static int off_neutral(test_ctx *T, const char *path, const char *rows, int *cells)
{
    xdoc d;
    *cells = 0;
    if (!load(T, path, &d)) return -1;
    int off = 0;
    for (int i = 0; i < d.n; i++) {
        if (strcmp(d.el[i].name, "rect") != 0 || !has_class(&d.el[i], "cell") ||
            strncmp(title_of(&d, i), rows, strlen(rows)) != 0)
            continue;
        (*cells)++;
        if (strcmp(attr_at(&d, i, "fill"), "#f7f7f7") != 0 && off++ < 3)
            printf("    %s: %s drawn %s\n", path, title_of(&d, i), attr_at(&d, i, "fill"));
    }
    xml_free(&d);
    return off;
}

/* Attention that is uniform (a graph stack with --init-scale 0: every score
   0) or nearly so (a full-context model with --init-scale 0.001, untrained:
   weights within about 1e-6 of 1/n) is drawn at the neutral colour in every
   cell of every attention picture, not as structure: a scale fitted to the
   data's range drew those 1e-6 differences from one end of viridis to the
   other. (The full context's query.svg: its heads' rows; the readout's
   probabilities are not uniform.) */
TEST(svg_kgl_heads_uniform_attention_is_drawn_neutral)
{
    char cmd[2048], path[1024];
    snprintf(cmd, sizeof cmd,
             "train --context graph --neighbours 3 --dim 8 --heads 2 --layers 2 --init-scale 0 --steps 0 --save %s/u.st "
             "--quiet && %s heads --checkpoint %s/u.st --query alice,advises --svg %s/u && %s heads --checkpoint %s/u.st "
             "--svg %s/u", T->tmp, T->kgl, T->tmp, T->tmp, T->kgl, T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    snprintf(cmd, sizeof cmd,
             "train --dim 8 --heads 2 --init-scale 0.001 --steps 0 --save %s/f.st --quiet && %s heads --checkpoint "
             "%s/f.st --query alice,advises --svg %s/f && %s heads --checkpoint %s/f.st --svg %s/f", T->tmp, T->kgl,
             T->tmp, T->tmp, T->kgl, T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0);
    static const struct {
        const char *pic, *rows;
        int cells; /* at least */
    } pics[] = {
        {"u/query.svg", "", 4 * 4},   /* 2 layers x 2 heads x (alice and her 3 edges) */
        {"u/relations.svg", "", 2},
        {"f/head0.svg", "", 13 * 13}, /* the academic world's 13 entities */
        {"f/head1.svg", "", 13 * 13},
        {"f/heads.svg", "", 2 * 13 * 13},
        {"f/query.svg", "head ", 2 * 13},
    };
    for (size_t k = 0; k < sizeof pics / sizeof pics[0]; k++) {
        int cells;
        snprintf(path, sizeof path, "%s/%s", T->tmp, pics[k].pic);
        CHECK(off_neutral(T, path, pics[k].rows, &cells) == 0);
        if (!CHECK(cells >= pics[k].cells)) printf("    %s: %d cells\n", path, cells);
    }
}

/* The ratio scale: log2, centred on 1 (the diverging map's neutral middle,
   #f7f7f7), both ends the power of 2 at or above the largest value (4 here:
   1/4 .. 4, the map's blue and red ends), 0 below it ("≤ 1/4", counted);
   values near 1 keep ends of at least 2 (1/2 .. 2), so they stay pale;
   a bar labelled with powers of 2, 1 among them; the legend names the map. */
TEST(svg_heatmap_ratio_scale_centred_on_1)
{
    static const double v[6] = {1, 4, 0.25, 0.5, 2, 0};
    kgl_heatmap h = {.rows = 2, .cols = 3, .values = v, .vmin = NAN, .vmax = NAN, .scale = KGL_COLOUR_RATIO,
                     .value_label = "weight \xc3\x97 n"};
    char path[512], err[512], scale[512];
    const char *lo, *hi;
    tmp_path(T, path, sizeof path, "ratio.svg");
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    xdoc d;
    if (!load(T, path, &d)) return;
    bar_texts(&d, &lo, &hi, scale, sizeof scale);
    CHECK(strcmp(hi, "4") == 0 && strcmp(lo, "\xe2\x89\xa4 1/4") == 0); /* ≤ 1/4 */
    CHECK(strncmp(scale, "log scale centred on 1", 22) == 0);
    CHECK(has_text(&d, "1") && has_text(&d, "below the scale (1)"));
    static const char *const fills[6] = {"#f7f7f7", "#b2182b", "#2166ac", "#92c5de", "#f4a582", "#2166ac"};
    for (int k = 0; k < 6; k++)
        if (!CHECK(strcmp(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, k), "fill"), fills[k]) == 0))
            printf("    cell %d: %s, want %s\n", k, attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, k), "fill"), fills[k]);
    xml_free(&d);
    check_layout(T, path);

    static const double near1[4] = {1.01, 0.99, 1, 1.02};
    h = (kgl_heatmap){.rows = 2, .cols = 2, .values = near1, .scale = KGL_COLOUR_RATIO};
    CHECK(kgl_svg_heatmap(path, &h, err, sizeof err));
    if (!load(T, path, &d)) return;
    bar_texts(&d, &lo, &hi, scale, sizeof scale);
    CHECK(strcmp(hi, "2") == 0 && strcmp(lo, "1/2") == 0);
    for (int k = 0; k < 4; k++) { /* within 2% of 1: within 3% of the map from its middle, every channel >= 0xe8 */
        unsigned rgb[3] = {0, 0, 0};
        sscanf(attr_at(&d, nth(&d, "rect", "cell", ANYWHERE, k), "fill"), "#%2x%2x%2x", &rgb[0], &rgb[1], &rgb[2]);
        CHECK(rgb[0] >= 0xe8 && rgb[1] >= 0xe8 && rgb[2] >= 0xe8);
    }
    xml_free(&d);
}

/* A question whose neighbourhood outgrows the picture (hub with 70 edges,
   --neighbours 80: 71 tokens): query.svg draws 48 columns, the axis title
   says "48 of 71 tokens" and bounds the rest, at least 16 true answers'
   tokens (the 35 links of hub) are outlined in each row, and it is laid out
   and says what it shows. */
TEST(svg_kgl_heads_graph_query_keeps_48_tokens)
{
    char text[8192], cmd[2048], path[1024], axis[2048];
    size_t len = 0;
    for (int k = 0; k < 35; k++)
        len += (size_t)snprintf(text + len, sizeof text - len, "hub\tlinks\tplace_%02d\nhub\tknows\tperson_%02d\n", k, k);
    const char *g = write_tmp(T, 0, "star.tsv", text, len);
    snprintf(cmd, sizeof cmd,
             "train --train %s --context graph --neighbours 80 --dim 8 --heads 2 --steps 5 --save %s/s.st --quiet "
             "--threads 1 && %s heads --checkpoint %s/s.st --train %s --query hub,links --svg %s/s", g, T->tmp, T->kgl,
             T->tmp, g, T->tmp);
    if (!CHECK(run_kgl(T, cmd, lay_out, sizeof lay_out, lay_err, sizeof lay_err) == 0)) printf("    %s", lay_err);
    snprintf(path, sizeof path, "%s/s/query.svg", T->tmp);
    xdoc d;
    if (!load(T, path, &d)) return;
    CHECK(titled_rects(&d) == 2 * 48);
    CHECK(count(&d, "rect", "outlined", ANYWHERE) >= 2 * 16);
    joined(&d, "axis-title", ANYWHERE, axis, sizeof axis);
    if (!CHECK(strstr(axis, "48 of 71 tokens") && strstr(axis, "the other 23 have mean weight")))
        printf("    %s\n", axis);
    xml_free(&d);
    check_layout(T, path);
    check_heatmap_facts(T, path, 1000000);
}
