/* results.c — what a ranking and a trained model report, written as JSON
 * for a program to read: the metrics of one ranking (each direction, the
 * optimistic ties, per relation) and where the heads look by relation (the
 * spec matrix). `kgl train --json` and `kgl eval --json` write these; the
 * numbers are the kgl_eval's and the spec's, to the bit (the writer prints
 * doubles with 17 significant digits). */
#include "kgl/model.h"

void kgl_json_metric(kgl_json_writer *w, const kgl_metrics *m)
{
    kgl_json_begin_object(w);
    kgl_json_field_number(w, "mrr", m->mrr);
    kgl_json_field_number(w, "hits1", m->hits1);
    kgl_json_field_number(w, "hits3", m->hits3);
    kgl_json_field_number(w, "hits10", m->hits10);
    kgl_json_field_number(w, "mr", m->mr);
    kgl_json_field_int(w, "n", m->n);
    kgl_json_end_object(w);
}

/* The three directions of one ranking, each under its key. */
static void json_directions(kgl_json_writer *w, const kgl_metrics *tail, const kgl_metrics *head,
                            const kgl_metrics *both)
{
    kgl_json_key(w, "tail");
    kgl_json_metric(w, tail);
    kgl_json_key(w, "head");
    kgl_json_metric(w, head);
    if (!both) return;
    kgl_json_key(w, "both");
    kgl_json_metric(w, both);
}

void kgl_json_eval(kgl_json_writer *w, const kgl_dataset *ds, const bool *use, const kgl_eval *e)
{
    kgl_json_begin_object(w);
    json_directions(w, &e->tail, &e->head, &e->both);
    kgl_json_key(w, "optimistic");
    kgl_json_begin_object(w);
    json_directions(w, &e->tail_optimistic, &e->head_optimistic, &e->both_optimistic);
    kgl_json_end_object(w);
    kgl_json_key(w, "per_relation");
    kgl_json_begin_object(w);
    for (int r = 0; r < ds->n_relations; r++) {
        if (!use[r] || e->rel_tail[r].n == 0) continue;
        kgl_json_key(w, ds->relation_names[r]);
        kgl_json_begin_object(w);
        json_directions(w, &e->rel_tail[r], &e->rel_head[r], NULL);
        kgl_json_end_object(w);
    }
    kgl_json_end_object(w);
    kgl_json_end_object(w);
}

void kgl_json_spec(kgl_json_writer *w, const kgl_dataset *ds, const bool *use, int heads, const double *spec)
{
    int m = ds->n_relations;
    kgl_json_begin_object(w);
    for (int r = 0; r < m; r++) {
        if (!use[r]) continue;
        kgl_json_key(w, ds->relation_names[r]);
        kgl_json_begin_array(w);
        for (int h = 0; h < heads; h++) kgl_json_put_number(w, spec[h * m + r]);
        kgl_json_end_array(w);
    }
    kgl_json_end_object(w);
}

/* "best_step" and "best_valid_mrr" of the selection on valid; null when no
   evaluation ran (Ctrl-C before the first): the model is the last step's. */
static void json_best(kgl_json_writer *w, const kgl_run_member *m)
{
    if (!m->evaluations) {
        kgl_json_field_null(w, "best_step");
        kgl_json_field_null(w, "best_valid_mrr");
        return;
    }
    kgl_json_field_int(w, "best_step", m->best_step);
    kgl_json_field_number(w, "best_valid_mrr", m->best_mrr);
}

void kgl_run_json_fields(kgl_json_writer *w, const kgl_run *run, bool interrupted)
{
    const kgl_run_member *m0 = &run->member[0];
    kgl_json_field_int(w, "steps", m0->steps_run);
    kgl_json_field_number(w, "final_loss", m0->final_loss);
    if (m0->fit_step >= 0) kgl_json_field_int(w, "fit_step", m0->fit_step);
    else kgl_json_field_null(w, "fit_step");
    kgl_json_field_number(w, "seconds", run->seconds);
    kgl_json_field_string(w, "precision", KGL_PRECISION);
    kgl_json_field_bool(w, "interrupted", interrupted);
    if (run->spec.eval_every) {
        json_best(w, m0);
        kgl_json_field_int(w, "evaluations", m0->evaluations);
        kgl_json_field_bool(w, "stopped_early", m0->stopped_early);
    }
    size_t params = 0;
    for (int k = 0; k < run->trained; k++) params += run->member[k].tr.model.params.total;
    kgl_json_key(w, "params");
    kgl_json_put_uint(w, params);
    kgl_json_field_int(w, "ensemble", run->trained);
}

void kgl_run_json_member_fields(kgl_json_writer *w, const kgl_run_member *m)
{
    kgl_json_key(w, "seed");
    kgl_json_put_uint(w, m->seed);
    kgl_json_field_int(w, "steps", m->steps_run);
    kgl_json_field_number(w, "seconds", m->seconds);
    if (m->spec->eval_every) json_best(w, m);
}
