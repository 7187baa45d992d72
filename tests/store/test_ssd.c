/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client SSD tier end to end (docs/storage.md, "The pool tier"): a crescent-master with
 * enable_offload and no embedded segment, real clients with ssd_offload_path (library stores
 * and a crescent-client daemon). Offload on evict fills a small segment and every value reads
 * back byte-exact, the evicted ones from SSD; force-evict drops victims beyond the cap; a second
 * client reads the first one's offloaded values; the owner dies and its LOCAL_DISK replicas
 * vanish (OBJECT_NOT_FOUND); a restarted client re-registers its disk and reads promote
 * disk-only objects back to memory; a restarted master (no HA) gets every disk object
 * re-registered by its owner.
 * Reads through the owner's staging buffer (docs/storage.md, "Reads"): byte-exact over tcp, shm
 * and fabric with the reader's transfer-engine counters moving the bytes, the GC of an
 * unreleased staging buffer, a full staging area, an owner that dies mid-stage, and promotion
 * after promotion_admission_threshold reads. The staging protocol is spoken raw where a test
 * needs an unreleased buffer. No timing thresholds: waits poll with generous deadlines.
 */
#include "common/fmacros.h"

#include "tests/store/daemon_test_util.h"
#include "tests/store/store_test_util.h"

#include "crescent/transfer.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* Starts daemon d with the SSD tier in dir_b (segment 4 MiB), and a writer that puts keys
 * [0, n) into its segment, retrying while the pool is full. Returns the writer. */
static struct crescent_store *daemon_with_ssd_filled(struct st_daemon *d, int n) {
    const char *extra[] = {"--ssd_offload_path", dir_b, NULL};
    st_daemon_extra = extra;
    st_daemon_start(d, &M, 0, "tcp", "4mb", "10", "100");
    st_daemon_extra = NULL;
    struct crescent_store *w = st_store(&M, "tcp", 0); /* writes into the daemon's segment */
    long long deadline = st_now_ms() + 120000;
    for (int i = 0; i < n; i++) {
        cr_assert_eq(put_retry(w, i, deadline), 0, "put %d: %s", i, crescent_store_last_error());
    }
    return w;
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

/* Waits up to 60 s until the master counts n offloads done (MC.OFFLOADSTATS done). */
static void wait_done(redisContext *c, long long n) {
    long long deadline = st_now_ms() + 60000;
    while (offload_stat(c, "done") < n && st_now_ms() < deadline) {
        st_sleep_ms(100);
    }
    cr_assert_geq(offload_stat(c, "done"), n, "every put reached the owner's disk");
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
                        "--promotion_on_hit yes --promotion_admission_threshold 1");
    struct crescent_store *a = ssd_store(SEG, dir_a);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(put_retry(a, i, st_now_ms() + 60000), 0);
    }
    redisContext *c = st_redis(&M);
    wait_done(c, 8); /* eager offload: every put is queued at put end */
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

/* The master restarts without HA (all its metadata gone): the client remounts within its pings
 * and its SSD heartbeat re-registers every disk object, which a second client then reads. */
Test(ssd, master_restart_clients_re_register_their_disk_objects) {
    st_master_start(&M, "--memory 0 --enable_offload yes --default_kv_lease_ttl 300");
    struct crescent_store *a = ssd_store(SEG, dir_a);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(put_retry(a, i, st_now_ms() + 60000), 0);
    }
    redisContext *c = st_redis(&M);
    wait_done(c, 8); /* eager offload: every put is queued at put end */
    cr_assert_eq(offload_stat(c, "done"), 8);
    cr_assert_eq(offload_stat(c, "disk_replicas"), 8);
    redisFree(c);
    st_master_kill(&M);
    st_master_restart(&M);
    c = st_redis(&M);
    cr_assert_eq(offload_stat(c, "disk_replicas"), 0, "a restarted master knows nothing");
    long long deadline = st_now_ms() + 30000;
    while (offload_stat(c, "disk_replicas") < 8 && st_now_ms() < deadline) {
        st_sleep_ms(100); /* ping: NEED_REMOUNT, remount; heartbeat: mount the disk again */
    }
    cr_assert_eq(offload_stat(c, "disk_replicas"), 8, "every disk object re-registered");
    struct crescent_store *b = st_store(&M, "tcp", 0);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(disk_only(c, i), 1, "key %d: its memory copy died with the master", i);
        cr_assert_eq(get_exact(b, i), 0, "key %d: %s", i, crescent_store_last_error());
    }
    cr_assert_eq(offload_stat(c, "disk_reads"), 8, "each read was staged by the owner");
    crescent_store_destroy(b);
    crescent_store_destroy(a);
    redisFree(c);
}

