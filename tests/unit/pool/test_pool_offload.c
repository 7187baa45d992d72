/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool client-SSD-tier scenarios (pool_offload.c): local-disk segments, eager and on-evict
 * queueing, the per-cycle cap with and without force-evict, the queue limit, LOCAL_DISK
 * replicas added on report and dropped on unmount and on client expiry, eviction of memory
 * replicas only, and re-registration of unknown keys.
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "tests/unit/pool/pool_test.h"

#define OBJ 10240u /* 10 KiB values: about 100 per 1 MiB segment */

/* Client 1 owns segment a (1 MiB) and a disk; client 2 owns segment b and no disk. */
static void make_pool(int on_evict, int force, uint32_t qlimit, double cap_ratio) {
    struct pool_config cfg;
    pool_config_default(&cfg);
    cfg.seed = 42;
    cfg.enable_offload = 1;
    cfg.offload_on_evict = on_evict;
    cfg.offload_force_evict = force;
    cfg.offloading_queue_limit = qlimit;
    cfg.offload_cap_ratio = cap_ratio;
    cfg.evict_sample = 1; /* every object is a candidate within one cycle of a sparse table */
    pt_create(&cfg);
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    cr_assert_eq(pt_mount(1, "a", 0x10000000, 1 * MB, 0), 0);
    cr_assert_eq(pt_mount(2, "b", 0x20000000, 1 * MB, 0), 0);
}

static int disk_mount(int n, const char *ep) {
    struct pool_uuid id = pt_id(n);
    return pool_disk_mount(P, &id, ep, 0);
}

static long fetch(int n, size_t max, int64_t now, struct pool_offload_task *t) {
    struct pool_uuid id = pt_id(n);
    return pool_offload_fetch(P, &id, max, now, t);
}

static int done(int n, const char *key, uint64_t size, int64_t now) {
    struct pool_uuid id = pt_id(n);
    return pool_offload_done(P, &id, key, strlen(key), size, now);
}

/* Puts key with one replica on segment seg ("a" or "b"). */
static void put_on(int n, const char *key, const char *seg, int64_t now) {
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    const char *pref[1] = {seg};
    cfg.preferred_segments = pref;
    cfg.npreferred = 1;
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    pt_put(n, key, OBJ, &cfg, now, d);
    cr_assert_str_eq(d[0].segment, seg);
}

static uint64_t queued_of(int n) {
    struct pool_uuid id = pt_id(n);
    struct pool_disk_info info;
    cr_assert_eq(pool_disk_query(P, &id, &info), 0);
    return info.queued;
}

static uint32_t count_type(const char *key, enum pool_replica_type t) {
    struct pool_object_info info;
    if (pool_object_query(P, key, strlen(key), &info) != 0)
        return 0;
    uint32_t c = 0;
    for (uint32_t i = 0; i < info.nreplicas; i++)
        c += info.replicas[i].type == t;
    return c;
}

Test(pool_offload, mount_rules) {
    struct pool_config cfg;
    pool_config_default(&cfg);
    cfg.seed = 42;
    pt_create(&cfg);
    pt_client(1, "hostA", 0);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), POOL_EUNABLE_OFFLOAD, "offload off");
    pt_destroy();
    make_pool(0, 0, 100, 0.5);
    cr_assert_eq(disk_mount(9, "x:1"), POOL_ECLIENT_NOT_FOUND);
    cr_assert_eq(disk_mount(1, ""), POOL_EINVALID_PARAMS);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7001"), 0, "mounting again refreshes");
    struct pool_uuid id = pt_id(1), id2 = pt_id(2);
    struct pool_disk_info info;
    cr_assert_eq(pool_disk_query(P, &id, &info), 0);
    cr_assert_str_eq(info.endpoint, "127.0.0.1:7001");
    cr_assert_eq(pool_disk_query(P, &id2, &info), POOL_ESEGMENT_NOT_FOUND);
    cr_assert_eq(pool_disk_unmount(P, &id2, 0), POOL_ESEGMENT_NOT_FOUND);
    struct pool_offload_task t[4];
    cr_assert_eq(fetch(2, 4, 0, t), POOL_ESEGMENT_NOT_FOUND);
    cr_assert_eq(done(2, "k", 5, 0), POOL_ESEGMENT_NOT_FOUND);
    cr_assert_eq(pool_disk_unmount(P, &id, 0), 0);
    cr_assert_eq(pool_disk_query(P, &id, &info), POOL_ESEGMENT_NOT_FOUND);
    pt_destroy();
}

