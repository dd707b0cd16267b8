/* model_options.c — the table of kgl train's options (src/model/options.c):
 * its rows agree with themselves and with --help, a checkpoint saves and
 * loads every saved option, and --resume takes each training option from the
 * checkpoint unless it is given again. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 16], err[1 << 14];

static size_t kind_size(kgl_option_kind kind)
{
    return kind == KGL_OPTION_MODEL      ? sizeof(kgl_config)
           : kind == KGL_OPTION_TRAINING ? sizeof(kgl_train_state)
                                         : sizeof(kgl_run_options);
}

/* Names and keys unique; a key exactly for what a checkpoint keeps (model and
   training options); each field inside the struct of its kind; the words a
   flag writes; files are the run's names; every option in --help. */
TEST(options_table_rows_are_consistent)
{
    CHECK(kgl_n_train_options > 40 && kgl_n_train_options <= KGL_TRAIN_OPTIONS_MAX);
    CHECK(run_kgl(T, "train --help", out, sizeof out, err, sizeof err) == 0);
    for (int k = 0; k < kgl_n_train_options; k++) {
        const kgl_option *o = &kgl_train_options[k];
        if (!CHECK(o->name && strncmp(o->name, "--", 2) == 0)) continue;
        bool ok = kgl_train_option_named(o->name, strlen(o->name)) == o;
        ok &= (o->key != NULL) == (o->kind != KGL_OPTION_RUN);
        ok &= o->offset + o->size <= kind_size(o->kind) && o->size > 0;
        ok &= o->type != KGL_OPTION_FLAG || !o->key || o->n_words == 2;
        ok &= (o->type != KGL_OPTION_WORD && o->type != KGL_OPTION_WORD_OR_NUMBER) || o->n_words >= 2;
        /* the command line's alone: a file or the data's names, or what the run is (--check) */
        ok &= !(o->flags & KGL_OPTION_FILE) ||
              (o->kind == KGL_OPTION_RUN && (o->type == KGL_OPTION_NAME || o->type == KGL_OPTION_FLAG));
        ok &= !(o->flags & (KGL_OPTION_REQUIRED | KGL_OPTION_ECHO)) || o->key;
        ok &= o->help || (k > 0 && !o->heading); /* documented with the row before it */
        ok &= (o->arg == NULL) == (o->type == KGL_OPTION_FLAG);
        for (int j = 0; j < k; j++)
            ok &= !o->key || !kgl_train_options[j].key || strcmp(o->key, kgl_train_options[j].key) != 0;
        /* its line of --help: "  --name ARG" (with the rows documented on it), its first help line at
           column 23 (after two spaces, past a longer usage), the next ones below it */
        char line[512], usage[128];
        size_t u = (size_t)snprintf(usage, sizeof usage, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        for (int j = k + 1; j < kgl_n_train_options && !kgl_train_options[j].help; j++)
            u += (size_t)snprintf(usage + u, sizeof usage - u, ", %s %s", kgl_train_options[j].name, kgl_train_options[j].arg);
        const char *help = o->help ? o->help : "";
        size_t first = strcspn(help, "\n"), second = help[first] ? strcspn(help + first + 1, "\n") : 0;
        snprintf(line, sizeof line, "\n  %-19s  %.*s\n%s%.*s", usage, (int)first, help, help[first] ? "                       " : "",
                 (int)second, help[first] ? help + first + 1 : "");
        ok &= !o->help || strstr(out, line) != NULL;
        if (!CHECK(ok)) printf("    row %d: %s\n", k, o->name);
    }
}

/* Sets every model option away from its default in one of two models (one
   with everything on, one without reciprocal relations), and every training
   option generically; saves, loads, and finds each saved option's value. */
static void away_from_defaults(int which, kgl_config *c, kgl_train_state *st)
{
    kgl_config_defaults(c);
    kgl_train_state_defaults(st);
    if (which == 0) {
        c->dim = 12, c->heads = 3, c->ffn = 4, c->scale = KGL_SCALE_VALUE, c->scale_value = 0.3;
        c->init_scale = 0.5, c->qk_norm = true, c->learn_temperature = true, c->readout = KGL_READOUT_COMPLEX;
        c->context = KGL_CONTEXT_GRAPH, c->neighbours = 7, c->query_relation = true, c->hide_asked = true;
        c->relation_token = true, c->candidate_states = 0.75;
        c->layers = 2, c->outer_residual = true, c->head_state_input = true;
    } else {
        c->reciprocal = false;
    }
    for (int k = 0; k < kgl_n_train_options; k++) { /* any value the row allows, not its default */
        const kgl_option *o = &kgl_train_options[k];
        if (o->kind != KGL_OPTION_TRAINING) continue;
        void *field = kgl_option_value(o, c, st, NULL);
        switch (o->type) {
        /* model 0: the largest value a checkpoint may hold (above the command line's for some) */
        case KGL_OPTION_WHOLE: {
            long x = which == 0 ? (long)(o->file_hi != 0 ? o->file_hi : o->hi) : (long)o->lo + 2;
            if (o->size == sizeof(int)) *(int *)field = (int)x;
            else *(long *)field = x;
            break;
        }
        case KGL_OPTION_SEED: *(uint64_t *)field = 12345 + (uint64_t)which; break;
        case KGL_OPTION_REAL: *(double *)field = which == 0 ? (o->file_hi != 0 ? o->file_hi : o->hi) : o->lo + (o->hi - o->lo) / 3; break;
        case KGL_OPTION_FLAG: *(bool *)field = !*(bool *)field; break;
        case KGL_OPTION_WORD:
            if (o->size == sizeof(bool)) *(bool *)field = !*(bool *)field;
            else *(int *)field = o->n_words - 1 - which;
            break;
        case KGL_OPTION_TEXT: snprintf(field, o->size, "advises=%d", which); break;
        default: break;
        }
    }
}

TEST(checkpoint_saves_and_loads_every_option)
{
    kgl_dataset ds;
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[1024];
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e))) return;
    bool away[KGL_TRAIN_OPTIONS_MAX] = {false};
    for (int which = 0; which < 2; which++) {
        kgl_config c, plain_c;
        kgl_train_state st, plain_st;
        kgl_config_defaults(&plain_c);
        kgl_train_state_defaults(&plain_st);
        away_from_defaults(which, &c, &st);
        c.n_entities = ds.n_entities, c.n_relations = ds.n_relations;
        if (!CHECK(kgl_config_error(&c) == NULL)) printf("    model %d: %s\n", which, kgl_config_error(&c));
        kgl_model m;
        kgl_model_create(&m, &c);
        char path[600];
        snprintf(path, sizeof path, "%s/every%d.st", T->tmp, which);
        CHECK(kgl_checkpoint_save(path, &m, &ds, &st, e, sizeof e));
        kgl_model_free(&m);
        kgl_checkpoint ck;
        if (!CHECK(kgl_checkpoint_open(path, &ds, &ck, e, sizeof e))) {
            printf("    %s\n", e);
            continue;
        }
        for (int k = 0; k < kgl_n_train_options; k++) {
            const kgl_option *o = &kgl_train_options[k];
            if (!o->key) continue;
            char saved[600], loaded[600], plain[600];
            kgl_option_format(o, kgl_option_value(o, &c, &st, NULL), saved, sizeof saved);
            kgl_option_format(o, kgl_option_value(o, &ck.cfg, &ck.st, NULL), loaded, sizeof loaded);
            kgl_option_format(o, kgl_option_value(o, &plain_c, &plain_st, NULL), plain, sizeof plain);
            away[k] |= strcmp(saved, plain) != 0;
            if (!CHECK(strcmp(saved, loaded) == 0)) printf("    %s: saved %s, loaded %s\n", o->key, saved, loaded);
        }
        kgl_checkpoint_close(&ck);
    }
    for (int k = 0; k < kgl_n_train_options; k++) /* a value equal to the default would prove nothing */
        if (kgl_train_options[k].key && !CHECK(away[k]))
            printf("    %s: neither model of this test sets it away from its default\n", kgl_train_options[k].key);
    kgl_dataset_free(&ds);
}

