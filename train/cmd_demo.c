/* cmd_demo.c — `kgl demo`: the chapter on attention as relevance-based
 * reasoning, re-derived section by section by the engine (src/studies/demo.c does
 * the computing; this file prints it). Every section ends in a check line;
 * exit 1 if any check fails, 2 on a usage or input error. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kgl.h"

static const char help[] =
    "usage: kgl demo [SECTION | all] [--seed N] [--entity NAME] [--types FILE] [--memo FILE] [--json]\n\n"
    "Re-derives the chapter on attention as relevance-based reasoning (and the\n"
    "companion articles' experiments) with kgl's own ops: scores by matmul_nt,\n"
    "scaling by scale, attention rows by softmax_rows. Each section ends with a\n"
    "check line computed from its numbers. Without SECTION (or with 'all') it runs\n"
    "all nine:\n\n"
    "  attention    one query row of the academic world, traced end to end\n"
    "  variance     Var(q.k) = dk, and the saturation 1/sqrt(dk) prevents\n"
    "  jacobian     the softmax Jacobian against finite differences; freezing\n"
    "  lookup       attention as a soft dictionary lookup\n"
    "  multihead    two heads, concatenated and projected: the shapes\n"
    "  maxweight    the largest of 8 weights as d grows, with and without 1/sqrt(d)\n"
    "  mask         bidirectional and causal attention on a toy sentence\n"
    "  permutation  without a mask, attention is permutation-equivariant\n"
    "  memo         the self-attention article's worked example (a Korean memo)\n\n"
    "  --seed N       seed of every random draw (default 1); each section seeds its own\n"
    "  --entity NAME  the query of 'attention' and 'multihead' (default bob, or the\n"
    "                 first entity of a --types file without bob)\n"
    "  --types FILE   entity<TAB>type file of the academic world (default: the copy of\n"
    "                 data/academic.types.tsv built into kgl)\n"
    "  --memo FILE    the memo CSV (default: the built-in copy of data/safety_memo.csv)\n"
    "  --json         print {\"seed\":N,\"sections\":[{\"name\":...,\"pass\":...},...],\"pass\":...}\n"
    "exit status: 0 every check passes, 1 a check failed, 2 usage or input error\n";

typedef struct demo_ctx {
    uint64_t seed;
    bool json;
    kgl_json_writer *out; /* with --json: the section's fields go here */
    const kgl_demo_world *world;
    const char *types_name, *memo_name;
    int query;
    const kgl_memo *memo;
} demo_ctx;

/* ---- printing ----------------------------------------------------------------- */

/* s, left-aligned in `width` columns */
static void cell(const char *s, int width)
{
    fputs(s, stdout);
    for (int k = kgl_utf8_columns(s); k < width; k++) putchar(' ');
}

/* s, right-aligned in `width` columns */
static void rcell(const char *s, int width)
{
    for (int k = kgl_utf8_columns(s); k < width; k++) putchar(' ');
    fputs(s, stdout);
}

static void vec(const double *v, int n, const char *fmt)
{
    putchar('(');
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", stdout);
        printf(fmt, v[i]);
    }
    putchar(')');
}

static const char *verdict(bool pass) { return pass ? "PASS" : "FAIL"; }

/* ---- 1. attention ----------------------------------------------------------------- */

