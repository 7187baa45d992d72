/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One keyspace: the bridge that lets plain Redis commands (GET, SET, DEL, EXISTS, TYPE, STRLEN,
 * TTL, SCAN, KEYS, DBSIZE, FLUSHALL, INFO keyspace) see the objects of the distributed-store
 * pool (server/pool/, srv_mc.h) as string keys. The command handlers look in the Redis keyspace
 * first and call these hooks for what it does not hold; SET calls srv_pkv_set_wanted() to know
 * whether the value goes to the pool (no embedded segment, or the key already lives there).
 *
 * DESIGN. The master is a pool client of its own (a random client id registered on first
 * use): SET runs upsert start -> transfer-engine WRITE into each replica -> upsert end, GET
 * runs get replicas (a read lease) -> READ of one replica straight into the reply buffer (a
 * memcpy for a replica in the master's own embedded segment, srv_pool_seg.h, read first). The
 * master's transfer engine (tcp and shm, no listener; or the embedded segment's listening engine
 * when that is in the pool) is created on first use; segments opened
 * from replica descriptors are cached by segment name and descriptor bytes. Transfers are
 * bounded by SRV_PKV_TIMEOUT_MS. A plain GET's read runs on the deferred-work pool
 * (srv_pkv_get_async, srv_defer.h) while its client waits; every other transfer (SET's writes,
 * SET ... GET's read of the old value, MGET, GETDEL, GET inside MULTI/EXEC) is synchronous on
 * the calling event-loop thread. On an HA leader every pool change made here (the master's
 * registration, upsert start and end or revoke, DEL, FLUSHALL) goes to the op-log under the
 * pool mutex, as the MC.* handlers log theirs, so the reply leaves only once the entry is stored
 * (srv_oplog_take_need) and a new leader serves the value from the replica in the client segment.
 *
 * Threads: every function may be called from any event-loop thread with the keyspace lock held
 * (shared or exclusive). They take the pool mutex briefly and never hold it during a transfer
 * or while taking a shard lock, so srv_pkv_exists() may also be called under a shard lock.
 * The other hooks are called with no shard lock held.
 */
#ifndef CRESCENT_SERVER_SRV_POOL_KV_H
#define CRESCENT_SERVER_SRV_POOL_KV_H

#include <stddef.h>
#include <stdint.h>

struct cm_buf;
struct srv_client;
struct srv_arg;

/* Bound of one transfer (and of opening a peer's segment) done by the master, ms. */
#define SRV_PKV_TIMEOUT_MS 5000u

/* SCAN cursors with this bit set walk the pool (the keyspace is walked first). */
#define SRV_PKV_SCAN_FLAG (1ull << 62)

/* Reply of the read-modify-write string commands (APPEND, INCR, SETRANGE, SETBIT...) on a pool
 * object: pool objects are written whole. */
#define SRV_PKV_ERR_RMW                                                                    \
    "ERR this key lives in the distributed store's pool, whose values are written whole: " \
    "use SET"

/* Options of srv_pkv_set(). */
enum srv_pkv_set_flags {
    SRV_PKV_NX = 1u << 0,     /* only when the key does not exist */
    SRV_PKV_XX = 1u << 1,     /* only when the key exists */
    SRV_PKV_GET = 1u << 2,    /* reply the old value (or nil) instead of OK */
    SRV_PKV_EXPIRE = 1u << 3, /* EX/PX/EXAT/PXAT given: refused, pool objects have no TTL */
};

struct pool_uuid;

/* Registers (or refreshes) the master's own client id in the pool and returns it (static).
 * Pool mutex held. */
const struct pool_uuid *srv_pkv_self(int64_t now);

/* Keeps the master's own client id alive (pings it when registered). Housekeeping thread, pool
 * mutex held. */
void srv_pkv_tick(int64_t now);

/* Destroys the master's transfer engine and its opened segments. Main thread, at exit, before
 * srv_mc_stop(). */
void srv_pkv_stop(void);

/*
 * GET of a key the keyspace does not hold: when the pool has it readable, reads one replica
 * (the next one when a transfer fails) and appends the value as a bulk string to c's reply;
 * returns 1. Returns 0 and appends nothing when the pool does not have it or no replica could
 * be read within SRV_PKV_TIMEOUT_MS (the caller replies nil).
 */
int srv_pkv_get(struct srv_client *c, const char *key, size_t klen);

/* As srv_pkv_get, appending to b instead of a client's reply (MGET finished off the loop). */
int srv_pkv_get_buf(struct cm_buf *b, const char *key, size_t klen);

/*
 * GET's path for a key the keyspace does not hold: as srv_pkv_get, but when c's command may be
 * deferred (srv_defer.h) the transfer runs on the deferred-work pool while c waits and its
 * loop serves others; returns 2 then, and the reply (the value, or nil and a keymiss event),
 * and the hit/miss count come later, on c's loop. Returns 1 (replied) or 0 (nothing appended:
 * reply nil) when it ran synchronously (inside MULTI/EXEC) or had nothing to read.
 */
int srv_pkv_get_async(struct srv_client *c, const char *key, size_t klen);

/* 1 when the pool holds key readable (no lease granted), else 0. */
int srv_pkv_exists(const char *key, size_t klen);

/* Value size of a readable pool object, or -1 when the pool does not hold key. */
int64_t srv_pkv_strlen(const char *key, size_t klen);

/*
 * DEL of key in the pool (pool_unlink: leases and pins do not block it; a leased object's
 * buffers are freed when its lease ends). Returns 1 when an object was removed, else 0
 * (absent, or a write or copy/move in flight).
 */
int srv_pkv_del(const char *key, size_t klen);

/* Readable pool objects (DBSIZE, INFO keyspace). */
uint64_t srv_pkv_count(void);

/* FLUSHALL/FLUSHDB: unlinks every pool object it may (not writes or copies in flight). Returns
 * the number removed. */
uint64_t srv_pkv_flush(void);

/*
 * 1 when a SET of key must go to the pool: the master has no embedded segment (--memory 0), or
 * the pool already holds key (then the value is overwritten there).
 */
int srv_pkv_set_wanted(const char *key, size_t klen);

/*
 * SET key val into the pool with flags (enum srv_pkv_set_flags): places the value with the
 * pool allocator (upsert: an existing object of the same size is rewritten in place), writes
 * it with the transfer engine and makes it readable; a keyspace object under the same key is
 * deleted. Replies (+OK, nil for NX/XX misses, the old value for GET) unless reply is 0 and
 * GET is not set. Returns 1 when set, 0 when NX/XX prevented it, -1 after replying an error:
 * an empty value, EX/PX (pool objects have no TTL), a pool error (-NO_AVAILABLE_HANDLE ...,
 * -OBJECT_REPLICA_BUSY ...), or a failed transfer (-ERR ..., the write is revoked).
 */
int srv_pkv_set(struct srv_client *c, const struct srv_arg *key, const struct srv_arg *val,
                unsigned flags, int reply);

/* Visitor of srv_pkv_scan(); key is valid during the call only. */
typedef void srv_pkv_key_cb(void *arg, const char *key, size_t klen);

/*
 * One SCAN step over the pool. cursor must carry SRV_PKV_SCAN_FLAG (SRV_PKV_SCAN_FLAG alone
 * starts the walk). Calls cb for the keys of the next buckets until about count objects were
 * looked at; returns the next cursor (with the flag), or 0 when the walk is complete.
 */
uint64_t srv_pkv_scan(uint64_t cursor, size_t count, srv_pkv_key_cb *cb, void *arg);

#endif
