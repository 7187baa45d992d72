/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One keyspace (srv_pool_kv.h): plain Redis commands on the distributed store's pool objects.
 * The master acts as a pool client of its own: it reads and writes replicas in client segments
 * with its own transfer engine, opened lazily, and caches the segments it opened.
 */
#include "common/fmacros.h"

#include "server/srv_pool_kv.h"

#include "server/srv_client.h"
#include "server/srv_db.h"
#include "server/srv_defer.h"
#include "server/srv_mc.h"
#include "server/srv_oplog.h"
#include "server/srv_pool_seg.h"
#include "server/srv_pubsub.h"
#include "server/srv_server.h"
#include "server/srv_watch.h"

#include "common/cm_buf.h"
#include "common/cm_errno.h"
#include "common/cm_hash.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_util.h"
#include "redis-compat/resp_write.h"
#include "transfer/xfer.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#define SRV_PKV_MAX_PEERS 256 /* opened segments kept; unused ones beyond are closed */

/* A replica descriptor copied out of the pool (its strings are only valid under the lock). */
struct srv_pkv_rep {
    char segment[POOL_MAX_NAME_LEN + 1];
    char endpoint[POOL_MAX_NAME_LEN + 1];
    void *desc; /* cm_malloc copy of the segment descriptor, NULL when none */
    size_t desc_len;
    uint64_t addr;
    uint64_t size;
};

/* A client segment opened by the master's engine. */
struct srv_pkv_peer {
    struct srv_pkv_peer *next;
    char *name;
    void *desc;
    size_t desc_len;
    struct xfer_segment *seg;
    int refs;  /* transfers using it (under srv_pkv_peer_mu) */
    bool dead; /* unlinked: closed when refs drops to 0 */
};

static pthread_mutex_t srv_pkv_eng_mu = PTHREAD_MUTEX_INITIALIZER;
static struct xfer_engine *srv_pkv_eng;
static int srv_pkv_eng_failed;

static pthread_mutex_t srv_pkv_peer_mu = PTHREAD_MUTEX_INITIALIZER;
static struct srv_pkv_peer *srv_pkv_peers;
static unsigned srv_pkv_npeers;

static pthread_once_t srv_pkv_id_once = PTHREAD_ONCE_INIT;
static struct pool_uuid srv_pkv_id; /* the master's own client id */

/* ---------------------------------------------------------------- the master as a client */

static void srv_pkv_make_id(void) {
    if (getrandom(srv_pkv_id.b, sizeof(srv_pkv_id.b), 0) != (ssize_t)sizeof(srv_pkv_id.b)) {
        uint64_t a = cm_rand64(), b = cm_rand64();
        memcpy(srv_pkv_id.b, &a, 8);
        memcpy(srv_pkv_id.b + 8, &b, 8);
    }
}

/* Registers (or refreshes) the master's client id; a new registration goes to the HA op-log,
 * as MC.REGISTER's does (a new leader registers its own id on its first write). Pool mutex
 * held. */
static void srv_pkv_register(int64_t now) {
    pthread_once(&srv_pkv_id_once, srv_pkv_make_id);
    int fresh = !pool_client_exists(srv_mc_pool, &srv_pkv_id);
    const char *host = srv_pseg_host();
    if (pool_client_register(srv_mc_pool, &srv_pkv_id, host, now) == 0 && fresh)
        srv_oplog_log_register(&srv_pkv_id, host);
}

const struct pool_uuid *srv_pkv_self(int64_t now) {
    srv_pkv_register(now);
    return &srv_pkv_id;
}

/* ---------------------------------------------------------------- engine and peers */

