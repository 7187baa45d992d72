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
 *
 * Page reclaim. Freed blocks keep their pages (the memfd's pages stay resident) until the
 * reclaimer punches them out of the memfd (fallocate PUNCH_HOLE, or madvise MADV_REMOVE), in the
 * background, never on the request path. The segment is cut into 64 KiB granules; each granule
 * counts the TLSF blocks (values and slabs) that overlap it and remembers whether it may hold
 * written pages (dirty). When its count drops to zero while dirty it is queued with the time;
 * srv_seg_reclaim() punches queued granules that have stayed free for min_age_ms (so churn
 * reuses warm pages), a batch at a time with the lock released. A granule being punched is
 * marked; an allocation that lands on it waits for the punch to end before its handle is
 * returned, so no written byte is ever lost, and an allocated or pinned block (a pinned value
 * is still an allocated block) is never punched.
 */
#include "common/fmacros.h"

#include "server/srv_seg.h"

#include "common/cm_atomic.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "common/cm_tlsf.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRV_SEG_ALIGN    8
#define SRV_SLAB_SIZE    (64u * 1024)
#define SRV_SLAB_MAX     2048u       /* largest value served from a slab */
#define SRV_SLAB_BIT     0x80000000u /* handle names a slab slot */
#define SRV_SLAB_IDX_MAX (1u << 19)  /* slab indices fit 19 bits */
#define SRV_OFF_CHUNK    4096u       /* TLSF handles per offset-table chunk */
#define SRV_OFF_CHUNKS   ((SRV_SLAB_BIT / SRV_OFF_CHUNK) + 1) /* chunks covering every handle */
#define SRV_GRAN_SHIFT   16                                   /* reclaim granule: 64 KiB */
#define SRV_RECLAIM_MAX  64 /* granules punched per lock release */

/* Reclaim state of a granule. */
enum {
    SRV_GRAN_DIRTY = 1,    /* may hold written pages */
    SRV_GRAN_QUEUED = 2,   /* in the reclaim queue */
    SRV_GRAN_PUNCHING = 4, /* being punched now; allocations landing here wait */
};

struct srv_gran {
    uint32_t nblk;     /* TLSF blocks overlapping the granule */
    uint32_t freed_ms; /* when nblk last dropped to 0 (ms since creation, wraps) */
    uint8_t flags;
};

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
    /* page reclaim, all under lock */
    struct srv_gran *gran; /* ngran granules */
    uint32_t ngran;
    uint32_t *rq; /* ring of queued granules, capacity ngran */
    uint32_t rq_head, rq_len;
    pthread_cond_t punch_cv; /* signalled when a punch batch ends */
    unsigned punch_waiters;
    int reclaim_off; /* punching is not supported: stop queueing */
    uint64_t base_ms;
    _Atomic uint64_t reclaimed; /* bytes returned to the kernel so far */
    /* the background reclaimer */
    pthread_t thread;
    int thread_started, thread_stop;
    pthread_cond_t thread_cv;
    unsigned period_ms, min_age_ms;
    srv_seg_tick_cb *tick;
};

/* Milliseconds since the segment was created, wrapping (ages are differences). */
static uint32_t srv_seg_now(const struct srv_seg *seg) {
    return (uint32_t)(cm_mono_ms() - seg->base_ms);
}

/* Counts a new block [off, off+len) on its granules. Returns 1 if one is being punched. */
static int srv_gran_hold(struct srv_seg *seg, uint64_t off, uint64_t len) {
    int punching = 0;
    for (uint64_t g = off >> SRV_GRAN_SHIFT; g <= (off + len - 1) >> SRV_GRAN_SHIFT; g++) {
        struct srv_gran *gr = &seg->gran[g];
        gr->nblk++;
        gr->flags |= SRV_GRAN_DIRTY;
        punching |= gr->flags & SRV_GRAN_PUNCHING;
    }
    return punching != 0;
}

/* Waits (lock released meanwhile) until no granule of [off, off+len) is being punched. */
static void srv_gran_wait(struct srv_seg *seg, uint64_t off, uint64_t len) {
    uint64_t first = off >> SRV_GRAN_SHIFT, last = (off + len - 1) >> SRV_GRAN_SHIFT;
    for (uint64_t g = first; g <= last; g++) {
        while (seg->gran[g].flags & SRV_GRAN_PUNCHING) {
            seg->punch_waiters++;
            pthread_cond_wait(&seg->punch_cv, &seg->lock);
            seg->punch_waiters--;
        }
    }
}

/* Counts a block's release; queues granules that became free and may hold pages. */
static void srv_gran_release(struct srv_seg *seg, uint64_t off, uint64_t len) {
    uint32_t now = 0;
    int have_now = 0;
    for (uint64_t g = off >> SRV_GRAN_SHIFT; g <= (off + len - 1) >> SRV_GRAN_SHIFT; g++) {
        struct srv_gran *gr = &seg->gran[g];
        if (--gr->nblk != 0 || !(gr->flags & SRV_GRAN_DIRTY) || seg->reclaim_off)
            continue;
        if (!have_now) {
            now = srv_seg_now(seg);
            have_now = 1;
        }
        gr->freed_ms = now;
        if (gr->flags & SRV_GRAN_QUEUED)
            continue;
        gr->flags |= SRV_GRAN_QUEUED;
        seg->rq[(seg->rq_head + seg->rq_len++) % seg->ngran] = (uint32_t)g;
    }
}

