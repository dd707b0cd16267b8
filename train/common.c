/* common.c — data loading, relation filters, supervision and the models a
 * command reads, shared by the subcommands (their tables: the library). */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

bool data_option(cli_args *a, data_args *d, int *status)
{
    const char **slot = cli_is(a, "--train")       ? &d->train
                        : cli_is(a, "--valid")     ? &d->valid
                        : cli_is(a, "--test")      ? &d->test
                        : cli_is(a, "--relations") ? &d->relations
                                                   : NULL;
    if (!slot) return false;
    *slot = cli_value(a);
    *status = *slot ? 0 : EXIT_USAGE;
    return true;
}


int data_load(const char *cmd, const data_args *d, data_view *v, bool quiet)
{
    memset(v, 0, sizeof *v);
    /* the embedded world stands in for no triples at all, never for a
       missing --train beside files of the user's own */
    if (!d->train && (d->valid || d->test)) {
        fprintf(stderr, "kgl %s: %s need%s --train F: the embedded academic world is used only when no triples file "
                "is given\n", cmd, d->valid && d->test ? "--valid and --test" : d->valid ? "--valid" : "--test",
                d->valid && d->test ? "" : "s");
        return EXIT_USAGE;
    }
    kgl_source src[3];
    int n_src = 0;
    const char *paths[3] = {d->train, d->valid, d->test};
    v->name[0] = "train";
    v->name[1] = "valid";
    v->name[2] = "test";
    for (int s = 0; s < 3; s++) {
        if (s == 0 && !paths[0]) {
            src[n_src++] = (kgl_source){"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
            v->present[0] = true;
            v->embedded_world = true;
        } else if (paths[s]) {
            src[n_src++] = (kgl_source){paths[s], NULL, 0};
            v->present[s] = true;
        }
    }
    char err[1024];
    if (!kgl_dataset_load(&v->ds, src, n_src, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return EXIT_USAGE;
    }
    v->use_relation = kgl_xmalloc((size_t)v->ds.n_relations * sizeof(bool));
    size_t cap = 4096 + (d->relations ? strlen(d->relations) : 0); /* room for a name, however long */
    char *why = kgl_xmalloc(cap);
    bool chosen = kgl_dataset_choose_relations(&v->ds, d->relations, v->use_relation, why, cap);
    if (!chosen) fprintf(stderr, "kgl %s: %s\n", cmd, why);
    free(why);
    if (!chosen) {
        data_free(v);
        return EXIT_USAGE;
    }
    int loaded = 0;
    for (int s = 0; s < 3; s++) {
        if (!v->present[s]) continue;
        const kgl_split *sp = &v->ds.splits[loaded++];
        v->split[s] = kgl_xmalloc((size_t)(sp->n ? sp->n : 1) * sizeof(kgl_triple));
        for (int k = 0; k < sp->n; k++)
            if (v->use_relation[sp->triples[k].rel]) v->split[s][v->n[s]++] = sp->triples[k];
    }
    (void)quiet; /* --quiet hides progress, never a warning about the data */
    kgl_dataset_write_warnings(stderr, &v->ds);
    if (v->n[0] == 0) {
        fprintf(stderr, "kgl %s: no training triples with the chosen relations\n", cmd);
        data_free(v);
        return EXIT_USAGE;
    }
    return 0;
}

bool data_splits_chosen(const char *cmd, const data_view *v, const bool *named, bool *chosen)
{
    bool any = named[0] || named[1] || named[2];
    for (int s = 0; s < 3; s++) {
        if (named[s] && !v->present[s]) {
            fprintf(stderr, "kgl %s: --splits names %s, which was not given (--%s F)\n", cmd, v->name[s], v->name[s]);
            return false;
        }
        chosen[s] = any ? named[s] : v->present[s];
    }
    return true;
}

void data_free(data_view *v)
{
    for (int s = 0; s < 3; s++) free(v->split[s]);
    free(v->use_relation);
    kgl_dataset_free(&v->ds);
    memset(v, 0, sizeof *v);
}

bool parse_supervision(const char *cmd, const char *spec, const kgl_dataset *ds, int heads, int *head_of)
{
    size_t cap = 4096 + strlen(spec); /* room for a name, however long */
    char *why = kgl_xmalloc(cap);
    bool ok = kgl_supervision_parse(spec, ds, heads, head_of, why, cap);
    if (!ok) fprintf(stderr, "kgl %s: %s\n", cmd, why);
    free(why);
    return ok;
}

/* A checkpoint that does not fit the embedded academic world was, most
   likely, trained on the user's own triples and opened without --train:
   say that, with what differs: the counts, or (when they are the same) the
   first name (kgl_checkpoint_names_differ). */
static bool explain_other_data(const char *path, const data_view *v)
{
    kgl_names_difference d;
    if (!kgl_checkpoint_names_differ(path, &v->ds, &d)) return false;
    const kgl_dataset *ds = &v->ds;
    if (d.n_entities != ds->n_entities || d.n_relations != ds->n_relations)
        fprintf(stderr, "%s: this checkpoint was trained on %d entities and %d relations, not on the embedded "
                "academic world (%d entities, %d relations)", path, d.n_entities, d.n_relations, ds->n_entities,
                ds->n_relations);
    else /* the same counts: the first name that differs */
        fprintf(stderr, "%s: this checkpoint was not trained on the embedded academic world: its %s %d is '%s', "
                "the academic world's is '%s'", path, d.entity ? "entity" : "relation", d.at, d.name,
                d.entity ? ds->entity_names[d.at] : ds->relation_names[d.at]);
    fprintf(stderr, "; give the triples files it was trained with (--train F, and --valid, --test if it had them)\n");
    return true;
}

int checkpoint_open(const char *path, const data_view *v, kgl_checkpoint *ck)
{
    char err[1024];
    if (kgl_checkpoint_open(path, &v->ds, ck, err, sizeof err)) return 0;
    if (!(v->embedded_world && explain_other_data(path, v))) fprintf(stderr, "%s\n", err);
    return EXIT_USAGE;
}

bool model_finite(const char *where, const kgl_model *m)
{
    char err[1024];
    if (kgl_model_finite(m, where, err, sizeof err)) return true;
    fprintf(stderr, "%s\n", err);
    return false;
}

/* The model of an opened checkpoint, if it fits in memory (for `examples`
   training examples) and is finite; the checkpoint is closed on failure. */
static int model_from_checkpoint(const char *cmd, const char *path, kgl_checkpoint *ck, const data_view *v,
                                 long examples, kgl_model *m)
{
    /* the model, its states and ranking, and (kgl grad) a step of 1024 examples */
    kgl_memory_run run = {.cfg = ck->cfg, .tc = {.batch = 1024}, .members = 1, .jobs = 1, .threads = kgl_cores()};
    run.n_train = ck->cfg.reciprocal ? (examples + 1) / 2 : examples;
    for (int s = 0; v && s < 3; s++) {
        run.triples += v->n[s];
        if (v->n[s] > run.ranked) run.ranked = v->n[s];
    }
    if (!memory_fits(cmd, &run, false)) {
        kgl_checkpoint_close(ck);
        return EXIT_USAGE;
    }
    if (ck->cfg.context == KGL_CONTEXT_GRAPH && !v) {
        fprintf(stderr,
                "kgl %s: %s attends over its training graph (--context graph): give the triples it was trained "
                "with (--train F)\n", cmd, path);
        kgl_checkpoint_close(ck);
        return EXIT_USAGE;
    }
    if (strcmp(ck->precision, KGL_PRECISION) != 0) /* its values convert exactly to double, rounded to float */
        fprintf(stderr, "kgl %s: %s was trained in %s; computing in %s (--precision %s computes as it was trained)\n",
                cmd, path, ck->precision, KGL_PRECISION, ck->precision);
    kgl_model_create(m, &ck->cfg);
    kgl_checkpoint_apply(ck, m);
    if (v) kgl_model_set_graph(m, v->split[0], v->n[0]); /* --context graph: the training graph it attends over */
    if (!model_finite(path, m)) {
        kgl_model_free(m);
        kgl_checkpoint_close(ck);
        return EXIT_USAGE;
    }
    return 0;
}

int model_load(const char *path, const data_view *v, kgl_model *m, kgl_checkpoint *ck)
{
    int st = checkpoint_open(path, v, ck);
    return st ? st : model_from_checkpoint("model", path, ck, v, 2L * v->n[0], m);
}

/* The CLI's opener of one checkpoint of a set (kgl_model_set_spec.open):
   for the loaded triples (model_load), or, without them, with the names of
   the first checkpoint; its errors said here. */
typedef struct set_opener {
    const char *cmd;
    const data_view *v;
    kgl_dataset *names;
} set_opener;

static bool open_for_set(void *ctx, const char *path, int k, kgl_checkpoint *ck, kgl_model *m, char *err, size_t cap)
{
    (void)err, (void)cap;
    const set_opener *o = ctx;
    if (o->v) return model_load(path, o->v, m, ck) == 0;
    char why[1024];
    bool ok = k == 0 ? kgl_checkpoint_open_standalone(path, o->names, ck, why, sizeof why)
                     : kgl_checkpoint_open(path, o->names, ck, why, sizeof why);
    if (!ok) {
        fprintf(stderr, "%s\n", why); /* the names are freed by a failed first open */
        return false;
    }
    return model_from_checkpoint(o->cmd, path, ck, NULL, 1, m) == 0;
}

int model_set_open(const char *cmd, const char *spec, int member, const data_view *v, kgl_dataset *names,
                   kgl_model_set *ms)
{
    if (!v) memset(names, 0, sizeof *names);
    set_opener opener = {cmd, v, names};
    kgl_model_set_spec set = {.cmd = cmd, .checkpoint = spec, .member = member, .open = open_for_set, .ctx = &opener};
    char err[8192];
    if (!kgl_model_set_open(ms, &set, err, sizeof err)) {
        if (err[0]) fprintf(stderr, "%s\n", err);
        /* opened with the first checkpoint, even when its model was then
           refused (not finite, too large): ms->n does not count that one */
        if (!v) kgl_dataset_free(names);
        return EXIT_USAGE;
    }
    const kgl_model_choice *c = &ms->choice;
    if (member < 0 && c->alone) /* one member opened alone, most likely by mistake */
        fprintf(stderr, "kgl %s: note: %s is member %d of the ensemble %s and is used alone here (as --checkpoint %s "
                "--member %d); --checkpoint %s uses the whole ensemble\n", cmd, spec, c->member, c->ensemble,
                c->ensemble, c->member, c->ensemble);
    return 0;
}

bool outputs_distinct(const char *cmd, const data_args *d, const char *spec, char *const *models, int n_models,
                      const cli_file *outputs, int n_out)
{
    cli_file *files = calloc(3 + (size_t)n_models + (size_t)n_out, sizeof *files);
    int n = 0;
    files[n++] = (cli_file){"--train", d->train, false, NULL};
    files[n++] = (cli_file){"--valid", d->valid, false, NULL};
    files[n++] = (cli_file){"--test", d->test, false, NULL};
    for (int k = 0; k < n_models; k++) /* a member's file is named as such */
        files[n++] = (cli_file){strcmp(models[k], spec) == 0 ? "--checkpoint" : "the checkpoint", models[k], false, NULL};
    for (int k = 0; k < n_out; k++) files[n++] = outputs[k];
    bool ok = cli_files_distinct(cmd, files, n);
    free(files);
    return ok;
}

int model_cmd_option(cli_args *a, data_args *d, const char **checkpoint, long *member, bool *json)
{
    int st;
    if (data_option(a, d, &st)) return st;
    if (cli_is(a, "--checkpoint")) return (*checkpoint = cli_value(a)) ? 0 : EXIT_USAGE;
    if (cli_is(a, "--member")) return cli_int(a, 0, KGL_MAX_ENSEMBLE - 1, member) ? 0 : EXIT_USAGE;
    if (cli_is(a, "--json")) {
        if (!cli_flag(a)) return EXIT_USAGE;
        *json = true;
        return 0;
    }
    return -1;
}

int candidate_states_option(cli_args *a, double *lambda)
{
    if (!cli_is(a, "--candidate-states")) return -1;
    return cli_double(a, 0, 1e6, lambda) ? 0 : EXIT_USAGE;
}

int set_candidate_states(const char *cmd, kgl_model_set *ms, double lambda)
{
    if (lambda < 0) return 0;
    for (int k = 0; k < ms->n; k++) {
        kgl_config *c = &ms->m[k].cfg;
        if (lambda > 0 && !c->query_relation) {
            fprintf(stderr, "kgl %s: --candidate-states needs a model that asks the relation (trained with "
                    "--query-relation); %s was not\n", cmd, ms->paths[k]);
            return EXIT_USAGE;
        }
        if (c->candidate_states != lambda)
            fprintf(stderr, "kgl %s: note: %s asks its head questions with --candidate-states %g (its checkpoint's: %g)\n", cmd,
                    ms->paths[k], lambda, c->candidate_states);
        c->candidate_states = lambda;
    }
    return 0;
}

int open_model(const char *cmd, const data_args *d, const char *checkpoint, long member, kgl_model_choice *c,
               data_view *v, kgl_model *m, kgl_checkpoint *ck)
{
    int st = data_load(cmd, d, v, false);
    if (st) return st;
    set_opener opener = {cmd, v, NULL};
    kgl_model_set_spec set = {.cmd = cmd, .checkpoint = checkpoint, .member = (int)member, .open = open_for_set,
                              .ctx = &opener};
    char err[8192];
    if (!kgl_model_open_member(&set, m, ck, c, err, sizeof err)) {
        if (err[0]) fprintf(stderr, "%s\n", err);
        data_free(v);
        return EXIT_USAGE;
    }
    return 0;
}

void json_model_choice(kgl_json_writer *w, const kgl_model_choice *c)
{
    kgl_json_field_int(w, "ensemble", c->members);
    kgl_json_field_int(w, "member", c->member);
}

/* The option at a, a row of kgl_train_options, into its field of cfg, st
   or run by the row's kind (the last value wins); false after reporting. */
bool table_option(cli_args *a, const kgl_option *row, kgl_config *cfg, kgl_train_state *st, kgl_run_options *run)
{
    void *field = kgl_option_value(row, cfg, st, run);
    long v;
    int k;
    switch (row->type) {
    case KGL_OPTION_WHOLE:
        if (!cli_int(a, (long)row->lo, (long)row->hi, &v)) return false;
        if (row->size == sizeof(int)) *(int *)field = (int)v;
        else *(long *)field = v;
        return true;
    case KGL_OPTION_SEED: return cli_u64(a, field);
    case KGL_OPTION_REAL: return cli_double(a, row->lo, row->hi, field);
    case KGL_OPTION_FLAG:
        if (!cli_flag(a)) return false;
        *(bool *)field = !row->negated;
        return true;
    case KGL_OPTION_WORD:
    case KGL_OPTION_WORD_OR_NUMBER:
        if (row->type == KGL_OPTION_WORD) {
            if (!cli_word(a, row->words, row->n_words, &k)) return false;
        } else {
            double *number = (double *)((char *)field - row->offset + row->number_offset);
            bool positive = row->lo == DBL_TRUE_MIN && row->hi == DBL_MAX;
            k = cli_word_or_number(a, row->words, row->n_words, row->lo, row->hi, positive ? "a positive number" : NULL,
                                   number);
            if (k == -2) return false;
            if (k == -1) k = row->n_words; /* the number */
        }
        if (row->size == sizeof(bool)) *(bool *)field = k != 0;
        else *(int *)field = k;
        return true;
    case KGL_OPTION_TEXT: {
        const char *text = cli_value(a);
        if (!text) return false;
        if (strlen(text) >= row->size) {
            cli_usage_error(a, "%s is longer than %zu bytes", row->name, row->size - 1);
            return false;
        }
        memcpy(field, text, strlen(text) + 1);
        return true;
    }
    case KGL_OPTION_NAME:
        if (row->words) {
            if (!cli_word(a, row->words, row->n_words, &k)) return false;
            *(const char **)field = row->words[k];
            return true;
        }
        return (*(const char **)field = cli_value(a)) != NULL;
    case KGL_OPTION_SPLITS: {
        const char *list = cli_value(a);
        memset(field, 0, row->size); /* the last --splits wins, as for other options */
        return list && cli_splits(a, list, field);
    }
    }
    return false;
}
