/* cmd_train.c — `kgl train`: the layer learns the triples. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

/* --help: these paragraphs around the options, which the table of
   options (kgl_train_options) lists, group by group. */
static const char help_intro[] =
    "usage: kgl train [OPTIONS]\n\n"
    "Trains the layer on triples (default: the embedded academic world,\n"
    "data/academic.tsv) and prints filtered ranking metrics per relation, the step\n"
    "at which the training triples were fit, and the head-specialisation matrix.\n\n";
static const char help_outro[] =
    "\nProgress is one line on stderr for the whole run (an ensemble: all its members'\n"
    "steps) with the time elapsed and an ETA: redrawn in place on a terminal, else a\n"
    "line at each tenth of the steps and every KGL_PROGRESS_SECONDS (default 60).\n"
    "Ctrl-C (or SIGTERM) stops after the current step, writes --save and --log, prints\n"
    "the results so far and exits 130; --resume from that checkpoint continues exactly.\n"
    "A second Ctrl-C stops at once (temporary files removed, nothing written).\n"
    "Output paths are checked before the first step; a log that cannot be written is\n"
    "reported at once and training and --save go on (exit status 3).\n\n" EXIT_TABLE;

/* The help's column of descriptions; a longer usage is followed by two spaces. */
#define HELP_COLUMN 23

/* The whole --help, written once from the table. */
static const char *train_help(void)
{
    static char text[16384];
    if (text[0]) return text;
    size_t n = 0, cap = sizeof text;
#define APPEND(...) (n += (size_t)snprintf(text + n, n < cap ? cap - n : 0, __VA_ARGS__))
    APPEND("%s", help_intro);
    for (int k = 0; k < kgl_n_train_options; k++) {
        const kgl_option *o = &kgl_train_options[k];
        if (o->heading) APPEND("%s\n", o->heading);
        if (!o->help) continue; /* on the line of the row before */
        char usage[128];
        size_t u = 0;
        for (int j = k; j < kgl_n_train_options && (j == k || !kgl_train_options[j].help); j++) /* "--valid F, --test F" */
            u += (size_t)snprintf(usage + u, u < sizeof usage ? sizeof usage - u : 0, "%s%s%s%s", j > k ? ", " : "",
                                  kgl_train_options[j].name, kgl_train_options[j].arg ? " " : "",
                                  kgl_train_options[j].arg ? kgl_train_options[j].arg : "");
        APPEND("  %-*s  ", HELP_COLUMN - 4, usage);
        for (const char *line = o->help;;) { /* continuation lines in the same column */
            size_t len = strcspn(line, "\n");
            APPEND("%.*s\n", (int)len, line);
            if (!line[len]) break;
            line += len + 1;
            APPEND("%*s", HELP_COLUMN, "");
        }
    }
    APPEND("%s", help_outro);
#undef APPEND
    if (n >= cap) { /* a broken invariant: the table outgrew the buffer */
        fprintf(stderr, "kgl train: the help is longer than %zu bytes\n", cap);
        abort();
    }
    return text;
}

typedef struct train_opts {
    kgl_config cfg;       /* the model options */
    kgl_train_state st;   /* the training options, as a checkpoint keeps them */
    kgl_run_options run;  /* the rest: this run's */
    bool given[KGL_TRAIN_OPTIONS_MAX]; /* given[k]: the row k option was given (the last value wins) */
    data_args data;       /* run's triples files, as data_load reads them */
    bool precision_given; /* --precision (main.c has chosen the program by it) */
    bool report[3];       /* the splits the final report ranks: those named, else every split given */
} train_opts;

/* Whether option `name` was given (on the command line or in the recipe). */
static bool given(const train_opts *o, const char *name)
{
    const kgl_option *row = kgl_train_option_named(name, strlen(name));
    return o->given[row - kgl_train_options];
}

/* --supervise-heads as given or resumed (an empty value given is still given), or NULL. */
static const char *supervision(const train_opts *o)
{
    return given(o, "--supervise-heads") || o->st.supervise[0] ? o->st.supervise : NULL;
}

/* Returns -1 to go on, or an exit status. With a recipe r, argv[1..r->argc]
   are its words: a mistake in one is reported with its file:line. */
