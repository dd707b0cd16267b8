/* model_graph.c — the neighbourhood context (--context graph) and the
 * context-free baseline (--context none): what each example may attend
 * over, the sampler, evaluation's fixed rule, memory that does not grow
 * with n², and the command line. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 17], err[1 << 16];

/* The academic world, loaded as kgl train loads it. */
static bool load_academic(kgl_dataset *ds)
{
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    return kgl_dataset_load(ds, &src, 1, e, sizeof e);
}

/* The graph context's configuration for ds with K edges a segment. */
static kgl_config graph_config(const kgl_dataset *ds, int K)
{
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = ds->n_entities;
    cfg.n_relations = ds->n_relations;
    cfg.context = KGL_CONTEXT_GRAPH;
    cfg.neighbours = K;
    return cfg;
}

/* A model of cfg, initialised from seed, attending over ds's training triples. */
static void graph_model(kgl_model *m, const kgl_config *cfg, uint64_t seed, const kgl_dataset *ds)
{
    kgl_model_create(m, cfg);
    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    kgl_model_init(m, &rng);
    kgl_model_set_graph(m, ds->splits[0].triples, ds->splits[0].n);
}

/* Whether training triple (h, r, t) of tr[0..n) exists, by a plain scan. */
static bool has_triple(const kgl_triple *tr, int n, int h, int r, int t)
{
    for (int k = 0; k < n; k++)
        if (tr[k].head == h && tr[k].rel == r && tr[k].tail == t) return true;
    return false;
}

/* The distinct (slot, relation) pairs of nb: each token's pair is its own
   slot and relation, no two pairs are the same, and pair p first appears
   before pair p + 1 (their order is the tokens'). */
static bool pairs_are_the_distinct_tokens(const kgl_neighbourhood *nb)
{
    int T = nb->offsets[nb->n], next = 0;
    for (int t = 0; t < T; t++) {
        int p = nb->token_pair[t];
        if (p < 0 || p >= nb->n_pairs || p > next) return false;
        if (p == next) next++;
        if (nb->pair_slot[p] != nb->slot[t] || nb->pair_relation[p] != nb->relation[t]) return false;
    }
    for (int p = 0; p < nb->n_pairs; p++)
        for (int q = p + 1; q < nb->n_pairs; q++)
            if (nb->pair_slot[p] == nb->pair_slot[q] && nb->pair_relation[p] == nb->pair_relation[q]) return false;
    return next == nb->n_pairs;
}

/* Every token of every segment, read back against the triples themselves
   (not the graph): the first token is the query entity (relation row 2m);
   each other token (r', j) is a training edge of the query entity, never
   the asked triple's: (r, t), or with t = h the triple read backwards. */
static void check_segments(test_ctx *T, const kgl_triple *tr, int n_tr, int m, const kgl_neighbourhood *nb,
                           const int *head, const int *rel, const int *tail, int K)
{
    CHECK(!nb->pair_table || pairs_are_the_distinct_tokens(nb));
    for (int b = 0; b < nb->n; b++) {
        int lo = nb->offsets[b], hi = nb->offsets[b + 1], h = head[b], asked_token = nb->asked_row >= 0;
        if (!CHECK(hi - lo >= 1 + asked_token && hi - lo <= K + 1 + asked_token)) return;
        CHECK(nb->entity[lo] == h && nb->relation[lo] == 2 * m);
        CHECK(nb->unique[nb->query_slot[b]] == h);
        if (asked_token) /* --relation-token: the asked relation second, a token of no entity: the zero slot */
            CHECK(nb->entity[lo + 1] == -1 && nb->relation[lo + 1] == 2 * m + 1 + rel[b] &&
                  nb->slot[lo + 1] == nb->zero_slot && nb->zero_slot == nb->n_unique);
        for (int t = lo + 1 + asked_token; t < hi; t++) {
            int r2 = nb->relation[t], j = nb->entity[t];
            CHECK(nb->unique[nb->slot[t]] == j);
            /* (h, r2, j) read from the triples: r2 < m forward, else (j, r2 − m, h) */
            bool edge = r2 < m ? has_triple(tr, n_tr, h, r2, j) : has_triple(tr, n_tr, j, r2 - m, h);
            if (!CHECK(edge)) return;
            /* the asked triple is (h, r, t) with r < m, or (t, r − m, h) read backwards */
            int r = rel[b], inv = r < m ? r + m : r - m;
            bool asked = (r2 == r && j == tail[b]) || (tail[b] == h && r2 == inv && j == h);
            if (!CHECK(!asked)) {
                printf("    example %d (%d, %d, %d) sees its own triple as token (%d, %d)\n", b, h, r, tail[b], r2, j);
                return;
            }
        }
    }
}

/* The sampler over every training example of the academic world and of a
   graph with self-loops and a hub: never the asked triple, at most K edges,
   all of them when fewer, and the draws a function of the generator. */
TEST(graph_context_never_shows_an_example_its_own_triple)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *tr0 = ds.splits[0].triples;
    int n0 = ds.splits[0].n, m0 = ds.n_relations;
    /* plus a hub with self-loops: entity 0 is linked to itself under relation 0 and 1 */
    int n_tr = n0 + 2;
    kgl_triple *tr = malloc((size_t)n_tr * sizeof *tr);
    memcpy(tr, tr0, (size_t)n0 * sizeof *tr);
    tr[n0] = (kgl_triple){0, 0, 0};
    tr[n0 + 1] = (kgl_triple){0, 1, 0};
    kgl_graph g;
    kgl_graph_build(&g, ds.n_entities, m0, tr, n_tr);
    int n_ex = 2 * n_tr;
    int *head = malloc((size_t)n_ex * sizeof(int)), *rel = malloc((size_t)n_ex * sizeof(int)),
        *tail = malloc((size_t)n_ex * sizeof(int));
    for (int k = 0; k < n_tr; k++) { /* forward examples, then the reciprocals */
        head[k] = tr[k].head, rel[k] = tr[k].rel, tail[k] = tr[k].tail;
        head[n_tr + k] = tr[k].tail, rel[n_tr + k] = m0 + tr[k].rel, tail[n_tr + k] = tr[k].head;
    }
    kgl_arena arena = {0}; /* the neighbourhoods' room */
    for (int K = 1; K <= 6; K += 5) {
        kgl_neighbourhood *nb = kgl_neighbourhood_alloc(&arena, &g, n_ex, K, false);
        kgl_neighbourhood_find_distinct(nb, &arena); /* and its distinct tokens, checked too */
        kgl_rng rng;
        kgl_rng_seed(&rng, 11);
        for (int rep = 0; rep < 20; rep++) { /* sampled */
            kgl_neighbourhood_sample(nb, head, rel, tail, n_ex, false, &rng, 0, 0);
            check_segments(T, tr, n_tr, m0, nb, head, rel, tail, K);
        }
        kgl_neighbourhood_fixed(nb, head, rel, tail, n_ex, false); /* the fixed rule */
        check_segments(T, tr, n_tr, m0, nb, head, rel, tail, K);
        /* with K 6, an example whose entity has at most 7 edges sees every edge but its own triple's */
        for (int b = 0; b < n_ex && K == 6; b++) {
            int degree = g.offsets[head[b] + 1] - g.offsets[head[b]];
            int own = 1 + (tail[b] == head[b]); /* a self-loop is two edges of its entity */
            if (degree <= 7) CHECK(nb->offsets[b + 1] - nb->offsets[b] == 1 + degree - own);
            else CHECK(nb->offsets[b + 1] - nb->offsets[b] == 1 + K);
        }
    }
    kgl_arena_free(&arena);
    free(head), free(rel), free(tail), free(tr);
    kgl_graph_free(&g);
    kgl_dataset_free(&ds);
}

/* The sampler draws among all of an example's candidate edges, not the
   first K by key (evaluation's rule): with K = 1, 400 draws of every
   training example of the academic world (at most 5 candidates: a given
   edge is missed with probability (4/5)^400 < 1e-38) show each candidate at
   least once. The candidates are counted here from the triples: every
   triple that touches the head, less the asked one (twice for a self-loop). */
TEST(graph_context_sampler_draws_every_candidate_edge)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *tr = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, m = ds.n_relations;
    kgl_graph g;
    kgl_graph_build(&g, ds.n_entities, m, tr, n_tr);
    int head[64], rel[64], tail[64];
    for (int k = 0; k < n_tr; k++) head[k] = tr[k].head, rel[k] = tr[k].rel, tail[k] = tr[k].tail;
    kgl_arena arena = {0}; /* the neighbourhoods' room */
    kgl_neighbourhood *nb = kgl_neighbourhood_alloc(&arena, &g, n_tr, 1, false);
    kgl_rng rng;
    kgl_rng_seed(&rng, 5);
    static int seen[64][16]; /* example b's distinct tokens, as relation * n + entity */
    int n_seen[64] = {0}, n = ds.n_entities;
    for (int rep = 0; rep < 400; rep++) {
        kgl_neighbourhood_sample(nb, head, rel, tail, n_tr, false, &rng, 0, 0);
        for (int b = 0; b < n_tr; b++) {
            if (nb->offsets[b + 1] - nb->offsets[b] < 2) continue;
            int t = nb->offsets[b] + 1, token = nb->relation[t] * n + nb->entity[t], k = 0;
            while (k < n_seen[b] && seen[b][k] != token) k++;
            if (k == n_seen[b] && k < 16) seen[b][n_seen[b]++] = token;
        }
    }
    int bad = 0, spread = 0;
    for (int b = 0; b < n_tr; b++) {
        int touching = 0;
        for (int k = 0; k < n_tr; k++) touching += (tr[k].head == head[b]) + (tr[k].tail == head[b]);
        int candidates = touching - 1 - (tail[b] == head[b]);
        bad += n_seen[b] != candidates;
        spread += candidates > 1;
    }
    CHECK(bad == 0);
    CHECK(spread >= 5); /* examples with a choice to make */
    kgl_arena_free(&arena);
    kgl_graph_free(&g);
    kgl_dataset_free(&ds);
}

