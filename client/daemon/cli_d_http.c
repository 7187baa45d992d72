/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-client's admin HTTP server (--enable_http_server, --http_host:--http_port) on
 * libmicrohttpd, one internal polling thread. Routes: /metrics (Prometheus text, rendered by
 * cli_d_metrics.c), /metrics/summary (a few human-readable lines) and /health (JSON; 200 when
 * the daemon serves, the master answers and every segment is mounted, else 503). Only GET and
 * HEAD without query parameters; anything else is answered, never crashes: 404 for an unknown
 * path, 405 for another method, 400 for a parameter (libmicrohttpd itself answers a malformed
 * request with 400). Each request asks the master about the daemon's segments over the
 * server's own connection (MC.QUERYSEGMENT), so scrapes never wait on the data path's lock.
 */
#include "common/fmacros.h"

#include "client/daemon/cli_d.h"
#include "client/store/cli_store.h"
#include "common/cm_http.h"
#include "common/cm_log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_D_HTTP_MASTER_MS 1000 /* connect / reply timeout of the admin master connection */

struct cli_d_http {
    struct cli_d_http_ctx ctx;
    struct cm_http *http;
    pthread_mutex_t mu; /* guards ctx.dummies and mc */
    redisContext *mc;   /* the server's master connection, NULL when broken */
    char host[256];     /* master host, from the store */
    int master_port;
};

/* ---- the master's view of the segments ---- */

