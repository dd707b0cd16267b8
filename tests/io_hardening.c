/* io_hardening.c — inputs an adversarial user would try (issue 13): edited
 * checkpoints, endless and huge files, devices, non-finite models, the clang
 * UBSan finding in stb_ds. Every one is refused with a message and exit
 * status 2, never an abort. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

static char out[65536], err[65536];

static const char *hpath(test_ctx *T, int slot, const char *name)
{
    static char paths[8][512];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", T->tmp, name);
    return paths[slot];
}

/* Copies the safetensors file `in` to `out_path`, with metadata `key` set
 * to `value` (when key is non-NULL) and every value of tensor `scaled`
 * multiplied by `factor` (when scaled is non-NULL). */
static bool rewrite_checkpoint(const char *in, const char *out_path, const char *key, const char *value,
                               const char *scaled, double factor)
{
    kgl_st_file f;
    char e[512];
    if (!kgl_st_read(in, &f, e, sizeof e)) {
        printf("    %s\n", e);
        return false;
    }
    kgl_st_entry *ent = calloc((size_t)f.n, sizeof *ent);
    const char **meta = calloc((size_t)f.n_meta * 2 + 2, sizeof *meta);
    for (int i = 0; i < f.n; i++) {
        kgl_st_tensor *t = &f.tensors[i];
        ent[i].name = t->name;
        ent[i].ndim = t->ndim;
        ent[i].shape[0] = t->shape[0];
        ent[i].shape[1] = t->shape[1];
        ent[i].data = t->data;
        if (scaled && strcmp(t->name, scaled) == 0)
            for (int64_t k = 0; k < t->shape[0] * t->shape[1]; k++) t->data[k] *= factor;
    }
    for (int i = 0; i < f.n_meta; i++) {
        meta[2 * i] = f.meta_keys[i];
        meta[2 * i + 1] = key && strcmp(key, f.meta_keys[i]) == 0 ? value : f.meta_values[i];
    }
    bool ok = kgl_st_write(out_path, ent, f.n, meta, f.n_meta, e, sizeof e);
    if (!ok) printf("    %s\n", e);
    free(ent);
    free(meta);
    kgl_st_free(&f);
    return ok;
}

/* A small checkpoint of the academic world (d 8, 2 heads, FFN 4). */
static const char *base_checkpoint(test_ctx *T)
{
    const char *p = hpath(T, 0, "hard_base.st");
    char args[1024];
    snprintf(args, sizeof args, "train --steps 3 --ffn 4 --quiet --save '%s'", p);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    return p;
}

/* Defect 1: an edited d_model or ffn made the loader allocate the model
   from the metadata (out of memory, SIGABRT) before checking it against the
   file's tensors. */
TEST(hardening_checkpoint_metadata_checked_against_tensors)
{
    const char *base = base_checkpoint(T);
    const char *bad = hpath(T, 1, "hard_edited.st");
    static const char *const cases[][3] = {
        {"d_model", "16384", "tensor 'entity_emb' has shape [13, 8] but the metadata (d_model 16384, ffn 4)"},
        {"d_model", "1048576", "tensor 'entity_emb' has shape [13, 8] but the metadata (d_model 1048576, ffn 4)"},
        {"ffn", "1048576", "tensor 'ffn.w1' has shape [8, 4] but the metadata (d_model 8, ffn 1048576)"},
    };
    static const char *const commands[] = {"eval --checkpoint", "grad --out /dev/null --checkpoint", "heads --checkpoint",
                                           "train --steps 1 --quiet --resume"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (!CHECK(rewrite_checkpoint(base, bad, cases[c][0], cases[c][1], NULL, 1))) continue;
        for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
            char args[1024];
            snprintf(args, sizeof args, "%s '%s'", commands[k], bad);
            int rc = run_kgl(T, args, out, sizeof out, err, sizeof err);
            if (!CHECK(rc == 2) || !CHECK(strstr(err, cases[c][2]) != NULL))
                printf("    kgl %s: rc %d, stderr: %s\n", args, rc, err);
        }
    }
    /* the library's answer, without the program around it */
    kgl_dataset ds;
    char e[1024];
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e));
    CHECK(rewrite_checkpoint(base, bad, "d_model", "16384", NULL, 1));
    kgl_checkpoint ck;
    long before = test_alloc_count();
    CHECK(!kgl_checkpoint_open(bad, &ds, &ck, e, sizeof e));
    CHECK(test_alloc_count() - before < 100); /* no model was built */
    CHECK(strstr(e, "tensor 'entity_emb' has shape [13, 8]") != NULL);
    kgl_dataset_free(&ds);
}

