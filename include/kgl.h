/* kgl.h — a minimal transformer layer over a knowledge graph, on a tiny
 * reverse-mode autodiff engine. The public interface of build/libkgl.a.
 *
 * Reading order: RNG -> arena -> tensor and tape -> ops (src/ops.c, each op's
 * forward, backward and gradient-check spec side by side) -> gradient checker
 * (src/gradcheck.c) -> parameters and the layer of MODEL.md (src/model.c).
 *
 * Everything is IEEE double. Matrices are row-major; a vector is a 1 x n
 * matrix; a scalar is 1 x 1. */
#ifndef KGL_H
#define KGL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------ RNG --
 * Explicit, seeded, no global state. xoshiro256** seeded through splitmix64
 * (the seeding its authors recommend). Every draw is documented so that a
 * reference implementation can reproduce our initial parameters:
 *   uniform  = (next() >> 11) * 2^-53                      in [0, 1)
 *   normal   = sqrt(-2 ln(1 - u1)) * cos(2 pi u2)          two uniforms per draw
 *   below(n) = Lemire's multiply-shift with rejection       in [0, n)          */
typedef struct kgl_rng {
    uint64_t s[4];
} kgl_rng;

void kgl_rng_seed(kgl_rng *rng, uint64_t seed);
uint64_t kgl_rng_next(kgl_rng *rng);
double kgl_rng_uniform(kgl_rng *rng);
double kgl_rng_normal(kgl_rng *rng);
uint32_t kgl_rng_below(kgl_rng *rng, uint32_t n);

/* ---------------------------------------------------------------- arena --
 * Activations and the tape live in an arena: a bump allocator that is reset,
 * not freed, between steps. While the first step runs the arena may grow by
 * chaining blocks; the reset after it replaces the chain with one block of the
 * high-water size, so from then on a step of the same shape calls malloc
 * zero times. `mallocs` counts the blocks ever requested (tests read it). */
typedef struct kgl_arena_block kgl_arena_block;
typedef struct kgl_arena {
    kgl_arena_block *blocks; /* newest first */
    size_t used;             /* bytes handed out since the last reset */
    size_t high_water;       /* most bytes ever in use between two resets */
    size_t mallocs;          /* blocks obtained from malloc so far */
} kgl_arena;

void *kgl_arena_alloc(kgl_arena *a, size_t bytes);  /* 64-byte aligned, not zeroed */
void *kgl_arena_zalloc(kgl_arena *a, size_t bytes); /* zeroed */
void kgl_arena_reset(kgl_arena *a);
void kgl_arena_free(kgl_arena *a);

/* --------------------------------------------------------------- tensor --
 * A dense row-major matrix of doubles. `grad` is NULL for a tensor that needs
 * no gradient; otherwise it has the same shape as `data`. */
typedef struct kgl_tensor {
    int rows, cols;
    double *data;
    double *grad;
} kgl_tensor;

static inline size_t kgl_numel(const kgl_tensor *t) { return (size_t)t->rows * (size_t)t->cols; }

/* ----------------------------------------------------------------- tape --
 * Ops append a node to the tape as they compute their output. kgl_backward
 * walks the nodes newest to oldest and each node's backward adds its
 * contribution into its inputs' grad (+=, so a tensor used twice gets both).
 * With recording off (evaluation) ops compute values only. */
typedef struct kgl_op kgl_op;
typedef struct kgl_node kgl_node;

typedef struct kgl_tape {
    kgl_arena arena; /* outputs, their grads, nodes and op scratch */
    kgl_node *last;  /* newest node */
    int n_nodes;
    bool recording;
} kgl_tape;

/* A boolean mask for softmax rows: none, causal (column j > row i is masked),
 * or explicit keep flags (rows*cols bytes, nonzero = keep). A row whose every
 * entry is masked yields all-zero weights and passes no gradient. */
typedef enum { KGL_MASK_NONE = 0, KGL_MASK_CAUSAL, KGL_MASK_KEEP } kgl_mask_kind;
typedef struct kgl_mask {
    kgl_mask_kind kind;
    const unsigned char *keep;
} kgl_mask;

/* One recorded op application. The attribute fields are the op's own: each
 * op documents which it uses. Index arrays are borrowed from the caller and
 * must live until backward has run. */
struct kgl_node {
    const kgl_op *op;
    kgl_node *prev;
    kgl_tensor *out;
    int n_in;
    kgl_tensor **in;
    const int *idx0, *idx1; /* row indices (gather, trilinear, targets) */
    int n_idx;
    kgl_mask mask;
    double alpha; /* scalar attribute (scale factor, label smoothing) */
    int i0;       /* integer attribute (column offset) */
    double *saved; /* op scratch saved by forward for backward */
};

void kgl_tape_init(kgl_tape *t);
void kgl_tape_reset(kgl_tape *t); /* forget nodes and activations; keep memory */
void kgl_tape_free(kgl_tape *t);

/* New tensor in the tape's arena; its grad is allocated (zeroed) when
 * `with_grad` and the tape is recording. */
kgl_tensor *kgl_tensor_new(kgl_tape *t, int rows, int cols, bool with_grad);
/* Backward from a 1x1 root (its gradient seeded with 1), or from any tensor
 * with an explicit seed gradient of its shape. */
void kgl_backward(kgl_tape *t, kgl_tensor *root);
void kgl_backward_seeded(kgl_tape *t, kgl_tensor *root, const double *seed);

/* ------------------------------------------------------------------ ops --
 * Each returns a new tensor in the tape's arena. Shapes are checked; a wrong
 * shape is a programming error and aborts with a message naming the op. */
kgl_tensor *kgl_matmul(kgl_tape *t, kgl_tensor *a, kgl_tensor *b);    /* A B   */
kgl_tensor *kgl_matmul_nt(kgl_tape *t, kgl_tensor *a, kgl_tensor *b); /* A Bᵀ  */
kgl_tensor *kgl_matmul_tn(kgl_tape *t, kgl_tensor *a, kgl_tensor *b); /* Aᵀ B  */
kgl_tensor *kgl_add(kgl_tape *t, kgl_tensor *a, kgl_tensor *b);    /* same shape, or b is [1, cols] broadcast over rows */
kgl_tensor *kgl_mul(kgl_tape *t, kgl_tensor *a, kgl_tensor *b);    /* elementwise */
kgl_tensor *kgl_scale(kgl_tape *t, kgl_tensor *a, double alpha);   /* alpha * A */
kgl_tensor *kgl_gather_rows(kgl_tape *t, kgl_tensor *table, const int *rows, int n);
kgl_tensor *kgl_slice_cols(kgl_tape *t, kgl_tensor *a, int col0, int width);
kgl_tensor *kgl_concat_cols(kgl_tape *t, int n_parts, kgl_tensor *const *parts);
kgl_tensor *kgl_softmax_rows(kgl_tape *t, kgl_tensor *s, kgl_mask mask);
kgl_tensor *kgl_layernorm(kgl_tape *t, kgl_tensor *x, kgl_tensor *gamma, kgl_tensor *beta);
kgl_tensor *kgl_gelu(kgl_tape *t, kgl_tensor *x);
/* mean over rows b of  logsumexp_j z[b,j] - sum_j q[b,j] z[b,j],  with the
 * target distribution q = (1 - smoothing) onehot(targets[b]) + smoothing / cols. */
