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

/* A ranking of the academic world's 5 relations, for the JSON and the
   text: relations 0 and 3 ranked, 2 ranked (but not in use below), 1 and 4
   never ranked. */
static void fill_ranking(kgl_eval *ev, int n_relations)
{
    ev->tail = metric(1, 4), ev->head = metric(0.5, 4), ev->both = metric(0.25, 8);
    ev->tail_optimistic = metric(2, 4), ev->head_optimistic = metric(4, 4), ev->both_optimistic = metric(8, 8);
    for (int r = 0; r < n_relations; r++) ev->rel_tail[r] = ev->rel_head[r] = (kgl_metrics){0};
    ev->rel_tail[0] = metric(1, 2), ev->rel_head[0] = metric(0.5, 2);
    ev->rel_tail[2] = metric(2, 1), ev->rel_head[2] = metric(4, 1); /* ranked but not in use */
    ev->rel_tail[3] = metric(0.125, 1), ev->rel_head[3] = metric(0.0625, 1);
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
    fill_ranking(&ev, ds.n_relations);
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

/* What a memory stream holds once closed (malloc'd; "" when nothing was written). */
static char *closed_text(FILE *f, char **text)
{
    fclose(f);
    return *text;
}

/* The same results as the text tables kgl train and kgl eval print
   (kgl_metrics_table_write, kgl_spec_table_write) and the line naming one
   model of an ensemble (kgl_model_choice_write), written to a memory
   stream: each header in its place, each number in its column, a relation
   left out when not in use or not ranked. */
TEST(results_tables_as_text)
{
    kgl_dataset ds;
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[512];
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e))) return;
    if (!CHECK(ds.n_relations == 5 && strcmp(ds.relation_names[2], "affiliated") == 0)) return;
    kgl_eval ev;
    kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
    fill_ranking(&ev, ds.n_relations);
    bool use[5] = {true, true, false, true, true}; /* 1 (advises) and 4 in use, never ranked */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!CHECK(f != NULL)) return;
    kgl_metrics_table_write(f, "test", 8, &ds, use, &ev);
    const char *got = closed_text(f, &text);
    /* the names' column: 8 characters ("authored"); the mean rank's: 6 (13 entities); a tie
       such as 0.0625 is left out: printf rounds it either way ("0.06") */
    const char *want[] = {
        "\ntest: 8 triples, filtered ranking (ties: mean of optimistic and pessimistic rank)\n",
        "\nrelation      n     MRR     H@1     H@3    H@10      MR     MRR",
        "\nabout         2   1.000   0.500   0.250   0.125    1.00   0.500   0.250   0.125   0.06",
        "\nauthored      1   0.125",
        "\nall           4   1.000   0.500   0.250   0.125    1.00   0.500   0.250   0.125   0.06",
        "        8  both directions: MRR 0.250  H@1 0.125",
        "optimistic ties: MRR 8.000  H@1 4.000  H@3 2.000  H@10 1.000",
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        if (!CHECK(strstr(got, want[k]) != NULL)) printf("    missing '%s' in\n%s\n", want[k], got);
    CHECK(!strstr(got, "advises") && !strstr(got, "affiliated") && !strstr(got, "cites"));
    free(text);
    kgl_eval_free(&ev);

    double spec[2 * 5]; /* [heads, m]: head h's weight on relation r at h * 5 + r */
    for (int k = 0; k < 10; k++) spec[k] = k / 4.0;
    f = open_memstream(&text, &len);
    kgl_spec_table_write(f, &ds, use, 2, spec, KGL_CONTEXT_FULL);
    got = closed_text(f, &text);
    const char *want_spec = "\nhead specialisation spec[h][r]: mean attention mass head h puts on i's r-tails\n"
                            "head    about advises authored  cites\n"
                            "0       0.000   0.250    0.750  1.000\n"
                            "1       1.250   1.500    2.000  2.250\n";
    if (!CHECK(strcmp(got, want_spec) == 0)) printf("    got\n%s    want\n%s", got, want_spec);
    free(text);
    for (int k = 0; k < 10; k++) spec[k] = NAN; /* no neighbourhood held an edge: said, not a table of NaN */
    f = open_memstream(&text, &len);
    kgl_spec_table_write(f, &ds, use, 2, spec, KGL_CONTEXT_GRAPH);
    got = closed_text(f, &text);
    CHECK(strncmp(got, "\nhead by relation spec: no neighbourhood held an edge of these relations", 72) == 0 &&
          !strstr(got, "nan"));
    free(text);
    f = open_memstream(&text, &len);
    kgl_spec_table_write(f, &ds, use, 2, spec, KGL_CONTEXT_NONE); /* no attention: nothing */
    CHECK(strcmp(closed_text(f, &text), "") == 0);
    free(text);

    kgl_model_choice c = {.path = "e.st", .member = 0, .members = 3, .ensemble = "e.st"};
    f = open_memstream(&text, &len);
    kgl_model_choice_write(f, &c, "showing", "Why one.");
    got = closed_text(f, &text);
    CHECK(strcmp(got, "e.st is an ensemble of 3 models: showing member 0 alone (--member K chooses another, 0 to 2)\n"
                      "Why one.\n") == 0);
    free(text);
    c.members = 1; /* a model of its own: nothing to say */
    f = open_memstream(&text, &len);
    kgl_model_choice_write(f, &c, "showing", "Why one.");
    CHECK(strcmp(closed_text(f, &text), "") == 0);
    free(text);
    kgl_dataset_free(&ds);
}