/* A metadata value of a checkpoint ("" when absent). */
static const char *meta(const char *path, const char *key)
{
    static char value[4][256];
    static int slot;
    kgl_st_file f;
    char e[512];
    slot = (slot + 1) % 4;
    value[slot][0] = 0;
    if (kgl_st_read(path, &f, e, sizeof e)) {
        const char *v = kgl_st_meta(&f, key);
        snprintf(value[slot], sizeof value[slot], "%s", v ? v : "");
        kgl_st_free(&f);
    }
    return value[slot];
}

/* --resume: each training option not given comes from the checkpoint (the
   checkpoint saved again after no step holds what it held), one given wins. */
TEST(resume_takes_training_options_unless_given)
{
    char a[600], b[600], c[600], cmd[2048];
    snprintf(a, sizeof a, "%s/a.st", T->tmp);
    snprintf(b, sizeof b, "%s/b.st", T->tmp);
    snprintf(c, sizeof c, "%s/c.st", T->tmp);
    snprintf(cmd, sizeof cmd,
             "train --steps 3 --quiet --optimizer sgd --lr 0.05 --momentum 0.5 --batch 7 --seed 9 --weight-decay 0.01 "
             "--supervise-heads advises=0 --aux-weight 0.3 --freeze-embeddings --dropout 0.1 --attn-dropout 0.2 "
             "--hidden-dropout 0.3 --entity-dropout 0.05 --label-smoothing 0.1 --relation-loss 0.2 --n3 0.01 "
             "--weight-decay-on matrices --layer-lr 0.25 --lr-schedule cosine --decay-steps 50 --warmup 2 --lr-floor 0.1 "
             "--save %s",
             a);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("    %s\n", err);
    snprintf(cmd, sizeof cmd, "train --steps 0 --quiet --resume %s --save %s", a, b);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "train --steps 0 --quiet --resume %s --lr 0.5 --batch 11 --save %s", a, c);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    int compared = 0;
    for (int k = 0; k < kgl_n_train_options; k++) {
        const kgl_option *o = &kgl_train_options[k];
        if (o->kind != KGL_OPTION_TRAINING) continue;
        const char *before = meta(a, o->key), *after = meta(b, o->key);
        compared++;
        if (!CHECK(strcmp(before, after) == 0)) printf("    %s: %s, resumed %s\n", o->key, before, after);
    }
    CHECK(compared > 20);
    CHECK(strcmp(meta(c, "base_lr"), "0.5") == 0 && strcmp(meta(c, "batch"), "11") == 0);
    CHECK(strcmp(meta(c, "momentum"), "0.5") == 0); /* not given: the checkpoint's */
}

