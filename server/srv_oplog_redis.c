/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Redis op-log store (srv_oplog_int.h): the entries are the list crescent/{<cluster>}/oplog,
 * appended by a Lua script that first checks the fence crescent/{<cluster>}/oplog_epoch (a
 * writer with a lower epoch is refused, a higher one raises it); replay reads it with LRANGE.
 * Trimming up to a snapshot (LTRIM under the same fence check) records the trim point in
 * crescent/{<cluster>}/oplog_trimmed.
 */
#include "common/fmacros.h"

#include "server/srv_oplog_int.h"
#include "server/srv_redis_conn.h"

#include "common/cm_log.h"
#include "common/cm_mem.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRV_OPR_IO_MS      2000  /* bound on one call */
#define SRV_OPR_READ_CHUNK 10000 /* entries per LRANGE */

/* Appends ARGV[2..] to KEYS[1] unless ARGV[1] (the writer's epoch) is below KEYS[2]. */
static const char srv_opr_script[] =
    "local e = tonumber(ARGV[1])\n"
    "local cur = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "if e < cur then return redis.error_reply('FENCED op-log fenced at epoch ' .. cur) end\n"
    "if e > cur then redis.call('SET', KEYS[2], ARGV[1]) end\n"
    "for i = 2, #ARGV, 1000 do\n"
    "  redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))\n"
    "end\n"
    "return redis.call('LLEN', KEYS[1])\n";

/* Swaps KEYS[3] (the compacted log) in as KEYS[1] if the fence KEYS[2] still holds ARGV[1];
   the compacted log is the whole state, so the trim point KEYS[4] goes. */
static const char srv_opr_swap_script[] =
    "local cur = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "if cur ~= tonumber(ARGV[1]) then\n"
    "  redis.call('DEL', KEYS[3])\n"
    "  return redis.error_reply('FENCED op-log fenced at epoch ' .. cur)\n"
    "end\n"
    "if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('RENAME', KEYS[3], KEYS[1])\n"
    "else redis.call('DEL', KEYS[1]) end\n"
    "redis.call('DEL', KEYS[4])\n"
    "return redis.call('LLEN', KEYS[1])\n";

/*
 * If the fence KEYS[2] holds ARGV[1]: finds (binary search, sequence numbers grow along the
 * list) how many leading entries of KEYS[1] have a sequence number <= ARGV[2], removes them
 * with LTRIM and raises the trim point KEYS[3] to ARGV[2]. Returns the count removed.
 */
static const char srv_opr_trim_script[] =
    "local cur = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "if cur ~= tonumber(ARGV[1]) then\n"
    "  return redis.error_reply('FENCED op-log fenced at epoch ' .. cur)\n"
    "end\n"
    "local upto = tonumber(ARGV[2])\n"
    "local lo, hi = 0, redis.call('LLEN', KEYS[1])\n"
    "while lo < hi do\n"
    "  local mid = math.floor((lo + hi) / 2)\n"
    "  local s = tonumber(string.match(redis.call('LINDEX', KEYS[1], mid) or '', '^%d+ (%d+) '))\n"
    "  if s ~= nil and s <= upto then lo = mid + 1 else hi = mid end\n"
    "end\n"
    "if lo > 0 then redis.call('LTRIM', KEYS[1], lo, -1) end\n"
    "if upto > tonumber(redis.call('GET', KEYS[3]) or '0') then\n"
    "  redis.call('SET', KEYS[3], ARGV[2])\n"
    "end\n"
    "return lo\n";

/* The trim point KEYS[2] and the first entry of KEYS[1]. */
static const char srv_opr_bounds_script[] =
    "return {redis.call('GET', KEYS[2]) or '0', redis.call('LINDEX', KEYS[1], 0) or ''}\n";

/*
 * A hot standby's read: like the trim script's search, lo = how many leading entries of KEYS[1]
 * have a sequence number <= ARGV[1]; returns {trim point KEYS[2], LLEN, first index, entries
 * from max(lo - 1, 0), at most ARGV[2]} in one atomic view.
 */
