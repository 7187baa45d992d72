/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Redis election backend (hiredis). A hash-tagged view key crescent/{<cluster>}/master_view
 * holds the fields leader, epoch and owner (a random token per backend handle) and expires by
 * PEXPIRE; the counter crescent/{<cluster>}/epoch is raised on every acquisition to
 * max(counter, the candidate's floor) + 1, so epochs grow strictly, also past a Redis that lost
 * its data (which the counter, read back with every answer, reveals). Acquire, renew and release
 * are Lua scripts that check the owner token, so they are atomic. Redis has no watch here:
 * wait_change returns -ENOSYS. open probes EVAL once, so a server without Lua scripting
 * (crescent-master itself, for one) is refused at start-up with -CM_ENOT_SUPPORTED. Failures are
 * classified by hiredis's c->err and the errno of the failing call, never by matching its error
 * text; messages never quote a script.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "ha/ha_int.h"

/* The counter may be absent (-1 below): a Redis that lost its data. The new epoch is above both
   the counter and the caller's floor (ARGV[4]), and is stored as the counter. */
static const char ha_redis_acquire_lua[] =
    "local c = tonumber(redis.call('GET', KEYS[2]) or '-1')\n"
    "if redis.call('EXISTS', KEYS[1]) == 1 then\n"
    "  local v = redis.call('HMGET', KEYS[1], 'leader', 'epoch')\n"
    "  return {0, v[1] or '', tonumber(v[2] or '0'), redis.call('PTTL', KEYS[1]), c}\n"
    "end\n"
    "local e = math.max(c, tonumber(ARGV[4])) + 1\n"
    "redis.call('SET', KEYS[2], string.format('%d', e))\n"
    "redis.call('HSET', KEYS[1], 'leader', ARGV[1], 'epoch', string.format('%d', e), 'owner', "
    "ARGV[2])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "return {1, ARGV[1], e, tonumber(ARGV[3]), c}\n";

static const char ha_redis_renew_lua[] = "if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then\n"
                                         "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                                         "  return 1\n"
                                         "end\n"
                                         "return 0\n";

static const char ha_redis_release_lua[] =
    "if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then\n"
    "  redis.call('DEL', KEYS[1])\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

static const char ha_redis_read_lua[] =
    "local c = tonumber(redis.call('GET', KEYS[2]) or '-1')\n"
    "local v = redis.call('HMGET', KEYS[1], 'leader', 'epoch')\n"
    "if v[1] then return {v[1], tonumber(v[2] or '0'), redis.call('PTTL', KEYS[1]), c} end\n"
    "return {'', math.max(c, 0), -1, c}\n";

struct ha_redis {
    char host[256]; /* for hiredis: an IPv6 literal without brackets */
    int port;
    char addr[272]; /* for messages: "host:port" or "[v6]:port" */
    long db;
    char user[128], password[256];
    char view_key[320], epoch_key[320];
    char identity[256];
    char token[33]; /* owner token of this handle */
    redisContext *c;
    int timeout_ms; /* current bound for one call */
    uint64_t floor; /* an acquire takes an epoch above this */
};

static struct timeval tv_ms(int ms) {
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    return tv;
}

static void drop_conn(struct ha_redis *r) {
    if (r->c)
        redisFree(r->c);
    r->c = NULL;
}

/*
 * Maps a failed context to an error code and one line, by hiredis's error class and the errno
 * the failing call left (saved_errno): a socket timeout (SO_RCVTIMEO gives EAGAIN, a connect
 * timeout ETIMEDOUT) is -ETIMEDOUT, a refused or dropped connection -CM_EUNREACHABLE, garbage
 * from the server -CM_EPROTOCOL. Drops the connection.
 */
static int conn_error(struct ha_redis *r, const char *what, int saved_errno, char *err,
                      size_t errlen) {
    int type = r->c ? r->c->err : REDIS_ERR_OOM;
    const char *text = r->c ? r->c->errstr : "";
    int code;

#ifdef REDIS_ERR_TIMEOUT /* hiredis >= 1.0 has a class of its own for timeouts */
    if (type == REDIS_ERR_TIMEOUT)
        type = REDIS_ERR_IO, saved_errno = ETIMEDOUT;
#endif
    switch (type) {
    case REDIS_ERR_IO:
        if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT ||
            saved_errno == EINPROGRESS)
            code =
                ha__err(err, errlen, -ETIMEDOUT, "redis: %s: timed out after %d ms talking to %s",
                        what, r->timeout_ms, r->addr);
        else
            code = ha__err(err, errlen, -CM_EUNREACHABLE, "redis: %s: %s %s: %s", what,
                           strcmp(what, "connect") == 0 ? "cannot connect to" : "I/O error with",
                           r->addr, text);
        break;
    case REDIS_ERR_EOF:
        code = ha__err(err, errlen, -CM_EUNREACHABLE, "redis: %s: %s closed the connection", what,
                       r->addr);
        break;
    case REDIS_ERR_PROTOCOL:
        code = ha__err(err, errlen, -CM_EPROTOCOL, "redis: %s: protocol error from %s: %s", what,
                       r->addr, text);
        break;
    case REDIS_ERR_OOM:
        code = ha__err(err, errlen, -ENOMEM, "redis: %s: out of memory", what);
        break;
    default: /* REDIS_ERR_OTHER: name resolution and the like */
        code = ha__err(err, errlen, -CM_EUNREACHABLE, "redis: %s: %s: %s", what, r->addr, text);
        break;
    }
    drop_conn(r);
    return code;
}

