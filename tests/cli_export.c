/* cli_export.c — `kgl export`: the TSV files read back to the checkpoint's
 * own tensors bit for bit (E and R read with kgl_st_read) and to the states
 * C the library computes; names and headers as documented; the projector
 * files agree; a folder that cannot be written is exit 3 and leaves nothing. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "test.h"

static char out[1 << 16], err[1 << 14];

/* Parses a TSV file of `rows` rows of `cols` numbers, each after a name
   when names_out is given, and after a header "name d0 ... d{cols-1}" when
   header is true. Values go to x, names (copied) to names_out. Returns
   false (after a failed check saying where) when the layout differs. */
static bool read_tsv(test_ctx *T, const char *path, bool header, int rows, int cols, double *x, char **names_out)
{
    char *text = test_slurp(path, NULL);
    if (!CHECK(text != NULL)) return false;
    char *p = text;
    bool ok = true;
    if (header) {
        char want[4096] = "name";
        for (int c = 0; c < cols; c++) snprintf(want + strlen(want), sizeof want - strlen(want), "\td%d", c);
        size_t len = strcspn(p, "\n");
        ok = CHECK(len == strlen(want) && strncmp(p, want, len) == 0);
        p += len + 1;
    }
    for (int r = 0; ok && r < rows; r++) {
        if (names_out) {
            size_t len = strcspn(p, "\t\n");
            names_out[r] = strndup(p, len);
            p += len;
        }
        for (int c = 0; ok && c < cols; c++) {
            if (names_out || c) ok = CHECK(*p++ == '\t');
            char *end;
            x[(size_t)r * cols + c] = strtod(p, &end);
            ok = ok && CHECK(end != p);
            p = end;
        }
        ok = ok && CHECK(*p++ == '\n');
    }
    ok = ok && CHECK(*p == 0); /* nothing after the last row */
    free(text);
    return ok;
}

static bool same_bits(const double *a, const double *b, size_t n)
{
    return memcmp(a, b, n * sizeof(double)) == 0;
}

TEST(export_reads_back_to_the_checkpoint)
{
    char ckpt[512], dir[512], cmd[2048], path[1024], e[512];
    snprintf(ckpt, sizeof ckpt, "%s/x.st", T->tmp);
    snprintf(dir, sizeof dir, "%s/new/emb", T->tmp); /* new/ exists, emb/ is created */
    snprintf(cmd, sizeof cmd, "train --steps 50 --ffn 16 --save %s --quiet", ckpt);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(path, sizeof path, "%s/new", T->tmp);
    CHECK(mkdir(path, 0777) == 0);
    snprintf(cmd, sizeof cmd, "export --checkpoint %s --out %s", ckpt, dir);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "13 entities, 10 relation rows (inverses named REL^-1), d = 8") != NULL);

    kgl_st_file f;
    if (!CHECK(kgl_st_read(ckpt, &f, e, sizeof e))) return;
    const kgl_st_tensor *E = kgl_st_find(&f, "entity_emb"), *R = kgl_st_find(&f, "relation_emb");
    if (!CHECK(E && R && E->shape[0] == 13 && E->shape[1] == 8 && R->shape[0] == 10)) {
        kgl_st_free(&f);
        return;
    }
    double x[13 * 8], y[13 * 8];
    char *names[13] = {0}, *rel[10] = {0};
    /* E: every value the same double (%.17g round-trips), names in id order */
    snprintf(path, sizeof path, "%s/entities.tsv", dir);
    if (read_tsv(T, path, true, 13, 8, x, names)) {
        CHECK(same_bits(x, E->data, 13 * 8));
        CHECK(strcmp(names[0], "alice") == 0 && strcmp(names[12], "p3") == 0);
    }
    /* R: the five relations, then their inverses named REL^-1 */
    snprintf(path, sizeof path, "%s/relations.tsv", dir);
    double r[10 * 8];
    if (read_tsv(T, path, true, 10, 8, r, rel)) {
        CHECK(same_bits(r, R->data, 10 * 8));
        CHECK(strcmp(rel[0], "about") == 0 && strcmp(rel[1], "advises") == 0 && strcmp(rel[4], "cites") == 0);
        CHECK(strcmp(rel[5], "about^-1") == 0 && strcmp(rel[6], "advises^-1") == 0 && strcmp(rel[9], "cites^-1") == 0);
    }
    /* C: the states the library computes for this checkpoint (with its FFN) */
    kgl_dataset ds = {0};
    kgl_source src = {"academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    kgl_checkpoint ck;
    snprintf(path, sizeof path, "%s/context.tsv", dir);
    char *cnames[13] = {0};
    if (CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e)) && CHECK(kgl_checkpoint_open(ckpt, &ds, &ck, e, sizeof e)) &&
        read_tsv(T, path, true, 13, 8, x, cnames)) {
        kgl_model m;
        kgl_model_create(&m, &ck.cfg);
        kgl_checkpoint_apply(&ck, &m);
        kgl_context_states(&m, y);
        CHECK(same_bits(x, y, 13 * 8));
        CHECK(!same_bits(x, E->data, 13 * 8)); /* C is the layer's output, not E */
        CHECK(strcmp(cnames[3], names[3] ? names[3] : "") == 0);
        kgl_model_free(&m);
        kgl_checkpoint_close(&ck);
        /* the projector's files: the same vectors without names, the names alone */
        snprintf(path, sizeof path, "%s/context_vectors.tsv", dir);
        if (read_tsv(T, path, false, 13, 8, x, NULL)) CHECK(same_bits(x, y, 13 * 8));
    }
    snprintf(path, sizeof path, "%s/vectors.tsv", dir);
    if (read_tsv(T, path, false, 13, 8, x, NULL)) CHECK(same_bits(x, E->data, 13 * 8));
    snprintf(path, sizeof path, "%s/metadata.tsv", dir);
    char *meta = test_slurp(path, NULL);
    CHECK(meta && strncmp(meta, "alice\nbob\ncarol\n", 16) == 0 && strlen(meta) > 16 &&
          strcmp(meta + strlen(meta) - 3, "p3\n") == 0);
    free(meta);
    /* nothing but the six files: no temporary left behind */
    DIR *dp = opendir(dir);
    int files = 0;
    for (struct dirent *de; dp && (de = readdir(dp));) files += de->d_name[0] != '.';
    if (dp) closedir(dp);
    CHECK(files == 6);
    for (int k = 0; k < 13; k++) free(names[k]), free(cnames[k]);
    for (int k = 0; k < 10; k++) free(rel[k]);
    kgl_dataset_free(&ds);
    kgl_st_free(&f);
}

