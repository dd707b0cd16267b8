/* kgl/model.h — the layer built from the engine's ops, the
 * trainer (batches, schedules, regularisers, filtered evaluation), the
 * checkpoint file, and the per-head diagnostics the studies measure. Built on
 * kgl/engine.h and kgl/io.h. */
#ifndef KGL_MODEL_H
#define KGL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kgl/engine.h"
#include "kgl/io.h"

/* ---------------------------------------------------------------- model --
 * The layer of the README's model section, built from the ops above. */
#define KGL_MAX_HEADS 64

typedef enum { KGL_SCALE_SQRT = 0, KGL_SCALE_NONE, KGL_SCALE_VALUE } kgl_scale_kind;
/* The readout's product of the head state and the relation row: feature by
 * feature (the specified layer), or of d/2 complex numbers (ComplEx). */
typedef enum { KGL_READOUT_DIAGONAL = 0, KGL_READOUT_COMPLEX } kgl_readout_kind;
/* What entity i attends over: every entity (the specified layer), its
 * neighbourhood in the training graph (a segment of at most K edges and
 * itself), or nothing (no layer: the readout on the entity embeddings). */
typedef enum { KGL_CONTEXT_FULL = 0, KGL_CONTEXT_GRAPH, KGL_CONTEXT_NONE } kgl_context_kind;
#define KGL_MAX_NEIGHBOURS 4096
/* --layers L: a stack of at most this many layers (README, "A stack of layers"). */
#define KGL_MAX_LAYERS 8

typedef struct kgl_config {
    int n_entities;   /* n */
    int n_relations;  /* m, original relations */
    bool reciprocal;  /* relation_emb has 2m rows; the inverse of k is m + k */
    int dim, heads, ffn;
    kgl_scale_kind scale;
    double scale_value; /* τ when scale == KGL_SCALE_VALUE */
    double init_scale;  /* s in N(0, (s/√d)²) for the attention weights */
    /* Remedies for saturation (extensions of the specified layer, off by default): */
    bool qk_norm;       /* layer-normalise each head's Q and K rows (ViT-22B) */
    bool learn_temperature; /* S_h = exp(θ_h) τ Q_h K_hᵀ with a learned θ_h, init 0 */
    /* An extension of the readout (off by default): */
    kgl_readout_kind readout; /* complex: score Re Σ C[i] R[r] conj(E[j]) over d/2 complex numbers */
    /* An extension of the context (full by default): */
    kgl_context_kind context;
    int neighbours;           /* K: the edges a neighbourhood keeps (--context graph) */
    bool query_relation;      /* --query-relation: the query token also sees the asked relation */
    bool hide_asked;          /* --hide-asked-relation: a question (i, r) never sees i's edges of
                                 relation r, in training and in evaluation alike */
    bool relation_token;      /* --relation-token: the asked relation is a token of the question's
                                 segment too (context.relation_emb's rows 2m + 1 + r) */
    int layers;               /* --layers L: the layer applied L times, each with its own weights (default 1) */
    bool outer_residual;      /* --outer-residual: each layer's input added to its output, x + LN(x + o Wo)
                                 (+ FFN): the question's own row kept beside what the layer makes of it */
    double candidate_states;  /* --candidate-states λ: a head question (t, r⁻¹, ?) also reads each candidate j's
                                 own question (j, r) (kgl_add_candidate_side; 0: off, the default) */
    bool head_state_input;    /* --head-state input: a head question (t, r⁻¹, ?) takes its input row x_b as its
                                 state, the layer's output only the tail questions' (layer.c) */
} kgl_config;

/* ---------------------------------------------------------------- graph --
 * The training graph as each entity's edges (src/model/graph.c). Entity i
 * has the edge (r, j) for every training triple (i, r, j) and (m + r, j)
 * for every training triple (j, r, i); the edges of i are
 * rel/nb[offsets[i] .. offsets[i+1]), in the order of kgl_edge_key (a fixed
 * hash of (i, relation row, j)), which is the order evaluation takes them in. */
typedef struct kgl_graph {
    int n_entities, n_relations; /* n, m: edge relation rows 0 … 2m − 1 */
    int *offsets;                /* [n + 1] */
    int *rel, *nb;               /* [2 · triples] */
    int max_degree;
} kgl_graph;
void kgl_graph_build(kgl_graph *g, int n_entities, int n_relations, const kgl_triple *tr, int n);
void kgl_graph_free(kgl_graph *g);
/* The fixed order of the edges: splitmix64's finaliser f applied as
 * f(f(entity · 2³² + rel) xor neighbour), smaller first. */
uint64_t kgl_edge_key(int entity, int rel, int neighbour);

/* The neighbourhoods of a batch: segment b is the tokens offsets[b] …
 * offsets[b+1] − 1, each an entity and the relation row of its edge; the
 * first token of a segment is the query entity itself, with relation row 2m;
 * with --relation-token the second is the asked relation r, a token of no
 * entity (entity −1, the zero slot) with relation row asked_row + r.
 * Everything about them is src/model/graph.c's: the edges above, the
 * sampler of training, the fixed rule of evaluation, and their room, in an
 * arena (kgl_neighbourhood_alloc). */
typedef struct kgl_neighbourhood {
    const kgl_graph *graph; /* whose edges the segments take */
    int K;                  /* a segment keeps at most K edges */
    int asked_row;          /* 2m + 1 with --relation-token (the asked relation's token), else -1 */
    int capacity;           /* room for this many segments */
    int n;
    int *offsets;         /* [n + 1] */
    int *entity, *relation; /* [n (K + 2)] at most (K + 1 without the asked token) */
    /* the distinct entities of the tokens, in order of first appearance
       (the layer projects each once): token t is unique[slot[t]] */
    int n_unique;
    int *unique, *slot;   /* a token each at most */
    int *query_slot;      /* [n]: slot of segment b's first token */
    int zero_slot;        /* -1, or the slot n_unique, a row of zeros: what the asked
                             relations' tokens read, and the first tokens that
                             kgl_neighbourhood_mask_sources masks */
    /* after kgl_neighbourhood_find_distinct (else NULL): the distinct tokens
       (slot, relation), in order of first appearance: token t is pair
       token_pair[t]; a token's key is a function of its pair alone, so with
       --qk-norm the layer normalises each pair's key once (in a batch many
       tokens repeat: an entity's edge to a hub) */
    int n_pairs;
    int *pair_slot, *pair_relation; /* a token each at most */
    int *token_pair;                /* a token each */
    int *pair_table, table_size;    /* the open-addressing table that finds them: [table_size], a power of 2 */
    int *scratch;         /* the sampler's: [max_degree + n_entities + 1] */
} kgl_neighbourhood;
/* Room in arena `a` for the neighbourhoods of up to n questions in graph g,
 * each keeping at most K edges (and, with asked_token, the asked relation's
 * token: --relation-token), with the sampler's scratch: the one
 * allocation of neighbourhoods (a trainer's once, evaluation's on its tape). */
kgl_neighbourhood *kgl_neighbourhood_alloc(kgl_arena *a, const kgl_graph *g, int n, int K, bool asked_token);
/* Room in arena `a` for nb's distinct tokens, found from then on by every
 * draw (now too, if nb holds segments): what the layer with --qk-norm reads
 * (about 7 ints a token more; a model without qk-norm does not need it). */
void kgl_neighbourhood_find_distinct(kgl_neighbourhood *nb, kgl_arena *a);
/* Training's draw (one per step): segment b is head[b] itself, then at most K
 * of its edges, never those of the triple example b asks about: (rel[b],
 * tail[b]), and with tail[b] = head[b] the same triple read backwards; with
 * all_answers (1-N targets, or --hide-asked-relation) every answer of the
 * query (head[b], rel[b]): each edge (rel[b], ·), and the self-loop read
 * backwards when (head[b], rel[b], head[b]) is one; tail is not read then and
 * may be NULL. tail and rel NULL: no edge is left out. The K edges are drawn
 * from rng uniformly without replacement (the first K steps of a
 * Fisher–Yates shuffle of the candidates, kgl_rng_below); then with
 * edge_dropout p > 0 each chosen edge is dropped when a uniform drawn for it
 * (in order, after the segment's shuffle draws) is below p (--edge-dropout;
 * the entity's own token is never dropped); then the sources are masked with
 * source_dropout (kgl_neighbourhood_mask_sources, the same rng). n at most
 * nb's capacity. */
void kgl_neighbourhood_sample(kgl_neighbourhood *nb, const int *head, const int *rel, const int *tail, int n,
                              bool all_answers, kgl_rng *rng, double edge_dropout, double source_dropout);
/* Evaluation's rule, with the same edges left out: the first K candidates in
 * the graph's fixed order, nothing random (evaluation asks with rel and
 * all_answers only under --hide-asked-relation, and with no tail: the triples
 * it asks about are not training triples). */
void kgl_neighbourhood_fixed(kgl_neighbourhood *nb, const int *head, const int *rel, const int *tail, int n,
                             bool all_answers);
/* --source-dropout p: one uniform per segment, in order; when it is below p
 * the segment's entity row is left out of its first token (and so of the
 * query token), which then reads the zero slot: the state must come from the
 * entity's edges (as HittER masks the source entity). Training only. */
void kgl_neighbourhood_mask_sources(kgl_neighbourhood *nb, double p, kgl_rng *rng);
/* The index of segment b's first edge token: after the entity itself and,
 * when the segment holds one (--relation-token, filled with the questions'
 * relations), the asked relation's token. offsets[b + 1] when it has none. */
int kgl_neighbourhood_first_edge(const kgl_neighbourhood *nb, int b);

/* One layer's weights: attention, residual, layer norm, optional FFN. Layer 0's
 * tensors are named as in the README's table (attn.wq, ln1.gamma, …); layer
 * l ≥ 1's carry the prefix "layer<l>." (layer1.attn.wq). */
typedef struct kgl_block {
    kgl_tensor *wq, *wk, *wv, *wo;
    kgl_tensor *ln1_gamma, *ln1_beta;
    kgl_tensor *ffn_w1, *ffn_b1, *ffn_w2, *ffn_b2, *ln2_gamma, *ln2_beta; /* NULL without FFN */
    kgl_tensor *qn_gamma, *qn_beta, *kn_gamma, *kn_beta; /* [dk] each, with qk_norm */
    kgl_tensor *log_temperature;                         /* [H], with learn_temperature */
} kgl_block;

typedef struct kgl_model {
    kgl_config cfg;
    kgl_params params;
    kgl_tensor *entity_emb, *relation_emb;
    kgl_block layer[KGL_MAX_LAYERS]; /* cfg.layers of them; layer[0] is the specified layer */
    kgl_tensor *context_relation_emb; /* P [2m + 1, d], with --context graph: a token's relation row */
    kgl_tensor *context_query_emb;    /* Pq [2m, d], with --query-relation: the asked relation's row */
    kgl_graph *graph; /* with --context graph: the training graph (kgl_model_set_graph; owned) */
    bool ablate[KGL_MAX_HEADS]; /* zero these heads' outputs (a runtime switch for studies) */
    /* Build the attention from matmul_nt, scale, softmax_rows and matmul
     * (every S_h a tensor with its gradient) instead of the fused
     * kgl_attention op; the same numbers to round-off. Automatic when head
     * supervision, attention dropout or an ablated head needs it. */
    bool composed_attention;
    /* The fused attention measures max |S_h| and ‖∂L/∂S_h‖ into
     * kgl_forward's attn_stats (set by kgl_diag_init; off: one pass fewer). */
    bool measure_attention;
} kgl_model;

/* Sets defaults: d 8, H 2, no FFN, sqrt scale, init scale 1, reciprocal. */
void kgl_config_defaults(kgl_config *cfg);
/* A configuration error for people ("--heads 3 does not divide --dim 8"),
 * or NULL when the configuration is valid. */
const char *kgl_config_error(const kgl_config *cfg);
int kgl_config_relation_rows(const kgl_config *cfg);
/* The words of --context, --readout and of the checkpoint's metadata, in
 * the order of their enums: "full", "graph", "none"; "diagonal", "complex". */
extern const char *const kgl_context_names[3];
extern const char *const kgl_readout_names[2];
/* kgl_context_names[context] ("?" for a value out of range). */
const char *kgl_context_name(kgl_context_kind context);
double kgl_config_tau(const kgl_config *cfg);
/* The most tokens a question's segment holds in the graph context: the
 * entity, the asked relation with --relation-token, K edges. */
int kgl_config_segment_tokens(const kgl_config *cfg);

/* Declares and allocates the parameters (all zero); then either initialise
 * them (kgl_model_init) or load them. The config must be valid. */
void kgl_model_create(kgl_model *m, const kgl_config *cfg);
/* The number of values per section (kgl_params' total) kgl_model_create
 * declares for `cfg`, which must be valid: the same declarations, nothing
 * allocated. */
size_t kgl_config_parameters(const kgl_config *cfg);
/* The specified init, drawn from `rng` parameter by parameter in declaration
 * order (entity_emb, relation_emb, attn.wq, attn.wk, attn.wv, attn.wo,
 * ffn.w1, ffn.w2), each in row-major order; gammas 1, betas and biases 0. */
void kgl_model_init(kgl_model *m, kgl_rng *rng);
void kgl_model_free(kgl_model *m);
/* --context graph: builds the graph of the training triples the model
 * attends over (kept by the model until kgl_model_free). Other contexts:
 * nothing. */
void kgl_model_set_graph(kgl_model *m, const kgl_triple *train, int n_train);
/* Room in `a` for the neighbourhoods of up to n questions of model m (its
 * graph, its K), with what its layer reads: the distinct tokens when it has
 * --qk-norm. The one way the trainer, evaluation and the checks make it. */
kgl_neighbourhood *kgl_model_neighbourhood_alloc(const kgl_model *m, kgl_arena *a, int n);

