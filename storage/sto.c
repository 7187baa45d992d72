/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SSD tier's core (sto.h): open and path rules, the sharded index of objects, quotas and
 * watermark eviction, and the put/get data paths over the I/O layer (locks: sto_int.h). Record
 * placement is the backends' (sto_bucket.c, sto_fpk.c, sto_offset.c).
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "common/cm_hash.h"
#include "common/cm_mem.h"
#include "storage/sto_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define STO_HASH_SEED 0x5354304b45595321ull

/* ---------------------------------------------------------------- index */

static uint64_t key_hash(const void *key, size_t klen) {
    return cm_hash64(key, klen, STO_HASH_SEED);
}

static int ent_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct sto_ent *e = (const struct sto_ent *)n;
    return e->klen == klen && memcmp(e->key, key, klen) == 0;
}

static struct sto_shard *shard_of_hash(struct sto *s, uint64_t h) {
    return &s->shards[(h >> 56) & (STO_SHARDS - 1)]; /* the table uses the low bits */
}

static unsigned shard_idx(const void *key, size_t klen) {
    return (unsigned)((key_hash(key, klen) >> 56) & (STO_SHARDS - 1));
}

static struct sto_shard *shard_of(struct sto *s, const struct sto_ent *e) {
    return shard_of_hash(s, e->hnode.hash);
}

/* The entry of key, or NULL. Under its shard (shared) or s->mu. */
static struct sto_ent *lookup(struct sto *s, const void *key, size_t klen) {
    uint64_t h = key_hash(key, klen);
    return (struct sto_ent *)cm_ht_find(&shard_of_hash(s, h)->ht, h, key, klen, ent_eq);
}

static struct sto_ent *ent_new(const struct sto_rec *r, uint64_t loc) {
    struct sto_ent *e = cm_calloc(1, sizeof(*e) + r->key_len);
    e->hnode.hash = key_hash(r->key, r->key_len);
    e->seq = r->seq;
    e->rec_off = r->rec_off;
    e->rec_len = r->rec_len;
    e->value_len = r->value_len;
    e->value_off = r->value_off;
    e->value_crc = r->value_crc;
    e->loc = loc;
    e->klen = r->key_len;
    memcpy(e->key, r->key, r->key_len);
    return e;
}

void sto__ent_free(struct sto_ent *e) {
    cm_free(e);
}

/* The PUT record of an index entry; see sto_int.h. */
void sto__ent_to_rec(const struct sto_ent *e, struct sto_rec *r) {
    *r = (struct sto_rec){.flags = STO_REC_PUT,
                          .key_len = e->klen,
                          .value_off = e->value_off,
                          .value_len = e->value_len,
                          .rec_len = e->rec_len,
                          .seq = e->seq,
                          .value_crc = e->value_crc,
                          .rec_off = e->rec_off,
                          .key = e->key};
}

static void lru_unlink(struct sto *s, struct sto_ent *e) {
    if (e->lprev)
        e->lprev->lnext = e->lnext;
    else
        s->lhead = e->lnext;
    if (e->lnext)
        e->lnext->lprev = e->lprev;
    else
        s->ltail = e->lprev;
    e->lprev = e->lnext = NULL;
}

static void lru_append(struct sto *s, struct sto_ent *e) {
    e->lnext = NULL;
    e->lprev = s->ltail;
    if (s->ltail)
        s->ltail->lnext = e;
    else
        s->lhead = e;
    s->ltail = e;
}

/* Links e into the index and accounting. s->mu and e's shard (exclusive). */
static void index_add(struct sto *s, struct sto_ent *e) {
    cm_ht_insert(&shard_of(s, e)->ht, &e->hnode);
    pthread_mutex_lock(&s->lru_mu);
    lru_append(s, e);
    pthread_mutex_unlock(&s->lru_mu);
    s->bytes += e->value_len;
    s->disk_bytes += e->rec_len;
    s->keys++;
}

/* Unlinks e from the index and accounting (the caller frees or releases it). s->mu and e's
 * shard (exclusive). */
static void index_del(struct sto *s, struct sto_ent *e) {
    cm_ht_remove(&shard_of(s, e)->ht, &e->hnode);
    pthread_mutex_lock(&s->lru_mu);
    lru_unlink(s, e);
    pthread_mutex_unlock(&s->lru_mu);
    s->bytes -= e->value_len;
    s->disk_bytes -= e->rec_len;
    s->keys--;
}

struct sto_ent *sto__recovered(struct sto *s, const struct sto_rec *r, uint64_t loc,
                               struct sto_ent **kept) {
    struct sto_ent *old = lookup(s, r->key, r->key_len);
    if (r->seq >= s->next_seq)
        s->next_seq = r->seq + 1;
    if (old && old->seq >= r->seq) {
        *kept = NULL;
        return NULL; /* the caller drops the record it found */
    }
    struct sto_ent *e = ent_new(r, loc);
    if (old)
        index_del(s, old);
    index_add(s, e);
    if (!old)
        s->n_recovered++;
    *kept = e;
    return old;
}

struct sto_ent *sto__recovered_del(struct sto *s, const struct sto_rec *r) {
    if (r->seq >= s->next_seq)
        s->next_seq = r->seq + 1;
    struct sto_ent *old = lookup(s, r->key, r->key_len);
    if (!old || old->seq > r->seq)
        return NULL;
    index_del(s, old);
    s->n_recovered--;
    return old;
}

uint64_t sto__next_seq(struct sto *s) {
    return s->next_seq++;
}

void sto__count_torn(struct sto *s, uint64_t n) {
    __atomic_fetch_add(&s->n_torn, n, __ATOMIC_RELAXED);
}

void sto__count_corrupt(struct sto *s, uint64_t n) {
    __atomic_fetch_add(&s->n_corrupt, n, __ATOMIC_RELAXED);
}

