/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The embedded segment as a pool segment (srv_pool_seg.h): the shared allocator the pool core
 * calls, the master's listening transfer engine that serves the segment's memory, the mount and
 * its upkeep, the local shortcut for the master's own transfers, and the keyspace's strings
 * answered as pool objects with their read leases.
 */
#include "common/fmacros.h"

#include "server/srv_pool_seg.h"

#include "server/srv_db.h"
#include "server/srv_mc.h"
#include "server/srv_oplog.h"
#include "server/srv_pool_kv.h"
#include "server/srv_pubsub.h"
#include "server/srv_seg.h"
#include "server/srv_server.h"

#include "common/cm_atomic.h"
#include "common/cm_errno.h"
#include "common/cm_hash.h"
#include "common/cm_ht.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "transfer/xfer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set once by srv_pseg_start (main thread, before the loops run), read-only afterwards. */
static struct xfer_engine *srv_pseg_eng;
static char srv_pseg_hostname[POOL_MAX_NAME_LEN / 2] = "crescent-master";
static char srv_pseg_segname[POOL_MAX_NAME_LEN] = "";
static char srv_pseg_endpoint[POOL_MAX_NAME_LEN];
static void *srv_pseg_desc;
static size_t srv_pseg_desc_len;
static _Atomic int srv_pseg_on;

/* ---------------------------------------------------------------- the shared allocator */

static uint32_t srv_pseg_alloc(void *arg, uint64_t len, uint64_t *off) {
    struct srv_seg *seg = arg;
    struct srv_block blk;
    if (srv_seg_alloc(seg, len, &blk) != 0)
        return 0;
    *off = (uint64_t)(blk.ptr - srv_seg_base(seg));
    return blk.handle;
}

static void srv_pseg_free(void *arg, uint32_t handle) {
    srv_seg_free(arg, handle);
}

static uint64_t srv_pseg_offset(void *arg, uint32_t handle) {
    return (uint64_t)(srv_seg_ptr(arg, handle) - srv_seg_base(arg));
}

static uint64_t srv_pseg_block_size(void *arg, uint32_t handle) {
    return srv_seg_block_capacity(arg, handle);
}

static uint64_t srv_pseg_used(void *arg) {
    return srv_seg_used(arg);
}

/* ---------------------------------------------------------------- engine and mount */

/*
 * The host the engine listens on: the first --bind address unless it is a wildcard, else
 * MC_TCP_BIND_ADDRESS, else 127.0.0.1.
 */
static void srv_pseg_pick_host(char *buf, size_t len) {
    char first[256] = "";
    if (srv_cfg.bind)
        sscanf(srv_cfg.bind, "%255s", first);
    const char *env = getenv("MC_TCP_BIND_ADDRESS");
    const char *h = first;
    if (!h[0] || !strcmp(h, "0.0.0.0") || !strcmp(h, "::") || !strcmp(h, "*") || !strcmp(h, "[::]"))
        h = env && env[0] ? env : "127.0.0.1";
    snprintf(buf, len, "%s", h[0] == '-' ? h + 1 : h); /* "-::1" marks an optional bind */
}

/* Installs the transports of embedded_segment_protocols besides tcp (a failure is logged: the
 * segment is served without that one). */
static void srv_pseg_install_more(struct xfer_engine *e) {
    char list[256];
    snprintf(list, sizeof(list), "%s",
             srv_cfg.embedded_segment_protocols ? srv_cfg.embedded_segment_protocols : "");
    for (char *save = NULL, *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        if (strcmp(t, "tcp") == 0)
            continue;
        int rc = xfer_engine_install(e, t, NULL);
        if (rc < 0)
            cm_log(CM_LOG_WARNING, "pool", "embedded segment served without %s: %s", t,
                   cm_strerror(rc));
    }
}

