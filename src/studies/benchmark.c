/* benchmark.c — the public link-prediction benchmarks (UMLS, Kinship, Nations, Family) beside
 * the published numbers (`kgl benchmark`). What a run is (a `kgl train`
 * process in the command) is not here; this file holds what surrounds the
 * runs: the published rows, a dataset's configuration, reading a run's
 * --json output back, the mean and standard deviation over seeds, and
 * results.json. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/studies.h"
#include "engine/internal.h"

/* Published filtered results on the same splits (both directions):
   MRR, Hits@1, Hits@3, Hits@10 and MR (the mean rank: NAN, not listed). */
const kgl_benchmark_published kgl_benchmark_published_rows[] = {
    {"umls", "ConvE", "Dettmers et al. 2018", {0.94, 0.92, 0.97, 0.99, NAN}},
    {"umls", "NTPλ", "Rocktäschel & Riedel 2017", {0.93, 0.87, 0.98, 1.00, NAN}},
    {"umls", "ComplEx", "Trouillon et al. 2016, as reported by NTP", {0.89, 0.82, 0.96, 1.00, NAN}},
    /* Chen et al., "Relation Prediction as an Auxiliary Training Objective for Improving
       Multi-Relational Graph Representations", AKBC 2021 (the authors' slides; not HittER's
       Chen et al. 2021 below): 1vsAll, filtered, both directions; Hits@3 and Hits@10 not given */
    {"umls", "ComplEx-N3 + relation prediction", "Chen et al. 2021, AKBC", {0.971, 0.954, NAN, NAN, NAN}},
    {"umls", "ComplEx-N3", "Chen et al. 2021, AKBC", {0.960, 0.930, NAN, NAN, NAN}},
    {"kinship", "ConvE", "Dettmers et al. 2018", {0.83, 0.74, 0.92, 0.98, NAN}},
    {"kinship", "NTPλ", "Rocktäschel & Riedel 2017", {0.80, 0.76, 0.82, 0.89, NAN}},
    {"kinship", "ComplEx-N3 + relation prediction", "Chen et al. 2021, AKBC", {0.916, 0.866, NAN, NAN, NAN}},
    {"kinship", "ComplEx-N3", "Chen et al. 2021, AKBC", {0.897, 0.835, NAN, NAN, NAN}},
    {"nations", "ConvE", "Dettmers et al. 2018", {0.82, 0.72, 0.88, 1.00, NAN}},
    {"nations", "NTPλ", "Rocktäschel & Riedel 2017", {0.74, 0.59, 0.89, 0.99, NAN}},
    {"nations", "ComplEx", "Trouillon et al. 2016, as reported by NTP", {0.75, 0.62, 0.84, 0.99, NAN}},
    {"nations", "ComplEx-N3 + relation prediction", "Chen et al. 2021, AKBC", {0.827, 0.726, NAN, NAN, NAN}},
    {"nations", "ComplEx-N3", "Chen et al. 2021, AKBC", {0.813, 0.701, NAN, NAN, NAN}},
    /* the graphs of real size (NAN: not reported) */
    {"fb15k-237", "ConvE", "Dettmers et al. 2018", {0.325, 0.237, 0.356, 0.501, NAN}},
    {"fb15k-237", "ComplEx, re-tuned", "Ruffinelli et al. 2020 (LibKGE)", {0.348, NAN, NAN, 0.536, NAN}},
    {"fb15k-237", "RotatE", "Sun et al. 2019", {0.338, 0.241, 0.375, 0.533, NAN}},
    {"fb15k-237", "CoKE", "Wang et al. 2019", {0.364, 0.272, 0.400, 0.549, NAN}},
    {"fb15k-237", "HittER", "Chen et al. 2021", {0.373, 0.279, 0.409, 0.558, NAN}},
    {"fb15k-237", "NBFNet (a GNN)", "Zhu et al. 2021", {0.415, 0.321, 0.454, 0.599, NAN}},
    {"wn18rr", "ConvE", "Dettmers et al. 2018", {0.43, 0.40, 0.44, 0.52, NAN}},
    {"wn18rr", "ComplEx, re-tuned", "Ruffinelli et al. 2020 (LibKGE)", {0.475, NAN, NAN, 0.547, NAN}},
    {"wn18rr", "RotatE", "Sun et al. 2019", {0.476, 0.428, 0.492, 0.571, NAN}},
    {"wn18rr", "CoKE", "Wang et al. 2019", {0.484, 0.450, 0.496, 0.553, NAN}},
    {"wn18rr", "HittER", "Chen et al. 2021", {0.503, 0.462, 0.516, 0.584, NAN}},
    {"wn18rr", "NBFNet (a GNN)", "Zhu et al. 2021", {0.551, 0.497, 0.573, 0.666, NAN}},
};
const int kgl_benchmark_n_published =
    (int)(sizeof kgl_benchmark_published_rows / sizeof kgl_benchmark_published_rows[0]);

