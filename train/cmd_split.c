/* cmd_split.c — `kgl split`: one triples file into train, valid and test
 * files, every entity and relation of valid and test kept in train, each
 * relation split in the asked proportions, the same bytes for the same
 * input and seed. The rule is kgl_split_triples' (kgl/model.h); this file
 * reads, checks, writes and reports. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char help[] =
    "usage: kgl split --triples F --out PREFIX [--valid 0.1] [--test 0.1] [--seed 1] [--json]\n\n"
    "Splits the triples of F (the triples format every command reads) into\n"
    "PREFIX.train.tsv, PREFIX.valid.tsv and PREFIX.test.tsv, so that every\n"
    "entity and relation of valid and test is also in train, and each relation's\n"
    "triples are split in the asked proportions as closely as that allows:\n"
    "  1. valid is asked round(n x VALID) triples and test round(n x TEST), shared\n"
    "     out over the relations in proportion to their sizes (largest\n"
    "     remainders first, ties in a seeded order); a relation always keeps\n"
    "     one triple in train;\n"
    "  2. in one seeded random order of the triples, each goes to valid while\n"
    "     its relation's share of valid is not met, else to test likewise, else\n"
    "     stays in train; a triple whose head or tail is in no other triple left\n"
    "     in train stays in train (kept), and a later triple of its relation may\n"
    "     take its place.\n"
    "The same file, fractions and seed give the same files, byte for byte, on\n"
    "any machine. Each file lists its triples in the order of F, one\n"
    "head<TAB>relation<TAB>tail line each; a triple repeated in F is written\n"
    "once (so no triple is in two files), and a header, comments and blank\n"
    "lines are not copied. The report says how many triples went where, per\n"
    "relation, and how many were kept in train and why.\n\n"
    "  --triples F    the triples to split\n"
    "  --out PREFIX   writes PREFIX.train.tsv, PREFIX.valid.tsv, PREFIX.test.tsv\n"
    "                 (each whole, and all three replaced together; none may be F)\n"
    "  --valid P      the fraction for valid, 0 to below 1 (default 0.1; 0 writes\n"
    "                 an empty valid file)\n"
    "  --test P       the fraction for test, likewise (default 0.1); the two\n"
    "                 together below 1\n"
    "  --seed S       the random order's seed (default 1)\n"
    "  --json         the report as one object: {\"input\",\"triples\",\"entities\",\n"
    "                 \"relations\",\"seed\",\"duplicates\",\"kept\",\"files\":{\"train\"|\n"
    "                 \"valid\"|\"test\":{\"path\",\"triples\",\"asked\",\"fraction\"}},\n"
    "                 \"per_relation\":{REL:{\"triples\",\"train\",\"valid\",\"test\",\"kept\"}}}\n\n"
    EXIT_TABLE;

static const char *const part_name[3] = {"train", "valid", "test"};

/* Relations of part p short of their share because triples were kept:
   "a 1, b 2", at most 5 named. */
static void print_short(const kgl_dataset *ds, const kgl_split_plan *plan, int p)
{
    int shown = 0, more = 0;
    for (int r = 0; r < ds->n_relations; r++) {
        int missing = plan->rel_target[3 * r + p] - plan->rel_count[3 * r + p];
        if (missing <= 0) continue;
        if (shown < 5) printf("%s%s %d", shown ? ", " : "", ds->relation_names[r], missing), shown++;
        else more++;
    }
    if (more) printf(" and %d more relation%s", more, more == 1 ? "" : "s");
}

