/* cli_split.c — `kgl split` as a user runs it: the walkthrough's 212 family
 * triples become train, valid and test files that kgl reads back without a
 * warning (every valid and test name is in train, no triple in two files),
 * each relation split in proportion, the same bytes for the same seed; a
 * sparse chain keeps triples in train and says so; and every mistake (bad
 * input, bad fractions, a graph too small, an output that is the input) is
 * exit 2 with a message and no file written. */
#include <stdlib.h>
#include <sys/stat.h>

#include "test.h"

static char out[1 << 16], err[1 << 14];

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The walkthrough's three files as one, in T->tmp/all.tsv. */
/* stderr of `kgl train --quiet` that loaded its files without a warning:
   --quiet's summary line alone. */
static bool only_the_summary(const char *e)
{
    return strncmp(e, "kgl train: a model ", 19) == 0 && strchr(e, '\n') == e + strlen(e) - 1;
}

static bool family(test_ctx *T)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cat data/walkthrough/family.train.tsv data/walkthrough/family.valid.tsv "
                              "data/walkthrough/family.test.tsv > %s/all.tsv", T->tmp);
    return CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
}

TEST(split_family_reads_back_whole_and_stratified)
{
    char cmd[2048], a[700], b[700];
    if (!family(T)) return;
    snprintf(cmd, sizeof cmd, "split --triples %s/all.tsv --out %s/fam --valid 0.1 --test 0.1 --seed 3", T->tmp,
             T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    CHECK(!*err);
    /* 212 triples: 21.2 rounds to 21 for each; parent_of's 60 give 6 and 6 */
    CHECK(strstr(out, "all.tsv: 212 triples, 52 entities, 5 relations; --valid 0.1 --test 0.1 --seed 3\n") != NULL);
    CHECK(strstr(out, "\nparent_of            60       48        6        6        0\n") != NULL);
    CHECK(strstr(out, "\nall                 212      170       21       21        0\n") != NULL);
    CHECK(strstr(out, "fam.valid.tsv   21 triples (asked 21: 0.1 of 212 is 21.2)\n") != NULL);
    /* read back together: no warning (no valid/test triple in train, none naming what train does not) */
    snprintf(cmd, sizeof cmd,
             "train --train %s/fam.train.tsv --valid %s/fam.valid.tsv --test %s/fam.test.tsv --steps 1 --quiet --json",
             T->tmp, T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(only_the_summary(err));
    CHECK(strstr(out, "\"train\":{") && strstr(out, "\"n\":340}") && strstr(out, "\"n\":42}"));
    /* the same triples, each once */
    snprintf(cmd, sizeof cmd, "cd %s && sort all.tsv | md5sum && cat fam.train.tsv fam.valid.tsv fam.test.tsv | sort | md5sum",
             T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char *second = strchr(out, '\n');
    CHECK(second && strncmp(out, second + 1, 32) == 0);
    /* the same seed, the same bytes; another seed, another split */
    snprintf(cmd, sizeof cmd, "split --triples %s/all.tsv --out %s/again --seed 3", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    for (int k = 0; k < 3; k++) {
        static const char *const part[3] = {"train", "valid", "test"};
        snprintf(a, sizeof a, "%s/fam.%s.tsv", T->tmp, part[k]);
        snprintf(b, sizeof b, "%s/again.%s.tsv", T->tmp, part[k]);
        CHECK(test_same_file(a, b));
    }
    snprintf(cmd, sizeof cmd, "split --triples %s/all.tsv --out %s/other --seed 4 --json", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(a, sizeof a, "%s/fam.valid.tsv", T->tmp);
    snprintf(b, sizeof b, "%s/other.valid.tsv", T->tmp);
    CHECK(!test_same_file(a, b));
    kgl_json_doc doc;
    char e[256];
    if (CHECK(kgl_json_parse(out, strlen(out), &doc, e, sizeof e))) {
        const kgl_json *files = kgl_json_get(doc.root, "files"), *rel = kgl_json_get(doc.root, "per_relation");
        const kgl_json *valid = kgl_json_get(files, "valid"), *lives = kgl_json_get(rel, "lives_in");
        CHECK(valid && kgl_json_get(valid, "triples")->num == 21 && kgl_json_get(valid, "asked")->num == 21);
        CHECK(lives && kgl_json_get(lives, "triples")->num == 48 && kgl_json_get(lives, "valid")->num == 5);
        CHECK(kgl_json_get(doc.root, "kept")->num == 0 && kgl_json_get(doc.root, "seed")->num == 4);
        kgl_json_free(&doc);
    }
}

/* A chain e0 → e1 → … → e40 (each inner entity in two triples), a relation
   of one triple and one of two: triples are kept in train for their
   entities' sake, the report counts them, and kgl reads the files back
   without a warning. --test 0 writes an empty test file. */
TEST(split_sparse_graph_keeps_entities_in_train)
{
    char text[4096], cmd[2048], path[700];
    size_t len = 0;
    for (int k = 0; k < 40; k++) len += (size_t)snprintf(text + len, sizeof text - len, "e%d\tnext\te%d\n", k, k + 1);
    len += (size_t)snprintf(text + len, sizeof text - len, "a\tlonely\tb\na\tpair\tc\nc\tpair\td\n");
    const char *in = write_tmp(T, 0, "chain.tsv", text, len);
    snprintf(cmd, sizeof cmd, "split --triples %s --out %s/ch --valid 0.3 --test 0 --seed 1", in, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    CHECK(strstr(out, "\nlonely          1        1        0        0        0\n") != NULL);
    const char *kept = strstr(out, "kept in train: ");
    CHECK(kept && atoi(kept + strlen("kept in train: ")) > 0 && strstr(kept, "whose head or tail was in no other"));
    snprintf(path, sizeof path, "%s/ch.test.tsv", T->tmp);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0);
    snprintf(cmd, sizeof cmd, "train --train %s/ch.train.tsv --valid %s/ch.valid.tsv --steps 1 --quiet", T->tmp,
             T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(only_the_summary(err));
    /* asked for more than the chain can give: test falls short, and the report says why */
    snprintf(cmd, sizeof cmd, "split --triples %s --out %s/ch --valid 0.4 --test 0.4 --seed 1", in, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    const char *test = strstr(out, "ch.test.tsv");
    CHECK(test && strstr(test, "(asked 17: 0.4 of 43 is 17.2); ") && strstr(test, " short: ") &&
          strstr(test, " because triples were kept (next "));
}

/* Duplicates are written once (with the reader's warning), a header and
   comments are not copied. */
TEST(split_duplicates_and_header)
{
    static const char text[] = "head\trelation\ttail\n# a comment\na\tr\tb\nb\tr\tc\na\tr\tb\nc\tr\ta\nc\ts\tb\n"
                               "b\ts\ta\na\ts\tc\n";
    const char *in = write_tmp(T, 0, "dup.tsv", text, sizeof text - 1);
    char cmd[2048], path[700];
    snprintf(cmd, sizeof cmd, "split --triples %s --out %s/d --valid 0.2 --test 0.2", in, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    CHECK(strstr(err, "dup.tsv:1: skipped as a header") && strstr(err, "dup.tsv: 1 duplicate triple counted once (first at line 5)"));
    CHECK(strstr(out, "dup.tsv: 6 triples, 3 entities, 2 relations;") != NULL);
    snprintf(cmd, sizeof cmd, "cat %s/d.train.tsv %s/d.valid.tsv %s/d.test.tsv | sort", T->tmp, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strcmp(out, "a\tr\tb\na\ts\tc\nb\tr\tc\nb\ts\ta\nc\tr\ta\nc\ts\tb\n") == 0);
    snprintf(path, sizeof path, "%s/d.valid.tsv", T->tmp);
    CHECK(exists(path));
}

/* Every mistake: exit 2, a message, no file written. */
TEST(split_mistakes_write_nothing)
{
    char cmd[2048], path[700];
    const char *bad = write_tmp(T, 0, "bad.tsv", "a\tr\tb\nb\tr\n", 11);
    const char *one = write_tmp(T, 1, "one.tsv", "a\tr\tb\n", 6);
    const char *three = write_tmp(T, 2, "three.tsv", "a\tr\tb\nb\tr\tc\nc\tr\ta\n", 18);
    struct {
        const char *in, *args, *message;
    } cases[] = {
        {bad, "", "bad.tsv:2: expected 3 tab-separated fields (head, relation, tail), found 2\n"},
        {three, "--valid 1", "kgl split: --valid 1 leaves nothing for train: give a fraction below 1\n"},
        {three, "--valid 0.6 --test 0.5", "kgl split: --valid 0.6 and --test 0.5 leave nothing for train: together they must be below 1\n"},
        {three, "--test -0.1", "kgl split: --test expects a number from 0 to 1, got '-0.1'\n"},
        {three, "--valid ten", "kgl split: --valid expects a number from 0 to 1, got 'ten'\n"},
        {three, "--seed -1", "kgl split: --seed expects a whole number >= 0, got '-1'\n"},
        /* 3 triples x 0.1: no triple asked */
        {three, "", "kgl split: --valid 0.1 of 3 triples is 0.3, which rounds to no triple; --valid 0.333333 asks for one\n"},
        /* one triple asked of each, but the cycle a → b → c → a gives only one: each entity is in two triples */
        {three, "--valid 0.34 --test 0.34", "three.tsv: no triple can go to test: each would take the last triple of its "
                                            "relation or of an entity out of train (3 triples, 3 entities, 1 relation)\n"},
        {one, "--valid 0.5 --test 0", "one.tsv: no triple can go to valid:"},
        /* issue 46: a suggestion that cannot work is not made (it was --valid 1, which is refused) */
        {one, "", "one.tsv cannot be split, no triple can go to valid without taking the last triple of its relation or "
                  "of an entity out of train (1 triple, 1 relation); give --valid 0, or more triples\n"},
        /* the cycle's one triple for valid leaves none for test: --test 0.333333 would be refused in turn */
        {three, "--valid 0.34", "kgl split: --test 0.1 of 3 triples is 0.3, which rounds to no triple; no fraction helps:"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(cmd, sizeof cmd, "split --triples %s --out %s/x %s", cases[k].in, T->tmp, cases[k].args);
        int st = run_kgl(T, cmd, out, sizeof out, err, sizeof err);
        bool ok = st == 2 && strstr(err, cases[k].message) && !*out;
        if (!CHECK(ok)) printf("    case %zu: %s\n    status %d, stderr: %s", k, cmd, st, err);
    }
    snprintf(cmd, sizeof cmd, "ls %s | grep -c '^x'", T->tmp);
    run_sh(T, cmd, out, sizeof out, err, sizeof err);
    CHECK(strcmp(out, "0\n") == 0);
    /* the output may not be the input: three.tsv is x.train.tsv here */
    snprintf(path, sizeof path, "%s/y.train.tsv", T->tmp);
    snprintf(cmd, sizeof cmd, "cp %s %s", three, path);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "split --triples %s --out %s/y --valid 0.34 --test 0", path, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "is the same file as --triples") != NULL);
    CHECK(test_same_file(path, three));
    /* required options */
    snprintf(cmd, sizeof cmd, "split --out %s/z", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 && strstr(err, "--triples F is required"));
    snprintf(cmd, sizeof cmd, "split --triples %s", three);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 && strstr(err, "--out PREFIX is required"));
    snprintf(cmd, sizeof cmd, "split --triples %s --out %s/missing/dir/z", three, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2 && strstr(err, "--out"));
}

/* Issue 46: splitting again with --test 0 left the old PREFIX.test.tsv
   beside the new train and valid (its triples now in train too). All three
   files are written, an empty one for a part asked for none, so the three
   are always one split: together the input's triples, each once. */
TEST(split_again_replaces_all_three_files)
{
    char cmd[4096];
    if (!family(T)) return;
    snprintf(cmd, sizeof cmd, "split --triples %s/all.tsv --out %s/fam --valid 0.1 --test 0.1", T->tmp, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "split --triples %s/all.tsv --out %s/fam --valid 0.2 --test 0", T->tmp, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    CHECK(strstr(out, "fam.test.tsv ") && strstr(out, " 0 triples (none asked: --test 0)\n"));
    /* the three files hold the 212 triples once each (the walkthrough's files repeat none) */
    snprintf(cmd, sizeof cmd, "cd %s && cat fam.train.tsv fam.valid.tsv fam.test.tsv | sort > got && sort all.tsv > want && "
                              "cmp got want && wc -c < fam.test.tsv", T->tmp);
    int rc = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 0 && strcmp(out, "0\n") == 0)) printf("    rc %d: %s%s", rc, out, err);
}
