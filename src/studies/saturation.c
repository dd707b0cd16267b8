/* saturation.c — the softmax-saturation study (`kgl saturation`). For every
 * combination of the axes it trains the layer (one head, d = dk, on the
 * academic world; two heads of dk for both-two-heads; a stack of them for
 * the layers axis) for each seed, measures the attention diagnostics of
 * every layer at every step, and writes CSVs (per
 * step, per seed, per configuration), SVG plots and a summary per
 * configuration: means, quantiles over the seeds, and the fraction of seeds
 * whose supervised head is still frozen at the end. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kgl/studies.h"
#include "engine/internal.h"

const char *const kgl_saturation_remedy_names[KGL_SAT_N_REMEDIES] = {"none", "qk-norm", "temperature"};

const char *const kgl_saturation_metric_names[KGL_SAT_N_METRICS] = {
    "loss",          "main_loss",   "aux_loss", "max_prob", "max_prob_min", "entropy", "max_abs_logit", "jac_fro",
    "grad_logits",   "grad_wq",     "grad_wk",  "wq_move",  "wk_move",      "attn_tv", "spec_advises",
    "target_mass",   "grad_logits_sup", "logit_step", "wq_step", "wk_step", "spec_authored"};

const char *const kgl_saturation_supervise_names[KGL_SAT_N_SUPERVISE] = {"off", "advises", "both-one-head",
                                                                         "both-two-heads"};

int kgl_saturation_supervise_parse(const char *word)
{
    if (strcmp(word, "on") == 0) return KGL_SAT_SUP_ADVISES; /* the word before there were several */
    for (int k = 0; k < KGL_SAT_N_SUPERVISE; k++)
        if (strcmp(word, kgl_saturation_supervise_names[k]) == 0) return k;
    return -1;
}

/* Two relations on two heads: each head keeps the axis' width dk (d = 2 dk),
   so that each head's logits are distributed as in the one-head runs: with X
   ~ N(0, 1) and W ~ N(0, (s/√d)²) every entry of Q and K has variance s²
   whatever d is, and q·k over dk columns has variance dk s⁴. Splitting d = dk
   into two heads of dk/2 would halve that variance, the very quantity the
   axis sets. */
int kgl_saturation_heads(kgl_saturation_supervise sup) { return sup == KGL_SAT_SUP_BOTH_TWO_HEADS ? 2 : 1; }

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
    set_axis(&spec->layers, 1, (const double[]){1});
    spec->momentum = 0;
    spec->steps = 300;
    spec->seeds = 10;
    spec->jobs = 2;
    spec->frozen_multiple = 2;
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
        else if (strcmp(name, "layers") == 0)
            ok = x >= 1 && x <= KGL_MAX_LAYERS && x == floor(x), what = "a whole number of layers in 1..8";
        else if (strcmp(name, "supervise") == 0)
            ok = x >= 0 && x < KGL_SAT_N_SUPERVISE && x == floor(x),
            what = "off, advises, both-one-head or both-two-heads";
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
        !check_axis(&sp->lr, "lr", err, cap) || !check_axis(&sp->supervise, "supervise", err, cap) ||
        !check_axis(&sp->layers, "layers", err, cap))
        return false;
    if (sp->steps < 1 || sp->seeds < 1 || sp->jobs < 1 || sp->jobs > 64) {
        snprintf(err, cap, "steps and seeds must be ≥ 1, jobs in 1..64 (got %d, %d, %d)", sp->steps, sp->seeds,
                 sp->jobs);
        return false;
    }
    if (!(sp->frozen_multiple > 1 && isfinite(sp->frozen_multiple))) {
        snprintf(err, cap, "frozen multiple: %g is not a number > 1", sp->frozen_multiple);
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

/* Whether the grid has a stack: a layers axis other than the single value 1
   (then the labels say L and the files carry the layers and layer columns). */
static bool grid_is_stacked(const kgl_saturation_spec *sp) { return sp->layers.n > 1 || sp->layers.value[0] != 1; }

/* Every combination of the axes with its label, the layers outermost, then
   the first axis, the remedy innermost; returns how many. */
static int expand_grid(const kgl_saturation_spec *sp, kgl_saturation_config **out)
{
    const kgl_saturation_axis *dk = &sp->dk, *scale = &sp->scale, *init = &sp->init_scale, *opt = &sp->optimizer,
                              *lr = &sp->lr, *sup = &sp->supervise, *layers = &sp->layers;
    int n_rem = sp->remedies ? KGL_SAT_N_REMEDIES : 1;
    int n_cfg = layers->n * dk->n * scale->n * init->n * opt->n * lr->n * sup->n * n_rem;
    bool stacked = grid_is_stacked(sp);
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
        rest /= scale->n;
        int i_dk = rest % dk->n;
        int i_layers = rest / dk->n;
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
        x->supervise = (kgl_saturation_supervise)sup->value[i_sup];
        x->remedy = (kgl_saturation_remedy)i_rem;
        x->heads = kgl_saturation_heads(x->supervise);
        x->dim = x->heads * x->dk;
        x->layers = (int)layers->value[i_layers];
        x->aux_floor = NAN;
        char b0[32], b1[32], b2[32], b3[32], b4[32]; /* for values given without text */
        const char *scale_word = x->scale == KGL_SCALE_SQRT ? "sqrt" : x->scale == KGL_SCALE_NONE ? "none" : NULL;
        size_t len = 0;
        label_add(x->label, sizeof x->label, &len, "dk=%s", axis_text(dk, i_dk, NULL, b0, sizeof b0));
        label_add(x->label, sizeof x->label, &len, " %s", axis_text(scale, i_scale, scale_word, b1, sizeof b1));
        label_add(x->label, sizeof x->label, &len, " s=%s", axis_text(init, i_init, NULL, b2, sizeof b2));
        if (stacked)
            label_add(x->label, sizeof x->label, &len, " L=%s", axis_text(layers, i_layers, NULL, b4, sizeof b4));
        if (opt->n > 1 || x->optimizer != KGL_OPT_ADAM)
            label_add(x->label, sizeof x->label, &len, " %s",
                      axis_text(opt, i_opt, x->optimizer == KGL_OPT_SGD ? "sgd" : "adam", NULL, 0));
        if (lr->n > 1) label_add(x->label, sizeof x->label, &len, " lr=%s", axis_text(lr, i_lr, NULL, b3, sizeof b3));
        if (sup->n > 1 || x->supervise)
            label_add(x->label, sizeof x->label, &len, " sup=%s",
                      axis_text(sup, i_sup, kgl_saturation_supervise_names[x->supervise], NULL, 0));
        if (sp->remedies) label_add(x->label, sizeof x->label, &len, " %s", kgl_saturation_remedy_names[i_rem]);
        /* the short label, in a panel that already says the scale and the
           init-scale: only the axes that vary (all but those two when none does) */
        size_t sl = 0;
        char *sh = x->short_label;
        if (dk->n > 1) label_add(sh, sizeof x->short_label, &sl, " dk=%s", axis_text(dk, i_dk, NULL, b0, sizeof b0));
        if (layers->n > 1)
            label_add(sh, sizeof x->short_label, &sl, " L=%s", axis_text(layers, i_layers, NULL, b4, sizeof b4));
        if (opt->n > 1)
            label_add(sh, sizeof x->short_label, &sl, " %s",
                      axis_text(opt, i_opt, x->optimizer == KGL_OPT_SGD ? "sgd" : "adam", NULL, 0));
        if (lr->n > 1) label_add(sh, sizeof x->short_label, &sl, " lr=%s", axis_text(lr, i_lr, NULL, b3, sizeof b3));
        if (sup->n > 1)
            label_add(sh, sizeof x->short_label, &sl, " sup=%s",
                      axis_text(sup, i_sup, kgl_saturation_supervise_names[x->supervise], NULL, 0));
        if (sp->remedies) label_add(sh, sizeof x->short_label, &sl, " %s", kgl_saturation_remedy_names[i_rem]);
        if (sl == 0) { /* nothing varies: the label without " <scale> s=<init>" */
            const char *after_init = strchr(strstr(x->label, " s=") + 1, ' ');
            label_add(sh, sizeof x->short_label, &sl, " dk=%s", axis_text(dk, i_dk, NULL, b0, sizeof b0));
            if (after_init) label_add(sh, sizeof x->short_label, &sl, "%s", after_init);
        }
        memmove(sh, sh + 1, strlen(sh)); /* the leading space */
    }
    *out = cfgs;
    return n_cfg;
}

