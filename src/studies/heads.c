/* heads.c — the heads study: what each attention head of a trained model
 * looks at, measured against its training triples (`kgl heads`, and the
 * specialisation of kgl train's report). Results in plain structs; the
 * program prints them and draws them.
 *
 * Two files, one module: what a head looks at in one forward pass
 * (specialisation, the weight by relation in a neighbourhood, one question's
 * weights) is src/model/heads.c, below the run, because the training log
 * measures it at its logged steps from inside the run (run.c) and a layer
 * never calls the one above it; the study over a whole model is here, on
 * top of it, since it asks the model as a study does: the argmax precision,
 * each entity's top 3, head ablation (a head switched off, the metric
 * again), and one question's attention beside the readout's answers.
 *
 *   full context   spec[h][r] of every layer, precision, baseline, top 3,
 *                  ablation on every training triple (kgl_heads_full_measure)
 *   graph context  each head's weight by relation over the evaluation
 *                  neighbourhoods, against uniform weights, its weight on
 *                  the entity itself, ablation on the first training
 *                  triples (kgl_heads_graph_measure)
 *   one question   where each head (of each layer) looks from it, and the
 *                  readout's answers (kgl_heads_question_measure)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/studies.h"
#include "engine/internal.h"

/* ---- orders and ablation -------------------------------------------------------- */

static _Thread_local const double *order_key; /* qsort has no context argument */

static int by_key_desc(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    if (order_key[i] != order_key[j]) return order_key[i] > order_key[j] ? -1 : 1;
    return i - j; /* ties: by id, so the order is deterministic */
}

void kgl_heads_order(const double *key, int n, int *idx)
{
    for (int j = 0; j < n; j++) idx[j] = j;
    order_key = key;
    qsort(idx, (size_t)n, sizeof *idx, by_key_desc);
}

/* The train MRR (both directions) of m on tr[0..n). */
static double train_mrr(const kgl_model *m, const kgl_dataset *ds, const kgl_triple *tr, int n, kgl_eval *ev)
{
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_model_context(m, &t, &f);
    kgl_evaluate(m, f.context, ds, tr, n, ev);
    kgl_tape_free(&t);
    return ev->both.mrr;
}

void kgl_heads_ablation(kgl_model *m, const kgl_dataset *ds, const kgl_triple *tr, int n, double *mrr,
                        double *ablated_mrr)
{
    kgl_eval ev;
    kgl_eval_init(&ev, ds->n_entities, ds->n_relations);
    *mrr = train_mrr(m, ds, tr, n, &ev);
    for (int h = 0; h < m->cfg.heads; h++) {
        m->ablate[h] = true;
        ablated_mrr[h] = train_mrr(m, ds, tr, n, &ev);
        m->ablate[h] = false;
    }
    kgl_eval_free(&ev);
}

/* ---- the full context ------------------------------------------------------------ */

bool kgl_heads_is_tail(const kgl_tails *tl, int r, int i, int j)
{
    size_t key = (size_t)r * tl->n_entities + i;
    for (int k = tl->offsets[key]; k < tl->offsets[key + 1]; k++)
        if (tl->tails[k] == j) return true;
    return false;
}

static int argmax_row(const kgl_real *a, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (a[j] > a[best]) best = j;
    return best;
}

/* The three most-attended entities of row a (ties: lower id first; -1 past n). */
static void top3(const kgl_real *a, int n, int *idx)
{
    for (int k = 0; k < 3; k++) idx[k] = -1;
    for (int j = 0; j < n; j++)
        for (int k = 0; k < 3 && k < n; k++)
            if (idx[k] < 0 || a[j] > a[idx[k]]) {
                for (int q = 2; q > k; q--) idx[q] = idx[q - 1];
                idx[k] = j;
                break;
            }
}

/* Per relation: the entities with r-tails, uniform attention's spec, and
   how often each head's most attended entity is a true r-tail. */
