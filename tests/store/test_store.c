/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcrescent's store API against a real crescent-master and forked peer clients, linked with
 * the shared library as applications do: replicas on distinct segments over tcp and shm, a
 * killed peer's replicas expire and reads fall back to the other replica, leases, upsert,
 * regex and batch forms, a 1 B .. 64 MiB sweep, zero-copy (no staging) counters, a master
 * restart followed by a remount, LEASE_EXPIRED, the metrics summary line, bad input, and every
 * pool byte freed after remove_all.
 */
#include "common/fmacros.h"

#include "crescent/store.h"
#include "crescent/transfer.h"
#include "tests/store/store_test_util.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1u << 20)

static struct st_master master;
static redisContext *rc;

/* The peers' segments are the pool's only ones here: the master's embedded segment stays out
 * (tests/store/test_embedded.c covers it). */
#define NO_EMBEDDED " --embedded_segment_in_pool no"

static void setup(void) {
    st_master_start(&master, "--client_live_ttl_sec 3" NO_EMBEDDED);
    rc = st_redis(&master);
}

static void teardown(void) {
    redisFree(rc);
    st_master_stop(&master);
}

TestSuite(store, .init = setup, .fini = teardown, .timeout = 120);

static void check_get(struct crescent_store *st, const char *key, const void *want, size_t len) {
    void *v = NULL;
    size_t n = 0;
    OK(crescent_store_get(st, key, &v, &n));
    cr_assert_eq(n, len);
    cr_assert(memcmp(v, want, len) == 0, "%s: bytes differ", key);
    crescent_store_free(v);
}

static int wait_replicas(const char *key, int want) {
    char segs[8][256];
    long long deadline = st_now_ms() + 15000;
    int n;
    while ((n = st_replica_segments(rc, key, segs, 8)) != want && st_now_ms() < deadline) {
        st_sleep_ms(100);
    }
    return n;
}

/* put with replica_num 2 lands on the two peers; reads work from either; a killed peer's
 * replicas expire; an object whose only replica was there is gone. */
static void replicas_and_failover(const char *proto, int iface) {
    struct st_peer a, b;
    st_peer_start(&a, &master, proto, 32 * MIB);
    st_peer_start(&b, &master, proto, 32 * MIB);
    struct crescent_store *st = st_store(&master, proto, 0);
    size_t len = MIB + 7;
    char *val = malloc(len);
    st_fill(val, len, 1);
    struct crescent_store_replicate_config two = {.replica_num = 2};
    OK(crescent_store_put(st, "k", val, len, &two));
    char segs[8][256];
    cr_assert_eq(st_replica_segments(rc, "k", segs, 8), 2);
    cr_assert_str_neq(segs[0], segs[1]);
    for (int i = 0; i < 2; i++) {
        cr_assert(!strcmp(segs[i], a.segment) || !strcmp(segs[i], b.segment), "%s", segs[i]);
    }
    check_get(st, "k", val, len);
    const char *pref[] = {a.segment};
    struct crescent_store_replicate_config on_a = {
        .replica_num = 1, .preferred_segments = pref, .n_preferred_segments = 1};
    OK(crescent_store_put(st, "only-a", val, 100, &on_a));
    cr_assert_eq(st_replica_segments(rc, "only-a", segs, 8), 1);
    cr_assert_str_eq(segs[0], a.segment);
    struct crescent_store_metrics m;
    OK(crescent_store_metrics(st, &m));
    cr_assert_gt(m.read_ops[iface], 0, "no read over interface %d", iface);
    cr_assert_gt(m.write_ops[iface], 0);

    st_peer_kill(&a);
    check_get(st, "k", val, len); /* before expiry: a's replica fails, b's serves */
    cr_assert_eq(wait_replicas("k", 1), 1, "a's replica was not dropped");
    cr_assert_eq(st_replica_segments(rc, "k", segs, 8), 1);
    cr_assert_str_eq(segs[0], b.segment);
    check_get(st, "k", val, len);
    void *v = NULL;
    size_t n = 0;
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_get(st, "only-a", &v, &n));
    cr_assert_null(v);
    crescent_store_destroy(st);
    st_peer_kill(&b);
    free(val);
}

/* 1 when the fabric transport is built and its provider (libfabric's tcp;ofi_rxm, or
 * FI_PROVIDER) opens here. */
static bool fabric_ok(void) {
    struct crescent_xfer_opts o = CRESCENT_XFER_OPTS_INIT;
    o.listen = "";
    struct crescent_xfer_engine *e;
    if (crescent_xfer_engine_create(&o, &e) != 0) {
        return false;
    }
    bool ok = crescent_xfer_install(e, "fabric", NULL) == 0;
    crescent_xfer_engine_destroy(e);
    return ok;
}

#define NEED_FABRIC()                                                              \
    do {                                                                           \
        if (!fabric_ok()) {                                                        \
            cr_skip_test("no fabric transport or libfabric tcp;ofi_rxm provider"); \
        }                                                                          \
    } while (0)

Test(store, replicas_distinct_segments_and_failover_fabric) {
    NEED_FABRIC();
    replicas_and_failover("fabric", 3); /* metrics interface 3: other than local, shm, tcp */
}

Test(store, replicas_distinct_segments_and_failover_tcp) {
    replicas_and_failover("tcp", 2);
}

Test(store, replicas_distinct_segments_and_failover_shm) {
    replicas_and_failover("shm", 1);
}

Test(store, lease_blocks_remove_force_does_not) {
    struct crescent_store *st = st_store(&master, "tcp", 8 * MIB);
    OK(crescent_store_put(st, "leased", "hello", 5, NULL));
    check_get(st, "leased", "hello", 5);
    ERR(CRESCENT_STORE_EOBJECT_HAS_LEASE, crescent_store_remove(st, "leased", 0));
    OK(crescent_store_remove(st, "leased", 1));
    cr_assert_eq(crescent_store_is_exist(st, "leased"), 0);
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_remove(st, "leased", 1));
    struct crescent_store_replicate_config hard = {.with_hard_pin = 1};
    OK(crescent_store_put(st, "pinned", "x", 1, &hard));
    ERR(CRESCENT_STORE_EOBJECT_HAS_LEASE, crescent_store_remove(st, "pinned", 0));
    OK(crescent_store_remove(st, "pinned", 1));
    crescent_store_destroy(st);
}

