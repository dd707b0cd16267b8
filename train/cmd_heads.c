/* cmd_heads.c — `kgl heads`: what each attention head of a saved model looks
 * at, measured against the training triples, and pictures of it. The heads
 * study (src/studies/heads.c) resolves --query's names, measures, draws
 * (heads_svg.c) and writes the JSON (heads_json.c); this file parses the
 * options and prints the tables. */
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char help[] =
    "usage: kgl heads --checkpoint F [--train F [--valid F --test F]] [--relations A,B] [--svg DIR [--colour-scale S]]\n"
    "                 [--json]\n"
    "       kgl heads --checkpoint F --query HEAD,REL [--train F [--valid F --test F]] [--top K] [--svg DIR\n"
    "                 [--colour-scale S]] [--json]\n"
    "(the files the model was trained with: its ids number the names of all of them)\n"
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
   only one (kgl_model_choice_write); then what the tables name beside the
   study (kgl_heads_text). */
static kgl_heads_text say_which_model(const kgl_model_choice *chosen, long step, const data_view *v,
                                      const kgl_model *m)
{
    kgl_model_choice_write(stdout, chosen, "showing",
                           "Each model has its own heads and answers; kgl predict and kgl eval ask the whole "
                           "ensemble, so their answers can differ from these.");
    return (kgl_heads_text){chosen->path, step, &v->ds, v->use_relation, &m->cfg, v->n[0]};
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

/* What --svg asks for: the folder and the colour scale. */
typedef struct pictures {
    const char *dir; /* NULL: no pictures */
    kgl_colour_scale scale;
} pictures;

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
        kgl_heads_text text = say_which_model(chosen, ck->st.step, v, m);
        kgl_heads_graph_write(stdout, &text, &g);
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
    if (!ok) fprintf(stderr, "kgl heads: --query: %s\n", err);
    free(err);
    free(head);
    return ok ? 0 : EXIT_USAGE;
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
    } else {
        kgl_heads_text text = say_which_model(chosen, step, v, m);
        kgl_heads_question_write(stdout, &text, &q.a, top);
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
        kgl_heads_text text = say_which_model(chosen, ck->st.step, v, m);
        kgl_heads_full_write(stdout, &text, &rep);
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
