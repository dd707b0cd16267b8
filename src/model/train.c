/* train.c — examples, batches, the training step, filtered evaluation and
 * head specialisation (README, "The model, exactly"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"
#include "engine/kernel.h"

/* ---- evaluation ------------------------------------------------------------ */

/* Queries are scored EVAL_CHUNK at a time: one matrix product against every
   candidate, then each row is filtered and ranked (rows in parallel). */
#define EVAL_CHUNK 256

void kgl_eval_init(kgl_eval *e, int n_entities, int n_relations)
{
    memset(e, 0, sizeof *e);
    e->n_relations = n_relations;
    e->n_entities = n_entities;
    e->rel_tail = kgl_xmalloc((size_t)n_relations * sizeof *e->rel_tail);
    e->rel_head = kgl_xmalloc((size_t)n_relations * sizeof *e->rel_head);
    e->scores = kgl_xmalloc((size_t)EVAL_CHUNK * (size_t)n_entities * sizeof *e->scores);
    e->pool = kgl_pool_create(1);
    e->owns_pool = true;
}

void kgl_eval_set_pool(kgl_eval *e, kgl_pool *pool)
{
    if (e->owns_pool) kgl_pool_free(e->pool);
    e->pool = pool ? pool : kgl_pool_create(1);
    e->owns_pool = pool == NULL;
}

void kgl_eval_free(kgl_eval *e)
{
    free(e->rel_tail);
    free(e->rel_head);
    free(e->scores);
    free(e->queries);
    free(e->rank_lo);
    free(e->rank_hi);
    free(e->vecs);
    free(e->mixture);
    free(e->query_states);
    free(e->query_keys);
    if (e->owns_pool) kgl_pool_free(e->pool);
    memset(e, 0, sizeof *e);
}

double kgl_filtered_rank(const kgl_real *scores, int n, int target, const int *known, int n_known)
{
    double lo, hi;
    kgl_filtered_rank_range(scores, n, target, known, n_known, &lo, &hi);
    return (lo + hi) / 2;
}

void kgl_filtered_rank_range(const kgl_real *scores, int n, int target, const int *known, int n_known,
                             double *optimistic, double *pessimistic)
{
    double s = scores[target];
    if (isnan(s)) {
        *optimistic = *pessimistic = n;
        return;
    }
    /* Count over every candidate (a loop the compiler vectorises), then take
       back the known answers: a known answer (the target too) is not a rival. */
    long higher = 0, equal = 0;
    for (int j = 0; j < n; j++) {
        higher += (scores[j] > s) | (scores[j] != scores[j]); /* higher, or NaN */
        equal += scores[j] == s;
    }
    equal -= 1; /* the target itself */
    for (int k = 0; k < n_known; k++) {
        int j = known[k];
        if (j == target || j < 0 || j >= n) continue;
        higher -= (scores[j] > s) | (scores[j] != scores[j]);
        equal -= scores[j] == s;
    }
    *optimistic = 1.0 + (double)higher;
    *pessimistic = 1.0 + (double)higher + (double)equal;
}

static void add_rank(kgl_metrics *m, double rank)
{
    m->n++;
    m->mrr += 1.0 / rank;
    m->hits1 += rank <= 1;
    m->hits3 += rank <= 3;
    m->hits10 += rank <= 10;
    m->mr += rank;
}

static void finish(kgl_metrics *m)
{
    if (m->n == 0) {
        m->mrr = m->hits1 = m->hits3 = m->hits10 = m->mr = NAN;
        return;
    }
    m->mrr /= (double)m->n;
    m->hits1 /= (double)m->n;
    m->hits3 /= (double)m->n;
    m->hits10 /= (double)m->n;
    m->mr /= (double)m->n;
}

/* One chunk of queries: q[k] = (row of `left` a, row of `mid` b, target,
   filter key (entity, relation)); scores = (a ⊙ b) Candᵀ, then each row is
   ranked with the known answers of its key filtered out. */
typedef struct eval_job {
    const kgl_dataset *ds;
    const kgl_eval_query *q;
    const kgl_real *scores;
    double *lo, *hi;
    int n_cand, rows;
} eval_job;

static void rank_rows(void *ctx, int task, int worker)
{
    (void)worker;
    const eval_job *J = ctx;
    int k1 = (task + 1) * 32 < J->rows ? (task + 1) * 32 : J->rows;
    for (int k = task * 32; k < k1; k++) {
        int count;
        const int *known = kgl_dataset_known(J->ds, J->q[k].key_entity, J->q[k].key_rel, &count);
        kgl_filtered_rank_range(J->scores + (size_t)k * J->n_cand, J->n_cand, J->q[k].target, known, count, J->lo + k,
                                J->hi + k);
    }
}

const char *kgl_ensemble_mismatch(const kgl_config *first, const kgl_config *other)
{
    if (other->n_entities != first->n_entities) return "another number of entities";
    if (other->n_relations != first->n_relations) return "another number of relations";
    if (other->reciprocal != first->reciprocal)
        return other->reciprocal ? "reciprocal relations, which member 0 has not"
                                 : "no reciprocal relations, which member 0 has";
    return NULL;
}

void kgl_mixture_add(kgl_real *scores, int n, int members, kgl_real *mix)
{
    double mx = scores[0], z = 0;
    for (int j = 1; j < n; j++) mx = scores[j] > mx ? scores[j] : mx;
    for (int j = 0; j < n; j++) z += scores[j] = exp(scores[j] - mx);
    double w = 1.0 / (z * members);
    for (int j = 0; j < n; j++) mix[j] += scores[j] * w;
}

/* One member's readout: the scores of a query are (left[a] ⊙ mid[b]) · cand[j]
   over n candidate rows of width d (README, "The model, exactly"; in
   reciprocal mode left = C, mid = R, cand = E, and for head queries without
   it left = R, mid = E, cand = C). With the complex readout (reciprocal
   mode only) left[a] ⊙ mid[b] is the complex product. With `asks` (a
   --query-relation model, whose state depends on the question) left[a] is
   instead the state of the question (a, b), computed chunk by chunk. */
