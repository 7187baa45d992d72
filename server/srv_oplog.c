/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HA master's metadata op-log in Redis (see srv_oplog.h): entry encoding, the pending queue
 * and its writer thread (group appends through a fencing Lua script), and the replay of a new
 * leader.
 *
 * Entry format (one list element, printable ASCII, fields separated by one space):
 *   <epoch> <seq> R <client> <host>                 client registered
 *   <epoch> <seq> M <client> <segment> <base> <size> <endpoint> <protocol> <desc>
 *   <epoch> <seq> G <segment> <grace_ms>            graceful unmount started
 *   <epoch> <seq> U <segment>                       segment dropped (unmount, expiry)
 *   <epoch> <seq> P <key> <size> <hard> <soft_ms> <nrep> <segment> <addr> [<segment> <addr>...]
 *   <epoch> <seq> D <key>                           object no longer readable
 * Strings are %-escaped (bytes outside '!'..'~' and '%' as %XX); an empty string is a lone '%'.
 * A P entry is the whole readable state of the object, so replaying an entry twice is harmless.
 */
#include "common/fmacros.h"

#include "server/srv_oplog.h"

#include "server/srv_ha.h"
#include "server/srv_mc.h"

#include "common/cm_buf.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "ha/ha_backend.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRV_OPLOG_IO_MS      2000  /* bound on one store call */
#define SRV_OPLOG_RETRY_MS   50    /* pause before retrying a failed append */
#define SRV_OPLOG_READ_CHUNK 10000 /* entries per LRANGE during replay */
#define SRV_OPLOG_MAX_BATCH  8192  /* entries per EVAL */
#define SRV_OPLOG_MAX_FIELDS (6 + 2 * POOL_MAX_REPLICAS)

/* Appends ARGV[2..] to KEYS[1] unless ARGV[1] (the writer's epoch) is below KEYS[2]. */
static const char srv_oplog_script[] =
    "local e = tonumber(ARGV[1])\n"
    "local cur = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "if e < cur then return redis.error_reply('FENCED op-log fenced at epoch ' .. cur) end\n"
    "if e > cur then redis.call('SET', KEYS[2], ARGV[1]) end\n"
    "for i = 2, #ARGV, 1000 do\n"
    "  redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))\n"
    "end\n"
    "return redis.call('LLEN', KEYS[1])\n";

/* Entries waiting for the writer: bytes in data, entry i at off[i] with len[i]. */
struct srv_oplog_batch {
    struct cm_buf data;
    size_t *off, *len;
    size_t n, cap;
};

static struct {
    int enabled;
    char host[256];
    int port;
    char user[128], password[256];
    long db;
    char list_key[320], fence_key[320];

    pthread_mutex_t mu;
    pthread_cond_t cv;      /* writer: work arrived / stop */
    pthread_cond_t done_cv; /* waiters: durable or failed moved */
    pthread_t thread;
    int thread_on, stopping;
    int active;
    uint64_t epoch;
    uint64_t next_seq;       /* last assigned sequence number */
    uint64_t durable;        /* every entry <= durable is stored (or was before a failure) */
    uint64_t failed_through; /* entries <= this that are not durable were dropped */
    struct srv_oplog_batch pending, inflight;
    struct srv_oplog_stats st;
} srv_oplog = {.mu = PTHREAD_MUTEX_INITIALIZER};

static __thread uint64_t srv_oplog_tl_seq; /* last entry produced by this thread */
static __thread int srv_oplog_tl_fail;     /* produced while inactive: fail the next sync */

/* ---- encoding ------------------------------------------------------------------------------ */

static void srv_oplog_esc(struct cm_buf *b, const void *p, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *s = p;
    cm_buf_append(b, " ", 1);
    if (n == 0) {
        cm_buf_append(b, "%", 1);
        return;
    }
    cm_buf_reserve(b, 3 * n);
    char *o = b->data + b->len;
    for (size_t i = 0; i < n; i++) {
        if (s[i] > ' ' && s[i] < 0x7f && s[i] != '%') {
            *o++ = (char)s[i];
        } else {
            *o++ = '%';
            *o++ = hex[s[i] >> 4];
            *o++ = hex[s[i] & 15];
        }
    }
    b->len = (size_t)(o - b->data);
}