const char *const kgl_benchmark_splits[2] = {"valid", "test"};
const char *const kgl_benchmark_directions[3] = {"tail", "head", "both"};
const char *const kgl_benchmark_metrics[KGL_BENCHMARK_METRICS] = {"mrr", "hits1", "hits3", "hits10", "mr"};

const char *kgl_benchmark_display_name(const char *d)
{
    if (strcmp(d, "umls") == 0) return "UMLS";
    if (strcmp(d, "kinship") == 0) return "Kinship";
    if (strcmp(d, "nations") == 0) return "Nations";
    if (strcmp(d, "family") == 0) return "Family";
    if (strcmp(d, "fb15k-237") == 0) return "FB15k-237";
    if (strcmp(d, "wn18rr") == 0) return "WN18RR";
    return d;
}

/* ---- the configuration ------------------------------------------------------- */

/* The options of CONFIGS/<name>.args: whitespace-separated words; '#' starts
   a comment that runs to the end of its line. */
static kgl_benchmark_config_status load_words(kgl_benchmark_dataset *d, char *err, size_t cap);
static kgl_benchmark_config_status as_recipe(kgl_benchmark_dataset *d, kgl_benchmark_config_status st);

kgl_benchmark_config_status kgl_benchmark_load_config(kgl_benchmark_dataset *d, const char *configs,
                                                      const char *name, char *err, size_t cap)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    char path[sizeof d->config_path]; /* a local first: gcc -O1 cannot tell the members apart (-Wrestrict) */
    if (snprintf(path, sizeof path, "%s/%s.args", configs, name) >= (int)sizeof path) {
        snprintf(err, cap, "%s/%s.args: the path is too long", configs, name);
        return KGL_BENCHMARK_CONFIG_UNREADABLE;
    }
    memcpy(d->config_path, path, sizeof path);
    return as_recipe(d, load_words(d, err, cap));
}

/* A file read and checked: kgl train is given it as --recipe FILE, which
   computes its "=EXPR" formulas from the dataset's counts (the words stay in
   args_text for the report). */
static kgl_benchmark_config_status as_recipe(kgl_benchmark_dataset *d, kgl_benchmark_config_status st)
{
    if (st != KGL_BENCHMARK_CONFIG_OK) return st;
    d->argv[0] = "--recipe";
    d->argv[1] = d->config_path;
    d->argc = 2;
    return st;
}

/* The same file for every dataset. */
kgl_benchmark_config_status kgl_benchmark_load_recipe(kgl_benchmark_dataset *d, const char *recipe,
                                                      const char *name, char *err, size_t cap)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    if (strlen(recipe) >= sizeof d->config_path) {
        snprintf(err, cap, "%s: the path is too long", recipe);
        return KGL_BENCHMARK_CONFIG_UNREADABLE;
    }
    snprintf(d->config_path, sizeof d->config_path, "%s", recipe);
    return as_recipe(d, load_words(d, err, cap));
}

/* Whether a file can be opened for reading (errno says why not). */
static bool file_readable(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fclose(f);
    return true;
}

