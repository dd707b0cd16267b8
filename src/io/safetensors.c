/* safetensors.c — the checkpoint file: writing atomically, reading with
 * every field validated before anything is returned.
 *
 * Layout: 8 bytes N (little-endian u64), N bytes of JSON header, then the data
 * section. Tensor bytes are little-endian IEEE values in C order, F32 or F64
 * (each tensor says which); the header's data_offsets are relative to the
 * start of the data section. The writer writes kgl_real's own dtype
 * (KGL_ST_DTYPE); the reader converts either dtype to kgl_real. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kgl/io.h"
#include "engine/internal.h"
#include "io/internal.h"

_Static_assert(sizeof(double) == 8 && sizeof(float) == 4 && sizeof(uint64_t) == 8,
               "kgl stores IEEE doubles as 8 bytes and floats as 4");

/* Bytes per value written: kgl_real's, whose dtype is KGL_ST_DTYPE (both
 * follow KGL_FLOAT32). */
#define REAL_BYTES ((int)sizeof(kgl_real))
_Static_assert(REAL_BYTES == 4 || REAL_BYTES == 8, "kgl_real is float or double");

/* The smallest magnitude that rounds to infinity as a float: FLT_MAX plus
 * half its last place (that tie goes to the even neighbour, 2^128). */
#define FLOAT_OVERFLOW 0x1.ffffffp127

/* Bytes per value of a dtype kgl reads ("F32" 4, "F64" 8), or 0. */
static int dtype_width(const char *s, size_t len)
{
    if (len == 3 && memcmp(s, "F32", 3) == 0) return 4;
    if (len == 3 && memcmp(s, "F64", 3) == 0) return 8;
    return 0;
}

