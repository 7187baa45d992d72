/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET of an offloaded value read off the event loop (server/srv_defer.h, docs/storage.md): the
 * client waits while the loop serves others; its pipelined commands keep their order. On both
 * network backends: many clients pipelining GETs of disk, memory and missing keys get every
 * reply in order and byte-exact (one event loop and three); other clients are served while a
 * read is in flight; a client
 * killed, disconnecting or half-closing while its read is in flight; DEL and SET of the key
 * during the read; GET inside MULTI/EXEC; shutdown with a read in flight. The server's test
 * knob CRESCENT_TEST_DEFER_DELAY_MS holds every deferred read that long, to catch it in flight.
 * MGET with disk values is deferred as a whole.
 */
#include "common/fmacros.h"

#include "tests/integration/harness.h"
#include "tests/offload/offload_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define NKEYS    3072 /* about 12 MiB of values: three times --memory */
#define VAL_MAX  7000
#define MEMORY   "4mb"
#define REC_BYTE 200 /* MEMORY USAGE at most this: only the record, the value is on disk */
#define NDISK    16  /* disk keys and memory keys picked for the tests */

static char disk_dir[256];
static int disk_keys[NDISK], mem_keys[NDISK];

static size_t val_len(int i) {
    return off_value_len(i);
}

/* Fills buf with key i's value of generation gen; returns its length. */
static size_t val_of(int i, int gen, char *buf) {
    return off_value_bytes(i, gen, val_len(i), buf);
}

static void key_of(int i, char *buf) {
    snprintf(buf, 32, "dk:%05d", i);
}

static long long info_u64(redisContext *c, const char *field) {
    redisReply *r = it_cmd(c, "INFO everything");
    cr_assert(r->type == REDIS_REPLY_STRING);
    char pat[128];
    snprintf(pat, sizeof(pat), "\r\n%s:", field);
    const char *p = strstr(r->str, pat);
    cr_assert_not_null(p, "INFO has %s", field);
    return strtoll(p + strlen(pat), NULL, 10);
}

/* Waits until INFO blocked_clients (deferrals in progress) is want; fails after 20 s. */
static void wait_blocked(redisContext *c, long long want) {
    long long deadline = it_now_ms() + 20000, got = -1;
    while (it_now_ms() < deadline && (got = info_u64(c, "blocked_clients")) != want)
        it_sleep_ms(5);
    cr_assert_eq(got, want, "blocked_clients %lld, want %lld", got, want);
}

/* SETs every key with generation 1, pipelined, and waits for the offload write queue. */
static void fill(redisContext *c) {
    static char val[VAL_MAX];
    for (int i = 0; i < NKEYS; i++) {
        char key[32];
        key_of(i, key);
        size_t n = val_of(i, 1, val);
        const char *argv[] = {"SET", key, val};
        size_t lens[] = {3, strlen(key), n};
        cr_assert_eq(redisAppendCommandArgv(c, 3, argv, lens), REDIS_OK);
    }
    for (int i = 0; i < NKEYS; i++) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(c, (void **)&r), REDIS_OK, "SET: %s", c->errstr);
        cr_assert(r->type == REDIS_REPLY_STATUS, "SET %d: %s", i, r->str);
        freeReplyObject(r);
    }
    off_wait_queue(c); /* every offloaded value on disk: GETs of them read it off the loop */
}

/* Picks NDISK keys on disk and NDISK in memory (from the end: the most recently written). */
static void pick_keys(redisContext *c) {
    int nd = 0, nm = 0;
    for (int i = 16; i < NKEYS && (nd < NDISK || nm < NDISK); i++) {
        int k = i % 2 ? i : NKEYS - i; /* disk keys are old, memory keys recent */
        char key[32];
        key_of(k, key);
        redisReply *r = it_cmd(c, "MEMORY USAGE %s", key);
        cr_assert(r->type == REDIS_REPLY_INTEGER);
        if (r->integer <= REC_BYTE && nd < NDISK)
            disk_keys[nd++] = k;
        else if (r->integer > REC_BYTE && nm < NDISK)
            mem_keys[nm++] = k;
    }
    cr_assert(nd == NDISK && nm == NDISK, "found %d disk and %d memory keys", nd, nm);
}