static bool sec_attention(const demo_ctx *c)
{
    const kgl_demo_world *w = c->world;
    kgl_demo_attention r;
    kgl_demo_attention_run(w, c->query, c->seed, &r);
    const char *q = w->entity[r.query];
    if (c->json) {
        kgl_json_field_string(c->out, "query", q);
        kgl_json_key(c->out, "keys");
        kgl_json_begin_array(c->out);
        for (int j = 0; j < w->n; j++) {
            kgl_json_begin_object(c->out);
            kgl_json_field_string(c->out, "entity", w->entity[j]);
            kgl_json_field_string(c->out, "type", w->type_name[w->type_of[j]]);
            kgl_json_field_number(c->out, "score", r.raw[j]);
            kgl_json_field_number(c->out, "scaled", r.scaled[j]);
            kgl_json_field_number(c->out, "weight", r.weight[j]);
            kgl_json_end_object(c->out);
        }
        kgl_json_end_array(c->out);
        kgl_json_key(c->out, "top");
        kgl_json_begin_array(c->out);
        for (int k = 0; k < r.n_top; k++) kgl_json_put_string(c->out, w->entity[r.top[k]]);
        kgl_json_end_array(c->out);
        kgl_json_field_numbers(c->out, "output", r.out, KGL_DEMO_DK);
        kgl_json_field_number(c->out, "max_row_sum_err", r.max_row_sum_err);
        kgl_json_field_number(c->out, "bound", KGL_DEMO_EXACT);
        return r.pass;
    }
    printf("    X (%d x %d) = N(0, 1) noise + 0.5 on the dimension of the entity's type, with types\n"
           "    from %s:", w->n, KGL_DEMO_D, c->types_name);
    for (int k = 0; k < w->n_types; k++) printf("%s %s %d", k ? "," : "", w->type_name[k], k);
    printf("\n    Wq, Wk, Wv (%d x %d) ~ N(0, 1), untrained and not shrunk\n", KGL_DEMO_D, KGL_DEMO_DK);
    printf("    query %s: scores q·k against all %d keys, divided by √dk = 2, softmax:\n\n", q, w->n);
    int kw = 3, tw = 4;
    for (int j = 0; j < w->n; j++) {
        if (kgl_utf8_columns(w->entity[j]) > kw) kw = kgl_utf8_columns(w->entity[j]);
        if (kgl_utf8_columns(w->type_name[w->type_of[j]]) > tw) tw = kgl_utf8_columns(w->type_name[w->type_of[j]]);
    }
    printf("      ");
    cell("key", kw + 2);
    cell("type", tw);
    rcell("q·k", 10);
    rcell("q·k/√dk", 10);
    rcell("weight", 9);
    putchar('\n');
    for (int j = 0; j < w->n; j++) {
        printf("      ");
        cell(w->entity[j], kw + 2);
        cell(w->type_name[w->type_of[j]], tw);
        printf("  %8.3f  %8.3f  %7.4f%s\n", r.raw[j], r.scaled[j], r.weight[j], j == r.query ? "   (itself)" : "");
    }
    printf("\n    top %d:", r.n_top);
    for (int k = 0; k < r.n_top; k++)
        printf("%s %s %.4f", k ? "," : "", w->entity[r.top[k]], r.weight[r.top[k]]);
    printf("\n    output A[%s]·V = ", q);
    vec(r.out, KGL_DEMO_DK, "%.4f");
    printf("\n    check: max |row sum − 1| over all %d rows = %.1e < 1e-12  %s\n", w->n, r.max_row_sum_err,
           verdict(r.pass));
    return r.pass;
}

/* ---- 2. variance ------------------------------------------------------------------- */

static bool sec_variance(const demo_ctx *c)
{
    kgl_demo_variance r;
    kgl_demo_variance_run(c->seed, &r);
    static const double chapter[3] = {0.9995, 0.9950, 1.0254};
    if (c->json) {
        kgl_json_field_number(c->out, "pairs", KGL_DEMO_VAR_PAIRS);
        kgl_json_field_ints(c->out, "dk", r.dk, 3);
        kgl_json_field_numbers(c->out, "variance", r.var, 3);
        kgl_json_field_numbers(c->out, "ratio", r.ratio, 3);
        kgl_json_field_numbers(c->out, "ratio_bounds", (const double[]){KGL_DEMO_VAR_LO, KGL_DEMO_VAR_HI}, 2);
        kgl_json_key(c->out, "saturation");
        kgl_json_begin_object(c->out);
        kgl_json_field_int(c->out, "dk", KGL_DEMO_SAT_DK);
        kgl_json_field_int(c->out, "keys", KGL_DEMO_SAT_KEYS);
        kgl_json_field_int(c->out, "draws", KGL_DEMO_SAT_DRAWS);
        kgl_json_field_number(c->out, "unscaled", r.sat_unscaled);
        kgl_json_field_number(c->out, "scaled", r.sat_scaled);
        kgl_json_end_object(c->out);
        return r.pass;
    }
    printf("    %d,%03d pairs q, k ~ N(0, I) per dk (the chapter drew 10,000, for which the band\n"
           "    [%.2f, %.2f] is only 1.6 to 2.1 standard errors wide):\n\n",
           KGL_DEMO_VAR_PAIRS / 1000, KGL_DEMO_VAR_PAIRS % 1000, KGL_DEMO_VAR_LO, KGL_DEMO_VAR_HI);
    printf("      %5s", "dk");
    rcell("Var(q·k)", 12);
    printf("  %7s  %9s\n", "Var/dk", "(chapter)");
    for (int k = 0; k < 3; k++)
        printf("      %5d  %10.3f  %7.4f  %9.4f\n", r.dk[k], r.var[k], r.ratio[k], chapter[k]);
    printf("\n    saturation at dk = %d: one query, %d random keys; the largest softmax weight,\n"
           "    mean over %d,%03d draws (the chapter's single draw in brackets):\n"
           "      unscaled      %.4f  (0.9903)\n"
           "      scaled 1/√dk  %.4f  (0.2282)\n",
           KGL_DEMO_SAT_DK, KGL_DEMO_SAT_KEYS, KGL_DEMO_SAT_DRAWS / 1000, KGL_DEMO_SAT_DRAWS % 1000, r.sat_unscaled,
           r.sat_scaled);
    printf("    check: Var/dk from %.4f to %.4f, in [%.2f, %.2f]; unscaled %.3f > %.1f; scaled %.3f < %.1f  %s\n",
           r.ratio_lo, r.ratio_hi, KGL_DEMO_VAR_LO, KGL_DEMO_VAR_HI, r.sat_unscaled, KGL_DEMO_SAT_UNSCALED_MIN, r.sat_scaled,
           KGL_DEMO_SAT_SCALED_MAX, verdict(r.pass));
    return r.pass;
}

