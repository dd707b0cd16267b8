/* cli_errors.c — the errors found when a new user tried kgl (issue 11, item
 * 6): an unknown command or word suggests the nearest, gradcheck --op lists
 * the ops, a file that is not safetensors says so, a checkpoint of other
 * triples opened on the embedded world asks for --train; and kgl --version. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 16], err[1 << 14];

TEST(cli_unknown_command_suggests_the_nearest)
{
    CHECK(run_kgl(T, "trian", out, sizeof out, err, sizeof err) == 2);
    if (!CHECK(strcmp(err, "kgl: unknown command 'trian'; did you mean 'train'?\nTry 'kgl --help'.\n") == 0))
        printf("    stderr: %s\n", err);
    CHECK(run_kgl(T, "hedas", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "did you mean 'heads'?") != NULL);
    /* nothing near: no guess */
    CHECK(run_kgl(T, "frobnicate", out, sizeof out, err, sizeof err) == 2);
    CHECK(strcmp(err, "kgl: unknown command 'frobnicate'\nTry 'kgl --help'.\n") == 0);
}

/* An unknown option's near matches come from the command's --help text. */
TEST(cli_unknown_option_suggests_the_nearest)
{
    CHECK(run_kgl(T, "train --validd v.tsv", out, sizeof out, err, sizeof err) == 2);
    if (!CHECK(strcmp(err, "kgl train: unknown option '--validd'; did you mean '--valid'?\nTry 'kgl train --help'.\n") == 0))
        printf("    stderr: %s", err);
    CHECK(run_kgl(T, "train --lr-shedule cosine", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "unknown option '--lr-shedule'; did you mean one of '--lr-schedule', ") != NULL);
    CHECK(run_kgl(T, "gradcheck --ops matmul", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "unknown option '--ops'; did you mean '--op'?") != NULL);
    CHECK(run_kgl(T, "train --zzzzzz", out, sizeof out, err, sizeof err) == 2);
    CHECK(strcmp(err, "kgl train: unknown option '--zzzzzz'\nTry 'kgl train --help'.\n") == 0);
}

