/* heads_svg.c — the heads study's pictures (`kgl heads --svg DIR`), drawn
 * from what src/studies/heads.c measured, as the saturation study draws its
 * own plots:
 *
 *   full context   DIR/head<h>.svg, DIR/heads.svg, DIR/spec.svg (kgl_heads_full_svg)
 *   graph context  DIR/relations.svg                           (kgl_heads_graph_svg)
 *   one question   DIR/query.svg                               (kgl_heads_question_svg)
 *
 * Attention is drawn as a multiple of uniform (weight x n, 1: uniform), so
 * that near-uniform attention is never drawn as structure, and every picture
 * holds at most MAP_MAX x MAP_MAX cells whatever the size of the graph. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kgl/studies.h"
#include "engine/internal.h"

/* DIR itself (not its parents): false with "DIR: cannot create the folder: why" in err. */
static bool make_folder(const char *dir, char *err, size_t cap)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, cap, "%s: cannot create the folder: %s", dir, strerror(errno));
        return false;
    }
    return true;
}

/* The relations a picture shows: use_relation, or (NULL) every one of the m,
   in *every (to free). */
static const bool *relations_shown(const bool *use_relation, int m, bool **every)
{
    if (use_relation) return use_relation;
    *every = kgl_xmalloc((size_t)(m ? m : 1) * sizeof **every);
    for (int r = 0; r < m; r++) (*every)[r] = true;
    return *every;
}

/* The colour scale of a picture of attention (or of the readout's
   probabilities) drawn as a multiple of uniform, weight x n: --colour-scale
   auto centres it on 1 (kgl_svg's ratio scale), so attention near uniform is
   drawn near the neutral colour, never as structure; linear, log and row
   draw the same multiples on those scales. */
static kgl_colour_scale against_uniform(kgl_colour_scale scale)
{
    return scale == KGL_COLOUR_AUTO ? KGL_COLOUR_RATIO : scale;
}

/* Each picture draws at most this many entities (or relations) on an axis:
   up to 4,096 cells, every label readable, whatever the size of the graph
   (kgl_heatmap's max_rows and max_cols choose them by attention mass). */
#define MAP_MAX 64
/* heads.svg's panels share that budget: at most 32 a side, fewer when more
   than 4 heads (64 heads: 8 x 8 each). */
static int grid_side(int H)
{
    int side = (int)floor(sqrt(MAP_MAX * MAP_MAX / (double)H));
    return side > 32 ? 32 : side < 1 ? 1 : side;
}

/* A heads x relations picture (the specialisation, or a graph model's
   weight by relation): one column per relation r with keep[r], the values
   val[h * m + r]; with many relations, one row each instead, so their names
   read level (at most MAP_MAX of them: those with the largest totals). The
   colour scale fits the data. */
static bool heads_by_relation_svg(const char *path, const char *title, const char *value_label,
                                  const kgl_dataset *ds, int H, const bool *keep, const double *val, kgl_colour_scale scale, char *err,
                                  size_t cap)
{
    int m = ds->n_relations, used = 0;
    for (int r = 0; r < m; r++) used += keep[r];
    double *vals = kgl_xmalloc((size_t)H * (used ? used : 1) * sizeof(double));
    const char **cols = kgl_xmalloc((size_t)(used ? used : 1) * sizeof *cols);
    char(*rows)[32] = kgl_xmalloc((size_t)H * sizeof *rows);
    const char **row_labels = kgl_xmalloc((size_t)H * sizeof *row_labels);
    for (int h = 0; h < H; h++) {
        snprintf(rows[h], sizeof rows[h], "head %d", h);
        row_labels[h] = rows[h];
        int c = 0;
        for (int r = 0; r < m; r++)
            if (keep[r]) {
                cols[c] = ds->relation_names[r];
                vals[h * used + c++] = val[h * m + r];
            }
    }
    kgl_heatmap sp = {0};
    sp.title = title;
    sp.rows = H;
    sp.cols = used;
    sp.values = vals;
    sp.row_labels = row_labels;
    sp.col_labels = cols;
    sp.row_axis = "head";
    sp.col_axis = "relation";
    double *transposed = NULL;
    if (used > 12 && used > H) { /* many relations: one row each, their names read level */
        transposed = kgl_xmalloc((size_t)H * used * sizeof(double));
        for (int h = 0; h < H; h++)
            for (int c = 0; c < used; c++) transposed[(size_t)c * H + h] = vals[(size_t)h * used + c];
        sp.rows = used, sp.cols = H;
        sp.values = transposed;
        sp.row_labels = cols, sp.col_labels = row_labels;
        sp.row_axis = "relation", sp.col_axis = "head";
    }
    sp.vmin = sp.vmax = NAN;
    sp.scale = scale;
    sp.max_rows = sp.max_cols = MAP_MAX;
    sp.value_label = value_label;
    sp.annotate = true;
    bool ok = kgl_svg_heatmap(path, &sp, err, cap);
    free(transposed);
    free(vals);
    free(cols);
    free(rows);
    free(row_labels);
    return ok;
}

