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

/* The two factors of a query's vector v = left ⊙ mid and the candidates it
   is multiplied with, as kgl_evaluate takes them (src/model/train.c). Returns
   the candidate rows: E, or C for a head query without inverse rows. */
static const kgl_real *query_factors(const kgl_model *m, const kgl_real *C, int entity, int relation_row,
                                   const kgl_real **left, const kgl_real **mid)
{
    int d = m->cfg.dim, n_rel = m->cfg.n_relations;
    const kgl_real *R = m->relation_emb->data, *E = m->entity_emb->data;
    if (relation_row < n_rel || m->cfg.reciprocal) { /* (entity, row, ?): C[i] ⊙ R[row] against every E[j] */
        *left = C + (size_t)entity * d;
        *mid = R + (size_t)relation_row * d;
        return E;
    }
    /* no inverse rows: (?, r, t) scores C[j]·R[r]·E[t], R[r] ⊙ E[t] against every C[j] */
    *left = R + (size_t)(relation_row - n_rel) * d;
    *mid = E + (size_t)entity * d;
    return C;
}

/* scores[k n + j] for queries k < count that share their candidates: the
   product kgl_evaluate computes (v = left ⊙ mid, then kgl_gemm_nt against
   every candidate row), whose every element is one sum in k order whatever
   the shape, so any number of rows gives the evaluation's bits. vecs has
   room for count d-vectors. A --query-relation model's states are the
   queries' own (kgl_model_query_states: a state is a function of its query
   alone, so the evaluation's bits too), in place of rows of C. */
static void score_rows(const kgl_model *m, const kgl_real *C, kgl_pool *pool, kgl_candidate_side *side, int count,
                       const int *entity, const int *relation_row, kgl_real *vecs, kgl_real *scores)
{
    int n = m->cfg.n_entities, d = m->cfg.dim;
    const kgl_real *cand = NULL;
    kgl_real *asked = NULL;
    if (m->cfg.query_relation && count) {
        asked = kgl_xmalloc((size_t)count * d * sizeof(kgl_real));
        kgl_model_query_states(m, pool, entity, relation_row, count, asked);
    }
    for (int k = 0; k < count; k++) {
        const kgl_real *left, *mid;
        if (asked) { /* reciprocal (it requires them): the question's state ⊙ R[row] against every E[j] */
            left = asked + (size_t)k * d;
            mid = m->relation_emb->data + (size_t)relation_row[k] * d;
            cand = m->entity_emb->data;
        } else
            cand = query_factors(m, C, entity[k], relation_row[k], &left, &mid);
        /* the complex readout is reciprocal-only: (left, mid) = (C[i], R[row]) */
        kgl_readout_query(m->cfg.readout == KGL_READOUT_COMPLEX, left, mid, vecs + (size_t)k * d, d);
    }
    if (count) kgl_gemm_nt(pool, count, n, d, vecs, d, cand, d, scores, n, KGL_SET);
    if (asked) kgl_add_candidate_side(m, pool, side, count, entity, relation_row, scores); /* λ = 0: nothing */
    free(asked);
}

static void scores_from_states(const kgl_model *m, const kgl_real *C, int entity, int relation_row, kgl_real *scores)
{
    kgl_real *v = kgl_xmalloc((size_t)m->cfg.dim * sizeof(kgl_real));
    kgl_pool *pool = kgl_pool_create(1);
    kgl_candidate_side side;
    kgl_candidate_side_init(&side);
    score_rows(m, C, pool, &side, 1, &entity, &relation_row, v, scores);
    kgl_candidate_side_free(&side);
    kgl_pool_free(pool);
    free(v);
}

/* C of the current parameters, or the caller's; a --query-relation model
   reads its questions' own states (score_rows) and needs none. */
static const kgl_real *states_or_own(const kgl_model *m, const kgl_real *states, kgl_real **own)
{
    *own = NULL;
    if (states || m->cfg.query_relation) return states;
    *own = kgl_xmalloc((size_t)m->cfg.n_entities * m->cfg.dim * sizeof(kgl_real));
    kgl_context_states(m, *own);
    return *own;
}

