/* cmd_saturation.c — `kgl saturation`: the softmax-saturation study as one
 * command. The study itself (the grid, the runs, the summaries, the CSV and
 * the plots) is the library's (kgl_saturation_run, src/studies/saturation.c);
 * this file parses the options into its spec and prints the table or JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static const char help[] =
    "usage: kgl saturation [OPTIONS]\n\n"
    "Trains the layer (README, \"The model, exactly\") with one head and d = dk on\n"
    "the academic world for every combination of the axes below and every seed,\n"
    "measuring at every step how saturated the attention is and how much gradient\n"
    "reaches it; reports means, the spread over the seeds and, for supervised\n"
    "heads, the fraction of seeds still frozen at the last step.\n\n"
    "axes (comma lists)\n"
    "  --dk 4,64,256          head width (d = dk, one head; both-two-heads: d = 2 dk)\n"
    "  --scale sqrt,none      attention logit scale: sqrt (1/sqrt(dk)), none, or a number\n"
    "  --init-scale 1,3       attention weights ~ N(0, (s/sqrt(d))^2)\n"
    "  --optimizer adam       adam and/or sgd\n"
    "  --lr 0.01              learning rates\n"
    "  --supervise off        off, advises (head 0 supervised on advises; 'on' is a\n"
    "                         synonym), both-one-head (advises and authored on head 0),\n"
    "                         both-two-heads (advises on head 0, authored on head 1;\n"
    "                         two heads of dk, so d = 2 dk)\n"
    "  --remedies             also run each configuration with --qk-norm and with a\n"
    "                         learned temperature (remedy: none, qk-norm, temperature)\n"
    "  --layers 1             layers of the stack, 1 to 8 (e.g. 1,2); every layer is\n"
    "                         measured: a row per layer in the tables and CSVs (column\n"
    "                         layer), per_layer in the JSON; supervision acts on\n"
    "                         layer 0 only\n"
    "other\n"
    "  --momentum M           SGD momentum (default 0)\n"
    "  --steps 300            steps per run\n"
    "  --seeds 10             seeds 1..N per configuration\n"
    "  --frozen-multiple 2    a supervised seed is frozen when its supervision loss at\n"
    "                         the last step is above this multiple of its floor\n"
    "  --jobs 2               runs in parallel (results do not depend on it)\n"
    "  --out DIR              where saturation.csv and the SVG plots go\n"
    "                         (default build/saturation)\n"
    "  --json                 print {\"configs\":[...]} instead of the table\n"
    "  --quiet                no progress line\n"
    "Diagnostics at step k describe the forward pass of step k (the parameters\n"
    "after k-1 updates); 'init' is step 1, 'final' the last step. The floor is the\n"
    "least supervision loss any attention can reach on these triples (a row with\n"
    "k targets: log k). Files: saturation.csv (a row per configuration, seed and\n"
    "step), saturation_seeds.csv (per seed, the last step), saturation_summary.csv\n"
    "(per configuration: quantiles over the seeds, frozen fraction), SVG plots.\n"
    EXIT_TABLE;

/* ---- the axes ---------------------------------------------------------------- */

/* Parses "a,b,c" into an axis: each value a word of `words` (taking its
   code) or a number in [lo, hi] (`number_is` says which numbers, e.g. "a
   whole number from 1 to 8", in the error; NULL: "a number in range"); each
   keeps its text for the labels. */
static bool parse_axis(cli_args *a, kgl_saturation_axis *ax, const char *const *words, const double *word_values,
                       int n_words, double lo, double hi, const char *number_is)
{
    const char *opt = a->opt, *s = cli_value(a);
    if (!s) return false;
    ax->n = 0;
    char copy[512];
    snprintf(copy, sizeof copy, "%s", s);
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        if (ax->n == KGL_SAT_AXIS_MAX) {
            cli_usage_error(a, "%s takes at most %d values", opt, KGL_SAT_AXIS_MAX);
            return false;
        }
        snprintf(ax->text[ax->n], sizeof ax->text[ax->n], "%s", tok);
        int w = 0;
        while (w < n_words && strcmp(tok, words[w]) != 0) w++;
        if (w < n_words) {
            ax->value[ax->n++] = word_values[w];
            continue;
        }
        char *end;
        double x = strtod(tok, &end);
        if (end == tok || *end || !isfinite(x) || x < lo || x > hi) {
            char list[512], hint[600];
            if (n_words == 0) cli_usage_error(a, "%s: '%s' is not %s", opt, tok, number_is ? number_is : "a number in range");
            else
                cli_usage_error(a, "%s: '%s' is not %s%s%s", opt, tok, cli_word_list(words, n_words, list, sizeof list),
                                lo <= hi ? " or a number" : "", cli_did_you_mean(tok, words, n_words, hint, sizeof hint));
            return false;
        }
        ax->value[ax->n++] = x;
    }
    if (ax->n == 0) {
        cli_usage_error(a, "%s needs at least one value", opt);
        return false;
    }
    return true;
}

