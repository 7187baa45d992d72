/* SPDX-License-Identifier: Apache-2.0 */
/*
 * offset_allocator_storage_backend: one preallocated file "kv_cache.data" of
 * MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES whose space a TLSF offset allocator (common/cm_tlsf.h)
 * hands out, and a journal "kv_cache.journal" of index entries: a PUT entry is appended once
 * the record is written, a DEL entry when an object goes. At open the journal is replayed
 * (a torn tail is counted and cut), the allocator is rebuilt from the live extents and the
 * journal is compacted, so unlike Mooncake's this layout keeps its objects across a restart.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "common/cm_tlsf.h"
#include "storage/sto_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DATA_NAME    "kv_cache.data"
#define JOURNAL_NAME "kv_cache.journal"

struct ob {
    int fd;  /* data file */
    int jfd; /* journal, O_APPEND */
    uint64_t capacity;
    struct cm_tlsf *tlsf;
    uint64_t journal_bytes;
    uint8_t *pend; /* DEL entries waiting for flush */
    size_t pend_len, pend_cap;
};

/* See sto_int.h. */
uint64_t sto__offset_compact_min = 64u << 20;
uint64_t sto__offset_compact_ratio = 4;
uint64_t sto__offset_compactions;

static int ext_cmp(const void *a, const void *b) {
    const struct sto_ent *x = *(struct sto_ent *const *)a, *y = *(struct sto_ent *const *)b;
    return x->rec_off < y->rec_off ? -1 : x->rec_off > y->rec_off;
}

/*
 * Rewrites the journal with one PUT entry per live object (sto__write_atomic: synced before
 * and after its rename) and reopens it. On an error before the rename the old journal stays in
 * place, still open for appends, and the next flush tries again; once the rename is done the
 * new journal is reopened even when the directory's fsync failed, whose error is returned.
 */
static int compact(struct sto *s) {
    struct ob *o = s->be;
    size_t len = 0, cap = 1 << 16;
    uint8_t *buf = cm_malloc(cap);
    size_t i;
    struct cm_ht_node *n, *tmp;
    for (unsigned sh = 0; sh < STO_SHARDS; sh++) {
        cm_ht_foreach_node(&s->shards[sh].ht, i, n, tmp) {
            struct sto_rec r;
            sto__ent_to_rec((struct sto_ent *)n, &r);
            size_t need = sto_ent_size(&r);
            if (len + need > cap)
                buf = cm_realloc(buf, cap = 2 * (len + need));
            len += sto_ent_encode(&r, buf + len);
        }
    }
    bool replaced;
    int rc = sto__write_atomic(s, JOURNAL_NAME, buf, len, &replaced);
    cm_free(buf);
    if (!replaced)
        return rc;
    __atomic_fetch_add(&sto__offset_compactions, 1, __ATOMIC_RELAXED);
    if (o->jfd >= 0)
        close(o->jfd);
    o->jfd = sto__open_file(s, JOURNAL_NAME, O_WRONLY | O_APPEND, false);
    o->journal_bytes = len;
    return o->jfd < 0 ? o->jfd : rc;
}

/* Replays the journal into the index. */
static void replay(struct sto *s, const uint8_t *j, size_t len) {
    struct ob *o = s->be;
    for (size_t pos = 0; pos < len;) {
        struct sto_rec r;
        int n = sto_ent_decode(j + pos, len - pos, &r);
        if (n <= 0) {
            sto__count_torn(s, 1); /* an entry cut by a crash: everything after it is lost */
            break;
        }
        pos += (size_t)n;
        struct sto_ent *old;
        if (r.flags == STO_REC_DEL) {
            old = sto__recovered_del(s, &r);
        } else if (r.rec_off + r.rec_len > o->capacity || (r.rec_off & (s->align - 1))) {
            sto__count_corrupt(s, 1);
            continue;
        } else {
            struct sto_ent *kept;
            old = sto__recovered(s, &r, 0, &kept);
        }
        if (old)
            sto__ent_free(old);
    }
}

/* Rebuilds the allocator from the indexed extents (carving them in offset order). */
static void rebuild(struct sto *s) {
    struct ob *o = s->be;
    size_t n = (size_t)s->keys, k = 0, i;
    struct sto_ent **v = cm_malloc(sizeof(*v) * (n ? n : 1));
    struct cm_ht_node *node, *tmp;
    for (unsigned sh = 0; sh < STO_SHARDS; sh++)
        cm_ht_foreach_node(&s->shards[sh].ht, i, node, tmp) v[k++] = (struct sto_ent *)node;
    qsort(v, n, sizeof(*v), ext_cmp);
    uint32_t *fill = cm_malloc(sizeof(*fill) * (n + 1));
    size_t nfill = 0;
    uint64_t pos = 0;
    for (k = 0; k < n; k++) {
        struct sto_ent *e = v[k];
        uint64_t off;
        if (e->rec_off < pos) { /* overlaps an earlier extent: the journal lies */
            sto__count_corrupt(s, 1);
            struct sto_rec r = {.key = e->key, .key_len = e->klen, .seq = e->seq};
            sto__ent_free(sto__recovered_del(s, &r));
            continue;
        }
        if (e->rec_off > pos)
            fill[nfill++] = cm_tlsf_alloc(o->tlsf, e->rec_off - pos, &off);
        e->loc = cm_tlsf_alloc(o->tlsf, e->rec_len, &off);
        pos = e->rec_off + e->rec_len;
    }
    for (k = 0; k < nfill; k++)
        cm_tlsf_free(o->tlsf, fill[k]);
    cm_free(fill);
    cm_free(v);
}

