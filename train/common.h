/* common.h — what train, eval, grad and heads share: loading the triples,
 * choosing relations, parsing head supervision, printing metrics. */
#ifndef KGL_COMMON_H
#define KGL_COMMON_H

#include "cli.h"
#include "kgl.h"
#include "progress.h"

/* The files a command reads; train == NULL means the embedded academic world. */
typedef struct data_args {
    const char *train, *valid, *test;
    const char *relations; /* --relations a,b (NULL: all) */
} data_args;

/* Triples in use after --relations: one array per split (train, valid, test). */
typedef struct data_view {
    kgl_dataset ds;
    bool *use_relation; /* [m] */
    kgl_triple *split[3];
    int n[3];
    bool present[3];
    const char *name[3]; /* "train", "valid", "test" */
    bool embedded_world; /* no --train: the training triples are the embedded academic world */
} data_view;

/* The option at a, a row of kgl_train_options (kgl_train_option_named), into
 * its field of cfg, st or run by the row's kind: the one parser of kgl
 * train's table, which kgl bench shares for the model's rows. The last value
 * wins; false after reporting. */
bool table_option(cli_args *a, const kgl_option *row, kgl_config *cfg, kgl_train_state *st, kgl_run_options *run);
/* Parses a data option (--train/--valid/--test/--relations); true if it was one. */
bool data_option(cli_args *a, data_args *d, int *status);
/* Loads and filters. On failure prints the error and returns 2 (input error). */
int data_load(const char *cmd, const data_args *d, data_view *v, bool quiet);
void data_free(data_view *v);
/* The splits to rank (chosen[3]): those --splits named (named[], none:
 * every split given). A split named but not given is reported ("kgl CMD:
 * --splits names valid, which was not given (--valid F)") and returns
 * false. kgl eval's and kgl train's rule. */
bool data_splits_chosen(const char *cmd, const data_view *v, const bool *named, bool *chosen);

/* "advises=0,authored=1" → head_of[m] (-1 elsewhere; kgl_supervision_parse,
 * kgl/model.h). Returns false after printing "kgl CMD: --supervise-heads: ...". */
bool parse_supervision(const char *cmd, const char *spec, const kgl_dataset *ds, int heads, int *head_of);

/* The options every command that reads a saved model takes: the data
 * options, --checkpoint F, --member K (one model of an ensemble; leave
 * *member at -1 for none) and --json. Returns -1 if `a` is none of them,
 * 0 when it was parsed, or an exit status after reporting a usage error. */
int model_cmd_option(cli_args *a, data_args *d, const char **checkpoint, long *member, bool *json);
/* Loads the triples, then the checkpoint's model for them (the checkpoint
 * stays open until kgl_checkpoint_close): F itself, or with member K > 0 the
 * K-th file F's metadata lists (kgl train --ensemble), which must be of F's
 * save (the same run_id, or none in either); A,B,... is read as its model
 * K (0 without --member). *choice says which file was opened and which
 * member of how many it is (kgl_model_open_member). Returns 0, or an exit
 * status after reporting; on failure nothing needs freeing. */
int open_model(const char *cmd, const data_args *d, const char *checkpoint, long member, kgl_model_choice *choice,
               data_view *v, kgl_model *m, kgl_checkpoint *ck);
/* The same for --json: the fields "ensemble":10,"member":0 (1 and 0 for a model of its own). */
void json_model_choice(kgl_json_writer *w, const kgl_model_choice *c);

/* Opens the models a --checkpoint names (kgl_model_set_open, kgl/model.h:
 * one file with the members its metadata lists, or A,B,...; one save's)
 * (member >= 0: only model `member` of them, 0 for the file
 * named, k for the k-th it lists or the k-th of A,B,...; -1: all) for the
 * loaded triples v, or, with v NULL, with the names of
 * the first checkpoint (into *names, a dataset without triples; free it
 * with kgl_dataset_free after kgl_model_set_close). Returns 0, or an exit
 * status after reporting (nothing left open). */
int model_set_open(const char *cmd, const char *spec, int member, const data_view *v, kgl_dataset *names,
                   kgl_model_set *ms);

/* --candidate-states L given to kgl eval or kgl predict: read into *lambda
 * (0 to 1e6). Returns -1 when a's option is another, else 0 or EXIT_USAGE. */
int candidate_states_option(cli_args *a, double *lambda);
/* The candidates' side of every model of ms set to lambda (< 0: each keeps
 * its checkpoint's): an evaluation-time choice (README, "The candidates' side
 * of a head question"), so a model trained without it can be ranked with it.
 * Refuses (EXIT_USAGE, after reporting) a model that does not ask the
 * relation (--query-relation); notes on stderr each value it changes. */
int set_candidate_states(const char *cmd, kgl_model_set *ms, double lambda);

/* Whether the n_out outputs (cli_file, output set) are files of their own:
 * none is a triples file d names, nor one of the n_models checkpoint files
 * opened for --checkpoint spec (an ensemble's members, --member K's file),
 * nor another output (cli_files_distinct). Otherwise prints "kgl CMD:
 * --ranks c.st is the same file as --checkpoint c.st, ..." and returns false
 * (EXIT_USAGE), before anything is computed or written. */
bool outputs_distinct(const char *cmd, const data_args *d, const char *spec, char *const *models, int n_models,
                      const cli_file *outputs, int n_out);

/* Opens a checkpoint for the loaded triples (kgl_checkpoint_open); prints
 * the error and returns 2 on failure. A checkpoint of other triples opened
 * on the embedded world (no --train) is reported as such: "F: this
 * checkpoint was trained on N entities and M relations, not on the embedded
 * academic world (...); give the triples files it was trained with ...". */
int checkpoint_open(const char *path, const data_view *v, kgl_checkpoint *ck);
/* Opens a checkpoint for the loaded triples and builds its model. Prints the
 * error and returns 2 on failure; the checkpoint stays open (for its state)
 * until kgl_checkpoint_close. */
int model_load(const char *path, const data_view *v, kgl_model *m, kgl_checkpoint *ck);
/* Whether the model's attention, states and readout scores are finite
 * (kgl_model_finite, kgl/model.h); otherwise prints "WHERE: ... (tensor
 * NAME) ..." and returns false. */
bool model_finite(const char *where, const kgl_model *m);

/* Memory (memory.c): the estimate of a run (kgl_memory_needed, kgl/model.h)
 * against what this process may use (kgl_memory_available, kgl/engine.h). */
/* Whether run `r` fits: if not, prints "kgl CMD: this run needs about X
 * ..., this machine has Y available" (or "this process has Y available
 * under LIMIT"; amounts in MB below a gigabyte) and, with r->options, what
 * would fit instead (the largest --dim, --batch and --ensemble that do,
 * --precision f32 and --context graph when their estimates do), and returns
 * false (exit status 2). With `say`, a
 * run that fits and needs MEMORY_SAY_FROM bytes or more says its estimate
 * before it starts (kgl train without --quiet or --json): a wide readout
 * with the neighbourhood context on a dense graph takes gigabytes. */
#define MEMORY_SAY_FROM 1e9
bool memory_fits(const char *cmd, const kgl_memory_run *r, bool say);
/* The library's out-of-memory handler (main sets it): removes the temporary
 * files being written, prints "kgl: out of memory: WHAT (N bytes); ..." and
 * exits with status 2. Once, whichever thread comes first. */
_Noreturn void out_of_memory(const char *what, size_t bytes);
#endif
