/* heads_text.c — the heads study as the text `kgl heads` prints: a
 * full-context study (spec and argmax precision by relation, each deeper
 * layer's spec, each entity's top 3, ablation), a graph-context one (the
 * weight by relation beside uniform, on the entity itself, ablation) and one
 * question (where each head looks from it, beside the readout's answers).
 * Written to the FILE* given (its JSON: heads_json.c, its pictures:
 * heads_svg.c), so a C program linking libkgl prints what kgl heads prints. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/studies.h"
#include "engine/internal.h"

/* A stack's deeper layers (full context): spec[h][r] of each layer l ≥ 1,
   where head h of layer l, at entity i's state, puts its weight over the
   entities' states, against the same baseline (layer 0's table is above). */
static void write_deeper_layers(FILE *f, const kgl_heads_text *t, const kgl_heads_full *rep, int w)
{
    int H = rep->heads, nr = rep->m;
    for (int l = 1; l < rep->layers; l++) {
        const double *spec = rep->spec + (size_t)l * H * nr;
        fprintf(f, "\nlayer %d (over the states of layer %d): specialisation\n%-*s %8s", l, l - 1, w, "relation", "baseline");
        for (int h = 0; h < H; h++) fprintf(f, "  spec h%-2d", h);
        fprintf(f, "\n");
        for (int r = 0; r < nr; r++) {
            if (!t->use_relation[r] || !rep->with_tails[r]) continue;
            kgl_table_cell(f, t->ds->relation_names[r], -w);
            fprintf(f, " %8.3f", rep->baseline[r]);
            for (int h = 0; h < H; h++) fprintf(f, "  %8.3f", spec[h * nr + r]);
            fprintf(f, "\n");
        }
    }
}

/* ---- the neighbourhood context -------------------------------------------------
 * A graph model's heads look at edges, not at all entities: where each head's
 * weight goes, by the relation of the attended edge, over every entity's
 * evaluation neighbourhood (kgl_model_relation_attention), beside what uniform
 * weights would put there; the weight a head keeps on the entity itself; and
 * head ablation on (at most KGL_HEADS_ABLATION_TRIPLES of) the training
 * triples (kgl_heads_graph_measure). */

void kgl_heads_graph_write(FILE *f, const kgl_heads_text *t, const kgl_heads_graph *g)
{
    int H = g->heads, nr = g->m;
    int w = kgl_relations_width(t->ds, t->use_relation, 40);
    fprintf(f, "%s: step %ld, %d heads, d_model %d, neighbourhoods of at most %d edges; %d training triples\n\n",
           t->path, t->step, H, t->cfg->dim, t->cfg->neighbours, t->n_train);
    fprintf(f, "where each head's weight goes, by the relation of the attended edge (either direction): the mean\n"
           "over the entities whose neighbourhood has such an edge of the weight on those edges; uniform =\n"
           "the same for equal weights over the neighbourhood (the entity itself included)\n\n");
    fprintf(f, "%-*s %8s", w, "relation", "uniform");
    for (int h = 0; h < H; h++) {
        char col[24];
        snprintf(col, sizeof col, "head %d", h);
        fprintf(f, "  %8s", col);
    }
    fprintf(f, "\n");
    for (int r = 0; r < nr; r++) {
        if (!t->use_relation[r] || isnan(g->uniform[r])) continue;
        kgl_table_cell(f, t->ds->relation_names[r], -w);
        fprintf(f, " %8.3f", g->uniform[r]);
        for (int h = 0; h < H; h++) fprintf(f, "  %8.3f", g->mass[h * nr + r]);
        fprintf(f, "\n");
    }
    fprintf(f, "%-*s %8s", w, "(itself)", "");
    for (int h = 0; h < H; h++) fprintf(f, "  %8.3f", g->self[h]);
    fprintf(f, "\n\nhead ablation: MRR (both directions) on the first %d training triples with every head %.4f\n"
           "%-6s %12s %8s\n", g->ablation_triples, g->mrr, "head", "MRR without", "drop");
    for (int h = 0; h < H; h++) fprintf(f, "%-6d %12.4f %8.4f\n", h, g->ablated_mrr[h], g->mrr - g->ablated_mrr[h]);
}

