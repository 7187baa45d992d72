/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool scenarios for objects: put/get/remove, replicas on distinct segments, writers, leases,
 * pins, zombie puts, upsert, regex and batch removal, placement strategies, validation and the
 * metadata cost per object.
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "tests/unit/pool/pool_test.h"

/* Three segments: a and b on hostA (client 1), c on hostB (client 2). */
static void setup(void) {
    pt_create(NULL);
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    cr_assert_eq(pt_mount(1, "a", 0x10000000, 4 * MB, 0), 0);
    cr_assert_eq(pt_mount(1, "b", 0x20000000, 4 * MB, 0), 0);
    cr_assert_eq(pt_mount(2, "c", 0x10000000, 4 * MB, 0), 0);
}

TestSuite(pool_obj, .init = setup, .fini = pt_destroy);

Test(pool_obj, put_get_remove) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS], g[POOL_MAX_REPLICAS];
    size_t nd, ng;
    cr_assert_eq(pt_start(1, "k", 1000, NULL, 0, d, &nd), 0);
    cr_assert_eq(nd, 1);
    cr_assert_eq(d[0].status, POOL_REPLICA_PROCESSING);
    cr_assert_eq(d[0].type, POOL_REPLICA_MEMORY);
    cr_assert_eq(d[0].size, 1000);
    struct pool_segment_info info;
    cr_assert_eq(pool_segment_query(P, d[0].segment, &info), 0);
    cr_assert_geq(d[0].addr, info.base);
    cr_assert_leq(d[0].addr + 1000, info.base + info.size, "inside the segment");
    cr_assert_eq(pool_segment_check_range(P, d[0].segment, d[0].addr, 1000), 0);
    cr_assert_eq(pt_get("k", 1, g, &ng), POOL_EREPLICA_IS_NOT_READY);
    cr_assert_eq(pool_exist(P, "k", 1, 1), 0, "not readable yet");
    cr_assert_eq(pt_start(2, "k", 1000, NULL, 1, d + 1, &nd), POOL_EOBJECT_ALREADY_EXISTS);
    cr_assert_eq(pt_end(1, "k", 2), 0);
    cr_assert_eq(pt_end(1, "k", 2), POOL_EINVALID_WRITE, "nothing in flight any more");
    cr_assert_eq(pt_start(2, "k", 1000, NULL, 3, g, &ng), POOL_EOBJECT_ALREADY_EXISTS);
    int64_t ttl = 0;
    cr_assert_eq(pool_get_replicas(P, "k", 1, 3, g, &ng, &ttl), 0);
    cr_assert_eq(ng, 1);
    cr_assert_eq(ttl, 10000);
    cr_assert_eq(g[0].addr, d[0].addr);
    cr_assert_eq(g[0].status, POOL_REPLICA_COMPLETE);
    cr_assert_eq(pool_segment_query(P, g[0].segment, &info), 0);
    cr_assert_eq(info.used, 1000);
    cr_assert_eq(pt_remove("k", 0, 4), POOL_EOBJECT_HAS_LEASE, "get granted a lease");
    cr_assert_eq(pt_remove("k", 0, 10003), 0, "lease over");
    cr_assert_eq(pt_remove("k", 0, 10004), POOL_EOBJECT_NOT_FOUND);
    cr_assert_eq(pt_get("k", 10005, g, &ng), POOL_EOBJECT_NOT_FOUND);
    cr_assert_eq(pool_segment_query(P, g[0].segment, &info), 0);
    cr_assert_eq(info.used, 0);
    cr_assert_eq(info.allocated, 0);
    pt_check();
}

Test(pool_obj, replicas_land_on_distinct_segments) {
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.replica_num = 2;
    for (int i = 0; i < 50; i++) {
        char key[16];
        struct pool_replica_desc d[POOL_MAX_REPLICAS];
        snprintf(key, sizeof(key), "k%d", i);
        cr_assert_eq(pt_put(1, key, 4096, &cfg, 0, d), 2);
        cr_assert_str_neq(d[0].segment, d[1].segment, "%s: distinct segments", key);
    }
    cfg.replica_num = 5;
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    cr_assert_eq(pt_put(1, "five", 4096, &cfg, 0, d), 3, "best effort: one per segment");
    pt_check();
}

Test(pool_obj, only_the_writer_ends_or_revokes) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_start(1, "k", 100, NULL, 0, d, &nd), 0);
    struct pool_uuid id1 = pt_id(1), id2 = pt_id(2), id9 = pt_id(9);
    cr_assert_eq(pool_put_end(P, &id2, "k", 1, 1), POOL_EILLEGAL_CLIENT);
    cr_assert_eq(pool_put_revoke(P, &id2, "k", 1, 1), POOL_EILLEGAL_CLIENT);
    cr_assert_eq(pool_put_end(P, &id9, "k", 1, 1), POOL_ECLIENT_NOT_FOUND);
    cr_assert_eq(pool_put_end(P, &id1, "zz", 2, 1), POOL_EOBJECT_NOT_FOUND);
    cr_assert_eq(pool_put_revoke(P, &id1, "k", 1, 1), 0);
    cr_assert_eq(pt_exists("k"), 0, "revoke erases the object");
    struct pool_stats st;
    pool_get_stats(P, &st);
    cr_assert_eq(st.used, 0);
    cr_assert_eq(st.inflight, 0);
    pt_check();
}

