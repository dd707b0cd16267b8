/* model_benchmark.c — what the benchmark work added: learning on Nations,
 * ranks, schedules, dropout, model selection, `kgl benchmark` end to end. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

static char out[1 << 17], err[1 << 14];

/* The folder of the public KG benchmarks: KG_DATA (the Makefile passes it),
   else data/kg, where the repository ships them. NULL when Nations is not
   there, which the tests count as a failure: the data is part of the clone. */
static const char *kg_data(void)
{
    const char *dir = getenv("KG_DATA");
    if (!dir || !*dir) dir = "data/kg";
    char path[1024];
    snprintf(path, sizeof path, "%s/nations/train.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    fclose(f);
    return dir;
}

/* Each data/kg/<files[k][0]>.txt has the git blob id files[k][1] (skipped without git). */
static void check_blob_ids(test_ctx *T, const char *const files[][2], size_t n)
{
    for (size_t k = 0; k < n; k++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "command -v git >/dev/null || exit 77; git hash-object data/kg/%s.txt", files[k][0]);
        int st = run_sh(T, cmd, out, sizeof out, err, sizeof err);
        if (st == 77) {
            test_skip(T, "git not installed");
            return;
        }
        if (!CHECK(st == 0 && strncmp(out, files[k][1], 40) == 0)) printf("    %s: %.40s\n", files[k][0], out);
    }
}

/* The three small benchmarks in data/kg are byte for byte the published
   split (data/kg/README.md lists their git blob ids), Kinship with them. */
TEST(small_benchmark_data_is_the_published_files)
{
    static const char *const files[][2] = {
        {"umls/train", "e18374ce247e459b388b74378c6f185248866585"},
        {"umls/valid", "34b12e146f2bac5dc5b96f8e6fdbf08e95088dcf"},
        {"umls/test", "821261fdf02fe642879e64b00572b3529a1c7147"},
        {"kinship/train", "f4c26d1abb3e3f5aa98b18c29db021111674c745"},
        {"kinship/valid", "d2e83b1d9dc323c61ad7ca36b24061d89d7a42e4"},
        {"kinship/test", "5f1781e9df270c3d56f1952458b7b687b3baefc4"},
        {"nations/train", "0cc3159d8575b7cf104373822aaf7bb6dce69cfc"},
        {"nations/valid", "cff2dc60b1ca74596fbac326d20b8fd88a8e04e1"},
        {"nations/test", "2adc0ff73deeccc383928435cfc6c4e1ad93d27d"},
    };
    check_blob_ids(T, files, sizeof files / sizeof files[0]);
}

/* The mid-size graph, Family, is Neural LP's datasets/family (data/kg/README.md):
   valid.txt and test.txt byte for byte its files (their blob ids there), and
   train.txt its facts.txt followed by its train.txt (facts blob f24b91a…,
   train blob d2627fa…), which is what an embedding model trains on. */
TEST(family_data_is_neural_lp_facts_then_train)
{
    static const char *const files[][2] = {
        {"family/train", "327f44b8636be6d8e5d8c4b634f81701f0fceee5"},
        {"family/valid", "11658d240f29e1f8f0b006dad1d96847d40fded5"},
        {"family/test", "2ad679b0154e18e776431cb6e743d95f87631f77"},
    };
    check_blob_ids(T, files, sizeof files / sizeof files[0]);
}

/* Reads a whole file (NUL-terminated, up to cap − 1 bytes); 0 when absent or empty. */
static size_t read_text(const char *path, char *buf, size_t cap)
{
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return n;
}