/* Little-endian bytes <-> host values, whatever the host's byte order. */
static void put_le(unsigned char *b, uint64_t v, int width)
{
    for (int i = 0; i < width; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *b, int width)
{
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

static float get_f32(const unsigned char *b)
{
    uint32_t u = (uint32_t)get_le(b, 4);
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static double get_f64(const unsigned char *b)
{
    uint64_t u = get_le(b, 8);
    double x;
    memcpy(&x, &u, 8);
    return x;
}

/* One kgl_real as REAL_BYTES little-endian bytes (its bits as they are). */
static void put_real(unsigned char *b, kgl_real x)
{
    if (REAL_BYTES == 4) {
        float f = (float)x; /* x is a float: no conversion */
        uint32_t u;
        memcpy(&u, &f, 4);
        put_le(b, u, 4);
    } else {
        double d = (double)x;
        uint64_t u;
        memcpy(&u, &d, 8);
        put_le(b, u, 8);
    }
}

/* ---------------------------------------------------------------- write */

static const char *name_of(char *buf, size_t cap, const char *s) { return kgl_show(buf, cap, s, strlen(s)); }

/* Checks the caller's tensors and metadata; fills the byte size of each
 * tensor. */
static bool check_entries(const char *path, const kgl_st_entry *t, int n, const char *const *meta_kv, int n_meta,
                          uint64_t *bytes, char *err, size_t cap)
{
    char a[96];
    if (n < 0 || n_meta < 0) return kgl_path_error(err, cap, path, "negative count (%d tensors, %d metadata pairs)", n, n_meta);
    if ((n > 0 && !t) || (n_meta > 0 && !meta_kv)) return kgl_path_error(err, cap, path, "tensors or metadata missing (NULL)");
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        const kgl_st_entry *e = &t[i];
        if (!e->name) return kgl_path_error(err, cap, path, "tensor %d has no name", i);
        size_t len = strlen(e->name);
        if (!kgl_utf8_valid((const unsigned char *)e->name, len, NULL))
            return kgl_path_error(err, cap, path, "tensor name '%s' is not valid UTF-8", name_of(a, sizeof a, e->name));
        if (strcmp(e->name, "__metadata__") == 0)
            return kgl_path_error(err, cap, path, "'__metadata__' is reserved and cannot name a tensor");
        for (int j = 0; j < i; j++)
            if (strcmp(t[j].name, e->name) == 0)
                return kgl_path_error(err, cap, path, "tensor '%s' appears twice (entries %d and %d)",
                              name_of(a, sizeof a, e->name), j, i);
        if (e->ndim != 1 && e->ndim != 2)
            return kgl_path_error(err, cap, path, "tensor '%s': ndim %d, expected 1 or 2", name_of(a, sizeof a, e->name),
                          e->ndim);
        uint64_t count = 1;
        for (int d = 0; d < e->ndim; d++) {
            if (e->shape[d] < 0)
                return kgl_path_error(err, cap, path, "tensor '%s': dimension %d is %" PRId64 ", expected >= 0",
                              name_of(a, sizeof a, e->name), d, e->shape[d]);
            uint64_t s = (uint64_t)e->shape[d];
            if (s != 0 && count > (UINT64_MAX / REAL_BYTES) / s)
                return kgl_path_error(err, cap, path, "tensor '%s': shape too large", name_of(a, sizeof a, e->name));
            count *= s;
        }
        if (count > 0 && !e->data)
            return kgl_path_error(err, cap, path, "tensor '%s': data is NULL but the shape holds %" PRIu64 " values",
                          name_of(a, sizeof a, e->name), count);
        bytes[i] = count * REAL_BYTES;
        if (total > INT64_MAX - bytes[i]) return kgl_path_error(err, cap, path, "tensors too large for one file");
        total += bytes[i];
    }
    for (int i = 0; i < n_meta; i++) {
        const char *k = meta_kv[2 * i], *v = meta_kv[2 * i + 1];
        if (!k) return kgl_path_error(err, cap, path, "metadata key %d is NULL", i);
        if (!kgl_utf8_valid((const unsigned char *)k, strlen(k), NULL))
            return kgl_path_error(err, cap, path, "metadata key '%s' is not valid UTF-8", name_of(a, sizeof a, k));
        if (!v) return kgl_path_error(err, cap, path, "metadata '%s' has no value (NULL)", name_of(a, sizeof a, k));
        if (!kgl_utf8_valid((const unsigned char *)v, strlen(v), NULL))
            return kgl_path_error(err, cap, path, "metadata '%s': value is not valid UTF-8", name_of(a, sizeof a, k));
        for (int j = 0; j < i; j++)
            if (strcmp(meta_kv[2 * j], k) == 0)
                return kgl_path_error(err, cap, path, "metadata key '%s' appears twice", name_of(a, sizeof a, k));
    }
    return true;
}

/* The header JSON, padded with spaces to a multiple of 8 bytes (malloc'd):
 * the data section starts 8-aligned in the file, so each tensor is aligned
 * to its values' width (F32 needs only 4; one rule for both is simpler). */
static char *build_header(const kgl_st_entry *t, int n, const char *const *meta_kv, int n_meta,
                          const uint64_t *bytes, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *h = open_memstream(&buf, &size);
    if (!h) kgl_out_of_memory("a safetensors header", 0);
    kgl_json_writer w;
    kgl_json_writer_init(&w, h);
    kgl_json_begin_object(&w);
    if (n_meta > 0) {
        kgl_json_key(&w, "__metadata__");
        kgl_json_begin_object(&w);
        for (int i = 0; i < n_meta; i++) kgl_json_field_string(&w, meta_kv[2 * i], meta_kv[2 * i + 1]);
        kgl_json_end_object(&w);
    }
    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        kgl_json_key(&w, t[i].name);
        kgl_json_begin_object(&w);
        kgl_json_field_string(&w, "dtype", KGL_ST_DTYPE);
        kgl_json_key(&w, "shape");
        kgl_json_begin_array(&w);
        for (int d = 0; d < t[i].ndim; d++) kgl_json_put_int(&w, t[i].shape[d]);
        kgl_json_end_array(&w);
        kgl_json_key(&w, "data_offsets");
        kgl_json_begin_array(&w);
        kgl_json_put_uint(&w, offset);
        kgl_json_put_uint(&w, offset + bytes[i]);
        kgl_json_end_array(&w);
        kgl_json_end_object(&w);
        offset += bytes[i];
    }
    kgl_json_end_object(&w);
    kgl_json_writer_finish(&w);
    while (ftell(h) % 8 != 0) fputc(' ', h);
    if (ferror(h) || fclose(h) != 0) kgl_out_of_memory("a safetensors header", size);
    *len = size;
    return buf;
}

/* Writes everything to an open stream; false (errno set) on a write error. */
static bool write_body(FILE *f, const char *header, size_t header_len, const kgl_st_entry *t, int n,
                       const uint64_t *bytes)
{
    unsigned char chunk[4096];
    put_le(chunk, header_len, 8);
    if (fwrite(chunk, 1, 8, f) != 8 || fwrite(header, 1, header_len, f) != header_len) return false;
    for (int i = 0; i < n; i++) {
        uint64_t count = bytes[i] / REAL_BYTES;
        size_t fill = 0;
        for (uint64_t j = 0; j < count; j++) {
            put_real(chunk + fill, t[i].data[j]);
            fill += REAL_BYTES;
            if (fill == sizeof chunk || j + 1 == count) {
                if (fwrite(chunk, 1, fill, f) != fill) return false;
                fill = 0;
            }
        }
    }
    return fflush(f) == 0;
}

bool kgl_st_write(const char *path, const kgl_st_entry *t, int n, const char *const *meta_kv, int n_meta, char *err,
                  size_t err_cap)
{
    uint64_t *bytes = kgl_xmalloc((n > 0 ? (size_t)n : 1) * sizeof *bytes);
    if (!check_entries(path, t, n, meta_kv, n_meta, bytes, err, err_cap)) {
        free(bytes);
        return false;
    }
    size_t header_len;
    char *header = build_header(t, n, meta_kv, n_meta, bytes, &header_len);

    kgl_outfile o;
    bool ok = kgl_outfile_open(&o, path, err, err_cap);
    if (ok && !write_body(o.f, header, header_len, t, n, bytes)) {
        kgl_path_error(err, err_cap, path, "cannot write: %s", strerror(errno ? errno : EIO));
        kgl_outfile_discard(&o);
        ok = false;
    } else if (ok) {
        ok = kgl_outfile_commit(&o, err, err_cap);
    }
    free(header);
    free(bytes);
    return ok;
}

/* ----------------------------------------------------------------- read */

typedef struct span {
    uint64_t begin, end;
    int width;      /* bytes per value of its dtype */
    int index;      /* the tensor, in header order */
    uint64_t first; /* where its values go: an index into the kgl_real values */
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static bool key_is(const kgl_json *member, const char *key)
{
    return member->key_len == strlen(key) && memcmp(member->key, key, member->key_len) == 0;
}

/* A number that must be a non-negative integer; else a message naming it. */
static bool nonneg_int(const kgl_json *v, int64_t *out, char *what, size_t cap)
{
    if (v->type == KGL_JSON_NUMBER && kgl_json_int64(v, out) && *out >= 0) return true;
    if (v->type == KGL_JSON_NUMBER)
        kgl_show(what, cap, v->str, v->len);
    else
        snprintf(what, cap, "%s", kgl_json_type_name(v->type));
    return false;
}

/* "[2, 3]" from validated dimensions (at most a few shown). */
static const char *show_dims(char *buf, size_t cap, const int64_t *dims, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    o += (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < n && o < cap; i++) {
        if (i == 6) {
            o += (size_t)snprintf(buf + o, cap - o, ", ...");
            break;
        }
        o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, i ? ", " : "", dims[i]);
    }
    if (o < cap) snprintf(buf + o, cap - o, "]");
    return buf;
}

/* Checks one tensor entry; fills its shape and byte span. */
static bool check_tensor(const char *path, const kgl_json *e, uint64_t data_size, kgl_st_tensor *out, span *sp,
                         char *err, size_t cap)
{
    char name[96], what[96], dims_text[160];
    kgl_show(name, sizeof name, e->key, e->key_len);
    if (memchr(e->key, 0, e->key_len)) return kgl_path_error(err, cap, path, "tensor name '%s' contains a NUL byte", name);
    if (e->type != KGL_JSON_OBJECT)
        return kgl_path_error(err, cap, path, "tensor '%s' is %s, expected an object with dtype, shape and data_offsets", name,
                      kgl_json_type_name(e->type));
    for (size_t i = 0; i < e->len; i++) {
        const kgl_json *c = &e->child[i];
        if (!key_is(c, "dtype") && !key_is(c, "shape") && !key_is(c, "data_offsets"))
            return kgl_path_error(err, cap, path,
                          "tensor '%s': unexpected key '%s' (an entry has exactly dtype, shape and data_offsets)", name,
                          kgl_show(what, sizeof what, c->key, c->key_len));
    }
    const kgl_json *dtype = kgl_json_get(e, "dtype"), *shape = kgl_json_get(e, "shape"),
                   *offs = kgl_json_get(e, "data_offsets");
    if (!dtype) return kgl_path_error(err, cap, path, "tensor '%s': no dtype", name);
    if (!shape) return kgl_path_error(err, cap, path, "tensor '%s': no shape", name);
    if (!offs) return kgl_path_error(err, cap, path, "tensor '%s': no data_offsets", name);

    if (dtype->type != KGL_JSON_STRING)
        return kgl_path_error(err, cap, path, "tensor '%s': dtype is %s, expected the string \"F32\" or \"F64\"", name,
                      kgl_json_type_name(dtype->type));
    int width = dtype_width(dtype->str, dtype->len);
    if (!width)
        return kgl_path_error(err, cap, path, "tensor '%s': dtype %s, expected F32 or F64", name,
                      kgl_show(what, sizeof what, dtype->str, dtype->len));

    if (shape->type != KGL_JSON_ARRAY)
        return kgl_path_error(err, cap, path, "tensor '%s': shape is %s, expected a list of 1 or 2 integers", name,
                      kgl_json_type_name(shape->type));
    int64_t dims[6];
    for (size_t i = 0; i < shape->len; i++) {
        int64_t d;
        if (!nonneg_int(&shape->child[i], &d, what, sizeof what))
            return kgl_path_error(err, cap, path, "tensor '%s': shape entry %zu is %s, expected a non-negative integer", name, i,
                          what);
        if (i < 6) dims[i] = d;
    }
    show_dims(dims_text, sizeof dims_text, dims, shape->len);
    if (shape->len == 0)
        return kgl_path_error(err, cap, path, "tensor '%s': shape [] (a scalar) is not supported; kgl reads 1-D and 2-D tensors",
                      name);
    if (shape->len > 2)
        return kgl_path_error(err, cap, path, "tensor '%s': shape %s has %zu dimensions; kgl reads 1-D and 2-D tensors", name,
                      dims_text, shape->len);

    if (offs->type != KGL_JSON_ARRAY)
        return kgl_path_error(err, cap, path, "tensor '%s': data_offsets is %s, expected [begin, end]", name,
                      kgl_json_type_name(offs->type));
    if (offs->len != 2)
        return kgl_path_error(err, cap, path, "tensor '%s': data_offsets has %zu entr%s, expected [begin, end]", name,
                      offs->len, offs->len == 1 ? "y" : "ies");
    int64_t be[2];
    for (int i = 0; i < 2; i++)
        if (!nonneg_int(&offs->child[i], &be[i], what, sizeof what))
            return kgl_path_error(err, cap, path, "tensor '%s': data_offsets entry %d is %s, expected a non-negative integer",
                          name, i, what);
    uint64_t begin = (uint64_t)be[0], end = (uint64_t)be[1];
    if (begin > end)
        return kgl_path_error(err, cap, path, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin",
                      name, begin, end);
    if (end > data_size)
        return kgl_path_error(err, cap, path,
                      "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                      "] run past the end of the data section (%" PRIu64 " bytes)",
                      name, begin, end, data_size);
    if ((end - begin) % (uint64_t)width != 0)
        return kgl_path_error(err, cap, path,
                      "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] span %" PRIu64
                      " bytes, not a whole number of %d-byte %s values",
                      name, begin, end, end - begin, width, dtype->str);
    uint64_t need = 1; /* values; at 8 bytes each (the widest dtype) their bytes cannot overflow */
    for (size_t i = 0; i < shape->len; i++) {
        uint64_t d = (uint64_t)dims[i];
        if (d != 0 && need > (UINT64_MAX / 8) / d)
            return kgl_path_error(err, cap, path, "tensor '%s': shape %s holds more values than any file can", name, dims_text);
        need *= d;
    }
    if ((end - begin) / (uint64_t)width != need)
        return kgl_path_error(err, cap, path,
                      "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64 " %s values but shape %s needs %" PRIu64,
                      name, begin, end, (end - begin) / (uint64_t)width, dtype->str, dims_text, need);
    out->ndim = (int)shape->len;
    out->shape[0] = dims[0];
    out->shape[1] = shape->len == 2 ? dims[1] : 1;
    memcpy(out->dtype, dtype->str, 4);
    sp->begin = begin;
    sp->end = end;
    sp->width = width;
    return true;
}

