/* cli_precision.c — float32 (kgl-f32, `--precision f32`) checked against
 * float64: the twin of every op, a training run that tracks the float64 one,
 * the academic world fitted for seeds 1–10, F32 checkpoints and exact
 * resumes, and the option's errors. The float32 kernels' own tests are in
 * tests/f32/ (build/kgl_tests_f32). */
#include <stdlib.h>

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
    /* an array that is all zero in float64 must be all zero in float32 */
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
