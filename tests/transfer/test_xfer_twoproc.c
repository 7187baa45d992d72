/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two-process transfer tests for the tcp and shm transports (memfd mapping and cross-memory
 * attach): data integrity over sizes from 1 B to 64 MiB, batches of 1 to 1024, two submitting
 * threads; out-of-bounds and unregistered requests refused (client side and, for tcp, by the
 * target itself); a peer killed or stopped mid-batch fails its tasks within the timeout.
 */
#include "common/fmacros.h"

#include "tests/transfer/xfer_test_util.h"
#include "transfer/core/xfer_wire.h"
#include "transfer/xfer.h"
#include "transfer/xfer_int.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define REMOTE_LEN (72ull << 20)
#define SEED       12345u

struct ctx {
    struct xt_target t;
    struct xfer_engine *eng;
    struct xfer_segment *seg;
    uint8_t *src, *dst; /* local, REMOTE_LEN each */
};

static void *map(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    return p;
}

/* Starts a target and an initiator engine with proto installed with args (may be NULL), and
 * opens the target's segment. */
static void setup_args(struct ctx *c, const char *proto, const char *args, int memfd,
                       uint32_t timeout_ms) {
    memset(c, 0, sizeof(*c));
    cr_assert_eq(xt_spawn_target(proto, NULL, REMOTE_LEN, memfd, SEED, &c->t), 0);
    struct xfer_engine_opts eo = {.listen = "", .timeout_ms = timeout_ms};
    cr_assert_eq(xfer_engine_create(&eo, &c->eng), 0);
    cr_assert_eq(xfer_engine_install(c->eng, proto, args), 0);
    int rc = xfer_segment_open_addr(c->eng, c->t.addr, &c->seg);
    cr_assert_eq(rc, 0, "open %s: %s", c->t.addr, cm_strerror(rc));
    cr_assert_str_eq(xfer_segment_transport(c->seg), proto);
    cr_assert_str_eq(xfer_segment_peer_name(c->seg), "xt-target");
    uint64_t a, l;
    cr_assert_eq(xfer_segment_buffer(c->seg, 0, &a, &l), 0);
    cr_assert_eq(a, c->t.remote_addr);
    cr_assert_eq(l, REMOTE_LEN);
    c->src = map(REMOTE_LEN);
    c->dst = map(REMOTE_LEN);
}

static void setup(struct ctx *c, const char *proto, int memfd, uint32_t timeout_ms) {
    setup_args(c, proto, NULL, memfd, timeout_ms);
}

static void teardown(struct ctx *c, int expect_exit) {
    xfer_segment_close(c->seg);
    xfer_engine_destroy(c->eng);
    munmap(c->src, REMOTE_LEN);
    munmap(c->dst, REMOTE_LEN);
    int st = xt_stop_target(&c->t);
    if (expect_exit >= 0)
        cr_assert_eq(st, expect_exit, "target exit status %d", st);
}

/* Runs one batch of n requests and asserts every task completed. */
static void run_ok(struct ctx *c, struct xfer_request *r, size_t n) {
    struct xfer_batch *b;
    cr_assert_eq(xfer_batch_alloc(c->eng, n, &b), 0);
    cr_assert_eq(xfer_batch_submit(b, r, n, NULL), 0);
    size_t nf = 0;
    int rc = xfer_batch_wait(b, 30000, NULL, 0, &nf);
    cr_assert_eq(rc, 0, "batch of %zu: %s, %zu failed", n, cm_strerror(rc), nf);
    for (size_t i = 0; i < n; i++) {
        struct xfer_task_status st;
        cr_assert_eq(xfer_batch_status(b, i, &st), 0);
        cr_assert_eq(st.status, XFER_STATUS_COMPLETED);
        cr_assert_eq(st.transferred, r[i].length);
    }
    xfer_batch_free(b);
}

static struct xfer_request req(struct ctx *c, int op, void *local, uint64_t roff, uint64_t len) {
    return (struct xfer_request){.op = op,
                                 .local = local,
                                 .seg = c->seg,
                                 .remote_addr = c->t.remote_addr + roff,
                                 .length = len};
}

/* Sizes 1 B .. 64 MiB, single requests: the initial remote pattern reads back, then
 * write + read round trips at random offsets compare equal. */
