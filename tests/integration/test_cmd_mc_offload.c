/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for the MC.* commands of the client SSD tiers (docs/store.md, "SSD tier"):
 * a fake client mounts a segment and a local-disk segment, fetches its offload queue, reports
 * keys, and the LOCAL_DISK replicas show in MC.QUERYKEY and MC.GETREPLICAS; unmount and
 * expiry drop them; a master without enable_offload refuses the disk. Crescent-only. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CA "0123456789abcdef0123456789abcdef"
#define CB "fedcba9876543210fedcba9876543210"

/* The made-up segments are the pool's only ones: the embedded segment stays out of it. */
#define MCO_CONF "embedded_segment_in_pool no\n"

static void mco_setup(void) {
    struct it_opts o = {.conf = MCO_CONF};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
}

TestSuite(mco, .init = mco_setup, .fini = it_teardown, .timeout = 60);

static void mco_restart(const char *conf) {
    it_teardown();
    char text[512];
    snprintf(text, sizeof(text), "%s%s", MCO_CONF, conf);
    struct it_opts o = {.conf = text};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
}

static void mco_client(const char *id, const char *seg, unsigned long long base) {
    IT_OK(it_c, "MC.REGISTER %s host-%s", id, seg);
    IT_OK(it_c, "MC.MOUNT %s %s %llu 1048576 ENDPOINT 127.0.0.1:7000 PROTOCOL tcp", id, seg, base);
}

static void mco_put(const char *id, const char *key, const char *seg) {
    redisReply *r = it_cmd(it_c, "MC.PUTSTART %s %s 100 SEGMENTS 1 %s", id, key, seg);
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    IT_OK(it_c, "MC.PUTEND %s %s", id, key);
}

Test(mco, refused_without_enable_offload) {
    IT_CRESCENT_ONLY();
    mco_client(CA, "sa", 1 << 20);
    IT_ERR("UNABLE_OFFLOAD offload is not enabled on the master", it_c,
           "MC.MOUNTDISK %s 127.0.0.1:9100", CA);
}

