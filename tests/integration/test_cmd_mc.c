/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for the MC.* commands of the distributed store (docs/store.md, "Commands"):
 * fake clients register and mount segments at made-up addresses (the master keeps metadata
 * only), then every command's replies and errors are checked through hiredis (RESP2) and a raw
 * socket (RESP3), including client expiry, zombie puts, leases, MULTI/EXEC and AUTH. The suite
 * is crescent-only: each test skips against redis-server. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CA     "0123456789abcdef0123456789abcdef"
#define CB     "fedcba98-7654-3210-fedc-ba9876543210" /* canonical UUID form */
#define CB_HEX "fedcba9876543210fedcba9876543210"
#define MIB    1048576

/* The made-up segments below are the pool's only ones: the master's embedded segment stays
 * out of the pool here (tests/store/test_embedded.c covers it as a pool segment). */
#define MC_CONF "embedded_segment_in_pool no\n"

static void mc_setup(void) {
    struct it_opts o = {.conf = MC_CONF};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
}

TestSuite(mc, .init = mc_setup, .fini = it_teardown, .timeout = 60);

/* Registers client id on host and mounts one segment of size bytes at base. */
static void mc_client(const char *id, const char *host, const char *seg, unsigned long long base,
                      unsigned long long size) {
    IT_OK(it_c, "MC.REGISTER %s %s", id, host);
    IT_OK(it_c, "MC.MOUNT %s %s %llu %llu ENDPOINT 127.0.0.1:7000 PROTOCOL tcp", id, seg, base,
          size);
}

/* Puts key (start + end) for client id; returns the replica count. */
static size_t mc_put(const char *id, const char *key, unsigned long long size, const char *opts) {
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "MC.PUTSTART %s %s %llu %s", id, key, size, opts ? opts : "");
    redisReply *r = it_cmd(it_c, cmd);
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    IT_OK(it_c, "MC.PUTEND %s %s", id, key);
    return r->elements;
}

/* used bytes of segment name, from MC.QUERYSEGMENT. */
static long long mc_used(const char *seg) {
    return it_field_int(it_cmd(it_c, "MC.QUERYSEGMENT %s", seg), "used");
}

/* Starts a private server with conf text (replacing it_srv/it_c). */
static void mc_restart(const char *conf, const char *pass) {
    it_teardown();
    char text[512];
    snprintf(text, sizeof(text), "%s%s", MC_CONF, conf ? conf : "");
    struct it_opts o = {.conf = text, .requirepass = pass};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
}

Test(mc, register_ping_and_mount) {
    IT_CRESCENT_ONLY();
    redisReply *r = it_cmd(it_c, "MC.PING %s", CA);
    cr_assert_str_eq(it_field_str(r, "status"), "NEED_REMOUNT");
    IT_OK(it_c, "MC.REGISTER %s host-a", CA);
    r = it_cmd(it_c, "MC.PING %s", CA);
    cr_assert_str_eq(it_field_str(r, "status"), "OK");
    cr_assert_gt(it_field_int(r, "view_version"), 0);
    IT_OK(it_c, "MC.REGISTER %s host-b", CB); /* canonical UUID form */
    IT_ERR("CLIENT_NOT_FOUND client not found", it_c, "MC.MOUNT %s s0 4096 %d",
           "00000000000000000000000000000001", MIB);
    /* DESC must be a transfer engine descriptor (real ones: tests/store/test_store.c) */
    IT_ERR("INVALID_PARAMS DESC is not a transfer engine segment descriptor (corrupt or "
           "truncated)",
           it_c, "MC.MOUNT %s seg-a 0x10000000 %d ENDPOINT 10.0.0.1:1 PROTOCOL rdma DESC xyz", CA,
           MIB);
    IT_ERR_PREFIX("SEGMENT_NOT_FOUND ", it_c, "MC.QUERYSEGMENT seg-a");
    IT_OK(it_c, "MC.MOUNT %s seg-a 0x10000000 %d ENDPOINT 10.0.0.1:1 PROTOCOL tcp", CA, MIB);
    IT_OK(it_c, "MC.MOUNT %s seg-a 0x10000000 %d ENDPOINT 10.0.0.1:1 PROTOCOL rdma", CA,
          MIB); /* same geometry: refreshes endpoint, protocol and descriptor */
    IT_ERR_PREFIX("SEGMENT_ALREADY_EXISTS ", it_c, "MC.MOUNT %s seg-a 0x20000000 %d", CB, MIB);
    IT_ERR_PREFIX("INVALID_PARAMS ", it_c, "MC.MOUNT %s seg-x 4096 100", CA); /* < 1 KiB */
    IT_ERR_PREFIX("INVALID_PARAMS ", it_c, "MC.MOUNT %s seg-x 0x10080000 %d", CA,
                  MIB); /* overlap */
    IT_ERR("INVALID_PARAMS segment range beyond 2^63 - 1", it_c,
           "MC.MOUNT %s seg-x 0x7fffffffffffff00 %d", CA, MIB);
    IT_ERR("INVALID_PARAMS invalid base", it_c, "MC.MOUNT %s seg-x 0xzz %d", CA, MIB);
    IT_ERR("INVALID_PARAMS invalid size", it_c, "MC.MOUNT %s seg-x 4096 -5", CA);
    IT_ERR("ERR syntax error", it_c, "MC.MOUNT %s seg-x 4096 %d BOGUS 1", CA, MIB);
    IT_ERR("ERR syntax error", it_c, "MC.MOUNT %s seg-x 4096 %d ENDPOINT", CA, MIB);
    IT_OK(it_c, "MC.MOUNT %s seg-b 0x20000000 %d", CB, MIB);

    r = it_cmd(it_c, "MC.QUERYSEGMENT seg-a");
    cr_assert_str_eq(it_field_str(r, "name"), "seg-a");
    cr_assert_str_eq(it_field_str(r, "owner"), CA);
    cr_assert_str_eq(it_field_str(r, "host"), "host-a");
    cr_assert_eq(it_field_int(r, "base"), 0x10000000);
    cr_assert_eq(it_field_int(r, "size"), MIB);
    cr_assert_eq(it_field_int(r, "used"), 0);
    cr_assert_str_eq(it_field_str(r, "status"), "OK");
    cr_assert_str_eq(it_field_str(r, "endpoint"), "10.0.0.1:1");
    cr_assert_str_eq(it_field_str(r, "protocol"), "rdma");
    r = it_cmd(it_c, "MC.QUERYSEGMENT seg-b");
    cr_assert_str_eq(it_field_str(r, "owner"), CB_HEX);
    cr_assert_str_eq(it_field_str(r, "protocol"), "tcp");
    IT_ERR("SEGMENT_NOT_FOUND segment not found", it_c, "MC.QUERYSEGMENT nope");
    r = it_cmd(it_c, "MC.SEGMENTS");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 2);

    IT_ERR("ILLEGAL_CLIENT client does not own this segment or object", it_c, "MC.UNMOUNT %s seg-a",
           CB);
    IT_ERR("SEGMENT_NOT_FOUND segment not found", it_c, "MC.UNMOUNT %s nope", CA);
    IT_OK(it_c, "MC.GRACEFULUNMOUNT %s seg-b 60000", CB);
    cr_assert_str_eq(it_field_str(it_cmd(it_c, "MC.QUERYSEGMENT seg-b"), "status"),
                     "GRACEFULLY_UNMOUNTING");
    IT_ERR_PREFIX("UNAVAILABLE_IN_CURRENT_STATUS ", it_c, "MC.GRACEFULUNMOUNT %s seg-b 0", CB);
    IT_OK(it_c, "MC.UNMOUNT %s seg-a", CA);
    IT_ERR_PREFIX("SEGMENT_NOT_FOUND ", it_c, "MC.QUERYSEGMENT seg-a");
    /* Remount: fixed 6-field tuples. */
    IT_ERR_PREFIX("INVALID_PARAMS DESC is not a transfer engine segment descriptor", it_c,
                  "MC.REMOUNT %s seg-a 0x10000000 %d ep tcp d", CA, MIB);
    IT_ERR_PREFIX("SEGMENT_NOT_FOUND ", it_c, "MC.QUERYSEGMENT seg-a");
    IT_OK(it_c, "MC.REMOUNT %s seg-a 0x10000000 %d ep tcp %s seg-c 0x30000000 %d %s %s %s", CA, MIB,
          "", MIB, "", "", "");
    cr_assert_str_eq(it_field_str(it_cmd(it_c, "MC.QUERYSEGMENT seg-c"), "protocol"), "tcp");
    cr_assert_str_eq(it_field_str(it_cmd(it_c, "MC.QUERYSEGMENT seg-c"), "endpoint"), "");
    IT_ERR("ERR wrong number of arguments for 'mc.remount' command", it_c,
           "MC.REMOUNT %s seg-a 0x10000000 %d ep tcp", CA, MIB);
    cr_assert_eq(it_cmd(it_c, "MC.SEGMENTS")->elements, 3);
    IT_STR("0.1.0", it_c, "MC.SERVICEREADY");
}