Test(store, upsert_in_place_and_resized) {
    struct crescent_store *st = st_store(&master, "tcp", 8 * MIB);
    char a[4096], b[4096], c[8192];
    st_fill(a, sizeof(a), 1);
    st_fill(b, sizeof(b), 2);
    st_fill(c, sizeof(c), 3);
    OK(crescent_store_upsert(st, "u", a, sizeof(a), NULL)); /* missing key: a put */
    ERR(CRESCENT_STORE_EOBJECT_ALREADY_EXISTS, crescent_store_put(st, "u", b, sizeof(b), NULL));
    OK(crescent_store_upsert(st, "u", b, sizeof(b), NULL));
    check_get(st, "u", b, sizeof(b));
    OK(crescent_store_upsert(st, "u", c, sizeof(c), NULL)); /* another size, leased */
    check_get(st, "u", c, sizeof(c));
    cr_assert_eq(crescent_store_get_size(st, "u"), (int64_t)sizeof(c));
    crescent_store_destroy(st);
}

Test(store, regex_remove_all_and_no_leak) {
    struct crescent_store *st = st_store(&master, "tcp", 8 * MIB);
    const char *keys[] = {"a1", "a2", "b1"};
    for (int i = 0; i < 3; i++) {
        OK(crescent_store_put(st, keys[i], "value", 5, NULL));
    }
    cr_assert_gt(st_segments_used(rc), 0);
    cr_assert_eq(crescent_store_remove_by_regex(st, "^a[0-9]", 0), 2);
    cr_assert_eq(crescent_store_is_exist(st, "a1"), 0);
    cr_assert_eq(crescent_store_is_exist(st, "b1"), 1); /* grants a lease */
    cr_assert_eq(crescent_store_remove_all(st, 0), 0);  /* leased: skipped */
    cr_assert_eq(crescent_store_remove_all(st, 1), 1);
    cr_assert_eq(st_segments_used(rc), 0);
    ERR(CRESCENT_STORE_EINVALID_PARAMS, crescent_store_remove_by_regex(st, "(", 0));
    crescent_store_destroy(st);
}

Test(store, batch_forms) {
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 16 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 8 * MIB);
    const char *keys[] = {"b-0", "b-1", "b-2"};
    char vals[3][1000];
    const void *vp[3];
    size_t sizes[3] = {1000, 10, 999};
    for (int i = 0; i < 3; i++) {
        st_fill(vals[i], sizeof(vals[i]), 10 + i);
        vp[i] = vals[i];
    }
    int res[4];
    struct crescent_store_replicate_config two = {.replica_num = 2};
    OK(crescent_store_batch_put(st, keys, vp, sizes, 3, &two, res));
    cr_assert(res[0] == 0 && res[1] == 0 && res[2] == 0);
    void *out[3];
    size_t osz[3];
    int64_t gres[4];
    OK(crescent_store_batch_get(st, keys, 3, out, osz, gres));
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(osz[i], sizes[i]);
        cr_assert_eq(gres[i], (int64_t)sizes[i]);
        cr_assert(memcmp(out[i], vals[i], sizes[i]) == 0);
        crescent_store_free(out[i]);
    }
    const char *ek[] = {"b-0", "b-1", "b-2", "missing"};
    OK(crescent_store_batch_is_exist(st, ek, 4, res));
    cr_assert(res[0] == 1 && res[1] == 1 && res[2] == 1 && res[3] == 0);

    /* zero-copy batch from and into registered memory */
    char *reg = malloc(64 * 1024);
    OK(crescent_store_register_buffer(st, reg, 64 * 1024));
    const char *zk[] = {"z-0", "z-1"};
    const void *zb[] = {reg, reg + 4096};
    size_t zs[] = {4096, 5000};
    st_fill(reg, 9096, 99);
    OK(crescent_store_batch_put_from(st, zk, zb, zs, 2, &two, res));
    void *const into[] = {reg + 16384, reg + 32768};
    size_t caps[] = {16384, 16384};
    OK(crescent_store_batch_get_into(st, zk, into, caps, 2, gres));
    cr_assert(gres[0] == 4096 && gres[1] == 5000);
    cr_assert(memcmp(reg + 16384, reg, 4096) == 0 && memcmp(reg + 32768, reg + 4096, 5000) == 0);
    /* a key that fails alone */
    const char *mk[] = {"z-0", "nope"};
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND,
        crescent_store_batch_get_into(st, mk, into, caps, 2, gres));
    cr_assert_eq(gres[0], 4096);
    cr_assert_eq(gres[1], -CRESCENT_STORE_EOBJECT_NOT_FOUND);
    /* a batch whose second buffer is outside the registration: refused, naming that buffer */
    char *loose = malloc(4096);
    const void *lb[] = {reg, loose};
    size_t ls[] = {4096, 4096};
    ERR(CRESCENT_STORE_EINVALID_PARAMS,
        crescent_store_batch_put_from(st, zk, lb, ls, 2, &two, res));
    cr_assert(strstr(crescent_store_last_error(), "buffer 1 ") != NULL, "%s",
              crescent_store_last_error());
    void *const over[] = {reg + 16384, reg + 64 * 1024 - 100}; /* runs past its end */
    ERR(CRESCENT_STORE_EINVALID_PARAMS, crescent_store_batch_get_into(st, zk, over, caps, 2, gres));
    cr_assert(strstr(crescent_store_last_error(), "buffer 1 ") != NULL, "%s",
              crescent_store_last_error());
    free(loose);

    /* drop the replicas on our own segment only */
    char own[256];
    OK(crescent_store_segment_name(st, 0, own, sizeof(own)));
    char segs[8][256];
    int on_own = 0;
    for (int i = 0; i < 3; i++) {
        int n = st_replica_segments(rc, keys[i], segs, 8);
        for (int j = 0; j < n; j++) {
            on_own += !strcmp(segs[j], own);
        }
    }
    OK(crescent_store_remove_all(st, 1));
    OK(crescent_store_batch_put(st, keys, vp, sizes, 3, &two, res));
    OK(crescent_store_batch_replica_clear(st, keys, 3, own, res));
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(res[i], 1, "key %d: %d", i, res[i]);
        cr_assert_eq(st_replica_segments(rc, keys[i], segs, 8), 1);
        cr_assert_str_eq(segs[0], p.segment);
    }
    cr_assert_eq(on_own, 3);
    crescent_store_unregister_buffer(st, reg);
    free(reg);
    crescent_store_destroy(st);
    st_peer_kill(&p);
}

