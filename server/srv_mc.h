/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The master's distributed-store pool (server/pool/) and what the MC.* command handlers share:
 * the one pool instance and its mutex, the housekeeping thread that ticks it, and the argument
 * parsers and reply writers of the MC.* wire protocol (docs/store.md, "Commands").
 *
 * Threads: every pool call happens under srv_mc_lock()/srv_mc_unlock(); handlers run on the
 * event-loop threads, the housekeeping thread ticks the pool about every 100 ms. The pool mutex
 * is never held while taking the keyspace lock (EXEC may take the pool mutex under it).
 */
#ifndef CRESCENT_SERVER_SRV_MC_H
#define CRESCENT_SERVER_SRV_MC_H

#include "server/pool/pool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct srv_client;

/* The master's pool; valid between srv_mc_start() and srv_mc_stop(). */
extern struct pool *srv_mc_pool;

/*
 * Creates the pool from the configuration (srv_cfg) and starts the housekeeping thread.
 * Returns 0, or -1 after logging why (settings the pool refuses). Main thread, once.
 */
int srv_mc_start(void);

/* Stops the housekeeping thread and destroys the pool. Main thread, after the workers stop. */
void srv_mc_stop(void);

/*
 * Applies the current pool settings of srv_cfg to the running pool (CONFIG SET). Returns 0, or
 * -1 when the pool refuses the combination (err gets a message). Any thread; no-op before start.
 */
int srv_mc_reconfigure(char *err, size_t errlen);

/*
 * Replaces the pool with the snapshot in buf (len bytes; pool_snapshot_load()): loads it into a
 * fresh pool first, so a refused snapshot leaves the running pool as it was. Returns 0, or a
 * negative errno with the reason in err (-CM_ECORRUPT: the snapshot is damaged). Any thread;
 * takes the pool mutex for the swap only.
 */
int srv_mc_restore(const void *buf, size_t len, struct pool_snap_meta *meta, char *err,
                   size_t errlen);

/*
 * Creates an empty pool with the current settings (and the op-log hooks when the op-log is
 * open) in *out. Returns 0, or -1 after logging why. Any thread; the caller owns the pool.
 */
int srv_mc_new_pool(struct pool **out);

/* Replaces the master's pool with np (taking ownership) and destroys the old one, under the
   pool mutex. Any thread. */
void srv_mc_swap_pool(struct pool *np);

/* Pool mutex. Unlocking publishes the pool's object count (srv_mc_object_hint). */
void srv_mc_lock(void);
void srv_mc_unlock(void);

/*
 * The pool's object count as of the last srv_mc_unlock(), read without the mutex: 0 means no
 * object existed when the last holder released the mutex, so a caller that finds 0 may skip
 * taking it (the Redis commands' fast path when the pool is unused). Any thread.
 */
uint64_t srv_mc_object_hint(void);

/* The pool's clock: monotonic milliseconds. */
int64_t srv_mc_now(void);

/* ---- argument parsing: on failure these reply the error and return -1 ------------------- */

/* Parses argument i as a client id (32 hex digits or 8-4-4-4-12). */
int srv_mc_arg_client(struct srv_client *c, int i, struct pool_uuid *out);

/*
 * Parses argument i as an unsigned decimal (or 0x-hex when hex is set) in [lo, hi]; what names
 * the argument in "-INVALID_PARAMS invalid <what>".
 */
int srv_mc_arg_u64(struct srv_client *c, int i, const char *what, int hex, uint64_t lo, uint64_t hi,
                   uint64_t *out);

/*
 * Copies argument i into a NUL-terminated string in buf (cap bytes); an argument that does not
 * fit, or holds a NUL byte, gets "-INVALID_PARAMS <what> too long" / "... contains NUL".
 */
int srv_mc_arg_str(struct srv_client *c, int i, const char *what, char *buf, size_t cap);

/*
 * Parses the put options (REPLICAS, SOFTPIN, SOFTPIN_TTL, HARDPIN, PREFER_SAME_NODE, SEGMENTS)
 * in argv[from..argc) into cfg. Segment names point into argv (names) and a heap array that
 * the caller frees with srv_mc_put_config_free(). Unknown words: -ERR syntax error.
 */
