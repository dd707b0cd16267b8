/* demo_json.c — `kgl demo --json`'s sections: each runs its section
 * (src/studies/demo.c) and writes its numbers as the fields of one JSON
 * object, through io's writer. */
#include "kgl/studies.h"

/* ---- 1. attention ----------------------------------------------------------------- */

static bool json_attention(kgl_json_writer *out, const kgl_demo_input *c)
{
    const kgl_demo_world *w = c->world;
    kgl_demo_attention r;
    kgl_demo_attention_run(w, c->query, c->seed, &r);
    const char *q = w->entity[r.query];
    kgl_json_field_string(out, "query", q);
    kgl_json_key(out, "keys");
    kgl_json_begin_array(out);
    for (int j = 0; j < w->n; j++) {
        kgl_json_begin_object(out);
        kgl_json_field_string(out, "entity", w->entity[j]);
        kgl_json_field_string(out, "type", w->type_name[w->type_of[j]]);
        kgl_json_field_number(out, "score", r.raw[j]);
        kgl_json_field_number(out, "scaled", r.scaled[j]);
        kgl_json_field_number(out, "weight", r.weight[j]);
        kgl_json_end_object(out);
    }
    kgl_json_end_array(out);
    kgl_json_key(out, "top");
    kgl_json_begin_array(out);
    for (int k = 0; k < r.n_top; k++) kgl_json_put_string(out, w->entity[r.top[k]]);
    kgl_json_end_array(out);
    kgl_json_field_numbers(out, "output", r.out, KGL_DEMO_DK);
    kgl_json_field_number(out, "max_row_sum_err", r.max_row_sum_err);
    kgl_json_field_number(out, "bound", KGL_DEMO_EXACT);
    return r.pass;
}

/* ---- 2. variance ------------------------------------------------------------------- */

static bool json_variance(kgl_json_writer *out, const kgl_demo_input *c)
{
    kgl_demo_variance r;
    kgl_demo_variance_run(c->seed, &r);
    kgl_json_field_number(out, "pairs", KGL_DEMO_VAR_PAIRS);
    kgl_json_field_ints(out, "dk", r.dk, 3);
    kgl_json_field_numbers(out, "variance", r.var, 3);
    kgl_json_field_numbers(out, "ratio", r.ratio, 3);
    kgl_json_field_numbers(out, "ratio_bounds", (const double[]){KGL_DEMO_VAR_LO, KGL_DEMO_VAR_HI}, 2);
    kgl_json_key(out, "saturation");
    kgl_json_begin_object(out);
    kgl_json_field_int(out, "dk", KGL_DEMO_SAT_DK);
    kgl_json_field_int(out, "keys", KGL_DEMO_SAT_KEYS);
    kgl_json_field_int(out, "draws", KGL_DEMO_SAT_DRAWS);
    kgl_json_field_number(out, "unscaled", r.sat_unscaled);
    kgl_json_field_number(out, "scaled", r.sat_scaled);
    kgl_json_end_object(out);
    return r.pass;
}

/* ---- 3. jacobian ----------------------------------------------------------------------- */

static bool json_jacobian(kgl_json_writer *out, const kgl_demo_input *c)
{
    enum { N = KGL_DEMO_JAC_N };
    kgl_demo_jacobian r;
    kgl_demo_jacobian_run(c->seed, &r);
    kgl_json_field_numbers(out, "logits", r.z, N);
    kgl_json_field_numbers(out, "p", r.p, N);
    kgl_json_field_matrix(out, "J", r.J, N, N);
    kgl_json_field_number(out, "h", KGL_DEMO_JAC_H);
    kgl_json_field_number(out, "fd_err", r.fd_err);
    kgl_json_field_number(out, "fd_bound", KGL_DEMO_JAC_FD_BOUND);
    kgl_json_field_number(out, "hand_err", r.hand_err);
    kgl_json_field_number(out, "backward_err", r.tape_err);
    kgl_json_field_numbers(out, "c", r.c, KGL_DEMO_JAC_SWEEP);
    kgl_json_field_numbers(out, "max_prob", r.max_prob, KGL_DEMO_JAC_SWEEP);
    kgl_json_field_numbers(out, "one_minus_max_prob", r.rest, KGL_DEMO_JAC_SWEEP);
    kgl_json_field_numbers(out, "fro", r.fro, KGL_DEMO_JAC_SWEEP);
    kgl_json_field_numbers(out, "max_jii", r.max_jii, KGL_DEMO_JAC_SWEEP);
    return r.pass;
}

