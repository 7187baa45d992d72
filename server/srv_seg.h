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

/* Stops the reclaimer, unmaps and frees the segment. Every block must be freed first. NULL is fine.
 */
void srv_seg_destroy(struct srv_seg *seg);

/*
 * A master started with --memory 0 has no segment: seg is NULL, and srv_seg_alloc (-ENOSPC),
 * srv_seg_stats (zeros, memfd -1), srv_seg_used / srv_seg_size (0) and srv_seg_stop_reclaimer
 * accept that NULL; nothing else is ever called on it, since no block exists.
 */

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
    uint64_t resident;     /* bytes of the memfd backed by memory now (allocated pages) */
    uint64_t reclaimed;    /* bytes of free pages returned to the kernel so far */
};

/* Fills *st. Takes the allocator lock briefly. */
void srv_seg_stats(struct srv_seg *seg, struct srv_seg_stats *st);

/* Bytes currently allocated (lock-free read, approximate). */
uint64_t srv_seg_used(const struct srv_seg *seg);

/* Total managed bytes. */
uint64_t srv_seg_size(const struct srv_seg *seg);

/* Start of the mapping (block offsets are relative to it), NULL for a NULL segment. */
char *srv_seg_base(const struct srv_seg *seg);

/* The backing memfd (owned by the segment), -1 for a NULL segment. */
int srv_seg_memfd(const struct srv_seg *seg);

/*
 * Returns the pages of free space to the kernel (punches holes in the memfd): every 64 KiB
 * granule that no allocated block overlaps, that was written since it was last punched, and
 * that has been free for at least min_age_ms. Works in batches and releases the allocator lock
 * while it punches; an allocation that lands on a granule being punched waits for that batch.
 * Never touches an allocated (or pinned) block. Returns the bytes punched. Thread-safe; meant
 * for a background thread (srv_seg_start_reclaimer), not the request path. If the kernel
 * refuses to punch, logs once and stops reclaiming.
 */
uint64_t srv_seg_reclaim(struct srv_seg *seg, uint32_t min_age_ms);

/* Called by the reclaimer thread after each pass (no segment lock held). */
typedef void srv_seg_tick_cb(void);

/*
 * Starts the background reclaimer: a thread that every period_ms runs
 * srv_seg_reclaim(seg, min_age_ms) and then tick (may be NULL). Returns 0, -EALREADY, or the
 * pthread_create error as -errno. Stopped by srv_seg_stop_reclaimer() or srv_seg_destroy().
 */
int srv_seg_start_reclaimer(struct srv_seg *seg, unsigned period_ms, unsigned min_age_ms,
                            srv_seg_tick_cb *tick);

/* Stops and joins the reclaimer thread; no-op when none runs. */
void srv_seg_stop_reclaimer(struct srv_seg *seg);

#endif
