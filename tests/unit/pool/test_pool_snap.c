/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool snapshots (pool_snap.c): a pool written and loaded into a fresh pool has the same
 * clients, segments, objects and replica addresses; buffers of writes in flight stay reserved;
 * every corruption (a flipped byte, truncation, a wrong version, overlapping buffers) is
 * refused with a reason; a non-empty pool is refused.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "storage/sto_record.h"
#include "tests/unit/pool/pool_test.h"

#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t snap_epoch; /* epoch snap_bytes() writes: 0 = without HA */

/* Writes P to a memfd and returns its bytes (caller frees) and length. */
static uint8_t *snap_bytes(int64_t now, size_t *len, struct pool_snap_meta *meta) {
    int fd = memfd_create("snap", 0);
    cr_assert_geq(fd, 0);
    meta->epoch = snap_epoch;
    meta->last_seq = 1234;
    meta->created_ms = 1700000000000;
    cr_assert_eq(pool_snapshot_write(P, now, fd, meta), 0);
    off_t n = lseek(fd, 0, SEEK_END);
    cr_assert_eq((uint64_t)n, meta->bytes);
    uint8_t *buf = cm_malloc((size_t)n);
    cr_assert_eq(pread(fd, buf, (size_t)n, 0), n);
    close(fd);
    *len = (size_t)n;
    return buf;
}

static struct pool *fresh_pool(void) {
    struct pool_config cfg;
    pool_config_default(&cfg);
    cfg.seed = 43;
    struct pool *q;
    cr_assert_eq(pool_create(&cfg, &q), 0);
    return q;
}

static void setup(void) {
    pt_create(NULL);
    pt_client(1, "hostA", 0);
    pt_client(2, "hostB", 0);
    cr_assert_eq(pt_mount(1, "a", 0x10000000, 4 * MB, 0), 0);
    cr_assert_eq(pt_mount(1, "b", 0x20000000, 4 * MB, 0), 0);
    cr_assert_eq(pt_mount(2, "c", 0x10000000, 4 * MB, 0), 0);
}

TestSuite(pool_snap, .init = setup, .fini = pt_destroy);

/* Compares key in P and q: same size, pins and replica addresses (as a set). */
static void same_object(struct pool *q, const char *key) {
    struct pool_object_info a, b;
    cr_assert_eq(pool_object_query(P, key, strlen(key), &a), 0, "%s in the original", key);
    cr_assert_eq(pool_object_query(q, key, strlen(key), &b), 0, "%s restored", key);
    cr_assert_eq(a.size, b.size);
    cr_assert_eq(a.nreplicas, b.nreplicas);
    cr_assert_eq(a.hard_pinned, b.hard_pinned);
    for (uint32_t i = 0; i < a.nreplicas; i++) {
        int found = 0;
        for (uint32_t j = 0; j < b.nreplicas; j++)
            found |= strcmp(a.replicas[i].segment, b.replicas[j].segment) == 0 &&
                     a.replicas[i].addr == b.replicas[j].addr &&
                     b.replicas[j].status == POOL_REPLICA_COMPLETE;
        cr_assert(found, "%s: replica %u at %s+%llx restored", key, i, a.replicas[i].segment,
                  (unsigned long long)a.replicas[i].addr);
    }
}

