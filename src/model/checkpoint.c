/* checkpoint.c — the model and its optimiser state as a safetensors file
 * (README, "The model, exactly"), written atomically and validated on load. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

#define FORMAT "kgl/1"

/* Each optimiser's state in the file: a tensor per parameter for each of
   its buffers (m, then v), named by these prefixes; a sum of squares is
   never negative, which loading checks. */
static const struct optimizer_state {
    int n_state;
    const char *prefix[2];
    bool squares[2];
} optimizer_states[] = {
    [KGL_OPT_ADAM] = {2, {"adam.m.", "adam.v."}, {false, true}},
    [KGL_OPT_SGD] = {1, {"sgd.momentum.", NULL}, {false, false}},
    [KGL_OPT_ADAGRAD] = {1, {"adagrad.sum.", NULL}, {true, false}},
};

bool kgl_checkpoint_save(const char *path, const kgl_model *m, const kgl_dataset *ds, const kgl_train_state *st,
                         char *err, size_t err_cap)
{
    const kgl_params *ps = &m->params;
    const kgl_config *c = &m->cfg;
    const struct optimizer_state *os = &optimizer_states[st->optim.kind];
    /* parameters, then the optimiser's state under adam.m./adam.v. (or
       sgd.momentum. for SGD, adagrad.sum. for Adagrad) */
    int n_state = os->n_state;
    int n = ps->n * (1 + n_state);
    kgl_st_entry *entries = kgl_xcalloc((size_t)n, sizeof *entries);
    char(*names)[KGL_NAME_MAX + 16] = kgl_xcalloc((size_t)n, sizeof *names);
    for (int k = 0; k < ps->n; k++) {
        const kgl_param *p = &ps->p[k];
        const kgl_real *data[3] = {p->t.data, p->m, p->v};
        const char *prefix[3] = {"", os->prefix[0], os->prefix[1]};
        for (int s = 0; s <= n_state; s++) {
            int e = s * ps->n + k;
            snprintf(names[e], sizeof names[e], "%s%s", prefix[s], p->name);
            entries[e].name = names[e];
            entries[e].data = data[s];
            if (p->vector) { /* [1, d] in memory, [d] in the file, as the README lists it */
                entries[e].ndim = 1;
                entries[e].shape[0] = p->t.cols;
            } else {
                entries[e].ndim = 2;
                entries[e].shape[0] = p->t.rows;
                entries[e].shape[1] = p->t.cols;
            }
        }
    }
    char d_model[32], heads[32], ffn[32], scale[64], init_scale[64], step[32], seed[32], lr[64], wd[64], mom[64],
        b1[64], b2[64], eps[64], batch[32], aux[64], shuffle[96], cursor[32];
    snprintf(d_model, sizeof d_model, "%d", c->dim);
    snprintf(heads, sizeof heads, "%d", c->heads);
    snprintf(ffn, sizeof ffn, "%d", c->ffn);
    if (c->scale == KGL_SCALE_SQRT) snprintf(scale, sizeof scale, "sqrt");
    else if (c->scale == KGL_SCALE_NONE) snprintf(scale, sizeof scale, "none");
    else snprintf(scale, sizeof scale, "%.17g", c->scale_value);
    snprintf(init_scale, sizeof init_scale, "%.17g", c->init_scale);
    snprintf(step, sizeof step, "%ld", st->step);
    snprintf(seed, sizeof seed, "%" PRIu64, st->seed);
    snprintf(lr, sizeof lr, "%.17g", st->optim.lr);
    snprintf(wd, sizeof wd, "%.17g", st->optim.weight_decay);
    snprintf(mom, sizeof mom, "%.17g", st->optim.momentum);
    snprintf(b1, sizeof b1, "%.17g", st->optim.beta1);
    snprintf(b2, sizeof b2, "%.17g", st->optim.beta2);
    snprintf(eps, sizeof eps, "%.17g", st->optim.eps);
    snprintf(batch, sizeof batch, "%d", st->batch);
    snprintf(aux, sizeof aux, "%.17g", st->aux_weight);
    snprintf(shuffle, sizeof shuffle, "%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64, st->epoch_rng.s[0],
             st->epoch_rng.s[1], st->epoch_rng.s[2], st->epoch_rng.s[3]);
    snprintf(cursor, sizeof cursor, "%d", st->cursor);
    char drop[64], attn_drop[64], hidden_drop[64], smooth[64], rel_loss[64], drop_state[96], warmup[32], total[32], floor_[64],
        base_lr[64];
    snprintf(drop, sizeof drop, "%.17g", st->reg.dropout);
    snprintf(attn_drop, sizeof attn_drop, "%.17g", st->reg.attn_dropout);
    snprintf(hidden_drop, sizeof hidden_drop, "%.17g", st->reg.hidden_dropout);
    snprintf(smooth, sizeof smooth, "%.17g", st->reg.label_smoothing);
    snprintf(rel_loss, sizeof rel_loss, "%.17g", st->reg.relation_loss);
    char n3[32], entity_drop[32], edge_drop[32], source_drop[32];
    snprintf(n3, sizeof n3, "%.17g", st->reg.n3);
    snprintf(entity_drop, sizeof entity_drop, "%.17g", st->reg.entity_dropout);
    snprintf(edge_drop, sizeof edge_drop, "%.17g", st->reg.edge_dropout);
    snprintf(source_drop, sizeof source_drop, "%.17g", st->reg.source_dropout);
    snprintf(drop_state, sizeof drop_state, "%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64,
             st->dropout_rng.s[0], st->dropout_rng.s[1], st->dropout_rng.s[2], st->dropout_rng.s[3]);
    snprintf(warmup, sizeof warmup, "%ld", st->sched.warmup);
    snprintf(total, sizeof total, "%ld", st->sched.total);
    snprintf(floor_, sizeof floor_, "%.17g", st->sched.floor);
    snprintf(base_lr, sizeof base_lr, "%.17g", st->base_lr > 0 ? st->base_lr : st->optim.lr);
    static const char *const sched_names[] = {"constant", "cosine", "linear"};
    char neighbours[24];
    snprintf(neighbours, sizeof neighbours, "%d", c->neighbours);
    char *entities = kgl_join(ds->entity_names, ds->n_entities, '\n');
    char *relations = kgl_join(ds->relation_names, ds->n_relations, '\n');
    const char *meta[] = {
        "format", FORMAT, "d_model", d_model, "n_heads", heads, "ffn", ffn, "scale", scale,
        "init_scale", init_scale, "reciprocal", c->reciprocal ? "1" : "0", "step", step, "seed", seed,
        "entities", entities, "relations", relations, "optimizer", kgl_optimizer_names[st->optim.kind], "lr", lr,
        "weight_decay", wd, "momentum", mom, "beta1", b1, "beta2", b2, "eps", eps, "batch", batch,
        "aux_weight", aux, "supervise_heads", st->supervise, "shuffle_state", shuffle, "batch_cursor", cursor,
        "qk_norm", c->qk_norm ? "1" : "0", "temperature", c->learn_temperature ? "learn" : "fixed",
        "frozen", st->freeze_embeddings ? "entity_emb" : "", "lookup", st->lookup ? "1" : "0",
        "dropout", drop, "attn_dropout", attn_drop, "hidden_dropout", hidden_drop, "entity_dropout", entity_drop,
        "edge_dropout", edge_drop, "source_dropout", source_drop,
        "label_smoothing", smooth,
        "relation_loss", rel_loss, "n3", n3, "dropout_state", drop_state, "lr_schedule", sched_names[st->sched.kind], "lr_warmup", warmup,
        "lr_total", total, "lr_floor", floor_, "base_lr", base_lr,
        "targets", st->kvsall ? "kvsall" : "1vsall",
        "readout", c->readout == KGL_READOUT_COMPLEX ? "complex" : "diagonal", "ensemble_members", st->members,
        "context", kgl_context_name(c->context), "neighbours", neighbours, "query", c->query_relation ? "relation" : "entity",
        "asked_edges", c->hide_asked ? "hidden" : "shown",
        "precision", KGL_PRECISION,
        "run_id", st->run_id, /* last: left out when empty */
    };
    int n_meta = (int)(sizeof meta / sizeof meta[0]) / 2 - (st->run_id[0] ? 0 : 1);
    bool ok = kgl_st_write(path, entries, n, meta, n_meta, err, err_cap);
    free(entities);
    free(relations);
    free(entries);
    free(names);
    return ok;
}