static void print_report(const kgl_dataset *ds, const kgl_split_plan *plan, const char *input, const double *fraction,
                         unsigned long long seed, char paths[3][4200])
{
    int m = ds->n_relations, w = 8;
    for (int r = 0; r < m; r++)
        if (kgl_table_width(ds->relation_names[r]) > w) w = kgl_table_width(ds->relation_names[r]);
    if (w > 40) w = 40;
    printf("%s: %d triple%s, %d entit%s, %d relation%s; --valid %g --test %g --seed %llu\n\n", input, plan->n,
           plan->n == 1 ? "" : "s", ds->n_entities, ds->n_entities == 1 ? "y" : "ies", m, m == 1 ? "" : "s",
           fraction[KGL_PART_VALID], fraction[KGL_PART_TEST], seed);
    printf("%-*s %8s %8s %8s %8s %8s\n", w, "relation", "triples", "train", "valid", "test", "kept");
    for (int r = 0; r < m; r++) {
        const int *c = plan->rel_count + 3 * r;
        kgl_table_cell(stdout, ds->relation_names[r], -w); /* cut between characters, padded by them */
        printf(" %8d %8d %8d %8d %8d\n", c[0] + c[1] + c[2], c[0], c[1], c[2], plan->rel_kept[r]);
    }
    printf("%-*s %8d %8d %8d %8d %8d\n\n", w, "all", plan->n, plan->count[0], plan->count[1], plan->count[2],
           plan->kept);
    int pw = 0, cw = snprintf(NULL, 0, "%d", plan->n); /* the file names' and counts' widths */
    for (int p = 0; p < 3; p++)
        if ((int)strlen(paths[p]) > pw) pw = (int)strlen(paths[p]);
    for (int p = 0; p < 3; p++) {
        if (!*paths[p]) continue;
        printf("%-*s  %*d triple%s", pw, paths[p], cw, plan->count[p], plan->count[p] == 1 ? "" : "s");
        if (p == KGL_PART_TRAIN) {
            printf("\n");
            continue;
        }
        if (fraction[p] == 0) {
            printf(" (none asked: --%s 0)\n", part_name[p]);
            continue;
        }
        printf(" (asked %d: %g of %d is %g)", plan->asked[p], fraction[p], plan->n, fraction[p] * plan->n);
        int targets = 0;
        for (int r = 0; r < m; r++) targets += plan->rel_target[3 * r + p];
        if (plan->count[p] < plan->asked[p]) {
            printf("; %d short:", plan->asked[p] - plan->count[p]);
            if (targets < plan->asked[p])
                printf(" %d because each relation keeps a triple in train%s", plan->asked[p] - targets,
                       targets > plan->count[p] ? "," : "");
            if (targets > plan->count[p]) {
                printf(" %d because triples were kept (", targets - plan->count[p]);
                print_short(ds, plan, p);
                printf(")");
            }
        }
        printf("\n");
    }
    if (plan->kept)
        printf("kept in train: %d triple%s drawn for valid or test whose head or tail was in no other triple left in "
               "train; later triples of %s relation%s took %s place%s where there were any\n",
               plan->kept, plan->kept == 1 ? "" : "s", plan->kept == 1 ? "its" : "their", plan->kept == 1 ? "" : "s",
               plan->kept == 1 ? "its" : "their", plan->kept == 1 ? "" : "s");
    else
        printf("kept in train: none (no triple drawn for valid or test held an entity's last training triple)\n");
}

static void print_json(const kgl_dataset *ds, const kgl_split_plan *plan, const char *input, const double *fraction,
                       unsigned long long seed, char paths[3][4200])
{
    kgl_json_writer w;
    kgl_json_writer_init(&w, stdout);
    kgl_json_begin_object(&w);
    kgl_json_field_string(&w, "input", input);
    kgl_json_field_int(&w, "triples", plan->n);
    kgl_json_field_int(&w, "entities", ds->n_entities);
    kgl_json_field_int(&w, "relations", ds->n_relations);
    kgl_json_key(&w, "seed");
    kgl_json_put_uint(&w, seed);
    kgl_json_field_int(&w, "duplicates", ds->splits[0].n_duplicates);
    kgl_json_field_int(&w, "kept", plan->kept);
    kgl_json_key(&w, "files");
    kgl_json_begin_object(&w);
    for (int p = 0; p < 3; p++) {
        if (!*paths[p]) continue;
        kgl_json_key(&w, part_name[p]);
        kgl_json_begin_object(&w);
        kgl_json_field_string(&w, "path", paths[p]);
        kgl_json_field_int(&w, "triples", plan->count[p]);
        kgl_json_field_int(&w, "asked", plan->asked[p]);
        kgl_json_field_number(&w, "fraction", p == KGL_PART_TRAIN ? 1 - fraction[1] - fraction[2] : fraction[p]);
        kgl_json_end_object(&w);
    }
    kgl_json_end_object(&w);
    kgl_json_key(&w, "per_relation");
    kgl_json_begin_object(&w);
    for (int r = 0; r < ds->n_relations; r++) {
        const int *c = plan->rel_count + 3 * r;
        kgl_json_key(&w, ds->relation_names[r]);
        kgl_json_begin_object(&w);
        kgl_json_field_int(&w, "triples", c[0] + c[1] + c[2]);
        kgl_json_field_int(&w, "train", c[0]);
        kgl_json_field_int(&w, "valid", c[1]);
        kgl_json_field_int(&w, "test", c[2]);
        kgl_json_field_int(&w, "kept", plan->rel_kept[r]);
        kgl_json_end_object(&w);
    }
    kgl_json_end_object(&w);
    kgl_json_end_object(&w);
    kgl_json_newline(&w);
    kgl_json_writer_finish(&w);
}

/* A part asked for no triple (`fraction` of n rounds to 0): the message
   suggests the smallest fraction that asks for one (1/n) when the split
   would then give it one (tried with the same seed and the other part's
   fraction as given), and says that none can otherwise. */