static void srv_oplog_esc_str(struct cm_buf *b, const char *s) {
    srv_oplog_esc(b, s ? s : "", s ? strlen(s) : 0);
}

static int srv_oplog_hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes field f (len n) in place; returns the decoded length or -1. */
static long srv_oplog_unesc(char *f, size_t n) {
    if (n == 1 && f[0] == '%')
        return 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (f[i] != '%') {
            f[o++] = f[i];
            continue;
        }
        if (i + 2 >= n)
            return -1;
        int hi = srv_oplog_hexval(f[i + 1]), lo = srv_oplog_hexval(f[i + 2]);
        if (hi < 0 || lo < 0)
            return -1;
        f[o++] = (char)(hi << 4 | lo);
        i += 2;
    }
    return (long)o;
}

/* ---- the pending queue ----------------------------------------------------------------------- */

static void srv_oplog_batch_push(struct srv_oplog_batch *b, size_t off, size_t len) {
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->off = cm_realloc(b->off, b->cap * sizeof(size_t));
        b->len = cm_realloc(b->len, b->cap * sizeof(size_t));
    }
    b->off[b->n] = off;
    b->len[b->n] = len;
    b->n++;
}

static void srv_oplog_batch_clear(struct srv_oplog_batch *b) {
    cm_buf_clear(&b->data);
    b->n = 0;
}

static void srv_oplog_batch_fini(struct srv_oplog_batch *b) {
    cm_buf_fini(&b->data);
    cm_free(b->off);
    cm_free(b->len);
    memset(b, 0, sizeof(*b));
}

/*
 * Starts an entry of type op in the pending batch: takes the queue mutex, which the matching
 * srv_oplog_end() releases. Returns NULL (mutex not held) when entries are not being taken.
 */
static struct cm_buf *srv_oplog_begin(char op) {
    if (!srv_oplog.enabled)
        return NULL;
    pthread_mutex_lock(&srv_oplog.mu);
    if (!srv_oplog.active) {
        pthread_mutex_unlock(&srv_oplog.mu);
        srv_oplog_tl_fail = 1;
        return NULL;
    }
    struct cm_buf *b = &srv_oplog.pending.data;
    srv_oplog_batch_push(&srv_oplog.pending, b->len, 0);
    cm_buf_appendf(b, "%" PRIu64 " %" PRIu64 " %c", srv_oplog.epoch, ++srv_oplog.next_seq, op);
    return b;
}

static void srv_oplog_end(void) {
    struct srv_oplog_batch *q = &srv_oplog.pending;
    q->len[q->n - 1] = q->data.len - q->off[q->n - 1];
    srv_oplog_tl_seq = srv_oplog.next_seq;
    pthread_cond_signal(&srv_oplog.cv);
    pthread_mutex_unlock(&srv_oplog.mu);
}

/* ---- producers --------------------------------------------------------------------------- */

void srv_oplog_log_key(struct pool *p, const void *key, size_t klen) {
    if (!srv_oplog.enabled)
        return;
    struct pool_object_info info;
    int rc = pool_object_query(p, key, klen, &info);
    uint32_t complete = 0;
    if (rc == 0 && !info.inflight)
        for (uint32_t i = 0; i < info.nreplicas; i++)
            complete += info.replicas[i].status == POOL_REPLICA_COMPLETE;
    struct cm_buf *b = srv_oplog_begin(complete ? 'P' : 'D');
    if (!b)
        return;
    srv_oplog_esc(b, key, klen);
    if (complete) {
        int64_t now = srv_mc_now();
        int64_t soft = info.soft_pin_until > now ? info.soft_pin_until - now : 0;
        cm_buf_appendf(b, " %" PRIu64 " %d %" PRId64 " %u", info.size, info.hard_pinned ? 1 : 0,
                       soft, complete);
        for (uint32_t i = 0; i < info.nreplicas; i++) {
            if (info.replicas[i].status != POOL_REPLICA_COMPLETE)
                continue;
            srv_oplog_esc_str(b, info.replicas[i].segment);
            cm_buf_appendf(b, " %" PRIu64, info.replicas[i].addr);
        }
    }
    srv_oplog_end();
}

