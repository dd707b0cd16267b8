/* stb_ds_impl.c — the one translation unit that compiles stb_ds's
 * implementation (hash maps and dynamic arrays, Debian's libstb-dev). Every
 * other file includes "stb_ds.h" for the macros only. Its tables grow
 * through kgl_xrealloc_for: out of memory is reported, never a NULL written
 * through (stb_ds does not check). */
#include <stdlib.h>

#include "engine/internal.h"

#define STBDS_REALLOC(context, ptr, size) kgl_xrealloc_for((ptr), (size), "the tables of names and triples")
#define STBDS_FREE(context, ptr) free(ptr)
#define STB_DS_IMPLEMENTATION
#include "stb_ds.h"
