/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-client daemons against a real crescent-master (--client_live_ttl_sec 2), with
 * applications linking the shared libcrescent, over tcp and shm: replicas land on distinct
 * daemon segments and survive a kill -9 of one daemon (master --client_live_ttl_sec 3); dummy
 * clients over a daemon move put_from / get_into bytes with zero copies counted; SIGTERM unmounts
 * gracefully and exits 0; a dead or silent dummy is dropped by the daemon; a master restart is
 * followed by remounts; garbage and bad fds on the dummy socket get clear errors; bad command lines
 * exit 2.
 */
#include "common/fmacros.h"

#include "crescent/store.h"
#include "tests/store/daemon_test_util.h"
#include "tests/store/store_test_util.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1u << 20)

static struct st_master master;
static redisContext *rc;

/* The daemons' segments are the pool's only ones: the embedded segment stays out of it. */
static void setup(void) {
    st_master_start(&master, "--client_live_ttl_sec 3 --embedded_segment_in_pool no");
    rc = st_redis(&master);
}

static void teardown(void) {
    redisFree(rc);
    st_master_stop(&master);
}

TestSuite(daemon, .init = setup, .fini = teardown, .timeout = 180);

/* ---- daemon processes ---- */

static void daemon_start_on(struct st_daemon *d, int port, const char *proto, const char *seg,
                            const char *ttl, const char *grace_ms) {
    st_daemon_start(d, &master, port, proto, seg, ttl, grace_ms);
}

static void daemon_start(struct st_daemon *d, const char *proto, const char *seg, const char *ttl,
                         const char *grace_ms) {
    st_daemon_start(d, &master, 0, proto, seg, ttl, grace_ms);
}

#define daemon_stop  st_daemon_stop
#define daemon_kill  st_daemon_kill
#define dummy_store  st_dummy
#define spawn_client st_client_spawn
#define free_port    st_daemon_free_port

/* ---- master view ---- */

/* The status of segment name in MC.SEGMENTS, "" when it is not listed. */
static void segment_status(const char *name, char *out, size_t cap) {
    redisReply *r = st_cmd(rc, "MC.SEGMENTS");
    cr_assert(r->type == REDIS_REPLY_ARRAY);
    snprintf(out, cap, "%s", "");
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *n = st_field(r->element[i], "name");
        const redisReply *s = st_field(r->element[i], "status");
        if (n != NULL && s != NULL && strcmp(n->str, name) == 0) {
            snprintf(out, cap, "%s", s->str);
        }
    }
    freeReplyObject(r);
}

static bool wait_segment(const char *name, bool listed, long long ms) {
    char s[64];
    long long deadline = st_now_ms() + ms;
    do {
        segment_status(name, s, sizeof(s));
        if ((s[0] != '\0') == listed) {
            return true;
        }
        st_sleep_ms(50);
    } while (st_now_ms() < deadline);
    return false;
}

static void check_get(struct crescent_store *st, const char *key, const void *want, size_t len) {
    void *v = NULL;
    size_t n = 0;
    OK(crescent_store_get(st, key, &v, &n));
    cr_assert_eq(n, len, "%s: %zu bytes, want %zu", key, n, len);
    cr_assert(memcmp(v, want, len) == 0, "%s: bytes differ", key);
    crescent_store_free(v);
}

/* ---- tests ---- */

/* Three daemons; replica_num 2 lands on two distinct daemon segments; kill -9 of one daemon:
 * after the master's TTL its replicas are gone, reads use the other replica, an object whose
 * only replica was there is OBJECT_NOT_FOUND. */
