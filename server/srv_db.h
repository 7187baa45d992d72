/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keyspace: key -> object, in 1024 shards, each a hash table under its own mutex.
 *
 * DESIGN. An object's value lives in the embedded segment; the object record (key, expiry,
 * LRU clock, pin count: 48 bytes plus the key) lives on the heap. Every write calls the WATCH
 * registry (srv_watch.h) so transactions see modified keys. Every command holds the keyspace lock
 * (srv_db_rdlock for ordinary commands, srv_db_wrlock for multi-key atomic ones: MSET, RENAME,
 * EXEC, FLUSHALL...) and then takes one shard lock at a time through struct srv_db_ref.
 * Objects are reference counted: the table owns one reference; a reply that points into the
 * value's bytes holds another (a "pin"), so an overwrite, delete or eviction unlinks the object
 * but its block is freed only when the last pin is dropped. A value is modified in place only
 * when nobody else holds a reference. Values are allocated before any shard lock is taken,
 * because allocation may evict, and eviction walks the shards.
 */
#ifndef CRESCENT_SERVER_SRV_DB_H
#define CRESCENT_SERVER_SRV_DB_H

#include "common/cm_ht.h"
#include "server/srv_seg.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SRV_DB_SHARDS 1024

/*
 * Value types. Strings live in the segment (val points into it, handle is the block). The
 * aggregate types exist for Redis compatibility (redis-benchmark's default tests, scripts):
 * their payload is a heap structure owned by the object (val points to it, handle is 0,
 * vlen is 0), freed through srv_type_free().
 */
enum srv_type {
    SRV_TYPE_STRING = 0,
    SRV_TYPE_LIST = 1,
    SRV_TYPE_SET = 2,
    SRV_TYPE_HASH = 3,
    SRV_TYPE_ZSET = 4,
};

#define SRV_ERR_WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"

struct srv_obj {
    struct cm_ht_node node; /* table link; node.hash is the key's hash */
    _Atomic uint32_t refs;  /* 1 for the table + 1 per pin */
    uint32_t klen;          /* key length */
    union {
        struct {
            uint32_t handle; /* strings: segment block handle */
            uint32_t vlen;   /* strings: value length (<= proto-max-bulk-len) */
        };
        void *payload; /* aggregates: the heap structure of the type */
    };
    _Atomic uint32_t lru;      /* last access, in srv_lru_clock() units */
    uint8_t type;              /* enum srv_type */
    uint8_t flags;             /* SRV_OBJ_* */
    uint8_t pad_[2];           /* keeps the layout explicit */
    _Atomic int64_t expire_ms; /* absolute Unix ms, 0 = persistent */
    char key[];                /* key bytes, not NUL-terminated */
};
_Static_assert(sizeof(struct srv_obj) == 48, "srv_obj record is 48 bytes");

/*
 * The string's value is on the SSD tier (server/srv_offload.h), not in the segment: handle is
 * the disk generation, vlen the value length. Set and cleared under the shard lock, only while
 * the table holds the sole reference (cleared also while the one other reference is the pin of
 * a deferred GET whose read finished: srv_obj_promote_buf).
 */
#define SRV_OBJ_OFFLOADED 0x01u

/* 1 when o's value lives on the SSD tier. */
static inline int srv_obj_offloaded(const struct srv_obj *o) {
    return (o->flags & SRV_OBJ_OFFLOADED) != 0;
}

/* A locked shard and the key being worked on. */
struct srv_db_ref {
    struct srv_shard *sh;
    uint64_t hash;
    const char *key;
    size_t klen;
};

/*
 * Creates the keyspace over seg and starts seg's background page reclaimer (free pages go back
 * to the kernel after 1 s; see srv_seg_reclaim), which also samples the used_memory peak.
 * Call once at startup. Returns 0 or -errno.
 */
int srv_db_init(struct srv_seg *seg);

/* Frees every object (the segment must still exist). Call once at exit, no threads running. */
void srv_db_fini(void);

/* Sets the number of worker threads (before they start). */
void srv_db_set_threads(unsigned n);

/* Called by each worker thread (id 0..n-1) before it runs commands. */
void srv_db_register_thread(unsigned id);

/*
 * The keyspace lock: shared for ordinary commands, exclusive for multi-key atomic ones.
 * Not recursive: a thread holding it shared must not take it again, shared or exclusive.
 */
