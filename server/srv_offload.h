/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The embedded segment's SSD tier (--enable_offload --ssd_offload_path DIR): the bridge between
 * the keyspace (srv_db.c) and the storage library (storage/sto.h).
 *
 * DESIGN. When eviction picks a string, its value goes to the store and its record stays
 * in the keyspace, flagged SRV_OBJ_OFFLOADED, with handle holding a disk generation; so EXISTS,
 * TTL, TYPE, STRLEN, DBSIZE, SCAN and KEYS see the key unchanged. A value is stored under the
 * disk key 'v' + generation (4 bytes, big-endian) + key; a key with a TTL also gets 't' +
 * generation + key holding its absolute expiry (8 bytes, little-endian), so a restart can bring
 * keys back with their TTLs. Generations make every write its own disk object, so a record being
 * freed never removes the copy of a newer record of the same key. GET reads the value back and
 * moves it into the segment when it fits below the high watermark, else serves it from a
 * temporary buffer; other commands read a scratch copy (srv_obj_val). DEL, overwrite, expiry and
 * FLUSHALL remove the disk copy when the record is freed.
 *
 * Eviction does not wait for the disk: the value is copied into a bounded write queue
 * (CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES) that one writer thread stores in batches; until its write
 * lands, reads of the record copy from the queue, and a change of the key (free, promotion,
 * RENAME, TTL) cancels or amends the queued write (or waits for it when it is being written), so
 * a completed write never brings back a value that was replaced or deleted. A value that does
 * not fit in the queue is written synchronously on the evicting thread (back-pressure).
 * srv_offload_stop() waits for the queue. The store never evicts by itself
 * (its policies are forced to none): a full quota or disk makes the write fail, and the value is
 * dropped as without the tier, counted and logged.
 *
 * GET, MGET, GETDEL, GETEX, SET ... GET and GETSET of an offloaded value read it on the
 * deferred-work pool (srv_defer.h): the client waits, the loop serves others. Every other disk
 * I/O (eviction writes beyond the queue's bound, other commands' scratch reads, reads inside
 * MULTI/EXEC, removals, TTL rewrites) is synchronous on the calling event-loop thread, under the
 * key's shard lock. Thread-safe otherwise: counters are atomics and the store allows concurrent
 * calls.
 */
#ifndef CRESCENT_SERVER_SRV_OFFLOAD_H
#define CRESCENT_SERVER_SRV_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

struct cm_buf;
struct srv_client;
struct srv_obj;

/*
 * Opens the store at srv_cfg.ssd_offload_path when srv_cfg.enable_offload is set (no-op
 * otherwise) and re-registers every value found there as an offloaded key, with its TTL (an
 * expired one is removed instead), after a clean stop or a crash alike. Call once after
 * srv_db_init(), before the workers start. Returns 0, or -1 with a message in err (a missing
 * or bad path, a bad MOONCAKE_OFFLOAD_* variable, the store locked by another process).
 */
int srv_offload_start(char *err, size_t errlen);

/*
 * Waits until every queued eviction write is on disk (or failed), stops the writer thread, and
 * from then on freed records keep their disk copies (shutdown). Main thread, after the event
 * loops ended, before srv_db_fini().
 */
void srv_offload_stop(void);

/* Closes the store. Call after srv_db_fini(). */
void srv_offload_close(void);

/* 1 when the tier is open. */
int srv_offload_enabled(void);

/* Keys whose value is on the SSD tier now (0 without the tier). Lock-free, approximate. */
uint64_t srv_offload_keys(void);

/*
 * Offloads o's value (val, o->vlen bytes, copied; the caller may free it on return) and, when o
 * has a TTL, its expiry, under a new generation stored in *gen: queued for the writer thread
 * when the write queue has room, else written synchronously. Shard lock held. Returns 0, or a
 * negative error of a synchronous write (key too long, quota or disk full, I/O), which is
 * counted and logged (at most every 10 s). A queued write that fails later drops the key as an
 * eviction (srv_db_evict_unlink), counted and logged the same way.
 */
