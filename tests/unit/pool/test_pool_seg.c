/* SPDX-License-Identifier: Apache-2.0 */
/* Pool scenarios for clients and segments: registration, ping, expiry, mount rules, unmounts. */
#include "common/fmacros.h"

#include "tests/unit/pool/pool_test.h"

static void setup(void) {
    pt_create(NULL);
}

TestSuite(pool_seg, .init = setup, .fini = pt_destroy);

Test(pool_seg, error_names_follow_mooncake) {
    cr_assert_str_eq(pool_err_name(POOL_EOBJECT_NOT_FOUND), "OBJECT_NOT_FOUND");
    cr_assert_eq(POOL_EOBJECT_NOT_FOUND, -704);
    cr_assert_str_eq(pool_err_name(POOL_EOBJECT_HAS_LEASE), "OBJECT_HAS_LEASE");
    cr_assert_eq(POOL_EOBJECT_HAS_LEASE, -706);
    cr_assert_str_eq(pool_err_name(POOL_ENO_AVAILABLE_HANDLE), "NO_AVAILABLE_HANDLE");
    cr_assert_eq(POOL_ENO_AVAILABLE_HANDLE, -200);
    cr_assert_str_eq(pool_err_name(POOL_EILLEGAL_CLIENT), "ILLEGAL_CLIENT");
    cr_assert_eq(POOL_EILLEGAL_CLIENT, -601);
    cr_assert_str_eq(pool_err_name(0), "OK");
    cr_assert_str_eq(pool_err_name(12345), "UNKNOWN");
    cr_assert_str_eq(pool_strerror(POOL_ESEGMENT_NOT_FOUND), "segment not found");
}

Test(pool_seg, ping_unknown_client_needs_remount) {
    struct pool_uuid id = pt_id(1);
    struct pool_ping_reply r;
    cr_assert_eq(pool_client_ping(P, &id, 0, &r), 0);
    cr_assert_eq(r.status, POOL_CLIENT_NEED_REMOUNT);
    cr_assert_eq(r.view_version, 1);
    pt_client(1, "hostA", 0);
    cr_assert_eq(pool_client_ping(P, &id, 500, &r), 0);
    cr_assert_eq(r.status, POOL_CLIENT_OK);
    cr_assert_eq(pool_client_exists(P, &id), 1);
    cr_assert_eq(pool_client_register(P, &id, "", 0), POOL_EINVALID_PARAMS);
}

Test(pool_seg, silent_client_expires_and_its_replicas_go) {
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    cr_assert_eq(pt_mount(1, "a", 0x100000, 4 * MB, 0), 0);
    cr_assert_eq(pt_mount(2, "b", 0x100000, 4 * MB, 0), 0);
    struct pool_put_config two;
    pool_put_config_default(&two);
    two.replica_num = 2;
    cr_assert_eq(pt_put(2, "both", 1000, &two, 0, NULL), 2);
    const char *only_a[] = {"a"};
    struct pool_put_config on_a;
    pool_put_config_default(&on_a);
    on_a.preferred_segments = only_a;
    on_a.npreferred = 1;
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    cr_assert_eq(pt_put(2, "only-a", 1000, &on_a, 0, d), 1);
    cr_assert_str_eq(d[0].segment, "a");
    /* Client 2 keeps pinging; client 1 falls silent. */
    struct pool_uuid id1 = pt_id(1), id2 = pt_id(2);
    struct pool_ping_reply r;
    struct pool_tick_report rep;
    pool_client_ping(P, &id2, 9000, &r);
    pool_tick(P, 10000, &rep);
    cr_assert_eq(rep.clients_expired, 0, "exactly the TTL is not yet expiry");
    pool_client_ping(P, &id2, 10001, &r);
    pool_tick(P, 10001, &rep);
    cr_assert_eq(rep.clients_expired, 1);
    cr_assert_eq(pt_nrep("both"), 1, "the replica on the dead client's segment is dropped");
    cr_assert_eq(pt_exists("only-a"), 0, "an object left without replicas is erased");
    struct pool_segment_info info;
    cr_assert_eq(pool_segment_query(P, "a", &info), POOL_ESEGMENT_NOT_FOUND);
    cr_assert_eq(pool_segment_query(P, "b", &info), 0);
    cr_assert_eq(info.used, 1000);
    cr_assert_eq(pool_client_ping(P, &id1, 10002, &r), 0);
    cr_assert_eq(r.status, POOL_CLIENT_NEED_REMOUNT);
    /* Re-register and remount: back in business, with an empty segment. */
    pt_client(1, "hostA", 10003);
    struct pool_segment_spec spec = {.name = "a", .base = 0x100000, .size = 4 * MB};
    cr_assert_eq(pool_segment_remount(P, &id1, &spec, 1, 10003), 0);
    cr_assert_eq(pool_client_ping(P, &id1, 10004, &r), 0);
    cr_assert_eq(r.status, POOL_CLIENT_OK);
    cr_assert_eq(pt_seg_used("a"), 0);
    pt_check();
}