/* --edge-dropout is its definition: segment by segment, the K draws of the
   shuffle among the candidates (which the fixed rule with K = every edge
   lists, in the graph's order), then one uniform per chosen edge, in order,
   the edge kept when u >= p; the entity's own token always stays. Replayed
   here on a copy of the generator, over 200 steps of the academic world's
   examples with K 2 (most examples have more candidates, so the shuffle
   draws too). The kept share is checked as well: 1 − p = 0.6 within 0.05,
   about 8 standard deviations of a binomial over the ~10,000 chosen edges,
   so a rule that kept or dropped on the wrong side of p fails. */
TEST(graph_context_edge_dropout_is_its_definition)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *tr = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, m = ds.n_relations, K = 2;
    kgl_graph g;
    kgl_graph_build(&g, ds.n_entities, m, tr, n_tr);
    int head[64], rel[64], tail[64];
    for (int k = 0; k < n_tr; k++) head[k] = tr[k].head, rel[k] = tr[k].rel, tail[k] = tr[k].tail;
    kgl_arena arena = {0}; /* the neighbourhoods' room */
    kgl_neighbourhood *nb = kgl_neighbourhood_alloc(&arena, &g, n_tr, K, false);
    kgl_neighbourhood_find_distinct(nb, &arena); /* and its distinct tokens, checked too */
    kgl_neighbourhood *all = kgl_neighbourhood_alloc(&arena, &g, n_tr, g.max_degree, false);
    kgl_neighbourhood_fixed(all, head, rel, tail, n_tr, false);
    const double rates[] = {0.4, 0}; /* 0: no uniform is drawn, every chosen edge stays */
    for (int pk = 0; pk < 2; pk++) {
        double p = rates[pk];
        kgl_rng rng, replay;
        kgl_rng_seed(&rng, 21);
        long chosen = 0, kept = 0, wrong = 0, shuffled = 0;
        for (int step = 0; step < 200; step++) {
            replay = rng;
            kgl_neighbourhood_sample(nb, head, rel, tail, n_tr, false, &rng, p, 0);
            for (int b = 0; b < n_tr; b++) {
                int lo = all->offsets[b] + 1, cand = all->offsets[b + 1] - lo, pick[64];
                for (int c = 0; c < cand; c++) pick[c] = lo + c;
                int take = cand < K ? cand : K;
                if (cand > K) {
                    shuffled++;
                    for (int s = 0; s < take; s++) {
                        int j = s + (int)kgl_rng_below(&replay, (uint32_t)(cand - s)), tmp = pick[s];
                        pick[s] = pick[j], pick[j] = tmp;
                    }
                }
                int t = nb->offsets[b];
                wrong += nb->entity[t] != head[b] || nb->relation[t] != 2 * m;
                t++;
                for (int s = 0; s < take; s++) {
                    chosen++;
                    if (p > 0 && kgl_rng_uniform(&replay) < p) continue;
                    kept++;
                    wrong += t >= nb->offsets[b + 1] || nb->entity[t] != all->entity[pick[s]] ||
                             nb->relation[t] != all->relation[pick[s]];
                    t++;
                }
                wrong += t != nb->offsets[b + 1];
            }
            wrong += memcmp(&replay, &rng, sizeof rng) != 0; /* the generator advanced exactly so */
        }
        if (!CHECK(wrong == 0)) printf("    p %.1f: %ld segments or generators differ from the definition\n", p, wrong);
        CHECK(shuffled > 1000);
        double share = (double)kept / (double)chosen;
        if (!CHECK(share >= 1 - p - 0.05 && share <= 1 - p + 0.05))
            printf("    p %.1f: kept %.4f of the chosen edges\n", p, share);
    }
    kgl_arena_free(&arena);
    kgl_graph_free(&g);
    kgl_dataset_free(&ds);
}

/* --source-dropout is its definition: one uniform per segment, in order, a
   segment masked when it is below p, and a masked segment's first token and
   query point at the zero slot (n_unique) while its other tokens keep
   theirs. And what the layer makes of it: a masked question's state is the
   state of the same question on a model whose row E[i] is zero (the entity
   left out, its edges kept), checked for every masked question whose
   entity is not also one of its own neighbours. The two compute the same
   sums with exact zeros in place of the row, so they agree to round-off
   (1e-12 on O(1) states). */
TEST(graph_context_source_dropout_is_its_definition)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *tr = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, K = 3;
    kgl_config cfg = graph_config(&ds, K);
    cfg.query_relation = true;
    kgl_model m;
    graph_model(&m, &cfg, 8, &ds);
    int head[64], rel[64], tail[64], d = cfg.dim;
    for (int k = 0; k < n_tr; k++) head[k] = tr[k].head, rel[k] = tr[k].rel, tail[k] = tr[k].tail;
    kgl_arena arena = {0}; /* the neighbourhoods' room */
    kgl_neighbourhood *nb = kgl_neighbourhood_alloc(&arena, m.graph, n_tr, K, false);
    kgl_neighbourhood_find_distinct(nb, &arena); /* and its distinct tokens, checked too */
    kgl_neighbourhood *plain = kgl_neighbourhood_alloc(&arena, m.graph, n_tr, K, false);
    kgl_neighbourhood_fixed(plain, head, rel, tail, n_tr, false);
    /* the draws: replayed over 300 rounds at p 0.3 */
    long masked = 0, segments = 0, wrong = 0;
    kgl_rng draw, replay;
    kgl_rng_seed(&draw, 12);
    for (int round = 0; round < 300; round++) {
        kgl_neighbourhood_fixed(nb, head, rel, tail, n_tr, false);
        replay = draw;
        kgl_neighbourhood_mask_sources(nb, 0.3, &draw);
        bool any = false;
        for (int b = 0; b < n_tr; b++) {
            bool mask = kgl_rng_uniform(&replay) < 0.3;
            int lo = nb->offsets[b];
            segments++, masked += mask, any |= mask;
            wrong += mask ? nb->slot[lo] != nb->n_unique || nb->query_slot[b] != nb->n_unique
                          : nb->slot[lo] != plain->slot[lo] || nb->query_slot[b] != plain->query_slot[b];
            for (int t = lo + 1; t < nb->offsets[b + 1]; t++) wrong += nb->slot[t] != plain->slot[t];
        }
        wrong += nb->zero_slot != (any ? nb->n_unique : -1) || memcmp(&replay, &draw, sizeof draw) != 0;
        wrong += !pairs_are_the_distinct_tokens(nb); /* masked first tokens: pairs of the zero slot */
    }
    CHECK(wrong == 0);
    /* 0.3 within 0.03: 8 standard deviations of a binomial over 300 · 32 segments */
    double share = (double)masked / (double)segments;
    if (!CHECK(share > 0.27 && share < 0.33)) printf("    masked %.4f of the segments\n", share);
    /* the states: masked against the entity's row zeroed */
    kgl_neighbourhood_fixed(nb, head, rel, tail, n_tr, false);
    kgl_rng_seed(&draw, 4);
    kgl_neighbourhood_mask_sources(nb, 0.5, &draw);
    kgl_batch b = {n_tr, head, rel, tail, nb};
    kgl_tape tape;
    kgl_tape_init(&tape);
    kgl_forward f;
    kgl_model_loss(&m, &tape, &b, NULL, &f);
    static kgl_real states[64 * 64];
    if (!CHECK(d <= 64)) return;
    memcpy(states, f.context->data, (size_t)n_tr * d * sizeof(kgl_real));
    int compared = 0;
    double worst = 0;
    for (int e = 0; e < n_tr; e++) {
        int lo = nb->offsets[e], hi = nb->offsets[e + 1], i = head[e];
        if (nb->slot[lo] != nb->n_unique) continue;
        bool own = false;
        for (int t = lo + 1; t < hi; t++) own |= nb->entity[t] == i;
        if (own) continue;
        kgl_real row[64];
        memcpy(row, m.entity_emb->data + (size_t)i * d, (size_t)d * sizeof(kgl_real));
        memset(m.entity_emb->data + (size_t)i * d, 0, (size_t)d * sizeof(kgl_real));
        kgl_batch one = {1, head + e, rel + e, tail + e, NULL};
        kgl_tape_reset(&tape);
        kgl_model_loss(&m, &tape, &one, NULL, &f);
        for (int c = 0; c < d; c++) worst = fmax(worst, fabs((double)f.context->data[c] - (double)states[e * d + c]));
        memcpy(m.entity_emb->data + (size_t)i * d, row, (size_t)d * sizeof(kgl_real));
        compared++;
    }
    CHECK(compared >= 5);
    if (!CHECK(worst <= 1e-12)) printf("    a masked state differs from the zero-row state by %.3g\n", worst);
    kgl_tape_free(&tape);
    kgl_arena_free(&arena);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* With --qk-norm the layer normalises the key of each distinct (entity,
   relation) token once and copies it to the token's repeats. Against the
   same neighbourhood with every token its own pair (the layer then
   normalises token by token, as the specification reads): the loss is the
   same bits (the forward computes the same numbers), and every gradient
   agrees to round-off (the repeats' gradients are added before the norm's
   backward, which is linear in them, instead of after). Sources masked
   too, and two layers: each asks the same pairs. */