int kgl_heads_svg_path(kgl_context_kind context, bool query, int heads, int k, const char *dir, char *out,
                       size_t cap)
{
    if (query || context == KGL_CONTEXT_GRAPH) {
        if (k == 0 && out) snprintf(out, cap, "%s/%s", dir, query ? "query.svg" : "relations.svg");
        return 1;
    }
    if (out && k < heads) snprintf(out, cap, "%s/head%d.svg", dir, k);
    else if (out && k <= heads + 1) snprintf(out, cap, "%s/%s", dir, k == heads ? "heads.svg" : "spec.svg");
    return heads + 2;
}

/* DIR/relations.svg: heads x relations, each cell's weight over uniform's
   (> 1 where a head favours the relation). */
bool kgl_heads_graph_svg(const kgl_heads_graph *g, const kgl_dataset *ds, const bool *use_relation, const char *dir,
                         kgl_colour_scale scale, char *err, size_t cap)
{
    int H = g->heads, nr = ds->n_relations;
    const double *spec = g->mass, *uniform = g->uniform;
    bool *every = NULL;
    use_relation = relations_shown(use_relation, nr, &every);
    bool *keep = kgl_xmalloc((size_t)nr * sizeof *keep);
    double *ratio = kgl_xmalloc((size_t)H * nr * sizeof(double));
    for (int r = 0; r < nr; r++) keep[r] = use_relation[r] && !isnan(uniform[r]);
    for (int k = 0; k < H * nr; k++) ratio[k] = spec[k] / uniform[k % nr];
    char path[4096];
    bool ok = false;
    if (make_folder(dir, err, cap)) {
        kgl_heads_svg_path(KGL_CONTEXT_GRAPH, false, H, 0, dir, path, sizeof path);
        ok = heads_by_relation_svg(path, "weight on each relation's edges, as a multiple of uniform weights",
                                   "weight / uniform", ds, H, keep, ratio, against_uniform(scale), err, cap);
    }
    free(keep);
    free(ratio);
    free(every);
    return ok;
}

/* DIR/head<h>.svg (head h's attention, the true tails of its best relation
   outlined), DIR/heads.svg (every head on one colour scale) and DIR/spec.svg
   (the specialisation matrix). */