Test(pool_seg, expired_writer_leaves_a_zombie_put) {
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    cr_assert_eq(pt_mount(2, "b", 0x100000, 4 * MB, 0), 0);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_start(1, "k", 100, NULL, 0, d, &nd), 0);
    struct pool_uuid id2 = pt_id(2);
    struct pool_ping_reply r;
    pool_client_ping(P, &id2, 20000, &r);
    pool_tick(P, 20000, NULL);
    struct pool_uuid id1 = pt_id(1);
    cr_assert_eq(pool_client_exists(P, &id1), 0, "expired clients are forgotten");
    cr_assert_eq(pt_end(1, "k", 20001), POOL_ECLIENT_NOT_FOUND);
    pt_client(1, "hostA", 20002);
    cr_assert_eq(pt_end(1, "k", 20002), POOL_EILLEGAL_CLIENT, "the put lost its writer");
    pt_check();
}

Test(pool_seg, mount_validation) {
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    struct pool_uuid id9 = pt_id(9);
    struct pool_segment_spec spec = {.name = "x", .base = 4096, .size = 4 * MB};
    cr_assert_eq(pool_segment_mount(P, &id9, &spec, 0), POOL_ECLIENT_NOT_FOUND);
    cr_assert_eq(pt_mount(1, "a", 4096, 0, 0), POOL_EINVALID_PARAMS);
    cr_assert_eq(pt_mount(1, "a", 4096, 1023, 0), POOL_EINVALID_PARAMS);
    cr_assert_eq(pt_mount(1, "a", 4096, (1ull << 40) + 1, 0), POOL_EINVALID_PARAMS);
    cr_assert_eq(pt_mount(1, "a", UINT64_MAX - 1000, 4096, 0), POOL_EINVALID_PARAMS);
    cr_assert_eq(pt_mount(1, "", 4096, 4096, 0), POOL_EINVALID_PARAMS);
    cr_assert_eq(pt_mount(1, "a", 4096, 4 * MB, 0), 0);
    cr_assert_eq(pt_mount(1, "a", 4096, 4 * MB, 0), 0, "same owner, same geometry: idempotent");
    cr_assert_eq(pt_mount(1, "a", 8192, 4 * MB, 0), POOL_ESEGMENT_ALREADY_EXISTS);
    cr_assert_eq(pt_mount(2, "a", 4096, 4 * MB, 0), POOL_ESEGMENT_ALREADY_EXISTS);
    cr_assert_eq(pt_mount(1, "a2", 4096 + MB, MB, 0), POOL_EINVALID_PARAMS, "overlaps a");
    cr_assert_eq(pt_mount(2, "b", 4096, 4 * MB, 0), 0, "another client's address space");
    struct pool_stats st;
    pool_get_stats(P, &st);
    cr_assert_eq(st.segments, 2);
    cr_assert_eq(st.capacity, 8 * MB);
    cr_assert_eq(pool_segment_check_range(P, "a", 4096, 4 * MB), 0);
    cr_assert_eq(pool_segment_check_range(P, "a", 4095, 16), POOL_EINVALID_PARAMS);
    cr_assert_eq(pool_segment_check_range(P, "a", 4096 + 4 * MB - 8, 16), POOL_EINVALID_PARAMS);
    cr_assert_eq(pool_segment_check_range(P, "zz", 4096, 16), POOL_ESEGMENT_NOT_FOUND);
}