/* The tensor `name` of checkpoint `path` equals (same) or differs from
   (!same) the one of `other`, element by element, exactly. */
static bool same_tensor(const char *path, const char *other, const char *name, bool same)
{
    kgl_st_file f, g;
    char e[512];
    if (!kgl_st_read(path, &f, e, sizeof e)) return false;
    bool ok = false;
    if (kgl_st_read(other, &g, e, sizeof e)) {
        const kgl_st_tensor *a = kgl_st_find(&f, name), *b = kgl_st_find(&g, name);
        if (a && b && a->shape[0] == b->shape[0] && a->shape[1] == b->shape[1]) {
            size_t n = (size_t)(a->shape[0] * a->shape[1]), equal = 0;
            for (size_t i = 0; i < n; i++) equal += a->data[i] == b->data[i];
            ok = n > 0 && (same ? equal == n : equal < n);
        }
        kgl_st_free(&g);
    }
    kgl_st_free(&f);
    return ok;
}

/* --weight-decay-on matrices, one step from the same start on the same
   batch: step one's gradient is the same in every run, and each update is
   θ · keep − (the optimiser's step of that gradient), keep = 1 − lr·wd or
   1 where no decay applies. So the matrices equal, bit for bit, those of
   the run decaying everything, and the vectors (a layer norm's gain) those
   of the run without decay, which differ from the decayed ones. */
TEST(weight_decay_on_matrices_decays_the_matrices_alone)
{
    const char *runs[3] = {"--weight-decay 0.5", "--weight-decay 0.5 --weight-decay-on matrices", "--weight-decay 0"};
    char path[3][600], cmd[4096];
    for (int r = 0; r < 3; r++) {
        snprintf(path[r], sizeof path[r], "%s/decay%d.st", T->tmp, r);
        snprintf(cmd, sizeof cmd, "train --steps 1 --quiet --seed 4 --lr 0.1 %s --save %s", runs[r], path[r]);
        if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("    %s\n", err);
    }
    CHECK(strcmp(meta(path[1], "weight_decay_on"), "matrices") == 0);
    CHECK(strcmp(meta(path[0], "weight_decay_on"), "all") == 0);
    CHECK(same_tensor(path[1], path[0], "attn.wq", true));
    CHECK(same_tensor(path[1], path[0], "entity_emb", true));
    CHECK(same_tensor(path[1], path[2], "ln1.gamma", true));
    CHECK(same_tensor(path[0], path[2], "ln1.gamma", false)); /* the decay does move a gain */
    CHECK(same_tensor(path[0], path[2], "attn.wq", false));
}