static void integrity_sizes(struct ctx *c) {
    /* The target filled its buffer with xt_fill(SEED): read 1 MiB and compare. */
    uint8_t *want = map(REMOTE_LEN);
    xt_fill(want, REMOTE_LEN, SEED);
    struct xfer_request r = req(c, XFER_OP_READ, c->dst, 0, 1 << 20);
    run_ok(c, &r, 1);
    cr_assert_eq(memcmp(c->dst, want, 1 << 20), 0, "initial remote pattern differs");
    munmap(want, REMOTE_LEN);

    xt_fill(c->src, REMOTE_LEN, 777);
    static const uint64_t sizes[] = {1, 7, 4096, 65537, (1 << 20) + 3, 64ull << 20};
    uint32_t s = 99;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint64_t len = sizes[i];
        uint64_t roff = xt_rand(&s) % (REMOTE_LEN - len + 1);
        uint64_t loff = xt_rand(&s) % (REMOTE_LEN - len + 1);
        r = req(c, XFER_OP_WRITE, c->src + loff, roff, len);
        run_ok(c, &r, 1);
        memset(c->dst, 0, len);
        r = req(c, XFER_OP_READ, c->dst, roff, len);
        run_ok(c, &r, 1);
        cr_assert_eq(memcmp(c->dst, c->src + loff, len), 0, "size %llu differs",
                     (unsigned long long)len);
    }
}

/* Batches of 1 .. 1024 random-size requests on disjoint remote ranges. */
static void integrity_batches(struct ctx *c) {
    static const size_t counts[] = {1, 3, 64, 1024};
    struct xfer_request *r = cm_calloc(1024, sizeof(*r));
    uint32_t s = 4242;
    xt_fill(c->src, REMOTE_LEN, 31337);
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t n = counts[k];
        uint64_t stride = REMOTE_LEN / 1024 / 2; /* 36 KiB slots */
        for (size_t i = 0; i < n; i++) {
            uint64_t len = 1 + xt_rand(&s) % stride;
            r[i] = req(c, XFER_OP_WRITE, c->src + i * stride, i * stride * 2, len);
        }
        run_ok(c, r, n);
        memset(c->dst, 0, REMOTE_LEN);
        for (size_t i = 0; i < n; i++) {
            r[i].op = XFER_OP_READ;
            r[i].local = c->dst + i * stride;
        }
        run_ok(c, r, n);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(memcmp(c->dst + i * stride, c->src + i * stride, r[i].length), 0,
                         "batch %zu task %zu differs", n, i);
    }
    cm_free(r);
}

struct thr_arg {
    struct ctx *c;
    struct xfer_batch *b;
    int half;
};

/* Submits 256 writes of 16 KiB into the shared batch, from its half of the buffers. */
static void *submitter(void *p) {
    struct thr_arg *a = p;
    uint64_t base = (uint64_t)a->half * (REMOTE_LEN / 2);
    for (int k = 0; k < 4; k++) {
        struct xfer_request r[64];
        for (int i = 0; i < 64; i++) {
            uint64_t off = base + (uint64_t)(k * 64 + i) * 16384;
            r[i] = req(a->c, XFER_OP_WRITE, a->c->src + off, off, 16384);
        }
        if (xfer_batch_submit(a->b, r, 64, NULL) != 0)
            return (void *)1;
    }
    return NULL;
}

static void two_threads(struct ctx *c) {
    xt_fill(c->src, REMOTE_LEN, 2024);
    struct xfer_batch *b;
    cr_assert_eq(xfer_batch_alloc(c->eng, 512, &b), 0);
    pthread_t th[2];
    struct thr_arg a[2] = {{c, b, 0}, {c, b, 1}};
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, submitter, &a[i]);
    for (int i = 0; i < 2; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        cr_assert_null(rv);
    }
    cr_assert_eq(xfer_batch_count(b), 512);
    cr_assert_eq(xfer_batch_wait(b, 30000, NULL, 0, NULL), 0);
    xfer_batch_free(b);
    /* Read both halves back in one batch and compare. */
    struct xfer_request r[2] = {
        req(c, XFER_OP_READ, c->dst, 0, 256 * 16384),
        req(c, XFER_OP_READ, c->dst + REMOTE_LEN / 2, REMOTE_LEN / 2, 256 * 16384)};
    run_ok(c, r, 2);
    cr_assert_eq(memcmp(c->dst, c->src, 256 * 16384), 0);
    cr_assert_eq(memcmp(c->dst + REMOTE_LEN / 2, c->src + REMOTE_LEN / 2, 256 * 16384), 0);
}