Test(ssd, owner_dies_and_its_disk_replicas_vanish) {
    st_master_start(&M, "--memory 0 --enable_offload yes --offload_on_evict yes "
                        "--default_kv_lease_ttl 300 --client_live_ttl_sec 2");
    struct st_daemon d;
    struct crescent_store *w = daemon_with_ssd_filled(&d, NKEYS);
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
    long long deadline = st_now_ms() + 30000;
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

/* ---- reads through the owner's staging buffer ---------------------------------------------- */

/* The offload endpoint of the client id (MC.QUERYDISK) into ep. */
static void disk_endpoint(redisContext *c, const char *id, char *ep, size_t cap) {
    redisReply *r = st_cmd(c, "MC.QUERYDISK %s", id);
    cr_assert_eq(r->type == REDIS_REPLY_ERROR, 0, "MC.QUERYDISK: %s", r->str);
    snprintf(ep, cap, "%s", st_field(r, "endpoint")->str);
    freeReplyObject(r);
}

/* A raw connection to an offload endpoint "ip:port". */
static int ep_connect(const char *ep) {
    char host[64];
    snprintf(host, sizeof(host), "%s", ep);
    char *colon = strrchr(host, ':');
    cr_assert_not_null(colon);
    *colon = '\0';
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    cr_assert_eq(inet_pton(AF_INET, host, &sa.sin_addr), 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect %s", ep);
    return fd;
}

static void io_all(int fd, void *buf, size_t n, bool wr) {
    char *p = buf;
    while (n > 0) {
        ssize_t k = wr ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        cr_assert_gt(k, 0, "offload endpoint connection broke");
        p += k;
        n -= (size_t)k;
    }
}

static int64_t get_le(const unsigned char *b, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) {
        v = (v << 8) | b[i];
    }
    return (int64_t)v;
}

static void put_le(unsigned char *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) {
        b[i] = (unsigned char)(v >> (8 * i));
    }
}

/* 'S' for key (size bytes): returns the status; *id the staging id when 0. The descriptor that
 * follows is read and dropped. */
static int64_t raw_stage(int fd, const char *key, uint64_t size, uint64_t *id) {
    unsigned char h[5] = {'S'}, z[8], r[44];
    put_le(h + 1, strlen(key), 4);
    put_le(z, size, 8);
    io_all(fd, h, 5, true);
    io_all(fd, (void *)key, strlen(key), true);
    io_all(fd, z, 8, true);
    io_all(fd, r, 8, false);
    int64_t status = get_le(r, 8);
    if (status < 0) {
        return status;
    }
    io_all(fd, r + 8, 36, false);
    *id = (uint64_t)get_le(r + 8, 8);
    cr_assert_eq(get_le(r + 24, 8), (int64_t)size, "staged length");
    size_t dlen = (size_t)get_le(r + 40, 4);
    char *desc = malloc(dlen);
    io_all(fd, desc, dlen, false);
    free(desc);
    return 0;
}

/* 'R' id: returns the status. */
static int64_t raw_release(int fd, uint64_t id) {
    unsigned char b[9] = {'R'}, r[8];
    put_le(b + 1, id, 8);
    io_all(fd, b, 9, true);
    io_all(fd, r, 8, false);
    return get_le(r, 8);
}

