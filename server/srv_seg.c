/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Embedded segment: memfd mapping plus a mutex-guarded allocator.
 *
 * DESIGN. Values up to SRV_SLAB_MAX bytes are carved from 64 KiB slabs, one size class per
 * slab, so a small value costs no allocator record (the TLSF keeps a 32-byte record per
 * block). Slabs and larger values are TLSF blocks. A handle with the top bit set names a slab
 * slot (19 bits of slab index, 12 bits of slot); the slab table is allocated once at creation
 * and never moves, so srv_seg_ptr() resolves slab handles without the lock; TLSF handles are
 * resolved through an offset table of fixed chunks, also lock-free. Slab records and offsets
 * are written under the lock before their handles are handed out; callers publish handles to
 * other threads through the shard mutexes, which orders those writes before any read.
 */
#include "common/fmacros.h"

#include "server/srv_seg.h"

#include "common/cm_atomic.h"
#include "common/cm_mem.h"
#include "common/cm_tlsf.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define SRV_SEG_ALIGN    8
#define SRV_SLAB_SIZE    (64u * 1024)
#define SRV_SLAB_MAX     2048u       /* largest value served from a slab */
#define SRV_SLAB_BIT     0x80000000u /* handle names a slab slot */
#define SRV_SLAB_IDX_MAX (1u << 19)  /* slab indices fit 19 bits */
#define SRV_OFF_CHUNK    4096u       /* TLSF handles per offset-table chunk */
#define SRV_OFF_CHUNKS   ((SRV_SLAB_BIT / SRV_OFF_CHUNK) + 1) /* chunks covering every handle */

static const uint32_t srv_slab_classes[] = {16,  32,  48,  64,   80,   96,   112,  128,
                                            160, 192, 224, 256,  320,  384,  448,  512,
                                            640, 768, 896, 1024, 1280, 1536, 1792, 2048};
#define SRV_NCLASSES (sizeof(srv_slab_classes) / sizeof(srv_slab_classes[0]))

struct srv_slab {
    uint64_t off;  /* offset of the slab in the segment */
    uint32_t tlsf; /* TLSF handle of the slab's block */
    uint32_t size; /* slot size */
    uint32_t nslots;
    uint32_t nfree;
    uint32_t idx; /* index in the slab table */
    uint32_t cls;
    struct srv_slab *prev, *next; /* partial list of its class */
    uint64_t bitmap[];            /* 1 = free slot */
};

struct srv_seg {
    pthread_mutex_t lock;
    struct cm_tlsf *tlsf;
    char *base;
    uint64_t size;
    _Atomic uint64_t used;
    _Atomic uint64_t nobjects;
    int memfd;
    struct srv_slab **slabs; /* fixed table, nslab_cap entries */
    uint32_t nslab_cap;
    uint32_t *free_idx; /* stack of unused slab indices */
    uint32_t nfree_idx;
    struct srv_slab *partial[SRV_NCLASSES];
    uint64_t **offs; /* TLSF handle -> block offset, chunks of SRV_OFF_CHUNK, never moved */
    uint32_t noff_chunks;
};

