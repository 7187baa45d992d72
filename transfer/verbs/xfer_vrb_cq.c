// SPDX-License-Identifier: Apache-2.0
/*
 * rdma transport: per-context worker threads. The completion worker polls the context CQ,
 * completes slices (an error status breaks the endpoint and fails the slice over) and expires
 * slices whose task deadline passed. The async-event worker reads ibv_get_async_event: port
 * error or fatal device => context inactive (endpoints disconnected, in-flight slices failed
 * over or failed); port active => usable again; QP fatal => that endpoint is broken.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_time.h"
#include "transfer/verbs/xfer_vrb.h"

#define XFER_VRB_POLL_BATCH    64
#define XFER_VRB_SCAN_NS       (20ull * 1000 * 1000)
#define XFER_VRB_EVENT_POLL_MS 50

/* Accounts unaccounted slices of c whose task deadline passed (-ETIMEDOUT, no fail-over). */
static void xfer_vrb_expire(struct xfer_vrb_ctx *c, uint64_t now) {
    for (;;) {
        struct xfer_task *t = NULL;
        pthread_mutex_lock(&c->sl_lock);
        for (struct xfer_vrb_slice *sl = c->inflight.next; sl != &c->inflight; sl = sl->next) {
            if (!atomic_load(&sl->accounted) && sl->task->deadline_ns <= now &&
                atomic_exchange(&sl->accounted, 1) == 0) {
                t = sl->task; /* the slice stays linked until its completion arrives */
                break;
            }
        }
        pthread_mutex_unlock(&c->sl_lock);
        if (!t)
            return;
        uint64_t zero = 0;
        __atomic_compare_exchange_n(&t->tp_u64[1], &zero, (uint64_t)(int64_t)-ETIMEDOUT, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        if (__atomic_sub_fetch(&t->tp_u64[0], 1, __ATOMIC_ACQ_REL) == 0) {
            int err = (int)(int64_t)__atomic_load_n(&t->tp_u64[1], __ATOMIC_ACQUIRE);
            xfer__task_done(t, err, err ? 0 : t->len);
        }
    }
}

static void *xfer_vrb_cq_main(void *arg) {
    struct xfer_vrb_ctx *c = arg;
    struct ibv_wc wc[XFER_VRB_POLL_BATCH];
    uint64_t next_scan = cm_mono_ns() + XFER_VRB_SCAN_NS;
    unsigned idle = 0;

    while (!atomic_load(&c->stop)) {
        int n = xfer_vrb__sys_poll_cq(c->cq, XFER_VRB_POLL_BATCH, wc);
        if (n > 0) {
            idle = 0;
            for (int i = 0; i < n; i++) {
                struct xfer_vrb_slice *sl = (struct xfer_vrb_slice *)(uintptr_t)wc[i].wr_id;
                int err = 0;
                if (wc[i].status != IBV_WC_SUCCESS) {
                    cm_log_sparse(1000, CM_LOG_WARNING, "xfer",
                                  "rdma: %s: work completion status %d (vendor 0x%x)", c->name,
                                  (int)wc[i].status, wc[i].vendor_err);
                    err = -CM_ETRANSFER_FAIL;
                }
                if (sl)
                    xfer_vrb__slice_done(sl, err);
            }
        } else if (n < 0) {
            xfer_vrb__ctx_deactivate(c, "CQ poll failed");
            cm_sleep_ms(10);
        } else if (++idle > 256) {
            struct timespec ts = {0, idle > 4096 ? 1000000 : 20000};
            nanosleep(&ts, NULL);
        } else if (idle > 32) {
            sched_yield();
        }
        uint64_t now = cm_mono_ns();
        if (now >= next_scan) {
            xfer_vrb_expire(c, now);
            next_scan = now + XFER_VRB_SCAN_NS;
        }
    }
    return NULL;
}

/*
 * Applies one async event to context c (called by the event worker; tests call it directly
 * too). Thread-safe.
 */
void xfer_vrb__handle_async(struct xfer_vrb_ctx *c, const struct ibv_async_event *ev) {
    atomic_fetch_add(&c->vrb->st.async_events, 1);
    switch (ev->event_type) {
    case IBV_EVENT_PORT_ERR:
        xfer_vrb__ctx_deactivate(c, "port down (IBV_EVENT_PORT_ERR)");
        break;
    case IBV_EVENT_DEVICE_FATAL:
        xfer_vrb__ctx_deactivate(c, "fatal device error (IBV_EVENT_DEVICE_FATAL)");
        break;
    case IBV_EVENT_PORT_ACTIVE:
        if (!atomic_exchange(&c->active, 1))
            cm_log(CM_LOG_NOTICE, "xfer", "rdma: %s active again", c->name);
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
        xfer_vrb__ep_break(c, ev->element.qp);
        break;
    default:
        break;
    }
}

static void *xfer_vrb_event_main(void *arg) {
    struct xfer_vrb_ctx *c = arg;
    int fd = c->ibv->async_fd;
    int fl = fcntl(fd, F_GETFL);

    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    while (!atomic_load(&c->stop)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, XFER_VRB_EVENT_POLL_MS) <= 0)
            continue;
        struct ibv_async_event ev;
        while (!atomic_load(&c->stop) && ibv_get_async_event(c->ibv, &ev) == 0) {
            xfer_vrb__handle_async(c, &ev);
            ibv_ack_async_event(&ev);
        }
    }
    return NULL;
}

/* Starts the completion and async-event workers of c. Returns 0 or -errno. Not thread-safe. */
int xfer_vrb__workers_start(struct xfer_vrb_ctx *c) {
    int rc;
    atomic_store(&c->stop, 0);
    if ((rc = pthread_create(&c->cq_thread, NULL, xfer_vrb_cq_main, c)))
        return -rc;
    c->threads = 1;
    if ((rc = pthread_create(&c->ev_thread, NULL, xfer_vrb_event_main, c)))
        return -rc;
    c->threads = 2;
    return 0;
}

/* Stops and joins the workers of c (within one poll interval). Not thread-safe. */
void xfer_vrb__workers_stop(struct xfer_vrb_ctx *c) {
    atomic_store(&c->stop, 1);
    if (c->threads >= 1)
        pthread_join(c->cq_thread, NULL);
    if (c->threads >= 2)
        pthread_join(c->ev_thread, NULL);
    c->threads = 0;
}
