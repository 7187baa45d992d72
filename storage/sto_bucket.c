/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bucket_storage_backend: records are appended to the open bucket file "<id>.bucket" until it
 * reaches MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES or _KEYS_LIMIT; sealing writes "<id>.meta",
 * the index entries of its live objects (atomic replace). A removal rewrites the meta file of
 * the bucket that held the object (sealing it if it was open), and a bucket whose last object
 * goes is deleted (bucket file first, so a lone meta file is ignored). At open, a sealed bucket
 * is read from its meta file; a bucket without one (open at a crash) is scanned record by
 * record, checking both CRCs, and cut at the first torn record.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "storage/sto_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct bucket {
    uint64_t id;
    int fd;
    bool sealed;
    bool dirty;
    uint32_t nrec;      /* records written (live or not) */
    uint32_t nlive;     /* live entries (list below) */
    uint32_t pending;   /* reservations not yet committed or aborted */
    uint64_t alloc_end; /* preallocated bytes */
    bool prealloc;      /* preallocated to the bucket size limit: cut to size when sealed */
    uint64_t size;      /* append position */
    struct sto_ent *head;
    struct bucket *prev, *next; /* all buckets */
    struct bucket *dnext;       /* dirty list */
};

struct bk {
    struct bucket *all;
    struct bucket *open;
    struct bucket *dirty;
    uint64_t next_id;
};

static void name_of(char *out, size_t cap, uint64_t id, const char *ext) {
    snprintf(out, cap, "%012llu.%s", (unsigned long long)id, ext);
}

static struct bucket *bucket_new(struct bk *k, uint64_t id, int fd) {
    struct bucket *b = cm_calloc(1, sizeof(*b));
    b->id = id;
    b->fd = fd;
    b->next = k->all;
    if (k->all)
        k->all->prev = b;
    k->all = b;
    return b;
}

static void bucket_unlink_ent(struct bucket *b, struct sto_ent *e) {
    if (e->bprev)
        e->bprev->bnext = e->bnext;
    else
        b->head = e->bnext;
    if (e->bnext)
        e->bnext->bprev = e->bprev;
    e->bprev = e->bnext = NULL;
    b->nlive--;
}

static void bucket_link_ent(struct bucket *b, struct sto_ent *e) {
    e->bprev = NULL;
    e->bnext = b->head;
    if (b->head)
        b->head->bprev = e;
    b->head = e;
    b->nlive++;
    e->loc = (uint64_t)(uintptr_t)b;
}

static void mark_dirty(struct bk *k, struct bucket *b) {
    if (!b->dirty) {
        b->dirty = true;
        b->dnext = k->dirty;
        k->dirty = b;
    }
}

/*
 * Writes b's meta file from its live entries. *replaced says whether the new meta file took
 * the old one's place, which seals b: also on an error, when only the directory's sync failed
 * (the caller then marks b dirty, so a later flush writes it and syncs the directory again).
 */
static int write_meta(struct sto *s, struct bucket *b, bool *replaced) {
    if (b->prealloc && ftruncate(b->fd, (off_t)b->size) == 0)
        b->prealloc = false;
    size_t len = 0;
    for (struct sto_ent *e = b->head; e; e = e->bnext)
        len += (STO_ENT_HDR + e->klen + 7) & ~(size_t)7;
    uint8_t *buf = cm_malloc(len ? len : 1), *p = buf;
    for (struct sto_ent *e = b->head; e; e = e->bnext) {
        struct sto_rec r;
        sto__ent_to_rec(e, &r);
        p += sto_ent_encode(&r, p);
    }
    char name[64];
    name_of(name, sizeof(name), b->id, "meta");
    int rc = sto__write_atomic(s, name, buf, len, replaced);
    cm_free(buf);
    if (*replaced)
        b->sealed = true;
    return rc;
}

/* Deletes an empty bucket's files (bucket first) and frees it. */
static void bucket_delete(struct sto *s, struct bk *k, struct bucket *b) {
    char name[64];
    name_of(name, sizeof(name), b->id, "bucket");
    unlinkat(s->dirfd, name, 0);
    name_of(name, sizeof(name), b->id, "meta");
    unlinkat(s->dirfd, name, 0);
    if (b->fd >= 0)
        close(b->fd);
    if (b->prev)
        b->prev->next = b->next;
    else
        k->all = b->next;
    if (b->next)
        b->next->prev = b->prev;
    if (k->open == b)
        k->open = NULL;
    cm_free(b);
}

