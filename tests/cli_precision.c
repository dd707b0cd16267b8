/* cli_precision.c — float32 (kgl-f32, `--precision f32`) checked against
 * float64: the twin of every op, a training run that tracks the float64 one,
 * the academic world fitted for seeds 1–10, F32 checkpoints and exact
 * resumes, and the option's errors. The float32 kernels' own tests are in
 * tests/f32/ (build/kgl_tests_f32). */
#include <stdlib.h>

#include "engine/cpu.h"
#include "test.h"

static char out[1 << 17], err[1 << 14];

/* ---- the twin comparison itself (kgl_twin_compare) ----------------------- */

static void twin_fill(kgl_twin *t, const char *op, const double *v, size_t n)
{
    memset(t, 0, sizeof *t);
    snprintf(t->op, sizeof t->op, "%s", op);
    t->n = 1;
    snprintf(t->label[0], sizeof t->label[0], "2x2: Y");
    t->count[0] = n;
    t->values[0] = malloc(n * sizeof(double));
    memcpy(t->values[0], v, n * sizeof(double));
}

TEST(twin_compare_passes_round_off_and_fails_real_differences)
{
    const double ref_v[4] = {1.0, -2.0, 0.5, 0.0};
    kgl_twin ref, f32;
    kgl_check_result r;
    twin_fill(&ref, "x", ref_v, 4);
    /* float32 round-off, 2^-24 of the largest element: within the default tolerance */
    double near[4] = {1.0 + 0x1p-24, -2.0, 0.5 - 0x1p-25, 0x1p-24};
    twin_fill(&f32, "x", near, 4);
    CHECK(kgl_twin_compare(&ref, &f32, KGL_F32_DEFAULT_TOL, &r));
    CHECK(r.checks == 4);
    CHECK_NEAR(r.max_abs_err, 0x1p-24, 0);
    kgl_twin_free(&f32);
    /* an error of 1e-3 of the scale (a lost term, a half-precision path) fails */
    double off[4] = {1.0, -2.0, 0.5 + 2e-3, 0.0};
    twin_fill(&f32, "x", off, 4);
    CHECK(!kgl_twin_compare(&ref, &f32, KGL_F32_DEFAULT_TOL, &r));
    CHECK(strstr(r.why, "2x2: Y") != NULL);
    kgl_twin_free(&f32);
    /* a NaN fails (the comparison is written !(err <= tol)) */
    double nan_v[4] = {1.0, NAN, 0.5, 0.0};
    twin_fill(&f32, "x", nan_v, 4);
    CHECK(!kgl_twin_compare(&ref, &f32, KGL_F32_DEFAULT_TOL, &r));
    kgl_twin_free(&f32);
    /* other labels or lengths: not the same arrays */
    twin_fill(&f32, "x", ref_v, 3);
    CHECK(!kgl_twin_compare(&ref, &f32, KGL_F32_DEFAULT_TOL, &r));
    kgl_twin_free(&f32);
    twin_fill(&f32, "x", ref_v, 4);
    snprintf(f32.label[0], sizeof f32.label[0], "2x2: dF/dX0");
    CHECK(!kgl_twin_compare(&ref, &f32, KGL_F32_DEFAULT_TOL, &r));
    kgl_twin_free(&f32);
    /* an array that is all zero in float64 must stay within round-off of zero in float32: its error is measured
       against KGL_TWIN_FLOOR (0.1), the scale of the terms that cancelled */
    const double zeros[2] = {0, 0}, tiny[2] = {0, 1e-30};
    kgl_twin_free(&ref);
    twin_fill(&ref, "x", zeros, 2);
    twin_fill(&f32, "x", tiny, 2);
    CHECK(kgl_twin_compare(&ref, &f32, KGL_F32_DEFAULT_TOL, &r)); /* 1e-30 absolute: round-off of nothing */
    kgl_twin_free(&f32);
    const double big[2] = {0, 1e-3};
    twin_fill(&f32, "x", big, 2);
    CHECK(!kgl_twin_compare(&ref, &f32, KGL_F32_DEFAULT_TOL, &r));
    kgl_twin_free(&f32);
    kgl_twin_free(&ref);
}

TEST(twin_of_an_op_rounds_its_inputs_to_float)
{
    /* the float64 half computes on inputs rounded to float, so that the twin
       compares arithmetic, not inputs: every value of matmul's output is a
       sum of products of floats */
    kgl_twin t;
    kgl_twin_op(kgl_op_find("matmul"), 1, &t);
    CHECK(t.n == 3 * 3); /* 3 cases: Y, dF/dA, dF/dB each */
    CHECK(strstr(t.label[0], ": Y") != NULL && strstr(t.label[1], ": dF/dX0") != NULL);
    bool nonzero = false;
    for (int a = 0; a < t.n; a++)
        for (size_t i = 0; i < t.count[a]; i++) nonzero = nonzero || t.values[a][i] != 0;
    CHECK(nonzero);
    kgl_twin_free(&t);
}