kgl_tensor *kgl_cross_entropy(kgl_tape *t, kgl_tensor *logits, const int *targets, double smoothing);
/* logit[b, j] = sum_c C[heads[b], c] R[rels[b], c] E[j, c]   (MODEL.md readout) */
kgl_tensor *kgl_trilinear(kgl_tape *t, kgl_tensor *c, kgl_tensor *r, kgl_tensor *e, const int *heads,
                          const int *rels, int n);
/* Y = exp(s[0, k]) X: a learnable log-scale s (a [1, K] row) on X. */
kgl_tensor *kgl_scale_exp(kgl_tape *t, kgl_tensor *x, kgl_tensor *s, int k);
/* Dropout with a given mask: Y = X ⊙ keep / (1 − p), keep[i] ∈ {0, 1}
 * (borrowed; must live until backward). */
kgl_tensor *kgl_dropout_mask(kgl_tape *t, kgl_tensor *x, const unsigned char *keep, double p);
/* Dropout drawing its mask from `rng` (one uniform u per element, in
 * row-major order; kept iff u >= p) into the tape's arena. p = 0 or rng NULL
 * returns x itself and draws nothing. */
kgl_tensor *kgl_dropout(kgl_tape *t, kgl_tensor *x, double p, kgl_rng *rng);
kgl_tensor *kgl_sum(kgl_tape *t, kgl_tensor *x);
kgl_tensor *kgl_mean(kgl_tape *t, kgl_tensor *x);

#define KGL_LN_EPS 1e-5

/* The explicit softmax Jacobian, J = diag(p) - p pᵀ, for study and tests:
 * fills J (n*n, row-major). Backward never builds it: it uses J g = p ⊙ (g - <g, p>). */
void kgl_softmax_jacobian(const double *p, int n, double *J);
/* Softmax of one vector (max subtracted first). */
void kgl_softmax_vec(const double *z, int n, double *p);
/* ‖J‖_F (MODEL.md's closed form sqrt(Σp² − 2Σp³ + (Σp²)²), summed so that it
 * does not cancel to 0 near one-hot). */
double kgl_softmax_jacobian_fro(const double *p, int n);

/* -------------------------------------------------- op registry, checks --
 * Every op is registered with the spec of its gradient check. kgl gradcheck
 * and the tests iterate over kgl_op_registry; the tests also fail if any op
 * recorded on a tape is missing from it. */
#define KGL_CHECK_MAX_INPUTS 8

typedef struct kgl_check_case {
    char label[64];                                /* shapes, e.g. "3x4·4x5" */
    int n_inputs;                                  /* differentiable inputs */
    kgl_tensor *inputs[KGL_CHECK_MAX_INPUTS];
    kgl_tensor *(*run)(kgl_tape *t, const struct kgl_check_case *c); /* applies the op */
    const int *idx0, *idx1;                        /* attributes handed to the op */
    int n_idx;
    kgl_mask mask;
    double alpha;
    int i0, i1;
    double h; /* finite-difference step; 0 means 1e-5 */
} kgl_check_case;

typedef struct kgl_check_spec {
    int n_cases;
    /* Builds case `which` with inputs from `rng`, allocated in `keep`. */
    void (*make_case)(int which, kgl_rng *rng, kgl_arena *keep, kgl_check_case *c);
    double rel_tol;         /* pass iff every element's relative error <= rel_tol */
    const char *tol_reason; /* why this tolerance */
} kgl_check_spec;

struct kgl_op {
    const char *name;
    void (*backward)(kgl_node *node);
    kgl_check_spec check;
};

extern const kgl_op *const kgl_op_registry[];
extern const int kgl_op_registry_count;
const kgl_op *kgl_op_find(const char *name);

/* Relative error of one analytic partial a against its finite difference n:
 * |a - n| / max(|a|, |n|, KGL_REL_FLOOR). The floor keeps partials that are
 * zero in exact arithmetic (where both sides are round-off) from dividing by
 * round-off; above it the measure is the plain relative error. */
#define KGL_REL_FLOOR 1e-3
double kgl_rel_error(double analytic, double numeric);

typedef struct kgl_check_result {
    char name[48];
    char shapes[256];
    long checks; /* elements compared */
    double max_abs_err, max_rel_err;
    double rel_tol;
    bool pass;
    char why[160]; /* first failure, for people */
} kgl_check_result;

/* Central differences for every element of every input of every case of
 * `op`, against the analytic gradient of f = Σ w ⊙ op(inputs) with fixed
 * random weights w. Returns res->pass. */
bool kgl_gradcheck_op(const kgl_op *op, uint64_t seed, kgl_check_result *res);

/* The generic comparison both checks use. `eval` returns the scalar f at the
 * current value of x; every perturbed element is restored. */
typedef double (*kgl_scalar_fn)(void *ctx);
typedef struct kgl_fd_stats {
    long checks;
    double max_abs_err, max_rel_err;
    long failures;
    bool nonzero;   /* some analytic partial was nonzero */
    long first_bad; /* index of the first failing element, or -1 */
    double first_bad_analytic, first_bad_numeric;
} kgl_fd_stats;
void kgl_fd_compare(double *x, const double *analytic, size_t n, double h, double rel_tol, kgl_scalar_fn eval,
                    void *ctx, kgl_fd_stats *st);

/* ----------------------------------------------------------- parameters --
 * Every parameter, its gradient and its Adam moments live in one allocation. */
#define KGL_MAX_PARAMS 32
#define KGL_NAME_MAX 48

typedef struct kgl_param {
    char name[KGL_NAME_MAX];
    kgl_tensor t;  /* data and grad */
    double *m, *v; /* Adam moments */
    bool vector;   /* a [1, n] row stored with shape [n] */
    bool frozen;   /* skipped by the optimiser (no update, no decay) */
} kgl_param;

typedef struct kgl_params {
    int n;
    kgl_param p[KGL_MAX_PARAMS];
    double *block; /* the one allocation: data | grad | m | v of every parameter */
    size_t total;  /* doubles per section */
} kgl_params;

/* Declare, then allocate once. Returns the parameter's tensor (stable). */
kgl_tensor *kgl_params_add(kgl_params *ps, const char *name, int rows, int cols);
kgl_tensor *kgl_params_add_vector(kgl_params *ps, const char *name, int n);
void kgl_params_alloc(kgl_params *ps);
void kgl_params_free(kgl_params *ps);
void kgl_params_zero_grad(kgl_params *ps);
kgl_param *kgl_params_find(kgl_params *ps, const char *name);

/* ----------------------------------------------------------- optimiser --
 * Adam as torch.optim.Adam (bias-corrected, eps after the square root);
 * weight_decay > 0 makes it AdamW (decoupled, θ ← θ(1 − lr·wd) first).
 * SGD as torch.optim.SGD (momentum buffer b ← μ b + g, θ ← θ − lr b). */
typedef enum { KGL_OPT_ADAM = 0, KGL_OPT_SGD } kgl_optimizer_kind;
typedef struct kgl_optim {
    kgl_optimizer_kind kind;
    double lr, beta1, beta2, eps, weight_decay, momentum;
    long step; /* updates already applied */
} kgl_optim;
void kgl_optim_defaults(kgl_optim *o);
void kgl_optim_step(kgl_optim *o, kgl_params *ps);

