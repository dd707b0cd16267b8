/* safetensors.c — the checkpoint file: writing atomically, reading with
 * every field validated before anything is returned.
 *
 * Layout: 8 bytes N (little-endian u64), N bytes of JSON header, then the data
 * section. Tensor bytes are little-endian F64 in C order; the header's
 * data_offsets are relative to the start of the data section. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kgl/io.h"
#include "engine/internal.h"
#include "io/internal.h"

_Static_assert(sizeof(double) == 8 && sizeof(uint64_t) == 8, "kgl stores IEEE doubles as 8 bytes");

#define F64 8 /* bytes per value */

/* Little-endian bytes <-> host values, whatever the host's byte order. */
static void put_le64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
    return v;
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
            if (s != 0 && count > (UINT64_MAX / F64) / s)
                return kgl_path_error(err, cap, path, "tensor '%s': shape too large", name_of(a, sizeof a, e->name));
            count *= s;
        }
        if (count > 0 && !e->data)
            return kgl_path_error(err, cap, path, "tensor '%s': data is NULL but the shape holds %" PRIu64 " values",
                          name_of(a, sizeof a, e->name), count);
        bytes[i] = count * F64;
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

/* The header JSON, padded with spaces to a multiple of 8 bytes (malloc'd). */
static char *build_header(const kgl_st_entry *t, int n, const char *const *meta_kv, int n_meta,
                          const uint64_t *bytes, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *h = open_memstream(&buf, &size);
    if (!h) kgl_out_of_memory("a safetensors header", 0);
    fputc('{', h);
    if (n_meta > 0) {
        fputs("\"__metadata__\":{", h);
        for (int i = 0; i < n_meta; i++) {
            if (i) fputc(',', h);
            kgl_json_string(h, meta_kv[2 * i]);
            fputc(':', h);
            kgl_json_string(h, meta_kv[2 * i + 1]);
        }
        fputc('}', h);
    }
    uint64_t offset = 0;
    for (int i = 0; i < n; i++) {
        if (i || n_meta > 0) fputc(',', h);
        kgl_json_string(h, t[i].name);
        fputs(":{\"dtype\":\"F64\",\"shape\":[", h);
        for (int d = 0; d < t[i].ndim; d++) fprintf(h, "%s%" PRId64, d ? "," : "", t[i].shape[d]);
        fprintf(h, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", offset, offset + bytes[i]);
        offset += bytes[i];
    }
    fputc('}', h);
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
    put_le64(chunk, header_len);
    if (fwrite(chunk, 1, 8, f) != 8 || fwrite(header, 1, header_len, f) != header_len) return false;
    for (int i = 0; i < n; i++) {
        uint64_t count = bytes[i] / F64;
        size_t fill = 0;
        for (uint64_t j = 0; j < count; j++) {
            uint64_t u;
            memcpy(&u, &t[i].data[j], 8);
            put_le64(chunk + fill, u);
            fill += 8;
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
    int index; /* the tensor, in header order */
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
        return kgl_path_error(err, cap, path, "tensor '%s': dtype is %s, expected the string \"F64\"", name,
                      kgl_json_type_name(dtype->type));
    if (strcmp(dtype->str, "F64") != 0 || dtype->len != 3)
        return kgl_path_error(err, cap, path, "tensor '%s': dtype %s, expected F64", name,
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
    if ((end - begin) % F64 != 0)
        return kgl_path_error(err, cap, path,
                      "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] span %" PRIu64
                      " bytes, not a whole number of 8-byte F64 values",
                      name, begin, end, end - begin);
    uint64_t need = 1;
    for (size_t i = 0; i < shape->len; i++) {
        uint64_t d = (uint64_t)dims[i];
        if (d != 0 && need > (UINT64_MAX / F64) / d)
            return kgl_path_error(err, cap, path, "tensor '%s': shape %s holds more values than any file can", name, dims_text);
        need *= d;
    }
    if ((end - begin) / F64 != need)
        return kgl_path_error(err, cap, path,
                      "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64 " values but shape %s needs %" PRIu64,
                      name, begin, end, (end - begin) / F64, dims_text, need);
    out->ndim = (int)shape->len;
    out->shape[0] = dims[0];
    out->shape[1] = shape->len == 2 ? dims[1] : 1;
    sp->begin = begin;
    sp->end = end;
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
 * against its size. Returns the buffer (size bytes, at least 8) or NULL. */
static unsigned char *read_file(const char *path, uint64_t *size_out, uint64_t *header_len, char *err, size_t cap)
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
    uint64_t n = get_le64(head);
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
    buf = malloc((size_t)size);
    if (!buf) {
        kgl_path_error(err, cap, path, "cannot read: %" PRIu64 " bytes do not fit in memory", size);
        goto fail;
    }
    memcpy(buf, head, 8);
    size_t got = fread(buf + 8, 1, (size_t)size - 8, f);
    if (got != size - 8) {
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

bool kgl_st_read(const char *path, kgl_st_file *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    uint64_t size, hlen;
    unsigned char *buf = read_file(path, &size, &hlen, err, cap);
    if (!buf) return false;
    const char *header = (const char *)buf + 8;
    uint64_t data_size = size - 8 - hlen;
    kgl_json_doc doc = {0};
    span *spans = NULL;
    bool ok = false;
    char jerr[200], a[96], b[96];

    if (hlen == 0) {
        kgl_path_error(err, cap, path, "header is empty (its length is 0)");
        goto done;
    }
    if (header[0] != '{') {
        unsigned c = (unsigned char)header[0];
        if (c >= 0x21 && c < 0x7f)
            kgl_path_error(err, cap, path, "header does not start with '{' (found '%c')", (char)c);
        else
            kgl_path_error(err, cap, path, "header does not start with '{' (found byte 0x%02x)", c);
        goto done;
    }
    if (!kgl_json_parse(header, (size_t)hlen, &doc, jerr, sizeof jerr)) {
        if (doc.error_at == SIZE_MAX)
            kgl_path_error(err, cap, path, "cannot parse the header: %s", jerr);
        else
            kgl_path_error(err, cap, path, "header is not valid JSON %s", jerr);
        goto done;
    }
    const kgl_json *root = doc.root; /* an object: it starts with '{' */

    /* Count, then check each entry. */
    size_t n_t = 0, n_m = 0, str_bytes = 0;
    const kgl_json *meta = NULL;
    for (size_t i = 0; i < root->len; i++) {
        const kgl_json *e = &root->child[i];
        if (key_is(e, "__metadata__")) {
            if (!check_metadata(path, e, err, cap)) goto done;
            meta = e;
            n_m = e->len;
            for (size_t j = 0; j < e->len; j++) str_bytes += e->child[j].key_len + 1 + e->child[j].len + 1;
        } else {
            n_t++;
            str_bytes += e->key_len + 1;
        }
    }
    if (n_t > INT32_MAX || n_m > INT32_MAX) {
        kgl_path_error(err, cap, path, "too many entries in the header");
        goto done;
    }
    size_t tensors_bytes = n_t * sizeof(kgl_st_tensor), ptr_bytes = 2 * n_m * sizeof(char *);
    char *storage = malloc(tensors_bytes + ptr_bytes + str_bytes + 1);
    spans = malloc((n_t ? n_t : 1) * sizeof *spans);
    out->storage_ = storage;
    if (!storage || !spans) {
        kgl_path_error(err, cap, path, "out of memory for the names of %zu tensors", n_t);
        goto done;
    }
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
        if (!check_tensor(path, e, data_size, t, &spans[k], err, cap)) goto done;
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

    /* The data section, in offset order: no overlaps, no holes. */
    qsort(spans, n_t, sizeof *spans, cmp_span);
    uint64_t covered = 0;
    const span *last = NULL; /* the span that ends at `covered` */
    for (size_t i = 0; i < n_t; i++) {
        const span *s = &spans[i];
        if (s->begin < covered) {
            const span *x = last->index < s->index ? last : s, *y = x == s ? last : s; /* in header order */
            kgl_path_error(err, cap, path,
                   "tensors '%s' and '%s' overlap (data_offsets [%" PRIu64 ", %" PRIu64 "] and [%" PRIu64 ", %" PRIu64
                   "])",
                   name_of(a, sizeof a, out->tensors[x->index].name), name_of(b, sizeof b, out->tensors[y->index].name),
                   x->begin, x->end, y->begin, y->end);
            goto done;
        }
        if (s->begin > covered) {
            kgl_path_error(err, cap, path,
                   "bytes [%" PRIu64 ", %" PRIu64 ") of the data section belong to no tensor (a hole before '%s')",
                   covered, s->begin, name_of(a, sizeof a, out->tensors[s->index].name));
            goto done;
        }
        if (!last || s->end > covered) {
            covered = s->end;
            last = s;
        }
    }
    if (covered != data_size) {
        if (n_t == 0)
            kgl_path_error(err, cap, path, "the data section holds %" PRIu64 " bytes but the header lists no tensor",
                   data_size);
        else
            kgl_path_error(err, cap, path,
                   "bytes [%" PRIu64 ", %" PRIu64 ") of the data section belong to no tensor (after the last one)",
                   covered, data_size);
        goto done;
    }

    /* Move the data to the start of the (malloc-aligned) buffer and decode
     * each value from little-endian bytes in place. Every tensor begins at a
     * multiple of 8: the tensors tile the section from 0 in whole values. */
    memmove(buf, buf + 8 + hlen, (size_t)data_size);
    for (uint64_t o = 0; o < data_size; o += F64) {
        uint64_t u = get_le64(buf + o);
        memcpy(buf + o, &u, 8);
    }
    unsigned char *data = data_size ? realloc(buf, (size_t)data_size) : buf; /* shrinks */
    if (data) buf = data;
    data = buf;
    for (size_t i = 0; i < n_t; i++) {
        const span *s = &spans[i];
        out->tensors[s->index].data = (double *)(void *)(data + s->begin);
    }
    out->data_ = data;
    buf = NULL;
    out->n = (int)n_t;
    out->n_meta = (int)n_m;
    ok = true;
done:
    free(spans);
    kgl_json_free(&doc);
    free(buf);
    if (!ok) {
        free(out->storage_);
        memset(out, 0, sizeof *out);
    }
    return ok;
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

const char *kgl_st_meta(const kgl_st_file *f, const char *key)
{
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}
