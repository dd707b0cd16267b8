/* studies_heads.c — what a head looks at (src/model/heads.c) and the heads
 * study on top of it (src/studies/heads.c), on numbers small enough to
 * work out by hand. */
#include <math.h>
#include <stdlib.h>

#include "test.h"

/* Sums of three or four products of short decimals: exact to a few ulps. */
#define EXACT 1e-12

/* spec[h][r]: the mass head h, at i, puts on i's true r-tails, averaged
   over the entities that have r-tails (not over all n). Three entities,
   r0: 0 -> {1, 2}, 1 -> {2}; r1: 2 -> {0}. */
TEST(heads_spec_is_the_mass_on_true_tails_over_entities_with_tails)
{
    const kgl_triple tr[] = {{0, 0, 1}, {0, 0, 2}, {1, 0, 2}, {2, 1, 0}};
    kgl_tails tl;
    kgl_tails_build(&tl, 3, 2, tr, 4);
    kgl_tape t;
    kgl_tape_init(&t);
    kgl_tensor *A = kgl_tensor_new(&t, 3, 3, false);
    const kgl_real rows[9] = {0.2, 0.3, 0.5, 0.1, 0.5, 0.4, 0.6, 0.3, 0.1};
    for (int k = 0; k < 9; k++) A->data[k] = rows[k];
    kgl_tensor *attn[1] = {A};
    double spec[2];
    kgl_specialisation(&tl, 1, attn, spec);
    CHECK_NEAR(spec[0], ((0.3 + 0.5) + 0.4) / 2, EXACT); /* entities 0 and 1 */
    CHECK_NEAR(spec[1], 0.6, EXACT);                       /* entity 2 alone */
    kgl_tape_free(&t);
    kgl_tails_free(&tl);
}

/* The weight by relation in a neighbourhood: per segment, the weight on the
   edges of relation r in either direction (rows r and m + r) summed, then
   averaged over the segments that have such an edge. m = 2, one head;
   segment 0: itself, r0, r0, r1^-1; segment 1: itself, r1. */
TEST(heads_relation_attention_is_the_weight_on_each_relations_edges)
{
    int offsets[] = {0, 4, 6}, entity[] = {0, 1, 2, 3, 1, 0}, relation[] = {4, 0, 0, 3, 4, 1};
    kgl_neighbourhood nb = {.n = 2, .asked_row = -1, .offsets = offsets, .entity = entity, .relation = relation};
    kgl_tape t;
    kgl_tape_init(&t);
    kgl_tensor *A = kgl_tensor_new(&t, 6, 1, false);
    const kgl_real w[6] = {0.1, 0.2, 0.3, 0.4, 0.25, 0.75};
    for (int k = 0; k < 6; k++) A->data[k] = w[k];
    /* twice: each call's marks of the segments it has met start afresh (the
       second call's scratch is, with glibc, the first's memory, marks and all) */
    for (int call = 0; call < 2; call++) {
        double spec[2];
        kgl_relation_attention(&nb, A, 1, 2, spec);
        CHECK_NEAR(spec[0], 0.2 + 0.3, EXACT);        /* segment 0 alone has r0's edges */
        CHECK_NEAR(spec[1], (0.4 + 0.75) / 2, EXACT); /* both have r1's (segment 0 through its inverse) */
    }
    kgl_tape_free(&t);
}

/* A segment's first edge comes after the entity itself and, when the
   segment holds it, the asked relation's token (rows 2m + 1 + r, here m = 2:
   rows 5 and up). Segment 0: itself, the asked r1, an edge; segment 1:
   itself alone; segment 2 (filled without the questions' relations): itself,
   an edge. Without --relation-token (asked_row −1) a row above 2m is no
   token of a question. */
TEST(neighbourhood_first_edge_skips_the_asked_token)
{
    int offsets[] = {0, 3, 4, 6}, entity[] = {0, -1, 2, 1, 2, 0}, relation[] = {4, 6, 0, 4, 4, 1};
    kgl_neighbourhood nb = {.n = 3, .asked_row = 5, .offsets = offsets, .entity = entity, .relation = relation};
    CHECK(kgl_neighbourhood_first_edge(&nb, 0) == 2);
    CHECK(kgl_neighbourhood_first_edge(&nb, 1) == 4); /* none: the segment's end */
    CHECK(kgl_neighbourhood_first_edge(&nb, 2) == 5);
    nb.asked_row = -1;
    CHECK(kgl_neighbourhood_first_edge(&nb, 0) == 1);
}