/* Creates the engine listening on host, with tcp and embedded_segment_protocols. */
static int srv_pseg_engine_create(const char *host, struct xfer_engine **out) {
    char listen[300];
    int v6 = strchr(host, ':') != NULL && host[0] != '[';
    snprintf(listen, sizeof(listen), v6 ? "[%s]:0" : "%s:0", host);
    struct xfer_engine_opts o = {0};
    o.local_name = "crescent-master";
    o.listen = listen;
    o.timeout_ms = SRV_PKV_TIMEOUT_MS;
    o.handshake_timeout_ms = SRV_PKV_TIMEOUT_MS;
    int rc = xfer_engine_create(&o, out);
    if (rc == 0)
        rc = xfer_engine_install(*out, "tcp", NULL);
    if (rc < 0) {
        cm_log(CM_LOG_WARNING, "pool",
               "embedded segment: cannot create a transfer engine on %s: %s", listen,
               cm_strerror(rc));
        xfer_engine_destroy(*out);
        *out = NULL;
        return rc;
    }
    srv_pseg_install_more(*out);
    return 0;
}

/* Registers the segment's memory (memfd first, so shm peers map it) and exports the
 * descriptor into srv_pseg_desc. */
static int srv_pseg_register(struct xfer_engine *e) {
    char *base = srv_seg_base(srv_segment);
    size_t size = (size_t)srv_seg_size(srv_segment);
    int rc = xfer_engine_adopt_shared(e, base, size, srv_seg_memfd(srv_segment));
    if (rc == 0)
        rc = xfer_engine_register(e, base, size, "cpu:0", XFER_REG_REMOTE);
    ssize_t n = rc == 0 ? xfer_engine_export_desc(e, NULL, 0) : rc;
    if (n > 0) {
        srv_pseg_desc = cm_malloc((size_t)n);
        n = xfer_engine_export_desc(e, srv_pseg_desc, (size_t)n);
    }
    if (n < 0) {
        cm_log(CM_LOG_WARNING, "pool", "embedded segment: cannot register it: %s",
               cm_strerror((int)n));
        return (int)n;
    }
    srv_pseg_desc_len = (size_t)n;
    return xfer_engine_local_addr(e, srv_pseg_endpoint, sizeof(srv_pseg_endpoint)) < 0 ? -1 : 0;
}

/* Mounts (or refreshes) the segment in the current pool. Pool mutex held. Returns a pool code. */
static int srv_pseg_mount(int64_t now) {
    const struct pool_uuid *id = srv_pkv_self(now);
    struct pool_segment_spec spec = {.name = srv_pseg_segname,
                                     .base = (uint64_t)(uintptr_t)srv_seg_base(srv_segment),
                                     .size = srv_seg_size(srv_segment),
                                     .endpoint = srv_pseg_endpoint,
                                     .protocol = "tcp",
                                     .desc = srv_pseg_desc,
                                     .desc_len = srv_pseg_desc_len};
    struct pool_seg_allocator a = {srv_pseg_alloc,      srv_pseg_free, srv_pseg_offset,
                                   srv_pseg_block_size, srv_pseg_used, srv_segment};
    return pool_segment_mount_shared(srv_mc_pool, id, &spec, &a, now);
}

int srv_pseg_start(void) {
    if (!srv_segment || !srv_cfg.embedded_segment_in_pool || srv_cfg.enable_ha ||
        srv_oplog_enabled())
        return 0;
    if (srv_seg_size(srv_segment) < POOL_MIN_SEGMENT ||
        srv_seg_size(srv_segment) > POOL_MAX_SEGMENT) {
        cm_log(CM_LOG_NOTICE, "pool", "embedded segment of %llu bytes not mounted into the pool",
               (unsigned long long)srv_seg_size(srv_segment));
        return 0;
    }
    char host[sizeof(srv_pseg_hostname)];
    srv_pseg_pick_host(host, sizeof(host));
    struct xfer_engine *e;
    if (srv_pseg_engine_create(host, &e) < 0)
        return 0; /* logged: the master serves Redis without it */
    if (srv_pseg_register(e) < 0) {
        xfer_engine_destroy(e);
        cm_free(srv_pseg_desc);
        srv_pseg_desc = NULL;
        return 0;
    }
    snprintf(srv_pseg_hostname, sizeof(srv_pseg_hostname), "%s", host);
    int v6 = strchr(host, ':') != NULL && host[0] != '[';
    snprintf(srv_pseg_segname, sizeof(srv_pseg_segname), v6 ? "master@[%s]:%lld" : "master@%s:%lld",
             host, srv_cfg.port);
    srv_pseg_eng = e;
    srv_mc_lock();
    int rc = srv_pseg_mount(srv_mc_now());
    srv_mc_unlock();
    if (rc != POOL_OK) { /* cannot happen with a fresh pool; the master goes on without it */
        cm_log(CM_LOG_WARNING, "pool", "embedded segment: mount of %s refused: %s",
               srv_pseg_segname, pool_err_name(rc));
        srv_pseg_eng = NULL;
        xfer_engine_destroy(e);
        return 0;
    }
    cm_atomic_store_release(&srv_pseg_on, 1);
    cm_log(CM_LOG_NOTICE, "pool",
           "embedded segment mounted into the pool as %s (%llu bytes), "
           "served at %s",
           srv_pseg_segname, (unsigned long long)srv_seg_size(srv_segment), srv_pseg_endpoint);
    return 0;
}