typedef struct readout {
    const kgl_real *left, *mid, *cand;
    int n, d;
    bool complex;
    const kgl_model *asks;
    kgl_candidate_side *side; /* with asks: the candidates' side of head questions (--candidate-states) */
} readout;

/* scores[k, j] for queries q[0..rows) of one member */
static void score_chunk(kgl_eval *e, const kgl_eval_query *q, int rows, const readout *ro, kgl_real *scores)
{
    int d = ro->d, n = ro->n;
    if (ro->asks) { /* the chunk's questions and their states */
        for (int k = 0; k < rows; k++) e->query_keys[k] = q[k].a, e->query_keys[EVAL_CHUNK + k] = q[k].b;
        kgl_model_query_states(ro->asks, e->pool, e->query_keys, e->query_keys + EVAL_CHUNK, rows, e->query_states);
    }
    for (int k = 0; k < rows; k++) { /* v = a ⊙ b */
        const kgl_real *a = ro->asks ? e->query_states + (size_t)k * d : ro->left + (size_t)q[k].a * d;
        const kgl_real *b = ro->mid + (size_t)q[k].b * d;
        kgl_readout_query(ro->complex, a, b, e->vecs + (size_t)k * d, d);
    }
    /* scores[k, j] = Σ_c v_k[c] cand[j, c], c in order */
    kgl_gemm_nt(e->pool, rows, n, d, e->vecs, d, ro->cand, d, scores, n, KGL_SET);
    if (ro->asks && ro->side) /* head questions: + λ S_(j,r)·R[r]·E[t] (the entity and row keys above) */
        kgl_add_candidate_side(ro->asks, e->pool, ro->side, rows, e->query_keys, e->query_keys + EVAL_CHUNK, scores);
}

/* Ranks queries q[0..nq) by the scores of one member, or by the mean of the
   members' softmax probabilities when there are several (an ensemble: the
   probability the mixture gives each candidate); lo/hi get the optimistic
   and pessimistic ranks. They are queries before+1.. of all `all` of the
   evaluation, for its progress callback. */
static void rank_queries(kgl_eval *e, const kgl_dataset *ds, const kgl_eval_query *q, int nq, const readout *ro,
                         int members, double *lo, double *hi, long before, long all)
{
    int n = ro[0].n;
    for (int k0 = 0; k0 < nq; k0 += EVAL_CHUNK) {
        int rows = nq - k0 < EVAL_CHUNK ? nq - k0 : EVAL_CHUNK;
        const kgl_real *ranked = e->scores;
        if (members == 1) {
            score_chunk(e, q + k0, rows, &ro[0], e->scores);
        } else {
            memset(e->mixture, 0, (size_t)rows * n * sizeof *e->mixture);
            for (int mb = 0; mb < members; mb++) {
                score_chunk(e, q + k0, rows, &ro[mb], e->scores);
                for (int k = 0; k < rows; k++)
                    kgl_mixture_add(e->scores + (size_t)k * n, n, members, e->mixture + (size_t)k * n);
            }
            ranked = e->mixture;
        }
        eval_job J = {ds, q + k0, ranked, lo + k0, hi + k0, n, rows};
        kgl_parallel(e->pool, (rows + 31) / 32, 4.0 * rows * n, rank_rows, &J);
        if (e->progress) e->progress(e->progress_ctx, before + k0 + rows, all);
    }
}

/* p with room for `need` elements (a new block when it had less). */
static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return p;
    free(p);
    *cap = need;
    return kgl_xmalloc(need * size);
}

void kgl_evaluate(const kgl_model *m, const kgl_tensor *C, const kgl_dataset *ds, const kgl_triple *tr, int n,
                  kgl_eval *out)
{
    const kgl_real *states = C ? C->data : NULL; /* NULL: a --query-relation model's (kgl_trainer_states) */
    kgl_evaluate_ensemble(&m, &states, 1, ds, tr, n, out);
}