bool kgl_heads_full_svg(const kgl_heads_full *rep, const kgl_dataset *ds, const bool *use_relation, const char *dir,
                        kgl_colour_scale scale, char *err, size_t cap)
{
    int n = rep->n, m = rep->m, H = rep->heads;
    kgl_tensor *const *attn = rep->fwd.attn;
    if (!make_folder(dir, err, cap)) return false;
    bool *every = NULL;
    use_relation = relations_shown(use_relation, ds->n_relations, &every);
    const char *const *names = (const char *const *)ds->entity_names;
    kgl_heatmap *panels = kgl_xcalloc((size_t)H, sizeof *panels);
    double *weights = kgl_xmalloc((size_t)H * n * n * sizeof(double)); /* the heatmaps read doubles */
    unsigned char *outline = kgl_xcalloc((size_t)H * n * n, 1);
    char(*titles)[256] = kgl_xcalloc((size_t)H, sizeof *titles);
    char(*labels)[256] = kgl_xcalloc((size_t)H, sizeof *labels);
    char path[4096], value_label[128];
    snprintf(value_label, sizeof value_label, "attention weight \xc3\x97 %d entities (1: uniform, 1/%d = %.3g)", n, n,
             1.0 / n);
    bool ok = true;
    for (int h = 0; h < H && ok; h++) {
        /* the head's best relation: the highest spec among the trained ones */
        int best = -1;
        for (int r = 0; r < m; r++)
            if (use_relation[r] && !isnan(rep->spec[h * m + r]) && (best < 0 || rep->spec[h * m + r] > rep->spec[h * m + best]))
                best = r;
        unsigned char *o = outline + (size_t)h * n * n;
        if (best >= 0)
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) o[(size_t)i * n + j] = kgl_heads_is_tail(&rep->tails, best, i, j);
        double sb = best >= 0 ? rep->spec[h * m + best] : 0;
        if (best >= 0) /* two decimals, or two digits of a small spec (0.0016, not 0.00) */
            snprintf(titles[h], sizeof titles[h], sb < 0.01 ? "head %d: best relation %s (spec %.2g)" :
                     "head %d: best relation %s (spec %.2f)", h, ds->relation_names[best], sb);
        else
            snprintf(titles[h], sizeof titles[h], "head %d", h);
        snprintf(labels[h], sizeof labels[h], "true tail (%s)", best >= 0 ? ds->relation_names[best] : "none");
        kgl_heatmap *p = &panels[h];
        p->title = titles[h];
        p->rows = p->cols = n;
        p->values = weights + (size_t)h * n * n;
        kgl_real_to_double(weights + (size_t)h * n * n, attn[h]->data, (size_t)n * n);
        for (size_t k = 0; k < (size_t)n * n; k++) weights[(size_t)h * n * n + k] *= n; /* a multiple of uniform */
        p->row_labels = p->col_labels = names;
        p->row_axis = "query entity i";
        p->col_axis = "attended entity j";
        p->vmin = p->vmax = NAN; /* the scale fits the data */
        p->scale = against_uniform(scale);
        p->max_rows = p->max_cols = MAP_MAX;
        p->outline = best >= 0 ? o : NULL;
        p->outline_label = labels[h];
        p->value_label = value_label;
        p->annotate = n <= 16;
        kgl_heads_svg_path(KGL_CONTEXT_FULL, false, H, h, dir, path, sizeof path);
        ok = kgl_svg_heatmap(path, p, err, cap);
    }
    if (ok) {
        kgl_heads_svg_path(KGL_CONTEXT_FULL, false, H, H, dir, path, sizeof path);
        for (int h = 0; h < H; h++) panels[h].max_rows = panels[h].max_cols = grid_side(H);
        ok = kgl_svg_heatmap_grid(path, "attention of every head as a multiple of uniform (one colour scale)", panels, H, H < 3 ? H : 3, err, cap);
    }
    if (ok) { /* the specialisation matrix: heads x trained relations */
        kgl_heads_svg_path(KGL_CONTEXT_FULL, false, H, H + 1, dir, path, sizeof path);
        ok = heads_by_relation_svg(path, "specialisation spec[h][r]: attention mass on the true r-tails", "spec", ds, H,
                                   use_relation, rep->spec, scale, err, cap);
    }
    free(panels);
    free(weights);
    free(outline);
    free(titles);
    free(labels);
    free(every);
    return ok;
}

#define QUERY_COLUMNS 48 /* entities (or tokens) query.svg draws at most: cells of 16 px, every name readable */
#define QUERY_TRUE 16    /* of which true answers at most (the readout's best first) */

/* The answers query.svg lists under its legend: a heading, then at most
   10 lines "k. NAME p" (lines[0 .. n], n of them answers). */
static int answer_notes(const kgl_dataset *ds, const kgl_heads_question *q, const kgl_answer *ans, int n_ans,
                        char (*lines)[700], const char **notes)
{
    if (n_ans > 10) n_ans = 10;
    snprintf(lines[0], sizeof lines[0], "top answers (readout p):");
    notes[0] = lines[0];
    for (int k = 0; k < n_ans; k++) {
        int j = ans[k].entity;
        snprintf(lines[k + 1], sizeof lines[k + 1], "%d. %s %.3f%s", k + 1, ds->entity_names[j], ans[k].prob,
                 q->is_true[j] ? " (true tail)" : "");
        notes[k + 1] = lines[k + 1];
    }
    return n_ans + 1;
}

