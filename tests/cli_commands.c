/* cli_commands.c — the kgl program: usage errors, help, gradcheck's table, JSON
 * and exit status. */
#include "test.h"

static char out[1 << 16], err[1 << 14];

TEST(cli_help_lists_commands)
{
    CHECK(run_kgl(T, "--help", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "gradcheck") != NULL);
    CHECK(run_kgl(T, "", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "usage: kgl COMMAND") != NULL);
}

TEST(cli_bad_arguments_exit_2)
{
    CHECK(run_kgl(T, "frobnicate", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "unknown command 'frobnicate'") != NULL);
    CHECK(run_kgl(T, "gradcheck --no-such-flag", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl gradcheck: unknown option '--no-such-flag'") != NULL);
    CHECK(run_kgl(T, "gradcheck --seed banana", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--seed expects a whole number") != NULL);
    CHECK(run_kgl(T, "gradcheck --seed", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--seed needs a value") != NULL);
    CHECK(run_kgl(T, "gradcheck --op nope", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "no registered op is called 'nope'") != NULL);
    CHECK(run_kgl(T, "gradcheck --json=yes", out, sizeof out, err, sizeof err) == 2);
}

TEST(cli_gradcheck_table_and_exit_status)
{
    CHECK(run_kgl(T, "gradcheck --help", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "usage: kgl gradcheck") != NULL);
    CHECK(run_kgl(T, "gradcheck", out, sizeof out, err, sizeof err) == 0);
    for (int i = 0; i < kgl_op_registry_count; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n%-20s ", kgl_op_registry[i]->name);
        CHECK(strstr(out, line) != NULL); /* every registered op has a row */
    }
    CHECK(strstr(out, "FAIL") == NULL);
    CHECK(strstr(out, "\nFFN 16 + supervised heads          ffn.w2   ") != NULL);
    CHECK(strstr(out, "\ngraph, K 2, FFN, qk-norm, dropout  context.relation_emb") != NULL);
    CHECK(strstr(out, "max |J - J_fd| = ") != NULL);
    CHECK(strstr(out, "gradcheck: PASS") != NULL);
}

TEST(cli_gradcheck_json)
{
    CHECK(run_kgl(T, "gradcheck --json --seed 3", out, sizeof out, err, sizeof err) == 0);
    CHECK(strncmp(out, "{\"ops\":[{\"name\":\"matmul\"", 24) == 0);
    CHECK(strstr(out, "\"jacobian\":{") != NULL);
    CHECK(strstr(out, "\"pass\":false") == NULL);
    size_t n = strlen(out);
    CHECK(n > 2 && strcmp(out + n - 14, ",\"pass\":true}\n") == 0);
    /* it parses as JSON, and every op is in it (python3's json, if present) */
    const char *path = write_tmp(T, 0, "gc.json", out, n);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "command -v python3 >/dev/null || exit 77; python3 -c \"import json,sys; d=json.load(open('%s')); "
             "print(len(d['ops']), sum(o['checks'] for o in d['ops']), d['pass'], len(d['layer']))\"",
             path);
    int st = run_sh(T, cmd, out, sizeof out, err, sizeof err);
    if (st == 77) {
        test_skip(T, "python3 not installed");
        return;
    }
    CHECK(st == 0);
    int ops = 0, layer = 0;
    long checks = 0;
    char pass[8] = "";
    CHECK(sscanf(out, "%d %ld %7s %d", &ops, &checks, pass, &layer) == 4);
    CHECK(ops == kgl_op_registry_count);
    CHECK(checks > 500);
    CHECK(strcmp(pass, "True") == 0);
    CHECK(layer == 8 + 14 + 14 + 13 + 14 + 20 + 2 + 10 + 36 + 38 + 15 + 26 + 15 + 14 + 24); /* parameters of each whole-layer configuration */
}

TEST(cli_gradcheck_single_op)
{
    CHECK(run_kgl(T, "gradcheck --op layernorm", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\nlayernorm ") != NULL);
    CHECK(strstr(out, "\nmatmul ") == NULL);
    CHECK(strstr(out, "1 ops checked, 0 failed") != NULL);
}