/* A full-context question: its true answers, then the rows of attention
   beside the readout's top answers. */
static void write_full_question(FILE *f, const kgl_heads_text *t, const kgl_heads_question *q, const char *rel_name,
                                int top)
{
    char *const *names = t->ds->entity_names;
    const char *head = names[q->entity];
    fprintf(f, "%s: step %ld, %d heads; query (%s, %s, ?)\n", t->path, t->step, q->heads, head, rel_name);
    fprintf(f, "true answers of (%s, %s, ?) in the training triples (marked *): ", head, rel_name);
    if (!q->n_true) fprintf(f, "none");
    for (int k = 0; k < q->n_true; k++) fprintf(f, "%s%s", k ? ", " : "", names[q->truth[k]]);
    fprintf(f, "\n\n");

    int *rows = kgl_xmalloc((size_t)q->n * sizeof(int));
    double rest_max; /* the largest mean attention left out */
    int n_rows = kgl_heads_question_rows(q, top, rows, &rest_max), n_ans = top < q->n ? top : q->n;
    /* column widths from the names shown, so the two tables line up */
    int ew = 6, aw = 6;
    for (int k = 0; k < n_rows; k++) ew = fmax(ew, kgl_table_width(names[rows[k]]) + 2);
    for (int k = 0; k < n_ans; k++) aw = fmax(aw, kgl_table_width(names[q->by_score[k]]) + 2);
    if (ew > 34) ew = 34;
    if (aw > 34) aw = 34;
    int left_w = ew + q->heads * 9 + 8; /* entity, a column of 9 per head, mean */
    /* short captions (the query is named above), so they stay over their columns */
    fprintf(f, "%-*s    %s\n", left_w, "A_h[i, j]: where each head looks", "the readout's top answers");
    fprintf(f, "%-*s", ew, "entity");
    for (int h = 0; h < q->heads; h++) {
        char col[32];
        snprintf(col, sizeof col, "head %d", h);
        fprintf(f, "  %7s", col);
    }
    fprintf(f, "%8s    %4s  %-*s %10s %8s\n", "mean", "rank", aw, "answer", "score", "prob");
    int lines = n_rows > n_ans ? n_rows : n_ans;
    for (int k = 0; k < lines; k++) {
        char cell[4 * 32 + 3]; /* a name cut to 32 characters (ew, aw <= 34) of at most 4 bytes, " *" */
        if (k < n_rows) {
            int j = rows[k];
            snprintf(cell, sizeof cell, "%.*s%s", (int)kgl_utf8_prefix(names[j], (size_t)ew - 2, SIZE_MAX), names[j],
                     q->is_true[j] ? " *" : "");
            kgl_table_cell(f, cell, -ew);
            for (int h = 0; h < q->heads; h++) fprintf(f, "  %7.3f", q->attn[(size_t)h * q->n + j]);
            fprintf(f, "%8.3f", q->mean[j]);
        } else {
            fprintf(f, "%*s", left_w, "");
        }
        if (k < n_ans) {
            int j = q->by_score[k];
            snprintf(cell, sizeof cell, "%.*s%s", (int)kgl_utf8_prefix(names[j], (size_t)aw - 2, SIZE_MAX), names[j],
                     q->is_true[j] ? " *" : "");
            fprintf(f, "    %4d  ", k + 1);
            kgl_table_cell(f, cell, -aw);
            fprintf(f, " %10.4f %8.4f", q->scores[j], q->probs[j]);
        }
        fprintf(f, "\n");
    }
    if (n_rows < q->n) {
        int more = q->n - n_rows;
        fprintf(f, "(%d more %s, each with mean attention at most %.3f; --top N shows more, --json lists all)\n", more,
               more == 1 ? "entity" : "entities", rest_max);
    }
    free(rows);
}

