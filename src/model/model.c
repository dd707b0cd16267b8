/* model.c — the layer, expressed in the engine's ops.
 *
 *   X = E                                  entity embeddings [n, d]
 *   Q = X Wq, K = X Wk, V = X Wv           [n, d]
 *   per head h (columns h·dk … (h+1)·dk):
 *     S_h = τ Q_h K_hᵀ                     [n, n]  where head h, at entity i, scores j
 *     A_h = softmax_rows(S_h)              [n, n]  where it looks
 *   O = [A_0 V_0 | … | A_{H−1} V_{H−1}]    [n, d]
 *   Y = LN(X + O Wo)                       residual, then layer norm
 *   C = Y, or LN(Y + GELU(Y W1 + b1) W2 + b2) with the FFN
 *   score[b, j] = Σ_c C[i_b, c] R[r_b, c] E[j, c]     trilinear readout
 *   loss = mean_b CE(score[b], t_b) + λ · aux
 *   aux  = mean over supervised examples of  lse_j S_h[i, j] − S_h[i, t]
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

void kgl_config_defaults(kgl_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->reciprocal = true;
    cfg->dim = 8;
    cfg->heads = 2;
    cfg->ffn = 0;
    cfg->scale = KGL_SCALE_SQRT;
    cfg->scale_value = 1;
    cfg->init_scale = 1;
    cfg->context = KGL_CONTEXT_FULL;
    cfg->neighbours = 50;
    cfg->layers = 1;
}

const char *kgl_config_error(const kgl_config *cfg)
{
    static const char *const msgs[] = {
        "there are no entities", "there are no relations", "--dim must be at least 1",
        "--heads must be between 1 and 64", "--heads must divide --dim", "--ffn must be 0 or more",
        "--scale must be a finite number", "--init-scale must be a finite number >= 0",
        "--readout complex needs an even --dim (d/2 complex numbers)",
        "--readout complex needs the reciprocal relations (not --no-reciprocal)",
        "--neighbours must be between 1 and 4096",
        "--query-relation needs --context graph",
        "--query-relation needs the reciprocal relations (not --no-reciprocal)",
        "--hide-asked-relation needs --query-relation (a state per question)",
        "--layers must be between 1 and 8",
    };
    if (cfg->n_entities < 1) return msgs[0];
    if (cfg->n_relations < 1) return msgs[1];
    if (cfg->dim < 1) return msgs[2];
    if (cfg->heads < 1 || cfg->heads > KGL_MAX_HEADS) return msgs[3];
    if (cfg->dim % cfg->heads) return msgs[4];
    if (cfg->ffn < 0) return msgs[5];
    if (cfg->scale == KGL_SCALE_VALUE && !isfinite(cfg->scale_value)) return msgs[6];
    if (!(cfg->init_scale >= 0) || !isfinite(cfg->init_scale)) return msgs[7];
    if (cfg->readout == KGL_READOUT_COMPLEX && cfg->dim % 2) return msgs[8];
    if (cfg->readout == KGL_READOUT_COMPLEX && !cfg->reciprocal) return msgs[9];
    if (cfg->context == KGL_CONTEXT_GRAPH && (cfg->neighbours < 1 || cfg->neighbours > KGL_MAX_NEIGHBOURS))
        return msgs[10];
    if (cfg->query_relation && cfg->context != KGL_CONTEXT_GRAPH) return msgs[11];
    if (cfg->query_relation && !cfg->reciprocal) return msgs[12];
    if (cfg->hide_asked && !cfg->query_relation) return msgs[13];
    if (cfg->layers < 1 || cfg->layers > KGL_MAX_LAYERS) return msgs[14];
    return NULL;
}

const char *const kgl_context_names[3] = {"full", "graph", "none"};
const char *const kgl_readout_names[2] = {"diagonal", "complex"};

const char *kgl_context_name(kgl_context_kind context)
{
    return (unsigned)context < 3 ? kgl_context_names[context] : "?";
}

int kgl_config_relation_rows(const kgl_config *cfg) { return cfg->reciprocal ? 2 * cfg->n_relations : cfg->n_relations; }

double kgl_config_tau(const kgl_config *cfg)
{
    switch (cfg->scale) {
    case KGL_SCALE_NONE: return 1.0;
    case KGL_SCALE_VALUE: return cfg->scale_value;
    default: return 1.0 / sqrt((double)(cfg->dim / cfg->heads));
    }
}

/* Declares layer l's weights; layer 0's names are the README's, layer l ≥ 1's
   carry the prefix "layer<l>.". */
static void declare_block(kgl_model *m, int l)
{
    const kgl_config *cfg = &m->cfg;
    int d = cfg->dim, f = cfg->ffn, dk = d / cfg->heads;
    kgl_params *ps = &m->params;
    kgl_block *L = &m->layer[l];
    char name[KGL_NAME_MAX];
#define NAMED(suffix) (l ? (snprintf(name, sizeof name, "layer%d.%s", l, suffix), name) : suffix)
    L->wq = kgl_params_add(ps, NAMED("attn.wq"), d, d);
    L->wk = kgl_params_add(ps, NAMED("attn.wk"), d, d);
    L->wv = kgl_params_add(ps, NAMED("attn.wv"), d, d);
    L->wo = kgl_params_add(ps, NAMED("attn.wo"), d, d);
    L->ln1_gamma = kgl_params_add_vector(ps, NAMED("ln1.gamma"), d);
    L->ln1_beta = kgl_params_add_vector(ps, NAMED("ln1.beta"), d);
    if (f > 0) {
        L->ffn_w1 = kgl_params_add(ps, NAMED("ffn.w1"), d, f);
        L->ffn_b1 = kgl_params_add_vector(ps, NAMED("ffn.b1"), f);
        L->ffn_w2 = kgl_params_add(ps, NAMED("ffn.w2"), f, d);
        L->ffn_b2 = kgl_params_add_vector(ps, NAMED("ffn.b2"), d);
        L->ln2_gamma = kgl_params_add_vector(ps, NAMED("ln2.gamma"), d);
        L->ln2_beta = kgl_params_add_vector(ps, NAMED("ln2.beta"), d);
    }
    if (cfg->qk_norm) {
        L->qn_gamma = kgl_params_add_vector(ps, NAMED("attn.q_norm.gamma"), dk);
        L->qn_beta = kgl_params_add_vector(ps, NAMED("attn.q_norm.beta"), dk);
        L->kn_gamma = kgl_params_add_vector(ps, NAMED("attn.k_norm.gamma"), dk);
        L->kn_beta = kgl_params_add_vector(ps, NAMED("attn.k_norm.beta"), dk);
    }
    if (cfg->learn_temperature) L->log_temperature = kgl_params_add_vector(ps, NAMED("attn.log_temperature"), cfg->heads);
#undef NAMED
}