Test(mc, put_end_get_and_errors) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    IT_OK(it_c, "MC.REGISTER %s host-b", CB);
    redisReply *r = it_cmd(it_c, "MC.PUTSTART %s k1 1000", CA);
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 1);
    const redisReply *d = r->element[0];
    cr_assert_eq(d->elements, 16, "a replica descriptor has 8 fields");
    const char *order[] = {"type",     "status", "segment", "endpoint",
                           "protocol", "desc",   "addr",    "size"};
    for (int i = 0; i < 8; i++)
        cr_assert_str_eq(d->element[2 * i]->str, order[i]);
    cr_assert_str_eq(it_field_str(d, "type"), "MEMORY");
    cr_assert_str_eq(it_field_str(d, "status"), "PROCESSING");
    cr_assert_str_eq(it_field_str(d, "segment"), "seg-a");
    cr_assert_str_eq(it_field_str(d, "endpoint"), "127.0.0.1:7000");
    cr_assert_str_eq(it_field_str(d, "protocol"), "tcp");
    cr_assert_str_eq(it_field_str(d, "desc"), "");
    long long addr = it_field_int(d, "addr");
    cr_assert(addr >= 0x10000000 && addr + 1000 <= 0x10000000 + MIB, "addr inside the segment");
    cr_assert_eq(it_field_int(d, "size"), 1000);
    IT_ERR("REPLICA_IS_NOT_READY replica is not ready", it_c, "MC.GETREPLICAS k1");
    IT_INT(0, it_c, "MC.EXIST k1");
    IT_ERR("OBJECT_ALREADY_EXISTS object already exists", it_c, "MC.PUTSTART %s k1 10", CB);
    IT_ERR("ILLEGAL_CLIENT client does not own this segment or object", it_c, "MC.PUTEND %s k1",
           CB);
    IT_ERR_PREFIX("REPLICA_IS_NOT_READY ", it_c, "MC.REMOVE k1 FORCE");
    IT_OK(it_c, "MC.PUTEND %s k1", CA);
    IT_ERR("INVALID_WRITE object is not being written", it_c, "MC.PUTEND %s k1", CA);
    IT_ERR_PREFIX("OBJECT_ALREADY_EXISTS ", it_c, "MC.PUTSTART %s k1 10", CA);
    r = it_cmd(it_c, "MC.GETREPLICAS k1");
    cr_assert_eq(r->elements, 4);
    cr_assert_str_eq(r->element[0]->str, "lease_ttl_ms");
    cr_assert_eq(it_field_int(r, "lease_ttl_ms"), 10000);
    const redisReply *reps = it_field(r, "replicas");
    cr_assert_eq(reps->elements, 1);
    cr_assert_str_eq(it_field_str(reps->element[0], "status"), "COMPLETE");
    cr_assert_eq(it_field_int(reps->element[0], "addr"), addr);
    IT_INT(1, it_c, "MC.EXIST k1");
    cr_assert_eq(mc_used("seg-a"), 1000);
    IT_ERR("OBJECT_NOT_FOUND object not found", it_c, "MC.GETREPLICAS nope");
    IT_ERR("OBJECT_NOT_FOUND object not found", it_c, "MC.PUTEND %s nope", CA);
    IT_INT(0, it_c, "MC.EXIST nope");
    /* Revoke. */
    it_cmd(it_c, "MC.PUTSTART %s k2 64", CA);
    IT_ERR_PREFIX("ILLEGAL_CLIENT ", it_c, "MC.PUTREVOKE %s k2", CB);
    IT_OK(it_c, "MC.PUTREVOKE %s k2", CA);
    IT_ERR_PREFIX("OBJECT_NOT_FOUND ", it_c, "MC.QUERYKEY k2");
    cr_assert_eq(mc_used("seg-a"), 1000);
    /* No space. */
    IT_ERR("NO_AVAILABLE_HANDLE no space available in any segment", it_c, "MC.PUTSTART %s big %d",
           CA, 2 * MIB);
    IT_ERR_PREFIX("CLIENT_NOT_FOUND ", it_c, "MC.PUTSTART %s k3 10",
                  "00000000000000000000000000000009");
}

