/* main.c — build/kgl: one binary, one subcommand per job. */
#include <stdio.h>
#include <string.h>

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
    {"demo", cmd_demo, "the chapter on attention, re-derived by the engine, each claim checked"},
    {"bench", cmd_bench, "speed: training steps, evaluation, GEMM, memory (beside PyTorch: compare.sh)"},
    {"benchmark", cmd_benchmark, "UMLS and Nations with the recorded configurations, beside published results"},
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
    fprintf(f, "\n'kgl COMMAND --help' describes a command's options.\n\n" EXIT_TABLE);
}

int main(int argc, char **argv)
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
    cli_default_signals();
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