static int seq_cmp(const void *a, const void *b) {
    const struct sto_ent *x = *(struct sto_ent *const *)a, *y = *(struct sto_ent *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* After recovery: eviction order = put order (seq). */
static void lru_sort(struct sto *s) {
    if (s->keys < 2)
        return;
    struct sto_ent **v = cm_malloc(sizeof(*v) * s->keys);
    size_t n = 0;
    for (struct sto_ent *e = s->lhead; e; e = e->lnext)
        v[n++] = e;
    qsort(v, n, sizeof(*v), seq_cmp);
    s->lhead = s->ltail = NULL;
    for (size_t i = 0; i < n; i++)
        lru_append(s, v[i]);
    cm_free(v);
}

/* ---------------------------------------------------------------- open / close */

/* Checks the path rules: absolute, existing directory, no symlink, no "." or "..". */
static int check_path(const char *path, char *err, size_t errlen) {
    if (path[0] != '/')
        return sto__err(err, errlen, "storage path \"%s\" is not absolute", path), -EINVAL;
    size_t n = strlen(path);
    if (n >= 4000)
        return sto__err(err, errlen, "storage path is too long"), -EINVAL;
    char buf[4096];
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        size_t start = i - 1;
        while (start > 0 && buf[start] != '/')
            start--;
        const char *comp = buf + start + 1;
        size_t clen = i - start - 1;
        if ((clen == 1 && comp[0] == '.') || (clen == 2 && comp[0] == '.' && comp[1] == '.'))
            return sto__err(err, errlen, "storage path \"%s\" contains \".\" or \"..\"", path),
                   -EINVAL;
        if (clen == 0)
            continue;
        char save = buf[i];
        buf[i] = '\0';
        struct stat st;
        if (lstat(buf, &st) < 0) {
            int e = errno;
            sto__err(err, errlen, "storage path \"%s\" does not exist (%s)", path, strerror(e));
            return -EINVAL;
        }
        if (S_ISLNK(st.st_mode))
            return sto__err(err, errlen, "storage path \"%s\" contains a symlink (%s)", path, buf),
                   -EINVAL;
        if (save == '\0' && !S_ISDIR(st.st_mode))
            return sto__err(err, errlen, "storage path \"%s\" is not a directory", path), -EINVAL;
        buf[i] = save;
    }
    return 0;
}

/*
 * Finds whether O_DIRECT works in the directory and picks the record alignment: the larger of
 * the direct-I/O alignment and the file system's block size, since a direct write that is not
 * block-aligned is serialized (and partly zeroed) by ext4 and xfs.
 */
static void probe_direct(struct sto *s) {
    s->direct = false;
    s->align = 4096;
    int fd = openat(s->dirfd, "sto.probe", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
    if (fd < 0) {
        unlinkat(s->dirfd, "sto.probe", 0);
        return;
    }
    void *b = NULL;
    if (posix_memalign(&b, 4096, 4096) == 0) {
        memset(b, 0, 4096);
        if (pwrite(fd, b, 4096, 0) == 4096) {
            s->direct = true;
            if (pwrite(fd, (uint8_t *)b + 512, 512, 512) == 512)
                s->align = 512;
        }
        free(b);
    }
    close(fd);
    unlinkat(s->dirfd, "sto.probe", 0);
    struct statvfs vf;
    if (fstatvfs(s->dirfd, &vf) == 0 && vf.f_bsize > s->align && vf.f_bsize <= 65536 &&
        (vf.f_bsize & (vf.f_bsize - 1)) == 0)
        s->align = (uint32_t)vf.f_bsize;
}

/* Effective quota and eviction policy. */
static void set_quota(struct sto *s) {
    s->quota_bytes = s->cfg.total_size_limit;
    switch (s->cfg.backend) {
    case STO_BACKEND_BUCKET: {
        uint64_t q = s->cfg.bucket_max_total_size;
        if (q == 0) {
            struct statvfs vf;
            if (fstatvfs(s->dirfd, &vf) == 0)
                q = (uint64_t)((double)vf.f_blocks * (double)vf.f_frsize * 0.9);
        }
        if (q && q < s->quota_bytes)
            s->quota_bytes = q;
        s->policy = s->cfg.bucket_evict;
        break;
    }
    case STO_BACKEND_FILE_PER_KEY:
        s->policy = s->cfg.fpk_eviction ? STO_EVICT_FIFO : STO_EVICT_NONE;
        break;
    case STO_BACKEND_OFFSET:
        s->policy = s->cfg.offset_evict;
        break;
    }
}

static const struct sto_backend_ops *backend_ops(enum sto_backend_kind k) {
    switch (k) {
    case STO_BACKEND_BUCKET:
        return &sto__bucket_ops;
    case STO_BACKEND_FILE_PER_KEY:
        return &sto__fpk_ops;
    case STO_BACKEND_OFFSET:
        return &sto__offset_ops;
    }
    return NULL;
}

static void raise_nofile(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int sto_open(const struct sto_config *cfg, const char *path, struct sto **out, char *err,
             size_t errlen) {
    struct sto_config envcfg;
    sto__err(err, errlen, "%s", "");
    if (!cfg) {
        int rc = sto_config_from_env(&envcfg, err, errlen);
        if (rc)
            return rc;
        cfg = &envcfg;
    }
    if (!path)
        path = cfg->path;
    int rc = check_path(path, err, errlen);
    if (rc)
        return rc;
    struct sto *s = cm_calloc(1, sizeof(*s));
    s->cfg = *cfg;
    snprintf(s->dir, sizeof(s->dir), "%s", path);
    s->lockfd = -1;
    s->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    s->next_seq = 1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->put_mu, NULL);
    pthread_mutex_init(&s->lru_mu, NULL);
    for (unsigned i = 0; i < STO_SHARDS; i++) {
        pthread_rwlock_init(&s->shards[i].rw, NULL);
        cm_ht_init(&s->shards[i].ht, 64);
    }
    s->ops = backend_ops(cfg->backend);
    if (s->dirfd < 0) {
        rc = -errno;
        sto__err(err, errlen, "cannot open storage path \"%s\": %s", path, strerror(-rc));
        goto fail;
    }
    s->lockfd = openat(s->dirfd, "sto.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->lockfd < 0 || flock(s->lockfd, LOCK_EX | LOCK_NB) < 0) {
        rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
        sto__err(err, errlen, "storage path \"%s\" is in use by another store (%s)", path,
                 strerror(-rc));
        goto fail;
    }
    raise_nofile();
    probe_direct(s);
    set_quota(s);
    rc = sto__io_init(s, err, errlen);
    if (rc)
        goto fail;
    rc = s->ops->open(s, err, errlen);
    if (rc)
        goto fail;
    lru_sort(s);
    *out = s;
    return 0;
fail:
    if (!s->be) /* the backend's close() also undoes a half-done open() */
        s->ops = NULL;
    sto_close(s);
    return rc;
}

static void ent_free_cb(struct cm_ht_node *n, void *arg) {
    (void)arg;
    sto__ent_free((struct sto_ent *)n);
}

void sto_close(struct sto *s) {
    if (!s)
        return;
    if (s->ops)
        s->ops->close(s);
    for (unsigned i = 0; i < STO_SHARDS; i++) {
        cm_ht_clear(&s->shards[i].ht, ent_free_cb, NULL);
        cm_ht_fini(&s->shards[i].ht);
        pthread_rwlock_destroy(&s->shards[i].rw);
    }
    sto__io_fini(s);
    if (s->lockfd >= 0)
        close(s->lockfd);
    if (s->dirfd >= 0)
        close(s->dirfd);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->put_mu);
    pthread_mutex_destroy(&s->lru_mu);
    cm_free(s);
}

/* ---------------------------------------------------------------- eviction */

/* Removes e from the index and frees its space. s->mu and e's shard (exclusive). */
static void drop(struct sto *s, struct sto_ent *e) {
    index_del(s, e);
    s->ops->release(s, e, false);
    sto__ent_free(e);
}

/* The first victim in policy order, or NULL. */
static struct sto_ent *lru_first(struct sto *s) {
    pthread_mutex_lock(&s->lru_mu);
    struct sto_ent *e = s->lhead;
    pthread_mutex_unlock(&s->lru_mu);
    return e;
}

/*
 * Evicts the first victim in policy order, telling the eviction hook. Under s->mu, so no entry
 * leaves the index meanwhile; a get may move the head (lru) while this waits for the victim's
 * shard, so the head is checked again once that shard is held.
 */
static void evict_one(struct sto *s) {
    for (;;) {
        struct sto_ent *e = lru_first(s);
        if (!e)
            return;
        struct sto_shard *sh = shard_of(s, e);
        pthread_rwlock_wrlock(&sh->rw);
        if (lru_first(s) == e) {
            if (s->evict_cb)
                s->evict_cb(e->key, e->klen, e->value_len, s->evict_arg);
            drop(s, e);
            s->n_evictions++;
            pthread_rwlock_unlock(&sh->rw);
            return;
        }
        pthread_rwlock_unlock(&sh->rw);
    }
}

/* Physical bytes of the regular files directly in s's directory (du: st_blocks * 512). */
static int phys_scan(struct sto *s, uint64_t *out) {
    int fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    uint64_t sum = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (fstatat(s->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_blocks * 512;
    }
    closedir(d);
    *out = sum;
    return 0;
}

/*
 * The physical size estimate: the last scan plus the record bytes reserved since, scanning
 * again when the last scan is older than MOONCAKE_OFFLOAD_DISK_SCAN_CACHE_MS (or force). A
 * failed scan keeps the previous figure. Under s->mu.
 */
static uint64_t phys_now(struct sto *s, bool force) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (force || s->phys_scan_ns == 0 ||
        (now - s->phys_scan_ns) / 1000000ull >= s->cfg.disk_scan_cache_ms) {
        uint64_t v = 0;
        if (phys_scan(s, &v) == 0) {
            s->phys_scanned = v;
            s->phys_since = 0;
        }
        s->phys_scan_ns = now ? now : 1;
    }
    return s->phys_scanned + s->phys_since;
}

/*
 * The bucket layout's physical limit, checked like the byte quota: above its high watermark
 * evicts in policy order (a batch whose record bytes cover the excess, then a flush, which
 * deletes emptied buckets, and a fresh scan) down to its low watermark; -EDQUOT when the
 * record still does not fit, -EFBIG when it never can. Under s->mu.
 */
static int phys_room(struct sto *s, uint64_t rec_len) {
    uint64_t lim = s->cfg.bucket_max_physical;
    if (lim == 0 || s->cfg.backend != STO_BACKEND_BUCKET)
        return 0;
    if (rec_len > lim)
        return -EFBIG;
    uint64_t phys = phys_now(s, false);
    uint64_t high =
        s->cfg.watermark_eviction ? (uint64_t)((double)lim * s->cfg.high_watermark) : lim;
    if (phys + rec_len <= high)
        return 0;
    if (s->policy != STO_EVICT_NONE) {
        uint64_t target =
            s->cfg.watermark_eviction ? (uint64_t)((double)lim * s->cfg.low_watermark) : lim;
        if (target < rec_len)
            target = rec_len;
        while (lru_first(s) && phys + rec_len > target) {
            uint64_t need = phys + rec_len - target, freed = 0;
            struct sto_ent *e;
            while ((e = lru_first(s)) != NULL && freed < need) {
                freed += e->rec_len;
                evict_one(s);
            }
            s->ops->flush(s);
            phys = phys_now(s, true);
        }
    }
    return phys + rec_len > lim ? -EDQUOT : 0;
}

/*
 * Makes room for a put of a len-byte value (rec_len on disk) that adds grow value bytes and
 * nkeys (0 or 1) keys, the reservations of puts in flight counted: above the high watermark (or
 * the quota, or the key limit) evicts in policy order down to the low watermark; then the
 * physical limit (phys_room). Under s->mu.
 */
static int make_room(struct sto *s, uint64_t len, uint64_t grow, uint64_t nkeys, uint64_t rec_len) {
    uint64_t q = s->quota_bytes, kq = s->cfg.total_keys_limit;
    if (len > q)
        return -EFBIG;
    uint64_t high = s->cfg.watermark_eviction ? (uint64_t)((double)q * s->cfg.high_watermark) : q;
    if (s->bytes + s->res_bytes + grow <= high && s->keys + s->res_keys + nkeys <= kq)
        return phys_room(s, rec_len);
    if (s->policy != STO_EVICT_NONE) {
        uint64_t target =
            s->cfg.watermark_eviction ? (uint64_t)((double)q * s->cfg.low_watermark) : q;
        if (target < grow)
            target = grow;
        bool any = false;
        while (lru_first(s) &&
               (s->bytes + s->res_bytes + grow > target || s->keys + s->res_keys + nkeys > kq)) {
            evict_one(s);
            any = true;
        }
        if (any)
            s->ops->flush(s);
    }
    if (s->bytes + s->res_bytes + grow > q || s->keys + s->res_keys + nkeys > kq)
        return -EDQUOT;
    return phys_room(s, rec_len);
}

/*
 * Checks the quota and key limit for w (make_room) and reserves its share until it is
 * published or given up (unreserve): a key already indexed, or written by prev (an earlier
 * write of the same batch, or NULL), is no new key, and only the value's growth over the one it
 * replaces counts. Eviction may take the indexed object w replaces; w then counts as a new key.
 * Returns 0 or make_room's error. Under s->mu.
 */
static int reserve(struct sto *s, struct sto_wr *w, const struct sto_wr *prev) {
    int rc;
    for (;;) {
        const struct sto_ent *old = prev ? NULL : lookup(s, w->rec.key, w->rec.key_len);
        uint64_t was = prev ? prev->rec.value_len : old ? old->value_len : 0;
        w->res_keys = prev || old ? 0 : 1;
        w->res_bytes = w->rec.value_len > was ? w->rec.value_len - was : 0;
        rc = make_room(s, w->rec.value_len, w->res_bytes, w->res_keys, w->rec.rec_len);
        /* nothing enters the index while s->mu is held, so the key is either still old's or
         * gone */
        if (rc || !old || lookup(s, w->rec.key, w->rec.key_len))
            break;
    }
    if (rc) {
        w->res_bytes = w->res_keys = 0;
        return rc;
    }
    s->res_bytes += w->res_bytes;
    s->res_keys += w->res_keys;
    return 0;
}

/* Gives back w's reservation (publish moves it into the totals; a failure drops it). Under
 * s->mu; a second call does nothing. */
static void unreserve(struct sto *s, struct sto_wr *w) {
    s->res_bytes -= w->res_bytes;
    s->res_keys -= w->res_keys;
    w->res_bytes = w->res_keys = 0;
}

/*
 * Checks, just before w is published, that it takes neither the bytes nor the keys past their
 * limits with the index as it is now: the object w replaces may have been removed or evicted
 * since w reserved (w then adds a key and its whole value). Evicts in policy order when it
 * would; -EDQUOT when that cannot help. Under s->mu and no shard lock.
 */
static int fit(struct sto *s, const struct sto_wr *w) {
    bool any = false;
    int rc = 0;
    for (;;) {
        const struct sto_ent *old = lookup(s, w->rec.key, w->rec.key_len);
        uint64_t was = old ? old->value_len : 0;
        bool over = (!old && s->keys + 1 > s->cfg.total_keys_limit) ||
                    (w->rec.value_len > was && s->bytes - was + w->rec.value_len > s->quota_bytes);
        if (!over)
            break;
        if (s->policy == STO_EVICT_NONE || !lru_first(s)) {
            rc = -EDQUOT;
            break;
        }
        evict_one(s);
        any = true;
    }
    if (any)
        s->ops->flush(s);
    return rc;
}

/* Installs the eviction hook; see sto.h. */
void sto_set_evict_cb(struct sto *s, sto_evict_cb *cb, void *arg) {
    s->evict_cb = cb;
    s->evict_arg = arg;
}

/* Reserves room in the backend, evicting on -ENOSPC when the policy allows. Under s->mu. */
static int alloc_evicting(struct sto *s, struct sto_wr *w) {
    for (;;) {
        int rc = s->ops->alloc(s, w);
        if (rc == 0)
            s->phys_since += w->rec.rec_len;
        if (rc != -ENOSPC || s->policy == STO_EVICT_NONE || !lru_first(s))
            return rc;
        unsigned n = 0;
        while (lru_first(s) && n++ < 8)
            evict_one(s);
        s->ops->flush(s);
    }
}

/* ---------------------------------------------------------------- put */

static bool key_ok(const void *key, size_t klen) {
    return key && klen > 0 && klen <= STO_KEY_MAX;
}

/* Copies n bytes of the value, starting at value offset pos, from iov into dst. */
static void gather(const struct iovec *iov, int iovcnt, uint64_t pos, uint8_t *dst, size_t n) {
    for (int i = 0; i < iovcnt && n > 0; i++) {
        if (pos >= iov[i].iov_len) {
            pos -= iov[i].iov_len;
            continue;
        }
        size_t take = iov[i].iov_len - pos;
        if (take > n)
            take = n;
        memcpy(dst, (const uint8_t *)iov[i].iov_base + pos, take);
        dst += take;
        n -= take;
        pos = 0;
    }
}

/* Fills staging with record bytes [from, from + n) of w's record. */
static void fill(struct sto_wr *w, const uint8_t *hdr, size_t hlen, const struct iovec *iov,
                 int iovcnt, uint64_t from, uint8_t *dst, size_t n) {
    memset(dst, 0, n);
    if (from < hlen)
        memcpy(dst, hdr + from, (size_t)(hlen - from < n ? hlen - from : n));
    uint64_t v0 = w->rec.value_off, v1 = v0 + w->rec.value_len;
    uint64_t a = from > v0 ? from : v0, b = from + n < v1 ? from + n : v1;
    if (a < b)
        gather(iov, iovcnt, a - v0, dst + (a - from), (size_t)(b - a));
}

/* Writes w's record (header hdr) through slot sl, in staging-sized chunks. */
static int write_record(struct sto *s, struct sto_slot *sl, struct sto_wr *w, const uint8_t *hdr,
                        size_t hlen, const struct iovec *iov, int iovcnt) {
    for (uint64_t pos = 0; pos < w->rec.rec_len;) {
        size_t n =
            (size_t)(w->rec.rec_len - pos < sl->stage_len ? w->rec.rec_len - pos : sl->stage_len);
        fill(w, hdr, hlen, iov, iovcnt, pos, sl->stage, n);
        struct sto_iov v = {.fd = w->fd,
                            .write = true,
                            .buf = sl->stage,
                            .len = n,
                            .off = w->off + pos,
                            .fixed = true};
        int rc = sto__io_run(s, sl, &v, 1);
        if (rc)
            return rc;
        pos += n;
    }
    return 0;
}

/* Prepares w->rec for key and an iov value: sizes, layout, CRC, sequence number. */
static int prepare(struct sto *s, struct sto_wr *w, const void *key, size_t klen,
                   const struct iovec *iov, int iovcnt) {
    memset(w, 0, sizeof(*w));
    uint64_t len = 0;
    uint32_t crc = 0;
    for (int i = 0; i < iovcnt; i++) {
        len += iov[i].iov_len;
        crc = sto_crc32c(crc, iov[i].iov_base, iov[i].iov_len);
    }
    w->rec.flags = STO_REC_PUT;
    w->rec.key_len = (uint16_t)klen;
    w->rec.key = key;
    w->rec.value_len = len;
    w->rec.value_crc = crc;
    w->fd = -1;
    return sto_rec_layout(&w->rec, s->align);
}

/*
 * Publishes a written record: its reservation given back, the limits checked again (fit),
 * backend commit, index insert, older version released. Under s->mu; takes the key's shard before
 * the commit, which may change what the key's reads see (file-per-key renames the new file over the
 * old one).
 */
static int publish(struct sto *s, struct sto_wr *w) {
    unreserve(s, w);
    int rc = fit(s, w);
    if (rc)
        return rc;
    struct sto_rec r = w->rec;
    r.rec_off = w->off;
    struct sto_ent *e = ent_new(&r, w->loc);
    struct sto_shard *sh = shard_of(s, e);
    pthread_rwlock_wrlock(&sh->rw);
    rc = s->ops->commit(s, w, e);
    if (rc) {
        pthread_rwlock_unlock(&sh->rw);
        sto__ent_free(e);
        return rc;
    }
    struct sto_ent *old = lookup(s, e->key, e->klen);
    if (old) {
        index_del(s, old);
        s->ops->release(s, old, true);
        sto__ent_free(old);
    }
    index_add(s, e);
    pthread_rwlock_unlock(&sh->rw);
    if (old)
        s->ops->flush(s);
    s->n_puts++;
    return 0;
}

int sto_put(struct sto *s, const void *key, size_t klen, const struct iovec *iov, int iovcnt) {
    if (!key_ok(key, klen) || iovcnt < 0)
        return -EINVAL;
    struct sto_wr w;
    int rc = prepare(s, &w, key, klen, iov, iovcnt);
    if (rc)
        return rc;
    uint8_t hdr[STO_REC_HDR + STO_KEY_MAX];
    pthread_mutex_lock(&s->put_mu);
    pthread_mutex_lock(&s->mu);
    w.rec.seq = s->next_seq++;
    size_t hlen = sto_rec_encode(&w.rec, hdr);
    rc = reserve(s, &w, NULL);
    if (rc == 0) {
        rc = alloc_evicting(s, &w);
        if (rc)
            unreserve(s, &w);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc == 0) {
        struct sto_slot *sl = sto__slot_get(s);
        rc = write_record(s, sl, &w, hdr, hlen, iov, iovcnt);
        sto__slot_put(sl);
        pthread_mutex_lock(&s->mu);
        if (rc == 0)
            rc = publish(s, &w);
        if (rc) {
            unreserve(s, &w);
            s->ops->abort(s, &w);
        }
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&s->put_mu);
    return rc;
}

int sto_put_buf(struct sto *s, const void *key, size_t klen, const void *value, size_t len) {
    struct iovec iov = {.iov_base = (void *)value, .iov_len = len};
    return sto_put(s, key, klen, &iov, 1);
}

/* Copies a value into staging while computing its CRC, in cache-sized steps. */
static uint32_t copy_crc(uint8_t *dst, const uint8_t *src, size_t len) {
    uint32_t crc = 0;
    for (size_t off = 0; off < len; off += 65536) {
        size_t n = len - off < 65536 ? len - off : 65536;
        memcpy(dst + off, src + off, n);
        crc = sto_crc32c(crc, dst + off, n);
    }
    return crc;
}

/* The latest of the group's reserved writes w[idx[0..nv)] with w[i]'s key, or NULL. */
static const struct sto_wr *group_prev(const struct sto_wr *w, const uint64_t *hash,
                                       const size_t *idx, unsigned nv, size_t i) {
    for (unsigned k = nv; k-- > 0;) {
        const struct sto_wr *x = &w[idx[k]];
        if (hash[idx[k]] == hash[i] && x->rec.key_len == w[i].rec.key_len &&
            memcmp(x->rec.key, w[i].rec.key, w[i].rec.key_len) == 0)
            return x;
    }
    return NULL;
}

/*
 * Puts items[0..n) (n <= STO_IO_DEPTH) whose records all fit in the staging buffer: space is
 * reserved under the lock, then each record is copied (with its CRC) and its write started at
 * once, so copying overlaps the writes before it; all are published together.
 */
static void put_group(struct sto *s, struct sto_slot *sl, struct sto_put_item *items, size_t n) {
    struct sto_wr *w = cm_malloc(sizeof(*w) * n);
    struct sto_iov *v = cm_malloc(sizeof(*v) * n);
    size_t *idx = cm_malloc(sizeof(*idx) * n);
    unsigned nv = 0;
    uint64_t *hash = cm_malloc(sizeof(*hash) * n);
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < n; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].rec = (struct sto_rec){.flags = STO_REC_PUT,
                                    .key_len = (uint16_t)items[i].klen,
                                    .key = items[i].key,
                                    .value_len = items[i].len};
        int rc = sto_rec_layout(&w[i].rec, s->align);
        if (rc == 0) {
            w[i].rec.seq = s->next_seq++;
            hash[i] = key_hash(items[i].key, items[i].klen);
            rc = reserve(s, &w[i], group_prev(w, hash, idx, nv, i));
        }
        if (rc == 0) {
            rc = alloc_evicting(s, &w[i]);
            if (rc)
                unreserve(s, &w[i]);
        }
        items[i].result = rc;
        if (rc == 0)
            idx[nv++] = i;
    }
    pthread_mutex_unlock(&s->mu);
    /* Records that follow each other in one file go out as one write of up to 1 MiB. */
    size_t pos = 0;
    unsigned nrun = 0;
    unsigned *run_of = cm_malloc(sizeof(*run_of) * (nv ? nv : 1));
    bool open_run = false;
    for (unsigned k = 0; k < nv; k++) {
        struct sto_wr *x = &w[idx[k]];
        uint8_t *rec = sl->stage + pos;
        size_t vend = x->rec.value_off + (size_t)x->rec.value_len;
        x->rec.value_crc =
            copy_crc(rec + x->rec.value_off, items[idx[k]].value, (size_t)x->rec.value_len);
        memset(rec + vend, 0, (size_t)x->rec.rec_len - vend);
        size_t hlen = sto_rec_encode(&x->rec, rec);
        memset(rec + hlen, 0, x->rec.value_off - hlen);
        struct sto_iov *r = open_run ? &v[nrun - 1] : NULL;
        if (r && r->fd == x->fd && r->off + r->len == x->off && r->buf + r->len == rec) {
            r->len += (size_t)x->rec.rec_len;
        } else {
            if (r && nrun - 1 < STO_IO_DEPTH)
                sto__io_start(s, sl, v, nrun - 1);
            v[nrun++] = (struct sto_iov){.fd = x->fd,
                                         .write = true,
                                         .buf = rec,
                                         .len = (size_t)x->rec.rec_len,
                                         .off = x->off,
                                         .fixed = true};
            open_run = true;
        }
        run_of[k] = nrun - 1;
        if (v[nrun - 1].len >= (1u << 20)) {
            if (nrun - 1 < STO_IO_DEPTH)
                sto__io_start(s, sl, v, nrun - 1);
            open_run = false;
        }
        pos += (size_t)x->rec.rec_len;
    }
    if (open_run && nrun - 1 < STO_IO_DEPTH)
        sto__io_start(s, sl, v, nrun - 1);
    /* at most STO_IO_DEPTH were started; the rest go through the ring's own queueing */
    sto__io_finish(s, sl, v, nrun, nrun < STO_IO_DEPTH ? nrun : STO_IO_DEPTH);
    pthread_mutex_lock(&s->mu);
    for (unsigned k = 0; k < nv; k++) {
        size_t i = idx[k];
        int rc = v[run_of[k]].res;
        if (rc == 0)
            rc = publish(s, &w[i]);
        if (rc) {
            unreserve(s, &w[i]);
            s->ops->abort(s, &w[i]);
        }
        items[i].result = rc;
    }
    pthread_mutex_unlock(&s->mu);
    cm_free(hash);
    cm_free(run_of);
    cm_free(idx);
    cm_free(v);
    cm_free(w);
}