Test(pool_offload, eager_queue_fetch_done_and_memory_eviction) {
    make_pool(0, 0, 100, 0.5);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    put_on(1, "x", "a", 10);
    put_on(2, "y", "b", 10); /* b's owner has no disk: not queued */
    cr_assert_eq(queued_of(1), 1);
    struct pool_offload_task t[4];
    cr_assert_eq(fetch(1, 4, 100, t), 1);
    cr_assert_eq(t[0].klen, 1);
    cr_assert_eq(memcmp(t[0].key, "x", 1), 0);
    cr_assert_eq(t[0].size, OBJ);
    cr_assert_str_eq(t[0].src.segment, "a");
    cr_assert_eq(t[0].src.type, POOL_REPLICA_MEMORY);
    cr_assert_eq(queued_of(1), 0);
    /* The fetch leased x: it cannot be removed while the client copies it. */
    cr_assert_eq(pt_remove("x", 0, 200), POOL_EOBJECT_HAS_LEASE);
    cr_assert_eq(done(1, "x", OBJ, 300), 0);
    cr_assert_eq(done(1, "x", OBJ, 300), 0, "idempotent");
    cr_assert_eq(count_type("x", POOL_REPLICA_LOCAL_DISK), 1);
    cr_assert_eq(count_type("x", POOL_REPLICA_MEMORY), 1);
    cr_assert_eq(done(1, "x", OBJ + 1, 300), POOL_EINVALID_REPLICA, "size mismatch");
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_get("x", 400, d, &nd), 0);
    cr_assert_eq(nd, 2);
    cr_assert_eq(d[0].type, POOL_REPLICA_MEMORY, "memory first");
    cr_assert_eq(d[1].type, POOL_REPLICA_LOCAL_DISK);
    cr_assert_str_eq(d[1].endpoint, "127.0.0.1:7000");
    cr_assert_str_eq(d[1].protocol, "offload");
    cr_assert_eq(d[1].size, OBJ);
    pt_check();
    /* Eviction takes the memory replica only; the object lives on on disk. */
    uint64_t used = pt_seg_used("a");
    cr_assert_geq(pool_evict(P, 1000000, 100 * MB), 1);
    cr_assert_eq(pt_seg_used("a"), used - OBJ);
    cr_assert_eq(count_type("x", POOL_REPLICA_MEMORY), 0);
    cr_assert_eq(count_type("x", POOL_REPLICA_LOCAL_DISK), 1);
    cr_assert_eq(pt_get("x", 1000001, d, &nd), 0);
    cr_assert_eq(nd, 1);
    cr_assert_eq(d[0].type, POOL_REPLICA_LOCAL_DISK);
    /* A disk-only object is never an eviction victim. */
    pool_evict(P, 3000000, 100 * MB);
    cr_assert_eq(count_type("x", POOL_REPLICA_LOCAL_DISK), 1);
    struct pool_offload_stats st;
    pool_offload_get_stats(P, &st);
    cr_assert_eq(st.disks, 1);
    cr_assert_eq(st.queued, 1);
    cr_assert_eq(st.fetched, 1);
    cr_assert_eq(st.disk_replicas, 1);
    pt_check();
    /* Removal drops it and its accounting. */
    cr_assert_eq(pt_remove("x", 0, 3000000), 0);
    pool_offload_get_stats(P, &st);
    cr_assert_eq(st.disk_replicas, 0);
    pt_check();
    pt_destroy();
}