/* A batch of examples (head i, relation r, tail t); relation ids < m are
 * forward, m + k the inverse of k. The arrays are borrowed. */
typedef struct kgl_batch {
    int n;
    const int *head, *rel, *tail;
    /* --context graph: each example's neighbourhood (a segment per example,
       a training step's kgl_neighbourhood_sample); NULL: the fixed rule
       (kgl_neighbourhood_fixed, which kgl_layer_forward draws) */
    const kgl_neighbourhood *context;
} kgl_batch;

/* Head supervision: head_of[r] is the head assigned to original relation r,
 * or -1. NULL (or no assigned relation in the batch) means no aux term. */
typedef struct kgl_supervision {
    const int *head_of; /* [m] */
    double weight;      /* λ */
} kgl_supervision;
/* --supervise-heads "advises=0,authored=1" -> head_of[r] (ds->n_relations of
 * them; -1 for a relation not named), each head below `heads`. False with
 * "--supervise-heads: ..." in err: an item not RELATION=HEAD, an unknown
 * relation (kgl_dataset_unknown_relation), a head out of range, a relation
 * named twice, an empty list. */
bool kgl_supervision_parse(const char *spec, const kgl_dataset *ds, int heads, int *head_of, char *err, size_t cap);

typedef struct kgl_forward {
    kgl_tensor *context;                /* C [n, d]; with --context graph in a loss, [B, d]: example b's state */
    const int *state_row;               /* question k's state is row state_row[k] of C (NULL: row k) */
    /* --context graph, in a loss: the segments attended over and their
       weights [tokens, H] (column h: head h) */
    const kgl_neighbourhood *neighbourhood;
    kgl_tensor *segment_logits, *segment_attn;
    kgl_tensor *layer_segment_attn[KGL_MAX_LAYERS]; /* --context graph: each layer's weights [tokens, H] */
    kgl_tensor *layer_segment_logits[KGL_MAX_LAYERS]; /* and its scores [tokens, H] (layer 0's: segment_logits) */
    kgl_tensor *q, *k;                  /* Q, K [n, d] (graph context: K of the neighbourhood's
                                           distinct pairs before the norm with qk-norm, else
                                           the distinct entities' part E[j] Wk of a token's key) */
    kgl_tensor *logits_attn[KGL_MAX_HEADS]; /* S_h [n, n] (scaled); NULL with the fused attention */
    double *attn_stats;                 /* fused attention: [2H] max |S_h|, then ‖∂L/∂S_h‖ after backward */
    kgl_tensor *attn[KGL_MAX_HEADS];    /* A_h [n, n] */
    kgl_tensor *layer_attn[KGL_MAX_LAYERS][KGL_MAX_HEADS]; /* a stack's A_h of every layer (layer 0's: attn) */
    /* and, for the log's diagnostics of every layer, its S_h (layer 0's:
       logits_attn) or the fused attention's measurements (layer 0's: attn_stats) */
    kgl_tensor *layer_logits_attn[KGL_MAX_LAYERS][KGL_MAX_HEADS];
    double *layer_attn_stats[KGL_MAX_LAYERS];
    kgl_tensor *head_out[KGL_MAX_HEADS]; /* A_h V_h [n, dk] */
    kgl_tensor *scores;                 /* readout logits [B, n] (loss only) */
    kgl_tensor *main_loss, *aux_loss;   /* aux NULL when nothing was supervised */
    kgl_tensor *loss;                   /* main + λ aux */
    int n_supervised;
} kgl_forward;

/* The contextual states C of every entity (and the attention on the way):
 * kgl_layer_forward asking every entity nothing, without regularisers. */
void kgl_model_context(const kgl_model *m, kgl_tape *t, kgl_forward *out);
/* Context, readout and loss of the README's model section for one batch:
 * kgl_layer_forward on the batch's questions, then kgl_readout_loss. */
void kgl_model_loss(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const kgl_supervision *sup,
                    kgl_forward *out);

/* ------------------------------------------------- the full-batch gradient --
 * `kgl grad` (src/model/gradient.c): the loss over every training example
 * in one batch and the gradient of every parameter, for inspection and for
 * checking against other frameworks. */
/* The full batch, as kgl train forms it: the n_train triples in their
 * order, then (reciprocal) their reciprocals (tail, n_relations + rel,
 * head). Returns the array b's columns point into (free it). */
int *kgl_full_batch(const kgl_triple *train, int n_train, int n_relations, bool reciprocal, kgl_batch *b);
/* The losses of one full-batch pass. */
typedef struct kgl_gradient_losses {
    double loss, main_loss, aux; /* aux: NAN without head supervision */
    bool has_aux;
    int examples;                /* the batch's examples */
} kgl_gradient_losses;
/* kgl_model_loss on the full batch (sup NULL: no aux term) into *l, then,
 * when the loss is finite, the backward pass: every parameter's gradient
 * in m->params (zeroed first). False, with no gradient computed, when the
 * loss is not finite. */
bool kgl_full_batch_gradient(kgl_model *m, const kgl_triple *train, int n_train, int n_relations,
                             const kgl_supervision *sup, kgl_gradient_losses *l);
/* The Euclidean norm of p's gradient. */
double kgl_param_grad_norm(const kgl_param *p);
/* The gradients of `params` to `path` (safetensors through kgl_st_write:
 * each under its parameter's name and shape; metadata format "kgl-grad/1",
 * loss, main_loss, aux_loss ("" without supervision), step, examples and
 * `checkpoint`, each number at 17 digits). False with "path: why" in err. */
bool kgl_gradients_write(const char *path, const char *checkpoint, long step, const kgl_params *params,
                         const kgl_gradient_losses *l, char *err, size_t err_cap);

/* Training-time regularisers (extensions of the specified layer, all off by default).
 * Dropout (inverted: kept values scaled by 1/(1 − p)) draws its masks from
 * `rng`, an explicit stream of its own, in forward order: the input
 * embeddings X = drop(E) (Q, K, V and the residual read X; the readout's
 * candidates are E itself), each head's attention weights, the attention
 * output before the residual U = X + drop(O Wo) (and the FFN output before
 * its residual, then with --layer-dropout a mask of rows on the layer's
 * term), and in the loss each example's head state C[i] (a mask per
 * example), then the readout's candidates, all of E. Label smoothing is the
 * cross entropy's ε. With rng NULL no dropout happens (evaluation). */
typedef struct kgl_regularisers {
    double dropout;         /* --dropout: input embeddings, before each residual */
    double attn_dropout;    /* --attn-dropout: attention weights */
    double hidden_dropout;  /* --hidden-dropout: the head state of each example in the readout
                               (a mask on R[r] instead would be the same: the readout
                               multiplies C[i], R[r] and E[j] feature by feature) */
    double label_smoothing; /* --label-smoothing: ε */
    double relation_loss;   /* --relation-loss λ: + λ · the cross entropy of predicting each
                               example's relation from its head state and tail (with 1-N targets
                               one tail a query, drawn from its answers: kgl_readout_loss) */
    double n3;              /* --n3 λ: + λ · (1/|B|) Σ_b Σ_c |C[i_b,c]|³ + |R[r_b,c]|³ + |E[t_b,c]|³
                               (Lacroix et al. 2018; the head state before hidden dropout) */
    double source_dropout;  /* --source-dropout: a graph context's segment without its entity's row
                               (training only; kgl_neighbourhood_mask_sources draws it) */
    double edge_dropout;    /* --edge-dropout: each sampled edge of a graph context's segment
                               (training only; kgl_neighbourhood_sample draws it) */
    double entity_dropout;  /* --entity-dropout: the readout's candidates, E[j] for every entity j
                               (one mask on the whole table a step, drawn after the hidden dropout's) */
    double layer_dropout;   /* --layer-dropout: with --outer-residual, each row's layer term Y of
                               C = x + Y dropped whole (C = x), one draw a row, layer by layer
                               after the layer's other masks; kept rows x + Y / (1 − p) */
    kgl_rng *rng;
} kgl_regularisers;
/* What the layer is asked: n questions, question k about entity[k]. */
typedef struct kgl_questions {
    int n;
    const int *entity; /* [n] */
    const int *rel;    /* [n]: the relation row each asks (a --query-relation state depends on it), or NULL */
    const int *tail;   /* [n]: a training example's answer, whose edges its neighbourhood leaves out, or NULL */
    bool all_answers;  /* the neighbourhood leaves out every answer of (entity, rel): 1-N targets,
                          --hide-asked-relation (kgl_neighbourhood_sample) */
    /* --context graph: segment k for question k (a training step's draw);
       NULL: kgl_layer_forward draws the fixed rule's in the tape's arena */
    const kgl_neighbourhood *neighbourhood;
    bool keep_logits;  /* --context full: each head's logits S_h as a tensor with a
                          gradient (out->logits_attn; head supervision reads them) */
} kgl_questions;
/* The layer, the one forward of training and evaluation alike: the head
 * states C of questions q into out->context, question k's in row
 * out->state_row[k]. The full context computes every entity's state (row
 * entity[k]), no context is the embeddings themselves, and the neighbourhood
 * context one state per question over its segment (row k). q NULL asks every
 * entity nothing (evaluation's entity states; state_row NULL): the graph
 * context computes them by the fixed rule in blocks on tapes of their own
 * (t gives the pool), never recorded, and dies when reg has a generator
 * (dropout there would be silently dropped). reg: the regularisers of the
 * layer (dropout, attention dropout; NULL: none, as at evaluation). */
void kgl_layer_forward(const kgl_model *m, kgl_tape *t, const kgl_questions *q, const kgl_regularisers *reg,
                       kgl_forward *out);
/* The loss apart from the layer: with out holding the head states of b's
 * examples (kgl_layer_forward on the questions (head, rel, tail) of b), the
 * readout's scores against every entity, the cross entropy against b's tails
 * (or, with answers, each example's answers[answer_off[k] .. answer_off[k+1])),
 * and the terms reg and sup add: hidden and entity dropout, label smoothing,
 * the relation loss, N3, head supervision. */
void kgl_readout_loss(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const int *answer_off, const int *answers,
                      const kgl_supervision *sup, const kgl_regularisers *reg, kgl_forward *out);
/* kgl_model_loss with regularisers (reg NULL: exactly kgl_model_loss). */
void kgl_model_loss_reg(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const kgl_supervision *sup,
                        const kgl_regularisers *reg, kgl_forward *out);

/* Finite differences of the whole loss, parameter by parameter. Fills one
 * result per parameter (at most KGL_MAX_PARAMS) and returns how many. */
int kgl_gradcheck_model(kgl_model *m, const kgl_batch *b, const kgl_supervision *sup, double rel_tol,
                        kgl_check_result *res);
/* The same with regularisers: the dropout masks are those reg->rng draws
 * from its state at the call, replayed for every evaluation (fixed masks). */
int kgl_gradcheck_model_reg(kgl_model *m, const kgl_batch *b, const kgl_supervision *sup,
                            const kgl_regularisers *reg, double rel_tol, kgl_check_result *res);

/* The standard whole-layer checks of `kgl gradcheck`: n = 13, d = 8, H = 2,
 * m = 5 relations with reciprocals, seeded random triples; without FFN, with
 * an FFN of width 16, with the FFN plus head supervision (relation 0 on
 * head 0, relation 1 on head 1), with the saturation remedies (qk-norm
 * and a learned temperature per head), and with the FFN, every dropout,
 * label smoothing and the relation-prediction term at weight 0.5 (masks
 * drawn once from a seeded stream, then fixed); the graph context (K 2,
 * over the batch's own triples, FFN 16, qk-norm, learned temperature, the
 * same regularisers); no context (the readout on the embeddings); and the
 * graph context (K 2) whose query token carries the asked relation; and two
 * stacks of two layers (--layers 2): the full context with the FFN, the
 * remedies and every regulariser, and the graph context asking the relation
 * with the same; the asked relation as a token (--relation-token): with K 2,
 * qk-norm and half the segments' entities masked, and alone (K 0) in a stack
 * of two. */
#define KGL_LAYER_CHECKS 15
const char *kgl_layer_check_name(int which);
int kgl_layer_check(int which, uint64_t seed, kgl_check_result *res);
/* ------------------------------------------------------------ splitting --
 * One triples file into train, valid and test (`kgl split`, src/model/split.c),
 * so that every entity and relation of valid and test is in train, each
 * relation is split in the asked proportions as closely as that allows, and
 * the same triples, fractions and seed give the same split on any machine:
 *   1. Targets. Valid is asked V = round(n valid) triples, test T = round(n
 *      test). Relation r (c_r triples) gets floor(c_r V / n) of valid; the
 *      V minus their sum left go one each to the relations with the largest
 *      remainders (c_r V mod n, exact integers), ties in a seeded random
 *      order of the relations; then test likewise. A relation's targets
 *      never take its last triple (valid_r + test_r <= c_r - 1), so every
 *      relation stays in train (one with a single triple stays whole), and
 *      a remainder goes past a relation that is full to the next.
 *   2. Assignment. In one seeded random order of all the triples, a triple
 *      goes to valid while its relation's valid target is not met, else to
 *      test while its test target is not met, else stays in train; but a
 *      triple whose head or tail is in no other triple left in train stays
 *      in train ("kept"), and a later triple of its relation may take its
 *      place.
 * The draws come from kgl_rng seeded with `seed`: the relations' order (a
 * Fisher–Yates shuffle with kgl_rng_below), then the triples' order. */
