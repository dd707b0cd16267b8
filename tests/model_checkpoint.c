/* model_checkpoint.c — the checkpoint file: a bit-exact round trip, a
 * stdlib-only Python reader, atomic replacement, one crafted file per
 * validation error (with its message), and a corruption loop that must never
 * crash the reader (make sanitize runs it under ASan + UBSan). */
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define KOREAN "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4" /* 한국어 */

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static double nan_with_payload(void)
{
    uint64_t u = 0x7ff8000000012345u;
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static const char *tmp_path(test_ctx *T, int slot, const char *name)
{
    static char paths[4][512];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", T->tmp, name);
    return paths[slot];
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Names in a folder, sorted, joined by spaces. */
static const char *listing(const char *dir)
{
    static char out[1024];
    char names[16][256];
    int n = 0;
    out[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return "(no folder)";
    struct dirent *e;
    while ((e = readdir(d)) && n < 16)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) snprintf(names[n++], 256, "%s", e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char t[256];
                memcpy(t, names[i], 256), memcpy(names[i], names[j], 256), memcpy(names[j], t, 256);
            }
    for (int i = 0; i < n; i++) {
        if (i) strcat(out, " ");
        strncat(out, names[i], sizeof out - strlen(out) - 2);
    }
    return out;
}

/* The tensors of the round trip: a 2-D, a 1-D and an empty 2-D (0 rows). */
static const double WQ[6] = {1.0, -0.0, 5e-324, 1.7976931348623157e308, 0.1, -1.0 / 3.0};
static const double GAMMA[4] = {3.141592653589793, -2.5e-300, 1e22, 123456789.125};
static const char *const META[] = {"format",   "kgl/1",
                                   "entities", "alice\nbob\n" KOREAN "\n\xf0\x9f\x98\x80",
                                   "note",     "quote \" backslash \\ tab \t end"};

static bool write_three(const char *path, const double *wq, char *err)
{
    kgl_st_entry t[3] = {
        {"attn.wq", 2, {2, 3}, wq},
        {"ln1.gamma", 1, {4, 0}, GAMMA},
        {"empty", 2, {0, 3}, NULL},
    };
    return kgl_st_write(path, t, 3, META, 3, err, 512);
}

TEST(safetensors_round_trip_bit_exact)
{
    char err[512] = "";
    double wq[6];
    memcpy(wq, WQ, sizeof wq);
    wq[1] = nan_with_payload(); /* NaN payloads and infinities survive too */
    wq[4] = -INFINITY;
    const char *path = tmp_path(T, 0, "round.safetensors");
    CHECK(write_three(path, wq, err));
    CHECK(err[0] == 0);

    kgl_st_file f;
    CHECK(kgl_st_read(path, &f, err, sizeof err));
    if (!CHECK(f.n == 3 && f.n_meta == 3)) {
        printf("    %s\n", err);
        return;
    }
    /* header order is the order written */
    CHECK(strcmp(f.tensors[0].name, "attn.wq") == 0 && strcmp(f.tensors[2].name, "empty") == 0);
    const kgl_st_tensor *a = kgl_st_find(&f, "attn.wq"), *g = kgl_st_find(&f, "ln1.gamma"), *e = kgl_st_find(&f, "empty");
    CHECK(a && a->ndim == 2 && a->shape[0] == 2 && a->shape[1] == 3);
    CHECK(g && g->ndim == 1 && g->shape[0] == 4 && g->shape[1] == 1);
    CHECK(e && e->ndim == 2 && e->shape[0] == 0 && e->shape[1] == 3 && e->data != NULL);
    CHECK(kgl_st_find(&f, "attn") == NULL && kgl_st_find(&f, "__metadata__") == NULL);
    for (int i = 0; i < 6; i++) CHECK(same_bits(a->data[i], wq[i]));
    for (int i = 0; i < 4; i++) CHECK(same_bits(g->data[i], GAMMA[i]));
    CHECK(((uintptr_t)a->data % _Alignof(double)) == 0 && ((uintptr_t)g->data % _Alignof(double)) == 0);
    for (int i = 0; i < 3; i++) {
        CHECK(strcmp(f.meta_keys[i], META[2 * i]) == 0);
        CHECK(strcmp(f.meta_values[i], META[2 * i + 1]) == 0);
    }
    CHECK(strcmp(kgl_st_meta(&f, "entities"), "alice\nbob\n" KOREAN "\n\xf0\x9f\x98\x80") == 0);
    CHECK(kgl_st_meta(&f, "step") == NULL);
    kgl_st_free(&f);
    CHECK(f.n == 0 && f.tensors == NULL);
    kgl_st_free(&f); /* twice is harmless */

    /* The bytes on disk: header length, padded header, little-endian values. */
    FILE *fp = fopen(path, "rb");
    unsigned char buf[2048];
    size_t got = fp ? fread(buf, 1, sizeof buf, fp) : 0;
    if (fp) fclose(fp);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    CHECK(n % 8 == 0 && got == 8 + n + 80); /* 10 values */
    CHECK(memcmp(buf + 8, "{\"__metadata__\":{\"format\":\"kgl/1\",", 34) == 0);
    CHECK(buf[8 + n - 1] == ' ' || buf[8 + n - 1] == '}');
    CHECK(strstr((const char *)buf + 8, "\"empty\":{\"dtype\":\"F64\",\"shape\":[0,3],\"data_offsets\":[80,80]}") != NULL);
    /* wq[0] = 1.0 = 0x3ff0000000000000, first in the data section */
    static const unsigned char one_le[8] = {0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
    CHECK(memcmp(buf + 8 + n, one_le, 8) == 0);
}

TEST(safetensors_no_tensors_and_unpadded_headers)
{
    char err[512] = "";
    kgl_st_file f;
    const char *path = tmp_path(T, 0, "nothing.safetensors");
    CHECK(kgl_st_write(path, NULL, 0, NULL, 0, err, sizeof err));
    CHECK(file_size(path) == 16); /* "{}" and six spaces */
    CHECK(kgl_st_read(path, &f, err, sizeof err) && f.n == 0 && f.n_meta == 0);
    kgl_st_free(&f);

    /* Another writer may leave the header unpadded, so the data starts at an
     * odd offset: the values are still read exactly (copied, never cast). */
    const char h[] = "{\"x\":{\"dtype\":\"F64\",\"shape\":[1,2],\"data_offsets\":[0,16]}}";
    unsigned char file[8 + sizeof h - 1 + 16];
    size_t hl = sizeof h - 1;
    CHECK(hl % 8 != 0);
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)(hl >> (8 * i));
    memcpy(file + 8, h, hl);
    static const unsigned char vals[16] = {0, 0, 0, 0, 0, 0, 0xf0, 0xbf, /* -1.0 */ 0, 0, 0, 0, 0, 0, 0x22, 0x40 /* 9 */};
    memcpy(file + 8 + hl, vals, 16);
    const char *p = write_tmp(T, 1, "odd.safetensors", (const char *)file, sizeof file);
    CHECK(kgl_st_read(p, &f, err, sizeof err));
    CHECK(f.n == 1 && f.tensors[0].data[0] == -1.0 && f.tensors[0].data[1] == 9.0);
    kgl_st_free(&f);
}

static bool parse_doubles(const char *json, double *out, int cap, int *n)
{
    kgl_json_doc doc;
    char err[256];
    if (!kgl_json_parse(json, strlen(json), &doc, err, sizeof err) || doc.root->type != KGL_JSON_ARRAY) return false;
    *n = (int)doc.root->len;
    for (int i = 0; i < *n && i < cap; i++) out[i] = doc.root->child[i].num;
    kgl_json_free(&doc);
    return true;
}

TEST(safetensors_python_stdlib_reader)
{
    char out[8192], errout[2048], err[512];
    if (run_sh(T, "command -v python3", out, sizeof out, errout, sizeof errout) != 0) {
        test_skip(T, "python3 is not installed");
        return;
    }
    CHECK(access("tests/read_safetensors.py", R_OK) == 0);
    const char *path = tmp_path(T, 0, "py.safetensors");
    CHECK(write_three(path, WQ, err));
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 tests/read_safetensors.py '%s'", path);
    int st = run_sh(T, cmd, out, sizeof out, errout, sizeof errout);
    if (!CHECK(st == 0)) printf("    %s\n", errout);

    /* "name [shape] [values]" lines (Python's repr of a float is the shortest
     * text that reads back to the same double), then the metadata as JSON. */
    char *lines[8];
    int n = 0;
    for (char *s = strtok(out, "\n"); s && n < 8; s = strtok(NULL, "\n")) lines[n++] = s;
    if (!CHECK(n == 4)) return;
    CHECK(strncmp(lines[0], "attn.wq [2, 3] [", 16) == 0);
    CHECK(strncmp(lines[1], "ln1.gamma [4] [", 15) == 0);
    CHECK(strcmp(lines[2], "empty [0, 3] []") == 0);
    CHECK(strstr(lines[0], "[1.0, -0.0, 5e-324, 1.7976931348623157e+308, 0.1, -0.3333333333333333]") != NULL);
    double v[8];
    int k = 0;
    CHECK(parse_doubles(strchr(lines[0], ']') + 2, v, 8, &k) && k == 6);
    for (int i = 0; i < 6 && i < k; i++) CHECK(same_bits(v[i], WQ[i]));
    CHECK(parse_doubles(strchr(lines[1], ']') + 2, v, 8, &k) && k == 4);
    for (int i = 0; i < 4 && i < k; i++) CHECK(same_bits(v[i], GAMMA[i]));

    kgl_json_doc doc;
    CHECK(kgl_json_parse(lines[3], strlen(lines[3]), &doc, err, sizeof err));
    if (doc.root) {
        CHECK(doc.root->len == 3);
        for (int i = 0; i < 3; i++) {
            const kgl_json *m = kgl_json_get(doc.root, META[2 * i]);
            CHECK(m && m->type == KGL_JSON_STRING && strcmp(m->str, META[2 * i + 1]) == 0);
        }
    }
    kgl_json_free(&doc);
}

TEST(safetensors_write_is_atomic)
{
    char err[512] = "";
    char dir[512];
    snprintf(dir, sizeof dir, "%s/atomic", T->tmp);
    CHECK(mkdir(dir, 0777) == 0);

    /* a folder that does not exist: a message, and nothing anywhere */
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no/such/dir/m.safetensors", T->tmp);
    CHECK(!write_three(missing, WQ, err));
    char want[800];
    snprintf(want, sizeof want, "%s: cannot create a temporary file beside it: No such file or directory", missing);
    CHECK(strcmp(err, want) == 0);
    CHECK(access(missing, F_OK) != 0);

    /* writing over an existing file replaces it */
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *old = fopen(path, "wb");
    if (old) {
        fputs("an old checkpoint", old);
        fclose(old);
    }
    CHECK(file_size(path) == 17);
    CHECK(write_three(path, WQ, err));
    kgl_st_file f;
    CHECK(kgl_st_read(path, &f, err, sizeof err) && f.n == 3 && f.tensors[0].data[0] == 1.0);
    kgl_st_free(&f);
    /* and again, with different contents */
    double wq2[6] = {6, 5, 4, 3, 2, 1};
    CHECK(write_three(path, wq2, err));
    CHECK(kgl_st_read(path, &f, err, sizeof err) && f.n == 3 && f.tensors[0].data[0] == 6.0);
    kgl_st_free(&f);
    CHECK(strcmp(listing(dir), "model.safetensors") == 0); /* no temporary file left */

    /* the target is a folder: refused before a temporary is written (the
     * rename failing after it is tests/io_tmpfiles.c's) */
    char target[600];
    snprintf(target, sizeof target, "%s/taken", dir);
    CHECK(mkdir(target, 0777) == 0);
    CHECK(!write_three(target, WQ, err));
    snprintf(want, sizeof want, "%s: is a folder, not a file: give a file's path", target);
    CHECK(strcmp(err, want) == 0);
    CHECK(strcmp(listing(dir), "model.safetensors taken") == 0);
    CHECK(strcmp(listing(target), "") == 0);

    /* the file gets the usual permissions (0666 less the umask), not mkstemp's 0600 */
    mode_t mask = umask(0);
    umask(mask);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask));
}

