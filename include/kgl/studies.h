/* kgl/studies.h — the experiments behind `kgl demo` (the chapter on attention
 * re-derived with the engine's ops), the memo example, the embedded academic
 * world, the heads study (`kgl heads`), the softmax-saturation study (`kgl
 * saturation`) and the pieces of the public benchmarks (`kgl benchmark`).
 * Built on the layers below. */
#ifndef KGL_STUDIES_H
#define KGL_STUDIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kgl/engine.h"
#include "kgl/io.h"
#include "kgl/model.h"

/* The academic world (data/academic.tsv, data/academic.types.tsv) embedded
 * byte for byte in the library (src/studies/academic.c). */
extern const char kgl_academic_tsv[];
extern const size_t kgl_academic_tsv_len;
extern const char kgl_academic_types_tsv[];
extern const size_t kgl_academic_types_tsv_len;

/* ----------------------------------------------------------------- demo --
 * The chapter on attention as relevance-based reasoning, re-derived with the
 * engine's ops (`kgl demo`, src/studies/demo.c). Each kgl_demo_* runs one section on
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
    double ratio_lo, ratio_hi; /* the least and the largest of ratio */
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
    double p2_err[2];                  /* |p(slot 2) − e^c / (e^c + 3)|, checked against KGL_DEMO_EXACT */
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
    double scaled_top; /* the largest of scaled (0 if none is positive) */
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
    int feature_of[KGL_DEMO_T]; /* token i's one feature: feature[feature_of[i]] */
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
/* data/safety_memo.csv, embedded byte for byte (src/studies/memo_data.c). */
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
    bool in_step[KGL_MEMO_MAX_CANDIDATES]; /* candidates of the missing step (their roles) */
    double step_weight;                    /* the weight on them */
} kgl_demo_memo_result;
typedef struct kgl_demo_memo {
    kgl_demo_memo_result g[KGL_MEMO_MAX_GROUPS];
    double max_row_sum_err;
    int article_values, article_mismatches; /* values compared with the article, and how many differ */
    char first_mismatch[200];
    bool pass;
} kgl_demo_memo;
bool kgl_demo_memo_run(const kgl_memo *m, kgl_demo_memo *r);

/* The nine sections in order (attention, variance, jacobian, lookup,
 * multihead, maxweight, mask, permutation, memo): each runs on what a
 * kgl_demo_input holds and is printed as `kgl demo` prints it. */
#define KGL_DEMO_SECTIONS 9
typedef struct kgl_demo_section {
    const char *name, *title; /* "lookup", "attention as a soft dictionary lookup" */
} kgl_demo_section;
extern const kgl_demo_section kgl_demo_sections[KGL_DEMO_SECTIONS];
int kgl_demo_section_find(const char *name); /* its index, or -1 */
typedef struct kgl_demo_input {
    uint64_t seed;               /* of every random draw; each section seeds its own */
    const kgl_demo_world *world; /* the academic sections' world */
    const char *types_name;      /* where its types came from, as the attention section names it */
    int query;                   /* the entity of attention and multihead */
    const kgl_memo *memo;        /* the memo section's */
    const char *memo_name;       /* where it came from */
} kgl_demo_input;
/* Runs section `section` (an index of kgl_demo_sections) and prints it on f
 * (src/studies/demo_text.c): a blank line, its heading "[k] name: title",
 * its tables and numbers, and its check line ending in PASS or FAIL.
 * Returns whether the check passed. */
bool kgl_demo_section_write(FILE *f, int section, const kgl_demo_input *in);
/* The same section as one JSON object through out (`kgl demo --json`,
 * src/studies/demo_json.c): {"name":…, the section's numbers, "pass":…}.
 * Returns whether the check passed. */
bool kgl_demo_section_json(kgl_json_writer *out, int section, const kgl_demo_input *in);

/* ---------------------------------------------------------------- heads --
 * What each attention head of a trained model looks at, measured against
 * its training triples (src/studies/heads.c; `kgl heads`, kgl train's
 * report), built on the primitives of kgl/model.h's heads section (which
 * the training log reads too). Results in plain structs, and their pictures
 * (src/studies/heads_svg.c); printing them is the program's. */

/* Head ablation: the filtered MRR (both directions) of m on tr[0..n) with
 * every head, into *mrr, and with head h of the first layer switched off
 * (its output zeroed, m->ablate[h]; restored after), into ablated_mrr[h]. */
void kgl_heads_ablation(kgl_model *m, const kgl_dataset *ds, const kgl_triple *tr, int n, double *mrr,
                        double *ablated_mrr);
/* Whether j is a true r-tail of i. */
bool kgl_heads_is_tail(const kgl_tails *tl, int r, int i, int j);
/* idx[0..n) = 0..n-1 sorted by key descending, equal keys by index (a
 * deterministic order). */
void kgl_heads_order(const double *key, int n, int *idx);

/* A full-context model against its training triples (ds's names, the
 * triples train[0..n_train)). */
typedef struct kgl_heads_full {
    int heads, layers, n, m; /* n entities, m relations */
    kgl_tails tails;         /* of the training triples */
    /* spec[h][r] of layer l at spec[(l · heads + h) · m + r] (kgl_specialisation;
       a deeper layer's heads weigh the states of the layer below) */
    double *spec;
    double *precision;  /* [heads m] layer 0: how often head h's most attended entity is a true r-tail */
    double *baseline;   /* [m] the same as spec for uniform attention: mean |tails_r(i)| / n */
    int *with_tails;    /* [m] the entities with r-tails (the means' count) */
    int *top3;          /* [heads n 3] each entity's three most attended (layer 0; ties: lower id; -1: none) */
    double *top3_weight; /* [heads n 3] their weights */
    double mrr, ablated_mrr[KGL_MAX_HEADS]; /* kgl_heads_ablation on every training triple */
    kgl_tape tape;      /* the forward pass measured: fwd.attn[h] is layer 0's A_h [n, n] */
    kgl_forward fwd;
} kgl_heads_full;
void kgl_heads_full_measure(kgl_heads_full *r, kgl_model *m, const kgl_dataset *ds, const kgl_triple *train,
                            int n_train);
void kgl_heads_full_free(kgl_heads_full *r);

/* The training triples a graph model's ablation ranks (the first of the
   file): enough for a mean, bounded in cost. */