static void three_daemons(const char *proto) {
    struct st_daemon d[3];
    /* Three host identities over tcp (127.0.0.x are all loopback); shm needs one host. */
    const char *hosts[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3"};
    bool tcp = strcmp(proto, "tcp") == 0;
    for (int i = 0; i < 3; i++) {
        st_daemon_start_host(&d[i], &master, 0, tcp ? hosts[i] : NULL, proto, "32mb", "10", "500");
        cr_assert(wait_segment(d[i].segment, true, 1000), "%s not in MC.SEGMENTS", d[i].segment);
        redisReply *r = st_cmd(rc, "MC.QUERYSEGMENT %s", d[i].segment);
        const redisReply *h = st_field(r, "host");
        cr_assert(h != NULL && h->type == REDIS_REPLY_STRING);
        cr_assert_str_eq(h->str, tcp ? hosts[i] : "127.0.0.1");
        freeReplyObject(r);
    }
    struct crescent_store *st = st_store(&master, proto, 0);
    size_t len = MIB + 3;
    char *val = malloc(len);
    st_fill(val, len, 7);
    struct crescent_store_replicate_config two = {.replica_num = 2};
    char segs[8][256];
    for (int k = 0; k < 4; k++) {
        char key[32];
        snprintf(key, sizeof(key), "two-%d", k);
        OK(crescent_store_put(st, key, val, len, &two));
        cr_assert_eq(st_replica_segments(rc, key, segs, 8), 2);
        cr_assert_str_neq(segs[0], segs[1]);
        for (int j = 0; j < 2; j++) {
            bool ours = false;
            for (int i = 0; i < 3; i++) {
                ours = ours || strcmp(segs[j], d[i].segment) == 0;
            }
            cr_assert(ours, "replica on %s, not a daemon segment", segs[j]);
        }
        check_get(st, key, val, len);
    }
    const char *ab[] = {d[0].segment, d[1].segment};
    struct crescent_store_replicate_config on_ab = {
        .replica_num = 2, .preferred_segments = ab, .n_preferred_segments = 2};
    OK(crescent_store_put(st, "on-ab", val, len, &on_ab));
    cr_assert_eq(st_replica_segments(rc, "on-ab", segs, 8), 2);
    struct crescent_store_replicate_config on_a = {
        .replica_num = 1, .preferred_segments = ab, .n_preferred_segments = 1};
    OK(crescent_store_put(st, "only-a", val, 1000, &on_a));
    cr_assert_eq(st_replica_segments(rc, "only-a", segs, 8), 1);
    cr_assert_str_eq(segs[0], d[0].segment);

    daemon_kill(&d[0]);
    check_get(st, "on-ab", val, len); /* before expiry: a's replica fails, b's serves */
    cr_assert(wait_segment(d[0].segment, false, 15000), "killed daemon's segment stayed");
    cr_assert_eq(st_replica_segments(rc, "on-ab", segs, 8), 1);
    cr_assert_str_eq(segs[0], d[1].segment);
    check_get(st, "on-ab", val, len);
    for (int k = 0; k < 4; k++) {
        char key[32];
        snprintf(key, sizeof(key), "two-%d", k);
        int n = st_replica_segments(rc, key, segs, 8);
        cr_assert(n >= 1 && n <= 2, "%s: %d replicas", key, n);
        for (int j = 0; j < n; j++) {
            cr_assert_str_neq(segs[j], d[0].segment);
        }
        check_get(st, key, val, len);
    }
    void *v = NULL;
    size_t n = 0;
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_get(st, "only-a", &v, &n));
    cr_assert_null(v);
    crescent_store_destroy(st);
    cr_assert_eq(daemon_stop(&d[1]), 0);
    cr_assert_eq(daemon_stop(&d[2]), 0);
    free(val);
}

Test(daemon, three_daemons_replicas_and_kill9_tcp) {
    three_daemons("tcp");
}

Test(daemon, three_daemons_replicas_and_kill9_shm) {
    three_daemons("shm");
}

/* A dummy client over daemon a: put_from / get_into (and their batches) move bytes between its
 * pool and daemon b's segment with no copy in the daemon; the copying calls are counted. */
