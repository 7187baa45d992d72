/* SPDX-License-Identifier: Apache-2.0 */
/* Embedded segment: memfd mapping plus a mutex-guarded TLSF offset allocator. */
#include "common/fmacros.h"

#include "server/srv_seg.h"

#include "common/cm_atomic.h"
#include "common/cm_mem.h"
#include "common/cm_tlsf.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define SRV_SEG_ALIGN 8

struct srv_seg {
    pthread_mutex_t lock;
    struct cm_tlsf *tlsf;
    char *base;
    uint64_t size;
    _Atomic uint64_t used;
    int memfd;
};

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
    *out = seg;
    return 0;
}

void srv_seg_destroy(struct srv_seg *seg) {
    if (!seg)
        return;
    cm_tlsf_destroy(seg->tlsf);
    munmap(seg->base, seg->size);
    close(seg->memfd);
    pthread_mutex_destroy(&seg->lock);
    cm_free(seg);
}

int srv_seg_alloc(struct srv_seg *seg, uint64_t len, struct srv_block *blk) {
    uint64_t off = 0;
    pthread_mutex_lock(&seg->lock);
    uint32_t h = cm_tlsf_alloc(seg->tlsf, len ? len : 1, &off);
    uint64_t cap = h ? cm_tlsf_block_size(seg->tlsf, h) : 0;
    pthread_mutex_unlock(&seg->lock);
    if (!h)
        return -ENOSPC;
    cm_atomic_add_relaxed(&seg->used, cap);
    blk->ptr = seg->base + off;
    blk->handle = h;
    return 0;
}

void srv_seg_free(struct srv_seg *seg, uint32_t handle) {
    pthread_mutex_lock(&seg->lock);
    uint64_t cap = cm_tlsf_block_size(seg->tlsf, handle);
    cm_tlsf_free(seg->tlsf, handle);
    pthread_mutex_unlock(&seg->lock);
    cm_atomic_sub_relaxed(&seg->used, cap);
}

uint64_t srv_seg_block_capacity(struct srv_seg *seg, uint32_t handle) {
    pthread_mutex_lock(&seg->lock);
    uint64_t cap = cm_tlsf_block_size(seg->tlsf, handle);
    pthread_mutex_unlock(&seg->lock);
    return cap;
}

void srv_seg_stats(struct srv_seg *seg, struct srv_seg_stats *st) {
    struct cm_tlsf_stats ts;
    pthread_mutex_lock(&seg->lock);
    cm_tlsf_get_stats(seg->tlsf, &ts);
    pthread_mutex_unlock(&seg->lock);
    st->size = ts.size;
    st->used = ts.used;
    st->largest_free = ts.largest_free;
    st->nallocs = ts.nallocs;
    st->fragmentation = ts.fragmentation;
    st->memfd = seg->memfd;
}

uint64_t srv_seg_used(const struct srv_seg *seg) {
    return cm_atomic_load_relaxed(&seg->used);
}

uint64_t srv_seg_size(const struct srv_seg *seg) {
    return seg->size;
}
