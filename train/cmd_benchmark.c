/* cmd_benchmark.c — `kgl benchmark`: the public link-prediction benchmarks
 * (UMLS, Nations) with the configurations recorded in data/bench/, beside the
 * published numbers. Each run is a `kgl train` process (its own log and best
 * checkpoint); this command reads their --json output back, prints one
 * markdown table per dataset and writes results.json. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

static const char help[] =
    "usage: kgl benchmark [--data DIR] [--datasets umls,nations] [--seeds 1,2,3]\n"
    "                     [--configs DIR] [--out DIR] [--jobs N]\n\n"
    "Trains on each dataset with the options in CONFIGS/<dataset>.args (they\n"
    "must include --eval-every K: model selection on the valid split), once per\n"
    "seed, each run a `kgl train` process writing\n"
    "OUT/<dataset>-seed<S>.{json,csv,safetensors} (its output, its training log,\n"
    "the best checkpoint). Then prints one markdown table per\n"
    "dataset: the filtered test MRR and Hits@1/3/10 over both directions (mean\n"
    "and standard deviation over the seeds; realistic and optimistic tie ranks)\n"
    "beside the published rows, and writes OUT/results.json.\n\n"
    "  --data DIR       holds <dataset>/{train,valid,test}.txt (default ../shared/kg)\n"
    "  --datasets A,B   default umls,nations\n"
    "  --seeds S,...    default 1,2,3\n"
    "  --configs DIR    default data/bench\n"
    "  --out DIR        default build/benchmark\n"
    "  --jobs N         runs at the same time (default 1: each run has the machine)\n"
    "exit status: 0 done, 1 a run failed, 2 bad arguments, missing files or a bad option\n"
    "in a configuration (the run's message is shown)\n";

/* Published filtered results on the same splits (both directions):
   MRR, Hits@1, Hits@3, Hits@10. */
typedef struct published {
    const char *dataset, *model, *source;
    double v[4];
} published;

static const published PUBLISHED[] = {
    {"umls", "ConvE", "Dettmers et al. 2018", {0.94, 0.92, 0.97, 0.99}},
    {"umls", "NTPλ", "Rocktäschel & Riedel 2017", {0.93, 0.87, 0.98, 1.00}},
    {"umls", "ComplEx", "Trouillon et al. 2016, as reported by NTP", {0.89, 0.82, 0.96, 1.00}},
    {"nations", "ConvE", "Dettmers et al. 2018", {0.82, 0.72, 0.88, 1.00}},
    {"nations", "NTPλ", "Rocktäschel & Riedel 2017", {0.74, 0.59, 0.89, 0.99}},
    {"nations", "ComplEx", "Trouillon et al. 2016, as reported by NTP", {0.75, 0.62, 0.84, 0.99}},
};
#define N_PUBLISHED (int)(sizeof PUBLISHED / sizeof PUBLISHED[0])

#define MAX_SEEDS 16
#define MAX_DATASETS 8
#define MAX_ARGS 128

static const char *const SPLITS[2] = {"valid", "test"};
static const char *const DIRS[3] = {"tail", "head", "both"};
static const char *const KEYS[4] = {"mrr", "hits1", "hits3", "hits10"};

/* One run's numbers: [split][optimistic][direction][metric]. */
typedef struct run_result {
    unsigned long long seed;
    double m[2][2][3][4];
    long n_test;
    double seconds, train_seconds;
    long best_step, steps, params;
} run_result;

typedef struct dataset_job {
    char name[64];
    char config_path[1024];
    char args_text[4096]; /* the options, one line, for tables and JSON */
    char *argv[MAX_ARGS];
    int argc;
    kgl_text args_file; /* the file's text: argv points into it */
    run_result runs[MAX_SEEDS];
} dataset_job;

static const char *display_name(const char *d)
{
    if (strcmp(d, "umls") == 0) return "UMLS";
    if (strcmp(d, "nations") == 0) return "Nations";
    return d;
}

/* The options of CONFIGS/<name>.args: whitespace-separated words; '#' starts
   a comment that runs to the end of its line. */