/* A batch of 300 keys (replies of several arena blocks) through put_from / get_into, then
 * batch_remove: per-key results, a leased key refused without force, nothing left after. */
static void batch_remove_and_large(const char *proto) {
    enum { N = 300, SZ = 512 };
    struct st_peer p;
    st_peer_start(&p, &master, proto, 16 * MIB);
    struct crescent_store *st = st_store(&master, proto, 0);
    char *reg = malloc(2 * N * SZ);
    OK(crescent_store_register_buffer(st, reg, 2 * N * SZ));
    st_fill(reg, N * SZ, 7);
    static char names[N + 1][32];
    const char *keys[N + 1];
    const void *src[N];
    void *dst[N];
    size_t sizes[N];
    int res[N + 1];
    int64_t gres[N];
    for (int i = 0; i <= N; i++) {
        snprintf(names[i], sizeof(names[i]), "big-batch-%d", i);
        keys[i] = names[i];
        if (i < N) {
            src[i] = reg + (size_t)i * SZ;
            dst[i] = reg + (size_t)(N + i) * SZ;
            sizes[i] = SZ - (size_t)(i % 7);
        }
    }
    OK(crescent_store_batch_put_from(st, keys, src, sizes, N, NULL, res));
    OK(crescent_store_batch_get_into(st, keys, dst, sizes, N, gres)); /* leases every key */
    for (int i = 0; i < N; i++) {
        cr_assert_eq(gres[i], (int64_t)sizes[i], "key %d: %lld", i, (long long)gres[i]);
        cr_assert(memcmp(dst[i], src[i], sizes[i]) == 0, "key %d differs", i);
    }
    ERR(CRESCENT_STORE_EOBJECT_HAS_LEASE, crescent_store_batch_remove(st, keys, 2, 0, res));
    cr_assert_eq(res[0], -CRESCENT_STORE_EOBJECT_HAS_LEASE);
    cr_assert_eq(res[1], -CRESCENT_STORE_EOBJECT_HAS_LEASE);
    /* N + 1 keys, the last never put */
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_batch_remove(st, keys, N + 1, 1, res));
    for (int i = 0; i < N; i++) {
        cr_assert_eq(res[i], 0, "key %d: %d", i, res[i]);
    }
    cr_assert_eq(res[N], -CRESCENT_STORE_EOBJECT_NOT_FOUND);
    redisReply *r = st_cmd(rc, "MC.STATS");
    const redisReply *objects = st_field(r, "objects");
    cr_assert(objects != NULL && objects->integer == 0);
    freeReplyObject(r);
    cr_assert_eq(st_segments_used(rc), 0);
    ERR(EINVAL, crescent_store_batch_remove(st, keys, 0, 1, res));
    crescent_store_unregister_buffer(st, reg);
    free(reg);
    crescent_store_destroy(st);
    st_peer_kill(&p);
}

Test(store, batch_remove_and_large_batches) {
    batch_remove_and_large("shm");
}

Test(store, batch_remove_and_large_batches_fabric) {
    NEED_FABRIC();
    batch_remove_and_large("fabric");
}

/* Expects MC.MOUNT (or MC.REMOUNT) of [base, base + size) with desc to fail with want (a
 * prefix of the error), or to succeed when want is NULL. */
static void mount_desc(const char *verb, const char *id, uint64_t base, uint64_t size,
                       const void *desc, size_t len, const char *want) {
    redisReply *r = !strcmp(verb, "MC.MOUNT")
                        ? st_cmd(rc, "MC.MOUNT %s dseg %llu %llu DESC %b", id,
                                 (unsigned long long)base, (unsigned long long)size, desc, len)
                        : st_cmd(rc, "MC.REMOUNT %s dseg %llu %llu ep tcp %b", id,
                                 (unsigned long long)base, (unsigned long long)size, desc, len);
    if (want == NULL) {
        cr_assert(r->type == REDIS_REPLY_STATUS, "%s: %s", verb, r->str);
    } else {
        cr_assert(r->type == REDIS_REPLY_ERROR && !strncmp(r->str, want, strlen(want)),
                  "%s: got '%s', want '%s...'", verb, r->str, want);
    }
    freeReplyObject(r);
}

/* MC.MOUNT checks DESC with the transfer engine: a real descriptor whose registered buffer
 * holds the segment mounts; one byte changed, a cut blob or a segment reaching outside every
 * buffer is refused with INVALID_PARAMS, and nothing is mounted. */