static unsigned srv_slab_class_of(uint64_t len) {
    unsigned lo = 0, hi = SRV_NCLASSES - 1;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (srv_slab_classes[mid] >= len)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void srv_slab_unlink(struct srv_seg *seg, struct srv_slab *sl) {
    if (sl->prev)
        sl->prev->next = sl->next;
    else
        seg->partial[sl->cls] = sl->next;
    if (sl->next)
        sl->next->prev = sl->prev;
    sl->prev = sl->next = NULL;
}

static void srv_slab_push(struct srv_seg *seg, struct srv_slab *sl) {
    sl->prev = NULL;
    sl->next = seg->partial[sl->cls];
    if (sl->next)
        sl->next->prev = sl;
    seg->partial[sl->cls] = sl;
}

/* New slab of class cls, or NULL when the TLSF or the slab table is full. Lock held. */
static struct srv_slab *srv_slab_new(struct srv_seg *seg, unsigned cls) {
    if (seg->nfree_idx == 0)
        return NULL;
    uint64_t off;
    uint32_t h = cm_tlsf_alloc(seg->tlsf, SRV_SLAB_SIZE, &off);
    if (!h)
        return NULL;
    uint32_t size = srv_slab_classes[cls];
    uint32_t nslots = SRV_SLAB_SIZE / size;
    uint32_t words = (nslots + 63) / 64;
    struct srv_slab *sl = cm_calloc(1, sizeof(*sl) + words * sizeof(uint64_t));
    sl->off = off;
    sl->tlsf = h;
    sl->size = size;
    sl->nslots = sl->nfree = nslots;
    sl->cls = cls;
    for (uint32_t i = 0; i < nslots; i++)
        sl->bitmap[i / 64] |= 1ull << (i % 64);
    sl->idx = seg->free_idx[--seg->nfree_idx];
    seg->slabs[sl->idx] = sl;
    cm_atomic_add_relaxed(&seg->used, (uint64_t)SRV_SLAB_SIZE);
    srv_slab_push(seg, sl);
    return sl;
}

static void srv_slab_release(struct srv_seg *seg, struct srv_slab *sl) {
    srv_slab_unlink(seg, sl);
    cm_tlsf_free(seg->tlsf, sl->tlsf);
    seg->slabs[sl->idx] = NULL;
    seg->free_idx[seg->nfree_idx++] = sl->idx;
    cm_atomic_sub_relaxed(&seg->used, (uint64_t)SRV_SLAB_SIZE);
    cm_free(sl);
}

/* Takes a slot of class cls. Returns 0 and fills blk, or -ENOSPC. Lock held. */
static int srv_slab_alloc(struct srv_seg *seg, unsigned cls, struct srv_block *blk) {
    struct srv_slab *sl = seg->partial[cls];
    if (!sl && !(sl = srv_slab_new(seg, cls)))
        return -ENOSPC;
    uint32_t w = 0;
    while (sl->bitmap[w] == 0)
        w++;
    uint32_t slot = w * 64 + (uint32_t)__builtin_ctzll(sl->bitmap[w]);
    sl->bitmap[w] &= ~(1ull << (slot % 64));
    if (--sl->nfree == 0)
        srv_slab_unlink(seg, sl);
    blk->handle = SRV_SLAB_BIT | (sl->idx << 12) | slot;
    blk->ptr = seg->base + sl->off + (uint64_t)slot * sl->size;
    return 0;
}

static void srv_slab_free(struct srv_seg *seg, uint32_t handle) {
    struct srv_slab *sl = seg->slabs[(handle & ~SRV_SLAB_BIT) >> 12];
    uint32_t slot = handle & 0xfffu;
    sl->bitmap[slot / 64] |= 1ull << (slot % 64);
    if (++sl->nfree == 1)
        srv_slab_push(seg, sl);
    if (sl->nfree == sl->nslots)
        srv_slab_release(seg, sl);
}

int srv_seg_create(const char *name, uint64_t size, struct srv_seg **out) {
    long page = sysconf(_SC_PAGESIZE);
    size = (size + (uint64_t)page - 1) & ~((uint64_t)page - 1);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)size) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (base == MAP_FAILED) {
        int err = -errno;
        close(fd);
        return err;
    }
    struct srv_seg *seg = cm_calloc(1, sizeof(*seg));
    pthread_mutex_init(&seg->lock, NULL);
    seg->tlsf = cm_tlsf_create(size, SRV_SEG_ALIGN);
    if (!seg->tlsf) {
        munmap(base, size);
        close(fd);
        cm_free(seg);
        return -EINVAL;
    }
    seg->base = base;
    seg->size = size;
    seg->memfd = fd;
    uint64_t nslabs = size / SRV_SLAB_SIZE + 1;
    seg->nslab_cap = (uint32_t)(nslabs < SRV_SLAB_IDX_MAX ? nslabs : SRV_SLAB_IDX_MAX);
    seg->slabs = cm_calloc(seg->nslab_cap, sizeof(*seg->slabs));
    seg->free_idx = cm_malloc(seg->nslab_cap * sizeof(*seg->free_idx));
    for (uint32_t i = 0; i < seg->nslab_cap; i++)
        seg->free_idx[i] = seg->nslab_cap - 1 - i;
    seg->nfree_idx = seg->nslab_cap;
    /* A block is at least SRV_SEG_ALIGN bytes, so there are never more TLSF records alive
     * (handles in use) than size / SRV_SEG_ALIGN plus a few. */
    seg->noff_chunks = (uint32_t)((size / SRV_SEG_ALIGN + 64) / SRV_OFF_CHUNK + 1);
    if (seg->noff_chunks > SRV_OFF_CHUNKS)
        seg->noff_chunks = SRV_OFF_CHUNKS;
    seg->offs = cm_calloc(seg->noff_chunks, sizeof(*seg->offs));
    *out = seg;
    return 0;
}

