/* predict.c — a trained layer's answers to one question: (entity, r, ?) or
 * (?, r, entity), scored exactly as the filtered evaluation scores it (the
 * same vectors, the same matrix product, so the same bits), with the
 * softmax probability of every answer and a mark on the answers that are
 * already known triples. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"
#include "engine/kernel.h"

static void check_query(const kgl_model *m, int entity, int relation_row, const char *fn)
{
    int n = m->cfg.n_entities, rows = 2 * m->cfg.n_relations;
    if (entity < 0 || entity >= n) kgl_die("%s: entity %d out of range (%d entities)", fn, entity, n);
    if (relation_row < 0 || relation_row >= rows)
        kgl_die("%s: relation row %d out of range (%d relations and their inverses)", fn, relation_row, rows);
}

/* The query's scores given the states C; the product is the one
   kgl_evaluate computes (src/model/train.c, rank_queries): v = left ⊙ mid,
   then v against every candidate row by kgl_gemm_nt, whose every element is
   one sum in k order whatever the shape, so a single row gives the bits of
   a chunk. */
static void scores_from_states(const kgl_model *m, const double *C, int entity, int relation_row, double *scores)
{
    int n = m->cfg.n_entities, d = m->cfg.dim, n_rel = m->cfg.n_relations;
    const double *R = m->relation_emb->data, *E = m->entity_emb->data;
    const double *left, *mid, *cand;
    if (relation_row < n_rel || m->cfg.reciprocal) { /* (entity, row, ?): C[i] ⊙ R[row] against every E[j] */
        left = C + (size_t)entity * d;
        mid = R + (size_t)relation_row * d;
        cand = E;
    } else { /* no inverse rows: (?, r, t) scores C[j]·R[r]·E[t], R[r] ⊙ E[t] against every C[j] */
        left = R + (size_t)(relation_row - n_rel) * d;
        mid = E + (size_t)entity * d;
        cand = C;
    }
    double *v = kgl_xmalloc((size_t)d * sizeof(double));
    for (int c = 0; c < d; c++) v[c] = left[c] * mid[c];
    kgl_pool *pool = kgl_pool_create(1);
    kgl_gemm_nt(pool, 1, n, d, v, d, cand, d, scores, n, KGL_SET);
    kgl_pool_free(pool);
    free(v);
}

/* C of the current parameters, or the caller's. */
static const double *states_or_own(const kgl_model *m, const double *states, double **own)
{
    *own = NULL;
    if (states) return states;
    *own = kgl_xmalloc((size_t)m->cfg.n_entities * m->cfg.dim * sizeof(double));
    kgl_context_states(m, *own);
    return *own;
}

void kgl_predict_scores(const kgl_model *m, const double *states, int entity, int relation_row, double *scores)
{
    check_query(m, entity, relation_row, "kgl_predict_scores");
    double *own;
    const double *C = states_or_own(m, states, &own);
    scores_from_states(m, C, entity, relation_row, scores);
    free(own);
}

typedef struct scored { double score; int entity; } scored;

/* Best first; equal scores by entity id, so the order is reproducible. */
static int better_first(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->entity > y->entity) - (x->entity < y->entity);
}

/* Whether `j` is in the sorted list known[0..count). */
static bool in_sorted(const int *known, int count, int j)
{
    int lo = 0, hi = count;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (known[mid] < j) lo = mid + 1;
        else hi = mid;
    }
    return lo < count && known[lo] == j;
}

int kgl_predict(const kgl_model *m, const double *states, const kgl_dataset *known, int entity, int relation_row,
                int top_k, bool filter, kgl_answer *out)
{
    int n = m->cfg.n_entities;
    check_query(m, entity, relation_row, "kgl_predict");
    if (top_k < 1 || top_k > n) kgl_die("kgl_predict: top_k %d out of range 1..%d", top_k, n);
    if (known && (known->n_entities != n || known->n_relations != m->cfg.n_relations))
        kgl_die("kgl_predict: the known triples have %d entities and %d relations, the model %d and %d",
                known->n_entities, known->n_relations, n, m->cfg.n_relations);
    double *scores = kgl_xmalloc((size_t)n * sizeof(double)), *probs = kgl_xmalloc((size_t)n * sizeof(double));
    kgl_predict_scores(m, states, entity, relation_row, scores);
    kgl_scores_softmax(scores, n, probs);
    /* the filter key is the evaluation's: (entity, row), rows m + r the inverse */
    int n_known = 0;
    const int *answers = known ? kgl_dataset_known(known, entity, relation_row, &n_known) : NULL;
    scored *order = kgl_xmalloc((size_t)n * sizeof *order);
    for (int j = 0; j < n; j++) order[j] = (scored){scores[j], j};
    qsort(order, (size_t)n, sizeof *order, better_first);
    int count = 0;
    for (int k = 0; k < n && count < top_k; k++) {
        int j = order[k].entity;
        bool is_known = answers && in_sorted(answers, n_known, j);
        if (filter && is_known) continue;
        out[count++] = (kgl_answer){j, scores[j], probs[j], is_known};
    }
    free(order);
    free(probs);
    free(scores);
    return count;
}