Test(store, mount_checks_the_descriptor) {
    const char *id = "00112233445566778899aabbccddeeff";
    freeReplyObject(st_cmd(rc, "MC.REGISTER %s desc-host", id));
    struct crescent_xfer_engine *eng;
    cr_assert_eq(crescent_xfer_engine_create(NULL, &eng), 0);
    size_t blen = 4 * MIB;
    char *buf = aligned_alloc(4096, blen);
    cr_assert_eq(crescent_xfer_register(eng, buf, blen, "cpu:0", CRESCENT_XFER_REMOTE), 0);
    ssize_t dlen = crescent_xfer_export_desc(eng, NULL, 0);
    cr_assert_gt(dlen, 0);
    char *desc = malloc((size_t)dlen);
    cr_assert_eq(crescent_xfer_export_desc(eng, desc, (size_t)dlen), dlen);
    uint64_t base = (uintptr_t)buf;
    const char *bad = "INVALID_PARAMS DESC is not a transfer engine segment descriptor "
                      "(corrupt or truncated)";
    const char *outside = "INVALID_PARAMS segment [0x";

    mount_desc("MC.MOUNT", id, base + MIB, 2 * MIB, desc, (size_t)dlen - 1, bad);
    desc[dlen / 2] ^= 0x20;
    mount_desc("MC.MOUNT", id, base + MIB, 2 * MIB, desc, (size_t)dlen, bad);
    desc[dlen / 2] ^= 0x20;
    mount_desc("MC.MOUNT", id, base + MIB, 4 * MIB, desc, (size_t)dlen, outside); /* past end */
    mount_desc("MC.MOUNT", id, base - 4096, MIB, desc, (size_t)dlen, outside);    /* before */
    mount_desc("MC.REMOUNT", id, base + 3 * MIB, 2 * MIB, desc, (size_t)dlen, outside);
    redisReply *r = st_cmd(rc, "MC.QUERYSEGMENT dseg");
    cr_assert(r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "SEGMENT_NOT_FOUND", 17), "%s",
              r->str);
    freeReplyObject(r);
    mount_desc("MC.MOUNT", id, base, blen, desc, (size_t)dlen, NULL); /* the whole buffer */
    mount_desc("MC.MOUNT", id, base, blen, desc, (size_t)dlen, NULL); /* again: a refresh */
    r = st_cmd(rc, "MC.QUERYSEGMENT dseg");
    const redisReply *size = st_field(r, "size");
    cr_assert(size != NULL && size->integer == (long long)blen);
    freeReplyObject(r);
    freeReplyObject(st_cmd(rc, "MC.UNMOUNT %s dseg", id));
    mount_desc("MC.REMOUNT", id, base + MIB, MIB, desc, (size_t)dlen, NULL);
    freeReplyObject(st_cmd(rc, "MC.UNMOUNT %s dseg", id));
    crescent_xfer_unregister(eng, buf);
    crescent_xfer_engine_destroy(eng);
    free(desc);
    free(buf);
}

Test(store, size_sweep_1B_to_64MiB_byte_exact) {
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 160 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    size_t max = 64 * MIB;
    char *val = malloc(max), *reg = malloc(max);
    cr_assert(val != NULL && reg != NULL);
    OK(crescent_store_register_buffer(st, reg, max));
    const size_t sizes[] = {1,       63,      64,          4095,     4096,    65537,
                            MIB + 3, 4 * MIB, 4 * MIB + 1, 16 * MIB, 64 * MIB};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        char key[32];
        snprintf(key, sizeof(key), "sweep-%zu", n);
        st_fill(val, n, (unsigned)n);
        OK(crescent_store_put(st, key, val, n, NULL));
        cr_assert_eq(crescent_store_get_size(st, key), (int64_t)n);
        check_get(st, key, val, n);
        memset(reg, 0, n);
        cr_assert_eq(crescent_store_get_into(st, key, reg, max), (int64_t)n);
        cr_assert(memcmp(reg, val, n) == 0, "get_into of %zu bytes differs", n);
        OK(crescent_store_remove(st, key, 1));
        OK(crescent_store_put_from(st, key, reg, n, NULL));
        check_get(st, key, val, n);
        OK(crescent_store_remove(st, key, 1));
    }
    cr_assert_eq(st_segments_used(rc), 0);
    crescent_store_destroy(st);
    st_peer_kill(&p);
    free(val);
    free(reg);
}

/* iface: the metrics interface proto's transfers count under (2 tcp, 3 fabric). */
static void zero_copy_stages_nothing(const char *proto, int iface) {
    struct st_peer p;
    st_peer_start(&p, &master, proto, 16 * MIB);
    struct crescent_store *st = st_store(&master, proto, 0);
    size_t n = 3 * MIB;
    char *buf = malloc(2 * n);
    st_fill(buf, n, 5);
    OK(crescent_store_register_buffer(st, buf, 2 * n));
    struct crescent_store_metrics m0, m1, m2;
    OK(crescent_store_metrics(st, &m0));
    OK(crescent_store_put_from(st, "zc", buf, n, NULL));
    cr_assert_eq(crescent_store_get_into(st, "zc", buf + n, n), (int64_t)n);
    cr_assert(memcmp(buf, buf + n, n) == 0);
    OK(crescent_store_metrics(st, &m1));
    cr_assert_eq(m1.staging_bytes, m0.staging_bytes);
    cr_assert_eq(m1.write_bytes[iface] - m0.write_bytes[iface], n);
    cr_assert_eq(m1.read_bytes[iface] - m0.read_bytes[iface], n);
    check_get(st, "zc", buf, n); /* the copying get stages */
    OK(crescent_store_metrics(st, &m2));
    cr_assert_eq(m2.staging_bytes - m1.staging_bytes, n);
    /* unregistered memory is refused by the zero-copy calls */
    char stack[64];
    ERR(CRESCENT_STORE_EINVALID_PARAMS,
        crescent_store_put_from(st, "x", stack, sizeof(stack), NULL));
    ERR(CRESCENT_STORE_EINVALID_PARAMS, crescent_store_get_into(st, "zc", stack, sizeof(stack)));
    ERR(CRESCENT_STORE_EBUFFER_OVERFLOW, crescent_store_get_into(st, "zc", buf, n - 1));
    crescent_store_destroy(st);
    st_peer_kill(&p);
    free(buf);
}

Test(store, zero_copy_calls_stage_nothing) {
    zero_copy_stages_nothing("tcp", 2);
}

Test(store, zero_copy_calls_stage_nothing_fabric) {
    NEED_FABRIC();
    zero_copy_stages_nothing("fabric", 3);
}