static void dummy_zero_copy(const char *proto) {
    struct st_daemon a, b;
    daemon_start(&a, proto, "16mb", "10", "500");
    daemon_start(&b, proto, "64mb", "10", "500");
    struct crescent_store *du = dummy_store(&a, 32 * MIB);
    cr_assert_str_eq(crescent_store_client_id(du), a.client_id);
    size_t pool_size = 0;
    char *pool = crescent_store_dummy_pool(du, &pool_size);
    cr_assert_not_null(pool);
    cr_assert_eq(pool_size, 32 * MIB);
    cr_assert_eq(crescent_store_health_check(du), 0);

    struct crescent_store_daemon_stats s0, s1;
    OK(crescent_store_daemon_stats(du, &s0));
    cr_assert_eq(s0.dummies, 1);

    const char *on_b[] = {b.segment};
    struct crescent_store_replicate_config rb = {
        .replica_num = 1, .preferred_segments = on_b, .n_preferred_segments = 1};
    size_t len = 4 * MIB + 5;
    st_fill(pool, len, 3);
    OK(crescent_store_put_from(du, "zc", pool, len, &rb));
    char segs[8][256];
    cr_assert_eq(st_replica_segments(rc, "zc", segs, 8), 1);
    cr_assert_str_eq(segs[0], b.segment);
    char *dst = pool + 8 * MIB;
    memset(dst, 0, len);
    cr_assert_eq(crescent_store_get_into(du, "zc", dst, 8 * MIB), (int64_t)len);
    cr_assert(memcmp(dst, pool, len) == 0, "get_into bytes differ");

    /* 16 keys of 64 KiB in one batch each way */
    const char *keys[16];
    char names[16][16];
    const void *src[16];
    void *out[16];
    size_t sizes[16], caps[16];
    int pres[16];
    int64_t gres[16];
    for (int i = 0; i < 16; i++) {
        snprintf(names[i], sizeof(names[i]), "zb-%d", i);
        keys[i] = names[i];
        src[i] = pool + 16 * MIB + (size_t)i * 65536;
        out[i] = pool + 24 * MIB + (size_t)i * 65536;
        sizes[i] = 65536 - (size_t)i;
        caps[i] = 65536;
        st_fill((void *)src[i], sizes[i], 100 + i);
    }
    OK(crescent_store_batch_put_from(du, keys, src, sizes, 16, &rb, pres));
    OK(crescent_store_batch_get_into(du, keys, out, caps, 16, gres));
    uint64_t batch_bytes = 0;
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(pres[i], 0);
        cr_assert_eq(gres[i], (int64_t)sizes[i]);
        cr_assert(memcmp(out[i], src[i], sizes[i]) == 0, "batch key %d differs", i);
        batch_bytes += sizes[i];
    }
    OK(crescent_store_daemon_stats(du, &s1));
    cr_assert_eq(s1.copied_bytes, s0.copied_bytes, "the daemon copied payload bytes");
    cr_assert_eq(s1.staging_bytes, s0.staging_bytes, "the daemon staged payload bytes");
    cr_assert_eq(s1.zero_copy_bytes - s0.zero_copy_bytes, 2 * (uint64_t)len + 2 * batch_bytes);

    /* An application with its own store reads what the dummy wrote, byte for byte. */
    struct crescent_store *app = st_store(&master, proto, 0);
    check_get(app, "zc", pool, len);
    OK(crescent_store_put(app, "from-app", "hello dummy", 11, NULL));
    crescent_store_destroy(app);

    /* The copying calls of a dummy pass the value through the socket: counted. */
    char small[1000];
    st_fill(small, sizeof(small), 9);
    OK(crescent_store_put(du, "copied", small, sizeof(small), &rb));
    check_get(du, "copied", small, sizeof(small));
    check_get(du, "from-app", "hello dummy", 11);
    OK(crescent_store_daemon_stats(du, &s0));
    cr_assert_eq(s0.copied_bytes - s1.copied_bytes, 2 * sizeof(small) + 11);
    size_t big_len = 8 * MIB + 1; /* an inline value spanning many socket reads */
    char *big = malloc(big_len);
    st_fill(big, big_len, 11);
    OK(crescent_store_put(du, "big", big, big_len, &rb));
    check_get(du, "big", big, big_len);
    OK(crescent_store_remove(du, "big", 1));
    free(big);
    OK(crescent_store_daemon_stats(du, &s1));
    cr_assert_eq(s1.copied_bytes - s0.copied_bytes, 2 * (uint64_t)big_len);

    /* The rest of the API through the daemon. */
    cr_assert_eq(crescent_store_is_exist(du, "zc"), 1);
    cr_assert_eq(crescent_store_is_exist(du, "nope"), 0);
    cr_assert_eq(crescent_store_get_size(du, "zc"), (int64_t)len);
    struct crescent_store_replica rep[4];
    cr_assert_eq(crescent_store_get_replica_desc(du, "zc", rep, 4), 1);
    cr_assert_str_eq(rep[0].segment, b.segment);
    cr_assert_eq(rep[0].size, len);
    cr_assert_eq(rep[0].complete, 1);
    const char *ex[] = {"zc", "nope"};
    int eres[2];
    OK(crescent_store_batch_is_exist(du, ex, 2, eres));
    cr_assert(eres[0] == 1 && eres[1] == 0);
    ERR(CRESCENT_STORE_EOBJECT_ALREADY_EXISTS, crescent_store_put_from(du, "zc", pool, 10, &rb));
    OK(crescent_store_put_from(du, "up", pool, 10, &rb)); /* unleased: resized in place */
    OK(crescent_store_upsert_from(du, "up", pool, 20, &rb));
    cr_assert_eq(crescent_store_get_size(du, "up"), 20);
    ERR(CRESCENT_STORE_EBUFFER_OVERFLOW, crescent_store_get_into(du, "zb-0", dst, 10));
    char outside[64];
    ERR(CRESCENT_STORE_EINVALID_PARAMS, crescent_store_put_from(du, "x", outside, 64, NULL));
    ERR(CRESCENT_STORE_EINVALID_PARAMS, crescent_store_get_into(du, "zc", outside, 64));
    ERR(CRESCENT_STORE_EINVALID_PARAMS,
        crescent_store_put_from(du, "x", pool + pool_size - 8, 16, NULL));
    ERR(EINVAL, crescent_store_register_buffer(du, outside, 64));
    OK(crescent_store_register_buffer(du, pool, 4096));
    ERR(CRESCENT_STORE_ENOT_SUPPORTED, crescent_store_mount_segment(du, NULL, MIB, NULL));
    void *v = NULL;
    size_t n = 0;
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_get(du, "nope", &v, &n));
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_get_into(du, "nope", dst, 64));
    cr_assert_eq(crescent_store_remove_by_regex(du, "^zb-1[0-9]$", 1), 6);
    OK(crescent_store_remove(du, "copied", 1));
    cr_assert_eq(crescent_store_is_exist(du, "copied"), 0);
    cr_assert_eq(crescent_store_remove_all(du, 1), 13); /* zc, up, zb-0..9, from-app */
    long long used = st_segments_used(rc);
    cr_assert_eq(used, 0, "%lld bytes still used", used);
    crescent_store_destroy(du);
    cr_assert_eq(daemon_stop(&a), 0);
    cr_assert_eq(daemon_stop(&b), 0);
}

