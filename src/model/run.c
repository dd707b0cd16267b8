/* run.c — a training run as `kgl train` makes it: the steps, selection on
 * valid with patience, the fit step, and ensembles trained J at a time on
 * threads (kgl/model.h, section "run"). What a program shows of it (a
 * progress line, a log, messages) goes through the callbacks. An
 * ensemble's checkpoint set is saved here, and opened again: which files
 * --checkpoint names, that they are of one save, the models and their states. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kgl/model.h"
#include "engine/internal.h"

void kgl_run_spec_defaults(kgl_run_spec *spec, const kgl_dataset *ds, const kgl_config *cfg)
{
    memset(spec, 0, sizeof *spec);
    spec->ds = ds;
    spec->cfg = *cfg;
    spec->cfg.n_entities = ds->n_entities;
    spec->cfg.n_relations = ds->n_relations;
    kgl_train_state_defaults(&spec->st);
    kgl_run_options run;
    kgl_run_options_defaults(&run);
    spec->steps = run.steps;
    spec->log_every = run.log_every;
    spec->members = spec->jobs = spec->job_threads = 1;
}

void kgl_run_spec_threads(kgl_run_spec *spec, int threads, int jobs)
{
    if (threads < 1) threads = kgl_cores();
    if (jobs < 1) jobs = threads;
    int members = spec->members < 1 ? 1 : spec->members;
    jobs = jobs > members ? members : jobs;
    spec->jobs = jobs;
    spec->job_threads = threads / jobs > 1 ? threads / jobs : 1;
}

void kgl_run_memory(const kgl_run_spec *spec, long n_test, kgl_memory_run *r)
{
    long ranked = spec->n_train > spec->n_valid ? spec->n_train : spec->n_valid;
    *r = (kgl_memory_run){.cfg = spec->cfg, .tc = {.batch = (int)spec->st.batch, .head_of = spec->head_of},
                          .reg = spec->st.reg, .n_train = spec->n_train, .ranked = ranked > n_test ? ranked : n_test,
                          .triples = (long)spec->n_train + spec->n_valid + n_test, .members = spec->members,
                          .jobs = spec->jobs, .threads = spec->jobs * spec->job_threads,
                          .selecting = spec->eval_every > 0};
}

/* The members of an ensemble are independent until the report, so J of
   them train at once, each a job of the one runner (kgl_jobs_run) on a
   pool of threads of its worker's: the members start in order, and since
   every member's result is the same bits for any number of threads, the
   ensemble is the one trained one member after another. No member starts
   after a stop or a failure; a failure also stops the others (the
   runner's halt, polled at each step). */
static bool stop_requested(const kgl_run_spec *spec) { return spec->cb.stop && spec->cb.stop(spec->cb.ctx); }

/* Ranks the valid triples with the current parameters; keeps a snapshot of
   the best model so far. Returns false when patience has run out. */
static bool select_model(kgl_run_member *m, long step)
{
    const kgl_run_spec *spec = m->spec;
    kgl_tensor *C = kgl_trainer_states(&m->tr);
    kgl_evaluate(&m->tr.model, C, spec->ds, spec->valid, spec->n_valid, &m->valid_ev);
    double mrr = m->valid_ev.both.mrr;
    m->last_valid_mrr = mrr;
    m->evaluations++;
    if (m->best_step < 0 || mrr > m->best_mrr) {
        m->best_mrr = mrr;
        m->best_step = step;
        m->evals_since_best = 0;
        kgl_trainer_snapshot(&m->tr, &m->best);
    } else {
        m->evals_since_best++;
    }
    return !(spec->patience && m->evals_since_best >= spec->patience);
}

double kgl_run_train_hits1(kgl_run_member *m)
{
    long step = m->tr.optim.step;
    if (m->ev_step == step) return m->ev.both.hits1; /* the fit check just ranked them */
    m->ev_step = step;
    kgl_tensor *C = kgl_trainer_states(&m->tr);
    kgl_evaluate(&m->tr.model, C, m->spec->ds, m->spec->train, m->spec->n_train, &m->ev);
    return m->ev.both.hits1;
}

