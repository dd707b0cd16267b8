/* saturation.c — the softmax-saturation study (`kgl saturation`). For every
 * combination of the axes it trains the layer (one head, d = dk, on the
 * academic world) for each seed, measures the attention diagnostics at every
 * step, and writes a CSV, SVG plots and a summary per configuration. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kgl/studies.h"
#include "engine/internal.h"

const char *const kgl_saturation_remedy_names[KGL_SAT_N_REMEDIES] = {"none", "qk-norm", "temperature"};

const char *const kgl_saturation_metric_names[KGL_SAT_N_METRICS] = {
    "loss",          "main_loss",   "aux_loss", "max_prob", "max_prob_min", "entropy", "max_abs_logit", "jac_fro",
    "grad_logits",   "grad_wq",     "grad_wk",  "wq_move",  "wk_move",      "attn_tv", "spec_advises"};

/* ---- the spec ---------------------------------------------------------------- */

/* Sets an axis to the given values, their labels left to the values. */
static void set_axis(kgl_saturation_axis *ax, int n, const double *v)
{
    memset(ax, 0, sizeof *ax);
    ax->n = n;
    memcpy(ax->value, v, (size_t)n * sizeof *v);
}

void kgl_saturation_spec_defaults(kgl_saturation_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    set_axis(&spec->dk, 3, (const double[]){4, 64, 256});
    set_axis(&spec->scale, 2, (const double[]){KGL_SAT_SCALE_SQRT, KGL_SAT_SCALE_NONE});
    set_axis(&spec->init_scale, 2, (const double[]){1, 3});
    set_axis(&spec->optimizer, 1, (const double[]){KGL_OPT_ADAM});
    set_axis(&spec->lr, 1, (const double[]){0.01});
    set_axis(&spec->supervise, 1, (const double[]){0});
    spec->momentum = 0;
    spec->steps = 300;
    spec->seeds = 3;
    spec->jobs = 2;
}

/* Whether every value of an axis is allowed; "name: value is not …" in err if not. */
static bool check_axis(const kgl_saturation_axis *ax, const char *name, char *err, size_t cap)
{
    if (ax->n < 1 || ax->n > KGL_SAT_AXIS_MAX) {
        snprintf(err, cap, "%s: %d values (1 to %d allowed)", name, ax->n, KGL_SAT_AXIS_MAX);
        return false;
    }
    for (int k = 0; k < ax->n; k++) {
        double x = ax->value[k];
        bool ok;
        const char *what;
        if (strcmp(name, "dk") == 0) ok = x >= 1 && x <= 4096 && x == floor(x), what = "a whole number in 1..4096";
        else if (strcmp(name, "scale") == 0)
            ok = x == KGL_SAT_SCALE_SQRT || x == KGL_SAT_SCALE_NONE || (x > 0 && isfinite(x)),
            what = "sqrt, none or a positive number";
        else if (strcmp(name, "optimizer") == 0) ok = x == KGL_OPT_ADAM || x == KGL_OPT_SGD, what = "adam or sgd";
        else if (strcmp(name, "supervise") == 0) ok = x == 0 || x == 1, what = "0 (off) or 1 (on)";
        else ok = x >= 0 && isfinite(x), what = "a number ≥ 0";
        if (!ok) {
            snprintf(err, cap, "%s: %g is not %s", name, x, what);
            return false;
        }
    }
    return true;
}