TEST(safetensors_write_rejects_bad_arguments)
{
    char err[512];
    const char *p = tmp_path(T, 0, "args.safetensors");
    char want[800];
    double x[4] = {1, 2, 3, 4};
#define WRITE_FAILS(t, n, meta, n_meta, msg)                                                                          \
    do {                                                                                                              \
        CHECK(!kgl_st_write(p, t, n, meta, n_meta, err, sizeof err));                                                \
        snprintf(want, sizeof want, "%s: %s", p, msg);                                                                \
        if (!CHECK(strcmp(err, want) == 0)) printf("    got: %s\n", err);                                            \
        CHECK(access(p, F_OK) != 0);                                                                                  \
    } while (0)
    kgl_st_entry dup[2] = {{"w", 1, {4, 0}, x}, {"w", 1, {4, 0}, x}};
    WRITE_FAILS(dup, 2, NULL, 0, "tensor 'w' appears twice (entries 0 and 1)");
    kgl_st_entry three[1] = {{"w", 3, {2, 2}, x}};
    WRITE_FAILS(three, 1, NULL, 0, "tensor 'w': ndim 3, expected 1 or 2");
    kgl_st_entry neg[1] = {{"w", 2, {2, -2}, x}};
    WRITE_FAILS(neg, 1, NULL, 0, "tensor 'w': dimension 1 is -2, expected >= 0");
    kgl_st_entry nodata[1] = {{"w", 2, {2, 2}, NULL}};
    WRITE_FAILS(nodata, 1, NULL, 0, "tensor 'w': data is NULL but the shape holds 4 values");
    kgl_st_entry reserved[1] = {{"__metadata__", 1, {1, 0}, x}};
    WRITE_FAILS(reserved, 1, NULL, 0, "'__metadata__' is reserved and cannot name a tensor");
    kgl_st_entry badname[1] = {{"w\xff", 1, {1, 0}, x}};
    WRITE_FAILS(badname, 1, NULL, 0, "tensor name 'w\xff' is not valid UTF-8");
    const char *dupmeta[] = {"k", "1", "k", "2"};
    WRITE_FAILS(NULL, 0, dupmeta, 2, "metadata key 'k' appears twice");
    const char *nullval[] = {"k", NULL};
    WRITE_FAILS(NULL, 0, nullval, 1, "metadata 'k' has no value (NULL)");
    const char *badval[] = {"k", "\xc3"};
    WRITE_FAILS(NULL, 0, badval, 1, "metadata 'k': value is not valid UTF-8");
#undef WRITE_FAILS
}

