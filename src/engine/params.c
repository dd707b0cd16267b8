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

void kgl_params_zero_grad(kgl_params *ps) { kgl_params_zero_grad_on(ps, NULL); }

/* Element-wise work over the whole parameter block runs in spans of this
   many elements, one task each: at FB15k-237's size (6.9 M parameters) a
   serial pass over the gradients and Adam's moments was about 3 % of a
   two-thread step. Every element's arithmetic is its own, so any split
   gives the same bits. */
#define PARAM_SPAN 65536
static int param_spans(const kgl_params *ps) { return (int)((ps->total + PARAM_SPAN - 1) / PARAM_SPAN); }

typedef struct zero_job {
    kgl_real *grad;
    size_t total;
} zero_job;

static void zero_span(void *ctx, int task, int worker)
{
    (void)worker;
    const zero_job *j = ctx;
    size_t lo = (size_t)task * PARAM_SPAN, hi = span_end(lo, PARAM_SPAN, j->total);
    memset(j->grad + lo, 0, (hi - lo) * sizeof(kgl_real));
}

void kgl_params_zero_grad_on(kgl_params *ps, kgl_pool *pool)
{
    if (!ps->block) return;
    zero_job j = {ps->block + ps->total, ps->total};
    kgl_parallel(pool, param_spans(ps), (double)ps->total, zero_span, &j);
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
    o->layer_lr = 1;
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
 * means the same.) Each element's update reads and writes that element
 * alone, so the block is cut into spans (PARAM_SPAN) that the pool's
 * threads update: the same bits for any number of threads. */
typedef struct optim_job {
    const kgl_optim *o;
    const kgl_params *ps;
    double step_size, bc2_sqrt, keep;
} optim_job;

/* Elements [lo, hi) of parameter p (offsets within p) */
static void update_elements(const optim_job *j, const kgl_param *p, size_t lo, size_t hi)
{
    const kgl_optim *o = j->o;
    size_t n = hi - lo;
    kgl_real *theta = p->t.data + lo, *g = p->t.grad + lo, *m = p->m + lo, *v = p->v + lo;
    /* A vector (a gain, a shift, a bias, a temperature) sets a scale or an
       offset, not a direction to keep small: --weight-decay-on matrices leaves it out. */
    bool decays = o->weight_decay != 0 && !(o->decay_matrices_only && p->vector);
    /* --layer-lr: a layer's parameter steps at its own rate lr' = layer_lr · lr,
       in every line above that has lr (the step, and AdamW's decay); any other
       parameter, or layer_lr 1, at lr itself (the job's values, the same bits). */
    double lr = o->lr, step_size = j->step_size, keep = j->keep;
    if (p->layer && o->layer_lr != 1) {
        lr = o->layer_lr * o->lr;
        step_size = o->layer_lr * j->step_size;
        keep = 1.0 - lr * o->weight_decay;
    }
    if (o->kind == KGL_OPT_ADAM) { /* the Adam lines above, element by element, on the vector kernel */
        kgl_adam_update(theta, g, m, v, n, o->beta1, o->beta2, o->eps, step_size, j->bc2_sqrt, decays ? keep : 1.0);
        return;
    }
    if (decays)
        for (size_t i = 0; i < n; i++) theta[i] *= keep;
    if (o->kind == KGL_OPT_ADAGRAD) {
        /* Each coordinate's step is lr divided by the root of its summed
           squared gradients: a coordinate that has had large gradients
           moves less, and every step is smaller than the one before. */
        for (size_t i = 0; i < n; i++) {
            m[i] += g[i] * g[i];
            theta[i] -= (kgl_real)(lr * g[i] / (sqrt(m[i]) + o->eps));
        }
    }
    if (o->kind == KGL_OPT_SGD) {
        for (size_t i = 0; i < n; i++) {
            double d = g[i];
            if (o->momentum != 0) {
                m[i] = o->momentum * m[i] + g[i]; /* b starts at 0, so b = g at step 1 */
                d = m[i];
            }
            theta[i] -= lr * d;
        }
    }
}

/* Span `task` of the block: the parts of the parameters it overlaps (each
   parameter's place in the block is where its data starts), frozen ones
   skipped. */
static void update_span(void *ctx, int task, int worker)
{
    (void)worker;
    const optim_job *j = ctx;
    size_t lo = (size_t)task * PARAM_SPAN, hi = span_end(lo, PARAM_SPAN, j->ps->total);
    for (int k = 0; k < j->ps->n; k++) {
        const kgl_param *p = &j->ps->p[k];
        size_t start = (size_t)(p->t.data - j->ps->block), end = start + kgl_numel(&p->t);
        if (p->frozen || end <= lo || start >= hi) continue;
        update_elements(j, p, (lo > start ? lo : start) - start, (hi < end ? hi : end) - start);
    }
}

void kgl_optim_step(kgl_optim *o, kgl_params *ps) { kgl_optim_step_on(o, ps, NULL); }

void kgl_optim_step_on(kgl_optim *o, kgl_params *ps, kgl_pool *pool)
{
    o->step++;
    double t = (double)o->step;
    double bc1 = 1.0 - pow(o->beta1, t), bc2_sqrt = sqrt(1.0 - pow(o->beta2, t));
    double step_size = o->lr / bc1, keep = 1.0 - o->lr * o->weight_decay;
    optim_job j = {o, ps, step_size, bc2_sqrt, keep};
    kgl_parallel(pool, param_spans(ps), 10.0 * (double)ps->total, update_span, &j);
}
