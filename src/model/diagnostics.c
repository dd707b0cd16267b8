/* diagnostics.c — per-head measurements of attention during training: how
 * saturated it is, how much gradient reaches it, how far it moved, and what
 * it looks at. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/model.h"
#include "engine/internal.h"

void kgl_diag_init(kgl_diag *dg, kgl_trainer *tr)
{
    tr->model.measure_attention = true; /* the fused attention's max |S_h| and ‖∂L/∂S_h‖ */
    memset(dg, 0, sizeof *dg);
    const kgl_config *c = &tr->model.cfg;
    dg->heads = c->heads;
    dg->n = c->n_entities;
    dg->d = c->dim;
    dg->m = c->n_relations;
    dg->layers = c->layers;
    int L = dg->layers;
    size_t nn = (size_t)dg->n * dg->n, dd = (size_t)dg->d * dg->d;
    dg->spec = kgl_xmalloc((size_t)L * dg->heads * dg->m * sizeof(double));
    dg->context = c->context;
    if (c->context == KGL_CONTEXT_NONE) return; /* no attention to measure */
    if (c->context == KGL_CONTEXT_FULL) { /* A₀, n × n a head and layer: the reference of attn_tv */
        dg->attn0 = kgl_xmalloc((size_t)L * dg->heads * nn * sizeof(kgl_real));
        kgl_forward f;
        kgl_trainer_context(tr, &f);
        for (int l = 0; l < L; l++)
            for (int h = 0; h < dg->heads; h++)
                memcpy(dg->attn0 + ((size_t)l * dg->heads + h) * nn, f.layer_attn[l][h]->data, nn * sizeof(kgl_real));
    }
    dg->wq0 = kgl_xmalloc((size_t)L * dd * sizeof(kgl_real));
    dg->wk0 = kgl_xmalloc((size_t)L * dd * sizeof(kgl_real));
    for (int l = 0; l < L; l++) {
        memcpy(dg->wq0 + l * dd, tr->model.layer[l].wq->data, dd * sizeof(kgl_real));
        memcpy(dg->wk0 + l * dd, tr->model.layer[l].wk->data, dd * sizeof(kgl_real));
    }
}

void kgl_diag_free(kgl_diag *dg)
{
    free(dg->attn0);
    free(dg->wq0);
    free(dg->wk0);
    free(dg->spec);
    memset(dg, 0, sizeof *dg);
}

/* Head h of layer l's measurements, to be written. */
static kgl_head_diag *head_diag(kgl_diag *dg, int l, int h) { return l == 0 ? &dg->head[h] : &dg->deeper[l - 1][h]; }

