/* gradcheck.c — central finite differences against the analytic gradients.
 *
 * For an op Y = f(X_1..X_k) we check the scalar F = Σ W ⊙ Y with weights W
 * drawn once per case from N(0, 1). A plain sum would not do: Σ softmax is
 * constant, so its gradient is 0 whatever the backward computes. For every
 * element x of every input:
 *     numeric  = (F(x + h) − F(x − h)) / ((x + h) − (x − h))
 *     analytic = (the backward of the op, seeded with W)[x]
 * x is restored bit for bit after each pair of evaluations. An element fails
 * unless its relative error is <= the op's tolerance (written !(err <= tol),
 * so a NaN fails), and an input whose analytic gradient is all zeros fails:
 * that is what a backward that forgot to write looks like. "Zero" means
 * below KGL_ZERO_FLOOR (1e-10), not exactly 0: round-off alone leaves
 * partials of 1e-17 where the exact gradient is zero. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/engine.h"
#include "internal.h"

double kgl_rel_error(double analytic, double numeric)
{
    double den = fmax(fmax(fabs(analytic), fabs(numeric)), KGL_REL_FLOOR);
    return fabs(analytic - numeric) / den;
}

/* The central difference of eval in element i of x at step h, x[i] restored bit for bit */
static double central_difference(kgl_real *x, size_t i, double h, kgl_scalar_fn eval, void *ctx)
{
    double orig = x[i];
    double up = orig + h, down = orig - h;
    x[i] = up;
    double f_up = eval(ctx);
    x[i] = down;
    double f_down = eval(ctx);
    x[i] = orig;
    return (f_up - f_down) / (up - down);
}

/* richardson: the partial as (4 D(h/2) − D(h)) / 3 from two central
   differences D. Each is the partial plus c h² + O(h⁴) (the Taylor series'
   odd terms cancel in a central difference), so the combination cancels
   the h² term: its error is O(h⁴), where D(h)'s truncation error, c h², is
   what fails a deep model's smallest partials (kgl_layer_check). */
static void fd_compare(kgl_real *x, const kgl_real *analytic, size_t n, double h, double rel_tol, bool richardson,
                       kgl_scalar_fn eval, void *ctx, kgl_fd_stats *st)
{
    for (size_t i = 0; i < n; i++) {
        double numeric = central_difference(x, i, h, eval, ctx);
        if (richardson) numeric = (4.0 * central_difference(x, i, h / 2, eval, ctx) - numeric) / 3.0;
        double a = analytic[i];
        double abs_err = fabs(a - numeric), rel_err = kgl_rel_error(a, numeric);
        st->checks++;
        kgl_keep_max(&st->max_abs_err, abs_err);
        kgl_keep_max(&st->max_rel_err, rel_err);
        kgl_keep_max(&st->max_abs_analytic, fabs(a));
        kgl_keep_max(&st->max_abs_numeric, fabs(numeric));
        if (fabs(a) > KGL_ZERO_FLOOR) st->nonzero = true;
        if (!(rel_err <= rel_tol)) {
            if (st->failures == 0) {
                st->first_bad = (long)i;
                st->first_bad_analytic = a;
                st->first_bad_numeric = numeric;
            }
            st->failures++;
        }
    }
}

void kgl_fd_compare(kgl_real *x, const kgl_real *analytic, size_t n, double h, double rel_tol, kgl_scalar_fn eval,
                    void *ctx, kgl_fd_stats *st)
{
    fd_compare(x, analytic, n, h, rel_tol, false, eval, ctx, st);
}

void kgl_fd_compare_richardson(kgl_real *x, const kgl_real *analytic, size_t n, double h, double rel_tol,
                               kgl_scalar_fn eval, void *ctx, kgl_fd_stats *st)
{
    fd_compare(x, analytic, n, h, rel_tol, true, eval, ctx, st);
}

typedef struct op_eval_ctx {
    kgl_tape *tape;
    const kgl_check_case *c;
    const kgl_real *w;
} op_eval_ctx;

