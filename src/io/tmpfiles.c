/* tmpfiles.c — every file kgl writes, written whole or not at all: a
 * temporary beside the output, created exclusively under a name nobody can
 * guess, then renamed over it. The temporaries being written are registered
 * so that a signal handler can remove them, and the ones a killed process
 * left behind are removed at the next write beside them. An output that is
 * a character device or a pipe (/dev/null, a FIFO) is written directly: a
 * rename would put a regular file in its place. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kgl/io.h"
#include "engine/internal.h"
#include "io/internal.h"

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

/* "<base>.<pid>.<hex>.tmp" → pid, or 0 when `name` is not of that form
   (older kgl wrote a decimal counter where the hex digits are: also hex). */
static long tmp_pid(const char *name, const char *base, size_t base_len)
{
    if (strncmp(name, base, base_len) != 0 || name[base_len] != '.') return 0;
    const char *p = name + base_len + 1;
    char *end;
    if (*p < '0' || *p > '9') return 0;
    long pid = strtol(p, &end, 10);
    if (*end != '.') return 0;
    size_t hex = strspn(end + 1, "0123456789abcdef");
    return hex > 0 && strcmp(end + 1 + hex, ".tmp") == 0 ? pid : 0;
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

uint64_t kgl_random64(void)
{
    uint64_t x = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    bool got = fd >= 0 && read(fd, &x, sizeof x) == (ssize_t)sizeof x;
    if (fd >= 0) close(fd);
    if (got) return x;
    /* no kernel source (a chroot without /dev): the clock, the process and a
       counter, mixed (splitmix64's finaliser); exclusive creation still
       never opens another's file */
    static _Atomic uint64_t calls;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 48) ^ (calls++ * 0x9e3779b97f4a7c15ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Where the temporaries' random digits come from: kgl_random64, or a test's
   (tests/io_tmpfiles.c takes the first name on purpose). */
uint64_t (*kgl_tmp_name_source)(void) = kgl_random64;

/* Closes nothing; forgets the temporary and frees the names. */
static void outfile_forget(kgl_outfile *o)
{
    kgl_tmp_unregister(o->slot);
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    o->slot = -1;
}

/* A character device, a FIFO or a socket at `path`: opened for writing as
   it is (no O_CREAT, no O_TRUNC: nothing is created or replaced; a FIFO
   waits here for its reader). What was opened is checked on the descriptor
   itself, so a regular file swapped in since the caller's stat is never
   written through: then, or when the name has gone, 0 (use a temporary).
   1 when opened, -1 after writing the reason into err. */
static int open_direct(kgl_outfile *o, const char *path, char *err, size_t err_cap)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 0;
    if (fd < 0) return kgl_path_error(err, err_cap, path, "cannot open it for writing: %s", strerror(errno)), -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISREG(st.st_mode)) {
        close(fd);
        return 0;
    }
    if (!(o->f = fdopen(fd, "wb"))) {
        int e = errno;
        close(fd);
        return kgl_path_error(err, err_cap, path, "cannot write: %s", strerror(e)), -1;
    }
    return 1;
}

bool kgl_outfile_open(kgl_outfile *o, const char *path, char *err, size_t err_cap)
{
    memset(o, 0, sizeof *o);
    o->slot = -1;
    size_t len = strlen(path), cap = len + 64;
    o->path = memcpy(kgl_xmalloc(len + 1), path, len + 1);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        int direct = -1;
        if (S_ISDIR(st.st_mode))
            kgl_path_error(err, err_cap, path, "is a folder, not a file: give a file's path");
        else if (S_ISBLK(st.st_mode)) /* a disk: a checkpoint written over it is never what was meant */
            kgl_path_error(err, err_cap, path, "is a block device (a disk), not a file: give a file's path");
        else
            direct = open_direct(o, path, err, err_cap);
        if (direct < 0) outfile_forget(o);
        if (direct != 0) return direct > 0;
        /* 0: a regular file by now, or gone: a temporary, as for any file */
    }
    o->tmp = kgl_xmalloc(cap);
    kgl_tmp_remove_stale(path); /* what a killed writer left beside it */
    /* O_EXCL: a file or a link already at the name (even one pointing
       nowhere) is refused, never opened; O_NOFOLLOW says so twice. A name
       taken by chance gets another draw. O_RDWR: what was written can be
       read back through the descriptor (kgl benchmark reads its runs'
       progress from their .err temporaries). */
    int fd = -1;
    for (int k = 0; k < 16 && fd < 0; k++) {
        snprintf(o->tmp, cap, "%s.%ld.%016" PRIx64 ".tmp", path, (long)getpid(), kgl_tmp_name_source());
        fd = open(o->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        kgl_path_error(err, err_cap, path, "cannot create a temporary file beside it: %s", strerror(errno));
        outfile_forget(o);
        return false;
    }
    o->slot = kgl_tmp_register(o->tmp); /* removed if a signal stops the program now */
    if (!(o->f = fdopen(fd, "wb"))) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        kgl_path_error(err, err_cap, path, "cannot write: %s", strerror(e));
        outfile_forget(o);
        return false;
    }
    return true;
}

