/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-process transfer engine tests: registration rules, descriptor export, the local (same
 * engine) path, transport registry, batch semantics, and the fault transport scenarios (submit
 * failure rate, fail after N submits, COMPLETED->FAILED corruption, submit delay, install
 * failure) over tcp between two engines; registration rollback, the handshake timeout of
 * segment_open_addr against a port that never answers, deferred accept (listen_later), IPv6
 * listener and segment addresses; status polled while another thread submits.
 */
#include "common/fmacros.h"

#include "transfer/xfer.h"
#include "transfer/xfer_int.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF_LEN (4u << 20)

static struct xfer_engine *mk_engine(const char *listen) {
    struct xfer_engine_opts o = {.listen = listen, .timeout_ms = 5000};
    struct xfer_engine *e;
    cr_assert_eq(xfer_engine_create(&o, &e), 0);
    return e;
}

Test(xfer_engine, registration_rules) {
    struct xfer_engine *e = mk_engine("");
    char *buf = cm_malloc(BUF_LEN);
    cr_assert_eq(xfer_engine_register(e, buf, 4096, "cpu:0", XFER_REG_REMOTE), 0);
    cr_assert_eq(xfer_engine_register(e, buf + 4096, 4096, NULL, 0), 0);
    cr_assert_eq(xfer_engine_register(e, buf + 100, 10, NULL, 0), -EEXIST);
    cr_assert_eq(xfer_engine_register(e, buf + 8000, 1000, NULL, 0), -EEXIST);
    cr_assert_eq(xfer_engine_register(e, buf, 0, NULL, 0), -EINVAL);
    cr_assert_eq(xfer_engine_register(e, NULL, 10, NULL, 0), -EINVAL);
    cr_assert_eq(xfer_engine_register(e, buf + 8192, 10, NULL, 0x80), -EINVAL);
    cr_assert_eq(xfer_engine_unregister(e, buf + 1), -ENOENT);
    cr_assert_not_null(xfer__mr_find(e, buf + 10, 100));
    cr_assert_null(xfer__mr_find(e, buf + 8000, 1000));
    struct xfer_mr *mr = NULL;
    cr_assert_eq(xfer__mr_acquire_remote(e, (uint64_t)(uintptr_t)buf, 4096, &mr), 0);
    cr_assert_eq(mr->addr, (uint64_t)(uintptr_t)buf);
    xfer__mr_release(e, mr);
    cr_assert_eq(xfer__mr_acquire_remote(e, (uint64_t)(uintptr_t)buf + 4096, 1, NULL),
                 -CM_EINVALID_PARAMS);
    cr_assert_eq(xfer__mr_acquire_remote(e, (uint64_t)(uintptr_t)buf, 4097, NULL),
                 -CM_EINVALID_PARAMS);
    cr_assert_eq(xfer_engine_unregister(e, buf), 0);
    cr_assert_eq(xfer_engine_unregister(e, buf), -ENOENT);
    cr_assert_eq(xfer_engine_local_addr(e, buf, 64), -ENOTCONN);
    xfer_engine_destroy(e);
    cm_free(buf);
}

Test(xfer_engine, registry_and_install) {
    char names[128];
    cr_assert_gt(xfer_transports_available(names, sizeof(names)), 0);
    cr_assert_not_null(strstr(names, "shm"));
    cr_assert_not_null(strstr(names, "tcp"));
    cr_assert_not_null(strstr(names, "fault"));
    struct xfer_engine *e = mk_engine(NULL);
    cr_assert_eq(xfer_engine_install(e, "nosuch", NULL), -CM_ENOT_SUPPORTED);
    cr_assert_eq(xfer_engine_install(e, "tcp", "workers=0"), -EINVAL);
    cr_assert_eq(xfer_engine_install(e, "tcp", NULL), 0);
    cr_assert_eq(xfer_engine_install(e, "tcp", NULL), -EEXIST);
    cr_assert_eq(xfer_engine_install(e, "fault", "install_fail=1"),
                 -CM_EUNAVAILABLE_IN_CURRENT_STATUS);
    cr_assert_null(xfer__engine_transport(e, "fault"));
    cr_assert_eq(xfer_engine_uninstall(e, "tcp"), 0);
    cr_assert_eq(xfer_engine_uninstall(e, "tcp"), -ENOENT);
    xfer_engine_destroy(e);
    xfer_engine_destroy(NULL);
}