/* Writes the dirty buckets' meta files (deleting emptied buckets); one whose write fails stays
 * dirty, so the next flush (or the close) writes it again. Returns 0 or the first error. */
static int bk_flush(struct sto *s) {
    struct bk *k = s->be;
    struct bucket *retry = NULL;
    int first = 0;
    while (k->dirty) {
        struct bucket *b = k->dirty;
        k->dirty = b->dnext;
        b->dirty = false;
        if (b->nlive == 0 && b->pending == 0) {
            bucket_delete(s, k, b);
            continue;
        }
        bool replaced;
        int rc = write_meta(s, b, &replaced);
        if (rc) { /* not written, or its directory not synced: again at the next flush */
            first = first ? first : rc;
            b->dnext = retry;
            retry = b;
        }
        if (k->open == b)
            k->open = NULL;
    }
    while (retry) {
        struct bucket *b = retry;
        retry = b->dnext;
        mark_dirty(k, b);
    }
    return first;
}

/* Indexes one record of b found at open; an older entry of the key it replaces leaves its
 * bucket, whose meta then needs writing again. */
static void bucket_recovered(struct sto *s, struct bucket *b, const struct sto_rec *r) {
    struct sto_ent *kept, *old = sto__recovered(s, r, 0, &kept);
    if (kept)
        bucket_link_ent(b, kept);
    if (old) {
        struct bucket *ob = (struct bucket *)(uintptr_t)old->loc;
        bucket_unlink_ent(ob, old);
        mark_dirty(s->be, ob);
        sto__ent_free(old);
    }
    b->nrec++;
}

/* Loads b's entries from its meta file. Returns 0, or -CM_ECORRUPT to fall back to a scan. */
static int load_meta(struct sto *s, struct bucket *b, const uint8_t *m, size_t len) {
    for (size_t pos = 0; pos < len;) {
        struct sto_rec r;
        int n = sto_ent_decode(m + pos, len - pos, &r);
        if (n <= 0 || r.flags != STO_REC_PUT || r.rec_off + r.rec_len > b->size)
            return -CM_ECORRUPT;
        pos += (size_t)n;
        bucket_recovered(s, b, &r);
    }
    return 0;
}

static bool zeros(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* Scans b's records from the start; cuts the file at the first torn or corrupt one. */
static void scan_records(struct sto *s, struct bucket *b, int fd) {
    struct bk *k = s->be;
    size_t cap = 1u << 20;
    uint8_t *buf = cm_malloc(cap);
    uint64_t pos = 0;
    while (pos < b->size) {
        ssize_t got = pread(fd, buf, STO_REC_HDR + STO_KEY_MAX, (off_t)pos);
        struct sto_rec r;
        int n = got > 0 ? sto_rec_decode(buf, (size_t)got, &r) : 0;
        if (n <= 0 && got >= STO_REC_HDR && zeros(buf, STO_REC_HDR)) { /* preallocated tail */
            if (ftruncate(fd, (off_t)pos) == 0)
                b->size = pos;
            break;
        }
        bool ok = n > 0 && pos + r.rec_len <= b->size;
        if (ok) { /* the value's CRC */
            uint32_t crc = 0;
            for (uint64_t x = 0; x < r.value_len && ok;) {
                size_t want = (size_t)(r.value_len - x < cap ? r.value_len - x : cap);
                ssize_t g = pread(fd, buf, want, (off_t)(pos + r.value_off + x));
                if (g != (ssize_t)want)
                    ok = false;
                else
                    crc = sto_crc32c(crc, buf, want);
                x += want;
            }
            ok = ok && crc == r.value_crc;
            if (ok) /* the header was in buf: decode it again for the key */
                ok = pread(fd, buf, STO_REC_HDR + r.key_len, (off_t)pos) > 0 &&
                     sto_rec_decode(buf, STO_REC_HDR + r.key_len, &r) > 0;
        }
        if (!ok) {
            sto__count_torn(s, 1);
            if (ftruncate(fd, (off_t)pos) == 0)
                b->size = pos;
            break;
        }
        r.rec_off = pos;
        bucket_recovered(s, b, &r);
        pos += r.rec_len;
    }
    cm_free(buf);
    mark_dirty(k, b); /* write its meta: it is sealed from now on */
}

static int id_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Lists the bucket ids in the directory (ascending); removes stale temporaries. */
static int list_ids(struct sto *s, uint64_t **ids, size_t *n) {
    int fd = dup(s->dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d)
        return fd >= 0 ? (close(fd), -errno) : -errno;
    size_t cap = 64;
    *ids = cm_malloc(cap * sizeof(**ids));
    *n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end;
        unsigned long long id = strtoull(de->d_name, &end, 10);
        if (end == de->d_name)
            continue;
        if (!strcmp(end, ".meta.tmp")) {
            unlinkat(s->dirfd, de->d_name, 0);
            continue;
        }
        if (strcmp(end, ".bucket") != 0)
            continue;
        if (*n == cap)
            *ids = cm_realloc(*ids, (cap *= 2) * sizeof(**ids));
        (*ids)[(*n)++] = id;
    }
    closedir(d);
    qsort(*ids, *n, sizeof(**ids), id_cmp);
    return 0;
}

