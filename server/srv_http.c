/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admin HTTP server of crescent-master on libmicrohttpd (one internal polling thread).
 * Routes: /metrics, /health, /role, /leader, /query_key?key=, /get_all_segments,
 * /get_all_keys?cursor=&count=. Only GET and HEAD; anything else is answered, never crashes:
 * 404 for an unknown path, 405 for another method, 400 for a bad parameter.
 */
#include "common/fmacros.h"

#include "server/srv_db.h"
#include "server/srv_ha.h"
#include "server/srv_http.h"
#include "server/srv_server.h"

#include "common/cm_atomic.h"
#include "common/cm_http.h"
#include "common/cm_log.h"
#include "common/cm_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define SRV_HTTP_KEYS_DEFAULT 100
#define SRV_HTTP_KEYS_MAX     10000

static struct cm_http *srv_httpd;

/* Sends b as application/json with status and frees b. */
static enum MHD_Result srv_http_json(struct MHD_Connection *conn, unsigned status,
                                     struct cm_buf *b) {
    enum MHD_Result ret = cm_http_send(conn, status, "application/json", b);
    cm_buf_fini(b);
    return ret;
}

/* ---------------------------------------------------------------- routes */

static enum MHD_Result srv_route_metrics(void *arg, struct MHD_Connection *conn) {
    (void)arg;
    struct cm_buf b;
    cm_buf_init(&b);
    srv_metrics_render(&b);
    enum MHD_Result ret = cm_http_send(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", &b);
    cm_buf_fini(&b);
    return ret;
}

static const char *srv_state_name(int st) {
    return st == SRV_STATE_SERVING ? "serving" : st == SRV_STATE_STOPPING ? "stopping" : "starting";
}

static enum MHD_Result srv_route_health(void *arg, struct MHD_Connection *conn) {
    (void)arg;
    int st = cm_atomic_load_acquire(&srv_state);
    int ready = st == SRV_STATE_SERVING;
    struct cm_buf b;
    cm_buf_init(&b);
    if (srv_ha_enabled()) { /* ready = the serving leader */
        struct srv_ha_view v;
        srv_ha_get_view(&v);
        ready = ready && v.serving;
        cm_buf_appendf(&b, "{\"role\":\"%s\",\"state\":\"%s\",\"ready\":%s,\"ha\":true}\n",
                       v.serving ? "leader" : "standby", v.state, ready ? "true" : "false");
        return srv_http_json(conn, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, &b);
    }
    cm_buf_appendf(&b, "{\"role\":\"leader\",\"state\":\"%s\",\"ready\":%s,\"ha\":false}\n",
                   srv_state_name(st), ready ? "true" : "false");
    return srv_http_json(conn, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, &b);
}

static enum MHD_Result srv_route_role(void *arg, struct MHD_Connection *conn) {
    (void)arg;
    struct cm_buf b;
    cm_buf_init(&b);
    if (srv_ha_enabled()) {
        struct srv_ha_view v;
        srv_ha_get_view(&v);
        cm_buf_appendf(&b, "{\"role\":\"%s\",\"ha\":true,\"state\":\"%s\"}\n",
                       v.serving ? "leader" : "standby", v.state);
        return srv_http_json(conn, MHD_HTTP_OK, &b);
    }
    cm_buf_appendf(&b, "{\"role\":\"leader\",\"ha\":false,\"state\":\"%s\"}\n",
                   srv_state_name(cm_atomic_load_acquire(&srv_state)));
    return srv_http_json(conn, MHD_HTTP_OK, &b);
}

static enum MHD_Result srv_route_leader(void *arg, struct MHD_Connection *conn) {
    (void)arg;
    struct cm_buf b;
    cm_buf_init(&b);
    const char *host = srv_cfg.bind && *srv_cfg.bind ? srv_cfg.bind : "0.0.0.0";
    char first[256];
    snprintf(first, sizeof(first), "%s", host); /* the first bind address */
    first[strcspn(first, " ")] = '\0';
    cm_buf_appendf(&b, "{\"leader\":");
    if (srv_ha_enabled()) {
        struct srv_ha_view v;
        srv_ha_get_view(&v);
        cm_buf_append_json_str(&b, v.leader, strlen(v.leader));
        cm_buf_appendf(&b, ",\"epoch\":%llu,\"ha\":true}\n", (unsigned long long)v.epoch);
        return srv_http_json(conn, MHD_HTTP_OK, &b);
    }
    char addr[300];
    int n = snprintf(addr, sizeof(addr), strchr(first, ':') ? "[%s]:%lld" : "%s:%lld", first,
                     srv_cfg.port);
    cm_buf_append_json_str(&b, addr, (size_t)n < sizeof(addr) ? (size_t)n : sizeof(addr) - 1);
    cm_buf_appendf(&b, ",\"epoch\":0,\"ha\":false}\n");
    return srv_http_json(conn, MHD_HTTP_OK, &b);
}

static enum MHD_Result srv_route_segments(void *arg, struct MHD_Connection *conn) {
    (void)arg;
    struct srv_seg_stats ss;
    srv_seg_stats(srv_segment, &ss);
    struct cm_buf b;
    cm_buf_init(&b);
    cm_buf_appendf(&b,
                   "{\"segments\":[{\"name\":\"embedded\",\"owner\":\"master\",\"size\":%llu,"
                   "\"used\":%llu,\"status\":\"OK\"}]}\n",
                   (unsigned long long)ss.size, (unsigned long long)ss.used);
    return srv_http_json(conn, MHD_HTTP_OK, &b);
}

static const char *const srv_type_names[] = {"string", "list", "set", "hash", "zset"};

static enum MHD_Result srv_route_query_key(void *arg, struct MHD_Connection *conn) {
    (void)arg;
    const char *key;
    size_t klen;
    if (MHD_lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, "key", 3, &key, &klen) !=
            MHD_YES ||
        key == NULL)
        return cm_http_error(conn, MHD_HTTP_BAD_REQUEST, "INVALID_PARAMS",
                             "the key parameter is required: /query_key?key=NAME");
    struct cm_buf b;
    cm_buf_init(&b);
    int64_t now = srv_now_ms();
    srv_db_rdlock();
    struct srv_db_ref r;
    srv_db_lock(&r, key, klen);
    struct srv_obj *o = srv_db_peek(&r, now);
    if (o) {
        int64_t exp = cm_atomic_load_relaxed(&o->expire_ms);
        int is_str = o->type == SRV_TYPE_STRING;
        cm_buf_appendf(&b, "{\"key\":");
        cm_buf_append_json_str(&b, key, klen);
        cm_buf_appendf(&b, ",\"type\":\"%s\",\"size\":%llu,\"ttl_ms\":%lld,\"replicas\":[",
                       o->type < 5 ? srv_type_names[o->type] : "unknown",
                       (unsigned long long)(is_str ? o->vlen : 0),
                       (long long)(exp ? (exp > now ? exp - now : 0) : -1));
        if (is_str)
            cm_buf_appendf(&b,
                           "{\"segment\":\"%s\",\"type\":\"%s\",\"status\":\"COMPLETE\","
                           "\"size\":%llu}",
                           srv_obj_offloaded(o) ? "ssd" : "embedded",
                           srv_obj_offloaded(o) ? "LOCAL_DISK" : "MEMORY",
                           (unsigned long long)o->vlen);
        cm_buf_appendf(&b, "]}\n");
    }
    srv_db_unlock(&r);
    srv_db_rdunlock();
    if (!o) {
        cm_buf_fini(&b);
        return cm_http_error(conn, MHD_HTTP_NOT_FOUND, "OBJECT_NOT_FOUND", "no such key");
    }
    return srv_http_json(conn, MHD_HTTP_OK, &b);
}