Test(xfer_engine, local_segment_and_descriptor) {
    struct xfer_engine *e = mk_engine(NULL);
    cr_assert_eq(xfer_engine_install(e, "tcp", NULL), 0);
    cr_assert_eq(xfer_engine_install(e, "shm", NULL), 0);
    char *remote, *local = cm_malloc(BUF_LEN);
    cr_assert_eq(xfer_engine_alloc_shared(e, BUF_LEN, (void **)&remote), 0);
    cr_assert_eq(xfer_engine_register(e, remote, BUF_LEN, "*", XFER_REG_REMOTE), 0);
    ssize_t n = xfer_engine_export_desc(e, NULL, 0);
    cr_assert_gt(n, 0);
    char small[8];
    cr_assert_eq(xfer_engine_export_desc(e, small, sizeof(small)), -ENOSPC);
    void *d = cm_malloc((size_t)n);
    cr_assert_eq(xfer_engine_export_desc(e, d, (size_t)n), n);
    struct xfer_desc *dd;
    cr_assert_eq(xfer_desc_decode(d, (size_t)n, &dd), 0);
    cr_assert_eq(dd->n_tp, 2);
    cr_assert_eq(dd->n_buf, 1);
    cr_assert_str_eq(dd->buf[0].location, "cpu:0");
    xfer_desc_free(dd);

    struct xfer_segment *seg;
    cr_assert_eq(xfer_segment_open(e, d, (size_t)n, &seg), 0);
    cr_assert_str_eq(xfer_segment_transport(seg), "local");
    memset(local, 0xab, BUF_LEN);
    struct xfer_request r[2] = {
        {XFER_OP_WRITE, local, seg, (uint64_t)(uintptr_t)remote + 100, 1000},
        {XFER_OP_READ, local + 5000, seg, (uint64_t)(uintptr_t)remote + 100, 1000}};
    struct xfer_batch *b;
    cr_assert_eq(xfer_batch_alloc(e, 4, &b), 0);
    cr_assert_eq(xfer_batch_submit(b, r, 1, NULL), 0);
    size_t first;
    cr_assert_eq(xfer_batch_submit(b, r + 1, 1, &first), 0);
    cr_assert_eq(first, 1);
    cr_assert_eq(xfer_batch_wait(b, 1000, NULL, 0, NULL), 0);
    cr_assert_eq(remote[100], (char)0xab);
    cr_assert_eq(xfer_batch_reset(b), 0);
    cr_assert_eq(xfer_batch_count(b), 0);
    xfer_batch_free(b);
    /* A corrupted descriptor is refused. */
    ((char *)d)[n - 1] ^= 1;
    cr_assert_eq(xfer_segment_open(e, d, (size_t)n, &seg), -CM_ECORRUPT);
    xfer_segment_close(seg);
    cm_free(d);
    cr_assert_eq(xfer_engine_unregister(e, remote), 0);
    cr_assert_eq(xfer_engine_free_shared(e, remote), 0);
    cr_assert_eq(xfer_engine_free_shared(e, remote), -ENOENT);
    xfer_engine_destroy(e);
    cm_free(local);
}

Test(xfer_engine, no_common_transport) {
    struct xfer_engine *a = mk_engine(NULL), *b = mk_engine("");
    cr_assert_eq(xfer_engine_install(a, "tcp", NULL), 0);
    char addr[64];
    cr_assert_gt(xfer_engine_local_addr(a, addr, sizeof(addr)), 0);
    struct xfer_segment *seg;
    cr_assert_eq(xfer_segment_open_addr(b, addr, &seg), -CM_ENOT_SUPPORTED);
    xfer_engine_destroy(b);
    xfer_engine_destroy(a);
}

/* ---- fault transport over tcp between two engines ---- */

struct pair {
    struct xfer_engine *target, *init;
    struct xfer_segment *seg;
    char *remote, *local;
};

static void pair_open(struct pair *p, const char *fault_args) {
    p->target = mk_engine(NULL);
    p->init = mk_engine("");
    cr_assert_eq(xfer_engine_install(p->target, "tcp", NULL), 0);
    int rc = xfer_engine_install(p->init, "fault", fault_args);
    cr_assert_eq(rc, 0, "install fault: %s", cm_strerror(rc));
    cr_assert_not_null(xfer__engine_transport(p->init, "tcp")); /* installed as the inner one */
    p->remote = cm_calloc(1, BUF_LEN);
    p->local = cm_malloc(BUF_LEN);
    memset(p->local, 0x11, BUF_LEN);
    cr_assert_eq(xfer_engine_register(p->target, p->remote, BUF_LEN, NULL, XFER_REG_REMOTE), 0);
    char addr[64];
    xfer_engine_local_addr(p->target, addr, sizeof(addr));
    cr_assert_eq(xfer_segment_open_addr(p->init, addr, &p->seg), 0);
    cr_assert_str_eq(xfer_segment_transport(p->seg), "fault");
}