/* ---- 3. jacobian ----------------------------------------------------------------------- */

static bool sec_jacobian(const demo_ctx *c)
{
    enum { N = KGL_DEMO_JAC_N };
    kgl_demo_jacobian r;
    kgl_demo_jacobian_run(c->seed, &r);
    if (c->json) {
        kgl_json_field_numbers(c->out, "logits", r.z, N);
        kgl_json_field_numbers(c->out, "p", r.p, N);
        kgl_json_field_matrix(c->out, "J", r.J, N, N);
        kgl_json_field_number(c->out, "h", KGL_DEMO_JAC_H);
        kgl_json_field_number(c->out, "fd_err", r.fd_err);
        kgl_json_field_number(c->out, "fd_bound", KGL_DEMO_JAC_FD_BOUND);
        kgl_json_field_number(c->out, "hand_err", r.hand_err);
        kgl_json_field_number(c->out, "backward_err", r.tape_err);
        kgl_json_field_numbers(c->out, "c", r.c, KGL_DEMO_JAC_SWEEP);
        kgl_json_field_numbers(c->out, "max_prob", r.max_prob, KGL_DEMO_JAC_SWEEP);
        kgl_json_field_numbers(c->out, "one_minus_max_prob", r.rest, KGL_DEMO_JAC_SWEEP);
        kgl_json_field_numbers(c->out, "fro", r.fro, KGL_DEMO_JAC_SWEEP);
        kgl_json_field_numbers(c->out, "max_jii", r.max_jii, KGL_DEMO_JAC_SWEEP);
        return r.pass;
    }
    printf("    %d seeded N(0, 1) logits (those of kgl gradcheck's Jacobian check):\n      z = ", N);
    vec(r.z, N, "%.4f");
    printf("\n      p = softmax(z) = ");
    vec(r.p, N, "%.4f");
    printf("\n    J = diag(p) − p pᵀ:\n");
    for (int i = 0; i < N; i++) {
        printf("      ");
        for (int j = 0; j < N; j++) printf("%9.5f", r.J[i * N + j]);
        putchar('\n');
    }
    printf("    ");
    cell("max |J − J_fd|, central differences with h = 1e-5:", 64);
    printf("%.2e  (the chapter: 3.65e-12)\n    ", r.fd_err);
    cell("max |J − hand formulas J_ii = p_i(1 − p_i), J_ij = −p_i p_j|:", 64);
    printf("%.2e\n    ", r.hand_err);
    cell("max |J e_k − backward through softmax_rows seeded with e_k|:", 64);
    printf("%.2e  (the tape never builds J)\n", r.tape_err);
    printf("\n    freezing: softmax(c·z) as the logits' scale c grows; J → 0 as p → one-hot:\n\n");
    printf("      %3s  %9s", "c", "max_prob");
    rcell("1 − max_prob", 14);
    rcell("‖J‖_F", 12);
    rcell("max J_ii", 12);
    putchar('\n');
    for (int s = 0; s < KGL_DEMO_JAC_SWEEP; s++)
        printf("      %3g  %9.6f  %12.3e  %10.3e  %10.3e\n", r.c[s], r.max_prob[s], r.rest[s], r.fro[s],
               r.max_jii[s]);
    printf("    check: |J − J_fd| %.1e < 1e-9; hand formulas %.0e, backward %.0e < 1e-12;\n"
           "           at every c ‖J‖_F ≤ 4(1 − max_prob), max J_ii ≤ 1/4, max_prob never falls  %s\n",
           r.fd_err, r.hand_err, r.tape_err, verdict(r.pass));
    return r.pass;
}

