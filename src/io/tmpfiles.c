/* tmpfiles.c — temporary files that must not outlive kgl: the ones being
 * written are registered so that a signal handler can remove them, and the
 * ones a killed process left behind are removed at the next save. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kgl/io.h"

/* kgl train writes a log per member it trains at the same time (at most
   KGL_MAX_ENSEMBLE, 64) while another file may be saved */
#define SLOTS 72
#define PATH_CAP 4096

static char paths[SLOTS][PATH_CAP];
static volatile sig_atomic_t used[SLOTS];
/* members train on threads of their own: two must not claim one slot. The
   signal handler takes no lock; it reads `used`, set after the path. */
static pthread_mutex_t registering = PTHREAD_MUTEX_INITIALIZER;

int kgl_tmp_register(const char *path)
{
    size_t len = strlen(path);
    if (len >= PATH_CAP) return -1;
    int slot = -1;
    pthread_mutex_lock(&registering);
    for (int i = 0; i < SLOTS && slot < 0; i++)
        if (!used[i]) {
            memcpy(paths[i], path, len + 1);
            used[i] = 1;
            slot = i;
        }
    pthread_mutex_unlock(&registering);
    return slot;
}

void kgl_tmp_unregister(int slot)
{
    if (slot >= 0 && slot < SLOTS) used[slot] = 0;
}

void kgl_tmp_remove_all(void)
{
    for (int i = 0; i < SLOTS; i++)
        if (used[i]) {
            unlink(paths[i]); /* async-signal-safe */
            used[i] = 0;
        }
}

/* "<base>.<pid>.<k>.tmp" → pid, or 0 when `name` is not of that form. */
static long tmp_pid(const char *name, const char *base, size_t base_len)
{
    if (strncmp(name, base, base_len) != 0 || name[base_len] != '.') return 0;
    const char *p = name + base_len + 1;
    char *end;
    if (*p < '0' || *p > '9') return 0;
    long pid = strtol(p, &end, 10);
    if (*end != '.' || end[1] < '0' || end[1] > '9') return 0;
    strtol(end + 1, &end, 10);
    return strcmp(end, ".tmp") == 0 ? pid : 0;
}

int kgl_tmp_remove_stale(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dir_len = slash ? (size_t)(slash - path) : 0, base_len = strlen(base);
    if (base_len == 0 || dir_len + base_len + 64 >= PATH_CAP) return 0;
    char dir[PATH_CAP], full[PATH_CAP];
    if (slash) {
        memcpy(dir, path, dir_len ? dir_len : 1);
        dir[dir_len ? dir_len : 1] = 0;
    } else {
        strcpy(dir, ".");
    }
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = tmp_pid(e->d_name, base, base_len);
        if (pid <= 0 || pid == (long)getpid()) continue;
        /* only a process that is gone: never another live process's file */
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        int k = snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        if (k > 0 && (size_t)k < sizeof full && unlink(full) == 0) removed++;
    }
    closedir(d);
    return removed;
}
