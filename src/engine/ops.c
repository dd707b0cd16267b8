/* ops.c — every op of the engine: forward, backward, and gradient-check spec,
 * side by side, then the registry.
 *
 * Notation in the derivations: an op computes Y = f(X, ...); during backward
 * G = ∂L/∂Y is complete (node->out->grad) and the op adds ∂L/∂X = G ∂Y/∂X
 * into each input's grad. The matrix products run on src/engine/kernel.c's
 * GEMM (each output element one fused multiply-add chain over the sum's
 * index in increasing order, whatever the blocking or the threads), the
 * softmax rows and exponentials on src/engine/vmath.c; work that splits by
 * rows runs as tasks on the tape's pool (kgl_parallel), each task writing
 * its own rows, so the bits never depend on the number of threads. The
 * other loops are plain, innermost loop contiguous. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernel.h"
#include "vmath.h"
#include "kgl/engine.h"
#include "internal.h"
#include "ops_check.h"

/* The ISA clones (ops_check.h) must give the same bits: clang, unlike gcc in
   ISO C mode, would fuse a * b + c in one statement into an FMA where the
   target has one. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* ---- helpers for the check specs --------------------------------------- */

kgl_tensor *kgl_check_input(kgl_arena *keep, kgl_rng *rng, int rows, int cols, double scale, double shift)
{
    kgl_tensor *x = kgl_arena_alloc(keep, sizeof *x);
    size_t n = (size_t)rows * (size_t)cols;
    x->rows = rows;
    x->cols = cols;
    x->data = kgl_arena_alloc(keep, n * sizeof(kgl_real));
    x->grad = kgl_arena_zalloc(keep, n * sizeof(kgl_real));
    x->grad_unset = false;
    for (size_t i = 0; i < n; i++) x->data[i] = shift + scale * kgl_rng_normal(rng);
    return x;
}

int *kgl_check_indices(kgl_arena *keep, int n, const int *values)
{
    int *p = kgl_arena_alloc(keep, (size_t)n * sizeof(int));
    memcpy(p, values, (size_t)n * sizeof(int));
    return p;
}


/* Ops whose rows are independent run blocks of ROW_BLOCK rows as tasks on
 * the tape's pool; attention blocks ATTN_BLOCK query rows. The
 * sizes are fixed, so how the work is split never depends on the threads. */
#define ROW_BLOCK 32
#define ATTN_BLOCK 64
static int row_blocks(int rows) { return (rows + ROW_BLOCK - 1) / ROW_BLOCK; }

/* Elementwise ops on large tensors (the FFN's hidden layer is n × 4d) run
 * blocks of ELEM_BLOCK elements, or of COL_BLOCK columns for a sum over
 * rows, as tasks; each element is computed exactly as a plain loop would. */
#define ELEM_BLOCK 16384
#define COL_BLOCK 64
static int elem_blocks(size_t n) { return (int)((n + ELEM_BLOCK - 1) / ELEM_BLOCK); }

static void shape_check(bool ok, const char *op, const kgl_tensor *a, const kgl_tensor *b)
{
    if (!ok) kgl_die("%s: incompatible shapes %dx%d and %dx%d", op, a->rows, a->cols, b->rows, b->cols);
}

/* ========================================================================
 * matmul: Y = A B,   A [n,k], B [k,p], Y [n,p]
 *   Y_ij = Σ_l A_il B_lj  ⇒  ∂L/∂A_il = Σ_j G_ij B_lj   (dA = G Bᵀ)
 *                            ∂L/∂B_lj = Σ_i A_il G_ij   (dB = Aᵀ G)
 * ======================================================================== */
static const kgl_op op_matmul;

/* The products' backward claims its inputs' gradients (kgl_grad_claim): an
   unset one is written (KGL_SET: each element's chain starts from 0, as it
   would from a zeroed gradient), any other added to. */
static int grad_mode(kgl_tensor *x) { return kgl_grad_claim(x) ? KGL_SET : KGL_ADD; }

static void matmul_backward(kgl_node *nd)
{
    kgl_tensor *A = nd->in[0], *B = nd->in[1], *Y = nd->out;
    int n = A->rows, k = A->cols, p = B->cols;
    const kgl_real *G = Y->grad;
    /* dA[i,l] += G[i,j] B[l,j], j in order;  dB[l,j] += A[i,l] G[i,j], i in order */
    if (A->grad) kgl_gemm_nt(nd->pool, n, k, p, G, p, B->data, p, A->grad, k, grad_mode(A));
    if (B->grad) kgl_gemm_tn(nd->pool, k, p, n, A->data, k, G, p, B->grad, p, grad_mode(B));
}

kgl_tensor *kgl_matmul(kgl_tape *t, kgl_tensor *A, kgl_tensor *B)
{
    shape_check(A->cols == B->rows, "matmul", A, B);
    int n = A->rows, k = A->cols, p = B->cols;
    kgl_tensor *in[2] = {A, B};
    kgl_tensor *Y = kgl_op_output(t, n, p, 2, in);
    /* Y[i,j] = 0 + A[i,0] B[0,j] + A[i,1] B[1,j] + …   (l in order) */
    kgl_gemm_nn(t->pool, n, p, k, A->data, k, B->data, p, Y->data, p, KGL_SET);
    kgl_record(t, &op_matmul, Y, 2, in);
    return Y;
}

static kgl_tensor *matmul_run(kgl_tape *t, const kgl_check_case *c) { return kgl_matmul(t, c->inputs[0], c->inputs[1]); }

static void matmul_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int shapes[][3] = {{2, 3, 2}, {4, 1, 3}, {5, 7, 3}};
    const int *s = shapes[which];
    c->inputs[0] = kgl_check_input(keep, rng, s[0], s[1], 1, 0);
    c->inputs[1] = kgl_check_input(keep, rng, s[1], s[2], 1, 0);
    c->n_inputs = 2;
    c->run = matmul_run;
    snprintf(c->label, sizeof c->label, "%dx%d·%dx%d", s[0], s[1], s[1], s[2]);
}

static const kgl_op op_matmul = {"matmul", matmul_backward, {3, matmul_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};

/* ========================================================================
 * matmul_nt: Y = A Bᵀ,   A [n,k], B [p,k], Y [n,p]   (attention's Q Kᵀ)
 *   Y_ij = Σ_l A_il B_jl  ⇒  dA = G B,  dB = Gᵀ A
 * ======================================================================== */
static const kgl_op op_matmul_nt;

static void matmul_nt_backward(kgl_node *nd)
{
    kgl_tensor *A = nd->in[0], *B = nd->in[1], *Y = nd->out;
    int n = A->rows, k = A->cols, p = B->rows;
    const kgl_real *G = Y->grad;
    /* dA[i,l] += G[i,j] B[j,l], j in order;  dB[j,l] += G[i,j] A[i,l], i in order */
    if (A->grad) kgl_gemm_nn(nd->pool, n, k, p, G, p, B->data, k, A->grad, k, grad_mode(A));
    if (B->grad) kgl_gemm_tn(nd->pool, p, k, n, G, p, A->data, k, B->grad, k, grad_mode(B));
}

kgl_tensor *kgl_matmul_nt(kgl_tape *t, kgl_tensor *A, kgl_tensor *B)
{
    shape_check(A->cols == B->cols, "matmul_nt", A, B);
    int n = A->rows, k = A->cols, p = B->rows;
    kgl_tensor *in[2] = {A, B};
    kgl_tensor *Y = kgl_op_output(t, n, p, 2, in);
    /* Y[i,j] = 0 + A[i,0] B[j,0] + A[i,1] B[j,1] + …   (l in order) */
    kgl_gemm_nt(t->pool, n, p, k, A->data, k, B->data, k, Y->data, p, KGL_SET);
    kgl_record(t, &op_matmul_nt, Y, 2, in);
    return Y;
}

static kgl_tensor *matmul_nt_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_matmul_nt(t, c->inputs[0], c->inputs[1]);
}

static void matmul_nt_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int shapes[][3] = {{3, 4, 3}, {1, 2, 5}, {6, 3, 6}}; /* n, k, p */
    const int *s = shapes[which];
    c->inputs[0] = kgl_check_input(keep, rng, s[0], s[1], 1, 0);
    c->inputs[1] = kgl_check_input(keep, rng, s[2], s[1], 1, 0);
    c->n_inputs = 2;
    c->run = matmul_nt_run;
    snprintf(c->label, sizeof c->label, "%dx%d·(%dx%d)ᵀ", s[0], s[1], s[2], s[1]);
}

static const kgl_op op_matmul_nt = {"matmul_nt",
                                    matmul_nt_backward,
                                    {3, matmul_nt_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};

/* ========================================================================
 * matmul_tn: Y = Aᵀ B,   A [k,n], B [k,p], Y [n,p]
 *   Y_ij = Σ_l A_li B_lj  ⇒  dA_li = Σ_j B_lj G_ij (dA = B Gᵀ),  dB = A G
 * ======================================================================== */
static const kgl_op op_matmul_tn;

static void matmul_tn_backward(kgl_node *nd)
{
    kgl_tensor *A = nd->in[0], *B = nd->in[1], *Y = nd->out;
    int k = A->rows, n = A->cols, p = B->cols;
    const kgl_real *G = Y->grad;
    /* dA[l,i] += (Σ_j B[l,j] G[i,j]);  dB[l,j] += A[l,i] G[i,j], i in order */
    if (A->grad) kgl_gemm_nt(nd->pool, k, n, p, B->data, p, G, p, A->grad, n, grad_mode(A));
    if (B->grad) kgl_gemm_nn(nd->pool, k, p, n, A->data, n, G, p, B->grad, p, grad_mode(B));
}

kgl_tensor *kgl_matmul_tn(kgl_tape *t, kgl_tensor *A, kgl_tensor *B)
{
    shape_check(A->rows == B->rows, "matmul_tn", A, B);
    int k = A->rows, n = A->cols, p = B->cols;
    kgl_tensor *in[2] = {A, B};
    kgl_tensor *Y = kgl_op_output(t, n, p, 2, in);
    /* Y[i,j] = 0 + A[0,i] B[0,j] + A[1,i] B[1,j] + …   (l in order) */
    kgl_gemm_tn(t->pool, n, p, k, A->data, n, B->data, p, Y->data, p, KGL_SET);
    kgl_record(t, &op_matmul_tn, Y, 2, in);
    return Y;
}

static kgl_tensor *matmul_tn_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_matmul_tn(t, c->inputs[0], c->inputs[1]);
}

static void matmul_tn_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int shapes[][3] = {{3, 2, 4}, {5, 1, 2}, {2, 6, 3}}; /* k, n, p */
    const int *s = shapes[which];
    c->inputs[0] = kgl_check_input(keep, rng, s[0], s[1], 1, 0);
    c->inputs[1] = kgl_check_input(keep, rng, s[0], s[2], 1, 0);
    c->n_inputs = 2;
    c->run = matmul_tn_run;
    snprintf(c->label, sizeof c->label, "(%dx%d)ᵀ·%dx%d", s[0], s[1], s[0], s[2]);
}

static const kgl_op op_matmul_tn = {"matmul_tn",
                                    matmul_tn_backward,
                                    {3, matmul_tn_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};

/* ========================================================================
 * matmul_heads: Y_h = Z_h W_h for each head h,
 *   Z [n, H·w] (head h: columns h·w …), W [w, H·dk] (head h: columns h·dk …),
 *   Y [n, H·dk]; a product per head, each head's w-wide block of Z times its
 *   own dk columns of W (attention's value projection applied after the
 *   weighted sum: segment_head_sums). As matmul, head by head:
 *   dZ_h = G_h W_hᵀ,  dW_h = Z_hᵀ G_h.
 * ======================================================================== */
static const kgl_op op_matmul_heads;

static void matmul_heads_backward(kgl_node *nd)
{
    kgl_tensor *Z = nd->in[0], *W = nd->in[1], *Y = nd->out;
    int H = nd->i0, n = Z->rows, w = W->rows, dk = W->cols / H;
    /* the heads write disjoint blocks of columns that together cover dZ and dW: claimed once for all */
    int mode_z = Z->grad ? grad_mode(Z) : KGL_ADD, mode_w = W->grad ? grad_mode(W) : KGL_ADD;
    for (int h = 0; h < H; h++) {
        const kgl_real *G = Y->grad + h * dk;
        if (Z->grad) kgl_gemm_nt(nd->pool, n, w, dk, G, H * dk, W->data + h * dk, H * dk, Z->grad + h * w, H * w, mode_z);
        if (W->grad) kgl_gemm_tn(nd->pool, w, dk, n, Z->data + h * w, H * w, G, H * dk, W->grad + h * dk, H * dk, mode_w);
    }
}

kgl_tensor *kgl_matmul_heads(kgl_tape *t, kgl_tensor *Z, kgl_tensor *W, int heads)
{
    if (heads < 1 || W->cols % heads || Z->cols != heads * W->rows)
        kgl_die("matmul_heads: %d heads do not fit %dx%d and %dx%d", heads, Z->rows, Z->cols, W->rows, W->cols);
    int H = heads, n = Z->rows, w = W->rows, dk = W->cols / H;
    kgl_tensor *in[2] = {Z, W};
    kgl_tensor *Y = kgl_op_output(t, n, W->cols, 2, in);
    for (int h = 0; h < H; h++) /* Y_h[i,j] = 0 + Z_h[i,0] W_h[0,j] + …   (l in order) */
        kgl_gemm_nn(t->pool, n, dk, w, Z->data + h * w, H * w, W->data + h * dk, H * dk, Y->data + h * dk, H * dk, KGL_SET);
    kgl_node *nd = kgl_record(t, &op_matmul_heads, Y, 2, in);
    if (nd) nd->i0 = H;
    return Y;
}

static kgl_tensor *matmul_heads_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_matmul_heads(t, c->inputs[0], c->inputs[1], c->i0);
}

static void matmul_heads_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int shapes[][4] = {{2, 1, 3, 2}, {3, 2, 2, 3}, {5, 3, 4, 2}}; /* n, H, w, dk */
    const int *s = shapes[which];
    c->inputs[0] = kgl_check_input(keep, rng, s[0], s[1] * s[2], 1, 0);
    c->inputs[1] = kgl_check_input(keep, rng, s[2], s[1] * s[3], 1, 0);
    c->n_inputs = 2;
    c->i0 = s[1];
    c->run = matmul_heads_run;
    snprintf(c->label, sizeof c->label, "%dx%d·%dx%d H%d", s[0], s[1] * s[2], s[2], s[1] * s[3], s[1]);
}

