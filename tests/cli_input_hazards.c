/* cli_input_hazards.c — issue 25's parsing and input hazards: a recipe
 * formula nested 20,000 deep, a NUL byte or a byte-order mark in an options
 * file, a recipe's mistakes with file:line and its echo of what the run
 * uses, a stray byte after an unknown relation, a relation named like an
 * inverse in a checkpoint, --valid without --train, --queries -, a member
 * file opened alone, and the manual's word on eval --ranks. (The triples
 * files' own hazards are in io_data.c.) */
#include <stdlib.h>

#include "test.h"

static char out[1 << 16], err[1 << 14];

/* The formula of the issue: '(' 20,000 times around 8 overflowed the
   stack of the recursive descent (SIGSEGV); it is refused, file:line,
   with exit 2. */
TEST(recipe_formula_nested_20000_deep_is_refused)
{
    enum { DEEP = 20000 };
    static char text[2 * DEEP + 16];
    size_t n = (size_t)snprintf(text, sizeof text, "--dim =");
    memset(text + n, '(', DEEP), n += DEEP;
    text[n++] = '8';
    memset(text + n, ')', DEEP), n += DEEP;
    text[n++] = '\n';
    const char *path = write_tmp(T, 0, "p.args", text, n);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --recipe '%s'", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    /* the formula is cut short in the message, so that the reason shows */
    if (!CHECK(strstr(err, "kgl train: ") == err && strstr(err, "p.args:1: formula '=((((((((((") &&
               strstr(err, "...': nested more than 64 deep at '((((((((((") && strlen(err) < 400))
        printf("    stderr: %.600s\n", err);
    /* signs nest too */
    n = (size_t)snprintf(text, sizeof text, "--dim =");
    memset(text + n, '-', DEEP), n += DEEP;
    text[n++] = '8';
    path = write_tmp(T, 1, "s.args", text, n);
    snprintf(cmd, sizeof cmd, "train --recipe '%s'", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 && strstr(err, "s.args:1: formula") &&
          strstr(err, "nested more than 64 deep"));
}

/* The bound is KGL_RECIPE_MAX_DEPTH levels exactly, whatever nests:
   parentheses, function calls, signs. */
TEST(recipe_formula_depth_bound_is_exact)
{
    kgl_recipe_vars v = {13, 5, 21, 21};
    static const char *const open[] = {"(", "max(1,", "-(", "round("};
    for (size_t k = 0; k < sizeof open / sizeof open[0]; k++) {
        for (int depth = KGL_RECIPE_MAX_DEPTH - 1; depth <= KGL_RECIPE_MAX_DEPTH + 1; depth++) {
            char f[1024] = "", why[512];
            size_t n = 0;
            /* "-(" is two levels (a sign, then a parenthesis): half as many */
            int times = k == 2 ? depth / 2 : depth, extra = k == 2 ? depth % 2 : 0;
            for (int i = 0; i < extra; i++) f[n++] = '-';
            for (int i = 0; i < times; i++) n += (size_t)snprintf(f + n, sizeof f - n, "%s", open[k]);
            f[n++] = '8';
            for (int i = 0; i < times; i++) f[n++] = ')';
            f[n] = 0;
            double x = 0;
            bool ok = kgl_recipe_eval(f, &v, &x, why, sizeof why);
            bool want = depth <= KGL_RECIPE_MAX_DEPTH;
            if (!CHECK(ok == want)) printf("    '%s' (depth %d): %s\n", f, depth, ok ? "accepted" : why);
            if (want) CHECK(fabs(x) == 8);
            else CHECK(strstr(why, "nested more than 64 deep at '") == why);
        }
    }
}

/* A NUL byte ended the file there with exit 0 (the run had --dim 16 alone);
   it is refused with file:line, in a recipe and in a benchmark's .args. */
TEST(options_file_with_a_nul_byte_is_refused)
{
    static const char text[] = "--dim 16\0 --heads 4 --ffn 32\n";
    const char *path = write_tmp(T, 0, "nul.args", text, sizeof text - 1);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --recipe '%s' --steps 1", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    if (!CHECK(strstr(err, "kgl train: ") == err && strstr(err, "nul.args:1: line contains a NUL byte (column 9)\n")))
        printf("    stderr: %s\n", err);
    CHECK(!*out);
    static const char two[] = "--steps 20\n--eval-every 10 # x\0y\n";
    write_tmp(T, 1, "bench.args", two, sizeof two - 1);
    kgl_benchmark_dataset d;
    char e[1400];
    CHECK(kgl_benchmark_load_config(&d, T->tmp, "bench", e, sizeof e) == KGL_BENCHMARK_CONFIG_INVALID);
    if (!CHECK(strstr(e, "bench.args:2: line contains a NUL byte (column 20)") != NULL)) printf("    %s\n", e);
    kgl_benchmark_dataset_free(&d);
}

