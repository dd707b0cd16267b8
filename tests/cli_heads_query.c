/* cli_heads_query.c — `kgl heads --query HEAD,REL`: where every head looks
 * from one entity, beside the readout's answers. On a model whose head 0
 * was supervised onto `advises`, head 0 at alice looks at her two students;
 * the numbers are the ones `kgl heads` and kgl_predict compute; inverses
 * (REL^-1) ask who stands in REL to HEAD; the table lines up; query.svg
 * outlines the true tails and lists the answers; every mistake is exit 2. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 17], err[1 << 14];

/* The academic world trained 300 steps with advises supervised onto head 0
   and authored onto head 1 (data/report/specialisation.md: spec ≥ 0.999 for seeds 1–10, fit by
   step 113), saved as DIR/q.st. */
static bool supervised_model(test_ctx *T, char *ckpt, size_t cap)
{
    snprintf(ckpt, cap, "%s/q.st", T->tmp);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --supervise-heads advises=0,authored=1 --save %s --quiet", ckpt);
    return CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
}

static const kgl_json *member(const kgl_json *o, const char *key)
{
    static const kgl_json null_value = {0};
    const kgl_json *v = o ? kgl_json_get(o, key) : NULL;
    return v ? v : &null_value;
}

/* The attention entry of `name` in the query's JSON, or NULL. */
static const kgl_json *attention_of(const kgl_json *root, const char *name)
{
    const kgl_json *a = member(root, "attention");
    for (size_t k = 0; a->type == KGL_JSON_ARRAY && k < a->len; k++)
        if (strcmp(member(&a->child[k], "entity")->str ? member(&a->child[k], "entity")->str : "", name) == 0)
            return &a->child[k];
    return NULL;
}

TEST(heads_query_json_agrees_with_heads_and_predict)
{
    char ckpt[512], cmd[1024], e[512];
    if (!supervised_model(T, ckpt, sizeof ckpt)) return;

    /* what plain `kgl heads` says each head's top-3 at alice are */
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --json", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    kgl_json_doc heads = {0};
    if (!CHECK(kgl_json_parse(out, strlen(out), &heads, e, sizeof e))) return;

    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query alice,advises --json --top 4", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    kgl_json_doc q = {0};
    if (!CHECK(kgl_json_parse(out, strlen(out), &q, e, sizeof e))) {
        kgl_json_free(&heads);
        return;
    }
    const kgl_json *root = q.root;
    CHECK(strcmp(member(member(root, "query"), "head")->str, "alice") == 0);
    CHECK(strcmp(member(member(root, "query"), "relation")->str, "advises") == 0);
    /* alice advises dave and erin in data/academic.tsv */
    const kgl_json *tt = member(root, "true_tails");
    CHECK(tt->type == KGL_JSON_ARRAY && tt->len == 2);
    if (tt->len == 2)
        CHECK((strcmp(tt->child[0].str, "dave") == 0 && strcmp(tt->child[1].str, "erin") == 0) ||
              (strcmp(tt->child[0].str, "erin") == 0 && strcmp(tt->child[1].str, "dave") == 0));

    /* every entity once, sorted by the mean over the heads; each head's row
       sums to 1 (a softmax row: round-off of 13 terms, far below 1e-12) */
    const kgl_json *att = member(root, "attention");
    CHECK(att->type == KGL_JSON_ARRAY && att->len == 13);
    double sum[2] = {0, 0}, prev = INFINITY;
    for (size_t k = 0; k < att->len; k++) {
        const kgl_json *w = member(&att->child[k], "heads");
        if (!CHECK(w->type == KGL_JSON_ARRAY && w->len == 2)) break;
        double mean = member(&att->child[k], "mean")->num;
        CHECK_NEAR(mean, (w->child[0].num + w->child[1].num) / 2, 1e-15);
        CHECK(mean <= prev);
        prev = mean;
        sum[0] += w->child[0].num, sum[1] += w->child[1].num;
    }
    CHECK_NEAR(sum[0], 1, 1e-12);
    CHECK_NEAR(sum[1], 1, 1e-12);
    /* head 0, supervised onto advises, puts its mass on her two students
       (measured 0.9999; 0.99 leaves room for another seed's numbers) */
    const kgl_json *dave = attention_of(root, "dave"), *erin = attention_of(root, "erin");
    if (CHECK(dave && erin)) {
        CHECK(member(dave, "heads")->child[0].num + member(erin, "heads")->child[0].num > 0.99);
        CHECK(member(dave, "true_tail")->type == KGL_JSON_TRUE && member(erin, "true_tail")->type == KGL_JSON_TRUE);
    }
    CHECK(member(attention_of(root, "bob"), "true_tail")->type == KGL_JSON_FALSE);

    /* the same bits as kgl heads' top-3 of alice for both heads */
    const kgl_json *top3 = member(heads.root, "top3");
    for (size_t h = 0; top3->type == KGL_JSON_ARRAY && h < top3->len; h++) {
        const kgl_json *list = member(&top3->child[h], "alice");
        CHECK(list->type == KGL_JSON_ARRAY && list->len == 3);
        for (size_t k = 0; k < list->len; k++) {
            const kgl_json *a = attention_of(root, list->child[k].child[0].str);
            CHECK(a && member(a, "heads")->child[h].num == list->child[k].child[1].num);
        }
    }

    /* the answers: 4 of them, the two students first, with kgl_predict's
       exact scores and probabilities */
    const kgl_json *ans = member(root, "answers");
    CHECK(ans->type == KGL_JSON_ARRAY && ans->len == 4);
    kgl_dataset ds = {0};
    kgl_source src = {"academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    kgl_checkpoint ck;
    kgl_model m;
    if (CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e)) && CHECK(kgl_checkpoint_open(ckpt, &ds, &ck, e, sizeof e))) {
        kgl_model_create(&m, &ck.cfg);
        kgl_checkpoint_apply(&ck, &m);
        kgl_answer want[4];
        int alice = kgl_dataset_entity_id(&ds, "alice"), advises = kgl_dataset_relation_id(&ds, "advises");
        CHECK(kgl_predict(&m, NULL, NULL, alice, advises, 4, false, want) == 4);
        for (size_t k = 0; k < ans->len && k < 4; k++) {
            const kgl_json *a = &ans->child[k];
            CHECK(member(a, "rank")->num == (double)k + 1);
            CHECK(strcmp(member(a, "entity")->str, ds.entity_names[want[k].entity]) == 0);
            CHECK(member(a, "score")->num == want[k].score && member(a, "prob")->num == want[k].prob);
            CHECK((member(a, "true_tail")->type == KGL_JSON_TRUE) == (k < 2));
        }
        kgl_model_free(&m);
        kgl_checkpoint_close(&ck);
    }
    kgl_dataset_free(&ds);
    kgl_json_free(&q);
    kgl_json_free(&heads);
}

