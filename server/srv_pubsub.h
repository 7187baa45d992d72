/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Redis pub/sub for crescent-master: channel, pattern and shard-channel subscriptions, PUBLISH
 * delivery across event-loop threads, the pubsub output-buffer class, keyspace notifications
 * (notify-keyspace-events) and the master's KV object events (__crescent__:kv@<cluster>).
 *
 * Threads: the subscription registry is one reader/writer lock (PUBLISH reads, SUBSCRIBE and
 * client close write). A message for a client of the publishing thread goes straight into its
 * output; one for a client of another loop goes through that loop's inbox (a mutex-protected
 * byte queue plus a wake-up), so a client's output is only ever written by its own thread.
 * Lock order: keyspace lock, then the registry lock, then an inbox mutex.
 */
#ifndef CRESCENT_SERVER_SRV_PUBSUB_H
#define CRESCENT_SERVER_SRV_PUBSUB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct srv_client;
struct srv_cmd;
struct srv_worker;

/* Keyspace notification classes (Redis's flag letters in notify-keyspace-events). */
enum {
    SRV_NOTIFY_KEYSPACE = 1 << 0,  /* K */
    SRV_NOTIFY_KEYEVENT = 1 << 1,  /* E */
    SRV_NOTIFY_GENERIC = 1 << 2,   /* g */
    SRV_NOTIFY_STRING = 1 << 3,    /* $ */
    SRV_NOTIFY_LIST = 1 << 4,      /* l */
    SRV_NOTIFY_SET = 1 << 5,       /* s */
    SRV_NOTIFY_HASH = 1 << 6,      /* h */
    SRV_NOTIFY_ZSET = 1 << 7,      /* z */
    SRV_NOTIFY_EXPIRED = 1 << 8,   /* x */
    SRV_NOTIFY_EVICTED = 1 << 9,   /* e */
    SRV_NOTIFY_STREAM = 1 << 10,   /* t */
    SRV_NOTIFY_KEY_MISS = 1 << 11, /* m (not part of A) */
    SRV_NOTIFY_LOADED = 1 << 12,   /* module key loads (never sent) */
    SRV_NOTIFY_MODULE = 1 << 13,   /* d */
    SRV_NOTIFY_NEW = 1 << 14,      /* n (not part of A) */
};

/* KV object events published on __crescent__:kv@<cluster> (docs/operations.md). */
enum srv_kv_event {
    SRV_KV_STORED,    /* a put or upsert completed: the object is readable */
    SRV_KV_REMOVED,   /* removed by a client, by expiry of the client holding its last replica */
    SRV_KV_EVICTED,   /* dropped by pool eviction */
    SRV_KV_OFFLOADED, /* a client SSD tier holds it now (MC.OFFLOADDONE) */
};

/* Classes enabled by notify-keyspace-events (0 = off); read without a lock. */
extern _Atomic int srv_notify_flags;

/* Subscriptions of every client together (channels, patterns, shard channels). */
extern _Atomic long srv_pubsub_nsubs;

/*
 * Parses the configuration this module owns (notify-keyspace-events, client-output-buffer-limit,
 * maxmemory-policy) after the config table was loaded and creates the per-loop inboxes for
 * nworkers loops. Returns 0, or -EINVAL with a reason in err. Main thread, before the workers.
 */
int srv_pubsub_init(unsigned nworkers, char *err, size_t errlen);

/* Tells the module which loop the calling thread runs (NULL for other threads). */
void srv_pubsub_thread_init(struct srv_worker *w);

/* Delivers messages other threads queued for loop w's clients. Loop thread of w (wake hook). */
void srv_pubsub_drain(struct srv_worker *w);

/* Channels, distinct patterns and shard channels with subscribers (INFO stats). Any thread. */
void srv_pubsub_totals(size_t *channels, size_t *patterns, size_t *shard_channels);

/* Drops every subscription of c and its queued messages. Loop thread of c, at close. */
void srv_pubsub_client_gone(struct srv_client *c);

/* 1 when c holds at least one subscription (subscribers are exempt from the idle timeout, as
 * in Redis). Loop thread of c. */
int srv_pubsub_subscribed(const struct srv_client *c);

/* Subscriptions of c by kind, for CLIENT LIST and CLIENT INFO (any thread: takes the registry
 * lock shared; the caller must not hold it). */
void srv_pubsub_counts(const struct srv_client *c, int *sub, int *psub, int *ssub);

/*
 * RESP2 subscriber mode: when c has subscriptions and speaks RESP2, only the (P|S)SUBSCRIBE
 * family, PING, QUIT and RESET may run. Returns 1 with Redis's error for cmd in msg (len bytes),
 * else 0. Loop thread of c.
 */
int srv_pubsub_refuse(struct srv_client *c, const struct srv_cmd *cmd, char *msg, size_t len);

/* PING of a RESP2 subscriber: replies ["pong", msg or ""] and returns 1; else returns 0. */
int srv_pubsub_ping(struct srv_client *c);

/*
 * Output-buffer limits of c's class (normal or pubsub, client-output-buffer-limit): returns 1
 * when c passed its hard limit, or its soft limit for longer than the allowed seconds. Loop
 * thread of c.
 */
int srv_pubsub_obuf_over(struct srv_client *c);

/*
 * Publishes msg on channel to every subscriber (channel and matching patterns); shard != 0
 * publishes to shard-channel subscribers only (SPUBLISH). Any thread; safe under the keyspace
 * lock. Returns the number of receivers.
 */
long srv_pubsub_publish(const char *ch, size_t chlen, const char *msg, size_t mlen, int shard);

/* A publisher as srv_pubsub_publish; the one notifications use (set by srv_pubsub_init). */
typedef long srv_notify_publish_fn(const char *ch, size_t chlen, const char *msg, size_t mlen,
                                   int shard);
extern srv_notify_publish_fn *srv_notify__publish;

/* srv_notify without the quick check. */
void srv_notify__send(int type, const char *event, const char *key, size_t klen);

/*
 * Keyspace notification (Redis notifyKeyspaceEvent): when type is enabled, publishes event on
 * __keyspace@0__:<key> and/or key on __keyevent@0__:<event>. Any thread; one relaxed load when
 * notifications are off.
 */
static inline void srv_notify(int type, const char *event, const char *key, size_t klen) {
    if (atomic_load_explicit(&srv_notify_flags, memory_order_relaxed) & type)
        srv_notify__send(type, event, key, klen);
}

/*
 * KV object event on __crescent__:kv@<cluster_id>: "<event> <key> <size>[ <segment>...]".
 * segs may be NULL when nsegs is 0. Any thread; must not be called under the pool mutex.
 */
void srv_kv_event(enum srv_kv_event ev, const char *key, size_t klen, uint64_t size,
                  const char *const *segs, unsigned nsegs);

#endif
