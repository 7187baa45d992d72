/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pool's object-event hook (the master's KV events): stored at put end with the segments
 * of the replicas, removed by remove / remove by regex / expiry of the client holding the last
 * replica, evicted by eviction, offloaded when a client's SSD tier reports the object; nothing
 * for writes that never completed.
 */
#include "common/fmacros.h"

#include "tests/unit/pool/pool_test.h"

/* The events seen, as "<kind> <key> <size> <seg>..." lines. */
static char seen[64][128];
static int nseen;

static void on_event(void *arg, const struct pool_event *ev) {
    (void)arg;
    static const char *const names[] = {"stored", "removed", "evicted", "offloaded"};
    if (nseen == 64)
        return;
    int n = snprintf(seen[nseen], sizeof(seen[0]), "%s %.*s %llu", names[ev->kind], (int)ev->klen,
                     ev->key, (unsigned long long)ev->size);
    for (uint32_t i = 0; i < ev->nsegs; i++)
        n += snprintf(seen[nseen] + n, sizeof(seen[0]) - (size_t)n, " %s", ev->segs[i]);
    nseen++;
}

static void setup(void) {
    struct pool_config cfg;
    pool_config_default(&cfg);
    cfg.seed = 42;
    cfg.on_event = on_event;
    pt_create(&cfg);
    nseen = 0;
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    cr_assert_eq(pt_mount(1, "a", 0x10000000, 1 * MB, 0), 0);
    cr_assert_eq(pt_mount(2, "b", 0x20000000, 1 * MB, 0), 0);
}

TestSuite(pool_events, .init = setup, .fini = pt_destroy);

Test(pool_events, stored_lists_the_replica_segments) {
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.replica_num = 2;
    pt_put(1, "k1", 100, &cfg, 1, NULL);
    cr_assert_eq(nseen, 1);
    cr_assert(strcmp(seen[0], "stored k1 100 a b") == 0 ||
                  strcmp(seen[0], "stored k1 100 b a") == 0,
              "got %s", seen[0]);
}

Test(pool_events, revoked_write_reports_nothing) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_start(1, "k1", 100, NULL, 1, d, &nd), 0);
    struct pool_uuid id = pt_id(1);
    cr_assert_eq(pool_put_revoke(P, &id, "k1", 2, 2), 0);
    cr_assert_eq(nseen, 0);
}

Test(pool_events, remove_and_remove_regex) {
    pt_put(1, "k1", 10, NULL, 1, NULL);
    pt_put(1, "k2", 20, NULL, 1, NULL);
    pt_put(1, "x3", 30, NULL, 1, NULL);
    nseen = 0;
    cr_assert_eq(pt_remove("k1", 1, 2), 0);
    cr_assert(strncmp(seen[0], "removed k1 10 ", 14) == 0, "got %s", seen[0]);
    cr_assert_eq(pool_remove_regex(P, "^k", 1, 3), 1);
    cr_assert_eq(nseen, 2);
    cr_assert(strncmp(seen[1], "removed k2 20 ", 14) == 0, "got %s", seen[1]);
}

Test(pool_events, client_expiry_removes_objects_without_replicas) {
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.preferred_segments = (const char *[]){"a"};
    cfg.npreferred = 1;
    pt_put(2, "onA", 10, &cfg, 1, NULL);
    nseen = 0;
    struct pool_tick_report rep;
    struct pool_uuid id2 = pt_id(2);
    struct pool_ping_reply pr;
    pool_client_ping(P, &id2, 20000, &pr); /* only client 2 stays alive */
    pool_tick(P, 20000, &rep);             /* client 1 (owner of a) silent for 20 s: expired */
    cr_assert_eq(rep.clients_expired, 1);
    cr_assert_eq(nseen, 1);
    cr_assert_str_eq(seen[0], "removed onA 10");
}

Test(pool_events, eviction_reports_evicted) {
    char key[32];
    for (int n = 0; n < 194; n++) {
        snprintf(key, sizeof(key), "k%d", n);
        pt_put(1, key, 10240, NULL, n, NULL);
    }
    nseen = 0;
    pt_ping(2, 1000);
    struct pool_tick_report rep;
    pool_tick(P, 1000, &rep);
    cr_assert_gt(rep.objects_evicted, 0);
    cr_assert_eq((uint64_t)nseen, rep.objects_evicted < 64 ? rep.objects_evicted : 64);
    cr_assert(strncmp(seen[0], "evicted k", 9) == 0, "got %s", seen[0]);
}

/* A client's SSD tier reporting an object (eager offload at put end) sends "offloaded" with the
 * memory replicas still holding it; a restart scan's re-registration of a missing key too. */
static void offload_setup(void) {
    struct pool_config cfg;
    pool_config_default(&cfg);
    cfg.seed = 42;
    cfg.on_event = on_event;
    cfg.enable_offload = 1;
    pt_create(&cfg);
    nseen = 0;
    pt_client(1, "hostA", 0);
    cr_assert_eq(pt_mount(1, "a", 0x10000000, 1 * MB, 0), 0);
}

Test(pool_events_offload, offloaded_when_the_disk_has_it, .init = offload_setup,
     .fini = pt_destroy) {
    struct pool_uuid id = pt_id(1);
    cr_assert_eq(pool_disk_mount(P, &id, "127.0.0.1:9", 1), 0);
    pt_put(1, "k1", 100, NULL, 1, NULL);
    struct pool_offload_task t[4];
    cr_assert_eq(pool_offload_fetch(P, &id, 4, 2, t), 1);
    cr_assert_eq(pool_offload_done(P, &id, "k1", 2, 100, 3), 0);
    cr_assert_eq(pool_offload_done(P, &id, "k2", 2, 50, 4), 0); /* re-registration */
    cr_assert_eq(nseen, 3);
    cr_assert_str_eq(seen[0], "stored k1 100 a");
    cr_assert_str_eq(seen[1], "offloaded k1 100 a");
    cr_assert_str_eq(seen[2], "offloaded k2 50");
}
