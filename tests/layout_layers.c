/* layout_layers.c — the layering is enforced, not hoped for.
 *
 * The library's layers, lowest first (data/report/code.md, "How the code is organised"):
 *
 *   0 engine    src/engine/,  include/kgl/engine.h
 *   1 io        src/io/,      include/kgl/io.h
 *   2 model     src/model/,   include/kgl/model.h
 *   3 studies   src/studies/, include/kgl/studies.h
 *
 * A file may include headers of its own layer and of the layers below it,
 * never above. The checker reads every `#include "..."` of every .c and .h
 * under src/ and include/kgl/, maps the header to its layer (kgl/<layer>.h,
 * <layer>/<file>.h, or a bare name: the including file's own folder) and
 * reports each include that points up, and every folder of src/ that is not
 * a known layer (a new folder must be given a place in this order first).
 * include/kgl.h, which includes everything, is for users and is not a layer:
 * no library file may include it. */
#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>

#include "test.h"

static const char *const layer_names[] = {"engine", "io", "model", "studies"};
#define N_LAYERS 4

static int layer_of_name(const char *name, size_t len)
{
    for (int k = 0; k < N_LAYERS; k++)
        if (strlen(layer_names[k]) == len && strncmp(layer_names[k], name, len) == 0) return k;
    return -1;
}

/* The layer of an included header, from the including file's layer `own`;
 * N_LAYERS for kgl.h (above every layer); -2 for a header of no layer. */
static int layer_of_header(const char *h, int own)
{
    if (strcmp(h, "kgl.h") == 0) return N_LAYERS;
    if (strncmp(h, "kgl/", 4) == 0) {
        const char *base = h + 4, *dot = strrchr(base, '.');
        return dot ? layer_of_name(base, (size_t)(dot - base)) : -2;
    }
    const char *slash = strchr(h, '/');
    if (!slash) return own; /* beside the including file */
    int k = layer_of_name(h, (size_t)(slash - h));
    return k >= 0 ? k : -2;
}

typedef struct {
    char *out;
    size_t cap, len;
    int violations;
} report;

static void say(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (r->len < r->cap) {
        int n = vsnprintf(r->out + r->len, r->cap - r->len, fmt, ap);
        if (n > 0) r->len += (size_t)n < r->cap - r->len ? (size_t)n : r->cap - r->len - 1;
    }
    va_end(ap);
    r->violations++;
}

/* Checks one file of layer `own`: every quoted include. */
static void check_file(const char *path, int own, report *r)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        say(r, "%s: cannot be read\n", path);
        return;
    }
    char line[1024];
    for (int lineno = 1; fgets(line, sizeof line, f); lineno++) {
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p++ != '#') continue;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, "include", 7) != 0) continue;
        p += 7;
        while (*p == ' ' || *p == '\t') p++;
        if (*p != '"') continue; /* <system> headers belong to no layer */
        const char *end = strchr(p + 1, '"');
        if (!end) continue;
        char h[256];
        snprintf(h, sizeof h, "%.*s", (int)(end - p - 1), p + 1);
        int k = layer_of_header(h, own);
        if (k == -2) say(r, "%s:%d: includes \"%s\", which belongs to no layer\n", path, lineno, h);
        else if (k == N_LAYERS) say(r, "%s:%d: includes kgl.h (every layer); include the layer's own header\n", path, lineno);
        else if (k > own)
            say(r, "%s:%d: %s includes \"%s\" of the layer above (%s)\n", path, lineno, layer_names[own], h,
                layer_names[k]);
    }
    fclose(f);
}

static bool is_source(const char *name)
{
    size_t n = strlen(name);
    return n > 2 && name[n - 2] == '.' && (name[n - 1] == 'c' || name[n - 1] == 'h');
}