void srv_seg_destroy(struct srv_seg *seg) {
    if (!seg)
        return;
    for (uint32_t i = 0; i < seg->nslab_cap; i++)
        cm_free(seg->slabs[i]);
    cm_free(seg->slabs);
    cm_free(seg->free_idx);
    for (uint32_t i = 0; i < seg->noff_chunks; i++)
        cm_free(seg->offs[i]);
    cm_free(seg->offs);
    cm_tlsf_destroy(seg->tlsf);
    munmap(seg->base, seg->size);
    close(seg->memfd);
    pthread_mutex_destroy(&seg->lock);
    cm_free(seg);
}

int srv_seg_alloc(struct srv_seg *seg, uint64_t len, struct srv_block *blk) {
    uint64_t off = 0;
    int rc = 0;
    if (len == 0)
        len = 1;
    pthread_mutex_lock(&seg->lock);
    if (len <= SRV_SLAB_MAX && srv_slab_alloc(seg, srv_slab_class_of(len), blk) == 0)
        goto done;
    uint32_t h = cm_tlsf_alloc(seg->tlsf, len, &off);
    if (!h) {
        rc = -ENOSPC;
        goto done;
    }
    if (h / SRV_OFF_CHUNK >= seg->noff_chunks) { /* cannot happen; refuse rather than overrun */
        cm_tlsf_free(seg->tlsf, h);
        rc = -ENOSPC;
        goto done;
    }
    cm_atomic_add_relaxed(&seg->used, cm_tlsf_block_size(seg->tlsf, h));
    uint64_t **chunk = &seg->offs[h / SRV_OFF_CHUNK];
    if (!*chunk)
        *chunk = cm_malloc(SRV_OFF_CHUNK * sizeof(uint64_t));
    (*chunk)[h % SRV_OFF_CHUNK] = off;
    blk->ptr = seg->base + off;
    blk->handle = h;
done:
    pthread_mutex_unlock(&seg->lock);
    if (rc == 0)
        cm_atomic_add_relaxed(&seg->nobjects, 1);
    return rc;
}

void srv_seg_free(struct srv_seg *seg, uint32_t handle) {
    pthread_mutex_lock(&seg->lock);
    if (handle & SRV_SLAB_BIT) {
        srv_slab_free(seg, handle);
    } else {
        cm_atomic_sub_relaxed(&seg->used, cm_tlsf_block_size(seg->tlsf, handle));
        cm_tlsf_free(seg->tlsf, handle);
    }
    pthread_mutex_unlock(&seg->lock);
    cm_atomic_sub_relaxed(&seg->nobjects, 1);
}

uint64_t srv_seg_block_capacity(struct srv_seg *seg, uint32_t handle) {
    if (handle & SRV_SLAB_BIT)
        return seg->slabs[(handle & ~SRV_SLAB_BIT) >> 12]->size;
    pthread_mutex_lock(&seg->lock);
    uint64_t cap = cm_tlsf_block_size(seg->tlsf, handle);
    pthread_mutex_unlock(&seg->lock);
    return cap;
}

char *srv_seg_ptr(struct srv_seg *seg, uint32_t handle) {
    if (handle & SRV_SLAB_BIT) {
        const struct srv_slab *sl = seg->slabs[(handle & ~SRV_SLAB_BIT) >> 12];
        return seg->base + sl->off + (uint64_t)(handle & 0xfffu) * sl->size;
    }
    return seg->base + seg->offs[handle / SRV_OFF_CHUNK][handle % SRV_OFF_CHUNK];
}

void srv_seg_stats(struct srv_seg *seg, struct srv_seg_stats *st) {
    struct cm_tlsf_stats ts;
    pthread_mutex_lock(&seg->lock);
    cm_tlsf_get_stats(seg->tlsf, &ts);
    pthread_mutex_unlock(&seg->lock);
    st->size = ts.size;
    st->used = ts.used;
    st->largest_free = ts.largest_free;
    st->nallocs = cm_atomic_load_relaxed(&seg->nobjects);
    st->fragmentation = ts.fragmentation;
    st->memfd = seg->memfd;
}

uint64_t srv_seg_used(const struct srv_seg *seg) {
    return cm_atomic_load_relaxed(&seg->used);
}

uint64_t srv_seg_size(const struct srv_seg *seg) {
    return seg->size;
}