/* ---- 4. lookup ------------------------------------------------------------------------------ */

static bool sec_lookup(const demo_ctx *c)
{
    kgl_demo_lookup r;
    kgl_demo_lookup_run(c->seed, &r);
    if (c->json) {
        kgl_json_field_matrix(c->out, "values", r.V, 4, 4);
        kgl_json_key(c->out, "queries");
        kgl_json_begin_array(c->out);
        for (int k = 0; k < 2; k++) {
            kgl_json_begin_object(c->out);
            kgl_json_field_number(c->out, "c", r.c[k]);
            kgl_json_field_numbers(c->out, "weights", r.weight[k], 4);
            kgl_json_field_numbers(c->out, "output", r.out[k], 4);
            kgl_json_field_number(c->out, "p_slot2", r.p2[k]);
            kgl_json_field_number(c->out, "p_slot2_exact", r.p2_exact[k]);
            kgl_json_field_number(c->out, "cos", r.cos[k]);
            kgl_json_end_object(c->out);
        }
        kgl_json_end_array(c->out);
        return r.pass;
    }
    printf("    keys K = I₄ (slot j holds e_j), values V = 4 seeded N(0, 1) rows, query q = c·k₂;\n"
           "    scores q·K without 1/√dk: slot 2 scores c, the others 0, so p(slot 2) = e^c / (e^c + 3)\n\n");
    printf("      %2s  %-30s  %9s  %12s", "c", "weights of slots 1..4", "p(slot 2)", "e^c/(e^c+3)");
    rcell("cos(out, v₂)", 14);
    putchar('\n');
    for (int k = 0; k < 2; k++) {
        printf("      %2g  ", r.c[k]);
        char buf[64];
        snprintf(buf, sizeof buf, "%.4f  %.4f  %.4f  %.4f", r.weight[k][0], r.weight[k][1], r.weight[k][2],
                 r.weight[k][3]);
        cell(buf, 30);
        printf("  %9.6f  %12.6f  %12.7f\n", r.p2[k], r.p2_exact[k], r.cos[k]);
    }
    printf("    v₂ = ");
    vec(r.V + 4, 4, "%.4f");
    printf(", output at c = 8: ");
    vec(r.out[1], 4, "%.4f");
    printf("\n    check: |p(slot 2) − e^c/(e^c+3)| = %.0e, %.0e < 1e-12; cos at c = 8 = 1 − %.1e > %.2f  %s\n",
           r.p2_err[0], r.p2_err[1], fmax(0.0, 1 - r.cos[1]), KGL_DEMO_LOOKUP_COS_MIN,
           verdict(r.pass));
    return r.pass;
}

/* ---- 5. multihead ----------------------------------------------------------------------------- */

static bool sec_multihead(const demo_ctx *c)
{
    const kgl_demo_world *w = c->world;
    kgl_demo_multihead r;
    kgl_demo_multihead_run(w, c->query, c->seed, &r);
    static const char *const names[6] = {"X", "Q", "Q_h", "O_h", "concat", "output"};
    if (c->json) {
        kgl_json_key(c->out, "shapes");
        kgl_json_begin_object(c->out);
        for (int k = 0; k < 6; k++) kgl_json_field_ints(c->out, names[k], r.shape[k], 2);
        kgl_json_end_object(c->out);
        kgl_json_field_string(c->out, "query", w->entity[r.query]);
        kgl_json_key(c->out, "top");
        kgl_json_begin_array(c->out);
        for (int h = 0; h < KGL_DEMO_HEADS; h++) {
            kgl_json_begin_object(c->out);
            kgl_json_field_int(c->out, "head", h + 1);
            kgl_json_field_string(c->out, "entity", w->entity[r.top[h]]);
            kgl_json_field_number(c->out, "weight", r.top_weight[h]);
            kgl_json_end_object(c->out);
        }
        kgl_json_end_array(c->out);
        kgl_json_field_number(c->out, "max_row_sum_err", r.max_row_sum_err);
        kgl_json_field_number(c->out, "split_err", r.split_err);
        kgl_json_field_bool(c->out, "shapes_ok", r.shapes_ok);
        return r.pass;
    }
    printf("    %d heads of dk = %d on the academic X; Wq, Wk, Wv, Wo (8 x 8) ~ N(0, 1/8);\n"
           "    head h takes columns %d(h−1)..%dh−1 of Q, K, V (slice_cols), then concat_cols and Wo:\n\n",
           KGL_DEMO_HEADS, KGL_DEMO_DK, KGL_DEMO_DK, KGL_DEMO_DK);
    static const char *const steps[6] = {"X", "→ Q, K, V = X W", "→ per head Q_h, K_h, V_h",
                                         "→ O₁, O₂ = softmax(Q_h K_hᵀ/√4) V_h", "→ concat(O₁, O₂)", "→ concat·Wo"};
    for (int k = 0; k < 6; k++) {
        printf("      ");
        cell(steps[k], 38);
        printf("(%d, %d)\n", r.shape[k][0], r.shape[k][1]);
    }
    putchar('\n');
    printf("    %s's top-1 key:", w->entity[r.query]);
    for (int h = 0; h < KGL_DEMO_HEADS; h++)
        printf("%s head %d %s (%.4f)", h ? "," : "", h + 1, w->entity[r.top[h]], r.top_weight[h]);
    printf("\n    check: %s; rows sum to 1 (%.0e); concat·Wo = Σ_h O_h Wo[rows of h] (%.0e);\n"
           "           both < 1e-12  %s\n",
           r.shapes_ok ? "shapes as traced" : "shapes NOT as traced", r.max_row_sum_err, r.split_err,
           verdict(r.pass));
    return r.pass;
}

