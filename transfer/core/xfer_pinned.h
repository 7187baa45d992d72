/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU memory support inside the transfer engine: CUDA detection (xfer_cuda.c) and the bounded
 * pool of pinned host buffers that tcp and shm stage device memory through (xfer_pinned.c).
 *
 * DESIGN
 *   - libcudart is never linked: xfer_cuda.c loads it with dlopen on first use, so one binary
 *     runs on hosts with and without CUDA. The library is found as XFER_CUDART_LIB (a path, for
 *     tests and unusual installs), else libcudart.so, libcudart.so.13/.12/.11. Builds without
 *     the CUDA headers (HAVE_CUDA=0) compile stubs that always answer "cpu".
 *   - A pointer is device memory when cudaPointerGetAttributes says cudaMemoryTypeDevice;
 *     managed and host memory count as cpu (the CPU can touch them directly).
 *   - The pinned pool keeps at most max_cached free buffers of buf_size bytes. A get reuses a
 *     cached buffer or allocates one (cudaMallocHost, falling back to pageable memory when
 *     pinning fails or CUDA is absent); a put caches the buffer, or frees it when the pool is
 *     full. Requests larger than buf_size get a one-off buffer that a put frees.
 */
#ifndef CRESCENT_TRANSFER_CORE_XFER_PINNED_H
#define CRESCENT_TRANSFER_CORE_XFER_PINNED_H

#include <stddef.h>
#include <stdint.h>

/* Where a byte range lives. */
enum xfer_mem_kind {
    XFER_MEM_CPU = 0, /* host memory (pageable, pinned or CUDA managed) */
    XFER_MEM_CUDA = 1 /* CUDA device memory */
};

/* Location of an address: kind plus device ordinal (0 for cpu). */
struct xfer_mem_loc {
    enum xfer_mem_kind kind; /* XFER_MEM_CPU or XFER_MEM_CUDA */
    int device;              /* CUDA device ordinal, 0 for cpu */
};

/*
 * Loads the CUDA runtime once (thread-safe; later calls return the cached answer). Returns the
 * number of CUDA devices (>= 1) when usable, 0 when CUDA is compiled out, libcudart cannot be
 * loaded or no device exists. xfer__cuda_status() explains a 0.
 */
int xfer__cuda_init(void);

/*
 * One-line static description of the CUDA state for logs and INFO: "compiled out",
 * "libcudart not found", "no CUDA devices", "cuda: N device(s)". Thread-safe.
 */
const char *xfer__cuda_status(void);

/*
 * Classifies addr: sets *loc to CUDA + device for device memory, else CPU. Always CPU when CUDA
 * is unavailable. Returns 0 (never fails; an unknown pointer is cpu). Thread-safe. The string
 * form, xfer__mem_location() ("cpu:0", "cuda:1"), is declared in transfer/xfer_int.h and
 * defined in xfer_cuda.c.
 */
int xfer__mem_locate(const void *addr, struct xfer_mem_loc *loc);

/*
 * Copies len bytes between any combination of host and device memory (cudaMemcpyDefault,
 * synchronous); plain memcpy when CUDA is unavailable. Returns 0 or -CM_ETRANSFER_FAIL when
 * the CUDA copy fails. Thread-safe.
 */
int xfer__cuda_memcpy(void *dst, const void *src, size_t len);

/*
 * Allocates len bytes of pinned host memory; falls back to pageable memory (and sets *pinned to
 * 0) when CUDA is unavailable or pinning fails. Returns the buffer or NULL on OOM. Free with
 * xfer__host_free(buf, *pinned).
 */
void *xfer__host_alloc(size_t len, int *pinned);

/* Frees a buffer from xfer__host_alloc; pinned must be the value it reported. NULL is fine. */
void xfer__host_free(void *buf, int pinned);

/* The pinned staging pool (opaque). Thread-safe: one mutex guards the free list. */
struct xfer_pinned_pool;