static void precision_and_baseline(kgl_heads_full *r)
{
    const kgl_tails *tl = &r->tails;
    int n = r->n, m = r->m;
    kgl_tensor *const *attn = r->fwd.attn;
    for (int rel = 0; rel < m; rel++) {
        int count = 0;
        double frac = 0;
        for (int i = 0; i < n; i++) {
            size_t key = (size_t)rel * n + i;
            int k = tl->offsets[key + 1] - tl->offsets[key];
            if (k) count++, frac += (double)k / n;
        }
        r->with_tails[rel] = count;
        r->baseline[rel] = count ? frac / count : NAN;
        for (int h = 0; h < r->heads; h++) {
            int hits = 0;
            for (int i = 0; i < n; i++) {
                size_t key = (size_t)rel * n + i;
                if (tl->offsets[key] == tl->offsets[key + 1]) continue;
                hits += kgl_heads_is_tail(tl, rel, i, argmax_row(attn[h]->data + (size_t)i * n, n));
            }
            r->precision[h * m + rel] = count ? (double)hits / count : NAN;
        }
    }
}

void kgl_heads_full_measure(kgl_heads_full *r, kgl_model *m, const kgl_dataset *ds, const kgl_triple *train,
                            int n_train)
{
    if (m->cfg.context != KGL_CONTEXT_FULL) kgl_die("kgl_heads_full_measure: defined for --context full");
    memset(r, 0, sizeof *r);
    int H = r->heads = m->cfg.heads, L = r->layers = m->cfg.layers, n = r->n = ds->n_entities,
        nr = r->m = ds->n_relations;
    r->spec = kgl_xmalloc((size_t)L * H * nr * sizeof(double));
    r->precision = kgl_xmalloc((size_t)H * nr * sizeof(double));
    r->baseline = kgl_xmalloc((size_t)nr * sizeof(double));
    r->with_tails = kgl_xmalloc((size_t)nr * sizeof(int));
    r->top3 = kgl_xmalloc((size_t)H * n * 3 * sizeof(int));
    r->top3_weight = kgl_xmalloc((size_t)H * n * 3 * sizeof(double));
    kgl_tails_build(&r->tails, n, nr, train, n_train);
    kgl_tape_init(&r->tape);
    r->tape.recording = false;
    kgl_model_context(m, &r->tape, &r->fwd);
    kgl_specialisation(&r->tails, H, r->fwd.attn, r->spec);
    for (int l = 1; l < L; l++) kgl_specialisation(&r->tails, H, r->fwd.layer_attn[l], r->spec + (size_t)l * H * nr);
    precision_and_baseline(r);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < n; i++) {
            const kgl_real *row = r->fwd.attn[h]->data + (size_t)i * n;
            int *idx = r->top3 + ((size_t)h * n + i) * 3;
            top3(row, n, idx);
            for (int k = 0; k < 3; k++) r->top3_weight[((size_t)h * n + i) * 3 + k] = idx[k] >= 0 ? row[idx[k]] : NAN;
        }
    kgl_heads_ablation(m, ds, train, n_train, &r->mrr, r->ablated_mrr);
}

void kgl_heads_full_free(kgl_heads_full *r)
{
    kgl_tape_free(&r->tape);
    kgl_tails_free(&r->tails);
    free(r->spec);
    free(r->precision);
    free(r->baseline);
    free(r->with_tails);
    free(r->top3);
    free(r->top3_weight);
    memset(r, 0, sizeof *r);
}

/* ---- the neighbourhood context ---------------------------------------------------- */

void kgl_heads_graph_measure(kgl_heads_graph *r, kgl_model *m, const kgl_dataset *ds, const kgl_triple *train,
                             int n_train)
{
    if (m->cfg.context != KGL_CONTEXT_GRAPH) kgl_die("kgl_heads_graph_measure: defined for --context graph");
    memset(r, 0, sizeof *r);
    int H = r->heads = m->cfg.heads, nr = r->m = ds->n_relations;
    r->mass = kgl_xmalloc((size_t)H * nr * sizeof(double));
    r->uniform = kgl_xmalloc((size_t)nr * sizeof(double));
    kgl_model_relation_attention(m, NULL, train,
                                 n_train < KGL_RELATION_ATTENTION_TRIPLES ? n_train : KGL_RELATION_ATTENTION_TRIPLES,
                                 r->mass, r->self, r->uniform);
    r->ablation_triples = n_train < KGL_HEADS_ABLATION_TRIPLES ? n_train : KGL_HEADS_ABLATION_TRIPLES;
    kgl_heads_ablation(m, ds, train, r->ablation_triples, &r->mrr, r->ablated_mrr); /* the first of the file */
}

