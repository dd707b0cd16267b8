/* cmd_saturation.c — `kgl saturation`: the softmax-saturation study as one
 * command. For every combination of the axes it trains the layer (one head,
 * d = dk, on the academic world) for each seed, measures the attention
 * diagnostics at every step, and writes a CSV, SVG plots and a summary. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

static const char help[] =
    "usage: kgl saturation [OPTIONS]\n\n"
    "Trains the layer of MODEL.md with one head and d = dk on the academic world\n"
    "for every combination of the axes below and every seed, measuring at every\n"
    "step how saturated the attention is and how much gradient reaches it.\n\n"
    "axes (comma lists)\n"
    "  --dk 4,64,256          head width (d_model = dk, one head)\n"
    "  --scale sqrt,none      attention logit scale: sqrt (1/sqrt(dk)), none, or a number\n"
    "  --init-scale 1,3       attention weights ~ N(0, (s/sqrt(d))^2)\n"
    "  --optimizer adam       adam and/or sgd\n"
    "  --lr 0.01              learning rates\n"
    "  --supervise off        off and/or on (head 0 supervised on advises)\n"
    "  --remedies             also run each configuration with --qk-norm and with a\n"
    "                         learned temperature (remedy: none, qk-norm, temperature)\n"
    "other\n"
    "  --momentum M           SGD momentum (default 0)\n"
    "  --steps 300            steps per run\n"
    "  --seeds 3              seeds 1..N per configuration (results are means)\n"
    "  --jobs 2               runs in parallel (results do not depend on it)\n"
    "  --out DIR              where saturation.csv and the SVG plots go\n"
    "                         (default build/saturation)\n"
    "  --json                 print {\"configs\":[...]} instead of the table\n"
    "  --quiet                no progress\n"
    "Diagnostics at step k describe the forward pass of step k (the parameters\n"
    "after k-1 updates); 'init' is step 1, 'final' the last step.\n"
    "exit status: 0 done, 1 a run failed or a file could not be written, 2 bad arguments\n";

enum { REMEDY_NONE, REMEDY_QK_NORM, REMEDY_TEMPERATURE };
static const char *const remedy_names[] = {"none", "qk-norm", "temperature"};

/* What is recorded per step (the CSV's metric columns, in order). */
enum {
    M_LOSS, M_MAIN, M_AUX, M_MAX_PROB, M_MAX_PROB_MIN, M_ENTROPY, M_MAX_LOGIT, M_JAC, M_GRAD_S, M_GRAD_WQ, M_GRAD_WK,
    M_WQ_MOVE, M_WK_MOVE, M_TV, M_SPEC, N_METRICS
};
static const char *const metric_names[N_METRICS] = {
    "loss",          "main_loss",   "aux_loss", "max_prob", "max_prob_min", "entropy", "max_abs_logit", "jac_fro",
    "grad_logits",   "grad_wq",     "grad_wk",  "wq_move",  "wk_move",      "attn_tv", "spec_advises"};

typedef struct sat_config {
    int dk;
    kgl_scale_kind scale;
    double scale_value;
    double init_scale;
    kgl_optimizer_kind optimizer;
    double lr;
    bool supervise;
    int remedy;
    char label[96];
} sat_config;

typedef struct sat_run {
    const sat_config *cfg;
    int seed;
    double *rows;   /* steps x N_METRICS */
    long fit_step;  /* -1 if never fit */
    int steps_done; /* fewer than --steps if the loss became non-finite */
} sat_run;

typedef struct sat_study {
    const data_view *v;
    int advises;
    int steps;
    double momentum;
    sat_run *runs;
    int n_runs;
    int next; /* next run to take (under lock) */
    int done;
    bool quiet, tty;
    pthread_mutex_t lock;
} sat_study;

/* ---- the axes ---------------------------------------------------------------- */

typedef struct axis {
    int n;
    double v[16];
    char text[16][32];
} axis;