/* kgl_eval's callback while valid is ranked: a big graph takes a while. */
static void ranking_valid(void *ctx, long done, long total)
{
    kgl_run_member *m = ctx;
    m->ranked = done, m->to_rank = done < total ? total : 0;
    if (m->spec->cb.progress) m->spec->cb.progress(m->spec->cb.ctx, m, 0);
}

/* The member's trainer as the spec asks, from its initialisation or from
   the checkpoint being resumed. */
static void member_trainer(kgl_run_member *m, kgl_pool *pool)
{
    const kgl_run_spec *spec = m->spec;
    const kgl_train_state *st = &spec->st;
    kgl_optim optim = st->optim;
    optim.lr = st->base_lr; /* the rate a schedule starts from */
    kgl_train_config tc = {st->batch, m->seed, optim, spec->head_of, st->aux_weight, st->freeze_embeddings, st->lookup};
    kgl_trainer_init(&m->tr, spec->ds, spec->train, spec->n_train, &spec->cfg, &tc);
    if (st->kvsall) kgl_trainer_set_kvsall(&m->tr);
    kgl_trainer_set_pool(&m->tr, pool);
    kgl_trainer_set_regularisers(&m->tr, &st->reg);
    kgl_trainer_set_schedule(&m->tr, &st->sched);
    const kgl_checkpoint *ck = spec->resume;
    if (!ck) return;
    kgl_checkpoint_apply(ck, &m->tr.model);
    /* one optimiser's state means nothing to another (Adam's m may be
       negative, Adagrad's sum may not): the new one starts at zero */
    if (st->optim.kind != ck->st.optim.kind) kgl_params_zero_state(&m->tr.model.params);
    kgl_trainer_set_step(&m->tr, ck->st.step);
    kgl_trainer_set_position(&m->tr, &ck->st.epoch_rng, ck->st.cursor);
    if (ck->st.has_dropout_rng) m->tr.dropout_rng = ck->st.dropout_rng;
}

/* Whether the fit is checked every step (a ranking of the training
   triples is cheap, or until_fit asks), or at logged steps. */
static void plan_fit_checks(kgl_run_member *m)
{
    const kgl_run_spec *spec = m->spec;
    const kgl_config *cfg = &spec->cfg;
    double fit_cost = (double)spec->n_train * spec->ds->n_entities * cfg->dim;
    /* with query_relation each of the 2 n questions has a state of its own: its tokens' projections */
    if (cfg->query_relation) fit_cost += 2.0 * spec->n_train * kgl_config_segment_tokens(cfg) * cfg->dim * cfg->dim;
    /* the candidates' side: every candidate's question for each relation (at most m of them) */
    if (cfg->candidate_states > 0)
        fit_cost += (double)cfg->n_relations * spec->ds->n_entities * kgl_config_segment_tokens(cfg) * cfg->dim * cfg->dim;
    m->track_fit = spec->until_fit || fit_cost <= 2e7;
    /* On a graph of real size (FB15k-237: 272k triples, 14.5k entities) one
       ranking of the training triples costs a minute: the fit is not checked
       (the progress line leaves out train H@1); between the two, at logged steps. */
    m->watch_fit = m->track_fit || fit_cost <= 2e9;
}

/* The steps of one member, from rs->first_step to its last or until it
   stops (a non-finite loss, patience, the fit, a stop asked, another
   member's failure). */
