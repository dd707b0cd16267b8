/* io_safetensors.c — the reader's dtypes, F32 and F64, in files built byte
 * by byte: F32 read exactly into double, both in one file, the byte spans
 * checked per dtype, every other dtype refused, and the stdlib Python reader
 * on the same files. (The writer, F64 here, and the other checks are in
 * tests/model_checkpoint.c; the float build's reading and writing in
 * tests/f32/io_safetensors_f32.c.) */
#include <unistd.h>

#include "io_safetensors.h"

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

TEST(safetensors_reads_f32_exactly)
{
    /* 1, -0, 0.1f, the largest float, the smallest subnormal float, -inf:
     * each becomes the double of the same value */
    static const uint32_t bits[6] = {0x3f800000, 0x80000000, 0x3dcccccd, 0x7f7fffff, 0x00000001, 0xff800000};
    static const double want[6] = {1.0, -0.0, 0x1.99999ap-4, 0x1.fffffep127, 0x1p-149, -INFINITY};
    unsigned char data[32];
    size_t n = 0;
    for (int i = 0; i < 6; i++) st_put_bits(data, &n, bits[i], 4);
    st_put_bits(data, &n, 0x7fc00000, 4); /* a NaN stays a NaN */
    const char *header = "{" ST_ENTRY("w", "F32", "[2,3]", "[0,24]") "," ST_ENTRY("nan", "F32", "[1]", "[24,28]") ","
                         ST_ENTRY("e", "F32", "[0]", "[28,28]") "}";
    CHECK(strlen(header) % 4 != 0); /* the values are not aligned in the file */
    const char *path = st_file(T, 0, header, data, n);
    kgl_st_file f;
    char err[512] = "";
    if (!CHECK(kgl_st_read(path, &f, err, sizeof err))) {
        printf("    %s\n", err);
        return;
    }
    const kgl_st_tensor *w = kgl_st_find(&f, "w"), *nan = kgl_st_find(&f, "nan"), *e = kgl_st_find(&f, "e");
    CHECK(w && w->ndim == 2 && w->shape[0] == 2 && w->shape[1] == 3 && strcmp(w->dtype, "F32") == 0);
    for (int i = 0; w && i < 6; i++) CHECK(same_bits(w->data[i], want[i]));
    CHECK(w && (uintptr_t)w->data % _Alignof(kgl_real) == 0);
    CHECK(nan && isnan(nan->data[0]) && strcmp(nan->dtype, "F32") == 0);
    CHECK(e && e->data != NULL && e->shape[0] == 0 && strcmp(e->dtype, "F32") == 0);
    CHECK(strcmp(kgl_st_file_dtype(&f), "F32") == 0);
    kgl_st_free(&f);
}

/* b F64 [1,2], a F32 [2], c F32 [3], z F64 [0]: the header's order is not
 * the data's (a, b, c), and an F64 tensor lies between F32 ones. */
#define MIXED_HEADER                                                                                         \
    "{\"__metadata__\":{\"format\":\"kgl/1\"}," ST_ENTRY("b", "F64", "[1,2]", "[8,24]") ","                  \
        ST_ENTRY("a", "F32", "[2]", "[0,8]") "," ST_ENTRY("c", "F32", "[3]", "[24,36]") ","                  \
        ST_ENTRY("z", "F64", "[0]", "[36,36]") "}"

static size_t mixed_data(unsigned char *d)
{
    size_t n = 0;
    st_put_bits(d, &n, 0x40200000, 4);         /* a: 2.5 */
    st_put_bits(d, &n, 0xc0400000, 4);         /*    -3 */
    st_put_bits(d, &n, 0x3fd5555555555555, 8); /* b: the double nearest 1/3 */
    st_put_bits(d, &n, 0x4480f0cf064dd592, 8); /*    1e22 */
    st_put_bits(d, &n, 0x3dcccccd, 4);         /* c: 0.1f */
    st_put_bits(d, &n, 0x477fe000, 4);         /*    65504 */
    st_put_bits(d, &n, 0x80000001, 4);         /*    minus the smallest subnormal float */
    return n;
}