int sto_batch_put(struct sto *s, struct sto_put_item *items, size_t n) {
    size_t i = 0;
    pthread_mutex_lock(&s->put_mu);
    struct sto_slot *sl = sto__slot_get(s);
    while (i < n) {
        size_t j = i, room = sl->stage_len;
        while (j < n && j - i < STO_IO_DEPTH * 4) {
            struct sto_rec r = {.key_len = (uint16_t)items[j].klen, .value_len = items[j].len};
            if (!key_ok(items[j].key, items[j].klen) || sto_rec_layout(&r, s->align) ||
                r.rec_len > room)
                break;
            room -= (size_t)r.rec_len;
            j++;
        }
        if (j == i) { /* too large for staging, or a bad key: the single path */
            sto__slot_put(sl);
            pthread_mutex_unlock(&s->put_mu);
            items[i].result =
                sto_put_buf(s, items[i].key, items[i].klen, items[i].value, items[i].len);
            pthread_mutex_lock(&s->put_mu);
            sl = sto__slot_get(s);
            i++;
            continue;
        }
        put_group(s, sl, items + i, j - i);
        i = j;
    }
    sto__slot_put(sl);
    pthread_mutex_unlock(&s->put_mu);
    int ok = 0;
    for (i = 0; i < n; i++)
        ok += items[i].result == 0;
    return ok;
}

