/* tests/fixtures.c — helpers the model tests share (test.h). Not in
 * tests/main.c, which the runner's own probes link without the library. */
#include <stdlib.h>

#include "test.h"

kgl_batch test_alternating_batch(const kgl_dataset *ds)
{
    int n = ds->splits[0].n;
    kgl_batch b = {n, malloc((size_t)n * sizeof(int)), malloc((size_t)n * sizeof(int)), malloc((size_t)n * sizeof(int)), NULL};
    int *head = (int *)b.head, *rel = (int *)b.rel, *tail = (int *)b.tail;
    for (int k = 0; k < n; k++) {
        const kgl_triple *x = &ds->splits[0].triples[k];
        bool inverse = k % 2;
        head[k] = inverse ? x->tail : x->head;
        rel[k] = inverse ? ds->n_relations + x->rel : x->rel;
        tail[k] = inverse ? x->head : x->tail;
    }
    return b;
}

void test_batch_free(kgl_batch *b)
{
    free((void *)b->head);
    free((void *)b->rel);
    free((void *)b->tail);
}

bool test_model_load(test_ctx *T, const char *path, const kgl_dataset *ds, kgl_model *m)
{
    char e[1024];
    kgl_checkpoint ck;
    if (!CHECK(kgl_checkpoint_open(path, ds, &ck, e, sizeof e))) {
        printf("    %s\n", e);
        return false;
    }
    kgl_model_create(m, &ck.cfg);
    kgl_checkpoint_apply(&ck, m);
    kgl_checkpoint_close(&ck);
    return true;
}

double test_loss(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const kgl_regularisers *reg, kgl_forward *f)
{
    kgl_tape_reset(t);
    t->recording = false;
    kgl_model_loss_reg(m, t, b, NULL, reg, f);
    return f->loss->data[0];
}

/* ---- CSV files as the studies write them (no field holds a comma) ------------ */

const char *test_csv_field(const char *line, int col, char *buf, size_t cap)
{
    for (int k = 0; k < col && line; k++) {
        line = strpbrk(line, ",\n");
        if (line && *line == ',') line++;
        else line = NULL;
    }
    size_t n = line ? strcspn(line, ",\n") : 0;
    if (n >= cap) n = cap - 1;
    memcpy(buf, line ? line : "", n);
    buf[n] = 0;
    return buf;
}

int test_csv_column(const char *csv, const char *name)
{
    size_t len = strlen(name);
    int k = 0;
    for (const char *p = csv; *p && *p != '\n'; k++) {
        size_t n = strcspn(p, ",\n");
        if (n == len && strncmp(p, name, len) == 0) return k;
        p += n;
        if (*p == ',') p++;
    }
    return -1;
}

const char *test_csv_line(const char *csv, int row)
{
    const char *p = csv;
    for (int k = 0; k < row && p; k++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    return p && *p ? p : NULL;
}

double test_csv_num(const char *line, int col)
{
    char buf[64];
    test_csv_field(line, col, buf, sizeof buf);
    return buf[0] ? strtod(buf, NULL) : NAN;
}

/* The readout's score of (c, q, e) written out in real arithmetic:
   diagonal Σ_j c_j q_j e_j; complex (rows of d/2 complex numbers [re | im])
   Re Σ_j c_j q_j conj(e_j) = Σ_j Re(c q)_j e_re,j + Im(c q)_j e_im,j. */
double test_readout_score(bool is_complex, const double *c, const double *q, const double *e, int d)
{
    double s = 0;
    if (!is_complex)
        for (int j = 0; j < d; j++) s += c[j] * q[j] * e[j];
    else
        for (int j = 0, h = d / 2; j < h; j++) {
            double cq_re = c[j] * q[j] - c[h + j] * q[h + j], cq_im = c[j] * q[h + j] + c[h + j] * q[j];
            s += cq_re * e[j] + cq_im * e[h + j];
        }
    return s;
}

/* mean_b (logsumexp_k s[b,k] − s[b,r_b]), s[b,k] the readout's score of
   (i_b, k, t_b) for every relation row k */
double test_relation_prediction_ce(const kgl_model *m, const double *C, const kgl_batch *b)
{
    int rows = 2 * m->cfg.n_relations, d = m->cfg.dim;
    bool complex = m->cfg.readout == KGL_READOUT_COMPLEX;
    const double *E = m->entity_emb->data, *R = m->relation_emb->data;
    double ce = 0;
    for (int k = 0; k < b->n; k++) {
        double s[64], mx = -INFINITY, z = 0;
        for (int r = 0; r < rows; r++) {
            s[r] = test_readout_score(complex, C + b->head[k] * d, R + r * d, E + b->tail[k] * d, d);
            mx = fmax(mx, s[r]);
        }
        for (int r = 0; r < rows; r++) z += exp(s[r] - mx);
        ce += mx + log(z) - s[b->rel[k]];
    }
    return ce / b->n;
}
