/* demo_text.c — `kgl demo`'s sections as text: each runs its section
 * (src/studies/demo.c does the computing) and prints its tables and the
 * check line, on the stream it is given. */
#include <math.h>
#include <string.h>

#include "kgl/studies.h"

/* s, left-aligned in `width` columns */
static void cell(FILE *f, const char *s, int width)
{
    fputs(s, f);
    for (int k = kgl_utf8_columns(s); k < width; k++) fputc(' ', f);
}

/* s, right-aligned in `width` columns */
static void rcell(FILE *f, const char *s, int width)
{
    for (int k = kgl_utf8_columns(s); k < width; k++) fputc(' ', f);
    fputs(s, f);
}

static void vec(FILE *f, const double *v, int n, const char *fmt)
{
    fputc('(', f);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        fprintf(f, fmt, v[i]);
    }
    fputc(')', f);
}

static const char *verdict(bool pass) { return pass ? "PASS" : "FAIL"; }

/* ---- 1. attention ----------------------------------------------------------------- */

static bool text_attention(FILE *f, const kgl_demo_input *c)
{
    const kgl_demo_world *w = c->world;
    kgl_demo_attention r;
    kgl_demo_attention_run(w, c->query, c->seed, &r);
    const char *q = w->entity[r.query];
    fprintf(f, "    X (%d x %d) = N(0, 1) noise + 0.5 on the dimension of the entity's type, with types\n"
               "    from %s:", w->n, KGL_DEMO_D, c->types_name);
    for (int k = 0; k < w->n_types; k++) fprintf(f, "%s %s %d", k ? "," : "", w->type_name[k], k);
    fprintf(f, "\n    Wq, Wk, Wv (%d x %d) ~ N(0, 1), untrained and not shrunk\n", KGL_DEMO_D, KGL_DEMO_DK);
    fprintf(f, "    query %s: scores q·k against all %d keys, divided by √dk = 2, softmax:\n\n", q, w->n);
    int kw = 3, tw = 4;
    for (int j = 0; j < w->n; j++) {
        if (kgl_utf8_columns(w->entity[j]) > kw) kw = kgl_utf8_columns(w->entity[j]);
        if (kgl_utf8_columns(w->type_name[w->type_of[j]]) > tw) tw = kgl_utf8_columns(w->type_name[w->type_of[j]]);
    }
    fprintf(f, "      ");
    cell(f, "key", kw + 2);
    cell(f, "type", tw);
    rcell(f, "q·k", 10);
    rcell(f, "q·k/√dk", 10);
    rcell(f, "weight", 9);
    fputc('\n', f);
    for (int j = 0; j < w->n; j++) {
        fprintf(f, "      ");
        cell(f, w->entity[j], kw + 2);
        cell(f, w->type_name[w->type_of[j]], tw);
        fprintf(f, "  %8.3f  %8.3f  %7.4f%s\n", r.raw[j], r.scaled[j], r.weight[j], j == r.query ? "   (itself)" : "");
    }
    fprintf(f, "\n    top %d:", r.n_top);
    for (int k = 0; k < r.n_top; k++)
        fprintf(f, "%s %s %.4f", k ? "," : "", w->entity[r.top[k]], r.weight[r.top[k]]);
    fprintf(f, "\n    output A[%s]·V = ", q);
    vec(f, r.out, KGL_DEMO_DK, "%.4f");
    fprintf(f, "\n    check: max |row sum − 1| over all %d rows = %.1e < 1e-12  %s\n", w->n, r.max_row_sum_err,
               verdict(r.pass));
    return r.pass;
}

/* ---- 2. variance ------------------------------------------------------------------- */

