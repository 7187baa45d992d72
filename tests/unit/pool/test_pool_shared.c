/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool scenarios for a shared segment (pool_segment_mount_shared): buffers come from an
 * allocator the pool shares with another user (the master's keyspace), whose bytes count as
 * pressure; its owner never expires; snapshots and restores leave it out; every buffer goes
 * back to the shared allocator (removal, unmount, pool destruction).
 */
#include "common/fmacros.h"

#include "common/cm_tlsf.h"
#include "tests/unit/pool/pool_test.h"

#include <unistd.h>

/* The "other user": a TLSF the test owns, plus bytes it holds itself. */
static struct cm_tlsf *T;
static uint64_t other_bytes;
static uint64_t live_blocks;

static uint32_t sh_alloc(void *arg, uint64_t len, uint64_t *off) {
    (void)arg;
    uint32_t h = cm_tlsf_alloc(T, len, off);
    live_blocks += h != 0;
    return h;
}
static void sh_free(void *arg, uint32_t h) {
    (void)arg;
    live_blocks--;
    cm_tlsf_free(T, h);
}
static uint64_t sh_offset(void *arg, uint32_t h) {
    (void)arg;
    return cm_tlsf_block_offset(T, h);
}
static uint64_t sh_size(void *arg, uint32_t h) {
    (void)arg;
    return cm_tlsf_block_size(T, h);
}
static uint64_t sh_used(void *arg) {
    (void)arg;
    struct cm_tlsf_stats st;
    cm_tlsf_get_stats(T, &st);
    return st.used + other_bytes;
}

static const struct pool_seg_allocator SH = {sh_alloc, sh_free, sh_offset, sh_size, sh_used, NULL};

static int mount_shared(int n, const char *name, uint64_t size, int64_t now) {
    struct pool_uuid id = pt_id(n);
    struct pool_segment_spec spec = {.name = name,
                                     .base = 0x7f0000000000ull,
                                     .size = size,
                                     .endpoint = "127.0.0.1:2",
                                     .protocol = "tcp"};
    return pool_segment_mount_shared(P, &id, &spec, &SH, now);
}

static void setup(void) {
    pt_create(NULL);
    T = cm_tlsf_create(4 * MB, 8);
    other_bytes = 0;
    live_blocks = 0;
    pt_client(9, "127.0.0.1", 0);
    cr_assert_eq(mount_shared(9, "master@127.0.0.1:1", 4 * MB, 0), 0);
}

static void teardown(void) {
    pt_destroy();
    cr_assert_eq(live_blocks, 0, "every shared block went back (%llu left)",
                 (unsigned long long)live_blocks);
    cm_tlsf_destroy(T);
}

TestSuite(pool_shared, .init = setup, .fini = teardown);

Test(pool_shared, puts_land_in_the_shared_allocator_and_go_back) {
    pt_client(1, "hostA", 0);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    cr_assert_eq(pt_put(1, "k", 1000, NULL, 0, d), 1);
    cr_assert_str_eq(d[0].segment, "master@127.0.0.1:1");
    cr_assert_eq(live_blocks, 1);
    cr_assert_geq(d[0].addr, 0x7f0000000000ull);
    cr_assert_lt(d[0].addr, 0x7f0000000000ull + 4 * MB);
    cr_assert_eq(pt_seg_used("master@127.0.0.1:1"), 1000, "used = the allocator's bytes");
    other_bytes = 5000; /* the keyspace stores values too */
    cr_assert_eq(pt_seg_used("master@127.0.0.1:1"), 6000);
    struct pool_stats st;
    pool_get_stats(P, &st);
    cr_assert_eq(st.used, 1000, "pool statistics count the pool's own buffers");
    pt_check();
    cr_assert_eq(pt_remove("k", 0, 0), 0);
    cr_assert_eq(live_blocks, 0);
    other_bytes = 0;
    cr_assert_eq(pt_seg_used("master@127.0.0.1:1"), 0);
    pt_check();
}

Test(pool_shared, owner_never_expires_and_remount_is_idempotent) {
    struct pool_tick_report r;
    pool_tick(P, 1000000, &r);
    cr_assert_eq(r.clients_expired, 0);
    struct pool_uuid id = pt_id(9);
    cr_assert_eq(pool_client_exists(P, &id), 1);
    cr_assert_eq(mount_shared(9, "master@127.0.0.1:1", 4 * MB, 1000000), 0);
    /* the same name as an ordinary segment is another geometry */
    cr_assert_eq(pt_mount(9, "master@127.0.0.1:1", 0x7f0000000000ull, 4 * MB, 1000000),
                 POOL_ESEGMENT_ALREADY_EXISTS);
    struct pool_seg_allocator bad = SH;
    bad.used = NULL;
    struct pool_segment_spec spec = {.name = "x", .base = 1 << 20, .size = MB};
    cr_assert_eq(pool_segment_mount_shared(P, &id, &spec, &bad, 0), POOL_EINVALID_PARAMS);
}

Test(pool_shared, other_users_bytes_drive_eviction) {
    pt_client(1, "hostA", 0);
    for (int i = 0; i < 20; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%d", i);
        pt_put(1, k, 10000, NULL, i, NULL);
    }
    pt_ping(1, 100);
    struct pool_tick_report r;
    pool_tick(P, 100, &r);
    cr_assert_eq(r.objects_evicted, 0, "200 kB of 4 MiB: below the watermark");
    other_bytes = 4 * MB - 100000; /* the keyspace fills the segment */
    pt_ping(1, 200);
    pool_tick(P, 200, &r);
    cr_assert_gt(r.objects_evicted, 0, "the shared bytes push the pool over the watermark");
    pt_check();
}

Test(pool_shared, evict_segment_takes_only_objects_on_it) {
    pt_client(1, "hostA", 0);
    cr_assert_eq(pt_mount(1, "a", 0x100000, 4 * MB, 0), 0);
    const char *on_m[] = {"master@127.0.0.1:1"}, *on_a[] = {"a"};
    struct pool_put_config cm, ca;
    pool_put_config_default(&cm);
    pool_put_config_default(&ca);
    cm.preferred_segments = on_m;
    cm.npreferred = 1;
    ca.preferred_segments = on_a;
    ca.npreferred = 1;
    for (int i = 0; i < 10; i++) {
        char k[16];
        snprintf(k, sizeof(k), "a%d", i);
        pt_put(1, k, 1000, &ca, i, NULL); /* older: evicted first by pool_evict */
    }
    for (int i = 0; i < 10; i++) {
        char k[16];
        snprintf(k, sizeof(k), "m%d", i);
        pt_put(1, k, 1000, &cm, 100 + i, NULL);
    }
    cr_assert_eq(pool_evict_segment(P, "nope", 1000, 1), 0);
    uint64_t n = pool_evict_segment(P, "master@127.0.0.1:1", 100000, 2500);
    cr_assert_eq(n, 3, "3 objects of 1000 bytes free 2500");
    for (int i = 0; i < 10; i++) {
        char k[16];
        snprintf(k, sizeof(k), "a%d", i);
        cr_assert(pt_exists(k), "%s is on another segment", k);
    }
    cr_assert_eq(pt_seg_used("master@127.0.0.1:1"), 7000);
    pt_check();
}

Test(pool_shared, unmount_and_destroy_give_every_block_back) {
    pt_client(1, "hostA", 0);
    for (int i = 0; i < 5; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%d", i);
        pt_put(1, k, 3000, NULL, 0, NULL);
    }
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_start(1, "inflight", 100, NULL, 0, d, &nd), 0); /* a write in flight */
    cr_assert_eq(live_blocks, 6);
    struct pool_uuid id = pt_id(9);
    cr_assert_eq(pool_segment_unmount(P, &id, "master@127.0.0.1:1", 0), 0);
    cr_assert_eq(live_blocks, 0);
    cr_assert_eq(mount_shared(9, "master@127.0.0.1:1", 4 * MB, 0), 0);
    pt_put(1, "again", 3000, NULL, 0, NULL);
    cr_assert_eq(live_blocks, 1); /* pool_destroy in teardown frees it */
}