struct srv_keys_ctx {
    struct cm_buf *b;
    size_t n;
};

static void srv_keys_visit(struct srv_obj *o, void *arg) {
    struct srv_keys_ctx *k = arg;
    if (k->n++)
        cm_buf_append(k->b, ",", 1);
    cm_buf_append_json_str(k->b, o->key, o->klen);
}

/* Parses an optional unsigned query parameter; 0 on success, -1 when present but malformed. */
static int srv_http_u64_arg(struct MHD_Connection *conn, const char *name, uint64_t *v) {
    const char *s = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
    if (!s)
        return 0;
    long long x;
    if (cm_str2ll(s, strlen(s), &x) != 0 || x < 0)
        return -1;
    *v = (uint64_t)x;
    return 0;
}

static enum MHD_Result srv_route_all_keys(void *arg, struct MHD_Connection *conn) {
    (void)arg;
    uint64_t cursor = 0, count = SRV_HTTP_KEYS_DEFAULT;
    if (srv_http_u64_arg(conn, "cursor", &cursor) < 0 ||
        srv_http_u64_arg(conn, "count", &count) < 0 || count == 0 || count > SRV_HTTP_KEYS_MAX)
        return cm_http_error(conn, MHD_HTTP_BAD_REQUEST, "INVALID_PARAMS",
                             "cursor must be an unsigned integer and count 1..10000");
    struct cm_buf b;
    cm_buf_init(&b);
    cm_buf_appendf(&b, "{\"keys\":[");
    struct srv_keys_ctx k = {&b, 0};
    srv_db_rdlock();
    uint64_t next = srv_db_scan(cursor, (size_t)count, srv_now_ms(), srv_keys_visit, &k);
    srv_db_rdunlock();
    cm_buf_appendf(&b, "],\"cursor\":\"%llu\",\"done\":%s}\n", (unsigned long long)next,
                   next == 0 ? "true" : "false");
    return srv_http_json(conn, MHD_HTTP_OK, &b);
}

static const struct cm_http_route srv_routes[] = {
    {"/metrics", srv_route_metrics},
    {"/health", srv_route_health},
    {"/role", srv_route_role},
    {"/leader", srv_route_leader},
    {"/query_key", srv_route_query_key},
    {"/get_all_segments", srv_route_segments},
    {"/get_all_keys", srv_route_all_keys},
};

/* ---------------------------------------------------------------- start and stop */

/* Public: see srv_http.h. */
int srv_http_start(const char *host, int port) {
    static const struct cm_http_config cfg = {
        .routes = srv_routes,
        .nroutes = sizeof(srv_routes) / sizeof(srv_routes[0]),
        .not_found = "no such path",
    };
    char err[256];
    int rc = cm_http_start(&cfg, host, port, &srv_httpd, err, sizeof(err));
    if (rc == -EINVAL) {
        cm_log(CM_LOG_WARNING, "http",
               "admin HTTP server not started: bad --metrics_host '%s': not a numeric address",
               host);
        return rc;
    }
    if (rc < 0) {
        cm_log(CM_LOG_WARNING, "http", "admin HTTP server not started: %s; RESP serving goes on",
               err);
        return rc;
    }
    if (srv_httpd)
        cm_log(CM_LOG_NOTICE, "http", "admin HTTP on %s:%d (/metrics /health /role /leader)", host,
               cm_http_port(srv_httpd));
    return 0;
}

/* Public: see srv_http.h. */
void srv_http_stop(void) {
    cm_http_stop(srv_httpd);
    srv_httpd = NULL;
}

/* Public: see srv_http.h. */
int srv_http_port(void) {
    return cm_http_port(srv_httpd);
}