static const kgl_op op_matmul_heads = {"matmul_heads",
                                       matmul_heads_backward,
                                       {3, matmul_heads_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};

/* ========================================================================
 * add: Y = A + B, B of A's shape, or B a row [1, cols] added to every row.
 *   dA = G;  dB = G, or for the broadcast row dB_j = Σ_i G_ij.
 * ======================================================================== */
static const kgl_op op_add;

/* The tasks of add: Y = A + B or its gradient, on one block. B is A's shape
 * or one row; `row` says which. */
typedef struct add_job {
    const kgl_real *a, *b; /* forward: the inputs; backward: b is G */
    kgl_real *y;           /* forward: Y; backward: the gradient receiving G */
    size_t n;
    int cols;
    bool row;
} add_job;

static void add_forward_block(void *ctx, int task, int worker)
{
    (void)worker;
    const add_job *J = ctx;
    size_t lo = (size_t)task * ELEM_BLOCK, hi = span_end(lo, ELEM_BLOCK, J->n);
    if (!J->row)
        for (size_t i = lo; i < hi; i++) J->y[i] = J->a[i] + J->b[i];
    else
        for (size_t i = lo, j = lo % (size_t)J->cols; i < hi; i++, j = j + 1 == (size_t)J->cols ? 0 : j + 1)
            J->y[i] = J->a[i] + J->b[j];
}

/* dX += G, elementwise */
static void add_grad_block(void *ctx, int task, int worker)
{
    (void)worker;
    const add_job *J = ctx;
    size_t lo = (size_t)task * ELEM_BLOCK, hi = span_end(lo, ELEM_BLOCK, J->n);
    for (size_t i = lo; i < hi; i++) J->y[i] += J->b[i];
}

/* dB_j += Σ_i G_ij for this task's columns, i in increasing order (the
 * order of the plain loop, so the same bits however the columns are split) */
static void add_grad_row_block(void *ctx, int task, int worker)
{
    (void)worker;
    const add_job *J = ctx;
    size_t cols = (size_t)J->cols, rows = J->n / cols;
    size_t c0 = (size_t)task * COL_BLOCK, c1 = span_end(c0, COL_BLOCK, cols);
    for (size_t i = 0; i < rows; i++)
        for (size_t j = c0; j < c1; j++) J->y[j] += J->b[i * cols + j];
}

static void add_backward(kgl_node *nd)
{
    kgl_tensor *A = nd->in[0], *B = nd->in[1], *Y = nd->out;
    size_t n = kgl_numel(Y);
    add_job J = {NULL, Y->grad, NULL, n, Y->cols, B->rows != A->rows};
    /* A's term first, then B's: when A and B are one tensor, both land in order */
    if (A->grad) {
        J.y = A->grad;
        kgl_parallel(nd->pool, elem_blocks(n), (double)n, add_grad_block, &J);
    }
    if (B->grad) {
        J.y = B->grad;
        if (J.row) kgl_parallel(nd->pool, (Y->cols + COL_BLOCK - 1) / COL_BLOCK, (double)n, add_grad_row_block, &J);
        else kgl_parallel(nd->pool, elem_blocks(n), (double)n, add_grad_block, &J);
    }
}

kgl_tensor *kgl_add(kgl_tape *t, kgl_tensor *A, kgl_tensor *B)
{
    bool same = A->rows == B->rows && A->cols == B->cols;
    bool row = B->rows == 1 && B->cols == A->cols;
    shape_check(same || row, "add", A, B);
    kgl_tensor *in[2] = {A, B};
    kgl_tensor *Y = kgl_op_output(t, A->rows, A->cols, 2, in);
    size_t n = kgl_numel(Y);
    add_job J = {A->data, B->data, Y->data, n, A->cols, !same};
    kgl_parallel(t->pool, elem_blocks(n), (double)n, add_forward_block, &J);
    kgl_record(t, &op_add, Y, 2, in);
    return Y;
}

static kgl_tensor *add_run(kgl_tape *t, const kgl_check_case *c) { return kgl_add(t, c->inputs[0], c->inputs[1]); }

static void add_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int shapes[][3] = {{3, 4, 3}, {5, 3, 1}, {1, 1, 1}}; /* rows, cols, rows of B */
    const int *s = shapes[which];
    c->inputs[0] = kgl_check_input(keep, rng, s[0], s[1], 1, 0);
    c->inputs[1] = kgl_check_input(keep, rng, s[2], s[1], 1, 0);
    c->n_inputs = 2;
    c->run = add_run;
    snprintf(c->label, sizeof c->label, "%dx%d+%dx%d", s[0], s[1], s[2], s[1]);
}