/* Allocates a TLSF block, counted on its granules (waiting out a punch). 0 when none fits. */
static uint32_t srv_seg_tlsf_alloc(struct srv_seg *seg, uint64_t len, uint64_t *off) {
    uint32_t h = cm_tlsf_alloc(seg->tlsf, len, off);
    if (!h)
        return 0;
    uint64_t size = cm_tlsf_block_size(seg->tlsf, h);
    if (srv_gran_hold(seg, *off, size))
        srv_gran_wait(seg, *off, size);
    return h;
}

/* Frees a TLSF block and releases its granules. */
static void srv_seg_tlsf_free(struct srv_seg *seg, uint32_t h) {
    srv_gran_release(seg, cm_tlsf_block_offset(seg->tlsf, h), cm_tlsf_block_size(seg->tlsf, h));
    cm_tlsf_free(seg->tlsf, h);
}

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
    uint64_t off;
    uint32_t h = srv_seg_tlsf_alloc(seg, SRV_SLAB_SIZE, &off);
    if (!h)
        return NULL;
    if (seg->nfree_idx == 0) { /* checked after the allocation, which may wait unlocked */
        srv_seg_tlsf_free(seg, h);
        return NULL;
    }
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
    srv_seg_tlsf_free(seg, sl->tlsf);
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
    seg->ngran = (uint32_t)((size + (1u << SRV_GRAN_SHIFT) - 1) >> SRV_GRAN_SHIFT);
    seg->gran = cm_calloc(seg->ngran, sizeof(*seg->gran));
    seg->rq = cm_malloc(seg->ngran * sizeof(*seg->rq));
    pthread_cond_init(&seg->punch_cv, NULL);
    pthread_cond_init(&seg->thread_cv, NULL);
    seg->base_ms = cm_mono_ms();
    *out = seg;
    return 0;
}

void srv_seg_destroy(struct srv_seg *seg) {
    if (!seg)
        return;
    srv_seg_stop_reclaimer(seg);
    cm_free(seg->gran);
    cm_free(seg->rq);
    pthread_cond_destroy(&seg->punch_cv);
    pthread_cond_destroy(&seg->thread_cv);
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
    if (!seg)
        return -ENOSPC;
    if (len == 0)
        len = 1;
    pthread_mutex_lock(&seg->lock);
    if (len <= SRV_SLAB_MAX && srv_slab_alloc(seg, srv_slab_class_of(len), blk) == 0)
        goto done;
    uint32_t h = srv_seg_tlsf_alloc(seg, len, &off);
    if (!h) {
        rc = -ENOSPC;
        goto done;
    }
    if (h / SRV_OFF_CHUNK >= seg->noff_chunks) { /* cannot happen; refuse rather than overrun */
        srv_seg_tlsf_free(seg, h);
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
        srv_seg_tlsf_free(seg, handle);
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
    if (!seg) {
        memset(st, 0, sizeof(*st));
        st->memfd = -1;
        return;
    }
    pthread_mutex_lock(&seg->lock);
    cm_tlsf_get_stats(seg->tlsf, &ts);
    pthread_mutex_unlock(&seg->lock);
    st->size = ts.size;
    st->used = ts.used;
    st->largest_free = ts.largest_free;
    st->nallocs = cm_atomic_load_relaxed(&seg->nobjects);
    st->fragmentation = ts.fragmentation;
    st->memfd = seg->memfd;
    struct stat sb;
    st->resident = fstat(seg->memfd, &sb) == 0 ? (uint64_t)sb.st_blocks * 512 : 0;
    st->reclaimed = cm_atomic_load_relaxed(&seg->reclaimed);
}

uint64_t srv_seg_used(const struct srv_seg *seg) {
    return seg ? cm_atomic_load_relaxed(&seg->used) : 0;
}

uint64_t srv_seg_size(const struct srv_seg *seg) {
    return seg ? seg->size : 0;
}

char *srv_seg_base(const struct srv_seg *seg) {
    return seg ? seg->base : NULL;
}

int srv_seg_memfd(const struct srv_seg *seg) {
    return seg ? seg->memfd : -1;
}

/* ---------------------------------------------------------------- page reclaim */

static int srv_u32_cmp(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Returns [off, off+len) of the memfd to the kernel. 0 or -errno. Lock not held. */
static int srv_seg_punch_range(struct srv_seg *seg, uint64_t off, uint64_t len) {
    if (fallocate(seg->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) ==
        0)
        return 0;
    if (madvise(seg->base + off, len, MADV_REMOVE) == 0)
        return 0;
    return -errno;
}

/* Punches the sorted granules g[0..n), merged into ranges. Returns bytes punched or -errno. */
static int64_t srv_seg_punch(struct srv_seg *seg, uint32_t *g, int n) {
    int64_t total = 0;
    qsort(g, (size_t)n, sizeof(*g), srv_u32_cmp);
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && g[j] == g[j - 1] + 1)
            j++;
        uint64_t off = (uint64_t)g[i] << SRV_GRAN_SHIFT;
        uint64_t end = (uint64_t)(g[j - 1] + 1) << SRV_GRAN_SHIFT;
        if (end > seg->size)
            end = seg->size;
        int rc = srv_seg_punch_range(seg, off, end - off);
        if (rc < 0)
            return rc;
        total += (int64_t)(end - off);
        i = j;
    }
    return total;
}