/* ---- 6. maxweight ------------------------------------------------------------------------------- */

static bool sec_maxweight(const demo_ctx *c)
{
    kgl_demo_maxweight r;
    kgl_demo_maxweight_run(c->seed, &r);
    if (c->json) {
        kgl_json_field_int(c->out, "keys", KGL_DEMO_MW_KEYS);
        kgl_json_field_int(c->out, "draws", KGL_DEMO_MW_DRAWS);
        kgl_json_field_ints(c->out, "d", r.d, KGL_DEMO_MW_DIMS);
        kgl_json_field_numbers(c->out, "unscaled", r.unscaled, KGL_DEMO_MW_DIMS);
        kgl_json_field_numbers(c->out, "scaled", r.scaled, KGL_DEMO_MW_DIMS);
        kgl_json_field_number(c->out, "uniform", 1.0 / KGL_DEMO_MW_KEYS);
        return r.pass;
    }
    printf("    one query, %d keys ~ N(0, I_d); the largest softmax weight, mean over %d draws\n"
           "    (uniform would be %.3f):\n\n",
           KGL_DEMO_MW_KEYS, KGL_DEMO_MW_DRAWS, 1.0 / KGL_DEMO_MW_KEYS);
    printf("      %4s  %8s  %13s\n", "d", "unscaled", "scaled 1/√d");
    for (int k = 0; k < KGL_DEMO_MW_DIMS; k++) printf("      %4d  %8.4f  %13.4f\n", r.d[k], r.unscaled[k], r.scaled[k]);
    printf("    check: unscaled at d = %d: %.3f > %.1f; scaled at most %.3f < %.1f at every d  %s\n",
           r.d[KGL_DEMO_MW_DIMS - 1], r.unscaled[KGL_DEMO_MW_DIMS - 1], KGL_DEMO_MW_UNSCALED_MIN, r.scaled_top,
           KGL_DEMO_MW_SCALED_MAX, verdict(r.pass));
    return r.pass;
}

/* ---- 7. mask --------------------------------------------------------------------------------------- */

static void mask_table(const kgl_demo_mask *r, int m, const char *title)
{
    enum { T = KGL_DEMO_T };
    const double *A = m ? r->causal : r->bi;
    printf("    %s\n      ", title);
    cell("query \\ key", 12);
    for (int j = 0; j < T; j++) rcell(r->token[j], (int)strlen(r->token[j]) > 6 ? (int)strlen(r->token[j]) + 2 : 8);
    rcell("max", 10);
    rcell("no 1/√4", 10);
    putchar('\n');
    for (int i = 0; i < T; i++) {
        printf("      ");
        cell(r->token[i], 12);
        for (int j = 0; j < T; j++) {
            int width = (int)strlen(r->token[j]) > 6 ? (int)strlen(r->token[j]) + 2 : 8;
            printf("%*.3f", width, A[i * T + j]);
        }
        printf("  %8.3f  %8.3f\n", r->max_w[m][i], r->max_w_unscaled[m][i]);
    }
}

