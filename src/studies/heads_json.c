/* heads_json.c — the heads study as JSON (`kgl heads --json`): a
 * full-context study (spec and argmax precision by relation, deeper layers,
 * each entity's top 3, ablation), a graph-context one (the weight by
 * relation beside uniform, on the entity itself, ablation) and one
 * question (where each head looks from it, the readout's answers). The
 * fields of the object the caller opened; through io's JSON writer. */
#include <math.h>

#include "kgl/studies.h"

/* n numbers, x[0], x[stride], ... as a JSON array. */
static void json_numbers(kgl_json_writer *w, const double *x, int n, int stride)
{
    kgl_json_begin_array(w);
    for (int k = 0; k < n; k++) kgl_json_put_number(w, x[(size_t)k * stride]);
    kgl_json_end_array(w);
}

/* One answer of the readout: {"rank","entity","score","prob","true_tail"}. */
static void json_answer(kgl_json_writer *w, int rank, const char *entity, double score, double prob, bool true_tail)
{
    kgl_json_begin_object(w);
    kgl_json_field_int(w, "rank", rank);
    kgl_json_field_string(w, "entity", entity);
    kgl_json_field_number(w, "score", score);
    kgl_json_field_number(w, "prob", prob);
    kgl_json_field_bool(w, "true_tail", true_tail);
    kgl_json_end_object(w);
}

/* "ablation":{["triples":N,]"mrr":…,"heads":[{"head","mrr","drop"},...]}
   (triples < 0: not written, the full study ablates on every triple). */
static void json_ablation(kgl_json_writer *w, int triples, double mrr, const double *ablated_mrr, int heads)
{
    kgl_json_key(w, "ablation");
    kgl_json_begin_object(w);
    if (triples >= 0) kgl_json_field_int(w, "triples", triples);
    kgl_json_field_number(w, "mrr", mrr);
    kgl_json_key(w, "heads");
    kgl_json_begin_array(w);
    for (int h = 0; h < heads; h++) {
        kgl_json_begin_object(w);
        kgl_json_field_int(w, "head", h);
        kgl_json_field_number(w, "mrr", ablated_mrr[h]);
        kgl_json_field_number(w, "drop", mrr - ablated_mrr[h]);
        kgl_json_end_object(w);
    }
    kgl_json_end_array(w);
    kgl_json_end_object(w);
}

/* A stack's deeper layers: "deeper_layers":[{"layer":1,"spec":{REL:[...]}},...]. */
static void json_deeper_layers(kgl_json_writer *w, const kgl_heads_full *r, const kgl_dataset *ds, const bool *use)
{
    int H = r->heads, nr = r->m;
    kgl_json_key(w, "deeper_layers");
    kgl_json_begin_array(w);
    for (int l = 1; l < r->layers; l++) {
        const double *spec = r->spec + (size_t)l * H * nr;
        kgl_json_begin_object(w);
        kgl_json_field_int(w, "layer", l);
        kgl_json_key(w, "spec");
        kgl_json_begin_object(w);
        for (int k = 0; k < nr; k++) {
            if ((use && !use[k]) || !r->with_tails[k]) continue;
            kgl_json_key(w, ds->relation_names[k]);
            json_numbers(w, spec + k, H, nr);
        }
        kgl_json_end_object(w);
        kgl_json_end_object(w);
    }
    kgl_json_end_array(w);
}

/* "top3":[{ENTITY:[[name, weight], ...] of its three most attended, ...} per head] */
static void json_top3(kgl_json_writer *w, const kgl_heads_full *r, char *const *names)
{
    int H = r->heads, n = r->n;
    kgl_json_key(w, "top3");
    kgl_json_begin_array(w);
    for (int h = 0; h < H; h++) {
        kgl_json_begin_object(w);
        for (int i = 0; i < n; i++) {
            const int *idx = r->top3 + ((size_t)h * n + i) * 3;
            const double *weight = r->top3_weight + ((size_t)h * n + i) * 3;
            kgl_json_key(w, names[i]);
            kgl_json_begin_array(w);
            for (int k = 0; k < 3 && idx[k] >= 0; k++) {
                kgl_json_begin_array(w);
                kgl_json_put_string(w, names[idx[k]]);
                kgl_json_put_number(w, weight[k]);
                kgl_json_end_array(w);
            }
            kgl_json_end_array(w);
        }
        kgl_json_end_object(w);
    }
    kgl_json_end_array(w);
}

void kgl_heads_full_json(kgl_json_writer *w, const kgl_heads_full *r, const kgl_dataset *ds, const bool *use_relation)
{
    int H = r->heads, nr = r->m;
    kgl_json_key(w, "relations");
    kgl_json_begin_object(w);
    for (int k = 0; k < nr; k++) {
        if ((use_relation && !use_relation[k]) || !r->with_tails[k]) continue;
        kgl_json_key(w, ds->relation_names[k]);
        kgl_json_begin_object(w);
        kgl_json_field_int(w, "entities", r->with_tails[k]);
        kgl_json_field_number(w, "baseline", r->baseline[k]);
        kgl_json_key(w, "spec");
        json_numbers(w, r->spec + k, H, nr);
        kgl_json_key(w, "argmax_precision");
        json_numbers(w, r->precision + k, H, nr);
        kgl_json_end_object(w);
    }
    kgl_json_end_object(w);
    if (r->layers > 1) json_deeper_layers(w, r, ds, use_relation);
    json_top3(w, r, ds->entity_names);
    json_ablation(w, -1, r->mrr, r->ablated_mrr, H);
}

