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
