/* layer.c — the layer: one forward, kgl_layer_forward, from the questions
 * asked to the head states C, in each context (README, "The model,
 * exactly"). The loss that reads C out is loss.c's; the neighbourhoods the
 * graph context attends over are graph.c's.
 *
 *   X = E                                  entity embeddings [n, d]
 *   Q = X Wq, K = X Wk, V = X Wv           [n, d]
 *   per head h (columns h·dk … (h+1)·dk):
 *     S_h = τ Q_h K_hᵀ                     [n, n]  where head h, at entity i, scores j
 *     A_h = softmax_rows(S_h)              [n, n]  where it looks
 *   O = [A_0 V_0 | … | A_{H−1} V_{H−1}]    [n, d]
 *   Y = LN(X + O Wo)                       residual, then layer norm
 *   C = Y, or LN(Y + GELU(Y W1 + b1) W2 + b2) with the FFN
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"
#include "engine/kernel.h"
#include "internal.h"

static void full_context_states(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg, bool need_logits,
                                kgl_forward *out);
static void neighbourhood_states(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg,
                                 const kgl_neighbourhood *nb, const int *asked, kgl_forward *out);
static void every_entity_graph_states(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg,
                                      kgl_forward *out);

/* ---- the one entry point ------------------------------------------------------ */

void kgl_layer_forward(const kgl_model *m, kgl_tape *t, const kgl_questions *q, const kgl_regularisers *reg,
                       kgl_forward *out)
{
    if (m->cfg.context != KGL_CONTEXT_GRAPH) { /* every entity's state; question k reads row entity[k] */
        full_context_states(m, t, reg, q && q->keep_logits, out);
        out->state_row = q ? q->entity : NULL;
        return;
    }
    if (!q) { /* every entity's state, by evaluation's rule */
        every_entity_graph_states(m, t, reg, out);
        return;
    }
    const kgl_neighbourhood *nb = q->neighbourhood;
    if (!nb) { /* the fixed rule, leaving out what each question must not see */
        kgl_neighbourhood *fixed = kgl_model_neighbourhood_alloc(m, &t->arena, q->n);
        kgl_neighbourhood_fixed(fixed, q->entity, q->rel, q->tail, q->n, q->all_answers);
        nb = fixed;
    }
    if (nb->n != q->n) kgl_die("--context graph: %d neighbourhoods for %d examples", nb->n, q->n);
    int *identity = kgl_arena_alloc(&t->arena, (size_t)(q->n ? q->n : 1) * sizeof(int));
    for (int k = 0; k < q->n; k++) identity[k] = k;
    neighbourhood_states(m, t, reg, nb, q->rel, out); /* one state per question */
    out->state_row = identity;
}

void kgl_model_context(const kgl_model *m, kgl_tape *t, kgl_forward *out) { kgl_layer_forward(m, t, NULL, NULL, out); }

/* With --qk-norm: each head's block of columns of X layer-normalised (the
   head's own mean and variance) with the shared gamma and beta. */
static kgl_tensor *normalise_heads(const kgl_model *m, kgl_tape *t, kgl_tensor *X, kgl_tensor *gamma, kgl_tensor *beta)
{
    return kgl_layernorm_heads(t, X, m->cfg.heads, gamma, beta); /* each head's d_k columns on their own */
}

/* Whether the attention runs as the one fused op (kgl_attention) or as its
   composition from matmul_nt, scale, softmax_rows and matmul: the same maths,
   but only the composition keeps each head's logits S_h as a tensor with a
   gradient, which head supervision reads, and only it has the per-head
   switches (attention dropout, ablation). */
static bool use_fused_attention(const kgl_model *m, double p_attn, bool need_logits)
{
    if (m->composed_attention || need_logits || p_attn > 0) return false;
    for (int h = 0; h < m->cfg.heads; h++)
        if (m->ablate[h]) return false;
    return true;
}

static kgl_tensor *attention_layer(const kgl_model *m, int l, kgl_tape *t, kgl_tensor *X, double p, double p_attn,
                                   double p_layer, kgl_rng *rng, bool need_logits, kgl_forward *out);
