/* studies_saturation_heads.c — the instruments of the two studies: head specialisation
 * (kgl heads, supervised heads) and softmax saturation (the training log's
 * diagnostics, kgl saturation). */
#include <stdlib.h>

#include "test.h"

static char out[1 << 18], err[1 << 14];

/* The number after "key": in a JSON text (the first occurrence after `from`). */
static double json_num(const char *from, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = from ? strstr(from, pat) : NULL;
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

/* The acceptance test: with advises on head 0 and authored on head 1,
   both heads specialise (spec ≥ 0.9) for every seed 1–10. Measured: ≥ 0.999. */
TEST(supervised_heads_specialise_every_seed)
{
    for (int seed = 1; seed <= 10; seed++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "train --supervise-heads advises=0,authored=1 --seed %d --json", seed);
        CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
        const char *spec = strstr(out, "\"spec\":{");
        double advises0 = NAN, authored1 = NAN;
        if (CHECK(spec != NULL)) {
            const char *a = strstr(spec, "\"advises\":["), *b = strstr(spec, "\"authored\":[");
            if (CHECK(a && b)) {
                advises0 = strtod(a + 11, NULL);
                char *end;
                strtod(b + 12, &end);
                authored1 = strtod(end + 1, NULL); /* the second value: head 1 */
            }
        }
        if (!CHECK(advises0 >= 0.9 && authored1 >= 0.9)) printf("    seed %d: %g %g\n", seed, advises0, authored1);
    }
}

TEST(heads_report_and_pictures)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "train --supervise-heads advises=0,authored=1 --save %s/h.st --quiet", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/h.st --json --svg %s/pics", T->tmp, T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    const char *adv = strstr(out, "\"advises\":{");
    /* uniform baseline: alice has 2 advisees, bob 1, of 13 entities */
    CHECK_NEAR(json_num(adv, "baseline"), (2.0 / 13 + 1.0 / 13) / 2, 1e-12);
    CHECK(json_num(adv, "entities") == 2);
    /* spec: one value per head (2), each a mean attention mass in [0, 1]; head 0 supervised */
    const char *spec = adv ? strstr(adv, "\"spec\":[") : NULL;
    double sp[2] = {NAN, NAN};
    char *endp = NULL;
    if (CHECK(spec != NULL)) {
        sp[0] = strtod(spec + 8, &endp);
        if (CHECK(*endp == ',')) sp[1] = strtod(endp + 1, &endp);
        CHECK(*endp == ']');
    }
    CHECK(sp[0] >= 0.9 && sp[0] <= 1);
    CHECK(sp[1] >= 0 && sp[1] <= 1);
    const char *prec = adv ? strstr(adv, "\"argmax_precision\":[") : NULL;
    CHECK(prec && strtod(prec + 20, NULL) == 1.0); /* head 0's top-1 is always an advisee */
    /* bob's top attended entity in head 0 is carol, his one advisee */
    CHECK(strstr(out, "\"top3\":[{\"alice\":") != NULL);
    CHECK(strstr(out, "\"bob\":[[\"carol\",") != NULL);
    /* ablation: MRR with all heads, and per head */
    const char *abl = strstr(out, "\"ablation\":{");
    double base = json_num(abl, "mrr");
    CHECK(base > 0.9 && base <= 1.0);
    CHECK(test_count(abl ? abl : "", "\"drop\":") == 2);
    /* pictures: per head n x n cells, the grid both heads, outlines of the true tails */
    static char svg[1 << 20];
    char path[1024];
    snprintf(path, sizeof path, "%s/pics/head0.svg", T->tmp);
    if (CHECK(test_read_all(path, svg, sizeof svg))) {
        CHECK(test_count(svg, "<rect class=\"cell") == 169);
        CHECK(test_count(svg, "<rect class=\"cell outlined\"") == 3); /* alice→dave, alice→erin, bob→carol */
        CHECK(strstr(svg, "best relation advises") != NULL);
        CHECK(strstr(svg, "true tail (advises)") != NULL);
        CHECK(strstr(svg, "bob → carol: ") != NULL); /* a cell's tooltip */
    }
    snprintf(path, sizeof path, "%s/pics/heads.svg", T->tmp);
    if (CHECK(test_read_all(path, svg, sizeof svg))) CHECK(test_count(svg, "<rect class=\"cell") == 2 * 169);
    snprintf(path, sizeof path, "%s/pics/spec.svg", T->tmp);
    if (CHECK(test_read_all(path, svg, sizeof svg))) CHECK(test_count(svg, "<rect class=\"cell") == 2 * 5);
    /* the table form */
    snprintf(cmd, sizeof cmd, "heads --checkpoint %s/h.st", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "relation   entities baseline  spec h0") != NULL);
    CHECK(strstr(out, "head ablation: train MRR") != NULL);
    CHECK(strstr(out, "  bob   -> carol ") != NULL);
}

