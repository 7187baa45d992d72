/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The master's embedded segment (--memory, srv_seg.h) as a segment of the distributed store's
 * pool: mounted at start as `master@<host>:<port>`, owned by the master's own client id (which
 * never expires), its buffers allocated from the same TLSF as the Redis keyspace's values, and
 * its memory served to library clients by the master's transfer engine (tcp always, shm to
 * same-host peers through the memfd).
 *
 * DESIGN. The pool core (server/pool/) sees the segment through a struct pool_seg_allocator
 * whose calls go to srv_seg_alloc/srv_seg_free, so the pool's replicas and the keyspace's
 * values share one space and one used figure (srv_seg_used), which both eviction rules read:
 * the pool's watermark eviction (pool_tick) and the keyspace's (srv_db.c) each evict their own
 * objects while the shared total is above eviction_high_watermark_ratio; a keyspace write that
 * finds no room after evicting keys asks the pool to evict objects holding bytes in this
 * segment (srv_pseg_evict). The master's own reads and writes of replicas in this segment are
 * memcpy (srv_pseg_local). Not mounted without an embedded segment (--memory 0) or with HA or
 * an op-log (its bytes do not outlive the process, a new leader could not serve them).
 *
 * KEYSPACE STRINGS AS POOL OBJECTS. A non-empty string value of the Redis keyspace lives in a
 * block of this segment (unless the SSD tier holds it), so the MC read commands answer a key
 * the pool lacks with that block: one COMPLETE MEMORY replica at the value's absolute address
 * (srv_pseg_kv_pin, srv_pseg_kv_answer); the bulk commands (by regex, remove all, stats) walk
 * the keyspace for such strings (srv_pseg_kv_walk_*, srv_pseg_kv_count). A read lease pins
 * the object (srv_obj_ref, the pin of a zero-copy GET) until default_kv_lease_ttl ends: an
 * overwrite, DEL, expiry or eviction meanwhile unlinks the key at once, but its block is freed
 * (and reused) only when the lease table drops the pin (swept by srv_pseg_tick). The lease
 * table has its own leaf mutex. Lock order: the keyspace commands take the pool mutex under a
 * shard lock (EXPIRE, INCR...), so an MC command pins the keyspace values first (a shard lock
 * at a time, no pool mutex), answers with them under the pool mutex (srv_pseg_kv_answer), and
 * deletes keyspace keys after releasing it (srv_pseg_kv_remove*); it never takes the keyspace
 * lock itself (the MC commands run without it, or under EXEC's exclusive hold, which is not
 * re-entrant).
 *
 * Threads: srv_pseg_start/stop on the main thread; srv_pseg_tick under the pool mutex on the
 * housekeeping thread; the others from any thread.
 */
#ifndef CRESCENT_SERVER_SRV_POOL_SEG_H
#define CRESCENT_SERVER_SRV_POOL_SEG_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

struct pool_replica_desc;
struct srv_obj;
struct xfer_engine;

/*
 * Creates the listening transfer engine, registers the embedded segment with it and mounts the
 * segment into the pool. Nothing to mount (no segment, embedded_segment_in_pool no, HA or an
 * op-log) is a no-op; a failure (the engine cannot listen on the host) is logged and the master
 * runs without it. Returns 0. Main thread, after srv_mc_start() and a snapshot restore.
 */
int srv_pseg_start(void);

/* Destroys the engine (after srv_pkv_stop(), before srv_mc_stop()). Main thread. */
void srv_pseg_stop(void);

/* Mounts the segment again when the pool lost it (a snapshot restore swapped the pool, an
 * MC.UNMOUNT by its owner id). Pool mutex held. */
void srv_pseg_tick(int64_t now);

/* The master's listening engine when the segment is mounted, else NULL. Any thread. */
struct xfer_engine *srv_pseg_engine(void);

/* The pool's host name for the master's own client: the engine's listening host when the
 * segment is mounted, else "crescent-master". Static string. Any thread. */
const char *srv_pseg_host(void);

/* The segment's pool name ("" when not mounted). Static string. Any thread. */
const char *srv_pseg_name(void);

/*
 * The local address of [addr, addr + len) when segment is the embedded segment's name and the
 * range lies inside it, else NULL: the master reads and writes its own replicas with memcpy.
 */
char *srv_pseg_local(const char *segment, uint64_t addr, uint64_t len);

/*
 * Evicts pool objects that hold bytes in the embedded segment until need bytes were freed there
 * (pool_evict_segment). Returns the number evicted. Takes the pool mutex; call with no pool
 * mutex held (a keyspace shard lock may be held).
 */
uint64_t srv_pseg_evict(uint64_t need);

/* A keyspace string pinned for an MC command (srv_pseg_kv_pin). */
struct srv_pseg_kv {
    struct srv_obj *o; /* pinned object, NULL when none */
    const char *key;   /* its key bytes (inside o: valid while pinned) */
    size_t klen;       /* key length */
    uint64_t addr;     /* absolute address of the value's bytes */
    uint64_t size;     /* value length */
};

/*
 * First step of answering key from the keyspace: when the segment is mounted and key holds a
 * live, non-empty string resident in the segment, pins it into *kv (touching its LRU clock when
 * touch is set) and returns 1; else returns 0 (kv->o NULL). An expired key is deleted on the
 * way, as a GET would. No pool mutex held (the keyspace commands take the pool mutex under a
 * shard lock); takes one shard lock. Release with srv_pseg_kv_unpin. Any thread.
 */