static bool text_variance(FILE *f, const kgl_demo_input *c)
{
    kgl_demo_variance r;
    kgl_demo_variance_run(c->seed, &r);
    static const double chapter[3] = {0.9995, 0.9950, 1.0254};
    fprintf(f, "    %d,%03d pairs q, k ~ N(0, I) per dk (the chapter drew 10,000, for which the band\n"
               "    [%.2f, %.2f] is only 1.6 to 2.1 standard errors wide):\n\n",
               KGL_DEMO_VAR_PAIRS / 1000, KGL_DEMO_VAR_PAIRS % 1000, KGL_DEMO_VAR_LO, KGL_DEMO_VAR_HI);
    fprintf(f, "      %5s", "dk");
    rcell(f, "Var(q·k)", 12);
    fprintf(f, "  %7s  %9s\n", "Var/dk", "(chapter)");
    for (int k = 0; k < 3; k++)
        fprintf(f, "      %5d  %10.3f  %7.4f  %9.4f\n", r.dk[k], r.var[k], r.ratio[k], chapter[k]);
    fprintf(f, "\n    saturation at dk = %d: one query, %d random keys; the largest softmax weight,\n"
               "    mean over %d,%03d draws (the chapter's single draw in brackets):\n"
               "      unscaled      %.4f  (0.9903)\n"
               "      scaled 1/√dk  %.4f  (0.2282)\n",
               KGL_DEMO_SAT_DK, KGL_DEMO_SAT_KEYS, KGL_DEMO_SAT_DRAWS / 1000, KGL_DEMO_SAT_DRAWS % 1000,
               r.sat_unscaled, r.sat_scaled);
    fprintf(f, "    check: Var/dk from %.4f to %.4f, in [%.2f, %.2f]; unscaled %.3f > %.1f; scaled %.3f < %.1f  %s\n",
               r.ratio_lo, r.ratio_hi, KGL_DEMO_VAR_LO, KGL_DEMO_VAR_HI, r.sat_unscaled, KGL_DEMO_SAT_UNSCALED_MIN,
               r.sat_scaled, KGL_DEMO_SAT_SCALED_MAX, verdict(r.pass));
    return r.pass;
}

/* ---- 3. jacobian ----------------------------------------------------------------------- */

static bool text_jacobian(FILE *f, const kgl_demo_input *c)
{
    enum { N = KGL_DEMO_JAC_N };
    kgl_demo_jacobian r;
    kgl_demo_jacobian_run(c->seed, &r);
    fprintf(f, "    %d seeded N(0, 1) logits (those of kgl gradcheck's Jacobian check):\n      z = ", N);
    vec(f, r.z, N, "%.4f");
    fprintf(f, "\n      p = softmax(z) = ");
    vec(f, r.p, N, "%.4f");
    fprintf(f, "\n    J = diag(p) − p pᵀ:\n");
    for (int i = 0; i < N; i++) {
        fprintf(f, "      ");
        for (int j = 0; j < N; j++) fprintf(f, "%9.5f", r.J[i * N + j]);
        fputc('\n', f);
    }
    fprintf(f, "    ");
    cell(f, "max |J − J_fd|, central differences with h = 1e-5:", 64);
    fprintf(f, "%.2e  (the chapter: 3.65e-12)\n    ", r.fd_err);
    cell(f, "max |J − hand formulas J_ii = p_i(1 − p_i), J_ij = −p_i p_j|:", 64);
    fprintf(f, "%.2e\n    ", r.hand_err);
    cell(f, "max |J e_k − backward through softmax_rows seeded with e_k|:", 64);
    fprintf(f, "%.2e  (the tape never builds J)\n", r.tape_err);
    fprintf(f, "\n    freezing: softmax(c·z) as the logits' scale c grows; J → 0 as p → one-hot:\n\n");
    fprintf(f, "      %3s  %9s", "c", "max_prob");
    rcell(f, "1 − max_prob", 14);
    rcell(f, "‖J‖_F", 12);
    rcell(f, "max J_ii", 12);
    fputc('\n', f);
    for (int s = 0; s < KGL_DEMO_JAC_SWEEP; s++)
        fprintf(f, "      %3g  %9.6f  %12.3e  %10.3e  %10.3e\n", r.c[s], r.max_prob[s], r.rest[s], r.fro[s],
                   r.max_jii[s]);
    fprintf(f, "    check: |J − J_fd| %.1e < 1e-9; hand formulas %.0e, backward %.0e < 1e-12;\n"
               "           at every c ‖J‖_F ≤ 4(1 − max_prob), max J_ii ≤ 1/4, max_prob never falls  %s\n",
               r.fd_err, r.hand_err, r.tape_err, verdict(r.pass));
    return r.pass;
}

/* ---- 4. lookup ------------------------------------------------------------------------------ */