/* The reply writers keep each segment's rendered fields per thread: a remount with another
 * endpoint and protocol shows at once, and two segments never see each other's fields. */
Test(mc, getreplicas_follows_remount) {
    IT_CRESCENT_ONLY();
    IT_OK(it_c, "MC.REGISTER %s host-a", CA);
    IT_OK(it_c, "MC.MOUNT %s seg-r 0x10000000 %d ENDPOINT 10.0.0.1:1 PROTOCOL tcp", CA, MIB);
    IT_OK(it_c, "MC.MOUNT %s seg-s 0x20000000 %d ENDPOINT 10.0.0.9:9 PROTOCOL shm", CA, MIB);
    const char *pref = "segments 1 seg-r";
    mc_put(CA, "kr", 100, pref);
    mc_put(CA, "ks", 100, "segments 1 seg-s");
    for (int i = 0; i < 3; i++) {
        const redisReply *d = it_field(it_cmd(it_c, "MC.GETREPLICAS kr"), "replicas")->element[0];
        cr_assert_str_eq(it_field_str(d, "segment"), "seg-r");
        cr_assert_str_eq(it_field_str(d, "endpoint"), "10.0.0.1:1");
        cr_assert_str_eq(it_field_str(d, "protocol"), "tcp");
        d = it_field(it_cmd(it_c, "MC.GETREPLICAS ks"), "replicas")->element[0];
        cr_assert_str_eq(it_field_str(d, "segment"), "seg-s");
        cr_assert_str_eq(it_field_str(d, "endpoint"), "10.0.0.9:9");
    }
    IT_OK(it_c, "MC.MOUNT %s seg-r 0x10000000 %d ENDPOINT 10.0.0.2:22 PROTOCOL rdma", CA, MIB);
    const redisReply *d = it_field(it_cmd(it_c, "MC.GETREPLICAS kr"), "replicas")->element[0];
    cr_assert_str_eq(it_field_str(d, "endpoint"), "10.0.0.2:22");
    cr_assert_str_eq(it_field_str(d, "protocol"), "rdma");
    cr_assert_str_eq(it_field_str(d, "desc"), "");
    d = it_field(it_cmd(it_c, "MC.QUERYKEY kr"), "replicas")->element[0];
    cr_assert_str_eq(it_field_str(d, "endpoint"), "10.0.0.2:22");
}

Test(mc, malformed_arguments) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    const char *bad_ids[] = {"xyz", "0123456789abcdef0123456789abcde", /* 31 digits */
                             "0123456789abcdef0123456789abcdeg",
                             "01234567-89ab-cdef-0123456789abcdef",
                             "0123456789abcdef0123456789abcdef0"};
    for (size_t i = 0; i < sizeof(bad_ids) / sizeof(bad_ids[0]); i++)
        IT_ERR("INVALID_PARAMS invalid client id (32 hex digits or a UUID)", it_c,
               "MC.PUTSTART %s k 10", bad_ids[i]);
    IT_ERR("INVALID_PARAMS invalid size", it_c, "MC.PUTSTART %s k 0", CA);
    IT_ERR("INVALID_PARAMS invalid size", it_c, "MC.PUTSTART %s k abc", CA);
    IT_ERR("INVALID_PARAMS invalid size", it_c, "MC.PUTSTART %s k -1", CA);
    IT_ERR("INVALID_PARAMS invalid size", it_c, "MC.PUTSTART %s k 99999999999999999999999", CA);
    IT_ERR("INVALID_PARAMS invalid size", it_c, "MC.PUTSTART %s k 1099511627777", CA);
    IT_ERR("INVALID_PARAMS invalid replica count", it_c, "MC.PUTSTART %s k 10 REPLICAS 0", CA);
    IT_ERR("INVALID_PARAMS invalid replica count", it_c, "MC.PUTSTART %s k 10 REPLICAS 9", CA);
    IT_ERR("ERR syntax error", it_c, "MC.PUTSTART %s k 10 REPLICAS", CA);
    IT_ERR("ERR syntax error", it_c, "MC.PUTSTART %s k 10 NOPE", CA);
    IT_ERR("ERR syntax error", it_c, "MC.PUTSTART %s k 10 SEGMENTS 2 seg-a", CA);
    IT_ERR_PREFIX("INVALID_PARAMS ", it_c, "MC.PUTSTART %s k 10 SOFTPIN_TTL 999999999999", CA);
    IT_ERR("ERR wrong number of arguments for 'mc.putstart' command", it_c, "MC.PUTSTART %s k", CA);
    IT_ERR("ERR wrong number of arguments for 'mc.putend' command", it_c, "MC.PUTEND %s k x", CA);
    IT_ERR("ERR wrong number of arguments for 'mc.getreplicas' command", it_c, "MC.GETREPLICAS");
    IT_ERR("ERR syntax error", it_c, "MC.REMOVE k FORCE extra");
    IT_ERR("ERR syntax error", it_c, "MC.REMOVE k NOTFORCE");
    IT_ERR("INVALID_PARAMS invalid numkeys", it_c, "MC.BATCHREMOVE 3 a b");
    IT_ERR("INVALID_PARAMS invalid numkeys", it_c, "MC.BATCHREMOVE 0 a b");
    IT_ERR("INVALID_PARAMS invalid numkeys", it_c, "MC.BATCHPUTSTART %s 2 a 1 b", CA);
    IT_ERR("INVALID_PARAMS invalid grace period", it_c, "MC.GRACEFULUNMOUNT %s seg-a x", CA);
    IT_ERR_PREFIX("INVALID_PARAMS ", it_c, "MC.REMOVEBYREGEX (unclosed");
    IT_ERR_PREFIX("INVALID_PARAMS ", it_c, "MC.GETREPLICASBYREGEX [z-a]");
    IT_ERR("INVALID_PARAMS invalid parameters", it_c, "MC.GETREPLICAS %s", "");
    IT_ERR("ERR unknown command 'MC.NOPE', with args beginning with: ", it_c, "MC.NOPE");
    /* Nothing leaked from the refused commands. */
    cr_assert_eq(mc_used("seg-a"), 0);
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.STATS"), "objects"), 0);
}

