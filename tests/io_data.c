/* io_data.c — triples and types files: the academic world, shared ids,
 * the filter index, duplicates, UTF-8 names, and every malformed input with
 * its exact message. */
#include <stdlib.h>

#include "test.h"

static const char *const academic_entities[13] = {"alice", "bob", "carol", "cmu",  "dave", "erin", "logic",
                                                  "mit",   "ml",  "nesy",  "p1",   "p2",   "p3"};
static const char *const academic_relations[5] = {"about", "advises", "affiliated", "authored", "cites"};

static bool load_academic(kgl_dataset *ds, char *err, size_t cap)
{
    kgl_source src = {"academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    return kgl_dataset_load(ds, &src, 1, err, cap);
}

/* Reads a whole file (tests run from the repository root); NULL if unreadable. */
/* Loads `text` as one in-memory file named `name` and checks that loading
 * fails with exactly `want`; shows what it got otherwise. */
static void expect_error(test_ctx *T, const char *name, const char *text, size_t len, const char *want, int line)
{
    kgl_dataset ds;
    char err[512] = "", what[1200];
    kgl_source src = {name, text, len};
    bool ok = kgl_dataset_load(&ds, &src, 1, err, sizeof err);
    snprintf(what, sizeof what, "error \"%s\", want \"%s\"", ok ? "(loaded)" : err, want);
    test_check(T, !ok && strcmp(err, want) == 0, what, __FILE__, line);
    test_check(T, ds.n_entities == 0 && ds.entity_names == NULL && ds.known == NULL && ds.splits[0].path == NULL,
               "a failed load leaves the dataset empty", __FILE__, line);
    kgl_dataset_free(&ds); /* harmless on an empty dataset */
}
#define EXPECT_ERROR(name, lit, want) expect_error(T, name, lit, sizeof lit - 1, want, __LINE__)

TEST(academic_world_loads_in_byte_order)
{
    kgl_dataset ds;
    char err[512] = "";
    CHECK(load_academic(&ds, err, sizeof err));
    CHECK(err[0] == 0);
    CHECK(ds.n_entities == 13 && ds.n_relations == 5 && ds.n_splits == 1);
    for (int i = 0; i < 13 && i < ds.n_entities; i++) CHECK(strcmp(ds.entity_names[i], academic_entities[i]) == 0);
    for (int i = 0; i < 5 && i < ds.n_relations; i++) CHECK(strcmp(ds.relation_names[i], academic_relations[i]) == 0);
    CHECK(strcmp(ds.splits[0].path, "academic.tsv") == 0);
    CHECK(ds.splits[0].n == 21 && ds.splits[0].n_duplicates == 0 && ds.splits[0].first_duplicate_line == 0);
    /* file order kept: the first triple is alice advises dave, the last p3 about ml */
    kgl_triple first = ds.splits[0].triples[0], last = ds.splits[0].triples[20];
    CHECK(first.head == 0 && first.rel == 1 && first.tail == 4);
    CHECK(last.head == 12 && last.rel == 0 && last.tail == 8);
    CHECK(kgl_dataset_entity_id(&ds, "alice") == 0);
    CHECK(kgl_dataset_entity_id(&ds, "nesy") == 9);
    CHECK(kgl_dataset_entity_id(&ds, "p3") == 12);
    CHECK(kgl_dataset_entity_id(&ds, "zed") == -1);
    CHECK(kgl_dataset_entity_id(&ds, "advises") == -1); /* a relation is not an entity */
    CHECK(kgl_dataset_relation_id(&ds, "about") == 0);
    CHECK(kgl_dataset_relation_id(&ds, "cites") == 4);
    CHECK(kgl_dataset_relation_id(&ds, "alice") == -1);
    kgl_dataset_free(&ds);
    CHECK(ds.entity_names == NULL && ds.n_splits == 0);

    /* the data file on disk loads to the same thing */
    kgl_source file = {"data/academic.tsv", NULL, 0};
    CHECK(kgl_dataset_load(&ds, &file, 1, err, sizeof err));
    CHECK(ds.n_entities == 13 && ds.n_relations == 5 && ds.splits[0].n == 21);
    CHECK(strcmp(ds.splits[0].path, "data/academic.tsv") == 0);
    kgl_dataset_free(&ds);
}

TEST(academic_embedded_matches_data_files)
{
    size_t len = 0;
    char *tsv = test_slurp("data/academic.tsv", &len);
    CHECK(tsv != NULL);
    CHECK(tsv && len == kgl_academic_tsv_len && memcmp(tsv, kgl_academic_tsv, len) == 0);
    CHECK(strlen(kgl_academic_tsv) == kgl_academic_tsv_len);
    free(tsv);
    char *types = test_slurp("data/academic.types.tsv", &len);
    CHECK(types != NULL);
    CHECK(types && len == kgl_academic_types_tsv_len && memcmp(types, kgl_academic_types_tsv, len) == 0);
    CHECK(strlen(kgl_academic_types_tsv) == kgl_academic_types_tsv_len);
    free(types);
}

TEST(ids_are_shared_across_train_valid_test)
{
    const char train[] = "bob\tknows\tcarol\ncarol\tknows\tdave\n";
    const char valid[] = "dave\tknows\tbob\n";
    const char test[] = "aaron\tlikes\tbob\n"; /* aaron and likes appear only here */
    kgl_source src[3] = {
        {write_tmp(T, 0, "train.tsv", train, sizeof train - 1), NULL, 0},
        {write_tmp(T, 1, "valid.tsv", valid, sizeof valid - 1), NULL, 0},
        {write_tmp(T, 2, "test.tsv", test, sizeof test - 1), NULL, 0},
    };
    kgl_dataset ds;
    char err[512] = "";
    CHECK(kgl_dataset_load(&ds, src, 3, err, sizeof err));
    CHECK(ds.n_splits == 3 && ds.n_entities == 4 && ds.n_relations == 2);
    CHECK(strcmp(ds.entity_names[0], "aaron") == 0 && strcmp(ds.entity_names[3], "dave") == 0);
    CHECK(strcmp(ds.relation_names[0], "knows") == 0 && strcmp(ds.relation_names[1], "likes") == 0);
    CHECK(strcmp(ds.splits[2].path, src[2].path) == 0);
    CHECK(ds.splits[0].n == 2 && ds.splits[1].n == 1 && ds.splits[2].n == 1);
    /* bob knows carol: 1 0 2 (aaron, sorted first, shifted every other id) */
    CHECK(ds.splits[0].triples[0].head == 1 && ds.splits[0].triples[0].rel == 0 && ds.splits[0].triples[0].tail == 2);
    CHECK(ds.splits[1].triples[0].head == 3 && ds.splits[1].triples[0].tail == 1);
    CHECK(ds.splits[2].triples[0].head == 0 && ds.splits[2].triples[0].rel == 1 && ds.splits[2].triples[0].tail == 1);
    kgl_dataset_free(&ds);
}

TEST(known_index_filters_both_directions)
{
    kgl_dataset ds;
    char err[512];
    CHECK(load_academic(&ds, err, sizeof err));
    int m = ds.n_relations, c = -1;
    int alice = kgl_dataset_entity_id(&ds, "alice"), authored = kgl_dataset_relation_id(&ds, "authored");
    const int *k = kgl_dataset_known(&ds, alice, authored, &c);
    CHECK(c == 2 && k[0] == kgl_dataset_entity_id(&ds, "p2") && k[1] == kgl_dataset_entity_id(&ds, "p3"));
    /* inverse: heads h of (h, authored, p1) */
    k = kgl_dataset_known(&ds, kgl_dataset_entity_id(&ds, "p1"), m + authored, &c);
    CHECK(c == 2 && k[0] == kgl_dataset_entity_id(&ds, "bob") && k[1] == kgl_dataset_entity_id(&ds, "carol"));
    /* sorted, not file order: p3 about nesy comes before p3 about ml in the file */
    k = kgl_dataset_known(&ds, kgl_dataset_entity_id(&ds, "p3"), kgl_dataset_relation_id(&ds, "about"), &c);
    CHECK(c == 2 && k[0] == kgl_dataset_entity_id(&ds, "ml") && k[1] == kgl_dataset_entity_id(&ds, "nesy"));
    kgl_dataset_known(&ds, alice, kgl_dataset_relation_id(&ds, "cites"), &c);
    CHECK(c == 0);
    CHECK(ds.known_offsets[ds.n_entities * 2 * m] == 42); /* 21 triples, each known in both directions */

    /* every key against a brute-force scan of the triples */
    int mismatches = 0;
    for (int e = 0; e < ds.n_entities; e++) {
        for (int r = 0; r < 2 * m; r++) {
            const int *got = kgl_dataset_known(&ds, e, r, &c);
            int want = 0, prev = -1;
            for (int j = 0; j < ds.n_entities; j++) {
                bool is = false;
                for (int i = 0; i < ds.splits[0].n; i++) {
                    kgl_triple t = ds.splits[0].triples[i];
                    if (r < m ? (t.head == e && t.rel == r && t.tail == j) : (t.tail == e && t.rel == r - m && t.head == j))
                        is = true;
                }
                if (is) {
                    if (want >= c || got[want] != j) mismatches++;
                    want++;
                }
            }
            for (int i = 0; i < c; i++) {
                if (got[i] <= prev) mismatches++; /* strictly increasing */
                prev = got[i];
            }
            if (want != c) mismatches++;
        }
    }
    CHECK(mismatches == 0);
    kgl_dataset_free(&ds);

    /* every split is indexed; a triple in two splits is listed once */
    const char train[] = "a\tr\tb\n";
    const char test[] = "a\tr\tc\na\tr\tb\n";
    kgl_source src[2] = {{"train.tsv", train, sizeof train - 1}, {"test.tsv", test, sizeof test - 1}};
    CHECK(kgl_dataset_load(&ds, src, 2, err, sizeof err));
    k = kgl_dataset_known(&ds, 0, 0, &c);
    CHECK(c == 2 && k[0] == 1 && k[1] == 2);
    k = kgl_dataset_known(&ds, 1, 1, &c); /* heads of (?, r, b) */
    CHECK(c == 1 && k[0] == 0);
    CHECK(ds.splits[1].n == 2 && ds.splits[1].n_duplicates == 0); /* repeats across files are not duplicates */
    kgl_dataset_free(&ds);
}

/* kgl_dataset_is_known: (e, r, j) for every entity, relation row and
   candidate against a scan of the triples (both directions: row m + r asks
   whether (j, r, e) is a triple), and a triple of a later split known too. */
TEST(known_triple_is_a_triple_of_some_split)
{
    kgl_dataset ds;
    char err[512];
    CHECK(load_academic(&ds, err, sizeof err));
    int m = ds.n_relations, mismatches = 0, known = 0;
    for (int e = 0; e < ds.n_entities; e++)
        for (int r = 0; r < 2 * m; r++)
            for (int j = 0; j < ds.n_entities; j++) {
                bool is = false;
                for (int i = 0; i < ds.splits[0].n; i++) {
                    kgl_triple t = ds.splits[0].triples[i];
                    is |= r < m ? t.head == e && t.rel == r && t.tail == j
                                : t.tail == e && t.rel == r - m && t.head == j;
                }
                mismatches += kgl_dataset_is_known(&ds, e, r, j) != is;
                known += is;
            }
    CHECK(mismatches == 0 && known == 42); /* 21 triples, each in both directions */
    kgl_dataset_free(&ds);

    const char train[] = "a\tr\tb\n";
    const char test[] = "a\tr\tc\n";
    kgl_source src[2] = {{"train.tsv", train, sizeof train - 1}, {"test.tsv", test, sizeof test - 1}};
    if (!CHECK(kgl_dataset_load(&ds, src, 2, err, sizeof err))) return;
    int a = kgl_dataset_entity_id(&ds, "a"), b = kgl_dataset_entity_id(&ds, "b"), c = kgl_dataset_entity_id(&ds, "c");
    CHECK(kgl_dataset_is_known(&ds, a, 0, b) && kgl_dataset_is_known(&ds, a, 0, c));
    CHECK(!kgl_dataset_is_known(&ds, b, 0, c));
    CHECK(kgl_dataset_is_known(&ds, c, 1, a) && !kgl_dataset_is_known(&ds, a, 1, c)); /* (?, r, c): a */
    kgl_dataset_free(&ds);
}

TEST(duplicates_kept_once_and_counted)
{
    const char text[] = "# header\n"
                        "a\tr\tb\n"  /* line 2 */
                        "c\tr\td\n"  /* line 3 */
                        "\n"
                        "a\tr\tb\n"  /* line 5: repeat */
                        "b\tr\ta\n"  /* the reverse is a different triple */
                        "a\tr\tb\r\n" /* line 7: repeat (the \r is not part of the name) */
                        "c\ts\td\n";
    kgl_dataset ds;
    char err[512] = "";
    kgl_source src = {"dup.tsv", text, sizeof text - 1};
    CHECK(kgl_dataset_load(&ds, &src, 1, err, sizeof err));
    CHECK(ds.splits[0].n == 4);
    CHECK(ds.splits[0].n_duplicates == 2);
    CHECK(ds.splits[0].first_duplicate_line == 5);
    /* first occurrences in file order: a r b, c r d, b r a, c s d */
    kgl_triple *t = ds.splits[0].triples;
    CHECK(t[0].head == 0 && t[0].tail == 1 && t[1].head == 2 && t[2].head == 1 && t[3].rel == 1);
    int c;
    kgl_dataset_known(&ds, 0, 0, &c);
    CHECK(c == 1);
    kgl_dataset_free(&ds);
}

/* The loader's findings as kgl_dataset_write_warnings words them: every
 * kind at once (a header, a duplicate, a triple also in train, unseen
 * names), then nothing at all for clean splits. */
TEST(data_warnings_written_whole)
{
    const char train[] = "a\tr\tb\nc\tr\td\n";
    const char valid[] = "head\trelation\ttail\n" /* line 1: column names */
                         "a\tr\tb\n"              /* line 2: also in train */
                         "a\tr\tb\n"              /* line 3: a repeat */
                         "x\ts\tb\n";             /* line 4: x and s are never in train */
    kgl_source src[2] = {{"t.tsv", train, sizeof train - 1}, {"v.tsv", valid, sizeof valid - 1}};
    kgl_dataset ds;
    char err[512] = "", *text = NULL;
    size_t len = 0;
    CHECK(kgl_dataset_load(&ds, src, 2, err, sizeof err));
    FILE *f = open_memstream(&text, &len);
    kgl_dataset_write_warnings(f, &ds);
    fclose(f);
    const char *want =
        "v.tsv:1: skipped as a header: \"head\trelation\ttail\" (every field is a column name; if it is a triple, "
        "move it below another line)\n"
        "v.tsv: 1 duplicate triple counted once (first at line 3)\n"
        "v.tsv:2: 1 of its 2 triples is also in t.tsv; it is ranked like the others, so these metrics include "
        "triples the model was trained on\n"
        "v.tsv:4: 1 of its 2 triples names what t.tsv never names: 1 entity ('x'), 1 relation ('s'). They are "
        "ranked like the others, among all 5 entities, but an entity only here was trained only as a wrong answer "
        "and as context (never as a query or a right answer), so it tends to rank low, and a relation only here "
        "keeps the random vector it was initialised with (only --weight-decay changes it), so its triples are "
        "ranked near chance\n";
    CHECK(text && strcmp(text, want) == 0);
    if (text && strcmp(text, want) != 0) fprintf(stderr, "got:\n%s", text);
    free(text);
    kgl_dataset_free(&ds);
    /* clean splits: not a byte */
    kgl_source clean[2] = {{"t.tsv", train, sizeof train - 1}, {"v.tsv", "a\tr\td\n", 6}};
    text = NULL;
    CHECK(kgl_dataset_load(&ds, clean, 2, err, sizeof err));
    f = open_memstream(&text, &len);
    kgl_dataset_write_warnings(f, &ds);
    fclose(f);
    CHECK(len == 0);
    free(text);
    kgl_dataset_free(&ds);
}

TEST(utf8_names_and_names_with_spaces)
{
    /* 서울 (EC 84 9C ...) sorts before 한국 (ED 95 9C ...) in byte order */
    const char text[] = "\xec\x84\x9c\xec\x9a\xb8\t\xec\x88\x98\xeb\x8f\x84\t\xed\x95\x9c\xea\xb5\xad\r\n"
                        "Alan Turing\tborn in\tLondon\r\n";
    kgl_dataset ds;
    char err[512] = "";
    kgl_source src = {"world.tsv", text, sizeof text - 1};
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, err, sizeof err))) return;
    CHECK(ds.n_entities == 4 && ds.n_relations == 2);
    CHECK(kgl_dataset_entity_id(&ds, "Alan Turing") == 0); /* spaces inside a name are the name's */
    CHECK(kgl_dataset_entity_id(&ds, "London") == 1);
    CHECK(kgl_dataset_entity_id(&ds, "\xec\x84\x9c\xec\x9a\xb8") == 2);
    CHECK(kgl_dataset_entity_id(&ds, "\xed\x95\x9c\xea\xb5\xad") == 3); /* no \r kept */
    CHECK(kgl_dataset_relation_id(&ds, "born in") == 0);
    CHECK(kgl_dataset_relation_id(&ds, "\xec\x88\x98\xeb\x8f\x84") == 1);
    kgl_triple t = ds.splits[0].triples[0];
    CHECK(t.head == 2 && t.rel == 1 && t.tail == 3);
    kgl_dataset_free(&ds);
}