enum { KGL_PART_TRAIN, KGL_PART_VALID, KGL_PART_TEST };
typedef struct kgl_split_plan {
    int n, n_relations;
    unsigned char *part;  /* [n]: the part of each triple, KGL_PART_*, in the order given */
    int count[3];         /* triples in each part */
    int asked[3];         /* valid and test: round(n · fraction) ([0] is what is left: n − V − T) */
    int *rel_count;       /* [m * 3]: relation r's triples in part p at rel_count[3 r + p] */
    int *rel_target;      /* [m * 3]: its targets (step 1; [3 r] its triples less both) */
    int *rel_kept;        /* [m]: its triples that stayed in train for their head or tail */
    int kept;             /* all of them */
} kgl_split_plan;
/* Splits the n unique triples tr (entity ids < n_entities, relation ids <
 * n_relations) with 0 <= valid, 0 <= test and valid + test < 1. */
void kgl_split_triples(kgl_split_plan *plan, const kgl_triple *tr, int n, int n_entities, int n_relations,
                       double valid, double test, uint64_t seed);
void kgl_split_plan_free(kgl_split_plan *plan);
/* The plan of ds->splits[0] (its n triples) written as three files,
 * paths[KGL_PART_TRAIN], [VALID] and [TEST]: each part's triples in the
 * order given, one head<TAB>relation<TAB>tail line each, by name; a part
 * with no triple an empty file (never an old file of another split left
 * beside the new ones). As one set (kgl_outfile_commit_set): each file
 * written whole to a temporary beside it, then the three renamed, so that
 * a full disk replaces none of them. False with "path: why" in err (a
 * failed rename also says which files are new). */
bool kgl_split_write_parts(const kgl_dataset *ds, const kgl_split_plan *plan, const char *const paths[3], char *err,
                           size_t err_cap);
/* The report `kgl split` prints on f (src/model/split.c): the input's
 * counts and the fractions and seed asked; a table of every relation's
 * triples, train, valid, test and kept, and the totals; each file's path
 * (paths[KGL_PART_*], "" for none) and triples, with what valid and test
 * asked and, when short, why (a triple each relation keeps in train,
 * triples kept for an entity, the relations short named, five at most); and
 * a line on what was kept in train. */
void kgl_split_report_write(FILE *f, const kgl_dataset *ds, const kgl_split_plan *plan, const char *input,
                            const double *fraction, uint64_t seed, const char *const paths[3]);
/* The same as one JSON object on f and a newline (`kgl split --json`):
 * input, triples, entities, relations, seed, duplicates, kept, files (per
 * part: path, triples, asked, fraction) and per_relation (triples, train,
 * valid, test, kept). */
void kgl_split_report_json(FILE *f, const kgl_dataset *ds, const kgl_split_plan *plan, const char *input,
                           const double *fraction, uint64_t seed, const char *const paths[3]);

/* ------------------------------------------------------------- training --
 * Requires the data section (kgl_dataset, kgl_triple). */

/* Filtered ranking metrics (README, "The model, exactly"): the means over
 * the ranked examples of 1/rank (MRR), of rank <= k (Hits@k) and of the
 * rank itself (MR, the mean rank). */
typedef struct kgl_metrics {
    double mrr, hits1, hits3, hits10, mr;
    long n; /* ranked examples */
} kgl_metrics;

/* One ranking query: the scores are (left[a] ⊙ mid[b]) · cand[j] for every
 * candidate j; `target` is ranked, the known answers of (key_entity,
 * key_rel) are filtered out. */
typedef struct kgl_eval_query {
    int a, b, target, key_entity, key_rel;
} kgl_eval_query;

typedef struct kgl_eval {
    int n_relations, n_entities;
    kgl_metrics tail, head, both;
    kgl_metrics *rel_tail, *rel_head; /* per original relation [m] */
    /* the same with the optimistic rank (ties counted in the target's
       favour: 1 + number scoring higher), as NTP reports */
    kgl_metrics tail_optimistic, head_optimistic, both_optimistic;
    /* scratch, grown by the first evaluation to the data's size */
    kgl_real *scores;                 /* [chunk, n] a chunk of queries' scores */
    kgl_real *vecs;                   /* [chunk, d] their left ⊙ mid rows */
    kgl_real *mixture;                  /* [chunk, n] an ensemble's mean probabilities */
    kgl_eval_query *queries;          /* [2 n_triples] tail queries, then head queries */
    double *rank_lo, *rank_hi;        /* [2 n_triples] optimistic and pessimistic ranks */
    kgl_real *query_states;           /* [chunk, d] a --query-relation member's states of a chunk of queries */
    int *query_keys;                  /* [2 chunk] those queries' entities, then relations */
    size_t cap_vecs, cap_queries, cap_ranks, cap_mixture, cap_query_states, cap_query_keys;
    kgl_pool *pool;                   /* threads (a 1-thread pool of its own by default) */
    bool owns_pool;
    /* Called after each chunk of queries, from the evaluating thread, with
       the queries ranked so far and all of them (2 n: tails, then heads);
       NULL (kgl_eval_init's) for none. kgl's progress lines use it. */
    void (*progress)(void *ctx, long done, long total);
    void *progress_ctx;
} kgl_eval;

void kgl_eval_init(kgl_eval *e, int n_entities, int n_relations);
void kgl_eval_free(kgl_eval *e);
/* Scores and ranks on `pool` (borrowed; NULL: a 1-thread pool of its own). */
void kgl_eval_set_pool(kgl_eval *e, kgl_pool *pool);
/* The realistic filtered rank of `target` among scores[0..n): 1 + (number of
 * unfiltered candidates scoring higher) + (number scoring equal)/2, skipping
 * the candidates in `known` (sorted) other than the target. A NaN score
 * counts as higher than the target's; a NaN target ranks last. */
double kgl_filtered_rank(const kgl_real *scores, int n, int target, const int *known, int n_known);
/* The same count, both ends of the tie range: optimistic 1 + higher,
 * pessimistic 1 + higher + equal (the realistic rank is their mean). */
void kgl_filtered_rank_range(const kgl_real *scores, int n, int target, const int *known, int n_known,
                             double *optimistic, double *pessimistic);
/* Ranks every triple of tr[0..n) for its tail and its head with the entity
 * states C (from kgl_model_context). Queries are scored in chunks as one
 * matrix product against every candidate, then filtered and ranked, rows in
 * parallel on the eval's pool; the metrics are summed in triple order, so
 * they are the same bits for any number of threads. Allocates nothing once
 * its scratch has grown to the data's size (the first call). */
void kgl_evaluate(const kgl_model *m, const kgl_tensor *C, const kgl_dataset *ds, const kgl_triple *tr, int n,
                  kgl_eval *out);
/* The same for an ensemble of `members` models trained on the same triples
 * (models[k] with its entity states C, states[k] [n, d_k]; widths may differ, entities,
 * relations and reciprocal mode may not): each candidate's score is the mean
 * over the members of the probability each gives it (the softmax of its
 * logits over all entities), and ranks are taken on that. One member is
 * exactly kgl_evaluate (ranked on its logits). */
#define KGL_MAX_ENSEMBLE 64
/* Why a model cannot join an ensemble whose member 0 has config `first`
 * (the members must answer over the same entities and relation rows), or
 * NULL when it can. */
const char *kgl_ensemble_mismatch(const kgl_config *first, const kgl_config *other);
/* mix[j] += softmax(scores)[j] / members for j < n (scores is overwritten):
 * one member's share of an ensemble's probabilities, the arithmetic every
 * ensemble function here uses, so their ranks agree to the bit. */
void kgl_mixture_add(kgl_real *scores, int n, int members, kgl_real *mix);
void kgl_evaluate_ensemble(const kgl_model *const *models, const kgl_real *const *states, int members,
                           const kgl_dataset *ds, const kgl_triple *tr, int n, kgl_eval *out);
/* A ranking's results as JSON (src/model/results.c), as kgl train --json and
 * kgl eval --json write them. kgl_json_metric: {"mrr":..,"hits1":..,
 * "hits3":..,"hits10":..,"mr":..,"n":..}. kgl_json_eval: the object
 * {"tail":M,"head":M,"both":M,"optimistic":{"tail":M,"head":M,"both":M},
 * "per_relation":{REL:{"tail":M,"head":M},...}} with a relation only when
 * use[r] and ranked (its tail count is not 0). kgl_json_spec: {REL:[spec of
 * head 0, head 1, ...],...} for the relations in use, spec [heads, m]
 * (where head h looks by relation r: spec[h * m + r], kgl_heads_spec). */
void kgl_json_metric(kgl_json_writer *w, const kgl_metrics *m);
void kgl_json_eval(kgl_json_writer *w, const kgl_dataset *ds, const bool *use, const kgl_eval *e);
void kgl_json_spec(kgl_json_writer *w, const kgl_dataset *ds, const bool *use, int heads, const double *spec);
/* The same as the text tables kgl train and kgl eval print, written to f
 * (src/model/report_text.c). kgl_metrics_table_write: a blank line, "SPLIT:
 * N triples, filtered ranking ...", then a row per relation in use and
 * ranked (n, then MRR, H@1, H@3, H@10 and MR of tail and of head
 * prediction), the row "all", and the lines "both directions: MRR ..." and
 * "optimistic ties: MRR ...". kgl_spec_table_write: where the heads look by
 * relation (spec [heads, m], kgl_heads_spec) under a line saying what it
 * measures: a column per relation (at most 12 in use), or a row per
 * relation; nothing for KGL_CONTEXT_NONE, and a line saying so for a graph
 * context no neighbourhood of which held an edge of these relations.
 * kgl_relations_width: the column the names of the relations in use take
 * (at least 8 characters, at most `most`; kgl_table_width). */
void kgl_metrics_table_write(FILE *f, const char *split, int n_triples, const kgl_dataset *ds, const bool *use,
                             const kgl_eval *e);
void kgl_spec_table_write(FILE *f, const kgl_dataset *ds, const bool *use, int heads, const double *spec,
                          kgl_context_kind context);
int kgl_relations_width(const kgl_dataset *ds, const bool *use, int most);
/* The training tails of every (relation, entity), deduplicated: what spec
 * and the head reports measure attention against. */
typedef struct kgl_tails {
    int n_entities, n_relations;
    int *offsets; /* [m * n + 1]: tails of (r, i) are tails[offsets[r*n+i] .. offsets[r*n+i+1]) */
    int *tails;
} kgl_tails;
void kgl_tails_build(kgl_tails *tl, int n_entities, int n_relations, const kgl_triple *tr, int n);
void kgl_tails_free(kgl_tails *tl);

/* --context graph: the states of n queries (entity[k], rel[k]) by evaluation's
 * fixed rule (the first K edges, none left out) into states [n, d]. With
 * --query-relation each depends on its relation (rel NULL: none asked, as
 * kgl_model_context's); without, it is row entity[k] of kgl_model_context's. */
void kgl_model_query_states(const kgl_model *m, kgl_pool *pool, const int *entity, const int *rel, int n,
                            kgl_real *states);

/* --candidate-states λ: the candidates' side of head questions (README, "The
 * neighbourhood context"). For every query k < count asked through an
 * inverse row (relation_row[k] = m + r: the head question (?, r, t) with
 * t = entity[k]) adds to its scores [n] over the candidates j
 *   Σ_c S_(j,r)[c] · w[c],   w = λ R[r] ⊙ E[t]   (one sum per j, from the score, c in order)
 * S_(j,r) the state of the forward question (j, r) by evaluation's rule. The
 * n states of one relation are kept in `side` between calls, so queries
 * sorted by relation compute each relation's once. Forward queries are left
 * as they are; λ = 0 changes nothing. */
typedef struct kgl_candidate_side {
    int row;          /* the relation whose states are held (-1: none yet) */
    kgl_real *states; /* [n, d] S_(j,row) */
    int *asked;       /* [n] row, n times */
    kgl_real *w;      /* [d] one query's w */
} kgl_candidate_side;
void kgl_candidate_side_init(kgl_candidate_side *side);
void kgl_candidate_side_free(kgl_candidate_side *side);
void kgl_add_candidate_side(const kgl_model *m, kgl_pool *pool, kgl_candidate_side *side, int count,
                            const int *entity, const int *relation_row, kgl_real *scores);

/* ---------------------------------------------------------------- heads --
 * What a head looks at, measured on a forward pass (src/model/heads.c): the
 * primitives the training log, kgl train's report and the heads study
 * (kgl/studies.h, src/studies/heads.c) all read attention through. */
/* spec[h][r] (README, "The model, exactly"): mean over entities i with at least
 * one r-tail of Σ_{t ∈ tails_r(i)} A_h[i, t]; written to spec[h * m + r],
 * NAN for a relation without tails. */
void kgl_specialisation(const kgl_tails *tl, int heads, kgl_tensor *const *attn, double *spec);
/* rows[h * n + j] = A_h[entity, j]: where every head of a full-context
 * model looks from `entity` (one forward pass, not recorded). */
void kgl_attention_rows(const kgl_model *m, int entity, kgl_real *rows);
/* The same question in a neighbourhood context (the weights A [tokens, H] of
 * the segments of nb): spec[h][r] is the mean over the segments with at
 * least one edge of original relation r (either direction: rows r and m + r)
 * of the weight head h puts on those edges. Written to spec[h * m + r], NAN
 * for a relation no segment has. */
void kgl_relation_attention(const kgl_neighbourhood *nb, const kgl_tensor *A, int heads, int m, double *spec);
/* kgl_relation_attention of a --context graph model over every entity's
 * evaluation neighbourhood (the first K edges in the fixed order), with
 * the weight on the entity itself (its own token) in self[h], and in
 * uniform[r] what uniform weights over each neighbourhood would put on r's
 * edges (the baseline; self and uniform may be NULL). `pool` may be NULL.
 * With --query-relation, where a state (so its weights) depends on the
 * question, over the questions of the triples tr[0..n_tr) instead: (h, r, ?)
 * and (t, r⁻¹, ?) each (tr is not read otherwise). */
void kgl_model_relation_attention(const kgl_model *m, kgl_pool *pool, const kgl_triple *tr, int n_tr, double *spec,
                                  double *self, double *uniform);
/* The triples whose questions kgl heads and the training log measure that on
 * (the first of the training file): enough for a mean, bounded in cost. */