static void pair_close(struct pair *p) {
    xfer_segment_close(p->seg);
    xfer_engine_destroy(p->init);
    xfer_engine_destroy(p->target);
    cm_free(p->remote);
    cm_free(p->local);
}

/* Submits n 4 KiB writes in one submit call; returns the wait result. */
static int pair_batch(struct pair *p, size_t n, size_t *failed, size_t *nf) {
    struct xfer_request r[64];
    for (size_t i = 0; i < n; i++)
        r[i] = (struct xfer_request){XFER_OP_WRITE, p->local + i * 4096, p->seg,
                                     (uint64_t)(uintptr_t)p->remote + i * 4096, 4096};
    struct xfer_batch *b;
    cr_assert_eq(xfer_batch_alloc(p->init, n, &b), 0);
    cr_assert_eq(xfer_batch_submit(b, r, n, NULL), 0);
    int rc = xfer_batch_wait(b, 10000, failed, 64, nf);
    xfer_batch_free(b);
    return rc;
}

Test(xfer_fault, passthrough_works) {
    struct pair p;
    pair_open(&p, "inner=tcp");
    size_t nf = 99;
    cr_assert_eq(pair_batch(&p, 16, NULL, &nf), 0);
    cr_assert_eq(nf, 0);
    cr_assert_eq(memcmp(p.remote, p.local, 16 * 4096), 0);
    pair_close(&p);
}

Test(xfer_fault, submit_failure_rate) {
    struct pair p;
    pair_open(&p, "inner=tcp,submit_fail_rate=1");
    size_t failed[64], nf = 0;
    cr_assert_eq(pair_batch(&p, 8, failed, &nf), -CM_ETRANSFER_FAIL);
    cr_assert_eq(nf, 8);
    cr_assert_eq(p.remote[0], 0); /* nothing reached the target */
    pair_close(&p);

    pair_open(&p, "inner=tcp,submit_fail_rate=0.5,seed=7");
    cr_assert_eq(pair_batch(&p, 64, failed, &nf), -CM_ETRANSFER_FAIL);
    cr_assert_gt(nf, 8);
    cr_assert_lt(nf, 56);
    /* Exactly the failed tasks are missing at the target. */
    size_t k = 0;
    for (size_t i = 0; i < 64; i++) {
        int is_failed = k < nf && failed[k] == i;
        k += (size_t)is_failed;
        cr_assert_eq(p.remote[i * 4096] == 0x11, !is_failed, "task %zu", i);
    }
    pair_close(&p);
}

Test(xfer_fault, fail_after_n_submits) {
    struct pair p;
    pair_open(&p, "fail_after=2");
    size_t nf;
    cr_assert_eq(pair_batch(&p, 4, NULL, &nf), 0);
    cr_assert_eq(pair_batch(&p, 4, NULL, &nf), 0);
    cr_assert_eq(pair_batch(&p, 4, NULL, &nf), -CM_ETRANSFER_FAIL);
    cr_assert_eq(nf, 4);
    cr_assert_eq(pair_batch(&p, 1, NULL, &nf), -CM_ETRANSFER_FAIL);
    pair_close(&p);
}

Test(xfer_fault, completed_reported_failed) {
    struct pair p;
    pair_open(&p, "corrupt_rate=1");
    size_t nf;
    cr_assert_eq(pair_batch(&p, 4, NULL, &nf), -CM_ETRANSFER_FAIL);
    cr_assert_eq(nf, 4);
    cr_assert_eq(memcmp(p.remote, p.local, 4 * 4096), 0); /* the bytes did arrive */
    pair_close(&p);
}

Test(xfer_fault, submit_delay) {
    struct pair p;
    pair_open(&p, "delay_us=200000");
    size_t nf;
    uint64_t t0 = cm_mono_ms();
    cr_assert_eq(pair_batch(&p, 2, NULL, &nf), 0);
    cr_assert_geq(cm_mono_ms() - t0, 200);
    pair_close(&p);
}