Test(pool_obj, zombie_put_is_preempted_after_the_discard_timeout) {
    struct pool_replica_desc d1[POOL_MAX_REPLICAS], d2[POOL_MAX_REPLICAS];
    size_t n1, n2;
    cr_assert_eq(pt_start(1, "k", 1000, NULL, 0, d1, &n1), 0);
    cr_assert_eq(pt_start(2, "k", 1000, NULL, 29999, d2, &n2), POOL_EOBJECT_ALREADY_EXISTS);
    cr_assert_eq(pt_start(2, "k", 1000, NULL, 30000, d2, &n2), 0, "pre-empted");
    struct pool_stats st;
    pool_get_stats(P, &st);
    cr_assert_eq(st.discarded, 1, "the zombie's buffer is kept for its writer");
    cr_assert_eq(st.used, 2000);
    cr_assert_eq(pt_end(1, "k", 30001), POOL_EILLEGAL_CLIENT, "the zombie lost the key");
    cr_assert_eq(pt_end(2, "k", 30001), 0);
    pt_ping(2, 599999);
    pool_tick(P, 599999, NULL);
    pool_get_stats(P, &st);
    cr_assert_eq(st.discarded, 1);
    struct pool_tick_report rep;
    pt_ping(2, 600000);
    pool_tick(P, 600000, &rep);
    cr_assert_eq(rep.discarded_freed, 1, "released put_start_release_timeout after its start");
    pool_get_stats(P, &st);
    cr_assert_eq(st.used, 1000);
    pt_check();
}

Test(pool_obj, sweep_releases_puts_older_than_the_release_timeout) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_start(1, "z", 1000, NULL, 0, d, &nd), 0);
    cr_assert_eq(pt_start(1, "young", 1000, NULL, 500000, d, &nd), 0);
    pt_ping(2, 600000);
    struct pool_tick_report rep;
    pool_tick(P, 600000, &rep);
    cr_assert_eq(rep.zombies_released, 1);
    cr_assert_eq(pt_exists("z"), 0);
    cr_assert_eq(pt_exists("young"), 1);
    cr_assert_eq(pt_end(1, "young", 600001), 0);
    pt_check();
}

Test(pool_obj, lease_blocks_remove_force_does_not) {
    pt_put(1, "k", 100, NULL, 0, NULL);
    cr_assert_eq(pool_exist(P, "k", 1, 100), 1, "exist grants a lease too");
    cr_assert_eq(pt_remove("k", 0, 200), POOL_EOBJECT_HAS_LEASE);
    cr_assert_eq(pool_remove_all(P, 0, 200), 0, "remove_all skips leased objects");
    cr_assert_eq(pt_remove("k", 1, 200), 0, "force ignores the lease");
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_start(1, "w", 100, NULL, 300, d, &nd), 0);
    cr_assert_eq(pt_remove("w", 1, 300), POOL_EREPLICA_IS_NOT_READY, "writes are revoked");
    pt_check();
}

Test(pool_obj, hard_pin_needs_force) {
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.with_hard_pin = 1;
    pt_put(1, "pinned", 100, &cfg, 0, NULL);
    cr_assert_eq(pt_remove("pinned", 0, 1), POOL_EOBJECT_HAS_LEASE);
    cr_assert_eq(pool_remove_all(P, 0, 1), 0);
    cr_assert_eq(pool_remove_all(P, 1, 1), 1);
    pt_check();
}