static kgl_tensor *finish_layer(const kgl_model *m, const kgl_block *L, kgl_tape *t, kgl_tensor *X, kgl_tensor *O,
                                double p, double p_layer, kgl_rng *rng);

/* ---- the full context (and none) --------------------------------------------
 * Every entity's state: each attends over every entity (--context full), or
 * is its embedding (--context none, no layer). Training-time regularisers
 * (NULL: none, as at evaluation): dropout masks are drawn from reg->rng in the
 * order the forward meets them: X, then layer by layer each head's attention
 * weights, the attention output, the FFN output; then (in the loss) the
 * per-example head states. A stack of layers
   (--layers L) applies the layer to its own output: C⁽⁰⁾ = X, C⁽ˡ⁺¹⁾ =
   layer_l(C⁽ˡ⁾), C = C⁽ᴸ⁾. What `out` records of the attention (Q, K, the
   weights and logits, the head outputs) is the first layer's: it looks at the
   entities themselves, which is what head supervision reads; every layer's
   weights are in layer_attn (kgl heads shows each layer's specialisation),
   its logits or the fused attention's measurements in layer_logits_attn and
   layer_attn_stats (the log's diagnostics of each layer). */
static void full_context_states(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg, bool need_logits,
                                kgl_forward *out)
{
    memset(out, 0, sizeof *out);
    kgl_rng *rng = reg ? reg->rng : NULL;
    double p = reg ? reg->dropout : 0, p_attn = reg ? reg->attn_dropout : 0, p_layer = reg ? reg->layer_dropout : 0;

    kgl_tensor *X = kgl_dropout(t, m->entity_emb, p, rng); /* E itself when p = 0 */
    if (m->cfg.context == KGL_CONTEXT_NONE) { /* no layer: the states are the embeddings */
        out->context = X;
        return;
    }
    for (int l = 0; l < m->cfg.layers; l++) {
        kgl_forward deeper = {0}; /* a deeper layer's records: its weights, logits and measurements kept below */
        X = attention_layer(m, l, t, X, p, p_attn, p_layer, rng, need_logits && l == 0, l == 0 ? out : &deeper);
        memcpy(out->layer_attn[l], l == 0 ? out->attn : deeper.attn, sizeof out->attn);
        memcpy(out->layer_logits_attn[l], l == 0 ? out->logits_attn : deeper.logits_attn, sizeof out->logits_attn);
        out->layer_attn_stats[l] = l == 0 ? out->attn_stats : deeper.attn_stats;
    }
    out->context = X;
}

/* Layer l on the rows of X: multi-head self-attention, residual, layer norm,
   the FFN when there is one. Records its attention into `out`. */
