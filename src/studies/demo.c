/* demo.c — the chapter on attention as relevance-based reasoning, re-derived
 * with the engine's ops (`kgl demo`). Every score is kgl_matmul_nt, every
 * scaling kgl_scale, every attention row kgl_softmax_rows and every mix of
 * values kgl_matmul, on a tape that does not record: the demo runs the same
 * code paths the layer trains with. What is computed by hand here is only
 * what the checks compare against (closed forms, the hand formulas of the
 * softmax Jacobian, the article's published numbers). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kgl/studies.h"
#include "engine/internal.h"

/* ---- small helpers --------------------------------------------------------- */

static kgl_tensor *tensor(kgl_tape *t, int rows, int cols, const double *v)
{
    kgl_tensor *x = kgl_tensor_new(t, rows, cols, false);
    if (v) memcpy(x->data, v, kgl_numel(x) * sizeof(double));
    return x;
}

static kgl_tensor *normal(kgl_tape *t, kgl_rng *rng, int rows, int cols, double sd)
{
    kgl_tensor *x = tensor(t, rows, cols, NULL);
    for (size_t i = 0; i < kgl_numel(x); i++) x->data[i] = sd * kgl_rng_normal(rng);
    return x;
}

static void tape_eval(kgl_tape *t)
{
    kgl_tape_init(t);
    t->recording = false;
}

static const kgl_mask no_mask = {KGL_MASK_NONE, NULL};
static const kgl_mask causal_mask = {KGL_MASK_CAUSAL, NULL};

/* One attention: raw = Q Kᵀ, scaled = scale · raw, A = softmax(scaled)
 * under `mask`, O = A V. */
typedef struct attention {
    kgl_tensor *raw, *scaled, *A, *O;
} attention;

static attention attend(kgl_tape *t, kgl_tensor *Q, kgl_tensor *K, kgl_tensor *V, double scale, kgl_mask mask)
{
    attention a;
    a.raw = kgl_matmul_nt(t, Q, K);
    a.scaled = kgl_scale(t, a.raw, scale);
    a.A = kgl_softmax_rows(t, a.scaled, mask);
    a.O = kgl_matmul(t, a.A, V);
    return a;
}

static double max_row_sum_err(const kgl_tensor *A)
{
    double m = 0;
    for (int i = 0; i < A->rows; i++) {
        double s = 0;
        for (int j = 0; j < A->cols; j++) s += A->data[(size_t)i * A->cols + j];
        kgl_keep_max(&m, fabs(s - 1.0));
    }
    return m;
}

static double max_abs_diff(const double *a, const double *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) kgl_keep_max(&m, fabs(a[i] - b[i]));
    return m;
}

static int argmax(const double *v, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (v[j] > v[best]) best = j;
    return best;
}

static double row_max(const double *v, int n) { return v[argmax(v, n)]; }

/* ---- the academic world ------------------------------------------------------ */

bool kgl_demo_world_init(kgl_demo_world *w, const kgl_types *ty, const char *name, char *err, size_t err_cap)
{
    memset(w, 0, sizeof *w);
    if (ty->n > KGL_DEMO_MAX_N) {
        snprintf(err, err_cap, "%s: %d entities; the demo shows at most %d", name, ty->n, KGL_DEMO_MAX_N);
        return false;
    }
    w->n = ty->n;
    w->entity = ty->entity;
    for (int i = 0; i < ty->n; i++) {
        int k = 0;
        while (k < w->n_types && strcmp(w->type_name[k], ty->type[i]) != 0) k++;
        if (k == w->n_types) {
            if (w->n_types == KGL_DEMO_D) {
                snprintf(err, err_cap, "%s: more than %d types (\"%s\" is the %dth); X has one dimension per type",
                         name, KGL_DEMO_D, ty->type[i], KGL_DEMO_D + 1);
                return false;
            }
            w->type_name[w->n_types++] = ty->type[i];
        }
        w->type_of[i] = k;
    }
    return true;
}

int kgl_demo_world_find(const kgl_demo_world *w, const char *entity)
{
    for (int i = 0; i < w->n; i++)
        if (strcmp(w->entity[i], entity) == 0) return i;
    return -1;
}

/* X: N(0, 1) noise plus 0.5 on the dimension of the entity's type, drawn row by row. */
static kgl_tensor *academic_x(kgl_tape *t, kgl_rng *rng, const kgl_demo_world *w)
{
    kgl_tensor *X = normal(t, rng, w->n, KGL_DEMO_D, 1.0);
    for (int i = 0; i < w->n; i++) X->data[(size_t)i * KGL_DEMO_D + w->type_of[i]] += 0.5;
    return X;
}