/* ---- printing ---------------------------------------------------------------- */

/* The grid's progress line, in steps of every run:
   "kgl saturation: 12000/36000 steps, 3.2s elapsed, ETA 21.0s; 40/120 runs done". */
typedef struct grid_progress {
    progress line;
    long steps_done, steps; /* what the line has been told */
} grid_progress;

static void show_progress(const kgl_saturation_progress *at, void *ctx)
{
    grid_progress *g = ctx; /* called under the study's lock: one at a time */
    progress_at pa;
    bool due = progress_due(&g->line, (double)(at->steps_done - g->steps_done), (double)(at->steps - g->steps),
                            at->runs_done == at->runs, now_seconds(), &pa);
    g->steps_done = at->steps_done, g->steps = at->steps;
    if (!due) return;
    char text[PROGRESS_LINE_MAX], times[128];
    progress_times(&pa, times, sizeof times);
    snprintf(text, sizeof text, "kgl saturation: %ld/%ld steps, %s; %d/%d runs done", at->steps_done, at->steps, times,
             at->runs_done, at->runs);
    progress_show(&g->line, text);
}

/* The first columns of a table's row: the configuration, and in a grid with
   a stack the layer (e.g. "0"; "layer" in the header). */
static void print_row_name(const kgl_saturation *s, int w, const char *label, const char *layer)
{
    printf("%-*s", w, label);
    if (s->stacked) printf(" %5s", layer);
}