Test(mc, replicas_on_distinct_segments_and_options) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    mc_client(CB, "host-b", "seg-b", 0x20000000, MIB);
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof(key), "r%d", i);
        redisReply *r = it_cmd(it_c, "MC.PUTSTART %s %s 100 REPLICAS 2", CA, key);
        IT_TYPE(r, REDIS_REPLY_ARRAY);
        cr_assert_eq(r->elements, 2);
        cr_assert_str_neq(it_field_str(r->element[0], "segment"),
                          it_field_str(r->element[1], "segment"));
    }
    /* Best effort: 3 asked, 2 segments exist. */
    redisReply *r = it_cmd(it_c, "MC.PUTSTART %s r3x 100 REPLICAS 3", CA);
    cr_assert_eq(r->elements, 2);
    /* Preferred segment first. */
    for (int i = 0; i < 5; i++) {
        r = it_cmd(it_c, "MC.PUTSTART %s p%d 100 SEGMENTS 1 seg-b", CA, i);
        cr_assert_str_eq(it_field_str(r->element[0], "segment"), "seg-b");
    }
    /* Same node first. */
    for (int i = 0; i < 5; i++) {
        r = it_cmd(it_c, "MC.PUTSTART %s n%d 100 PREFER_SAME_NODE", CB, i);
        cr_assert_str_eq(it_field_str(r->element[0], "segment"), "seg-b");
    }
    mc_put(CA, "hp", 10, "HARDPIN SOFTPIN_TTL 1000");
    r = it_cmd(it_c, "MC.QUERYKEY hp");
    cr_assert_eq(it_field_int(r, "hard_pin"), 1);
    cr_assert_eq(it_field_int(r, "soft_pin"), 1);
    cr_assert_eq(it_field_int(r, "lease_ms"), 0, "an admin read grants no lease");
    IT_ERR_PREFIX("OBJECT_HAS_LEASE ", it_c, "MC.REMOVE hp");
    IT_OK(it_c, "MC.REMOVE hp FORCE");
}

Test(mc, lease_blocks_remove_force_does_not) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    mc_put(CA, "k", 100, NULL);
    IT_OK(it_c, "MC.REMOVE k"); /* no lease yet */
    mc_put(CA, "k", 100, NULL);
    it_cmd(it_c, "MC.GETREPLICAS k");
    IT_ERR("OBJECT_HAS_LEASE object has a lease", it_c, "MC.REMOVE k");
    redisReply *r = it_cmd(it_c, "MC.QUERYKEY k");
    cr_assert_gt(it_field_int(r, "lease_ms"), 0);
    cr_assert_str_eq(it_field_str(r, "task"), "none");
    IT_OK(it_c, "MC.REMOVE k FORCE");
    IT_ERR_PREFIX("OBJECT_NOT_FOUND ", it_c, "MC.REMOVE k");
    mc_put(CA, "e", 100, NULL);
    IT_INT(1, it_c, "MC.EXIST e"); /* exist grants a lease too */
    IT_ERR_PREFIX("OBJECT_HAS_LEASE ", it_c, "MC.REMOVE e");
    IT_INT(0, it_c, "MC.REMOVEALL");
    IT_INT(1, it_c, "MC.REMOVEALL FORCE");
    cr_assert_eq(mc_used("seg-a"), 0);
}

Test(mc, upsert_same_size_same_addr) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    redisReply *r = it_cmd(it_c, "MC.UPSERTSTART %s u 100", CA); /* missing: a put */
    long long a1 = it_field_int(r->element[0], "addr");
    IT_OK(it_c, "MC.UPSERTEND %s u", CA);
    r = it_cmd(it_c, "MC.UPSERTSTART %s u 100", CA);
    cr_assert_eq(it_field_int(r->element[0], "addr"), a1, "same size: rewritten in place");
    IT_ERR_PREFIX("OBJECT_REPLICA_BUSY ", it_c, "MC.UPSERTSTART %s u 100", CA);
    IT_OK(it_c, "MC.UPSERTEND %s u", CA);
    it_cmd(it_c, "MC.GETREPLICAS u"); /* a reader keeps the old buffer until its lease ends */
    r = it_cmd(it_c, "MC.UPSERTSTART %s u 5000", CA);
    cr_assert_eq(it_field_int(r->element[0], "size"), 5000);
    cr_assert_neq(it_field_int(r->element[0], "addr"), a1, "another size: new buffer");
    IT_OK(it_c, "MC.UPSERTEND %s u", CA);
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.QUERYKEY u"), "size"), 5000);
    it_cmd(it_c, "MC.UPSERTSTART %s u 10", CA);
    IT_OK(it_c, "MC.UPSERTREVOKE %s u", CA);
    IT_ERR_PREFIX("OBJECT_NOT_FOUND ", it_c, "MC.QUERYKEY u");
    IT_INT(0, it_c, "MC.REMOVEALL FORCE");
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.STATS"), "objects"), 0);
}

Test(mc, regex_reads_and_removal) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    mc_put(CA, "user:1", 10, NULL);
    mc_put(CA, "user:2", 10, NULL);
    mc_put(CA, "item:1", 10, NULL);
    it_cmd(it_c, "MC.PUTSTART %s user:3 10", CA); /* being written: not listed */
    redisReply *r = it_cmd(it_c, "MC.GETREPLICASBYREGEX ^user:[0-9]+$");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4, "two keys, flat key/replicas pairs");
    cr_assert_eq(it_field(r, "user:1")->elements, 1);
    cr_assert_eq(it_field(r, "user:2")->elements, 1);
    /* The regex read granted leases. */
    IT_INT(0, it_c, "MC.REMOVEBYREGEX ^user:");
    IT_INT(2, it_c, "MC.REMOVEBYREGEX ^user: FORCE"); /* user:3 is being written */
    IT_INT(1, it_c, "MC.REMOVEBYREGEX item");
    cr_assert_eq(it_cmd(it_c, "MC.GETREPLICASBYREGEX .")->elements, 0);
    IT_OK(it_c, "MC.PUTREVOKE %s user:3", CA);
    cr_assert_eq(mc_used("seg-a"), 0);
}