void kgl_heads_graph_free(kgl_heads_graph *r)
{
    free(r->mass);
    free(r->uniform);
    memset(r, 0, sizeof *r);
}

/* ---- a trainer's heads, for kgl train's report ------------------------------------- */

void kgl_heads_spec(const kgl_trainer *tr, const kgl_forward *f, double *spec)
{
    switch (tr->model.cfg.context) {
    case KGL_CONTEXT_FULL: kgl_specialisation(&tr->tails, tr->model.cfg.heads, f->attn, spec); break;
    case KGL_CONTEXT_GRAPH:
        kgl_model_relation_attention(&tr->model, tr->eval_tape.pool, tr->train,
                                     tr->n_train < KGL_RELATION_ATTENTION_TRIPLES ? tr->n_train
                                                                                  : KGL_RELATION_ATTENTION_TRIPLES,
                                     spec, NULL, NULL);
        break;
    case KGL_CONTEXT_NONE:
        for (int k = 0; k < tr->model.cfg.heads * tr->model.cfg.n_relations; k++) spec[k] = NAN;
        break;
    }
}

/* ---- one question ---------------------------------------------------------------- */

/* The full context: each head's row A_h[entity, :], their mean, and the
   readout's answers, every entity ranked (kgl_predict: the scores kgl eval
   ranks with, the probabilities of the unfiltered softmax). */
static void full_question(kgl_heads_question *q, const kgl_model *m)
{
    int n = q->n, H = q->heads, d = m->cfg.dim;
    q->attn = kgl_xmalloc((size_t)H * n * sizeof(kgl_real));
    q->mean = kgl_xcalloc((size_t)n, sizeof(double));
    q->scores = kgl_xmalloc((size_t)n * sizeof(double));
    q->probs = kgl_xmalloc((size_t)n * sizeof(double));
    q->by_attn = kgl_xmalloc((size_t)n * sizeof(int));
    q->by_score = kgl_xmalloc((size_t)n * sizeof(int));
    kgl_attention_rows(m, q->entity, q->attn);
    for (int h = 0; h < H; h++)
        for (int j = 0; j < n; j++) q->mean[j] += q->attn[(size_t)h * n + j] / H;
    kgl_real *states = kgl_xmalloc((size_t)n * d * sizeof(kgl_real));
    kgl_context_states(m, states);
    kgl_answer *ans = kgl_xmalloc((size_t)n * sizeof *ans);
    int got = kgl_predict(m, states, NULL, q->entity, q->row, n, false, ans);
    if (got != n) kgl_die("kgl_predict answered %d of %d entities", got, n); /* unfiltered: every entity */
    for (int k = 0; k < n; k++) {
        q->by_score[k] = ans[k].entity;
        q->scores[ans[k].entity] = ans[k].score;
        q->probs[ans[k].entity] = ans[k].prob;
    }
    free(ans);
    free(states);
    kgl_heads_order(q->mean, n, q->by_attn);
}

/* A graph question's token_mean and token_order, layer by layer. */
static void token_means(kgl_heads_question *q)
{
    const kgl_segment_view *sv = &q->segment;
    int T = sv->n_tokens, H = sv->heads;
    q->token_mean = kgl_xmalloc((size_t)sv->layers * T * sizeof(double));
    q->token_order = kgl_xmalloc((size_t)sv->layers * T * sizeof(int));
    for (int l = 0; l < sv->layers; l++) {
        const double *w = sv->weight + (size_t)l * T * H;
        double *mean = q->token_mean + (size_t)l * T;
        for (int t = 0; t < T; t++) {
            mean[t] = 0;
            for (int h = 0; h < H; h++) mean[t] += w[(size_t)t * H + h] / H;
        }
        kgl_heads_order(mean, T, q->token_order + (size_t)l * T);
    }
}