/* Out-of-bounds and unregistered requests become INVALID; the batch fails once all are done. */
static void refused(struct ctx *c) {
    struct xfer_request r[5] = {
        req(c, XFER_OP_READ, c->dst, 0, 4096),                  /* fine */
        req(c, XFER_OP_READ, c->dst, REMOTE_LEN - 10, 11),      /* crosses the end */
        req(c, XFER_OP_WRITE, c->src, REMOTE_LEN, 1),           /* past the end */
        {XFER_OP_WRITE, c->src, c->seg, c->t.private_addr, 16}, /* not remote-accessible */
        {XFER_OP_READ, c->dst, NULL, c->t.remote_addr, 16},     /* no segment */
    };
    struct xfer_batch *b;
    cr_assert_eq(xfer_batch_alloc(c->eng, 5, &b), 0);
    cr_assert_eq(xfer_batch_submit(b, r, 5, NULL), 0);
    size_t failed[8], nf = 0;
    cr_assert_eq(xfer_batch_wait(b, 10000, failed, 8, &nf), -CM_ETRANSFER_FAIL);
    cr_assert_eq(nf, 4);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(failed[i], i + 1);
    struct xfer_task_status st;
    xfer_batch_status(b, 0, &st);
    cr_assert_eq(st.status, XFER_STATUS_COMPLETED);
    for (size_t i = 1; i < 5; i++) {
        xfer_batch_status(b, i, &st);
        cr_assert_eq(st.status, XFER_STATUS_INVALID, "task %zu: %s", i,
                     xfer_status_name(st.status));
        cr_assert_eq(st.error, -CM_EINVALID_PARAMS);
    }
    cr_assert_eq(xfer_batch_status(b, 5, &st), -EINVAL);
    struct xfer_request more = r[0];
    cr_assert_eq(xfer_batch_submit(b, &more, 1, NULL), -ENOSPC);
    xfer_batch_free(b);
}

/* Sends one raw request to the tcp target and returns the reply status. */
static int raw_request(const char *addr, int op, uint64_t raddr, uint64_t len, int send_payload) {
    uint64_t dl = cm_mono_ns() + 5000000000ull;
    int fd = xfer__sock_connect(addr, dl);
    cr_assert_geq(fd, 0);
    struct xfer_wire_hdr h = {.op = (uint8_t)op, .id = 5, .addr = raddr, .len = len};
    uint8_t hb[XFER_WIRE_HDR_LEN];
    xfer_wire_encode(&h, hb);
    uint8_t *payload = cm_calloc(1, len ? len : 1);
    memset(payload, 0xee, len);
    struct iovec v[2] = {{hb, sizeof(hb)}, {payload, len}};
    cr_assert_eq(xfer__sock_writev(fd, v, send_payload ? 2 : 1, dl), 0);
    struct iovec rv = {hb, sizeof(hb)};
    cr_assert_eq(xfer__sock_readv(fd, &rv, 1, dl), 0);
    struct xfer_wire_hdr rh;
    cr_assert_eq(xfer_wire_decode(hb, sizeof(hb), &rh), XFER_WIRE_HDR_LEN);
    cr_assert_eq(rh.id, 5);
    cr_assert(rh.flags & XFER_WIRE_F_REPLY);
    if (rh.status == 0 && op == XFER_WIRE_TCP_READ) {
        struct iovec d = {payload, len};
        cr_assert_eq(xfer__sock_readv(fd, &d, 1, dl), 0);
    }
    close(fd);
    cm_free(payload);
    return rh.status;
}

