/* model_gradient.c — `kgl grad`'s pieces in the library (src/model/
 * gradient.c): the full batch as kgl train forms it, its loss and every
 * parameter's gradient (against central differences), the gradient norms,
 * and the gradients' file. */
#include <math.h>
#include <stdlib.h>

#include "test.h"

/* A model of the academic world (the defaults: reciprocal examples). */
static void academic_model(kgl_dataset *ds, kgl_model *m)
{
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    if (!kgl_dataset_load(ds, &src, 1, e, sizeof e)) abort(); /* the embedded world always loads */
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = ds->n_entities;
    cfg.n_relations = ds->n_relations;
    cfg.dim = 8;
    cfg.heads = 2;
    kgl_model_create(m, &cfg);
    kgl_rng rng;
    kgl_rng_seed(&rng, 5);
    kgl_model_init(m, &rng);
}

/* Every training triple in file order, then each one's reciprocal: the
   tail asked of the head through relation m + r. */
TEST(full_batch_is_the_triples_then_their_reciprocals)
{
    kgl_dataset ds;
    kgl_model m;
    academic_model(&ds, &m);
    const kgl_split *sp = &ds.splits[0];
    int n = sp->n, n_rel = ds.n_relations;
    for (int reciprocal = 0; reciprocal < 2; reciprocal++) {
        kgl_batch b;
        int *ex = kgl_full_batch(sp->triples, n, n_rel, reciprocal, &b);
        CHECK(b.n == (reciprocal ? 2 * n : n) && b.context == NULL);
        int wrong = 0;
        for (int k = 0; k < n; k++) {
            const kgl_triple *t = &sp->triples[k];
            wrong += b.head[k] != t->head || b.rel[k] != t->rel || b.tail[k] != t->tail;
            if (reciprocal)
                wrong += b.head[n + k] != t->tail || b.rel[n + k] != n_rel + t->rel || b.tail[n + k] != t->head;
        }
        CHECK(wrong == 0);
        free(ex);
    }
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* The loss over the full batch and its gradient: each of a few entries
   against a central difference of the same loss. With h = 1e-5 in double
   precision the difference's error is O(h²) ≈ 1e-10 times the third
   derivative plus rounding ≈ 1e-16 / h ≈ 1e-11; 1e-6 leaves room for both. */
TEST(full_batch_gradient_matches_central_differences)
{
    kgl_dataset ds;
    kgl_model m;
    academic_model(&ds, &m);
    const kgl_split *sp = &ds.splits[0];
    kgl_gradient_losses l;
    CHECK(kgl_full_batch_gradient(&m, sp->triples, sp->n, ds.n_relations, NULL, &l));
    CHECK(isfinite(l.loss) && l.loss > 0 && l.loss == l.main_loss && !l.has_aux && isnan(l.aux));
    CHECK(l.examples == 2 * sp->n);
    double any = 0, norm0 = kgl_param_grad_norm(&m.params.p[0]);
    for (int k = 0; k < m.params.n; k++) any += kgl_param_grad_norm(&m.params.p[k]);
    CHECK(any > 0);
    /* a second pass gives the same gradient, not twice it: zeroed first */
    CHECK(kgl_full_batch_gradient(&m, sp->triples, sp->n, ds.n_relations, NULL, &l));
    CHECK(kgl_param_grad_norm(&m.params.p[0]) == norm0);
    for (int k = 0; k < m.params.n; k += 3) {
        kgl_param *p = &m.params.p[k];
        size_t i = kgl_numel(&p->t) / 2;
        double g = p->t.grad[i], x = p->t.data[i], h = 1e-5;
        kgl_gradient_losses up, down;
        p->t.data[i] = x + h;
        kgl_full_batch_gradient(&m, sp->triples, sp->n, ds.n_relations, NULL, &up);
        p->t.data[i] = x - h;
        kgl_full_batch_gradient(&m, sp->triples, sp->n, ds.n_relations, NULL, &down);
        p->t.data[i] = x;
        double fd = (up.loss - down.loss) / (2 * h);
        if (!CHECK_NEAR(g, fd, 1e-6 * (1 + fabs(fd)))) printf("    %s[%zu]\n", p->name, i);
    }
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* A loss that is not finite: false, and no gradient computed. */
TEST(full_batch_gradient_refuses_a_loss_that_is_not_finite)
{
    kgl_dataset ds;
    kgl_model m;
    academic_model(&ds, &m);
    const kgl_split *sp = &ds.splits[0];
    m.params.p[0].t.data[0] = NAN;
    kgl_gradient_losses l;
    CHECK(!kgl_full_batch_gradient(&m, sp->triples, sp->n, ds.n_relations, NULL, &l));
    CHECK(isnan(l.loss));
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* The norm of a gradient (3, 4, 0, ...) is 5; the file holds each
   gradient under its parameter's name and the losses in its metadata. */
TEST(gradients_written_with_their_losses_and_norms)
{
    kgl_dataset ds;
    kgl_model m;
    academic_model(&ds, &m);
    kgl_params_zero_grad(&m.params);
    kgl_param *p = &m.params.p[1];
    p->t.grad[0] = 3, p->t.grad[1] = 4;
    CHECK_NEAR(kgl_param_grad_norm(p), 5, 1e-12); /* sqrt(25) is exact; 1e-12 only guards rounding */
    CHECK(kgl_param_grad_norm(&m.params.p[0]) == 0);
    kgl_gradient_losses l = {1.25, 1.0, 2.5, true, 42};
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/grad.safetensors", T->tmp);
    CHECK(kgl_gradients_write(path, "ck.safetensors", 7, &m.params, &l, err, sizeof err));
    kgl_st_file f;
    if (!CHECK(kgl_st_read(path, &f, err, sizeof err))) {
        printf("    %s\n", err);
        return;
    }
    CHECK(f.n == m.params.n);
    const kgl_st_tensor *t = kgl_st_find(&f, p->name);
    CHECK(t && t->data[0] == 3 && t->data[1] == 4 && t->data[2] == 0);
    CHECK(t && t->ndim == (p->vector ? 1 : 2));
    const char *loss = kgl_st_meta(&f, "loss"), *aux = kgl_st_meta(&f, "aux_loss"), *step = kgl_st_meta(&f, "step");
    CHECK(loss && strcmp(loss, "1.25") == 0 && aux && strcmp(aux, "2.5") == 0 && step && strcmp(step, "7") == 0);
    CHECK(kgl_st_meta(&f, "examples") && strcmp(kgl_st_meta(&f, "examples"), "42") == 0);
    CHECK(kgl_st_meta(&f, "format") && strcmp(kgl_st_meta(&f, "format"), "kgl-grad/1") == 0);
    kgl_st_free(&f);
    l.has_aux = false; /* without supervision: aux_loss "" */
    CHECK(kgl_gradients_write(path, "ck.safetensors", 7, &m.params, &l, err, sizeof err));
    if (CHECK(kgl_st_read(path, &f, err, sizeof err))) {
        CHECK(kgl_st_meta(&f, "aux_loss") && strcmp(kgl_st_meta(&f, "aux_loss"), "") == 0);
        kgl_st_free(&f);
    }
    snprintf(path, sizeof path, "%s/no/such/folder/grad.safetensors", T->tmp);
    CHECK(!kgl_gradients_write(path, "ck.safetensors", 7, &m.params, &l, err, sizeof err) && strstr(err, path));
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}
