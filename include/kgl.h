/* kgl.h — a minimal transformer layer over a knowledge graph, on a tiny
 * reverse-mode autodiff engine. The public interface of build/libkgl.a, in
 * one line for users who want everything; each layer also has its own header:
 *
 *   kgl/engine.h   the autodiff engine (RNG, arena, tape, ops, checks, optimisers)
 *   kgl/io.h       files: text lines, triples, JSON, safetensors, SVG
 *   kgl/model.h    the layer, training, evaluation, checkpoints
 *   kgl/studies.h  the demo's experiments and the embedded academic world */
#ifndef KGL_H
#define KGL_H

#include "kgl/engine.h"
#include "kgl/io.h"
#include "kgl/model.h"
#include "kgl/studies.h"

#endif