/* ---- the program ---------------------------------------------------------- */

TEST(gradcheck_precision_f32_compares_every_op)
{
    CHECK(run_kgl(T, "gradcheck --precision f32", out, sizeof out, err, sizeof err) == 0);
    for (int i = 0; i < kgl_op_registry_count; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n%-20s ", kgl_op_registry[i]->name);
        CHECK(strstr(out, line) != NULL); /* every registered op has a row */
    }
    CHECK(strstr(out, "FAIL") == NULL);
    CHECK(strstr(out, "gradcheck --precision f32: PASS") != NULL);
    /* kgl-f32's gradient check is float64's: it runs kgl */
    CHECK(run_kgl(T, "gradcheck --op gelu", out, sizeof out, err, sizeof err) == 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s-f32' gradcheck --op gelu", T->kgl);
    char out2[1 << 12];
    CHECK(run_sh(T, cmd, out2, sizeof out2, err, sizeof err) == 0);
    CHECK(strcmp(out, out2) == 0);
}

TEST(precision_option_errors)
{
    CHECK(run_kgl(T, "train --precision f16", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--precision is f32 or f64, got 'f16'") != NULL);
    CHECK(run_kgl(T, "eval --precision", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--precision needs a value") != NULL);
    CHECK(run_kgl(T, "train --precision f32 --precision=f64", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--precision given twice") != NULL);
    CHECK(run_kgl(T, "gradcheck --precision f16", out, sizeof out, err, sizeof err) == 2);
    /* the program of the other precision must be beside this one */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/lonely-kgl' && '%s/lonely-kgl' train --steps 1 --precision f32", T->kgl,
             T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--precision f32 runs kgl-f32, which is not beside this program") != NULL);
}

/* A recipe's --precision runs the program of that precision (kgl benchmark
   passes its runs a recipe, so this is how a benchmark trains in float32);
   the command line's --precision, whose words come after the recipe's, wins. */
TEST(recipe_precision_runs_that_program)
{
    static const char recipe[] = "--dim 8 --heads 2 --steps 3\n--precision f32\n";
    const char *r = write_tmp(T, 0, "f32.args", recipe, sizeof recipe - 1);
    char args[4200];
    snprintf(args, sizeof args, "train --recipe %s --json --quiet", r);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\"precision\":\"f32\"") != NULL);
    snprintf(args, sizeof args, "train --recipe %s --precision f64 --json --quiet", r);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\"precision\":\"f64\"") != NULL);
    /* a recipe of the other precision without that program beside: said so, exit 2 */
    char cmd[4600];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/lonely-kgl2' && '%s/lonely-kgl2' train --steps 1 --recipe '%s'", T->kgl,
             T->tmp, T->tmp, r);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "f32.args's --precision f32 runs kgl-f32, which is not beside this program") != NULL);
}

/* ---- learning in float32 -------------------------------------------------- */

/* The loss column of a CSV log (column 2), at most cap rows; returns the rows. */
static int read_losses(const char *path, double *loss, int cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1 << 14];
    int n = 0;
    if (!fgets(line, sizeof line, f)) n = -1; /* the header */
    while (n >= 0 && n < cap && fgets(line, sizeof line, f)) {
        const char *comma = strchr(line, ',');
        if (!comma) break;
        loss[n++] = strtod(comma + 1, NULL);
    }
    fclose(f);
    return n;
}

TEST(f32_training_tracks_f64)
{
    /* The default run (academic world, 300 steps) in both precisions. Measured
       (AVX-512 and KGL_ISA=portable): the relative loss difference stays below
       2.2e-7 for the first 100 steps — float32 round-off, ~u = 6e-8, grown by a
       few — and reaches 7.8e-4 (portable: 3.4e-3) by step 300, once the model has
       fitted and Adam's tiny second moments amplify every difference. Bounds:
       1e-6 and 1e-2, both fit. */
    char args[4096];
    double l64[300], l32[300];
    snprintf(args, sizeof args, "train --steps 300 --log-every 1 --quiet --json --log '%s/f64.csv'", T->tmp);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\"fit_step\":null") == NULL);
    snprintf(args, sizeof args, "train --precision f32 --steps 300 --log-every 1 --quiet --json --log '%s/f32.csv'",
             T->tmp);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\"fit_step\":null") == NULL);
    char path[4096];
    snprintf(path, sizeof path, "%s/f64.csv", T->tmp);
    CHECK(read_losses(path, l64, 300) == 300);
    snprintf(path, sizeof path, "%s/f32.csv", T->tmp);
    CHECK(read_losses(path, l32, 300) == 300);
    double early = 0, late = 0;
    bool differ = false;
    for (int s = 0; s < 300; s++) {
        double rel = fabs(l32[s] - l64[s]) / fabs(l64[s]);
        if (!(rel <= early) && s < 100) early = rel;
        if (!(rel <= late)) late = rel;
        differ = differ || l32[s] != l64[s];
    }
    CHECK(differ); /* float32 really ran: its losses are not float64's */
    CHECK(early <= 1e-6);
    CHECK(late <= 1e-2);
}

