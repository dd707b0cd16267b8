/* ops_segment.c — attention over variable-length segments: the ops of the
 * neighbourhood context (README, "The model, exactly": --context graph).
 *
 * A batch of B queries attends each over its own segment of tokens: segment
 * b is the rows offsets[b] … offsets[b+1] − 1 of the token matrices (every
 * segment non-empty, the segments back to back, offsets[0] = 0). With H heads
 * of dk = d/H columns, query row b of Q [B, d] meets the key rows of its
 * segment in K [T, d]; the weights of a token are one per head, so the
 * logits and weights are [T, H] (column h: head h):
 *
 *   S[t, h] = τ_h Σ_{c ∈ head h} Q[b(t), c] K[t, c]        segment_scores
 *   A[·, h] = softmax of S[·, h] within each segment         segment_softmax
 *   O[b, c] = Σ_{t ∈ segment b} A[t, h(c)] V[t, c]           segment_weighted_sum
 *   Z[b, h, c] = Σ_{t ∈ segment b} A[t, h] X[t, c]           segment_head_sums
 *
 * (segment_head_sums gives each head the weighted sum of the whole rows: the
 * values' projection then comes after the sum, on B rows instead of the
 * tokens' distinct rows; matmul_heads in ops.c is that projection.)
 * Nothing here is n × n: the work is O(T d), T the tokens of the batch.
 * Each op's forward, backward and gradient-check spec are side by side, as
 * in ops.c; the registry there lists them.
 *
 * The segments go in blocks of SEG_BLOCK as tasks on the tape's pool: what a
 * segment's task writes is its own query row, its own tokens' rows, so every
 * number is computed exactly as the plain loop over the segments computes it,
 * for any number of threads (the size is fixed, never a function of them). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kgl/engine.h"
#include "internal.h"
#include "ops_check.h"

/* The per-token loops run on the CPU's vectors (ISA_CLONES, ops_check.h):
 * the tokens' gradient scatter-add and segment_head_sums' forward and dot
 * products, each multiply-add two statements. For clang, which contracts
 * within a statement by default, contraction is off here as well. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* The segment structure every op checks before it reads a token. */
#define SEG_BLOCK 16

typedef struct segment_job {
    kgl_tensor *in0, *out; /* each op names them: Q, S; S, A; A, O */
    kgl_token_rows tok;    /* the tokens' rows: K (segment_scores), V (segment_weighted_sum) */
    const int *offsets;
    int segments, heads;
    double tau_h[KGL_ATTENTION_MAX_HEADS]; /* segment_scores' scale per head */
} segment_job;

static int segment_blocks(int segments) { return (segments + SEG_BLOCK - 1) / SEG_BLOCK; }
static int block_end(int task, int segments) { return (int)span_end((size_t)task * SEG_BLOCK, SEG_BLOCK, (size_t)segments); }

static void check_offsets(const char *op, const int *offsets, int segments, int tokens)
{
    if (segments < 1 || offsets[0] != 0 || offsets[segments] != tokens)
        kgl_die("%s: %d segments do not cover the %d token rows (offsets %d … %d)", op, segments, tokens,
                segments > 0 ? offsets[0] : 0, segments > 0 ? offsets[segments] : 0);
    for (int b = 0; b < segments; b++)
        if (offsets[b + 1] <= offsets[b]) kgl_die("%s: segment %d is empty (offsets %d, %d)", op, b, offsets[b], offsets[b + 1]);
}

/* ---- the tokens' rows, read where they are used -------------------------
 * Token t's row (its key or value) is a[ia[t]] + b[ib[t]] (kgl_token_rows):
 * its entity's projection plus its relation's. The ops read the two rows and
 * add them as they go, as gather_sum_rows would have added them (one
 * rounding, in kgl_real), instead of writing a [T, d] copy and its gradient:
 * on FB15k-237's graph step two such copies were 110 MB to write, zero,
 * gather into and read back. */
static void check_token_rows(const char *op, const kgl_token_rows *r, int T, int d)
{
    if (!r->a || r->a->cols != d || (r->b && (!r->ib || r->b->cols != d)) || (!r->b && r->ib))
        kgl_die("%s: the tokens' rows (a %dx%d%s) do not fit width %d", op, r->a ? r->a->rows : 0, r->a ? r->a->cols : 0,
                r->b ? ", b" : "", d);
    for (int t = 0; t < T; t++)
        if ((r->ia && (r->ia[t] < 0 || r->ia[t] >= r->a->rows)) || (r->b && (r->ib[t] < 0 || r->ib[t] >= r->b->rows)))
            kgl_die("%s: token %d names row %d of %d%s", op, t, r->ia ? r->ia[t] : t, r->a->rows,
                    r->b ? " (or of its second table)" : "");
}

/* Columns off … off + dk − 1 of token t's row: in a (pa), and in b (pb, NULL
   when the row is a's alone). */
INLINE void token_parts(const kgl_token_rows *r, int t, int off, const kgl_real **pa, const kgl_real **pb)
{
    int d = r->a->cols;
    *pa = r->a->data + (size_t)(r->ia ? r->ia[t] : t) * d + off;
    *pb = r->b ? r->b->data + (size_t)r->ib[t] * d + off : NULL;
}

/* Asks for token t's row of a ahead of its use (kgl_prefetch_row; nothing
   past the T tokens). b's rows, the relations', are few and stay in cache. */
INLINE void prefetch_token(const kgl_token_rows *r, int t, int T)
{
    if (t < T)
        kgl_prefetch_row(r->a->data + (size_t)(r->ia ? r->ia[t] : t) * r->a->cols, (size_t)r->a->cols * sizeof(kgl_real));
}

/* y += w · row over dk columns, the row a's part plus b's (summed first, in kgl_real) */
INLINE void add_token_row(kgl_real *y, double w, const kgl_real *pa, const kgl_real *pb, int dk)
{
    if (pb)
        for (int c = 0; c < dk; c++) y[c] += w * (kgl_real)(pa[c] + pb[c]);
    else
        for (int c = 0; c < dk; c++) y[c] += w * pa[c];
}

/* ⟨x, row⟩ over dk columns, the row a's part plus b's (summed first, in kgl_real). */
INLINE double dot_token(const kgl_real *x, const kgl_real *pa, const kgl_real *pb, int dk)
{
    double dot = 0;
    if (pb)
        for (int c = 0; c < dk; c++) dot += x[c] * (kgl_real)(pa[c] + pb[c]);
    else
        for (int c = 0; c < dk; c++) dot += x[c] * pa[c];
    return dot;
}

