/* predict_family.c — a program that uses kgl as a library, as a user's
 * program would: it includes <kgl.h> and links the installed libkgl.a
 * through pkg-config (`make test` installs kgl into build/stage and builds
 * it with `cc predict_family.c $(pkg-config --cflags --libs kgl)`).
 *
 * It trains the layer on a triples file (default: the README walkthrough's
 * family graph) with fixed options (d 32, 4 heads, AdamW with weight decay
 * 0.5, 1000 steps, seed 1), ranking the valid triples every 100 steps and
 * keeping the model best on them (kgl_run_train, as `kgl train --eval-every
 * 100` does), then asks "who is the parent of Jack?" — the question (?,
 * parent_of, Jack), through the inverse relation — and prints the top three
 * answers that are not already known training triples. `kgl train` with the
 * same options followed by `kgl predict` chooses the same step and prints
 * the same answers and scores (tests/walkthrough.c checks that). */
#include <math.h>
#include <stdio.h>

#include <kgl.h>

int main(int argc, char **argv)
{
    const char *train = argc > 1 ? argv[1] : "data/walkthrough/family.train.tsv";
    const char *valid = argc > 2 ? argv[2] : "data/walkthrough/family.valid.tsv";
    char err[1024];

    /* 1. The triples: names become ids (sorted by byte order). The model
     *    learns from train and is chosen on valid; an answer is known when
     *    the training file has it. */
    kgl_dataset ds, known;
    kgl_source src[2] = {{train, NULL, 0}, {valid, NULL, 0}};
    if (!kgl_dataset_load(&ds, src, 2, err, sizeof err) || !kgl_dataset_load(&known, src, 1, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (known.n_entities != ds.n_entities || known.n_relations != ds.n_relations) {
        fprintf(stderr, "%s names an entity or relation that %s does not\n", valid, train);
        return 2;
    }

    /* 2. The model and the run (everything else as kgl train's defaults). */
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.dim = 32;
    cfg.heads = 4;
    kgl_run_spec spec;
    kgl_run_spec_defaults(&spec, &ds, &cfg);
    spec.train = ds.splits[0].triples, spec.n_train = ds.splits[0].n;
    spec.valid = ds.splits[1].triples, spec.n_valid = ds.splits[1].n;
    spec.st.optim.weight_decay = 0.5;
    spec.steps = 1000;
    spec.eval_every = 100;

    /* 3. Train; the model left is the one of the step best on valid. */
    kgl_run run;
    if (kgl_run_train(&run, &spec) != 0) {
        fprintf(stderr, "the loss became %g at step %ld\n", run.member[0].final_loss, run.member[0].nonfinite_step);
        return 1;
    }
    const kgl_run_member *best = &run.member[0];
    printf("trained %ld steps on %d triples; best valid MRR %.17g at step %ld\n", best->steps_run, spec.n_train,
           best->best_mrr, best->best_step);

    /* 4. Ask: (?, parent_of, Jack) is the tail question (Jack, parent_of⁻¹, ?),
     *    relation row m + parent_of. Known answers (in the training file) are
     *    left out. */
    int jack = kgl_dataset_entity_id(&ds, "Jack");
    int parent_of = kgl_dataset_relation_id(&ds, "parent_of");
    if (jack < 0 || parent_of < 0) {
        fprintf(stderr, "%s: no entity 'Jack' or relation 'parent_of'\n", train);
        return 2;
    }
    kgl_answer top[3];
    int n = kgl_predict(&best->tr.model, NULL, &known, jack, ds.n_relations + parent_of, 3, true, top);
    printf("who is the parent of Jack? (known answers left out)\n");
    for (int k = 0; k < n; k++)
        printf("%d\t%s\t%.17g\t%.17g\n", k + 1, ds.entity_names[top[k].entity], top[k].score, top[k].prob);

    kgl_run_free(&run);
    kgl_dataset_free(&known);
    kgl_dataset_free(&ds);
    return 0;
}