/* ---- the runs ---------------------------------------------------------------- */

/* What the runs share: the data, the spec, the results. */
typedef struct study {
    const kgl_saturation_spec *spec;
    const kgl_dataset *ds;
    const kgl_triple *train;
    int n_train;
    int advises, authored; /* relation ids (authored -1 when the data has none) */
    kgl_saturation *res;
    int order_step;        /* the grid's order: configuration k·order_step mod n (see run_job) */
} study;

/* head_of[r] for a supervision (all -1 when off); returns whether any is set. */
static bool supervised_heads(const study *st, kgl_saturation_supervise sup, int *head_of)
{
    for (int r = 0; r < st->ds->n_relations; r++) head_of[r] = -1;
    if (sup == KGL_SAT_SUP_OFF) return false;
    head_of[st->advises] = 0;
    if (sup == KGL_SAT_SUP_BOTH_ONE_HEAD) head_of[st->authored] = 0;
    if (sup == KGL_SAT_SUP_BOTH_TWO_HEADS) head_of[st->authored] = 1;
    return true;
}

/* Trains one run, recording the diagnostics of every step into its rows.
   The same run as `kgl train --dim <heads·dk> --heads <heads> --scale …
   --init-scale … --seed S` with the supervision's --supervise-heads: the same
   trainer, full batch, no schedule, no regularisers (a test compares).
   Its steps are job `job`'s of the runner. */