static double frobenius(const kgl_real *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

/* ‖X[:, c0:c0+w]‖_F of a d x d matrix, and of its difference from X0. */
static double block_norm(const kgl_real *x, int d, int c0, int w)
{
    double s = 0;
    for (int i = 0; i < d; i++)
        for (int j = c0; j < c0 + w; j++) s += x[i * d + j] * x[i * d + j];
    return sqrt(s);
}

static double block_move(const kgl_real *x, const kgl_real *x0, int d, int c0, int w)
{
    double s = 0;
    for (int i = 0; i < d; i++)
        for (int j = c0; j < c0 + w; j++) s += (x[i * d + j] - x0[i * d + j]) * (x[i * d + j] - x0[i * d + j]);
    double base = block_norm(x0, d, c0, w);
    return base > 0 ? sqrt(s) / base : NAN;
}

/* One layer's measurements, a head a task on the training pool (each head's
   sums in the same order on any thread: the same bits). */
typedef struct diag_job {
    kgl_diag *dg;
    const kgl_trainer *tr;
    int l;
} diag_job;

/* Layer l's Wq, Wk, head h: the gradient over the head's columns and how
   far they moved from W₀. */
static void measure_weights_head(void *ctx, int h, int worker)
{
    (void)worker;
    const diag_job *J = ctx;
    const kgl_block *B = &J->tr->model.layer[J->l];
    int d = J->dg->d, dk = d / J->dg->heads;
    size_t dd = (size_t)d * d;
    kgl_head_diag *hd = head_diag(J->dg, J->l, h);
    hd->grad_wq = block_norm(B->wq->grad, d, h * dk, dk);
    hd->grad_wk = block_norm(B->wk->grad, d, h * dk, dk);
    hd->wq_move = block_move(B->wq->data, J->dg->wq0 + J->l * dd, d, h * dk, dk);
    hd->wk_move = block_move(B->wk->data, J->dg->wk0 + J->l * dd, d, h * dk, dk);
}

static void measure_weights(kgl_diag *dg, const kgl_trainer *tr, int l)
{
    diag_job J = {dg, tr, l};
    kgl_parallel(tr->tape.pool, dg->heads, 6.0 * dg->d * dg->d, measure_weights_head, &J);
}

/* --context graph: the same measures over the segments of the step's batch
   (a row is a segment: the query entity's weights over its tokens), layer
   l's weights and scores; attn_tv has no fixed reference (the
   neighbourhoods change every step): NaN. */
static void measure_segments_head(void *ctx, int h, int worker)
{
    (void)worker;
    const diag_job *J = ctx;
    const kgl_neighbourhood *nb = J->tr->fwd.neighbourhood;
    const kgl_tensor *A = J->tr->fwd.layer_segment_attn[J->l], *S = J->tr->fwd.layer_segment_logits[J->l];
    int H = J->dg->heads, B = nb->n;
    kgl_real p[KGL_MAX_NEIGHBOURS + 1];
    kgl_head_diag *hd = head_diag(J->dg, J->l, h);
    double mp_sum = 0, mp_min = INFINITY, ent = 0, jac = 0, max_logit = 0, grad2 = 0;
    for (int b = 0; b < B; b++) {
        int lo = nb->offsets[b], len = nb->offsets[b + 1] - lo;
        double mp = 0;
        for (int k = 0; k < len; k++) {
            size_t at = (size_t)(lo + k) * H + h;
            p[k] = A->data[at];
            if (p[k] > mp) mp = p[k];
            if (p[k] > 0) ent -= p[k] * log(p[k]);
            max_logit = fmax(max_logit, fabs(S->data[at]));
            if (S->grad) grad2 += S->grad[at] * S->grad[at];
        }
        mp_sum += mp;
        mp_min = fmin(mp_min, mp);
        jac += kgl_softmax_jacobian_fro(p, len);
    }
    hd->max_prob_mean = mp_sum / B;
    hd->max_prob_min = mp_min;
    hd->entropy = ent / B;
    hd->jac_fro = jac / B;
    hd->attn_tv = NAN;
    hd->max_abs_logit = max_logit;
    hd->grad_logits = S->grad ? sqrt(grad2) : NAN;
}

static void measure_segments(kgl_diag *dg, const kgl_trainer *tr, int l)
{
    const kgl_neighbourhood *nb = tr->fwd.neighbourhood;
    diag_job J = {dg, tr, l};
    /* a log and a few comparisons an element: about twenty operations */
    kgl_parallel(tr->tape.pool, dg->heads, 20.0 * nb->offsets[nb->n] * dg->heads, measure_segments_head, &J);
    kgl_relation_attention(nb, tr->fwd.layer_segment_attn[l], dg->heads, tr->model.cfg.n_relations,
                           dg->spec + (size_t)l * dg->heads * dg->m);
}

/* --context full: over the n rows of each head's A_h of layer l. */
static void measure_full(kgl_diag *dg, const kgl_trainer *tr, int l)
{
    int n = dg->n, H = dg->heads;
    size_t nn = (size_t)n * n;
    for (int h = 0; h < H; h++) {
        kgl_head_diag *hd = head_diag(dg, l, h);
        const kgl_tensor *A = tr->fwd.layer_attn[l][h], *S = tr->fwd.layer_logits_attn[l][h];
        const kgl_real *A0 = dg->attn0 + ((size_t)l * H + h) * nn;
        double mp_sum = 0, mp_min = INFINITY, ent = 0, jac = 0, tv = 0, max_logit = 0;
        for (int i = 0; i < n; i++) {
            const kgl_real *a = A->data + (size_t)i * n, *a0 = A0 + (size_t)i * n;
            double mp = 0, row_tv = 0;
            for (int j = 0; j < n; j++) {
                if (a[j] > mp) mp = a[j];
                if (a[j] > 0) ent -= a[j] * log(a[j]);
                row_tv += fabs(a[j] - a0[j]);
                if (S) {
                    double s = fabs(S->data[(size_t)i * n + j]);
                    if (s > max_logit) max_logit = s;
                }
            }
            mp_sum += mp;
            if (mp < mp_min) mp_min = mp;
            jac += kgl_softmax_jacobian_fro(a, n);
            tv += 0.5 * row_tv;
        }
        hd->max_prob_mean = mp_sum / n;
        hd->max_prob_min = mp_min;
        hd->entropy = ent / n;
        hd->jac_fro = jac / n;
        hd->attn_tv = tv / n;
        /* the fused attention measured these itself (it keeps no S_h) */
        const double *st = tr->fwd.layer_attn_stats[l];
        hd->max_abs_logit = S ? max_logit : st ? st[h] : NAN;
        hd->grad_logits = S ? (S->grad ? frobenius(S->grad, nn) : NAN) : st ? st[H + h] : NAN;
    }
    kgl_specialisation(&tr->tails, H, (kgl_tensor *const *)tr->fwd.layer_attn[l], dg->spec + (size_t)l * H * dg->m);
}

void kgl_diag_measure(kgl_diag *dg, const kgl_trainer *tr)
{
    for (int l = 0; l < dg->layers; l++) {
        if (dg->context == KGL_CONTEXT_NONE) {
            for (int h = 0; h < dg->heads; h++) {
                double *x = &head_diag(dg, l, h)->max_prob_mean;
                for (size_t k = 0; k < sizeof(kgl_head_diag) / sizeof(double); k++) x[k] = NAN;
            }
            for (int k = 0; k < dg->heads * dg->m; k++) dg->spec[(size_t)l * dg->heads * dg->m + k] = NAN;
            continue;
        }
        if (dg->context == KGL_CONTEXT_GRAPH) measure_segments(dg, tr, l);
        else measure_full(dg, tr, l);
        measure_weights(dg, tr, l);
    }
}

/* ---- head supervision, measured --------------------------------------------- */

/* The targets of row (h, i): the tails of i under every relation supervised
   onto h, sorted, repeats kept (a tail of two such relations is the target of
   two examples); returns how many, written to out (capacity: all tails). */
static int row_targets(const kgl_tails *tl, const int *head_of, int h, int i, int *out)
{
    int k = 0, n = tl->n_entities;
    for (int r = 0; r < tl->n_relations; r++) {
        if (head_of[r] != h) continue;
        for (int q = tl->offsets[r * n + i]; q < tl->offsets[r * n + i + 1]; q++) out[k++] = tl->tails[q];
    }
    qsort(out, (size_t)k, sizeof *out, kgl_cmp_int);
    return k;
}

/* The floor of the supervision loss. aux is one mean over the supervised
 * examples (i, r, t) of −log A_h(r)[i, t] (README, "The model, exactly").
 * Group the examples by their row (h, i): if t occurs c_t times among that
 * row's k examples (c_t > 1 only when two relations on h share the tail),
 * the row contributes −Σ_t c_t log a_t with a = A_h[i, ·] any distribution
 * over the n entities (a softmax row can come as close to any distribution as
 * we like, so the bound is the infimum, approached, not reached). Mass off
 * the targets only lowers every a_t, so the minimum puts it all on them, and
 * by Gibbs' inequality −Σ c_t log a_t ≥ −Σ c_t log(c_t / k), with equality at
 * a_t = c_t / k. Hence
 *     floor = (1/N) Σ_rows ( k log k − Σ_t c_t log c_t ),   N = Σ_rows k,
 * which for distinct targets is (1/N) Σ_rows k log k: a row with k targets
 * can do no better than a weight 1/k on each. The academic world: advises
 * alone, rows alice (2 advisees) and bob (1): 2 log 2 / 3 = 0.462; advises
 * and authored on one head, rows alice (dave, erin, p2, p3), bob (carol, p1)
 * and three students with one paper each: (4 log 4 + 2 log 2) / 9 = 0.770;
 * on two heads, (2 log 2 + 2 log 2) / 9 = 0.308. The floor is that of a
 * batch holding every example (the study's full batch); a mini-batch's
 * floor counts only its own examples. */
double kgl_supervision_floor(const kgl_tails *tl, const int *head_of, int heads)
{
    if (!head_of) return NAN;
    int *t = kgl_xmalloc(((size_t)tl->offsets[(size_t)tl->n_relations * tl->n_entities] + 1) * sizeof *t);
    double sum = 0;
    long n_examples = 0;
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < tl->n_entities; i++) {
            int k = row_targets(tl, head_of, h, i, t);
            if (k == 0) continue;
            sum += k * log((double)k);
            for (int a = 0, b; a < k; a = b) { /* runs of one tail: c_t */
                for (b = a; b < k && t[b] == t[a]; b++) {}
                sum -= (b - a) * log((double)(b - a));
            }
            n_examples += k;
        }
    free(t);
    return n_examples ? sum / (double)n_examples : NAN;
}

