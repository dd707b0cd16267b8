/* cli_member.c — one answer per question: kgl eval and kgl predict ask a
 * whole ensemble, and the commands that read one model (heads, export,
 * grad) say on their first line which member of how many they use, and why
 * one; --json carries "ensemble" and "member". A model of its own gets no
 * such line. */
#include "test.h"

static char out[1 << 17], err[1 << 14];

/* The first line of text (up to its newline) equals `want`. */
static bool first_line_is(const char *text, const char *want)
{
    size_t n = strlen(want);
    return strncmp(text, want, n) == 0 && text[n] == '\n';
}

TEST(one_model_commands_say_which_member_of_an_ensemble)
{
    char cmd[4096], want[2048];
    snprintf(cmd, sizeof cmd, "train --steps 20 --ensemble 3 --save %s/e.st --quiet", T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    static const struct {
        const char *args, *what, *why;
    } cmds[] = {
        {"heads", "showing", "Each model has its own heads and answers; kgl predict and kgl eval ask the whole"},
        {"heads --query alice,advises --top 3", "showing", "Each model has its own heads"},
        {"export --out %s/x", "exporting", "The models' vectors are separate spaces"},
        {"grad --out %s/g.st", "gradients of", "Each model of an ensemble is trained on its own loss"},
    };
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        char args[256];
        snprintf(args, sizeof args, cmds[k].args, T->tmp);
        /* member 0, unnamed; member 2, named by its file */
        snprintf(cmd, sizeof cmd, "%s --checkpoint %s/e.st", args, T->tmp);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        snprintf(want, sizeof want, "%s/e.st is an ensemble of 3 models: %s member 0 alone (--member K chooses another, 0 to 2)",
                 T->tmp, cmds[k].what);
        if (!CHECK(first_line_is(out, want))) printf("    %s\n    got: %.300s\n", cmd, out);
        const char *second = strchr(out, '\n');
        CHECK(second && strncmp(second + 1, cmds[k].why, strlen(cmds[k].why)) == 0);
        snprintf(cmd, sizeof cmd, "%s --checkpoint %s/e.st --member 2", args, T->tmp);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        snprintf(want, sizeof want,
                 "%s/e.st is an ensemble of 3 models: %s member 2 (%s/e.m2.st) alone (--member K chooses another, 0 to 2)",
                 T->tmp, cmds[k].what, T->tmp);
        if (!CHECK(first_line_is(out, want))) printf("    %s\n    got: %.300s\n", cmd, out);
        /* a member's own file: which ensemble it belongs to */
        snprintf(cmd, sizeof cmd, "%s --checkpoint %s/e.m1.st", args, T->tmp);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        snprintf(want, sizeof want,
                 "%s/e.m1.st is member 1 of the ensemble %s/e.st (3 models): %s it alone (--checkpoint %s/e.st "
                 "--member K chooses any, 0 to 2)",
                 T->tmp, T->tmp, cmds[k].what, T->tmp);
        if (!CHECK(first_line_is(out, want))) printf("    %s\n    got: %.300s\n", cmd, out);
        /* --json: the same facts as fields */
        snprintf(cmd, sizeof cmd, "%s --checkpoint %s/e.st --member 1 --json", args, T->tmp);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        kgl_json_doc doc;
        char e[256];
        if (CHECK(kgl_json_parse(out, strlen(out), &doc, e, sizeof e))) {
            const kgl_json *n = kgl_json_get(doc.root, "ensemble"), *m = kgl_json_get(doc.root, "member");
            CHECK(n && n->type == KGL_JSON_NUMBER && n->num == 3 && m && m->type == KGL_JSON_NUMBER && m->num == 1);
            kgl_json_free(&doc);
        }
    }
    /* A,B,...: the first of them, named, without --member */
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/e.m2.st,%s/e.m1.st", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(want, sizeof want,
             "%s/e.m2.st,%s/e.m1.st is an ensemble of 2 models: showing member 0 (%s/e.m2.st) alone (--member K "
             "chooses another, 0 to 1)",
             T->tmp, T->tmp, T->tmp);
    if (!CHECK(first_line_is(out, want))) printf("    got: %.300s\n", out);
}

/* A model of its own: no ensemble line, and "ensemble":1 in --json. */
TEST(one_model_of_its_own_says_nothing_of_ensembles)
{
    char cmd[2048], want[1024];
    snprintf(cmd, sizeof cmd, "train --steps 5 --save %s/one.st --quiet", T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/one.st", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(want, sizeof want, "%s/one.st: step 5, 2 heads", T->tmp);
    CHECK(strncmp(out, want, strlen(want)) == 0 && !strstr(out, "an ensemble of") && !strstr(out, "alone"));
    snprintf(cmd, sizeof cmd, "export --checkpoint %s/one.st --out %s/x --json", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strncmp(out, "{\"ensemble\":1,\"member\":0,", 25) == 0);
}

/* The graph context's report (kgl heads without --query) says it too. */
TEST(graph_heads_say_which_member_of_an_ensemble)
{
    char cmd[2048], want[1024];
    snprintf(cmd, sizeof cmd, "train --context graph --neighbours 4 --steps 10 --ensemble 2 --save %s/g.st --quiet",
             T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/g.st --train data/academic.tsv", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(want, sizeof want, "%s/g.st is an ensemble of 2 models: showing member 0 alone (--member K chooses another, 0 to 1)",
             T->tmp);
    CHECK(first_line_is(out, want));
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/g.st --train data/academic.tsv --json", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strncmp(out, "{\"ensemble\":2,\"member\":0,", 25) == 0);
}
