/* io_safetensors_f32.c — safetensors in the float build: the writer writes
 * F32 (4 bytes a value, the floats' own bits), F64 files are read rounded to
 * the nearest float, and an F64 value beyond float's range is refused rather
 * than read as infinity. Files are built byte by byte (tests/io_safetensors.h). */
#include <float.h>

#include "io_safetensors.h"

_Static_assert(sizeof(kgl_real) == 4, "this file tests the float build");

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

TEST(safetensors_f32_writer_writes_f32)
{
    static const float w[6] = {1.0f, -0.0f, 0.1f, FLT_MAX, 0x1p-149f, -INFINITY};
    static const float g[4] = {3.14159274f, -2.5e-38f, 1e22f, 123456.125f};
    const kgl_st_entry t[3] = {
        {"w", 2, {2, 3}, w},
        {"g", 1, {4, 0}, g},
        {"empty", 2, {0, 3}, NULL},
    };
    const char *const meta[] = {"format", "kgl/1"};
    const char *path = write_tmp(T, 0, "f32.safetensors", "", 0);
    char err[512] = "";
    if (!CHECK(kgl_st_write(path, t, 3, meta, 1, err, sizeof err))) printf("    %s\n", err);
    CHECK(strcmp(KGL_ST_DTYPE, "F32") == 0);

    /* the bytes: a padded header naming F32 with 4-byte spans, then the values */
    size_t len = 0;
    unsigned char *buf = (unsigned char *)test_slurp(path, &len);
    if (!CHECK(buf != NULL && len > 8)) return;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    CHECK(n % 8 == 0 && len == 8 + n + 40); /* 10 values of 4 bytes */
    CHECK(strstr((const char *)buf + 8, ST_ENTRY("w", "F32", "[2,3]", "[0,24]") "," ST_ENTRY("g", "F32", "[4]", "[24,40]")
                                        "," ST_ENTRY("empty", "F32", "[0,3]", "[40,40]") "}") != NULL);
    static const unsigned char one_le[4] = {0x00, 0x00, 0x80, 0x3f}, tenth_le[4] = {0xcd, 0xcc, 0xcc, 0x3d};
    CHECK(memcmp(buf + 8 + n, one_le, 4) == 0 && memcmp(buf + 8 + n + 8, tenth_le, 4) == 0);
    free(buf);

    /* read back: the same bits */
    kgl_st_file f;
    if (!CHECK(kgl_st_read(path, &f, err, sizeof err) && f.n == 3)) {
        printf("    %s\n", err);
        return;
    }
    const kgl_st_tensor *rw = kgl_st_find(&f, "w"), *rg = kgl_st_find(&f, "g");
    for (int i = 0; i < 6; i++) CHECK(bits_of(rw->data[i]) == bits_of(w[i]));
    for (int i = 0; i < 4; i++) CHECK(bits_of(rg->data[i]) == bits_of(g[i]));
    CHECK((uintptr_t)rw->data % _Alignof(float) == 0 && (uintptr_t)rg->data % _Alignof(float) == 0);
    CHECK(strcmp(rw->dtype, "F32") == 0 && strcmp(kgl_st_file_dtype(&f), "F32") == 0);
    kgl_st_free(&f);
}