static kgl_tensor *attention_layer(const kgl_model *m, int l, kgl_tape *t, kgl_tensor *X, double p, double p_attn,
                                   double p_layer, kgl_rng *rng, bool need_logits, kgl_forward *out)
{
    const kgl_config *c = &m->cfg;
    const kgl_block *L = &m->layer[l];
    int H = c->heads, dk = c->dim / H;
    double tau = kgl_config_tau(c);
    kgl_tensor *Q = kgl_matmul(t, X, L->wq);
    kgl_tensor *K = kgl_matmul(t, X, L->wk);
    kgl_tensor *V = kgl_matmul(t, X, L->wv);
    out->q = Q;
    out->k = K;
    if (use_fused_attention(m, p_attn, need_logits)) {
        if (c->qk_norm) { /* each head's rows normalised, as in the composition below */
            Q = normalise_heads(m, t, Q, L->qn_gamma, L->qn_beta);
            K = normalise_heads(m, t, K, L->kn_gamma, L->kn_beta);
        }
        bool keep = t->recording || t->keep_attention; /* a training step keeps them for its diagnostics */
        kgl_tensor *views = keep ? kgl_arena_alloc(&t->arena, (size_t)H * sizeof *views) : NULL;
        kgl_tensor *O = kgl_attention(t, Q, K, V, H, tau, c->learn_temperature ? L->log_temperature : NULL, views,
                                      m->measure_attention ? &out->attn_stats : NULL);
        for (int h = 0; h < H; h++) out->attn[h] = keep ? &views[h] : NULL;
        return finish_layer(m, L, t, X, O, p, p_layer, rng);
    }
    for (int h = 0; h < H; h++) {
        kgl_tensor *Qh = H > 1 ? kgl_slice_cols(t, Q, h * dk, dk) : Q;
        kgl_tensor *Kh = H > 1 ? kgl_slice_cols(t, K, h * dk, dk) : K;
        kgl_tensor *Vh = H > 1 ? kgl_slice_cols(t, V, h * dk, dk) : V;
        if (c->qk_norm) {
            Qh = kgl_layernorm(t, Qh, L->qn_gamma, L->qn_beta);
            Kh = kgl_layernorm(t, Kh, L->kn_gamma, L->kn_beta);
        }
        kgl_tensor *S = kgl_matmul_nt(t, Qh, Kh);
        if (tau != 1.0) S = kgl_scale(t, S, tau);
        if (c->learn_temperature) S = kgl_scale_exp(t, S, L->log_temperature, h);
        kgl_tensor *A = kgl_softmax_rows(t, S, (kgl_mask){KGL_MASK_NONE, NULL});
        out->logits_attn[h] = S;
        out->attn[h] = A;
        out->head_out[h] = kgl_matmul(t, kgl_dropout(t, A, p_attn, rng), Vh);
        if (m->ablate[h] && l == 0) { /* a head of the first layer switched off: its output is replaced by zeros */
            kgl_tensor *zero = kgl_tensor_new(t, out->head_out[h]->rows, out->head_out[h]->cols, false);
            memset(zero->data, 0, kgl_numel(zero) * sizeof(kgl_real));
            out->head_out[h] = zero;
        }
    }
    kgl_tensor *O = H > 1 ? kgl_concat_cols(t, H, out->head_out) : out->head_out[0];
    return finish_layer(m, L, t, X, O, p, p_layer, rng);
}

/* The rows of Y, each kept whole or dropped whole (a dropout mask of rows:
   keep[i] = uniform >= p, one draw a row, in order), through the dropout op. */
static kgl_tensor *drop_rows(kgl_tape *t, kgl_tensor *Y, double p, kgl_rng *rng)
{
    int rows = Y->rows, cols = Y->cols;
    unsigned char *keep = kgl_arena_alloc(&t->arena, kgl_numel(Y) ? kgl_numel(Y) : 1);
    for (int i = 0; i < rows; i++) memset(keep + (size_t)i * cols, kgl_rng_uniform(rng) >= p, (size_t)cols);
    return kgl_dropout_mask(t, Y, keep, p);
}

/* After the attention: U = X + O Wo, Y = LN(U), and the FFN when there is one;
   X + Y with --outer-residual. */
static kgl_tensor *finish_layer(const kgl_model *m, const kgl_block *L, kgl_tape *t, kgl_tensor *X, kgl_tensor *O,
                                double p, double p_layer, kgl_rng *rng)
{
    kgl_tensor *U = kgl_add(t, X, kgl_dropout(t, kgl_matmul(t, O, L->wo), p, rng));
    kgl_tensor *Y = kgl_layernorm(t, U, L->ln1_gamma, L->ln1_beta);
    if (m->cfg.ffn > 0) {
        kgl_tensor *Z = kgl_add(t, kgl_matmul(t, Y, L->ffn_w1), L->ffn_b1);
        kgl_tensor *F = kgl_add(t, kgl_matmul(t, kgl_gelu(t, Z), L->ffn_w2), L->ffn_b2);
        F = kgl_dropout(t, F, p, rng);
        Y = kgl_layernorm(t, kgl_add(t, Y, F), L->ln2_gamma, L->ln2_beta);
    }
    /* --outer-residual: the layer's input kept beside its normalised output,
       x + Y. The layer norm gives every row the same scale (γ, β); the
       readout's score of a question is then as confident for a hub as for a
       rare entity, where the embedding alone (the baseline) can grow or
       shrink a row. Adding x back returns that freedom and keeps the
       layer's say: ∂(x + Y)/∂x = I + ∂Y/∂x, so x's gradient is the
       output's plus what flows back through the layer.
       --layer-dropout p (training): a row's whole term Y dropped with
       probability p, one draw a row (the stream's next draws, after this
       layer's other masks), so that row's state is x alone, the baseline's
       (built so that questions would train their entity's row as the
       baseline does, the row head questions read as a candidate; on
       FB15k-237 it cost at every p tried: data/report/large.md); kept rows
       are x + Y / (1 − p), the dropout op's inverted scaling, so C's
       expectation is x + Y. */
    if (m->cfg.outer_residual) {
        if (p_layer > 0 && rng) Y = drop_rows(t, Y, p_layer, rng);
        Y = kgl_add(t, X, Y);
    }
    return Y;
}