/* ---- 4. lookup ------------------------------------------------------------------------------ */

static bool json_lookup(kgl_json_writer *out, const kgl_demo_input *c)
{
    kgl_demo_lookup r;
    kgl_demo_lookup_run(c->seed, &r);
    kgl_json_field_matrix(out, "values", r.V, 4, 4);
    kgl_json_key(out, "queries");
    kgl_json_begin_array(out);
    for (int k = 0; k < 2; k++) {
        kgl_json_begin_object(out);
        kgl_json_field_number(out, "c", r.c[k]);
        kgl_json_field_numbers(out, "weights", r.weight[k], 4);
        kgl_json_field_numbers(out, "output", r.out[k], 4);
        kgl_json_field_number(out, "p_slot2", r.p2[k]);
        kgl_json_field_number(out, "p_slot2_exact", r.p2_exact[k]);
        kgl_json_field_number(out, "cos", r.cos[k]);
        kgl_json_end_object(out);
    }
    kgl_json_end_array(out);
    return r.pass;
}

/* ---- 5. multihead ----------------------------------------------------------------------------- */

static bool json_multihead(kgl_json_writer *out, const kgl_demo_input *c)
{
    const kgl_demo_world *w = c->world;
    kgl_demo_multihead r;
    kgl_demo_multihead_run(w, c->query, c->seed, &r);
    static const char *const names[6] = {"X", "Q", "Q_h", "O_h", "concat", "output"};
    kgl_json_key(out, "shapes");
    kgl_json_begin_object(out);
    for (int k = 0; k < 6; k++) kgl_json_field_ints(out, names[k], r.shape[k], 2);
    kgl_json_end_object(out);
    kgl_json_field_string(out, "query", w->entity[r.query]);
    kgl_json_key(out, "top");
    kgl_json_begin_array(out);
    for (int h = 0; h < KGL_DEMO_HEADS; h++) {
        kgl_json_begin_object(out);
        kgl_json_field_int(out, "head", h + 1);
        kgl_json_field_string(out, "entity", w->entity[r.top[h]]);
        kgl_json_field_number(out, "weight", r.top_weight[h]);
        kgl_json_end_object(out);
    }
    kgl_json_end_array(out);
    kgl_json_field_number(out, "max_row_sum_err", r.max_row_sum_err);
    kgl_json_field_number(out, "split_err", r.split_err);
    kgl_json_field_bool(out, "shapes_ok", r.shapes_ok);
    return r.pass;
}

/* ---- 6. maxweight ------------------------------------------------------------------------------- */

static bool json_maxweight(kgl_json_writer *out, const kgl_demo_input *c)
{
    kgl_demo_maxweight r;
    kgl_demo_maxweight_run(c->seed, &r);
    kgl_json_field_int(out, "keys", KGL_DEMO_MW_KEYS);
    kgl_json_field_int(out, "draws", KGL_DEMO_MW_DRAWS);
    kgl_json_field_ints(out, "d", r.d, KGL_DEMO_MW_DIMS);
    kgl_json_field_numbers(out, "unscaled", r.unscaled, KGL_DEMO_MW_DIMS);
    kgl_json_field_numbers(out, "scaled", r.scaled, KGL_DEMO_MW_DIMS);
    kgl_json_field_number(out, "uniform", 1.0 / KGL_DEMO_MW_KEYS);
    return r.pass;
}

/* ---- 7. mask --------------------------------------------------------------------------------------- */

