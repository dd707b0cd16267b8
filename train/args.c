/* args.c — option parsing for the subcommands. */
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "kgl/engine.h"
#include "kgl/io.h"

void cli_init(cli_args *a, const char *cmd, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->argc = argc;
    a->argv = argv;
    a->i = 0;
}

bool cli_next(cli_args *a)
{
    static char name[128];
    if (++a->i >= a->argc) return false;
    a->at = a->i;
    const char *arg = a->argv[a->i];
    const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    if (eq && (size_t)(eq - arg) < sizeof name) {
        memcpy(name, arg, (size_t)(eq - arg));
        name[eq - arg] = 0;
        a->opt = name;
        a->inline_val = eq + 1;
    } else {
        a->opt = arg;
        a->inline_val = NULL;
    }
    return true;
}

bool cli_is(const cli_args *a, const char *name) { return strcmp(a->opt, name) == 0; }

int cli_usage_error(const cli_args *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kgl %s: ", a->cmd);
    if (a->file && a->at >= 1 && a->at <= a->file_words) fprintf(stderr, "%s:%d: ", a->file, a->file_line[a->at - 1]);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'kgl %s --help'.\n", a->cmd);
    va_end(ap);
    return EXIT_USAGE;
}

/* The distinct "--name" words of a help text, into names[0..cap) (pointers
   into store). */
static int options_in_help(const char *help, const char **names, int cap, char *store, size_t store_cap)
{
    int n = 0;
    size_t used = 0;
    for (const char *p = help; (p = strstr(p, "--")) && n < cap; p += 2) {
        if (p > help && p[-1] != ' ' && p[-1] != '[' && p[-1] != '(' && p[-1] != '\n') continue;
        size_t len = 2;
        while (p[len] == '-' || (p[len] >= 'a' && p[len] <= 'z') || (p[len] >= '0' && p[len] <= '9')) len++;
        if (len <= 2 || used + len + 1 > store_cap) continue;
        memcpy(store + used, p, len);
        store[used + len] = 0;
        bool seen = false;
        for (int k = 0; k < n && !seen; k++) seen = strcmp(names[k], store + used) == 0;
        if (!seen) names[n++] = store + used, used += len + 1;
    }
    return n;
}

int cli_unknown(const cli_args *a)
{
    if (a->opt[0] == '-' && a->help) {
        const char *names[256];
        char store[8192], hint[600];
        int n = options_in_help(a->help, names, 256, store, sizeof store);
        return cli_usage_error(a, "unknown option '%s'%s", a->opt, cli_did_you_mean(a->opt, names, n, hint, sizeof hint));
    }
    if (a->opt[0] == '-') return cli_usage_error(a, "unknown option '%s'", a->opt);
    return cli_usage_error(a, "unexpected argument '%s'", a->opt);
}

bool cli_flag(cli_args *a)
{
    if (a->inline_val) {
        cli_usage_error(a, "%s takes no value", a->opt);
        return false;
    }
    return true;
}

const char *cli_value(cli_args *a)
{
    if (a->inline_val) return a->inline_val;
    if (a->i + 1 >= a->argc) {
        cli_usage_error(a, "%s needs a value", a->opt);
        return NULL;
    }
    return a->argv[++a->i];
}

bool cli_int(cli_args *a, long lo, long hi, long *out)
{
    const char *opt = a->opt, *v = cli_value(a);
    if (!v) return false;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        cli_usage_error(a, "%s expects a whole number from %ld to %ld, got '%s'", opt, lo, hi, v);
        return false;
    }
    *out = x;
    return true;
}

bool cli_double(cli_args *a, double lo, double hi, double *out)
{
    const char *opt = a->opt, *v = cli_value(a);
    if (!v) return false;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < lo || x > hi) {
        cli_usage_error(a, "%s expects a number from %g to %g, got '%s'", opt, lo, hi, v);
        return false;
    }
    *out = x;
    return true;
}

bool cli_u64(cli_args *a, uint64_t *out)
{
    const char *opt = a->opt, *v = cli_value(a);
    if (!v) return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] < '0' || v[0] > '9') { /* digits only, as metadata 'seed' */
        cli_usage_error(a, "%s expects a whole number >= 0, got '%s'", opt, v);
        return false;
    }
    *out = (uint64_t)x;
    return true;
}

