/* model_run.c — the training run through the library (kgl_run_train):
 * selection on valid keeps the argmax of the valid MRRs it reports,
 * patience stops after P evaluations without a better one, a stop asked
 * ends the run after the current step, an ensemble's members have seeds
 * S + 1000 k and the same bits with one job or two, and kgl_run_save writes
 * the set member 0 lists. */
#include <stdlib.h>
#include <sys/stat.h>

#include "test.h"

/* The walkthrough's family graph: 184 training and 14 valid triples. */
static bool load_family(test_ctx *T, kgl_dataset *ds)
{
    kgl_source src[2] = {{"data/walkthrough/family.train.tsv", NULL, 0},
                         {"data/walkthrough/family.valid.tsv", NULL, 0}};
    char e[512];
    bool ok = kgl_dataset_load(ds, src, 2, e, sizeof e);
    if (!ok) printf("    %s\n", e);
    return CHECK(ok);
}

/* A small layer (d 16, 2 heads) on the family graph, as kgl train's
   defaults train it, ranking valid every `eval_every` steps. */
static void family_spec(kgl_run_spec *spec, const kgl_dataset *ds, long steps, long eval_every)
{
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.dim = 16;
    cfg.heads = 2;
    kgl_run_spec_defaults(spec, ds, &cfg);
    spec->train = ds->splits[0].triples, spec->n_train = ds->splits[0].n;
    spec->valid = ds->splits[1].triples, spec->n_valid = ds->splits[1].n;
    spec->steps = steps;
    spec->eval_every = eval_every;
}

/* What the row callback saw: each evaluated step and its valid MRR. */
typedef struct seen {
    int n;
    long step[256];
    double mrr[256];
    long progress_steps; /* progress calls with work 1 */
    long stop_after;     /* on_stop says stop once this many steps were taken (0: never) */
} seen;

static void record_row(void *ctx, kgl_run_member *m, long step, double loss, bool evaluated, bool stopping)
{
    (void)loss, (void)stopping;
    seen *s = ctx;
    if (!evaluated || s->n >= 256) return;
    s->step[s->n] = step;
    s->mrr[s->n++] = m->valid_ev.both.mrr;
}

static void count_steps(void *ctx, kgl_run_member *m, long work)
{
    (void)m;
    ((seen *)ctx)->progress_steps += work;
}

static bool stop_when_due(void *ctx)
{
    seen *s = ctx;
    return s->stop_after && s->progress_steps >= s->stop_after;
}

TEST(run_keeps_the_step_of_the_best_valid_mrr_it_reports)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run_spec spec;
    family_spec(&spec, &ds, 300, 10);
    seen s = {0};
    spec.cb = (kgl_run_callbacks){.ctx = &s, .row = record_row};
    kgl_run run;
    CHECK(kgl_run_train(&run, &spec) == 0);
    kgl_run_member *m = &run.member[0];
    CHECK(s.n == 30 && m->evaluations == 30); /* every 10 steps of 300 */
    int best = 0;
    for (int k = 1; k < s.n; k++)
        if (s.mrr[k] > s.mrr[best]) best = k; /* the first of equal MRRs, as selection keeps it */
    CHECK(m->best_step == s.step[best]);
    CHECK(m->best_mrr == s.mrr[best]);
    /* the test means something only if the best is not the last step (on
       this graph the MRR peaks at 280 of 300, 0.479 against 0.462) */
    CHECK(s.step[best] < 300);
    /* the model left is the one of that step: ranking valid again gives its MRR, bit for bit */
    kgl_eval ev;
    kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
    kgl_evaluate(&m->tr.model, kgl_trainer_states(&m->tr), &ds, spec.valid, spec.n_valid, &ev);
    CHECK(ev.both.mrr == s.mrr[best]);
    CHECK(m->tr.optim.step == s.step[best]);
    kgl_eval_free(&ev);
    kgl_run_free(&run);
    kgl_dataset_free(&ds);
}