/* The same dot product as SCORE_LANES running sums in double (each product
   in kgl_real, as dot_token's): column c in lane c mod SCORE_LANES, the lanes
   combined by the fixed tree l_i + l_{i+8}, l_i + l_{i+4}, l_i + l_{i+2},
   l_0 + l_1, then the columns after the last full block in order (dot_token).
   The lanes are independent chains, so the ISA clones add them as vectors; a
   column-order sum is one chain, run at the adder's latency (the scores were
   a fifth of the per-token work on FB15k-237). The same bits on every path
   and for any number of threads. */
#define SCORE_LANES KGL_LANES
INLINE double dot_token_lanes(const kgl_real *x, const kgl_real *pa, const kgl_real *pb, int dk)
{
    double acc[SCORE_LANES] = {0};
    int full = dk - dk % SCORE_LANES;
    if (pb)
        for (int c0 = 0; c0 < full; c0 += SCORE_LANES)
            for (int l = 0; l < SCORE_LANES; l++) {
                kgl_real product = x[c0 + l] * (kgl_real)(pa[c0 + l] + pb[c0 + l]);
                acc[l] += product;
            }
    else
        for (int c0 = 0; c0 < full; c0 += SCORE_LANES)
            for (int l = 0; l < SCORE_LANES; l++) {
                kgl_real product = x[c0 + l] * pa[c0 + l];
                acc[l] += product;
            }
    return kgl_lane_tree(acc) + dot_token(x + full, pa + full, pb ? pb + full : NULL, dk - full);
}

/* The tokens' rows' gradient, dX[t, c] = w_h · M[b(t), c] with w_h =
   scale_h · W[t, h] (W [T, H], M [B, d]; h the head of column c), or with
   whole rows (segment_head_sums) dX[t, c] = Σ_h w_h · M[b(t), h, c] (M
   [B, H·d]), added to the rows of a and b that token t read. A row is read by tokens of any
   segment, so this is a scatter-add: a task owns rows (kgl_owns_row, dealt
   among the pool's threads) and walks every token in order, so each element
   gets its additions in token order for any number of threads. Each
   addition is the rounded product, as when dX was a tensor of its own (a
   zero plus the product) summed into a and b by gather_sum_rows' backward. */
typedef struct scatter_job {
    const kgl_token_rows *tok;
    const kgl_real *W, *M;
    const double *scale_h;
    const int *offsets;
    int segments, heads, tasks;
    bool whole_rows; /* each head's M row is all d columns (segment_head_sums, scale_h 1), not its own dk */
    bool set_a;      /* a's gradient was unset and its rows come in order (rows_in_order): a row's first token sets it */
} scatter_job;

/* Whether the tokens name a's rows in order of first appearance (the first
   token names row 0, and each row not named before is the next number) and
   name every row: the neighbourhood's distinct entities and (entity,
   relation) pairs are numbered so (graph.c). Then a scatter into a's
   gradient, walking the tokens in order, meets each row first at the token
   whose row is one past the highest seen, and can write 0 + its value there
   (the bits of adding it to a zeroed row) instead of zeroing every row
   first: on FB15k-237 the zeroing was 50 MB a step. Without indices token t
   is row t. */
static bool rows_in_order(const int *ia, int T, int rows)
{
    if (!ia) return T == rows;
    int next = 0;
    for (int t = 0; t < T; t++) {
        if (ia[t] > next || ia[t] < 0) return false;
        next += ia[t] == next;
    }
    return next == rows;
}

/* Takes the gradient of the token rows' table a for a scatter: claimed (its
   rows set by their first token) when it was unset, a is not also the
   table b or the other input `other`, and its rows come in order; else
   zeroed if unset, for adding. Returns whether it was claimed. */
static bool claim_token_rows(kgl_pool *pool, const kgl_token_rows *r, int T, const kgl_tensor *other)
{
    kgl_tensor *a = r->a;
    if (a->grad && a->grad_unset && a != r->b && a != other && rows_in_order(r->ia, T, a->rows))
        return kgl_grad_claim(a);
    kgl_grad_settle(pool, a);
    return false;
}

/* y[c] = 0 + (kgl_real)(w x[c]): add_product into a zeroed row, without the zeroing */
INLINE void set_product(kgl_real *restrict y, double w, const kgl_real *restrict x, int n)
{
    for (int c = 0; c < n; c++) y[c] = (kgl_real)0 + (kgl_real)(w * x[c]);
}

/* y[c] = 0 + w x[c] in kgl_real: add_real_product into a zeroed row */
INLINE void set_real_product(kgl_real *restrict y, kgl_real w, const kgl_real *restrict x, int n)
{
    for (int c = 0; c < n; c++) {
        kgl_real product = w * x[c];
        y[c] = (kgl_real)0 + product;
    }
}

/* y[c] += (kgl_real)(w x[c]): the product rounded first, then added */
INLINE void add_product(kgl_real *restrict y, double w, const kgl_real *restrict x, int n)
{
    for (int c = 0; c < n; c++) y[c] += (kgl_real)(w * x[c]);
}

/* The same with w a kgl_real: (kgl_real)(w x[c]) is then the kgl_real product, computed as one
   (in float32 without the round trip through double, so the compiler runs it in vector lanes) */
INLINE void add_real_product(kgl_real *restrict y, kgl_real w, const kgl_real *restrict x, int n)
{
    for (int c = 0; c < n; c++) {
        kgl_real product = w * x[c];
        y[c] += product;
    }
}

INLINE void scatter_token_grads_owned_body(void *ctx, int task, int worker)
{
    (void)worker;
    const scatter_job *J = ctx;
    const kgl_token_rows *r = J->tok;
    int H = J->heads, d = r->a->cols, dk = J->whole_rows ? d : d / H; /* the columns a head adds to */
    int next = 0, T = J->offsets[J->segments]; /* rows of a seen so far, in token order (set_a: they come in order) */
    for (int b = 0; b < J->segments; b++)
        for (int t = J->offsets[b]; t < J->offsets[b + 1]; t++) {
            if (r->a->grad) kgl_prefetch_owned_row(r->a->grad, r->ia, t, T, d, task, J->tasks);
            int ra = r->ia ? r->ia[t] : t;
            bool first = J->set_a && ra == next; /* this token is the row's first: set it */
            next += ra == next;
            kgl_real *da = r->a->grad && kgl_owns_row(ra, task, J->tasks) ? r->a->grad + (size_t)ra * d : NULL;
            kgl_real *db = r->b && r->b->grad && kgl_owns_row(r->ib[t], task, J->tasks)
                               ? r->b->grad + (size_t)r->ib[t] * d : NULL;
            if (!da && !db) continue;
            const kgl_real *m = J->M + (size_t)b * (J->whole_rows ? (size_t)H * d : (size_t)d);
            for (int h = 0; h < H; h++) {
                if (J->whole_rows) { /* the weight itself (scale 1), a kgl_real: add_real_product's rounding is add_product's */
                    if (da && first && h == 0) set_real_product(da, J->W[(size_t)t * H + h], m + h * dk, dk);
                    else if (da) add_real_product(da, J->W[(size_t)t * H + h], m + h * dk, dk);
                    if (db) add_real_product(db, J->W[(size_t)t * H + h], m + h * dk, dk);
                    continue;
                }
                double w = J->scale_h[h] * J->W[(size_t)t * H + h];
                if (da && first) set_product(da + h * dk, w, m + h * dk, dk);
                else if (da) add_product(da + h * dk, w, m + h * dk, dk);
                if (db) add_product(db + h * dk, w, m + h * dk, dk);
            }
        }
}