/* The master's engine, created on first use (tcp, plus shm when it installs). NULL on failure. */
static struct xfer_engine *srv_pkv_engine(void) {
    struct xfer_engine *pe = srv_pseg_engine(); /* the embedded segment's, when it listens */
    if (pe)
        return pe;
    pthread_mutex_lock(&srv_pkv_eng_mu);
    if (!srv_pkv_eng && !srv_pkv_eng_failed) {
        struct xfer_engine_opts o = {0};
        o.local_name = "crescent-master";
        o.listen = ""; /* initiator only */
        o.timeout_ms = SRV_PKV_TIMEOUT_MS;
        o.handshake_timeout_ms = SRV_PKV_TIMEOUT_MS;
        struct xfer_engine *e = NULL;
        int rc = xfer_engine_create(&o, &e);
        if (rc == 0)
            rc = xfer_engine_install(e, "tcp", NULL);
        if (rc < 0) {
            cm_log(CM_LOG_WARNING, "pool", "cannot create the transfer engine: %s",
                   cm_strerror(rc));
            xfer_engine_destroy(e);
            e = NULL;
            srv_pkv_eng_failed = 1;
        } else if ((rc = xfer_engine_install(e, "shm", NULL)) < 0) {
            cm_log(CM_LOG_NOTICE, "pool", "transfer engine without shm: %s", cm_strerror(rc));
        }
        srv_pkv_eng = e;
    }
    struct xfer_engine *e = srv_pkv_eng;
    pthread_mutex_unlock(&srv_pkv_eng_mu);
    return e;
}

static void srv_pkv_peer_free(struct srv_pkv_peer *p) {
    xfer_segment_close(p->seg);
    cm_free(p->name);
    cm_free(p->desc);
    cm_free(p);
}

/* Unlinks p from the cache (peer mutex held); returns 1 when it may be freed now. */
static int srv_pkv_peer_unlink(struct srv_pkv_peer *p) {
    for (struct srv_pkv_peer **pp = &srv_pkv_peers; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            srv_pkv_npeers--;
            break;
        }
    }
    p->dead = true;
    return p->refs == 0;
}

/* Closes unused peers beyond SRV_PKV_MAX_PEERS; peer mutex held. Returns a list to free. */
static struct srv_pkv_peer *srv_pkv_peer_trim(void) {
    struct srv_pkv_peer *out = NULL;
    struct srv_pkv_peer **pp = &srv_pkv_peers;
    unsigned i = 0;
    while (*pp) {
        struct srv_pkv_peer *p = *pp;
        if (++i > SRV_PKV_MAX_PEERS && p->refs == 0) {
            *pp = p->next;
            srv_pkv_npeers--;
            p->next = out;
            out = p;
        } else {
            pp = &p->next;
        }
    }
    return out;
}

/* Opens (or finds) the segment of replica r. Returns 0 and a referenced peer, or -errno. */
static int srv_pkv_peer_open(struct xfer_engine *e, const struct srv_pkv_rep *r,
                             struct srv_pkv_peer **out) {
    pthread_mutex_lock(&srv_pkv_peer_mu);
    struct srv_pkv_peer *p = srv_pkv_peers, *stale = NULL;
    while (p && strcmp(p->name, r->segment) != 0)
        p = p->next;
    if (p && p->desc_len == r->desc_len &&
        (!r->desc_len || !memcmp(p->desc, r->desc, r->desc_len))) {
        p->refs++;
        *out = p;
        pthread_mutex_unlock(&srv_pkv_peer_mu);
        return 0;
    }
    if (p && srv_pkv_peer_unlink(p)) /* remounted with another descriptor */
        stale = p;
    pthread_mutex_unlock(&srv_pkv_peer_mu);
    if (stale)
        srv_pkv_peer_free(stale);
    struct xfer_segment *seg = NULL;
    int rc = -ENOENT;
    if (r->desc_len)
        rc = xfer_segment_open(e, r->desc, r->desc_len, &seg);
    else if (r->endpoint[0])
        rc = xfer_segment_open_addr(e, r->endpoint, &seg);
    if (rc < 0) {
        cm_log_sparse(1000, CM_LOG_NOTICE, "pool", "cannot open segment %s: %s", r->segment,
                      r->desc_len || r->endpoint[0] ? xfer_last_error() : "no endpoint");
        return rc;
    }
    cm_log(CM_LOG_VERBOSE, "pool", "opened segment %s over %s", r->segment,
           xfer_segment_transport(seg));
    p = cm_calloc(1, sizeof(*p));
    p->name = cm_strndup(r->segment, strlen(r->segment));
    p->desc = cm_malloc(r->desc_len ? r->desc_len : 1);
    if (r->desc_len)
        memcpy(p->desc, r->desc, r->desc_len);
    p->desc_len = r->desc_len;
    p->seg = seg;
    p->refs = 1;
    pthread_mutex_lock(&srv_pkv_peer_mu);
    p->next = srv_pkv_peers;
    srv_pkv_peers = p;
    srv_pkv_npeers++;
    struct srv_pkv_peer *trimmed = srv_pkv_npeers > SRV_PKV_MAX_PEERS ? srv_pkv_peer_trim() : NULL;
    pthread_mutex_unlock(&srv_pkv_peer_mu);
    while (trimmed) {
        struct srv_pkv_peer *n = trimmed->next;
        srv_pkv_peer_free(trimmed);
        trimmed = n;
    }
    *out = p;
    return 0;
}

