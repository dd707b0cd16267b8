/* model_set.c — an ensemble's checkpoint set opened again through the
 * library (kgl_model_set_open, kgl_model_open_member), as kgl eval and
 * predict open it: the members a file lists, in order, with the states of
 * the models kgl_run_save wrote; one member alone; and the refusals: a set
 * mixed from two saves, a member out of range, one file twice. */
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

/* The walkthrough's family graph: its training triples. */
static bool load_family(test_ctx *T, kgl_dataset *ds)
{
    kgl_source src[1] = {{"data/walkthrough/family.train.tsv", NULL, 0}};
    char e[512];
    bool ok = kgl_dataset_load(ds, src, 1, e, sizeof e);
    if (!ok) printf("    %s\n", e);
    return CHECK(ok);
}

/* `members` models (d 8, 2 heads) trained 5 steps and saved as one set at
   T->tmp/NAME; the run (for its models) stays in *run. */
static bool save_set(test_ctx *T, const kgl_dataset *ds, int members, const char *name, kgl_run *run, char *path,
                     size_t cap)
{
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    kgl_run_spec spec;
    kgl_run_spec_defaults(&spec, ds, &cfg);
    spec.train = ds->splits[0].triples, spec.n_train = ds->splits[0].n;
    spec.steps = 5;
    spec.members = members;
    snprintf(path, cap, "%s/%s", T->tmp, name);
    return CHECK(kgl_run_train(run, &spec) == 0) && CHECK(kgl_run_save(run, path, NULL, NULL));
}

TEST(model_set_opens_the_members_member_0_lists_with_their_states)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run run;
    char path[1024], err[2048];
    if (!save_set(T, &ds, 3, "set.st", &run, path, sizeof path)) return;
    static kgl_model_set ms;
    kgl_model_set_spec spec = {.cmd = "test", .checkpoint = path, .member = -1, .ds = &ds};
    if (!CHECK(kgl_model_set_open(&ms, &spec, err, sizeof err))) {
        printf("    %s\n", err);
        return;
    }
    CHECK(ms.n == 3 && ms.choice.members == 3 && ms.choice.member == 0 && !ms.choice.alone);
    int n = ds.n_entities, d = run.member[0].tr.model.cfg.dim;
    kgl_real *want = malloc((size_t)n * d * sizeof *want);
    for (int k = 0; k < ms.n; k++) { /* member k is the run's model k, to the bit */
        char *member = kgl_member_path(path, k);
        CHECK(strcmp(ms.paths[k], member) == 0);
        free(member);
        kgl_context_states(&run.member[k].tr.model, want);
        CHECK(ms.states[k] && memcmp(ms.states[k], want, (size_t)n * d * sizeof *want) == 0);
    }
    kgl_model_set_close(&ms);
    CHECK(ms.n == 0);

    spec.member = 2; /* one member alone */
    CHECK(kgl_model_set_open(&ms, &spec, err, sizeof err));
    char *m2 = kgl_member_path(path, 2);
    CHECK(ms.n == 1 && strcmp(ms.choice.path, m2) == 0 && ms.choice.member == 2 && ms.choice.members == 3);
    kgl_model_set_close(&ms);
    kgl_model m;
    kgl_checkpoint ck;
    kgl_model_choice c;
    CHECK(kgl_model_open_member(&spec, &m, &ck, &c, err, sizeof err));
    CHECK(strcmp(c.path, m2) == 0 && c.member == 2 && c.members == 3 && ck.st.seed == 1 + 2000u);
    kgl_model_free(&m);
    kgl_checkpoint_close(&ck);

    spec.checkpoint = m2, spec.member = -1; /* X.m2.st: member 2 of X.st, used alone */
    CHECK(kgl_model_set_open(&ms, &spec, err, sizeof err));
    CHECK(ms.n == 1 && ms.choice.alone && ms.choice.member == 2 && strcmp(ms.choice.ensemble, path) == 0);
    kgl_model_set_close(&ms);
    free(m2);
    free(want);
    kgl_run_free(&run);
    kgl_dataset_free(&ds);
}

TEST(model_set_refuses_a_mix_of_two_saves_a_member_too_many_and_one_file_twice)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run one, two;
    char path[1024], other[1024], err[2048];
    if (!save_set(T, &ds, 2, "a.st", &one, path, sizeof path) ||
        !save_set(T, &ds, 2, "b.st", &two, other, sizeof other))
        return;
    static kgl_model_set ms;
    kgl_model_set_spec spec = {.cmd = "test", .checkpoint = path, .member = 5, .ds = &ds};
    CHECK(!kgl_model_set_open(&ms, &spec, err, sizeof err) && ms.n == 0);
    if (!CHECK(strstr(err, "kgl test: --member 5: ") && strstr(err, "is 2 models (members 0 to 1)"))) printf("    %s\n", err);

    char *a1 = kgl_member_path(path, 1), *b1 = kgl_member_path(other, 1);
    CHECK(rename(b1, a1) == 0); /* a.m1.st is now the other save's */
    spec.member = -1;
    CHECK(!kgl_model_set_open(&ms, &spec, err, sizeof err) && ms.n == 0);
    if (!CHECK(strstr(err, "is not from the save that wrote") && strstr(err, "a mix of two saves"))) printf("    %s\n", err);
    kgl_model m;
    kgl_checkpoint ck;
    kgl_model_choice c;
    spec.member = 1;
    CHECK(!kgl_model_open_member(&spec, &m, &ck, &c, err, sizeof err) && strstr(err, "a mix of two saves"));

    char list[2100];
    snprintf(list, sizeof list, "%s,%s", other, other);
    spec.checkpoint = list, spec.member = -1;
    CHECK(!kgl_model_set_open(&ms, &spec, err, sizeof err) && strstr(err, "is the same file as") && ms.n == 0);
    free(a1);
    free(b1);
    kgl_run_free(&one);
    kgl_run_free(&two);
    kgl_dataset_free(&ds);
}