/* The owner's staging and disk counters ('T'). */
struct stage_stats {
    int64_t cap, in_use, live, staged, released, gc_freed, refused_full, staged_bytes;
    int64_t disk_keys, disk_bytes, disk_lost, disk_removed;
};

static struct stage_stats raw_stats(const char *ep) {
    int fd = ep_connect(ep);
    unsigned char op = 'T', b[8 + 8 * 12];
    io_all(fd, &op, 1, true);
    io_all(fd, b, sizeof(b), false);
    close(fd);
    cr_assert_eq(get_le(b, 8), 0);
    int64_t v[12];
    for (int i = 0; i < 12; i++) {
        v[i] = get_le(b + 8 + 8 * i, 8);
    }
    return (struct stage_stats){v[0], v[1], v[2], v[3], v[4],  v[5],
                                v[6], v[7], v[8], v[9], v[10], v[11]};
}

/* The daemon's /metrics value of the unlabelled metric name, or -1 when absent. */
static long long daemon_metric(int http_port, const char *name) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)http_port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "daemon HTTP port");
    const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
    io_all(fd, (void *)req, strlen(req), true);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    ssize_t k;
    while (len + 1 < cap && (k = recv(fd, buf + len, cap - 1 - len, 0)) > 0) {
        len += (size_t)k;
    }
    buf[len] = '\0';
    close(fd);
    char pat[200];
    snprintf(pat, sizeof(pat), "\n%s ", name);
    const char *at = strstr(buf, pat);
    long long v = at != NULL ? strtoll(at + strlen(pat), NULL, 10) : -1;
    free(buf);
    return v;
}

/*
 * Puts keys 0..n-1 into daemon d's segment (eager offload), waits until all are on its disk,
 * then restarts d on the same directory: every key is now disk-only, held by the new d. The
 * daemon serves /metrics on http_port when it is not 0.
 */
static void make_disk_only(struct st_daemon *d, const char *proto, int n, redisContext *c,
                           int http_port) {
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", http_port);
    const char *extra[] = {"--ssd_offload_path",
                           dir_b,
                           http_port ? "--enable_http_server" : NULL,
                           "--http_host",
                           "127.0.0.1",
                           "--http_port",
                           ps,
                           NULL};
    st_daemon_extra = extra;
    st_daemon_start(d, &M, 0, proto, "4mb", "10", "0");
    struct crescent_store *w = st_store(&M, proto, 0); /* writes into the daemon's segment */
    for (int i = 0; i < n; i++) {
        cr_assert_eq(put_retry(w, i, st_now_ms() + 60000), 0, "put %d: %s", i,
                     crescent_store_last_error());
    }
    crescent_store_destroy(w);
    wait_done(c, n);
    cr_assert_eq(st_daemon_stop(d), 0);
    st_daemon_start(d, &M, 0, proto, "4mb", "10", "0");
    st_daemon_extra = NULL;
    for (int i = 0; i < n; i++) {
        cr_assert_eq(disk_only(c, i), 1, "key %d is disk-only after the restart", i);
    }
}

/* proto's metrics interface (crescent_store_metrics): 1 shm, 2 tcp, 3 other (fabric). */
static int iface_of(const char *proto) {
    return strcmp(proto, "shm") == 0 ? 1 : strcmp(proto, "tcp") == 0 ? 2 : 3;
}