/* The target itself refuses requests outside its remote-accessible registrations. */
static void tcp_target_refuses(struct ctx *c) {
    uint64_t ra = c->t.remote_addr, pa = c->t.private_addr;
    cr_assert_eq(raw_request(c->t.addr, XFER_WIRE_TCP_WRITE, pa, 64, 1), -CM_EINVALID_PARAMS);
    cr_assert_eq(raw_request(c->t.addr, XFER_WIRE_TCP_READ, pa, 64, 0), -CM_EINVALID_PARAMS);
    cr_assert_eq(raw_request(c->t.addr, XFER_WIRE_TCP_READ, ra + REMOTE_LEN - 8, 9, 0),
                 -CM_EINVALID_PARAMS);
    cr_assert_eq(raw_request(c->t.addr, XFER_WIRE_TCP_WRITE, ra - 1, 2, 1), -CM_EINVALID_PARAMS);
    cr_assert_eq(raw_request(c->t.addr, XFER_WIRE_TCP_WRITE, UINT64_MAX - 3, 8, 1),
                 -CM_EINVALID_PARAMS);
    cr_assert_eq(raw_request(c->t.addr, XFER_WIRE_TCP_READ, 0x1000, 4096, 0), -CM_EINVALID_PARAMS);
    /* A valid raw request is served. */
    cr_assert_eq(raw_request(c->t.addr, XFER_WIRE_TCP_READ, ra, 4096, 0), 0);
    /* The engine listener answers an opcode nobody claimed with NOT_SUPPORTED. */
    cr_assert_eq(raw_request(c->t.addr, XFER_WIRE_RDMA_FIRST, ra, 0, 0), -CM_ENOT_SUPPORTED);
}

/*
 * A pipelined run of raw requests on one connection, sent with one writev: pairs of a WRITE and
 * a READ of the same range, sizes from 1 B to 3 MiB (copied through the target's buffers and
 * straight), with refused ones in between (a READ past the end, a WRITE into private memory
 * whose payload must be drained). The target answers in order with the right ids, statuses and
 * bytes, sends nothing else, and keeps serving.
 */
static void tcp_target_pipelined(struct ctx *c) {
    enum { N = 24 };
    static const uint64_t lens[] = {1, 40, 4096, 4096, 16 << 10, (16 << 10) + 1, 70000, 3 << 20};
    const uint64_t slot = REMOTE_LEN / (N / 2), ra = c->t.remote_addr;
    uint64_t dl = cm_mono_ns() + 20000000000ull;
    xt_fill(c->src, REMOTE_LEN, 4711);
    int fd = xfer__sock_connect(c->t.addr, dl);
    cr_assert_geq(fd, 0);
    uint8_t hb[N][XFER_WIRE_HDR_LEN];
    struct iovec v[2 * N];
    struct xfer_wire_hdr h[N];
    int k = 0;
    for (int i = 0; i < N; i++) {
        int pair = i / 2, write = i % 2 == 0, bad = i % 5 == 3;
        uint64_t at = bad ? (write ? c->t.private_addr : ra + REMOTE_LEN) : ra + pair * slot;
        h[i] = (struct xfer_wire_hdr){.op = write ? XFER_WIRE_TCP_WRITE : XFER_WIRE_TCP_READ,
                                      .id = 100 + (uint64_t)i,
                                      .addr = at,
                                      .len = lens[pair % 8]};
        xfer_wire_encode(&h[i], hb[i]);
        v[k++] = (struct iovec){hb[i], XFER_WIRE_HDR_LEN};
        if (write)
            v[k++] = (struct iovec){c->src + pair * slot, h[i].len};
    }
    cr_assert_eq(xfer__sock_writev(fd, v, k, dl), 0);
    for (int i = 0; i < N; i++) {
        int pair = i / 2, write = i % 2 == 0, bad = i % 5 == 3;
        uint8_t rb[XFER_WIRE_HDR_LEN];
        struct iovec rv = {rb, sizeof(rb)};
        cr_assert_eq(xfer__sock_readv(fd, &rv, 1, dl), 0);
        struct xfer_wire_hdr rh;
        cr_assert_eq(xfer_wire_decode(rb, sizeof(rb), &rh), XFER_WIRE_HDR_LEN);
        cr_assert(rh.flags & XFER_WIRE_F_REPLY);
        cr_assert_eq(rh.id, 100 + (uint64_t)i, "reply %d out of order", i);
        cr_assert_eq(rh.status, bad ? -CM_EINVALID_PARAMS : 0, "request %d: status %d", i,
                     rh.status);
        cr_assert_eq(rh.len, !bad && !write ? h[i].len : 0, "request %d: len", i);
        if (rh.len == 0)
            continue;
        struct iovec d = {c->dst, rh.len};
        cr_assert_eq(xfer__sock_readv(fd, &d, 1, dl), 0);
        if ((i - 1) % 5 != 3) /* the pair's WRITE was served */
            cr_assert_eq(memcmp(c->dst, c->src + pair * slot, rh.len), 0, "READ %d differs", i);
    }
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    cr_assert_eq(poll(&pf, 1, 100), 0, "bytes after the last reply");
    close(fd);
    cr_assert_eq(raw_request(c->t.addr, XFER_WIRE_TCP_READ, ra, 4096, 0), 0);
}