/* Drops a reference; failed forgets the peer so the next transfer opens it afresh. */
static void srv_pkv_peer_put(struct srv_pkv_peer *p, int failed) {
    pthread_mutex_lock(&srv_pkv_peer_mu);
    p->refs--;
    int free_it = failed && !p->dead ? srv_pkv_peer_unlink(p) : p->dead && p->refs == 0;
    pthread_mutex_unlock(&srv_pkv_peer_mu);
    if (free_it)
        srv_pkv_peer_free(p);
}

void srv_pkv_stop(void) {
    pthread_mutex_lock(&srv_pkv_peer_mu);
    struct srv_pkv_peer *p = srv_pkv_peers;
    srv_pkv_peers = NULL;
    srv_pkv_npeers = 0;
    pthread_mutex_unlock(&srv_pkv_peer_mu);
    while (p) {
        struct srv_pkv_peer *n = p->next;
        srv_pkv_peer_free(p);
        p = n;
    }
    pthread_mutex_lock(&srv_pkv_eng_mu);
    xfer_engine_destroy(srv_pkv_eng);
    srv_pkv_eng = NULL;
    pthread_mutex_unlock(&srv_pkv_eng_mu);
}

/*
 * Moves size bytes between local and replica r (op XFER_OP_READ or XFER_OP_WRITE), waiting
 * for the end (bounded by the engine's timeout). Returns 0 or a negative code.
 */
static int srv_pkv_transfer(const struct srv_pkv_rep *r, enum xfer_op op, void *local,
                            uint64_t size) {
    char *mine = srv_pseg_local(r->segment, r->addr, size);
    if (mine) { /* a replica in the master's own embedded segment: no transfer */
        if (op == XFER_OP_READ)
            memcpy(local, mine, size);
        else
            memcpy(mine, local, size);
        return 0;
    }
    struct xfer_engine *e = srv_pkv_engine();
    if (!e)
        return -ENOTCONN;
    struct srv_pkv_peer *peer;
    int rc = srv_pkv_peer_open(e, r, &peer);
    if (rc < 0)
        return rc;
    struct xfer_batch *b = NULL;
    rc = xfer_batch_alloc(e, 1, &b);
    if (rc == 0) {
        struct xfer_request q = {op, local, peer->seg, r->addr, size};
        rc = xfer_batch_submit(b, &q, 1, NULL);
        if (rc == 0)
            rc = xfer_batch_wait(b, -1, NULL, 0, NULL);
        xfer_batch_free(b);
    }
    srv_pkv_peer_put(peer, rc < 0);
    if (rc < 0)
        cm_log_sparse(1000, CM_LOG_NOTICE, "pool", "%s of %llu bytes on segment %s failed: %s",
                      op == XFER_OP_READ ? "read" : "write", (unsigned long long)size, r->segment,
                      cm_strerror(rc));
    return rc;
}