static bool text_lookup(FILE *f, const kgl_demo_input *c)
{
    kgl_demo_lookup r;
    kgl_demo_lookup_run(c->seed, &r);
    fprintf(f, "    keys K = I₄ (slot j holds e_j), values V = 4 seeded N(0, 1) rows, query q = c·k₂;\n"
               "    scores q·K without 1/√dk: slot 2 scores c, the others 0, so p(slot 2) = e^c / (e^c + 3)\n\n");
    fprintf(f, "      %2s  %-30s  %9s  %12s", "c", "weights of slots 1..4", "p(slot 2)", "e^c/(e^c+3)");
    rcell(f, "cos(out, v₂)", 14);
    fputc('\n', f);
    for (int k = 0; k < 2; k++) {
        fprintf(f, "      %2g  ", r.c[k]);
        char buf[64];
        snprintf(buf, sizeof buf, "%.4f  %.4f  %.4f  %.4f", r.weight[k][0], r.weight[k][1], r.weight[k][2],
                 r.weight[k][3]);
        cell(f, buf, 30);
        fprintf(f, "  %9.6f  %12.6f  %12.7f\n", r.p2[k], r.p2_exact[k], r.cos[k]);
    }
    fprintf(f, "    v₂ = ");
    vec(f, r.V + 4, 4, "%.4f");
    fprintf(f, ", output at c = 8: ");
    vec(f, r.out[1], 4, "%.4f");
    fprintf(f, "\n    check: |p(slot 2) − e^c/(e^c+3)| = %.0e, %.0e < 1e-12; cos at c = 8 = 1 − %.1e > %.2f  %s\n",
               r.p2_err[0], r.p2_err[1], fmax(0.0, 1 - r.cos[1]), KGL_DEMO_LOOKUP_COS_MIN,
               verdict(r.pass));
    return r.pass;
}

/* ---- 5. multihead ----------------------------------------------------------------------------- */

static bool text_multihead(FILE *f, const kgl_demo_input *c)
{
    const kgl_demo_world *w = c->world;
    kgl_demo_multihead r;
    kgl_demo_multihead_run(w, c->query, c->seed, &r);
    fprintf(f, "    %d heads of dk = %d on the academic X; Wq, Wk, Wv, Wo (8 x 8) ~ N(0, 1/8);\n"
               "    head h takes columns %d(h−1)..%dh−1 of Q, K, V (slice_cols), then concat_cols and Wo:\n\n",
               KGL_DEMO_HEADS, KGL_DEMO_DK, KGL_DEMO_DK, KGL_DEMO_DK);
    static const char *const steps[6] = {"X", "→ Q, K, V = X W", "→ per head Q_h, K_h, V_h",
                                         "→ O₁, O₂ = softmax(Q_h K_hᵀ/√4) V_h", "→ concat(O₁, O₂)", "→ concat·Wo"};
    for (int k = 0; k < 6; k++) {
        fprintf(f, "      ");
        cell(f, steps[k], 38);
        fprintf(f, "(%d, %d)\n", r.shape[k][0], r.shape[k][1]);
    }
    fputc('\n', f);
    fprintf(f, "    %s's top-1 key:", w->entity[r.query]);
    for (int h = 0; h < KGL_DEMO_HEADS; h++)
        fprintf(f, "%s head %d %s (%.4f)", h ? "," : "", h + 1, w->entity[r.top[h]], r.top_weight[h]);
    fprintf(f, "\n    check: %s; rows sum to 1 (%.0e); concat·Wo = Σ_h O_h Wo[rows of h] (%.0e);\n"
               "           both < 1e-12  %s\n",
               r.shapes_ok ? "shapes as traced" : "shapes NOT as traced", r.max_row_sum_err, r.split_err,
               verdict(r.pass));
    return r.pass;
}

/* ---- 6. maxweight ------------------------------------------------------------------------------- */

static bool text_maxweight(FILE *f, const kgl_demo_input *c)
{
    kgl_demo_maxweight r;
    kgl_demo_maxweight_run(c->seed, &r);
    fprintf(f, "    one query, %d keys ~ N(0, I_d); the largest softmax weight, mean over %d draws\n"
               "    (uniform would be %.3f):\n\n",
               KGL_DEMO_MW_KEYS, KGL_DEMO_MW_DRAWS, 1.0 / KGL_DEMO_MW_KEYS);
    fprintf(f, "      %4s  %8s  %13s\n", "d", "unscaled", "scaled 1/√d");
    for (int k = 0; k < KGL_DEMO_MW_DIMS; k++)
        fprintf(f, "      %4d  %8.4f  %13.4f\n", r.d[k], r.unscaled[k], r.scaled[k]);
    fprintf(f, "    check: unscaled at d = %d: %.3f > %.1f; scaled at most %.3f < %.1f at every d  %s\n",
               r.d[KGL_DEMO_MW_DIMS - 1], r.unscaled[KGL_DEMO_MW_DIMS - 1], KGL_DEMO_MW_UNSCALED_MIN, r.scaled_top,
               KGL_DEMO_MW_SCALED_MAX, verdict(r.pass));
    return r.pass;
}