void kgl_predict_scores(const kgl_model *m, const kgl_real *states, int entity, int relation_row, kgl_real *scores)
{
    check_query(m, entity, relation_row, "kgl_predict_scores");
    kgl_real *own;
    const kgl_real *C = states_or_own(m, states, &own);
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

/* Checks that the members can be asked together (they answer over the same
   entities and relation rows). */
static void check_members(const kgl_model *const *models, int members, const char *fn)
{
    if (members < 1 || members > KGL_MAX_ENSEMBLE) kgl_die("%s: %d members (1 to %d)", fn, members, KGL_MAX_ENSEMBLE);
    for (int k = 1; k < members; k++) {
        const char *why = kgl_ensemble_mismatch(&models[0]->cfg, &models[k]->cfg);
        if (why) kgl_die("%s: member %d has %s", fn, k, why);
    }
}

int kgl_predict(const kgl_model *m, const kgl_real *states, const kgl_dataset *known, int entity, int relation_row,
                int top_k, bool filter, kgl_answer *out)
{
    return kgl_predict_ensemble(&m, &states, 1, known, entity, relation_row, top_k, filter, out);
}

int kgl_predict_ensemble(const kgl_model *const *models, const kgl_real *const *states, int members,
                         const kgl_dataset *known, int entity, int relation_row, int top_k, bool filter,
                         kgl_answer *out)
{
    const kgl_model *m = models[0];
    int n = m->cfg.n_entities;
    check_members(models, members, "kgl_predict");
    check_query(m, entity, relation_row, "kgl_predict");
    if (top_k < 1 || top_k > n) kgl_die("kgl_predict: top_k %d out of range 1..%d", top_k, n);
    if (known && (known->n_entities != n || known->n_relations != m->cfg.n_relations))
        kgl_die("kgl_predict: the known triples have %d entities and %d relations, the model %d and %d",
                known->n_entities, known->n_relations, n, m->cfg.n_relations);
    kgl_real *scores = kgl_xmalloc((size_t)n * sizeof(kgl_real)), *probs = kgl_xmalloc((size_t)n * sizeof(kgl_real));
    if (members == 1) {
        kgl_predict_scores(m, states[0], entity, relation_row, scores);
        kgl_scores_softmax(scores, n, probs); /* inspect.c */
    } else { /* the mean probability, and its log as the score */
        memset(probs, 0, (size_t)n * sizeof(kgl_real));
        for (int k = 0; k < members; k++) {
            kgl_predict_scores(models[k], states[k], entity, relation_row, scores);
            kgl_mixture_add(scores, n, members, probs);
        }
        for (int j = 0; j < n; j++) scores[j] = log(probs[j]);
    }
    /* the filter key is the evaluation's: (entity, row), rows m + r the inverse */
    int n_known = 0;
    const int *answers = known ? kgl_dataset_known(known, entity, relation_row, &n_known) : NULL;
    scored *order = kgl_xmalloc((size_t)n * sizeof *order);
    for (int j = 0; j < n; j++) order[j] = (scored){members == 1 ? scores[j] : probs[j], j};
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

/* ---- every triple's rank, for error analysis ---------------------------- */

#define RANK_CHUNK 256 /* queries scored by one product, as the evaluation does */

/* The best candidate that is neither the target nor in the sorted list
   known[0..n_known): highest score, equal scores by entity id. */
static int top_wrong(const kgl_real *scores, int n, int target, const int *known, int n_known)
{
    int best = -1, next = 0;
    for (int j = 0; j < n; j++) {
        while (next < n_known && known[next] < j) next++;
        if (j == target || (next < n_known && known[next] == j)) continue;
        if (best < 0 || scores[j] > scores[best]) best = j;
    }
    return best;
}

void kgl_rank_triples(const kgl_model *m, const kgl_real *states, const kgl_dataset *ds, const kgl_triple *tr, int n,
                      kgl_ranked *out)
{
    kgl_rank_triples_ensemble(&m, &states, 1, ds, tr, n, out);
}

void kgl_rank_triples_ensemble(const kgl_model *const *models, const kgl_real *const *states, int members,
                               const kgl_dataset *ds, const kgl_triple *tr, int n, kgl_ranked *out)
{
    const kgl_model *m = models[0];
    check_members(models, members, "kgl_rank_triples");
    int n_ent = m->cfg.n_entities, n_rel = m->cfg.n_relations, d = 0;
    if (ds && (ds->n_entities != n_ent || ds->n_relations != n_rel))
        kgl_die("kgl_rank_triples: the triples have %d entities and %d relations, the model %d and %d",
                ds->n_entities, ds->n_relations, n_ent, n_rel);
    kgl_real *own[KGL_MAX_ENSEMBLE];
    const kgl_real *C[KGL_MAX_ENSEMBLE];
    for (int k = 0; k < members; k++) {
        C[k] = states_or_own(models[k], states[k], &own[k]);
        if (models[k]->cfg.dim > d) d = models[k]->cfg.dim;
    }
    kgl_real *vecs = kgl_xmalloc((size_t)RANK_CHUNK * d * sizeof(kgl_real));
    kgl_real *scores = kgl_xmalloc((size_t)RANK_CHUNK * n_ent * sizeof(kgl_real));
    kgl_real *mix = members > 1 ? kgl_xmalloc((size_t)RANK_CHUNK * n_ent * sizeof(kgl_real)) : NULL;
    kgl_real *probs = members == 1 ? kgl_xmalloc((size_t)n_ent * sizeof(kgl_real)) : NULL; /* one row's softmax */
    int entity[RANK_CHUNK], row[RANK_CHUNK], target[RANK_CHUNK];
    kgl_pool *pool = kgl_pool_create(1);
    kgl_candidate_side side[KGL_MAX_ENSEMBLE];
    for (int k = 0; k < members; k++) kgl_candidate_side_init(&side[k]);
    /* the head questions by relation, then in triple order (each relation's
       candidate states once: kgl_add_candidate_side); each keeps its place in out */
    int *by_rel = kgl_xmalloc((size_t)2 * (n > 0 ? n : 1) * sizeof(int)); /* (relation, index) pairs */
    for (int k = 0; k < n; k++) by_rel[2 * k] = tr[k].rel, by_rel[2 * k + 1] = k;
    qsort(by_rel, (size_t)n, 2 * sizeof(int), kgl_cmp_int_pair);
    /* tails (h, r, ?) first, then heads (?, r, t) as (t, row m + r, ?): the
       evaluation's queries and its filter keys */
    for (int dir = 0; dir < 2; dir++) {
        for (int k0 = 0; k0 < n; k0 += RANK_CHUNK) {
            int count = n - k0 < RANK_CHUNK ? n - k0 : RANK_CHUNK;
            for (int k = 0; k < count; k++) {
                const kgl_triple *t = &tr[dir == 0 ? k0 + k : by_rel[2 * (k0 + k) + 1]];
                entity[k] = dir == 0 ? t->head : t->tail;
                row[k] = dir == 0 ? t->rel : n_rel + t->rel;
                target[k] = dir == 0 ? t->tail : t->head;
            }
            const kgl_real *ranked = scores;
            if (members == 1) {
                score_rows(m, C[0], pool, &side[0], count, entity, row, vecs, scores);
            } else { /* ranked on the mean probability, as kgl_evaluate_ensemble */
                memset(mix, 0, (size_t)count * n_ent * sizeof(kgl_real));
                for (int mb = 0; mb < members; mb++) {
                    score_rows(models[mb], C[mb], pool, &side[mb], count, entity, row, vecs, scores);
                    for (int k = 0; k < count; k++)
                        kgl_mixture_add(scores + (size_t)k * n_ent, n_ent, members, mix + (size_t)k * n_ent);
                }
                ranked = mix;
            }
            for (int k = 0; k < count; k++) {
                const kgl_real *s = ranked + (size_t)k * n_ent;
                int n_known = 0;
                const int *known = ds ? kgl_dataset_known(ds, entity[k], row[k], &n_known) : NULL;
                kgl_ranked *o = &out[(size_t)dir * n + (dir == 0 ? k0 + k : by_rel[2 * (k0 + k) + 1])];
                o->rank = kgl_filtered_rank(s, n_ent, target[k], known, n_known);
                o->top_wrong = top_wrong(s, n_ent, target[k], known, n_known);
                /* one model's scores; the log of several models' mean probability */
                o->score = members == 1 ? s[target[k]] : log(s[target[k]]);
                if (members == 1) kgl_scores_softmax(s, n_ent, probs); /* as kgl_predict: the same bits */
                o->prob = members == 1 ? probs[target[k]] : s[target[k]];
                o->top_wrong_score = o->top_wrong < 0  ? NAN
                                     : members == 1    ? s[o->top_wrong]
                                                       : log(s[o->top_wrong]);
            }
        }
    }
    for (int k = 0; k < members; k++) kgl_candidate_side_free(&side[k]);
    free(by_rel);
    kgl_pool_free(pool);
    free(probs);
    free(mix);
    free(scores);
    free(vecs);
    for (int k = 0; k < members; k++) free(own[k]);
}

/* Triples ranked at a time, between two progress reports. */
#define RANKS_SLICE 1024

void kgl_ranks_write_header(FILE *f)
{
    fputs("split\thead\trelation\ttail\tdirection\trank\tscore\ttop_wrong\ttop_wrong_score\n", f);
}

/* One ranked query's row: the triple, its direction, rank and score, the best other answer. */
static void ranks_row(FILE *f, const kgl_dataset *ds, const char *split, const kgl_triple *t, bool tail,
                      const kgl_ranked *x)
{
    char *const *ent = ds->entity_names;
    fprintf(f, "%s\t", split);
    /* names hold no tab or newline (the triples reader splits on them): only a quote needs quoting */
    kgl_csv_field(f, ent[t->head], "\"");
    fputc('\t', f);
    kgl_csv_field(f, ds->relation_names[t->rel], "\"");
    fputc('\t', f);
    kgl_csv_field(f, ent[t->tail], "\"");
    /* 17 significant digits: each number reads back to the same double */
    fprintf(f, "\t%s\t%.17g\t%.17g\t", tail ? "tail" : "head", x->rank, x->score);
    if (x->top_wrong >= 0) {
        kgl_csv_field(f, ent[x->top_wrong], "\"");
        fprintf(f, "\t%.17g\n", x->top_wrong_score);
    } else {
        fputs("\t\n", f);
    }
}

bool kgl_ranks_write(FILE *f, const kgl_model *const *models, const kgl_real *const *states, int members,
                     const kgl_dataset *ds, const char *split, const kgl_triple *tr, int n,
                     void (*progress)(void *ctx, long done, long total), void *ctx)
{
    if (n == 0) return true;
    kgl_ranked *r = malloc((size_t)2 * n * sizeof *r), *slice = malloc(2 * RANKS_SLICE * sizeof *slice);
    if (!r || !slice) {
        free(r);
        free(slice);
        return false;
    }
    /* a slice at a time, for the progress line: each triple's ranks are its own */
    for (int a = 0; a < n; a += RANKS_SLICE) {
        int len = n - a < RANKS_SLICE ? n - a : RANKS_SLICE;
        kgl_rank_triples_ensemble(models, states, members, ds, tr + a, len, slice);
        memcpy(r + a, slice, (size_t)len * sizeof *r); /* tails first, then heads, as the file lists them */
        memcpy(r + n + a, slice + len, (size_t)len * sizeof *r);
        if (progress) progress(ctx, 2L * (a + len), 2L * n);
    }
    free(slice);
    for (int k = 0; k < 2 * n; k++) ranks_row(f, ds, split, &tr[k % n], k < n, &r[k]);
    free(r);
    return true;
}
