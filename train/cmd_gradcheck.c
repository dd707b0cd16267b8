/* cmd_gradcheck.c — `kgl gradcheck`: every registered op, the whole layer
 * parameter by parameter, and the chapter's softmax-Jacobian experiment,
 * against central finite differences in double precision. Exit 1 on any
 * failure. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kgl.h"

#define JACOBIAN_H 1e-5
#define JACOBIAN_BOUND 1e-9 /* the chapter measured 3.65e-12 */

static const char help[] =
    "usage: kgl gradcheck [--seed N] [--op NAME] [--json] [--precision f64|f32]\n\n"
    "Checks the analytic gradient of every registered op, element by element,\n"
    "against central differences (f(x+h) - f(x-h)) / 2h of a random projection\n"
    "of the op's output, on seeded inputs of several shapes (including a\n"
    "saturated softmax, a fully masked row and logits of +-1000). Then checks the\n"
    "whole layer (n=13, d=8, H=2) in 8 settings (without and with an FFN, head\n"
    "supervision, the complex readout, dropout, the graph context, no context,\n"
    "masked sources) parameter by parameter, and the explicit softmax Jacobian\n"
    "J = diag(p) - p p^T of 5 seeded logits against differences with h = 1e-5.\n\n"
    "relative error = |analytic - numeric| / max(|analytic|, |numeric|, 1e-3)\n\n"
    "  --seed N    seed of the inputs and projection weights (default 1)\n"
    "  --op NAME   check only this op (skips the layer and Jacobian checks)\n"
    "  --json      print {\"ops\":[...],\"layer\":[...],\"jacobian\":{...},\"pass\":...}\n"
    "  --precision f32  instead, the float32 twin: every op's forward output and\n"
    "              input gradients computed by kgl-f32 against these float64 ones,\n"
    "              on the same inputs rounded to float; normwise error\n"
    "              max|y32 - y64| / max|y64| within each op's float32 tolerance\n"
    "              (kgl-f32 gradcheck --emit-twin prints its raw values)\n"
    "exit status: 0 all pass, 1 a check failed, 2 usage error\n";


static void json_result(kgl_json_writer *w, const kgl_check_result *r, const char *config)
{
    kgl_json_begin_object(w);
    kgl_json_field_string(w, "name", r->name);
    if (config) kgl_json_field_string(w, "config", config);
    kgl_json_field_string(w, "shapes", r->shapes);
    kgl_json_field_int(w, "checks", r->checks);
    kgl_json_field_number(w, "max_abs_err", r->max_abs_err);
    kgl_json_field_number(w, "max_rel_err", r->max_rel_err);
    kgl_json_field_number(w, "tolerance", r->rel_tol);
    kgl_json_field_bool(w, "pass", r->pass);
    if (r->why[0]) kgl_json_field_string(w, r->pass ? "note" : "why", r->why);
    kgl_json_end_object(w);
}

/* The end of --json's object: "pass" and the line. */
static void json_pass_and_end(kgl_json_writer *w, bool all_pass)
{
    kgl_json_field_bool(w, "pass", all_pass);
    kgl_json_end_object(w);
    kgl_json_newline(w);
    kgl_json_writer_finish(w);
}

/* The parameter column holds a stack's longest name, layer1.attn.log_temperature. */
static void row(const kgl_check_result *r, const char *config)
{
    if (config) printf("%-34s %-27s", config, r->name);
    else printf("%-20s", r->name);
    printf(" %7ld  %11.2e  %11.2e  %7.0e  %s  %s\n", r->checks, r->max_abs_err, r->max_rel_err,
           r->rel_tol, r->pass ? "PASS" : "FAIL", r->shapes);
    if (!r->pass || r->why[0]) printf("  -> %s\n", r->why); /* a pass with a note: a gradient zero by design */
}

/* The twin's text (kgl_twin_write), every op's or one's. */
static void emit_twin(uint64_t seed, const char *only)
{
    for (int i = 0; i < kgl_op_registry_count; i++) {
        const kgl_op *op = kgl_op_registry[i];
        if (only && strcmp(op->name, only) != 0) continue;
        kgl_twin t;
        kgl_twin_op(op, seed, &t);
        kgl_twin_write(stdout, &t);
        kgl_twin_free(&t);
    }
}