#define KGL_RELATION_ATTENTION_TRIPLES 2000
/* One question's neighbourhood and where each head of each layer looks in
 * it (`kgl heads --query` on a --context graph model): the segment that
 * evaluation builds for (entity, row, ?) (the entity itself, then the first
 * K of its edges in the fixed order; with --hide-asked-relation none of
 * row's), token t being the edge (relation[t], entity[t]), token 0 the
 * entity itself (relation row 2m) and, with --relation-token, token 1 the
 * asked relation (entity −1, relation row 2m + 1 + row), and weight[(l · n_tokens + t) · heads + h]
 * the weight head h of layer l puts on token t. Free with
 * kgl_segment_view_free. */
typedef struct kgl_segment_view {
    int n_tokens, layers, heads;
    int *entity, *relation; /* [n_tokens] */
    double *weight;         /* [layers · n_tokens · heads] */
} kgl_segment_view;
void kgl_model_question_segment(const kgl_model *m, int entity, int row, kgl_segment_view *out);
/* Token t of a question's segment in words, into out: "(itself) NAME" for
 * the entity itself, "(asked) RELATION" for the asked relation's token
 * (--relation-token; entity −1), "RELATION NAME" for an edge. */
void kgl_segment_token_name(const kgl_dataset *ds, const kgl_segment_view *sv, int t, char *out, size_t cap);
/* The relation row (0 … 2m − 1) that token t of sv asks when it is the asked
 * relation's token (--relation-token: entity −1, P's row 2m + 1 + row), else −1. */
int kgl_segment_asked_relation(const kgl_dataset *ds, const kgl_segment_view *sv, int t);
/* Whether token t of sv stands for an entity marked in is_true[n] (the
 * asked relation's token stands for none). */
bool kgl_segment_token_is(const kgl_segment_view *sv, int t, const bool *is_true);
void kgl_segment_view_free(kgl_segment_view *v);

/* A learning-rate schedule over optimiser steps t = 1, 2, …: the rate of
 * update t is lr · f(t) with
 *   constant:  f = 1
 *   warmup W:  f = min(1, t / W)  before whichever decay follows
 *   cosine:    f = floor + (1 − floor) (1 + cos(π min(t, T)/T)) / 2   (T = steps)
 *   linear:    f = 1 − (1 − floor) min(t, T)/T
 * Extensions of the specified layer (which trains at a constant lr). */
typedef enum { KGL_SCHED_CONSTANT = 0, KGL_SCHED_COSINE, KGL_SCHED_LINEAR } kgl_schedule_kind;
/* "constant", "cosine", "linear": the words of --lr-schedule and of the metadata lr_schedule. */
extern const char *const kgl_schedule_names[3];
typedef struct kgl_schedule {
    kgl_schedule_kind kind;
    long warmup;  /* W steps of linear warmup (0: none) */
    long total;   /* T: the step at which the decay ends */
    double floor; /* the final fraction of lr */
} kgl_schedule;
double kgl_schedule_factor(const kgl_schedule *s, long step);

typedef struct kgl_train_config {
    int batch;                  /* examples per step (default 1024) */
    uint64_t seed;              /* init and shuffle */
    kgl_optim optim;
    const int *head_of;         /* head supervision [m], or NULL */
    double aux_weight;          /* λ */
    bool freeze_embeddings;     /* entity_emb stays at its initial value (fixed features) */
    /* Attention as lookup (an extension for the specialisation study): fixed
     * entity features, Wv = Wo = I (frozen), so a head's output is the
     * attended entities' own features, and each relation row tied within
     * each head's columns, so a relation can only choose which heads to read
     * (projected after every update). Implies freeze_embeddings. */
    bool lookup;
} kgl_train_config;

typedef struct kgl_trainer {
    const kgl_dataset *ds;
    kgl_model model;
    kgl_optim optim;
    kgl_train_config cfg;
    int *head_of;               /* owned copy, or NULL */
    kgl_supervision sup;
    kgl_tape tape;              /* the training step's activations */
    kgl_tape eval_tape;         /* evaluations between steps */
    kgl_forward fwd;            /* the last step's forward (valid until the next step) */
    const kgl_triple *train;    /* the training triples in use */
    int n_train;
    kgl_tails tails;            /* their tails per (relation, entity) */
    int n_examples;             /* forward examples, then their reciprocals */
    int *ex_head, *ex_rel, *ex_tail;
    int *order;                 /* this epoch's permutation of the examples */
    int *b_head, *b_rel, *b_tail; /* the current batch */
    int cursor;                 /* next position in `order` (0: a new epoch starts) */
    kgl_rng epoch_rng;          /* shuffle state before this epoch's shuffle */
    kgl_rng shuffle_rng;        /* shuffle state now */
    double last_main, last_aux; /* of the last step (aux NAN when none) */
    /* regularisers (kgl_trainer_set_regularisers; none by default) and the
       dropout stream, seeded from the seed apart from init and shuffle */
    kgl_regularisers reg;
    kgl_rng dropout_rng;
    /* learning-rate schedule (kgl_trainer_set_schedule): optim.lr is set
       from base_lr before every update */
    kgl_schedule sched;
    double base_lr;
    /* 1-N / KvsAll targets (kgl_trainer_set_kvsall). Query q's answers are q_answers[q_off[q] .. q_off[q+1]);
       the current batch's are b_answers[b_off[b] .. b_off[b+1]) */
    bool kvsall;
    int *q_off, *q_answers, *b_off, *b_answers;
    /* --context graph: the current batch's neighbourhoods, drawn for step k
       from a generator seeded with seed ⊕ "NEIGHBR" ⊕ k · 0x9e3779b97f4a7c15
       (so a resumed run draws the same ones), in an arena of the trainer's
       allocated once */
    kgl_arena arena;
    kgl_neighbourhood *neighbourhood;
} kgl_trainer;

/* Prepares training of `model_cfg` (entity and relation counts are taken
 * from ds) on train[0..n_train), with fresh parameters drawn from the seed.
 * The triples must outlive the trainer. */
void kgl_trainer_init(kgl_trainer *tr, const kgl_dataset *ds, const kgl_triple *train, int n_train,
                      const kgl_config *model_cfg, const kgl_train_config *tc);
void kgl_trainer_free(kgl_trainer *tr);
/* Runs the trainer's steps and evaluations on `pool` (borrowed; NULL: one
 * thread). Every result is the same bits for any number of threads. */
void kgl_trainer_set_pool(kgl_trainer *tr, kgl_pool *pool);
/* One optimiser step on the next batch: kgl_trainer_compute (forward and
 * backward; the gradients and tr->fwd then describe the parameters before
 * the update) followed by kgl_trainer_update. Returns the loss of the
 * forward pass. A non-finite loss leaves the parameters untouched (the
 * caller stops). */
double kgl_trainer_step(kgl_trainer *tr);
double kgl_trainer_compute(kgl_trainer *tr);
/* kgl_trainer_compute on a given batch instead of the next one (the batch
 * position does not move); `kgl bench` times steps on a fixed batch. */
double kgl_trainer_compute_batch(kgl_trainer *tr, const kgl_batch *b);
void kgl_trainer_update(kgl_trainer *tr);
/* Entity states C of the current parameters (on eval_tape, no gradients),
 * with the attention on the way in f. */
kgl_tensor *kgl_trainer_context(kgl_trainer *tr, kgl_forward *f);
/* Whether an epoch ends with a batch under an eighth of the others (*last
 * examples or queries; the others tr->cfg.batch), which takes a full Adam
 * step on a far noisier gradient; *equal is the batch size that makes its
 * *batches batches equal. kgl train warns of it. */
bool kgl_trainer_short_last_batch(const kgl_trainer *tr, long *last, long *equal, long *batches);
/* The same states without the attention weights: what evaluation needs, in
 * far less memory (H n² doubles fewer). NULL for a --query-relation model:
 * its evaluation computes each question's own state, and reads none of these
 * (kgl_evaluate takes the NULL). */
kgl_tensor *kgl_trainer_states(kgl_trainer *tr);
/* Whether every training triple ranks first, tail and head (filtered). */
bool kgl_trainer_fits(kgl_trainer *tr, kgl_eval *scratch);
/* The batch position, for a checkpoint: the shuffle state that (re)creates
 * the current epoch's order, and the cursor into it. At an epoch boundary
 * (cursor 0) that is the state the next epoch will shuffle with. */
void kgl_trainer_get_position(const kgl_trainer *tr, kgl_rng *epoch_rng, int *cursor);
/* Restores a position from kgl_trainer_get_position. */
void kgl_trainer_set_position(kgl_trainer *tr, const kgl_rng *epoch_rng, int cursor);
/* Turns on the regularisers (the rates of r; r->rng is ignored: the trainer
 * uses its own dropout stream). Dropout happens only in training steps. */
void kgl_trainer_set_regularisers(kgl_trainer *tr, const kgl_regularisers *r);
/* Sets the schedule; the rate given in the train config is its base. */
void kgl_trainer_set_schedule(kgl_trainer *tr, const kgl_schedule *s);
/* Continues as if `step` updates had been applied (a resume): the
 * optimiser's step count, and with a schedule the rate of that step. */
void kgl_trainer_set_step(kgl_trainer *tr, long step);

/* A copy of everything that determines the rest of a run: parameters, the
 * optimiser's moments and step, the batch position and the dropout stream.
 * Restoring it makes the trainer continue exactly as from that moment (the
 * best model on valid is kept this way). The buffer is allocated on first
 * use and reused. */
typedef struct kgl_snapshot {
    kgl_real *values; /* data, m, v of every parameter */
    size_t total;
    long step;
    kgl_rng epoch_rng;
    int cursor;
    kgl_rng dropout_rng;
} kgl_snapshot;
void kgl_trainer_snapshot(const kgl_trainer *tr, kgl_snapshot *s);
void kgl_trainer_restore(kgl_trainer *tr, const kgl_snapshot *s);
void kgl_snapshot_free(kgl_snapshot *s);
/* Frees what only training steps use, the step's tape (its activations,
 * at their high-water mark), when no step follows for a while: a model of an
 * ensemble kept for the report. tr->fwd is invalid until the next step,
 * which allocates the tape again. */
void kgl_trainer_release_steps(kgl_trainer *tr);

/* The memory of training one model, in bytes, for a check before anything
 * is allocated (kgl train's estimate), with values of `value_bytes` each (8
 * in float64, 4 in float32, whichever this build computes in). The
 * parameters and the snapshot are counted as they are allocated (the
 * declarations of kgl_model_create; kgl_trainer_snapshot's copy); a step's
 * and an evaluation's arenas, from the shapes of the tensors the layer
 * makes, per context: a test holds them within 1.0 to 1.3 times the
 * arenas' high-water marks over the options (tests/cli_memory.c). */
typedef struct kgl_memory_plan {
    double parameters; /* the values, their gradients and Adam's two moments */
    double snapshot;   /* the best model so far (values and moments), with selection on valid */
    double step;       /* a training step's tape: activations, gradients and saved scratch */
    double attention;  /* the part of `step` of size n x n: every head's weights (--context full) */
    double states;     /* an evaluation's entity states (the trainer's eval_tape), every head's weights with them */
    double ranking;    /* one kgl_eval's scratch, ranking `ranked` triples */
    double mixture;    /* an ensemble's evaluation: the mixture of its members' probabilities */
    double examples;   /* the trainer's examples, batch, tails and neighbourhood index (ints) */
} kgl_memory_plan;
void kgl_trainer_plan(const kgl_config *cfg, const kgl_train_config *tc, const kgl_regularisers *reg, long n_train,
                      long ranked, size_t value_bytes, kgl_memory_plan *plan);
/* A whole run as kgl train's memory estimate sees it (src/model/train.c):
 * the model, its training options, how many models train and how; the
 * program compares the need with kgl_memory_available (kgl/engine.h). */
typedef struct kgl_memory_run {
    kgl_config cfg;
    kgl_train_config tc;  /* its batch and head supervision */
    kgl_regularisers reg; /* the regularisers' rates (each adds tensors) */
    long n_train;         /* training triples */
    long ranked;          /* the most triples one evaluation ranks */
    long triples;         /* of every split loaded */
    int members;          /* models (--ensemble) */
    int jobs;             /* of them training at once */
    int threads;          /* in the process */
    bool selecting;       /* --eval-every: a model keeps a snapshot of its best parameters while it trains */
    bool options;         /* its model's options can change (kgl train): a refusal names those that fit */
} kgl_memory_run;
/* What run `r` needs, in bytes, with values of `value_bytes` each (8 or 4;
 * kgl_trainer_plan): once the process (the program, its threads, the
 * data), every model's parameters, states and ranking scratch, and a step's
 * tape and snapshot for each model that trains at once. */
typedef struct kgl_memory_need {
    double resident;      /* at its peak (what MemAvailable and a cgroup's limit bound) */
    double address_space; /* mapped (what ulimit -v bounds): also the threads' stacks and malloc arenas */
    double parameters;    /* of `resident`: the parameters with their optimiser state */
    double attention;     /* of `resident`: the n x n attention weights */
} kgl_memory_need;
void kgl_memory_needed(const kgl_memory_run *r, size_t value_bytes, kgl_memory_need *need);

/* 1-N / KvsAll targets (an extension of the specified layer, as ConvE trains; off by
 * default). Call right after kgl_trainer_init: the examples become the
 * distinct queries (head, relation row) of the training examples (ordered
 * by relation row, then head), each trained against all of its known
 * training answers at once with kgl_multilabel_ce (its normalised
 * multi-hot, smoothed by the label smoothing). The batch size then counts
 * queries, an epoch is one pass over the queries (shuffled as the examples
 * are), and the batch position is a position among the queries. */
