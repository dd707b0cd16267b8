/* model_stack.c — a stack of layers (--layers L, README "A stack of
 * layers"): one layer is unchanged by the option, layer l ≥ 1 is drawn
 * after everything else, a stack is the layer applied to its own output,
 * and one question's attention in the neighbourhood context, layer by
 * layer. */
#include <stdlib.h>

#include "test.h"

static bool load_academic(kgl_dataset *ds)
{
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    return kgl_dataset_load(ds, &src, 1, e, sizeof e);
}

static void academic_config(const kgl_dataset *ds, kgl_config *cfg, int layers)
{
    kgl_config_defaults(cfg);
    cfg->n_entities = ds->n_entities;
    cfg->n_relations = ds->n_relations;
    cfg->dim = 8;
    cfg->heads = 2;
    cfg->ffn = 12;
    cfg->qk_norm = true;
    cfg->layers = layers;
}

/* A one-layer and a two-layer model of the academic world, each initialised
   from its own generator seeded with `seed`. */
static void one_and_two_layers(const kgl_dataset *ds, uint64_t seed, kgl_model *one, kgl_model *two)
{
    kgl_config c1, c2;
    academic_config(ds, &c1, 1);
    academic_config(ds, &c2, 2);
    kgl_model_create(one, &c1);
    kgl_model_create(two, &c2);
    kgl_rng r1, r2;
    kgl_rng_seed(&r1, seed);
    kgl_rng_seed(&r2, seed);
    kgl_model_init(one, &r1);
    kgl_model_init(two, &r2);
}

/* Two layers hold one layer's tensors first, drawn to the same bits, then
   layer1.* (the README's order: a stack never changes a one-layer model). */
TEST(stack_draws_its_deeper_layers_after_every_other_parameter)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model one, two;
    one_and_two_layers(&ds, 9, &one, &two);
    CHECK(two.params.n == 2 * one.params.n - 2); /* entity_emb and relation_emb are not per layer */
    for (int k = 0; k < one.params.n; k++) {
        const kgl_param *a = &one.params.p[k], *b = &two.params.p[k];
        CHECK(strcmp(a->name, b->name) == 0);
        CHECK(memcmp(a->t.data, b->t.data, kgl_numel(&a->t) * sizeof(kgl_real)) == 0);
    }
    for (int k = one.params.n; k < two.params.n; k++) {
        char want[KGL_NAME_MAX];
        snprintf(want, sizeof want, "layer1.%s", one.params.p[k - one.params.n + 2].name);
        CHECK(strcmp(two.params.p[k].name, want) == 0);
    }
    /* layer 1's weights are drawn of their own, not a copy of layer 0's */
    CHECK(memcmp(two.layer[1].wq->data, two.layer[0].wq->data, 64 * sizeof(kgl_real)) != 0);
    CHECK(kgl_params_find(&two.params, "layer1.ffn.w2") != NULL);
    kgl_config bad = two.cfg;
    bad.layers = KGL_MAX_LAYERS + 1;
    CHECK(kgl_config_error(&bad) != NULL);
    bad.layers = 0;
    CHECK(kgl_config_error(&bad) != NULL);
    kgl_model_free(&one);
    kgl_model_free(&two);
    kgl_dataset_free(&ds);
}

/* C⁽²⁾ = layer_1(C⁽¹⁾): a one-layer model whose weights are the stack's
   layer 1 and whose "embeddings" are the stack's first-layer states gives
   the stack's states, to the bit (the same ops on the same numbers). */