/* ---------------------------------------------------------------- get */

/* Marks e used (lru). Under e's shard (shared). */
static void touch(struct sto *s, struct sto_ent *e) {
    if (s->policy != STO_EVICT_LRU)
        return;
    pthread_mutex_lock(&s->lru_mu);
    lru_unlink(s, e);
    lru_append(s, e);
    pthread_mutex_unlock(&s->lru_mu);
}

/* Aligned span [*a, *b) of the file that holds e's value. */
static void span(const struct sto *s, const struct sto_ent *e, uint64_t *a, uint64_t *b) {
    uint64_t v0 = e->rec_off + e->value_off, v1 = v0 + e->value_len;
    *a = v0 & ~(uint64_t)(s->align - 1);
    *b = (v1 + s->align - 1) & ~(uint64_t)(s->align - 1);
}

/* Reads e's value into buf through staging chunks (large values, unaligned buffers). */
static int read_chunked(struct sto *s, struct sto_slot *sl, const struct sto_ent *e, int fd,
                        uint8_t *buf, uint32_t *crc) {
    uint64_t a, b, v0 = e->rec_off + e->value_off, v1 = v0 + e->value_len;
    span(s, e, &a, &b);
    for (uint64_t pos = a; pos < b;) {
        size_t n = (size_t)(b - pos < sl->stage_len ? b - pos : sl->stage_len);
        struct sto_iov v = {.fd = fd, .buf = sl->stage, .len = n, .off = pos, .fixed = true};
        int rc = sto__io_run(s, sl, &v, 1);
        if (rc)
            return rc;
        uint64_t x = pos > v0 ? pos : v0, y = pos + n < v1 ? pos + n : v1;
        if (x < y) {
            memcpy(buf + (x - v0), sl->stage + (x - pos), (size_t)(y - x));
            *crc = sto_crc32c(*crc, buf + (x - v0), (size_t)(y - x));
        }
        pos += n;
    }
    return 0;
}