TEST(safetensors_reads_mixed_f32_and_f64)
{
    unsigned char data[64];
    size_t n = mixed_data(data);
    const char *path = st_file(T, 0, MIXED_HEADER, data, n);
    kgl_st_file f;
    char err[512] = "";
    if (!CHECK(kgl_st_read(path, &f, err, sizeof err) && f.n == 4)) {
        printf("    %s\n", err);
        return;
    }
    const kgl_st_tensor *a = kgl_st_find(&f, "a"), *b = kgl_st_find(&f, "b"), *c = kgl_st_find(&f, "c"),
                        *z = kgl_st_find(&f, "z");
    CHECK(strcmp(f.tensors[0].name, "b") == 0 && strcmp(f.tensors[3].name, "z") == 0); /* header order */
    CHECK(strcmp(a->dtype, "F32") == 0 && strcmp(b->dtype, "F64") == 0 && strcmp(c->dtype, "F32") == 0 &&
          strcmp(z->dtype, "F64") == 0);
    CHECK(a->ndim == 1 && a->shape[0] == 2 && b->ndim == 2 && b->shape[1] == 2 && c->shape[0] == 3 && z->shape[0] == 0);
    /* every value exact: F32 widens to double without rounding */
    CHECK(same_bits(a->data[0], 2.5) && same_bits(a->data[1], -3.0));
    CHECK(same_bits(b->data[0], 1.0 / 3.0) && same_bits(b->data[1], 1e22));
    CHECK(same_bits(c->data[0], 0x1.99999ap-4) && same_bits(c->data[1], 65504.0) && same_bits(c->data[2], -0x1p-149));
    CHECK(z->data != NULL);
    CHECK(strcmp(kgl_st_file_dtype(&f), "mixed") == 0);
    CHECK(strcmp(kgl_st_meta(&f, "format"), "kgl/1") == 0);
    kgl_st_free(&f);

    /* what kgl writes is its own dtype; a file without tensors holds none */
    const kgl_real x[2] = {1, 2};
    kgl_st_entry t[1] = {{"x", 1, {2, 0}, x}};
    CHECK(kgl_st_write(path, t, 1, NULL, 0, err, sizeof err));
    CHECK(kgl_st_read(path, &f, err, sizeof err) && strcmp(kgl_st_file_dtype(&f), "F64") == 0);
    CHECK(strcmp(KGL_ST_DTYPE, "F64") == 0 && strcmp(f.tensors[0].dtype, "F64") == 0);
    kgl_st_free(&f);
    CHECK(kgl_st_write(path, NULL, 0, NULL, 0, err, sizeof err));
    CHECK(kgl_st_read(path, &f, err, sizeof err) && strcmp(kgl_st_file_dtype(&f), "none") == 0);
    kgl_st_free(&f);
}

TEST(safetensors_byte_spans_checked_per_dtype)
{
    ST_REFUSED("{" ST_ENTRY("x", "F32", "[2]", "[0,8]") "}", 8, "(read)"); /* the helper works */
    /* 4 bytes a value for F32, 8 for F64: the same span is right for one, wrong for the other */
    ST_REFUSED("{" ST_ENTRY("x", "F32", "[2]", "[0,16]") "}", 16,
               "tensor 'x': data_offsets [0, 16] hold 4 F32 values but shape [2] needs 2");
    ST_REFUSED("{" ST_ENTRY("x", "F64", "[2]", "[0,8]") "}", 8,
               "tensor 'x': data_offsets [0, 8] hold 1 F64 values but shape [2] needs 2");
    ST_REFUSED("{" ST_ENTRY("x", "F32", "[1]", "[0,6]") "}", 6,
               "tensor 'x': data_offsets [0, 6] span 6 bytes, not a whole number of 4-byte F32 values");
    ST_REFUSED("{" ST_ENTRY("x", "F32", "[0,5]", "[0,4]") "}", 4,
               "tensor 'x': data_offsets [0, 4] hold 1 F32 values but shape [0, 5] needs 0");
    ST_REFUSED("{" ST_ENTRY("x", "F32", "[3]", "[0,12]") "}", 8,
               "tensor 'x': data_offsets [0, 12] run past the end of the data section (8 bytes)");
    /* holes, overlaps and trailing bytes between tensors of both widths */
    ST_REFUSED("{" ST_ENTRY("x", "F32", "[1]", "[0,4]") "}", 8,
               "bytes [4, 8) of the data section belong to no tensor (after the last one)");
    ST_REFUSED("{" ST_ENTRY("a", "F64", "[1]", "[0,8]") "," ST_ENTRY("b", "F32", "[1]", "[4,8]") "}", 8,
               "tensors 'a' and 'b' overlap (data_offsets [0, 8] and [4, 8])");
    ST_REFUSED("{" ST_ENTRY("a", "F32", "[1]", "[0,4]") "," ST_ENTRY("b", "F64", "[1]", "[8,16]") "}", 16,
               "bytes [4, 8) of the data section belong to no tensor (a hole before 'b')");
    ST_REFUSED("{" ST_ENTRY("a", "F32", "[1]", "[0,4]") "," ST_ENTRY("b", "F64", "[1]", "[4,12]") "}", 12, "(read)");
    /* any other dtype, or another spelling */
    static const char *const other[] = {"F16", "BF16", "I64", "F8_E4M3", "f32", "F32 ", "float32", "F64\\u0000"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        char header[256], want[256];
        snprintf(header, sizeof header, "{\"x\":{\"dtype\":\"%s\",\"shape\":[1],\"data_offsets\":[0,8]}}", other[i]);
        snprintf(want, sizeof want, "tensor 'x': dtype %s, expected F32 or F64", i == 7 ? "F64\\x00" : other[i]);
        ST_REFUSED(header, 8, want);
    }
}