#define KGL_HEADS_ABLATION_TRIPLES 2000
/* A --context graph model: where each head's weight goes, by the relation
 * of the attended edge, over the evaluation neighbourhoods
 * (kgl_model_relation_attention, over the first KGL_RELATION_ATTENTION_TRIPLES
 * training triples' questions with --query-relation). */
typedef struct kgl_heads_graph {
    int heads, m;
    double *mass;                /* [heads m] the weight head h puts on r's edges (NaN: r in no neighbourhood) */
    double *uniform;             /* [m] what uniform weights would put there */
    double self[KGL_MAX_HEADS];  /* the weight on the entity itself */
    int ablation_triples;        /* kgl_heads_ablation on the first this many training triples */
    double mrr, ablated_mrr[KGL_MAX_HEADS];
} kgl_heads_graph;
void kgl_heads_graph_measure(kgl_heads_graph *r, kgl_model *m, const kgl_dataset *ds, const kgl_triple *train,
                             int n_train);
void kgl_heads_graph_free(kgl_heads_graph *r);

/* Where a trainer's heads look, by relation, into spec [heads m] (kgl
 * train's report): a full context's specialisation of f's attention (f: its
 * forward pass), a graph context's weight by relation over the evaluation
 * neighbourhoods (kgl_heads_graph's mass), NaN without a layer. */
void kgl_heads_spec(const kgl_trainer *tr, const kgl_forward *f, double *spec);

/* One question (entity, row, ?) of a model with attention: its true answers
 * among the training triples and where each head looks from it, beside the
 * readout's answers. */
typedef struct kgl_heads_question {
    int entity, row, heads, n; /* n entities */
    bool *is_true;             /* [n] a true answer in the training triples */
    int *truth, n_true;        /* they, in the triples' order */
    /* full context: */
    kgl_real *attn;            /* [heads n] A_h[entity, :] */
    double *mean;              /* [n] the mean over the heads */
    double *scores, *probs;    /* [n] the readout's, every entity */
    int *by_attn, *by_score;   /* [n] the entities by mean attention, by score (best first) */
    /* graph context: */
    kgl_segment_view segment;  /* the question's neighbourhood, each layer's weights on it */
    double *token_mean;        /* [layers tokens] each token's weight, the mean over the heads, layer by layer */
    int *token_order;          /* [layers tokens] each layer's tokens by that mean (most weighted first) */
    kgl_answer *answers;       /* the readout's top n_answers */
    int n_answers;
} kgl_heads_question;
/* The names of a question (kgl heads --query HEAD,REL): the entity head
 * and the relation row named `relation` ("NAME", or "NAME^-1" for its
 * inverse in reciprocal mode; kgl_relation_row_id) into *entity and *row.
 * False with "unknown entity 'x'; did you mean 'y'?" (the near names, when
 * some are near; a relation's among the rows, inverses too) or "'r^-1' is
 * an inverse relation, but this checkpoint was trained with --no-reciprocal
 * ..." in err (2 * KGL_LINE_MAX bytes hold any). */
bool kgl_heads_question_resolve(const kgl_dataset *ds, const kgl_config *cfg, const char *head, const char *relation,
                                int *entity, int *row, char *err, size_t cap);
/* top: the answers a graph model's question keeps (a full one ranks all). */
void kgl_heads_question_measure(kgl_heads_question *q, const kgl_model *m, const kgl_triple *train, int n_train,
                                int n_relations, int entity, int row, int top);
void kgl_heads_question_free(kgl_heads_question *q);
/* The entities a table of a full-context question shows (kgl heads
 * --query): the `top` most attended, then every true answer not among them
 * (so a true tail is never hidden), into rows (room for q->n), most attended
 * first. Returns how many; *rest_max is the largest mean attention of
 * those left out (0 when none is). */
int kgl_heads_question_rows(const kgl_heads_question *q, int top, int *rows, double *rest_max);

/* `kgl heads --json` (src/studies/heads_json.c): each study's fields,
 * written with w into the object the caller opened (and closes, after its
 * own fields: which model, its step, its heads). ds: the names the study
 * measured against; use_relation [m]: the relations written (NULL: every
 * one). A full-context study: "relations" {REL: {"entities", "baseline",
 * "spec" [heads], "argmax_precision" [heads]}} (the relations with tails),
 * with a stack "deeper_layers" [{"layer", "spec" {REL: [heads]}}], "top3"
 * (per head, each entity's [[name, weight], ...]) and "ablation" {"mrr",
 * "heads" [{"head", "mrr", "drop"}]}. A graph-context study: "context",
 * "neighbours", "relations" {REL: {"uniform", "mass" [heads]}} (the
 * relations some neighbourhood has), "self" [heads] and "ablation" (with
 * its "triples"). A question (kgl_heads_question_measure; top as it was
 * given): "query" {"head", "relation"}, then in a full context
 * "true_tails", "attention" (every entity, most attended first: "entity",
 * "true_tail", "heads" [heads], "mean") and the top "answers" [{"rank",
 * "entity", "score", "prob", "true_tail"}]; in a graph context "layers"
 * and "context" before the query and "uniform" after it, then "tokens"
 * (each its "entity" or
 * "asked_relation", the "relation" of its edge, "true_answer", "layers"
 * [[heads] per layer]) and the "answers" it kept. */
void kgl_heads_full_json(kgl_json_writer *w, const kgl_heads_full *r, const kgl_dataset *ds, const bool *use_relation);
void kgl_heads_graph_json(kgl_json_writer *w, const kgl_heads_graph *g, const kgl_dataset *ds,
                          const bool *use_relation, int neighbours);
void kgl_heads_question_json(kgl_json_writer *w, const kgl_heads_question *q, const kgl_dataset *ds, int top);

/* `kgl heads`'s tables (src/studies/heads_text.c), written to f. What the
 * text names beside a study: the model's file and step, the names it was
 * measured against, the relations shown (use_relation [m]), the model's
 * configuration and its training triples' count. kgl_heads_full_write:
 * "PATH: step S, H heads, d_model D; N training triples", the table
 * "relation entities baseline spec h0 ... prec h0 ..." (a stack's deeper
 * layers' spec after it), each head's "head h: each entity's top-3 attended
 * entities" and "head ablation: train MRR ... with every head M" with each
 * head's MRR without it and the drop. kgl_heads_graph_write: the weight by
 * relation ("relation uniform head 0 ..."), "(itself)", and the ablation on
 * the first triples. kgl_heads_question_write (top as --top gave it): in a
 * full context the true answers, then "A_h[i, j]: where each head looks"
 * beside "the readout's top answers"; in a graph context the question's
 * neighbourhood, each layer's "where each head looks" by token, then "the
 * readout's top answers". A model of an ensemble is named before these
 * (kgl_model_choice_write, kgl/model.h). */
