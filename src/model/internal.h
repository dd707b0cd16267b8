/* internal.h — what the model layer's sources share and a program never
 * calls: the layer's evaluation rule a block at a time, which the heads'
 * measurements (heads.c) read the weights of. */
#ifndef KGL_MODEL_INTERNAL_H
#define KGL_MODEL_INTERNAL_H

#include "kgl/model.h"

/* The graph a --context graph model attends over; a clear death without one. */
const kgl_graph *kgl_model_graph(const kgl_model *m);

/* Evaluation's rule, in blocks: the questions (entity[k], asked[k]) of a
   --context graph model (entity NULL: entity k; asked NULL: no relation
   asked), each attending over itself and the first K of its edges in the
   fixed order, a block of them at a time on a tape of its own, so memory
   stays O(block · K · d). Their states go to states [n, d] (NULL: not
   kept); each block's forward is shown to each_block (NULL: none) with ctx. */
void kgl_layer_in_blocks(const kgl_model *m, kgl_pool *pool, const int *entity, const int *asked, int n,
                         kgl_real *states, void (*each_block)(const kgl_forward *f, void *ctx), void *ctx);

#endif