/* Starts it_srv (threads event loops, backend, reads held delay_ms), fills it, picks keys. */
static void start_threads(const char *backend, int delay_ms, int threads) {
    char conf[128], delay[16];
    snprintf(conf, sizeof(conf), "io-backend %s\nthreads %d\n", backend, threads);
    /* Read by the server's pool when it starts (at the first deferred GET): the fill and the
     * key picking below defer nothing, so they are not slowed down. */
    snprintf(delay, sizeof(delay), "%d", delay_ms);
    setenv("CRESCENT_TEST_DEFER_DELAY_MS", delay, 1);
    disk_dir[0] = '\0';
    off_server_start(disk_dir, sizeof(disk_dir), "/tmp/crescent-defer.XXXXXX", MEMORY, conf);
    unsetenv("CRESCENT_TEST_DEFER_DELAY_MS");
    fill(it_c);
    pick_keys(it_c);
}

/* As start_threads with one event loop (a held read must not stall the others' replies). */
static void start(const char *backend, int delay_ms) {
    start_threads(backend, delay_ms, 1);
}

static void teardown(void) {
    off_teardown(disk_dir);
}

/* Asserts r is key i's value of generation gen, byte for byte. */
static void assert_val(const redisReply *r, int i, int gen, const char *what) {
    static char want[VAL_MAX];
    size_t n = val_of(i, gen, want);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "%s key %d: type %d", what, i, r ? r->type : -1);
    cr_assert_eq(r->len, n, "%s key %d: %zu bytes, want %zu", what, i, r->len, n);
    cr_assert(memcmp(r->str, want, n) == 0, "%s key %d: bytes differ", what, i);
}

