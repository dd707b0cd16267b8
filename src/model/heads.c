/* heads.c — what a head looks at, measured on a forward pass: the one place
 * the layer's attention is read for people (the log's columns, kgl train's
 * report, kgl heads).
 *
 * Where the heads live, and why here: the training log measures these at
 * its logged steps from inside the run (run.c, through kgl_diag_measure in
 * diagnostics.c), and the model layer never calls into the studies above
 * it, so what a head looks at in one forward pass is a primitive of the
 * model layer: here. The study built on them (precision, top 3, ablation,
 * one question's attention and answers, a report of a saved or a trained
 * model) is src/studies/heads.c; kgl heads and kgl train print it.
 *
 *   full context   spec[h][r]: the mass head h, standing at i, puts on i's
 *                  true r-tails, averaged over the entities with r-tails
 *                  (kgl_specialisation; any layer's A_h)
 *   graph context  the weight head h puts on the edges of relation r in a
 *                  neighbourhood, averaged over the neighbourhoods with such
 *                  edges: one batch's segments (kgl_relation_attention) or a
 *                  model's evaluation neighbourhoods
 *                  (kgl_model_relation_attention)
 *   one question   the rows A_h[entity, :] (kgl_attention_rows), or the
 *                  question's neighbourhood and each layer's weights on it
 *                  (kgl_model_question_segment)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"
#include "internal.h"

/* ---- the full context ---------------------------------------------------------- */

void kgl_specialisation(const kgl_tails *tl, int heads, kgl_tensor *const *attn, double *spec)
{
    int n = tl->n_entities, m = tl->n_relations;
    for (int h = 0; h < heads; h++)
        for (int r = 0; r < m; r++) {
            double total = 0;
            int entities = 0;
            for (int i = 0; i < n; i++) {
                size_t key = (size_t)r * n + i;
                int lo = tl->offsets[key], hi = tl->offsets[key + 1];
                if (lo == hi) continue;
                const kgl_real *a = attn[h]->data + (size_t)i * n;
                for (int k = lo; k < hi; k++) total += a[tl->tails[k]];
                entities++;
            }
            spec[h * m + r] = entities ? total / entities : NAN;
        }
}

void kgl_attention_rows(const kgl_model *m, int entity, kgl_real *rows)
{
    int n = m->cfg.n_entities, H = m->cfg.heads;
    if (entity < 0 || entity >= n) kgl_die("kgl_attention_rows: entity %d out of range (%d entities)", entity, n);
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_model_context(m, &t, &f);
    for (int h = 0; h < H; h++) memcpy(rows + (size_t)h * n, f.attn[h]->data + (size_t)entity * n, n * sizeof(kgl_real));
    kgl_tape_free(&t);
}

/* ---- the neighbourhood context --------------------------------------------------- */

/* Σ over segments of what kgl_relation_attention averages: the weight on
   each relation's edges (mass) and the segments having one (count), rows of
   m each (row H, with_uniform: what uniform weights would put there), and
   the weight on the entity's own token (self, [H], or NULL); with the one
   segment's scratch. One allocation holds it all. */
typedef struct relation_tally {
    int heads, relations, rows; /* H, m, and the rows of mass and count: H, or H + 1 with uniform */
    double *mass, *count, *self;
    double *seg_mass; /* [m, H + 1]: a relation's weights in the segment at hand */
    int *seen_in, *order; /* [m] each: the segment a relation was last met in; the segment's relations */
} relation_tally;

static relation_tally relation_tally_new(int H, int m, bool with_uniform, double *self)
{
    int rows = with_uniform ? H + 1 : H;
    size_t cells = (size_t)rows * (size_t)m, doubles = 2 * cells + (size_t)m * (H + 1);
    double *block = kgl_xmalloc(doubles * sizeof(double) + (size_t)2 * m * sizeof(int));
    memset(block, 0, 2 * cells * sizeof(double));
    int *ints = (int *)(void *)(block + doubles);
    return (relation_tally){H, m, rows, block, block + cells, self, block + 2 * cells, ints, ints + m};
}