/* Pops up to SRV_RECLAIM_MAX granules free for min_age_ms into g, marked punching. Lock held. */
static int srv_seg_take_batch(struct srv_seg *seg, uint32_t min_age_ms, uint32_t *g) {
    uint32_t now = srv_seg_now(seg);
    int n = 0, rotated = 0;
    while (n < SRV_RECLAIM_MAX && seg->rq_len > 0) {
        uint32_t idx = seg->rq[seg->rq_head];
        struct srv_gran *gr = &seg->gran[idx];
        if (gr->nblk == 0 && now - gr->freed_ms < min_age_ms) {
            /* Freed again lately (or queued lately): to the back, a bounded number of times. */
            if (++rotated > SRV_RECLAIM_MAX)
                break;
            seg->rq_head = (seg->rq_head + 1) % seg->ngran;
            seg->rq[(seg->rq_head + seg->rq_len - 1) % seg->ngran] = idx;
            continue;
        }
        seg->rq_head = (seg->rq_head + 1) % seg->ngran;
        seg->rq_len--;
        gr->flags &= (uint8_t)~SRV_GRAN_QUEUED;
        if (gr->nblk != 0 || !(gr->flags & SRV_GRAN_DIRTY))
            continue; /* in use again; queued anew when freed */
        gr->flags = (uint8_t)((gr->flags & ~SRV_GRAN_DIRTY) | SRV_GRAN_PUNCHING);
        g[n++] = idx;
    }
    return n;
}

uint64_t srv_seg_reclaim(struct srv_seg *seg, uint32_t min_age_ms) {
    uint32_t g[SRV_RECLAIM_MAX];
    uint64_t total = 0;
    pthread_mutex_lock(&seg->lock);
    while (!seg->reclaim_off) {
        int n = srv_seg_take_batch(seg, min_age_ms, g);
        if (n == 0)
            break;
        pthread_mutex_unlock(&seg->lock);
        int64_t rc = srv_seg_punch(seg, g, n);
        pthread_mutex_lock(&seg->lock);
        for (int i = 0; i < n; i++)
            seg->gran[g[i]].flags &= (uint8_t)~SRV_GRAN_PUNCHING;
        if (seg->punch_waiters)
            pthread_cond_broadcast(&seg->punch_cv);
        if (rc < 0) {
            cm_log(CM_LOG_WARNING, "segment",
                   "cannot return free segment pages to the kernel (%s); reclaim disabled",
                   strerror((int)-rc));
            seg->reclaim_off = 1;
            break;
        }
        total += (uint64_t)rc;
        cm_atomic_add_relaxed(&seg->reclaimed, (uint64_t)rc);
    }
    pthread_mutex_unlock(&seg->lock);
    return total;
}

static void *srv_seg_reclaimer_main(void *arg) {
    struct srv_seg *seg = arg;
    pthread_mutex_lock(&seg->lock);
    while (!seg->thread_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)(seg->period_ms % 1000) * 1000000L;
        ts.tv_sec += (time_t)(seg->period_ms / 1000) + ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&seg->thread_cv, &seg->lock, &ts);
        if (seg->thread_stop)
            break;
        pthread_mutex_unlock(&seg->lock);
        srv_seg_reclaim(seg, seg->min_age_ms);
        if (seg->tick)
            seg->tick();
        pthread_mutex_lock(&seg->lock);
    }
    pthread_mutex_unlock(&seg->lock);
    return NULL;
}

int srv_seg_start_reclaimer(struct srv_seg *seg, unsigned period_ms, unsigned min_age_ms,
                            srv_seg_tick_cb *tick) {
    if (seg->thread_started)
        return -EALREADY;
    seg->period_ms = period_ms ? period_ms : 1;
    seg->min_age_ms = min_age_ms;
    seg->tick = tick;
    seg->thread_stop = 0;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_destroy(&seg->thread_cv);
    pthread_cond_init(&seg->thread_cv, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&seg->thread, NULL, srv_seg_reclaimer_main, seg);
    if (rc != 0)
        return -rc;
    seg->thread_started = 1;
    return 0;
}

void srv_seg_stop_reclaimer(struct srv_seg *seg) {
    if (!seg || !seg->thread_started)
        return;
    pthread_mutex_lock(&seg->lock);
    seg->thread_stop = 1;
    pthread_cond_signal(&seg->thread_cv);
    pthread_mutex_unlock(&seg->lock);
    pthread_join(seg->thread, NULL);
    seg->thread_started = 0;
}