void kgl_evaluate_ensemble(const kgl_model *const *models, const kgl_real *const *states, int members,
                           const kgl_dataset *ds, const kgl_triple *tr, int n, kgl_eval *out)
{
    const kgl_model *m = models[0];
    int n_rel = m->cfg.n_relations, d = 0;
    if (members < 1 || members > KGL_MAX_ENSEMBLE) kgl_die("evaluate: %d members (1 to %d)", members, KGL_MAX_ENSEMBLE);
    for (int mb = 0; mb < members; mb++) {
        const kgl_config *c = &models[mb]->cfg;
        if (c->n_entities != out->n_entities)
            kgl_die("evaluate: scratch made for %d entities, not %d", out->n_entities, c->n_entities);
        const char *why = kgl_ensemble_mismatch(&m->cfg, c);
        if (why) kgl_die("evaluate: member %d has %s", mb, why);
        if (!states[mb] && !c->query_relation) /* only a question's own state answers without them */
            kgl_die("evaluate: member %d has no entity states", mb);
        if (c->dim > d) d = c->dim;
    }
    memset(&out->tail, 0, sizeof out->tail);
    memset(&out->head, 0, sizeof out->head);
    memset(&out->both, 0, sizeof out->both);
    memset(out->rel_tail, 0, (size_t)n_rel * sizeof *out->rel_tail);
    memset(out->rel_head, 0, (size_t)n_rel * sizeof *out->rel_head);
    memset(&out->tail_optimistic, 0, sizeof out->tail_optimistic);
    memset(&out->head_optimistic, 0, sizeof out->head_optimistic);
    memset(&out->both_optimistic, 0, sizeof out->both_optimistic);
    size_t cap_ranks = out->cap_ranks;
    out->queries = grow(out->queries, &out->cap_queries, (size_t)2 * n, sizeof *out->queries);
    out->rank_lo = grow(out->rank_lo, &cap_ranks, (size_t)2 * n, sizeof *out->rank_lo);
    out->rank_hi = grow(out->rank_hi, &out->cap_ranks, (size_t)2 * n, sizeof *out->rank_hi);
    out->vecs = grow(out->vecs, &out->cap_vecs, (size_t)EVAL_CHUNK * d, sizeof *out->vecs);
    if (members > 1)
        out->mixture = grow(out->mixture, &out->cap_mixture, (size_t)EVAL_CHUNK * out->n_entities, sizeof *out->mixture);
    kgl_eval_query *tq = out->queries, *hq = out->queries + n;
    for (int k = 0; k < n; k++) {
        int i = tr[k].head, r = tr[k].rel, t = tr[k].tail;
        /* tail: (i, r, ?) scores C[i] ⊙ R[r] against every E[j] */
        tq[k] = (kgl_eval_query){i, r, t, i, r};
        /* head: (?, r, t) is (t, r⁻¹, ?) in reciprocal mode; otherwise each
           candidate j is scored C[j]·R[r]·E[t], i.e. R[r] ⊙ E[t] against every C[j] */
        hq[k] = m->cfg.reciprocal ? (kgl_eval_query){t, n_rel + r, i, t, n_rel + r}
                                  : (kgl_eval_query){r, t, i, t, n_rel + r};
    }
    double *lo = out->rank_lo, *hi = out->rank_hi;
    out->query_states = grow(out->query_states, &out->cap_query_states, (size_t)EVAL_CHUNK * d, sizeof(kgl_real));
    out->query_keys = grow(out->query_keys, &out->cap_query_keys, 2 * EVAL_CHUNK, sizeof(int));
    readout tail_ro[KGL_MAX_ENSEMBLE], head_ro[KGL_MAX_ENSEMBLE];
    kgl_candidate_side sides[KGL_MAX_ENSEMBLE];
    bool any_side = false;
    for (int mb = 0; mb < members; mb++) {
        const kgl_config *c = &models[mb]->cfg;
        const kgl_real *C = states[mb], *E = models[mb]->entity_emb->data, *R = models[mb]->relation_emb->data;
        /* a --query-relation model asks (entity, relation) as the reciprocal readout does (it requires them) */
        const kgl_model *asks = c->query_relation ? models[mb] : NULL;
        kgl_candidate_side_init(&sides[mb]);
        bool side = asks && c->candidate_states > 0;
        any_side |= side;
        tail_ro[mb] = (readout){C, R, E, c->n_entities, c->dim, c->readout == KGL_READOUT_COMPLEX, asks, NULL};
        head_ro[mb] = m->cfg.reciprocal ? tail_ro[mb] : (readout){R, E, C, c->n_entities, c->dim, false, NULL, NULL};
        if (side) head_ro[mb].side = &sides[mb];
    }
    rank_queries(out, ds, tq, n, tail_ro, members, lo, hi, 0, 2L * n);
    if (any_side && n > 0) { /* the head questions by relation (each relation's candidate states once), ranks put back */
        int *order = kgl_xmalloc((size_t)2 * n * sizeof(int));
        kgl_eval_query *sorted = kgl_xmalloc((size_t)n * sizeof *sorted);
        double *slo = kgl_xmalloc((size_t)2 * n * sizeof(double)), *shi = slo + n;
        for (int k = 0; k < n; k++) order[2 * k] = hq[k].b, order[2 * k + 1] = k;
        qsort(order, (size_t)n, 2 * sizeof(int), kgl_cmp_int_pair); /* by row, then triple order */
        for (int k = 0; k < n; k++) sorted[k] = hq[order[2 * k + 1]];
        rank_queries(out, ds, sorted, n, head_ro, members, slo, shi, n, 2L * n);
        for (int k = 0; k < n; k++) lo[n + order[2 * k + 1]] = slo[k], hi[n + order[2 * k + 1]] = shi[k];
        free(slo);
        free(sorted);
        free(order);
    } else {
        rank_queries(out, ds, hq, n, head_ro, members, lo + n, hi + n, n, 2L * n);
    }
    for (int mb = 0; mb < members; mb++) kgl_candidate_side_free(&sides[mb]);
    for (int k = 0; k < n; k++) { /* in triple order, tail then head, as one loop would */
        int r = tr[k].rel;
        double rank = (lo[k] + hi[k]) / 2;
        add_rank(&out->tail_optimistic, lo[k]);
        add_rank(&out->both_optimistic, lo[k]);
        add_rank(&out->tail, rank);
        add_rank(&out->rel_tail[r], rank);
        add_rank(&out->both, rank);
        rank = (lo[n + k] + hi[n + k]) / 2;
        add_rank(&out->head_optimistic, lo[n + k]);
        add_rank(&out->both_optimistic, lo[n + k]);
        add_rank(&out->head, rank);
        add_rank(&out->rel_head[r], rank);
        add_rank(&out->both, rank);
    }
    finish(&out->tail);
    finish(&out->head);
    finish(&out->both);
    finish(&out->tail_optimistic);
    finish(&out->head_optimistic);
    finish(&out->both_optimistic);
    for (int r = 0; r < n_rel; r++) {
        finish(&out->rel_tail[r]);
        finish(&out->rel_head[r]);
    }
}

/* ---- specialisation ---------------------------------------------------------- */

void kgl_tails_build(kgl_tails *tl, int n_entities, int n_relations, const kgl_triple *tr, int n)
{
    size_t keys = (size_t)n_entities * (size_t)n_relations;
    tl->n_entities = n_entities;
    tl->n_relations = n_relations;
    tl->offsets = kgl_xcalloc(keys + 1, sizeof(int));
    tl->tails = kgl_xmalloc((size_t)n * sizeof(int));
    for (int k = 0; k < n; k++) tl->offsets[(size_t)tr[k].rel * n_entities + tr[k].head + 1]++;
    for (size_t key = 0; key < keys; key++) tl->offsets[key + 1] += tl->offsets[key];
    int *fill = kgl_xmalloc(keys * sizeof(int));
    for (size_t key = 0; key < keys; key++) fill[key] = tl->offsets[key];
    for (int k = 0; k < n; k++) tl->tails[fill[(size_t)tr[k].rel * n_entities + tr[k].head]++] = tr[k].tail;
    free(fill);
    /* sort each list and drop repeats (a triple given in two files) */
    int w = 0;
    for (size_t key = 0; key < keys; key++) {
        int lo = tl->offsets[key], hi = tl->offsets[key + 1];
        qsort(tl->tails + lo, (size_t)(hi - lo), sizeof(int), kgl_cmp_int);
        tl->offsets[key] = w;
        for (int k = lo; k < hi; k++)
            if (k == lo || tl->tails[k] != tl->tails[k - 1]) tl->tails[w++] = tl->tails[k];
    }
    tl->offsets[keys] = w;
}

