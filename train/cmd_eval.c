/* cmd_eval.c — `kgl eval`: the filtered metrics for a saved model,
 * and with --ranks every ranked triple as a TSV file for error analysis. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static const char help[] =
    "usage: kgl eval --checkpoint F [--train F] [--valid F] [--test F] [--relations A,B] [--json]\n"
    "                [--ranks FILE.tsv]\n\n"
    "Ranks every triple of each given split for its tail and its head among all\n"
    "entities, filtering the other known answers (from every file given), with\n"
    "ties ranked as the mean of the optimistic and pessimistic rank. Prints MRR\n"
    "and Hits@1/3/10 per relation and overall. --train defaults to the embedded\n"
    "academic world; the checkpoint's entities and relations must match the files.\n\n"
    "--checkpoint A,B,... (several, comma-separated) ranks by an ensemble: each\n"
    "candidate scored by the mean of the models' probabilities (the softmax of\n"
    "each model's scores over all entities), as kgl train --ensemble reports.\n\n"
    "--ranks FILE.tsv writes every ranked triple twice (direction tail: (h, r, ?)\n"
    "ranks t; head: (?, r, t) ranks h) with its filtered rank (the one the metrics\n"
    "average), the answer's score, and the best-scoring wrong answer (neither the\n"
    "answer nor a known one) with its score; tab-separated with a header line:\n"
    "split head relation tail direction rank score top_wrong top_wrong_score\n"
    "(top_wrong empty when every other entity is a known answer). The file is\n"
    "written whole or not at all (a temporary file, then renamed).\n\n"
    EXIT_TABLE;

/* Every triple of every split present, ranked, to `path`: written to a
   temporary file beside it, then renamed over it, so a failure leaves no
   half-written file. Returns false after reporting. */
static bool write_ranks(const char *path, const kgl_model *m, const double *states, const data_view *v)
{
    size_t len = strlen(path) + 32;
    char *tmp = malloc(len);
    if (!tmp) {
        fprintf(stderr, "kgl eval: --ranks %s: out of memory\n", path);
        return false;
    }
    snprintf(tmp, len, "%s.%ld.tmp", path, (long)getpid());
    int slot = kgl_tmp_register(tmp);
    FILE *f = fopen(tmp, "w");
    bool ok = f != NULL;
    if (ok) {
        const kgl_dataset *ds = &v->ds;
        char *const *ent = ds->entity_names;
        fputs("split\thead\trelation\ttail\tdirection\trank\tscore\ttop_wrong\ttop_wrong_score\n", f);
        for (int s = 0; s < 3; s++) {
            int n = v->n[s];
            if (!v->present[s] || n == 0) continue;
            kgl_ranked *r = malloc((size_t)2 * n * sizeof *r);
            if (!r) {
                ok = false;
                errno = ENOMEM;
                break;
            }
            kgl_rank_triples(m, states, ds, v->split[s], n, r);
            for (int k = 0; k < 2 * n; k++) {
                const kgl_triple *t = &v->split[s][k % n];
                const kgl_ranked *x = &r[k];
                fprintf(f, "%s\t", v->name[s]);
                /* names hold no tab or newline (the triples reader splits on them): only a quote needs quoting */
                write_field(f, ent[t->head], "\"");
                fputc('\t', f);
                write_field(f, ds->relation_names[t->rel], "\"");
                fputc('\t', f);
                write_field(f, ent[t->tail], "\"");
                /* 17 significant digits: each number reads back to the same double */
                fprintf(f, "\t%s\t%.17g\t%.17g\t", k < n ? "tail" : "head", x->rank, x->score);
                if (x->top_wrong >= 0) {
                    write_field(f, ent[x->top_wrong], "\"");
                    fprintf(f, "\t%.17g\n", x->top_wrong_score);
                } else {
                    fputs("\t\n", f);
                }
            }
            free(r);
        }
        ok = ok && !ferror(f) && fflush(f) == 0 && fsync(fileno(f)) == 0;
        ok = fclose(f) == 0 && ok;
    }
    int e = errno;
    if (ok && rename(tmp, path) != 0) ok = false, e = errno;
    if (!ok) {
        unlink(tmp);
        fprintf(stderr, "kgl eval: --ranks %s: cannot write it: %s\n", path, strerror(e));
    }
    kgl_tmp_unregister(slot);
    free(tmp);
    return ok;
}

/* "A,B,C" -> the paths (a single path that exists as a file is one, commas
   and all); returns how many, at most KGL_MAX_ENSEMBLE, or 0 after reporting. */
