/* model.c — the model's configuration and parameters: what they are
 * (kgl_config, its checks), their names and shapes, their initialisation;
 * and the whole loss gradient-checked parameter by parameter. The layer's
 * forward is layer.c's, the loss's loss.c's, the neighbourhoods graph.c's. */
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
        "--neighbours must be between 1 and 4096 (0 with --relation-token: the question alone)",
        "--query-relation needs --context graph",
        "--query-relation needs the reciprocal relations (not --no-reciprocal)",
        "--hide-asked-relation needs --query-relation (a state per question)",
        "--layers must be between 1 and 8",
        "--relation-token needs --query-relation (a state per question)",
        "--candidate-states needs --query-relation (a state per question)",
        "--candidate-states must be a finite number >= 0",
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
    if (cfg->context == KGL_CONTEXT_GRAPH &&
        (cfg->neighbours < (cfg->relation_token ? 0 : 1) || cfg->neighbours > KGL_MAX_NEIGHBOURS))
        return msgs[10];
    if (cfg->query_relation && cfg->context != KGL_CONTEXT_GRAPH) return msgs[11];
    if (cfg->query_relation && !cfg->reciprocal) return msgs[12];
    if (cfg->hide_asked && !cfg->query_relation) return msgs[13];
    if (cfg->layers < 1 || cfg->layers > KGL_MAX_LAYERS) return msgs[14];
    if (cfg->relation_token && !cfg->query_relation) return msgs[15];
    if (!(cfg->candidate_states >= 0) || !isfinite(cfg->candidate_states)) return msgs[17];
    if (cfg->candidate_states > 0 && !cfg->query_relation) return msgs[16];
    return NULL;
}

const char *const kgl_context_names[3] = {"full", "graph", "none"};
const char *const kgl_readout_names[2] = {"diagonal", "complex"};

const char *kgl_context_name(kgl_context_kind context)
{
    return (unsigned)context < 3 ? kgl_context_names[context] : "?";
}

int kgl_config_relation_rows(const kgl_config *cfg) { return cfg->reciprocal ? 2 * cfg->n_relations : cfg->n_relations; }

int kgl_config_segment_tokens(const kgl_config *cfg) { return cfg->neighbours + 1 + cfg->relation_token; }

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
    int first = ps->n; /* this layer's parameters, marked at the end for --layer-lr */
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
    for (int i = first; i < ps->n; i++) ps->p[i].layer = true;
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
        m->context_relation_emb = kgl_params_add(ps, "context.relation_emb",
                                                 2 * cfg->n_relations + 1 + (cfg->relation_token ? 2 * cfg->n_relations : 0), d);
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

/* The parameters whose gradient is zero by the model's algebra, not by a
   missing backward, and why. Their check asks the opposite of the others':
   every analytic partial at most KGL_ZERO_FLOOR and every finite difference
   agreeing (so also zero). It fails if a backward starts writing there, or
   if the forward stops being invariant to them.
   - The keys' layer norm shift β_k: each score of a query is
     q · (k̂ γ + β_k) / τ = q · k̂ γ / τ + q · β_k / τ, and the second term is
     the same for every key the query sees, so the softmax (invariant to a
     constant added to all of its logits) and everything after it do not
     move with β_k. It stays in the model for the checkpoints written with it
     (and for symmetry with the queries' β_q, which does move the scores). */
static const char *zero_by_design(const char *name)
{
    static const char *const suffix = "attn.k_norm.beta";
    size_t n = strlen(name), k = strlen(suffix);
    if (n >= k && strcmp(name + n - k, suffix) == 0)
        return "zero by design: q . beta_k is the same for every key of a segment, and softmax ignores a shift";
    return NULL;
}

