/* svg.c — pictures: heatmaps (attention maps) and line plots (diagnostics vs
 * step) as self-contained SVG files, written by hand.
 *
 * A picture is built in a growing buffer, then written to a temporary file
 * beside its path and renamed over it. Layout is computed from estimated text
 * widths, so nothing depends on fonts being present: printable ASCII takes
 * the advance widths of DejaVu Sans (the font librsvg and most Linux browsers
 * fall back to; Helvetica and Arial are narrower, so the estimate errs wide),
 * bold text 1.13 times that (DejaVu Sans Bold, measured), other characters
 * 0.7 em and East Asian wide characters 1 em. Text is drawn in boxes of
 * 0.76 em above the baseline and 0.24 em below it. Numbers in coordinates
 * have at most two decimals and trailing zeros removed: the same input gives
 * the same bytes. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/io.h"
#include "engine/internal.h"
#include "io/internal.h"

#define MAX_CELLS 1000000L
#define LABEL_EM 16.0     /* labels wider than this many em are shortened with … */
#define MARKER_MAX 60     /* series with at most this many points get markers */
#define TOOLTIP_BYTES 256 /* a label's full text in its tooltip: longer ones are cut with … */
#define CELL_NAME_BYTES 48 /* a name in a cell's tooltip (its label's tooltip has more): a cell takes < 400 bytes */
#define FONT_FAMILY "Helvetica, Arial, 'Noto Sans', 'Noto Sans CJK KR', sans-serif"

/* ------------------------------------------------------------- buffer -- */

typedef struct svgbuf {
    char *p;
    size_t len, cap;
    char num[8][32]; /* ring of formatted numbers, see N() */
    unsigned num_i;
} svgbuf;

static void sb_reserve(svgbuf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 1 << 14;
    while (cap < b->len + more + 1) cap *= 2;
    char *p = kgl_xrealloc_for(b->p, cap, "an SVG picture");
    b->p = p;
    b->cap = cap;
}

