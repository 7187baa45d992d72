/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dummy clients (docs/store.md, "Dummy clients"): a store created with cfg->daemon set forwards
 * every operation to a crescent-client daemon on the same host over a Unix socket. The library
 * side lives in cli_dummy.c; the daemon side in client/daemon/. Both include this header for the
 * wire protocol, which is RESP: requests are arrays of bulk strings, replies RESP2 values.
 *
 *   HELLO version pool_size pid      (the pool's memfd attached with SCM_RIGHTS)
 *                                    -> array [daemon client id, daemon segment name]
 *   PING                             -> integer: the daemon's store health (0 / 2)
 *   PUTFROM key off size upsert RC   -> integer 0            (bytes at pool + off)
 *   PUT key value upsert RC          -> integer 0            (value inline: a counted copy)
 *   GETINTO key off cap              -> integer size         (bytes to pool + off)
 *   GET key                          -> bulk value           (inline: a counted copy)
 *   BPUTFROM n RC key off size ...   -> array of n integers
 *   BGETINTO n key off cap ...       -> array of n integers
 *   EXIST key / SIZE key             -> integer
 *   BEXIST key ...                   -> array of integers
 *   REMOVE key force                 -> integer 0
 *   REMOVEREGEX pattern force        -> integer count
 *   REMOVEALL force                  -> integer count
 *   REPLICACLEAR segment key ...     -> array of integers
 *   REPLICADESC key max              -> array of [segment endpoint protocol complete memory
 *                                       addr size] arrays
 *   STATS                            -> array of integers (struct crescent_store_daemon_stats)
 *
 * RC is the replicate config as seven fields: replica_num soft_pin soft_pin_ttl_ms hard_pin
 * prefer_same_node n_preferred preferred... (n_preferred names follow). A failure is the error
 * reply `-ERR <code> <message>`, code being the negative crescent_store / errno code; a request
 * the daemon cannot parse gets `-ERR Protocol error: ...` and the connection is closed.
 */
#ifndef CRESCENT_CLIENT_STORE_CLI_DUMMY_H
#define CRESCENT_CLIENT_STORE_CLI_DUMMY_H

#include "crescent/store.h"

#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#define CLI_DUMMY_VERSION      1           /* HELLO protocol version */
#define CLI_DUMMY_DEFAULT_POOL (16u << 20) /* pool size when local_buffer_size is 0 */
#define CLI_DUMMY_RC_FIELDS    6           /* fixed RC fields before the names */
#define CLI_DUMMY_MAX_PREF     64          /* preferred segments forwarded at most */
#define CLI_DUMMY_STATS_FIELDS 9           /* integers in a STATS reply */
#define CLI_DUMMY_SOCK_FMT     "crescent_client_%ld.sock" /* abstract name of a port */

/*
 * Resolves a daemon address into a Unix socket address: "[host:]port" (the daemon's --port) is
 * the abstract name "crescent_client_<port>.sock", "@name" the abstract name "name", and a string
 * starting with '/' a socket file. Returns 0, or -EINVAL for a malformed or too long address.
 * Thread-safe.
 */
int cli_dummy_sockaddr(const char *spec, struct sockaddr_un *sa, socklen_t *len);

/* The library side: connects to the daemon, creates and hands over the pool (store create). */
int cli_dummy_create(struct crescent_store *st, const char *daemon,
                     const struct crescent_store_config *cfg);
void cli_dummy_destroy(struct crescent_store *st);

/* Forwarded operations: same arguments and results as the crescent_store_* function named. */
int cli_dummy_health(struct crescent_store *st);
int cli_dummy_put(struct crescent_store *st, const char *key, const void *value, size_t size,
                  const struct crescent_store_replicate_config *rc, int upsert);
int cli_dummy_put_parts(struct crescent_store *st, const char *key, const void *const *parts,
                        const size_t *sizes, size_t n,
                        const struct crescent_store_replicate_config *rc);
int cli_dummy_put_from(struct crescent_store *st, const char *key, const void *buf, size_t size,
                       const struct crescent_store_replicate_config *rc, int upsert);
int cli_dummy_get(struct crescent_store *st, const char *key, void **value, size_t *size);
int64_t cli_dummy_get_into(struct crescent_store *st, const char *key, void *buf, size_t cap);
int cli_dummy_batch_put_from(struct crescent_store *st, const char *const *keys,
                             const void *const *bufs, const size_t *sizes, size_t n,
                             const struct crescent_store_replicate_config *rc, int *results);
int cli_dummy_batch_put(struct crescent_store *st, const char *const *keys,
                        const void *const *values, const size_t *sizes, size_t n,
                        const struct crescent_store_replicate_config *rc, int *results);
int cli_dummy_batch_get_into(struct crescent_store *st, const char *const *keys, void *const *bufs,
                             const size_t *caps, size_t n, int64_t *results);
int cli_dummy_batch_get(struct crescent_store *st, const char *const *keys, size_t n, void **values,
                        size_t *sizes, int64_t *results);
int64_t cli_dummy_key_int(struct crescent_store *st, const char *verb, const char *key);
int cli_dummy_batch_is_exist(struct crescent_store *st, const char *const *keys, size_t n,
                             int *results);
int64_t cli_dummy_remove(struct crescent_store *st, const char *verb, const char *arg, int force);
int cli_dummy_replica_clear(struct crescent_store *st, const char *const *keys, size_t n,
                            const char *segment, int *results);
int cli_dummy_replica_desc(struct crescent_store *st, const char *key,
                           struct crescent_store_replica *out, size_t max);
int cli_dummy_in_pool(struct crescent_store *st, const void *p, size_t len);

_Static_assert(sizeof(struct crescent_store_daemon_stats) == CLI_DUMMY_STATS_FIELDS * 8,
               "STATS carries every field of struct crescent_store_daemon_stats");

#endif