typedef struct kgl_heads_text {
    const char *path;         /* the checkpoint the model came from */
    long step;                /* its training step */
    const kgl_dataset *ds;    /* the names the study measured against */
    const bool *use_relation; /* [m] the relations shown */
    const kgl_config *cfg;    /* the model's */
    int n_train;              /* its training triples */
} kgl_heads_text;
void kgl_heads_full_write(FILE *f, const kgl_heads_text *t, const kgl_heads_full *rep);
void kgl_heads_graph_write(FILE *f, const kgl_heads_text *t, const kgl_heads_graph *g);
void kgl_heads_question_write(FILE *f, const kgl_heads_text *t, const kgl_heads_question *q, int top);

/* The pictures of `kgl heads --svg DIR` (src/studies/heads_svg.c), each a
 * self-contained SVG written into dir (created if missing; its parent must
 * exist). ds: the names (the dataset the study measured against);
 * use_relation [m]: the relations drawn (NULL: every one). Attention (and the
 * readout's probabilities) is drawn as a multiple of uniform, weight x n (1:
 * uniform): KGL_COLOUR_AUTO draws it on kgl_svg's ratio scale, centred on 1,
 * so near-uniform attention is drawn near the neutral colour, never as
 * structure; the other scales draw the same multiples. A map draws at most
 * 64 entities a side (the most attended), heads.svg's panels fewer, and says
 * what it leaves out. False with "what is wrong" in err (a folder that cannot
 * be created, a file that cannot be written). */
/* The k-th file those below write into dir (its path into out, when out is
 * non-NULL and 0 <= k < the count returned): a question (query), dir/
 * query.svg; a graph-context study, dir/relations.svg; a full-context one
 * of `heads` heads, dir/head0.svg ... head<heads-1>.svg, then dir/heads.svg
 * and dir/spec.svg. Returns how many files that is, so that a program can
 * check each against the files it reads before any is written. */
int kgl_heads_svg_path(kgl_context_kind context, bool query, int heads, int k, const char *dir, char *out,
                       size_t cap);
/* A full-context study: dir/head<h>.svg (head h's attention, the true tails
 * of its best relation outlined), dir/heads.svg (every head on one colour
 * scale) and dir/spec.svg (spec[h][r], its scale fitted to the data). */
bool kgl_heads_full_svg(const kgl_heads_full *r, const kgl_dataset *ds, const bool *use_relation, const char *dir,
                        kgl_colour_scale scale, char *err, size_t err_cap);
/* A graph-context study: dir/relations.svg, heads x relations, each cell the
 * head's weight on the relation's edges over uniform weights' (mass / uniform). */
bool kgl_heads_graph_svg(const kgl_heads_graph *g, const kgl_dataset *ds, const bool *use_relation, const char *dir,
                         kgl_colour_scale scale, char *err, size_t err_cap);
/* One question: dir/query.svg. A full-context model: a row per head
 * (A_h[entity, j] x n) and one of the readout's probabilities (p(j) x n), over
 * at most 48 entities (the top min(top, 10) answers, then true answers, then
 * the most attended), true answers outlined, those answers listed. A graph
 * model: a row per layer and head, a column per token of the question's
 * neighbourhood (at most 48: true answers' tokens, then the most weighted),
 * each cell weight x tokens, true answers' tokens outlined, the first 10 of
 * q->answers listed (top is not read). */
bool kgl_heads_question_svg(const kgl_heads_question *q, const kgl_dataset *ds, int top, const char *dir,
                            kgl_colour_scale scale, char *err, size_t err_cap);

/* ----------------------------------------------------------- saturation --
 * The softmax-saturation study (`kgl saturation`, src/studies/saturation.c).
 * For every combination of the axes it trains the layer (one head, d = dk,
 * on the academic world; two heads and d = 2 dk for both-two-heads) for each
 * seed, measures the attention diagnostics at every step, and summarises
 * each configuration over the seeds: means, the spread (quantiles) of every
 * final diagnostic, and the fraction of seeds whose supervised head is still
 * frozen at the last step. Diagnostics at step k describe the forward pass of
 * step k (the parameters after k-1 updates); "init" is step 1, "final" the
 * last step. The head diagnostics are head 0's.
 *
 * A stack (the layers axis, --layers L): every layer of a run is measured
 * as the first (kgl_diag), a row per step and layer. In layer l's rows the
 * head diagnostics and spec_* are that layer's; loss, main_loss and aux_loss
 * are the run's (the same in every layer's row); the supervised rows'
 * metrics (target_mass … wk_step) are NaN in layers ≥ 1, since supervision
 * acts on layer 0 only (README, "supervision ... read the first layer").
 *
 * Use: kgl_saturation_spec_defaults, change axes, kgl_saturation_run, then
 * kgl_saturation_summarise per configuration and kgl_saturation_write for the
 * CSV and the plots; kgl_saturation_free. */

