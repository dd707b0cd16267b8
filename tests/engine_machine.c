/* engine_machine.c — what this process may use of the machine's memory
 * (src/engine/machine.c): the memory cgroup's limit less its usage, read
 * from a fake tree (v2 and v1, a parent's limit binding its children), and
 * the address-space limit (ulimit -v) counted in what is available. */
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "test.h"

/* AddressSanitizer reserves terabytes of address space at start, so it
   cannot run under a small RLIMIT_AS (make sanitize): the rlimit test skips
   under it (UNDER_ASAN, test.h). */

/* Writes `text` to root/rel, creating its folders. */
static bool put(const char *root, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        bool ok = mkdir(path, 0755) == 0 || errno == EEXIST;
        *s = '/';
        if (!ok) return false;
    }
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fputs(text, f);
    return fclose(f) == 0;
}

static const char *fake_root(test_ctx *T, const char *name)
{
    static char root[512];
    snprintf(root, sizeof root, "%s/%s", T->tmp, name);
    mkdir(root, 0755);
    return root;
}

TEST(memory_cgroup_limit_read_from_fake_tree)
{
    /* v2: the process's cgroup (less the page cache it may drop) and its
       ancestors; "max" is no limit, the root has no memory.max */
    const char *r = fake_root(T, "v2");
    CHECK(put(r, "proc/self/cgroup", "0::/user.slice/kgl.scope\n"));
    CHECK(put(r, "sys/fs/cgroup/user.slice/kgl.scope/memory.max", "2000000000\n"));
    CHECK(put(r, "sys/fs/cgroup/user.slice/kgl.scope/memory.current", "500000000\n"));
    CHECK(put(r, "sys/fs/cgroup/user.slice/kgl.scope/memory.stat",
              "anon 300000000\nactive_file 7\ninactive_file 100000000\n"));
    CHECK(put(r, "sys/fs/cgroup/user.slice/memory.max", "max\n"));
    CHECK(put(r, "sys/fs/cgroup/user.slice/memory.current", "900000000\n"));
    CHECK(put(r, "sys/fs/cgroup/memory.current", "5000000000\n"));
    CHECK(kgl_memory_cgroup_headroom(r) == 1600000000.0); /* 2e9 − (5e8 − 1e8), exact in doubles */
    /* a parent's tighter limit binds its children */
    CHECK(put(r, "sys/fs/cgroup/user.slice/memory.max", "1000000000\n"));
    CHECK(kgl_memory_cgroup_headroom(r) == 100000000.0);
    /* usage above the limit leaves nothing */
    CHECK(put(r, "sys/fs/cgroup/user.slice/memory.current", "1200000000\n"));
    CHECK(kgl_memory_cgroup_headroom(r) == 0);

    /* v1, as in a container: the kernel names /docker/abc, but the
       container's own cgroup is mounted as the hierarchy's root */
    r = fake_root(T, "v1");
    CHECK(put(r, "proc/self/cgroup", "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n"));
    CHECK(put(r, "sys/fs/cgroup/memory/memory.limit_in_bytes", "3000000000\n"));
    CHECK(put(r, "sys/fs/cgroup/memory/memory.usage_in_bytes", "1000000000\n"));
    CHECK(put(r, "sys/fs/cgroup/memory/memory.stat", "cache 5\ninactive_file 9\ntotal_inactive_file 250000000\n"));
    CHECK(kgl_memory_cgroup_headroom(r) == 2250000000.0);
    /* v1's "no limit" is a huge number, not a word */
    CHECK(put(r, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n"));
    CHECK(kgl_memory_cgroup_headroom(r) > 9e18);

    /* no limit anywhere, and no cgroup file at all */
    r = fake_root(T, "none");
    CHECK(put(r, "proc/self/cgroup", "0::/a\n"));
    CHECK(put(r, "sys/fs/cgroup/a/memory.max", "max\n"));
    CHECK(put(r, "sys/fs/cgroup/a/memory.current", "1\n"));
    CHECK(isinf(kgl_memory_cgroup_headroom(r)));
    CHECK(isinf(kgl_memory_cgroup_headroom(fake_root(T, "empty"))));
}

TEST(memory_rlimit_counts_in_what_is_available)
{
    if (UNDER_ASAN) {
        test_skip(T, "AddressSanitizer cannot run under a small RLIMIT_AS");
        return;
    }
    unsetenv("KGL_MEMORY_MB");
    struct rlimit old, r;
    CHECK(getrlimit(RLIMIT_AS, &old) == 0);
    double mapped = kgl_proc_bytes("/proc/self/status", "VmSize");
    CHECK(mapped > 0);
    r = old;
    r.rlim_cur = (rlim_t)mapped + 1000000000;
    if (old.rlim_max != RLIM_INFINITY && r.rlim_cur > old.rlim_max) {
        test_skip(T, "the hard RLIMIT_AS is too small");
        return;
    }
    CHECK(setrlimit(RLIMIT_AS, &r) == 0);
    const char *limit = NULL;
    double headroom = kgl_memory_rlimit_headroom(), have = kgl_memory_available(&limit);
    CHECK(setrlimit(RLIMIT_AS, &old) == 0);
    /* 1 GB above what was mapped; reading /proc maps a page or two
       between the two readings of VmSize: 1 MB of tolerance */
    CHECK_NEAR(headroom, 1e9, 1e6);
    CHECK(have <= headroom);
    if (have == headroom) CHECK(limit && strstr(limit, "ulimit -v"));
}

/* kgl_proc_bytes reads "KEY: N kB" lines: the whole key only (a prefix of
   another key is not it), kB to bytes, -1 for a missing key or file. */
TEST(proc_bytes_reads_a_kb_line)
{
    const char text[] = "MemTotal:       4096 kB\nMemAvailable:   1024 kB\nHugePages_Total:   0\n";
    const char *path = write_tmp(T, 0, "meminfo", text, sizeof text - 1);
    CHECK(kgl_proc_bytes(path, "MemAvailable") == 1024.0 * 1024.0);
    CHECK(kgl_proc_bytes(path, "MemTotal") == 4096.0 * 1024.0);
    CHECK(kgl_proc_bytes(path, "Mem") == -1);             /* a prefix of two keys */
    CHECK(kgl_proc_bytes(path, "HugePages_Total") == -1); /* no kB */
    CHECK(kgl_proc_bytes(path, "SwapFree") == -1);
    CHECK(kgl_proc_bytes("/nonexistent/meminfo", "MemAvailable") == -1);
}
