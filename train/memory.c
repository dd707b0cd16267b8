/* memory.c — what a run needs and what this process may use, checked before
 * kgl train, eval, grad and heads allocate; and the report when an
 * allocation fails all the same (data/report/manual.md, "Exit status, limits,
 * interruptions, in full"). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common.h"

/* ---- what this process may use ------------------------------------------------- */

/* "KEY: N kB" of a /proc file, in bytes; -1 when absent. */
static double proc_kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    size_t len = strlen(key);
    double kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, len) == 0 && line[len] == ':' && sscanf(line + len + 1, "%lf kB", &kb) == 1) break;
    fclose(f);
    return kb >= 0 ? kb * 1024.0 : -1;
}

double memory_rlimit_headroom(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return INFINITY;
    double mapped = proc_kb("/proc/self/status", "VmSize");
    double left = (double)r.rlim_cur - (mapped > 0 ? mapped : 0);
    return left > 0 ? left : 0;
}

/* The two versions of the memory controller: the files of a cgroup's limit,
   its usage, and (in memory.stat) the page cache it may drop, which the
   usage counts but the kernel reclaims before it refuses memory. */
typedef struct cgroup_files {
    const char *limit, *usage, *inactive_file;
} cgroup_files;
static const cgroup_files CGROUP_V2 = {"memory.max", "memory.current", "inactive_file"};
static const cgroup_files CGROUP_V1 = {"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"};

/* The first number of the file dir/name (false if none: v2 writes "max" for
   no limit), or with `key`, the number after "key " in that file. */
static bool read_number(const char *dir, const char *name, const char *key, double *out)
{
    char path[4096];
    int k = snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = k > 0 && (size_t)k < sizeof path ? fopen(path, "r") : NULL;
    if (!f) return false;
    bool found = false;
    if (!key) {
        found = fscanf(f, "%lf", out) == 1;
    } else {
        char line[256];
        size_t len = strlen(key);
        while (!found && fgets(line, sizeof line, f))
            found = strncmp(line, key, len) == 0 && line[len] == ' ' && sscanf(line + len + 1, "%lf", out) == 1;
    }
    fclose(f);
    return found && isfinite(*out);
}

/* The least headroom (limit − usage) of the cgroup `path` of the hierarchy
   mounted at `mount` and of each of its ancestors: a parent's limit binds its
   children. A level whose folder is absent is skipped: a container sees its
   own cgroup mounted as the hierarchy's root, below the path the kernel
   names. INFINITY when no level has a limit. */
static double hierarchy_headroom(const char *mount, const char *path, const cgroup_files *files)
{
    double least = INFINITY;
    size_t len = strlen(path);
    for (;;) {
        while (len > 0 && path[len - 1] == '/') len--;
        char dir[4096];
        int k = snprintf(dir, sizeof dir, "%s%.*s", mount, (int)len, path);
        if (k < 0 || (size_t)k >= sizeof dir) return least;
        double limit, usage, inactive;
        if (read_number(dir, files->limit, NULL, &limit) && read_number(dir, files->usage, NULL, &usage)) {
            if (read_number(dir, "memory.stat", files->inactive_file, &inactive) && inactive <= usage)
                usage -= inactive;
            least = fmin(least, limit > usage ? limit - usage : 0);
        }
        if (len == 0) return least;
        while (len > 0 && path[len - 1] != '/') len--; /* up one level */
    }
}

double memory_cgroup_headroom(const char *root)
{
    char path[4096];
    int k = snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = k > 0 && (size_t)k < sizeof path ? fopen(path, "r") : NULL;
    if (!f) return INFINITY;
    double least = INFINITY;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        /* "ID:CONTROLLERS:PATH": v2 is "0::PATH"; v1's memory hierarchy
           lists memory among its controllers, e.g. "4:memory:PATH" */
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = 0;
        bool v2 = strcmp(line, "0") == 0 && c1 + 1 == c2, v1 = false;
        for (char *save, *c = strtok_r(c1 + 1, ",", &save); c && !v2; c = strtok_r(NULL, ",", &save))
            v1 |= strcmp(c, "memory") == 0;
        if (!v1 && !v2) continue;
        char mount[4096];
        k = snprintf(mount, sizeof mount, "%s/sys/fs/cgroup%s", root, v2 ? "" : "/memory");
        if (k < 0 || (size_t)k >= sizeof mount) continue;
        least = fmin(least, hierarchy_headroom(mount, c2 + 1, v2 ? &CGROUP_V2 : &CGROUP_V1));
    }
    fclose(f);
    return least;
}

double memory_available_bytes(const char **limit)
{
    *limit = NULL;
    const char *env = getenv("KGL_MEMORY_MB");
    if (env && *env) {
        char *end;
        double mb = strtod(env, &end);
        if (end != env && !*end && mb > 0) return mb * 1048576.0;
    }
    double have = proc_kb("/proc/meminfo", "MemAvailable");
    if (have <= 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        have = pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
    }
    double as = memory_rlimit_headroom(), cg = memory_cgroup_headroom("");
    if (as < have) have = as, *limit = "its address-space limit (ulimit -v)";
    if (cg < have) have = cg, *limit = "its cgroup's memory limit";
    return have;
}

/* ---- what a run needs -------------------------------------------------------- */

