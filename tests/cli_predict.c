/* cli_predict.c — `kgl predict` as a user runs it: a trained model answers
 * who a professor advises and who advises a student, the filter drops the
 * known answers, a checkpoint alone answers with the same numbers, a
 * queries file asks many questions, --json parses, and every mistake (an
 * unknown name, a bad --top, a malformed queries line, contradictory
 * options) is a message for people with exit status 2 and no output. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 16], err[1 << 14];

/* The academic world as a file (known triples for --train) and a model
   trained on it for `steps` steps, saved as DIR/NAME; the paths go to
   data and ckpt. 100 steps fit the world (every triple ranks first). */
static bool setup(test_ctx *T, int steps, const char *name, char *data, char *ckpt, size_t cap)
{
    snprintf(data, cap, "%s", write_tmp(T, 0, "academic.tsv", (const char *)kgl_academic_tsv, kgl_academic_tsv_len));
    snprintf(ckpt, cap, "%s/%s", T->tmp, name);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "train --steps %d --train %s --save %s", steps, data, ckpt);
    return CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
}

/* The table row of rank k: "   k  NAME ..." (NULL if absent). */
static const char *row(const char *text, int k)
{
    char want[32];
    snprintf(want, sizeof want, "\n%4d  ", k);
    const char *p = strstr(text, want);
    return p ? p + strlen(want) : NULL;
}

static bool row_is(const char *text, int k, const char *name)
{
    const char *p = row(text, k);
    size_t n = strlen(name);
    return p && strncmp(p, name, n) == 0 && p[n] == ' ';
}

/* Who alice advises, and who advises carol: the trained answers, and what
   the filter (on by default with --train) and --no-filter show. */
TEST(predict_answers_and_filters)
{
    char data[512], ckpt[512], cmd[2048];
    if (!setup(T, 100, "fit.st", data, ckpt, sizeof data)) return;

    /* --no-filter: her two students are the top two, marked known; the
       third answer is not a student */
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --head alice --relation advises --no-filter --top 3",
             ckpt, data);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "(alice, advises, ?)  top 3, known answers marked\n") == out);
    CHECK(strstr(out, "rank  tail       score        prob  known\n") != NULL);
    CHECK((row_is(out, 1, "dave") && row_is(out, 2, "erin")) || (row_is(out, 1, "erin") && row_is(out, 2, "dave")));
    CHECK(row(out, 1) && strstr(row(out, 1), "yes\n") && row(out, 2) && strstr(row(out, 2), "yes\n"));
    CHECK(row(out, 3) && strstr(row(out, 3), "  no\n") && !row(out, 4));

    /* the default with --train is the filter: dave and erin are gone */
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --head alice --relation advises", ckpt, data);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "(alice, advises, ?)  top 10, 2 known answers left out\n") == out);
    CHECK(!strstr(out, "dave") && !strstr(out, "erin") && !strstr(out, "known\n"));
    CHECK(row(out, 10) && !row(out, 11));

    /* a head question goes through advises^-1: bob advises carol */
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --relation advises --tail carol --no-filter --top 1",
             ckpt, data);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "(?, advises, carol)") == out && strstr(out, "rank  head") && row_is(out, 1, "bob"));
}

/* Without triples the names come from the checkpoint: the same answers to
   the last digit printed, nothing marked, and --filter refused. */
TEST(predict_from_the_checkpoint_alone)
{
    char data[512], ckpt[512], cmd[2048];
    static char with[sizeof out];
    if (!setup(T, 30, "alone.st", data, ckpt, sizeof data)) return;
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --head p3 --relation cites --no-filter --top 13",
             ckpt, data);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(with, sizeof with, "%s", out);
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --head p3 --relation cites --top 13", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "(p3, cites, ?)  top 13 (no triples given: known answers are not marked)\n") == out);
    CHECK(!strstr(out, "yes") && !strstr(out, "known\n"));
    /* row by row, the same entity, score and probability (the known column aside) */
    int same = 0;
    for (int k = 1; k <= 13; k++) {
        const char *a = row(with, k), *b = row(out, k);
        same += a && b && strncmp(a, b, (size_t)(strchr(b, '\n') - b)) == 0;
    }
    CHECK(same == 13);
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --head p3 --relation cites --filter", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl predict: --filter needs the known triples: give --train") == err && !*out);
}