/* --layer-lr (README, Optimiser): the model marks its layers' own
   parameters, and only they change rate. One `kgl train` step at lr 0.1:
   with --layer-lr 0.5 the embeddings are, bit for bit, the default run's
   (the first step's gradients are the same, and their rate is lr), the
   layer's Wq and its norm's gain are not; --layer-lr 1 is the default's
   bits everywhere. The checkpoint keeps it (metadata layer_lr). */
TEST(layer_lr_changes_the_layers_rate_alone)
{
    const char *runs[3] = {"", "--layer-lr 0.5", "--layer-lr 1"};
    char path[3][600], cmd[4096];
    for (int r = 0; r < 3; r++) {
        snprintf(path[r], sizeof path[r], "%s/layerlr%d.st", T->tmp, r);
        snprintf(cmd, sizeof cmd, "train --steps 1 --quiet --seed 4 --lr 0.1 --weight-decay 0.2 %s --save %s", runs[r],
                 path[r]);
        if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("    %s\n", err);
    }
    CHECK(strtod(meta(path[1], "layer_lr"), NULL) == 0.5);
    CHECK(strtod(meta(path[0], "layer_lr"), NULL) == 1);
    CHECK(same_tensor(path[1], path[0], "entity_emb", true));
    CHECK(same_tensor(path[1], path[0], "relation_emb", true));
    CHECK(same_tensor(path[1], path[0], "attn.wq", false));
    CHECK(same_tensor(path[1], path[0], "ln1.gamma", false));
    CHECK(same_tensor(path[2], path[0], "attn.wq", true));
    CHECK(same_tensor(path[2], path[0], "ln1.gamma", true));
}

/* given[] with the named options marked. */
static void mark(bool *given, const char *const *names, int n)
{
    memset(given, 0, KGL_TRAIN_OPTIONS_MAX * sizeof *given);
    for (int k = 0; k < n; k++) given[kgl_train_option_named(names[k], strlen(names[k])) - kgl_train_options] = true;
}

/* The merge through the library, as a C program resuming would call it: a
   model option given must agree (the row that differs is returned, nothing
   merged), a training option given wins, one not given is the
   checkpoint's, the model is the checkpoint's, and Adam's constants follow
   the checkpoint's optimiser only. */
TEST(options_merge_checkpoint_keeps_given_training_options_and_refuses_another_model)
{
    static kgl_checkpoint ck;
    kgl_config_defaults(&ck.cfg);
    ck.cfg.dim = 16;
    kgl_train_state_defaults(&ck.st);
    ck.st.batch = 77, ck.st.base_lr = 0.25, ck.st.optim.beta2 = 0.5;
    bool given[KGL_TRAIN_OPTIONS_MAX];
    kgl_config cfg;
    kgl_train_state st;
    kgl_config_defaults(&cfg);
    kgl_train_state_defaults(&st);
    cfg.dim = 32;
    mark(given, (const char *const[]){"--dim"}, 1);
    const kgl_option *differs = kgl_options_merge_checkpoint(&cfg, &st, given, &ck);
    CHECK(differs && strcmp(differs->name, "--dim") == 0);
    CHECK(cfg.dim == 32 && st.batch != 77); /* nothing merged */

    kgl_config_defaults(&cfg);
    kgl_train_state_defaults(&st);
    cfg.dim = 16, st.batch = 5;
    mark(given, (const char *const[]){"--dim", "--batch"}, 2);
    CHECK(kgl_options_merge_checkpoint(&cfg, &st, given, &ck) == NULL);
    CHECK(st.batch == 5 && st.base_lr == 0.25 && cfg.dim == 16);
    CHECK(st.optim.beta2 == 0.5); /* the same optimiser: the checkpoint's constant */

    kgl_train_state_defaults(&st);
    kgl_optim_select(&st.optim, KGL_OPT_SGD);
    double own = st.optim.beta2;
    mark(given, (const char *const[]){"--optimizer"}, 1);
    st.optim.kind = KGL_OPT_SGD;
    CHECK(kgl_options_merge_checkpoint(&cfg, &st, given, &ck) == NULL);
    CHECK(st.optim.kind == KGL_OPT_SGD && st.optim.beta2 == own); /* another optimiser keeps its own */
}