/* ---- loading --------------------------------------------------------------- */

static bool fail(char *err, size_t cap, const char *path, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool fail(char *err, size_t cap, const char *path, const char *fmt, ...)
{
    int k = snprintf(err, cap, "%s: ", path);
    va_list ap;
    va_start(ap, fmt);
    if (k >= 0 && (size_t)k < cap) vsnprintf(err + k, cap - (size_t)k, fmt, ap);
    va_end(ap);
    return false;
}

static const char *need_meta(const kgl_st_file *f, const char *key, const char *path, char *err, size_t cap)
{
    const char *v = kgl_st_meta(f, key);
    if (!v) fail(err, cap, path, "metadata has no '%s' (is this a kgl checkpoint?)", key);
    return v;
}

static bool meta_long(const kgl_st_file *f, const char *key, long lo, long hi, long *out, const char *path, char *err,
                      size_t cap)
{
    const char *v = need_meta(f, key, path, err, cap);
    if (!v) return false;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return fail(err, cap, path, "metadata '%s' is '%s', expected a whole number from %ld to %ld", key, v, lo, hi);
    *out = x;
    return true;
}

/* The precision the metadata names, "f32" or "f64" (absent: "f64", saved
   before float32 existed). */
static bool file_precision(const kgl_st_file *f, char precision[4], const char *path, char *err, size_t cap)
{
    const char *v = kgl_st_meta(f, "precision");
    if (v && strcmp(v, "f32") != 0 && strcmp(v, "f64") != 0)
        return fail(err, cap, path, "metadata 'precision' is '%s', expected f32 or f64", v);
    snprintf(precision, 4, "%s", v ? v : "f64");
    return true;
}

/* A finite number from lo to hi; lo itself excluded when lo_open, hi when hi_open. */
static bool meta_range(const kgl_st_file *f, const char *key, double lo, bool lo_open, double hi, bool hi_open,
                       double *out, const char *path, char *err, size_t cap)
{
    const char *v = need_meta(f, key, path, err, cap);
    if (!v) return false;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x) || x < lo || x > hi || (lo_open && x == lo) || (hi_open && x == hi))
        return fail(err, cap, path, "metadata '%s' is '%s', expected a number %s %g %s %g", key, v,
                    lo_open ? "above" : "from", lo, hi_open ? "to below" : lo_open ? "and at most" : "to", hi);
    *out = x;
    return true;
}