void kgl_tails_free(kgl_tails *tl)
{
    free(tl->offsets);
    free(tl->tails);
    memset(tl, 0, sizeof *tl);
}

/* ---- the trainer ------------------------------------------------------------- */

/* --lookup: each row of relation_emb constant within every head's block of
   columns (its block mean), so a relation weighs whole heads. */
static void tie_relation_blocks(kgl_model *m)
{
    int d = m->cfg.dim, dk = d / m->cfg.heads;
    kgl_tensor *R = m->relation_emb;
    for (int r = 0; r < R->rows; r++)
        for (int c0 = 0; c0 < d; c0 += dk) {
            kgl_real *x = R->data + (size_t)r * d + c0;
            double mean = 0;
            for (int c = 0; c < dk; c++) mean += x[c];
            mean /= dk;
            for (int c = 0; c < dk; c++) x[c] = mean;
        }
}

static void set_identity(kgl_tensor *w)
{
    memset(w->data, 0, kgl_numel(w) * sizeof(kgl_real));
    for (int i = 0; i < w->rows; i++) w->data[(size_t)i * w->cols + i] = 1.0;
}

/* The shuffle stream is separate from the init stream, so changing --batch
   never changes the initial parameters. */
#define SHUFFLE_STREAM 0x53485546464c45ULL /* "SHUFFLE" */
/* Dropout has a stream of its own too: turning it on changes neither the
   initial parameters nor the batches. */
#define DROPOUT_STREAM 0x44524f504f5554ULL /* "DROPOUT" */
/* The neighbourhoods of --context graph: a generator per step, so that the
   draws of step k never depend on how the run got there (a resume, -
   -eval-every), and turning the context on changes no other stream. */
#define NEIGHBOUR_STREAM 0x4e454947484252ULL /* "NEIGHBR" */
#define NEIGHBOUR_STEP 0x9e3779b97f4a7c15ULL

/* KvsAll: replaces the examples by the distinct queries (head, relation
   row), ordered by relation row, then head; each keeps its distinct answers
   (sorted) in q_answers, and ex_tail holds the first of them. */
void kgl_trainer_set_kvsall(kgl_trainer *tr)
{
    if (tr->kvsall) return;
    int n_ex = tr->n_examples, rel_rows = kgl_config_relation_rows(&tr->model.cfg);
    kgl_triple *ex = kgl_xmalloc((size_t)n_ex * sizeof *ex);
    for (int k = 0; k < n_ex; k++) ex[k] = (kgl_triple){tr->ex_head[k], tr->ex_rel[k], tr->ex_tail[k]};
    kgl_tails all;
    kgl_tails_build(&all, tr->ds->n_entities, rel_rows, ex, n_ex);
    free(ex);
    int n = tr->ds->n_entities, n_q = 0;
    size_t keys = (size_t)rel_rows * (size_t)n;
    tr->q_off = kgl_xmalloc(((size_t)n_ex + 1) * sizeof(int));
    tr->q_answers = kgl_xmalloc((size_t)(all.offsets[keys] > 0 ? all.offsets[keys] : 1) * sizeof(int));
    memcpy(tr->q_answers, all.tails, (size_t)all.offsets[keys] * sizeof(int));
    for (size_t key = 0; key < keys; key++) {
        int lo = all.offsets[key], hi = all.offsets[key + 1];
        if (lo == hi) continue;
        tr->ex_rel[n_q] = (int)(key / (size_t)n);
        tr->ex_head[n_q] = (int)(key % (size_t)n);
        tr->ex_tail[n_q] = all.tails[lo];
        tr->q_off[n_q++] = lo;
    }
    tr->q_off[n_q] = all.offsets[keys];
    kgl_tails_free(&all);
    tr->n_examples = n_q;
    tr->kvsall = true;
    int B = tr->cfg.batch < n_q ? tr->cfg.batch : n_q; /* the batch arrays already hold B ≤ n_ex */
    tr->b_off = kgl_xmalloc((size_t)(B + 1) * sizeof(int));
    tr->b_answers = kgl_xmalloc((size_t)(tr->q_off[n_q] > 0 ? tr->q_off[n_q] : 1) * sizeof(int));
    tr->cursor = 0;
}