TEST(run_patience_stops_after_p_evaluations_without_a_better_mrr)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    for (long patience = 1; patience <= 3; patience++) {
        kgl_run_spec spec;
        family_spec(&spec, &ds, 300, 10);
        spec.patience = patience;
        seen s = {0};
        spec.cb = (kgl_run_callbacks){.ctx = &s, .row = record_row};
        kgl_run run;
        CHECK(kgl_run_train(&run, &spec) == 0);
        kgl_run_member *m = &run.member[0];
        /* the last improvement is at evaluation `last_best`; the run stops
           exactly `patience` evaluations later */
        int last_best = 0;
        for (int k = 1; k < s.n; k++)
            if (s.mrr[k] > s.mrr[last_best]) last_best = k;
        CHECK(s.n == last_best + 1 + patience);
        CHECK(m->stopped_early);
        CHECK(m->evaluations == s.n);
        CHECK(m->best_step == s.step[last_best]);
        CHECK(m->steps_run < 300);                /* it did stop early */
        CHECK(m->step == s.step[s.n - 1]);        /* at the evaluation that ran out of patience */
        CHECK(m->tr.optim.step == m->best_step);  /* and left the best model */
        for (int k = last_best + 1; k < s.n; k++) CHECK(!(s.mrr[k] > s.mrr[last_best]));
        kgl_run_free(&run);
    }
    kgl_dataset_free(&ds);
}

TEST(run_stop_asked_ends_after_the_current_step_and_starts_no_member)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run_spec spec;
    family_spec(&spec, &ds, 100, 0);
    spec.members = 2;
    seen s = {.stop_after = 7};
    spec.cb = (kgl_run_callbacks){.ctx = &s, .progress = count_steps, .stop = stop_when_due};
    kgl_run run;
    CHECK(kgl_run_train(&run, &spec) == 0);
    CHECK(run.trained == 1);
    CHECK(run.member[0].steps_run == 7);
    CHECK(s.progress_steps == 7);
    kgl_run_free(&run);
    kgl_dataset_free(&ds);
}

/* Whether two members' parameters (values and optimiser state) are the same bits. */
static bool same_params(const kgl_run_member *a, const kgl_run_member *b)
{
    const kgl_params *p = &a->tr.model.params, *q = &b->tr.model.params;
    return p->total == q->total && memcmp(p->block, q->block, 4 * p->total * sizeof *p->block) == 0;
}

TEST(run_ensemble_members_have_seeds_s_plus_1000k_and_the_same_bits_with_two_jobs)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run runs[2];
    for (int jobs = 1; jobs <= 2; jobs++) {
        kgl_run_spec spec;
        family_spec(&spec, &ds, 40, 20);
        spec.st.seed = 7;
        spec.members = 2;
        spec.jobs = jobs;
        CHECK(kgl_run_train(&runs[jobs - 1], &spec) == 0);
        CHECK(runs[jobs - 1].trained == 2);
        CHECK(runs[jobs - 1].member[0].seed == 7 && runs[jobs - 1].member[1].seed == 1007);
    }
    for (int k = 0; k < 2; k++) CHECK(same_params(&runs[0].member[k], &runs[1].member[k]));
    CHECK(!same_params(&runs[0].member[0], &runs[0].member[1])); /* two seeds, two models */
    /* member 1 is the model a run alone with seed 1007 trains */
    kgl_run_spec spec;
    family_spec(&spec, &ds, 40, 20);
    spec.st.seed = 1007;
    kgl_run alone;
    CHECK(kgl_run_train(&alone, &spec) == 0);
    CHECK(same_params(&alone.member[0], &runs[0].member[1]));
    kgl_run_free(&alone);
    for (int j = 0; j < 2; j++) kgl_run_free(&runs[j]);
    kgl_dataset_free(&ds);
}