/* DIR/query.svg from a map whose values are multiples of uniform: the
   scale fitted to the data and centred on 1, every cell annotated, the
   readout's top answers listed under the legend. Both kinds of model draw
   their question through it. */
static bool write_query_map(const char *dir, kgl_colour_scale scale, kgl_heatmap *hm, const kgl_dataset *ds,
                            const kgl_heads_question *q, const kgl_answer *ans, int n_ans, char *err, size_t cap)
{
    if (!make_folder(dir, err, cap)) return false;
    char(*lines)[700] = kgl_xmalloc(11 * sizeof *lines);
    const char **notes = kgl_xmalloc(11 * sizeof *notes);
    hm->vmin = hm->vmax = NAN;
    hm->scale = against_uniform(scale);
    hm->annotate = true;
    hm->notes = notes;
    hm->n_notes = answer_notes(ds, q, ans, n_ans, lines, notes);
    char path[4096];
    kgl_heads_svg_path(KGL_CONTEXT_FULL, true, 0, 0, dir, path, sizeof path);
    bool ok = kgl_svg_heatmap(path, hm, err, cap);
    free(lines);
    free(notes);
    return ok;
}

/* The tokens a graph model's query.svg draws, in order of mean weight
   (order): the true answers' tokens first (at most QUERY_TRUE), then the
   most weighted, max_cols in all, listed in that order. Returns how many. */
static int graph_query_columns(const kgl_heads_question *q, const kgl_segment_view *sv, const int *order, int max_cols,
                               int *cols)
{
    int T = sv->n_tokens, picked = 0, true_picked = 0, nc = 0;
    bool *pick = kgl_xcalloc((size_t)T, sizeof(bool));
    for (int k = 0; k < T && true_picked < QUERY_TRUE && picked < max_cols; k++)
        if (kgl_segment_token_is(sv, order[k], q->is_true)) pick[order[k]] = true, picked++, true_picked++;
    for (int k = 0; k < T && picked < max_cols; k++)
        if (!pick[order[k]]) pick[order[k]] = true, picked++;
    for (int k = 0; k < T; k++)
        if (pick[order[k]]) cols[nc++] = order[k];
    free(pick);
    return nc;
}

/* DIR/query.svg of a graph model: one row per layer and head, one column
 * per token of the question's neighbourhood (at most QUERY_COLUMNS, and at
 * most MAP_MAX^2 cells), each cell the head's weight as a multiple of
 * uniform (weight x tokens) on one scale centred on 1; the tokens of true
 * answers outlined, the readout's top answers listed. */
