/* tests/model_recipe.c — kgl train --recipe FILE: formulas of the graph's
 * counts, the words of a recipe with their lines, every error as
 * file:line, and the command line winning over the recipe. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 16], err[1 << 14];

/* Formulas whose values are whole numbers or short binary fractions: exact. */
TEST(recipe_formulas_by_hand)
{
    kgl_recipe_vars umls = {135, 46, 5216}, nations = {14, 55, 1592};
    char why[512];
    double x;
    CHECK(kgl_recipe_eval("max(64,16*round(n_entities/16))", &umls, &x, why, sizeof why) && x == 128);
    CHECK(kgl_recipe_eval("max(64,16*round(n_entities/16))", &nations, &x, why, sizeof why) && x == 64);
    CHECK(kgl_recipe_eval("round(n_train/5)", &umls, &x, why, sizeof why) && x == 1043);
    CHECK(kgl_recipe_eval("n_relations", &nations, &x, why, sizeof why) && x == 55);
    CHECK(kgl_recipe_eval("2+3*4", &umls, &x, why, sizeof why) && x == 14);
    CHECK(kgl_recipe_eval("-(2-5)/2", &umls, &x, why, sizeof why) && x == 1.5);
    CHECK(kgl_recipe_eval("10-4-3", &umls, &x, why, sizeof why) && x == 3); /* left to right */
    CHECK(kgl_recipe_eval("min(3,1,2)+sqrt(16)+log2(8)", &umls, &x, why, sizeof why) && x == 8);
    CHECK(kgl_recipe_eval("0.25*(n_train-16)", &umls, &x, why, sizeof why) && x == 1300);

    CHECK(!kgl_recipe_eval("n_entites*2", &umls, &x, why, sizeof why));
    CHECK(strstr(why, "unknown name 'n_entites'; did you mean 'n_entities'") == why);
    CHECK(!kgl_recipe_eval("max(1", &umls, &x, why, sizeof why) && strstr(why, "expected ',' or ')'"));
    CHECK(!kgl_recipe_eval("1/0", &umls, &x, why, sizeof why) && strstr(why, "not a finite number"));
    CHECK(!kgl_recipe_eval("3)", &umls, &x, why, sizeof why) && strstr(why, "unexpected character at ')'"));
    CHECK(!kgl_recipe_eval("sqrt(4,9)", &umls, &x, why, sizeof why) && strstr(why, "one argument"));
    CHECK(!kgl_recipe_eval("", &umls, &x, why, sizeof why) && strstr(why, "expected a number"));
}

TEST(recipe_words_lines_and_errors)
{
    kgl_recipe_vars v = {135, 46, 5216};
    kgl_recipe r;
    char e[1024];
    const char *text = "# a comment\n--dim =8*16 --heads 4\n\n--batch =round(n_train/5)# glued\n--lr 0.005\n";
    if (CHECK(kgl_recipe_from_memory(&r, "r.args", text, strlen(text), &v, e, sizeof e))) {
        static const char *const want[] = {"--dim", "128", "--heads", "4", "--batch", "1043", "--lr", "0.005"};
        static const int lines[] = {2, 2, 2, 2, 4, 4, 5, 5};
        CHECK(r.argc == 8);
        for (int k = 0; k < 8 && k < r.argc; k++) CHECK(strcmp(r.argv[k], want[k]) == 0 && r.line[k] == lines[k]);
        CHECK(strcmp(r.text, "--dim 128 --heads 4 --batch 1043 --lr 0.005") == 0);
        kgl_recipe_free(&r);
    }
    text = "--dim 8\n# c\n--steps =n_trian\n";
    CHECK(!kgl_recipe_from_memory(&r, "r.args", text, strlen(text), &v, e, sizeof e));
    CHECK(strstr(e, "r.args:3: formula '=n_trian': unknown name 'n_trian'; did you mean 'n_train'") == e);
    text = "--dim 8\n  --train=x.tsv\n";
    CHECK(!kgl_recipe_from_memory(&r, "r.args", text, strlen(text), &v, e, sizeof e));
    CHECK(strstr(e, "r.args:2: --train belongs on the command line") == e);
    text = "--weight-decay =1/(n_entities-135)";
    CHECK(!kgl_recipe_from_memory(&r, "r.args", text, strlen(text), &v, e, sizeof e));
    CHECK(strstr(e, "r.args:1: formula '=1/(n_entities-135)': the value is inf") == e);
}

static bool final_loss(const char *json, char *buf, size_t cap)
{
    const char *p = strstr(json, "\"final_loss\":");
    if (!p) return false;
    p += 13;
    size_t n = strcspn(p, ",}");
    if (n + 1 > cap) return false;
    memcpy(buf, p, n);
    buf[n] = 0;
    return true;
}

/* A recipe is the options it computes: the same run as typing them, and an
   option on the command line wins over the recipe's. The academic world has
   13 entities, so =4*round(n_entities/4) is 12. */
TEST(recipe_runs_as_typed_options)
{
    const char *text = "--dim =4*round(n_entities/4) --heads 2\n--steps 50 --lr 0.02\n";
    const char *path = write_tmp(T, 0, "r.args", text, strlen(text));
    char cmd[1024], a[64], b[64];
    snprintf(cmd, sizeof cmd, "train --recipe '%s' --steps 20 --json", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "{\"steps\":20,") == out);
    CHECK(final_loss(out, a, sizeof a));
    CHECK(run_kgl(T, "train --dim 12 --heads 2 --lr 0.02 --steps 20 --json", out, sizeof out, err, sizeof err) == 0);
    CHECK(final_loss(out, b, sizeof b));
    if (!CHECK(strcmp(a, b) == 0)) printf("    recipe %s, typed %s\n", a, b);
    /* what the recipe computed is said (not with --json or --quiet) */
    snprintf(cmd, sizeof cmd, "train --recipe '%s' --steps 1", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "(13 entities, 5 relations, 21 training triples)") && strstr(err, ": --dim 12 --heads 2 --steps 50 --lr 0.02\n"));

    text = "--dim 8\n--steps =max(10,\n";
    const char *bad = write_tmp(T, 1, "bad.args", text, strlen(text));
    snprintf(cmd, sizeof cmd, "train --recipe '%s'", bad);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "bad.args:2: formula '=max(10,': expected a number") != NULL);
    snprintf(cmd, sizeof cmd, "train --recipe '%s/missing.args'", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "missing.args") != NULL);
    snprintf(cmd, sizeof cmd, "train --steps 2 --save '%s/m.st' --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "train --recipe '%s' --resume '%s/m.st'", path, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--recipe starts a run") != NULL);
    /* the shipped recipe reads, and its options parse (it selects on valid) */
    CHECK(run_kgl(T,
                  "train --recipe data/bench/recipe.args --train data/kg/nations/train.txt --valid "
                  "data/kg/nations/valid.txt --steps 1 --quiet",
                  out, sizeof out, err, sizeof err) == 0);
}