void srv_oplog_log_register(const struct pool_uuid *id, const char *host) {
    struct cm_buf *b = srv_oplog_begin('R');
    if (!b)
        return;
    char hex[33];
    srv_mc_uuid_str(id, hex);
    cm_buf_appendf(b, " %s", hex);
    srv_oplog_esc_str(b, host);
    srv_oplog_end();
}

void srv_oplog_log_mount(struct pool *p, const char *segment) {
    struct pool_segment_info s;
    if (!srv_oplog.enabled || pool_segment_query(p, segment, &s) != 0)
        return;
    struct cm_buf *b = srv_oplog_begin('M');
    if (!b)
        return;
    char hex[33];
    srv_mc_uuid_str(&s.owner, hex);
    cm_buf_appendf(b, " %s", hex);
    srv_oplog_esc_str(b, s.name);
    cm_buf_appendf(b, " %" PRIu64 " %" PRIu64, s.base, s.size);
    srv_oplog_esc_str(b, s.endpoint);
    srv_oplog_esc_str(b, s.protocol);
    srv_oplog_esc(b, s.desc, s.desc ? s.desc_len : 0);
    srv_oplog_end();
}

void srv_oplog_log_graceful(const char *segment, int64_t grace_ms) {
    struct cm_buf *b = srv_oplog_begin('G');
    if (!b)
        return;
    srv_oplog_esc_str(b, segment);
    cm_buf_appendf(b, " %" PRId64, grace_ms);
    srv_oplog_end();
}

void srv_oplog_on_seg_drop(void *arg, const char *name) {
    (void)arg;
    struct cm_buf *b = srv_oplog_begin('U');
    if (!b)
        return;
    srv_oplog_esc_str(b, name);
    srv_oplog_end();
}

int srv_oplog_on_evict(void *arg, const struct pool_evict_event *ev) {
    (void)arg;
    struct cm_buf *b = srv_oplog_begin('D');
    if (b) {
        srv_oplog_esc(b, ev->key, ev->klen);
        srv_oplog_end();
    }
    return POOL_EVICT_DROP;
}

struct srv_oplog_keys {
    struct cm_buf data;
    size_t *len;
    size_t n, cap;
};

static void srv_oplog_keys_add(void *arg, const char *key, size_t klen) {
    struct srv_oplog_keys *ks = arg;
    if (ks->n == ks->cap) {
        ks->cap = ks->cap ? 2 * ks->cap : 64;
        ks->len = cm_realloc(ks->len, ks->cap * sizeof(size_t));
    }
    ks->len[ks->n++] = klen;
    cm_buf_append(&ks->data, key, klen);
}

struct srv_oplog_keys *srv_oplog_collect(struct pool *p, const char *pattern) {
    if (!srv_oplog.enabled)
        return NULL;
    struct srv_oplog_keys *ks = cm_calloc(1, sizeof(*ks));
    cm_buf_init(&ks->data);
    pool_keys_regex(p, pattern ? pattern : "^", srv_oplog_keys_add, ks);
    return ks;
}

void srv_oplog_log_keys(struct pool *p, struct srv_oplog_keys *ks) {
    if (!ks)
        return;
    size_t off = 0;
    for (size_t i = 0; i < ks->n; i++) {
        srv_oplog_log_key(p, ks->data.data + off, ks->len[i]);
        off += ks->len[i];
    }
    cm_buf_fini(&ks->data);
    cm_free(ks->len);
    cm_free(ks);
}

/* ---- the store connection ------------------------------------------------------------------ */

