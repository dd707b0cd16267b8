/* fuzz_types.c — entity-types files: kgl_types_load on any bytes. */
#include "fuzz.h"
#include "kgl.h"

FUZZ_TARGET(types)
{
    char err[512];
    kgl_types ty;
    kgl_source src = {"fuzz.types.tsv", (const char *)data, size};
    if (kgl_types_load(&ty, &src, err, sizeof err)) kgl_types_free(&ty);
    return 0;
}