static void staged_reads(const char *proto) {
    st_master_start(&M, "--memory 0 --enable_offload yes --default_kv_lease_ttl 2000");
    redisContext *c = st_redis(&M);
    struct st_daemon d;
    int http = st_daemon_free_port();
    make_disk_only(&d, proto, 8, c, http);
    char ep[128];
    disk_endpoint(c, d.client_id, ep, sizeof(ep));
    struct crescent_store *b = st_store(&M, proto, 0);
    struct crescent_store_metrics m0, m1;
    OK(crescent_store_metrics(b, &m0));
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(get_exact(b, i), 0, "key %d through staging: %s", i,
                     crescent_store_last_error());
    }
    OK(crescent_store_metrics(b, &m1));
    int k = iface_of(proto);
    cr_assert_eq(m1.read_bytes[k] - m0.read_bytes[k], 8ull * VAL,
                 "the transfer engine (%s) moved every value", proto);
    cr_assert_eq(m1.read_ops[k] - m0.read_ops[k], 8);
    struct stage_stats s = raw_stats(ep);
    cr_assert_eq(s.staged, 8);
    cr_assert_eq(s.staged_bytes, 8ll * VAL);
    cr_assert_eq(s.released, 8, "the reader released every staging buffer");
    cr_assert_eq(s.in_use, 0);
    cr_assert_eq(s.gc_freed, 0);
    cr_assert_eq(s.cap, 1342177280ll, "MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES default");
    cr_assert_eq(daemon_metric(http, "crescent_client_offload_staged_bytes_total"), 8ll * VAL);
    cr_assert_eq(daemon_metric(http, "crescent_client_offload_staging_released_total"), 8);
    cr_assert_eq(daemon_metric(http, "crescent_client_offload_disk_keys"), 8);
    cr_assert_eq(daemon_metric(http, "crescent_client_offload_disk_bytes"), 8ll * VAL);
    cr_assert_eq(daemon_metric(http, "crescent_client_offload_disk_lost_total"), 0);
    crescent_store_destroy(b);
    cr_assert_eq(st_daemon_stop(&d), 0);
    redisFree(c);
}

Test(ssd, staged_reads_tcp) {
    staged_reads("tcp");
}

Test(ssd, staged_reads_shm) {
    staged_reads("shm");
}

/* 1 when the fabric transport is built and libfabric's tcp;ofi_rxm provider works. */
static bool fabric_ok(void) {
    struct crescent_xfer_engine *e = NULL;
    struct crescent_xfer_opts o = CRESCENT_XFER_OPTS_INIT;
    if (crescent_xfer_engine_create(&o, &e) < 0) {
        return false;
    }
    bool ok = crescent_xfer_install(e, "fabric", NULL) == 0;
    crescent_xfer_engine_destroy(e);
    return ok;
}

Test(ssd, staged_reads_fabric) {
    if (!fabric_ok()) {
        cr_skip_test("no fabric transport or libfabric tcp;ofi_rxm provider");
    }
    staged_reads("fabric");
}

Test(ssd, gc_frees_an_unreleased_staging_buffer) {
    setenv("MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS", "200", 1);
    st_master_start(&M, "--memory 0 --enable_offload yes");
    redisContext *c = st_redis(&M);
    struct st_daemon d;
    int http = st_daemon_free_port();
    make_disk_only(&d, "tcp", 1, c, http);
    char ep[128], k[32];
    disk_endpoint(c, d.client_id, ep, sizeof(ep));
    key_of(k, 0);
    int fd = ep_connect(ep);
    uint64_t id = 0;
    cr_assert_eq(raw_stage(fd, k, VAL, &id), 0);
    cr_assert_eq(raw_stats(ep).live, 1);
    long long deadline = st_now_ms() + 30000;
    while (raw_stats(ep).gc_freed < 1 && st_now_ms() < deadline) {
        st_sleep_ms(100);
    }
    struct stage_stats s = raw_stats(ep);
    cr_assert_eq(s.gc_freed, 1, "the GC freed the buffer nobody released");
    cr_assert_eq(s.in_use, 0);
    cr_assert_eq(s.live, 0);
    cr_assert_eq(raw_release(fd, id), -ENOENT, "a late release finds nothing");
    cr_assert_eq(daemon_metric(http, "crescent_client_offload_staging_gc_freed_total"), 1);
    cr_assert_eq(daemon_metric(http, "crescent_client_offload_staging_bytes"), 0);
    close(fd);
    /* A normal read still works (and releases its buffer). */
    struct crescent_store *b = st_store(&M, "tcp", 0);
    cr_assert_eq(get_exact(b, 0), 0, "%s", crescent_store_last_error());
    cr_assert_eq(raw_stats(ep).released, 1);
    crescent_store_destroy(b);
    cr_assert_eq(st_daemon_stop(&d), 0);
    redisFree(c);
}