/* Configuration c's layer l summarised into sm, and its row's name printed. */
static void summary_row(const kgl_saturation *s, int w, int c, int l, kgl_saturation_summary *sm)
{
    kgl_saturation_summarise(s, c, l, sm);
    char layer[16];
    snprintf(layer, sizeof layer, "%d", l);
    print_row_name(s, w, s->configs[c].label, layer);
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
static void print_table(const kgl_saturation *s)
{
    int w = 10, n_seeds = s->seeds;
    for (int c = 0; c < s->n_configs; c++)
        if ((int)strlen(s->configs[c].label) > w) w = (int)strlen(s->configs[c].label);
    printf("saturation study: one head, d = dk (both-two-heads: two, d = 2 dk), academic world, %d steps,\n"
           "mean of %d seed%s\n"
           "(init = the forward pass of step 1; final = of step %d; TV = mean total variation of\n"
           " the attention rows from step 0; aux mean = the supervision loss averaged over all\n"
           " steps; fit = mean step at which every triple ranks first, or how many seeds fit)\n",
           s->steps, n_seeds, n_seeds == 1 ? "" : "s", s->steps);
    if (s->stacked)
        printf("(a row per layer of the stack, L its layers: layer l's attention, over the states of the layer\n"
               " below; loss, aux, aux mean and fit are the run's, on its layer 0 row)\n");
    if (supervised_stack(s))
        printf("(supervision acts on layer 0 only (README: supervision reads the first layer); the\n"
               " supervised rows' tables below are layer 0's)\n");
    putchar('\n');
    print_row_name(s, w, "", "");
    printf(" | %-38s | %s\n", "at init", "final");
    print_row_name(s, w, "configuration", "layer");
    printf(" | %8s %8s %9s %9s | %8s %8s %9s %9s %6s %8s %8s %8s %6s\n", "max_prob", "|J|_F", "|dL/dS|", "|dL/dWq|",
           "max_prob", "|J|_F", "|dL/dS|", "|dL/dWq|", "TV", "loss", "aux", "aux mean", "fit");
    for (int c = 0; c < s->n_configs; c++)
        for (int l = 0; l < s->configs[c].layers; l++) {
            kgl_saturation_summary sm;
            summary_row(s, w, c, l, &sm);
            printf(" | %8.3f %8.3f %9.2e %9.2e | %8.3f %8.3f %9.2e %9.2e %6.3f", sm.init[KGL_SAT_MAX_PROB],
                   sm.init[KGL_SAT_JAC_FRO], sm.init[KGL_SAT_GRAD_LOGITS], sm.init[KGL_SAT_GRAD_WQ],
                   sm.final[KGL_SAT_MAX_PROB], sm.final[KGL_SAT_JAC_FRO], sm.final[KGL_SAT_GRAD_LOGITS],
                   sm.final[KGL_SAT_GRAD_WQ], sm.final[KGL_SAT_ATTN_TV]);
            if (l > 0) { /* the run's columns: on layer 0's row */
                printf("\n");
                continue;
            }
            printf(" %8.3f ", sm.final[KGL_SAT_LOSS]);
            if (isnan(sm.final[KGL_SAT_AUX_LOSS])) printf("%8s %8s ", "-", "-");
            else printf("%8.3f %8.3f ", sm.final[KGL_SAT_AUX_LOSS], sm.aux_mean);
            if (isnan(sm.fit_step)) printf("%3d/%d\n", sm.fit_seeds, n_seeds);
            else printf("%6.0f\n", sm.fit_step);
        }
}

/* A value of the spread tables: 3 decimals below 10 (0.770 against 0.775),
   fewer above, an exponent when tiny or huge; "-" for NaN. */
static void put_value(double x, int width)
{
    if (isnan(x)) printf(" %*s", width, "-");
    else if (x != 0 && (fabs(x) < 1e-3 || fabs(x) >= 1e5)) printf(" %*.2e", width, x);
    else printf(" %*.*f", width, fabs(x) >= 100 ? 0 : fabs(x) >= 10 ? 1 : 3, x);
}

/* Why the frozen seeds stay frozen: for each supervised configuration, its
   frozen seeds and the others apart, what the supervised rows see over the
   last KGL_SAT_WINDOW steps (each seed's median over those steps, then the
   median over the seeds of the group). */
static void print_mechanism_table(const kgl_saturation *s, int w)
{
    int n_seeds = s->seeds;
    static const int keys[5] = {KGL_SAT_GRAD_LOGITS_SUP, KGL_SAT_LOGIT_STEP, KGL_SAT_WQ_STEP, KGL_SAT_MAX_ABS_LOGIT,
                                KGL_SAT_MAX_PROB};
    printf("\nthe supervised rows over the last %d steps, frozen seeds and the others apart (each seed's\n"
           "median over those steps, then the median over the group): |dL/dS| = gradient reaching their\n"
           "logits; step = max |change of their logits| in one step; Adam = RMS |change of Wq| / lr;\n"
           "max|S| = largest logit; flips = sign changes of the loss's change; range = its min and max\n\n",
           KGL_SAT_WINDOW);
    printf("%-*s %-9s %5s | %9s %9s %9s %9s %8s %5s | %19s\n", w, "configuration", "seeds", "n", "|dL/dS|", "step",
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
            printf("%-*s %-9s %5d |", w, s->configs[c].label, group ? "frozen" : "the rest", n);
            for (int k = 0; k < 4; k++) put_value(kgl_spread_of(v + k * n_seeds, n).median, 9);
            printf(" %8.3f %5.0f |", kgl_spread_of(v + 4 * n_seeds, n).median, kgl_spread_of(v + 5 * n_seeds, n).median);
            char range[48];
            snprintf(range, sizeof range, "%.3g-%.3g", kgl_spread_of(v + 6 * n_seeds, n).median,
                     kgl_spread_of(v + 7 * n_seeds, n).median);
            printf(" %19s\n", range);
        }
    }
    free(v);
}

/* Over the seeds, at the last step: every configuration's min, quartiles and
   max of max_prob, ‖∂L/∂S‖ and the loss; then, for the supervised ones, the
   supervision loss against its floor, the frozen fraction, and each seed's
   final supervision loss. */