/* ---------------------------------------------------------------- replica lists */

static void srv_pkv_copy_reps(const struct pool_replica_desc *d, size_t n,
                              struct srv_pkv_rep *out) {
    for (size_t i = 0; i < n; i++) {
        snprintf(out[i].segment, sizeof(out[i].segment), "%s", d[i].segment ? d[i].segment : "");
        snprintf(out[i].endpoint, sizeof(out[i].endpoint), "%s",
                 d[i].endpoint ? d[i].endpoint : "");
        out[i].desc_len = d[i].seg_desc ? d[i].seg_desc_len : 0;
        out[i].desc = NULL;
        if (out[i].desc_len) {
            out[i].desc = cm_malloc(out[i].desc_len);
            memcpy(out[i].desc, d[i].seg_desc, out[i].desc_len);
        }
        out[i].addr = d[i].addr;
        out[i].size = d[i].size;
    }
}

static void srv_pkv_free_reps(struct srv_pkv_rep *r, size_t n) {
    for (size_t i = 0; i < n; i++)
        cm_free(r[i].desc);
    cm_free(r);
}

/* 1 when the pool accepts a key of klen bytes. */
static int srv_pkv_len_ok(size_t klen) {
    return klen > 0 && klen <= POOL_MAX_KEY_LEN;
}

/* 1 when the pool has objects at all (the fast path of plain Redis commands on a master whose
 * pool is unused: no mutex taken). */
static int srv_pkv_used(void) {
    return srv_mc_pool && srv_mc_object_hint() > 0;
}

/* 0 when key cannot be a pool object: a length the pool refuses, or no object at all. */
static int srv_pkv_key_ok(size_t klen) {
    return srv_pkv_len_ok(klen) && srv_pkv_used();
}

/* ---------------------------------------------------------------- reads */

/* Reads replica r into dst under a lease of lease_ms granted at t0: a read that outlived the
 * lease may have raced a DEL or an overwrite, so it counts as failed. Returns 0 or -errno. */
static int srv_pkv_read_leased(const struct srv_pkv_rep *r, void *dst, uint64_t size, int64_t t0,
                               int64_t lease_ms) {
    int rc = srv_pkv_transfer(r, XFER_OP_READ, dst, size);
    if (rc == 0 && lease_ms > 0 && srv_mc_now() - t0 >= lease_ms) {
        cm_log_sparse(1000, CM_LOG_NOTICE, "pool", "read from segment %s outlived its lease",
                      r->segment);
        rc = -ETIMEDOUT;
    }
    return rc;
}

/*
 * Looks key up for a read: copies its readable memory replicas into *out (caller frees with
 * srv_pkv_free_reps) under a read lease of *lease_ms granted at *t0. Returns how many, 0 when
 * the pool does not have key readable (*out NULL).
 */
static size_t srv_pkv_lookup(const char *key, size_t klen, struct srv_pkv_rep **out, int64_t *t0,
                             int64_t *lease_ms) {
    *out = NULL;
    if (!srv_pkv_key_ok(klen))
        return 0;
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t n = 0;
    *lease_ms = 0;
    srv_mc_lock();
    *t0 = srv_mc_now();
    int rc = pool_get_replicas(srv_mc_pool, key, klen, *t0, d, &n, lease_ms);
    size_t nmem = 0; /* LOCAL_DISK replicas are read through their owner, not here */
    for (size_t i = 0; rc == POOL_OK && i < n; i++) {
        if (d[i].type != POOL_REPLICA_MEMORY)
            continue;
        d[nmem++] = d[i];
        if (nmem > 1 && !strcmp(d[nmem - 1].segment, srv_pseg_name())) { /* own memory first */
            struct pool_replica_desc t = d[0];
            d[0] = d[nmem - 1];
            d[nmem - 1] = t;
        }
    }
    if (rc == POOL_OK && nmem > 0) {
        *out = cm_malloc(nmem * sizeof(**out));
        srv_pkv_copy_reps(d, nmem, *out);
    }
    srv_mc_unlock();
    return *out ? nmem : 0;
}