static bool graph_query_svg(const char *dir, kgl_colour_scale scale, const kgl_dataset *ds,
                            const kgl_heads_question *q, const char *rel_name, char *err, size_t cap)
{
    const kgl_segment_view *sv = &q->segment;
    int T = sv->n_tokens, H = sv->heads, R = sv->layers * H;
    int max_cols = MAP_MAX * MAP_MAX / R < QUERY_COLUMNS ? MAP_MAX * MAP_MAX / R : QUERY_COLUMNS;
    if (max_cols < 1) max_cols = 1;
    double *mean = kgl_xcalloc((size_t)T, sizeof(double));
    int *order = kgl_xmalloc((size_t)T * sizeof(int)), *cols = kgl_xmalloc((size_t)T * sizeof(int));
    for (int t = 0; t < T; t++)
        for (int r = 0; r < R; r++) mean[t] += sv->weight[((size_t)(r / H) * T + t) * H + r % H] / R;
    kgl_heads_order(mean, T, order);
    int nc = graph_query_columns(q, sv, order, max_cols, cols), true_all = 0, true_drawn = 0;
    double rest = 0; /* the largest mean weight left out */
    for (int t = 0; t < T; t++) true_all += kgl_segment_token_is(sv, t, q->is_true);
    double *vals = kgl_xmalloc((size_t)R * nc * sizeof(double));
    unsigned char *outline = kgl_xcalloc((size_t)R * nc, 1);
    char(*col_names)[1300] = kgl_xmalloc((size_t)nc * sizeof *col_names);
    const char **col_labels = kgl_xmalloc((size_t)nc * sizeof *col_labels);
    char(*row_names)[40] = kgl_xmalloc((size_t)R * sizeof *row_names);
    const char **row_labels = kgl_xmalloc((size_t)R * sizeof *row_labels);
    bool *drawn = kgl_xcalloc((size_t)T, sizeof(bool));
    for (int c = 0; c < nc; c++) {
        int t = cols[c];
        bool answer = kgl_segment_token_is(sv, t, q->is_true);
        drawn[t] = true;
        kgl_segment_token_name(ds, sv, t, col_names[c], sizeof col_names[c]);
        col_labels[c] = col_names[c];
        true_drawn += answer;
        for (int r = 0; r < R; r++) {
            vals[(size_t)r * nc + c] = sv->weight[((size_t)(r / H) * T + t) * H + r % H] * T; /* a multiple of uniform */
            outline[(size_t)r * nc + c] = answer;
        }
    }
    for (int t = 0; t < T; t++)
        if (!drawn[t]) rest = fmax(rest, mean[t]);
    for (int r = 0; r < R; r++) {
        snprintf(row_names[r], sizeof row_names[r], "layer %d, head %d", r / H, r % H);
        row_labels[r] = row_names[r];
    }
    const char *head = ds->entity_names[q->entity];
    char title[1400], col_axis[500], outline_label[700], value_label[160];
    snprintf(title, sizeof title, "where each head looks in the neighbourhood of (%s, %s, ?), as a multiple of uniform",
             head, rel_name);
    if (nc < T)
        snprintf(col_axis, sizeof col_axis,
                 "token (relation and entity), by mean weight over the layers and heads: %d of %d tokens (%d of the "
                 "%d true answers' and the most weighted); the other %d have mean weight \xe2\x89\xa4 %.2g "
                 "\xc3\x97 uniform", nc, T, true_drawn, true_all, T - nc, rest * T);
    else
        snprintf(col_axis, sizeof col_axis, "token (relation and entity), by mean weight over the layers and heads: "
                 "all %d", T);
    snprintf(outline_label, sizeof outline_label, "tokens of the true answers of (%s, %s, ?)", head, rel_name);
    snprintf(value_label, sizeof value_label, "weight \xc3\x97 %d tokens (1: uniform, 1/%d = %.3g)", T, T, 1.0 / T);
    kgl_heatmap hm = {.title = title, .rows = R, .cols = nc, .values = vals, .row_labels = row_labels,
                      .col_labels = col_labels, .col_axis = col_axis, .outline = true_drawn ? outline : NULL,
                      .outline_label = outline_label, .value_label = value_label};
    bool ok = write_query_map(dir, scale, &hm, ds, q, q->answers, q->n_answers, err, cap);
    free(mean);
    free(order);
    free(cols);
    free(drawn);
    free(vals);
    free(outline);
    free(col_names);
    free(col_labels);
    free(row_names);
    free(row_labels);
    return ok;
}

/* DIR/query.svg: one heatmap row per head (A_h[HEAD, j]) and one of the
 * readout's probabilities, over at most QUERY_COLUMNS entities in attention
 * order: the top answers, then true answers, then the most attended; the
 * others summed up in the axis title. True answers outlined, the top
 * answers listed under the legend. */