void kgl_trainer_set_kvsall(kgl_trainer *tr);
/* The loss of kgl_model_loss_reg with the main term against a set of
 * answers per example: answers[answer_off[b] .. answer_off[b+1]) for
 * example b of the batch (its `tail` is then unused by the main term). */
void kgl_model_loss_multi(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const int *answer_off,
                          const int *answers, const kgl_supervision *sup, const kgl_regularisers *reg,
                          kgl_forward *out);

/* --------------------------------------------------------------- recipe --
 * `kgl train --recipe FILE` (src/model/recipe.c): the words of kgl train
 * options, '#' comments, and formulas: a word "=EXPR" is replaced by the
 * value of EXPR, made of numbers, + - * / ( ), the graph's counts
 * n_entities, n_relations, n_train (training triples), n_pairs (the
 * distinct ordered (head, tail) pairs the training triples link) and min(a, b, ...),
 * max(a, b, ...), round(x), ceil(x), sqrt(x), log2(x); e.g. "--steps
 * =max(1000,round(n_train/2))". A line that starts with the guard
 * "=if(COND)" (two sums compared by < <= > >= == !=) counts only when COND
 * holds: "=if(n_entities<=500) --context full". The options that name files (KGL_OPTION_FILE:
 * --train, --valid, --test, --relations, --resume, --recipe, --save and
 * --log) are refused (they belong to the command line; --relations filters
 * the triples the formulas count).
 * A byte-order mark is skipped, a NUL byte refused. Errors are "file:line:
 * what is wrong". */
#define KGL_RECIPE_MAX_WORDS 128
/* Nesting in a formula (parentheses, function calls, signs): far beyond any
 * recipe's, and a bound on the evaluator's recursion (a formula nested
 * 20,000 deep overflowed the stack). */
#define KGL_RECIPE_MAX_DEPTH 64
typedef struct kgl_recipe_vars {
    long n_entities, n_relations, n_train;
    long n_pairs; /* distinct ordered (head, tail) pairs of the training triples: n_train / n_pairs is
                     how many relations link a linked pair, 1 when each pair has one (Kinship) */
} kgl_recipe_vars;
/* The distinct ordered (head, tail) pairs of n triples (kgl_recipe_vars.n_pairs). */
long kgl_distinct_pairs(const kgl_triple *tr, int n);
typedef struct kgl_recipe {
    int argc;
    char *argv[KGL_RECIPE_MAX_WORDS];  /* the words, formulas replaced by their values */
    int line[KGL_RECIPE_MAX_WORDS];    /* each word's line in the file */
    char values[KGL_RECIPE_MAX_WORDS][32];
    char text[4096];                   /* the words joined by spaces, for reports */
    kgl_text file;                     /* owns the words */
} kgl_recipe;
bool kgl_recipe_load(kgl_recipe *r, const char *path, const kgl_recipe_vars *v, char *err, size_t cap);
bool kgl_recipe_from_memory(kgl_recipe *r, const char *name, const char *text, size_t len,
                            const kgl_recipe_vars *v, char *err, size_t cap);
void kgl_recipe_free(kgl_recipe *r);
/* The value of one formula (without its '='); false with why. */
bool kgl_recipe_eval(const char *formula, const kgl_recipe_vars *v, double *value, char *why, size_t cap);
/* Whether a guard's COND (without "=if(" and ")") holds; false with why. */
bool kgl_recipe_condition(const char *cond, const kgl_recipe_vars *v, bool *holds, char *why, size_t cap);
/* A formula's value as the word a recipe gives in its place: a whole number
 * without a point ("342"), else 15 significant digits. */
void kgl_recipe_format(double x, char *out, size_t cap);
/* The words kgl train parses with recipe r: argv[0], the recipe's words,
 * then the command line's argv[1 .. argc) (coming later, they win); *n gets
 * their count. Malloc'd and NULL-terminated (free it); the words themselves
 * stay r's and argv's. */
char **kgl_recipe_command_line(const kgl_recipe *r, int argc, char **argv, int *n);
/* The recipe's options as the run uses them, for its report: into `line`
 * its words joined by spaces, an option the command line argv[1 .. argc)
 * gives too with the command line's value (its last); into `given` the
 * names of those options, ", "-separated ("" when none). Both cut to
 * their caps. E.g. "--dim 16 --steps 5" and "--steps". */
void kgl_recipe_as_run(const kgl_recipe *r, int argc, char **argv, char *line, size_t line_cap, char *given,
                       size_t given_cap);
/* kgl train's line on stderr saying what a recipe came to, KGL_RECIPE_SAID
 * FILE " (N entities, M relations, T training triples" KGL_RECIPE_SAID_OPTIONS
 * OPTIONS: kgl benchmark reads OPTIONS back from it (the check it runs
 * before any run), so both sides spell it with these. */
#define KGL_RECIPE_SAID "kgl train: recipe "
#define KGL_RECIPE_SAID_OPTIONS " training triples): "

/* Formulas on kgl train's command line, as in a recipe: "--batch
 * =ceil(n_train/5)". A formula needs the loaded triples, and the triples
 * need the command line parsed: kgl_formulas_find gives the command line
 * without each formula and its option (`first`) to parse first;
 * kgl_formulas_compute then computes them for the triples and gives the
 * whole command line with their values (`words`), which is parsed again.
 * The value of a file option (KGL_OPTION_FILE: --train ... --log) is a
 * name, never a formula. */
typedef struct kgl_formulas {
    int count;          /* formula words in argv */
    char **first;       /* argv without them and their options, NULL-terminated (NULL: no formula) */
    int first_argc;
    char **words;       /* argv with their values, NULL-terminated (after kgl_formulas_compute) */
    char (*values)[32]; /* values[k]: the value of the formula argv[k] */
} kgl_formulas;
/* Whether argv[k] is a formula: a word "=..." after an option "--name"
 * (not "--name=x") that does not name a file. */
bool kgl_formula_at(char *const *argv, int k);
void kgl_formulas_find(kgl_formulas *f, int argc, char **argv);
/* Computes every formula of argv for the counts v into f->words; false with
 * "--steps =n_trian: unknown name 'n_trian'; ..." in err (a formula cut
 * after 60 characters, "..." marking the cut). */
bool kgl_formulas_compute(kgl_formulas *f, int argc, char **argv, const kgl_recipe_vars *v, char *err, size_t cap);
/* Whether f->words[k] is a computed value (argv[k] was a formula). */
bool kgl_formulas_computed(const kgl_formulas *f, int k);
void kgl_formulas_free(kgl_formulas *f);

/* ----------------------------------------------------------- checkpoint --
 * A safetensors file (README, "The model, exactly"): the parameters by name,
 * Adam's moments as adam.m.<name> / adam.v.<name>, and string metadata:
 * format, d_model, n_heads, ffn, scale, init_scale, reciprocal, step, seed,
 * entities, relations; plus what an exact resume needs (optimizer, lr,
 * weight_decay, momentum, batch, aux_weight, supervise_heads, shuffle_state,
 * batch_cursor). Requires the data and safetensors sections. */
typedef struct kgl_train_state {
    long step;                 /* updates already applied */
    uint64_t seed;
    kgl_optim optim;           /* kind, lr, betas, eps, weight decay, momentum (step = `step`) */
    int batch;
    double aux_weight;
    char supervise[512];       /* "advises=0,authored=1" or "" */
    bool freeze_embeddings, lookup;
    kgl_rng epoch_rng;         /* batch position: shuffle state before this epoch */
    int cursor;                /* and the position inside it */
    /* regularisers and schedule (metadata dropout, attn_dropout,
       hidden_dropout, label_smoothing, dropout_state, lr_schedule,
       lr_warmup, lr_total, lr_floor; absent means none) */
    kgl_regularisers reg;      /* rates only */
    kgl_rng dropout_rng;
    bool has_dropout_rng;
    kgl_schedule sched;
    double base_lr;            /* the schedule's base rate (lr is the last rate used) */
    bool kvsall;               /* metadata targets = "kvsall" (absent: one tail per example) */
    char members[4096];        /* metadata ensemble_members: the file names of the other
                                  members of an ensemble this model is member 0 of, one a
                                  line, relative to this file's folder ("" or absent: none) */
    char run_id[17];           /* metadata run_id: 16 hex digits drawn once per save of an
                                  ensemble and written into every member, so that a set
                                  mixed from two saves is found ("": none, not written) */
} kgl_train_state;

/* Writes atomically (temporary file, fsync, rename). */
bool kgl_checkpoint_save(const char *path, const kgl_model *m, const kgl_dataset *ds, const kgl_train_state *st,
                         char *err, size_t err_cap);

typedef struct kgl_checkpoint {
    kgl_config cfg;
    kgl_train_state st;
    bool has_state;            /* the optimiser's state is present (adam.m.* and adam.v.*,
                                  sgd.momentum.* or adagrad.sum.*) */
    char precision[4];         /* "f32" or "f64": what the run that saved it computed in */
    void *file;                /* the opened safetensors file (private) */
} kgl_checkpoint;

/* Reads and validates a checkpoint against the loaded triples (entities and
 * relations must match in name and order); says exactly what is wrong. */
bool kgl_checkpoint_open(const char *path, const kgl_dataset *ds, kgl_checkpoint *ck, char *err, size_t err_cap);
/* The precision a checkpoint records ("f32" or "f64", as kgl_checkpoint's),
 * from its header alone: read before its values, which a float32 program
 * may not be able to hold (an F64 value beyond float's range). */
bool kgl_checkpoint_precision(const char *path, char precision[4], char *err, size_t err_cap);
/* Copies parameters (and Adam moments when present) into a model created
 * with ck->cfg. */
void kgl_checkpoint_apply(const kgl_checkpoint *ck, kgl_model *m);
void kgl_checkpoint_close(kgl_checkpoint *ck);
/* Whether the checkpoint at `path` names other entities or relations than
 * ds does (its metadata's lists), and what differs first: *d gets its counts
 * and, when a name differs, which (an entity's or a relation's, its id and
 * the checkpoint's name there; "" past the end of the checkpoint's list).
 * False when the names are ds's, or the file or its lists cannot be read
 * (kgl_checkpoint_open says why). For a message that says which triples a
 * checkpoint was trained on, not only that they differ. */
typedef struct kgl_names_difference {
    int n_entities, n_relations; /* the checkpoint's */
    bool entity;                 /* the first difference is an entity's name (else a relation's) */
    int at;                      /* the id where it is */
    char name[256];              /* the checkpoint's name there, cut to 255 bytes */
} kgl_names_difference;
bool kgl_checkpoint_names_differ(const char *path, const kgl_dataset *ds, kgl_names_difference *d);
/* Whether `members` (metadata ensemble_members) lists each other member's
 * file once, one a line: false, with why ("line 2 is blank", "line 3
 * repeats line 1 ('e.m1.st')"), for a blank line or a name given twice,
 * which would count one model twice. kgl_checkpoint_open checks it. */
bool kgl_ensemble_members_valid(const char *members, char *why, size_t cap);

/* -------------------------------------------------------------- options --
 * Every option of `kgl train`, one row each (src/model/options.c), in the
 * order of its --help. A row says how the option is written, what it
 * takes, where its value lives and what it is in a checkpoint; the kgl
 * program parses, documents (--help), merges on --resume and echoes (--json)
 * by the rows, the checkpoint saves and loads by them, and a recipe refuses
 * the options they mark as files. Adding an option is a row here and a
 * field in the struct of its kind. */

/* What a `kgl train` run is told that no checkpoint keeps. */
typedef struct kgl_run_options {
    const char *train, *valid, *test; /* triples files (no --train: the embedded academic world) */
    const char *relations;            /* --relations a,b (NULL: all) */
    long steps, threads, eval_every, patience, ensemble, ensemble_jobs, log_every;
    bool until_fit, json, quiet, progress; /* progress: lines on stderr even with --json */
    bool check;                       /* --check: stop where the run would start */
    const char *log_path, *save_path, *resume_path, *recipe_path;
    const char *precision;            /* f64 or f32: its last value (another than the program's
                                         only from a recipe) */
    bool splits[3];                   /* --splits: the splits its last occurrence names (train, valid, test) */
} kgl_run_options;

/* Where a value lives, and what --resume does with it: a model option is
 * the checkpoint's (given again, it must agree); a training option is the
 * checkpoint's unless given; a run option is never saved. */
typedef enum {
    KGL_OPTION_MODEL,    /* a field of kgl_config */
    KGL_OPTION_TRAINING, /* a field of kgl_train_state */
    KGL_OPTION_RUN,      /* a field of kgl_run_options */
} kgl_option_kind;

typedef enum {
    KGL_OPTION_WHOLE,   /* int or long (by the field's size) from lo to hi */
    KGL_OPTION_SEED,    /* uint64_t: digits only */
    KGL_OPTION_REAL,    /* double from lo to hi */
    KGL_OPTION_FLAG,    /* bool, given without a value: true (false with `negated`);
                           in a checkpoint words[0] for false, words[1] for true */
    KGL_OPTION_WORD,    /* an enum or a bool: the index of one of the words */
    KGL_OPTION_WORD_OR_NUMBER, /* an enum: the index of one of the words, or n_words
                                  with the number (from lo to hi) at number_offset */
    KGL_OPTION_TEXT,    /* char[]: text shorter than the field */
    KGL_OPTION_NAME,    /* const char *: a file name or a list of names; with words, one of them */
    KGL_OPTION_SPLITS,  /* bool[3]: a comma-separated list of train, valid, test */
} kgl_option_type;

enum {
    KGL_OPTION_REQUIRED = 1, /* every checkpoint has its key (absent: not a kgl checkpoint) */
    KGL_OPTION_FILE = 2,     /* names the data or a file of the run, or says what the run is
                                (--check): the command line's, refused in a recipe, never a formula */
    KGL_OPTION_ECHO = 4,     /* --json reports its value, under its key */
};

