/* inspect.c — what a trained layer does for one query: where every head
 * looks from an entity, the readout's scores for (entity, relation, ?), the
 * contextual states C, and the names of the relation rows (a relation and,
 * in reciprocal mode, its inverse "NAME^-1"). Read-only: nothing here
 * changes the model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

#define INVERSE_SUFFIX "^-1"

void kgl_relation_row_name(const kgl_dataset *ds, int row, char *out, size_t cap)
{
    int m = ds->n_relations;
    if (row < 0 || row >= 2 * m) kgl_die("relation row %d out of range (%d relations)", row, m);
    if (row < m)
        snprintf(out, cap, "%s", ds->relation_names[row]);
    else
        snprintf(out, cap, "%s" INVERSE_SUFFIX, ds->relation_names[row - m]);
}

int kgl_relation_row_id(const kgl_dataset *ds, const kgl_config *cfg, const char *name)
{
    size_t n = strlen(name), k = strlen(INVERSE_SUFFIX);
    if (n > k && strcmp(name + n - k, INVERSE_SUFFIX) == 0) {
        if (!cfg->reciprocal) return -1; /* no inverse rows were trained */
        char *base = kgl_strdup(name);
        base[n - k] = 0;
        int r = kgl_dataset_relation_id(ds, base);
        free(base);
        return r < 0 ? -1 : ds->n_relations + r;
    }
    return kgl_dataset_relation_id(ds, name);
}

/* One forward pass without a tape record; the caller frees the tape. */
static void forward(const kgl_model *m, kgl_tape *t, kgl_forward *f)
{
    kgl_tape_init(t);
    t->recording = false;
    kgl_model_context(m, t, f);
}

void kgl_attention_rows(const kgl_model *m, int entity, double *rows)
{
    int n = m->cfg.n_entities, H = m->cfg.heads;
    if (entity < 0 || entity >= n) kgl_die("kgl_attention_rows: entity %d out of range (%d entities)", entity, n);
    kgl_tape t;
    kgl_forward f;
    forward(m, &t, &f);
    for (int h = 0; h < H; h++) memcpy(rows + (size_t)h * n, f.attn[h]->data + (size_t)entity * n, n * sizeof(double));
    kgl_tape_free(&t);
}

void kgl_context_states(const kgl_model *m, double *states)
{
    kgl_tape t;
    kgl_forward f;
    forward(m, &t, &f);
    memcpy(states, f.context->data, (size_t)m->cfg.n_entities * m->cfg.dim * sizeof(double));
    kgl_tape_free(&t);
}

void kgl_query_scores(const kgl_model *m, const double *states, int entity, int rel_row, double *scores)
{
    int n = m->cfg.n_entities, d = m->cfg.dim;
    if (entity < 0 || entity >= n) kgl_die("kgl_query_scores: entity %d out of range (%d entities)", entity, n);
    if (rel_row < 0 || rel_row >= kgl_config_relation_rows(&m->cfg))
        kgl_die("kgl_query_scores: relation row %d out of range", rel_row);
    /* the readout of MODEL.md: score[j] = Σ_c C[i,c] R[r,c] E[j,c] */
    double *v = kgl_xmalloc((size_t)d * sizeof(double));
    const double *c = states + (size_t)entity * d, *r = m->relation_emb->data + (size_t)rel_row * d;
    for (int k = 0; k < d; k++) v[k] = c[k] * r[k];
    for (int j = 0; j < n; j++) {
        const double *e = m->entity_emb->data + (size_t)j * d;
        double s = 0;
        for (int k = 0; k < d; k++) s += v[k] * e[k];
        scores[j] = s;
    }
    free(v);
}

void kgl_scores_softmax(const double *scores, int n, double *probs)
{
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < n; j++) mx = fmax(mx, scores[j]);
    for (int j = 0; j < n; j++) sum += probs[j] = exp(scores[j] - mx);
    for (int j = 0; j < n; j++) probs[j] /= sum;
}

int kgl_true_answers(const kgl_triple *tr, int n_triples, int n_relations, int entity, int rel_row, int *out,
                     int cap)
{
    bool inverse = rel_row >= n_relations;
    int rel = inverse ? rel_row - n_relations : rel_row, count = 0;
    for (int k = 0; k < n_triples; k++) {
        if (tr[k].rel != rel || (inverse ? tr[k].tail : tr[k].head) != entity) continue;
        int answer = inverse ? tr[k].head : tr[k].tail;
        bool seen = false;
        for (int q = 0; q < count; q++) seen |= out[q] == answer;
        if (seen) continue;
        if (count == cap) break;
        out[count++] = answer;
    }
    return count;
}