/* ---- the neighbourhood context (--context graph) ------------------------------
 * Segment b of the neighbourhoods is example b's query entity i (token 0)
 * and its sampled edges (r', j). A token is x = E[j] + P[r'] (P the context's
 * relation rows; the entity itself has the row 2m), so keys and values see
 * both the neighbour and how it is linked. Only the query token asks:
 *   x_b = E[i] + P[2m],  q_b = x_b Wq
 *   K[t] = x_t Wk = E[j] Wk + P[r'] Wk,  V[t] = x_t Wv = E[j] Wv + P[r'] Wv
 *   S[t, h] = τ_h ⟨q_b,h, K_h[t]⟩,  A = softmax within each segment
 *   o_b = Σ_t A[t, h] V_h[t] per head,  C[b] = LN(x_b + o_b Wo) (+ FFN), as finish_layer
 * With --query-relation the query token also carries the asked relation r_b
 * (a row of its own parameter Pq, so the edges' rows keep their meaning):
 *   x_b = E[i] + P[2m] + Pq[r_b]
 * so that which edges the query attends to, and the state, depend on the
 * question; a state is then one per (entity, relation) query, not per entity.
 * With --relation-token the asked relation is also a token of the segment,
 * after the entity's own: x = P[2m + 1 + r_b] (no entity: the zero slot),
 * so the question can attend to what it asks, its value added to o_b (the
 * sequence (h, r) CoKE reads, with the edges HittER adds; --neighbours 0
 * leaves it alone with the entity).
 * (qk-norm per head as in the full context.) Each distinct entity of the
 * batch is projected to its key once and each relation row once, then read
 * per token: the same sums, in O(U d²) for U distinct entities instead of
 * O(T d²) for T tokens; the values so too for the question alone, and with
 * edges after the weighted sum, in O(B d²). --dropout drops the distinct
 * entities' rows of E (as it drops E in the full context; a row's mask is
 * shared by its tokens)
 * and the attention output before the residual, --attn-dropout the weights. */
static kgl_tensor *segment_attention_layer(const kgl_model *m, int l, kgl_tape *t, kgl_tensor *C, kgl_tensor *Xu,
                                           kgl_tensor *P, const kgl_neighbourhood *nb, double p, double p_attn,
                                           double p_layer, kgl_rng *rng, kgl_forward *out);

/* --head-state input: a head question (?, r, t) is asked as (t, r⁻¹, ?), its
   asked row r⁻¹ = m + r; its state is its input row x_b, and a tail
   question's (asked row < m) the layer's output C_b:
     state_b = keep_b C_b + (1 − keep_b) x_b,  keep_b = [asked_b < m]
   through the product op with constant 0/1 rows, so exactly C_b or x_b
   (1·C + 0·x = C, 0·C + 1·x = x for finite values); backward, ∂L/∂C_b
   = keep_b ∂L/∂state_b and ∂L/∂x_b gains (1 − keep_b) ∂L/∂state_b, so
   the layer learns from the tail questions alone and a head question
   trains its entity's row as the baseline (--context none) does, with the
   per-relation row Pq[r⁻¹] added (built for the head questions the layer
   loses on FB15k-237 and CoDEx-S: data/report/large.md). The layer is
   still computed for the head rows and its output discarded. */