int kgl_gradcheck_model_reg(kgl_model *m, const kgl_batch *b, const kgl_supervision *sup,
                            const kgl_regularisers *reg, double rel_tol, kgl_check_result *res)
{
    kgl_tape tape;
    kgl_tape_init(&tape);
    tape.poison_unset = true; /* an op that claims a gradient must write all of it */
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
        kgl_fd_compare_richardson(p->t.data, analytic + off, kgl_numel(&p->t), 1e-4, rel_tol, model_eval, &ctx, &st);
        r->checks = st.checks;
        r->max_abs_err = st.max_abs_err;
        r->max_rel_err = st.max_rel_err;
        const char *zero = zero_by_design(p->name);
        r->pass = st.failures == 0 && (zero ? !st.nonzero : st.nonzero);
        if (st.failures)
            snprintf(r->why, sizeof r->why, "element %ld: analytic %.10g, numeric %.10g", st.first_bad,
                     st.first_bad_analytic, st.first_bad_numeric);
        else if (zero && st.nonzero)
            snprintf(r->why, sizeof r->why, "analytic gradient %.3g, expected zero (%s)", st.max_abs_analytic, zero);
        else if (zero)
            snprintf(r->why, sizeof r->why, "%s", zero); /* a note: the check passed */
        else if (!st.nonzero)
            snprintf(r->why, sizeof r->why, "analytic gradient is all zero (at most %.3g)", st.max_abs_analytic);
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
                                                         "graph, K 2, 2 layers, asks relation",
                                                         "graph, K 2, relation token, qk-norm, masked",
                                                         "graph, K 0, relation token, 2 layers",
                                                         "graph, K 0, relation token, outer residual + layer dropout, complex",
                                                         "outer residual + layer dropout, 2 layers, dropout",
                                                         "graph, K 2, 2 layers, head questions take their input"};
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
    if (which == 9 || which == 10 || which == 11) {
        cfg.context = KGL_CONTEXT_GRAPH;
        cfg.neighbours = which == 11 ? 0 : 2;
        cfg.query_relation = true;
    }
    if (which == 10 || which == 11) { /* the asked relation a token: its row of P gets its gradient */
        cfg.relation_token = true;
        cfg.qk_norm = cfg.learn_temperature = true; /* the distinct tokens' keys, the entityless one among them */
        cfg.layers = which == 11 ? 2 : 1;
    }
    if (which == 12) { /* large.args' question alone: x_b + LN(x_b + o Wo) into the complex readout */
        cfg.context = KGL_CONTEXT_GRAPH;
        cfg.neighbours = 0;
        cfg.query_relation = cfg.relation_token = cfg.outer_residual = true;
        cfg.qk_norm = cfg.learn_temperature = true;
        cfg.readout = KGL_READOUT_COMPLEX;
    }
    if (which == 13) { /* the full context, each of two layers adding its input back */
        cfg.outer_residual = true;
        cfg.layers = 2;
    }
    if (which == 14) { /* --head-state input: the batch's reciprocal half reads x_b, the rest two layers */
        cfg.context = KGL_CONTEXT_GRAPH;
        cfg.neighbours = 2;
        cfg.query_relation = cfg.head_state_input = true;
        cfg.layers = 2;
        cfg.qk_norm = true;
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
    kgl_arena segments = {0};
    if (which == 7 || which == 10) { /* the fixed rule's segments, half of them without their entity (--source-dropout) */
        kgl_neighbourhood *masked = kgl_model_neighbourhood_alloc(&m, &segments, b.n);
        kgl_neighbourhood_fixed(masked, head, rel, tail, b.n, false);
        kgl_rng mask_rng;
        kgl_rng_seed(&mask_rng, seed + 7);
        kgl_neighbourhood_mask_sources(masked, 0.5, &mask_rng);
        b.context = masked;
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
                            .relation_loss = 0.5, .n3 = 0.1, .entity_dropout = 0.25, .layer_dropout = 0.4,
                            .rng = &drop_rng}; /* layer dropout: with the outer residual (which 12, 13) */
    /* which 3: the complex readout's relation loss (no masks: every
       evaluation is the same function) */
    kgl_regularisers complex_reg = {.relation_loss = 0.5, .label_smoothing = 0.1};
    /* which 13: the same without N3, whose Σ|x|³ over states that each layer adds its input to is large
       enough that its curvature, not the backward, set the finite differences' error */
    kgl_regularisers outer_reg = reg;
    outer_reg.n3 = 0;
    const kgl_regularisers *use = which == 13 ? &outer_reg
                                  : which == 4 || which == 5 || which >= 8 ? &reg
                                  : which == 3 ? &complex_reg : NULL;
    int n = kgl_gradcheck_model_reg(&m, &b, which == 2 ? &sup : NULL, use, 1e-6, res);
    kgl_arena_free(&segments);
    kgl_model_free(&m);
    return n;
}