ISA_CLONES(scatter_token_grads_owned)

/* set_a: a's gradient was claimed (claim_token_rows): each row's first token sets it */
static void scatter_token_grads(kgl_pool *pool, const kgl_token_rows *tok, const kgl_real *W, const double *scale_h,
                                const kgl_real *M, const int *offsets, int segments, int heads, bool whole_rows,
                                bool set_a)
{
    if (!tok->a->grad && !(tok->b && tok->b->grad)) return;
    scatter_job J = {tok, W, M, scale_h, offsets, segments, heads, kgl_pool_threads(pool), whole_rows, set_a};
    kgl_parallel(pool, J.tasks, 2.0 * offsets[segments] * tok->a->cols, scatter_token_grads_owned_for_isa(), &J);
}

/* The node's inputs of a segment op that reads token rows: first, second
   (a), b when there is one; and the node's indices: offsets in idx0, ia in
   idx1, ib in idx2 (b present iff ib is). */
static int push_token_rows(kgl_tensor **in, int n, const kgl_token_rows *r)
{
    in[n++] = r->a;
    if (r->b) in[n++] = r->b;
    return n;
}

static kgl_token_rows node_token_rows(const kgl_node *nd, int first)
{
    return (kgl_token_rows){nd->in[first], nd->idx1, nd->idx2 ? nd->in[first + 1] : NULL, nd->idx2};
}

static void record_token_rows(kgl_node *nd, const int *offsets, int segments, const kgl_token_rows *r)
{
    nd->idx0 = offsets;
    nd->n_idx = segments;
    nd->idx1 = r->ia;
    nd->idx2 = r->ib;
}

/* ========================================================================
 * segment_scores: S[t, h] = τ_h ⟨Q_h[b(t)], K_h[t]⟩,  τ_h = τ (alpha) or
 *   τ e^{θ_h} with θ = log_temp [1, H] (the last input).
 *   Q [B, d], K [T, d] (token rows: K[t] = Ka[ia[t]] + Kb[ib[t]]), S [T, H];
 *   offsets in idx0, B in n_idx, H in i0.
 * With G = ∂L/∂S:
 *   ∂S[t,h]/∂Q[b(t), c] = τ_h K[t, c]   ⇒ dQ_h[b] += Σ_{t ∈ b} τ_h G[t,h] K_h[t]
 *   ∂S[t,h]/∂K[t, c]    = τ_h Q[b(t), c] ⇒ dK_h[t] = τ_h G[t,h] Q_h[b(t)], added to
 *                                           dKa[ia[t]] and dKb[ib[t]] (K[t] is their sum)
 *   ∂S[t,h]/∂θ_h        = S[t, h]        ⇒ dθ_h    += Σ_t G[t,h] S[t,h]
 * ======================================================================== */
/* θ, the inputs' last after Q and the token rows (one table, or two with ib), or NULL */
static kgl_tensor *scores_theta(const kgl_node *nd)
{
    return nd->n_in == 2 + (nd->idx2 != NULL) + 1 ? nd->in[nd->n_in - 1] : NULL;
}

static void head_scales(const kgl_node *nd, int H, double *tau_h)
{
    const kgl_tensor *theta = scores_theta(nd);
    for (int h = 0; h < H; h++) tau_h[h] = theta ? nd->alpha * exp(theta->data[h]) : nd->alpha;
}

/* dQ rows of a block of segments */
INLINE void segment_scores_backward_block_body(void *ctx, int task, int worker)
{
    (void)worker;
    const segment_job *J = ctx;
    kgl_tensor *Q = J->in0, *S = J->out;
    int H = J->heads, d = Q->cols, dk = d / H, T = J->offsets[J->segments];
    for (int b = task * SEG_BLOCK, b1 = block_end(task, J->segments); b < b1; b++)
        for (int t = J->offsets[b]; t < J->offsets[b + 1]; t++) {
            prefetch_token(&J->tok, t + KGL_AHEAD, T);
            for (int h = 0; h < H; h++) {
                double g = J->tau_h[h] * S->grad[(size_t)t * H + h];
                const kgl_real *ka, *kb;
                token_parts(&J->tok, t, h * dk, &ka, &kb);
                add_token_row(Q->grad + (size_t)b * d + h * dk, g, ka, kb, dk);
            }
        }
}
ISA_CLONES(segment_scores_backward_block)

static void segment_scores_backward(kgl_node *nd)
{
    kgl_tensor *Q = nd->in[0], *S = nd->out;
    segment_job J = {Q, S, node_token_rows(nd, 1), nd->idx0, nd->n_idx, nd->i0, {0}};
    head_scales(nd, J.heads, J.tau_h);
    kgl_tensor *theta = scores_theta(nd);
    kgl_grad_settle(nd->pool, Q); /* the op claims its gradients: each input's is taken here */
    bool set_a = claim_token_rows(nd->pool, &J.tok, S->rows, Q);
    if (J.tok.b) kgl_grad_settle(nd->pool, J.tok.b);
    if (theta) kgl_grad_settle(nd->pool, theta);
    if (Q->grad)
        kgl_parallel(nd->pool, segment_blocks(J.segments), 2.0 * S->rows * Q->cols, segment_scores_backward_block_for_isa(),
                     &J);
    scatter_token_grads(nd->pool, &J.tok, S->grad, J.tau_h, Q->data, J.offsets, J.segments, J.heads, false, set_a);
    if (theta && theta->grad) { /* dθ_h: one sum over all tokens, in order */
        size_t T = (size_t)S->rows;
        for (int h = 0; h < J.heads; h++) {
            double acc = 0;
            for (size_t t = 0; t < T; t++) acc += S->grad[t * J.heads + h] * S->data[t * J.heads + h];
            theta->grad[h] += acc;
        }
    }
}