static bool check_metadata(const char *path, const kgl_json *m, char *err, size_t cap)
{
    char a[96];
    if (m->type != KGL_JSON_OBJECT)
        return kgl_path_error(err, cap, path, "__metadata__ is %s, expected an object of strings", kgl_json_type_name(m->type));
    for (size_t i = 0; i < m->len; i++) {
        const kgl_json *v = &m->child[i];
        kgl_show(a, sizeof a, v->key, v->key_len);
        if (memchr(v->key, 0, v->key_len)) return kgl_path_error(err, cap, path, "__metadata__ key '%s' contains a NUL byte", a);
        if (v->type != KGL_JSON_STRING)
            return kgl_path_error(err, cap, path, "__metadata__ '%s' is %s, expected a string", a, kgl_json_type_name(v->type));
        if (memchr(v->str, 0, v->len)) return kgl_path_error(err, cap, path, "__metadata__ '%s' contains a NUL byte", a);
    }
    return true;
}

/* Whether 8 bytes could begin a text file: printable ASCII, tab, CR, LF,
 * and bytes that occur in UTF-8 (0x80..0xF4). A real header length below
 * the 100 MB cap has zero bytes in its top half, so it never looks so. */
static bool looks_like_text(const unsigned char *b)
{
    for (int i = 0; i < 8; i++) {
        unsigned c = b[i];
        bool text = (c >= 0x20 && c < 0x7f) || c == '\t' || c == '\n' || c == '\r' || (c >= 0x80 && c <= 0xf4);
        if (!text) return false;
    }
    return true;
}