int srv_mc_parse_put_options(struct srv_client *c, int from, struct pool_put_config *cfg);
void srv_mc_put_config_free(struct pool_put_config *cfg);

/* ---- replies ------------------------------------------------------------------------------ */

/* Replies -<NAME> <message> for pool error err (a top-level error reply). */
void srv_mc_reply_err(struct srv_client *c, int err);

/* Appends err as an error element of an array (batch results; not counted as a failed call). */
void srv_mc_add_err(struct srv_client *c, int err);

/* Replies +OK for rc >= 0, else as srv_mc_reply_err(c, rc) (a top-level reply). */
void srv_mc_reply_status(struct srv_client *c, int rc);

/* Appends +OK for rc >= 0, else as srv_mc_add_err(c, rc) (an element of a batch reply). */
void srv_mc_add_status(struct srv_client *c, int rc);

/* Appends one replica descriptor (RESP3 map / RESP2 flat array of 8 fields). */
void srv_mc_add_replica(struct srv_client *c, const struct pool_replica_desc *d);

/* Appends an array of n replica descriptors. */
void srv_mc_add_replicas(struct srv_client *c, const struct pool_replica_desc *d, size_t n);

/* Appends the MC.GETREPLICAS map (lease_ttl_ms, replicas; first `promote 1` when promote is
 * set: the reader of this disk-only object should promote it, docs/store.md). */
void srv_mc_add_get_reply(struct srv_client *c, int64_t lease_ttl_ms,
                          const struct pool_replica_desc *d, size_t n, int promote);

/* ---- compact replies (srv_cmd_mc_compact.c, docs/store.md "Compact replies") ----------- */

/* Whether c asked for compact replies (MC.REPLYFORMAT COMPACT). */
bool srv_mc_compact(const struct srv_client *c);

/* One distinct segment of a compact reply; the strings point into the pool (valid while its
 * mutex is held). */
struct srv_mc_segref {
    uint64_t gen; /* pool_replica_desc.seg_gen */
    const char *segment, *endpoint, *protocol;
    const void *desc;
    size_t desc_len;
};

/* The segment table of one compact reply: filled while replicas are written, written at the
 * end of the reply with srv_mc_segtab_write() before the pool mutex is released. */
#define SRV_MC_SEGTAB_LOCAL 8
struct srv_mc_segtab {
    struct srv_mc_segref *e; /* local, or a heap array beyond SRV_MC_SEGTAB_LOCAL */
    size_t n, cap, last;     /* last: index of the previous lookup */
    struct srv_mc_segref local[SRV_MC_SEGTAB_LOCAL];
};

/* Empties t (call once before use). */
void srv_mc_segtab_init(struct srv_mc_segtab *t);

/* Appends the compact MC.GETREPLICAS element of one key: an array of 2 + 4n integers,
 * lease_ttl_ms, promote (0/1), then segment index, type, addr, size per replica. Pool mutex
 * held (segments enter t). */
void srv_mc_compact_get(struct srv_client *c, struct srv_mc_segtab *t, int64_t lease_ttl_ms,
                        const struct pool_replica_desc *d, size_t n, int promote);

/* Appends the compact put-start element of one key: 4n integers (segment index, type, addr,
 * size per replica). Pool mutex held. */
void srv_mc_compact_put(struct srv_client *c, struct srv_mc_segtab *t,
                        const struct pool_replica_desc *d, size_t n);

/* Appends t's segment table (an array of [name, endpoint, protocol, desc] bulk arrays, in index
 * order) and empties t. Pool mutex held. */
void srv_mc_segtab_write(struct srv_client *c, struct srv_mc_segtab *t);

/* Appends one segment description (9 fields). */
void srv_mc_add_segment(struct srv_client *c, const struct pool_segment_info *s);

/* Appends a bulk string of a map field name. */
void srv_mc_add_field(struct srv_client *c, const char *name);

/* Formats id as 32 lower-case hex digits plus NUL into buf (33 bytes). */
void srv_mc_uuid_str(const struct pool_uuid *id, char buf[33]);

#endif
