/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plumbing shared by the admin HTTP servers of crescent-master (server/srv_http.c) and
 * crescent-client (client/daemon/cli_d_http.c) on libmicrohttpd: listening on host:port (port 0
 * = disabled), one internal polling thread, GET/HEAD only, exact-path routes, and the JSON
 * error answers ({"error":"<CODE>","message":"<text>"}) for 404, 405 and 400. The routes
 * themselves stay with each server. Only in libcm.a (not in libcrescent.so): link
 * libmicrohttpd with it.
 */
#ifndef CRESCENT_COMMON_CM_HTTP_H
#define CRESCENT_COMMON_CM_HTTP_H

#include "common/cm_buf.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* Answers one request on conn for a route; arg is cm_http_config.arg. Server thread. */
typedef enum MHD_Result cm_http_route_cb(void *arg, struct MHD_Connection *conn);

/* One path the server answers (exact match, the query string not included). */
struct cm_http_route {
    const char *path;
    cm_http_route_cb *fn;
};

/* What cm_http_start() serves. The routes array and the strings must outlive the server. */
struct cm_http_config {
    const struct cm_http_route *routes;
    size_t nroutes;
    const char *not_found; /* message of the 404 answer for an unknown path */
    bool no_query;         /* answer 400 INVALID_PARAMS when a query parameter is given */
    void *arg;             /* passed to every route */
};

struct cm_http;

/*
 * Listens on host:port (host a numeric IPv4 or IPv6 address, "" or NULL for any) and serves
 * cfg from one libmicrohttpd thread: an unknown path gets 404 NOT_FOUND, a method other than
 * GET or HEAD 405 METHOD_NOT_ALLOWED, a query parameter 400 INVALID_PARAMS when cfg->no_query,
 * in that order; a request body is read and ignored. port 0 starts nothing: returns 0 with
 * *out NULL. Otherwise returns 0 with *out (stop it with cm_http_stop()), or -EINVAL (host
 * is not a numeric address), -errno (socket, bind, listen), -ENOMEM or -EIO (libmicrohttpd
 * would not start), with one line in err: "cannot listen on H:P (reason)". Any thread.
 */
int cm_http_start(const struct cm_http_config *cfg, const char *host, int port,
                  struct cm_http **out, char *err, size_t errlen);

/* The port h listens on (the bound one); 0 for NULL. Any thread. */
int cm_http_port(const struct cm_http *h);

/*
 * Stops h: closes the listening socket, waits for the server thread and frees h. A route
 * running at that moment finishes first. NULL is ignored. Not from a route.
 */
void cm_http_stop(struct cm_http *h);

/*
 * Queues an answer with status, Content-Type type and a copy of body (the caller keeps body).
 * Returns what MHD_queue_response() returns, MHD_NO when out of memory. Server thread.
 */
enum MHD_Result cm_http_send(struct MHD_Connection *conn, unsigned status, const char *type,
                             const struct cm_buf *body);

/*
 * Queues {"error":"<code>","message":"<msg>"} and a newline as application/json with status;
 * code is written as given, msg JSON-escaped. Returns as cm_http_send(). Server thread.
 */
enum MHD_Result cm_http_error(struct MHD_Connection *conn, unsigned status, const char *code,
                              const char *msg);

#endif