static double json_number_after(const char *json, const char *key)
{
    const char *p = strstr(json, key);
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

/* Nations (14 entities, 55 relations): 300 steps of a small layer take about
   a second. Measured (d 32, 4 heads, seeds 1-3): untrained valid MRR 0.33,
   0.34, 0.36; best valid MRR after 300 steps 0.759, 0.751, 0.745. The checks
   leave a wide margin under those: +0.3 over the untrained model, and 0.65. */
TEST(nations_valid_mrr_rises_well_above_untrained)
{
    const char *dir = kg_data();
    if (!dir) {
        CHECK(!"nations/ is missing from KG_DATA (default data/kg, shipped with the repository)");
        return;
    }
    char files[3200], cmd[4096];
    snprintf(files, sizeof files, "--train %s/nations/train.txt --valid %s/nations/valid.txt --test %s/nations/test.txt",
             dir, dir, dir);
    snprintf(cmd, sizeof cmd, "train %s --dim 32 --heads 4 --steps 0 --json", files);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    const char *valid = strstr(out, "\"valid\":{\"tail\":");
    double before = valid ? json_number_after(valid, "\"both\":{\"mrr\":") : NAN;
    snprintf(cmd, sizeof cmd, "train %s --dim 32 --heads 4 --steps 300 --eval-every 50 --json", files);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    double best = json_number_after(out, "\"best_valid_mrr\":");
    printf("    Nations valid MRR: untrained %.3f, best after 300 steps %.3f\n", before, best);
    CHECK(before > 0.2 && before < 0.45);
    CHECK(best >= before + 0.3);
    CHECK(best >= 0.65);
    CHECK(strstr(out, "\"steps\":300,") != NULL);
}

TEST(optimistic_and_pessimistic_ranks)
{
    double s[6] = {1.0, 3.0, 3.0, 2.0, 3.0, 0.5}, lo, hi;
    kgl_filtered_rank_range(s, 6, 1, NULL, 0, &lo, &hi); /* tied with 2 and 4 */
    CHECK(lo == 1 && hi == 3);
    CHECK(kgl_filtered_rank(s, 6, 1, NULL, 0) == 2); /* realistic: the mean */
    int known[1] = {4};
    kgl_filtered_rank_range(s, 6, 1, known, 1, &lo, &hi); /* 4 is another answer: filtered */
    CHECK(lo == 1 && hi == 2);
    kgl_filtered_rank_range(s, 6, 3, NULL, 0, &lo, &hi); /* three higher, no tie */
    CHECK(lo == 4 && hi == 4);
    double nan_s[2] = {NAN, 1};
    kgl_filtered_rank_range(nan_s, 2, 0, NULL, 0, &lo, &hi);
    CHECK(lo == 2 && hi == 2);
    /* in the evaluation: a model whose scores all tie (every parameter 0) ranks
       every answer first optimistically, and at the tie midpoint realistically */
    kgl_dataset ds;
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[256];
    if (!CHECK(kgl_dataset_load(&ds, &src, 1, e, sizeof e))) return;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.n_entities = ds.n_entities;
    cfg.n_relations = ds.n_relations;
    kgl_model m;
    kgl_model_create(&m, &cfg);
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    kgl_forward f;
    kgl_model_context(&m, &t, &f);
    kgl_eval ev;
    kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
    kgl_evaluate(&m, f.context, &ds, ds.splits[0].triples, ds.splits[0].n, &ev);
    CHECK(ev.both_optimistic.n == 42 && ev.both_optimistic.mrr == 1 && ev.both_optimistic.hits1 == 1);
    CHECK(ev.tail_optimistic.n == 21 && ev.head_optimistic.n == 21);
    CHECK(ev.both.mrr < 0.2);
    kgl_eval_free(&ev);
    kgl_tape_free(&t);
    kgl_model_free(&m);
    kgl_dataset_free(&ds);
}

TEST(schedule_factors)
{
    kgl_schedule s = {KGL_SCHED_COSINE, 0, 100, 0.0};
    CHECK_NEAR(kgl_schedule_factor(&s, 0), 1.0, 1e-15);
    CHECK_NEAR(kgl_schedule_factor(&s, 50), 0.5, 1e-15);
    CHECK_NEAR(kgl_schedule_factor(&s, 100), 0.0, 1e-15);
    CHECK_NEAR(kgl_schedule_factor(&s, 150), 0.0, 1e-15); /* stays at the floor */
    s.floor = 0.1;
    CHECK_NEAR(kgl_schedule_factor(&s, 100), 0.1, 1e-15);
    s = (kgl_schedule){KGL_SCHED_LINEAR, 10, 100, 0.0};
    CHECK_NEAR(kgl_schedule_factor(&s, 5), 0.5 * 0.95, 1e-15); /* warmup 5/10 of the linear decay's 0.95 */
    CHECK_NEAR(kgl_schedule_factor(&s, 40), 0.6, 1e-15);
    s = (kgl_schedule){KGL_SCHED_CONSTANT, 4, 0, 0.0};
    CHECK_NEAR(kgl_schedule_factor(&s, 1), 0.25, 1e-15);
    CHECK_NEAR(kgl_schedule_factor(&s, 4), 1.0, 1e-15);
}

/* A trainer on the embedded academic world (Adam defaults, FFN width `ffn`,
   `batch` examples a step) with the regularisers `reg` turned on. */
static bool regularised_trainer(test_ctx *T, kgl_dataset *ds, kgl_trainer *tr, int ffn, int batch, uint64_t seed,
                                const kgl_regularisers *reg)
{
    kgl_source src = {"data/academic.tsv", kgl_academic_tsv, kgl_academic_tsv_len};
    char e[256];
    if (!CHECK(kgl_dataset_load(ds, &src, 1, e, sizeof e))) return false;
    kgl_config cfg;
    kgl_config_defaults(&cfg);
    cfg.ffn = ffn;
    kgl_train_config tc = {batch, seed, {0}, NULL, 1, false, false};
    kgl_optim_defaults(&tc.optim);
    kgl_trainer_init(tr, ds, ds->splits[0].triples, ds->splits[0].n, &cfg, &tc);
    kgl_trainer_set_regularisers(tr, reg);
    return true;
}

/* Turning dropout on changes neither the initial parameters (its stream is
   its own) nor evaluation (off there); a seed gives the same bits. */
TEST(dropout_is_seeded_separate_and_off_at_evaluation)
{
    char cmd[1024], a[600], b[600];
    snprintf(a, sizeof a, "%s/d0.st", T->tmp);
    snprintf(b, sizeof b, "%s/d1.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --steps 0 --ffn 8 --save %s --quiet", a);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd,
             "train --steps 0 --ffn 8 --dropout 0.3 --attn-dropout 0.2 --hidden-dropout 0.3 --save %s --quiet", b);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    kgl_st_file fa, fb;
    char e[512];
    if (!CHECK(kgl_st_read(a, &fa, e, sizeof e) && kgl_st_read(b, &fb, e, sizeof e))) return;
    CHECK(fa.n == fb.n);
    for (int k = 0; k < fa.n && k < fb.n; k++) {
        const kgl_st_tensor *x = &fa.tensors[k], *y = kgl_st_find(&fb, x->name);
        CHECK(y && memcmp(x->data, y->data, (size_t)(x->shape[0] * x->shape[1]) * sizeof(double)) == 0);
    }
    CHECK(strcmp(kgl_st_meta(&fb, "dropout"), "0.29999999999999999") == 0);
    CHECK(kgl_st_meta(&fb, "dropout_state") != NULL);
    kgl_st_free(&fa);
    kgl_st_free(&fb);

    /* the same seed, the same bits; without dropout another run */
    static char first[1 << 12];
    const char *args = "train --steps 30 --ffn 8 --dropout 0.2 --attn-dropout 0.1 --hidden-dropout 0.2 --json";
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    char *fl = strstr(out, "\"final_loss\":");
    if (!CHECK(fl != NULL)) return;
    snprintf(first, sizeof first, "%.40s", fl);
    CHECK(run_kgl(T, args, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, first) != NULL);
    CHECK(run_kgl(T, "train --steps 30 --ffn 8 --json", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, first) == NULL);

    /* off at evaluation: the trainer's context is the plain forward, twice the same */
    kgl_dataset ds;
    kgl_trainer tr;
    kgl_regularisers reg = {.dropout = 0.5, .attn_dropout = 0.5, .hidden_dropout = 0.5,
                            .label_smoothing = 0.1};
    if (!regularised_trainer(T, &ds, &tr, 8, 10, 5, &reg)) return;
    for (int s = 0; s < 5; s++) kgl_trainer_step(&tr);
    kgl_rng before = tr.dropout_rng;
    kgl_forward f;
    kgl_tensor *C = kgl_trainer_context(&tr, &f);
    size_t nd = kgl_numel(C);
    double *c1 = malloc(nd * sizeof(double));
    memcpy(c1, C->data, nd * sizeof(double));
    kgl_tape plain;
    kgl_tape_init(&plain);
    plain.recording = false;
    kgl_forward g;
    kgl_model_context(&tr.model, &plain, &g);
    CHECK(memcmp(c1, g.context->data, nd * sizeof(double)) == 0);
    CHECK(memcmp(&before, &tr.dropout_rng, sizeof before) == 0); /* evaluation draws nothing */
    /* and a training step does draw */
    kgl_trainer_step(&tr);
    CHECK(memcmp(&before, &tr.dropout_rng, sizeof before) != 0);
    free(c1);
    kgl_tape_free(&plain);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* A regularised step allocates nothing either: dropout masks live in the
   tape's arena; nor does model selection (evaluate, snapshot) between steps. */
TEST(no_allocation_inside_a_regularised_training_step)
{
    kgl_dataset ds;
    kgl_trainer tr;
    kgl_regularisers reg = {.dropout = 0.2, .attn_dropout = 0.1, .hidden_dropout = 0.3,
                            .label_smoothing = 0.1};
    if (!regularised_trainer(T, &ds, &tr, 8, 10, 3, &reg)) return;
    kgl_schedule sched = {KGL_SCHED_COSINE, 5, 60, 0.1};
    kgl_trainer_set_schedule(&tr, &sched);
    kgl_eval ev;
    kgl_eval_init(&ev, ds.n_entities, ds.n_relations);
    kgl_snapshot snap = {0};
    for (int s = 0; s < 6; s++) kgl_trainer_step(&tr), kgl_trainer_fits(&tr, &ev), kgl_trainer_snapshot(&tr, &snap);
    long before = test_alloc_count();
    for (int s = 0; s < 40; s++) {
        kgl_trainer_step(&tr);
        kgl_trainer_fits(&tr, &ev);
        kgl_trainer_snapshot(&tr, &snap);
        if (s == 20) kgl_trainer_restore(&tr, &snap);
    }
    CHECK(test_alloc_count() == before);
    kgl_snapshot_free(&snap);
    kgl_eval_free(&ev);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* Restoring a snapshot continues exactly as from that moment (parameters,
   moments, batch position, dropout stream): the best model's run goes on as
   if nothing had happened. */
TEST(snapshot_restore_continues_exactly)
{
    kgl_dataset ds;
    kgl_trainer tr;
    kgl_regularisers reg = {.dropout = 0.2, .attn_dropout = 0.1, .hidden_dropout = 0.3,
                            .label_smoothing = 0.1};
    if (!regularised_trainer(T, &ds, &tr, 0, 8, 9, &reg)) return;
    kgl_snapshot snap = {0};
    double want[10], got[10];
    for (int s = 0; s < 7; s++) kgl_trainer_step(&tr); /* 7 batches of 8 in 42 examples: inside an epoch */
    kgl_trainer_snapshot(&tr, &snap);
    for (int s = 0; s < 10; s++) want[s] = kgl_trainer_step(&tr);
    kgl_trainer_restore(&tr, &snap);
    for (int s = 0; s < 10; s++) got[s] = kgl_trainer_step(&tr);
    CHECK(memcmp(want, got, sizeof want) == 0);
    CHECK(tr.optim.step == 17);
    kgl_snapshot_free(&snap);
    kgl_trainer_free(&tr);
    kgl_dataset_free(&ds);
}

/* --eval-every: the model that scores best on valid is the one reported and
   saved; the test triples choose nothing (another test file, the same run);
   --patience stops early. */
TEST(eval_every_keeps_the_best_model_and_ignores_test)
{
    /* held-out triples over the academic world's names (so the ids do not
       change); the valid and test queries share no (entity, relation) key,
       so the test triples do not even filter a valid ranking */
    const char *valid = write_tmp(T, 0, "v.tsv", "carol\tadvises\tdave\nerin\tcites\tp1\n", 32);
    const char *test1 = write_tmp(T, 1, "t1.tsv", "dave\tabout\tnesy\n", 16);
    const char *test2 = write_tmp(T, 2, "t2.tsv", "erin\tabout\tlogic\n", 17);
    char cmd[2048], ck[600], best_mrr[64] = "", best_step[32] = "";
    snprintf(ck, sizeof ck, "%s/best.st", T->tmp);
    for (int run = 0; run < 2; run++) {
        snprintf(cmd, sizeof cmd,
                 "train --train data/academic.tsv --valid %s --test %s --steps 60 --eval-every 4 --dropout 0.1 --json "
                 "--save %s",
                 valid, run ? test2 : test1, ck);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        const char *p = strstr(out, "\"best_step\":"), *q = strstr(out, "\"best_valid_mrr\":");
        if (!CHECK(p && q)) return;
        char step[32], mrr[64];
        snprintf(step, sizeof step, "%.*s", (int)strcspn(p + 12, ","), p + 12);
        snprintf(mrr, sizeof mrr, "%.*s", (int)strcspn(q + 17, ","), q + 17);
        CHECK(strstr(out, "\"steps\":60,") != NULL);
        CHECK(strstr(out, "\"evaluations\":15,") != NULL); /* steps 4, 8, …, 60 */
        if (run == 0) {
            snprintf(best_step, sizeof best_step, "%s", step);
            snprintf(best_mrr, sizeof best_mrr, "%s", mrr);
            /* the reported valid metrics are the best model's */
            char both[128];
            snprintf(both, sizeof both, "\"valid\":{\"tail\":");
            const char *v = strstr(out, both);
            CHECK(v && json_number_after(v, "\"both\":{\"mrr\":") == strtod(mrr, NULL));
        } else {
            CHECK(strcmp(step, best_step) == 0); /* another test file chose the same model */
            CHECK(strcmp(mrr, best_mrr) == 0);
        }
    }
    printf("    best valid MRR %s at step %s of 60\n", best_mrr, best_step);
    /* the checkpoint holds that model: kgl eval reproduces the number */
    snprintf(cmd, sizeof cmd, "eval --checkpoint %s --train data/academic.tsv --valid %s --test %s --json", ck, valid,
             test2);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    char step_field[64];
    snprintf(step_field, sizeof step_field, "{\"step\":%s,", best_step);
    CHECK(strstr(out, step_field) == out);
    const char *v = strstr(out, "\"valid\":{\"tail\":");
    CHECK(v && json_number_after(v, "\"both\":{\"mrr\":") == strtod(best_mrr, NULL));

    /* patience: stops after P evaluations without a better model */
    snprintf(cmd, sizeof cmd,
             "train --train data/academic.tsv --valid %s --steps 500 --eval-every 1 --patience 3 --lr 0.05 --json",
             valid);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\"stopped_early\":true") != NULL);
    long steps = (long)json_number_after(out, "{\"steps\":"), best = (long)json_number_after(out, "\"best_step\":");
    CHECK(steps == best + 3);
    CHECK(steps < 500);

    /* usage errors */
    CHECK(run_kgl(T, "train --eval-every 5", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--eval-every ranks the --valid triples: give --valid F") != NULL);
    snprintf(cmd, sizeof cmd, "train --valid %s --patience 2", valid);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--patience counts evaluations: give --eval-every K") != NULL);
    CHECK(run_kgl(T, "train --dropout 1.5", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--dropout") != NULL);
    CHECK(run_kgl(T, "train --lr-schedule step", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--lr-schedule expects constant, cosine or linear, got 'step'") != NULL);
}

/* kgl benchmark end to end on a tiny dataset folder: the runs, their files,
   the tables and results.json in the schema; and its input errors. */
TEST(benchmark_command_runs_tables_and_results_json)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/kg/acad %s/cfg && grep -v '^#' data/academic.tsv > %s/kg/acad/train.txt && "
             "printf 'carol\\tadvises\\tdave\\nerin\\tcites\\tp1\\n' > %s/kg/acad/valid.txt && "
             "printf 'dave\\tabout\\tnesy\\n' > %s/kg/acad/test.txt && "
             "printf '# a comment\\n--dim 8 --heads 2  # another\\n--steps 20 --eval-every 10 --dropout 0.1\\n' > "
             "%s/cfg/acad.args",
             T->tmp, T->tmp, T->tmp, T->tmp, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 1,2 --out %s/bout",
             T->tmp, T->tmp, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("%s\n", err);
    CHECK(strstr(out, "### acad: filtered test ranking, both directions (2 queries)") != NULL);
    CHECK(strstr(out, "| model | MRR | Hits@1 | Hits@3 | Hits@10 | MR |") != NULL);
    CHECK(strstr(out, "| **kgl**, one model, realistic ties (mean ± std, 2 seeds) |") != NULL);
    CHECK(strstr(out, "| **kgl**, one model, optimistic ties (mean ± std, 2 seeds) |") != NULL);
    CHECK(strstr(out, "`--dim 8 --heads 2 --steps 20 --eval-every 10 --dropout 0.1`") != NULL);
    CHECK(strstr(out, "\nkgl: one layer, 456 parameters; options (") != NULL);
    /* every run's files, named: its --json output, its CSV log, its checkpoint */
    static char text[1 << 20];
    char path[1024];
    for (int seed = 1; seed <= 2; seed++) {
        static const char *const ext[3] = {"json", "csv", "safetensors"};
        for (int k = 0; k < 3; k++) {
            snprintf(path, sizeof path, "%s/bout/acad-seed%d.%s", T->tmp, seed, ext[k]);
            size_t n = read_text(path, text, sizeof text);
            if (!CHECK(n > 0)) printf("    missing or empty: %s\n", path);
            if (k == 0)
                CHECK(n > 0 && text[0] == '{' && strstr(text, "\"best_valid_mrr\":") != NULL &&
                      strstr(text, "\"context\":\"full\"") != NULL);
            if (k == 1) CHECK(n > 0 && strncmp(text, "step,loss,", 10) == 0);
        }
    }
    /* results.json, read with the library's parser (no python needed) */
    snprintf(path, sizeof path, "%s/bout/results.json", T->tmp);
    size_t n = read_text(path, text, sizeof text);
    kgl_json_doc doc;
    char jerr[256];
    if (CHECK(n > 0) && CHECK(kgl_json_parse(text, n, &doc, jerr, sizeof jerr))) {
        const kgl_json *d = kgl_json_get(doc.root, "acad"), *test = kgl_json_get(d, "test");
        static const char *const dirs[4] = {"both", "head", "optimistic", "tail"};
        static const char *const metrics[5] = {"hits1", "hits10", "hits3", "mr", "mrr"};
        CHECK(test && test->type == KGL_JSON_OBJECT && test->len == 4);
        for (int k = 0; k < 4; k++) CHECK(kgl_json_get(test, dirs[k]) != NULL);
        const kgl_json *both = kgl_json_get(test, "both");
        CHECK(both && both->len == 5);
        for (int k = 0; k < 5; k++) CHECK(kgl_json_get(both, metrics[k]) != NULL);
        /* the mean rank of the 2 test queries: a rank, at least 1 */
        const kgl_json *mr = kgl_json_get(both, "mr");
        CHECK(mr && mr->type == KGL_JSON_NUMBER && mr->num >= 1 && mr->num <= 13);
        /* 456 parameters: E 13x8, R 10x8, four 8x8, two 8 */
        const kgl_json *params = kgl_json_get(d, "params"), *seeds = kgl_json_get(d, "seeds"),
                       *runs = kgl_json_get(d, "runs"), *config = kgl_json_get(d, "config");
        CHECK(params && params->type == KGL_JSON_NUMBER && params->num == 456);
        CHECK(seeds && seeds->type == KGL_JSON_ARRAY && seeds->len == 2 && seeds->child[0].num == 1 &&
              seeds->child[1].num == 2);
        CHECK(runs && runs->type == KGL_JSON_ARRAY && runs->len == 2);
        CHECK(config && config->type == KGL_JSON_STRING &&
              strcmp(config->str, "--dim 8 --heads 2 --steps 20 --eval-every 10 --dropout 0.1") == 0);
        kgl_json_free(&doc);
    }
    /* the published rows appear for the datasets they belong to */
    snprintf(cmd, sizeof cmd, "cp %s/cfg/acad.args %s/cfg/nations.args && mkdir -p %s/kg/nations && cp %s/kg/acad/* %s/kg/nations/",
             T->tmp, T->tmp, T->tmp, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets nations --seeds 3 --out %s/bout",
             T->tmp, T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "| ConvE (Dettmers et al. 2018) | 0.82 | 0.72 | 0.88 | 1.00 |") != NULL);
    CHECK(strstr(out, "| **kgl**, one model, realistic ties (seed 3) |") != NULL);
    /* Kinship's rows, under its display name: Chen et al. give MRR and Hits@1 only (a dash for the rest) */
    snprintf(cmd, sizeof cmd, "cp %s/cfg/acad.args %s/cfg/kinship.args && mkdir -p %s/kg/kinship && cp %s/kg/acad/* %s/kg/kinship/",
             T->tmp, T->tmp, T->tmp, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets kinship --seeds 3 --out %s/bout",
             T->tmp, T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "### Kinship: filtered test ranking") != NULL);
    CHECK(strstr(out, "| ConvE (Dettmers et al. 2018) | 0.83 | 0.74 | 0.92 | 0.98 |") != NULL);
    CHECK(strstr(out, "| ComplEx-N3 + relation prediction (Chen et al. 2021, AKBC) | 0.916 | 0.866 | — | — | — |") != NULL);

    /* a config without the layer is named so, not "one layer": E 13x8 and R 10x8
       alone; then an ensemble of two of them */
    static const char *const nolayer_options[2] = {"", "--ensemble 2\\n"};
    static const char *const nolayer_says[2] = {
        "\nkgl: no layer (`--context none`: the readout on the embeddings), 184 parameters;",
        "\nkgl: an ensemble of 2 models without the layer (`--context none`) (each selected"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd,
                 "printf -- '--context none --dim 8\\n--steps 20 --eval-every 10\\n%s' > %s/cfg/nolayer.args && "
                 "mkdir -p %s/kg/nolayer && cp %s/kg/acad/* %s/kg/nolayer/",
                 nolayer_options[k], T->tmp, T->tmp, T->tmp, T->tmp);
        CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
        snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets nolayer --seeds 1 --out %s/bout",
                 T->tmp, T->tmp, T->tmp);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        CHECK(strstr(out, nolayer_says[k]) != NULL);
        CHECK(strstr(out, "one layer") == NULL && strstr(out, "one-layer") == NULL);
    }

    /* a stack is named so, from the "layers" its runs' JSON echoes (a file before it said: one layer) */
    snprintf(cmd, sizeof cmd,
             "printf -- '--dim 8 --heads 2 --layers 2\\n--steps 20 --eval-every 10\\n' > %s/cfg/stack.args && "
             "mkdir -p %s/kg/stack && cp %s/kg/acad/* %s/kg/stack/",
             T->tmp, T->tmp, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets stack --seeds 1 --out %s/bout",
             T->tmp, T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "\nkgl: a stack of 2 layers, ") != NULL);
    CHECK(strstr(out, "one layer") == NULL && strstr(out, "one-layer") == NULL);
    snprintf(path, sizeof path, "%s/bout/stack-seed1.json", T->tmp);
    CHECK(read_text(path, text, sizeof text) && strstr(text, "\"layers\":2,") != NULL);

    /* errors: a missing data folder, a config that sets what the command sets */
    snprintf(cmd, sizeof cmd, "benchmark --data %s/nowhere --configs %s/cfg --datasets acad", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "nowhere/acad/train.txt") && strstr(err, "KG_DATA=DIR"));
    snprintf(cmd, sizeof cmd, "printf -- '--steps 5 --seed 4\\n' > %s/cfg/bad.args", T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets bad", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "bad.args: --seed is set by kgl benchmark; remove it from the file") != NULL);
    /* a config without model selection: the table would report a model nobody selected */
    snprintf(cmd, sizeof cmd, "printf -- '--steps 5\\n' > %s/cfg/nosel.args", T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets nosel", T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "nosel.args: give --eval-every K") != NULL);
    /* a config whose report would leave out test (the last --splits wins, as in kgl
       train): refused before any training, not after it with "has no metrics.test" */
    snprintf(cmd, sizeof cmd, "printf -- '--steps 5 --eval-every 5 --splits valid,test --splits=train,valid\\n' > %s/cfg/nosplit.args",
             T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets nosplit --out %s/nsout", T->tmp, T->tmp,
             T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "nosplit.args: --splits train,valid: kgl benchmark reports valid and test") != NULL);
    CHECK(strstr(out, "seed 1") == NULL && strstr(err, "seed 1") == NULL); /* nothing ran */
    /* naming both (in any order, with train too) is accepted: the words reach kgl train */
    snprintf(cmd, sizeof cmd, "printf -- '--dim 8 --heads 2 --steps 5 --eval-every 5 --splits test,train,valid\\n' > %s/cfg/acad.args",
             T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 1 --out %s/nsout", T->tmp,
             T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    /* an option kgl train does not know: kgl train's own message, exit 2, before any run
       (tests/cli_benchmark_runs.c: before the other datasets' runs too) */
    snprintf(cmd, sizeof cmd, "printf -- '--steps 5 --eval-every 5 --frobnicate 3\\n' > %s/cfg/typo.args && mkdir -p %s/kg/typo && "
             "cp %s/kg/acad/* %s/kg/typo/", T->tmp, T->tmp, T->tmp, T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets typo --seeds 1 --out %s/bout", T->tmp,
             T->tmp, T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl train refuses the options for typo") && strstr(err, "unknown option '--frobnicate'"));
    CHECK(run_kgl(T, "benchmark --seeds 1,x", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--seeds expects") != NULL);
    /* a config's formulas are computed from its dataset, as a recipe's
       (acad: 13 entities, so 13 + 4 = 17 steps) */
    snprintf(cmd, sizeof cmd, "printf -- '--dim 8 --heads 2 --steps =n_entities+4 --eval-every 10\n' > %s/cfg/acad.args",
             T->tmp);
    CHECK(run_sh(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "benchmark --data %s/kg --configs %s/cfg --datasets acad --seeds 1 --out %s/fout", T->tmp,
             T->tmp, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) printf("%s\n", err);
    snprintf(path, sizeof path, "%s/fout/acad-seed1.json", T->tmp);
    n = read_text(path, text, sizeof text);
    CHECK(n > 0 && strstr(text, "{\"steps\":17,") != NULL);
}

/* argv as one line, words separated by spaces. */
static void join_words(char *const *argv, char *line, size_t cap)
{
    size_t n = 0;
    line[0] = 0;
    for (int k = 0; argv[k] && n < cap; k++) n += (size_t)snprintf(line + n, cap - n, "%s%s", k ? " " : "", argv[k]);
}

/* A run's command through the library, as a C program running the
   benchmark would make it: the dataset's files, its options, the baseline's
   --context none after them, the seed, the outputs in OUT (none with
   --check), the threads and the channels kgl benchmark reads. */
TEST(benchmark_run_argv_is_kgl_train_on_the_dataset_with_its_outputs)
{
    static kgl_benchmark_dataset d;
    static kgl_benchmark_command cmd;
    char e[1400], line[8192];
    const char *options = "--dim 8 --context graph --eval-every 10\n";
    write_tmp(T, 0, "cfg.args", options, strlen(options));
    snprintf(line, sizeof line, "%s/cfg.args", T->tmp);
    if (!CHECK(kgl_benchmark_load_recipe(&d, line, "umls", e, sizeof e) == KGL_BENCHMARK_CONFIG_OK)) {
        printf("    %s\n", e);
        return;
    }
    join_words(kgl_benchmark_run_argv(&cmd, "/bin/kgl", &d, true, "kg", "out", 3, 2, false), line, sizeof line);
    char want[8192];
    snprintf(want, sizeof want,
             "/bin/kgl train --train kg/umls/train.txt --valid kg/umls/valid.txt --test kg/umls/test.txt --recipe "
             "%s/cfg.args --context none --seed 3 --save out/umls-seed3-none.safetensors --log out/umls-seed3-none.csv "
             "--threads 2 --json --progress", T->tmp);
    if (!CHECK(strcmp(line, want) == 0)) printf("    %s\n    %s\n", line, want);
    join_words(kgl_benchmark_run_argv(&cmd, "/bin/kgl", &d, false, "kg", "out", 3, 1, true), line, sizeof line);
    CHECK(strstr(line, " --seed 3 --check --threads 1 --json --progress") && !strstr(line, "--save") &&
          !strstr(line, "--context none"));
    kgl_benchmark_dataset_free(&d);
}

/* The last --context of a dataset's options, spaced or with '=', says
   whether its runs are already the baseline. */
TEST(benchmark_says_no_context_reads_the_last_context)
{
    static kgl_benchmark_dataset d;
    static const char *const words[4] = {"--dim 8 --context none --context graph", "--context graph --context=none",
                                         "--dim 8", "--context none --steps 5"};
    static const bool none[4] = {false, true, false, true};
    for (int k = 0; k < 4; k++) {
        snprintf(d.args_text, sizeof d.args_text, "%s", words[k]);
        if (!CHECK(kgl_benchmark_says_no_context(&d) == none[k])) printf("    '%s'\n", words[k]);
    }
}

/* The benchmark's steps from the runner's counts: a run not yet heard from
   counts as its dataset's run that was, else as the mean run heard from. */
TEST(benchmark_steps_guess_a_silent_run_from_its_dataset_first)
{
    /* 3 datasets x 2 seeds: the first has one run that said its steps, the
       second two, the third none */
    kgl_job_steps job[6] = {{.done = 50, .total = 100, .reported = true}, {.total = 7},
                            {.done = 10, .total = 50, .reported = true},  {.done = 30, .total = 30, .reported = true},
                            {.total = 7},                                 {.total = 7}};
    kgl_jobs_progress at = {.jobs = 6, .job = job};
    kgl_benchmark_steps s = kgl_benchmark_steps_of(&at, 2);
    /* 100 + 100 (its dataset's) + 50 + 30 + 60 + 60 (the mean of 100, 50 and 30) */
    if (!CHECK(s.total == 400 && s.done == 90 && s.guessed && s.known == 3))
        printf("    %g/%g guessed %d known %d\n", s.done, s.total, s.guessed, s.known);
    for (int r = 0; r < 6; r++) job[r].reported = true, job[r].total = 10, job[r].done = 10;
    s = kgl_benchmark_steps_of(&at, 2);
    CHECK(s.total == 60 && s.done == 60 && !s.guessed && s.known == 6);
    for (int r = 0; r < 6; r++) job[r].reported = false;
    s = kgl_benchmark_steps_of(&at, 2);
    CHECK(s.total == 0 && s.guessed && s.known == 0);
}

/* kgl_benchmark_dataset_open, called directly: a dataset ready for its runs,
   and each way one is not (the options, --baseline on options that are
   already the baseline, a split missing), with its status and message. */
TEST(benchmark_dataset_open_checks_options_baseline_and_splits)
{
    static kgl_benchmark_dataset d;
    char e[1400], recipe[600], none[600], data[600];
    const char *ok = "--dim 8 --eval-every 10\n", *no_layer = "--dim 8 --eval-every 10 --context none\n";
    snprintf(recipe, sizeof recipe, "%s", write_tmp(T, 0, "r.args", ok, strlen(ok)));
    snprintf(none, sizeof none, "%s", write_tmp(T, 1, "n.args", no_layer, strlen(no_layer)));
    /* DATA/tiny/{train,valid,test}.txt, then one taken away */
    snprintf(data, sizeof data, "%s/kg", T->tmp);
    char dir[700];
    snprintf(dir, sizeof dir, "%s/tiny", data);
    CHECK(mkdir(data, 0755) == 0 && mkdir(dir, 0755) == 0);
    static const char *const split[3] = {"train", "valid", "test"};
    for (int s = 0; s < 3; s++) {
        char path[800];
        snprintf(path, sizeof path, "%s/%s.txt", dir, split[s]);
        FILE *f = fopen(path, "w");
        if (CHECK(f)) fputs("a\tr\tb\n", f), fclose(f);
    }
    CHECK(kgl_benchmark_dataset_open(&d, "tiny", recipe, "", data, 3, true, e, sizeof e) == KGL_BENCHMARK_CONFIG_OK);
    CHECK(d.n_runs == 3 && d.baseline && strcmp(d.name, "tiny") == 0 && strcmp(d.config_path, recipe) == 0);
    CHECK(d.argc == 2 && strcmp(d.argv[0], "--recipe") == 0);
    kgl_benchmark_dataset_free(&d);
    /* options that already say --context none are their own baseline */
    CHECK(kgl_benchmark_dataset_open(&d, "tiny", none, "", data, 1, true, e, sizeof e) == KGL_BENCHMARK_CONFIG_INVALID);
    char want[1400];
    snprintf(want, sizeof want, "%s: --baseline: the options already say --context none", none);
    if (!CHECK(strncmp(e, want, strlen(want)) == 0)) printf("    %s\n", e);
    kgl_benchmark_dataset_free(&d);
    CHECK(kgl_benchmark_dataset_open(&d, "tiny", none, "", data, 1, false, e, sizeof e) == KGL_BENCHMARK_CONFIG_OK);
    kgl_benchmark_dataset_free(&d);
    /* CONFIGS/<name>.args, missing: unreadable; then a split missing */
    CHECK(kgl_benchmark_dataset_open(&d, "tiny", NULL, T->tmp, data, 1, false, e, sizeof e) ==
          KGL_BENCHMARK_CONFIG_UNREADABLE);
    CHECK(strstr(e, "tiny.args") != NULL);
    kgl_benchmark_dataset_free(&d);
    char test_path[800];
    snprintf(test_path, sizeof test_path, "%s/test.txt", dir);
    CHECK(unlink(test_path) == 0);
    CHECK(kgl_benchmark_dataset_open(&d, "tiny", recipe, "", data, 1, false, e, sizeof e) ==
          KGL_BENCHMARK_DATA_UNREADABLE);
    snprintf(want, sizeof want, "cannot read %s: No such file or directory", test_path);
    if (!CHECK(strcmp(e, want) == 0)) printf("    %s\n", e);
    kgl_benchmark_dataset_free(&d);
}

/* What the tables say runs cost, and the span of an ensemble's best steps. */
TEST(benchmark_cost_and_member_steps)
{
    kgl_benchmark_run runs[3] = {{.seconds = 2, .peak_mb = 10}, {.seconds = 7, .peak_mb = NAN}, {.seconds = 3, .peak_mb = 30}};
    kgl_benchmark_cost c = kgl_benchmark_cost_of(runs, 3);
    CHECK(c.mean_seconds == 4 && c.max_seconds == 7 && c.peak_mb == 30); /* 12 / 3, exactly; the NaN left out */
    runs[2].peak_mb = NAN;
    CHECK(kgl_benchmark_cost_of(runs + 1, 2).peak_mb == 0); /* none measured */
    kgl_benchmark_run r = {.n_members = 4, .member_best_step = {30, 10, 40, 20}};
    long first = -1, last = -1;
    kgl_benchmark_member_steps(&r, &first, &last);
    CHECK(first == 10 && last == 40);
    r.n_members = 1; /* a single model: its own step */
    kgl_benchmark_member_steps(&r, &first, &last);
    CHECK(first == 30 && last == 30);
}