/* ---------------------------------------------------------------- model --
 * The layer of MODEL.md, built from the ops above. */
#define KGL_MAX_HEADS 64

typedef enum { KGL_SCALE_SQRT = 0, KGL_SCALE_NONE, KGL_SCALE_VALUE } kgl_scale_kind;

typedef struct kgl_config {
    int n_entities;   /* n */
    int n_relations;  /* m, original relations */
    bool reciprocal;  /* relation_emb has 2m rows; the inverse of k is m + k */
    int dim, heads, ffn;
    kgl_scale_kind scale;
    double scale_value; /* τ when scale == KGL_SCALE_VALUE */
    double init_scale;  /* s in N(0, (s/√d)²) for the attention weights */
    /* Remedies for saturation (extensions of MODEL.md, off by default): */
    bool qk_norm;       /* layer-normalise each head's Q and K rows (ViT-22B) */
    bool learn_temperature; /* S_h = exp(θ_h) τ Q_h K_hᵀ with a learned θ_h, init 0 */
} kgl_config;

typedef struct kgl_model {
    kgl_config cfg;
    kgl_params params;
    kgl_tensor *entity_emb, *relation_emb;
    kgl_tensor *wq, *wk, *wv, *wo;
    kgl_tensor *ln1_gamma, *ln1_beta;
    kgl_tensor *ffn_w1, *ffn_b1, *ffn_w2, *ffn_b2, *ln2_gamma, *ln2_beta; /* NULL without FFN */
    kgl_tensor *qn_gamma, *qn_beta, *kn_gamma, *kn_beta; /* [dk] each, with qk_norm */
    kgl_tensor *log_temperature;                         /* [H], with learn_temperature */
    bool ablate[KGL_MAX_HEADS]; /* zero these heads' outputs (a runtime switch for studies) */
} kgl_model;

/* Sets defaults: d 8, H 2, no FFN, sqrt scale, init scale 1, reciprocal. */
void kgl_config_defaults(kgl_config *cfg);
/* A configuration error for people ("--heads 3 does not divide --dim 8"),
 * or NULL when the configuration is valid. */
const char *kgl_config_error(const kgl_config *cfg);
int kgl_config_relation_rows(const kgl_config *cfg);
double kgl_config_tau(const kgl_config *cfg);

/* Declares and allocates the parameters (all zero); then either initialise
 * them (kgl_model_init) or load them. The config must be valid. */
void kgl_model_create(kgl_model *m, const kgl_config *cfg);
/* MODEL.md's init, drawn from `rng` parameter by parameter in declaration
 * order (entity_emb, relation_emb, attn.wq, attn.wk, attn.wv, attn.wo,
 * ffn.w1, ffn.w2), each in row-major order; gammas 1, betas and biases 0. */
void kgl_model_init(kgl_model *m, kgl_rng *rng);
void kgl_model_free(kgl_model *m);

/* A batch of examples (head i, relation r, tail t); relation ids < m are
 * forward, m + k the inverse of k. The arrays are borrowed. */
typedef struct kgl_batch {
    int n;
    const int *head, *rel, *tail;
} kgl_batch;

/* Head supervision: head_of[r] is the head assigned to original relation r,
 * or -1. NULL (or no assigned relation in the batch) means no aux term. */
typedef struct kgl_supervision {
    const int *head_of; /* [m] */
    double weight;      /* λ */
} kgl_supervision;

typedef struct kgl_forward {
    kgl_tensor *context;                /* C [n, d] */
    kgl_tensor *q, *k;                  /* Q, K [n, d] */
    kgl_tensor *logits_attn[KGL_MAX_HEADS]; /* S_h [n, n] (scaled) */
    kgl_tensor *attn[KGL_MAX_HEADS];    /* A_h [n, n] */
    kgl_tensor *head_out[KGL_MAX_HEADS]; /* A_h V_h [n, dk] */
    kgl_tensor *scores;                 /* readout logits [B, n] (loss only) */
    kgl_tensor *main_loss, *aux_loss;   /* aux NULL when nothing was supervised */
    kgl_tensor *loss;                   /* main + λ aux */
    int n_supervised;
} kgl_forward;

/* The contextual states C of every entity (and the attention on the way). */
void kgl_model_context(const kgl_model *m, kgl_tape *t, kgl_forward *out);
/* Context, readout and loss of MODEL.md for one batch. */
void kgl_model_loss(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const kgl_supervision *sup,
                    kgl_forward *out);

/* Training-time regularisers (extensions of MODEL.md, all off by default).
 * Dropout (inverted: kept values scaled by 1/(1 − p)) draws its masks from
 * `rng`, an explicit stream of its own, in forward order: the input
 * embeddings X = drop(E) (Q, K, V and the residual read X; the readout's
 * candidates are E itself), each head's attention weights, the attention
 * output before the residual U = X + drop(O Wo) (and the FFN output before
 * its residual), and in the loss each example's head state C[i] (a mask per
 * example). Label smoothing is the cross entropy's ε. With rng NULL no
 * dropout happens (evaluation). */
typedef struct kgl_regularisers {
    double dropout;         /* --dropout: input embeddings, before each residual */
    double attn_dropout;    /* --attn-dropout: attention weights */
    double hidden_dropout;  /* --hidden-dropout: the head state of each example in the readout
                               (a mask on R[r] instead would be the same: the readout
                               multiplies C[i], R[r] and E[j] feature by feature) */
    double label_smoothing; /* --label-smoothing: ε */
    kgl_rng *rng;
} kgl_regularisers;
/* The same with regularisers (reg NULL: exactly the functions above). */
void kgl_model_context_reg(const kgl_model *m, kgl_tape *t, const kgl_regularisers *reg, kgl_forward *out);
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
 * and a learned temperature per head), and with the FFN, every dropout and
 * label smoothing (masks drawn once from a seeded stream, then fixed). */
#define KGL_LAYER_CHECKS 5
const char *kgl_layer_check_name(int which);
int kgl_layer_check(int which, uint64_t seed, kgl_check_result *res);

/* The chapter's experiment: softmax of 5 seeded N(0,1) logits, the explicit
 * Jacobian against central differences of the softmax with step h. Fills
 * z[5], J[25] and J_fd[25] when non-NULL; returns max |J − J_fd|. */
double kgl_softmax_jacobian_experiment(uint64_t seed, double h, double *z, double *J, double *J_fd);

/* ----------------------------------------------------------------- json --
 * Writing: a string with escapes; a number with 17 significant digits (a
 * double survives the round trip), null for NaN or infinity. */
void kgl_json_string(FILE *f, const char *s);
void kgl_json_number(FILE *f, double v);

/* ----------------------------------------------------------- text input --
 * The one way kgl reads text files (triples, types, CSV): the whole file is
 * read at once, then iterated line by line. Blank lines (empty once a
 * trailing \r is removed) and lines whose first byte is '#' are skipped;
 * fields are split on one separator byte and never trimmed. */
#define KGL_LINE_MAX 65536 /* bytes in a line, without its newline */