typedef struct kgl_option {
    const char *name;          /* "--edge-dropout" */
    const char *arg;           /* what --help calls its value ("P"); NULL for a flag */
    kgl_option_type type;
    kgl_option_kind kind;
    size_t offset, size;       /* of the field in the struct of its kind */
    double lo, hi;             /* numbers: what the command line accepts */
    double file_lo, file_hi;   /* what a checkpoint may hold, when file_hi is not 0: what the
                                  library accepts from a C program, beyond the command line's */
    const char *const *words;  /* the words of a word, flag or name (n_words of them) */
    int n_words;
    bool negated;              /* a flag that turns its field off (--no-reciprocal) */
    size_t number_offset;      /* word or number: where the number goes */
    const char *key;           /* its checkpoint metadata key (NULL: never saved) */
    unsigned flags;            /* KGL_OPTION_REQUIRED, _FILE, _ECHO */
    const char *heading;       /* --help: the group this row opens, or NULL */
    const char *help;          /* --help: its lines ('\n' between them); NULL: documented
                                  with the row before it, on its line ("--valid F, --test F") */
} kgl_option;

extern const kgl_option kgl_train_options[];
extern const int kgl_n_train_options;
#define KGL_TRAIN_OPTIONS_MAX 96 /* rows at most (a bound for arrays indexed by row) */
/* The row of an option by its name (the first len bytes of `name`), or NULL. */
const kgl_option *kgl_train_option_named(const char *name, size_t len);
/* The option's field: in model, training or run by its kind (NULL when
 * that struct is not given). */
void *kgl_option_value(const kgl_option *o, kgl_config *model, kgl_train_state *training, kgl_run_options *run);
/* A value as a checkpoint writes it (and --json echoes it): a whole number,
 * %.17g, the word, or the text. */
void kgl_option_format(const kgl_option *o, const void *field, char *out, size_t cap);
/* The defaults of kgl train's training options (Adam at lr 0.01, batch
 * 1024, seed 1, aux weight 1) and of its run (300 steps, a log row every
 * 10, one model, this program's precision). */
void kgl_train_state_defaults(kgl_train_state *st);
void kgl_run_options_defaults(kgl_run_options *run);

/* What the options say together (src/model/option_rules.c), given[k]
 * saying the option of row k was given (on the command line or in a
 * recipe; the last value wins). */
/* --context none has no layer: the layer's options, and the
 * neighbourhood's that a recipe written for the graph context sets, change
 * nothing. Names those set into `list` (" --ffn --qk-norm", for a warning)
 * and returns how many; clears the neighbourhood's (query_relation,
 * hide_asked, relation_token, the dropouts of edges and sources) and the
 * stack (layers 1), so that nothing downstream reads them. */
int kgl_options_without_layer(kgl_config *cfg, kgl_train_state *st, const bool *given, char *list, size_t cap);
/* Options that cannot go together ("--lookup needs --readout diagonal"),
 * the first rule broken, or NULL. */
const char *kgl_options_conflict(const kgl_config *cfg, const kgl_train_state *st, const bool *given);
/* --resume: the model is the checkpoint's, and a model option given must
 * agree with it (else its row is returned, nothing merged); a training
 * option not given is the checkpoint's; Adam's constants, which have no
 * option, are the checkpoint's when the optimiser is (another one starts
 * afresh with its own). NULL when merged. */
const kgl_option *kgl_options_merge_checkpoint(kgl_config *cfg, kgl_train_state *st, const bool *given,
                                               const kgl_checkpoint *ck);
/* --json's echo of the options marked KGL_OPTION_ECHO, each under its key
 * in the object open ("context":"graph"; a number as it was given). */
void kgl_options_json(kgl_json_writer *w, kgl_config *cfg, kgl_train_state *st, kgl_run_options *run);

/* ---------------------------------------------------------- diagnostics --
 * What the saturation and specialisation studies measure (the README's model section,
 * "Diagnostics"), per head, at one training step. */
typedef struct kgl_head_diag {
    double max_prob_mean, max_prob_min; /* of max_j A_h[i, j] over the rows i */
    double entropy;                     /* mean of −Σ_j A log A */
    double max_abs_logit;               /* max |S_h[i, j]| */
    double jac_fro;                     /* mean ‖diag(a) − a aᵀ‖_F */
    double grad_logits;                 /* ‖∂L/∂S_h‖_F */
    double grad_wq, grad_wk;            /* ‖∂L/∂W‖_F over the head's columns */
    double wq_move, wk_move;            /* ‖W − W₀‖_F / ‖W₀‖_F over the head's columns */
    double attn_tv;                     /* mean over rows of ½ Σ_j |A − A₀| */
} kgl_head_diag;

/* Every layer of a stack is measured as the first: its own weights (a
 * deeper layer's over the states of the layer below; in a graph context, of
 * the layer's question over the same tokens), its own Wq, Wk. */
typedef struct kgl_diag {
    int heads, n, d, m, layers;
    kgl_context_kind context;      /* graph: measured over the step's segments; none: NaN */
    kgl_real *attn0;               /* [layers H n n] attention at the reference point */
    kgl_real *wq0, *wk0;           /* [layers d d] */
    kgl_head_diag head[KGL_MAX_HEADS];                       /* layer 0's */
    kgl_head_diag deeper[KGL_MAX_LAYERS - 1][KGL_MAX_HEADS]; /* layer l ≥ 1's at deeper[l - 1] */
    double *spec;                  /* [layers H m]: layer l's spec[h][r] at (l H + h) m + r */
} kgl_diag;
/* Head h of layer l's measurements. */
static inline const kgl_head_diag *kgl_diag_head(const kgl_diag *dg, int l, int h)
{
    return l == 0 ? &dg->head[h] : &dg->deeper[l - 1][h];
}

/* Takes the trainer's current parameters as step 0 (W₀, A₀). */
void kgl_diag_init(kgl_diag *dg, kgl_trainer *tr);
/* Measures after kgl_trainer_compute and before kgl_trainer_update: the
 * attention and gradients of that forward pass, at the parameters it used.
 * Reads only: the trajectory is the same with or without it. */
void kgl_diag_measure(kgl_diag *dg, const kgl_trainer *tr);
void kgl_diag_free(kgl_diag *dg);

/* Head supervision, measured (the saturation study's mechanism): over the
 * supervised rows, (head h, entity i) with at least one training tail of a
 * relation supervised onto h, what the supervision loss sees at one step. */
typedef struct kgl_sup_diag {
    int rows;                   /* supervised (head, entity) rows; 0 without supervision */
    int *row_head, *row_entity; /* [rows] */
    int *target_off, *targets;  /* row k's distinct targets: targets[target_off[k] .. target_off[k+1]) */
    int n_targets;
    unsigned long long heads_mask; /* bit h: head h has supervised rows */
    double floor;               /* kgl_supervision_floor of the trainer's triples and heads */
    /* after kgl_sup_diag_measure (NaN before, and where not measurable): */
    double target_mass;         /* mean over the rows of Σ over its targets of A_h[i, t] (1: all on them) */
    double grad_logits;         /* ‖∂L/∂S_h[i, ·]‖_F over the rows, L the whole loss */
    double logit_step;          /* max over the rows of |S_h[i, j] − its value one step before| */
    /* after kgl_sup_diag_after_update: the update's RMS |ΔW| / lr over the
     * supervised heads' columns of Wq, Wk. Under Adam without weight decay
     * that is the RMS of m̂ / (√v̂ + ε): 1 when every gradient keeps its sign
     * step after step, small when they flip. */
    double wq_step, wk_step;
    kgl_real *prev_logits, *wq_before, *wk_before; /* scratch */
    bool have_prev;
} kgl_sup_diag;
/* The least value the supervision loss can approach on these triples with
 * head_of[r] (the head of relation r, or -1) and `heads` heads: (1/N)
 * Σ_rows (k log k − Σ_t c_t log c_t), a row having k supervised examples,
 * c_t of them with tail t (diagnostics.c derives it). NaN without any
 * supervised example or with head_of NULL. */
double kgl_supervision_floor(const kgl_tails *tl, const int *head_of, int heads);
/* Finds the supervised rows of the trainer (none when it has no head_of). */
void kgl_sup_diag_init(kgl_sup_diag *sd, const kgl_trainer *tr);
/* After kgl_trainer_compute and before kgl_trainer_update (reads only). */
void kgl_sup_diag_measure(kgl_sup_diag *sd, const kgl_trainer *tr);
/* After kgl_trainer_update: the step it took. */
void kgl_sup_diag_after_update(kgl_sup_diag *sd, const kgl_trainer *tr);
void kgl_sup_diag_free(kgl_sup_diag *sd);

/* ------------------------------------------------------------------ run --
 * A training run as `kgl train` makes it (src/model/run.c): the steps, an
 * evaluation on valid every K steps that keeps a snapshot of the best model
 * (selection on valid), patience, the fit step, the best model restored at
 * the end, and ensembles: K members with seeds S, S + 1000, …, J of them
 * training at once on threads, each with a pool of its own. A program fills
 * a kgl_run_spec, calls kgl_run_train, reads each member's model and
 * numbers, and may kgl_run_save them as one checkpoint set. What a program
 * shows (a progress line, a log) it does in the callbacks.
 *
 *   kgl_run_spec spec;
 *   kgl_run_spec_defaults(&spec, &ds, &cfg);             // kgl train's defaults
 *   spec.train = train, spec.n_train = n_train;          // its triples
 *   spec.valid = valid, spec.n_valid = n_valid;
 *   spec.steps = 1000, spec.eval_every = 50, spec.patience = 4;
 *   kgl_run run;
 *   if (kgl_run_train(&run, &spec) == 0)                 // 1: a loss not finite
 *       printf("best valid MRR %.4f at step %ld\n", run.member[0].best_mrr, run.member[0].best_step);
 *   kgl_run_free(&run);
 */
typedef struct kgl_run_member kgl_run_member;

/* What a run tells the program, each from the thread training the member
 * (several at once with jobs > 1: they must be thread-safe); any may be
 * NULL. ctx is passed back. */
typedef struct kgl_run_callbacks {
    void *ctx;
    /* The member's model is ready (initialised, or the checkpoint applied),
       before its first step: 0 to go on, or a status that fails it (kgl
       train opens its log here). m->diag may be set to a kgl_diag: it is
       measured at the steps a row is written (and every step with until_fit). */
    int (*start)(void *ctx, kgl_run_member *m);
    /* After each step (work 1), and while an evaluation on valid runs
       (work 0, m->to_rank > 0). */
    void (*progress)(void *ctx, kgl_run_member *m, long work);
    /* A row at step `step`: every log_every steps from the first, each
       evaluated step (`evaluated`: m->valid_ev holds the valid ranks), the
       last step, and a step the run stops at for Ctrl-C or the fit
       (`stopping`, neither logged nor evaluated). */
    void (*row)(void *ctx, kgl_run_member *m, long step, double loss, bool evaluated, bool stopping);
    /* The member's steps are over (m->status, m->halted, m->nonfinite_step
       say how); its model is the one selected on valid. */
    void (*end)(void *ctx, kgl_run_member *m);
    /* Whether to stop (Ctrl-C): each member stops after its current step,
       and no member starts after. */
    bool (*stop)(void *ctx);
} kgl_run_callbacks;

typedef struct kgl_run_spec {
    const kgl_dataset *ds;
    const kgl_triple *train, *valid;  /* valid: what eval_every ranks (NULL: no selection) */
    int n_train, n_valid;
    kgl_config cfg;                   /* the model (n_entities, n_relations: the dataset's) */
    kgl_train_state st;               /* the training options: optimiser (st.base_lr the rate a
                                         schedule starts from), batch, seed, regularisers, schedule,
                                         kvsall, aux weight, frozen embeddings, lookup; a schedule
                                         without st.sched.total decays over `steps`) */
    const int *head_of;               /* --supervise-heads (NULL: none) */
    const kgl_checkpoint *resume;     /* continue this checkpoint's run (one member), or NULL */
    long steps;                       /* each member's (with resume: more) */
    long eval_every;                  /* rank valid every K steps and at the last (0: never) */
    long patience;                    /* stop after P evaluations without a better valid MRR (0: never) */
    long log_every;                   /* a row every L steps (0: at the last step only) */
    bool until_fit;                   /* stop at the step every training triple ranks first */
    int members;                      /* models (at least 1): member k has seed st.seed + 1000 k */
    int jobs, job_threads;            /* members training at once (1 to members), each on a pool of
                                         job_threads (at least 1) */
    kgl_run_callbacks cb;
} kgl_run_spec;

/* kgl train's defaults: its training options (kgl_train_state_defaults),
 * 300 steps, a row every 10, one member, one job on one thread; cfg's
 * n_entities and n_relations set from ds. */
void kgl_run_spec_defaults(kgl_run_spec *spec, const kgl_dataset *ds, const kgl_config *cfg);
/* The threads shared among the members that train at once (kgl train's
 * --threads and --ensemble-jobs): `jobs` members at once (0: one a thread),
 * at most spec->members, each job threads / jobs threads (at least 1);
 * `threads` 0: every core (kgl_cores). Sets spec->jobs and job_threads. */
void kgl_run_spec_threads(kgl_run_spec *spec, int threads, int jobs);
/* What a run of `spec` asks of memory, for kgl_memory_needed:
 * its models, the jobs and threads at once, the most triples one ranking
 * ranks (train, valid, or the n_test test triples the report ranks too) and
 * the selection's snapshot. r->options is false: a program whose options
 * can change sets it. */
void kgl_run_memory(const kgl_run_spec *spec, long n_test, kgl_memory_run *r);

