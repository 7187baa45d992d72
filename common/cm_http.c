/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shared admin HTTP plumbing (see cm_http.h): our own listening socket handed to
 * libmicrohttpd, so that a failed bind reports its errno, and one request handler that checks
 * path, method and query before it calls the route.
 */
#include "common/fmacros.h"

#include "common/cm_http.h"

#include "common/cm_mem.h"
#include "common/cm_net.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CM_HTTP_BACKLOG     64
#define CM_HTTP_CONNECTIONS 64 /* at most this many connections at once */
#define CM_HTTP_IDLE_S      10 /* an idle connection is closed after this many seconds */

struct cm_http {
    struct cm_http_config cfg;
    struct MHD_Daemon *mhd;
    int port; /* bound port */
};

/* Public: see cm_http.h. */
enum MHD_Result cm_http_send(struct MHD_Connection *conn, unsigned status, const char *type,
                             const struct cm_buf *body) {
    struct MHD_Response *r = MHD_create_response_from_buffer(
        body->len, body->len ? body->data : (void *)"", MHD_RESPMEM_MUST_COPY);
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Public: see cm_http.h. */
enum MHD_Result cm_http_error(struct MHD_Connection *conn, unsigned status, const char *code,
                              const char *msg) {
    struct cm_buf b;
    cm_buf_init(&b);
    cm_buf_appendf(&b, "{\"error\":\"%s\",\"message\":", code);
    cm_buf_append_json_str(&b, msg, strlen(msg));
    cm_buf_appendf(&b, "}\n");
    enum MHD_Result ret = cm_http_send(conn, status, "application/json", &b);
    cm_buf_fini(&b);
    return ret;
}

/* libmicrohttpd's request callback: checks, then the route. */
static enum MHD_Result cm_http_handler(void *cls, struct MHD_Connection *conn, const char *url,
                                       const char *method, const char *version, const char *upload,
                                       size_t *upload_size, void **state) {
    const struct cm_http *h = cls;
    (void)version;
    (void)upload;
    if (*state == NULL) { /* first call for this request: headers only */
        *state = (void *)1;
        return MHD_YES;
    }
    if (*upload_size) { /* a body is ignored */
        *upload_size = 0;
        return MHD_YES;
    }
    const struct cm_http_route *route = NULL;
    for (size_t i = 0; i < h->cfg.nroutes && route == NULL; i++)
        if (strcmp(url, h->cfg.routes[i].path) == 0)
            route = &h->cfg.routes[i];
    if (route == NULL)
        return cm_http_error(conn, MHD_HTTP_NOT_FOUND, "NOT_FOUND", h->cfg.not_found);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return cm_http_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED",
                             "only GET and HEAD");
    if (h->cfg.no_query && MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, NULL, NULL) > 0)
        return cm_http_error(conn, MHD_HTTP_BAD_REQUEST, "INVALID_PARAMS",
                             "this path takes no query parameters");
    return route->fn(h->cfg.arg, conn);
}

/* A listening TCP socket on host:port; -errno (-EINVAL: host is not a numeric address). */
static int cm_http_listen(const char *host, int port) {
    int fd = cm_net_tcp_bind(*host ? host : NULL, port, true);
    if (fd >= 0 && listen(fd, CM_HTTP_BACKLOG) != 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

/* Public: see cm_http.h. */
int cm_http_start(const struct cm_http_config *cfg, const char *host, int port,
                  struct cm_http **out, char *err, size_t errlen) {
    *out = NULL;
    if (port == 0)
        return 0;
    if (host == NULL)
        host = "";
    int fd = cm_http_listen(host, port);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on %s:%d (%s)", host, port,
                 fd == -EINVAL ? "not a numeric address" : strerror(-fd));
        return fd;
    }
    struct cm_http *h = cm_try_calloc(1, sizeof(*h));
    if (h == NULL) {
        close(fd);
        snprintf(err, errlen, "cannot listen on %s:%d (out of memory)", host, port);
        return -ENOMEM;
    }
    h->cfg = *cfg;
    h->mhd = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, cm_http_handler, h,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)CM_HTTP_CONNECTIONS,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CM_HTTP_IDLE_S, MHD_OPTION_END);
    if (h->mhd == NULL) {
        close(fd);
        cm_free(h);
        snprintf(err, errlen, "cannot listen on %s:%d (libmicrohttpd failed)", host, port);
        return -EIO;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di != NULL && di->port != 0 ? di->port : port;
    *out = h;
    return 0;
}

/* Public: see cm_http.h. */
int cm_http_port(const struct cm_http *h) {
    return h != NULL ? h->port : 0;
}

/* Public: see cm_http.h. */
void cm_http_stop(struct cm_http *h) {
    if (h == NULL)
        return;
    MHD_stop_daemon(h->mhd); /* closes the listening socket too */
    cm_free(h);
}