static int load_config(dataset_job *job, const char *configs)
{
    char path[sizeof job->config_path]; /* a local first: gcc -O1 cannot tell the members apart (-Wrestrict) */
    if (snprintf(path, sizeof path, "%s/%s.args", configs, job->name) >= (int)sizeof path) {
        fprintf(stderr, "kgl benchmark: --configs path too long\n");
        return EXIT_USAGE;
    }
    memcpy(job->config_path, path, sizeof path);
    char err[1400];
    if (!kgl_text_open(&job->args_file, job->config_path, err, sizeof err)) {
        fprintf(stderr, "kgl benchmark: %s\n", err);
        return EXIT_USAGE;
    }
    char *p = job->args_file.buf;
    size_t used = 0;
    job->argc = 0;
    job->args_text[0] = 0;
    while (*p) {
        if (*p == '#') {
            while (*p && *p != '\n') *p++ = ' ';
            continue;
        }
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            *p++ = 0;
            continue;
        }
        if (job->argc >= MAX_ARGS - 24) {
            fprintf(stderr, "%s: more than %d words\n", job->config_path, MAX_ARGS - 24);
            return EXIT_USAGE;
        }
        job->argv[job->argc++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '#') p++;
        if (*p == '#') { /* a comment glued to a word */
            *p = 0;
            p++;
            while (*p && *p != '\n') p++;
        }
    }
    bool selects = false;
    for (int k = 0; k < job->argc; k++) {
        selects |= strcmp(job->argv[k], "--eval-every") == 0;
        if (strcmp(job->argv[k], "--seed") == 0 || strncmp(job->argv[k], "--seed=", 7) == 0 ||
            strcmp(job->argv[k], "--train") == 0 || strcmp(job->argv[k], "--valid") == 0 ||
            strcmp(job->argv[k], "--test") == 0 || strcmp(job->argv[k], "--save") == 0 ||
            strcmp(job->argv[k], "--log") == 0) {
            fprintf(stderr, "%s: %s is set by kgl benchmark; remove it from the file\n", job->config_path,
                    job->argv[k]);
            return EXIT_USAGE;
        }
        used += (size_t)snprintf(job->args_text + used, used < sizeof job->args_text ? sizeof job->args_text - used : 0,
                                 "%s%s", k ? " " : "", job->argv[k]);
        if (used >= sizeof job->args_text) {
            fprintf(stderr, "%s: the options are too long\n", job->config_path);
            return EXIT_USAGE;
        }
    }
    if (!selects) {
        fprintf(stderr, "%s: give --eval-every K: kgl benchmark reports the model selected on the valid split\n",
                job->config_path);
        return EXIT_USAGE;
    }
    return 0;
}

static bool file_readable(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    fclose(f);
    return true;
}

/* Starts `kgl train` for one (dataset, seed); stdout and stderr go to files. */
static pid_t start_run(const char *self, const dataset_job *job, const char *data, const char *out,
                       unsigned long long seed)
{
    static char paths[6][1200], seed_text[32];
    char *argv[MAX_ARGS];
    int a = 0;
    snprintf(paths[0], sizeof paths[0], "%s/%s/train.txt", data, job->name);
    snprintf(paths[1], sizeof paths[1], "%s/%s/valid.txt", data, job->name);
    snprintf(paths[2], sizeof paths[2], "%s/%s/test.txt", data, job->name);
    snprintf(paths[3], sizeof paths[3], "%s/%s-seed%llu.safetensors", out, job->name, seed);
    snprintf(paths[4], sizeof paths[4], "%s/%s-seed%llu.csv", out, job->name, seed);
    snprintf(seed_text, sizeof seed_text, "%llu", seed);
    argv[a++] = (char *)self;
    argv[a++] = "train";
    argv[a++] = "--train", argv[a++] = paths[0];
    argv[a++] = "--valid", argv[a++] = paths[1];
    argv[a++] = "--test", argv[a++] = paths[2];
    for (int k = 0; k < job->argc; k++) argv[a++] = job->argv[k];
    argv[a++] = "--seed", argv[a++] = seed_text;
    argv[a++] = "--save", argv[a++] = paths[3];
    argv[a++] = "--log", argv[a++] = paths[4];
    argv[a++] = "--json";
    argv[a++] = "--quiet";
    argv[a] = NULL;
    char json_path[1200], err_path[1200];
    snprintf(json_path, sizeof json_path, "%s/%s-seed%llu.json", out, job->name, seed);
    snprintf(err_path, sizeof err_path, "%s/%s-seed%llu.err", out, job->name, seed);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, json_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int e = posix_spawn(&pid, self, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e) {
        fprintf(stderr, "kgl benchmark: cannot start %s: %s\n", self, strerror(e));
        return -1;
    }
    fprintf(stderr, "kgl benchmark: %s seed %llu: %s", job->name, seed, self);
    for (int k = 1; k < a; k++) fprintf(stderr, " %s", argv[k]);
    fprintf(stderr, "\n");
    return pid;
}

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