/* Sections 1 and 8: X, then Wq, Wk, Wv (8 x 4) ~ N(0, 1), untrained and not shrunk. */
typedef struct academic_attention {
    kgl_tensor *X, *Wq, *Wk, *Wv;
} academic_attention;

static void academic_setup(kgl_tape *t, kgl_rng *rng, const kgl_demo_world *w, academic_attention *a)
{
    a->X = academic_x(t, rng, w);
    a->Wq = normal(t, rng, KGL_DEMO_D, KGL_DEMO_DK, 1.0);
    a->Wk = normal(t, rng, KGL_DEMO_D, KGL_DEMO_DK, 1.0);
    a->Wv = normal(t, rng, KGL_DEMO_D, KGL_DEMO_DK, 1.0);
}

static attention academic_attend(kgl_tape *t, const academic_attention *a, kgl_tensor *X, kgl_mask mask)
{
    kgl_tensor *Q = kgl_matmul(t, X, a->Wq), *K = kgl_matmul(t, X, a->Wk), *V = kgl_matmul(t, X, a->Wv);
    return attend(t, Q, K, V, 1.0 / sqrt((double)KGL_DEMO_DK), mask);
}

/* ---- 1. attention -------------------------------------------------------------- */

bool kgl_demo_attention_run(const kgl_demo_world *w, int query, uint64_t seed, kgl_demo_attention *r)
{
    memset(r, 0, sizeof *r);
    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    kgl_tape t;
    tape_eval(&t);
    academic_attention a;
    academic_setup(&t, &rng, w, &a);
    attention at = academic_attend(&t, &a, a.X, no_mask);
    int n = w->n;
    r->query = query;
    for (int j = 0; j < n; j++) {
        r->raw[j] = at.raw->data[(size_t)query * n + j];
        r->scaled[j] = at.scaled->data[(size_t)query * n + j];
        r->weight[j] = at.A->data[(size_t)query * n + j];
    }
    /* top 3 by weight (ties: the earlier entity first) */
    r->n_top = n < 3 ? n : 3;
    bool used[KGL_DEMO_MAX_N] = {false};
    for (int k = 0; k < r->n_top; k++) {
        int best = -1;
        for (int j = 0; j < n; j++)
            if (!used[j] && (best < 0 || r->weight[j] > r->weight[best])) best = j;
        used[best] = true;
        r->top[k] = best;
    }
    memcpy(r->out, at.O->data + (size_t)query * KGL_DEMO_DK, sizeof r->out);
    r->max_row_sum_err = max_row_sum_err(at.A);
    r->pass = r->max_row_sum_err < KGL_DEMO_EXACT;
    kgl_tape_free(&t);
    return r->pass;
}

/* ---- 2. variance ----------------------------------------------------------------- */

/* The mean, over `draws` draws of one query and n_keys keys ~ N(0, 1) in d
 * dimensions, of the largest softmax weight without scaling and with 1/√d. */
static void mean_max_weight(kgl_tape *t, kgl_rng *rng, int d, int n_keys, int draws, double *unscaled,
                            double *scaled)
{
    double su = 0, ss = 0;
    for (int i = 0; i < draws; i++) {
        kgl_tape_reset(t);
        kgl_tensor *q = normal(t, rng, 1, d, 1.0), *K = normal(t, rng, n_keys, d, 1.0);
        kgl_tensor *s = kgl_matmul_nt(t, q, K);
        su += row_max(kgl_softmax_rows(t, s, no_mask)->data, n_keys);
        ss += row_max(kgl_softmax_rows(t, kgl_scale(t, s, 1.0 / sqrt((double)d)), no_mask)->data, n_keys);
    }
    *unscaled = su / draws;
    *scaled = ss / draws;
}