static const kgl_op op_add = {"add", add_backward, {3, add_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * mul: Y = A ⊙ B (elementwise).   dA = G ⊙ B,  dB = G ⊙ A.
 * When A and B are the same tensor both terms land in its grad: d(x²) = 2x.
 * ======================================================================== */
static const kgl_op op_mul;

static void mul_backward(kgl_node *nd)
{
    kgl_tensor *A = nd->in[0], *B = nd->in[1], *Y = nd->out;
    size_t n = kgl_numel(Y);
    if (A->grad)
        for (size_t i = 0; i < n; i++) A->grad[i] += Y->grad[i] * B->data[i];
    if (B->grad)
        for (size_t i = 0; i < n; i++) B->grad[i] += Y->grad[i] * A->data[i];
}

kgl_tensor *kgl_mul(kgl_tape *t, kgl_tensor *A, kgl_tensor *B)
{
    shape_check(A->rows == B->rows && A->cols == B->cols, "mul", A, B);
    kgl_tensor *in[2] = {A, B};
    kgl_tensor *Y = kgl_op_output(t, A->rows, A->cols, 2, in);
    size_t n = kgl_numel(Y);
    for (size_t i = 0; i < n; i++) Y->data[i] = A->data[i] * B->data[i];
    kgl_record(t, &op_mul, Y, 2, in);
    return Y;
}

static kgl_tensor *mul_run(kgl_tape *t, const kgl_check_case *c)
{
    /* case 2 multiplies a tensor by itself: the two contributions must add up */
    return kgl_mul(t, c->inputs[0], c->n_inputs == 2 ? c->inputs[1] : c->inputs[0]);
}

static void mul_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int shapes[][2] = {{3, 4}, {1, 6}, {4, 2}};
    const int *s = shapes[which];
    c->inputs[0] = kgl_check_input(keep, rng, s[0], s[1], 1, 0);
    c->n_inputs = 1;
    if (which < 2) c->inputs[c->n_inputs++] = kgl_check_input(keep, rng, s[0], s[1], 1, 0);
    c->run = mul_run;
    if (which < 2)
        snprintf(c->label, sizeof c->label, "%dx%d⊙%dx%d", s[0], s[1], s[0], s[1]);
    else
        snprintf(c->label, sizeof c->label, "x⊙x %dx%d", s[0], s[1]);
}

static const kgl_op op_mul = {"mul", mul_backward, {3, mul_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * scale: Y = α A (α a constant, node->alpha).   dA = α G.
 * ======================================================================== */
static const kgl_op op_scale;

static void scale_backward(kgl_node *nd)
{
    kgl_tensor *A = nd->in[0];
    size_t n = kgl_numel(A);
    for (size_t i = 0; i < n; i++) A->grad[i] += nd->alpha * nd->out->grad[i];
}

kgl_tensor *kgl_scale(kgl_tape *t, kgl_tensor *A, double alpha)
{
    kgl_tensor *Y = kgl_op_output(t, A->rows, A->cols, 1, &A);
    size_t n = kgl_numel(Y);
    for (size_t i = 0; i < n; i++) Y->data[i] = alpha * A->data[i];
    kgl_node *nd = kgl_record(t, &op_scale, Y, 1, &A);
    if (nd) nd->alpha = alpha;
    return Y;
}

static kgl_tensor *scale_run(kgl_tape *t, const kgl_check_case *c) { return kgl_scale(t, c->inputs[0], c->alpha); }

static void scale_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const double alphas[] = {0.5, -3.0, 0.125};
    c->inputs[0] = kgl_check_input(keep, rng, 3 + which, 4, 1, 0);
    c->n_inputs = 1;
    c->alpha = alphas[which];
    c->run = scale_run;
    snprintf(c->label, sizeof c->label, "%g·%dx4", alphas[which], 3 + which);
}

static const kgl_op op_scale = {"scale", scale_backward, {3, scale_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * gather_rows: Y[b] = T[idx[b]]   (embedding lookup; idx in node->idx0)
 *   Each T row receives the sum of the G rows that copied it: a scatter-add,
 *   dT[idx[b]] += G[b]; a row gathered twice gets both.
 * ======================================================================== */
static const kgl_op op_gather_rows;

/* Forward in blocks of rows. Backward, two copies may add into one row of
   T, so the copies cannot be split among threads; the rows of T can: a task
   owns blocks of KGL_OWNED_ROWS rows of T (dealt round-robin, so that hubs
   spread) and walks every copy b = 0, 1, … in order, adding those that land
   in its rows. Each element gets its copies in order b whatever the number
   of tasks (the same bits for any number of threads), and each copy is read
   and added by one thread only (slabs of columns, before, had every thread
   read every copy: twice the work on two threads, and the slabs' edges
   shared cache lines). */
#define GATHER_BLOCK 64
typedef struct gather_rows_job {
    const kgl_tensor *T, *Y;
    const int *rows;
    int n, tasks;
} gather_rows_job;

static void gather_rows_block(void *ctx, int task, int worker)
{
    (void)worker;
    const gather_rows_job *J = ctx;
    size_t d = (size_t)J->T->cols;
    int b1 = (int)span_end((size_t)task * GATHER_BLOCK, GATHER_BLOCK, (size_t)J->n);
    for (int b = task * GATHER_BLOCK; b < b1; b++)
        memcpy(J->Y->data + (size_t)b * d, J->T->data + (size_t)J->rows[b] * d, d * sizeof(kgl_real));
}

static void gather_rows_backward_owned(void *ctx, int task, int worker)
{
    (void)worker;
    const gather_rows_job *J = ctx;
    int d = J->T->cols;
    for (int b = 0; b < J->n; b++) {
        kgl_prefetch_owned_row(J->T->grad, J->rows, b, J->n, d, task, J->tasks);
        if (!kgl_owns_row(J->rows[b], task, J->tasks)) continue;
        kgl_real *dst = J->T->grad + (size_t)J->rows[b] * d;
        const kgl_real *g = J->Y->grad + (size_t)b * d;
        for (int c = 0; c < d; c++) dst[c] += g[c];
    }
}

static void gather_rows_backward(kgl_node *nd)
{
    gather_rows_job J = {nd->in[0], nd->out, nd->idx0, nd->n_idx, kgl_pool_threads(nd->pool)};
    kgl_parallel(nd->pool, J.tasks, 1.0 * J.n * J.T->cols, gather_rows_backward_owned, &J);
}

kgl_tensor *kgl_gather_rows(kgl_tape *t, kgl_tensor *T, const int *rows, int n)
{
    for (int b = 0; b < n; b++)
        if (rows[b] < 0 || rows[b] >= T->rows) kgl_die("gather_rows: index %d outside 0..%d", rows[b], T->rows - 1);
    kgl_tensor *Y = kgl_op_output(t, n, T->cols, 1, &T);
    gather_rows_job J = {T, Y, rows, n, 1};
    kgl_parallel(t->pool, (n + GATHER_BLOCK - 1) / GATHER_BLOCK, 1.0 * n * T->cols, gather_rows_block, &J);
    kgl_node *nd = kgl_record(t, &op_gather_rows, Y, 1, &T);
    if (nd) {
        nd->idx0 = rows;
        nd->n_idx = n;
    }
    return Y;
}

static kgl_tensor *gather_rows_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_gather_rows(t, c->inputs[0], c->idx0, c->n_idx);
}

static void gather_rows_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int idx_a[] = {4, 0, 4, 2, 4}; /* row 4 three times: scatter-add */
    static const int idx_b[] = {1};
    static const int idx_c[] = {2, 1, 0, 2};
    const int *idx[] = {idx_a, idx_b, idx_c};
    static const int n_idx[] = {5, 1, 4}, rows[] = {5, 3, 3}, cols[] = {3, 4, 2};
    c->inputs[0] = kgl_check_input(keep, rng, rows[which], cols[which], 1, 0);
    c->n_inputs = 1;
    c->idx0 = kgl_check_indices(keep, n_idx[which], idx[which]);
    c->n_idx = n_idx[which];
    c->run = gather_rows_run;
    snprintf(c->label, sizeof c->label, "%dx%d[%d rows]", rows[which], cols[which], n_idx[which]);
}

static const kgl_op op_gather_rows = {"gather_rows",
                                      gather_rows_backward,
                                      {3, gather_rows_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * slice_cols: Y = A[:, c0 : c0+w]   (split heads; c0 in node->i0)
 *   dA[:, c0 : c0+w] += G; the other columns get nothing.
 * ======================================================================== */
static const kgl_op op_slice_cols;

static void slice_cols_backward(kgl_node *nd)
{
    kgl_tensor *A = nd->in[0], *Y = nd->out;
    for (int i = 0; i < Y->rows; i++)
        for (int j = 0; j < Y->cols; j++) A->grad[(size_t)i * A->cols + nd->i0 + j] += Y->grad[(size_t)i * Y->cols + j];
}

kgl_tensor *kgl_slice_cols(kgl_tape *t, kgl_tensor *A, int col0, int width)
{
    if (col0 < 0 || width < 1 || col0 + width > A->cols)
        kgl_die("slice_cols: columns %d..%d outside a %dx%d tensor", col0, col0 + width - 1, A->rows, A->cols);
    kgl_tensor *Y = kgl_op_output(t, A->rows, width, 1, &A);
    for (int i = 0; i < A->rows; i++)
        memcpy(Y->data + (size_t)i * width, A->data + (size_t)i * A->cols + col0, (size_t)width * sizeof(kgl_real));
    kgl_node *nd = kgl_record(t, &op_slice_cols, Y, 1, &A);
    if (nd) nd->i0 = col0;
    return Y;
}

static kgl_tensor *slice_cols_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_slice_cols(t, c->inputs[0], c->i0, c->i1);
}

static void slice_cols_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int spec[][4] = {{3, 8, 2, 4}, {4, 4, 0, 4}, {2, 5, 4, 1}}; /* rows, cols, c0, width */
    const int *s = spec[which];
    c->inputs[0] = kgl_check_input(keep, rng, s[0], s[1], 1, 0);
    c->n_inputs = 1;
    c->i0 = s[2];
    c->i1 = s[3];
    c->run = slice_cols_run;
    snprintf(c->label, sizeof c->label, "%dx%d[:,%d:%d]", s[0], s[1], s[2], s[2] + s[3]);
}

/* Columns outside the slice have exactly zero gradient on both sides; the
 * slice columns are copies, so the default tolerance holds with room. */
static const kgl_op op_slice_cols = {"slice_cols",
                                     slice_cols_backward,
                                     {3, slice_cols_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * concat_cols: Y = [P_0 | P_1 | … ]   (merge heads)
 *   Each part gets back its own block of columns of G.
 * ======================================================================== */
static const kgl_op op_concat_cols;

static void concat_cols_backward(kgl_node *nd)
{
    kgl_tensor *Y = nd->out;
    int off = 0;
    for (int k = 0; k < nd->n_in; k++) {
        kgl_tensor *P = nd->in[k];
        if (P->grad)
            for (int i = 0; i < P->rows; i++)
                for (int j = 0; j < P->cols; j++) P->grad[(size_t)i * P->cols + j] += Y->grad[(size_t)i * Y->cols + off + j];
        off += P->cols;
    }
}

kgl_tensor *kgl_concat_cols(kgl_tape *t, int n_parts, kgl_tensor *const *parts)
{
    if (n_parts < 1) kgl_die("concat_cols: no parts");
    int rows = parts[0]->rows, cols = 0;
    for (int k = 0; k < n_parts; k++) {
        shape_check(parts[k]->rows == rows, "concat_cols", parts[0], parts[k]);
        cols += parts[k]->cols;
    }
    kgl_tensor *Y = kgl_op_output(t, rows, cols, n_parts, parts);
    int off = 0;
    for (int k = 0; k < n_parts; k++) {
        const kgl_tensor *P = parts[k];
        for (int i = 0; i < rows; i++)
            memcpy(Y->data + (size_t)i * cols + off, P->data + (size_t)i * P->cols, (size_t)P->cols * sizeof(kgl_real));
        off += P->cols;
    }
    kgl_record(t, &op_concat_cols, Y, n_parts, parts);
    return Y;
}

static kgl_tensor *concat_cols_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_concat_cols(t, c->n_inputs, c->inputs);
}

static void concat_cols_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int widths[][3] = {{2, 3, 0}, {1, 1, 4}, {4, 4, 0}};
    int rows = 3 + which, len = 0;
    c->n_inputs = 0;
    for (int k = 0; k < 3 && widths[which][k]; k++) {
        c->inputs[c->n_inputs++] = kgl_check_input(keep, rng, rows, widths[which][k], 1, 0);
        len += snprintf(c->label + len, sizeof c->label - (size_t)len, "%s%dx%d", k ? "|" : "", rows, widths[which][k]);
    }
    c->run = concat_cols_run;
}

static const kgl_op op_concat_cols = {"concat_cols",
                                      concat_cols_backward,
                                      {3, concat_cols_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * softmax_rows: P[i] = softmax(S[i]) over the unmasked columns of row i
 *   (the row max is subtracted first; masked entries are exactly 0).
 *
 *   The Jacobian of one row is J = ∂p/∂s = diag(p) − p pᵀ:
 *     ∂p_j/∂s_k = p_j (δ_jk − p_k).
 *   Backward never forms it. J is symmetric, so ds = J g with
 *     ds_k = Σ_j g_j p_j (δ_jk − p_k) = p_k g_k − p_k Σ_j g_j p_j
 *          = p_k (g_k − ⟨g, p⟩).
 *   A masked entry has p_k = 0 and receives nothing; a fully masked row
 *   has p = 0 and passes no gradient.
 * ======================================================================== */
static const kgl_op op_softmax_rows;

static bool mask_keeps(kgl_mask m, int cols, int i, int j)
{
    switch (m.kind) {
    case KGL_MASK_CAUSAL: return j <= i;
    case KGL_MASK_KEEP: return m.keep[(size_t)i * cols + j] != 0;
    default: return true;
    }
}

static void softmax_rows_backward(kgl_node *nd)
{
    kgl_tensor *S = nd->in[0], *P = nd->out;
    int cols = P->cols;
    for (int i = 0; i < P->rows; i++) /* ds += p ⊙ (g − ⟨g, p⟩) */
        kgl_softmax_row_backward(P->data + (size_t)i * cols, P->grad + (size_t)i * cols, S->grad + (size_t)i * cols,
                                 cols, 1);
}

kgl_tensor *kgl_softmax_rows(kgl_tape *t, kgl_tensor *S, kgl_mask mask)
{
    int rows = S->rows, cols = S->cols;
    kgl_tensor *P = kgl_op_output(t, rows, cols, 1, &S);
    for (int i = 0; i < rows; i++) {
        const kgl_real *s = S->data + (size_t)i * cols;
        kgl_real *p = P->data + (size_t)i * cols;
        if (mask.kind != KGL_MASK_KEEP) { /* no mask, or a causal prefix: on the vector kernel */
            int kept = mask.kind == KGL_MASK_CAUSAL ? (i + 1 < cols ? i + 1 : cols) : cols;
            if (kept > 0) kgl_softmax_row(s, p, kept);
            for (int j = kept; j < cols; j++) p[j] = 0.0;
            continue;
        }
        double mx = -INFINITY;
        for (int j = 0; j < cols; j++)
            if (mask_keeps(mask, cols, i, j) && s[j] > mx) mx = s[j];
        double z = 0;
        for (int j = 0; j < cols; j++) {
            p[j] = mask_keeps(mask, cols, i, j) ? exp(s[j] - mx) : 0.0;
            z += p[j];
        }
        if (z > 0)
            for (int j = 0; j < cols; j++) p[j] /= z;
    }
    kgl_node *nd = kgl_record(t, &op_softmax_rows, P, 1, &S);
    if (nd) nd->mask = mask;
    return P;
}

static kgl_tensor *softmax_rows_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_softmax_rows(t, c->inputs[0], c->mask);
}

static void softmax_rows_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    c->n_inputs = 1;
    c->run = softmax_rows_run;
    c->mask.kind = KGL_MASK_NONE;
    switch (which) {
    case 0:
        c->inputs[0] = kgl_check_input(keep, rng, 3, 5, 1, 0);
        snprintf(c->label, sizeof c->label, "3x5");
        break;
    case 1:
        c->inputs[0] = kgl_check_input(keep, rng, 4, 4, 1, 0);
        c->mask.kind = KGL_MASK_CAUSAL;
        snprintf(c->label, sizeof c->label, "4x4 causal");
        break;
    case 2: {
        /* explicit mask; row 1 fully masked (all-zero weights, no gradient) */
        static const unsigned char keep_flags[3 * 4] = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1};
        c->inputs[0] = kgl_check_input(keep, rng, 3, 4, 1, 0);
        c->mask.kind = KGL_MASK_KEEP;
        c->mask.keep = keep_flags;
        snprintf(c->label, sizeof c->label, "3x4 mask, 1 row empty");
        break;
    }
    default: {
        /* saturated: logits ±50 (plus noise), weights near one-hot */
        kgl_tensor *x = kgl_check_input(keep, rng, 3, 6, 1, 0);
        for (int k = 0; k < 18; k++) x->data[k] += (kgl_rng_uniform(rng) < 0.5 ? -50.0 : 50.0);
        c->inputs[0] = x;
        snprintf(c->label, sizeof c->label, "3x6 ±50");
    }
    }
}

static const kgl_op op_softmax_rows = {"softmax_rows",
                                       softmax_rows_backward,
                                       {4, softmax_rows_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * attention: multi-head scaled dot-product attention, in one op.
 *   Q, K, V [n, d]; head h owns columns h·dk … (h+1)·dk − 1 (H = node->i0);
 *   S_h = τ_h Q_h K_hᵀ,   τ_h = τ (node->alpha), times e^{θ_h} when a learned
 *                          log-temperature θ [1, H] is the fourth input
 *   A_h = softmax_rows(S_h),   O_h = A_h V_h   (O's columns of head h)
 * It is the composition matmul_nt → scale (→ scale_exp) → softmax_rows →
 * matmul → concat_cols that the layer can also be built from (and is, when a
 * study needs S_h itself); fused, it keeps only A_h for backward (H n²
 * values: S_h is never stored, and ∂L/∂A_h, ∂L/∂S_h live one block of
 * query rows per thread, below). With G = ∂L/∂O and G_h its head's columns:
 *   dV_h += A_hᵀ G_h                               (O_h = A_h V_h)
 *   dA_h  = G_h V_hᵀ
 *   dS_h  = A_h ⊙ (dA_h − rowsum(dA_h ⊙ A_h))      each row: J g with the
 *           softmax Jacobian J = diag(a) − a aᵀ (see softmax_rows)
 *   dQ_h += dS_h (τ_h K_h),   dK_h += dS_hᵀ (τ_h Q_h)
 *   dθ_h += Σ_ij dS_h,ij S_h,ij = Σ_i ⟨Q_h[i], (dS_h (τ_h K_h))[i]⟩   (S_h = τ_h Q_h K_hᵀ)
 * τ_h multiplies the n × d_k operands, never the n × n ones: the forward
 * computes S_h = Q_h (τ_h K_h)ᵀ, and backward's products read τ_h K_h and
 * τ_h Q_h. Each is scaled once, as it is packed for its products, which
 * saves a pass over every n × n block in each direction (n² against n d_k
 * multiplies).
 * The forward's work is split into blocks of ATTN_BLOCK query rows of a
 * head, the backward's into heads: a head's task walks its blocks of query
 * rows in order, and for each forms dA, dS and dQ, then adds the block's
 * share to dK_h and dV_h (dS_h[block]ᵀ τ_h Q_h[block], A_h[block]ᵀ G_h[block])
 * while the block's dS is still in cache. So ∂L/∂S_h never exists whole
 * (one block of rows per thread), and each element of dK, dV is still one
 * chain of multiply-adds over i = 0 … n−1, as one product over all rows
 * would run it. Each task writes its own rows or columns, so the bits never
 * depend on the number of threads. The op also measures, for the studies, max |S_h| in
 * the forward and ‖dS_h‖_F in the backward (node->stats).
 * ======================================================================== */
static const kgl_op op_attention;

typedef struct attn_job {
    const kgl_tensor *Q, *K, *V;
    /* each head's shared operands, packed once (kernel.h, kgl_gemm_pack_b):
       forward K_hᵀ and V_h ([H] × packed sizes); backward, in each worker's
       own scratch (per_worker kgl_reals from `scratch`): V_hᵀ and τ_h K_h for
       the head, τ_h Q_h and G_h for one block of query rows, the block's dS
       and dq */
    kgl_real *kt_p, *v_p;
    kgl_real *scratch;
    size_t per_worker;
    size_t wide, tall;           /* kgl_reals of a packed dk × n and n × dk operand */
    size_t block_pack;           /* … and of a packed ATTN_BLOCK × dk operand */
    kgl_real *A;          /* [H, n, n] the weights, or (keep == false) one block of rows per thread */
    bool keep;          /* every head's A is kept (for backward, or for the caller) */
    kgl_real *O;          /* [n, d] forward output */
    const kgl_real *G;    /* [n, d] ∂L/∂O (backward) */
    double *part;       /* [2 · H · blocks] per-block partial sums (double: they are reductions) */
    kgl_pool *pool;
    int n, d, dk, H, blocks;
    double tau[KGL_ATTENTION_MAX_HEADS];
    bool learn;         /* a θ input */
    bool measure;       /* max |S_h| asked for (stats) */
} attn_job;

static int block_end(int b, int n) { return (b + 1) * ATTN_BLOCK < n ? (b + 1) * ATTN_BLOCK : n; }

/* A packed operand times τ_h (its zero padding stays zero). */
static void scale_packed(kgl_real *packed, size_t size, double tau)
{
    for (size_t i = 0; i < size; i++) packed[i] = (kgl_real)(packed[i] * tau);
}

/* The products below share one operand across all blocks of a head (K_hᵀ,
 * V_h, …): it is packed once per head, and each task packs only its own
 * block of rows (kernel.h, kgl_gemm_packed_b_on). */

/* Forward, one block of query rows of one head: S rows, softmax, O rows. */
static void attention_forward_block(void *ctx, int task, int worker)
{
    attn_job *J = ctx;
    int h = task / J->blocks, b = task % J->blocks, i0 = b * ATTN_BLOCK, i1 = block_end(b, J->n);
    int n = J->n, d = J->d, dk = J->dk, rows = i1 - i0;
    kgl_real *A = J->keep ? J->A + (size_t)h * n * n + (size_t)i0 * n : J->A + (size_t)worker * ATTN_BLOCK * n;
    /* S[i0:i1] = Q_h[i0:i1] (τ_h K_h)ᵀ */
    kgl_gemm_packed_b_on(J->pool, worker, rows, n, dk, J->Q->data + (size_t)i0 * d + h * dk, d, 0,
                         J->kt_p + h * J->wide, A, n, KGL_SET);
    double max_abs = 0;
    if (J->measure) /* max |S_h|, for the studies (NaN if any is NaN) */
        for (size_t i = 0; i < (size_t)rows * n; i++) {
            double a = fabs(A[i]);
            if (a > max_abs || a != a) max_abs = a;
        }
    kgl_softmax_block(A, A, rows, n, NULL);
    J->part[task] = J->measure ? max_abs : NAN;
    /* O_h[i0:i1] = A_h[i0:i1] V_h */
    kgl_gemm_packed_b_on(J->pool, worker, rows, dk, n, A, n, 0, J->v_p + h * J->tall, J->O + (size_t)i0 * d + h * dk,
                         d, KGL_SET);
}

/* Backward, one head (the task): for each block of query rows [i0, i1), in
 * order, dA, dS (∂L/∂S_h, in place of dA) and dQ, then the block's share of
 * dK and dV. The products read τ_h K_h and τ_h Q_h. */
static void attention_backward_head(void *ctx, int h, int worker)
{
    attn_job *J = ctx;
    int n = J->n, d = J->d, dk = J->dk;
    kgl_real *vt_p = J->scratch + (size_t)worker * J->per_worker, *k_p = vt_p + J->wide;
    kgl_real *q_p = k_p + J->tall, *g_p = q_p + J->block_pack, *dS = g_p + J->block_pack;
    kgl_real *dq = dS + (size_t)ATTN_BLOCK * n;
    kgl_gemm_pack_b(dk, n, J->V->data + h * dk, d, 1, vt_p); /* B(k, j) = V[j, h·dk + k] */
    kgl_gemm_pack_b(n, dk, J->K->data + h * dk, d, 0, k_p);
    scale_packed(k_p, J->tall, J->tau[h]); /* τ_h K_h */
    for (int b = 0; b < J->blocks; b++) {
        int i0 = b * ATTN_BLOCK, rows = block_end(b, n) - i0;
        const kgl_real *A = J->A + (size_t)h * n * n + (size_t)i0 * n, *G = J->G + (size_t)i0 * d + h * dk;
        /* dA[i0:i1] = G_h[i0:i1] V_hᵀ, then dS = J dA row by row, in place */
        kgl_gemm_packed_b_on(J->pool, worker, rows, n, dk, G, d, 0, vt_p, dS, n, KGL_SET);
        double sq = 0;
        for (int i = 0; i < rows; i++) {
            kgl_real *g = dS + (size_t)i * n;
            kgl_softmax_row_backward(A + (size_t)i * n, g, g, n, 0);
            if (J->measure) /* ‖∂L/∂S_h‖², for the studies */
                for (int j = 0; j < n; j++) sq += g[j] * g[j];
        }
        J->part[(size_t)h * J->blocks + b] = sq;
        if (J->learn) { /* dq = dS (τ_h K_h), kept to form dθ_h = Σ_i ⟨Q_h[i], dq[i]⟩ */
            double dot = 0;
            kgl_gemm_packed_b_on(J->pool, worker, rows, dk, n, dS, n, 0, k_p, dq, dk, KGL_SET);
            for (int i = 0; i < rows; i++) {
                const kgl_real *q = J->Q->data + (size_t)(i0 + i) * d + h * dk;
                for (int c = 0; c < dk; c++) dot += q[c] * dq[(size_t)i * dk + c];
                if (J->Q->grad) {
                    kgl_real *gq = J->Q->grad + (size_t)(i0 + i) * d + h * dk;
                    for (int c = 0; c < dk; c++) gq[c] += dq[(size_t)i * dk + c];
                }
            }
            J->part[(size_t)(J->H + h) * J->blocks + b] = dot;
        } else if (J->Q->grad) {
            kgl_gemm_packed_b_on(J->pool, worker, rows, dk, n, dS, n, 0, k_p, J->Q->grad + (size_t)i0 * d + h * dk,
                                 d, KGL_ADD);
        }
        /* dK_h += dS[i0:i1]ᵀ (τ_h Q_h[i0:i1]),   dV_h += A_h[i0:i1]ᵀ G_h[i0:i1] */
        if (J->K->grad) {
            kgl_gemm_pack_b(rows, dk, J->Q->data + (size_t)i0 * d + h * dk, d, 0, q_p);
            scale_packed(q_p, kgl_gemm_packed_b_size(rows, dk), J->tau[h]);
            kgl_gemm_packed_b_on(J->pool, worker, n, dk, rows, dS, n, 1, q_p, J->K->grad + h * dk, d, KGL_ADD);
        }
        if (J->V->grad) {
            kgl_gemm_pack_b(rows, dk, G, d, 0, g_p);
            kgl_gemm_packed_b_on(J->pool, worker, n, dk, rows, A, n, 1, g_p, J->V->grad + h * dk, d, KGL_ADD);
        }
    }
}

static void attention_job_init(attn_job *J, kgl_tensor *const *in, int n_in, int H, double tau)
{
    memset(J, 0, sizeof *J);
    J->Q = in[0], J->K = in[1], J->V = in[2];
    J->n = J->Q->rows, J->d = J->Q->cols, J->H = H, J->dk = J->d / H;
    J->blocks = (J->n + ATTN_BLOCK - 1) / ATTN_BLOCK;
    J->learn = n_in > 3;
    for (int h = 0; h < H; h++) J->tau[h] = J->learn ? exp(in[3]->data[h]) * tau : tau;
    J->wide = kgl_gemm_packed_b_size(J->dk, J->n);
    J->tall = kgl_gemm_packed_b_size(J->n, J->dk);
    J->block_pack = kgl_gemm_packed_b_size(ATTN_BLOCK, J->dk);
    J->per_worker = J->wide + J->tall + 2 * J->block_pack + (size_t)ATTN_BLOCK * (J->n + J->dk);
}

/* node->saved = [A]; node->scratch = each worker's per_worker kgl_reals;
   node->stats = [max |S_h|, ‖dS_h‖ | the per-block partial sums] (doubles) */
static void attention_backward(kgl_node *nd)
{
    attn_job J;
    attention_job_init(&J, nd->in, nd->n_in, nd->i0, nd->alpha);
    J.measure = nd->n_idx != 0; /* the forward measured (node->n_idx): the studies want the norms too */
    J.A = nd->saved;
    J.G = nd->out->grad;
    J.scratch = nd->scratch;
    J.part = nd->stats + 2 * J.H;
    J.pool = nd->pool;
    kgl_parallel(nd->pool, J.H, 8.0 * J.H * J.n * J.n * J.dk, attention_backward_head, &J);
    for (int h = 0; h < J.H; h++) {
        double sq = 0, dtheta = 0;
        for (int b = 0; b < J.blocks; b++) { /* block order, whatever the threads */
            sq += J.part[(size_t)h * J.blocks + b];
            if (J.learn) dtheta += J.part[(size_t)(J.H + h) * J.blocks + b];
        }
        nd->stats[J.H + h] = J.measure ? sqrt(sq) : NAN;
        if (J.learn && nd->in[3]->grad) nd->in[3]->grad[h] += dtheta;
    }
}

kgl_tensor *kgl_attention(kgl_tape *t, kgl_tensor *Q, kgl_tensor *K, kgl_tensor *V, int heads, double tau,
                          kgl_tensor *log_temp, kgl_tensor *attn, double **stats)
{
    shape_check(Q->rows == K->rows && Q->cols == K->cols, "attention (Q, K)", Q, K);
    shape_check(Q->rows == V->rows && Q->cols == V->cols, "attention (Q, V)", Q, V);
    if (heads < 1 || heads > KGL_ATTENTION_MAX_HEADS || Q->cols % heads)
        kgl_die("attention: %d heads do not divide %d columns", heads, Q->cols);
    if (log_temp && (log_temp->rows != 1 || log_temp->cols != heads))
        kgl_die("attention: the log-temperature is %dx%d, not 1x%d", log_temp->rows, log_temp->cols, heads);
    kgl_tensor *in[4] = {Q, K, V, log_temp};
    int n_in = log_temp ? 4 : 3;
    attn_job J;
    attention_job_init(&J, in, n_in, heads, tau);
    int n = J.n, d = J.d;
    size_t nn = (size_t)n * n;
    kgl_tensor *O = kgl_op_output(t, n, d, n_in, in);
    bool record = t->recording && O->grad;
    /* every head's weights are kept for backward or for the caller; else
       each thread needs only the block of rows it is working on */
    J.keep = record || attn;
    size_t a_size = J.keep ? (size_t)heads * nn : (size_t)kgl_pool_threads(t->pool) * ATTN_BLOCK * n;
    J.A = kgl_arena_alloc(&t->arena, a_size * sizeof(kgl_real));
    J.kt_p = kgl_arena_alloc(&t->arena, (size_t)heads * (J.wide + J.tall) * sizeof(kgl_real));
    J.v_p = J.kt_p + (size_t)heads * J.wide;
    for (int h = 0; h < heads; h++) {
        kgl_gemm_pack_b(J.dk, n, K->data + h * J.dk, d, 1, J.kt_p + h * J.wide); /* B(k, j) = K[j, h·dk + k] */
        scale_packed(J.kt_p + h * J.wide, J.wide, J.tau[h]);                        /* then τ_h K_hᵀ */
        kgl_gemm_pack_b(n, J.dk, V->data + h * J.dk, d, 0, J.v_p + h * J.tall);
    }
    J.O = O->data;
    J.measure = stats != NULL;
    double *st = kgl_arena_alloc(&t->arena, (2 * (size_t)heads + 2 * (size_t)heads * J.blocks) * sizeof(double));
    J.part = st + 2 * heads;
    J.pool = t->pool;
    kgl_parallel(t->pool, heads * J.blocks, 4.0 * heads * nn * J.dk, attention_forward_block, &J);
    for (int h = 0; h < heads; h++) {
        double mx = 0;
        for (int b = 0; b < J.blocks; b++) {
            double v = J.part[(size_t)h * J.blocks + b];
            if (v > mx || v != v) mx = v;
        }
        st[h] = mx;
        st[heads + h] = NAN;
    }
    if (attn)
        for (int h = 0; h < heads; h++) attn[h] = (kgl_tensor){n, n, J.A + (size_t)h * nn, NULL, false};
    if (stats) *stats = st;
    kgl_node *nd = kgl_record(t, &op_attention, O, n_in, in);
    if (nd) {
        nd->i0 = heads;
        nd->alpha = tau;
        nd->n_idx = J.measure; /* whether backward measures ‖∂L/∂S_h‖ */
        nd->saved = J.A;
        nd->stats = st;
        nd->scratch = kgl_arena_alloc(&t->arena, (size_t)kgl_pool_threads(t->pool) * J.per_worker * sizeof(kgl_real));
    }
    return O;
}

static kgl_tensor *attention_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_attention(t, c->inputs[0], c->inputs[1], c->inputs[2], c->i0, c->alpha,
                         c->n_inputs > 3 ? c->inputs[3] : NULL, NULL, NULL);
}

static void attention_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    /* n, d, H, τ, learned temperature: one head; two heads; more rows than a
       block (two blocks, the second partial) with a learned temperature; and
       saturated logits (unscaled, weights near one-hot) */
    static const int shape[][3] = {{5, 3, 1}, {6, 4, 2}, {ATTN_BLOCK + 5, 4, 2}, {4, 4, 2}};
    static const double taus[] = {0.57735026918962584, 0.70710678118654752, 0.70710678118654752, 1.0};
    const int *sh = shape[which];
    double spread = which == 3 ? 4.0 : 1.0;
    for (int k = 0; k < 3; k++) c->inputs[k] = kgl_check_input(keep, rng, sh[0], sh[1], k < 2 ? spread : 1.0, 0);
    c->n_inputs = 3;
    if (which == 2) c->inputs[c->n_inputs++] = kgl_check_input(keep, rng, 1, sh[2], 0.3, 0);
    c->i0 = sh[2];
    c->alpha = taus[which];
    c->run = attention_run;
    snprintf(c->label, sizeof c->label, "n%d d%d H%d%s%s", sh[0], sh[1], sh[2], which == 2 ? " learned temp" : "",
             which == 3 ? " saturated" : "");
}

static const kgl_op op_attention = {"attention", attention_backward, {4, attention_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * layernorm over the columns of each row (the specified LN, ε = 1e-5):
 *   μ = mean(x),  σ² = mean((x − μ)²) (biased),  r = 1/√(σ² + ε),
 *   x̂ = (x − μ) r,  y = γ ⊙ x̂ + β.          (μ and r saved per row)
 * kgl_layernorm_heads normalises each of a row's H blocks of d/H columns
 * on its own, with one γ, β of width d/H for every block (qk-norm: each
 * head's query or key). A row-major [rows, d] matrix is [rows·H, d/H] with
 * the same bytes, so it is the same op on rows·H rows of d/H columns (node
 * i0 = d/H), without slicing the heads out and concatenating them back.
 * Backward, with d columns and ĝ = g ⊙ γ (the gradient reaching x̂):
 *   dβ = Σ_rows g,   dγ = Σ_rows g ⊙ x̂,
 *   ∂x̂_j/∂x_k = r (δ_jk − 1/d − x̂_j x̂_k / d)     (μ and σ² both move)
 *   dx_k = Σ_j ĝ_j ∂x̂_j/∂x_k = r (ĝ_k − mean(ĝ) − x̂_k mean(ĝ ⊙ x̂)).
 * ======================================================================== */
static const kgl_op op_layernorm;

/* Rows (of d columns) go in blocks of about ELEM_BLOCK elements as tasks,
   the same blocks for any number of threads. γ's and β's gradients, sums
   over the rows, are taken in the backward's one pass over the rows: each
   task sums its block's rows in order, in double, into a partial sum of its
   own, and the partials are then added in task order, also in double, to
   the gradient (rounded once). Every number is the same for any number of
   threads; the rows are read once (a pass of its own over every row for dγ
   cost as much as the pass for dx, FB15k-237's qk-norm reading 60 MB). */
typedef struct layernorm_job {
    const kgl_tensor *X, *gamma, *beta, *Y;
    double *stats;   /* μ and r per row */
    double *partial; /* backward: per row task, Σ g ⊙ x̂ then Σ g (2d doubles), or NULL (no γ, β gradient) */
    int d, rows, rows_per_task, row_tasks;
    bool set_dx; /* backward: dX was unset, so it is written (0 + its value), not added to */
} layernorm_job;

/* A row's sums (μ's and σ²'s forward, mean(ĝ) and mean(ĝ ⊙ x̂) backward)
   are in double over LN_LANES lanes: column j goes to lane j mod LN_LANES,
   then the lanes are combined by the fixed tree l_i + l_{i+8}, l_i + l_{i+4},
   l_i + l_{i+2}, l_0 + l_1. The lanes are independent chains, so the ISA
   clones add them as vectors (a column-order sum is one chain of dependent
   additions, run at the adder's latency: the layer norms were 8% of
   FB15k-237's graph step, most of it waiting), and every clone performs the
   same additions in the same order: the same bits on any CPU and any
   number of threads. */
#define LN_LANES KGL_LANES

/* Σ_j x_j and then Σ_j (x_j − μ)² of one row, as above: μ and σ² (biased) */
INLINE void ln_row_moments(const kgl_real *x, int d, double *mu, double *var)
{
    int full = d - d % LN_LANES;
    double m = kgl_lane_sum(x, d) / d;
    double sq[LN_LANES] = {0};
    for (int j = 0; j < full; j += LN_LANES)
        for (int l = 0; l < LN_LANES; l++) sq[l] += (x[j + l] - m) * (x[j + l] - m);
    for (int j = full; j < d; j++) sq[j - full] += (x[j] - m) * (x[j] - m);
    *mu = m;
    *var = kgl_lane_tree(sq) / d;
}

INLINE void layernorm_forward_rows_body(void *ctx, int task, int worker)
{
    (void)worker;
    const layernorm_job *J = ctx;
    int d = J->d;
    const kgl_real *gamma = J->gamma->data, *beta = J->beta->data;
    int i0 = task * J->rows_per_task, i1 = (int)span_end((size_t)i0, (size_t)J->rows_per_task, (size_t)J->rows);
    for (int i = i0; i < i1; i++) {
        const kgl_real *x = J->X->data + (size_t)i * d;
        kgl_real *y = J->Y->data + (size_t)i * d;
        double mu, var;
        ln_row_moments(x, d, &mu, &var);
        double r = 1.0 / sqrt(var + KGL_LN_EPS);
        for (int j = 0; j < d; j++) y[j] = gamma[j] * ((x[j] - mu) * r) + beta[j];
        J->stats[2 * i] = mu;
        J->stats[2 * i + 1] = r;
    }
}
ISA_CLONES(layernorm_forward_rows)

/* dx of a block of rows (the two means in lanes, as the forward's sums),
   and the block's partial sums of dγ and dβ */
INLINE void layernorm_backward_rows_body(void *ctx, int task, int worker)
{
    (void)worker;
    const layernorm_job *J = ctx;
    int d = J->d, full = d - d % LN_LANES;
    const kgl_real *gamma = J->gamma->data;
    double *part_gamma = J->partial ? J->partial + (size_t)task * 2 * d : NULL;
    double *part_beta = J->partial ? part_gamma + d : NULL;
    if (part_gamma)
        for (int j = 0; j < 2 * d; j++) part_gamma[j] = 0;
    int i0 = task * J->rows_per_task, i1 = (int)span_end((size_t)i0, (size_t)J->rows_per_task, (size_t)J->rows);
    for (int i = i0; i < i1; i++) {
        const kgl_real *x = J->X->data + (size_t)i * d, *g = J->Y->grad + (size_t)i * d;
        double mu = J->stats[2 * i], r = J->stats[2 * i + 1];
        if (part_gamma)
            for (int j = 0; j < d; j++) {
                part_gamma[j] += g[j] * ((x[j] - mu) * r);
                part_beta[j] += g[j];
            }
        if (!J->X->grad) continue;
        kgl_real *dx = J->X->grad + (size_t)i * d;
        double sum_gh[LN_LANES] = {0}, sum_gh_xh[LN_LANES] = {0};
        for (int j = 0; j < full; j += LN_LANES) /* two loops: gcc vectorises each, not the pair */
            for (int l = 0; l < LN_LANES; l++) sum_gh[l] += (double)g[j + l] * gamma[j + l];
        for (int j = 0; j < full; j += LN_LANES)
            for (int l = 0; l < LN_LANES; l++) sum_gh_xh[l] += ((double)g[j + l] * gamma[j + l]) * ((x[j + l] - mu) * r);
        for (int j = full; j < d; j++) {
            double xh = (x[j] - mu) * r, gh = (double)g[j] * gamma[j];
            sum_gh[j - full] += gh;
            sum_gh_xh[j - full] += gh * xh;
        }
        double mean_gh = kgl_lane_tree(sum_gh) / d, mean_gh_xh = kgl_lane_tree(sum_gh_xh) / d;
        for (int j = 0; j < d; j++) {
            double xh = (x[j] - mu) * r, gh = (double)g[j] * gamma[j];
            kgl_real before = J->set_dx ? 0 : dx[j];
            dx[j] = before + r * (gh - mean_gh - xh * mean_gh_xh);
        }
    }
}
ISA_CLONES(layernorm_backward_rows)

/* dγ and dβ: the row tasks' partial sums added in task order, in double,
   to the gradients as they were; one rounding. */
static void layernorm_params_from_partials(const layernorm_job *J)
{
    int d = J->d;
    kgl_real *grad[2] = {J->gamma->grad, J->beta->grad};
    for (int k = 0; k < 2; k++) {
        if (!grad[k]) continue;
        for (int j = 0; j < d; j++) {
            double sum = grad[k][j];
            for (int task = 0; task < J->row_tasks; task++) sum += J->partial[((size_t)task * 2 + k) * d + j];
            grad[k][j] = (kgl_real)sum;
        }
    }
}

static layernorm_job layernorm_job_of(const kgl_tensor *X, const kgl_tensor *gamma, const kgl_tensor *beta,
                                      const kgl_tensor *Y, double *stats, int d)
{
    int rows = X->rows * (X->cols / d), rows_per_task = ELEM_BLOCK / d > 0 ? ELEM_BLOCK / d : 1;
    return (layernorm_job){X, gamma, beta, Y, stats, NULL, d, rows, rows_per_task, (rows + rows_per_task - 1) / rows_per_task,
                           false};
}

static void layernorm_backward(kgl_node *nd)
{
    /* rows of d = i0 columns (with heads, each head's block of a row is one) */
    layernorm_job J = layernorm_job_of(nd->in[0], nd->in[1], nd->in[2], nd->out, nd->stats, nd->i0);
    double work = 8.0 * J.rows * J.d;
    J.set_dx = kgl_grad_claim(nd->in[0]); /* every row of dX is written below */
    kgl_grad_settle(nd->pool, nd->in[1]); /* γ's and β's sums start from their gradients */
    kgl_grad_settle(nd->pool, nd->in[2]);
    if (J.gamma->grad || J.beta->grad) J.partial = nd->stats + 2 * (size_t)J.rows; /* room the forward left */
    if (J.X->grad || J.partial) kgl_parallel(nd->pool, J.row_tasks, work, layernorm_backward_rows_for_isa(), &J);
    if (J.partial) layernorm_params_from_partials(&J);
}

kgl_tensor *kgl_layernorm_heads(kgl_tape *t, kgl_tensor *X, int heads, kgl_tensor *gamma, kgl_tensor *beta)
{
    shape_check(heads >= 1 && X->cols % heads == 0, "layernorm (heads must divide the columns)", X, gamma);
    int d = X->cols / heads; /* each block of d columns is a row */
    shape_check(gamma->rows == 1 && gamma->cols == d, "layernorm (gamma)", X, gamma);
    shape_check(beta->rows == 1 && beta->cols == d, "layernorm (beta)", X, beta);
    kgl_tensor *in[3] = {X, gamma, beta};
    kgl_tensor *Y = kgl_op_output(t, X->rows, X->cols, 3, in);
    layernorm_job J = layernorm_job_of(X, gamma, beta, Y, NULL, d);
    /* μ and r per row, then (recorded, for the backward) each row task's partial sums of dγ and dβ */
    bool backward = Y->grad && (gamma->grad || beta->grad);
    J.stats = kgl_arena_alloc(&t->arena, (2 * (size_t)J.rows + (backward ? 2 * (size_t)J.row_tasks * d : 0)) *
                                             sizeof(double));
    double *stats = J.stats;
    kgl_parallel(t->pool, J.row_tasks, 8.0 * J.rows * d, layernorm_forward_rows_for_isa(), &J);
    kgl_node *nd = kgl_record(t, &op_layernorm, Y, 3, in);
    if (nd) {
        nd->stats = stats;
        nd->i0 = d;
    }
    return Y;
}

kgl_tensor *kgl_layernorm(kgl_tape *t, kgl_tensor *X, kgl_tensor *gamma, kgl_tensor *beta)
{
    return kgl_layernorm_heads(t, X, 1, gamma, beta);
}

static kgl_tensor *layernorm_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_layernorm_heads(t, c->inputs[0], c->i0, c->inputs[1], c->inputs[2]);
}

/* Cases 3 and 4 normalise heads: a mistake in which columns form a block,
   or in how the shared γ, β gather their gradient over the blocks, fails them. */
static void layernorm_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int shapes[][3] = {{4, 6, 1}, {2, 8, 1}, {3, 2, 1}, {3, 8, 4}, {2, 12, 3}}; /* rows, cols, heads */
    static const double shift[] = {0, 100, 0, 0, 100}; /* rows far from zero (mean subtraction) */
    const int *s = shapes[which];
    c->inputs[0] = kgl_check_input(keep, rng, s[0], s[1], 1, shift[which]);
    c->inputs[1] = kgl_check_input(keep, rng, 1, s[1] / s[2], 0.5, 1);
    c->inputs[2] = kgl_check_input(keep, rng, 1, s[1] / s[2], 0.5, 0);
    c->n_inputs = 3;
    c->i0 = s[2];
    c->run = layernorm_run;
    char heads[24] = "";
    if (s[2] > 1) snprintf(heads, sizeof heads, " %d heads", s[2]);
    snprintf(c->label, sizeof c->label, "%dx%d%s%s", s[0], s[1], heads, shift[which] ? " (+100)" : "");
}

static const kgl_op op_layernorm = {"layernorm",
                                    layernorm_backward,
                                    {5, layernorm_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};

/* ========================================================================
 * gelu (exact): y = x Φ(x),  Φ(x) = (1 + erf(x/√2)) / 2.
 *   dy/dx = Φ(x) + x φ(x),   φ(x) = exp(−x²/2) / √(2π).
 *
 * Φ is computed as erfc(−x/√2) / 2, from erfc(z) for z = |x|/√2 ≥ 0:
 *   Φ(x) = 1 − erfc(z)/2 (x ≥ 0),   erfc(z)/2 (x < 0),
 * which keeps Φ's relative accuracy in both tails (1 + erf(x/√2) cancels to
 * 0 below x ≈ −8.3). erfc itself, for every z ≥ 0 at once:
 *   erfc(z) = t · exp(P(u) − z²),   t = 2/(2 + z),   u = 2t − 1 ∈ (−1, 1],
 * with P(u) = log(erfc(z)/t) + z² smooth on the whole half-line (as
 * z → ∞, erfc(z) → e^{−z²}/(z√π), so P → −log(2√π) at u = −1). P is a
 * Chebyshev series Σ_k c_k T_k(u) (c_0 halved), summed by Clenshaw's
 * recurrence b_k = 2u b_{k+1} − b_{k+2} + c_k, P = u b_1 − b_2 + c_0/2.
 * Its 27 coefficients are the series of a 96-node fit computed in 110-digit
 * arithmetic (tests/gelu_erfc_fit.py prints them); the first one left out is
 * 2.8e-17. Every operation is a plain IEEE one (no FMA, the same order on
 * every ISA) and the exponential is kgl_vexp, so the three ISA clones below
 * give the same bits. In float32, P − z² is rounded to float before kgl_vexp:
 * Φ's negative tail then carries a relative error up to about z²·2^−24
 * (6·10^−7 at x = −4.5; float's own rounding of y is 6·10^−8); the positive
 * side and the sum 1 − erfc/2 are unaffected.
 * ======================================================================== */
static const kgl_op op_gelu;

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

static const double erfc_series[] = {
    -0x1.4d7ab6d479a61p-1, 0x1.48b043be61cf8p-1, 0x1.3f1a3fdd047b2p-6,
    -0x1.394fcca79fc6cp-7, -0x1.f049e06073f95p-11, 0x1.80a8ba56aa79fp-12,
    0x1.64b62509d78e2p-15, -0x1.5437d46df3674p-16, -0x1.b4045bf3ab82ep-20,
    0x1.5df28bff56fe4p-20, 0x1.0c75d14776c3ep-26, -0x1.6e18471000f52p-24,
    0x1.c0ac572395fb0p-28, 0x1.5bace97b36ccfp-28, -0x1.10810cfbab426p-30,
    -0x1.f3fb2f5c75c6cp-33, 0x1.a8453647a8215p-34, 0x1.50ee4fe907594p-39,
    -0x1.e48fa4ddcffcfp-38, 0x1.f78d4bbe8305dp-41, 0x1.6082aa4eb3ddfp-42,
    -0x1.fb97bc18977ccp-44, 0x1.b75e11fe90ba6p-52, 0x1.00062e98e5a55p-47,
    -0x1.b6fba552f88ccp-50, -0x1.b4266370b4162p-54, 0x1.170fcb52ea588p-53,
};
#define ERFC_TERMS ((int)(sizeof erfc_series / sizeof erfc_series[0]))

/* Elements a gelu task takes at a time: each pass below runs over a chunk
   (vector-wide loops), and kgl_vexp takes the chunk's exponents at once. */
#define GELU_CHUNK 64

/* The tasks of gelu, on one block of elements. Forward keeps Φ(x) for
 * backward (cdf; NULL when nothing will read it), so backward takes one
 * exp per element and no erfc. */
typedef struct gelu_job {
    const kgl_real *x, *g; /* g: backward's G */
    kgl_real *y, *cdf, *dx;
    size_t n;
} gelu_job;

INLINE void gelu_forward_block_body(void *ctx, int task, int worker)
{
    (void)worker;
    const gelu_job *J = ctx;
    size_t lo = (size_t)task * ELEM_BLOCK, hi = span_end(lo, ELEM_BLOCK, J->n);
    double t[GELU_CHUNK], z2[GELU_CHUNK], two_u[GELU_CHUNK], b1[GELU_CHUNK], b2[GELU_CHUNK];
    kgl_real e[GELU_CHUNK];
    for (size_t c0 = lo; c0 < hi; c0 += GELU_CHUNK) {
        int m = hi - c0 < GELU_CHUNK ? (int)(hi - c0) : GELU_CHUNK;
        const kgl_real *x = J->x + c0;
        for (int k = 0; k < m; k++) {
            double z = fabs((double)x[k]) * INV_SQRT2;
            z2[k] = z * z;
            t[k] = 2.0 / (2.0 + z);
            two_u[k] = 2.0 * ((t[k] + t[k]) - 1.0);
            b1[k] = 0.0, b2[k] = 0.0;
        }
        for (int j = ERFC_TERMS - 1; j >= 1; j--) /* Clenshaw, down to b_1 */
            for (int k = 0; k < m; k++) {
                double b = two_u[k] * b1[k];
                b = b - b2[k];
                b = b + erfc_series[j];
                b2[k] = b1[k], b1[k] = b;
            }
        for (int k = 0; k < m; k++) {
            double p = 0.5 * two_u[k] * b1[k]; /* u b_1 − b_2 + c_0/2 */
            p = p - b2[k];
            p = p + erfc_series[0];
            e[k] = (kgl_real)(p - z2[k]);
        }
        kgl_vexp(e, e, m);
        for (int k = 0; k < m; k++) {
            double half_erfc = 0.5 * (t[k] * (double)e[k]);
            double phi = x[k] >= 0 ? 1.0 - half_erfc : half_erfc; /* NaN: half_erfc, NaN */
            J->y[c0 + k] = (kgl_real)((double)x[k] * phi);
            if (J->cdf) J->cdf[c0 + k] = (kgl_real)phi;
        }
    }
}
ISA_CLONES(gelu_forward_block)

INLINE void gelu_backward_block_body(void *ctx, int task, int worker)
{
    (void)worker;
    const gelu_job *J = ctx;
    size_t lo = (size_t)task * ELEM_BLOCK, hi = span_end(lo, ELEM_BLOCK, J->n);
    kgl_real e[GELU_CHUNK];
    for (size_t c0 = lo; c0 < hi; c0 += GELU_CHUNK) {
        int m = hi - c0 < GELU_CHUNK ? (int)(hi - c0) : GELU_CHUNK;
        const kgl_real *x = J->x + c0;
        for (int k = 0; k < m; k++) e[k] = (kgl_real)(-0.5 * (double)x[k] * (double)x[k]);
        kgl_vexp(e, e, m);
        for (int k = 0; k < m; k++) {
            double pdf = INV_SQRT_2PI * (double)e[k];
            double slope = (double)J->cdf[c0 + k] + (double)x[k] * pdf;
            J->dx[c0 + k] += (double)J->g[c0 + k] * slope;
        }
    }
}
ISA_CLONES(gelu_backward_block)

static void gelu_backward(kgl_node *nd)
{
    kgl_tensor *X = nd->in[0], *Y = nd->out;
    size_t n = kgl_numel(X);
    gelu_job J = {X->data, Y->grad, NULL, nd->saved, X->grad, n};
    kgl_parallel(nd->pool, elem_blocks(n), 30.0 * (double)n, gelu_backward_block_for_isa(), &J);
}

kgl_tensor *kgl_gelu(kgl_tape *t, kgl_tensor *X)
{
    kgl_tensor *Y = kgl_op_output(t, X->rows, X->cols, 1, &X);
    size_t n = kgl_numel(X);
    /* Y has a gradient exactly when this node will be recorded and run backward */
    kgl_real *cdf = Y->grad ? kgl_arena_alloc(&t->arena, n * sizeof(kgl_real)) : NULL;
    gelu_job J = {X->data, NULL, Y->data, cdf, NULL, n};
    kgl_parallel(t->pool, elem_blocks(n), 30.0 * (double)n, gelu_forward_block_for_isa(), &J);
    kgl_node *nd = kgl_record(t, &op_gelu, Y, 1, &X);
    if (nd) nd->saved = cdf;
    return Y;
}

static kgl_tensor *gelu_run(kgl_tape *t, const kgl_check_case *c) { return kgl_gelu(t, c->inputs[0]); }

static void gelu_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const double spread[] = {1, 3, 0.1};
    c->inputs[0] = kgl_check_input(keep, rng, 3, 5, spread[which], 0);
    c->n_inputs = 1;
    c->run = gelu_run;
    snprintf(c->label, sizeof c->label, "3x5 σ=%g", spread[which]);
}

static const kgl_op op_gelu = {"gelu", gelu_backward, {3, gelu_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * abs_cube: y = |x|³ elementwise (the N3 regulariser's terms).
 *   dy/dx = 3 x |x|  (continuous, 0 at 0: |x|³ is twice differentiable there).
 * ======================================================================== */
static const kgl_op op_abs_cube;

static void abs_cube_backward(kgl_node *nd)
{
    kgl_tensor *X = nd->in[0], *Y = nd->out;
    size_t n = kgl_numel(X);
    for (size_t i = 0; i < n; i++) X->grad[i] += Y->grad[i] * 3.0 * X->data[i] * fabs(X->data[i]);
}

kgl_tensor *kgl_abs_cube(kgl_tape *t, kgl_tensor *X)
{
    kgl_tensor *Y = kgl_op_output(t, X->rows, X->cols, 1, &X);
    size_t n = kgl_numel(X);
    for (size_t i = 0; i < n; i++) {
        double a = fabs(X->data[i]);
        Y->data[i] = a * a * a;
    }
    kgl_record(t, &op_abs_cube, Y, 1, &X);
    return Y;
}

static kgl_tensor *abs_cube_run(kgl_tape *t, const kgl_check_case *c) { return kgl_abs_cube(t, c->inputs[0]); }

/* both signs, large and small; case 2 near 0, where the derivative's sign turns */
static void abs_cube_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const double spread[] = {1, 3, 0.01};
    c->inputs[0] = kgl_check_input(keep, rng, 4, 3, spread[which], 0);
    c->n_inputs = 1;
    c->run = abs_cube_run;
    snprintf(c->label, sizeof c->label, "4x3 σ=%g", spread[which]);
}

static const kgl_op op_abs_cube = {"abs_cube", abs_cube_backward, {3, abs_cube_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * conjugate: each row is d/2 complex numbers [re | im] (as in the complex
 * readout), and Y = conj(X): the real half is copied, the imaginary half
 * negated,  Y[:, k] = s_k X[:, k],  s_k = +1 for k < d/2, −1 for k ≥ d/2.
 * Y is linear in X with a diagonal ±1 Jacobian, its own transpose:
 *   dX[:, k] += s_k dY[:, k].
 * (The relation loss with the complex readout scores every relation k as
 *  Re Σ_c C[i,c] R[k,c] conj(E[t,c]) = Re Σ_c conj(C[i,c]) E[t,c] conj(R[k,c]),
 *  which is trilinear_complex with conj(C) as its first input.)
 * ======================================================================== */
static const kgl_op op_conjugate;

static void conjugate_backward(kgl_node *nd)
{
    kgl_tensor *X = nd->in[0], *Y = nd->out;
    int d = X->cols, h = d / 2;
    for (int i = 0; i < X->rows; i++)
        for (int k = 0; k < d; k++) X->grad[(size_t)i * d + k] += (k < h ? 1.0 : -1.0) * Y->grad[(size_t)i * d + k];
}

kgl_tensor *kgl_conjugate(kgl_tape *t, kgl_tensor *X)
{
    if (X->cols % 2) kgl_die("conjugate: width %d is odd (a row is d/2 complex numbers)", X->cols);
    kgl_tensor *Y = kgl_op_output(t, X->rows, X->cols, 1, &X);
    int d = X->cols, h = d / 2;
    for (int i = 0; i < X->rows; i++)
        for (int k = 0; k < d; k++) {
            kgl_real x = X->data[(size_t)i * d + k];
            Y->data[(size_t)i * d + k] = k < h ? x : -x;
        }
    kgl_record(t, &op_conjugate, Y, 1, &X);
    return Y;
}

static kgl_tensor *conjugate_run(kgl_tape *t, const kgl_check_case *c) { return kgl_conjugate(t, c->inputs[0]); }

/* one complex number a row, and several; a single row */
static void conjugate_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int rows[] = {3, 4, 1}, cols[] = {2, 6, 8};
    c->inputs[0] = kgl_check_input(keep, rng, rows[which], cols[which], 1, 0);
    c->n_inputs = 1;
    c->run = conjugate_run;
    snprintf(c->label, sizeof c->label, "%dx%d", rows[which], cols[which]);
}

static const kgl_op op_conjugate = {"conjugate", conjugate_backward, {3, conjugate_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * cross_entropy (fused log-softmax + negative log-likelihood, mean over the
 * B rows):  L = (1/B) Σ_b [ lse(z_b) − Σ_j q_bj z_bj ],
 *   q_b = (1 − ε) onehot(t_b) + ε/n   (ε = node->alpha, label smoothing),
 *   lse(z) = m + log Σ_j exp(z_j − m), m = max_j z_j  (stable for |z| ~ 1000).
 * Since ∂lse/∂z_j = p_j (the softmax) and Σ_j q_bj = 1:
 *   ∂L/∂z_bj = (p_bj − q_bj) / B.          (p saved by forward)
 * Each row is one kgl_softmax_row (src/engine/vmath.c: vector exp, the sum
 * in 8 lanes); the rows' losses are added in row order.
 * ======================================================================== */
static const kgl_op op_cross_entropy;


/* One job for both cross entropies: off == NULL, row b's one target is
   targets[b] (cross_entropy); otherwise its k_b answers are
   targets[off[b] .. off[b+1]) (multilabel_ce, below). */
typedef struct ce_job {
    const kgl_real *z;   /* [B, n] logits */
    kgl_real *p, *dz;    /* softmax out (forward), gradient (backward) */
    double *row_loss;    /* [B] lse − ⟨q, z⟩ per row */
    const int *targets, *off;
    int B, n;
    double eps, g;     /* smoothing; ∂L/∂loss / B */
    bool set;          /* backward: dz was unset, so it is written (0 + its value), not added to */
} ce_job;

INLINE void cross_entropy_rows_body(void *ctx, int task, int worker)
{
    (void)worker;
    const ce_job *J = ctx;
    int b0 = task * ROW_BLOCK, b1 = (task + 1) * ROW_BLOCK < J->B ? (task + 1) * ROW_BLOCK : J->B;
    double lses[ROW_BLOCK]; /* p = exp(z − lse), lse = log Σ exp z, row by row (short rows together) */
    kgl_softmax_block(J->z + (size_t)b0 * J->n, J->p + (size_t)b0 * J->n, b1 - b0, J->n, lses);
    for (int b = b0; b < b1; b++) {
        const kgl_real *z = J->z + (size_t)b * J->n;
        double lse = lses[b - b0];
        double qz;
        if (J->off) { /* the mean of the answers' logits */
            int lo = J->off[b], hi = J->off[b + 1];
            double zt = 0;
            for (int k = lo; k < hi; k++) zt += z[J->targets[k]];
            qz = (1.0 - J->eps) * zt / (hi - lo);
        } else {
            qz = (1.0 - J->eps) * z[J->targets[b]];
        }
        if (J->eps != 0) qz += J->eps / J->n * kgl_lane_sum(z, J->n); /* in lanes: see kgl_lane_sum */
        J->row_loss[b] = lse - qz;
    }
}
ISA_CLONES(cross_entropy_rows)

static void cross_entropy_grad_rows(void *ctx, int task, int worker)
{
    (void)worker;
    const ce_job *J = ctx;
    int n = J->n, b1 = (task + 1) * ROW_BLOCK < J->B ? (task + 1) * ROW_BLOCK : J->B;
    double off = J->eps / n;
    for (int b = task * ROW_BLOCK; b < b1; b++) {
        const kgl_real *p = J->p + (size_t)b * n;
        kgl_real *dz = J->dz + (size_t)b * n;
        if (J->set)
            for (int j = 0; j < n; j++) dz[j] = (kgl_real)(0 + J->g * (p[j] - off));
        else
            for (int j = 0; j < n; j++) dz[j] += J->g * (p[j] - off);
        if (J->off) {
            int lo = J->off[b], hi = J->off[b + 1];
            double each = J->g * (1.0 - J->eps) / (hi - lo);
            for (int k = lo; k < hi; k++) dz[J->targets[k]] -= each;
        } else {
            dz[J->targets[b]] -= J->g * (1.0 - J->eps);
        }
    }
}

static void cross_entropy_backward(kgl_node *nd)
{
    kgl_tensor *Z = nd->in[0];
    int B = Z->rows, n = Z->cols;
    /* idx1: multilabel_ce's offsets, NULL for cross_entropy */
    ce_job J = {Z->data, nd->saved, Z->grad, NULL, nd->idx0, nd->idx1, B, n, nd->alpha, nd->out->grad[0] / B,
                kgl_grad_claim(Z)};
    kgl_parallel(nd->pool, row_blocks(B), 2.0 * B * n, cross_entropy_grad_rows, &J);
}

/* The forward of both ops: targets (and off, see ce_job) already checked. */
static kgl_tensor *cross_entropy_forward(kgl_tape *t, const kgl_op *op, kgl_tensor *Z, const int *targets,
                                         const int *off, double smoothing)
{
    int B = Z->rows, n = Z->cols;
    kgl_tensor *Y = kgl_op_output(t, 1, 1, 1, &Z);
    kgl_real *p = kgl_arena_alloc(&t->arena, kgl_numel(Z) * sizeof(kgl_real));
    double *row_loss = kgl_arena_alloc(&t->arena, (size_t)B * sizeof(double));
    ce_job J = {Z->data, p, NULL, row_loss, targets, off, B, n, smoothing, 0, false};
    kgl_parallel(t->pool, row_blocks(B), 20.0 * B * n, cross_entropy_rows_for_isa(), &J);
    double total = 0;
    for (int b = 0; b < B; b++) total += row_loss[b]; /* in row order, whatever the threads */
    Y->data[0] = total / B;
    kgl_node *nd = kgl_record(t, op, Y, 1, &Z);
    if (nd) {
        nd->idx0 = targets;
        nd->idx1 = off;
        nd->n_idx = B;
        nd->alpha = smoothing;
        nd->saved = p;
    }
    return Y;
}

kgl_tensor *kgl_cross_entropy(kgl_tape *t, kgl_tensor *Z, const int *targets, double smoothing)
{
    int B = Z->rows, n = Z->cols;
    if (B < 1) kgl_die("cross_entropy: empty batch");
    for (int b = 0; b < B; b++)
        if (targets[b] < 0 || targets[b] >= n) kgl_die("cross_entropy: target %d outside 0..%d", targets[b], n - 1);
    return cross_entropy_forward(t, &op_cross_entropy, Z, targets, NULL, smoothing);
}

static kgl_tensor *cross_entropy_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_cross_entropy(t, c->inputs[0], c->idx0, c->alpha);
}

static void cross_entropy_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int targets[] = {2, 0, 4, 4, 1};
    c->n_inputs = 1;
    c->run = cross_entropy_run;
    c->idx0 = kgl_check_indices(keep, 5, targets);
    c->n_idx = 5;
    c->inputs[0] = kgl_check_input(keep, rng, which >= 2 ? 3 : 5, which == 3 ? 37 : 5, 1, 0);
    if (which == 3) {
        /* 37 columns: two full blocks of the smoothing term's 16 lanes and a tail of 5 */
        c->alpha = 0.3;
        snprintf(c->label, sizeof c->label, "3x37 smooth 0.3");
    } else if (which == 1) {
        c->alpha = 0.1;
        snprintf(c->label, sizeof c->label, "5x5 smooth 0.1");
    } else if (which == 2) {
        /* logits ±1000: the loss is ~1000/B, so round-off in f is ~1e-13;
           h = 1e-3 keeps round-off/h at 1e-10, and the loss is piecewise
           near-linear here, so truncation is negligible. */
        for (int k = 0; k < 15; k++) c->inputs[0]->data[k] += (kgl_rng_uniform(rng) < 0.5 ? -1000.0 : 1000.0);
        c->h = 1e-3;
        snprintf(c->label, sizeof c->label, "3x5 ±1000");
    } else {
        snprintf(c->label, sizeof c->label, "5x5");
    }
}

static const kgl_op op_cross_entropy = {"cross_entropy",
                                        cross_entropy_backward,
                                        {4, cross_entropy_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};

/* ========================================================================
 * trilinear readout (README, "The model, exactly"): for each example b = (i, r) and entity j,
 *   Y[b, j] = Σ_c C[i,c] R[r,c] E[j,c] = ⟨v_b, E[j]⟩,  v_b = C[i] ⊙ R[r].
 * With G [B, n] and u_b = Σ_j G[b,j] E[j]  (the gradient reaching v_b):
 *   dE[j] += Σ_b G[b,j] v_b,   dC[i] += u_b ⊙ R[r],   dR[r] += u_b ⊙ C[i].
 * (idx0 = heads i, idx1 = relations r; saved = V, the rows v_b; scratch =
 * U, the rows u_b.) Three matrix products on the kernels: Y = V Eᵀ forward;
 * U = G E and dE += Gᵀ V backward; then each u_b is scattered to its rows.
 *
 * trilinear_complex, the complex readout (ComplEx, Trouillon et al. 2016):
 * each row of C, R and E is d/2 complex numbers, real parts in columns
 * [0, d/2), imaginary parts in [d/2, d). For example b = (i, r) and entity j
 *   Y[b, j] = Re Σ_c C[i,c] R[r,c] conj(E[j,c]) = ⟨v_b, E[j]⟩ over the d reals,
 *   v_b = C[i] R[r]  (complex product: v_re = c_re r_re − c_im r_im,
 *                                      v_im = c_re r_im + c_im r_re).
 * So Y = V Eᵀ, U = G E and dE += Gᵀ V as above; only the scatter differs:
 *   ∂L/∂c_re = u_re r_re + u_im r_im,   ∂L/∂c_im = −u_re r_im + u_im r_re,
 * that is dC[i] += u_b conj(R[r]), and by symmetry dR[r] += u_b conj(C[i]).
 * A relation row rotates and scales each complex coordinate of the head
 * state: unlike trilinear's C ⊙ R, it mixes the two halves of a pair.
 * ======================================================================== */
static const kgl_op op_trilinear, op_trilinear_complex;

/* v = a b, d/2 complex numbers as [re | im] */
static void complex_product(const kgl_real *a, const kgl_real *b, kgl_real *v, int d)
{
    int h = d / 2;
    for (int k = 0; k < h; k++) {
        double are = a[k], aim = a[h + k], bre = b[k], bim = b[h + k];
        v[k] = are * bre - aim * bim;
        v[h + k] = are * bim + aim * bre;
    }
}

void kgl_readout_query(bool is_complex, const kgl_real *a, const kgl_real *b, kgl_real *v, int d)
{
    if (is_complex) complex_product(a, b, v, d);
    else
        for (int k = 0; k < d; k++) v[k] = a[k] * b[k];
}

/* g += u ⊙ b (diagonal) or g += u conj(b) (complex) */
static void add_readout_grad(bool complex, const kgl_real *u, const kgl_real *b, kgl_real *g, int d)
{
    if (!complex) {
        for (int k = 0; k < d; k++) g[k] += u[k] * b[k];
        return;
    }
    int h = d / 2;
    for (int k = 0; k < h; k++) {
        g[k] += u[k] * b[k] + u[h + k] * b[h + k];
        g[h + k] += u[h + k] * b[k] - u[k] * b[h + k];
    }
}

static void readout_backward(kgl_node *nd, bool complex)
{
    kgl_tensor *C = nd->in[0], *R = nd->in[1], *E = nd->in[2], *Y = nd->out;
    int n = E->rows, d = E->cols, B = nd->n_idx;
    const kgl_real *V = nd->saved;
    kgl_real *U = nd->scratch;
    /* u_b = Σ_j G[b,j] E[j]  (U = G E, j in order) */
    kgl_gemm_nn(nd->pool, B, d, n, Y->grad, n, E->data, d, U, d, KGL_SET);
    /* dE[j] += Σ_b G[b,j] v_b  (dE += Gᵀ V, b in order) */
    if (E->grad) kgl_gemm_tn(nd->pool, n, d, B, Y->grad, n, V, d, E->grad, d, KGL_ADD);
    for (int b = 0; b < B; b++) { /* scattered to the rows the examples name, in example order */
        const kgl_real *c = C->data + (size_t)nd->idx0[b] * d, *r = R->data + (size_t)nd->idx1[b] * d;
        const kgl_real *u = U + (size_t)b * d;
        if (C->grad) add_readout_grad(complex, u, r, C->grad + (size_t)nd->idx0[b] * d, d);
        if (R->grad) add_readout_grad(complex, u, c, R->grad + (size_t)nd->idx1[b] * d, d);
    }
}

static void trilinear_backward(kgl_node *nd) { readout_backward(nd, false); }
static void trilinear_complex_backward(kgl_node *nd) { readout_backward(nd, true); }

static kgl_tensor *readout_forward(kgl_tape *t, const kgl_op *op, kgl_tensor *C, kgl_tensor *R, kgl_tensor *E,
                                   const int *heads, const int *rels, int n_ex)
{
    bool complex = op == &op_trilinear_complex;
    int d = E->cols, n = E->rows;
    shape_check(C->cols == d, "readout (C, E)", C, E);
    shape_check(R->cols == d, "readout (R, E)", R, E);
    shape_check(!complex || d % 2 == 0, "trilinear_complex (an even width: d/2 complex numbers)", C, E);
    for (int b = 0; b < n_ex; b++)
        if (heads[b] < 0 || heads[b] >= C->rows || rels[b] < 0 || rels[b] >= R->rows)
            kgl_die("%s: example %d (head %d, relation %d) out of range", op->name, b, heads[b], rels[b]);
    kgl_tensor *in[3] = {C, R, E};
    kgl_tensor *Y = kgl_op_output(t, n_ex, n, 3, in);
    kgl_real *v = kgl_arena_alloc(&t->arena, (size_t)n_ex * (size_t)d * sizeof(kgl_real));
    for (int b = 0; b < n_ex; b++) /* v_b = C[i] ⊙ R[r], or the complex product */
        kgl_readout_query(complex, C->data + (size_t)heads[b] * d, R->data + (size_t)rels[b] * d, v + (size_t)b * d,
                          d);
    /* Y = V Eᵀ: Y[b,j] = Σ_c v_b[c] E[j,c], c in order */
    kgl_gemm_nt(t->pool, n_ex, n, d, v, d, E->data, d, Y->data, n, KGL_SET);
    kgl_node *nd = kgl_record(t, op, Y, 3, in);
    if (nd) {
        nd->idx0 = heads;
        nd->idx1 = rels;
        nd->n_idx = n_ex;
        nd->saved = v;
        nd->scratch = kgl_arena_alloc(&t->arena, (size_t)n_ex * (size_t)d * sizeof(kgl_real)); /* u_b */
    }
    return Y;
}

kgl_tensor *kgl_trilinear(kgl_tape *t, kgl_tensor *C, kgl_tensor *R, kgl_tensor *E, const int *heads,
                          const int *rels, int n_ex)
{
    return readout_forward(t, &op_trilinear, C, R, E, heads, rels, n_ex);
}

kgl_tensor *kgl_trilinear_complex(kgl_tape *t, kgl_tensor *C, kgl_tensor *R, kgl_tensor *E, const int *heads,
                                  const int *rels, int n_ex)
{
    return readout_forward(t, &op_trilinear_complex, C, R, E, heads, rels, n_ex);
}

static kgl_tensor *trilinear_run(kgl_tape *t, const kgl_check_case *c)
{
    /* case 2 passes one tensor as both C and E, as the model's E is used twice */
    kgl_tensor *E = c->n_inputs == 3 ? c->inputs[2] : c->inputs[0];
    return kgl_trilinear(t, c->inputs[0], c->inputs[1], E, c->idx0, c->idx1, c->n_idx);
}

static kgl_tensor *trilinear_complex_run(kgl_tape *t, const kgl_check_case *c)
{
    kgl_tensor *E = c->n_inputs == 3 ? c->inputs[2] : c->inputs[0];
    return kgl_trilinear_complex(t, c->inputs[0], c->inputs[1], E, c->idx0, c->idx1, c->n_idx);
}

/* Both readouts' cases: repeated heads and relations, one example, and C
   and E one tensor; widths d (even for the complex readout). */
static void readout_case(int which, const int *d, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int heads_a[] = {0, 3, 1, 3, 2, 0}, rels_a[] = {2, 0, 1, 2, 2, 1};
    static const int heads_b[] = {1}, rels_b[] = {0};
    static const int heads_c[] = {4, 0, 4, 2}, rels_c[] = {1, 1, 0, 2};
    const int *heads[] = {heads_a, heads_b, heads_c}, *rels[] = {rels_a, rels_b, rels_c};
    static const int n_ex[] = {6, 1, 4}, c_rows[] = {4, 2, 5}, r_rows[] = {3, 1, 3}, e_rows[] = {5, 3, 5};
    c->inputs[0] = kgl_check_input(keep, rng, c_rows[which], d[which], 1, 0);
    c->inputs[1] = kgl_check_input(keep, rng, r_rows[which], d[which], 1, 0);
    c->n_inputs = 2;
    if (which < 2) c->inputs[c->n_inputs++] = kgl_check_input(keep, rng, e_rows[which], d[which], 1, 0);
    c->idx0 = kgl_check_indices(keep, n_ex[which], heads[which]);
    c->idx1 = kgl_check_indices(keep, n_ex[which], rels[which]);
    c->n_idx = n_ex[which];
    if (which < 2)
        snprintf(c->label, sizeof c->label, "C%dx%d R%dx%d E%dx%d B%d", c_rows[which], d[which], r_rows[which],
                 d[which], e_rows[which], d[which], n_ex[which]);
    else
        snprintf(c->label, sizeof c->label, "C=E %dx%d R%dx%d B%d", c_rows[which], d[which], r_rows[which], d[which],
                 n_ex[which]);
}

static void trilinear_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int d[] = {3, 4, 3};
    readout_case(which, d, rng, keep, c);
    c->run = trilinear_run;
}

static void trilinear_complex_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int d[] = {4, 2, 6};
    readout_case(which, d, rng, keep, c);
    c->run = trilinear_complex_run;
}

static const kgl_op op_trilinear = {"trilinear",
                                    trilinear_backward,
                                    {3, trilinear_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};
static const kgl_op op_trilinear_complex = {"trilinear_complex",
                                            trilinear_complex_backward,
                                            {3, trilinear_complex_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * scale_exp: Y = e^{s_k} X, with s a [1, K] row of learnable log-scales and
 * k = node->i0 (a learned temperature per attention head).
 *   dX = e^{s_k} G;   ∂Y/∂s_k = e^{s_k} X = Y  ⇒  ds_k = Σ_ij G_ij Y_ij.
 * ======================================================================== */
static const kgl_op op_scale_exp;

static void scale_exp_backward(kgl_node *nd)
{
    kgl_tensor *X = nd->in[0], *s = nd->in[1], *Y = nd->out;
    size_t n = kgl_numel(X);
    double factor = exp(s->data[nd->i0]), ds = 0;
    for (size_t i = 0; i < n; i++) {
        if (X->grad) X->grad[i] += factor * Y->grad[i];
        ds += Y->grad[i] * Y->data[i];
    }
    if (s->grad) s->grad[nd->i0] += ds;
}

kgl_tensor *kgl_scale_exp(kgl_tape *t, kgl_tensor *X, kgl_tensor *s, int k)
{
    if (s->rows != 1 || k < 0 || k >= s->cols) kgl_die("scale_exp: index %d outside a %dx%d scale", k, s->rows, s->cols);
    kgl_tensor *in[2] = {X, s};
    kgl_tensor *Y = kgl_op_output(t, X->rows, X->cols, 2, in);
    double factor = exp(s->data[k]);
    size_t n = kgl_numel(X);
    for (size_t i = 0; i < n; i++) Y->data[i] = factor * X->data[i];
    kgl_node *nd = kgl_record(t, &op_scale_exp, Y, 2, in);
    if (nd) nd->i0 = k;
    return Y;
}

static kgl_tensor *scale_exp_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_scale_exp(t, c->inputs[0], c->inputs[1], c->i0);
}

static void scale_exp_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int spec[][3] = {{3, 4, 2}, {5, 5, 1}, {2, 3, 3}}; /* rows, cols, K */
    const int *sp = spec[which];
    c->inputs[0] = kgl_check_input(keep, rng, sp[0], sp[1], 1, 0);
    c->inputs[1] = kgl_check_input(keep, rng, 1, sp[2], 0.5, 0);
    c->n_inputs = 2;
    c->i0 = sp[2] - 1;
    c->run = scale_exp_run;
    snprintf(c->label, sizeof c->label, "e^s[%d]·%dx%d", c->i0, sp[0], sp[1]);
}

/* The scale vector's entries other than k have zero gradient exactly; the
 * case with K = 1 makes sure the checked entry is the only one. */
static const kgl_op op_scale_exp = {"scale_exp",
                                    scale_exp_backward,
                                    {3, scale_exp_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * dropout with a given mask: Y = X ⊙ keep / (1 − p)
 *   (keep ∈ {0, 1} per element in node->mask.keep, α = 1/(1 − p) in alpha)
 *   dX = α G ⊙ keep.   The mask is an attribute, not a function of X: the
 *   gradient check fixes it (drawn once in make_case), as training fixes it
 *   for one step; kgl_dropout draws it from an explicit stream.
 * ======================================================================== */
static const kgl_op op_dropout;

/* Both directions element by element, in blocks of ELEM_BLOCK on the pool
   (the mask is drawn before, from one stream: kgl_rng_keep_mask_on). */
typedef struct dropout_job {
    const kgl_real *in; /* forward X, backward G */
    kgl_real *out;      /* forward Y, backward dX (added to, or written when it was unset) */
    const unsigned char *keep;
    double alpha;
    size_t n;
    bool set;
} dropout_job;

/* The loops are written without branches, each element's value computed and
   then selected, so that each ISA's clone runs them in vectors (a kept
   element's product α x in double, rounded to kgl_real once; a dropped one
   +0, or in the adding backward its old value written back): 3 million
   elements of FB15k-237's input dropout took 3.8 ms forward and 4.4 ms
   backward in one element at a time, in float32 on one Zen 4 core (with the
   mask, 3.3 % of the recipe's step; 0.6 % in vectors, the mask in lanes). gcc
   keeps a ?: between floats as a branch, so the selection is on the bits. */
#ifdef KGL_FLOAT32
typedef uint32_t real_bits;
#else
typedef uint64_t real_bits;
#endif
/* x if keep is set, else y, bit for bit */
INLINE kgl_real kept_or(unsigned char keep, kgl_real x, kgl_real y)
{
    real_bits bx, by, m = (real_bits)0 - (real_bits)(keep != 0);
    memcpy(&bx, &x, sizeof bx);
    memcpy(&by, &y, sizeof by);
    bx = (bx & m) | (by & ~m);
    memcpy(&x, &bx, sizeof x);
    return x;
}

INLINE void dropout_forward_block_body(void *ctx, int task, int worker)
{
    (void)worker;
    const dropout_job *J = ctx;
    size_t lo = (size_t)task * ELEM_BLOCK, hi = span_end(lo, ELEM_BLOCK, J->n);
    for (size_t i = lo; i < hi; i++) J->out[i] = kept_or(J->keep[i], (kgl_real)(J->alpha * J->in[i]), 0);
}
ISA_CLONES(dropout_forward_block)

INLINE void dropout_backward_block_body(void *ctx, int task, int worker)
{
    (void)worker;
    const dropout_job *J = ctx;
    size_t lo = (size_t)task * ELEM_BLOCK, hi = span_end(lo, ELEM_BLOCK, J->n);
    kgl_real *out = J->out;
    if (J->set) /* a dropped element gets 0, a kept one 0 + its value */
        for (size_t i = lo; i < hi; i++) out[i] = kept_or(J->keep[i], (kgl_real)(0 + J->alpha * J->in[i]), 0);
    else
        for (size_t i = lo; i < hi; i++) out[i] = kept_or(J->keep[i], (kgl_real)(out[i] + J->alpha * J->in[i]), out[i]);
}
ISA_CLONES(dropout_backward_block)

static void dropout_backward(kgl_node *nd)
{
    kgl_tensor *X = nd->in[0];
    dropout_job J = {nd->out->grad, X->grad, nd->mask.keep, nd->alpha, kgl_numel(X), kgl_grad_claim(X)};
    kgl_parallel(nd->pool, elem_blocks(J.n), (double)J.n, dropout_backward_block_for_isa(), &J);
}

kgl_tensor *kgl_dropout_mask(kgl_tape *t, kgl_tensor *X, const unsigned char *keep, double p)
{
    if (!(p >= 0 && p < 1)) kgl_die("dropout: rate %g outside [0, 1)", p);
    kgl_tensor *Y = kgl_op_output(t, X->rows, X->cols, 1, &X);
    double alpha = 1.0 / (1.0 - p);
    dropout_job J = {X->data, Y->data, keep, alpha, kgl_numel(X), false};
    kgl_parallel(t->pool, elem_blocks(J.n), (double)J.n, dropout_forward_block_for_isa(), &J);
    kgl_node *nd = kgl_record(t, &op_dropout, Y, 1, &X);
    if (nd) {
        nd->mask = (kgl_mask){KGL_MASK_KEEP, keep};
        nd->alpha = alpha;
    }
    return Y;
}

kgl_tensor *kgl_dropout(kgl_tape *t, kgl_tensor *X, double p, kgl_rng *rng)
{
    if (p == 0 || !rng) return X;
    size_t n = kgl_numel(X);
    unsigned char *keep = kgl_arena_alloc(&t->arena, n ? n : 1);
    kgl_rng_keep_mask_on(t->pool, rng, keep, n, p); /* the same draws, in blocks on the threads */
    return kgl_dropout_mask(t, X, keep, p);
}

static kgl_tensor *dropout_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_dropout_mask(t, c->inputs[0], c->mask.keep, c->alpha);
}

static void dropout_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int shapes[][2] = {{3, 4}, {1, 6}, {5, 5}};
    static const double rates[] = {0.5, 0.1, 0.8};
    const int *s = shapes[which];
    c->inputs[0] = kgl_check_input(keep, rng, s[0], s[1], 1, 0);
    c->n_inputs = 1;
    c->alpha = rates[which];
    unsigned char *mask = kgl_arena_alloc(keep, (size_t)(s[0] * s[1]));
    int kept = 0;
    for (int i = 0; i < s[0] * s[1]; i++) kept += mask[i] = kgl_rng_uniform(rng) >= rates[which];
    if (!kept) mask[0] = 1; /* at least one element carries gradient */
    c->mask = (kgl_mask){KGL_MASK_KEEP, mask};
    c->run = dropout_run;
    snprintf(c->label, sizeof c->label, "%dx%d p=%g", s[0], s[1], rates[which]);
}

/* Linear in X: the central difference is exact up to round-off (~1e-11). */
static const kgl_op op_dropout = {"dropout", dropout_backward, {3, dropout_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};

/* ========================================================================
 * sum: y = Σ x.  dx = g.        mean: y = Σ x / N.  dx = g / N.
 * ======================================================================== */
static const kgl_op op_sum, op_mean;

static void sum_backward(kgl_node *nd)
{
    kgl_tensor *X = nd->in[0];
    size_t n = kgl_numel(X);
    double g = nd->out->grad[0] * nd->alpha; /* alpha: 1 for sum, 1/N for mean */
    for (size_t i = 0; i < n; i++) X->grad[i] += g;
}

static kgl_tensor *reduce(kgl_tape *t, kgl_tensor *X, const kgl_op *op, double factor)
{
    kgl_tensor *Y = kgl_op_output(t, 1, 1, 1, &X);
    size_t n = kgl_numel(X);
    double s = 0;
    for (size_t i = 0; i < n; i++) s += X->data[i];
    Y->data[0] = s * factor;
    kgl_node *nd = kgl_record(t, op, Y, 1, &X);
    if (nd) nd->alpha = factor;
    return Y;
}

kgl_tensor *kgl_sum(kgl_tape *t, kgl_tensor *X) { return reduce(t, X, &op_sum, 1.0); }
kgl_tensor *kgl_mean(kgl_tape *t, kgl_tensor *X) { return reduce(t, X, &op_mean, 1.0 / (double)kgl_numel(X)); }

static kgl_tensor *sum_run(kgl_tape *t, const kgl_check_case *c) { return kgl_sum(t, c->inputs[0]); }
static kgl_tensor *mean_run(kgl_tape *t, const kgl_check_case *c) { return kgl_mean(t, c->inputs[0]); }

static void reduce_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c, bool mean)
{
    static const int shapes[][2] = {{3, 4}, {1, 1}};
    c->inputs[0] = kgl_check_input(keep, rng, shapes[which][0], shapes[which][1], 1, 0);
    c->n_inputs = 1;
    c->run = mean ? mean_run : sum_run;
    snprintf(c->label, sizeof c->label, "%dx%d", shapes[which][0], shapes[which][1]);
}
static void sum_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    reduce_case(which, rng, keep, c, false);
}
static void mean_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    reduce_case(which, rng, keep, c, true);
}

static const kgl_op op_sum = {"sum", sum_backward, {2, sum_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};
static const kgl_op op_mean = {"mean", sum_backward, {2, mean_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * multilabel_ce (1-N / KvsAll targets, as ConvE trains): row b has a
 * set A_b of k_b ≥ 1 correct answers (answers[off[b] .. off[b+1])), and the
 * target is their normalised multi-hot, optionally smoothed:
 *   L = (1/B) Σ_b [ lse(z_b) − Σ_j q_bj z_bj ],
 *   q_bj = (1 − ε) [j ∈ A_b] / k_b + ε/n           (ε = node->alpha).
 * Σ_j q_bj = 1 as for the one-hot target, so again
 *   ∂L/∂z_bj = (p_bj − q_bj) / B.          (p saved by forward)
 * With k_b = 1 for every row it is cross_entropy, bit for bit up to the
 * order of one subtraction. (idx0 = answers, idx1 = off, n_idx = B.)
 * ======================================================================== */
static const kgl_op op_multilabel_ce;

/* The rows, the backward and the forward are cross_entropy's (ce_job with
   off): only the checks differ. */
kgl_tensor *kgl_multilabel_ce(kgl_tape *t, kgl_tensor *Z, const int *answer_off, const int *answers,
                              double smoothing)
{
    int B = Z->rows, n = Z->cols;
    if (B < 1) kgl_die("multilabel_ce: empty batch");
    for (int b = 0; b < B; b++) {
        if (answer_off[b + 1] <= answer_off[b]) kgl_die("multilabel_ce: row %d has no answer", b);
        for (int k = answer_off[b]; k < answer_off[b + 1]; k++)
            if (answers[k] < 0 || answers[k] >= n)
                kgl_die("multilabel_ce: answer %d outside 0..%d", answers[k], n - 1);
    }
    return cross_entropy_forward(t, &op_multilabel_ce, Z, answers, answer_off, smoothing);
}

static kgl_tensor *multilabel_ce_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_multilabel_ce(t, c->inputs[0], c->idx1, c->idx0, c->alpha);
}

/* Rows with one, two and all answers; the third case smoothed. */
static void multilabel_ce_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int answers[] = {2, 0, 3, 4, 1, 0, 1, 2, 3, 4}, off[] = {0, 1, 3, 4, 5, 10};
    c->n_inputs = 1;
    c->run = multilabel_ce_run;
    c->idx0 = kgl_check_indices(keep, 10, answers);
    c->idx1 = kgl_check_indices(keep, 6, off);
    c->n_idx = 5;
    c->inputs[0] = kgl_check_input(keep, rng, 5, 5, which == 1 ? 3 : 1, 0);
    c->alpha = which == 2 ? 0.2 : 0;
    if (which == 2) snprintf(c->label, sizeof c->label, "5x5 k=1,2,1,1,5 smooth 0.2");
    else snprintf(c->label, sizeof c->label, "5x5 k=1,2,1,1,5 σ=%d", which == 1 ? 3 : 1);
}

static const kgl_op op_multilabel_ce = {"multilabel_ce",
                                              cross_entropy_backward,
                                              {3, multilabel_ce_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};

/* ---- the softmax Jacobian, explicit, for study ----------------------------- */

void kgl_softmax_vec(const double *z, int n, double *p)
{
    double m = z[0], s = 0;
    for (int j = 1; j < n; j++)
        if (z[j] > m) m = z[j];
    for (int j = 0; j < n; j++) s += (p[j] = exp(z[j] - m));
    for (int j = 0; j < n; j++) p[j] /= s;
}

void kgl_softmax_jacobian(const double *p, int n, double *J)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) J[i * n + j] = (i == j ? p[i] : 0.0) - p[i] * p[j];
}

double kgl_softmax_jacobian_fro(const kgl_real *p, int n)
{
    /* ‖J‖²_F = Σ_ij (δ_ij p_i − p_i p_j)² = Σp² − 2Σp³ + (Σp²)² (README, "The model, exactly"), but
       near one-hot that closed form cancels to 0 while ‖J‖ is still ~1e-9.
       The same sum, term by term, without the cancellation:
         ‖J‖² = Σ_i p_i² (1 − p_i)² + Σ_i p_i² Σ_{j≠i} p_j²,
       with 1 − p_max and Σ_{j≠max} p_j² summed from the other entries. */
    if (n < 1) return 0;
    int top = 0;
    for (int i = 1; i < n; i++)
        if (p[i] > p[top]) top = i;
    double s2 = 0, rest1 = 0, rest2 = 0;
    for (int i = 0; i < n; i++) {
        s2 += p[i] * p[i];
        if (i != top) rest1 += p[i], rest2 += p[i] * p[i];
    }
    double f2 = 0;
    for (int i = 0; i < n; i++) {
        double one_minus = i == top ? rest1 : 1.0 - p[i];
        double others = i == top ? rest2 : s2 - p[i] * p[i];
        f2 += p[i] * p[i] * (one_minus * one_minus + others);
    }
    return sqrt(f2);
}

/* ---- the registry ---------------------------------------------------------- */

const kgl_op *const kgl_op_registry[] = {
    &op_matmul, &op_matmul_nt, &op_matmul_tn, &op_matmul_heads, &op_add,  &op_mul,       &op_scale,
    &op_gather_rows, &op_slice_cols, &op_concat_cols, &op_softmax_rows, &op_layernorm, &op_gelu, &op_abs_cube, &op_conjugate,
    &op_cross_entropy, &op_trilinear, &op_trilinear_complex, &op_scale_exp, &op_sum, &op_mean,
    &op_dropout, &op_attention, &op_multilabel_ce,
    &kgl_op_gather_sum_rows, &kgl_op_segment_scores, &kgl_op_segment_softmax, &kgl_op_segment_weighted_sum, /* ops_segment.c */
    &kgl_op_segment_head_sums,
};
const int kgl_op_registry_count = (int)(sizeof kgl_op_registry / sizeof kgl_op_registry[0]);

const kgl_op *kgl_op_find(const char *name)
{
    for (int i = 0; i < kgl_op_registry_count; i++)
        if (strcmp(kgl_op_registry[i]->name, name) == 0) return kgl_op_registry[i];
    return NULL;
}
