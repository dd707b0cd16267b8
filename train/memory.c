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

/* KGL_MEMORY_MB in bytes, or -1 when it is not set (or not a number above 0). */
static double memory_override(void)
{
    const char *env = getenv("KGL_MEMORY_MB");
    if (env && *env) {
        char *end;
        double mb = strtod(env, &end);
        if (end != env && !*end && mb > 0) return mb * 1048576.0;
    }
    return -1;
}

static const char ADDRESS_SPACE_LIMIT[] = "its address-space limit (ulimit -v)";

double memory_available_bytes(const char **limit)
{
    *limit = NULL;
    double set = memory_override();
    if (set > 0) return set;
    double have = proc_kb("/proc/meminfo", "MemAvailable");
    if (have <= 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        have = pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
    }
    double as = memory_rlimit_headroom(), cg = memory_cgroup_headroom("");
    if (as < have) have = as, *limit = ADDRESS_SPACE_LIMIT;
    if (cg < have) have = cg, *limit = "its cgroup's memory limit";
    return have;
}

/* ---- what a run needs -------------------------------------------------------- */

/* Once a process: the program, libc and the loaded data's names (kgl train
   on the academic world peaks at 3.1 MB resident, kgl --help at 2.0); per
   thread, its stack and malloc's arena (0.3 MB measured); per model, its
   structures (the trainer, two evaluators, the run's state; 77 KB a model
   measured with its small arrays, which are counted apart). */
#define PROCESS_BYTES (3.0 * 1048576.0)
#define THREAD_BYTES (0.375 * 1048576.0)
#define MODEL_BYTES (48.0 * 1024.0)
/* A step's tape is resident somewhat above its arena's high-water mark: a
   step whose tensors change size (the neighbourhoods' tokens, a short last
   batch) lands on pages another step left untouched. */
#define STEP_SLACK 1.1
/* What malloc keeps beside what it hands out: memory a finished model freed
   is reused, not always returned, and blocks of other sizes land beside it
   (measured: an ensemble of 4 on UMLS, 1.0 to 1.1 times the sum). */
#define MALLOC_SLACK 1.1

/* What the address space holds beyond the resident set (ulimit -v limits
   the address space): each thread's stack and, for a thread that allocates,
   malloc's arena of 64 MB reserved at once (glibc, 64-bit); and a tape's
   blocks in full, the chain doubling, up to twice its high-water mark.
   Measured: UMLS at width 1024 with --eval-every needs 310 MB resident and
   runs under ulimit -v of 440 MB, not 400. */
#define THREAD_ADDRESS_BYTES ((8.0 + 64.0) * 1048576.0)

void memory_needed(const memory_run *r, size_t value_bytes, memory_need *need)
{
    kgl_memory_plan p;
    kgl_trainer_plan(&r->cfg, &r->tc, &r->reg, r->n_train, r->ranked, value_bytes, &p);
    double n = r->cfg.n_entities, m = r->cfg.n_relations;
    /* the dataset: its triples, and the filter index of the known answers
       per (entity, relation or inverse) */
    double data = (2 * n * m + 1) * sizeof(int) + (double)r->triples * (sizeof(kgl_triple) + 2 * sizeof(int));
    /* Every model keeps its parameters, states and ranking scratch until the
       report; the models that train at once (jobs) each have a step's tape
       and, with --eval-every, a snapshot, freed when the model is done. */
    double model = MODEL_BYTES + p.parameters + p.states + 2 * p.ranking + p.examples;
    double training = STEP_SLACK * p.step + (r->selecting ? p.snapshot : 0);
    int jobs = r->jobs < r->members ? r->jobs : r->members;
    double allocated = data + (r->members > 1 ? p.mixture : 0) + r->members * model + jobs * training;
    need->resident = PROCESS_BYTES + r->threads * THREAD_BYTES + MALLOC_SLACK * allocated;
    need->address_space = need->resident + (r->threads - 1) * THREAD_ADDRESS_BYTES + jobs * p.step;
    need->parameters = r->members * p.parameters;
    need->attention = jobs * p.attention;
}

/* "412 MB" below a gigabyte ("41.2 MB" below 100 MB), else "1.3 GB". */
static const char *amount(double bytes, char *buf, size_t cap)
{
    if (bytes < 1e8) snprintf(buf, cap, "%.1f MB", bytes / 1e6);
    else if (bytes < 0.95e9) snprintf(buf, cap, "%.0f MB", bytes / 1e6);
    else snprintf(buf, cap, "%.1f GB", bytes / 1e9);
    return buf;
}

/* What this process may use: resident (the least of the limits but the
   address space's, memory_available_bytes), and mapped (ulimit -v's). */
typedef struct memory_room {
    double resident, address_space;
    const char *limit; /* the one that binds, NULL: the machine's memory */
} memory_room;

static bool fits(const memory_run *r, size_t value_bytes, const memory_room *room)
{
    memory_need need;
    memory_needed(r, value_bytes, &need);
    return need.resident <= room->resident && need.address_space <= room->address_space;
}