static bool sec_mask(const demo_ctx *c)
{
    enum { T = KGL_DEMO_T };
    kgl_demo_mask r;
    kgl_demo_mask_run(&r);
    if (c->json) {
        kgl_json_field_strings(c->out, "tokens", r.token, T);
        kgl_json_field_matrix(c->out, "bidirectional", r.bi, T, T);
        kgl_json_field_matrix(c->out, "causal", r.causal, T, T);
        kgl_json_field_numbers(c->out, "max_weight_bidirectional", r.max_w[0], T);
        kgl_json_field_numbers(c->out, "max_weight_bidirectional_unscaled", r.max_w_unscaled[0], T);
        kgl_json_field_numbers(c->out, "max_weight_causal", r.max_w[1], T);
        kgl_json_field_numbers(c->out, "max_weight_causal_unscaled", r.max_w_unscaled[1], T);
        kgl_json_field_number(c->out, "above_diagonal", r.above_diag);
        kgl_json_field_number(c->out, "max_row_sum_err", r.max_row_sum_err);
        kgl_json_field_int(c->out, "sharper_rows", r.sharper_rows);
        kgl_json_field_bool(c->out, "never_flatter", r.never_flatter);
        kgl_json_field_bool(c->out, "roles_ok", r.roles_ok);
        return r.pass;
    }
    printf("    tokens and their one feature of (person, thing, time, action):\n      ");
    for (int i = 0; i < T; i++) printf("%s%s %s", i ? ", " : "", r.token[i], r.feature[r.feature_of[i]]);
    printf("\n    W_K = W_V = I; W_Q by hand: the action looks for person and thing (4 each),\n"
           "    person, thing and time look for the action (4). Weights after 1/√4; the last two\n"
           "    columns are each row's largest weight with 1/√4 and without it:\n\n");
    mask_table(&r, 0, "bidirectional");
    putchar('\n');
    mask_table(&r, 1, "causal (a key after the query is masked)");
    printf("    check: above the diagonal the causal weights are exactly 0 (max %g); rows sum to 1 (%.0e < 1e-12);\n"
           "           without 1/√4 no row is flatter and %d of 10 are sharper; %s  %s\n",
           r.above_diag, r.max_row_sum_err, r.sharper_rows,
           r.roles_ok ? "the others' top key is 'gave',\n           whose top keys are the persons and the thing"
                      : "the roles are NOT\n           as W_Q sets them",
           verdict(r.pass));
    return r.pass;
}

/* ---- 8. permutation -------------------------------------------------------------------------------- */

static bool sec_permutation(const demo_ctx *c)
{
    const kgl_demo_world *w = c->world;
    kgl_demo_permutation r;
    kgl_demo_permutation_run(w, c->seed, &r);
    if (c->json) {
        kgl_json_field_ints(c->out, "perm", r.perm, r.n);
        kgl_json_field_number(c->out, "unmasked_err", r.free_err);
        kgl_json_field_number(c->out, "causal_err", r.causal_err);
        kgl_json_field_int(c->out, "causal_rows_differ", r.causal_rows_differ);
        return r.pass;
    }
    printf("    the attention of section 1 (same X, Wq, Wk, Wv) on the rows of X in a seeded order P:\n      PX = ");
    for (int i = 0; i < r.n; i++) printf("%s%s", i ? " " : "", w->entity[r.perm[i]]);
    printf("\n    max |attn(PX) − P attn(X)|\n");
    printf("      no mask      %.2e   equivariant: the same outputs, shuffled\n", r.free_err);
    if (r.n == 1) {
        printf("      causal mask  %.2e   one row: there is no other order\n", r.causal_err);
        printf("    check: no mask %.0e < 1e-12; causal not testable with one row  %s\n", r.free_err,
               verdict(r.pass));
        return r.pass;
    }
    printf("      causal mask  %.2e   %d of %d rows differ: position now matters\n", r.causal_err,
           r.causal_rows_differ, r.n);
    printf("    check: no mask %.0e < 1e-12; causal %.2g > 1e-9  %s\n", r.free_err, r.causal_err, verdict(r.pass));
    return r.pass;
}

/* ---- 9. memo --------------------------------------------------------------------------------------- */

