/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for pool_object_restore and the segment-drop hook: what the op-log replay of a new
 * HA leader relies on.
 */
#include "pool_test.h"

TestSuite(pool_restore, .init = NULL, .fini = pt_destroy);

/* A second pool restored from the first's descriptors hands out the same addresses. */
Test(pool_restore, same_addresses_as_the_original) {
    pt_create(NULL);
    pt_client(1, "h1", 0);
    cr_assert_eq(pt_mount(1, "s1", 0x10000000, 16 * MB, 0), 0);
    cr_assert_eq(pt_mount(1, "s2", 0x20000000, 16 * MB, 0), 0);
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.replica_num = 2;
    struct pool_replica_desc a[POOL_MAX_REPLICAS], b[POOL_MAX_REPLICAS];
    cr_assert_eq(pt_put(1, "k1", 5000, &cfg, 1, a), 2);
    struct pool_restore_replica rr[2] = {{a[0].segment, a[0].addr}, {a[1].segment, a[1].addr}};
    char s0[8], s1[8];
    snprintf(s0, sizeof(s0), "%s", a[0].segment);
    snprintf(s1, sizeof(s1), "%s", a[1].segment);
    rr[0].segment = s0;
    rr[1].segment = s1;
    uint64_t addr0 = a[0].addr, addr1 = a[1].addr;
    pt_destroy();

    pt_create(NULL);
    pt_client(1, "h1", 0);
    cr_assert_eq(pt_mount(1, "s1", 0x10000000, 16 * MB, 0), 0);
    cr_assert_eq(pt_mount(1, "s2", 0x20000000, 16 * MB, 0), 0);
    cr_assert_eq(pool_object_restore(P, "k1", 2, 5000, 1, 0, rr, 2, 5), 0);
    size_t n = 0;
    cr_assert_eq(pool_get_replicas(P, "k1", 2, 6, b, &n, NULL), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(b[0].addr, addr0);
    cr_assert_eq(b[1].addr, addr1);
    cr_assert_eq(b[0].status, POOL_REPLICA_COMPLETE);
    cr_assert_eq(pool_check(P), 0);
    /* An overlapping restore of another key is refused and leaves no trace. */
    cr_assert_eq(pool_object_restore(P, "k2", 2, 64, 0, 0, rr, 1, 7), POOL_EINVALID_REPLICA);
    cr_assert_eq(pool_exist(P, "k2", 2, 7), 0);
    /* Restoring the same key again replaces it in place. */
    cr_assert_eq(pool_object_restore(P, "k1", 2, 5000, 0, 0, rr, 2, 8), 0);
    struct pool_object_info info;
    cr_assert_eq(pool_object_query(P, "k1", 2, &info), 0);
    cr_assert_eq(info.hard_pinned, 0);
    cr_assert_eq(pool_check(P), 0);
    /* Bad arguments. */
    struct pool_restore_replica bad = {"nope", 0x10000000};
    cr_assert_eq(pool_object_restore(P, "k3", 2, 64, 0, 0, &bad, 1, 9), POOL_ESEGMENT_NOT_FOUND);
    bad = (struct pool_restore_replica){"s1", 0x10000000 + 16 * MB};
    cr_assert_eq(pool_object_restore(P, "k3", 2, 64, 0, 0, &bad, 1, 9), POOL_EINVALID_REPLICA);
    cr_assert_eq(pool_object_restore(P, "k3", 2, 64, 0, 0, rr, 0, 9), POOL_EINVALID_PARAMS);
}

static char dropped[4][16];
static int ndropped;
static void on_drop(void *arg, const char *name) {
    (void)arg;
    snprintf(dropped[ndropped++ % 4], sizeof(dropped[0]), "%s", name);
}

/* The hook sees explicit unmounts and the segments of an expired client. */
Test(pool_restore, segment_drop_hook) {
    struct pool_config cfg;
    pool_config_default(&cfg);
    cfg.seed = 1;
    cfg.on_seg_drop = on_drop;
    pt_create(&cfg);
    pt_client(1, "h1", 0);
    pt_client(2, "h2", 0);
    cr_assert_eq(pt_mount(1, "a", 0x10000000, 16 * MB, 0), 0);
    cr_assert_eq(pt_mount(2, "b", 0x20000000, 16 * MB, 0), 0);
    struct pool_uuid id = pt_id(1);
    cr_assert_eq(pool_segment_unmount(P, &id, "a", 1), 0);
    cr_assert_eq(ndropped, 1);
    cr_assert_str_eq(dropped[0], "a");
    cr_assert_eq(pool_reconfigure(P, &cfg), 0); /* the hook survives */
    pool_tick(P, cfg.client_live_ttl_ms + 10, NULL);
    cr_assert_eq(ndropped, 2);
    cr_assert_str_eq(dropped[1], "b");
}

/* pool_clients_touch restarts every client's live TTL (the remount grace of a new leader). */
Test(pool_restore, touch_restarts_the_grace_period) {
    pt_create(NULL);
    pt_client(1, "h1", 0);
    cr_assert_eq(pt_mount(1, "a", 0x10000000, 16 * MB, 0), 0);
    struct pool_config cfg;
    pool_config_default(&cfg);
    pool_clients_touch(P, 9000); /* the replay took 9 s of a 10 s TTL */
    pool_tick(P, 12000, NULL);
    struct pool_uuid id = pt_id(1);
    cr_assert_eq(pool_client_exists(P, &id), 1, "alive: touched at 9000, TTL 10000");
    struct pool_segment_info info;
    cr_assert_eq(pool_segment_query(P, "a", &info), 0);
    pool_tick(P, 9000 + cfg.client_live_ttl_ms + 1, NULL);
    cr_assert_eq(pool_client_exists(P, &id), 0, "expired one TTL after the touch");
}
