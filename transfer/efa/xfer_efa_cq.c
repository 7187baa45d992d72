// SPDX-License-Identifier: Apache-2.0
/*
 * fabric transport: completion queue, the per-domain progress thread, and the pool of
 * operation contexts. The progress thread reads completions (which also drives the provider
 * for peers' RMA into our memory); idle, it sleeps on the CQ's wait descriptor (or, for
 * providers without one, in short backing-off naps), and with busy_poll (the default for efa)
 * it spins while ops are in flight. It accounts each op
 * exactly once and expires ops whose task deadline passed.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "transfer/efa/xfer_efa.h"

#define XFER_EFA_IDLE_WAIT_MS     1 /* longest idle sleep of a progress thread */
#define XFER_EFA_DEADLINE_SCAN_NS (20ull * 1000 * 1000)
#define XFER_EFA_INLINE_GRACE_NS  (2ull * 1000 * 1000) /* nap mode after an inline poll */

/*
 * Opens the domain's completion queue (context format, provider's wait object so the idle
 * progress thread can block). Returns 0 or a negative libfabric code. Not thread-safe.
 */
int xfer_efa__cq_open(struct xfer_efa_domain *d) {
    struct fi_cq_attr attr = {
        .format = FI_CQ_FORMAT_CONTEXT,
        .wait_obj = FI_WAIT_FD,
        .size = d->efa->cfg.cq_size,
    };
    /* Preferred: a file descriptor we poll ourselves after fi_trywait, so an idle progress
     * thread holds no provider lock while it sleeps. Without one the thread polls with short
     * sleeps: fi_cq_sread is not used, since some providers (shm) ignore its timeout and the
     * thread could never be stopped. */
    d->wait_fd = -1;
    int rc = fi_cq_open(d->domain, &attr, &d->cq, NULL);
    if (rc == 0 && fi_control(&d->cq->fid, FI_GETWAIT, &d->wait_fd) != 0)
        d->wait_fd = -1;
    if (rc == -FI_ENOSYS || rc == -FI_EINVAL || rc == -FI_ENODATA) {
        attr.wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(d->domain, &attr, &d->cq, NULL);
    }
    d->no_wait = d->wait_fd < 0;
    return rc;
}

/*
 * Takes an op context from the domain's pool (allocating when empty), fills in its callback,
 * argument, length and deadline, and links it on the in-flight list with accounted = 0 (the
 * fields are set before the op becomes visible to the deadline scan). Returns NULL on OOM.
 * Thread-safe (op_lock).
 */
struct xfer_efa_op *xfer_efa__op_get(struct xfer_efa_domain *d, xfer_efa_op_cb *cb, void *arg,
                                     uint64_t len, uint64_t deadline_ns) {
    struct xfer_efa_op *op;

    pthread_mutex_lock(&d->op_lock);
    op = d->free_ops;
    if (op)
        d->free_ops = op->next;
    pthread_mutex_unlock(&d->op_lock);
    if (!op && !(op = cm_try_malloc(sizeof(*op))))
        return NULL;
    memset(op, 0, sizeof(*op));
    op->dom = d;
    op->cb = cb;
    op->arg = arg;
    op->len = len;
    op->deadline_ns = deadline_ns;
    atomic_init(&op->accounted, 0);
    pthread_mutex_lock(&d->op_lock);
    op->next = d->inflight.next;
    op->prev = &d->inflight;
    d->inflight.next->prev = op;
    d->inflight.next = op;
    pthread_mutex_unlock(&d->op_lock);
    atomic_fetch_add_explicit(&d->n_inflight, 1, memory_order_release);
    return op;
}

