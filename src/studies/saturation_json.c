/* saturation_json.c — a saturation study as JSON (`kgl saturation --json`):
 * the grid's settings, then per configuration its axes, the means at the
 * first and the last step, the over-seeds summary (floor, frozen fraction,
 * quantiles of every final metric, each seed's end) and, in a grid with a
 * stack, every layer's summary. Through io's JSON writer. */
#include <math.h>

#include "kgl/studies.h"

/* {"min":…,"q1":…,"median":…,"q3":…,"max":…,"mean":…} */
static void json_spread(kgl_json_writer *w, const kgl_spread *sp)
{
    const double v[6] = {sp->min, sp->q1, sp->median, sp->q3, sp->max, sp->mean};
    static const char *const k[6] = {"min", "q1", "median", "q3", "max", "mean"};
    kgl_json_begin_object(w);
    for (int q = 0; q < 6; q++) kgl_json_field_number(w, k[q], v[q]);
    kgl_json_end_object(w);
}

/* The over-seeds part of a configuration's JSON: floor, frozen fraction,
   "spread" (quantiles of every final metric) and "per_seed" (each run's end). */
static void json_over_seeds(kgl_json_writer *w, const kgl_saturation *s, int c, const kgl_saturation_summary *sm)
{
    kgl_json_field_int(w, "heads", s->configs[c].heads);
    kgl_json_field_number(w, "aux_floor", sm->aux_floor);
    kgl_json_field_number(w, "frozen_multiple", s->frozen_multiple);
    kgl_json_field_int(w, "frozen_seeds", sm->frozen_seeds);
    kgl_json_field_int(w, "finished_seeds", sm->finished_seeds);
    kgl_json_field_number(w, "frozen_fraction", sm->frozen_fraction);
    kgl_json_key(w, "spread");
    kgl_json_begin_object(w);
    for (int k = 0; k < KGL_SAT_N_METRICS; k++) {
        kgl_json_key(w, kgl_saturation_metric_names[k]);
        json_spread(w, &sm->spread[k]);
    }
    kgl_json_end_object(w);
    kgl_json_key(w, "per_seed");
    kgl_json_begin_array(w);
    for (int q = 0; q < s->seeds; q++) {
        int run = c * s->seeds + q;
        kgl_saturation_run_end e;
        kgl_saturation_run_summary(s, run, 0, &e);
        kgl_json_begin_object(w);
        kgl_json_field_int(w, "seed", s->runs[run].seed);
        kgl_json_field_int(w, "steps_done", s->runs[run].steps_done);
        kgl_json_field_number(w, "fit_step", s->runs[run].fit_step >= 0 ? (double)s->runs[run].fit_step : NAN);
        kgl_json_field_bool(w, "frozen", e.frozen);
        kgl_json_field_number(w, "aux_mean", e.aux_mean);
        kgl_json_field_number(w, "aux_sign_changes", e.aux_sign_changes >= 0 ? e.aux_sign_changes : NAN);
        kgl_json_field_number(w, "aux_window_min", e.aux_window_min);
        kgl_json_field_number(w, "aux_window_max", e.aux_window_max);
        kgl_json_key(w, "final");
        kgl_json_begin_object(w);
        for (int k = 0; k < KGL_SAT_N_METRICS; k++) kgl_json_field_number(w, kgl_saturation_metric_names[k], e.final[k]);
        kgl_json_end_object(w);
        kgl_json_end_object(w);
    }
    kgl_json_end_array(w);
}

/* "init" and "final" of one layer's summary: the means at the first and the
   last step. */
static void json_init_final(kgl_json_writer *w, const kgl_saturation_summary *sm)
{
    static const int init_keys[] = {KGL_SAT_MAX_PROB, KGL_SAT_ENTROPY, KGL_SAT_JAC_FRO, KGL_SAT_GRAD_LOGITS,
                                    KGL_SAT_GRAD_WQ};
    static const char *const init_names[] = {"max_prob", "entropy", "jac_fro", "grad_logits", "grad_wq"};
    kgl_json_key(w, "init");
    kgl_json_begin_object(w);
    for (int k = 0; k < 5; k++) kgl_json_field_number(w, init_names[k], sm->init[init_keys[k]]);
    kgl_json_end_object(w);
    static const int final_keys[] = {KGL_SAT_MAX_PROB,  KGL_SAT_ENTROPY, KGL_SAT_JAC_FRO,
                                     KGL_SAT_GRAD_LOGITS, KGL_SAT_GRAD_WQ, KGL_SAT_ATTN_TV,
                                     KGL_SAT_WQ_MOVE,   KGL_SAT_LOSS,    KGL_SAT_AUX_LOSS};
    static const char *const final_names[] = {"max_prob",    "entropy", "jac_fro", "grad_logits", "grad_wq",
                                              "attn_change", "wq_move", "loss",    "aux_loss"};
    kgl_json_key(w, "final"); /* the last step's metrics, with the run's aux mean, fit step and spec */
    kgl_json_begin_object(w);
    for (int k = 0; k < 9; k++) kgl_json_field_number(w, final_names[k], sm->final[final_keys[k]]);
    kgl_json_field_number(w, "aux_loss_mean", sm->aux_mean);
    kgl_json_field_number(w, "fit_step", sm->fit_step);
    kgl_json_field_number(w, "spec", sm->final[KGL_SAT_SPEC_ADVISES]);
    kgl_json_end_object(w);
}

