/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HA master's metadata op-log (docs/ha.md, "Op-log"): every change of the pool's readable
 * state (client registered, segment mounted / dropped, object readable / gone) becomes one
 * text entry, appended to a store (a Redis list under the cluster's hash tag, appended by a Lua
 * script; or etcd keys written by transactions) that refuses a writer whose epoch is below the
 * newest one seen (fencing). Replies that depend on
 * an entry leave only once it is stored: at before-sleep an event loop takes the sequence number
 * its replies need (srv_oplog_take_need) and holds them, without waiting, until the writer
 * reports it durable (group append; the writer wakes the loop). A new
 * leader fences the log with its epoch, then replays it into a fresh pool.
 *
 * Threads: the srv_oplog_log_* calls run under the pool mutex (srv_mc_lock) so that entries are
 * ordered as the pool changed; one writer thread appends; srv_oplog_fence / srv_oplog_replay run
 * on the HA thread with their own connection.
 */
#ifndef CRESCENT_SERVER_SRV_OPLOG_H
#define CRESCENT_SERVER_SRV_OPLOG_H

#include "server/pool/pool.h"

#include <stddef.h>
#include <stdint.h>

/* Counters for INFO. */
struct srv_oplog_stats {
    uint64_t appended;    /* entries stored by this process */
    uint64_t batches;     /* append round trips that succeeded */
    uint64_t failed;      /* entries refused or lost (fenced, not leader, store down) */
    uint64_t replayed;    /* entries applied by the last replay */
    uint64_t durable;     /* sequence number of the last stored entry */
    uint64_t max_batch;   /* largest batch appended in one round trip */
    uint64_t compactions; /* times a new leader rewrote the log */
    uint64_t compacted;   /* entries written by the last compaction */
    uint64_t skipped;     /* entries the last replay skipped (included in its snapshot) */
    uint64_t trims;       /* times this process trimmed the log up to a snapshot */
    uint64_t trimmed_to;  /* the log's trim point as last read or written (0: never trimmed) */
    int connected;        /* the writer's connection is up */
};

/*
 * Parses uri (redis://[user:password@]host:port[/db] or etcd://host:port[,host:port...]),
 * checks that the store answers (Redis: can run Lua; warns in the log when its persistence
 * cannot keep acknowledged entries) and starts the writer thread. Redis keys:
 * crescent/{cluster}/oplog (the list) and crescent/{cluster}/oplog_epoch (the fence); etcd keys:
 * crescent/{cluster}/oplog/<epoch>/<seq> and the same fence.
 * Returns 0, or -1 with one line in err. Main thread, once, before the workers start.
 */
int srv_oplog_open(const char *uri, const char *cluster, char *err, size_t errlen);

/* Stops the writer thread (pending entries are dropped) and frees everything. Main thread. */
void srv_oplog_close(void);

/* True after a successful srv_oplog_open. */
int srv_oplog_enabled(void);

/*
 * Starts accepting entries stamped with epoch (the leader is about to serve) / stops: pending
 * entries are dropped and every thread waiting for them is failed. Any thread.
 */
void srv_oplog_activate(uint64_t epoch);
void srv_oplog_deactivate(void);

/*
 * Entry producers; the caller holds the pool mutex and the change has been applied to pool p.
 * Without an open op-log they do nothing. An entry produced while the op-log is not active
 * (a leader being deposed) marks the calling thread so that its next srv_oplog_take_need() fails.
 */
void srv_oplog_log_key(struct pool *p, const void *key, size_t klen);
void srv_oplog_log_register(const struct pool_uuid *id, const char *host);
void srv_oplog_log_mount(struct pool *p, const char *segment);
void srv_oplog_log_graceful(const char *segment, int64_t grace_ms);

/* Keys matching a pattern, collected before a bulk removal and logged after it. */
struct srv_oplog_keys;

/*
 * Collects the readable keys of p matching the POSIX extended regex pattern (NULL = all).
 * Returns NULL when the op-log is off. Caller holds the pool mutex and passes the result to
 * srv_oplog_log_keys (which logs each key's state and frees it) under the same hold.
 */