static void sb_put(svgbuf *b, const char *s, size_t n)
{
    sb_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_puts(svgbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_printf(svgbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(svgbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) kgl_die("svg: cannot format \"%s\"", fmt);
    sb_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* A coordinate: two decimals, trailing zeros and "-0" removed. The string
 * lives in a ring of 8 slots in the buffer: at most 8 per sb_printf call. */
static const char *N(svgbuf *b, double v)
{
    char *s = b->num[b->num_i++ & 7];
    if (!isfinite(v)) kgl_die("svg: non-finite coordinate");
    snprintf(s, sizeof b->num[0], "%.2f", v);
    char *dot = strchr(s, '.');
    if (dot) {
        char *end = s + strlen(s) - 1;
        while (end > dot && *end == '0') *end-- = 0;
        if (end == dot) *end = 0;
    }
    if (strcmp(s, "-0") == 0) strcpy(s, "0");
    return s;
}

/* --------------------------------------------------------------- text -- */

/* The UTF-8 sequence at s if it encodes an XML character: its length (1-4)
 * and code point. Minus its length for a well-formed sequence of a character
 * XML forbids (a control character, a surrogate, U+FFFE, U+FFFF); 0 for a
 * byte that starts no valid sequence. Reading stops at the first byte that
 * does not fit, so a sequence cut short by the terminating NUL is never read
 * past. */
static int xml_char(const unsigned char *s, unsigned *cp_out)
{
    unsigned c = s[0], cp, min;
    int k;
    if (c < 0x80) {
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return -1;
        *cp_out = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        k = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        k = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        k = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    for (int i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff) return 0;
    if ((cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff) return -k;
    *cp_out = cp;
    return k;
}

/* DejaVu Sans advance widths of ' ' .. '~' in 1/2048 em (its hmtx table). */
static const unsigned short dejavu_advance[95] = {
    651,  821,  942,  1716, 1303, 1946, 1597, 563,  799,  799,  1024, 1716, 651,  739,  651,  690,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690,  690,  1716, 1716, 1716, 1087,
    2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604,  604,  1343, 1141, 1767, 1532, 1612,
    1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799,  690,  799,  1716, 1024,
    1024, 1255, 1300, 1126, 1300, 1260, 721,  1300, 1298, 569,  569,  1186, 569,  1995, 1298, 1253,
    1300, 1300, 842,  1067, 803,  1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,  1303, 1716};

#define BOLD_WIDTH 1.13 /* DejaVu Sans Bold over Book, measured on a rendered alphabet */

/* Estimated advance of one character, in em. */
static double char_em(unsigned cp)
{
    if (cp >= 0x20 && cp < 0x7f) return dejavu_advance[cp - 0x20] / 2048.0;
    bool wide = (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3) ||
                (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
                (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1faff) || (cp >= 0x20000 && cp <= 0x3fffd);
    return wide ? 1.0 : 0.7;
}

#define ELLIPSIS_EM 1.0

/* Appends s, XML-escaped, shortened with "…" when wider than max_em (0: never). */
static void sb_text_fit(svgbuf *b, const char *s, double max_em)
{
    if (!s) return;
    const unsigned char *p = (const unsigned char *)s;
    size_t cut = (size_t)-1; /* byte offset where the shortened text ends */
    if (max_em > 0) {
        double total = 0;
        size_t last_fit = 0;
        for (size_t i = 0; p[i];) {
            unsigned cp = 0xfffd;
            int k = xml_char(p + i, &cp);
            if (k <= 0) k = k ? -k : 1, cp = 0xfffd;
            total += char_em(cp);
            i += (size_t)k;
            if (total + ELLIPSIS_EM <= max_em) last_fit = i;
        }
        if (total > max_em) cut = last_fit;
    }
    for (size_t i = 0; p[i] && i < cut;) {
        unsigned cp;
        int k = xml_char(p + i, &cp);
        if (k <= 0) {
            sb_puts(b, "\xef\xbf\xbd"); /* U+FFFD */
            i += k ? (size_t)-k : 1;
            continue;
        }
        switch (p[i]) {
        case '&': sb_puts(b, "&amp;"); break;
        case '<': sb_puts(b, "&lt;"); break;
        case '>': sb_puts(b, "&gt;"); break;
        case '"': sb_puts(b, "&quot;"); break;
        case '\'': sb_puts(b, "&apos;"); break;
        default: sb_put(b, (const char *)p + i, (size_t)k);
        }
        i += (size_t)k;
    }
    if (cut != (size_t)-1) sb_puts(b, "\xe2\x80\xa6"); /* … */
}

static void sb_text(svgbuf *b, const char *s) { sb_text_fit(b, s, 0); }

static double text_em(const char *s, double max_em);

/* s, escaped, cut with "…" after at most max_bytes bytes (whole UTF-8
 * sequences): names in tooltips, so that a picture's size has a bound
 * whatever the length of the names it shows. */
static void sb_text_capped(svgbuf *b, const char *s, size_t max_bytes)
{
    size_t n = 0;
    while (n <= max_bytes && s[n]) n++;
    if (n <= max_bytes) {
        sb_text(b, s);
        return;
    }
    int keep = (int)kgl_utf8_prefix(s, SIZE_MAX, max_bytes);
    char *cut = kgl_xmalloc((size_t)keep + 1);
    memcpy(cut, s, (size_t)keep);
    cut[keep] = 0;
    sb_text(b, cut);
    free(cut);
    sb_puts(b, "\xe2\x80\xa6"); /* … */
}

/* A label shortened to max_em; when it is shortened, a <title> child with
 * the full text (up to TOOLTIP_BYTES) comes first, so the page shows "…" and
 * the tooltip the whole. */
static void sb_label(svgbuf *b, const char *s, double max_em)
{
    if (s && max_em > 0 && text_em(s, 0) > max_em) {
        sb_puts(b, "<title>");
        sb_text_capped(b, s, TOOLTIP_BYTES);
        sb_puts(b, "</title>");
    }
    sb_text_fit(b, s, max_em);
}

/* Estimated width of s in em (after shortening to max_em when max_em > 0). */
static double text_em(const char *s, double max_em)
{
    if (!s) return 0;
    const unsigned char *p = (const unsigned char *)s;
    double total = 0;
    for (size_t i = 0; p[i];) {
        unsigned cp = 0xfffd;
        int k = xml_char(p + i, &cp);
        if (k <= 0) k = k ? -k : 1, cp = 0xfffd;
        total += char_em(cp);
        i += (size_t)k;
    }
    return max_em > 0 && total > max_em ? max_em : total;
}

double kgl_svg_text_width(const char *s, double font_px, bool bold)
{
    return text_em(s, 0) * font_px * (bold ? BOLD_WIDTH : 1);
}

/* A value for people: 4 significant digits; NaN and infinities by name. */
static void fmt_value(char *s, size_t cap, double v)
{
    if (isnan(v))
        snprintf(s, cap, "NaN");
    else if (isinf(v))
        snprintf(s, cap, v > 0 ? "+Inf" : "-Inf");
    else
        snprintf(s, cap, "%.4g", v == 0 ? 0.0 : v); /* no "-0" */
}

/* A point coordinate in a tooltip: 6 significant digits. */
static void fmt_point(char *s, size_t cap, double v)
{
    if (!isfinite(v))
        fmt_value(s, cap, v);
    else
        snprintf(s, cap, "%.6g", v == 0 ? 0.0 : v);
}

/* ------------------------------------------------------------- colour -- */

/* viridis (matplotlib's default colormap) at 0, 1/8, ..., 1. */
static const unsigned char viridis_anchor[9][3] = {
    {0x44, 0x01, 0x54}, {0x47, 0x2d, 0x7b}, {0x3b, 0x52, 0x8b}, {0x2c, 0x72, 0x8e}, {0x21, 0x90, 0x8c},
    {0x27, 0xad, 0x81}, {0x5d, 0xc8, 0x63}, {0xaa, 0xdc, 0x32}, {0xfd, 0xe7, 0x25},
};

/* A diverging map for values that are multiples of a reference
 * (KGL_COLOUR_RATIO): ColorBrewer's RdBu at 0, 1/8, ..., 1, blue below the
 * reference, a neutral near-white at it (the middle anchor), red above. */
static const unsigned char diverging_anchor[9][3] = {
    {0x21, 0x66, 0xac}, {0x43, 0x93, 0xc3}, {0x92, 0xc5, 0xde}, {0xd1, 0xe5, 0xf0}, {0xf7, 0xf7, 0xf7},
    {0xfd, 0xdb, 0xc7}, {0xf4, 0xa5, 0x82}, {0xd6, 0x60, 0x4d}, {0xb2, 0x18, 0x2b},
};

/* t in 0..1 (clamped) on a map of 9 anchors, interpolated linearly. */
static void colour_map(const unsigned char anchor[9][3], double t, unsigned char rgb[3])
{
    if (!(t > 0)) t = 0;
    if (t > 1) t = 1;
    double pos = t * 8;
    int i = (int)pos;
    if (i > 7) i = 7;
    double f = pos - i;
    for (int c = 0; c < 3; c++) {
        double v = anchor[i][c] + (anchor[i + 1][c] - anchor[i][c]) * f;
        rgb[c] = (unsigned char)(v + 0.5);
    }
}

/* Okabe & Ito, "Color Universal Design" (2008), yellow last (weak on white). */
static const char *const series_colour[8] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                             "#e69f00", "#56b4e9", "#000000", "#f0e442"};
static const char *const series_dash[8] = {"", "7 3", "2 2.5", "9 3 2 3", "4 4", "12 3 2 3 2 3", "1 4", "14 5"};
#define N_MARKER_SHAPES 5

/* Series i: colour i mod 8, dash (i + i/8) mod 8, so the first 64 series
 * all differ in (colour, dash). */
static const char *colour_of(int i) { return series_colour[i % 8]; }
static const char *dash_of(int i) { return series_dash[(i + i / 8) % 8]; }

/* ---------------------------------------------------------------- axes -- */

/* Where u lies between lo and hi, as a fraction; halved first when the span
 * itself overflows (values near ±DBL_MAX). */
static double frac(double u, double lo, double hi)
{
    if (!(hi > lo)) return 0.5;
    double f = (u - lo) / (hi - lo);
    if (!isfinite(f)) f = (u / 2 - lo / 2) / (hi / 2 - lo / 2);
    return isfinite(f) ? f : 0.5;
}

/* 1, 2 or 5 times a power of ten, >= raw. */
static double nice_step(double raw)
{
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    double m = f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10;
    return m * mag;
}

/* 1, 2 or 5 times a power of ten, nearest to raw (for data axes: the axis
 * then wastes less of the plot than with the next step up). */
static double nice_step_near(double raw)
{
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    double m = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    return m * mag;
}

#define MAX_TICKS 24

typedef struct ticks {
    int n;
    double v[MAX_TICKS];    /* positions, in axis units (log10 of the value on a log axis) */
    char label[MAX_TICKS][32];
    int n_minor;
    double minor[MAX_TICKS * 8];
} ticks;

/* Tick labels for multiples of `step`: enough decimals for the step. */
static void linear_label(char *s, size_t cap, double v, double step, double maxabs)
{
    if (fabs(v) < step * 1e-6) v = 0;
    if (!(maxabs > 0)) maxabs = step;
    if (maxabs >= 1e6 || step < 1e-5) {
        int digits = (int)floor(log10(maxabs)) - (int)floor(log10(step) + 1e-9) + 1;
        if (digits < 1) digits = 1;
        if (digits > 15) digits = 15;
        snprintf(s, cap, "%.*g", digits, v);
    } else {
        int dec = -(int)floor(log10(step) + 1e-9);
        if (dec < 0) dec = 0;
        snprintf(s, cap, "%.*f", dec, v);
    }
}

/* Round ticks inside [lo, hi] (ends included when round), at most about
 * `target` + 1 of them. */
static void ticks_inside(ticks *t, double lo, double hi, int target)
{
    t->n = 0;
    t->n_minor = 0;
    if (!(hi > lo) || !isfinite(hi - lo)) {
        t->n = 1;
        t->v[0] = lo;
        fmt_value(t->label[0], sizeof t->label[0], lo);
        return;
    }
    double step = nice_step((hi - lo) / target);
    double k0 = ceil(lo / step - 1e-9), k1 = floor(hi / step + 1e-9);
    double maxabs = fmax(fabs(k0 * step), fabs(k1 * step));
    for (double k = k0; k <= k1 && t->n < MAX_TICKS; k++) {
        t->v[t->n] = k * step;
        linear_label(t->label[t->n], sizeof t->label[0], k * step, step, maxabs);
        t->n++;
    }
}

/* A linear axis over [mn, mx] widened to round ends. */
static void axis_linear(double mn, double mx, double *lo, double *hi, ticks *t)
{
    if (!(mn <= mx)) mn = 0, mx = 1; /* no data */
    if (mn == mx) {
        double d = mn == 0 ? 1 : fabs(mn) * 0.1;
        mn -= d, mx += d;
    }
    if (!isfinite(mx - mn)) { /* spans more than the doubles: no rounding */
        *lo = mn, *hi = mx;
        t->n = 2, t->n_minor = 0;
        t->v[0] = mn, t->v[1] = mx;
        fmt_value(t->label[0], sizeof t->label[0], mn);
        fmt_value(t->label[1], sizeof t->label[1], mx);
        return;
    }
    double step = nice_step_near((mx - mn) / 5);
    *lo = floor(mn / step + 1e-9) * step;
    *hi = ceil(mx / step - 1e-9) * step;
    ticks_inside(t, *lo, *hi, (int)floor((*hi - *lo) / step + 0.5)); /* one tick per step */
}

static const char *const superscript[10] = {"\xe2\x81\xb0", "\xc2\xb9", "\xc2\xb2", "\xc2\xb3", "\xe2\x81\xb4",
                                            "\xe2\x81\xb5", "\xe2\x81\xb6", "\xe2\x81\xb7", "\xe2\x81\xb8", "\xe2\x81\xb9"};

/* 10^k as "0.001" ... "1000", or with powers as "10⁻⁵" (superscript
 * digits); an axis uses one style for all its labels. */
static void decade_label(char *s, size_t cap, int k, bool powers)
{
    if (!powers) {
        snprintf(s, cap, "%.*f", k < 0 ? -k : 0, pow(10, k));
        return;
    }
    char digits[16];
    snprintf(digits, sizeof digits, "%d", k < 0 ? -k : k);
    size_t n = (size_t)snprintf(s, cap, "10%s", k < 0 ? "\xe2\x81\xbb" : ""); /* ⁻ */
    for (const char *d = digits; *d && n + 4 < cap; d++) {
        strcpy(s + n, superscript[*d - '0']);
        n += strlen(superscript[*d - '0']);
    }
}

/* A log10 axis over positive [mn, mx]: whole decades, labelled every
 * `every` decades (at most 10 labels), minor ticks at 2..9 when few decades. */
static void axis_log(double mn, double mx, double *lo, double *hi, ticks *t)
{
    if (!(mn <= mx)) mn = 1, mx = 10;
    int k0 = (int)floor(log10(mn) + 1e-12), k1 = (int)ceil(log10(mx) - 1e-12);
    if (k1 <= k0) k1 = k0 + 1;
    *lo = k0, *hi = k1;
    int every = (k1 - k0 + 9) / 10;
    bool powers = k0 < -3 || k1 > 3; /* one style per axis: powers when any label needs one */
    t->n = 0;
    t->n_minor = 0;
    for (int k = k0; k <= k1 && t->n < MAX_TICKS; k++) {
        if ((k - k0) % every) continue;
        t->v[t->n] = k;
        decade_label(t->label[t->n], sizeof t->label[0], k, powers);
        t->n++;
    }
    if (k1 - k0 <= 6)
        for (int k = k0; k < k1; k++)
            for (int m = 2; m <= 9; m++) t->minor[t->n_minor++] = k + log10((double)m);
}

/* -------------------------------------------------------------- write -- */

/* Writes the buffer to a temporary beside path, then renames it over path. */
static bool write_atomic(const char *path, const svgbuf *b, char *err, size_t err_cap)
{
    kgl_outfile o;
    if (!kgl_outfile_open(&o, path, err, err_cap)) return false;
    if (fwrite(b->p, 1, b->len, o.f) != b->len) {
        kgl_path_error(err, err_cap, path, "cannot write: %s", strerror(errno ? errno : EIO));
        kgl_outfile_discard(&o);
        return false;
    }
    return kgl_outfile_commit(&o, err, err_cap);
}

static void svg_begin(svgbuf *b, double w, double h, const char *title)
{
    sb_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    sb_printf(b,
              "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%s\" height=\"%s\" "
              "viewBox=\"0 0 %s %s\" font-family=\"%s\" font-size=\"11\">\n",
              N(b, ceil(w)), N(b, ceil(h)), N(b, ceil(w)), N(b, ceil(h)), FONT_FAMILY);
    if (title) {
        sb_puts(b, "<title>");
        sb_text(b, title);
        sb_puts(b, "</title>\n");
    }
    sb_puts(b, "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
}

/* A text element; anchor "start", "middle" or "end"; rotation in degrees. */
static void put_text(svgbuf *b, double x, double y, const char *anchor, double size, const char *extra, double rot,
                     const char *s, double max_em)
{
    sb_printf(b, "<text x=\"%s\" y=\"%s\"", N(b, x), N(b, y));
    if (anchor && strcmp(anchor, "start") != 0) sb_printf(b, " text-anchor=\"%s\"", anchor);
    if (size > 0) sb_printf(b, " font-size=\"%s\"", N(b, size));
    if (rot != 0) sb_printf(b, " transform=\"rotate(%s %s %s)\"", N(b, rot), N(b, x), N(b, y));
    if (extra) sb_printf(b, " %s", extra);
    sb_puts(b, ">");
    sb_label(b, s, max_em);
    sb_puts(b, "</text>\n");
}

/* ------------------------------------------------------- wrapped text -- */

#define MAX_LINES 12   /* a text that needs more lines is shortened with … on the last */
#define LINE_GAP 1.25  /* baseline to baseline of wrapped lines, in font sizes */

/* A text broken into lines no wider than a width: at spaces, and inside a
 * word only where the word alone is wider than the width, so that a title
 * is never cut. */
typedef struct wrapped {
    const char *s;
    int n;                                   /* lines (0: no text) */
    size_t start[MAX_LINES], end[MAX_LINES]; /* line k is s[start[k] .. end[k]) */
    double w;                                /* the widest line, px */
    double max_em;                           /* > 0: the last line is shortened to this */
} wrapped;

static void wrap(wrapped *wr, const char *s, double font, bool bold, double max_w)
{
    wr->s = s;
    wr->n = 0;
    wr->w = 0;
    wr->max_em = 0;
    if (!s || !*s) return;
    const unsigned char *p = (const unsigned char *)s;
    double px = font * (bold ? BOLD_WIDTH : 1);
    size_t start = 0;
    while (p[start] == ' ') start++;
    while (p[start]) {
        double w = 0, space_w = 0;
        size_t i = start, space = 0; /* the last space the line may end at */
        while (p[i]) {
            unsigned cp = 0xfffd;
            int k = xml_char(p + i, &cp);
            if (k <= 0) k = k ? -k : 1, cp = 0xfffd;
            if (p[i] == ' ') space = i, space_w = w;
            double cw = char_em(cp) * px;
            if (w + cw > max_w && i > start) break;
            w += cw;
            i += (size_t)k;
        }
        size_t end = i, next = i;
        if (p[i] && space > start) end = space, next = space + 1, w = space_w;
        if (wr->n == MAX_LINES - 1 && p[next]) { /* the last line takes the rest, shortened */
            end = strlen(s);
            w = max_w;
            wr->max_em = max_w / px;
        }
        while (end > start && p[end - 1] == ' ') end--;
        wr->start[wr->n] = start;
        wr->end[wr->n] = end;
        wr->n++;
        wr->w = fmax(wr->w, w);
        if (wr->max_em > 0) break;
        start = next;
        while (p[start] == ' ') start++;
    }
}

/* The lines of wr as text elements, the first baseline at (x, y), each next
 * one `step` px further down the text (rotated with it). */
static void put_wrapped(svgbuf *b, const wrapped *wr, double x, double y, double step, const char *anchor,
                        double size, const char *extra, double rot)
{
    double a = rot * 3.14159265358979323846 / 180, dx = -sin(a) * step, dy = cos(a) * step;
    for (int k = 0; k < wr->n; k++) {
        size_t len = wr->end[k] - wr->start[k];
        char *line = kgl_xmalloc(len + 1);
        memcpy(line, wr->s + wr->start[k], len);
        line[len] = 0;
        put_text(b, x + k * dx, y + k * dy, anchor, size, extra, rot, line, k == wr->n - 1 ? wr->max_em : 0);
        free(line);
    }
}

/* Height of a wrapped text's lines at `font`: the first line 1 em, each next LINE_GAP em. */
static double wrapped_h(const wrapped *wr, double font)
{
    return wr->n ? font * (1 + (wr->n - 1) * LINE_GAP) : 0;
}

/* ------------------------------------------------------------ heatmap -- */

#define PAD 12.0
#define TITLE_FONT 15.0
#define PANEL_TITLE_FONT 13.0
#define AXIS_FONT 12.0
#define TICK_FONT 10.0
#define BAR_W 14.0
#define LABELLED_MAX 80     /* up to this many rows or columns, cells of at least 11 px: every label shows */
#define LOG_DECADES 4.0     /* a log scale from the data spans at most this many decades */
#define RATIO_OCTAVES 10    /* a ratio scale from the data spans at most 1/2^10 .. 2^10 */
#define LEGEND_TEXT_W 210.0 /* the legend's title and statement wrap at this width, px */
#define NOTE_FONT 11.0
#define NOTE_EM 40.0        /* notes wrap at this many em */

/* ---- what is drawn: every row and column, or the largest ones ---- */

typedef struct hm_view {
    int rows, cols;      /* drawn */
    int *ri, *ci;        /* drawn row i is row ri[i] of the data, drawn column j is column ci[j] */
    double *rlo, *rhi;   /* a row scale's bounds, per drawn row */
    double *rmax;        /* the largest finite value of each drawn row (0 when none) */
    double total, drawn; /* sums of |value| over the finite cells: all of them, the drawn ones */
    double rest_lo, rest_hi; /* the finite values of the cells not drawn (NAN: none) */
    long outlined_all;   /* outlined cells, drawn or not */
} hm_view;

static double view_at(const kgl_heatmap *h, const hm_view *v, int i, int j)
{
    return h->values[(size_t)v->ri[i] * h->cols + v->ci[j]];
}

static bool view_outlined(const kgl_heatmap *h, const hm_view *v, int i, int j)
{
    return h->outline && h->outline[(size_t)v->ri[i] * h->cols + v->ci[j]];
}

typedef struct ranked {
    double key;
    int i;
} ranked;

static int by_key_then_index(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int by_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* out[0 .. k): the indices of the k largest keys (ties: the lower index), ascending. */
static void largest(const double *key, int n, int k, int *out)
{
    ranked *r = kgl_xmalloc((size_t)n * sizeof *r);
    for (int i = 0; i < n; i++) r[i] = (ranked){key[i], i};
    qsort(r, (size_t)n, sizeof *r, by_key_then_index);
    for (int i = 0; i < k; i++) out[i] = r[i].i;
    free(r);
    qsort(out, (size_t)k, sizeof *out, by_int);
}

/* Chooses what of h is drawn: at most max_cols columns, those with the
 * largest sums of |value|, then at most max_rows rows, those with the
 * largest sums over the chosen columns, so the drawn block holds as much of
 * the matrix as a greedy choice finds; both in their order in the data. */
static void view_select(const kgl_heatmap *h, hm_view *v)
{
    int R = h->rows, C = h->cols;
    v->rows = h->max_rows > 0 && R > h->max_rows ? h->max_rows : R;
    v->cols = h->max_cols > 0 && C > h->max_cols ? h->max_cols : C;
    v->ri = kgl_xmalloc((size_t)R * sizeof *v->ri);
    v->ci = kgl_xmalloc((size_t)C * sizeof *v->ci);
    v->rlo = kgl_xmalloc((size_t)R * sizeof *v->rlo);
    v->rhi = kgl_xmalloc((size_t)R * sizeof *v->rhi);
    v->rmax = kgl_xmalloc((size_t)R * sizeof *v->rmax);
    double *sum = kgl_xcalloc((size_t)(R > C ? R : C), sizeof *sum);
    if (v->cols < C) {
        for (size_t k = 0; k < (size_t)R * C; k++)
            if (isfinite(h->values[k])) sum[k % C] += fabs(h->values[k]);
        largest(sum, C, v->cols, v->ci);
    } else {
        for (int j = 0; j < C; j++) v->ci[j] = j;
    }
    if (v->rows < R) {
        memset(sum, 0, (size_t)(R > C ? R : C) * sizeof *sum);
        for (int i = 0; i < R; i++)
            for (int j = 0; j < v->cols; j++) {
                double x = h->values[(size_t)i * C + v->ci[j]];
                if (isfinite(x)) sum[i] += fabs(x);
            }
        largest(sum, R, v->rows, v->ri);
    } else {
        for (int i = 0; i < R; i++) v->ri[i] = i;
    }
    free(sum);
    bool *row_on = kgl_xcalloc((size_t)R, 1), *col_on = kgl_xcalloc((size_t)C, 1);
    for (int i = 0; i < v->rows; i++) row_on[v->ri[i]] = true;
    for (int j = 0; j < v->cols; j++) col_on[v->ci[j]] = true;
    v->total = v->drawn = 0;
    v->rest_lo = v->rest_hi = NAN;
    v->outlined_all = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            size_t k = (size_t)i * C + j;
            double x = h->values[k];
            v->outlined_all += h->outline && h->outline[k];
            if (!isfinite(x)) continue;
            v->total += fabs(x);
            if (row_on[i] && col_on[j]) {
                v->drawn += fabs(x);
            } else {
                v->rest_lo = isnan(v->rest_lo) ? x : fmin(v->rest_lo, x);
                v->rest_hi = isnan(v->rest_hi) ? x : fmax(v->rest_hi, x);
            }
        }
    free(row_on);
    free(col_on);
}

static void view_free(hm_view *v)
{
    free(v->ri);
    free(v->ci);
    free(v->rlo);
    free(v->rhi);
    free(v->rmax);
}

/* ---- the colour scale ---- */

typedef struct hm_scale {
    kgl_colour_scale mode; /* LINEAR, LOG, ROW or RATIO, once AUTO is resolved */
    bool automatic;        /* chosen from the data */
    bool fixed;            /* a bound came from vmin / vmax */
    bool no_positive;      /* LOG asked for, but no value is positive: linear */
    bool negative_row;     /* ROW: some row starts below 0 */
    double lo, hi;         /* the bar's ends (ROW: 0 and 1; RATIO: 1/hi and hi) */
} hm_scale;

/* The colour of place t (0..1) on the scale: viridis, or the diverging map
   of a ratio scale. */
static void scale_colour(const hm_scale *s, double t, unsigned char rgb[3])
{
    colour_map(s->mode == KGL_COLOUR_RATIO ? diverging_anchor : viridis_anchor, t, rgb);
}

/* The 95th percentile of the drawn finite values of every panel. */
static double drawn_p95(const kgl_heatmap *panels, const hm_view *views, int n)
{
    size_t cap = 0, m = 0;
    for (int p = 0; p < n; p++) cap += (size_t)views[p].rows * views[p].cols;
    double *all = kgl_xmalloc((cap ? cap : 1) * sizeof *all);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < views[p].rows; i++)
            for (int j = 0; j < views[p].cols; j++) {
                double x = view_at(&panels[p], &views[p], i, j);
                if (isfinite(x)) all[m++] = x;
            }
    double q = NAN;
    if (m) {
        ranked *r = kgl_xmalloc(m * sizeof *r);
        for (size_t k = 0; k < m; k++) r[k] = (ranked){all[k], 0};
        qsort(r, m, sizeof *r, by_key_then_index); /* descending */
        q = r[(size_t)floor(0.05 * (double)(m - 1))].key;
        free(r);
    }
    free(all);
    return q;
}

/* One scale for every panel: LINEAR from the smallest to the largest of the
 * panels' bounds (vmin / vmax when set, else their drawn finite data); LOG
 * from the largest down to the smallest positive value, at most LOG_DECADES
 * decades; ROW per drawn row; AUTO: LOG when the data are >= 0 and 95% of
 * the cells would take the darkest tenth of the linear scale, else LINEAR. */
static void scale_resolve(const kgl_heatmap *panels, hm_view *views, int n, hm_scale *s)
{
    memset(s, 0, sizeof *s);
    double lo = INFINITY, hi = -INFINITY, pos = INFINITY;
    bool negative = false, lo_fixed = false, hi_fixed = false;
    for (int p = 0; p < n; p++) {
        const kgl_heatmap *h = &panels[p];
        hm_view *v = &views[p];
        double mn = INFINITY, mx = -INFINITY;
        for (int i = 0; i < v->rows; i++) {
            double rmn = INFINITY, rmx = -INFINITY;
            for (int j = 0; j < v->cols; j++) {
                double x = view_at(h, v, i, j);
                if (!isfinite(x)) continue;
                rmn = fmin(rmn, x), rmx = fmax(rmx, x);
                if (x > 0) pos = fmin(pos, x);
            }
            mn = fmin(mn, rmn), mx = fmax(mx, rmx);
            v->rlo[i] = rmn < 0 ? rmn : 0;
            v->rmax[i] = rmx > -INFINITY ? rmx : 0;
            v->rhi[i] = rmx > v->rlo[i] ? rmx : v->rlo[i] + 1; /* a row of zeros (or nothing finite) */
            s->negative_row |= rmn < 0;
        }
        negative |= mn < 0;
        bool set = h->vmin != h->vmax;
        if (set && isfinite(h->vmin)) mn = h->vmin, lo_fixed = true;
        if (set && isfinite(h->vmax)) mx = h->vmax, hi_fixed = true;
        lo = fmin(lo, mn), hi = fmax(hi, mx);
    }
    kgl_colour_scale want = panels[0].scale;
    if (want == KGL_COLOUR_AUTO) {
        s->automatic = true;
        want = KGL_COLOUR_LINEAR;
        if (!negative && hi > 0 && lo < hi && drawn_p95(panels, views, n) < lo + 0.1 * (hi - lo)) want = KGL_COLOUR_LOG;
    }
    s->mode = want;
    if (want == KGL_COLOUR_RATIO) {
        /* symmetric about 1 in log2: the largest value sets both ends, a
           whole number of octaves above 1 (the smallest positive value when
           none is above 1), from 1 to RATIO_OCTAVES, so values near 1 stay
           near the neutral middle. Weights (x n) have a largest value >= 1,
           and what lies above uniform is what a picture must show. */
        double octaves = 1;
        if (hi_fixed && hi > 1) {
            s->fixed = true;
            octaves = log2(hi);
        } else {
            if (hi > 1) octaves = ceil(log2(hi) - 1e-9);
            else if (pos < INFINITY) octaves = ceil(-log2(pos) - 1e-9);
            octaves = fmin(fmax(octaves, 1), RATIO_OCTAVES);
        }
        s->hi = exp2(octaves), s->lo = exp2(-octaves);
        return;
    }
    if (want == KGL_COLOUR_ROW) {
        s->lo = 0, s->hi = 1;
        return;
    }
    if (want == KGL_COLOUR_LOG) {
        if (hi > 0) {
            s->fixed = hi_fixed || (lo_fixed && lo > 0);
            double floor_ = hi * pow(10, -LOG_DECADES);
            s->hi = hi;
            s->lo = lo_fixed && lo > 0 ? lo : fmax(pos, floor_);
            if (!(s->lo < s->hi)) s->lo = s->hi / 10;
            return;
        }
        s->mode = KGL_COLOUR_LINEAR, s->no_positive = true;
    }
    s->fixed = lo_fixed || hi_fixed;
    if (!(lo <= hi)) lo = 0, hi = 1; /* nothing finite */
    if (lo == hi) lo -= 0.5, hi += 0.5;
    s->lo = lo, s->hi = hi;
}

/* Where x, in drawn row i of v, falls on the scale: 0 to 1; *side is -1
 * below the scale, +1 above it, else 0. */
static double scale_at(const hm_scale *s, const hm_view *v, int i, double x, int *side)
{
    double lo = s->lo, hi = s->hi, u = x;
    if (s->mode == KGL_COLOUR_ROW) {
        lo = v->rlo[i], hi = v->rhi[i];
    } else if (s->mode == KGL_COLOUR_LOG) {
        if (!(x > 0)) return *side = -1, 0;
        u = log10(x), lo = log10(lo), hi = log10(hi);
    } else if (s->mode == KGL_COLOUR_RATIO) {
        if (!(x > 0)) return *side = -1, 0;
        u = log2(x), lo = log2(lo), hi = log2(hi);
    }
    *side = u < lo ? -1 : u > hi ? 1 : 0;
    return frac(u, lo, hi);
}

/* What the legend says of the scale, under its title. */
static void scale_statement(const hm_scale *s, bool grid, char *out, size_t cap)
{
    const char *shared = grid ? "one scale for every panel: " : "";
    if (s->mode == KGL_COLOUR_ROW)
        snprintf(out, cap, "each row on its own scale, from %s to its maximum (printed right of the row)",
                 s->negative_row ? "0 or its minimum" : "0");
    else if (s->mode == KGL_COLOUR_LOG)
        snprintf(out, cap, "%slog scale%s%s", shared,
                 s->automatic ? " (automatic: on a linear one, 95% of the cells would take its darkest tenth)" : "",
                 s->fixed ? "" : ", at most 4 decades below the largest value");
    else if (s->mode == KGL_COLOUR_RATIO)
        snprintf(out, cap, "%slog scale centred on 1: 1 the neutral colour, blue below it, red above, as far each "
                 "way%s", shared, s->fixed ? "" : " (up to the power of 2 at or above the largest value, at least 2, "
                 "at most 1024)");
    else if (s->no_positive)
        snprintf(out, cap, "%slinear scale (no value is positive, so no log scale)", shared);
    else
        snprintf(out, cap, "%slinear scale%s%s", shared, s->fixed ? "" : ", from the smallest value to the largest",
                 s->automatic ? " (automatic: the values spread over it)" : "");
}

/* ---- layout ---- */

typedef struct hm_geom {
    int cell;                 /* px per cell */
    double font;              /* label font size */
    int every_row, every_col; /* every k-th row / column label shown */
    double row_w;             /* widest shown row label, px */
    double col_w;             /* widest shown column label before rotation, px */
    double max_w;             /* ROW scale: widest row maximum printed right of the grid */
    char *row_axis, *col_axis, *key, *summary; /* texts around the grid (malloc'd), or NULL */
    wrapped title_l, row_axis_l, col_axis_l, key_l, summary_l;
    double text_w;            /* the room the texts under the grid wrap to */
    double gx, gy;            /* grid origin inside the panel */
    double below;             /* height under the cells: column labels, axis title, key, summary */
    double w, h;              /* panel size */
} hm_geom;

/* Panel size from the grid origin (which a grid of panels aligns). */
static void hm_size(const hm_view *v, const hm_scale *s, hm_geom *g)
{
    double right = (s->mode == KGL_COLOUR_ROW ? 8 + g->max_w : 0) + PAD;
    double texts = fmax(fmax(g->col_axis_l.w, g->summary_l.w), g->key_l.w + 18);
    g->w = fmax(g->gx + (double)g->cell * v->cols + right, 2 * PAD + texts);
    g->h = g->gy + (double)g->cell * v->rows + g->below;
}

/* The label of row or column i: the name, or the index. */
static const char *label_of(const char *const *names, int i, char *buf, size_t cap)
{
    if (names && names[i]) return names[i];
    snprintf(buf, cap, "%d", i);
    return buf;
}

/* The smallest k in 1, 2, 5, 10, ... for which labels k cells apart are at
 * least 1.1 font sizes apart across their text (text boxes are 1 em tall).
 * Row labels are `cell` apart; column labels are rotated 45°, so their
 * spacing across the text is cell·k/√2. */
static int label_step(int cell, double font, bool rotated)
{
    static const int steps[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000};
    double across = rotated ? 0.7071 : 1.0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (cell * steps[i] * across >= font * 1.1) return steps[i];
    return 10000;
}

/* An axis title, with "(every k-th labelled)" when labels are thinned (a
 * default title when there is none: the omission is always said). */
static char *axis_title(const char *title, const char *fallback, int every)
{
    if (every == 1) return title ? kgl_strdup(title) : NULL;
    char ord[16];
    snprintf(ord, sizeof ord, every == 2 ? "2nd" : "%dth", every);
    const char *t = title ? title : fallback;
    size_t cap = strlen(t) + 40;
    char *s = kgl_xmalloc(cap);
    snprintf(s, cap, "%s (every %s labelled)", t, ord);
    return s;
}

/* "the 64 of 1000 columns with the largest sums, and the 64 of 1000 rows
 * with the largest sums over them: 29% of the total weight; the cells not
 * drawn hold values from 0 to 0.0021" — what a partial view leaves out. */
static char *view_summary(const kgl_heatmap *h, const hm_view *v)
{
    if (v->rows == h->rows && v->cols == h->cols) return NULL;
    char rows[96] = "", cols[96] = "", rest[128] = "", share[160] = "";
    if (v->cols < h->cols) snprintf(cols, sizeof cols, "the %d of %d columns with the largest sums", v->cols, h->cols);
    if (v->rows < h->rows)
        snprintf(rows, sizeof rows, "the %d of %d rows with the largest sums%s", v->rows, h->rows,
                 *cols ? " over them" : "");
    if (v->total > 0) {
        const char *what = h->value_label ? h->value_label : "|value|";
        snprintf(share, sizeof share, ": %.3g%% of the total %.*s", 100 * v->drawn / v->total,
                 (int)kgl_utf8_prefix(what, SIZE_MAX, 100), what);
    }
    if (!isnan(v->rest_lo)) {
        char a[32], b[32];
        fmt_value(a, sizeof a, v->rest_lo);
        fmt_value(b, sizeof b, v->rest_hi);
        snprintf(rest, sizeof rest, "; the cells not drawn hold values from %s to %s", a, b);
    }
    size_t cap = 600;
    char *s = kgl_xmalloc(cap);
    snprintf(s, cap, "Drawn: %s%s%s%s%s", cols, *cols && *rows ? ", and " : "", rows, share, rest);
    return s;
}

/* The room a column axis title takes under the column labels. */
static double col_axis_h(const wrapped *wr)
{
    return wr->n ? AXIS_FONT * (1.8 + (wr->n - 1) * LINE_GAP) : 0;
}

static void hm_layout(const kgl_heatmap *h, const hm_view *v, const hm_scale *s, int cell, bool grid, hm_geom *g)
{
    g->cell = cell;
    /* 0.64 of a cell: from 11 px cells on, every rotated column label fits */
    g->font = fmin(12, fmax(7, cell * 0.64));
    g->every_row = label_step(cell, g->font, false);
    g->every_col = label_step(cell, g->font, true);
    char buf[32];
    g->row_w = g->col_w = g->max_w = 0;
    for (int i = 0; i < v->rows; i += g->every_row) {
        g->row_w = fmax(g->row_w, text_em(label_of(h->row_labels, v->ri[i], buf, sizeof buf), LABEL_EM) * g->font);
        if (s->mode == KGL_COLOUR_ROW) {
            fmt_value(buf, sizeof buf, v->rmax[i]);
            g->max_w = fmax(g->max_w, text_em(buf, 0) * g->font);
        }
    }
    for (int j = 0; j < v->cols; j += g->every_col)
        g->col_w = fmax(g->col_w, text_em(label_of(h->col_labels, v->ci[j], buf, sizeof buf), LABEL_EM) * g->font);
    g->row_axis = axis_title(h->row_axis, "rows", g->every_row);
    g->col_axis = axis_title(h->col_axis, "columns", g->every_col);
    g->key = NULL;
    if (grid && h->outline) { /* a grid panel's own outlined cells: what they are and how many */
        long drawn = 0;
        for (int i = 0; i < v->rows; i++)
            for (int j = 0; j < v->cols; j++) drawn += view_outlined(h, v, i, j);
        const char *ol = h->outline_label ? h->outline_label : "outlined";
        size_t cap = strlen(ol) + 64;
        g->key = kgl_xmalloc(cap);
        if (drawn == v->outlined_all)
            snprintf(g->key, cap, "%s (%ld)", ol, drawn);
        else
            snprintf(g->key, cap, "%s (%ld drawn of %ld)", ol, drawn, v->outlined_all);
    }
    g->summary = view_summary(h, v);

    double grid_w = (double)cell * v->cols, grid_h = (double)cell * v->rows;
    wrap(&g->row_axis_l, g->row_axis, AXIS_FONT, false, fmax(grid_h, 40));
    double axis_w = g->row_axis_l.n ? AXIS_FONT * (1.6 + (g->row_axis_l.n - 1) * LINE_GAP) : 0;
    double diag = g->col_w * 0.7071 + g->font * 0.5; /* how far a column label reaches down and left */
    g->gx = ceil(fmax(PAD + axis_w + g->row_w + 6, PAD + diag - cell * 0.5));
    double right = (s->mode == KGL_COLOUR_ROW ? 8 + g->max_w : 0) + PAD;
    g->text_w = fmax(g->gx + grid_w + right - 2 * PAD, 240);
    wrap(&g->col_axis_l, g->col_axis, AXIS_FONT, false, g->text_w);
    wrap(&g->key_l, g->key, TICK_FONT, false, g->text_w - 18);
    wrap(&g->summary_l, g->summary, TICK_FONT, false, g->text_w);
    g->below = 6 + diag + col_axis_h(&g->col_axis_l) +
               (g->key_l.n ? 8 + fmax(12, wrapped_h(&g->key_l, TICK_FONT)) : 0) +
               (g->summary_l.n ? 8 + wrapped_h(&g->summary_l, TICK_FONT) : 0) + PAD;
    g->gy = 0;
    hm_size(v, s, g);
    /* a panel's title wraps to the panel */
    wrap(&g->title_l, grid ? h->title : NULL, PANEL_TITLE_FONT, true, g->w - 2 * PAD);
    g->gy = g->title_l.n ? ceil(PAD + PANEL_TITLE_FONT * (1.6 + (g->title_l.n - 1) * LINE_GAP)) : 0;
    hm_size(v, s, g);
}

static void hm_geom_free(hm_geom *g)
{
    free(g->row_axis);
    free(g->col_axis);
    free(g->key);
    free(g->summary);
}

typedef struct hm_counts {
    long outlined, nonfinite, below, above;
} hm_counts;

/* The outline key's swatch: grey, a black box and a white one inside it. */
static void outline_swatch(svgbuf *b, double x, double y, double s)
{
    double sw = s > 13 ? 3 : 2.5, in = sw / 2;
    sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#bbbbbb\"/>", N(b, x), N(b, y), N(b, s),
              N(b, s));
    sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"#000000\" "
                 "stroke-width=\"%s\"/>", N(b, x + in), N(b, y + in), N(b, s - sw), N(b, s - sw), N(b, sw));
    sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"#ffffff\" "
                 "stroke-width=\"%s\"/>\n", N(b, x + in), N(b, y + in), N(b, s - sw), N(b, s - sw), N(b, sw * 0.4));
}

/* One cell: its colour (counted below or above the scale, or not finite),
 * its outline class and its tooltip "row → column: value". */
static void hm_cell(svgbuf *b, const kgl_heatmap *h, const hm_view *v, const hm_geom *g, const hm_scale *s, int i,
                    int j, const char *row_label, hm_counts *cnt)
{
    int cell = g->cell;
    char cbuf[16], val[32];
    double x = view_at(h, v, i, j);
    bool out = view_outlined(h, v, i, j);
    char fill[24];
    if (isfinite(x)) {
        unsigned char rgb[3];
        int side;
        scale_colour(s, scale_at(s, v, i, x, &side), rgb);
        snprintf(fill, sizeof fill, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
        cnt->below += side < 0;
        cnt->above += side > 0;
    } else {
        snprintf(fill, sizeof fill, "url(#kgl-nan)");
        cnt->nonfinite++;
    }
    if (out) cnt->outlined++;
    sb_printf(b, "<rect class=\"cell%s\" x=\"%s\" y=\"%s\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>",
              out ? " outlined" : "", N(b, g->gx + (double)j * cell), N(b, g->gy + (double)i * cell), cell,
              cell, fill);
    sb_text_capped(b, row_label, CELL_NAME_BYTES);
    sb_puts(b, " \xe2\x86\x92 "); /* → */
    sb_text_capped(b, label_of(h->col_labels, v->ci[j], cbuf, sizeof cbuf), CELL_NAME_BYTES);
    fmt_value(val, sizeof val, x);
    sb_printf(b, ": %s", val);
    if (!isfinite(x)) sb_puts(b, " (not finite: drawn hatched grey)");
    if (out) {
        sb_puts(b, " [");
        sb_text_capped(b, h->outline_label ? h->outline_label : "outlined", CELL_NAME_BYTES);
        sb_puts(b, "]");
    }
    sb_puts(b, "</title></rect>\n");
}

static void hm_cells(svgbuf *b, const kgl_heatmap *h, const hm_view *v, const hm_geom *g, const hm_scale *s,
                     hm_counts *cnt)
{
    char rbuf[16];
    sb_puts(b, "<g class=\"cells\" shape-rendering=\"crispEdges\">\n");
    for (int i = 0; i < v->rows; i++) {
        const char *rl = label_of(h->row_labels, v->ri[i], rbuf, sizeof rbuf);
        for (int j = 0; j < v->cols; j++) hm_cell(b, h, v, g, s, i, j, rl, cnt);
    }
    sb_puts(b, "</g>\n");
}

/* Values printed in their cells, black or white by the cell's lightness. */
static void hm_values(svgbuf *b, const kgl_heatmap *h, const hm_view *v, const hm_geom *g, const hm_scale *s)
{
    int R = v->rows, C = v->cols, cell = g->cell;
    char val[32];
    double fs = fmin(11, cell * 0.32), amax = 0;
    /* one number of decimals for the panel: two, or enough for two
       significant digits of its largest value (0.0017, not 0.00) */
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            if (isfinite(view_at(h, v, i, j))) amax = fmax(amax, fabs(view_at(h, v, i, j)));
    int decimals = amax > 0 && amax < 0.1 ? 1 - (int)floor(log10(amax)) : 2;
    if (decimals > 6) decimals = 6;
    sb_printf(b, "<g class=\"values\" font-size=\"%s\" text-anchor=\"middle\">\n", N(b, fs));
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            double x = view_at(h, v, i, j);
            if (!isfinite(x)) continue;
            unsigned char rgb[3];
            int side;
            scale_colour(s, scale_at(s, v, i, x, &side), rgb);
            double lum = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
            if (fabs(x) >= 100)
                snprintf(val, sizeof val, "%.3g", x);
            else
                snprintf(val, sizeof val, "%.*f", decimals, x);
            if (strspn(val, "-0.") == strlen(val)) snprintf(val, sizeof val, "%.*f", decimals, 0.0); /* no "-0.00" */
            sb_printf(b, "<text x=\"%s\" y=\"%s\" dy=\"0.35em\" fill=\"%s\"", N(b, g->gx + (j + 0.5) * cell),
                      N(b, g->gy + (i + 0.5) * cell), lum > 110 ? "#000000" : "#ffffff");
            double w = kgl_svg_text_width(val, fs, false);
            if (w > cell - 4) /* a long number ("1.7e-05") shrinks to its cell */
                sb_printf(b, " font-size=\"%s\"", N(b, floor(fs * (cell - 4) / w * 10) / 10));
            sb_printf(b, ">%s</text>\n", val);
        }
    sb_puts(b, "</g>\n");
}

/* Outlines: a black box with a white one inside it, visible on every colour. */
static void hm_outlines(svgbuf *b, const kgl_heatmap *h, const hm_view *v, const hm_geom *g)
{
    int cell = g->cell;
    double sw = fmin(3, fmax(1, cell * 0.1)), in = sw / 2;
    svgbuf path = {0};
    for (int i = 0; i < v->rows; i++)
        for (int j = 0; j < v->cols; j++)
            if (view_outlined(h, v, i, j))
                sb_printf(&path, "M%s %sh%sv%sh-%sz", N(b, g->gx + (double)j * cell + in),
                          N(b, g->gy + (double)i * cell + in), N(b, cell - sw), N(b, cell - sw),
                          N(b, cell - sw));
    if (path.len) {
        sb_printf(b, "<g class=\"outlines\" fill=\"none\">\n<path d=\"%s\" stroke=\"#000000\" stroke-width=\"%s\"/>\n",
                  path.p, N(b, sw));
        sb_printf(b, "<path d=\"%s\" stroke=\"#ffffff\" stroke-width=\"%s\"/>\n</g>\n", path.p, N(b, sw * 0.5));
    }
    free(path.p);
}

/* Row labels, each row's maximum on a row scale, column labels (rotated 45°). */
static void hm_labels(svgbuf *b, const kgl_heatmap *h, const hm_view *v, const hm_geom *g, const hm_scale *s)
{
    int R = v->rows, C = v->cols, cell = g->cell;
    char rbuf[16], cbuf[16], val[32];
    sb_printf(b, "<g class=\"row-labels\" font-size=\"%s\" text-anchor=\"end\">\n", N(b, g->font));
    for (int i = 0; i < R; i += g->every_row) {
        sb_printf(b, "<text x=\"%s\" y=\"%s\" dy=\"0.35em\">", N(b, g->gx - 4), N(b, g->gy + (i + 0.5) * cell));
        sb_label(b, label_of(h->row_labels, v->ri[i], rbuf, sizeof rbuf), LABEL_EM);
        sb_puts(b, "</text>\n");
    }
    sb_puts(b, "</g>\n");
    if (s->mode == KGL_COLOUR_ROW) {
        sb_printf(b, "<g class=\"row-max\" font-size=\"%s\">\n", N(b, g->font));
        for (int i = 0; i < R; i += g->every_row) {
            fmt_value(val, sizeof val, v->rmax[i]);
            sb_printf(b, "<text x=\"%s\" y=\"%s\" dy=\"0.35em\">%s</text>\n", N(b, g->gx + (double)cell * C + 4),
                      N(b, g->gy + (i + 0.5) * cell), val);
        }
        sb_puts(b, "</g>\n");
    }
    double by = g->gy + (double)cell * R;
    sb_printf(b, "<g class=\"col-labels\" font-size=\"%s\" text-anchor=\"end\">\n", N(b, g->font));
    for (int j = 0; j < C; j += g->every_col) {
        double x = g->gx + (j + 0.5) * cell, y = by + 4;
        sb_printf(b, "<text x=\"%s\" y=\"%s\" dy=\"0.35em\" transform=\"rotate(-45 %s %s)\">", N(b, x), N(b, y),
                  N(b, x), N(b, y));
        sb_label(b, label_of(h->col_labels, v->ci[j], cbuf, sizeof cbuf), LABEL_EM);
        sb_puts(b, "</text>\n");
    }
    sb_puts(b, "</g>\n");
}

/* Axis titles, then under the column title the panel's outline key and
 * its summary of what is not drawn. */
static void hm_titles_and_notes(svgbuf *b, const hm_view *v, const hm_geom *g)
{
    int cell = g->cell, R = v->rows;
    double by = g->gy + (double)cell * R;
    /* the row axis rotated, its lines towards the grid */
    if (g->row_axis_l.n) {
        double x = g->gx - g->row_w - 10 - AXIS_FONT * 0.3 - (g->row_axis_l.n - 1) * AXIS_FONT * LINE_GAP;
        put_wrapped(b, &g->row_axis_l, x, g->gy + cell * R * 0.5, AXIS_FONT * LINE_GAP, "middle", AXIS_FONT,
                    "class=\"axis-title\"", -90);
    }
    double y = by + 6 + g->col_w * 0.7071 + g->font * 0.5;
    if (g->col_axis_l.n) {
        put_wrapped(b, &g->col_axis_l, g->w * 0.5, y + AXIS_FONT * 1.2, AXIS_FONT * LINE_GAP, "middle", AXIS_FONT,
                    "class=\"axis-title\"", 0);
        y += col_axis_h(&g->col_axis_l);
    }
    if (g->key_l.n) { /* this panel's own outlined cells */
        y += 8;
        sb_puts(b, "<g class=\"key\">");
        outline_swatch(b, PAD, y, 12);
        put_wrapped(b, &g->key_l, PAD + 18, y + 6, TICK_FONT * LINE_GAP, "start", TICK_FONT, "dy=\"0.35em\"", 0);
        sb_puts(b, "</g>\n");
        y += fmax(12, wrapped_h(&g->key_l, TICK_FONT));
    }
    if (g->summary_l.n) { /* what is not drawn */
        y += 8;
        put_wrapped(b, &g->summary_l, PAD, y + TICK_FONT * 0.76, TICK_FONT * LINE_GAP, "start", TICK_FONT,
                    "class=\"summary\"", 0);
    }
}

static void hm_panel(svgbuf *b, const kgl_heatmap *h, const hm_view *v, const hm_geom *g, const hm_scale *s,
                     double ox, double oy, hm_counts *cnt)
{
    sb_printf(b, "<g class=\"heatmap\" transform=\"translate(%s %s)\">\n", N(b, ox), N(b, oy));
    if (g->title_l.n) /* centred over the panel */
        put_wrapped(b, &g->title_l, g->w * 0.5, PAD + PANEL_TITLE_FONT, PANEL_TITLE_FONT * LINE_GAP, "middle",
                    PANEL_TITLE_FONT, "font-weight=\"bold\"", 0);
    hm_cells(b, h, v, g, s, cnt);
    if (h->annotate && g->cell >= 24) hm_values(b, h, v, g, s);
    if (h->outline) hm_outlines(b, h, v, g);
    hm_labels(b, h, v, g, s);
    hm_titles_and_notes(b, v, g);
    sb_puts(b, "</g>\n");
}

/* ---- the legend: title, scale, colour bar, special cells, notes ---- */

typedef struct hm_legend {
    const char *value_label, *outline_label;
    const hm_scale *scale;
    double bar_h;
    hm_counts cnt;
    long outlined_all;
    bool any_outline;
    const char *const *notes; /* lines listed under the legend */
    int n_notes;
    char statement[300];
    char lines[4][200];
    int n_lines;
    wrapped title_l, statement_l, lines_l[4], *notes_l;
    double top;  /* the bar's top */
    double w, h; /* size */
} hm_legend;

/* A label of the colour bar: its place (0 at the bottom, 1 at the top) and text. */
typedef struct bar_label {
    double at;
    char text[48];
} bar_label;

/* A ratio scale's label: 4, 1, "1/4" (a power of 2), else the value. */
static void ratio_label(char *s, size_t cap, double v)
{
    double k = log2(v);
    if (fabs(k - round(k)) > 1e-9 || fabs(k) > 60) fmt_value(s, cap, v);
    else if (k >= 0) snprintf(s, cap, "%.0f", v);
    else snprintf(s, cap, "1/%.0f", 1 / v);
}

/* The bar's labels: its two ends (exact, "≤" / "≥" when cells are clamped
 * there), then round values between them (linear: 1, 2 or 5 times a power
 * of ten; log: decades) not too near either end. Returns how many. */
static int bar_labels(const hm_legend *L, bar_label *out, int cap)
{
    const hm_scale *s = L->scale;
    int n = 2;
    if (s->mode == KGL_COLOUR_ROW) {
        snprintf(out[0].text, sizeof out[0].text, "%s", s->negative_row ? "0 or the row's minimum" : "0");
        snprintf(out[1].text, sizeof out[1].text, "the row's maximum");
    } else if (s->mode == KGL_COLOUR_RATIO) {
        char v[32];
        ratio_label(v, sizeof v, s->lo);
        snprintf(out[0].text, sizeof out[0].text, "%s%s", L->cnt.below ? "\xe2\x89\xa4 " : "", v); /* ≤ */
        ratio_label(v, sizeof v, s->hi);
        snprintf(out[1].text, sizeof out[1].text, "%s%s", L->cnt.above ? "\xe2\x89\xa5 " : "", v); /* ≥ */
    } else {
        char v[32];
        fmt_value(v, sizeof v, s->lo);
        snprintf(out[0].text, sizeof out[0].text, "%s%s", L->cnt.below ? "\xe2\x89\xa4 " : "", v); /* ≤ */
        fmt_value(v, sizeof v, s->hi);
        snprintf(out[1].text, sizeof out[1].text, "%s%s", L->cnt.above ? "\xe2\x89\xa5 " : "", v); /* ≥ */
    }
    out[0].at = 0, out[1].at = 1;
    double room = TICK_FONT * 1.3 / L->bar_h; /* the nearest an inner label may come to an end */
    if (s->mode == KGL_COLOUR_LINEAR) {
        ticks t;
        ticks_inside(&t, s->lo, s->hi, 5);
        for (int i = 0; i < t.n && n < cap; i++) {
            double f = frac(t.v[i], s->lo, s->hi);
            if (f < room || f > 1 - room) continue;
            out[n].at = f;
            snprintf(out[n++].text, sizeof out[0].text, "%s", t.label[i]);
        }
    } else if (s->mode == KGL_COLOUR_LOG) {
        double a = log10(s->lo), z = log10(s->hi);
        int k0 = (int)ceil(a - 1e-9), k1 = (int)floor(z + 1e-9);
        bool powers = k0 < -3 || k1 > 3;
        for (int k = k0; k <= k1 && n < cap; k++) {
            double f = frac(k, a, z);
            if (f < room || f > 1 - room) continue;
            out[n].at = f;
            decade_label(out[n++].text, sizeof out[0].text, k, powers);
        }
    } else if (s->mode == KGL_COLOUR_RATIO) { /* powers of 2, 1 among them, at most 9 */
        double e = log2(s->hi);
        int every = (int)ceil(2 * e / 8 - 1e-9), k1 = (int)floor(e + 1e-9) / every * every;
        for (int k = -k1; k <= k1 && n < cap; k += every) {
            double f = frac(k, -e, e);
            if (f < room || f > 1 - room) continue;
            out[n].at = f;
            ratio_label(out[n++].text, sizeof out[0].text, exp2(k));
        }
    }
    return n;
}

static int legend_entries(hm_legend *L)
{
    int n = 0;
    if (L->any_outline) {
        const char *ol = L->outline_label ? L->outline_label : "outlined";
        int keep = (int)kgl_utf8_prefix(ol, SIZE_MAX, 140);
        if (L->cnt.outlined == L->outlined_all)
            snprintf(L->lines[n++], 200, "%.*s (%ld)", keep, ol, L->cnt.outlined);
        else
            snprintf(L->lines[n++], 200, "%.*s (%ld drawn of %ld)", keep, ol, L->cnt.outlined, L->outlined_all);
    }
    if (L->cnt.nonfinite) snprintf(L->lines[n++], 200, "not finite (%ld)", L->cnt.nonfinite);
    if (L->cnt.below) snprintf(L->lines[n++], 200, "below the scale (%ld)", L->cnt.below);
    if (L->cnt.above) snprintf(L->lines[n++], 200, "above the scale (%ld)", L->cnt.above);
    return L->n_lines = n;
}

#define ENTRY_GAP 8.0 /* between the legend's entries */

static void legend_layout(hm_legend *L, bool grid)
{
    scale_statement(L->scale, grid, L->statement, sizeof L->statement);
    wrap(&L->title_l, L->value_label, AXIS_FONT, false, LEGEND_TEXT_W);
    wrap(&L->statement_l, L->statement, TICK_FONT, false, LEGEND_TEXT_W);
    bar_label lab[MAX_TICKS + 2];
    int nl = bar_labels(L, lab, MAX_TICKS + 2);
    double w = fmax(L->title_l.w, L->statement_l.w);
    for (int i = 0; i < nl; i++) w = fmax(w, BAR_W + 7 + text_em(lab[i].text, 0) * TICK_FONT);
    legend_entries(L);
    double h = 0;
    if (L->title_l.n) h += wrapped_h(&L->title_l, AXIS_FONT) + 4;
    h += wrapped_h(&L->statement_l, TICK_FONT) + TICK_FONT; /* and room for the top label's upper half */
    L->top = h;
    h += L->bar_h + 12;
    for (int i = 0; i < L->n_lines; i++) {
        wrap(&L->lines_l[i], L->lines[i], TICK_FONT, false, 30 * TICK_FONT);
        w = fmax(w, BAR_W + 6 + L->lines_l[i].w);
        h += fmax(BAR_W, wrapped_h(&L->lines_l[i], TICK_FONT)) + ENTRY_GAP;
    }
    L->notes_l = L->n_notes ? kgl_xcalloc((size_t)L->n_notes, sizeof *L->notes_l) : NULL;
    if (L->n_notes) h += ENTRY_GAP;
    for (int i = 0; i < L->n_notes; i++) {
        wrap(&L->notes_l[i], L->notes[i] ? L->notes[i] : "", NOTE_FONT, false, NOTE_EM * NOTE_FONT);
        w = fmax(w, L->notes_l[i].w);
        h += fmax(1, L->notes_l[i].n) * NOTE_FONT * LINE_GAP;
    }
    L->w = w, L->h = h;
}

static void legend_draw(svgbuf *b, const hm_legend *L, double x, double y)
{
    const hm_scale *s = L->scale;
    char lo[32], hi[32];
    fmt_value(lo, sizeof lo, s->lo);
    fmt_value(hi, sizeof hi, s->hi);
    static const char *const mode[] = {"viridis", "viridis, log", "viridis, each row on its own", "viridis",
                                       "blue, white, red: log, centred on 1"};
    sb_printf(b, "<g class=\"legend colorbar\" transform=\"translate(%s %s)\">\n<title>colour scale (%s): ",
              N(b, x), N(b, y), mode[s->mode]);
    if (s->mode == KGL_COLOUR_ROW)
        sb_puts(b, "0 to the row's maximum</title>\n");
    else
        sb_printf(b, "%s to %s</title>\n", lo, hi);
    double ty = 0;
    if (L->title_l.n) {
        put_wrapped(b, &L->title_l, 0, AXIS_FONT * 0.76, AXIS_FONT * LINE_GAP, "start", AXIS_FONT, NULL, 0);
        ty += wrapped_h(&L->title_l, AXIS_FONT) + 4;
    }
    put_wrapped(b, &L->statement_l, 0, ty + TICK_FONT * 0.76, TICK_FONT * LINE_GAP, "start", TICK_FONT,
                "class=\"scale\" fill=\"#444444\"", 0);
    double top = L->top;
    sb_printf(b, "<rect x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"url(#kgl-%s)\" stroke=\"#444444\" "
                 "stroke-width=\"0.5\"/>\n",
              N(b, top), N(b, BAR_W), N(b, L->bar_h), s->mode == KGL_COLOUR_RATIO ? "diverging" : "viridis");
    bar_label lab[MAX_TICKS + 2];
    int nl = bar_labels(L, lab, MAX_TICKS + 2);
    sb_printf(b, "<g class=\"ticks\" font-size=\"%s\">\n", N(b, TICK_FONT));
    for (int i = 0; i < nl; i++) {
        double yy = top + L->bar_h * (1 - lab[i].at);
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#444444\"/>\n", N(b, BAR_W), N(b, yy),
                  N(b, BAR_W + 4), N(b, yy));
        sb_printf(b, "<text%s x=\"%s\" y=\"%s\" dy=\"0.35em\">", i == 0 ? " class=\"end lo\"" : i == 1 ? " class=\"end hi\"" : "",
                  N(b, BAR_W + 7), N(b, yy));
        sb_text(b, lab[i].text);
        sb_puts(b, "</text>\n");
    }
    sb_puts(b, "</g>\n");
    double ly = top + L->bar_h + 12;
    for (int k = 0; k < L->n_lines; k++) {
        const char *line = L->lines[k];
        sb_puts(b, "<g class=\"entry\">");
        if (L->any_outline && k == 0)
            outline_swatch(b, 0, ly, BAR_W);
        else if (strncmp(line, "not finite", 10) == 0)
            sb_printf(b, "<rect x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"url(#kgl-nan)\"/>\n", N(b, ly),
                      N(b, BAR_W), N(b, BAR_W));
        else { /* clamped values: a swatch of the end colour */
            unsigned char rgb[3];
            scale_colour(s, strncmp(line, "below", 5) == 0 ? 0 : 1, rgb);
            sb_printf(b, "<rect x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#%02x%02x%02x\"/>\n", N(b, ly),
                      N(b, BAR_W), N(b, BAR_W), rgb[0], rgb[1], rgb[2]);
        }
        put_wrapped(b, &L->lines_l[k], BAR_W + 6, ly + BAR_W / 2, TICK_FONT * LINE_GAP, "start", TICK_FONT,
                    "dy=\"0.35em\"", 0);
        sb_puts(b, "</g>\n");
        ly += fmax(BAR_W, wrapped_h(&L->lines_l[k], TICK_FONT)) + ENTRY_GAP;
    }
    if (L->n_notes) {
        sb_printf(b, "<g class=\"notes\" font-size=\"%s\">\n", N(b, NOTE_FONT));
        ly += ENTRY_GAP;
        for (int i = 0; i < L->n_notes; i++) {
            put_wrapped(b, &L->notes_l[i], 0, ly + NOTE_FONT * 0.76, NOTE_FONT * LINE_GAP, "start", 0, NULL, 0);
            ly += fmax(1, L->notes_l[i].n) * NOTE_FONT * LINE_GAP;
        }
        sb_puts(b, "</g>\n");
    }
    sb_puts(b, "</g>\n");
}

static void heatmap_defs(svgbuf *b, bool hatch, bool ratio)
{
    const unsigned char(*anchor)[3] = ratio ? diverging_anchor : viridis_anchor;
    sb_printf(b, "<defs>\n<linearGradient id=\"kgl-%s\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n",
              ratio ? "diverging" : "viridis");
    for (int i = 0; i <= 8; i++)
        sb_printf(b, "<stop offset=\"%s\" stop-color=\"#%02x%02x%02x\"/>\n", N(b, i / 8.0), anchor[i][0], anchor[i][1],
                  anchor[i][2]);
    sb_puts(b, "</linearGradient>\n");
    if (hatch)
        sb_puts(b, "<pattern id=\"kgl-nan\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                   "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#d0d0d0\"/>"
                   "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#707070\" stroke-width=\"2\"/></pattern>\n");
    sb_puts(b, "</defs>\n");
}

static bool heatmap_valid(const char *path, const kgl_heatmap *h, int which, char *err, size_t err_cap)
{
    char who[32] = "heatmap";
    if (which >= 0) snprintf(who, sizeof who, "panel %d", which);
    if (h->rows <= 0 || h->cols <= 0)
        return kgl_path_error(err, err_cap, path, "%s has %d x %d cells; it needs at least one row and one column", who,
                    h->rows, h->cols);
    if (h->max_rows < 0 || h->max_cols < 0)
        return kgl_path_error(err, err_cap, path, "%s: max_rows %d, max_cols %d; they must be >= 0 (0: all)", who,
                              h->max_rows, h->max_cols);
    long drawn_rows = h->max_rows > 0 && h->rows > h->max_rows ? h->max_rows : h->rows;
    long drawn_cols = h->max_cols > 0 && h->cols > h->max_cols ? h->max_cols : h->cols;
    if (drawn_rows * drawn_cols > MAX_CELLS)
        return kgl_path_error(err, err_cap, path, "%s would draw %ld x %ld cells; at most %ld can be drawn (max_rows and "
                              "max_cols choose fewer)", who, drawn_rows, drawn_cols, MAX_CELLS);
    if (!h->values) return kgl_path_error(err, err_cap, path, "%s has no values", who);
    if ((unsigned)h->scale > KGL_COLOUR_RATIO)
        return kgl_path_error(err, err_cap, path, "%s: unknown colour scale %d", who, (int)h->scale);
    bool lo_set = isfinite(h->vmin) && h->vmin != h->vmax, hi_set = isfinite(h->vmax) && h->vmin != h->vmax;
    if (lo_set && hi_set && h->vmin > h->vmax)
        return kgl_path_error(err, err_cap, path, "%s: vmin %g is above vmax %g", who, h->vmin, h->vmax);
    return true;
}

static bool heatmaps(const char *path, const char *title, const kgl_heatmap *panels, int n, int n_cols, bool single,
                     char *err, size_t err_cap)
{
    if (!path || !*path) return kgl_path_error(err, err_cap, path, "no path given");
    if (!panels || n <= 0) return kgl_path_error(err, err_cap, path, "no heatmap to draw");
    if (n_cols <= 0) return kgl_path_error(err, err_cap, path, "n_cols is %d; it must be at least 1", n_cols);
    for (int p = 0; p < n; p++)
        if (!heatmap_valid(path, &panels[p], single ? -1 : p, err, err_cap)) return false;
    if (n_cols > n) n_cols = n;

    /* what is drawn, and one colour scale */
    hm_view *views = kgl_xcalloc((size_t)n, sizeof *views);
    for (int p = 0; p < n; p++) view_select(&panels[p], &views[p]);
    hm_scale sc;
    scale_resolve(panels, views, n, &sc);

    hm_legend L = {0};
    L.scale = &sc;
    /* a grid's panels each say what their outlines are (their own key), so
       the shared legend names none */
    bool hatch = false;
    for (int p = 0; p < n; p++) {
        const kgl_heatmap *h = &panels[p];
        const hm_view *v = &views[p];
        if (!L.value_label) L.value_label = h->value_label;
        if (!L.outline_label) L.outline_label = h->outline_label;
        if (!L.notes && h->n_notes > 0) L.notes = h->notes, L.n_notes = h->n_notes;
        L.any_outline |= single && h->outline;
        L.outlined_all += v->outlined_all;
        /* counts first (they size the legend), then the drawing */
        for (int i = 0; i < v->rows; i++)
            for (int j = 0; j < v->cols; j++) {
                double x = view_at(h, v, i, j);
                int side = 0;
                if (!isfinite(x)) L.cnt.nonfinite++, hatch = true;
                else scale_at(&sc, v, i, x, &side);
                L.cnt.below += side < 0;
                L.cnt.above += side > 0;
                L.cnt.outlined += view_outlined(h, v, i, j);
            }
    }

    /* one cell size for all panels */
    int maxdim = 1;
    for (int p = 0; p < n; p++) maxdim = (int)fmax(maxdim, fmax(views[p].rows, views[p].cols));
    int cell = (int)((single ? 480 : n_cols >= 3 ? 300 : 360) / maxdim);
    cell = cell > 36 ? 36 : cell < 3 ? 3 : cell;
    /* up to LABELLED_MAX rows or columns every label is shown: cells of at least 11 px */
    if (maxdim <= LABELLED_MAX && cell < 16) cell = (int)fmax(11, fmin(16, 960 / maxdim));
    if (single && cell < 4) cell = 4;

    hm_geom *g = kgl_xcalloc((size_t)n, sizeof *g);
    double slot_w = 0, slot_h = 0, gx = 0, gy = 0;
    for (int p = 0; p < n; p++) {
        hm_layout(&panels[p], &views[p], &sc, cell, !single, &g[p]);
        gx = fmax(gx, g[p].gx), gy = fmax(gy, g[p].gy);
    }
    for (int p = 0; p < n; p++) { /* every panel's cells start at the same place in its slot */
        g[p].gx = gx, g[p].gy = gy;
        hm_size(&views[p], &sc, &g[p]);
        slot_w = fmax(slot_w, g[p].w);
        slot_h = fmax(slot_h, g[p].h);
    }
    int n_rows = (n + n_cols - 1) / n_cols;

    L.bar_h = fmin(320, fmax(140, (double)cell * views[0].rows));
    legend_layout(&L, !single);
    double leg_x = n_cols * slot_w + 8;
    double W = leg_x + L.w + PAD;
    wrapped title_l; /* the page title wraps to the page (at least 400 px wide) */
    wrap(&title_l, title, TITLE_FONT, true, fmax(W - 2 * PAD, 400));
    W = fmax(W, 2 * PAD + title_l.w);
    double head = title_l.n ? PAD + TITLE_FONT * (1.6 + (title_l.n - 1) * LINE_GAP) : 0;
    double leg_y = head + g[0].gy;
    double H = fmax(head + n_rows * slot_h, leg_y + L.h + PAD);

    svgbuf b = {0};
    svg_begin(&b, W, H, title);
    heatmap_defs(&b, hatch, sc.mode == KGL_COLOUR_RATIO);
    put_wrapped(&b, &title_l, PAD, PAD + TITLE_FONT, TITLE_FONT * LINE_GAP, "start", TITLE_FONT, "font-weight=\"bold\"",
                0);
    hm_counts drawn = {0};
    for (int p = 0; p < n; p++)
        hm_panel(&b, &panels[p], &views[p], &g[p], &sc, (p % n_cols) * slot_w, head + (p / n_cols) * slot_h, &drawn);
    legend_draw(&b, &L, leg_x, leg_y);
    sb_puts(&b, "</svg>\n");
    if (drawn.outlined != L.cnt.outlined || drawn.nonfinite != L.cnt.nonfinite || drawn.below != L.cnt.below ||
        drawn.above != L.cnt.above)
        kgl_die("svg: legend counts differ from the cells drawn");
    for (int p = 0; p < n; p++) {
        hm_geom_free(&g[p]);
        view_free(&views[p]);
    }
    free(g);
    free(views);
    free(L.notes_l);
    bool ok = write_atomic(path, &b, err, err_cap);
    free(b.p);
    return ok;
}

bool kgl_svg_heatmap(const char *path, const kgl_heatmap *h, char *err, size_t err_cap)
{
    if (!h) return kgl_path_error(err, err_cap, path, "no heatmap to draw");
    return heatmaps(path, h->title, h, 1, 1, true, err, err_cap);
}

bool kgl_svg_heatmap_grid(const char *path, const char *title, const kgl_heatmap *panels, int n_panels, int n_cols,
                          char *err, size_t err_cap)
{
    return heatmaps(path, title, panels, n_panels, n_cols, false, err, err_cap);
}

/* ----------------------------------------------------------- lineplot -- */

typedef struct lp_geom {
    double pw, ph;          /* plot area */
    double left, top;       /* plot area origin inside the panel */
    double w, h;            /* panel size */
    double xlo, xhi, ylo, yhi; /* axis ranges (log10 on log axes) */
    ticks xt, yt;
    long drawn, skipped_nonfinite, skipped_nonpos; /* points drawn, and not drawn */
    double legend_w;
    double right, below; /* room right of and under the plot area */
    double ytick_w;      /* widest y tick label */
    wrapped title_l, x_l, y_l; /* the title and axis titles, wrapped to their room */
} lp_geom;

static void lp_size(lp_geom *g)
{
    g->w = g->left + g->pw + g->right;
    g->h = g->top + g->below;
}

static double series_x(const kgl_series *s, int i) { return s->x ? s->x[i] : (double)i; }

/* Whether point i can be drawn; counts why not. */
static bool point_ok(const kgl_lineplot *p, const kgl_series *s, int i, long *nonfinite, long *nonpos)
{
    double x = series_x(s, i), y = s->y[i];
    if (!isfinite(x) || !isfinite(y)) {
        if (nonfinite) (*nonfinite)++;
        return false;
    }
    if ((p->log_x && !(x > 0)) || (p->log_y && !(y > 0))) {
        if (nonpos) (*nonpos)++;
        return false;
    }
    return true;
}

static const char *series_name(const kgl_series *s, int i, char *buf, size_t cap)
{
    if (s->label) return s->label;
    snprintf(buf, cap, "series %d", i + 1);
    return buf;
}

static void lp_layout(const kgl_lineplot *p, bool grid, lp_geom *g)
{
    double xmn = INFINITY, xmx = -INFINITY, ymn = INFINITY, ymx = -INFINITY;
    g->drawn = g->skipped_nonfinite = g->skipped_nonpos = 0;
    g->legend_w = 0;
    for (int s = 0; s < p->n_series; s++) {
        const kgl_series *se = &p->series[s];
        for (int i = 0; i < se->n; i++) {
            if (!point_ok(p, se, i, &g->skipped_nonfinite, &g->skipped_nonpos)) continue;
            double x = series_x(se, i), y = se->y[i];
            g->drawn++;
            xmn = fmin(xmn, x), xmx = fmax(xmx, x), ymn = fmin(ymn, y), ymx = fmax(ymx, y);
        }
        char buf[32];
        g->legend_w = fmax(g->legend_w, 36 + text_em(series_name(se, s, buf, sizeof buf), LABEL_EM * 1.5) * 11);
    }
    if (p->log_x)
        axis_log(xmn, xmx, &g->xlo, &g->xhi, &g->xt);
    else
        axis_linear(xmn, xmx, &g->xlo, &g->xhi, &g->xt);
    if (p->log_y)
        axis_log(ymn, ymx, &g->ylo, &g->yhi, &g->yt);
    else
        axis_linear(ymn, ymx, &g->ylo, &g->yhi, &g->yt);
    g->pw = grid ? 380 : 520;
    g->ph = grid ? 240 : 320;
    double ytw = 0;
    for (int i = 0; i < g->yt.n; i++) ytw = fmax(ytw, text_em(g->yt.label[i], 0) * TICK_FONT);
    g->ytick_w = ytw;
    wrap(&g->y_l, p->y_label, AXIS_FONT, false, g->ph);
    wrap(&g->x_l, p->x_label, AXIS_FONT, false, g->pw);
    g->left = PAD + (g->y_l.n ? AXIS_FONT * (1.8 + (g->y_l.n - 1) * LINE_GAP) : 0) + ytw + 8;
    bool note = g->skipped_nonfinite || g->skipped_nonpos;
    double legend_h = p->n_series * 17.0 + 8;
    g->right = (p->n_series ? 16 + g->legend_w : 0) + PAD;
    /* the last x tick label may stick out past the plot area */
    if (g->xt.n) g->right = fmax(g->right, text_em(g->xt.label[g->xt.n - 1], 0) * TICK_FONT / 2 + PAD);
    g->below = fmax(g->ph + 6 + TICK_FONT * 1.4 + (g->x_l.n ? AXIS_FONT * (1.8 + (g->x_l.n - 1) * LINE_GAP) : 0) +
                        (note ? TICK_FONT * 1.8 : 0),
                    legend_h) + PAD;
    g->top = 0;
    lp_size(g);
    /* the title wraps to the panel */
    double fs = grid ? PANEL_TITLE_FONT : TITLE_FONT;
    wrap(&g->title_l, p->title, fs, true, g->w - 2 * PAD);
    g->top = PAD + (g->title_l.n ? fs * (1.6 + (g->title_l.n - 1) * LINE_GAP) : 4);
    lp_size(g);
}

static double px_x(const lp_geom *g, const kgl_lineplot *p, double x)
{
    return g->left + frac(p->log_x ? log10(x) : x, g->xlo, g->xhi) * g->pw;
}

static double px_y(const lp_geom *g, const kgl_lineplot *p, double y)
{
    return g->top + g->ph - frac(p->log_y ? log10(y) : y, g->ylo, g->yhi) * g->ph;
}

/* A marker of shape `shape` centred on (x, y): a data point (class "pt")
 * with its tooltip "name: (vx, vy)", or without name a legend key. */
static void marker(svgbuf *b, int shape, double x, double y, const char *name, double vx, double vy)
{
    const double r = 3.2;
    const char *cls = name ? "pt" : "key";
    switch (shape % N_MARKER_SHAPES) {
    case 0: sb_printf(b, "<circle class=\"%s\" cx=\"%s\" cy=\"%s\" r=\"%s\">", cls, N(b, x), N(b, y), N(b, r)); break;
    case 1:
        sb_printf(b, "<rect class=\"%s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\">", cls, N(b, x - r), N(b, y - r),
                  N(b, 2 * r), N(b, 2 * r));
        break;
    case 2:
        sb_printf(b, "<path class=\"%s\" d=\"M%s %sL%s %sL%s %sz\">", cls, N(b, x), N(b, y - 1.2 * r), N(b, x + 1.1 * r),
                  N(b, y + 0.8 * r), N(b, x - 1.1 * r), N(b, y + 0.8 * r));
        break;
    case 3:
        sb_printf(b, "<path class=\"%s\" d=\"M%s %sL%s %sL%s %sL%s %sz\">", cls, N(b, x), N(b, y - 1.3 * r),
                  N(b, x + 1.3 * r), N(b, y), N(b, x), N(b, y + 1.3 * r), N(b, x - 1.3 * r), N(b, y));
        break;
    default:
        sb_printf(b, "<path class=\"%s\" d=\"M%s %sL%s %sL%s %sz\">", cls, N(b, x), N(b, y + 1.2 * r), N(b, x + 1.1 * r),
                  N(b, y - 0.8 * r), N(b, x - 1.1 * r), N(b, y - 0.8 * r));
        break;
    }
    if (name) {
        char sx[32], sy[32];
        fmt_point(sx, sizeof sx, vx);
        fmt_point(sy, sizeof sy, vy);
        sb_puts(b, "<title>");
        sb_text(b, name);
        sb_printf(b, ": (%s, %s)</title>", sx, sy);
    }
    static const char *const end_tag[N_MARKER_SHAPES] = {"</circle>", "</rect>", "</path>", "</path>", "</path>"};
    sb_printf(b, "%s\n", end_tag[shape % N_MARKER_SHAPES]);
}

static void flush_segment(svgbuf *b, svgbuf *seg, int count, int s, bool markers, const char *name, double x,
                          double y, double vx, double vy)
{
    if (count >= 2)
        sb_printf(b, "<polyline class=\"line\" points=\"%s\"/>\n", seg->p);
    else if (count == 1 && !markers) /* an isolated point: a marker, or it would not show */
        marker(b, s, x, y, name, vx, vy);
    seg->len = 0;
    if (seg->p) seg->p[0] = 0;
}

/* Grid lines, minor ticks, the ticks with their labels and the frame. */
static void lp_axes(svgbuf *b, const lp_geom *g)
{
    double L = g->left, T = g->top, R = g->left + g->pw, B = g->top + g->ph;
    sb_puts(b, "<g class=\"grid\" stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
    for (int i = 0; i < g->xt.n; i++) {
        double x = L + frac(g->xt.v[i], g->xlo, g->xhi) * g->pw;
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", N(b, x), N(b, T), N(b, x), N(b, B));
    }
    for (int i = 0; i < g->yt.n; i++) {
        double y = B - frac(g->yt.v[i], g->ylo, g->yhi) * g->ph;
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", N(b, L), N(b, y), N(b, R), N(b, y));
    }
    sb_puts(b, "</g>\n");
    sb_printf(b, "<g class=\"minor\" stroke=\"#555555\" stroke-width=\"0.8\">\n");
    for (int i = 0; i < g->xt.n_minor; i++) {
        double x = L + frac(g->xt.minor[i], g->xlo, g->xhi) * g->pw;
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", N(b, x), N(b, B), N(b, x), N(b, B + 3));
    }
    for (int i = 0; i < g->yt.n_minor; i++) {
        double y = B - frac(g->yt.minor[i], g->ylo, g->yhi) * g->ph;
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>\n", N(b, L - 3), N(b, y), N(b, L), N(b, y));
    }
    sb_puts(b, "</g>\n");
    sb_printf(b, "<g class=\"x-ticks\" font-size=\"%s\" text-anchor=\"middle\">\n", N(b, TICK_FONT));
    for (int i = 0; i < g->xt.n; i++) {
        double x = L + frac(g->xt.v[i], g->xlo, g->xhi) * g->pw;
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#222222\"/>", N(b, x), N(b, B), N(b, x),
                  N(b, B + 5));
        sb_printf(b, "<text x=\"%s\" y=\"%s\">%s</text>\n", N(b, x), N(b, B + 6 + TICK_FONT), g->xt.label[i]);
    }
    sb_puts(b, "</g>\n");
    sb_printf(b, "<g class=\"y-ticks\" font-size=\"%s\" text-anchor=\"end\">\n", N(b, TICK_FONT));
    for (int i = 0; i < g->yt.n; i++) {
        double y = B - frac(g->yt.v[i], g->ylo, g->yhi) * g->ph;
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#222222\"/>", N(b, L - 5), N(b, y),
                  N(b, L), N(b, y));
        sb_printf(b, "<text x=\"%s\" y=\"%s\" dy=\"0.35em\">%s</text>\n", N(b, L - 7), N(b, y), g->yt.label[i]);
    }
    sb_puts(b, "</g>\n");
    sb_printf(b, "<rect class=\"frame\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"#222222\"/>\n",
              N(b, L), N(b, T), N(b, g->pw), N(b, g->ph));
}

/* The axis titles; returns where the text under the x axis title starts. */
static double lp_axis_titles(svgbuf *b, const lp_geom *g)
{
    double L = g->left, T = g->top, B = g->top + g->ph;
    double below = B + 6 + TICK_FONT * 1.4;
    if (g->x_l.n) {
        put_wrapped(b, &g->x_l, L + g->pw / 2, below + AXIS_FONT, AXIS_FONT * LINE_GAP, "middle", AXIS_FONT,
                    "class=\"axis-title\"", 0);
        below += AXIS_FONT * (1.8 + (g->x_l.n - 1) * LINE_GAP);
    }
    /* the y axis title turned upwards, its lines towards the plot */
    put_wrapped(b, &g->y_l, L - g->ytick_w - 8 - AXIS_FONT * 0.8 - (g->y_l.n - 1) * AXIS_FONT * LINE_GAP, T + g->ph / 2,
                AXIS_FONT * LINE_GAP, "middle", AXIS_FONT, "class=\"axis-title\"", -90);
    return below;
}

/* Each series: its line, broken where a point cannot be drawn, and its
 * markers when it has few points. */
static void lp_series(svgbuf *b, const kgl_lineplot *p, const lp_geom *g)
{
    svgbuf seg = {0};
    for (int s = 0; s < p->n_series; s++) {
        const kgl_series *se = &p->series[s];
        char nbuf[32];
        const char *name = series_name(se, s, nbuf, sizeof nbuf);
        bool markers = se->n <= MARKER_MAX;
        sb_printf(b, "<g class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" stroke-linejoin=\"round\"",
                  colour_of(s));
        if (*dash_of(s)) sb_printf(b, " stroke-dasharray=\"%s\"", dash_of(s));
        sb_puts(b, ">\n");
        int count = 0;
        double lx = 0, ly = 0, lvx = 0, lvy = 0;
        for (int i = 0; i < se->n; i++) {
            if (!point_ok(p, se, i, NULL, NULL)) {
                flush_segment(b, &seg, count, s, markers, name, lx, ly, lvx, lvy);
                count = 0;
                continue;
            }
            lvx = series_x(se, i), lvy = se->y[i];
            lx = px_x(g, p, lvx), ly = px_y(g, p, lvy);
            sb_printf(&seg, "%s%s,%s", count ? " " : "", N(b, lx), N(b, ly));
            count++;
        }
        flush_segment(b, &seg, count, s, markers, name, lx, ly, lvx, lvy);
        if (markers) {
            sb_printf(b, "<g class=\"markers\" fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"0.8\" "
                         "stroke-dasharray=\"none\">\n",
                      colour_of(s));
            for (int i = 0; i < se->n; i++)
                if (point_ok(p, se, i, NULL, NULL))
                    marker(b, s, px_x(g, p, series_x(se, i)), px_y(g, p, se->y[i]), name, series_x(se, i), se->y[i]);
            sb_puts(b, "</g>\n");
        }
        sb_puts(b, "</g>\n");
    }
    free(seg.p);
}

/* The legend: one entry per series, with the line, its dash and its marker. */
static void lp_legend(svgbuf *b, const kgl_lineplot *p, const lp_geom *g)
{
    sb_printf(b, "<g class=\"legend\" font-size=\"11\" transform=\"translate(%s %s)\">\n", N(b, g->left + g->pw + 16),
              N(b, g->top + 4));
    for (int s = 0; s < p->n_series; s++) {
        const kgl_series *se = &p->series[s];
        char nbuf[32];
        const char *name = series_name(se, s, nbuf, sizeof nbuf);
        long nf = 0, np = 0;
        for (int i = 0; i < se->n; i++) point_ok(p, se, i, &nf, &np);
        double y = s * 17.0 + 8;
        sb_puts(b, "<g class=\"entry\"><title>");
        sb_text(b, name);
        sb_printf(b, ": %d point%s", se->n, se->n == 1 ? "" : "s");
        if (nf || np) {
            sb_printf(b, ", %ld not drawn (", nf + np);
            if (nf) sb_printf(b, "%ld not finite%s", nf, np ? ", " : "");
            if (np) sb_printf(b, "%ld non-positive on a log axis", np);
            sb_puts(b, ")");
        }
        sb_puts(b, "</title>");
        sb_printf(b, "<line x1=\"0\" y1=\"%s\" x2=\"28\" y2=\"%s\" stroke=\"%s\" stroke-width=\"1.8\"", N(b, y),
                  N(b, y), colour_of(s));
        if (*dash_of(s)) sb_printf(b, " stroke-dasharray=\"%s\"", dash_of(s));
        sb_puts(b, "/>");
        sb_printf(b, "<g fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"0.8\">", colour_of(s));
        marker(b, s, 14, y, NULL, 0, 0);
        sb_puts(b, "</g>");
        sb_printf(b, "<text x=\"36\" y=\"%s\" dy=\"0.35em\">", N(b, y));
        sb_label(b, name, LABEL_EM * 1.5);
        sb_puts(b, "</text></g>\n");
    }
    sb_puts(b, "</g>\n");
}

/* What was not drawn, at `below` under the x axis; "no data" in an empty plot. */
static void lp_notes(svgbuf *b, const lp_geom *g, double below)
{
    if (g->skipped_nonfinite || g->skipped_nonpos) {
        char note[200];
        long total = g->skipped_nonfinite + g->skipped_nonpos;
        int n = snprintf(note, sizeof note, "%ld point%s not drawn:", total, total == 1 ? "" : "s");
        if (g->skipped_nonfinite)
            n += snprintf(note + n, sizeof note - (size_t)n, " %ld not finite%s", g->skipped_nonfinite,
                          g->skipped_nonpos ? "," : "");
        if (g->skipped_nonpos)
            snprintf(note + n, sizeof note - (size_t)n, " %ld non-positive on a log axis", g->skipped_nonpos);
        put_text(b, g->left, below + TICK_FONT, "start", TICK_FONT, "class=\"note\" fill=\"#8a3a00\"", 0, note, 0);
    }
    if (g->drawn == 0)
        put_text(b, g->left + g->pw / 2, g->top + g->ph / 2, "middle", AXIS_FONT, "class=\"note\"", 0, "no data", 0);
}

static void lp_panel(svgbuf *b, const kgl_lineplot *p, const lp_geom *g, double ox, double oy, bool grid)
{
    sb_printf(b, "<g class=\"lineplot\" transform=\"translate(%s %s)\">\n", N(b, ox), N(b, oy));
    double fs = grid ? PANEL_TITLE_FONT : TITLE_FONT;
    put_wrapped(b, &g->title_l, g->w / 2, PAD + fs, fs * LINE_GAP, "middle", fs, "font-weight=\"bold\"", 0);
    lp_axes(b, g);
    double below = lp_axis_titles(b, g);
    lp_series(b, p, g);
    if (p->n_series) lp_legend(b, p, g);
    lp_notes(b, g, below);
    sb_puts(b, "</g>\n");
}

static bool lineplot_valid(const char *path, const kgl_lineplot *p, int which, char *err, size_t err_cap)
{
    char who[32] = "line plot";
    if (which >= 0) snprintf(who, sizeof who, "plot %d", which);
    if (p->n_series < 0 || (p->n_series > 0 && !p->series))
        return kgl_path_error(err, err_cap, path, "%s: n_series is %d but series is %s", who, p->n_series,
                    p->series ? "given" : "NULL");
    for (int s = 0; s < p->n_series; s++) {
        const kgl_series *se = &p->series[s];
        if (se->n < 0) return kgl_path_error(err, err_cap, path, "%s: series %d has %d points", who, s, se->n);
        if (se->n > 0 && !se->y) return kgl_path_error(err, err_cap, path, "%s: series %d has no y values", who, s);
    }
    return true;
}

static bool lineplots(const char *path, const char *title, const kgl_lineplot *plots, int n, int n_cols, bool single,
                      char *err, size_t err_cap)
{
    if (!path || !*path) return kgl_path_error(err, err_cap, path, "no path given");
    if (!plots || n <= 0) return kgl_path_error(err, err_cap, path, "no line plot to draw");
    if (n_cols <= 0) return kgl_path_error(err, err_cap, path, "n_cols is %d; it must be at least 1", n_cols);
    for (int p = 0; p < n; p++)
        if (!lineplot_valid(path, &plots[p], single ? -1 : p, err, err_cap)) return false;
    if (n_cols > n) n_cols = n;
    lp_geom *g = kgl_xmalloc(sizeof *g * (size_t)n);
    double slot_w = 0, slot_h = 0, left = 0, top = 0;
    for (int p = 0; p < n; p++) {
        lp_layout(&plots[p], !single, &g[p]);
        left = fmax(left, g[p].left), top = fmax(top, g[p].top);
    }
    for (int p = 0; p < n; p++) { /* every plot area starts at the same place in its slot */
        g[p].left = left, g[p].top = top;
        lp_size(&g[p]);
        slot_w = fmax(slot_w, g[p].w);
        slot_h = fmax(slot_h, g[p].h);
    }
    int n_rows = (n + n_cols - 1) / n_cols;
    double W = n_cols * slot_w;
    wrapped title_l; /* a grid's page title wraps to the page (at least 400 px wide) */
    wrap(&title_l, single ? NULL : title, TITLE_FONT, true, fmax(W - 2 * PAD, 400));
    W = fmax(W, 2 * PAD + title_l.w);
    double head = title_l.n ? PAD + TITLE_FONT * (1.4 + (title_l.n - 1) * LINE_GAP) : 0, H = head + n_rows * slot_h;
    svgbuf b = {0};
    svg_begin(&b, W, H, title);
    put_wrapped(&b, &title_l, PAD, PAD + TITLE_FONT, TITLE_FONT * LINE_GAP, "start", TITLE_FONT, "font-weight=\"bold\"",
                0);
    for (int p = 0; p < n; p++)
        lp_panel(&b, &plots[p], &g[p], (p % n_cols) * slot_w, head + (p / n_cols) * slot_h, !single);
    sb_puts(&b, "</svg>\n");
    free(g);
    bool ok = write_atomic(path, &b, err, err_cap);
    free(b.p);
    return ok;
}

bool kgl_svg_lineplot(const char *path, const kgl_lineplot *p, char *err, size_t err_cap)
{
    if (!p) return kgl_path_error(err, err_cap, path, "no line plot to draw");
    return lineplots(path, p->title, p, 1, 1, true, err, err_cap);
}

bool kgl_svg_lineplot_grid(const char *path, const char *title, const kgl_lineplot *plots, int n_plots, int n_cols,
                           char *err, size_t err_cap)
{
    return lineplots(path, title, plots, n_plots, n_cols, false, err, err_cap);
}
