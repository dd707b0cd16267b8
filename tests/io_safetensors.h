/* io_safetensors.h — safetensors files built byte by byte, for the reader's
 * tests in both builds (tests/io_safetensors.c, tests/f32/io_safetensors_f32.c).
 * The data sections are IEEE bit patterns written out here, never by kgl, so
 * that a test checks kgl's reading against the format, not against itself. */
#ifndef KGL_TEST_IO_SAFETENSORS_H
#define KGL_TEST_IO_SAFETENSORS_H

#include <stdint.h>
#include <stdlib.h>

#include "test.h"

/* One tensor's header entry, e.g. ST_ENTRY("x", "F32", "[2]", "[0,8]"). */
#define ST_ENTRY(name, dtype, shape, offs) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" offs "}"

/* Appends the `width` little-endian bytes of an IEEE bit pattern at b[*n]. */
static inline void st_put_bits(unsigned char *b, size_t *n, uint64_t bits, int width)
{
    for (int i = 0; i < width; i++) b[(*n)++] = (unsigned char)(bits >> (8 * i));
}

/* Writes the file "8-byte little-endian header length, header, data" into
 * T->tmp (slot as for write_tmp) and returns its path. The header is left
 * unpadded, so the data section may start at any offset. */
static inline const char *st_file(test_ctx *T, int slot, const char *header, const unsigned char *data, size_t n)
{
    size_t hl = strlen(header), len = 0;
    unsigned char *buf = malloc(8 + hl + n);
    st_put_bits(buf, &len, hl, 8);
    memcpy(buf + 8, header, hl);
    if (n) memcpy(buf + 8 + hl, data, n);
    char name[32];
    snprintf(name, sizeof name, "built%d.safetensors", slot);
    const char *path = write_tmp(T, slot, name, (const char *)buf, 8 + hl + n);
    free(buf);
    return path;
}

/* Reads such a file: "(read)" when kgl_st_read accepts it, else its message
 * after "path: " (the whole message when it lacks that prefix). */
static inline const char *st_read_error(test_ctx *T, const char *header, const unsigned char *data, size_t n)
{
    static char err[1024];
    const char *path = st_file(T, 7, header, data, n);
    kgl_st_file f;
    if (kgl_st_read(path, &f, err, sizeof err)) {
        kgl_st_free(&f);
        return "(read)";
    }
    size_t pl = strlen(path);
    return strncmp(err, path, pl) == 0 && strncmp(err + pl, ": ", 2) == 0 ? err + pl + 2 : err;
}

/* The message for header + n zero bytes of data is `want`. */
#define ST_REFUSED(header, n, want)                                                                  \
    do {                                                                                              \
        static const unsigned char zeros_[64];                                                        \
        const char *got_ = st_read_error(T, header, zeros_, n);                                       \
        if (!CHECK(strcmp(got_, want) == 0)) printf("      got:  %s\n      want: %s\n", got_, want); \
    } while (0)

#endif