/* The per-step diagnostics of one run (the CSV's metric columns, in order). */
typedef enum kgl_saturation_metric {
    KGL_SAT_LOSS,          /* main + aux */
    KGL_SAT_MAIN_LOSS,
    KGL_SAT_AUX_LOSS,      /* head supervision −log A[i, advisee]; NaN when not supervised */
    KGL_SAT_MAX_PROB,      /* mean over rows of the largest attention weight */
    KGL_SAT_MAX_PROB_MIN,  /* the smallest such weight */
    KGL_SAT_ENTROPY,       /* mean attention entropy (nats) */
    KGL_SAT_MAX_ABS_LOGIT,
    KGL_SAT_JAC_FRO,       /* mean softmax Jacobian norm ‖diag(a) − a aᵀ‖_F */
    KGL_SAT_GRAD_LOGITS,   /* ‖∂L/∂S‖, the gradient reaching the attention logits */
    KGL_SAT_GRAD_WQ,
    KGL_SAT_GRAD_WK,
    KGL_SAT_WQ_MOVE,       /* how far Wq moved from its initial value */
    KGL_SAT_WK_MOVE,
    KGL_SAT_ATTN_TV,       /* mean total variation of the attention rows from step 0 */
    KGL_SAT_SPEC_ADVISES,  /* spec[0][advises]: attention mass on the advisees */
    /* the supervised rows (kgl_sup_diag; NaN when not supervised): */
    KGL_SAT_TARGET_MASS,     /* mean attention mass a supervised row puts on its targets */
    KGL_SAT_GRAD_LOGITS_SUP, /* ‖∂L/∂S‖ over the supervised rows */
    KGL_SAT_LOGIT_STEP,      /* max |ΔS| of the supervised rows since the step before (NaN at step 1) */
    KGL_SAT_WQ_STEP,         /* this step's update of Wq: RMS |ΔW| / lr (Adam: RMS m̂/(√v̂ + ε)) */
    KGL_SAT_WK_STEP,
    KGL_SAT_SPEC_AUTHORED,   /* spec[h][authored] of the head authored is supervised onto (else head 0) */
    KGL_SAT_N_METRICS
} kgl_saturation_metric;
/* "loss", "main_loss", "aux_loss", …, "spec_authored": the CSV's column names. */
extern const char *const kgl_saturation_metric_names[KGL_SAT_N_METRICS];

/* What each configuration is also run with when spec.remedies is set. */
typedef enum kgl_saturation_remedy {
    KGL_SAT_REMEDY_NONE,
    KGL_SAT_REMEDY_QK_NORM,     /* kgl_config.qk_norm */
    KGL_SAT_REMEDY_TEMPERATURE, /* kgl_config.learn_temperature */
    KGL_SAT_N_REMEDIES
} kgl_saturation_remedy;
extern const char *const kgl_saturation_remedy_names[KGL_SAT_N_REMEDIES]; /* "none", "qk-norm", "temperature" */

/* The supervision axis: which relations are supervised onto which heads. */
typedef enum kgl_saturation_supervise {
    KGL_SAT_SUP_OFF,            /* no supervision */
    KGL_SAT_SUP_ADVISES,        /* advises on head 0 (the word "on" is a synonym) */
    KGL_SAT_SUP_BOTH_ONE_HEAD,  /* advises and authored, both on head 0 */
    KGL_SAT_SUP_BOTH_TWO_HEADS, /* advises on head 0, authored on head 1: two heads of dk, d = 2 dk */
    KGL_SAT_N_SUPERVISE
} kgl_saturation_supervise;
/* "off", "advises", "both-one-head", "both-two-heads" */
extern const char *const kgl_saturation_supervise_names[KGL_SAT_N_SUPERVISE];
/* The code of a supervise word (a name above, or "on" for advises); -1 if none. */
int kgl_saturation_supervise_parse(const char *word);
/* Heads of a configuration with this supervision: 2 for both-two-heads, else 1. */
int kgl_saturation_heads(kgl_saturation_supervise sup);

/* One axis of the grid: its values, and how each reads in the labels (the
 * text as given on the command line; "" is replaced by the value's %g, or
 * its word for scale, optimizer and supervise). */
#define KGL_SAT_AXIS_MAX 16
typedef struct kgl_saturation_axis {
    int n;
    double value[KGL_SAT_AXIS_MAX];
    char text[KGL_SAT_AXIS_MAX][32];
} kgl_saturation_axis;
/* Values of the scale axis besides a positive number τ (logits times τ). */
#define KGL_SAT_SCALE_SQRT (-1.0) /* 1/sqrt(dk) */
#define KGL_SAT_SCALE_NONE (-2.0) /* 1 */

/* Where the grid is: the steps done and all the steps it will take (a run
   whose loss became non-finite takes no more), the runs finished and all. */
typedef struct kgl_saturation_progress {
    long steps_done, steps;
    int runs_done, runs;
} kgl_saturation_progress;

typedef struct kgl_saturation_spec {
    kgl_saturation_axis dk;         /* head width, whole numbers ≥ 1 (d_model = dk, one head) */
    kgl_saturation_axis scale;      /* KGL_SAT_SCALE_SQRT, KGL_SAT_SCALE_NONE or τ > 0 */
    kgl_saturation_axis init_scale; /* attention weights ~ N(0, (s/sqrt(d))^2), s ≥ 0 */
    kgl_saturation_axis optimizer;  /* KGL_OPT_ADAM, KGL_OPT_SGD */
    kgl_saturation_axis lr;         /* learning rates ≥ 0 */
    kgl_saturation_axis supervise;  /* kgl_saturation_supervise codes */
    kgl_saturation_axis layers;     /* layers of the stack, 1..KGL_MAX_LAYERS (the outermost axis) */
    bool remedies;   /* also run each configuration with qk-norm and with a learned temperature */
    double momentum; /* SGD momentum, in [0, 1] */
    int steps;       /* steps per run */
    int seeds;       /* seeds 1..seeds per configuration (summaries are means) */
    int jobs;        /* runs in parallel, 1..64 (results do not depend on it) */
    double frozen_multiple; /* a seed is frozen when its final aux loss > frozen_multiple × floor (> 1) */
    /* The triples trained on; dataset NULL: the embedded academic world.
     * They must include the relation "advises" (and "authored" for the
     * both-* supervisions). */
    const kgl_dataset *dataset;
    const kgl_triple *train;
    int n_train;
    /* Called after every step of every run (under a lock, from any worker),
       or NULL. The runs are taken one seed of every configuration at a
       time, so the pace of the steps done is the whole grid's early on. */
    void (*progress)(const kgl_saturation_progress *at, void *ctx);
    void *progress_ctx;
} kgl_saturation_spec;
/* The defaults of `kgl saturation`: dk 4,64,256; scale sqrt,none; init-scale
 * 1,3; adam; lr 0.01; supervise off; layers 1; no remedies; momentum 0; 300 steps;
 * 10 seeds; 2 jobs; frozen multiple 2; the academic world; no progress. */
void kgl_saturation_spec_defaults(kgl_saturation_spec *spec);

/* One point of the grid, with the label its rows and plot series carry
 * ("dk=4 sqrt s=1", then L (layers), optimizer, lr, sup and remedy where they
 * vary; L also where it is not 1). */