static bool parse_axis(cli_args *a, axis *ax, const char *const *words, const double *word_values, int n_words,
                       double lo, double hi)
{
    const char *opt = a->opt, *s = cli_value(a);
    if (!s) return false;
    ax->n = 0;
    char copy[512];
    snprintf(copy, sizeof copy, "%s", s);
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        if (ax->n == 16) {
            cli_usage_error(a, "%s takes at most 16 values", opt);
            return false;
        }
        snprintf(ax->text[ax->n], sizeof ax->text[ax->n], "%s", tok);
        int w = 0;
        while (w < n_words && strcmp(tok, words[w]) != 0) w++;
        if (w < n_words) {
            ax->v[ax->n++] = word_values[w];
            continue;
        }
        char *end;
        double x = strtod(tok, &end);
        if (end == tok || *end || !isfinite(x) || x < lo || x > hi) {
            cli_usage_error(a, "%s: '%s' is not %s", opt, tok,
                            n_words ? "one of the allowed words or a number in range" : "a number in range");
            return false;
        }
        ax->v[ax->n++] = x;
    }
    if (ax->n == 0) {
        cli_usage_error(a, "%s needs at least one value", opt);
        return false;
    }
    return true;
}

/* ---- one run ----------------------------------------------------------------- */

static void run_one(sat_study *st, sat_run *run)
{
    const sat_config *c = run->cfg;
    const data_view *v = st->v;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.dim = c->dk;
    cfg.heads = 1;
    cfg.scale = c->scale;
    cfg.scale_value = c->scale_value;
    cfg.init_scale = c->init_scale;
    cfg.qk_norm = c->remedy == REMEDY_QK_NORM;
    cfg.learn_temperature = c->remedy == REMEDY_TEMPERATURE;
    int head_of[256];
    for (int r = 0; r < v->ds.n_relations && r < 256; r++) head_of[r] = -1;
    head_of[st->advises] = 0;
    kgl_train_config tc = {1024, (uint64_t)run->seed, {0}, c->supervise ? head_of : NULL, 1.0, false, false};
    kgl_optim_defaults(&tc.optim);
    tc.optim.kind = c->optimizer;
    tc.optim.lr = c->lr;
    if (c->optimizer == KGL_OPT_SGD) tc.optim.momentum = st->momentum;
    kgl_trainer tr;
    kgl_trainer_init(&tr, &v->ds, v->split[0], v->n[0], &cfg, &tc);
    kgl_diag dg;
    kgl_diag_init(&dg, &tr);
    kgl_eval ev;
    kgl_eval_init(&ev, v->ds.n_entities, v->ds.n_relations);
    run->fit_step = -1;
    run->steps_done = 0;
    for (int step = 1; step <= st->steps; step++) {
        double loss = kgl_trainer_compute(&tr);
        if (!isfinite(loss)) break;
        kgl_diag_measure(&dg, &tr);
        const kgl_head_diag *h = &dg.head[0];
        double *row = run->rows + (size_t)(step - 1) * N_METRICS;
        double values[N_METRICS] = {loss,         tr.last_main,   tr.last_aux, h->max_prob_mean, h->max_prob_min,
                                    h->entropy,   h->max_abs_logit, h->jac_fro, h->grad_logits,  h->grad_wq,
                                    h->grad_wk,   h->wq_move,     h->wk_move,  h->attn_tv,      dg.spec[st->advises]};
        memcpy(row, values, sizeof values);
        kgl_trainer_update(&tr);
        run->steps_done = step;
        if (run->fit_step < 0 && kgl_trainer_fits(&tr, &ev)) run->fit_step = step;
    }
    kgl_eval_free(&ev);
    kgl_diag_free(&dg);
    kgl_trainer_free(&tr);
}