void kgl_trainer_init(kgl_trainer *tr, const kgl_dataset *ds, const kgl_triple *train, int n_train,
                      const kgl_config *model_cfg, const kgl_train_config *tc)
{
    memset(tr, 0, sizeof *tr);
    tr->ds = ds;
    tr->cfg = *tc;
    tr->optim = tc->optim;
    kgl_config cfg = *model_cfg;
    cfg.n_entities = ds->n_entities;
    cfg.n_relations = ds->n_relations;
    kgl_model_create(&tr->model, &cfg);
    kgl_rng rng;
    kgl_rng_seed(&rng, tc->seed);
    kgl_model_init(&tr->model, &rng);
    if (tc->freeze_embeddings || tc->lookup) kgl_params_find(&tr->model.params, "entity_emb")->frozen = true;
    if (tc->lookup) {
        set_identity(tr->model.layer[0].wv);
        set_identity(tr->model.layer[0].wo);
        kgl_params_find(&tr->model.params, "attn.wv")->frozen = true;
        kgl_params_find(&tr->model.params, "attn.wo")->frozen = true;
        tie_relation_blocks(&tr->model);
    }
    kgl_rng_seed(&tr->shuffle_rng, tc->seed ^ SHUFFLE_STREAM);
    tr->epoch_rng = tr->shuffle_rng;
    kgl_rng_seed(&tr->dropout_rng, tc->seed ^ DROPOUT_STREAM);
    tr->base_lr = tc->optim.lr;

    tr->train = train;
    tr->n_train = n_train;
    kgl_tails_build(&tr->tails, ds->n_entities, ds->n_relations, train, n_train);
    int m = ds->n_relations, n_ex = cfg.reciprocal ? 2 * n_train : n_train;
    tr->n_examples = n_ex;
    tr->ex_head = kgl_xmalloc((size_t)n_ex * sizeof(int));
    tr->ex_rel = kgl_xmalloc((size_t)n_ex * sizeof(int));
    tr->ex_tail = kgl_xmalloc((size_t)n_ex * sizeof(int));
    for (int k = 0; k < n_train; k++) {
        tr->ex_head[k] = train[k].head;
        tr->ex_rel[k] = train[k].rel;
        tr->ex_tail[k] = train[k].tail;
        if (cfg.reciprocal) { /* (t, r⁻¹, h) after all forward examples */
            tr->ex_head[n_train + k] = train[k].tail;
            tr->ex_rel[n_train + k] = m + train[k].rel;
            tr->ex_tail[n_train + k] = train[k].head;
        }
    }
    int B = tc->batch < n_ex ? tc->batch : n_ex;
    tr->order = kgl_xmalloc((size_t)n_ex * sizeof(int));
    tr->b_head = kgl_xmalloc((size_t)B * sizeof(int));
    tr->b_rel = kgl_xmalloc((size_t)B * sizeof(int));
    tr->b_tail = kgl_xmalloc((size_t)B * sizeof(int));
    if (tc->head_of) {
        tr->head_of = kgl_xmalloc((size_t)m * sizeof(int));
        memcpy(tr->head_of, tc->head_of, (size_t)m * sizeof(int));
        tr->sup.head_of = tr->head_of;
        tr->sup.weight = tc->aux_weight;
    }
    if (cfg.context == KGL_CONTEXT_GRAPH) {
        kgl_model_set_graph(&tr->model, train, n_train);
        tr->neighbourhood = kgl_model_neighbourhood_alloc(&tr->model, &tr->arena, B);
    }
    kgl_tape_init(&tr->tape);
    kgl_tape_init(&tr->eval_tape);
    tr->eval_tape.recording = false;
}

void kgl_trainer_set_pool(kgl_trainer *tr, kgl_pool *pool)
{
    kgl_tape_set_pool(&tr->tape, pool);
    kgl_tape_set_pool(&tr->eval_tape, pool);
}

void kgl_trainer_free(kgl_trainer *tr)
{
    kgl_model_free(&tr->model);
    free(tr->ex_head);
    free(tr->ex_rel);
    free(tr->ex_tail);
    free(tr->order);
    free(tr->b_head);
    free(tr->b_rel);
    free(tr->b_tail);
    free(tr->head_of);
    free(tr->q_off);
    free(tr->q_answers);
    free(tr->b_off);
    free(tr->b_answers);
    kgl_arena_free(&tr->arena);
    kgl_tails_free(&tr->tails);
    kgl_tape_free(&tr->tape);
    kgl_tape_free(&tr->eval_tape);
    memset(tr, 0, sizeof *tr);
}

/* Fisher–Yates over the identity, drawing from shuffle_rng. */
static void shuffle_epoch(kgl_trainer *tr)
{
    kgl_rng_permutation(&tr->shuffle_rng, tr->order, tr->n_examples);
}

void kgl_trainer_get_position(const kgl_trainer *tr, kgl_rng *epoch_rng, int *cursor)
{
    *epoch_rng = tr->cursor == 0 ? tr->shuffle_rng : tr->epoch_rng;
    *cursor = tr->cursor;
}

void kgl_trainer_set_position(kgl_trainer *tr, const kgl_rng *epoch_rng, int cursor)
{
    tr->epoch_rng = *epoch_rng;
    tr->shuffle_rng = *epoch_rng;
    tr->cursor = 0;
    if (tr->cfg.batch < tr->n_examples && cursor > 0 && cursor < tr->n_examples) {
        shuffle_epoch(tr); /* replays this epoch's shuffle */
        tr->cursor = cursor;
    }
}

/* The next batch: everything in file order when it fits (no random draws),
   otherwise consecutive slices of a fresh permutation per epoch. */
static kgl_batch next_batch(kgl_trainer *tr, const int **answer_off, const int **answers)
{
    int n = tr->n_examples;
    if (tr->cfg.batch >= n) {
        *answer_off = tr->q_off; /* NULL, NULL without KvsAll */
        *answers = tr->q_answers;
        return (kgl_batch){n, tr->ex_head, tr->ex_rel, tr->ex_tail, NULL};
    }
    if (tr->cursor == 0) {
        tr->epoch_rng = tr->shuffle_rng;
        shuffle_epoch(tr);
    }
    int size = n - tr->cursor < tr->cfg.batch ? n - tr->cursor : tr->cfg.batch;
    for (int k = 0; k < size; k++) {
        int e = tr->order[tr->cursor + k];
        tr->b_head[k] = tr->ex_head[e];
        tr->b_rel[k] = tr->ex_rel[e];
        tr->b_tail[k] = tr->ex_tail[e];
    }
    if (tr->kvsall) { /* each query's answers, gathered in batch order */
        int used = 0;
        for (int k = 0; k < size; k++) {
            int e = tr->order[tr->cursor + k];
            tr->b_off[k] = used;
            for (int a = tr->q_off[e]; a < tr->q_off[e + 1]; a++) tr->b_answers[used++] = tr->q_answers[a];
        }
        tr->b_off[size] = used;
    }
    *answer_off = tr->kvsall ? tr->b_off : NULL;
    *answers = tr->kvsall ? tr->b_answers : NULL;
    tr->cursor += size;
    if (tr->cursor >= n) tr->cursor = 0;
    return (kgl_batch){size, tr->b_head, tr->b_rel, tr->b_tail, NULL};
}

static double compute(kgl_trainer *tr, const kgl_batch *batch, const int *answer_off, const int *answers);