Test(daemon, dummy_zero_copy_tcp) {
    dummy_zero_copy("tcp");
}

Test(daemon, dummy_zero_copy_shm) {
    dummy_zero_copy("shm");
}

struct mt_arg {
    struct crescent_store *du;
    char *region; /* this thread's part of the pool */
    const char *segment;
    int id;
    int failures;
};

static void *mt_main(void *p) {
    struct mt_arg *a = p;
    const char *on[] = {a->segment};
    struct crescent_store_replicate_config rc1 = {
        .replica_num = 1, .preferred_segments = on, .n_preferred_segments = 1};
    size_t len = 256 * 1024;
    for (int i = 0; i < 16; i++) {
        char key[32];
        snprintf(key, sizeof(key), "mt-%d-%d", a->id, i);
        st_fill(a->region, len, (unsigned)(a->id * 100 + i));
        memset(a->region + len, 0, len);
        if (crescent_store_put_from(a->du, key, a->region, len, &rc1) != 0 ||
            crescent_store_get_into(a->du, key, a->region + len, len) != (int64_t)len ||
            memcmp(a->region, a->region + len, len) != 0 ||
            crescent_store_remove(a->du, key, 1) != 0) {
            a->failures++;
        }
    }
    return NULL;
}

/* Four threads share one dummy: their calls run over up to four connections that the daemon
 * maps onto the one pool; every byte is right and nothing is copied. */
Test(daemon, dummy_shared_by_threads) {
    struct st_daemon a, b;
    daemon_start(&a, "tcp", "16mb", "10", "500");
    daemon_start(&b, "tcp", "32mb", "10", "500");
    struct crescent_store *du = dummy_store(&a, 4 * MIB);
    char *pool = crescent_store_dummy_pool(du, NULL);
    struct crescent_store_daemon_stats s0, s1;
    OK(crescent_store_daemon_stats(du, &s0));
    pthread_t t[4];
    struct mt_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct mt_arg){du, pool + (size_t)i * MIB, b.segment, i, 0};
        cr_assert_eq(pthread_create(&t[i], NULL, mt_main, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(args[i].failures, 0, "thread %d: %s", i, crescent_store_last_error());
    }
    OK(crescent_store_daemon_stats(du, &s1));
    cr_assert_eq(s1.dummies, 1);
    cr_assert(s1.connections >= 1 && s1.connections <= 4, "%llu connections",
              (unsigned long long)s1.connections);
    cr_log_info("4 threads used %llu connections", (unsigned long long)s1.connections);
    cr_assert_eq(s1.copied_bytes, s0.copied_bytes);
    cr_assert_eq(s1.staging_bytes, s0.staging_bytes);
    cr_assert_eq(s1.zero_copy_bytes - s0.zero_copy_bytes, 4 * 16 * 2 * 256 * 1024ull);
    crescent_store_destroy(du);
    cr_assert_eq(daemon_stop(&a), 0);
    cr_assert_eq(daemon_stop(&b), 0);
}

/* SIGTERM: the segment goes GRACEFULLY_UNMOUNTING (its object still readable), then leaves
 * MC.SEGMENTS, and the daemon exits 0. */