/* A byte-order mark, which every other reader skips, made the recipe's
   first word '\xef\xbb\xbf--dim', an unknown option; it is skipped. */
TEST(options_file_with_a_bom_is_read)
{
    static const char text[] = "\xef\xbb\xbf--dim 12 --heads 2\n--steps 3\n";
    const char *path = write_tmp(T, 0, "bom.args", text, sizeof text - 1);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --recipe '%s' --json", path);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("    stderr: %s\n", err);
    CHECK(strstr(out, "{\"steps\":3,") == out);
    kgl_recipe r;
    kgl_recipe_vars v = {13, 5, 21, 21};
    char e[1024];
    if (CHECK(kgl_recipe_from_memory(&r, "bom.args", text, sizeof text - 1, &v, e, sizeof e))) {
        CHECK(r.argc == 6 && strcmp(r.argv[0], "--dim") == 0 && r.line[4] == 2);
        kgl_recipe_free(&r);
    }
    static const char cfg[] = "\xef\xbb\xbf--steps 20 --eval-every 10\n";
    write_tmp(T, 1, "bench.args", cfg, sizeof cfg - 1);
    kgl_benchmark_dataset d;
    CHECK(kgl_benchmark_load_config(&d, T->tmp, "bench", e, sizeof e) == KGL_BENCHMARK_CONFIG_OK);
    /* the words read past the mark; kgl train is given the file (--recipe), read as above */
    CHECK(d.argc == 2 && strcmp(d.argv[0], "--recipe") == 0 && strcmp(d.args_text, "--steps 20 --eval-every 10") == 0);
    kgl_benchmark_dataset_free(&d);
}

/* A mistake in a recipe's options (not only in its formulas) says where it
   is: the file and line of the word. */
TEST(recipe_option_mistakes_name_file_and_line)
{
    static const char text[] = "--dim 16 --heads 4\n# width\n--dimm 3\n";
    const char *path = write_tmp(T, 0, "r.args", text, sizeof text - 1);
    char cmd[1024], want[1024];
    snprintf(cmd, sizeof cmd, "train --recipe '%s' --steps 1", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    snprintf(want, sizeof want,
             "kgl train: %s:3: unknown option '--dimm'; did you mean '--dim'?\nTry 'kgl train --help'.\n", path);
    if (!CHECK(strcmp(err, want) == 0)) printf("    stderr: %s    want:   %s", err, want);
    static const char range[] = "--dim 16\n--heads =n_entities*0\n";
    path = write_tmp(T, 1, "z.args", range, sizeof range - 1);
    snprintf(cmd, sizeof cmd, "train --recipe '%s' --steps 1", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "z.args:2: --heads expects a whole number from 1 to ") != NULL);
    /* the command line's own mistakes are the command line's */
    snprintf(cmd, sizeof cmd, "train --recipe '%s' --hedas 2", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl train: unknown option '--hedas'; did you mean '--heads'?\n") == err);
}

/* The case: a recipe of --dim 128 … --ensemble 10 run with --dim 32
   --ensemble 2 printed the recipe's values; the echo is what the run uses. */
TEST(recipe_echo_shows_what_the_run_uses)
{
    static const char text[] = "--dim 128 --heads 4\n--qk-norm --lr=0.01\n--ensemble 10\n";
    const char *path = write_tmp(T, 0, "e.args", text, sizeof text - 1);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --recipe '%s' --dim 32 --ensemble=2 --steps 1", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char want[1024];
    snprintf(want, sizeof want,
             "kgl train: recipe %s (13 entities, 5 relations, 21 training triples): --dim 32 --heads 4 --qk-norm "
             "--lr=0.01 --ensemble=2 (--dim, --ensemble from the command line)\n", path);
    if (!CHECK(strstr(err, want) == err)) printf("    stderr: %s    want:   %s", err, want);
}

/* valgrind saw a conditional jump on the uninitialised hint buffer, printed
   when no relation was near the name: the whole message is checked, and
   under valgrind no error is reported (when valgrind is installed and can
   run this binary: not a sanitizer build, and debug information it reads,
   which clang 14's DWARF 5 is not for an older valgrind). */
#if defined(__SANITIZE_ADDRESS__)
#define KGL_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KGL_TEST_ASAN 1
#endif
#endif
TEST(unknown_relation_message_has_no_stray_byte)
{
    static const char want[] = "kgl train: --supervise-heads: no relation 'qqqqqqqq' in the triples (they have: about, "
                               "advises, affiliated, authored, cites)\n";
    CHECK(run_kgl(T, "train --supervise-heads qqqqqqqq=0", out, sizeof out, err, sizeof err) == 2);
    if (!CHECK(strcmp(err, want) == 0)) printf("    stderr: %s", err);
#ifndef KGL_TEST_ASAN
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "valgrind -q --error-exitcode=97 '%s' --version", T->kgl);
    if (run_sh(T, cmd, out, sizeof out, err, sizeof err) != 0) {
        printf("    valgrind cannot run %s here: the message alone is checked\n", T->kgl);
        return;
    }
    snprintf(cmd, sizeof cmd, "valgrind -q --error-exitcode=97 '%s' train --supervise-heads qqqqqqqq=0", T->kgl);
    int st = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(st == 2 && strcmp(err, want) == 0)) printf("    exit %d, stderr: %s", st, err);
