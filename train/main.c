/* main.c — build/kgl: one binary, one subcommand per job.
 *
 * The same sources built with -DKGL_FLOAT32 make build/kgl-f32, the program
 * in single precision. `--precision f32|f64`, anywhere after the command,
 * runs the command in the program of that precision: this one, or the other
 * one beside it (kgl and kgl-f32 live in one folder). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"train", cmd_train, "train the layer on triples (default: the academic world)"},
    {"eval", cmd_eval, "filtered ranking metrics of a saved model"},
    {"grad", cmd_grad, "full-batch loss and every parameter's gradient at a checkpoint"},
    {"heads", cmd_heads, "what each attention head looks at: specialisation, top-3, ablation, SVG"},
    {"saturation", cmd_saturation, "the softmax-saturation study: a grid of runs, CSV, SVG plots, summary"},
    {"gradcheck", cmd_gradcheck, "check every op and the whole layer against finite differences"},
#ifndef KGL_FLOAT32
    {"demo", cmd_demo, "the chapter on attention, re-derived by the engine, each claim checked"},
#endif
    {"bench", cmd_bench, "speed: training steps, evaluation, GEMM, memory (beside PyTorch: compare.sh)"},
    {"benchmark", cmd_benchmark, "UMLS, Kinship and Nations with the recorded configurations, beside published results"},
    {"predict", cmd_predict, "a saved model's top answers to (HEAD, REL, ?) or (?, REL, TAIL); a triple's ranks"},
    {"export", cmd_export, "a saved model's embeddings and contextual states as TSV (pandas, embedding projectors)"},
    {"split", cmd_split, "one triples file into train, valid and test, every valid/test entity and relation in train"},
};
#define N_COMMANDS (int)(sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: kgl COMMAND [OPTIONS]\n\n"
               "A transformer layer that learns the relations of a knowledge graph,\n"
               "on its own reverse-mode autodiff engine.\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s  %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-10s  %s\n", "version", "print the version (also: kgl --version)");
    fprintf(f, "\n'kgl COMMAND --help' describes a command's options; '--precision f32' after any\n"
               "command runs it in single precision (kgl-f32, beside this program; this one is %s).\n\n" EXIT_TABLE,
            KGL_PRECISION);
}

/* `--precision P` or `--precision=P` in argv[2..], P f32 or f64: returns
 * P, NULL when absent, or "" after printing what is wrong. With `strip` the
 * option leaves argv (argc updated): the commands other than train (which
 * reads it to know the precision was asked for) never see it. */
static const char *take_precision(int *argc, char **argv, bool strip)
{
    const char *p = NULL;
    int out = 2;
    for (int i = 2; i < *argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--precision") == 0) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "kgl %s: --precision needs a value: f32 or f64\n", argv[1]);
                return "";
            }
            v = argv[++i];
        } else if (strncmp(argv[i], "--precision=", 12) == 0) {
            v = argv[i] + 12;
        } else {
            argv[out++] = argv[i];
            continue;
        }
        if (!strip) out = i + 1; /* keep it (and its value) */
        if (strcmp(v, "f32") != 0 && strcmp(v, "f64") != 0) {
            fprintf(stderr, "kgl %s: --precision is f32 or f64, got '%s'\n", argv[1], v);
            return "";
        }
        if (p && strcmp(p, v) != 0) {
            fprintf(stderr, "kgl %s: --precision given twice (%s, then %s)\n", argv[1], p, v);
            return "";
        }
        p = v;
    }
    if (strip) {
        argv[out] = NULL;
        *argc = out;
    }
    return p;
}

/* Descriptors 0, 1 and 2 open before anything else is: a file opened while
 * one of them is closed (`2>&-`) would take its number, and the progress
 * lines meant for stderr would land inside it. A closed one becomes
 * /dev/null opened for reading only, so that writing to a closed stdout
 * still fails (EBADF) and is reported. */
static void standard_descriptors_open(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int got = open("/dev/null", O_RDONLY); /* the lowest free number: fd itself */
        if (got > fd) {
            dup2(got, fd);
            close(got);
        }
    }
}