Test(pool_obj, upsert_same_size_reuses_other_size_reallocates) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS], u[POOL_MAX_REPLICAS];
    size_t nu;
    struct pool_uuid id2 = pt_id(2);
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    /* Missing key: a put. */
    cr_assert_eq(pool_upsert_start(P, &id2, "k", 1, 1000, &cfg, 0, d, &nu), 0);
    cr_assert_eq(pool_upsert_end(P, &id2, "k", 1, 0), 0);
    /* Same size: same buffer, not readable while rewritten. */
    cr_assert_eq(pool_upsert_start(P, &id2, "k", 1, 1000, &cfg, 1, u, &nu), 0);
    cr_assert_eq(nu, 1);
    cr_assert_eq(u[0].addr, d[0].addr, "same address");
    cr_assert_str_eq(u[0].segment, d[0].segment);
    cr_assert_eq(pt_get("k", 2, u, &nu), POOL_EREPLICA_IS_NOT_READY);
    cr_assert_eq(pool_upsert_start(P, &id2, "k", 1, 1000, &cfg, 3, u, &nu),
                 POOL_EOBJECT_REPLICA_BUSY);
    cr_assert_eq(pool_upsert_end(P, &id2, "k", 1, 4), 0);
    struct pool_stats st;
    pool_get_stats(P, &st);
    cr_assert_eq(st.used, 1000);
    /* Other size: a new buffer, the old one freed. */
    cr_assert_eq(pool_upsert_start(P, &id2, "k", 1, 3000, &cfg, 5, u, &nu), 0);
    cr_assert_eq(u[0].size, 3000);
    pool_get_stats(P, &st);
    cr_assert_eq(st.used, 3000);
    cr_assert_eq(pool_upsert_end(P, &id2, "k", 1, 6), 0);
    /* A leased object is not overwritten in place: the reader keeps the old buffer. */
    cr_assert_eq(pt_get("k", 7, d, &nu), 0);
    cr_assert_eq(pool_upsert_start(P, &id2, "k", 1, 3000, &cfg, 8, u, &nu), 0);
    cr_assert_neq(u[0].addr == d[0].addr && strcmp(u[0].segment, d[0].segment) == 0, 1,
                  "new buffer while leased");
    pool_get_stats(P, &st);
    cr_assert_eq(st.used, 6000);
    cr_assert_eq(st.discarded, 1);
    pt_ping(2, 10007);
    pool_tick(P, 10007, NULL);
    pool_get_stats(P, &st);
    cr_assert_eq(st.discarded, 0, "released when the lease ends");
    cr_assert_eq(st.used, 3000);
    /* Upsert revoke drops the half-written value. */
    cr_assert_eq(pool_upsert_revoke(P, &id2, "k", 1, 10008), 0);
    cr_assert_eq(pt_exists("k"), 0);
    pt_check();
}

Test(pool_obj, remove_by_regex) {
    pt_put(1, "a:1", 10, NULL, 0, NULL);
    pt_put(1, "a:2", 10, NULL, 0, NULL);
    pt_put(1, "b:1", 10, NULL, 0, NULL);
    pt_put(1, "xa:3", 10, NULL, 0, NULL);
    cr_assert_eq(pool_exist(P, "a:2", 3, 0), 1); /* leased */
    cr_assert_eq(pool_remove_regex(P, "^a:[0-9]+$", 0, 1), 1, "a:2 is leased");
    cr_assert_eq(pt_exists("a:1"), 0);
    cr_assert_eq(pt_exists("a:2"), 1);
    cr_assert_eq(pool_remove_regex(P, "a:", 1, 1), 2, "unanchored, forced");
    cr_assert_eq(pt_exists("b:1"), 1);
    cr_assert_eq(pool_remove_regex(P, "(", 0, 1), POOL_EINVALID_PARAMS);
    pt_check();
}

Test(pool_obj, remove_all_returns_every_byte) {
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.replica_num = 2;
    for (int i = 0; i < 300; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        pt_put(1 + i % 2, key, 100 + (uint64_t)i * 37, &cfg, 0, NULL);
    }
    cr_assert_eq(pool_remove_all(P, 0, 1), 300);
    const char *segs[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        struct pool_segment_info info;
        cr_assert_eq(pool_segment_query(P, segs[i], &info), 0);
        cr_assert_eq(info.used, 0, "%s used", segs[i]);
        cr_assert_eq(info.allocated, 0, "%s allocator used", segs[i]);
        cr_assert_eq(info.nbuffers, 0);
    }
    pt_check();
}