Test(xfer_twoproc, tcp_integrity, .timeout = 60) {
    struct ctx c;
    setup(&c, "tcp", 0, 20000);
    integrity_sizes(&c);
    integrity_batches(&c);
    two_threads(&c);
    refused(&c);
    tcp_target_refuses(&c);
    tcp_target_pipelined(&c);
    teardown(&c, 0); /* 0: the target's private buffer was never written */
}

Test(xfer_twoproc, shm_memfd_integrity, .timeout = 60) {
    struct ctx c;
    setup(&c, "shm", 1, 20000);
    integrity_sizes(&c);
    integrity_batches(&c);
    two_threads(&c);
    refused(&c);
    teardown(&c, 0);
}

Test(xfer_twoproc, shm_cma_integrity, .timeout = 60) {
    struct ctx c;
    setup(&c, "shm", 0, 20000);
    integrity_sizes(&c);
    integrity_batches(&c);
    refused(&c);
    teardown(&c, 0);
}

/* Runs a batch of n writes of len bytes and returns the wait result and elapsed ms. */
static int run_batch(struct ctx *c, size_t n, uint64_t len, int kill_after_ms, int sig,
                     uint64_t *ms, size_t *nf) {
    struct xfer_request *r = cm_calloc(n, sizeof(*r));
    for (size_t i = 0; i < n; i++)
        r[i] = req(c, XFER_OP_WRITE, c->src + (i * len) % (REMOTE_LEN - len),
                   (i * len) % (REMOTE_LEN - len), len);
    struct xfer_batch *b;
    cr_assert_eq(xfer_batch_alloc(c->eng, n, &b), 0);
    uint64_t t0 = cm_mono_ms();
    cr_assert_eq(xfer_batch_submit(b, r, n, NULL), 0);
    if (kill_after_ms >= 0) {
        cm_sleep_ms((uint64_t)kill_after_ms);
        kill(c->t.pid, sig);
    }
    int rc = xfer_batch_wait(b, -1, NULL, 0, nf);
    *ms = cm_mono_ms() - t0;
    xfer_batch_free(b);
    cm_free(r);
    return rc;
}

Test(xfer_twoproc, tcp_peer_killed_mid_batch, .timeout = 30) {
    struct ctx c;
    setup(&c, "tcp", 0, 8000);
    /* Stop the peer so the batch is certainly in flight, then kill it. */
    kill(c.t.pid, SIGSTOP);
    uint64_t ms;
    size_t nf = 0;
    int rc = run_batch(&c, 256, 1 << 20, 300, SIGKILL, &ms, &nf);
    cr_assert_eq(rc, -CM_ETRANSFER_FAIL, "rc %s", cm_strerror(rc));
    cr_assert_gt(nf, 0);
    cr_assert_lt(ms, 8000, "failing took %llu ms", (unsigned long long)ms);
    /* New requests to the dead peer fail fast too. */
    rc = run_batch(&c, 4, 4096, -1, 0, &ms, &nf);
    cr_assert_eq(rc, -CM_ETRANSFER_FAIL);
    cr_assert_eq(nf, 4);
    cr_assert_lt(ms, 2000);
    teardown(&c, 128 + SIGKILL);
}