/* After `--precision P` ran the program of P (cli_exec_precision marks the
 * environment with P): a program of the other precision there (a copy of
 * this one, a stale build) would run itself again for ever, or compute in
 * the wrong precision. Returns EXIT_USAGE after saying so, else 0; the mark
 * is removed either way, so that the programs this one runs (kgl
 * benchmark's) choose their own. */
static int precision_as_asked(const char *self)
{
    const char *asked = getenv(KGL_PRECISION_ASKED);
    if (!asked) return 0;
    bool wrong = strcmp(asked, KGL_PRECISION) != 0;
    if (wrong)
        fprintf(stderr, "kgl: %s is not the %s program (it computes in %s): rebuild it with make\n", self,
                strcmp(asked, "f32") == 0 ? "float32" : "float64", KGL_PRECISION);
    unsetenv(KGL_PRECISION_ASKED);
    return wrong ? EXIT_USAGE : 0;
}

/* Whether stdout is a pipe or socket that nobody reads any more, for a
 * failed write whose errno was not kept (stdio keeps only that one failed). */
static bool stdout_reader_gone(void)
{
    struct stat st;
    if (fstat(STDOUT_FILENO, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return false;
    struct pollfd p = {STDOUT_FILENO, POLLOUT, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

/* The end of every command: its results reached stdout, or it says they did
 * not, on stderr, and a status of 0 becomes 3 (a failure status the command
 * already has is kept: it says more). A reader that stopped reading
 * (EPIPE: `kgl train | head -1`) is not a failure: it chose to. Writes to
 * stderr are never checked: it is where failures are told. */
static int stdout_written(const char *cmd, int status)
{
    bool earlier = ferror(stdout);
    errno = 0;
    bool closing = fclose(stdout) != 0;
    int e = errno;
    if (!earlier && !closing) return status;
    if (e == EPIPE || (e == 0 && stdout_reader_gone())) return status;
    fprintf(stderr, "kgl%s%s: cannot write the results to standard output: %s\n", cmd ? " " : "", cmd ? cmd : "",
            e ? strerror(e) : "a write failed");
    return status == 0 ? EXIT_OUTPUT : status;
}

static int run(int argc, char **argv);

int main(int argc, char **argv)
{
    standard_descriptors_open();
    cli_default_signals(); /* SIGPIPE too: a reader gone is EPIPE, never the end of the work */
    int st = precision_as_asked(argv[0]);
    if (st) return st;
    st = run(argc, argv);
    return stdout_written(argc >= 2 && argv[1][0] != '-' ? argv[1] : NULL, st);
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        if (argc > 2) {
            fprintf(stderr, "kgl %s: takes no arguments, got '%s'\n", argv[1], argv[2]);
            return EXIT_USAGE;
        }
        printf("kgl %s\n", KGL_VERSION);
        return 0;
    }
    /* gradcheck reads --precision itself (f32 compares the float32 ops with
       these, the float64 reference) */
    if (strcmp(argv[1], "gradcheck") != 0) {
        bool keep = strcmp(argv[1], "train") == 0;
        const char *precision = take_precision(&argc, argv, !keep);
        if (precision && !*precision) return EXIT_USAGE;
        if (precision && strcmp(precision, KGL_PRECISION) != 0) {
            char why[32];
            snprintf(why, sizeof why, "--precision %s", precision);
            return cli_exec_precision(argv[1], precision, argc - 1, argv + 1, NULL, why, "");
        }
    }
#ifdef KGL_FLOAT32
    if (strcmp(argv[1], "demo") == 0) {
        fprintf(stderr, "kgl demo: the chapter's checks are exact to double round-off: run it in float64 (kgl demo)\n");
        return EXIT_USAGE;
    }
#endif
    kgl_set_out_of_memory_handler(out_of_memory);
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    /* the nearest command names, as for every unknown name */
    const char *names[N_COMMANDS + 1];
    for (int i = 0; i < N_COMMANDS; i++) names[i] = commands[i].name;
    names[N_COMMANDS] = "version";
    char hint[600];
    fprintf(stderr, "kgl: unknown command '%s'%s\nTry 'kgl --help'.\n", argv[1],
            cli_did_you_mean(argv[1], names, N_COMMANDS + 1, hint, sizeof hint));
    return EXIT_USAGE;
}
