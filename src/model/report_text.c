/* report_text.c — what a ranking and a trained model report, as the text
 * tables kgl train and kgl eval print (their JSON: results.c): the metrics
 * of one split per relation, where the heads look by relation (the spec
 * matrix), and which model of an ensemble a command reads. Each writes to
 * the FILE* it is given, so a C program linking libkgl prints what the
 * commands print. */
#include <math.h>
#include <string.h>

#include "kgl/model.h"

int kgl_relations_width(const kgl_dataset *ds, const bool *use, int most)
{
    int w = 8;
    for (int r = 0; r < ds->n_relations; r++) {
        int len = kgl_table_width(ds->relation_names[r]);
        if (use[r] && len > w) w = len;
    }
    return w > most ? most : w;
}

/* The mean rank's column: wide enough for the largest possible rank (the
   number of entities) with two decimals. */
static int mr_width(const kgl_eval *e)
{
    int w = 4;
    for (long n = e->n_entities; n >= 10; n /= 10) w++;
    return w < 6 ? 6 : w;
}

static void metric_cells(FILE *f, const kgl_metrics *m, int mr_w)
{
    fprintf(f, "  %6.3f  %6.3f  %6.3f  %6.3f  %*.2f", m->mrr, m->hits1, m->hits3, m->hits10, mr_w, m->mr);
}

void kgl_metrics_table_write(FILE *f, const char *split, int n_triples, const kgl_dataset *ds, const bool *use,
                             const kgl_eval *e)
{
    int w = kgl_relations_width(ds, use, 40), mw = mr_width(e);
    fprintf(f, "\n%s: %d triple%s, filtered ranking (ties: mean of optimistic and pessimistic rank)\n", split,
            n_triples, n_triples == 1 ? "" : "s");
    /* each direction's block: four 8-wide cells and the mean rank's */
    fprintf(f, "%-*s %6s  %-*s  %s\n", w, "", "", 30 + mw, "tail prediction (h, r, ?)", "head prediction (?, r, t)");
    fprintf(f, "%-*s %6s", w, "relation", "n");
    for (int dir = 0; dir < 2; dir++) fprintf(f, "  %6s  %6s  %6s  %6s  %*s", "MRR", "H@1", "H@3", "H@10", mw, "MR");
    fprintf(f, "\n");
    for (int r = 0; r < ds->n_relations; r++) {
        if (!use[r] || e->rel_tail[r].n == 0) continue;
        kgl_table_cell(f, ds->relation_names[r], -w);
        fprintf(f, " %6ld", e->rel_tail[r].n);
        metric_cells(f, &e->rel_tail[r], mw);
        metric_cells(f, &e->rel_head[r], mw);
        fprintf(f, "\n");
    }
    fprintf(f, "%-*s %6ld", w, "all", e->tail.n);
    metric_cells(f, &e->tail, mw);
    metric_cells(f, &e->head, mw);
    fprintf(f, "\n%-*s %6ld  both directions: MRR %.3f  H@1 %.3f  H@3 %.3f  H@10 %.3f  MR %.2f\n", w, "", e->both.n,
            e->both.mrr, e->both.hits1, e->both.hits3, e->both.hits10, e->both.mr);
    const kgl_metrics *o = &e->both_optimistic;
    fprintf(f, "%-*s %6s  optimistic ties: MRR %.3f  H@1 %.3f  H@3 %.3f  H@10 %.3f  MR %.2f\n", w, "", "", o->mrr,
            o->hits1, o->hits3, o->hits10, o->mr);
}

static int spec_column_width(const char *relation)
{
    int w = kgl_table_width(relation);
    return w < 6 ? 6 : w;
}