TEST(stack_is_the_layer_applied_to_its_own_output)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_model one, two;
    one_and_two_layers(&ds, 4, &one, &two); /* one's values are overwritten below */
    int n = ds.n_entities, d = one.cfg.dim;
    size_t nd = (size_t)n * d;

    /* layer 0 alone: the stack's first states */
    for (int k = 2; k < one.params.n; k++) {
        const kgl_param *p = &one.params.p[k];
        const kgl_tensor *src = &kgl_params_find(&two.params, p->name)->t;
        memcpy(p->t.data, src->data, kgl_numel(&p->t) * sizeof(kgl_real));
    }
    memcpy(one.entity_emb->data, two.entity_emb->data, nd * sizeof(kgl_real));
    kgl_real *first = malloc(nd * sizeof(kgl_real)), *stacked = malloc(nd * sizeof(kgl_real)),
             *again = malloc(nd * sizeof(kgl_real));
    kgl_context_states(&one, first);
    kgl_context_states(&two, stacked);
    CHECK(memcmp(first, stacked, nd * sizeof(kgl_real)) != 0); /* the second layer changes them */

    /* layer 1 on those states */
    for (int k = 2; k < one.params.n; k++) {
        char name[KGL_NAME_MAX];
        snprintf(name, sizeof name, "layer1.%s", one.params.p[k].name);
        const kgl_tensor *src = &kgl_params_find(&two.params, name)->t;
        memcpy(one.params.p[k].t.data, src->data, kgl_numel(&one.params.p[k].t) * sizeof(kgl_real));
    }
    memcpy(one.entity_emb->data, first, nd * sizeof(kgl_real));
    kgl_context_states(&one, again);
    CHECK(memcmp(again, stacked, nd * sizeof(kgl_real)) == 0);
    free(first);
    free(stacked);
    free(again);
    kgl_model_free(&one);
    kgl_model_free(&two);
    kgl_dataset_free(&ds);
}

/* One question's segment as evaluation builds it, and each layer's weights:
   token 0 the entity itself, every other token one of its training edges,
   none of the asked relation when it is hidden; each head's weights a
   softmax over the tokens (sum 1 to round-off of at most K + 1 = 4 terms);
   the second layer asks differently from the first. */
TEST(question_segment_shows_every_layer_of_a_graph_stack)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_config cfg;
    academic_config(&ds, &cfg, 2);
    cfg.context = KGL_CONTEXT_GRAPH;
    cfg.neighbours = 3;
    cfg.query_relation = cfg.hide_asked = true;
    cfg.reciprocal = true;
    kgl_model m;
    kgl_model_create(&m, &cfg);
    kgl_rng rng;
    kgl_rng_seed(&rng, 3);
    kgl_model_init(&m, &rng);
    const kgl_triple *tr = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, rels = ds.n_relations;
    kgl_model_set_graph(&m, tr, n_tr);
    int entity = kgl_dataset_entity_id(&ds, "alice"), row = kgl_dataset_relation_id(&ds, "advises");
    if (!CHECK(entity >= 0 && row >= 0)) return;
    kgl_segment_view sv;
    kgl_model_question_segment(&m, entity, row, &sv);
    CHECK(sv.layers == 2 && sv.heads == 2 && sv.n_tokens >= 2 && sv.n_tokens <= 4);
    CHECK(sv.entity[0] == entity && sv.relation[0] == 2 * rels);
    for (int t = 1; t < sv.n_tokens; t++) {
        int r = sv.relation[t], j = sv.entity[t];
        CHECK(r != row); /* hidden: alice's advises edges are the answers */
        bool edge = false;
        for (int k = 0; k < n_tr; k++)
            edge |= r < rels ? (tr[k].head == entity && tr[k].rel == r && tr[k].tail == j)
                             : (tr[k].tail == entity && tr[k].rel == r - rels && tr[k].head == j);
        CHECK(edge);
    }
    bool differ = false;
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 2; h++) {
            double sum = 0;
            for (int t = 0; t < sv.n_tokens; t++) {
                double w = sv.weight[((size_t)l * sv.n_tokens + t) * 2 + h];
                CHECK(w >= 0 && w <= 1);
                sum += w;
                if (l == 1) differ |= w != sv.weight[(size_t)t * 2 + h];
            }
            CHECK_NEAR(sum, 1.0, 1e-14);
        }
    CHECK(differ);
    kgl_segment_view_free(&sv);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

static char out[1 << 16], err[1 << 14];

/* kgl train --layers: saved as `layers` with layer1.* tensors, resumed to
   the same bits as one run, said by kgl eval; refused out of range and with
   --lookup (which fixes the first layer's values); --context none warns
   that it changes nothing. */