static int parse(int argc, char **argv, train_opts *o, const kgl_recipe *r)
{
    memset(o, 0, sizeof *o);
    kgl_config_defaults(&o->cfg);
    kgl_train_state_defaults(&o->st);
    kgl_run_options_defaults(&o->run);
    cli_args a;
    cli_init(&a, "train", argc, argv);
    a.help = train_help();
    if (r) a.file = r->file.name, a.file_line = r->line, a.file_words = r->argc;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(train_help(), stdout);
            return 0;
        }
        const kgl_option *row = kgl_train_option_named(a.opt, strlen(a.opt));
        if (!row) return cli_unknown(&a);
        if (!table_option(&a, row, &o->cfg, &o->st, &o->run)) return EXIT_USAGE;
        o->given[row - kgl_train_options] = true;
    }
    kgl_optim_select(&o->st.optim, o->st.optim.kind); /* the chosen optimiser's constants */
    o->data = (data_args){o->run.train, o->run.valid, o->run.test, o->run.relations};
    o->precision_given = given(o, "--precision");
    /* main.c ran the program of the precision the command line asks for; a
       recipe may ask the other, and apply_recipe runs it */
    if (!r && strcmp(o->run.precision, KGL_PRECISION) != 0) { /* main.c's dispatch failed: never here */
        fprintf(stderr, "kgl train: --precision %s runs %s\n", o->run.precision,
                strcmp(o->run.precision, "f32") == 0 ? "kgl-f32" : "kgl");
        return EXIT_USAGE;
    }
    if (o->st.optim.momentum != 0 && o->st.optim.kind != KGL_OPT_SGD) {
        fprintf(stderr, "kgl train: --momentum applies to --optimizer sgd\n");
        return EXIT_USAGE;
    }
    if (o->run.eval_every && !o->data.valid) {
        fprintf(stderr, "kgl train: --eval-every ranks the --valid triples: give --valid F\n");
        return EXIT_USAGE;
    }
    if (o->run.ensemble > 1 && o->run.resume_path) {
        fprintf(stderr, "kgl train: --resume continues one model; --ensemble trains several from the start\n");
        return EXIT_USAGE;
    }
    if (o->run.patience && !o->run.eval_every) {
        fprintf(stderr, "kgl train: --patience counts evaluations: give --eval-every K\n");
        return EXIT_USAGE;
    }
    return -1;
}

/* With --resume the model comes from the checkpoint: a model option given on
   the command line must agree with it; training options not given default
   to the checkpoint's (kgl_options_merge_checkpoint). */
static int merge_checkpoint(train_opts *o, const kgl_checkpoint *ck)
{
    const kgl_option *differs = kgl_options_merge_checkpoint(&o->cfg, &o->st, o->given, ck);
    if (!differs) return -1;
    fprintf(stderr, "kgl train: %s differs from the checkpoint %s, whose model it resumes\n", differs->name,
            o->run.resume_path);
    return EXIT_USAGE;
}

/* The recipe's options as the run uses them: one the command line gives too
   is shown with the command line's value (which wins, coming later) and
   named at the end. */
static void print_recipe(const kgl_recipe *r, const kgl_recipe_vars *vars, int argc, char **argv)
{
    char line[8192], given[1024];
    kgl_recipe_as_run(r, argc, argv, line, sizeof line, given, sizeof given);
    fprintf(stderr, KGL_RECIPE_SAID "%s (%ld entities, %ld relations, %ld" KGL_RECIPE_SAID_OPTIONS "%s%s%s%s\n",
            r->file.name, vars->n_entities, vars->n_relations, vars->n_train, line, given[0] ? " (" : "",
            given, given[0] ? " from the command line)" : "");
}

/* --recipe: the file's options (formulas computed from the loaded triples)
   go before the command line's, so that those given by hand win; the whole
   is parsed again. Returns -1 to go on, or an exit status. */
static int apply_recipe(int argc, char **argv, train_opts *o, const kgl_recipe_vars *vars)
{
    if (o->run.resume_path) {
        fprintf(stderr, "kgl train: --recipe starts a run; --resume continues one with its checkpoint's options\n");
        return EXIT_USAGE;
    }
    static kgl_recipe r; /* large; one per process */
    char err[1024];
    if (!kgl_recipe_load(&r, o->run.recipe_path, vars, err, sizeof err)) {
        fprintf(stderr, "kgl train: %s\n", err);
        return EXIT_USAGE;
    }
    int n;
    char **words = kgl_recipe_command_line(&r, argc, argv, &n);
    int st = parse(n, words, o, &r); /* o points at the words themselves, which live in r for the whole run */
    free(words);
    if (st < 0 && strcmp(o->run.precision, KGL_PRECISION) != 0) {
        /* the recipe asks the other precision (and the command line does
           not overrule it, its words coming last): run the whole command
           there, as main.c does for a --precision on the command line */
        char why[4200];
        snprintf(why, sizeof why, "%s's --precision %s", o->run.recipe_path, o->run.precision);
        return cli_exec_precision("train", o->run.precision, argc, argv, NULL, why, "");
    }
    /* on stderr with --json too: a benchmark's run keeps it in its .err, and
       kgl benchmark reads it from the check to show what the recipe chose */
    if (st < 0 && !o->run.quiet) print_recipe(&r, vars, argc, argv);
    return st;
}

/* The one progress line of a run (progress.h): the steps of the model, or
   of every member of an ensemble, however many train at once. A member's
   details (each logged step, each evaluation) go to its --log file; the
   screen gets the line and, for an ensemble, each member's summary as it
   finishes. */
typedef struct train_line {
    progress line;
    bool on;             /* not --quiet, and not --json without --progress */
    int members, jobs;   /* the ensemble, and how many of it train at once */
    atomic_int finished; /* members done */
} train_line;

/* What the program keeps of a member beside the library's kgl_run_member:
   its files and what it has shown. */
typedef struct member_out {
    char *log_path, *save_path; /* this member's (NULL: none) */
    kgl_run_log log;            /* its --log (kgl_run_log_open: not open without one) */
    bool output_failed;         /* its log could not be written */
    double t0;                  /* the log's clock */
    long shown_step;            /* the step of the model's last line shown */
} member_out;

/* The run's callbacks' context (kgl_run_callbacks). */
typedef struct train_ctx {
    train_opts *o;
    data_view *v;
    train_line *tl;
    member_out *out; /* [members] */
} train_ctx;