/* S rows of a block of segments */
INLINE void segment_scores_block_body(void *ctx, int task, int worker)
{
    (void)worker;
    const segment_job *J = ctx;
    const kgl_tensor *Q = J->in0;
    int H = J->heads, d = Q->cols, dk = d / H, T = J->offsets[J->segments];
    for (int b = task * SEG_BLOCK, b1 = block_end(task, J->segments); b < b1; b++)
        for (int tok = J->offsets[b]; tok < J->offsets[b + 1]; tok++) {
            prefetch_token(&J->tok, tok + KGL_AHEAD, T);
            for (int h = 0; h < H; h++) {
                const kgl_real *ka, *kb;
                token_parts(&J->tok, tok, h * dk, &ka, &kb);
                double dot = dot_token_lanes(Q->data + (size_t)b * d + h * dk, ka, kb, dk);
                J->out->data[(size_t)tok * H + h] = J->tau_h[h] * dot;
            }
        }
}
ISA_CLONES(segment_scores_block)

kgl_tensor *kgl_segment_scores(kgl_tape *t, kgl_tensor *Q, kgl_token_rows K, const int *offsets, int segments,
                               int heads, double tau, kgl_tensor *log_temp)
{
    if (heads < 1 || heads > KGL_ATTENTION_MAX_HEADS || Q->cols % heads || !K.a || Q->cols != K.a->cols ||
        Q->rows != segments)
        kgl_die("segment_scores: Q %dx%d, K %dx%d, %d segments, %d heads do not fit", Q->rows, Q->cols,
                K.a ? K.a->rows : 0, K.a ? K.a->cols : 0, segments, heads);
    if (log_temp && (log_temp->rows != 1 || log_temp->cols != heads))
        kgl_die("segment_scores: log_temp is %dx%d, expected 1x%d", log_temp->rows, log_temp->cols, heads);
    if (segments < 1) check_offsets("segment_scores", offsets, segments, 0);
    int T = offsets[segments]; /* the tokens; a has as many rows unless they are read through ia */
    check_offsets("segment_scores", offsets, segments, K.ia ? T : K.a->rows);
    check_token_rows("segment_scores", &K, T, Q->cols);
    kgl_tensor *in[4] = {Q};
    int n_in = push_token_rows(in, 1, &K);
    if (log_temp) in[n_in++] = log_temp;
    kgl_tensor *S = kgl_op_output(t, T, heads, n_in, in);
    segment_job J = {Q, S, K, offsets, segments, heads, {0}};
    for (int h = 0; h < heads; h++) J.tau_h[h] = log_temp ? tau * exp(log_temp->data[h]) : tau;
    kgl_parallel(t->pool, segment_blocks(segments), 2.0 * T * Q->cols, segment_scores_block_for_isa(), &J);
    kgl_node *nd = kgl_record(t, &kgl_op_segment_scores, S, n_in, in);
    if (nd) {
        record_token_rows(nd, offsets, segments, &K);
        nd->i0 = heads;
        nd->alpha = tau;
    }
    return S;
}

/* The check cases' segments: sizes 1 (a query alone with itself), 3 and 2;
   one segment of four; five segments of 2, 1, 4, 1, 3; and nineteen of 2,
   1, 3, 2, 1, 3, …, more than a block of SEG_BLOCK, so that a mistake at a
   block's edge fails the check. */
static const int seg_offsets_a[] = {0, 1, 4, 6}, seg_offsets_b[] = {0, 4}, seg_offsets_c[] = {0, 2, 3, 7, 8, 11};
static const int seg_offsets_d[] = {0, 2, 3, 6, 8, 9, 12, 14, 15, 18, 20, 21, 24, 26, 27, 30, 32, 33, 36, 38};
static const int *const seg_offsets[] = {seg_offsets_a, seg_offsets_b, seg_offsets_c, seg_offsets_d};
static const int seg_count[] = {3, 1, 5, 19};

/* Cases 0–3 give each layout its own token rows; cases 4 and 5 read them
   through indices (kgl_token_rows): 4 the five segments' 11 tokens from one
   table of 4 rows (rows named again and again: the backward's scatter-add),
   5 the nineteen segments' 38 tokens from the sum of two tables of 7 and 3
   rows, as the model's keys and values are read. */
#define SEGMENT_CASES 6
static int case_layout(int which) { return which < 4 ? which : which == 4 ? 2 : 3; }

static void segment_case(int which, kgl_arena *keep, kgl_check_case *c)
{
    int layout = case_layout(which);
    c->n_idx = seg_count[layout];
    c->idx0 = kgl_check_indices(keep, c->n_idx + 1, seg_offsets[layout]);
}

/* Case which's token rows [T, d] as inputs from c->inputs[c->n_inputs] on, their indices in idx1, idx2. */
static void token_rows_case(int which, int T, int d, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    int rows_a = which < 4 ? T : which == 4 ? 4 : 7, rows_b = 3;
    c->inputs[c->n_inputs++] = kgl_check_input(keep, rng, rows_a, d, 1, 0);
    if (which < 4) return;
    int ia[64], ib[64];
    for (int t = 0; t < T; t++) ia[t] = (int)kgl_rng_below(rng, (uint32_t)rows_a), ib[t] = (int)kgl_rng_below(rng, (uint32_t)rows_b);
    if (which == 4) { /* renumbered by first appearance, as the model's tables are: the backward sets a's rows (rows_in_order) */
        int number[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, next = 0;
        for (int t = 0; t < T; t++) ia[t] = number[ia[t]] >= 0 ? number[ia[t]] : (number[ia[t]] = next++);
    }
    c->idx1 = kgl_check_indices(keep, T, ia);
    if (which == 5) {
        c->inputs[c->n_inputs++] = kgl_check_input(keep, rng, rows_b, d, 1, 0);
        c->idx2 = kgl_check_indices(keep, T, ib);
    }
}

static kgl_token_rows case_token_rows(const kgl_check_case *c, int first)
{
    return (kgl_token_rows){c->inputs[first], c->idx1, c->idx2 ? c->inputs[first + 1] : NULL, c->idx2};
}

static const char *token_rows_label(int which) { return which < 4 ? "" : which == 4 ? " K=Ka[ia]" : " K=Ka[ia]+Kb[ib]"; }

static kgl_tensor *segment_scores_run(kgl_tape *t, const kgl_check_case *c)
{
    int before_theta = 2 + (c->idx2 != NULL);
    return kgl_segment_scores(t, c->inputs[0], case_token_rows(c, 1), c->idx0, c->n_idx, c->i0, c->alpha,
                              c->n_inputs > before_theta ? c->inputs[before_theta] : NULL);
}

static void segment_scores_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int d[] = {4, 3, 6, 4, 6, 4}, heads[] = {2, 1, 3, 2, 3, 2};
    segment_case(which, keep, c);
    int T = seg_offsets[case_layout(which)][c->n_idx];
    c->inputs[0] = kgl_check_input(keep, rng, c->n_idx, d[which], 1, 0);
    c->n_inputs = 1;
    token_rows_case(which, T, d[which], rng, keep, c);
    if (which != 1) c->inputs[c->n_inputs++] = kgl_check_input(keep, rng, 1, heads[which], 0.5, 0); /* θ */
    c->i0 = heads[which];
    c->alpha = 1.0 / sqrt((double)d[which] / heads[which]);
    c->run = segment_scores_run;
    snprintf(c->label, sizeof c->label, "Q%dx%d K%dx%d H%d%s%s", c->n_idx, d[which], T, d[which], heads[which],
             which != 1 ? " θ" : "", token_rows_label(which));
}

