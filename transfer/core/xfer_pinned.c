// SPDX-License-Identifier: Apache-2.0
/*
 * Bounded pool of pinned host staging buffers (Mooncake's PinnedBufferPool): tcp and shm copy
 * device memory through these buffers because sockets and memcpy cannot touch it. Pinned with
 * cudaMallocHost when CUDA is usable, pageable otherwise; at most max_cached free buffers are
 * kept, the rest are freed on put. Each buffer carries a small header in front of the bytes
 * handed out, recording how it was allocated.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cm_mem.h"
#include "transfer/core/xfer_pinned.h"

#define XFER_PINNED_MAGIC 0x50494e4e45444255ull /* "PINNEDBU" */
#define XFER_PINNED_HDR   64                    /* keeps the payload 64-byte aligned */

/* Header in front of every buffer handed out. */
struct xfer_pinned_hdr {
    uint64_t magic;
    size_t size;                  /* payload bytes */
    int pinned;                   /* from xfer__host_alloc */
    int oversize;                 /* not a pooled buffer: freed on put */
    struct xfer_pinned_hdr *next; /* free-list link while cached */
    void *raw;                    /* what xfer__host_alloc returned (h is raw, 64-aligned) */
};
_Static_assert(sizeof(struct xfer_pinned_hdr) <= XFER_PINNED_HDR, "pinned header too large");

struct xfer_pinned_pool {
    pthread_mutex_t lock;
    size_t buf_size;
    size_t max_cached;
    struct xfer_pinned_hdr *free_list; /* guarded by lock */
    struct xfer_pinned_stats st;       /* guarded by lock */
};

/*
 * Creates a pool. Returns 0 and sets *out, -EINVAL for buf_size 0, -ENOMEM on OOM. Caller
 * destroys with xfer_pinned_pool_destroy.
 */
int xfer_pinned_pool_create(size_t buf_size, size_t max_cached, struct xfer_pinned_pool **out) {
    if (buf_size == 0 || buf_size > SIZE_MAX - 2 * XFER_PINNED_HDR)
        return -EINVAL;
    struct xfer_pinned_pool *p = cm_try_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    p->buf_size = buf_size;
    p->max_cached = max_cached;
    *out = p;
    return 0;
}

static void xfer_pinned_free_hdr(struct xfer_pinned_hdr *h) {
    h->magic = 0;
    xfer__host_free(h->raw, h->pinned);
}

/* Destroys a pool and its cached buffers. NULL is accepted. Not thread-safe with users. */
void xfer_pinned_pool_destroy(struct xfer_pinned_pool *p) {
    if (!p)
        return;
    while (p->free_list) {
        struct xfer_pinned_hdr *h = p->free_list;
        p->free_list = h->next;
        xfer_pinned_free_hdr(h);
    }
    pthread_mutex_destroy(&p->lock);
    cm_free(p);
}

/* The pool's buffer size. Thread-safe (immutable). */
size_t xfer_pinned_pool_buf_size(const struct xfer_pinned_pool *p) {
    return p->buf_size;
}

/*
 * Hands out a buffer of at least len bytes, cached when possible. Returns NULL on OOM. The
 * caller returns it with xfer_pinned_put. Thread-safe.
 */
void *xfer_pinned_get(struct xfer_pinned_pool *p, size_t len) {
    struct xfer_pinned_hdr *h = NULL;
    int oversize = len > p->buf_size;

    if (!oversize) {
        pthread_mutex_lock(&p->lock);
        h = p->free_list;
        if (h) {
            p->free_list = h->next;
            p->st.cached--;
            p->st.hits++;
            p->st.gets++;
            p->st.outstanding++;
        }
        pthread_mutex_unlock(&p->lock);
        if (h)
            return (char *)h + XFER_PINNED_HDR;
    }
    size_t size = oversize ? len : p->buf_size;
    if (size > SIZE_MAX - 2 * XFER_PINNED_HDR)
        return NULL;
    int pinned;
    void *raw = xfer__host_alloc(size + 2 * XFER_PINNED_HDR, &pinned);
    if (!raw)
        return NULL;
    h = (struct xfer_pinned_hdr *)(((uintptr_t)raw + XFER_PINNED_HDR - 1) &
                                   ~(uintptr_t)(XFER_PINNED_HDR - 1));
    h->raw = raw;
    h->magic = XFER_PINNED_MAGIC;
    h->size = size;
    h->pinned = pinned;
    h->oversize = oversize;
    h->next = NULL;
    pthread_mutex_lock(&p->lock);
    p->st.gets++;
    p->st.allocs++;
    p->st.pageable += !pinned;
    p->st.outstanding++;
    pthread_mutex_unlock(&p->lock);
    return (char *)h + XFER_PINNED_HDR;
}

