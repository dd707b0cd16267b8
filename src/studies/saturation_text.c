/* saturation_text.c — a saturation study as the tables `kgl saturation`
 * prints: the summary at init and final, the spread over the seeds and, for
 * supervised configurations, the supervision loss against its floor, why
 * the frozen seeds stay frozen, and each seed's final supervision loss. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/studies.h"

/* The first columns of a table's row: the configuration, and in a grid with
   a stack the layer (e.g. "0"; "layer" in the header). */
static void print_row_name(FILE *f, const kgl_saturation *s, int w, const char *label, const char *layer)
{
    fprintf(f, "%-*s", w, label);
    if (s->stacked) fprintf(f, " %5s", layer);
}

/* Configuration c's layer l summarised into sm, and its row's name printed. */
static void summary_row(FILE *f, const kgl_saturation *s, int w, int c, int l, kgl_saturation_summary *sm)
{
    kgl_saturation_summarise(s, c, l, sm);
    char layer[16];
    snprintf(layer, sizeof layer, "%d", l);
    print_row_name(f, s, w, s->configs[c].label, layer);
}

/* Whether a supervised configuration has layers ≥ 1 (whose rows supervision
   does not reach: it acts on layer 0). */
static bool supervised_stack(const kgl_saturation *s)
{
    for (int c = 0; c < s->n_configs; c++)
        if (s->configs[c].supervise && s->configs[c].layers > 1) return true;
    return false;
}

/* The summary table: one row per configuration (and layer, in a stack), at
   init and final. */
static void print_table(FILE *f, const kgl_saturation *s)
{
    int w = 10, n_seeds = s->seeds;
    for (int c = 0; c < s->n_configs; c++)
        if ((int)strlen(s->configs[c].label) > w) w = (int)strlen(s->configs[c].label);
    fprintf(f, "saturation study: one head, d = dk (both-two-heads: two, d = 2 dk), academic world, %d steps,\n"
               "mean of %d seed%s\n"
               "(init = the forward pass of step 1; final = of step %d; TV = mean total variation of\n"
               " the attention rows from step 0; aux mean = the supervision loss averaged over all\n"
               " steps; fit = mean step at which every triple ranks first, or how many seeds fit)\n",
               s->steps, n_seeds, n_seeds == 1 ? "" : "s", s->steps);
    if (s->stacked)
        fprintf(f, "(a row per layer of the stack, L its layers: layer l's attention, over the states of the layer\n"
                   " below; loss, aux, aux mean and fit are the run's, on its layer 0 row)\n");
    if (supervised_stack(s))
        fprintf(f, "(supervision acts on layer 0 only (README: supervision reads the first layer); the\n"
                   " supervised rows' tables below are layer 0's)\n");
    fputc('\n', f);
    print_row_name(f, s, w, "", "");
    fprintf(f, " | %-38s | %s\n", "at init", "final");
    print_row_name(f, s, w, "configuration", "layer");
    fprintf(f, " | %8s %8s %9s %9s | %8s %8s %9s %9s %6s %8s %8s %8s %6s\n", "max_prob", "|J|_F", "|dL/dS|", "|dL/dWq|",
               "max_prob", "|J|_F", "|dL/dS|", "|dL/dWq|", "TV", "loss", "aux", "aux mean", "fit");
    for (int c = 0; c < s->n_configs; c++)
        for (int l = 0; l < s->configs[c].layers; l++) {
            kgl_saturation_summary sm;
            summary_row(f, s, w, c, l, &sm);
            fprintf(f, " | %8.3f %8.3f %9.2e %9.2e | %8.3f %8.3f %9.2e %9.2e %6.3f", sm.init[KGL_SAT_MAX_PROB],
                       sm.init[KGL_SAT_JAC_FRO], sm.init[KGL_SAT_GRAD_LOGITS], sm.init[KGL_SAT_GRAD_WQ],
                       sm.final[KGL_SAT_MAX_PROB], sm.final[KGL_SAT_JAC_FRO], sm.final[KGL_SAT_GRAD_LOGITS],
                       sm.final[KGL_SAT_GRAD_WQ], sm.final[KGL_SAT_ATTN_TV]);
            if (l > 0) { /* the run's columns: on layer 0's row */
                fprintf(f, "\n");
                continue;
            }
            fprintf(f, " %8.3f ", sm.final[KGL_SAT_LOSS]);
            if (isnan(sm.final[KGL_SAT_AUX_LOSS])) fprintf(f, "%8s %8s ", "-", "-");
            else fprintf(f, "%8.3f %8.3f ", sm.final[KGL_SAT_AUX_LOSS], sm.aux_mean);
            if (isnan(sm.fit_step)) fprintf(f, "%3d/%d\n", sm.fit_seeds, n_seeds);
            else fprintf(f, "%6.0f\n", sm.fit_step);
        }
}