TEST(graph_context_keys_once_per_distinct_token_are_the_tokens_keys)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *tr = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, K = 4;
    kgl_config cfg = graph_config(&ds, K);
    cfg.query_relation = cfg.qk_norm = cfg.learn_temperature = true;
    cfg.layers = 2;
    kgl_model m;
    graph_model(&m, &cfg, 5, &ds);
    int head[128], rel[128], tail[128];
    if (!CHECK(2 * n_tr <= 128)) return;
    for (int k = 0; k < n_tr; k++) { /* each triple and its reciprocal: entities repeat */
        head[k] = tr[k].head, rel[k] = tr[k].rel, tail[k] = tr[k].tail;
        head[n_tr + k] = tr[k].tail, rel[n_tr + k] = tr[k].rel + cfg.n_relations, tail[n_tr + k] = tr[k].head;
    }
    int n = 2 * n_tr;
    kgl_arena arena = {0};
    kgl_neighbourhood *nb = kgl_neighbourhood_alloc(&arena, m.graph, n, K, false);
    kgl_neighbourhood_find_distinct(nb, &arena); /* and its distinct tokens, checked too */
    kgl_neighbourhood_fixed(nb, head, rel, tail, n, false);
    kgl_rng mask;
    kgl_rng_seed(&mask, 3);
    kgl_neighbourhood_mask_sources(nb, 0.3, &mask);
    int tokens = nb->offsets[n];
    CHECK(pairs_are_the_distinct_tokens(nb));
    if (!CHECK(nb->n_pairs < tokens)) printf("    %d pairs of %d tokens: nothing repeats\n", nb->n_pairs, tokens);
    kgl_tape tape;
    kgl_tape_init(&tape);
    kgl_batch b = {n, head, rel, tail, nb};
    double loss[2];
    kgl_real *grad[2];
    for (int way = 0; way < 2; way++) {
        if (way == 1) { /* every token its own pair */
            for (int t = 0; t < tokens; t++) {
                nb->pair_slot[t] = nb->slot[t], nb->pair_relation[t] = nb->relation[t];
                nb->token_pair[t] = t;
            }
            nb->n_pairs = tokens;
        }
        kgl_params_zero_grad(&m.params);
        kgl_tape_reset(&tape);
        kgl_forward f;
        kgl_model_loss(&m, &tape, &b, NULL, &f);
        loss[way] = f.loss->data[0];
        kgl_backward(&tape, f.loss);
        grad[way] = malloc(m.params.total * sizeof(kgl_real));
        memcpy(grad[way], m.params.block + m.params.total, m.params.total * sizeof(kgl_real));
    }
    if (!CHECK(loss[0] == loss[1])) printf("    loss %.17g, token by token %.17g\n", loss[0], loss[1]);
    double worst = 0, scale = 0;
    for (size_t k = 0; k < m.params.total; k++) {
        worst = fmax(worst, fabs((double)grad[0][k] - (double)grad[1][k]));
        scale = fmax(scale, fabs((double)grad[1][k]));
    }
    /* round-off of sums of O(10) terms: 1e-12 of the largest gradient in
       binary64, 1e-4 in binary32 (its epsilon is 1.2e-7) */
    double tol = sizeof(kgl_real) == 8 ? 1e-12 : 1e-4;
    if (!CHECK(scale > 0 && worst <= tol * scale)) printf("    gradients differ by %.3g (largest %.3g)\n", worst, scale);
    free(grad[0]);
    free(grad[1]);
    kgl_tape_free(&tape);
    kgl_arena_free(&arena);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* Evaluation's rule is the graph's fixed order: each entity's edges sorted
   by kgl_edge_key, recomputed here from the triples, the first K taken. */
TEST(graph_context_evaluation_takes_the_first_edges_by_key)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *tr = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, m = ds.n_relations, n = ds.n_entities;
    kgl_graph g;
    kgl_graph_build(&g, n, m, tr, n_tr);
    int K = 3, ids[64];
    for (int i = 0; i < n; i++) ids[i] = i;
    kgl_arena arena = {0}; /* the neighbourhoods' room */
    kgl_neighbourhood *nb = kgl_neighbourhood_alloc(&arena, &g, n, K, false);
    kgl_neighbourhood_fixed(nb, ids, NULL, NULL, n, false);
    for (int i = 0; i < n; i++) {
        /* every edge of i with its key, the smallest K by a selection here */
        uint64_t key[64];
        int er[64], ej[64], deg = 0;
        for (int k = 0; k < n_tr; k++) {
            if (tr[k].head == i) er[deg] = tr[k].rel, ej[deg] = tr[k].tail, key[deg] = kgl_edge_key(i, er[deg], ej[deg]), deg++;
            if (tr[k].tail == i) er[deg] = m + tr[k].rel, ej[deg] = tr[k].head, key[deg] = kgl_edge_key(i, er[deg], ej[deg]), deg++;
        }
        int want = deg < K ? deg : K;
        if (!CHECK(nb->offsets[i + 1] - nb->offsets[i] == 1 + want)) continue;
        for (int s = 0; s < want; s++) {
            int best = -1;
            for (int k = 0; k < deg; k++)
                if (key[k] != UINT64_MAX && (best < 0 || key[k] < key[best])) best = k;
            key[best] = UINT64_MAX;
            int t = nb->offsets[i] + 1 + s;
            CHECK(nb->relation[t] == er[best] && nb->entity[t] == ej[best]);
        }
    }
    kgl_arena_free(&arena);
    kgl_graph_free(&g);
    kgl_dataset_free(&ds);
}

/* A training step's neighbourhoods (what the trainer hands the layer) obey
   the rule too, under shuffled batches and reciprocals, and depend on the
   seed and the step only. */
TEST(graph_context_trainer_batches_leave_out_the_asked_triple)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.context = KGL_CONTEXT_GRAPH;
    cfg.neighbours = 2;
    kgl_train_config tc = {.batch = 7, .seed = 3, .optim = {0}};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer tr;
    kgl_trainer_init(&tr, &ds, ds.splits[0].triples, ds.splits[0].n, &cfg, &tc);
    int first_tokens[64], n_first = 0;
    for (int step = 0; step < 30; step++) {
        if (!CHECK(isfinite(kgl_trainer_step(&tr)))) break;
        const kgl_neighbourhood *nb = tr.fwd.neighbourhood;
        if (!CHECK(nb == tr.neighbourhood)) break;
        check_segments(T, ds.splits[0].triples, ds.splits[0].n, ds.n_relations, nb, tr.b_head, tr.b_rel, tr.b_tail, 2);
        if (step == 0)
            for (n_first = 0; n_first < nb->offsets[nb->n] && n_first < 64; n_first++)
                first_tokens[n_first] = nb->entity[n_first];
    }
    kgl_trainer_free(&tr);
    /* the same seed draws the same first neighbourhoods */
    kgl_trainer_init(&tr, &ds, ds.splits[0].triples, ds.splits[0].n, &cfg, &tc);
    kgl_trainer_step(&tr);
    bool same = tr.neighbourhood->offsets[tr.neighbourhood->n] == n_first;
    for (int k = 0; k < n_first && same; k++) same = tr.neighbourhood->entity[k] == first_tokens[k];
    CHECK(same);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* Nothing of size n × n: a graph of 20,000 entities (a ring, so every entity
   has two edges) trains a step, is evaluated and reports its attention by
   relation within a few megabytes of arena, where the full context would
   need 20,000² doubles (3.2 GB) a head. */
TEST(graph_context_memory_does_not_grow_with_n_squared)
{
    enum { N = 20000 };
    char *text = malloc((size_t)N * 32);
    size_t len = 0;
    for (int i = 0; i < N; i++) len += (size_t)sprintf(text + len, "e%d\tnext\te%d\n", i, (i + 1) % N);
    kgl_source src = {"ring.tsv", text, len};
    kgl_dataset ds;
    char e[512];
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e))) return;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.context = KGL_CONTEXT_GRAPH;
    cfg.dim = 8;
    kgl_train_config tc = {.batch = 256, .seed = 1, .optim = {0}};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer tr;
    kgl_trainer_init(&tr, &ds, ds.splits[0].triples, ds.splits[0].n, &cfg, &tc);
    CHECK(isfinite(kgl_trainer_step(&tr)));
    CHECK(isfinite(kgl_trainer_step(&tr)));
    /* a step: the readout's 256 × 20,000 scores and their gradient (2 × 41 MB)
       dominate; far below one head's 3.2 GB */
    CHECK(tr.tape.arena.high_water < (size_t)200 << 20);
    kgl_tensor *C = kgl_trainer_states(&tr);
    CHECK(C->rows == N && C->cols == 8 && isfinite(C->data[(size_t)N * 8 - 1]));
    CHECK(tr.eval_tape.arena.high_water < (size_t)16 << 20); /* C itself is 1.3 MB */
    double spec[2];
    kgl_model_relation_attention(&tr.model, NULL, NULL, 0, spec, NULL, NULL);
    CHECK(spec[0] > 0 && spec[0] < 1);
    /* the estimate kgl train checks before allocating says the same */
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
    free(text);
}

/* --context none is the readout on the embeddings: one example's loss is
   the cross entropy of Σ_c E[i,c] R[r,c] E[j,c] over j, computed here. */
TEST(no_context_is_the_readout_on_the_embeddings)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = ds.n_entities;
    cfg.n_relations = ds.n_relations;
    cfg.context = KGL_CONTEXT_NONE;
    cfg.ffn = 16; /* ignored: no layer */
    kgl_model m;
    kgl_model_create(&m, &cfg);
    CHECK(m.params.n == 2 && m.cfg.ffn == 0 && m.layer[0].wq == NULL);
    kgl_rng rng;
    kgl_rng_seed(&rng, 5);
    kgl_model_init(&m, &rng);
    int h = 3, r = 1, t = 7, n = ds.n_entities, d = cfg.dim;
    kgl_batch b = {1, &h, &r, &t, NULL};
    kgl_tape tape;
    kgl_tape_init(&tape);
    kgl_forward f;
    kgl_model_loss(&m, &tape, &b, NULL, &f);
    double s[64], mx = -INFINITY, z = 0;
    for (int j = 0; j < n; j++) {
        s[j] = 0;
        for (int c = 0; c < d; c++)
            s[j] += m.entity_emb->data[h * d + c] * m.relation_emb->data[r * d + c] * m.entity_emb->data[j * d + c];
        mx = fmax(mx, s[j]);
    }
    for (int j = 0; j < n; j++) z += exp(s[j] - mx);
    /* the same sums in another order: round-off of a few ulps of O(10) values */
    CHECK_NEAR(f.loss->data[0], mx + log(z) - s[t], 1e-12);
    kgl_tape_free(&tape);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