const kgl_op kgl_op_segment_scores = {"segment_scores",
                                         segment_scores_backward,
                                         {SEGMENT_CASES, segment_scores_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};

/* ========================================================================
 * segment_softmax: within segment b, for each column h,
 *   A[t, h] = exp(S[t,h] − max) / Σ_{t' ∈ b} exp(S[t',h] − max).
 * Each (segment, column) is a softmax of a vector p, whose Jacobian is
 * J = diag(p) − p pᵀ, as for softmax_rows: with g = ∂L/∂A over the segment,
 *   ds = J g,  ds_t = p_t (g_t − ⟨g, p⟩).
 * A segment of one token has p = 1 and passes no gradient (J = 1 − 1 = 0).
 * ======================================================================== */
static void segment_softmax_backward_block(void *ctx, int task, int worker)
{
    (void)worker;
    const segment_job *J = ctx;
    const kgl_tensor *A = J->out;
    kgl_tensor *S = J->in0;
    int H = J->heads;
    for (int b = task * SEG_BLOCK, b1 = block_end(task, J->segments); b < b1; b++)
        for (int h = 0; h < H; h++) {
            double gp = 0; /* ⟨g, p⟩ */
            for (int t = J->offsets[b]; t < J->offsets[b + 1]; t++) gp += A->grad[(size_t)t * H + h] * A->data[(size_t)t * H + h];
            for (int t = J->offsets[b]; t < J->offsets[b + 1]; t++) {
                size_t i = (size_t)t * H + h;
                S->grad[i] += A->data[i] * (A->grad[i] - gp);
            }
        }
}

static void segment_softmax_backward(kgl_node *nd)
{
    segment_job J = {nd->in[0], nd->out, {0}, nd->idx0, nd->n_idx, nd->out->cols, {0}};
    kgl_parallel(nd->pool, segment_blocks(J.segments), 4.0 * nd->out->rows * J.heads, segment_softmax_backward_block, &J);
}

static void segment_softmax_block(void *ctx, int task, int worker)
{
    (void)worker;
    const segment_job *J = ctx;
    const kgl_tensor *S = J->in0;
    kgl_tensor *A = J->out;
    int H = J->heads;
    for (int b = task * SEG_BLOCK, b1 = block_end(task, J->segments); b < b1; b++)
        for (int h = 0; h < H; h++) {
            int t0 = J->offsets[b], t1 = J->offsets[b + 1];
            double mx = -INFINITY, z = 0;
            for (int tok = t0; tok < t1; tok++) mx = fmax(mx, S->data[(size_t)tok * H + h]);
            for (int tok = t0; tok < t1; tok++) {
                size_t i = (size_t)tok * H + h;
                A->data[i] = exp(S->data[i] - mx);
                z += A->data[i];
            }
            for (int tok = t0; tok < t1; tok++) A->data[(size_t)tok * H + h] /= z;
        }
}

kgl_tensor *kgl_segment_softmax(kgl_tape *t, kgl_tensor *S, const int *offsets, int segments)
{
    check_offsets("segment_softmax", offsets, segments, S->rows);
    int H = S->cols;
    kgl_tensor *A = kgl_op_output(t, S->rows, H, 1, &S);
    segment_job J = {S, A, {0}, offsets, segments, H, {0}};
    /* an exp is some tens of operations */
    kgl_parallel(t->pool, segment_blocks(segments), 30.0 * S->rows * H, segment_softmax_block, &J);
    kgl_node *nd = kgl_record(t, &kgl_op_segment_softmax, A, 1, &S);
    if (nd) {
        nd->idx0 = offsets;
        nd->n_idx = segments;
    }
    return A;
}

static kgl_tensor *segment_softmax_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_segment_softmax(t, c->inputs[0], c->idx0, c->n_idx);
}

static void segment_softmax_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int heads[] = {2, 1, 3, 2};
    segment_case(which, keep, c);
    int T = seg_offsets[which][c->n_idx];
    c->inputs[0] = kgl_check_input(keep, rng, T, heads[which], 1, 0);
    c->n_inputs = 1;
    c->run = segment_softmax_run;
    snprintf(c->label, sizeof c->label, "%dx%d, %d segment%s", T, heads[which], c->n_idx, c->n_idx == 1 ? "" : "s");
}