/* Checks a value's CRC; counts a mismatch. */
static int verify(struct sto *s, const struct sto_ent *e, uint32_t crc) {
    if (!s->cfg.record_crc || crc == e->value_crc)
        return 0;
    sto__count_corrupt(s, 1);
    return -CM_ECORRUPT;
}

ssize_t sto_get(struct sto *s, const void *key, size_t klen, void *buf, size_t cap) {
    struct sto_get_item it = {.key = key, .klen = klen, .buf = buf, .cap = cap};
    sto_batch_get(s, &it, 1);
    return it.result;
}

/* One planned read of a batch get. */
struct get_plan {
    struct sto_ent *e;
    int fd;
    bool direct_to_user;
    uint8_t *stage; /* where the span lands when not direct */
    uint64_t a;     /* span start */
};

/* Looks up item; returns 0 and fills p, or a negative result for the item. Under the item's
 * shard (shared). */
static ssize_t plan_item(struct sto *s, struct sto_get_item *it, struct get_plan *p) {
    if (!key_ok(it->key, it->klen))
        return -EINVAL;
    p->e = lookup(s, it->key, it->klen);
    if (!p->e)
        return -CM_EOBJECT_NOT_FOUND;
    if (p->e->value_len > it->cap)
        return -ENOBUFS;
    p->fd = s->ops->get_fd(s, p->e);
    if (p->fd < 0)
        return p->fd;
    touch(s, p->e);
    return 0;
}