static bool json_mask(kgl_json_writer *out, const kgl_demo_input *c)
{
    (void)c; /* the toy sentence is fixed: no seed, no world */
    enum { T = KGL_DEMO_T };
    kgl_demo_mask r;
    kgl_demo_mask_run(&r);
    kgl_json_field_strings(out, "tokens", r.token, T);
    kgl_json_field_matrix(out, "bidirectional", r.bi, T, T);
    kgl_json_field_matrix(out, "causal", r.causal, T, T);
    kgl_json_field_numbers(out, "max_weight_bidirectional", r.max_w[0], T);
    kgl_json_field_numbers(out, "max_weight_bidirectional_unscaled", r.max_w_unscaled[0], T);
    kgl_json_field_numbers(out, "max_weight_causal", r.max_w[1], T);
    kgl_json_field_numbers(out, "max_weight_causal_unscaled", r.max_w_unscaled[1], T);
    kgl_json_field_number(out, "above_diagonal", r.above_diag);
    kgl_json_field_number(out, "max_row_sum_err", r.max_row_sum_err);
    kgl_json_field_int(out, "sharper_rows", r.sharper_rows);
    kgl_json_field_bool(out, "never_flatter", r.never_flatter);
    kgl_json_field_bool(out, "roles_ok", r.roles_ok);
    return r.pass;
}

/* ---- 8. permutation -------------------------------------------------------------------------------- */

static bool json_permutation(kgl_json_writer *out, const kgl_demo_input *c)
{
    const kgl_demo_world *w = c->world;
    kgl_demo_permutation r;
    kgl_demo_permutation_run(w, c->seed, &r);
    kgl_json_field_ints(out, "perm", r.perm, r.n);
    kgl_json_field_number(out, "unmasked_err", r.free_err);
    kgl_json_field_number(out, "causal_err", r.causal_err);
    kgl_json_field_int(out, "causal_rows_differ", r.causal_rows_differ);
    return r.pass;
}

/* ---- 9. memo --------------------------------------------------------------------------------------- */

static bool json_memo(kgl_json_writer *out, const kgl_demo_input *c)
{
    const kgl_memo *m = c->memo;
    kgl_demo_memo r;
    kgl_demo_memo_run(m, &r);
    kgl_json_key(out, "targets");
    kgl_json_begin_array(out);
    for (int gi = 0; gi < m->n_groups; gi++) {
        const kgl_memo_group *g = &m->g[gi];
        const kgl_demo_memo_result *o = &r.g[gi];
        kgl_json_begin_object(out);
        kgl_json_field_string(out, "document", g->document);
        kgl_json_field_string(out, "target", g->target);
        kgl_json_field_strings(out, "candidates", (const char *const *)g->token, g->n);
        kgl_json_field_numbers(out, "scores", g->score, g->n);
        kgl_json_field_numbers(out, "weights", o->weight, g->n);
        kgl_json_field_numbers(out, "baseline", o->baseline, KGL_MEMO_DIM);
        kgl_json_field_numbers(out, "representation", o->repr, KGL_MEMO_DIM);
        kgl_json_field_numbers(out, "shift", o->shift, KGL_MEMO_DIM);
        kgl_json_field_string(out, "top", g->token[o->top]);
        kgl_json_field_number(out, "missing_step_weight", o->step_weight);
        kgl_json_end_object(out);
    }
    kgl_json_end_array(out);
    kgl_json_field_number(out, "max_row_sum_err", r.max_row_sum_err);
    kgl_json_field_int(out, "article_values", r.article_values);
    kgl_json_field_int(out, "article_mismatches", r.article_mismatches);
    return r.pass;
}


/* ---- a section as one object --------------------------------------------------------------------- */

bool kgl_demo_section_json(kgl_json_writer *out, int section, const kgl_demo_input *in)
{
    static bool (*const write[KGL_DEMO_SECTIONS])(kgl_json_writer *out, const kgl_demo_input *c) = {
        json_attention, json_variance, json_jacobian,    json_lookup, json_multihead,
        json_maxweight, json_mask,     json_permutation, json_memo,
    };
    kgl_json_begin_object(out);
    kgl_json_field_string(out, "name", kgl_demo_sections[section].name);
    bool pass = write[section](out, in);
    kgl_json_field_bool(out, "pass", pass);
    kgl_json_end_object(out);
    return pass;
}
