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

double test_loss(const kgl_model *m, kgl_tape *t, const kgl_batch *b, const kgl_regularisers *reg, kgl_forward *f)
{
    kgl_tape_reset(t);
    t->recording = false;
    kgl_model_loss_reg(m, t, b, NULL, reg, f);
    return f->loss->data[0];
}