TEST(run_a_nonfinite_loss_fails_the_run_and_starts_no_other_member)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run_spec spec;
    family_spec(&spec, &ds, 50, 0);
    spec.st.optim.kind = KGL_OPT_SGD;
    spec.st.base_lr = 1e6; /* diverges within a few steps */
    spec.members = 2;
    kgl_run run;
    CHECK(kgl_run_train(&run, &spec) == 1);
    CHECK(run.trained == 1 && run.failed == 0);
    CHECK(run.member[0].status == 1);
    CHECK(run.member[0].nonfinite_step > 0 && run.member[0].nonfinite_step <= 50);
    CHECK(!isfinite(run.member[0].final_loss));
    kgl_run_free(&run);
    kgl_dataset_free(&ds);
}

TEST(run_save_writes_the_set_member_0_lists_with_one_run_id)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run_spec spec;
    family_spec(&spec, &ds, 20, 0);
    spec.members = 3;
    kgl_run run;
    CHECK(kgl_run_train(&run, &spec) == 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/e.safetensors", T->tmp);
    CHECK(kgl_run_save(&run, path, NULL, NULL));
    kgl_checkpoint ck[3];
    char err[1024];
    for (int k = 0; k < 3; k++) {
        char *member = kgl_member_path(path, k);
        CHECK(run.member[k].saved);
        if (!CHECK(kgl_checkpoint_open(member, &ds, &ck[k], err, sizeof err))) {
            printf("    %s\n", err);
            free(member);
            return;
        }
        free(member);
        CHECK(ck[k].st.seed == 1 + 1000u * (unsigned)k);
        CHECK(ck[k].st.step == 20);
    }
    CHECK(strcmp(ck[0].st.members, "e.m1.safetensors\ne.m2.safetensors") == 0);
    CHECK(ck[1].st.members[0] == '\0' && ck[2].st.members[0] == '\0');
    CHECK(strlen(ck[0].st.run_id) == 16);
    CHECK(strcmp(ck[0].st.run_id, ck[1].st.run_id) == 0 && strcmp(ck[0].st.run_id, ck[2].st.run_id) == 0);
    for (int k = 0; k < 3; k++) kgl_checkpoint_close(&ck[k]);
    kgl_run_free(&run);
    kgl_dataset_free(&ds);
}

TEST(member_path_puts_the_member_before_the_extension)
{
    const char *cases[][3] = {{"x.safetensors", "x.safetensors", "x.m2.safetensors"},
                              {"dir.d/x", "dir.d/x", "dir.d/x.m2"},
                              {".hidden", ".hidden", ".hidden.m2"},
                              {"a/b.c.st", "a/b.c.st", "a/b.c.m2.st"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int member = 0; member <= 2; member += 2) {
            char *p = kgl_member_path(cases[k][0], member);
            if (!CHECK(strcmp(p, cases[k][member ? 2 : 1]) == 0)) printf("    %s member %d: %s\n", cases[k][0], member, p);
            free(p);
        }
    CHECK(kgl_member_path(NULL, 1) == NULL);
}

static void count_rows(void *ctx, kgl_run_member *m, long step, double loss, bool evaluated, bool stopping)
{
    (void)m, (void)loss, (void)evaluated, (void)stopping;
    seen *s = ctx;
    if (s->n < 256) s->step[s->n++] = step;
}

TEST(run_without_log_every_or_members_writes_the_last_row_of_one_model)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run_spec spec;
    family_spec(&spec, &ds, 25, 0);
    spec.log_every = 0; /* was a division by zero */
    spec.members = 0, spec.jobs = 0, spec.job_threads = 0;
    seen s = {0};
    spec.cb = (kgl_run_callbacks){.ctx = &s, .row = count_rows};
    kgl_run run;
    CHECK(kgl_run_train(&run, &spec) == 0);
    CHECK(run.trained == 1 && run.member[0].steps_run == 25);
    CHECK(s.n == 1 && s.step[0] == 25);
    kgl_run_free(&run);
    kgl_dataset_free(&ds);
}

/* The log's callbacks as kgl train's: the header when a member starts, its
   diagnostics measured at the rows, a row from each row callback. */
typedef struct log_probe {
    FILE *f;
    kgl_diag diag;
    bool use[64];
    double loss[256]; /* the loss of each row's step, by row */
    double mrr[256];  /* the valid MRR the run reports at an evaluated row (NaN elsewhere) */
    int rows;
    long steps; /* taken, for a stop */
} log_probe;