TEST(export_without_reciprocal_has_only_forward_rows)
{
    char ckpt[512], cmd[2048], path[1024];
    snprintf(ckpt, sizeof ckpt, "%s/nr.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --no-reciprocal --steps 5 --save %s --quiet", ckpt);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    snprintf(cmd, sizeof cmd, "export --checkpoint %s --out %s/nr --json", ckpt, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\"relation_rows\":5") != NULL && strstr(out, "\"entities\":13") != NULL);
    snprintf(path, sizeof path, "%s/nr/relations.tsv", T->tmp);
    double r[5 * 8];
    char *rel[5] = {0};
    if (read_tsv(T, path, true, 5, 8, r, rel)) CHECK(strcmp(rel[4], "cites") == 0);
    for (int k = 0; k < 5; k++) free(rel[k]);
}

TEST(export_output_errors)
{
    char ckpt[512], cmd[2048];
    snprintf(ckpt, sizeof ckpt, "%s/e.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --steps 5 --save %s --quiet", ckpt);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    /* a folder inside a file, and one whose parent is missing: exit 2 (a bad
       argument, found before any work), a message naming the path, nothing written */
    snprintf(cmd, sizeof cmd, "export --checkpoint %s --out %s/sub", ckpt, ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl export: --out ") != NULL && strstr(err, "is not a folder") != NULL && out[0] == 0);
    snprintf(cmd, sizeof cmd, "export --checkpoint %s --out %s/missing/sub", ckpt, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "does not exist") != NULL);
    struct stat st;
    char path[1024];
    snprintf(path, sizeof path, "%s/missing", T->tmp);
    CHECK(stat(path, &st) != 0);
    /* usage: --out and --checkpoint are required */
    snprintf(cmd, sizeof cmd, "export --checkpoint %s", ckpt);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--out DIR is required") != NULL);
    CHECK(run_kgl(T, "export --out x", out, sizeof out, err, sizeof err) == 2);
    /* the library reports a file it cannot write: a folder in its place (refused
       before it writes a temporary, since issue 46) */
    snprintf(path, sizeof path, "%s/blocked", T->tmp);
    CHECK(mkdir(path, 0777) == 0);
    snprintf(path, sizeof path, "%s/blocked/context.tsv", T->tmp);
    CHECK(mkdir(path, 0777) == 0);
    snprintf(cmd, sizeof cmd, "export --checkpoint %s --out %s/blocked", ckpt, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 3);
    CHECK(strstr(err, "blocked/context.tsv: is a folder, not a file: give a file's path") != NULL);
    int tmps = 0;
    snprintf(path, sizeof path, "%s/blocked", T->tmp);
    DIR *bd = opendir(path);
    for (struct dirent *de; bd && (de = readdir(bd));) tmps += strstr(de->d_name, ".tmp") != NULL;
    if (bd) closedir(bd);
    CHECK(tmps == 0);
}