/* The run's line, with `work` more steps done and `more` more to do (a
   member that stops early takes back the steps it will not take); `force`:
   the last line. A model's: "step 108/300, 0.3s elapsed, ETA 0.6s; loss
   2.216028, train H@1 0.860, valid MRR 0.6886 (best 0.6886 at step 100)",
   or the evaluation under way; an ensemble's: "ensemble 10 models, 2 at a
   time: 3400/30000 steps, 1m12s elapsed, ETA 8m31s; 3 of 10 done", the
   steps of all its members. */
static void show_progress(train_ctx *c, kgl_run_member *m, long work, long more, bool force)
{
    train_line *tl = c->tl;
    progress_at at;
    /* counted (and sent to kgl benchmark, progress_send_steps) with no line shown too */
    bool due = progress_due(&tl->line, (double)work, (double)more, force, now_seconds(), &at);
    if (!tl->on || !due) return;
    char text[PROGRESS_LINE_MAX], times[128];
    size_t n = 0, cap = sizeof text;
#define APPEND(...) (n += (size_t)snprintf(text + n, n < cap ? cap - n : 0, __VA_ARGS__), n = n < cap ? n : cap - 1)
    progress_times(&at, times, sizeof times);
    if (tl->members > 1) {
        char jobs[32] = "one at a time";
        if (tl->jobs > 1) snprintf(jobs, sizeof jobs, "%d at a time", tl->jobs);
        APPEND("ensemble %d models, %s: %.0f/%.0f steps, %s; %d of %d done", tl->members, jobs, at.done, at.total,
               times, atomic_load(&tl->finished), tl->members);
    } else { /* the times first: a terminal narrower than the line cuts its end */
        int width = snprintf(NULL, 0, "%ld", m->last_step); /* a steady line in place */
        APPEND("step %*ld/%ld, %s; loss %.6f", width, m->step, m->last_step, times, m->loss);
        if (m->to_rank) {
            APPEND(", ranking valid %ld/%ld", m->ranked, m->to_rank);
        } else {
            /* ranking the training triples for each line: only when cheap; else the last fit check's */
            if (m->track_fit) APPEND(", train H@1 %.3f", kgl_run_train_hits1(m));
            else if (m->ev_step >= 0) APPEND(", train H@1 %.3f (step %ld)", m->ev.both.hits1, m->ev_step);
            if (m->evaluations) APPEND(", valid MRR %.4f (best %.4f at step %ld)", m->last_valid_mrr, m->best_mrr,
                                       m->best_step);
        }
        c->out[m->index].shown_step = m->step;
    }
#undef APPEND
    progress_show(&tl->line, text);
}

/* kgl_run's progress: after each step (work 1), and while valid is ranked
   (a big graph takes a while, and the line says so). */
static void on_progress(void *ctx, kgl_run_member *m, long work) { show_progress(ctx, m, work, 0, false); }

/* A member has finished: an ensemble's says how it went, once, above the
   line; the steps it did not take leave the total; and the line shows it
   (a model's last line, unless that step's is on the screen already). */
static void member_done(train_ctx *c, kgl_run_member *m)
{
    train_line *tl = c->tl;
    bool ensemble = tl->members > 1;
    atomic_fetch_add(&tl->finished, 1);
    if (tl->on && ensemble) {
        char sel[128] = "", times[32];
        format_duration(m->seconds, times, sizeof times);
        if (c->o->run.eval_every && !m->evaluations)
            snprintf(sel, sizeof sel, "  no evaluation ran");
        else if (c->o->run.eval_every)
            snprintf(sel, sizeof sel, "  best valid MRR %.4f at step %ld", m->best_mrr, m->best_step);
        progress_print(&tl->line, "member %d  seed %llu  %ld steps in %s  final loss %.6f%s%s", m->index,
                       (unsigned long long)m->seed, m->steps_run, times, m->final_loss, sel,
                       m->stopped_early ? " (stopped early)" : "");
    }
    if (ensemble || m->step >= m->first_step) /* none for --steps 0 */
        show_progress(c, m, 0, m->step - m->last_step, ensemble || c->out[m->index].shown_step != m->step);
}

static bool open_log(train_ctx *c, kgl_run_member *m)
{
    member_out *out = &c->out[m->index];
    if (!out->log_path) return true;
    char err[4200];
    if (kgl_run_log_open(&out->log, out->log_path, m, c->v->use_relation, err, sizeof err)) return true;
    fprintf(stderr, "kgl train: the log %s\n", err);
    return false;
}

/* kgl_run's row: into the log, flushed (the row of a step the run stops
   at is written when the log is closed). A write error is reported at
   once, with its reason; the log is dropped and training (and --save) go on. */
static void on_row(void *ctx, kgl_run_member *m, long step, double loss, bool evaluated, bool stopping)
{
    train_ctx *c = ctx;
    member_out *out = &c->out[m->index];
    char err[4200];
    if (!kgl_run_log_write(&out->log, m, c->v->use_relation, step, loss, evaluated, stopping,
                           now_seconds() - out->t0, err, sizeof err))
        progress_print(&c->tl->line, "kgl train: step %ld: %s; training goes on without it", step, err);
}