Test(pool_obj, batch_replica_clear_only_touches_that_clients_replicas) {
    struct pool_put_config all3;
    pool_put_config_default(&all3);
    all3.replica_num = 3;
    pt_put(1, "k1", 100, &all3, 0, NULL); /* on a, b, c */
    pt_put(1, "k2", 100, &all3, 0, NULL);
    const char *only_c[] = {"c"};
    struct pool_put_config on_c;
    pool_put_config_default(&on_c);
    on_c.preferred_segments = only_c;
    on_c.npreferred = 1;
    pt_put(2, "k3", 100, &on_c, 0, NULL);
    struct pool_uuid id1 = pt_id(1), id2 = pt_id(2);
    const void *keys[] = {"k1", "k2", "k3", "nope"};
    size_t klens[] = {2, 2, 2, 4};
    uint8_t cleared[4];
    /* Client 1, segment a only. */
    cr_assert_eq(pool_batch_replica_clear(P, &id1, keys, klens, 4, "a", 1, cleared), 2);
    cr_assert_eq(cleared[0], 1);
    cr_assert_eq(cleared[1], 1);
    cr_assert_eq(cleared[2], 0, "k3 has nothing on a");
    cr_assert_eq(cleared[3], 0);
    cr_assert_eq(pt_nrep("k1"), 2);
    cr_assert_eq(pt_seg_used("a"), 0);
    cr_assert_eq(pt_seg_used("b"), 200);
    /* A segment of another client is refused. */
    cr_assert_eq(pool_batch_replica_clear(P, &id1, keys, klens, 4, "c", 1, cleared),
                 POOL_EILLEGAL_CLIENT);
    /* Client 2, all its segments: k1, k2 keep their b replica; k3 loses its only one. */
    cr_assert_eq(pool_batch_replica_clear(P, &id2, keys, klens, 4, "", 1, cleared), 3);
    cr_assert_eq(pt_nrep("k1"), 1);
    cr_assert_eq(pt_nrep("k2"), 1);
    cr_assert_eq(pt_exists("k3"), 0);
    cr_assert_eq(pt_seg_used("b"), 200);
    cr_assert_eq(pt_seg_used("c"), 0);
    /* A leased object is left alone. */
    cr_assert_eq(pool_exist(P, "k1", 2, 2), 1);
    cr_assert_eq(pool_batch_replica_clear(P, &id1, keys, klens, 1, NULL, 3, cleared), 0);
    cr_assert_eq(pt_nrep("k1"), 1);
    pt_check();
}

Test(pool_obj, validation) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cr_assert_eq(pt_start(1, "k", 0, NULL, 0, d, &nd), POOL_EINVALID_PARAMS, "size 0");
    cr_assert_eq(pt_start(1, "k", (1ull << 40) + 1, NULL, 0, d, &nd), POOL_EINVALID_PARAMS);
    cr_assert_eq(pt_start(1, "", 10, NULL, 0, d, &nd), POOL_EINVALID_PARAMS, "empty key");
    cfg.replica_num = 0;
    cr_assert_eq(pt_start(1, "k", 10, &cfg, 0, d, &nd), POOL_EINVALID_PARAMS);
    cfg.replica_num = POOL_MAX_REPLICAS + 1;
    cr_assert_eq(pt_start(1, "k", 10, &cfg, 0, d, &nd), POOL_EINVALID_PARAMS);
    pool_put_config_default(&cfg);
    cfg.with_soft_pin = 1;
    cfg.soft_pin_ttl_ms = 24ll * 3600 * 1000 + 1;
    cr_assert_eq(pt_start(1, "k", 10, &cfg, 0, d, &nd), POOL_EINVALID_PARAMS, "TTL above max");
    cr_assert_eq(pt_start(9, "k", 10, NULL, 0, d, &nd), POOL_ECLIENT_NOT_FOUND);
    cr_assert_eq(pt_start(1, "k", 4 * MB + 1, NULL, 0, d, &nd), POOL_ENO_AVAILABLE_HANDLE,
                 "larger than any segment");
    cr_assert_eq(pool_get_replicas(P, NULL, 0, 0, d, &nd, NULL), POOL_EINVALID_PARAMS);
    cr_assert_eq(pool_remove(P, "", 0, 0, 0), POOL_EINVALID_PARAMS);
    pt_check();
}

Test(pool_obj, local_first_picks_the_writers_host) {
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.prefer_same_node = 1;
    for (int i = 0; i < 30; i++) {
        char key[16];
        struct pool_replica_desc d[POOL_MAX_REPLICAS];
        snprintf(key, sizeof(key), "h%d", i);
        pt_put(2, key, 100, &cfg, 0, d);
        cr_assert_str_eq(d[0].segment, "c", "client 2 (hostB) owns only c");
        snprintf(key, sizeof(key), "g%d", i);
        pt_put(1, key, 100, &cfg, 0, d);
        cr_assert(strcmp(d[0].segment, "a") == 0 || strcmp(d[0].segment, "b") == 0);
    }
    pt_check();
}

Test(pool_obj, local_first_strategy_falls_back_when_the_host_is_full) {
    pt_destroy();
    struct pool_config pc;
    pool_config_default(&pc);
    pc.seed = 7;
    pc.strategy = POOL_STRATEGY_LOCAL_FIRST;
    pc.eviction_ratio = 0; /* no eviction: placement only */
    pt_create(&pc);
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    cr_assert_eq(pt_mount(1, "a", 0x1000, 1 * MB, 0), 0);
    cr_assert_eq(pt_mount(2, "c", 0x1000, 4 * MB, 0), 0);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    pt_put(1, "fill", 1 * MB, NULL, 0, d);
    cr_assert_str_eq(d[0].segment, "a");
    pt_put(1, "more", 1000, NULL, 0, d);
    cr_assert_str_eq(d[0].segment, "c", "host full: any segment");
}