static int log_start(void *ctx, kgl_run_member *m)
{
    log_probe *p = ctx;
    kgl_diag_init(&p->diag, &m->tr);
    m->diag = &p->diag;
    kgl_run_log_header(p->f, m, p->use);
    return 0;
}

static void log_write_row(void *ctx, kgl_run_member *m, long step, double loss, bool evaluated, bool stopping)
{
    (void)stopping;
    log_probe *p = ctx;
    if (p->rows < 256) p->loss[p->rows] = loss, p->mrr[p->rows++] = evaluated ? m->valid_ev.both.mrr : NAN;
    kgl_run_log_row(p->f, m, &p->diag, p->use, step, loss, evaluated, 1.5);
}

/* The fields of one CSV line (no quoted field in this log), cut in place. */
static int csv_fields(char *line, char **field, int max)
{
    int n = 0;
    for (char *f = line; n < max; f++) {
        field[n++] = f;
        f = strchr(f, ',');
        if (!f) break;
        *f = 0;
    }
    return n;
}

/* The header names every column (relations out of use_relation left out),
   each row has as many fields, its loss the step's, its head columns
   measured, and the valid columns only at an evaluated step, with the MRR
   the run reported there. */
TEST(run_log_has_a_column_a_value_and_valid_ranks_where_evaluated)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run_spec spec;
    family_spec(&spec, &ds, 20, 10);
    spec.log_every = 5;
    static log_probe p;
    char path[4200];
    snprintf(path, sizeof path, "%s/run.csv", T->tmp);
    p.f = fopen(path, "w");
    if (!CHECK(p.f && ds.n_relations <= 64)) return;
    for (int r = 0; r < ds.n_relations; r++) p.use[r] = r != 0;
    spec.cb = (kgl_run_callbacks){.ctx = &p, .start = log_start, .row = log_write_row};
    kgl_run run;
    CHECK(kgl_run_train(&run, &spec) == 0);
    fclose(p.f);
    kgl_diag_free(&p.diag);
    char *text = test_slurp(path, NULL), *save = NULL, *field[4096];
    if (!CHECK(text != NULL)) return;
    int heads = 2, per_head = 11 + ds.n_relations - 1, width = 6 + heads * per_head + 3;
    char *line = strtok_r(text, "\n", &save);
    char spec0[600], spec1[600];
    snprintf(spec0, sizeof spec0, ",h0_spec_%s,", ds.relation_names[0]);
    snprintf(spec1, sizeof spec1, ",h1_spec_%s,", ds.relation_names[1]);
    const char *first = "step,loss,main_loss,aux_loss,lr,seconds,h0_max_prob_mean,h0_max_prob_min,";
    CHECK(strncmp(line, first, strlen(first)) == 0);
    CHECK(!strstr(line, spec0) && strstr(line, spec1));
    int n = csv_fields(line, field, 4096);
    if (!CHECK(n == width)) printf("    %d columns, not %d\n", n, width);
    CHECK(strcmp(field[n - 3], "valid_mrr") == 0 && strcmp(field[n - 1], "valid_hits10") == 0);
    int rows = 0;
    for (; (line = strtok_r(NULL, "\n", &save)); rows++) {
        n = csv_fields(line, field, 4096);
        long step = strtol(field[0], NULL, 10);
        if (!CHECK(n == width && step == 5L * (rows + 1))) printf("    row %d: %d fields, step %ld\n", rows, n, step);
        if (n != width) break;
        CHECK(rows < p.rows && strtod(field[1], NULL) == p.loss[rows]); /* 17 digits read back exactly */
        CHECK(strcmp(field[5], "1.500000") == 0);
        double max_prob = strtod(field[6], NULL); /* a mean of softmax rows' largest weights */
        CHECK(field[6][0] && max_prob > 0 && max_prob <= 1);
        bool evaluated = step % 10 == 0;
        CHECK(evaluated == (field[n - 3][0] != 0) && evaluated == (field[n - 1][0] != 0));
        if (evaluated) CHECK(rows < p.rows && strtod(field[n - 3], NULL) == p.mrr[rows]);
    }
    CHECK(rows == 4);
    const kgl_run_member *m = &run.member[0];
    CHECK(m->best_step == 10 || m->best_step == 20);
    free(text);
    kgl_run_free(&run);
    kgl_dataset_free(&ds);
}