/* Declares the parameters of model `cfg` in m (allocating nothing): what
   kgl_model_create allocates and kgl_config_parameters counts. */
static void declare_parameters(kgl_model *m, const kgl_config *cfg)
{
    const char *err = kgl_config_error(cfg);
    if (err) kgl_die("model: invalid configuration: %s", err);
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    if (cfg->context == KGL_CONTEXT_NONE) { /* no layer: the options of the layer mean nothing */
        m->cfg.ffn = 0;
        m->cfg.qk_norm = m->cfg.learn_temperature = false;
        m->cfg.layers = 1;
    }
    cfg = &m->cfg;
    int n = cfg->n_entities, d = cfg->dim;
    kgl_params *ps = &m->params;
    m->entity_emb = kgl_params_add(ps, "entity_emb", n, d);
    m->relation_emb = kgl_params_add(ps, "relation_emb", kgl_config_relation_rows(cfg), d);
    if (cfg->context == KGL_CONTEXT_NONE) return;
    declare_block(m, 0);
    if (cfg->context == KGL_CONTEXT_GRAPH)
        m->context_relation_emb = kgl_params_add(ps, "context.relation_emb", 2 * cfg->n_relations + 1, d);
    if (cfg->query_relation) m->context_query_emb = kgl_params_add(ps, "context.query_emb", 2 * cfg->n_relations, d);
    for (int l = 1; l < cfg->layers; l++) declare_block(m, l); /* after: one layer's file is unchanged */
}

void kgl_model_create(kgl_model *m, const kgl_config *cfg)
{
    declare_parameters(m, cfg);
    kgl_params_alloc(&m->params);
}

size_t kgl_config_parameters(const kgl_config *cfg)
{
    kgl_model m; /* its declarations only: no block */
    declare_parameters(&m, cfg);
    size_t total = 0;
    for (int i = 0; i < m.params.n; i++) total += kgl_numel(&m.params.p[i].t);
    return total;
}

static void fill_normal(kgl_tensor *x, kgl_rng *rng, double std)
{
    size_t n = kgl_numel(x);
    for (size_t i = 0; i < n; i++) x->data[i] = std * kgl_rng_normal(rng);
}

static void fill_const(kgl_tensor *x, double v)
{
    size_t n = kgl_numel(x);
    for (size_t i = 0; i < n; i++) x->data[i] = v;
}

/* Layer l's init: Wq, Wk, Wv, Wo, then W1 and W2 drawn in that order; gammas
   1, betas and biases 0, the learned temperature's log 0 (the fixed scale). */
static void init_block(kgl_model *m, int l, kgl_rng *rng)
{
    const kgl_config *c = &m->cfg;
    double d = c->dim;
    kgl_block *L = &m->layer[l];
    kgl_tensor *attn[4] = {L->wq, L->wk, L->wv, L->wo};
    for (int k = 0; k < 4; k++) fill_normal(attn[k], rng, c->init_scale / sqrt(d));
    fill_const(L->ln1_gamma, 1.0);
    fill_const(L->ln1_beta, 0.0);
    if (c->ffn > 0) {
        fill_normal(L->ffn_w1, rng, 1.0 / sqrt(d));
        fill_const(L->ffn_b1, 0.0);
        fill_normal(L->ffn_w2, rng, 1.0 / sqrt((double)c->ffn));
        fill_const(L->ffn_b2, 0.0);
        fill_const(L->ln2_gamma, 1.0);
        fill_const(L->ln2_beta, 0.0);
    }
    if (c->qk_norm) {
        fill_const(L->qn_gamma, 1.0);
        fill_const(L->qn_beta, 0.0);
        fill_const(L->kn_gamma, 1.0);
        fill_const(L->kn_beta, 0.0);
    }
    if (c->learn_temperature) fill_const(L->log_temperature, 0.0); /* exp(0) = 1: starts as the fixed scale */
}

void kgl_model_init(kgl_model *m, kgl_rng *rng)
{
    const kgl_config *c = &m->cfg;
    double d = c->dim;
    fill_normal(m->entity_emb, rng, 1.0);
    fill_normal(m->relation_emb, rng, 1.0 / sqrt(d));
    if (c->context != KGL_CONTEXT_NONE) {
        init_block(m, 0, rng);
        if (c->context == KGL_CONTEXT_GRAPH) fill_normal(m->context_relation_emb, rng, 1.0 / sqrt(d));
        if (c->query_relation) fill_normal(m->context_query_emb, rng, 1.0 / sqrt(d)); /* after P: P's bits unchanged */
        for (int l = 1; l < c->layers; l++) init_block(m, l, rng); /* last: one layer's draws unchanged */
    }
    /* Adam starts from zero moments. */
    memset(m->params.block + 2 * m->params.total, 0, 2 * m->params.total * sizeof(kgl_real));
}

void kgl_model_free(kgl_model *m)
{
    kgl_params_free(&m->params);
    if (m->graph) kgl_graph_free(m->graph);
    free(m->graph);
    m->graph = NULL;
}