static double mrr_without(kgl_model *m, const kgl_dataset *ds, int head)
{
    kgl_eval ev;
    kgl_eval_init(&ev, ds->n_entities, ds->n_relations);
    if (head >= 0) m->ablate[head] = true;
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_model_context(m, &t, &f);
    kgl_evaluate(m, f.context, ds, ds->splits[0].triples, ds->splits[0].n, &ev);
    double mrr = ev.both.mrr;
    kgl_tape_free(&t);
    if (head >= 0) m->ablate[head] = false;
    kgl_eval_free(&ev);
    return mrr;
}

/* The full study of a trained model: layer 0's spec is kgl_specialisation's
   of the model's attention; ablation switches exactly one head off at a
   time (the MRR of the model with that head, and only it, off) and leaves
   every head on after; the top 3 are each row's largest weights. */
TEST(heads_full_study_ablates_one_head_at_a_time)
{
    kgl_dataset ds;
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e))) return;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.heads = 2;
    kgl_train_config tc = {.batch = 1024, .seed = 1};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer tr;
    kgl_trainer_init(&tr, &ds, ds.splits[0].triples, ds.splits[0].n, &cfg, &tc);
    for (int s = 0; s < 60; s++) kgl_trainer_step(&tr);
    kgl_model *m = &tr.model;
    kgl_heads_full r;
    kgl_heads_full_measure(&r, m, &ds, ds.splits[0].triples, ds.splits[0].n);
    double spec[KGL_MAX_HEADS * 8];
    kgl_specialisation(&r.tails, 2, r.fwd.attn, spec);
    for (int k = 0; k < 2 * ds.n_relations; k++) CHECK(spec[k] == r.spec[k] || (isnan(spec[k]) && isnan(r.spec[k])));
    CHECK(!m->ablate[0] && !m->ablate[1]);
    CHECK(r.mrr == mrr_without(m, &ds, -1));
    for (int h = 0; h < 2; h++) CHECK(r.ablated_mrr[h] == mrr_without(m, &ds, h));
    CHECK(r.ablated_mrr[0] != r.ablated_mrr[1]); /* two heads, two different models without one */
    int n = ds.n_entities;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < n; i++) {
            const int *idx = r.top3 + ((size_t)h * n + i) * 3;
            const kgl_real *row = r.fwd.attn[h]->data + (size_t)i * n;
            int above = 0; /* entities weighed more than the third */
            for (int j = 0; j < n; j++) above += row[j] > row[idx[2]];
            CHECK(above <= 2 && row[idx[0]] >= row[idx[1]] && row[idx[1]] >= row[idx[2]]);
            CHECK(r.top3_weight[((size_t)h * n + i) * 3] == row[idx[0]]);
        }
    kgl_heads_full_free(&r);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* kgl heads --query's names: an entity and a relation row (an inverse in
   reciprocal mode), and each wrong name said with the near ones. */
TEST(heads_question_resolves_names_and_says_the_near_ones)
{
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    kgl_dataset ds;
    char err[2 * KGL_LINE_MAX];
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, err, sizeof err))) return;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = ds.n_entities, cfg.n_relations = ds.n_relations; /* 13 and 5: reciprocal, 10 rows */
    int entity = -1, row = -1, advises = kgl_dataset_relation_id(&ds, "advises");
    CHECK(kgl_heads_question_resolve(&ds, &cfg, "bob", "advises", &entity, &row, err, sizeof err));
    CHECK(entity == kgl_dataset_entity_id(&ds, "bob") && row == advises);
    CHECK(kgl_heads_question_resolve(&ds, &cfg, "bob", "advises^-1", &entity, &row, err, sizeof err));
    CHECK(row == ds.n_relations + advises);
    CHECK(!kgl_heads_question_resolve(&ds, &cfg, "bobb", "advises", &entity, &row, err, sizeof err));
    CHECK(strcmp(err, "unknown entity 'bobb'; did you mean 'bob'?") == 0);
    CHECK(!kgl_heads_question_resolve(&ds, &cfg, "bob", "advises^-2", &entity, &row, err, sizeof err));
    CHECK(strcmp(err, "unknown relation 'advises^-2'; did you mean 'advises^-1', 'advises'?") == 0);
    if (strcmp(err, "unknown relation 'advises^-2'; did you mean 'advises^-1', 'advises'?") != 0)
        fprintf(stderr, "got %s\n", err);
    CHECK(!kgl_heads_question_resolve(&ds, &cfg, "bob", "zzzzzzzzzz", &entity, &row, err, sizeof err));
    CHECK(strcmp(err, "unknown relation 'zzzzzzzzzz'") == 0);
    cfg.reciprocal = false; /* no inverse rows: an inverse is said to be one */
    CHECK(!kgl_heads_question_resolve(&ds, &cfg, "bob", "advises^-1", &entity, &row, err, sizeof err));
    CHECK(strcmp(err, "'advises^-1' is an inverse relation, but this checkpoint was trained with --no-reciprocal "
                      "(it has no inverse relations)") == 0);
    kgl_dataset_free(&ds);
}