Test(ssd, bad_gc_ttl_is_a_start_up_error_naming_the_variable) {
    setenv("MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS", "soon", 1);
    st_master_start(&M, "--memory 0 --enable_offload yes");
    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.global_segment_size = SEG;
    cfg.ssd_offload_path = dir_a;
    struct crescent_store *st = NULL;
    int rc = crescent_store_create(M.addr, &cfg, &st);
    cr_assert_lt(rc, 0);
    cr_assert_null(st);
    cr_assert(strstr(crescent_store_last_error(), "MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS"),
              "error names the variable: %s", crescent_store_last_error());
    setenv("MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS", "0", 1);
    rc = crescent_store_create(M.addr, &cfg, &st);
    cr_assert_lt(rc, 0, "a TTL of 0 is refused");
    cr_assert(strstr(crescent_store_last_error(), "MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS"));
}

Test(ssd, full_staging_area_is_a_clear_error_not_a_hang) {
    setenv("MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES", "1048576", 1); /* 8 values of 128 KiB */
    setenv("MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS", "600000", 1);  /* no GC in this test */
    st_master_start(&M, "--memory 0 --enable_offload yes");
    redisContext *c = st_redis(&M);
    struct st_daemon d;
    make_disk_only(&d, "tcp", 1, c, 0);
    char ep[128], k[32];
    disk_endpoint(c, d.client_id, ep, sizeof(ep));
    key_of(k, 0);
    int fd = ep_connect(ep);
    uint64_t ids[16];
    int n = 0;
    int64_t status = 0;
    while (n < 16 && (status = raw_stage(fd, k, VAL, &ids[n])) == 0) {
        n++;
    }
    cr_assert_eq(n, 8, "1 MiB holds 8 staged 128 KiB values");
    cr_assert_eq(status, -ENOSPC);
    struct crescent_store *b = st_store(&M, "tcp", 0);
    char *v = NULL;
    size_t len = 0;
    ERR(CRESCENT_STORE_ENO_AVAILABLE_HANDLE, crescent_store_get(b, k, (void **)&v, &len));
    cr_assert(strstr(crescent_store_last_error(), "staging buffer is full"), "%s",
              crescent_store_last_error());
    cr_assert_geq(raw_stats(ep).refused_full, 2, "the reader retried");
    cr_assert_eq(raw_release(fd, ids[0]), 0);
    cr_assert_eq(get_exact(b, 0), 0, "room again: %s", crescent_store_last_error());
    close(fd);
    crescent_store_destroy(b);
    cr_assert_eq(st_daemon_stop(&d), 0);
    redisFree(c);
}

/* A fake owner: registers a client, mounts a disk at its own listener, reports key 0 as
 * offloaded (a disk-only object), then dies (SIGKILL) when a reader's request arrives. */
static pid_t fake_owner(int *ready_fd) {
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(lfd, 4), 0);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
    char ep[64], k[32];
    snprintf(ep, sizeof(ep), "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    key_of(k, 0);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        const char *id = "0123456789abcdef0123456789abcdef";
        redisContext *c = redisConnect("127.0.0.1", M.port);
        freeReplyObject(redisCommand(c, "MC.REGISTER %s 127.0.0.1", id));
        freeReplyObject(redisCommand(c, "MC.MOUNTDISK %s %s", id, ep));
        redisReply *r = redisCommand(c, "MC.OFFLOADDONE %s %s %u", id, k, VAL);
        char ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
                  r->element[0]->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (write(p[1], &ok, 1) != 1) {
            _exit(1);
        }
        int fd = accept(lfd, NULL, NULL);
        char op;
        if (fd >= 0 && recv(fd, &op, 1, 0) == 1) {
            raise(SIGKILL); /* dies with the stage request in hand */
        }
        _exit(1);
    }
    close(lfd);
    close(p[1]);
    *ready_fd = p[0];
    return pid;
}