/* Best effort: make the rename itself durable by syncing the folder. */
static void sync_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 1;
    if (slash && n == 0) n = 1; /* "/x" lives in "/" */
    char *dir = kgl_xmalloc(n + 1);
    memcpy(dir, slash ? path : ".", n);
    dir[n] = 0;
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd); /* some file systems refuse to sync a folder; the data is already synced */
        close(fd);
    }
    free(dir);
}

bool kgl_outfile_finish(kgl_outfile *o, char *err, size_t err_cap)
{
    if (!o->f) return true;
    const char *failed = NULL;
    int e = 0;
    if (fflush(o->f) != 0 || ferror(o->f)) failed = "cannot write", e = errno;
    /* a pipe or a device cannot be synced (fsync fails on a pipe); what it
       was given is gone to its reader */
    else if (o->tmp && fsync(fileno(o->f)) != 0) failed = "cannot sync to disk", e = errno;
    if (fclose(o->f) != 0 && !failed) failed = "cannot write", e = errno;
    o->f = NULL;
    if (!failed) return true;
    if (o->tmp) unlink(o->tmp);
    kgl_path_error(err, err_cap, o->path, "%s: %s", failed, strerror(e ? e : EIO));
    outfile_forget(o);
    return false;
}

bool kgl_outfile_commit(kgl_outfile *o, char *err, size_t err_cap)
{
    if (!kgl_outfile_finish(o, err, err_cap)) return false;
    bool ok = !o->tmp || rename(o->tmp, o->path) == 0;
    if (!ok) {
        int e = errno;
        unlink(o->tmp);
        kgl_path_error(err, err_cap, o->path, "cannot replace it with the new file: %s", strerror(e));
    } else if (o->tmp) {
        sync_folder(o->path);
    }
    outfile_forget(o);
    return ok;
}

/* "a, b" (the paths of o[from .. to)) into buf at *used (cap bytes). */
static void list_paths(char *buf, size_t cap, size_t *used, const kgl_outfile *o, int from, int to)
{
    for (int k = from; k < to; k++)
        if (*used < cap) *used += (size_t)snprintf(buf + *used, cap - *used, "%s%s", k > from ? ", " : "", o[k].path);
}

bool kgl_outfile_commit_set(kgl_outfile *o, int n, char *err, size_t err_cap)
{
    /* every file whole on disk before the first rename: a full disk leaves
       every old file as it was */
    for (int k = 0; k < n; k++)
        if (!kgl_outfile_finish(&o[k], err, err_cap)) {
            for (int j = 0; j < n; j++) kgl_outfile_discard(&o[j]);
            return false;
        }
    int k = 0;
    while (k < n && (!o[k].tmp || rename(o[k].tmp, o[k].path) == 0)) k++;
    if (k < n) { /* the set is mixed now: say which files are which */
        int e = errno;
        char msg[4096];
        size_t used = 0;
        used += (size_t)snprintf(msg, sizeof msg, "cannot replace it with the new file: %s; ", strerror(e));
        if (k > 0) {
            used += (size_t)snprintf(msg + used, sizeof msg - used, "already replaced: ");
            list_paths(msg, sizeof msg, &used, o, 0, k);
            if (used < sizeof msg) used += (size_t)snprintf(msg + used, sizeof msg - used, "; ");
        }
        if (used < sizeof msg) used += (size_t)snprintf(msg + used, sizeof msg - used, "not replaced (as they were): ");
        list_paths(msg, sizeof msg, &used, o, k, n);
        kgl_path_error(err, err_cap, o[k].path, "%s", msg);
        for (int j = 0; j < n; j++) {
            if (j >= k && o[j].tmp) unlink(o[j].tmp);
            outfile_forget(&o[j]);
        }
        return false;
    }
    for (int j = 0; j < n; j++) {
        if (o[j].tmp) sync_folder(o[j].path);
        outfile_forget(&o[j]);
    }
    return true;
}

void kgl_outfile_discard(kgl_outfile *o)
{
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    outfile_forget(o);
}
