/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blocking connections from the master to a side Redis (the snapshot catalog, the HA op-log
 * store): the address is a parsed struct ha_uri (ha/ha_backend.h) with exactly one host and an
 * optional numeric db as its path; a connection is opened, authenticated and switched to that
 * db in one call. Every function is thread-safe (no shared state).
 */
#ifndef CRESCENT_SERVER_SRV_REDIS_CONN_H
#define CRESCENT_SERVER_SRV_REDIS_CONN_H

#include "ha/ha_backend.h"

#include <hiredis/hiredis.h>
#include <stddef.h>

/*
 * Parses s, either redis://[[user]:password@]host:port[/db] or a bare host:port[/db] (read as
 * if it began with redis://), into *out and checks it as srv_redis_uri_check() does. what names
 * the setting in messages ("snapshot_catalog_store_connstring"). Returns 0, or -1 with one line
 * in err that starts with what and says which form is expected.
 */
int srv_redis_uri_parse(const char *s, const char *what, struct ha_uri *out, char *err,
                        size_t errlen);

/*
 * Checks that u, already parsed by ha_uri_parse(), names one Redis server: scheme redis,
 * exactly one host, and a path that is empty or a db number 0..1000000. Returns 0, or -1 with
 * one line in err that starts with what.
 */
int srv_redis_uri_check(const struct ha_uri *u, const char *what, char *err, size_t errlen);

/*
 * Splits the first host of u ("host:port" or "[v6]:port", as ha_uri_parse() checked it) into
 * host (without brackets, hostlen bytes, always NUL-terminated) and *port, by the one address
 * rule of cm_net_hostport_parse() (a port required). An address that rule refuses (not one
 * ha_uri_parse() passes for redis://) gives host "" and port 0, which no connect reaches.
 */
void srv_redis_hostport(const struct ha_uri *u, char *host, size_t hostlen, int *port);

/*
 * Connects to the server of u (checked with srv_redis_uri_check()), with timeout_ms bounding
 * the connect and every later call on the connection; sends AUTH [user] password when u has a
 * password and SELECT db when its db is not 0. Returns the connection (the caller frees it
 * with redisFree()), or NULL with one line in err that starts with what ("snapshot catalog")
 * and names the server: "cannot connect to Redis at H:P: ...", "Redis AUTH at H:P failed:
 * ...", "Redis SELECT N at H:P failed: ...". Blocks for up to a few times timeout_ms.
 */
redisContext *srv_redis_connect(const struct ha_uri *u, int timeout_ms, const char *what, char *err,
                                size_t errlen);

#endif