static void member_steps(kgl_run_member *m)
{
    const kgl_run_spec *spec = m->spec;
    const kgl_run_callbacks *cb = &spec->cb;
    long first = m->first_step, last = m->last_step;
    double loss = NAN;
    for (long step = first; step <= last; step++) {
        if (m->jobs && kgl_jobs_halted(m->jobs)) { /* its results will not be reported */
            m->halted = true;
            break;
        }
        loss = kgl_trainer_compute(&m->tr);
        if (!isfinite(loss)) { /* stopped before this step's update */
            m->status = 1;
            m->nonfinite_step = step;
            break;
        }
        bool logged = (spec->log_every && (step - first + 1) % spec->log_every == 0) || step == last;
        bool evaluate = spec->eval_every && ((step - first + 1) % spec->eval_every == 0 || step == last);
        /* with until_fit the fit step gets a row too, so measure every step */
        if (m->diag && (logged || evaluate || spec->until_fit)) {
            kgl_diag_measure(m->diag, &m->tr);
            m->diag_step = step;
        }
        kgl_trainer_update(&m->tr);
        m->step = step, m->loss = loss;
        bool go_on = !evaluate || select_model(m, step);
        if (cb->row && (logged || evaluate)) cb->row(cb->ctx, m, step, loss, evaluate, false);
        if ((m->track_fit || (logged && m->watch_fit)) && m->fit_step < 0) {
            if (kgl_trainer_fits(&m->tr, &m->ev)) m->fit_step = step;
            m->ev_step = step; /* m->ev holds the training triples' ranks at this step */
        }
        if (cb->progress) cb->progress(cb->ctx, m, 1);
        bool stopping = (stop_requested(spec) && step < last) || (spec->until_fit && m->fit_step >= 0);
        if (stopping) { /* keep the work of the steps done: their row */
            if (cb->row && !logged && !evaluate) cb->row(cb->ctx, m, step, loss, false, true);
            break;
        }
        if (!go_on) {
            m->stopped_early = true;
            break;
        }
    }
    m->final_loss = loss;
}

/* Trains member m (its trainer on `pool`) and leaves it restored to the
   step selected on valid; m->status says how it went. */
static void train_member(kgl_run_member *m, kgl_pool *pool)
{
    const kgl_run_spec *spec = m->spec;
    const kgl_dataset *ds = spec->ds;
    member_trainer(m, pool);
    kgl_eval_init(&m->ev, ds->n_entities, ds->n_relations);
    kgl_eval_init(&m->valid_ev, ds->n_entities, ds->n_relations);
    kgl_eval_set_pool(&m->ev, pool);
    kgl_eval_set_pool(&m->valid_ev, pool);
    m->fit_step = m->best_step = m->ev_step = m->diag_step = -1;
    plan_fit_checks(m);
    if (spec->cb.start && (m->status = spec->cb.start(spec->cb.ctx, m)) != 0) return;
    m->valid_ev.progress = ranking_valid, m->valid_ev.progress_ctx = m;
    double t0 = kgl_seconds();
    m->first_step = m->tr.optim.step + 1, m->last_step = m->tr.optim.step + spec->steps;
    m->step = m->first_step - 1;
    member_steps(m);
    m->seconds = kgl_seconds() - t0;
    m->steps_run = m->tr.optim.step;
    if (m->status == 0 && m->best_step >= 0) kgl_trainer_restore(&m->tr, &m->best); /* the model selected on valid */
    /* kept for the report: the model, not what training it needed (kgl
       train's memory estimate counts those once per job) */
    kgl_snapshot_free(&m->best);
    kgl_trainer_release_steps(&m->tr);
    if (spec->cb.end) spec->cb.end(spec->cb.ctx, m);
}

/* The runner's job: member k on worker w's pool. */
static int train_member_job(kgl_jobs *jobs, int k, int w, void *ctx)
{
    kgl_run *run = ctx;
    kgl_run_member *m = &run->member[k];
    m->jobs = jobs;
    train_member(m, run->pools[w]);
    m->jobs = NULL; /* the runner ends with the run */
    return m->status;
}

static bool run_stop(void *ctx) { return stop_requested(&((kgl_run *)ctx)->spec); }