/* Adds nb's segments to the tally. One pass over a segment's edges: a
   relation's weights are summed in token order from its first edge, then
   added to mass once, relations in the order of their first edges. */
static void add_relation_attention(const kgl_neighbourhood *nb, const kgl_tensor *A, relation_tally *s)
{
    int H = s->heads, m = s->relations;
    for (int r = 0; r < m; r++) s->seen_in[r] = -1; /* segments are numbered anew in each nb */
    for (int b = 0; b < nb->n; b++) {
        int lo = nb->offsets[b], hi = nb->offsets[b + 1], n_rel = 0;
        if (s->self)
            for (int h = 0; h < H; h++) s->self[h] += A->data[(size_t)lo * H + h];
        for (int t = kgl_neighbourhood_first_edge(nb, b); t < hi; t++) { /* after the asked relation's token, if any */
            int r = nb->relation[t] % m;
            double *sum = s->seg_mass + (size_t)r * (H + 1);
            if (s->seen_in[r] != b) {
                s->seen_in[r] = b, s->order[n_rel++] = r;
                for (int h = 0; h <= H; h++) sum[h] = 0;
            }
            for (int h = 0; h < H; h++) sum[h] += A->data[(size_t)t * H + h];
            sum[H] += 1.0 / (hi - lo);
        }
        for (int k = 0; k < n_rel; k++) {
            int r = s->order[k];
            for (int h = 0; h < s->rows; h++) {
                s->mass[h * m + r] += s->seg_mass[(size_t)r * (H + 1) + h];
                s->count[h * m + r] += 1;
            }
        }
    }
}

/* Row h of the tally's averages: mass over count, NaN where no segment had the relation. */
static void relation_tally_mean(const relation_tally *s, int h, double *out)
{
    for (int r = 0; r < s->relations; r++) {
        size_t k = (size_t)h * (size_t)s->relations + (size_t)r;
        out[r] = s->count[k] > 0 ? s->mass[k] / s->count[k] : NAN;
    }
}

void kgl_relation_attention(const kgl_neighbourhood *nb, const kgl_tensor *A, int heads, int m, double *spec)
{
    relation_tally s = relation_tally_new(heads, m, false, NULL);
    add_relation_attention(nb, A, &s);
    for (int h = 0; h < heads; h++) relation_tally_mean(&s, h, spec + (size_t)h * m);
    free(s.mass);
}

/* kgl_model_relation_attention's sum over the blocks of evaluation's neighbourhoods. */
static void add_block(const kgl_forward *f, void *ctx) { add_relation_attention(f->neighbourhood, f->segment_attn, ctx); }

void kgl_model_relation_attention(const kgl_model *m, kgl_pool *pool, const kgl_triple *tr, int n_tr, double *spec,
                                  double *self, double *uniform)
{
    int H = m->cfg.heads, rels = m->cfg.n_relations;
    double self_sum[KGL_MAX_HEADS + 1] = {0};
    relation_tally sums = relation_tally_new(H, rels, true, self_sum); /* row H: uniform weights over each segment */
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
    kgl_layer_in_blocks(m, pool, entity, asked, n, NULL, add_block, &sums); /* the weights only */
    free(entity);
    for (int h = 0; h < H; h++) relation_tally_mean(&sums, h, spec + (size_t)h * rels);
    if (self)
        for (int h = 0; h < H; h++) self[h] = n ? self_sum[h] / n : NAN;
    if (uniform) relation_tally_mean(&sums, H, uniform);
    free(sums.mass);
}

/* ---- one question of a graph model ------------------------------------------------ */

void kgl_model_question_segment(const kgl_model *m, int entity, int row, kgl_segment_view *out)
{
    kgl_model_graph(m); /* no graph: a clear death before any block */
    int H = m->cfg.heads, L = m->cfg.layers;
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    /* as evaluation asks the question: the fixed rule, without row's edges under --hide-asked-relation */
    kgl_questions q = {.n = 1, .entity = &entity, .rel = &row, .all_answers = m->cfg.hide_asked};
    kgl_forward f;
    kgl_layer_forward(m, &t, &q, NULL, &f);
    const kgl_neighbourhood *nb = f.neighbourhood;
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
