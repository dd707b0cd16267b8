/* inspect.c — what a trained layer does for one query: where every head
 * looks from an entity, the readout's scores for (entity, relation, ?), the
 * contextual states C, and the names of the relation rows (a relation and,
 * in reciprocal mode, its inverse "NAME^-1"), and whether a loaded model's
 * numbers are finite. Read-only: nothing here changes the model. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kgl/model.h"
#include "engine/internal.h"

void kgl_relation_row_name(const kgl_dataset *ds, int row, char *out, size_t cap)
{
    int m = ds->n_relations;
    if (row < 0 || row >= 2 * m) kgl_die("relation row %d out of range (%d relations)", row, m);
    if (row < m)
        snprintf(out, cap, "%s", ds->relation_names[row]);
    else
        snprintf(out, cap, "%s" KGL_INVERSE_SUFFIX, ds->relation_names[row - m]);
}

int kgl_segment_asked_relation(const kgl_dataset *ds, const kgl_segment_view *sv, int t)
{
    int m = ds->n_relations;
    return t > 0 && sv->entity[t] < 0 ? sv->relation[t] - 2 * m - 1 : -1; /* P's rows 2m + 1 + r */
}

void kgl_segment_token_name(const kgl_dataset *ds, const kgl_segment_view *sv, int t, char *out, size_t cap)
{
    int e = sv->entity[t], row = sv->relation[t], asked = kgl_segment_asked_relation(ds, sv, t);
    char rel[600];
    if (t == 0) { /* the question's own entity: no edge led to it */
        snprintf(out, cap, "(itself) %s", ds->entity_names[e]);
    } else if (asked >= 0) {
        kgl_relation_row_name(ds, asked, rel, sizeof rel);
        snprintf(out, cap, "(asked) %s", rel);
    } else {
        kgl_relation_row_name(ds, row, rel, sizeof rel);
        snprintf(out, cap, "%s %s", rel, ds->entity_names[e]);
    }
}

bool kgl_segment_token_is(const kgl_segment_view *sv, int t, const bool *is_true)
{
    return sv->entity[t] >= 0 && is_true[sv->entity[t]];
}

int kgl_relation_row_id(const kgl_dataset *ds, const kgl_config *cfg, const char *name)
{
    if (kgl_inverse_name(name)) { /* no relation's own name ends so */
        if (!cfg->reciprocal) return -1; /* no inverse rows were trained */
        char *base = kgl_strdup(name);
        base[strlen(name) - strlen(KGL_INVERSE_SUFFIX)] = 0;
        int r = kgl_dataset_relation_id(ds, base);
        free(base);
        return r < 0 ? -1 : ds->n_relations + r;
    }
    return kgl_dataset_relation_id(ds, name);
}

/* One forward pass without a tape record; the caller frees the tape. */
static void forward(const kgl_model *m, kgl_tape *t, kgl_forward *f)
{
    kgl_tape_init(t);
    t->recording = false;
    kgl_model_context(m, t, f);
}

void kgl_context_states(const kgl_model *m, kgl_real *states)
{
    kgl_tape t;
    kgl_forward f;
    forward(m, &t, &f);
    memcpy(states, f.context->data, (size_t)m->cfg.n_entities * m->cfg.dim * sizeof(kgl_real));
    kgl_tape_free(&t);
}

void kgl_scores_softmax(const kgl_real *scores, int n, kgl_real *probs)
{
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < n; j++) mx = fmax(mx, scores[j]);
    for (int j = 0; j < n; j++) sum += probs[j] = exp(scores[j] - mx);
    for (int j = 0; j < n; j++) probs[j] /= sum;
}

int kgl_true_answers(const kgl_triple *tr, int n_triples, int n_relations, int entity, int rel_row, int *out,
                     int cap)
{
    bool inverse = rel_row >= n_relations;
    int rel = inverse ? rel_row - n_relations : rel_row, count = 0;
    for (int k = 0; k < n_triples; k++) {
        if (tr[k].rel != rel || (inverse ? tr[k].tail : tr[k].head) != entity) continue;
        int answer = inverse ? tr[k].head : tr[k].tail;
        bool seen = false;
        for (int q = 0; q < count; q++) seen |= out[q] == answer;
        if (seen) continue;
        if (count == cap) break;
        out[count++] = answer;
    }
    return count;
}

/* ---------------------------------------------------------------- export -- */

/* Writes one TSV file atomically (kgl_outfile: a temporary beside it,
 * synced, then renamed over path). rows x cols numbers, each row after its
 * name (names NULL: numbers only), a header "name d0 d1 ..." when header is
 * true. */
static bool write_tsv(const char *dir, const char *file, bool header, const char *const *names, const kgl_real *x,
                      int rows, int cols, char *err, size_t cap)
{
    size_t len = strlen(dir) + strlen(file) + 2;
    char *path = kgl_xmalloc(len);
    snprintf(path, len, "%s/%s", dir, file);
    kgl_outfile o;
    bool ok = kgl_outfile_open(&o, path, err, cap);
    if (ok) {
        FILE *f = o.f;
        if (header) {
            fputs("name", f);
            for (int c = 0; c < cols; c++) fprintf(f, "\td%d", c);
            fputc('\n', f);
        }
        for (int r = 0; r < rows; r++) {
            if (names) fputs(names[r], f);
            for (int c = 0; c < cols; c++)
                /* KGL_REAL_DIGITS significant digits (17, or 9 in float32): every value reads back to the same bits */
                fprintf(f, "%s%.*g", names || c ? "\t" : "", KGL_REAL_DIGITS, (double)x[(size_t)r * cols + c]);
            fputc('\n', f);
        }
        ok = kgl_outfile_commit(&o, err, cap);
    }
    free(path);
    return ok;
}