Test(mc, batch_forms_one_result_per_key) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    mc_put(CA, "b", 10, NULL);
    redisReply *r = it_cmd(it_c, "MC.BATCHPUTSTART %s 3 a 10 b 20 c 30 REPLICAS 1", CA);
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 3);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(it_field_int(r->element[0]->element[0], "size"), 10);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_ERROR);
    cr_assert_str_eq(r->element[1]->str, "OBJECT_ALREADY_EXISTS object already exists");
    cr_assert_eq(it_field_int(r->element[2]->element[0], "size"), 30);
    r = it_cmd(it_c, "MC.BATCHPUTEND %s a c zz", CA);
    cr_assert_eq(r->elements, 3);
    cr_assert(r->element[0]->type == REDIS_REPLY_STATUS && !strcmp(r->element[0]->str, "OK"));
    cr_assert(r->element[1]->type == REDIS_REPLY_STATUS && !strcmp(r->element[1]->str, "OK"));
    cr_assert(r->element[2]->type == REDIS_REPLY_ERROR &&
              !strncmp(r->element[2]->str, "OBJECT_NOT_FOUND ", 17));
    r = it_cmd(it_c, "MC.BATCHEXIST a zz c");
    cr_assert_eq(r->elements, 3);
    cr_assert(r->element[0]->integer == 1 && r->element[1]->integer == 0 &&
              r->element[2]->integer == 1);
    r = it_cmd(it_c, "MC.BATCHGETREPLICAS a zz");
    cr_assert_eq(r->elements, 2);
    cr_assert_eq(it_field_int(r->element[0], "lease_ttl_ms"), 10000);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_ERROR);
    r = it_cmd(it_c, "MC.BATCHREMOVE 3 a b zz");
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_ERROR, "a is leased");
    cr_assert(!strncmp(r->element[0]->str, "OBJECT_HAS_LEASE ", 17));
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_STATUS, "b has no lease");
    cr_assert_eq(r->element[2]->type, REDIS_REPLY_ERROR);
    r = it_cmd(it_c, "MC.BATCHREMOVE 2 a FORCE FORCE"); /* a key may be spelled FORCE */
    cr_assert_eq(r->elements, 2);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_STATUS);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_ERROR);
    /* Upsert batches. */
    r = it_cmd(it_c, "MC.BATCHUPSERTSTART %s 2 c 30 d 40", CA);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_ARRAY);
    r = it_cmd(it_c, "MC.BATCHUPSERTEND %s c", CA);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_STATUS);
    r = it_cmd(it_c, "MC.BATCHUPSERTREVOKE %s d d", CA);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_STATUS);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_ERROR);
    r = it_cmd(it_c, "MC.BATCHPUTSTART %s 1 e 5", CA);
    r = it_cmd(it_c, "MC.BATCHPUTREVOKE %s e", CA);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_STATUS);
    IT_INT(1, it_c, "MC.REMOVEALL FORCE");
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.STATS"), "objects"), 0);
}

Test(mc, batch_replica_clear_only_that_client_and_segment) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a1", 0x10000000, MIB);
    IT_OK(it_c, "MC.MOUNT %s seg-a2 0x20000000 %d", CA, MIB);
    mc_client(CB, "host-b", "seg-b", 0x30000000, MIB);
    for (int i = 0; i < 4; i++) {
        redisReply *r = it_cmd(it_c, "MC.PUTSTART %s x%d 100 SEGMENTS 2 %s seg-b REPLICAS 2", CA, i,
                               i % 2 ? "seg-a1" : "seg-a2");
        cr_assert_eq(r->elements, 2);
        IT_OK(it_c, "MC.PUTEND %s x%d", CA, i);
    }
    IT_ERR_PREFIX("ILLEGAL_CLIENT ", it_c, "MC.BATCHREPLICACLEAR %s seg-b x0", CA);
    IT_ERR_PREFIX("SEGMENT_NOT_FOUND ", it_c, "MC.BATCHREPLICACLEAR %s nope x0", CA);
    redisReply *r = it_cmd(it_c, "MC.BATCHREPLICACLEAR %s seg-a1 x0 x1 x2 x3 zz", CA);
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 5);
    long long want[] = {0, 1, 0, 1, 0};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(r->element[i]->integer, want[i], "key %d", i);
    cr_assert_eq(mc_used("seg-a1"), 0);
    cr_assert_eq(mc_used("seg-a2"), 200);
    cr_assert_eq(mc_used("seg-b"), 400);
    r = it_cmd(it_c, "MC.BATCHREPLICACLEAR %s %s x0 x1 x2 x3", CB, "");
    for (int i = 0; i < 4; i++)
        cr_assert_eq(r->element[i]->integer, 1);
    cr_assert_eq(mc_used("seg-b"), 0);
    IT_ERR_PREFIX("OBJECT_NOT_FOUND ", it_c, "MC.QUERYKEY x1"); /* no replica left */
    cr_assert_eq(it_field(it_cmd(it_c, "MC.QUERYKEY x0"), "replicas")->elements, 1);
}

Test(mc, copy_and_move) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    mc_client(CB, "host-b", "seg-b", 0x20000000, MIB);
    IT_OK(it_c, "MC.MOUNT %s seg-c 0x30000000 %d", CB, MIB);
    mc_put(CA, "k", 100, "SEGMENTS 1 seg-a");
    redisReply *r = it_cmd(it_c, "MC.COPYSTART %s k seg-a seg-b", CB);
    cr_assert_str_eq(it_field_str(it_field(r, "source"), "segment"), "seg-a");
    cr_assert_str_eq(it_field_str(it_field(r, "source"), "status"), "COMPLETE");
    const redisReply *t = it_field(r, "targets");
    cr_assert_eq(t->elements, 1);
    cr_assert_str_eq(it_field_str(t->element[0], "segment"), "seg-b");
    cr_assert_str_eq(it_field_str(t->element[0], "status"), "PROCESSING");
    cr_assert_str_eq(it_field_str(it_cmd(it_c, "MC.QUERYKEY k"), "task"), "copy");
    IT_ERR_PREFIX("OBJECT_HAS_REPLICATION_TASK ", it_c, "MC.COPYSTART %s k seg-a seg-c", CB);
    IT_ERR_PREFIX("ILLEGAL_CLIENT ", it_c, "MC.COPYEND %s k", CA);
    IT_OK(it_c, "MC.COPYEND %s k", CB);
    IT_ERR_PREFIX("OBJECT_NO_REPLICATION_TASK ", it_c, "MC.COPYEND %s k", CB);
    cr_assert_eq(it_field(it_cmd(it_c, "MC.QUERYKEY k"), "replicas")->elements, 2);
    IT_ERR_PREFIX("OBJECT_ALREADY_EXISTS ", it_c, "MC.COPYSTART %s k seg-a seg-b", CB);
    IT_ERR_PREFIX("SEGMENT_NOT_FOUND ", it_c, "MC.COPYSTART %s k seg-a nope", CB);
    IT_ERR_PREFIX("REPLICA_NOT_FOUND ", it_c, "MC.COPYSTART %s k seg-c seg-a", CB);
    it_cmd(it_c, "MC.COPYSTART %s k seg-a seg-c", CB);
    IT_OK(it_c, "MC.COPYREVOKE %s k", CB);
    cr_assert_eq(mc_used("seg-c"), 0);
    /* Move seg-b -> seg-c. */
    r = it_cmd(it_c, "MC.MOVESTART %s k seg-b seg-c", CA);
    cr_assert_eq(it_field(r, "targets")->elements, 1);
    cr_assert_str_eq(it_field_str(it_cmd(it_c, "MC.QUERYKEY k"), "task"), "move");
    IT_OK(it_c, "MC.MOVEEND %s k", CA);
    cr_assert_eq(mc_used("seg-b"), 0);
    cr_assert_eq(mc_used("seg-c"), 100);
    it_cmd(it_c, "MC.MOVESTART %s k seg-c seg-b", CA);
    IT_OK(it_c, "MC.MOVEREVOKE %s k", CA);
    IT_ERR_PREFIX("INVALID_PARAMS ", it_c, "MC.MOVESTART %s k seg-c seg-c", CA);
    IT_ERR_PREFIX("INVALID_PARAMS ", it_c, "MC.COPYSTART %s k seg-a s1 s2 s3 s4 s5 s6 s7 s8 s9",
                  CA);
    IT_INT(1, it_c, "MC.REMOVEALL FORCE");
    cr_assert_eq(mc_used("seg-a") + mc_used("seg-b") + mc_used("seg-c"), 0);
}