static kgl_tensor *head_questions_take_input(kgl_tape *t, kgl_tensor *C, kgl_tensor *Xq, const int *asked, int m)
{
    int B = C->rows, d = C->cols;
    kgl_tensor *keep = kgl_tensor_new(t, B, d, false), *take_input = kgl_tensor_new(t, B, d, false);
    for (int b = 0; b < B; b++) {
        kgl_real tail = asked[b] < m ? 1 : 0;
        for (int k = 0; k < d; k++) {
            keep->data[(size_t)b * d + k] = tail;
            take_input->data[(size_t)b * d + k] = 1 - tail;
        }
    }
    return kgl_add(t, kgl_mul(t, C, keep), kgl_mul(t, Xq, take_input));
}

/* The states of the questions whose segments nb holds, asking asked[b] (or NULL). */
static void neighbourhood_states(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg,
                                 const kgl_neighbourhood *nb, const int *asked, kgl_forward *out)
{
    const kgl_config *c = &m->cfg;
    int B = nb->n;
    memset(out, 0, sizeof *out);
    kgl_rng *rng = reg ? reg->rng : NULL;
    double p = reg ? reg->dropout : 0, p_attn = reg ? reg->attn_dropout : 0, p_layer = reg ? reg->layer_dropout : 0;
    kgl_tensor *Xu = kgl_dropout(t, kgl_gather_rows(t, m->entity_emb, nb->unique, nb->n_unique), p, rng);
    if (nb->zero_slot >= 0) { /* one more row, of zeros: the asked relations' tokens, and the first tokens
                                 --source-dropout masked */
        int *rows = kgl_arena_alloc(&t->arena, ((size_t)nb->n_unique + 1) * sizeof(int));
        for (int u = 0; u <= nb->n_unique; u++) rows[u] = u < nb->n_unique ? u : 0;
        kgl_tensor *keep = kgl_tensor_new(t, nb->n_unique + 1, c->dim, false);
        size_t live = (size_t)nb->n_unique * (size_t)c->dim;
        for (size_t k = 0; k < kgl_numel(keep); k++) keep->data[k] = k < live ? 1.0 : 0.0;
        Xu = kgl_mul(t, kgl_gather_rows(t, Xu, rows, nb->n_unique + 1), keep);
    }
    kgl_tensor *P = m->context_relation_emb;
    int *self_row = kgl_arena_alloc(&t->arena, sizeof(int));
    *self_row = 2 * c->n_relations;
    kgl_tensor *Xq = kgl_add(t, kgl_gather_rows(t, Xu, nb->query_slot, B), kgl_gather_rows(t, P, self_row, 1));
    if (c->query_relation && asked) /* without: the entity's state asked no question (kgl_model_context) */
        Xq = kgl_add(t, Xq, kgl_gather_rows(t, m->context_query_emb, asked, B));
    kgl_tensor *C = Xq;
    for (int l = 0; l < c->layers; l++) {
        kgl_forward deeper = {0}; /* a deeper layer's records: its weights and scores kept below */
        C = segment_attention_layer(m, l, t, C, Xu, P, nb, p, p_attn, p_layer, rng, l == 0 ? out : &deeper);
        out->layer_segment_attn[l] = l == 0 ? out->segment_attn : deeper.segment_attn;
        out->layer_segment_logits[l] = l == 0 ? out->segment_logits : deeper.segment_logits;
    }
    if (c->head_state_input && asked) C = head_questions_take_input(t, C, Xq, asked, c->n_relations);
    out->context = C;
}

/* Layer l of the neighbourhood context: the query rows C [B, d] (x_b for the
   first layer, the state the layer below made for the deeper ones) ask the
   segment's tokens, whose keys and values layer l projects from the same
   token embeddings x_t (a stack refines the question, not the tokens: every
   layer costs O(U d²) as the first, not O(T d²)). */