struct srv_oplog_keys *srv_oplog_collect(struct pool *p, const char *pattern);
void srv_oplog_log_keys(struct pool *p, struct srv_oplog_keys *ks);

/* Pool hooks (installed by srv_mc when the op-log is open): an evicted object, a dropped
   segment. Called under the pool mutex. */
int srv_oplog_on_evict(void *arg, const struct pool_evict_event *ev);
void srv_oplog_on_seg_drop(void *arg, const char *name);

/*
 * Records that this thread has seen the pool as it is now (caller holds the pool mutex): its
 * next srv_oplog_take_need() also covers every entry produced so far by any thread, so no reply
 * shows a state whose entries (an eviction or an expiry of the housekeeping thread, a change
 * of another event loop) could still be lost. srv_mc_unlock() calls it.
 */
void srv_oplog_note_state(void);

/*
 * Takes the sequence number that the replies this thread produced since its last call depend on
 * (every entry it produced or noted): *need, 0 when none (always without an op-log). The
 * replies may leave once srv_oplog_progress() reports durable >= *need; when failed_through
 * >= *need first, they must never leave. Returns -1 (and *need 0) when an entry was produced
 * while the op-log was not active: those replies must not be sent. Event-loop thread, at
 * before-sleep; never blocks.
 */
int srv_oplog_take_need(uint64_t *need);

/* Reads where the writer stands: every entry <= *durable is stored; entries <= *failed_through
 * that are not were refused or dropped. Any thread; not under the pool mutex. */
void srv_oplog_progress(uint64_t *durable, uint64_t *failed_through);

/*
 * Installs fn, which the writer thread (or srv_oplog_deactivate) calls each time durable or
 * failed_through moves, with the op-log's own mutex held: it must only wake the event loops
 * (cm_ev_wake), never call back into this module. A loop that reads srv_oplog_progress() after
 * announcing that it waits is thus woken for any later move. Main thread, before the workers.
 */
void srv_oplog_set_progress_hook(void (*fn)(void));

/*
 * Fences the op-log at epoch: from then on appends with a lower epoch are refused. Returns 0,
 * or -1 (err: one line) when the store cannot be reached or holds a higher epoch. HA thread.
 */
int srv_oplog_fence(uint64_t epoch, char *err, size_t errlen);

/*
 * Reads the store's trim point (*base: entries <= it were removed after a snapshot; 0 = never
 * trimmed) and the sequence number of the log's first entry (*first; 0 when empty). Returns 0
 * or -1 (err). HA thread, after srv_oplog_fence.
 */
int srv_oplog_bounds(uint64_t *base, uint64_t *first, char *err, size_t errlen);

/*
 * Reads the whole op-log and applies to p, at time now, every entry whose sequence number is
 * above after_seq (0: all; p is then empty, else it holds the snapshot that included every
 * entry <= after_seq): clients registered, segments mounted and dropped, objects restored at
 * their recorded addresses. Then sets the next sequence number this process assigns above
 * both after_seq and every entry read, so numbers keep growing along the log across leaders.
 * Returns 0 and the number of entries applied in *n, or -1 with one line in err naming the
 * first entry that cannot be read or applied (a corrupt log is refused, never half-applied
 * silently). HA thread.
 */
int srv_oplog_replay(struct pool *p, int64_t now, uint64_t after_seq, uint64_t *n, char *err,
                     size_t errlen);

/*
 * A hot standby's pool (docs/ha.md, "Hot standby"): the state as recovery would build it,
 * followed by reading the entries appended since. Owned by the HA thread; zero = none.
 */
struct srv_oplog_warm {
    struct pool *p;       /* metadata only (NULL: none) */
    uint64_t seq;         /* every entry <= seq is in p (the snapshot's last_seq at first) */
    uint64_t key_seq;     /* the last entry read (0: none yet) ... */
    uint64_t key_epoch;   /* ... its epoch ... */
    char *last;           /* ... and its text, which the next read must find again */
    size_t last_len;      /* (or the log was trimmed exactly up to seq) */
    uint64_t log_len;     /* the log's length at the last read (0: unknown) */
    uint64_t applied;     /* entries applied since the pool was built */
    uint64_t snap_seq;    /* the snapshot p was loaded from (0: none) ... */
    char snap_id[32];     /* ... and its id ("" = none) */
    int64_t last_read_ms; /* monotonic time of the last read that reached the log's end */
    void *conn;           /* the store connection kept between reads (NULL: none) */
};