/*
 * Maps an error reply to a code and one line (and frees it). The server's text is quoted up to
 * ", with args beginning with" (Redis echoes the arguments there, which would put a Lua script
 * in the log) and at most 160 bytes. "ERR unknown command 'X'" becomes -CM_ENOT_SUPPORTED.
 */
static int reply_error(struct ha_redis *r, redisReply *rep, const char *what, char *err,
                       size_t errlen) {
    static const char unknown[] = "ERR unknown command '";
    const char *echo = strstr(rep->str, ", with args beginning with");
    int n = echo ? (int)(echo - rep->str) : (int)strlen(rep->str);
    int code = -CM_EPROTOCOL;

    if (n > 160)
        n = 160;
    if (strncmp(rep->str, "NOAUTH", 6) == 0 || strncmp(rep->str, "WRONGPASS", 9) == 0 ||
        strstr(rep->str, "invalid password") || strstr(rep->str, "NOPERM"))
        code = -CM_EAUTH;
    if (strncmp(rep->str, unknown, sizeof(unknown) - 1) == 0) {
        const char *name = rep->str + sizeof(unknown) - 1;
        int len = (int)strcspn(name, "'");
        bool eval = len == 4 && strncasecmp(name, "EVAL", 4) == 0;
        code = ha__err(err, errlen, -CM_ENOT_SUPPORTED, "redis: %s: %s does not support %.*s%s",
                       what, r->addr, len > 32 ? 32 : len, name,
                       eval ? " (the election needs a Redis server with Lua scripting, 2.6 or "
                              "later)"
                            : "");
    } else {
        ha__err(err, errlen, code, "redis: %s: %s: %.*s", what, r->addr, n, rep->str);
    }
    freeReplyObject(rep);
    return code;
}

/* Runs one command on the current connection; *out gets the reply (caller frees). */
static int raw_cmd(struct ha_redis *r, redisReply **out, const char *what, char *err, size_t errlen,
                   const char *fmt, ...) {
    redisReply *rep;
    int saved_errno;
    va_list ap;

    va_start(ap, fmt);
    errno = 0;
    rep = redisvCommand(r->c, fmt, ap);
    saved_errno = errno;
    va_end(ap);
    if (!rep)
        return conn_error(r, what, saved_errno, err, errlen);
    if (rep->type == REDIS_REPLY_ERROR)
        return reply_error(r, rep, what, err, errlen);
    *out = rep;
    return 0;
}

/* Connects, authenticates, selects the db and pings, all bounded by r->timeout_ms. */
static int redis_connect(struct ha_redis *r, char *err, size_t errlen) {
    struct timeval tv = tv_ms(r->timeout_ms);
    redisReply *rep = NULL;
    int rc;

    errno = 0;
    r->c = redisConnectWithTimeout(r->host, r->port, tv);
    if (!r->c || r->c->err)
        return conn_error(r, "connect", errno, err, errlen);
    redisSetTimeout(r->c, tv);
    if (r->password[0]) {
        if (r->user[0])
            rc = raw_cmd(r, &rep, "AUTH", err, errlen, "AUTH %s %s", r->user, r->password);
        else
            rc = raw_cmd(r, &rep, "AUTH", err, errlen, "AUTH %s", r->password);
        if (rc == -CM_EPROTOCOL)
            rc = -CM_EAUTH;
        if (rc) {
            drop_conn(r);
            return rc;
        }
        freeReplyObject(rep);
    }
    if (r->db) {
        rc = raw_cmd(r, &rep, "SELECT", err, errlen, "SELECT %ld", r->db);
        if (rc) {
            drop_conn(r);
            return rc;
        }
        freeReplyObject(rep);
    }
    rc = raw_cmd(r, &rep, "PING", err, errlen, "PING");
    if (rc) {
        drop_conn(r);
        return rc;
    }
    freeReplyObject(rep);
    return 0;
}