/* Logging measures between backward and update and only reads: the loss
   bits are the same with and without it. */
TEST(logging_does_not_change_the_trajectory)
{
    char cmd[1024], a[64] = "", b[64] = "";
    CHECK(run_kgl(T, "train --steps 60 --supervise-heads advises=0 --json", out, sizeof out, err, sizeof err) == 0);
    /* the whole number, all 17 significant digits (up to the comma) */
    const char *p = strstr(out, "\"final_loss\":");
    if (p) snprintf(a, sizeof a, "%.*s", (int)strcspn(p, ",}"), p);
    snprintf(cmd, sizeof cmd, "train --steps 60 --supervise-heads advises=0 --json --log %s/d.csv --log-every 1", T->tmp);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    p = strstr(out, "\"final_loss\":");
    if (p) snprintf(b, sizeof b, "%.*s", (int)strcspn(p, ",}"), p);
    CHECK(strlen(a) >= strlen("\"final_loss\":1.2345678901234567") && strcmp(a, b) == 0);
    /* the log: every documented column, 60 rows of the same width */
    static char csv[1 << 20];
    char path[1024];
    snprintf(path, sizeof path, "%s/d.csv", T->tmp);
    if (!CHECK(test_read_all(path, csv, sizeof csv))) return;
    static const char *const cols[] = {"step,loss,main_loss,aux_loss,lr,seconds,h0_max_prob_mean,h0_max_prob_min,"
                                       "h0_entropy,h0_max_abs_logit,h0_jac_fro,h0_grad_logits,h0_grad_wq,h0_grad_wk,"
                                       "h0_wq_move,h0_wk_move,h0_attn_tv,h0_spec_about,h0_spec_advises,"
                                       "h0_spec_affiliated,h0_spec_authored,h0_spec_cites,h1_max_prob_mean"};
    CHECK(strncmp(csv, cols[0], strlen(cols[0])) == 0);
    int lines = test_count(csv, "\n");
    CHECK(lines == 61);
    int commas_header = 0;
    for (const char *q = csv; *q != '\n'; q++) commas_header += *q == ',';
    CHECK(commas_header == 5 + 2 * (11 + 5));
    /* step 1: nothing has moved yet, the attention is where it started */
    const char *row1 = strchr(csv, '\n') + 1;
    double v[23];
    char *q = (char *)row1;
    for (int k = 0; k < 23; k++) {
        v[k] = strtod(q, &q);
        q++;
    }
    CHECK(v[0] == 1);
    CHECK(v[2] > 0 && v[3] > 0); /* main and aux losses */
    CHECK_NEAR(v[1], v[2] + v[3], 1e-12 * v[1]); /* loss = main + 1 · aux */
    CHECK(v[14] == 0 && v[15] == 0 && v[16] == 0); /* wq_move, wk_move, attn_tv at step 1 */
    /* head 0's max_prob mean and min over the 13 rows at step 1: seed 1's
       initial attention, pinned as measured (seed-dependent; 1e-12 for the
       last bits the GEMM kernels of different ISAs may differ in) */
    CHECK_NEAR(v[6], 0.31105413516348612, 1e-12);
    CHECK_NEAR(v[7], 0.10807243423555016, 1e-12);
}