/* Defect 10 (second half): metadata seed "-1" wrapped to 2^64 - 1 while
   --seed -1 was refused; one rule for both. */
TEST(hardening_seed_rule_same_for_metadata_and_option)
{
    const char *base = base_checkpoint(T);
    const char *bad = hpath(T, 1, "hard_seed.st");
    static const char *const seeds[] = {"-1", "+1", " 1", "18446744073709551616"};
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
        CHECK(rewrite_checkpoint(base, bad, "seed", seeds[k], NULL, 1));
        char args[1024], want[1024];
        snprintf(args, sizeof args, "eval --checkpoint '%s'", bad);
        snprintf(want, sizeof want, "metadata 'seed' is '%s', expected a whole number >= 0", seeds[k]);
        CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 2);
        if (!CHECK(strstr(err, want) != NULL)) printf("    stderr: %s\n", err);
        snprintf(args, sizeof args, "train --steps 1 --seed '%s'", seeds[k]);
        snprintf(want, sizeof want, "--seed expects a whole number >= 0, got '%s'", seeds[k]);
        CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 2);
        if (!CHECK(strstr(err, want) != NULL)) printf("    stderr: %s\n", err);
    }
    CHECK(rewrite_checkpoint(base, bad, "seed", "18446744073709551615", NULL, 1));
    char args[1024];
    snprintf(args, sizeof args, "eval --checkpoint '%s'", bad);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
}

/* Defect 10: a checkpoint with 1e300 embeddings loaded (they are finite),
   then eval printed an MRR of NaN-scored ranks and heads printed -nan. */
TEST(hardening_non_finite_forward_is_an_error)
{
    const char *base = base_checkpoint(T);
    const char *bad = hpath(T, 1, "hard_huge.st");
    CHECK(rewrite_checkpoint(base, bad, NULL, NULL, "entity_emb", 1e300));
    static const char *const commands[] = {"eval --checkpoint", "heads --checkpoint", "grad --out /dev/null --checkpoint",
                                           "train --steps 1 --quiet --resume"};
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        char args[1024];
        snprintf(args, sizeof args, "%s '%s'", commands[k], bad);
        int rc = run_kgl(T, args, out, sizeof out, err, sizeof err);
        CHECK(rc == 2);
        if (!CHECK(strstr(err, "(tensor ") != NULL && strstr(err, "too large for finite arithmetic")) ||
            !CHECK(strstr(out, "nan") == NULL && strstr(out, "MRR") == NULL))
            printf("    kgl %s: rc %d\n    stdout: %.300s\n    stderr: %s\n", args, rc, out, err);
    }
    /* the readout bound alone: relation vectors of 1e306 keep A and C finite */
    CHECK(rewrite_checkpoint(base, bad, NULL, NULL, "relation_emb", 1e306));
    char args[1024];
    snprintf(args, sizeof args, "eval --checkpoint '%s'", bad);
    int rc = run_kgl(T, args, out, sizeof out, err, sizeof err);
    CHECK(rc == 2);
    if (!CHECK(strstr(err, "(tensor scores") != NULL)) printf("    rc %d, stdout: %.200s\n    stderr: %s\n", rc, out, err);
}

/* Adagrad's state is a sum of squares too: a negative one is refused. */
TEST(hardening_adagrad_state_validated_on_load)
{
    const char *base = hpath(T, 0, "hard_adagrad.st");
    const char *bad = hpath(T, 1, "hard_adagrad_neg.st");
    char args[1024];
    snprintf(args, sizeof args, "train --steps 3 --optimizer adagrad --lr 0.1 --quiet --save '%s'", base);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(rewrite_checkpoint(base, bad, NULL, NULL, "adagrad.sum.attn.wq", -1));
    snprintf(args, sizeof args, "train --steps 3 --quiet --resume '%s'", base);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0); /* the file as written resumes */
    snprintf(args, sizeof args, "train --steps 3 --quiet --resume '%s'", bad);
    int rc = run_kgl(T, args, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 2) || !CHECK(strstr(err, "tensor 'adagrad.sum.attn.wq' holds -") != NULL) ||
        !CHECK(strstr(err, "cannot be negative") != NULL))
        printf("    rc %d, stderr: %s\n", rc, err);
}

/* Issue 25, defect 9: a negative Adam second moment (a running mean of
   squares) was accepted and ended in a NaN loss with advice to lower --lr;
   constants Adam divides by were accepted at 0 (eps) and 1 (beta1, beta2). */