/* The spec's ranges; false with "what is wrong" in err. */
static bool check_spec(const kgl_saturation_spec *sp, char *err, size_t cap)
{
    if (!check_axis(&sp->dk, "dk", err, cap) || !check_axis(&sp->scale, "scale", err, cap) ||
        !check_axis(&sp->init_scale, "init-scale", err, cap) || !check_axis(&sp->optimizer, "optimizer", err, cap) ||
        !check_axis(&sp->lr, "lr", err, cap) || !check_axis(&sp->supervise, "supervise", err, cap))
        return false;
    if (sp->steps < 1 || sp->seeds < 1 || sp->jobs < 1 || sp->jobs > 64) {
        snprintf(err, cap, "steps and seeds must be ≥ 1, jobs in 1..64 (got %d, %d, %d)", sp->steps, sp->seeds,
                 sp->jobs);
        return false;
    }
    if (!(sp->momentum >= 0 && sp->momentum <= 1)) {
        snprintf(err, cap, "momentum: %g is not in [0, 1]", sp->momentum);
        return false;
    }
    if (sp->dataset && (!sp->train || sp->n_train < 1)) {
        snprintf(err, cap, "no training triples");
        return false;
    }
    return true;
}

/* How value k of an axis reads in a label: the text it was given as, else
   `word` (the value's name), else its %g. */
static const char *axis_text(const kgl_saturation_axis *ax, int k, const char *word, char *buf, size_t cap)
{
    if (ax->text[k][0]) return ax->text[k];
    if (word) return word;
    snprintf(buf, cap, "%g", ax->value[k]);
    return buf;
}

/* ---- the grid ---------------------------------------------------------------- */

/* Appends fmt % text to a label of `cap` bytes holding `len`; a label that
   would not fit is cut. */
