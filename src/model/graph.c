/* graph.c — the training graph as each entity's list of edges, and the
 * neighbourhoods the layer attends over with --context graph (README, "The
 * model, exactly": the neighbourhood context).
 *
 * Entity i's edges: (r, j) for every training triple (i, r, j), and
 * (m + r, j) for every training triple (j, r, i), the triple read backwards
 * through the inverse relation. A neighbourhood is a segment of tokens: the
 * entity itself (relation row 2m), then at most K of its edges. */
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

/* splitmix64's finaliser: a fixed, well-mixed 64-bit hash. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t kgl_edge_key(int entity, int rel, int neighbour)
{
    return mix64(mix64(((uint64_t)(uint32_t)entity << 32) | (uint32_t)rel) ^ (uint64_t)(uint32_t)neighbour);
}

typedef struct keyed_edge {
    uint64_t key;
    int rel, nb;
} keyed_edge;

static int by_key(const void *a, const void *b)
{
    const keyed_edge *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->rel != y->rel) return x->rel < y->rel ? -1 : 1; /* a tie of keys: by relation, then neighbour */
    return (x->nb > y->nb) - (x->nb < y->nb);
}

void kgl_graph_build(kgl_graph *g, int n_entities, int n_relations, const kgl_triple *tr, int n)
{
    memset(g, 0, sizeof *g);
    g->n_entities = n_entities;
    g->n_relations = n_relations;
    g->offsets = kgl_xmalloc(((size_t)n_entities + 1) * sizeof(int));
    memset(g->offsets, 0, ((size_t)n_entities + 1) * sizeof(int));
    for (int k = 0; k < n; k++) { /* degrees, then offsets */
        g->offsets[tr[k].head + 1]++;
        g->offsets[tr[k].tail + 1]++;
    }
    for (int i = 0; i < n_entities; i++) {
        if (g->offsets[i + 1] > g->max_degree) g->max_degree = g->offsets[i + 1];
        g->offsets[i + 1] += g->offsets[i];
    }
    size_t edges = 2 * (size_t)n;
    keyed_edge *e = kgl_xmalloc((edges ? edges : 1) * sizeof *e);
    int *fill = kgl_xmalloc(((size_t)n_entities + 1) * sizeof(int));
    memcpy(fill, g->offsets, (size_t)n_entities * sizeof(int));
    for (int k = 0; k < n; k++) {
        int h = tr[k].head, r = tr[k].rel, t = tr[k].tail;
        e[fill[h]++] = (keyed_edge){kgl_edge_key(h, r, t), r, t};
        e[fill[t]++] = (keyed_edge){kgl_edge_key(t, n_relations + r, h), n_relations + r, h};
    }
    free(fill);
    g->rel = kgl_xmalloc((edges ? edges : 1) * sizeof(int));
    g->nb = kgl_xmalloc((edges ? edges : 1) * sizeof(int));
    for (int i = 0; i < n_entities; i++) {
        int lo = g->offsets[i], hi = g->offsets[i + 1];
        qsort(e + lo, (size_t)(hi - lo), sizeof *e, by_key);
        for (int k = lo; k < hi; k++) {
            g->rel[k] = e[k].rel;
            g->nb[k] = e[k].nb;
        }
    }
    free(e);
}

void kgl_graph_free(kgl_graph *g)
{
    free(g->offsets);
    free(g->rel);
    free(g->nb);
    memset(g, 0, sizeof *g);
}

/* Whether edge k of entity h belongs to the triple the example (h, r, t)
   asks about. Its edges from that triple are (r, t), and with t = h also the
   triple read backwards, (r⁻¹, h). With all_answers (1-N targets) every
   answer of the query (h, r) is the asked triple: every edge (r, ·), and
   (r⁻¹, h) when (h, r, h) is one of them. */
static bool asked_edge(const kgl_graph *g, int k, int h, int r, int t, bool all_answers, bool self_answer)
{
    int m = g->n_relations, inv = r < m ? r + m : r - m;
    if (all_answers) return g->rel[k] == r || (self_answer && g->rel[k] == inv && g->nb[k] == h);
    return (g->rel[k] == r && g->nb[k] == t) || (t == h && g->rel[k] == inv && g->nb[k] == h);
}

