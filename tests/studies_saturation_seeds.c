/* studies_saturation_seeds.c — the saturation study per seed (issue 15): the
 * quantiles and the frozen fraction on numbers chosen by hand, the floor of
 * the supervision loss on a tiny graph, the supervise words, the per-seed
 * files of a small real run, and the issue's own grid: the study's runs are
 * `kgl train`'s runs, and the unscaled head stays frozen for most seeds. */
#include <stdlib.h>

#include "test.h"

static char out[1 << 20], err[1 << 14];

/* Quantiles as numpy's and pandas' default, on a sample sorted by hand:
   1 1 2 3 4 5 6 9 (the NaN is left out), n = 8, h = p · 7. */
TEST(saturation_spread_arithmetic)
{
    const double x[9] = {3, 1, NAN, 4, 1, 5, 9, 2, 6};
    kgl_spread s = kgl_spread_of(x, 9);
    CHECK(s.n == 8);
    CHECK(s.min == 1 && s.max == 9);
    CHECK_NEAR(s.q1, 1.75, 1e-15);    /* h = 1.75: 1 + 0.75 (2 − 1) */
    CHECK_NEAR(s.median, 3.5, 1e-15); /* h = 3.5: 3 + 0.5 (4 − 3) */
    CHECK_NEAR(s.q3, 5.25, 1e-15);    /* h = 5.25: 5 + 0.25 (6 − 5) */
    CHECK_NEAR(s.mean, 31.0 / 8, 1e-15);
    const double one[1] = {0.77};
    s = kgl_spread_of(one, 1);
    CHECK(s.n == 1 && s.min == 0.77 && s.q1 == 0.77 && s.median == 0.77 && s.q3 == 0.77 && s.max == 0.77);
    const double odd[5] = {10, 0, 40, 20, 30}; /* h = 1, 2, 3: the order statistics themselves */
    s = kgl_spread_of(odd, 5);
    CHECK(s.q1 == 10 && s.median == 20 && s.q3 == 30);
    const double none[2] = {NAN, NAN};
    s = kgl_spread_of(none, 2);
    CHECK(s.n == 0 && isnan(s.median) && isnan(s.min));
}

/* Frozen: the final supervision loss above multiple × floor, strictly. */
TEST(saturation_frozen_fraction_arithmetic)
{
    const double aux[6] = {0.77, 1.54, 1.5400001, 42.5, NAN, 0.9};
    int frozen = -1, counted = -1;
    double f = kgl_saturation_frozen_fraction(aux, 6, 0.77, 2, &frozen, &counted);
    CHECK(counted == 5 && frozen == 2); /* 1.5400001 and 42.5; 1.54 is 2 × 0.77, not above */
    CHECK_NEAR(f, 0.4, 1e-15);
    f = kgl_saturation_frozen_fraction(aux, 6, 0.77, 1.1, &frozen, &counted); /* bound 0.847: 1.54 and 0.9 too */
    CHECK(frozen == 4 && counted == 5);
    CHECK(!kgl_saturation_is_frozen(NAN, 0.77, 2) && !kgl_saturation_is_frozen(5, NAN, 2));
    /* a floor of 0 (one target per row): the bound is log 2, not 0 */
    const double zero_floor[3] = {0.5, 0.7, 0.69};
    f = kgl_saturation_frozen_fraction(zero_floor, 3, 0, 2, &frozen, &counted);
    CHECK(frozen == 1 && counted == 3); /* only 0.7 > log 2 = 0.6931 */
    const double nan_only[1] = {NAN};
    CHECK(isnan(kgl_saturation_frozen_fraction(nan_only, 1, 0.77, 2, &frozen, &counted)) && counted == 0);
    /* sign changes of the step-to-step difference */
    const double zigzag[5] = {1, 2, 1, 2, 1}, falling[4] = {5, 4, 3, 2}, flat[5] = {1, 2, 2, 3, 1};
    CHECK(kgl_sign_changes(zigzag, 5) == 3);
    CHECK(kgl_sign_changes(falling, 4) == 0);
    CHECK(kgl_sign_changes(flat, 5) == 1); /* the zero step is skipped: up, up, down */
}

/* The floor on a graph small enough to do by hand: entity 0 has r0-tails
   {1, 2} and r1-tails {2, 3}; entity 4 has the r0-tail 1. */