bool kgl_demo_variance_run(uint64_t seed, kgl_demo_variance *r)
{
    static const int dks[3] = {4, 64, 256};
    memset(r, 0, sizeof *r);
    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    kgl_tape t;
    tape_eval(&t);
    double *dot = kgl_xmalloc(KGL_DEMO_VAR_PAIRS * sizeof *dot);
    bool ok = true;
    for (int k = 0; k < 3; k++) {
        int dk = r->dk[k] = dks[k];
        double mean = 0;
        for (int i = 0; i < KGL_DEMO_VAR_PAIRS; i++) {
            kgl_tape_reset(&t);
            kgl_tensor *q = normal(&t, &rng, 1, dk, 1.0), *kk = normal(&t, &rng, 1, dk, 1.0);
            dot[i] = kgl_matmul_nt(&t, q, kk)->data[0];
            mean += dot[i];
        }
        mean /= KGL_DEMO_VAR_PAIRS;
        double ss = 0;
        for (int i = 0; i < KGL_DEMO_VAR_PAIRS; i++) ss += (dot[i] - mean) * (dot[i] - mean);
        r->var[k] = ss / (KGL_DEMO_VAR_PAIRS - 1);
        r->ratio[k] = r->var[k] / dk;
        ok = ok && r->ratio[k] >= KGL_DEMO_VAR_LO && r->ratio[k] <= KGL_DEMO_VAR_HI;
    }
    free(dot);
    r->ratio_lo = r->ratio_hi = r->ratio[0];
    for (int k = 1; k < 3; k++) {
        if (r->ratio[k] < r->ratio_lo) r->ratio_lo = r->ratio[k];
        if (r->ratio[k] > r->ratio_hi) r->ratio_hi = r->ratio[k];
    }
    mean_max_weight(&t, &rng, KGL_DEMO_SAT_DK, KGL_DEMO_SAT_KEYS, KGL_DEMO_SAT_DRAWS, &r->sat_unscaled,
                    &r->sat_scaled);
    ok = ok && r->sat_unscaled > KGL_DEMO_SAT_UNSCALED_MIN && r->sat_scaled < KGL_DEMO_SAT_SCALED_MAX;
    kgl_tape_free(&t);
    return r->pass = ok;
}

/* ---- 3. jacobian -------------------------------------------------------------------- */

bool kgl_demo_jacobian_run(uint64_t seed, kgl_demo_jacobian *r)
{
    enum { N = KGL_DEMO_JAC_N };
    memset(r, 0, sizeof *r);
    double J_fd[N * N];
    r->fd_err = kgl_softmax_jacobian_experiment(seed, KGL_DEMO_JAC_H, r->z, r->J, J_fd);

    /* p from the engine's softmax; the hand formulas from p */
    kgl_tape t;
    tape_eval(&t);
    memcpy(r->p, kgl_softmax_rows(&t, tensor(&t, 1, N, r->z), no_mask)->data, sizeof r->p);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double hand = i == j ? r->p[i] * (1.0 - r->p[i]) : -r->p[i] * r->p[j];
            kgl_keep_max(&r->hand_err, fabs(r->J[i * N + j] - hand));
        }

    /* The tape never builds J, but backward through softmax_rows seeded with
       e_k yields Jᵀ e_k, row k of J (J is symmetric). */
    kgl_tape rec;
    kgl_tape_init(&rec);
    for (int k = 0; k < N; k++) {
        kgl_tape_reset(&rec);
        kgl_tensor *z = kgl_tensor_new(&rec, 1, N, true);
        memcpy(z->data, r->z, sizeof r->z);
        kgl_tensor *p = kgl_softmax_rows(&rec, z, no_mask);
        double e[N] = {0};
        e[k] = 1;
        kgl_backward_seeded(&rec, p, e);
        kgl_keep_max(&r->tape_err, max_abs_diff(z->grad, r->J + k * N, N));
    }
    kgl_tape_free(&rec);

    /* Freezing: softmax(c z). ‖J‖_F comes from kgl_softmax_jacobian_fro,
       which avoids the cancellation of the closed form near one-hot; J_ii is
       p_i Σ_{j≠i} p_j for the same reason (1 − p_i rounds to 0 when p_i ≈ 1). The bound ‖J‖_F ≤ Σ_ij |J_ij| = 2 tr J =
       2 Σ_i p_i (1 − p_i) ≤ 4 (1 − max_prob) ties J → 0 to p → one-hot. */
    bool ok = r->fd_err < KGL_DEMO_JAC_FD_BOUND && r->hand_err < KGL_DEMO_EXACT && r->tape_err < KGL_DEMO_EXACT;
    kgl_tensor *z = tensor(&t, 1, N, r->z);
    for (int s = 0; s < KGL_DEMO_JAC_SWEEP; s++) {
        double c = r->c[s] = (double)(1 << s);
        const double *p = kgl_softmax_rows(&t, kgl_scale(&t, z, c), no_mask)->data;
        int m = argmax(p, N);
        double jii = 0, rest = 0;
        for (int i = 0; i < N; i++) {
            double others = 0;
            for (int j = 0; j < N; j++)
                if (j != i) others += p[j];
            if (p[i] * others > jii) jii = p[i] * others;
            if (i == m) rest = others;
        }
        r->max_prob[s] = p[m];
        r->rest[s] = rest;
        r->fro[s] = kgl_softmax_jacobian_fro(p, N);
        r->max_jii[s] = jii;
        ok = ok && r->fro[s] <= 4 * rest && jii <= 0.25 && (s == 0 || r->max_prob[s] >= r->max_prob[s - 1]);
    }
    kgl_tape_free(&t);
    return r->pass = ok;
}

