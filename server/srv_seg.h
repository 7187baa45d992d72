/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The master's embedded segment: one memfd-backed shared mapping whose space is managed by a
 * TLSF offset allocator (common/cm_tlsf.h). Values of every object live here. Thread-safe: the
 * allocator is guarded by one mutex; the bytes of a block belong to whoever allocated it.
 */
#ifndef CRESCENT_SERVER_SRV_SEG_H
#define CRESCENT_SERVER_SRV_SEG_H

#include <stddef.h>
#include <stdint.h>

struct srv_seg;

/* One allocated block: base pointer and allocator handle (0 = none). */
struct srv_block {
    char *ptr;
    uint32_t handle;
};

/*
 * Creates a segment of size bytes (rounded up to the page size) named name, backed by a memfd
 * so co-located clients can map it later. Returns 0 and *out, or -errno. Caller destroys it.
 */
int srv_seg_create(const char *name, uint64_t size, struct srv_seg **out);

/* Unmaps and frees the segment. Every block must be freed first. NULL is fine. */
void srv_seg_destroy(struct srv_seg *seg);

/* Allocates len bytes. Returns 0 and fills *blk, or -ENOSPC when no block fits. */
int srv_seg_alloc(struct srv_seg *seg, uint64_t len, struct srv_block *blk);

/* Frees a block returned by srv_seg_alloc(); its bytes must no longer be referenced. */
void srv_seg_free(struct srv_seg *seg, uint32_t handle);

/* Capacity in bytes of an allocated block (>= the length asked for). */
uint64_t srv_seg_block_capacity(struct srv_seg *seg, uint32_t handle);

/*
 * Address of an allocated block's bytes. Lock-free. The handle must be live, and it must have
 * reached the calling thread through a lock that ordered it after the allocation.
 */
char *srv_seg_ptr(struct srv_seg *seg, uint32_t handle);

/* Figures for INFO and eviction. */
struct srv_seg_stats {
    uint64_t size;         /* bytes managed */
    uint64_t used;         /* bytes in allocated blocks */
    uint64_t largest_free; /* largest free block */
    uint64_t nallocs;      /* allocated values */
    double fragmentation;  /* 1 - largest_free / free */
    int memfd;             /* the backing fd, for sharing */
};

/* Fills *st. Takes the allocator lock briefly. */
void srv_seg_stats(struct srv_seg *seg, struct srv_seg_stats *st);

/* Bytes currently allocated (lock-free read, approximate). */
uint64_t srv_seg_used(const struct srv_seg *seg);

/* Total managed bytes. */
uint64_t srv_seg_size(const struct srv_seg *seg);

#endif