static const char srv_opr_read_script[] =
    "local after = tonumber(ARGV[1])\n"
    "local n = redis.call('LLEN', KEYS[1])\n"
    "local lo, hi = 0, n\n"
    "while lo < hi do\n"
    "  local mid = math.floor((lo + hi) / 2)\n"
    "  local s = tonumber(string.match(redis.call('LINDEX', KEYS[1], mid) or '', '^%d+ (%d+) '))\n"
    "  if s ~= nil and s <= after then lo = mid + 1 else hi = mid end\n"
    "end\n"
    "if lo > 0 then lo = lo - 1 end\n"
    "return {redis.call('GET', KEYS[2]) or '0', n, lo,\n"
    "        redis.call('LRANGE', KEYS[1], lo, lo + tonumber(ARGV[2]) - 1)}\n";

static struct {
    struct ha_uri uri; /* the store's server */
    char host[256];    /* its host and port, for messages */
    int port;
    char list_key[320], fence_key[320], side_key[340], base_key[320];
    char desc[640];
} srv_opr;

/* Runs a command on c and returns the reply (caller frees), or NULL with err set. */
static redisReply *srv_opr_cmd(redisContext *c, char *err, size_t errlen, int argc,
                               const char **argv, const size_t *lens) {
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    if (!r) {
        snprintf(err, errlen, "op-log store %s:%d: %s", srv_opr.host, srv_opr.port,
                 c->errstr[0] ? c->errstr : "no reply");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "op-log store %s:%d: %s", srv_opr.host, srv_opr.port, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* Runs a command whose reply is not needed. Returns 0 or -1 (err). */
static int srv_opr_do(redisContext *c, char *err, size_t errlen, int argc, const char **argv) {
    redisReply *r = srv_opr_cmd(c, err, errlen, argc, argv, NULL);
    if (!r)
        return -1;
    freeReplyObject(r);
    return 0;
}

static void *srv_opr_connect(char *err, size_t errlen) {
    return srv_redis_connect(&srv_opr.uri, SRV_OPR_IO_MS, "op-log store", err, errlen);
}

static void srv_opr_disconnect(void *conn) {
    redisFree(conn);
}

static int srv_opr_append(void *conn, uint64_t epoch, uint64_t first_seq, const char *const *v,
                          const size_t *lens, size_t n, char *err, size_t errlen) {
    (void)first_seq;
    size_t argc = 6 + n;
    const char **av = cm_malloc(argc * sizeof(char *));
    size_t *al = cm_malloc(argc * sizeof(size_t));
    char ep[24];
    snprintf(ep, sizeof(ep), "%" PRIu64, epoch);
    av[0] = "EVAL";
    av[1] = srv_opr_script;
    av[2] = "2";
    av[3] = srv_opr.list_key;
    av[4] = srv_opr.fence_key;
    av[5] = ep;
    for (size_t i = 0; i < 6; i++)
        al[i] = strlen(av[i]);
    for (size_t i = 0; i < n; i++) {
        av[6 + i] = v[i];
        al[6 + i] = lens[i];
    }
    redisReply *r = srv_opr_cmd(conn, err, errlen, (int)argc, av, al);
    cm_free(av);
    cm_free(al);
    if (!r)
        return -1;
    freeReplyObject(r);
    return 0;
}

/* Writes v[0..n) to the side list (RPUSH, 1000 at a time), then swaps it in under the fence. */
static int srv_opr_compact(void *conn, uint64_t epoch, const char *const *v, const size_t *lens,
                           size_t n, char *err, size_t errlen) {
    const char *del[2] = {"DEL", srv_opr.side_key};
    if (srv_opr_do(conn, err, errlen, 2, del) != 0)
        return -1;
    const char **av = cm_malloc(1002 * sizeof(char *));
    size_t *al = cm_malloc(1002 * sizeof(size_t));
    int rc = 0;
    for (size_t from = 0; from < n && rc == 0; from += 1000) {
        size_t k = n - from < 1000 ? n - from : 1000;
        av[0] = "RPUSH";
        av[1] = srv_opr.side_key;
        al[0] = 5;
        al[1] = strlen(srv_opr.side_key);
        for (size_t i = 0; i < k; i++) {
            av[2 + i] = v[from + i];
            al[2 + i] = lens[from + i];
        }
        redisReply *r = srv_opr_cmd(conn, err, errlen, (int)(2 + k), av, al);
        rc = r ? 0 : -1;
        if (r)
            freeReplyObject(r);
    }
    cm_free(av);
    cm_free(al);
    if (rc != 0)
        return -1;
    char ep[24];
    snprintf(ep, sizeof(ep), "%" PRIu64, epoch);
    const char *swap[8] = {
        "EVAL",           srv_opr_swap_script, "4", srv_opr.list_key, srv_opr.fence_key,
        srv_opr.side_key, srv_opr.base_key,    ep};
    return srv_opr_do(conn, err, errlen, 8, swap);
}

static int srv_opr_trim(void *conn, uint64_t epoch, uint64_t upto, uint64_t upto_epoch, char *err,
                        size_t errlen) {
    (void)upto_epoch;
    char ep[24], to[24];
    snprintf(ep, sizeof(ep), "%" PRIu64, epoch);
    snprintf(to, sizeof(to), "%" PRIu64, upto);
    const char *av[8] = {
        "EVAL", srv_opr_trim_script, "3", srv_opr.list_key, srv_opr.fence_key, srv_opr.base_key, ep,
        to};
    return srv_opr_do(conn, err, errlen, 8, av);
}

static int srv_opr_bounds(void *conn, uint64_t *base, uint64_t *first, char *err, size_t errlen) {
    const char *av[5] = {"EVAL", srv_opr_bounds_script, "2", srv_opr.list_key, srv_opr.base_key};
    redisReply *r = srv_opr_cmd(conn, err, errlen, 5, av, NULL);
    if (!r)
        return -1;
    *base = *first = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING) {
        unsigned long long e, q;
        *base = strtoull(r->element[0]->str, NULL, 10);
        if (sscanf(r->element[1]->str, "%llu %llu ", &e, &q) == 2)
            *first = q;
    }
    freeReplyObject(r);
    return 0;
}

/* Feeds one LRANGE reply (entries base.. ) to cb. */
static int srv_opr_feed(const redisReply *r, uint64_t base, srv_oplog_scan_cb *cb, void *arg) {
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *x = r->element[i];
        char where[400], hint[480];
        snprintf(where, sizeof(where), "%" PRIu64 " of %s", base + i, srv_opr.list_key);
        snprintf(hint, sizeof(hint), "inspect it with redis-cli LINDEX %s %" PRIu64,
                 srv_opr.list_key, base + i);
        if (x->type != REDIS_REPLY_STRING) {
            if (cb(arg, NULL, 0, where, hint) != 0)
                return -1;
        } else if (cb(arg, x->str, x->len, where, hint) != 0) {
            return -1;
        }
    }
    return 0;
}