/* "unknown entity 'x'; did you mean 'y'?" into err. */
static bool unknown_name(const char *what, const char *name, const char *const *cands, int n_cands, char *err,
                         size_t cap)
{
    char near[512];
    int k = kgl_near_matches(name, cands, n_cands, 5, near, sizeof near);
    snprintf(err, cap, "unknown %s '%s'%s%s%s", what, name, k ? "; did you mean " : "", k ? near : "", k ? "?" : "");
    return false;
}

bool kgl_heads_question_resolve(const kgl_dataset *ds, const kgl_config *cfg, const char *head, const char *relation,
                                int *entity, int *row, char *err, size_t cap)
{
    *entity = kgl_dataset_entity_id(ds, head);
    if (*entity < 0) return unknown_name("entity", head, (const char *const *)ds->entity_names, ds->n_entities, err, cap);
    *row = kgl_relation_row_id(ds, cfg, relation);
    if (*row >= 0) return true;
    if (kgl_inverse_name(relation) && !cfg->reciprocal) {
        snprintf(err, cap, "'%s' is an inverse relation, but this checkpoint was trained with --no-reciprocal (it has "
                 "no inverse relations)", relation);
        return false;
    }
    int rows = kgl_config_relation_rows(cfg); /* the near names among the rows: "advises^-1" too */
    char(*names)[600] = kgl_xmalloc((size_t)rows * sizeof *names);
    const char **cands = kgl_xmalloc((size_t)rows * sizeof *cands);
    for (int r = 0; r < rows; r++) {
        kgl_relation_row_name(ds, r, names[r], sizeof names[r]);
        cands[r] = names[r];
    }
    unknown_name("relation", relation, cands, rows, err, cap);
    free(names);
    free(cands);
    return false;
}

void kgl_heads_question_measure(kgl_heads_question *q, const kgl_model *m, const kgl_triple *train, int n_train,
                                int n_relations, int entity, int row, int top)
{
    memset(q, 0, sizeof *q);
    int n = q->n = m->cfg.n_entities;
    q->entity = entity, q->row = row, q->heads = m->cfg.heads;
    q->is_true = kgl_xcalloc((size_t)n, sizeof(bool));
    q->truth = kgl_xmalloc((size_t)n * sizeof(int));
    q->n_true = kgl_true_answers(train, n_train, n_relations, entity, row, q->truth, n);
    for (int k = 0; k < q->n_true; k++) q->is_true[q->truth[k]] = true;
    if (m->cfg.context == KGL_CONTEXT_FULL) {
        full_question(q, m);
    } else if (m->cfg.context == KGL_CONTEXT_GRAPH) { /* the question's neighbourhood, as evaluation builds it */
        kgl_model_question_segment(m, entity, row, &q->segment);
        token_means(q);
        q->n_answers = top < n ? top : n;
        q->answers = kgl_xmalloc((size_t)q->n_answers * sizeof *q->answers);
        q->n_answers = kgl_predict(m, NULL, NULL, entity, row, q->n_answers, false, q->answers);
    } else {
        kgl_die("kgl_heads_question_measure: a model without attention (--context none)");
    }
}

int kgl_heads_question_rows(const kgl_heads_question *q, int top, int *rows, double *rest_max)
{
    int k = 0;
    *rest_max = 0;
    for (int r = 0; r < q->n; r++) {
        int j = q->by_attn[r];
        if (r < top || q->is_true[j]) rows[k++] = j;
        else *rest_max = fmax(*rest_max, q->mean[j]);
    }
    return k;
}

void kgl_heads_question_free(kgl_heads_question *q)
{
    free(q->is_true);
    free(q->truth);
    free(q->attn);
    free(q->mean);
    free(q->scores);
    free(q->probs);
    free(q->by_attn);
    free(q->by_score);
    if (q->segment.weight) kgl_segment_view_free(&q->segment);
    free(q->answers);
    free(q->token_mean);
    free(q->token_order);
    memset(q, 0, sizeof *q);
}
