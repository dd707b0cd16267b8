/* io_hygiene.c — what a user's own files bring (issue 11, item 5): a UTF-8
 * byte-order mark, a header line of column names, valid/test triples that
 * are also in train, and valid/test names that train never has; the counts
 * are data in kgl_split, and kgl prints them even with --quiet. */
#include "test.h"

static bool load(kgl_dataset *ds, const char *const *texts, int n, char *err, size_t cap)
{
    static const char *const names[] = {"train.tsv", "valid.tsv", "test.tsv"};
    kgl_source src[3];
    for (int k = 0; k < n; k++) src[k] = (kgl_source){names[k], texts[k], strlen(texts[k])};
    return kgl_dataset_load(ds, src, n, err, cap);
}

TEST(hygiene_bom_is_stripped_from_every_reader)
{
    char err[512];
    kgl_dataset ds;
    const char *text = "\xef\xbb\xbf"
                       "alice\tadvises\tbob\n";
    CHECK(load(&ds, &text, 1, err, sizeof err));
    /* the first name is "alice", not U+FEFF "alice" */
    CHECK(ds.n_entities == 2 && kgl_dataset_entity_id(&ds, "alice") == 0);
    CHECK(strcmp(ds.entity_names[0], "alice") == 0);
    kgl_dataset_free(&ds);

    /* from a file too (kgl_text_open), and in a types file */
    static const char bom_text[] = "\xef\xbb\xbf" "a\tr\tb\n";
    const char *path = write_tmp(T, 0, "bom.tsv", bom_text, strlen(bom_text));
    kgl_source src = {path, NULL, 0};
    CHECK(kgl_dataset_load(&ds, &src, 1, err, sizeof err));
    CHECK(kgl_dataset_entity_id(&ds, "a") == 0 && kgl_dataset_relation_id(&ds, "r") == 0);
    kgl_dataset_free(&ds);
    kgl_types ty;
    const char *types = "\xef\xbb\xbf" "alice\tperson\n";
    kgl_source ts = {"types.tsv", types, strlen(types)};
    CHECK(kgl_types_load(&ty, &ts, err, sizeof err));
    CHECK(ty.n == 1 && strcmp(ty.entity[0], "alice") == 0);
    kgl_types_free(&ty);

    /* only the first three bytes of the file: a mark inside a name is kept */
    const char *inner = "a\xef\xbb\xbf\tr\tb\n";
    CHECK(load(&ds, &inner, 1, err, sizeof err));
    CHECK(kgl_dataset_entity_id(&ds, "a\xef\xbb\xbf") >= 0);
    kgl_dataset_free(&ds);
    /* a mark and nothing else is an empty file */
    const char *only = "\xef\xbb\xbf";
    CHECK(!load(&ds, &only, 1, err, sizeof err));
    CHECK(strcmp(err, "train.tsv: no triples") == 0);
}

TEST(hygiene_header_line_is_skipped_and_reported)
{
    static const char *const headers[] = {"head\trelation\ttail",    "subject\tpredicate\tobject",
                                          "h\tr\tt",                 "source\trelation\ttarget",
                                          "Head\tRelation\tTail",    "SUBJECT\tPREDICATE\tOBJECT"};
    char err[512], text[256];
    for (size_t k = 0; k < sizeof headers / sizeof headers[0]; k++) {
        kgl_dataset ds;
        snprintf(text, sizeof text, "# exported\n\n%s\r\nalice\tadvises\tbob\n", headers[k]);
        const char *t = text;
        if (!CHECK(load(&ds, &t, 1, err, sizeof err))) continue;
        /* line 3: after a comment and a blank line, still the first line of data */
        if (!CHECK(ds.splits[0].header_line == 3 && ds.splits[0].header && strcmp(ds.splits[0].header, headers[k]) == 0))
            printf("    header %s: line %d\n", headers[k], ds.splits[0].header_line);
        CHECK(ds.splits[0].n == 1 && ds.n_entities == 2 && ds.n_relations == 1);
        CHECK(kgl_dataset_entity_id(&ds, "head") < 0 && kgl_dataset_entity_id(&ds, "h") < 0);
        kgl_dataset_free(&ds);
    }
    /* a file that holds only the header has no triples, and says why */
    const char *only = "head\trelation\ttail\n";
    kgl_dataset ds;
    CHECK(!load(&ds, &only, 1, err, sizeof err));
    CHECK(strcmp(err, "train.tsv: no triples (line 1, the only one, was taken as column names)") == 0);
    /* entity types: "entity type" */
    kgl_types ty;
    const char *types = "Entity\tType\nalice\tperson\n";
    kgl_source ts = {"types.tsv", types, strlen(types)};
    CHECK(kgl_types_load(&ty, &ts, err, sizeof err));
    CHECK(ty.n == 1 && ty.header_line == 1 && strcmp(ty.entity[0], "alice") == 0);
    kgl_types_free(&ty);
    /* only on the first line of data: column words later, or a second time, are an entity and its type */
    static const char *const later[] = {"alice\tperson\nEntity\tType\n", "Entity\tType\nentity\ttype\n"};
    static const int entities[] = {2, 1}, header_line[] = {0, 1};
    static const char *const last[][2] = {{"Entity", "Type"}, {"entity", "type"}};
    for (int k = 0; k < 2; k++) {
        kgl_source ls = {"types.tsv", later[k], strlen(later[k])};
        if (!CHECK(kgl_types_load(&ty, &ls, err, sizeof err))) continue;
        CHECK(ty.n == entities[k] && ty.header_line == header_line[k]);
        CHECK(ty.n == entities[k] && strcmp(ty.entity[ty.n - 1], last[k][0]) == 0 &&
              strcmp(ty.type[ty.n - 1], last[k][1]) == 0);
        kgl_types_free(&ty);
    }
}