TEST(heads_query_inverse_relation)
{
    char ckpt[512], cmd[1024], e[512];
    if (!supervised_model(T, ckpt, sizeof ckpt)) return;
    /* (dave, advises^-1, ?) asks who advises dave: alice, the one true
       answer, ranked first (the model fits every triple in both directions) */
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query dave,advises^-1 --json", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    kgl_json_doc q = {0};
    if (!CHECK(kgl_json_parse(out, strlen(out), &q, e, sizeof e))) return;
    CHECK(strcmp(member(member(q.root, "query"), "relation")->str, "advises^-1") == 0);
    const kgl_json *tt = member(q.root, "true_tails"), *ans = member(q.root, "answers");
    CHECK(tt->len == 1 && strcmp(tt->child[0].str, "alice") == 0);
    CHECK(ans->len == 10 && strcmp(member(&ans->child[0], "entity")->str, "alice") == 0);
    kgl_json_free(&q);

    /* a model without inverse rows refuses them, and says why */
    char plain[512];
    snprintf(plain, sizeof plain, "%s/norecip.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --no-reciprocal --steps 20 --save %s --quiet", plain);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query dave,advises^-1", plain);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--no-reciprocal") != NULL && out[0] == 0);
}

/* The text: a header naming the query and its true answers, then the
   attention table and the answers side by side, every line as wide. */