void kgl_model_set_graph(kgl_model *m, const kgl_triple *train, int n_train)
{
    if (m->cfg.context != KGL_CONTEXT_GRAPH) return;
    if (!m->graph) m->graph = kgl_xmalloc(sizeof *m->graph);
    else kgl_graph_free(m->graph);
    kgl_graph_build(m->graph, m->cfg.n_entities, m->cfg.n_relations, train, n_train);
}

void kgl_model_context(const kgl_model *m, kgl_tape *t, kgl_forward *out) { kgl_model_context_reg(m, t, NULL, out); }

static void context(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg, bool need_logits,
                    kgl_forward *out);

static void graph_layer(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg, const kgl_neighbourhood *nb,
                        const int *asked, kgl_forward *out);
static void graph_states(const kgl_model *m, kgl_tape *t, kgl_forward *out);

void kgl_model_context_reg(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg, kgl_forward *out)
{
    if (m->cfg.context == KGL_CONTEXT_GRAPH) graph_states(m, t, out); /* evaluation's rule: no dropout */
    else context(m, t, reg, false, out);
}

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
                                   kgl_rng *rng, bool need_logits, kgl_forward *out);
static kgl_tensor *finish_layer(const kgl_model *m, const kgl_block *L, kgl_tape *t, kgl_tensor *X, kgl_tensor *O,
                                double p, kgl_rng *rng);

/* Training-time regularisers (NULL: none, as at evaluation). Dropout masks
   are drawn from reg->rng in the order the forward meets them: X, then layer
   by layer each head's attention weights, the attention output, the FFN
   output; then (in the loss) the per-example head states. A stack of layers
   (--layers L) applies the layer to its own output: C⁽⁰⁾ = X, C⁽ˡ⁺¹⁾ =
   layer_l(C⁽ˡ⁾), C = C⁽ᴸ⁾. What `out` records of the attention (Q, K, the
   weights and logits, the head outputs) is the first layer's: it looks at the
   entities themselves, which is what head supervision reads; every layer's
   weights are in layer_attn (kgl heads shows each layer's specialisation). */
static void context(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg, bool need_logits,
                    kgl_forward *out)
{
    memset(out, 0, sizeof *out);
    kgl_rng *rng = reg ? reg->rng : NULL;
    double p = reg ? reg->dropout : 0, p_attn = reg ? reg->attn_dropout : 0;

    kgl_tensor *X = kgl_dropout(t, m->entity_emb, p, rng); /* E itself when p = 0 */
    if (m->cfg.context == KGL_CONTEXT_NONE) { /* no layer: the states are the embeddings */
        out->context = X;
        return;
    }
    for (int l = 0; l < m->cfg.layers; l++) {
        kgl_forward deeper; /* what a deeper layer's attention records is not kept */
        X = attention_layer(m, l, t, X, p, p_attn, rng, need_logits && l == 0, l == 0 ? out : &deeper);
        memcpy(out->layer_attn[l], l == 0 ? out->attn : deeper.attn, sizeof out->attn);
    }
    out->context = X;
}

/* Layer l on the rows of X: multi-head self-attention, residual, layer norm,
   the FFN when there is one. Records its attention into `out`. */
static kgl_tensor *attention_layer(const kgl_model *m, int l, kgl_tape *t, kgl_tensor *X, double p, double p_attn,
                                   kgl_rng *rng, bool need_logits, kgl_forward *out)
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
                                      l == 0 && m->measure_attention ? &out->attn_stats : NULL);
        for (int h = 0; h < H; h++) out->attn[h] = keep ? &views[h] : NULL;
        return finish_layer(m, L, t, X, O, p, rng);
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
    return finish_layer(m, L, t, X, O, p, rng);
}