Test(pool_obj, preferred_segments_are_honoured_in_order) {
    const char *pref[] = {"c", "a"};
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.preferred_segments = pref;
    cfg.npreferred = 2;
    cfg.replica_num = 2;
    for (int i = 0; i < 20; i++) {
        char key[16];
        struct pool_replica_desc d[POOL_MAX_REPLICAS];
        snprintf(key, sizeof(key), "p%d", i);
        cr_assert_eq(pt_put(1, key, 100, &cfg, 0, d), 2);
        cr_assert_str_eq(d[0].segment, "c");
        cr_assert_str_eq(d[1].segment, "a");
    }
    const char *missing[] = {"nope"};
    cfg.preferred_segments = missing;
    cfg.npreferred = 1;
    cfg.replica_num = 1;
    cr_assert_eq(pt_put(1, "fallback", 100, &cfg, 0, NULL), 1, "unknown preference is skipped");
    pt_check();
}

Test(pool_obj, free_ratio_first_picks_the_emptiest) {
    pt_destroy();
    struct pool_config pc;
    pool_config_default(&pc);
    pc.seed = 9;
    pc.strategy = POOL_STRATEGY_FREE_RATIO_FIRST;
    pt_create(&pc);
    pt_client(1, "hostA", 0);
    cr_assert_eq(pt_mount(1, "a", 0x10000000, 4 * MB, 0), 0);
    cr_assert_eq(pt_mount(1, "b", 0x20000000, 4 * MB, 0), 0);
    cr_assert_eq(pt_mount(1, "c", 0x30000000, 8 * MB, 0), 0);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    const char *pref[] = {"a"};
    struct pool_put_config on_a;
    pool_put_config_default(&on_a);
    on_a.preferred_segments = pref;
    on_a.npreferred = 1;
    pt_put(1, "fill-a", 2 * MB, &on_a, 0, d); /* a is 50 % used */
    pt_put(1, "x", 3 * MB, NULL, 0, d);
    cr_assert_str_eq(d[0].segment, "b", "b and c are empty; b comes first");
    pt_put(1, "y", 100, NULL, 0, d);
    cr_assert_str_eq(d[0].segment, "c", "c is now the emptiest");
    struct pool_put_config two;
    pool_put_config_default(&two);
    two.replica_num = 2;
    pt_put(1, "z", 100, &two, 0, d);
    cr_assert_str_eq(d[0].segment, "c");
    cr_assert_str_eq(d[1].segment, "a", "a (50%%) is emptier than b (75%%)");
    pt_check();
}

Test(pool_obj, metadata_bytes_per_object) {
    pt_destroy();
    struct pool_config pc;
    pool_config_default(&pc);
    pc.seed = 3;
    pt_create(&pc);
    pt_client(1, "hostA", 0);
    cr_assert_eq(pt_mount(1, "big", 0x100000000ull, 1ull << 30, 0), 0);
    enum { N = 100000 };
    size_t before = cm_mem_used();
    char key[65];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "%064d", i); /* 64-byte keys */
        struct pool_replica_desc d[POOL_MAX_REPLICAS];
        size_t nd;
        cr_assert_eq(
            pool_put_start(P, &(struct pool_uuid){{1, [15] = 0x5a}}, key, 64, 64, NULL, 0, d, &nd),
            POOL_EINVALID_PARAMS, "cfg is required");
        pt_put(1, key, 64, NULL, 0, d);
    }
    size_t after = cm_mem_used();
    struct pool_stats st;
    pool_get_stats(P, &st);
    double rec = (double)st.meta_bytes / N;
    double heap = (double)(after - before) / N;
    fprintf(stderr,
            "pool metadata per object (64-byte key, 1 replica): %.1f B counted, %.1f B heap "
            "(record %zu B)\n",
            rec, heap, pool_object_record_size(64, 1));
    cr_assert_eq(pool_object_record_size(64, 1), 124);
    cr_assert_leq(rec, 150.0);
    pt_check();
}

/* ---- copy and move ------------------------------------------------------------------------ */

static void put_on(int client, const char *key, const char *seg, uint64_t size) {
    const char *pref[] = {seg};
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.preferred_segments = pref;
    cfg.npreferred = 1;
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    pt_put(client, key, size, &cfg, 0, d);
    cr_assert_str_eq(d[0].segment, seg);
}