static double weighted_sum(const kgl_tensor *y, const kgl_real *w)
{
    double f = 0;
    size_t n = kgl_numel(y);
    for (size_t i = 0; i < n; i++) f += w[i] * y->data[i];
    return f;
}

static double op_eval(void *vctx)
{
    op_eval_ctx *ctx = vctx;
    kgl_tape_reset(ctx->tape);
    ctx->tape->recording = false;
    kgl_tensor *y = ctx->c->run(ctx->tape, ctx->c);
    return weighted_sum(y, ctx->w);
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

bool kgl_gradcheck_op(const kgl_op *op, uint64_t seed, kgl_check_result *res)
{
    memset(res, 0, sizeof *res);
    snprintf(res->name, sizeof res->name, "%s", op->name);
    res->rel_tol = op->check.rel_tol;
    res->pass = true;
    if (op->check.n_cases < 1 || !op->check.make_case || !(op->check.rel_tol > 0)) {
        res->pass = false;
        snprintf(res->why, sizeof res->why, "op has no gradient-check spec");
        return false;
    }
    kgl_arena keep = {0};
    kgl_tape tape;
    kgl_tape_init(&tape);
    tape.poison_unset = true;
    size_t shapes_len = 0;
    for (int which = 0; which < op->check.n_cases; which++) {
        kgl_rng rng;
        kgl_rng_seed(&rng, seed ^ name_hash(op->name) ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(which + 1)));
        kgl_check_case c;
        memset(&c, 0, sizeof c);
        kgl_arena_reset(&keep);
        op->check.make_case(which, &rng, &keep, &c);
        shapes_len += (size_t)snprintf(res->shapes + shapes_len, sizeof res->shapes - shapes_len, "%s%s",
                                       which ? ", " : "", c.label);
        if (shapes_len >= sizeof res->shapes) shapes_len = sizeof res->shapes - 1;

        /* analytic: one recorded forward, backward seeded with W */
        kgl_tape_reset(&tape);
        tape.recording = true;
        /* the inputs' gradients unset and NaN, as an op's outputs are on the
           way back: an op that claims them must write every element */
        for (int k = 0; k < c.n_inputs; k++) kgl_grad_poison(c.inputs[k]);
        kgl_tensor *y = c.run(&tape, &c);
        kgl_real *w = kgl_arena_alloc(&keep, kgl_numel(y) * sizeof(kgl_real));
        for (size_t i = 0; i < kgl_numel(y); i++) w[i] = kgl_rng_normal(&rng);
        if (!y->grad) {
            res->pass = false;
            snprintf(res->why, sizeof res->why, "case %s: output has no gradient", c.label);
            break;
        }
        kgl_backward_seeded(&tape, y, w);

        op_eval_ctx ctx = {&tape, &c, w};
        double h = c.h > 0 ? c.h : 1e-5;
        for (int k = 0; k < c.n_inputs; k++) {
            kgl_fd_stats st = {0};
            st.first_bad = -1;
            kgl_fd_compare(c.inputs[k]->data, c.inputs[k]->grad, kgl_numel(c.inputs[k]), h, op->check.rel_tol, op_eval,
                           &ctx, &st);
            res->checks += st.checks;
            kgl_keep_max(&res->max_abs_err, st.max_abs_err);
            kgl_keep_max(&res->max_rel_err, st.max_rel_err);
            if (res->pass && st.failures) {
                res->pass = false;
                snprintf(res->why, sizeof res->why, "case %s, input %d, element %ld: analytic %.10g, numeric %.10g",
                         c.label, k, st.first_bad, st.first_bad_analytic, st.first_bad_numeric);
            }
            if (res->pass && !st.nonzero) {
                res->pass = false;
                snprintf(res->why, sizeof res->why, "case %s, input %d: analytic gradient is all zero", c.label, k);
            }
        }
    }
    kgl_tape_free(&tape);
    kgl_arena_free(&keep);
    return res->pass;
}

/* ---- the float32 twin ---------------------------------------------------------------- */