TEST(layers_on_the_command_line)
{
    char cmd[2048], a[512], b[512], c[512];
    snprintf(a, sizeof a, "%s/a.st", T->tmp);
    snprintf(b, sizeof b, "%s/b.st", T->tmp);
    snprintf(c, sizeof c, "%s/c.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --layers 3 --ffn 8 --steps 40 --save %s --quiet", a);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    kgl_st_file f;
    char e[512];
    if (CHECK(kgl_st_read(a, &f, e, sizeof e))) {
        CHECK(kgl_st_meta(&f, "layers") && strcmp(kgl_st_meta(&f, "layers"), "3") == 0);
        CHECK(kgl_st_find(&f, "layer2.ffn.w2") != NULL && kgl_st_find(&f, "layer3.attn.wq") == NULL);
        kgl_st_free(&f);
    }
    /* 20 + 20 steps resumed: the same tensors as 40 in one run */
    snprintf(cmd, sizeof cmd, "train --layers 3 --ffn 8 --steps 20 --save %s --quiet", b);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "train --resume %s --steps 20 --save %s --quiet", b, c);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    kgl_st_file fa, fc;
    if (CHECK(kgl_st_read(a, &fa, e, sizeof e))) {
        if (CHECK(kgl_st_read(c, &fc, e, sizeof e))) {
            const kgl_st_tensor *ta = kgl_st_find(&fa, "layer2.attn.wo"), *tc = kgl_st_find(&fc, "layer2.attn.wo");
            size_t bytes = ta ? (size_t)(ta->shape[0] * ta->shape[1]) * sizeof(kgl_real) : 0;
            CHECK(ta && tc && bytes > 0 && memcmp(ta->data, tc->data, bytes) == 0);
            kgl_st_free(&fc);
        }
        kgl_st_free(&fa);
    }
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s", a);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "ffn 8, 3 layers\n") != NULL);
    /* a resume that names another depth is a different model */
    snprintf(cmd, sizeof cmd, "train --resume %s --layers 2 --steps 1 --quiet", b);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(run_kgl(T, "train --layers 9 --steps 1", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--layers") != NULL);
    CHECK(run_kgl(T, "train --layers 2 --lookup --steps 1", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--lookup needs one layer") != NULL);
    CHECK(run_kgl(T, "train --context none --layers 2 --steps 1 --quiet", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "so --layers changes nothing") != NULL);
}

/* kgl heads on a full-context stack: layer 0's tables as before, then each
   deeper layer's specialisation over the states of the layer below (text and
   --json), every value a share of a softmax row's mass (0 to 1), the layer's
   own: head 0 of layer 0 is supervised onto advises (spec ≥ 0.99, as one
   layer gives: data/report/specialisation.md), layer 1's heads are not. */
TEST(heads_shows_every_layer_of_a_stack)
{
    char cmd[1024], ckpt[512], e[512];
    snprintf(ckpt, sizeof ckpt, "%s/s.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --layers 2 --supervise-heads advises=0,authored=1 --save %s --quiet", ckpt);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, ", 2 layers (") != NULL && strstr(out, "\nlayer 1 (over the states of layer 0): specialisation\n"));
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --json", ckpt);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    kgl_json_doc d = {0};
    if (!CHECK(kgl_json_parse(out, strlen(out), &d, e, sizeof e))) return;
    const kgl_json *deeper = kgl_json_get(d.root, "deeper_layers"), *rels = kgl_json_get(d.root, "relations");
    if (CHECK(deeper && deeper->type == KGL_JSON_ARRAY && deeper->len == 1 && rels)) {
        const kgl_json *spec = kgl_json_get(&deeper->child[0], "spec");
        CHECK(kgl_json_get(&deeper->child[0], "layer")->num == 1);
        CHECK(spec && spec->len == rels->len); /* the same relations as layer 0's table */
        const kgl_json *adv1 = spec ? kgl_json_get(spec, "advises") : NULL;
        const kgl_json *adv0 = kgl_json_get(kgl_json_get(rels, "advises"), "spec");
        if (CHECK(adv1 && adv0 && adv1->len == 2 && adv0->len == 2)) {
            CHECK(adv0->child[0].num >= 0.99);
            for (int h = 0; h < 2; h++) CHECK(adv1->child[h].num >= 0 && adv1->child[h].num <= 1);
            CHECK(adv1->child[0].num != adv0->child[0].num);
        }
    }
    kgl_json_free(&d);
}

/* The header and the last row of a kgl train --log (no field holds a comma:
   the academic world's names); an empty field is NaN. Returns the columns. */
static int read_log(const char *path, char names[][64], double *last, int cap)
{
    size_t len;
    char *text = test_slurp(path, &len);
    if (!text) return 0;
    while (len > 0 && text[len - 1] == '\n') text[--len] = 0;
    char *header = text, *first_nl = strchr(text, '\n'), *last_nl = strrchr(text, '\n');
    if (!first_nl) {
        free(text);
        return 0;
    }
    char *row = last_nl + 1;
    *first_nl = 0;
    int n = 0;
    for (char *f = header, *g = row; f && n < cap; n++) {
        char *comma = strchr(f, ','), *gcomma = g ? strchr(g, ',') : NULL;
        snprintf(names[n], 64, "%.*s", comma ? (int)(comma - f) : (int)strlen(f), f);
        last[n] = g && g != gcomma && *g ? strtod(g, NULL) : NAN;
        f = comma ? comma + 1 : NULL;
        g = gcomma ? gcomma + 1 : NULL;
    }
    free(text);
    return n;
}

static int column(char names[][64], int n, const char *name)
{
    for (int k = 0; k < n; k++)
        if (strcmp(names[k], name) == 0) return k;
    return -1;
}

/* The log of a stack measures every layer: after layer 0's head columns
   (their names as a single layer's) come layer 1's, "l1_h<k>_...", each
   finite where layer 0's is (attn_tv has no reference in a graph context:
   empty in both), and of layer 1's own weights: not layer 0's numbers again.
   One layer: no "l1_" column at all. */
TEST(log_measures_every_layer_of_a_stack)
{
    static char names[512][64];
    static double last[512];
    const char *contexts[] = {"full", "graph"};
    for (int c = 0; c < 2; c++) {
        char cmd[1024], path[512];
        snprintf(path, sizeof path, "%s/%s.csv", T->tmp, contexts[c]);
        snprintf(cmd, sizeof cmd, "train --context %s --layers 2 --steps 20 --log-every 10 --log %s --quiet",
                 contexts[c], path);
        if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) continue;
        int n = read_log(path, names, last, 512), layer1 = 0, differ = 0;
        if (!CHECK(n > 6)) continue;
        for (int k = 6; k < n; k++) {
            if (names[k][0] != 'h') continue; /* layer 0's, and its twin in layer 1 */
            char twin[80];
            snprintf(twin, sizeof twin, "l1_%s", names[k]);
            int j = column(names, n, twin);
            if (!CHECK(j > k)) continue;
            layer1++;
            CHECK(isfinite(last[j]) == isfinite(last[k]));
            differ += isfinite(last[j]) && last[j] != last[k];
        }
        CHECK(layer1 == 2 * (11 + 5)); /* 2 heads, 11 measures and 5 relations' spec each */
        CHECK(differ >= layer1 / 2);
        CHECK(column(names, n, "l1_h1_entropy") >= 0 && column(names, n, "l2_h0_entropy") < 0);
        for (int h = 0; h < 2; h++) { /* where layer 1's heads look is their own */
            const char *measures[] = {"max_prob_mean", "entropy", "jac_fro"};
            for (int k = 0; k < 3; k++) {
                char name[64], twin[80];
                snprintf(name, sizeof name, "h%d_%s", h, measures[k]);
                snprintf(twin, sizeof twin, "l1_%s", name);
                int a = column(names, n, name), b = column(names, n, twin);
                CHECK(a >= 0 && b >= 0 && isfinite(last[b]) && last[a] != last[b]);
            }
        }
    }
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/one.csv", T->tmp);
    snprintf(cmd, sizeof cmd, "train --steps 10 --log-every 10 --log %s --quiet", path);
    if (CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) {
        int n = read_log(path, names, last, 512);
        CHECK(column(names, n, "h1_entropy") >= 0 && column(names, n, "l1_h0_entropy") < 0);
    }
}