TEST(saturation_supervision_floor_by_hand)
{
    const kgl_triple tr[5] = {{0, 0, 1}, {0, 0, 2}, {0, 1, 2}, {0, 1, 3}, {4, 0, 1}};
    kgl_tails tl;
    kgl_tails_build(&tl, 5, 2, tr, 5);
    double l2 = log(2.0);
    /* r0 alone on head 0: row 0 has 2 targets (best 1/2 each: 2 log 2), row 4 one (0); 3 examples */
    CHECK_NEAR(kgl_supervision_floor(&tl, (const int[]){0, -1}, 1), 2 * l2 / 3, 1e-15);
    /* both on one head: row 0's targets 1, 2, 2, 3 (tail 2 in both relations): the best row is
       (1/4, 1/2, 1/4), costing −(log ¼ + 2 log ½ + log ¼) = 6 log 2; 5 examples */
    CHECK_NEAR(kgl_supervision_floor(&tl, (const int[]){0, 0}, 1), 6 * l2 / 5, 1e-15);
    /* on two heads: rows (0, 0) and (1, 0) have two targets each: 4 log 2 over 5 */
    CHECK_NEAR(kgl_supervision_floor(&tl, (const int[]){0, 1}, 2), 4 * l2 / 5, 1e-15);
    CHECK(isnan(kgl_supervision_floor(&tl, (const int[]){-1, -1}, 1)));
    CHECK(isnan(kgl_supervision_floor(&tl, NULL, 1)));
    /* no attention row does better: row 0 of the one-head case against 2000 random rows */
    kgl_rng rng;
    kgl_rng_seed(&rng, 7);
    double best = INFINITY;
    for (int k = 0; k < 2000; k++) {
        double a[5], z = 0;
        for (int j = 0; j < 5; j++) z += a[j] = exp(3 * kgl_rng_normal(&rng));
        double cost = -(log(a[1] / z) + 2 * log(a[2] / z) + log(a[3] / z));
        if (cost < best) best = cost;
    }
    CHECK(best >= 6 * l2 && best < 6 * l2 + 1); /* above the bound, and random rows come near it */
    kgl_tails_free(&tl);
}