/* ---- 7. mask --------------------------------------------------------------------------------------- */

static void mask_table(FILE *f, const kgl_demo_mask *r, int m, const char *title)
{
    enum { T = KGL_DEMO_T };
    const double *A = m ? r->causal : r->bi;
    fprintf(f, "    %s\n      ", title);
    cell(f, "query \\ key", 12);
    for (int j = 0; j < T; j++) rcell(f, r->token[j], (int)strlen(r->token[j]) > 6 ? (int)strlen(r->token[j]) + 2 : 8);
    rcell(f, "max", 10);
    rcell(f, "no 1/√4", 10);
    fputc('\n', f);
    for (int i = 0; i < T; i++) {
        fprintf(f, "      ");
        cell(f, r->token[i], 12);
        for (int j = 0; j < T; j++) {
            int width = (int)strlen(r->token[j]) > 6 ? (int)strlen(r->token[j]) + 2 : 8;
            fprintf(f, "%*.3f", width, A[i * T + j]);
        }
        fprintf(f, "  %8.3f  %8.3f\n", r->max_w[m][i], r->max_w_unscaled[m][i]);
    }
}

static bool text_mask(FILE *f, const kgl_demo_input *c)
{
    (void)c; /* the toy sentence is fixed: no seed, no world */
    enum { T = KGL_DEMO_T };
    kgl_demo_mask r;
    kgl_demo_mask_run(&r);
    fprintf(f, "    tokens and their one feature of (person, thing, time, action):\n      ");
    for (int i = 0; i < T; i++) fprintf(f, "%s%s %s", i ? ", " : "", r.token[i], r.feature[r.feature_of[i]]);
    fprintf(f, "\n    W_K = W_V = I; W_Q by hand: the action looks for person and thing (4 each),\n"
               "    person, thing and time look for the action (4). Weights after 1/√4; the last two\n"
               "    columns are each row's largest weight with 1/√4 and without it:\n\n");
    mask_table(f, &r, 0, "bidirectional");
    fputc('\n', f);
    mask_table(f, &r, 1, "causal (a key after the query is masked)");
    fprintf(f, "    check: above the diagonal the causal weights are exactly 0 (max %g); rows sum to 1 (%.0e < 1e-12);\n"
               "           without 1/√4 no row is flatter and %d of 10 are sharper; %s  %s\n",
               r.above_diag, r.max_row_sum_err, r.sharper_rows,
               r.roles_ok ? "the others' top key is 'gave',\n           whose top keys are the persons and the thing"
                          : "the roles are NOT\n           as W_Q sets them",
               verdict(r.pass));
    return r.pass;
}

/* ---- 8. permutation -------------------------------------------------------------------------------- */

static bool text_permutation(FILE *f, const kgl_demo_input *c)
{
    const kgl_demo_world *w = c->world;
    kgl_demo_permutation r;
    kgl_demo_permutation_run(w, c->seed, &r);
    fprintf(f, "    the attention of section 1 (same X, Wq, Wk, Wv) on the rows of X in a seeded order P:\n      PX = ");
    for (int i = 0; i < r.n; i++) fprintf(f, "%s%s", i ? " " : "", w->entity[r.perm[i]]);
    fprintf(f, "\n    max |attn(PX) − P attn(X)|\n");
    fprintf(f, "      no mask      %.2e   equivariant: the same outputs, shuffled\n", r.free_err);
    if (r.n == 1) {
        fprintf(f, "      causal mask  %.2e   one row: there is no other order\n", r.causal_err);
        fprintf(f, "    check: no mask %.0e < 1e-12; causal not testable with one row  %s\n", r.free_err,
                   verdict(r.pass));
        return r.pass;
    }
    fprintf(f, "      causal mask  %.2e   %d of %d rows differ: position now matters\n", r.causal_err,
               r.causal_rows_differ, r.n);
    fprintf(f, "    check: no mask %.0e < 1e-12; causal %.2g > 1e-9  %s\n", r.free_err, r.causal_err, verdict(r.pass));
    return r.pass;
}

