/* arena.c — the bump allocator activations and the tape live in.
 *
 * Growth happens only while the arena has not yet seen its largest step:
 * kgl_arena_alloc moves on to the next block of the chain when the current
 * one is full, and chains a new block only past the end of the chain.
 * kgl_arena_reset goes back to the first block and keeps them all: a step
 * that asks for the same sizes in the same order (every training step of
 * one configuration) lands in the same blocks, so it allocates nothing and
 * touches no page for the first time (on these machines a first touch costs
 * far more than reusing memory). */
#include <stdlib.h>
#include <string.h>

#include "kgl/engine.h"
#include "internal.h"

#define ALIGN 64

struct kgl_arena_block {
    kgl_arena_block *next;
    size_t cap, used;
    unsigned char *mem; /* aligned start of the usable bytes */
    void *raw;          /* what malloc returned */
};

static kgl_arena_block *block_new(kgl_arena *a, size_t cap)
{
    kgl_arena_block *b = kgl_xmalloc(sizeof *b);
    void *raw = kgl_xmalloc_for(cap + ALIGN, "the activations of a step (the arena)");
    b->raw = raw;
    b->mem = (unsigned char *)(((uintptr_t)raw + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
    b->cap = cap;
    b->used = 0;
    b->next = NULL;
    a->mallocs++;
    return b;
}

void *kgl_arena_alloc(kgl_arena *a, size_t bytes)
{
    size_t need = (bytes + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (need == 0) need = ALIGN;
    kgl_arena_block *b = a->current;
    while (b && b->cap - b->used < need) { /* the next block of the chain, emptied by the last reset */
        b = b->next;
        if (b) b->used = 0;
    }
    if (!b) { /* past the end of the chain: a new block after the last one */
        size_t cap = need > (1u << 20) ? need : (1u << 20);
        if (a->last && cap < 2 * a->last->cap) cap = 2 * a->last->cap;
        b = block_new(a, cap);
        if (a->last) a->last->next = b;
        else a->blocks = b;
        a->last = b;
    }
    a->current = b;
    void *p = b->mem + b->used;
    b->used += need;
    a->used += need;
    if (a->used > a->high_water) a->high_water = a->used;
    return p;
}

void *kgl_arena_zalloc(kgl_arena *a, size_t bytes)
{
    void *p = kgl_arena_alloc(a, bytes);
    memset(p, 0, bytes);
    return p;
}

static void free_chain(kgl_arena_block *b)
{
    while (b) {
        kgl_arena_block *next = b->next;
        free(b->raw);
        free(b);
        b = next;
    }
}

void kgl_arena_reset(kgl_arena *a)
{
    a->current = a->blocks;
    if (a->blocks) a->blocks->used = 0;
    a->used = 0;
}

void kgl_arena_free(kgl_arena *a)
{
    free_chain(a->blocks);
    a->blocks = a->current = a->last = NULL;
    a->used = a->high_water = 0;
}
