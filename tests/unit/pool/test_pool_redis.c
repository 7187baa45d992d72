/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool scenarios for the views plain Redis commands use (pool_redis.c): DEL semantics under a
 * lease and a hard pin, unlink of everything, the SCAN cursor and the readable count.
 */
#include "common/fmacros.h"

#include "tests/unit/pool/pool_test.h"

static void setup(void) {
    struct pool_config cfg;
    pool_config_default(&cfg);
    cfg.seed = 42;
    cfg.client_live_ttl_ms = 1000000; /* the ticks below must not expire the client */
    pt_create(&cfg);
    pt_client(1, "hostA", 0);
    cr_assert_eq(pt_mount(1, "a", 0x10000000, 4 * MB, 0), 0);
}

TestSuite(pool_redis, .init = setup, .fini = pt_destroy);

static uint64_t seg_used(void) {
    struct pool_segment_info info;
    cr_assert_eq(pool_segment_query(P, "a", &info), 0);
    return info.used;
}

Test(pool_redis, unlink_takes_leased_object_and_frees_its_buffer_after_the_lease) {
    pt_put(1, "k", 1000, NULL, 0, NULL);
    struct pool_replica_desc g[POOL_MAX_REPLICAS];
    size_t ng;
    cr_assert_eq(pt_get("k", 100, g, &ng), 0); /* lease until 10100 */
    cr_assert_eq(pool_unlink(P, "k", 1, 200), 0);
    cr_assert_eq(pt_exists("k"), 0, "gone at once");
    cr_assert_eq(pool_unlink(P, "k", 1, 200), POOL_EOBJECT_NOT_FOUND);
    cr_assert_eq(seg_used(), 1000, "the reader's buffer is kept");
    pool_tick(P, 10099, NULL);
    cr_assert_eq(seg_used(), 1000);
    pool_tick(P, 10100, NULL);
    cr_assert_eq(seg_used(), 0, "freed when the lease ends");
    pt_check();
}

Test(pool_redis, unlink_takes_hard_pinned_but_not_writes_in_flight) {
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.with_hard_pin = 1;
    pt_put(1, "pinned", 100, &cfg, 0, NULL);
    cr_assert_eq(pool_unlink(P, "pinned", 6, 1), 0);
    cr_assert_eq(seg_used(), 0, "no lease: freed now");
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_start(1, "w", 100, NULL, 2, d, &nd), 0);
    cr_assert_eq(pool_unlink(P, "w", 1, 3), POOL_EREPLICA_IS_NOT_READY);
    cr_assert_eq(pool_unlink(P, "", 0, 3), POOL_EINVALID_PARAMS);
    pt_put(1, "x", 10, NULL, 4, NULL);
    pt_put(1, "y", 10, &cfg, 4, NULL);
    cr_assert_eq(pool_readable_count(P), 2, "w is being written");
    cr_assert_eq(pool_unlink_all(P, 5), 2, "skips the write in flight");
    cr_assert_eq(pool_readable_count(P), 0);
    cr_assert_eq(pt_end(1, "w", 6), 0);
    cr_assert_eq(pool_readable_count(P), 1);
    pt_check();
}

struct seen {
    int n[200];
    int calls;
};

static void visit(void *arg, const char *key, size_t klen) {
    struct seen *s = arg;
    int i = 0;
    cr_assert(klen >= 2);
    sscanf(key + 1, "%d", &i);
    cr_assert(i >= 0 && i < 200);
    s->n[i]++;
    s->calls++;
}

Test(pool_redis, scan_returns_every_readable_key_across_resizes) {
    char key[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        pt_put(1, key, 8, NULL, 0, NULL);
    }
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_start(1, "k199", 8, NULL, 0, d, &nd), 0); /* in flight: not listed */
    struct seen s;
    memset(&s, 0, sizeof(s));
    uint64_t cursor = 0;
    int steps = 0, added = 100;
    do {
        cursor = pool_scan(P, cursor, 5, visit, &s);
        if (steps++ % 3 == 0 && added < 160) { /* the table grows between steps */
            snprintf(key, sizeof(key), "k%d", added++);
            pt_put(1, key, 8, NULL, 0, NULL);
        }
    } while (cursor != 0);
    for (int i = 0; i < 100; i++)
        cr_assert_geq(s.n[i], 1, "k%d missed", i);
    cr_assert_eq(s.n[199], 0, "a write in flight is not listed");
    pt_check();
}