typedef struct kgl_text {
    char *name;     /* for messages: the path, or a display name */
    char *buf;      /* the contents, NUL-terminated (owned) */
    size_t len;     /* bytes in buf */
    size_t pos;     /* start of the next line */
    int lineno;     /* number of the line last returned (1-based) */
} kgl_text;

/* Reads a file. On failure writes "path: why" into err and returns false. */
bool kgl_text_open(kgl_text *t, const char *path, char *err, size_t err_cap);
/* Uses a copy of `len` bytes of `data`, named `name` in messages. */
void kgl_text_from_memory(kgl_text *t, const char *name, const char *data, size_t len);
/* The next line that is not blank and not a comment, split on `sep`: fills
 * up to max_fields pointers (into the buffer, NUL-terminated) and sets
 * *n_fields to the number of fields the line has. Returns 1 for a line, 0
 * at the end, -1 with "name:line: what is wrong" in err for a NUL byte,
 * invalid UTF-8 or a line longer than KGL_LINE_MAX. */
int kgl_text_next(kgl_text *t, char sep, char **fields, int max_fields, int *n_fields, char *err, size_t err_cap);
void kgl_text_close(kgl_text *t);
/* Whether `s` (n bytes) is valid UTF-8 (no overlongs, no surrogates, ≤ U+10FFFF). */
bool kgl_utf8_valid(const unsigned char *s, size_t n, size_t *bad_offset);

/* ----------------------------------------------------------------- data --
 * Triples files (MODEL.md, "Data"; README, "File formats"): UTF-8, one triple
 * per line, head<TAB>relation<TAB>tail, read with the line reader above (so
 * blank and '#' lines are skipped, a trailing \r is tolerated, a line is at
 * most KGL_LINE_MAX bytes). Exactly three non-empty fields, never trimmed.
 * Every malformed input is reported as "file:line: what is wrong" (or
 * "file: what is wrong", e.g. "file: no triples"). */
typedef struct kgl_triple { int head, rel, tail; } kgl_triple;

/* A file to load: read from `path`, or, when `text` is non-NULL, from those
 * `len` bytes (then `path` is only the name used in messages). */
typedef struct kgl_source { const char *path; const char *text; size_t len; } kgl_source;

typedef struct kgl_split {
    char *path;          /* name for messages (owned copy) */
    kgl_triple *triples; /* unique triples in file order (first occurrence kept) */
    int n;
    int n_duplicates;    /* lines that repeated an earlier triple of the same file */
    int first_duplicate_line; /* line number of the first such repeat, 0 if none */
} kgl_split;

#define KGL_MAX_SPLITS 8
typedef struct kgl_dataset {
    int n_entities, n_relations;          /* n, m (original relations) */
    char **entity_names, **relation_names; /* id order: byte-sorted (strcmp), ids from 0 */
    int n_splits;
    kgl_split splits[KGL_MAX_SPLITS];     /* in the order given: train, valid, test */
    /* filter index (private to data.c): CSR over (entity, relation-or-inverse) */
    int *known_offsets;  /* [n * 2m + 1] */
    int *known;          /* sorted entity ids per key */
} kgl_dataset;

/* Loads the sources together: entity ids are every name appearing as head or
 * tail in ANY of them, sorted by byte order; relation ids likewise. Returns
 * false and writes one message "file:line: what is wrong" (or "file: ...") into err.
 * On failure *ds is left empty (kgl_dataset_free on it is harmless). */
bool kgl_dataset_load(kgl_dataset *ds, const kgl_source *src, int n_src, char *err, size_t err_cap);
void kgl_dataset_free(kgl_dataset *ds);
int kgl_dataset_entity_id(const kgl_dataset *ds, const char *name);   /* -1 if unknown */
int kgl_dataset_relation_id(const kgl_dataset *ds, const char *name); /* -1 if unknown */
/* Filtered-ranking index over every triple of every split: for rel < m, the
 * sorted tails t of known triples (head, rel, t); for rel = m + k, the sorted
 * heads h of known triples (h, k, head) (the inverse direction). No hashing at
 * lookup time (it is called during training-time evaluation). Each entity
 * appears once per key even when several splits hold the triple. */
const int *kgl_dataset_known(const kgl_dataset *ds, int head, int rel, int *count);

/* entity<TAB>type files (data/academic.types.tsv): names and types, in file order. */
typedef struct kgl_types { int n; char **entity; char **type; } kgl_types;
/* Same rules and error style as triples files; 2 fields per line; an entity
 * listed twice is an error. */
bool kgl_types_load(kgl_types *ty, const kgl_source *src, char *err, size_t err_cap);
void kgl_types_free(kgl_types *ty);

/* The academic world (data/academic.tsv, data/academic.types.tsv) embedded
 * byte for byte in the library (src/academic.c). */
extern const char kgl_academic_tsv[];
extern const size_t kgl_academic_tsv_len;
extern const char kgl_academic_types_tsv[];
extern const size_t kgl_academic_types_tsv_len;
/* ---------------------------------------------------------- json input --
 * A strict JSON parser (RFC 8259): objects, arrays, strings (every escape;
 * \uXXXX surrogate pairs become one UTF-8 character; raw control characters,
 * invalid UTF-8 and unpaired surrogates are errors), numbers, true, false,
 * null. Nesting is limited to KGL_JSON_MAX_DEPTH containers; a key repeated
 * within one object is an error; anything but whitespace after the value is
 * an error. The tree owns copies of every string, in one allocation, so the
 * text may be freed after parsing.
 *
 *   kgl_json_doc doc;
 *   if (!kgl_json_parse(text, len, &doc, err, sizeof err)) ... err is
 *       "at byte 57: expected ',' or '}', found '\"'" (offset from text[0])
 *   const kgl_json *v = kgl_json_get(doc.root, "shape");
 *   for (size_t i = 0; v && v->type == KGL_JSON_ARRAY && i < v->len; i++) ... v->child[i]
 *   kgl_json_free(&doc);                                                     */
#define KGL_JSON_MAX_DEPTH 64

typedef enum kgl_json_type {
    KGL_JSON_NULL,
    KGL_JSON_FALSE,
    KGL_JSON_TRUE,
    KGL_JSON_NUMBER,
    KGL_JSON_STRING,
    KGL_JSON_ARRAY,
    KGL_JSON_OBJECT
} kgl_json_type;

typedef struct kgl_json kgl_json;
struct kgl_json {
    kgl_json_type type;
    size_t offset;     /* byte offset of the value in the text */
    const char *key;   /* a member of an object: its key, decoded, NUL-terminated; else NULL */
    size_t key_len;    /* bytes in key (a key may contain "\u0000") */
    size_t key_offset; /* byte offset of the key in the text */
    const char *str;   /* STRING: decoded UTF-8, NUL-terminated; NUMBER: its text as written */
    size_t len;        /* STRING, NUMBER: bytes in str; ARRAY, OBJECT: number of children */
    double num;        /* NUMBER: the nearest double (±HUGE_VAL beyond the range) */
    kgl_json *child;   /* ARRAY, OBJECT: the `len` children, in text order */
};

typedef struct kgl_json_doc {
    kgl_json *root;
    size_t error_at; /* after a failed parse: the byte offset of the error (SIZE_MAX: out of memory) */
    void *block_;    /* private: nodes and strings */
} kgl_json_doc;

