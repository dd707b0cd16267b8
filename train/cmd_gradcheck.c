/* cmd_gradcheck.c — `kgl gradcheck`: every registered op, the whole layer
 * parameter by parameter, and the chapter's softmax-Jacobian experiment,
 * against central finite differences in double precision. Exit 1 on any
 * failure. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kgl.h"

#define JACOBIAN_H 1e-5
#define JACOBIAN_BOUND 1e-9 /* the chapter measured 3.65e-12 */

static const char help[] =
    "usage: kgl gradcheck [--seed N] [--op NAME] [--json]\n\n"
    "Checks the analytic gradient of every registered op, element by element,\n"
    "against central differences (f(x+h) - f(x-h)) / 2h of a random projection\n"
    "of the op's output, on seeded inputs of several shapes (including a\n"
    "saturated softmax, a fully masked row and logits of +-1000). Then checks the\n"
    "whole layer (n=13, d=8, H=2; without FFN, with FFN, with head\n"
    "supervision) parameter by parameter, and the explicit softmax Jacobian\n"
    "J = diag(p) - p p^T of 5 seeded logits against differences with h = 1e-5.\n\n"
    "relative error = |analytic - numeric| / max(|analytic|, |numeric|, 1e-3)\n\n"
    "  --seed N    seed of the inputs and projection weights (default 1)\n"
    "  --op NAME   check only this op (skips the layer and Jacobian checks)\n"
    "  --json      print {\"ops\":[...],\"layer\":[...],\"jacobian\":{...},\"pass\":...}\n"
    "exit status: 0 all pass, 1 a check failed, 2 usage error\n";

static void json_result(const kgl_check_result *r, const char *config)
{
    printf("{\"name\":");
    kgl_json_string(stdout, r->name);
    if (config) {
        printf(",\"config\":");
        kgl_json_string(stdout, config);
    }
    printf(",\"shapes\":");
    kgl_json_string(stdout, r->shapes);
    printf(",\"checks\":%ld,\"max_abs_err\":", r->checks);
    kgl_json_number(stdout, r->max_abs_err);
    printf(",\"max_rel_err\":");
    kgl_json_number(stdout, r->max_rel_err);
    printf(",\"tolerance\":");
    kgl_json_number(stdout, r->rel_tol);
    printf(",\"pass\":%s}", r->pass ? "true" : "false");
}

static void row(const kgl_check_result *r, const char *config)
{
    if (config) printf("%-34s ", config);
    printf("%-20s %7ld  %11.2e  %11.2e  %7.0e  %s  %s\n", r->name, r->checks, r->max_abs_err, r->max_rel_err,
           r->rel_tol, r->pass ? "PASS" : "FAIL", r->shapes);
    if (!r->pass) printf("  -> %s\n", r->why);
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

int cmd_gradcheck(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "gradcheck", argc, argv);
    a.help = help;
    uint64_t seed = 1;
    bool json = false;
    const char *only = NULL;
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
        } else {
            return cli_unknown(&a);
        }
    }

    bool all_pass = true;
    int failed_ops = 0, n_ops = 0;
    if (json) printf("{\"ops\":[");
    else printf("%-20s %7s  %11s  %11s  %7s  %s  %s\n", "op", "checks", "max abs err", "max rel err", "tol", "    ",
                "shapes");
    for (int i = 0; i < kgl_op_registry_count; i++) {
        const kgl_op *op = kgl_op_registry[i];
        if (only && strcmp(op->name, only) != 0) continue;
        kgl_check_result r;
        kgl_gradcheck_op(op, seed, &r);
        if (!r.pass) failed_ops++, all_pass = false;
        if (json) {
            if (n_ops) putchar(',');
            json_result(&r, NULL);
        } else {
            row(&r, NULL);
        }
        n_ops++;
    }
    if (json) printf("]");

    int failed_layer = 0;
    double jac_err = 0;
    bool jac_pass = true;
    if (!only) {
        if (json) printf(",\"layer\":[");
        else printf("\nwhole layer (n=13, d=8, H=2, 5 relations + reciprocals), parameter by parameter\n"
                    "%-34s %-20s %7s  %11s  %11s  %7s  %s  %s\n", "config", "parameter", "checks", "max abs err",
                    "max rel err", "tol", "    ", "shape");
        bool first = true;
        for (int w = 0; w < KGL_LAYER_CHECKS; w++) {
            kgl_check_result res[KGL_MAX_PARAMS];
            int n = kgl_layer_check(w, seed, res);
            for (int k = 0; k < n; k++) {
                if (!res[k].pass) failed_layer++, all_pass = false;
                if (json) {
                    if (!first) putchar(',');
                    json_result(&res[k], kgl_layer_check_name(w));
                } else {
                    row(&res[k], kgl_layer_check_name(w));
                }
                first = false;
            }
        }
        double z[5], J[25], J_fd[25];
        jac_err = kgl_softmax_jacobian_experiment(seed, JACOBIAN_H, z, J, J_fd);
        jac_pass = jac_err <= JACOBIAN_BOUND;
        if (!jac_pass) all_pass = false;
        if (json) {
            printf("],\"jacobian\":{\"logits\":[");
            for (int i = 0; i < 5; i++) {
                if (i) putchar(',');
                kgl_json_number(stdout, z[i]);
            }
            printf("],\"h\":1e-05,\"max_abs_err\":");
            kgl_json_number(stdout, jac_err);
            printf(",\"bound\":1e-09,\"pass\":%s}", jac_pass ? "true" : "false");
        } else {
            printf("\nsoftmax Jacobian J = diag(p) - p p^T of 5 seeded logits vs central differences (h = 1e-5):\n"
                   "  max |J - J_fd| = %.3e  (bound 1e-9; the chapter: 3.65e-12)  %s\n",
                   jac_err, jac_pass ? "PASS" : "FAIL");
        }
    }
    if (json) {
        printf(",\"pass\":%s}\n", all_pass ? "true" : "false");
    } else {
        printf("\n%d ops checked, %d failed", n_ops, failed_ops);
        if (!only) printf("; whole layer: %d parameter checks failed; Jacobian: %s", failed_layer, jac_pass ? "PASS" : "FAIL");
        printf("\ngradcheck: %s\n", all_pass ? "PASS" : "FAIL");
    }
    return all_pass ? 0 : 1;
}