int kgl_run_train(kgl_run *run, const kgl_run_spec *spec)
{
    memset(run, 0, sizeof *run);
    run->spec = *spec;
    if (!spec->resume && spec->st.sched.total == 0) run->spec.st.sched.total = spec->steps; /* a decay spans the run */
    int members = spec->members < 1 ? 1 : spec->members;
    kgl_jobs_spec js = {.n = members, .at_most = spec->jobs, .run = train_member_job, .stop = run_stop, .ctx = run};
    int jobs = kgl_jobs_workers(&js);
    run->spec.members = members, run->spec.jobs = jobs;
    run->spec.job_threads = spec->job_threads < 1 ? 1 : spec->job_threads;
    run->member = kgl_xcalloc((size_t)members, sizeof *run->member);
    for (int k = 0; k < members; k++) {
        kgl_run_member *m = &run->member[k];
        m->index = k;
        m->seed = spec->st.seed + 1000ull * (uint64_t)k;
        m->spec = &run->spec;
    }
    run->pools = kgl_xcalloc((size_t)jobs, sizeof *run->pools);
    for (int j = 0; j < jobs; j++) run->pools[j] = kgl_pool_create(run->spec.job_threads);
    kgl_jobs_result r = kgl_jobs_run(&js);
    run->trained = r.started; /* the members started make the ensemble (all of them, unless stopped) */
    run->status = r.status;
    run->failed = r.failed < 0 ? 0 : r.failed;
    run->seconds = r.seconds;
    return run->status;
}

void kgl_run_free(kgl_run *run)
{
    for (int k = 0; k < run->trained; k++) {
        kgl_run_member *m = &run->member[k];
        kgl_eval_free(&m->ev);
        kgl_eval_free(&m->valid_ev);
        kgl_snapshot_free(&m->best);
        kgl_trainer_free(&m->tr);
    }
    free(run->member);
    for (int j = 0; run->pools && j < run->spec.jobs; j++) kgl_pool_free(run->pools[j]);
    free(run->pools);
    memset(run, 0, sizeof *run);
}

char *kgl_member_path(const char *path, int k)
{
    if (!path) return NULL;
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (k == 0 || !dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path)) dot = path + strlen(path);
    size_t cap = strlen(path) + 16;
    char *p = kgl_xmalloc(cap);
    if (k == 0) snprintf(p, cap, "%s", path);
    else snprintf(p, cap, "%.*s.m%d%s", (int)(dot - path), path, k, dot);
    return p;
}

/* Writes member m's checkpoint to `path`: the run's training options, then
   where this member's run stands; `members` lists the others (member 0),
   `run_id` is the save's. */
static bool save_member(const kgl_run *run, kgl_run_member *m, const char *path, const char *members,
                        const char *run_id, char *err, size_t cap)
{
    kgl_train_state ts = run->spec.st;
    ts.step = m->tr.optim.step;
    ts.seed = m->seed;
    ts.optim = m->tr.optim;
    kgl_trainer_get_position(&m->tr, &ts.epoch_rng, &ts.cursor);
    ts.reg.rng = NULL;
    ts.dropout_rng = m->tr.dropout_rng;
    ts.has_dropout_rng = true;
    ts.sched = m->tr.sched;
    ts.base_lr = m->tr.base_lr;
    snprintf(ts.members, sizeof ts.members, "%s", members ? members : "");
    snprintf(ts.run_id, sizeof ts.run_id, "%s", run_id);
    return m->saved = kgl_checkpoint_save(path, &m->tr.model, run->spec.ds, &ts, err, cap);
}

/* The members are saved one by one, each atomically, so a kill between two
   of them leaves a set mixed from two saves: one run id in every member
   makes that mix detectable (kgl eval and predict refuse it). Member 0,
   which names the others (by their base names as its folder sees them), is
   saved last. */