/* The directions of the saturation study, measured (data/report/saturation.md):
   unscaled dk = 256 is near one-hot at init; at init-scale 3 the
   gradient reaching the logits is ≥ 10x smaller unscaled than scaled; and a
   supervised unscaled head's loss stays ≥ 10x above the scaled one's over
   the run (its average over 300 steps; at step 300 itself the two are within
   3x: the head does learn, late and erratically). Means of seeds 1–3. */
TEST(saturation_directions)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "saturation --dk 256 --scale sqrt,none --init-scale 1,3 --steps 1 --seeds 3 --json --out %s/s1",
             T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    const char *c[4];
    static const char *const labels[4] = {"\"dk=256 sqrt s=1\"", "\"dk=256 sqrt s=3\"", "\"dk=256 none s=1\"",
                                          "\"dk=256 none s=3\""};
    for (int k = 0; k < 4; k++) CHECK((c[k] = strstr(out, labels[k])) != NULL);
    if (!(c[0] && c[1] && c[2] && c[3])) return;
    double unscaled_mp = json_num(strstr(c[2], "\"init\""), "max_prob");
    CHECK(unscaled_mp >= 0.9);
    CHECK(json_num(strstr(c[0], "\"init\""), "max_prob") < 0.5);
    double gs_scaled = json_num(strstr(c[1], "\"init\""), "grad_logits");
    double gs_unscaled = json_num(strstr(c[3], "\"init\""), "grad_logits");
    CHECK(gs_unscaled * 10 <= gs_scaled);
    /* yet the gradient of Wq is larger unscaled (the unscaled K multiplies it) */
    CHECK(json_num(strstr(c[2], "\"init\""), "grad_wq") > json_num(strstr(c[0], "\"init\""), "grad_wq"));

    snprintf(cmd, sizeof cmd, "saturation --dk 256 --scale sqrt,none --init-scale 3 --supervise on --seeds 3 --json --out %s/s2",
             T->tmp);
    if (!CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0)) return;
    const char *sc = strstr(out, "\"dk=256 sqrt s=3 sup=on\""), *un = strstr(out, "\"dk=256 none s=3 sup=on\"");
    if (!CHECK(sc && un)) return;
    double mean_sc = json_num(strstr(sc, "\"final\""), "aux_loss_mean");
    double mean_un = json_num(strstr(un, "\"final\""), "aux_loss_mean");
    CHECK(mean_un >= 10 * mean_sc);
    double end_sc = json_num(strstr(sc, "\"final\""), "aux_loss");
    double end_un = json_num(strstr(un, "\"final\""), "aux_loss");
    CHECK(end_sc < 0.5 && end_un < 3 * end_sc); /* the measured contradiction of "stays stuck after 300 steps" */
    /* the files: one CSV row per configuration, seed and step; the plots */
    static char csv[1 << 22];
    char path[1024];
    snprintf(path, sizeof path, "%s/s2/saturation.csv", T->tmp);
    if (CHECK(test_read_all(path, csv, sizeof csv))) {
        CHECK(test_count(csv, "\n") == 1 + 2 * 3 * 300);
        CHECK(strncmp(csv, "config,dk,scale,init_scale,optimizer,lr,supervise,remedy,seed,step,loss,", 72) == 0);
    }
    static const char *const svgs[] = {"saturation", "max_prob", "entropy", "jac_fro", "grad_logits", "grad_wq",
                                       "attn_tv", "loss", "aux_loss", "spec_advises"};
    static char svg[1 << 21];
    for (size_t k = 0; k < sizeof svgs / sizeof svgs[0]; k++) {
        snprintf(path, sizeof path, "%s/s2/%s.svg", T->tmp, svgs[k]);
        if (!CHECK(test_read_all(path, svg, sizeof svg))) continue;
        CHECK(strstr(svg, "</svg>") != NULL);
        /* a panel per scale and init-scale, its legend naming the rest of the configuration */
        if (k > 0) CHECK(test_count(svg, "scale none (1), init-scale 3") >= 1 && test_count(svg, "dk=256 sup=on") >= 1);
    }
}