TEST(malformed_triples_name_file_and_line)
{
    EXPECT_ERROR("bad.tsv", "a\tr\tb\nx\ty\n", "bad.tsv:2: expected 3 tab-separated fields (head, relation, tail), found 2");
    EXPECT_ERROR("bad.tsv", "a\tr\tb\tc\n", "bad.tsv:1: expected 3 tab-separated fields (head, relation, tail), found 4");
    EXPECT_ERROR("bad.tsv", "a\tr\tb\t\n", "bad.tsv:1: expected 3 tab-separated fields (head, relation, tail), found 4");
    EXPECT_ERROR("bad.tsv", "# c\n\nalice knows bob\n",
                 "bad.tsv:3: expected 3 tab-separated fields (head, relation, tail), found 1 (fields are separated by tabs, not spaces)");
    EXPECT_ERROR("bad.tsv", "a\tr\tb\n  \t\n",
                 "bad.tsv:2: expected 3 tab-separated fields (head, relation, tail), found 2 (the line is only whitespace)");
    EXPECT_ERROR("bad.tsv", "a\tr\tb\n \r\n",
                 "bad.tsv:2: expected 3 tab-separated fields (head, relation, tail), found 1 (the line is only whitespace)");
    EXPECT_ERROR("bad.tsv", "\tr\tb\n", "bad.tsv:1: empty head field");
    EXPECT_ERROR("bad.tsv", "a\tr\tb\na\t\tb\n", "bad.tsv:2: empty relation field");
    EXPECT_ERROR("bad.tsv", "a\tr\t\r\n", "bad.tsv:1: empty tail field");
    EXPECT_ERROR("bad.tsv", "a\tr\tb\nx\ty\0\tz\n", "bad.tsv:2: line contains a NUL byte (column 4)");
    EXPECT_ERROR("bad.tsv", "a\tr\t\xff\n", "bad.tsv:1: invalid UTF-8 at byte 5 of the line");
    EXPECT_ERROR("bad.tsv", "a\tr\t\xed\xa0\x80\n", "bad.tsv:1: invalid UTF-8 at byte 5 of the line"); /* surrogate */
    EXPECT_ERROR("comments.tsv", "# only a header\n\n#a\tr\tb\n", "comments.tsv: no triples");
    EXPECT_ERROR("empty.tsv", "", "empty.tsv: no triples");

    /* a line of exactly KGL_LINE_MAX bytes loads; one byte more is an error */
    static char big[KGL_LINE_MAX + 16];
    size_t n = 0;
    memcpy(big + n, "a\tr\tb\n", 6), n += 6;
    memcpy(big + n, "x\tr\t", 4);
    memset(big + n + 4, 'y', KGL_LINE_MAX - 4);
    n += KGL_LINE_MAX;
    big[n++] = '\n';
    kgl_dataset ds;
    char err[512] = "";
    kgl_source src = {"long.tsv", big, n};
    CHECK(kgl_dataset_load(&ds, &src, 1, err, sizeof err));
    CHECK(ds.n_entities == 4 && strlen(ds.entity_names[3]) == KGL_LINE_MAX - 4);
    kgl_dataset_free(&ds);
    memmove(big + 7, big + 6, n - 6);
    big[6] = 'x';
    src.len = n + 1;
    CHECK(!kgl_dataset_load(&ds, &src, 1, err, sizeof err));
    CHECK(strcmp(err, "long.tsv:2: line is 65537 bytes long; the limit is 65536") == 0);
}