static void print_spread_tables(const kgl_saturation *s)
{
    int w = 13, n_seeds = s->seeds;
    bool any_sup = false;
    for (int c = 0; c < s->n_configs; c++) {
        if ((int)strlen(s->configs[c].label) > w) w = (int)strlen(s->configs[c].label);
        any_sup |= s->configs[c].supervise != KGL_SAT_SUP_OFF;
    }
    printf("\nover the %d seeds, at step %d: min, quartiles (q1, median, q3) and max\n\n", n_seeds, s->steps);
    static const int keys[3] = {KGL_SAT_MAX_PROB, KGL_SAT_GRAD_LOGITS, KGL_SAT_LOSS};
    static const char *const names[3] = {"max_prob", "|dL/dS|", "loss"};
    print_row_name(s, w, "", "");
    for (int k = 0; k < 3; k++) printf(" | %-49s", names[k]);
    putchar('\n');
    print_row_name(s, w, "configuration", "layer");
    for (int k = 0; k < 3; k++) printf(" | %9s %9s %9s %9s %9s", "min", "q1", "median", "q3", "max");
    putchar('\n');
    for (int c = 0; c < s->n_configs; c++)
        for (int l = 0; l < s->configs[c].layers; l++) {
            kgl_saturation_summary sm;
            summary_row(s, w, c, l, &sm);
            for (int k = 0; k < 3 && (l == 0 || keys[k] != KGL_SAT_LOSS); k++) { /* the loss: on layer 0's row */
                const kgl_spread *sp = &sm.spread[keys[k]];
                printf(" |");
                put_value(sp->min, 9), put_value(sp->q1, 9), put_value(sp->median, 9), put_value(sp->q3, 9);
                put_value(sp->max, 9);
            }
            putchar('\n');
        }
    if (!any_sup) return;
    if (supervised_stack(s)) printf("\n(supervision acts on layer 0 only: these are layer 0's supervised rows)\n");
    printf("\nsupervision loss at step %d against its floor (the least any attention can reach on these\n"
           "triples); frozen = above %g x floor; mass = attention on the targets (median); flips = sign\n"
           "changes of the step-to-step change over the last %d steps (median)\n\n",
           s->steps, s->frozen_multiple, KGL_SAT_WINDOW);
    printf("%-*s | %6s %6s | %9s %9s %9s %9s %9s | %13s | %6s %5s\n", w, "configuration", "floor", "heads", "min",
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
        printf("%-*s | %6.3f %6d |", w, x->label, sm.aux_floor, x->heads);
        put_value(a->min, 9), put_value(a->q1, 9), put_value(a->median, 9), put_value(a->q3, 9), put_value(a->max, 9);
        printf(" | %13s | %6.3f %5.0f\n", frozen, sm.spread[KGL_SAT_TARGET_MASS].median, fl.median);
    }
    print_mechanism_table(s, w);
    if (n_seeds > 20) return; /* the CSV has them */
    printf("\nsupervision loss at step %d, seed by seed (* frozen)\n\n%-*s", s->steps, w, "configuration");
    for (int q = 0; q < n_seeds; q++) printf(" %7d ", q + 1);
    putchar('\n');
    for (int c = 0; c < s->n_configs; c++) {
        if (!s->configs[c].supervise) continue;
        printf("%-*s", w, s->configs[c].label);
        for (int q = 0; q < n_seeds; q++) {
            kgl_saturation_run_end e;
            kgl_saturation_run_summary(s, c * n_seeds + q, 0, &e);
            double x = e.final[KGL_SAT_AUX_LOSS];
            if (isnan(x)) printf(" %7s ", "-");
            else printf(x < 100 ? " %7.3f%c" : " %7.1f%c", x, e.frozen ? '*' : ' ');
        }
        putchar('\n');
    }
}