/* Rules between options: the first broken one is said, none when they go
   together; --supervise-heads counts as given even when empty. */
TEST(options_conflict_names_the_rule_broken)
{
    bool given[KGL_TRAIN_OPTIONS_MAX];
    kgl_config cfg;
    kgl_train_state st;
    kgl_config_defaults(&cfg);
    kgl_train_state_defaults(&st);
    mark(given, NULL, 0);
    CHECK(kgl_options_conflict(&cfg, &st, given) == NULL);
    st.lookup = true, cfg.readout = KGL_READOUT_COMPLEX;
    const char *why = kgl_options_conflict(&cfg, &st, given);
    CHECK(why && strcmp(why, "--lookup needs --readout diagonal") == 0);
    kgl_train_state_defaults(&st);
    cfg.readout = KGL_READOUT_DIAGONAL, cfg.context = KGL_CONTEXT_GRAPH;
    mark(given, (const char *const[]){"--supervise-heads"}, 1);
    why = kgl_options_conflict(&cfg, &st, given);
    CHECK(why && strcmp(why, "--supervise-heads needs --context full") == 0);
    mark(given, (const char *const[]){"--neighbours"}, 1);
    CHECK(kgl_options_conflict(&cfg, &st, given) == NULL); /* the graph's own option */
    cfg.context = KGL_CONTEXT_FULL;
    why = kgl_options_conflict(&cfg, &st, given);
    CHECK(why && strcmp(why, "--neighbours needs --context graph") == 0);
}

/* --context none: the moot options named, the neighbourhood's cleared. */
TEST(options_without_layer_names_the_moot_and_clears_the_neighbourhood)
{
    bool given[KGL_TRAIN_OPTIONS_MAX];
    kgl_config cfg;
    kgl_train_state st;
    kgl_config_defaults(&cfg);
    kgl_train_state_defaults(&st);
    mark(given, NULL, 0);
    char list[256];
    cfg.context = KGL_CONTEXT_NONE;
    CHECK(kgl_options_without_layer(&cfg, &st, given, list, sizeof list) == 0 && list[0] == 0);
    cfg.qk_norm = true, cfg.layers = 3, cfg.query_relation = true, cfg.relation_token = true;
    cfg.outer_residual = true;
    st.reg.edge_dropout = 0.1;
    int n = kgl_options_without_layer(&cfg, &st, given, list, sizeof list);
    if (!CHECK(n == 6 && strcmp(list, " --qk-norm --layers --query-relation --relation-token --outer-residual "
                                      "--edge-dropout") == 0))
        printf("    %d: '%s'\n", n, list);
    CHECK(cfg.layers == 1 && !cfg.query_relation && !cfg.relation_token && st.reg.edge_dropout == 0 && cfg.qk_norm);
    CHECK(!cfg.outer_residual);
}

/* --json's echo: every option marked KGL_OPTION_ECHO under its key, a
   number unquoted, a word quoted. */
TEST(options_json_echoes_the_marked_options)
{
    kgl_config cfg;
    kgl_train_state st;
    kgl_run_options run;
    kgl_config_defaults(&cfg);
    kgl_train_state_defaults(&st);
    kgl_run_options_defaults(&run);
    cfg.context = KGL_CONTEXT_GRAPH;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!CHECK(f != NULL)) return;
    kgl_json_writer w;
    kgl_json_writer_init(&w, f);
    kgl_json_begin_object(&w);
    kgl_options_json(&w, &cfg, &st, &run);
    kgl_json_end_object(&w);
    kgl_json_writer_finish(&w);
    fclose(f);
    int echoed = 0, found = 0;
    for (int k = 0; k < kgl_n_train_options; k++) {
        const kgl_option *o = &kgl_train_options[k];
        if (!(o->flags & KGL_OPTION_ECHO)) continue;
        char key[200];
        snprintf(key, sizeof key, "\"%s\":", o->key);
        echoed++;
        found += text && strstr(text, key) != NULL;
    }
    CHECK(echoed > 0 && found == echoed);
    if (!CHECK(text && strstr(text, "\"context\":\"graph\""))) printf("    %s\n", text ? text : "");
    free(text);
}