Test(pool_obj, copy_adds_readable_replicas_at_its_end) {
    put_on(1, "k", "a", 1000);
    struct pool_uuid id1 = pt_id(1), id2 = pt_id(2);
    const char *tg[] = {"b", "c"};
    struct pool_copy_plan plan;
    cr_assert_eq(pool_copy_start(P, &id2, "k", 1, "a", tg, 2, 10, &plan), 0);
    cr_assert_str_eq(plan.source.segment, "a");
    cr_assert_eq(plan.ntargets, 2);
    cr_assert_str_eq(plan.targets[0].segment, "b");
    cr_assert_str_eq(plan.targets[1].segment, "c");
    cr_assert_eq(plan.targets[0].status, POOL_REPLICA_PROCESSING);
    cr_assert_eq(pt_seg_used("b"), 1000);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pool_get_replicas(P, "k", 1, 11, d, &nd, NULL), 0);
    cr_assert_eq(nd, 1, "targets are not readable yet");
    cr_assert_eq(d[0].addr, plan.source.addr);
    cr_assert_eq(pool_copy_start(P, &id2, "k", 1, "a", tg, 1, 12, &plan),
                 POOL_EOBJECT_HAS_REPLICATION_TASK);
    cr_assert_eq(pt_remove("k", 0, 20000), POOL_EOBJECT_HAS_REPLICATION_TASK);
    cr_assert_eq(pool_evict(P, 20000, 100 * MB), 0, "not evicted during a copy");
    cr_assert_eq(pool_copy_end(P, &id1, "k", 1, 20001), POOL_EILLEGAL_CLIENT);
    cr_assert_eq(pool_move_end(P, &id2, "k", 1, 20001), POOL_EOBJECT_NO_REPLICATION_TASK);
    cr_assert_eq(pool_copy_end(P, &id2, "k", 1, 20001), 0);
    cr_assert_eq(pool_copy_end(P, &id2, "k", 1, 20002), POOL_EOBJECT_NO_REPLICATION_TASK);
    cr_assert_eq(pool_get_replicas(P, "k", 1, 20003, d, &nd, NULL), 0);
    cr_assert_eq(nd, 3);
    pt_check();
}

Test(pool_obj, copy_errors_and_revoke) {
    put_on(1, "k", "a", 1000);
    struct pool_uuid id1 = pt_id(1), id9 = pt_id(9);
    struct pool_copy_plan plan;
    const char *to_b[] = {"b"}, *to_a[] = {"a"}, *to_x[] = {"x"}, *twice[] = {"b", "b"};
    cr_assert_eq(pool_copy_start(P, &id1, "k", 1, "b", to_b, 1, 1, &plan), POOL_EREPLICA_NOT_FOUND);
    cr_assert_eq(pool_copy_start(P, &id1, "k", 1, "a", to_a, 1, 1, &plan),
                 POOL_EOBJECT_ALREADY_EXISTS);
    cr_assert_eq(pool_copy_start(P, &id1, "k", 1, "a", to_x, 1, 1, &plan), POOL_ESEGMENT_NOT_FOUND);
    cr_assert_eq(pool_copy_start(P, &id1, "k", 1, "a", twice, 2, 1, &plan), POOL_EINVALID_PARAMS);
    cr_assert_eq(pool_copy_start(P, &id1, "k", 1, "a", to_b, 0, 1, &plan), POOL_EINVALID_PARAMS);
    cr_assert_eq(pool_copy_start(P, &id9, "k", 1, "a", to_b, 1, 1, &plan), POOL_ECLIENT_NOT_FOUND);
    cr_assert_eq(pool_copy_start(P, &id1, "zz", 2, "a", to_b, 1, 1, &plan), POOL_EOBJECT_NOT_FOUND);
    cr_assert_eq(pool_copy_revoke(P, &id1, "k", 1, 1), POOL_EOBJECT_NO_REPLICATION_TASK);
    cr_assert_eq(pool_copy_start(P, &id1, "k", 1, "a", to_b, 1, 1, &plan), 0);
    cr_assert_eq(pool_copy_revoke(P, &id1, "k", 1, 2), 0);
    cr_assert_eq(pt_nrep("k"), 1);
    cr_assert_eq(pt_seg_used("b"), 0);
    cr_assert_eq(pt_remove("k", 0, 3), 0);
    pt_check();
}

Test(pool_obj, move_drops_the_source_after_the_lease) {
    put_on(1, "k", "a", 1000);
    struct pool_uuid id1 = pt_id(1);
    struct pool_copy_plan plan;
    cr_assert_eq(pool_move_start(P, &id1, "k", 1, "a", "a", 1, &plan), POOL_EINVALID_PARAMS);
    cr_assert_eq(pool_move_start(P, &id1, "k", 1, "a", "c", 1, &plan), 0);
    cr_assert_str_eq(plan.targets[0].segment, "c");
    struct pool_object_info info;
    cr_assert_eq(pool_object_query(P, "k", 1, &info), 0);
    cr_assert_eq(info.task, 2);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pool_get_replicas(P, "k", 1, 2, d, &nd, NULL), 0); /* a reader on a */
    cr_assert_eq(pool_copy_end(P, &id1, "k", 1, 3), POOL_EOBJECT_NO_REPLICATION_TASK);
    cr_assert_eq(pool_move_end(P, &id1, "k", 1, 3), 0);
    cr_assert_eq(pool_get_replicas(P, "k", 1, 4, d, &nd, NULL), 0);
    cr_assert_eq(nd, 1);
    cr_assert_str_eq(d[0].segment, "c");
    cr_assert_eq(pt_seg_used("a"), 1000, "the reader's buffer survives its lease");
    pt_ping(2, 10001);
    pool_tick(P, 10001, NULL);
    cr_assert_eq(pt_seg_used("a"), 1000, "the lease granted at 2 runs to 10002");
    pt_ping(2, 10002);
    pool_tick(P, 10002, NULL);
    cr_assert_eq(pt_seg_used("a"), 0, "later reads went to c");
    pt_check();
}