struct kgl_run_member {
    int index;                    /* of the ensemble (0 without one) */
    uint64_t seed;                /* st.seed + 1000 index */
    kgl_trainer tr;               /* its model: after the run, the step selected on valid */
    long first_step, step, last_step; /* this run's first (a resume continues the count), the last
                                         done, and the last to do */
    double loss;                  /* the last step's */
    long steps_run;               /* the optimiser's steps at the end (a resume's count included) */
    double final_loss, seconds;   /* the last step's loss (non-finite: the failed step's) and its time */
    /* selection on valid (eval_every) */
    kgl_eval valid_ev;            /* the last evaluation on valid */
    long evaluations, best_step, evals_since_best; /* best_step -1: none yet */
    double best_mrr, last_valid_mrr;
    bool stopped_early;           /* patience ran out */
    long ranked, to_rank;         /* an evaluation under way: queries ranked, of (0: none) */
    /* the fit: checked every step when a ranking of the training triples is
       cheap or until_fit asks (track_fit), else at logged steps when it is
       affordable (watch_fit), else never */
    bool track_fit, watch_fit;
    long fit_step;                /* the first step every training triple ranked first (-1: none) */
    kgl_eval ev;                  /* the training triples' ranks at step ev_step (-1: none); scratch after */
    long ev_step;
    kgl_diag *diag;               /* the start callback's, or NULL */
    long diag_step;               /* the step diag was last measured at (-1: never) */
    int status;                   /* 0; 1 the loss became non-finite; or start's status */
    long nonfinite_step;          /* the step whose loss was not finite (0: none) */
    bool halted;                  /* stopped because another member failed */
    bool saved;                   /* kgl_run_save wrote it */
    kgl_snapshot best;            /* (private) the best model so far */
    const kgl_run_spec *spec;     /* (private) */
    kgl_jobs *jobs;               /* (private) the runner training it, while it trains */
};

typedef struct kgl_run {
    kgl_run_spec spec;
    kgl_run_member *member;       /* [spec.members] */
    int trained;                  /* members that started: all, unless stopped (Ctrl-C) or failed */
    int status;                   /* the first failure's in member order (0: none) */
    int failed;                   /* its member */
    double seconds;               /* wall time */
    kgl_pool **pools;             /* [spec.jobs]: the members' evaluations still run on them */
} kgl_run;

/* Trains the members, jobs at a time, each member the same bits whatever
 * the jobs and threads; a failure halts the others and starts no more.
 * Returns run->status. kgl_run_free afterwards, whatever it returned. */
int kgl_run_train(kgl_run *run, const kgl_run_spec *spec);
void kgl_run_free(kgl_run *run);
/* H@1 of the training triples at the member's current step (ranked once a step). */
double kgl_run_train_hits1(kgl_run_member *m);
/* PATH with ".m<k>" before its extension (x.st -> x.m1.st; no extension:
 * appended); member 0 keeps PATH. Malloc'd (NULL for a NULL path). */
char *kgl_member_path(const char *path, int k);
/* Saves the members that trained as one set: member k to
 * kgl_member_path(path, k), every member with one fresh run_id (a model
 * alone: none), member 0 last, listing the others by their base names.
 * Each failure is reported to failed(ctx, k, why) (k -1: the list of
 * members is too long for the metadata) and the others are still saved;
 * false when any failed. m->saved says which were written. */
bool kgl_run_save(kgl_run *run, const char *path, void (*failed)(void *ctx, int member, const char *why), void *ctx);
/* kgl train's report as text, written to f (src/model/report_text.c; the
 * metrics' tables are kgl_metrics_table_write's, its JSON results.c's).
 * kgl_run_fit_write: "fit: every training triple ranks first (tail and
 * head) after step S" (member 0's; "not every ..." when the fit was
 * tracked and never reached; nothing when untracked).
 * kgl_run_selection_write: an ensemble's "ensemble of N models: ... Alone:"
 * (the members' lines follow, kgl_run_member_write), or with eval_every one
 * model's "model selection: best valid MRR M at step S (E evaluations);
 * ..." ("no evaluation ran" when none did). kgl_run_member_write: member
 * k's line, "  member k  seed S  valid MRR M H@1 H ...", the splits
 * ranked[s] (named split[s]) with its metrics alone[s] (both directions),
 * then its best valid step. kgl_run_totals_write: "N steps in T s, final
 * loss L" (an ensemble's: "N models in T s, member 0: ..."). kgl_run_summary_write:
 * kgl train --quiet's one line, "kgl train: a model (d_model D, H heads), N
 * steps in TOOK, final loss L[, best valid at step S]; SPLIT MRR M H@1 H
 * H@10 H ..." (an ensemble's: "an ensemble of N models ..., S steps each,
 * in TOOK") with both[s] of each split ranked[s]; TOOK is the run's time as
 * the caller writes it. */
void kgl_run_fit_write(FILE *f, const kgl_run *run);
void kgl_run_selection_write(FILE *f, const kgl_run *run);
void kgl_run_member_write(FILE *f, const kgl_run *run, int k, const char *const *split, const bool *ranked,
                          const kgl_metrics *alone);
void kgl_run_totals_write(FILE *f, const kgl_run *run);
void kgl_run_summary_write(FILE *f, const kgl_run *run, const char *took, const char *const *split,
                           const bool *ranked, const kgl_metrics *both);

/* The training log (src/model/log.c), a CSV: `kgl train --log F` writes
 * the header when a member starts and a row from each row callback. The
 * columns: step, loss, main_loss, aux_loss, lr, seconds; for each layer l
 * (prefix "l<l>_" from the second) and head k the diagnostics
 * "h<k>_max_prob_mean", …, "h<k>_attn_tv" (kgl_diag's, in its order) and
 * "h<k>_spec_<relation>" for each relation in use_relation; then
 * valid_mrr, valid_hits1 and valid_hits10 when the run selects on valid.
 * Numbers are written to 17 digits; a value not measured (a row whose step
 * m->diag was not measured at, a step not evaluated) is an empty field. */
void kgl_run_log_header(FILE *log, const kgl_run_member *m, const bool *use_relation);
/* One row: the losses of the step's forward pass, `seconds` since the
   member started, dg's diagnostics (the member's m->diag) and, when
   `evaluated`, m->valid_ev's ranking of valid. */
void kgl_run_log_row(FILE *log, const kgl_run_member *m, const kgl_diag *dg, const bool *use_relation, long step,
                     double loss, bool evaluated, double seconds);
/* The log as a file of its own, written whole or not at all (kgl_outfile:
 * a temporary renamed over its path at the close). kgl_run_log_open writes
 * the header and sets m->diag to the log's measurements; false with "PATH:
 * why" in err. kgl_run_log_write writes a row and flushes it, unless
 * `stopping` (the row of the step a run stops at: the close writes it); a
 * write that fails returns false with "cannot write the log PATH: why" in
 * err, once: the log is dropped (its temporary removed, m->diag NULL) and
 * later rows are not written (true). kgl_run_log_close commits it; false
 * with "PATH: why" in err, or with err "" when a write had failed before. */
typedef struct kgl_run_log {
    kgl_outfile file;
    bool open;     /* being written */
    bool failed;   /* a write failed: the log was dropped */
    kgl_diag diag; /* its head columns, measured at the logged steps */
} kgl_run_log;
bool kgl_run_log_open(kgl_run_log *log, const char *path, kgl_run_member *m, const bool *use_relation, char *err,
                      size_t cap);
bool kgl_run_log_write(kgl_run_log *log, kgl_run_member *m, const bool *use_relation, long step, double loss,
                       bool evaluated, bool stopping, double seconds, char *err, size_t cap);
bool kgl_run_log_close(kgl_run_log *log, kgl_run_member *m, char *err, size_t cap);
/* A run's results as JSON (src/model/results.c), the fields kgl train
 * --json opens its object with: "steps" (member 0's), "final_loss",
 * "fit_step" (null: not fit), "seconds" (the run's), "precision",
 * "interrupted"; when the run selects on valid "best_step" and
 * "best_valid_mrr" (null when no evaluation ran), "evaluations",
 * "stopped_early"; "params" (of every member trained) and "ensemble" (the
 * members trained). A member's alone (an ensemble's "members"): "seed",
 * "steps", "seconds", and its best step and MRR when selecting. The caller
 * writes the object around them and what follows (options, metrics). */
void kgl_run_json_fields(kgl_json_writer *w, const kgl_run *run, bool interrupted);
void kgl_run_json_member_fields(kgl_json_writer *w, const kgl_run_member *m);

/* The set kgl_run_save wrote, opened again (kgl eval, predict, heads,
 * export, grad): what --checkpoint names is one file F, with the other
 * members of its ensemble when its metadata lists them, or an explicit
 * list A,B,... (no expansion). The members a file lists must be of its
 * save: the same run_id (none in either, for files older than run ids),
 * else the mix is refused, naming the file. A model may be opened alone:
 * member 0 is the file named, k the k-th it lists or the k-th of A,B,...
 *
 *   static kgl_model_set ms;                               // large: KGL_MAX_ENSEMBLE models
 *   kgl_model_set_spec spec = {.cmd = "mine", .checkpoint = "e.st", .member = -1, .ds = &ds};
 *   char err[2048];
 *   if (!kgl_model_set_open(&ms, &spec, err, sizeof err)) fprintf(stderr, "%s\n", err);
 *   else kgl_predict_ensemble(ms.models, (const kgl_real *const *)ms.states, ms.n, ...), kgl_model_set_close(&ms);
 */
typedef struct kgl_model_set_spec {
    const char *cmd;              /* names the command in messages: "kgl CMD: --member 3: ..." */
    const char *checkpoint;       /* F or A,B,... (--checkpoint) */
    int member;                   /* -1: every model; k >= 0: model k alone (--member) */
    /* Without `open`: each file is opened for ds (kgl_checkpoint_open), its
       model built, and a graph context given the training graph graph[0..n_graph) */
    const kgl_dataset *ds;
    const kgl_triple *graph;
    int n_graph;
    /* The program's own opener of the file `path` (model k of the set):
       the checkpoint into ck and its model into m, or false with why in err
       (or said already, err left as it is); ck is closed on failure. */
    bool (*open)(void *ctx, const char *path, int k, kgl_checkpoint *ck, kgl_model *m, char *err, size_t cap);
    void *ctx;
} kgl_model_set_spec;
/* Which model of its ensemble was opened, for a command that reads one. */
typedef struct kgl_model_choice {
    char path[4096];     /* the file opened */
    int member;          /* its index in the ensemble */
    int members;         /* the ensemble's models (1: a model of its own) */
    char ensemble[4096]; /* the ensemble as --checkpoint names it: member 0's file, or A,B,... */
    bool alone;          /* a member's own file was given (F.m1, not F --member 1) */
} kgl_model_choice;
typedef struct kgl_model_set {
    int n;
    char *paths[KGL_MAX_ENSEMBLE];
    kgl_model m[KGL_MAX_ENSEMBLE];
    kgl_checkpoint ck[KGL_MAX_ENSEMBLE];
    kgl_real *states[KGL_MAX_ENSEMBLE]; /* C [n_entities, d] of each (NULL: a --query-relation model) */
    const kgl_model *models[KGL_MAX_ENSEMBLE];
    kgl_model_choice choice; /* with n 1: which model of its ensemble (members 1: none) */
} kgl_model_set;
/* Opens the models spec names, every model the same configuration
 * (kgl_ensemble_mismatch) and no file twice, with their states. False with
 * why in err, one line after another (the opener's first), and nothing left
 * open. choice.alone after opening every model of F (member -1): F is a
 * member k > 0 of an ensemble (X.m<k>.st, which X.st lists), opened alone. */
bool kgl_model_set_open(kgl_model_set *ms, const kgl_model_set_spec *spec, char *err, size_t cap);
void kgl_model_set_close(kgl_model_set *ms);
/* The one model spec->member (-1 as 0) of the set, into m and ck (open
 * until kgl_checkpoint_close), without its states; *c says which file it
 * is and where it stands in its ensemble. False with why in err. */
bool kgl_model_open_member(const kgl_model_set_spec *spec, kgl_model *m, kgl_checkpoint *ck, kgl_model_choice *c,
                           char *err, size_t cap);
/* One answer per question: a command that reads one model of an ensemble
 * says so on the first line of its output, written to f (report_text.c):
 * "F is an ensemble of 10 models: WHAT member 0 alone (--member K chooses
 * another, 0 to 9)", then `why` on a line of its own (why one member, or
 * what the ensemble would mean). Nothing for a model of its own. */
void kgl_model_choice_write(FILE *f, const kgl_model_choice *c, const char *what, const char *why);

/* ---------------------------------------------------------------- bench --
 * `kgl bench` (src/model/bench.c): steady-state training steps of the
 * trainer on the first `batch` examples in file order, one filtered
 * evaluation of every training triple (both directions), kgl's GEMM at
 * 1024³ and the peak resident memory. */
typedef struct kgl_bench_spec {
    const char *train;             /* triples file */
    int synthetic;                 /* > 0: instead, kgl_bench_synthetic's graph of that many entities */
    kgl_config model;              /* the model as kgl train's options set it (kgl_config_defaults:
                                      width 8, 2 heads, the full context); its sizes come from the graph */
    int batch;
    int reps, warmup;              /* timed steps, untimed steps first */
    int threads;                   /* 0: every core */
    uint64_t seed;
    bool eval, gemm;               /* also time the evaluation / the GEMM */
} kgl_bench_spec;

/* A synthetic graph of n entities (n >= 2) as triples text (malloc'd; *len
 * its bytes): 20 relations, 10 n uniform random triples, mean degree about 20. */
char *kgl_bench_synthetic(int n, size_t *len);

typedef struct kgl_bench_result {
    double step_ms_median, step_ms_min, step_ms_mean;
    double eval_s, train_mrr;      /* NAN without eval */
    double gemm_gflops;            /* NAN without gemm */
    double peak_rss_mb;            /* measured before the GEMM */
    double first_loss;
    int threads, n_entities, n_relations, n_examples, batch;
    long params;
    const char *isa;               /* the kernels' instruction set */
} kgl_bench_result;