bool kgl_run_save(kgl_run *run, const char *path, void (*failed)(void *ctx, int member, const char *why), void *ctx)
{
    bool ok = true;
    char members[sizeof((kgl_train_state *)0)->members] = "", err[1024];
    size_t used = 0;
    for (int k = 1; k < run->trained; k++) {
        char *member_path = kgl_member_path(path, k);
        const char *slash = strrchr(member_path, '/'), *base = slash ? slash + 1 : member_path;
        used += (size_t)snprintf(members + used, used < sizeof members ? sizeof members - used : 0, "%s%s",
                                 k > 1 ? "\n" : "", base);
        free(member_path);
    }
    if (used >= sizeof members) {
        if (failed) failed(ctx, -1, "the members' names are too long to list in its metadata");
        ok = false;
    }
    char run_id[sizeof((kgl_train_state *)0)->run_id] = "";
    if (run->trained > 1) snprintf(run_id, sizeof run_id, "%016" PRIx64, kgl_random64());
    for (int k = run->trained - 1; k >= 0; k--) {
        char *member_path = kgl_member_path(path, k);
        if (!save_member(run, &run->member[k], member_path, k == 0 ? members : NULL, run_id, err, sizeof err)) {
            if (failed) failed(ctx, k, err);
            ok = false;
        }
        free(member_path);
    }
    return ok;
}

/* ---- an ensemble's checkpoint set, opened again ---------------------------- */

/* Adds a line to err (after the lines it holds already): the opener may
   have said why first. */
static void say(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t cap, const char *fmt, ...)
{
    if (!err || cap == 0) return;
    size_t used = strnlen(err, cap);
    if (used && used + 1 < cap) err[used++] = '\n', err[used] = 0;
    if (used + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + used, cap - used, fmt, ap);
    va_end(ap);
}

/* The file a member's name in member 0's metadata means: relative to
   member 0's folder (an absolute name as it is). */
static void member_file(const char *member0, const char *name, char *path, size_t cap)
{
    const char *slash = strrchr(member0, '/');
    int dir_len = slash ? (int)(slash - member0) + 1 : 0;
    snprintf(path, cap, "%.*s%s", name[0] == '/' ? 0 : dir_len, member0, name);
}

/* --checkpoint names one file (which may list the other members of its
   ensemble), or A,B,... */
static bool one_file(const char *spec) { return access(spec, F_OK) == 0 || !strchr(spec, ','); }

/* The models an ensemble's member 0 lists, one name a line: 1 + the lines. */
static int ensemble_size(const char *members)
{
    int models = 1;
    for (const char *p = members; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) models++;
    return models;
}

/* The file of model `member` (>= 0) of --checkpoint spec: one file F is
   member 0 and lists the others in its metadata; A,B,... are members 0, 1,
   ... in order. Only F's metadata is read, and not for member 0 of F
   (*models is then 0: unknown until F is opened; otherwise how many models
   spec names). When the file is one F lists, *listed is set and run_id
   (sizeof kgl_train_state.run_id bytes) gets F's run id, for same_save.
   False with the reason in err. */