#endif
}

/* A checkpoint whose relation names one like an inverse ("r^-1") is refused
   when its names are the ones used (no triples given), as a triples file
   is. The checkpoint is one of relation 'rz-1', renamed in place (same
   length, same order). */
TEST(checkpoint_relation_named_like_an_inverse_is_refused)
{
    static const char text[] = "a\tr\tb\nb\trz-1\ta\n";
    const char *data = write_tmp(T, 0, "inv.tsv", text, sizeof text - 1);
    char cmd[2048], ck[600];
    snprintf(ck, sizeof ck, "%s/inv.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --train '%s' --steps 2 --save '%s' --quiet", data, ck);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    size_t n;
    char *bytes = test_slurp(ck, &n);
    if (!CHECK(bytes != NULL)) return;
    int renamed = 0;
    for (size_t i = 0; i + 4 <= n; i++)
        if (memcmp(bytes + i, "rz-1", 4) == 0) memcpy(bytes + i, "r^-1", 4), renamed++;
    CHECK(renamed == 1);
    write_tmp(T, 1, "inv2.st", bytes, n);
    free(bytes);
    snprintf(cmd, sizeof cmd, "predict --checkpoint '%s/inv2.st' --head a --relation r", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    if (!CHECK(strstr(err, "inv2.st: metadata 'relations': 'r^-1' ends with '^-1', which names the inverse of a "
                           "relation") != NULL && !*out))
        printf("    stderr: %s\n", err);
}

/* --valid or --test without --train trained on the embedded academic world
   with exit 0 (and a warning that its triples were all in train): an
   error, for every command that loads triples. */
TEST(valid_or_test_without_train_is_an_error)
{
    const char *valid = write_tmp(T, 0, "v.tsv", "carol\tadvises\tdave\n", 19);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "train --valid '%s' --steps 1", valid);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strcmp(err, "kgl train: --valid needs --train F: the embedded academic world is used only when no triples "
                      "file is given\n") == 0 && !*out);
    snprintf(cmd, sizeof cmd, "train --valid '%s' --test '%s' --steps 1", valid, valid);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl train: --valid and --test need --train F") == err);
    snprintf(cmd, sizeof cmd, "train --steps 2 --save '%s/m.st' --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s/m.st' --test '%s'", T->tmp, valid);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl eval: --test needs --train F") == err && !*out);
    /* with --train, the same files are fine */
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s/m.st' --train data/academic.tsv --test '%s'", T->tmp, valid);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
}