/* The most tokens a segment holds: the entity itself, the asked relation's
   token when there is one, at most K edges. */
static size_t segment_room(const kgl_neighbourhood *nb) { return (size_t)nb->K + 1 + (nb->asked_row >= 0); }

kgl_neighbourhood *kgl_neighbourhood_alloc(kgl_arena *a, const kgl_graph *g, int n, int K, bool asked_token)
{
    kgl_neighbourhood *nb = kgl_arena_alloc(a, sizeof *nb);
    memset(nb, 0, sizeof *nb);
    nb->graph = g;
    nb->K = K;
    nb->asked_row = asked_token ? 2 * g->n_relations + 1 : -1;
    size_t tokens = (size_t)n * segment_room(nb);
    nb->capacity = n;
    nb->offsets = kgl_arena_alloc(a, ((size_t)n + 1) * sizeof(int));
    nb->entity = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->relation = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->unique = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->slot = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->query_slot = kgl_arena_alloc(a, (size_t)n * sizeof(int));
    /* the sampler's: an entity's candidate edges, then each entity's slot */
    nb->scratch = kgl_arena_alloc(a, ((size_t)g->max_degree + (size_t)g->n_entities + 1) * sizeof(int));
    return nb;
}

static void find_pairs(kgl_neighbourhood *nb);

void kgl_neighbourhood_find_distinct(kgl_neighbourhood *nb, kgl_arena *a)
{
    size_t tokens = (size_t)nb->capacity * segment_room(nb);
    nb->pair_slot = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->pair_relation = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->token_pair = kgl_arena_alloc(a, tokens * sizeof(int));
    nb->table_size = 2;
    while ((size_t)nb->table_size < 2 * tokens) nb->table_size *= 2; /* at most half full */
    nb->pair_table = kgl_arena_alloc(a, (size_t)nb->table_size * sizeof(int));
    if (nb->n > 0) find_pairs(nb); /* already filled */
}

/* The distinct (slot, relation) tokens of nb, in order of first appearance
   (kgl_neighbourhood): open addressing, linear probing, on a table at most
   half full. */
static void find_pairs(kgl_neighbourhood *nb)
{
    int T = nb->offsets[nb->n], mask = nb->table_size - 1;
    for (int k = 0; k < nb->table_size; k++) nb->pair_table[k] = -1;
    nb->n_pairs = 0;
    for (int t = 0; t < T; t++) {
        int s = nb->slot[t], r = nb->relation[t];
        uint64_t key = ((uint64_t)(uint32_t)s << 32 | (uint32_t)r) * 0x9e3779b97f4a7c15ULL; /* Fibonacci hashing */
        int at = (int)(key >> 32) & mask, p;
        while ((p = nb->pair_table[at]) >= 0 && !(nb->pair_slot[p] == s && nb->pair_relation[p] == r))
            at = (at + 1) & mask;
        if (p < 0) { /* a new pair */
            p = nb->pair_table[at] = nb->n_pairs++;
            nb->pair_slot[p] = s;
            nb->pair_relation[p] = r;
        }
        nb->token_pair[t] = p;
    }
}

/* The segments of n questions: head[b] itself, then (with an asked token and
   rel) the asked relation rel[b] as a token of no entity, then at most K of its edges,
   leaving out the asked triple's (model.h, kgl_neighbourhood_sample); with
   rng, K drawn at random and each dropped with probability edge_dropout,
   without, the first K in the fixed order. */