Test(pool_offload, fetch_skips_gone_and_rewritten_objects) {
    make_pool(0, 0, 100, 0.5);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    put_on(1, "gone", "a", 0);
    put_on(1, "kept", "a", 0);
    cr_assert_eq(pt_remove("gone", 0, 1), 0);
    struct pool_offload_task t[4];
    cr_assert_eq(fetch(1, 4, 2, t), 1);
    cr_assert_eq(memcmp(t[0].key, "kept", 4), 0);
    cr_assert_eq(fetch(1, 4, 2, t), 0, "queue drained");
    pt_destroy();
}

Test(pool_offload, on_evict_queues_victims_and_keeps_them) {
    make_pool(1, 0, 100, 0.5);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    char key[32];
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        put_on(1, key, "a", i);
    }
    cr_assert_eq(queued_of(1), 0, "on-evict: nothing queued at put end");
    uint64_t n = pool_evict(P, 100000, 100 * MB);
    cr_assert_eq(n, 0, "every victim kept for offload");
    cr_assert_eq(queued_of(1), 20);
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        cr_assert_eq(count_type(key, POOL_REPLICA_MEMORY), 1);
    }
    struct pool_offload_task t[32];
    long f = fetch(1, 32, 200000, t);
    cr_assert_eq(f, 20);
    for (long i = 0; i < f; i++) {
        char k[32];
        memcpy(k, t[i].key, t[i].klen);
        k[t[i].klen] = 0;
        cr_assert_eq(done(1, k, t[i].size, 200001), 0);
    }
    /* After the fetch leases run out, the next cycle frees the memory replicas. */
    n = pool_evict(P, 300000, 100 * MB);
    cr_assert_eq(n, 20);
    cr_assert_eq(pt_seg_used("a"), 0);
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        cr_assert_eq(count_type(key, POOL_REPLICA_LOCAL_DISK), 1);
        cr_assert_eq(count_type(key, POOL_REPLICA_MEMORY), 0);
    }
    pt_check();
    pt_destroy();
}

Test(pool_offload, cap_keeps_victims_without_force) {
    make_pool(1, 0, 10, 0.5); /* cap: 5 per cycle */
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    char key[32];
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        put_on(1, key, "a", i);
    }
    uint64_t n = pool_evict(P, 100000, 100 * MB);
    cr_assert_eq(n, 0);
    cr_assert_eq(queued_of(1), 5, "the per-cycle cap");
    uint32_t mem = 0;
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        mem += count_type(key, POOL_REPLICA_MEMORY);
    }
    cr_assert_eq(mem, 20, "beyond the cap victims stay in memory");
    struct pool_offload_stats st;
    pool_offload_get_stats(P, &st);
    cr_assert_geq(st.cap_kept, 15, "each kept decision counts");
    cr_assert_eq(st.force_evicted, 0);
    /* Next cycle: five more (the queue limit is 10). */
    pool_evict(P, 100001, 100 * MB);
    cr_assert_eq(queued_of(1), 10);
    pool_evict(P, 100002, 100 * MB);
    cr_assert_eq(queued_of(1), 10, "queue limit");
    pool_offload_get_stats(P, &st);
    cr_assert_gt(st.queue_full, 0);
    pt_check();
    pt_destroy();
}

Test(pool_offload, force_evict_drops_beyond_cap) {
    make_pool(1, 1, 10, 0.5);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    char key[32];
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        put_on(1, key, "a", i);
    }
    uint64_t n = pool_evict(P, 100000, 100 * MB);
    cr_assert_eq(n, 15, "everything beyond the cap of 5 dropped");
    cr_assert_eq(queued_of(1), 5);
    uint32_t left = 0;
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        left += pt_exists(key);
    }
    cr_assert_eq(left, 5, "the queued ones stay");
    struct pool_offload_stats st;
    pool_offload_get_stats(P, &st);
    cr_assert_eq(st.force_evicted, 15);
    pt_check();
    pt_destroy();
}