void kgl_sup_diag_init(kgl_sup_diag *sd, const kgl_trainer *tr)
{
    memset(sd, 0, sizeof *sd);
    const kgl_tails *tl = &tr->tails;
    int n = tl->n_entities, heads = tr->model.cfg.heads, d = tr->model.cfg.dim;
    sd->floor = kgl_supervision_floor(tl, tr->head_of, heads);
    sd->target_mass = sd->grad_logits = sd->logit_step = sd->wq_step = sd->wk_step = NAN;
    if (!tr->head_of) return;
    int cap = tl->offsets[(size_t)tl->n_relations * n];
    int *t = kgl_xmalloc(((size_t)cap + 1) * sizeof *t);
    sd->row_head = kgl_xmalloc((size_t)heads * n * sizeof(int));
    sd->row_entity = kgl_xmalloc((size_t)heads * n * sizeof(int));
    sd->target_off = kgl_xmalloc(((size_t)heads * n + 1) * sizeof(int));
    sd->targets = kgl_xmalloc(((size_t)cap + 1) * sizeof(int));
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < n; i++) {
            int k = row_targets(tl, tr->head_of, h, i, t);
            if (k == 0) continue;
            sd->row_head[sd->rows] = h;
            sd->row_entity[sd->rows] = i;
            sd->target_off[sd->rows] = sd->n_targets;
            for (int a = 0; a < k; a++) /* distinct tails: the mass on them */
                if (a == 0 || t[a] != t[a - 1]) sd->targets[sd->n_targets++] = t[a];
            sd->rows++;
        }
    sd->target_off[sd->rows] = sd->n_targets;
    free(t);
    sd->heads_mask = 0;
    for (int k = 0; k < sd->rows; k++) sd->heads_mask |= 1ull << (sd->row_head[k] % 64);
    sd->prev_logits = kgl_xmalloc(((size_t)sd->rows * n + 1) * sizeof(kgl_real));
    sd->wq_before = kgl_xmalloc((size_t)d * d * sizeof(kgl_real));
    sd->wk_before = kgl_xmalloc((size_t)d * d * sizeof(kgl_real));
}