static kgl_tensor *segment_attention_layer(const kgl_model *m, int l, kgl_tape *t, kgl_tensor *C, kgl_tensor *Xu,
                                           kgl_tensor *P, const kgl_neighbourhood *nb, double p, double p_attn,
                                           double p_layer, kgl_rng *rng, kgl_forward *out)
{
    const kgl_config *c = &m->cfg;
    const kgl_block *L = &m->layer[l];
    int H = c->heads, B = nb->n, T = nb->offsets[B];
    kgl_tensor *Q = kgl_matmul(t, C, L->wq);
    kgl_token_rows K; /* the tokens' keys and values, read through the segments' indices (no [T, d] copies) */
    out->q = Q;
    if (c->qk_norm) {
        if (!nb->pair_table)
            kgl_die("--qk-norm in the graph context: a neighbourhood made without room for its distinct tokens "
                    "(kgl_model_neighbourhood_alloc)");
        /* A token's key is a function of its (entity, relation) pair alone,
           so each distinct pair's key is summed and normalised once, then
           read by its tokens: the same numbers as token by token (on
           CoDEx-S a batch's tokens are 17% distinct, on FB15k-237 53%; the
           layer norm was a quarter of CoDEx-S's step). Backward, its tokens'
           gradients add up per pair before the norm's backward, which is
           linear in them: the same gradient, summed in another order. */
        kgl_tensor *PWk = kgl_matmul(t, P, L->wk); /* before Xu Wk, as below */
        kgl_tensor *K_pairs = kgl_gather_sum_rows(t, kgl_matmul(t, Xu, L->wk), nb->pair_slot, PWk, nb->pair_relation,
                                                  nb->n_pairs);
        out->k = K_pairs;
        K = (kgl_token_rows){normalise_heads(m, t, K_pairs, L->kn_gamma, L->kn_beta), nb->token_pair, NULL, NULL};
    } else {
        kgl_tensor *PWk = kgl_matmul(t, P, L->wk);
        K = (kgl_token_rows){kgl_matmul(t, Xu, L->wk), nb->slot, PWk, nb->relation};
        out->k = K.a;
    }
    /* The values, Σ_t A[t,h] (x_t Wv)_h, in one of two orders: each
       distinct entity's x Wv and each relation row's P Wv projected first
       and read per token (U d² multiply-adds), or each head's weighted sum
       of the tokens' embeddings x_t = Xu[slot] + P[relation] projected
       after it, (Σ_t A[t,h] x_t) Wv_h (B d², and T H d for the sums). The
       second with edges (fifty a question on FB15k-237: U ≈ 8,000 distinct
       entities for B = 1,024), the first for the question alone (U ≤ B + 1).
       The order is the configuration's, never the batch's, so a question's
       state is the same bits in any batch (evaluation's blocks, kgl
       predict's one question). (P Wv before Xu Wv, and P Wk before Xu Wk:
       the tape's order, so the order of dW's two sums in backward, written
       out rather than left to the compiler's order of a call's arguments.) */
    bool values_after_sum = c->neighbours > 0;
    kgl_token_rows V = {0};
    if (!values_after_sum) {
        kgl_tensor *PWv = kgl_matmul(t, P, L->wv);
        V = (kgl_token_rows){kgl_matmul(t, Xu, L->wv), nb->slot, PWv, nb->relation};
    }
    if (c->qk_norm) Q = normalise_heads(m, t, Q, L->qn_gamma, L->qn_beta);
    kgl_tensor *S = kgl_segment_scores(t, Q, K, nb->offsets, B, H, kgl_config_tau(c),
                                       c->learn_temperature ? L->log_temperature : NULL);
    kgl_tensor *A = kgl_segment_softmax(t, S, nb->offsets, B);
    out->neighbourhood = nb;
    out->segment_logits = S;
    out->segment_attn = A;
    kgl_tensor *Ad = kgl_dropout(t, A, p_attn, rng);
    bool ablated = false;
    for (int h = 0; h < H; h++) ablated |= m->ablate[h] && l == 0;
    if (ablated) { /* a head of the first layer switched off: its weights, so its output, are zeros */
        kgl_tensor *keep = kgl_tensor_new(t, T, H, false);
        for (size_t k = 0; k < kgl_numel(keep); k++) keep->data[k] = m->ablate[k % (size_t)H] ? 0.0 : 1.0;
        Ad = kgl_mul(t, Ad, keep);
    }
    kgl_tensor *O;
    if (values_after_sum) {
        kgl_token_rows X = {Xu, nb->slot, P, nb->relation};
        O = kgl_matmul_heads(t, kgl_segment_head_sums(t, Ad, X, nb->offsets, B), L->wv, H);
    } else
        O = kgl_segment_weighted_sum(t, Ad, V, nb->offsets, B);
    return finish_layer(m, L, t, C, O, p, p_layer, rng);
}