/* ---- 4. lookup ----------------------------------------------------------------------- */

bool kgl_demo_lookup_run(uint64_t seed, kgl_demo_lookup *r)
{
    memset(r, 0, sizeof *r);
    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    kgl_tape t;
    tape_eval(&t);
    static const double eye[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    kgl_tensor *K = tensor(&t, 4, 4, eye);
    kgl_tensor *V = normal(&t, &rng, 4, 4, 1.0);
    memcpy(r->V, V->data, sizeof r->V);
    const double *v2 = V->data + 4;
    bool ok = true;
    for (int k = 0; k < 2; k++) {
        double c = r->c[k] = k == 0 ? 3.0 : 8.0;
        kgl_tensor *q = kgl_scale(&t, tensor(&t, 1, 4, eye + 4), c); /* q = c k₂ */
        attention at = attend(&t, q, K, V, 1.0, no_mask); /* a lookup: no 1/√dk */
        const double *O = at.O->data;
        memcpy(r->weight[k], at.A->data, sizeof r->weight[k]);
        memcpy(r->out[k], O, sizeof r->out[k]);
        r->p2[k] = at.A->data[1];
        r->p2_exact[k] = exp(c) / (exp(c) + 3.0);
        double dot = 0, no = 0, nv = 0;
        for (int j = 0; j < 4; j++) {
            dot += O[j] * v2[j];
            no += O[j] * O[j];
            nv += v2[j] * v2[j];
        }
        r->cos[k] = dot / sqrt(no * nv);
        r->p2_err[k] = fabs(r->p2[k] - r->p2_exact[k]);
        ok = ok && r->p2_err[k] < KGL_DEMO_EXACT;
    }
    ok = ok && r->cos[1] > KGL_DEMO_LOOKUP_COS_MIN;
    kgl_tape_free(&t);
    return r->pass = ok;
}

/* ---- 5. multihead ----------------------------------------------------------------------- */

static void shape_of(int s[2], const kgl_tensor *x)
{
    s[0] = x->rows;
    s[1] = x->cols;
}

bool kgl_demo_multihead_run(const kgl_demo_world *w, int query, uint64_t seed, kgl_demo_multihead *r)
{
    enum { H = KGL_DEMO_HEADS, D = KGL_DEMO_D, DK = KGL_DEMO_DK };
    memset(r, 0, sizeof *r);
    r->query = query;
    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    kgl_tape t;
    tape_eval(&t);
    double sd = 1.0 / sqrt((double)D);
    kgl_tensor *X = academic_x(&t, &rng, w);
    kgl_tensor *Wq = normal(&t, &rng, D, D, sd), *Wk = normal(&t, &rng, D, D, sd), *Wv = normal(&t, &rng, D, D, sd);
    kgl_tensor *Wo = normal(&t, &rng, D, D, sd);
    kgl_tensor *Q = kgl_matmul(&t, X, Wq), *K = kgl_matmul(&t, X, Wk), *V = kgl_matmul(&t, X, Wv);
    kgl_tensor *O[H];
    r->max_row_sum_err = 0;
    for (int h = 0; h < H; h++) {
        kgl_tensor *Qh = kgl_slice_cols(&t, Q, h * DK, DK), *Kh = kgl_slice_cols(&t, K, h * DK, DK),
                   *Vh = kgl_slice_cols(&t, V, h * DK, DK);
        attention at = attend(&t, Qh, Kh, Vh, 1.0 / sqrt((double)DK), no_mask);
        O[h] = at.O;
        kgl_keep_max(&r->max_row_sum_err, max_row_sum_err(at.A));
        const double *row = at.A->data + (size_t)query * w->n;
        r->top[h] = argmax(row, w->n);
        r->top_weight[h] = row[r->top[h]];
        if (h == 0) {
            shape_of(r->shape[2], Qh);
            shape_of(r->shape[3], O[h]);
        }
    }
    kgl_tensor *C = kgl_concat_cols(&t, H, O);
    kgl_tensor *Y = kgl_matmul(&t, C, Wo);
    shape_of(r->shape[0], X);
    shape_of(r->shape[1], Q);
    shape_of(r->shape[4], C);
    shape_of(r->shape[5], Y);
    static const int want[6][2] = {{0, D}, {0, D}, {0, DK}, {0, DK}, {0, H * DK}, {0, D}};
    r->shapes_ok = true;
    for (int k = 0; k < 6; k++) r->shapes_ok = r->shapes_ok && r->shape[k][0] == w->n && r->shape[k][1] == want[k][1];

    /* concat then project = the sum of each head projected by its block of Wo's rows */
    kgl_tensor *sum = NULL;
    for (int h = 0; h < H; h++) {
        kgl_tensor block = {DK, D, Wo->data + (size_t)h * DK * D, NULL, false}; /* a view of rows 4h..4h+3 */
        kgl_tensor *part = kgl_matmul(&t, O[h], &block);
        sum = sum ? kgl_add(&t, sum, part) : part;
    }
    r->split_err = max_abs_diff(Y->data, sum->data, kgl_numel(Y));
    r->pass = r->shapes_ok && r->max_row_sum_err < KGL_DEMO_EXACT && r->split_err < KGL_DEMO_EXACT;
    kgl_tape_free(&t);
    return r->pass;
}

/* ---- 6. maxweight -------------------------------------------------------------------------- */

bool kgl_demo_maxweight_run(uint64_t seed, kgl_demo_maxweight *r)
{
    static const int dims[KGL_DEMO_MW_DIMS] = {2, 8, 32, 128, 512};
    memset(r, 0, sizeof *r);
    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    kgl_tape t;
    tape_eval(&t);
    bool ok = true;
    for (int k = 0; k < KGL_DEMO_MW_DIMS; k++) {
        r->d[k] = dims[k];
        mean_max_weight(&t, &rng, dims[k], KGL_DEMO_MW_KEYS, KGL_DEMO_MW_DRAWS, &r->unscaled[k], &r->scaled[k]);
        ok = ok && r->scaled[k] < KGL_DEMO_MW_SCALED_MAX;
        if (r->scaled[k] > r->scaled_top) r->scaled_top = r->scaled[k];
    }
    ok = ok && r->unscaled[KGL_DEMO_MW_DIMS - 1] > KGL_DEMO_MW_UNSCALED_MIN;
    kgl_tape_free(&t);
    return r->pass = ok;
}

/* ---- 7. mask ----------------------------------------------------------------------------------- */

bool kgl_demo_mask_run(kgl_demo_mask *r)
{
    enum { T = KGL_DEMO_T, F = KGL_DEMO_F };
    enum { PERSON, THING, TIME, ACTION };
    static const char *const tokens[T] = {"alice", "gave", "bob", "books", "yesterday"};
    static const char *const features[F] = {"person", "thing", "time", "action"};
    static const int feature_of[T] = {PERSON, ACTION, PERSON, THING, TIME};
    const double a = 4.0; /* how hard a query looks: 2 after 1/√4 */
    memset(r, 0, sizeof *r);
    memcpy(r->token, tokens, sizeof r->token);
    memcpy(r->feature, features, sizeof r->feature);
    memcpy(r->feature_of, feature_of, sizeof r->feature_of);
    for (int i = 0; i < T; i++) r->X[i * F + feature_of[i]] = 1.0;
    /* Row f of W_Q is what a token with feature f looks for: the action looks
       for persons and things; persons, things and times look for the action. */
    r->Wq[ACTION * F + PERSON] = a;
    r->Wq[ACTION * F + THING] = a;
    r->Wq[PERSON * F + ACTION] = a;
    r->Wq[THING * F + ACTION] = a;
    r->Wq[TIME * F + ACTION] = a;
    static const double eye[F * F] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};

    kgl_tape t;
    tape_eval(&t);
    kgl_tensor *X = tensor(&t, T, F, r->X);
    kgl_tensor *Q = kgl_matmul(&t, X, tensor(&t, F, F, r->Wq));
    kgl_tensor *K = kgl_matmul(&t, X, tensor(&t, F, F, eye)); /* W_K = I */
    kgl_tensor *V = kgl_matmul(&t, X, tensor(&t, F, F, eye)); /* W_V = I */
    r->never_flatter = true;
    r->max_row_sum_err = 0;
    for (int m = 0; m < 2; m++) {
        kgl_mask mask = m ? causal_mask : no_mask;
        kgl_tensor *A = attend(&t, Q, K, V, 1.0 / sqrt((double)F), mask).A;
        kgl_tensor *U = attend(&t, Q, K, V, 1.0, mask).A;
        memcpy(m ? r->causal : r->bi, A->data, sizeof r->bi);
        kgl_keep_max(&r->max_row_sum_err, max_row_sum_err(A));
        kgl_keep_max(&r->max_row_sum_err, max_row_sum_err(U));
        for (int i = 0; i < T; i++) {
            r->max_w[m][i] = row_max(A->data + i * T, T);
            r->max_w_unscaled[m][i] = row_max(U->data + i * T, T);
            if (r->max_w_unscaled[m][i] > r->max_w[m][i]) r->sharper_rows++;
            if (r->max_w_unscaled[m][i] < r->max_w[m][i]) r->never_flatter = false;
        }
    }
    r->above_diag = 0;
    for (int i = 0; i < T; i++)
        for (int j = i + 1; j < T; j++) kgl_keep_max(&r->above_diag, fabs(r->causal[i * T + j]));

    /* who looks at whom (bidirectional): every other token's largest weight is
       on the action; each person or thing outweighs every other token in the
       action's row */
    r->roles_ok = true;
    int action = 1;
    for (int i = 0; i < T; i++) {
        const double *row = r->bi + i * T;
        if (i != action) {
            r->roles_ok = r->roles_ok && argmax(row, T) == action && row[action] > row[i];
            continue;
        }
        for (int j = 0; j < T; j++)
            for (int k = 0; k < T; k++) {
                bool wanted_j = feature_of[j] == PERSON || feature_of[j] == THING;
                bool wanted_k = feature_of[k] == PERSON || feature_of[k] == THING;
                if (wanted_j && !wanted_k) r->roles_ok = r->roles_ok && row[j] > row[k];
            }
    }
    r->pass = r->above_diag == 0.0 && r->max_row_sum_err < KGL_DEMO_EXACT && r->never_flatter &&
              r->sharper_rows > 0 && r->roles_ok;
    kgl_tape_free(&t);
    return r->pass;
}