Test(pool_obj, abandoned_or_orphaned_tasks_are_cleaned_up) {
    put_on(1, "k", "a", 1000);
    put_on(1, "m", "a", 1000);
    struct pool_uuid id1 = pt_id(1), id2 = pt_id(2);
    struct pool_copy_plan plan;
    const char *to_b[] = {"b"};
    cr_assert_eq(pool_copy_start(P, &id1, "k", 1, "a", to_b, 1, 0, &plan), 0);
    /* The source segment goes away: the copy is abandoned and its target freed. */
    cr_assert_eq(pool_copy_start(P, &id2, "m", 1, "a", (const char *[]){"c"}, 1, 0, &plan), 0);
    cr_assert_eq(pool_segment_unmount(P, &id1, "a", 1), 0);
    cr_assert_eq(pt_exists("k"), 0);
    cr_assert_eq(pt_exists("m"), 0);
    cr_assert_eq(pt_seg_used("b"), 0);
    cr_assert_eq(pt_seg_used("c"), 0);
    /* A task nobody ends is revoked after put_start_release_timeout. */
    put_on(1, "n", "b", 1000);
    cr_assert_eq(pool_copy_start(P, &id1, "n", 1, "b", (const char *[]){"c"}, 1, 10, &plan), 0);
    pt_ping(2, 600009);
    pool_tick(P, 600009, NULL);
    cr_assert_eq(pt_nrep("n"), 2);
    pt_ping(2, 600010);
    struct pool_tick_report rep;
    pool_tick(P, 600010, &rep);
    cr_assert_eq(rep.zombies_released, 1);
    cr_assert_eq(pt_nrep("n"), 1);
    cr_assert_eq(pt_seg_used("c"), 0);
    pt_check();
}

/* pool_keys_regex visitor: records the keys seen. */
struct keys_seen {
    char keys[8][16];
    int n;
};

static void keys_seen_cb(void *arg, const char *key, size_t klen) {
    struct keys_seen *s = arg;
    cr_assert_lt(s->n, 8);
    cr_assert_lt(klen, sizeof(s->keys[0]));
    memcpy(s->keys[s->n], key, klen);
    s->keys[s->n++][klen] = '\0';
}

Test(pool_obj, keys_regex_lists_readable_matches_without_lease) {
    pt_put(1, "user:1", 10, NULL, 0, NULL);
    pt_put(1, "user:22", 10, NULL, 0, NULL);
    pt_put(1, "item:1", 10, NULL, 0, NULL);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_start(1, "user:3", 10, NULL, 0, d, &nd), 0); /* in flight: skipped */
    struct keys_seen s = {0};
    cr_assert_eq(pool_keys_regex(P, "^user:[0-9]+$", keys_seen_cb, &s), 2);
    cr_assert_eq(s.n, 2);
    int one = strcmp(s.keys[0], "user:1") == 0 || strcmp(s.keys[1], "user:1") == 0;
    int two = strcmp(s.keys[0], "user:22") == 0 || strcmp(s.keys[1], "user:22") == 0;
    cr_assert(one && two);
    cr_assert_eq(pool_keys_regex(P, "(", keys_seen_cb, &s), POOL_EINVALID_PARAMS);
    cr_assert_eq(pool_remove(P, "user:1", 6, 0, 1), 0, "listing granted no lease");
    cr_assert_eq(pool_check(P), 0);
}

/* pool_key_regex_match on keys whose storage ends right after them (no NUL follows: under
 * AddressSanitizer a regexec of the key itself reads past the block), short (stack copy) and
 * long (heap copy), with a NUL inside. */