/* ---- --query on a neighbourhood model ------------------------------------------
 * The question (HEAD, REL, ?) as evaluation asks it: its segment (HEAD itself,
 * then at most K of its edges) and, layer by layer, each head's weight on
 * each token beside uniform's 1/tokens, so that near-uniform attention is not
 * read as structure; tokens whose entity is a true answer in the training
 * triples marked '*'. Then the readout's top answers. */
static void write_graph_question(FILE *f, const kgl_heads_text *t, const kgl_heads_question *q, const char *rel_name,
                                 int top_asked)
{
    char *const *names = t->ds->entity_names;
    const kgl_segment_view *sv = &q->segment;
    const kgl_answer *ans = q->answers;
    int n_ans = q->n_answers;
    int T = sv->n_tokens, H = sv->heads, top = top_asked < T ? top_asked : T;
    bool asked = T > 1 && kgl_segment_asked_relation(t->ds, sv, 1) >= 0; /* --relation-token: its token second */
    fprintf(f, "%s: step %ld, %d heads, %d layer%s; question (%s, %s, ?): a neighbourhood of %d tokens (itself%s and %d "
           "edges)\n", t->path, t->step, H, sv->layers, sv->layers == 1 ? "" : "s", names[q->entity], rel_name, T,
           asked ? ", the asked relation" : "", T - 1 - asked);
    fprintf(f, "true answers in the training triples (marked *): ");
    if (!q->n_true) fprintf(f, "none");
    for (int k = 0; k < q->n_true; k++) fprintf(f, "%s%s", k ? ", " : "", names[q->truth[k]]);
    fprintf(f, "\nuniform weight: %.3f on each token\n", 1.0 / T);
    char label[1300], cell[200]; /* cell: 40 characters of at most 4 bytes, and " *" */
    for (int l = 0; l < sv->layers; l++) {
        const double *w = sv->weight + (size_t)l * T * H;
        const double *mean = q->token_mean + (size_t)l * T; /* over the heads, by kgl_heads_question_measure */
        const int *order = q->token_order + (size_t)l * T;
        fprintf(f, "\nlayer %d: where each head looks (the %d most weighted of %d tokens)\n%-40s", l, top, T, "token");
        for (int h = 0; h < H; h++) {
            snprintf(cell, sizeof cell, "head %d", h);
            fprintf(f, "  %7s", cell);
        }
        fprintf(f, "  %7s  %s\n", "mean", "x uniform");
        for (int k = 0; k < top; k++) {
            int tok = order[k];
            bool answer = kgl_segment_token_is(sv, tok, q->is_true);
            kgl_segment_token_name(t->ds, sv, tok, label, sizeof label);
            /* 40 characters: the label cut between characters (38 before " *" on a true answer) */
            int keep = (int)kgl_utf8_prefix(label, answer ? 38 : 40, strlen(label));
            snprintf(cell, sizeof cell, "%.*s%s", keep, label, answer ? " *" : "");
            kgl_table_cell(f, cell, -40);
            for (int h = 0; h < H; h++) fprintf(f, "  %7.3f", w[(size_t)tok * H + h]);
            fprintf(f, "  %7.3f  %9.2f\n", mean[tok], mean[tok] * T);
        }
    }
    fprintf(f, "\nthe readout's top answers\n%4s  %-34s %10s %8s\n", "rank", "answer", "score", "prob");
    for (int k = 0; k < n_ans; k++) {
        const char *name = names[ans[k].entity];
        bool truth = q->is_true[ans[k].entity];
        int keep = (int)kgl_utf8_prefix(name, truth ? 32 : 34, strlen(name));
        snprintf(cell, sizeof cell, "%.*s%s", keep, name, truth ? " *" : "");
        fprintf(f, "%4d  ", k + 1);
        kgl_table_cell(f, cell, -34);
        fprintf(f, " %10.4f %8.4f\n", ans[k].score, ans[k].prob);
    }
}