/* A stack's "per_layer": [{"layer", "init", "final", "spread"}, …], every
   layer's summary (layer 0's is also the configuration's own). */
static void json_per_layer(kgl_json_writer *w, const kgl_saturation *s, int c)
{
    kgl_json_key(w, "per_layer");
    kgl_json_begin_array(w);
    for (int l = 0; l < s->configs[c].layers; l++) {
        kgl_saturation_summary sm;
        kgl_saturation_summarise(s, c, l, &sm);
        kgl_json_begin_object(w);
        kgl_json_field_int(w, "layer", l);
        json_init_final(w, &sm);
        kgl_json_key(w, "spread");
        kgl_json_begin_object(w);
        for (int k = 0; k < KGL_SAT_N_METRICS; k++) {
            kgl_json_key(w, kgl_saturation_metric_names[k]);
            json_spread(w, &sm.spread[k]);
        }
        kgl_json_end_object(w);
        kgl_json_end_object(w);
    }
    kgl_json_end_array(w);
}

/* One configuration's summary: the fields of its JSON object up to the
   over-seeds part (with its seed when there is one; its layers in a grid
   with a stack). */
static void json_config(kgl_json_writer *w, const kgl_saturation *s, int config, const kgl_saturation_summary *sm,
                        int seed)
{
    const kgl_saturation_config *c = &s->configs[config];
    kgl_json_field_string(w, "label", c->label);
    kgl_json_field_int(w, "dk", c->dk);
    if (c->scale == KGL_SCALE_SQRT) kgl_json_field_string(w, "scale", "sqrt");
    else if (c->scale == KGL_SCALE_NONE) kgl_json_field_string(w, "scale", "none");
    else kgl_json_field_number(w, "scale", c->scale_value);
    kgl_json_field_number(w, "init_scale", c->init_scale);
    kgl_json_field_string(w, "optimizer", c->optimizer == KGL_OPT_SGD ? "sgd" : "adam");
    kgl_json_field_number(w, "lr", c->lr);
    kgl_json_field_string(w, "supervise", kgl_saturation_supervise_names[c->supervise]);
    kgl_json_field_string(w, "remedy", kgl_saturation_remedy_names[c->remedy]);
    if (s->stacked) kgl_json_field_int(w, "layers", c->layers);
    if (seed > 0) kgl_json_field_int(w, "seed", seed);
    json_init_final(w, sm);
}

void kgl_saturation_write_json(const kgl_saturation *s, FILE *f)
{
    kgl_json_writer w;
    kgl_json_writer_init(&w, f);
    kgl_json_begin_object(&w);
    kgl_json_field_int(&w, "steps", s->steps);
    kgl_json_field_int(&w, "seeds", s->seeds);
    kgl_json_field_number(&w, "frozen_multiple", s->frozen_multiple);
    kgl_json_field_number(&w, "seconds", s->seconds);
    kgl_json_key(&w, "configs");
    kgl_json_begin_array(&w);
    for (int k = 0; k < s->n_configs; k++) {
        kgl_saturation_summary sm;
        kgl_saturation_summarise(s, k, 0, &sm);
        kgl_json_begin_object(&w);
        json_config(&w, s, k, &sm, s->seeds == 1 ? s->runs[k].seed : 0);
        json_over_seeds(&w, s, k, &sm);
        if (s->stacked) json_per_layer(&w, s, k);
        kgl_json_end_object(&w);
    }
    kgl_json_end_array(&w);
    kgl_json_end_object(&w);
    kgl_json_newline(&w);
    kgl_json_writer_finish(&w);
}