const kgl_op kgl_op_segment_softmax = {"segment_softmax",
                                          segment_softmax_backward,
                                          {4, segment_softmax_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, false};

/* ========================================================================
 * segment_weighted_sum: O[b, c] = Σ_{t ∈ b} A[t, h(c)] V[t, c],  h(c) = c / dk
 *   A [T, H], V [T, d] (token rows: V[t] = Va[ia[t]] + Vb[ib[t]]), O [B, d].
 *   With G = ∂L/∂O:
 *   dA[t, h] += ⟨G_h[b(t)], V_h[t]⟩,
 *   dV[t, c]  = A[t, h(c)] G[b(t), c], added to dVa[ia[t]] and dVb[ib[t]].
 * ======================================================================== */
/* dA rows of a block of segments */
static void segment_weighted_sum_backward_block(void *ctx, int task, int worker)
{
    (void)worker;
    const segment_job *J = ctx;
    kgl_tensor *A = J->in0;
    const kgl_tensor *O = J->out;
    int H = J->heads, d = O->cols, dk = d / H;
    for (int b = task * SEG_BLOCK, b1 = block_end(task, J->segments); b < b1; b++) {
        const kgl_real *g = O->grad + (size_t)b * d;
        for (int t = J->offsets[b]; t < J->offsets[b + 1]; t++)
            for (int h = 0; h < H; h++) {
                const kgl_real *va, *vb;
                token_parts(&J->tok, t, h * dk, &va, &vb);
                A->grad[(size_t)t * H + h] += dot_token(g + h * dk, va, vb, dk);
            }
    }
}

/* The backward of an op on weights A [T, H] and token rows (the weighted
   sum, the head sums): dA by weight_grads, a block of segments a task; the
   rows' gradient, each token's weights times its segment's output gradient,
   scattered into the rows it read (each head's own columns, or whole rows). */
static void weights_and_rows_backward(kgl_node *nd, task_fn weight_grads, bool whole_rows)
{
    kgl_tensor *A = nd->in[0], *out = nd->out;
    segment_job J = {A, out, node_token_rows(nd, 1), nd->idx0, nd->n_idx, A->cols, {0}};
    kgl_grad_settle(nd->pool, A); /* the op claims its gradients: each input's is taken here */
    bool set_a = claim_token_rows(nd->pool, &J.tok, A->rows, A);
    if (J.tok.b) kgl_grad_settle(nd->pool, J.tok.b);
    if (A->grad) kgl_parallel(nd->pool, segment_blocks(J.segments), 2.0 * A->rows * out->cols, weight_grads, &J);
    double ones[KGL_ATTENTION_MAX_HEADS];
    for (int h = 0; h < J.heads; h++) ones[h] = 1.0;
    scatter_token_grads(nd->pool, &J.tok, A->data, ones, out->grad, J.offsets, J.segments, J.heads, whole_rows, set_a);
}

static void segment_weighted_sum_backward(kgl_node *nd)
{
    weights_and_rows_backward(nd, segment_weighted_sum_backward_block, false);
}

/* O rows of a block of segments, each a sum over its tokens in order */
static void segment_weighted_sum_block(void *ctx, int task, int worker)
{
    (void)worker;
    const segment_job *J = ctx;
    const kgl_tensor *A = J->in0;
    int H = J->heads, d = J->out->cols, dk = d / H;
    for (int b = task * SEG_BLOCK, b1 = block_end(task, J->segments); b < b1; b++) {
        kgl_real *o = J->out->data + (size_t)b * d;
        memset(o, 0, (size_t)d * sizeof *o);
        for (int tok = J->offsets[b]; tok < J->offsets[b + 1]; tok++)
            for (int h = 0; h < H; h++) {
                double a = A->data[(size_t)tok * H + h];
                const kgl_real *va, *vb;
                token_parts(&J->tok, tok, h * dk, &va, &vb);
                add_token_row(o + h * dk, a, va, vb, dk);
            }
    }
}

kgl_tensor *kgl_segment_weighted_sum(kgl_tape *t, kgl_tensor *A, kgl_token_rows V, const int *offsets, int segments)
{
    if (!V.a || A->cols < 1 || A->cols > KGL_ATTENTION_MAX_HEADS || V.a->cols % A->cols)
        kgl_die("segment_weighted_sum: weights %dx%d and values %dx%d do not fit", A->rows, A->cols, V.a ? V.a->rows : 0,
                V.a ? V.a->cols : 0);
    check_offsets("segment_weighted_sum", offsets, segments, A->rows);
    if (!V.ia && V.a->rows != A->rows)
        kgl_die("segment_weighted_sum: weights %dx%d and values %dx%d do not fit", A->rows, A->cols, V.a->rows, V.a->cols);
    check_token_rows("segment_weighted_sum", &V, A->rows, V.a->cols);
    kgl_tensor *in[3] = {A};
    int n_in = push_token_rows(in, 1, &V);
    kgl_tensor *O = kgl_op_output(t, segments, V.a->cols, n_in, in);
    segment_job J = {A, O, V, offsets, segments, A->cols, {0}};
    kgl_parallel(t->pool, segment_blocks(segments), 2.0 * A->rows * V.a->cols, segment_weighted_sum_block, &J);
    kgl_node *nd = kgl_record(t, &kgl_op_segment_weighted_sum, O, n_in, in);
    if (nd) record_token_rows(nd, offsets, segments, &V);
    return O;
}

static kgl_tensor *segment_weighted_sum_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_segment_weighted_sum(t, c->inputs[0], case_token_rows(c, 1), c->idx0, c->n_idx);
}

/* Case which of an op on weights A [T, H] and token rows [T, width] (named
   `rows` in the label: V or X): the segments, the inputs and the label. */
static void weights_and_rows_case(int which, int width, int heads, char rows, kgl_rng *rng, kgl_arena *keep,
                                  kgl_check_case *c)
{
    segment_case(which, keep, c);
    int T = seg_offsets[case_layout(which)][c->n_idx];
    c->inputs[0] = kgl_check_input(keep, rng, T, heads, 1, 0);
    c->n_inputs = 1;
    token_rows_case(which, T, width, rng, keep, c);
    char read[32] = "";
    if (which == 4) snprintf(read, sizeof read, " %c=%ca[ia]", rows, rows);
    if (which == 5) snprintf(read, sizeof read, " %c=%ca[ia]+%cb[ib]", rows, rows, rows);
    snprintf(c->label, sizeof c->label, "A%dx%d %c%dx%d, %d segment%s%s", T, heads, rows, T, width, c->n_idx,
             c->n_idx == 1 ? "" : "s", read);
}

static void segment_weighted_sum_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    static const int d[] = {4, 3, 6, 4, 6, 4}, heads[] = {2, 1, 3, 2, 3, 2};
    weights_and_rows_case(which, d[which], heads[which], 'V', rng, keep, c);
    c->run = segment_weighted_sum_run;
}

