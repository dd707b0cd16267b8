/* option_rules.c — what kgl train's options say together, beyond each row
 * of the table (options.c): the options that cannot go together, those
 * that --context none makes moot, a resumed checkpoint's options merged
 * with those given, and the --json echo of the options. `given[k]` says
 * the option of row k was given (on the command line or in a recipe). */
#include <string.h>

#include "kgl/model.h"

/* Whether option `name` was given. */
static bool was_given(const bool *given, const char *name)
{
    const kgl_option *row = kgl_train_option_named(name, strlen(name));
    return given[row - kgl_train_options];
}

/* --supervise-heads as given or resumed (an empty value given is still given). */
static bool supervised(const kgl_train_state *st, const bool *given)
{
    return was_given(given, "--supervise-heads") || st->supervise[0];
}

int kgl_options_without_layer(kgl_config *cfg, kgl_train_state *st, const bool *given, char *list, size_t cap)
{
    struct {
        bool set;
        const char *name;
    } moot[] = {{cfg->ffn > 0, "--ffn"},
                {cfg->qk_norm, "--qk-norm"},
                {cfg->learn_temperature, "--temperature learn"},
                {cfg->layers > 1, "--layers"},
                {was_given(given, "--neighbours"), "--neighbours"},
                {cfg->query_relation, "--query-relation"},
                {cfg->hide_asked, "--hide-asked-relation"},
                {cfg->relation_token, "--relation-token"},
                {cfg->outer_residual, "--outer-residual"},
                {cfg->candidate_states > 0, "--candidate-states"},
                {cfg->head_state_input, "--head-state input"},
                {st->reg.edge_dropout > 0, "--edge-dropout"},
                {st->reg.source_dropout > 0, "--source-dropout"},
                {st->reg.layer_dropout > 0, "--layer-dropout"}};
    if (cap) list[0] = 0;
    int n = 0;
    for (size_t k = 0; k < sizeof moot / sizeof moot[0]; k++)
        if (moot[k].set) {
            size_t used = strlen(list);
            if (used < cap) snprintf(list + used, cap - used, " %s", moot[k].name);
            n++;
        }
    cfg->query_relation = cfg->hide_asked = cfg->relation_token = cfg->outer_residual = cfg->head_state_input = false;
    cfg->candidate_states = 0;
    cfg->layers = 1;
    st->reg.edge_dropout = st->reg.source_dropout = st->reg.layer_dropout = 0;
    return n;
}

const char *kgl_options_conflict(const kgl_config *cfg, const kgl_train_state *st, const bool *given)
{
    bool complex = cfg->readout != KGL_READOUT_DIAGONAL, supervision = supervised(st, given);
    const struct {
        bool both;
        const char *why;
    } rules[] = {
        /* a relation reads whole heads' columns */
        {st->lookup && complex, "--lookup needs --readout diagonal"},
        /* these are per (example, tail): 1-N examples have many tails */
        {st->reg.n3 > 0 && st->kvsall, "--n3 needs --targets 1vsall (one tail per example)"},
        {supervision && st->kvsall, "--supervise-heads needs --targets 1vsall (one tail per example)"},
        /* supervision and lookup read the n x n weights of the full context */
        {supervision && cfg->context != KGL_CONTEXT_FULL, "--supervise-heads needs --context full"},
        {st->lookup && cfg->context != KGL_CONTEXT_FULL, "--lookup needs --context full"},
        /* (--context none warns instead: kgl_options_without_layer) */
        {st->lookup && cfg->layers > 1, "--lookup needs one layer (it fixes the first layer's values)"},
        {was_given(given, "--neighbours") && cfg->context == KGL_CONTEXT_FULL, "--neighbours needs --context graph"},
        {was_given(given, "--query-relation") && cfg->context == KGL_CONTEXT_FULL,
         "--query-relation needs --context graph"},
        {st->reg.edge_dropout > 0 && cfg->context != KGL_CONTEXT_GRAPH, "--edge-dropout needs --context graph"},
        {st->reg.source_dropout > 0 && cfg->context != KGL_CONTEXT_GRAPH, "--source-dropout needs --context graph"},
        /* without the input added back, a dropped layer would leave a question no state */
        {st->reg.layer_dropout > 0 && !cfg->outer_residual && cfg->context != KGL_CONTEXT_NONE,
         "--layer-dropout needs --outer-residual"},
        /* a question's direction is its asked relation's row (r ≥ m: the reciprocal of a head question) */
        {cfg->head_state_input && cfg->context != KGL_CONTEXT_NONE && (!cfg->query_relation || !cfg->reciprocal),
         "--head-state input needs --query-relation and reciprocal relations (a question knows its direction by its "
         "asked relation)"},
        {was_given(given, "--hide-asked-relation") && !cfg->query_relation && cfg->context != KGL_CONTEXT_NONE,
         "--hide-asked-relation needs --query-relation (a state per question)"},
    };
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++)
        if (rules[k].both) return rules[k].why;
    return NULL;
}

/* Whether two values of a model option are the same setting. */
static bool same_value(const kgl_option *row, const void *a, const void *b)
{
    switch (row->type) {
    case KGL_OPTION_REAL: return *(const double *)a == *(const double *)b;
    case KGL_OPTION_WORD_OR_NUMBER: {
        int k = *(const int *)a;
        const double *x = (const double *)((const char *)a - row->offset + row->number_offset);
        const double *y = (const double *)((const char *)b - row->offset + row->number_offset);
        return k == *(const int *)b && (k < row->n_words || *x == *y);
    }
    default: return memcmp(a, b, row->size) == 0;
    }
}

const kgl_option *kgl_options_merge_checkpoint(kgl_config *cfg, kgl_train_state *st, const bool *given,
                                               const kgl_checkpoint *ck)
{
    kgl_config saved_cfg = ck->cfg;
    kgl_train_state saved = ck->st;
    for (int k = 0; k < kgl_n_train_options; k++) {
        const kgl_option *row = &kgl_train_options[k];
        void *mine = kgl_option_value(row, cfg, st, NULL);
        const void *theirs = kgl_option_value(row, &saved_cfg, &saved, NULL);
        if (row->kind == KGL_OPTION_MODEL && given[k] && !same_value(row, mine, theirs)) return row;
        if (row->kind == KGL_OPTION_TRAINING && !given[k]) memcpy(mine, theirs, row->size);
    }
    *cfg = ck->cfg;
    /* Adam's constants have no option: always the checkpoint's (another
       optimiser than the checkpoint's starts afresh, with its own) */
    const kgl_optim *s = &ck->st.optim;
    if (st->optim.kind == s->kind) st->optim.beta1 = s->beta1, st->optim.beta2 = s->beta2, st->optim.eps = s->eps;
    return NULL;
}

void kgl_options_json(kgl_json_writer *w, kgl_config *cfg, kgl_train_state *st, kgl_run_options *run)
{
    for (int k = 0; k < kgl_n_train_options; k++) {
        const kgl_option *row = &kgl_train_options[k];
        if (!(row->flags & KGL_OPTION_ECHO)) continue;
        char value[4096];
        kgl_option_format(row, kgl_option_value(row, cfg, st, run), value, sizeof value);
        kgl_json_key(w, row->key);
        bool number = row->type == KGL_OPTION_WHOLE || row->type == KGL_OPTION_SEED || row->type == KGL_OPTION_REAL;
        if (number) kgl_json_put_number_text(w, value);
        else kgl_json_put_string(w, value);
    }
}