Test(daemon, sigterm_unmounts_gracefully) {
    struct st_daemon d;
    daemon_start(&d, "tcp", "16mb", "10", "5000");
    struct crescent_store *st = st_store(&master, "tcp", 0);
    OK(crescent_store_put(st, "g", "graceful", 8, NULL));
    char segs[8][256], status[64];
    cr_assert_eq(st_replica_segments(rc, "g", segs, 8), 1);
    cr_assert_str_eq(segs[0], d.segment);
    segment_status(d.segment, status, sizeof(status));
    cr_assert_str_eq(status, "OK");
    kill(d.pid, SIGTERM);
    long long deadline = st_now_ms() + 10000;
    do {
        segment_status(d.segment, status, sizeof(status));
    } while (strcmp(status, "OK") == 0 && st_now_ms() < deadline);
    cr_assert_str_eq(status, "GRACEFULLY_UNMOUNTING");
    check_get(st, "g", "graceful", 8); /* readable during the grace period */
    cr_assert(wait_segment(d.segment, false, 15000), "segment still listed");
    cr_assert_eq(daemon_stop(&d), 0);
    void *v = NULL;
    size_t n = 0;
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_get(st, "g", &v, &n));
    crescent_store_destroy(st);
}

/* A forked dummy that reports "ok" once attached, then waits. */
static pid_t dummy_child(const struct st_daemon *d) {
    int p[2];
    cr_assert(pipe(p) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(p[0]);
        char port[16];
        snprintf(port, sizeof(port), "%d", d->port);
        struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
        cfg.daemon = port;
        cfg.local_buffer_size = MIB;
        struct crescent_store *st;
        int r = crescent_store_create(NULL, &cfg, &st);
        if (write(p[1], r == 0 ? "ok" : "no", 2) != 2) {
            _exit(1);
        }
        for (;;) {
            pause();
        }
    }
    close(p[1]);
    char b[3] = "";
    cr_assert_eq(read(p[0], b, 2), 2);
    close(p[0]);
    cr_assert_str_eq(b, "ok");
    return pid;
}

static bool wait_stats(struct crescent_store *du, uint64_t dummies, uint64_t expired,
                       uint64_t closed, long long ms) {
    struct crescent_store_daemon_stats s;
    long long deadline = st_now_ms() + ms;
    do {
        OK(crescent_store_daemon_stats(du, &s));
        if (s.dummies == dummies && s.dummies_expired == expired && s.dummies_closed == closed) {
            return true;
        }
        st_sleep_ms(50);
    } while (st_now_ms() < deadline);
    cr_log_error("dummies %llu expired %llu closed %llu", (unsigned long long)s.dummies,
                 (unsigned long long)s.dummies_expired, (unsigned long long)s.dummies_closed);
    return false;
}

/* A dummy killed with SIGKILL is dropped at once (its socket closes); a stopped one (SIGSTOP)
 * after the daemon's TTL. */
Test(daemon, dead_and_silent_dummies_are_dropped) {
    struct st_daemon d;
    daemon_start(&d, "tcp", "16mb", "2", "500");
    struct crescent_store *du = dummy_store(&d, MIB);
    pid_t a = dummy_child(&d);
    cr_assert(wait_stats(du, 2, 0, 0, 5000));
    kill(a, SIGKILL);
    waitpid(a, NULL, 0);
    cr_assert(wait_stats(du, 1, 0, 1, 5000), "killed dummy not dropped");
    pid_t b = dummy_child(&d);
    cr_assert(wait_stats(du, 2, 0, 1, 5000));
    kill(b, SIGSTOP);
    cr_assert(wait_stats(du, 1, 1, 1, 15000), "stopped dummy not expired");
    kill(b, SIGKILL);
    waitpid(b, NULL, 0);
    /* The pinging dummy was never dropped and still works. */
    OK(crescent_store_put(du, "alive", "yes", 3, NULL));
    check_get(du, "alive", "yes", 3);
    crescent_store_destroy(du);
    cr_assert_eq(daemon_stop(&d), 0);
}

/* The master restarts empty: both daemons remount within a few pings and new puts work, from
 * an application store and from a dummy. */