typedef struct kgl_saturation_config {
    int dk;
    kgl_scale_kind scale;
    double scale_value; /* τ when scale == KGL_SCALE_VALUE */
    double init_scale;
    kgl_optimizer_kind optimizer;
    double lr;
    kgl_saturation_supervise supervise; /* KGL_SAT_SUP_OFF (0) when not supervised */
    kgl_saturation_remedy remedy;
    int heads, dim;     /* heads of dk each; dim = heads × dk */
    int layers;         /* layers of the stack (1: the layer alone) */
    double aux_floor;   /* kgl_supervision_floor of the supervised examples; NaN when off */
    char label[96];
    char short_label[96]; /* the label without scale and init-scale (the plots' panels say those) */
} kgl_saturation_config;

/* One run: one configuration, one seed, its diagnostics at every step. */
typedef struct kgl_saturation_trace {
    const kgl_saturation_config *config;
    int seed;
    double *rows;   /* steps x layers x KGL_SAT_N_METRICS: kgl_saturation_row */
    long fit_step;  /* first step after whose update every training triple ranks first; -1 if never */
    int steps_done; /* fewer than steps if the loss became non-finite (at step steps_done + 1) */
} kgl_saturation_trace;
/* The metrics of a run at `step` (1-based) in `layer` (0-based). */
static inline double *kgl_saturation_row(const kgl_saturation_trace *r, int step, int layer)
{
    return r->rows + ((size_t)(step - 1) * (size_t)r->config->layers + (size_t)layer) * KGL_SAT_N_METRICS;
}

typedef struct kgl_saturation {
    int steps, seeds;
    double frozen_multiple;         /* from the spec */
    bool stacked;                   /* some configuration has layers ≠ 1: the files carry layers and layer */
    kgl_saturation_config *configs; /* the grid, the axes nested in the spec's order, remedy innermost */
    int n_configs;
    kgl_saturation_trace *runs;     /* run k: configs[k / seeds], seed 1 + k % seeds */
    int n_runs;
    double seconds;                 /* wall time of the runs */
} kgl_saturation;

/* Expands the grid and trains every run. False with "what is wrong" in err
 * for a spec out of range or data without "advises" (nothing to free then);
 * a run whose loss became non-finite is not a failure (see steps_done). */
bool kgl_saturation_run(const kgl_saturation_spec *spec, kgl_saturation *result, char *err, size_t err_cap);
void kgl_saturation_free(kgl_saturation *s);

/* Mean of `metric` of `layer` (0-based) at `step` (1-based) over the seeds
 * of configuration `config` whose run reached that step and measured a
 * number; NaN if none. */
double kgl_saturation_seed_mean(const kgl_saturation *s, int config, int layer, int step, kgl_saturation_metric metric);

/* Quantiles of a sample: min, quartiles, median, max, as numpy's and
 * pandas' default (linear interpolation between the order statistics: the
 * p-quantile of sorted x[0..n) is x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋]),
 * h = p (n − 1)), and the mean, of the values that are not NaN (n of them;
 * all NaN when n = 0). */
typedef struct kgl_spread {
    double min, q1, median, q3, max, mean;
    int n;
} kgl_spread;
kgl_spread kgl_spread_of(const double *x, int n);

/* Whether a final supervision loss is still frozen: above multiple × floor
 * (NaN never is). With a floor of 0 (every supervised row has one target)
 * the multiple would call every seed frozen, so then the bound is log 2:
 * the target's weight below 1/2 on average. */
bool kgl_saturation_is_frozen(double final_aux, double floor, double multiple);
/* How many of final_aux[0..n) are frozen, of the *counted that are not NaN;
 * returns frozen / counted (NaN when none is counted). */
double kgl_saturation_frozen_fraction(const double *final_aux, int n, double floor, double multiple, int *frozen,
                                      int *counted);
/* Sign changes of the successive differences of x[0..n) (a zero difference
 * or a NaN is skipped, not a change): 0 for a curve that only falls, about
 * n − 2 for one that goes up and down every step. */
int kgl_sign_changes(const double *x, int n);

/* One run's end (all NaN or -1 when the run did not reach the last step). */
#define KGL_SAT_WINDOW 50 /* the last steps over which oscillation is measured */
typedef struct kgl_saturation_run_end {
    double final[KGL_SAT_N_METRICS]; /* the metrics at the last step */
    double aux_mean;                 /* the aux loss averaged over the run's steps */
    bool frozen;                     /* kgl_saturation_is_frozen of the final aux loss */
    int aux_sign_changes;            /* kgl_sign_changes of the aux loss over the last KGL_SAT_WINDOW steps */
    double aux_window_min, aux_window_max; /* its range over those steps */
    double window_median[KGL_SAT_N_METRICS]; /* each metric's median over those steps */
} kgl_saturation_run_end;
/* Of layer `layer`'s rows (the aux loss, and so frozen, is the run's in every layer). */
void kgl_saturation_run_summary(const kgl_saturation *s, int run, int layer, kgl_saturation_run_end *e);

/* The summary of one configuration over its seeds. */
typedef struct kgl_saturation_summary {
    double init[KGL_SAT_N_METRICS], final[KGL_SAT_N_METRICS]; /* means */
    kgl_spread spread[KGL_SAT_N_METRICS]; /* of the final values over the seeds that reached the last step */
    double aux_mean; /* the aux loss averaged over every step of the run (then over seeds) */
    double fit_step; /* mean over seeds, NaN unless every seed fit */
    int fit_seeds;   /* seeds that fit */
    double aux_floor;       /* the configuration's */
    int frozen_seeds, finished_seeds; /* frozen at the last step, of the seeds that reached it */
    double frozen_fraction; /* frozen / finished; NaN when not supervised */
} kgl_saturation_summary;
/* Of layer `layer`'s rows (0-based, below the configuration's layers). */
void kgl_saturation_summarise(const kgl_saturation *s, int config, int layer, kgl_saturation_summary *sm);

/* One row per run and step: config,dk,scale,init_scale,optimizer,lr,
 * supervise,remedy,seed,step and the metrics (empty for NaN). Written to a
 * temporary beside path, then renamed (kgl_outfile). False with the reason
 * in err. When s->stacked, every file of the study carries the column
 * `layers` after `remedy` and `layer` (0-based) after the row's other keys
 * (here after `step`), with a row per layer (long format); otherwise the
 * files are as a study without the layers axis wrote them. */