static void log_count_steps(void *ctx, kgl_run_member *m, long work)
{
    (void)m;
    ((log_probe *)ctx)->steps += work;
}

static bool log_stop_at_7(void *ctx) { return ((log_probe *)ctx)->steps >= 7; }

/* A step the run stops at (Ctrl-C) gets its row, but its heads were not
   measured: their columns are empty, not the last measurement's. */
TEST(run_log_row_of_a_stopped_step_leaves_its_heads_empty)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run_spec spec;
    family_spec(&spec, &ds, 20, 0);
    spec.log_every = 5;
    static log_probe p;
    char path[4200];
    snprintf(path, sizeof path, "%s/stopped.csv", T->tmp);
    p.f = fopen(path, "w");
    if (!CHECK(p.f && ds.n_relations <= 64)) return;
    for (int r = 0; r < ds.n_relations; r++) p.use[r] = true;
    spec.cb = (kgl_run_callbacks){.ctx = &p, .start = log_start, .progress = log_count_steps, .row = log_write_row,
                                  .stop = log_stop_at_7};
    kgl_run run;
    CHECK(kgl_run_train(&run, &spec) == 0);
    fclose(p.f);
    kgl_diag_free(&p.diag);
    char *text = test_slurp(path, NULL), *save = NULL, *field[4096];
    if (!CHECK(text != NULL)) return;
    strtok_r(text, "\n", &save); /* the header */
    long steps[2] = {5, 7};
    for (int row = 0; row < 2; row++) {
        char *line = strtok_r(NULL, "\n", &save);
        if (!CHECK(line != NULL)) break;
        int n = csv_fields(line, field, 4096);
        CHECK(n > 7 && strtol(field[0], NULL, 10) == steps[row]);
        CHECK(field[1][0] != 0);                          /* the loss, always */
        CHECK((field[6][0] != 0) == (row == 0) && (field[n - 1][0] != 0) == (row == 0)); /* heads: measured at 5 only */
    }
    CHECK(strtok_r(NULL, "\n", &save) == NULL);
    free(text);
    kgl_run_free(&run);
    kgl_dataset_free(&ds);
}

/* kgl_run_log as a program uses it: opened when a member starts, a row
   from each row callback, closed at its end. */
typedef struct log_file_probe {
    kgl_run_log log;
    const char *path;
    bool use[64];
    int failures;          /* writes that returned false */
    char first_error[512];
    bool on_disk_before_close; /* the path existed before the close: not written whole */
    bool closed;
    char close_error[512];
    bool diag_dropped;     /* m->diag was NULL after the failed write */
} log_file_probe;

static int log_file_start(void *ctx, kgl_run_member *m)
{
    log_file_probe *p = ctx;
    char err[512];
    return kgl_run_log_open(&p->log, p->path, m, p->use, err, sizeof err) ? 0 : 3;
}

static void log_file_row(void *ctx, kgl_run_member *m, long step, double loss, bool evaluated, bool stopping)
{
    log_file_probe *p = ctx;
    char err[512];
    if (!kgl_run_log_write(&p->log, m, p->use, step, loss, evaluated, stopping, 0.25, err, sizeof err)) {
        if (p->failures++ == 0) snprintf(p->first_error, sizeof p->first_error, "%s", err);
        p->diag_dropped = m->diag == NULL;
    }
}

static void log_file_end(void *ctx, kgl_run_member *m)
{
    log_file_probe *p = ctx;
    struct stat sb;
    p->on_disk_before_close = stat(p->path, &sb) == 0 && S_ISREG(sb.st_mode);
    p->closed = kgl_run_log_close(&p->log, m, p->close_error, sizeof p->close_error);
}

