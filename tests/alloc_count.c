/* alloc_count.c — counts every malloc, calloc and realloc the test binary
 * makes (it is linked with -Wl,--wrap=malloc,...), so a test can assert that
 * a training step allocates nothing. */
#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
long test_alloc_count(void);

static long allocations;

void *__wrap_malloc(size_t n)
{
    allocations++;
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    allocations++;
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    allocations++;
    return __real_realloc(p, n);
}

long test_alloc_count(void) { return allocations; }