/* Finishes a planned read: copy out of staging, CRC check. */
static ssize_t finish_item(struct sto *s, struct sto_get_item *it, struct get_plan *p) {
    const struct sto_ent *e = p->e;
    uint32_t crc;
    if (p->direct_to_user) {
        crc = sto_crc32c(0, it->buf, (size_t)e->value_len);
    } else {
        uint64_t v0 = e->rec_off + e->value_off;
        memcpy(it->buf, p->stage + (v0 - p->a), (size_t)e->value_len);
        crc = sto_crc32c(0, it->buf, (size_t)e->value_len);
    }
    int rc = verify(s, e, crc);
    return rc ? rc : (ssize_t)e->value_len;
}

/* A batch get's state for get_done(). */
struct get_ctx {
    struct sto *s;
    struct sto_get_item *items;
    struct get_plan *p;
    struct sto_iov *v;
    unsigned *vi;
};

/* Finishes one read as it completes (CRC and copy overlap the reads still in flight). */
static void get_done(void *arg, unsigned k) {
    struct get_ctx *c = arg;
    unsigned i = c->vi[k];
    struct get_plan *q = &c->p[i];
    c->items[i].result = c->v[k].res ? c->v[k].res : finish_item(c->s, &c->items[i], q);
    c->s->ops->put_fd(c->s, q->e, q->fd);
}