/* ---- 8. permutation ------------------------------------------------------------------------------ */

bool kgl_demo_permutation_run(const kgl_demo_world *w, uint64_t seed, kgl_demo_permutation *r)
{
    memset(r, 0, sizeof *r);
    kgl_rng rng;
    kgl_rng_seed(&rng, seed);
    kgl_tape t;
    tape_eval(&t);
    academic_attention a;
    academic_setup(&t, &rng, w, &a);
    int n = r->n = w->n;
    /* Fisher–Yates, drawn again if it came out as the identity (possible only
       for tiny n; with one entity there is nothing to shuffle) */
    for (bool identity = true; identity && n > 1;) {
        for (int i = 0; i < n; i++) r->perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)kgl_rng_below(&rng, (uint32_t)i + 1);
            int tmp = r->perm[i];
            r->perm[i] = r->perm[j];
            r->perm[j] = tmp;
        }
        for (int i = 0; i < n; i++) identity = identity && r->perm[i] == i;
    }
    if (n == 1) r->perm[0] = 0;
    kgl_tensor *PX = kgl_gather_rows(&t, a.X, r->perm, n);
    for (int m = 0; m < 2; m++) {
        kgl_mask mask = m ? causal_mask : no_mask;
        kgl_tensor *P_out = kgl_gather_rows(&t, academic_attend(&t, &a, a.X, mask).O, r->perm, n);
        kgl_tensor *out_P = academic_attend(&t, &a, PX, mask).O;
        double err = max_abs_diff(P_out->data, out_P->data, kgl_numel(P_out));
        if (m == 0) {
            r->free_err = err;
        } else {
            r->causal_err = err;
            for (int i = 0; i < n; i++)
                if (max_abs_diff(P_out->data + (size_t)i * KGL_DEMO_DK, out_P->data + (size_t)i * KGL_DEMO_DK,
                                 KGL_DEMO_DK) > KGL_DEMO_EXACT)
                    r->causal_rows_differ++;
        }
    }
    r->pass = r->free_err < KGL_DEMO_EXACT && (n == 1 || r->causal_err > KGL_DEMO_PERM_BREAK_MIN);
    kgl_tape_free(&t);
    return r->pass;
}

