// SPDX-License-Identifier: Apache-2.0
/*
 * fabric transport: RDM endpoints and the data path. submit() turns each task into one
 * fi_write/fi_read (at most stripe_threshold bytes, on a round-robin domain) or into one chunk
 * per domain (striping); posts are serialized per endpoint and -FI_EAGAIN is backpressure
 * (drive the CQ, retry until the task deadline). A task completes when its last op does.
 *
 * Per-task accounting lives in the task's transport scratch: tp_u64[0] counts outstanding ops
 * plus one submit reference, tp_u64[1] holds the first error. They are plain uint64_t fields
 * of the core's struct, so they are updated with the __atomic builtins.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_time.h"
#include "transfer/efa/xfer_efa.h"

/*
 * Creates domain d's RDM endpoint, binds its AV and CQ, enables it and records its address
 * (fi_getname) for the endpoint blob. Returns 0 or a negative libfabric code. Not thread-safe.
 */
int xfer_efa__ep_open(struct xfer_efa_domain *d) {
    int rc;

    if ((rc = fi_endpoint(d->domain, d->info, &d->ep, NULL)))
        return rc;
    if ((rc = fi_ep_bind(d->ep, &d->av->fid, 0)) ||
        (rc = fi_ep_bind(d->ep, &d->cq->fid, FI_TRANSMIT | FI_RECV)) || (rc = fi_enable(d->ep)))
        return rc;
    d->name_len = sizeof(d->name);
    if ((rc = fi_getname(&d->ep->fid, d->name, &d->name_len)))
        return rc;
    if (d->name_len == 0 || d->name_len > XFER_EFA_NAME_MAX)
        return -FI_ETOOSMALL;
    return 0;
}

/*
 * Posts op (op->len bytes) as an fi_write or fi_read on its domain's endpoint, holding the
 * endpoint lock for the call. -FI_EAGAIN is backpressure: the CQ is driven and the post retried
 * until op->deadline_ns. Returns 0 when the provider took the op (its callback will run), or
 * -ETIMEDOUT / -CM_ETRANSFER_FAIL when it did not (the caller aborts the op). Thread-safe.
 */
int xfer_efa__post(struct xfer_efa_op *op, enum xfer_op opcode, void *local, void *desc,
                   fi_addr_t dest, uint64_t raddr, uint64_t rkey) {
    struct xfer_efa_domain *d = op->dom;
    unsigned spins = 0;

    for (;;) {
        ssize_t rc;
        pthread_mutex_lock(&d->ep_lock);
        if (opcode == XFER_OP_WRITE)
            rc = fi_write(d->ep, local, op->len, desc, dest, raddr, rkey, &op->fi_ctx);
        else
            rc = fi_read(d->ep, local, op->len, desc, dest, raddr, rkey, &op->fi_ctx);
        pthread_mutex_unlock(&d->ep_lock);
        if (rc == 0) {
            atomic_fetch_add_explicit(&d->efa->st.ops_posted, 1, memory_order_relaxed);
            return 0;
        }
        if (rc == -FI_EAGAIN)
            atomic_fetch_add_explicit(&d->efa->st.eagain, 1, memory_order_relaxed);
        if (rc != -FI_EAGAIN) {
            cm_log_sparse(1000, CM_LOG_WARNING, "xfer", "fabric: fi_%s on domain %d: %s",
                          opcode == XFER_OP_WRITE ? "write" : "read", d->index,
                          fi_strerror((int)-rc));
            return -CM_ETRANSFER_FAIL;
        }
        if (xfer_efa__cq_drive(d) == 0 && ++spins > 64)
            sched_yield();
        if (op->deadline_ns && cm_mono_ns() >= op->deadline_ns)
            return -ETIMEDOUT;
    }
}

/* Drops one reference of task t; the last one completes it with the first recorded error. */
static void xfer_efa_task_put(struct xfer_task *t) {
    if (__atomic_sub_fetch(&t->tp_u64[0], 1, __ATOMIC_ACQ_REL) == 0) {
        int err = (int)(int64_t)__atomic_load_n(&t->tp_u64[1], __ATOMIC_ACQUIRE);
        xfer__task_done(t, err, err ? 0 : t->len);
    }
}

