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

/* Bytes of s to keep so that at most max bytes are kept and no UTF-8
 * sequence is cut (for "%.*s" into fixed buffers). */
static int utf8_prefix(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max) return (int)n;
    while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80) max--;
    return (int)max;
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

/* A label shortened to max_em; when it is shortened, a <title> child with
 * the full text comes first, so the page shows "…" and the tooltip the whole. */
static void sb_label(svgbuf *b, const char *s, double max_em)
{
    if (s && max_em > 0 && text_em(s, 0) > max_em) {
        sb_puts(b, "<title>");
        sb_text(b, s);
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

static void viridis(double t, unsigned char rgb[3])
{
    if (!(t > 0)) t = 0;
    if (t > 1) t = 1;
    double pos = t * 8;
    int i = (int)pos;
    if (i > 7) i = 7;
    double f = pos - i;
    for (int c = 0; c < 3; c++) {
        double v = viridis_anchor[i][c] + (viridis_anchor[i + 1][c] - viridis_anchor[i][c]) * f;
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

/* ------------------------------------------------------------ heatmap -- */

#define PAD 12.0
#define TITLE_FONT 15.0
#define PANEL_TITLE_FONT 13.0
#define AXIS_FONT 12.0
#define TICK_FONT 10.0
#define BAR_W 14.0

typedef struct hm_geom {
    int cell;      /* px per cell */
    double font;   /* label font size */
    int every_row, every_col; /* every k-th row / column label shown */
    size_t title_split;       /* a two-line panel title: byte where line 2 starts (0: one line) */
    double key_h;             /* a panel's own outline key under it (grids only), px */
    double row_w;  /* widest shown row label, px */
    double col_w;  /* widest shown column label before rotation, px */
    double gx, gy; /* grid origin inside the panel */
    double below;  /* height under the cells: column labels, axis title */
    double w, h;   /* panel size */
} hm_geom;

/* Panel size from the grid origin (which a grid of panels aligns). */
static void hm_size(const kgl_heatmap *h, hm_geom *g)
{
    g->w = g->gx + (double)g->cell * h->cols + PAD;
    g->h = g->gy + (double)g->cell * h->rows + g->below;
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

/* Where to break a title into two lines: the space that makes the wider
 * line narrowest; 0 when it fits in `room` px or has no space. */
static size_t title_break(const char *t, double font, double room)
{
    double whole = text_em(t, 0) * font * BOLD_WIDTH;
    if (whole <= room) return 0;
    size_t best = 0;
    double best_w = whole;
    char *copy = kgl_strdup(t);
    for (size_t i = 1; t[i]; i++) {
        if (t[i] != ' ') continue;
        copy[i] = 0;
        double w = fmax(text_em(copy, 0), text_em(t + i + 1, 0)) * font * BOLD_WIDTH;
        copy[i] = ' ';
        if (w < best_w) best_w = w, best = i + 1;
    }
    free(copy);
    return best;
}

static void hm_layout(const kgl_heatmap *h, int cell, bool with_title, hm_geom *g)
{
    g->cell = cell;
    /* 0.64 of a cell: from 11 px cells on, every rotated column label fits */
    g->font = fmin(12, fmax(7, cell * 0.64));
    g->every_row = label_step(cell, g->font, false);
    g->every_col = label_step(cell, g->font, true);
    char buf[16];
    g->row_w = g->col_w = 0;
    for (int i = 0; i < h->rows; i += g->every_row)
        g->row_w = fmax(g->row_w, text_em(label_of(h->row_labels, i, buf, sizeof buf), LABEL_EM) * g->font);
    for (int j = 0; j < h->cols; j += g->every_col)
        g->col_w = fmax(g->col_w, text_em(label_of(h->col_labels, j, buf, sizeof buf), LABEL_EM) * g->font);
    double axis_w = h->row_axis ? AXIS_FONT * 1.6 : 0;
    double diag = g->col_w * 0.7071 + g->font * 0.5; /* how far a column label reaches down and left */
    g->gx = fmax(PAD + axis_w + g->row_w + 6, PAD + diag - cell * 0.5);
    g->key_h = with_title && h->outline ? 20 : 0;
    g->below = 6 + diag + (h->col_axis ? AXIS_FONT * 1.8 : 0) + g->key_h + PAD;
    g->gy = 0;
    hm_size(h, g);
    /* a panel title wider than the panel goes on two lines */
    g->title_split = with_title && h->title ? title_break(h->title, PANEL_TITLE_FONT, g->w - 2 * PAD) : 0;
    g->gy = PAD + (with_title && h->title ? PANEL_TITLE_FONT * (g->title_split ? 2.85 : 1.6) : 0);
    hm_size(h, g);
}

typedef struct hm_counts {
    long outlined, nonfinite, below, above;
} hm_counts;

static void axis_title_with_every(char *s, size_t cap, const char *title, int every)
{
    const char *ord = every == 2 ? "2nd" : NULL;
    char num[16];
    if (!ord) snprintf(num, sizeof num, "%dth", every), ord = num;
    if (every == 1)
        snprintf(s, cap, "%.*s", utf8_prefix(title, cap - 40), title);
    else
        snprintf(s, cap, "%.*s (every %s labelled)", utf8_prefix(title, cap - 40), title, ord);
}

static void hm_panel(svgbuf *b, const kgl_heatmap *h, const hm_geom *g, double ox, double oy, double lo, double hi,
                     bool draw_title, hm_counts *cnt)
{
    int R = h->rows, C = h->cols, cell = g->cell;
    char rbuf[16], cbuf[16], val[32];
    sb_printf(b, "<g class=\"heatmap\" transform=\"translate(%s %s)\">\n", N(b, ox), N(b, oy));
    if (draw_title && h->title) { /* centred over the panel, on two lines when it is wider */
        double cx = g->w * 0.5, max_em = (g->w - 2 * PAD) / PANEL_TITLE_FONT / BOLD_WIDTH;
        if (g->title_split) {
            char *line1 = kgl_strdup(h->title);
            line1[g->title_split - 1] = 0;
            put_text(b, cx, PAD + PANEL_TITLE_FONT, "middle", PANEL_TITLE_FONT, "font-weight=\"bold\"", 0, line1,
                     max_em);
            put_text(b, cx, PAD + PANEL_TITLE_FONT * 2.25, "middle", PANEL_TITLE_FONT, "font-weight=\"bold\"", 0,
                     h->title + g->title_split, max_em);
            free(line1);
        } else {
            put_text(b, cx, PAD + PANEL_TITLE_FONT, "middle", PANEL_TITLE_FONT, "font-weight=\"bold\"", 0, h->title,
                     max_em);
        }
    }

    /* cells */
    sb_puts(b, "<g class=\"cells\" shape-rendering=\"crispEdges\">\n");
    for (int i = 0; i < R; i++) {
        const char *rl = label_of(h->row_labels, i, rbuf, sizeof rbuf);
        for (int j = 0; j < C; j++) {
            size_t k = (size_t)i * C + j;
            double v = h->values[k];
            bool out = h->outline && h->outline[k];
            double x = g->gx + (double)j * cell, y = g->gy + (double)i * cell;
            char fill[24];
            if (isfinite(v)) {
                unsigned char rgb[3];
                viridis(frac(v, lo, hi), rgb);
                snprintf(fill, sizeof fill, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
                if (v < lo) cnt->below++;
                if (v > hi) cnt->above++;
            } else {
                snprintf(fill, sizeof fill, "url(#kgl-nan)");
                cnt->nonfinite++;
            }
            if (out) cnt->outlined++;
            sb_printf(b, "<rect class=\"cell%s\" x=\"%s\" y=\"%s\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>",
                      out ? " outlined" : "", N(b, x), N(b, y), cell, cell, fill);
            sb_text(b, rl);
            sb_puts(b, " \xe2\x86\x92 "); /* → */
            sb_text(b, label_of(h->col_labels, j, cbuf, sizeof cbuf));
            fmt_value(val, sizeof val, v);
            sb_printf(b, ": %s", val);
            if (!isfinite(v)) sb_puts(b, " (not finite: drawn hatched grey)");
            if (out) {
                sb_puts(b, " [");
                sb_text(b, h->outline_label ? h->outline_label : "outlined");
                sb_puts(b, "]");
            }
            sb_puts(b, "</title></rect>\n");
        }
    }
    sb_puts(b, "</g>\n");

    /* values printed in their cells */
    if (h->annotate && cell >= 24) {
        double fs = fmin(11, cell * 0.32);
        sb_printf(b, "<g class=\"values\" font-size=\"%s\" text-anchor=\"middle\">\n", N(b, fs));
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++) {
                double v = h->values[(size_t)i * C + j];
                if (!isfinite(v)) continue;
                unsigned char rgb[3];
                viridis(frac(v, lo, hi), rgb);
                double lum = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
                if (fabs(v) < 100)
                    snprintf(val, sizeof val, "%.2f", v);
                else
                    snprintf(val, sizeof val, "%.3g", v);
                if (strcmp(val, "-0.00") == 0) snprintf(val, sizeof val, "0.00");
                sb_printf(b, "<text x=\"%s\" y=\"%s\" dy=\"0.35em\" fill=\"%s\">%s</text>\n",
                          N(b, g->gx + (j + 0.5) * cell), N(b, g->gy + (i + 0.5) * cell),
                          lum > 110 ? "#000000" : "#ffffff", val);
            }
        sb_puts(b, "</g>\n");
    }

    /* outlines: a black box with a white one inside it, visible on every colour */
    if (h->outline) {
        double sw = fmin(3, fmax(1, cell * 0.1)), in = sw / 2;
        svgbuf path = {0};
        for (int i = 0; i < R; i++)
            for (int j = 0; j < C; j++)
                if (h->outline[(size_t)i * C + j])
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

    /* row labels, column labels (rotated 45°), axis titles */
    sb_printf(b, "<g class=\"row-labels\" font-size=\"%s\" text-anchor=\"end\">\n", N(b, g->font));
    for (int i = 0; i < R; i += g->every_row) {
        sb_printf(b, "<text x=\"%s\" y=\"%s\" dy=\"0.35em\">", N(b, g->gx - 4), N(b, g->gy + (i + 0.5) * cell));
        sb_label(b, label_of(h->row_labels, i, rbuf, sizeof rbuf), LABEL_EM);
        sb_puts(b, "</text>\n");
    }
    sb_puts(b, "</g>\n");
    double by = g->gy + (double)cell * R;
    sb_printf(b, "<g class=\"col-labels\" font-size=\"%s\" text-anchor=\"end\">\n", N(b, g->font));
    for (int j = 0; j < C; j += g->every_col) {
        double x = g->gx + (j + 0.5) * cell, y = by + 4;
        sb_printf(b, "<text x=\"%s\" y=\"%s\" dy=\"0.35em\" transform=\"rotate(-45 %s %s)\">", N(b, x), N(b, y),
                  N(b, x), N(b, y));
        sb_label(b, label_of(h->col_labels, j, cbuf, sizeof cbuf), LABEL_EM);
        sb_puts(b, "</text>\n");
    }
    sb_puts(b, "</g>\n");
    char axis[512];
    if (h->row_axis) {
        axis_title_with_every(axis, sizeof axis, h->row_axis, g->every_row);
        double x = g->gx - g->row_w - 10 - AXIS_FONT * 0.3, y = g->gy + cell * R * 0.5;
        put_text(b, x, y, "middle", AXIS_FONT, "class=\"axis-title\"", -90, axis, (double)cell * R / AXIS_FONT);
    }
    if (h->col_axis) {
        axis_title_with_every(axis, sizeof axis, h->col_axis, g->every_col);
        double y = by + 6 + g->col_w * 0.7071 + g->font * 0.5 + AXIS_FONT * 1.2;
        put_text(b, g->w * 0.5, y, "middle", AXIS_FONT, "class=\"axis-title\"", 0, axis,
                 (g->w - 2 * PAD) / AXIS_FONT);
    }
    if (g->key_h > 0) { /* this panel's own outlined cells: what they are and how many */
        long k = 0;
        for (size_t c = 0; c < (size_t)R * C; c++) k += h->outline[c] != 0;
        const char *ol = h->outline_label ? h->outline_label : "outlined";
        char line[200];
        snprintf(line, sizeof line, "%.*s (%ld)", utf8_prefix(ol, 150), ol, k);
        double y = by + 6 + g->col_w * 0.7071 + g->font * 0.5 + (h->col_axis ? AXIS_FONT * 1.8 : 0) + 4, s = 12;
        double x = PAD;
        /* the legend's swatch: grey, a black box and a white one inside it (N() keeps 8 numbers per call) */
        sb_printf(b, "<g class=\"key\"><rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#bbbbbb\"/>", N(b, x),
                  N(b, y), N(b, s), N(b, s));
        sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"#000000\" "
                     "stroke-width=\"2.5\"/>", N(b, x + 1.25), N(b, y + 1.25), N(b, s - 2.5), N(b, s - 2.5));
        sb_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"#ffffff\" "
                     "stroke-width=\"1\"/>\n", N(b, x + 1.25), N(b, y + 1.25), N(b, s - 2.5), N(b, s - 2.5));
        put_text(b, x + s + 6, y + s / 2, "start", TICK_FONT, "dy=\"0.35em\"", 0, line,
                 (g->w - x - s - 6 - PAD) / TICK_FONT);
        sb_puts(b, "</g>\n");
    }
    sb_puts(b, "</g>\n");
}

/* The legend column: title, colour bar with ticks, then one line per special
 * kind of cell. Returns its width; *height gets its height. */
typedef struct hm_legend {
    const char *value_label, *outline_label;
    double lo, hi, bar_h;
    hm_counts cnt;
    bool any_outline;
    const char *const *notes; /* lines listed under the legend */
    int n_notes;
} hm_legend;

#define NOTE_FONT 11.0
#define NOTE_EM 40.0 /* notes wider than this are shortened (the tooltip has them whole) */

static int legend_lines(const hm_legend *L, char lines[4][160])
{
    int n = 0;
    if (L->any_outline) {
        const char *ol = L->outline_label ? L->outline_label : "outlined";
        snprintf(lines[n++], 160, "%.*s (%ld)", utf8_prefix(ol, 100), ol, L->cnt.outlined);
    }
    if (L->cnt.nonfinite) snprintf(lines[n++], 160, "not finite (%ld)", L->cnt.nonfinite);
    if (L->cnt.below) snprintf(lines[n++], 160, "below the scale (%ld)", L->cnt.below);
    if (L->cnt.above) snprintf(lines[n++], 160, "above the scale (%ld)", L->cnt.above);
    return n;
}

static double legend_width(const hm_legend *L, double *height)
{
    ticks t;
    ticks_inside(&t, L->lo, L->hi, 5);
    double tw = 0;
    for (int i = 0; i < t.n; i++) tw = fmax(tw, text_em(t.label[i], 0) * TICK_FONT);
    double w = BAR_W + 7 + tw;
    if (L->value_label) w = fmax(w, text_em(L->value_label, 24) * AXIS_FONT);
    char lines[4][160];
    int n = legend_lines(L, lines);
    for (int i = 0; i < n; i++) w = fmax(w, BAR_W + 6 + text_em(lines[i], 30) * TICK_FONT);
    for (int i = 0; i < L->n_notes; i++) w = fmax(w, text_em(L->notes[i], NOTE_EM) * NOTE_FONT);
    *height = (L->value_label ? AXIS_FONT * 1.6 : 0) + L->bar_h + 12 + n * 20 +
              (L->n_notes ? 8 + L->n_notes * NOTE_FONT * 1.4 : 0);
    return w;
}

static void legend_draw(svgbuf *b, const hm_legend *L, double x, double y)
{
    char lo[32], hi[32];
    fmt_value(lo, sizeof lo, L->lo);
    fmt_value(hi, sizeof hi, L->hi);
    sb_printf(b, "<g class=\"legend colorbar\" transform=\"translate(%s %s)\">\n<title>colour scale (viridis): %s to %s",
              N(b, x), N(b, y), lo, hi);
    sb_puts(b, "</title>\n");
    double top = 0;
    if (L->value_label) {
        put_text(b, 0, AXIS_FONT, "start", AXIS_FONT, NULL, 0, L->value_label, 24);
        top = AXIS_FONT * 1.6;
    }
    sb_printf(b, "<rect x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"url(#kgl-viridis)\" stroke=\"#444444\" "
                 "stroke-width=\"0.5\"/>\n",
              N(b, top), N(b, BAR_W), N(b, L->bar_h));
    ticks t;
    ticks_inside(&t, L->lo, L->hi, 5);
    sb_printf(b, "<g class=\"ticks\" font-size=\"%s\">\n", N(b, TICK_FONT));
    for (int i = 0; i < t.n; i++) {
        double f = frac(t.v[i], L->lo, L->hi);
        double ty = top + L->bar_h * (1 - f);
        sb_printf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"#444444\"/>\n", N(b, BAR_W), N(b, ty),
                  N(b, BAR_W + 4), N(b, ty));
        sb_printf(b, "<text x=\"%s\" y=\"%s\" dy=\"0.35em\">%s</text>\n", N(b, BAR_W + 7), N(b, ty), t.label[i]);
    }
    sb_puts(b, "</g>\n");
    char lines[4][160];
    int n = legend_lines(L, lines), k = 0;
    double ly = top + L->bar_h + 12;
    if (L->any_outline) {
        double s = BAR_W;
        sb_printf(b,
                  "<g class=\"entry\"><rect x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"#bbbbbb\"/>"
                  "<rect x=\"1.5\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" stroke=\"#000000\" "
                  "stroke-width=\"3\"/><rect x=\"1.5\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"none\" "
                  "stroke=\"#ffffff\" stroke-width=\"1.2\"/>\n",
                  N(b, ly), N(b, s), N(b, s), N(b, ly + 1.5), N(b, s - 3), N(b, s - 3), N(b, ly + 1.5), N(b, s - 3),
                  N(b, s - 3));
        put_text(b, s + 6, ly + s / 2, "start", TICK_FONT, "dy=\"0.35em\"", 0, lines[k++], 30);
        sb_puts(b, "</g>\n");
        ly += 20;
    }
    if (L->cnt.nonfinite) {
        sb_printf(b, "<g class=\"entry\"><rect x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"url(#kgl-nan)\"/>\n",
                  N(b, ly), N(b, BAR_W), N(b, BAR_W));
        put_text(b, BAR_W + 6, ly + BAR_W / 2, "start", TICK_FONT, "dy=\"0.35em\"", 0, lines[k++], 30);
        sb_puts(b, "</g>\n");
        ly += 20;
    }
    for (; k < n; k++, ly += 20) { /* clamped values: swatch of the end colour */
        bool below = strncmp(lines[k], "below", 5) == 0;
        sb_printf(b, "<g class=\"entry\"><rect x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>\n", N(b, ly),
                  N(b, BAR_W), N(b, BAR_W), below ? "#440154" : "#fde725");
        put_text(b, BAR_W + 6, ly + BAR_W / 2, "start", TICK_FONT, "dy=\"0.35em\"", 0, lines[k], 30);
        sb_puts(b, "</g>\n");
    }
    if (L->n_notes) {
        sb_printf(b, "<g class=\"notes\" font-size=\"%s\">\n", N(b, NOTE_FONT));
        ly += 8;
        for (int i = 0; i < L->n_notes; i++, ly += NOTE_FONT * 1.4)
            put_text(b, 0, ly + NOTE_FONT * 0.76, "start", 0, NULL, 0, L->notes[i] ? L->notes[i] : "", NOTE_EM);
        sb_puts(b, "</g>\n");
    }
    sb_puts(b, "</g>\n");
}

static void heatmap_defs(svgbuf *b, bool hatch)
{
    sb_puts(b, "<defs>\n<linearGradient id=\"kgl-viridis\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n");
    for (int i = 0; i <= 8; i++)
        sb_printf(b, "<stop offset=\"%s\" stop-color=\"#%02x%02x%02x\"/>\n", N(b, i / 8.0), viridis_anchor[i][0],
                  viridis_anchor[i][1], viridis_anchor[i][2]);
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
    if ((long)h->rows * h->cols > MAX_CELLS)
        return kgl_path_error(err, err_cap, path, "%s has %d x %d cells; at most %ld can be drawn", who, h->rows, h->cols,
                    MAX_CELLS);
    if (!h->values) return kgl_path_error(err, err_cap, path, "%s has no values", who);
    bool lo_set = isfinite(h->vmin) && h->vmin != h->vmax, hi_set = isfinite(h->vmax) && h->vmin != h->vmax;
    if (lo_set && hi_set && h->vmin > h->vmax)
        return kgl_path_error(err, err_cap, path, "%s: vmin %g is above vmax %g", who, h->vmin, h->vmax);
    return true;
}

/* The panel's bounds: vmin/vmax when set, else its finite data. */
static void heatmap_bounds(const kgl_heatmap *h, double *lo, double *hi)
{
    double mn = INFINITY, mx = -INFINITY;
    size_t n = (size_t)h->rows * h->cols;
    for (size_t k = 0; k < n; k++)
        if (isfinite(h->values[k])) mn = fmin(mn, h->values[k]), mx = fmax(mx, h->values[k]);
    bool set = h->vmin != h->vmax;
    *lo = set && isfinite(h->vmin) ? h->vmin : mn;
    *hi = set && isfinite(h->vmax) ? h->vmax : mx;
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

    /* one colour scale */
    double lo = INFINITY, hi = -INFINITY;
    bool hatch = false, any_outline = false;
    for (int p = 0; p < n; p++) {
        double a, z;
        heatmap_bounds(&panels[p], &a, &z);
        lo = fmin(lo, a), hi = fmax(hi, z);
        size_t cells = (size_t)panels[p].rows * panels[p].cols;
        for (size_t k = 0; k < cells && !hatch; k++) hatch = !isfinite(panels[p].values[k]);
        any_outline |= panels[p].outline != NULL;
    }
    if (!(lo <= hi)) lo = 0, hi = 1; /* nothing finite */
    if (lo == hi) lo -= 0.5, hi += 0.5;

    /* one cell size for all panels */
    int maxdim = 1;
    for (int p = 0; p < n; p++) maxdim = (int)fmax(maxdim, fmax(panels[p].rows, panels[p].cols));
    int cell = (int)((single ? 480 : n_cols >= 3 ? 300 : 360) / maxdim);
    cell = cell > 36 ? 36 : cell < 3 ? 3 : cell;
    /* up to 64 rows or columns every label is shown: cells of at least 11 px */
    if (maxdim <= 64 && cell < 16) cell = (int)fmax(11, fmin(16, 960 / maxdim));
    if (single && cell < 4) cell = 4;

    hm_geom *g = kgl_xmalloc(sizeof *g * (size_t)n);
    double slot_w = 0, slot_h = 0, gx = 0, gy = 0;
    for (int p = 0; p < n; p++) {
        hm_layout(&panels[p], cell, !single, &g[p]);
        gx = fmax(gx, g[p].gx), gy = fmax(gy, g[p].gy);
    }
    for (int p = 0; p < n; p++) { /* every panel's cells start at the same place in its slot */
        g[p].gx = gx, g[p].gy = gy;
        hm_size(&panels[p], &g[p]);
        slot_w = fmax(slot_w, g[p].w);
        slot_h = fmax(slot_h, g[p].h);
    }
    int n_rows = (n + n_cols - 1) / n_cols;
    double head = title ? PAD + TITLE_FONT * 1.4 : 0;

    hm_legend L = {0};
    L.lo = lo, L.hi = hi;
    /* a grid's panels each say what their outlines are (their own key), so
       the shared legend names none */
    L.any_outline = any_outline && single;
    for (int p = 0; p < n; p++) {
        if (!L.value_label) L.value_label = panels[p].value_label;
        if (!L.outline_label) L.outline_label = panels[p].outline_label;
        if (!L.notes && panels[p].n_notes > 0) L.notes = panels[p].notes, L.n_notes = panels[p].n_notes;
    }
    /* counts first (they size the legend), then the drawing */
    for (int p = 0; p < n; p++) {
        size_t cells = (size_t)panels[p].rows * panels[p].cols;
        for (size_t k = 0; k < cells; k++) {
            double v = panels[p].values[k];
            if (!isfinite(v)) L.cnt.nonfinite++;
            else if (v < lo) L.cnt.below++;
            else if (v > hi) L.cnt.above++;
            if (panels[p].outline && panels[p].outline[k]) L.cnt.outlined++;
        }
    }
    double grid_h0 = (double)cell * panels[0].rows;
    L.bar_h = fmin(320, fmax(140, grid_h0));
    double leg_h, leg_w = legend_width(&L, &leg_h);
    double leg_x = n_cols * slot_w + 8, leg_y = head + g[0].gy;
    double W = leg_x + leg_w + PAD, H = fmax(head + n_rows * slot_h, leg_y + leg_h + PAD);
    if (title) W = fmax(W, 2 * PAD + text_em(title, 0) * TITLE_FONT * BOLD_WIDTH);

    svgbuf b = {0};
    svg_begin(&b, W, H, title);
    heatmap_defs(&b, hatch);
    if (title) put_text(&b, PAD, PAD + TITLE_FONT, "start", TITLE_FONT, "font-weight=\"bold\"", 0, title, 0);
    hm_counts drawn = {0};
    for (int p = 0; p < n; p++)
        hm_panel(&b, &panels[p], &g[p], (p % n_cols) * slot_w, head + (p / n_cols) * slot_h, lo, hi, !single,
                 &drawn);
    legend_draw(&b, &L, leg_x, leg_y);
    sb_puts(&b, "</svg>\n");
    free(g);
    if (drawn.outlined != L.cnt.outlined || drawn.nonfinite != L.cnt.nonfinite)
        kgl_die("svg: legend counts differ from the cells drawn");
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
    g->left = PAD + (p->y_label ? AXIS_FONT * 1.8 : 0) + ytw + 8;
    g->top = PAD + (p->title ? (grid ? PANEL_TITLE_FONT : TITLE_FONT) * 1.6 : 4);
    bool note = g->skipped_nonfinite || g->skipped_nonpos;
    double legend_h = p->n_series * 17.0 + 8;
    g->right = (p->n_series ? 16 + g->legend_w : 0) + PAD;
    /* the last x tick label may stick out past the plot area */
    if (g->xt.n) g->right = fmax(g->right, text_em(g->xt.label[g->xt.n - 1], 0) * TICK_FONT / 2 + PAD);
    g->below = fmax(g->ph + 6 + TICK_FONT * 1.4 + (p->x_label ? AXIS_FONT * 1.8 : 0) + (note ? TICK_FONT * 1.8 : 0),
                    legend_h) + PAD;
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

static void lp_panel(svgbuf *b, const kgl_lineplot *p, const lp_geom *g, double ox, double oy, bool grid)
{
    double L = g->left, T = g->top, R = g->left + g->pw, B = g->top + g->ph;
    sb_printf(b, "<g class=\"lineplot\" transform=\"translate(%s %s)\">\n", N(b, ox), N(b, oy));
    if (p->title) {
        double fs = grid ? PANEL_TITLE_FONT : TITLE_FONT;
        put_text(b, g->w / 2, PAD + fs, "middle", fs, "font-weight=\"bold\"", 0, p->title,
                 (g->w - 2 * PAD) / fs / BOLD_WIDTH);
    }
    /* grid lines and ticks */
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
    double below = B + 6 + TICK_FONT * 1.4;
    if (p->x_label) {
        put_text(b, L + g->pw / 2, below + AXIS_FONT, "middle", AXIS_FONT, "class=\"axis-title\"", 0, p->x_label,
                 2 * fmin(L + g->pw / 2 - PAD, g->w - PAD - L - g->pw / 2) / AXIS_FONT);
        below += AXIS_FONT * 1.8;
    }
    if (p->y_label)
        put_text(b, L - g->ytick_w - 8 - AXIS_FONT * 0.8, T + g->ph / 2, "middle", AXIS_FONT, "class=\"axis-title\"", -90, p->y_label,
                 g->ph / AXIS_FONT);

    /* series */
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

    /* legend: one entry per series, with the line, its dash and its marker */
    if (p->n_series) {
        sb_printf(b, "<g class=\"legend\" font-size=\"11\" transform=\"translate(%s %s)\">\n", N(b, R + 16),
                  N(b, T + 4));
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

    /* what was not drawn */
    if (g->skipped_nonfinite || g->skipped_nonpos) {
        char note[200];
        long total = g->skipped_nonfinite + g->skipped_nonpos;
        int n = snprintf(note, sizeof note, "%ld point%s not drawn:", total, total == 1 ? "" : "s");
        if (g->skipped_nonfinite)
            n += snprintf(note + n, sizeof note - (size_t)n, " %ld not finite%s", g->skipped_nonfinite,
                          g->skipped_nonpos ? "," : "");
        if (g->skipped_nonpos)
            snprintf(note + n, sizeof note - (size_t)n, " %ld non-positive on a log axis", g->skipped_nonpos);
        put_text(b, L, below + TICK_FONT, "start", TICK_FONT, "class=\"note\" fill=\"#8a3a00\"", 0, note, 0);
    }
    if (g->drawn == 0)
        put_text(b, L + g->pw / 2, T + g->ph / 2, "middle", AXIS_FONT, "class=\"note\"", 0, "no data", 0);
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
    double head = title && !single ? PAD + TITLE_FONT * 1.4 : 0;
    double W = n_cols * slot_w, H = head + n_rows * slot_h;
    if (title && !single) W = fmax(W, 2 * PAD + text_em(title, 0) * TITLE_FONT * BOLD_WIDTH);
    svgbuf b = {0};
    svg_begin(&b, W, H, title);
    if (title && !single) put_text(&b, PAD, PAD + TITLE_FONT, "start", TITLE_FONT, "font-weight=\"bold\"", 0, title, 0);
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
