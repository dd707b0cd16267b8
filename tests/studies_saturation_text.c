/* studies_saturation_text.c — the saturation study's tables
 * (kgl_saturation_tables_write) called directly on a memory stream: each
 * table's header, and numbers that must be in it, formatted here from the
 * study's own summaries. */
#include <stdlib.h>

#include "test.h"

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