/* Takes (lock) or drops the shared locks of the shards in mask, in ascending order. */
static void lock_shards(struct sto *s, uint32_t mask, bool lock) {
    for (unsigned i = 0; i < STO_SHARDS; i++) {
        if (!(mask & (1u << i)))
            continue;
        if (lock)
            pthread_rwlock_rdlock(&s->shards[i].rw);
        else
            pthread_rwlock_unlock(&s->shards[i].rw);
    }
}

int sto_batch_get(struct sto *s, struct sto_get_item *items, size_t n) {
    struct get_plan *p = cm_calloc(n ? n : 1, sizeof(*p));
    struct sto_iov *v = cm_calloc(n ? n : 1, sizeof(*v));
    unsigned *vi = cm_calloc(n ? n : 1, sizeof(*vi));
    uint32_t mask = 0;
    for (size_t i = 0; i < n; i++)
        if (key_ok(items[i].key, items[i].klen))
            mask |= 1u << shard_idx(items[i].key, items[i].klen);
    struct sto_slot *sl = sto__slot_get(s);
    lock_shards(s, mask, true);
    size_t i = 0;
    while (i < n) {
        size_t room = sl->stage_len, used = 0;
        unsigned nv = 0;
        for (; i < n; i++) {
            struct sto_get_item *it = &items[i];
            it->result = plan_item(s, it, &p[i]);
            if (it->result)
                continue;
            if (p[i].e->value_len == 0) { /* nothing to read */
                s->ops->put_fd(s, p[i].e, p[i].fd);
                continue;
            }
            uint64_t a, b;
            span(s, p[i].e, &a, &b);
            p[i].a = a;
            uint64_t v0 = p[i].e->rec_off + p[i].e->value_off;
            p[i].direct_to_user = s->align && a == v0 && b - a == p[i].e->value_len &&
                                  ((uintptr_t)it->buf & (s->align - 1)) == 0;
            if (!p[i].direct_to_user && b - a > room) {
                if (nv > 0 || b - a <= sl->stage_len) {
                    s->ops->put_fd(s, p[i].e, p[i].fd);
                    break; /* next group */
                }
                uint32_t crc = 0; /* larger than all staging: chunked, alone */
                int rc = read_chunked(s, sl, p[i].e, p[i].fd, it->buf, &crc);
                it->result = rc ? rc : verify(s, p[i].e, crc);
                if (it->result == 0)
                    it->result = (ssize_t)p[i].e->value_len;
                s->ops->put_fd(s, p[i].e, p[i].fd);
                p[i].e = NULL;
                continue;
            }
            uint8_t *dst = p[i].direct_to_user ? it->buf : sl->stage + used;
            if (!p[i].direct_to_user) {
                p[i].stage = dst;
                used += (size_t)(b - a);
                room -= (size_t)(b - a);
            }
            v[nv] = (struct sto_iov){.fd = p[i].fd,
                                     .buf = dst,
                                     .len = (size_t)(b - a),
                                     .off = a,
                                     .fixed = !p[i].direct_to_user};
            vi[nv++] = (unsigned)i;
        }
        struct get_ctx gc = {.s = s, .items = items, .p = p, .v = v, .vi = vi};
        sto__io_run_cb(s, sl, v, nv, get_done, &gc);
    }
    lock_shards(s, mask, false);
    sto__slot_put(sl);
    int ok = 0;
    for (i = 0; i < n; i++)
        ok += items[i].result >= 0;
    __atomic_fetch_add(&s->n_gets, n, __ATOMIC_RELAXED);
    cm_free(vi);
    cm_free(v);
    cm_free(p);
    return ok;
}