kgl_benchmark_config_status kgl_benchmark_dataset_open(kgl_benchmark_dataset *d, const char *name,
                                                       const char *recipe, const char *configs, const char *data,
                                                       int n_seeds, bool baseline, char *err, size_t cap)
{
    kgl_benchmark_config_status st = recipe ? kgl_benchmark_load_recipe(d, recipe, name, err, cap)
                                            : kgl_benchmark_load_config(d, configs, name, err, cap);
    if (st != KGL_BENCHMARK_CONFIG_OK) return st;
    d->n_runs = n_seeds;
    d->baseline = baseline;
    if (baseline && kgl_benchmark_says_no_context(d)) {
        snprintf(err, cap, "%s: --baseline: the options already say --context none, so their runs are the "
                           "baseline; leave out --baseline, or --context none", d->config_path);
        return KGL_BENCHMARK_CONFIG_INVALID;
    }
    for (int s = 0; s < 3; s++) {
        char path[1200];
        static const char *const files[3] = {"train", "valid", "test"};
        bool fits = snprintf(path, sizeof path, "%s/%s/%s.txt", data, d->name, files[s]) < (int)sizeof path;
        if (!fits || !file_readable(path)) {
            snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
            return KGL_BENCHMARK_DATA_UNREADABLE;
        }
    }
    return KGL_BENCHMARK_CONFIG_OK;
}

/* Whether the comma-separated list `list` holds the word `name` (kgl train's
   cli_splits, in train/, checks the words themselves; the library cannot call it). */
static bool names_split(const char *list, const char *name)
{
    for (const char *p = list;; p += strcspn(p, ",") + 1) {
        size_t len = strcspn(p, ",");
        if (len == strlen(name) && strncmp(p, name, len) == 0) return true;
        if (!p[len]) return false;
    }
}

/* d->config_path's words into d->argv and d->args_text, checked. */
static kgl_benchmark_config_status load_words(kgl_benchmark_dataset *d, char *err, size_t cap)
{
    if (!kgl_text_open(&d->args_file, d->config_path, err, cap)) return KGL_BENCHMARK_CONFIG_UNREADABLE;
    d->argc = kgl_text_words(&d->args_file, d->argv, NULL, KGL_BENCHMARK_MAX_ARGS - 24, err, cap);
    if (d->argc < 0) {
        d->argc = 0;
        return KGL_BENCHMARK_CONFIG_INVALID;
    }
    size_t used = 0;
    bool selects = false;
    const char *splits = NULL; /* the last --splits value: kgl train lets the last one win */
    for (int k = 0; k < d->argc; k++) {
        const char *w = d->argv[k];
        selects |= strcmp(w, "--eval-every") == 0 || strncmp(w, "--eval-every=", 13) == 0;
        if (strncmp(w, "--splits=", 9) == 0) splits = w + 9;
        else if (strcmp(w, "--splits") == 0 && k + 1 < d->argc) splits = d->argv[k + 1];
        /* the options kgl benchmark sets, spaced or "--name=value" */
        static const char *const own[] = {"--seed", "--train", "--valid", "--test", "--save", "--log", "--resume"};
        for (size_t o = 0; o < sizeof own / sizeof own[0]; o++) {
            size_t len = strlen(own[o]);
            if (strncmp(w, own[o], len) == 0 && (w[len] == 0 || w[len] == '=')) {
                snprintf(err, cap, "%s: %s is set by kgl benchmark; remove it from the file", d->config_path, own[o]);
                return KGL_BENCHMARK_CONFIG_INVALID;
            }
        }
        used += (size_t)snprintf(d->args_text + used, used < sizeof d->args_text ? sizeof d->args_text - used : 0,
                                 "%s%s", k ? " " : "", w);
        if (used >= sizeof d->args_text) {
            snprintf(err, cap, "%s: the options are too long", d->config_path);
            return KGL_BENCHMARK_CONFIG_INVALID;
        }
    }
    if (!selects) {
        snprintf(err, cap, "%s: give --eval-every K: kgl benchmark reports the model selected on the valid split",
                 d->config_path);
        return KGL_BENCHMARK_CONFIG_INVALID;
    }
    /* The report reads valid and test from every run: a file whose --splits
       leaves one out would fail only after its training (words checked by kgl train). */
    if (splits && !(names_split(splits, "valid") && names_split(splits, "test"))) {
        snprintf(err, cap, "%s: --splits %s: kgl benchmark reports valid and test; name both, or leave --splits out",
                 d->config_path, splits);
        return KGL_BENCHMARK_CONFIG_INVALID;
    }
    return KGL_BENCHMARK_CONFIG_OK;
}