static bool full_query_svg(const char *dir, kgl_colour_scale scale, const kgl_dataset *ds,
                           const kgl_heads_question *q, int top, const char *rel_name, char *err, size_t cap)
{
    int n = q->n, H = q->heads, n_ans = top < n ? top : n;
    if (n_ans > 10) n_ans = 10;
    int *cols = kgl_xmalloc((size_t)n * sizeof(int)), nc = 0, picked = 0, true_picked = 0;
    bool *pick = kgl_xcalloc((size_t)n, sizeof(bool));
    for (int k = 0; k < n_ans; k++) pick[q->by_score[k]] = true, picked++;
    for (int k = 0; k < n && true_picked < QUERY_TRUE && picked < QUERY_COLUMNS; k++) {
        int j = q->by_score[k];
        if (!q->is_true[j]) continue;
        true_picked++;
        if (!pick[j]) pick[j] = true, picked++;
    }
    for (int r = 0; r < n && picked < QUERY_COLUMNS; r++)
        if (!pick[q->by_attn[r]]) pick[q->by_attn[r]] = true, picked++;
    double rest_attn = 0, rest_p = 0;
    int true_drawn = 0;
    for (int r = 0; r < n; r++) {
        int j = q->by_attn[r];
        if (pick[j]) {
            cols[nc++] = j;
            true_drawn += q->is_true[j];
        } else {
            rest_attn = fmax(rest_attn, q->mean[j]);
            rest_p = fmax(rest_p, q->probs[j]);
        }
    }
    int R = H + 1;
    double *vals = kgl_xmalloc((size_t)R * nc * sizeof(double));
    unsigned char *outline = kgl_xcalloc((size_t)R * nc, 1);
    const char **col_labels = kgl_xmalloc((size_t)nc * sizeof *col_labels);
    char(*row_names)[32] = kgl_xmalloc((size_t)R * sizeof *row_names);
    const char **row_labels = kgl_xmalloc((size_t)R * sizeof *row_labels);
    for (int c = 0; c < nc; c++) {
        int j = cols[c];
        col_labels[c] = ds->entity_names[j];
        /* multiples of uniform (1/n): the heads' weights and the readout's probability alike */
        for (int h = 0; h < H; h++) vals[(size_t)h * nc + c] = (double)q->attn[(size_t)h * n + j] * n;
        vals[(size_t)H * nc + c] = q->probs[j] * n;
        for (int r = 0; r < R; r++) outline[(size_t)r * nc + c] = q->is_true[j];
    }
    for (int h = 0; h < H; h++) snprintf(row_names[h], sizeof row_names[h], "head %d", h);
    snprintf(row_names[H], sizeof row_names[H], "readout p(j)");
    for (int r = 0; r < R; r++) row_labels[r] = row_names[r];

    const char *head = ds->entity_names[q->entity];
    char title[1400], col_axis[400], outline_label[700], value_label[160];
    snprintf(value_label, sizeof value_label,
             "weight or probability \xc3\x97 %d entities (1: uniform, 1/%d = %.3g)", n, n, 1.0 / n);
    snprintf(title, sizeof title, "where each head looks from %s, and the answers to (%s, %s, ?)", head, head,
             rel_name);
    if (nc < n) {
        char trues[64] = "";
        if (q->n_true) snprintf(trues, sizeof trues, ", %d of the %d true answers", true_drawn, q->n_true);
        snprintf(col_axis, sizeof col_axis,
                 "entity j, by mean attention over the heads: %d of %d (the top %d answers%s and the most attended); "
                 "the other %d have mean attention \xe2\x89\xa4 %.2g and p \xe2\x89\xa4 %.2g",
                 nc, n, n_ans, trues, n - nc, rest_attn, rest_p);
    } else {
        snprintf(col_axis, sizeof col_axis, "entity j, by mean attention over the heads");
    }
    snprintf(outline_label, sizeof outline_label, "cells of the true answers of (%s, %s, ?)", head, rel_name);
    kgl_answer ans[10]; /* the top answers, listed under the legend */
    for (int k = 0; k < n_ans; k++) ans[k] = (kgl_answer){.entity = q->by_score[k], .prob = q->probs[q->by_score[k]]};
    /* its rows are distributions of different things (each head's weights,
       the readout's probabilities), each drawn against its uniform 1/n: one
       scale centred on 1 compares them */
    kgl_heatmap hm = {.title = title, .rows = R, .cols = nc, .values = vals, .row_labels = row_labels,
                      .col_labels = col_labels, .col_axis = col_axis, .outline = q->n_true ? outline : NULL,
                      .outline_label = outline_label, .value_label = value_label};
    bool ok = write_query_map(dir, scale, &hm, ds, q, ans, n_ans, err, cap);
    free(cols);
    free(pick);
    free(vals);
    free(outline);
    free(col_labels);
    free(row_names);
    free(row_labels);
    return ok;
}

bool kgl_heads_question_svg(const kgl_heads_question *q, const kgl_dataset *ds, int top, const char *dir,
                            kgl_colour_scale scale, char *err, size_t cap)
{
    char rel_name[600]; /* (HEAD, REL, ?)'s REL, as kgl heads --query names it */
    kgl_relation_row_name(ds, q->row, rel_name, sizeof rel_name);
    if (q->segment.weight) return graph_query_svg(dir, scale, ds, q, rel_name, err, cap);
    return full_query_svg(dir, scale, ds, q, top, rel_name, err, cap);
}