/* ---- 9. memo --------------------------------------------------------------------------------------- */

static const char *const memo_columns[8] = {"document_id",   "target_token",  "candidate_token", "candidate_role",
                                            "evidence_pack", "evidence_cap", "evidence_action", "score"};

static bool memo_fail(kgl_memo *m)
{
    kgl_memo_free(m);
    return false;
}

bool kgl_memo_load(kgl_memo *m, const kgl_source *src, char *err, size_t err_cap)
{
    memset(m, 0, sizeof *m);
    kgl_text *t = &m->text;
    if (src->text) {
        kgl_text_from_memory(t, src->path ? src->path : "(memory)", src->text, src->len);
    } else {
        if (!src->path) kgl_die("memo: a source has neither a path nor text");
        if (!kgl_text_open(t, src->path, err, err_cap)) return false;
    }
    char *f[8];
    int nf, rc;
    bool header = true;
    while ((rc = kgl_text_next(t, ',', f, 8, &nf, err, err_cap)) == 1) {
        if (header && t->lineno == 1 && strncmp(f[0], "\xef\xbb\xbf", 3) == 0) f[0] += 3; /* a UTF-8 BOM */
        for (int k = 0; k < nf && k < 8; k++)
            if (strchr(f[k], '"')) {
                snprintf(err, err_cap, "%s:%d: field %d is quoted; quoted fields are not supported", t->name,
                         t->lineno, k + 1);
                return memo_fail(m);
            }
        if (nf != 8) {
            snprintf(err, err_cap, "%s:%d: expected 8 comma-separated fields (%s, ..., %s), found %d", t->name,
                     t->lineno, memo_columns[0], memo_columns[7], nf);
            return memo_fail(m);
        }
        if (header) {
            for (int k = 0; k < 8; k++)
                if (strcmp(f[k], memo_columns[k]) != 0) {
                    snprintf(err, err_cap, "%s:%d: column %d of the header is \"%s\", expected \"%s\"", t->name,
                             t->lineno, k + 1, f[k], memo_columns[k]);
                    return memo_fail(m);
                }
            header = false;
            continue;
        }
        for (int k = 0; k < 4; k++)
            if (f[k][0] == 0) {
                snprintf(err, err_cap, "%s:%d: %s is empty", t->name, t->lineno, memo_columns[k]);
                return memo_fail(m);
            }
        double num[4];
        for (int k = 0; k < 4; k++) {
            const char *s = f[4 + k];
            char *end;
            num[k] = strtod(s, &end);
            if (s[0] == 0 || end == s || *end || s[0] == ' ' || s[0] == '\t') {
                snprintf(err, err_cap, "%s:%d: %s \"%s\" is not a number", t->name, t->lineno, memo_columns[4 + k], s);
                return memo_fail(m);
            }
            if (!isfinite(num[k])) {
                snprintf(err, err_cap, "%s:%d: %s \"%s\" is not a finite number", t->name, t->lineno,
                         memo_columns[4 + k], s);
                return memo_fail(m);
            }
        }
        int gi = 0;
        while (gi < m->n_groups && !(strcmp(m->g[gi].document, f[0]) == 0 && strcmp(m->g[gi].target, f[1]) == 0))
            gi++;
        if (gi == m->n_groups) {
            if (gi == KGL_MEMO_MAX_GROUPS) {
                snprintf(err, err_cap, "%s:%d: more than %d (document, target) pairs", t->name, t->lineno,
                         KGL_MEMO_MAX_GROUPS);
                return memo_fail(m);
            }
            m->n_groups++;
            m->g[gi].document = f[0];
            m->g[gi].target = f[1];
            m->g[gi].line = t->lineno;
        }
        kgl_memo_group *g = &m->g[gi];
        for (int j = 0; j < g->n; j++)
            if (strcmp(g->token[j], f[2]) == 0) {
                snprintf(err, err_cap, "%s:%d: candidate \"%s\" is listed twice for target \"%s\" of %s", t->name,
                         t->lineno, f[2], f[1], f[0]);
                return memo_fail(m);
            }
        if (g->n == KGL_MEMO_MAX_CANDIDATES) {
            snprintf(err, err_cap, "%s:%d: more than %d candidates for target \"%s\" of %s", t->name, t->lineno,
                     KGL_MEMO_MAX_CANDIDATES, f[1], f[0]);
            return memo_fail(m);
        }
        g->token[g->n] = f[2];
        g->role[g->n] = f[3];
        for (int k = 0; k < KGL_MEMO_DIM; k++) g->vec[g->n][k] = num[k];
        g->score[g->n] = num[3];
        g->n++;
    }
    if (rc < 0) return memo_fail(m);
    if (header) {
        snprintf(err, err_cap, "%s: empty (expected the header %s,...)", t->name, memo_columns[0]);
        return memo_fail(m);
    }
    if (m->n_groups == 0) {
        snprintf(err, err_cap, "%s: no rows after the header", t->name);
        return memo_fail(m);
    }
    return true;
}

