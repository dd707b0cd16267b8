/* arena.c — the bump allocator activations and the tape live in.
 *
 * Growth happens only while the arena has not yet seen its largest step:
 * kgl_arena_alloc chains a new block when the current one is full, and
 * kgl_arena_reset folds a chain into one block of the high-water size. A step
 * no larger than any before it therefore allocates nothing. */
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
    kgl_arena_block *b = malloc(sizeof *b);
    void *raw = malloc(cap + ALIGN);
    if (!b || !raw) kgl_die("out of memory: cannot allocate %zu bytes for the arena", cap);
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
    kgl_arena_block *b = a->blocks;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > (1u << 20) ? need : (1u << 20);
        if (b && cap < 2 * b->cap) cap = 2 * b->cap;
        kgl_arena_block *nb = block_new(a, cap);
        nb->next = b;
        a->blocks = b = nb;
    }
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
    if (a->blocks && a->blocks->next) {
        /* More than one block: replace them by one that holds the high water. */
        free_chain(a->blocks);
        a->blocks = block_new(a, a->high_water);
    }
    if (a->blocks) a->blocks->used = 0;
    a->used = 0;
}

void kgl_arena_free(kgl_arena *a)
{
    free_chain(a->blocks);
    a->blocks = NULL;
    a->used = a->high_water = 0;
}