const kgl_op kgl_op_segment_weighted_sum = {"segment_weighted_sum",
                                               segment_weighted_sum_backward,
                                               {SEGMENT_CASES, segment_weighted_sum_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};

/* ========================================================================
 * segment_head_sums: Z[b, h·w + c] = Σ_{t ∈ b} A[t, h] X[t, c]
 *   A [T, H], X [T, w] (token rows: X[t] = Xa[ia[t]] + Xb[ib[t]]), Z [B, H·w]:
 *   each head's weighted sum of the tokens' whole rows. Attention's output is
 *   Σ_t A[t, h] (X[t] Wv)_h = (Σ_t A[t, h] X[t]) Wv_h, so the layer sums the
 *   tokens' embeddings first and projects the B sums (matmul_heads), where
 *   projecting first costs a product over every distinct token row.
 *   With G = ∂L/∂Z, G_h[b] its head-h block of w columns:
 *   dA[t, h] += ⟨G_h[b(t)], X[t]⟩,
 *   dX[t, c]  = Σ_h A[t, h] G_h[b(t), c], added to dXa[ia[t]] and dXb[ib[t]].
 * ======================================================================== */
/* ⟨G_h[b], X[t]⟩ for every head h at once (G_h the w-wide blocks of g):
   each dot product runs as DOT_LANES running sums, column c in lane
   c mod DOT_LANES, and the lanes are added in order at the end (the tail
   columns after them), so the compiler can keep the lanes in one vector
   register; a fixed order, the same for any number of threads. */
#define DOT_LANES 16
INLINE void dot_heads(const kgl_real *g, int H, const kgl_real *xa, const kgl_real *xb, int w, double *dot)
{
    kgl_real acc[KGL_ATTENTION_MAX_HEADS][DOT_LANES], x[DOT_LANES];
    for (int h = 0; h < H; h++)
        for (int l = 0; l < DOT_LANES; l++) acc[h][l] = 0;
    int c0 = 0;
    for (; c0 + DOT_LANES <= w; c0 += DOT_LANES) {
        for (int l = 0; l < DOT_LANES; l++) x[l] = xb ? (kgl_real)(xa[c0 + l] + xb[c0 + l]) : xa[c0 + l];
        for (int h = 0; h < H; h++)
            for (int l = 0; l < DOT_LANES; l++) {
                kgl_real product = g[(size_t)h * w + c0 + l] * x[l];
                acc[h][l] += product;
            }
    }
    for (int h = 0; h < H; h++) {
        double sum = 0;
        for (int l = 0; l < DOT_LANES; l++) sum += acc[h][l];
        dot[h] = sum + dot_token(g + (size_t)h * w + c0, xa + c0, xb ? xb + c0 : NULL, w - c0);
    }
}

/* dA rows of a block of segments */
INLINE void segment_head_sums_backward_block_body(void *ctx, int task, int worker)
{
    (void)worker;
    const segment_job *J = ctx;
    kgl_tensor *A = J->in0;
    int H = J->heads, w = J->tok.a->cols;
    double dot[KGL_ATTENTION_MAX_HEADS];
    int T = J->offsets[J->segments];
    for (int b = task * SEG_BLOCK, b1 = block_end(task, J->segments); b < b1; b++) {
        const kgl_real *g = J->out->grad + (size_t)b * H * w;
        for (int t = J->offsets[b]; t < J->offsets[b + 1]; t++) {
            prefetch_token(&J->tok, t + KGL_AHEAD, T);
            const kgl_real *xa, *xb;
            token_parts(&J->tok, t, 0, &xa, &xb);
            dot_heads(g, H, xa, xb, w, dot);
            for (int h = 0; h < H; h++) A->grad[(size_t)t * H + h] += dot[h];
        }
    }
}

ISA_CLONES(segment_head_sums_backward_block)

static void segment_head_sums_backward(kgl_node *nd)
{
    weights_and_rows_backward(nd, segment_head_sums_backward_block_for_isa(), true);
}

/* Z rows of a block of segments, each head's sum over its tokens in order */
INLINE void segment_head_sums_block_body(void *ctx, int task, int worker)
{
    (void)worker;
    const segment_job *J = ctx;
    const kgl_tensor *A = J->in0;
    int H = J->heads, w = J->tok.a->cols, T = J->offsets[J->segments];
    for (int b = task * SEG_BLOCK, b1 = block_end(task, J->segments); b < b1; b++) {
        kgl_real *z = J->out->data + (size_t)b * H * w;
        memset(z, 0, (size_t)H * w * sizeof *z);
        for (int tok = J->offsets[b]; tok < J->offsets[b + 1]; tok++) {
            prefetch_token(&J->tok, tok + KGL_AHEAD, T);
            const kgl_real *xa, *xb;
            token_parts(&J->tok, tok, 0, &xa, &xb);
            for (int h = 0; h < H; h++) { /* z_h += a x in kgl_real: a is one, so no round trip through double */
                kgl_real a = A->data[(size_t)tok * H + h], *zh = z + (size_t)h * w;
                if (xb)
                    for (int c = 0; c < w; c++) {
                        kgl_real product = a * (kgl_real)(xa[c] + xb[c]);
                        zh[c] += product;
                    }
                else
                    add_real_product(zh, a, xa, w);
            }
        }
    }
}

ISA_CLONES(segment_head_sums_block)

kgl_tensor *kgl_segment_head_sums(kgl_tape *t, kgl_tensor *A, kgl_token_rows X, const int *offsets, int segments)
{
    if (!X.a || A->cols < 1 || A->cols > KGL_ATTENTION_MAX_HEADS || (!X.ia && X.a->rows != A->rows))
        kgl_die("segment_head_sums: weights %dx%d and rows %dx%d do not fit", A->rows, A->cols, X.a ? X.a->rows : 0,
                X.a ? X.a->cols : 0);
    check_offsets("segment_head_sums", offsets, segments, A->rows);
    check_token_rows("segment_head_sums", &X, A->rows, X.a->cols);
    kgl_tensor *in[3] = {A};
    int n_in = push_token_rows(in, 1, &X);
    kgl_tensor *Z = kgl_op_output(t, segments, A->cols * X.a->cols, n_in, in);
    segment_job J = {A, Z, X, offsets, segments, A->cols, {0}};
    kgl_parallel(t->pool, segment_blocks(segments), 2.0 * A->rows * Z->cols, segment_head_sums_block_for_isa(), &J);
    kgl_node *nd = kgl_record(t, &kgl_op_segment_head_sums, Z, n_in, in);
    if (nd) record_token_rows(nd, offsets, segments, &X);
    return Z;
}

static kgl_tensor *segment_head_sums_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_segment_head_sums(t, c->inputs[0], case_token_rows(c, 1), c->idx0, c->n_idx);
}

static void segment_head_sums_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    /* rows of 17 and 20 columns: dA's dot products run in lanes of
       DOT_LANES, then the rest (two heads: with four, the finite
       differences of the 20-column case lose 1e-6) */
    static const int w[] = {3, 2, 5, 17, 3, 20}, heads[] = {2, 1, 3, 2, 3, 2};
    weights_and_rows_case(which, w[which], heads[which], 'X', rng, keep, c);
    c->run = segment_head_sums_run;
}