void srv_pseg_stop(void) {
    srv_pseg_kv_release_all();
    cm_atomic_store_release(&srv_pseg_on, 0);
    xfer_engine_destroy(srv_pseg_eng);
    srv_pseg_eng = NULL;
    cm_free(srv_pseg_desc);
    srv_pseg_desc = NULL;
}

static void srv_pseg_lease_sweep(int64_t now);

void srv_pseg_tick(int64_t now) {
    srv_pseg_lease_sweep(now);
    if (!cm_atomic_load_acquire(&srv_pseg_on) || !srv_mc_pool)
        return;
    struct pool_segment_info info;
    if (pool_segment_query(srv_mc_pool, srv_pseg_segname, &info) == POOL_OK)
        return;
    int rc = srv_pseg_mount(now);
    if (rc == POOL_OK)
        cm_log(CM_LOG_NOTICE, "pool", "embedded segment %s mounted again", srv_pseg_segname);
    else /* e.g. a client took the name meanwhile: tried again every tick, logged sparsely */
        cm_log_sparse(60000, CM_LOG_WARNING, "pool", "embedded segment %s cannot be mounted: %s",
                      srv_pseg_segname, pool_err_name(rc));
}

struct xfer_engine *srv_pseg_engine(void) {
    return cm_atomic_load_acquire(&srv_pseg_on) ? srv_pseg_eng : NULL;
}

const char *srv_pseg_host(void) {
    return srv_pseg_hostname;
}

const char *srv_pseg_name(void) {
    return cm_atomic_load_acquire(&srv_pseg_on) ? srv_pseg_segname : "";
}

char *srv_pseg_local(const char *segment, uint64_t addr, uint64_t len) {
    if (!cm_atomic_load_acquire(&srv_pseg_on) || strcmp(segment, srv_pseg_segname) != 0)
        return NULL;
    uint64_t base = (uint64_t)(uintptr_t)srv_seg_base(srv_segment);
    uint64_t size = srv_seg_size(srv_segment);
    if (addr < base || len > size || addr - base > size - len)
        return NULL;
    return (char *)(uintptr_t)addr;
}

uint64_t srv_pseg_evict(uint64_t need) {
    if (!cm_atomic_load_acquire(&srv_pseg_on) || srv_mc_object_hint() == 0)
        return 0;
    srv_mc_lock();
    uint64_t n =
        srv_mc_pool ? pool_evict_segment(srv_mc_pool, srv_pseg_segname, srv_mc_now(), need) : 0;
    srv_mc_unlock();
    return n;
}

/* ---------------------------------------------------------------- keyspace strings */

/* One read lease on a keyspace object: holds a pin (srv_obj_ref) until `until`. */
struct srv_pseg_lease {
    struct cm_ht_node node; /* node.hash: hash of the object's address */
    struct srv_obj *o;
    int64_t until;               /* pool clock */
    struct srv_pseg_lease *dead; /* sweep list */
};

/* Leases by object, under srv_pseg_lease_mu (a leaf lock: taken under the pool mutex or a
 * shard lock, nothing taken under it). */
static pthread_mutex_t srv_pseg_lease_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cm_ht srv_pseg_leases;
static int srv_pseg_leases_on;

static uint64_t srv_pseg_lease_hash(const struct srv_obj *o) {
    return cm_hash64(&o, sizeof(o), 0x5bd1e995u);
}

static int srv_pseg_lease_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    (void)klen;
    return ((const struct srv_pseg_lease *)n)->o == key;
}