/* The command line: the contexts train, save, resume exactly and evaluate;
   the options that need the full context say so. */
TEST(graph_context_command_line)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --context graph --neighbours 3 --steps 30 --save %s/g.st --json", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\"final_loss\":") != NULL);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/g.st", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "both directions: MRR") != NULL);
    /* the training log's saturation diagnostics, measured over the step's segments */
    snprintf(cmd, sizeof cmd, "train --context graph --neighbours 3 --steps 20 --log-every 10 --log %s/g.csv --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd,
             "command -v python3 >/dev/null || exit 77; "
             "python3 -c \"import csv; r=list(csv.DictReader(open('%s/g.csv'))); row=r[-1]; "
             "print(row['step'], row['h0_max_prob_mean'], row['h0_entropy'], row['h0_jac_fro'], row['h0_grad_logits'], "
             "row['h1_grad_wq'], row['h0_attn_tv'] or 'nan')\"", T->tmp);
    int st = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    if (st == 77) test_skip(T, "python3 not installed (the CSV check)");
    else if (CHECK(st == 0)) {
        double mp, ent, jac, gl, gwq, tv;
        long step;
        CHECK(sscanf(out, "%ld %lf %lf %lf %lf %lf %lf", &step, &mp, &ent, &jac, &gl, &gwq, &tv) == 7);
        /* a segment of at most 4 tokens: max weight in [1/4, 1], entropy in [0, log 4] */
        CHECK(step == 20 && mp >= 0.25 && mp <= 1 && ent >= 0 && ent <= log(4) + 1e-12);
        CHECK(jac > 0 && gl > 0 && gwq > 0 && isnan(tv)); /* no fixed reference for the weights' change */
    }
    /* predict needs the training graph: the embedded world's here */
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s/g.st --head carol --relation advises", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "attends over its training graph (--context graph): give the triples") != NULL);
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s/g.st --train data/academic.tsv --head carol --relation advises",
             T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "carol") != NULL);
    /* heads: where each head's weight goes by relation, against uniform, summing with the weight on itself */
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/g.st --train data/academic.tsv --svg %s/hs", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "neighbourhoods of at most 3 edges") != NULL && strstr(out, "(itself)") != NULL);
    CHECK(strstr(out, "\nadvises ") != NULL && strstr(out, "head ablation: MRR") != NULL);
    snprintf(cmd, sizeof cmd, "%s/hs/relations.svg", T->tmp);
    char *svg = test_slurp(cmd, NULL);
    CHECK(svg && strstr(svg, "<svg") && strstr(svg, "affiliated"));
    free(svg);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/g.st --train data/academic.tsv --json", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    static const char json_start[] = "{\"ensemble\":1,\"member\":0,\"step\":30,\"heads\":2,\"context\":\"graph\",\"neighbours\":3,";
    CHECK(strncmp(out, json_start, sizeof json_start - 1) == 0);
    /* every head's weights over a neighbourhood sum to 1: on each relation's edges and on itself. With K 3
       and at most 3 relations a neighbourhood, a head's mean weights cannot exceed 1 anywhere */
    const char *self = strstr(out, "\"self\":[");
    double s0 = -1;
    CHECK(self && sscanf(self, "\"self\":[%lf", &s0) == 1 && s0 > 0 && s0 < 1);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/g.st --train data/academic.tsv --query alice,advises", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0); /* the question's neighbourhood: cli_heads_query.c */
    CHECK(strstr(out, "a neighbourhood of ") != NULL);
    CHECK(run_kgl(T, "train --neighbours 3", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--neighbours needs --context graph") != NULL);
    CHECK(run_kgl(T, "train --edge-dropout 0.3", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--edge-dropout needs --context graph") != NULL);
    CHECK(run_kgl(T, "train --source-dropout 0.3", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--source-dropout needs --context graph") != NULL);
    /* edge dropout changes training: the segments thin */
    snprintf(cmd, sizeof cmd, "train --context graph --neighbours 3 --steps 30 --edge-dropout 0.5 --json");
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char plain[64], thinned[64];
    CHECK(test_json_raw(out, "final_loss", thinned, sizeof thinned));
    snprintf(cmd, sizeof cmd, "train --context graph --neighbours 3 --steps 30 --json");
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(test_json_raw(out, "final_loss", plain, sizeof plain));
    CHECK(strcmp(plain, thinned) != 0);
    CHECK(run_kgl(T, "train --context graph --supervise-heads advises=0", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--supervise-heads needs --context full") != NULL);
    CHECK(run_kgl(T, "train --context sparse", out, sizeof out, err, sizeof err) == 2);
    snprintf(cmd, sizeof cmd, "train --context none --steps 30 --save %s/n.st --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/n.st", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/n.st", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "has no attention (--context none)") != NULL);
}

/* --query-relation: the query token carries the asked relation, so a state
   is one per question. Checked against plain loops: the state of a question
   is a function of that question alone (the same bits asked alone or among
   others), adds Pq[r] to the query token and nothing else (with Pq zero it
   is the unasked state, which is kgl_model_context's), differs between two
   relations, and the evaluation ranks each question by its own state: its
   MRR equals the one computed here from kgl_model_query_states, a plain
   readout loop and a plain filtered count. */
TEST(graph_query_relation_states_are_per_question_and_evaluated_so)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.context = KGL_CONTEXT_GRAPH;
    cfg.neighbours = 3;
    cfg.query_relation = true;
    kgl_train_config tc = {.batch = 16, .seed = 2, .optim = {0}};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer tr;
    const kgl_triple *trip = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, n = ds.n_entities, m = ds.n_relations, d = cfg.dim;
    kgl_trainer_init(&tr, &ds, trip, n_tr, &cfg, &tc);
    for (int s = 0; s < 40; s++) CHECK(isfinite(kgl_trainer_step(&tr)));
    const kgl_model *md = &tr.model;
    enum { Q = 2 * 64 };
    if (!CHECK(2 * n_tr <= Q)) return;
    int ent[Q], rel[Q];
    for (int k = 0; k < n_tr; k++) {
        ent[k] = trip[k].head, rel[k] = trip[k].rel;
        ent[n_tr + k] = trip[k].tail, rel[n_tr + k] = m + trip[k].rel;
    }
    static kgl_real states[Q * 64], one[64], unasked[Q * 64];
    if (!CHECK(d <= 64)) return;
    kgl_model_query_states(md, NULL, ent, rel, 2 * n_tr, states);
    /* asked alone: the same bits */
    bool same = true;
    for (int k = 0; k < 2 * n_tr; k += 7) {
        kgl_model_query_states(md, NULL, ent + k, rel + k, 1, one);
        same &= memcmp(one, states + (size_t)k * d, (size_t)d * sizeof(kgl_real)) == 0;
    }
    CHECK(same);
    /* two relations asked of one entity: two states */
    int e2[2] = {ent[0], ent[0]}, r2[2] = {0, 1};
    kgl_real two[2 * 64];
    kgl_model_query_states(md, NULL, e2, r2, 2, two);
    CHECK(memcmp(two, two + d, (size_t)d * sizeof(kgl_real)) != 0);
    /* unasked: kgl_model_context's rows; with Pq zero every question is its entity's unasked state */
    CHECK(kgl_trainer_states(&tr) == NULL); /* evaluation reads none: it computes none */
    kgl_forward f;
    kgl_tensor *C = kgl_trainer_context(&tr, &f);
    kgl_model_query_states(md, NULL, ent, NULL, 2 * n_tr, unasked);
    same = true;
    for (int k = 0; k < 2 * n_tr; k++)
        same &= memcmp(unasked + (size_t)k * d, C->data + (size_t)ent[k] * d, (size_t)d * sizeof(kgl_real)) == 0;
    CHECK(same);
    size_t pq = kgl_numel(md->context_query_emb);
    kgl_real *saved = malloc(pq * sizeof(kgl_real));
    memcpy(saved, md->context_query_emb->data, pq * sizeof(kgl_real));
    memset(md->context_query_emb->data, 0, pq * sizeof(kgl_real));
    kgl_model_query_states(md, NULL, ent, rel, 2 * n_tr, unasked);
    same = true;
    for (int k = 0; k < 2 * n_tr; k++)
        same &= memcmp(unasked + (size_t)k * d, C->data + (size_t)ent[k] * d, (size_t)d * sizeof(kgl_real)) == 0;
    CHECK(same);
    memcpy(md->context_query_emb->data, saved, pq * sizeof(kgl_real));
    free(saved);
    /* the evaluation's MRR, by hand from each question's own state */
    double rr = 0;
    for (int k = 0; k < 2 * n_tr; k++) {
        const kgl_real *s = states + (size_t)k * d, *R = md->relation_emb->data + (size_t)rel[k] * d;
        int target = k < n_tr ? trip[k].tail : trip[k - n_tr].head;
        double score[64], higher = 0, equal = 0;
        for (int j = 0; j < n; j++) {
            score[j] = 0;
            for (int c = 0; c < d; c++) score[j] += s[c] * R[c] * md->entity_emb->data[(size_t)j * d + c];
        }
        int count;
        const int *known = kgl_dataset_known(&ds, ent[k], rel[k], &count);
        for (int j = 0; j < n; j++) {
            bool filtered = false;
            for (int u = 0; u < count; u++) filtered |= known[u] == j && j != target;
            if (filtered || j == target) continue;
            higher += score[j] > score[target];
            equal += score[j] == score[target];
        }
        rr += 1.0 / (1 + higher + equal / 2);
    }
    kgl_eval ev;
    kgl_eval_init(&ev, n, m);
    kgl_evaluate(md, C, &ds, trip, n_tr, &ev);
    /* the same sums in another order: ranks agree unless two scores lie within
       round-off (1e-15 of O(1) values), which 40 steps from a seeded init do not make */
    CHECK_NEAR(ev.both.mrr, rr / (2 * n_tr), 1e-12);
    /* without entity states (what the trainer now passes): the same bits */
    double with_states = ev.both.mrr;
    kgl_evaluate(md, NULL, &ds, trip, n_tr, &ev);
    CHECK(ev.both.mrr == with_states);
    /* and kgl_predict answers a question with its own state: the evaluation's scores */
    kgl_answer best;
    CHECK(kgl_predict(md, C->data, NULL, ent[0], rel[0], 1, false, &best) == 1);
    double top = -INFINITY;
    for (int j = 0; j < n; j++) {
        double sc = 0;
        for (int c = 0; c < d; c++)
            sc += states[c] * md->relation_emb->data[(size_t)rel[0] * d + c] * md->entity_emb->data[(size_t)j * d + c];
        top = fmax(top, sc);
    }
    CHECK_NEAR(best.score, top, 1e-12);
    /* without the caller's states: none are computed, the same answer to the bit */
    kgl_answer again;
    CHECK(kgl_predict(md, NULL, NULL, ent[0], rel[0], 1, false, &again) == 1);
    CHECK(again.entity == best.entity && again.score == best.score);
    kgl_eval_free(&ev);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* Whether entity a touches entity b by a training triple of any relation
   other than r (either direction), by a plain scan. */
static bool linked_otherwise(const kgl_triple *tr, int n, int a, int b, int r)
{
    for (int k = 0; k < n; k++)
        if (tr[k].rel != r && ((tr[k].head == a && tr[k].tail == b) || (tr[k].head == b && tr[k].tail == a)))
            return true;
    return false;
}

/* --hide-asked-relation: a question (i, r) never sees i's edges of relation r.
   In training (1vsall, where only the asked triple would be left out) no
   token of a segment carries the asked relation; in evaluation the state of
   (i, r) does not depend on a neighbour j that i reaches only by r, while
   without the option it does (so the check can fail), and the question of
   another relation still sees j. */
TEST(graph_hide_asked_relation_in_training_and_evaluation)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *trip = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, m = ds.n_relations;
    /* a triple (i, r, j) whose j is i's neighbour by r alone, and a relation r2 of another edge of i */
    int qi = -1, qr = -1, qj = -1, r2 = -1;
    for (int k = 0; k < n_tr && qi < 0; k++) {
        int i = trip[k].head, j = trip[k].tail, r = trip[k].rel;
        if (i == j || linked_otherwise(trip, n_tr, i, j, r)) continue;
        for (int u = 0; u < n_tr && r2 < 0; u++)
            if (trip[u].head == i && trip[u].rel != r) r2 = trip[u].rel;
        if (r2 >= 0) qi = i, qr = r, qj = j;
    }
    if (!CHECK(qi >= 0)) return;
    for (int hide = 0; hide < 2; hide++) {
        kgl_config cfg;
        kgl_config_defaults(&cfg);
        cfg.context = KGL_CONTEXT_GRAPH;
        cfg.neighbours = 50; /* every edge of the academic world's entities */
        cfg.query_relation = true;
        cfg.hide_asked = hide;
        kgl_train_config tc = {.batch = 8, .seed = 4, .optim = {0}};
        kgl_optim_defaults(&tc.optim);
        kgl_trainer tr;
        kgl_trainer_init(&tr, &ds, trip, n_tr, &cfg, &tc);
        int tokens_of_asked = 0;
        for (int step = 0; step < 20; step++) {
            if (!CHECK(isfinite(kgl_trainer_step(&tr)))) break;
            const kgl_neighbourhood *nb = tr.neighbourhood;
            check_segments(T, trip, n_tr, m, nb, tr.b_head, tr.b_rel, tr.b_tail, 50);
            for (int b = 0; b < nb->n; b++)
                for (int t = nb->offsets[b] + 1; t < nb->offsets[b + 1]; t++) tokens_of_asked += nb->relation[t] == tr.b_rel[b];
        }
        /* hidden: none; shown: the academic world's entities have several edges of a relation */
        CHECK(hide ? tokens_of_asked == 0 : tokens_of_asked > 0);
        kgl_model *md = &tr.model;
        int d = cfg.dim, ent[2] = {qi, qi}, rel[2] = {qr, r2};
        kgl_real before[2 * 64], after[2 * 64];
        if (!CHECK(d <= 64)) break;
        kgl_model_query_states(md, NULL, ent, rel, 2, before);
        kgl_real *row = md->entity_emb->data + (size_t)qj * d;
        for (int c = 0; c < d; c++) row[c] += 0.5; /* move j */
        kgl_model_query_states(md, NULL, ent, rel, 2, after);
        bool same_asked = memcmp(before, after, (size_t)d * sizeof(kgl_real)) == 0;
        bool same_other = memcmp(before + d, after + d, (size_t)d * sizeof(kgl_real)) == 0;
        CHECK(hide ? same_asked : !same_asked); /* (i, r): j hidden, or seen */
        CHECK(!same_other);                     /* (i, r2) sees j either way */
        kgl_trainer_free(&tr);
    }
    kgl_dataset_free(&ds);
}

/* --relation-token: every training segment holds the asked relation as its
   second token (check_segments), and a question's state is the layer over
   it: with K = 0 the segment is the entity and the relation alone, and the
   state is recomputed here by hand from "The model, exactly" (two tokens,
   H heads, LN): x_b = E[i] + P[2m] + Pq[r], tokens x_0 = E[i] + P[2m] and
   x_1 = P[2m + 1 + r]. With K = 3 the state depends on P[2m + 1 + r] and on
   no other relation's token row. */
TEST(graph_relation_token_is_a_token_of_the_question)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *trip = ds.splits[0].triples;
    int n_tr = ds.splits[0].n, m = ds.n_relations;
    for (int K = 0; K <= 3; K += 3) {
        kgl_config cfg;
        kgl_config_defaults(&cfg);
        cfg.context = KGL_CONTEXT_GRAPH;
        cfg.neighbours = K;
        cfg.query_relation = cfg.relation_token = true;
        kgl_train_config tc = {.batch = 8, .seed = 5, .optim = {0}};
        kgl_optim_defaults(&tc.optim);
        kgl_trainer tr;
        kgl_trainer_init(&tr, &ds, trip, n_tr, &cfg, &tc);
        CHECK(tr.model.context_relation_emb->rows == 4 * m + 1);
        for (int step = 0; step < 10; step++) {
            if (!CHECK(isfinite(kgl_trainer_step(&tr)))) break;
            check_segments(T, trip, n_tr, m, tr.neighbourhood, tr.b_head, tr.b_rel, tr.b_tail, K);
        }
        const kgl_model *md = &tr.model;
        int d = cfg.dim, H = cfg.heads, dk = d / H, i = trip[0].head, r = trip[0].rel;
        kgl_real state[64], moved[64];
        if (!CHECK(d <= 64)) break;
        kgl_model_query_states(md, NULL, &i, &r, 1, state);
        kgl_real *P = md->context_relation_emb->data;
        /* the values' order (layer.c): with edges, each head's sum of the
           tokens' rows projected after it; the question alone, per entity */
        int sums = 0, weighted = 0;
        for (const kgl_node *nd = tr.tape.last; nd; nd = nd->prev) {
            sums += strcmp(nd->op->name, "segment_head_sums") == 0;
            weighted += strcmp(nd->op->name, "segment_weighted_sum") == 0;
        }
        if (!CHECK(K > 0 ? sums == 1 && weighted == 0 : weighted == 1 && sums == 0))
            printf("    K %d: %d head sums, %d weighted sums on the last step's tape\n", K, sums, weighted);
        kgl_segment_view seg;
        kgl_model_question_segment(md, i, r, &seg);
        if (CHECK(seg.n_tokens >= 2 && seg.n_tokens <= 8)) { /* by hand, from the question's tokens, in either order */
            const kgl_block *L = &md->layer[0];
            int nt = seg.n_tokens;
            double xb[64], x[8][64], q[64], k[8][64], v[8][64], o[64] = {0}, u[64];
            for (int c = 0; c < d; c++) {
                xb[c] = md->entity_emb->data[(size_t)i * d + c] + P[(size_t)2 * m * d + c] +
                        md->context_query_emb->data[(size_t)r * d + c];
                for (int t = 0; t < nt; t++) /* x_t = E[entity] (none for the asked relation) + P[its row] */
                    x[t][c] = (seg.entity[t] >= 0 ? md->entity_emb->data[(size_t)seg.entity[t] * d + c] : 0) +
                              P[(size_t)seg.relation[t] * d + c];
            }
            for (int c = 0; c < d; c++) {
                q[c] = 0;
                for (int t = 0; t < nt; t++) k[t][c] = v[t][c] = 0;
                for (int a = 0; a < d; a++) {
                    q[c] += xb[a] * L->wq->data[a * d + c];
                    for (int t = 0; t < nt; t++) {
                        k[t][c] += x[t][a] * L->wk->data[a * d + c];
                        v[t][c] += x[t][a] * L->wv->data[a * d + c];
                    }
                }
            }
            for (int h = 0; h < H; h++) {
                double sc[8], mx = -INFINITY, z = 0;
                for (int t = 0; t < nt; t++) {
                    sc[t] = 0;
                    for (int c = h * dk; c < (h + 1) * dk; c++) sc[t] += q[c] * k[t][c];
                    sc[t] /= sqrt(dk);
                    mx = fmax(mx, sc[t]);
                }
                for (int t = 0; t < nt; t++) z += (sc[t] = exp(sc[t] - mx));
                for (int c = h * dk; c < (h + 1) * dk; c++)
                    for (int t = 0; t < nt; t++) o[c] += sc[t] / z * v[t][c];
            }
            double mu = 0, var = 0;
            for (int c = 0; c < d; c++) {
                u[c] = xb[c];
                for (int a = 0; a < d; a++) u[c] += o[a] * L->wo->data[a * d + c];
                mu += u[c] / d;
            }
            for (int c = 0; c < d; c++) var += (u[c] - mu) * (u[c] - mu) / d;
            double worst = 0;
            for (int c = 0; c < d; c++) {
                double want = L->ln1_gamma->data[c] * (u[c] - mu) / sqrt(var + 1e-5) + L->ln1_beta->data[c];
                worst = fmax(worst, fabs(state[c] - want));
            }
            /* the same sums in another order: round-off of O(1) values, 1e-12
               has room in binary64, 1e-4 in binary32 (epsilon 1.2e-7) */
            if (!CHECK(worst < (sizeof(kgl_real) == 8 ? 1e-12 : 1e-4))) printf("    K %d: off by %.3g\n", K, worst);
        }
        kgl_segment_view_free(&seg);
        if (K == 0) {
            /* no edges: the weight by relation is undefined everywhere (the asked token is no edge) */
            double spec[2 * 8 * 8];
            if (!CHECK(H * m <= 2 * 8 * 8)) break;
            kgl_model_relation_attention(md, NULL, trip, n_tr, spec, NULL, NULL);
            bool none = true;
            for (int k = 0; k < H * m; k++) none &= isnan(spec[k]);
            CHECK(none);
        }
        /* the question's segment as kgl heads shows it: the asked relation second, named, no answer */
        kgl_segment_view sv;
        kgl_model_question_segment(md, i, r, &sv);
        char name[700], want[700];
        bool none[64] = {false}, every[64];
        for (int k = 0; k < 64; k++) every[k] = true;
        if (CHECK(sv.n_tokens >= 2 && ds.n_entities <= 64)) {
            CHECK(sv.entity[1] == -1 && sv.relation[1] == 2 * m + 1 + r);
            kgl_segment_token_name(&ds, &sv, 1, name, sizeof name);
            snprintf(want, sizeof want, "(asked) %s", ds.relation_names[r]);
            CHECK(strcmp(name, want) == 0);
            kgl_segment_token_name(&ds, &sv, 0, name, sizeof name);
            snprintf(want, sizeof want, "(itself) %s", ds.entity_names[i]);
            CHECK(strcmp(name, want) == 0);
            CHECK(!kgl_segment_token_is(&sv, 1, every) && kgl_segment_token_is(&sv, 0, every) &&
                  !kgl_segment_token_is(&sv, 0, none));
        }
        kgl_segment_view_free(&sv);
        /* the asked relation's token row moves the state; another relation's does not */
        int other = (r + 1) % m;
        P[(size_t)(2 * m + 1 + other) * d] += 0.5;
        kgl_model_query_states(md, NULL, &i, &r, 1, moved);
        CHECK(memcmp(state, moved, (size_t)d * sizeof(kgl_real)) == 0);
        P[(size_t)(2 * m + 1 + r) * d] += 0.5;
        kgl_model_query_states(md, NULL, &i, &r, 1, moved);
        CHECK(memcmp(state, moved, (size_t)d * sizeof(kgl_real)) != 0);
        kgl_trainer_free(&tr);
    }
    kgl_dataset_free(&ds);
}

/* --relation-token on the command line: needs --query-relation, allows
   --neighbours 0 (which needs it), is remembered by the checkpoint and
   resumes, evaluates and answers. */
TEST(graph_relation_token_command_line)
{
    char cmd[1024];
    CHECK(run_kgl(T, "train --context graph --relation-token", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--relation-token needs --query-relation") != NULL);
    CHECK(run_kgl(T, "train --context graph --query-relation --neighbours 0", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--neighbours must be between 1 and 4096 (0 with --relation-token") != NULL);
    for (int K = 0; K <= 3; K += 3) {
        snprintf(cmd, sizeof cmd,
                 "train --context graph --query-relation --relation-token --neighbours %d --steps 30 --save %s/t%d.st "
                 "--quiet", K, T->tmp, K);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        snprintf(cmd, sizeof cmd, "%s/t%d.st", T->tmp, K);
        size_t len = 0;
        char *st = test_slurp(cmd, &len);
        CHECK(st && len > 8 && strstr(st + 8, "\"relation_token\":\"1\""));
        free(st);
        snprintf(cmd, sizeof cmd, "eval --checkpoint %s/t%d.st", T->tmp, K);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        CHECK(strstr(out, "both directions: MRR") != NULL);
        snprintf(cmd, sizeof cmd, "train --resume %s/t%d.st --steps 5 --quiet", T->tmp, K);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        snprintf(cmd, sizeof cmd, "predict --checkpoint %s/t%d.st --train data/academic.tsv --head alice --relation advises",
                 T->tmp, K);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    }
    /* the report of a model with no edges says so, instead of a table of NaN
       (no neighbourhood holds an edge to weigh); with edges the table is there */
    CHECK(run_kgl(T, "train --context graph --query-relation --relation-token --neighbours 0 --steps 5", out, sizeof out,
                  err, sizeof err) == 0);
    CHECK(strstr(out, "head by relation spec: no neighbourhood held an edge") != NULL && strstr(out, "nan") == NULL);
    CHECK(run_kgl(T, "train --context graph --query-relation --relation-token --neighbours 3 --steps 5", out, sizeof out,
                  err, sizeof err) == 0);
    CHECK(strstr(out, "head by relation spec[h][r]") != NULL && strstr(out, "no neighbourhood held") == NULL);
    /* a model trained without it cannot be resumed with it */
    snprintf(cmd, sizeof cmd, "train --context graph --query-relation --neighbours 3 --steps 5 --save %s/q.st --quiet",
             T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "train --resume %s/q.st --relation-token --steps 5 --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--relation-token differs from the checkpoint") != NULL);
}

/* --query-relation on the command line: needs the graph context, trains,
   saves, evaluates, resumes (the checkpoint remembers it: metadata query),
   and kgl heads measures its weights over the training triples' questions. */
TEST(graph_query_relation_command_line)
{
    char cmd[1024];
    CHECK(run_kgl(T, "train --query-relation", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--query-relation needs --context graph") != NULL);
    snprintf(cmd, sizeof cmd, "train --context graph --query-relation --neighbours 3 --steps 30 --save %s/q.st --quiet",
             T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "%s/q.st", T->tmp);
    size_t len = 0;
    char *st = test_slurp(cmd, &len);
    /* the JSON header follows its 8-byte length */
    CHECK(st && len > 8 && strstr(st + 8, "\"query\":\"relation\"") && strstr(st + 8, "context.query_emb"));
    free(st);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/q.st", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "both directions: MRR") != NULL);
    snprintf(cmd, sizeof cmd, "train --resume %s/q.st --steps 5 --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/q.st --train data/academic.tsv --json", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    const char *self = strstr(out, "\"self\":[");
    double s0 = -1;
    CHECK(self && sscanf(self, "\"self\":[%lf", &s0) == 1 && s0 > 0 && s0 < 1);
    /* a model trained without it cannot be resumed with it */
    snprintf(cmd, sizeof cmd, "train --context graph --neighbours 3 --steps 5 --save %s/g2.st --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "train --resume %s/g2.st --query-relation --steps 5 --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--query-relation differs from the checkpoint") != NULL);
    /* --hide-asked-relation: needs the question's state, is remembered, and is part of the model */
    CHECK(run_kgl(T, "train --context graph --hide-asked-relation", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--hide-asked-relation needs --query-relation") != NULL);
    snprintf(cmd, sizeof cmd,
             "train --context graph --query-relation --hide-asked-relation --neighbours 3 --steps 30 --save %s/h.st "
             "--quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "%s/h.st", T->tmp);
    st = test_slurp(cmd, &len);
    CHECK(st && len > 8 && strstr(st + 8, "\"asked_edges\":\"hidden\""));
    free(st);
    snprintf(cmd, sizeof cmd, "%s/q.st", T->tmp);
    st = test_slurp(cmd, &len);
    CHECK(st && len > 8 && strstr(st + 8, "\"asked_edges\":\"shown\""));
    free(st);
    snprintf(cmd, sizeof cmd, "train --resume %s/q.st --hide-asked-relation --steps 5 --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--hide-asked-relation differs from the checkpoint") != NULL);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s/h.st --json", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
}

/* The graphs of real size ship gzip'd in data/kg; unpacked they are byte for
   byte the published files (data/kg/README.md lists their git blob ids). */
TEST(large_benchmark_data_is_the_published_files)
{
    static const char *const files[][2] = {
        {"fb15k-237/train", "64905fe4545b7f2f75454d0b6fd52dfdcab90ed4"},
        {"fb15k-237/valid", "1eb92bf5af311b25748db1b5d85db39cb34ba2e8"},
        {"fb15k-237/test", "01f6b3bf2fdc68b4913e816ac859921b740d09ee"},
        {"wn18rr/train", "7c7d11ee21594d729ef90f20ecef3adf7573109d"},
        {"wn18rr/valid", "ca0bf43869c6b537b667b4f284c6074078bd0013"},
        {"wn18rr/test", "fbd87d236e7183fc60c9320895a714d3f4716da0"},
    };
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "command -v git >/dev/null && command -v gzip >/dev/null || exit 77; "
                 "gzip -dc data/kg/%s.txt.gz | git hash-object --stdin", files[k][0]);
        int st = run_sh(T, cmd, out, sizeof out, err, sizeof err);
        if (st == 77) {
            test_skip(T, "git or gzip not installed");
            return;
        }
        if (!CHECK(st == 0 && strncmp(out, files[k][1], 40) == 0)) printf("    %s: %.40s\n", files[k][0], out);
    }
}

/* When the full context's n x n weights do not fit, kgl train says so and
   points at the neighbourhood context, with which the same graph fits. */
TEST(full_context_that_does_not_fit_suggests_the_graph_context)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "awk 'BEGIN { for (i = 0; i < 3000; i++) printf \"e%%d\\tnext\\te%%d\\n\", i, (i + 1) %% 3000 }' "
             "> %s/ring.tsv", T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    /* the full context keeps (H + 1) 3000² doubles (216 MB for H = 2), about 0.5 GB in all: more than 250 MB;
       the graph context's estimate is about 0.2 GB (the readout's 1024 x 3000 scores, the tokens, 64 MB) */
    snprintf(cmd, sizeof cmd, "KGL_MEMORY_MB=250 '%s' train --train %s/ring.tsv --steps 1 --quiet", T->kgl, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "it fits with --context graph (each entity attends over its neighbourhood") != NULL);
    snprintf(cmd, sizeof cmd, "KGL_MEMORY_MB=250 '%s' train --train %s/ring.tsv --steps 1 --quiet --context graph", T->kgl,
             T->tmp);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("    %s\n", err);
}

/* --context none has no layer: the layer's options change nothing, and say so
   (a warning, not an error: a recipe written for the layer may set them). */
TEST(context_none_warns_that_layer_options_change_nothing)
{
    CHECK(run_kgl(T, "train --context none --ffn 16 --qk-norm --steps 2 --quiet", out, sizeof out, err, sizeof err) ==
          0);
    CHECK(strstr(err, "kgl train: warning: --context none has no layer, so --ffn --qk-norm change nothing") != NULL);
    CHECK(run_kgl(T, "train --context none --temperature learn --steps 2 --quiet", out, sizeof out, err, sizeof err) ==
          0);
    CHECK(strstr(err, "so --temperature learn changes nothing") != NULL);
    CHECK(run_kgl(T, "train --context none --steps 2 --quiet", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "warning") == NULL);
    CHECK(run_kgl(T, "train --context graph --ffn 16 --steps 2 --quiet", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "warning") == NULL);
    /* the baseline of a graph recipe is the recipe with --context none: its
       neighbourhood options are named, not refused (issue 48) */
    CHECK(run_kgl(T,
                  "train --train data/walkthrough/family.train.tsv --valid data/walkthrough/family.valid.tsv "
                  "--test data/walkthrough/family.test.tsv "
                  "--recipe data/bench/large.args --context none --steps 2 --quiet",
                  out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "--neighbours --query-relation --hide-asked-relation --relation-token --outer-residual change nothing") != NULL);
    /* the same options with the full context are a mistake */
    CHECK(run_kgl(T, "train --query-relation --steps 2", out, sizeof out, err, sizeof err) == 2);
    CHECK(run_kgl(T, "train --neighbours 4 --steps 2", out, sizeof out, err, sizeof err) == 2);
}

/* --outer-residual (README, "The neighbourhood context" and "A stack of
   layers"): each layer's input added to its output, C = x + LN(x + o Wo).
   A trained model's states with the option are, bit for bit, its input
   plus the states of the same parameters without it: x_b = (E[i] + P[2m])
   + Pq[r] for a question of the graph context (the question alone and 3
   edges), E for the full context; the sum is one rounding in either
   precision, the same the op makes. */
/* A model with --outer-residual trained 10 steps on the academic world (away
   from its initial values): the full context (K -1) or the graph context's
   question with the relation token and K edges; false after a failed check. */
static bool outer_residual_trained(test_ctx *T, kgl_trainer *tr, const kgl_dataset *ds, int K, bool complex_readout,
                                   uint64_t seed)
{
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    if (K >= 0) {
        cfg.context = KGL_CONTEXT_GRAPH;
        cfg.neighbours = K;
        cfg.query_relation = cfg.relation_token = cfg.qk_norm = true;
        if (complex_readout) cfg.readout = KGL_READOUT_COMPLEX;
    }
    cfg.outer_residual = true;
    kgl_train_config tc = {.batch = 8, .seed = seed, .optim = {0}};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer_init(tr, ds, ds->splits[0].triples, ds->splits[0].n, &cfg, &tc);
    for (int step = 0; step < 10; step++)
        if (!CHECK(isfinite(kgl_trainer_step(tr)))) return false;
    return true;
}

/* Element c of a question's input row x: the graph context's x_b = (E[i] +
   P[2m]) + Pq[r], rounded as the model adds them; the full context's E[i]. */
static kgl_real question_input(const kgl_model *m, int i, int r, int c)
{
    int d = m->cfg.dim;
    const kgl_real *E = m->entity_emb->data;
    if (m->cfg.context != KGL_CONTEXT_GRAPH) return E[(size_t)i * d + c];
    kgl_real x = E[(size_t)i * d + c] + m->context_relation_emb->data[(size_t)2 * m->cfg.n_relations * d + c];
    return x + m->context_query_emb->data[(size_t)r * d + c];
}

TEST(outer_residual_state_is_the_input_plus_the_layer)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *trip = ds.splits[0].triples;
    for (int K = -1; K <= 3; K += 3) { /* -1: the full context */
        kgl_trainer tr;
        if (!outer_residual_trained(T, &tr, &ds, K, true, 3)) {
            kgl_trainer_free(&tr);
            break;
        }
        kgl_model with = tr.model, without = tr.model; /* the same parameters, read only */
        without.cfg.outer_residual = false;
        int d = with.cfg.dim, n = ds.n_entities;
        const kgl_real *E = with.entity_emb->data;
        long differ = 0, moved = 0;
        if (K >= 0) {
            for (int q = 0; q < 6; q++) {
                int i = trip[q].head, r = trip[q].rel;
                kgl_real a[64], b[64];
                if (!CHECK(d <= 64)) break;
                kgl_model_query_states(&with, NULL, &i, &r, 1, a);
                kgl_model_query_states(&without, NULL, &i, &r, 1, b);
                for (int c = 0; c < d; c++) {
                    differ += a[c] != question_input(&with, i, r, c) + b[c];
                    moved += a[c] != b[c];
                }
            }
        } else {
            kgl_tape t1, t2;
            kgl_tape_init(&t1);
            kgl_tape_init(&t2);
            kgl_forward f1, f2;
            kgl_model_context(&with, &t1, &f1);
            kgl_model_context(&without, &t2, &f2);
            for (size_t k = 0; k < (size_t)n * d; k++) {
                differ += f1.context->data[k] != E[k] + f2.context->data[k];
                moved += f1.context->data[k] != f2.context->data[k];
            }
            kgl_tape_free(&t1);
            kgl_tape_free(&t2);
        }
        if (!CHECK(differ == 0 && moved > 0)) printf("    K %d: %ld elements differ, %ld moved\n", K, differ, moved);
        kgl_trainer_free(&tr);
    }
    kgl_dataset_free(&ds);
}

/* --head-state input (README, "The neighbourhood context"): a head question
   (?, r, t) is asked as (t, r⁻¹, ?), its asked row m + r, and its state is
   its input row x_b = (E[t] + P[2m]) + Pq[m + r] exactly, not the layer's;
   a tail question's state is, bit for bit, the same parameters' state
   without the option (the layer's output), with 3 edges and two layers.
   A run with it trains other parameters than a run without (the head
   questions' gradient reaches the entity's row and Pq, not the layer). */
TEST(head_state_input_takes_the_input_row_for_head_questions)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *trip = ds.splits[0].triples;
    kgl_config cfg = graph_config(&ds, 3);
    cfg.query_relation = cfg.qk_norm = cfg.head_state_input = true;
    cfg.layers = 2;
    kgl_train_config tc = {.batch = 8, .seed = 4, .optim = {0}};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer with_tr, without_tr;
    kgl_trainer_init(&with_tr, &ds, trip, ds.splits[0].n, &cfg, &tc);
    cfg.head_state_input = false;
    kgl_trainer_init(&without_tr, &ds, trip, ds.splits[0].n, &cfg, &tc);
    for (int step = 0; step < 10; step++) {
        CHECK(isfinite(kgl_trainer_step(&with_tr)));
        CHECK(isfinite(kgl_trainer_step(&without_tr)));
    }
    kgl_model with = with_tr.model, layer_state = with_tr.model; /* the same parameters, read only */
    layer_state.cfg.head_state_input = false;
    int d = with.cfg.dim, m = ds.n_relations;
    long wrong = 0, heads = 0, tails = 0, layer_moved = 0;
    for (int q = 0; q < 12 && CHECK(d <= 64); q++) {
        bool head = q % 2; /* (h, r, ?) and (t, r⁻¹, ?) of the same triple */
        int i = head ? trip[q / 2].tail : trip[q / 2].head, r = head ? m + trip[q / 2].rel : trip[q / 2].rel;
        kgl_real a[64], b[64];
        kgl_model_query_states(&with, NULL, &i, &r, 1, a);
        kgl_model_query_states(&layer_state, NULL, &i, &r, 1, b);
        for (int c = 0; c < d; c++) {
            kgl_real want = head ? question_input(&with, i, r, c) : b[c];
            wrong += a[c] != want;
            layer_moved += head && b[c] != want; /* the layer's state is another one, so the check can fail */
        }
        heads += head, tails += !head;
    }
    if (!CHECK(wrong == 0 && heads == 6 && tails == 6 && layer_moved > 0))
        printf("    %ld values differ from the definition; the layer moved %ld\n", wrong, layer_moved);
    long trained_apart = 0; /* the option changes training: the entity table differs after 10 steps */
    for (size_t k = 0; k < kgl_numel(with.entity_emb); k++)
        trained_apart += with.entity_emb->data[k] != without_tr.model.entity_emb->data[k];
    CHECK(trained_apart > 0);
    kgl_trainer_free(&with_tr);
    kgl_trainer_free(&without_tr);
    kgl_dataset_free(&ds);
}

/* --layer-dropout p (README, "Regularisers"): with the outer residual
   C = x + Y, a training forward drops each row's whole term Y with
   probability p, one uniform a row in row order from the regularisers'
   stream (keep = u >= p), so a dropped row's state is x exactly and a kept
   row's x + Y / (1 - p), rounded as the dropout op rounds (one product
   then the sum); evaluation (no stream) keeps every term. Checked bit for
   bit against Y and x from the same parameters (the states without the
   option, as the test above derives them), for the full context and the
   graph context's question alone and with 3 edges, with the stream moved
   on by exactly one draw a row. */
TEST(layer_dropout_drops_whole_rows_of_the_layer_term)
{
    kgl_dataset ds;
    if (!CHECK(load_academic(&ds))) return;
    const kgl_triple *trip = ds.splits[0].triples;
    int n_tr = ds.splits[0].n;
    const double p = 0.5;
    for (int K = -1; K <= 3; K += 3) { /* -1: the full context */
        kgl_trainer tr;
        if (!outer_residual_trained(T, &tr, &ds, K, false, 5)) {
            kgl_trainer_free(&tr);
            break;
        }
        kgl_model with = tr.model, term = tr.model; /* the same parameters, read only */
        term.cfg.outer_residual = false;          /* its states are the term Y alone */
        int d = with.cfg.dim, n = ds.n_entities, rows = K >= 0 ? n_tr : n;
        int entity[64], rel[64];
        for (int k = 0; k < n_tr && k < 64; k++) entity[k] = trip[k].head, rel[k] = trip[k].rel;
        kgl_questions q = {.n = n_tr, .entity = entity, .rel = rel};
        kgl_rng rng, replay;
        kgl_rng_seed(&rng, 9);
        replay = rng;
        kgl_regularisers reg = {.layer_dropout = p, .rng = &rng}, eval = {.layer_dropout = p, .rng = NULL};
        kgl_tape t1, t2, t3;
        kgl_tape_init(&t1), kgl_tape_init(&t2), kgl_tape_init(&t3);
        kgl_forward f1, f2, f3;
        kgl_layer_forward(&with, &t1, K >= 0 ? &q : NULL, &reg, &f1);
        kgl_layer_forward(&with, &t2, K >= 0 ? &q : NULL, &eval, &f2);
        kgl_layer_forward(&term, &t3, K >= 0 ? &q : NULL, NULL, &f3);
        double alpha = 1.0 / (1.0 - p);
        long wrong = 0, dropped = 0, kept = 0, evaluated_wrong = 0;
        for (int i = 0; i < rows; i++) {
            bool keep = kgl_rng_uniform(&replay) >= p;
            dropped += !keep, kept += keep;
            for (int c = 0; c < d; c++) {
                kgl_real x = K >= 0 ? question_input(&with, entity[i], rel[i], c) : question_input(&with, i, 0, c);
                kgl_real y = f3.context->data[(size_t)i * d + c];
                kgl_real want = keep ? x + (kgl_real)(0 + alpha * y) : x + (kgl_real)0;
                wrong += f1.context->data[(size_t)i * d + c] != want;
                evaluated_wrong += f2.context->data[(size_t)i * d + c] != x + y;
            }
        }
        wrong += memcmp(&replay, &rng, sizeof rng) != 0; /* exactly one draw a row */
        if (!CHECK(wrong == 0 && evaluated_wrong == 0))
            printf("    K %d: %ld values or the stream differ from the definition, %ld in evaluation\n", K, wrong,
                   evaluated_wrong);
        CHECK(dropped > 0 && kept > 0);
        kgl_tape_free(&t1), kgl_tape_free(&t2), kgl_tape_free(&t3);
        kgl_trainer_free(&tr);
    }
    kgl_dataset_free(&ds);
}

/* kgl train ARGS --save F (under T->tmp) into `json`, checked to exit 0 and to
   keep `field` (e.g. "\"outer_residual\":\"1\"") in F's metadata; F's path into ck. */
static void trained_and_saved(test_ctx *T, const char *args, const char *name, char *ck, size_t ck_cap, char *json,
                              size_t cap, const char *field)
{
    char cmd[1024];
    snprintf(ck, ck_cap, "%s/%s", T->tmp, name);
    snprintf(cmd, sizeof cmd, "train %s --save %s", args, ck);
    if (!CHECK(run_kgl(T, cmd, json, cap, err, sizeof err) == 0)) printf("    %s\n", err);
    size_t len = 0;
    char *st = test_slurp(ck, &len);
    CHECK(st && len > 8 && strstr(st + 8, field));
    free(st);
}

/* --layer-dropout on the command line: it needs the outer residual (there is
   no state to fall back on without it), is kept in the checkpoint (metadata
   layer_dropout), changes training (a run with it differs from one
   without), and --context none after it runs the baseline with a warning
   that names it. */
TEST(layer_dropout_command_line)
{
    static char with[1 << 14], without[1 << 14];
    char cmd[1024], ck[600];
    const char *model = "--context graph --query-relation --relation-token --neighbours 0 --steps 30 --json";
    CHECK(run_kgl(T, "train --context graph --query-relation --layer-dropout 0.3 --steps 2", out, sizeof out, err,
                  sizeof err) == 2);
    CHECK(strstr(err, "--layer-dropout needs --outer-residual") != NULL);
    snprintf(cmd, sizeof cmd, "%s --outer-residual --layer-dropout 0.5", model);
    trained_and_saved(T, cmd, "ld.st", ck, sizeof ck, with, sizeof with, "\"layer_dropout\":\"0.5\"");
    snprintf(cmd, sizeof cmd, "train %s --outer-residual", model);
    CHECK(run_kgl(T, cmd, without, sizeof without, err, sizeof err) == 0);
    const char *a = strstr(with, "\"final_loss\""), *b = strstr(without, "\"final_loss\"");
    if (CHECK(a && b)) CHECK(strncmp(a, b, strcspn(a, ",")) != 0);
    CHECK(run_kgl(T, "train --context none --outer-residual --layer-dropout 0.3 --steps 2 --quiet", out, sizeof out,
                  err, sizeof err) == 0);
    CHECK(strstr(err, "--layer-dropout") != NULL);
}

/* kgl train MODEL OPTION --save (checked to keep `field` in the checkpoint's
   metadata), kgl eval of the checkpoint and kgl train MODEL without OPTION:
   the evaluation ranks the train split as the trained model did (tail, head
   and both), and the run without the option ranks it otherwise (a load that
   dropped the option would rank other states, and the check can fail). */
static void option_saved_and_evaluated(test_ctx *T, const char *model, const char *option, const char *name,
                                       const char *field)
{
    static char trained[1 << 14], evaluated[1 << 14], plain[1 << 14];
    char cmd[1024], ck[600];
    snprintf(cmd, sizeof cmd, "%s %s", model, option);
    trained_and_saved(T, cmd, name, ck, sizeof ck, trained, sizeof trained, field);
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s --json", ck);
    CHECK(run_kgl(T, cmd, evaluated, sizeof evaluated, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "train %s", model);
    CHECK(run_kgl(T, cmd, plain, sizeof plain, err, sizeof err) == 0);
    const char *a = strstr(trained, "\"metrics\""), *b = strstr(evaluated, "\"metrics\""), *c = strstr(plain, "\"metrics\"");
    const char *end = a ? strstr(a, "\"optimistic\"") : NULL;
    if (CHECK(a && b && c && end)) {
        size_t n = (size_t)(end - a);
        CHECK(strncmp(a, b, n) == 0 && strncmp(a, c, n) != 0);
    }
}

/* --head-state input on the command line: it needs --query-relation and
   reciprocal relations (the direction is the asked relation's row); it is
   saved (checkpoint metadata head_state "input") and kgl eval of the
   checkpoint ranks as the trained model did, where the same run without it
   ranks otherwise; --context none names it among the options that change
   nothing. */
TEST(head_state_command_line)
{
    CHECK(run_kgl(T, "train --context graph --head-state input --steps 2", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--head-state input needs --query-relation") != NULL);
    CHECK(run_kgl(T, "train --context graph --query-relation --no-reciprocal --head-state input --steps 2", out,
                  sizeof out, err, sizeof err) == 2);
    CHECK(run_kgl(T, "train --context graph --query-relation --head-state both --steps 2", out, sizeof out, err,
                  sizeof err) == 2);
    option_saved_and_evaluated(T, "--context graph --query-relation --neighbours 2 --steps 30 --json",
                               "--head-state input", "hs.st", "\"head_state\":\"input\"");
    CHECK(run_kgl(T, "train --context none --query-relation --head-state input --steps 2 --quiet", out, sizeof out,
                  err, sizeof err) == 0);
    CHECK(strstr(err, "--head-state input") != NULL);
}

/* kgl train saves the option (checkpoint metadata outer_residual "1"), and
   kgl eval of that checkpoint ranks as the trained model did (a load that
   dropped the option would rank other states: the run without it differs);
   --context none names it among the options that change nothing. */
TEST(outer_residual_command_line)
{
    option_saved_and_evaluated(T, "--context graph --query-relation --relation-token --neighbours 0 --steps 30 --json",
                               "--outer-residual", "outer.st", "\"outer_residual\":\"1\"");
    CHECK(run_kgl(T, "train --context none --outer-residual --steps 2 --quiet", out, sizeof out, err, sizeof err) ==
          0);
    CHECK(strstr(err, "so --outer-residual changes nothing") != NULL);
}
