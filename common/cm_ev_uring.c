/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io_uring backend of cm_ev.h. DESIGN: the owner queues requests with cm_ev_sqe(); each
 * iteration runs the before-sleep hook (which queues more, e.g. replies), then one
 * io_uring_submit_and_wait_timeout() submits everything queued and waits for at least one
 * completion or the next cron tick; the completions are then reaped in a batch and handed to
 * their cm_ev_op callbacks. The ring is SINGLE_ISSUER + DEFER_TASKRUN where the kernel has
 * them (completion work runs only inside that one wait), without SQPOLL. Wakes from other
 * threads arrive through a multishot poll on the loop's eventfd.
 */
#include "common/fmacros.h"

#include "common/cm_ev.h"
#include "common/cm_ev_int.h"

#include "common/cm_atomic.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#define CM_EV_REAP_BATCH 256 /* completions copied out of the CQ per pass */

/* IORING_REGISTER_ENABLE_RINGS (liburing 2.3 declares io_uring_enable_rings but does not
 * export it). Returns 0 or -errno. */
static int cm_ev_enable_ring(struct io_uring *ring) {
    long rc = syscall(__NR_io_uring_register, ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
    return rc < 0 ? -errno : 0;
}

/* Reads /proc/sys/kernel/io_uring_disabled: 0 allowed, 1 restricted to a group, 2 disabled. */
static int cm_ev_uring_sysctl(void) {
    FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "r");
    int v = 0;
    if (!f)
        return 0; /* older kernels have no switch */
    if (fscanf(f, "%d", &v) != 1)
        v = 0;
    fclose(f);
    return v;
}

/* True when the running kernel is at least major.minor (multishot recv: 6.0). */
static int cm_ev_kernel_at_least(int major, int minor) {
    struct utsname u;
    int ma = 0, mi = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
        return 0;
    return ma > major || (ma == major && mi >= minor);
}

/* Sets up ring with the flags the loop wants, dropping the newer ones on -EINVAL. */
static int cm_ev_ring_init(struct io_uring *ring, unsigned entries, unsigned extra) {
    static const unsigned tries[] = {
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
        IORING_SETUP_COOP_TASKRUN,
        0,
    };
    int rc = -EINVAL;
    for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
        struct io_uring_params p;
        memset(&p, 0, sizeof(p));
        p.flags = tries[i] | extra | IORING_SETUP_CQSIZE;
        p.cq_entries = entries * 4;
        rc = io_uring_queue_init_params(entries, ring, &p);
        if (rc != -EINVAL)
            break;
    }
    return rc;
}

int cm_ev_uring_probe(char *why, size_t n) {
    int dis = cm_ev_uring_sysctl();
    if (dis == 2) {
        snprintf(why, n, "io_uring is disabled (/proc/sys/kernel/io_uring_disabled = 2)");
        return -EPERM;
    }
    if (!cm_ev_kernel_at_least(6, 0)) {
        snprintf(why, n, "kernel older than 6.0 (no multishot recv)");
        return -ENOSYS;
    }
    struct io_uring ring;
    int rc = cm_ev_ring_init(&ring, 8, 0);
    if (rc < 0) {
        snprintf(why, n, "io_uring_setup failed: %s%s", strerror(-rc),
                 dis == 1 ? " (io_uring_disabled = 1 and not in io_uring_group)" : "");
        return rc;
    }
    rc = 0;
    if (!(ring.features & IORING_FEAT_EXT_ARG) || !(ring.features & IORING_FEAT_NODROP) ||
        !(ring.features & IORING_FEAT_FAST_POLL)) {
        snprintf(why, n, "io_uring lacks EXT_ARG, NODROP or FAST_POLL");
        rc = -ENOSYS;
    }
    struct io_uring_probe *pr = rc == 0 ? io_uring_get_probe_ring(&ring) : NULL;
    static const int ops[] = {IORING_OP_ACCEPT,  IORING_OP_RECV,         IORING_OP_SEND,
                              IORING_OP_SENDMSG, IORING_OP_ASYNC_CANCEL, IORING_OP_POLL_ADD};
    for (size_t i = 0; pr && rc == 0 && i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (!io_uring_opcode_supported(pr, ops[i])) {
            snprintf(why, n, "io_uring lacks opcode %d", ops[i]);
            rc = -ENOSYS;
        }
    }
    if (pr)
        io_uring_free_probe(pr);
    else if (rc == 0) {
        snprintf(why, n, "io_uring probe failed");
        rc = -ENOSYS;
    }
    if (rc == 0) { /* provided-buffer rings (5.19) */
        struct io_uring_buf_ring *br = NULL;
        if (posix_memalign((void **)&br, 4096, 4096) != 0)
            br = NULL;
        struct io_uring_buf_reg reg = {
            .ring_addr = (unsigned long)br, .ring_entries = 8, .bgid = 0};
        int r = br ? io_uring_register_buf_ring(&ring, &reg, 0) : -ENOMEM;
        if (r < 0) {
            snprintf(why, n, "io_uring has no provided-buffer rings: %s", strerror(-r));
            rc = r;
        } else {
            io_uring_unregister_buf_ring(&ring, 0);
        }
        free(br);
    }
    io_uring_queue_exit(&ring);
    return rc;
}

/* Multishot poll on the wake eventfd; re-armed when the kernel ends it. */
static void cm_ev_wake_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res, unsigned flags) {
    (void)op;
    if (res >= 0)
        cm_ev__wake_fired(loop);
    if (!(flags & IORING_CQE_F_MORE) && !cm_atomic_load_acquire(&loop->stop)) {
        struct io_uring_sqe *sqe = cm_ev_sqe(loop, &loop->wake_op);
        io_uring_prep_poll_multishot(sqe, loop->wakefd, POLLIN);
    }
}