static void twin_add(kgl_twin *out, const char *case_label, const char *what, const kgl_real *v, size_t n)
{
    if (out->n >= KGL_TWIN_MAX_ARRAYS) kgl_die("twin check of %s: more than %d arrays", out->op, KGL_TWIN_MAX_ARRAYS);
    snprintf(out->label[out->n], sizeof out->label[out->n], "%s: %s", case_label, what);
    out->count[out->n] = n;
    out->values[out->n] = kgl_xmalloc((n ? n : 1) * sizeof(double));
    kgl_real_to_double(out->values[out->n], v, n);
    out->n++;
}

static void round_to_float(kgl_real *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = (kgl_real)(float)x[i];
}

void kgl_twin_op(const kgl_op *op, uint64_t seed, kgl_twin *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->op, sizeof out->op, "%s", op->name);
    kgl_arena keep = {0};
    kgl_tape tape;
    kgl_tape_init(&tape);
    tape.poison_unset = true;
    for (int which = 0; which < op->check.n_cases; which++) {
        kgl_rng rng; /* the same inputs as the gradient check's, rounded to float */
        kgl_rng_seed(&rng, seed ^ name_hash(op->name) ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(which + 1)));
        kgl_check_case c;
        memset(&c, 0, sizeof c);
        kgl_arena_reset(&keep);
        op->check.make_case(which, &rng, &keep, &c);
        for (int k = 0; k < c.n_inputs; k++) {
            round_to_float(c.inputs[k]->data, kgl_numel(c.inputs[k]));
            kgl_grad_poison(c.inputs[k]); /* as the gradient check's */
        }
        kgl_tape_reset(&tape);
        tape.recording = true;
        kgl_tensor *y = c.run(&tape, &c);
        size_t ny = kgl_numel(y);
        kgl_real *w = kgl_arena_alloc(&keep, ny * sizeof(kgl_real));
        for (size_t i = 0; i < ny; i++) w[i] = kgl_rng_normal(&rng);
        round_to_float(w, ny);
        twin_add(out, c.label, "Y", y->data, ny);
        if (!y->grad) continue; /* kgl_gradcheck_op reports it */
        kgl_backward_seeded(&tape, y, w);
        for (int k = 0; k < c.n_inputs; k++) {
            char what[32];
            snprintf(what, sizeof what, "dF/dX%d", k);
            twin_add(out, c.label, what, c.inputs[k]->grad, kgl_numel(c.inputs[k]));
        }
    }
    kgl_tape_free(&tape);
    kgl_arena_free(&keep);
}

void kgl_twin_free(kgl_twin *t)
{
    for (int i = 0; i < t->n; i++) free(t->values[i]);
    memset(t, 0, sizeof *t);
}

void kgl_twin_write(FILE *f, const kgl_twin *t)
{
    fprintf(f, "twin %s %d\n", t->op, t->n);
    for (int a = 0; a < t->n; a++) {
        fprintf(f, "array %zu %s\n", t->count[a], t->label[a]);
        for (size_t k = 0; k < t->count[a]; k++) fprintf(f, "%s%a", k ? " " : "", t->values[a][k]);
        fputc('\n', f);
    }
}

bool kgl_twin_read(char **p, kgl_twin *t)
{
    memset(t, 0, sizeof *t);
    int used = 0;
    int parsed;
    /* t->n counts the arrays read so far (kgl_twin_free frees that many):
       never the count a text claims, which may be beyond the arrays */
    if (sscanf(*p, "twin %47s %d%n", t->op, &parsed, &used) != 2 || parsed < 0 || parsed > KGL_TWIN_MAX_ARRAYS)
        return false;
    char *s = *p + used;
    for (int a = 0; a < parsed; a++) {
        while (*s == '\n') s++;
        size_t count;
        if (sscanf(s, "array %zu %n", &count, &used) != 1) return false;
        s += used;
        char *eol = strchr(s, '\n');
        if (!eol || (size_t)(eol - s) >= sizeof t->label[a]) return false;
        memcpy(t->label[a], s, (size_t)(eol - s));
        t->label[a][eol - s] = '\0';
        s = eol + 1;
        t->count[a] = count;
        t->values[a] = kgl_xmalloc((count ? count : 1) * sizeof(double));
        t->n = a + 1;
        for (size_t k = 0; k < count; k++) {
            char *end;
            errno = 0;
            t->values[a][k] = strtod(s, &end);
            if (end == s) return false;
            s = end;
        }
    }
    while (*s == '\n') s++;
    *p = s;
    return true;
}