/* Reads OUT/<dataset>-seed<S>.json into r. */
static bool read_run(const char *out, const dataset_job *job, run_result *r)
{
    char path[1200], err[1400];
    snprintf(path, sizeof path, "%s/%s-seed%llu.json", out, job->name, r->seed);
    kgl_text text;
    if (!kgl_text_open(&text, path, err, sizeof err)) {
        fprintf(stderr, "kgl benchmark: %s\n", err);
        return false;
    }
    kgl_json_doc doc;
    bool ok = kgl_json_parse(text.buf, text.len, &doc, err, sizeof err);
    kgl_text_close(&text);
    if (!ok) {
        fprintf(stderr, "kgl benchmark: %s: %s\n", path, err);
        return false;
    }
    const kgl_json *root = doc.root, *metrics = kgl_json_get(root, "metrics");
    r->train_seconds = json_num(root, "seconds"); /* r->seconds is the process's wall time, set by the caller */
    r->best_step = json_count(root, "best_step");
    r->steps = json_count(root, "steps");
    r->params = json_count(root, "params");
    for (int s = 0; s < 2 && ok; s++) {
        const kgl_json *sp = kgl_json_get(metrics, SPLITS[s]);
        for (int o = 0; o < 2 && ok; o++) {
            const kgl_json *base = o ? kgl_json_get(sp, "optimistic") : sp;
            for (int d = 0; d < 3 && ok; d++) {
                const kgl_json *dir = kgl_json_get(base, DIRS[d]);
                if (!dir) {
                    fprintf(stderr, "kgl benchmark: %s has no metrics.%s%s.%s\n", path, SPLITS[s],
                            o ? ".optimistic" : "", DIRS[d]);
                    ok = false;
                    break;
                }
                for (int k = 0; k < 4; k++) r->m[s][o][d][k] = json_num(dir, KEYS[k]);
                if (s == 1 && d == 2 && o == 0) r->n_test = json_count(dir, "n");
            }
        }
    }
    kgl_json_free(&doc);
    return ok;
}

static void mean_std(const run_result *runs, int n, int s, int o, int d, int k, double *mean, double *sd)
{
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++) sum += runs[i].m[s][o][d][k];
    *mean = sum / n;
    for (int i = 0; i < n; i++) sq += (runs[i].m[s][o][d][k] - *mean) * (runs[i].m[s][o][d][k] - *mean);
    *sd = n > 1 ? sqrt(sq / (n - 1)) : 0; /* sample standard deviation */
}