Test(daemon, master_restart_daemons_remount) {
    struct st_daemon a, b;
    daemon_start(&a, "tcp", "16mb", "10", "500");
    daemon_start(&b, "tcp", "16mb", "10", "500");
    struct crescent_store *du = dummy_store(&a, 4 * MIB);
    OK(crescent_store_put(du, "before", "x", 1, NULL));
    redisFree(rc);
    st_master_kill(&master);
    st_master_restart(&master);
    rc = st_redis(&master);
    cr_assert(wait_segment(a.segment, true, 15000), "daemon a did not remount");
    cr_assert(wait_segment(b.segment, true, 15000), "daemon b did not remount");
    void *v = NULL;
    size_t n = 0;
    ERR(CRESCENT_STORE_EOBJECT_NOT_FOUND, crescent_store_get(du, "before", &v, &n));
    struct crescent_store *st = st_store(&master, "tcp", 0);
    struct crescent_store_replicate_config two = {.replica_num = 2};
    char val[5000];
    st_fill(val, sizeof(val), 5);
    OK(crescent_store_put(st, "after", val, sizeof(val), &two));
    char segs[8][256];
    cr_assert_eq(st_replica_segments(rc, "after", segs, 8), 2);
    check_get(du, "after", val, sizeof(val));
    char *pool = crescent_store_dummy_pool(du, NULL);
    memcpy(pool, val, sizeof(val));
    OK(crescent_store_put_from(du, "after-dummy", pool, sizeof(val), &two));
    check_get(st, "after-dummy", val, sizeof(val));
    crescent_store_destroy(st);
    crescent_store_destroy(du);
    cr_assert_eq(daemon_stop(&a), 0);
    cr_assert_eq(daemon_stop(&b), 0);
}

/* A dummy outlives its daemon: calls fail with RPC_FAIL (health 2) while the daemon is down, and
 * work again, with a new pool handshake, once a daemon listens on the same port. */
Test(daemon, dummy_reconnects_after_daemon_restart) {
    struct st_daemon d;
    daemon_start(&d, "tcp", "16mb", "10", "500");
    int port = d.port;
    struct crescent_store *du = dummy_store(&d, MIB);
    char *pool = crescent_store_dummy_pool(du, NULL);
    memcpy(pool, "first", 5);
    OK(crescent_store_put_from(du, "r1", pool, 5, NULL));
    cr_assert_eq(daemon_stop(&d), 0);
    ERR(CRESCENT_STORE_ERPC_FAIL, crescent_store_put_from(du, "r2", pool, 5, NULL));
    long long deadline = st_now_ms() + 10000;
    while (crescent_store_health_check(du) != 2 && st_now_ms() < deadline) {
        st_sleep_ms(50);
    }
    cr_assert_eq(crescent_store_health_check(du), 2);
    char old_id[33];
    snprintf(old_id, sizeof(old_id), "%s", crescent_store_client_id(du));
    daemon_start_on(&d, port, "tcp", "16mb", "10", "500");
    cr_assert_str_neq(old_id, d.client_id);
    memcpy(pool, "second", 6);
    OK(crescent_store_put_from(du, "r2", pool, 6, NULL));
    cr_assert_str_eq(crescent_store_client_id(du), d.client_id);
    memset(pool, 0, 6);
    cr_assert_eq(crescent_store_get_into(du, "r2", pool, 64), 6);
    cr_assert(memcmp(pool, "second", 6) == 0);
    deadline = st_now_ms() + 10000;
    while (crescent_store_health_check(du) != 0 && st_now_ms() < deadline) {
        st_sleep_ms(50);
    }
    cr_assert_eq(crescent_store_health_check(du), 0);
    crescent_store_destroy(du);
    cr_assert_eq(daemon_stop(&d), 0);
}

/* ---- raw dummy socket ---- */

static int raw_connect(const struct st_daemon *d) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "crescent_client_%d.sock", d->port);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    cr_assert(connect(fd, (struct sockaddr *)&sa,
                      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

/* Sends req with fd_pass attached (none when -1). */
static ssize_t sendmsg_fd(int fd, const char *req, int fd_pass) {
    struct iovec iov = {(void *)req, strlen(req)};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } cm;
    memset(&cm, 0, sizeof(cm));
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd_pass >= 0) {
        m.msg_control = cm.b;
        m.msg_controllen = sizeof(cm.b);
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd_pass, sizeof(int));
    }
    return sendmsg(fd, &m, MSG_NOSIGNAL);
}

/* Reads exactly n bytes (less at EOF or timeout); returns the count. */
static int read_n(int fd, char *buf, size_t n) {
    size_t len = 0;
    while (len < n) {
        ssize_t k = read(fd, buf + len, n - len);
        if (k <= 0) {
            break;
        }
        len += (size_t)k;
    }
    return (int)len;
}

/* Sends req (with fd_pass attached when >= 0) and returns the reply's first line, reading one
 * byte at a time so nothing of a later reply is consumed. */