static bool sec_memo(const demo_ctx *c)
{
    const kgl_memo *m = c->memo;
    kgl_demo_memo r;
    kgl_demo_memo_run(m, &r);
    if (c->json) {
        kgl_json_key(c->out, "targets");
        kgl_json_begin_array(c->out);
        for (int gi = 0; gi < m->n_groups; gi++) {
            const kgl_memo_group *g = &m->g[gi];
            const kgl_demo_memo_result *o = &r.g[gi];
            kgl_json_begin_object(c->out);
            kgl_json_field_string(c->out, "document", g->document);
            kgl_json_field_string(c->out, "target", g->target);
            kgl_json_field_strings(c->out, "candidates", (const char *const *)g->token, g->n);
            kgl_json_field_numbers(c->out, "scores", g->score, g->n);
            kgl_json_field_numbers(c->out, "weights", o->weight, g->n);
            kgl_json_field_numbers(c->out, "baseline", o->baseline, KGL_MEMO_DIM);
            kgl_json_field_numbers(c->out, "representation", o->repr, KGL_MEMO_DIM);
            kgl_json_field_numbers(c->out, "shift", o->shift, KGL_MEMO_DIM);
            kgl_json_field_string(c->out, "top", g->token[o->top]);
            kgl_json_field_number(c->out, "missing_step_weight", o->step_weight);
            kgl_json_end_object(c->out);
        }
        kgl_json_end_array(c->out);
        kgl_json_field_number(c->out, "max_row_sum_err", r.max_row_sum_err);
        kgl_json_field_int(c->out, "article_values", r.article_values);
        kgl_json_field_int(c->out, "article_mismatches", r.article_mismatches);
        return r.pass;
    }
    printf("    from %s; vectors are (pack, cap, action) evidence\n", c->memo_name);
    int tw = 9, rw = 4; /* one width for every table */
    for (int gi = 0; gi < m->n_groups; gi++)
        for (int j = 0; j < m->g[gi].n; j++) {
            if (kgl_utf8_columns(m->g[gi].token[j]) > tw) tw = kgl_utf8_columns(m->g[gi].token[j]);
            if (kgl_utf8_columns(m->g[gi].role[j]) > rw) rw = kgl_utf8_columns(m->g[gi].role[j]);
        }
    for (int gi = 0; gi < m->n_groups; gi++) {
        const kgl_memo_group *g = &m->g[gi];
        const kgl_demo_memo_result *o = &r.g[gi];
        printf("\n    %s, target %s:\n      ", g->document, g->target);
        cell("candidate", tw + 2);
        cell("role", rw);
        printf("  %5s  %5s  %6s  %5s  %6s\n", "pack", "cap", "action", "score", "weight");
        for (int j = 0; j < g->n; j++) {
            printf("      ");
            cell(g->token[j], tw + 2);
            cell(g->role[j], rw);
            printf("  %5.2f  %5.2f  %6.2f  %5.2f  %6.3f\n", g->vec[j][0], g->vec[j][1], g->vec[j][2], g->score[j],
                   o->weight[j]);
        }
        printf("      uniform baseline ");
        vec(o->baseline, KGL_MEMO_DIM, "%.3f");
        printf(" → new representation ");
        vec(o->repr, KGL_MEMO_DIM, "%.3f");
        printf(",\n      shift ");
        vec(o->shift, KGL_MEMO_DIM, "%+.3f");
        printf("; top token %s; weight on the missing step {", g->token[o->top]);
        bool first = true;
        for (int j = 0; j < g->n; j++)
            if (o->in_step[j]) {
                printf("%s%s", first ? "" : ", ", g->token[j]);
                first = false;
            }
        printf("} %.3f\n", o->step_weight);
    }
    printf("    check: weights sum to 1 (%.0e < 1e-12); %d of %d values as in the article to 3 decimals", r.max_row_sum_err,
           r.article_values - r.article_mismatches, r.article_values);
    if (r.article_mismatches) printf(" (first: %s)", r.first_mismatch);
    printf("  %s\n", verdict(r.pass));
    return r.pass;
}

/* ---- the command ---------------------------------------------------------------------------------- */

typedef struct section {
    const char *name, *title;
    bool (*run)(const demo_ctx *c);
} section;

static const section sections[] = {
    {"attention", "one query row of the academic world, traced end to end", sec_attention},
    {"variance", "Var(q·k) = dk, and the saturation that 1/√dk prevents", sec_variance},
    {"jacobian", "the softmax Jacobian J = diag(p) − p pᵀ, and how it freezes", sec_jacobian},
    {"lookup", "attention as a soft dictionary lookup", sec_lookup},
    {"multihead", "two heads, concatenated and projected", sec_multihead},
    {"maxweight", "the largest of 8 weights as d grows (the companion article)", sec_maxweight},
    {"mask", "bidirectional and causal attention on a toy sentence", sec_mask},
    {"permutation", "without a mask, attention is permutation-equivariant", sec_permutation},
    {"memo", "the self-attention article's worked example", sec_memo},
};
#define N_SECTIONS (int)(sizeof sections / sizeof sections[0])

