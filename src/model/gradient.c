/* gradient.c — the full-batch loss and the gradient of every parameter at
 * a model's parameters (`kgl grad`), for inspection and for checking
 * against other frameworks: the batch as kgl train forms it, one forward
 * and one backward pass, each parameter's gradient norm, and the
 * gradients written as safetensors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kgl/model.h"
#include "engine/internal.h"

int *kgl_full_batch(const kgl_triple *train, int n_train, int n_relations, bool reciprocal, kgl_batch *b)
{
    int n_ex = reciprocal ? 2 * n_train : n_train;
    int *ex = kgl_xmalloc(3 * (size_t)n_ex * sizeof(int));
    int *eh = ex, *er = ex + n_ex, *et = ex + 2 * n_ex;
    for (int k = 0; k < n_train; k++) {
        const kgl_triple *tr = &train[k];
        eh[k] = tr->head, er[k] = tr->rel, et[k] = tr->tail;
        if (reciprocal)
            eh[n_train + k] = tr->tail, er[n_train + k] = n_relations + tr->rel, et[n_train + k] = tr->head;
    }
    *b = (kgl_batch){n_ex, eh, er, et, NULL};
    return ex;
}

bool kgl_full_batch_gradient(kgl_model *m, const kgl_triple *train, int n_train, int n_relations,
                             const kgl_supervision *sup, kgl_gradient_losses *l)
{
    kgl_batch b;
    int *ex = kgl_full_batch(train, n_train, n_relations, m->cfg.reciprocal, &b);
    kgl_tape t;
    kgl_tape_init(&t);
    kgl_params_zero_grad(&m->params);
    kgl_forward f;
    kgl_model_loss(m, &t, &b, sup, &f);
    *l = (kgl_gradient_losses){f.loss->data[0], f.main_loss->data[0], f.aux_loss ? f.aux_loss->data[0] : NAN,
                               f.aux_loss != NULL, b.n};
    bool finite = isfinite(l->loss);
    if (finite) kgl_backward(&t, f.loss);
    kgl_tape_free(&t);
    free(ex);
    return finite;
}

double kgl_param_grad_norm(const kgl_param *p)
{
    double s = 0;
    for (size_t i = 0; i < kgl_numel(&p->t); i++) s += p->t.grad[i] * p->t.grad[i];
    return sqrt(s);
}

bool kgl_gradients_write(const char *path, const char *checkpoint, long step, const kgl_params *params,
                         const kgl_gradient_losses *l, char *err, size_t err_cap)
{
    /* gradients under the parameters' own names, shaped as in the checkpoint */
    kgl_st_entry *e = kgl_xcalloc((size_t)params->n, sizeof *e);
    for (int k = 0; k < params->n; k++) {
        const kgl_param *p = &params->p[k];
        e[k].name = p->name;
        e[k].data = p->t.grad;
        e[k].ndim = p->vector ? 1 : 2;
        e[k].shape[0] = p->vector ? p->t.cols : p->t.rows;
        e[k].shape[1] = p->t.cols;
    }
    char lo[64], ml[64], al[64], st[32], nex[32];
    snprintf(lo, sizeof lo, "%.17g", l->loss);
    snprintf(ml, sizeof ml, "%.17g", l->main_loss);
    snprintf(al, sizeof al, "%.17g", l->aux);
    snprintf(st, sizeof st, "%ld", step);
    snprintf(nex, sizeof nex, "%d", l->examples);
    const char *meta[] = {"format", "kgl-grad/1", "loss", lo, "main_loss", ml, "aux_loss", l->has_aux ? al : "",
                          "step", st, "examples", nex, "checkpoint", checkpoint};
    bool ok = kgl_st_write(path, e, params->n, meta, (int)(sizeof meta / sizeof meta[0]) / 2, err, err_cap);
    free(e);
    return ok;
}