TEST(f32_academic_world_fits_for_seeds_1_to_10)
{
    /* As in float64 (README, walkthrough): every seed fits the 21 triples within 1000 steps.
       Measured fit steps in float32: 81 49 50 55 63 57 89 58 55 84. */
    for (int seed = 1; seed <= 10; seed++) {
        char args[256];
        snprintf(args, sizeof args, "train --precision f32 --until-fit --steps 1000 --seed %d --quiet --json", seed);
        CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
        const char *p = strstr(out, "\"fit_step\":");
        CHECK(p && p[11] >= '1' && p[11] <= '9');
    }
}

/* Every tensor of two checkpoints holds the same values (their run ids differ). */
static bool same_tensors(test_ctx *T, const char *a, const char *b, const char *dtype)
{
    char pa[4096], pb[4096], e[512];
    snprintf(pa, sizeof pa, "%s/%s", T->tmp, a);
    snprintf(pb, sizeof pb, "%s/%s", T->tmp, b);
    kgl_st_file fa, fb;
    if (!kgl_st_read(pa, &fa, e, sizeof e)) return CHECK(false), false;
    if (!kgl_st_read(pb, &fb, e, sizeof e)) return kgl_st_free(&fa), CHECK(false), false;
    bool same = fa.n == fb.n && fa.n > 0 && strcmp(kgl_st_file_dtype(&fa), dtype) == 0 &&
                strcmp(kgl_st_file_dtype(&fb), dtype) == 0;
    for (int i = 0; same && i < fa.n; i++) {
        const kgl_st_tensor *x = &fa.tensors[i], *y = kgl_st_find(&fb, x->name);
        same = y && x->shape[0] == y->shape[0] && x->shape[1] == y->shape[1];
        for (int64_t k = 0; same && k < x->shape[0] * x->shape[1]; k++) same = x->data[k] == y->data[k];
    }
    kgl_st_free(&fa);
    kgl_st_free(&fb);
    return same;
}

TEST(f32_checkpoints_hold_f32_and_resume_exactly)
{
    char args[4096];
    snprintf(args, sizeof args, "train --precision f32 --steps 40 --quiet --save '%s/straight.st'", T->tmp);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    snprintf(args, sizeof args, "train --precision f32 --steps 20 --quiet --save '%s/half.st'", T->tmp);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    /* resumed without --precision: the checkpoint is float32, so kgl-f32 continues it */
    snprintf(args, sizeof args, "train --resume '%s/half.st' --steps 20 --save '%s/resumed.st'", T->tmp, T->tmp);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "was trained in f32: resuming in kgl-f32") != NULL);
    CHECK(same_tensors(T, "straight.st", "resumed.st", "F32"));
    /* with --precision f64 it continues in float64, saying so: no longer the float32 run */
    snprintf(args, sizeof args, "train --resume '%s/half.st' --steps 20 --precision f64 --save '%s/in64.st'", T->tmp,
             T->tmp);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "was trained in f32; continuing in f64 as --precision asks") != NULL);
    CHECK(!same_tensors(T, "straight.st", "in64.st", "F64"));
    /* the float64 program reads the float32 model exactly and says what it computes in */
    snprintf(args, sizeof args, "eval --checkpoint '%s/straight.st'", T->tmp);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "was trained in f32; computing in f64 (--precision f32 computes as it was trained)") != NULL);
    snprintf(args, sizeof args, "eval --precision f32 --checkpoint '%s/straight.st'", T->tmp);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "was trained in") == NULL);
}

/* A kgl-f32 that is really the float64 program (a copy, a stale build) ran
   `--precision f32` by executing itself for ever (235 times in 2 s). The
   program asked for is marked; one of another precision stops, exit 2. */
