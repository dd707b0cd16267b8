/* machine.c — what this process may use of the machine's memory, read
 * before a run allocates (kgl/engine.h, section "machine"): what the
 * machine has available (MemAvailable), what the address-space limit
 * leaves (RLIMIT_AS less what is mapped), what the limits of the process's
 * memory cgroups leave, or what KGL_MEMORY_MB says. Linux's /proc and
 * /sys/fs/cgroup; elsewhere, what sysconf knows. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kgl/engine.h"

double kgl_proc_bytes(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    size_t len = strlen(key);
    double kb = -1, value;
    int end; /* set only when " kB" follows the number */
    while (fgets(line, sizeof line, f)) {
        end = 0;
        if (strncmp(line, key, len) == 0 && line[len] == ':' &&
            sscanf(line + len + 1, "%lf kB%n", &value, &end) == 1 && end > 0) {
            kb = value;
            break;
        }
    }
    fclose(f);
    return kb >= 0 ? kb * 1024.0 : -1;
}

double kgl_memory_rlimit_headroom(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return INFINITY;
    double mapped = kgl_proc_bytes("/proc/self/status", "VmSize");
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

double kgl_memory_cgroup_headroom(const char *root)
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

double kgl_memory_override(void)
{
    const char *env = getenv("KGL_MEMORY_MB");
    if (env && *env) {
        char *end;
        double mb = strtod(env, &end);
        if (end != env && !*end && mb > 0) return mb * 1048576.0;
    }
    return -1;
}

double kgl_memory_available(const char **limit)
{
    *limit = NULL;
    double set = kgl_memory_override();
    if (set > 0) return set;
    double have = kgl_proc_bytes("/proc/meminfo", "MemAvailable");
    if (have <= 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        have = pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
    }
    double as = kgl_memory_rlimit_headroom(), cg = kgl_memory_cgroup_headroom("");
    if (as < have) have = as, *limit = "its address-space limit (ulimit -v)";
    if (cg < have) have = cg, *limit = "its cgroup's memory limit";
    return have;
}