/* Parses `len` bytes of `text` (no NUL terminator needed). On failure writes
 * "at byte N: what was expected/found" into err and returns false; the doc
 * then holds nothing to free (kgl_json_free is harmless). A hostile text can
 * need much more memory than its length (~70 bytes per value): when that is
 * not available the result is false with "out of memory: ..." (error_at is
 * SIZE_MAX), never an abort. */
bool kgl_json_parse(const char *text, size_t len, kgl_json_doc *doc, char *err, size_t err_cap);
void kgl_json_free(kgl_json_doc *doc);
/* The member `key` of an object, or NULL (absent, or obj is not an object). */
const kgl_json *kgl_json_get(const kgl_json *obj, const char *key);
/* A number written as an integer (-?digits: no fraction, no exponent) that
 * fits an int64_t: stores it and returns true. "2", "-0" yes; "2.0", "2e0",
 * "9223372036854775808" no. */
bool kgl_json_int64(const kgl_json *v, int64_t *out);
/* "null", "a boolean", "a number", "a string", "a list", "an object". */
const char *kgl_json_type_name(kgl_json_type t);

/* ---------------------------------------------------------- safetensors --
 * The checkpoint format (MODEL.md): an 8-byte little-endian header length
 * N, N bytes of JSON header, then the data section. The header maps each
 * tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (byte
 * offsets into the data section) and may hold "__metadata__", an object of
 * strings. kgl writes and reads dtype F64 only (little-endian, C order), and
 * tensors of 1 or 2 dimensions; a dimension may be 0 (an empty tensor: no
 * bytes, data_offsets [x, x]). */
#define KGL_ST_MAX_HEADER 100000000 /* bytes; the reference implementation's cap */

typedef struct kgl_st_entry {
    const char *name;
    int ndim;         /* 1 (a vector, e.g. ln1.gamma [d]) or 2 ([rows, cols]) */
    int64_t shape[2]; /* shape[1] is ignored when ndim is 1 */
    const double *data; /* prod(shape) values, row-major; may be NULL when that is 0 */
} kgl_st_entry;

/* Writes tensors (dtype F64, little-endian, C order) in the order given and
 * string metadata (meta_kv: n_meta key/value pairs, flattened as
 * k0,v0,k1,v1,...; written first, as "__metadata__") to `path` atomically: a
 * temporary file in the same folder ("path.PID.K.tmp"), fwrite, fflush, fsync,
 * then rename over `path` (and a best-effort fsync of the folder). The header
 * JSON is padded with spaces to a multiple of 8 bytes, so every tensor's data
 * is 8-byte aligned in the file. Names and metadata must be valid UTF-8,
 * unique, and no tensor may be called "__metadata__". On failure the temp
 * file is removed, `path` is untouched (a previous file there stays as it
 * was), err says "path: why" and the result is false. */
bool kgl_st_write(const char *path, const kgl_st_entry *t, int n, const char *const *meta_kv, int n_meta,
                  char *err, size_t err_cap);

typedef struct kgl_st_tensor {
    char *name;
    int ndim;
    int64_t shape[2]; /* shape[1] is 1 when ndim is 1 */
    double *data;     /* aligned copy, host order; valid (not NULL) even when empty */
} kgl_st_tensor;

typedef struct kgl_st_file {
    int n;                   /* tensors, in header order */
    kgl_st_tensor *tensors;
    int n_meta;              /* metadata pairs, in header order */
    char **meta_keys, **meta_values;
    void *storage_, *data_;  /* private: names and metadata; the values */
} kgl_st_file;

/* Reads and validates the whole file before returning; on any problem
 * returns false with "path: what is wrong" in err and *f empty. Checked: at
 * least 8 bytes; header length within the file and at most
 * KGL_ST_MAX_HEADER; the header starts with '{' and is valid JSON (messages
 * give the byte offset within the header); each tensor entry is an object with
 * exactly dtype, shape and data_offsets; dtype "F64"; a shape of 1 or 2
 * non-negative integers; data_offsets [begin, end] with begin <= end <= the
 * data section's size and end - begin = 8 * prod(shape); no two tensors
 * overlap and every byte of the data section belongs to a tensor;
 * __metadata__ (optional) an object of strings; names, keys and values free
 * of NUL bytes. */
bool kgl_st_read(const char *path, kgl_st_file *f, char *err, size_t err_cap);
void kgl_st_free(kgl_st_file *f);
const kgl_st_tensor *kgl_st_find(const kgl_st_file *f, const char *name); /* NULL if absent */
const char *kgl_st_meta(const kgl_st_file *f, const char *key);           /* NULL if absent */

/* ------------------------------------------------------------- training --
 * Requires the data section (kgl_dataset, kgl_triple). */

/* Filtered ranking metrics (MODEL.md, "Evaluation"). */
typedef struct kgl_metrics {
    double mrr, hits1, hits3, hits10;
    long n; /* ranked examples */
} kgl_metrics;

typedef struct kgl_eval {
    int n_relations;
    kgl_metrics tail, head, both;
    kgl_metrics *rel_tail, *rel_head; /* per original relation [m] */
    double *scores;                   /* scratch [n] */
    /* the same with the optimistic rank (ties counted in the target's
       favour: 1 + number scoring higher), as NTP reports */
    kgl_metrics tail_optimistic, head_optimistic, both_optimistic;
} kgl_eval;

void kgl_eval_init(kgl_eval *e, int n_entities, int n_relations);
void kgl_eval_free(kgl_eval *e);
/* The realistic filtered rank of `target` among scores[0..n): 1 + (number of
 * unfiltered candidates scoring higher) + (number scoring equal)/2, skipping
 * the candidates in `known` (sorted) other than the target. A NaN score
 * counts as higher than the target's; a NaN target ranks last. */
double kgl_filtered_rank(const double *scores, int n, int target, const int *known, int n_known);
/* The same count, both ends of the tie range: optimistic 1 + higher,
 * pessimistic 1 + higher + equal (the realistic rank is their mean). */
void kgl_filtered_rank_range(const double *scores, int n, int target, const int *known, int n_known,
                             double *optimistic, double *pessimistic);
/* Ranks every triple of tr[0..n) for its tail and its head with the entity
 * states C (from kgl_model_context). Allocates nothing. */
void kgl_evaluate(const kgl_model *m, const kgl_tensor *C, const kgl_dataset *ds, const kgl_triple *tr, int n,
                  kgl_eval *out);
/* The training tails of every (relation, entity), deduplicated: what spec
 * and the head reports measure attention against. */
typedef struct kgl_tails {
    int n_entities, n_relations;
    int *offsets; /* [m * n + 1]: tails of (r, i) are tails[offsets[r*n+i] .. offsets[r*n+i+1]) */
    int *tails;
} kgl_tails;
void kgl_tails_build(kgl_tails *tl, int n_entities, int n_relations, const kgl_triple *tr, int n);
void kgl_tails_free(kgl_tails *tl);
/* spec[h][r] (MODEL.md, "Diagnostics"): mean over entities i with at least
 * one r-tail of Σ_{t ∈ tails_r(i)} A_h[i, t]; written to spec[h * m + r],
 * NAN for a relation without tails. */
void kgl_specialisation(const kgl_tails *tl, int heads, kgl_tensor *const *attn, double *spec);