/* --queries - reads the questions from standard input ("cannot open" before). */
TEST(predict_queries_from_standard_input)
{
    static char from_file[sizeof out];
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "train --steps 5 --save '%s/m.st' --quiet", T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    static const char q[] = "alice\tadvises\t?\n?\tauthored\tp1\n";
    const char *qpath = write_tmp(T, 0, "q.tsv", q, sizeof q - 1);
    snprintf(cmd, sizeof cmd, "predict --checkpoint '%s/m.st' --queries '%s' --top 3", T->tmp, qpath);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    memcpy(from_file, out, sizeof out);
    snprintf(cmd, sizeof cmd, "'%s' predict --checkpoint '%s/m.st' --queries - --top 3 < '%s'", T->kgl, T->tmp, qpath);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strcmp(out, from_file) == 0 && !*err);
    snprintf(cmd, sizeof cmd, "cat '%s' | '%s' predict --checkpoint '%s/m.st' --queries - --top 3", qpath, T->kgl,
             T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strcmp(out, from_file) == 0);
    /* its errors say where: standard input's line */
    snprintf(cmd, sizeof cmd, "printf 'alice\\tadvise\\t?\\n' | '%s' predict --checkpoint '%s/m.st' --queries -",
             T->kgl, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strcmp(err, "/dev/stdin:1: unknown relation 'advise'; did you mean 'advises'?\n") == 0);
}

/* An ensemble's member file given alone is answered as one model, as asked,
   with a note that names --member and the ensemble's file. */
TEST(member_file_alone_suggests_member)
{
    char cmd[4096], want[2048];
    snprintf(cmd, sizeof cmd, "train --ensemble 3 --steps 2 --save '%s/e.st' --quiet", T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s/e.m2.st'", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(want, sizeof want,
             "kgl eval: note: %s/e.m2.st is member 2 of the ensemble %s/e.st and is used alone here (as --checkpoint "
             "%s/e.st --member 2); --checkpoint %s/e.st uses the whole ensemble\n", T->tmp, T->tmp, T->tmp, T->tmp);
    if (!CHECK(strcmp(err, want) == 0)) printf("    stderr: %s    want:   %s", err, want);
    snprintf(cmd, sizeof cmd, "predict --checkpoint '%s/e.m1.st' --head alice --relation advises", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "kgl predict: note: ") == err && strstr(err, "e.m1.st is member 1 of the ensemble"));
    /* member 0, --member, and a file merely named like a member: no note */
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s/e.st'", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && !*err);
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s/e.st' --member 2", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && !*err);
    snprintf(cmd, sizeof cmd, "cp '%s/e.m1.st' '%s/x.m1.st'", T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s/x.m1.st'", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && !*err);
}

/* A checkpoint whose relation was renamed (cites -> cites2: still 13
   entities and 5 relations) was refused as "trained on 13 entities and 5
   relations, not on the embedded academic world (13 entities, 5
   relations)": the message names the name that differs. */
TEST(checkpoint_of_renamed_relation_names_what_differs)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "sed 's/\tcites\t/\tcites2\t/' data/academic.tsv > '%s/c2.tsv' && '%s' train --train '%s/c2.tsv' --steps 2 "
             "--save '%s/c2.st' --quiet",
             T->tmp, T->kgl, T->tmp, T->tmp);
    if (!CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s/c2.st'", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    char want[2048];
    snprintf(want, sizeof want,
             "%s/c2.st: this checkpoint was not trained on the embedded academic world: its relation 4 is 'cites2', "
             "the academic world's is 'cites'; give the triples files it was trained with (--train F, and --valid, "
             "--test if it had them)\n", T->tmp);
    if (!CHECK(strcmp(err, want) == 0)) printf("    stderr: %s    want:   %s", err, want);
}

/* The manual's `kgl eval` section (data/report/manual.md, linked from the
   README) says which status a --ranks path that cannot be written gets; it
   said 3, the program (rightly, by the exit table: found before any work)
   gives 2. */
TEST(manual_eval_ranks_status_is_the_programs)
{
    char *manual = test_slurp("data/report/manual.md", NULL);
    if (!CHECK(manual != NULL)) return;
    const char *sec = strstr(manual, "\n## `kgl eval`");
    const char *at = sec ? strstr(sec, "refused before the evaluation (exit ") : NULL;
    int said = at ? at[strlen("refused before the evaluation (exit ")] - '0' : -1;
    free(manual);
    if (!CHECK(at != NULL)) return;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "train --steps 1 --save '%s/m.st' --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s/m.st' --ranks '%s/no/such/folder/r.tsv'", T->tmp, T->tmp);
    int got = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(got == said)) printf("    the manual says exit %d, kgl eval exits %d\n", said, got);
    CHECK(got == 2);
}