bool kgl_saturation_write_csv(const kgl_saturation *s, const char *path, char *err, size_t err_cap);
/* One row per run (configuration and seed): the configuration's columns,
 * heads, seed, aux_floor, frozen (0/1), aux_mean, aux_sign_changes,
 * aux_window_min, aux_window_max, fit_step, steps_done, then every metric at
 * the last step. */
bool kgl_saturation_write_seeds_csv(const kgl_saturation *s, const char *path, char *err, size_t err_cap);
/* One row per configuration: its columns, heads, seeds, finished_seeds,
 * aux_floor, frozen_seeds, frozen_fraction, fit_seeds, then for every metric
 * <metric>_{min,q1,median,q3,max,mean} of the final values over the seeds. */
bool kgl_saturation_write_summary_csv(const kgl_saturation *s, const char *path, char *err, size_t err_cap);
/* DIR/<metric>.svg for the plotted metrics (seed means against the step, a
 * panel per scale and init-scale, a series per other configuration and, for
 * a head diagnostic of a stack, per layer ≥ 1 too: "<label> layer l"),
 * DIR/saturation.svg with all of them, and for every supervised
 * configuration DIR/seeds_<k>.svg (k its index): the supervised rows'
 * diagnostics of every seed against the step, a curve per seed. */
bool kgl_saturation_write_plots(const kgl_saturation *s, const char *dir, char *err, size_t err_cap);
/* Creates DIR if needed, then DIR/saturation.csv, saturation_seeds.csv,
 * saturation_summary.csv and the plots. */
bool kgl_saturation_write(const kgl_saturation *s, const char *dir, char *err, size_t err_cap);
/* The study as one JSON object and a newline on f (`kgl saturation --json`,
 * src/studies/saturation_json.c): steps, seeds, frozen_multiple, seconds,
 * then "configs", one object per configuration: label, dk, scale ("sqrt",
 * "none" or the number), init_scale, optimizer, lr, supervise, remedy (and
 * layers in a grid with a stack; seed with one seed), "init" and "final"
 * (layer 0's means at the first and the last step), heads, aux_floor,
 * frozen_multiple, frozen_seeds, finished_seeds, frozen_fraction, "spread"
 * (every metric's quantiles over the seeds), "per_seed" (each run's end)
 * and, in a grid with a stack, "per_layer" (each layer's init, final and
 * spread). NaN is written null. */
void kgl_saturation_write_json(const kgl_saturation *s, FILE *f);
/* The study as the tables `kgl saturation` prints, on f
 * (src/studies/saturation_text.c): the summary of every configuration (and
 * layer, in a stack) at init and final; over the seeds at the last step, the
 * min, quartiles and max of max_prob, |dL/dS| and the loss; then, when some
 * configuration is supervised, its supervision loss against the floor with
 * the frozen fraction, the frozen seeds and the others apart over the last
 * KGL_SAT_WINDOW steps, and (up to 20 seeds) each seed's final supervision
 * loss, * marking the frozen. */
void kgl_saturation_tables_write(FILE *f, const kgl_saturation *s);

/* ------------------------------------------------------------ benchmark --
 * The public link-prediction benchmarks (`kgl benchmark`,
 * src/studies/benchmark.c): the published rows to compare with, a dataset's
 * configuration CONFIGS/<dataset>.args, a run's results (what `kgl train
 * --json` printed), their mean and standard deviation over seeds, and
 * results.json, and the command of each run. Running the runs is the
 * caller's (`kgl benchmark` starts one `kgl train` process per dataset and
 * seed, as children of kgl/engine.h). */
#define KGL_BENCHMARK_MAX_SEEDS 16
#define KGL_BENCHMARK_MAX_ARGS 192 /* argv slots; a configuration holds at most MAX_ARGS − 24 words (auto.args, every
                                     class with its guards: 105 words in its ninth version) */

/* The metrics a benchmark reports, in kgl_benchmark_metrics' order. */
#define KGL_BENCHMARK_METRICS 5
/* A published filtered result on the same splits (both directions). */
typedef struct kgl_benchmark_published {
    const char *dataset, *model, *source;
    double v[KGL_BENCHMARK_METRICS]; /* MRR, Hits@1, Hits@3, Hits@10, MR (NaN: not reported) */
} kgl_benchmark_published;
extern const kgl_benchmark_published kgl_benchmark_published_rows[];
extern const int kgl_benchmark_n_published;
/* "UMLS" for umls, "Kinship" for kinship, "Nations" for nations, any other name as it is. */
const char *kgl_benchmark_display_name(const char *dataset);

/* The indices of kgl_benchmark_run.m, named as in the JSON. */
extern const char *const kgl_benchmark_splits[2];     /* "valid", "test" */
extern const char *const kgl_benchmark_directions[3]; /* "tail", "head", "both" */
extern const char *const kgl_benchmark_metrics[KGL_BENCHMARK_METRICS]; /* "mrr", "hits1", "hits3", "hits10", "mr" */

/* One run's numbers. */
typedef struct kgl_benchmark_run {
    unsigned long long seed;
    double m[2][2][3][KGL_BENCHMARK_METRICS]; /* [split][optimistic ties][direction][metric]; NaN if missing */
    long n_test;                   /* test queries, both directions */
    double seconds;                /* the run's wall time, measured by whoever ran it */
    double train_seconds;          /* the training time the run reported */
    double peak_mb;                /* the run's peak resident memory (NaN if not measured) */
    long best_step, steps, params; /* -1 if missing or not a whole number; best_step is member 0's */
    long ensemble;                 /* models in the run (kgl train --ensemble; 1 when absent) */
    bool no_layer;                 /* the run's "context" was "none": the readout on the embeddings alone */
    long layers;                   /* the run's "layers" (kgl train --layers; 1 when absent) */
    long member_best_step[KGL_MAX_ENSEMBLE]; /* each member's best valid step (the JSON's members[]; -1 if missing) */
    int n_members;                 /* how many of them the JSON listed (1 for a single model: its best_step) */
} kgl_benchmark_run;