void kgl_benchmark_dataset_free(kgl_benchmark_dataset *d)
{
    kgl_text_close(&d->args_file);
    d->argc = 0;
}

/* ---- a run's results --------------------------------------------------------- */

int kgl_benchmark_run_path(char *buf, size_t cap, const char *out, const char *dataset, unsigned long long seed,
                           bool baseline, const char *ext)
{
    return snprintf(buf, cap, "%s/%s-seed%llu%s.%s", out, dataset, seed, baseline ? "-none" : "", ext);
}

char **kgl_benchmark_run_argv(kgl_benchmark_command *cmd, const char *program, const kgl_benchmark_dataset *d,
                              bool baseline, const char *data, const char *out, unsigned long long seed, int threads,
                              bool check)
{
    char(*paths)[1200] = cmd->paths, **argv = cmd->argv;
    int a = 0;
    snprintf(paths[0], sizeof cmd->paths[0], "%s/%s/train.txt", data, d->name);
    snprintf(paths[1], sizeof cmd->paths[1], "%s/%s/valid.txt", data, d->name);
    snprintf(paths[2], sizeof cmd->paths[2], "%s/%s/test.txt", data, d->name);
    kgl_benchmark_run_path(paths[3], sizeof cmd->paths[3], out, d->name, seed, baseline, "safetensors");
    kgl_benchmark_run_path(paths[4], sizeof cmd->paths[4], out, d->name, seed, baseline, "csv");
    snprintf(cmd->seed, sizeof cmd->seed, "%llu", seed);
    argv[a++] = (char *)program;
    argv[a++] = "train";
    argv[a++] = "--train", argv[a++] = paths[0];
    argv[a++] = "--valid", argv[a++] = paths[1];
    argv[a++] = "--test", argv[a++] = paths[2];
    for (int k = 0; k < d->argc; k++) argv[a++] = d->argv[k];
    if (baseline) argv[a++] = "--context", argv[a++] = "none";
    argv[a++] = "--seed", argv[a++] = cmd->seed;
    if (check) {
        argv[a++] = "--check";
    } else {
        argv[a++] = "--save", argv[a++] = paths[3];
        argv[a++] = "--log", argv[a++] = paths[4];
    }
    snprintf(cmd->threads, sizeof cmd->threads, "%d", threads);
    argv[a++] = "--threads", argv[a++] = cmd->threads; /* the cores shared by the runs at the same time */
    argv[a++] = "--json";
    argv[a++] = "--progress"; /* to its .err file */
    argv[a] = NULL;
    return argv;
}

kgl_benchmark_steps kgl_benchmark_steps_of(const kgl_jobs_progress *at, int n_seeds)
{
    kgl_benchmark_steps steps = {0};
    double sum_known = 0;
    for (int r = 0; r < at->jobs; r++)
        if (at->job[r].reported) sum_known += (double)at->job[r].total, steps.known++;
    for (int r = 0; r < at->jobs; r++) {
        double total = (double)at->job[r].total;
        if (!at->job[r].reported) {
            total = steps.known ? sum_known / steps.known : 0;
            for (int q = r - r % n_seeds; q < r - r % n_seeds + n_seeds; q++) /* its spec's */
                if (at->job[q].reported) total = (double)at->job[q].total;
            steps.guessed = true;
        }
        steps.done += (double)at->job[r].done, steps.total += total;
    }
    return steps;
}

bool kgl_benchmark_says_no_context(const kgl_benchmark_dataset *d)
{
    char words[sizeof d->args_text];
    snprintf(words, sizeof words, "%s", d->args_text);
    const char *context = NULL;
    char *save = NULL;
    for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        if (strcmp(w, "--context") == 0) context = strtok_r(NULL, " ", &save);
        else if (strncmp(w, "--context=", 10) == 0) context = w + 10;
    }
    return context && strcmp(context, "none") == 0;
}