Test(mco, mount_fetch_done_query_unmount) {
    IT_CRESCENT_ONLY();
    mco_restart("enable_offload yes\n");
    mco_client(CA, "sa", 1 << 20);
    mco_client(CB, "sb", 1 << 20);
    IT_OK(it_c, "MC.MOUNTDISK %s 127.0.0.1:9100", CA);
    IT_ERR("SEGMENT_NOT_FOUND segment not found", it_c, "MC.OFFLOADFETCH %s 10", CB);
    IT_ERR("CLIENT_NOT_FOUND client not found", it_c,
           "MC.MOUNTDISK 00000000000000000000000000000001 x:1");
    mco_put(CA, "k1", "sa");
    mco_put(CB, "k2", "sb"); /* sb's owner has no disk: not queued */
    redisReply *q = it_cmd(it_c, "MC.QUERYDISK %s", CA);
    cr_assert_str_eq(it_field_str(q, "endpoint"), "127.0.0.1:9100");
    cr_assert_eq(it_field_int(q, "queued"), 1);
    redisReply *f = it_cmd(it_c, "MC.OFFLOADFETCH %s 10", CA);
    IT_TYPE(f, REDIS_REPLY_ARRAY);
    cr_assert_eq(f->elements, 1);
    cr_assert_str_eq(it_field_str(f->element[0], "key"), "k1");
    cr_assert_eq(it_field_int(f->element[0], "size"), 100);
    const redisReply *rep = it_field(f->element[0], "replica");
    cr_assert_str_eq(it_field_str(rep, "type"), "MEMORY");
    cr_assert_str_eq(it_field_str(rep, "segment"), "sa");
    cr_assert_geq(it_field_int(rep, "addr"), 1 << 20);
    cr_assert_eq(it_field_int(f->element[0], "lease_ttl_ms"), 10000);
    redisReply *d = it_cmd(it_c, "MC.OFFLOADDONE %s k1 100 k2 101 restored 7", CA);
    IT_TYPE(d, REDIS_REPLY_ARRAY);
    cr_assert_eq(d->elements, 3);
    cr_assert_str_eq(d->element[0]->str, "OK");
    cr_assert_eq(d->element[1]->type, REDIS_REPLY_ERROR);
    cr_assert_str_eq(d->element[1]->str, "OBJECT_ALREADY_EXISTS object already exists",
                     "k2 was not fetched by this client: its live value wins");
    cr_assert_str_eq(d->element[2]->str, "OK");
    IT_ERR("ERR syntax error", it_c, "MC.OFFLOADDONE %s k1 100 k2", CA);
    /* MC.QUERYKEY shows both replicas; a disk-only key shows its owner's endpoint. */
    redisReply *k = it_cmd(it_c, "MC.QUERYKEY k1");
    const redisReply *reps = it_field(k, "replicas");
    cr_assert_eq(reps->elements, 2);
    cr_assert_str_eq(it_field_str(reps->element[1], "type"), "LOCAL_DISK");
    cr_assert_str_eq(it_field_str(reps->element[1], "endpoint"), "127.0.0.1:9100");
    redisReply *g = it_cmd(it_c, "MC.GETREPLICAS restored");
    reps = it_field(g, "replicas");
    cr_assert_eq(reps->elements, 1);
    cr_assert_str_eq(it_field_str(reps->element[0], "type"), "LOCAL_DISK");
    cr_assert_str_eq(it_field_str(reps->element[0], "protocol"), "offload");
    cr_assert_eq(it_field_int(reps->element[0], "size"), 7);
    IT_NIL(it_c, "GET restored"); /* plain GET reads memory replicas only */
    redisReply *s = it_cmd(it_c, "MC.OFFLOADSTATS");
    cr_assert_eq(it_field_int(s, "disks"), 1);
    cr_assert_eq(it_field_int(s, "disk_replicas"), 2);
    cr_assert_eq(it_field_int(s, "fetched"), 1);
    IT_OK(it_c, "MC.UNMOUNTDISK %s", CA);
    IT_ERR("OBJECT_NOT_FOUND object not found", it_c, "MC.GETREPLICAS restored");
    reps = it_field(it_cmd(it_c, "MC.QUERYKEY k1"), "replicas");
    cr_assert_eq(reps->elements, 1);
    IT_ERR("SEGMENT_NOT_FOUND segment not found", it_c, "MC.UNMOUNTDISK %s", CA);
}

Test(mco, expiry_drops_disk_replicas) {
    IT_CRESCENT_ONLY();
    mco_restart("enable_offload yes\nclient_live_ttl_sec 1\n");
    mco_client(CA, "sa", 1 << 20);
    IT_OK(it_c, "MC.MOUNTDISK %s 127.0.0.1:9100", CA);
    redisReply *d = it_cmd(it_c, "MC.OFFLOADDONE %s gone 5", CA);
    cr_assert_str_eq(d->element[0]->str, "OK");
    IT_TYPE(it_cmd(it_c, "MC.GETREPLICAS gone"), REDIS_REPLY_ARRAY);
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) { /* expiry after 1 s of silence, ticks every ~1 s */
        usleep(100000);
        redisReply *r = it_cmd(it_c, "MC.GETREPLICAS gone");
        gone = r->type == REDIS_REPLY_ERROR;
    }
    cr_assert(gone, "LOCAL_DISK replicas dropped with their client");
    IT_ERR("OBJECT_NOT_FOUND object not found", it_c, "MC.GETREPLICAS gone");
}

