/* benchmark_table.c — one dataset of `kgl benchmark` as the markdown table
 * it prints: kgl's rows (mean ± std over the seeds, realistic and
 * optimistic ties; with --baseline each followed by its baseline's) beside
 * the published rows, then the options, the valid MRR, the times and each
 * seed's numbers, and with --baseline the layer's difference from it.
 * Written to the FILE* given, so a C program linking libkgl prints what
 * kgl benchmark prints; the numbers are benchmark.c's (kgl_benchmark_mean_std,
 * kgl_benchmark_cost_of, kgl_benchmark_layer_minus_baseline). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kgl/studies.h"

/* One row of kgl's in a dataset's table: `what` (the model), the tie kind
   (o: optimistic) and the test metrics, mean ± std over the seeds. */
static void write_kgl_row(FILE *f, const char *what, const kgl_benchmark_run *runs, int n_seeds, int o)
{
    if (n_seeds > 1)
        fprintf(f, "| %s, %s ties (mean ± std, %d seeds) |", what, o ? "optimistic" : "realistic", n_seeds);
    else
        fprintf(f, "| %s, %s ties (seed %llu) |", what, o ? "optimistic" : "realistic", runs[0].seed);
    for (int k = 0; k < KGL_BENCHMARK_METRICS; k++) {
        double mean, sd;
        int digits = strcmp(kgl_benchmark_metrics[k], "mr") == 0 ? 2 : 3; /* a rank, or a fraction */
        kgl_benchmark_mean_std(runs, n_seeds, 1, o, 2, k, &mean, &sd);
        if (n_seeds > 1) fprintf(f, " %.*f ± %.*f |", digits, mean, digits, sd);
        else fprintf(f, " %.*f |", digits, mean);
    }
    fprintf(f, "\n");
}

/* Like with like: the published rows are single models, so an ensemble's
   row says it is one, and what a run of it costs. */
static void model_label(char *what, size_t cap, const kgl_benchmark_run *runs, int n_seeds, bool baseline)
{
    const char *none = baseline ? ", no layer" : "", *same = baseline ? " (`--context none`, the same options and steps)" : "";
    if (runs[0].ensemble > 1)
        snprintf(what, cap, "**kgl, ensemble of %ld%s**%s (%ld models trained a run, %.0f s a run)", runs[0].ensemble,
                 none, same, runs[0].ensemble, kgl_benchmark_cost_of(runs, n_seeds).mean_seconds);
    else if (baseline)
        snprintf(what, cap, "**kgl, no layer**%s", same);
    else
        snprintf(what, cap, "**kgl**, one model");
}

/* Below the table of a dataset run with --baseline: what the baseline was,
   and the layer's test means less the baseline's, in MRR and Hits@1. */
static void write_baseline_lines(FILE *f, const kgl_benchmark_dataset *job)
{
    const kgl_benchmark_run *base = job->baseline_runs;
    int n_seeds = job->n_runs;
    double vm, vs;
    kgl_benchmark_mean_std(base, n_seeds, 0, 0, 2, 0, &vm, &vs);
    fprintf(f, "Baseline: no layer (`--context none`), %ld parameters; the same options and steps with `--context none` "
           "appended; valid MRR %.3f ± %.3f; wall time per run %.1f s on average.\n",
           base[0].params, vm, vs, kgl_benchmark_cost_of(base, n_seeds).mean_seconds);
    double mrr = kgl_benchmark_layer_minus_baseline(job, 0), hits1 = kgl_benchmark_layer_minus_baseline(job, 1);
    fprintf(f, "Layer − baseline (`--context none`), test, both directions, realistic ties, means over %d seed%s: "
           "MRR %+.3f, Hits@1 %+.3f; the layer's mean is ≥ the baseline's: MRR %s, Hits@1 %s.\n",
           n_seeds, n_seeds == 1 ? "" : "s", mrr, hits1, mrr >= 0 ? "yes" : "no", hits1 >= 0 ? "yes" : "no");
}