Test(pool_offload, unmount_and_expiry_drop_disk_replicas) {
    make_pool(0, 0, 100, 0.5);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    put_on(1, "mem", "a", 0);
    struct pool_offload_task t[4];
    cr_assert_eq(fetch(1, 4, 0, t), 1);
    cr_assert_eq(done(1, "mem", OBJ, 0), 0, "a disk copy of an object in a");
    cr_assert_eq(done(1, "disk", 77, 0), 0, "re-registration creates a disk-only object");
    cr_assert_eq(count_type("disk", POOL_REPLICA_LOCAL_DISK), 1);
    struct pool_object_info info;
    cr_assert_eq(pool_object_query(P, "disk", 4, &info), 0);
    cr_assert_eq(info.size, 77);
    pt_check();
    struct pool_uuid id = pt_id(1);
    cr_assert_eq(pool_disk_unmount(P, &id, 1), 0);
    cr_assert_eq(pt_exists("disk"), 0, "disk-only object gone");
    cr_assert_eq(count_type("mem", POOL_REPLICA_MEMORY), 1, "memory replica stays");
    cr_assert_eq(count_type("mem", POOL_REPLICA_LOCAL_DISK), 0);
    pt_check();
    /* Expiry: client 1 goes silent; its disk replicas go with it. */
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    cr_assert_eq(done(1, "disk2", 99, 0), 0);
    cr_assert_eq(done(1, "mem", OBJ, 0), POOL_EOBJECT_ALREADY_EXISTS,
                 "a report never attaches to a live value it did not fetch");
    struct pool_uuid id2 = pt_id(2);
    struct pool_ping_reply pr;
    pool_client_ping(P, &id2, 20000, &pr);
    struct pool_tick_report rep;
    pool_tick(P, 20000, &rep);
    cr_assert_eq(rep.clients_expired, 1);
    cr_assert_eq(pt_exists("disk2"), 0);
    cr_assert_eq(pt_exists("mem"), 0, "its segment went with it");
    struct pool_offload_stats st;
    pool_offload_get_stats(P, &st);
    cr_assert_eq(st.disks, 0);
    cr_assert_eq(st.disk_replicas, 0);
    pt_check();
    pt_destroy();
}

Test(pool_offload, upsert_of_disk_object_reallocates) {
    make_pool(0, 0, 100, 0.5);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    put_on(1, "u", "a", 0);
    struct pool_offload_task t[4];
    cr_assert_eq(fetch(1, 4, 0, t), 1);
    cr_assert_eq(done(1, "u", OBJ, 0), 0);
    struct pool_uuid id = pt_id(1);
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pool_upsert_start(P, &id, "u", 1, OBJ, &cfg, 1, d, &nd), 0);
    cr_assert_eq(nd, 1);
    cr_assert_eq(d[0].type, POOL_REPLICA_MEMORY);
    cr_assert_eq(done(1, "u", OBJ, 2), POOL_EOBJECT_ALREADY_EXISTS, "not fetched");
    cr_assert_eq(pool_upsert_end(P, &id, "u", 1, 3), 0);
    cr_assert_eq(count_type("u", POOL_REPLICA_LOCAL_DISK), 0, "the old disk copy is stale");
    struct pool_offload_stats st;
    pool_offload_get_stats(P, &st);
    cr_assert_eq(st.disk_replicas, 0);
    pt_check();
    pt_destroy();
}

