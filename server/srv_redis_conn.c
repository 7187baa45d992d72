/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One way for the master to reach a side Redis (the snapshot catalog in srv_snapcat.c, the op-log
 * store in srv_oplog_redis.c): address checks over struct ha_uri, and a connect that
 * authenticates and selects the db (see srv_redis_conn.h).
 */
#include "common/fmacros.h"

#include "server/srv_redis_conn.h"

#include "common/cm_net.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define SRV_REDIS_DB_MAX 1000000L

/* The db of a checked URI: its path as a number, 0 when the path is empty. */
static long srv_redis_db(const struct ha_uri *u) {
    return u->path[0] ? strtol(u->path, NULL, 10) : 0;
}

/* Public: see srv_redis_conn.h. */
int srv_redis_uri_check(const struct ha_uri *u, const char *what, char *err, size_t errlen) {
    if (strcmp(u->scheme, "redis") != 0) {
        snprintf(err, errlen, "%s: '%s://' is not a Redis address (want redis://host:port)", what,
                 u->scheme);
        return -1;
    }
    if (u->nhosts != 1) {
        snprintf(err, errlen, "%s: one redis://host:port, not %d", what, u->nhosts);
        return -1;
    }
    if (u->path[0]) {
        char *end;
        errno = 0;
        long db = strtol(u->path, &end, 10);
        if (!isdigit((unsigned char)u->path[0]) || *end || errno || db > SRV_REDIS_DB_MAX) {
            snprintf(err, errlen, "%s: Redis db '%s' is not a number (0..%ld)", what, u->path,
                     SRV_REDIS_DB_MAX);
            return -1;
        }
    }
    return 0;
}

/* Public: see srv_redis_conn.h. */
int srv_redis_uri_parse(const char *s, const char *what, struct ha_uri *out, char *err,
                        size_t errlen) {
    char uri[1024], why[256];
    if (strstr(s, "://") == NULL) { /* a bare host:port */
        if (snprintf(uri, sizeof(uri), "redis://%s", s) >= (int)sizeof(uri)) {
            snprintf(err, errlen, "%s: too long", what);
            return -1;
        }
        s = uri;
    }
    if (ha_uri_parse(s, out, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: %s (want redis://[[user]:password@]host:port[/db] or host:port)",
                 what, why);
        return -1;
    }
    return srv_redis_uri_check(out, what, err, errlen);
}

/* Public: see srv_redis_conn.h. */
void srv_redis_hostport(const struct ha_uri *u, char *host, size_t hostlen, int *port) {
    const char *hp = u->hosts[0];
    if (cm_net_hostport_parse(hp, strlen(hp), CM_NET_PORT_REQUIRED, host, hostlen, port, NULL, 0) <
        0) {
        snprintf(host, hostlen, "%s", "");
        *port = 0;
    }
}

/* Runs argv on c; 0, or -1 with "<what>: Redis <label> at <where> failed: <why>" in err. */
static int srv_redis_setup_cmd(redisContext *c, int argc, const char **argv, const char *label,
                               const char *what, const char *where, char *err, size_t errlen) {
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (r && r->type != REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        return 0;
    }
    snprintf(err, errlen, "%s: Redis %s at %s failed: %s", what, label, where,
             r ? r->str : (c->errstr[0] ? c->errstr : "no reply"));
    freeReplyObject(r);
    return -1;
}

/* Public: see srv_redis_conn.h. */
redisContext *srv_redis_connect(const struct ha_uri *u, int timeout_ms, const char *what, char *err,
                                size_t errlen) {
    char host[256];
    int port;
    srv_redis_hostport(u, host, sizeof(host), &port);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        snprintf(err, errlen, "%s: cannot connect to Redis at %s: %s", what, u->hosts[0],
                 c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (u->password[0]) {
        const char *with_user[3] = {"AUTH", u->user, u->password};
        const char *without[2] = {"AUTH", u->password};
        int rc = u->user[0]
                     ? srv_redis_setup_cmd(c, 3, with_user, "AUTH", what, u->hosts[0], err, errlen)
                     : srv_redis_setup_cmd(c, 2, without, "AUTH", what, u->hosts[0], err, errlen);
        if (rc != 0)
            goto fail;
    }
    long db = srv_redis_db(u);
    if (db) {
        char num[24], label[32];
        snprintf(num, sizeof(num), "%ld", db);
        snprintf(label, sizeof(label), "SELECT %ld", db);
        const char *select[2] = {"SELECT", num};
        if (srv_redis_setup_cmd(c, 2, select, label, what, u->hosts[0], err, errlen) != 0)
            goto fail;
    }
    return c;
fail:
    redisFree(c);
    return NULL;
}