TEST(malformed_files_on_disk)
{
    kgl_dataset ds;
    char err[512] = "", want[1024];

    const char *empty = write_tmp(T, 0, "empty.tsv", "", 0);
    kgl_source src = {empty, NULL, 0};
    CHECK(!kgl_dataset_load(&ds, &src, 1, err, sizeof err));
    snprintf(want, sizeof want, "%s: no triples", empty);
    CHECK(strcmp(err, want) == 0);

    src.path = "/nonexistent/dir/train.tsv";
    CHECK(!kgl_dataset_load(&ds, &src, 1, err, sizeof err));
    CHECK(strcmp(err, "/nonexistent/dir/train.tsv: cannot open: No such file or directory") == 0);

    src.path = T->tmp; /* a directory opens but cannot be read */
    CHECK(!kgl_dataset_load(&ds, &src, 1, err, sizeof err));
    snprintf(want, sizeof want, "%s: cannot read: Is a directory", T->tmp);
    CHECK(strcmp(err, want) == 0);

    /* the error names the file it is in: here the second of three */
    const char good[] = "a\tr\tb\n", bad[] = "# valid\na\tr\tb\nb\tr\n";
    kgl_source three[3] = {
        {write_tmp(T, 1, "train.tsv", good, sizeof good - 1), NULL, 0},
        {write_tmp(T, 2, "valid.tsv", bad, sizeof bad - 1), NULL, 0},
        {write_tmp(T, 3, "test.tsv", good, sizeof good - 1), NULL, 0},
    };
    CHECK(!kgl_dataset_load(&ds, three, 3, err, sizeof err));
    snprintf(want, sizeof want, "%s:3: expected 3 tab-separated fields (head, relation, tail), found 2", three[1].path);
    CHECK(strcmp(err, want) == 0);
    CHECK(ds.n_splits == 0 && ds.splits[0].path == NULL && ds.splits[0].triples == NULL);

    CHECK(!kgl_dataset_load(&ds, three, 0, err, sizeof err));
    CHECK(strcmp(err, "no triples files to load") == 0);
    kgl_source nine[9];
    for (int i = 0; i < 9; i++) nine[i] = (kgl_source){"x.tsv", good, sizeof good - 1};
    CHECK(!kgl_dataset_load(&ds, nine, 9, err, sizeof err));
    CHECK(strcmp(err, "9 triples files given; at most 8 can be loaded together") == 0);
    CHECK(kgl_dataset_load(&ds, nine, 8, err, sizeof err) && ds.n_splits == 8);
    kgl_dataset_free(&ds);
}