const char *cli_word_list(const char *const *words, int n, char *buf, size_t cap)
{
    size_t used = 0;
    if (cap) buf[0] = 0;
    for (int k = 0; k < n && used < cap; k++) {
        const char *sep = k == 0 ? "" : k == n - 1 ? " or " : ", ";
        int w = snprintf(buf + used, cap - used, "%s%s", sep, words[k]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

const char *cli_did_you_mean(const char *got, const char *const *words, int n, char *buf, size_t cap)
{
    char near[512];
    int k = kgl_near_matches(got, words, n, 3, near, sizeof near);
    if (k == 0) return "";
    snprintf(buf, cap, "; did you mean %s%s?", k > 1 ? "one of " : "", near);
    return buf;
}

bool cli_word(cli_args *a, const char *const *words, int n, int *index)
{
    const char *opt = a->opt, *v = cli_value(a);
    if (!v) return false;
    for (int k = 0; k < n; k++)
        if (strcmp(v, words[k]) == 0) {
            *index = k;
            return true;
        }
    char list[1024], hint[600];
    cli_usage_error(a, "%s expects %s, got '%s'%s", opt, cli_word_list(words, n, list, sizeof list), v,
                    cli_did_you_mean(v, words, n, hint, sizeof hint));
    return false;
}

int cli_word_or_number(cli_args *a, const char *const *words, int n, double lo, double hi, const char *number_is,
                       double *number)
{
    const char *opt = a->opt, *v = cli_value(a);
    if (!v) return -2;
    for (int k = 0; k < n; k++)
        if (strcmp(v, words[k]) == 0) return k;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (!errno && end != v && !*end && isfinite(x) && x >= lo && x <= hi) {
        *number = x;
        return -1;
    }
    char list[1024], hint[600], range[128];
    if (!number_is) snprintf(range, sizeof range, "a number from %g to %g", lo, hi);
    const char *choices[17];
    int k = 0;
    for (; k < n && k < 16; k++) choices[k] = words[k];
    choices[k++] = number_is ? number_is : range;
    cli_usage_error(a, "%s expects %s, got '%s'%s", opt, cli_word_list(choices, k, list, sizeof list), v,
                    cli_did_you_mean(v, words, n, hint, sizeof hint));
    return -2;
}

/* The folder part of a path ("." for none) into buf. */
static const char *folder_of(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return ".";
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= cap) n = cap - 1;
    memcpy(buf, path, n);
    buf[n] = 0;
    return buf;
}

static bool writable_folder(const char *cmd, const char *what, const char *path, const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "kgl %s: %s %s: the folder %s does not exist\n", cmd, what, path, dir);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "kgl %s: %s %s: %s is not a folder\n", cmd, what, path, dir);
        return false;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "kgl %s: %s %s: the folder %s is not writable: %s\n", cmd, what, path, dir, strerror(errno));
        return false;
    }
    return true;
}

bool cli_output_ok(const char *cmd, const char *what, const char *path)
{
    struct stat st;
    char buf[4096];
    if (!*path) {
        fprintf(stderr, "kgl %s: %s: the path is empty\n", cmd, what);
        return false;
    }
    bool exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "kgl %s: %s %s: is a folder, not a file: give a file's path\n", cmd, what, path);
        return false;
    }
    if (exists && S_ISBLK(st.st_mode)) {
        fprintf(stderr, "kgl %s: %s %s: is a block device (a disk), not a file: give a file's path\n", cmd, what, path);
        return false;
    }
    /* a device or a pipe is written as it is (kgl_outfile), not replaced:
       its own permission counts, not its folder's */
    if (exists && !S_ISREG(st.st_mode)) {
        if (access(path, W_OK) == 0) return true;
        fprintf(stderr, "kgl %s: %s %s: cannot write to it: %s\n", cmd, what, path, strerror(errno));
        return false;
    }
    return writable_folder(cmd, what, path, folder_of(path, buf, sizeof buf));
}

bool cli_output_dir_ok(const char *cmd, const char *what, const char *dir)
{
    struct stat st;
    char buf[4096];
    if (!*dir) {
        fprintf(stderr, "kgl %s: %s: the path is empty\n", cmd, what);
        return false;
    }
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            fprintf(stderr, "kgl %s: %s %s: is a file, not a folder\n", cmd, what, dir);
            return false;
        }
        return writable_folder(cmd, what, dir, dir);
    }
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--; /* "out/" is out */
    char trimmed[4096];
    snprintf(trimmed, sizeof trimmed, "%.*s", (int)n, dir);
    return writable_folder(cmd, what, dir, folder_of(trimmed, buf, sizeof buf));
}

static bool same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Whether a and b are one file, to refuse it; two outputs that are one
   character device are not counted: a device keeps nothing (/dev/null, a
   terminal), so writing it twice destroys nothing. A FIFO given twice is
   (its reader would get two files mixed in one stream). */
