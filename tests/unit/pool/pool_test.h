/* SPDX-License-Identifier: Apache-2.0 */
/* Shared fixtures for the pool unit tests: numbered clients, segments and one-call puts. */
#ifndef CRESCENT_TESTS_UNIT_POOL_POOL_TEST_H
#define CRESCENT_TESTS_UNIT_POOL_POOL_TEST_H

#include "server/pool/pool.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define MB (1024ull * 1024ull)

static struct pool *P;

/* Client id n (first byte n, the rest zero). */
static inline struct pool_uuid pt_id(int n) {
    struct pool_uuid id;
    memset(&id, 0, sizeof(id));
    id.b[0] = (uint8_t)n;
    id.b[15] = 0x5a;
    return id;
}

/* Creates the pool with cfg (NULL = defaults, seed 42). */
static inline void pt_create(const struct pool_config *cfg) {
    struct pool_config def;
    if (!cfg) {
        pool_config_default(&def);
        def.seed = 42;
        cfg = &def;
    }
    cr_assert_eq(pool_create(cfg, &P), 0);
}

static inline void pt_destroy(void) {
    pool_destroy(P);
    P = NULL;
}

static inline void pt_client(int n, const char *host, int64_t now) {
    struct pool_uuid id = pt_id(n);
    cr_assert_eq(pool_client_register(P, &id, host, now), 0);
}

/* Mounts segment name of size bytes for client n at base 0x10000000 * (index + 1). */
static inline int pt_mount(int n, const char *name, uint64_t base, uint64_t size, int64_t now) {
    struct pool_uuid id = pt_id(n);
    struct pool_segment_spec spec = {
        .name = name, .base = base, .size = size, .endpoint = "127.0.0.1:1", .protocol = "tcp"};
    return pool_segment_mount(P, &id, &spec, now);
}

/* put start with cfg (NULL = one replica); returns the code, fills d/nd. */
static inline int pt_start(int n, const char *key, uint64_t size, const struct pool_put_config *cfg,
                           int64_t now, struct pool_replica_desc *d, size_t *nd) {
    struct pool_uuid id = pt_id(n);
    struct pool_put_config def;
    if (!cfg) {
        pool_put_config_default(&def);
        cfg = &def;
    }
    return pool_put_start(P, &id, key, strlen(key), size, cfg, now, d, nd);
}

static inline int pt_end(int n, const char *key, int64_t now) {
    struct pool_uuid id = pt_id(n);
    return pool_put_end(P, &id, key, strlen(key), now);
}

/* put start + put end; asserts both succeed and returns the replica count. */
static inline size_t pt_put(int n, const char *key, uint64_t size,
                            const struct pool_put_config *cfg, int64_t now,
                            struct pool_replica_desc *d) {
    struct pool_replica_desc tmp[POOL_MAX_REPLICAS];
    size_t nd = 0;
    if (!d)
        d = tmp;
    int rc = pt_start(n, key, size, cfg, now, d, &nd);
    cr_assert_eq(rc, 0, "put start %s: %s", key, pool_err_name(rc));
    cr_assert_eq(pt_end(n, key, now), 0);
    return nd;
}

static inline int pt_get(const char *key, int64_t now, struct pool_replica_desc *d, size_t *nd) {
    return pool_get_replicas(P, key, strlen(key), now, d, nd, NULL);
}

static inline int pt_remove(const char *key, int force, int64_t now) {
    return pool_remove(P, key, strlen(key), force, now);
}

/* Replica count of key (0 when absent), without granting a lease. */
static inline uint32_t pt_nrep(const char *key) {
    struct pool_object_info info;
    int rc = pool_object_query(P, key, strlen(key), &info);
    return rc == 0 ? info.nreplicas : 0;
}

static inline int pt_exists(const char *key) {
    return pt_nrep(key) > 0;
}

static inline uint64_t pt_seg_used(const char *name) {
    struct pool_segment_info info;
    cr_assert_eq(pool_segment_query(P, name, &info), 0, "segment %s", name);
    return info.used;
}

/* Heartbeat from clients 1..n at now (keeps them alive across pool_tick). */
static inline void pt_ping(int n, int64_t now) {
    for (int i = 1; i <= n; i++) {
        struct pool_uuid id = pt_id(i);
        struct pool_ping_reply r;
        pool_client_ping(P, &id, now, &r);
    }
}

static inline void pt_check(void) {
    cr_assert_eq(pool_check(P), 0, "pool invariants hold");
}

#endif