static void run_one(study *st, kgl_saturation_trace *run, kgl_jobs *jobs, int job)
{
    const kgl_saturation_config *c = run->config;
    const kgl_dataset *ds = st->ds;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.dim = c->dim;
    cfg.heads = c->heads;
    cfg.layers = c->layers;
    cfg.scale = c->scale;
    cfg.scale_value = c->scale_value;
    cfg.init_scale = c->init_scale;
    cfg.qk_norm = c->remedy == KGL_SAT_REMEDY_QK_NORM;
    cfg.learn_temperature = c->remedy == KGL_SAT_REMEDY_TEMPERATURE;
    int *head_of = kgl_xmalloc((size_t)ds->n_relations * sizeof *head_of);
    bool sup = supervised_heads(st, c->supervise, head_of);
    kgl_train_config tc = {1024, (uint64_t)run->seed, {0}, sup ? head_of : NULL, 1.0, false, false};
    kgl_optim_defaults(&tc.optim);
    tc.optim.kind = c->optimizer;
    tc.optim.lr = c->lr;
    if (c->optimizer == KGL_OPT_SGD) tc.optim.momentum = st->spec->momentum;
    kgl_trainer tr;
    kgl_trainer_init(&tr, ds, st->train, st->n_train, &cfg, &tc);
    kgl_diag dg;
    kgl_diag_init(&dg, &tr);
    kgl_sup_diag sd;
    kgl_sup_diag_init(&sd, &tr);
    int authored_head = c->supervise == KGL_SAT_SUP_BOTH_TWO_HEADS ? 1 : 0;
    kgl_eval ev;
    kgl_eval_init(&ev, ds->n_entities, ds->n_relations);
    run->fit_step = -1;
    run->steps_done = 0;
    for (int step = 1; step <= st->spec->steps; step++) {
        double loss = kgl_trainer_compute(&tr);
        if (!isfinite(loss)) break;
        kgl_diag_measure(&dg, &tr);
        kgl_sup_diag_measure(&sd, &tr);
        for (int l = 0; l < c->layers; l++) { /* every layer's head 0; the loss is the run's */
            const kgl_head_diag *h = kgl_diag_head(&dg, l, 0);
            const double *spec = dg.spec + (size_t)l * dg.heads * dg.m;
            bool supervised = l == 0; /* supervision reads the first layer only */
            double values[KGL_SAT_N_METRICS] = {
                loss,           tr.last_main,     tr.last_aux,   h->max_prob_mean, h->max_prob_min,
                h->entropy,     h->max_abs_logit, h->jac_fro,    h->grad_logits,   h->grad_wq,
                h->grad_wk,     h->wq_move,       h->wk_move,    h->attn_tv,       spec[st->advises],
                supervised ? sd.target_mass : NAN, supervised ? sd.grad_logits : NAN,
                supervised ? sd.logit_step : NAN,  NAN,           NAN,
                st->authored >= 0 ? spec[authored_head * dg.m + st->authored] : NAN};
            memcpy(kgl_saturation_row(run, step, l), values, sizeof values);
        }
        kgl_trainer_update(&tr);
        kgl_sup_diag_after_update(&sd, &tr);
        double *row = kgl_saturation_row(run, step, 0);
        row[KGL_SAT_WQ_STEP] = sd.wq_step; /* the update this step's gradient made */
        row[KGL_SAT_WK_STEP] = sd.wk_step;
        run->steps_done = step;
        if (run->fit_step < 0 && kgl_trainer_fits(&tr, &ev)) run->fit_step = step;
        kgl_jobs_report(jobs, job, step, st->spec->steps);
    }
    if (run->steps_done < st->spec->steps) /* less the steps a non-finite loss left undone */
        kgl_jobs_report(jobs, job, run->steps_done, run->steps_done);
    kgl_eval_free(&ev);
    kgl_sup_diag_free(&sd);
    kgl_diag_free(&dg);
    kgl_trainer_free(&tr);
    free(head_of);
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* The runs are the runner's jobs, taken in order: job k is seed k / n of
   configuration k·p mod n (p coprime to n, near n/φ: a golden-ratio
   sequence), so seed 1 of every configuration comes first, then seed 2,
   ..., and the work done at any time mixes the grid's cheap and dear
   configurations (a run at dk 256 costs 16 at dk 4, and dk is the grid's
   slowest axis): the pace of the steps done so far predicts the rest.
   Each run's result is its own, whatever the order. */
static int grid_order_step(int n)
{
    int p = (int)(0.618 * n + 0.5);
    while (p > 1 && gcd(p, n) != 1) p--;
    return p < 1 ? 1 : p;
}

static int run_job(kgl_jobs *jobs, int k, int worker, void *ctx)
{
    (void)worker;
    study *st = ctx;
    int n = st->res->n_configs, config = (int)((long)(k % n) * st->order_step % n), seed = k / n;
    run_one(st, &st->res->runs[config * st->spec->seeds + seed], jobs, k);
    return 0; /* a non-finite loss ends its run, not the grid */
}

/* The runner's counts as the study's progress. */
static void show_progress(const kgl_jobs_progress *at, void *ctx)
{
    const study *st = ctx;
    kgl_saturation_progress p = {at->steps_done, at->steps, at->jobs_done, at->jobs};
    st->spec->progress(&p, st->spec->progress_ctx);
}

bool kgl_saturation_run(const kgl_saturation_spec *spec, kgl_saturation *res, char *err, size_t err_cap)
{
    memset(res, 0, sizeof *res);
    if (!check_spec(spec, err, err_cap)) return false;
    kgl_dataset academic;
    memset(&academic, 0, sizeof academic);
    study st = {spec, spec->dataset, spec->train, spec->n_train, -1, -1, res, 1};
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
    st.authored = kgl_dataset_relation_id(st.ds, "authored");
    bool needs_authored = false;
    for (int k = 0; k < spec->supervise.n; k++)
        needs_authored |= spec->supervise.value[k] == KGL_SAT_SUP_BOTH_ONE_HEAD ||
                          spec->supervise.value[k] == KGL_SAT_SUP_BOTH_TWO_HEADS;
    if (needs_authored && st.authored < 0) {
        snprintf(err, err_cap, "%s has no 'authored' relation (both-one-head and both-two-heads supervise it)",
                 spec->dataset ? "the training data" : "the academic world");
        kgl_dataset_free(&academic);
        return false;
    }
    res->steps = spec->steps;
    res->seeds = spec->seeds;
    res->frozen_multiple = spec->frozen_multiple;
    res->stacked = grid_is_stacked(spec);
    res->n_configs = expand_grid(spec, &res->configs);
    { /* each configuration's floor, from the same tails the trainer builds */
        kgl_tails tl;
        kgl_tails_build(&tl, st.ds->n_entities, st.ds->n_relations, st.train, st.n_train);
        int *head_of = kgl_xmalloc((size_t)st.ds->n_relations * sizeof *head_of);
        for (int c = 0; c < res->n_configs; c++) {
            kgl_saturation_config *x = &res->configs[c];
            if (supervised_heads(&st, x->supervise, head_of))
                x->aux_floor = kgl_supervision_floor(&tl, head_of, x->heads);
        }
        free(head_of);
        kgl_tails_free(&tl);
    }
    res->n_runs = res->n_configs * spec->seeds;
    res->runs = kgl_xmalloc((size_t)res->n_runs * sizeof *res->runs);
    for (int k = 0; k < res->n_runs; k++) {
        res->runs[k] = (kgl_saturation_trace){&res->configs[k / spec->seeds], 1 + k % spec->seeds, NULL, -1, 0};
        res->runs[k].rows = kgl_xmalloc((size_t)spec->steps * res->runs[k].config->layers * KGL_SAT_N_METRICS *
                                        sizeof(double));
    }
    st.order_step = grid_order_step(res->n_configs);
    kgl_jobs_spec js = {.n = res->n_runs, .at_most = spec->jobs, .job_steps = spec->steps, .run = run_job,
                        .progress = spec->progress ? show_progress : NULL, .ctx = &st};
    res->seconds = kgl_jobs_run(&js).seconds;
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
double kgl_saturation_seed_mean(const kgl_saturation *s, int config, int layer, int step, kgl_saturation_metric k)
{
    double sum = 0;
    int n = 0;
    for (int q = 0; q < s->seeds; q++) {
        const kgl_saturation_trace *r = &s->runs[config * s->seeds + q];
        if (step > r->steps_done) continue;
        double x = kgl_saturation_row(r, step, layer)[k];
        if (isnan(x)) continue;
        sum += x;
        n++;
    }
    return n ? sum / n : NAN;
}

/* The p-quantile of sorted v[0..n), n ≥ 1 (numpy's and pandas' default). */
static double quantile_sorted(const double *v, int n, double p)
{
    double h = p * (n - 1);
    int lo = (int)floor(h);
    if (lo >= n - 1) return v[n - 1];
    return v[lo] + (h - lo) * (v[lo + 1] - v[lo]);
}

kgl_spread kgl_spread_of(const double *x, int n)
{
    kgl_spread sp = {NAN, NAN, NAN, NAN, NAN, NAN, 0};
    double *v = kgl_xmalloc(((size_t)n + 1) * sizeof *v), sum = 0;
    for (int k = 0; k < n; k++)
        if (!isnan(x[k])) v[sp.n++] = x[k], sum += x[k];
    if (sp.n > 0) {
        qsort(v, (size_t)sp.n, sizeof *v, kgl_cmp_double);
        sp.min = v[0];
        sp.q1 = quantile_sorted(v, sp.n, 0.25);
        sp.median = quantile_sorted(v, sp.n, 0.5);
        sp.q3 = quantile_sorted(v, sp.n, 0.75);
        sp.max = v[sp.n - 1];
        sp.mean = sum / sp.n;
    }
    free(v);
    return sp;
}

bool kgl_saturation_is_frozen(double final_aux, double floor_value, double multiple)
{
    if (isnan(final_aux) || isnan(floor_value)) return false;
    double bound = floor_value > 0 ? multiple * floor_value : log(2.0);
    return final_aux > bound;
}

double kgl_saturation_frozen_fraction(const double *final_aux, int n, double floor_value, double multiple,
                                      int *frozen, int *counted)
{
    *frozen = *counted = 0;
    for (int k = 0; k < n; k++) {
        if (isnan(final_aux[k])) continue;
        (*counted)++;
        *frozen += kgl_saturation_is_frozen(final_aux[k], floor_value, multiple);
    }
    return *counted ? (double)*frozen / *counted : NAN;
}

int kgl_sign_changes(const double *x, int n)
{
    int changes = 0, last_sign = 0;
    for (int k = 1; k < n; k++) {
        double dx = x[k] - x[k - 1];
        int sign = dx > 0 ? 1 : dx < 0 ? -1 : 0; /* NaN compares false: skipped */
        if (sign == 0) continue;
        if (last_sign != 0 && sign != last_sign) changes++;
        last_sign = sign;
    }
    return changes;
}

void kgl_saturation_run_summary(const kgl_saturation *s, int run, int layer, kgl_saturation_run_end *e)
{
    const kgl_saturation_trace *r = &s->runs[run];
    int S = s->steps;
    for (int k = 0; k < KGL_SAT_N_METRICS; k++) e->final[k] = e->window_median[k] = NAN;
    e->aux_mean = e->aux_window_min = e->aux_window_max = NAN;
    e->frozen = false;
    e->aux_sign_changes = -1;
    if (r->steps_done < S) return;
    memcpy(e->final, kgl_saturation_row(r, S, layer), sizeof e->final);
    double sum = 0, aux[KGL_SAT_WINDOW];
    int w0 = S > KGL_SAT_WINDOW ? S - KGL_SAT_WINDOW : 0, nw = S - w0;
    for (int k = 0; k < KGL_SAT_N_METRICS; k++) {
        for (int q = 0; q < nw; q++) aux[q] = kgl_saturation_row(r, w0 + q + 1, layer)[k];
        e->window_median[k] = kgl_spread_of(aux, nw).median;
    }
    for (int step = 1; step <= S; step++) sum += kgl_saturation_row(r, step, layer)[KGL_SAT_AUX_LOSS];
    if (isnan(sum)) return; /* not supervised */
    e->aux_mean = sum / S;
    for (int k = 0; k < nw; k++) aux[k] = kgl_saturation_row(r, w0 + k + 1, layer)[KGL_SAT_AUX_LOSS];
    kgl_spread w = kgl_spread_of(aux, nw);
    e->aux_window_min = w.min;
    e->aux_window_max = w.max;
    e->aux_sign_changes = kgl_sign_changes(aux, nw);
    e->frozen = kgl_saturation_is_frozen(e->final[KGL_SAT_AUX_LOSS], r->config->aux_floor, s->frozen_multiple);
}

void kgl_saturation_summarise(const kgl_saturation *s, int c, int layer, kgl_saturation_summary *sm)
{
    int last = s->steps, n_seeds = s->seeds;
    for (int k = 0; k < KGL_SAT_N_METRICS; k++) {
        sm->init[k] = kgl_saturation_seed_mean(s, c, layer, 1, (kgl_saturation_metric)k);
        sm->final[k] = kgl_saturation_seed_mean(s, c, layer, last, (kgl_saturation_metric)k);
    }
    double aux_total = 0;
    int aux_n = 0;
    for (int step = 1; step <= last; step++) {
        double x = kgl_saturation_seed_mean(s, c, layer, step, KGL_SAT_AUX_LOSS);
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
    /* the final values of every seed that reached the last step */
    double *v = kgl_xmalloc((size_t)n_seeds * sizeof *v);
    for (int k = 0; k < KGL_SAT_N_METRICS; k++) {
        for (int q = 0; q < n_seeds; q++) {
            const kgl_saturation_trace *r = &s->runs[c * n_seeds + q];
            v[q] = r->steps_done == last ? kgl_saturation_row(r, last, layer)[k] : NAN;
        }
        sm->spread[k] = kgl_spread_of(v, n_seeds);
    }
    sm->aux_floor = s->configs[c].aux_floor;
    sm->finished_seeds = 0;
    for (int q = 0; q < n_seeds; q++) {
        const kgl_saturation_trace *r = &s->runs[c * n_seeds + q];
        sm->finished_seeds += r->steps_done == last;
        v[q] = r->steps_done == last ? kgl_saturation_row(r, last, layer)[KGL_SAT_AUX_LOSS] : NAN;
    }
    int counted;
    sm->frozen_fraction = kgl_saturation_frozen_fraction(v, n_seeds, sm->aux_floor, s->frozen_multiple,
                                                         &sm->frozen_seeds, &counted);
    if (!s->configs[c].supervise) sm->frozen_fraction = NAN, sm->frozen_seeds = 0;
    free(v);
}

/* ---- files ------------------------------------------------------------------- */

/* The configuration's columns: config,dk,scale,init_scale,optimizer,lr,supervise,remedy
   and, in a grid with a stack, layers. */
#define CONFIG_COLUMNS "config,dk,scale,init_scale,optimizer,lr,supervise,remedy"
static void config_header(FILE *f, const kgl_saturation *s)
{
    fputs(s->stacked ? CONFIG_COLUMNS ",layers" : CONFIG_COLUMNS, f);
}
static void config_columns(FILE *f, const kgl_saturation *s, const kgl_saturation_config *c)
{
    char scale[32];
    if (c->scale == KGL_SCALE_SQRT) snprintf(scale, sizeof scale, "sqrt");
    else if (c->scale == KGL_SCALE_NONE) snprintf(scale, sizeof scale, "none");
    else snprintf(scale, sizeof scale, "%.17g", c->scale_value);
    fprintf(f, "\"%s\",%d,%s,%.17g,%s,%.17g,%s,%s", c->label, c->dk, scale, c->init_scale,
            c->optimizer == KGL_OPT_SGD ? "sgd" : "adam", c->lr, kgl_saturation_supervise_names[c->supervise],
            kgl_saturation_remedy_names[c->remedy]);
    if (s->stacked) fprintf(f, ",%d", c->layers);
}

/* ",<layer>" in a grid with a stack; nothing otherwise. */
static void layer_column(FILE *f, const kgl_saturation *s, int layer)
{
    if (s->stacked) fprintf(f, ",%d", layer);
}

/* ",x" with 17 significant digits, or "," for NaN (pandas reads NaN). */
static void csv_number(FILE *f, double x)
{
    if (isnan(x)) fputc(',', f);
    else fprintf(f, ",%.17g", x);
}

bool kgl_saturation_write_csv(const kgl_saturation *s, const char *path, char *err, size_t cap)
{
    kgl_outfile o;
    if (!kgl_outfile_open(&o, path, err, cap)) return false;
    FILE *f = o.f;
    config_header(f, s);
    fputs(s->stacked ? ",seed,step,layer" : ",seed,step", f);
    for (int k = 0; k < KGL_SAT_N_METRICS; k++) fprintf(f, ",%s", kgl_saturation_metric_names[k]);
    fputc('\n', f);
    for (int i = 0; i < s->n_runs; i++) {
        const kgl_saturation_trace *r = &s->runs[i];
        for (int step = 1; step <= r->steps_done; step++)
            for (int l = 0; l < r->config->layers; l++) {
                config_columns(f, s, r->config);
                fprintf(f, ",%d,%d", r->seed, step);
                layer_column(f, s, l);
                for (int k = 0; k < KGL_SAT_N_METRICS; k++) csv_number(f, kgl_saturation_row(r, step, l)[k]);
                fputc('\n', f);
            }
    }
    return kgl_outfile_commit(&o, err, cap);
}

bool kgl_saturation_write_seeds_csv(const kgl_saturation *s, const char *path, char *err, size_t cap)
{
    kgl_outfile o;
    if (!kgl_outfile_open(&o, path, err, cap)) return false;
    FILE *f = o.f;
    config_header(f, s);
    fputs(s->stacked ? ",heads,seed,layer" : ",heads,seed", f);
    fputs(",aux_floor,frozen,aux_mean,aux_sign_changes,aux_window_min,aux_window_max,fit_step,steps_done", f);
    for (int k = 0; k < KGL_SAT_N_METRICS; k++) fprintf(f, ",%s", kgl_saturation_metric_names[k]);
    fputc('\n', f);
    for (int i = 0; i < s->n_runs; i++)
        for (int l = 0; l < s->runs[i].config->layers; l++) {
            const kgl_saturation_trace *r = &s->runs[i];
            kgl_saturation_run_end e;
            kgl_saturation_run_summary(s, i, l, &e);
            config_columns(f, s, r->config);
            fprintf(f, ",%d,%d", r->config->heads, r->seed);
            layer_column(f, s, l);
            csv_number(f, r->config->aux_floor);
            if (r->config->supervise && r->steps_done == s->steps) fprintf(f, ",%d", e.frozen ? 1 : 0);
            else fputc(',', f);
            csv_number(f, e.aux_mean);
            if (e.aux_sign_changes >= 0) fprintf(f, ",%d", e.aux_sign_changes);
            else fputc(',', f);
            csv_number(f, e.aux_window_min);
            csv_number(f, e.aux_window_max);
            if (r->fit_step >= 0) fprintf(f, ",%ld", r->fit_step);
            else fputc(',', f);
            fprintf(f, ",%d", r->steps_done);
            for (int k = 0; k < KGL_SAT_N_METRICS; k++) csv_number(f, e.final[k]);
            fputc('\n', f);
        }
    return kgl_outfile_commit(&o, err, cap);
}

bool kgl_saturation_write_summary_csv(const kgl_saturation *s, const char *path, char *err, size_t cap)
{
    static const char *const stat[6] = {"min", "q1", "median", "q3", "max", "mean"};
    kgl_outfile o;
    if (!kgl_outfile_open(&o, path, err, cap)) return false;
    FILE *f = o.f;
    config_header(f, s);
    if (s->stacked) fputs(",layer", f);
    fputs(",heads,seeds,finished_seeds,aux_floor,frozen_seeds,frozen_fraction,fit_seeds", f);
    for (int k = 0; k < KGL_SAT_N_METRICS; k++)
        for (int q = 0; q < 6; q++) fprintf(f, ",%s_%s", kgl_saturation_metric_names[k], stat[q]);
    fputc('\n', f);
    for (int c = 0; c < s->n_configs; c++)
        for (int l = 0; l < s->configs[c].layers; l++) {
            kgl_saturation_summary sm;
            kgl_saturation_summarise(s, c, l, &sm);
            config_columns(f, s, &s->configs[c]);
            layer_column(f, s, l);
            fprintf(f, ",%d,%d,%d", s->configs[c].heads, s->seeds, sm.finished_seeds);
            csv_number(f, sm.aux_floor);
            if (s->configs[c].supervise) fprintf(f, ",%d", sm.frozen_seeds);
            else fputc(',', f);
            csv_number(f, sm.frozen_fraction);
            fprintf(f, ",%d", sm.fit_seeds);
            for (int k = 0; k < KGL_SAT_N_METRICS; k++) {
                const kgl_spread *sp = &sm.spread[k];
                double v[6] = {sp->min, sp->q1, sp->median, sp->q3, sp->max, sp->mean};
                for (int q = 0; q < 6; q++) csv_number(f, v[q]);
            }
            fputc('\n', f);
        }
    return kgl_outfile_commit(&o, err, cap);
}

/* One plotted metric: its title and axis, whether only supervised runs have
   it, and whether each layer of a stack has its own (the head diagnostics;
   the losses are the run's). */
typedef struct plot_spec {
    kgl_saturation_metric metric;
    const char *title, *y_label;
    bool log_y, supervised_only, per_layer;
} plot_spec;

static const plot_spec plots[] = {
    {KGL_SAT_MAX_PROB, "mean max_prob (largest attention weight per row)", "max_prob", false, false, true},
    {KGL_SAT_ENTROPY, "mean attention entropy", "entropy (nats)", false, false, true},
    {KGL_SAT_JAC_FRO, "mean softmax Jacobian norm ‖diag(a) − a aᵀ‖_F", "‖J‖_F", true, false, true},
    {KGL_SAT_GRAD_LOGITS, "gradient reaching the attention logits ‖∂L/∂S‖", "‖∂L/∂S‖", true, false, true},
    {KGL_SAT_GRAD_WQ, "gradient of the query weights ‖∂L/∂Wq‖", "‖∂L/∂Wq‖", true, false, true},
    {KGL_SAT_ATTN_TV, "attention movement: mean total variation from step 0", "TV distance", false, false, true},
    {KGL_SAT_LOSS, "loss (main + aux)", "loss", true, false, false},
    {KGL_SAT_AUX_LOSS, "head-supervision loss: mean −log A_h[i, t] over the supervised (i, r, t)", "aux loss", true, true,
     false},
    {KGL_SAT_SPEC_ADVISES, "spec[0][advises]: attention mass on the advisees", "spec", false, false, true},
};
#define N_PLOTS (int)(sizeof plots / sizeof plots[0])

/* "scale none, init-scale 3": what a panel of the per-metric plots holds. */
static void panel_name(const kgl_saturation_config *c, char *buf, size_t cap)
{
    if (c->scale == KGL_SCALE_SQRT) snprintf(buf, cap, "scale sqrt (1/√dk), init-scale %g", c->init_scale);
    else if (c->scale == KGL_SCALE_NONE) snprintf(buf, cap, "scale none (1), init-scale %g", c->init_scale);
    else snprintf(buf, cap, "scale %g, init-scale %g", c->scale_value, c->init_scale);
}

static bool same_panel(const kgl_saturation_config *a, const kgl_saturation_config *b)
{
    return a->scale == b->scale && a->scale_value == b->scale_value && a->init_scale == b->init_scale;
}

/* The per-seed picture of one supervised configuration: what the supervised
   rows see, a curve per seed (not means), the frozen seeds in the left
   column and the others in the right one, a row per diagnostic. */
typedef struct seed_plot {
    kgl_saturation_metric metric;
    const char *title, *y_label;
} seed_plot;
static const seed_plot seed_plots[] = {
    {KGL_SAT_AUX_LOSS, "supervision loss and its floor", "aux loss"},
    {KGL_SAT_GRAD_LOGITS_SUP, "gradient reaching their logits", "‖∂L/∂S‖, supervised rows"},
    {KGL_SAT_LOGIT_STEP, "their logits' largest move in one step", "max |ΔS|"},
    {KGL_SAT_WQ_STEP, "Adam's step on Wq in units of lr", "RMS |ΔWq| / lr"},
    {KGL_SAT_MAX_ABS_LOGIT, "largest attention logit", "max |S|"},
};
#define N_SEED_PLOTS (int)(sizeof seed_plots / sizeof seed_plots[0])

static bool write_seed_plots(const kgl_saturation *s, int c, const char *path, char *err, size_t cap)
{
    int S = s->steps, n_seeds = s->seeds;
    const kgl_saturation_config *cfg = &s->configs[c];
    double *x = kgl_xmalloc((size_t)S * sizeof(double));
    double *y = kgl_xmalloc(((size_t)n_seeds + 2) * N_SEED_PLOTS * S * sizeof(double));
    kgl_series *series = kgl_xmalloc(((size_t)n_seeds + 2) * N_SEED_PLOTS * sizeof *series);
    char(*names)[48] = kgl_xmalloc(((size_t)n_seeds + 1) * sizeof *names);
    bool *is_frozen = kgl_xmalloc((size_t)n_seeds * sizeof *is_frozen);
    kgl_lineplot lp[2 * N_SEED_PLOTS];
    char panel_titles[2 * N_SEED_PLOTS][128];
    for (int i = 0; i < S; i++) x[i] = i + 1;
    int n_frozen = 0;
    for (int q = 0; q < n_seeds; q++) {
        kgl_saturation_run_end e;
        kgl_saturation_run_summary(s, c * n_seeds + q, 0, &e);
        is_frozen[q] = e.frozen;
        n_frozen += e.frozen;
        snprintf(names[q], sizeof names[q], "seed %d", s->runs[c * n_seeds + q].seed);
    }
    snprintf(names[n_seeds], sizeof names[n_seeds], "floor %.3f", cfg->aux_floor);
    int groups[2], n_groups = 0; /* 1 = the frozen seeds, 0 = the others; only those that have seeds */
    if (n_frozen > 0) groups[n_groups++] = 1;
    if (n_frozen < n_seeds) groups[n_groups++] = 0;
    int n_panels = 0, used = 0;
    for (int p = 0; p < N_SEED_PLOTS; p++)
        for (int g = 0; g < n_groups; g++) {
            int n = 0;
            kgl_series *sp = series + used;
            for (int q = 0; q < n_seeds; q++) {
                if (is_frozen[q] != (groups[g] == 1)) continue;
                const kgl_saturation_trace *r = &s->runs[c * n_seeds + q];
                double *yy = y + (size_t)used * S;
                for (int step = 0; step < S; step++)
                    yy[step] = step < r->steps_done ? kgl_saturation_row(r, step + 1, 0)[seed_plots[p].metric] : NAN;
                if (seed_plots[p].metric == KGL_SAT_LOGIT_STEP && S > 1) /* from step 2: a move needs a step before */
                    sp[n++] = (kgl_series){names[q], S - 1, x + 1, yy + 1};
                else sp[n++] = (kgl_series){names[q], S, x, yy};
                used++;
            }
            if (seed_plots[p].metric == KGL_SAT_AUX_LOSS) {
                double *yy = y + (size_t)used * S;
                for (int step = 0; step < S; step++) yy[step] = cfg->aux_floor;
                sp[n++] = (kgl_series){names[n_seeds], S, x, yy};
                used++;
            }
            int in_group = groups[g] ? n_frozen : n_seeds - n_frozen;
            snprintf(panel_titles[n_panels], sizeof panel_titles[n_panels], "%s: %d %s seed%s", seed_plots[p].title,
                     in_group, groups[g] ? "frozen" : "other", in_group == 1 ? "" : "s");
            lp[n_panels] = (kgl_lineplot){panel_titles[n_panels], "step", seed_plots[p].y_label, true, false, sp, n};
            n_panels++;
        }
    char title[256];
    snprintf(title, sizeof title,
             "%s, the supervised rows: a line per seed; %d of %d frozen (supervision loss > %g × floor at step %d)",
             cfg->label, n_frozen, n_seeds, s->frozen_multiple, S);
    bool ok = kgl_svg_lineplot_grid(path, title, lp, n_panels, n_groups, err, cap);
    free(x);
    free(y);
    free(series);
    free(names);
    free(is_frozen);
    return ok;
}

/* The curves the per-metric plots can draw: one per configuration and
   layer, named by its configuration ("<label> layer l" in a stack of more
   than one layer, so that a one-layer grid's names are its labels). */
typedef struct plot_line {
    int config, layer;
    char label[128], short_label[128];
} plot_line;

static plot_line *plot_lines(const kgl_saturation *s, int *n_lines)
{
    int n = 0;
    for (int c = 0; c < s->n_configs; c++) n += s->configs[c].layers;
    plot_line *lines = kgl_xmalloc((size_t)n * sizeof *lines);
    n = 0;
    for (int c = 0; c < s->n_configs; c++)
        for (int l = 0; l < s->configs[c].layers; l++) {
            plot_line *x = &lines[n++];
            const kgl_saturation_config *cfg = &s->configs[c];
            x->config = c, x->layer = l;
            if (cfg->layers == 1) {
                snprintf(x->label, sizeof x->label, "%s", cfg->label);
                snprintf(x->short_label, sizeof x->short_label, "%s", cfg->short_label);
            } else {
                snprintf(x->label, sizeof x->label, "%s layer %d", cfg->label, l);
                snprintf(x->short_label, sizeof x->short_label, "%s layer %d", cfg->short_label, l);
            }
        }
    *n_lines = n;
    return lines;
}

/* Whether plot p draws line x: its layer (0 unless the metric is per layer)
   and its configuration (a supervised one for the supervised metrics). */
static bool plot_draws(const kgl_saturation *s, int p, const plot_line *x)
{
    return (plots[p].per_layer || x->layer == 0) && (!plots[p].supervised_only || s->configs[x->config].supervise);
}

bool kgl_saturation_write_plots(const kgl_saturation *s, const char *dir, char *err, size_t cap)
{
    int S = s->steps, n_cfg = s->n_configs, n_seeds = s->seeds, n_lines;
    const kgl_saturation_config *cfgs = s->configs;
    plot_line *lines = plot_lines(s, &n_lines);
    double *x = kgl_xmalloc((size_t)S * sizeof(double));
    double *y = kgl_xmalloc((size_t)N_PLOTS * n_lines * S * sizeof(double));
    kgl_series *series = kgl_xmalloc((size_t)N_PLOTS * n_lines * sizeof *series);
    kgl_series *by_panel = kgl_xmalloc((size_t)n_lines * sizeof *by_panel);
    kgl_lineplot *panels = kgl_xmalloc((size_t)n_cfg * sizeof *panels);
    char(*panel_titles)[96] = kgl_xmalloc((size_t)n_cfg * sizeof *panel_titles);
    kgl_lineplot lp[N_PLOTS];
    for (int i = 0; i < S; i++) x[i] = i + 1;
    /* the panels: every (scale, init-scale) in order of first appearance; a
       row of panels per scale, a column per init-scale */
    int *panel_of = kgl_xmalloc((size_t)n_cfg * sizeof *panel_of), *first = kgl_xmalloc((size_t)n_cfg * sizeof *first);
    int n_panels = 0, n_inits = 0;
    for (int c = 0; c < n_cfg; c++) {
        int k = 0;
        while (k < n_panels && !same_panel(&cfgs[first[k]], &cfgs[c])) k++;
        if (k == n_panels) first[n_panels++] = c;
        panel_of[c] = k;
    }
    for (int k = 0; k < n_panels; k++) n_inits += cfgs[first[k]].scale == cfgs[first[0]].scale &&
                                                   cfgs[first[k]].scale_value == cfgs[first[0]].scale_value;
    bool ok = true;
    char path[2048], title[256];
    for (int p = 0; p < N_PLOTS && ok; p++) {
        int n = 0;
        for (int i = 0; i < n_lines; i++) {
            if (!plot_draws(s, p, &lines[i])) continue;
            double *yy = y + ((size_t)p * n_lines + i) * S;
            for (int step = 1; step <= S; step++)
                yy[step - 1] = kgl_saturation_seed_mean(s, lines[i].config, lines[i].layer, step, plots[p].metric);
            series[p * n_lines + n] = (kgl_series){lines[i].label, S, x, yy};
            n++;
        }
        lp[p] = (kgl_lineplot){plots[p].title, "step", plots[p].y_label, plots[p].log_y, false, series + p * n_lines, n};
        if (n == 0) continue;
        /* the metric's own picture: a panel per scale and init-scale, so the
           curves of one panel differ only in what its legend names */
        int used = 0, n_shown = 0;
        for (int k = 0; k < n_panels; k++) {
            int m = 0;
            for (int i = 0; i < n_lines; i++) {
                if (panel_of[lines[i].config] != k || !plot_draws(s, p, &lines[i])) continue;
                double *yy = y + ((size_t)p * n_lines + i) * S;
                by_panel[used + m++] = (kgl_series){lines[i].short_label, S, x, yy};
            }
            if (m == 0) continue;
            panel_name(&cfgs[first[k]], panel_titles[n_shown], sizeof panel_titles[n_shown]);
            panels[n_shown] = (kgl_lineplot){panel_titles[n_shown], "step", plots[p].y_label, plots[p].log_y, false,
                                             by_panel + used, m};
            n_shown++;
            used += m;
        }
        snprintf(path, sizeof path, "%s/%s.svg", dir, kgl_saturation_metric_names[plots[p].metric]);
        snprintf(title, sizeof title, "%s: each line the mean of %d seed%s", plots[p].title, n_seeds,
                 n_seeds == 1 ? "" : "s");
        ok = kgl_svg_lineplot_grid(path, title, panels, n_shown, n_inits < n_shown ? n_inits : n_shown, err, cap);
    }
    if (ok) {
        kgl_lineplot shown[N_PLOTS];
        int n_shown = 0;
        for (int p = 0; p < N_PLOTS; p++)
            if (lp[p].n_series) shown[n_shown++] = lp[p];
        snprintf(path, sizeof path, "%s/saturation.svg", dir);
        snprintf(title, sizeof title, "saturation study: one head, d = dk, academic world; mean of %d seed%s", n_seeds,
                 n_seeds == 1 ? "" : "s");
        ok = kgl_svg_lineplot_grid(path, title, shown, n_shown, 3, err, cap);
    }
    for (int c = 0; c < n_cfg && ok; c++) {
        if (!cfgs[c].supervise) continue;
        snprintf(path, sizeof path, "%s/seeds_%d.svg", dir, c);
        ok = write_seed_plots(s, c, path, err, cap);
    }
    free(lines);
    free(x);
    free(y);
    free(series);
    free(by_panel);
    free(panels);
    free(panel_titles);
    free(panel_of);
    free(first);
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
    if (!kgl_saturation_write_csv(s, path, err, cap)) return false;
    snprintf(path, sizeof path, "%s/saturation_seeds.csv", dir);
    if (!kgl_saturation_write_seeds_csv(s, path, err, cap)) return false;
    snprintf(path, sizeof path, "%s/saturation_summary.csv", dir);
    if (!kgl_saturation_write_summary_csv(s, path, err, cap)) return false;
    return kgl_saturation_write_plots(s, dir, err, cap);
}