/* o's lease, or NULL. srv_pseg_lease_mu held. */
static struct srv_pseg_lease *srv_pseg_lease_find(const struct srv_obj *o) {
    if (!srv_pseg_leases_on)
        return NULL;
    return (struct srv_pseg_lease *)cm_ht_find(&srv_pseg_leases, srv_pseg_lease_hash(o), o,
                                               sizeof(o), srv_pseg_lease_eq);
}

/* The lease deadline of o (0 when none). Takes srv_pseg_lease_mu. */
static int64_t srv_pseg_lease_until(const struct srv_obj *o) {
    pthread_mutex_lock(&srv_pseg_lease_mu);
    struct srv_pseg_lease *l = srv_pseg_lease_find(o);
    int64_t until = l ? l->until : 0;
    pthread_mutex_unlock(&srv_pseg_lease_mu);
    return until;
}

/*
 * Grants or extends kv's object's lease to until. A new lease takes a pin of its own (kv's pin
 * keeps the object alive meanwhile, so no shard lock is needed); kv keeps its pin. Takes
 * srv_pseg_lease_mu.
 */
static void srv_pseg_lease_grant(const struct srv_pseg_kv *kv, int64_t until) {
    pthread_mutex_lock(&srv_pseg_lease_mu);
    struct srv_pseg_lease *l = srv_pseg_lease_find(kv->o);
    if (l) {
        if (until > l->until)
            l->until = until;
    } else {
        if (!srv_pseg_leases_on) {
            cm_ht_init(&srv_pseg_leases, 16);
            srv_pseg_leases_on = 1;
        }
        l = cm_malloc(sizeof(*l));
        memset(l, 0, sizeof(*l));
        l->node.hash = srv_pseg_lease_hash(kv->o);
        l->o = kv->o;
        l->until = until;
        srv_obj_ref(kv->o);
        cm_ht_insert(&srv_pseg_leases, &l->node);
    }
    pthread_mutex_unlock(&srv_pseg_lease_mu);
}

struct srv_pseg_sweep {
    int64_t now; /* INT64_MAX: every lease */
    struct srv_pseg_lease *dead;
};

static void srv_pseg_sweep_visit(struct cm_ht_node *n, void *arg) {
    struct srv_pseg_sweep *sw = arg;
    struct srv_pseg_lease *l = (struct srv_pseg_lease *)n;
    if (l->until <= sw->now) {
        l->dead = sw->dead;
        sw->dead = l;
    }
}

/* Ends the leases due at now: unpins their objects (a block unlinked meanwhile is freed). */
static void srv_pseg_lease_sweep(int64_t now) {
    struct srv_pseg_sweep sw = {now, NULL};
    pthread_mutex_lock(&srv_pseg_lease_mu);
    if (srv_pseg_leases_on && cm_ht_count(&srv_pseg_leases) > 0) {
        cm_ht_foreach(&srv_pseg_leases, srv_pseg_sweep_visit, &sw);
        for (struct srv_pseg_lease *l = sw.dead; l; l = l->dead)
            cm_ht_remove(&srv_pseg_leases, &l->node);
    }
    pthread_mutex_unlock(&srv_pseg_lease_mu);
    while (sw.dead) {
        struct srv_pseg_lease *l = sw.dead;
        sw.dead = l->dead;
        srv_obj_unref(l->o);
        cm_free(l);
    }
}

void srv_pseg_kv_release_all(void) {
    srv_pseg_lease_sweep(INT64_MAX);
    pthread_mutex_lock(&srv_pseg_lease_mu);
    if (srv_pseg_leases_on) {
        cm_ht_fini(&srv_pseg_leases);
        srv_pseg_leases_on = 0;
    }
    pthread_mutex_unlock(&srv_pseg_lease_mu);
}

/* 1 when o (a live key, its shard lock held) is answered as a pool object: a non-empty string
 * resident in the segment. */
static int srv_pseg_kv_visible(const struct srv_obj *o) {
    return o->type == SRV_TYPE_STRING && !srv_obj_offloaded(o) && o->vlen > 0;
}

/* The object a keyspace read of key answers as a pool object, or NULL. Shard lock r held. */
static struct srv_obj *srv_pseg_kv_find(struct srv_db_ref *r, int touch) {
    struct srv_obj *o = touch ? srv_db_find(r, srv_now_ms()) : srv_db_peek(r, srv_now_ms());
    return o && srv_pseg_kv_visible(o) ? o : NULL;
}

