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
        if (json) kgl_split_report_json(stdout, &ds, &plan, input, fraction, seed, part_paths);
        else kgl_split_report_write(stdout, &ds, &plan, input, fraction, seed, part_paths);
    }
    kgl_split_plan_free(&plan);
    kgl_dataset_free(&ds);
    return st;
}