Test(xfer_twoproc, tcp_stalled_peer_times_out_from_submission, .timeout = 30) {
    struct ctx c;
    setup(&c, "tcp", 0, 1000); /* 1 s transfer timeout */
    kill(c.t.pid, SIGSTOP);
    struct xfer_request r[4];
    for (int i = 0; i < 4; i++)
        r[i] = req(&c, i % 2 ? XFER_OP_WRITE : XFER_OP_READ, c.dst + i * 65536, i * 65536, 65536);
    struct xfer_batch *b;
    cr_assert_eq(xfer_batch_alloc(c.eng, 4, &b), 0);
    uint64_t t0 = cm_mono_ms();
    cr_assert_eq(xfer_batch_submit(b, r, 4, NULL), 0);
    cm_sleep_ms(1300);
    /* The deadline counts from submission: a zero-length wait already sees every task done. */
    size_t nf = 0;
    uint64_t w0 = cm_mono_ms();
    int rc = xfer_batch_wait(b, 0, NULL, 0, &nf);
    cr_assert_eq(rc, -CM_ETRANSFER_FAIL, "rc %s", cm_strerror(rc));
    cr_assert_eq(nf, 4);
    cr_assert_lt(cm_mono_ms() - w0, 200);
    for (int i = 0; i < 4; i++) {
        struct xfer_task_status st;
        xfer_batch_status(b, (size_t)i, &st);
        cr_assert_eq(st.status, XFER_STATUS_TIMEOUT, "task %d: %s", i, xfer_status_name(st.status));
    }
    xfer_batch_free(b); /* workers still hold tasks: freed when they give up */
    cr_assert_lt(cm_mono_ms() - t0, 5000);
    kill(c.t.pid, SIGKILL);
    teardown(&c, 128 + SIGKILL);
}

Test(xfer_twoproc, tcp_pooled_connection_closed_by_idle_target, .timeout = 30) {
    setenv("MC_TCP_IDLE_TIMEOUT", "1", 1); /* inherited by the forked target */
    struct ctx c;
    setup(&c, "tcp", 0, 5000);
    unsetenv("MC_TCP_IDLE_TIMEOUT");
    struct xfer_request r = req(&c, XFER_OP_READ, c.dst, 0, 4096);
    run_ok(&c, &r, 1);
    cm_sleep_ms(1600); /* the target closes the idle pooled connection */
    run_ok(&c, &r, 1); /* the stale connection is noticed and replaced, not failed */
    teardown(&c, 0);
}

/*
 * A stalled peer holds at most peer_workers of the tcp workers, so another peer keeps being
 * served. No clock is read: n reads of len bytes go to the stopped target first, so it takes
 * its share of the 8 workers (the cap, 4) before the healthy peer's first read is picked (the
 * queue is served in order); 16 rounds of 8 reads from the healthy target must then complete,
 * with the right bytes, while every read of the stalled batch is still pending (its 30 s
 * deadline is far away). Without the cap the healthy reads would wait for that deadline. Then
 * the stalled target is killed and every one of its reads fails.
 */
static void stalled_vs_healthy(const char *args, size_t n, uint64_t len) {
    struct ctx a;
    setup_args(&a, "tcp", args, 0, 30000);
    struct xt_target tb;
    cr_assert_eq(xt_spawn_target("tcp", NULL, 1 << 20, 0, 5, &tb), 0);
    struct xfer_segment *sb;
    int rc = xfer_segment_open_addr(a.eng, tb.addr, &sb);
    cr_assert_eq(rc, 0, "open %s: %s", tb.addr, xfer_last_error());
    uint8_t *want = map(1 << 20);
    xt_fill(want, 1 << 20, 5);
    kill(a.t.pid, SIGSTOP);
    struct xfer_request *r = cm_calloc(n, sizeof(*r));
    for (size_t i = 0; i < n; i++)
        r[i] = req(&a, XFER_OP_READ, a.dst + i * len, i * len, len);
    struct xfer_batch *ba, *bb;
    cr_assert_eq(xfer_batch_alloc(a.eng, n, &ba), 0);
    cr_assert_eq(xfer_batch_submit(ba, r, n, NULL), 0);
    uint8_t *got = a.dst + (REMOTE_LEN - (1 << 20));
    cr_assert_eq(xfer_batch_alloc(a.eng, 8, &bb), 0);
    for (int round = 0; round < 16; round++) {
        struct xfer_request rb[8];
        for (int i = 0; i < 8; i++) {
            uint64_t off = (uint64_t)(round * 8 + i) * 8192;
            rb[i] = (struct xfer_request){XFER_OP_READ, got + off, sb, tb.remote_addr + off, 8192};
        }
        cr_assert_eq(xfer_batch_submit(bb, rb, 8, NULL), 0);
        size_t nf = 0;
        rc = xfer_batch_wait(bb, -1, NULL, 0, &nf);
        cr_assert_eq(rc, 0, "round %d: %s, %zu failed", round, cm_strerror(rc), nf);
        cr_assert_eq(xfer_batch_reset(bb), 0);
        cr_assert_eq(xfer_batch_wait(ba, 0, NULL, 0, NULL), -ETIMEDOUT, "round %d", round);
    }
    cr_assert_eq(memcmp(got, want, 1 << 20), 0, "healthy peer's bytes differ");
    for (size_t i = 0; i < n; i++) {
        struct xfer_task_status st;
        cr_assert_eq(xfer_batch_status(ba, i, &st), 0);
        cr_assert_eq(st.status, XFER_STATUS_PENDING, "stalled task %zu: %s", i,
                     xfer_status_name(st.status));
    }
    kill(a.t.pid, SIGKILL);
    size_t nf = 0;
    cr_assert_eq(xfer_batch_wait(ba, -1, NULL, 0, &nf), -CM_ETRANSFER_FAIL);
    cr_assert_eq(nf, n);
    xfer_batch_free(ba);
    xfer_batch_free(bb);
    cm_free(r);
    munmap(want, 1 << 20);
    xfer_segment_close(sb);
    cr_assert_eq(xt_stop_target(&tb), 0);
    teardown(&a, 128 + SIGKILL);
}