void kgl_spec_table_write(FILE *f, const kgl_dataset *ds, const bool *use, int heads, const double *spec,
                          kgl_context_kind context)
{
    int m = ds->n_relations, used = 0;
    for (int r = 0; r < m; r++) used += use[r];
    if (context == KGL_CONTEXT_NONE) return; /* no attention */
    bool any = false; /* a value is NaN where no segment had an edge of its relation */
    for (int k = 0; k < heads * m && !any; k++) any = use[k % m] && isfinite(spec[k]);
    if (context == KGL_CONTEXT_GRAPH && !any) { /* --neighbours 0, or no chosen relation's edge anywhere */
        fprintf(f, "\nhead by relation spec: no neighbourhood held an edge of these relations (with --neighbours 0 "
                "a question attends over itself and the asked relation only; kgl heads --query shows it)\n");
        return;
    }
    if (context == KGL_CONTEXT_GRAPH)
        fprintf(f, "\nhead by relation spec[h][r]: mean weight head h puts on the r-edges of i's neighbourhood "
                "(kgl heads: beside uniform)\n");
    else
        fprintf(f, "\nhead specialisation spec[h][r]: mean attention mass head h puts on i's r-tails\n");
    if (used > 12 && used > heads) { /* many relations: a row each, the heads across */
        int w = kgl_relations_width(ds, use, 40);
        fprintf(f, "%-*s", w, "relation");
        for (int h = 0; h < heads; h++) fprintf(f, "  head %-2d", h);
        fprintf(f, "\n");
        for (int r = 0; r < m; r++) {
            if (!use[r]) continue;
            kgl_table_cell(f, ds->relation_names[r], -w);
            for (int h = 0; h < heads; h++) fprintf(f, "  %7.3f", spec[h * m + r]);
            fprintf(f, "\n");
        }
        return;
    }
    fprintf(f, "%-6s", "head"); /* a column per relation, as wide as its whole name (at most 12 of them) */
    for (int r = 0; r < m; r++)
        if (use[r]) {
            fputc(' ', f);
            kgl_table_cell(f, ds->relation_names[r], spec_column_width(ds->relation_names[r]));
        }
    fprintf(f, "\n");
    for (int h = 0; h < heads; h++) {
        fprintf(f, "%-6d", h);
        for (int r = 0; r < m; r++)
            if (use[r]) fprintf(f, " %*.3f", spec_column_width(ds->relation_names[r]), spec[h * m + r]);
        fprintf(f, "\n");
    }
}

void kgl_model_choice_write(FILE *f, const kgl_model_choice *c, const char *what, const char *why)
{
    if (c->members <= 1) return;
    if (c->alone)
        fprintf(f, "%s is member %d of the ensemble %s (%d models): %s it alone (--checkpoint %s --member K chooses "
                "any, 0 to %d)\n",
                c->path, c->member, c->ensemble, c->members, what, c->ensemble, c->members - 1);
    else if (strcmp(c->path, c->ensemble) == 0)
        fprintf(f, "%s is an ensemble of %d models: %s member %d alone (--member K chooses another, 0 to %d)\n",
                c->ensemble, c->members, what, c->member, c->members - 1);
    else /* a member F lists, or one of A,B,...: named */
        fprintf(f, "%s is an ensemble of %d models: %s member %d (%s) alone (--member K chooses another, 0 to %d)\n",
                c->ensemble, c->members, what, c->member, c->path, c->members - 1);
    fprintf(f, "%s\n", why);
}

/* ------------------------------------------------ kgl train's report -- */

void kgl_run_fit_write(FILE *f, const kgl_run *run)
{
    const kgl_run_member *m0 = &run->member[0];
    const char *of = run->trained > 1 ? " (member 0)" : "";
    if (m0->fit_step >= 0)
        fprintf(f, "\nfit%s: every training triple ranks first (tail and head) after step %ld\n", of, m0->fit_step);
    else if (m0->track_fit)
        fprintf(f, "\nfit%s: not every training triple ranks first after %ld steps\n", of, m0->steps_run);
}