static bool member_path(const char *cmd, const char *spec, long member, char *path, size_t cap, bool *listed,
                        char *run_id, int *models, char *err, size_t err_cap)
{
    *listed = false;
    *models = 0;
    bool found = false;
    if (!one_file(spec)) {
        for (const char *p = spec; p; ++*models) {
            const char *comma = strchr(p, ',');
            int len = comma ? (int)(comma - p) : (int)strlen(p);
            if (*models == member) {
                snprintf(path, cap, "%.*s", len, p);
                found = true;
            }
            p = comma ? comma + 1 : NULL;
        }
    } else if (member == 0) {
        snprintf(path, cap, "%s", spec);
        return true;
    } else {
        kgl_st_file f;
        char why[1024];
        if (!kgl_st_read(spec, &f, why, sizeof why)) {
            say(err, err_cap, "%s", why);
            return false;
        }
        const char *names = kgl_st_meta(&f, "ensemble_members"), *run = kgl_st_meta(&f, "run_id");
        char list[sizeof((kgl_train_state *)0)->members];
        snprintf(list, sizeof list, "%s", names ? names : "");
        snprintf(run_id, sizeof((kgl_train_state *)0)->run_id, "%s", run ? run : "");
        kgl_st_free(&f);
        if (!kgl_ensemble_members_valid(list, why, sizeof why)) { /* as opening it whole says */
            say(err, err_cap, "%s: metadata 'ensemble_members': %s; it lists each other member's file once, one a line",
                spec, why);
            return false;
        }
        *models = ensemble_size(list);
        int k = 1;
        for (char *name = strtok(list, "\n"); name && !found; name = strtok(NULL, "\n"), k++)
            if (k == member) {
                member_file(spec, name, path, cap);
                *listed = found = true;
            }
    }
    if (found) return true;
    say(err, err_cap, "kgl %s: --member %ld: %s is %d model%s (members 0 to %d)", cmd, member, spec, *models,
        *models == 1 ? "" : "s", *models - 1);
    return false;
}

/* A member that member0's file lists is from the save that wrote member0:
   the same run id (none in either, for files older than run ids). The
   members are saved one by one, so a kill, a second Ctrl-C or a second run
   saving to the same path can leave a mix; refused, naming the file. */
static bool same_save(const char *cmd, const char *member0, const char *run0, const char *path, const char *run,
                      char *err, size_t err_cap)
{
    if (strcmp(run0, run) == 0) return true;
    say(err, err_cap,
        "kgl %s: %s is not from the save that wrote %s (run id %s, not %s): the ensemble's files are a mix of two "
        "saves; train and save the ensemble again",
        cmd, path, member0, *run ? run : "none", *run0 ? run0 : "none");
    return false;
}

/* The ensemble a file belongs to, when it is member k > 0 of one that kgl
   train saved: X.m<k>.ext (or X.m<k>) listed as member k by X.ext (or X).
   Returns k with X.ext in member0 and the ensemble's size in *models, or 0. */
static int ensemble_of(const char *path, char *member0, size_t cap, int *models)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path, *dot = strrchr(base, '.');
    for (int with_ext = dot != NULL; with_ext >= 0; with_ext--) {
        size_t stem_end = with_ext ? (size_t)(dot - path) : strlen(path), d = stem_end;
        while (d > 0 && isdigit((unsigned char)path[d - 1])) d--;
        if (d == stem_end || d < (size_t)(base - path) + 3 || path[d - 1] != 'm' || path[d - 2] != '.') continue;
        long k = strtol(path + d, NULL, 10);
        if (k < 1 || k >= KGL_MAX_ENSEMBLE) continue;
        snprintf(member0, cap, "%.*s%s", (int)(d - 2), path, path + stem_end);
        kgl_st_file f;
        char err[1024];
        if (!kgl_st_read(member0, &f, err, sizeof err)) continue;
        const char *p = kgl_st_meta(&f, "ensemble_members"); /* member k is its k-th line */
        char why[600];
        bool valid = p && kgl_ensemble_members_valid(p, why, sizeof why); /* else opening it says what is wrong */
        for (long j = 1; j < k && p; j++)
            if ((p = strchr(p, '\n'))) p++;
        bool listed = valid && p && strcspn(p, "\n") == strlen(base) && strncmp(p, base, strlen(base)) == 0;
        *models = ensemble_size(kgl_st_meta(&f, "ensemble_members"));
        kgl_st_free(&f);
        if (listed) return (int)k;
    }
    return 0;
}

/* Where the model opened for --checkpoint spec stands (c->path is the
   caller's): model `member` of spec's `models`, or, when models is 0 (F
   itself, opened as member 0), of the members F lists (`listed`, F's
   metadata), or, when F lists none, of the ensemble F is a member of. */