void srv_db_rdlock(void);
void srv_db_rdunlock(void);
void srv_db_wrlock(void);
void srv_db_wrunlock(void);

/* Locks the shard of key and prepares r. Never nest two shard locks. */
void srv_db_lock(struct srv_db_ref *r, const char *key, size_t klen);
void srv_db_unlock(struct srv_db_ref *r);

/*
 * Finds the object for r's key, deleting it first if it expired at now_ms. Touches its LRU
 * clock. Returns NULL when absent. The pointer stays valid while the shard lock is held, or
 * after the lock is released if the caller pinned it with srv_obj_ref().
 */
struct srv_obj *srv_db_find(struct srv_db_ref *r, int64_t now_ms);

/* As srv_db_find but does not touch the LRU clock (TYPE, TTL, OBJECT, SCAN). */
struct srv_obj *srv_db_peek(struct srv_db_ref *r, int64_t now_ms);

/* Links o (fresh from srv_obj_create, same key) into the table; the key must be absent.
 * Sends the "new" keyspace event (Redis dbAdd). */
void srv_db_insert(struct srv_db_ref *r, struct srv_obj *o);

/* Replaces old (linked) with o; old loses the table's reference. */
void srv_db_replace(struct srv_db_ref *r, struct srv_obj *old, struct srv_obj *o);

/* Unlinks o; it loses the table's reference (freed now unless pinned). */
void srv_db_unlink(struct srv_db_ref *r, struct srv_obj *o);

/*
 * Drops o as an eviction does (shard locked): the "evicted" keyspace event, the unlink, and
 * evicted_keys. Used by eviction and when an offloaded value's queued write failed
 * (srv_offload.c).
 */
void srv_db_evict_unlink(struct srv_db_ref *r, struct srv_obj *o);

/* Sets o's absolute expiry (0 = persistent) and keeps the shard's expiry count right. */
void srv_db_set_expire(struct srv_db_ref *r, struct srv_obj *o, int64_t when_ms);

/* Marks o as modified in place (WATCH sees it) — call after writing its value bytes. */
void srv_db_touch(struct srv_obj *o);

/*
 * Address of a string object's value bytes (valid while the object is referenced). For an
 * offloaded object the bytes are read from the SSD tier into a per-thread scratch copy (one
 * of eight, valid until the calling thread's eighth next such read): read them, never write.
 */
char *srv_obj_val(const struct srv_obj *o);

/*
 * Brings an offloaded string (shard lock held) back into the segment when it fits below the
 * high watermark and nothing but the table references it: reads it from disk into a new
 * block and drops the disk copy. Returns 0 (now resident), -ENOSPC (no room or pinned; still
 * offloaded), or a negative read error (still offloaded).
 */
int srv_obj_promote(struct srv_obj *o);

/*
 * As srv_obj_promote, with the value already read into val (o->vlen bytes, the caller's) by a
 * deferred GET (srv_offload.c) that holds one pin on o: promotes only when the table and that
 * pin are o's only references. Returns 0 or -ENOSPC (still offloaded).
 */
int srv_obj_promote_buf(struct srv_obj *o, const void *val);

/*
 * A record for a string already on the SSD tier under disk generation gen (the restart scan
 * of server/srv_offload.c). Not linked; refs = 1.
 */
struct srv_obj *srv_obj_create_offloaded(const char *key, size_t klen, uint32_t vlen, uint32_t gen);

/*
 * Allocates an object for key with room for cap >= vlen value bytes (the caller fills o->val),
 * evicting when the segment is full or above the high watermark. Must be called with no shard
 * lock held. Returns 0 and *out (refs = 1, not linked), or -CM_EOOM when nothing can be freed.
 * The caller links it or drops it with srv_obj_unref().
 */
int srv_obj_create(const char *key, size_t klen, size_t vlen, size_t cap, struct srv_obj **out);

/*
 * Creates an object of an aggregate type owning payload (a heap structure of that type).
 * Never fails (heap allocation aborts on OOM). Not linked; refs = 1.
 */
struct srv_obj *srv_obj_create_agg(const char *key, size_t klen, enum srv_type type, void *payload);

/* Frees the payload of an aggregate object (defined by the type modules). */
void srv_type_free(enum srv_type type, void *payload);

/* Deep copy of an aggregate payload (for COPY and RENAME). */
void *srv_type_dup(enum srv_type type, const void *payload);