void kgl_sup_diag_free(kgl_sup_diag *sd)
{
    free(sd->row_head);
    free(sd->row_entity);
    free(sd->target_off);
    free(sd->targets);
    free(sd->prev_logits);
    free(sd->wq_before);
    free(sd->wk_before);
    memset(sd, 0, sizeof *sd);
}

void kgl_sup_diag_measure(kgl_sup_diag *sd, const kgl_trainer *tr)
{
    if (sd->rows == 0) return;
    int n = tr->tails.n_entities, d = tr->model.cfg.dim;
    double mass = 0, g2 = 0, step = 0;
    bool have_logits = true;
    for (int k = 0; k < sd->rows; k++) {
        int h = sd->row_head[k], i = sd->row_entity[k];
        const kgl_real *a = tr->fwd.attn[h]->data + (size_t)i * n;
        for (int q = sd->target_off[k]; q < sd->target_off[k + 1]; q++) mass += a[sd->targets[q]];
        const kgl_tensor *S = tr->fwd.logits_attn[h]; /* supervision runs the composed attention: S_h is kept */
        if (!S) {
            have_logits = false;
            continue;
        }
        const kgl_real *s = S->data + (size_t)i * n, *gs = S->grad ? S->grad + (size_t)i * n : NULL;
        kgl_real *prev = sd->prev_logits + (size_t)k * n;
        for (int j = 0; j < n; j++) {
            if (gs) g2 += gs[j] * gs[j];
            if (sd->have_prev && fabs(s[j] - prev[j]) > step) step = fabs(s[j] - prev[j]);
            prev[j] = s[j];
        }
    }
    sd->target_mass = mass / sd->rows;
    sd->grad_logits = have_logits ? sqrt(g2) : NAN;
    sd->logit_step = have_logits && sd->have_prev ? step : NAN;
    sd->have_prev = have_logits;
    memcpy(sd->wq_before, tr->model.layer[0].wq->data, (size_t)d * d * sizeof(kgl_real));
    memcpy(sd->wk_before, tr->model.layer[0].wk->data, (size_t)d * d * sizeof(kgl_real));
}

/* RMS of |W − W_before| / lr over the columns of the heads in `mask`. */
static double step_in_lr(const kgl_real *w, const kgl_real *before, int d, int dk, unsigned long long mask, double lr)
{
    double s = 0;
    long count = 0;
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            if (!(mask >> ((j / dk) % 64) & 1)) continue;
            double dw = w[i * d + j] - before[i * d + j];
            s += dw * dw;
            count++;
        }
    return count && lr > 0 ? sqrt(s / (double)count) / lr : NAN;
}

void kgl_sup_diag_after_update(kgl_sup_diag *sd, const kgl_trainer *tr)
{
    if (sd->rows == 0) return;
    int d = tr->model.cfg.dim, dk = d / tr->model.cfg.heads;
    double lr = tr->optim.lr;
    sd->wq_step = step_in_lr(tr->model.layer[0].wq->data, sd->wq_before, d, dk, sd->heads_mask, lr);
    sd->wk_step = step_in_lr(tr->model.layer[0].wk->data, sd->wk_before, d, dk, sd->heads_mask, lr);
}