TEST(run_log_file_written_whole_or_dropped_once)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run_spec spec;
    family_spec(&spec, &ds, 20, 0);
    spec.log_every = 5;
    char path[4200];
    snprintf(path, sizeof path, "%s/whole.csv", T->tmp);
    static log_file_probe p;
    memset(&p, 0, sizeof p);
    p.path = path;
    for (int r = 0; r < ds.n_relations && r < 64; r++) p.use[r] = true;
    spec.cb = (kgl_run_callbacks){.ctx = &p, .start = log_file_start, .row = log_file_row, .end = log_file_end};
    kgl_run run;
    CHECK(kgl_run_train(&run, &spec) == 0);
    CHECK(p.failures == 0 && p.closed && !p.on_disk_before_close);
    char *text = test_slurp(path, NULL);
    if (CHECK(text != NULL)) {
        int lines = 0;
        for (const char *c = text; *c; c++) lines += *c == '\n';
        CHECK(lines == 5 && strncmp(text, "step,loss,main_loss,", 20) == 0); /* the header, steps 5 to 20 */
        CHECK(strstr(text, "\n20,") != NULL && strstr(text, ",0.250000,") != NULL);
    }
    free(text);
    kgl_run_free(&run);

    /* a full disk: the first flush fails, is reported once, and the run goes on without the log */
    memset(&p, 0, sizeof p);
    p.path = "/dev/full";
    for (int r = 0; r < ds.n_relations && r < 64; r++) p.use[r] = true;
    CHECK(kgl_run_train(&run, &spec) == 0);
    CHECK(p.failures == 1 && p.diag_dropped);
    CHECK(strcmp(p.first_error, "cannot write the log /dev/full: No space left on device") == 0);
    CHECK(!p.closed && p.close_error[0] == 0); /* failed before, said then */
    CHECK(run.member[0].steps_run == 20);
    kgl_run_free(&run);
    kgl_dataset_free(&ds);
}

/* The fields kgl train --json opens with, written by the library from a
   run: an ensemble of two selecting on valid, then one model that does not. */
TEST(run_json_fields_of_a_run_and_its_members)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run_spec spec;
    family_spec(&spec, &ds, 20, 10);
    spec.members = 2;
    kgl_run run;
    if (!CHECK(kgl_run_train(&run, &spec) == 0)) return;
    char *text = NULL, got[64];
    size_t len;
    FILE *f = open_memstream(&text, &len);
    if (!CHECK(f != NULL)) return;
    kgl_json_writer w;
    kgl_json_writer_init(&w, f);
    kgl_json_begin_object(&w);
    kgl_run_json_fields(&w, &run, true);
    kgl_json_key(&w, "member1");
    kgl_json_begin_object(&w);
    kgl_run_json_member_fields(&w, &run.member[1]);
    kgl_json_end_object(&w);
    kgl_json_end_object(&w);
    kgl_json_writer_finish(&w);
    fclose(f);
    const kgl_run_member *m0 = &run.member[0], *m1 = &run.member[1];
    char want[256];
    CHECK(strncmp(text, "{\"steps\":20,\"final_loss\":", 25) == 0);
    snprintf(want, sizeof want, "\"interrupted\":true,\"best_step\":%ld,\"best_valid_mrr\":", m0->best_step);
    CHECK(strstr(text, want) != NULL);
    snprintf(want, sizeof want, ",\"evaluations\":2,\"stopped_early\":false,\"params\":%zu,\"ensemble\":2,",
             m0->tr.model.params.total + m1->tr.model.params.total);
    CHECK(strstr(text, want) != NULL);
    CHECK(test_json_raw(text, "final_loss", got, sizeof got) && strtod(got, NULL) == m0->final_loss);
    CHECK(test_json_raw(text, "precision", got, sizeof got) && strcmp(got, "\"" KGL_PRECISION "\"") == 0);
    snprintf(want, sizeof want, "\"member1\":{\"seed\":%llu,\"steps\":20,\"seconds\":", (unsigned long long)m1->seed);
    CHECK(strstr(text, want) != NULL);
    snprintf(want, sizeof want, ",\"best_step\":%ld,\"best_valid_mrr\":", m1->best_step);
    CHECK(strstr(strstr(text, "\"member1\"") ? strstr(text, "\"member1\"") : text, want) != NULL);
    free(text);
    kgl_run_free(&run);

    family_spec(&spec, &ds, 3, 0);
    if (!CHECK(kgl_run_train(&run, &spec) == 0)) return;
    f = open_memstream(&text, &len);
    if (!CHECK(f != NULL)) return;
    kgl_json_writer_init(&w, f);
    kgl_json_begin_object(&w);
    kgl_run_json_fields(&w, &run, false);
    kgl_json_end_object(&w);
    kgl_json_writer_finish(&w);
    fclose(f);
    CHECK(strstr(text, "\"interrupted\":false,\"params\":") != NULL); /* no selection: no best step */
    CHECK(strstr(text, "best_step") == NULL && strstr(text, "\"ensemble\":1}") != NULL);
    CHECK(test_json_raw(text, "fit_step", got, sizeof got) &&
          (run.member[0].fit_step >= 0 ? strtol(got, NULL, 10) == run.member[0].fit_step : strcmp(got, "null") == 0));
    free(text);
    kgl_run_free(&run);
    kgl_dataset_free(&ds);
}