static int split_checkpoints(const char *ckpt, char *list, char **paths)
{
    if (access(list, F_OK) == 0) {
        paths[0] = list;
        return 1;
    }
    int n = 0;
    for (char *p = list;; p++) {
        char *comma = strchr(p, ',');
        if (comma) *comma = 0;
        if (!*p || n == KGL_MAX_ENSEMBLE) {
            if (*p) fprintf(stderr, "kgl eval: --checkpoint: more than %d models\n", KGL_MAX_ENSEMBLE);
            else fprintf(stderr, "kgl eval: --checkpoint: an empty name in the list '%s'\n", ckpt);
            return 0;
        }
        paths[n++] = p;
        if (!comma) return n;
        p = comma;
    }
}

int cmd_eval(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "eval", argc, argv);
    a.help = help;
    data_args d = {0};
    const char *ckpt = NULL, *ranks = NULL;
    bool json = false;
    int st;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if ((st = model_cmd_option(&a, &d, &ckpt, &json)) >= 0) {
            if (st) return st;
        } else if (cli_is(&a, "--ranks")) {
            if (!(ranks = cli_value(&a))) return EXIT_USAGE;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!ckpt) return cli_usage_error(&a, "--checkpoint is required");
    char *list = malloc(strlen(ckpt) + 1), *paths[KGL_MAX_ENSEMBLE];
    strcpy(list, ckpt);
    int members = split_checkpoints(ckpt, list, paths);
    if (members == 0) {
        free(list);
        return EXIT_USAGE;
    }
    if (ranks && members > 1) {
        free(list);
        return cli_usage_error(&a, "--ranks writes one model's ranks: give one --checkpoint");
    }
    /* before any work: an output that cannot be written is known now */
    if (ranks && !cli_output_ok("eval", "--ranks", ranks)) {
        free(list);
        return EXIT_USAGE;
    }
    data_view v;
    if ((st = data_load("eval", &d, &v, false))) {
        free(list);
        return st;
    }
    static kgl_model m[KGL_MAX_ENSEMBLE];
    static kgl_checkpoint ck[KGL_MAX_ENSEMBLE];
    static kgl_tape t[KGL_MAX_ENSEMBLE];
    const kgl_model *models[KGL_MAX_ENSEMBLE];
    const kgl_tensor *states[KGL_MAX_ENSEMBLE];
    int loaded = 0;
    for (; loaded < members; loaded++) {
        if ((st = model_load(paths[loaded], &v, &m[loaded], &ck[loaded]))) break;
        if (m[loaded].cfg.reciprocal != m[0].cfg.reciprocal) {
            fprintf(stderr, "kgl eval: %s was trained %s reciprocal relations and %s %s: an ensemble needs one kind\n",
                    paths[loaded], m[loaded].cfg.reciprocal ? "with" : "without", paths[0],
                    m[0].cfg.reciprocal ? "with them" : "without");
            kgl_model_free(&m[loaded]);
            kgl_checkpoint_close(&ck[loaded]);
            st = EXIT_USAGE;
            break;
        }
        kgl_tape_init(&t[loaded]);
        t[loaded].recording = false;
        kgl_forward f;
        kgl_model_context(&m[loaded], &t[loaded], &f);
        models[loaded] = &m[loaded];
        states[loaded] = f.context;
    }
    if (st == 0) {
        kgl_eval ev;
        kgl_eval_init(&ev, v.ds.n_entities, v.ds.n_relations);
        if (json) printf("{\"step\":%ld,\"ensemble\":%d,\"metrics\":{", ck[0].st.step, members);
        for (int k = 0; k < members && !json; k++)
            printf("%s: step %ld, d_model %d, %d heads, ffn %d\n", paths[k], ck[k].st.step, m[k].cfg.dim,
                   m[k].cfg.heads, m[k].cfg.ffn);
        if (members > 1 && !json)
            printf("an ensemble of %d models: each candidate ranked by the mean of their probabilities\n", members);
        bool first = true;
        for (int s = 0; s < 3; s++) {
            if (!v.present[s]) continue;
            kgl_evaluate_ensemble(models, states, members, &v.ds, v.split[s], v.n[s], &ev);
            if (json) {
                printf("%s\"%s\":", first ? "" : ",", v.name[s]);
                json_metrics(stdout, &v.ds, v.use_relation, &ev);
            } else {
                print_metrics_table(v.name[s], v.n[s], &v.ds, v.use_relation, &ev);
            }
            first = false;
        }
        if (json) printf("}}\n");
        if (ranks && !write_ranks(ranks, &m[0], states[0]->data, &v)) st = EXIT_OUTPUT;
        kgl_eval_free(&ev);
    }
    for (int k = 0; k < loaded; k++) {
        kgl_tape_free(&t[k]);
        kgl_model_free(&m[k]);
        kgl_checkpoint_close(&ck[k]);
    }
    data_free(&v);
    free(list);
    return st;
}