static void report_none_asked(const kgl_dataset *ds, const char *input, int p, const double *fraction, uint64_t seed)
{
    const kgl_split *sp = &ds->splits[0];
    int n = sp->n;
    double f[3] = {0, fraction[1], fraction[2]};
    f[p] = 1.0 / n;
    char suggested[32];
    snprintf(suggested, sizeof suggested, "%g", f[p]);
    f[p] = strtod(suggested, NULL); /* as the user would type it */
    bool works = f[KGL_PART_VALID] + f[KGL_PART_TEST] < 1;
    if (works) { /* tried, not promised */
        kgl_split_plan trial;
        kgl_split_triples(&trial, sp->triples, n, ds->n_entities, ds->n_relations, f[KGL_PART_VALID], f[KGL_PART_TEST],
                          seed);
        works = trial.count[p] > 0;
        kgl_split_plan_free(&trial);
    }
    fprintf(stderr, "kgl split: --%s %g of %d triple%s is %g, which rounds to no triple; ", part_name[p], fraction[p], n,
            n == 1 ? "" : "s", fraction[p] * n);
    if (works)
        fprintf(stderr, "--%s %s asks for one\n", part_name[p], suggested);
    else
        fprintf(stderr, "no fraction helps: %s cannot be split, no triple can go to %s without taking the last triple "
                        "of its relation or of an entity out of train (%d triple%s, %d relation%s); give --%s 0, or "
                        "more triples\n",
                input, part_name[p], n, n == 1 ? "" : "s", ds->n_relations, ds->n_relations == 1 ? "" : "s",
                part_name[p]);
}

int cmd_split(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "split", argc, argv);
    a.help = help;
    const char *input = NULL, *prefix = NULL;
    double fraction[3] = {0, 0.1, 0.1};
    uint64_t seed = 1;
    bool json = false;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (cli_is(&a, "--triples")) {
            if (!(input = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--out")) {
            if (!(prefix = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--valid") || cli_is(&a, "--test")) {
            double *f = &fraction[cli_is(&a, "--valid") ? KGL_PART_VALID : KGL_PART_TEST];
            if (!cli_double(&a, 0, 1, f)) return EXIT_USAGE;
            if (*f >= 1)
                return cli_usage_error(&a, "%s %g leaves nothing for train: give a fraction below 1", a.opt, *f);
        } else if (cli_is(&a, "--seed")) {
            if (!cli_u64(&a, &seed)) return EXIT_USAGE;
        } else if (cli_is(&a, "--json")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            json = true;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!input) return cli_usage_error(&a, "--triples F is required (the file to split)");
    if (!prefix) return cli_usage_error(&a, "--out PREFIX is required (PREFIX.train.tsv, .valid.tsv, .test.tsv)");
    if (fraction[KGL_PART_VALID] + fraction[KGL_PART_TEST] >= 1)
        return cli_usage_error(&a, "--valid %g and --test %g leave nothing for train: together they must be below 1",
                               fraction[KGL_PART_VALID], fraction[KGL_PART_TEST]);
    /* the outputs, checked before any work: writable, and none of them the input */
    char paths[3][4200];
    cli_file files[4] = {{"--triples", input, false, NULL}};
    for (int p = 0; p < 3; p++) { /* all three, a part asked for none too (empty) */
        snprintf(paths[p], sizeof paths[p], "%s.%s.tsv", prefix, part_name[p]);
        if (!cli_output_ok("split", "--out", paths[p])) return EXIT_USAGE;
        files[1 + p] = (cli_file){"--out", paths[p], true, NULL};
    }
    if (!cli_files_distinct("split", files, 4)) return EXIT_USAGE;

    kgl_dataset ds;
    char err[2048];
    kgl_source src = {input, NULL, 0};
    if (!kgl_dataset_load(&ds, &src, 1, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return EXIT_USAGE;
    }
    kgl_dataset_write_warnings(stderr, &ds);
    const kgl_split *sp = &ds.splits[0];
    kgl_split_plan plan;
    kgl_split_triples(&plan, sp->triples, sp->n, ds.n_entities, ds.n_relations, fraction[KGL_PART_VALID],
                      fraction[KGL_PART_TEST], seed);
    int st = 0;
    for (int p = KGL_PART_VALID; p <= KGL_PART_TEST && !st; p++) {
        if (fraction[p] == 0) continue;
        /* an empty file would be refused by every reader ("no triples"): refused here, nothing written */
        if (plan.asked[p] == 0) {
            report_none_asked(&ds, input, p, fraction, seed);
            st = EXIT_USAGE;
        } else if (plan.count[p] == 0) {
            fprintf(stderr, "kgl split: %s: no triple can go to %s: each would take the last triple of its relation "
                            "or of an entity out of train (%d triple%s, %d entit%s, %d relation%s)\n",
                    input, part_name[p], sp->n, sp->n == 1 ? "" : "s", ds.n_entities, ds.n_entities == 1 ? "y" : "ies",
                    ds.n_relations, ds.n_relations == 1 ? "" : "s");
            st = EXIT_USAGE;
        }
    }
    const char *const part_paths[3] = {paths[0], paths[1], paths[2]};
    char why[16384];
    if (!st && !kgl_split_write_parts(&ds, &plan, part_paths, why, sizeof why)) {
        fprintf(stderr, "kgl split: %s\n", why);
        st = EXIT_OUTPUT;
    }
    if (!st) {
        if (json) print_json(&ds, &plan, input, fraction, (unsigned long long)seed, paths);
        else print_report(&ds, &plan, input, fraction, (unsigned long long)seed, paths);
    }
    kgl_split_plan_free(&plan);
    kgl_dataset_free(&ds);
    return st;
}