void kgl_memo_free(kgl_memo *m)
{
    kgl_text_close(&m->text);
    memset(m, 0, sizeof *m);
}

/* The article's numbers (document memo_cap_missing), to 3 decimals. */
static const char *const article_tokens[6] = {"배터리팩", "분리", "절연캡", "씌우지", "그것", "위험"};
static const struct {
    const char *target;
    double weight[6], repr[3], shift[3], step;
    const char *top;
} article[2] = {
    {"그것", {0.048, 0.079, 0.430, 0.214, 0.087, 0.143}, {0.203, 0.691, 0.436}, {-0.180, 0.216, 0.019}, 0.644, "절연캡"},
    {"씌우지", {0.067, 0.246, 0.367, 0.182, 0.055, 0.082}, {0.327, 0.598, 0.410}, {-0.056, 0.123, -0.007}, 0.550, "절연캡"},
};
static const double article_baseline[3] = {0.383, 0.475, 0.417};

static bool in_step(const char *role)
{
    return strcmp(role, "missing_object") == 0 || strcmp(role, "missing_action") == 0 ||
           strcmp(role, "current_action") == 0;
}

static void compare(kgl_demo_memo *r, const char *what, double got, double want)
{
    r->article_values++;
    if (llround(got * 1000) == llround(want * 1000)) return;
    if (r->article_mismatches++ == 0)
        snprintf(r->first_mismatch, sizeof r->first_mismatch, "%s is %.3f, the article has %.3f", what, got, want);
}