/* The JSON a study writes (kgl heads --json), for studies made by hand:
   numbers halves and quarters, exact in any format. */
static char *json_of(void (*write)(kgl_json_writer *, const void *), const void *study)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    kgl_json_writer w;
    kgl_json_writer_init(&w, f);
    kgl_json_begin_object(&w);
    write(&w, study);
    kgl_json_end_object(&w);
    kgl_json_writer_finish(&w);
    fclose(f);
    return text;
}

static kgl_dataset json_names; /* two entities a, b; two relations p, q */
static const bool json_use[2] = {true, false};
static void write_full(kgl_json_writer *w, const void *r) { kgl_heads_full_json(w, r, &json_names, json_use); }
static void write_graph(kgl_json_writer *w, const void *g) { kgl_heads_graph_json(w, g, &json_names, NULL, 8); }
static void write_question(kgl_json_writer *w, const void *q) { kgl_heads_question_json(w, q, &json_names, 1); }

/* A full-context question (a, p^-1, ?) of two heads over a and b, for the
   JSON and the text alike: b attended most, a the best answer and true. */
static kgl_heads_question question_a_p_inverse(void)
{
    static bool is_true[2] = {true, false};
    static int truth[1] = {0}, by_attn[2] = {1, 0}, by_score[2] = {0, 1};
    static kgl_real attn[4] = {0.25, 0.75, 0.5, 0.5};
    static double mean[2] = {0.375, 0.625}, scores[2] = {2, 1}, probs[2] = {0.75, 0.25};
    return (kgl_heads_question){.entity = 0, .row = 2, .heads = 2, .n = 2, .is_true = is_true, .truth = truth,
                                .n_true = 1, .attn = attn, .mean = mean, .scores = scores, .probs = probs,
                                .by_attn = by_attn, .by_score = by_score};
}