/* Whether every byte of s is in whole UTF-8 characters; says where not. */
static bool whole_characters(const char *what, const char *s)
{
    size_t at = 0;
    if (kgl_utf8_valid((const unsigned char *)s, strlen(s), &at)) return true;
    printf("    %s: a character cut at byte %zu: ...%.60s\n", what, at, s + (at > 20 ? at - 20 : 0));
    return false;
}

/* "ab" and n euro signs (3 bytes each). */
static void euro_name(char *out, int n)
{
    strcpy(out, "ab");
    for (int k = 0; k < n; k++) strcat(out, "\xe2\x82\xac");
}

/* Issue 46: tables cut a name at 40 bytes ("%-*.*s"), so a relation called
   "ab" and 45 euro signs was printed with the 13th sign cut in the middle,
   and names not in ASCII were padded by bytes, out of line with the
   columns. Every table now cuts at a character's end and pads by
   characters (kgl_table_cell, kgl_utf8_prefix): train's metrics and
   specialisation, eval, predict, heads (its spec table, its top-3 entities,
   --query's cells, and a graph model's table). */
TEST(table_names_are_cut_between_characters)
{
    char rel[2 + 3 * 45 + 1], ent[2 + 3 * 45 + 1], cut40[2 + 3 * 38 + 1], cut24[2 + 3 * 22 + 1], text[1024];
    euro_name(rel, 45), euro_name(ent, 45), euro_name(cut40, 38), euro_name(cut24, 22);
    ent[0] = cut24[0] = 'e'; /* another name than the relation's */
    snprintf(text, sizeof text, "%s\t%s\tx\nx\t%s\ty\ny\tr2\t%s\nx\tr2\tz\nz\t%s\t%s\n", ent, rel, rel, ent, rel, ent);
    const char *data = write_tmp(T, 0, "euro.tsv", text, strlen(text));
    char cmd[2048], want[512];
    snprintf(cmd, sizeof cmd, "train --train '%s' --steps 5 --save '%s/e.st' --dim 8 --heads 2", data, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    CHECK(whole_characters("train", out));
    /* 40 characters, then the count in the column of "all"'s */
    snprintf(want, sizeof want, "\n%s      3", cut40);
    CHECK(strstr(out, want) != NULL);
    snprintf(want, sizeof want, "\n%-40s      5", "all");
    CHECK(strstr(out, want) != NULL);

    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s/e.st' --train '%s'", T->tmp, data);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && whole_characters("eval", out));
    snprintf(cmd, sizeof cmd, "heads --checkpoint '%s/e.st' --train '%s'", T->tmp, data);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && whole_characters("heads", out));
    snprintf(want, sizeof want, "\n  %s ->", cut24); /* top-3: the entity in 24 characters */
    CHECK(strstr(out, want) != NULL);
    snprintf(cmd, sizeof cmd, "heads --checkpoint '%s/e.st' --train '%s' --query '%s,%s'", T->tmp, data, ent, rel);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && whole_characters("heads --query", out));
    /* predict pads by characters: "x" in a column as wide as the 47-character name */
    snprintf(cmd, sizeof cmd, "predict --checkpoint '%s/e.st' --train '%s' --relation r2 --tail '%s' --no-filter",
             T->tmp, data, ent);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && whole_characters("predict", out));
    snprintf(want, sizeof want, "  %-47s  ", "x");
    CHECK(strstr(out, want) != NULL);

    snprintf(cmd, sizeof cmd, "train --train '%s' --steps 3 --context graph --neighbours 4 --save '%s/g.st' --quiet",
             data, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "heads --checkpoint '%s/g.st' --train '%s'", T->tmp, data);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && whole_characters("graph heads", out));
    snprintf(want, sizeof want, "\n%s ", cut40);
    CHECK(strstr(out, want) != NULL);
    /* a graph model's question: its tokens ("relation entity") cut at 40 characters */
    snprintf(cmd, sizeof cmd, "heads --checkpoint '%s/g.st' --train '%s' --query '%s,%s'", T->tmp, data, ent, rel);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && whole_characters("graph heads --query", out));
    /* kgl split's table: the relation in 40 characters, then the count of its triples */
    snprintf(cmd, sizeof cmd, "split --triples '%s' --out '%s/s' --valid 0 --test 0", data, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0 && whole_characters("split", out));
    snprintf(want, sizeof want, "\n%s        3", cut40);
    CHECK(strstr(out, want) != NULL);
}