/* A value of the spread tables: 3 decimals below 10 (0.770 against 0.775),
   fewer above, an exponent when tiny or huge; "-" for NaN. */
static void put_value(FILE *f, double x, int width)
{
    if (isnan(x)) fprintf(f, " %*s", width, "-");
    else if (x != 0 && (fabs(x) < 1e-3 || fabs(x) >= 1e5)) fprintf(f, " %*.2e", width, x);
    else fprintf(f, " %*.*f", width, fabs(x) >= 100 ? 0 : fabs(x) >= 10 ? 1 : 3, x);
}

/* Why the frozen seeds stay frozen: for each supervised configuration, its
   frozen seeds and the others apart, what the supervised rows see over the
   last KGL_SAT_WINDOW steps (each seed's median over those steps, then the
   median over the seeds of the group). */
static void print_mechanism_table(FILE *f, const kgl_saturation *s, int w)
{
    int n_seeds = s->seeds;
    static const int keys[5] = {KGL_SAT_GRAD_LOGITS_SUP, KGL_SAT_LOGIT_STEP, KGL_SAT_WQ_STEP, KGL_SAT_MAX_ABS_LOGIT,
                                KGL_SAT_MAX_PROB};
    fprintf(f, "\nthe supervised rows over the last %d steps, frozen seeds and the others apart (each seed's\n"
               "median over those steps, then the median over the group): |dL/dS| = gradient reaching their\n"
               "logits; step = max |change of their logits| in one step; Adam = RMS |change of Wq| / lr;\n"
               "max|S| = largest logit; flips = sign changes of the loss's change; range = its min and max\n\n",
               KGL_SAT_WINDOW);
    fprintf(f, "%-*s %-9s %5s | %9s %9s %9s %9s %8s %5s | %19s\n", w, "configuration", "seeds", "n", "|dL/dS|", "step",
               "Adam", "max|S|", "max_prob", "flips", "aux range");
    double *v = kgl_xmalloc((size_t)n_seeds * 8 * sizeof *v);
    for (int c = 0; c < s->n_configs; c++) {
        if (!s->configs[c].supervise) continue;
        for (int group = 1; group >= 0; group--) { /* frozen first */
            int n = 0;
            for (int q = 0; q < n_seeds; q++) {
                kgl_saturation_run_end e;
                kgl_saturation_run_summary(s, c * n_seeds + q, 0, &e);
                if (isnan(e.final[KGL_SAT_AUX_LOSS]) || e.frozen != (group == 1)) continue;
                for (int k = 0; k < 5; k++) v[k * n_seeds + n] = e.window_median[keys[k]];
                v[5 * n_seeds + n] = e.aux_sign_changes;
                v[6 * n_seeds + n] = e.aux_window_min;
                v[7 * n_seeds + n] = e.aux_window_max;
                n++;
            }
            if (n == 0) continue;
            fprintf(f, "%-*s %-9s %5d |", w, s->configs[c].label, group ? "frozen" : "the rest", n);
            for (int k = 0; k < 4; k++) put_value(f, kgl_spread_of(v + k * n_seeds, n).median, 9);
            fprintf(f, " %8.3f %5.0f |", kgl_spread_of(v + 4 * n_seeds, n).median,
                    kgl_spread_of(v + 5 * n_seeds, n).median);
            char range[48];
            snprintf(range, sizeof range, "%.3g-%.3g", kgl_spread_of(v + 6 * n_seeds, n).median,
                     kgl_spread_of(v + 7 * n_seeds, n).median);
            fprintf(f, " %19s\n", range);
        }
    }
    free(v);
}

/* Over the seeds, at the last step: every configuration's min, quartiles and
   max of max_prob, ‖∂L/∂S‖ and the loss; then, for the supervised ones, the
   supervision loss against its floor, the frozen fraction, and each seed's
   final supervision loss. */
