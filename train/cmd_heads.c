/* cmd_heads.c — `kgl heads`: what each attention head of a saved model looks
 * at, measured against the training triples, and pictures of it. The heads
 * study (src/studies/heads.c) resolves --query's names, measures, draws
 * (heads_svg.c) and writes the JSON (heads_json.c); this file parses the
 * options and prints the tables. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char help[] =
    "usage: kgl heads --checkpoint F [--train F] [--relations A,B] [--svg DIR [--colour-scale S]] [--json]\n"
    "       kgl heads --checkpoint F --query HEAD,REL [--train F] [--top K] [--svg DIR [--colour-scale S]] [--json]\n"
    "(--member K: the K-th model F lists, of an ensemble F is member 0 of; one\n"
    "model of an ensemble is named on the first line, and in --json.)\n\n"
    "For every head h and relation r of the training triples:\n"
    "  spec[h][r]       mean over entities i with r-tails of the attention head h,\n"
    "                   standing at i, puts on i's r-tails (README)\n"
    "  baseline[r]      the same for uniform attention: mean |tails_r(i)| / n\n"
    "  argmax precision how often head h's most-attended entity is a true r-tail\n"
    "Then each entity's top-3 attended entities per head, and head ablation: the\n"
    "drop in train MRR (both directions) when one head's output is zeroed.\n"
    "With --svg DIR it writes DIR/head<h>.svg (the attention of head h, the true\n"
    "tails of its best relation outlined), DIR/heads.svg (all heads on one colour\n"
    "scale) and DIR/spec.svg (the specialisation matrix). Attention is drawn as a\n"
    "multiple of uniform, weight x n (1: uniform), so that near-uniform attention\n"
    "is not drawn as structure. A map draws at most 64\n"
    "entities a side (heads.svg 32, fewer with more than 4 heads): the most\n"
    "attended, and the entities attending most to them; a line under it says\n"
    "what is left out. Every picture holds at most 4,096 cells: about 0.6 MB with\n"
    "names of 20 characters, under 2.5 MB whatever the names.\n"
    "--colour-scale auto (default) | linear | log | row: how values map to\n"
    "colours, fitted to the data: auto draws attention on a log scale centred on\n"
    "1 (white: uniform; blue below, red above, as far each way) and spec.svg on\n"
    "log when 95% of the cells would lie in a linear scale's darkest tenth, else\n"
    "linear; row scales each row to its own maximum.\n"
    "The colour bar names the scale and labels its ends with the data's range.\n\n"
    "--query HEAD,REL (the last comma separates; REL^-1 is the inverse of REL,\n"
    "trained in reciprocal mode): where every head looks from HEAD, the row\n"
    "A_h[HEAD, :] of each head, sorted by the mean over the heads, true REL-tails\n"
    "of HEAD in the training triples marked '*'; beside it the readout's top-K\n"
    "answers to (HEAD, REL, ?) with score and softmax probability (--top K,\n"
    "default 10: also the attention rows shown; --json lists every entity).\n"
    "With --svg DIR it writes DIR/query.svg: a strip per head and one of the\n"
    "readout's probabilities, each x n (1: uniform), over at most 48 entities\n"
    "(the top answers, true tails, the most attended), true tails outlined, the\n"
    "top answers listed.\n"
    "On a --context graph model --query shows the question's neighbourhood as\n"
    "evaluation builds it (HEAD itself, then at most K of its edges): for each\n"
    "layer, each head's weight on each token and the mean's multiple of\n"
    "uniform (1/tokens), tokens whose entity is a true answer marked '*'; then\n"
    "the readout's top answers. --svg DIR writes DIR/query.svg: a row per layer\n"
    "and head, a column per token (at most 48: true answers' tokens and the most\n"
    "weighted), each cell weight x tokens (1: uniform), true answers outlined.\n"
    EXIT_TABLE;

/* The first line when the model is one of an ensemble: which one, and why
   only one (print_model_choice). */
static void say_which_model(const kgl_model_choice *chosen)
{
    print_model_choice(chosen, "showing",
                       "Each model has its own heads and answers; kgl predict and kgl eval ask the whole ensemble, "
                       "so their answers can differ from these.");
}