static redisContext *cli_d_http_connect(struct cli_d_http *h) {
    struct timeval tv = {CLI_D_HTTP_MASTER_MS / 1000, (CLI_D_HTTP_MASTER_MS % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(h->host, h->master_port, tv);
    if (c == NULL || c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

/* Follows the store's master address (it changes with an HA fail-over): a connection to
 * another address is dropped. Under h->mu. */
static void cli_d_http_follow(struct cli_d_http *h) {
    struct crescent_store *st = h->ctx.st;
    char host[sizeof(h->host)];
    pthread_mutex_lock(&st->addr_mu);
    snprintf(host, sizeof(host), "%s", st->host);
    int port = st->port;
    pthread_mutex_unlock(&st->addr_mu);
    if (port != h->master_port || strcmp(host, h->host) != 0) {
        redisFree(h->mc);
        h->mc = NULL;
        memcpy(h->host, host, sizeof(host));
        h->master_port = port;
    }
}

/* Asks the master about v->name; false when the master cannot be reached. Under h->mu. */
static bool cli_d_http_query(struct cli_d_http *h, struct cli_d_seg_view *v) {
    cli_d_http_follow(h);
    if (h->mc == NULL && (h->mc = cli_d_http_connect(h)) == NULL) {
        return false;
    }
    const char *argv[] = {"MC.QUERYSEGMENT", v->name};
    redisReply *r = cli__redis_argv(h->mc, 2, argv, NULL);
    if (r == NULL) {
        redisFree(h->mc);
        h->mc = NULL;
        return false;
    }
    v->known = true;
    if (r->type == REDIS_REPLY_ARRAY) {
        const redisReply *st = cli__field(r, "status"), *used = cli__field(r, "used");
        if (st != NULL && st->type == REDIS_REPLY_STRING) {
            snprintf(v->status, sizeof(v->status), "%.*s", (int)st->len, st->str);
        }
        v->used = used != NULL && used->type == REDIS_REPLY_INTEGER ? (uint64_t)used->integer : 0;
        v->mounted = strcmp(v->status, "OK") == 0;
    } else {
        snprintf(v->status, sizeof(v->status), "NOT_MOUNTED");
    }
    freeReplyObject(r);
    return true;
}

/* MC.SERVICEREADY: true when the master answers. Under h->mu. */
static bool cli_d_http_ping(struct cli_d_http *h) {
    if (h->mc == NULL && (h->mc = cli_d_http_connect(h)) == NULL) {
        return false;
    }
    const char *argv[] = {"MC.SERVICEREADY"};
    redisReply *r = cli__redis_argv(h->mc, 1, argv, NULL);
    if (r == NULL) {
        redisFree(h->mc);
        h->mc = NULL;
        return false;
    }
    bool ok = r->type != REDIS_REPLY_ERROR;
    freeReplyObject(r);
    return ok;
}

/* Fills segs (at most max) with the daemon's segments and the master's record of each;
 * *master_ok is false when the master could not be asked (or the ping thread finds it
 * unreachable). Returns the count. Under h->mu. */
static size_t cli_d_http_segments(struct cli_d_http *h, struct cli_d_seg_view *segs, size_t max,
                                  bool *master_ok) {
    struct crescent_store *st = h->ctx.st;
    size_t n = 0;
    pthread_mutex_lock(&st->seg_mu);
    for (; n < st->n_segs && n < max; n++) {
        segs[n] = (struct cli_d_seg_view){.size = st->segs[n].size};
        snprintf(segs[n].name, sizeof(segs[n].name), "%s", st->segs[n].name);
        snprintf(segs[n].status, sizeof(segs[n].status), "UNKNOWN");
    }
    pthread_mutex_unlock(&st->seg_mu);
    *master_ok = crescent_store_health_check(st) == 0;
    for (size_t i = 0; i < n && *master_ok; i++) {
        *master_ok = cli_d_http_query(h, &segs[i]);
    }
    if (n == 0 && *master_ok) { /* nothing to ask about: check the master answers at all */
        *master_ok = cli_d_http_ping(h);
    }
    return n;
}

/* ---- responses ---- */

static const char *cli_d_state_name(int s) {
    return s == CLI_D_SERVING ? "serving" : s == CLI_D_STOPPING ? "stopping" : "starting";
}

static void cli_d_health_body(struct cli_d_http *h, const struct cli_d_seg_view *segs, size_t n,
                              bool master_ok, struct cm_buf *b, bool *ready) {
    int state = __atomic_load_n(h->ctx.state, __ATOMIC_ACQUIRE);
    bool mounted = master_ok;
    for (size_t i = 0; i < n; i++) {
        mounted = mounted && segs[i].mounted;
    }
    *ready = state == CLI_D_SERVING && master_ok && mounted;
    struct crescent_store_daemon_stats ds = {0};
    if (h->ctx.dummies != NULL) {
        cli_d_serve_stats(h->ctx.dummies, &ds);
    }
    cm_buf_appendf(b, "{\"state\":\"%s\",\"ready\":%s,\"client_id\":", cli_d_state_name(state),
                   *ready ? "true" : "false");
    const char *id = crescent_store_client_id(h->ctx.st);
    cm_buf_append_json_str(b, id, strlen(id));
    cm_buf_appendf(b, ",\"master\":");
    cm_buf_append_json_str(b, h->ctx.master, strlen(h->ctx.master));
    cm_buf_appendf(b, ",\"master_connected\":%s,\"segments_mounted\":%s,\"segments\":[",
                   master_ok ? "true" : "false", mounted ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        cm_buf_appendf(b, "%s{\"name\":", i ? "," : "");
        cm_buf_append_json_str(b, segs[i].name, strlen(segs[i].name));
        cm_buf_appendf(b, ",\"size\":%llu,\"mounted\":%s,\"status\":\"%s\"",
                       (unsigned long long)segs[i].size, segs[i].mounted ? "true" : "false",
                       segs[i].status);
        if (segs[i].mounted) {
            cm_buf_appendf(b, ",\"used\":%llu", (unsigned long long)segs[i].used);
        }
        cm_buf_append(b, "}", 1);
    }
    cm_buf_appendf(b, "],\"dummies\":%llu,\"dummy_connections\":%llu}\n",
                   (unsigned long long)ds.dummies, (unsigned long long)ds.connections);
}

enum cli_d_route { CLI_D_METRICS, CLI_D_SUMMARY, CLI_D_HEALTH };

static enum MHD_Result cli_d_http_route(struct cli_d_http *h, struct MHD_Connection *conn,
                                        enum cli_d_route route) {
    struct cli_d_seg_view segs[8];
    struct cm_buf b;
    cm_buf_init(&b);
    if (route != CLI_D_HEALTH && !h->ctx.st->metrics_on) { /* as Mooncake's client */
        cm_buf_appendf(&b, "client metrics are disabled (MC_STORE_CLIENT_METRIC=0)\n");
        enum MHD_Result ret =
            cm_http_send(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", &b);
        cm_buf_fini(&b);
        return ret;
    }
    bool master_ok, ready = false;
    unsigned status = MHD_HTTP_OK;
    const char *type = "text/plain; version=0.0.4; charset=utf-8";
    pthread_mutex_lock(&h->mu);
    size_t n = cli_d_http_segments(h, segs, sizeof(segs) / sizeof(segs[0]), &master_ok);
    if (route == CLI_D_METRICS) {
        cli_d_metrics_render(&h->ctx, h->ctx.dummies, segs, n, master_ok, &b);
    } else if (route == CLI_D_SUMMARY) {
        cli_d_metrics_summary(&h->ctx, h->ctx.dummies, segs, n, master_ok, &b);
        type = "text/plain; charset=utf-8";
    } else {
        cli_d_health_body(h, segs, n, master_ok, &b, &ready);
        status = ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
        type = "application/json";
    }
    pthread_mutex_unlock(&h->mu);
    enum MHD_Result ret = cm_http_send(conn, status, type, &b);
    cm_buf_fini(&b);
    return ret;
}

static enum MHD_Result cli_d_http_metrics(void *h, struct MHD_Connection *conn) {
    return cli_d_http_route(h, conn, CLI_D_METRICS);
}

static enum MHD_Result cli_d_http_summary(void *h, struct MHD_Connection *conn) {
    return cli_d_http_route(h, conn, CLI_D_SUMMARY);
}

static enum MHD_Result cli_d_http_health(void *h, struct MHD_Connection *conn) {
    return cli_d_http_route(h, conn, CLI_D_HEALTH);
}

static const struct cm_http_route cli_d_http_routes[] = {
    {"/metrics", cli_d_http_metrics},
    {"/metrics/summary", cli_d_http_summary},
    {"/health", cli_d_http_health},
};

/* ---- start and stop ---- */

/* Public: see cli_d.h. */
int cli_d_http_start(const struct cli_d_http_ctx *ctx, const char *host, int port,
                     struct cli_d_http **out) {
    *out = NULL;
    if (port == 0) {
        return 0;
    }
    struct cli_d_http *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return -ENOMEM;
    }
    h->ctx = *ctx;
    cli_d_http_follow(h); /* h->mc is NULL: only the address is taken */
    pthread_mutex_init(&h->mu, NULL);
    struct cm_http_config cfg = {
        .routes = cli_d_http_routes,
        .nroutes = sizeof(cli_d_http_routes) / sizeof(cli_d_http_routes[0]),
        .not_found = "no such path (/metrics, /metrics/summary, /health)",
        .no_query = true,
        .arg = h,
    };
    char err[256];
    int rc = cm_http_start(&cfg, host, port, &h->http, err, sizeof(err));
    if (rc < 0) {
        cm_log(CM_LOG_WARNING, "http",
               "admin HTTP server not started: %s; the daemon serves on without it", err);
        pthread_mutex_destroy(&h->mu);
        free(h);
        return rc;
    }
    cm_log(CM_LOG_NOTICE, "http", "admin HTTP on %s:%d (/metrics /metrics/summary /health)", host,
           cm_http_port(h->http));
    *out = h;
    return 0;
}

/* Public: see cli_d.h. */
int cli_d_http_port(const struct cli_d_http *h) {
    return h != NULL ? cm_http_port(h->http) : 0;
}

/* Public: see cli_d.h. */
void cli_d_http_forget_dummies(struct cli_d_http *h) {
    if (h != NULL) {
        pthread_mutex_lock(&h->mu);
        h->ctx.dummies = NULL;
        pthread_mutex_unlock(&h->mu);
    }
}

/* Public: see cli_d.h. */
void cli_d_http_stop(struct cli_d_http *h) {
    if (h == NULL) {
        return;
    }
    cm_http_stop(h->http);
    if (h->mc != NULL) {
        redisFree(h->mc);
    }
    pthread_mutex_destroy(&h->mu);
    free(h);
}