TEST(types_file_loads)
{
    kgl_types ty;
    char err[512] = "";
    kgl_source src = {"data/academic.types.tsv", NULL, 0};
    CHECK(kgl_types_load(&ty, &src, err, sizeof err));
    CHECK(ty.n == 13);
    CHECK(ty.n == 13 && strcmp(ty.entity[0], "alice") == 0 && strcmp(ty.type[0], "Professor") == 0);
    CHECK(ty.n == 13 && strcmp(ty.entity[2], "carol") == 0 && strcmp(ty.type[2], "Student") == 0);
    CHECK(ty.n == 13 && strcmp(ty.entity[12], "nesy") == 0 && strcmp(ty.type[12], "Topic") == 0);
    /* every typed entity is an entity of the academic world, and every entity is typed once */
    kgl_dataset ds;
    CHECK(load_academic(&ds, err, sizeof err));
    int seen[13] = {0};
    for (int i = 0; i < ty.n; i++) {
        int id = kgl_dataset_entity_id(&ds, ty.entity[i]);
        CHECK(id >= 0);
        if (id >= 0 && id < 13) seen[id]++;
    }
    for (int i = 0; i < 13; i++) CHECK(seen[i] == 1);
    kgl_dataset_free(&ds);
    kgl_types_free(&ty);
    CHECK(ty.n == 0 && ty.entity == NULL);

    kgl_source emb = {"academic.types.tsv", kgl_academic_types_tsv, kgl_academic_types_tsv_len};
    CHECK(kgl_types_load(&ty, &emb, err, sizeof err) && ty.n == 13);
    CHECK(ty.n == 13 && strcmp(ty.entity[8], "cmu") == 0 && strcmp(ty.type[8], "Institution") == 0);
    kgl_types_free(&ty);

    const char korean[] = "\xec\x84\x9c\xec\x9a\xb8\tcity name\r\n";
    kgl_source k = {"k.tsv", korean, sizeof korean - 1};
    CHECK(kgl_types_load(&ty, &k, err, sizeof err) && ty.n == 1);
    CHECK(ty.n == 1 && strcmp(ty.entity[0], "\xec\x84\x9c\xec\x9a\xb8") == 0 && strcmp(ty.type[0], "city name") == 0);
    kgl_types_free(&ty);
}

