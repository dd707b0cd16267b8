/* internal.h — helpers shared by the io layer's sources, not public. */
#ifndef KGL_IO_INTERNAL_H
#define KGL_IO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* `s` (n bytes, which may include NULs) for a message: control bytes
 * escaped (\n, \t, \xNN), cut to about 60 bytes with "..." at a UTF-8
 * boundary. Writes into buf (cap bytes) and returns it. */
const char *kgl_show(char *buf, size_t cap, const char *s, size_t n);

/* "PATH: message" into err (cap bytes; NULL or 0: nothing), PATH "(no path)"
 * when NULL; returns false, so that `return kgl_path_error(...)` reports a
 * failure in one line. */
bool kgl_path_error(char *err, size_t cap, const char *path, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The source of the random part of kgl_outfile's temporary names
 * (kgl_random64); tests replace it to make a name collide. */
extern uint64_t (*kgl_tmp_name_source)(void);

#endif