static bool meta_double(const kgl_st_file *f, const char *key, double lo, double hi, double *out, const char *path,
                        char *err, size_t cap)
{
    return meta_range(f, key, lo, false, hi, false, out, path, err, cap);
}

/* The names list (joined by \n) must be the loaded one, in id order. */
static bool same_names(const char *joined, char *const *names, int n, const char *what, const char *plural,
                       const char *path, char *err, size_t cap)
{
    const char *p = joined;
    int count = 0;
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (count < n && (strlen(names[count]) != len || memcmp(names[count], p, len) != 0))
            return fail(err, cap, path, "%s %d is '%.*s' in the checkpoint but '%s' in the triples", what, count,
                        (int)len, p, names[count]);
        count++;
        if (!nl) break;
        p = nl + 1;
    }
    if (count != n)
        return fail(err, cap, path, "the checkpoint has %d %s, the triples have %d (a model is tied to its data)",
                    count, plural, n);
    return true;
}

static bool check_tensor(const kgl_st_file *f, const char *name, const kgl_tensor *want, bool vec, const char *path,
                         char *err, size_t cap, bool required, bool *present)
{
    const kgl_st_tensor *t = kgl_st_find(f, name);
    *present = t != NULL;
    if (!t) return required ? fail(err, cap, path, "tensor '%s' is missing", name) : true;
    bool ok = vec ? t->ndim == 1 && t->shape[0] == want->cols
                  : t->ndim == 2 && t->shape[0] == want->rows && t->shape[1] == want->cols;
    if (!ok) {
        if (vec) return fail(err, cap, path, "tensor '%s' should have shape [%d]", name, want->cols);
        return fail(err, cap, path, "tensor '%s' should have shape [%d, %d] for this model", name, want->rows,
                    want->cols);
    }
    size_t n = kgl_numel(want);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(t->data[i])) return fail(err, cap, path, "tensor '%s' holds %g at index %zu", name, t->data[i], i);
    return true;
}

/* Adam's second moment is a running mean of squared gradients: a negative
   value (an edited file) would make its square root NaN at the next step. */
static bool no_negative(const kgl_st_file *f, const char *name, size_t n, const char *path, char *err, size_t cap)
{
    const kgl_st_tensor *t = kgl_st_find(f, name);
    for (size_t i = 0; t && i < n; i++)
        if (t->data[i] < 0)
            return fail(err, cap, path,
                        "tensor '%s' holds %g at index %zu; Adam's second moment (a mean of squared gradients) cannot "
                        "be negative",
                        name, t->data[i], i);
    return true;
}

