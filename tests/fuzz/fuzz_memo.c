/* fuzz_memo.c — the memo CSV of `kgl demo memo`: kgl_memo_load on any bytes. */
#include "fuzz.h"
#include "kgl.h"

FUZZ_TARGET(memo)
{
    char err[512];
    kgl_memo m;
    kgl_source src = {"fuzz.csv", (const char *)data, size};
    if (kgl_memo_load(&m, &src, err, sizeof err)) kgl_memo_free(&m);
    return 0;
}