/* A raw RESP GET of key i into buf; returns its length. */
static size_t raw_get(char *buf, size_t cap, int i) {
    char key[32];
    key_of(i, key);
    return (size_t)snprintf(buf, cap, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
}

/* Asserts the raw RESP reply p (len bytes) is key i's value of generation gen. */
static void assert_raw_val(const char *p, size_t len, int i, int gen) {
    static char want[VAL_MAX];
    size_t n = val_of(i, gen, want);
    char hdr[32];
    int hl = snprintf(hdr, sizeof(hdr), "$%zu\r\n", n);
    cr_assert_eq(len, (size_t)hl + n + 2, "reply for key %d: %zu bytes", i, len);
    cr_assert(memcmp(p, hdr, (size_t)hl) == 0 && memcmp(p + hl, want, n) == 0,
              "reply for key %d differs", i);
}

/* ---------------------------------------------------------------- many clients pipelining */

#define NCLIENTS 8
#define NPIPE    200

/* What command j of client k asks: 0..NDISK-1 disk, NDISK.. memory, then missing, PING. */
static int pick(int k, int j) {
    return (int)(((unsigned)k * 7919u + (unsigned)j * 104729u) % (2 * NDISK + 2));
}

static void pipelined(const char *backend, int delay_ms, int threads) {
    start_threads(backend, delay_ms, threads);
    redisContext *cs[NCLIENTS];
    for (int k = 0; k < NCLIENTS; k++)
        cs[k] = it_connect(&it_srv);
    for (int k = 0; k < NCLIENTS; k++) {
        for (int j = 0; j < NPIPE; j++) {
            int p = pick(k, j);
            char key[32];
            if (p < NDISK)
                key_of(disk_keys[p], key);
            else if (p < 2 * NDISK)
                key_of(mem_keys[p - NDISK], key);
            else
                snprintf(key, sizeof(key), "nosuchkey");
            if (p == 2 * NDISK + 1)
                redisAppendCommand(cs[k], "PING");
            else
                redisAppendCommand(cs[k], "GET %s", key);
        }
        int done = 0;
        while (!done) /* all clients' pipelines are in the server before any reply is read */
            cr_assert_eq(redisBufferWrite(cs[k], &done), REDIS_OK);
    }
    for (int k = 0; k < NCLIENTS; k++) {
        for (int j = 0; j < NPIPE; j++) {
            redisReply *r = NULL;
            cr_assert_eq(redisGetReply(cs[k], (void **)&r), REDIS_OK, "%s", cs[k]->errstr);
            int p = pick(k, j);
            if (p < NDISK)
                assert_val(r, disk_keys[p], 1, "disk");
            else if (p < 2 * NDISK)
                assert_val(r, mem_keys[p - NDISK], 1, "memory");
            else if (p == 2 * NDISK)
                cr_assert(r->type == REDIS_REPLY_NIL, "client %d reply %d: want nil", k, j);
            else
                cr_assert(r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0);
            freeReplyObject(r);
        }
        it_close(cs[k]);
    }
    cr_assert_eq(info_u64(it_c, "offload_read_failures"), 0);
    cr_assert_gt(info_u64(it_c, "offload_reads"), 0, "the disk keys were read from the tier");
    wait_blocked(it_c, 0);
}

TestSuite(offload_defer, .fini = teardown, .timeout = 300);

Test(offload_defer, pipelined_clients_in_order_epoll) {
    pipelined("epoll", 0, 1);
}

Test(offload_defer, pipelined_clients_in_order_uring) {
    pipelined("uring", 0, 1);
}

Test(offload_defer, pipelined_clients_slow_reads_epoll) {
    pipelined("epoll", 2, 1);
}

Test(offload_defer, pipelined_clients_slow_reads_uring) {
    pipelined("uring", 2, 1);
}

/* Three event loops: each deferral comes back to the loop that owns its client. */
Test(offload_defer, pipelined_clients_three_loops_epoll) {
    pipelined("epoll", 1, 3);
}

Test(offload_defer, pipelined_clients_three_loops_uring) {
    pipelined("uring", 1, 3);
}

/* ---------------------------------------------------------------- one read in flight */

/*
 * Client A pipelines GET disk, GET memory, PING; while its read is held, B is served (GET of a
 * memory key, CLIENT LIST shows A with flag b) on the same single event loop, and then A gets
 * its three replies in order.
 */
static void others_go_on(const char *backend) {
    start(backend, 3000);
    int a = it_raw_open(it_srv.port);
    char req[256];
    size_t n = raw_get(req, sizeof(req), disk_keys[0]);
    n += raw_get(req + n, sizeof(req) - n, mem_keys[0]);
    n += (size_t)snprintf(req + n, sizeof(req) - n, "*1\r\n$4\r\nPING\r\n");
    it_raw_send(a, req, n);
    wait_blocked(it_c, 1);
    char key[32];
    key_of(mem_keys[1], key);
    redisReply *r = it_cmd(it_c, "GET %s", key);
    assert_val(r, mem_keys[1], 1, "B's memory");
    r = it_cmd(it_c, "CLIENT LIST");
    cr_assert(strstr(r->str, "flags=b") != NULL, "A shows as blocked: %s", r->str);
    cr_assert_eq(info_u64(it_c, "blocked_clients"), 1, "A's read still in flight");
    size_t len;
    char *p = it_raw_read(a, &len);
    assert_raw_val(p, len, disk_keys[0], 1);
    free(p);
    p = it_raw_read(a, &len);
    assert_raw_val(p, len, mem_keys[0], 1);
    free(p);
    p = it_raw_read(a, &len);
    cr_assert(len == 7 && memcmp(p, "+PONG\r\n", 7) == 0);
    free(p);
    close(a);
}

Test(offload_defer, others_served_while_read_in_flight_epoll) {
    others_go_on("epoll");
}

Test(offload_defer, others_served_while_read_in_flight_uring) {
    others_go_on("uring");
}

/* A client killed (CLIENT KILL), and one disconnecting, while its read is in flight. */
static void killed(const char *backend) {
    start(backend, 1500);
    redisContext *a = it_connect(&it_srv);
    redisReply *r = it_cmd(a, "CLIENT ID");
    long long id = r->integer;
    char key[32];
    key_of(disk_keys[1], key);
    redisAppendCommand(a, "GET %s", key);
    redisAppendCommand(a, "PING");
    int done = 0;
    while (!done)
        cr_assert_eq(redisBufferWrite(a, &done), REDIS_OK);
    wait_blocked(it_c, 1);
    IT_INT(1, it_c, "CLIENT KILL ID %lld", id);
    void *rep = NULL;
    cr_assert_neq(redisGetReply(a, &rep), REDIS_OK, "A was closed, not answered");
    it_close(a);
    wait_blocked(it_c, 0); /* the read ended; its result was dropped */
    /* A second client closes its socket while its read is held (the server sees the EOF as a
     * half-close: the reply is written once read, which fails, and the client goes). */
    int b = it_raw_open(it_srv.port);
    char req[128];
    size_t n = raw_get(req, sizeof(req), disk_keys[2]);
    it_raw_send(b, req, n);
    wait_blocked(it_c, 1);
    close(b);
    wait_blocked(it_c, 0);
    long long deadline = it_now_ms() + 20000;
    while (info_u64(it_c, "connected_clients") != 1 && it_now_ms() < deadline)
        it_sleep_ms(5);
    cr_assert_eq(info_u64(it_c, "connected_clients"), 1);
    r = it_cmd(it_c, "GET %s", key);
    assert_val(r, disk_keys[1], 1, "after the kill");
    key_of(disk_keys[2], key);
    r = it_cmd(it_c, "GET %s", key);
    assert_val(r, disk_keys[2], 1, "after the disconnect");
    cr_assert_eq(info_u64(it_c, "offload_read_failures"), 0);
}

Test(offload_defer, client_killed_while_read_in_flight_epoll) {
    killed("epoll");
}

Test(offload_defer, client_killed_while_read_in_flight_uring) {
    killed("uring");
}

/* Reads one raw reply from fd and asserts it is key i's value of generation gen. */
static void raw_expect(int fd, int i, int gen) {
    size_t len;
    char *p = it_raw_read(fd, &len);
    assert_raw_val(p, len, i, gen);
    free(p);
}

/*
 * DEL and SET of a key whose read is in flight: the reader gets the value as of its GET (the
 * old one, whole), the writer's change holds afterwards, and no disk copy is left behind.
 */
static void overwritten(const char *backend) {
    start(backend, 2000);
    int k1 = disk_keys[3], k2 = disk_keys[4], k3 = disk_keys[5];
    char req[128], key[32];
    int a = it_raw_open(it_srv.port), b = it_raw_open(it_srv.port);
    it_raw_send(a, req, raw_get(req, sizeof(req), k1));
    it_raw_send(b, req, raw_get(req, sizeof(req), k1)); /* two readers of one key */
    wait_blocked(it_c, 2);
    key_of(k1, key);
    IT_INT(1, it_c, "DEL %s", key);
    raw_expect(a, k1, 1);
    raw_expect(b, k1, 1);
    IT_NIL(it_c, "GET %s", key);

    it_raw_send(a, req, raw_get(req, sizeof(req), k2));
    wait_blocked(it_c, 1);
    static char v2[VAL_MAX];
    size_t n2 = val_of(k2, 2, v2);
    key_of(k2, key);
    const char *argv[] = {"SET", key, v2};
    size_t lens[] = {3, strlen(key), n2};
    redisReply *r = it_cmdargv(it_c, 3, argv, lens);
    cr_assert(r->type == REDIS_REPLY_STATUS);
    raw_expect(a, k2, 1);
    r = it_cmd(it_c, "GET %s", key);
    assert_val(r, k2, 2, "the new value");

    /* A reader whose key is deleted and set again before its read ends. */
    it_raw_send(a, req, raw_get(req, sizeof(req), k3));
    wait_blocked(it_c, 1);
    key_of(k3, key);
    IT_INT(1, it_c, "DEL %s", key);
    IT_OK(it_c, "SET %s fresh", key);
    raw_expect(a, k3, 1);
    IT_STR("fresh", it_c, "GET %s", key);
    close(a);
    close(b);
    wait_blocked(it_c, 0);
    off_wait_queue(it_c);
    long long objs = info_u64(it_c, "offload_disk_objects"),
              keys = info_u64(it_c, "offloaded_keys");
    cr_assert_eq(objs, keys, "no disk copy outlives its record: %lld objects, %lld keys; %s", objs,
                 keys, it_cmd(it_c, "INFO offload")->str);
    cr_assert_eq(info_u64(it_c, "offload_read_failures"), 0);
}

Test(offload_defer, del_and_set_during_read_epoll) {
    overwritten("epoll");
}

Test(offload_defer, del_and_set_during_read_uring) {
    overwritten("uring");
}

/*
 * GET inside MULTI/EXEC reads synchronously: the EXEC reply holds every value in order (a read
 * deferred inside EXEC would have come after the array). Then a half-closed client: what it
 * sent before its EOF is answered, then the connection closes.
 */
static void exec_and_half_close(const char *backend) {
    start(backend, 300);
    char key[32], key2[32];
    key_of(disk_keys[6], key);
    key_of(mem_keys[2], key2);
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "GET %s", key);
    IT_STATUS("QUEUED", it_c, "GET %s", key2);
    IT_STATUS("QUEUED", it_c, "PING");
    redisReply *r = it_cmd(it_c, "EXEC");
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 3);
    assert_val(r->element[0], disk_keys[6], 1, "EXEC disk");
    assert_val(r->element[1], mem_keys[2], 1, "EXEC memory");
    cr_assert(r->element[2]->type == REDIS_REPLY_STATUS && !strcmp(r->element[2]->str, "PONG"));

    int a = it_raw_open(it_srv.port);
    char req[256];
    size_t n = raw_get(req, sizeof(req), disk_keys[7]);
    n += raw_get(req + n, sizeof(req) - n, disk_keys[8]);
    n += raw_get(req + n, sizeof(req) - n, mem_keys[3]);
    it_raw_send(a, req, n);
    cr_assert_eq(shutdown(a, SHUT_WR), 0);
    raw_expect(a, disk_keys[7], 1);
    raw_expect(a, disk_keys[8], 1);
    raw_expect(a, mem_keys[3], 1);
    char c;
    cr_assert_eq(recv(a, &c, 1, MSG_WAITALL), 0, "closed after the replies");
    close(a);
}