double memory_needed_bytes(const kgl_config *c, long examples, long batch, double *params_part, double *attn_part)
{
    double n = c->n_entities, d = c->dim, f = c->ffn, H = c->heads;
    double rel_rows = kgl_config_relation_rows(c);
    bool layer = c->context != KGL_CONTEXT_NONE;
    double P = n * d + rel_rows * d + (layer ? 4 * d * d + 2 * d : 0);
    if (f > 0 && layer) P += 2 * d * f + f + 3 * d;
    if (c->context == KGL_CONTEXT_GRAPH) P += (2.0 * c->n_relations + 1) * d;
    if (c->query_relation) P += 2.0 * c->n_relations * d; /* Pq */
    /* parameters, gradients, the optimiser's two moments, a snapshot */
    double params = 5 * P;
    double B = batch < examples ? (double)batch : (double)examples;
    /* the readout's scores, probabilities and their gradient, and the
       evaluation's states */
    double act = 3 * B * n + 2 * n * d, attn = 0;
    if (c->context == KGL_CONTEXT_FULL) {
        /* every head's weights kept for backward, plus a head's backward
           scratch (src/engine/ops.c, kgl_attention) */
        attn = (H + 1) * n * n + (c->qk_norm ? 4 * n * d : 0);
        /* the layer's activations (measured: kgl bench at
           data/bench/cases/large.tsv, 484 MB peak resident, estimated 583 MB) */
        act += 30 * n * d + 6 * n * f;
    } else if (c->context == KGL_CONTEXT_GRAPH) {
        /* per token (B (K + 1) of them): the gathered keys and values and
           their gradients, 5.5 rows of d; qk-norm's normalised keys and their
           statistics 2.5 more, the asked relation's keys 1.5 more; and the
           per-head weights. Per example the layer's rows (as the full
           context's per entity) and the FFN's. Measured (peak resident, kgl
           train, UMLS, the complex readout, batch 1024, K 50, float64):
           width 200 / 400 / 400 with K 100 / 400 with qk-norm / 400 with the
           asked relation / 1000 with qk-norm 0.41 / 0.81 / 1.50 / 1.16 / 0.99
           / 2.98 GB, estimated 0.6 / 1.1 / 2.0 / 1.5 / 1.4 / 3.8; FB15k-237
           with data/bench/large.args 1.92 GB, estimated 2.4. The estimate
           this replaced said 1.5 to 4 times the peak (UMLS at width 1000: 7.2
           GB) and refused runs that fit. It counts K tokens an example even
           where an entity has fewer edges. */
        double tokens = B * (c->neighbours + 1.0);
        double rows = 5.5 + (c->qk_norm ? 2.5 : 0) + (c->query_relation ? 1.5 : 0);
        act += tokens * (rows * d + 6 * H) + B * (30 * d + 18 * f);
    }
    const double w = sizeof(kgl_real); /* bytes per value: 8, or 4 in float32 */
    if (params_part) *params_part = w * params;
    if (attn_part) *attn_part = w * attn;
    return w * (params + attn + act) + 64.0 * 1048576.0;
}

bool memory_fits(const char *cmd, const kgl_config *c, long examples, long batch, int models, bool say)
{
    double pp, ap, need = memory_needed_bytes(c, examples, batch, &pp, &ap);
    need *= models, pp *= models, ap *= models; /* an ensemble keeps every member until its report */
    const char *limit;
    double have = memory_available_bytes(&limit);
    const double GB = 1e9;
    char of[64] = "";
    if (models > 1) snprintf(of, sizeof of, " for %d models", models);
    if (need <= have) {
        if (say && need >= MEMORY_SAY_FROM) {
            fprintf(stderr, "kgl %s: this run needs about %.1f GB%s (an estimate, a little above what it uses)", cmd,
                    need / GB, of);
            if (isfinite(have))
                fprintf(stderr, " of the %.1f GB available%s%s", have / GB, limit ? " under " : "", limit ? limit : "");
            fputc('\n', stderr);
        }
        return true;
    }
    char who[128];
    if (limit) snprintf(who, sizeof who, "this process has %.1f GB available under %s", have / GB, limit);
    else snprintf(who, sizeof who, "this machine has %.1f GB available", have / GB);
    fprintf(stderr,
            "kgl %s: this run needs about %.1f GB%s (parameters and optimiser state %.1f GB, attention %.1f GB for %d "
            "entities and %d heads), %s; try a smaller --dim, --ffn, --heads or --batch%s%s%s\n",
            cmd, need / GB, of, pp / GB, ap / GB, c->n_entities, c->heads, who,
            models > 1 ? ", or fewer --ensemble members" : "",
            sizeof(kgl_real) == 8 && need / 2 <= have ? ", or --precision f32 (every value in 4 bytes, not 8)" : "",
            c->context == KGL_CONTEXT_FULL && ap > need / 2
                ? ", or --context graph (each entity attends over its neighbourhood in the training graph, not "
                  "over every entity: nothing of size n x n)"
                : "");
    return false;
}

/* ---- when an allocation fails all the same ----------------------------------- */

void out_of_memory(const char *what, size_t bytes)
{
    /* members train on threads of their own: one reports, the others wait
       for the exit */
    static atomic_flag reporting = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&reporting))
        for (;;) pause();
    kgl_tmp_remove_all();
    fprintf(stderr,
            "kgl: out of memory: %s (%zu bytes); the run needs more memory than this process may use (free memory, "
            "ulimit -v, a container's limit): try a smaller --dim, --ffn, --heads or --batch\n",
            what, bytes);
    exit(EXIT_USAGE);
}