Test(ssd, owner_dying_mid_stage_is_a_clear_error) {
    st_master_start(&M, "--memory 0 --enable_offload yes");
    int rfd;
    pid_t pid = fake_owner(&rfd);
    char ok = 0;
    cr_assert_eq(read(rfd, &ok, 1), 1);
    close(rfd);
    cr_assert_eq(ok, 1, "the fake owner registered a disk-only key");
    redisContext *c = st_redis(&M);
    cr_assert_eq(disk_only(c, 0), 1);
    struct crescent_store *b = st_store(&M, "tcp", 0);
    char k[32], *v = NULL;
    size_t len = 0;
    key_of(k, 0);
    ERR(CRESCENT_STORE_ETRANSFER_FAIL, crescent_store_get(b, k, (void **)&v, &len));
    cr_assert(strstr(crescent_store_last_error(), "connection lost while staging"), "%s",
              crescent_store_last_error());
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    crescent_store_destroy(b);
    redisFree(c);
}

Test(ssd, promotion_after_n_reads_then_memory_reads) {
    st_master_start(&M, "--memory 0 --enable_offload yes --default_kv_lease_ttl 2000 "
                        "--promotion_on_hit yes --promotion_admission_threshold 3");
    redisContext *c = st_redis(&M);
    struct st_daemon d;
    make_disk_only(&d, "tcp", 2, c, 0);
    char ep[128];
    disk_endpoint(c, d.client_id, ep, sizeof(ep));
    struct crescent_store *b = st_store(&M, "tcp", 0);
    for (int read = 1; read <= 2; read++) {
        cr_assert_eq(get_exact(b, 0), 0, "read %d: %s", read, crescent_store_last_error());
        cr_assert_eq(disk_only(c, 0), 1, "read %d of 3: not promoted yet", read);
    }
    cr_assert_eq(offload_stat(c, "promoted"), 0);
    cr_assert_eq(get_exact(b, 0), 0, "read 3: %s", crescent_store_last_error());
    cr_assert_eq(offload_stat(c, "promoted"), 1, "the third read was told to promote");
    cr_assert_eq(disk_only(c, 0), 0, "key 0 has a memory replica again");
    long long disk_reads = offload_stat(c, "disk_reads");
    long long staged = raw_stats(ep).staged;
    cr_assert_eq(disk_reads, 3);
    cr_assert_eq(staged, 3);
    cr_assert_eq(get_exact(b, 0), 0, "read 4: %s", crescent_store_last_error());
    cr_assert_eq(offload_stat(c, "disk_reads"), disk_reads, "read 4 was a memory read");
    cr_assert_eq(raw_stats(ep).staged, staged, "nothing staged for read 4");
    /* Key 1 was not read three times: still on disk only. */
    cr_assert_eq(get_exact(b, 1), 0);
    cr_assert_eq(disk_only(c, 1), 1);
    crescent_store_destroy(b);
    cr_assert_eq(st_daemon_stop(&d), 0);
    redisFree(c);
}

/* ---- the owner's disk and the master agree ------------------------------------------------ */

/* LOCAL_DISK replicas of key i listed by MC.QUERYKEY (0 when the key is gone). */
static int disk_reps(redisContext *c, int i) {
    char k[32];
    key_of(k, i);
    redisReply *r = st_cmd(c, "MC.QUERYKEY %s", k);
    int disk = 0;
    if (r->type != REDIS_REPLY_ERROR) {
        const redisReply *reps = st_field(r, "replicas");
        for (size_t j = 0; j < reps->elements; j++) {
            disk += strcmp(st_field(reps->element[j], "type")->str, "LOCAL_DISK") == 0;
        }
    }
    freeReplyObject(r);
    return disk;
}

/* Regular files under dir (recursively). */
static int files_under(const char *dir) {
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "find %s -type f | wc -l", dir);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    int n = -1;
    cr_assert_eq(fscanf(f, "%d", &n), 1);
    pclose(f);
    return n;
}