/* The opening of every kgl heads --json object: the model chosen, its step and heads. */
static void json_heads_opening(kgl_json_writer *w, const kgl_model_choice *chosen, long step, int heads)
{
    kgl_json_writer_init(w, stdout);
    kgl_json_begin_object(w);
    json_model_choice(w, chosen);
    kgl_json_field_int(w, "step", step);
    kgl_json_field_int(w, "heads", heads);
}

/* The closing: the object ends, then its line. */
static void json_heads_closing(kgl_json_writer *w)
{
    kgl_json_end_object(w);
    kgl_json_newline(w);
    kgl_json_writer_finish(w);
}

/* A stack's deeper layers (full context): spec[h][r] of each layer l ≥ 1,
   where head h of layer l, at entity i's state, puts its weight over the
   entities' states, against the same baseline (layer 0's table is above). */
static void print_deeper_layers(const data_view *v, const kgl_heads_full *rep, int w)
{
    int H = rep->heads, nr = rep->m;
    for (int l = 1; l < rep->layers; l++) {
        const double *spec = rep->spec + (size_t)l * H * nr;
        printf("\nlayer %d (over the states of layer %d): specialisation\n%-*s %8s", l, l - 1, w, "relation", "baseline");
        for (int h = 0; h < H; h++) printf("  spec h%-2d", h);
        printf("\n");
        for (int r = 0; r < nr; r++) {
            if (!v->use_relation[r] || !rep->with_tails[r]) continue;
            print_cell(stdout, v->ds.relation_names[r], -w);
            printf(" %8.3f", rep->baseline[r]);
            for (int h = 0; h < H; h++) printf("  %8.3f", spec[h * nr + r]);
            printf("\n");
        }
    }
}

/* What --svg asks for: the folder and the colour scale. */
typedef struct pictures {
    const char *dir; /* NULL: no pictures */
    kgl_colour_scale scale;
} pictures;

/* ---- the neighbourhood context -------------------------------------------------
 * A graph model's heads look at edges, not at all entities: where each head's
 * weight goes, by the relation of the attended edge, over every entity's
 * evaluation neighbourhood (kgl_model_relation_attention), beside what uniform
 * weights would put there; the weight a head keeps on the entity itself; and
 * head ablation on (at most KGL_HEADS_ABLATION_TRIPLES of) the training
 * triples (kgl_heads_graph_measure). */

/* kgl heads of a graph model, as tables. */
static void graph_heads_text(const kgl_model_choice *chosen, long step, const data_view *v, const kgl_model *m,
                             const kgl_heads_graph *g)
{
    int H = g->heads, nr = g->m;
    int w = 8;
    for (int r = 0; r < nr; r++)
        if (v->use_relation[r] && text_width(v->ds.relation_names[r]) > w) w = text_width(v->ds.relation_names[r]);
    if (w > 40) w = 40;
    say_which_model(chosen);
    printf("%s: step %ld, %d heads, d_model %d, neighbourhoods of at most %d edges; %d training triples\n\n",
           chosen->path, step, H, m->cfg.dim, m->cfg.neighbours, v->n[0]);
    printf("where each head's weight goes, by the relation of the attended edge (either direction): the mean\n"
           "over the entities whose neighbourhood has such an edge of the weight on those edges; uniform =\n"
           "the same for equal weights over the neighbourhood (the entity itself included)\n\n");
    printf("%-*s %8s", w, "relation", "uniform");
    for (int h = 0; h < H; h++) {
        char col[24];
        snprintf(col, sizeof col, "head %d", h);
        printf("  %8s", col);
    }
    printf("\n");
    for (int r = 0; r < nr; r++) {
        if (!v->use_relation[r] || isnan(g->uniform[r])) continue;
        print_cell(stdout, v->ds.relation_names[r], -w);
        printf(" %8.3f", g->uniform[r]);
        for (int h = 0; h < H; h++) printf("  %8.3f", g->mass[h * nr + r]);
        printf("\n");
    }
    printf("%-*s %8s", w, "(itself)", "");
    for (int h = 0; h < H; h++) printf("  %8.3f", g->self[h]);
    printf("\n\nhead ablation: MRR (both directions) on the first %d training triples with every head %.4f\n"
           "%-6s %12s %8s\n", g->ablation_triples, g->mrr, "head", "MRR without", "drop");
    for (int h = 0; h < H; h++) printf("%-6d %12.4f %8.4f\n", h, g->ablated_mrr[h], g->mrr - g->ablated_mrr[h]);
}