int srv_offload_write(const struct srv_obj *o, const void *val, uint32_t *gen);

/*
 * Reads offloaded o's value into buf (o->vlen bytes): from the write queue while its write is
 * queued, else from disk. Returns 0 or a negative error (counted and logged): missing, corrupt
 * (CRC) or I/O.
 */
int srv_offload_read(const struct srv_obj *o, void *buf);

/*
 * Reads the values of n offloaded objects (each pinned, or under its shard lock) into bufs[i]
 * (o[i]->vlen bytes each), the reads submitted together (sto_batch_get); rc[i] is 0 or a
 * negative error, counted and logged as for srv_offload_read. Any thread.
 */
void srv_offload_read_many(struct srv_obj *const *o, char *const *bufs, int *rc, unsigned n);

/*
 * Removes offloaded o's disk copy (value and expiry), or cancels its queued write (a write in
 * progress is waited for, then removed). promoted = 1: its value just moved back into memory;
 * 0: the record is being freed (DEL, overwrite, expiry, FLUSHALL), and after
 * srv_offload_stop() the copy is kept instead. Any thread.
 */
void srv_offload_forget(const struct srv_obj *o, int promoted);

/*
 * Moves offloaded o's disk copy to n's key (RENAME; n carries the new key and o's TTL).
 * Returns n's generation. On failure (counted, logged) nothing is stored under it and reading
 * n fails.
 */
uint32_t srv_offload_move(const struct srv_obj *o, const struct srv_obj *n);

/*
 * Rewrites (or removes) offloaded o's expiry after its TTL changed; a queued write takes the
 * new expiry instead. Shard lock held.
 */
void srv_offload_set_expire(const struct srv_obj *o);

/*
 * A per-thread scratch copy of offloaded o's value, one of eight slots reused in turn; zeros
 * when the read fails (counted and logged). Valid until the thread's eighth next call.
 */
char *srv_offload_scratch(const struct srv_obj *o);

/*
 * GET's path for an offloaded o (shard lock held): promotes it when there is room and returns
 * 0 (the caller replies from memory as usual); otherwise replies itself, from a temporary
 * buffer (or a null when the read fails), and returns 1.
 */
int srv_offload_reply(struct srv_client *c, struct srv_obj *o);

/*
 * The asynchronous read-back of offloaded o for a command whose reply is o's value alone (GET,
 * GETDEL, GETEX, SET ... GET, GETSET; shard lock held, keyspace lock shared): when c's
 * command may be deferred (srv_defer.h), pins o, suspends c and reads the value on the
 * deferred-work pool; once read, on c's loop, the value is promoted into the segment when o is
 * still the key's record and there is room (else served from the buffer), and appended to
 * c's reply (a null when the read failed). The caller may change the key afterwards (unlink,
 * replace, set its TTL): the pin keeps o's disk copy until the read is done. Returns 1 when
 * deferred (the caller appends nothing more), 0 when not (inside MULTI/EXEC, no tier, or o's
 * write still queued, so there is nothing to wait for): use srv_offload_reply.
 */
int srv_offload_get_async(struct srv_client *c, struct srv_obj *o);

/*
 * After a read of offloaded o (pinned once by the caller, disk generation gen when pinned) into
 * buf, off the loop: promotes o into the segment when it is still the record of its key under
 * that generation, nothing else references it and there is room (srv_obj_promote_buf), else
 * counts a buffered read. Returns 1 when promoted. Loop thread, no lock held (takes the
 * keyspace lock shared and o's shard lock).
 */
int srv_offload_after_read(struct srv_obj *o, uint32_t gen, const char *buf);

/* INFO's "# Offload" section. */
void srv_offload_info(struct cm_buf *b);

/* The crescent_offload_* metric families for /metrics. */
void srv_offload_metrics(struct cm_buf *b);

#endif