/* A 1 MiB disk quota (8 values) with fifo eviction: the owner's disk drops records the master
 * offloaded there; the owner reports them, the master drops those LOCAL_DISK replicas (a
 * disk-only object goes: OBJECT_NOT_FOUND), and what it lists matches what the disk holds. */
Test(ssd, disk_evictions_are_reported_and_their_replicas_dropped) {
    setenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", "1048576", 1);
    setenv("MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY", "fifo", 1);
    st_master_start(&M, "--memory 0 --enable_offload yes --offload_on_evict yes "
                        "--default_kv_lease_ttl 300");
    struct st_daemon d;
    struct crescent_store *w = daemon_with_ssd_filled(&d, NKEYS);
    redisContext *c = st_redis(&M);
    char ep[128];
    disk_endpoint(c, d.client_id, ep, sizeof(ep));
    /* Wait until the owner has reported what it lost and the queue is drained. */
    struct stage_stats s;
    long long deadline = st_now_ms() + 60000;
    for (;;) {
        s = raw_stats(ep);
        long long reps = offload_stat(c, "disk_replicas");
        long long lost = offload_stat(c, "disk_evicted");
        if ((reps == s.disk_keys && lost == s.disk_lost && s.disk_lost > 0) ||
            st_now_ms() > deadline) {
            break;
        }
        st_sleep_ms(200);
    }
    cr_assert_gt(s.disk_lost, 0, "the 1 MiB disk evicted");
    cr_assert_leq(s.disk_keys, 8);
    cr_assert_eq(offload_stat(c, "disk_evicted"), s.disk_lost, "every loss reported");
    cr_assert_eq(offload_stat(c, "disk_replicas"), s.disk_keys,
                 "the master lists what the disk holds");
    int listed = 0, gone = 0;
    for (int i = 0; i < NKEYS; i++) {
        int on_disk = disk_reps(c, i);
        listed += on_disk;
        int rc = get_exact(w, i);
        cr_assert(rc == 0 || rc == -CRESCENT_STORE_EOBJECT_NOT_FOUND, "key %d: %s (%s)", i,
                  crescent_store_err_name(rc), crescent_store_last_error());
        gone += rc != 0;
        if (on_disk) {
            cr_assert_eq(rc, 0, "key %d is listed on disk and reads", i);
        }
    }
    cr_assert_eq(listed, s.disk_keys);
    cr_assert_gt(gone, 0, "disk-only objects the disk dropped are gone");
    crescent_store_destroy(w);
    cr_assert_eq(st_daemon_stop(&d), 0);
    redisFree(c);
}

/* DEL of offloaded keys deletes their records on the owner's disk (MC.OFFLOADREMOVES, drained
 * by its heartbeat), so a quota with eviction off takes new values again. */
Test(ssd, deleted_keys_leave_the_owners_disk_and_free_its_quota) {
    setenv("MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR", "file_per_key_storage_backend", 1);
    setenv("MOONCAKE_OFFLOAD_ENABLE_EVICTION", "false", 1);
    setenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", "1048576", 1); /* 8 values */
    st_master_start(&M, "--memory 0 --enable_offload yes --default_kv_lease_ttl 300");
    struct st_daemon d;
    struct crescent_store *w = daemon_with_ssd_filled(&d, 8);
    redisContext *c = st_redis(&M);
    wait_done(c, 8);
    char ep[128], fdir[300];
    disk_endpoint(c, d.client_id, ep, sizeof(ep));
    snprintf(fdir, sizeof(fdir), "%s/file_per_key_dir", dir_b);
    struct stage_stats s = raw_stats(ep);
    cr_assert_eq(s.disk_keys, 8);
    cr_assert_eq(s.disk_bytes, 8ll * VAL);
    cr_assert_eq(files_under(fdir), 8);
    redisReply *r = st_cmd(c, "DEL ssd-0 ssd-1 ssd-2 ssd-3 ssd-4 ssd-5 ssd-6 ssd-7");
    cr_assert_eq(r->integer, 8);
    freeReplyObject(r);
    long long deadline = st_now_ms() + 30000;
    while ((s = raw_stats(ep)).disk_removed < 8 && st_now_ms() < deadline) {
        st_sleep_ms(100);
    }
    cr_assert_eq(s.disk_removed, 8, "the owner deleted every record");
    cr_assert_eq(s.disk_keys, 0);
    cr_assert_eq(s.disk_bytes, 0, "the quota is free");
    cr_assert_eq(files_under(fdir), 0);
    cr_assert_eq(offload_stat(c, "removes_fetched"), 8);
    /* Eight new values fit again (eviction is off: a full quota would refuse them). */
    for (int i = 8; i < 16; i++) {
        cr_assert_eq(put_retry(w, i, st_now_ms() + 60000), 0, "put %d", i);
    }
    wait_done(c, 16);
    cr_assert_eq(offload_stat(c, "done"), 16);
    cr_assert_eq(raw_stats(ep).disk_keys, 8);
    crescent_store_destroy(w);
    cr_assert_eq(st_daemon_stop(&d), 0);
    redisFree(c);
}