Test(pool_shared, snapshots_and_restores_leave_it_out) {
    pt_client(1, "hostA", 0);
    cr_assert_eq(pt_mount(1, "a", 0x100000, 4 * MB, 0), 0);
    struct pool_put_config two;
    pool_put_config_default(&two);
    two.replica_num = 2;
    cr_assert_eq(pt_put(1, "both", 1000, &two, 0, NULL), 2);
    const char *on_m[] = {"master@127.0.0.1:1"};
    struct pool_put_config cm;
    pool_put_config_default(&cm);
    cm.preferred_segments = on_m;
    cm.npreferred = 1;
    pt_put(1, "only-m", 1000, &cm, 0, NULL);
    char path[] = "/tmp/pool-shared-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    struct pool_snap_meta meta = {0};
    cr_assert_eq(pool_snapshot_write(P, 0, fd, &meta), 0);
    cr_assert_eq(meta.objects, 1, "only the object with a replica on segment a");
    off_t len = lseek(fd, 0, SEEK_END);
    char *buf = malloc((size_t)len);
    cr_assert_eq(pread(fd, buf, (size_t)len, 0), len);
    close(fd);
    struct pool *q;
    struct pool_config cfg;
    pool_config_default(&cfg);
    cr_assert_eq(pool_create(&cfg, &q), 0);
    char err[128];
    cr_assert_eq(pool_snapshot_load(q, buf, (size_t)len, 0, &meta, err, sizeof(err)), 0, "%s", err);
    struct pool_segment_info info;
    cr_assert_eq(pool_segment_query(q, "master@127.0.0.1:1", &info), POOL_ESEGMENT_NOT_FOUND);
    struct pool_object_info oi;
    cr_assert_eq(pool_object_query(q, "both", 4, &oi), 0);
    cr_assert_eq(oi.nreplicas, 1);
    cr_assert_str_eq(oi.replicas[0].segment, "a");
    pool_destroy(q);
    free(buf);
    struct pool_restore_replica rr = {"master@127.0.0.1:1", 0x7f0000000000ull + 8192};
    cr_assert_eq(pool_object_restore(P, "r", 1, 100, 0, 0, &rr, 1, 0), POOL_EINVALID_REPLICA);
}