static void xfer_efa_task_error(struct xfer_task *t, int err) {
    uint64_t zero = 0;
    __atomic_compare_exchange_n(&t->tp_u64[1], &zero, (uint64_t)(int64_t)err, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
}

static void xfer_efa_task_op_done(void *arg, int err) {
    struct xfer_task *t = arg;
    if (err)
        xfer_efa_task_error(t, err);
    xfer_efa_task_put(t);
}

/* Posts [off, off+len) of task t on local domain ld towards peer domain pd. */
static int xfer_efa_post_chunk(struct xfer_efa_seg *s, struct xfer_task *t, const uint64_t *rkeys,
                               int ld, int pd, uint64_t off, uint64_t len) {
    struct xfer_efa *efa = s->efa;
    struct xfer_efa_domain *d = &efa->dom[ld];
    struct xfer_efa_mr *m = t->lmr ? t->lmr->tp_priv[efa->tp->slot] : NULL;
    void *local = (char *)t->local + off;
    void *desc = m ? m->desc[ld] : NULL;
    fi_addr_t dest;
    int rc;

    if ((rc = xfer_efa__av_resolve(s, ld, pd, &dest)))
        return rc;
    struct xfer_efa_op *op = xfer_efa__op_get(d, xfer_efa_task_op_done, t, len, t->deadline_ns);
    if (!op)
        return -ENOMEM;
    if (!m && (d->mr_mode & (FI_MR_LOCAL | FI_MR_HMEM))) {
        /* Unregistered local buffer on a provider that needs local keys (for all memory, or
         * for device memory with FI_MR_HMEM): register it for the duration of this op.
         * Registered buffers avoid this cost. */
        char loc[XFER_LOC_MAX];
        xfer__mem_location(local, loc, sizeof(loc));
        if ((d->mr_mode & FI_MR_LOCAL) || strncmp(loc, "cuda:", 5) == 0) {
            rc = xfer_efa__mr_reg(d, local, len, FI_READ | FI_WRITE, loc, &op->tmp_mr);
            if (rc) {
                xfer_efa__op_abort(op);
                return rc == -CM_ENOT_SUPPORTED ? rc : -CM_ETRANSFER_FAIL;
            }
            desc = fi_mr_desc(op->tmp_mr);
        }
    }
    uint64_t raddr = t->remote + off - (s->peer_virt ? 0 : t->rbuf->addr);
    __atomic_add_fetch(&t->tp_u64[0], 1, __ATOMIC_ACQ_REL);
    rc = xfer_efa__post(op, t->op, local, desc, dest, raddr, rkeys[pd]);
    if (rc) {
        xfer_efa__op_abort(op);
        __atomic_sub_fetch(&t->tp_u64[0], 1, __ATOMIC_ACQ_REL); /* the submit ref remains */
    }
    return rc;
}

/* Posts one task: one op, or a stripe across all domains; each op within max_msg_size. */
static void xfer_efa_submit_one(struct xfer_efa *efa, struct xfer_task *t) {
    struct xfer_efa_seg *s = t->tp_seg;
    uint64_t rkeys[XFER_EFA_MAX_DOMAINS];
    int rc = 0;

    t->tp_u64[0] = 1; /* the submit reference */
    t->tp_u64[1] = 0;
    if (t->len == 0) {
        xfer_efa_task_put(t);
        return;
    }
    if (xfer_efa__key_decode(t->rbuf->key[s->tp_index], t->rbuf->key_len[s->tp_index], rkeys,
                             XFER_EFA_MAX_DOMAINS) != s->peer_n) {
        xfer_efa_task_error(t, -CM_EINVALID_PARAMS);
        xfer_efa_task_put(t);
        return;
    }
    int stripes = t->len > efa->cfg.stripe_threshold ? efa->n_dom : 1;
    if (stripes > 1)
        atomic_fetch_add_explicit(&efa->st.striped, 1, memory_order_relaxed);
    int first = stripes > 1 ? 0 : (int)(atomic_fetch_add(&efa->rr, 1) % (unsigned)efa->n_dom);
    uint64_t chunk = (t->len + (uint64_t)stripes - 1) / (uint64_t)stripes;
    chunk = (chunk + XFER_EFA_STRIPE_ALIGN - 1) & ~(uint64_t)(XFER_EFA_STRIPE_ALIGN - 1);
    uint64_t off = 0;
    for (int i = 0; off < t->len && !rc; i++) {
        int ld = (first + i) % efa->n_dom;
        uint64_t end = off + chunk < t->len ? off + chunk : t->len;
        while (off < end && !rc) {
            uint64_t len = end - off;
            if (len > efa->dom[ld].max_msg)
                len = efa->dom[ld].max_msg;
            rc = xfer_efa_post_chunk(s, t, rkeys, ld, ld % s->peer_n, off, len);
            off += len;
        }
    }
    if (rc)
        xfer_efa_task_error(t, rc);
    xfer_efa_task_put(t);
}

/*
 * progress op: reaps ready completions on the calling thread (a waiter in xfer_batch_wait) for
 * every domain with ops in flight, flagged as an inline poller so the progress thread naps
 * instead of competing for the CQ and the cores. Returns the ops still in flight. Thread-safe.
 */
int xfer_efa__progress(struct xfer_transport *tp) {
    struct xfer_efa *efa = tp->ctx;
    long busy = 0;
    if (!efa)
        return 0;
    for (int d = 0; d < efa->n_dom; d++) {
        struct xfer_efa_domain *dom = &efa->dom[d];
        if (atomic_load_explicit(&dom->n_inflight, memory_order_acquire) <= 0)
            continue;
        atomic_fetch_add(&dom->pollers, 1);
        xfer_efa__cq_drive(dom);
        atomic_store_explicit(&dom->last_inline_ns, cm_mono_ns(), memory_order_relaxed);
        atomic_fetch_sub(&dom->pollers, 1);
        busy += atomic_load_explicit(&dom->n_inflight, memory_order_acquire);
    }
    return busy > INT32_MAX ? INT32_MAX : (int)busy;
}

/*
 * submit op: takes every task and completes each exactly once through xfer__task_done (from
 * this thread, a progress thread, or the deadline scan). Always returns 0. Thread-safe: any
 * number of threads may submit at once.
 */
int xfer_efa__submit(struct xfer_transport *tp, struct xfer_task **tasks, size_t n) {
    struct xfer_efa *efa = tp->ctx;
    for (size_t i = 0; i < n; i++)
        xfer_efa_submit_one(efa, tasks[i]);
    /* Inline polling: a small transfer often completes within microseconds; reaping it on
     * this thread saves the hand-off through the progress thread and the waiter's wake-up. */
    if (efa->cfg.inline_poll_ns) {
        uint64_t end = cm_mono_ns() + efa->cfg.inline_poll_ns;
        for (int d = 0; d < efa->n_dom; d++)
            atomic_fetch_add(&efa->dom[d].pollers, 1);
        for (;;) {
            long busy = 0;
            for (int d = 0; d < efa->n_dom; d++) {
                if (atomic_load_explicit(&efa->dom[d].n_inflight, memory_order_acquire) > 0) {
                    xfer_efa__cq_drive(&efa->dom[d]);
                    busy += atomic_load_explicit(&efa->dom[d].n_inflight, memory_order_acquire);
                }
            }
            if (busy == 0 || cm_mono_ns() >= end)
                break;
        }
        uint64_t now = cm_mono_ns();
        for (int d = 0; d < efa->n_dom; d++) {
            atomic_store_explicit(&efa->dom[d].last_inline_ns, now, memory_order_relaxed);
            atomic_fetch_sub(&efa->dom[d].pollers, 1);
        }
    }
    return 0;
}