static void expect_types_error(test_ctx *T, const char *text, size_t len, const char *want, int line)
{
    kgl_types ty;
    char err[512] = "", what[1200];
    kgl_source src = {"t.tsv", text, len};
    bool ok = kgl_types_load(&ty, &src, err, sizeof err);
    snprintf(what, sizeof what, "error \"%s\", want \"%s\"", ok ? "(loaded)" : err, want);
    test_check(T, !ok && strcmp(err, want) == 0, what, __FILE__, line);
    test_check(T, ty.n == 0 && ty.entity == NULL && ty.type == NULL, "a failed load leaves the types empty", __FILE__,
               line);
    kgl_types_free(&ty);
}
#define EXPECT_TYPES_ERROR(lit, want) expect_types_error(T, lit, sizeof lit - 1, want, __LINE__)

TEST(malformed_types_name_file_and_line)
{
    EXPECT_TYPES_ERROR("alice\tProfessor\nbob\n", "t.tsv:2: expected 2 tab-separated fields (entity, type), found 1");
    EXPECT_TYPES_ERROR("alice\tProfessor\tStudent\n", "t.tsv:1: expected 2 tab-separated fields (entity, type), found 3");
    EXPECT_TYPES_ERROR("alice Professor\n",
                       "t.tsv:1: expected 2 tab-separated fields (entity, type), found 1 (fields are separated by tabs, not spaces)");
    EXPECT_TYPES_ERROR("alice\t\n", "t.tsv:1: empty type field");
    EXPECT_TYPES_ERROR("\tProfessor\n", "t.tsv:1: empty entity field");
    EXPECT_TYPES_ERROR("alice\tProfessor\n# x\nbob\tProfessor\nalice\tStudent\n",
                       "t.tsv:4: entity \"alice\" is listed twice (first on line 1)");
    EXPECT_TYPES_ERROR("a\tP\xc3\n", "t.tsv:1: invalid UTF-8 at byte 4 of the line");
    EXPECT_TYPES_ERROR("# nothing\n", "t.tsv: no entities");
    EXPECT_TYPES_ERROR("", "t.tsv: no entities");

    kgl_types ty;
    char err[512];
    kgl_source missing = {"/nonexistent/types.tsv", NULL, 0};
    CHECK(!kgl_types_load(&ty, &missing, err, sizeof err));
    CHECK(strcmp(err, "/nonexistent/types.tsv: cannot open: No such file or directory") == 0);
}

