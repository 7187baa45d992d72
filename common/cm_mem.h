/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocation wrappers with per-thread byte accounting (CONTRIBUTING.md, "Memory and ownership").
 * All project code allocates through these. The server links jemalloc, which replaces malloc; the
 * client library uses the allocator installed with cm_mem_set_allocators() (libc by default).
 *
 * Two families: cm_malloc & co. abort with a log line on OOM (server policy, no NULL checks);
 * cm_try_malloc & co. return NULL (client/transfer policy, CONTRIBUTING.md, "Errors").
 */
#ifndef CRESCENT_COMMON_CM_MEM_H
#define CRESCENT_COMMON_CM_MEM_H

#include <stddef.h>

/* Allocator hooks; every field must be set. */
struct cm_allocators {
    void *(*malloc_fn)(size_t);
    void *(*calloc_fn)(size_t, size_t);
    void *(*realloc_fn)(void *, size_t);
    void (*free_fn)(void *);
};

/*
 * Replaces the allocator used by every cm_* allocation. Call before any allocation is made:
 * memory from one allocator must not be freed by another. Not thread-safe.
 */
void cm_mem_set_allocators(const struct cm_allocators *a);

/* Allocate size bytes; aborts on OOM. Never returns NULL. Caller frees with cm_free(). */
void *cm_malloc(size_t size);
/* Zeroed array of n * size bytes; aborts on OOM or overflow. Caller frees with cm_free(). */
void *cm_calloc(size_t n, size_t size);
/* Resizes p (which may be NULL); aborts on OOM. The old pointer is invalid afterwards. */
void *cm_realloc(void *p, size_t size);
/* Duplicates a NUL-terminated string; aborts on OOM. Caller frees with cm_free(). */
char *cm_strdup(const char *s);
/* Duplicates len bytes of s and adds a NUL; aborts on OOM. Caller frees with cm_free(). */
char *cm_strndup(const char *s, size_t len);

/* As cm_malloc but returns NULL on OOM. */
void *cm_try_malloc(size_t size);
/* As cm_calloc but returns NULL on OOM or on n * size overflow. */
void *cm_try_calloc(size_t n, size_t size);
/* As cm_realloc but returns NULL on OOM, leaving p untouched. */
void *cm_try_realloc(void *p, size_t size);

/* Frees p (NULL is fine). Preserves errno. */
void cm_free(void *p);

/* Bytes currently allocated through cm_* by all threads (approximate, relaxed reads). */
size_t cm_mem_used(void);

/* Name of the allocator in use ("jemalloc-5.3.0" or "libc"), for INFO. */
const char *cm_mem_allocator_name(void);

#endif