static int ob_open(struct sto *s, char *err, size_t errlen) {
    struct ob *o = cm_calloc(1, sizeof(*o));
    o->jfd = -1;
    s->be = o;
    o->fd = sto__open_file(s, DATA_NAME, O_RDWR | O_CREAT, true);
    if (o->fd < 0)
        return sto__err(err, errlen, "cannot open %s/%s: %s", s->dir, DATA_NAME, strerror(-o->fd)),
               o->fd;
    struct stat st;
    fstat(o->fd, &st);
    uint64_t want = s->cfg.total_size_limit & ~(uint64_t)(s->align - 1);
    o->capacity = (uint64_t)st.st_size > want ? (uint64_t)st.st_size : want;
    if ((uint64_t)st.st_size < o->capacity) {
        int rc = posix_fallocate(o->fd, 0, (off_t)o->capacity);
        if (rc == EOPNOTSUPP || rc == EINVAL)
            rc = ftruncate(o->fd, (off_t)o->capacity) < 0 ? errno : 0;
        if (rc)
            return sto__err(err, errlen,
                            "cannot preallocate %llu bytes for %s/%s "
                            "(MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES): %s",
                            (unsigned long long)o->capacity, s->dir, DATA_NAME, strerror(rc)),
                   -rc;
    }
    o->tlsf = cm_tlsf_create(o->capacity, s->align);
    if (!o->tlsf)
        return sto__err(err, errlen, "MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES is too small"),
               -EINVAL;
    int jfd = sto__open_file(s, JOURNAL_NAME, O_RDONLY | O_CREAT, false);
    if (jfd >= 0) {
        uint8_t *j;
        size_t len;
        if (sto__read_all(jfd, &j, &len) == 0) {
            replay(s, j, len);
            cm_free(j);
        }
        close(jfd);
    }
    rebuild(s);
    int rc = compact(s);
    if (rc)
        return sto__err(err, errlen, "cannot write %s/%s: %s", s->dir, JOURNAL_NAME, strerror(-rc)),
               rc;
    return 0;
}

/* Appends the pending journal entries. */
static int write_pending(struct ob *o) {
    int rc = 0;
    if (o->pend_len) {
        ssize_t w = write(o->jfd, o->pend, o->pend_len);
        rc = w == (ssize_t)o->pend_len ? 0 : (w < 0 ? -errno : -EIO);
        o->journal_bytes += o->pend_len;
        o->pend_len = 0;
    }
    return rc;
}

static int ob_flush(struct sto *s) {
    struct ob *o = s->be;
    int rc = write_pending(o);
    uint64_t live = s->keys * 128;
    uint64_t min = __atomic_load_n(&sto__offset_compact_min, __ATOMIC_RELAXED);
    uint64_t ratio = __atomic_load_n(&sto__offset_compact_ratio, __ATOMIC_RELAXED);
    if (rc == 0 && o->journal_bytes > min && o->journal_bytes > ratio * live)
        rc = compact(s);
    return rc;
}

static void ob_close(struct sto *s) {
    struct ob *o = s->be;
    if (!o)
        return;
    if (o->jfd >= 0)
        ob_flush(s);
    if (o->jfd >= 0)
        close(o->jfd);
    if (o->fd >= 0)
        close(o->fd);
    cm_tlsf_destroy(o->tlsf);
    cm_free(o->pend);
    cm_free(o);
    s->be = NULL;
}

static int ob_alloc(struct sto *s, struct sto_wr *w) {
    struct ob *o = s->be;
    uint64_t off;
    uint32_t h = cm_tlsf_alloc(o->tlsf, w->rec.rec_len, &off);
    if (!h)
        return -ENOSPC;
    w->fd = o->fd;
    w->off = off;
    w->loc = h;
    return 0;
}

static void ob_abort(struct sto *s, struct sto_wr *w) {
    struct ob *o = s->be;
    cm_tlsf_free(o->tlsf, (uint32_t)w->loc);
}

/* Appends an entry to the pending journal bytes. */
static void pend(struct ob *o, const struct sto_rec *r) {
    size_t need = sto_ent_size(r);
    if (o->pend_len + need > o->pend_cap)
        o->pend = cm_realloc(o->pend, o->pend_cap = 2 * (o->pend_len + need));
    o->pend_len += sto_ent_encode(r, o->pend + o->pend_len);
}

static int ob_commit(struct sto *s, struct sto_wr *w, struct sto_ent *e) {
    struct ob *o = s->be;
    e->loc = w->loc;
    struct sto_rec r;
    sto__ent_to_rec(e, &r);
    pend(o, &r);
    /* No compaction here: e is not indexed yet, and a journal rewritten from the index now
     * would lose it. The next flush compacts. */
    return write_pending(o);
}

static void ob_release(struct sto *s, struct sto_ent *e, bool replaced) {
    struct ob *o = s->be;
    cm_tlsf_free(o->tlsf, (uint32_t)e->loc);
    if (replaced) /* the newer PUT entry supersedes it on replay */
        return;
    struct sto_rec r = {
        .flags = STO_REC_DEL, .key_len = e->klen, .seq = sto__next_seq(s), .key = e->key};
    pend(o, &r);
}

static int ob_get_fd(struct sto *s, const struct sto_ent *e) {
    (void)e;
    return ((struct ob *)s->be)->fd;
}

const struct sto_backend_ops sto__offset_ops = {
    .size = sizeof(struct sto_backend_ops),
    .name = "offset_allocator_storage_backend",
    .open = ob_open,
    .close = ob_close,
    .alloc = ob_alloc,
    .abort = ob_abort,
    .commit = ob_commit,
    .release = ob_release,
    .flush = ob_flush,
    .get_fd = ob_get_fd,
    .put_fd = sto__put_fd_keep,
};