Test(store, local_replica_by_memcpy_and_replica_desc) {
    struct crescent_store *st = st_store(&master, "tcp", 8 * MIB);
    OK(crescent_store_put(st, "loc", "abcdef", 6, NULL));
    struct crescent_store_replica d[4];
    cr_assert_eq(crescent_store_get_replica_desc(st, "loc", d, 4), 1);
    char own[256];
    OK(crescent_store_segment_name(st, 0, own, sizeof(own)));
    cr_assert_str_eq(d[0].segment, own);
    cr_assert(d[0].complete && d[0].is_memory);
    cr_assert_eq(d[0].size, 6);
    cr_assert_str_eq(d[0].protocol, "tcp");
    check_get(st, "loc", "abcdef", 6);
    struct crescent_store_metrics m;
    OK(crescent_store_metrics(st, &m));
    cr_assert_eq(m.read_ops[0], 1);
    cr_assert_eq(m.read_ops[2], 0);
    cr_assert_eq(m.write_ops[0], 1);

    /* caller memory mounted as a second segment, preferred by a put, then unmounted */
    char *mem = aligned_alloc(4096, 4 * MIB);
    OK(crescent_store_mount_segment(st, mem, 4 * MIB, "user-seg"));
    ERR(EEXIST, crescent_store_mount_segment(st, mem + 2 * MIB, 1 * MIB, "other")); /* overlap */
    char *mem2 = aligned_alloc(4096, 1 * MIB);
    ERR(CRESCENT_STORE_ESEGMENT_ALREADY_EXISTS,
        crescent_store_mount_segment(st, mem2, 1 * MIB, "user-seg"));
    OK(crescent_store_register_buffer(st, mem2, 1 * MIB)); /* the failed mount unregistered it */
    OK(crescent_store_unregister_buffer(st, mem2));
    free(mem2);
    const char *pref[] = {"user-seg"};
    struct crescent_store_replicate_config on_user = {.preferred_segments = pref,
                                                      .n_preferred_segments = 1};
    OK(crescent_store_put(st, "in-user", "uvw", 3, &on_user));
    cr_assert_eq(crescent_store_get_replica_desc(st, "in-user", d, 4), 1);
    cr_assert_str_eq(d[0].segment, "user-seg");
    cr_assert(d[0].addr >= (uintptr_t)mem && d[0].addr < (uintptr_t)mem + 4 * MIB);
    cr_assert(memcmp((void *)(uintptr_t)d[0].addr, "uvw", 3) == 0);
    OK(crescent_store_unmount_segment(st, "user-seg"));
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_get_size(st, "in-user"));
    crescent_store_destroy(st);
    free(mem);
}

Test(store, master_restart_remounts_within_a_ping) {
    struct crescent_store *st = st_store(&master, "tcp", 8 * MIB);
    OK(crescent_store_put(st, "before", "1", 1, NULL));
    cr_assert_eq(crescent_store_health_check(st), 0);
    redisFree(rc);
    st_master_kill(&master);
    long long deadline = st_now_ms() + 10000;
    while (crescent_store_health_check(st) != 2 && st_now_ms() < deadline) {
        st_sleep_ms(50);
    }
    cr_assert_eq(crescent_store_health_check(st), 2);
    st_master_restart(&master);
    rc = st_redis(&master);
    long long t0 = st_now_ms();
    deadline = t0 + 10000;
    redisReply *r = NULL;
    for (;;) {
        r = st_cmd(rc, "MC.SEGMENTS");
        if (r->elements == 1 || st_now_ms() > deadline) {
            break;
        }
        freeReplyObject(r);
        st_sleep_ms(20);
    }
    long long took = st_now_ms() - t0;
    cr_assert_eq(r->elements, 1, "not remounted after %lld ms", took);
    freeReplyObject(r);
    cr_log_info("remounted %lld ms after the master answered again", took);
    cr_assert_eq(crescent_store_health_check(st), 0);
    cr_assert_eq(crescent_store_is_exist(st, "before"), 0); /* a restarted master is empty */
    OK(crescent_store_put(st, "after", "22", 2, NULL));
    check_get(st, "after", "22", 2);
    struct crescent_store_metrics m;
    OK(crescent_store_metrics(st, &m));
    cr_assert_geq(m.remounts, 1);
    crescent_store_destroy(st);
}

Test(store, read_outliving_its_lease_fails) {
    redisFree(rc);
    st_master_stop(&master);
    st_master_start(&master, "--client_live_ttl_sec 3 --default_kv_lease_ttl 1" NO_EMBEDDED);
    rc = st_redis(&master);
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 80 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    size_t n = 64 * MIB;
    char *val = calloc(1, n);
    OK(crescent_store_put(st, "slow", val, n, NULL));
    void *v = NULL;
    size_t got = 0;
    /* 64 MiB through a 4 MiB staging chunk over tcp takes far more than 1 ms */
    ERR(CRESCENT_STORE_ELEASE_EXPIRED, crescent_store_get(st, "slow", &v, &got));
    cr_assert_null(v);
    crescent_store_destroy(st);
    st_peer_kill(&p);
    free(val);
}

struct log_sink {
    int lines;
    char last[1024];
};

static void log_cb(int level, const char *line, void *arg) {
    struct log_sink *s = arg;
    (void)level;
    if (strstr(line, "store client metrics") != NULL) {
        s->lines++;
        snprintf(s->last, sizeof(s->last), "%s", line);
    }
}

Test(store, metrics_summary_line_through_the_log_callback) {
    setenv("MC_STORE_CLIENT_METRIC_INTERVAL", "1", 1);
    struct log_sink sink = {0};
    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.global_segment_size = 8 * MIB;
    cfg.log_cb = log_cb;
    cfg.log_arg = &sink;
    struct crescent_store *st;
    OK(crescent_store_create(master.addr, &cfg, &st));
    OK(crescent_store_put(st, "m", "metric", 6, NULL));
    check_get(st, "m", "metric", 6);
    long long deadline = st_now_ms() + 10000;
    while (__atomic_load_n(&sink.lines, __ATOMIC_SEQ_CST) == 0 && st_now_ms() < deadline) {
        st_sleep_ms(50);
    }
    crescent_store_destroy(st);
    cr_assert_gt(sink.lines, 0);
    cr_assert(strstr(sink.last, "local read 6 B / 1 ops") != NULL, "%s", sink.last);
    cr_assert(strstr(sink.last, "bandwidth read") != NULL, "%s", sink.last);
}