static void describe_choice(kgl_model_choice *c, const char *spec, int member, int models, const char *listed)
{
    snprintf(c->ensemble, sizeof c->ensemble, "%s", spec);
    c->member = member;
    c->members = models ? models : ensemble_size(listed);
    c->alone = false;
    int k = c->members == 1 ? ensemble_of(spec, c->ensemble, sizeof c->ensemble, &c->members) : 0;
    if (k) c->member = k, c->alone = true;
}

/* Without an opener of the program's: the checkpoint for spec->ds, its
   model, and a graph context's training graph. */
static bool open_checkpoint(const kgl_model_set_spec *spec, const char *path, int k, kgl_checkpoint *ck,
                            kgl_model *m, char *err, size_t cap)
{
    if (spec->open) return spec->open(spec->ctx, path, k, ck, m, err, cap);
    if (!kgl_checkpoint_open(path, spec->ds, ck, err, cap)) return false;
    kgl_model_create(m, &ck->cfg);
    kgl_checkpoint_apply(ck, m);
    if (spec->graph) kgl_model_set_graph(m, spec->graph, spec->n_graph);
    return true;
}

void kgl_model_set_close(kgl_model_set *ms)
{
    for (int k = 0; k < ms->n; k++) {
        free(ms->states[k]);
        kgl_model_free(&ms->m[k]);
        kgl_checkpoint_close(&ms->ck[k]);
        free(ms->paths[k]);
    }
    ms->n = 0;
}

/* Member k of ms from path, opened as the spec says. */
static bool model_set_add(kgl_model_set *ms, const kgl_model_set_spec *spec, const char *path, char *err, size_t cap)
{
    const char *cmd = spec->cmd;
    int k = ms->n;
    kgl_model *m = &ms->m[k];
    kgl_checkpoint *ck = &ms->ck[k];
    if (k == KGL_MAX_ENSEMBLE) {
        say(err, cap, "kgl %s: --checkpoint: more than %d models", cmd, KGL_MAX_ENSEMBLE);
        return false;
    }
    struct stat file, other;
    for (int j = 0; j < k; j++) /* one model counted twice would outweigh the others */
        if (stat(path, &file) == 0 && stat(ms->paths[j], &other) == 0 && file.st_dev == other.st_dev &&
            file.st_ino == other.st_ino) {
            say(err, cap, "kgl %s: %s is the same file as %s (member %d): an ensemble counts each model once", cmd,
                path, ms->paths[j], j);
            return false;
        }
    if (!open_checkpoint(spec, path, k, ck, m, err, cap)) return false;
    const char *why = k > 0 ? kgl_ensemble_mismatch(&ms->m[0].cfg, &m->cfg) : NULL;
    if (why) { /* with the triples given, only the reciprocal mode can differ */
        say(err, cap, "kgl %s: %s has %s (%s): the members of an ensemble answer the same questions", cmd, path, why,
            ms->paths[0]);
        kgl_model_free(m);
        kgl_checkpoint_close(ck);
        return false;
    }
    size_t len = strlen(path) + 1;
    ms->paths[k] = memcpy(kgl_xmalloc(len), path, len);
    ms->states[k] = NULL; /* a --query-relation model answers from each question's own state: none read */
    if (!m->cfg.query_relation) {
        ms->states[k] = kgl_xmalloc((size_t)m->cfg.n_entities * m->cfg.dim * sizeof(kgl_real));
        kgl_context_states(m, ms->states[k]);
    }
    ms->models[k] = m;
    ms->n = k + 1;
    return true;
}

