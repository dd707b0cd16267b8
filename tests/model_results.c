/* model_results.c — a ranking's results and the spec matrix written as JSON
 * by the library (kgl_json_metric, kgl_json_eval, kgl_json_spec), as a C
 * program linking libkgl writes them: every key in its place, a relation
 * left out when not in use or not ranked, numbers to the bit. */
#include <stdlib.h>

#include "test.h"

/* What the writer wrote to a memory stream, NUL-terminated (malloc'd). */
typedef struct memory_json {
    FILE *f;
    char *text;
    size_t len;
    kgl_json_writer w;
} memory_json;

static bool json_open(memory_json *m)
{
    m->text = NULL;
    m->f = open_memstream(&m->text, &m->len);
    if (m->f) kgl_json_writer_init(&m->w, m->f);
    return m->f != NULL;
}

static const char *json_close(memory_json *m)
{
    kgl_json_writer_finish(&m->w);
    fclose(m->f);
    return m->text;
}

static kgl_metrics metric(double base, long n)
{
    return (kgl_metrics){base, base / 2, base / 4, base / 8, 1 / base, n}; /* binary fractions: exact in JSON */
}

TEST(results_json_of_a_ranking_and_the_spec)
{
    kgl_dataset ds;
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e))) return;
    if (!CHECK(ds.n_relations == 5)) return;
    memory_json m;
    if (!CHECK(json_open(&m))) return;
    kgl_json_metric(&m.w, &(kgl_metrics){0.5, 0.25, 0.75, 1, 2.5, 8});
    const char *got = json_close(&m);
    CHECK(strcmp(got, "{\"mrr\":0.5,\"hits1\":0.25,\"hits3\":0.75,\"hits10\":1,\"mr\":2.5,\"n\":8}") == 0);
    free(m.text);

    kgl_eval ev;
    kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
    ev.tail = metric(1, 4), ev.head = metric(0.5, 4), ev.both = metric(0.25, 8);
    ev.tail_optimistic = metric(2, 4), ev.head_optimistic = metric(4, 4), ev.both_optimistic = metric(8, 8);
    for (int r = 0; r < ds.n_relations; r++) ev.rel_tail[r] = ev.rel_head[r] = (kgl_metrics){0};
    ev.rel_tail[0] = metric(1, 2), ev.rel_head[0] = metric(0.5, 2);
    ev.rel_tail[2] = metric(2, 1), ev.rel_head[2] = metric(4, 1); /* ranked but not in use */
    ev.rel_tail[3] = metric(0.125, 1), ev.rel_head[3] = metric(0.0625, 1);
    bool use[5] = {true, true, false, true, true}; /* 1 and 4 in use, never ranked */
    if (!CHECK(json_open(&m))) return;
    kgl_json_eval(&m.w, &ds, use, &ev);
    got = json_close(&m);
#define M1 "{\"mrr\":1,\"hits1\":0.5,\"hits3\":0.25,\"hits10\":0.125,\"mr\":1,\"n\":"
#define MH "{\"mrr\":0.5,\"hits1\":0.25,\"hits3\":0.125,\"hits10\":0.0625,\"mr\":2,\"n\":"
#define MQ "{\"mrr\":0.25,\"hits1\":0.125,\"hits3\":0.0625,\"hits10\":0.03125,\"mr\":4,\"n\":"
#define M2 "{\"mrr\":2,\"hits1\":1,\"hits3\":0.5,\"hits10\":0.25,\"mr\":0.5,\"n\":"
#define M4 "{\"mrr\":4,\"hits1\":2,\"hits3\":1,\"hits10\":0.5,\"mr\":0.25,\"n\":"
#define M8 "{\"mrr\":8,\"hits1\":4,\"hits3\":2,\"hits10\":1,\"mr\":0.125,\"n\":"
#define ME "{\"mrr\":0.125,\"hits1\":0.0625,\"hits3\":0.03125,\"hits10\":0.015625,\"mr\":8,\"n\":"
#define MS "{\"mrr\":0.0625,\"hits1\":0.03125,\"hits3\":0.015625,\"hits10\":0.0078125,\"mr\":16,\"n\":"
    char want[4096];
    snprintf(want, sizeof want,
             "{\"tail\":" M1 "4},\"head\":" MH "4},\"both\":" MQ "8},"
             "\"optimistic\":{\"tail\":" M2 "4},\"head\":" M4 "4},\"both\":" M8 "8}},"
             "\"per_relation\":{\"%s\":{\"tail\":" M1 "2},\"head\":" MH "2}},"
             "\"%s\":{\"tail\":" ME "1},\"head\":" MS "1}}}}",
             ds.relation_names[0], ds.relation_names[3]);
    if (!CHECK(strcmp(got, want) == 0)) printf("    got  %s\n    want %s\n", got, want);
    free(m.text);
    kgl_eval_free(&ev);

    double spec[2 * 5]; /* [heads, m]: head h's weight on relation r at h * 5 + r */
    for (int k = 0; k < 10; k++) spec[k] = k / 4.0;
    if (!CHECK(json_open(&m))) return;
    kgl_json_spec(&m.w, &ds, use, 2, spec);
    got = json_close(&m);
    snprintf(want, sizeof want, "{\"%s\":[0,1.25],\"%s\":[0.25,1.5],\"%s\":[0.75,2],\"%s\":[1,2.25]}",
             ds.relation_names[0], ds.relation_names[1], ds.relation_names[3], ds.relation_names[4]);
    if (!CHECK(strcmp(got, want) == 0)) printf("    got  %s\n    want %s\n", got, want);
    free(m.text);
    kgl_dataset_free(&ds);
}