/* kgl gradcheck --precision f32: the float32 program's twins against ours. */
static int twin_check(uint64_t seed, const char *only, bool json)
{
    char path[4096], seed_text[32];
    if (!cli_program_beside("kgl-f32", path, sizeof path)) {
        fprintf(stderr, "kgl gradcheck: --precision f32 runs kgl-f32, which is not beside this program (make builds both)\n");
        return EXIT_USAGE;
    }
    snprintf(seed_text, sizeof seed_text, "%" PRIu64, seed);
    char *argv[] = {path, "gradcheck", "--emit-twin", "--seed", seed_text, only ? "--op" : NULL, (char *)only, NULL};
    int status;
    char *out = cli_capture(argv, &status);
    if (!out || status != 0) {
        fprintf(stderr, "kgl gradcheck: %s gradcheck --emit-twin %s\n", path,
                out ? "failed" : strerror(errno));
        free(out);
        return 1;
    }
    bool all_pass = true;
    int n_ops = 0, failed = 0;
    kgl_json_writer w;
    kgl_json_writer_init(&w, stdout);
    if (json) {
        kgl_json_begin_object(&w);
        kgl_json_field_string(&w, "precision", "f32");
        kgl_json_key(&w, "ops");
        kgl_json_begin_array(&w);
    } else {
        printf("float32 (kgl-f32) against float64, every op's output and input gradients on the same inputs\n"
                "%-20s %7s  %11s  %11s  %7s  %s\n", "op", "values", "max abs err", "max rel err", "tol", "");
    }
    char *p = out;
    for (int i = 0; i < kgl_op_registry_count; i++) {
        const kgl_op *op = kgl_op_registry[i];
        if (only && strcmp(op->name, only) != 0) continue;
        kgl_twin ref, f32;
        kgl_twin_op(op, seed, &ref);
        kgl_check_result r;
        if (!kgl_twin_read(&p, &f32) || strcmp(f32.op, op->name) != 0) {
            memset(&r, 0, sizeof r);
            snprintf(r.name, sizeof r.name, "%s", op->name);
            r.rel_tol = op->check.f32_tol;
            snprintf(r.why, sizeof r.why, "kgl-f32 did not send this op's values");
        } else {
            kgl_twin_compare(&ref, &f32, op->check.f32_tol, &r);
        }
        kgl_twin_free(&ref);
        kgl_twin_free(&f32);
        if (!r.pass) failed++, all_pass = false;
        if (json) {
            json_result(&w, &r, NULL);
        } else {
            printf("%-20s %7ld  %11.2e  %11.2e  %7.0e  %s\n", r.name, r.checks, r.max_abs_err, r.max_rel_err, r.rel_tol,
                   r.pass ? "PASS" : "FAIL");
            if (!r.pass) printf("  -> %s\n", r.why);
        }
        n_ops++;
    }
    free(out);
    if (json) {
        kgl_json_end_array(&w);
        json_pass_and_end(&w, all_pass);
    } else {
        printf("\n%d ops compared, %d failed\ngradcheck --precision f32: %s\n", n_ops, failed, all_pass ? "PASS" : "FAIL");
    }
    return all_pass ? 0 : 1;
}

/* "no registered op is called 'X'; did you mean 'Y'? The ops: a, b, ..." */
static int unknown_op(const cli_args *a, const char *name)
{
    const char *names[256];
    int n = kgl_op_registry_count < 256 ? kgl_op_registry_count : 256;
    for (int i = 0; i < n; i++) names[i] = kgl_op_registry[i]->name;
    char hint[600], list[4096];
    return cli_usage_error(a, "no registered op is called '%s'%s\nThe ops: %s", name,
                           cli_did_you_mean(name, names, n, hint, sizeof hint), cli_word_list(names, n, list, sizeof list));
}

/* Every whole-layer configuration, parameter by parameter: a row each (or,
   with w, a JSON object each); returns how many checks failed. */
static int check_whole_layer(uint64_t seed, kgl_json_writer *w)
{
    int failed = 0;
    for (int c = 0; c < KGL_LAYER_CHECKS; c++) {
        kgl_check_result res[KGL_MAX_PARAMS];
        int n = kgl_layer_check(c, seed, res);
        for (int k = 0; k < n; k++) {
            failed += !res[k].pass;
            if (w) json_result(w, &res[k], kgl_layer_check_name(c));
            else row(&res[k], kgl_layer_check_name(c));
        }
    }
    return failed;
}

/* --json's "jacobian": the logits, h, the error, its bound, pass */
static void json_jacobian(kgl_json_writer *w, const double *z, double jac_err, bool jac_pass)
{
    kgl_json_key(w, "jacobian");
    kgl_json_begin_object(w);
    kgl_json_key(w, "logits");
    kgl_json_begin_array(w);
    for (int i = 0; i < 5; i++) kgl_json_put_number(w, z[i]);
    kgl_json_end_array(w);
    char h[32], bound[32]; /* the constants as short as they are written: 1e-05, not 1.0000000000000001e-05 */
    snprintf(h, sizeof h, "%g", JACOBIAN_H);
    snprintf(bound, sizeof bound, "%g", JACOBIAN_BOUND);
    kgl_json_key(w, "h");
    kgl_json_put_number_text(w, h);
    kgl_json_field_number(w, "max_abs_err", jac_err);
    kgl_json_key(w, "bound");
    kgl_json_put_number_text(w, bound);
    kgl_json_field_bool(w, "pass", jac_pass);
    kgl_json_end_object(w);
}

