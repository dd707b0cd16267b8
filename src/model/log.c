/* log.c — the training log `kgl train --log F` writes, a CSV with one row
 * at each step the run's row callback names: the step's losses and rate,
 * then every layer's per-head diagnostics (kgl_diag, measured between the
 * step's backward and its update) and where each head looks by relation,
 * then, when the run selects on valid, that step's valid ranking. The
 * program keeps its clock and says when a write failed; the file (a
 * temporary renamed over its path at the end, dropped when a write fails),
 * the columns and the numbers are these. A value that was not measured is an
 * empty field (NaN to pandas). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kgl/model.h"

/* The per-head columns of the log, in this order, each prefixed "h<k>_". */
static const char *const head_columns[] = {"max_prob_mean", "max_prob_min", "entropy", "max_abs_logit",
                                           "jac_fro",       "grad_logits",  "grad_wq", "grad_wk",
                                           "wq_move",       "wk_move",      "attn_tv"};
#define N_HEAD_COLUMNS (int)(sizeof head_columns / sizeof head_columns[0])

void kgl_run_log_header(FILE *log, const kgl_run_member *m, const bool *use_relation)
{
    fprintf(log, "step,loss,main_loss,aux_loss,lr,seconds");
    bool selecting = m->spec->eval_every > 0;
    const kgl_dataset *ds = m->spec->ds;
    const kgl_config *cfg = &m->tr.model.cfg;
    /* layer 0's head columns "h<k>_...", then a stack's deeper layers' the
       same, each prefixed "l<l>_" (l1_h0_entropy, ...) */
    for (int l = 0; l < cfg->layers; l++) {
        char layer[16] = "";
        if (l > 0) snprintf(layer, sizeof layer, "l%d_", l);
        for (int h = 0; h < cfg->heads; h++) {
            for (int k = 0; k < N_HEAD_COLUMNS; k++) fprintf(log, ",%sh%d_%s", layer, h, head_columns[k]);
            for (int r = 0; r < ds->n_relations; r++) {
                if (!use_relation[r]) continue;
                char name[600];
                snprintf(name, sizeof name, "%sh%d_spec_%s", layer, h, ds->relation_names[r]);
                fputc(',', log);
                kgl_csv_field(log, name, ",\"\r\n");
            }
        }
    }
    if (selecting) fputs(",valid_mrr,valid_hits1,valid_hits10", log);
    fputc('\n', log);
}

static void log_number(FILE *f, double v)
{
    fputc(',', f);
    if (!isnan(v)) fprintf(f, "%.17g", v); /* empty: NaN in pandas */
}

void kgl_run_log_row(FILE *log, const kgl_run_member *m, const kgl_diag *dg, const bool *use_relation, long step,
                     double loss, bool evaluated, double seconds)
{
    fprintf(log, "%ld", step);
    log_number(log, loss);
    log_number(log, m->tr.last_main);
    log_number(log, m->tr.last_aux);
    log_number(log, m->tr.optim.lr);
    fprintf(log, ",%.6f", seconds);
    /* a step Ctrl-C stopped at was not measured: its head columns are empty, not the last measurement's */
    bool measured = m->diag_step == step;
    for (int l = 0; l < dg->layers; l++)
        for (int h = 0; h < dg->heads; h++) {
            const kgl_head_diag *hd = kgl_diag_head(dg, l, h);
            double v[N_HEAD_COLUMNS] = {hd->max_prob_mean, hd->max_prob_min, hd->entropy, hd->max_abs_logit,
                                        hd->jac_fro,       hd->grad_logits,  hd->grad_wq, hd->grad_wk,
                                        hd->wq_move,       hd->wk_move,      hd->attn_tv};
            const double *spec = dg->spec + ((size_t)l * dg->heads + h) * dg->m;
            for (int k = 0; k < N_HEAD_COLUMNS; k++) log_number(log, measured ? v[k] : NAN);
            for (int r = 0; r < dg->m; r++)
                if (use_relation[r]) log_number(log, measured ? spec[r] : NAN);
        }
    if (m->spec->eval_every) { /* of the parameters after this step's update */
        const kgl_metrics *b = &m->valid_ev.both;
        log_number(log, evaluated ? b->mrr : NAN);
        log_number(log, evaluated ? b->hits1 : NAN);
        log_number(log, evaluated ? b->hits10 : NAN);
    }
    fputc('\n', log);
}

bool kgl_run_log_open(kgl_run_log *log, const char *path, kgl_run_member *m, const bool *use_relation, char *err,
                      size_t cap)
{
    memset(log, 0, sizeof *log);
    if (!kgl_outfile_open(&log->file, path, err, cap)) return false;
    log->open = true;
    kgl_diag_init(&log->diag, &m->tr);
    m->diag = &log->diag; /* measured at the logged steps */
    kgl_run_log_header(log->file.f, m, use_relation);
    return true;
}

bool kgl_run_log_write(kgl_run_log *log, kgl_run_member *m, const bool *use_relation, long step, double loss,
                       bool evaluated, bool stopping, double seconds, char *err, size_t cap)
{
    if (!log->open) return true;
    FILE *f = log->file.f;
    kgl_run_log_row(f, m, &log->diag, use_relation, step, loss, evaluated, seconds);
    if (stopping) return true; /* the close writes it */
    if (fflush(f) == 0 && !ferror(f)) return true;
    int e = errno;
    snprintf(err, cap, "cannot write the log %s: %s", log->file.path, strerror(e ? e : EIO));
    kgl_outfile_discard(&log->file);
    m->diag = NULL;
    kgl_diag_free(&log->diag);
    log->open = false;
    log->failed = true;
    return false;
}

bool kgl_run_log_close(kgl_run_log *log, kgl_run_member *m, char *err, size_t cap)
{
    err[0] = 0;
    if (!log->open) return !log->failed;
    m->diag = NULL;
    kgl_diag_free(&log->diag);
    log->open = false;
    return kgl_outfile_commit(&log->file, err, cap);
}