/* Pins o (a visible string; its shard lock held) into kv. */
static void srv_pseg_kv_take(struct srv_obj *o, struct srv_pseg_kv *kv) {
    srv_obj_ref(o);
    kv->o = o;
    kv->key = o->key;
    kv->klen = o->klen;
    kv->addr = (uint64_t)(uintptr_t)srv_obj_val(o);
    kv->size = o->vlen;
}

int srv_pseg_kv_pin(const void *key, size_t klen, int touch, struct srv_pseg_kv *kv) {
    kv->o = NULL;
    if (!cm_atomic_load_acquire(&srv_pseg_on) || klen == 0 || srv_db_shard_empty(key, klen))
        return 0;
    struct srv_db_ref r;
    srv_db_lock(&r, key, klen);
    struct srv_obj *o = srv_pseg_kv_find(&r, touch);
    if (o)
        srv_pseg_kv_take(o, kv);
    srv_db_unlock(&r);
    return o != NULL;
}

/* 1 when the segment is mounted with status OK in the current pool (its record in *info).
 * Pool mutex held. */
static int srv_pseg_seg_ok(struct pool_segment_info *info) {
    return cm_atomic_load_acquire(&srv_pseg_on) && srv_mc_pool &&
           pool_segment_query(srv_mc_pool, srv_pseg_segname, info) == POOL_OK &&
           info->status == POOL_SEG_OK &&
           info->base == (uint64_t)(uintptr_t)srv_seg_base(srv_segment);
}

int srv_pseg_kv_ready(void) {
    struct pool_segment_info info;
    return srv_pseg_seg_ok(&info);
}

int srv_pseg_kv_answer(struct srv_pseg_kv *kv, int64_t now, int lease, struct pool_replica_desc *d,
                       int64_t *lease_until) {
    struct pool_segment_info info;
    if (!kv->o || !srv_pseg_seg_ok(&info))
        return 0; /* nothing pinned, or the segment is not (or no longer) ours in this pool */
    *d = (struct pool_replica_desc){.type = POOL_REPLICA_MEMORY,
                                    .status = POOL_REPLICA_COMPLETE,
                                    .segment = info.name,
                                    .endpoint = info.endpoint,
                                    .protocol = info.protocol,
                                    .seg_desc = info.desc,
                                    .seg_desc_len = info.desc_len,
                                    .seg_gen = 0, /* not the pool's: rendered afresh */
                                    .addr = kv->addr,
                                    .size = kv->size};
    if (lease)
        srv_pseg_lease_grant(kv, now + srv_cfg.default_kv_lease_ttl);
    if (lease_until) {
        int64_t until = srv_pseg_lease_until(kv->o);
        *lease_until = until > now ? until : 0;
    }
    return 1;
}

void srv_pseg_kv_unpin(struct srv_pseg_kv *kv) {
    if (kv->o)
        srv_obj_unref(kv->o);
    kv->o = NULL;
}

/* Deletes the visible string of key (only when it is want, unless want is NULL) as DEL does:
 * the shard's unlink (WATCH) and a "del" event. Takes one shard lock. */
static int srv_pseg_kv_remove_key(const void *key, size_t klen, const struct srv_obj *want,
                                  int force, int64_t now) {
    if (!cm_atomic_load_acquire(&srv_pseg_on) || klen == 0)
        return POOL_EOBJECT_NOT_FOUND;
    struct srv_db_ref r;
    srv_db_lock(&r, key, klen);
    struct srv_obj *o = srv_pseg_kv_find(&r, 0);
    int rc = POOL_EOBJECT_NOT_FOUND;
    if (o && (!want || o == want)) {
        if (!force && srv_pseg_lease_until(o) > now) {
            rc = POOL_EOBJECT_HAS_LEASE;
        } else {
            srv_db_unlink(&r, o);
            rc = POOL_OK;
        }
    }
    srv_db_unlock(&r);
    if (rc == POOL_OK)
        srv_notify(SRV_NOTIFY_GENERIC, "del", key, klen);
    return rc;
}