/* A whole triple on the command line: its two questions, each with the
   rank the triple's answer gets (filtered by default with --train: 1, as the
   model fits), score, probability and the best other answer; --no-filter
   ranks among all entities (her other student, known too, may come first);
   without triples nothing is known. A queries file mixes questions and
   triples, answered in its order. */
TEST(predict_scores_a_whole_triple)
{
    char data[512], ckpt[512], cmd[2048];
    if (!setup(T, 100, "t.st", data, ckpt, sizeof data)) return;
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --head alice --relation advises --tail dave", ckpt,
             data);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "(alice, advises, dave)  a known triple; filtered ranks (the other known answers left out)\n"
                      "question                 rank       score        prob  top other answer\n"
                      "(alice, advises, ?)         1  ") == out);
    const char *head = strstr(out, "\n(?, advises, dave)          1  ");
    CHECK(head != NULL && strstr(head, "  alice\n") == NULL); /* alice is the answer, not another */
    double rank = 0;
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --head alice --relation advises --tail dave --no-filter",
             ckpt, data);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "(alice, advises, dave)  a known triple; ranked among all 13 entities (known answers too)\n") == out);
    const char *tail = strstr(out, "\n(alice, advises, ?)");
    CHECK(tail && sscanf(tail + strlen("\n(alice, advises, ?)"), "%lf", &rank) == 1 && rank >= 1 && rank <= 2);
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --head carol --relation advises --tail dave", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "(carol, advises, dave)  ranked among all 13 entities (no triples given: nothing is known)\n") ==
          out);

    static const char qs[] = "alice\tadvises\t?\nalice\tadvises\tcarol\n";
    const char *qpath = write_tmp(T, 1, "mixed.tsv", qs, sizeof qs - 1);
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --queries %s --top 2", ckpt, data, qpath);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "(alice, advises, ?)  top 2, 2 known answers left out\n") == out);
    CHECK(strstr(out, "\n\n(alice, advises, carol)  not a known triple; filtered ranks") != NULL);
}

/* A queries file: two questions (a comment and a blank line skipped), two
   tables; with --json one object per line, each parsing, with every field
   a consumer reads. */
TEST(predict_queries_file_and_json)
{
    char data[512], ckpt[512], cmd[2048];
    if (!setup(T, 100, "q.st", data, ckpt, sizeof data)) return;
    static const char qs[] = "# who advises whom\nalice\tadvises\t?\n\n?\taffiliated\tmit\n";
    const char *qpath = write_tmp(T, 1, "q.tsv", qs, sizeof qs - 1);
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --queries %s --top 2", ckpt, data, qpath);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "(alice, advises, ?)  top 2, 2 known answers left out\n") == out);
    /* mit's members alice, dave, erin are filtered: 3 known heads */
    CHECK(strstr(out, "\n\n(?, affiliated, mit)  top 2, 3 known answers left out\n") != NULL);

    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --train %s --queries %s --top 2 --no-filter --json", ckpt, data,
             qpath);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    int objects = 0;
    for (char *line = out, *nl; (nl = strchr(line, '\n')); line = nl + 1, objects++) {
        kgl_json_doc doc;
        char e[256];
        if (!CHECK(kgl_json_parse(line, (size_t)(nl - line), &doc, e, sizeof e))) break;
        const kgl_json *q = kgl_json_get(doc.root, "query"), *answers = kgl_json_get(doc.root, "answers");
        const kgl_json *dir = kgl_json_get(doc.root, "direction");
        CHECK(q && answers && answers->type == KGL_JSON_ARRAY && answers->len == 2 && dir);
        if (objects == 0 && q && dir && answers && answers->len == 2) {
            CHECK(strcmp(kgl_json_get(q, "head")->str, "alice") == 0 && kgl_json_get(q, "tail")->type == KGL_JSON_NULL);
            CHECK(strcmp(dir->str, "tail") == 0);
            const kgl_json *first = &answers->child[0];
            const char *who = kgl_json_get(first, "entity")->str;
            CHECK(strcmp(who, "dave") == 0 || strcmp(who, "erin") == 0);
            CHECK(kgl_json_get(first, "known")->type == KGL_JSON_TRUE);
            double p = kgl_json_get(first, "prob")->num;
            CHECK(p > 0 && p < 1);
        }
        if (objects == 1 && q && dir && answers && answers->len == 2) {
            CHECK(strcmp(kgl_json_get(q, "tail")->str, "mit") == 0 && strcmp(dir->str, "head") == 0);
            const char *who = kgl_json_get(&answers->child[0], "entity")->str;
            CHECK(strcmp(who, "alice") == 0 || strcmp(who, "dave") == 0 || strcmp(who, "erin") == 0);
        }
        kgl_json_free(&doc);
    }
    CHECK(objects == 2);
}