/* One dataset of a benchmark: its configuration and its runs. */
typedef struct kgl_benchmark_dataset {
    char name[64];
    char config_path[1024];                /* CONFIGS/<name>.args */
    char args_text[4096];                  /* the options on one line, for tables and JSON */
    char chosen_text[4096];                /* a recipe's options as kgl train --check computed them for
                                              this dataset (kgl_benchmark_check_options); "" if unknown */
    char *argv[KGL_BENCHMARK_MAX_ARGS];    /* the options, word by word (pointing into args_file) */
    int argc;
    kgl_text args_file;
    int n_runs;
    kgl_benchmark_run runs[KGL_BENCHMARK_MAX_SEEDS];
    /* --baseline: the same options with --context none appended, at the same
       budget, one run per seed as well (n_runs of them); false: none. */
    bool baseline;
    kgl_benchmark_run baseline_runs[KGL_BENCHMARK_MAX_SEEDS];
} kgl_benchmark_dataset;

typedef enum kgl_benchmark_config_status {
    KGL_BENCHMARK_CONFIG_OK,
    KGL_BENCHMARK_CONFIG_UNREADABLE, /* the file could not be read: "path: why" in err */
    KGL_BENCHMARK_CONFIG_INVALID,    /* what it says is refused: "path: what is wrong" in err */
    KGL_BENCHMARK_DATA_UNREADABLE    /* a split of the dataset cannot be read: "cannot read path: why" */
} kgl_benchmark_config_status;
/* Empties *d, names it and reads CONFIGS/<name>.args: whitespace-separated
 * words; '#' starts a comment that runs to the end of its line. Refused: more
 * than MAX_ARGS − 24 words, an option the benchmark sets itself (--seed,
 * --train, --valid, --test, --save, --log, --resume; spaced or as
 * --name=value), and no --eval-every (the tables
 * report the model selected on the valid split). kgl_benchmark_dataset_free
 * afterwards, whatever the status. */
kgl_benchmark_config_status kgl_benchmark_load_config(kgl_benchmark_dataset *d, const char *configs_dir,
                                                      const char *name, char *err, size_t err_cap);
void kgl_benchmark_dataset_free(kgl_benchmark_dataset *d);
/* The same checks on one recipe file used for every dataset: the runs get
 * `--recipe FILE` (kgl train computes its formulas from each dataset's
 * counts); config_path is FILE and args_text its words as written. */
kgl_benchmark_config_status kgl_benchmark_load_recipe(kgl_benchmark_dataset *d, const char *recipe_path,
                                                      const char *name, char *err, size_t err_cap);

/* Everything a dataset needs before its first run: its options (the
 * recipe at recipe_path for every dataset, or, recipe_path NULL,
 * CONFIGS/<name>.args) loaded and checked as above, n_runs = n_seeds, with
 * `baseline` options that do not already say --context none (else
 * KGL_BENCHMARK_CONFIG_INVALID, "config_path: --baseline: ..."), and
 * DATA/<name>/{train,valid,test}.txt readable (else
 * KGL_BENCHMARK_DATA_UNREADABLE). kgl_benchmark_dataset_free afterwards,
 * whatever the status. */
kgl_benchmark_config_status kgl_benchmark_dataset_open(kgl_benchmark_dataset *d, const char *name,
                                                       const char *recipe_path, const char *configs_dir,
                                                       const char *data, int n_seeds, bool baseline, char *err,
                                                       size_t err_cap);

/* OUT/<dataset>-seed<S>.<ext>, the files of one run (json: its output, err:
 * its messages, csv: its training log, safetensors: its best checkpoint);
 * OUT/<dataset>-seed<S>-none.<ext> for its baseline's run (--context none).
 * Returns what snprintf returns. */
int kgl_benchmark_run_path(char *buf, size_t cap, const char *out, const char *dataset, unsigned long long seed,
                           bool baseline, const char *ext);
/* The words of one run's command, into cmd's buffers: `program train` on
 * DATA/<name>/{train,valid,test}.txt with the dataset's options (and, for
 * its baseline, --context none after them, which kgl train lets win),
 * --seed S, --save and --log OUT/<name>-seed<S>[-none].{safetensors,csv},
 * --threads T, --json (its result on stdout) and --progress (its lines on
 * stderr). With `check`, --check in place of --save and --log: kgl train
 * stops where the run would start. cmd->argv, NULL-terminated. */
typedef struct kgl_benchmark_command {
    char paths[5][1200], seed[32], threads[32];
    char *argv[KGL_BENCHMARK_MAX_ARGS];
} kgl_benchmark_command;
char **kgl_benchmark_run_argv(kgl_benchmark_command *cmd, const char *program, const kgl_benchmark_dataset *d,
                              bool baseline, const char *data, const char *out, unsigned long long seed, int threads,
                              bool check);
/* Whether the dataset's options end up at --context none (the last
 * --context wins in kgl train, spaced or as --context=none), read from
 * args_text, the file's words: with --baseline, its runs would be their own
 * baseline. */
bool kgl_benchmark_says_no_context(const kgl_benchmark_dataset *d);
/* The steps of the benchmark's runs, done and to do, from the runner's
 * counts (kgl_jobs_progress; run k is spec k / n_seeds's seed k % n_seeds,
 * a spec's runs neighbours): a run that has not said its steps counts as
 * another run of its spec that has, else as the mean run that has (0 when
 * none has), and the total is then `guessed`. `known`: the runs that said. */
typedef struct kgl_benchmark_steps {
    double done, total;
    bool guessed;
    int known;
} kgl_benchmark_steps;
kgl_benchmark_steps kgl_benchmark_steps_of(const kgl_jobs_progress *at, int n_seeds);
/* Reads a run's `kgl train --json` output into r (all but seed and seconds).
 * False with "what is wrong" in err. */
bool kgl_benchmark_read_run(const char *path, kgl_benchmark_run *r, char *err, size_t err_cap);
/* Mean and sample standard deviation (0 for one run) of m[split][optimistic][direction][metric]. */
void kgl_benchmark_mean_std(const kgl_benchmark_run *runs, int n, int split, int optimistic, int direction,
                            int metric, double *mean, double *sd);
/* What n runs cost: the mean and the largest wall time (seconds), the
 * largest peak resident memory (peak_mb; NaN ones left out, 0 when none). */
typedef struct kgl_benchmark_cost {
    double mean_seconds, max_seconds, peak_mb;
} kgl_benchmark_cost;
kgl_benchmark_cost kgl_benchmark_cost_of(const kgl_benchmark_run *runs, int n);
/* The first and the last of a run's members' best valid steps (its own best
 * step for a single model). */
void kgl_benchmark_member_steps(const kgl_benchmark_run *r, long *first, long *last);
/* The layer's mean less its baseline's (d->baseline set): test, both
 * directions, realistic ties, `metric` an index of kgl_benchmark_metrics. */
