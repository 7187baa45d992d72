/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The master's embedded segment as a pool segment (server/srv_pool_seg.c, docs/store.md "The
 * master's embedded segment"), against a real crescent-master and libcrescent: with no client
 * segment a library put lands in master@host:port over tcp, shm and fabric and reads back
 * byte-exact through the library and GET; with a peer added, random and free_ratio_first placement
 * use both, replica_num 2 takes one of each; eviction under pressure (library puts, and keyspace
 * SETs) frees pool objects there; used bytes return to zero; a restarted master mounts it again.
 */
#include "common/fmacros.h"

#include "crescent/store.h"
#include "crescent/transfer.h"
#include "tests/store/store_test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1u << 20)

static struct st_master master;
static redisContext *rc;
static char mseg[256]; /* "master@127.0.0.1:<port>" */

static void start(const char *extra) {
    st_master_start(&master, extra);
    rc = st_redis(&master);
    snprintf(mseg, sizeof(mseg), "master@127.0.0.1:%d", master.port);
}

static void stop(void) {
    redisFree(rc);
    rc = NULL;
    st_master_stop(&master);
}

TestSuite(embedded, .fini = stop, .timeout = 180);

/* The single segment holding key's replica. */
static void one_segment(const char *key, char seg[256]) {
    char segs[8][256];
    cr_assert_eq(st_replica_segments(rc, key, segs, 8), 1, "%s: not one replica", key);
    memcpy(seg, segs[0], 256);
}

/* used of segment name in MC.QUERYSEGMENT. */
static long long seg_used(const char *name) {
    redisReply *r = st_cmd(rc, "MC.QUERYSEGMENT %s", name);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY, "MC.QUERYSEGMENT %s: %s", name,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    const redisReply *u = st_field(r, "used");
    cr_assert_not_null(u);
    long long v = u->integer;
    freeReplyObject(r);
    return v;
}

/* An integer field of MC.STATS. */
static long long mc_stat(const char *name) {
    redisReply *r = st_cmd(rc, "MC.STATS");
    const redisReply *f = st_field(r, name);
    cr_assert(f != NULL && f->type == REDIS_REPLY_INTEGER, "MC.STATS %s", name);
    long long v = f->integer;
    freeReplyObject(r);
    return v;
}