static int srv_opr_scan(void *conn, srv_oplog_scan_cb *cb, void *arg, char *err, size_t errlen) {
    for (uint64_t base = 0;;) {
        char from[24], to[24];
        snprintf(from, sizeof(from), "%" PRIu64, base);
        snprintf(to, sizeof(to), "%" PRIu64, base + SRV_OPR_READ_CHUNK - 1);
        const char *av[4] = {"LRANGE", srv_opr.list_key, from, to};
        redisReply *r = srv_opr_cmd(conn, err, errlen, 4, av, NULL);
        if (!r)
            return -1;
        size_t got = r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
        int rc = got ? srv_opr_feed(r, base, cb, arg) : 0;
        freeReplyObject(r);
        if (rc != 0)
            return -1;
        base += got;
        if (got < SRV_OPR_READ_CHUNK)
            return 0;
    }
}

static long srv_opr_read_from(void *conn, uint64_t seq, uint64_t key_epoch, size_t max,
                              srv_oplog_scan_cb *cb, void *arg, uint64_t *base, uint64_t *len,
                              char *err, size_t errlen) {
    (void)key_epoch;
    char after[24], cnt[24];
    snprintf(after, sizeof(after), "%" PRIu64, seq);
    snprintf(cnt, sizeof(cnt), "%zu", max);
    const char *av[7] = {
        "EVAL", srv_opr_read_script, "2", srv_opr.list_key, srv_opr.base_key, after, cnt};
    redisReply *r = srv_opr_cmd(conn, err, errlen, 7, av, NULL);
    if (!r)
        return -1;
    long rc = -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_INTEGER ||
        r->element[2]->type != REDIS_REPLY_INTEGER || r->element[3]->type != REDIS_REPLY_ARRAY) {
        snprintf(err, errlen, "op-log store %s:%d: unexpected reply to the tail read", srv_opr.host,
                 srv_opr.port);
    } else {
        *base = strtoull(r->element[0]->str, NULL, 10);
        *len = (uint64_t)r->element[1]->integer;
        if (srv_opr_feed(r->element[3], (uint64_t)r->element[2]->integer, cb, arg) == 0)
            rc = (long)r->element[3]->elements;
    }
    freeReplyObject(r);
    return rc;
}

