/* fuzz_safetensors.c — checkpoints: the bytes as a file, read by kgl_st_read;
 * what it accepts goes on to kgl_checkpoint_open against the academic world
 * and, when that accepts it too, into a model (as kgl eval would). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"
#include "kgl.h"

FUZZ_TARGET(safetensors)
{
    static char path[64];
    static kgl_dataset ds;
    static int ready;
    char err[1024];
    if (!ready) {
        snprintf(path, sizeof path, "/tmp/kgl_fuzz_st.%ld", (long)getpid());
        kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
        if (!kgl_dataset_load(&ds, &src, 1, err, sizeof err)) abort();
        ready = 1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    kgl_st_file st;
    if (kgl_st_read(path, &st, err, sizeof err)) {
        for (int i = 0; i < st.n; i++) (void)kgl_st_find(&st, st.tensors[i].name);
        for (int i = 0; i < st.n_meta; i++) (void)kgl_st_meta(&st, st.meta_keys[i]);
        (void)kgl_st_file_dtype(&st);
        kgl_st_free(&st);
        kgl_checkpoint ck;
        if (kgl_checkpoint_open(path, &ds, &ck, err, sizeof err)) {
            kgl_model m;
            kgl_model_create(&m, &ck.cfg);
            kgl_checkpoint_apply(&ck, &m);
            kgl_model_free(&m);
            kgl_checkpoint_close(&ck);
        }
    }
    unlink(path);
    return 0;
}