TEST(heads_study_json_names_each_number)
{
    kgl_source src = {"t.tsv", "a\tp\tb\nb\tq\ta\n", 12};
    char err[256];
    if (!CHECK(kgl_dataset_load(&json_names, &src, 1, err, sizeof err))) return;
    /* full: 2 heads, 2 layers; relation q is not chosen (json_use) */
    double spec[8] = {0.5, 0.25, 0.75, 1, /* layer 1: */ 0.125, 0, 0.375, 0};
    double precision[4] = {1, 0, 0.5, 0}, baseline[2] = {0.5, 0.5};
    int with_tails[2] = {1, 1}, top3[12] = {1, 0, -1, 0, 1, -1, /* head 1 */ 0, -1, -1, 1, -1, -1};
    double top3_weight[12] = {0.75, 0.25, 0, 0.5, 0.5, 0, 1, 0, 0, 1, 0, 0};
    kgl_heads_full r = {.heads = 2, .layers = 2, .n = 2, .m = 2, .spec = spec, .precision = precision,
                        .baseline = baseline, .with_tails = with_tails, .top3 = top3, .top3_weight = top3_weight,
                        .mrr = 0.75, .ablated_mrr = {0.5, 0.75}};
    char *text = json_of(write_full, &r);
    const char *want_full =
        "{\"relations\":{\"p\":{\"entities\":1,\"baseline\":0.5,\"spec\":[0.5,0.75],\"argmax_precision\":[1,0.5]}},"
        "\"deeper_layers\":[{\"layer\":1,\"spec\":{\"p\":[0.125,0.375]}}],"
        "\"top3\":[{\"a\":[[\"b\",0.75],[\"a\",0.25]],\"b\":[[\"a\",0.5],[\"b\",0.5]]},{\"a\":[[\"a\",1]],\"b\":[[\"b\",1]]}],"
        "\"ablation\":{\"mrr\":0.75,\"heads\":[{\"head\":0,\"mrr\":0.5,\"drop\":0.25},{\"head\":1,\"mrr\":0.75,\"drop\":0}]}}";
    if (!CHECK(text && strcmp(text, want_full) == 0)) fprintf(stderr, "got  %s\nwant %s\n", text, want_full);
    free(text);
    /* graph: relation q in no neighbourhood (NaN), left out */
    double mass[4] = {0.25, NAN, 0.5, NAN}, uniform[2] = {0.125, NAN};
    kgl_heads_graph g = {.heads = 2, .m = 2, .mass = mass, .uniform = uniform, .self = {0.5, 0.25},
                         .ablation_triples = 2, .mrr = 1, .ablated_mrr = {0.5, 1}};
    text = json_of(write_graph, &g);
    const char *want_graph =
        "{\"context\":\"graph\",\"neighbours\":8,\"relations\":{\"p\":{\"uniform\":0.125,\"mass\":[0.25,0.5]}},"
        "\"self\":[0.5,0.25],\"ablation\":{\"triples\":2,\"mrr\":1,\"heads\":[{\"head\":0,\"mrr\":0.5,\"drop\":0.5},"
        "{\"head\":1,\"mrr\":1,\"drop\":0}]}}";
    if (!CHECK(text && strcmp(text, want_graph) == 0)) fprintf(stderr, "got  %s\nwant %s\n", text, want_graph);
    free(text);
    /* a full-context question (a, p^-1, ?): b attended most, a the best answer and true */
    kgl_heads_question q = question_a_p_inverse();
    text = json_of(write_question, &q);
    const char *want_question =
        "{\"query\":{\"head\":\"a\",\"relation\":\"p^-1\"},\"true_tails\":[\"a\"],\"attention\":["
        "{\"entity\":\"b\",\"true_tail\":false,\"heads\":[0.75,0.5],\"mean\":0.625},"
        "{\"entity\":\"a\",\"true_tail\":true,\"heads\":[0.25,0.5],\"mean\":0.375}],"
        "\"answers\":[{\"rank\":1,\"entity\":\"a\",\"score\":2,\"prob\":0.75,\"true_tail\":true}]}";
    if (!CHECK(text && strcmp(text, want_question) == 0)) fprintf(stderr, "got  %s\nwant %s\n", text, want_question);
    free(text);
    kgl_dataset_free(&json_names);
}

/* What a study's text writer wrote to a memory stream (malloc'd). */
static char *text_of(void (*write)(FILE *, const kgl_heads_text *, const void *), const kgl_heads_text *t,
                     const void *study)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    write(f, t, study);
    fclose(f);
    return text;
}

static void text_full(FILE *f, const kgl_heads_text *t, const void *r) { kgl_heads_full_write(f, t, r); }
static void text_graph(FILE *f, const kgl_heads_text *t, const void *g) { kgl_heads_graph_write(f, t, g); }
static void text_question(FILE *f, const kgl_heads_text *t, const void *q) { kgl_heads_question_write(f, t, q, 1); }

/* Whether every piece is in text; the missing ones said. */
static bool has_all(const char *text, const char *const *pieces, int n)
{
    bool all = text != NULL;
    for (int k = 0; k < n && text; k++)
        if (!strstr(text, pieces[k])) all = false, fprintf(stderr, "missing '%s' in\n%s\n", pieces[k], text);
    return all;
}

/* The same studies as kgl heads prints them (kgl_heads_full_write,
   kgl_heads_graph_write, kgl_heads_question_write): the header naming the
   model, each table's caption and each number in its column; a relation
   not chosen, or in no neighbourhood, left out. */