/* Issue 25: names are never trimmed, so "Paris " beside "Paris" made two
   entities (152 instead of 124 in a newcomer's graph), and a line of spaces
   and tabs was read as the entity " ": both are refused, with file:line. A
   CSV file is told that fields are tab-separated. */
TEST(names_with_surrounding_whitespace_are_refused)
{
    EXPECT_ERROR("w.tsv", "Paris\tin\tFrance\n# x\nParis \tin\tFrance\n",
                 "w.tsv:3: the head 'Paris ' ends with a space; names are never trimmed, so 'Paris ' and 'Paris' would "
                 "be two names: remove the whitespace");
    EXPECT_ERROR("w.tsv", "a\t r\tb\n",
                 "w.tsv:1: the relation ' r' starts with a space; names are never trimmed, so ' r' and 'r' would be "
                 "two names: remove the whitespace");
    EXPECT_ERROR("w.tsv", "a\tr\tb\r\r\n",
                 "w.tsv:1: the tail 'b\r' ends with a carriage return; names are never trimmed, so 'b\r' and 'b' would "
                 "be two names: remove the whitespace");
    EXPECT_ERROR("w.tsv", "a\tr\tb\n \t \t \n",
                 "w.tsv:2: the line is only whitespace (an empty line is skipped; this one is not empty)");
    EXPECT_ERROR("w.tsv", "a\t  \tb\n", "w.tsv:1: the relation '  ' is only whitespace");
    EXPECT_ERROR("w.csv", "head,relation,tail\nParis,in,France\n",
                 "w.csv:1: expected 3 tab-separated fields (head, relation, tail), found 1 (fields are separated by "
                 "tabs, not commas: is it a CSV file?)");
    EXPECT_ERROR("w.csv", "Paris,in\tFrance\n",
                 "w.csv:1: expected 3 tab-separated fields (head, relation, tail), found 2 (fields are separated by "
                 "tabs, not commas: is it a CSV file?)");
    EXPECT_TYPES_ERROR("alice\tProfessor \n",
                       "t.tsv:1: the type 'Professor ' ends with a space; names are never trimmed, so 'Professor ' and "
                       "'Professor' would be two names: remove the whitespace");
}

