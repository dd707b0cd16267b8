/* loss.c — the loss, apart from the layer: the head states C that
 * kgl_layer_forward gives are read out against every entity, and the terms
 * of the README's model section and of the regularisers added.
 *
 *   score[b, j] = Σ_c C[i_b, c] R[r_b, c] E[j, c]     trilinear readout
 *   loss = mean_b CE(score[b], t_b) + λ · aux
 *   aux  = mean over supervised examples of  lse_j S_h[i, j] − S_h[i, t]
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

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
    bool supervised = sup && sup->head_of;
    if (supervised && m->cfg.context == KGL_CONTEXT_GRAPH)
        kgl_die("head supervision: defined for the full context only");
    /* without a drawn neighbourhood, the fixed rule leaves out each example's own triple (all its answers with 1-N) */
    kgl_questions q = {b->n, b->head, b->rel, b->tail, answers != NULL || m->cfg.hide_asked, b->context, supervised};
    kgl_layer_forward(m, t, &q, reg, out);
    kgl_readout_loss(m, t, b, answer_off, answers, sup, reg, out);
}

/* With 1-N targets a query (i, r) has a set of answers, and relation
   prediction asks about one triple (i, r, t) per query: t drawn uniformly
   from its answers, one draw a query in batch order from the regularisers'
   stream (after the dropout masks), or its first answer without a stream
   (a loss evaluated outside training). One row per query keeps the term's
   size fixed (B rows, not the batch's answers, which a few queries with
   thousands of answers would dominate); over the steps every answer is
   asked about, each query weighed as one. */
static const int *drawn_answers(kgl_tape *t, int n, const int *answer_off, const int *answers, kgl_rng *rng)
{
    int *drawn = kgl_arena_alloc(&t->arena, (size_t)(n ? n : 1) * sizeof(int));
    for (int k = 0; k < n; k++) {
        int count = answer_off[k + 1] - answer_off[k];
        if (count <= 0) kgl_die("relation prediction: a 1-N query without answers (batch row %d)", k);
        drawn[k] = answers[answer_off[k] + (rng && count > 1 ? (int)kgl_rng_below(rng, (uint32_t)count) : 0)];
    }
    return drawn;
}

/* The readout: score[k, j] = Σ_c C[i_k, c] R[r_k, c] E[j, c] (or the complex
   product), then the cross entropy and the terms of the regularisers. */
void kgl_readout_loss(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const int *answer_off, const int *answers,
                      const kgl_supervision *sup, const kgl_regularisers *reg, kgl_forward *out)
{
    const int *heads = out->state_row; /* the head state of example k is row heads[k] of out->context */
    if (!heads) kgl_die("kgl_readout_loss: the states of no questions (kgl_layer_forward asked a batch none)");
    kgl_tensor *states = out->context;
    const int *state_rows = heads; /* before the hidden dropout */
    if (reg && reg->rng && reg->hidden_dropout > 0) {
        /* a mask per example: gather the head states (the graph context's are
           one per example already), drop, read out row b */
        if (m->cfg.context != KGL_CONTEXT_GRAPH) {
            states = kgl_gather_rows(t, out->context, heads, b->n);
            int *identity = kgl_arena_alloc(&t->arena, (size_t)(b->n ? b->n : 1) * sizeof(int));
            for (int k = 0; k < b->n; k++) identity[k] = k;
            heads = identity;
        }
        states = kgl_dropout(t, states, reg->hidden_dropout, reg->rng);
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
        const int *tails = answers ? drawn_answers(t, b->n, answer_off, answers, reg->rng) : b->tail;
        kgl_tensor *rel_scores =
            m->cfg.readout == KGL_READOUT_COMPLEX
                ? kgl_trilinear_complex(t, kgl_conjugate(t, states), candidates, m->relation_emb, heads, tails, b->n)
                : kgl_trilinear(t, states, candidates, m->relation_emb, heads, tails, b->n);
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


bool kgl_supervision_parse(const char *spec, const kgl_dataset *ds, int heads, int *head_of, char *err, size_t cap)
{
    for (int r = 0; r < ds->n_relations; r++) head_of[r] = -1;
    char *copy = kgl_strdup(spec), *at;
    bool ok = true;
    int assigned = 0;
    for (char *tok = strtok_r(copy, ",", &at); tok && ok; tok = strtok_r(NULL, ",", &at)) {
        char *eq = strrchr(tok, '=');
        if (!eq) {
            snprintf(err, cap, "--supervise-heads: '%s' is not RELATION=HEAD", tok);
            ok = false;
            break;
        }
        *eq = 0;
        int r = kgl_dataset_relation_id(ds, tok);
        char *end;
        long h = strtol(eq + 1, &end, 10);
        if (r < 0) {
            kgl_dataset_unknown_relation(ds, "--supervise-heads", tok, err, cap);
            ok = false;
        } else if (end == eq + 1 || *end || h < 0 || h >= heads) {
            snprintf(err, cap, "--supervise-heads: head '%s' for %s must be a number from 0 to %d", eq + 1, tok,
                     heads - 1);
            ok = false;
        } else if (head_of[r] >= 0) {
            snprintf(err, cap, "--supervise-heads: relation '%s' is assigned twice", tok);
            ok = false;
        } else {
            head_of[r] = (int)h;
            assigned++;
        }
    }
    free(copy);
    if (ok && !assigned) {
        snprintf(err, cap, "--supervise-heads: the list is empty");
        ok = false;
    }
    return ok;
}