/*
 * Starts w from pool p (a snapshot with last_seq after_seq, or an empty pool and 0), taking
 * ownership of p, then reads the log as srv_oplog_warm_tail does, checking as recovery does
 * that nothing between the snapshot and the log is missing. Returns 0, or -1 (err; w is freed).
 * HA thread.
 */
int srv_oplog_warm_build(struct srv_oplog_warm *w, struct pool *p, uint64_t after_seq, int64_t now,
                         char *err, size_t errlen);

/*
 * Reads the entries after w->seq and applies them to w->p at time now (*n: how many). The read
 * must first find the last entry w read (or the trim point exactly at w->seq): otherwise the
 * log was trimmed past it, compacted or rewritten, and w cannot follow it. Returns 0, -1 when
 * the store cannot be read (w unchanged but for what was applied: retry later), or -2 when w
 * is unusable (err says why; the caller frees it and rebuilds or recovers in full). HA thread.
 */
int srv_oplog_warm_tail(struct srv_oplog_warm *w, int64_t now, uint64_t *n, char *err,
                        size_t errlen);

/*
 * At promotion, after the fence and a last srv_oplog_warm_tail: as srv_oplog_replay does at its
 * end, records the replay's counters (n entries applied) and sets the next sequence number
 * above w->seq. HA thread.
 */
void srv_oplog_warm_finish(const struct srv_oplog_warm *w, uint64_t n);

/* Frees w's pool, text and connection and zeroes it. HA thread. */
void srv_oplog_warm_free(struct srv_oplog_warm *w);

/*
 * The snapshot point: with the pool mutex held by the caller (so no entry is being produced)
 * and the op-log active at epoch, stores in *seq the sequence number of the last entry
 * assigned: every change applied to the pool so far has an entry <= *seq, and none has one
 * above. Returns 0, or -1 when the op-log is not active at epoch (not serving). Snapshot
 * thread, under the pool mutex.
 */
int srv_oplog_snapshot_point(uint64_t epoch, uint64_t *seq);

/*
 * Waits until every entry <= seq (a snapshot point taken at epoch) is stored: written by this
 * leadership, or read from the store when it began. Returns 0, or -1 when one of them was
 * refused or dropped (the leader lost its lease): a snapshot that includes them must not be
 * published. Any thread but an event loop's; not under the pool mutex.
 */
int srv_oplog_wait_durable(uint64_t epoch, uint64_t seq);

/*
 * Removes the entries <= upto from the store (upto_epoch: the epoch of entry upto, from the
 * snapshot that includes it), fenced: refused unless the store's fence still holds epoch, so a
 * deposed leader cannot trim. Does nothing when the log is already trimmed that far. Returns 0
 * or -1 (err). Snapshot thread.
 */
int srv_oplog_trim(uint64_t epoch, uint64_t upto, uint64_t upto_epoch, char *err, size_t errlen);

/*
 * Rewrites the log as the state of p (a pool just replayed from replayed entries): R and M for
 * every segment owner and segment, G for a graceful unmount, P for every readable object, in
 * the new leader's epoch, numbered after the last entry replayed with one number left out (so
 * that no older snapshot sees a contiguous log after it) and with the trim point cleared. Done only
 * when the store supports it (Redis: written to a side list, then swapped in by a script that
 * checks the fence), the log had at least 1000 entries and the result is at most half as long.
 * Clients without a segment are not kept (they register again when their ping says NEED_REMOUNT).
 * *kept gets the log's length afterwards. Returns 0 (also when nothing was done) or -1 (err; the
 * log is then unchanged). HA thread, before serving.
 */
int srv_oplog_compact(struct pool *p, uint64_t epoch, uint64_t replayed, uint64_t *kept, char *err,
                      size_t errlen);

/* Fills *st. Any thread. */
void srv_oplog_get_stats(struct srv_oplog_stats *st);

#endif