/* Validates the read file `f` (taken over: freed on failure) against the
   names of ds and fills ck. */
static bool open_read(kgl_st_file *f, const char *path, const kgl_dataset *ds, kgl_checkpoint *ck, char *err,
                      size_t cap)
{
    ck->file = f;
    const char *v;
    long x;
    kgl_config *c = &ck->cfg;
    kgl_config_defaults(c);
    kgl_train_state *st = &ck->st;
    kgl_optim_defaults(&st->optim);
    if (!(v = need_meta(f, "format", path, err, cap))) goto bad;
    if (strcmp(v, FORMAT) != 0) {
        fail(err, cap, path, "format is '%s'; this kgl reads '%s'", v, FORMAT);
        goto bad;
    }
    if (!meta_long(f, "d_model", 1, 1 << 20, &x, path, err, cap)) goto bad;
    c->dim = (int)x;
    if (!meta_long(f, "n_heads", 1, KGL_MAX_HEADS, &x, path, err, cap)) goto bad;
    c->heads = (int)x;
    if (!meta_long(f, "ffn", 0, 1 << 20, &x, path, err, cap)) goto bad;
    c->ffn = (int)x;
    if (!(v = need_meta(f, "scale", path, err, cap))) goto bad;
    if (strcmp(v, "sqrt") == 0) {
        c->scale = KGL_SCALE_SQRT;
    } else if (strcmp(v, "none") == 0) {
        c->scale = KGL_SCALE_NONE;
    } else {
        c->scale = KGL_SCALE_VALUE;
        if (!meta_double(f, "scale", 1e-300, 1e300, &c->scale_value, path, err, cap)) goto bad;
    }
    if (!meta_double(f, "init_scale", 0, 1e6, &c->init_scale, path, err, cap)) goto bad;
    if (!meta_long(f, "reciprocal", 0, 1, &x, path, err, cap)) goto bad;
    c->reciprocal = x == 1;
    /* the remedies (absent in checkpoints of the plain specified layer) */
    if (kgl_st_meta(f, "qk_norm")) {
        if (!meta_long(f, "qk_norm", 0, 1, &x, path, err, cap)) goto bad;
        c->qk_norm = x == 1;
    }
    if ((v = kgl_st_meta(f, "temperature"))) {
        if (strcmp(v, "learn") != 0 && strcmp(v, "fixed") != 0) {
            fail(err, cap, path, "metadata 'temperature' is '%s', expected learn or fixed", v);
            goto bad;
        }
        c->learn_temperature = strcmp(v, "learn") == 0;
    }
    if ((v = kgl_st_meta(f, "readout"))) { /* absent: the specified readout */
        if (strcmp(v, "complex") != 0 && strcmp(v, "diagonal") != 0) {
            fail(err, cap, path, "metadata 'readout' is '%s', expected diagonal or complex", v);
            goto bad;
        }
        c->readout = strcmp(v, "complex") == 0 ? KGL_READOUT_COMPLEX : KGL_READOUT_DIAGONAL;
    }
    if ((v = kgl_st_meta(f, "context"))) { /* absent: the specified (full) context */
        static const char *const words[] = {"full", "graph", "none"};
        int k = 0;
        while (k < 3 && strcmp(v, words[k]) != 0) k++;
        if (k == 3) {
            fail(err, cap, path, "metadata 'context' is '%s', expected full, graph or none", v);
            goto bad;
        }
        c->context = (kgl_context_kind)k;
        if (c->context == KGL_CONTEXT_GRAPH) {
            if (!meta_long(f, "neighbours", 1, KGL_MAX_NEIGHBOURS, &x, path, err, cap)) goto bad;
            c->neighbours = (int)x;
        }
    }
    if ((v = kgl_st_meta(f, "query"))) { /* absent: the query token is the entity alone */
        if (strcmp(v, "relation") != 0 && strcmp(v, "entity") != 0) {
            fail(err, cap, path, "metadata 'query' is '%s', expected entity or relation", v);
            goto bad;
        }
        c->query_relation = strcmp(v, "relation") == 0;
    }
    if ((v = kgl_st_meta(f, "asked_edges"))) { /* absent: a question sees every edge but its own triple's */
        if (strcmp(v, "hidden") != 0 && strcmp(v, "shown") != 0) {
            fail(err, cap, path, "metadata 'asked_edges' is '%s', expected shown or hidden", v);
            goto bad;
        }
        c->hide_asked = strcmp(v, "hidden") == 0;
        if (c->hide_asked && !c->query_relation) {
            fail(err, cap, path, "metadata 'asked_edges' is 'hidden' but 'query' is not 'relation'");
            goto bad;
        }
    }
    if (!file_precision(f, ck->precision, path, err, cap)) goto bad;
    if (!meta_long(f, "step", 0, 1L << 53, &st->step, path, err, cap)) goto bad;
    if (!(v = need_meta(f, "seed", path, err, cap))) goto bad;
    {
        char *end;
        errno = 0;
        st->seed = strtoull(v, &end, 10);
        /* the rule of --seed: digits only ("-1" would wrap to 2^64 - 1) */
        if (errno || end == v || *end || v[0] < '0' || v[0] > '9') {
            fail(err, cap, path, "metadata 'seed' is '%s', expected a whole number >= 0", v);
            goto bad;
        }
    }
    if (!(v = need_meta(f, "entities", path, err, cap))) goto bad;
    if (!same_names(v, ds->entity_names, ds->n_entities, "entity", "entities", path, err, cap)) goto bad;
    if (!(v = need_meta(f, "relations", path, err, cap))) goto bad;
    if (!same_names(v, ds->relation_names, ds->n_relations, "relation", "relations", path, err, cap)) goto bad;
    c->n_entities = ds->n_entities;
    c->n_relations = ds->n_relations;
    const char *cfg_err = kgl_config_error(c);
    if (cfg_err) {
        fail(err, cap, path, "invalid model: %s", cfg_err);
        goto bad;
    }

    /* training options: optional (a checkpoint written elsewhere may lack them) */
    if ((v = kgl_st_meta(f, "optimizer"))) {
        int k = 0;
        while (k < KGL_N_OPTIMIZERS && strcmp(v, kgl_optimizer_names[k]) != 0) k++;
        if (k == KGL_N_OPTIMIZERS) {
            fail(err, cap, path, "optimizer '%s' is none of adam, sgd, adagrad", v);
            goto bad;
        }
        st->optim.kind = (kgl_optimizer_kind)k;
    }
    struct {
        const char *key;
        double *dst, lo, hi;
    } opt[] = {{"lr", &st->optim.lr, 0, 1e6},
               {"weight_decay", &st->optim.weight_decay, 0, 1e6},
               {"momentum", &st->optim.momentum, 0, 1},
               {"aux_weight", &st->aux_weight, 0, 1e6}};
    st->aux_weight = 1;
    for (size_t k = 0; k < sizeof opt / sizeof opt[0]; k++)
        if (kgl_st_meta(f, opt[k].key) && !meta_double(f, opt[k].key, opt[k].lo, opt[k].hi, opt[k].dst, path, err, cap))
            goto bad;
    /* Adam divides by 1 − betaᵗ (beta below 1) and by √v̂ + eps (eps above 0) */
    struct {
        const char *key;
        double *dst;
        bool is_eps;
    } adam[] = {{"beta1", &st->optim.beta1, false}, {"beta2", &st->optim.beta2, false}, {"eps", &st->optim.eps, true}};
    for (size_t k = 0; k < sizeof adam / sizeof adam[0]; k++)
        if (kgl_st_meta(f, adam[k].key) && !meta_range(f, adam[k].key, 0, adam[k].is_eps, 1, !adam[k].is_eps,
                                                       adam[k].dst, path, err, cap))
            goto bad;
    st->batch = 1024;
    if (kgl_st_meta(f, "batch")) {
        if (!meta_long(f, "batch", 1, 1L << 30, &x, path, err, cap)) goto bad;
        st->batch = (int)x;
    }
    if ((v = kgl_st_meta(f, "supervise_heads"))) snprintf(st->supervise, sizeof st->supervise, "%s", v);
    if ((v = kgl_st_meta(f, "ensemble_members"))) {
        if (strlen(v) >= sizeof st->members) {
            fail(err, cap, path, "metadata 'ensemble_members' is longer than %zu bytes", sizeof st->members - 1);
            goto bad;
        }
        snprintf(st->members, sizeof st->members, "%s", v);
    }
    if ((v = kgl_st_meta(f, "run_id"))) {
        if (strlen(v) != sizeof st->run_id - 1 || strspn(v, "0123456789abcdef") != strlen(v)) {
            fail(err, cap, path, "metadata 'run_id' is '%s', expected 16 hexadecimal digits", v);
            goto bad;
        }
        memcpy(st->run_id, v, sizeof st->run_id);
    }
    if ((v = kgl_st_meta(f, "frozen"))) {
        if (*v && strcmp(v, "entity_emb") != 0) {
            fail(err, cap, path, "metadata 'frozen' is '%s'; only entity_emb can be frozen", v);
            goto bad;
        }
        st->freeze_embeddings = *v != 0;
    }
    if (kgl_st_meta(f, "lookup")) {
        if (!meta_long(f, "lookup", 0, 1, &x, path, err, cap)) goto bad;
        st->lookup = x == 1;
    }
    if ((v = kgl_st_meta(f, "shuffle_state"))) {
        int used = 0;
        if (sscanf(v, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 "%n", &st->epoch_rng.s[0], &st->epoch_rng.s[1],
                   &st->epoch_rng.s[2], &st->epoch_rng.s[3], &used) != 4 ||
            v[used] != 0) {
            fail(err, cap, path, "metadata 'shuffle_state' is '%s', expected four hexadecimal words", v);
            goto bad;
        }
        if (!meta_long(f, "batch_cursor", 0, 1L << 30, &x, path, err, cap)) goto bad;
        st->cursor = (int)x;
    } else {
        kgl_rng_seed(&st->epoch_rng, st->seed ^ 0x53485546464c45ULL);
    }
    st->optim.step = st->step;
    if ((v = kgl_st_meta(f, "targets"))) { /* absent in checkpoints written before KvsAll: 1vsall */
        if (strcmp(v, "kvsall") != 0 && strcmp(v, "1vsall") != 0) {
            fail(err, cap, path, "metadata 'targets' is '%s', expected 1vsall or kvsall", v);
            goto bad;
        }
        st->kvsall = strcmp(v, "kvsall") == 0;
    }

    /* regularisers and schedule (absent in checkpoints written before them) */
    {
        struct {
            const char *key;
            double *dst, lo, hi;
        } reg[] = {{"dropout", &st->reg.dropout, 0, 0.999999},
                   {"attn_dropout", &st->reg.attn_dropout, 0, 0.999999},
                   {"hidden_dropout", &st->reg.hidden_dropout, 0, 0.999999},
                   {"entity_dropout", &st->reg.entity_dropout, 0, 0.999999},
                   {"edge_dropout", &st->reg.edge_dropout, 0, 0.999999},
                   {"source_dropout", &st->reg.source_dropout, 0, 0.999999},
                   {"label_smoothing", &st->reg.label_smoothing, 0, 1},
                   {"relation_loss", &st->reg.relation_loss, 0, 100},
                   {"n3", &st->reg.n3, 0, 100},
                   {"lr_floor", &st->sched.floor, 0, 1},
                   {"base_lr", &st->base_lr, 0, 1e6}};
        st->base_lr = st->optim.lr;
        for (size_t k = 0; k < sizeof reg / sizeof reg[0]; k++)
            if (kgl_st_meta(f, reg[k].key) &&
                !meta_double(f, reg[k].key, reg[k].lo, reg[k].hi, reg[k].dst, path, err, cap))
                goto bad;
        if ((v = kgl_st_meta(f, "dropout_state"))) {
            int used = 0;
            kgl_rng *r = &st->dropout_rng;
            if (sscanf(v, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 "%n", &r->s[0], &r->s[1], &r->s[2], &r->s[3],
                       &used) != 4 ||
                v[used] != 0) {
                fail(err, cap, path, "metadata 'dropout_state' is '%s', expected four hexadecimal words", v);
                goto bad;
            }
            st->has_dropout_rng = true;
        }
        if ((v = kgl_st_meta(f, "lr_schedule"))) {
            if (strcmp(v, "constant") == 0) st->sched.kind = KGL_SCHED_CONSTANT;
            else if (strcmp(v, "cosine") == 0) st->sched.kind = KGL_SCHED_COSINE;
            else if (strcmp(v, "linear") == 0) st->sched.kind = KGL_SCHED_LINEAR;
            else {
                fail(err, cap, path, "metadata 'lr_schedule' is '%s', expected constant, cosine or linear", v);
                goto bad;
            }
        }
        if (kgl_st_meta(f, "lr_warmup")) {
            if (!meta_long(f, "lr_warmup", 0, 1L << 40, &x, path, err, cap)) goto bad;
            st->sched.warmup = x;
        }
        if (kgl_st_meta(f, "lr_total")) {
            if (!meta_long(f, "lr_total", 0, 1L << 40, &x, path, err, cap)) goto bad;
            st->sched.total = x;
        }
    }

    /* The sizes in the metadata against the file's own tensors before any
       allocation is sized by them: an edited d_model or ffn cannot make the
       probe model below larger than the tensors this file holds. */
    {
        struct {
            const char *name;
            int rows, cols;
            bool needed;
        } sized[] = {{"entity_emb", c->n_entities, c->dim, true},
                     {"attn.wq", c->dim, c->dim, c->context != KGL_CONTEXT_NONE},
                     {"ffn.w1", c->dim, c->ffn, c->ffn > 0}};
        for (size_t k = 0; k < sizeof sized / sizeof sized[0]; k++) {
            if (!sized[k].needed) continue;
            const kgl_st_tensor *t = kgl_st_find(f, sized[k].name);
            if (!t) {
                fail(err, cap, path, "tensor '%s' is missing", sized[k].name);
                goto bad;
            }
            if (t->ndim != 2 || t->shape[0] != sized[k].rows || t->shape[1] != sized[k].cols) {
                char shape[64];
                if (t->ndim == 2) snprintf(shape, sizeof shape, "[%" PRId64 ", %" PRId64 "]", t->shape[0], t->shape[1]);
                else snprintf(shape, sizeof shape, "[%" PRId64 "]", t->shape[0]);
                fail(err, cap, path,
                     "tensor '%s' has shape %s but the metadata (d_model %d, ffn %d) and the %d entities need [%d, %d]",
                     sized[k].name, shape, c->dim, c->ffn, c->n_entities, sized[k].rows, sized[k].cols);
                goto bad;
            }
        }
    }

    /* every tensor the model needs, with its shape; optimiser state all or none */
    {
        kgl_model probe;
        kgl_model_create(&probe, c);
        const struct optimizer_state *os = &optimizer_states[st->optim.kind];
        int state_found = 0, state_needed = 0;
        bool ok = true;
        for (int k = 0; k < probe.params.n && ok; k++) {
            const kgl_param *p = &probe.params.p[k];
            bool present;
            ok = check_tensor(f, p->name, &p->t, p->vector, path, err, cap, true, &present);
            char name[KGL_NAME_MAX + 16];
            for (int s = 0; s < os->n_state && ok; s++) {
                snprintf(name, sizeof name, "%s%s", os->prefix[s], p->name);
                ok = check_tensor(f, name, &p->t, p->vector, path, err, cap, false, &present);
                if (ok && present && os->squares[s]) ok = no_negative(f, name, kgl_numel(&p->t), path, err, cap);
                state_needed++;
                state_found += present;
            }
        }
        if (ok && state_found && state_found != state_needed)
            ok = fail(err, cap, path, "optimiser state is incomplete (%d of %d tensors)", state_found, state_needed);
        /* and nothing else: every tensor of the file is one of those */
        for (int k = 0; k < f->n && ok; k++) {
            const char *name = f->tensors[k].name;
            bool expected = false;
            for (int q = 0; q < probe.params.n && !expected; q++) {
                const char *pn = probe.params.p[q].name;
                char with[KGL_NAME_MAX + 16];
                expected = strcmp(name, pn) == 0;
                for (int s = 0; s < os->n_state && !expected && state_found; s++) {
                    snprintf(with, sizeof with, "%s%s", os->prefix[s], pn);
                    expected = strcmp(name, with) == 0;
                }
            }
            if (!expected)
                ok = fail(err, cap, path, "unexpected tensor '%s' for this model (d_model %d, ffn %d, optimizer %s)",
                          name, c->dim, c->ffn, kgl_optimizer_names[st->optim.kind]);
        }
        kgl_model_free(&probe);
        if (!ok) goto bad;
        ck->has_state = state_found > 0;
    }
    return true;
bad:
    kgl_st_free(f);
    free(f);
    ck->file = NULL;
    return false;
}