Test(pool_offload, late_report_of_a_replaced_value_is_refused) {
    make_pool(0, 0, 100, 0.5);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    put_on(1, "r", "a", 0);
    put_on(1, "g", "a", 0);
    struct pool_offload_task t[4];
    cr_assert_eq(fetch(1, 4, 0, t), 2);
    /* r is deleted (Redis DEL ignores the lease) and written again while being copied. */
    cr_assert_eq(pool_unlink(P, "r", 1, 1), 0);
    put_on(1, "r", "a", 2);
    cr_assert_eq(done(1, "r", OBJ, 3), POOL_EOBJECT_NOT_FOUND, "old bytes, new value");
    cr_assert_eq(count_type("r", POOL_REPLICA_LOCAL_DISK), 0);
    /* g is deleted for good: the late report does not resurrect it. */
    cr_assert_eq(pool_unlink(P, "g", 1, 4), 0);
    cr_assert_eq(done(1, "g", OBJ, 5), POOL_EOBJECT_NOT_FOUND);
    cr_assert_eq(pt_exists("g"), 0);
    /* An in-place upsert after the fetch lease also invalidates the report. */
    cr_assert_eq(fetch(1, 4, 100, t), 1, "r was queued again at its put end");
    struct pool_uuid id = pt_id(1);
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pool_upsert_start(P, &id, "r", 1, OBJ, &cfg, 100000, d, &nd), 0);
    cr_assert_eq(pool_upsert_end(P, &id, "r", 1, 100001), 0);
    cr_assert_eq(fetch(1, 4, 100002, t), 1, "queued again by the upsert's end");
    cr_assert_eq(done(1, "r", OBJ, 100003), 0, "the new fetch is reported");
    cr_assert_eq(count_type("r", POOL_REPLICA_LOCAL_DISK), 1);
    pt_check();
    pt_destroy();
}

Test(pool_offload, promotion_gives_a_disk_only_object_memory_again) {
    make_pool(0, 0, 100, 0.5);
    struct pool_uuid id1 = pt_id(1), id2 = pt_id(2);
    struct pool_replica_desc d;
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    cr_assert_eq(done(1, "p", OBJ, 0), 0);
    cr_assert_eq(pool_promote_start(P, &id2, "p", 1, 1, &d), POOL_EUNAVAILABLE_IN_CURRENT_STATUS,
                 "promotion_on_hit off");
    pt_destroy();
    struct pool_config cfg;
    pool_config_default(&cfg);
    cfg.seed = 42;
    cfg.enable_offload = 1;
    cfg.promotion_on_hit = 1;
    pt_create(&cfg);
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    cr_assert_eq(pt_mount(2, "b", 0x20000000, 1 * MB, 0), 0);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    cr_assert_eq(done(1, "p", OBJ, 0), 0);
    cr_assert_eq(pool_promote_start(P, &id2, "q", 1, 1, &d), POOL_EOBJECT_NOT_FOUND);
    cr_assert_eq(pool_promote_start(P, &id2, "p", 1, 1, &d), 0);
    cr_assert_eq(d.type, POOL_REPLICA_MEMORY);
    cr_assert_eq(d.status, POOL_REPLICA_PROCESSING);
    cr_assert_str_eq(d.segment, "b");
    cr_assert_eq(pool_promote_start(P, &id2, "p", 1, 2, &d), POOL_EOBJECT_HAS_REPLICATION_TASK);
    pt_check();
    cr_assert_eq(pool_copy_end(P, &id2, "p", 1, 3), 0);
    cr_assert_eq(count_type("p", POOL_REPLICA_MEMORY), 1);
    cr_assert_eq(count_type("p", POOL_REPLICA_LOCAL_DISK), 1);
    cr_assert_eq(pool_promote_start(P, &id2, "p", 1, 4, &d), POOL_EOBJECT_ALREADY_EXISTS);
    /* Evicted again: back to disk only; a revoked promotion leaves it so. */
    pool_evict(P, 1000000, 100 * MB);
    cr_assert_eq(count_type("p", POOL_REPLICA_MEMORY), 0);
    cr_assert_eq(pool_promote_start(P, &id2, "p", 1, 1000001, &d), 0);
    cr_assert_eq(pool_copy_revoke(P, &id2, "p", 1, 1000002), 0);
    cr_assert_eq(count_type("p", POOL_REPLICA_MEMORY), 0);
    cr_assert_eq(count_type("p", POOL_REPLICA_LOCAL_DISK), 1);
    (void)id1;
    pt_check();
    pt_destroy();
}