TEST(heads_study_text_names_each_number)
{
    kgl_dataset names;
    kgl_source src = {"t.tsv", "a\tp\tb\nb\tq\ta\n", 12};
    char err[256];
    if (!CHECK(kgl_dataset_load(&names, &src, 1, err, sizeof err))) return;
    const bool use[2] = {true, false};
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.dim = 8, cfg.layers = 2, cfg.neighbours = 8, cfg.context = KGL_CONTEXT_FULL;
    kgl_heads_text t = {"m.st", 7, &names, use, &cfg, 2};
    /* full: 2 heads, 2 layers (the study of the JSON test above) */
    double spec[8] = {0.5, 0.25, 0.75, 1, /* layer 1: */ 0.125, 0, 0.375, 0};
    double precision[4] = {1, 0, 0.5, 0}, baseline[2] = {0.5, 0.5};
    int with_tails[2] = {1, 1}, top3[12] = {1, 0, -1, 0, 1, -1, /* head 1 */ 0, -1, -1, 1, -1, -1};
    double top3_weight[12] = {0.75, 0.25, 0, 0.5, 0.5, 0, 1, 0, 0, 1, 0, 0};
    kgl_heads_full r = {.heads = 2, .layers = 2, .n = 2, .m = 2, .spec = spec, .precision = precision,
                        .baseline = baseline, .with_tails = with_tails, .top3 = top3, .top3_weight = top3_weight,
                        .mrr = 0.75, .ablated_mrr = {0.5, 0.75}};
    char *text = text_of(text_full, &t, &r);
    const char *full[] = {
        "m.st: step 7, 2 heads, d_model 8, 2 layers (precision, top-3 and ablation: layer 0's heads); 2 training "
        "triples\n\n",
        "relation entities baseline  spec h0   spec h1   prec h0   prec h1 \n",
        "\np               1    0.500     0.500     0.750     1.000     0.500\n",
        "\nlayer 1 (over the states of layer 0): specialisation\n",
        "\np           0.500     0.125     0.375\n",
        "\nhead 0: each entity's top-3 attended entities\n  a     -> b 0.750, a 0.250\n  b     -> a 0.500, b 0.500\n",
        "\nhead 1: each entity's top-3 attended entities\n  a     -> a 1.000\n",
        "\nhead ablation: train MRR (both directions) with every head 0.7500\nhead    MRR without     drop\n"
        "0            0.5000   0.2500\n1            0.7500   0.0000\n",
    };
    CHECK(has_all(text, full, sizeof full / sizeof full[0]) && !strstr(text, "\nq "));
    free(text);
    /* graph: relation q in no neighbourhood (NaN), left out */
    double mass[4] = {0.25, NAN, 0.5, NAN}, uniform[2] = {0.125, NAN};
    kgl_heads_graph g = {.heads = 2, .m = 2, .mass = mass, .uniform = uniform, .self = {0.5, 0.25},
                         .ablation_triples = 2, .mrr = 1, .ablated_mrr = {0.5, 1}};
    text = text_of(text_graph, &t, &g);
    const char *graph[] = {
        "m.st: step 7, 2 heads, d_model 8, neighbourhoods of at most 8 edges; 2 training triples\n\n",
        "relation  uniform    head 0    head 1\n",
        "\np           0.125     0.250     0.500\n",
        "\n(itself)              0.500     0.250\n",
        "head ablation: MRR (both directions) on the first 2 training triples with every head 1.0000\n",
        "0            0.5000   0.5000\n",
    };
    CHECK(has_all(text, graph, sizeof graph / sizeof graph[0]) && !strstr(text, "nan") && !strstr(text, "\nq "));
    free(text);
    /* a full-context question (a, p^-1, ?), --top 1: b attended most, a the best answer and true */
    kgl_heads_question q = question_a_p_inverse();
    text = text_of(text_question, &t, &q);
    const char *question[] = {
        "m.st: step 7, 2 heads; query (a, p^-1, ?)\n",
        "true answers of (a, p^-1, ?) in the training triples (marked *): a\n\n",
        "A_h[i, j]: where each head looks",
        "the readout's top answers\n",
        "\nb         0.750    0.500   0.625       1  a *        2.0000   0.7500\n",
        "\na *       0.250    0.500   0.375\n",
    };
    CHECK(has_all(text, question, sizeof question / sizeof question[0]));
    free(text);
    kgl_dataset_free(&names);
}