static void label_add(char *label, size_t cap, size_t *len, const char *fmt, const char *text)
{
    if (*len + 1 >= cap) return;
    int n = snprintf(label + *len, cap - *len, fmt, text);
    *len = n < 0 ? *len : *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

/* Every combination of the axes with its label, the first axis outermost and
   the remedy innermost; returns how many. */
static int expand_grid(const kgl_saturation_spec *sp, kgl_saturation_config **out)
{
    const kgl_saturation_axis *dk = &sp->dk, *scale = &sp->scale, *init = &sp->init_scale, *opt = &sp->optimizer,
                              *lr = &sp->lr, *sup = &sp->supervise;
    int n_rem = sp->remedies ? KGL_SAT_N_REMEDIES : 1;
    int n_cfg = dk->n * scale->n * init->n * opt->n * lr->n * sup->n * n_rem;
    kgl_saturation_config *cfgs = kgl_xmalloc((size_t)n_cfg * sizeof *cfgs);
    memset(cfgs, 0, (size_t)n_cfg * sizeof *cfgs);
    for (int c = 0; c < n_cfg; c++) {
        int rest = c; /* c in mixed radix: one digit per axis */
        int i_rem = rest % n_rem;
        rest /= n_rem;
        int i_sup = rest % sup->n;
        rest /= sup->n;
        int i_lr = rest % lr->n;
        rest /= lr->n;
        int i_opt = rest % opt->n;
        rest /= opt->n;
        int i_init = rest % init->n;
        rest /= init->n;
        int i_scale = rest % scale->n;
        int i_dk = rest / scale->n;
        kgl_saturation_config *x = &cfgs[c];
        double sv = scale->value[i_scale];
        x->dk = (int)dk->value[i_dk];
        x->scale = sv == KGL_SAT_SCALE_SQRT   ? KGL_SCALE_SQRT
                   : sv == KGL_SAT_SCALE_NONE ? KGL_SCALE_NONE
                                              : KGL_SCALE_VALUE;
        x->scale_value = sv;
        x->init_scale = init->value[i_init];
        x->optimizer = (kgl_optimizer_kind)opt->value[i_opt];
        x->lr = lr->value[i_lr];
        x->supervise = sup->value[i_sup] != 0;
        x->remedy = (kgl_saturation_remedy)i_rem;
        char b0[32], b1[32], b2[32], b3[32]; /* for values given without text */
        const char *scale_word = x->scale == KGL_SCALE_SQRT ? "sqrt" : x->scale == KGL_SCALE_NONE ? "none" : NULL;
        size_t len = 0;
        label_add(x->label, sizeof x->label, &len, "dk=%s", axis_text(dk, i_dk, NULL, b0, sizeof b0));
        label_add(x->label, sizeof x->label, &len, " %s", axis_text(scale, i_scale, scale_word, b1, sizeof b1));
        label_add(x->label, sizeof x->label, &len, " s=%s", axis_text(init, i_init, NULL, b2, sizeof b2));
        if (opt->n > 1 || x->optimizer != KGL_OPT_ADAM)
            label_add(x->label, sizeof x->label, &len, " %s",
                      axis_text(opt, i_opt, x->optimizer == KGL_OPT_SGD ? "sgd" : "adam", NULL, 0));
        if (lr->n > 1) label_add(x->label, sizeof x->label, &len, " lr=%s", axis_text(lr, i_lr, NULL, b3, sizeof b3));
        if (sup->n > 1 || x->supervise)
            label_add(x->label, sizeof x->label, &len, " sup=%s",
                      axis_text(sup, i_sup, x->supervise ? "on" : "off", NULL, 0));
        if (sp->remedies) label_add(x->label, sizeof x->label, &len, " %s", kgl_saturation_remedy_names[i_rem]);
    }
    *out = cfgs;
    return n_cfg;
}

/* ---- the runs ---------------------------------------------------------------- */

/* What the workers share: the data, the spec, and the next run to take. */
typedef struct study {
    const kgl_saturation_spec *spec;
    const kgl_dataset *ds;
    const kgl_triple *train;
    int n_train;
    int advises;
    kgl_saturation *res;
    int next; /* next run to take (under lock) */
    int done;
    pthread_mutex_t lock;
} study;

/* Trains one run, recording the diagnostics of every step into its rows. */
static void run_one(const study *st, kgl_saturation_trace *run)
{
    const kgl_saturation_config *c = run->config;
    const kgl_dataset *ds = st->ds;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.dim = c->dk;
    cfg.heads = 1;
    cfg.scale = c->scale;
    cfg.scale_value = c->scale_value;
    cfg.init_scale = c->init_scale;
    cfg.qk_norm = c->remedy == KGL_SAT_REMEDY_QK_NORM;
    cfg.learn_temperature = c->remedy == KGL_SAT_REMEDY_TEMPERATURE;
    int *head_of = kgl_xmalloc((size_t)ds->n_relations * sizeof *head_of);
    for (int r = 0; r < ds->n_relations; r++) head_of[r] = -1;
    head_of[st->advises] = 0;
    kgl_train_config tc = {1024, (uint64_t)run->seed, {0}, c->supervise ? head_of : NULL, 1.0, false, false};
    kgl_optim_defaults(&tc.optim);
    tc.optim.kind = c->optimizer;
    tc.optim.lr = c->lr;
    if (c->optimizer == KGL_OPT_SGD) tc.optim.momentum = st->spec->momentum;
    kgl_trainer tr;
    kgl_trainer_init(&tr, ds, st->train, st->n_train, &cfg, &tc);
    kgl_diag dg;
    kgl_diag_init(&dg, &tr);
    kgl_eval ev;
    kgl_eval_init(&ev, ds->n_entities, ds->n_relations);
    run->fit_step = -1;
    run->steps_done = 0;
    for (int step = 1; step <= st->spec->steps; step++) {
        double loss = kgl_trainer_compute(&tr);
        if (!isfinite(loss)) break;
        kgl_diag_measure(&dg, &tr);
        const kgl_head_diag *h = &dg.head[0];
        double *row = run->rows + (size_t)(step - 1) * KGL_SAT_N_METRICS;
        double values[KGL_SAT_N_METRICS] = {
            loss,       tr.last_main,     tr.last_aux, h->max_prob_mean, h->max_prob_min,
            h->entropy, h->max_abs_logit, h->jac_fro,  h->grad_logits,   h->grad_wq,
            h->grad_wk, h->wq_move,       h->wk_move,  h->attn_tv,       dg.spec[st->advises]};
        memcpy(row, values, sizeof values);
        kgl_trainer_update(&tr);
        run->steps_done = step;
        if (run->fit_step < 0 && kgl_trainer_fits(&tr, &ev)) run->fit_step = step;
    }
    kgl_eval_free(&ev);
    kgl_diag_free(&dg);
    kgl_trainer_free(&tr);
    free(head_of);
}

/* Takes runs until none is left, reporting progress after each. */
static void *worker(void *arg)
{
    study *st = arg;
    kgl_saturation *res = st->res;
    for (;;) {
        pthread_mutex_lock(&st->lock);
        int k = st->next < res->n_runs ? st->next++ : -1;
        pthread_mutex_unlock(&st->lock);
        if (k < 0) return NULL;
        run_one(st, &res->runs[k]);
        pthread_mutex_lock(&st->lock);
        st->done++;
        if (st->spec->progress) st->spec->progress(st->done, res->n_runs, st->spec->progress_ctx);
        pthread_mutex_unlock(&st->lock);
    }
}

bool kgl_saturation_run(const kgl_saturation_spec *spec, kgl_saturation *res, char *err, size_t err_cap)
{
    memset(res, 0, sizeof *res);
    if (!check_spec(spec, err, err_cap)) return false;
    kgl_dataset academic;
    memset(&academic, 0, sizeof academic);
    study st = {spec, spec->dataset, spec->train, spec->n_train, -1, res, 0, 0, PTHREAD_MUTEX_INITIALIZER};
    if (!spec->dataset) {
        kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
        if (!kgl_dataset_load(&academic, &src, 1, err, err_cap)) return false;
        st.ds = &academic;
        st.train = academic.splits[0].triples;
        st.n_train = academic.splits[0].n;
    }
    st.advises = kgl_dataset_relation_id(st.ds, "advises");
    if (st.advises < 0) {
        snprintf(err, err_cap, "%s has no 'advises' relation",
                 spec->dataset ? "the training data" : "the academic world");
        kgl_dataset_free(&academic);
        return false;
    }
    res->steps = spec->steps;
    res->seeds = spec->seeds;
    res->n_configs = expand_grid(spec, &res->configs);
    res->n_runs = res->n_configs * spec->seeds;
    res->runs = kgl_xmalloc((size_t)res->n_runs * sizeof *res->runs);
    for (int k = 0; k < res->n_runs; k++) {
        res->runs[k] = (kgl_saturation_trace){&res->configs[k / spec->seeds], 1 + k % spec->seeds, NULL, -1, 0};
        res->runs[k].rows = kgl_xmalloc((size_t)spec->steps * KGL_SAT_N_METRICS * sizeof(double));
    }
    double t0 = kgl_seconds();
    pthread_t threads[64];
    int n_threads = spec->jobs < res->n_runs ? spec->jobs : res->n_runs;
    for (int k = 1; k < n_threads; k++) pthread_create(&threads[k], NULL, worker, &st);
    worker(&st);
    for (int k = 1; k < n_threads; k++) pthread_join(threads[k], NULL);
    res->seconds = kgl_seconds() - t0;
    pthread_mutex_destroy(&st.lock);
    kgl_dataset_free(&academic);
    return true;
}

void kgl_saturation_free(kgl_saturation *s)
{
    for (int k = 0; k < s->n_runs; k++) free(s->runs[k].rows);
    free(s->runs);
    free(s->configs);
    memset(s, 0, sizeof *s);
}

/* ---- results ----------------------------------------------------------------- */

/* Mean over the seeds of configuration `config` of metric `k` at step `step`
   (1-based), over the seeds whose run reached that step; NaN if none did. */
double kgl_saturation_seed_mean(const kgl_saturation *s, int config, int step, kgl_saturation_metric k)
{
    double sum = 0;
    int n = 0;
    for (int q = 0; q < s->seeds; q++) {
        const kgl_saturation_trace *r = &s->runs[config * s->seeds + q];
        if (step > r->steps_done) continue;
        double x = r->rows[(size_t)(step - 1) * KGL_SAT_N_METRICS + k];
        if (isnan(x)) continue;
        sum += x;
        n++;
    }
    return n ? sum / n : NAN;
}

void kgl_saturation_summarise(const kgl_saturation *s, int c, kgl_saturation_summary *sm)
{
    int last = s->steps, n_seeds = s->seeds;
    for (int k = 0; k < KGL_SAT_N_METRICS; k++) {
        sm->init[k] = kgl_saturation_seed_mean(s, c, 1, (kgl_saturation_metric)k);
        sm->final[k] = kgl_saturation_seed_mean(s, c, last, (kgl_saturation_metric)k);
    }
    double aux_total = 0;
    int aux_n = 0;
    for (int step = 1; step <= last; step++) {
        double x = kgl_saturation_seed_mean(s, c, step, KGL_SAT_AUX_LOSS);
        if (!isnan(x)) aux_total += x, aux_n++;
    }
    sm->aux_mean = aux_n ? aux_total / aux_n : NAN;
    double fs = 0;
    sm->fit_seeds = 0;
    for (int q = 0; q < n_seeds; q++) {
        const kgl_saturation_trace *r = &s->runs[c * n_seeds + q];
        if (r->fit_step >= 0) fs += (double)r->fit_step, sm->fit_seeds++;
    }
    sm->fit_step = sm->fit_seeds == n_seeds ? fs / n_seeds : NAN;
}

/* ---- files ------------------------------------------------------------------- */

bool kgl_saturation_write_csv(const kgl_saturation *s, const char *path, char *err, size_t cap)
{
    char tmp[2100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, cap, "%s: cannot write: %s", tmp, strerror(errno));
        return false;
    }
    fprintf(f, "config,dk,scale,init_scale,optimizer,lr,supervise,remedy,seed,step");
    for (int k = 0; k < KGL_SAT_N_METRICS; k++) fprintf(f, ",%s", kgl_saturation_metric_names[k]);
    fputc('\n', f);
    for (int i = 0; i < s->n_runs; i++) {
        const kgl_saturation_trace *r = &s->runs[i];
        const kgl_saturation_config *c = r->config;
        char scale[32];
        if (c->scale == KGL_SCALE_SQRT) snprintf(scale, sizeof scale, "sqrt");
        else if (c->scale == KGL_SCALE_NONE) snprintf(scale, sizeof scale, "none");
        else snprintf(scale, sizeof scale, "%.17g", c->scale_value);
        for (int step = 1; step <= r->steps_done; step++) {
            fprintf(f, "\"%s\",%d,%s,%.17g,%s,%.17g,%s,%s,%d,%d", c->label, c->dk, scale, c->init_scale,
                    c->optimizer == KGL_OPT_SGD ? "sgd" : "adam", c->lr, c->supervise ? "on" : "off",
                    kgl_saturation_remedy_names[c->remedy], r->seed, step);
            for (int k = 0; k < KGL_SAT_N_METRICS; k++) {
                double x = r->rows[(size_t)(step - 1) * KGL_SAT_N_METRICS + k];
                if (isnan(x)) fputc(',', f);
                else fprintf(f, ",%.17g", x);
            }
            fputc('\n', f);
        }
    }
    bool ok = fclose(f) == 0 && rename(tmp, path) == 0;
    if (!ok) snprintf(err, cap, "%s: could not be written", path);
    return ok;
}