/* kgl train's sharing of threads among the members that train at once,
   and what a run of a spec asks of memory. */
TEST(run_spec_threads_and_memory)
{
    kgl_dataset ds;
    if (!load_family(T, &ds)) return;
    kgl_run_spec spec;
    family_spec(&spec, &ds, 20, 10);
    spec.members = 5;
    kgl_run_spec_threads(&spec, 8, 0); /* one member a thread, at most the members */
    CHECK(spec.jobs == 5 && spec.job_threads == 1);
    kgl_run_spec_threads(&spec, 8, 2);
    CHECK(spec.jobs == 2 && spec.job_threads == 4);
    kgl_run_spec_threads(&spec, 3, 2);
    CHECK(spec.jobs == 2 && spec.job_threads == 1);
    kgl_run_spec_threads(&spec, 0, 1); /* every core, one member at a time */
    CHECK(spec.jobs == 1 && spec.job_threads == kgl_cores());
    spec.members = 1;
    kgl_run_spec_threads(&spec, 4, 3);
    CHECK(spec.jobs == 1 && spec.job_threads == 4);

    spec.members = 3;
    kgl_run_spec_threads(&spec, 4, 2);
    spec.st.batch = 77;
    int head_of[64] = {0};
    spec.head_of = head_of;
    kgl_memory_run r;
    kgl_run_memory(&spec, 9999, &r);
    CHECK(r.cfg.dim == 16 && r.tc.batch == 77 && r.tc.head_of == head_of && r.n_train == spec.n_train);
    CHECK(r.ranked == 9999 && r.triples == (long)spec.n_train + spec.n_valid + 9999);
    CHECK(r.members == 3 && r.jobs == 2 && r.threads == 4 && r.selecting && !r.options);
    kgl_run_memory(&spec, 0, &r);
    CHECK(r.ranked == (spec.n_train > spec.n_valid ? spec.n_train : spec.n_valid));
    kgl_dataset_free(&ds);
}

/* What one of kgl train's report writers wrote to a memory stream (malloc'd). */
static char *run_text(void (*write)(FILE *, const kgl_run *), const kgl_run *run)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    write(f, run);
    fclose(f);
    return text;
}

/* Whether text is exactly want; if not, both said. */
static bool text_is(char *text, const char *want)
{
    bool same = text && strcmp(text, want) == 0;
    if (!same) printf("    got  '%s'\n    want '%s'\n", text ? text : "(none)", want);
    free(text);
    return same;
}