/* fflush, fsync, then rename over the log path (as a checkpoint is written). */
static bool close_log(train_ctx *c, kgl_run_member *m)
{
    char err[4200];
    bool ok = kgl_run_log_close(&c->out[m->index].log, m, err, sizeof err);
    if (!ok && err[0]) fprintf(stderr, "kgl train: the log %s\n", err); /* "": a write failed, said then */
    return ok;
}

/* A warning, not hidden by --quiet: an epoch whose last batch is under an
 * eighth of the others (kgl_trainer_short_last_batch says why an eighth).
 * The model is trained as asked; the warning names the equal-batch size. */
static void warn_short_last_batch(const kgl_trainer *tr, progress *line)
{
    long last, equal, batches;
    if (!kgl_trainer_short_last_batch(tr, &last, &equal, &batches)) return;
    progress_print(line,
                   "kgl train: warning: each epoch of %ld %s ends with a batch of %ld (the others %ld), which takes "
                   "a full Adam step on a far noisier gradient; --batch %ld makes the %ld batches equal",
                   (long)tr->n_examples, tr->kvsall ? "queries" : "examples", last, (long)tr->cfg.batch, equal,
                   batches);
}

/* kgl_run's start: a member's model is ready. Warnings and notes on what
   it starts from, a resumed model checked, the log opened. */
static int on_start(void *ctx, kgl_run_member *m)
{
    train_ctx *c = ctx;
    const train_opts *o = c->o;
    if (m->index == 0) warn_short_last_batch(&m->tr, &c->tl->line);
    const kgl_checkpoint *ck = m->spec->resume;
    if (ck) {
        if (!model_finite(o->run.resume_path, &m->tr.model)) return EXIT_USAGE;
        if (o->st.optim.kind != ck->st.optim.kind && m->index == 0) /* kgl_run_train starts it with no state */
            fprintf(stderr, "kgl train: note: %s was trained with another optimiser; this one starts with no state\n",
                    o->run.resume_path);
        if (o->st.sched.kind != KGL_SCHED_CONSTANT && ck->st.step >= o->st.sched.total)
            fprintf(stderr,
                    "kgl train: note: the checkpoint's learning-rate decay ended at step %ld; these steps run at "
                    "its floor (%g x lr). --decay-steps T extends it.\n",
                    o->st.sched.total, o->st.sched.floor);
    }
    if (!open_log(c, m)) return EXIT_OUTPUT;
    c->out[m->index].t0 = now_seconds();
    return 0;
}

/* kgl_run's end: a member's steps are over. */
static void on_end(void *ctx, kgl_run_member *m)
{
    train_ctx *c = ctx;
    if (m->status == 1)
        progress_print(&c->tl->line,
                       "kgl train: step %ld: the loss is %s; training stopped before this step's update%s. "
                       "Try a smaller --lr, --init-scale or --scale.",
                       m->nonfinite_step, isnan(m->final_loss) ? "NaN" : "infinite",
                       c->o->run.save_path ? " and no checkpoint is written" : "");
    c->out[m->index].output_failed = !close_log(c, m);
    if (m->status == 0 && !m->halted) member_done(c, m);
}

/* SIGINT/SIGTERM: the first stops after the current step (kgl_run asks
   on_stop), the second at once, removing the temporary files. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    if (stop_signal) {
        kgl_tmp_remove_all();
        _exit(EXIT_INTERRUPTED);
    }
    stop_signal = sig;
    static const char msg[] = "\nkgl train: stopping after this step (again to stop at once)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
}

static bool on_stop(void *ctx)
{
    (void)ctx;
    return stop_signal != 0;
}

/* The report's model selection (kgl_run_selection_write): an ensemble's
   members alone (each ranked on every split given, under the ranking's
   progress line, what says which; kgl_run_member_write), or the one
   model's chosen step. */
static void print_selection(train_ctx *c, kgl_run *run, const kgl_model *const *models, const kgl_real *const *states,
                            progress *ranking, char *what, size_t what_cap)
{
    data_view *v = c->v;
    const train_opts *o = c->o;
    kgl_run_member *m0 = &run->member[0];
    kgl_run_selection_write(stdout, run);
    for (int k = 0; run->trained > 1 && k < run->trained; k++) {
        kgl_metrics alone[3];
        for (int s = 0; s < 3; s++) {
            if (!o->report[s]) continue;
            snprintf(what, what_cap, "%s for member %d", v->name[s], k);
            kgl_evaluate_ensemble(&models[k], &states[k], 1, &v->ds, v->split[s], v->n[s], &m0->ev);
            alone[s] = m0->ev.both;
        }
        progress_clear(ranking);
        kgl_run_member_write(stdout, run, k, v->name, o->report, alone);
    }
}

/* --json: each member of an ensemble alone, ranked on every split given. */
static void json_members(kgl_json_writer *w, train_ctx *c, kgl_run *run, const kgl_model *const *models,
                         const kgl_real *const *states, progress *ranking, char *what, size_t what_cap)
{
    const data_view *v = c->v;
    kgl_run_member *m0 = &run->member[0];
    kgl_json_key(w, "members");
    kgl_json_begin_array(w);
    for (int k = 0; k < run->trained; k++) {
        const kgl_run_member *m = &run->member[k];
        kgl_json_begin_object(w);
        kgl_run_json_member_fields(w, m);
        kgl_json_key(w, "metrics");
        kgl_json_begin_object(w);
        for (int s = 0; s < 3; s++) {
            if (!c->o->report[s]) continue;
            snprintf(what, what_cap, "%s for member %d", v->name[s], k);
            kgl_evaluate_ensemble(&models[k], &states[k], 1, &v->ds, v->split[s], v->n[s], &m0->ev);
            progress_clear(ranking);
            kgl_json_key(w, v->name[s]);
            kgl_json_eval(w, &v->ds, v->use_relation, &m0->ev);
        }
        kgl_json_end_object(w);
        kgl_json_end_object(w);
    }
    kgl_json_end_array(w);
}

