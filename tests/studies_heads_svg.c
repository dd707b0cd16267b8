/* studies_heads_svg.c — the heads study's pictures (src/studies/heads_svg.c)
 * called from C, as a program linking libkgl would: each cell of a picture
 * read back out of its tooltip ("row → column: value") against the study's
 * numbers, the outlines counted, the colour scale named. (The pictures'
 * layout through `kgl heads --svg` is io_svg.c's.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* A cell's tooltip prints its value to 4 significant digits (svg.c's
   fmt_value, %.4g): within half a unit of the 4th digit, 5e-4 of the value
   relative. NaN fails every comparison below. */
#define FOUR_DIGITS 5e-4

/* The academic world's triples, trained `steps` steps with 2 heads on the
   full context or, graph, on neighbourhoods of at most 8 edges (every
   edge of alice's: her true advisees among them). */
static bool academic_trainer(test_ctx *T, kgl_dataset *ds, kgl_trainer *tr, bool graph, int steps)
{
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    if (!CHECK(kgl_dataset_load(ds, &src, 1, e, sizeof e))) return false;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.heads = 2;
    if (graph) cfg.context = KGL_CONTEXT_GRAPH, cfg.neighbours = 8;
    kgl_train_config tc = {.batch = 1024, .seed = 1};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer_init(tr, ds, ds->splits[0].triples, ds->splits[0].n, &cfg, &tc);
    for (int s = 0; s < steps; s++) kgl_trainer_step(tr);
    return true;
}

/* The value of the cell whose tooltip is "row → col: value" in the SVG
   text; NaN when there is no such cell. */
static double cell(const char *svg, const char *row, const char *col)
{
    char key[2048]; /* a graph token's column names a relation and an entity */
    snprintf(key, sizeof key, "<title>%.600s \xe2\x86\x92 %.1300s: ", row, col);
    const char *at = strstr(svg, key);
    return at ? strtod(at + strlen(key), NULL) : NAN;
}

/* Whether got is want to the 4 digits a tooltip prints. */
static bool four_digits(double got, double want)
{
    return fabs(got - want) <= FOUR_DIGITS * fabs(want) + 1e-300;
}

/* dir/name's text (NULL: missing; free it). */
static char *picture(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return test_slurp(path, NULL);
}

/* kgl_heads_full_svg: head<h>.svg is head h's attention times n, cell by
   cell, on the scale centred on 1 (KGL_COLOUR_AUTO), titled with the head's
   best relation and its true tails outlined; heads.svg and spec.svg beside
   it, and no picture of a head the model does not have. Another scale is
   the one drawn; use_relation picks the relations spec.svg shows and the
   best relation is chosen among. */