/* 64 reads of 4 KiB, each its own group (group_bytes=4096): the cap itself is exercised. With
 * peer_workers=8 this fails (the healthy reads are starved to their deadline). */
Test(xfer_twoproc, tcp_stalled_peer_does_not_starve_others, .timeout = 90) {
    stalled_vs_healthy("workers=8,group_bytes=4096", 64, 4096);
}

/* 12000 reads of 64 B with the default groups of up to 256: 4 workers hold 1024 of them, the
 * other 10976 stay queued ahead of the healthy peer's reads, which must still be picked. */
Test(xfer_twoproc, tcp_many_stalled_tasks_do_not_starve_others, .timeout = 90) {
    stalled_vs_healthy("workers=8", 12000, 64);
}

Test(xfer_twoproc, shm_peer_killed, .timeout = 30) {
    struct ctx c;
    setup(&c, "shm", 1, 5000);
    kill(c.t.pid, SIGKILL);
    cr_assert_eq(xt_stop_target(&c.t), 128 + SIGKILL);
    uint64_t ms;
    size_t nf = 0;
    int rc = run_batch(&c, 8, 65536, -1, 0, &ms, &nf);
    cr_assert_eq(rc, -CM_ETRANSFER_FAIL);
    cr_assert_eq(nf, 8);
    cr_assert_lt(ms, 2000);
    xfer_segment_close(c.seg);
    xfer_engine_destroy(c.eng);
    munmap(c.src, REMOTE_LEN);
    munmap(c.dst, REMOTE_LEN);
}

Test(xfer_twoproc, fetch_descriptor_p2p, .timeout = 30) {
    struct xt_target t;
    cr_assert_eq(xt_spawn_target("tcp", NULL, 1 << 20, 0, 1, &t), 0);
    void *d;
    size_t dl;
    cr_assert_eq(xfer_fetch_desc(t.addr, 5000, &d, &dl), 0);
    struct xfer_desc *desc;
    cr_assert_eq(xfer_desc_decode(d, dl, &desc), 0);
    cr_assert_str_eq(desc->name, "xt-target");
    cr_assert_str_eq(desc->listen, t.addr);
    cr_assert_eq(desc->pid, (uint32_t)t.pid);
    cr_assert_eq(desc->n_buf, 1); /* the private buffer is not listed */
    cr_assert_eq(desc->buf[0].addr, t.remote_addr);
    cr_assert_geq(xfer_desc_find_tp(desc, "tcp"), 0);
    xfer_desc_free(desc);
    cm_free(d);
    cr_assert_eq(xt_stop_target(&t), 0);
    /* Nobody listens there any more. */
    cr_assert_lt(xfer_fetch_desc(t.addr, 2000, &d, &dl), 0);
}

/* These tests fork target processes and measure timing: run them one at a time. */
int main(int argc, char *argv[]) {
    xt_target_main(argc, argv); /* returns unless this process was started as a target */
    struct criterion_test_set *tests = criterion_initialize();
    criterion_options.jobs = 1;
    int result = 0;
    if (criterion_handle_args(argc, argv, true))
        result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return result;
}