Test(xfer_fault, bad_arguments) {
    struct xfer_engine *e = mk_engine("");
    cr_assert_eq(xfer_engine_install(e, "fault", "submit_fail_rate=x"), -EINVAL);
    cr_assert_eq(xfer_engine_install(e, "fault", "inner=fault"), -EINVAL);
    cr_assert_eq(xfer_engine_install(e, "fault", "inner=nosuch"), -CM_ENOT_SUPPORTED);
    xfer_engine_destroy(e);
}

/* ---- target side: a stalled request pins only its own registration ---- */

struct closer {
    int fd;
    int delay_ms;
};

static void *close_later(void *p) {
    struct closer *c = p;
    cm_sleep_ms((uint64_t)c->delay_ms);
    close(c->fd);
    return NULL;
}

Test(xfer_engine, stalled_request_pins_only_its_registration) {
    struct xfer_engine *t = mk_engine(NULL), *i = mk_engine("");
    cr_assert_eq(xfer_engine_install(t, "tcp", NULL), 0);
    cr_assert_eq(xfer_engine_install(i, "tcp", NULL), 0);
    char *a = cm_calloc(1, BUF_LEN), *b = cm_calloc(1, BUF_LEN), *c = cm_calloc(1, BUF_LEN);
    cr_assert_eq(xfer_engine_register(t, a, BUF_LEN, NULL, XFER_REG_REMOTE), 0);
    cr_assert_eq(xfer_engine_register(t, b, BUF_LEN, NULL, XFER_REG_REMOTE), 0);
    char addr[64];
    xfer_engine_local_addr(t, addr, sizeof(addr));
    /* A raw client announces a 1 MiB WRITE into a, sends 10 bytes, and stalls. */
    int fd = xfer__sock_connect(addr, cm_mono_ns() + 2000000000ull);
    cr_assert_geq(fd, 0);
    struct xfer_wire_hdr h = {
        .op = XFER_WIRE_TCP_WRITE, .id = 1, .addr = (uint64_t)(uintptr_t)a, .len = 1 << 20};
    uint8_t hb[XFER_WIRE_HDR_LEN + 10] = {0};
    xfer_wire_encode(&h, hb);
    struct iovec v = {hb, sizeof(hb)};
    cr_assert_eq(xfer__sock_writev(fd, &v, 1, cm_mono_ns() + 2000000000ull), 0);
    cm_sleep_ms(100); /* the target is now inside the payload read */

    /* Registering other memory and serving other requests are not held up. */
    uint64_t t0 = cm_mono_ms();
    cr_assert_eq(xfer_engine_register(t, c, BUF_LEN, NULL, XFER_REG_REMOTE), 0);
    struct xfer_segment *seg;
    cr_assert_eq(xfer_segment_open_addr(i, addr, &seg), 0);
    char *local = cm_malloc(4096);
    struct xfer_request r = {XFER_OP_READ, local, seg, (uint64_t)(uintptr_t)b, 4096};
    struct xfer_batch *bt;
    cr_assert_eq(xfer_batch_alloc(i, 1, &bt), 0);
    cr_assert_eq(xfer_batch_submit(bt, &r, 1, NULL), 0);
    cr_assert_eq(xfer_batch_wait(bt, 2000, NULL, 0, NULL), 0);
    cr_assert_lt(cm_mono_ms() - t0, 1000);

    /* Unregistering a waits for the stalled request, which ends when its client goes away. */
    pthread_t th;
    struct closer cl = {fd, 300};
    pthread_create(&th, NULL, close_later, &cl);
    t0 = cm_mono_ms();
    cr_assert_eq(xfer_engine_unregister(t, a), 0);
    cr_assert_geq(cm_mono_ms() - t0, 150);
    pthread_join(th, NULL);

    xfer_batch_free(bt);
    xfer_segment_close(seg);
    xfer_engine_destroy(i);
    xfer_engine_destroy(t);
    cm_free(a);
    cm_free(b);
    cm_free(c);
    cm_free(local);
}

/* ---- registration rollback, handshake timeout, deferred accept, IPv6 ---- */