/* ------------------------------------------------- crafted bad files -- */

/* Writes an 8-byte little-endian `hlen`, `header`, and `data_len` zero bytes;
 * reads it back and returns the message after "path: " (or "(read)"). */
static const char *read_error_raw(test_ctx *T, uint64_t hlen, const char *header, size_t header_len, size_t data_len)
{
    static char err[1024];
    size_t n = 8 + header_len + data_len;
    unsigned char *buf = calloc(n, 1);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + 8, header, header_len);
    const char *path = write_tmp(T, 2, "bad.safetensors", (const char *)buf, n);
    free(buf);
    kgl_st_file f;
    if (kgl_st_read(path, &f, err, sizeof err)) {
        kgl_st_free(&f);
        return "(read)";
    }
    size_t pl = strlen(path);
    if (strncmp(err, path, pl) != 0 || strncmp(err + pl, ": ", 2) != 0) return err; /* wrong prefix: shown whole */
    return err + pl + 2;
}

static const char *read_error(test_ctx *T, const char *header, size_t data_len)
{
    return read_error_raw(T, strlen(header), header, strlen(header), data_len);
}

#define BAD(header, data_len, msg) expect_error(T, read_error(T, header, data_len), msg, __LINE__)

static void expect_error(test_ctx *T, const char *got, const char *want, int line)
{
    if (strcmp(got, want) != 0) {
        T->failures++;
        printf("    tests/model_checkpoint.c:%d: message\n      got:  %s\n      want: %s\n", line, got, want);
    }
}