TEST(saturation_supervise_words)
{
    CHECK(kgl_saturation_supervise_parse("off") == KGL_SAT_SUP_OFF);
    CHECK(kgl_saturation_supervise_parse("advises") == KGL_SAT_SUP_ADVISES);
    CHECK(kgl_saturation_supervise_parse("on") == KGL_SAT_SUP_ADVISES); /* the old word */
    CHECK(kgl_saturation_supervise_parse("both-one-head") == KGL_SAT_SUP_BOTH_ONE_HEAD);
    CHECK(kgl_saturation_supervise_parse("both-two-heads") == KGL_SAT_SUP_BOTH_TWO_HEADS);
    CHECK(kgl_saturation_supervise_parse("both") == -1);
    CHECK(kgl_saturation_heads(KGL_SAT_SUP_BOTH_TWO_HEADS) == 2 && kgl_saturation_heads(KGL_SAT_SUP_ADVISES) == 1);
    /* a bad word names the valid ones, and the nearest */
    CHECK(run_kgl(T, "saturation --supervise off,both-on-head", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--supervise: 'both-on-head' is not off, advises, both-one-head, both-two-heads or on") != NULL);
    CHECK(strstr(err, "did you mean one of 'both-one-head'") != NULL); /* closest first */
    CHECK(run_kgl(T, "saturation --frozen-multiple 1", out, sizeof out, err, sizeof err) == 2);
    /* an --out that cannot be made is a bad argument, found before any run */
    CHECK(run_kgl(T, "saturation --out /nonexistent/kgl/out", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "kgl saturation: --out /nonexistent/kgl/out") != NULL && out[0] == 0);
    CHECK(run_kgl(T, "saturation --help", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "both-two-heads") != NULL && strstr(out, "--frozen-multiple") != NULL);
}

/* A small real run: dk 4, 30 steps, 2 seeds, both supervisions and both
   scales. The per-seed file has a row per configuration and seed whose
   values are the per-step file's last rows; the frozen flags and fractions
   follow from them and the floor. */
TEST(saturation_per_seed_files)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "saturation --dk 4 --scale sqrt,none --init-scale 3 --supervise both-one-head,both-two-heads "
             "--steps 30 --seeds 2 --json --out %s/ps",
             T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    CHECK(test_count(out, "\"per_seed\":[{\"seed\":1,") == 4);
    CHECK(test_count(out, "\"aux_floor\":0.77") == 2 && test_count(out, "\"aux_floor\":0.30") == 2);
    CHECK(test_count(out, "\"heads\":2,") == 2);
    CHECK(test_count(out, "\"spread\":{\"loss\":{\"min\":") == 4);
    static char steps_csv[1 << 22], seeds_csv[1 << 16], summary_csv[1 << 18];
    char path[1024];
    snprintf(path, sizeof path, "%s/ps/saturation.csv", T->tmp);
    bool have = CHECK(test_read_all(path, steps_csv, sizeof steps_csv));
    snprintf(path, sizeof path, "%s/ps/saturation_seeds.csv", T->tmp);
    have = CHECK(test_read_all(path, seeds_csv, sizeof seeds_csv)) && have;
    snprintf(path, sizeof path, "%s/ps/saturation_summary.csv", T->tmp);
    have = CHECK(test_read_all(path, summary_csv, sizeof summary_csv)) && have;
    if (!have) return;
    CHECK(test_count(steps_csv, "\n") == 1 + 4 * 2 * 30);
    CHECK(test_count(seeds_csv, "\n") == 1 + 4 * 2);
    CHECK(test_count(summary_csv, "\n") == 1 + 4);
    int c_seed = test_csv_column(seeds_csv, "seed"), c_aux = test_csv_column(seeds_csv, "aux_loss"), c_floor = test_csv_column(seeds_csv, "aux_floor"),
        c_frozen = test_csv_column(seeds_csv, "frozen"), c_sup = test_csv_column(seeds_csv, "supervise");
    int s_aux = test_csv_column(steps_csv, "aux_loss"), s_step = test_csv_column(steps_csv, "step");
    if (!CHECK(c_seed >= 0 && c_aux >= 0 && c_floor >= 0 && c_frozen >= 0 && c_sup >= 0 && s_aux >= 0 && s_step >= 0))
        return;
    int frozen_of_config[4] = {0, 0, 0, 0};
    for (int r = 1; r <= 8; r++) {
        const char *row = test_csv_line(seeds_csv, r);
        if (!CHECK(row != NULL)) return;
        CHECK(test_csv_num(row, c_seed) == 1 + (r - 1) % 2);
        char sup[32];
        test_csv_field(row, c_sup, sup, sizeof sup);
        CHECK(strcmp(sup, (r - 1) / 2 % 2 ? "both-two-heads" : "both-one-head") == 0);
        /* the run's last step in the per-step file: row 30 · r of it */
        const char *last = test_csv_line(steps_csv, 30 * r);
        CHECK(last && test_csv_num(last, s_step) == 30);
        double aux = test_csv_num(row, c_aux), floor_value = test_csv_num(row, c_floor);
        CHECK(last && test_csv_num(last, s_aux) == aux);
        CHECK(test_csv_num(row, c_frozen) == (aux > 2 * floor_value ? 1 : 0));
        frozen_of_config[(r - 1) / 2] += aux > 2 * floor_value;
    }
    int c_ff = test_csv_column(summary_csv, "frozen_fraction"), c_med = test_csv_column(summary_csv, "aux_loss_median"),
        c_min = test_csv_column(summary_csv, "aux_loss_min");
    for (int c = 0; c < 4 && c_ff >= 0 && c_med >= 0; c++) {
        const char *row = test_csv_line(summary_csv, 1 + c), *s1 = test_csv_line(seeds_csv, 1 + 2 * c),
                   *s2 = test_csv_line(seeds_csv, 2 + 2 * c);
        if (!CHECK(row && s1 && s2)) return;
        CHECK(test_csv_num(row, c_ff) == frozen_of_config[c] / 2.0);
        double a = test_csv_num(s1, c_aux), b = test_csv_num(s2, c_aux);
        CHECK_NEAR(test_csv_num(row, c_med), (a + b) / 2, 1e-15 * (a + b)); /* the median of two: their mean (round-off) */
        CHECK(test_csv_num(row, c_min) == (a < b ? a : b));
    }
    /* a picture per supervised configuration, a curve per seed */
    static char svg[1 << 21];
    snprintf(path, sizeof path, "%s/ps/seeds_2.svg", T->tmp); /* configuration 2: none, one head */
    if (CHECK(test_read_all(path, svg, sizeof svg))) {
        CHECK(strstr(svg, "dk=4 none s=3 sup=both-one-head") != NULL);
        CHECK(strstr(svg, "seed 2") != NULL && strstr(svg, "floor 0.770") != NULL);
    }
}

/* kgl train's run of the grid's configuration at `scale` and `seed` ends
   (last row, aux_loss) at exactly the study's value in `row` (column c_aux). */
static bool study_run_is_train_run(test_ctx *T, const char *scale, int seed, const char *row, int c_aux)
{
    static char log_csv[1 << 20];
    char cmd[1024], path[512];
    snprintf(cmd, sizeof cmd,
             "train --dim 256 --heads 1 --scale %s --init-scale 3 --supervise-heads advises=0,authored=0 "
             "--steps 300 --seed %d --quiet --log %s/ig/train_%s%d.csv",
             scale, seed, T->tmp, scale, seed);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return false;
    snprintf(path, sizeof path, "%s/ig/train_%s%d.csv", T->tmp, scale, seed);
    if (!CHECK(test_read_all(path, log_csv, sizeof log_csv))) return false;
    const char *last = test_csv_line(log_csv, test_count(log_csv, "\n") - 1);
    int l_aux = test_csv_column(log_csv, "aux_loss");
    if (!CHECK(last && l_aux >= 0)) return false;
    if (!CHECK(test_csv_num(last, l_aux) == test_csv_num(row, c_aux))) {
        printf("    %s seed %d: train %.17g, study %.17g\n", scale, seed, test_csv_num(last, l_aux),
               test_csv_num(row, c_aux));
        return false;
    }
    return true;
}

/* The issue's grid (issue 15, "Done when"): d 256, one head, init-scale 3,
   advises and authored on that head, 10 seeds. The study's runs are `kgl
   train`'s own (same final supervision loss to the last bit, for a seed that
   ends frozen and one that converges), scaled no seed is frozen, unscaled at
   least half are. */
TEST(saturation_issue_grid_frozen_fraction)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "saturation --dk 256 --scale sqrt,none --init-scale 3 --supervise both-one-head --seeds 10 --out %s/ig",
             T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    static char csv[1 << 18];
    char path[1024];
    snprintf(path, sizeof path, "%s/ig/saturation_summary.csv", T->tmp);
    if (!CHECK(test_read_all(path, csv, sizeof csv))) return;
    int c_ff = test_csv_column(csv, "frozen_fraction"), c_floor = test_csv_column(csv, "aux_floor");
    const char *sqrt_row = test_csv_line(csv, 1), *none_row = test_csv_line(csv, 2);
    if (!CHECK(c_ff >= 0 && c_floor >= 0 && sqrt_row && none_row)) return;
    CHECK_NEAR(test_csv_num(sqrt_row, c_floor), (4 * log(4.0) + 2 * log(2.0)) / 9, 1e-15); /* 0.770 */
    CHECK(test_csv_num(sqrt_row, c_ff) == 0);
    CHECK(test_csv_num(none_row, c_ff) >= 0.5);
    /* the same runs as kgl train: the last aux_loss of an unscaled seed that
       ends frozen and of one that converges. Which unscaled seeds freeze is
       chaotic (saturation.md: the portable path's sums freeze all ten of
       them since issue 49's third round, the AVX-512 path's nine), so when
       no unscaled seed converged the converged run compared is the scaled
       configuration's seed 1 (every scaled seed converges, checked above). */
    static char seeds[1 << 16];
    snprintf(path, sizeof path, "%s/ig/saturation_seeds.csv", T->tmp);
    if (!CHECK(test_read_all(path, seeds, sizeof seeds))) return;
    int c_aux = test_csv_column(seeds, "aux_loss"), c_frozen = test_csv_column(seeds, "frozen");
    if (!CHECK(c_aux >= 0 && c_frozen >= 0)) return;
    int frozen_seen = 0, converged_seen = 0;
    for (int seed = 1; seed <= 10 && !(frozen_seen && converged_seen); seed++) {
        const char *row = test_csv_line(seeds, 10 + seed); /* the unscaled rows follow the ten scaled ones */
        if (!CHECK(row != NULL)) return;
        bool frozen = test_csv_num(row, c_frozen) == 1;
        if (frozen ? frozen_seen : converged_seen) continue; /* one of each is enough */
        if (!study_run_is_train_run(T, "none", seed, row, c_aux)) return;
        if (frozen) frozen_seen = seed;
        else converged_seen = seed;
    }
    CHECK(frozen_seen > 0);
    if (!converged_seen) {
        const char *row = test_csv_line(seeds, 1); /* the scaled configuration's seed 1 */
        if (CHECK(row != NULL && test_csv_num(row, c_frozen) == 0) && study_run_is_train_run(T, "sqrt", 1, row, c_aux))
            converged_seen = 1;
    }
    CHECK(converged_seen > 0);
}