Test(xfer_engine, failed_registration_rolls_back_only_the_successful_transports) {
    struct xfer_engine *e = mk_engine("");
    cr_assert_eq(xfer_engine_install(e, "tcp", NULL), 0);
    cr_assert_eq(xfer_engine_install(e, "fault", "inner=tcp,register_fail=1"), 0);
    struct xfer_transport *f = xfer__engine_transport(e, "fault");
    cr_assert_not_null(f);
    char *buf = cm_malloc(4096);
    cr_assert_eq(xfer_engine_register(e, buf, 4096, "cpu:0", XFER_REG_REMOTE),
                 -CM_EUNAVAILABLE_IN_CURRENT_STATUS);
    cr_assert_eq(xfer__fault_bad_unregisters(f), 0,
                 "the transport whose registration failed was unregistered");
    cr_assert_null(xfer__mr_find(e, buf, 1));
    cr_assert_eq(xfer_engine_unregister(e, buf), -ENOENT);
    /* Without the failing transport the same memory registers, and unregisters cleanly. */
    cr_assert_eq(xfer_engine_uninstall(e, "fault"), 0);
    cr_assert_eq(xfer_engine_install(e, "fault", "inner=tcp"), 0);
    f = xfer__engine_transport(e, "fault");
    cr_assert_eq(xfer_engine_register(e, buf, 4096, "cpu:0", XFER_REG_REMOTE), 0);
    cr_assert_eq(xfer_engine_unregister(e, buf), 0);
    cr_assert_eq(xfer__fault_bad_unregisters(f), 0);
    xfer_engine_destroy(e);
    cm_free(buf);
}

/* A TCP socket that listens (the kernel completes connects) but never accepts or answers. */
static int silent_listener(char *addr, size_t len) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(fd, 16), 0);
    socklen_t sl = sizeof(sa);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    snprintf(addr, len, "127.0.0.1:%u", ntohs(sa.sin_port));
    return fd;
}

Test(xfer_engine, open_addr_of_a_silent_port_times_out_by_the_handshake_timeout) {
    char addr[64];
    int lfd = silent_listener(addr, sizeof(addr));
    /* Engine defaults: 60 s transfer timeout, 5 s handshake timeout. */
    unsetenv("MC_HANDSHAKE_CONNECT_TIMEOUT");
    struct xfer_engine_opts o = {.listen = ""};
    struct xfer_engine *e;
    cr_assert_eq(xfer_engine_create(&o, &e), 0);
    cr_assert_eq(xfer_engine_timeout_ms(e), XFER_DEFAULT_TIMEOUT_MS);
    cr_assert_eq(xfer_engine_install(e, "tcp", NULL), 0);
    struct xfer_segment *seg = NULL;
    uint64_t t0 = cm_mono_ms();
    int rc = xfer_segment_open_addr(e, addr, &seg);
    uint64_t took = cm_mono_ms() - t0;
    cr_assert_eq(rc, -ETIMEDOUT, "open %s: %s", addr, cm_strerror(rc));
    cr_assert_null(seg);
    cr_assert_lt(took, XFER_DEFAULT_TIMEOUT_MS,
                 "bounded by the transfer timeout, not the handshake");
    const char *msg = xfer_last_error();
    cr_assert_not_null(strstr(msg, addr), "message names the peer: %s", msg);
    cr_assert_not_null(strstr(msg, "descriptor reply"), "message names the step: %s", msg);
    cr_assert_not_null(strstr(msg, "no answer within 5000 ms"), "%s", msg);
    xfer_engine_destroy(e);

    /* Configured by option and by MC_HANDSHAKE_CONNECT_TIMEOUT (seconds). */
    o.handshake_timeout_ms = 300;
    cr_assert_eq(xfer_engine_create(&o, &e), 0);
    cr_assert_eq(xfer_engine_install(e, "tcp", NULL), 0);
    cr_assert_eq(xfer_segment_open_addr(e, addr, &seg), -ETIMEDOUT);
    cr_assert_not_null(strstr(xfer_last_error(), "no answer within 300 ms"), "%s",
                       xfer_last_error());
    xfer_engine_destroy(e);
    setenv("MC_HANDSHAKE_CONNECT_TIMEOUT", "1", 1);
    o.handshake_timeout_ms = 0;
    cr_assert_eq(xfer_engine_create(&o, &e), 0);
    unsetenv("MC_HANDSHAKE_CONNECT_TIMEOUT");
    cr_assert_eq(xfer_engine_install(e, "tcp", NULL), 0);
    cr_assert_eq(xfer_segment_open_addr(e, addr, &seg), -ETIMEDOUT);
    cr_assert_not_null(strstr(xfer_last_error(), "no answer within 1000 ms"), "%s",
                       xfer_last_error());
    /* A closed port: refused, and the message says so. */
    close(lfd);
    cr_assert_eq(xfer_segment_open_addr(e, addr, &seg), -ECONNREFUSED);
    cr_assert_not_null(strstr(xfer_last_error(), "connecting"), "%s", xfer_last_error());
    xfer_engine_destroy(e);
}