static int bk_open(struct sto *s, char *err, size_t errlen) {
    struct bk *k = cm_calloc(1, sizeof(*k));
    s->be = k;
    uint64_t *ids = NULL;
    size_t n = 0;
    int rc = list_ids(s, &ids, &n);
    if (rc)
        return sto__err(err, errlen, "cannot list \"%s\": %s", s->dir, strerror(-rc)), rc;
    for (size_t i = 0; i < n; i++) {
        char name[64];
        name_of(name, sizeof(name), ids[i], "bucket");
        int fd = sto__open_file(s, name, O_RDWR, true);
        if (fd < 0) {
            rc = fd;
            sto__err(err, errlen, "cannot open %s/%s: %s", s->dir, name, strerror(-fd));
            break;
        }
        struct bucket *b = bucket_new(k, ids[i], fd);
        struct stat st;
        fstat(fd, &st);
        b->size = (uint64_t)st.st_size;
        k->next_id = ids[i] + 1;
        name_of(name, sizeof(name), ids[i], "meta");
        int mfd = sto__open_file(s, name, O_RDONLY, false);
        bool loaded = false;
        if (mfd >= 0) {
            uint8_t *m;
            size_t len;
            if (sto__read_all(mfd, &m, &len) == 0) {
                loaded = load_meta(s, b, m, len) == 0;
                cm_free(m);
            }
            close(mfd);
            if (!loaded) {
                sto__count_corrupt(s, 1);
                while (b->head) { /* forget what the bad meta file gave; scan instead */
                    struct sto_ent *e = b->head;
                    bucket_unlink_ent(b, e);
                    struct sto_rec r = {.key = e->key, .key_len = e->klen, .seq = e->seq};
                    struct sto_ent *x = sto__recovered_del(s, &r);
                    sto__ent_free(x ? x : e);
                }
                b->nrec = 0;
            }
        }
        b->sealed = loaded;
        if (!loaded) {
            name_of(name, sizeof(name), ids[i], "bucket");
            int sfd = sto__open_file(s, name, O_RDWR, false);
            if (sfd >= 0) {
                scan_records(s, b, sfd);
                close(sfd);
            }
        }
        if (b->nlive == 0)
            mark_dirty(k, b);
    }
    cm_free(ids);
    if (rc == 0)
        rc = bk_flush(s);
    return rc;
}

static void bk_close(struct sto *s) {
    struct bk *k = s->be;
    if (!k)
        return;
    bool replaced;
    if (k->open && !k->open->sealed && write_meta(s, k->open, &replaced) && replaced)
        mark_dirty(k, k->open); /* the flush below syncs the directory once more */
    bk_flush(s);
    while (k->all) {
        struct bucket *b = k->all;
        k->all = b->next;
        if (b->fd >= 0)
            close(b->fd);
        cm_free(b);
    }
    cm_free(k);
    s->be = NULL;
}