int srv_pseg_kv_remove(const void *key, size_t klen, int force, int64_t now) {
    return srv_pseg_kv_remove_key(key, klen, NULL, force, now);
}

int srv_pseg_kv_remove_pinned(const struct srv_pseg_kv *kv, int force, int64_t now) {
    if (!kv->o)
        return POOL_EOBJECT_NOT_FOUND;
    return srv_pseg_kv_remove_key(kv->key, kv->klen, kv->o, force, now);
}

/* ---------------------------------------------------------------- keyspace walks */

/* 1 when o's key matches w's pattern (keys may hold any byte: REG_STARTEND spans the whole
 * key, matched from a NUL-terminated copy because sanitizers' regexec reads up to a NUL). */
static int srv_pseg_walk_match(struct srv_pseg_kv_walk *w, const struct srv_obj *o) {
    if (!w->has_re)
        return 1;
    if ((size_t)o->klen + 1 > w->cap) {
        w->cap = (size_t)o->klen + 1 > 256 ? (size_t)o->klen + 1 : 256;
        w->buf = cm_realloc(w->buf, w->cap);
    }
    memcpy(w->buf, o->key, o->klen);
    w->buf[o->klen] = '\0';
    regmatch_t rm = {.rm_so = 0, .rm_eo = (regoff_t)o->klen};
    return regexec(&w->re, w->buf, 1, &rm, REG_STARTEND) == 0;
}

struct srv_pseg_step {
    struct srv_pseg_kv_walk *w;
    struct srv_pseg_kv_set *set;
};

static void srv_pseg_walk_visit(struct srv_obj *o, void *arg) {
    struct srv_pseg_step *st = arg;
    if (!srv_pseg_kv_visible(o) || !srv_pseg_walk_match(st->w, o))
        return;
    struct srv_pseg_kv_set *set = st->set;
    if (set->n == set->cap) {
        set->cap = set->cap ? set->cap * 2 : 64;
        set->v = cm_realloc(set->v, set->cap * sizeof(*set->v));
    }
    if (st->w->touch)
        cm_atomic_store_relaxed(&o->lru, srv_lru_clock());
    srv_pseg_kv_take(o, &set->v[set->n++]);
}

int srv_pseg_kv_walk_init(struct srv_pseg_kv_walk *w, const char *pattern, int touch) {
    memset(w, 0, sizeof(*w));
    if (pattern && regcomp(&w->re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return POOL_EINVALID_PARAMS;
    w->has_re = pattern != NULL;
    w->touch = touch;
    w->done = !cm_atomic_load_acquire(&srv_pseg_on) || srv_db_size() == 0;
    return 0;
}

size_t srv_pseg_kv_walk_next(struct srv_pseg_kv_walk *w, size_t count,
                             struct srv_pseg_kv_set *set) {
    size_t before = set->n;
    if (!w->done) {
        struct srv_pseg_step st = {w, set};
        w->cursor = srv_db_scan(w->cursor, count, srv_now_ms(), srv_pseg_walk_visit, &st);
        w->done = w->cursor == 0;
    }
    return set->n - before;
}

void srv_pseg_kv_walk_fini(struct srv_pseg_kv_walk *w) {
    if (w->has_re)
        regfree(&w->re);
    cm_free(w->buf);
    w->buf = NULL;
    w->has_re = 0;
}

void srv_pseg_kv_set_unpin(struct srv_pseg_kv_set *set) {
    for (size_t i = 0; i < set->n; i++)
        srv_pseg_kv_unpin(&set->v[i]);
    cm_free(set->v);
    *set = (struct srv_pseg_kv_set){0};
}

struct srv_pseg_counts {
    uint64_t n, bytes;
};

static void srv_pseg_count_visit(struct srv_obj *o, void *arg) {
    struct srv_pseg_counts *c = arg;
    if (srv_pseg_kv_visible(o)) {
        c->n++;
        c->bytes += o->vlen;
    }
}

void srv_pseg_kv_count(uint64_t *n, uint64_t *bytes) {
    struct srv_pseg_counts c = {0, 0};
    if (cm_atomic_load_acquire(&srv_pseg_on) && srv_db_size() > 0)
        srv_db_scan(0, SIZE_MAX, srv_now_ms(), srv_pseg_count_visit, &c);
    *n = c.n;
    *bytes = c.bytes;
}