Test(xfer_engine, listen_later_refuses_until_started) {
    struct xfer_engine_opts o = {.listen = "127.0.0.1:0", .listen_later = 1, .timeout_ms = 5000};
    struct xfer_engine *t, *i = mk_engine("");
    cr_assert_eq(xfer_engine_create(&o, &t), 0);
    cr_assert_eq(xfer_engine_install(t, "tcp", NULL), 0);
    cr_assert_eq(xfer_engine_install(i, "tcp", NULL), 0);
    char addr[64];
    cr_assert_gt(xfer_engine_local_addr(t, addr, sizeof(addr)), 0);
    struct xfer_segment *seg = NULL;
    cr_assert_eq(xfer_segment_open_addr(i, addr, &seg), -ECONNREFUSED);
    char *buf = cm_calloc(1, 4096);
    cr_assert_eq(xfer_engine_register(t, buf, 4096, NULL, XFER_REG_REMOTE), 0);
    cr_assert_eq(xfer_engine_listen_start(t), 0);
    cr_assert_eq(xfer_engine_listen_start(t), 0); /* idempotent */
    cr_assert_eq(xfer_segment_open_addr(i, addr, &seg), 0);
    uint64_t a, l;
    cr_assert_eq(xfer_segment_buffer(seg, 0, &a, &l), 0, "the first peer sees the buffer");
    cr_assert_eq(a, (uint64_t)(uintptr_t)buf);
    xfer_segment_close(seg);
    xfer_engine_destroy(i);
    xfer_engine_destroy(t);
    cm_free(buf);
}

/* Round trip of 64 KiB over tcp from an initiator to target t at addr. */
static void tcp_round_trip(struct xfer_engine *t, const char *addr) {
    struct xfer_engine *i = mk_engine("");
    cr_assert_eq(xfer_engine_install(i, "tcp", NULL), 0);
    char *remote = cm_calloc(1, 65536), *out = cm_malloc(65536), *in = cm_calloc(1, 65536);
    memset(out, 0x3c, 65536);
    cr_assert_eq(xfer_engine_register(t, remote, 65536, NULL, XFER_REG_REMOTE), 0);
    struct xfer_segment *seg;
    int rc = xfer_segment_open_addr(i, addr, &seg);
    cr_assert_eq(rc, 0, "open %s: %s (%s)", addr, cm_strerror(rc), xfer_last_error());
    cr_assert_str_eq(xfer_segment_transport(seg), "tcp");
    uint64_t ra = (uint64_t)(uintptr_t)remote;
    struct xfer_request r[2] = {{XFER_OP_WRITE, out, seg, ra, 65536},
                                {XFER_OP_READ, in, seg, ra, 65536}};
    struct xfer_batch *b;
    cr_assert_eq(xfer_batch_alloc(i, 2, &b), 0);
    cr_assert_eq(xfer_batch_submit(b, r, 1, NULL), 0);
    cr_assert_eq(xfer_batch_wait(b, -1, NULL, 0, NULL), 0);
    cr_assert_eq(xfer_batch_submit(b, r + 1, 1, NULL), 0);
    cr_assert_eq(xfer_batch_wait(b, -1, NULL, 0, NULL), 0);
    cr_assert_eq(memcmp(in, out, 65536), 0);
    cr_assert_eq(memcmp(remote, out, 65536), 0);
    xfer_batch_free(b);
    xfer_segment_close(seg);
    xfer_engine_destroy(i);
    cr_assert_eq(xfer_engine_unregister(t, remote), 0);
    cm_free(remote);
    cm_free(out);
    cm_free(in);
}

/* Creates a tcp target listening on spec; skips the test when ::1 is not available. */
static struct xfer_engine *v6_target(const char *spec) {
    struct xfer_engine_opts o = {.listen = spec, .timeout_ms = 5000};
    struct xfer_engine *t;
    int rc = xfer_engine_create(&o, &t);
    if (rc == -EADDRNOTAVAIL || rc == -EAFNOSUPPORT)
        cr_skip_test("no IPv6 loopback here: %s", cm_strerror(rc));
    cr_assert_eq(rc, 0, "listen %s: %s", spec ? spec : "(default)", cm_strerror(rc));
    cr_assert_eq(xfer_engine_install(t, "tcp", NULL), 0);
    return t;
}