static void fill(kgl_neighbourhood *out, const int *head, const int *rel, const int *tail, int n, bool all_answers,
                 kgl_rng *rng, double edge_dropout)
{
    if (n > out->capacity) kgl_die("neighbourhood: %d segments in room for %d", n, out->capacity);
    const kgl_graph *g = out->graph;
    int K = out->K, *scratch = out->scratch;
    int used = 0, self_rel = 2 * g->n_relations;
    bool leave_out = tail || (rel && all_answers); /* a triple asked, or a question's answers */
    int *slot_of = scratch + g->max_degree + 1; /* [n_entities]: an entity's slot, or -1 */
    for (int i = 0; i < g->n_entities; i++) slot_of[i] = -1;
    out->n = n;
    for (int b = 0; b < n; b++) {
        int h = head[b], lo = g->offsets[h], hi = g->offsets[h + 1];
        out->offsets[b] = used;
        out->entity[used] = h; /* the entity itself first */
        out->relation[used++] = self_rel;
        if (rel && out->asked_row >= 0) { /* --relation-token: the question's relation, no entity */
            out->entity[used] = -1;
            out->relation[used++] = out->asked_row + rel[b];
        }
        bool self_answer = false;
        if (leave_out && all_answers)
            for (int k = lo; k < hi && !self_answer; k++) self_answer = g->rel[k] == rel[b] && g->nb[k] == h;
        /* the candidates: every edge but the asked triple's, in the fixed order */
        int cand = 0;
        for (int k = lo; k < hi; k++)
            if (!leave_out || !asked_edge(g, k, h, rel[b], tail ? tail[b] : h, all_answers, self_answer))
                scratch[cand++] = k;
        int take = cand < K ? cand : K;
        if (rng && cand > K)
            for (int s = 0; s < take; s++) { /* K draws of a Fisher–Yates shuffle, without replacement */
                int j = s + (int)kgl_rng_below(rng, (uint32_t)(cand - s));
                int tmp = scratch[s];
                scratch[s] = scratch[j];
                scratch[j] = tmp;
            }
        for (int s = 0; s < take; s++) {
            /* --edge-dropout: each chosen edge kept when its uniform u >= p
               (one draw per chosen edge, after the segment's shuffle draws) */
            if (rng && edge_dropout > 0 && kgl_rng_uniform(rng) < edge_dropout) continue;
            out->entity[used] = g->nb[scratch[s]];
            out->relation[used++] = g->rel[scratch[s]];
        }
    }
    out->offsets[n] = used;
    out->n_unique = 0;
    bool entityless = false; /* an asked relation's token: it reads the zero slot, after the entities */
    for (int t = 0; t < used; t++) {
        int e = out->entity[t];
        if (e < 0) {
            entityless = true;
            continue;
        }
        if (slot_of[e] < 0) {
            slot_of[e] = out->n_unique;
            out->unique[out->n_unique++] = e;
        }
        out->slot[t] = slot_of[e];
    }
    out->zero_slot = entityless ? out->n_unique : -1;
    for (int t = 0; entityless && t < used; t++)
        if (out->entity[t] < 0) out->slot[t] = out->zero_slot;
    for (int b = 0; b < n; b++) out->query_slot[b] = out->slot[out->offsets[b]];
    if (out->pair_table) find_pairs(out);
}

void kgl_neighbourhood_sample(kgl_neighbourhood *nb, const int *head, const int *rel, const int *tail, int n,
                              bool all_answers, kgl_rng *rng, double edge_dropout, double source_dropout)
{
    fill(nb, head, rel, tail, n, all_answers, rng, edge_dropout);
    kgl_neighbourhood_mask_sources(nb, source_dropout, rng);
}

void kgl_neighbourhood_fixed(kgl_neighbourhood *nb, const int *head, const int *rel, const int *tail, int n,
                             bool all_answers)
{
    fill(nb, head, rel, tail, n, all_answers, NULL, 0);
}

int kgl_neighbourhood_first_edge(const kgl_neighbourhood *nb, int b)
{
    int lo = nb->offsets[b], hi = nb->offsets[b + 1];
    bool asked = nb->asked_row >= 0 && lo + 1 < hi && nb->relation[lo + 1] >= nb->asked_row; /* rows 2m + 1 + r */
    return lo + 1 + asked;
}

void kgl_neighbourhood_mask_sources(kgl_neighbourhood *nb, double p, kgl_rng *rng)
{
    if (!(p > 0)) return;
    bool masked = false;
    for (int b = 0; b < nb->n; b++)
        if (kgl_rng_uniform(rng) < p) {
            masked = true;
            nb->zero_slot = nb->n_unique; /* the asked relations' tokens may read it already */
            nb->slot[nb->offsets[b]] = nb->query_slot[b] = nb->n_unique;
        }
    if (masked && nb->pair_table) find_pairs(nb); /* masked first tokens are pairs of the zero slot now */
}
