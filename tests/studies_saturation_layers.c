/* studies_saturation_layers.c — the saturation study per layer (issue 48,
 * item 1): `kgl saturation --layers` parsed and refused with a message, a
 * stack's files and JSON with a row (an entry) per layer whose deeper
 * layer is measured on its own, and a one-layer grid's numbers unchanged by
 * the axis (the same configuration's rows in a grid with a stack); the
 * study's JSON writer called directly. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 20], err[1 << 14];

/* The number after "key": in a JSON text (the first occurrence after `from`). */
static double json_num(const char *from, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = from ? strstr(from, pat) : NULL;
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

TEST(saturation_layers_option)
{
    static const char *const bad[] = {"0", "9", "x", "1.5", "1,9"};
    for (int k = 0; k < 5; k++) {
        char cmd[256], want[128];
        snprintf(cmd, sizeof cmd, "saturation --layers %s --out %s/never", bad[k], T->tmp);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 2);
        snprintf(want, sizeof want, "kgl saturation: --layers: '%s' is not a whole number of layers from 1 to 8",
                 k == 4 ? "9" : bad[k]);
        if (!CHECK(strstr(err, want) != NULL)) printf("    %s\n", err);
        CHECK(out[0] == 0); /* refused before any run */
    }
    /* the library refuses what the command line would: with what is wrong */
    kgl_saturation_spec spec;
    kgl_saturation_spec_defaults(&spec);
    spec.layers.value[0] = KGL_MAX_LAYERS + 1;
    kgl_saturation s;
    char e[256];
    CHECK(!kgl_saturation_run(&spec, &s, e, sizeof e));
    CHECK(strstr(e, "layers: 9 is not a whole number of layers in 1..8") != NULL);
    CHECK(run_kgl(T, "saturation --help", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "--layers 1") != NULL && strstr(out, "supervision acts on\n") != NULL);
    /* one value other than 1 is a stack too: the files say which layer a row is */
    char cmd[512], path[600];
    snprintf(cmd, sizeof cmd, "saturation --layers 2 --dk 4 --scale sqrt --init-scale 1 --steps 2 --seeds 1 --quiet "
                              "--out %s/two", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    static char csv[1 << 16];
    snprintf(path, sizeof path, "%s/two/saturation.csv", T->tmp);
    if (CHECK(test_read_all(path, csv, sizeof csv))) {
        static const char header[] = "config,dk,scale,init_scale,optimizer,lr,supervise,remedy,layers,seed,step,layer,loss,";
        CHECK(strncmp(csv, header, strlen(header)) == 0);
        CHECK(test_count(csv, "\n") == 1 + 2 * 2); /* 2 steps, 2 layers */
    }
}

/* A grid of one and two layers, supervised and not: every file has a row
   per layer; layer 1's head diagnostics are there, finite and its own (not
   layer 0's); the loss is the run's in both; the supervised rows' metrics
   are layer 0's only; the JSON's per_layer summaries are the CSV's means. */
TEST(saturation_layers_rows_per_layer)
{
    char cmd[1024], path[1024];
    snprintf(cmd, sizeof cmd,
             "saturation --layers 1,2 --dk 4 --scale sqrt --init-scale 3 --supervise off,advises --steps 20 --seeds 2 "
             "--json --out %s/st",
             T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    static char steps_csv[1 << 21], seeds_csv[1 << 16], summary_csv[1 << 18];
    snprintf(path, sizeof path, "%s/st/saturation.csv", T->tmp);
    bool have = CHECK(test_read_all(path, steps_csv, sizeof steps_csv));
    snprintf(path, sizeof path, "%s/st/saturation_seeds.csv", T->tmp);
    have = CHECK(test_read_all(path, seeds_csv, sizeof seeds_csv)) && have;
    snprintf(path, sizeof path, "%s/st/saturation_summary.csv", T->tmp);
    have = CHECK(test_read_all(path, summary_csv, sizeof summary_csv)) && have;
    if (!have) return;
    /* 2 configurations of each depth, 2 seeds, 20 steps: L = 1 first (the outermost axis) */
    CHECK(test_count(steps_csv, "\n") == 1 + 2 * 2 * 20 * 1 + 2 * 2 * 20 * 2);
    CHECK(test_count(seeds_csv, "\n") == 1 + 2 * 2 * 1 + 2 * 2 * 2);
    CHECK(test_count(summary_csv, "\n") == 1 + 2 * 1 + 2 * 2);
    static const char *const own[] = {"max_prob", "entropy", "jac_fro", "grad_logits", "grad_wq", "spec_advises"};
    int c_layers = test_csv_column(steps_csv, "layers"), c_layer = test_csv_column(steps_csv, "layer"), c_step = test_csv_column(steps_csv, "step"),
        c_loss = test_csv_column(steps_csv, "loss"), c_mass = test_csv_column(steps_csv, "target_mass"), c_sup = test_csv_column(steps_csv, "supervise");
    int c_own[6];
    bool cols = c_layers >= 0 && c_layer >= 0 && c_step >= 0 && c_loss >= 0 && c_mass >= 0 && c_sup >= 0;
    for (int k = 0; k < 6; k++) cols = (c_own[k] = test_csv_column(steps_csv, own[k])) >= 0 && cols;
    if (!CHECK(cols)) return;
    int pairs = 0, differing[6] = {0};
    for (int r = 1 + 2 * 2 * 20; r < 1 + 2 * 2 * 20 * 3; r += 2) { /* the stack's rows: layer 0, then layer 1 */
        const char *l0 = test_csv_line(steps_csv, r), *l1 = test_csv_line(steps_csv, r + 1);
        if (!CHECK(l0 && l1)) return;
        CHECK(test_csv_num(l0, c_layers) == 2 && test_csv_num(l0, c_layer) == 0 && test_csv_num(l1, c_layer) == 1);
        CHECK(test_csv_num(l0, c_step) == test_csv_num(l1, c_step));
        CHECK(test_csv_num(l0, c_loss) == test_csv_num(l1, c_loss)); /* the run's loss, in every layer's row (NaN fails) */
        for (int k = 0; k < 6; k++) {
            double a = test_csv_num(l0, c_own[k]), b = test_csv_num(l1, c_own[k]);
            CHECK(isfinite(a) && isfinite(b));
            differing[k] += a != b;
        }
        char sup[16];
        bool supervised = strcmp(test_csv_field(l0, c_sup, sup, sizeof sup), "advises") == 0;
        CHECK(supervised ? isfinite(test_csv_num(l0, c_mass)) : isnan(test_csv_num(l0, c_mass)));
        CHECK(isnan(test_csv_num(l1, c_mass))); /* supervision acts on layer 0 only */
        pairs++;
    }
    CHECK(pairs == 2 * 2 * 20);
    for (int k = 0; k < 6; k++) /* layer 1's own numbers: different from layer 0's at every step */
        if (!CHECK(differing[k] == pairs)) printf("    %s: layer 1 differs from layer 0 in %d of %d rows\n", own[k],
                                                      differing[k], pairs);
    /* the JSON: a stack's configurations carry layers and per_layer, layer 0's the configuration's own */
    CHECK(test_count(out, "\"layers\":1,") == 2 && test_count(out, "\"layers\":2,") == 2);
    CHECK(test_count(out, "\"per_layer\":[{\"layer\":0,") == 4 && test_count(out, "{\"layer\":1,") == 2);
    const char *stack = strstr(out, "\"label\":\"dk=4 sqrt s=3 L=2 sup=off\"");
    const char *layer1 = stack ? strstr(stack, "{\"layer\":1,") : NULL;
    const char *layer0 = stack ? strstr(stack, "{\"layer\":0,") : NULL;
    if (!CHECK(layer0 && layer1)) return;
    CHECK(json_num(strstr(stack, "\"final\""), "max_prob") == json_num(strstr(layer0, "\"final\""), "max_prob"));
    /* layer 1's final max_prob: the mean of its two seeds' last rows (lines 80 + 40 and 80 + 80 of the CSV) */
    const char *s1 = test_csv_line(steps_csv, 1 + 80 + 39), *s2 = test_csv_line(steps_csv, 1 + 80 + 79);
    if (!CHECK(s1 && s2)) return;
    CHECK(test_csv_num(s1, c_layer) == 1 && test_csv_num(s1, c_step) == 20 && test_csv_num(s2, c_layer) == 1 && test_csv_num(s2, c_step) == 20);
    double mean = (test_csv_num(s1, c_own[0]) + test_csv_num(s2, c_own[0])) / 2, got = json_num(strstr(layer1, "\"final\""), "max_prob");
    CHECK_NEAR(got, mean, 1e-15); /* the same two doubles summed and halved: at most round-off apart */
    CHECK(got != json_num(strstr(layer0, "\"final\""), "max_prob"));
    /* the per-seed and summary files: layer after seed, after layers */
    CHECK(strstr(seeds_csv, ",remedy,layers,heads,seed,layer,aux_floor,") != NULL);
    CHECK(strstr(summary_csv, ",remedy,layers,layer,heads,seeds,") != NULL);
    /* the table: a row per layer, and where supervision does not reach */
    snprintf(cmd, sizeof cmd,
             "saturation --layers 1,2 --dk 4 --scale sqrt --init-scale 3 --supervise off,advises --steps 20 --seeds 2 "
             "--quiet --out %s/st",
             T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    CHECK(strstr(out, "supervision acts on layer 0 only") != NULL);
    CHECK(test_count(out, "dk=4 sqrt s=3 L=2 sup=advises     1 |") == 2); /* the means, the spread */
    CHECK(test_count(out, "dk=4 sqrt s=3 L=1 sup=advises     0 |") == 2);
    /* the head diagnostics' pictures draw every layer; the loss is the run's */
    static char svg[1 << 21];
    snprintf(path, sizeof path, "%s/st/max_prob.svg", T->tmp);
    if (CHECK(test_read_all(path, svg, sizeof svg))) CHECK(strstr(svg, "L=2 sup=off layer 1") != NULL);
    snprintf(path, sizeof path, "%s/st/loss.svg", T->tmp);
    if (CHECK(test_read_all(path, svg, sizeof svg))) CHECK(strstr(svg, "layer 1") == NULL);
}

/* The layers axis leaves a one-layer grid as it was: its files carry no
   layer column, and its rows in a grid with a stack (L=1, every metric,
   every step, every seed) are the same numbers to the last digit. */
TEST(saturation_one_layer_unchanged_by_the_layers_axis)
{
    static const char grid[] = "--dk 4 --scale sqrt,none --init-scale 3 --supervise advises --steps 30 --seeds 2 --quiet";
    char cmd[1024], path[1024];
    snprintf(cmd, sizeof cmd, "saturation %s --out %s/one", grid, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    CHECK(strstr(out, " layer ") == NULL && strstr(out, "L=1") == NULL);
    snprintf(cmd, sizeof cmd, "saturation %s --layers 1,2 --out %s/both", grid, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    static char one[1 << 20], both[1 << 21];
    snprintf(path, sizeof path, "%s/one/saturation.csv", T->tmp);
    bool have = CHECK(test_read_all(path, one, sizeof one));
    snprintf(path, sizeof path, "%s/both/saturation.csv", T->tmp);
    if (!(CHECK(test_read_all(path, both, sizeof both)) && have)) return;
    static const char header[] = "config,dk,scale,init_scale,optimizer,lr,supervise,remedy,seed,step,loss,";
    CHECK(strncmp(one, header, strlen(header)) == 0); /* as before the layers axis */
    CHECK(test_csv_column(one, "layer") < 0 && test_csv_column(one, "layers") < 0);
    int rows = test_count(one, "\n") - 1, metrics = KGL_SAT_N_METRICS;
    CHECK(rows == 2 * 2 * 30);
    int first_one = test_csv_column(one, "loss"), first_both = test_csv_column(both, "loss"), c_layers = test_csv_column(both, "layers");
    if (!CHECK(first_one >= 0 && first_both >= 0 && c_layers >= 0)) return;
    int same = 0;
    for (int r = 1; r <= rows; r++) { /* the L=1 configurations come first in the grid with a stack */
        const char *a = test_csv_line(one, r), *b = test_csv_line(both, r);
        if (!CHECK(a && b && test_csv_num(b, c_layers) == 1)) return;
        bool row_same = true;
        char x[64], y[64];
        for (int k = 0; k < metrics; k++) /* as text: every digit of %.17g, and NaN as the same empty field */
            row_same = strcmp(test_csv_field(a, first_one + k, x, sizeof x), test_csv_field(b, first_both + k, y, sizeof y)) == 0 && row_same;
        for (int k = 1; k < 10; k++) /* dk .. remedy, then seed and step (after the stack's layers column) */
            row_same = strcmp(test_csv_field(a, k, x, sizeof x), test_csv_field(b, k < 8 ? k : k + 1, y, sizeof y)) == 0 && row_same;
        same += row_same;
    }
    CHECK(same == rows);
}

/* A number of a parsed JSON object (NaN when absent or not a number, so a
   comparison with it fails). */
static double field(const kgl_json *obj, const char *key)
{
    const kgl_json *v = kgl_json_get(obj, key);
    return v && v->type == KGL_JSON_NUMBER ? v->num : NAN;
}

/* Runs a small grid: dk 4, init scale 3, supervise off and advises, a stack of
   two layers, 4 steps, 2 seeds. */
static bool small_grid(test_ctx *T, kgl_saturation *s)
{
    kgl_saturation_spec spec;
    kgl_saturation_spec_defaults(&spec);
    spec.dk = (kgl_saturation_axis){1, {4}, {"4"}};
    spec.scale = (kgl_saturation_axis){1, {KGL_SAT_SCALE_SQRT}, {"sqrt"}};
    spec.init_scale = (kgl_saturation_axis){1, {3}, {"3"}};
    spec.supervise = (kgl_saturation_axis){2, {KGL_SAT_SUP_OFF, KGL_SAT_SUP_ADVISES}, {"off", "advises"}};
    spec.layers = (kgl_saturation_axis){1, {2}, {"2"}};
    spec.steps = 4, spec.seeds = 2, spec.jobs = 1;
    char e[512];
    return CHECK(kgl_saturation_run(&spec, s, e, sizeof e));
}

/* What kgl_saturation_tables_write writes, as a NUL-terminated string (free it). */
static char *tables_text(const kgl_saturation *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    kgl_saturation_tables_write(f, s);
    fclose(f);
    return text;
}

/* kgl_saturation_write_json, called directly: its numbers are the
   summaries' to the bit (17 digits read back), per configuration, per seed
   and per layer of a stack; NaN is null. */
TEST(saturation_write_json_is_the_summaries)
{
    kgl_saturation s;
    if (!small_grid(T, &s)) return;
    char e[512];
    static char text[1 << 18];
    FILE *f = tmpfile();
    if (!CHECK(f)) return;
    kgl_saturation_write_json(&s, f);
    size_t n = (size_t)ftell(f);
    rewind(f);
    CHECK(n < sizeof text && fread(text, 1, n, f) == n);
    fclose(f);
    text[n < sizeof text ? n : 0] = 0;
    CHECK(n > 0 && text[n - 1] == '\n');
    kgl_json_doc doc;
    if (!CHECK(kgl_json_parse(text, strlen(text), &doc, e, sizeof e))) {
        kgl_saturation_free(&s);
        return;
    }
    const kgl_json *root = doc.root, *configs = kgl_json_get(root, "configs");
    CHECK(field(root, "steps") == 4 && field(root, "seeds") == 2 && field(root, "frozen_multiple") == s.frozen_multiple);
    if (CHECK(configs && configs->type == KGL_JSON_ARRAY && configs->len == 2))
        for (int c = 0; c < 2; c++) {
            const kgl_json *cj = &configs->child[c];
            kgl_saturation_summary sm, sm1;
            kgl_saturation_summarise(&s, c, 0, &sm);
            kgl_saturation_summarise(&s, c, 1, &sm1);
            const kgl_json *label = kgl_json_get(cj, "label"), *scale = kgl_json_get(cj, "scale");
            CHECK(label && label->type == KGL_JSON_STRING && strcmp(label->str, s.configs[c].label) == 0);
            CHECK(scale && scale->type == KGL_JSON_STRING && strcmp(scale->str, "sqrt") == 0);
            CHECK(field(cj, "dk") == 4 && field(cj, "layers") == 2 && field(cj, "heads") == 1);
            CHECK(field(kgl_json_get(cj, "final"), "max_prob") == sm.final[KGL_SAT_MAX_PROB]);
            CHECK(field(kgl_json_get(cj, "init"), "entropy") == sm.init[KGL_SAT_ENTROPY]);
            CHECK(field(kgl_json_get(kgl_json_get(cj, "spread"), "loss"), "median") == sm.spread[KGL_SAT_LOSS].median);
            const kgl_json *floor = kgl_json_get(cj, "aux_floor");
            if (c == 0) CHECK(floor && floor->type == KGL_JSON_NULL); /* not supervised: NaN, written null */
            else CHECK(field(cj, "aux_floor") == sm.aux_floor);
            const kgl_json *seeds = kgl_json_get(cj, "per_seed"), *layers = kgl_json_get(cj, "per_layer");
            if (CHECK(seeds && seeds->len == 2))
                for (int q = 0; q < 2; q++) {
                    kgl_saturation_run_end end;
                    kgl_saturation_run_summary(&s, c * 2 + q, 0, &end);
                    CHECK(field(&seeds->child[q], "seed") == s.runs[c * 2 + q].seed);
                    CHECK(field(kgl_json_get(&seeds->child[q], "final"), "loss") == end.final[KGL_SAT_LOSS]);
                }
            if (CHECK(layers && layers->len == 2)) {
                CHECK(field(&layers->child[1], "layer") == 1);
                double got = field(kgl_json_get(&layers->child[1], "final"), "max_prob");
                CHECK(got == sm1.final[KGL_SAT_MAX_PROB] && got != sm.final[KGL_SAT_MAX_PROB]); /* layer 1's own */
            }
        }
    kgl_json_free(&doc);
    kgl_saturation_free(&s);
}

/* The tables kgl saturation prints (kgl_saturation_tables_write), called
   directly on a memory stream: each table's header, and numbers that must
   be in it, formatted here from the study's own summaries. */
TEST(saturation_print_tables_are_the_summaries)
{
    kgl_saturation s;
    if (!small_grid(T, &s)) return;
    char *text = tables_text(&s);
    if (!CHECK(text)) {
        kgl_saturation_free(&s);
        return;
    }
    static const char head[] = "saturation study: one head, d = dk (both-two-heads: two, d = 2 dk), academic world, "
                               "4 steps,\nmean of 2 seeds\n";
    CHECK(strncmp(text, head, sizeof head - 1) == 0);
    int w = 10; /* the summary table's first column: the longest label, at least 10 */
    for (int c = 0; c < s.n_configs; c++)
        if ((int)strlen(s.configs[c].label) > w) w = (int)strlen(s.configs[c].label);
    for (int c = 0; c < s.n_configs; c++)
        for (int l = 0; l < 2; l++) {
            /* the row of configuration c, layer l: its label, layer and means at init */
            kgl_saturation_summary sm;
            kgl_saturation_summarise(&s, c, l, &sm);
            char row[256];
            snprintf(row, sizeof row, "\n%-*s %5d | %8.3f %8.3f %9.2e %9.2e | %8.3f", w, s.configs[c].label, l,
                     sm.init[KGL_SAT_MAX_PROB], sm.init[KGL_SAT_JAC_FRO], sm.init[KGL_SAT_GRAD_LOGITS],
                     sm.init[KGL_SAT_GRAD_WQ], sm.final[KGL_SAT_MAX_PROB]);
            CHECK(strstr(text, row) != NULL);
        }
    CHECK(strstr(text, "\nover the 2 seeds, at step 4: min, quartiles (q1, median, q3) and max\n") != NULL);
    /* the supervised configuration (1): its floor, then each seed's final supervision loss */
    kgl_saturation_summary sup;
    kgl_saturation_summarise(&s, 1, 0, &sup);
    CHECK(isfinite(sup.aux_floor));
    int ws = 13; /* the spread tables' first column */
    for (int c = 0; c < s.n_configs; c++)
        if ((int)strlen(s.configs[c].label) > ws) ws = (int)strlen(s.configs[c].label);
    char row[256];
    snprintf(row, sizeof row, "\n%-*s | %6.3f %6d |", ws, s.configs[1].label, sup.aux_floor, 1);
    CHECK(strstr(text, "\nsupervision loss at step 4 against its floor") != NULL && strstr(text, row) != NULL);
    CHECK(strstr(text, "\nthe supervised rows over the last 50 steps, frozen seeds and the others apart") != NULL);
    const char *by_seed = strstr(text, "\nsupervision loss at step 4, seed by seed (* frozen)\n");
    if (CHECK(by_seed)) {
        kgl_saturation_run_end e;
        kgl_saturation_run_summary(&s, 1 * s.seeds + 1, 0, &e); /* configuration 1, seed 2 */
        char want[64];
        snprintf(want, sizeof want, " %7.3f%c\n", e.final[KGL_SAT_AUX_LOSS], e.frozen ? '*' : ' ');
        CHECK(isfinite(e.final[KGL_SAT_AUX_LOSS]) && strstr(by_seed, want) != NULL);
    }
    free(text);
    kgl_saturation_free(&s);
}