const kgl_graph *kgl_model_graph(const kgl_model *m)
{
    if (!m->graph) kgl_die("--context graph: the model has no graph (kgl_model_set_graph)");
    return m->graph;
}

kgl_neighbourhood *kgl_model_neighbourhood_alloc(const kgl_model *m, kgl_arena *a, int n)
{
    kgl_neighbourhood *nb = kgl_neighbourhood_alloc(a, kgl_model_graph(m), n, m->cfg.neighbours, m->cfg.relation_token);
    if (m->cfg.qk_norm) kgl_neighbourhood_find_distinct(nb, a); /* the keys, once per distinct token */
    return nb;
}

/* Evaluation's states: every entity i attends over itself and the first K of
   its edges in the graph's fixed order (no edge left out: the triples asked
   about in evaluation are not training triples), computed in blocks of
   entities on a tape of its own, so memory stays O(block · K · d)
   (kgl_layer_in_blocks). */
#define STATE_BLOCK 256

static void every_entity_graph_states(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg,
                                      kgl_forward *out)
{
    if (reg && reg->rng)
        kgl_die("kgl_layer_forward: --context graph computes every entity's state by evaluation's fixed rule, "
                "without regularisers; ask questions (a batch) to train with them");
    memset(out, 0, sizeof *out);
    out->context = kgl_tensor_new(t, m->cfg.n_entities, m->cfg.dim, false);
    kgl_layer_in_blocks(m, t->pool, NULL, NULL, m->cfg.n_entities, out->context->data, NULL, NULL);
}

void kgl_model_query_states(const kgl_model *m, kgl_pool *pool, const int *entity, const int *rel, int n,
                            kgl_real *states)
{
    if (m->cfg.context != KGL_CONTEXT_GRAPH) kgl_die("kgl_model_query_states: defined for --context graph");
    kgl_layer_in_blocks(m, pool, entity, rel, n, states, NULL, NULL);
}

/* ---- the candidates' side of a head question (--candidate-states λ) ----------
 * In reciprocal mode head prediction (?, r, t) is the question (t, r⁻¹, ?):
 * t's state against every candidate's embedding E[j]. The graph context
 * knows more about a candidate j than E[j]: j's own question (j, r), whose
 * state reads j's edges, is what ranks t well when the tail is asked. So
 * the head question also asks every candidate how its forward question
 * rates t, and adds λ times that score:
 *   score[j] += Σ_c S_(j,r)[c] · R[r, c] · E[t, c]   (times λ, folded into w)
 * Training is unchanged (both directions are trained as tail questions);
 * this is how the model answers. On CoDEx-S the layer's head questions are
 * where it lost to its baseline, and where this gains (data/report/recipe.md,
 * "The candidates' side of a head question"). */
void kgl_candidate_side_init(kgl_candidate_side *side) { *side = (kgl_candidate_side){.row = -1}; }

/* w with Σ_c S[c] w[c] = λ · the readout's score of (j, r, t) for a state S of
   (j, r). Diagonal: w = (λ R) ⊙ E. Complex (columns 0…h−1 real, h…d−1
   imaginary, h = d/2): Re Σ S R conj(E) = Σ Re(S) Re(u) − Im(S) Im(u) with
   u = R conj(E) = (R₁E₁ + R₂E₂) + i (R₂E₁ − R₁E₂), so w = λ (Re u, −Im u). */