Test(offload_defer, exec_sync_and_half_close_epoll) {
    exec_and_half_close("epoll");
}

Test(offload_defer, exec_sync_and_half_close_uring) {
    exec_and_half_close("uring");
}

/* Asserts element e of an MGET reply is key i's value of generation 1. */
static void assert_elem(const redisReply *r, size_t e, int i) {
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements > e);
    assert_val(r->element[e], i, 1, "MGET");
}

/*
 * MGET of disk, memory, missing and wrong-type keys, pipelined with GET and PING: one deferral
 * for all of its disk values, every element in place; a DEL of one of its keys while its reads
 * are held does not change what it returns (the values as of the MGET).
 */
static void mget_mixed(const char *backend) {
    start(backend, 1500);
    IT_INT(2, it_c, "RPUSH alist x y");
    redisContext *a = it_connect(&it_srv);
    char d0[32], d1[32], d2[32], m0[32], m1[32], m2[32];
    key_of(disk_keys[10], d0);
    key_of(disk_keys[11], d1);
    key_of(disk_keys[12], d2);
    key_of(mem_keys[4], m0);
    key_of(mem_keys[5], m1);
    key_of(mem_keys[6], m2);
    redisAppendCommand(a, "MGET %s %s nosuchkey %s alist", d0, m0, d1);
    redisAppendCommand(a, "GET %s", d2);
    redisAppendCommand(a, "MGET %s %s", m1, m2);
    redisAppendCommand(a, "PING");
    int done = 0;
    while (!done)
        cr_assert_eq(redisBufferWrite(a, &done), REDIS_OK);
    wait_blocked(it_c, 1);
    IT_INT(1, it_c, "DEL %s", d0);
    redisReply *r = NULL;
    cr_assert_eq(redisGetReply(a, (void **)&r), REDIS_OK);
    cr_assert_eq(r->elements, 5);
    assert_elem(r, 0, disk_keys[10]);
    assert_elem(r, 1, mem_keys[4]);
    cr_assert_eq(r->element[2]->type, REDIS_REPLY_NIL);
    assert_elem(r, 3, disk_keys[11]);
    cr_assert_eq(r->element[4]->type, REDIS_REPLY_NIL, "MGET of a list is nil");
    freeReplyObject(r);
    cr_assert_eq(redisGetReply(a, (void **)&r), REDIS_OK);
    assert_val(r, disk_keys[12], 1, "GET after MGET");
    freeReplyObject(r);
    cr_assert_eq(redisGetReply(a, (void **)&r), REDIS_OK);
    cr_assert_eq(r->elements, 2);
    assert_elem(r, 0, mem_keys[5]);
    assert_elem(r, 1, mem_keys[6]);
    freeReplyObject(r);
    cr_assert_eq(redisGetReply(a, (void **)&r), REDIS_OK);
    cr_assert(r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0);
    freeReplyObject(r);
    it_close(a);
    IT_NIL(it_c, "GET %s", d0);
    wait_blocked(it_c, 0);
    off_wait_queue(it_c);
    cr_assert_eq(info_u64(it_c, "offload_disk_objects"), info_u64(it_c, "offloaded_keys"));
    cr_assert_eq(info_u64(it_c, "offload_read_failures"), 0);
}

