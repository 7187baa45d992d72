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

/* The keys of an MC.OFFLOADREMOVES reply, sorted and joined with ',' into buf. */
static const char *mco_removes(const char *id, char *buf, size_t cap) {
    redisReply *r = it_cmd(it_c, "MC.OFFLOADREMOVES %s 100", id);
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    const char *k[16];
    size_t n = r->elements < 16 ? r->elements : 16;
    for (size_t i = 0; i < n; i++)
        k[i] = r->element[i]->str;
    for (size_t i = 1; i < n; i++) /* insertion sort: the queue has no order */
        for (size_t j = i; j > 0 && strcmp(k[j - 1], k[j]) > 0; j--) {
            const char *t = k[j];
            k[j] = k[j - 1];
            k[j - 1] = t;
        }
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", i ? "," : "", k[i]);
    return buf;
}

/* MC.OFFLOADEVICTED: the owner's report drops its LOCAL_DISK replica (a disk-only object goes),
 * checked against the owner; it queues no record removal. */
Test(mco, evicted_reports_drop_the_owners_disk_replicas) {
    IT_CRESCENT_ONLY();
    mco_restart("enable_offload yes\n");
    mco_client(CA, "sa", 1 << 20);
    mco_client(CB, "sb", 2 << 20);
    IT_OK(it_c, "MC.MOUNTDISK %s 127.0.0.1:9100", CA);
    IT_OK(it_c, "MC.MOUNTDISK %s 127.0.0.1:9101", CB);
    mco_put(CA, "k1", "sa");
    cr_assert_eq(it_cmd(it_c, "MC.OFFLOADFETCH %s 10", CA)->elements, 1);
    redisReply *d = it_cmd(it_c, "MC.OFFLOADDONE %s k1 100 dk 7", CA);
    cr_assert_str_eq(d->element[0]->str, "OK");
    cr_assert_str_eq(d->element[1]->str, "OK");
    mco_put(CB, "k2", "sb");
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.OFFLOADSTATS"), "disk_replicas"), 2);
    redisReply *e = it_cmd(it_c, "MC.OFFLOADEVICTED %s dk nokey k2", CB);
    IT_TYPE(e, REDIS_REPLY_ARRAY);
    cr_assert_eq(e->elements, 3);
    cr_assert_str_eq(e->element[0]->str,
                     "ILLEGAL_CLIENT client does not own this segment or object");
    cr_assert_str_eq(e->element[1]->str, "OBJECT_NOT_FOUND object not found");
    cr_assert_str_eq(e->element[2]->str, "REPLICA_NOT_FOUND replica not found");
    e = it_cmd(it_c, "MC.OFFLOADEVICTED %s dk k1", CA);
    cr_assert_str_eq(e->element[0]->str, "OK");
    cr_assert_str_eq(e->element[1]->str, "OK");
    IT_ERR("OBJECT_NOT_FOUND object not found", it_c, "MC.QUERYKEY dk");
    const redisReply *reps = it_field(it_cmd(it_c, "MC.QUERYKEY k1"), "replicas");
    cr_assert_eq(reps->elements, 1);
    cr_assert_str_eq(it_field_str(reps->element[0], "type"), "MEMORY");
    redisReply *s = it_cmd(it_c, "MC.OFFLOADSTATS");
    cr_assert_eq(it_field_int(s, "disk_evicted"), 2);
    cr_assert_eq(it_field_int(s, "disk_replicas"), 0);
    cr_assert_eq(it_field_int(s, "removes_queued"), 0, "the owner already lost them");
    char buf[256];
    cr_assert_str_eq(mco_removes(CA, buf, sizeof(buf)), "");
    IT_OK(it_c, "MC.UNMOUNTDISK %s", CB);
    e = it_cmd(it_c, "MC.OFFLOADEVICTED %s k1", CB); /* one result per key, as MC.OFFLOADDONE */
    cr_assert_str_eq(e->element[0]->str, "SEGMENT_NOT_FOUND segment not found");
    e = it_cmd(it_c, "MC.OFFLOADEVICTED 00000000000000000000000000000001 k1");
    cr_assert_str_eq(e->element[0]->str, "CLIENT_NOT_FOUND client not found");
    IT_ERR("ERR wrong number of arguments for 'mc.offloadevicted' command", it_c,
           "MC.OFFLOADEVICTED %s", CA);
}