static void print_table(const dataset_job *job, int n_seeds, int jobs)
{
    const run_result *runs = job->runs;
    printf("\n### %s: filtered test ranking, both directions (%ld queries)\n\n", display_name(job->name),
           runs[0].n_test);
    printf("| model | MRR | Hits@1 | Hits@3 | Hits@10 |\n|---|---:|---:|---:|---:|\n");
    for (int o = 0; o < 2; o++) {
        if (n_seeds > 1)
            printf("| **kgl**, %s ties (mean ± std, %d seeds) |", o ? "optimistic" : "realistic", n_seeds);
        else
            printf("| **kgl**, %s ties (seed %llu) |", o ? "optimistic" : "realistic", runs[0].seed);
        for (int k = 0; k < 4; k++) {
            double mean, sd;
            mean_std(runs, n_seeds, 1, o, 2, k, &mean, &sd);
            if (n_seeds > 1) printf(" %.3f ± %.3f |", mean, sd);
            else printf(" %.3f |", mean);
        }
        printf("\n");
    }
    for (int p = 0; p < N_PUBLISHED; p++) {
        if (strcmp(PUBLISHED[p].dataset, job->name) != 0) continue;
        printf("| %s (%s) | %.2f | %.2f | %.2f | %.2f |\n", PUBLISHED[p].model, PUBLISHED[p].source,
               PUBLISHED[p].v[0], PUBLISHED[p].v[1], PUBLISHED[p].v[2], PUBLISHED[p].v[3]);
    }
    double secs = 0, max_secs = 0, vm, vs;
    for (int i = 0; i < n_seeds; i++) {
        secs += runs[i].seconds;
        if (runs[i].seconds > max_secs) max_secs = runs[i].seconds;
    }
    mean_std(runs, n_seeds, 0, 0, 2, 0, &vm, &vs);
    printf("\nkgl: one layer, %ld parameters; options (`%s`): `%s`.\n", runs[0].params, job->config_path,
           job->args_text);
    printf("Valid MRR (what selected the model) %.3f ± %.3f. Wall time per run %.1f s on average, %.1f s at most "
           "(%d run%s at a time, %ld cores).\n",
           vm, vs, secs / n_seeds, max_secs, jobs, jobs == 1 ? "" : "s", sysconf(_SC_NPROCESSORS_ONLN));
    printf("Per seed: ");
    for (int i = 0; i < n_seeds; i++)
        printf("%sseed %llu test MRR %.3f H@1 %.3f (best valid at step %ld of %ld, %.1f s)", i ? "; " : "",
               runs[i].seed, runs[i].m[1][0][2][0], runs[i].m[1][0][2][1], runs[i].best_step, runs[i].steps,
               runs[i].seconds);
    printf(".\n");
}

/* "tail":{…},"head":{…},"both":{…} of one rank kind (o: optimistic) */
static void json_dirs(FILE *f, const run_result *runs, int n, int s, int o, bool sd)
{
    for (int d = 0; d < 3; d++) {
        fprintf(f, "%s\"%s\":{", d ? "," : "", DIRS[d]);
        for (int k = 0; k < 4; k++) {
            double mean, dev;
            mean_std(runs, n, s, o, d, k, &mean, &dev);
            fprintf(f, "%s\"%s\":", k ? "," : "", KEYS[k]);
            kgl_json_number(f, sd ? dev : mean);
        }
        fputc('}', f);
    }
}

/* {"tail","head","both"} with the realistic rank, and "optimistic":{…} */
static void json_split(FILE *f, const run_result *runs, int n, int s, bool sd)
{
    fputc('{', f);
    json_dirs(f, runs, n, s, 0, sd);
    fprintf(f, ",\"optimistic\":{");
    json_dirs(f, runs, n, s, 1, sd);
    fprintf(f, "}}");
}