/* After the attention: U = X + O Wo, Y = LN(U), and the FFN when there is one. */
static kgl_tensor *finish_layer(const kgl_model *m, const kgl_block *L, kgl_tape *t, kgl_tensor *X, kgl_tensor *O,
                                double p, kgl_rng *rng)
{
    kgl_tensor *U = kgl_add(t, X, kgl_dropout(t, kgl_matmul(t, O, L->wo), p, rng));
    kgl_tensor *Y = kgl_layernorm(t, U, L->ln1_gamma, L->ln1_beta);
    if (m->cfg.ffn > 0) {
        kgl_tensor *Z = kgl_add(t, kgl_matmul(t, Y, L->ffn_w1), L->ffn_b1);
        kgl_tensor *F = kgl_add(t, kgl_matmul(t, kgl_gelu(t, Z), L->ffn_w2), L->ffn_b2);
        F = kgl_dropout(t, F, p, rng);
        Y = kgl_layernorm(t, kgl_add(t, Y, F), L->ln2_gamma, L->ln2_beta);
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
 * (qk-norm per head as in the full context.) Each distinct entity of the
 * batch is projected once and each relation row once, then gathered per
 * token: the same sums, in O(U d²) for U distinct entities instead of
 * O(T d²) for T tokens. --dropout drops the distinct entities' rows of E
 * (as it drops E in the full context; a row's mask is shared by its tokens)
 * and the attention output before the residual, --attn-dropout the weights. */
static kgl_tensor *segment_attention_layer(const kgl_model *m, int l, kgl_tape *t, kgl_tensor *C, kgl_tensor *Xu,
                                           kgl_tensor *P, const kgl_neighbourhood *nb, double p, double p_attn,
                                           kgl_rng *rng, kgl_forward *out);

static void graph_layer(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg, const kgl_neighbourhood *nb,
                        const int *asked, kgl_forward *out)
{
    const kgl_config *c = &m->cfg;
    int B = nb->n;
    memset(out, 0, sizeof *out);
    kgl_rng *rng = reg ? reg->rng : NULL;
    double p = reg ? reg->dropout : 0, p_attn = reg ? reg->attn_dropout : 0;
    kgl_tensor *Xu = kgl_dropout(t, kgl_gather_rows(t, m->entity_emb, nb->unique, nb->n_unique), p, rng);
    if (nb->zero_slot >= 0) { /* --source-dropout: one more row, of zeros, for the masked first tokens */
        int *rows = kgl_arena_alloc(&t->arena, ((size_t)nb->n_unique + 1) * sizeof(int));
        for (int u = 0; u <= nb->n_unique; u++) rows[u] = u < nb->n_unique ? u : 0;
        kgl_tensor *keep = kgl_tensor_new(t, nb->n_unique + 1, c->dim, false);
        size_t live = (size_t)nb->n_unique * (size_t)c->dim;
        for (size_t k = 0; k < kgl_numel(keep); k++) keep->data[k] = k < live ? 1.0 : 0.0;
        Xu = kgl_mul(t, kgl_gather_rows(t, Xu, rows, nb->n_unique + 1), keep);
    }
    kgl_tensor *P = m->context_relation_emb;
    int *self_row = kgl_arena_alloc(&t->arena, sizeof(int));
    *self_row = P->rows - 1;
    kgl_tensor *Xq = kgl_add(t, kgl_gather_rows(t, Xu, nb->query_slot, B), kgl_gather_rows(t, P, self_row, 1));
    if (c->query_relation && asked) /* without: the entity's state asked no question (kgl_model_context) */
        Xq = kgl_add(t, Xq, kgl_gather_rows(t, m->context_query_emb, asked, B));
    kgl_tensor *C = Xq;
    for (int l = 0; l < c->layers; l++) {
        kgl_forward deeper; /* what a deeper layer's attention records is not kept */
        C = segment_attention_layer(m, l, t, C, Xu, P, nb, p, p_attn, rng, l == 0 ? out : &deeper);
        out->layer_segment_attn[l] = l == 0 ? out->segment_attn : deeper.segment_attn;
    }
    out->context = C;
}

/* Layer l of the neighbourhood context: the query rows C [B, d] (x_b for the
   first layer, the state the layer below made for the deeper ones) ask the
   segment's tokens, whose keys and values layer l projects from the same
   token embeddings x_t (a stack refines the question, not the tokens: every
   layer costs O(U d²) as the first, not O(T d²)). */
static kgl_tensor *segment_attention_layer(const kgl_model *m, int l, kgl_tape *t, kgl_tensor *C, kgl_tensor *Xu,
                                           kgl_tensor *P, const kgl_neighbourhood *nb, double p, double p_attn,
                                           kgl_rng *rng, kgl_forward *out)
{
    const kgl_config *c = &m->cfg;
    const kgl_block *L = &m->layer[l];
    int H = c->heads, B = nb->n, T = nb->offsets[B];
    kgl_tensor *Q = kgl_matmul(t, C, L->wq);
    kgl_tensor *K = kgl_gather_sum_rows(t, kgl_matmul(t, Xu, L->wk), nb->slot, kgl_matmul(t, P, L->wk), nb->relation, T);
    kgl_tensor *V = kgl_gather_sum_rows(t, kgl_matmul(t, Xu, L->wv), nb->slot, kgl_matmul(t, P, L->wv), nb->relation, T);
    out->q = Q;
    out->k = K;
    if (c->qk_norm) {
        Q = normalise_heads(m, t, Q, L->qn_gamma, L->qn_beta);
        K = normalise_heads(m, t, K, L->kn_gamma, L->kn_beta);
    }
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
    kgl_tensor *O = kgl_segment_weighted_sum(t, Ad, V, nb->offsets, B);
    return finish_layer(m, L, t, C, O, p, rng);
}

/* Room in `a` for the neighbourhoods of n examples with at most K edges each. */
static kgl_neighbourhood *neighbourhood_alloc(kgl_arena *a, int n, int K)
{
    kgl_neighbourhood *nb = kgl_arena_alloc(a, sizeof *nb);
    size_t tokens = (size_t)n * (size_t)(K + 1);
    nb->offsets = kgl_arena_alloc(a, ((size_t)n + 1) * sizeof(int));
    nb->entity = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->relation = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->unique = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->slot = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->query_slot = kgl_arena_alloc(a, (size_t)n * sizeof(int));
    return nb;
}

static const kgl_graph *model_graph(const kgl_model *m)
{
    if (!m->graph) kgl_die("--context graph: the model has no graph (kgl_model_set_graph)");
    return m->graph;
}

/* Evaluation's states: every entity i attends over itself and the first K of
   its edges in the graph's fixed order (no edge left out: the triples asked
   about in evaluation are not training triples), computed in blocks of
   entities on a tape of its own, so memory stays O(block · K · d). */
#define STATE_BLOCK 256
static void graph_blocks(const kgl_model *m, kgl_pool *pool, const int *entity, const int *asked, int n,
                         kgl_real *states, double *mass, double *count, double *self);

static void graph_states(const kgl_model *m, kgl_tape *t, kgl_forward *out)
{
    memset(out, 0, sizeof *out);
    out->context = kgl_tensor_new(t, m->cfg.n_entities, m->cfg.dim, false);
    graph_blocks(m, t->pool, NULL, NULL, m->cfg.n_entities, out->context->data, NULL, NULL, NULL);
}

void kgl_model_query_states(const kgl_model *m, kgl_pool *pool, const int *entity, const int *rel, int n,
                            kgl_real *states)
{
    if (m->cfg.context != KGL_CONTEXT_GRAPH) kgl_die("kgl_model_query_states: defined for --context graph");
    graph_blocks(m, pool, entity, rel, n, states, NULL, NULL, NULL);
}

void kgl_model_relation_attention(const kgl_model *m, kgl_pool *pool, const kgl_triple *tr, int n_tr, double *spec,
                                  double *self, double *uniform)
{
    int H = m->cfg.heads, rels = m->cfg.n_relations;
    size_t cells = (size_t)(H + 1) * (size_t)rels; /* row H: uniform weights over each segment */
    double *mass = kgl_xmalloc(2 * cells * sizeof(double)), *count = mass + cells, self_sum[KGL_MAX_HEADS + 1] = {0};
    memset(mass, 0, 2 * cells * sizeof(double));
    int n = m->cfg.n_entities, *entity = NULL, *asked = NULL;
    if (m->cfg.query_relation) { /* the questions of tr: (h, r, ?) and (t, r⁻¹, ?) */
        n = 2 * n_tr;
        entity = kgl_xmalloc(((size_t)2 * n + 1) * sizeof(int));
        asked = entity + n;
        for (int k = 0; k < n_tr; k++) {
            entity[k] = tr[k].head, asked[k] = tr[k].rel;
            entity[n_tr + k] = tr[k].tail, asked[n_tr + k] = rels + tr[k].rel;
        }
    }
    graph_blocks(m, pool, entity, asked, n, NULL, mass, count, self_sum); /* the weights only */
    free(entity);
    for (size_t k = 0; k < (size_t)H * (size_t)rels; k++) spec[k] = count[k] > 0 ? mass[k] / count[k] : NAN;
    if (self)
        for (int h = 0; h < H; h++) self[h] = n ? self_sum[h] / n : NAN;
    if (uniform)
        for (int r = 0; r < rels; r++) {
            size_t k = (size_t)H * (size_t)rels + (size_t)r;
            uniform[r] = count[k] > 0 ? mass[k] / count[k] : NAN;
        }
    free(mass);
}

void kgl_model_question_segment(const kgl_model *m, int entity, int row, kgl_segment_view *out)
{
    const kgl_graph *g = model_graph(m);
    int K = m->cfg.neighbours, H = m->cfg.heads, L = m->cfg.layers;
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    int *scratch = kgl_arena_alloc(&t.arena, kgl_neighbourhood_scratch(g) * sizeof(int));
    kgl_neighbourhood *nb = neighbourhood_alloc(&t.arena, 1, K);
    bool hide = m->cfg.hide_asked; /* as evaluation asks the question */
    kgl_neighbourhood_fill(g, K, &entity, hide ? &row : NULL, NULL, 1, hide, NULL, 0, scratch, nb);
    kgl_forward f;
    graph_layer(m, &t, NULL, nb, &row, &f);
    int T = nb->offsets[1];
    *out = (kgl_segment_view){T, L, H, kgl_xmalloc((size_t)T * sizeof(int)), kgl_xmalloc((size_t)T * sizeof(int)),
                              kgl_xmalloc((size_t)L * T * H * sizeof(double))};
    memcpy(out->entity, nb->entity, (size_t)T * sizeof(int));
    memcpy(out->relation, nb->relation, (size_t)T * sizeof(int));
    for (int l = 0; l < L; l++)
        for (size_t k = 0; k < (size_t)T * H; k++) out->weight[(size_t)l * T * H + k] = f.layer_segment_attn[l]->data[k];
    kgl_tape_free(&t);
}

void kgl_segment_view_free(kgl_segment_view *v)
{
    free(v->entity);
    free(v->relation);
    free(v->weight);
    memset(v, 0, sizeof *v);
}

/* Σ over the segments of nb of what kgl_relation_attention averages: the
   weight on each relation's edges (mass) and the segments having one (count),
   [H m] each, and the weight on the entity's own token (self, [H]). */
static void add_relation_attention(const kgl_neighbourhood *nb, const kgl_tensor *A, int H, int m, double *mass,
                                   double *count, double *self, bool with_uniform)
{
    double seg_mass[KGL_MAX_HEADS + 1];
    int H_all = with_uniform ? H + 1 : H; /* row H: what uniform weights would put there */
    for (int b = 0; b < nb->n; b++) {
        int lo = nb->offsets[b], hi = nb->offsets[b + 1];
        if (self)
            for (int h = 0; h < H; h++) self[h] += A->data[(size_t)lo * H + h];
        for (int t0 = lo + 1; t0 < hi; t0++) { /* each relation once a segment, at its first edge */
            int r = nb->relation[t0] % m;
            bool first = true;
            for (int u = lo + 1; u < t0 && first; u++) first = nb->relation[u] % m != r;
            if (!first) continue;
            for (int h = 0; h < H_all; h++) seg_mass[h] = 0;
            for (int u = t0; u < hi; u++)
                if (nb->relation[u] % m == r) {
                    for (int h = 0; h < H; h++) seg_mass[h] += A->data[(size_t)u * H + h];
                    seg_mass[H] += 1.0 / (hi - lo);
                }
            for (int h = 0; h < H_all; h++) {
                mass[h * m + r] += seg_mass[h];
                count[h * m + r] += 1;
            }
        }
    }
}

void kgl_relation_attention(const kgl_neighbourhood *nb, const kgl_tensor *A, int heads, int m, double *spec)
{
    size_t cells = (size_t)heads * (size_t)m;
    double *mass = kgl_xmalloc(2 * cells * sizeof(double)), *count = mass + cells;
    memset(mass, 0, 2 * cells * sizeof(double));
    add_relation_attention(nb, A, heads, m, mass, count, NULL, false);
    for (size_t k = 0; k < cells; k++) spec[k] = count[k] > 0 ? mass[k] / count[k] : NAN;
    free(mass);
}

/* The states of n queries (entity[k], asked[k]) into states [n, d] (entity
   NULL: entity k; asked NULL: no relation asked; states NULL: not kept),
   STATE_BLOCK at a time. */
static void graph_blocks(const kgl_model *m, kgl_pool *pool, const int *entity, const int *asked, int n,
                         kgl_real *states, double *mass, double *count, double *self)
{
    const kgl_graph *g = model_graph(m);
    int d = m->cfg.dim, K = m->cfg.neighbours;
    kgl_tape blk;
    kgl_tape_init(&blk);
    blk.recording = false;
    kgl_tape_set_pool(&blk, pool);
    kgl_arena keep = {0};
    int *ids = kgl_arena_alloc(&keep, STATE_BLOCK * sizeof(int));
    int *scratch = kgl_arena_alloc(&keep, kgl_neighbourhood_scratch(g) * sizeof(int));
    kgl_neighbourhood *nb = neighbourhood_alloc(&keep, STATE_BLOCK, K);
    for (int lo = 0; lo < n; lo += STATE_BLOCK) {
        int rows = n - lo < STATE_BLOCK ? n - lo : STATE_BLOCK;
        for (int b = 0; b < rows; b++) ids[b] = entity ? entity[lo + b] : lo + b;
        bool hide = asked && m->cfg.hide_asked; /* the question (i, r) without i's edges of r, as in training */
        kgl_neighbourhood_fill(g, K, ids, hide ? asked + lo : NULL, NULL, rows, hide, NULL, 0, scratch, nb);
        kgl_tape_reset(&blk);
        kgl_forward f;
        graph_layer(m, &blk, NULL, nb, asked ? asked + lo : NULL, &f);
        if (states) memcpy(states + (size_t)lo * d, f.context->data, (size_t)rows * d * sizeof(kgl_real));
        if (mass) add_relation_attention(nb, f.segment_attn, m->cfg.heads, m->cfg.n_relations, mass, count, self, true);
    }
    kgl_arena_free(&keep);
    kgl_tape_free(&blk);
}

/* −log A_h[i, t] for the supervised examples, computed stably as a cross
 * entropy over the rows S_h[i] (never as the log of an underflowed weight),
 * one mean pooled over all supervised examples of the batch:
 *   aux = (1/N) Σ_h Σ_{b→h} ce_b = Σ_h (N_h/N) · mean_{b→h} ce_b. */
static kgl_tensor *supervision_loss(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const kgl_supervision *sup,
                                    kgl_forward *out)
{
    int H = m->cfg.heads, n_rel = m->cfg.n_relations;
    int *rows = kgl_arena_alloc(&t->arena, (size_t)(b->n ? b->n : 1) * sizeof(int));
    int *tails = kgl_arena_alloc(&t->arena, (size_t)(b->n ? b->n : 1) * sizeof(int));
    int total = 0;
    for (int e = 0; e < b->n; e++) {
        int r = b->rel[e];
        if (r < n_rel && sup->head_of[r] >= 0 && sup->head_of[r] < H) total++;
    }
    if (total == 0) return NULL;
    kgl_tensor *aux = NULL;
    int used = 0;
    for (int h = 0; h < H; h++) {
        int count = 0;
        for (int e = 0; e < b->n; e++) {
            int r = b->rel[e];
            if (r < n_rel && sup->head_of[r] == h) {
                rows[used + count] = b->head[e];
                tails[used + count] = b->tail[e];
                count++;
            }
        }
        if (count == 0) continue;
        kgl_tensor *S_rows = kgl_gather_rows(t, out->logits_attn[h], rows + used, count);
        kgl_tensor *ce = kgl_cross_entropy(t, S_rows, tails + used, 0.0);
        kgl_tensor *part = count == total ? ce : kgl_scale(t, ce, (double)count / total);
        aux = aux ? kgl_add(t, aux, part) : part;
        used += count;
    }
    out->n_supervised = total;
    return aux;
}

void kgl_model_loss(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const kgl_supervision *sup, kgl_forward *out)
{
    kgl_model_loss_reg(m, t, b, sup, NULL, out);
}

void kgl_model_loss_reg(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const kgl_supervision *sup,
                        const kgl_regularisers *reg, kgl_forward *out)
{
    kgl_model_loss_multi(m, t, b, NULL, NULL, sup, reg, out);
}

void kgl_model_loss_multi(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const int *answer_off,
                          const int *answers, const kgl_supervision *sup, const kgl_regularisers *reg,
                          kgl_forward *out)
{
    int *identity = kgl_arena_alloc(&t->arena, (size_t)(b->n ? b->n : 1) * sizeof(int));
    for (int k = 0; k < b->n; k++) identity[k] = k;
    const int *heads = b->head; /* the head state of example k is row heads[k] of out->context */
    if (m->cfg.context == KGL_CONTEXT_GRAPH) {
        if (sup && sup->head_of) kgl_die("head supervision: defined for the full context only");
        const kgl_neighbourhood *nb = b->context;
        if (!nb) { /* the fixed rule, leaving out each example's own triple */
            const kgl_graph *g = model_graph(m);
            kgl_neighbourhood *fixed = neighbourhood_alloc(&t->arena, b->n, m->cfg.neighbours);
            int *scratch = kgl_arena_alloc(&t->arena, kgl_neighbourhood_scratch(g) * sizeof(int));
            kgl_neighbourhood_fill(g, m->cfg.neighbours, b->head, b->rel, b->tail, b->n,
                                   answers != NULL || m->cfg.hide_asked, NULL, 0, scratch, fixed);
            nb = fixed;
        }
        if (nb->n != b->n) kgl_die("--context graph: %d neighbourhoods for %d examples", nb->n, b->n);
        graph_layer(m, t, reg, nb, b->rel, out); /* one state per example */
        heads = identity;
    } else
        context(m, t, reg, sup && sup->head_of, out);
    kgl_tensor *states = out->context;
    const int *state_rows = heads; /* before the hidden dropout */
    if (reg && reg->rng && reg->hidden_dropout > 0) {
        /* a mask per example: gather the head states, drop, read out row b */
        if (heads != identity) states = kgl_gather_rows(t, out->context, b->head, b->n);
        states = kgl_dropout(t, states, reg->hidden_dropout, reg->rng);
        heads = identity;
    }
    /* Entity dropout on the candidates (as LibKGE drops every entity
       embedding it scores against): one mask on the whole table E, so each
       step scores the batch against a thinned copy of every entity. The
       query side keeps its own regularisers (--dropout, --hidden-dropout). */
    kgl_tensor *candidates = reg ? kgl_dropout(t, m->entity_emb, reg->entity_dropout, reg->rng) : m->entity_emb;
    out->scores = m->cfg.readout == KGL_READOUT_COMPLEX
                      ? kgl_trilinear_complex(t, states, m->relation_emb, candidates, heads, b->rel, b->n)
                      : kgl_trilinear(t, states, m->relation_emb, candidates, heads, b->rel, b->n);
    double eps = reg ? reg->label_smoothing : 0.0;
    out->main_loss = answers ? kgl_multilabel_ce(t, out->scores, answer_off, answers, eps)
                             : kgl_cross_entropy(t, out->scores, b->tail, eps);
    if (reg && reg->relation_loss > 0) {
        /* Relation prediction (Chen et al. 2021): the readout's own score of
           (i, k, t) for every relation row k (inverses included), and a
           cross entropy against the example's own row r. Its gradient
           reaches R through every row, not only the batch's, and E through
           the tails. Diagonal: Σ_c C[i,c] E[t,c] R[k,c], the trilinear
           product with the roles of R and E swapped. Complex: Re Σ_c C[i,c]
           R[k,c] conj(E[t,c]) = Re Σ_c conj(C[i,c]) E[t,c] conj(R[k,c]),
           the complex product with conj(C) in the first place. */
        kgl_tensor *rel_scores =
            m->cfg.readout == KGL_READOUT_COMPLEX
                ? kgl_trilinear_complex(t, kgl_conjugate(t, states), candidates, m->relation_emb, heads, b->tail, b->n)
                : kgl_trilinear(t, states, candidates, m->relation_emb, heads, b->tail, b->n);
        kgl_tensor *rel_loss = kgl_cross_entropy(t, rel_scores, b->rel, eps);
        out->main_loss = kgl_add(t, out->main_loss, kgl_scale(t, rel_loss, reg->relation_loss));
    }
    if (reg && reg->n3 > 0) {
        if (answers) kgl_die("n3: needs one tail per example (kgl train refuses it with --targets kvsall)");
        /* N3 (Lacroix et al. 2018): the cubed absolute values of the three
           rows each example multiplies in the readout, summed, averaged
           over the batch. A row that appears in many examples is weighed
           as often as it is used, unlike weight decay. */
        kgl_tensor *rows[3] = {kgl_gather_rows(t, out->context, state_rows, b->n),
                               kgl_gather_rows(t, m->relation_emb, b->rel, b->n),
                               kgl_gather_rows(t, m->entity_emb, b->tail, b->n)};
        kgl_tensor *n3 = NULL;
        for (int k = 0; k < 3; k++) {
            kgl_tensor *term = kgl_sum(t, kgl_abs_cube(t, rows[k]));
            n3 = n3 ? kgl_add(t, n3, term) : term;
        }
        out->main_loss = kgl_add(t, out->main_loss, kgl_scale(t, n3, reg->n3 / (b->n ? b->n : 1)));
    }
    out->aux_loss = (sup && sup->head_of) ? supervision_loss(m, t, b, sup, out) : NULL;
    out->loss = out->aux_loss ? kgl_add(t, out->main_loss, kgl_scale(t, out->aux_loss, sup->weight)) : out->main_loss;
}

/* ---- the whole layer, gradient-checked parameter by parameter ------------ */

typedef struct model_eval_ctx {
    kgl_model *m;
    kgl_tape *tape;
    const kgl_batch *b;
    const kgl_supervision *sup;
    const kgl_regularisers *reg; /* with dropout: every evaluation replays the same masks */
    kgl_rng rng0;
} model_eval_ctx;

static void model_loss_fixed_masks(model_eval_ctx *ctx, kgl_forward *f)
{
    kgl_regularisers reg;
    kgl_rng rng = ctx->rng0;
    if (ctx->reg) {
        reg = *ctx->reg;
        reg.rng = &rng;
    }
    kgl_model_loss_reg(ctx->m, ctx->tape, ctx->b, ctx->sup, ctx->reg ? &reg : NULL, f);
}

static double model_eval(void *vctx)
{
    model_eval_ctx *ctx = vctx;
    kgl_tape_reset(ctx->tape);
    ctx->tape->recording = false;
    kgl_forward f;
    model_loss_fixed_masks(ctx, &f);
    return f.loss->data[0];
}

int kgl_gradcheck_model(kgl_model *m, const kgl_batch *b, const kgl_supervision *sup, double rel_tol,
                        kgl_check_result *res)
{
    return kgl_gradcheck_model_reg(m, b, sup, NULL, rel_tol, res);
}

int kgl_gradcheck_model_reg(kgl_model *m, const kgl_batch *b, const kgl_supervision *sup,
                            const kgl_regularisers *reg, double rel_tol, kgl_check_result *res)
{
    kgl_tape tape;
    kgl_tape_init(&tape);
    kgl_params_zero_grad(&m->params);
    kgl_forward f;
    model_eval_ctx ctx = {m, &tape, b, sup, reg, {{0}}};
    if (reg && reg->rng) ctx.rng0 = *reg->rng;
    model_loss_fixed_masks(&ctx, &f);
    kgl_backward(&tape, f.loss);

    /* the analytic gradients are overwritten by nothing below (evaluations do
       not record), but copy them so the comparison reads a stable array */
    size_t total = m->params.total;
    kgl_arena keep = {0};
    kgl_real *analytic = kgl_arena_alloc(&keep, total * sizeof(kgl_real));
    memcpy(analytic, m->params.block + total, total * sizeof(kgl_real));

    size_t off = 0;
    for (int i = 0; i < m->params.n; i++) {
        kgl_param *p = &m->params.p[i];
        kgl_check_result *r = &res[i];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", p->name);
        snprintf(r->shapes, sizeof r->shapes, "%dx%d", p->t.rows, p->t.cols);
        r->rel_tol = rel_tol;
        kgl_fd_stats st = {0};
        st.first_bad = -1;
        kgl_fd_compare(p->t.data, analytic + off, kgl_numel(&p->t), 1e-5, rel_tol, model_eval, &ctx, &st);
        r->checks = st.checks;
        r->max_abs_err = st.max_abs_err;
        r->max_rel_err = st.max_rel_err;
        r->pass = st.failures == 0 && st.nonzero;
        if (st.failures)
            snprintf(r->why, sizeof r->why, "element %ld: analytic %.10g, numeric %.10g", st.first_bad,
                     st.first_bad_analytic, st.first_bad_numeric);
        else if (!st.nonzero)
            snprintf(r->why, sizeof r->why, "analytic gradient is all zero");
        off += kgl_numel(&p->t);
    }
    kgl_arena_free(&keep);
    kgl_tape_free(&tape);
    return m->params.n;
}

/* ---- the standard whole-layer checks ------------------------------------- */

const char *kgl_layer_check_name(int which)
{
    static const char *const names[KGL_LAYER_CHECKS] = {"no FFN", "FFN 16", "FFN 16 + supervised heads",
                                                         "complex + relation loss, qk-norm",
                                                         "FFN 16 + dropout + smooth",
                                                         "graph, K 2, FFN, qk-norm, dropout",
                                                         "no context (DistMult)",
                                                         "graph, K 2, asks relation, masked",
                                                         "2 layers, FFN 16, qk-norm, dropout",
                                                         "graph, K 2, 2 layers, asks relation"};
    return which >= 0 && which < KGL_LAYER_CHECKS ? names[which] : "?";
}

int kgl_layer_check(int which, uint64_t seed, kgl_check_result *res)
{
    enum { N = 13, M = 5, T = 16 };
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = N;
    cfg.n_relations = M;
    cfg.ffn = which == 1 || which == 2 || which == 4 ? 16 : 0;
    cfg.qk_norm = cfg.learn_temperature = which == 3 || which == 5;
    if (which == 3) cfg.readout = KGL_READOUT_COMPLEX;
    if (which == 5) { /* each example attends over at most 2 of its edges, never its own triple's */
        cfg.context = KGL_CONTEXT_GRAPH;
        cfg.neighbours = 2;
        cfg.ffn = 16;
    }
    if (which == 6) cfg.context = KGL_CONTEXT_NONE;
    if (which == 7) { /* the query token carries the example's relation: Pq gets its gradient */
        cfg.context = KGL_CONTEXT_GRAPH;
        cfg.neighbours = 2;
        cfg.query_relation = true;
    }
    if (which == 8 || which == 9) { /* a stack: layer 1 reads layer 0's states (or its question's state) */
        cfg.layers = 2;
        cfg.ffn = 16;
        cfg.qk_norm = cfg.learn_temperature = true;
    }
    if (which == 9) {
        cfg.context = KGL_CONTEXT_GRAPH;
        cfg.neighbours = 2;
        cfg.query_relation = true;
    }
    kgl_model m;
    kgl_model_create(&m, &cfg);
    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    kgl_model_init(&m, &rng);
    if (which == 3 || which == 5 || which >= 8) /* away from the init values, so every path carries gradient */
        for (int k = 0; k < m.params.n; k++)
            if (m.params.p[k].vector)
                for (int i = 0; i < m.params.p[k].t.cols; i++) m.params.p[k].t.data[i] += 0.3 * kgl_rng_normal(&rng);
    /* T seeded triples and their reciprocals, as kgl train builds a batch */
    int head[2 * T], rel[2 * T], tail[2 * T];
    for (int e = 0; e < T; e++) {
        head[e] = (int)kgl_rng_below(&rng, N);
        rel[e] = e % M;
        tail[e] = (int)kgl_rng_below(&rng, N);
        head[T + e] = tail[e];
        rel[T + e] = M + rel[e];
        tail[T + e] = head[e];
    }
    kgl_batch b = {2 * T, head, rel, tail, NULL};
    kgl_triple triples[T];
    for (int e = 0; e < T; e++) triples[e] = (kgl_triple){head[e], rel[e], tail[e]};
    kgl_model_set_graph(&m, triples, T); /* the graph context's: the batch's own triples */
    kgl_neighbourhood masked = {0};
    if (which == 7) { /* the fixed rule's segments, half of them without their entity (--source-dropout) */
        kgl_neighbourhood_alloc(&masked, b.n, cfg.neighbours);
        int *scratch = kgl_xmalloc(kgl_neighbourhood_scratch(m.graph) * sizeof(int));
        kgl_neighbourhood_fill(m.graph, cfg.neighbours, head, rel, tail, b.n, false, NULL, 0, scratch, &masked);
        free(scratch);
        kgl_rng mask_rng;
        kgl_rng_seed(&mask_rng, seed + 7);
        kgl_neighbourhood_mask_sources(&masked, 0.5, &mask_rng);
        b.context = &masked;
    }
    int head_of[M] = {0, 1, -1, -1, -1};
    kgl_supervision sup = {head_of, 1.0};
    /* The loss is a composition of ~30 smooth ops with O(1) values; the
       finite-difference error stays ~1e-9 relative, so 1e-6 has headroom. */
    /* which 4: every dropout of the model and label smoothing, the masks
       drawn from a fixed stream state, replayed for every evaluation */
    kgl_rng drop_rng;
    kgl_rng_seed(&drop_rng, seed + 4);
    kgl_regularisers reg = {.dropout = 0.2, .attn_dropout = 0.1, .hidden_dropout = 0.3, .label_smoothing = 0.1,
                            .relation_loss = 0.5, .n3 = 0.1, .entity_dropout = 0.25, .rng = &drop_rng};
    /* which 3: the complex readout's relation loss (no masks: every
       evaluation is the same function) */
    kgl_regularisers complex_reg = {.relation_loss = 0.5, .label_smoothing = 0.1};
    const kgl_regularisers *use = which == 4 || which == 5 || which >= 8 ? &reg : which == 3 ? &complex_reg : NULL;
    int n = kgl_gradcheck_model_reg(&m, &b, which == 2 ? &sup : NULL, use, 1e-6, res);
    if (which == 7) kgl_neighbourhood_free(&masked);
    kgl_model_free(&m);
    return n;
}