/* Issue 25: the inverse of relation r is written "r^-1" (kgl export, kgl
   heads --query), so a relation literally named "r^-1" beside r was
   ambiguous; every loader refuses it. */
TEST(relation_named_like_an_inverse_is_refused)
{
    EXPECT_ERROR("i.tsv", "a\tr\tb\nb\tr^-1\ta\n",
                 "i.tsv:2: the relation 'r^-1' ends with '^-1', which names the inverse of a relation (kgl export, kgl "
                 "heads --query): rename it");
    CHECK(kgl_inverse_name("r^-1") && kgl_inverse_name("^-1") && !kgl_inverse_name("r^-2") && !kgl_inverse_name("r"));
    /* an entity may be called so: only relations have inverses */
    kgl_dataset ds;
    char err[512];
    static const char text[] = "x^-1\tr\tb\n";
    kgl_source src = {"e.tsv", text, sizeof text - 1};
    if (CHECK(kgl_dataset_load(&ds, &src, 1, err, sizeof err))) kgl_dataset_free(&ds);
}

/* --relations A,B: the relations in use, as kgl train and kgl eval choose
   them, and each mistake's message (the command puts "kgl CMD: " before it). */
TEST(choose_relations_and_their_messages)
{
    kgl_dataset ds;
    char e[4096];
    if (!CHECK(load_academic(&ds, e, sizeof e))) return;
    bool use[5];
    CHECK(kgl_dataset_choose_relations(&ds, NULL, use, e, sizeof e));
    CHECK(use[0] && use[1] && use[2] && use[3] && use[4]);
    CHECK(kgl_dataset_choose_relations(&ds, "cites,advises,cites", use, e, sizeof e));
    CHECK(!use[0] && use[1] && !use[2] && !use[3] && use[4]);
    CHECK(!kgl_dataset_choose_relations(&ds, "cites,advise", use, e, sizeof e));
    CHECK(strcmp(e, "--relations: no relation 'advise' in the triples; did you mean 'advises'? (they have: about, "
                    "advises, affiliated, authored, cites)") == 0);
    CHECK(!kgl_dataset_choose_relations(&ds, "=cites", use, e, sizeof e));
    CHECK(strstr(e, "(they have: about, advises, affiliated, authored, cites); --relations takes relation names, "
                    "never a formula") != NULL);
    CHECK(!kgl_dataset_choose_relations(&ds, ",,", use, e, sizeof e));
    CHECK(strcmp(e, "--relations: the list is empty") == 0);
    kgl_dataset_unknown_relation(&ds, "--supervise-heads", "zzzzzz", e, sizeof e);
    CHECK(strcmp(e, "--supervise-heads: no relation 'zzzzzz' in the triples (they have: about, advises, affiliated, "
                    "authored, cites)") == 0);
    kgl_dataset_free(&ds);
}