double kgl_benchmark_layer_minus_baseline(const kgl_benchmark_dataset *d, int metric);
/* One dataset's markdown table as kgl benchmark prints it, written to f
 * (src/studies/benchmark_table.c): "### NAME: filtered test ranking, both
 * directions (N queries)", the header "| model | MRR | Hits@1 | Hits@3 |
 * Hits@10 | MR |", kgl's rows ("**kgl**, one model, realistic ties (mean ±
 * std, S seeds) | 0.402 ± 0.003 | ..."; an ensemble's says so; with
 * d->baseline each followed by its baseline's), the published rows, then
 * "kgl: one layer, P parameters; options ...", the valid MRR and the times
 * (`jobs` runs at a time, `threads` threads a run), "Per seed: ..." and,
 * with d->baseline, the baseline and "Layer − baseline ..." lines. */
void kgl_benchmark_table_write(FILE *f, const kgl_benchmark_dataset *d, int jobs, int threads);

/* ---------------------------------------------------- a benchmark's runs --
 * src/studies/benchmark_runs.c: every run a `kgl train` process (`program`,
 * the kgl executable) started, followed and waited for by one runner
 * (kgl_jobs_run), `jobs` at a time; a run must fail alone, so none runs in
 * this process. SIGINT and SIGTERM are the caller's to pass on
 * (kgl_children_signal as its handler): the runs going then stop after
 * their current step, and nothing more starts. */
/* One list of runs: a dataset's options, or (baseline) the same options
 * with --context none appended, the same budget without the layer. A
 * benchmark's runs are its specs' seeds, spec by spec: run k is
 * specs[k / n_seeds] with seeds[k % n_seeds], a spec's runs neighbours. */
typedef struct kgl_benchmark_spec {
    kgl_benchmark_dataset *dataset;
    bool baseline;
} kgl_benchmark_spec;
/* Where a spec's runs keep their results: dataset->runs or ->baseline_runs. */
kgl_benchmark_run *kgl_benchmark_spec_runs(const kgl_benchmark_spec *spec);
/* "umls seed 3", or "umls seed 3 (--context none)" for a baseline's run; returns buf. */
const char *kgl_benchmark_run_label(char *buf, size_t cap, const kgl_benchmark_spec *spec, unsigned long long seed);

/* What the runner and the check return; the same numbers as kgl's exit
 * statuses, so that a command may exit with them. A run's kgl train exit
 * status 2 (bad input, a bad option) is REFUSED, 130 a stop. */
enum {
    KGL_BENCHMARK_DONE = 0,
    KGL_BENCHMARK_RUN_FAILED = 1, /* a run failed, or its files could not be kept or read */
    KGL_BENCHMARK_REFUSED = 2,    /* kgl train refused its options or input (or could not be started) */
    KGL_BENCHMARK_INTERRUPTED = 130
};

typedef struct kgl_benchmark_runner {
    const char *program;           /* the kgl executable the runs are (its `train` command) */
    const char *data, *out;        /* DATA/<dataset>/{train,valid,test}.txt; OUT, an existing folder */
    const kgl_benchmark_spec *specs;
    int n_specs;
    const unsigned long long *seeds;
    int n_seeds;
    int jobs;                      /* runs at the same time */
    int threads;                   /* each run's --threads */
    /* A message for the user, one or more lines without the last newline:
       a run started (its command), ended (its test MRR) or failed (the
       start of its .err), a file that could not be kept. Called from the
       runner's workers, one at a time per worker. */
    void (*say)(void *ctx, const char *text);
    /* The runner's counts (kgl_jobs_spec.progress; each run's steps as its
       kgl train sends them, kgl_benchmark_steps_of sums them); may be NULL. */
    void (*progress)(const kgl_jobs_progress *at, void *ctx);
    void *ctx;
} kgl_benchmark_runner;

/* Every spec's options as its runs get them, through `program train
 * --check` with seeds[0] (kgl train's own parser: no second list of its
 * options here), before any run starts: a mistake in a recipe is found
 * then, not when a dataset's first run fails after the others trained.
 * kgl train's messages (its data warnings too) are said only when it
 * refuses, after a line naming the dataset and its options' file. Returns
 * DONE, REFUSED, RUN_FAILED (it refused otherwise than with 2) or
 * INTERRUPTED, having said why. */
int kgl_benchmark_check_options(const kgl_benchmark_runner *b);

/* How the runs went, for the caller's last message. */
typedef struct kgl_benchmark_outcome {
    int total, spawned, results; /* runs in all, started, with a result read */
    int stop_signal;             /* SIGINT or SIGTERM passed on (0: none) */
    char stopped[4096];          /* the labels of the runs a signal stopped, "a, b" */
} kgl_benchmark_outcome;
/* Runs every run: OUT/<dataset>-seed<S>[-none].json and .err through
 * kgl_outfile temporaries (its stdout and stderr), renamed into place when
 * it ends, the .err whatever happened, the .json unless a signal stopped
 * it (an older .json at that name is then removed: a stopped run's
 * results are not a finished run's); then its result read into the
 * spec's runs (kgl_benchmark_read_run; seed, seconds and peak_mb set
 * here). Returns DONE, the status of the first run to fail in time
 * (RUN_FAILED, REFUSED; no run starts after it) or INTERRUPTED. */
int kgl_benchmark_run_all(const kgl_benchmark_runner *b, kgl_benchmark_outcome *outcome);

/* {"<dataset>":{"valid":…,"test":…,"seconds","params","config","config_file",
 * "seeds","std":{…},"runs":[…],"published":{…}},…}: the means over each
 * dataset's runs (realistic ties, and "optimistic":{…}), their standard
 * deviations, every run, and the published rows. With d->baseline, also
 * "baseline":{"valid","test","seconds","params","ensemble","config","seeds",
 * "std","runs","layer_minus_baseline":{"mrr","hits1"},
 * "layer_at_least_baseline":{"mrr","hits1"}}: its runs' the same way, and
 * the difference of the test means (both directions, realistic ties) with
 * whether the layer's is ≥ the baseline's. Written to a temporary
 * beside path, then renamed (kgl_outfile). False with the reason in err. */
bool kgl_benchmark_write_results(const char *path, const kgl_benchmark_dataset *d, int n_datasets, char *err,
                                 size_t err_cap);

#endif
