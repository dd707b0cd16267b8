/* internal.h — helpers shared by the io layer's sources, not public. */
#ifndef KGL_IO_INTERNAL_H
#define KGL_IO_INTERNAL_H

#include <stddef.h>

/* `s` (n bytes, which may include NULs) for a message: control bytes
 * escaped (\n, \t, \xNN), cut to about 60 bytes with "..." at a UTF-8
 * boundary. Writes into buf (cap bytes) and returns it. */
const char *kgl_show(char *buf, size_t cap, const char *s, size_t n);

#endif