/* A learning-rate schedule over optimiser steps t = 1, 2, …: the rate of
 * update t is lr · f(t) with
 *   constant:  f = 1
 *   warmup W:  f = min(1, t / W)  before whichever decay follows
 *   cosine:    f = floor + (1 − floor) (1 + cos(π min(t, T)/T)) / 2   (T = steps)
 *   linear:    f = 1 − (1 − floor) min(t, T)/T
 * Extensions of MODEL.md (which trains at a constant lr). */
typedef enum { KGL_SCHED_CONSTANT = 0, KGL_SCHED_COSINE, KGL_SCHED_LINEAR } kgl_schedule_kind;
typedef struct kgl_schedule {
    kgl_schedule_kind kind;
    long warmup;  /* W steps of linear warmup (0: none) */
    long total;   /* T: the step at which the decay ends */
    double floor; /* the final fraction of lr */
} kgl_schedule;
double kgl_schedule_factor(const kgl_schedule *s, long step);

typedef struct kgl_train_config {
    int batch;                  /* examples per step (MODEL.md: default 1024) */
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
} kgl_trainer;

/* Prepares training of `model_cfg` (entity and relation counts are taken
 * from ds) on train[0..n_train), with fresh parameters drawn from the seed.
 * The triples must outlive the trainer. */
void kgl_trainer_init(kgl_trainer *tr, const kgl_dataset *ds, const kgl_triple *train, int n_train,
                      const kgl_config *model_cfg, const kgl_train_config *tc);
void kgl_trainer_free(kgl_trainer *tr);
/* One optimiser step on the next batch: kgl_trainer_compute (forward and
 * backward; the gradients and tr->fwd then describe the parameters before
 * the update) followed by kgl_trainer_update. Returns the loss of the
 * forward pass. A non-finite loss leaves the parameters untouched (the
 * caller stops). */
double kgl_trainer_step(kgl_trainer *tr);
double kgl_trainer_compute(kgl_trainer *tr);
void kgl_trainer_update(kgl_trainer *tr);
/* Entity states C of the current parameters (on eval_tape, no gradients). */
kgl_tensor *kgl_trainer_context(kgl_trainer *tr, kgl_forward *f);
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
    double *values; /* data, m, v of every parameter */
    size_t total;
    long step;
    kgl_rng epoch_rng;
    int cursor;
    kgl_rng dropout_rng;
} kgl_snapshot;
void kgl_trainer_snapshot(const kgl_trainer *tr, kgl_snapshot *s);
void kgl_trainer_restore(kgl_trainer *tr, const kgl_snapshot *s);
void kgl_snapshot_free(kgl_snapshot *s);

/* ----------------------------------------------------------- checkpoint --
 * A safetensors file (MODEL.md, "Checkpoint file"): the parameters by name,
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
} kgl_train_state;

/* Writes atomically (temporary file, fsync, rename). */
bool kgl_checkpoint_save(const char *path, const kgl_model *m, const kgl_dataset *ds, const kgl_train_state *st,
                         char *err, size_t err_cap);

typedef struct kgl_checkpoint {
    kgl_config cfg;
    kgl_train_state st;
    bool has_adam;             /* adam.m.* and adam.v.* present */
    void *file;                /* the opened safetensors file (private) */
} kgl_checkpoint;

/* Reads and validates a checkpoint against the loaded triples (entities and
 * relations must match in name and order); says exactly what is wrong. */
bool kgl_checkpoint_open(const char *path, const kgl_dataset *ds, kgl_checkpoint *ck, char *err, size_t err_cap);
/* Copies parameters (and Adam moments when present) into a model created
 * with ck->cfg. */
void kgl_checkpoint_apply(const kgl_checkpoint *ck, kgl_model *m);
void kgl_checkpoint_close(kgl_checkpoint *ck);

/* ---------------------------------------------------------- diagnostics --
 * What the saturation and specialisation studies measure (MODEL.md,
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

typedef struct kgl_diag {
    int heads, n, d, m;
    double *attn0;                 /* [H n n] attention at the reference point */
    double *wq0, *wk0;             /* [d d] */
    kgl_head_diag head[KGL_MAX_HEADS];
    double *spec;                  /* [H m] */
} kgl_diag;

/* Takes the trainer's current parameters as step 0 (W₀, A₀). */
void kgl_diag_init(kgl_diag *dg, kgl_trainer *tr);
/* Measures after kgl_trainer_compute and before kgl_trainer_update: the
 * attention and gradients of that forward pass, at the parameters it used.
 * Reads only: the trajectory is the same with or without it. */
void kgl_diag_measure(kgl_diag *dg, const kgl_trainer *tr);
void kgl_diag_free(kgl_diag *dg);

/* ------------------------------------------------------------------ svg --
 * Pictures for people: heatmaps (attention maps, one per head) and line plots
 * (diagnostics vs step) as self-contained SVG 1.1 files that open in any
 * browser. No plotting library: src/svg.c writes the XML itself.
 *
 * Every function writes the whole picture into memory, then to a temporary
 * file beside `path` (mode 0644) and renames it over `path`, so a half-written
 * file never remains. On failure (a bad argument, or the file cannot be
 * written) it writes "path: why" into err and returns false, leaving nothing.
 * Output is deterministic: the same input gives the same bytes (coordinates
 * with at most 2 decimals, values in tooltips with 4 significant digits).
 * All text is XML-escaped; invalid UTF-8 and control characters in labels
 * become U+FFFD. Labels longer than about 16 characters are shortened with
 * "…" on the page; tooltips always carry the full text.
 *
 * Colours: heatmaps use viridis (perceptually uniform, colour-blind safe,
 * legible in greyscale), interpolated linearly between 9 anchors; line series
 * use the Okabe–Ito palette, each with its own dash pattern and marker shape
 * so that the series can also be told apart in greyscale. */

typedef struct kgl_heatmap {
    const char *title;                 /* panel title (the page title for kgl_svg_heatmap), or NULL */
    int rows, cols;                    /* at most 1,000,000 cells */
    const double *values;              /* rows*cols, row-major */
    const char *const *row_labels;     /* rows names, or NULL for indices 0, 1, ... */
    const char *const *col_labels;     /* cols names, or NULL for indices */
    const char *row_axis, *col_axis;   /* axis titles, e.g. "query entity", "key entity", or NULL */
    /* The colour scale. NaN, or vmin == vmax (so also the 0, 0 of a zeroed
     * struct), means "from the data": the finite minimum and maximum. Values
     * outside the scale are drawn in its end colours (the legend counts them). */
    double vmin, vmax;
    const unsigned char *outline;      /* rows*cols flags: nonzero cells get a black-and-white box, or NULL */
    const char *outline_label;         /* legend text for outlined cells, e.g. "true tail (advises)" */
    const char *value_label;           /* colour-bar title, e.g. "attention weight" */
    bool annotate;                     /* print each value in its cell (when cells are >= 24 px) */
} kgl_heatmap;

/* One heatmap with a colour-bar legend. Cells are 36 px for up to 13 rows or
 * columns and shrink to 4 px (about 480 px in all); when they are too small
 * for every label, every k-th is shown (k = 2, 5, 10, ...) and the axis title
 * says so. Column labels are rotated 45°. Each cell is a <rect class="cell">
 * with a <title> tooltip "row → col: value"; a non-finite value is a grey
 * hatched cell whose tooltip says "not finite". The legend shows the colour
 * bar with round ticks, and counts outlined, non-finite and clamped cells. */
