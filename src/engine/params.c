/* params.c — parameters, their gradients and optimiser state in one
 * allocation, and the optimisers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/engine.h"
#include "internal.h"
#include "vmath.h"

kgl_tensor *kgl_params_add(kgl_params *ps, const char *name, int rows, int cols)
{
    if (ps->block) kgl_die("params: '%s' declared after allocation", name);
    if (ps->n >= KGL_MAX_PARAMS) kgl_die("params: more than %d parameters", KGL_MAX_PARAMS);
    if (strlen(name) >= KGL_NAME_MAX) kgl_die("params: name '%s' too long", name);
    kgl_param *p = &ps->p[ps->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->t.rows = rows;
    p->t.cols = cols;
    return &p->t;
}

kgl_tensor *kgl_params_add_vector(kgl_params *ps, const char *name, int n)
{
    kgl_tensor *t = kgl_params_add(ps, name, 1, n);
    ps->p[ps->n - 1].vector = true;
    return t;
}

void kgl_params_alloc(kgl_params *ps)
{
    size_t total = 0;
    for (int i = 0; i < ps->n; i++) total += kgl_numel(&ps->p[i].t);
    ps->total = total;
    ps->block = kgl_xcalloc_for(4 * (total ? total : 1), sizeof(kgl_real),
                                "the parameters, their gradients and Adam's two moments");
    size_t off = 0;
    for (int i = 0; i < ps->n; i++) {
        kgl_param *p = &ps->p[i];
        p->t.data = ps->block + off;
        p->t.grad = ps->block + total + off;
        p->m = ps->block + 2 * total + off;
        p->v = ps->block + 3 * total + off;
        off += kgl_numel(&p->t);
    }
}

void kgl_params_free(kgl_params *ps)
{
    free(ps->block);
    memset(ps, 0, sizeof *ps);
}

void kgl_params_zero_grad(kgl_params *ps)
{
    if (ps->block) memset(ps->block + ps->total, 0, ps->total * sizeof(kgl_real));
}

void kgl_params_zero_state(kgl_params *ps)
{
    if (ps->block) memset(ps->block + 2 * ps->total, 0, 2 * ps->total * sizeof(kgl_real));
}

kgl_param *kgl_params_find(kgl_params *ps, const char *name)
{
    for (int i = 0; i < ps->n; i++)
        if (strcmp(ps->p[i].name, name) == 0) return &ps->p[i];
    return NULL;
}

const char *const kgl_optimizer_names[KGL_N_OPTIMIZERS] = {"adam", "sgd", "adagrad"};

void kgl_optim_select(kgl_optim *o, kgl_optimizer_kind kind)
{
    o->kind = kind;
    o->eps = kind == KGL_OPT_ADAGRAD ? KGL_ADAGRAD_EPS : 1e-8;
}

void kgl_optim_defaults(kgl_optim *o)
{
    memset(o, 0, sizeof *o);
    kgl_optim_select(o, KGL_OPT_ADAM);
    o->lr = 0.01;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
}

/* One update of every parameter, in the order of torch.optim's single-tensor
 * code paths so that the rounding matches as closely as it can:
 *   AdamW decay   θ ← θ (1 − lr·wd)
 *   Adam          m ← m + (1 − β1)(g − m)            (torch's lerp)
 *                 v ← β2 v + (1 − β2) g²
 *                 θ ← θ − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + eps)
 *   SGD           b ← μ b + g (b = g at the first step, as torch), θ ← θ − lr b
 *   Adagrad       s ← s + g², θ ← θ − lr · g / (√s + eps)  (s in m; torch's
 *                 addcmul, sqrt, add eps, addcdiv)
 * (weight decay is decoupled for SGD and Adagrad as well, so --weight-decay
 * means the same.) */
void kgl_optim_step(kgl_optim *o, kgl_params *ps)
{
    o->step++;
    double t = (double)o->step;
    double bc1 = 1.0 - pow(o->beta1, t), bc2_sqrt = sqrt(1.0 - pow(o->beta2, t));
    double step_size = o->lr / bc1, keep = 1.0 - o->lr * o->weight_decay;
    for (int k = 0; k < ps->n; k++) {
        kgl_param *p = &ps->p[k];
        if (p->frozen) continue;
        size_t n = kgl_numel(&p->t);
        kgl_real *theta = p->t.data, *g = p->t.grad, *m = p->m, *v = p->v;
        if (o->kind == KGL_OPT_ADAM) { /* the Adam lines above, element by element, on the vector kernel */
            kgl_adam_update(theta, g, m, v, n, o->beta1, o->beta2, o->eps, step_size, bc2_sqrt,
                            o->weight_decay != 0 ? keep : 1.0);
            continue;
        }
        if (o->weight_decay != 0)
            for (size_t i = 0; i < n; i++) theta[i] *= keep;
        if (o->kind == KGL_OPT_ADAGRAD) {
            /* Each coordinate's step is lr divided by the root of its summed
               squared gradients: a coordinate that has had large gradients
               moves less, and every step is smaller than the one before. */
            for (size_t i = 0; i < n; i++) {
                m[i] += g[i] * g[i];
                theta[i] -= (kgl_real)(o->lr * g[i] / (sqrt(m[i]) + o->eps));
            }
        }
        if (o->kind == KGL_OPT_SGD) {
            for (size_t i = 0; i < n; i++) {
                double d = g[i];
                if (o->momentum != 0) {
                    m[i] = o->momentum * m[i] + g[i]; /* b starts at 0, so b = g at step 1 */
                    d = m[i];
                }
                theta[i] -= o->lr * d;
            }
        }
    }
}