double kgl_trainer_compute(kgl_trainer *tr)
{
    const int *answer_off, *answers;
    kgl_batch b = next_batch(tr, &answer_off, &answers);
    if (tr->model.cfg.context == KGL_CONTEXT_GRAPH) { /* this step's neighbourhoods, drawn */
        kgl_rng rng;
        kgl_rng_seed(&rng, tr->cfg.seed ^ NEIGHBOUR_STREAM ^ ((uint64_t)(tr->optim.step + 1) * NEIGHBOUR_STEP));
        kgl_neighbourhood_sample(tr->neighbourhood, b.head, b.rel, b.tail, b.n,
                                 answers != NULL || tr->model.cfg.hide_asked, &rng, tr->reg.edge_dropout,
                                 tr->reg.source_dropout);
        b.context = tr->neighbourhood;
    }
    return compute(tr, &b, answer_off, answers);
}

double kgl_trainer_compute_batch(kgl_trainer *tr, const kgl_batch *batch)
{
    return compute(tr, batch, NULL, NULL);
}

/* Forward and backward of one batch (answers NULL: one tail per example). */
static double compute(kgl_trainer *tr, const kgl_batch *batch, const int *answer_off, const int *answers)
{
    kgl_batch b = *batch;
    kgl_tape_reset(&tr->tape);
    kgl_params_zero_grad_on(&tr->model.params, tr->tape.pool);
    tr->reg.rng = &tr->dropout_rng; /* set here, not at init: the trainer may have been moved */
    kgl_model_loss_multi(&tr->model, &tr->tape, &b, answer_off, answers, tr->head_of ? &tr->sup : NULL, &tr->reg,
                         &tr->fwd);
    double loss = tr->fwd.loss->data[0];
    tr->last_main = tr->fwd.main_loss->data[0];
    tr->last_aux = tr->fwd.aux_loss ? tr->fwd.aux_loss->data[0] : NAN;
    if (isfinite(loss)) kgl_backward(&tr->tape, tr->fwd.loss);
    return loss;
}

/* optim.lr = the schedule's rate for `step` (left alone without a schedule) */
static void follow_schedule(kgl_trainer *tr, long step)
{
    if (tr->sched.kind != KGL_SCHED_CONSTANT || tr->sched.warmup > 0)
        tr->optim.lr = tr->base_lr * kgl_schedule_factor(&tr->sched, step);
}

void kgl_trainer_set_step(kgl_trainer *tr, long step)
{
    tr->optim.step = step;
    follow_schedule(tr, step > 0 ? step : 1); /* the rate the last update used */
}

void kgl_trainer_update(kgl_trainer *tr)
{
    follow_schedule(tr, tr->optim.step + 1);
    kgl_optim_step_on(&tr->optim, &tr->model.params, tr->tape.pool);
    if (tr->cfg.lookup) tie_relation_blocks(&tr->model); /* projected: the constraint holds after every step */
}

const char *const kgl_schedule_names[3] = {"constant", "cosine", "linear"};

double kgl_schedule_factor(const kgl_schedule *s, long step)
{
    double f = 1, t = (double)step, T = (double)(s->total > 0 ? s->total : 1);
    if (t > T) t = T;
    if (s->kind == KGL_SCHED_COSINE) f = s->floor + (1 - s->floor) * 0.5 * (1 + cos(3.14159265358979323846 * t / T));
    if (s->kind == KGL_SCHED_LINEAR) f = 1 - (1 - s->floor) * t / T;
    if (s->warmup > 0 && step < s->warmup) f *= (double)step / (double)s->warmup;
    return f;
}

void kgl_trainer_set_regularisers(kgl_trainer *tr, const kgl_regularisers *r)
{
    tr->reg = *r;
}

void kgl_trainer_set_schedule(kgl_trainer *tr, const kgl_schedule *s) { tr->sched = *s; }

void kgl_trainer_snapshot(const kgl_trainer *tr, kgl_snapshot *s)
{
    const kgl_params *ps = &tr->model.params;
    if (!s->values) {
        s->total = ps->total;
        s->values = kgl_xmalloc(3 * ps->total * sizeof(kgl_real));
    }
    if (s->total != ps->total) kgl_die("snapshot: taken of another model");
    memcpy(s->values, ps->block, ps->total * sizeof(kgl_real));                                 /* data */
    memcpy(s->values + ps->total, ps->block + 2 * ps->total, 2 * ps->total * sizeof(kgl_real)); /* m, v */
    s->step = tr->optim.step;
    kgl_trainer_get_position(tr, &s->epoch_rng, &s->cursor);
    s->dropout_rng = tr->dropout_rng;
}

void kgl_trainer_restore(kgl_trainer *tr, const kgl_snapshot *s)
{
    kgl_params *ps = &tr->model.params;
    if (!s->values || s->total != ps->total) kgl_die("restore: no snapshot of this model");
    memcpy(ps->block, s->values, ps->total * sizeof(kgl_real));
    memcpy(ps->block + 2 * ps->total, s->values + ps->total, 2 * ps->total * sizeof(kgl_real));
    kgl_trainer_set_step(tr, s->step);
    kgl_trainer_set_position(tr, &s->epoch_rng, s->cursor);
    tr->dropout_rng = s->dropout_rng;
}

void kgl_snapshot_free(kgl_snapshot *s)
{
    free(s->values);
    memset(s, 0, sizeof *s);
}

void kgl_trainer_release_steps(kgl_trainer *tr)
{
    kgl_tape_reset(&tr->tape);
    kgl_arena_free(&tr->tape.arena);
    memset(&tr->fwd, 0, sizeof tr->fwd);
}

/* ---- what training allocates ------------------------------------------------- */

/* The arenas' sizes, in values, from the tensors the layer makes with their
   gradients (ops.c, model.c). The coefficients count them: e.g. the full
   context's 19 n d are Q, K, V, the attention's output, O Wo, the residual
   and its layer norm with their gradients, and packed copies; the readout's
   3 B n are the scores, their gradient and the softmax, its 2 B d the query
   rows a ⊙ b and their gradient's scratch. Fitted where a sum is not exact
   (the neighbourhood context's tokens) to the high-water marks of UMLS,
   Nations and Kinship steps, always rounded up. */