static int graph_heads(const kgl_model_choice *chosen, bool json, const pictures *pic, data_view *v, kgl_model *m,
                       const kgl_checkpoint *ck)
{
    kgl_heads_graph g;
    kgl_heads_graph_measure(&g, m, &v->ds, v->split[0], v->n[0]);
    int st = 0; /* the picture before the tables: a reader of stdout that stops reading never costs it */
    bool drawn = false;
    if (pic->dir) {
        char err[1024];
        if (!(drawn = kgl_heads_graph_svg(&g, &v->ds, v->use_relation, pic->dir, pic->scale, err, sizeof err))) {
            fprintf(stderr, "kgl heads: %s\n", err);
            st = EXIT_OUTPUT;
        }
    }
    if (json) {
        kgl_json_writer w;
        json_heads_opening(&w, chosen, ck->st.step, g.heads);
        kgl_heads_graph_json(&w, &g, &v->ds, v->use_relation, m->cfg.neighbours);
        json_heads_closing(&w);
    } else {
        graph_heads_text(chosen, ck->st.step, v, m, &g);
    }
    if (drawn && !json) printf("\npicture: %s/relations.svg\n", pic->dir);
    kgl_heads_graph_free(&g);
    return st;
}

/* ----------------------------------------------------------- --query -- */

/* A question: what --query names (parsed here) and what the heads study
   measures of it (kgl_heads_question_measure). */
typedef struct query_view {
    int entity, row, top;
    char rel_name[600];
    kgl_heads_question a;
} query_view;

/* Parses HEAD,REL (split at the last comma) into q->entity and q->row
   (kgl_heads_question_resolve). */
static int parse_query(const char *query, const data_view *v, const kgl_model *m, query_view *q)
{
    const char *comma = strrchr(query, ',');
    if (!comma || comma == query || !comma[1]) {
        fprintf(stderr, "kgl heads: --query '%s': expected HEAD,REL (an entity and a relation, e.g. alice,advises)\n"
                        "Try 'kgl heads --help'.\n", query);
        return EXIT_USAGE;
    }
    size_t head_len = (size_t)(comma - query); /* the whole name: a line holds up to KGL_LINE_MAX bytes */
    char *head = memcpy(kgl_xmalloc(head_len + 1), query, head_len);
    head[head_len] = 0;
    char *err = kgl_xmalloc(2 * KGL_LINE_MAX);
    bool ok = kgl_heads_question_resolve(&v->ds, &m->cfg, head, comma + 1, &q->entity, &q->row, err, 2 * KGL_LINE_MAX);
    if (ok) kgl_relation_row_name(&v->ds, q->row, q->rel_name, sizeof q->rel_name);
    else fprintf(stderr, "kgl heads: --query: %s\n", err);
    free(err);
    free(head);
    return ok ? 0 : EXIT_USAGE;
}