/* ---- 9. memo --------------------------------------------------------------------------------------- */

static bool text_memo(FILE *f, const kgl_demo_input *c)
{
    const kgl_memo *m = c->memo;
    kgl_demo_memo r;
    kgl_demo_memo_run(m, &r);
    fprintf(f, "    from %s; vectors are (pack, cap, action) evidence\n", c->memo_name);
    int tw = 9, rw = 4; /* one width for every table */
    for (int gi = 0; gi < m->n_groups; gi++)
        for (int j = 0; j < m->g[gi].n; j++) {
            if (kgl_utf8_columns(m->g[gi].token[j]) > tw) tw = kgl_utf8_columns(m->g[gi].token[j]);
            if (kgl_utf8_columns(m->g[gi].role[j]) > rw) rw = kgl_utf8_columns(m->g[gi].role[j]);
        }
    for (int gi = 0; gi < m->n_groups; gi++) {
        const kgl_memo_group *g = &m->g[gi];
        const kgl_demo_memo_result *o = &r.g[gi];
        fprintf(f, "\n    %s, target %s:\n      ", g->document, g->target);
        cell(f, "candidate", tw + 2);
        cell(f, "role", rw);
        fprintf(f, "  %5s  %5s  %6s  %5s  %6s\n", "pack", "cap", "action", "score", "weight");
        for (int j = 0; j < g->n; j++) {
            fprintf(f, "      ");
            cell(f, g->token[j], tw + 2);
            cell(f, g->role[j], rw);
            fprintf(f, "  %5.2f  %5.2f  %6.2f  %5.2f  %6.3f\n", g->vec[j][0], g->vec[j][1], g->vec[j][2], g->score[j],
                       o->weight[j]);
        }
        fprintf(f, "      uniform baseline ");
        vec(f, o->baseline, KGL_MEMO_DIM, "%.3f");
        fprintf(f, " → new representation ");
        vec(f, o->repr, KGL_MEMO_DIM, "%.3f");
        fprintf(f, ",\n      shift ");
        vec(f, o->shift, KGL_MEMO_DIM, "%+.3f");
        fprintf(f, "; top token %s; weight on the missing step {", g->token[o->top]);
        bool first = true;
        for (int j = 0; j < g->n; j++)
            if (o->in_step[j]) {
                fprintf(f, "%s%s", first ? "" : ", ", g->token[j]);
                first = false;
            }
        fprintf(f, "} %.3f\n", o->step_weight);
    }
    fprintf(f, "    check: weights sum to 1 (%.0e < 1e-12); %d of %d values as in the article to 3 decimals",
               r.max_row_sum_err, r.article_values - r.article_mismatches, r.article_values);
    if (r.article_mismatches) fprintf(f, " (first: %s)", r.first_mismatch);
    fprintf(f, "  %s\n", verdict(r.pass));
    return r.pass;
}

/* ---- the sections, in order -------------------------------------------------------------------- */

const kgl_demo_section kgl_demo_sections[KGL_DEMO_SECTIONS] = {
    {"attention", "one query row of the academic world, traced end to end"},
    {"variance", "Var(q·k) = dk, and the saturation that 1/√dk prevents"},
    {"jacobian", "the softmax Jacobian J = diag(p) − p pᵀ, and how it freezes"},
    {"lookup", "attention as a soft dictionary lookup"},
    {"multihead", "two heads, concatenated and projected"},
    {"maxweight", "the largest of 8 weights as d grows (the companion article)"},
    {"mask", "bidirectional and causal attention on a toy sentence"},
    {"permutation", "without a mask, attention is permutation-equivariant"},
    {"memo", "the self-attention article's worked example"},
};

int kgl_demo_section_find(const char *name)
{
    for (int s = 0; s < KGL_DEMO_SECTIONS; s++)
        if (strcmp(name, kgl_demo_sections[s].name) == 0) return s;
    return -1;
}

bool kgl_demo_section_write(FILE *f, int section, const kgl_demo_input *in)
{
    static bool (*const print[KGL_DEMO_SECTIONS])(FILE *f, const kgl_demo_input *c) = {
        text_attention, text_variance, text_jacobian,    text_lookup, text_multihead,
        text_maxweight, text_mask,     text_permutation, text_memo,
    };
    fprintf(f, "\n[%d] %s: %s\n", section + 1, kgl_demo_sections[section].name, kgl_demo_sections[section].title);
    return print[section](f, in);
}