/* Walks root/src/<layer>/ and root/include/kgl/; returns the violations. */
static int check_layers(const char *root, char *out, size_t cap)
{
    report r = {out, cap, 0, 0};
    out[0] = 0;
    char dir[512], path[1024];
    snprintf(dir, sizeof dir, "%s/src", root);
    DIR *d = opendir(dir);
    if (!d) {
        say(&r, "%s: cannot be opened\n", dir);
        return r.violations;
    }
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        DIR *sub = opendir(path);
        if (!sub) {
            if (is_source(e->d_name)) say(&r, "%s: a source file outside every layer's folder\n", path);
            continue;
        }
        int k = layer_of_name(e->d_name, strlen(e->d_name));
        if (k < 0) say(&r, "%s: a folder that is not a layer (engine, io, model, studies)\n", path);
        for (struct dirent *s; k >= 0 && (s = readdir(sub));) {
            if (!is_source(s->d_name)) continue;
            char file[1536];
            snprintf(file, sizeof file, "%s/%s", path, s->d_name);
            check_file(file, k, &r);
            files++;
        }
        closedir(sub);
    }
    closedir(d);
    for (int k = 0; k < N_LAYERS; k++) {
        snprintf(path, sizeof path, "%s/include/kgl/%s.h", root, layer_names[k]);
        check_file(path, k, &r);
        files++;
    }
    if (files <= N_LAYERS) say(&r, "%s: no library sources found\n", root);
    return r.violations;
}

TEST(layers_no_file_includes_a_layer_above_its_own)
{
    static char out[1 << 14];
    int v = check_layers(".", out, sizeof out);
    if (v) printf("%s", out);
    CHECK(v == 0);
}

/* The checker itself can fail: a small tree with one upward include, an
 * include of kgl.h, a folder that is no layer and a stray source file. */
TEST(layers_checker_finds_upward_includes)
{
    static char out[1 << 14];
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "set -e; r=%s/layers; rm -rf $r; mkdir -p $r/src/engine $r/src/io $r/src/model $r/src/studies "
             "$r/include/kgl;"
             "for l in engine io model studies; do printf '#include <stdio.h>\\n' > $r/include/kgl/$l.h; done;"
             "printf '#include \"kgl/engine.h\"\\n#include \"internal.h\"\\n' > $r/src/engine/ok.c;"
             "printf '#include \"kgl/io.h\"\\n#include \"engine/internal.h\"\\n' > $r/src/io/ok.c;"
             "printf '#include \"kgl/studies.h\"\\n#include \"model/x.h\"\\n' > $r/src/studies/ok.c",
             T->tmp);
    CHECK(run_sh(T, cmd, NULL, 0, NULL, 0) == 0);
    char root[600];
    snprintf(root, sizeof root, "%s/layers", T->tmp);
    CHECK(check_layers(root, out, sizeof out) == 0);

    snprintf(cmd, sizeof cmd,
             "set -e; r=%s/layers;"
             "printf '\\n  #  include \"kgl/model.h\"\\n' > $r/src/engine/up.c;"
             "printf '#include \"kgl.h\"\\n' > $r/src/io/all.c;"
             "printf '#include \"studies/demo.h\"\\n' > $r/include/kgl/model.h;"
             "mkdir $r/src/misc; printf 'int x;\\n' > $r/src/stray.c",
             T->tmp);
    CHECK(run_sh(T, cmd, NULL, 0, NULL, 0) == 0);
    int v = check_layers(root, out, sizeof out);
    CHECK(v == 5);
    CHECK(strstr(out, "src/engine/up.c:2: engine includes \"kgl/model.h\" of the layer above (model)") != NULL);
    CHECK(strstr(out, "src/io/all.c:1: includes kgl.h") != NULL);
    CHECK(strstr(out, "include/kgl/model.h:1: model includes \"studies/demo.h\"") != NULL);
    CHECK(strstr(out, "src/misc: a folder that is not a layer") != NULL);
    CHECK(strstr(out, "src/stray.c: a source file outside") != NULL);
}

/* Each public header compiles on its own (and twice: include guards), with
 * the compiler that built the tests (KGL_CC, set by the Makefile). */
TEST(each_public_header_compiles_alone)
{
    const char *cc = getenv("KGL_CC");
    if (!cc || !*cc) cc = "cc";
    static const char *const headers[] = {"kgl/engine.h", "kgl/io.h", "kgl/model.h", "kgl/studies.h", "kgl.h"};
    for (size_t k = 0; k < sizeof headers / sizeof headers[0]; k++) {
        char cmd[1024];
        static char err[1 << 14];
        snprintf(cmd, sizeof cmd,
                 "printf '#include \"%s\"\\n#include \"%s\"\\nint kgl_header_probe;\\n' | "
                 "%s -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -Iinclude -x c -",
                 headers[k], headers[k], cc);
        int rc = run_sh(T, cmd, NULL, 0, err, sizeof err);
        if (rc != 0) printf("    %s: %s\n", headers[k], err);
        CHECK(rc == 0);
    }
}
