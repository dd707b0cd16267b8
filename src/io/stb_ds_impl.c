/* stb_ds_impl.c — the one translation unit that compiles stb_ds's
 * implementation (hash maps and dynamic arrays, Debian's libstb-dev). Every
 * other file includes "stb_ds.h" for the macros only. */
#define STB_DS_IMPLEMENTATION
#include "stb_ds.h"
