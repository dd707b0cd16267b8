/* model_layer.c — the layer in one place (issue 47, part 3): kgl_layer_forward
 * is the one forward of training and evaluation, the loss (kgl_readout_loss)
 * reads its states and draws no neighbourhood of its own, and the
 * neighbourhoods live in the room kgl_neighbourhood_alloc makes in an arena. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* The academic world, loaded as kgl train loads it. */
static bool load_academic(kgl_dataset *ds)
{
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    return kgl_dataset_load(ds, &src, 1, e, sizeof e);
}

/* A model of the academic world in `context`, its graph its training triples. */
static void academic_model(kgl_model *m, const kgl_dataset *ds, kgl_context_kind context, bool query_relation)
{
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = ds->n_entities;
    cfg.n_relations = ds->n_relations;
    cfg.context = context;
    cfg.neighbours = 3;
    cfg.query_relation = query_relation;
    cfg.ffn = 8;
    kgl_model_create(m, &cfg);
    kgl_rng rng;
    kgl_rng_seed(&rng, 3);
    kgl_model_init(m, &rng);
    kgl_model_set_graph(m, ds->splits[0].triples, ds->splits[0].n);
}

/* Whether two tensors hold the same bits. */
static bool same_bits(const kgl_tensor *a, const kgl_tensor *b)
{
    return a->rows == b->rows && a->cols == b->cols && memcmp(a->data, b->data, kgl_numel(a) * sizeof(kgl_real)) == 0;
}

/* Training's loss is the layer's forward on the batch's questions, then the
   readout's loss on its states, bit for bit, in every context (the graph's
   asking its relation too); and a batch without neighbourhoods is the same
   as one carrying the fixed rule's, drawn by graph.c: the loss draws none of
   its own. Evaluation's states are the same forward: a graph model's
   question states (kgl_model_query_states, in blocks on tapes of their own)
   are kgl_layer_forward's on the same questions, and a full model's entity
   states (kgl_model_context) are the rows the forward names for them. */
TEST(layer_forward_is_the_one_forward_of_training_and_evaluation)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *tr = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, m0 = ds.n_relations;
    int head[128], rel[128], tail[128];
    if (!CHECK(2 * n_tr <= 128)) return;
    for (int k = 0; k < n_tr; k++) { /* forward examples, then the reciprocals */
        head[k] = tr[k].head, rel[k] = tr[k].rel, tail[k] = tr[k].tail;
        head[n_tr + k] = tr[k].tail, rel[n_tr + k] = m0 + tr[k].rel, tail[n_tr + k] = tr[k].head;
    }
    kgl_batch b = {2 * n_tr, head, rel, tail, NULL};
    const struct {
        kgl_context_kind context;
        bool query_relation;
    } cases[] = {
        {KGL_CONTEXT_FULL, false}, {KGL_CONTEXT_GRAPH, false}, {KGL_CONTEXT_GRAPH, true}, {KGL_CONTEXT_NONE, false}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        kgl_model m;
        academic_model(&m, &ds, cases[c].context, cases[c].query_relation);
        kgl_tape t1, t2;
        kgl_tape_init(&t1), kgl_tape_init(&t2);
        kgl_forward whole, parts;
        kgl_model_loss(&m, &t1, &b, NULL, &whole);
        kgl_questions q = {b.n, head, rel, tail, false, NULL, false};
        kgl_layer_forward(&m, &t2, &q, NULL, &parts);
        kgl_readout_loss(&m, &t2, &b, NULL, NULL, NULL, NULL, &parts);
        bool graph = cases[c].context == KGL_CONTEXT_GRAPH;
        if (!CHECK(same_bits(whole.context, parts.context) && same_bits(whole.scores, parts.scores) &&
                   whole.loss->data[0] == parts.loss->data[0]))
            printf("    context %s: the loss differs from forward + readout\n", kgl_context_name(cases[c].context));
        CHECK(parts.state_row != NULL && parts.state_row[5] == (graph ? 5 : head[5]));
        if (graph) { /* the fixed rule's neighbourhoods, drawn by graph.c and passed in */
            kgl_arena room = {0};
            kgl_neighbourhood *nb = kgl_model_neighbourhood_alloc(&m, &room, b.n);
            kgl_neighbourhood_fixed(nb, head, rel, tail, b.n, false);
            kgl_batch given = b;
            given.context = nb;
            kgl_tape_reset(&t2);
            kgl_model_loss(&m, &t2, &given, NULL, &parts);
            CHECK(parts.neighbourhood == nb && whole.neighbourhood != nb);
            CHECK(same_bits(whole.scores, parts.scores) && whole.loss->data[0] == parts.loss->data[0]);
            /* evaluation: the states of the questions (h, r, ?), no tail left out */
            static kgl_real blocks[128 * 64];
            if (!CHECK(m.cfg.dim <= 64)) return;
            kgl_model_query_states(&m, NULL, head, rel, b.n, blocks);
            kgl_questions asked = {b.n, head, rel, NULL, false, NULL, false};
            kgl_tape_reset(&t2);
            t2.recording = false;
            kgl_layer_forward(&m, &t2, &asked, NULL, &parts);
            CHECK(memcmp(blocks, parts.context->data, (size_t)b.n * m.cfg.dim * sizeof(kgl_real)) == 0);
            kgl_arena_free(&room);
        } else { /* evaluation: every entity's state, which question k reads at row head[k] */
            kgl_forward every;
            kgl_tape_reset(&t2);
            kgl_model_context(&m, &t2, &every);
            CHECK(every.state_row == NULL && same_bits(every.context, whole.context));
        }
        kgl_tape_free(&t1), kgl_tape_free(&t2);
        kgl_model_free(&m);
    }
    kgl_dataset_free(&ds);
}