static void *worker(void *arg)
{
    sat_study *st = arg;
    for (;;) {
        pthread_mutex_lock(&st->lock);
        int k = st->next < st->n_runs ? st->next++ : -1;
        pthread_mutex_unlock(&st->lock);
        if (k < 0) return NULL;
        run_one(st, &st->runs[k]);
        pthread_mutex_lock(&st->lock);
        st->done++;
        if (!st->quiet && st->tty) {
            fprintf(stderr, "\rsaturation: %d/%d runs", st->done, st->n_runs);
            if (st->done == st->n_runs) fputc('\n', stderr);
        }
        pthread_mutex_unlock(&st->lock);
    }
}

/* ---- results ----------------------------------------------------------------- */

/* Mean over the seeds of configuration `c` of metric `k` at step `step`
   (1-based), over the seeds whose run reached that step; NaN if none did. */
static double seed_mean(const sat_study *st, int first_run, int n_seeds, int step, int k)
{
    double s = 0;
    int n = 0;
    for (int q = 0; q < n_seeds; q++) {
        const sat_run *r = &st->runs[first_run + q];
        if (step > r->steps_done) continue;
        double x = r->rows[(size_t)(step - 1) * N_METRICS + k];
        if (isnan(x)) continue;
        s += x;
        n++;
    }
    return n ? s / n : NAN;
}

