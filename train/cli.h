/* cli.h — what the subcommands of build/kgl share: option parsing that
 * reports mistakes as "kgl CMD: ..." with exit status 2. */
#ifndef KGL_CLI_H
#define KGL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One table of exit statuses for every command (README, "Exit status"). */
#define EXIT_NONFINITE 1    /* the loss (or a check) failed: non-finite numbers */
#define EXIT_USAGE 2        /* bad arguments or input, or a run that cannot fit in memory */
#define EXIT_OUTPUT 3       /* an output (checkpoint, log, picture, folder) could not be written */
#define EXIT_INTERRUPTED 130 /* SIGINT or SIGTERM (kgl train saves its work first) */
#define EXIT_TABLE                                                                                                 \
    "exit status: 0 done, 1 the loss became non-finite, 2 bad arguments or input (an output\n"                  \
    "path that cannot be written, or a run that needs more memory than is available), 3 an\n"                   \
    "output failed while it was written, 130 interrupted (Ctrl-C or SIGTERM)\n"

/* Iterates over "--name value", "--name=value" and bare flags. */
typedef struct cli_args {
    const char *cmd; /* for messages: "train" */
    int argc;
    char **argv;
    int i;
    const char *opt;    /* the current option, e.g. "--dim" */
    const char *inline_val;
    const char *help;   /* the command's --help text (optional): an unknown option's near matches come from it */
    int at;             /* argv index of the current option */
    /* argv[1..file_words] came from a file (a recipe): a mistake in one of
       them is reported as "file:line: " (file_line[k] is argv[k + 1]'s line) */
    const char *file;
    const int *file_line;
    int file_words;
} cli_args;

void cli_init(cli_args *a, const char *cmd, int argc, char **argv);
/* Advances to the next option; false at the end. A positional argument is
 * returned with opt set to it (callers reject what they do not expect). */
bool cli_next(cli_args *a);
bool cli_is(const cli_args *a, const char *name);
/* The option's value (inline or the next argument); NULL after reporting. */
const char *cli_value(cli_args *a);
/* Reports "kgl CMD: message" (with "file:line: " before the message when
 * the option came from a file) plus a hint and returns EXIT_USAGE. */
int cli_usage_error(const cli_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_unknown(const cli_args *a);
/* A flag given a value (--json=1) is a usage error. */
bool cli_flag(cli_args *a);

bool cli_int(cli_args *a, long lo, long hi, long *out);
bool cli_double(cli_args *a, double lo, double hi, double *out);
bool cli_u64(cli_args *a, uint64_t *out);
/* One of `words` (n of them): sets *index. Otherwise reports "--opt expects
 * a, b or c, got 'x'; did you mean 'b'?" (the hint when a word is near). */
bool cli_word(cli_args *a, const char *const *words, int n, int *index);
/* One of `words` (returns its index) or a number in [lo, hi] (returns -1
 * and sets *number); -2 after reporting "--opt expects a, b or a number
 * from lo to hi, got 'x'" (with the hint; number_is, when not NULL, says
 * what the number must be instead, e.g. "a positive number"). */
int cli_word_or_number(cli_args *a, const char *const *words, int n, double lo, double hi, const char *number_is,
                       double *number);
/* "; did you mean 'x'?" (or "one of 'x', 'y'") when some of the n words is
 * near `got` (kgl_near_matches), else "" — for every unknown-word message. */
const char *cli_did_you_mean(const char *got, const char *const *words, int n, char *buf, size_t cap);
/* --splits S,...: sets named[s] for each word of the comma-separated list
 * (train, valid, test; named[] is set, not cleared). Otherwise reports
 * "--splits: 'x' is not a split (train, valid, test)" and returns false. */
bool cli_splits(cli_args *a, const char *list, bool *named);
/* "a, b or c" into buf (for messages that list the words). */
const char *cli_word_list(const char *const *words, int n, char *buf, size_t cap);

/* Whether `path` can be written as an output file: not a folder nor a
 * block device, and its folder exists and is writable; or a character
 * device or a pipe that is writable (kgl_outfile writes it as it is).
 * Otherwise prints "kgl CMD: WHAT path: why"
 * and returns false. Found before any work, that is a bad argument: the
 * caller exits EXIT_USAGE (EXIT_OUTPUT is for a write that fails later). */
bool cli_output_ok(const char *cmd, const char *what, const char *path);
/* The same for an output folder: it exists and is writable, or its parent
 * is (it will be created). */
bool cli_output_dir_ok(const char *cmd, const char *what, const char *dir);
/* A file a command reads or writes, for cli_files_distinct. */
typedef struct cli_file {
    const char *what;        /* the option, for messages: "--train" */
    const char *path;        /* NULL: not given (skipped) */
    bool output;
    const char *may_replace; /* an output: the option of an input it may overwrite
                                (--save over --resume), or NULL */
} cli_file;
/* Whether every output is a file of its own: not an input, which writing it
 * would destroy, nor another output. Two paths are one file when both exist
 * and have the same device and inode (a link, "./x" and "x"), or when
 * neither exists and their folders resolve to one; but two outputs may be
 * one character device (--log /dev/null --save /dev/null: a device keeps
 * nothing to destroy). Otherwise prints "kgl
 * CMD: --save tr.tsv is the same file as --train tr.tsv, ..." and returns
 * false: a bad argument (EXIT_USAGE), found before anything is written. */
bool cli_files_distinct(const char *cmd, const cli_file *files, int n);
/* SIGINT and SIGTERM: remove the temporary files being written
 * (kgl_tmp_remove_all) and exit with status 130. Every command runs with
 * these; kgl train installs its own (stop after the current step). SIGPIPE
 * is ignored: a write to a reader that is gone fails with EPIPE instead of
 * ending the process, so the work asked for goes on and is saved. */
/* handler for SIGINT and SIGTERM (Ctrl-C, kill): the commands that stop
   cleanly install their own over cli_default_signals'. */
void cli_on_stop_signals(void (*handler)(int));
void cli_default_signals(void);

/* The two precisions' programs live in one folder (README, "Precision"):
 * the path of `name` ("kgl" or "kgl-f32") beside the running program, if it
 * is there and executable. */
bool cli_program_beside(const char *name, char *path, size_t cap);
/* Runs command `cmd` (args[0 .. n_args): "train" and its options) in the
 * program of `precision` beside this one, with `extra` (NULL, or two more
 * words) after them; returns EXIT_USAGE only when it cannot, having said
 * "kgl CMD: WHY runs PROGRAM, which is not beside this program (make builds
 * both)HINT" or why it could not run it. The environment variable
 * KGL_PRECISION_ASKED tells that program the precision asked for: one of
 * the other precision stops at once (main.c) rather than run itself again. */
#define KGL_PRECISION_ASKED "KGL_PRECISION_ASKED"
int cli_exec_precision(const char *cmd, const char *precision, int n_args, char **args, const char *const *extra,
                       const char *why, const char *hint);
/* Runs argv[0] (a path) with argv, its stdout captured: the output (malloc'd,
 * NUL-terminated) and *status its exit status (-1 if it did not exit), or
 * NULL with errno when it could not run. stderr passes through. */
char *cli_capture(char *const *argv, int *status);

int cmd_gradcheck(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_grad(int argc, char **argv);
int cmd_heads(int argc, char **argv);
int cmd_saturation(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_benchmark(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_split(int argc, char **argv);

#endif