Test(xfer_engine, ipv6_listener_and_segment_addresses) {
    char addr[64];
    /* "[::1]:0": bracketed with a port. */
    struct xfer_engine *t = v6_target("[::1]:0");
    cr_assert_gt(xfer_engine_local_addr(t, addr, sizeof(addr)), 0);
    cr_assert_eq(strncmp(addr, "[::1]:", 6), 0, "advertised %s", addr);
    tcp_round_trip(t, addr);
    xfer_engine_destroy(t);
    /* "::1": a bare address, ephemeral port. */
    t = v6_target("::1");
    cr_assert_gt(xfer_engine_local_addr(t, addr, sizeof(addr)), 0);
    cr_assert_eq(strncmp(addr, "[::1]:", 6), 0, "advertised %s", addr);
    tcp_round_trip(t, addr);
    xfer_engine_destroy(t);
    /* MC_TCP_BIND_ADDRESS=::1 for the default listener. */
    setenv("MC_TCP_BIND_ADDRESS", "::1", 1);
    t = v6_target(NULL);
    unsetenv("MC_TCP_BIND_ADDRESS");
    cr_assert_gt(xfer_engine_local_addr(t, addr, sizeof(addr)), 0);
    cr_assert_eq(strncmp(addr, "[::1]:", 6), 0, "advertised %s", addr);
    tcp_round_trip(t, addr);
    /* An unbracketed IPv6 address with a port is ambiguous: refused, not misread. */
    struct xfer_engine *i = mk_engine("");
    cr_assert_eq(xfer_engine_install(i, "tcp", NULL), 0);
    struct xfer_segment *seg;
    cr_assert_eq(xfer_segment_open_addr(i, addr + 1, &seg), -EINVAL); /* "::1]:port" */
    char bare[64];
    snprintf(bare, sizeof(bare), "::1:%s", strrchr(addr, ':') + 1);
    cr_assert_eq(xfer_segment_open_addr(i, bare, &seg), -EINVAL);
    xfer_engine_destroy(i);
    xfer_engine_destroy(t);
}

Test(xfer_engine, destroy_and_uninstall_close_open_segments) {
    struct xfer_engine *t = mk_engine(NULL), *i = mk_engine("");
    cr_assert_eq(xfer_engine_install(t, "tcp", NULL), 0);
    cr_assert_eq(xfer_engine_install(i, "tcp", NULL), 0);
    char addr[64];
    cr_assert_gt(xfer_engine_local_addr(t, addr, sizeof(addr)), 0);
    struct xfer_segment *s1, *s2;
    cr_assert_eq(xfer_segment_open_addr(i, addr, &s1), 0);
    cr_assert_eq(xfer_segment_open_addr(i, addr, &s2), 0);
    xfer_engine_destroy(i); /* closes s1 and s2 (ASan checks nothing leaks) */

    /* Uninstalling the inner transport takes its decorator and their segments with it. */
    i = mk_engine("");
    cr_assert_eq(xfer_engine_install(i, "tcp", NULL), 0);
    cr_assert_eq(xfer_engine_install(i, "fault", "inner=tcp"), 0);
    cr_assert_eq(xfer_segment_open_addr(i, addr, &s1), 0);
    cr_assert_str_eq(xfer_segment_transport(s1), "fault");
    cr_assert_eq(xfer_engine_uninstall(i, "tcp"), 0);
    cr_assert_null(xfer__engine_transport(i, "fault"));
    cr_assert_null(xfer__engine_transport(i, "tcp"));
    cr_assert_eq(xfer_segment_open_addr(i, addr, &s2), -CM_ENOT_SUPPORTED);
    cr_assert_eq(xfer_engine_uninstall(i, "tcp"), -ENOENT);
    xfer_engine_destroy(i);
    xfer_engine_destroy(t);
}

/* A poller reading status while another thread submits must never see a slot's last outcome:
 * task slots are not zeroed at allocation, and a reset batch keeps its old statuses, so submit
 * marks the slots it reserves WAITING before they count (a review found COMPLETED reported for
 * requests not yet prepared, whose real outcome was INVALID). */