Test(pool_snap, round_trip_keeps_objects_addresses_and_reservations) {
    struct pool_put_config two;
    pool_put_config_default(&two);
    two.replica_num = 2;
    struct pool_put_config pin;
    pool_put_config_default(&pin);
    pin.with_hard_pin = 1;
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    char key[32];
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "obj-%d", i);
        cr_assert_geq(pt_put(1 + i % 2, key, 1 + (uint64_t)i * 37, i % 3 ? &two : NULL, 1, d), 1);
    }
    cr_assert_eq(pt_put(1, "pinned", 5000, &pin, 1, d), 1);
    for (int i = 0; i < 300; i += 5) { /* holes */
        snprintf(key, sizeof(key), "obj-%d", i);
        cr_assert_eq(pt_remove(key, 1, 2), 0);
    }
    size_t nd;
    cr_assert_eq(pt_start(2, "in-flight", 100000, NULL, 3, d, &nd), 0); /* not durable */
    pt_check();

    size_t len;
    struct pool_snap_meta meta;
    uint8_t *buf = snap_bytes(4, &len, &meta);
    cr_assert_eq(meta.objects, 241, "240 left of 300, the pinned one; not the write in flight");

    struct pool *q = fresh_pool();
    struct pool_snap_meta got;
    char err[256] = "";
    cr_assert_eq(pool_snapshot_load(q, buf, len, 1000, &got, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(got.epoch, 0);
    cr_assert_eq(got.last_seq, 1234);
    cr_assert_eq(got.created_ms, 1700000000000);
    cr_assert_eq(got.objects, 241);
    cr_assert_eq(pool_check(q), 0);
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof(key), "obj-%d", i);
        if (i % 5 == 0)
            cr_assert_eq(pool_exist(q, key, strlen(key), 1000), 0);
        else
            same_object(q, key);
    }
    same_object(q, "pinned");
    cr_assert_eq(pool_exist(q, "in-flight", 9, 1000), 0);

    /* Same accounting: the in-flight write's buffer is still reserved (a discard). */
    struct pool_stats sa, sb;
    pool_get_stats(P, &sa);
    pool_get_stats(q, &sb);
    cr_assert_eq(sb.clients, 2);
    cr_assert_eq(sb.segments, 3);
    cr_assert_eq(sb.used, sa.used);
    cr_assert_eq(sb.allocated, sa.allocated);
    cr_assert_eq(sb.discarded, 1);
    cr_assert_eq(sb.inflight, 0);

    /* New puts in the restored pool never overlap restored buffers (pool_check verifies). */
    struct pool *keep = P;
    P = q;
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "new-%d", i);
        cr_assert_geq(pt_put(1 + i % 2, key, 4000, NULL, 1001, d), 1);
    }
    pt_check();
    struct pool_ping_reply pr;
    struct pool_uuid id1 = pt_id(1);
    cr_assert_eq(pool_client_ping(P, &id1, 1002, &pr), 0);
    cr_assert_eq(pr.status, POOL_CLIENT_OK, "restored clients are alive");
    pool_destroy(q);
    P = keep;
    cm_free(buf);
}

/* An HA leader's snapshot (epoch > 0) keeps no reservation: the op-log after it may place an
   object in the buffer of a write that was in flight at the fork. */