/* --json's opening: the run (kgl_run_json_fields), its options, and an
   ensemble's members. */
static void json_run(kgl_json_writer *w, train_ctx *c, kgl_run *run, const kgl_model *const *models,
                     const kgl_real *const *states, progress *ranking, char *what, size_t what_cap)
{
    kgl_json_begin_object(w);
    kgl_run_json_fields(w, run, stop_signal != 0);
    kgl_options_json(w, &c->o->cfg, &c->o->st, &c->o->run);
    if (run->trained > 1) json_members(w, c, run, models, states, ranking, what, what_cap);
    kgl_json_key(w, "metrics");
    kgl_json_begin_object(w);
}

/* The metrics of the model (or of the ensemble of the members trained) on
   every split given, also into both[split] (both directions); the
   specialisation and fit are member 0's. */
static void report(train_ctx *c, kgl_run *run, kgl_metrics *both)
{
    data_view *v = c->v;
    const train_opts *o = c->o;
    int members = run->trained;
    kgl_run_member *m0 = &run->member[0];
    const kgl_dataset *ds = &v->ds;
    const kgl_model *models[KGL_MAX_ENSEMBLE];
    const kgl_real *states[KGL_MAX_ENSEMBLE];
    kgl_forward f;
    for (int k = members - 1; k >= 0; k--) { /* member 0 last: f holds its attention */
        models[k] = &run->member[k].tr.model;
        /* a --query-relation model answers from each question's own state: no entity's is read */
        states[k] = models[k]->cfg.query_relation ? NULL : kgl_trainer_context(&run->member[k].tr, &f)->data;
    }
    int heads = m0->tr.model.cfg.heads;
    double *spec = kgl_xmalloc((size_t)heads * (size_t)ds->n_relations * sizeof(double));
    kgl_heads_spec(&m0->tr, &f, spec); /* where member 0's heads look, by relation (f: its forward pass) */
    /* Its rankings take minutes on a graph of real size (each split, and
       each member's alone in an ensemble): a line while they run, erased
       before each table (stdout may be the same terminal). */
    long queries = 0;
    for (int s = 0; s < 3; s++) queries += o->report[s] ? 2L * v->n[s] : 0;
    progress ranking;
    progress_start(&ranking, stderr, isatty(STDERR_FILENO), (double)queries * (members > 1 ? members + 1 : 1),
                   progress_delay(), now_seconds());
    char what[64];
    eval_progress ep = {&ranking, "kgl train", what, 0};
    if (c->tl->on) m0->ev.progress = eval_progress_update, m0->ev.progress_ctx = &ep;
    kgl_json_writer json;
    kgl_json_writer_init(&json, stdout);
    if (o->run.json) json_run(&json, c, run, models, states, &ranking, what, sizeof what);
    for (int s = 0; s < 3; s++) {
        if (!o->report[s]) continue;
        snprintf(what, sizeof what, "%s for the report", v->name[s]);
        kgl_evaluate_ensemble(models, states, members, ds, v->split[s], v->n[s], &m0->ev);
        progress_clear(&ranking);
        both[s] = m0->ev.both;
        if (o->run.json) {
            kgl_json_key(&json, v->name[s]);
            kgl_json_eval(&json, ds, v->use_relation, &m0->ev);
        } else {
            kgl_metrics_table_write(stdout, v->name[s], v->n[s], ds, v->use_relation, &m0->ev);
        }
    }
    if (o->run.json) {
        kgl_json_end_object(&json); /* the metrics */
        kgl_json_key(&json, "spec");
        kgl_json_spec(&json, ds, v->use_relation, heads, spec);
        kgl_json_end_object(&json);
        kgl_json_newline(&json);
        kgl_json_writer_finish(&json);
    } else {
        kgl_run_fit_write(stdout, run);
        kgl_spec_table_write(stdout, ds, v->use_relation, heads, spec, m0->tr.model.cfg.context);
        print_selection(c, run, models, states, &ranking, what, sizeof what);
        kgl_run_totals_write(stdout, run);
    }
    progress_stop(&ranking);
    free(spec);
}

/* --quiet's one line at the end, on stderr: what was trained, in how long,
   and the metrics of every split (both directions; an ensemble's;
   kgl_run_summary_write). */
static void summary(const train_ctx *c, const kgl_run *run, const kgl_metrics *both)
{
    char times[32];
    format_duration(run->seconds, times, sizeof times);
    kgl_run_summary_write(stderr, run, times, c->v->name, c->o->report, both);
}

/* Every output a file of its own (cli_files_distinct), the members' too:
   --save and --log are neither an input nor each other; --save may replace
   the checkpoint --resume read, as resuming in place does. */