static void candidate_weights(bool complex, double lambda, const kgl_real *R, const kgl_real *E, kgl_real *w, int d)
{
    if (!complex) {
        for (int i = 0; i < d; i++) w[i] = (kgl_real)(lambda * R[i]) * E[i];
        return;
    }
    int h = d / 2;
    for (int i = 0; i < h; i++) {
        kgl_real re = R[i] * E[i] + R[h + i] * E[h + i], im = R[h + i] * E[i] - R[i] * E[h + i];
        w[i] = (kgl_real)(lambda * re);
        w[h + i] = (kgl_real)(-lambda * im);
    }
}

void kgl_candidate_side_free(kgl_candidate_side *side)
{
    free(side->states);
    free(side->asked);
    free(side->w);
    kgl_candidate_side_init(side);
}

void kgl_add_candidate_side(const kgl_model *m, kgl_pool *pool, kgl_candidate_side *side, int count,
                            const int *entity, const int *relation_row, kgl_real *scores)
{
    const kgl_config *c = &m->cfg;
    double lambda = c->candidate_states;
    if (!(lambda > 0)) return;
    if (!c->query_relation) kgl_die("kgl_add_candidate_side: --candidate-states needs --query-relation");
    int n = c->n_entities, d = c->dim, n_rel = c->n_relations;
    if (!side->states) {
        side->states = kgl_xmalloc((size_t)n * d * sizeof(kgl_real));
        side->asked = kgl_xmalloc((size_t)n * sizeof(int));
        side->w = kgl_xmalloc((size_t)d * sizeof(kgl_real));
        side->row = -1;
    }
    for (int k = 0; k < count; k++) {
        if (relation_row[k] < n_rel) continue; /* a tail question: its candidates are answers, not askers */
        int r = relation_row[k] - n_rel, t = entity[k];
        if (side->row != r) { /* every candidate j asks (j, r) */
            for (int j = 0; j < n; j++) side->asked[j] = r;
            kgl_model_query_states(m, pool, NULL, side->asked, n, side->states);
            side->row = r;
        }
        const kgl_real *R = m->relation_emb->data + (size_t)r * d, *E = m->entity_emb->data + (size_t)t * d;
        candidate_weights(c->readout == KGL_READOUT_COMPLEX, lambda, R, E, side->w, d);
        /* scores[k, j] += Σ_c w[c] S[j, c], the sum continuing from the question's own score */
        kgl_gemm_nt(pool, 1, n, d, side->w, d, side->states, d, scores + (size_t)k * n, n, KGL_ADD);
    }
}

/* The states of n queries (entity[k], asked[k]), STATE_BLOCK at a time
   (internal.h). */
void kgl_layer_in_blocks(const kgl_model *m, kgl_pool *pool, const int *entity, const int *asked, int n,
                         kgl_real *states, void (*each_block)(const kgl_forward *f, void *ctx), void *ctx)
{
    kgl_model_graph(m); /* no graph: a clear death before any block */
    int d = m->cfg.dim;
    kgl_tape blk;
    kgl_tape_init(&blk);
    blk.recording = false;
    kgl_tape_set_pool(&blk, pool);
    int *ids = kgl_xmalloc(STATE_BLOCK * sizeof(int));
    for (int lo = 0; lo < n; lo += STATE_BLOCK) {
        int rows = n - lo < STATE_BLOCK ? n - lo : STATE_BLOCK;
        for (int b = 0; b < rows; b++) ids[b] = entity ? entity[lo + b] : lo + b;
        bool hide = asked && m->cfg.hide_asked; /* the question (i, r) without i's edges of r, as in training */
        kgl_questions q = {.n = rows, .entity = ids, .rel = asked ? asked + lo : NULL, .all_answers = hide};
        kgl_tape_reset(&blk);
        kgl_forward f; /* the block's fixed neighbourhoods are drawn on its tape */
        kgl_layer_forward(m, &blk, &q, NULL, &f);
        if (states) memcpy(states + (size_t)lo * d, f.context->data, (size_t)rows * d * sizeof(kgl_real));
        if (each_block) each_block(&f, ctx);
    }
    free(ids);
    kgl_tape_free(&blk);
}