/* Erring safe: a line is a header only when every field is a column word,
   and only the first line of data; anything else is a triple. */
TEST(hygiene_a_name_that_is_a_column_word_is_data)
{
    static const char *const data[] = {
        "head\tadvises\tbob\nbob\tadvises\tcarol\n",       /* an entity called head */
        "alice\trelation\tbob\n",                          /* a relation called relation */
        "alice\tadvises\ttail\n",                          /* an entity called tail */
        "head\trelation\ttailor\n",                        /* a near miss */
        "alice\tadvises\tbob\nhead\trelation\ttail\n",     /* column words, but not the first line */
    };
    char err[512];
    for (size_t k = 0; k < sizeof data / sizeof data[0]; k++) {
        kgl_dataset ds;
        if (!CHECK(load(&ds, &data[k], 1, err, sizeof err))) continue;
        int lines = 0;
        for (const char *p = data[k]; *p; p++) lines += *p == '\n';
        if (!CHECK(ds.splits[0].header_line == 0 && ds.splits[0].header == NULL && ds.splits[0].n == lines))
            printf("    case %zu: header_line %d, %d triples\n", k, ds.splits[0].header_line, ds.splits[0].n);
        kgl_dataset_free(&ds);
    }
    char *f[3] = {"HEAD", "relation", "t"};
    CHECK(kgl_is_header_line(f, 3));
    f[2] = "bob";
    CHECK(!kgl_is_header_line(f, 3));
    char *g[2] = {"entity", "type"};
    CHECK(kgl_is_header_line(g, 2) && !kgl_is_header_line(g, 1));
}

TEST(hygiene_valid_and_test_against_train)
{
    const char *texts[3] = {
        "a\tr\tb\nb\tr\tc\nc\tq\ta\n",
        /* line 1 is in train; line 2 names z; line 3 names relation s;
           line 4 names y and z; line 5 is in train */
        "a\tr\tb\nz\tr\ta\nc\ts\tb\ny\tr\tz\nc\tq\ta\n",
        "b\tq\tc\n", /* clean */
    };
    char err[512];
    kgl_dataset ds;
    CHECK(load(&ds, texts, 3, err, sizeof err));
    const kgl_split *tr = &ds.splits[0], *va = &ds.splits[1], *te = &ds.splits[2];
    /* train is the reference: nothing to compare */
    CHECK(tr->n_in_train == 0 && tr->n_unseen == 0 && tr->n_unseen_entities == 0);
    CHECK(va->n_in_train == 2 && va->first_in_train_line == 1);
    CHECK(va->n_unseen == 3 && va->first_unseen_line == 2);
    CHECK(va->n_unseen_entities == 2 && va->n_unseen_relations == 1);
    /* ids in the order they were met in the file: z, then y */
    CHECK(strcmp(ds.entity_names[va->unseen_entity[0]], "z") == 0);
    CHECK(strcmp(ds.entity_names[va->unseen_entity[1]], "y") == 0);
    CHECK(strcmp(ds.relation_names[va->unseen_relation[0]], "s") == 0);
    CHECK(te->n_in_train == 0 && te->n_unseen == 0 && te->first_unseen_line == 0);
    kgl_dataset_free(&ds);

    /* more unseen names than are kept: the count is exact, KGL_UNSEEN_SHOWN named */
    char many[512] = "";
    for (int k = 0; k < KGL_UNSEEN_SHOWN + 3; k++) {
        char line[32];
        snprintf(line, sizeof line, "a\tr\tnew%d\n", k);
        strncat(many, line, sizeof many - strlen(many) - 1);
    }
    const char *two[2] = {"a\tr\tb\n", many};
    CHECK(load(&ds, two, 2, err, sizeof err));
    CHECK(ds.splits[1].n_unseen_entities == KGL_UNSEEN_SHOWN + 3 && ds.splits[1].n_unseen == KGL_UNSEEN_SHOWN + 3);
    CHECK(strcmp(ds.entity_names[ds.splits[1].unseen_entity[KGL_UNSEEN_SHOWN - 1]], "new4") == 0);
    kgl_dataset_free(&ds);
}