/* Appends the error for a value above proto-max-bulk-len to b and returns 1; else 0. */
static int srv_pkv_too_big(struct cm_buf *b, uint64_t size) {
    if (size <= (uint64_t)srv_cfg.proto_max_bulk_len)
        return 0;
    resp_add_errorf(b, "ERR the pool object is larger than proto-max-bulk-len (%llu bytes)",
                    (unsigned long long)size);
    return 1;
}

/*
 * Appends the value of replicas reps (leased at t0 for lease_ms) as a bulk string to b, read
 * from the first replica that answers. Returns 1, or 0 with b unchanged. Any thread, no lock.
 */
static int srv_pkv_read_reps(struct cm_buf *b, const struct srv_pkv_rep *reps, size_t n, int64_t t0,
                             int64_t lease_ms) {
    int done = 0;
    uint64_t size = reps[0].size;
    char hdr[32];
    int hl = snprintf(hdr, sizeof(hdr), "$%llu\r\n", (unsigned long long)size);
    cm_buf_reserve(b, (size_t)hl + size + 2);
    char *dst = b->data + b->len + hl;
    for (size_t i = 0; i < n && !done; i++)
        done = srv_pkv_read_leased(&reps[i], dst, size, t0, lease_ms) == 0;
    if (done) {
        memcpy(b->data + b->len, hdr, (size_t)hl);
        memcpy(dst + size, "\r\n", 2);
        b->len += (size_t)hl + size + 2;
    }
    return done;
}

/*
 * Appends key's pool value as a bulk string to b, read from the first replica that answers.
 * Returns 1, or 0 with b unchanged (absent, being written, or no replica readable). A value
 * larger than proto-max-bulk-len is not read: an error reply is appended instead (returns 1).
 */
static int srv_pkv_read_into(struct cm_buf *b, const char *key, size_t klen) {
    struct srv_pkv_rep *reps;
    int64_t t0 = 0, lease_ms = 0;
    size_t n = srv_pkv_lookup(key, klen, &reps, &t0, &lease_ms);
    if (n == 0)
        return 0;
    int done = srv_pkv_too_big(b, reps[0].size) || srv_pkv_read_reps(b, reps, n, t0, lease_ms);
    srv_pkv_free_reps(reps, n);
    return done;
}

int srv_pkv_get(struct srv_client *c, const char *key, size_t klen) {
    return srv_pkv_read_into(&c->out, key, klen);
}

int srv_pkv_get_buf(struct cm_buf *b, const char *key, size_t klen) {
    return srv_pkv_read_into(b, key, klen);
}

/* A GET whose transfer runs on the deferred-work pool (srv_defer.h). */
struct srv_pkv_get {
    struct srv_defer d;
    struct srv_pkv_rep *reps;
    size_t n;
    int64_t t0, lease_ms;
    struct cm_buf b; /* the reply, when read */
    int done;
    size_t klen;
    char key[]; /* for the keymiss event */
};

/* Pool thread: the transfer (bounded by SRV_PKV_TIMEOUT_MS per replica). */
static void srv_pkv_get_work(struct srv_defer *d) {
    struct srv_pkv_get *g = (struct srv_pkv_get *)(void *)d;
    g->done = srv_pkv_read_reps(&g->b, g->reps, g->n, g->t0, g->lease_ms);
}