bool kgl_twin_compare(const kgl_twin *ref, const kgl_twin *f32, double tol, kgl_check_result *res)
{
    memset(res, 0, sizeof *res);
    snprintf(res->name, sizeof res->name, "%s", ref->op);
    res->rel_tol = tol;
    res->pass = true;
    if (ref->n == 0 || f32->n != ref->n) {
        res->pass = false;
        snprintf(res->why, sizeof res->why, "%d arrays in float32, %d in float64", f32->n, ref->n);
        return false;
    }
    for (int a = 0; a < ref->n; a++) {
        if (strcmp(ref->label[a], f32->label[a]) != 0 || ref->count[a] != f32->count[a]) {
            res->pass = false;
            snprintf(res->why, sizeof res->why, "array %d is '%.40s' (%zu values) in float32, '%.40s' (%zu) in float64", a,
                     f32->label[a], f32->count[a], ref->label[a], ref->count[a]);
            return false;
        }
        double scale = 0, err = 0;
        for (size_t i = 0; i < ref->count[a]; i++) kgl_keep_max(&scale, fabs(ref->values[a][i]));
        for (size_t i = 0; i < ref->count[a]; i++) kgl_keep_max(&err, fabs(f32->values[a][i] - ref->values[a][i]));
        /* normwise: an element that is 0 in exact arithmetic is compared with the array's scale, not its own;
           and the scale is at least KGL_TWIN_FLOOR: the cases draw inputs and weights from N(0, 1), so an array
           far smaller than that is the cancellation of O(1) terms (layernorm's dF/dX over 2 columns is 2e-5),
           whose float32 error is round-off of the terms (~1e-7), not of the result */
        double rel = err / fmax(scale, KGL_TWIN_FLOOR);
        res->checks += (long)ref->count[a];
        kgl_keep_max(&res->max_abs_err, err);
        kgl_keep_max(&res->max_rel_err, rel);
        if (res->pass && !(rel <= tol)) {
            res->pass = false;
            snprintf(res->why, sizeof res->why, "%.64s: max |f32 - f64| = %.3g, %.3g of max |f64| = %.3g",
                     ref->label[a], err, rel, scale);
        }
    }
    return res->pass;
}

double kgl_softmax_jacobian_experiment(uint64_t seed, double h, double *z_out, double *J_out, double *J_fd_out)
{
    enum { N = 5 };
    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    double z[N], p[N], J[N * N], J_fd[N * N], p_up[N], p_down[N];
    for (int i = 0; i < N; i++) z[i] = kgl_rng_normal(&rng);
    kgl_softmax_vec(z, N, p);
    kgl_softmax_jacobian(p, N, J);
    double max_err = 0;
    for (int k = 0; k < N; k++) {
        /* column k of J: ∂p/∂z_k */
        double orig = z[k], up = orig + h, down = orig - h;
        z[k] = up;
        kgl_softmax_vec(z, N, p_up);
        z[k] = down;
        kgl_softmax_vec(z, N, p_down);
        z[k] = orig;
        for (int i = 0; i < N; i++) {
            J_fd[i * N + k] = (p_up[i] - p_down[i]) / (up - down);
            kgl_keep_max(&max_err, fabs(J[i * N + k] - J_fd[i * N + k]));
        }
    }
    if (z_out) memcpy(z_out, z, sizeof z);
    if (J_out) memcpy(J_out, J, sizeof J);
    if (J_fd_out) memcpy(J_fd_out, J_fd, sizeof J_fd);
    return max_err;
}