int cmd_gradcheck(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "gradcheck", argc, argv);
    a.help = help;
    uint64_t seed = 1;
    bool json = false, emit = false;
    const char *only = NULL, *precision = "f64";
    static const char *const precisions[] = {"f64", "f32"};
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (cli_is(&a, "--seed")) {
            if (!cli_u64(&a, &seed)) return EXIT_USAGE;
        } else if (cli_is(&a, "--json")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            json = true;
        } else if (cli_is(&a, "--op")) {
            if (!(only = cli_value(&a))) return EXIT_USAGE;
            if (!kgl_op_find(only)) return unknown_op(&a, only);
        } else if (cli_is(&a, "--precision")) {
            int k;
            if (!cli_word(&a, precisions, 2, &k)) return EXIT_USAGE;
            precision = precisions[k];
        } else if (cli_is(&a, "--emit-twin")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            emit = true;
        } else {
            return cli_unknown(&a);
        }
    }

    if (emit) { /* the float32 program's half of the twin check */
        if (strcmp(KGL_PRECISION, "f32") != 0)
            return cli_usage_error(&a, "--emit-twin is kgl-f32's (kgl gradcheck --precision f32 runs it)");
        emit_twin(seed, only);
        return 0;
    }
#ifdef KGL_FLOAT32
    /* the gradient check runs in float64, the reference: the float64 program */
    return cli_exec_precision("gradcheck", "f64", argc, argv, NULL, "the gradient check (float64)", "");
#endif
    if (strcmp(precision, "f32") == 0) return twin_check(seed, only, json);

    bool all_pass = true;
    int failed_ops = 0, n_ops = 0;
    kgl_json_writer w;
    kgl_json_writer_init(&w, stdout);
    if (json) {
        kgl_json_begin_object(&w);
        kgl_json_key(&w, "ops");
        kgl_json_begin_array(&w);
    } else {
        printf("%-20s %7s  %11s  %11s  %7s  %s  %s\n", "op", "checks", "max abs err", "max rel err", "tol", "    ",
                "shapes");
    }
    for (int i = 0; i < kgl_op_registry_count; i++) {
        const kgl_op *op = kgl_op_registry[i];
        if (only && strcmp(op->name, only) != 0) continue;
        kgl_check_result r;
        kgl_gradcheck_op(op, seed, &r);
        if (!r.pass) failed_ops++, all_pass = false;
        if (json) {
            json_result(&w, &r, NULL);
        } else {
            row(&r, NULL);
        }
        n_ops++;
    }
    if (json) kgl_json_end_array(&w);

    int failed_layer = 0;
    double jac_err = 0;
    bool jac_pass = true;
    if (!only) {
        if (json) {
            kgl_json_key(&w, "layer");
            kgl_json_begin_array(&w);
        } else {
            printf("\nwhole layer (n=13, d=8, H=2, 5 relations + reciprocals), parameter by parameter\n"
                    "%-34s %-27s %7s  %11s  %11s  %7s  %s  %s\n", "config", "parameter", "checks", "max abs err",
                    "max rel err", "tol", "    ", "shape");
        }
        failed_layer = check_whole_layer(seed, json ? &w : NULL);
        if (failed_layer) all_pass = false;
        double z[5], J[25], J_fd[25];
        jac_err = kgl_softmax_jacobian_experiment(seed, JACOBIAN_H, z, J, J_fd);
        jac_pass = jac_err <= JACOBIAN_BOUND;
        if (!jac_pass) all_pass = false;
        if (json) {
            kgl_json_end_array(&w); /* the layer */
            json_jacobian(&w, z, jac_err, jac_pass);
        } else {
            printf("\nsoftmax Jacobian J = diag(p) - p p^T of 5 seeded logits vs central differences (h = 1e-5):\n"
                   "  max |J - J_fd| = %.3e  (bound 1e-9; the chapter: 3.65e-12)  %s\n",
                   jac_err, jac_pass ? "PASS" : "FAIL");
        }
    }
    if (json) {
        json_pass_and_end(&w, all_pass);
    } else {
        printf("\n%d ops checked, %d failed", n_ops, failed_ops);
        if (!only) printf("; whole layer: %d parameter checks failed; Jacobian: %s", failed_layer, jac_pass ? "PASS" : "FAIL");
        printf("\ngradcheck: %s\n", all_pass ? "PASS" : "FAIL");
    }
    return all_pass ? 0 : 1;
}
