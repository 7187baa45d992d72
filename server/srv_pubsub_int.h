/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by srv_pubsub.c (registry, delivery, output limits) and srv_cmd_pubsub.c
 * (commands, notifications, KV events, the configuration this feature owns). Not for other
 * files.
 */
#ifndef CRESCENT_SERVER_SRV_PUBSUB_INT_H
#define CRESCENT_SERVER_SRV_PUBSUB_INT_H

#include "common/cm_buf.h"
#include "common/cm_config.h"
#include "common/cm_ht.h"

#include <stddef.h>
#include <stdint.h>

struct srv_client;

/* Subscription kinds. */
enum { SRV_PS_CHANNEL, SRV_PS_PATTERN, SRV_PS_SHARD, SRV_PS_NKINDS };

/* A channel (or pattern) with at least one subscriber. The hash node stays first. */
struct srv_ps_chan {
    struct cm_ht_node hn;
    struct srv_client **subs; /* subscribers, in subscription order */
    uint32_t n, cap;
    size_t len;
    char name[]; /* NUL-terminated copy (the name may hold NULs too) */
};

/* One subscription of a client (in its per-kind table, keyed by the channel pointer). */
struct srv_ps_member {
    struct cm_ht_node hn;
    struct srv_ps_chan *ch;
};

/* Pub/sub state of a client (srv_client.ps), created by its first subscription. */
struct srv_ps_client {
    struct cm_ht mine[SRV_PS_NKINDS]; /* struct srv_ps_member */
    uint64_t soft_since_ms;           /* when output passed the soft limit, 0 = below */
    int killed;                       /* over the output limit: closing, gets nothing more */
};

/* Registry lock (reader/writer). */
void srv_pubsub__rdlock(void);
void srv_pubsub__wrlock(void);
void srv_pubsub__unlock(void);

/* Registry: lookups and walks need the lock shared, changes exclusive. */
struct srv_ps_chan *srv_pubsub__find(int kind, const char *name, size_t len);
size_t srv_pubsub__count(int kind);
void srv_pubsub__foreach(int kind, cm_ht_visit_cb *cb, void *arg);

/* Subscribes / unsubscribes c (exclusive lock). Return 1 when something changed, else 0. */
int srv_pubsub__add(struct srv_client *c, int kind, const char *name, size_t len);
int srv_pubsub__remove(struct srv_client *c, int kind, const char *name, size_t len);
void srv_pubsub__remove_all(struct srv_client *c, int kind);

/* Appends the names of c's subscriptions of kind to out as (size_t len, bytes) records;
 * returns how many. Exclusive lock (or c's thread with no concurrent change of c). */
size_t srv_pubsub__names(struct srv_client *c, int kind, struct cm_buf *out);

/* srv_pubsub_counts without taking the lock (held by the caller, or c's own thread). */
void srv_pubsub__counts(const struct srv_client *c, int *sub, int *psub, int *ssub);

/* Channels + patterns + shard channels of c. */
int srv_pubsub__nsubs(const struct srv_client *c);

/* Parses notify-keyspace-events and maxmemory-policy at start-up. 0 or -EINVAL (err). */
int srv_pubsub__config_init(char *err, size_t errlen);

/* Redis 7 maxmemory-policy values, in config-enum order (NULL-terminated); only allkeys-lru
 * (index 4) is accepted. */
extern const char *const srv_maxmemory_policies[];

/* CONFIG SET hooks of the entries in srv_config.c. */
int srv_pubsub_apply_obl(const struct cm_cfg_entry *e, char *err, size_t errlen);
int srv_pubsub_apply_notify(const struct cm_cfg_entry *e, char *err, size_t errlen);
int srv_pubsub_apply_policy(const struct cm_cfg_entry *e, char *err, size_t errlen);

#endif
