// SPDX-License-Identifier: Apache-2.0
/*
 * rdma transport: the data path. A task is cut into slices of at most MC_SLICE_SIZE bytes,
 * one signaled RDMA WRITE/READ work request each, posted in chains of XFER_VRB_POST_CHAIN while
 * the QP has send-queue room. Each slice is accounted exactly once (completion, error, deadline
 * or context failure); a failed slice is re-posted once on another active context when the
 * deadline allows (fail-over), otherwise its task fails.
 *
 * Task accounting uses the task scratch: tp_u64[0] = outstanding slices + 1 submit reference,
 * tp_u64[1] = first error (updated with __atomic builtins; they are plain core fields).
 */
#include "common/fmacros.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "transfer/verbs/xfer_vrb.h"

static void xfer_vrb_task_put(struct xfer_task *t) {
    if (__atomic_sub_fetch(&t->tp_u64[0], 1, __ATOMIC_ACQ_REL) == 0) {
        int err = (int)(int64_t)__atomic_load_n(&t->tp_u64[1], __ATOMIC_ACQUIRE);
        xfer__task_done(t, err, err ? 0 : t->len);
    }
}

static void xfer_vrb_task_error(struct xfer_task *t, int err) {
    uint64_t zero = 0;
    __atomic_compare_exchange_n(&t->tp_u64[1], &zero, (uint64_t)(int64_t)err, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
}

static struct xfer_vrb_slice *xfer_vrb_slice_get(struct xfer_vrb *v) {
    pthread_mutex_lock(&v->pool_lock);
    struct xfer_vrb_slice *sl = v->free_slices;
    if (sl)
        v->free_slices = sl->next;
    pthread_mutex_unlock(&v->pool_lock);
    if (!sl && !(sl = cm_try_malloc(sizeof(*sl))))
        return NULL;
    memset(sl, 0, sizeof(*sl));
    atomic_init(&sl->accounted, 0);
    return sl;
}

static void xfer_vrb_slice_free(struct xfer_vrb *v, struct xfer_vrb_slice *sl) {
    pthread_mutex_lock(&v->pool_lock);
    sl->next = v->free_slices;
    v->free_slices = sl;
    pthread_mutex_unlock(&v->pool_lock);
}

static void xfer_vrb_link(struct xfer_vrb_ctx *c, struct xfer_vrb_slice *sl) {
    pthread_mutex_lock(&c->sl_lock);
    sl->next = c->inflight.next;
    sl->prev = &c->inflight;
    c->inflight.next->prev = sl;
    c->inflight.next = sl;
    pthread_mutex_unlock(&c->sl_lock);
}

static void xfer_vrb_unlink(struct xfer_vrb_ctx *c, struct xfer_vrb_slice *sl) {
    pthread_mutex_lock(&c->sl_lock);
    sl->prev->next = sl->next;
    sl->next->prev = sl->prev;
    sl->next = sl->prev = NULL;
    pthread_mutex_unlock(&c->sl_lock);
}

static int xfer_vrb_post_range(struct xfer_vrb *v, struct xfer_task *t, int ci, uint64_t off,
                               uint64_t len, int retries);

/*
 * Tells the task about one slice: success, or failure that is failed over once to another
 * active context when the deadline allows. Called once per slice (guarded by accounted).
 */
static void xfer_vrb_account(struct xfer_vrb *v, struct xfer_vrb_slice *sl, int err) {
    struct xfer_task *t = sl->task;
    if (atomic_exchange(&sl->accounted, 1))
        return;
    if (err && err != -ETIMEDOUT && sl->retries < 1 && cm_mono_ns() < t->deadline_ns &&
        !atomic_load(&sl->ctx->stop)) {
        int ci = xfer_vrb__pick_ctx(v, sl->ctx->index);
        if (ci >= 0 && xfer_vrb_post_range(v, t, ci, sl->off, sl->len, sl->retries + 1) == 0) {
            atomic_fetch_add(&v->st.slices_failed_over, 1);
            xfer_vrb_task_put(t);
            return;
        }
    }
    if (err) {
        atomic_fetch_add(&v->st.slices_failed, 1);
        xfer_vrb_task_error(t, err);
    }
    xfer_vrb_task_put(t);
}

/*
 * Completion of one posted slice (CQ worker, or the close path): unlinks it, releases its
 * send-queue slot and endpoint reference, accounts it unless already accounted, and frees it.
 * A failure breaks the endpoint (the QP is in the error state). Thread-safe.
 */
void xfer_vrb__slice_done(struct xfer_vrb_slice *sl, int err) {
    struct xfer_vrb_ctx *c = sl->ctx;
    struct xfer_vrb *v = c->vrb;
    xfer_vrb_unlink(c, sl);
    if (sl->ep) {
        atomic_fetch_sub(&sl->ep->wr_inflight, 1);
        if (err)
            atomic_store(&sl->ep->state, XFER_VRB_EP_BROKEN);
        xfer_vrb__ep_put(sl->ep);
        sl->ep = NULL;
    }
    xfer_vrb_account(v, sl, err);
    xfer_vrb_slice_free(v, sl);
}

/* Waits for send-queue room for want WRs on ep; returns how many may be posted, or < 0. */
static int xfer_vrb_room(struct xfer_vrb_ep *ep, int want, uint64_t deadline) {
    unsigned spins = 0;
    for (;;) {
        int room = ep->ctx->max_wr - atomic_load(&ep->wr_inflight);
        if (atomic_load(&ep->state) != XFER_VRB_EP_CONNECTED)
            return -CM_ETRANSFER_FAIL;
        if (room > 0)
            return room < want ? room : want;
        if (cm_mono_ns() >= deadline)
            return -ETIMEDOUT;
        if (++spins > 64)
            sched_yield();
    }
}

/* Fails slices [i, n) of a chain that was never posted (they were linked, counted, ref'd). */
static void xfer_vrb_fail_unposted(struct xfer_vrb_slice **sls, int i, int n, int err) {
    for (; i < n; i++)
        xfer_vrb__slice_done(sls[i], err);
}

/* Posts [off, off+len) of t on context ci as slices; failures are accounted per slice. */
static int xfer_vrb_post_range(struct xfer_vrb *v, struct xfer_task *t, int ci, uint64_t off,
                               uint64_t len, int retries) {
    struct xfer_vrb_seg *s = t->tp_seg;
    struct xfer_vrb_ctx *c = &v->ctx[ci];
    uint32_t rkeys[XFER_VRB_MAX_DEVICES];
    struct xfer_vrb_ep *ep;
    int pd = ci % s->peer_n, rc;

    if (xfer_vrb__key_decode(t->rbuf->key[s->tp_index], t->rbuf->key_len[s->tp_index], rkeys,
                             XFER_VRB_MAX_DEVICES) != s->peer_n)
        return -CM_EINVALID_PARAMS;
    if ((rc = xfer_vrb__ep_get(s, c, pd, t->deadline_ns, &ep)))
        return rc;
    pd = ep->peer_dev;
    uint32_t lkey = xfer_vrb__lkey(v->tp, t->lmr, ci);
    uint64_t end = off + len;
    while (off < end) {
        struct ibv_send_wr wr[XFER_VRB_POST_CHAIN], *bad = NULL;
        struct ibv_sge sge[XFER_VRB_POST_CHAIN];
        struct xfer_vrb_slice *sls[XFER_VRB_POST_CHAIN];
        uint64_t left = (end - off + v->slice_size - 1) / v->slice_size;
        int n = xfer_vrb_room(ep, left < XFER_VRB_POST_CHAIN ? (int)left : XFER_VRB_POST_CHAIN,
                              t->deadline_ns);
        if (n < 0) {
            rc = n;
            break;
        }
        int k = 0;
        for (; k < n; k++) {
            struct xfer_vrb_slice *sl = xfer_vrb_slice_get(v);
            if (!sl)
                break;
            uint64_t l = end - off < v->slice_size ? end - off : v->slice_size;
            sl->ctx = c;
            sl->ep = ep;
            sl->task = t;
            sl->off = off;
            sl->len = (uint32_t)l;
            sl->retries = retries;
            atomic_fetch_add(&ep->refs, 1);
            atomic_fetch_add(&ep->wr_inflight, 1);
            __atomic_add_fetch(&t->tp_u64[0], 1, __ATOMIC_ACQ_REL);
            xfer_vrb_link(c, sl);
            sls[k] = sl;
            sge[k] =
                (struct ibv_sge){(uint64_t)(uintptr_t)((char *)t->local + off), (uint32_t)l, lkey};
            memset(&wr[k], 0, sizeof(wr[k]));
            wr[k].wr_id = (uint64_t)(uintptr_t)sl;
            wr[k].sg_list = &sge[k];
            wr[k].num_sge = 1;
            wr[k].opcode = t->op == XFER_OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
            wr[k].send_flags = IBV_SEND_SIGNALED;
            wr[k].wr.rdma.remote_addr = t->remote + off;
            wr[k].wr.rdma.rkey = rkeys[pd];
            wr[k].next = NULL;
            if (k > 0)
                wr[k - 1].next = &wr[k];
            off += l;
        }
        if (k == 0) {
            rc = -ENOMEM;
            break;
        }
        pthread_mutex_lock(&ep->post_lock);
        int prc = xfer_vrb__sys_post_send(ep->qp, wr, &bad);
        pthread_mutex_unlock(&ep->post_lock);
        atomic_fetch_add(&v->st.slices_posted, (unsigned long)k);
        if (prc) {
            int first = bad ? (int)(bad - wr) : 0;
            cm_log_sparse(1000, CM_LOG_WARNING, "xfer", "rdma: ibv_post_send on %s: %s", c->name,
                          strerror(prc));
            atomic_store(&ep->state, XFER_VRB_EP_BROKEN);
            xfer_vrb_fail_unposted(sls, first < 0 || first > k ? 0 : first, k, -CM_ETRANSFER_FAIL);
            break;
        }
        if (k < n) {
            rc = -ENOMEM;
            break;
        }
    }
    xfer_vrb__ep_put(ep);
    if (rc && off < end) {
        /* The rest was never sliced: account it as one failed piece of the task. */
        xfer_vrb_task_error(t, rc);
    }
    return 0;
}

static void xfer_vrb_submit_one(struct xfer_vrb *v, struct xfer_task *t) {
    struct xfer_vrb_seg *s = t->tp_seg;
    int rc = 0;

    t->tp_u64[0] = 1;
    t->tp_u64[1] = 0;
    if (t->len == 0)
        goto out;
    if (!t->lmr || xfer_vrb__lkey(v->tp, t->lmr, 0) == 0) {
        rc = -CM_EINVALID_PARAMS; /* RDMA needs registered local memory */
        goto out;
    }
    int ci = xfer_vrb__pick_ctx(v, -1);
    if (ci < 0) {
        rc = -CM_ENO_DEVICE;
        goto out;
    }
    rc = xfer_vrb_post_range(v, t, ci, 0, t->len, 0);
    if (rc && rc != -CM_EINVALID_PARAMS) {
        /* Could not even connect through ci: try one other context before giving up. */
        int alt = xfer_vrb__pick_ctx(v, ci);
        if (alt >= 0 && cm_mono_ns() < t->deadline_ns)
            rc = xfer_vrb_post_range(v, t, alt, 0, t->len, 1);
    }
    (void)s;
out:
    if (rc)
        xfer_vrb_task_error(t, rc);
    xfer_vrb_task_put(t);
}

/*
 * submit op: takes every task; each completes exactly once via xfer__task_done. Returns 0.
 * Thread-safe.
 */
int xfer_vrb__submit(struct xfer_transport *tp, struct xfer_task **tasks, size_t n) {
    struct xfer_vrb *v = tp->ctx;
    for (size_t i = 0; i < n; i++)
        xfer_vrb_submit_one(v, tasks[i]);
    return 0;
}

/*
 * Accounts every unaccounted in-flight slice of context c as failed (fail-over applies), after
 * the context went inactive. The slices stay linked until their flush completions arrive (or
 * the context closes). Thread-safe.
 */
void xfer_vrb__slices_fail_ctx(struct xfer_vrb_ctx *c) {
    for (;;) {
        struct xfer_vrb_slice *hit = NULL;
        pthread_mutex_lock(&c->sl_lock);
        for (struct xfer_vrb_slice *sl = c->inflight.next; sl && sl != &c->inflight;
             sl = sl->next) {
            if (!atomic_load(&sl->accounted)) {
                hit = sl;
                break;
            }
        }
        if (hit) {
            /* Account outside the lock through a stand-in, since the real slice may complete
             * (and be recycled) concurrently once we unlock. */
            struct xfer_vrb_slice copy = *hit;
            int won = atomic_exchange(&hit->accounted, 1) == 0;
            pthread_mutex_unlock(&c->sl_lock);
            if (won) {
                atomic_init(&copy.accounted, 0);
                xfer_vrb_account(c->vrb, &copy, -CM_ETRANSFER_FAIL);
            }
            continue;
        }
        pthread_mutex_unlock(&c->sl_lock);
        return;
    }
}

/*
 * Context close: completes every slice still linked on c (their work requests die with the
 * QPs) and returns them to the pool. Not thread-safe; the CQ worker is stopped.
 */
void xfer_vrb__slices_drop(struct xfer_vrb_ctx *c) {
    while (c->inflight.next && c->inflight.next != &c->inflight)
        xfer_vrb__slice_done(c->inflight.next, -ECANCELED);
}

/* Frees the slice pool after every context closed. Not thread-safe (uninstall). */
void xfer_vrb__slices_release(struct xfer_vrb *v) {
    while (v->free_slices) {
        struct xfer_vrb_slice *sl = v->free_slices;
        v->free_slices = sl->next;
        cm_free(sl);
    }
}