/* ---- concurrent readers of one owner ------------------------------------------------------- */

#define NREADERS 4
#define NSHARED  16

struct reader {
    struct crescent_store *st;
    int bad;       /* gets that failed or returned other bytes */
    char why[256]; /* the first failure */
};

/* Reader thread: every disk-only key, twice, compared byte for byte (no cr_assert here). */
static void *reader_main(void *arg) {
    struct reader *r = arg;
    char *want = malloc(VAL);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < NSHARED; i++) {
            char k[32];
            key_of(k, i);
            void *v = NULL;
            size_t n = 0;
            st_fill(want, VAL, (unsigned)i);
            int rc = crescent_store_get(r->st, k, &v, &n);
            if (rc != 0 || n != VAL || memcmp(v, want, VAL)) {
                if (r->bad++ == 0) {
                    snprintf(r->why, sizeof(r->why), "%s: %s (%s), %zu bytes", k,
                             crescent_store_err_name(rc), rc ? crescent_store_last_error() : "", n);
                }
            }
            free(v);
        }
    }
    free(want);
    return NULL;
}

/* Four readers at once through one owner (its request workers stage them side by side): every
 * value byte-exact, every staging extent released. */
Test(ssd, concurrent_readers_through_one_owner) {
    st_master_start(&M, "--memory 0 --enable_offload yes --default_kv_lease_ttl 2000");
    redisContext *c = st_redis(&M);
    struct st_daemon d;
    make_disk_only(&d, "tcp", NSHARED, c, 0);
    char ep[128];
    disk_endpoint(c, d.client_id, ep, sizeof(ep));
    struct reader rs[NREADERS];
    pthread_t th[NREADERS];
    for (int i = 0; i < NREADERS; i++) {
        rs[i] = (struct reader){.st = st_store(&M, "tcp", 0)};
    }
    long long t0 = st_now_ms();
    for (int i = 0; i < NREADERS; i++) {
        cr_assert_eq(pthread_create(&th[i], NULL, reader_main, &rs[i]), 0);
    }
    for (int i = 0; i < NREADERS; i++) {
        pthread_join(th[i], NULL);
    }
    cr_log_info("%d readers x %d staged reads of %u KiB: %lld ms (information, not a check)",
                NREADERS, 2 * NSHARED, VAL >> 10, st_now_ms() - t0);
    for (int i = 0; i < NREADERS; i++) {
        cr_assert_eq(rs[i].bad, 0, "reader %d: %d bad gets, first %s", i, rs[i].bad, rs[i].why);
        crescent_store_destroy(rs[i].st);
    }
    struct stage_stats s = raw_stats(ep);
    cr_assert_eq(s.staged, NREADERS * NSHARED * 2);
    cr_assert_eq(s.released, NREADERS * NSHARED * 2, "every staging extent released");
    cr_assert_eq(s.in_use, 0);
    cr_assert_eq(s.live, 0);
    cr_assert_eq(s.gc_freed, 0);
    cr_assert_eq(st_daemon_stop(&d), 0);
    redisFree(c);
}