/* Every mistake: exit 2, a message that says what is wrong (and where),
   nothing on stdout. */
TEST(predict_errors_are_for_people)
{
    char data[512], ckpt[512], cmd[2048];
    if (!setup(T, 5, "e.st", data, ckpt, sizeof data)) return;
    struct {
        const char *args, *message;
    } cases[] = {
        /* names that are not in the checkpoint: the near ones listed */
        {"--head alise --relation advises", "kgl predict: --head: unknown entity 'alise'; did you mean 'alice'?\n"},
        /* a relation is named after --relation, whichever side is asked (issue 25) */
        {"--tail carol --relation advice", "kgl predict: --relation: unknown relation 'advice'; did you mean 'advises'?\n"},
        {"--head alice --relation border", "kgl predict: --relation: unknown relation 'border' (none is close)\n"},
        {"--head zzzzzzzz --relation advises", "kgl predict: --head: unknown entity 'zzzzzzzz' (none is close)\n"},
        /* --top names its range, which comes from the model */
        {"--head alice --relation advises --top 14",
         "kgl predict: --top 14 is out of range: the model has 13 entities, so 1 to 13\n"},
        {"--head alice --relation advises --top 0",
         "kgl predict: --top 0 is out of range: the model has 13 entities, so 1 to 13\n"},
        {"--head alice --relation advises --top ten", "kgl predict: --top expects a whole number, got 'ten'\n"},
        /* questions that are not one question, triples that are not one triple */
        {"--head alice", "kgl predict: --relation is required with --head\n"},
        {"--head alice --tail bob", "kgl predict: --relation is required with --head and --tail\n"},
        {"--head alice --relation advises --tail bobb", "kgl predict: --tail: unknown entity 'bobb'; did you mean 'bob'?\n"},
        {"--relation advises", "kgl predict: ask a question: --head NAME --relation REL, --relation REL --tail NAME"},
        {"--head alice --relation advises --relations advises", "kgl predict: --relations does not apply"},
        /* a misspelt option: the nearest from --help */
        {"--hed alice --relation advises", "kgl predict: unknown option '--hed'; did you mean '--head'?\n"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(cmd, sizeof cmd, "predict --checkpoint %s %s", ckpt, cases[k].args);
        bool ok = run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 && strstr(err, cases[k].message) == err &&
                  !*out;
        if (!CHECK(ok)) printf("    case %zu: %s\n    stderr: %s", k, cases[k].args, err);
    }
}

/* A queries file is checked line by line before anything is answered:
   file:line and what is wrong, no output. */
TEST(predict_queries_file_errors)
{
    char data[512], ckpt[512], cmd[2048];
    if (!setup(T, 5, "qe.st", data, ckpt, sizeof data)) return;
    struct {
        const char *text, *message;
    } cases[] = {
        {"alice\tadvises\t?\nalice\tadvises\n", ":2: expected 3 tab-separated fields (head, relation, tail; '?' as the head or the tail asks for it), got 2\n"},
        {"?\tadvises\t?\n", ":1: both the head and the tail are '?'; ask for one of them, or give both to score the triple\n"},
        {"alice\tadvises\tdave\nalice\tadvises\tdaev\n", ":2: unknown entity 'daev'; did you mean 'dave'?\n"},
        {"alice\t?\tdave\n", ":1: the relation cannot be asked for; put '?' in the head or the tail\n"},
        {"# only a comment\n\nalice\tadvises\t?\n?\tadvises\tcarrol\n", ":4: unknown entity 'carrol'; did you mean 'carol'?\n"},
        {"alice\tadvises\t?\nal\xffice\tadvises\t?\n", ":2: invalid UTF-8 at byte 3 of the line\n"},
        {"# nothing\n", ": no questions (each line is head<TAB>relation<TAB>tail, with '?' as the head or the tail to ask for it)\n"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *q = write_tmp(T, 2, "bad.tsv", cases[k].text, strlen(cases[k].text));
        snprintf(cmd, sizeof cmd, "predict --checkpoint %s --queries %s", ckpt, q);
        char want[1024];
        snprintf(want, sizeof want, "%s%s", q, cases[k].message);
        bool ok = run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 && strcmp(err, want) == 0 && !*out;
        if (!CHECK(ok)) printf("    case %zu\n    stderr: %s    wanted: %s", k, err, want);
    }
    snprintf(cmd, sizeof cmd, "predict --checkpoint %s --queries %s/missing.tsv", ckpt, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 && strstr(err, "missing.tsv") && !*out);
}

/* Issue 46: in a queries file '?' asks for the head or the tail, so a model
   with an entity named '?' answered "?<TAB>r<TAB>b" as a question, never
   scoring the triple ('?', r, b) the line may mean. Such a line is refused,
   file:line, naming the command line's options (where a name is only a
   name) as the way out; '?' still asks in a model without that entity. A
   relation named '?' is a name in the middle field, which never asks. */
TEST(predict_queries_with_an_entity_named_question_mark)
{
    static const char text[] = "?\tr\tb\nb\tr\tc\nc\ts\t?\nb\t?\tc\n";
    const char *data = write_tmp(T, 0, "q.tsv", text, sizeof text - 1);
    char ckpt[600], cmd[2048], want[2048];
    snprintf(ckpt, sizeof ckpt, "%s/q.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --train '%s' --steps 3 --save '%s' --quiet", data, ckpt);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;

    static const char lines[] = "b\tr\tc\n?\tr\tb\n";
    const char *q = write_tmp(T, 1, "ask.tsv", lines, sizeof lines - 1);
    snprintf(cmd, sizeof cmd, "predict --checkpoint '%s' --queries '%s'", ckpt, q);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 && !*out);
    snprintf(want, sizeof want,
             "%s:2: '?' as the head could ask for it or name the entity '?' of this model; ask on the command line, "
             "where --head and --tail take names only: --relation 'r' --tail 'b' asks for the heads, --head '?' "
             "--relation 'r' --tail 'b' scores the triple\n", q);
    if (!CHECK(strcmp(err, want) == 0)) printf("    stderr: %s    wanted: %s", err, want);
    static const char tail_line[] = "c\ts\t?\n";
    q = write_tmp(T, 1, "ask.tsv", tail_line, sizeof tail_line - 1);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 && !*out && strstr(err, ":1: '?' as the tail"));
    /* the way out: the triple scored, and the question asked */
    snprintf(cmd, sizeof cmd, "predict --checkpoint '%s' --train '%s' --head '?' --relation r --tail b", ckpt, data);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && strstr(out, "(?, r, b)  a known triple"));

    /* the relation '?' is a name */
    static const char rel_line[] = "b\t?\tc\n";
    q = write_tmp(T, 1, "ask.tsv", rel_line, sizeof rel_line - 1);
    snprintf(cmd, sizeof cmd, "predict --checkpoint '%s' --train '%s' --queries '%s'", ckpt, data, q);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && strstr(out, "(b, ?, c)  a known triple"));
}