/* kgl train's report as text (kgl_run_fit_write, kgl_run_selection_write,
   kgl_run_member_write, kgl_run_totals_write, kgl_run_summary_write) for
   runs made by hand: one model selected on valid, one that never ranked
   valid, an ensemble of two, each number where the report puts it. */
TEST(run_report_as_text)
{
    static kgl_run_member m[2]; /* large: not on the stack */
    memset(m, 0, sizeof m);
    kgl_run run = {.member = m, .trained = 1, .seconds = 1.5};
    run.spec.eval_every = 10;
    m[0] = (kgl_run_member){.seed = 1, .steps_run = 40, .final_loss = 0.5, .evaluations = 4, .best_step = 30,
                            .best_mrr = 0.75, .fit_step = 20, .track_fit = true};
    m[0].tr.model.cfg.dim = 16, m[0].tr.model.cfg.heads = 2;
    m[1] = (kgl_run_member){.seed = 1001, .steps_run = 30, .evaluations = 3, .best_step = 20, .fit_step = -1};
    CHECK(text_is(run_text(kgl_run_fit_write, &run),
                  "\nfit: every training triple ranks first (tail and head) after step 20\n"));
    CHECK(text_is(run_text(kgl_run_selection_write, &run),
                  "\nmodel selection: best valid MRR 0.7500 at step 30 (4 evaluations); the metrics above and the "
                  "checkpoint are of that model\n"));
    CHECK(text_is(run_text(kgl_run_totals_write, &run), "\n40 steps in 1.50 s, final loss 0.500000\n"));
    const char *split[3] = {"train", "valid", "test"};
    const bool ranked[3] = {false, true, true};
    const kgl_metrics both[3] = {{0}, {.mrr = 0.5, .hits1 = 0.25, .hits10 = 1}, {.mrr = 0.25, .hits1 = 0.125, .hits10 = 0.5}};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    kgl_run_summary_write(f, &run, "2s", split, ranked, both);
    fclose(f);
    CHECK(text_is(text, "kgl train: a model (d_model 16, 2 heads), 40 steps in 2s, final loss 0.500000, best valid at "
                        "step 30; valid MRR 0.500 H@1 0.250 H@10 1.000; test MRR 0.250 H@1 0.125 H@10 0.500\n"));

    m[0].evaluations = 0, m[0].fit_step = -1; /* stopped before the first evaluation, never fit */
    CHECK(text_is(run_text(kgl_run_fit_write, &run), "\nfit: not every training triple ranks first after 40 steps\n"));
    CHECK(text_is(run_text(kgl_run_selection_write, &run),
                  "\nmodel selection: no evaluation ran (--eval-every 10); the metrics above and the checkpoint are "
                  "of the last step, 40\n"));
    m[0].track_fit = false; /* untracked: nothing said */
    CHECK(text_is(run_text(kgl_run_fit_write, &run), ""));

    run.trained = 2, m[0].evaluations = 4; /* an ensemble: member 1 stopped at 30 steps */
    CHECK(text_is(run_text(kgl_run_selection_write, &run),
                  "\nensemble of 2 models: every metric above ranks by the mean of their probabilities. Alone:\n"));
    f = open_memstream(&text, &len);
    kgl_run_member_write(f, &run, 1, split, ranked, both);
    fclose(f);
    CHECK(text_is(text, "  member 1  seed 1001    valid MRR 0.5000 H@1 0.2500  test MRR 0.2500 H@1 0.1250  (best valid "
                        "at step 20)\n"));
    CHECK(text_is(run_text(kgl_run_totals_write, &run), "\n2 models in 1.50 s, member 0: 40 steps, final loss 0.500000\n"));
    f = open_memstream(&text, &len);
    kgl_run_summary_write(f, &run, "2s", split, ranked, both);
    fclose(f);
    CHECK(text_is(text, "kgl train: an ensemble of 2 models (d_model 16, 2 heads), 30-40 steps each, in 2s; valid MRR "
                        "0.500 H@1 0.250 H@10 1.000; test MRR 0.250 H@1 0.125 H@10 0.500\n"));
}