bool kgl_svg_heatmap(const char *path, const kgl_heatmap *h, char *err, size_t err_cap);
/* n_panels heatmaps (each with its own title, labels and shape) in a grid of
 * n_cols columns, with ONE colour scale and one legend: the scale runs from
 * the smallest to the largest of the panels' bounds, each panel's bound being
 * its vmin/vmax when set and its data otherwise. The legend's title is the
 * first value_label given, its outline text the first outline_label. */
bool kgl_svg_heatmap_grid(const char *path, const char *title, const kgl_heatmap *panels, int n_panels,
                          int n_cols, char *err, size_t err_cap);

typedef struct kgl_series {
    const char *label; /* legend text, or NULL for "series 1", ... */
    int n;             /* points */
    const double *x;   /* n values, or NULL for 0, 1, ..., n-1 */
    const double *y;   /* n values */
} kgl_series;

typedef struct kgl_lineplot {
    const char *title, *x_label, *y_label; /* each may be NULL */
    bool log_y; /* log10 axis with ticks at decades: non-positive values are skipped (counted in a note) */
    bool log_x;
    const kgl_series *series;
    int n_series;
} kgl_lineplot;

/* Axes with round ticks (1, 2 or 5 times a power of ten; decades on log
 * axes), grid lines, axis labels, a legend entry per series, and one
 * <polyline> per run of drawable points of each series, in a distinct colour
 * AND dash pattern. Points that cannot be drawn (non-finite, or non-positive
 * on a log axis) break the line, are counted in a note under the plot and in
 * the series' legend tooltip. A series of at most 60 points also gets a
 * marker per point with a <title> tooltip "label: (x, y)". */
bool kgl_svg_lineplot(const char *path, const kgl_lineplot *p, char *err, size_t err_cap);
/* Several independent line plots on one page, n_cols per row, under `title`. */
bool kgl_svg_lineplot_grid(const char *path, const char *title, const kgl_lineplot *plots, int n_plots,
                           int n_cols, char *err, size_t err_cap);

/* ----------------------------------------------------------------- demo --
 * The chapter on attention as relevance-based reasoning, re-derived with the
 * engine's ops (`kgl demo`, src/demo.c). Each kgl_demo_* runs one section on
 * a tape that does not record (except where a gradient is the point), fills
 * its result and returns whether every check of the section holds; each
 * check is computed from the numbers against the bound defined here. A
 * section seeds its own RNG with `seed`, so it gives the same numbers alone
 * as among all nine. */
#define KGL_DEMO_D 8          /* width of X in the academic sections */
#define KGL_DEMO_DK 4         /* key width (per head) */
#define KGL_DEMO_MAX_N 64     /* entities in a --types file */
#define KGL_DEMO_EXACT 1e-12  /* identities that hold up to round-off */

/* The world the academic sections run on: names and types borrowed from a
 * kgl_types (which must outlive it). Type k, in order of first appearance,
 * is dimension k of X. */
typedef struct kgl_demo_world {
    int n, n_types;
    char *const *entity;
    const char *type_name[KGL_DEMO_D];
    int type_of[KGL_DEMO_MAX_N];
} kgl_demo_world;
/* False with "name: what is wrong" in err for more than KGL_DEMO_MAX_N
 * entities or more than KGL_DEMO_D types. */
bool kgl_demo_world_init(kgl_demo_world *w, const kgl_types *ty, const char *name, char *err, size_t err_cap);
int kgl_demo_world_find(const kgl_demo_world *w, const char *entity); /* -1 if absent */

/* 1. attention. X = N(0,1) + 0.5 on the type's dimension (n x 8, drawn row
 * by row), then Wq, Wk, Wv (8 x 4) ~ N(0,1); A = softmax(Q Kᵀ / √4), O = A V.
 * The query's row traced; check: max |row sum − 1| over every row < 1e-12. */
typedef struct kgl_demo_attention {
    int query, n_top;
    double raw[KGL_DEMO_MAX_N], scaled[KGL_DEMO_MAX_N], weight[KGL_DEMO_MAX_N]; /* the query's row */
    int top[3];
    double out[KGL_DEMO_DK]; /* A[query] V */
    double max_row_sum_err;
    bool pass;
} kgl_demo_attention;
bool kgl_demo_attention_run(const kgl_demo_world *w, int query, uint64_t seed, kgl_demo_attention *r);

/* 2. variance. Var(q·k) of KGL_DEMO_VAR_PAIRS pairs of N(0,1) vectors (q
 * then k drawn per pair) for dk = 4, 64, 256; then the largest softmax weight
 * of one query against 13 keys at dk = 256, unscaled and scaled by 1/√dk,
 * averaged over 1000 draws.
 * Why 50,000 pairs and not the chapter's 10,000: the sample variance of n
 * products has relative standard error √((κ − 1)/n), κ = 3 + 6/dk the
 * kurtosis of q·k, so at n = 10,000 the band [0.97, 1.03] is only 1.6 (dk =
 * 4) to 2.1 (dk = 256) standard errors wide and 29 of seeds 1..200 failed it
 * (seed 1 among them, at dk = 256). At 50,000 it is 3.6 to 4.7 standard
 * errors: a failure is a 1-in-3000 seed. */
#define KGL_DEMO_VAR_PAIRS 50000
#define KGL_DEMO_VAR_LO 0.97
#define KGL_DEMO_VAR_HI 1.03
#define KGL_DEMO_SAT_DK 256
#define KGL_DEMO_SAT_KEYS 13
#define KGL_DEMO_SAT_DRAWS 1000
#define KGL_DEMO_SAT_UNSCALED_MIN 0.9
#define KGL_DEMO_SAT_SCALED_MAX 0.5
typedef struct kgl_demo_variance {
    int dk[3];
    double var[3], ratio[3];
    double sat_unscaled, sat_scaled;
    bool pass;
} kgl_demo_variance;
bool kgl_demo_variance_run(uint64_t seed, kgl_demo_variance *r);

/* 3. jacobian. The 5 logits of kgl_softmax_jacobian_experiment: J against
 * central differences, the hand formulas, and the tape's backward (J e_k);
 * then the logits scaled by c = 1, 2, …, 64. */
#define KGL_DEMO_JAC_N 5
#define KGL_DEMO_JAC_H 1e-5
#define KGL_DEMO_JAC_FD_BOUND 1e-9
#define KGL_DEMO_JAC_SWEEP 7
typedef struct kgl_demo_jacobian {
    double z[KGL_DEMO_JAC_N], p[KGL_DEMO_JAC_N], J[KGL_DEMO_JAC_N * KGL_DEMO_JAC_N];
    double fd_err;   /* max |J − J_fd| */
    double hand_err; /* max |J − (J_ii = p_i (1 − p_i), J_ij = −p_i p_j)| */
    double tape_err; /* max |J − J e_k from kgl_backward_seeded through softmax_rows| */
    double c[KGL_DEMO_JAC_SWEEP], max_prob[KGL_DEMO_JAC_SWEEP], rest[KGL_DEMO_JAC_SWEEP]; /* rest = 1 − max_prob */
    double fro[KGL_DEMO_JAC_SWEEP], max_jii[KGL_DEMO_JAC_SWEEP];
    bool pass;
} kgl_demo_jacobian;
bool kgl_demo_jacobian_run(uint64_t seed, kgl_demo_jacobian *r);