/* names only, one a line, no header: the projector's single-column metadata */
static bool write_names(const char *dir, const char *file, const char *const *names, int n, char *err, size_t cap)
{
    return write_tsv(dir, file, false, names, NULL, n, 0, err, cap);
}

const char *const kgl_export_files[KGL_EXPORT_FILES] = {"entities.tsv", "relations.tsv",       "context.tsv",
                                                         "vectors.tsv",  "context_vectors.tsv", "metadata.tsv"};

bool kgl_export_tsv(const kgl_model *m, const kgl_dataset *ds, const char *dir, char *err, size_t cap)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, cap, "%s: cannot create the folder: %s", dir, strerror(errno));
        return false;
    }
    int n = m->cfg.n_entities, d = m->cfg.dim, rows = kgl_config_relation_rows(&m->cfg);
    const char *const *ents = (const char *const *)ds->entity_names;
    char **rel_names = kgl_xmalloc((size_t)rows * sizeof *rel_names);
    for (int r = 0; r < rows; r++) {
        char buf[4096];
        kgl_relation_row_name(ds, r, buf, sizeof buf);
        rel_names[r] = kgl_strdup(buf);
    }
    kgl_real *C = kgl_xmalloc((size_t)n * d * sizeof(kgl_real));
    kgl_context_states(m, C);
    const kgl_real *E = m->entity_emb->data, *R = m->relation_emb->data;
    const char *const *file = kgl_export_files;
    bool ok = write_tsv(dir, file[0], true, ents, E, n, d, err, cap) &&
              write_tsv(dir, file[1], true, (const char *const *)rel_names, R, rows, d, err, cap) &&
              write_tsv(dir, file[2], true, ents, C, n, d, err, cap) &&
              write_tsv(dir, file[3], false, NULL, E, n, d, err, cap) &&
              write_tsv(dir, file[4], false, NULL, C, n, d, err, cap) &&
              write_names(dir, file[5], ents, n, err, cap);
    for (int r = 0; r < rows; r++) free(rel_names[r]);
    free(rel_names);
    free(C);
    return ok;
}

/* max |T[i, c]| over the rows, and with `pair` also over column c + stride */
static double max_abs_cols(const kgl_tensor *T, int c, int stride, bool pair)
{
    double mx = 0;
    for (int i = 0; i < T->rows; i++) {
        const kgl_real *row = T->data + (size_t)i * T->cols;
        mx = fmax(mx, fabs(row[c]));
        if (pair) mx = fmax(mx, fabs(row[c + stride]));
    }
    return mx;
}

/* The first non-finite value of n doubles, or -1. */
static long first_nonfinite(const kgl_real *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return (long)i;
    return -1;
}

bool kgl_model_finite(const kgl_model *m, const char *where, char *err, size_t cap)
{
    kgl_tape t;
    kgl_tape_init(&t);
    t.recording = false;
    t.keep_attention = true;
    kgl_forward f;
    kgl_model_context(m, &t, &f);
    bool ok = true;
    int n = m->cfg.n_entities, d = m->cfg.dim;
    for (int h = 0; h < m->cfg.heads && ok; h++) {
        if (!f.attn[h]) continue;
        long i = first_nonfinite(f.attn[h]->data, kgl_numel(f.attn[h]));
        if (i >= 0) {
            snprintf(err, cap,
                     "%s: the attention of head %d (tensor A_%d) is %g at [%ld, %ld]: the parameters are too large "
                     "for finite arithmetic",
                     where, h, h, f.attn[h]->data[i], i / n, i % n);
            ok = false;
        }
    }
    if (ok) {
        long i = first_nonfinite(f.context->data, kgl_numel(f.context));
        if (i >= 0) {
            snprintf(err, cap, "%s: the contextual states (tensor C) are %g at [%ld, %ld]: the parameters are too "
                     "large for finite arithmetic", where, f.context->data[i], i / d, i % d);
            ok = false;
        }
    }
    if (ok) {
        /* every readout score is at most this bound in size: Σ_c max|C[·,c]| max|R[·,c]| max|E[·,c]|
           feature by feature; with the complex readout a pair's v_re e_re + v_im e_im is four
           products c r e, each at most the product of the pair's largest |C|, |R| and |E| */
        const kgl_tensor *C = f.context, *R = m->relation_emb, *E = m->entity_emb;
        bool complex = m->cfg.readout == KGL_READOUT_COMPLEX;
        int groups = complex ? d / 2 : d;
        double bound = 0;
        for (int c = 0; c < groups; c++)
            bound += (complex ? 4 : 1) * max_abs_cols(C, c, groups, complex) * max_abs_cols(R, c, groups, complex) *
                     max_abs_cols(E, c, groups, complex);
        if (!(bound < 1e300)) {
            snprintf(err, cap, "%s: the readout scores (tensor scores, C[i].R[r].E[j]) can reach %g: the parameters "
                     "are too large for finite arithmetic", where, bound);
            ok = false;
        }
    }
    kgl_tape_free(&t);
    return ok;
}