bool kgl_checkpoint_precision(const char *path, char precision[4], char *err, size_t cap)
{
    kgl_st_file f;
    if (!kgl_st_read_header(path, &f, err, cap)) return false;
    bool ok = file_precision(&f, precision, path, err, cap);
    kgl_st_free(&f);
    return ok;
}

bool kgl_checkpoint_open(const char *path, const kgl_dataset *ds, kgl_checkpoint *ck, char *err, size_t cap)
{
    memset(ck, 0, sizeof *ck);
    kgl_st_file *f = kgl_xcalloc(1, sizeof *f);
    if (!kgl_st_read(path, f, err, cap)) {
        free(f);
        return false;
    }
    return open_read(f, path, ds, ck, err, cap);
}

/* Splits a checkpoint's names list ("a\nb\nc") into owned strings, which
   must be strictly increasing in byte order: kgl gives ids in that order,
   and kgl_dataset_entity_id finds a name by binary search. */
static bool split_names(const char *joined, const char *what, char ***out, int *n_out, const char *path, char *err,
                        size_t cap)
{
    int n = 1;
    for (const char *p = joined; *p; p++) n += *p == '\n';
    char **names = kgl_xcalloc((size_t)n, sizeof *names);
    const char *p = joined;
    for (int k = 0; k < n; k++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        names[k] = kgl_xmalloc(len + 1);
        memcpy(names[k], p, len);
        names[k][len] = 0;
        p = nl ? nl + 1 : p + len;
        bool inverse = strcmp(what, "relations") == 0 && kgl_inverse_name(names[k]); /* as a triples file */
        bool ok = len > 0 && !inverse && (k == 0 || strcmp(names[k - 1], names[k]) < 0);
        if (!ok) {
            if (len == 0) fail(err, cap, path, "metadata '%s': name %d is empty", what, k);
            else if (inverse) fail(err, cap, path, "metadata '%s': '%s' ends with '" KGL_INVERSE_SUFFIX "', which "
                                   "names the inverse of a relation", what, names[k]);
            else fail(err, cap, path, "metadata '%s': '%s' does not come after '%s' (names must be unique and in "
                      "byte order, as kgl writes them)", what, names[k], names[k - 1]);
            for (int q = 0; q <= k; q++) free(names[q]);
            free(names);
            return false;
        }
    }
    *out = names;
    *n_out = n;
    return true;
}