/* Runs a command on c and returns the reply (caller frees), or NULL with err set. */
static redisReply *srv_oplog_cmd(redisContext *c, char *err, size_t errlen, int argc,
                                 const char **argv, const size_t *lens) {
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    if (!r) {
        snprintf(err, errlen, "op-log store %s:%d: %s", srv_oplog.host, srv_oplog.port,
                 c->errstr[0] ? c->errstr : "no reply");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "op-log store %s:%d: %s", srv_oplog.host, srv_oplog.port, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* Connects (AUTH, SELECT); returns the context or NULL with err set. */
static redisContext *srv_oplog_connect(char *err, size_t errlen) {
    struct timeval tv = {SRV_OPLOG_IO_MS / 1000, (SRV_OPLOG_IO_MS % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(srv_oplog.host, srv_oplog.port, tv);
    if (!c || c->err) {
        snprintf(err, errlen, "op-log store %s:%d unreachable: %s", srv_oplog.host, srv_oplog.port,
                 c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    redisReply *r = NULL;
    if (srv_oplog.password[0]) {
        const char *av[3] = {"AUTH", srv_oplog.user, srv_oplog.password};
        r = srv_oplog.user[0] ? srv_oplog_cmd(c, err, errlen, 3, av, NULL)
                              : srv_oplog_cmd(c, err, errlen, 2,
                                              (const char *[]){"AUTH", srv_oplog.password}, NULL);
        if (!r)
            goto fail;
        freeReplyObject(r);
    }
    if (srv_oplog.db) {
        char db[24];
        snprintf(db, sizeof(db), "%ld", srv_oplog.db);
        r = srv_oplog_cmd(c, err, errlen, 2, (const char *[]){"SELECT", db}, NULL);
        if (!r)
            goto fail;
        freeReplyObject(r);
    }
    return c;
fail:
    redisFree(c);
    return NULL;
}

/* Runs the fencing script with epoch and entries b (may be NULL). Returns 0 or -1 (err). */
static int srv_oplog_eval(redisContext *c, uint64_t epoch, const struct srv_oplog_batch *b,
                          size_t from, size_t n, char *err, size_t errlen) {
    size_t argc = 6 + n;
    const char **av = cm_malloc(argc * sizeof(char *));
    size_t *lens = cm_malloc(argc * sizeof(size_t));
    char ep[24];
    snprintf(ep, sizeof(ep), "%" PRIu64, epoch);
    av[0] = "EVAL";
    av[1] = srv_oplog_script;
    av[2] = "2";
    av[3] = srv_oplog.list_key;
    av[4] = srv_oplog.fence_key;
    av[5] = ep;
    for (size_t i = 0; i < 6; i++)
        lens[i] = strlen(av[i]);
    for (size_t i = 0; i < n; i++) {
        av[6 + i] = b->data.data + b->off[from + i];
        lens[6 + i] = b->len[from + i];
    }
    redisReply *r = srv_oplog_cmd(c, err, errlen, (int)argc, av, lens);
    cm_free(av);
    cm_free(lens);
    if (!r)
        return -1;
    freeReplyObject(r);
    return 0;
}

/* ---- the writer ---------------------------------------------------------------------------- */

/*
 * Appends the in-flight batch, retrying transient failures while this master still holds the
 * lease of epoch. Returns 0, or -1 when the batch cannot be stored by this leader.
 */
static int srv_oplog_append(redisContext **cp, uint64_t epoch) {
    const struct srv_oplog_batch *b = &srv_oplog.inflight;
    char err[512];
    int logged = 0;
    for (size_t from = 0; from < b->n;) {
        size_t n = b->n - from < SRV_OPLOG_MAX_BATCH ? b->n - from : SRV_OPLOG_MAX_BATCH;
        if (!srv_ha_lease_valid(epoch)) {
            cm_log(CM_LOG_WARNING, "oplog",
                   "%zu entries dropped: no longer leader of epoch %" PRIu64, b->n - from, epoch);
            return -1;
        }
        if (!*cp)
            *cp = srv_oplog_connect(err, sizeof(err));
        if (*cp && srv_oplog_eval(*cp, epoch, b, from, n, err, sizeof(err)) == 0) {
            from += n;
            continue;
        }
        if (strstr(err, "FENCED")) {
            cm_log(CM_LOG_WARNING, "oplog", "append refused at epoch %" PRIu64 ": %s", epoch, err);
            return -1;
        }
        if (!logged++)
            cm_log(CM_LOG_WARNING, "oplog", "append failed, retrying: %s", err);
        redisFree(*cp);
        *cp = NULL;
        srv_oplog.st.connected = 0;
        cm_sleep_ms(SRV_OPLOG_RETRY_MS);
    }
    srv_oplog.st.connected = 1;
    return 0;
}

static void *srv_oplog_main(void *arg) {
    (void)arg;
    redisContext *c = NULL;
    pthread_mutex_lock(&srv_oplog.mu);
    for (;;) {
        while (!srv_oplog.stopping && srv_oplog.pending.n == 0)
            pthread_cond_wait(&srv_oplog.cv, &srv_oplog.mu);
        if (srv_oplog.stopping)
            break;
        struct srv_oplog_batch t = srv_oplog.inflight;
        srv_oplog.inflight = srv_oplog.pending;
        srv_oplog.pending = t;
        srv_oplog_batch_clear(&srv_oplog.pending);
        uint64_t last = srv_oplog.next_seq, epoch = srv_oplog.epoch;
        size_t n = srv_oplog.inflight.n;
        pthread_mutex_unlock(&srv_oplog.mu);
        int rc = srv_oplog_append(&c, epoch);
        pthread_mutex_lock(&srv_oplog.mu);
        if (rc == 0) {
            srv_oplog.durable = last;
            srv_oplog.st.appended += n;
            srv_oplog.st.batches++;
            if (n > srv_oplog.st.max_batch)
                srv_oplog.st.max_batch = n;
        } else {
            srv_oplog.failed_through = last;
            srv_oplog.st.failed += n;
        }
        srv_oplog_batch_clear(&srv_oplog.inflight);
        pthread_cond_broadcast(&srv_oplog.done_cv);
    }
    pthread_mutex_unlock(&srv_oplog.mu);
    redisFree(c);
    return NULL;
}

int srv_oplog_sync(void) {
    if (srv_oplog_tl_fail) {
        srv_oplog_tl_fail = 0;
        srv_oplog_tl_seq = 0;
        return -1;
    }
    uint64_t want = srv_oplog_tl_seq;
    if (want == 0)
        return 0;
    srv_oplog_tl_seq = 0;
    int rc = 0;
    pthread_mutex_lock(&srv_oplog.mu);
    while (srv_oplog.durable < want && srv_oplog.failed_through < want)
        pthread_cond_wait(&srv_oplog.done_cv, &srv_oplog.mu);
    if (srv_oplog.durable < want)
        rc = -1;
    pthread_mutex_unlock(&srv_oplog.mu);
    return rc;
}

void srv_oplog_activate(uint64_t epoch) {
    if (!srv_oplog.enabled)
        return;
    pthread_mutex_lock(&srv_oplog.mu);
    srv_oplog.epoch = epoch;
    srv_oplog.active = 1;
    pthread_mutex_unlock(&srv_oplog.mu);
}

void srv_oplog_deactivate(void) {
    if (!srv_oplog.enabled)
        return;
    pthread_mutex_lock(&srv_oplog.mu);
    srv_oplog.active = 0;
    srv_oplog.st.failed += srv_oplog.pending.n;
    srv_oplog_batch_clear(&srv_oplog.pending);
    srv_oplog.failed_through = srv_oplog.next_seq;
    pthread_cond_broadcast(&srv_oplog.done_cv);
    pthread_mutex_unlock(&srv_oplog.mu);
}

/* ---- open / close ---------------------------------------------------------------------------- */

/* Splits "host:port" / "[v6]:port" into srv_oplog.host / port. */
static int srv_oplog_hostport(const char *hp, char *err, size_t errlen) {
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp) {
        snprintf(err, errlen, "oplog_store: '%s' is not host:port", hp);
        return -1;
    }
    size_t hl = (size_t)(colon - hp);
    if (hp[0] == '[' && hl >= 2 && hp[hl - 1] == ']') {
        hp++;
        hl -= 2;
    }
    if (hl >= sizeof(srv_oplog.host)) {
        snprintf(err, errlen, "oplog_store: host too long");
        return -1;
    }
    memcpy(srv_oplog.host, hp, hl);
    srv_oplog.host[hl] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535) {
        snprintf(err, errlen, "oplog_store: bad port in '%s'", hp);
        return -1;
    }
    srv_oplog.port = (int)port;
    return 0;
}

/* Logs a warning when the store's persistence may lose acknowledged entries. */
static void srv_oplog_check_persistence(redisContext *c) {
    char err[256];
    const char *aof[3] = {"CONFIG", "GET", "appendonly"};
    const char *fs[3] = {"CONFIG", "GET", "appendfsync"};
    redisReply *a = srv_oplog_cmd(c, err, sizeof(err), 3, aof, NULL);
    redisReply *f = srv_oplog_cmd(c, err, sizeof(err), 3, fs, NULL);
    int ok = a && f && a->type == REDIS_REPLY_ARRAY && a->elements == 2 &&
             f->type == REDIS_REPLY_ARRAY && f->elements == 2 &&
             strcmp(a->element[1]->str, "yes") == 0 && strcmp(f->element[1]->str, "always") == 0;
    if (!ok)
        cm_log(CM_LOG_WARNING, "oplog",
               "op-log store %s:%d does not run 'appendonly yes' with 'appendfsync always' (or "
               "CONFIG GET is refused): a restart of that Redis may lose acknowledged metadata",
               srv_oplog.host, srv_oplog.port);
    if (a)
        freeReplyObject(a);
    if (f)
        freeReplyObject(f);
}

int srv_oplog_open(const char *uri, const char *cluster, char *err, size_t errlen) {
    struct ha_uri u;
    if (ha_uri_parse(uri, &u, err, errlen) != 0)
        return -1;
    if (strcmp(u.scheme, "redis") != 0 || u.nhosts != 1) {
        snprintf(err, errlen,
                 "oplog_store: '%s' is not supported (redis://[user:password@]host:port[/db])",
                 uri);
        return -1;
    }
    if (srv_oplog_hostport(u.hosts[0], err, errlen) != 0)
        return -1;
    snprintf(srv_oplog.user, sizeof(srv_oplog.user), "%s", u.user);
    snprintf(srv_oplog.password, sizeof(srv_oplog.password), "%s", u.password);
    srv_oplog.db = u.path[0] ? strtol(u.path, NULL, 10) : 0;
    snprintf(srv_oplog.list_key, sizeof(srv_oplog.list_key), "crescent/{%s}/oplog", cluster);
    snprintf(srv_oplog.fence_key, sizeof(srv_oplog.fence_key), "crescent/{%s}/oplog_epoch",
             cluster);
    redisContext *c = srv_oplog_connect(err, errlen);
    if (!c)
        return -1;
    const char *av[3] = {"EVAL", "return 1", "0"};
    redisReply *r = srv_oplog_cmd(c, err, errlen, 3, av, NULL);
    if (!r) {
        redisFree(c);
        return -1;
    }
    freeReplyObject(r);
    srv_oplog_check_persistence(c);
    redisFree(c);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&srv_oplog.cv, &ca);
    pthread_cond_init(&srv_oplog.done_cv, &ca);
    pthread_condattr_destroy(&ca);
    cm_buf_init(&srv_oplog.pending.data);
    cm_buf_init(&srv_oplog.inflight.data);
    int rc = pthread_create(&srv_oplog.thread, NULL, srv_oplog_main, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the op-log writer: %s", strerror(rc));
        return -1;
    }
    srv_oplog.thread_on = 1;
    srv_oplog.enabled = 1;
    return 0;
}

void srv_oplog_close(void) {
    if (!srv_oplog.thread_on)
        return;
    pthread_mutex_lock(&srv_oplog.mu);
    srv_oplog.stopping = 1;
    srv_oplog.active = 0;
    pthread_cond_broadcast(&srv_oplog.cv);
    pthread_mutex_unlock(&srv_oplog.mu);
    pthread_join(srv_oplog.thread, NULL);
    srv_oplog.thread_on = 0;
    srv_oplog.enabled = 0;
    srv_oplog_batch_fini(&srv_oplog.pending);
    srv_oplog_batch_fini(&srv_oplog.inflight);
}

int srv_oplog_enabled(void) {
    return srv_oplog.enabled;
}

void srv_oplog_get_stats(struct srv_oplog_stats *st) {
    pthread_mutex_lock(&srv_oplog.mu);
    *st = srv_oplog.st;
    st->durable = srv_oplog.durable;
    pthread_mutex_unlock(&srv_oplog.mu);
}

/* ---- fence and replay ------------------------------------------------------------------------ */

int srv_oplog_fence(uint64_t epoch, char *err, size_t errlen) {
    redisContext *c = srv_oplog_connect(err, errlen);
    if (!c)
        return -1;
    int rc = srv_oplog_eval(c, epoch, NULL, 0, 0, err, errlen);
    redisFree(c);
    return rc;
}

/* One entry split into fields (decoded in place). */
struct srv_oplog_entry {
    char *f[SRV_OPLOG_MAX_FIELDS];
    size_t len[SRV_OPLOG_MAX_FIELDS];
    int n;
};

/* Splits and unescapes s (NUL-terminated, modified). Returns 0 or -1. */
static int srv_oplog_split(char *s, struct srv_oplog_entry *e) {
    e->n = 0;
    for (char *p = s; *p;) {
        char *sp = strchr(p, ' ');
        size_t n = sp ? (size_t)(sp - p) : strlen(p);
        if (n == 0 || e->n == SRV_OPLOG_MAX_FIELDS)
            return -1;
        long d = e->n >= 3 ? srv_oplog_unesc(p, n) : (long)n;
        if (d < 0)
            return -1;
        e->f[e->n] = p;
        e->len[e->n] = (size_t)d;
        p[d] = '\0';
        e->n++;
        p = sp ? sp + 1 : p + n;
    }
    return e->n >= 3 && e->len[2] == 1 ? 0 : -1;
}

static int srv_oplog_u64(const struct srv_oplog_entry *e, int i, uint64_t *out) {
    char *end;
    if (i >= e->n || e->len[i] == 0)
        return -1;
    errno = 0;
    *out = strtoull(e->f[i], &end, 10);
    return *end || errno ? -1 : 0;
}

/* Parses a 32-hex-digit client id. */
static int srv_oplog_uuid(const struct srv_oplog_entry *e, int i, struct pool_uuid *id) {
    if (i >= e->n || e->len[i] != 32)
        return -1;
    for (int k = 0; k < 16; k++) {
        int hi = srv_oplog_hexval(e->f[i][2 * k]), lo = srv_oplog_hexval(e->f[i][2 * k + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        id->b[k] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int srv_oplog_apply_mount(struct pool *p, const struct srv_oplog_entry *e, int64_t now) {
    struct pool_uuid id;
    struct pool_segment_spec spec = {0};
    if (e->n != 10 || srv_oplog_uuid(e, 3, &id) || srv_oplog_u64(e, 5, &spec.base) ||
        srv_oplog_u64(e, 6, &spec.size))
        return -1;
    spec.name = e->f[4];
    spec.endpoint = e->len[7] ? e->f[7] : NULL;
    spec.protocol = e->len[8] ? e->f[8] : NULL;
    spec.desc = e->len[9] ? e->f[9] : NULL;
    spec.desc_len = e->len[9];
    return pool_segment_mount(p, &id, &spec, now) == 0 ? 0 : -1;
}

/* U / G: the segment's owner, found in p; a segment already gone is not an error. */
static int srv_oplog_apply_unmount(struct pool *p, const struct srv_oplog_entry *e, int64_t now) {
    struct pool_segment_info s;
    uint64_t grace = 0;
    if ((e->f[2][0] == 'U' && e->n != 4) ||
        (e->f[2][0] == 'G' && (e->n != 5 || srv_oplog_u64(e, 4, &grace))))
        return -1;
    if (pool_segment_query(p, e->f[3], &s) != 0)
        return 0;
    struct pool_uuid owner = s.owner;
    if (e->f[2][0] == 'U')
        return pool_segment_unmount(p, &owner, e->f[3], now) == 0 ? 0 : -1;
    pool_segment_unmount_graceful(p, &owner, e->f[3], (int64_t)grace, now);
    return 0;
}

static int srv_oplog_apply_put(struct pool *p, const struct srv_oplog_entry *e, int64_t now) {
    uint64_t size, hard, soft, nrep;
    if (srv_oplog_u64(e, 4, &size) || srv_oplog_u64(e, 5, &hard) || srv_oplog_u64(e, 6, &soft) ||
        srv_oplog_u64(e, 7, &nrep) || nrep == 0 || nrep > POOL_MAX_REPLICAS ||
        e->n != 8 + 2 * (int)nrep)
        return -1;
    struct pool_restore_replica reps[POOL_MAX_REPLICAS];
    for (uint64_t i = 0; i < nrep; i++) {
        reps[i].segment = e->f[8 + 2 * i];
        if (srv_oplog_u64(e, 9 + 2 * (int)i, &reps[i].addr))
            return -1;
    }
    return pool_object_restore(p, e->f[3], e->len[3], size, hard != 0, (int64_t)soft, reps,
                               (size_t)nrep, now) == 0
               ? 0
               : -1;
}

/* Applies one entry to p. Returns 0 or -1. */
static int srv_oplog_apply(struct pool *p, const struct srv_oplog_entry *e, int64_t now) {
    struct pool_uuid id;
    switch (e->f[2][0]) {
    case 'R':
        if (e->n != 5 || srv_oplog_uuid(e, 3, &id))
            return -1;
        return pool_client_register(p, &id, e->f[4], now) == 0 ? 0 : -1;
    case 'M':
        return srv_oplog_apply_mount(p, e, now);
    case 'U':
    case 'G':
        return srv_oplog_apply_unmount(p, e, now);
    case 'P':
        return srv_oplog_apply_put(p, e, now);
    case 'D':
        if (e->n != 4)
            return -1;
        pool_remove(p, e->f[3], e->len[3], 1, now); /* a key already gone is fine */
        return 0;
    default:
        return -1;
    }
}

/* Checks and applies one entry; returns NULL or what went wrong. */
static const char *srv_oplog_apply_one(struct pool *p, const redisReply *x, int64_t now,
                                       uint64_t *last_epoch) {
    struct srv_oplog_entry e;
    uint64_t epoch = 0;
    if (x->type != REDIS_REPLY_STRING)
        return "is not a string";
    char *s = cm_malloc(x->len + 1);
    memcpy(s, x->str, x->len);
    s[x->len] = '\0';
    const char *why = NULL;
    if (strlen(s) != x->len || srv_oplog_split(s, &e) != 0 || srv_oplog_u64(&e, 0, &epoch) != 0)
        why = "cannot be parsed";
    else if (epoch < *last_epoch)
        why = "has an epoch below the entry before it";
    else if (srv_oplog_apply(p, &e, now) != 0)
        why = "cannot be applied";
    else
        *last_epoch = epoch;
    cm_free(s);
    return why;
}

/* Applies the entries of one LRANGE reply (base: index of the first). */
static int srv_oplog_apply_chunk(struct pool *p, const redisReply *r, uint64_t base, int64_t now,
                                 uint64_t *last_epoch, char *err, size_t errlen) {
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *x = r->element[i];
        const char *why = srv_oplog_apply_one(p, x, now, last_epoch);
        if (why) {
            snprintf(err, errlen,
                     "op-log entry %" PRIu64 " of %s %s: '%.120s'; refusing to serve (inspect "
                     "it with redis-cli LINDEX %s %" PRIu64 ")",
                     base + i, srv_oplog.list_key, why, x->type == REDIS_REPLY_STRING ? x->str : "",
                     srv_oplog.list_key, base + i);
            return -1;
        }
    }
    return 0;
}

int srv_oplog_replay(struct pool *p, int64_t now, uint64_t *n, char *err, size_t errlen) {
    redisContext *c = srv_oplog_connect(err, errlen);
    if (!c)
        return -1;
    uint64_t base = 0, last_epoch = 0;
    int rc = 0;
    for (;;) {
        char from[24], to[24];
        snprintf(from, sizeof(from), "%" PRIu64, base);
        snprintf(to, sizeof(to), "%" PRIu64, base + SRV_OPLOG_READ_CHUNK - 1);
        const char *av[4] = {"LRANGE", srv_oplog.list_key, from, to};
        redisReply *r = srv_oplog_cmd(c, err, errlen, 4, av, NULL);
        if (!r) {
            rc = -1;
            break;
        }
        size_t got = r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
        if (got && srv_oplog_apply_chunk(p, r, base, now, &last_epoch, err, errlen) != 0)
            rc = -1;
        freeReplyObject(r);
        base += got;
        if (rc != 0 || got < SRV_OPLOG_READ_CHUNK)
            break;
    }
    redisFree(c);
    *n = base;
    if (rc == 0) {
        pthread_mutex_lock(&srv_oplog.mu);
        srv_oplog.st.replayed = base;
        pthread_mutex_unlock(&srv_oplog.mu);
    }
    return rc;
}
