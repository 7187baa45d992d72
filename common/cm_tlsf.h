/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLSF-style offset allocator over an abstract range [0, size): it hands out offsets, never
 * touches the managed memory (which may be remote, shared or device memory) and keeps all of
 * its metadata out of band. Allocation and free are O(1): a two-level bitmap of segregated
 * free lists (first level log2 of the size, second level 32 linear subdivisions) with
 * good-fit search, and immediate coalescing of physical neighbours on free.
 * Not thread-safe: callers lock.
 */
#ifndef CRESCENT_COMMON_CM_TLSF_H
#define CRESCENT_COMMON_CM_TLSF_H

#include <stdint.h>

struct cm_tlsf;

/* A snapshot of the allocator's accounting. */
struct cm_tlsf_stats {
    uint64_t size;         /* managed bytes (the creation size rounded down to align) */
    uint64_t used;         /* bytes in allocated blocks (rounded sizes) */
    uint64_t free;         /* size - used */
    uint64_t largest_free; /* largest single free block */
    uint64_t nallocs;      /* blocks currently allocated */
    uint64_t nfree_blocks; /* free blocks */
    double fragmentation;  /* 1 - largest_free / free; 0 when free == 0 */
};

/*
 * Creates an allocator for [0, size) handing out offsets aligned to align (a power of two,
 * >= 8); size is rounded down to a multiple of align. Returns NULL on bad arguments (align not
 * a power of two or < 8, size < align). Metadata is allocated with cm_malloc (aborts on OOM).
 * Destroy with cm_tlsf_destroy().
 */
struct cm_tlsf *cm_tlsf_create(uint64_t size, uint32_t align);

/* Frees the allocator's metadata; outstanding handles become invalid. NULL is accepted. */
void cm_tlsf_destroy(struct cm_tlsf *t);

/*
 * Allocates len bytes rounded up to align (len 0 counts as align). On success stores the
 * block's offset in *offset and returns an opaque handle > 0 for cm_tlsf_free(); returns 0
 * when no free block is large enough (the caller evicts and retries). O(1): the request is
 * rounded up to the next size class, so any block found in that class fits; when that finds
 * nothing, the request's own class is also checked (a few blocks), so an exact fit such as
 * the whole range after everything was freed always succeeds. The metadata array may grow
 * (cm_realloc) when the number of blocks reaches a new high; steady state never allocates.
 */
uint32_t cm_tlsf_alloc(struct cm_tlsf *t, uint64_t len, uint64_t *offset);

/*
 * Allocates exactly [offset, offset + len) (len rounded up to align, offset a multiple of
 * align) when that range lies inside one free block: the restore path of the master, which
 * rebuilds a segment's allocations from a log. Returns the handle, or 0 when the range is
 * misaligned, out of bounds or overlaps an allocated block. O(distance in blocks from the
 * previous call's block), so ranges given in increasing offset order cost O(1) each.
 */
uint32_t cm_tlsf_alloc_at(struct cm_tlsf *t, uint64_t offset, uint64_t len);

/*
 * Frees the block named by handle and merges it with free physical neighbours. O(1).
 * Handles that are 0, out of range or already free are ignored.
 */
void cm_tlsf_free(struct cm_tlsf *t, uint32_t handle);

/* Returns the allocated (rounded) size of handle's block, or 0 for an invalid handle. */
uint64_t cm_tlsf_block_size(const struct cm_tlsf *t, uint32_t handle);

/* Returns the offset of handle's block, or UINT64_MAX for an invalid handle. */
uint64_t cm_tlsf_block_offset(const struct cm_tlsf *t, uint32_t handle);

/*
 * Fills *st. O(1) except largest_free, which walks one free list (the highest non-empty
 * class).
 */
void cm_tlsf_get_stats(const struct cm_tlsf *t, struct cm_tlsf_stats *st);

/*
 * Walks every block and free list and checks all invariants (contiguity, no two adjacent
 * free blocks, class membership, bitmaps, counters). Returns 0 or -CM_ECORRUPT. O(blocks);
 * for tests and debugging.
 */
int cm_tlsf_check(const struct cm_tlsf *t);

/* An allocated range for cm_tlsf_build(): offset and length in bytes. */
struct cm_tlsf_span {
    uint64_t off;
    uint64_t len;
};

/*
 * Creates an allocator for [0, size) (as cm_tlsf_create) in which the n spans are already
 * allocated, and stores each span's handle in handles[i] (for cm_tlsf_free). Used to rebuild
 * a segment's allocator from a snapshot. The spans must be sorted by offset, aligned to align,
 * non-empty (len is rounded up to align, as cm_tlsf_alloc does), non-overlapping and inside
 * the range; otherwise returns NULL and sets *err to -EINVAL (bad arguments) or -CM_ECORRUPT
 * (spans out of order, overlapping or outside). O(n). Destroy with cm_tlsf_destroy().
 */
struct cm_tlsf *cm_tlsf_build(uint64_t size, uint32_t align, const struct cm_tlsf_span *spans,
                              uint32_t n, uint32_t *handles, int *err);

/* Bytes of metadata per block record (for memory estimates). */
#define CM_TLSF_RECORD_BYTES 32u

#endif