/* Counters of a pool, for tests and INFO. */
struct xfer_pinned_stats {
    uint64_t gets;      /* successful gets */
    uint64_t hits;      /* gets served from the cache */
    uint64_t allocs;    /* buffers allocated (pooled size or oversize) */
    uint64_t pageable;  /* of those, pageable fallbacks */
    uint64_t frees;     /* buffers freed on put because the pool was full or oversize */
    size_t cached;      /* buffers currently cached */
    size_t outstanding; /* buffers handed out and not yet put back */
};

/*
 * Creates a pool of buf_size-byte buffers that caches at most max_cached free ones (0 caches
 * none). Returns 0 and sets *out, or -EINVAL (buf_size 0) / -ENOMEM. Destroy with
 * xfer_pinned_pool_destroy.
 */
int xfer_pinned_pool_create(size_t buf_size, size_t max_cached, struct xfer_pinned_pool **out);

/*
 * Destroys a pool and frees its cached buffers. Buffers still handed out must have been put
 * back; any still out are leaked (stats.outstanding counts them). NULL is accepted.
 */
void xfer_pinned_pool_destroy(struct xfer_pinned_pool *p);

/* The pool's buffer size. */
size_t xfer_pinned_pool_buf_size(const struct xfer_pinned_pool *p);

/*
 * Returns a buffer of at least len bytes (a pooled one when len <= buf_size, else a one-off), or
 * NULL on OOM. The caller owns it until xfer_pinned_put. Thread-safe.
 */
void *xfer_pinned_get(struct xfer_pinned_pool *p, size_t len);

/* Returns buf (from xfer_pinned_get on this pool) to the pool, or frees it. NULL is fine. */
void xfer_pinned_put(struct xfer_pinned_pool *p, void *buf);

/* Copies the pool's counters into *st. Thread-safe. */
void xfer_pinned_pool_stats(struct xfer_pinned_pool *p, struct xfer_pinned_stats *st);

/*
 * True when addr is CUDA device memory (xfer__mem_locate says XFER_MEM_CUDA). Transports that
 * move bytes with the CPU (tcp, shm) stage such ranges through xfer__staging_pool(). Thread-safe.
 */
int xfer__is_device(const void *addr);

/*
 * The process-wide staging pool for tcp and shm: XFER_STAGING_BUF (4 MiB) buffers, at most
 * MC_PINNED_POOL_MAX (default 16) cached. Created on first use; never destroyed (its cached
 * buffers live until exit). Returns NULL on OOM. Thread-safe.
 *
 * Staging pattern (D2H send): buf = xfer_pinned_get(pool, n); xfer__cuda_memcpy(buf, dev, n);
 * send buf; xfer_pinned_put(pool, buf). H2D receive: read into buf, then
 * xfer__cuda_memcpy(dev, buf, n). Chunk transfers larger than the buffer size.
 */
struct xfer_pinned_pool *xfer__staging_pool(void);

#define XFER_STAGING_BUF (4u << 20)

/*
 * Staging helpers for transports that move bytes with the CPU (tcp, shm). Each is a no-op for
 * host memory, so a transport can call them unconditionally:
 *
 *   send side   const void *p = xfer__stage_out(src, len, &tok);   (NULL: OOM or copy failed)
 *               ... send len bytes from p ...
 *               xfer__stage_release(tok);
 *   receive     void *p = xfer__stage_in(dst, len, &tok);          (NULL: OOM)
 *               ... receive len bytes into p ...
 *               rc = xfer__stage_in_done(dst, p, len, tok);        (copies to dst, releases)
 *
 * For device memory the bytes go through a buffer of xfer__staging_pool() (a one-off buffer
 * when len exceeds XFER_STAGING_BUF). *tok is NULL for host memory. Thread-safe.
 */
const void *xfer__stage_out(const void *src, size_t len, void **tok);
void *xfer__stage_in(void *dst, size_t len, void **tok);
int xfer__stage_in_done(void *dst, void *buf, size_t len, void *tok);
void xfer__stage_release(void *tok);

#endif