/* Runs an EVAL of script over the view and epoch keys with four arguments. */
static int eval(struct ha_redis *r, const char *script, const char *what, redisReply **out,
                char *err, size_t errlen, const char *a1, const char *a2, const char *a3,
                const char *a4) {
    int rc;

    if (!r->c) {
        rc = redis_connect(r, err, errlen);
        if (rc)
            return rc;
    } else {
        redisSetTimeout(r->c, tv_ms(r->timeout_ms));
    }
    rc = raw_cmd(r, out, what, err, errlen, "EVAL %s 2 %s %s %s %s %s %s", script, r->view_key,
                 r->epoch_key, a1, a2, a3, a4);
    if (rc == 0 && (*out)->type != REDIS_REPLY_ARRAY && (*out)->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(*out);
        return ha__err(err, errlen, -CM_EPROTOCOL, "redis: %s: unexpected reply type", what);
    }
    return rc;
}

/*
 * Checks once, at open, that the server runs Lua scripts (EVAL "return 1" 0), so that a server
 * without EVAL fails start-up with one line instead of every campaign failing later.
 */
static int probe_eval(struct ha_redis *r, char *err, size_t errlen) {
    redisReply *rep;
    int rc;

    rc = raw_cmd(r, &rep, "EVAL probe", err, errlen, "EVAL %s 0", "return 1");
    if (rc)
        return rc;
    rc = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1
             ? 0
             : ha__err(err, errlen, -CM_ENOT_SUPPORTED,
                       "redis: EVAL probe: %s answered EVAL \"return 1\" 0 with something other "
                       "than 1; the election needs Lua scripting",
                       r->addr);
    freeReplyObject(rep);
    return rc;
}

static int64_t elem_int(const redisReply *rep, size_t i) {
    if (i >= rep->elements)
        return 0;
    if (rep->element[i]->type == REDIS_REPLY_INTEGER)
        return rep->element[i]->integer;
    if (rep->element[i]->type == REDIS_REPLY_STRING)
        return strtoll(rep->element[i]->str, NULL, 10);
    return 0;
}

/* The epoch counter as a script read it (-1 = absent, reported as 0). */
static void stored_from(const redisReply *rep, size_t i, struct ha_view *view) {
    int64_t c = elem_int(rep, i);

    view->stored_known = true;
    view->stored_epoch = c > 0 ? (uint64_t)c : 0;
}

static void elem_str(const redisReply *rep, size_t i, char *dst, size_t cap) {
    dst[0] = '\0';
    if (i < rep->elements && rep->element[i]->type == REDIS_REPLY_STRING)
        snprintf(dst, cap, "%s", rep->element[i]->str);
}

static int ha_redis_open(const struct ha_uri *uri, const char *cluster_id, const char *identity,
                         int timeout_ms, void **state, char *err, size_t errlen) {
    struct ha_redis *r;
    const char *colon;
    char *end;
    int rc;

    *state = NULL;
    if (uri->nhosts != 1)
        return ha__err(err, errlen, -CM_EBAD_URI,
                       "bad URI: redis:// takes exactly one host:port (a single Redis holds "
                       "the lease)");
    r = cm_calloc(1, sizeof(*r));
    colon = strrchr(uri->hosts[0], ':');
    snprintf(r->host, sizeof(r->host), "%.*s", (int)(colon - uri->hosts[0]), uri->hosts[0]);
    if (r->host[0] == '[') { /* [v6] */
        memmove(r->host, r->host + 1, strlen(r->host));
        r->host[strlen(r->host) - 1] = '\0';
    }
    r->port = atoi(colon + 1);
    snprintf(r->addr, sizeof(r->addr), strchr(r->host, ':') ? "[%s]:%d" : "%s:%d", r->host,
             r->port);
    if (uri->path[0]) {
        errno = 0;
        r->db = strtol(uri->path, &end, 10);
        if (*end || errno || r->db < 0 || r->db > 1000000) {
            cm_free(r);
            return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: redis db '%s' is not a number",
                           uri->path);
        }
    }
    snprintf(r->user, sizeof(r->user), "%s", uri->user);
    snprintf(r->password, sizeof(r->password), "%s", uri->password);
    snprintf(r->view_key, sizeof(r->view_key), "crescent/{%s}/master_view", cluster_id);
    snprintf(r->epoch_key, sizeof(r->epoch_key), "crescent/{%s}/epoch", cluster_id);
    snprintf(r->identity, sizeof(r->identity), "%s", identity);
    r->timeout_ms = timeout_ms > 0 ? timeout_ms : 3000;
    rc = ha__random_hex(r->token, 16);
    if (rc == 0)
        rc = redis_connect(r, err, errlen);
    if (rc == 0)
        rc = probe_eval(r, err, errlen);
    if (rc) {
        drop_conn(r);
        memset(r->password, 0, sizeof(r->password));
        cm_free(r);
        return rc;
    }
    *state = r;
    return 0;
}