static bool write_results(const char *out, dataset_job *jobs, int n_jobs, const unsigned long long *seeds,
                          int n_seeds)
{
    char path[1200], tmp[1300];
    snprintf(path, sizeof path, "%s/results.json", out);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "kgl benchmark: cannot write %s: %s\n", tmp, strerror(errno));
        return false;
    }
    fputc('{', f);
    for (int j = 0; j < n_jobs; j++) {
        const run_result *runs = jobs[j].runs;
        double secs = 0;
        for (int i = 0; i < n_seeds; i++) secs += runs[i].seconds;
        fprintf(f, "%s\"%s\":{", j ? "," : "", jobs[j].name);
        for (int s = 0; s < 2; s++) {
            fprintf(f, "\"%s\":", SPLITS[s]);
            json_split(f, runs, n_seeds, s, false);
            fputc(',', f);
        }
        fprintf(f, "\"seconds\":");
        kgl_json_number(f, secs / n_seeds);
        fprintf(f, ",\"params\":%ld,\"config\":", runs[0].params);
        kgl_json_string(f, jobs[j].args_text);
        fprintf(f, ",\"config_file\":");
        kgl_json_string(f, jobs[j].config_path);
        fprintf(f, ",\"seeds\":[");
        for (int i = 0; i < n_seeds; i++) fprintf(f, "%s%llu", i ? "," : "", seeds[i]);
        fprintf(f, "],\"std\":{");
        for (int s = 0; s < 2; s++) {
            fprintf(f, "%s\"%s\":", s ? "," : "", SPLITS[s]);
            json_split(f, runs, n_seeds, s, true);
        }
        fprintf(f, "},\"runs\":[");
        for (int i = 0; i < n_seeds; i++) {
            fprintf(f, "%s{\"seed\":%llu,\"best_step\":%ld,\"steps\":%ld,\"seconds\":", i ? "," : "", runs[i].seed,
                    runs[i].best_step, runs[i].steps);
            kgl_json_number(f, runs[i].seconds);
            fprintf(f, ",\"train_seconds\":");
            kgl_json_number(f, runs[i].train_seconds);
            for (int s = 0; s < 2; s++) {
                fprintf(f, ",\"%s\":", SPLITS[s]);
                json_split(f, &runs[i], 1, s, false);
            }
            fputc('}', f);
        }
        fprintf(f, "],\"published\":{");
        bool first = true;
        for (int p = 0; p < N_PUBLISHED; p++) {
            if (strcmp(PUBLISHED[p].dataset, jobs[j].name) != 0) continue;
            fprintf(f, "%s\"%s\":{\"mrr\":%.2f,\"hits1\":%.2f,\"hits3\":%.2f,\"hits10\":%.2f}", first ? "" : ",",
                    PUBLISHED[p].model, PUBLISHED[p].v[0], PUBLISHED[p].v[1], PUBLISHED[p].v[2], PUBLISHED[p].v[3]);
            first = false;
        }
        fprintf(f, "}}");
    }
    fprintf(f, "}\n");
    bool ok = fclose(f) == 0 && rename(tmp, path) == 0;
    if (!ok) fprintf(stderr, "kgl benchmark: could not write %s\n", path);
    return ok;
}

/* "1,2,3" → seeds */
static int parse_seeds(cli_args *a, const char *text, unsigned long long *seeds)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(p, &end, 10);
        if (end == p || errno || (*end && *end != ',') || *p == '-' || n >= MAX_SEEDS) {
            cli_usage_error(a, "--seeds expects up to %d whole numbers separated by commas, got '%s'", MAX_SEEDS,
                            text);
            return -1;
        }
        seeds[n++] = s;
        p = *end ? end + 1 : end;
    }
    if (n == 0) cli_usage_error(a, "--seeds is empty");
    return n ? n : -1;
}