Test(store, bad_input_gives_clear_errors) {
    struct crescent_store *st = NULL;
    ERR(EINVAL, crescent_store_create(NULL, NULL, &st));
    ERR(EINVAL, crescent_store_create(master.addr, NULL, NULL));
    ERR(EINVAL, crescent_store_create("no-port", NULL, &st));
    ERR(EINVAL, crescent_store_create("127.0.0.1:99999", NULL, &st));
    struct crescent_store_config bad = {0};
    ERR(EINVAL, crescent_store_create(master.addr, &bad, &st));
    ERR(CRESCENT_STORE_ERPC_FAIL, crescent_store_create("127.0.0.1:1", NULL, &st));
    cr_assert(strstr(crescent_store_last_error(), "127.0.0.1:1") != NULL, "%s",
              crescent_store_last_error());
    cr_assert_null(st);
    cr_assert_eq(crescent_store_health_check(NULL), 1);

    st = st_store(&master, "tcp", 8 * MIB);
    cr_assert_eq(crescent_store_health_check(st), 0);
    ERR(CRESCENT_STORE_EINVALID_PARAMS, crescent_store_put(st, NULL, "x", 1, NULL));
    ERR(CRESCENT_STORE_EINVALID_KEY, crescent_store_put(st, "", "x", 1, NULL));
    char *big = malloc(65537);
    memset(big, 'k', 65536);
    big[65536] = '\0';
    ERR(CRESCENT_STORE_EINVALID_KEY, crescent_store_put(st, big, "x", 1, NULL));
    big[65535] = '\0'; /* the longest key is fine */
    OK(crescent_store_put(st, big, "x", 1, NULL));
    check_get(st, big, "x", 1);
    free(big);
    ERR(EINVAL, crescent_store_put(st, "k", NULL, 1, NULL));
    ERR(CRESCENT_STORE_EINVALID_PARAMS, crescent_store_put(st, "k", "x", 0, NULL));
    struct crescent_store_replicate_config nine = {.replica_num = 9};
    ERR(CRESCENT_STORE_EINVALID_PARAMS, crescent_store_put(st, "k", "x", 1, &nine));
    struct crescent_store_replicate_config noseg = {.preferred_segments = NULL,
                                                    .n_preferred_segments = 1};
    ERR(CRESCENT_STORE_EINVALID_PARAMS, crescent_store_put(st, "k", "x", 1, &noseg));
    void *v;
    size_t n;
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_get(st, "missing", &v, &n));
    cr_assert(strstr(crescent_store_last_error(), "OBJECT_NOT_FOUND") != NULL);
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_get_size(st, "missing"));
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_remove(st, "missing", 0));
    ERR(EINVAL, crescent_store_get(st, "k", NULL, &n));
    char *huge = calloc(1, 64 * MIB);
    ERR(CRESCENT_STORE_ENO_AVAILABLE_HANDLE, crescent_store_put(st, "huge", huge, 64 * MIB, NULL));
    free(huge);
    ERR(CRESCENT_STORE_ESEGMENT_NOT_FOUND, crescent_store_unmount_segment(st, "not-mine"));
    cr_assert_str_eq(crescent_store_err_name(-CRESCENT_STORE_EOBJECT_NOT_FOUND),
                     "OBJECT_NOT_FOUND");
    cr_assert_str_eq(crescent_store_err_name(-CRESCENT_STORE_ELEASE_EXPIRED), "LEASE_EXPIRED");
    cr_assert_str_eq(crescent_store_err_name(-ETIMEDOUT), "ETIMEDOUT");
    cr_assert_eq(crescent_store_mooncake_code(-CRESCENT_STORE_EOBJECT_NOT_FOUND), -704);
    cr_assert_eq(crescent_store_mooncake_code(-CRESCENT_STORE_ENO_AVAILABLE_HANDLE), -200);
    cr_assert_eq(crescent_store_mooncake_code(-EINVAL), 0);
    crescent_store_destroy(st);
    crescent_store_destroy(NULL);
}

Test(store, checksum_verified_when_enabled) {
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 16 * MIB);
    struct crescent_store *plain = st_store(&master, "tcp", 0);
    setenv("MOONCAKE_STORE_CHECKSUM", "1", 1);
    struct crescent_store *st = st_store(&master, "tcp", 8 * MIB);
    size_t n = 100000;
    char *val = malloc(n), *reg = malloc(2 * n);
    st_fill(val, n, 7);
    const char *pref[] = {p.segment};
    struct crescent_store_replicate_config remote = {.preferred_segments = pref,
                                                     .n_preferred_segments = 1};
    OK(crescent_store_put(st, "c", val, n, &remote));
    check_get(st, "c", val, n);
    cr_assert_eq(crescent_store_get_size(st, "c"), (int64_t)n);
    redisReply *r = st_cmd(rc, "MC.QUERYKEY c");
    cr_assert_eq(st_field(r, "size")->integer, (long long)n + 16); /* value + trailer */
    freeReplyObject(r);
    OK(crescent_store_register_buffer(st, reg, 2 * n));
    memcpy(reg, val, n);
    OK(crescent_store_put_from(st, "cz", reg, n, &remote));
    cr_assert_eq(crescent_store_get_into(st, "cz", reg + n, n), (int64_t)n);
    cr_assert(memcmp(reg + n, val, n) == 0);
    /* a value written without the checksum, or damaged in place, fails */
    OK(crescent_store_put(plain, "raw", val, 64, &remote));
    void *v;
    size_t got;
    ERR(CRESCENT_STORE_ECHECKSUM_MISMATCH, crescent_store_get(st, "raw", &v, &got));
    const char *own_pref[1];
    char own[256];
    OK(crescent_store_segment_name(st, 0, own, sizeof(own)));
    own_pref[0] = own;
    struct crescent_store_replicate_config local = {.preferred_segments = own_pref,
                                                    .n_preferred_segments = 1};
    OK(crescent_store_put(st, "dmg", val, n, &local));
    struct crescent_store_replica d[2];
    cr_assert_eq(crescent_store_get_replica_desc(st, "dmg", d, 2), 1);
    cr_assert_str_eq(d[0].segment, own);
    ((char *)(uintptr_t)d[0].addr)[n / 2] ^= 1; /* our own segment: flip one bit */
    ERR(CRESCENT_STORE_ECHECKSUM_MISMATCH, crescent_store_get(st, "dmg", &v, &got));
    unsetenv("MOONCAKE_STORE_CHECKSUM");
    crescent_store_destroy(st);
    crescent_store_destroy(plain);
    st_peer_kill(&p);
    free(val);
    free(reg);
}