static void ha_redis_close(void *state) {
    struct ha_redis *r = state;

    if (!r)
        return;
    drop_conn(r);
    memset(r->password, 0, sizeof(r->password));
    cm_free(r);
}

static int ha_redis_try_acquire(void *state, uint64_t lease_ms, uint64_t *epoch,
                                struct ha_view *view, char *err, size_t errlen) {
    struct ha_redis *r = state;
    redisReply *rep;
    char ttl[32], floor[32];
    int rc;

    snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)lease_ms);
    snprintf(floor, sizeof(floor), "%llu", (unsigned long long)r->floor);
    rc = eval(r, ha_redis_acquire_lua, "acquire", &rep, err, errlen, r->identity, r->token, ttl,
              floor);
    if (rc)
        return rc;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 5) {
        freeReplyObject(rep);
        return ha__err(err, errlen, -CM_EPROTOCOL, "redis: acquire: unexpected reply");
    }
    elem_str(rep, 1, view->holder, sizeof(view->holder));
    view->epoch = (uint64_t)elem_int(rep, 2);
    view->ttl_ms = elem_int(rep, 3);
    if (view->ttl_ms < 0)
        view->ttl_ms = -1;
    stored_from(rep, 4, view);
    rc = elem_int(rep, 0) == 1 ? 0 : -EBUSY;
    if (rc == 0)
        *epoch = view->epoch;
    freeReplyObject(rep);
    return rc;
}

/* Runs an owner-checked script (renew or release); 1 = done, 0 = not ours. */
static int owner_script(struct ha_redis *r, const char *script, const char *what, uint64_t lease_ms,
                        char *err, size_t errlen) {
    redisReply *rep;
    char ttl[32];
    int rc;

    snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)lease_ms);
    rc = eval(r, script, what, &rep, err, errlen, r->token, ttl, "-", "-");
    if (rc)
        return rc;
    rc =
        rep->type == REDIS_REPLY_INTEGER && rep->integer == 1
            ? 0
            : ha__err(err, errlen, -CM_ENOT_LEADER, "redis: %s: the lease is no longer ours", what);
    freeReplyObject(rep);
    return rc;
}

static int ha_redis_renew(void *state, uint64_t lease_ms, char *err, size_t errlen) {
    return owner_script(state, ha_redis_renew_lua, "renew", lease_ms, err, errlen);
}

static int ha_redis_release(void *state, char *err, size_t errlen) {
    return owner_script(state, ha_redis_release_lua, "release", 0, err, errlen);
}

static int ha_redis_get_holder(void *state, struct ha_view *view, char *err, size_t errlen) {
    struct ha_redis *r = state;
    redisReply *rep;
    int rc;

    rc = eval(r, ha_redis_read_lua, "read", &rep, err, errlen, "-", "-", "-", "-");
    if (rc)
        return rc;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 4) {
        freeReplyObject(rep);
        return ha__err(err, errlen, -CM_EPROTOCOL, "redis: read: unexpected reply");
    }
    elem_str(rep, 0, view->holder, sizeof(view->holder));
    view->epoch = (uint64_t)elem_int(rep, 1);
    view->ttl_ms = elem_int(rep, 2);
    if (view->ttl_ms < 0)
        view->ttl_ms = -1;
    stored_from(rep, 3, view);
    freeReplyObject(rep);
    return 0;
}

static int ha_redis_wait_change(void *state, uint64_t epoch, int timeout_ms) {
    (void)state;
    (void)epoch;
    (void)timeout_ms;
    return -ENOSYS; /* no keyspace notifications: the elector polls */
}

static void ha_redis_set_timeout(void *state, int timeout_ms) {
    struct ha_redis *r = state;

    r->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
}

static void ha_redis_set_epoch_floor(void *state, uint64_t floor) {
    struct ha_redis *r = state;

    r->floor = floor;
}

/* The Redis backend (scheme "redis"); see the file comment. Immutable, shared by all threads. */
const struct ha_backend_ops ha_redis_ops = {
    .size = sizeof(struct ha_backend_ops),
    .scheme = "redis",
    .open = ha_redis_open,
    .close = ha_redis_close,
    .try_acquire = ha_redis_try_acquire,
    .renew = ha_redis_renew,
    .release = ha_redis_release,
    .get_holder = ha_redis_get_holder,
    .wait_change = ha_redis_wait_change,
    .set_timeout = ha_redis_set_timeout,
    .set_epoch_floor = ha_redis_set_epoch_floor,
};