TEST(safetensors_f32_reads_f64_rounded_to_nearest)
{
    /* each F64 value and the float it must become (round to nearest, ties to even) */
    static const struct { uint64_t f64; uint32_t f32; } v[] = {
        {0x3fb999999999999a, 0x3dcccccd}, /* 0.1 */
        {0x3ff0000010000000, 0x3f800000}, /* 1 + 2^-24, a tie: to the even 1 */
        {0x3ff0000030000000, 0x3f800002}, /* 1 + 3 * 2^-24, a tie: to the even 1 + 2^-22 */
        {0x47efffffefffffff, 0x7f7fffff}, /* just below FLT_MAX + half its last place: FLT_MAX */
        {0x36a0000010000000, 0x00000001}, /* just above half the smallest subnormal: rounds up to it */
        {0xad30000000000000, 0x80000000}, /* -2^-300 underflows to -0 */
        {0xfff0000000000000, 0xff800000}, /* -inf stays */
    };
    enum { N = sizeof v / sizeof v[0] };
    /* an F64 tensor first, then an F32 one: values move towards the start */
    unsigned char data[(N + 1) * 8 + 12];
    size_t n = 0;
    for (int i = 0; i < N; i++) st_put_bits(data, &n, v[i].f64, 8);
    st_put_bits(data, &n, 0x7ff8000000000000, 8); /* a NaN stays a NaN */
    st_put_bits(data, &n, 0x40200000, 4);         /* 2.5f, -3f, 0.1f */
    st_put_bits(data, &n, 0xc0400000, 4);
    st_put_bits(data, &n, 0x3dcccccd, 4);
    const char *path = st_file(T, 0,
                               "{" ST_ENTRY("d", "F64", "[7]", "[0,56]") "," ST_ENTRY("nan", "F64", "[1]", "[56,64]") ","
                               ST_ENTRY("s", "F32", "[3]", "[64,76]") "}",
                               data, n);
    kgl_st_file f;
    char err[512] = "";
    if (!CHECK(kgl_st_read(path, &f, err, sizeof err) && f.n == 3)) {
        printf("    %s\n", err);
        return;
    }
    const kgl_st_tensor *d = kgl_st_find(&f, "d"), *nan = kgl_st_find(&f, "nan"), *s = kgl_st_find(&f, "s");
    for (int i = 0; i < N; i++)
        if (!CHECK(bits_of(d->data[i]) == v[i].f32)) printf("    value %d: got 0x%08x\n", i, bits_of(d->data[i]));
    CHECK(isnan(nan->data[0]));
    CHECK(bits_of(s->data[0]) == 0x40200000 && bits_of(s->data[1]) == 0xc0400000 && bits_of(s->data[2]) == 0x3dcccccd);
    CHECK(strcmp(d->dtype, "F64") == 0 && strcmp(s->dtype, "F32") == 0 && strcmp(kgl_st_file_dtype(&f), "mixed") == 0);
    kgl_st_free(&f);
}

TEST(safetensors_f32_refuses_f64_beyond_float)
{
    /* FLT_MAX + half its last place rounds to infinity: the first value refused */
    unsigned char data[48];
    size_t n = 0;
    st_put_bits(data, &n, 0x3ff0000000000000, 8); /* ok: 1, 2, FLT_MAX exactly */
    st_put_bits(data, &n, 0x4000000000000000, 8);
    st_put_bits(data, &n, 0x47efffffe0000000, 8);
    st_put_bits(data, &n, 0x3ff0000000000000, 8); /* big: 1, -inf (kept), then the tie */
    st_put_bits(data, &n, 0xfff0000000000000, 8);
    st_put_bits(data, &n, 0x47effffff0000000, 8);
    const char *header = "{" ST_ENTRY("ok", "F64", "[3]", "[0,24]") "," ST_ENTRY("big", "F64", "[1,3]", "[24,48]") "}";
    const char *path = st_file(T, 0, header, data, n);
    kgl_st_file f;
    char err[512], want[800];
    CHECK(!kgl_st_read(path, &f, err, sizeof err));
    snprintf(want, sizeof want, "%s: tensor 'big' element 2: value 3.40282357e+38 does not fit in float32", path);
    if (!CHECK(strcmp(err, want) == 0)) printf("    got: %s\n", err);
    CHECK(f.n == 0 && f.tensors == NULL); /* nothing half-filled */

    /* far beyond, negative, and named by its own tensor */
    n = 0;
    st_put_bits(data, &n, 0x4000000000000000, 8);
    st_put_bits(data, &n, 0xfe37e43c8800759c, 8); /* -1e300 */
    ST_REFUSED("{" ST_ENTRY("ln1.gamma", "F64", "[2]", "[0,16]") "}", 16, "(read)"); /* zeros fit */
    CHECK(strcmp(st_read_error(T, "{" ST_ENTRY("ln1.gamma", "F64", "[2]", "[0,16]") "}", data, n),
                 "tensor 'ln1.gamma' element 1: value -1e+300 does not fit in float32") == 0);
}