TEST(saturation_option_errors)
{
    CHECK(run_kgl(T, "saturation --dk 4,x", out, sizeof out, err, sizeof err) == 2);
    CHECK(strstr(err, "--dk: 'x' is not a number in range") != NULL);
    CHECK(run_kgl(T, "saturation --optimizer adam,rmsprop", out, sizeof out, err, sizeof err) == 2);
    CHECK(run_kgl(T, "saturation --supervise maybe", out, sizeof out, err, sizeof err) == 2);
    CHECK(run_kgl(T, "saturation --seeds 0", out, sizeof out, err, sizeof err) == 2);
    CHECK(run_kgl(T, "saturation --help", out, sizeof out, err, sizeof err) == 0);
    CHECK(strstr(out, "--remedies") != NULL && strstr(out, "--dk 4,64,256") != NULL);
}

/* --lookup keeps its promises: the entity features and Wv = Wo = I never
   move, every relation row is constant within each head's columns, and a
   checkpoint resumes with the same constraints (bit-exact). */
TEST(lookup_mode_constraints)
{
    char cmd[1024], path[600], e[512];
    snprintf(path, sizeof path, "%s/lk0.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --dim 20 --heads 5 --lookup --steps 0 --save %s --quiet", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    kgl_st_file f0, f1;
    if (!CHECK(kgl_st_read(path, &f0, e, sizeof e))) return;
    snprintf(path, sizeof path, "%s/lk1.st", T->tmp);
    snprintf(cmd, sizeof cmd, "train --dim 20 --heads 5 --lookup --steps 40 --save %s --quiet", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    if (!CHECK(kgl_st_read(path, &f1, e, sizeof e))) return;
    CHECK(strcmp(kgl_st_meta(&f1, "lookup"), "1") == 0);
    const char *fixed[] = {"entity_emb", "attn.wv", "attn.wo"};
    for (int k = 0; k < 3; k++) {
        const kgl_st_tensor *a = kgl_st_find(&f0, fixed[k]), *b = kgl_st_find(&f1, fixed[k]);
        CHECK(a && b && memcmp(a->data, b->data, (size_t)(a->shape[0] * a->shape[1]) * sizeof(double)) == 0);
    }
    const kgl_st_tensor *wv = kgl_st_find(&f1, "attn.wv");
    CHECK(wv->data[0] == 1 && wv->data[1] == 0 && wv->data[21] == 1);
    const kgl_st_tensor *R = kgl_st_find(&f1, "relation_emb"), *R0 = kgl_st_find(&f0, "relation_emb");
    bool tied = true;
    for (int r = 0; r < R->shape[0]; r++)
        for (int c = 0; c < 20; c++) tied = tied && R->data[r * 20 + c] == R->data[r * 20 + (c / 4) * 4];
    CHECK(tied);
    CHECK(memcmp(R->data, R0->data, 10 * 20 * sizeof(double)) != 0); /* and it does train */
    const kgl_st_tensor *wq = kgl_st_find(&f1, "attn.wq"), *wq0 = kgl_st_find(&f0, "attn.wq");
    CHECK(memcmp(wq->data, wq0->data, 400 * sizeof(double)) != 0);
    kgl_st_free(&f0);
    kgl_st_free(&f1);
    /* resume: 40 + 40 = 80 */
    char straight[64] = "", resumed[64] = "";
    CHECK(run_kgl(T, "train --dim 20 --heads 5 --lookup --steps 80 --json", out, sizeof out, err, sizeof err) == 0);
    const char *p = strstr(out, "\"final_loss\":");
    if (p) snprintf(straight, sizeof straight, "%.30s", p);
    snprintf(cmd, sizeof cmd, "train --resume %s --steps 40 --json", path);
    CHECK(run_kgl(T, cmd, out, sizeof out, err, sizeof err) == 0);
    p = strstr(out, "\"final_loss\":");
    if (p) snprintf(resumed, sizeof resumed, "%.30s", p);
    CHECK(straight[0] && strcmp(straight, resumed) == 0);
}
