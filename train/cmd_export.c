/* cmd_export.c — `kgl export`: a saved model's embeddings and contextual
 * states as TSV files for pandas and embedding projectors. */
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char help[] =
    "usage: kgl export --checkpoint F --out DIR [--train F] [--member K] [--json]\n\n"
    "(--member K: the K-th model F lists, of an ensemble F is member 0 of; one\n"
    "model of an ensemble is named on the first line, and in --json.)\n"
    "Writes into DIR (created when missing; its parent must exist), each file\n"
    "with a header row 'name<TAB>d0<TAB>d1 ...' and one row per name:\n"
    "  entities.tsv         the entity embeddings E [n, d]\n"
    "  relations.tsv        the relation embeddings R, a row per relation and, in\n"
    "                       reciprocal mode, one per inverse, named REL^-1\n"
    "  context.tsv          the contextual states C [n, d]: the layer's output for\n"
    "                       each entity, the rows the readout scores with\n"
    "and, for embedding projectors (projector.tensorflow.org: numbers only, and\n"
    "the names apart, without a header):\n"
    "  vectors.tsv, context_vectors.tsv, metadata.tsv\n"
    "Numbers are written with 17 significant digits (%.17g): each reads back to\n"
    "the same double. Every file is written to a temporary file and renamed into\n"
    "place. Read one with pandas:\n"
    "  pd.read_csv(\"DIR/entities.tsv\", sep=\"\\t\", index_col=0, quoting=3, keep_default_na=False)\n"
    "(quoting=3 and keep_default_na=False keep names such as NA, null or a leading quote as text).\n"
    "--train F names the triples the model was trained on (default: the\n"
    "academic world); --json prints what was written as one object.\n"
    EXIT_TABLE;

int cmd_export(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "export", argc, argv);
    a.help = help;
    data_args d = {0};
    const char *ckpt = NULL, *out = NULL;
    long member = -1; /* --member K: one model of an ensemble */
    bool json = false;
    int st;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if ((st = model_cmd_option(&a, &d, &ckpt, &member, &json)) >= 0) {
            if (st) return st;
        } else if (cli_is(&a, "--out")) {
            if (!(out = cli_value(&a))) return EXIT_USAGE;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!ckpt) return cli_usage_error(&a, "--checkpoint is required");
    if (!out) return cli_usage_error(&a, "--out DIR is required (the folder the TSV files go to)");
    if (!cli_output_dir_ok("export", "--out", out)) return EXIT_USAGE;
    data_view v;
    kgl_model m;
    kgl_checkpoint ck;
    static kgl_model_choice chosen; /* which model of its ensemble (8 KB: one per process) */
    if ((st = open_model("export", &d, ckpt, member, &chosen, &v, &m, &ck))) return st;
    char paths[KGL_EXPORT_FILES][4200], *models[1] = {chosen.path};
    cli_file outputs[KGL_EXPORT_FILES];
    for (int k = 0; k < KGL_EXPORT_FILES; k++) {
        snprintf(paths[k], sizeof paths[k], "%s/%s", out, kgl_export_files[k]);
        outputs[k] = (cli_file){"--out", paths[k], true, NULL};
    }
    if (!outputs_distinct("export", &d, ckpt, models, 1, outputs, KGL_EXPORT_FILES)) {
        kgl_model_free(&m);
        kgl_checkpoint_close(&ck);
        data_free(&v);
        return EXIT_USAGE;
    }
    ckpt = chosen.path;
    char err[1024];
    if (!kgl_export_tsv(&m, &v.ds, out, err, sizeof err)) {
        fprintf(stderr, "kgl export: %s\n", err);
        st = EXIT_OUTPUT;
    } else {
        int n = m.cfg.n_entities, dim = m.cfg.dim, rows = kgl_config_relation_rows(&m.cfg);
        if (json) {
            kgl_json_writer w;
            kgl_json_writer_init(&w, stdout);
            kgl_json_begin_object(&w);
            json_model_choice(&w, &chosen);
            kgl_json_field_string(&w, "dir", out);
            kgl_json_field_int(&w, "entities", n);
            kgl_json_field_int(&w, "relation_rows", rows);
            kgl_json_field_int(&w, "dim", dim);
            kgl_json_field_int(&w, "step", ck.st.step);
            kgl_json_key(&w, "files");
            kgl_json_begin_array(&w);
            for (int k = 0; k < KGL_EXPORT_FILES; k++) kgl_json_put_string(&w, kgl_export_files[k]);
            kgl_json_end_array(&w);
            kgl_json_end_object(&w);
            kgl_json_newline(&w);
            kgl_json_writer_finish(&w);
        } else {
            kgl_model_choice_write(stdout, &chosen, "exporting",
                               "The models' vectors are separate spaces (each trained from its own seed, widths may "
                               "differ), so no one table holds the ensemble: export each member with --member K.");
            printf("%s (step %ld): %d entities, %d relation rows%s, d = %d\n", ckpt, ck.st.step, n, rows,
                   m.cfg.reciprocal ? " (inverses named REL^-1)" : "", dim);
            printf("%s/entities.tsv   E, %d rows\n%s/relations.tsv  R, %d rows\n%s/context.tsv    C, %d rows\n", out, n,
                   out, rows, out, n);
            printf("%s/vectors.tsv, context_vectors.tsv, metadata.tsv  for embedding projectors\n", out);
        }
    }
    kgl_model_free(&m);
    kgl_checkpoint_close(&ck);
    data_free(&v);
    return st;
}