/* Loop thread: the reply (nil and a keymiss when no replica could be read), as srv_pkv_get. */
static void srv_pkv_get_done(struct srv_defer *d, struct srv_client *c) {
    struct srv_pkv_get *g = (struct srv_pkv_get *)(void *)d;
    if (c && g->done && c->out.len == 0 && c->nrefs == 0) { /* the usual case: no copy */
        struct cm_buf t = c->out;
        c->out = g->b;
        g->b = t;
    } else if (c && g->done) {
        cm_buf_append(&c->out, g->b.data, g->b.len);
    } else if (c) {
        resp_add_null(&c->out, c->proto);
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", g->key, g->klen);
    }
    srv_db_count_hit(g->done);
    srv_pkv_free_reps(g->reps, g->n);
    cm_buf_fini(&g->b);
    cm_free(g);
}

int srv_pkv_get_async(struct srv_client *c, const char *key, size_t klen) {
    struct srv_pkv_rep *reps;
    int64_t t0 = 0, lease_ms = 0;
    size_t n = srv_pkv_lookup(key, klen, &reps, &t0, &lease_ms);
    if (n == 0)
        return 0;
    int done = srv_pkv_too_big(&c->out, reps[0].size);
    if (!done && srv_client_can_defer(c)) {
        struct srv_pkv_get *g = cm_calloc(1, sizeof(*g) + klen);
        if (srv_client_defer(c, &g->d, srv_pkv_get_done) == 0) {
            g->reps = reps;
            g->n = n;
            g->t0 = t0;
            g->lease_ms = lease_ms;
            cm_buf_init(&g->b);
            g->klen = klen;
            memcpy(g->key, key, klen);
            srv_defer_submit(&g->d, srv_pkv_get_work);
            return 2;
        }
        cm_free(g);
    }
    if (!done)
        done = srv_pkv_read_reps(&c->out, reps, n, t0, lease_ms);
    srv_pkv_free_reps(reps, n);
    return done;
}

/* Admin view of key (no lease). Returns 1 and *size when readable, else 0. */
static int srv_pkv_query(const char *key, size_t klen, uint64_t *size) {
    if (!srv_pkv_key_ok(klen))
        return 0;
    struct pool_object_info info;
    srv_mc_lock();
    int rc = pool_object_query(srv_mc_pool, key, klen, &info);
    srv_mc_unlock();
    if (rc != POOL_OK || info.inflight)
        return 0;
    *size = info.size;
    return 1;
}

int srv_pkv_exists(const char *key, size_t klen) {
    uint64_t size;
    return srv_pkv_query(key, klen, &size);
}

int64_t srv_pkv_strlen(const char *key, size_t klen) {
    uint64_t size;
    return srv_pkv_query(key, klen, &size) ? (int64_t)size : -1;
}

uint64_t srv_pkv_count(void) {
    if (!srv_pkv_used())
        return 0;
    srv_mc_lock();
    uint64_t n = pool_readable_count(srv_mc_pool);
    srv_mc_unlock();
    return n;
}

uint64_t srv_pkv_scan(uint64_t cursor, size_t count, srv_pkv_key_cb *cb, void *arg) {
    if (!srv_pkv_used())
        return 0;
    srv_mc_lock();
    uint64_t next = pool_scan(srv_mc_pool, cursor & ~SRV_PKV_SCAN_FLAG, count, cb, arg);
    srv_mc_unlock();
    return next ? next | SRV_PKV_SCAN_FLAG : 0;
}

/* ---------------------------------------------------------------- removal */

int srv_pkv_del(const char *key, size_t klen) {
    if (!srv_pkv_key_ok(klen))
        return 0;
    srv_mc_lock();
    int rc = pool_unlink(srv_mc_pool, key, klen, srv_mc_now());
    if (rc == POOL_OK) /* HA: logged like MC.REMOVE, the reply waits for it */
        srv_oplog_log_key(srv_mc_pool, key, klen);
    srv_mc_unlock();
    if (rc == POOL_OK)
        srv_watch_touch(key, klen);
    return rc == POOL_OK;
}