Test(pool_seg, unmount_drops_replicas_and_checks_owner) {
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    cr_assert_eq(pt_mount(1, "a", 0x1000, 4 * MB, 0), 0);
    cr_assert_eq(pt_mount(2, "b", 0x1000, 4 * MB, 0), 0);
    struct pool_put_config two;
    pool_put_config_default(&two);
    two.replica_num = 2;
    pt_put(1, "k", 5000, &two, 0, NULL);
    struct pool_uuid id1 = pt_id(1), id2 = pt_id(2);
    cr_assert_eq(pool_segment_unmount(P, &id1, "b", 1), POOL_EILLEGAL_CLIENT);
    cr_assert_eq(pool_segment_unmount(P, &id1, "nope", 1), POOL_ESEGMENT_NOT_FOUND);
    cr_assert_eq(pool_segment_unmount(P, &id2, "b", 1), 0);
    cr_assert_eq(pt_nrep("k"), 1);
    cr_assert_eq(pool_segment_unmount(P, &id1, "a", 1), 0);
    cr_assert_eq(pt_exists("k"), 0);
    struct pool_stats st;
    pool_get_stats(P, &st);
    cr_assert_eq(st.objects, 0);
    cr_assert_eq(st.segments, 0);
    pt_check();
}

Test(pool_seg, graceful_unmount_keeps_replicas_readable_but_takes_no_new_ones) {
    pt_client(1, "hostA", 0);
    cr_assert_eq(pt_mount(1, "a", 0x1000, 4 * MB, 0), 0);
    cr_assert_eq(pt_mount(1, "b", 0x1000000, 4 * MB, 0), 0);
    const char *pref[] = {"a"};
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.preferred_segments = pref;
    cfg.npreferred = 1;
    pt_put(1, "old", 100, &cfg, 0, NULL);
    struct pool_uuid id1 = pt_id(1);
    cr_assert_eq(pool_segment_unmount_graceful(P, &id1, "a", 60000, 10), 0);
    cr_assert_eq(pool_segment_unmount_graceful(P, &id1, "a", 60000, 10),
                 POOL_EUNAVAILABLE_IN_CURRENT_STATUS);
    struct pool_segment_info info;
    cr_assert_eq(pool_segment_query(P, "a", &info), 0);
    cr_assert_eq(info.status, POOL_SEG_GRACEFULLY_UNMOUNTING);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_get("old", 20, d, &nd), 0, "still readable");
    cr_assert_str_eq(d[0].segment, "a");
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof(key), "new%d", i);
        pt_put(1, key, 100, &cfg, 20, d);
        cr_assert_str_eq(d[0].segment, "b", "preferred but unmounting: not used");
    }
    pool_tick(P, 30, NULL);
    cr_assert_eq(pool_segment_query(P, "a", &info), 0, "not empty, grace not over");
    cr_assert_eq(pt_remove("old", 1, 40), 0);
    pool_tick(P, 50, NULL);
    cr_assert_eq(pool_segment_query(P, "a", &info), POOL_ESEGMENT_NOT_FOUND, "empty: done");
    /* The grace deadline also ends it, dropping what is left. */
    pt_put(1, "late", 100, NULL, 60, d);
    cr_assert_eq(pool_segment_unmount_graceful(P, &id1, "b", 1000, 60), 0);
    pool_tick(P, 1059, NULL);
    cr_assert_eq(pool_segment_query(P, "b", &info), 0);
    pool_tick(P, 1060, NULL);
    cr_assert_eq(pool_segment_query(P, "b", &info), POOL_ESEGMENT_NOT_FOUND);
    cr_assert_eq(pt_exists("late"), 0);
    pt_check();
}

static void count_seg(void *arg, const struct pool_segment_info *info) {
    (*(int *)arg)++;
    cr_assert_eq(info->size, 4 * MB);
}

Test(pool_seg, foreach_and_descriptor_blob) {
    pt_client(1, "hostA", 0);
    struct pool_uuid id1 = pt_id(1);
    const char blob[] = {1, 2, 3, 0, 5};
    struct pool_segment_spec spec = {.name = "a",
                                     .base = 0x1000,
                                     .size = 4 * MB,
                                     .endpoint = "10.0.0.1:7000",
                                     .protocol = "rdma",
                                     .desc = blob,
                                     .desc_len = sizeof(blob)};
    cr_assert_eq(pool_segment_mount(P, &id1, &spec, 0), 0);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    pt_put(1, "k", 10, NULL, 0, d);
    cr_assert_str_eq(d[0].endpoint, "10.0.0.1:7000");
    cr_assert_str_eq(d[0].protocol, "rdma");
    cr_assert_eq(d[0].seg_desc_len, sizeof(blob));
    cr_assert_eq(memcmp(d[0].seg_desc, blob, sizeof(blob)), 0);
    int n = 0;
    pool_segment_foreach(P, count_seg, &n);
    cr_assert_eq(n, 1);
}