Test(mc, removeall_force_returns_every_byte) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, 4 * MIB);
    mc_client(CB, "host-b", "seg-b", 0x20000000, 4 * MIB);
    for (int i = 0; i < 200; i++) {
        char key[16];
        snprintf(key, sizeof(key), "k%d", i);
        mc_put(i % 2 ? CA : CB, key, 100 + i, i % 3 ? "REPLICAS 2" : "HARDPIN");
        if (i % 5 == 0)
            it_cmd(it_c, "MC.GETREPLICAS %s", key);
    }
    it_cmd(it_c, "MC.PUTSTART %s inflight 100", CA);
    IT_OK(it_c, "MC.PUTREVOKE %s inflight", CA);
    IT_INT(200, it_c, "MC.REMOVEALL FORCE");
    redisReply *r = it_cmd(it_c, "MC.SEGMENTS");
    cr_assert_eq(r->elements, 2);
    for (size_t i = 0; i < r->elements; i++)
        cr_assert_eq(it_field_int(r->element[i], "used"), 0, "segment %zu leaks", i);
    r = it_cmd(it_c, "MC.STATS");
    cr_assert_eq(it_field_int(r, "objects"), 0);
    cr_assert_eq(it_field_int(r, "used"), 0);
    cr_assert_eq(it_field_int(r, "allocated"), 0);
    cr_assert_eq(it_field_int(r, "segments"), 2);
    cr_assert_eq(it_field_int(r, "clients"), 2);
    cr_assert_eq(it_field_int(r, "capacity"), 8 * MIB);
}

Test(mc, keyspace_sees_pool_objects) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    mc_put(CA, "k", 10, NULL);
    IT_OK(it_c, "SET plain v"); /* into the embedded segment, not the pool */
    IT_INT(2, it_c, "DBSIZE");
    IT_INT(1, it_c, "EXISTS k");
    IT_INT(10, it_c, "STRLEN k");
    IT_STATUS("string", it_c, "TYPE k");
    IT_NIL(it_c, "GET k"); /* its segment (a made-up descriptor) cannot be read */
    redisReply *r = it_cmd(it_c, "INFO keyspace");
    cr_assert(strstr(r->str, "db0:keys=2,") != NULL, "%s", r->str);
    IT_INT(0, it_c, "MC.EXIST plain");
    IT_OK(it_c, "FLUSHALL");
    IT_INT(0, it_c, "MC.EXIST k"); /* FLUSHALL takes pool objects too */
    IT_INT(0, it_c, "DBSIZE");
}

Test(mc, resp3_maps) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 4096, MIB);
    mc_put(CA, "k", 7, NULL);
    int fd = it_raw_open(it_srv.port);
    size_t len;
    const char hello[] = "HELLO 3\r\n";
    it_raw_send(fd, hello, sizeof(hello) - 1);
    free(it_raw_read(fd, &len));
    const char get[] = "MC.GETREPLICAS k\r\n";
    it_raw_send(fd, get, sizeof(get) - 1);
    char *got = it_raw_read(fd, &len);
    const char *want = "%2\r\n$12\r\nlease_ttl_ms\r\n:10000\r\n$8\r\nreplicas\r\n*1\r\n%8\r\n"
                       "$4\r\ntype\r\n$6\r\nMEMORY\r\n$6\r\nstatus\r\n$8\r\nCOMPLETE\r\n"
                       "$7\r\nsegment\r\n$5\r\nseg-a\r\n$8\r\nendpoint\r\n$14\r\n127.0.0.1:7000\r\n"
                       "$8\r\nprotocol\r\n$3\r\ntcp\r\n$4\r\ndesc\r\n$0\r\n\r\n"
                       "$4\r\naddr\r\n:4096\r\n$4\r\nsize\r\n:7\r\n";
    cr_assert_str_eq(got, want);
    free(got);
    const char ping[] = "MC.PING " CA "\r\n";
    it_raw_send(fd, ping, sizeof(ping) - 1);
    got = it_raw_read(fd, &len);
    const char pre[] = "%2\r\n$12\r\nview_version\r\n:";
    cr_assert(strncmp(got, pre, sizeof(pre) - 1) == 0, "%s", got);
    cr_assert(strstr(got, "$6\r\nstatus\r\n$2\r\nOK\r\n") != NULL, "%s", got);
    free(got);
    const char batch[] = "MC.BATCHGETREPLICAS nope\r\n";
    it_raw_send(fd, batch, sizeof(batch) - 1);
    got = it_raw_read(fd, &len);
    cr_assert_str_eq(got, "*1\r\n-OBJECT_NOT_FOUND object not found\r\n");
    free(got);
    const char rx[] = "MC.GETREPLICASBYREGEX ^k$\r\n";
    it_raw_send(fd, rx, sizeof(rx) - 1);
    got = it_raw_read(fd, &len);
    cr_assert(strncmp(got, "%1\r\n$1\r\nk\r\n*1\r\n%8\r\n", 19) == 0, "%s", got);
    free(got);
    close(fd);
}

/* Sends cmd on raw connection fd and checks the reply byte for byte. */
static void mc_raw_is(int fd, const char *cmd, const char *want) {
    size_t len;
    it_raw_send(fd, cmd, strlen(cmd));
    char *got = it_raw_read(fd, &len);
    cr_assert_str_eq(got, want, "%s", cmd);
    free(got);
}