Test(offload_defer, mget_mixed_keys_epoll) {
    mget_mixed("epoll");
}

Test(offload_defer, mget_mixed_keys_uring) {
    mget_mixed("uring");
}

/* SIGTERM while a read is in flight: the server waits for it, drops it and exits cleanly. */
static void shutdown_in_flight(const char *backend) {
    start(backend, 1500);
    int a = it_raw_open(it_srv.port);
    char req[128];
    it_raw_send(a, req, raw_get(req, sizeof(req), disk_keys[9]));
    wait_blocked(it_c, 1);
    it_close(it_c);
    it_c = NULL;
    cr_assert_eq(kill(it_srv.pid, SIGTERM), 0);
    int st = 0;
    cr_assert_eq(waitpid(it_srv.pid, &st, 0), it_srv.pid);
    it_srv.pid = 0;
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", st);
    close(a);
    it_server_stop(&it_srv); /* the sanitizer scan of its log */
}

Test(offload_defer, shutdown_with_read_in_flight_epoll) {
    shutdown_in_flight("epoll");
}

Test(offload_defer, shutdown_with_read_in_flight_uring) {
    shutdown_in_flight("uring");
}

/* Sends cmd (printf-style) on a, waits until it is held as a deferral, and returns a. */
static void send_held(redisContext *a, const char *fmt, const char *key, const char *arg) {
    redisAppendCommand(a, fmt, key, arg);
    int done = 0;
    while (!done)
        cr_assert_eq(redisBufferWrite(a, &done), REDIS_OK);
    wait_blocked(it_c, 1);
}