bool kgl_demo_memo_run(const kgl_memo *m, kgl_demo_memo *r)
{
    memset(r, 0, sizeof *r);
    kgl_tape t;
    tape_eval(&t);
    for (int gi = 0; gi < m->n_groups; gi++) {
        const kgl_memo_group *g = &m->g[gi];
        kgl_demo_memo_result *o = &r->g[gi];
        kgl_tape_reset(&t);
        kgl_tensor *V = tensor(&t, g->n, KGL_MEMO_DIM, &g->vec[0][0]);
        kgl_tensor *u = tensor(&t, 1, g->n, NULL);
        for (int j = 0; j < g->n; j++) u->data[j] = 1.0 / g->n;
        kgl_tensor *base = kgl_matmul(&t, u, V); /* uniform attention */
        kgl_tensor *w = kgl_softmax_rows(&t, tensor(&t, 1, g->n, g->score), no_mask);
        kgl_tensor *repr = kgl_matmul(&t, w, V);
        kgl_tensor *shift = kgl_add(&t, repr, kgl_scale(&t, base, -1.0));
        memcpy(o->baseline, base->data, sizeof o->baseline);
        memcpy(o->weight, w->data, (size_t)g->n * sizeof(double));
        memcpy(o->repr, repr->data, sizeof o->repr);
        memcpy(o->shift, shift->data, sizeof o->shift);
        o->top = argmax(w->data, g->n);
        for (int j = 0; j < g->n; j++)
            if ((o->in_step[j] = in_step(g->role[j]))) o->step_weight += w->data[j];
        kgl_keep_max(&r->max_row_sum_err, max_row_sum_err(w));
    }
    kgl_tape_free(&t);

    char what[160];
    for (int a = 0; a < 2; a++) {
        int gi = 0;
        while (gi < m->n_groups &&
               !(strcmp(m->g[gi].document, "memo_cap_missing") == 0 && strcmp(m->g[gi].target, article[a].target) == 0))
            gi++;
        if (gi == m->n_groups) {
            r->article_values++;
            if (r->article_mismatches++ == 0)
                snprintf(r->first_mismatch, sizeof r->first_mismatch,
                         "no rows for target %s of document memo_cap_missing", article[a].target);
            continue;
        }
        const kgl_memo_group *g = &m->g[gi];
        const kgl_demo_memo_result *o = &r->g[gi];
        for (int k = 0; k < 3; k++) {
            snprintf(what, sizeof what, "%s: baseline[%d]", article[a].target, k);
            compare(r, what, o->baseline[k], article_baseline[k]);
            snprintf(what, sizeof what, "%s: new representation[%d]", article[a].target, k);
            compare(r, what, o->repr[k], article[a].repr[k]);
            snprintf(what, sizeof what, "%s: shift[%d]", article[a].target, k);
            compare(r, what, o->shift[k], article[a].shift[k]);
        }
        for (int c = 0; c < 6; c++) {
            int j = 0;
            while (j < g->n && strcmp(g->token[j], article_tokens[c]) != 0) j++;
            snprintf(what, sizeof what, "%s: weight of %s", article[a].target, article_tokens[c]);
            if (j == g->n) {
                r->article_values++;
                if (r->article_mismatches++ == 0)
                    snprintf(r->first_mismatch, sizeof r->first_mismatch, "%s: no candidate %s", article[a].target,
                             article_tokens[c]);
                continue;
            }
            compare(r, what, o->weight[j], article[a].weight[c]);
        }
        snprintf(what, sizeof what, "%s: weight on the missing step", article[a].target);
        compare(r, what, o->step_weight, article[a].step);
        r->article_values++;
        if (strcmp(g->token[o->top], article[a].top) != 0 && r->article_mismatches++ == 0)
            snprintf(r->first_mismatch, sizeof r->first_mismatch, "%s: top token is %s, the article has %s",
                     article[a].target, g->token[o->top], article[a].top);
    }
    r->pass = r->max_row_sum_err < KGL_DEMO_EXACT && r->article_mismatches == 0;
    return r->pass;
}