Test(pool_offload, read_hits_of_disk_only_objects_admit_promotion_at_the_threshold) {
    struct pool_config cfg;
    pool_config_default(&cfg);
    cr_assert_eq(cfg.promotion_admission_threshold, 2, "Mooncake's default");
    cfg.seed = 42;
    cfg.enable_offload = 1;
    cfg.promotion_on_hit = 1;
    cfg.promotion_admission_threshold = 3;
    pt_create(&cfg);
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    cr_assert_eq(pt_mount(2, "b", 0x20000000, 1 * MB, 0), 0);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    cr_assert_eq(done(1, "p", OBJ, 0), 0);
    put_on(2, "m", "b", 0); /* a memory object is never counted */
    cr_assert_eq(pool_offload_read_hit(P, "m", 1), 0);
    cr_assert_eq(pool_offload_read_hit(P, "absent", 6), 0);
    struct pool_offload_stats st;
    pool_offload_get_stats(P, &st);
    cr_assert_eq(st.disk_reads, 0);
    cr_assert_eq(pool_offload_read_hit(P, "p", 1), 0, "read 1 of 3");
    cr_assert_eq(pool_offload_read_hit(P, "p", 1), 0, "read 2 of 3");
    cr_assert_eq(pool_offload_read_hit(P, "p", 1), 1, "read 3: promote");
    cr_assert_eq(pool_offload_read_hit(P, "p", 1), 1, "unpromoted: every later read says so");
    struct pool_uuid id2 = pt_id(2);
    struct pool_replica_desc d;
    cr_assert_eq(pool_promote_start(P, &id2, "p", 1, 1, &d), 0);
    cr_assert_eq(pool_offload_read_hit(P, "p", 1), 0, "a promotion in flight: no second one");
    cr_assert_eq(pool_copy_revoke(P, &id2, "p", 1, 2), 0);
    /* The promotion reset the count: three more reads. */
    cr_assert_eq(pool_offload_read_hit(P, "p", 1), 0);
    cr_assert_eq(pool_offload_read_hit(P, "p", 1), 0);
    cr_assert_eq(pool_offload_read_hit(P, "p", 1), 1);
    cr_assert_eq(pool_promote_start(P, &id2, "p", 1, 3, &d), 0);
    cr_assert_eq(pool_copy_end(P, &id2, "p", 1, 4), 0);
    cr_assert_eq(pool_offload_read_hit(P, "p", 1), 0, "in memory: not counted");
    pool_offload_get_stats(P, &st);
    cr_assert_eq(st.disk_reads, 8);
    pt_check();
    pt_destroy();
    /* promotion_on_hit off: counted, never admitted. */
    pool_config_default(&cfg);
    cfg.seed = 42;
    cfg.enable_offload = 1;
    cfg.promotion_admission_threshold = 1;
    pt_create(&cfg);
    pt_client(1, "hostA", 0);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    cr_assert_eq(done(1, "p", OBJ, 0), 0);
    cr_assert_eq(pool_offload_read_hit(P, "p", 1), 0);
    pool_offload_get_stats(P, &st);
    cr_assert_eq(st.disk_reads, 1);
    pt_destroy();
    cfg.promotion_admission_threshold = 0;
    struct pool *bad = NULL;
    cr_assert_eq(pool_create(&cfg, &bad), POOL_EINVALID_PARAMS, "threshold 0 is refused");
}

static uint64_t removes_of(int n) {
    struct pool_uuid id = pt_id(n);
    struct pool_disk_info info;
    cr_assert_eq(pool_disk_query(P, &id, &info), 0);
    return info.removes;
}

/* Pops client n's record removals; returns them sorted and joined with ',' in buf. */
static const char *pop_removes(int n, char *buf, size_t cap) {
    struct pool_uuid id = pt_id(n);
    struct pool_disk_remove r[8];
    long k = pool_disk_remove_fetch(P, &id, 8, 0, r);
    cr_assert_geq(k, 0);
    for (long i = 1; i < k; i++)
        for (long j = i; j > 0 && strcmp(r[j - 1].key, r[j].key) > 0; j--) {
            struct pool_disk_remove t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
    buf[0] = '\0';
    for (long i = 0; i < k; i++) {
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s%.*s", i ? "," : "", (int)r[i].klen,
                 r[i].key);
        cm_free(r[i].key);
    }
    return buf;
}