TEST(precision_program_of_the_wrong_precision_stops)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "mkdir '%s/wrong' && cp '%s' '%s/wrong/kgl' && cp '%s' '%s/wrong/kgl-f32' && "
             "timeout 10 '%s/wrong/kgl' train --steps 1 --quiet --precision f32",
             T->tmp, T->kgl, T->tmp, T->kgl, T->tmp, T->tmp);
    int rc = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    if (!CHECK(rc == 2)) printf("    exit %d (124: still looping after 10 s)\n", rc);
    CHECK(strstr(err, "/wrong/kgl-f32 is not the float32 program (it computes in f64): rebuild it with make") != NULL);
    /* every command (they share main's exec), and the mark does not outlive the check */
    snprintf(cmd, sizeof cmd, "timeout 10 '%s/wrong/kgl' eval --precision f32", T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 2 && strstr(err, "is not the float32 program"));
    snprintf(cmd, sizeof cmd, "KGL_PRECISION_ASKED=f64 '%s' train --steps 1 --quiet", T->kgl);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
}

/* kgl-f32 refused to resume a float64 checkpoint with a value beyond float's
   range ("does not fit in float32") where it hands any other float64
   checkpoint to kgl: the precision is read from the header, before the values. */
TEST(f32_program_hands_a_float64_checkpoint_beyond_float_to_kgl)
{
    char cmd[4096];
    const char *dir = T->tmp;
    snprintf(cmd, sizeof cmd, "'%s' train --steps 5 --quiet --save '%s/big.st'", T->kgl, dir);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    /* the file's last value made 1e300, finite in double, beyond float: it
       is of an Adam second moment (adam.v.*, the last tensors), which only
       makes that parameter's steps tiny */
    char path[4200], e[512];
    snprintf(path, sizeof path, "%s/big.st", dir);
    kgl_st_file f;
    if (!CHECK(kgl_st_read(path, &f, e, sizeof e))) return;
    size_t len = 0;
    unsigned char *bytes = (unsigned char *)test_slurp(path, &len);
    kgl_st_free(&f);
    if (!CHECK(bytes && len > 16)) return;
    double huge = 1e300; /* little-endian, as the file */
    memcpy(bytes + len - 8, &huge, 8);
    FILE *w = fopen(path, "wb");
    if (!CHECK(w != NULL)) return;
    fwrite(bytes, 1, len, w);
    fclose(w);
    free(bytes);
    snprintf(cmd, sizeof cmd, "'%s-f32' train --resume '%s/big.st' --steps 1 --save '%s/after.st'", T->kgl, dir, dir);
    int rc = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    CHECK(strstr(err, "does not fit in float32") == NULL);
    if (!CHECK(rc == 0 && strstr(err, "was trained in f64: resuming in kgl\n") != NULL))
        printf("    exit %d, stderr: %s\n", rc, err);
    snprintf(path, sizeof path, "%s/after.st", dir);
    if (CHECK(kgl_st_read(path, &f, e, sizeof e))) { /* continued in float64, as it was trained */
        CHECK(strcmp(kgl_st_meta(&f, "precision"), "f64") == 0 && strcmp(kgl_st_meta(&f, "step"), "6") == 0);
        kgl_st_free(&f);
    }
}

TEST(vector_isa_paths_train_to_the_same_bits)
{
    /* The AVX2 and AVX-512 paths (KGL_ISA picks one; an ISA the CPU lacks
       falls back to the best it has) perform the same IEEE operations in the
       same order: the GEMM's fused multiply-adds in the same chains, every
       reduction in the same lanes and trees (vmath.c, ops.c's layer norm). So
       a whole run writes the same checkpoint, byte for byte, on either: here
       the graph context with qk-norm (layer norms, segment attention), an FFN
       (GELU), the readout's softmax and Adam, in both precisions. (The
       portable path's GEMM multiplies and adds apart, so its bits differ;
       data/report/precision.md.) */
    if (kgl_isa_best() != KGL_ISA_AVX512) { /* both runs would take the same path: nothing compared */
        test_skip(T, "the CPU has no AVX-512, so KGL_ISA=avx512 would run the AVX2 path too");
        return;
    }
    const char *isa[] = {"avx2", "avx512"};
    const char *precision[] = {"f64", "f32"};
    for (int p = 0; p < 2; p++) {
        char path[2][4096];
        for (int k = 0; k < 2; k++) {
            char cmd[12288];
            snprintf(path[k], sizeof path[k], "%s/isa_%s_%s.safetensors", T->tmp, precision[p], isa[k]);
            snprintf(cmd, sizeof cmd,
                     "KGL_ISA=%s '%s' train --precision %s --train data/kg/umls/train.txt --context graph "
                     "--neighbours 12 --qk-norm --query-relation --dim 32 --heads 4 --ffn 64 --steps 12 --seed 5 "
                     "--quiet --json --save '%s'",
                     isa[k], T->kgl, precision[p], path[k]);
            CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
        }
        if (!CHECK(test_same_file(path[0], path[1])))
            fprintf(stderr, "  %s: the AVX2 and AVX-512 checkpoints differ\n", precision[p]);
    }
}