/* One plotted metric: its title and axis, and whether only supervised runs have it. */
typedef struct plot_spec {
    kgl_saturation_metric metric;
    const char *title, *y_label;
    bool log_y, supervised_only;
} plot_spec;

static const plot_spec plots[] = {
    {KGL_SAT_MAX_PROB, "mean max_prob (largest attention weight per row)", "max_prob", false, false},
    {KGL_SAT_ENTROPY, "mean attention entropy", "entropy (nats)", false, false},
    {KGL_SAT_JAC_FRO, "mean softmax Jacobian norm ‖diag(a) − a aᵀ‖_F", "‖J‖_F", true, false},
    {KGL_SAT_GRAD_LOGITS, "gradient reaching the attention logits ‖∂L/∂S‖", "‖∂L/∂S‖", true, false},
    {KGL_SAT_GRAD_WQ, "gradient of the query weights ‖∂L/∂Wq‖", "‖∂L/∂Wq‖", true, false},
    {KGL_SAT_ATTN_TV, "attention movement: mean total variation from step 0", "TV distance", false, false},
    {KGL_SAT_LOSS, "loss (main + aux)", "loss", true, false},
    {KGL_SAT_AUX_LOSS, "head-supervision loss −log A[i, advisee]", "aux loss", true, true},
    {KGL_SAT_SPEC_ADVISES, "spec[0][advises]: attention mass on the advisees", "spec", false, false},
};
#define N_PLOTS (int)(sizeof plots / sizeof plots[0])