Test(pool_offload, removals_are_queued_for_the_owner_and_cancelled_by_a_new_copy) {
    make_pool(0, 0, 100, 0.5);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    for (const char *k = "123"; *k; k++) {
        char key[4] = {'d', *k, 0};
        cr_assert_eq(done(1, key, OBJ, 0), 0);
    }
    cr_assert_eq(pool_unlink(P, "d1", 2, 1), 0);
    cr_assert_eq(pool_remove(P, "d2", 2, 1, 1), 0);
    cr_assert_eq(removes_of(1), 2);
    /* An upsert over a disk-only object queues its record; the new value's fetch cancels it. */
    struct pool_uuid id = pt_id(1);
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    const char *pref[1] = {"a"}; /* client 1's segment: its disk gets the new value */
    cfg.preferred_segments = pref;
    cfg.npreferred = 1;
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pool_upsert_start(P, &id, "d3", 2, OBJ, &cfg, 2, d, &nd), 0);
    cr_assert_eq(removes_of(1), 3);
    cr_assert_eq(pool_upsert_end(P, &id, "d3", 2, 3), 0);
    struct pool_offload_task t[4];
    cr_assert_eq(fetch(1, 4, 4, t), 1);
    cr_assert_eq(removes_of(1), 2, "d3 is about to be written again");
    char buf[64];
    cr_assert_str_eq(pop_removes(1, buf, sizeof(buf)), "d1,d2");
    cr_assert_eq(removes_of(1), 0);
    struct pool_offload_stats st;
    pool_offload_get_stats(P, &st);
    cr_assert_eq(st.removes_queued, 3);
    cr_assert_eq(st.removes_fetched, 2);
    pt_check();
    /* Unmount with removals queued: they go with the disk. */
    cr_assert_eq(done(1, "g", 5, 5), 0);
    cr_assert_eq(pool_unlink(P, "g", 1, 6), 0);
    cr_assert_eq(removes_of(1), 1);
    cr_assert_eq(pool_disk_unmount(P, &id, 7), 0);
    pt_check();
    pt_destroy();
}

Test(pool_offload, evicted_report_drops_the_owners_replica_only) {
    make_pool(0, 0, 100, 0.5);
    cr_assert_eq(disk_mount(1, "127.0.0.1:7000"), 0);
    cr_assert_eq(disk_mount(2, "127.0.0.1:7001"), 0);
    put_on(1, "m", "a", 0);
    struct pool_offload_task t[4];
    cr_assert_eq(fetch(1, 4, 0, t), 1);
    cr_assert_eq(done(1, "m", OBJ, 0), 0);
    cr_assert_eq(done(1, "e", 5, 0), 0);
    cr_assert_eq(done(2, "e", 5, 0), POOL_EOBJECT_ALREADY_EXISTS);
    struct pool_uuid id1 = pt_id(1), id2 = pt_id(2);
    cr_assert_eq(pool_offload_evicted(P, &id2, "e", 1, 1), POOL_EILLEGAL_CLIENT);
    cr_assert_eq(pool_offload_evicted(P, &id1, "e", 1, 1), 0);
    cr_assert_eq(pt_exists("e"), 0, "a disk-only object goes with its last replica");
    cr_assert_eq(pool_offload_evicted(P, &id1, "e", 1, 1), POOL_EOBJECT_NOT_FOUND);
    cr_assert_eq(pool_offload_evicted(P, &id1, "m", 1, 1), 0);
    cr_assert_eq(count_type("m", POOL_REPLICA_MEMORY), 1, "its memory replica stays");
    cr_assert_eq(count_type("m", POOL_REPLICA_LOCAL_DISK), 0);
    cr_assert_eq(pool_offload_evicted(P, &id1, "m", 1, 1), POOL_EREPLICA_NOT_FOUND);
    cr_assert_eq(removes_of(1), 0, "the owner's own loss queues no removal");
    struct pool_offload_stats st;
    pool_offload_get_stats(P, &st);
    cr_assert_eq(st.disk_evicted, 2);
    cr_assert_eq(st.disk_replicas, 0);
    pt_check();
    pt_destroy();
}