TEST(heads_svg_full_draws_each_head_as_a_multiple_of_uniform)
{
    kgl_dataset ds;
    kgl_trainer tr;
    if (!academic_trainer(T, &ds, &tr, false, 60)) return;
    kgl_heads_full r;
    kgl_heads_full_measure(&r, &tr.model, &ds, ds.splits[0].triples, ds.splits[0].n);
    int n = r.n, m = r.m;
    char dir[600], err[512];
    snprintf(dir, sizeof dir, "%s/pictures", T->tmp); /* not there yet: the call creates it */
    if (!CHECK(kgl_heads_full_svg(&r, &ds, NULL, dir, KGL_COLOUR_AUTO, err, sizeof err))) printf("    %s\n", err);
    for (int h = 0; h < 2; h++) {
        char name[32];
        snprintf(name, sizeof name, "head%d.svg", h);
        char *svg = picture(dir, name);
        if (!CHECK(svg)) continue;
        int wrong = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                wrong += !four_digits(cell(svg, ds.entity_names[i], ds.entity_names[j]),
                                      (double)r.fwd.attn[h]->data[(size_t)i * n + j] * n);
        if (!CHECK(wrong == 0)) printf("    %s: %d of %d cells are not weight x %d\n", name, wrong, n * n, n);
        CHECK(strstr(svg, "log scale centred on 1") != NULL);
        int best = 0, tails = 0;
        for (int rel = 1; rel < m; rel++)
            if (r.spec[h * m + rel] > r.spec[h * m + best]) best = rel;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) tails += kgl_heads_is_tail(&r.tails, best, i, j);
        char title[256];
        snprintf(title, sizeof title, "head %d: best relation %s (spec ", h, ds.relation_names[best]);
        CHECK(strstr(svg, title) != NULL);
        if (!CHECK(tails > 0 && test_count(svg, "class=\"cell outlined\"") == tails))
            printf("    %s: %d cells outlined, %d true %s-tails\n", name, test_count(svg, "class=\"cell outlined\""),
                   tails, ds.relation_names[best]);
        free(svg);
    }
    char *grid = picture(dir, "heads.svg"), *spec = picture(dir, "spec.svg"), *third = picture(dir, "head2.svg");
    CHECK(grid && spec && !third);
    if (spec) CHECK(test_count(spec, "<title>head 0 \xe2\x86\x92 ") == m); /* every relation */
    free(grid);
    free(spec);

    bool only[8] = {false}; /* the last relation alone, on a linear scale */
    only[m - 1] = true;
    snprintf(dir, sizeof dir, "%s/linear", T->tmp);
    CHECK(kgl_heads_full_svg(&r, &ds, only, dir, KGL_COLOUR_LINEAR, err, sizeof err));
    char *head0 = picture(dir, "head0.svg");
    spec = picture(dir, "spec.svg");
    if (CHECK(head0 && spec)) {
        CHECK(strstr(head0, "linear scale") && !strstr(head0, "centred on 1"));
        char title[256];
        snprintf(title, sizeof title, "head 0: best relation %s (spec ", ds.relation_names[m - 1]);
        CHECK(strstr(head0, title) != NULL);
        CHECK(test_count(spec, "<title>head 0 \xe2\x86\x92 ") == 1);
        CHECK(four_digits(cell(spec, "head 1", ds.relation_names[m - 1]), r.spec[1 * m + m - 1]));
    }
    free(head0);
    free(spec);
    kgl_heads_full_free(&r);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* kgl_heads_graph_svg: relations.svg's cell (head h, relation r) is the
   weight h puts on r's edges over what uniform weights put there, for every
   relation in a neighbourhood, on the scale centred on 1. */
