/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client SSD tier end to end (docs/storage.md, "The pool tier"): a crescent-master with
 * enable_offload and no embedded segment, real clients with ssd_offload_path (library stores
 * and a crescent-client daemon). Offload on evict fills a small segment and every value reads
 * back byte-exact, the evicted ones from SSD; force-evict drops victims beyond the cap; a second
 * client reads the first one's offloaded values; the owner dies and its LOCAL_DISK replicas
 * vanish (OBJECT_NOT_FOUND); a restarted client re-registers its disk and reads promote
 * disk-only objects back to memory. No timing thresholds: waits poll with generous deadlines.
 */
#include "common/fmacros.h"

#include "tests/store/daemon_test_util.h"
#include "tests/store/store_test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEG   (4u << 20)   /* a 4 MiB segment */
#define VAL   (128u << 10) /* 128 KiB values */
#define NKEYS 48           /* 6 MiB of values */

static struct st_master M;
static char dir_a[256], dir_b[256];

static void init(void) {
    setenv("MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS", "1", 1);
    snprintf(dir_a, sizeof(dir_a), "/tmp/crescent-ssd-test.%d.a", (int)getpid());
    snprintf(dir_b, sizeof(dir_b), "/tmp/crescent-ssd-test.%d.b", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir_a, dir_b);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(mkdir(dir_a, 0755), 0);
    cr_assert_eq(mkdir(dir_b, 0755), 0);
}

static void fini(void) {
    st_master_stop(&M);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir_a, dir_b);
    if (system(cmd) != 0) {
        fprintf(stderr, "cleanup of %s failed\n", dir_a);
    }
}

TestSuite(ssd, .init = init, .fini = fini, .timeout = 240);

static struct crescent_store *ssd_store(uint64_t seg, const char *dir) {
    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.protocol = "tcp";
    cfg.global_segment_size = seg;
    cfg.ssd_offload_path = dir;
    struct crescent_store *st = NULL;
    int rc = crescent_store_create(M.addr, &cfg, &st);
    cr_assert(rc == 0, "crescent_store_create: %s (%s)", crescent_store_err_name(rc),
              crescent_store_last_error());
    return st;
}

static void key_of(char *k, int i) {
    snprintf(k, 32, "ssd-%d", i);
}

/* Puts key i, retrying while the pool is full (victims wait for their offload). */
static int put_retry(struct crescent_store *st, int i, long long deadline_ms) {
    char k[32], *v = malloc(VAL);
    key_of(k, i);
    st_fill(v, VAL, (unsigned)i);
    int rc;
    do {
        rc = crescent_store_put(st, k, v, VAL, NULL);
        if (rc == -CRESCENT_STORE_ENO_AVAILABLE_HANDLE) {
            st_sleep_ms(100);
        }
    } while (rc == -CRESCENT_STORE_ENO_AVAILABLE_HANDLE && st_now_ms() < deadline_ms);
    free(v);
    return rc;
}

/* Gets key i and compares it with its pattern. Returns the get's code (0 when exact). */
static int get_exact(struct crescent_store *st, int i) {
    char k[32];
    key_of(k, i);
    void *v = NULL;
    size_t n = 0;
    int rc = crescent_store_get(st, k, &v, &n);
    if (rc == 0) {
        char *want = malloc(VAL);
        st_fill(want, VAL, (unsigned)i);
        cr_assert_eq(n, VAL, "%s: size", k);
        cr_assert(memcmp(v, want, VAL) == 0, "%s: bytes differ", k);
        free(want);
        free(v);
    }
    return rc;
}

/* 1 when the master holds key i on disk only (MC.QUERYKEY: no MEMORY replica). */
static int disk_only(redisContext *c, int i) {
    char k[32];
    key_of(k, i);
    redisReply *r = st_cmd(c, "MC.QUERYKEY %s", k);
    if (r->type == REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        return 0;
    }
    const redisReply *reps = st_field(r, "replicas");
    int mem = 0, disk = 0;
    for (size_t j = 0; j < reps->elements; j++) {
        const redisReply *t = st_field(reps->element[j], "type");
        mem += strcmp(t->str, "MEMORY") == 0;
        disk += strcmp(t->str, "LOCAL_DISK") == 0;
    }
    freeReplyObject(r);
    return disk > 0 && mem == 0;
}

static long long offload_stat(redisContext *c, const char *name) {
    redisReply *r = st_cmd(c, "MC.OFFLOADSTATS");
    long long v = st_field(r, name)->integer;
    freeReplyObject(r);
    return v;
}

Test(ssd, offload_on_evict_reads_back_from_ssd_and_from_a_peer) {
    st_master_start(&M, "--memory 0 --enable_offload yes --offload_on_evict yes "
                        "--default_kv_lease_ttl 300");
    struct crescent_store *a = ssd_store(SEG, dir_a);
    long long deadline = st_now_ms() + 120000;
    for (int i = 0; i < NKEYS; i++) {
        int rc = put_retry(a, i, deadline);
        cr_assert_eq(rc, 0, "put %d: %s (%s)", i, crescent_store_err_name(rc),
                     crescent_store_last_error());
    }
    redisContext *c = st_redis(&M);
    int on_disk = 0;
    for (int i = 0; i < NKEYS; i++) {
        on_disk += disk_only(c, i);
    }
    cr_assert_geq(on_disk, NKEYS - (int)(SEG / VAL), "at least the overflow is on disk only");
    for (int i = 0; i < NKEYS; i++) {
        cr_assert_eq(get_exact(a, i), 0, "owner reads key %d", i);
    }
    /* A second client, with no segment of its own, reads through the owner. */
    struct crescent_store *b = st_store(&M, "tcp", 0);
    for (int i = 0; i < NKEYS; i++) {
        cr_assert_eq(get_exact(b, i), 0, "peer reads key %d: %s", i, crescent_store_last_error());
    }
    cr_assert_geq(offload_stat(c, "done"), on_disk);
    crescent_store_destroy(b);
    crescent_store_destroy(a);
    redisFree(c);
}

