/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The WATCH registry: watched key -> clients watching it. Every keyspace write calls
 * srv_watch_touch(), which flags the watchers dirty so their EXEC aborts. Costs one relaxed
 * atomic load per write while nobody watches. Thread-safe (one mutex); the lock order is
 * shard lock -> watch lock.
 */
#ifndef CRESCENT_SERVER_SRV_WATCH_H
#define CRESCENT_SERVER_SRV_WATCH_H

#include <stddef.h>
#include <stdint.h>

struct srv_client;

/* Adds key to c's watched keys (no-op if already watched). Caller holds no shard lock. */
void srv_watch_add(struct srv_client *c, const char *key, size_t klen);

/* Drops every key c watches and clears its dirty flag. */
void srv_watch_remove_all(struct srv_client *c);

/* Flags every client watching key as dirty. Any thread, shard lock may be held. */
void srv_watch_touch(const char *key, size_t klen);

/* Flags the watchers of every watched key that exists now (FLUSHALL). No shard lock held. */
void srv_watch_touch_existing(int64_t now_ms);

#endif