static void raw_request(int fd, const char *req, int fd_pass, char *line, size_t cap) {
    cr_assert_eq(sendmsg_fd(fd, req, fd_pass), (ssize_t)strlen(req));
    size_t len = 0;
    line[0] = '\0';
    while (len + 1 < cap && strstr(line, "\r\n") == NULL) {
        ssize_t n = read(fd, line + len, 1);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
        line[len] = '\0';
    }
    char *crlf = strstr(line, "\r\n");
    if (crlf != NULL) {
        *crlf = '\0';
    }
}

static bool raw_closed(int fd) {
    char c;
    return read(fd, &c, 1) == 0;
}

static int sealed_memfd(size_t size, bool seal) {
    int fd = memfd_create("test-pool", MFD_ALLOW_SEALING);
    cr_assert(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
    if (seal) {
        cr_assert(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
    }
    return fd;
}

#define HELLO_1M "*4\r\n$5\r\nHELLO\r\n$1\r\n1\r\n$7\r\n1048576\r\n$1\r\n1\r\n"

/* Garbage, bad lengths, HELLO without / with a wrong fd, requests outside the pool: clear
 * errors, the daemon stays up and serves a real dummy afterwards. */
Test(daemon, bad_input_on_the_dummy_socket) {
    struct st_daemon d;
    daemon_start(&d, "tcp", "16mb", "10", "500");
    char line[512];
    struct {
        const char *req, *want;
    } garbage[] = {
        {"garbage\r\n", "-ERR Protocol error: expected '*', got 'g'"},
        {"*99999999999\r\n", "-ERR Protocol error: invalid multibulk length"},
        {"*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length"},
        {"*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'"},
        {"*1\r\n$99999999999999999999\r\n", "-ERR Protocol error: invalid bulk length"},
        {"*1\r\n$5000000000\r\n", "-ERR Protocol error: invalid bulk length"}, /* > 4 GiB */
    };
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        int fd = raw_connect(&d);
        raw_request(fd, garbage[i].req, -1, line, sizeof(line));
        cr_assert_str_eq(line, garbage[i].want, "request %zu", i);
        cr_assert(raw_closed(fd), "connection %zu left open", i);
        close(fd);
    }

    int fd = raw_connect(&d);
    raw_request(fd, "*2\r\n$7\r\nGETINTO\r\n$1\r\nk\r\n", -1, line, sizeof(line));
    cr_assert_str_eq(line, "-ERR -22 GETINTO before HELLO: hand over the pool first");
    raw_request(fd, HELLO_1M, -1, line, sizeof(line));
    cr_assert_str_eq(line, "-ERR -9 HELLO: no file descriptor attached (SCM_RIGHTS)");
    int pp[2];
    cr_assert(pipe(pp) == 0);
    raw_request(fd, HELLO_1M, pp[0], line, sizeof(line));
    cr_assert_str_eq(line, "-ERR -9 HELLO: the attached fd is not a memfd of at least 1048576 "
                           "bytes sealed against shrinking (F_SEAL_SHRINK)");
    close(pp[0]);
    close(pp[1]);
    int unsealed = sealed_memfd(MIB, false);
    raw_request(fd, HELLO_1M, unsealed, line, sizeof(line));
    cr_assert(strncmp(line, "-ERR -9 HELLO: the attached fd is not a memfd", 45) == 0, "%s", line);
    close(unsealed);
    int small = sealed_memfd(4096, true);
    raw_request(fd, HELLO_1M, small, line, sizeof(line));
    cr_assert(strncmp(line, "-ERR -9 HELLO: the attached fd is not a memfd", 45) == 0, "%s", line);
    close(small);
    raw_request(fd, "*2\r\n$5\r\nHELLO\r\n$1\r\n1\r\n", -1, line, sizeof(line));
    cr_assert_str_eq(line, "-ERR -22 HELLO takes version pool_size pid");
    int good = sealed_memfd(MIB, true);
    char want[512];
    int wl = snprintf(want, sizeof(want), "*2\r\n$32\r\n%s\r\n$%zu\r\n%s\r\n", d.client_id,
                      strlen(d.segment), d.segment);
    cr_assert_eq(sendmsg_fd(fd, HELLO_1M, good), (ssize_t)strlen(HELLO_1M));
    cr_assert_eq(read_n(fd, line, (size_t)wl), wl);
    cr_assert(memcmp(line, want, (size_t)wl) == 0, "HELLO reply: %.*s", wl, line);
    close(good);
    /* After HELLO: out-of-pool ranges, bad numbers, unknown verbs; the connection stays up. */
    raw_request(fd, "*4\r\n$7\r\nGETINTO\r\n$1\r\nk\r\n$7\r\n1048000\r\n$4\r\n1000\r\n", -1, line,
                sizeof(line));
    cr_assert_str_eq(line, "-ERR -5600 range [1048000, +1000) lies outside the 1048576-byte pool");
    raw_request(fd, "*4\r\n$7\r\nGETINTO\r\n$1\r\nk\r\n$2\r\n-1\r\n$1\r\n1\r\n", -1, line,
                sizeof(line));
    cr_assert_str_eq(line, "-ERR -5600 offset and size must be numbers");
    raw_request(fd, "*1\r\n$5\r\nFLUSH\r\n", -1, line, sizeof(line));
    cr_assert_str_eq(line, "-ERR -22 unknown request 'FLUSH' or wrong number of arguments");
    raw_request(fd, "*3\r\n$8\r\nBGETINTO\r\n$1\r\n2\r\n$1\r\nk\r\n", -1, line, sizeof(line));
    cr_assert_str_eq(line, "-ERR -22 BGETINTO: wrong number of arguments");
    raw_request(fd, "*0\r\n*1\r\n$4\r\nPING\r\n", -1, line, sizeof(line)); /* *0: skipped */
    cr_assert_str_eq(line, ":0");
    close(fd);

    /* The daemon still serves a real dummy and counted the protocol errors. */
    struct crescent_store *du = dummy_store(&d, MIB);
    OK(crescent_store_put(du, "still", "up", 2, NULL));
    check_get(du, "still", "up", 2);
    struct crescent_store_daemon_stats s;
    OK(crescent_store_daemon_stats(du, &s));
    cr_assert_eq(s.protocol_errors, sizeof(garbage) / sizeof(garbage[0]));

    /* 200 connections of random bytes (half of them starting like a request), each closed
     * after writing: whatever the daemon makes of them, it keeps serving. */
    unsigned seed = 12345;
    for (int i = 0; i < 200; i++) {
        char junk[96];
        for (size_t k = 0; k < sizeof(junk); k++) {
            seed = seed * 1103515245u + 12345u;
            junk[k] = (char)(seed >> 16);
        }
        if (i % 2 == 0) {
            memcpy(junk, "*3\r\n$7\r\nGETINTO\r\n", 18);
        }
        int g = raw_connect(&d);
        cr_assert_eq(send(g, junk, sizeof(junk), MSG_NOSIGNAL), (ssize_t)sizeof(junk));
        close(g);
    }
    check_get(du, "still", "up", 2);
    crescent_store_destroy(du);
    cr_assert_eq(daemon_stop(&d), 0);

    /* A dummy pointed at no daemon: a clear error. */
    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.daemon = "1";
    struct crescent_store *none = NULL;
    ERR(CRESCENT_STORE_ERPC_FAIL, crescent_store_create(NULL, &cfg, &none));
    cr_assert_null(none);
    cfg.daemon = "not a port";
    ERR(EINVAL, crescent_store_create(NULL, &cfg, &none));
    cfg.daemon = "50052";
    cfg.global_segment_size = MIB;
    ERR(EINVAL, crescent_store_create(NULL, &cfg, &none));
}

static int run_status(const char *const *args) {
    char log[256];
    snprintf(log, sizeof(log), "/tmp/crescent-daemon-cli.%d.log", (int)getpid());
    pid_t pid = spawn_client(args, NULL, log);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    unlink(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Bad command lines exit 2, an unreachable master 1, --help and --version 0. */
Test(daemon, command_line) {
    const char *proto[] = {"--protocol", "udp", NULL};
    cr_assert_eq(run_status(proto), 2);
    const char *size[] = {"--global_segment_size", "lots", NULL};
    cr_assert_eq(run_status(size), 2);
    const char *ssd[] = {"--ssd_offload_path", "/nonexistent/dir/below", NULL};
    cr_assert_eq(run_status(ssd), 2);
    const char *port[] = {"--port", "70000", NULL};
    cr_assert_eq(run_status(port), 2);
    const char *unknown[] = {"--frobnicate", NULL};
    cr_assert_eq(run_status(unknown), 2);
    const char *help[] = {"--help", NULL};
    cr_assert_eq(run_status(help), 0);
    const char *version[] = {"--version", NULL};
    cr_assert_eq(run_status(version), 0);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
    const char *nomaster[] = {"--master", addr, "--global_segment_size", "1mb", NULL};
    cr_assert_eq(run_status(nomaster), 1);
}
