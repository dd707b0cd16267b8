/* diagnostics.c — per-head measurements of attention during training: how
 * saturated it is, how much gradient reaches it, how far it moved, and what
 * it looks at. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

static double *copy_of(const double *src, size_t n)
{
    return memcpy(kgl_xmalloc(n * sizeof(double)), src, n * sizeof(double));
}

void kgl_diag_init(kgl_diag *dg, kgl_trainer *tr)
{
    tr->model.measure_attention = true; /* the fused attention's max |S_h| and ‖∂L/∂S_h‖ */
    memset(dg, 0, sizeof *dg);
    const kgl_config *c = &tr->model.cfg;
    dg->heads = c->heads;
    dg->n = c->n_entities;
    dg->d = c->dim;
    dg->m = c->n_relations;
    size_t nn = (size_t)dg->n * dg->n, dd = (size_t)dg->d * dg->d;
    dg->attn0 = kgl_xmalloc((size_t)dg->heads * nn * sizeof(double));
    dg->spec = kgl_xmalloc((size_t)dg->heads * dg->m * sizeof(double));
    kgl_forward f;
    kgl_trainer_context(tr, &f);
    for (int h = 0; h < dg->heads; h++) memcpy(dg->attn0 + h * nn, f.attn[h]->data, nn * sizeof(double));
    dg->wq0 = copy_of(tr->model.wq->data, dd);
    dg->wk0 = copy_of(tr->model.wk->data, dd);
}

void kgl_diag_free(kgl_diag *dg)
{
    free(dg->attn0);
    free(dg->wq0);
    free(dg->wk0);
    free(dg->spec);
    memset(dg, 0, sizeof *dg);
}

static double frobenius(const double *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

/* ‖X[:, c0:c0+w]‖_F of a d x d matrix, and of its difference from X0. */
static double block_norm(const double *x, int d, int c0, int w)
{
    double s = 0;
    for (int i = 0; i < d; i++)
        for (int j = c0; j < c0 + w; j++) s += x[i * d + j] * x[i * d + j];
    return sqrt(s);
}

static double block_move(const double *x, const double *x0, int d, int c0, int w)
{
    double s = 0;
    for (int i = 0; i < d; i++)
        for (int j = c0; j < c0 + w; j++) s += (x[i * d + j] - x0[i * d + j]) * (x[i * d + j] - x0[i * d + j]);
    double base = block_norm(x0, d, c0, w);
    return base > 0 ? sqrt(s) / base : NAN;
}

void kgl_diag_measure(kgl_diag *dg, const kgl_trainer *tr)
{
    int n = dg->n, d = dg->d, dk = d / dg->heads;
    size_t nn = (size_t)n * n;
    const kgl_model *m = &tr->model;
    for (int h = 0; h < dg->heads; h++) {
        kgl_head_diag *hd = &dg->head[h];
        const kgl_tensor *A = tr->fwd.attn[h], *S = tr->fwd.logits_attn[h];
        double mp_sum = 0, mp_min = INFINITY, ent = 0, jac = 0, tv = 0, max_logit = 0;
        for (int i = 0; i < n; i++) {
            const double *a = A->data + (size_t)i * n, *a0 = dg->attn0 + h * nn + (size_t)i * n;
            double mp = 0, row_tv = 0;
            for (int j = 0; j < n; j++) {
                if (a[j] > mp) mp = a[j];
                if (a[j] > 0) ent -= a[j] * log(a[j]);
                row_tv += fabs(a[j] - a0[j]);
                if (S) {
                    double s = fabs(S->data[(size_t)i * n + j]);
                    if (s > max_logit) max_logit = s;
                }
            }
            mp_sum += mp;
            if (mp < mp_min) mp_min = mp;
            jac += kgl_softmax_jacobian_fro(a, n);
            tv += 0.5 * row_tv;
        }
        hd->max_prob_mean = mp_sum / n;
        hd->max_prob_min = mp_min;
        hd->entropy = ent / n;
        hd->jac_fro = jac / n;
        hd->attn_tv = tv / n;
        /* the fused attention measured these itself (it keeps no S_h) */
        const double *st = tr->fwd.attn_stats;
        hd->max_abs_logit = S ? max_logit : st ? st[h] : NAN;
        hd->grad_logits = S ? (S->grad ? frobenius(S->grad, nn) : NAN) : st ? st[dg->heads + h] : NAN;
        hd->grad_wq = block_norm(m->wq->grad, d, h * dk, dk);
        hd->grad_wk = block_norm(m->wk->grad, d, h * dk, dk);
        hd->wq_move = block_move(m->wq->data, dg->wq0, d, h * dk, dk);
        hd->wk_move = block_move(m->wk->data, dg->wk0, d, h * dk, dk);
    }
    kgl_specialisation(&tr->tails, dg->heads, (kgl_tensor *const *)tr->fwd.attn, dg->spec);
}