void kgl_bench_defaults(kgl_bench_spec *s);
/* False with a message in err (bad input, or a non-finite loss). */
bool kgl_bench_run(const kgl_bench_spec *s, kgl_bench_result *r, char *err, size_t err_cap);
/* GFLOP/s of C = A B (size³, best of reps) on kgl's kernel. */
double kgl_bench_gemm_gflops(kgl_pool *pool, int size, int reps);
/* What `kgl bench` prints on f (src/model/bench.c), `graph` the triples
 * file's name (or "synthetic"): the case (entities, width, heads, FFN, the
 * context and its neighbourhood, batch, threads, instruction set,
 * precision), then the step's median, min and mean, the evaluation, the
 * GEMM's rate and the peak memory, a line each (the evaluation's and the
 * GEMM's only when measured). */
void kgl_bench_result_write(FILE *f, const kgl_bench_spec *s, const kgl_bench_result *r, const char *graph);
/* The same as one JSON object and a newline (`kgl bench --json`, what
 * compare.sh reads): the case's options and sizes, step_ms_median, _min,
 * _mean, eval_s, train_mrr, first_loss, gemm_gflops (null when not
 * measured) and peak_rss_mb. */
void kgl_bench_result_json(FILE *f, const kgl_bench_spec *s, const kgl_bench_result *r, const char *graph);

/* -------------------------------------------------------------- inspect --
 * What a trained layer does for one query (src/model/inspect.c), for `kgl
 * heads --query` and `kgl export`. Read-only; each call runs the layer's
 * context once without recording. */
/* Relation rows: row r < m is relation r, row m + k (reciprocal mode) its
 * inverse, named "NAME^-1". The name of a row, into out. */
void kgl_relation_row_name(const kgl_dataset *ds, int row, char *out, size_t cap);
/* "NAME" or "NAME^-1" to a row; -1 if unknown (or an inverse without
 * reciprocal rows). */
int kgl_relation_row_id(const kgl_dataset *ds, const kgl_config *cfg, const char *name);
/* states[i * d + c] = C[i, c], the layer's output (the readout's head side). */
void kgl_context_states(const kgl_model *m, kgl_real *states);
/* The softmax of n scores (the probabilities the cross-entropy trains). */
void kgl_scores_softmax(const kgl_real *scores, int n, kgl_real *probs);
/* The distinct answers of (entity, row, ?) among triples tr[0..n): tails of
 * (entity, r, t) for a row r < m, heads of (h, k, entity) for the inverse
 * row m + k; at most cap, in the triples' order. Returns how many. */
int kgl_true_answers(const kgl_triple *tr, int n_triples, int n_relations, int entity, int rel_row, int *out,
                     int cap);
/* `kgl export`: writes into dir (created if missing; its parent must exist)
 * entities.tsv (E), relations.tsv (R, a row per relation row, inverses
 * named "NAME^-1") and context.tsv (C), each "name<TAB>d0<TAB>d1 ..." with a
 * header row; for embedding projectors vectors.tsv and context_vectors.tsv
 * (numbers only) beside metadata.tsv (entity names, one a line, no header).
 * Numbers are written with %.17g, so they read back to the same doubles.
 * Each file is written atomically (a temporary file, then rename). False
 * with "path: why" in err when a file cannot be written. */
bool kgl_export_tsv(const kgl_model *m, const kgl_dataset *ds, const char *dir, char *err, size_t cap);
/* The names of the files kgl_export_tsv writes, in the order above. */
#define KGL_EXPORT_FILES 6
extern const char *const kgl_export_files[KGL_EXPORT_FILES];
/* Runs the model's context once and checks that the attention (A_h), the
 * contextual states (C) and a bound on every readout score are finite: a
 * checkpoint's parameters may be finite and still too large for finite
 * arithmetic. False with "WHERE: ... (tensor NAME) ..." in err otherwise. */
bool kgl_model_finite(const kgl_model *m, const char *where, char *err, size_t cap);

/* -------------------------------------------------------------- predict --
 * Asking a trained layer questions (src/model/predict.c, `kgl predict`).
 *
 * A query is an entity and a relation row: row r < m asks (entity, r, ?),
 * the tails; row m + r asks (?, r, entity), the heads. The scores are
 * exactly those `kgl eval` ranks with (the same products, the same bits):
 *   tail (i, r, ?):  score[j] = Σ_c C[i,c] R[r,c] E[j,c]
 *   head (?, r, t), reciprocal model:  the tail query (t, r⁻¹, ?) on row m + r,
 *       as training and evaluation ask it;
 *   head (?, r, t), a model trained with --no-reciprocal (no row m + r):
 *       score[j] = Σ_c C[j,c] R[r,c] E[t,c], the forward readout with each
 *       candidate j as the head (how `kgl eval` ranks heads of such a model;
 *       training never fitted a softmax over heads, so the probabilities of
 *       these queries are the softmax of scores it did not train).
 * C are the contextual states of the layer (kgl_context_states). */

/* One answer: the entity, its score, its probability (the softmax of the
 * whole score row over all n entities, before any filtering: the model's
 * own distribution), and whether the triple is already known. */
typedef struct kgl_answer {
    int entity;
    double score, prob;
    bool known; /* (entity, r, answer) (tail) or (answer, r, entity) (head) is in `known` */
} kgl_answer;

/* The n scores of a query into scores[0..n): states are C [n, d] from
 * kgl_context_states (NULL: computed here, one forward pass). */
void kgl_predict_scores(const kgl_model *m, const kgl_real *states, int entity, int relation_row, kgl_real *scores);

/* The top_k answers (1 <= top_k <= n) of a query, best first (score
 * descending; equal scores by entity id), into out[0..top_k); returns how
 * many were written. `known` (NULL: nothing is known, so no answer is
 * marked) supplies the known triples of every split it was loaded with, its
 * names in the model's order. With filter, known answers are left out of
 * the list (then fewer than top_k may remain) and the probabilities are
 * still those of the unfiltered softmax: they need not sum to 1 over the
 * list. states as in kgl_predict_scores; pass them when asking many
 * questions of one model (the forward pass is the costly part). */
int kgl_predict(const kgl_model *m, const kgl_real *states, const kgl_dataset *known, int entity, int relation_row,
                int top_k, bool filter, kgl_answer *out);
/* The same for an ensemble (kgl_evaluate_ensemble): with more than one
 * member each answer's prob is the mean of the members' probabilities and
 * its score the log of that; one member is exactly kgl_predict. states[k]
 * as in kgl_predict_scores (NULL: computed here). */
int kgl_predict_ensemble(const kgl_model *const *models, const kgl_real *const *states, int members,
                         const kgl_dataset *known, int entity, int relation_row, int top_k, bool filter,
                         kgl_answer *out);

/* Every triple's two evaluation queries, for error analysis and for
 * scoring given triples (kgl predict): out[k] is the tail query (h, r, ?)
 * of tr[k], out[n + k] its head query (?, r, t). Ranked exactly as
 * kgl_evaluate ranks them (the same scores, kgl_filtered_rank with the
 * known answers of ds filtered), so averaging 1/rank over out gives the
 * evaluation's MRR (both directions). ds NULL filters nothing (the raw
 * rank among all entities). states as in kgl_predict_scores. */
typedef struct kgl_ranked {
    double rank;            /* the realistic filtered rank the metrics average */
    double score;           /* the answer's score */
    double prob;            /* its probability, as kgl_predict gives it (the softmax of
                               the query's scores over all entities, before filtering) */
    int top_wrong;          /* the best-scoring candidate that is neither the answer nor
                               a known answer; -1 when every candidate is known */
    double top_wrong_score; /* its score (NAN when there is none) */
} kgl_ranked;
void kgl_rank_triples(const kgl_model *m, const kgl_real *states, const kgl_dataset *ds, const kgl_triple *tr, int n,
                      kgl_ranked *out);
/* The same for an ensemble, ranked as kgl_evaluate_ensemble ranks (on the
 * mean probability); scores are the log of that probability. */
void kgl_rank_triples_ensemble(const kgl_model *const *models, const kgl_real *const *states, int members,
                               const kgl_dataset *ds, const kgl_triple *tr, int n, kgl_ranked *out);
/* kgl eval --ranks: every ranked query as a line of a TSV file, for error
 * analysis. The header (split, head, relation, tail, direction, rank,
 * score, top_wrong, top_wrong_score), then, for each split, its n triples'
 * tail queries in order and then their head queries, ranked as
 * kgl_rank_triples_ensemble ranks them (filtered by ds); names quoted only
 * when they hold a quote (kgl_csv_field), numbers with 17 significant
 * digits (each reads back to the same double), top_wrong and its score
 * empty when every other candidate is known. progress (NULL: none) is told
 * the queries ranked of 2n, a slice at a time. False when out of memory
 * (nothing of the split written). */
void kgl_ranks_write_header(FILE *f);
bool kgl_ranks_write(FILE *f, const kgl_model *const *models, const kgl_real *const *states, int members,
                     const kgl_dataset *ds, const char *split, const kgl_triple *tr, int n,
                     void (*progress)(void *ctx, long done, long total), void *ctx);

/* A question by names, as kgl predict takes them (src/model/questions.c):
 * (entity, relation, ?) asks for the tails, (?, relation, entity) with
 * ask_head for the heads (its relation row is then m + relation, as
 * kgl_predict asks it), and a whole triple (entity, relation, tail) is to be
 * scored (kgl_rank_triples). */
typedef struct kgl_question {
    int entity;    /* the given entity (a triple's head) */
    int relation;  /* the relation's id (not a row) */
    bool ask_head; /* (?, relation, entity) instead of (entity, relation, ?) */
    int tail;      /* a whole triple's tail; -1 for a question */
} kgl_question;
/* Room for any message of the two below: a name is at most KGL_LINE_MAX
 * bytes, and a message names at most two fields of a line, its place and
 * the near names. */
#define KGL_QUESTION_ERR_CAP (3 * KGL_LINE_MAX)
/* One question from names: head NULL asks for the heads of tail, tail
 * NULL for the tails of head, neither names a triple to score. False with
 * "WHERE: unknown entity 'x'; did you mean 'y'?" (" (none is close)" when
 * no name is near) in err, WHERE being `where` (a file's "f:line") or, with
 * where NULL, the option that gave the name: "--relation", "--head" or
 * "--tail". */
bool kgl_question_make(const kgl_dataset *ds, const char *head, const char *relation, const char *tail,
                       const char *where, kgl_question *q, char *err, size_t cap);
/* Every question of a queries file (path "-": standard input), read whole
 * before any is answered: one a line, head<TAB>relation<TAB>tail with '?'
 * as the head or the tail asked for, no '?' for a triple to score (blank
 * and '#' lines skipped). A model with an entity named '?' refuses '?' as
 * ambiguous; one with a relation named '?' reads the middle '?' as its
 * name. The questions into *out (n_out of them, at least one; free it),
 * or false with "file:line: what is wrong" in err (or "kgl CMD: --queries
 * f: cannot open ...", "f: no questions ..."), nothing to free. */
bool kgl_questions_read(const char *cmd, const char *path, const kgl_dataset *ds, kgl_question **out, int *n_out,
                        char *err, size_t cap);
/* The triples among n_q questions (those with a tail), ranked together as
 * kgl_rank_triples_ensemble ranks them (ds NULL: unfiltered): an array
 * of 2 * *n_triples, every triple's tail query, then every head query, in
 * the questions' order (free it; never NULL). */
kgl_ranked *kgl_questions_rank(const kgl_model *const *models, const kgl_real *const *states, int members,
                               const kgl_dataset *ds, const kgl_question *qs, int n_q, int *n_triples);
/* kgl predict --json: a question's answers a[0..count) (kgl_predict) as one
 * object, {"query":{"head","relation","tail"} (null for the one asked),
 * "direction":"tail"|"head", "filter", "known_left_out", "answers":[{"rank",
 * "entity","score","prob","known"}]} (known_left_out and known null
 * without have_known: no triples given); a triple's two ranks r (tail,
 * head; kgl_questions_rank) as {"query","direction":"triple","filter",
 * "known" (known < 0: null, no triples given),"tail"|"head":{"rank",
 * "score","prob","top_other","top_other_score"}}. The caller ends the line. */
void kgl_question_json(kgl_json_writer *w, const kgl_dataset *ds, const kgl_question *q, const kgl_answer *a,
                       int count, bool have_known, bool filter, int n_left_out);
void kgl_question_triple_json(kgl_json_writer *w, const kgl_dataset *ds, const kgl_question *q, const kgl_ranked *r,
                              int known, bool filter);
/* The same as the tables kgl predict prints, written to f. kgl_question_write:
 * "(alice, advises, ?)  top K, N known answers left out" (or "known answers
 * marked", or "no triples given: ..."), then "rank tail score prob [known]"
 * and a row per answer. kgl_question_triple_write: "(h, r, t)  a known
 * triple; filtered ranks ...", then "question rank score prob top other
 * answer" and a row for (h, r, ?) and one for (?, r, t). */
void kgl_question_write(FILE *f, const kgl_dataset *ds, const kgl_question *q, const kgl_answer *a, int count, int top,
                        bool have_known, bool filter, int n_left_out);
void kgl_question_triple_write(FILE *f, const kgl_dataset *ds, const kgl_question *q, const kgl_ranked *r, int known,
                               bool filter);

/* Opens a checkpoint without any triples file: the entity and relation
 * names come from the checkpoint's own metadata into `names` (a dataset
 * with no triples, whose filter index knows nothing; free it with
 * kgl_dataset_free after kgl_checkpoint_close). The names must be unique
 * and in byte order, as kgl writes them. */
bool kgl_checkpoint_open_standalone(const char *path, kgl_dataset *names, kgl_checkpoint *ck, char *err,
                                    size_t err_cap);

#endif
