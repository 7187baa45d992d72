/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cm_ev on both backends: wakes from another thread run the wake hook, the cron
 * and before-sleep hooks run, cm_ev_stop ends cm_ev_run; on io_uring, queued requests complete
 * through their cm_ev_op callbacks (a NOP, a recv on a socket pair) and cm_ev_drain waits for
 * them. io_uring tests skip when the probe says the kernel cannot run the loop. */
#include "common/fmacros.h"

#include "common/cm_ev.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct counts {
    atomic_int wakes, crons, sleeps;
};

static void on_wake(struct cm_ev_loop *loop, void *arg) {
    struct counts *n = arg;
    if (atomic_fetch_add(&n->wakes, 1) + 1 >= 3)
        cm_ev_stop(loop);
}

static void on_cron(struct cm_ev_loop *loop, void *arg) {
    struct counts *n = arg;
    atomic_fetch_add(&n->crons, 1);
    (void)loop;
}

static void on_sleep(struct cm_ev_loop *loop, void *arg) {
    struct counts *n = arg;
    atomic_fetch_add(&n->sleeps, 1);
    (void)loop;
}

static void *waker(void *arg) {
    struct cm_ev_loop *loop = arg;
    for (int i = 0; i < 3; i++) {
        usleep(30000);
        cm_ev_wake(loop);
    }
    return NULL;
}

/* Three wakes from another thread stop the loop; the 10 ms cron ran meanwhile. */
static void check_hooks(struct cm_ev_loop *loop) {
    struct counts n = {0};
    cm_ev_set_wake_hook(loop, on_wake, &n);
    cm_ev_set_cron(loop, 10, on_cron, &n);
    cm_ev_set_before_sleep(loop, on_sleep, &n);
    pthread_t t;
    pthread_create(&t, NULL, waker, loop);
    cr_assert_eq(cm_ev_run(loop), 0);
    pthread_join(t, NULL);
    cr_assert_geq(atomic_load(&n.wakes), 3);
    cr_assert_geq(atomic_load(&n.crons), 2, "cron ran %d times", atomic_load(&n.crons));
    cr_assert_geq(atomic_load(&n.sleeps), 3);
}

static void skip_without_uring(void) {
    char why[256];
    if (cm_ev_uring_probe(why, sizeof(why)) != 0)
        cr_skip_test("io_uring unavailable: %s", why);
}

Test(cm_ev, epoll_hooks_and_wake) {
    struct cm_ev_loop *loop = cm_ev_create(64);
    cr_assert_not_null(loop);
    cr_assert_eq(cm_ev_backend_of(loop), CM_EV_EPOLL);
    cr_assert_null(cm_ev_ring(loop));
    check_hooks(loop);
    cm_ev_destroy(loop);
}

Test(cm_ev, uring_hooks_and_wake) {
    skip_without_uring();
    struct cm_ev_loop *loop = cm_ev_create_uring(64, 64);
    cr_assert_not_null(loop, "cm_ev_create_uring: %s", strerror(errno));
    cr_assert_eq(cm_ev_backend_of(loop), CM_EV_URING);
    cr_assert_eq(cm_ev_set(loop, 0, CM_EV_READ, NULL, NULL), -ENOTSUP);
    check_hooks(loop);
    cm_ev_destroy(loop);
}

struct recv_op {
    struct cm_ev_op op;
    int res;
    int calls;
    char buf[16];
};

static void on_recv(struct cm_ev_loop *loop, struct cm_ev_op *op, int res, unsigned flags) {
    struct recv_op *r = (struct recv_op *)(void *)op;
    r->res = res;
    r->calls++;
    (void)flags;
    cm_ev_stop(loop);
}

static int recv_done(void *arg) {
    return ((struct recv_op *)arg)->calls > 0;
}

/* A recv queued before cm_ev_run completes through its op once the peer writes. */
Test(cm_ev, uring_request_completes_through_op) {
    skip_without_uring();
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct cm_ev_loop *loop = cm_ev_create_uring(64, 64);
    cr_assert_not_null(loop);
    struct recv_op r = {.op.cb = on_recv};
    io_uring_prep_recv(cm_ev_sqe(loop, &r.op), sv[0], r.buf, sizeof(r.buf), 0);
    cr_assert_eq(write(sv[1], "hello", 5), 5);
    cr_assert_eq(cm_ev_run(loop), 0);
    cr_assert_eq(r.calls, 1);
    cr_assert_eq(r.res, 5);
    cr_assert(memcmp(r.buf, "hello", 5) == 0);
    /* After the loop: a request still in flight finishes under cm_ev_drain. */
    struct recv_op r2 = {.op.cb = on_recv};
    io_uring_prep_recv(cm_ev_sqe(loop, &r2.op), sv[0], r2.buf, sizeof(r2.buf), 0);
    cr_assert_eq(cm_ev_drain(loop, recv_done, &r2, 200), -ETIME);
    cr_assert_eq(write(sv[1], "x", 1), 1);
    cr_assert_eq(cm_ev_drain(loop, recv_done, &r2, 5000), 0);
    cr_assert_eq(r2.res, 1);
    cm_ev_destroy(loop);
    close(sv[0]);
    close(sv[1]);
}