static double step_values(const kgl_config *c, const kgl_train_config *tc, const kgl_regularisers *reg, double B,
                          double *attention)
{
    double n = c->n_entities, d = c->dim, f = c->ffn, H = c->heads, rel_rows = kgl_config_relation_rows(c);
    kgl_regularisers none = {0};
    const kgl_regularisers *r = reg ? reg : &none;
    double readout = 3 * B * n + 2 * B * d;
    if (r->hidden_dropout > 0) readout += 4.25 * B * d; /* the head rows gathered, dropped, a byte mask */
    if (r->entity_dropout > 0) readout += 2.25 * n * d;
    if (r->relation_loss > 0) readout += 3 * B * rel_rows + 2.5 * B * d;
    if (r->n3 > 0) readout += 12.5 * B * d; /* three rows gathered and cubed, with gradients */
    *attention = 0;
    switch (c->context) {
    case KGL_CONTEXT_NONE: return readout + (r->dropout > 0 ? 2.125 * n * d : 0);
    case KGL_CONTEXT_FULL: {
        double layer = 19 * n * d + (c->qk_norm ? 4 * n * d : 0) + (r->dropout > 0 ? 6.25 * n * d : 0);
        if (f > 0) layer += 7 * n * f + 8 * n * d;
        if (r->layer_dropout > 0 && c->outer_residual) layer += 2.5 * n * d; /* the term dropped, its gradient, masks */
        /* the fused op keeps every head's weights, and its backward a block
           of 64 rows of ∂L/∂S a thread (counted as one n × n more: as much
           for n / 64 threads); the composition (head supervision, attention
           dropout) every head's logits, weights and their gradients and
           copies */
        bool composed = r->attn_dropout > 0 || (tc && tc->head_of);
        /* a stack keeps every layer's activations and weights for its backward */
        *attention = c->layers * (composed ? 10 * H + 1 : H + 1) * n * n;
        return readout + c->layers * layer + *attention;
    }
    case KGL_CONTEXT_GRAPH: {
        /* B (K + 1) tokens (K + 2 with the asked relation's; K counted where an entity has fewer edges): the
           segment's weights per head and their gradients, indices (the
           keys and values are read through them, never copied per token);
           the distinct entities' rows and their key projections, with
           gradients (at most one a token, at most n); their value
           projections, or with edges (layer.c) each head's weighted sum of
           the tokens' rows [B, H d] instead, with gradients; with qk-norm the
           distinct pairs' keys and their norm, with gradients, counted as if
           every token were distinct (a batch's share of distinct tokens is
           the graph's: 17% on CoDEx-S, 53% on FB15k-237) */
        double tokens = B * (double)kgl_config_segment_tokens(c), unique = fmin(tokens, n);
        double values = c->neighbours > 0 ? 2 * H * B * d : 2 * unique * d;
        double layer = tokens * (4 * H + 16 + (c->qk_norm ? 4 * d : 0)) + 4.25 * unique * d + values + 8.5 * B * d;
        if (f > 0) layer += 7 * B * f + 8 * B * d;
        if (c->query_relation) layer += 4 * B * d;
        if (r->dropout > 0) layer += 2.5 * B * d;
        if (r->layer_dropout > 0 && c->outer_residual) layer += 2.5 * B * d; /* the term dropped, its gradient, masks */
        /* --head-state input: two constant masks, two products, their sum, and gradients */
        double head_state = c->head_state_input ? 8 * B * d : 0;
        return readout + c->layers * layer + head_state; /* each layer of a stack asks the tokens again */
    }
    }
    return readout;
}

/* An evaluation's states on the eval_tape: the full context's layer without
   gradients, with every head's weights (the report keeps them); the
   neighbourhood context's are made a block of entities at a time. */
static double states_values(const kgl_config *c)
{
    double n = c->n_entities, d = c->dim, f = c->ffn, H = c->heads;
    switch (c->context) {
    case KGL_CONTEXT_NONE: return 0;
    case KGL_CONTEXT_GRAPH: return 1.25 * n * d;
    case KGL_CONTEXT_FULL: break;
    }
    return c->layers * (9.5 * n * d + (c->qk_norm ? 2 * n * d : 0) + (f > 0 ? 5 * n * f + 4 * n * d : 0) + H * n * n);
}

void kgl_trainer_plan(const kgl_config *cfg, const kgl_train_config *tc, const kgl_regularisers *reg, long n_train,
                      long ranked, size_t value_bytes, kgl_memory_plan *plan)
{
    const double w = (double)value_bytes, I = sizeof(int);
    double n = cfg->n_entities, d = cfg->dim, m = cfg->n_relations, tokens = kgl_config_segment_tokens(cfg);
    double examples = cfg->reciprocal ? 2.0 * n_train : (double)n_train;
    double batch = tc && tc->batch > 0 && tc->batch < examples ? tc->batch : examples;
    double P = (double)kgl_config_parameters(cfg);
    plan->parameters = 4 * P * w; /* kgl_params_alloc */
    plan->snapshot = 3 * P * w;   /* kgl_trainer_snapshot */
    double attention;
    plan->step = step_values(cfg, tc, reg, batch, &attention) * w;
    plan->attention = attention * w;
    plan->states = states_values(cfg) * w;
    /* kgl_eval_init's and kgl_evaluate_ensemble's: a chunk of rows of scores
       and of query vectors (and with --query-relation, of their states), two
       queries a triple and their two ranks; an ensemble's mixture of
       probabilities, a chunk of rows, once; with --candidate-states one
       relation's candidate states (n rows) and the head questions' order */
    double rows = 2.0 * ranked < EVAL_CHUNK ? 2.0 * ranked : EVAL_CHUNK;
    plan->ranking = rows * (n + d + (cfg->query_relation ? d : 0)) * w +
                    2.0 * ranked * (sizeof(kgl_eval_query) + 2 * sizeof(double));
    if (cfg->candidate_states > 0)
        plan->ranking += (n * d + d) * w + n * (double)sizeof(int) +
                         ranked * (sizeof(kgl_eval_query) + 2.0 * sizeof(int) + 2.0 * sizeof(double));
    plan->mixture = rows * n * w;
    /* the tails per (relation, entity), the examples (head, relation, tail,
       their order), a batch's; the graph's edges and a batch's
       neighbourhoods (four ints a token; with qk-norm three more and the
       distinct tokens' table, at most four) */
    plan->examples = (n * m + 1 + n_train + 4 * examples + 3 * batch) * I;
    if (cfg->context == KGL_CONTEXT_GRAPH)
        plan->examples += (6.0 * n_train + 2 * n + (cfg->qk_norm ? 11 : 4) * batch * tokens) * I;
}