TEST(heads_svg_graph_draws_the_weight_over_uniform)
{
    kgl_dataset ds;
    kgl_trainer tr;
    if (!academic_trainer(T, &ds, &tr, true, 20)) return;
    kgl_heads_graph g;
    kgl_heads_graph_measure(&g, &tr.model, &ds, ds.splits[0].triples, ds.splits[0].n);
    char dir[600], err[512];
    snprintf(dir, sizeof dir, "%s/graph", T->tmp);
    if (!CHECK(kgl_heads_graph_svg(&g, &ds, NULL, dir, KGL_COLOUR_AUTO, err, sizeof err))) printf("    %s\n", err);
    char *svg = picture(dir, "relations.svg");
    if (CHECK(svg)) {
        int drawn = 0;
        for (int r = 0; r < g.m; r++) {
            if (isnan(g.uniform[r])) continue;
            drawn++;
            for (int h = 0; h < g.heads; h++) {
                char row[24];
                snprintf(row, sizeof row, "head %d", h);
                double got = cell(svg, row, ds.relation_names[r]), want = g.mass[h * g.m + r] / g.uniform[r];
                if (!CHECK(four_digits(got, want)))
                    printf("    head %d, %s: %g, want %g\n", h, ds.relation_names[r], got, want);
            }
        }
        CHECK(drawn > 0 && test_count(svg, "<title>head 0 \xe2\x86\x92 ") == drawn);
        CHECK(strstr(svg, "log scale centred on 1") != NULL);
    }
    free(svg);
    kgl_heads_graph_free(&g);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* kgl_heads_question_svg on (alice, advises, ?). Full context: a row per
   head of A_h[alice, j] x n and one of the readout's p(j) x n, the true
   answers' cells outlined, the top `top` answers listed. Graph context: a
   row per layer and head, a column per token of alice's neighbourhood,
   weight x tokens, the true answers' tokens outlined. */
TEST(heads_svg_question_draws_attention_and_answers_against_uniform)
{
    kgl_dataset ds;
    kgl_trainer tr;
    for (int graph = 0; graph < 2; graph++) {
        if (!academic_trainer(T, &ds, &tr, graph, 40)) return;
        int alice = kgl_dataset_entity_id(&ds, "alice"), advises = kgl_dataset_relation_id(&ds, "advises");
        kgl_heads_question q;
        kgl_heads_question_measure(&q, &tr.model, ds.splits[0].triples, ds.splits[0].n, ds.n_relations, alice,
                                   advises, 2);
        char dir[600], err[512];
        snprintf(dir, sizeof dir, "%s/question%d", T->tmp, graph);
        if (!CHECK(kgl_heads_question_svg(&q, &ds, 2, dir, KGL_COLOUR_AUTO, err, sizeof err))) printf("    %s\n", err);
        char *svg = picture(dir, "query.svg");
        if (!CHECK(svg)) return;
        int n = q.n, wrong = 0, outlined_want = 0;
        char row[64], col[1300];
        if (!graph) {
            for (int j = 0; j < n; j++) {
                for (int h = 0; h < q.heads; h++) {
                    snprintf(row, sizeof row, "head %d", h);
                    wrong += !four_digits(cell(svg, row, ds.entity_names[j]), (double)q.attn[(size_t)h * n + j] * n);
                }
                wrong += !four_digits(cell(svg, "readout p(j)", ds.entity_names[j]), q.probs[j] * n);
                outlined_want += (q.heads + 1) * q.is_true[j];
            }
            char listed[256]; /* the top 2 answers listed, not the third */
            for (int k = 0; k < 3; k++) {
                snprintf(listed, sizeof listed, "%d. %s ", k + 1, ds.entity_names[q.by_score[k]]);
                CHECK((strstr(svg, listed) != NULL) == (k < 2));
            }
        } else {
            const kgl_segment_view *sv = &q.segment;
            int Tk = sv->n_tokens;
            for (int t = 0; t < Tk; t++) {
                char rel[600];
                if (t == 0) {
                    snprintf(col, sizeof col, "(itself) %s", ds.entity_names[sv->entity[t]]);
                } else {
                    kgl_relation_row_name(&ds, sv->relation[t], rel, sizeof rel);
                    snprintf(col, sizeof col, "%s %s", rel, ds.entity_names[sv->entity[t]]);
                }
                for (int l = 0; l < sv->layers; l++)
                    for (int h = 0; h < sv->heads; h++) {
                        snprintf(row, sizeof row, "layer %d, head %d", l, h);
                        double weight = sv->weight[((size_t)l * Tk + t) * sv->heads + h];
                        wrong += !four_digits(cell(svg, row, col), weight * Tk);
                    }
                outlined_want += sv->layers * sv->heads * q.is_true[sv->entity[t]];
            }
            char listed[256];
            snprintf(listed, sizeof listed, "1. %s ", ds.entity_names[q.answers[0].entity]);
            CHECK(strstr(svg, listed) != NULL);
        }
        if (!CHECK(wrong == 0))
            printf("    %s model: %d cells are not multiples of uniform\n", graph ? "graph" : "full", wrong);
        if (!CHECK(outlined_want > 0 && test_count(svg, "class=\"cell outlined\"") == outlined_want))
            printf("    %s model: %d outlined, want %d\n", graph ? "graph" : "full",
                   test_count(svg, "class=\"cell outlined\""), outlined_want);
        CHECK(strstr(svg, "log scale centred on 1") != NULL);
        free(svg);
        kgl_heads_question_free(&q);
        kgl_trainer_free(&tr);
        kgl_dataset_free(&ds);
    }
}

/* A folder that cannot be created (its parent is a file): each picture
   says so in err and returns false, writing nothing. */
TEST(heads_svg_says_when_its_folder_cannot_be_created)
{
    kgl_dataset ds;
    kgl_trainer tr;
    if (!academic_trainer(T, &ds, &tr, false, 1)) return;
    kgl_heads_full r;
    kgl_heads_full_measure(&r, &tr.model, &ds, ds.splits[0].triples, ds.splits[0].n);
    kgl_heads_question q;
    kgl_heads_question_measure(&q, &tr.model, ds.splits[0].triples, ds.splits[0].n, ds.n_relations, 0, 0, 3);
    kgl_heads_graph g = {.heads = 2, .m = ds.n_relations};
    double mass[2 * 8] = {0}, uniform[8] = {0};
    g.mass = mass, g.uniform = uniform;
    write_tmp(T, 0, "file", "x", 1);
    char dir[600], err[512];
    snprintf(dir, sizeof dir, "%s/file/sub", T->tmp);
    for (int k = 0; k < 3; k++) {
        err[0] = 0;
        bool ok = k == 0   ? kgl_heads_full_svg(&r, &ds, NULL, dir, KGL_COLOUR_AUTO, err, sizeof err)
                  : k == 1 ? kgl_heads_graph_svg(&g, &ds, NULL, dir, KGL_COLOUR_AUTO, err, sizeof err)
                           : kgl_heads_question_svg(&q, &ds, 3, dir, KGL_COLOUR_AUTO, err, sizeof err);
        if (!CHECK(!ok && strstr(err, "/file/sub: cannot create the folder: "))) printf("    %d: '%s'\n", k, err);
    }
    kgl_heads_question_free(&q);
    kgl_heads_full_free(&r);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* kgl_heads_svg_path: the files each study draws, the ones its writer
   writes and kgl heads checks against its inputs. */
TEST(heads_svg_paths_are_the_files_each_study_draws)
{
    char path[64];
    CHECK(kgl_heads_svg_path(KGL_CONTEXT_FULL, false, 3, 0, "d", NULL, 0) == 5);
    kgl_heads_svg_path(KGL_CONTEXT_FULL, false, 3, 2, "d", path, sizeof path);
    CHECK(strcmp(path, "d/head2.svg") == 0);
    kgl_heads_svg_path(KGL_CONTEXT_FULL, false, 3, 3, "d", path, sizeof path);
    CHECK(strcmp(path, "d/heads.svg") == 0);
    kgl_heads_svg_path(KGL_CONTEXT_FULL, false, 3, 4, "d", path, sizeof path);
    CHECK(strcmp(path, "d/spec.svg") == 0);
    CHECK(kgl_heads_svg_path(KGL_CONTEXT_GRAPH, false, 3, 0, "d", path, sizeof path) == 1);
    CHECK(strcmp(path, "d/relations.svg") == 0);
    CHECK(kgl_heads_svg_path(KGL_CONTEXT_GRAPH, true, 3, 0, "d", path, sizeof path) == 1);
    CHECK(strcmp(path, "d/query.svg") == 0);
    CHECK(kgl_heads_svg_path(KGL_CONTEXT_FULL, true, 3, 0, "d", path, sizeof path) == 1);
    CHECK(strcmp(path, "d/query.svg") == 0);
}

/* A graph question's token means: each layer's mean over the heads of each
   token's weight (sums of two weights halved: exact to an ulp or two), and
   the tokens in order of it. A full question's rows: the top most attended,
   then the true answers below them, the largest mean left out beside. */
TEST(heads_question_token_means_and_rows_shown)
{
    kgl_dataset ds;
    kgl_trainer tr;
    if (!academic_trainer(T, &ds, &tr, true, 5)) return;
    kgl_heads_question q;
    kgl_heads_question_measure(&q, &tr.model, ds.splits[0].triples, ds.splits[0].n, ds.n_relations, 0, 1, 3);
    const kgl_segment_view *sv = &q.segment;
    int T_ = sv->n_tokens, H = sv->heads;
    CHECK(q.token_mean && q.token_order && T_ > 1 && H == 2);
    for (int l = 0; l < sv->layers && q.token_mean; l++)
        for (int k = 0; k < T_; k++) {
            const double *w = sv->weight + ((size_t)l * T_ + k) * H;
            CHECK_NEAR(q.token_mean[l * T_ + k], (w[0] + w[1]) / 2, 1e-15);
            int t = q.token_order[l * T_ + k], next = k + 1 < T_ ? q.token_order[l * T_ + k + 1] : t;
            CHECK(q.token_mean[l * T_ + t] >= q.token_mean[l * T_ + next]);
        }
    kgl_heads_question_free(&q);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
    /* rows: entities 0..4 by attention 2, 0, 3, 1, 4; 1 is true, top 2 */
    bool is_true[5] = {false, true, false, false, false};
    int by_attn[5] = {2, 0, 3, 1, 4}, rows[5];
    double mean[5] = {0.25, 0.0625, 0.5, 0.125, 0.03125}, rest = -1;
    kgl_heads_question f = {.n = 5, .is_true = is_true, .by_attn = by_attn, .mean = mean};
    CHECK(kgl_heads_question_rows(&f, 2, rows, &rest) == 3);
    CHECK(rows[0] == 2 && rows[1] == 0 && rows[2] == 1 && rest == 0.125);
    CHECK(kgl_heads_question_rows(&f, 5, rows, &rest) == 5 && rest == 0);
}