/* Removing, replacing or flushing objects with LOCAL_DISK replicas queues their records for the
 * owner (MC.OFFLOADREMOVES); a re-registration or a new task for the key cancels it. */
Test(mco, removed_objects_queue_record_removals_for_the_owner) {
    IT_CRESCENT_ONLY();
    mco_restart("enable_offload yes\n");
    mco_client(CA, "sa", 1 << 20);
    IT_OK(it_c, "MC.MOUNTDISK %s 127.0.0.1:9100", CA);
    redisReply *d = it_cmd(it_c, "MC.OFFLOADDONE %s r1 5 r2 5 r3 5 r4 5 r5 5 x1 5 x2 5", CA);
    cr_assert_eq(d->elements, 7);
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.QUERYDISK %s", CA), "removes"), 0);
    cr_assert_eq(it_cmd(it_c, "DEL r1")->integer, 1);
    IT_OK(it_c, "MC.REMOVE r2");
    cr_assert_eq(it_cmd(it_c, "MC.BATCHREMOVE 1 r3")->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(it_cmd(it_c, "MC.REMOVEBYREGEX ^x")->integer, 2);
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.QUERYDISK %s", CA), "removes"), 5);
    char buf[256];
    cr_assert_str_eq(mco_removes(CA, buf, sizeof(buf)), "r1,r2,r3,x1,x2");
    cr_assert_str_eq(mco_removes(CA, buf, sizeof(buf)), "", "popped once");
    /* A re-registration of a removed key cancels its removal. */
    cr_assert_eq(it_cmd(it_c, "UNLINK r4")->integer, 1);
    d = it_cmd(it_c, "MC.OFFLOADDONE %s r4 5", CA);
    cr_assert_str_eq(d->element[0]->str, "OK");
    cr_assert_str_eq(mco_removes(CA, buf, sizeof(buf)), "");
    /* A value replaced by a put: its old record goes; a new task for the key cancels that. */
    cr_assert_eq(it_cmd(it_c, "DEL r5")->integer, 1);
    mco_put(CA, "r5", "sa");
    cr_assert_eq(it_field_int(it_cmd(it_c, "MC.QUERYDISK %s", CA), "removes"), 1);
    cr_assert_eq(it_cmd(it_c, "MC.OFFLOADFETCH %s 10", CA)->elements, 1);
    cr_assert_str_eq(mco_removes(CA, buf, sizeof(buf)), "", "the fetch rewrites r5");
    /* FLUSHALL queues every record left. */
    IT_OK(it_c, "FLUSHALL");
    cr_assert_str_eq(mco_removes(CA, buf, sizeof(buf)), "r4");
    redisReply *s = it_cmd(it_c, "MC.OFFLOADSTATS");
    cr_assert_eq(it_field_int(s, "removes_queued"), 8);
    cr_assert_eq(it_field_int(s, "removes_fetched"), 6);
    cr_assert_eq(it_field_int(s, "removes_dropped"), 0);
    mco_client(CB, "sb", 2 << 20);
    IT_ERR("SEGMENT_NOT_FOUND segment not found", it_c, "MC.OFFLOADREMOVES %s 1", CB);
}

/* The removal queue is bounded by offloading_queue_limit: beyond it removals are counted and
 * dropped. */
Test(mco, removal_queue_is_bounded) {
    IT_CRESCENT_ONLY();
    mco_restart("enable_offload yes\noffloading_queue_limit 2\n");
    mco_client(CA, "sa", 1 << 20);
    IT_OK(it_c, "MC.MOUNTDISK %s 127.0.0.1:9100", CA);
    it_cmd(it_c, "MC.OFFLOADDONE %s a 5 b 5 c 5", CA);
    cr_assert_eq(it_cmd(it_c, "DEL a b c")->integer, 3);
    redisReply *s = it_cmd(it_c, "MC.OFFLOADSTATS");
    cr_assert_eq(it_field_int(s, "removes_queued"), 2);
    cr_assert_eq(it_field_int(s, "removes_dropped"), 1);
    cr_assert_eq(it_cmd(it_c, "MC.OFFLOADREMOVES %s 100", CA)->elements, 2);
}