uint64_t srv_pkv_flush(void) {
    if (!srv_pkv_used())
        return 0;
    srv_mc_lock();
    struct srv_oplog_keys *ks = srv_oplog_collect(srv_mc_pool, NULL); /* NULL without HA */
    long n = pool_unlink_all(srv_mc_pool, srv_mc_now());
    srv_oplog_log_keys(srv_mc_pool, ks);
    srv_mc_unlock();
    return n > 0 ? (uint64_t)n : 0;
}

/* ---------------------------------------------------------------- writes */

int srv_pkv_set_wanted(const char *key, size_t klen) {
    return srv_segment == NULL || srv_pkv_exists(key, klen);
}

/* Deletes a keyspace object under key (a SET into the pool replaces it). */
static void srv_pkv_drop_keyspace(const char *key, size_t klen) {
    struct srv_db_ref r;
    srv_db_lock(&r, key, klen);
    struct srv_obj *o = srv_db_peek(&r, srv_now_ms());
    if (o)
        srv_db_unlink(&r, o);
    srv_db_unlock(&r);
}

/*
 * The old value for SET ... GET, appended to old: the pool's, else a keyspace string's.
 * Returns 0, or -1 after replying WRONGTYPE (the keyspace holds an aggregate under key).
 */
static int srv_pkv_old_value(struct srv_client *c, const char *key, size_t klen,
                             struct cm_buf *old) {
    struct srv_db_ref r;
    srv_db_lock(&r, key, klen);
    struct srv_obj *o = srv_db_peek(&r, srv_now_ms());
    int wrongtype = o && o->type != SRV_TYPE_STRING;
    if (o && !wrongtype)
        resp_add_bulk(old, srv_obj_val(o), o->vlen);
    srv_db_unlock(&r);
    if (wrongtype) {
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
        return -1;
    }
    struct cm_buf pv;
    cm_buf_init(&pv);
    if (srv_pkv_read_into(&pv, key, klen)) {
        cm_buf_clear(old);
        cm_buf_append(old, pv.data, pv.len);
    }
    cm_buf_fini(&pv);
    if (old->len == 0)
        resp_add_null(old, c->proto);
    return 0;
}

/* Checks what SET into the pool refuses. Returns 0 or -1 (replied). */
static int srv_pkv_set_check(struct srv_client *c, size_t klen, size_t vlen, unsigned flags) {
    if (flags & SRV_PKV_EXPIRE) {
        srv_reply_error(c, "ERR this key lives in the distributed store's pool, whose objects "
                           "have no TTL: SET with EX/PX/EXAT/PXAT is not supported there");
        return -1;
    }
    if (vlen == 0) {
        srv_reply_error(c, "ERR the distributed store's pool cannot hold an empty value");
        return -1;
    }
    if (!srv_pkv_len_ok(klen)) {
        srv_reply_error(c, "ERR key too long for the distributed store's pool (at most 65535 "
                           "bytes)");
        return -1;
    }
    return 0;
}

/*
 * Write start for the master: an upsert, or with nx a put start (which fails with
 * POOL_EOBJECT_ALREADY_EXISTS when the key exists, atomically). Fills *reps (caller frees) and
 * *n. Returns a pool code.
 */
static int srv_pkv_write_start(const char *key, size_t klen, uint64_t size, int nx,
                               struct srv_pkv_rep **reps, size_t *n) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    *reps = NULL;
    *n = 0;
    srv_mc_lock();
    int64_t now = srv_mc_now();
    srv_pkv_register(now);
    int rc = nx ? pool_put_start(srv_mc_pool, &srv_pkv_id, key, klen, size, &cfg, now, d, n)
                : pool_upsert_start(srv_mc_pool, &srv_pkv_id, key, klen, size, &cfg, now, d, n);
    if (rc == POOL_OK) {
        *reps = cm_malloc(*n * sizeof(**reps));
        srv_pkv_copy_reps(d, *n, *reps);
    }
    if (!nx) /* HA: an upsert makes the old value unreadable, as MC.UPSERTSTART logs */
        srv_oplog_log_key(srv_mc_pool, key, klen);
    srv_mc_unlock();
    return rc;
}

