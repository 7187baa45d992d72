/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What each leader-election backend implements (CONTRIBUTING.md, "Layout": an ops table whose first
 * field is its size). All calls are blocking with deadlines (never block longer than timeout_ms; a
 * dead backend yields -ETIMEDOUT/-CM_EUNREACHABLE) and are called from the elector's single thread
 * only. Backends: redis (ha/redis/), etcd (ha/etcd/), Kubernetes Lease (ha/k8s/).
 */
#ifndef CRESCENT_HA_HA_BACKEND_H
#define CRESCENT_HA_HA_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A parsed backend URI: scheme://[user[:password]@]host:port[,host:port...][/path]. */
struct ha_uri {
    char scheme[16];    /* "redis", "etcd", "k8s" */
    char user[128];     /* "" when absent */
    char password[256]; /* "" when absent */
    char hosts[8][256]; /* "host:port" each */
    int nhosts;
    char path[512]; /* without the leading '/': db for redis, ns/lease for k8s */
};

/*
 * Parses uri into *out. Returns 0, or -CM_EBAD_URI with a one-line message in err (errlen
 * bytes, always NUL-terminated). Does not check that the scheme is known. Thread-safe.
 */
int ha_uri_parse(const char *uri, struct ha_uri *out, char *err, size_t errlen);

/* What a backend says about the lease. */
struct ha_view {
    char holder[256]; /* identity of the holder; "" = no holder (expired leases read as none) */
    uint64_t epoch;   /* fencing token of the current (or last) holder */
    int64_t ttl_ms;   /* remaining lease time as the backend reports it, -1 unknown */
    /* try_acquire success only: CLOCK_MONOTONIC ms just before the request that made the lease
       ours was sent, when the backend's lease (as others judge it) starts no earlier than that;
       0 = the start of the call. Lets the elector date a slow acquire from its answer. */
    uint64_t sent_ms;
    /* The backend's own record of the highest epoch handed out (Redis counter, Lease epoch
       annotation / leaseTransitions, etcd epoch key) as this call read it, before any increment
       by the call; 0 when the record is absent. Valid only when stored_known. The elector
       compares it with the highest epoch it has seen to detect a backend that lost data. */
    bool stored_known;
    uint64_t stored_epoch;
};

struct ha_backend_ops {
    size_t size;        /* sizeof(struct ha_backend_ops) of the implementer */
    const char *scheme; /* "redis", "etcd", "k8s" */
    /* Connects; *state is the backend's handle, freed by close. timeout_ms bounds every call. */
    int (*open)(const struct ha_uri *uri, const char *cluster_id, const char *identity,
                int timeout_ms, void **state, char *err, size_t errlen);
    void (*close)(void *state);
    /* Try to become leader with a lease of lease_ms. 0 = acquired, *epoch set to the new
       (strictly greater than any previous) epoch; -EBUSY = someone else holds it (view filled);
       other negative = backend error (err filled). */
    int (*try_acquire)(void *state, uint64_t lease_ms, uint64_t *epoch, struct ha_view *view,
                       char *err, size_t errlen);
    /* Extend our lease. 0 = renewed; -CM_ENOT_LEADER = we no longer hold it; other negative =
       backend error. */
    int (*renew)(void *state, uint64_t lease_ms, char *err, size_t errlen);
    /* Give the lease up if still ours (owner-checked). 0 or negative. */
    int (*release)(void *state, char *err, size_t errlen);
    /* Current holder and epoch. */
    int (*get_holder)(void *state, struct ha_view *view, char *err, size_t errlen);
    /* Block up to timeout_ms for a change of the view after `epoch` (watch); may return early.
       0 = maybe changed, -ETIMEDOUT, -EAGAIN (cannot watch now: the caller sleeps until its
       deadline, a poll) or -ENOSYS (never: the elector then polls every retry period). */
    int (*wait_change)(void *state, uint64_t epoch, int timeout_ms);
    /* Optional (NULL allowed): bound the following calls by timeout_ms instead of open's
       timeout_ms, until called again. The elector uses it so that a renew never outlives the
       leader's renew deadline. */
    void (*set_timeout)(void *state, int timeout_ms);
    /* Optional (NULL allowed): the highest epoch this candidate has seen (its floor). A
       following try_acquire must hand out an epoch above both the backend's record and the
       floor, and store it, so that epochs keep growing when the backend lost its data. */
    void (*set_epoch_floor)(void *state, uint64_t floor);
};

extern const struct ha_backend_ops ha_redis_ops, ha_etcd_ops, ha_k8s_ops;

#endif