/* A number of `obj`, or NaN when it is missing or not one. */
static double json_num(const kgl_json *obj, const char *key)
{
    const kgl_json *v = kgl_json_get(obj, key);
    return v && v->type == KGL_JSON_NUMBER ? v->num : NAN;
}

/* A whole number of `obj`, or -1 when it is missing or not one */
static long json_count(const kgl_json *obj, const char *key)
{
    double x = json_num(obj, key);
    return x >= 0 && x <= 1e15 && x == floor(x) ? (long)x : -1;
}

bool kgl_benchmark_read_run(const char *path, kgl_benchmark_run *r, char *err, size_t cap)
{
    kgl_text text;
    if (!kgl_text_open(&text, path, err, cap)) return false;
    kgl_json_doc doc;
    char why[1400];
    bool ok = kgl_json_parse(text.buf, text.len, &doc, why, sizeof why);
    kgl_text_close(&text);
    if (!ok) {
        snprintf(err, cap, "%s: %s", path, why);
        return false;
    }
    const kgl_json *root = doc.root, *metrics = kgl_json_get(root, "metrics");
    r->train_seconds = json_num(root, "seconds"); /* r->seconds is the process's wall time, set by the caller */
    r->best_step = json_count(root, "best_step");
    r->steps = json_count(root, "steps");
    r->params = json_count(root, "params");
    r->ensemble = kgl_json_get(root, "ensemble") ? json_count(root, "ensemble") : 1;
    const kgl_json *context = kgl_json_get(root, "context"); /* absent: kgl train before it said (a layer) */
    r->no_layer = context && context->type == KGL_JSON_STRING && strcmp(context->str, "none") == 0;
    r->layers = kgl_json_get(root, "layers") ? json_count(root, "layers") : 1; /* absent: before kgl train said */
    /* An ensemble's members each stop at their own best valid step. */
    const kgl_json *members = kgl_json_get(root, "members");
    r->n_members = 1;
    r->member_best_step[0] = r->best_step;
    if (members && members->type == KGL_JSON_ARRAY && members->len >= 1 && members->len <= KGL_MAX_ENSEMBLE) {
        r->n_members = (int)members->len;
        for (int i = 0; i < r->n_members; i++) r->member_best_step[i] = json_count(&members->child[i], "best_step");
    }
    for (int s = 0; s < 2 && ok; s++) {
        const kgl_json *sp = kgl_json_get(metrics, kgl_benchmark_splits[s]);
        for (int o = 0; o < 2 && ok; o++) {
            const kgl_json *base = o ? kgl_json_get(sp, "optimistic") : sp;
            for (int d = 0; d < 3 && ok; d++) {
                const kgl_json *dir = kgl_json_get(base, kgl_benchmark_directions[d]);
                if (!dir) {
                    snprintf(err, cap, "%s has no metrics.%s%s.%s", path, kgl_benchmark_splits[s],
                             o ? ".optimistic" : "", kgl_benchmark_directions[d]);
                    ok = false;
                    break;
                }
                for (int k = 0; k < KGL_BENCHMARK_METRICS; k++) r->m[s][o][d][k] = json_num(dir, kgl_benchmark_metrics[k]);
                if (s == 1 && d == 2 && o == 0) r->n_test = json_count(dir, "n");
            }
        }
    }
    kgl_json_free(&doc);
    return ok;
}

void kgl_benchmark_mean_std(const kgl_benchmark_run *runs, int n, int s, int o, int d, int k, double *mean,
                            double *sd)
{
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++) sum += runs[i].m[s][o][d][k];
    *mean = sum / n;
    for (int i = 0; i < n; i++) sq += (runs[i].m[s][o][d][k] - *mean) * (runs[i].m[s][o][d][k] - *mean);
    *sd = n > 1 ? sqrt(sq / (n - 1)) : 0; /* sample standard deviation */
}

