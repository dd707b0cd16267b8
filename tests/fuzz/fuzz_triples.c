/* fuzz_triples.c — triples files: kgl_dataset_load on any bytes, as one
 * split and as the second of two (names shared across splits). */
#include "fuzz.h"
#include "kgl.h"

FUZZ_TARGET(triples)
{
    char err[512];
    kgl_dataset ds;
    kgl_source one = {"fuzz.tsv", (const char *)data, size};
    if (kgl_dataset_load(&ds, &one, 1, err, sizeof err)) {
        for (int i = 0; i < ds.splits[0].n; i++) {
            int count;
            const kgl_triple *t = &ds.splits[0].triples[i];
            (void)kgl_dataset_known(&ds, t->head, t->rel, &count);
        }
        kgl_dataset_free(&ds);
    }
    static const char first[] = "a\tr\tb\nb\tr\tc\n";
    kgl_source two[2] = {{"train.tsv", first, sizeof first - 1}, {"valid.tsv", (const char *)data, size}};
    if (kgl_dataset_load(&ds, two, 2, err, sizeof err)) kgl_dataset_free(&ds);
    return 0;
}