/* Every command suggests from its own --help (none of them is left out). */
TEST(cli_every_command_suggests_its_own_options)
{
    static const char *const cases[][2] = {
        {"heads --chekpoint m.st", "kgl heads: unknown option '--chekpoint'; did you mean '--checkpoint'?"},
        {"grad --chekpoint m.st", "kgl grad: unknown option '--chekpoint'; did you mean '--checkpoint'?"},
        {"export --chekpoint m.st", "kgl export: unknown option '--chekpoint'; did you mean '--checkpoint'?"},
        {"eval --chekpoint m.st", "kgl eval: unknown option '--chekpoint'; did you mean '--checkpoint'?"},
        {"predict --chekpoint m.st", "kgl predict: unknown option '--chekpoint'; did you mean '--checkpoint'?"},
        {"saturation --seds 3", "kgl saturation: unknown option '--seds'; did you mean one of '--seeds', '--steps'?"},
        {"bench --trian x", "kgl bench: unknown option '--trian'; did you mean '--train'?"},
        {"benchmark --sedes 1", "kgl benchmark: unknown option '--sedes'; did you mean '--seeds'?"},
        {"demo --sed 1", "kgl demo: unknown option '--sed'; did you mean '--seed'?"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        CHECK(run_kgl(T, cases[k][0], out, sizeof out, err, sizeof err) == 2);
        if (!CHECK(strncmp(err, cases[k][1], strlen(cases[k][1])) == 0)) printf("    kgl %s: %s", cases[k][0], err);
    }
}

/* An unknown relation name suggests the nearest and lists them. */
TEST(cli_unknown_relation_suggests_the_nearest)
{
    static const char *const want =
        "no relation 'advise' in the triples; did you mean 'advises'? (they have: about, advises, affiliated, "
        "authored, cites)\n";
    CHECK(run_kgl(T, "train --steps 1 --relations advise", out, sizeof out, err, sizeof err) == 2);
    if (!CHECK(strstr(err, "kgl train: --relations: ") && strstr(err, want))) printf("    stderr: %s", err);
    CHECK(run_kgl(T, "train --steps 1 --supervise-heads advise=0", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl train: --supervise-heads: ") && strstr(err, want));
}

TEST(cli_version_prints_the_header_version)
{
    char want[64], parts[64];
    snprintf(want, sizeof want, "kgl %s\n", KGL_VERSION);
    snprintf(parts, sizeof parts, "%d.%d.%d", KGL_VERSION_MAJOR, KGL_VERSION_MINOR, KGL_VERSION_PATCH);
    CHECK(strcmp(parts, KGL_VERSION) == 0); /* the three numbers and the string agree */
    CHECK(run_kgl(T, "--version", out, sizeof out, err, sizeof err) == 0);
    CHECK(strcmp(out, want) == 0 && err[0] == 0);
    CHECK(run_kgl(T, "version", out, sizeof out, err, sizeof err) == 0);
    CHECK(strcmp(out, want) == 0);
    CHECK(run_kgl(T, "--help", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "  version ") != NULL);
    CHECK(run_kgl(T, "--version extra", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl --version: takes no arguments, got 'extra'") != NULL);
}

/* Word options list their words and guess the one meant. */
TEST(cli_word_errors_list_the_words)
{
    static const char *const cases[][2] = {
        {"train --scale sqr",
         "kgl train: --scale expects sqrt, none or a positive number, got 'sqr'; did you mean 'sqrt'?\n"},
        {"train --scale 0", "kgl train: --scale expects sqrt, none or a positive number, got '0'\n"},
        {"train --optimizer adm", "kgl train: --optimizer expects adam, sgd or adagrad, got 'adm'; did you mean 'adam'?\n"},
        {"train --optimizer rmsprop", "kgl train: --optimizer expects adam, sgd or adagrad, got 'rmsprop'\n"},
        {"train --lr-schedule cos",
         "kgl train: --lr-schedule expects constant, cosine or linear, got 'cos'; did you mean 'cosine'?\n"},
        {"train --temperature lern",
         "kgl train: --temperature expects fixed or learn, got 'lern'; did you mean 'learn'?\n"},
        /* numbers name their range */
        {"train --dim 0", "kgl train: --dim expects a whole number from 1 to 4096, got '0'\n"},
        {"train --dropout 1", "kgl train: --dropout expects a number from 0 to 0.99, got '1'\n"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        CHECK(run_kgl(T, cases[k][0], out, sizeof out, err, sizeof err) == 2);
        if (!CHECK(strncmp(err, cases[k][1], strlen(cases[k][1])) == 0))
            printf("    kgl %s\n    got:  %s    want: %s", cases[k][0], err, cases[k][1]);
    }
    /* the words still work, and so does a number for --scale */
    CHECK(run_kgl(T, "train --steps 1 --quiet --scale none --optimizer sgd --lr-schedule cosine --temperature learn",
                  out, sizeof out, err, sizeof err) == 0);
    CHECK(run_kgl(T, "train --steps 1 --quiet --scale 0.5", out, sizeof out, err, sizeof err) == 0);
}

TEST(cli_gradcheck_unknown_op_lists_the_ops)
{
    CHECK(run_kgl(T, "gradcheck --op matmull", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl gradcheck: no registered op is called 'matmull'; did you mean one of 'matmul', 'mul'?\n"
                      "The ops: matmul, ") != NULL);
    /* every op, in registry order: "a, b, ... y or z" */
    char list[4096] = "The ops: ";
    for (int i = 0; i < kgl_op_registry_count; i++) {
        const char *sep = i == 0 ? "" : i + 1 == kgl_op_registry_count ? " or " : ", ";
        strncat(list, sep, sizeof list - strlen(list) - 1);
        strncat(list, kgl_op_registry[i]->name, sizeof list - strlen(list) - 1);
    }
    strncat(list, "\n", sizeof list - strlen(list) - 1);
    if (!CHECK(strstr(err, list) != NULL)) printf("    want: %s    stderr: %s", list, err);
}

/* A triples file given as a checkpoint: its first 8 bytes read as a header
   length of 7161040502409928739 ("header length ... exceeds" before). */
TEST(cli_not_a_safetensors_file_says_so)
{
    const char *tsv = write_tmp(T, 0, "train.tsv", "alice\tadvises\tbob\n", 18);
    char cmd[1024], want[1200];
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s'", tsv);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    snprintf(want, sizeof want,
             "%s: not a safetensors file: it starts with text, not an 8-byte header length (is it a triples file?)\n",
             tsv);
    if (!CHECK(strcmp(err, want) == 0)) printf("    stderr: %s", err);
    /* binary garbage is not called text */
    const char *bin = write_tmp(T, 1, "x.bin", "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a", 10);
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s'", bin);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "not a safetensors file: its header length 578437695752307201 (the first 8 bytes) exceeds "
                      "the file size 10") != NULL);
}

/* A model of the user's own triples, then eval, heads and train --resume
   without --train: they compared it with the embedded academic world and
   reported the first name that differed. */
TEST(cli_checkpoint_of_other_triples_asks_for_train)
{
    const char *tsv = write_tmp(T, 0, "own.tsv", "a\tr\tb\nb\tr\tc\nc\tq\ta\n", 18);
    char ck[600], cmd[2048], want[1200];
    snprintf(ck, sizeof ck, "%s/own.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --train '%s' --steps 2 --quiet --save '%s'", tsv, ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(want, sizeof want,
             "%s: this checkpoint was trained on 3 entities and 2 relations, not on the embedded academic world (13 "
             "entities, 5 relations); give the triples files it was trained with (--train F, and --valid, --test if it "
             "had them)\n",
             ck);
    static const char *const uses[] = {"eval --checkpoint '%s'", "heads --checkpoint '%s'", "grad --out g.st --checkpoint '%s'",
                                       "train --steps 1 --resume '%s'"};
    for (size_t k = 0; k < sizeof uses / sizeof uses[0]; k++) {
        char use[700];
        snprintf(use, sizeof use, uses[k], ck);
        CHECK(run_kgl(T, use, out, sizeof out, err, sizeof err) == 2);
        if (!CHECK(strcmp(err, want) == 0)) printf("    kgl %s\n    stderr: %s", use, err);
    }
    /* with --train it opens */
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s' --train '%s'", ck, tsv);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    /* other triples given with --train keep the precise message */
    const char *other = write_tmp(T, 1, "other.tsv", "a\tr\tz\n", 6);
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s' --train '%s'", ck, other);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "the checkpoint has 3 entities, the triples have 2") != NULL ||
          strstr(err, "in the checkpoint but") != NULL);
    /* trained with a test file that names one more entity ('bb', sorting
       between b and c), opened with --train alone: the names differ at id 2,
       and the message says which files to give */
    const char *tsv2 = write_tmp(T, 2, "two.tsv", "a\tr\tb\nb\tr\tc\n", 12);
    const char *test2 = write_tmp(T, 3, "test2.tsv", "a\tr\tbb\n", 7);
    snprintf(cmd, sizeof cmd, "train --train '%s' --test '%s' --steps 1 --quiet --save '%s'", tsv2, test2, ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint '%s' --train '%s'", ck, tsv2);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    if (!CHECK(strstr(err, "entity 2 is 'bb' in the checkpoint but 'c' in the triples (ids number the names of every "
                           "file a model was trained with: give the same --train, --valid and --test)") != NULL))
        printf("    stderr: %s", err);
    /* a checkpoint of the academic world still opens without --train */
    snprintf(cmd, sizeof cmd, "train --steps 2 --quiet --save '%s'", ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "eval --checkpoint '%s'", ck);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
}

/* A short last batch is warned about, even with --quiet, with the batch
 * size that makes the batches equal (the academic world has 42 examples:
 * batches of 40 leave 2; 21 leaves none; 30 leaves 12, not under an eighth). */
TEST(cli_short_last_batch_is_warned_about)
{
    CHECK(run_kgl(T, "train --steps 1 --quiet --batch 40", out, sizeof out, err, sizeof err) == 0);
    if (!CHECK(strstr(err, "kgl train: warning: each epoch of 42 examples ends with a batch of 2 (the others 40)") !=
               NULL))
        printf("    stderr: %s\n", err);
    CHECK(strstr(err, "--batch 21 makes the 2 batches equal") != NULL);
    CHECK(run_kgl(T, "train --steps 1 --quiet --batch 21", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "warning") == NULL);
    CHECK(run_kgl(T, "train --steps 1 --quiet --batch 30", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(err, "warning") == NULL);
}