static void query_print_text(const kgl_model_choice *chosen, long step, const data_view *v, const query_view *q)
{
    char *const *names = v->ds.entity_names;
    const char *head = names[q->entity];
    say_which_model(chosen);
    printf("%s: step %ld, %d heads; query (%s, %s, ?)\n", chosen->path, step, q->a.heads, head, q->rel_name);
    printf("true answers of (%s, %s, ?) in the training triples (marked *): ", head, q->rel_name);
    if (!q->a.n_true) printf("none");
    for (int k = 0; k < q->a.n_true; k++) printf("%s%s", k ? ", " : "", names[q->a.truth[k]]);
    printf("\n\n");

    int *rows = kgl_xmalloc((size_t)q->a.n * sizeof(int));
    double rest_max; /* the largest mean attention left out */
    int n_rows = kgl_heads_question_rows(&q->a, q->top, rows, &rest_max), n_ans = q->top < q->a.n ? q->top : q->a.n;
    /* column widths from the names shown, so the two tables line up */
    int ew = 6, aw = 6;
    for (int k = 0; k < n_rows; k++) ew = fmax(ew, text_width(names[rows[k]]) + 2);
    for (int k = 0; k < n_ans; k++) aw = fmax(aw, text_width(names[q->a.by_score[k]]) + 2);
    if (ew > 34) ew = 34;
    if (aw > 34) aw = 34;
    int left_w = ew + q->a.heads * 9 + 8; /* entity, a column of 9 per head, mean */
    /* short captions (the query is named above), so they stay over their columns */
    printf("%-*s    %s\n", left_w, "A_h[i, j]: where each head looks", "the readout's top answers");
    printf("%-*s", ew, "entity");
    for (int h = 0; h < q->a.heads; h++) {
        char col[32];
        snprintf(col, sizeof col, "head %d", h);
        printf("  %7s", col);
    }
    printf("%8s    %4s  %-*s %10s %8s\n", "mean", "rank", aw, "answer", "score", "prob");
    int lines = n_rows > n_ans ? n_rows : n_ans;
    for (int k = 0; k < lines; k++) {
        char cell[4 * 32 + 3]; /* a name cut to 32 characters (ew, aw <= 34) of at most 4 bytes, " *" */
        if (k < n_rows) {
            int j = rows[k];
            snprintf(cell, sizeof cell, "%.*s%s", (int)kgl_utf8_prefix(names[j], (size_t)ew - 2, SIZE_MAX), names[j],
                     q->a.is_true[j] ? " *" : "");
            print_cell(stdout, cell, -ew);
            for (int h = 0; h < q->a.heads; h++) printf("  %7.3f", q->a.attn[(size_t)h * q->a.n + j]);
            printf("%8.3f", q->a.mean[j]);
        } else {
            printf("%*s", left_w, "");
        }
        if (k < n_ans) {
            int j = q->a.by_score[k];
            snprintf(cell, sizeof cell, "%.*s%s", (int)kgl_utf8_prefix(names[j], (size_t)aw - 2, SIZE_MAX), names[j],
                     q->a.is_true[j] ? " *" : "");
            printf("    %4d  ", k + 1);
            print_cell(stdout, cell, -aw);
            printf(" %10.4f %8.4f", q->a.scores[j], q->a.probs[j]);
        }
        printf("\n");
    }
    if (n_rows < q->a.n) {
        int more = q->a.n - n_rows;
        printf("(%d more %s, each with mean attention at most %.3f; --top N shows more, --json lists all)\n", more,
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
static void graph_query_text(const kgl_model_choice *chosen, long step, const data_view *v, const query_view *q,
                             const kgl_segment_view *sv, const kgl_answer *ans, int n_ans)
{
    char *const *names = v->ds.entity_names;
    int T = sv->n_tokens, H = sv->heads, top = q->top < T ? q->top : T;
    say_which_model(chosen);
    bool asked = T > 1 && kgl_segment_asked_relation(&v->ds, sv, 1) >= 0; /* --relation-token: its token second */
    printf("%s: step %ld, %d heads, %d layer%s; question (%s, %s, ?): a neighbourhood of %d tokens (itself%s and %d "
           "edges)\n", chosen->path, step, H, sv->layers, sv->layers == 1 ? "" : "s", names[q->entity], q->rel_name, T,
           asked ? ", the asked relation" : "", T - 1 - asked);
    printf("true answers in the training triples (marked *): ");
    if (!q->a.n_true) printf("none");
    for (int k = 0; k < q->a.n_true; k++) printf("%s%s", k ? ", " : "", names[q->a.truth[k]]);
    printf("\nuniform weight: %.3f on each token\n", 1.0 / T);
    char label[1300], cell[200]; /* cell: 40 characters of at most 4 bytes, and " *" */
    for (int l = 0; l < sv->layers; l++) {
        const double *w = sv->weight + (size_t)l * T * H;
        const double *mean = q->a.token_mean + (size_t)l * T; /* over the heads, by kgl_heads_question_measure */
        const int *order = q->a.token_order + (size_t)l * T;
        printf("\nlayer %d: where each head looks (the %d most weighted of %d tokens)\n%-40s", l, top, T, "token");
        for (int h = 0; h < H; h++) {
            snprintf(cell, sizeof cell, "head %d", h);
            printf("  %7s", cell);
        }
        printf("  %7s  %s\n", "mean", "x uniform");
        for (int k = 0; k < top; k++) {
            int t = order[k];
            bool answer = kgl_segment_token_is(sv, t, q->a.is_true);
            kgl_segment_token_name(&v->ds, sv, t, label, sizeof label);
            /* 40 characters: the label cut between characters (38 before " *" on a true answer) */
            int keep = (int)kgl_utf8_prefix(label, answer ? 38 : 40, strlen(label));
            snprintf(cell, sizeof cell, "%.*s%s", keep, label, answer ? " *" : "");
            print_cell(stdout, cell, -40);
            for (int h = 0; h < H; h++) printf("  %7.3f", w[(size_t)t * H + h]);
            printf("  %7.3f  %9.2f\n", mean[t], mean[t] * T);
        }
    }
    printf("\nthe readout's top answers\n%4s  %-34s %10s %8s\n", "rank", "answer", "score", "prob");
    for (int k = 0; k < n_ans; k++) {
        const char *name = names[ans[k].entity];
        bool truth = q->a.is_true[ans[k].entity];
        int keep = (int)kgl_utf8_prefix(name, truth ? 32 : 34, strlen(name));
        snprintf(cell, sizeof cell, "%.*s%s", keep, name, truth ? " *" : "");
        printf("%4d  ", k + 1);
        print_cell(stdout, cell, -34);
        printf(" %10.4f %8.4f\n", ans[k].score, ans[k].prob);
    }
}

/* kgl heads --query HEAD,REL of a model with attention: where each head
   looks from HEAD (a graph model: in the question's neighbourhood, layer by
   layer) and the readout's answers; the picture first, then the tables. */
static int run_query(const kgl_model_choice *chosen, const char *query, int top, bool json, const pictures *pic,
                     const data_view *v, const kgl_model *m, long step)
{
    query_view q = {0};
    q.top = top;
    int st = parse_query(query, v, m, &q);
    if (st) return st;
    kgl_heads_question_measure(&q.a, m, v->split[0], v->n[0], v->ds.n_relations, q.entity, q.row, top);
    bool graph = m->cfg.context == KGL_CONTEXT_GRAPH;
    const kgl_segment_view *sv = &q.a.segment;
    bool drawn = false; /* the picture before the tables, as kgl heads draws its own */
    if (pic->dir) {
        char err[1024];
        drawn = kgl_heads_question_svg(&q.a, &v->ds, top, pic->dir, pic->scale, err, sizeof err);
        if (!drawn) {
            fprintf(stderr, "kgl heads: %s\n", err);
            st = EXIT_OUTPUT;
        }
    }
    if (json) {
        kgl_json_writer w;
        json_heads_opening(&w, chosen, step, graph ? sv->heads : q.a.heads);
        kgl_heads_question_json(&w, &q.a, &v->ds, top);
        json_heads_closing(&w);
    } else if (graph) {
        graph_query_text(chosen, step, v, &q, sv, q.a.answers, q.a.n_answers);
    } else {
        query_print_text(chosen, step, v, &q);
    }
    if (drawn && !json) printf("\npicture: %s/query.svg\n", pic->dir);
    kgl_heads_question_free(&q.a);
    return st;
}

/* The pictures --svg DIR will hold (kgl_heads_svg_path: query.svg,
   relations.svg, or head<h>.svg, heads.svg and spec.svg), none of them a
   file the command reads (outputs_distinct). */
static bool pictures_distinct(const data_args *d, const char *spec, char *opened, const char *dir, bool query,
                              const kgl_config *cfg)
{
    int n = kgl_heads_svg_path(cfg->context, query, cfg->heads, 0, dir, NULL, 0);
    char(*paths)[4200] = malloc((size_t)n * sizeof *paths);
    cli_file *outputs = malloc((size_t)n * sizeof *outputs);
    for (int k = 0; k < n; k++) {
        kgl_heads_svg_path(cfg->context, query, cfg->heads, k, dir, paths[k], sizeof paths[k]);
        outputs[k] = (cli_file){"--svg", paths[k], true, NULL};
    }
    bool ok = outputs_distinct("heads", d, spec, &opened, 1, outputs, n);
    free(outputs);
    free(paths);
    return ok;
}

/* --colour-scale NAME */
static bool colour_scale_named(const char *name, kgl_colour_scale *out)
{
    static const char *const names[] = {"linear", "log", "row", "auto"}; /* in kgl_colour_scale's order */
    for (int k = 0; k < 4; k++)
        if (strcmp(name, names[k]) == 0) return *out = (kgl_colour_scale)k, true;
    return false;
}

/* kgl heads of a full-context model, as tables: spec and precision by
   relation (and each deeper layer's spec), each entity's top 3, ablation. */
static void full_heads_text(const kgl_model_choice *chosen, long step, const data_view *v, const kgl_model *m,
                            const kgl_heads_full *rep)
{
    int H = rep->heads, n = rep->n, nr = rep->m;
    char **names = v->ds.entity_names;
    int w = 8;
    for (int r = 0; r < nr; r++)
        if (v->use_relation[r] && text_width(v->ds.relation_names[r]) > w) w = text_width(v->ds.relation_names[r]);
    if (w > 32) w = 32;
    say_which_model(chosen);
    printf("%s: step %ld, %d heads, d_model %d%s%.0d%s; %d training triples\n\n", chosen->path, step, H, m->cfg.dim,
           m->cfg.layers > 1 ? ", " : "", m->cfg.layers > 1 ? m->cfg.layers : 0,
           m->cfg.layers > 1 ? " layers (precision, top-3 and ablation: layer 0's heads)" : "", v->n[0]);
    printf("specialisation: attention mass head h, at entity i, puts on i's true r-tails\n"
           "(mean over the entities with r-tails); baseline = the same for uniform attention;\n"
           "precision = how often the head's most-attended entity is a true r-tail\n\n");
    printf("%-*s %8s %8s", w, "relation", "entities", "baseline");
    for (int h = 0; h < H; h++) printf("  spec h%-2d", h);
    for (int h = 0; h < H; h++) printf("  prec h%-2d", h);
    printf("\n");
    for (int r = 0; r < nr; r++) {
        if (!v->use_relation[r] || !rep->with_tails[r]) continue;
        print_cell(stdout, v->ds.relation_names[r], -w);
        printf(" %8d %8.3f", rep->with_tails[r], rep->baseline[r]);
        for (int h = 0; h < H; h++) printf("  %8.3f", rep->spec[h * nr + r]);
        for (int h = 0; h < H; h++) printf("  %8.3f", rep->precision[h * nr + r]);
        printf("\n");
    }
    if (rep->layers > 1) print_deeper_layers(v, rep, w);
    int nw = 5;
    for (int i = 0; i < n; i++)
        if (text_width(names[i]) > nw) nw = text_width(names[i]);
    if (nw > 24) nw = 24;
    for (int h = 0; h < H; h++) {
        printf("\nhead %d: each entity's top-3 attended entities\n", h);
        for (int i = 0; i < n; i++) {
            const int *idx = rep->top3 + ((size_t)h * n + i) * 3;
            const double *weight = rep->top3_weight + ((size_t)h * n + i) * 3;
            printf("  ");
            print_cell(stdout, names[i], -nw);
            printf(" ->");
            for (int k = 0; k < 3 && idx[k] >= 0; k++) printf("%s %s %.3f", k ? "," : "", names[idx[k]], weight[k]);
            printf("\n");
        }
    }
    printf("\nhead ablation: train MRR (both directions) with every head %.4f\n%-6s %12s %8s\n", rep->mrr,
           "head", "MRR without", "drop");
    for (int h = 0; h < H; h++)
        printf("%-6d %12.4f %8.4f\n", h, rep->ablated_mrr[h], rep->mrr - rep->ablated_mrr[h]);
}

/* kgl heads of a full-context model (no --query): where each head's weight
   goes against the training triples, the pictures first (a reader of stdout
   that stops reading never costs them), then the report. */
static int full_heads(const kgl_model_choice *chosen, bool json, const pictures *pic, const data_view *v, kgl_model *m,
                      const kgl_checkpoint *ck)
{
    int st = 0;
    kgl_heads_full rep;
    kgl_heads_full_measure(&rep, m, &v->ds, v->split[0], v->n[0]);
    /* the pictures before the tables: a reader of stdout that stops
       reading (`| head`) never costs them */
    bool drawn = false;
    if (pic->dir) {
        char err[1024];
        if (!(drawn = kgl_heads_full_svg(&rep, &v->ds, v->use_relation, pic->dir, pic->scale, err, sizeof err))) {
            fprintf(stderr, "kgl heads: %s\n", err);
            st = EXIT_OUTPUT;
        }
    }
    if (json) {
        kgl_json_writer w;
        json_heads_opening(&w, chosen, ck->st.step, rep.heads);
        kgl_heads_full_json(&w, &rep, &v->ds, v->use_relation);
        json_heads_closing(&w);
    } else {
        full_heads_text(chosen, ck->st.step, v, m, &rep);
    }
    if (drawn && !json)
        printf("\npictures: %s/head0.svg … head%d.svg, %s/heads.svg, %s/spec.svg\n", pic->dir, rep.heads - 1, pic->dir,
               pic->dir);
    kgl_heads_full_free(&rep);
    return st;
}

int cmd_heads(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "heads", argc, argv);
    a.help = help;
    data_args d = {0};
    const char *ckpt = NULL, *svg_dir = NULL, *query = NULL, *colours = NULL;
    long member = -1; /* --member K: one model of an ensemble */
    long top = 10;
    bool json = false, top_given = false;
    pictures pic = {NULL, KGL_COLOUR_AUTO};
    int st;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if ((st = model_cmd_option(&a, &d, &ckpt, &member, &json)) >= 0) {
            if (st) return st;
        } else if (cli_is(&a, "--svg")) {
            if (!(svg_dir = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--colour-scale")) {
            if (!(colours = cli_value(&a))) return EXIT_USAGE;
            if (!colour_scale_named(colours, &pic.scale))
                return cli_usage_error(&a, "--colour-scale '%s': expected auto, linear, log or row", colours);
        } else if (cli_is(&a, "--query")) {
            if (!(query = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--top")) {
            if (!cli_int(&a, 1, 1000000, &top)) return EXIT_USAGE;
            top_given = true;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!ckpt) return cli_usage_error(&a, "--checkpoint is required");
    if (top_given && !query) return cli_usage_error(&a, "--top needs --query HEAD,REL");
    if (colours && !svg_dir) return cli_usage_error(&a, "--colour-scale needs --svg DIR");
    pic.dir = svg_dir;
    if (svg_dir && !cli_output_dir_ok("heads", "--svg", svg_dir)) return EXIT_USAGE;
    data_view v;
    kgl_model m;
    kgl_checkpoint ck;
    static kgl_model_choice chosen; /* which model of its ensemble (8 KB: one per process) */
    if ((st = open_model("heads", &d, ckpt, member, &chosen, &v, &m, &ck))) return st;
    if (svg_dir && !pictures_distinct(&d, ckpt, chosen.path, svg_dir, query != NULL, &m.cfg)) {
        kgl_model_free(&m);
        kgl_checkpoint_close(&ck);
        data_free(&v);
        return EXIT_USAGE;
    }
    if (m.cfg.context == KGL_CONTEXT_NONE)
        st = (fprintf(stderr, "kgl heads: %s has no attention (--context none): its states are the entity embeddings\n",
                      chosen.path),
              EXIT_USAGE);
    else if (query) st = run_query(&chosen, query, (int)top, json, &pic, &v, &m, ck.st.step);
    else if (m.cfg.context == KGL_CONTEXT_GRAPH) st = graph_heads(&chosen, json, &pic, &v, &m, &ck);
    else st = full_heads(&chosen, json, &pic, &v, &m, &ck);
    kgl_model_free(&m);
    kgl_checkpoint_close(&ck);
    data_free(&v);
    return st;
}