int srv_pseg_kv_pin(const void *key, size_t klen, int touch, struct srv_pseg_kv *kv);

/*
 * Second step, for a key the pool lacks: when kv holds a pin and the segment is mounted with
 * status OK in the current pool, fills *d (one COMPLETE MEMORY replica on this segment at
 * kv->addr, kv->size bytes; d's strings point into the pool: valid while the pool mutex is
 * held), grants or extends a read lease to now + default_kv_lease_ttl when lease is set (a new
 * lease takes a pin of its own; kv keeps its pin), stores the lease deadline (0 when none) in
 * *lease_until (may be NULL) and returns 1; else returns 0. Pool mutex held (now: the pool
 * clock).
 */
int srv_pseg_kv_answer(struct srv_pseg_kv *kv, int64_t now, int lease, struct pool_replica_desc *d,
                       int64_t *lease_until);

/* Drops kv's pin if it still holds one. No lock needed (after the pool mutex is released, as
 * the last pin frees a block). */
void srv_pseg_kv_unpin(struct srv_pseg_kv *kv);

/*
 * MC.REMOVE of a keyspace string that srv_pseg_kv_pin would pin: deletes the key (a "del"
 * keyspace event; WATCH sees it) and returns POOL_OK; POOL_EOBJECT_HAS_LEASE when a read lease
 * is active and force is 0; POOL_EOBJECT_NOT_FOUND when no such string exists. A leased block
 * stays pinned until its lease ends, force or not. No pool mutex held; takes one shard lock.
 */
int srv_pseg_kv_remove(const void *key, size_t klen, int force, int64_t now);

/* Keyspace strings pinned together for a bulk MC command (srv_pseg_kv_walk_next). */
struct srv_pseg_kv_set {
    struct srv_pseg_kv *v; /* v[0..n), a cm_malloc array (NULL when cap is 0) */
    size_t n, cap;
};

/* A walk over the keyspace strings whose keys match a pattern (srv_pseg_kv_walk_init). */
struct srv_pseg_kv_walk {
    regex_t re;      /* the pattern, compiled when has_re */
    int has_re;      /* 0: every key matches */
    int touch;       /* touch the LRU clock of what is pinned */
    int done;        /* the walk has visited the whole keyspace */
    uint64_t cursor; /* srv_db_scan's */
    char *buf;       /* scratch: the key being matched, NUL-terminated */
    size_t cap;
};

/*
 * Starts a walk over the keyspace strings that srv_pseg_kv_pin would pin whose keys match the
 * POSIX extended regular expression pattern (unanchored, as the pool matches its keys; NULL
 * matches every key); touch: pinning touches their LRU clocks. Returns 0 or
 * POOL_EINVALID_PARAMS for a bad pattern (then nothing to finish). A walk with the segment not
 * mounted, or an empty keyspace, is done at once. Finish with srv_pseg_kv_walk_fini.
 */
int srv_pseg_kv_walk_init(struct srv_pseg_kv_walk *w, const char *pattern, int touch);

/*
 * Next step of w: pins the matches among about count more keys (SIZE_MAX: all that are left)
 * into set, appending, and returns the number pinned; sets w->done when the keyspace ends.
 * Expired keys are skipped. As SCAN, a key present throughout is visited at least once, a key
 * may be visited twice (the table resized between steps). No pool mutex held; takes each shard
 * lock in turn. Release the pins with srv_pseg_kv_set_unpin. Any thread.
 */
size_t srv_pseg_kv_walk_next(struct srv_pseg_kv_walk *w, size_t count, struct srv_pseg_kv_set *set);

/* Frees w's pattern and scratch (pins taken stay in their sets). */
void srv_pseg_kv_walk_fini(struct srv_pseg_kv_walk *w);

/* Drops every pin of set and frees its array (set is empty afterwards). No lock needed (after
 * the pool mutex is released). */
void srv_pseg_kv_set_unpin(struct srv_pseg_kv_set *set);

/*
 * 1 when the segment is mounted with status OK in the current pool, so srv_pseg_kv_answer
 * answers a pinned string; else 0. Pool mutex held.
 */
int srv_pseg_kv_ready(void);

/*
 * MC.REMOVE of the keyspace string pinned in kv (a bulk removal): deletes its key as
 * srv_pseg_kv_remove does, but only while the key still holds that very value (an overwrite
 * since the pin is left alone: POOL_EOBJECT_NOT_FOUND). kv keeps its pin (release it after).
 * No pool mutex held; takes one shard lock.
 */
int srv_pseg_kv_remove_pinned(const struct srv_pseg_kv *kv, int force, int64_t now);

/*
 * Counts the keyspace strings srv_pseg_kv_pin would pin (live, non-empty, resident in the
 * segment) into *n and their value bytes into *bytes; both 0 when the segment is not mounted.
 * No pin, no lease, no LRU touch. No pool mutex held; takes each shard lock in turn (O(keys)).
 */
void srv_pseg_kv_count(uint64_t *n, uint64_t *bytes);

/* Drops every keyspace lease now (their blocks go back to the allocator). Called by
 * srv_pseg_stop. */
void srv_pseg_kv_release_all(void);

#endif