typedef struct {
    kgl_model *m;
    kgl_regularisers *reg;
} forward_call;

static void every_entity_forward(void *ctx)
{
    forward_call *c = ctx;
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_layer_forward(c->m, &t, NULL, c->reg, &f);
}

/* reg is honoured or its absence explicit: a graph model's every-entity
   states are evaluation's (fixed neighbourhoods, in blocks, unrecorded), so
   a dropout generator there stops with a sentence instead of being dropped
   without a word, as kgl_model_context_reg did. Without a generator (rates
   that draw nothing) the states are computed. */
TEST(layer_forward_says_when_it_cannot_honour_the_regularisers)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    academic_model(&m, &ds, KGL_CONTEXT_GRAPH, false);
    kgl_rng rng;
    kgl_rng_seed(&rng, 1);
    kgl_regularisers reg = {.dropout = 0.5, .rng = &rng};
    forward_call call = {&m, &reg};
    char err[1024];
    CHECK(test_dies(every_entity_forward, &call, err, sizeof err));
    if (!CHECK(strstr(err, "kgl_layer_forward") && strstr(err, "regularisers"))) printf("    stderr: %s\n", err);
    reg.rng = NULL;
    CHECK(!test_dies(every_entity_forward, &call, err, sizeof err));
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

static void overfill(void *ctx)
{
    kgl_model *m = ctx;
    kgl_arena room = {0};
    kgl_neighbourhood *nb = kgl_neighbourhood_alloc(&room, m->graph, 2, m->cfg.neighbours, false);
    int entity[3] = {0, 1, 2};
    kgl_neighbourhood_fixed(nb, entity, NULL, NULL, 3, false);
}

/* A neighbourhood knows its room: three segments in room for two stop with
   a sentence, not a write past the arena's block. */
TEST(neighbourhood_refuses_more_segments_than_its_room)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model m;
    academic_model(&m, &ds, KGL_CONTEXT_GRAPH, false);
    char err[1024];
    CHECK(test_dies(overfill, &m, err, sizeof err));
    if (!CHECK(strstr(err, "3 segments in room for 2") != NULL)) printf("    stderr: %s\n", err);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}