void kgl_heads_graph_json(kgl_json_writer *w, const kgl_heads_graph *g, const kgl_dataset *ds,
                          const bool *use_relation, int neighbours)
{
    int H = g->heads, nr = g->m;
    kgl_json_field_string(w, "context", "graph");
    kgl_json_field_int(w, "neighbours", neighbours);
    kgl_json_key(w, "relations");
    kgl_json_begin_object(w);
    for (int r = 0; r < nr; r++) {
        if ((use_relation && !use_relation[r]) || isnan(g->uniform[r])) continue;
        kgl_json_key(w, ds->relation_names[r]);
        kgl_json_begin_object(w);
        kgl_json_field_number(w, "uniform", g->uniform[r]);
        kgl_json_key(w, "mass");
        json_numbers(w, g->mass + r, H, nr);
        kgl_json_end_object(w);
    }
    kgl_json_end_object(w);
    kgl_json_key(w, "self");
    json_numbers(w, g->self, H, 1);
    json_ablation(w, g->ablation_triples, g->mrr, g->ablated_mrr, H);
}

/* "query":{"head":HEAD,"relation":REL} */
static void json_query(kgl_json_writer *w, const kgl_heads_question *q, const kgl_dataset *ds)
{
    char rel[600];
    kgl_relation_row_name(ds, q->row, rel, sizeof rel);
    kgl_json_key(w, "query");
    kgl_json_begin_object(w);
    kgl_json_field_string(w, "head", ds->entity_names[q->entity]);
    kgl_json_field_string(w, "relation", rel);
    kgl_json_end_object(w);
}

/* A full-context question: its true tails, every entity's attention by
   head (most attended first) and the top answers. */
static void full_question_json(kgl_json_writer *w, const kgl_heads_question *q, const kgl_dataset *ds, int top)
{
    char *const *names = ds->entity_names;
    json_query(w, q, ds);
    kgl_json_key(w, "true_tails");
    kgl_json_begin_array(w);
    for (int k = 0; k < q->n_true; k++) kgl_json_put_string(w, names[q->truth[k]]);
    kgl_json_end_array(w);
    kgl_json_key(w, "attention");
    kgl_json_begin_array(w);
    for (int r = 0; r < q->n; r++) {
        int j = q->by_attn[r];
        kgl_json_begin_object(w);
        kgl_json_field_string(w, "entity", names[j]);
        kgl_json_field_bool(w, "true_tail", q->is_true[j]);
        kgl_json_key(w, "heads");
        kgl_json_begin_array(w);
        for (int h = 0; h < q->heads; h++) kgl_json_put_number(w, q->attn[(size_t)h * q->n + j]);
        kgl_json_end_array(w);
        kgl_json_field_number(w, "mean", q->mean[j]);
        kgl_json_end_object(w);
    }
    kgl_json_end_array(w);
    kgl_json_key(w, "answers");
    kgl_json_begin_array(w);
    int n_ans = top < q->n ? top : q->n;
    for (int k = 0; k < n_ans; k++) {
        int j = q->by_score[k];
        json_answer(w, k + 1, names[j], q->scores[j], q->probs[j], q->is_true[j]);
    }
    kgl_json_end_array(w);
}

/* One token of a graph question: its entity (or the asked relation), the
   relation of the edge that led to it, whether it is a true answer, and
   each layer's weights by head. */
static void json_token(kgl_json_writer *w, const kgl_heads_question *q, const kgl_dataset *ds, int t)
{
    const kgl_segment_view *sv = &q->segment;
    int T = sv->n_tokens, H = sv->heads;
    char rel[600];
    kgl_json_begin_object(w);
    int asked = kgl_segment_asked_relation(ds, sv, t);
    if (asked >= 0) { /* the asked relation's token (--relation-token): no entity */
        kgl_json_field_null(w, "entity");
        kgl_relation_row_name(ds, asked, rel, sizeof rel);
        kgl_json_field_string(w, "asked_relation", rel);
    } else {
        kgl_json_field_string(w, "entity", ds->entity_names[sv->entity[t]]);
    }
    if (t == 0 || asked >= 0) { /* the question's own entity, or its relation: no edge led to it */
        kgl_json_field_null(w, "relation");
    } else {
        kgl_relation_row_name(ds, sv->relation[t], rel, sizeof rel);
        kgl_json_field_string(w, "relation", rel);
    }
    kgl_json_field_bool(w, "true_answer", kgl_segment_token_is(sv, t, q->is_true));
    kgl_json_key(w, "layers");
    kgl_json_begin_array(w);
    for (int l = 0; l < sv->layers; l++) json_numbers(w, sv->weight + ((size_t)l * T + t) * H, H, 1);
    kgl_json_end_array(w);
    kgl_json_end_object(w);
}

void kgl_heads_question_json(kgl_json_writer *w, const kgl_heads_question *q, const kgl_dataset *ds, int top)
{
    const kgl_segment_view *sv = &q->segment;
    if (!sv->weight) { /* a full context */
        full_question_json(w, q, ds, top);
        return;
    }
    kgl_json_field_int(w, "layers", sv->layers);
    kgl_json_field_string(w, "context", "graph");
    json_query(w, q, ds);
    kgl_json_field_number(w, "uniform", 1.0 / sv->n_tokens);
    kgl_json_key(w, "tokens");
    kgl_json_begin_array(w);
    for (int t = 0; t < sv->n_tokens; t++) json_token(w, q, ds, t);
    kgl_json_end_array(w);
    kgl_json_key(w, "answers");
    kgl_json_begin_array(w);
    for (int k = 0; k < q->n_answers; k++) {
        const kgl_answer *a = &q->answers[k];
        json_answer(w, k + 1, ds->entity_names[a->entity], a->score, a->prob, q->is_true[a->entity]);
    }
    kgl_json_end_array(w);
}