bool kgl_saturation_write_plots(const kgl_saturation *s, const char *dir, char *err, size_t cap)
{
    int S = s->steps, n_cfg = s->n_configs, n_seeds = s->seeds;
    const kgl_saturation_config *cfgs = s->configs;
    double *x = kgl_xmalloc((size_t)S * sizeof(double));
    double *y = kgl_xmalloc((size_t)N_PLOTS * n_cfg * S * sizeof(double));
    kgl_series *series = kgl_xmalloc((size_t)N_PLOTS * n_cfg * sizeof *series);
    kgl_lineplot lp[N_PLOTS];
    for (int i = 0; i < S; i++) x[i] = i + 1;
    bool ok = true;
    char path[2048];
    for (int p = 0; p < N_PLOTS && ok; p++) {
        int n = 0;
        for (int c = 0; c < n_cfg; c++) {
            if (plots[p].supervised_only && !cfgs[c].supervise) continue;
            double *yy = y + ((size_t)p * n_cfg + c) * S;
            for (int step = 1; step <= S; step++) yy[step - 1] = kgl_saturation_seed_mean(s, c, step, plots[p].metric);
            series[p * n_cfg + n] = (kgl_series){cfgs[c].label, S, x, yy};
            n++;
        }
        lp[p] = (kgl_lineplot){plots[p].title, "step", plots[p].y_label, plots[p].log_y, false, series + p * n_cfg, n};
        if (n == 0) continue;
        snprintf(path, sizeof path, "%s/%s.svg", dir, kgl_saturation_metric_names[plots[p].metric]);
        ok = kgl_svg_lineplot(path, &lp[p], err, cap);
    }
    if (ok) {
        kgl_lineplot shown[N_PLOTS];
        int n_shown = 0;
        for (int p = 0; p < N_PLOTS; p++)
            if (lp[p].n_series) shown[n_shown++] = lp[p];
        snprintf(path, sizeof path, "%s/saturation.svg", dir);
        char title[160];
        snprintf(title, sizeof title, "saturation study: one head, d = dk, academic world; mean of %d seed%s", n_seeds,
                 n_seeds == 1 ? "" : "s");
        ok = kgl_svg_lineplot_grid(path, title, shown, n_shown, 3, err, cap);
    }
    free(x);
    free(y);
    free(series);
    return ok;
}

bool kgl_saturation_write(const kgl_saturation *s, const char *dir, char *err, size_t cap)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, cap, "%s: cannot create the folder: %s", dir, strerror(errno));
        return false;
    }
    char path[2048];
    snprintf(path, sizeof path, "%s/saturation.csv", dir);
    return kgl_saturation_write_csv(s, path, err, cap) && kgl_saturation_write_plots(s, dir, err, cap);
}
