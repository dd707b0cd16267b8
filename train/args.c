/* args.c — option parsing for the subcommands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'kgl %s --help'.\n", a->cmd);
    va_end(ap);
    return EXIT_USAGE;
}

int cli_unknown(const cli_args *a)
{
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