/* spec->member alone. */
static bool open_one_member(kgl_model_set *ms, const kgl_model_set_spec *spec, char *err, size_t cap)
{
    bool listed;
    char run0[sizeof ms->ck[0].st.run_id], path[4096];
    int models;
    if (!member_path(spec->cmd, spec->checkpoint, spec->member, path, sizeof path, &listed, run0, &models, err, cap) ||
        !model_set_add(ms, spec, path, err, cap))
        return false;
    if (listed && !same_save(spec->cmd, spec->checkpoint, run0, path, ms->ck[0].st.run_id, err, cap)) return false;
    describe_choice(&ms->choice, spec->checkpoint, spec->member, models, ms->ck[0].st.members);
    return true;
}

/* One file, and the members it lists. */
static bool open_listed_members(kgl_model_set *ms, const kgl_model_set_spec *spec, char *err, size_t cap)
{
    const char *cmd = spec->cmd, *file = spec->checkpoint;
    char list[sizeof ms->ck[0].st.members] = "", path[4096];
    if (!model_set_add(ms, spec, file, err, cap)) return false;
    snprintf(list, sizeof list, "%s", ms->ck[0].st.members);
    for (char *name = strtok(list, "\n"); name; name = strtok(NULL, "\n")) {
        member_file(file, name, path, sizeof path);
        if (!model_set_add(ms, spec, path, err, cap)) {
            say(err, cap, "kgl %s: %s lists %s as a member of its ensemble", cmd, file, path);
            return false;
        }
        if (!same_save(cmd, file, ms->ck[0].st.run_id, path, ms->ck[ms->n - 1].st.run_id, err, cap)) return false;
    }
    describe_choice(&ms->choice, file, 0, ms->n > 1 ? ms->n : 0, ms->ck[0].st.members);
    return true;
}

/* A,B,...: exactly these. */
static bool open_named_models(kgl_model_set *ms, const kgl_model_set_spec *spec, char *err, size_t cap)
{
    size_t len = strlen(spec->checkpoint) + 1;
    char *list = memcpy(kgl_xmalloc(len), spec->checkpoint, len), *p = list;
    bool ok;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = 0;
        if (!*p) {
            say(err, cap, "kgl %s: --checkpoint: an empty name in the list '%s'", spec->cmd, spec->checkpoint);
            ok = false;
        } else {
            ok = model_set_add(ms, spec, p, err, cap);
        }
        if (!ok || !comma) break;
        p = comma + 1;
    }
    free(list);
    if (ok) describe_choice(&ms->choice, spec->checkpoint, 0, ms->n, NULL);
    return ok;
}

bool kgl_model_set_open(kgl_model_set *ms, const kgl_model_set_spec *spec, char *err, size_t cap)
{
    ms->n = 0;
    if (err && cap) err[0] = 0;
    bool ok = spec->member >= 0            ? open_one_member(ms, spec, err, cap)
              : one_file(spec->checkpoint) ? open_listed_members(ms, spec, err, cap)
                                           : open_named_models(ms, spec, err, cap);
    if (ok) snprintf(ms->choice.path, sizeof ms->choice.path, "%s", ms->paths[0]);
    else kgl_model_set_close(ms);
    return ok;
}

bool kgl_model_open_member(const kgl_model_set_spec *spec, kgl_model *m, kgl_checkpoint *ck, kgl_model_choice *c,
                           char *err, size_t cap)
{
    if (err && cap) err[0] = 0;
    bool listed = false;
    char run0[sizeof ck->st.run_id];
    c->member = spec->member > 0 ? spec->member : 0;
    if (!member_path(spec->cmd, spec->checkpoint, c->member, c->path, sizeof c->path, &listed, run0, &c->members, err,
                     cap) ||
        !open_checkpoint(spec, c->path, 0, ck, m, err, cap))
        return false;
    if (listed && !same_save(spec->cmd, spec->checkpoint, run0, c->path, ck->st.run_id, err, cap)) {
        kgl_model_free(m);
        kgl_checkpoint_close(ck);
        return false;
    }
    describe_choice(c, spec->checkpoint, c->member, c->members, ck->st.members);
    return true;
}