static redisReply *reply_of(redisContext *a) {
    redisReply *r = NULL;
    cr_assert_eq(redisGetReply(a, (void **)&r), REDIS_OK, "%s", a->errstr);
    return r;
}

/*
 * GETDEL, GETEX, SET ... GET and GETSET of offloaded values read off the loop, as GET: each is
 * held (blocked_clients 1) while others are served; its change to the key is made when it runs
 * (seen by others before its reply), and its reply is the value as of that moment. Inside
 * MULTI/EXEC they read synchronously. No disk copy outlives its record.
 */
static void value_and_change(const char *backend) {
    start(backend, 1000);
    redisContext *a = it_connect(&it_srv);
    char d[6][32], m[32];
    for (int i = 0; i < 6; i++)
        key_of(disk_keys[i], d[i]);
    key_of(mem_keys[0], m);

    send_held(a, "GETDEL %s", d[0], NULL);
    IT_INT(0, it_c, "EXISTS %s", d[0]); /* deleted while its read is held */
    assert_val(it_cmd(it_c, "GET %s", m), mem_keys[0], 1, "others served");
    redisReply *r = reply_of(a);
    assert_val(r, disk_keys[0], 1, "GETDEL");
    freeReplyObject(r);

    send_held(a, "GETEX %s EX %s", d[1], "1000");
    cr_assert_gt(it_cmd(it_c, "TTL %s", d[1])->integer, 900, "the TTL is set while held");
    r = reply_of(a);
    assert_val(r, disk_keys[1], 1, "GETEX");
    freeReplyObject(r);
    assert_val(it_cmd(it_c, "GET %s", d[1]), disk_keys[1], 1, "after GETEX");

    send_held(a, "SET %s %s GET", d[2], "new2");
    IT_STR("new2", it_c, "GET %s", d[2]);
    r = reply_of(a);
    assert_val(r, disk_keys[2], 1, "SET ... GET");
    freeReplyObject(r);

    send_held(a, "GETSET %s %s", d[3], "new3");
    IT_STR("new3", it_c, "GET %s", d[3]);
    r = reply_of(a);
    assert_val(r, disk_keys[3], 1, "GETSET");
    freeReplyObject(r);

    /* SET ... NX GET of an existing key: the old value, the key unchanged. */
    send_held(a, "SET %s %s NX GET", d[4], "nope");
    r = reply_of(a);
    assert_val(r, disk_keys[4], 1, "SET NX GET");
    freeReplyObject(r);
    assert_val(it_cmd(it_c, "GET %s", d[4]), disk_keys[4], 1, "NX left it");

    /* Inside MULTI/EXEC: synchronous, in order. */
    IT_OK(a, "MULTI");
    IT_STATUS("QUEUED", a, "GETDEL %s", d[5]);
    IT_STATUS("QUEUED", a, "EXISTS %s", d[5]);
    r = it_cmd(a, "EXEC");
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    assert_val(r->element[0], disk_keys[5], 1, "EXEC GETDEL");
    cr_assert_eq(r->element[1]->integer, 0);
    it_close(a);
    wait_blocked(it_c, 0);
    /* d[1] has a TTL: should a later eviction have sent it to disk again, its expiry is a disk
     * object of its own; without it the disk holds one object per offloaded key. */
    IT_INT(1, it_c, "PERSIST %s", d[1]);
    off_wait_queue(it_c);
    long long objs = info_u64(it_c, "offload_disk_objects"),
              keys = info_u64(it_c, "offloaded_keys");
    cr_assert_eq(objs, keys, "no disk copy outlives its record: %lld objects, %lld keys; %s", objs,
                 keys, it_cmd(it_c, "INFO offload")->str);
    cr_assert_eq(info_u64(it_c, "offload_read_failures"), 0);
}

Test(offload_defer, getdel_getex_set_get_off_the_loop_epoll) {
    value_and_change("epoll");
}

Test(offload_defer, getdel_getex_set_get_off_the_loop_uring) {
    value_and_change("uring");
}