void kgl_benchmark_table_write(FILE *f, const kgl_benchmark_dataset *job, int jobs, int threads)
{
    const kgl_benchmark_run *runs = job->runs;
    int n_seeds = job->n_runs;
    fprintf(f, "\n### %s: filtered test ranking, both directions (%ld queries)\n\n", kgl_benchmark_display_name(job->name),
           runs[0].n_test);
    fprintf(f, "| model | MRR | Hits@1 | Hits@3 | Hits@10 | MR |\n|---|---:|---:|---:|---:|---:|\n");
    double vm, vs;
    char what[200], base_what[240];
    model_label(what, sizeof what, runs, n_seeds, false);
    model_label(base_what, sizeof base_what, job->baseline_runs, n_seeds, true);
    for (int o = 0; o < 2; o++) {
        write_kgl_row(f, what, runs, n_seeds, o);
        if (job->baseline) write_kgl_row(f, base_what, job->baseline_runs, n_seeds, o);
    }
    for (int p = 0; p < kgl_benchmark_n_published; p++) {
        const kgl_benchmark_published *pub = &kgl_benchmark_published_rows[p];
        if (strcmp(pub->dataset, job->name) != 0) continue;
        fprintf(f, "| %s (%s) |", pub->model, pub->source);
        for (int k = 0; k < KGL_BENCHMARK_METRICS; k++) { /* as published: two digits or three; a dash where not reported */
            if (isnan(pub->v[k])) fprintf(f, " — |");
            else fprintf(f, " %.*f |", pub->v[k] * 100 == round(pub->v[k] * 100) ? 2 : 3, pub->v[k]);
        }
        fprintf(f, "\n");
    }
    kgl_benchmark_mean_std(runs, n_seeds, 0, 0, 2, 0, &vm, &vs);
    char model[80], members[80]; /* what the runs are: no layer, one, or a stack of L */
    if (runs[0].no_layer) {
        snprintf(model, sizeof model, "no layer (`--context none`: the readout on the embeddings)");
        snprintf(members, sizeof members, "models without the layer (`--context none`)");
    } else if (runs[0].layers <= 1) { /* 1, or not known (-1: not a whole number in the JSON) */
        snprintf(model, sizeof model, "one layer");
        snprintf(members, sizeof members, "one-layer models");
    } else {
        snprintf(model, sizeof model, "a stack of %ld layers", runs[0].layers);
        snprintf(members, sizeof members, "models of %ld layers", runs[0].layers);
    }
    /* a recipe's options as it computed them for this dataset, when known; else the file's words */
    const char *options = job->chosen_text[0] ? job->chosen_text : job->args_text,
               *as = job->chosen_text[0] ? ", as computed for this graph" : "";
    if (runs[0].ensemble > 1)
        fprintf(f, "\nkgl: an ensemble of %ld %s (each selected on valid at its own best step), %ld "
               "parameters in all; options (`%s`%s): `%s`.\n",
               runs[0].ensemble, members, runs[0].params, job->config_path, as, options);
    else
        fprintf(f, "\nkgl: %s, %ld parameters; options (`%s`%s): `%s`.\n", model, runs[0].params, job->config_path,
               as, options);
    kgl_benchmark_cost cost = kgl_benchmark_cost_of(runs, n_seeds);
    fprintf(f, "Valid MRR (what selected the model) %.3f ± %.3f. Wall time per run %.1f s on average, %.1f s at most "
           "(%d run%s at a time, %d cores, %d thread%s a run); peak resident memory of a run at most %.0f MB.\n",
           vm, vs, cost.mean_seconds, cost.max_seconds, jobs, jobs == 1 ? "" : "s", kgl_cores(), threads,
           threads == 1 ? "" : "s", cost.peak_mb);
    fprintf(f, "Per seed: ");
    for (int i = 0; i < n_seeds; i++) {
        const kgl_benchmark_run *r = &runs[i];
        fprintf(f, "%sseed %llu test MRR %.3f H@1 %.3f (", i ? "; " : "", r->seed, r->m[1][0][2][0], r->m[1][0][2][1]);
        long first, last;
        kgl_benchmark_member_steps(r, &first, &last);
        if (r->n_members > 1)
            fprintf(f, "the %d members' best valid steps %ld to %ld", r->n_members, first, last);
        else
            fprintf(f, "best valid at step %ld", first);
        fprintf(f, " of %ld, %.1f s)", r->steps, r->seconds);
    }
    fprintf(f, ".\n");
    if (job->baseline) write_baseline_lines(f, job);
}