/* What would fit in `have`, each change alone: the largest width, batch
   and ensemble that do, float32 and the neighbourhood context when their
   estimates do; written to `s` as "--dim 256, --batch 512 or --precision
   f32 (...)". Returns how many. */
static int what_fits(const memory_run *r, const memory_room *have, char *s, size_t cap)
{
    char found[5][160];
    int n = 0;
    memory_run t = *r;
    /* widths the model accepts: multiples of --heads (even for the complex readout) */
    for (t.cfg.dim = r->cfg.dim - 1; t.cfg.dim >= 1; t.cfg.dim--)
        if (!kgl_config_error(&t.cfg) && fits(&t, sizeof(kgl_real), have)) {
            snprintf(found[n++], sizeof found[0], "--dim %d", t.cfg.dim);
            break;
        }
    t = *r;
    long examples = r->cfg.reciprocal ? 2 * r->n_train : r->n_train;
    long lo = 0, hi = r->tc.batch < examples ? r->tc.batch : examples; /* lo fits (0: none found), hi does not */
    while (hi - lo > 1) {
        t.tc.batch = (int)((lo + hi) / 2);
        if (fits(&t, sizeof(kgl_real), have)) lo = t.tc.batch;
        else hi = t.tc.batch;
    }
    if (lo > 0) snprintf(found[n++], sizeof found[0], "--batch %ld", lo);
    t = *r;
    for (t.members = r->members - 1; t.members >= 1; t.members--)
        if (fits(&t, sizeof(kgl_real), have)) {
            snprintf(found[n++], sizeof found[0], "--ensemble %d", t.members);
            break;
        }
    if (sizeof(kgl_real) == 8 && fits(r, 4, have))
        snprintf(found[n++], sizeof found[0], "--precision f32 (every value in 4 bytes, not 8)");
    t = *r;
    t.cfg.context = KGL_CONTEXT_GRAPH;
    if (r->cfg.context == KGL_CONTEXT_FULL && fits(&t, sizeof(kgl_real), have))
        snprintf(found[n++], sizeof found[0], "--context graph (each entity attends over its neighbourhood in the "
                                               "training graph, not over every entity: nothing of size n x n)");
    size_t used = 0;
    s[0] = 0;
    for (int k = 0; k < n && used < cap; k++)
        used += (size_t)snprintf(s + used, cap - used, "%s%s", k == 0 ? "" : k + 1 < n ? ", " : " or ", found[k]);
    return n;
}

bool memory_fits(const char *cmd, const memory_run *r, bool say)
{
    memory_need need;
    memory_needed(r, sizeof(kgl_real), &need);
    memory_room room;
    room.resident = memory_available_bytes(&room.limit);
    room.address_space = memory_override() > 0 ? INFINITY : memory_rlimit_headroom();
    /* the one said: the estimate and the room that refuse it, or the resident ones */
    double shown = need.resident, have = room.resident;
    const char *limit = room.limit;
    if (need.address_space > room.address_space && need.resident <= room.resident)
        shown = need.address_space, have = room.address_space, limit = ADDRESS_SPACE_LIMIT;
    char of[64] = "", a[32], b[32], c[32];
    if (r->members > 1) snprintf(of, sizeof of, " for %d models", r->members);
    if (fits(r, sizeof(kgl_real), &room)) {
        if (say && shown >= MEMORY_SAY_FROM) {
            fprintf(stderr, "kgl %s: this run needs about %s%s (an estimate, a little above what it uses)", cmd,
                    amount(shown, a, sizeof a), of);
            if (isfinite(have))
                fprintf(stderr, " of the %s available%s%s", amount(have, b, sizeof b), limit ? " under " : "",
                        limit ? limit : "");
            fputc('\n', stderr);
        }
        return true;
    }
    char who[160];
    if (limit) snprintf(who, sizeof who, "this process has %s available under %s", amount(have, b, sizeof b), limit);
    else snprintf(who, sizeof who, "this machine has %s available", amount(have, b, sizeof b));
    char parts[160];
    int k = snprintf(parts, sizeof parts, "parameters and optimiser state %s", amount(need.parameters, c, sizeof c));
    if (r->cfg.context == KGL_CONTEXT_FULL)
        snprintf(parts + k, sizeof parts - (size_t)k, ", attention %s for %d entities and %d heads",
                 amount(need.attention, a, sizeof a), r->cfg.n_entities, r->cfg.heads);
    char hint[1024] = "";
    const char *lead = "free memory or raise the limit";
    if (r->options && what_fits(r, &room, hint, sizeof hint) > 0) lead = "it fits with ";
    else if (r->options) lead = "nothing smaller in --dim, --batch or --ensemble fits: free memory or raise the limit";
    fprintf(stderr, "kgl %s: this run needs about %s%s (%s), %s; %s%s\n", cmd, amount(shown, a, sizeof a), of, parts,
            who, lead, hint);
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