/* Unlinks op from the in-flight list and returns it to the pool (closing any temporary MR). */
static void xfer_efa_op_put(struct xfer_efa_op *op) {
    struct xfer_efa_domain *d = op->dom;

    if (op->tmp_mr)
        fi_close(&op->tmp_mr->fid);
    op->tmp_mr = NULL;
    pthread_mutex_lock(&d->op_lock);
    op->prev->next = op->next;
    op->next->prev = op->prev;
    op->next = d->free_ops;
    d->free_ops = op;
    pthread_mutex_unlock(&d->op_lock);
    atomic_fetch_sub_explicit(&d->n_inflight, 1, memory_order_release);
}

/* Runs op's callback unless it already ran (deadline expiry). */
static void xfer_efa_account(struct xfer_efa_op *op, int err) {
    if (atomic_exchange_explicit(&op->accounted, 1, memory_order_acq_rel) == 0)
        op->cb(op->arg, err);
}

/*
 * Ends an op that the provider never accepted (the post failed): accounts it with no callback
 * and returns it to the pool. The caller accounts the task itself. Thread-safe.
 */
void xfer_efa__op_abort(struct xfer_efa_op *op) {
    atomic_store_explicit(&op->accounted, 1, memory_order_release);
    xfer_efa_op_put(op);
}

static void xfer_efa_complete(struct xfer_efa_op *op, int err) {
    xfer_efa_account(op, err);
    xfer_efa_op_put(op);
}

static int xfer_efa_read_err(struct xfer_efa_domain *d) {
    struct fi_cq_err_entry e;
    memset(&e, 0, sizeof(e));
    ssize_t rc = fi_cq_readerr(d->cq, &e, 0);
    if (rc < 0)
        return rc == -FI_EAGAIN ? 0 : (int)rc;
    cm_log_sparse(1000, CM_LOG_WARNING, "xfer", "fabric: domain %d: op failed: %s (prov %d)",
                  d->index, fi_strerror(e.err), e.prov_errno);
    atomic_fetch_add_explicit(&d->efa->st.op_errors, 1, memory_order_relaxed);
    if (e.op_context)
        xfer_efa_complete(e.op_context, -CM_ETRANSFER_FAIL);
    return 1;
}

/*
 * Reads and dispatches whatever completions are ready (no waiting). Used by the progress
 * thread and by posters under -FI_EAGAIN backpressure. Returns the number of completions
 * handled (>= 0) or a negative libfabric code. Thread-safe (FI_THREAD_SAFE domain).
 */
int xfer_efa__cq_drive(struct xfer_efa_domain *d) {
    struct fi_cq_entry ent[XFER_EFA_CQ_BATCH];
    ssize_t n = fi_cq_read(d->cq, ent, XFER_EFA_CQ_BATCH);
    if (n > 0) {
        for (ssize_t i = 0; i < n; i++)
            xfer_efa_complete(ent[i].op_context, 0);
        return (int)n;
    }
    if (n == -FI_EAVAIL)
        return xfer_efa_read_err(d);
    return n == -FI_EAGAIN ? 0 : (int)n;
}

/* Expires in-flight ops whose deadline passed: their callback runs with -ETIMEDOUT now. */
static void xfer_efa_expire(struct xfer_efa_domain *d, uint64_t now) {
    for (;;) {
        xfer_efa_op_cb *cb = NULL;
        void *cb_arg = NULL;
        pthread_mutex_lock(&d->op_lock);
        for (struct xfer_efa_op *op = d->inflight.next; op != &d->inflight; op = op->next) {
            if (op->deadline_ns && op->deadline_ns <= now &&
                atomic_load_explicit(&op->accounted, memory_order_acquire) == 0 &&
                atomic_exchange_explicit(&op->accounted, 1, memory_order_acq_rel) == 0) {
                cb = op->cb; /* copied under the lock: a late completion may recycle op */
                cb_arg = op->arg;
                break;
            }
        }
        pthread_mutex_unlock(&d->op_lock);
        if (!cb)
            return;
        /* The op stays linked (the provider still owns its context); only the task moves on. */
        atomic_fetch_add_explicit(&d->efa->st.expired, 1, memory_order_relaxed);
        cb(cb_arg, -ETIMEDOUT);
    }
}

