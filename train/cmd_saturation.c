/* cmd_saturation.c — `kgl saturation`: the softmax-saturation study as one
 * command. The study itself (the grid, the runs, the summaries, the CSV and
 * the plots) is the library's (kgl_saturation_run, src/studies/saturation.c);
 * this file parses the options into its spec, shows the progress line and
 * prints the tables (kgl_saturation_tables_write) or the JSON. */
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
        kgl_saturation_tables_write(stdout, &s);
        if (written)
            printf("\n%d runs in %.1f s; %s/saturation.csv, saturation_seeds.csv, saturation_summary.csv,\n"
                   "saturation.svg, one SVG per metric and seeds_K.svg per supervised configuration K\n",
                   s.n_runs, s.seconds, out);
        else printf("\n%d runs in %.1f s; the files in %s could not be written\n", s.n_runs, s.seconds, out);
    }
    kgl_saturation_free(&s);
    return status;
}