/* Logs a warning when the store's persistence may lose acknowledged entries. */
static void srv_opr_check_persistence(redisContext *c) {
    char err[256];
    const char *aof[3] = {"CONFIG", "GET", "appendonly"};
    const char *fs[3] = {"CONFIG", "GET", "appendfsync"};
    redisReply *a = srv_opr_cmd(c, err, sizeof(err), 3, aof, NULL);
    redisReply *f = srv_opr_cmd(c, err, sizeof(err), 3, fs, NULL);
    int ok = a && f && a->type == REDIS_REPLY_ARRAY && a->elements == 2 &&
             f->type == REDIS_REPLY_ARRAY && f->elements == 2 &&
             strcmp(a->element[1]->str, "yes") == 0 && strcmp(f->element[1]->str, "always") == 0;
    if (!ok)
        cm_log(CM_LOG_WARNING, "oplog",
               "op-log store %s:%d does not run 'appendonly yes' with 'appendfsync always' (or "
               "CONFIG GET is refused): a restart of that Redis may lose acknowledged metadata",
               srv_opr.host, srv_opr.port);
    if (a)
        freeReplyObject(a);
    if (f)
        freeReplyObject(f);
}

static int srv_opr_open(const struct ha_uri *u, const char *cluster, char *err, size_t errlen) {
    if (srv_redis_uri_check(u, "oplog_store", err, errlen) != 0)
        return -1;
    srv_opr.uri = *u;
    srv_redis_hostport(u, srv_opr.host, sizeof(srv_opr.host), &srv_opr.port);
    snprintf(srv_opr.list_key, sizeof(srv_opr.list_key), "crescent/{%s}/oplog", cluster);
    snprintf(srv_opr.fence_key, sizeof(srv_opr.fence_key), "crescent/{%s}/oplog_epoch", cluster);
    snprintf(srv_opr.side_key, sizeof(srv_opr.side_key), "%s:compact", srv_opr.list_key);
    snprintf(srv_opr.base_key, sizeof(srv_opr.base_key), "crescent/{%s}/oplog_trimmed", cluster);
    snprintf(srv_opr.desc, sizeof(srv_opr.desc), "redis %s:%d %s", srv_opr.host, srv_opr.port,
             srv_opr.list_key);
    redisContext *c = srv_opr_connect(err, errlen);
    if (!c)
        return -1;
    const char *probe[3] = {"EVAL", "return 1", "0"};
    int rc = srv_opr_do(c, err, errlen, 3, probe);
    if (rc == 0)
        srv_opr_check_persistence(c);
    redisFree(c);
    return rc;
}

static const char *srv_opr_describe(void) {
    return srv_opr.desc;
}

const struct srv_oplog_store srv_oplog_redis = {
    .scheme = "redis",
    .open = srv_opr_open,
    .connect = srv_opr_connect,
    .disconnect = srv_opr_disconnect,
    .append = srv_opr_append,
    .compact = srv_opr_compact,
    .trim = srv_opr_trim,
    .bounds = srv_opr_bounds,
    .scan = srv_opr_scan,
    .read_from = srv_opr_read_from,
    .describe = srv_opr_describe,
};
