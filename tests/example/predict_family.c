/* predict_family.c — a program that uses kgl as a library, as a user's
 * program would: it includes <kgl.h> and links the installed libkgl.a
 * through pkg-config (`make test` installs kgl into build/stage and builds
 * it with `cc predict_family.c $(pkg-config --cflags --libs kgl)`).
 *
 * It trains the layer on a triples file (default: the README walkthrough's
 * family graph) with fixed options (d 32, 4 heads, AdamW with
 * weight decay 0.5, 1000 steps, seed 1), then asks "who is the parent of
 * Jack?" — the question (?, parent_of, Jack), through the inverse relation —
 * and prints the top three answers that are not already known triples.
 * `kgl train` with the same options followed by `kgl predict` prints the
 * same answers and scores (tests/walkthrough.c checks that). */
#include <math.h>
#include <stdio.h>

#include <kgl.h>

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "data/walkthrough/family.train.tsv";
    char err[1024];

    /* 1. The triples: names become ids (sorted by byte order). */
    kgl_dataset ds;
    kgl_source src = {path, NULL, 0};
    if (!kgl_dataset_load(&ds, &src, 1, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }

    /* 2. The model and the training options (everything else as kgl train's defaults). */
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.dim = 32;
    cfg.heads = 4;
    kgl_train_config tc = {0};
    tc.batch = 1024;
    tc.seed = 1;
    kgl_optim_defaults(&tc.optim);
    tc.optim.weight_decay = 0.5;
    kgl_trainer tr;
    kgl_trainer_init(&tr, &ds, ds.splits[0].triples, ds.splits[0].n, &cfg, &tc);

    /* 3. Train. */
    double loss = NAN;
    for (int step = 1; step <= 1000; step++) {
        loss = kgl_trainer_step(&tr);
        if (!isfinite(loss)) {
            fprintf(stderr, "the loss became %g at step %d\n", loss, step);
            return 1;
        }
    }
    printf("trained 1000 steps on %d triples, last loss %.6f\n", ds.splits[0].n, loss);

    /* 4. Ask: (?, parent_of, Jack) is the tail question (Jack, parent_of⁻¹, ?),
     *    relation row m + parent_of. Known answers (in the training file) are
     *    left out. */
    int jack = kgl_dataset_entity_id(&ds, "Jack");
    int parent_of = kgl_dataset_relation_id(&ds, "parent_of");
    if (jack < 0 || parent_of < 0) {
        fprintf(stderr, "%s: no entity 'Jack' or relation 'parent_of'\n", path);
        return 2;
    }
    kgl_answer top[3];
    int n = kgl_predict(&tr.model, NULL, &ds, jack, ds.n_relations + parent_of, 3, true, top);
    printf("who is the parent of Jack? (known answers left out)\n");
    for (int k = 0; k < n; k++)
        printf("%d\t%s\t%.17g\t%.17g\n", k + 1, ds.entity_names[top[k].entity], top[k].score, top[k].prob);

    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
    return 0;
}