/* kgl heads of a full-context model, as tables: spec and precision by
   relation (and each deeper layer's spec), each entity's top 3, ablation. */
void kgl_heads_full_write(FILE *f, const kgl_heads_text *t, const kgl_heads_full *rep)
{
    int H = rep->heads, n = rep->n, nr = rep->m;
    char **names = t->ds->entity_names;
    const kgl_config *cfg = t->cfg;
    int w = kgl_relations_width(t->ds, t->use_relation, 32);
    fprintf(f, "%s: step %ld, %d heads, d_model %d%s%.0d%s; %d training triples\n\n", t->path, t->step, H, cfg->dim,
           cfg->layers > 1 ? ", " : "", cfg->layers > 1 ? cfg->layers : 0,
           cfg->layers > 1 ? " layers (precision, top-3 and ablation: layer 0's heads)" : "", t->n_train);
    fprintf(f, "specialisation: attention mass head h, at entity i, puts on i's true r-tails\n"
           "(mean over the entities with r-tails); baseline = the same for uniform attention;\n"
           "precision = how often the head's most-attended entity is a true r-tail\n\n");
    fprintf(f, "%-*s %8s %8s", w, "relation", "entities", "baseline");
    for (int h = 0; h < H; h++) fprintf(f, "  spec h%-2d", h);
    for (int h = 0; h < H; h++) fprintf(f, "  prec h%-2d", h);
    fprintf(f, "\n");
    for (int r = 0; r < nr; r++) {
        if (!t->use_relation[r] || !rep->with_tails[r]) continue;
        kgl_table_cell(f, t->ds->relation_names[r], -w);
        fprintf(f, " %8d %8.3f", rep->with_tails[r], rep->baseline[r]);
        for (int h = 0; h < H; h++) fprintf(f, "  %8.3f", rep->spec[h * nr + r]);
        for (int h = 0; h < H; h++) fprintf(f, "  %8.3f", rep->precision[h * nr + r]);
        fprintf(f, "\n");
    }
    if (rep->layers > 1) write_deeper_layers(f, t, rep, w);
    int nw = 5;
    for (int i = 0; i < n; i++)
        if (kgl_table_width(names[i]) > nw) nw = kgl_table_width(names[i]);
    if (nw > 24) nw = 24;
    for (int h = 0; h < H; h++) {
        fprintf(f, "\nhead %d: each entity's top-3 attended entities\n", h);
        for (int i = 0; i < n; i++) {
            const int *idx = rep->top3 + ((size_t)h * n + i) * 3;
            const double *weight = rep->top3_weight + ((size_t)h * n + i) * 3;
            fprintf(f, "  ");
            kgl_table_cell(f, names[i], -nw);
            fprintf(f, " ->");
            for (int k = 0; k < 3 && idx[k] >= 0; k++) fprintf(f, "%s %s %.3f", k ? "," : "", names[idx[k]], weight[k]);
            fprintf(f, "\n");
        }
    }
    fprintf(f, "\nhead ablation: train MRR (both directions) with every head %.4f\n%-6s %12s %8s\n", rep->mrr,
           "head", "MRR without", "drop");
    for (int h = 0; h < H; h++)
        fprintf(f, "%-6d %12.4f %8.4f\n", h, rep->ablated_mrr[h], rep->mrr - rep->ablated_mrr[h]);
}

void kgl_heads_question_write(FILE *f, const kgl_heads_text *t, const kgl_heads_question *q, int top)
{
    char rel_name[600];
    kgl_relation_row_name(t->ds, q->row, rel_name, sizeof rel_name);
    if (t->cfg->context == KGL_CONTEXT_GRAPH) write_graph_question(f, t, q, rel_name, top);
    else write_full_question(f, t, q, rel_name, top);
}