/* ---------------------------------------------------------------- metadata calls */

ssize_t sto_get_size(struct sto *s, const void *key, size_t klen) {
    if (!key_ok(key, klen))
        return -EINVAL;
    struct sto_shard *sh = &s->shards[shard_idx(key, klen)];
    pthread_rwlock_rdlock(&sh->rw);
    struct sto_ent *e = lookup(s, key, klen);
    ssize_t r = e ? (ssize_t)e->value_len : -CM_EOBJECT_NOT_FOUND;
    pthread_rwlock_unlock(&sh->rw);
    return r;
}

int sto_exists(struct sto *s, const void *key, size_t klen) {
    return sto_get_size(s, key, klen) >= 0;
}

int sto_remove(struct sto *s, const void *key, size_t klen) {
    if (!key_ok(key, klen))
        return -EINVAL;
    pthread_mutex_lock(&s->mu);
    struct sto_ent *e = lookup(s, key, klen);
    int rc = -CM_EOBJECT_NOT_FOUND;
    if (e) {
        struct sto_shard *sh = shard_of(s, e);
        pthread_rwlock_wrlock(&sh->rw); /* waits for the reads of e's shard */
        drop(s, e);
        pthread_rwlock_unlock(&sh->rw);
        rc = s->ops->flush(s);
        s->n_removes++;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

struct scan_ctx {
    sto_scan_cb *cb;
    void *arg;
    int n;
};

static void scan_visit(struct cm_ht_node *node, void *arg) {
    struct scan_ctx *c = arg;
    const struct sto_ent *e = (const struct sto_ent *)node;
    c->cb(e->key, e->klen, e->value_len, c->arg);
    c->n++;
}

#define SCAN_SHARD_SHIFT 56 /* a cursor: shard << 56 | that shard's table cursor */

int sto_scan(struct sto *s, uint64_t *cursor, sto_scan_cb *cb, void *arg) {
    struct scan_ctx c = {.cb = cb, .arg = arg};
    uint64_t sh = *cursor >> SCAN_SHARD_SHIFT;
    uint64_t in = *cursor & ((1ull << SCAN_SHARD_SHIFT) - 1);
    bool first = true; /* every call moves on by one bucket at least */
    while (sh < STO_SHARDS && (first || (uint64_t)c.n < s->cfg.scanmeta_keys_limit)) {
        struct sto_shard *x = &s->shards[sh];
        pthread_rwlock_rdlock(&x->rw);
        do {
            in = cm_ht_scan(&x->ht, in, scan_visit, &c);
            first = false;
        } while (in != 0 && (uint64_t)c.n < s->cfg.scanmeta_keys_limit);
        pthread_rwlock_unlock(&x->rw);
        if (in == 0)
            sh++;
    }
    *cursor = sh >= STO_SHARDS ? 0 : sh << SCAN_SHARD_SHIFT | in;
    return c.n;
}

void sto_stats(struct sto *s, struct sto_stats *st) {
    memset(st, 0, sizeof(*st));
    pthread_mutex_lock(&s->mu);
    st->bytes = s->bytes;
    st->keys = s->keys;
    st->quota_bytes = s->quota_bytes;
    st->disk_bytes = s->disk_bytes;
    st->reserved_bytes = s->res_bytes;
    st->reserved_keys = s->res_keys;
    st->puts = s->n_puts;
    st->removes = s->n_removes;
    st->evictions = s->n_evictions;
    st->recovered = s->n_recovered;
    pthread_mutex_unlock(&s->mu);
    st->gets = __atomic_load_n(&s->n_gets, __ATOMIC_RELAXED);
    st->torn = __atomic_load_n(&s->n_torn, __ATOMIC_RELAXED);
    st->corrupt = __atomic_load_n(&s->n_corrupt, __ATOMIC_RELAXED);
    st->backend = sto_backend_name(s->cfg.backend);
    st->io = s->uring ? "io_uring" : "psync";
    st->io_note = s->io_note ? s->io_note : "";
    st->direct_io = s->direct;
    for (unsigned i = 0; i < STO_IO_SLOTS; i++)
        st->registered_buffers |= s->uring && s->slots[i].registered;
}

void sto__put_fd_keep(struct sto *s, const struct sto_ent *e, int fd) {
    (void)s;
    (void)e;
    (void)fd;
}