TEST(hardening_adam_state_validated_on_load)
{
    const char *base = base_checkpoint(T);
    const char *bad = hpath(T, 1, "hard_adam.st");
    CHECK(rewrite_checkpoint(base, bad, NULL, NULL, "adam.v.attn.wq", -1));
    static const char *const commands[] = {"train --steps 3 --quiet --resume", "eval --checkpoint"};
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        char args[1024];
        snprintf(args, sizeof args, "%s '%s'", commands[k], bad);
        int rc = run_kgl(T, args, out, sizeof out, err, sizeof err);
        if (!CHECK(rc == 2) || !CHECK(strstr(err, "tensor 'adam.v.attn.wq' holds -") != NULL) ||
            !CHECK(strstr(err, "cannot be negative") != NULL))
            printf("    kgl %s: rc %d, stderr: %s\n", args, rc, err);
    }
    static const char *const cases[][3] = {
        {"beta1", "1", "metadata 'beta1' is '1', expected a number from 0 to below 1"},
        {"beta2", "1", "metadata 'beta2' is '1', expected a number from 0 to below 1"},
        {"beta1", "-0.1", "metadata 'beta1' is '-0.1', expected a number from 0 to below 1"},
        {"eps", "0", "metadata 'eps' is '0', expected a number above 0 and at most 1"},
        {"eps", "nan", "metadata 'eps' is 'nan', expected a number above 0 and at most 1"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (!CHECK(rewrite_checkpoint(base, bad, cases[c][0], cases[c][1], NULL, 1))) continue;
        char args[1024];
        snprintf(args, sizeof args, "train --steps 3 --quiet --resume '%s'", bad);
        int rc = run_kgl(T, args, out, sizeof out, err, sizeof err);
        if (!CHECK(rc == 2) || !CHECK(strstr(err, cases[c][2]) != NULL))
            printf("    %s = %s: rc %d, stderr: %s\n", cases[c][0], cases[c][1], rc, err);
    }
}

/* Issue 25, defect 9: resume took lr, weight decay and the rest from the
   checkpoint but not Adam's beta1, beta2 and eps (kgl train has no option
   for them, so the checkpoint's are the only ones): an edited value changed
   nothing. Each edit must change the resumed run's loss; rewriting the
   saved value itself (the control) must not. */
TEST(hardening_resume_uses_checkpoint_adam_constants)
{
    const char *base = base_checkpoint(T);
    const char *edited = hpath(T, 1, "hard_adam_const.st");
    char args[1024], plain[64] = "", got[64] = "";
    snprintf(args, sizeof args, "train --steps 5 --json --quiet --resume '%s'", base);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(test_json_raw(out, "final_loss", plain, sizeof plain));
    static const struct {
        const char *key, *value;
        bool changes;
    } cases[] = {{"beta1", "0.5", true}, {"beta2", "0.9", true}, {"eps", "0.01", true}, {"beta1", "0.9", false}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (!CHECK(rewrite_checkpoint(base, edited, cases[c].key, cases[c].value, NULL, 1))) continue;
        snprintf(args, sizeof args, "train --steps 5 --json --quiet --resume '%s'", edited);
        CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
        CHECK(test_json_raw(out, "final_loss", got, sizeof got));
        if (!CHECK((strcmp(got, plain) != 0) == cases[c].changes))
            printf("    %s = %s: final loss %s, unedited %s\n", cases[c].key, cases[c].value, got, plain);
    }
}

/* Issue 25, defect 11: kgl predict on a checkpoint whose attention is not
   finite exited 2 but leaked the names it had read from the checkpoint. Under
   `make sanitize` the kgl run here is built with AddressSanitizer, whose
   LeakSanitizer reports a leak at exit and turns the status into 1: each
   command that refuses such a model must exit 2 with nothing leaked. */
TEST(hardening_non_finite_model_refused_without_a_leak)
{
    const char *base = base_checkpoint(T);
    const char *bad = hpath(T, 1, "hard_wq.st");
    CHECK(rewrite_checkpoint(base, bad, NULL, NULL, "attn.wq", 1e308));
    static const char *const commands[] = {"predict --head alice --relation advises --checkpoint",
                                           "predict --train data/academic.tsv --head alice --relation advises --checkpoint",
                                           "eval --checkpoint",
                                           "heads --checkpoint",
                                           "heads --query alice,advises --checkpoint",
                                           "export --checkpoint",
                                           "grad --out /dev/null --checkpoint"};
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        char args[1024];
        snprintf(args, sizeof args, "%s '%s'", commands[k], bad);
        if (strncmp(commands[k], "export", 6) == 0) /* a folder it could write */
            snprintf(args + strlen(args), sizeof args - strlen(args), " --out '%s'", hpath(T, 2, "emb"));
        int rc = run_kgl(T, args, out, sizeof out, err, sizeof err);
        if (!CHECK(rc == 2 && strstr(err, "too large for finite arithmetic") && !strstr(err, "LeakSanitizer")))
            printf("    kgl %s: rc %d\n    stderr: %.2000s\n", args, rc, err);
    }
}

