/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The master's admin HTTP server (libmicrohttpd, its own thread): /metrics in the Prometheus
 * text format, /health, /role, /leader, /query_key, /get_all_segments, /get_all_keys.
 * See docs/operations.md.
 */
#ifndef CRESCENT_SERVER_SRV_HTTP_H
#define CRESCENT_SERVER_SRV_HTTP_H

#include "common/cm_buf.h"

#include <stddef.h>

/*
 * Starts listening on host:port (port 0 = disabled: returns 0 and starts nothing). A port that
 * cannot be bound is logged at WARNING and the master goes on without the admin server
 * (returns -errno then). Call once from the main thread after the keyspace exists.
 */
int srv_http_start(const char *host, int port);

/* Stops the server and joins its thread. Safe when it never started. Main thread only. */
void srv_http_stop(void);

/* The port actually bound (0 when not running). */
int srv_http_port(void);

/*
 * Appends the Prometheus exposition (text format 0.0.4) of the master's metrics to out.
 * Reads counters only: takes no keyspace lock. Any thread.
 */
void srv_metrics_render(struct cm_buf *out);

#endif