kgl_benchmark_cost kgl_benchmark_cost_of(const kgl_benchmark_run *runs, int n)
{
    kgl_benchmark_cost c = {0, 0, 0};
    double secs = 0;
    for (int i = 0; i < n; i++) {
        secs += runs[i].seconds;
        if (runs[i].seconds > c.max_seconds) c.max_seconds = runs[i].seconds;
        c.peak_mb = fmax(c.peak_mb, runs[i].peak_mb); /* fmax leaves a NaN out */
    }
    c.mean_seconds = secs / n;
    return c;
}

void kgl_benchmark_member_steps(const kgl_benchmark_run *r, long *first, long *last)
{
    *first = *last = r->member_best_step[0];
    for (int k = 1; k < r->n_members; k++) {
        if (r->member_best_step[k] < *first) *first = r->member_best_step[k];
        if (r->member_best_step[k] > *last) *last = r->member_best_step[k];
    }
}

double kgl_benchmark_layer_minus_baseline(const kgl_benchmark_dataset *d, int metric)
{
    double layer, base, sd;
    kgl_benchmark_mean_std(d->runs, d->n_runs, 1, 0, 2, metric, &layer, &sd);
    kgl_benchmark_mean_std(d->baseline_runs, d->n_runs, 1, 0, 2, metric, &base, &sd);
    return layer - base;
}

/* ---- results.json ------------------------------------------------------------ */

/* "tail":{…},"head":{…},"both":{…} of one rank kind (o: optimistic) */
static void json_dirs(kgl_json_writer *w, const kgl_benchmark_run *runs, int n, int s, int o, bool sd)
{
    for (int d = 0; d < 3; d++) {
        kgl_json_key(w, kgl_benchmark_directions[d]);
        kgl_json_begin_object(w);
        for (int k = 0; k < KGL_BENCHMARK_METRICS; k++) {
            double mean, dev;
            kgl_benchmark_mean_std(runs, n, s, o, d, k, &mean, &dev);
            kgl_json_field_number(w, kgl_benchmark_metrics[k], sd ? dev : mean);
        }
        kgl_json_end_object(w);
    }
}

/* {"tail","head","both"} with the realistic rank, and "optimistic":{…} */
static void json_split(kgl_json_writer *w, const kgl_benchmark_run *runs, int n, int s, bool sd)
{
    kgl_json_begin_object(w);
    json_dirs(w, runs, n, s, 0, sd);
    kgl_json_key(w, "optimistic");
    kgl_json_begin_object(w);
    json_dirs(w, runs, n, s, 1, sd);
    kgl_json_end_object(w);
    kgl_json_end_object(w);
}

/* "valid":…,"test":…,"seconds":…,"params":…,"ensemble":… of a dataset's
   runs (its layer's or its baseline's), up to its "config" */
static void json_runs_means(kgl_json_writer *w, const kgl_benchmark_run *runs, int n)
{
    double secs = 0;
    for (int i = 0; i < n; i++) secs += runs[i].seconds;
    for (int s = 0; s < 2; s++) {
        kgl_json_key(w, kgl_benchmark_splits[s]);
        json_split(w, runs, n, s, false);
    }
    kgl_json_field_number(w, "seconds", secs / n);
    kgl_json_field_int(w, "params", runs[0].params);
    kgl_json_field_int(w, "ensemble", runs[0].ensemble);
}

/* "seeds":[…],"std":{…},"runs":[…] of a dataset's runs */
static void json_runs_each(kgl_json_writer *w, const kgl_benchmark_run *runs, int n)
{
    kgl_json_key(w, "seeds");
    kgl_json_begin_array(w);
    for (int i = 0; i < n; i++) kgl_json_put_uint(w, runs[i].seed);
    kgl_json_end_array(w);
    kgl_json_key(w, "std");
    kgl_json_begin_object(w);
    for (int s = 0; s < 2; s++) {
        kgl_json_key(w, kgl_benchmark_splits[s]);
        json_split(w, runs, n, s, true);
    }
    kgl_json_end_object(w);
    kgl_json_key(w, "runs");
    kgl_json_begin_array(w);
    for (int i = 0; i < n; i++) {
        kgl_json_begin_object(w);
        kgl_json_key(w, "seed");
        kgl_json_put_uint(w, runs[i].seed);
        kgl_json_field_int(w, "best_step", runs[i].best_step);
        kgl_json_key(w, "member_best_steps");
        kgl_json_begin_array(w);
        for (int k = 0; k < runs[i].n_members; k++) kgl_json_put_int(w, runs[i].member_best_step[k]);
        kgl_json_end_array(w);
        kgl_json_field_int(w, "steps", runs[i].steps);
        kgl_json_field_number(w, "seconds", runs[i].seconds);
        kgl_json_field_number(w, "train_seconds", runs[i].train_seconds);
        for (int s = 0; s < 2; s++) {
            kgl_json_key(w, kgl_benchmark_splits[s]);
            json_split(w, &runs[i], 1, s, false);
        }
        kgl_json_end_object(w);
    }
    kgl_json_end_array(w);
}