/* kgl prints what the loader found, --quiet or not (it hid the duplicates). */
TEST(hygiene_warnings_printed_even_with_quiet)
{
    static char out[1 << 16], err[1 << 14];
    static const char tr_text[] = "\xef\xbb\xbfhead\trelation\ttail\na\tr\tb\nb\tr\tc\nc\tq\ta\na\tr\tb\n";
    static const char va_text[] = "a\tr\tb\nz\tr\ta\nc\tnew\tb\ny\tr\tz\n";
    const char *tr = write_tmp(T, 0, "tr.tsv", tr_text, strlen(tr_text));
    const char *va = write_tmp(T, 1, "va.tsv", va_text, strlen(va_text));
    char cmd[2048], want[4][1024];
    snprintf(cmd, sizeof cmd, "train --train '%s' --valid '%s' --steps 1 --quiet", tr, va);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(want[0], sizeof want[0],
             "%s:1: skipped as a header: \"head\trelation\ttail\" (every field is a column name; if it is a triple, "
             "move it below another line)\n",
             tr);
    snprintf(want[1], sizeof want[1], "%s: 1 duplicate triple counted once (first at line 5)\n", tr);
    snprintf(want[2], sizeof want[2],
             "%s:1: 1 of its 4 triples is also in %s; it is ranked like the others, so these metrics include triples "
             "the model was trained on\n",
             va, tr);
    snprintf(want[3], sizeof want[3],
             "%s:2: 3 of its 4 triples name what %s never names: 2 entities ('z', 'y'), 1 relation ('new'). They are "
             "ranked like the others, among all 5 entities, but an entity only here was trained only as a wrong "
             "answer and as context (never as a query or a right answer), so it tends to rank low, and a relation "
             "only here keeps the random vector it was initialised with (only --weight-decay changes it), so its triples "
             "are ranked near chance\n",
             va, tr);
    for (int k = 0; k < 4; k++)
        if (!CHECK(strstr(err, want[k]) != NULL)) printf("    want: %s    stderr: %s\n", want[k], err);
    /* and every command that loads triples: eval with --json */
    char ck[600];
    snprintf(ck, sizeof ck, "%s/m.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --train '%s' --valid '%s' --steps 1 --quiet --save '%s'", tr, va, ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "eval --json --checkpoint '%s' --train '%s' --valid '%s'", ck, tr, va);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, want[0]) != NULL && strstr(err, want[3]) != NULL);
    CHECK(out[0] == '{'); /* stdout stays JSON */
}

/* What the warning says of a relation only in valid/test: its vector (and
   its inverse's) is the initial one after training, bit for bit, while the
   trained relation's moved. */
TEST(hygiene_unseen_relation_keeps_its_initial_vector)
{
    const char *texts[2] = {"a\tr\tb\nb\tr\tc\nc\tr\ta\n", "a\ts\tc\n"};
    char err[512];
    kgl_dataset ds;
    if (!CHECK(load(&ds, texts, 2, err, sizeof err))) return;
    CHECK(ds.splits[1].n_unseen_relations == 1);
    int r = kgl_dataset_relation_id(&ds, "r"), s = kgl_dataset_relation_id(&ds, "s"), m = ds.n_relations;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    kgl_train_config tc = {8, 1, {0}, NULL, 1, false, false};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer tr;
    kgl_trainer_init(&tr, &ds, ds.splits[0].triples, ds.splits[0].n, &cfg, &tc);
    const int d = tr.model.cfg.dim;
    double before[4][64];
    if (!CHECK(d <= 64)) return;
    const int rows[4] = {r, m + r, s, m + s};
    for (int k = 0; k < 4; k++) memcpy(before[k], tr.model.relation_emb->data + (size_t)rows[k] * d, d * sizeof(double));
    for (int step = 0; step < 20; step++) kgl_trainer_step(&tr);
    for (int k = 0; k < 4; k++) {
        bool same = memcmp(before[k], tr.model.relation_emb->data + (size_t)rows[k] * d, d * sizeof(double)) == 0;
        CHECK(same == (k >= 2)); /* r and r^-1 trained; s and s^-1 untouched */
    }
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}