#define STALE_N 512

struct stale_poll {
    struct xfer_batch *_Atomic b;
    atomic_int phase; /* 0 idle, 1 poll, 2 stop polling, -1 exit */
    atomic_long polls, completed;
};

static void *stale_poller(void *arg) {
    struct stale_poll *p = arg;
    for (;;) {
        int ph;
        while ((ph = atomic_load(&p->phase)) == 0)
            ;
        if (ph < 0)
            return NULL;
        struct xfer_batch *b = atomic_load(&p->b);
        struct xfer_task_status st;
        while (atomic_load(&p->phase) == 1) {
            for (size_t id = STALE_N - 8; id < STALE_N; id++) {
                if (xfer_batch_status(b, id, &st) == 0) {
                    atomic_fetch_add(&p->polls, 1);
                    if (st.status == XFER_STATUS_COMPLETED)
                        atomic_fetch_add(&p->completed, 1);
                }
            }
        }
        atomic_store(&p->phase, 0);
    }
}

Test(xfer_engine, status_during_submit_never_shows_a_previous_outcome) {
    struct xfer_engine *e = mk_engine(NULL);
    cr_assert_eq(xfer_engine_install(e, "tcp", NULL), 0);
    char *remote = cm_malloc(4096), local[64] = {0};
    cr_assert_eq(xfer_engine_register(e, remote, 4096, "*", XFER_REG_REMOTE), 0);
    ssize_t n = xfer_engine_export_desc(e, NULL, 0);
    void *d = cm_malloc((size_t)n);
    cr_assert_eq(xfer_engine_export_desc(e, d, (size_t)n), n);
    struct xfer_segment *seg;
    cr_assert_eq(xfer_segment_open(e, d, (size_t)n, &seg), 0);
    static struct xfer_request good[STALE_N], bad[STALE_N];
    uint64_t base = (uint64_t)(uintptr_t)remote;
    for (size_t i = 0; i < STALE_N; i++) {
        good[i] = (struct xfer_request){XFER_OP_WRITE, local, seg, base + (i % 64) * 64, 64};
        bad[i] = (struct xfer_request){XFER_OP_WRITE, local, seg, base + 4096, 1}; /* outside */
    }
    struct stale_poll p = {0};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, stale_poller, &p), 0);
    long polls_while_submitting = 0;
    for (int round = 0; round < 200; round++) {
        struct xfer_batch *b;
        cr_assert_eq(xfer_batch_alloc(e, STALE_N, &b), 0);
        cr_assert_eq(xfer_batch_submit(b, good, STALE_N, NULL), 0); /* local: done at once */
        cr_assert_eq(xfer_batch_wait(b, 5000, NULL, 0, NULL), 0);
        struct xfer_task_status st;
        cr_assert_eq(xfer_batch_status(b, STALE_N - 1, &st), 0);
        cr_assert_eq(st.status, XFER_STATUS_COMPLETED);
        /* Half the rounds reuse the batch through reset, half free it and allocate again
         * (glibc usually hands back the same block, with the old statuses in it). */
        if (round % 2) {
            cr_assert_eq(xfer_batch_reset(b), 0);
        } else {
            xfer_batch_free(b);
            cr_assert_eq(xfer_batch_alloc(e, STALE_N, &b), 0);
        }
        atomic_store(&p.b, b);
        long before = atomic_load(&p.polls);
        atomic_store(&p.phase, 1);
        cr_assert_eq(xfer_batch_submit(b, bad, STALE_N, NULL), 0);
        atomic_store(&p.phase, 2);
        while (atomic_load(&p.phase) != 0)
            ;
        polls_while_submitting += atomic_load(&p.polls) - before;
        cr_assert_eq(xfer_batch_status(b, STALE_N - 1, &st), 0);
        cr_assert_eq(st.status, XFER_STATUS_INVALID);
        cr_assert_eq(atomic_load(&p.completed), 0,
                     "round %d: a poller saw COMPLETED for a request whose outcome is INVALID",
                     round);
        xfer_batch_free(b);
    }
    atomic_store(&p.phase, -1);
    pthread_join(th, NULL);
    cr_log_info("%ld status polls during submits", polls_while_submitting);
    xfer_segment_close(seg);
    cm_free(d);
    cr_assert_eq(xfer_engine_unregister(e, remote), 0);
    xfer_engine_destroy(e);
    cm_free(remote);
}