/* MC.REPLYFORMAT COMPACT (docs/store.md "Compact replies"): the hot commands' replies byte for
 * byte, the same under RESP2 and RESP3, per connection, and FULL switching back. */
Test(mc, compact_replies) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 4096, MIB);
    IT_OK(it_c, "MC.REGISTER %s host-b", CB);
    IT_OK(it_c, "MC.MOUNT %s seg-b 8388608 %d", CB, MIB);
    mc_put(CA, "k", 7, "SEGMENTS 1 seg-a");
    mc_put(CA, "j", 9, "SEGMENTS 1 seg-b");
    IT_ERR("ERR syntax error", it_c, "MC.REPLYFORMAT tiny");
    IT_ERR("ERR wrong number of arguments for 'mc.replyformat' command", it_c, "MC.REPLYFORMAT");
    for (int proto = 2; proto <= 3; proto++) {
        int fd = it_raw_open(it_srv.port);
        size_t len;
        if (proto == 3) {
            it_raw_send(fd, "HELLO 3\r\n", 9);
            free(it_raw_read(fd, &len));
        }
        mc_raw_is(fd, "MC.REPLYFORMAT compact\r\n", "+OK\r\n");
        const char *seg_a = "*4\r\n$5\r\nseg-a\r\n$14\r\n127.0.0.1:7000\r\n$3\r\ntcp\r\n$0\r\n\r\n";
        const char *seg_b = "*4\r\n$5\r\nseg-b\r\n$0\r\n\r\n$3\r\ntcp\r\n$0\r\n\r\n";
        char want[1024];
        /* [lease_ttl_ms, promote, segment index, type, addr, size], then the segment table */
        snprintf(want, sizeof(want),
                 "*2\r\n*6\r\n:10000\r\n:0\r\n:0\r\n:0\r\n:4096\r\n:7\r\n*1\r\n%s", seg_a);
        mc_raw_is(fd, "MC.GETREPLICAS k\r\n", want);
        /* one table entry per distinct segment, in first-use order; an error element per key */
        snprintf(want, sizeof(want),
                 "*2\r\n*4\r\n*6\r\n:10000\r\n:0\r\n:0\r\n:0\r\n:8388608\r\n:9\r\n"
                 "-OBJECT_NOT_FOUND object not found\r\n"
                 "*6\r\n:10000\r\n:0\r\n:1\r\n:0\r\n:4096\r\n:7\r\n"
                 "*6\r\n:10000\r\n:0\r\n:0\r\n:0\r\n:8388608\r\n:9\r\n*2\r\n%s%s",
                 seg_b, seg_a);
        mc_raw_is(fd, "MC.BATCHGETREPLICAS j nope k j\r\n", want);
        mc_raw_is(fd, "MC.GETREPLICAS nope\r\n", "-OBJECT_NOT_FOUND object not found\r\n");
        /* put start: [segment index, type, addr, size] per replica */
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "MC.PUTSTART %s p%d 5 SEGMENTS 1 seg-a\r\n", CA, proto);
        snprintf(want, sizeof(want), "*2\r\n*4\r\n:0\r\n:0\r\n:%d\r\n:5\r\n*1\r\n%s",
                 proto == 2 ? 4160 : 4224, seg_a);
        mc_raw_is(fd, cmd, want);
        snprintf(cmd, sizeof(cmd), "MC.BATCHPUTSTART %s 2 k 3 q%d 11 SEGMENTS 1 seg-b\r\n", CA,
                 proto);
        snprintf(want, sizeof(want),
                 "*2\r\n*2\r\n-OBJECT_ALREADY_EXISTS object already exists\r\n"
                 "*4\r\n:0\r\n:0\r\n:%d\r\n:11\r\n*1\r\n%s",
                 proto == 2 ? 8388672 : 8388736, seg_b);
        mc_raw_is(fd, cmd, want);
        snprintf(cmd, sizeof(cmd), "MC.UPSERTSTART %s u%d 7\r\n", CA, proto);
        it_raw_send(fd, cmd, strlen(cmd));
        char *got = it_raw_read(fd, &len);
        cr_assert(strncmp(got, "*2\r\n*4\r\n:0\r\n:0\r\n:", 17) == 0, "%s", got);
        free(got);
        snprintf(cmd, sizeof(cmd), "MC.UPSERTREVOKE %s u%d\r\n", CA, proto);
        free((it_raw_send(fd, cmd, strlen(cmd)), it_raw_read(fd, &len)));
        /* other commands keep their form; FULL switches back */
        it_raw_send(fd, "MC.QUERYKEY k\r\n", 15);
        got = it_raw_read(fd, &len);
        cr_assert(strstr(got, "$4\r\ntype\r\n$6\r\nMEMORY\r\n") != NULL, "%s", got);
        free(got);
        mc_raw_is(fd, "MC.REPLYFORMAT FULL\r\n", "+OK\r\n");
        it_raw_send(fd, "MC.GETREPLICAS k\r\n", 18);
        got = it_raw_read(fd, &len);
        cr_assert(strncmp(got,
                          proto == 2 ? "*4\r\n$12\r\nlease_ttl_ms" : "%2\r\n$12\r\nlease_ttl_ms",
                          21) == 0,
                  "%s", got);
        free(got);
        close(fd);
    }
    /* The form is per connection: this one never asked. */
    redisReply *r = it_cmd(it_c, "MC.GETREPLICAS k");
    cr_assert_eq(it_field_int(r, "lease_ttl_ms"), 10000);
}