/* Defect 2: --train /dev/zero grew a buffer until memory ran out. */
TEST(hardening_devices_and_huge_files_refused)
{
    CHECK(run_kgl(T, "train --train /dev/zero", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "/dev/zero: is a device, not a regular file") != NULL);
    /* a sparse file one byte past the limit: refused from its size, unread */
    const char *big = hpath(T, 2, "hard_big.tsv");
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)KGL_FILE_MAX + 1) == 0);
    if (fd >= 0) close(fd);
    char args[1024], want[1024];
    snprintf(args, sizeof args, "train --train '%s'", big);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 2);
    snprintf(want, sizeof want, "%s: the file is 1073741825 bytes; the limit is 1073741824 bytes (1024 MiB)", big);
    if (!CHECK(strstr(err, want) != NULL)) printf("    stderr: %s\n", err);
    unlink(big);
    kgl_text t;
    char e[512];
    CHECK(!kgl_text_open(&t, "/dev/null", e, sizeof e)); /* a device, even an empty one */
    /* a pipe is read (to its end, within the limit) */
    snprintf(args, sizeof args, "printf 'a\\tr\\tb\\n' | '%s' train --steps 1 --quiet --train /dev/stdin", T->kgl);
    CHECK(run_sh(T, args, out, sizeof out, err, sizeof err) == 0);
}

/* Defect 4: stb_ds's string arena (sh_new_arena) indexes past its blocks'
   declared `char storage[8]`: clang's UBSan aborted on every triples file.
   No source may use it (`make CC=clang sanitize` in .ci/run runs it all). */
TEST(hardening_no_stb_string_arena)
{
    static const char *const dirs[] = {"src/engine", "src/io", "src/model", "src/studies", "train"};
    int files = 0;
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        DIR *d = opendir(dirs[k]);
        if (!CHECK(d != NULL)) continue;
        struct dirent *de;
        while ((de = readdir(d))) {
            size_t len = strlen(de->d_name);
            if (len < 3 || strcmp(de->d_name + len - 2, ".c") != 0) continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dirs[k], de->d_name);
            kgl_text t;
            char e[512];
            if (!CHECK(kgl_text_open(&t, path, e, sizeof e))) continue;
            files++;
            if (!CHECK(strstr(t.buf, "sh_new_arena(") == NULL)) printf("    %s uses sh_new_arena\n", path);
            kgl_text_close(&t);
        }
        closedir(d);
    }
    CHECK(files > 20);
}

/* The metadata asked_edges (--hide-asked-relation): a value other than shown
   or hidden, or hidden on a model whose query is the entity alone (it has no
   question to hide an edge from), is refused with the key and the value. */
TEST(hardening_asked_edges_metadata_checked)
{
    const char *base = hpath(T, 0, "hard_asked.st");
    const char *bad = hpath(T, 1, "hard_asked_bad.st");
    char args[1024];
    snprintf(args, sizeof args, "train --context graph --neighbours 3 --steps 3 --quiet --save '%s'", base);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    static const char *const cases[][2] = {
        {"maybe", "metadata 'asked_edges' is 'maybe', expected shown or hidden"},
        {"hidden", "metadata 'asked_edges' is 'hidden' but 'query' is not 'relation'"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (!CHECK(rewrite_checkpoint(base, bad, "asked_edges", cases[c][0], NULL, 1))) continue;
        snprintf(args, sizeof args, "eval --checkpoint '%s'", bad);
        int rc = run_kgl(T, args, out, sizeof out, err, sizeof err);
        if (!CHECK(rc == 2) || !CHECK(strstr(err, cases[c][1]) != NULL)) printf("    rc %d, stderr: %s\n", rc, err);
    }
    CHECK(rewrite_checkpoint(base, bad, "asked_edges", "shown", NULL, 1));
    snprintf(args, sizeof args, "eval --checkpoint '%s'", bad);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
}