Test(pool_obj, key_regex_match_reads_only_the_key) {
    regex_t tail, head, nohead, whole;
    cr_assert_eq(regcomp(&tail, "yz$", REG_EXTENDED | REG_NOSUB), 0);
    cr_assert_eq(regcomp(&head, "^x", REG_EXTENDED | REG_NOSUB), 0);
    cr_assert_eq(regcomp(&nohead, "^y", REG_EXTENDED | REG_NOSUB), 0);
    cr_assert_eq(regcomp(&whole, "^x*yz$", REG_EXTENDED | REG_NOSUB), 0);
    const size_t lens[] = {3, 4, 8, 255, 256, 257, 300, POOL_MAX_KEY_LEN};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        size_t n = lens[i];
        char *key = cm_malloc(n); /* exactly the key: no NUL after it */
        memset(key, 'x', n);
        memcpy(key + n - 2, "yz", 2);
        cr_assert_eq(pool_key_regex_match(&tail, key, n), 1, "len %zu", n);
        cr_assert_eq(pool_key_regex_match(&head, key, n), 1, "len %zu", n);
        cr_assert_eq(pool_key_regex_match(&nohead, key, n), 0, "len %zu", n);
        cr_assert_eq(pool_key_regex_match(&whole, key, n), 1, "len %zu", n);
        cr_assert_eq(pool_key_regex_match(&tail, key, n - 1), 0, "len %zu less one", n);
        cr_assert_eq(pool_key_regex_match(&whole, key, n - 1), 0, "len %zu less one", n);
        cr_assert_eq(key[n - 1], 'z', "the key is left as it was");
        cm_free(key);
    }
    char *nul = cm_malloc(4);
    memcpy(nul, "x\0yz", 4);
    cr_assert_eq(pool_key_regex_match(&tail, nul, 4), 1, "matched past the NUL inside");
    cr_assert_eq(pool_key_regex_match(&head, nul, 4), 1);
    cr_assert_eq(pool_key_regex_match(&whole, nul, 4), 0, "the NUL is not an x");
    cm_free(nul);
    regfree(&tail);
    regfree(&head);
    regfree(&nohead);
    regfree(&whole);
}

/* pool_keys_regex visitor: counts the keys seen. */
static void keys_count_cb(void *arg, const char *key, size_t klen) {
    (void)key;
    (void)klen;
    ++*(long *)arg;
}

static void put_raw(const char *key, size_t klen) {
    struct pool_uuid id = pt_id(1);
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pool_put_start(P, &id, key, klen, 10, &cfg, 0, d, &nd), 0);
    cr_assert_eq(pool_put_end(P, &id, key, klen, 0), 0);
}

static int exists_raw(const char *key, size_t klen) {
    struct pool_object_info info;
    return pool_object_query(P, key, klen, &info) == 0;
}

/* Regex removal and listing match the whole key, NUL bytes and long keys included. */
Test(pool_obj, regex_matches_whole_keys_with_any_byte) {
    static char lng[300];
    memset(lng, 'x', sizeof(lng));
    memcpy(lng + sizeof(lng) - 2, "yz", 2);
    put_raw("a\0b", 3);
    put_raw("k", 1);
    put_raw("kk", 2);
    put_raw(lng, sizeof(lng));
    long seen = 0;
    cr_assert_eq(pool_keys_regex(P, "yz$", keys_count_cb, &seen), 1);
    cr_assert_eq(seen, 1, "the long key");
    cr_assert_eq(pool_remove_regex(P, "^k$", 0, 1), 1, "k, not kk");
    cr_assert_eq(exists_raw("k", 1), 0);
    cr_assert_eq(exists_raw("kk", 2), 1);
    cr_assert_eq(pool_remove_regex(P, "b$", 0, 1), 1, "a<NUL>b, matched past its NUL");
    cr_assert_eq(exists_raw("a\0b", 3), 0);
    cr_assert_eq(pool_remove_regex(P, "^x{298}yz$", 0, 1), 1, "the long key, whole");
    cr_assert_eq(exists_raw(lng, sizeof(lng)), 0);
    cr_assert_eq(exists_raw("kk", 2), 1);
    pt_check();
}

Test(pool_obj, reconfigure_changes_ttls_and_refuses_bad_settings) {
    struct pool_config cfg;
    pool_config_default(&cfg);
    cfg.kv_lease_ttl_ms = 500;
    cr_assert_eq(pool_reconfigure(P, &cfg), 0);
    pt_put(1, "k", 10, NULL, 0, NULL);
    struct pool_replica_desc g[POOL_MAX_REPLICAS];
    size_t ng;
    int64_t ttl = 0;
    cr_assert_eq(pool_get_replicas(P, "k", 1, 1000, g, &ng, &ttl), 0);
    cr_assert_eq(ttl, 500);
    cr_assert_eq(pool_remove(P, "k", 1, 0, 1400), POOL_EOBJECT_HAS_LEASE);
    cr_assert_eq(pool_remove(P, "k", 1, 0, 1501), 0);
    cfg.put_start_release_timeout_ms = cfg.put_start_discard_timeout_ms - 1;
    cr_assert_eq(pool_reconfigure(P, &cfg), POOL_EINVALID_PARAMS);
    cfg.put_start_release_timeout_ms = 600000;
    cfg.eviction_ratio = 2;
    cr_assert_eq(pool_reconfigure(P, &cfg), POOL_EINVALID_PARAMS);
}