static bool write_csv(const char *path, const sat_study *st, char *err, size_t cap)
{
    char tmp[2100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, cap, "%s: cannot write: %s", tmp, strerror(errno));
        return false;
    }
    fprintf(f, "config,dk,scale,init_scale,optimizer,lr,supervise,remedy,seed,step");
    for (int k = 0; k < N_METRICS; k++) fprintf(f, ",%s", metric_names[k]);
    fputc('\n', f);
    for (int i = 0; i < st->n_runs; i++) {
        const sat_run *r = &st->runs[i];
        const sat_config *c = r->cfg;
        char scale[32];
        if (c->scale == KGL_SCALE_SQRT) snprintf(scale, sizeof scale, "sqrt");
        else if (c->scale == KGL_SCALE_NONE) snprintf(scale, sizeof scale, "none");
        else snprintf(scale, sizeof scale, "%.17g", c->scale_value);
        for (int s = 1; s <= r->steps_done; s++) {
            fprintf(f, "\"%s\",%d,%s,%.17g,%s,%.17g,%s,%s,%d,%d", c->label, c->dk, scale, c->init_scale,
                    c->optimizer == KGL_OPT_SGD ? "sgd" : "adam", c->lr, c->supervise ? "on" : "off",
                    remedy_names[c->remedy], r->seed, s);
            for (int k = 0; k < N_METRICS; k++) {
                double x = r->rows[(size_t)(s - 1) * N_METRICS + k];
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

typedef struct plot_spec {
    int metric;
    const char *title, *y_label;
    bool log_y, supervised_only;
} plot_spec;

static const plot_spec plots[] = {
    {M_MAX_PROB, "mean max_prob (largest attention weight per row)", "max_prob", false, false},
    {M_ENTROPY, "mean attention entropy", "entropy (nats)", false, false},
    {M_JAC, "mean softmax Jacobian norm ‖diag(a) − a aᵀ‖_F", "‖J‖_F", true, false},
    {M_GRAD_S, "gradient reaching the attention logits ‖∂L/∂S‖", "‖∂L/∂S‖", true, false},
    {M_GRAD_WQ, "gradient of the query weights ‖∂L/∂Wq‖", "‖∂L/∂Wq‖", true, false},
    {M_TV, "attention movement: mean total variation from step 0", "TV distance", false, false},
    {M_LOSS, "loss (main + aux)", "loss", true, false},
    {M_AUX, "head-supervision loss −log A[i, advisee]", "aux loss", true, true},
    {M_SPEC, "spec[0][advises]: attention mass on the advisees", "spec", false, false},
};
#define N_PLOTS (int)(sizeof plots / sizeof plots[0])

static bool write_plots(const char *dir, const sat_study *st, const sat_config *cfgs, int n_cfg, int n_seeds,
                        char *err, size_t cap)
{
    int S = st->steps;
    double *x = malloc((size_t)S * sizeof(double));
    double *y = malloc((size_t)N_PLOTS * n_cfg * S * sizeof(double));
    kgl_series *series = malloc((size_t)N_PLOTS * n_cfg * sizeof *series);
    kgl_lineplot lp[N_PLOTS];
    for (int s = 0; s < S; s++) x[s] = s + 1;
    bool ok = true;
    char path[2048];
    for (int p = 0; p < N_PLOTS && ok; p++) {
        int n = 0;
        for (int c = 0; c < n_cfg; c++) {
            if (plots[p].supervised_only && !cfgs[c].supervise) continue;
            double *yy = y + ((size_t)p * n_cfg + c) * S;
            for (int s = 1; s <= S; s++) yy[s - 1] = seed_mean(st, c * n_seeds, n_seeds, s, plots[p].metric);
            series[p * n_cfg + n] = (kgl_series){cfgs[c].label, S, x, yy};
            n++;
        }
        lp[p] = (kgl_lineplot){plots[p].title, "step", plots[p].y_label, plots[p].log_y, false, series + p * n_cfg, n};
        if (n == 0) continue;
        snprintf(path, sizeof path, "%s/%s.svg", dir, metric_names[plots[p].metric]);
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

/* The summary of one configuration: means over its seeds at init and at the end. */
typedef struct sat_summary {
    double init[N_METRICS], final[N_METRICS];
    double aux_mean; /* the aux loss averaged over every step of the run (then over seeds) */
    double fit_step; /* mean over seeds, NaN unless every seed fit */
    int fit_seeds;
} sat_summary;

static void summarise(const sat_study *st, int c, int n_seeds, sat_summary *sm)
{
    int last = st->steps;
    for (int k = 0; k < N_METRICS; k++) {
        sm->init[k] = seed_mean(st, c * n_seeds, n_seeds, 1, k);
        sm->final[k] = seed_mean(st, c * n_seeds, n_seeds, last, k);
    }
    double aux_total = 0;
    int aux_n = 0;
    for (int step = 1; step <= last; step++) {
        double x = seed_mean(st, c * n_seeds, n_seeds, step, M_AUX);
        if (!isnan(x)) aux_total += x, aux_n++;
    }
    sm->aux_mean = aux_n ? aux_total / aux_n : NAN;
    double fs = 0;
    sm->fit_seeds = 0;
    for (int q = 0; q < n_seeds; q++) {
        const sat_run *r = &st->runs[c * n_seeds + q];
        if (r->fit_step >= 0) fs += (double)r->fit_step, sm->fit_seeds++;
    }
    sm->fit_step = sm->fit_seeds == n_seeds ? fs / n_seeds : NAN;
}

static void json_config(const sat_config *c, const sat_summary *sm, int seed)
{
    printf("{\"label\":");
    kgl_json_string(stdout, c->label);
    printf(",\"dk\":%d,\"scale\":", c->dk);
    if (c->scale == KGL_SCALE_SQRT) printf("\"sqrt\"");
    else if (c->scale == KGL_SCALE_NONE) printf("\"none\"");
    else kgl_json_number(stdout, c->scale_value);
    printf(",\"init_scale\":");
    kgl_json_number(stdout, c->init_scale);
    printf(",\"optimizer\":\"%s\",\"lr\":", c->optimizer == KGL_OPT_SGD ? "sgd" : "adam");
    kgl_json_number(stdout, c->lr);
    printf(",\"supervise\":%s,\"remedy\":\"%s\"", c->supervise ? "true" : "false", remedy_names[c->remedy]);
    if (seed > 0) printf(",\"seed\":%d", seed);
    static const int init_keys[] = {M_MAX_PROB, M_ENTROPY, M_JAC, M_GRAD_S, M_GRAD_WQ};
    static const char *const init_names[] = {"max_prob", "entropy", "jac_fro", "grad_logits", "grad_wq"};
    printf(",\"init\":{");
    for (int k = 0; k < 5; k++) {
        printf("%s\"%s\":", k ? "," : "", init_names[k]);
        kgl_json_number(stdout, sm->init[init_keys[k]]);
    }
    static const int final_keys[] = {M_MAX_PROB, M_ENTROPY, M_JAC, M_GRAD_S, M_GRAD_WQ, M_TV, M_WQ_MOVE, M_LOSS, M_AUX};
    static const char *const final_names[] = {"max_prob",    "entropy",  "jac_fro", "grad_logits", "grad_wq",
                                              "attn_change", "wq_move", "loss",    "aux_loss"};
    printf("},\"final\":{");
    for (int k = 0; k < 9; k++) {
        printf("%s\"%s\":", k ? "," : "", final_names[k]);
        kgl_json_number(stdout, sm->final[final_keys[k]]);
    }
    printf(",\"aux_loss_mean\":");
    kgl_json_number(stdout, sm->aux_mean);
    printf(",\"fit_step\":");
    kgl_json_number(stdout, sm->fit_step);
    printf(",\"spec\":");
    kgl_json_number(stdout, sm->final[M_SPEC]);
    printf("}}");
}

static void print_table(const sat_study *st, const sat_config *cfgs, int n_cfg, int n_seeds)
{
    int w = 10;
    for (int c = 0; c < n_cfg; c++)
        if ((int)strlen(cfgs[c].label) > w) w = (int)strlen(cfgs[c].label);
    printf("saturation study: one head, d = dk, academic world, %d steps, mean of %d seed%s\n"
           "(init = the forward pass of step 1; final = of step %d; TV = mean total variation of\n"
           " the attention rows from step 0; aux mean = the supervision loss averaged over all\n"
           " steps; fit = mean step at which every triple ranks first, or how many seeds fit)\n\n",
           st->steps, n_seeds, n_seeds == 1 ? "" : "s", st->steps);
    printf("%-*s | %-38s | %s\n", w, "", "at init", "final");
    printf("%-*s | %8s %8s %9s %9s | %8s %8s %9s %9s %6s %8s %8s %8s %6s\n", w, "configuration", "max_prob", "|J|_F",
           "|dL/dS|", "|dL/dWq|", "max_prob", "|J|_F", "|dL/dS|", "|dL/dWq|", "TV", "loss", "aux", "aux mean", "fit");
    for (int c = 0; c < n_cfg; c++) {
        sat_summary sm;
        summarise(st, c, n_seeds, &sm);
        printf("%-*s | %8.3f %8.3f %9.2e %9.2e | %8.3f %8.3f %9.2e %9.2e %6.3f %8.3f ", w, cfgs[c].label,
               sm.init[M_MAX_PROB], sm.init[M_JAC], sm.init[M_GRAD_S], sm.init[M_GRAD_WQ], sm.final[M_MAX_PROB],
               sm.final[M_JAC], sm.final[M_GRAD_S], sm.final[M_GRAD_WQ], sm.final[M_TV], sm.final[M_LOSS]);
        if (isnan(sm.final[M_AUX])) printf("%8s %8s ", "-", "-");
        else printf("%8.3f %8.3f ", sm.final[M_AUX], sm.aux_mean);
        if (isnan(sm.fit_step)) printf("%3d/%d\n", sm.fit_seeds, n_seeds);
        else printf("%6.0f\n", sm.fit_step);
    }
}

int cmd_saturation(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "saturation", argc, argv);
    static const char *const scale_words[] = {"sqrt", "none"};
    static const double scale_codes[] = {-1, -2};
    static const char *const opt_words[] = {"adam", "sgd"};
    static const double opt_codes[] = {KGL_OPT_ADAM, KGL_OPT_SGD};
    static const char *const sup_words[] = {"off", "on"};
    static const double sup_codes[] = {0, 1};
    axis dk = {3, {4, 64, 256}, {"4", "64", "256"}}, scale = {2, {-1, -2}, {"sqrt", "none"}},
         init = {2, {1, 3}, {"1", "3"}}, opt = {1, {KGL_OPT_ADAM}, {"adam"}}, lr = {1, {0.01}, {"0.01"}},
         sup = {1, {0}, {"off"}};
    bool remedies = false, json = false, quiet = false;
    long steps = 300, seeds = 3, jobs = 2;
    double momentum = 0;
    const char *out = "build/saturation";
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (cli_is(&a, "--dk")) {
            if (!parse_axis(&a, &dk, NULL, NULL, 0, 1, 4096)) return EXIT_USAGE;
            for (int k = 0; k < dk.n; k++)
                if (dk.v[k] != floor(dk.v[k])) return cli_usage_error(&a, "--dk: '%s' is not a whole number", dk.text[k]);
        } else if (cli_is(&a, "--scale")) {
            if (!parse_axis(&a, &scale, scale_words, scale_codes, 2, 1e-300, 1e300)) return EXIT_USAGE;
        } else if (cli_is(&a, "--init-scale")) {
            if (!parse_axis(&a, &init, NULL, NULL, 0, 0, 1e6)) return EXIT_USAGE;
        } else if (cli_is(&a, "--optimizer")) {
            if (!parse_axis(&a, &opt, opt_words, opt_codes, 2, 1, 0)) return EXIT_USAGE;
        } else if (cli_is(&a, "--lr")) {
            if (!parse_axis(&a, &lr, NULL, NULL, 0, 0, 1e6)) return EXIT_USAGE;
        } else if (cli_is(&a, "--supervise")) {
            if (!parse_axis(&a, &sup, sup_words, sup_codes, 2, 1, 0)) return EXIT_USAGE;
        } else if (cli_is(&a, "--remedies")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            remedies = true;
        } else if (cli_is(&a, "--momentum")) {
            if (!cli_double(&a, 0, 1, &momentum)) return EXIT_USAGE;
        } else if (cli_is(&a, "--steps")) {
            if (!cli_int(&a, 1, 1000000, &steps)) return EXIT_USAGE;
        } else if (cli_is(&a, "--seeds")) {
            if (!cli_int(&a, 1, 1000, &seeds)) return EXIT_USAGE;
        } else if (cli_is(&a, "--jobs")) {
            if (!cli_int(&a, 1, 64, &jobs)) return EXIT_USAGE;
        } else if (cli_is(&a, "--out")) {
            if (!(out = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--json")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            json = true;
        } else if (cli_is(&a, "--quiet")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            quiet = true;
        } else {
            return cli_unknown(&a);
        }
    }
    data_args d = {0};
    data_view v;
    int st_code;
    if ((st_code = data_load("saturation", &d, &v, true))) return st_code;
    int n_rem = remedies ? 3 : 1;
    int n_cfg = dk.n * scale.n * init.n * opt.n * lr.n * sup.n * n_rem;
    sat_config *cfgs = calloc((size_t)n_cfg, sizeof *cfgs);
    int c = 0;
    for (int i0 = 0; i0 < dk.n; i0++)
        for (int i1 = 0; i1 < scale.n; i1++)
            for (int i2 = 0; i2 < init.n; i2++)
                for (int i3 = 0; i3 < opt.n; i3++)
                    for (int i4 = 0; i4 < lr.n; i4++)
                        for (int i5 = 0; i5 < sup.n; i5++)
                            for (int i6 = 0; i6 < n_rem; i6++, c++) {
                                sat_config *x = &cfgs[c];
                                x->dk = (int)dk.v[i0];
                                x->scale = scale.v[i1] == -1 ? KGL_SCALE_SQRT
                                           : scale.v[i1] == -2 ? KGL_SCALE_NONE
                                                               : KGL_SCALE_VALUE;
                                x->scale_value = scale.v[i1];
                                x->init_scale = init.v[i2];
                                x->optimizer = (kgl_optimizer_kind)opt.v[i3];
                                x->lr = lr.v[i4];
                                x->supervise = sup.v[i5] != 0;
                                x->remedy = i6;
                                int len = snprintf(x->label, sizeof x->label, "dk=%s %s s=%s", dk.text[i0],
                                                   scale.text[i1], init.text[i2]);
                                if (opt.n > 1 || x->optimizer != KGL_OPT_ADAM)
                                    len += snprintf(x->label + len, sizeof x->label - (size_t)len, " %s", opt.text[i3]);
                                if (lr.n > 1) len += snprintf(x->label + len, sizeof x->label - (size_t)len, " lr=%s", lr.text[i4]);
                                if (sup.n > 1 || x->supervise)
                                    len += snprintf(x->label + len, sizeof x->label - (size_t)len, " sup=%s", sup.text[i5]);
                                if (remedies) snprintf(x->label + len, sizeof x->label - (size_t)len, " %s", remedy_names[i6]);
                            }
    sat_study st = {&v, kgl_dataset_relation_id(&v.ds, "advises"), (int)steps, momentum, NULL, n_cfg * (int)seeds,
                    0, 0, quiet || json, isatty(STDERR_FILENO), PTHREAD_MUTEX_INITIALIZER};
    if (st.advises < 0) {
        fprintf(stderr, "kgl saturation: the academic world has no 'advises' relation\n");
        return EXIT_USAGE;
    }
    st.runs = calloc((size_t)st.n_runs, sizeof *st.runs);
    for (int k = 0; k < st.n_runs; k++) {
        st.runs[k].cfg = &cfgs[k / seeds];
        st.runs[k].seed = 1 + k % (int)seeds;
        st.runs[k].rows = malloc((size_t)steps * N_METRICS * sizeof(double));
    }
    double t0 = now_seconds();
    pthread_t threads[64];
    int n_threads = (int)(jobs < st.n_runs ? jobs : st.n_runs);
    for (int k = 1; k < n_threads; k++) pthread_create(&threads[k], NULL, worker, &st);
    worker(&st);
    for (int k = 1; k < n_threads; k++) pthread_join(threads[k], NULL);
    double seconds = now_seconds() - t0;

    int status = 0;
    for (int k = 0; k < st.n_runs; k++)
        if (st.runs[k].steps_done < steps) {
            fprintf(stderr, "kgl saturation: %s seed %d: the loss became non-finite at step %d\n", st.runs[k].cfg->label,
                    st.runs[k].seed, st.runs[k].steps_done + 1);
            status = 1;
        }
    char err[8192], path[2048];
    if (mkdir(out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "kgl saturation: %s: cannot create the folder: %s\n", out, strerror(errno));
        status = 1;
    } else {
        snprintf(path, sizeof path, "%s/saturation.csv", out);
        if (!write_csv(path, &st, err, sizeof err) || !write_plots(out, &st, cfgs, n_cfg, (int)seeds, err, sizeof err)) {
            fprintf(stderr, "kgl saturation: %s\n", err);
            status = 1;
        }
    }
    if (json) {
        printf("{\"steps\":%ld,\"seeds\":%ld,\"seconds\":", steps, seeds);
        kgl_json_number(stdout, seconds);
        printf(",\"configs\":[");
        for (int k = 0; k < n_cfg; k++) {
            sat_summary sm;
            summarise(&st, k, (int)seeds, &sm);
            if (k) putchar(',');
            json_config(&cfgs[k], &sm, seeds == 1 ? st.runs[k].seed : 0);
        }
        printf("]}\n");
    } else {
        print_table(&st, cfgs, n_cfg, (int)seeds);
        printf("\n%d runs in %.1f s; %s/saturation.csv, %s/saturation.svg and one SVG per metric\n", st.n_runs, seconds,
               out, out);
    }
    for (int k = 0; k < st.n_runs; k++) free(st.runs[k].rows);
    free(st.runs);
    free(cfgs);
    data_free(&v);
    return status;
}