Test(mc, multi_exec_and_command_table) {
    IT_CRESCENT_ONLY();
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "MC.PUTSTART %s t 10", CA);
    IT_STATUS("QUEUED", it_c, "MC.PUTEND %s t", CA);
    IT_STATUS("QUEUED", it_c, "SET plain 1");
    IT_STATUS("QUEUED", it_c, "MC.EXIST t");
    redisReply *r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_STATUS);
    cr_assert_eq(r->element[3]->integer, 1);
    /* A queue-time arity error aborts the transaction. */
    IT_OK(it_c, "MULTI");
    IT_ERR("ERR wrong number of arguments for 'mc.exist' command", it_c, "MC.EXIST");
    IT_ERR_PREFIX("EXECABORT ", it_c, "EXEC");
    /* Table entries. */
    r = it_cmd(it_c, "COMMAND INFO mc.getreplicas mc.putstart");
    cr_assert_eq(r->elements, 2);
    cr_assert_str_eq(r->element[0]->element[0]->str, "mc.getreplicas");
    cr_assert_eq(r->element[0]->element[1]->integer, 2);
    const redisReply *fl = r->element[0]->element[2];
    cr_assert(fl->elements == 2 && !strcmp(fl->element[0]->str, "readonly") &&
              !strcmp(fl->element[1]->str, "fast"));
    cr_assert_eq(r->element[1]->element[1]->integer, -4);
    cr_assert_str_eq(r->element[1]->element[2]->element[0]->str, "write");
    r = it_cmd(it_c, "COMMAND DOCS mc.querykey");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 2);
    cr_assert_str_eq(it_field_str(r->element[1], "group"), "crescent");
    r = it_cmd(it_c, "COMMAND LIST");
    int n = 0;
    for (size_t i = 0; i < r->elements; i++)
        n += strncmp(r->element[i]->str, "mc.", 3) == 0;
    cr_assert_eq(n, 50, "every MC.* command is in the table");
}

Test(mc, auth_required) {
    IT_CRESCENT_ONLY();
    mc_restart(NULL, "sesame");
    IT_ERR("NOAUTH Authentication required.", it_c, "MC.REGISTER %s h", CA);
    IT_ERR("NOAUTH Authentication required.", it_c, "MC.GETREPLICAS k");
    IT_OK(it_c, "AUTH sesame");
    IT_OK(it_c, "MC.REGISTER %s h", CA);
}

Test(mc, client_expiry_drops_replicas) {
    IT_CRESCENT_ONLY();
    mc_restart("client_ttl 1\n", NULL); /* Mooncake's flag name */
    cr_assert_str_eq(it_cmd(it_c, "CONFIG GET client_live_ttl_sec")->element[1]->str, "1");
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    mc_client(CB, "host-b", "seg-b", 0x20000000, MIB);
    mc_put(CA, "only-a", 100, "SEGMENTS 1 seg-a");
    mc_put(CA, "both", 100, "REPLICAS 2");
    /* Keep B alive, let A go silent until its ping answers NEED_REMOUNT. */
    for (int i = 0; i < 200 && it_cmd(it_c, "MC.SEGMENTS")->elements != 1; i++) {
        it_sleep_ms(100);
        IT_TYPE(it_cmd(it_c, "MC.PING %s", CB), REDIS_REPLY_ARRAY);
    }
    redisReply *s = it_cmd(it_c, "MC.SEGMENTS");
    cr_assert_eq(s->elements, 1, "A's segment was unmounted");
    cr_assert_str_eq(it_field_str(s->element[0], "name"), "seg-b");
    IT_ERR("OBJECT_NOT_FOUND object not found", it_c, "MC.GETREPLICAS only-a");
    redisReply *r = it_cmd(it_c, "MC.GETREPLICAS both");
    const redisReply *reps = it_field(r, "replicas");
    cr_assert_eq(reps->elements, 1);
    cr_assert_str_eq(it_field_str(reps->element[0], "segment"), "seg-b");
    cr_assert_str_eq(it_field_str(it_cmd(it_c, "MC.PING %s", CA), "status"), "NEED_REMOUNT");
    IT_ERR_PREFIX("CLIENT_NOT_FOUND ", it_c, "MC.PUTSTART %s x 10", CA);
}

Test(mc, zombie_put_preempted_after_discard_timeout) {
    IT_CRESCENT_ONLY();
    mc_restart("put_start_discard_timeout_sec 1\nput_start_release_timeout_sec 2\n", NULL);
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    IT_OK(it_c, "MC.REGISTER %s host-b", CB);
    it_cmd(it_c, "MC.PUTSTART %s z 100", CA);
    IT_ERR_PREFIX("OBJECT_ALREADY_EXISTS ", it_c, "MC.PUTSTART %s z 100", CB);
    redisReply *r = NULL;
    for (int i = 0; i < 100; i++) { /* pre-emptible once a second has passed */
        it_sleep_ms(100);
        r = it_cmd(it_c, "MC.PUTSTART %s z 100", CB);
        if (r->type == REDIS_REPLY_ARRAY)
            break;
        cr_assert_str_eq(r->str, "OBJECT_ALREADY_EXISTS object already exists");
    }
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    IT_ERR_PREFIX("ILLEGAL_CLIENT ", it_c, "MC.PUTEND %s z", CA); /* the old writer lost it */
    IT_OK(it_c, "MC.PUTEND %s z", CB);
    /* The pre-empted buffer is released by the housekeeping thread after the release timeout. */
    long long used = it_field_int(it_cmd(it_c, "MC.STATS"), "used");
    cr_assert_eq(used, 200, "old buffer kept until the release timeout");
    for (int i = 0; i < 100 && used != 100; i++) {
        it_sleep_ms(100);
        IT_TYPE(it_cmd(it_c, "MC.PING %s", CA), REDIS_REPLY_ARRAY);
        IT_TYPE(it_cmd(it_c, "MC.PING %s", CB), REDIS_REPLY_ARRAY);
        used = it_field_int(it_cmd(it_c, "MC.STATS"), "used");
    }
    cr_assert_eq(used, 100);
}

Test(mc, config_settings) {
    IT_CRESCENT_ONLY();
    redisReply *r = it_cmd(it_c, "CONFIG GET allocation_strategy");
    cr_assert_eq(r->elements, 2);
    cr_assert_str_eq(r->element[1]->str, "random");
    IT_OK(it_c, "CONFIG SET allocation_strategy free_ratio_first");
    IT_ERR_PREFIX("ERR CONFIG SET failed (possibly related to argument 'allocation_strategy')",
                  it_c, "CONFIG SET allocation_strategy cxl");
    IT_OK(it_c, "CONFIG SET default_kv_lease_ttl 500");
    mc_client(CA, "host-a", "seg-a", 0x10000000, MIB);
    mc_put(CA, "k", 10, NULL);
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.GETREPLICAS k"), "lease_ttl_ms"), 500);
    IT_ERR_PREFIX("ERR CONFIG SET failed (possibly related to argument "
                  "'put_start_release_timeout_sec') - pool settings refused",
                  it_c, "CONFIG SET put_start_release_timeout_sec 1");
    r = it_cmd(it_c, "CONFIG GET put_start_release_timeout_sec");
    cr_assert_str_eq(r->element[1]->str, "600", "refused value restored");
    r = it_cmd(it_c, "CONFIG GET client_ttl");
    cr_assert_eq(r->elements, 2);
    cr_assert_str_eq(r->element[1]->str, "10");
}