void kgl_run_selection_write(FILE *f, const kgl_run *run)
{
    const kgl_run_member *m0 = &run->member[0];
    long eval_every = run->spec.eval_every;
    if (run->trained > 1) {
        fprintf(f, "\nensemble of %d models: every metric above ranks by the mean of their probabilities. Alone:\n",
                run->trained);
    } else if (eval_every && !m0->evaluations) { /* interrupted before the first (or --steps 0) */
        fprintf(f, "\nmodel selection: no evaluation ran (--eval-every %ld); the metrics above and the checkpoint are "
                "of the last step, %ld\n", eval_every, m0->steps_run);
    } else if (eval_every) {
        fprintf(f, "\nmodel selection: best valid MRR %.4f at step %ld (%ld evaluations%s); the metrics above and the "
                "checkpoint are of that model\n",
                m0->best_mrr, m0->best_step, m0->evaluations, m0->stopped_early ? ", stopped early: no better model in --patience evaluations" : "");
    }
}

void kgl_run_member_write(FILE *f, const kgl_run *run, int k, const char *const *split, const bool *ranked,
                          const kgl_metrics *alone)
{
    const kgl_run_member *m = &run->member[k];
    fprintf(f, "  member %d  seed %-6llu", k, (unsigned long long)m->seed);
    for (int s = 0; s < 3; s++)
        if (ranked[s]) fprintf(f, "  %s MRR %.4f H@1 %.4f", split[s], alone[s].mrr, alone[s].hits1);
    if (run->spec.eval_every && !m->evaluations) fprintf(f, "  (no evaluation ran)");
    else if (run->spec.eval_every) fprintf(f, "  (best valid at step %ld)", m->best_step);
    fprintf(f, "\n");
}

void kgl_run_totals_write(FILE *f, const kgl_run *run)
{
    const kgl_run_member *m0 = &run->member[0];
    if (run->trained > 1)
        fprintf(f, "\n%d models in %.2f s, member 0: %ld steps, final loss %.6f\n", run->trained, run->seconds,
                m0->steps_run, m0->final_loss);
    else
        fprintf(f, "\n%ld steps in %.2f s, final loss %.6f\n", m0->steps_run, run->seconds, m0->final_loss);
}

void kgl_run_summary_write(FILE *f, const kgl_run *run, const char *took, const char *const *split,
                           const bool *ranked, const kgl_metrics *both)
{
    const kgl_run_member *m0 = &run->member[0];
    const kgl_config *cfg = &m0->tr.model.cfg;
    int members = run->trained;
    char line[1024];
    long least = m0->steps_run, most = m0->steps_run;
    for (int k = 1; k < members; k++) {
        least = run->member[k].steps_run < least ? run->member[k].steps_run : least;
        most = run->member[k].steps_run > most ? run->member[k].steps_run : most;
    }
    char steps[48];
    if (least < most) snprintf(steps, sizeof steps, "%ld-%ld", least, most); /* some stopped early */
    else snprintf(steps, sizeof steps, "%ld", most);
    size_t n;
    if (members > 1)
        n = (size_t)snprintf(line, sizeof line, "kgl train: an ensemble of %d models (d_model %d, %d heads), %s steps "
                             "each, in %s", members, cfg->dim, cfg->heads, steps, took);
    else
        n = (size_t)snprintf(line, sizeof line, "kgl train: a model (d_model %d, %d heads), %ld steps in %s, final loss %.6f",
                             cfg->dim, cfg->heads, m0->steps_run, took, m0->final_loss);
    if (members == 1 && run->spec.eval_every && !m0->evaluations)
        n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0, ", no evaluation ran");
    else if (members == 1 && run->spec.eval_every)
        n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0, ", best valid at step %ld", m0->best_step);
    for (int s = 0; s < 3; s++)
        if (ranked[s])
            n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0, "; %s MRR %.3f H@1 %.3f H@10 %.3f",
                                  split[s], both[s].mrr, both[s].hits1, both[s].hits10);
    fprintf(f, "%s\n", line); /* one write: the line whole on a stream shared with others */
}