static int cm_ev_uring_run(struct cm_ev_loop *loop);
static void cm_ev_uring_fini(struct cm_ev_loop *loop);
static const struct cm_ev_backend_ops cm_ev_uring_ops = {
    sizeof(struct cm_ev_backend_ops),
    cm_ev_uring_run,
    cm_ev_uring_fini,
};

struct cm_ev_loop *cm_ev_create_uring(int max_fds, unsigned entries) {
    struct cm_ev_loop *l = cm_calloc(1, sizeof(*l));
    l->epfd = -1;
    l->max_fds = max_fds;
    l->ring = cm_calloc(1, sizeof(*l->ring));
    l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int rc = l->wakefd < 0 ? -errno : cm_ev_ring_init(l->ring, entries, IORING_SETUP_R_DISABLED);
    if (rc < 0) {
        cm_free(l->ring);
        l->ring = NULL;
        cm_ev_destroy(l);
        errno = -rc;
        return NULL;
    }
    l->ops = &cm_ev_uring_ops;
    l->wake_op.cb = cm_ev_wake_cb;
    io_uring_prep_poll_multishot(cm_ev_sqe(l, &l->wake_op), l->wakefd, POLLIN);
    l->now_ms = cm_mono_ms();
    return l;
}

static void cm_ev_uring_fini(struct cm_ev_loop *loop) {
    if (!loop->ring)
        return;
    io_uring_queue_exit(loop->ring);
    cm_free(loop->ring);
    loop->ring = NULL;
}

struct io_uring *cm_ev_ring(struct cm_ev_loop *loop) {
    return loop->ring;
}

struct io_uring_sqe *cm_ev_sqe(struct cm_ev_loop *loop, struct cm_ev_op *op) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(loop->ring);
    while (!sqe) { /* SQ full: hand the queued requests to the kernel now */
        if (!loop->ring_enabled) {
            cm_ev_enable_ring(loop->ring);
            loop->ring_enabled = 1;
        }
        io_uring_submit(loop->ring);
        sqe = io_uring_get_sqe(loop->ring);
    }
    io_uring_sqe_set_data(sqe, op);
    return sqe;
}

/* Hands every completion in the CQ to its op, in batches. Returns how many. */
static unsigned cm_ev_reap(struct cm_ev_loop *loop) {
    struct {
        struct cm_ev_op *op;
        int res;
        unsigned flags;
    } batch[CM_EV_REAP_BATCH];
    unsigned total = 0;
    for (;;) {
        unsigned head, n = 0;
        struct io_uring_cqe *cqe;
        io_uring_for_each_cqe(loop->ring, head, cqe) {
            batch[n].op = io_uring_cqe_get_data(cqe);
            batch[n].res = cqe->res;
            batch[n].flags = cqe->flags;
            if (++n == CM_EV_REAP_BATCH)
                break;
        }
        if (n == 0)
            return total;
        io_uring_cq_advance(loop->ring, n);
        for (unsigned i = 0; i < n; i++)
            if (batch[i].op)
                batch[i].op->cb(loop, batch[i].op, batch[i].res, batch[i].flags);
        total += n;
    }
}

static int cm_ev_uring_run(struct cm_ev_loop *loop) {
    if (!loop->ring_enabled) {
        int rc = cm_ev_enable_ring(loop->ring);
        if (rc < 0)
            return rc;
        loop->ring_enabled = 1;
        io_uring_register_ring_fd(loop->ring); /* optional: cheaper io_uring_enter */
    }
    while (!cm_atomic_load_acquire(&loop->stop)) {
        if (loop->before_sleep)
            loop->before_sleep(loop, loop->before_sleep_arg);
        struct io_uring_cqe *cqe = NULL;
        struct __kernel_timespec ts, *tsp = NULL;
        if (loop->cron) {
            uint64_t now = cm_mono_ms();
            uint64_t wait = loop->next_cron_ms > now ? loop->next_cron_ms - now : 0;
            ts.tv_sec = (long long)(wait / 1000);
            ts.tv_nsec = (long long)(wait % 1000) * 1000000;
            tsp = &ts;
        }
        int rc = io_uring_submit_and_wait_timeout(loop->ring, &cqe, 1, tsp, NULL);
        /* -EBUSY/-EBADR: completions overflowed the CQ; reaping below makes room. */
        if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY && rc != -EBADR)
            return rc;
        loop->now_ms = cm_mono_ms();
        cm_ev_reap(loop);
        if (loop->cron && loop->now_ms >= loop->next_cron_ms) {
            loop->next_cron_ms = loop->now_ms + loop->cron_period_ms;
            loop->cron(loop, loop->cron_arg);
        }
    }
    return 0;
}

/*
 * Submits what is queued and hands completions to their ops until done() says so or
 * timeout_ms pass; for draining requests in flight before the loop is destroyed. Returns 0, or
 * -ETIME when time ran out. Loop thread only, after cm_ev_run() returned.
 */
int cm_ev_drain(struct cm_ev_loop *loop, int (*done)(void *arg), void *arg, unsigned timeout_ms) {
    if (!loop->ring)
        return 0;
    uint64_t deadline = cm_mono_ms() + timeout_ms;
    while (!done(arg)) {
        uint64_t now = cm_mono_ms();
        if (now >= deadline)
            return -ETIME;
        struct io_uring_cqe *cqe = NULL;
        struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000000};
        io_uring_submit_and_wait_timeout(loop->ring, &cqe, 1, &ts, NULL);
        loop->now_ms = cm_mono_ms();
        cm_ev_reap(loop);
    }
    return 0;
}