Test(pool_snap, ha_snapshot_reserves_no_buffer_of_a_write_in_flight) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    cr_assert_eq(pt_put(1, "done", 4096, NULL, 1, d), 1);
    cr_assert_eq(pt_start(1, "in-flight", 100000, NULL, 2, d, &nd), 0);
    uint64_t addr = d[0].addr;
    char seg[64];
    snprintf(seg, sizeof(seg), "%s", d[0].segment);
    snap_epoch = 7;
    size_t len;
    struct pool_snap_meta meta;
    uint8_t *buf = snap_bytes(3, &len, &meta);
    snap_epoch = 0;
    struct pool *q = fresh_pool();
    struct pool_snap_meta got;
    char err[256] = "";
    cr_assert_eq(pool_snapshot_load(q, buf, len, 1000, &got, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(got.epoch, 7);
    cr_assert_eq(got.last_seq, 1234);
    cr_assert_eq(got.objects, 1);
    struct pool_stats sb;
    pool_get_stats(q, &sb);
    cr_assert_eq(sb.discarded, 0, "nothing reserved");
    struct pool_restore_replica rep = {.segment = seg, .addr = addr};
    cr_assert_eq(pool_object_restore(q, "in-flight", 9, 100000, 0, 0, &rep, 1, 1001), 0,
                 "the put that ended after the snapshot is restored at its address");
    cr_assert_eq(pool_check(q), 0);
    pool_destroy(q);
    cm_free(buf);
}

Test(pool_snap, empty_pool_and_graceful_segment) {
    struct pool_uuid id1 = pt_id(1);
    cr_assert_eq(pool_segment_unmount_graceful(P, &id1, "b", 60000, 10), 0);
    size_t len;
    struct pool_snap_meta meta;
    uint8_t *buf = snap_bytes(10, &len, &meta);
    struct pool *q = fresh_pool();
    char err[256];
    cr_assert_eq(pool_snapshot_load(q, buf, len, 500, &meta, err, sizeof(err)), 0, "%s", err);
    struct pool_segment_info info;
    cr_assert_eq(pool_segment_query(q, "b", &info), 0);
    cr_assert_eq(info.status, POOL_SEG_GRACEFULLY_UNMOUNTING);
    cr_assert_eq(info.grace_until, 500 + 60000, "the remaining grace carries over");
    cr_assert_eq(pool_segment_query(q, "a", &info), 0);
    cr_assert_eq(info.status, POOL_SEG_OK);
    cr_assert_eq(info.base, 0x10000000);
    cr_assert_str_eq(info.endpoint, "127.0.0.1:1");
    cr_assert_str_eq(info.owner_host, "hostA");
    cr_assert_eq(pool_check(q), 0);
    /* A non-empty pool is refused. */
    cr_assert_eq(pool_snapshot_load(q, buf, len, 500, &meta, err, sizeof(err)), -EINVAL);
    pool_destroy(q);
    cm_free(buf);
}

/* Loads buf into a fresh pool and expects -CM_ECORRUPT with want in the message. */
static void refused(const uint8_t *buf, size_t len, const char *want) {
    struct pool *q = fresh_pool();
    struct pool_snap_meta meta;
    char err[256] = "";
    cr_assert_eq(pool_snapshot_load(q, buf, len, 0, &meta, err, sizeof(err)), -CM_ECORRUPT,
                 "expected a refusal (%s)", want);
    cr_assert(strstr(err, want) != NULL, "message '%s' mentions '%s'", err, want);
    pool_destroy(q);
}

/* Recomputes the trailer's CRC after an edit of the body. */
static void reseal(uint8_t *buf, size_t len) {
    uint32_t crc = sto_crc32c(0, buf, len - 24);
    for (int i = 0; i < 4; i++)
        buf[len - 8 + i] = (uint8_t)(crc >> (8 * i));
}

Test(pool_snap, corruption_is_refused_with_a_reason) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        cr_assert_eq(pt_put(1, key, 1000, NULL, 1, d), 1);
    }
    size_t len;
    struct pool_snap_meta meta;
    uint8_t *buf = snap_bytes(2, &len, &meta);
    uint8_t *bad = cm_malloc(len);

    for (size_t at = 0; at < len; at += 97) { /* any flipped byte */
        memcpy(bad, buf, len);
        bad[at] ^= 0x40;
        struct pool *q = fresh_pool();
        char err[256];
        cr_assert_eq(pool_snapshot_load(q, bad, len, 0, &meta, err, sizeof(err)), -CM_ECORRUPT,
                     "flip at %zu", at);
        pool_destroy(q);
    }
    refused(buf, len / 2, "truncated");
    refused(buf, 10, "not a Crescent snapshot");
    memcpy(bad, buf, len);
    bad[len - 8] ^= 1; /* the CRC field of the trailer */
    refused(bad, len, "checksum mismatch");
    memcpy(bad, buf, len);
    bad[8] = 9; /* version 9 */
    reseal(bad, len);
    refused(bad, len, "version 9");
    memcpy(bad, buf, len);
    bad[56] = 0xff; /* object count beyond the file */
    reseal(bad, len);
    refused(bad, len, "out of range");
    cm_free(bad);
    cm_free(buf);
}

Test(pool_snap, overlapping_buffers_are_refused) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    struct pool_put_config on_a;
    pool_put_config_default(&on_a);
    const char *names[] = {"a"};
    on_a.preferred_segments = names;
    on_a.npreferred = 1;
    cr_assert_eq(pt_put(1, "x", 1000, &on_a, 1, d), 1);
    cr_assert_eq(pt_put(1, "y", 1000, &on_a, 1, d), 1);
    size_t len;
    struct pool_snap_meta meta;
    uint8_t *buf = snap_bytes(2, &len, &meta);
    /* Make y's offset equal x's: find the two 8-byte offsets after the keys "x" and "y". */
    uint8_t *kx = memmem(buf + 64, len - 64, "\x01\x00x", 3);
    uint8_t *ky = memmem(buf + 64, len - 64, "\x01\x00y", 3);
    cr_assert(kx && ky);
    /* key (3) + size (8) + flags (1) + nrep (1) + segment index (4), then the offset */
    memcpy(ky + 17, kx + 17, 8);
    reseal(buf, len);
    refused(buf, len, "overlap");
    cm_free(buf);
}