/* The whole file (regular files only), after checking the header length
 * against its size, or with header_only its first 8 + header length bytes.
 * Returns the buffer (at least 8 bytes) or NULL; *size_out is the file's size. */
static unsigned char *read_file(const char *path, bool header_only, uint64_t *size_out, uint64_t *header_len,
                                char *err, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        kgl_path_error(err, cap, path, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    unsigned char *buf = NULL;
    if (fstat(fileno(f), &st) != 0) {
        kgl_path_error(err, cap, path, "cannot read: %s", strerror(errno));
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        kgl_path_error(err, cap, path, "is a folder, not a safetensors file");
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        kgl_path_error(err, cap, path, "is not a regular file");
        goto fail;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size < 8) {
        kgl_path_error(err, cap, path, "file is %" PRIu64 " bytes long; a safetensors file starts with an 8-byte header length",
               size);
        goto fail;
    }
    if (size > SIZE_MAX) {
        kgl_path_error(err, cap, path, "file is %" PRIu64 " bytes long, too large for this machine", size);
        goto fail;
    }
    unsigned char head[8];
    if (fread(head, 1, 8, f) != 8) {
        kgl_path_error(err, cap, path, "cannot read: %s", ferror(f) ? strerror(errno) : "the file shrank while being read");
        goto fail;
    }
    uint64_t n = get_le(head, 8);
    /* A length no file could have means this is not a safetensors file at
       all; the commonest such file is text (a triples file given to
       --checkpoint), whose first bytes read as an absurd length. */
    if (n > size - 8 || n > KGL_ST_MAX_HEADER) {
        if (looks_like_text(head))
            kgl_path_error(err, cap, path, "not a safetensors file: it starts with text, not an 8-byte header length "
                   "(is it a triples file?)");
        else if (n > size - 8)
            kgl_path_error(err, cap, path, "not a safetensors file: its header length %" PRIu64 " (the first 8 bytes) "
                   "exceeds the file size %" PRIu64, n, size);
        else
            kgl_path_error(err, cap, path, "header length %" PRIu64 " exceeds the limit of %d bytes", n, KGL_ST_MAX_HEADER);
        goto fail;
    }
    uint64_t wanted = header_only ? 8 + n : size;
    buf = malloc((size_t)wanted);
    if (!buf) {
        kgl_path_error(err, cap, path, "cannot read: %" PRIu64 " bytes do not fit in memory", wanted);
        goto fail;
    }
    memcpy(buf, head, 8);
    size_t got = fread(buf + 8, 1, (size_t)wanted - 8, f);
    if (got != wanted - 8) {
        kgl_path_error(err, cap, path, "cannot read: %s",
               ferror(f) ? strerror(errno) : "the file shrank while being read");
        goto fail;
    }
    fclose(f);
    *size_out = size;
    *header_len = n;
    return buf;
fail:
    free(buf);
    fclose(f);
    return NULL;
}

/* Decodes the data section (at the start of buf, tiled by the sorted spans)
 * into kgl_real values in place, span i's from values[spans[i].first] on.
 * No value is written where one not yet read lies: when kgl_real is as wide
 * as any dtype (double), values move towards the end or stay, so the loop
 * runs from the last value back; when it is narrower (float), they move
 * towards the start, so it runs forward. An F64 value beyond float's range
 * is refused rather than made infinite (NaN and infinities stay as they
 * are: the caller judges values). */
static bool decode_values(const char *path, unsigned char *buf, const span *spans, size_t n,
                          const kgl_st_tensor *tensors, char *err, size_t cap)
{
    const bool backward = REAL_BYTES == 8;
    kgl_real *values = (kgl_real *)(void *)buf;
    char a[96];
    for (size_t j = 0; j < n; j++) {
        const span *s = &spans[backward ? n - 1 - j : j];
        uint64_t count = (s->end - s->begin) / (uint64_t)s->width;
        for (uint64_t m = 0; m < count; m++) {
            uint64_t k = backward ? count - 1 - m : m;
            const unsigned char *in = buf + s->begin + k * (uint64_t)s->width;
            if (s->width == 4) {
                values[s->first + k] = get_f32(in); /* exact */
                continue;
            }
            double x = get_f64(in);
            if (REAL_BYTES == 4 && isfinite(x) && fabs(x) >= FLOAT_OVERFLOW)
                return kgl_path_error(err, cap, path, "tensor '%s' element %" PRIu64 ": value %.9g does not fit in float32",
                                      name_of(a, sizeof a, tensors[s->index].name), k, x);
            values[s->first + k] = (kgl_real)x; /* the nearest float, or the same double */
        }
    }
    return true;
}

/* The header's first checks, then its JSON: `doc` holds an object after. */
static bool parse_header(const char *path, const char *header, uint64_t hlen, kgl_json_doc *doc, char *err, size_t cap)
{
    char jerr[200];
    if (hlen == 0) return kgl_path_error(err, cap, path, "header is empty (its length is 0)");
    if (header[0] != '{') {
        unsigned c = (unsigned char)header[0];
        if (c >= 0x21 && c < 0x7f)
            return kgl_path_error(err, cap, path, "header does not start with '{' (found '%c')", (char)c);
        return kgl_path_error(err, cap, path, "header does not start with '{' (found byte 0x%02x)", c);
    }
    if (!kgl_json_parse(header, (size_t)hlen, doc, jerr, sizeof jerr)) {
        if (doc->error_at == SIZE_MAX) return kgl_path_error(err, cap, path, "cannot parse the header: %s", jerr);
        return kgl_path_error(err, cap, path, "header is not valid JSON %s", jerr);
    }
    return true;
}

/* Checks each entry of the header and copies it into out: its tensors (their
 * data still unread) into out->tensors with their spans in *spans_out, its
 * metadata into out->meta_keys and out->meta_values, all in one block
 * (out->storage_); sets *n_t_out and *n_m_out. `root` is an object: the
 * header starts with '{'. */
static bool read_entries(const char *path, const kgl_json *root, uint64_t data_size, kgl_st_file *out,
                         span **spans_out, size_t *n_t_out, size_t *n_m_out, char *err, size_t cap)
{
    /* Count, then check each entry. */
    size_t n_t = 0, n_m = 0, str_bytes = 0;
    const kgl_json *meta = NULL;
    for (size_t i = 0; i < root->len; i++) {
        const kgl_json *e = &root->child[i];
        if (key_is(e, "__metadata__")) {
            if (!check_metadata(path, e, err, cap)) return false;
            meta = e;
            n_m = e->len;
            for (size_t j = 0; j < e->len; j++) str_bytes += e->child[j].key_len + 1 + e->child[j].len + 1;
        } else {
            n_t++;
            str_bytes += e->key_len + 1;
        }
    }
    if (n_t > INT32_MAX || n_m > INT32_MAX) return kgl_path_error(err, cap, path, "too many entries in the header");
    size_t tensors_bytes = n_t * sizeof(kgl_st_tensor), ptr_bytes = 2 * n_m * sizeof(char *);
    char *storage = malloc(tensors_bytes + ptr_bytes + str_bytes + 1);
    span *spans = *spans_out = malloc((n_t ? n_t : 1) * sizeof *spans);
    out->storage_ = storage;
    if (!storage || !spans)
        return kgl_path_error(err, cap, path, "out of memory for the names of %zu tensors", n_t);
    out->tensors = (kgl_st_tensor *)storage;
    out->meta_keys = (char **)(storage + tensors_bytes);
    out->meta_values = out->meta_keys + n_m;
    char *strs = storage + tensors_bytes + ptr_bytes;

    int k = 0;
    for (size_t i = 0; i < root->len; i++) {
        const kgl_json *e = &root->child[i];
        if (e == meta) continue;
        kgl_st_tensor *t = &out->tensors[k];
        memset(t, 0, sizeof *t);
        if (!check_tensor(path, e, data_size, t, &spans[k], err, cap)) return false;
        spans[k].index = k;
        t->name = strs;
        memcpy(strs, e->key, e->key_len + 1);
        strs += e->key_len + 1;
        k++;
    }
    for (size_t j = 0; j < n_m; j++) {
        const kgl_json *v = &meta->child[j];
        out->meta_keys[j] = strs;
        memcpy(strs, v->key, v->key_len + 1);
        strs += v->key_len + 1;
        out->meta_values[j] = strs;
        memcpy(strs, v->str, v->len + 1);
        strs += v->len + 1;
    }
    *n_t_out = n_t;
    *n_m_out = n_m;
    return true;
}

/* The data section, in offset order (sorts spans): no overlaps, no holes. */
static bool check_coverage(const char *path, span *spans, size_t n_t, uint64_t data_size,
                           const kgl_st_tensor *tensors, char *err, size_t cap)
{
    char a[96], b[96];
    qsort(spans, n_t, sizeof *spans, cmp_span);
    uint64_t covered = 0;
    const span *last = NULL; /* the span that ends at `covered` */
    for (size_t i = 0; i < n_t; i++) {
        const span *s = &spans[i];
        if (s->begin < covered) {
            const span *x = last->index < s->index ? last : s, *y = x == s ? last : s; /* in header order */
            return kgl_path_error(err, cap, path,
                   "tensors '%s' and '%s' overlap (data_offsets [%" PRIu64 ", %" PRIu64 "] and [%" PRIu64 ", %" PRIu64
                   "])",
                   name_of(a, sizeof a, tensors[x->index].name), name_of(b, sizeof b, tensors[y->index].name),
                   x->begin, x->end, y->begin, y->end);
        }
        if (s->begin > covered)
            return kgl_path_error(err, cap, path,
                   "bytes [%" PRIu64 ", %" PRIu64 ") of the data section belong to no tensor (a hole before '%s')",
                   covered, s->begin, name_of(a, sizeof a, tensors[s->index].name));
        if (!last || s->end > covered) {
            covered = s->end;
            last = s;
        }
    }
    if (covered != data_size) {
        if (n_t == 0)
            return kgl_path_error(err, cap, path,
                   "the data section holds %" PRIu64 " bytes but the header lists no tensor", data_size);
        return kgl_path_error(err, cap, path,
                   "bytes [%" PRIu64 ", %" PRIu64 ") of the data section belong to no tensor (after the last one)",
                   covered, data_size);
    }
    return true;
}

/* The values, in offset order, become kgl_real values in place: the
 * data moves to the start of the (malloc-aligned) buffer, which grows
 * first when kgl_real is wider than the file's values, and shrinks to
 * them after. On success the buffer (*bufp) belongs to out, as out->data_,
 * and *bufp is NULL. */
static bool convert_values(const char *path, unsigned char **bufp, uint64_t size, uint64_t hlen, uint64_t data_size,
                           span *spans, size_t n_t, kgl_st_file *out, char *err, size_t cap)
{
    unsigned char *buf = *bufp;
    uint64_t n_values = 0;
    for (size_t i = 0; i < n_t; i++) {
        spans[i].first = n_values;
        n_values += (spans[i].end - spans[i].begin) / (uint64_t)spans[i].width;
    }
    if (n_values > SIZE_MAX / sizeof(kgl_real))
        return kgl_path_error(err, cap, path, "cannot read: %" PRIu64 " values do not fit in memory", n_values);
    size_t values_bytes = (size_t)n_values * sizeof(kgl_real);
    memmove(buf, buf + 8 + hlen, (size_t)data_size);
    if (values_bytes > size) {
        unsigned char *grown = realloc(buf, values_bytes);
        if (!grown) return kgl_path_error(err, cap, path, "cannot read: %zu bytes do not fit in memory", values_bytes);
        *bufp = buf = grown;
    }
    if (!decode_values(path, buf, spans, n_t, out->tensors, err, cap)) return false;
    unsigned char *data = values_bytes ? realloc(buf, values_bytes) : buf; /* shrinks */
    if (data) buf = data;
    data = buf;
    for (size_t i = 0; i < n_t; i++) out->tensors[spans[i].index].data = (kgl_real *)(void *)data + spans[i].first;
    out->data_ = data;
    *bufp = NULL;
    return true;
}

/* kgl_st_read, or with !with_values kgl_st_read_header. */
static bool st_read(const char *path, kgl_st_file *out, bool with_values, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    uint64_t size, hlen;
    unsigned char *buf = read_file(path, !with_values, &size, &hlen, err, cap);
    if (!buf) return false;
    uint64_t data_size = size - 8 - hlen;
    kgl_json_doc doc = {0};
    span *spans = NULL;
    size_t n_t = 0, n_m = 0;
    /* without values, the file's layout is checked whole but its values are not read */
    bool ok = parse_header(path, (const char *)buf + 8, hlen, &doc, err, cap) &&
              read_entries(path, doc.root, data_size, out, &spans, &n_t, &n_m, err, cap) &&
              check_coverage(path, spans, n_t, data_size, out->tensors, err, cap) &&
              (!with_values || convert_values(path, &buf, size, hlen, data_size, spans, n_t, out, err, cap));
    if (ok) {
        out->n = (int)n_t;
        out->n_meta = (int)n_m;
    }
    free(spans);
    kgl_json_free(&doc);
    free(buf);
    if (!ok) {
        free(out->storage_);
        memset(out, 0, sizeof *out);
    }
    return ok;
}

bool kgl_st_read(const char *path, kgl_st_file *out, char *err, size_t cap)
{
    return st_read(path, out, true, err, cap);
}

bool kgl_st_read_header(const char *path, kgl_st_file *out, char *err, size_t cap)
{
    return st_read(path, out, false, err, cap);
}

void kgl_st_free(kgl_st_file *f)
{
    free(f->storage_);
    free(f->data_);
    memset(f, 0, sizeof *f);
}

const kgl_st_tensor *kgl_st_find(const kgl_st_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

const char *kgl_st_file_dtype(const kgl_st_file *f)
{
    if (f->n == 0) return "none";
    for (int i = 1; i < f->n; i++)
        if (strcmp(f->tensors[i].dtype, f->tensors[0].dtype) != 0) return "mixed";
    return f->tensors[0].dtype;
}

const char *kgl_st_meta(const kgl_st_file *f, const char *key)
{
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}