const kgl_op kgl_op_segment_head_sums = {"segment_head_sums",
                                            segment_head_sums_backward,
                                            {SEGMENT_CASES, segment_head_sums_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};


/* ========================================================================
 * gather_sum_rows: Y[t] = A[ia[t]] + B[ib[t]]   (a token's key: its entity's
 *   projection plus its relation's; one pass instead of two gathers and an add)
 *   A [na, d], B [nb, d], Y [T, d]; ia in idx0, ib in idx1, T in n_idx.
 *   ∂Y[t]/∂A[ia[t]] = ∂Y[t]/∂B[ib[t]] = I  ⇒  dA[ia[t]] += G[t], dB[ib[t]] += G[t]
 *   (a scatter-add: rows named twice get both, in token order).
 * Forward, tokens go in blocks of GATHER_ROWS as tasks. Backward, a row of
 * dA or dB may be named by tokens of any block, so a task owns rows instead
 * (kgl_owns_row: blocks of rows dealt round-robin, one task a thread), walks
 * every token in order and adds those whose row it owns: each element gets
 * its additions in token order however the rows are dealt, and each token is
 * read by one thread (A and B may be one tensor: a row's owner is the same
 * for both, so a token's two additions to one row keep their order).
 * ======================================================================== */
#define GATHER_ROWS 256

typedef struct gather_job {
    kgl_tensor *A, *B, *Y;
    const int *ia, *ib;
    int n, tasks; /* tokens; backward: the tasks that share the rows of A and B (kgl_owns_row) */
    bool set_a;   /* backward: A's gradient claimed, its rows in order (rows_in_order): a row's first token sets it */
} gather_job;

INLINE void gather_sum_rows_backward_owned_body(void *ctx, int task, int worker)
{
    (void)worker;
    const gather_job *J = ctx;
    int d = J->Y->cols, next = 0;
    for (int t = 0; t < J->n; t++) {
        if (J->A->grad) kgl_prefetch_owned_row(J->A->grad, J->ia, t, J->n, d, task, J->tasks);
        const kgl_real *g = J->Y->grad + (size_t)t * d;
        bool first = J->set_a && J->ia[t] == next; /* the row's first token: it sets the row */
        next += J->ia[t] == next;
        if (J->A->grad && kgl_owns_row(J->ia[t], task, J->tasks)) {
            kgl_real *da = J->A->grad + (size_t)J->ia[t] * d;
            if (first)
                for (int c = 0; c < d; c++) da[c] = (kgl_real)0 + g[c];
            else
                for (int c = 0; c < d; c++) da[c] += g[c];
        }
        if (J->B->grad && kgl_owns_row(J->ib[t], task, J->tasks)) {
            kgl_real *db = J->B->grad + (size_t)J->ib[t] * d;
            for (int c = 0; c < d; c++) db[c] += g[c];
        }
    }
}
ISA_CLONES(gather_sum_rows_backward_owned)

static void gather_sum_rows_backward(kgl_node *nd)
{
    gather_job J = {nd->in[0], nd->in[1], nd->out, nd->idx0, nd->idx1, nd->n_idx, kgl_pool_threads(nd->pool), false};
    kgl_token_rows rows = {J.A, J.ia, J.B, J.ib}; /* the op claims its gradients: A's as a scatter's table, B's zeroed */
    J.set_a = claim_token_rows(nd->pool, &rows, J.n, NULL);
    kgl_grad_settle(nd->pool, J.B);
    kgl_parallel(nd->pool, J.tasks, 2.0 * J.n * J.Y->cols, gather_sum_rows_backward_owned_for_isa(), &J);
}

INLINE void gather_sum_rows_block_body(void *ctx, int task, int worker)
{
    (void)worker;
    const gather_job *J = ctx;
    int d = J->Y->cols, k1 = (int)span_end((size_t)task * GATHER_ROWS, GATHER_ROWS, (size_t)J->n);
    for (int k = task * GATHER_ROWS; k < k1; k++) {
        if (k + KGL_AHEAD < J->n) kgl_prefetch_row(J->A->data + (size_t)J->ia[k + KGL_AHEAD] * d, (size_t)d * sizeof(kgl_real));
        const kgl_real *a = J->A->data + (size_t)J->ia[k] * d, *b = J->B->data + (size_t)J->ib[k] * d;
        kgl_real *y = J->Y->data + (size_t)k * d;
        for (int c = 0; c < d; c++) y[c] = a[c] + b[c];
    }
}
ISA_CLONES(gather_sum_rows_block)

kgl_tensor *kgl_gather_sum_rows(kgl_tape *t, kgl_tensor *A, const int *ia, kgl_tensor *B, const int *ib, int n)
{
    if (A->cols != B->cols) kgl_die("gather_sum_rows: %dx%d and %dx%d rows differ in width", A->rows, A->cols, B->rows, B->cols);
    for (int k = 0; k < n; k++)
        if (ia[k] < 0 || ia[k] >= A->rows || ib[k] < 0 || ib[k] >= B->rows)
            kgl_die("gather_sum_rows: row %d names %d of %d and %d of %d", k, ia[k], A->rows, ib[k], B->rows);
    kgl_tensor *in[2] = {A, B};
    kgl_tensor *Y = kgl_op_output(t, n, A->cols, 2, in);
    gather_job J = {A, B, Y, ia, ib, n, 1, false};
    kgl_parallel(t->pool, (n + GATHER_ROWS - 1) / GATHER_ROWS, 1.0 * n * A->cols, gather_sum_rows_block_for_isa(), &J);
    kgl_node *nd = kgl_record(t, &kgl_op_gather_sum_rows, Y, 2, in);
    if (nd) {
        nd->idx0 = ia;
        nd->idx1 = ib;
        nd->n_idx = n;
    }
    return Y;
}

static kgl_tensor *gather_sum_rows_run(kgl_tape *t, const kgl_check_case *c)
{
    return kgl_gather_sum_rows(t, c->inputs[0], c->idx0, c->inputs[1], c->idx1, c->n_idx);
}

static void gather_sum_rows_case(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c)
{
    /* rows named several times (scatter-add), one row, A and B of other
       heights; and 300 tokens, more than a block of GATHER_ROWS, so that a
       mistake at a block's edge fails (the backward's rows owned by tasks
       come with threads: training_is_the_same_bits_for_any_thread_count deals them) */
    static const int ia_a[] = {0, 1, 0, 2, 1}, ib_a[] = {0, 0, 1, 1, 0}; /* A's rows in order (the backward sets them) */
    static const int ia_b[] = {0}, ib_b[] = {3}; /* A's rows in order, row 1 never named: zeroed, not claimed */
    static const int ia_c[] = {0, 3, 3, 1, 0, 2}, ib_c[] = {1, 1, 0, 1, 0, 1};
    static const int n[] = {5, 1, 6, 300}, a_rows[] = {3, 2, 4, 5}, b_rows[] = {2, 4, 2, 3}, d[] = {3, 4, 2, 6};
    int ia_d[300], ib_d[300];
    for (int k = 0; k < 300 && which == 3; k++) ia_d[k] = (int)kgl_rng_below(rng, 5), ib_d[k] = (int)kgl_rng_below(rng, 3);
    const int *ia[] = {ia_a, ia_b, ia_c, ia_d}, *ib[] = {ib_a, ib_b, ib_c, ib_d};
    c->inputs[0] = kgl_check_input(keep, rng, a_rows[which], d[which], 1, 0);
    c->inputs[1] = kgl_check_input(keep, rng, b_rows[which], d[which], 1, 0);
    c->n_inputs = 2;
    c->idx0 = kgl_check_indices(keep, n[which], ia[which]);
    c->idx1 = kgl_check_indices(keep, n[which], ib[which]);
    c->n_idx = n[which];
    c->run = gather_sum_rows_run;
    snprintf(c->label, sizeof c->label, "A%dx%d[%d] + B%dx%d", a_rows[which], d[which], n[which], b_rows[which], d[which]);
}

const kgl_op kgl_op_gather_sum_rows = {"gather_sum_rows",
                                       gather_sum_rows_backward,
                                       {4, gather_sum_rows_case, KGL_DEFAULT_TOL, KGL_DEFAULT_TOL_REASON, KGL_F32_DEFAULT_TOL, KGL_F32_DEFAULT_REASON}, true};