Test(ssd, force_evict_drops_victims_beyond_the_cap) {
    st_master_start(&M, "--memory 0 --enable_offload yes --offload_on_evict yes "
                        "--offload_force_evict yes --offloading_queue_limit 2 "
                        "--offload_cap_ratio 0.5 --default_kv_lease_ttl 300");
    struct crescent_store *a = ssd_store(SEG, dir_a);
    long long deadline = st_now_ms() + 120000;
    for (int i = 0; i < NKEYS; i++) {
        cr_assert_eq(put_retry(a, i, deadline), 0, "put %d", i);
    }
    redisContext *c = st_redis(&M);
    cr_assert_gt(offload_stat(c, "force_evicted"), 0, "victims beyond the cap were dropped");
    st_sleep_ms(2500); /* two heartbeats: the queued victims reach the disk */
    int found = 0, missing = 0;
    for (int i = 0; i < NKEYS; i++) {
        int rc = get_exact(a, i);
        cr_assert(rc == 0 || rc == -CRESCENT_STORE_EOBJECT_NOT_FOUND, "key %d: %s", i,
                  crescent_store_err_name(rc));
        found += rc == 0;
        missing += rc != 0;
    }
    cr_assert_gt(missing, 0, "force-evicted keys are gone");
    cr_assert_gt(found, 0);
    crescent_store_destroy(a);
    redisFree(c);
}

Test(ssd, restart_re_registers_what_the_scan_found_and_reads_promote) {
    st_master_start(&M, "--memory 0 --enable_offload yes --default_kv_lease_ttl 300 "
                        "--promotion_on_hit yes");
    struct crescent_store *a = ssd_store(SEG, dir_a);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(put_retry(a, i, st_now_ms() + 60000), 0);
    }
    redisContext *c = st_redis(&M);
    long long deadline = st_now_ms() + 30000;
    while (offload_stat(c, "done") < 8 && st_now_ms() < deadline) {
        st_sleep_ms(100); /* eager offload: every put is queued at put end */
    }
    cr_assert_eq(offload_stat(c, "done"), 8);
    crescent_store_destroy(a); /* unmounts the disk: its replicas go, memory too */
    cr_assert_eq(offload_stat(c, "disk_replicas"), 0);
    char k[32];
    key_of(k, 3);
    redisReply *r = st_cmd(c, "MC.GETREPLICAS %s", k);
    cr_assert_eq(r->type, REDIS_REPLY_ERROR, "gone with its client");
    freeReplyObject(r);
    /* A new client on the same directory registers the 8 objects again. */
    struct crescent_store *a2 = ssd_store(SEG, dir_a);
    cr_assert_eq(offload_stat(c, "disk_replicas"), 8);
    struct crescent_store *b = st_store(&M, "tcp", 0);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(disk_only(c, i), 1);
        cr_assert_eq(get_exact(b, i), 0, "key %d: %s", i, crescent_store_last_error());
        /* promotion on hit: the read gave the object a memory replica again */
        cr_assert_eq(disk_only(c, i), 0, "key %d promoted", i);
        cr_assert_eq(get_exact(b, i), 0, "key %d from memory", i);
    }
    cr_assert_eq(offload_stat(c, "promoted"), 8);
    crescent_store_destroy(b);
    crescent_store_destroy(a2);
    redisFree(c);
}

Test(ssd, owner_dies_and_its_disk_replicas_vanish) {
    st_master_start(&M, "--memory 0 --enable_offload yes --offload_on_evict yes "
                        "--default_kv_lease_ttl 300 --client_live_ttl_sec 2");
    const char *extra[] = {"--ssd_offload_path", dir_b, NULL};
    st_daemon_extra = extra;
    struct st_daemon d;
    st_daemon_start(&d, &M, 0, "tcp", "4mb", "10", "100");
    st_daemon_extra = NULL;
    struct crescent_store *w = st_store(&M, "tcp", 0); /* writes into the daemon's segment */
    long long deadline = st_now_ms() + 120000;
    for (int i = 0; i < NKEYS; i++) {
        cr_assert_eq(put_retry(w, i, deadline), 0, "put %d: %s", i, crescent_store_last_error());
    }
    redisContext *c = st_redis(&M);
    int victim = -1;
    for (int i = 0; i < NKEYS && victim < 0; i++) {
        if (disk_only(c, i)) {
            victim = i;
        }
    }
    cr_assert_geq(victim, 0, "some key lives on the daemon's disk only");
    cr_assert_eq(get_exact(w, victim), 0, "read through the daemon: %s",
                 crescent_store_last_error());
    st_daemon_kill(&d);
    char k[32];
    key_of(k, victim);
    int gone = 0;
    deadline = st_now_ms() + 30000;
    while (!gone && st_now_ms() < deadline) {
        redisReply *r = st_cmd(c, "MC.GETREPLICAS %s", k);
        gone = r->type == REDIS_REPLY_ERROR;
        freeReplyObject(r);
        st_sleep_ms(100);
    }
    cr_assert(gone, "the dead owner's LOCAL_DISK replicas are dropped");
    cr_assert_eq(get_exact(w, victim), -CRESCENT_STORE_EOBJECT_NOT_FOUND);
    crescent_store_destroy(w);
    redisFree(c);
}