/* 4. lookup. Keys I₄, values 4 x 4 ~ N(0,1), q = c k₂ (no scaling) for c = 3, 8. */
#define KGL_DEMO_LOOKUP_COS_MIN 0.99
typedef struct kgl_demo_lookup {
    double c[2];
    double V[16];
    double weight[2][4], out[2][4];
    double p2[2], p2_exact[2], cos[2]; /* p(slot 2), e^c / (e^c + 3), cos(out, v₂) */
    bool pass;
} kgl_demo_lookup;
bool kgl_demo_lookup_run(uint64_t seed, kgl_demo_lookup *r);

/* 5. multihead. X as in 1, then Wq, Wk, Wv, Wo (8 x 8) ~ N(0, 1/8); head h
 * uses columns 4h..4h+3 of Q, K, V. Checks: the shapes, row sums, and
 * concat(O₁, O₂) Wo = Σ_h O_h Wo[4h..4h+3, :]. */
#define KGL_DEMO_HEADS 2
typedef struct kgl_demo_multihead {
    int query;
    int shape[6][2]; /* X, Q, Q_h, O_h, concat, output: from the tensors */
    int top[KGL_DEMO_HEADS];
    double top_weight[KGL_DEMO_HEADS];
    double max_row_sum_err, split_err;
    bool shapes_ok, pass;
} kgl_demo_multihead;
bool kgl_demo_multihead_run(const kgl_demo_world *w, int query, uint64_t seed, kgl_demo_multihead *r);

/* 6. maxweight. One query, 8 keys ~ N(0,1) in d dims, 300 draws: the mean
 * largest weight unscaled and scaled by 1/√d. */
#define KGL_DEMO_MW_DIMS 5
#define KGL_DEMO_MW_KEYS 8
#define KGL_DEMO_MW_DRAWS 300
#define KGL_DEMO_MW_UNSCALED_MIN 0.9 /* at the largest d */
#define KGL_DEMO_MW_SCALED_MAX 0.5   /* at every d */
typedef struct kgl_demo_maxweight {
    int d[KGL_DEMO_MW_DIMS];
    double unscaled[KGL_DEMO_MW_DIMS], scaled[KGL_DEMO_MW_DIMS];
    bool pass;
} kgl_demo_maxweight;
bool kgl_demo_maxweight_run(uint64_t seed, kgl_demo_maxweight *r);

/* 7. mask. Five tokens, features (person, thing, time, action), W_K = W_V = I,
 * W_Q by hand (no draws). Attention with 1/√4 and without, bidirectional
 * and causal. */
#define KGL_DEMO_T 5
#define KGL_DEMO_F 4
typedef struct kgl_demo_mask {
    const char *token[KGL_DEMO_T], *feature[KGL_DEMO_F];
    double X[KGL_DEMO_T * KGL_DEMO_F], Wq[KGL_DEMO_F * KGL_DEMO_F];
    double bi[KGL_DEMO_T * KGL_DEMO_T], causal[KGL_DEMO_T * KGL_DEMO_T]; /* scaled by 1/√4 */
    double max_w[2][KGL_DEMO_T], max_w_unscaled[2][KGL_DEMO_T];         /* [0] bidirectional, [1] causal */
    double above_diag;      /* max |weight| above the diagonal under the causal mask */
    double max_row_sum_err; /* every row of all four matrices */
    int sharper_rows;       /* rows (of 10) where the unscaled max weight is larger */
    bool never_flatter;     /* in no row is the unscaled max weight smaller */
    bool roles_ok;          /* others' largest weight is on the action; the action's on persons and things */
    bool pass;
} kgl_demo_mask;
bool kgl_demo_mask_run(kgl_demo_mask *r);

/* 8. permutation. The attention of 1 on the rows of X shuffled by a seeded
 * permutation (drawn after 1's parameters; never the identity), with and
 * without the causal mask, against the shuffled outputs. */
#define KGL_DEMO_PERM_BREAK_MIN 1e-9 /* the causal difference must exceed round-off */
typedef struct kgl_demo_permutation {
    int n;
    int perm[KGL_DEMO_MAX_N]; /* row i of PX is row perm[i] of X */
    double free_err, causal_err;
    int causal_rows_differ;
    bool pass;
} kgl_demo_permutation;
bool kgl_demo_permutation_run(const kgl_demo_world *w, uint64_t seed, kgl_demo_permutation *r);

/* 9. memo. The self-attention article's worked example, from a CSV with the
 * header document_id,target_token,candidate_token,candidate_role,
 * evidence_pack,evidence_cap,evidence_action,score. Rows are grouped by
 * (document, target) in order of first appearance. */
#define KGL_MEMO_DIM 3
#define KGL_MEMO_MAX_GROUPS 16
#define KGL_MEMO_MAX_CANDIDATES 32
typedef struct kgl_memo_group {
    const char *document, *target; /* point into the memo's text */
    int line;                      /* of its first row */
    int n;
    const char *token[KGL_MEMO_MAX_CANDIDATES], *role[KGL_MEMO_MAX_CANDIDATES];
    double vec[KGL_MEMO_MAX_CANDIDATES][KGL_MEMO_DIM], score[KGL_MEMO_MAX_CANDIDATES];
} kgl_memo_group;
typedef struct kgl_memo {
    kgl_text text;
    int n_groups;
    kgl_memo_group g[KGL_MEMO_MAX_GROUPS];
} kgl_memo;
/* Reads and validates every row (8 fields, no empty text, numbers that parse
 * and are finite). False with "file:line: what is wrong" in err. */
bool kgl_memo_load(kgl_memo *m, const kgl_source *src, char *err, size_t err_cap);
void kgl_memo_free(kgl_memo *m);
/* data/safety_memo.csv, embedded byte for byte (src/memo_data.c). */
extern const char kgl_safety_memo_csv[];
extern const size_t kgl_safety_memo_csv_len;

/* Per group: the uniform baseline (mean of the vectors), softmax of the
 * scores, the new representation w V, the shift, the top token and the
 * weight on the missing step (roles missing_object, missing_action,
 * current_action). Checks: rows sum to 1, and the article's numbers for
 * document memo_cap_missing, targets 그것 and 씌우지, to 3 decimals. */
typedef struct kgl_demo_memo_result {
    double baseline[KGL_MEMO_DIM], weight[KGL_MEMO_MAX_CANDIDATES], repr[KGL_MEMO_DIM], shift[KGL_MEMO_DIM];
    int top;
    double step_weight;
} kgl_demo_memo_result;
typedef struct kgl_demo_memo {
    kgl_demo_memo_result g[KGL_MEMO_MAX_GROUPS];
    double max_row_sum_err;
    int article_values, article_mismatches; /* values compared with the article, and how many differ */
    char first_mismatch[200];
    bool pass;
} kgl_demo_memo;
bool kgl_demo_memo_run(const kgl_memo *m, kgl_demo_memo *r);

#endif