static void *xfer_efa_progress_main(void *arg) {
    struct xfer_efa_domain *d = arg;
    uint64_t next_scan = cm_mono_ns() + XFER_EFA_DEADLINE_SCAN_NS;
    unsigned idle = 0;

    while (!atomic_load_explicit(&d->stop, memory_order_acquire)) {
        ssize_t n;
        int busy = d->efa->cfg.busy_poll &&
                   (atomic_load_explicit(&d->n_inflight, memory_order_acquire) > 0 || idle < 64);
        long inflight = atomic_load_explicit(&d->n_inflight, memory_order_acquire);
        if (atomic_load_explicit(&d->pollers, memory_order_acquire) > 0 ||
            (inflight == 0 && !busy &&
             cm_mono_ns() - atomic_load_explicit(&d->last_inline_ns, memory_order_relaxed) <
                 XFER_EFA_INLINE_GRACE_NS)) {
            /* A submitter is reaping its own completions (or just did and will again): do not
             * sleep on the descriptor, where every completion would wake this thread too; nap
             * and sweep. Outstanding ops nobody polls for go to the descriptor wait below. */
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
            n = xfer_efa__cq_drive(d);
        } else if (busy || d->no_wait) {
            n = xfer_efa__cq_drive(d);
            idle = n > 0 ? 0 : idle + 1;
            if (n == 0 && d->no_wait && idle > 64) {
                /* Back off from 20 us to XFER_EFA_IDLE_WAIT_MS while nothing happens. */
                long us = 20L << (idle - 64 < 6 ? idle - 64 : 6);
                struct timespec ts = {0, 1000L * (us < 1000L * XFER_EFA_IDLE_WAIT_MS
                                                      ? us
                                                      : 1000L * XFER_EFA_IDLE_WAIT_MS)};
                nanosleep(&ts, NULL);
            } else if (n == 0 && idle > 16) {
                sched_yield();
            }
        } else {
            n = xfer_efa__cq_drive(d);
            if (n > 0) {
                idle = 0;
            } else {
                struct fid *fids[1] = {&d->cq->fid};
                if (fi_trywait(d->fabric, fids, 1) == FI_SUCCESS) {
                    struct pollfd p = {.fd = d->wait_fd, .events = POLLIN};
                    poll(&p, 1, XFER_EFA_IDLE_WAIT_MS);
                }
            }
        }
        uint64_t now = cm_mono_ns();
        if (now >= next_scan) {
            xfer_efa_expire(d, now);
            next_scan = now + XFER_EFA_DEADLINE_SCAN_NS;
        }
    }
    return NULL;
}

/* Starts the domain's progress thread. Returns 0 or -errno. Not thread-safe. */
int xfer_efa__progress_start(struct xfer_efa_domain *d) {
    atomic_store(&d->stop, 0);
    int rc = pthread_create(&d->thread, NULL, xfer_efa_progress_main, d);
    if (rc)
        return -rc;
    d->thread_started = 1;
    return 0;
}

/* Stops and joins the progress thread (within one idle wait). Not thread-safe. */
void xfer_efa__progress_stop(struct xfer_efa_domain *d) {
    if (!d->thread_started)
        return;
    atomic_store_explicit(&d->stop, 1, memory_order_release);
    pthread_join(d->thread, NULL);
    d->thread_started = 0;
}

/*
 * Frees every op context after the endpoint closed: ops still in flight are failed (their
 * callbacks run with -ECANCELED if they have not run yet), then the pool is emptied. Not
 * thread-safe; the progress thread must be stopped.
 */
void xfer_efa__ops_release(struct xfer_efa_domain *d) {
    while (d->inflight.next && d->inflight.next != &d->inflight)
        xfer_efa_complete(d->inflight.next, -ECANCELED);
    while (d->free_ops) {
        struct xfer_efa_op *op = d->free_ops;
        d->free_ops = op->next;
        cm_free(op);
    }
}