int cmd_saturation(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "saturation", argc, argv);
    a.help = help;
    static const char *const scale_words[] = {"sqrt", "none"};
    static const double scale_codes[] = {KGL_SAT_SCALE_SQRT, KGL_SAT_SCALE_NONE};
    static const char *const opt_words[] = {"adam", "sgd"};
    static const double opt_codes[] = {KGL_OPT_ADAM, KGL_OPT_SGD};
    static const char *const sup_words[] = {"off", "advises", "both-one-head", "both-two-heads", "on"};
    static const double sup_codes[] = {KGL_SAT_SUP_OFF, KGL_SAT_SUP_ADVISES, KGL_SAT_SUP_BOTH_ONE_HEAD,
                                       KGL_SAT_SUP_BOTH_TWO_HEADS, KGL_SAT_SUP_ADVISES};
    kgl_saturation_spec spec;
    kgl_saturation_spec_defaults(&spec);
    bool json = false, quiet = false;
    long steps = spec.steps, seeds = spec.seeds, jobs = spec.jobs;
    const char *out = "build/saturation";
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (cli_is(&a, "--dk")) {
            if (!parse_axis(&a, &spec.dk, NULL, NULL, 0, 1, 4096, NULL)) return EXIT_USAGE;
            for (int k = 0; k < spec.dk.n; k++)
                if (spec.dk.value[k] != floor(spec.dk.value[k]))
                    return cli_usage_error(&a, "--dk: '%s' is not a whole number", spec.dk.text[k]);
        } else if (cli_is(&a, "--scale")) {
            if (!parse_axis(&a, &spec.scale, scale_words, scale_codes, 2, 1e-300, 1e300, NULL)) return EXIT_USAGE;
        } else if (cli_is(&a, "--init-scale")) {
            if (!parse_axis(&a, &spec.init_scale, NULL, NULL, 0, 0, 1e6, NULL)) return EXIT_USAGE;
        } else if (cli_is(&a, "--optimizer")) {
            if (!parse_axis(&a, &spec.optimizer, opt_words, opt_codes, 2, 1, 0, NULL)) return EXIT_USAGE;
        } else if (cli_is(&a, "--lr")) {
            if (!parse_axis(&a, &spec.lr, NULL, NULL, 0, 0, 1e6, NULL)) return EXIT_USAGE;
        } else if (cli_is(&a, "--supervise")) {
            if (!parse_axis(&a, &spec.supervise, sup_words, sup_codes, 5, 1, 0, NULL)) return EXIT_USAGE;
        } else if (cli_is(&a, "--layers")) {
            char layers_are[64];
            snprintf(layers_are, sizeof layers_are, "a whole number of layers from 1 to %d", KGL_MAX_LAYERS);
            if (!parse_axis(&a, &spec.layers, NULL, NULL, 0, 1, KGL_MAX_LAYERS, layers_are)) return EXIT_USAGE;
            for (int k = 0; k < spec.layers.n; k++)
                if (spec.layers.value[k] != floor(spec.layers.value[k]))
                    return cli_usage_error(&a, "--layers: '%s' is not %s", spec.layers.text[k], layers_are);
        } else if (cli_is(&a, "--frozen-multiple")) {
            if (!cli_double(&a, 1.000001, 1e6, &spec.frozen_multiple)) return EXIT_USAGE;
        } else if (cli_is(&a, "--remedies")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            spec.remedies = true;
        } else if (cli_is(&a, "--momentum")) {
            if (!cli_double(&a, 0, 1, &spec.momentum)) return EXIT_USAGE;
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
    spec.steps = (int)steps;
    spec.seeds = (int)seeds;
    spec.jobs = (int)jobs;
    if (!cli_output_dir_ok("saturation", "--out", out)) return EXIT_USAGE; /* before minutes of runs */
    static grid_progress grid;
    if (!quiet && !json) {
        spec.progress = show_progress, spec.progress_ctx = &grid;
        progress_start(&grid.line, stderr, isatty(STDERR_FILENO), 0, 0, now_seconds());
    }
    kgl_saturation s;
    char err[8192];
    bool ran = kgl_saturation_run(&spec, &s, err, sizeof err); /* the embedded academic world */
    if (spec.progress) progress_stop(&grid.line);
    if (!ran) {
        fprintf(stderr, "kgl saturation: %s\n", err);
        return EXIT_USAGE;
    }

    int status = 0;
    for (int k = 0; k < s.n_runs; k++)
        if (s.runs[k].steps_done < s.steps) {
            fprintf(stderr, "kgl saturation: %s seed %d: the loss became non-finite at step %d\n",
                    s.runs[k].config->label, s.runs[k].seed, s.runs[k].steps_done + 1);
            status = 1;
        }
    bool written = kgl_saturation_write(&s, out, err, sizeof err);
    if (!written) {
        fprintf(stderr, "kgl saturation: %s\n", err);
        status = EXIT_OUTPUT;
    }
    if (json) {
        kgl_saturation_write_json(&s, stdout);
    } else {
        print_table(&s);
        print_spread_tables(&s);
        if (written)
            printf("\n%d runs in %.1f s; %s/saturation.csv, saturation_seeds.csv, saturation_summary.csv,\n"
                   "saturation.svg, one SVG per metric and seeds_K.svg per supervised configuration K\n",
                   s.n_runs, s.seconds, out);
        else printf("\n%d runs in %.1f s; the files in %s could not be written\n", s.n_runs, s.seconds, out);
    }
    kgl_saturation_free(&s);
    return status;
}