static bool train_outputs_distinct(const train_opts *o)
{
    enum { INPUTS = 5 };
    int members = (int)o->run.ensemble, n = INPUTS;
    cli_file *files = calloc(INPUTS + 2 * (size_t)members, sizeof *files);
    char(*what)[32] = calloc(2 * (size_t)members, sizeof *what);
    const cli_file inputs[INPUTS] = {{"--train", o->data.train, false, NULL},
                                     {"--valid", o->data.valid, false, NULL},
                                     {"--test", o->data.test, false, NULL},
                                     {"--resume", o->run.resume_path, false, NULL},
                                     {"--recipe", o->run.recipe_path, false, NULL}};
    memcpy(files, inputs, sizeof inputs);
    /* an ensemble writes member k beside --save and --log (F.m<k>): beside a
       device or a FIFO that would be a new file in its folder (/dev) */
    const char *named[2] = {o->run.save_path, o->run.log_path};
    struct stat sb;
    for (int j = 0; j < 2 && members > 1; j++)
        if (named[j] && stat(named[j], &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
            char *beside = kgl_member_path(named[j], 1);
            fprintf(stderr, "kgl train: %s %s with --ensemble %d: member 1 would be written beside it as %s; give "
                    "a file's path (or --ensemble 1)\n", j ? "--log" : "--save", named[j], members, beside);
            free(beside);
            free(what);
            free(files);
            return false;
        }
    for (int k = 0; k < members; k++)
        for (int log = 0; log < 2; log++) {
            const char *option = log ? "--log" : "--save";
            if (k == 0) snprintf(what[n - INPUTS], sizeof what[0], "%s", option);
            else snprintf(what[n - INPUTS], sizeof what[0], "%s (member %d)", option, k);
            files[n] = (cli_file){what[n - INPUTS], kgl_member_path(log ? o->run.log_path : o->run.save_path, k), true,
                                  log ? NULL : "--resume"};
            n++;
        }
    bool ok = cli_files_distinct("train", files, n);
    for (int k = INPUTS; k < n; k++) free((char *)files[k].path);
    free(what);
    free(files);
    return ok;
}

/* --context none has no layer: the layer's options, and the neighbourhood's
   that a recipe written for the graph context sets, change nothing. Not an
   error (the baseline of a recipe is the recipe with --context none, README
   "Results"): a warning, even with --quiet, naming them; the neighbourhood's
   are cleared so that nothing downstream reads them. */
static void warn_no_layer(train_opts *o)
{
    char list[256];
    int n = kgl_options_without_layer(&o->cfg, &o->st, o->given, list, sizeof list);
    if (n) fprintf(stderr, "kgl train: warning: --context none has no layer, so%s %s nothing\n", list,
                   n > 1 ? "change" : "changes");
}

/* "kgl train: formulas (14 entities, 55 relations, 1592 training triples): --batch 228" */
static void print_formulas(int argc, const kgl_formulas *cf, const kgl_recipe_vars *vars)
{
    fprintf(stderr, "kgl train: formulas (%ld entities, %ld relations, %ld training triples):", vars->n_entities,
            vars->n_relations, vars->n_train);
    for (int k = 1; k < argc; k++)
        if (kgl_formulas_computed(cf, k)) fprintf(stderr, " %s %s", cf->words[k - 1], cf->words[k]);
    fputc('\n', stderr);
}

static int train_run(int argc, char **argv, kgl_formulas *cf);

int cmd_train(int argc, char **argv)
{
    /* formulas need the triples loaded, and loading them the command line
       parsed: it is parsed without them first (kgl_formulas, kgl/model.h) */
    kgl_formulas cf;
    kgl_formulas_find(&cf, argc, argv);
    int st = train_run(argc, argv, &cf);
    kgl_formulas_free(&cf);
    return st;
}

/* The model's options against the data, once the recipe's and the
   checkpoint's are merged: the configuration, options that cannot go
   together, and --supervise-heads (into *head_of, NULL without it). False
   after saying what is wrong. */
static bool model_options_valid(train_opts *o, const data_view *v, int **head_of)
{
    o->cfg.n_entities = v->ds.n_entities;
    o->cfg.n_relations = v->ds.n_relations;
    if (o->cfg.context == KGL_CONTEXT_NONE) warn_no_layer(o);
    const char *cfg_err = kgl_config_error(&o->cfg);
    if (!cfg_err) cfg_err = kgl_options_conflict(&o->cfg, &o->st, o->given);
    if (cfg_err) {
        fprintf(stderr, "kgl train: %s\n", cfg_err);
        return false;
    }
    if (!supervision(o)) return true;
    *head_of = kgl_xmalloc((size_t)v->ds.n_relations * sizeof(int));
    if (parse_supervision("train", supervision(o), &v->ds, o->cfg.heads, *head_of)) return true;
    free(*head_of);
    *head_of = NULL;
    return false;
}

/* The run the options ask (kgl_run_spec): the model, the training, the
   selection on valid, the ensemble, and the threads shared among the
   members that train at once. */
static void run_spec(const train_opts *o, const data_view *v, const int *head_of, const kgl_checkpoint *ck,
                     kgl_run_spec *spec)
{
    kgl_run_spec_defaults(spec, &v->ds, &o->cfg);
    spec->train = v->split[0], spec->n_train = v->n[0];
    spec->valid = v->split[1], spec->n_valid = v->n[1];
    spec->st = o->st;
    spec->head_of = head_of;
    spec->resume = ck;
    spec->steps = o->run.steps, spec->eval_every = o->run.eval_every, spec->patience = o->run.patience;
    spec->log_every = o->run.log_every, spec->until_fit = o->run.until_fit;
    spec->members = (int)o->run.ensemble;
    kgl_run_spec_threads(spec, (int)o->run.threads, (int)o->run.ensemble_jobs);
}

/* kgl_trainer_plan's estimate of this run (kgl_run_memory) against the
   memory there is (memory.c); false after saying what fits. */
static bool run_fits_memory(const train_opts *o, const data_view *v, const kgl_run_spec *spec)
{
    kgl_memory_run run;
    kgl_run_memory(spec, v->n[2], &run);
    run.options = true; /* a refusal names the options that would fit */
    return memory_fits("train", &run, !o->run.quiet && !o->run.json);
}

/* Several trainings at once when the machine has the cores: the spec's
   members, its jobs at a time (kgl_run_train), under the run's one progress
   line, stopped by Ctrl-C; c->out gets each member's files. Returns the
   run's status. */
static int run_members(train_ctx *c, kgl_run *run, kgl_run_spec *spec)
{
    const train_opts *o = c->o;
    int members = spec->members;
    static train_line tl; /* one per process */
    tl.on = !o->run.quiet && (!o->run.json || o->run.progress);
    tl.members = members, tl.jobs = spec->jobs;
    atomic_init(&tl.finished, 0);
    progress_start(&tl.line, stderr, isatty(STDERR_FILENO), (double)members * (double)o->run.steps, 0, now_seconds());
    progress_send_steps(&tl.line); /* when kgl benchmark asks */
    c->tl = &tl;
    c->out = kgl_xcalloc((size_t)members, sizeof *c->out);
    for (int k = 0; k < members; k++) {
        c->out[k].log_path = kgl_member_path(o->run.log_path, k);
        c->out[k].save_path = kgl_member_path(o->run.save_path, k);
    }
    spec->cb = (kgl_run_callbacks){c, on_start, on_progress, on_row, on_end, on_stop};
    stop_signal = 0;
    cli_on_stop_signals(on_stop_signal);
    int st = kgl_run_train(run, spec);
    progress_stop(&tl.line);
    return st;
}

/* --resume of a checkpoint of the other precision, without --precision:
   continue as the run went, in its program (read from the header, before
   the values: an F64 value beyond float's range is for the float64 program
   to read; a file that cannot tell is left to checkpoint_open to report).
   True when it ran the other program (its status in *st). */
static bool hand_over_precision(const train_opts *o, int argc, char **argv, int *st)
{
    char trained_in[4], unread[1024];
    if (o->precision_given || !kgl_checkpoint_precision(o->run.resume_path, trained_in, unread, sizeof unread) ||
        strcmp(trained_in, KGL_PRECISION) == 0)
        return false;
    const char *program = strcmp(trained_in, "f32") == 0 ? "kgl-f32" : "kgl";
    const char *extra[2] = {"--precision", trained_in};
    char why[4200], hint[64], path[4096];
    snprintf(why, sizeof why, "resuming %s (trained in %s)", o->run.resume_path, trained_in);
    snprintf(hint, sizeof hint, "; --precision %s continues it here", KGL_PRECISION);
    if (!o->run.quiet && cli_program_beside(program, path, sizeof path))
        fprintf(stderr, "kgl train: %s was trained in %s: resuming in %s\n", o->run.resume_path, trained_in, program);
    *st = cli_exec_precision("train", trained_in, argc, argv, extra, why, hint);
    return true;
}

/* Ctrl-C or SIGTERM stopped the run: which steps the results are of. */
static void say_interrupted(const kgl_run *run, int members, int jobs)
{
    int trained = run->trained;
    if (jobs > 1)
        fprintf(stderr,
                "kgl train: interrupted (%s); members 0-%d make the ensemble, each stopped after its current step; "
                "the results and outputs are of those steps\n",
                stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", trained - 1);
    else
        fprintf(stderr, "kgl train: interrupted (%s) after step %ld%s; the results and outputs are of that step\n",
                stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", run->member[trained - 1].steps_run,
                members > 1 ? " of the last member" : "");
}

/* kgl_run_save's report of a member it could not write (-1: the list of
   members in member 0). */
static void save_failed(void *ctx, int member, const char *why)
{
    const char *save_path = ctx;
    if (member < 0) fprintf(stderr, "kgl train: --save %s: %s\n", save_path, why);
    else fprintf(stderr, "kgl train: %s\n", why);
}

/* The command line's formulas computed for the loaded triples
   (kgl_formulas_compute) and the command line parsed again with their
   values, which a line shows (a recipe's line, when there is one). Returns
   -1 to go on with cf->words, or an exit status. */
static int apply_formulas(int argc, char **argv, kgl_formulas *cf, train_opts *o, const kgl_recipe_vars *vars)
{
    size_t cap = 1024; /* and room for the option's name, however long */
    for (int k = 0; k < argc; k++) cap += strlen(argv[k]);
    char *err = kgl_xmalloc(cap);
    bool computed = kgl_formulas_compute(cf, argc, argv, vars, err, cap);
    if (!computed) fprintf(stderr, "kgl train: %s\n", err);
    free(err);
    if (!computed) return EXIT_USAGE;
    if (o->run.recipe_path) return -1; /* the recipe's line shows them */
    int st = parse(argc, cf->words, o, NULL);
    if (st < 0 && !o->run.quiet && !o->run.json) print_formulas(argc, cf, vars);
    return st;
}

static int train_run(int argc, char **argv, kgl_formulas *cf)
{
    train_opts o;
    int st = cf->count ? parse(cf->first_argc, cf->first, &o, NULL) : parse(argc, argv, &o, NULL);
    if (st >= 0) return st;
    /* every output before the first step, not after the last: a path that
       cannot be written is a bad argument (2); 3 is for a write that fails */
    if ((o.run.save_path && !cli_output_ok("train", "--save", o.run.save_path)) ||
        (o.run.log_path && !cli_output_ok("train", "--log", o.run.log_path)))
        return EXIT_USAGE;
    data_view v;
    if ((st = data_load("train", &o.data, &v, o.run.quiet))) return st;
    /* the counts formulas and a recipe's guards read (n_pairs sorts the
       training pairs: counted once, for both) */
    kgl_recipe_vars vars = {0};
    if (cf->count || o.run.recipe_path)
        vars = (kgl_recipe_vars){v.ds.n_entities, v.ds.n_relations, v.n[0], kgl_distinct_pairs(v.split[0], v.n[0])};
    if (cf->count) {
        if ((st = apply_formulas(argc, argv, cf, &o, &vars)) >= 0) {
            data_free(&v);
            return st;
        }
        argv = cf->words;
    }
    if (o.run.recipe_path && (st = apply_recipe(argc, argv, &o, &vars)) >= 0) {
        data_free(&v);
        return st;
    }
    if (!train_outputs_distinct(&o)) { /* after the recipe: it may set --ensemble */
        data_free(&v);
        return EXIT_USAGE;
    }
    if (!data_splits_chosen("train", &v, o.run.splits, o.report)) { /* after the recipe: it may say --splits */
        data_free(&v);
        return EXIT_USAGE;
    }

    kgl_checkpoint ck;
    bool resumed = false;
    if (o.run.resume_path) {
        /* continue as the run went, in the checkpoint's precision: read from
           its header, before its values (an F64 value beyond float's range
           is for the float64 program to read); a file that cannot tell is
           left to checkpoint_open to report */
        if (hand_over_precision(&o, argc, argv, &st)) goto done_ck;
        if ((st = checkpoint_open(o.run.resume_path, &v, &ck))) {
            data_free(&v);
            return st;
        }
        resumed = true;
        if (strcmp(ck.precision, KGL_PRECISION) != 0 && !o.run.quiet)
            fprintf(stderr, "kgl train: %s was trained in %s; continuing in %s as --precision asks\n", o.run.resume_path,
                    ck.precision, KGL_PRECISION);
        if ((st = merge_checkpoint(&o, &ck)) >= 0) goto done_ck;
    }
    int *head_of = NULL;
    if (!model_options_valid(&o, &v, &head_of)) {
        st = EXIT_USAGE;
        goto done_ck;
    }
    kgl_run_spec spec;
    run_spec(&o, &v, head_of, resumed ? &ck : NULL, &spec);
    int members = spec.members, jobs = spec.jobs;
    if (!run_fits_memory(&o, &v, &spec)) {
        free(head_of);
        st = EXIT_USAGE;
        goto done_ck;
    }
    if (o.run.check) { /* everything a run checks before its first step is checked */
        free(head_of);
        st = 0;
        goto done_ck;
    }
    train_ctx c = {.o = &o, .v = &v};
    kgl_run run;
    st = run_members(&c, &run, &spec);
    free(head_of);
    if (resumed) {
        kgl_checkpoint_close(&ck);
        resumed = false;
    }
    bool interrupted = stop_signal != 0, output_failed = false;
    for (int k = 0; k < run.trained; k++) output_failed |= c.out[k].output_failed;
    if (interrupted && st == 0) say_interrupted(&run, members, jobs);
    /* the files first, then the report: a reader of stdout that stops
       reading (`| grep -m1 all`) never costs the checkpoint (the log is
       written as each member ends) */
    if (o.run.save_path && st == 0 && !kgl_run_save(&run, o.run.save_path, save_failed, (void *)o.run.save_path))
        output_failed = true;
    kgl_metrics both[3];
    if (st == 0) report(&c, &run, both);
    if (st == 0 && o.run.quiet) summary(&c, &run, both);
    for (int k = run.trained - 1; k >= 0 && !o.run.quiet && !o.run.json; k--)
        if (run.member[k].saved)
            printf("saved %s (step %ld, %s)\n", c.out[k].save_path, run.member[k].tr.optim.step, KGL_PRECISION);
    if (st == 0 && output_failed) st = EXIT_OUTPUT;
    else if (st == 0 && interrupted) st = EXIT_INTERRUPTED;
    for (int k = 0; k < members; k++) free(c.out[k].log_path), free(c.out[k].save_path);
    free(c.out);
    kgl_run_free(&run);
done_ck:
    if (resumed) kgl_checkpoint_close(&ck);
    data_free(&v);
    return st;
}