Test(store, only_public_symbols_exported) {
    void *h = dlopen("libcrescent.so.0", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h, "libcrescent.so.0 not loaded: %s", dlerror());
    cr_assert_not_null(dlsym(h, "crescent_store_create"));
    cr_assert_not_null(dlsym(h, "crescent_store_get_into"));
    cr_assert_null(dlsym(h, "cli__cmd"));
    cr_assert_null(dlsym(h, "cli_fail"));
    dlclose(h);
}

struct worker {
    struct crescent_store *st;
    int idx, failures;
    char err[256];
};

/* One thread's round trips on its own keys: copying and zero-copy, 2 replicas. */
static void *worker_main(void *arg) {
    struct worker *w = arg;
    size_t n = 70000 + (size_t)w->idx * 1000;
    char *reg = malloc(2 * n), *val = malloc(n);
    if (crescent_store_register_buffer(w->st, reg, 2 * n) < 0) {
        w->failures++;
        return NULL;
    }
    struct crescent_store_replicate_config two = {.replica_num = 2};
    for (int i = 0; i < 40 && w->failures == 0; i++) {
        char key[64];
        snprintf(key, sizeof(key), "w%d-%d", w->idx, i);
        st_fill(val, n, (unsigned)(w->idx * 1000 + i));
        memcpy(reg, val, n);
        void *v = NULL;
        size_t got = 0;
        int ret = (i & 1) ? crescent_store_put(w->st, key, val, n, &two)
                          : crescent_store_put_from(w->st, key, reg, n, &two);
        if (ret == 0) {
            ret = crescent_store_get(w->st, key, &v, &got);
        }
        if (ret == 0 && (got != n || memcmp(v, val, n) != 0)) {
            ret = -1;
        }
        crescent_store_free(v);
        if (ret == 0 && crescent_store_get_into(w->st, key, reg + n, n) != (int64_t)n) {
            ret = -2;
        }
        if (ret == 0 && memcmp(reg + n, val, n) != 0) {
            ret = -3;
        }
        if (ret == 0) {
            ret = crescent_store_remove(w->st, key, 1);
        }
        if (ret != 0) {
            w->failures++;
            snprintf(w->err, sizeof(w->err), "%s: %d %s", key, ret, crescent_store_last_error());
        }
    }
    crescent_store_unregister_buffer(w->st, reg);
    free(reg);
    free(val);
    return NULL;
}

Test(store, threads_share_one_store) {
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 32 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 16 * MIB);
    struct worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.st = st, .idx = i};
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
    }
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(w[i].failures, 0, "thread %d: %s", i, w[i].err);
    }
    cr_assert_eq(st_segments_used(rc), 0);
    crescent_store_destroy(st);
    st_peer_kill(&p);
}

Test(store, put_parts_and_pin_options) {
    struct crescent_store *st = st_store(&master, "tcp", 8 * MIB);
    const void *parts[] = {"ab", "", "cdef", "g"};
    size_t sizes[] = {2, 0, 4, 1};
    struct crescent_store_replicate_config soft = {.with_soft_pin = 1, .prefer_same_node = 1};
    OK(crescent_store_put_parts(st, "parts", parts, sizes, 4, &soft));
    check_get(st, "parts", "abcdefg", 7);
    redisReply *r = st_cmd(rc, "MC.QUERYKEY parts");
    cr_assert_eq(st_field(r, "soft_pin")->integer, 1);
    cr_assert_eq(st_field(r, "hard_pin")->integer, 0);
    freeReplyObject(r);
    struct crescent_store_replicate_config ttl = {.with_soft_pin = 1, .soft_pin_ttl_ms = 5000};
    OK(crescent_store_put(st, "soft-ttl", "x", 1, &ttl));
    struct crescent_store_replicate_config too_long = {.with_soft_pin = 1,
                                                       .soft_pin_ttl_ms = 100000000000ull};
    ERR(CRESCENT_STORE_EINVALID_PARAMS, crescent_store_put(st, "soft-bad", "x", 1, &too_long));
    crescent_store_destroy(st);
}

/* A peer stopped for longer than the client TTL is expired by the master; when it resumes, its
 * next ping gets NEED_REMOUNT and it mounts its segment again. */
Test(store, expired_client_remounts_on_need_remount) {
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 8 * MIB);
    redisReply *r = st_cmd(rc, "MC.QUERYSEGMENT %s", p.segment);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    kill(p.pid, SIGSTOP);
    long long deadline = st_now_ms() + 15000;
    for (;;) {
        r = st_cmd(rc, "MC.QUERYSEGMENT %s", p.segment);
        bool gone = r->type == REDIS_REPLY_ERROR;
        freeReplyObject(r);
        if (gone || st_now_ms() > deadline) {
            cr_assert(gone, "the stopped peer's segment was not unmounted");
            break;
        }
        st_sleep_ms(100);
    }
    kill(p.pid, SIGCONT);
    deadline = st_now_ms() + 10000;
    for (;;) {
        r = st_cmd(rc, "MC.QUERYSEGMENT %s", p.segment);
        bool back = r->type == REDIS_REPLY_ARRAY;
        freeReplyObject(r);
        if (back || st_now_ms() > deadline) {
            cr_assert(back, "the resumed peer did not remount");
            break;
        }
        st_sleep_ms(50);
    }
    st_peer_kill(&p);
}

/* Batch-writes n keys "<prefix><i>" of len bytes (seed s) from st's registered buf into the
 * segment named seg, reads them back into buf + n * len with a batch get and checks them. */