/*
 * Takes buf back: caches it when the pool has room, frees it otherwise. NULL is accepted; buf
 * is invalid for the caller afterwards. Thread-safe.
 */
void xfer_pinned_put(struct xfer_pinned_pool *p, void *buf) {
    if (!buf)
        return;
    struct xfer_pinned_hdr *h = (struct xfer_pinned_hdr *)((char *)buf - XFER_PINNED_HDR);
    int keep = 0;

    pthread_mutex_lock(&p->lock);
    p->st.outstanding--;
    if (!h->oversize && p->st.cached < p->max_cached) {
        h->next = p->free_list;
        p->free_list = h;
        p->st.cached++;
        keep = 1;
    } else {
        p->st.frees++;
    }
    pthread_mutex_unlock(&p->lock);
    if (!keep)
        xfer_pinned_free_hdr(h);
}

/* Snapshot of the counters. Thread-safe. */
void xfer_pinned_pool_stats(struct xfer_pinned_pool *p, struct xfer_pinned_stats *st) {
    pthread_mutex_lock(&p->lock);
    *st = p->st;
    pthread_mutex_unlock(&p->lock);
}

/* True for CUDA device memory. Thread-safe. */
int xfer__is_device(const void *addr) {
    struct xfer_mem_loc loc;
    xfer__mem_locate(addr, &loc);
    return loc.kind == XFER_MEM_CUDA;
}

static struct xfer_pinned_pool *xfer_staging;
static pthread_once_t xfer_staging_once = PTHREAD_ONCE_INIT;

static void xfer_staging_create(void) {
    const char *e = getenv("MC_PINNED_POOL_MAX");
    size_t max = e && *e ? (size_t)strtoull(e, NULL, 10) : 16;
    if (xfer_pinned_pool_create(XFER_STAGING_BUF, max, &xfer_staging) != 0)
        xfer_staging = NULL;
}

/* The process-wide staging pool, created on first use; NULL on OOM. Thread-safe. */
struct xfer_pinned_pool *xfer__staging_pool(void) {
    pthread_once(&xfer_staging_once, xfer_staging_create);
    return xfer_staging;
}

/*
 * Returns a host view of [src, src+len): src itself for host memory (*tok = NULL), else a
 * staging buffer filled by a device-to-host copy (*tok = the buffer). Returns NULL on OOM or a
 * failed copy (nothing to release). Release with xfer__stage_release(*tok). Thread-safe.
 */
const void *xfer__stage_out(const void *src, size_t len, void **tok) {
    *tok = NULL;
    if (len == 0 || !xfer__is_device(src))
        return src;
    struct xfer_pinned_pool *pool = xfer__staging_pool();
    void *buf = pool ? xfer_pinned_get(pool, len) : NULL;
    if (!buf)
        return NULL;
    if (xfer__cuda_memcpy(buf, src, len) != 0) {
        xfer_pinned_put(pool, buf);
        return NULL;
    }
    *tok = buf;
    return buf;
}

/*
 * Returns where to receive len bytes destined for dst: dst itself for host memory (*tok =
 * NULL), else a staging buffer (*tok = the buffer). NULL on OOM. Finish with
 * xfer__stage_in_done (or xfer__stage_release to abandon). Thread-safe.
 */
void *xfer__stage_in(void *dst, size_t len, void **tok) {
    *tok = NULL;
    if (len == 0 || !xfer__is_device(dst))
        return dst;
    struct xfer_pinned_pool *pool = xfer__staging_pool();
    void *buf = pool ? xfer_pinned_get(pool, len) : NULL;
    *tok = buf;
    return buf;
}

/*
 * Completes a staged receive: copies buf to dst (host-to-device) when tok is set, then releases
 * the buffer. Returns 0 or -CM_ETRANSFER_FAIL when the copy failed. Thread-safe.
 */
int xfer__stage_in_done(void *dst, void *buf, size_t len, void *tok) {
    if (!tok)
        return 0;
    int rc = xfer__cuda_memcpy(dst, buf, len);
    xfer__stage_release(tok);
    return rc;
}

/* Returns a staging buffer to the pool; NULL (host memory) is a no-op. Thread-safe. */
void xfer__stage_release(void *tok) {
    if (tok)
        xfer_pinned_put(xfer__staging_pool(), tok);
}