/* Type name for TYPE ("string", "list", "set", "hash", "zset"). */
const char *srv_type_name(enum srv_type type);

/*
 * Moves o's value (and TTL) to a new record for key and frees o's record, without copying the
 * value. o must be unlinked and the caller must hold its only reference. Returns the new
 * record (refs = 1, not linked).
 */
struct srv_obj *srv_obj_rekey(struct srv_obj *o, const char *key, size_t klen);

/* Capacity of o's value block (0 for an offloaded string: it is never modified in place). */
uint64_t srv_obj_capacity(const struct srv_obj *o);

/* Takes a pin on o (shard lock held). */
void srv_obj_ref(struct srv_obj *o);

/* Drops a reference; the last one frees the block and the record. Any thread, no lock needed. */
void srv_obj_unref(struct srv_obj *o);

/* 1 when the shard of key holds no key now: a lock-free hint (a racing insert may be missed),
 * so a caller that tolerates that skips the shard lock for a quick miss. Any thread. */
int srv_db_shard_empty(const char *key, size_t klen);

/* 1 when key exists (deleting it first if it expired). Takes the shard lock. */
int srv_db_exists(const char *key, size_t klen, int64_t now_ms);

/*
 * Memory the data set takes against --memory: segment blocks in use, object records (with
 * their table slots) and aggregate payloads. Eviction keeps it under the high watermark.
 */
uint64_t srv_db_mem_used(void);

/*
 * INFO's used_memory: heap bytes (cm_mem_used) plus segment blocks in use. Updates the peak,
 * which the reclaimer thread also samples every 100 ms, and stores it in *peak (may be NULL).
 * Thread-safe.
 */
uint64_t srv_db_used_memory(uint64_t *peak);

/* Number of keys / keys with an expiry. Approximate while writers run. */
uint64_t srv_db_size(void);
uint64_t srv_db_expires(void);

/*
 * Deletes every key; watched keys that existed are touched. Caller holds the exclusive
 * keyspace lock. Returns the number removed.
 */
uint64_t srv_db_flush(void);

/*
 * One SCAN step. Visits shards/buckets from cursor, calling cb for live objects (shard lock
 * held: copy what you need) until at least count objects were offered or the keyspace ends.
 * Returns the next cursor, 0 when complete.
 */
typedef void srv_db_visit_cb(struct srv_obj *o, void *arg);
uint64_t srv_db_scan(uint64_t cursor, size_t count, int64_t now_ms, srv_db_visit_cb *cb, void *arg);

/* Picks a random live key; copies it into a new cm_malloc buffer (*klen set) or returns NULL. */
char *srv_db_random_key(int64_t now_ms, size_t *klen);

/*
 * Active expiry: samples keys with an expiry in the shards this thread owns (shard %
 * nthreads == tid) for at most budget_us, deleting expired ones. Caller holds the shared lock.
 */
void srv_db_active_expire(unsigned tid, unsigned nthreads, uint64_t budget_us, int64_t now_ms);

/*
 * Evicts least recently used objects, never a pinned one. LRU is approximated by sampling
 * (random keys offered to a pool of the oldest candidates, as Redis's allkeys-lru), so one
 * eviction costs the same at any key count. A cycle evicts about ratio of the keys (at least
 * one); each call evicts one batch of at most 128 keys of the current cycle, starting a cycle
 * when none is under way; later calls, and allocations past the high watermark (8 keys each),
 * pay the rest. Returns the number evicted, 0 when nothing is evictable. Caller holds the shared or
 * exclusive keyspace lock and no shard lock. Serialized internally.
 */
uint64_t srv_db_evict(double ratio);

/* Counters for INFO. */
struct srv_db_stats {
    uint64_t expired_keys;
    uint64_t evicted_keys;
    uint64_t keyspace_hits;
    uint64_t keyspace_misses;
    uint64_t eviction_cycles;
};
void srv_db_get_stats(struct srv_db_stats *st);
void srv_db_reset_stats(void);
void srv_db_count_hit(int hit);

/* Current LRU clock (milliseconds / 16 since start, wraps after ~2 years). */
uint32_t srv_lru_clock(void);

/* Eviction knobs (set from the config table). */
extern double srv_db_high_watermark; /* eviction_high_watermark_ratio */
extern double srv_db_evict_ratio;    /* eviction_ratio */

#endif
