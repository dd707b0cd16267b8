/* tape.c — tensors in the arena, the tape, and reverse-mode backward.
 *
 * Forward: each op computes its output and, when the tape records, appends a
 * node {op, inputs, output, attributes, saved scratch}. Backward: seed the
 * root's gradient and visit the nodes newest first; by then a node's output
 * gradient is complete, because every op that consumed that output was
 * recorded after it and has already been visited. Each visit adds (+=) the
 * node's contribution into its inputs' gradients, so a tensor used by two ops
 * receives both contributions.
 *
 * An op's output gradient is not zeroed when the output is made: it is
 * unset, which reads as zeros. The first visit that adds into it either
 * finds it zeroed first (an ordinary op: backward zeroes the unset
 * gradients of a node's inputs before its visit) or writes every element
 * of it instead of adding (an op that claims its gradients: cross entropy's
 * scores, a product's inputs, layer norm's rows, dropout's), since x = 0 + x
 * holds to the bit. A step of FB15k-237's graph context wrote some 100 MB of
 * zeros it then read back to add to. Every unset gradient belongs to an op's
 * output, so its node's visit settles it (zeroed if nothing read the output)
 * and its consumers' visits came before: after backward none is unset, and
 * what a caller reads is unchanged. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/engine.h"
#include "internal.h"

void kgl_tape_init(kgl_tape *t)
{
    memset(t, 0, sizeof *t);
    t->recording = true;
    t->keep_attention = true;
    t->pool = kgl_pool_create(1);
    t->owns_pool = true;
}

void kgl_tape_set_pool(kgl_tape *t, kgl_pool *pool)
{
    if (t->owns_pool) kgl_pool_free(t->pool);
    t->pool = pool ? pool : kgl_pool_create(1);
    t->owns_pool = pool == NULL;
}

void kgl_tape_reset(kgl_tape *t)
{
    kgl_arena_reset(&t->arena);
    t->last = NULL;
    t->n_nodes = 0;
}

void kgl_tape_free(kgl_tape *t)
{
    if (t->owns_pool) kgl_pool_free(t->pool);
    t->pool = NULL;
    t->owns_pool = false;
    kgl_arena_free(&t->arena);
    t->last = NULL;
    t->n_nodes = 0;
}

/* A new gradient starts at zero. A step of the neighbourhood context zeroes
   hundreds of megabytes of them (its tokens' rows), more than one thread
   writes at memory's pace, so large ones are zeroed in blocks on the tape's
   pool (zeros are zeros, whoever writes them). */
#define ZERO_BLOCK ((size_t)1 << 16)

typedef struct zero_job {
    kgl_real *p;
    size_t n;
} zero_job;

static void zero_block(void *ctx, int task, int worker)
{
    (void)worker;
    const zero_job *J = ctx;
    size_t lo = (size_t)task * ZERO_BLOCK, hi = span_end(lo, ZERO_BLOCK, J->n);
    memset(J->p + lo, 0, (hi - lo) * sizeof *J->p);
}

static void zero_on(kgl_pool *pool, kgl_real *p, size_t n)
{
    zero_job J = {p, n};
    kgl_parallel(pool, (int)((n + ZERO_BLOCK - 1) / ZERO_BLOCK), (double)n, zero_block, &J);
}

/* with_grad: its gradient allocated, zeroed unless `unset` */
static kgl_tensor *new_tensor(kgl_tape *t, int rows, int cols, bool with_grad, bool unset)
{
    if (rows < 0 || cols < 0) kgl_die("tensor shape %dx%d is negative", rows, cols);
    kgl_tensor *x = kgl_arena_alloc(&t->arena, sizeof *x);
    size_t n = (size_t)rows * (size_t)cols;
    x->rows = rows;
    x->cols = cols;
    x->data = kgl_arena_alloc(&t->arena, n * sizeof(kgl_real));
    x->grad = (with_grad && t->recording) ? kgl_arena_alloc(&t->arena, n * sizeof(kgl_real)) : NULL;
    x->grad_unset = x->grad && unset;
    if (x->grad && !unset) zero_on(t->pool, x->grad, n);
    if (x->grad_unset && t->poison_unset) kgl_grad_poison(x);
    return x;
}

void kgl_grad_poison(kgl_tensor *x)
{
    if (!x->grad) return;
    for (size_t i = 0; i < kgl_numel(x); i++) x->grad[i] = (kgl_real)NAN;
    x->grad_unset = true;
}

kgl_tensor *kgl_tensor_new(kgl_tape *t, int rows, int cols, bool with_grad)
{
    return new_tensor(t, rows, cols, with_grad, false);
}

kgl_tensor *kgl_op_output(kgl_tape *t, int rows, int cols, int n_in, kgl_tensor *const *in)
{
    bool any = false;
    for (int i = 0; i < n_in; i++) any = any || in[i]->grad != NULL;
    return new_tensor(t, rows, cols, any, true);
}

bool kgl_grad_claim(kgl_tensor *x)
{
    bool unset = x->grad && x->grad_unset;
    x->grad_unset = false;
    return unset;
}

void kgl_grad_settle(kgl_pool *pool, kgl_tensor *x)
{
    if (kgl_grad_claim(x)) zero_on(pool, x->grad, kgl_numel(x));
}

kgl_node *kgl_record(kgl_tape *t, const kgl_op *op, kgl_tensor *out, int n_in, kgl_tensor *const *in)
{
    if (!t->recording || !out->grad) return NULL; /* nothing upstream wants a gradient */
    kgl_node *nd = kgl_arena_zalloc(&t->arena, sizeof *nd);
    nd->op = op;
    nd->pool = t->pool;
    nd->out = out;
    nd->n_in = n_in;
    nd->in = kgl_arena_alloc(&t->arena, (size_t)n_in * sizeof *nd->in);
    memcpy(nd->in, in, (size_t)n_in * sizeof *nd->in);
    nd->prev = t->last;
    t->last = nd;
    t->n_nodes++;
    return nd;
}

void kgl_real_from_double(kgl_real *dst, const double *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = (kgl_real)src[i];
}

void kgl_real_to_double(double *dst, const kgl_real *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = src[i];
}

void kgl_backward_seeded(kgl_tape *t, kgl_tensor *root, const kgl_real *seed)
{
    if (!root->grad) kgl_die("backward: the root tensor does not require a gradient");
    kgl_grad_settle(t->pool, root);
    size_t n = kgl_numel(root);
    for (size_t i = 0; i < n; i++) root->grad[i] += seed[i];
    for (kgl_node *nd = t->last; nd; nd = nd->prev) {
        kgl_grad_settle(nd->pool, nd->out); /* nothing read this output: its gradient is zero */
        if (!nd->op->claims_grads)
            for (int i = 0; i < nd->n_in; i++) kgl_grad_settle(nd->pool, nd->in[i]);
        nd->op->backward(nd); /* one that claims its gradients claims or settles each input's */
    }
}

void kgl_backward(kgl_tape *t, kgl_tensor *root)
{
    if (root->rows != 1 || root->cols != 1) kgl_die("backward: root is %dx%d, not a scalar", root->rows, root->cols);
    static const kgl_real one = 1;
    kgl_backward_seeded(t, root, &one);
}