/* Writes val into every replica, then ends the write (or revokes it). Returns 0 or -1 (replied). */
static int srv_pkv_write(struct srv_client *c, const struct srv_arg *key, const struct srv_arg *val,
                         struct srv_pkv_rep *reps, size_t n) {
    int rc = 0;
    size_t i;
    for (i = 0; i < n && rc == 0; i++)
        rc = srv_pkv_transfer(&reps[i], XFER_OP_WRITE, (void *)val->p, val->len);
    srv_mc_lock();
    int prc = rc == 0
                  ? pool_upsert_end(srv_mc_pool, &srv_pkv_id, key->p, key->len, srv_mc_now())
                  : pool_upsert_revoke(srv_mc_pool, &srv_pkv_id, key->p, key->len, srv_mc_now());
    if (prc == POOL_OK) /* HA: the value readable (or gone after a revoke) goes to the op-log */
        srv_oplog_log_key(srv_mc_pool, key->p, key->len);
    srv_mc_unlock();
    if (rc < 0) {
        srv_reply_errorf(c, "ERR cannot write the value into pool segment %s: %s",
                         reps[i - 1].segment, cm_strerror(rc));
        return -1;
    }
    if (prc != POOL_OK) {
        srv_mc_reply_err(c, prc);
        return -1;
    }
    return 0;
}

int srv_pkv_set(struct srv_client *c, const struct srv_arg *key, const struct srv_arg *val,
                unsigned flags, int reply) {
    if (!srv_mc_pool || srv_pkv_set_check(c, key->len, val->len, flags) < 0)
        return -1;
    struct cm_buf old;
    cm_buf_init(&old);
    if ((flags & SRV_PKV_GET) && srv_pkv_old_value(c, key->p, key->len, &old) < 0) {
        cm_buf_fini(&old);
        return -1;
    }
    if (flags & (SRV_PKV_NX | SRV_PKV_XX)) {
        int exists =
            srv_db_exists(key->p, key->len, srv_now_ms()) || srv_pkv_exists(key->p, key->len);
        if (((flags & SRV_PKV_NX) && exists) || ((flags & SRV_PKV_XX) && !exists)) {
            if (flags & SRV_PKV_GET)
                cm_buf_append(&c->out, old.data, old.len);
            else if (reply)
                resp_add_null(&c->out, c->proto);
            cm_buf_fini(&old);
            return 0;
        }
    }
    struct srv_pkv_rep *reps;
    size_t n;
    int rc = srv_pkv_write_start(key->p, key->len, val->len, (flags & SRV_PKV_NX) != 0, &reps, &n);
    if (rc == POOL_EOBJECT_ALREADY_EXISTS && (flags & SRV_PKV_NX)) { /* set meanwhile */
        if (flags & SRV_PKV_GET)
            cm_buf_append(&c->out, old.data, old.len);
        else if (reply)
            resp_add_null(&c->out, c->proto);
        cm_buf_fini(&old);
        return 0;
    }
    if (rc != POOL_OK) {
        srv_mc_reply_err(c, rc);
        cm_buf_fini(&old);
        return -1;
    }
    rc = srv_pkv_write(c, key, val, reps, n);
    srv_pkv_free_reps(reps, n);
    if (rc == 0) {
        srv_pkv_drop_keyspace(key->p, key->len);
        srv_watch_touch(key->p, key->len);
        if (flags & SRV_PKV_GET)
            cm_buf_append(&c->out, old.data, old.len);
        else if (reply)
            srv_reply_ok(c);
    }
    cm_buf_fini(&old);
    return rc == 0 ? 1 : -1;
}

/* ---------------------------------------------------------------- housekeeping */

void srv_pkv_tick(int64_t now) {
    if (pool_client_exists(srv_mc_pool, &srv_pkv_id)) {
        struct pool_ping_reply r;
        pool_client_ping(srv_mc_pool, &srv_pkv_id, now, &r);
    }
}