bool kgl_checkpoint_open_standalone(const char *path, kgl_dataset *names, kgl_checkpoint *ck, char *err, size_t cap)
{
    memset(ck, 0, sizeof *ck);
    memset(names, 0, sizeof *names);
    kgl_st_file *f = kgl_xcalloc(1, sizeof *f);
    if (!kgl_st_read(path, f, err, cap)) {
        free(f);
        return false;
    }
    const char *ents = need_meta(f, "entities", path, err, cap);
    const char *rels = ents ? need_meta(f, "relations", path, err, cap) : NULL;
    bool ok = ents && rels && split_names(ents, "entities", &names->entity_names, &names->n_entities, path, err, cap) &&
              split_names(rels, "relations", &names->relation_names, &names->n_relations, path, err, cap);
    if (!ok) {
        kgl_st_free(f);
        free(f);
        kgl_dataset_free(names);
        return false;
    }
    /* an empty filter index: every (entity, relation row) knows no answer */
    size_t keys = (size_t)names->n_entities * (size_t)(2 * names->n_relations);
    names->known_offsets = kgl_xcalloc(keys + 1, sizeof(int));
    names->known = kgl_xmalloc(sizeof(int));
    if (!open_read(f, path, names, ck, err, cap)) {
        kgl_dataset_free(names);
        return false;
    }
    return true;
}

void kgl_checkpoint_apply(const kgl_checkpoint *ck, kgl_model *m)
{
    const kgl_st_file *f = ck->file;
    const struct optimizer_state *os = &optimizer_states[ck->st.optim.kind];
    for (int k = 0; k < m->params.n; k++) {
        kgl_param *p = &m->params.p[k];
        size_t bytes = kgl_numel(&p->t) * sizeof(kgl_real);
        memcpy(p->t.data, kgl_st_find(f, p->name)->data, bytes);
        char name[KGL_NAME_MAX + 16];
        memset(p->m, 0, bytes);
        memset(p->v, 0, bytes);
        if (!ck->has_state) continue;
        kgl_real *buffer[2] = {p->m, p->v};
        for (int s = 0; s < os->n_state; s++) {
            snprintf(name, sizeof name, "%s%s", os->prefix[s], p->name);
            memcpy(buffer[s], kgl_st_find(f, name)->data, bytes);
        }
    }
}

void kgl_checkpoint_close(kgl_checkpoint *ck)
{
    if (ck->file) {
        kgl_st_free(ck->file);
        free(ck->file);
    }
    ck->file = NULL;
}