int cmd_demo(int argc, char **argv)
{
    cli_args a;
    cli_init(&a, "demo", argc, argv);
    a.help = help;
    demo_ctx c = {.seed = 1};
    const char *which = NULL, *entity = NULL, *types_path = NULL, *memo_path = NULL;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (cli_is(&a, "--seed")) {
            if (!cli_u64(&a, &c.seed)) return EXIT_USAGE;
        } else if (cli_is(&a, "--json")) {
            if (!cli_flag(&a)) return EXIT_USAGE;
            c.json = true;
        } else if (cli_is(&a, "--entity")) {
            if (!(entity = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--types")) {
            if (!(types_path = cli_value(&a))) return EXIT_USAGE;
        } else if (cli_is(&a, "--memo")) {
            if (!(memo_path = cli_value(&a))) return EXIT_USAGE;
        } else if (a.opt[0] != '-' && !which) {
            which = a.opt;
            bool known = strcmp(which, "all") == 0;
            for (int s = 0; s < N_SECTIONS; s++) known = known || strcmp(which, sections[s].name) == 0;
            if (!known)
                return cli_usage_error(&a,
                                       "no section is called '%s' (attention, variance, jacobian, lookup, "
                                       "multihead, maxweight, mask, permutation, memo, all)",
                                       which);
        } else {
            return cli_unknown(&a);
        }
    }
    if (which && strcmp(which, "all") == 0) which = NULL;

    char err[1024];
    kgl_types ty;
    kgl_source tsrc = {types_path ? types_path : "data/academic.types.tsv (built in)",
                       types_path ? NULL : kgl_academic_types_tsv, types_path ? 0 : kgl_academic_types_tsv_len};
    if (!kgl_types_load(&ty, &tsrc, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return EXIT_USAGE;
    }
    kgl_demo_world world;
    if (!kgl_demo_world_init(&world, &ty, tsrc.path, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        kgl_types_free(&ty);
        return EXIT_USAGE;
    }
    c.world = &world;
    c.types_name = tsrc.path;
    /* the default query is bob, or the first entity of a world without him */
    c.query = kgl_demo_world_find(&world, entity ? entity : "bob");
    if (c.query < 0 && !entity) c.query = 0;
    if (c.query < 0) {
        cli_usage_error(&a, "--entity '%s' is not an entity of %s", entity, tsrc.path);
        kgl_types_free(&ty);
        return EXIT_USAGE;
    }
    kgl_memo memo;
    kgl_source msrc = {memo_path ? memo_path : "data/safety_memo.csv (built in)", memo_path ? NULL : kgl_safety_memo_csv,
                       memo_path ? 0 : kgl_safety_memo_csv_len};
    if (!kgl_memo_load(&memo, &msrc, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        kgl_types_free(&ty);
        return EXIT_USAGE;
    }
    c.memo = &memo;
    c.memo_name = msrc.path;

    bool all_pass = true;
    int ran = 0, failed = 0;
    kgl_json_writer out;
    kgl_json_writer_init(&out, stdout);
    c.out = &out;
    if (c.json) {
        kgl_json_begin_object(&out);
        kgl_json_key(&out, "seed");
        kgl_json_put_uint(&out, c.seed);
        kgl_json_key(&out, "sections");
        kgl_json_begin_array(&out);
    } else {
        printf("kgl demo, seed %llu: the chapter on attention as relevance-based reasoning, re-derived by kgl's ops\n",
               (unsigned long long)c.seed);
    }
    for (int s = 0; s < N_SECTIONS; s++) {
        if (which && strcmp(which, sections[s].name) != 0) continue;
        if (c.json) {
            kgl_json_begin_object(&out);
            kgl_json_field_string(&out, "name", sections[s].name);
        } else {
            printf("\n[%d] %s: %s\n", s + 1, sections[s].name, sections[s].title);
        }
        bool pass = sections[s].run(&c);
        if (c.json) {
            kgl_json_field_bool(&out, "pass", pass);
            kgl_json_end_object(&out);
        }
        ran++;
        if (!pass) failed++, all_pass = false;
    }
    if (c.json) {
        kgl_json_end_array(&out);
        kgl_json_field_bool(&out, "pass", all_pass);
        kgl_json_end_object(&out);
        kgl_json_newline(&out);
        kgl_json_writer_finish(&out);
    } else {
        printf("\ndemo: %d section%s, %d passed, %d failed: %s\n", ran, ran == 1 ? "" : "s", ran - failed, failed,
               verdict(all_pass));
    }
    kgl_memo_free(&memo);
    kgl_types_free(&ty);
    return all_pass ? 0 : 1;
}