static int bk_alloc(struct sto *s, struct sto_wr *w) {
    struct bk *k = s->be;
    struct bucket *b = k->open;
    if (b && (b->sealed || b->nrec >= s->cfg.bucket_keys_limit ||
              (b->nrec > 0 && b->size + w->rec.rec_len > s->cfg.bucket_size_limit))) {
        if (!b->sealed && b->pending == 0) {
            bool replaced;
            int rc = write_meta(s, b, &replaced);
            if (rc && !replaced)
                return rc;
            if (rc) /* sealed, its directory not synced: this put goes on in a new bucket */
                mark_dirty(k, b);
        }
        k->open = b = NULL;
    }
    if (!b) {
        char name[64];
        uint64_t id = k->next_id++;
        name_of(name, sizeof(name), id, "bucket");
        int fd = sto__open_file(s, name, O_RDWR | O_CREAT | O_TRUNC, true);
        if (fd < 0)
            return fd;
        b = k->open = bucket_new(k, id, fd);
    }
    /*
     * Writes inside the file's size do not extend it, and ext4 runs those asynchronously:
     * preallocate ahead in steps of up to 32 MiB (cut back when the bucket is sealed).
     */
    if (b->size + w->rec.rec_len > b->alloc_end) {
        uint64_t step = 32u << 20;
        if (s->cfg.bucket_max_physical) /* a physical limit counts preallocated blocks */
            step = w->rec.rec_len;
        if (step < w->rec.rec_len)
            step = w->rec.rec_len;
        if (b->alloc_end + step > s->cfg.bucket_size_limit &&
            b->size + w->rec.rec_len <= s->cfg.bucket_size_limit)
            step = s->cfg.bucket_size_limit - b->alloc_end;
        if (fallocate(b->fd, 0, (off_t)b->alloc_end, (off_t)step) == 0) {
            b->alloc_end += step;
            b->prealloc = true;
        }
    }
    w->fd = b->fd;
    w->off = b->size;
    w->loc = (uint64_t)(uintptr_t)b;
    b->size += w->rec.rec_len;
    b->nrec++;
    b->pending++;
    return 0;
}

static void bk_abort(struct sto *s, struct sto_wr *w) {
    struct bk *k = s->be;
    struct bucket *b = (struct bucket *)(uintptr_t)w->loc;
    b->pending--;
    if (w->off + w->rec.rec_len == b->size && k->open == b) {
        b->size = w->off; /* the next record overwrites the failed one */
        b->nrec--;
        if (ftruncate(b->fd, (off_t)b->size) < 0) {
            /* a leftover tail is cut by the restart scan */
        }
    }
    if (b->nlive == 0 && b->pending == 0 && k->open != b)
        mark_dirty(k, b);
}

static int bk_commit(struct sto *s, struct sto_wr *w, struct sto_ent *e) {
    struct bk *k = s->be;
    struct bucket *b = (struct bucket *)(uintptr_t)w->loc;
    b->pending--;
    bucket_link_ent(b, e);
    int rc = 0;
    bool replaced = false;
    if (b->sealed) { /* sealed while this record was in flight: its meta must list it */
        rc = write_meta(s, b, &replaced);
    } else if (b->pending == 0 &&
               (b->nrec >= s->cfg.bucket_keys_limit || b->size >= s->cfg.bucket_size_limit)) {
        rc = write_meta(s, b, &replaced);
        if (replaced && k->open == b)
            k->open = NULL;
    }
    /*
     * Only the directory's sync failed: the meta file in place lists e, so the put is stored
     * and succeeds (failing it would leave a "failed" value that a reopen serves). The bucket
     * turns dirty: a later flush, or the close, writes its meta and syncs the directory again.
     */
    if (rc && replaced) {
        mark_dirty(k, b);
        rc = 0;
    }
    if (rc) { /* nothing renamed: the put fails; sto.c frees e and calls abort(), which ends
               * the reservation */
        bucket_unlink_ent(b, e);
        b->pending++;
    }
    return rc;
}

static void bk_release(struct sto *s, struct sto_ent *e, bool replaced) {
    (void)replaced;
    struct bk *k = s->be;
    struct bucket *b = (struct bucket *)(uintptr_t)e->loc;
    bucket_unlink_ent(b, e);
    mark_dirty(k, b);
}

static int bk_get_fd(struct sto *s, const struct sto_ent *e) {
    (void)s;
    return ((struct bucket *)(uintptr_t)e->loc)->fd;
}

const struct sto_backend_ops sto__bucket_ops = {
    .size = sizeof(struct sto_backend_ops),
    .name = "bucket_storage_backend",
    .open = bk_open,
    .close = bk_close,
    .alloc = bk_alloc,
    .abort = bk_abort,
    .commit = bk_commit,
    .release = bk_release,
    .flush = bk_flush,
    .get_fd = bk_get_fd,
    .put_fd = sto__put_fd_keep,
};