/* kgl_st_read_header (issue 46): the header and the layout, checked as
   kgl_st_read checks them, without the values (which a float32 program may
   not be able to hold): a float64 checkpoint says it is one. */
TEST(safetensors_header_alone)
{
    unsigned char data[16];
    size_t n = 0;
    st_put_bits(data, &n, 0x7fefffffffffffffull, 8); /* DBL_MAX: no float holds it */
    st_put_bits(data, &n, 0x3ff0000000000000ull, 8);
    const char *header = "{\"__metadata__\":{\"precision\":\"f64\"}," ST_ENTRY("w", "F64", "[2]", "[0,16]") "}";
    const char *path = st_file(T, 0, header, data, n);
    kgl_st_file f;
    char err[512] = "";
    if (!CHECK(kgl_st_read_header(path, &f, err, sizeof err))) {
        printf("    %s\n", err);
        return;
    }
    const kgl_st_tensor *w = kgl_st_find(&f, "w");
    CHECK(f.n == 1 && w && w->shape[0] == 2 && strcmp(w->dtype, "F64") == 0 && w->data == NULL);
    CHECK(kgl_st_meta(&f, "precision") && strcmp(kgl_st_meta(&f, "precision"), "f64") == 0);
    kgl_st_free(&f);
    /* the layout is still checked: a data section shorter than the header says */
    path = st_file(T, 1, header, data, 8);
    CHECK(!kgl_st_read_header(path, &f, err, sizeof err));
    CHECK(strstr(err, "tensor 'w': data_offsets [0, 16] run past the end of the data section (8 bytes)") != NULL);
}

TEST(safetensors_python_reader_reads_f32)
{
    char out[4096], errout[2048];
    if (run_sh(T, "command -v python3", out, sizeof out, errout, sizeof errout) != 0) {
        test_skip(T, "python3 is not installed");
        return;
    }
    unsigned char data[64];
    size_t n = mixed_data(data);
    const char *path = st_file(T, 0, MIXED_HEADER, data, n);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 tests/read_safetensors.py '%s'", path);
    int st = run_sh(T, cmd, out, sizeof out, errout, sizeof errout);
    if (!CHECK(st == 0)) printf("    %s\n", errout);
    /* Python's repr is the shortest text of the double, so an F32 value
     * shows as the double it widens to (0.1f is 0.10000000149011612) */
    CHECK(strcmp(out, "b [1, 2] [0.3333333333333333, 1e+22]\n"
                      "a [2] [2.5, -3.0]\n"
                      "c [3] [0.10000000149011612, 65504.0, -1.401298464324817e-45]\n"
                      "z [0] []\n"
                      "{\"format\": \"kgl/1\"}\n") == 0);
    /* a dtype it does not know is an error, not numbers read wrongly */
    path = st_file(T, 1, "{" ST_ENTRY("h", "F16", "[2]", "[0,4]") "}", data, 4);
    snprintf(cmd, sizeof cmd, "python3 tests/read_safetensors.py '%s'", path);
    CHECK(run_sh(T, cmd, out, sizeof out, errout, sizeof errout) != 0 && strstr(errout, "F16") != NULL);
}