double kgl_trainer_step(kgl_trainer *tr)
{
    double loss = kgl_trainer_compute(tr);
    if (isfinite(loss)) kgl_trainer_update(tr);
    return loss;
}

/* Adam normalises each step by the gradient's running scale, so a batch of
 * a few examples takes a step as large as a full one on a far noisier
 * gradient, once an epoch: on UMLS a last batch of 2-4 of 10,432 examples
 * cost 0.11 valid MRR, while the last batches of umls.args (192 of 1024) and
 * nations.args (112 of 256) measured the same as equal batches
 * (data/report/manual.md, `kgl train`): hence an eighth. */
bool kgl_trainer_short_last_batch(const kgl_trainer *tr, long *last, long *equal, long *batches)
{
    long n = tr->n_examples, b = tr->cfg.batch;
    if (b <= 0 || b >= n) return false;
    *last = n % b;
    if (*last == 0 || 8 * *last >= b) return false;
    *batches = (n + b - 1) / b;
    *equal = (n + *batches - 1) / *batches;
    return true;
}

kgl_tensor *kgl_trainer_context(kgl_trainer *tr, kgl_forward *f)
{
    kgl_tape_reset(&tr->eval_tape);
    kgl_model_context(&tr->model, &tr->eval_tape, f);
    return f->context;
}

kgl_tensor *kgl_trainer_states(kgl_trainer *tr)
{
    /* a --query-relation model's answers read each question's own state,
       never an entity's unasked one: none to compute */
    if (tr->model.cfg.query_relation) return NULL;
    kgl_forward f;
    tr->eval_tape.keep_attention = false; /* no one reads the weights: each thread keeps one block of rows */
    kgl_tensor *C = kgl_trainer_context(tr, &f);
    tr->eval_tape.keep_attention = true;
    return C;
}

bool kgl_trainer_fits(kgl_trainer *tr, kgl_eval *scratch)
{
    kgl_tensor *C = kgl_trainer_states(tr);
    kgl_evaluate(&tr->model, C, tr->ds, tr->train, tr->n_train, scratch);
    return scratch->both.n > 0 && scratch->both.hits1 == 1.0;
}

/* ---- what a whole run needs (kgl train's check before it allocates) ---- */

/* Once a process: the program, libc and the loaded data's names (kgl train
   on the academic world peaks at 3.1 MB resident, kgl --help at 2.0); per
   thread, its stack and malloc's arena (0.3 MB measured); per model, its
   structures (the trainer, two evaluators, the run's state; 77 KB a model
   measured with its small arrays, which are counted apart). */
#define PROCESS_BYTES (3.0 * 1048576.0)
#define THREAD_BYTES (0.375 * 1048576.0)
#define MODEL_BYTES (48.0 * 1024.0)
/* A step's tape is resident somewhat above its arena's high-water mark: a
   step whose tensors change size (the neighbourhoods' tokens, a short last
   batch) lands on pages another step left untouched. */
#define STEP_SLACK 1.1
/* What malloc keeps beside what it hands out: memory a finished model freed
   is reused, not always returned, and blocks of other sizes land beside it
   (measured: an ensemble of 4 on UMLS, 1.0 to 1.1 times the sum). */
#define MALLOC_SLACK 1.1

/* What the address space holds beyond the resident set (ulimit -v limits
   the address space): each thread's stack and, for a thread that allocates,
   malloc's arena of 64 MB reserved at once (glibc, 64-bit); and a tape's
   blocks in full, the chain doubling, up to twice its high-water mark.
   Measured: UMLS at width 1024 with --eval-every needs 310 MB resident and
   runs under ulimit -v of 440 MB, not 400. */
#define THREAD_ADDRESS_BYTES ((8.0 + 64.0) * 1048576.0)

void kgl_memory_needed(const kgl_memory_run *r, size_t value_bytes, kgl_memory_need *need)
{
    kgl_memory_plan p;
    kgl_trainer_plan(&r->cfg, &r->tc, &r->reg, r->n_train, r->ranked, value_bytes, &p);
    double n = r->cfg.n_entities, m = r->cfg.n_relations;
    /* the dataset: its triples, and the filter index of the known answers
       per (entity, relation or inverse) */
    double data = (2 * n * m + 1) * sizeof(int) + (double)r->triples * (sizeof(kgl_triple) + 2 * sizeof(int));
    /* Every model keeps its parameters, states and ranking scratch until the
       report; the models that train at once (jobs) each have a step's tape
       and, with --eval-every, a snapshot, freed when the model is done. */
    double model = MODEL_BYTES + p.parameters + p.states + 2 * p.ranking + p.examples;
    double training = STEP_SLACK * p.step + (r->selecting ? p.snapshot : 0);
    int jobs = r->jobs < r->members ? r->jobs : r->members;
    double allocated = data + (r->members > 1 ? p.mixture : 0) + r->members * model + jobs * training;
    need->resident = PROCESS_BYTES + r->threads * THREAD_BYTES + MALLOC_SLACK * allocated;
    need->address_space = need->resident + (r->threads - 1) * THREAD_ADDRESS_BYTES + jobs * p.step;
    need->parameters = r->members * p.parameters;
    need->attention = jobs * p.attention;
}