int cmd_benchmark(int argc, char **argv)
{
    const char *data = "../shared/kg", *configs = "data/bench", *out = "build/benchmark";
    const char *datasets = "umls,nations", *seed_text = "1,2,3";
    long jobs = 1;
    cli_args a;
    cli_init(&a, "benchmark", argc, argv);
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (cli_is(&a, "--data")) {
            if (!(data = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--datasets")) {
            if (!(datasets = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--seeds")) {
            if (!(seed_text = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--configs")) {
            if (!(configs = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--out")) {
            if (!(out = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--jobs")) {
            if (!cli_int(&a, 1, 64, &jobs)) return EXIT_USAGE;
        } else {
            return cli_unknown(&a);
        }
    }
    unsigned long long seeds[MAX_SEEDS];
    int n_seeds = parse_seeds(&a, seed_text, seeds);
    if (n_seeds < 0) return EXIT_USAGE;

    static dataset_job job[MAX_DATASETS];
    int n_jobs = 0, st = 0;
    char *list = strdup(datasets);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        if (n_jobs == MAX_DATASETS || strlen(tok) >= sizeof job[0].name || strchr(tok, '/')) {
            free(list);
            return cli_usage_error(&a, "--datasets expects up to %d names separated by commas", MAX_DATASETS);
        }
        memset(&job[n_jobs], 0, sizeof job[n_jobs]);
        snprintf(job[n_jobs].name, sizeof job[n_jobs].name, "%s", tok);
        n_jobs++;
    }
    free(list);
    if (n_jobs == 0) return cli_usage_error(&a, "--datasets is empty");
    /* everything is checked before the first run starts */
    for (int j = 0; j < n_jobs && !st; j++) {
        if ((st = load_config(&job[j], configs))) break;
        for (int s = 0; s < 3; s++) {
            char path[1200];
            static const char *const files[3] = {"train", "valid", "test"};
            bool fits = snprintf(path, sizeof path, "%s/%s/%s.txt", data, job[j].name, files[s]) < (int)sizeof path;
            if (!fits || !file_readable(path)) {
                fprintf(stderr,
                        "kgl benchmark: cannot read %s: %s\n(the data folder is %s; give another with --data DIR, "
                        "or KG_DATA=DIR for make benchmark)\n",
                        path, strerror(errno), data);
                st = EXIT_USAGE;
                break;
            }
        }
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (!st && n <= 0) {
        fprintf(stderr, "kgl benchmark: cannot find its own executable (/proc/self/exe)\n");
        st = EXIT_USAGE;
    }
    if (!st) {
        self[n] = 0;
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "%s", out);
        for (char *p = cmd + 1; *p; p++) /* mkdir -p */
            if (*p == '/') {
                *p = 0;
                mkdir(cmd, 0755);
                *p = '/';
            }
        if (mkdir(cmd, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "kgl benchmark: cannot create %s: %s\n", out, strerror(errno));
            st = EXIT_USAGE;
        }
    }
    if (st) {
        for (int j = 0; j < n_jobs; j++) kgl_text_close(&job[j].args_file);
        return st;
    }

    /* the runs, `jobs` at a time, each timed from start to exit */
    int total = n_jobs * n_seeds, next = 0, running = 0, failed = 0;
    pid_t pids[64];
    int slot_run[64];
    double started[64];
    for (int k = 0; k < total; k++) job[k / n_seeds].runs[k % n_seeds].seed = seeds[k % n_seeds];
    while (next < total || running > 0) {
        while (running < jobs && next < total && !failed) {
            int j = next / n_seeds, s = next % n_seeds;
            pid_t pid = start_run(self, &job[j], data, out, seeds[s]);
            if (pid < 0) {
                failed = 1;
                break;
            }
            pids[running] = pid;
            slot_run[running] = next;
            started[running] = now_seconds();
            running++;
            next++;
        }
        if (running == 0) break;
        int status;
        pid_t done = waitpid(-1, &status, 0);
        if (done < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < running; k++) {
            if (pids[k] != done) continue;
            int r = slot_run[k], j = r / n_seeds, s = r % n_seeds;
            run_result *res = &job[j].runs[s];
            double wall = now_seconds() - started[k];
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                char err_path[1200];
                snprintf(err_path, sizeof err_path, "%s/%s-seed%llu.err", out, job[j].name, seeds[s]);
                char why[1400];
                kgl_text text;
                bool shown = kgl_text_open(&text, err_path, why, sizeof why);
                fprintf(stderr, "kgl benchmark: %s seed %llu failed (%s):\n%.2000s", job[j].name, seeds[s], err_path,
                        shown ? text.buf : why);
                if (shown) kgl_text_close(&text);
                /* a bad option in the .args file is bad input, like any other */
                failed = WIFEXITED(status) && WEXITSTATUS(status) == EXIT_USAGE ? EXIT_USAGE : 1;
            } else if (!read_run(out, &job[j], res)) {
                failed = 1;
            } else {
                res->seconds = wall;
                fprintf(stderr, "kgl benchmark: %s seed %llu: test MRR %.3f H@1 %.3f, best valid MRR %.3f at step %ld, %.0f s\n",
                        job[j].name, seeds[s], res->m[1][0][2][0], res->m[1][0][2][1], res->m[0][0][2][0],
                        res->best_step, wall);
            }
            pids[k] = pids[running - 1];
            slot_run[k] = slot_run[running - 1];
            started[k] = started[running - 1];
            running--;
            break;
        }
    }
    if (!failed) {
        for (int j = 0; j < n_jobs; j++) print_table(&job[j], n_seeds, (int)jobs);
        if (!write_results(out, job, n_jobs, seeds, n_seeds)) failed = 1;
        else printf("\nwritten: %s/results.json; per run: %s/<dataset>-seed<S>.{json,csv,safetensors}\n", out, out);
    }
    for (int j = 0; j < n_jobs; j++) kgl_text_close(&job[j].args_file);
    return failed;
}