static void print_spread_tables(FILE *f, const kgl_saturation *s)
{
    int w = 13, n_seeds = s->seeds;
    bool any_sup = false;
    for (int c = 0; c < s->n_configs; c++) {
        if ((int)strlen(s->configs[c].label) > w) w = (int)strlen(s->configs[c].label);
        any_sup |= s->configs[c].supervise != KGL_SAT_SUP_OFF;
    }
    fprintf(f, "\nover the %d seeds, at step %d: min, quartiles (q1, median, q3) and max\n\n", n_seeds, s->steps);
    static const int keys[3] = {KGL_SAT_MAX_PROB, KGL_SAT_GRAD_LOGITS, KGL_SAT_LOSS};
    static const char *const names[3] = {"max_prob", "|dL/dS|", "loss"};
    print_row_name(f, s, w, "", "");
    for (int k = 0; k < 3; k++) fprintf(f, " | %-49s", names[k]);
    fputc('\n', f);
    print_row_name(f, s, w, "configuration", "layer");
    for (int k = 0; k < 3; k++) fprintf(f, " | %9s %9s %9s %9s %9s", "min", "q1", "median", "q3", "max");
    fputc('\n', f);
    for (int c = 0; c < s->n_configs; c++)
        for (int l = 0; l < s->configs[c].layers; l++) {
            kgl_saturation_summary sm;
            summary_row(f, s, w, c, l, &sm);
            for (int k = 0; k < 3 && (l == 0 || keys[k] != KGL_SAT_LOSS); k++) { /* the loss: on layer 0's row */
                const kgl_spread *sp = &sm.spread[keys[k]];
                fprintf(f, " |");
                put_value(f, sp->min, 9), put_value(f, sp->q1, 9), put_value(f, sp->median, 9), put_value(f, sp->q3, 9);
                put_value(f, sp->max, 9);
            }
            fputc('\n', f);
        }
    if (!any_sup) return;
    if (supervised_stack(s)) fprintf(f, "\n(supervision acts on layer 0 only: these are layer 0's supervised rows)\n");
    fprintf(f, "\nsupervision loss at step %d against its floor (the least any attention can reach on these\n"
               "triples); frozen = above %g x floor; mass = attention on the targets (median); flips = sign\n"
               "changes of the step-to-step change over the last %d steps (median)\n\n",
               s->steps, s->frozen_multiple, KGL_SAT_WINDOW);
    fprintf(f, "%-*s | %6s %6s | %9s %9s %9s %9s %9s | %13s | %6s %5s\n", w, "configuration", "floor", "heads", "min",
               "q1", "median", "q3", "max", "frozen", "mass", "flips");
    for (int c = 0; c < s->n_configs; c++) {
        const kgl_saturation_config *x = &s->configs[c];
        if (!x->supervise) continue;
        kgl_saturation_summary sm;
        kgl_saturation_summarise(s, c, 0, &sm);
        const kgl_spread *a = &sm.spread[KGL_SAT_AUX_LOSS];
        double *flips = kgl_xmalloc((size_t)n_seeds * sizeof *flips);
        for (int q = 0; q < n_seeds; q++) {
            kgl_saturation_run_end e;
            kgl_saturation_run_summary(s, c * n_seeds + q, 0, &e);
            flips[q] = e.aux_sign_changes >= 0 ? e.aux_sign_changes : NAN;
        }
        kgl_spread fl = kgl_spread_of(flips, n_seeds);
        free(flips);
        char frozen[32];
        snprintf(frozen, sizeof frozen, "%d/%d = %.2f", sm.frozen_seeds, sm.finished_seeds, sm.frozen_fraction);
        fprintf(f, "%-*s | %6.3f %6d |", w, x->label, sm.aux_floor, x->heads);
        put_value(f, a->min, 9), put_value(f, a->q1, 9), put_value(f, a->median, 9), put_value(f, a->q3, 9);
        put_value(f, a->max, 9);
        fprintf(f, " | %13s | %6.3f %5.0f\n", frozen, sm.spread[KGL_SAT_TARGET_MASS].median, fl.median);
    }
    print_mechanism_table(f, s, w);
    if (n_seeds > 20) return; /* the CSV has them */
    fprintf(f, "\nsupervision loss at step %d, seed by seed (* frozen)\n\n%-*s", s->steps, w, "configuration");
    for (int q = 0; q < n_seeds; q++) fprintf(f, " %7d ", q + 1);
    fputc('\n', f);
    for (int c = 0; c < s->n_configs; c++) {
        if (!s->configs[c].supervise) continue;
        fprintf(f, "%-*s", w, s->configs[c].label);
        for (int q = 0; q < n_seeds; q++) {
            kgl_saturation_run_end e;
            kgl_saturation_run_summary(s, c * n_seeds + q, 0, &e);
            double x = e.final[KGL_SAT_AUX_LOSS];
            if (isnan(x)) fprintf(f, " %7s ", "-");
            else fprintf(f, x < 100 ? " %7.3f%c" : " %7.1f%c", x, e.frozen ? '*' : ' ');
        }
        fputc('\n', f);
    }
}

void kgl_saturation_tables_write(FILE *f, const kgl_saturation *s)
{
    print_table(f, s);
    print_spread_tables(f, s);
}