#define E1(name, shape, offs) "{\"" name "\":{\"dtype\":\"F64\",\"shape\":" shape ",\"data_offsets\":" offs "}}"

TEST(safetensors_reader_rejects_each_bad_header)
{
    /* a valid file first, so that the helpers are known to work */
    BAD(E1("x", "[2]", "[0,16]"), 16, "(read)");

    /* dtype */
    BAD("{\"attn.wq\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
        "tensor 'attn.wq': dtype BF16, expected F32 or F64");
    BAD("{\"x\":{\"dtype\":64,\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
        "tensor 'x': dtype is a number, expected the string \"F32\" or \"F64\"");
    /* the entry's keys */
    BAD("{\"x\":{\"dtype\":\"F64\",\"shape\":[1]}}", 8, "tensor 'x': no data_offsets");
    BAD("{\"x\":{\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "tensor 'x': no dtype");
    BAD("{\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8],\"offsets\":[0,8]}}", 8,
        "tensor 'x': unexpected key 'offsets' (an entry has exactly dtype, shape and data_offsets)");
    BAD("{\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8],\"dtype\\u0000\":1}}", 8,
        "tensor 'x': unexpected key 'dtype\\x00' (an entry has exactly dtype, shape and data_offsets)");
    BAD("{\"x\":[0,8]}", 8, "tensor 'x' is a list, expected an object with dtype, shape and data_offsets");
    BAD("{\"a\\u0000b\":{}}", 0, "tensor name 'a\\x00b' contains a NUL byte");
    /* shape */
    BAD(E1("x", "[2,2,2]", "[0,64]"), 64, "tensor 'x': shape [2, 2, 2] has 3 dimensions; kgl reads 1-D and 2-D tensors");
    BAD(E1("x", "[]", "[0,8]"), 8, "tensor 'x': shape [] (a scalar) is not supported; kgl reads 1-D and 2-D tensors");
    BAD(E1("x", "[2,-1]", "[0,8]"), 8, "tensor 'x': shape entry 1 is -1, expected a non-negative integer");
    BAD(E1("x", "[2.0]", "[0,16]"), 16, "tensor 'x': shape entry 0 is 2.0, expected a non-negative integer");
    BAD(E1("x", "[\"2\"]", "[0,16]"), 16, "tensor 'x': shape entry 0 is a string, expected a non-negative integer");
    BAD(E1("x", "[99999999999999999999]", "[0,8]"), 8,
        "tensor 'x': shape entry 0 is 99999999999999999999, expected a non-negative integer");
    BAD(E1("x", "{}", "[0,8]"), 8, "tensor 'x': shape is an object, expected a list of 1 or 2 integers");
    BAD(E1("x", "[4294967296,4294967296]", "[0,8]"), 8,
        "tensor 'x': shape [4294967296, 4294967296] holds more values than any file can");
    /* data_offsets */
    BAD(E1("x", "[3]", "[0,24]"), 16, "tensor 'x': data_offsets [0, 24] run past the end of the data section (16 bytes)");
    BAD(E1("x", "[1]", "[16,8]"), 16, "tensor 'x': data_offsets [16, 8] end before they begin");
    BAD(E1("x", "[2,2]", "[0,24]"), 24, "tensor 'x': data_offsets [0, 24] hold 3 F64 values but shape [2, 2] needs 4");
    BAD(E1("x", "[0,5]", "[0,8]"), 8, "tensor 'x': data_offsets [0, 8] hold 1 F64 values but shape [0, 5] needs 0");
    BAD(E1("x", "[1]", "[0,20]"), 20,
        "tensor 'x': data_offsets [0, 20] span 20 bytes, not a whole number of 8-byte F64 values");
    BAD(E1("x", "[1]", "[0]"), 8, "tensor 'x': data_offsets has 1 entry, expected [begin, end]");
    BAD(E1("x", "[1]", "[0,8,16]"), 8, "tensor 'x': data_offsets has 3 entries, expected [begin, end]");
    BAD(E1("x", "[1]", "[-8,0]"), 8, "tensor 'x': data_offsets entry 0 is -8, expected a non-negative integer");
    BAD(E1("x", "[1]", "\"0-8\""), 8, "tensor 'x': data_offsets is a string, expected [begin, end]");
    /* overlaps and holes, named in header order */
    BAD("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
        "\"b\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[8,24]}}",
        24, "tensors 'a' and 'b' overlap (data_offsets [0, 16] and [8, 24])");
    BAD("{\"b\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[8,24]},"
        "\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
        "\"c\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[8,16]}}",
        24, "tensors 'b' and 'c' overlap (data_offsets [8, 24] and [8, 16])");
    BAD("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
        "\"e\":{\"dtype\":\"F64\",\"shape\":[0],\"data_offsets\":[8,8]}}",
        16, "tensors 'a' and 'e' overlap (data_offsets [0, 16] and [8, 8])");
    BAD("{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[16,24]}}",
        24, "bytes [8, 16) of the data section belong to no tensor (a hole before 'b')");
    BAD(E1("x", "[1]", "[0,8]"), 16, "bytes [8, 16) of the data section belong to no tensor (after the last one)");
    BAD("{}", 8, "the data section holds 8 bytes but the header lists no tensor");
    /* empty tensors sit anywhere between others, and may end the file */
    BAD("{\"e\":{\"dtype\":\"F64\",\"shape\":[0,4],\"data_offsets\":[8,8]},"
        "\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
        "\"z\":{\"dtype\":\"F64\",\"shape\":[4,0],\"data_offsets\":[8,8]}}",
        8, "(read)");
    /* metadata */
    BAD("{\"__metadata__\":{\"step\":3}}", 0, "__metadata__ 'step' is a number, expected a string");
    BAD("{\"__metadata__\":{\"a\":\"x\",\"b\":[\"y\"]}}", 0, "__metadata__ 'b' is a list, expected a string");
    BAD("{\"__metadata__\":[\"kgl/1\"]}", 0, "__metadata__ is a list, expected an object of strings");
    BAD("{\"__metadata__\":{\"k\":\"a\\u0000b\"}}", 0, "__metadata__ 'k' contains a NUL byte");
    BAD("{\"__metadata__\":{\"k\\u0000\":\"v\"}}", 0, "__metadata__ key 'k\\x00' contains a NUL byte");
    /* JSON: bad syntax, duplicate names, bad UTF-8; the offset is within the header */
    BAD("{\"x\":{\"dtype\":\"F64\" \"shape\":[1]}}", 8, "header is not valid JSON at byte 20: expected ',' or '}', found '\"'");
    BAD("{\"x\":1,\"x\":2}", 0, "header is not valid JSON at byte 7: duplicate key \"x\" in an object");
    BAD("{\"\xff\":1}", 0, "header is not valid JSON at byte 2: invalid UTF-8 in a string");
    BAD("{\"x\":1} junk", 0, "header is not valid JSON at byte 8: unexpected 'j' after the JSON value");
    BAD("[]", 0, "header does not start with '{' (found '[')");
    BAD(" {}", 0, "header does not start with '{' (found byte 0x20)");
    BAD("", 0, "header is empty (its length is 0)");
    /* a name longer than the message shows is cut at a character boundary */
    BAD("{\"" KOREAN KOREAN KOREAN KOREAN KOREAN KOREAN KOREAN KOREAN "\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}",
        2, "tensor '" KOREAN KOREAN KOREAN KOREAN KOREAN KOREAN "\xed\x95\x9c\xea\xb5\xad...': dtype F16, expected F32 or F64");
}

TEST(safetensors_reader_rejects_bad_files)
{
    char err[1024], want[1200];
    kgl_st_file f;
    /* shorter than the 8-byte length */
    const char *p = write_tmp(T, 3, "short.safetensors", "\x10\0\0\0\0", 5);
    CHECK(!kgl_st_read(p, &f, err, sizeof err));
    snprintf(want, sizeof want, "%s: file is 5 bytes long; a safetensors file starts with an 8-byte header length", p);
    CHECK(strcmp(err, want) == 0);
    p = write_tmp(T, 3, "empty.safetensors", "", 0);
    CHECK(!kgl_st_read(p, &f, err, sizeof err) && strstr(err, ": file is 0 bytes long;") != NULL);

    /* the header length against the file size, and against the cap */
    expect_error(T, read_error_raw(T, 99999, "{}", 2, 0),
                 "not a safetensors file: its header length 99999 (the first 8 bytes) exceeds the file size 10", __LINE__);
    expect_error(T, read_error_raw(T, UINT64_MAX, "{}", 2, 0),
                 "not a safetensors file: its header length 18446744073709551615 (the first 8 bytes) exceeds the file "
                 "size 10", __LINE__);
    expect_error(T, read_error_raw(T, 3, "{}", 2, 1), "header is not valid JSON at byte 2: unexpected byte 0x00 after the JSON value", __LINE__);
    p = tmp_path(T, 0, "huge.safetensors");
    FILE *h = fopen(p, "wb");
    if (h) {
        static const unsigned char len[8] = {0x01, 0xe1, 0xf5, 0x05, 0, 0, 0, 0}; /* 100000001 */
        fwrite(len, 1, 8, h);
        fclose(h);
    }
    CHECK(truncate(p, 100000200) == 0); /* sparse: no disk space used */
    CHECK(!kgl_st_read(p, &f, err, sizeof err));
    snprintf(want, sizeof want, "%s: header length 100000001 exceeds the limit of 100000000 bytes", p);
    CHECK(strcmp(err, want) == 0);
    unlink(p);

    /* a valid file cut short: the last tensor runs past the data */
    char ok_path[600];
    snprintf(ok_path, sizeof ok_path, "%s/cut.safetensors", T->tmp);
    CHECK(write_three(ok_path, WQ, err));
    long size = file_size(ok_path);
    CHECK(truncate(ok_path, size - 8) == 0);
    CHECK(!kgl_st_read(ok_path, &f, err, sizeof err));
    snprintf(want, sizeof want, "%s: tensor 'ln1.gamma': data_offsets [48, 80] run past the end of the data section (72 bytes)",
             ok_path);
    CHECK(strcmp(err, want) == 0);
    CHECK(f.n == 0 && f.tensors == NULL); /* nothing half-filled */

    /* not a file */
    CHECK(!kgl_st_read(T->tmp, &f, err, sizeof err));
    snprintf(want, sizeof want, "%s: is a folder, not a safetensors file", T->tmp);
    CHECK(strcmp(err, want) == 0);
    CHECK(!kgl_st_read("/nonexistent/m.safetensors", &f, err, sizeof err));
    CHECK(strcmp(err, "/nonexistent/m.safetensors: cannot open: No such file or directory") == 0);
}

/* Every byte flipped several ways, every prefix, and seeded multi-byte
 * damage: the reader either succeeds or says why; it never crashes, reads
 * out of bounds or leaks (make sanitize). */
TEST(safetensors_reader_survives_corruption)
{
    char err[1024];
    const char *path = tmp_path(T, 0, "fuzz.safetensors");
    CHECK(write_three(path, WQ, err));
    FILE *fp = fopen(path, "rb");
    static unsigned char good[4096], bad[4096];
    size_t n = fp ? fread(good, 1, sizeof good, fp) : 0;
    if (fp) fclose(fp);
    CHECK(n > 200 && n < sizeof good);
    char fuzz_name[64];
    snprintf(fuzz_name, sizeof fuzz_name, "fuzzed.safetensors");
    int ok = 0, failed = 0, silent = 0;
    static const unsigned char repl[] = {0x00, 0xff, '"', '{', '}', '[', ']', ',', ':', '0', '9', '-', ' ', '\\', 'e'};
    for (size_t pos = 0; pos <= n; pos++) {
        for (int v = -2; v < (int)sizeof repl; v++) {
            size_t len = n;
            memcpy(bad, good, n);
            if (v == -2) {
                len = pos; /* truncated */
            } else if (pos == n) {
                continue;
            } else if (v == -1) {
                bad[pos] ^= 0x01;
            } else {
                bad[pos] = repl[v];
            }
            const char *p = write_tmp(T, 4, fuzz_name, (const char *)bad, len);
            kgl_st_file f;
            err[0] = 0;
            if (kgl_st_read(p, &f, err, sizeof err)) {
                ok++;
                /* whatever was read is self-consistent */
                for (int i = 0; i < f.n; i++) {
                    const kgl_st_tensor *t = &f.tensors[i];
                    if (t->shape[0] * t->shape[1] > 0) (void)t->data[t->shape[0] * t->shape[1] - 1];
                }
                kgl_st_free(&f);
            } else {
                failed++;
                if (strncmp(err, p, strlen(p)) != 0 || strlen(err) < strlen(p) + 5) silent++;
            }
        }
    }
    /* seeded multi-byte damage in the header */
    kgl_rng rng;
    kgl_rng_seed(&rng, 2024);
    for (int it = 0; it < 3000; it++) {
        memcpy(bad, good, n);
        int k = 1 + (int)kgl_rng_below(&rng, 4);
        for (int j = 0; j < k; j++) bad[kgl_rng_below(&rng, (uint32_t)(n - 80))] = (unsigned char)kgl_rng_below(&rng, 256);
        const char *p = write_tmp(T, 4, fuzz_name, (const char *)bad, n);
        kgl_st_file f;
        if (kgl_st_read(p, &f, err, sizeof err)) {
            ok++;
            kgl_st_free(&f);
        } else {
            failed++;
            if (strncmp(err, p, strlen(p)) != 0) silent++;
        }
    }
    CHECK(silent == 0);
    CHECK(ok > 1000 && failed > 3000); /* the data bytes and the padding may change freely; the header mostly not */
    printf("    %d corrupted files read, %d rejected with a message\n", ok, failed);
}

/* Which triples a checkpoint was trained on, against the academic world:
   other counts, the same counts with another entity's or relation's name
   (the first that differs), or the same names. */
TEST(checkpoint_names_differ_from_the_triples)
{
    static char out[1 << 14], err[1 << 14];
    kgl_dataset ds;
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512], cmd[2048];
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e))) return;
    /* sed's renames keep the byte order of the names: alicia is still entity 0, zites relation 4 */
    static const char *const trainings[][2] = {
        {"own", "printf 'a\\tr\\tb\\nb\\tr\\tc\\nc\\tq\\ta\\n'"},
        {"alicia", "sed s/alice/alicia/g data/academic.tsv"},
        {"zites", "sed s/cites/zites/g data/academic.tsv"},
        {"academic", "cat data/academic.tsv"},
    };
    for (int k = 0; k < 4; k++) {
        snprintf(cmd, sizeof cmd, "%s > '%s/%s.tsv'", trainings[k][1], T->tmp, trainings[k][0]);
        if (!CHECK(system(cmd) == 0)) return;
        snprintf(cmd, sizeof cmd, "train --train '%s/%s.tsv' --steps 1 --quiet --save '%s/%s.st'", T->tmp,
                 trainings[k][0], T->tmp, trainings[k][0]);
        if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    }
    kgl_names_difference d;
    CHECK(kgl_checkpoint_names_differ(tmp_path(T, 0, "own.st"), &ds, &d));
    CHECK(d.n_entities == 3 && d.n_relations == 2 && d.entity && d.at == 0 && strcmp(d.name, "a") == 0);
    CHECK(kgl_checkpoint_names_differ(tmp_path(T, 0, "alicia.st"), &ds, &d));
    CHECK(d.n_entities == 13 && d.n_relations == 5 && d.entity && d.at == 0 && strcmp(d.name, "alicia") == 0);
    CHECK(kgl_checkpoint_names_differ(tmp_path(T, 0, "zites.st"), &ds, &d));
    CHECK(d.n_entities == 13 && d.n_relations == 5 && !d.entity && d.at == 4 && strcmp(d.name, "zites") == 0);
    CHECK(!kgl_checkpoint_names_differ(tmp_path(T, 0, "academic.st"), &ds, &d));
    CHECK(!kgl_checkpoint_names_differ(tmp_path(T, 0, "none.st"), &ds, &d)); /* kgl_checkpoint_open says why */
    kgl_dataset_free(&ds);
}