/* STRLEN of key. */
static long long cmd_strlen(const char *key) {
    redisReply *r = st_cmd(rc, "STRLEN %s", key);
    cr_assert_eq(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static void check_lib_get(struct crescent_store *st, const char *key, const void *want,
                          size_t len) {
    void *v = NULL;
    size_t n = 0;
    OK(crescent_store_get(st, key, &v, &n));
    cr_assert_eq(n, len, "%s: %zu bytes, want %zu", key, n, len);
    cr_assert(memcmp(v, want, len) == 0, "%s: library get bytes differ", key);
    crescent_store_free(v);
}

static void check_redis_get(const char *key, const void *want, size_t len) {
    redisReply *r = st_cmd(rc, "GET %s", key);
    cr_assert_eq(r->type, REDIS_REPLY_STRING, "GET %s: type %d", key, r->type);
    cr_assert_eq(r->len, len);
    cr_assert(memcmp(r->str, want, len) == 0, "GET %s: bytes differ", key);
    freeReplyObject(r);
}

/* MC.SEGMENTS lists the master's segment with its owner's host and a transport endpoint. */
static void check_listed(void) {
    redisReply *r = st_cmd(rc, "MC.QUERYSEGMENT %s", mseg);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY, "%s not mounted: %s", mseg,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    cr_assert_str_eq(st_field(r, "host")->str, "127.0.0.1");
    cr_assert_str_eq(st_field(r, "status")->str, "OK");
    cr_assert_eq(st_field(r, "size")->integer, 64 * MIB);
    cr_assert(strncmp(st_field(r, "endpoint")->str, "127.0.0.1:", 10) == 0);
    freeReplyObject(r);
}

/* No client segment: library puts over proto land in the master's segment, 1 B .. 8 MiB. */
static void puts_land_in_the_master(const char *proto) {
    start("--memory 64mb --embedded_segment_protocols tcp,shm,fabric");
    check_listed();
    struct crescent_store *st = st_store(&master, proto, 0);
    static const size_t sizes[] = {1, 4096, MIB + 3, 8 * MIB};
    char *val = malloc(8 * MIB);
    cr_assert_not_null(val);
    for (size_t i = 0; i < 4; i++) {
        char key[32], seg[256];
        snprintf(key, sizeof(key), "%s-%zu", proto, sizes[i]);
        st_fill(val, sizes[i], (unsigned)i + 1);
        OK(crescent_store_put(st, key, val, sizes[i], NULL));
        one_segment(key, seg);
        cr_assert_str_eq(seg, mseg);
        check_lib_get(st, key, val, sizes[i]);
        check_redis_get(key, val, sizes[i]); /* the master reads its own memory */
    }
    /* the bytes moved with the transfer engine over proto (metrics: 1 shm, 2 tcp, 3 fabric) */
    struct crescent_store_metrics m;
    OK(crescent_store_metrics(st, &m));
    int iface = strcmp(proto, "shm") == 0 ? 1 : strcmp(proto, "tcp") == 0 ? 2 : 3;
    cr_assert_gt(m.write_ops[iface], 0, "no write over %s", proto);
    cr_assert_gt(m.read_ops[iface], 0, "no read over %s", proto);
    /* redis-cli prints it */
    OK(crescent_store_put(st, "cli", "from the master's segment", 25, NULL));
    char cmd[128], out[64] = "";
    snprintf(cmd, sizeof(cmd), "redis-cli -p %d GET cli", master.port);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(out, sizeof(out), f));
    pclose(f);
    cr_assert_str_eq(out, "from the master's segment\n");
    /* keyspace values share the space: used counts both */
    long long before = seg_used(mseg);
    redisReply *r = st_cmd(rc, "SET plain %b", val, (size_t)MIB);
    cr_assert_eq(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_assert_geq(seg_used(mseg), before + MIB, "a keyspace value is counted");
    cr_assert_eq(st_replica_segments(rc, "plain", NULL, 0), -1, "SET keeps a new key local");
    /* removal gives every byte back */
    OK(crescent_store_remove_all(st, 1));
    r = st_cmd(rc, "DEL plain");
    freeReplyObject(r);
    cr_assert_eq(seg_used(mseg), 0, "every buffer went back to the shared allocator");
    cr_assert_eq(mc_stat("used"), 0);
    crescent_store_destroy(st);
    free(val);
}

Test(embedded, library_put_lands_in_the_master_tcp) {
    puts_land_in_the_master("tcp");
}

Test(embedded, library_put_lands_in_the_master_shm) {
    puts_land_in_the_master("shm");
}

/* 1 when the fabric transport is built and libfabric opens a provider here. */
static bool fabric_ok(void) {
    struct crescent_xfer_opts o = CRESCENT_XFER_OPTS_INIT;
    o.listen = "";
    struct crescent_xfer_engine *e;
    if (crescent_xfer_engine_create(&o, &e) != 0)
        return false;
    bool ok = crescent_xfer_install(e, "fabric", NULL) == 0;
    crescent_xfer_engine_destroy(e);
    return ok;
}

Test(embedded, library_put_lands_in_the_master_fabric) {
    if (!fabric_ok())
        cr_skip_test("no fabric transport or libfabric tcp;ofi_rxm provider");
    puts_land_in_the_master("fabric");
}

/* Counts, over n keys prefix0..n-1, how many have their replica on segment seg. */
static int count_on(const char *prefix, int n, const char *seg) {
    int c = 0;
    for (int i = 0; i < n; i++) {
        char key[32], s[256];
        snprintf(key, sizeof(key), "%s%d", prefix, i);
        one_segment(key, s);
        c += strcmp(s, seg) == 0;
    }
    return c;
}

/* With a peer, the allocator uses both; replica_num 2 takes one of each. */
static void placement(const char *strategy) {
    char extra[128];
    snprintf(extra, sizeof(extra), "--memory 64mb --allocation_strategy %s", strategy);
    start(extra);
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 64 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    char val[4096];
    for (int i = 0; i < 40; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%d", i);
        st_fill(val, sizeof(val), (unsigned)i);
        OK(crescent_store_put(st, key, val, sizeof(val), NULL));
    }
    int on_master = count_on("k", 40, mseg), on_peer = count_on("k", 40, p.segment);
    cr_assert_eq(on_master + on_peer, 40);
    cr_assert_gt(on_master, 0, "%s: nothing in the master's segment", strategy);
    cr_assert_gt(on_peer, 0, "%s: nothing in the peer's segment", strategy);
    struct crescent_store_replicate_config two = {.replica_num = 2};
    st_fill(val, sizeof(val), 99);
    OK(crescent_store_put(st, "two", val, sizeof(val), &two));
    char segs[8][256];
    cr_assert_eq(st_replica_segments(rc, "two", segs, 8), 2);
    cr_assert((!strcmp(segs[0], mseg) && !strcmp(segs[1], p.segment)) ||
                  (!strcmp(segs[1], mseg) && !strcmp(segs[0], p.segment)),
              "%s / %s", segs[0], segs[1]);
    check_lib_get(st, "two", val, sizeof(val));
    check_redis_get("two", val, sizeof(val));
    OK(crescent_store_remove_all(st, 1));
    cr_assert_eq(st_segments_used(rc), 0);
    crescent_store_destroy(st);
    st_peer_kill(&p);
}

Test(embedded, random_placement_uses_both) {
    placement("random");
}

Test(embedded, free_ratio_first_uses_both) {
    placement("free_ratio_first");
}

/* Library puts beyond the segment evict older pool objects there; every put succeeds. */
Test(embedded, eviction_frees_pool_objects_in_the_master) {
    start("--memory 64mb");
    struct crescent_store *st = st_store(&master, "tcp", 0);
    char *val = malloc(2 * MIB);
    cr_assert_not_null(val);
    for (int i = 0; i < 60; i++) { /* 120 MiB into 64 */
        char key[32];
        snprintf(key, sizeof(key), "e%d", i);
        st_fill(val, 2 * MIB, (unsigned)i);
        OK(crescent_store_put(st, key, val, 2 * MIB, NULL));
    }
    cr_assert_gt(mc_stat("evicted"), 0);
    cr_assert_leq(seg_used(mseg), 64 * MIB);
    st_fill(val, 2 * MIB, 59);
    check_lib_get(st, "e59", val, 2 * MIB); /* the newest stays */
    /* A keyspace write needs room too: with no key of its own to evict, it makes the pool evict
     * objects there (the pool's watermark keeps at most a few MiB free: 24 do not fit). */
    long long evicted = mc_stat("evicted");
    char *big = calloc(1, 24 * MIB);
    cr_assert_not_null(big);
    redisReply *r = st_cmd(rc, "SET big %b", big, (size_t)(24 * MIB));
    cr_assert_eq(r->type, REDIS_REPLY_STATUS, "SET big: %s", r->str);
    freeReplyObject(r);
    cr_assert_gt(mc_stat("evicted"), evicted, "pool objects made room for the keyspace value");
    cr_assert_eq(cmd_strlen("big"), 24 * MIB);
    free(big);
    /* then keyspace values and pool objects keep sharing it, each side evicting its own */
    for (int i = 0; i < 20; i++) {
        char key[32];
        snprintf(key, sizeof(key), "plain%d", i);
        r = st_cmd(rc, "SET %s %b", key, val, (size_t)(2 * MIB));
        cr_assert_eq(r->type, REDIS_REPLY_STATUS, "SET %s: %s", key, r->str);
        freeReplyObject(r);
        snprintf(key, sizeof(key), "lib%d", i);
        OK(crescent_store_put(st, key, val, 2 * MIB, NULL));
    }
    cr_assert_leq(seg_used(mseg), 64 * MIB);
    r = st_cmd(rc, "FLUSHALL");
    freeReplyObject(r);
    /* a lazy FLUSHALL frees in the background; a leased object's buffer when its lease ends */
    long long deadline = st_now_ms() + 25000;
    while (seg_used(mseg) != 0 && st_now_ms() < deadline)
        st_sleep_ms(50);
    cr_assert_eq(seg_used(mseg), 0);
    crescent_store_destroy(st);
    free(val);
}

/* A restarted master mounts its segment again; puts land there. So does the housekeeping tick
 * after an MC.UNMOUNT by the segment's owner id, which frees the replicas there. */
Test(embedded, restarted_master_mounts_it_again) {
    start("--memory 64mb");
    check_listed();
    struct crescent_store *st0 = st_store(&master, "tcp", 0);
    OK(crescent_store_put(st0, "gone", "soon", 4, NULL));
    cr_assert_gt(seg_used(mseg), 0);
    redisReply *r = st_cmd(rc, "MC.QUERYSEGMENT %s", mseg);
    char owner[64];
    snprintf(owner, sizeof(owner), "%s", st_field(r, "owner")->str);
    freeReplyObject(r);
    r = st_cmd(rc, "MC.UNMOUNT %s %s", owner, mseg);
    cr_assert_eq(r->type, REDIS_REPLY_STATUS, "%s", r->str);
    freeReplyObject(r);
    cr_assert_eq(st_replica_segments(rc, "gone", NULL, 0), -1, "its only replica went");
    long long deadline = st_now_ms() + 10000;
    for (;;) {
        r = st_cmd(rc, "MC.QUERYSEGMENT %s", mseg);
        bool back = r->type == REDIS_REPLY_ARRAY;
        freeReplyObject(r);
        if (back || st_now_ms() > deadline)
            break;
        st_sleep_ms(20);
    }
    check_listed();
    cr_assert_eq(seg_used(mseg), 0, "the unmount gave the buffer back");
    crescent_store_destroy(st0);
    st_master_restart(&master);
    redisFree(rc);
    rc = st_redis(&master);
    check_listed();
    struct crescent_store *st = st_store(&master, "tcp", 0);
    OK(crescent_store_put(st, "after", "restart", 7, NULL));
    char seg[256];
    one_segment("after", seg);
    cr_assert_str_eq(seg, mseg);
    check_lib_get(st, "after", "restart", 7);
    crescent_store_destroy(st);
}

/* embedded_segment_in_pool no keeps it out; --memory 0 has none. */
Test(embedded, opt_out_and_memory0) {
    start("--memory 64mb --embedded_segment_in_pool no");
    redisReply *r = st_cmd(rc, "MC.SEGMENTS");
    cr_assert_eq(r->elements, 0);
    freeReplyObject(r);
    stop();
    start("--memory 0");
    r = st_cmd(rc, "MC.SEGMENTS");
    cr_assert_eq(r->elements, 0);
    freeReplyObject(r);
}