static void batch_roundtrip(struct crescent_store *st, char *buf, const char *prefix, size_t n,
                            size_t len, unsigned s, const char *seg) {
    char names[16][32];
    const char *keys[16];
    const void *src[16];
    void *dst[16];
    size_t sizes[16];
    int res[16];
    int64_t got[16];
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "%s%zu", prefix, i);
        keys[i] = names[i];
        src[i] = buf + i * len;
        dst[i] = buf + (n + i) * len;
        sizes[i] = len;
        st_fill(buf + i * len, len, s + (unsigned)i);
        memset(dst[i], 0, len);
    }
    const char *pref[] = {seg};
    struct crescent_store_replicate_config on = {.preferred_segments = pref,
                                                 .n_preferred_segments = 1};
    OK(crescent_store_batch_put_from(st, keys, src, sizes, n, &on, res));
    OK(crescent_store_batch_get_into(st, keys, dst, sizes, n, got));
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(res[i], 0);
        cr_assert_eq(got[i], (int64_t)len, "%s: %lld", keys[i], (long long)got[i]);
        cr_assert(memcmp(dst[i], src[i], len) == 0, "%s: bytes differ", keys[i]);
    }
}

/* A reader keeps a segment it opened from a replica's descriptor; when the segment's owner goes
 * away and another client mounts a segment of the same name (a new transfer descriptor), the
 * reader's next batch opens the new one instead of writing to the old owner. Both reply forms:
 * compact (the library's default: the descriptor once per segment per reply) and full. */
Test(store, segment_remounted_with_a_new_descriptor) {
    for (int full = 0; full < 2; full++) {
        if (full) {
            setenv("CRESCENT_STORE_REPLY_FORMAT", "full", 1);
        }
        struct crescent_store *rd = st_store(&master, "tcp", 0);
        unsetenv("CRESCENT_STORE_REPLY_FORMAT");
        size_t n = 8, len = 4096;
        char *buf = aligned_alloc(4096, 2 * n * len);
        OK(crescent_store_register_buffer(rd, buf, 2 * n * len));
        char *mem1 = aligned_alloc(4096, MIB), *mem2 = aligned_alloc(4096, MIB);
        struct crescent_store *own1 = st_store(&master, "tcp", 0);
        OK(crescent_store_mount_segment(own1, mem1, MIB, "moving-seg"));
        batch_roundtrip(rd, buf, "old", n, len, 10, "moving-seg");
        OK(crescent_store_unmount_segment(own1, "moving-seg"));
        crescent_store_destroy(own1);
        struct crescent_store *own2 = st_store(&master, "tcp", 0);
        OK(crescent_store_mount_segment(own2, mem2, MIB, "moving-seg"));
        batch_roundtrip(rd, buf, "new", n, len, 20, "moving-seg");
        struct crescent_store_replica d[2];
        cr_assert_eq(crescent_store_get_replica_desc(rd, "new0", d, 2), 1);
        cr_assert(d[0].addr >= (uintptr_t)mem2 && d[0].addr < (uintptr_t)mem2 + MIB);
        cr_assert(memcmp((void *)(uintptr_t)d[0].addr, buf, len) == 0, "not in the new segment");
        check_get(rd, "new1", buf + len, len);
        cr_assert_geq(crescent_store_remove_all(rd, 1), 0);
        crescent_store_destroy(rd);
        OK(crescent_store_unmount_segment(own2, "moving-seg"));
        crescent_store_destroy(own2);
        free(buf);
        free(mem1);
        free(mem2);
    }
}

/* Sends SIGCONT to the pid in arg after 1.5 s. */
static void *cont_later(void *arg) {
    st_sleep_ms(1500);
    kill(*(pid_t *)arg, SIGCONT);
    return NULL;
}

/* CRESCENT_STORE_POLL_US: a bad value fails the create naming the variable; with a long poll
 * window every reply still ends the poll at once (100 round trips take nothing like 100 x the
 * window), and a reply that comes after the window (the master stopped for 1.5 s) is read by the
 * blocking read that follows the poll. With 0, calls block at once and still work. */
Test(store, reply_polling_setting) {
    struct crescent_store *st = NULL;
    const char *bad[] = {"abc", "-1", "12x", "", "1000001", "99999999999999999999999", " 5", "+5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("CRESCENT_STORE_POLL_US", bad[i], 1);
        ERR(EINVAL, crescent_store_create(master.addr, NULL, &st));
        cr_assert_null(st);
        cr_assert(strstr(crescent_store_last_error(), "CRESCENT_STORE_POLL_US") != NULL, "%s: %s",
                  bad[i], crescent_store_last_error());
    }
    const char *good[] = {"0", "1000000"};
    for (size_t i = 0; i < 2; i++) {
        setenv("CRESCENT_STORE_POLL_US", good[i], 1);
        st = st_store(&master, "tcp", 8 * MIB);
        unsetenv("CRESCENT_STORE_POLL_US");
        long long t0 = st_now_ms();
        for (int k = 0; k < 100; k++) {
            char key[32], val[32];
            snprintf(key, sizeof(key), "poll-%zu-%d", i, k);
            snprintf(val, sizeof(val), "value-%d", k);
            OK(crescent_store_put(st, key, val, strlen(val), NULL));
            check_get(st, key, val, strlen(val));
        }
        /* 300 round trips: a poll that ignored the reply would take 300 s with a 1 s window. */
        cr_assert_lt(st_now_ms() - t0, 60000, "%s: polls outlast their replies", good[i]);
        pthread_t th;
        kill(master.pid, SIGSTOP);
        pthread_create(&th, NULL, cont_later, &master.pid);
        cr_assert_eq(crescent_store_is_exist(st, "poll-0-1"), i == 0 ? 1 : 0);
        pthread_join(th, NULL);
        check_get(st, i == 0 ? "poll-0-7" : "poll-1-7", "value-7", 7);
        cr_assert_geq(crescent_store_remove_by_regex(st, "^poll-", 1), 100);
        crescent_store_destroy(st);
    }
}