Test(mco, promotestart_gives_memory_back) {
    IT_CRESCENT_ONLY();
    mco_restart("enable_offload yes\n");
    mco_client(CA, "sa", 1 << 20);
    IT_OK(it_c, "MC.MOUNTDISK %s 127.0.0.1:9100", CA);
    redisReply *d = it_cmd(it_c, "MC.OFFLOADDONE %s dk 100", CA);
    cr_assert_str_eq(d->element[0]->str, "OK");
    IT_ERR("UNAVAILABLE_IN_CURRENT_STATUS unavailable in current status", it_c,
           "MC.PROMOTESTART %s dk", CA);
    IT_OK(it_c, "CONFIG SET promotion_on_hit yes");
    redisReply *r = it_cmd(it_c, "MC.PROMOTESTART %s dk", CA);
    cr_assert_str_eq(it_field_str(r, "type"), "MEMORY");
    cr_assert_str_eq(it_field_str(r, "status"), "PROCESSING");
    cr_assert_str_eq(it_field_str(r, "segment"), "sa");
    cr_assert_eq(it_field_int(r, "size"), 100);
    IT_OK(it_c, "MC.COPYEND %s dk", CA);
    const redisReply *reps = it_field(it_cmd(it_c, "MC.QUERYKEY dk"), "replicas");
    cr_assert_eq(reps->elements, 2);
    cr_assert_str_eq(it_field_str(reps->element[0], "type"), "LOCAL_DISK");
    cr_assert_str_eq(it_field_str(reps->element[1], "type"), "MEMORY");
    IT_ERR("OBJECT_ALREADY_EXISTS object already exists", it_c, "MC.PROMOTESTART %s dk", CA);
    IT_ERR("OBJECT_NOT_FOUND object not found", it_c, "MC.PROMOTESTART %s nokey", CA);
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.OFFLOADSTATS"), "promoted"), 1);
}

/* MC.GETREPLICAS of a disk-only key: the read that reaches promotion_admission_threshold (and
 * every later one until a promotion starts) carries `promote 1`; memory reads never do. */
Test(mco, getreplicas_says_promote_at_the_admission_threshold) {
    IT_CRESCENT_ONLY();
    mco_restart("enable_offload yes\npromotion_on_hit yes\n");
    mco_client(CA, "sa", 1 << 20);
    IT_OK(it_c, "MC.MOUNTDISK %s 127.0.0.1:9100", CA);
    redisReply *d = it_cmd(it_c, "MC.OFFLOADDONE %s dk 100", CA);
    cr_assert_str_eq(d->element[0]->str, "OK");
    redisReply *r = it_cmd(it_c, "MC.GETREPLICAS dk");
    cr_assert_eq(r->elements, 4, "read 1 of 2 (the default threshold): no promote field");
    r = it_cmd(it_c, "MC.GETREPLICAS dk");
    cr_assert_eq(r->elements, 6);
    cr_assert_eq(it_field_int(r, "promote"), 1, "read 2: promote");
    cr_assert_str_eq(it_field_str(it_field(r, "replicas")->element[0], "type"), "LOCAL_DISK");
    r = it_cmd(it_c, "MC.BATCHGETREPLICAS dk");
    cr_assert_eq(it_field_int(r->element[0], "promote"), 1, "the batch form too");
    r = it_cmd(it_c, "MC.PROMOTESTART %s dk", CA);
    cr_assert_str_eq(it_field_str(r, "type"), "MEMORY");
    r = it_cmd(it_c, "MC.GETREPLICAS dk");
    cr_assert_eq(r->elements, 4, "a promotion in flight: no promote field");
    IT_OK(it_c, "MC.COPYEND %s dk", CA);
    r = it_cmd(it_c, "MC.GETREPLICAS dk");
    cr_assert_eq(r->elements, 4, "in memory: no promote field");
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.OFFLOADSTATS"), "disk_reads"), 4);
    IT_OK(it_c, "CONFIG SET promotion_admission_threshold 1");
    IT_ERR("ERR CONFIG SET failed (possibly related to argument 'promotion_admission_threshold') "
           "- argument must be between 1 and 1000000 inclusive",
           it_c, "CONFIG SET promotion_admission_threshold 0");
}