TEST(heads_query_text_lines_up)
{
    char ckpt[512], cmd[1024];
    if (!supervised_model(T, ckpt, sizeof ckpt)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query alice,advises", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "query (alice, advises, ?)\n") != NULL);
    CHECK(strstr(out, "true answers of (alice, advises, ?) in the training triples (marked *): dave, erin\n") ||
          strstr(out, "true answers of (alice, advises, ?) in the training triples (marked *): erin, dave\n"));
    const char *hdr = strstr(out, "\nentity");
    if (!CHECK(hdr != NULL)) return;
    hdr++;
    CHECK(strstr(hdr, "head 0") && strstr(hdr, "head 1") && strstr(hdr, "rank") && strstr(hdr, "answer"));
    /* 10 attention rows (--top 10 of 13) beside 10 answers: 11 lines of one width */
    size_t width = strcspn(hdr, "\n");
    const char *line = hdr;
    int lines = 0, starred = 0;
    for (int k = 0; k < 11; k++) {
        size_t len = strcspn(line, "\n");
        CHECK(len == width);
        if (k > 0) {
            lines++;
            if (strncmp(line, "dave *", 6) == 0 || strncmp(line, "erin *", 6) == 0) starred++;
        }
        line += len + (line[len] == '\n');
    }
    CHECK(lines == 10 && starred == 2);
    CHECK(strncmp(line, "(3 more entities", 16) == 0);
}

TEST(heads_query_svg)
{
    char ckpt[512], cmd[1024], path[1024];
    if (!supervised_model(T, ckpt, sizeof ckpt)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query alice,advises --svg %s/qpics", ckpt, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(path, sizeof path, "%s/qpics/query.svg", T->tmp);
    FILE *f = fopen(path, "r");
    if (!CHECK(f != NULL)) return;
    static char svg[1 << 20];
    size_t n = fread(svg, 1, sizeof svg - 1, f);
    fclose(f);
    svg[n] = 0;
    /* 13 entities x (2 heads + the readout's row); the 2 true tails outlined in each row */
    int cells = 0, outlined = 0;
    for (const char *p = svg; (p = strstr(p, "<rect class=\"cell")); p++) {
        cells++;
        outlined += strncmp(p, "<rect class=\"cell outlined\"", 27) == 0;
    }
    CHECK(cells == 39 && outlined == 6);
    CHECK(strstr(svg, ">head 0<") && strstr(svg, ">readout p(j)<"));
    CHECK(strstr(svg, ">top answers (readout p):<") != NULL);
    CHECK((strstr(svg, ">1. dave ") && strstr(svg, ">2. erin ")) || (strstr(svg, ">1. erin ") && strstr(svg, ">2. dave ")));
}

TEST(heads_query_mistakes)
{
    char ckpt[512], cmd[1024];
    if (!supervised_model(T, ckpt, sizeof ckpt)) return;
    static const struct {
        const char *query, *says;
    } bad[] = {
        {"alce,advises", "unknown entity 'alce'; did you mean 'alice'?"},
        {"alice,advise", "unknown relation 'advise'; did you mean 'advises', 'advises^-1'?"},
        {"alice,adviss^-1", "unknown relation 'adviss^-1'; did you mean 'advises^-1'?"},
        {"alice", "expected HEAD,REL"},
        {"alice,", "expected HEAD,REL"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query '%s'", ckpt, bad[k].query);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
        if (!CHECK(strstr(err, bad[k].says) != NULL && out[0] == 0)) printf("    %s: %s", bad[k].query, err);
    }
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --top 3", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--top needs --query") != NULL);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query alice,advises --top 0", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
}

/* kgl heads' heads.svg: each panel names its own best relation and counts
   its own outlined cells (the grid's one legend used to name the first
   panel's relation with the count of all: "true tail (advises) (9)"). */
TEST(heads_grid_keys_name_each_panels_relation)
{
    char ckpt[512], cmd[1024], path[1024];
    if (!supervised_model(T, ckpt, sizeof ckpt)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --svg %s/grid", ckpt, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(path, sizeof path, "%s/grid/heads.svg", T->tmp);
    FILE *f = fopen(path, "r");
    if (!CHECK(f != NULL)) return;
    static char svg[1 << 20];
    size_t n = fread(svg, 1, sizeof svg - 1, f);
    fclose(f);
    svg[n] = 0;
    /* advises: alice → dave, erin; bob → carol (3 triples); authored: 6 */
    CHECK(strstr(svg, ">true tail (advises) (3)<") != NULL);
    CHECK(strstr(svg, ">true tail (authored) (6)<") != NULL);
    CHECK(strstr(svg, "(9)<") == NULL);
    CHECK(strstr(svg, ">head 0: best relation advises (spec 1.00)<") != NULL);
    CHECK(strstr(svg, ">head 1: best relation authored (spec 1.00)<") != NULL);
}

/* A neighbourhood model: --query shows the question's segment (the entity
   itself first, then its edges), each head's weights per layer beside
   uniform's (each a softmax over the tokens: sum 1 to round-off of at most
   K + 1 = 4 terms), true answers marked, and the readout's answers. */
TEST(heads_query_on_a_graph_model_shows_its_neighbourhood)
{
    char cmd[1024], e[512], ckpt[512];
    snprintf(ckpt, sizeof ckpt, "%s/g.st", T->tmp);
    snprintf(cmd, sizeof cmd,
             "train --context graph --neighbours 3 --query-relation --dim 8 --heads 2 --steps 60 --save %s --quiet",
             ckpt);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query alice,advises --json --top 3", ckpt);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    kgl_json_doc q = {0};
    if (!CHECK(kgl_json_parse(out, strlen(out), &q, e, sizeof e))) return;
    const kgl_json *tokens = member(q.root, "tokens");
    CHECK(member(q.root, "layers")->num == 1 && strcmp(member(q.root, "context")->str, "graph") == 0);
    if (CHECK(tokens->type == KGL_JSON_ARRAY && tokens->len >= 2 && tokens->len <= 4)) {
        CHECK(strcmp(member(&tokens->child[0], "entity")->str, "alice") == 0);
        CHECK(member(&tokens->child[0], "relation")->type == KGL_JSON_NULL);
        CHECK_NEAR(member(q.root, "uniform")->num, 1.0 / tokens->len, 1e-15);
        double sum[2] = {0, 0};
        bool marked = false;
        for (size_t t = 0; t < tokens->len; t++) {
            const kgl_json *w = member(&tokens->child[t], "layers");
            if (!CHECK(w->len == 1 && w->child[0].len == 2)) break;
            sum[0] += w->child[0].child[0].num, sum[1] += w->child[0].child[1].num;
            const char *ent = member(&tokens->child[t], "entity")->str;
            bool answer = strcmp(ent, "dave") == 0 || strcmp(ent, "erin") == 0; /* alice advises both */
            CHECK(member(&tokens->child[t], "true_answer")->type == (answer ? KGL_JSON_TRUE : KGL_JSON_FALSE));
            marked |= answer;
        }
        CHECK(marked); /* the asked relation is shown (no --hide-asked-relation): an advises edge is a token */
        CHECK_NEAR(sum[0], 1.0, 1e-14);
        CHECK_NEAR(sum[1], 1.0, 1e-14);
    }
    CHECK(member(q.root, "answers")->len == 3);
    kgl_json_free(&q);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query alice,advises", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "uniform weight: ") != NULL && strstr(out, "(itself) alice") != NULL);
    CHECK(strstr(out, "layer 0: where each head looks") != NULL && strstr(out, "the readout's top answers") != NULL);
    /* --svg draws the neighbourhood (it was refused; tests/io_svg.c checks the picture) */
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query alice,advises --svg %s/pics", ckpt, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "/pics/query.svg") != NULL);
}

/* --relation-token: the asked relation is a token of the neighbourhood, and
   kgl heads --query names it in the text, the JSON and the picture (it died
   on the relation row 2m + 1 + r, a row no relation has). */
TEST(heads_query_names_the_asked_relation_token)
{
    char cmd[1024], e[512], ckpt[512], path[600];
    snprintf(ckpt, sizeof ckpt, "%s/t.st", T->tmp);
    snprintf(cmd, sizeof cmd,
             "train --context graph --neighbours 3 --query-relation --relation-token --steps 30 --save %s --quiet", ckpt);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query alice,advises", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "(itself, the asked relation and 3 edges)") != NULL && strstr(out, "(asked) advises") != NULL);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query alice,advises --json", ckpt);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    kgl_json_doc q = {0};
    if (!CHECK(kgl_json_parse(out, strlen(out), &q, e, sizeof e))) return;
    const kgl_json *tokens = member(q.root, "tokens");
    if (CHECK(tokens->type == KGL_JSON_ARRAY && tokens->len == 5)) {
        const kgl_json *asked = &tokens->child[1];
        CHECK(member(asked, "entity")->type == KGL_JSON_NULL && member(asked, "relation")->type == KGL_JSON_NULL);
        CHECK(strcmp(member(asked, "asked_relation")->str, "advises") == 0);
        CHECK(member(asked, "true_answer")->type == KGL_JSON_FALSE);
    }
    kgl_json_free(&q);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s --query alice,advises --svg %s/pics", ckpt, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(path, sizeof path, "%s/pics/query.svg", T->tmp);
    size_t len = 0;
    char *svg = test_slurp(path, &len);
    CHECK(svg && strstr(svg, "(asked) advises") != NULL);
    free(svg);
}

/* An entity's name is as long as a line allows: --query takes it whole (it
   was copied into 512 bytes, so a longer name was never found). */
TEST(heads_query_takes_a_long_name_whole)
{
    static char name[700], text[2000], cmd[4000];
    memset(name, 'a', 600);
    strcpy(name + 600, "\xe2\x82\xac"); /* and a 3-byte character past byte 511 */
    snprintf(text, sizeof text, "%s\tr\tb\nb\tr\tc\nc\tr\t%s\n", name, name);
    const char *data = write_tmp(T, 0, "long.tsv", text, strlen(text));
    snprintf(cmd, sizeof cmd, "train --train '%s' --steps 5 --save '%s/l.st' --quiet", data, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint '%s/l.st' --train '%s' --query '%s,r' --json", T->tmp, data, name);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, name) != NULL);
}