/* "baseline":{…}: the runs with --context none, then the layer's test
   means less theirs in MRR and Hits@1 and whether they are ≥ 0 */
static void json_baseline(kgl_json_writer *w, const kgl_benchmark_dataset *d)
{
    static const int compared[2] = {0, 1}; /* mrr, hits1 in kgl_benchmark_metrics */
    kgl_json_key(w, "baseline");
    kgl_json_begin_object(w);
    json_runs_means(w, d->baseline_runs, d->n_runs);
    char config[sizeof d->args_text + 32];
    snprintf(config, sizeof config, "%s --context none", d->args_text);
    kgl_json_field_string(w, "config", config);
    json_runs_each(w, d->baseline_runs, d->n_runs);
    for (int at_least = 0; at_least < 2; at_least++) {
        kgl_json_key(w, at_least ? "layer_at_least_baseline" : "layer_minus_baseline");
        kgl_json_begin_object(w);
        for (int c = 0; c < 2; c++) {
            double diff = kgl_benchmark_layer_minus_baseline(d, compared[c]);
            const char *metric = kgl_benchmark_metrics[compared[c]];
            if (at_least) kgl_json_field_bool(w, metric, diff >= 0); /* NaN: false */
            else kgl_json_field_number(w, metric, diff);
        }
        kgl_json_end_object(w);
    }
    kgl_json_end_object(w);
}

/* One dataset's member of results.json. */
static void json_dataset(kgl_json_writer *w, const kgl_benchmark_dataset *d)
{
    kgl_json_key(w, d->name);
    kgl_json_begin_object(w);
    json_runs_means(w, d->runs, d->n_runs);
    kgl_json_field_string(w, "config", d->args_text);
    kgl_json_field_string(w, "config_file", d->config_path);
    if (d->chosen_text[0]) kgl_json_field_string(w, "options", d->chosen_text); /* a recipe's, computed for d */
    json_runs_each(w, d->runs, d->n_runs);
    kgl_json_key(w, "published");
    kgl_json_begin_object(w);
    for (int p = 0; p < kgl_benchmark_n_published; p++) {
        const kgl_benchmark_published *pub = &kgl_benchmark_published_rows[p];
        if (strcmp(pub->dataset, d->name) != 0) continue;
        kgl_json_key(w, pub->model);
        kgl_json_begin_object(w);
        for (int k = 0; k < KGL_BENCHMARK_METRICS; k++) /* null where not reported */
            kgl_json_field_number(w, kgl_benchmark_metrics[k], pub->v[k]);
        kgl_json_end_object(w);
    }
    kgl_json_end_object(w);
    if (d->baseline) json_baseline(w, d);
    kgl_json_end_object(w);
}

bool kgl_benchmark_write_results(const char *path, const kgl_benchmark_dataset *d, int n_datasets, char *err,
                                 size_t cap)
{
    kgl_outfile o;
    if (!kgl_outfile_open(&o, path, err, cap)) return false;
    kgl_json_writer w;
    kgl_json_writer_init(&w, o.f);
    kgl_json_begin_object(&w);
    for (int j = 0; j < n_datasets; j++) json_dataset(&w, &d[j]);
    kgl_json_end_object(&w);
    kgl_json_newline(&w);
    kgl_json_writer_finish(&w);
    return kgl_outfile_commit(&o, err, cap);
}
