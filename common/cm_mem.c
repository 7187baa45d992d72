/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocation wrappers. Each thread owns one cache-line-sized counter slot (so accounting never
 * bounces a shared line); cm_mem_used() sums the slots. Sizes come from malloc_usable_size(),
 * which jemalloc and glibc both provide, so no header is prepended to allocations.
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"

#include "common/cm_atomic.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CM_MEM_SLOTS 256

struct cm_mem_slot {
    _Atomic int64_t bytes;
    char pad[64 - sizeof(int64_t)];
};

static struct cm_mem_slot cm_mem_slots[CM_MEM_SLOTS] __attribute__((aligned(64)));
static _Atomic unsigned cm_mem_next_slot;
static __thread struct cm_mem_slot *cm_mem_my_slot;

static struct cm_allocators cm_alloc = {malloc, calloc, realloc, free};
static int cm_alloc_custom;

void cm_mem_set_allocators(const struct cm_allocators *a) {
    cm_alloc = *a;
    cm_alloc_custom = 1;
}

static inline void cm_mem_account(int64_t delta) {
    struct cm_mem_slot *s = cm_mem_my_slot;
    if (s == NULL) {
        unsigned i = cm_atomic_add_relaxed(&cm_mem_next_slot, 1u);
        s = cm_mem_my_slot = &cm_mem_slots[i % CM_MEM_SLOTS];
    }
    cm_atomic_add_relaxed(&s->bytes, delta);
}

static inline size_t cm_mem_size(void *p) {
    return (p && !cm_alloc_custom) ? malloc_usable_size(p) : 0;
}

static void cm_mem_oom(size_t size) {
    char msg[96];
    int n = snprintf(msg, sizeof(msg), "crescent: out of memory allocating %zu bytes\n", size);
    if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
        /* nothing more to do */
    }
    abort();
}

void *cm_try_malloc(size_t size) {
    void *p = cm_alloc.malloc_fn(size ? size : 1);
    cm_mem_account((int64_t)cm_mem_size(p));
    return p;
}

void *cm_try_calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = cm_alloc.calloc_fn(n ? n : 1, size ? size : 1);
    cm_mem_account((int64_t)cm_mem_size(p));
    return p;
}

void *cm_try_realloc(void *p, size_t size) {
    size_t old = cm_mem_size(p);
    void *q = cm_alloc.realloc_fn(p, size ? size : 1);
    if (q)
        cm_mem_account((int64_t)cm_mem_size(q) - (int64_t)old);
    return q;
}

void *cm_malloc(size_t size) {
    void *p = cm_try_malloc(size);
    if (!p)
        cm_mem_oom(size);
    return p;
}

void *cm_calloc(size_t n, size_t size) {
    void *p = cm_try_calloc(n, size);
    if (!p)
        cm_mem_oom(n * size);
    return p;
}

void *cm_realloc(void *p, size_t size) {
    void *q = cm_try_realloc(p, size);
    if (!q)
        cm_mem_oom(size);
    return q;
}

char *cm_strndup(const char *s, size_t len) {
    char *d = cm_malloc(len + 1);
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *cm_strdup(const char *s) {
    return cm_strndup(s, strlen(s));
}

void cm_free(void *p) {
    if (!p)
        return;
    int saved = errno;
    cm_mem_account(-(int64_t)cm_mem_size(p));
    cm_alloc.free_fn(p);
    errno = saved;
}

size_t cm_mem_used(void) {
    int64_t sum = 0;
    for (int i = 0; i < CM_MEM_SLOTS; i++)
        sum += cm_atomic_load_relaxed(&cm_mem_slots[i].bytes);
    return sum > 0 ? (size_t)sum : 0;
}

/* Present only when jemalloc is linked in (the server); NULL otherwise. */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
    __attribute__((weak));

const char *cm_mem_allocator_name(void) {
    if (cm_alloc_custom)
        return "custom";
    return mallctl ? "jemalloc" : "libc";
}