static bool same_file(const char *a, const char *b, bool both_outputs)
{
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb && both_outputs && S_ISCHR(sa.st_mode)) return false;
    if (ea || eb) return ea && eb && same_inode(&sa, &sb);
    /* neither is written yet: one name in one folder ("out/x" and "./out/x") */
    char fa[4096], fb[4096];
    if (stat(folder_of(a, fa, sizeof fa), &sa) != 0 || stat(folder_of(b, fb, sizeof fb), &sb) != 0)
        return strcmp(a, b) == 0;
    return same_inode(&sa, &sb) && strcmp(base_name(a), base_name(b)) == 0;
}

bool cli_files_distinct(const char *cmd, const cli_file *files, int n)
{
    for (int j = 0; j < n; j++) {
        const cli_file *o = &files[j];
        if (!o->output || !o->path) continue;
        for (int i = 0; i < n; i++) { /* every input, and the outputs before this one */
            const cli_file *x = &files[i];
            if (i == j || !x->path || (x->output && i > j)) continue;
            if (!x->output && o->may_replace && strcmp(o->may_replace, x->what) == 0) continue;
            if (!same_file(o->path, x->path, x->output)) continue;
            fprintf(stderr, "kgl %s: %s %s is the same file as %s %s%s; give another path\n", cmd, o->what, o->path,
                    x->what, x->path, x->output ? "" : ", which writing it would destroy");
            return false;
        }
    }
    return true;
}

static void on_signal(int sig)
{
    (void)sig;
    kgl_tmp_remove_all();
    _exit(EXIT_INTERRUPTED);
}

void cli_on_stop_signals(void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void cli_default_signals(void)
{
    cli_on_stop_signals(on_signal);
    signal(SIGPIPE, SIG_IGN);
}

bool cli_program_beside(const char *name, char *path, size_t cap)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return false;
    self[len] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash) return false;
    slash[1] = '\0';
    int w = snprintf(path, cap, "%s%s", self, name);
    return w > 0 && (size_t)w < cap && access(path, X_OK) == 0;
}

char *cli_capture(char *const *argv, int *status)
{
    int fd[2];
    if (pipe(fd) != 0) return NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fd[0]), close(fd[1]);
        errno = e;
        return NULL;
    }
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]), close(fd[1]);
        signal(SIGPIPE, SIG_DFL); /* as a shell would start it */
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0, cap = 1 << 16;
    char *out = kgl_xmalloc(cap);
    for (;;) {
        if (cap - len < 4096) out = kgl_xrealloc_for(out, cap *= 2, "a child program's output");
        ssize_t got = read(fd[0], out + len, cap - len - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        len += (size_t)got;
    }
    close(fd[0]);
    out[len] = '\0';
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

int cli_exec_precision(const char *cmd, const char *precision, int n_args, char **args, const char *const *extra,
                       const char *why, const char *hint)
{
    char path[4096];
    const char *program = strcmp(precision, "f32") == 0 ? "kgl-f32" : "kgl";
    if (!cli_program_beside(program, path, sizeof path)) {
        fprintf(stderr, "kgl %s: %s runs %s, which is not beside this program (make builds both)%s\n", cmd, why,
                program, hint);
        return EXIT_USAGE;
    }
    char **argv = kgl_xcalloc((size_t)n_args + 4, sizeof *argv); /* path, args, extra, NULL */
    int k = 0;
    argv[k++] = path;
    for (int i = 0; i < n_args; i++) argv[k++] = args[i];
    for (int i = 0; extra && i < 2; i++) argv[k++] = (char *)extra[i];
    fflush(stdout);
    setenv(KGL_PRECISION_ASKED, precision, 1);
    execv(path, argv);
    fprintf(stderr, "kgl %s: cannot run %s: %s\n", cmd, path, strerror(errno));
    unsetenv(KGL_PRECISION_ASKED);
    free(argv);
    return EXIT_USAGE;
}

/* --splits S,...: which of train, valid, test (each word at most once;
   named[] is set, not cleared). */
bool cli_splits(cli_args *a, const char *list, bool *named)
{
    static const char *const words[] = {"train", "valid", "test"};
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        int s = 0;
        while (s < 3 && !(strlen(words[s]) == len && strncmp(p, words[s], len) == 0)) s++;
        if (s == 3) {
            cli_usage_error(a, "--splits: '%.*s' is not a split (train, valid, test)", (int)len, p);
            return false;
        }
        named[s] = true;
        if (!p[len]) return true;
        p += len + 1;
    }
}
