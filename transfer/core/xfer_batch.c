/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Batches: task slots, submission to transports, completion, status, wait.
 *
 * DESIGN
 *   Each task moves PENDING -> terminal exactly once through a compare-and-swap, either by its
 *   transport (xfer__task_done) or by the deadline sweep (TIMEOUT), whichever comes first; the
 *   loser's result is dropped. The batch is reference-counted: one reference for its owner and
 *   one per task a transport holds, so xfer_batch_free never waits and a late completion never
 *   touches freed memory. n_done (under the batch lock) counts terminal tasks.
 *
 *   A completion releases everything the task held (segment reference, batch reference) in the
 *   same critical section that marks it terminal, before waiters are woken: when
 *   xfer_batch_wait returns, the batch is idle (all tasks terminal AND released), so
 *   xfer_batch_reset, xfer_batch_free and xfer_segment_close all succeed at once. A task the
 *   deadline sweep marked TIMEOUT may still be held by its transport (which must give it back
 *   by the same deadline); wait also waits for that release. Every decrement of refs happens
 *   under the batch lock, so the thread that drops the last one can destroy the lock safely.
 */
#include "common/fmacros.h"

#include "transfer/core/xfer_engine_int.h"
#include "transfer/core/xfer_pinned.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* Allocates a batch; see xfer.h. */
int xfer_batch_alloc(struct xfer_engine *eng, size_t capacity, struct xfer_batch **out) {
    *out = NULL;
    if (capacity == 0 || capacity > (1u << 20))
        return -EINVAL;
    /* Only the header is zeroed (zeroing every slot was a twentieth of a small-object batch's
     * instructions): submit marks the slots it reserves WAITING under the lock, and
     * task_prepare fills the rest before the task is dispatched. */
    struct xfer_batch *b = cm_try_malloc(sizeof(*b) + capacity * sizeof(struct xfer_task));
    if (!b)
        return -ENOMEM;
    memset(b, 0, sizeof(*b));
    b->eng = eng;
    b->cap = capacity;
    pthread_mutex_init(&b->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&b->cond, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&b->refs, 1);
    atomic_init(&b->progress_slots, 0);
    *out = b;
    return 0;
}

static void batch_destroy(struct xfer_batch *b) {
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->lock);
    cm_free(b);
}

/* Drops one reference (batch lock not held); the last one frees the batch. */
static void batch_unref(struct xfer_batch *b) {
    pthread_mutex_lock(&b->lock);
    int last = atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1;
    if (!last)
        pthread_cond_broadcast(&b->cond); /* a waiter may be waiting for this release */
    pthread_mutex_unlock(&b->lock);
    if (last)
        batch_destroy(b);
}

/* True when every submitted task is terminal and no transport holds one (batch lock held). */
static int batch_idle(struct xfer_batch *b) {
    return b->n_done == b->n && atomic_load_explicit(&b->refs, memory_order_acquire) == 1;
}

/* Frees a batch, deferred until its last in-flight task completes; see xfer.h. */
void xfer_batch_free(struct xfer_batch *b) {
    if (b)
        batch_unref(b);
}

/*
 * Moves t from PENDING to status st (a no-op when it is terminal already). With release, also
 * drops the batch reference the task's transport held, in the same critical section, so a
 * waiter woken here finds the batch idle; the batch may be freed by this call then (t must not
 * be touched afterwards). Batch lock not held.
 */
static void task_finish(struct xfer_task *t, int st, int err, uint64_t bytes, int release) {
    struct xfer_batch *b = t->batch;
    pthread_mutex_lock(&b->lock);
    int expected = XFER_STATUS_PENDING;
    if (atomic_compare_exchange_strong(&t->status, &expected, st)) {
        t->error = err;
        t->bytes = bytes;
        b->n_done++;
    }
    int last = release && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1;
    if (!last && b->n_done == b->n)
        pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    if (last) /* the owner freed the batch while this task was in flight */
        batch_destroy(b);
}

/* Completes a task taken by a transport; see xfer_int.h. */
void xfer__task_done(struct xfer_task *t, int err, uint64_t bytes) {
    struct xfer_segment *seg = t->seg;
    if (err == 0 && (t->fault_flags & XFER_FAULT_F_CORRUPT))
        err = -EIO;
    int st = err == 0            ? XFER_STATUS_COMPLETED
             : err == -ETIMEDOUT ? XFER_STATUS_TIMEOUT
                                 : XFER_STATUS_FAILED;
    if (err == 0 && cm_mono_ns() > t->deadline_ns)
        st = XFER_STATUS_TIMEOUT, err = -ETIMEDOUT; /* finished, but too late to count */
    /* Segment first: once the task reads terminal, segment_close must not wait for it. */
    xfer__segment_unref(seg);
    task_finish(t, st, err, err == 0 ? bytes : 0, 1);
}

/* The code task t ends with when its transport reports err at time now (as xfer__task_done). */
static inline int task_outcome(const struct xfer_task *t, int err, uint64_t now) {
    if (err == 0 && (t->fault_flags & XFER_FAULT_F_CORRUPT))
        return -EIO;
    if (err == 0 && now > t->deadline_ns)
        return -ETIMEDOUT; /* finished, but too late to count */
    return err;
}

/* Completes a run of tasks; see xfer_int.h. */
void xfer__tasks_done(struct xfer_task *const *t, const int *err, size_t n) {
    uint64_t now = cm_mono_ns();
    for (size_t i = 0, j; i < n; i = j) {
        struct xfer_batch *b = t[i]->batch;
        /* Segments first: once a task reads terminal, segment_close must not wait for it. */
        for (j = i; j < n && t[j]->batch == b; j++)
            xfer__segment_unref(t[j]->seg);
        pthread_mutex_lock(&b->lock);
        for (size_t k = i; k < j; k++) {
            int e = task_outcome(t[k], err[k], now);
            int st = e == 0            ? XFER_STATUS_COMPLETED
                     : e == -ETIMEDOUT ? XFER_STATUS_TIMEOUT
                                       : XFER_STATUS_FAILED;
            int expected = XFER_STATUS_PENDING;
            if (atomic_compare_exchange_strong(&t[k]->status, &expected, st)) {
                t[k]->error = e;
                t[k]->bytes = e == 0 ? t[k]->len : 0;
                b->n_done++;
            }
        }
        long k = (long)(j - i);
        int last = atomic_fetch_sub_explicit(&b->refs, k, memory_order_acq_rel) == k;
        if (!last && b->n_done == b->n)
            pthread_cond_broadcast(&b->cond);
        pthread_mutex_unlock(&b->lock);
        if (last) /* the owner freed the batch while these tasks were in flight */
            batch_destroy(b);
    }
}

/* Copies within this process for a segment opened from our own descriptor (through the CUDA
 * runtime when either side is device memory). */
static int local_copy(struct xfer_task *t) {
    void *r = (void *)(uintptr_t)t->remote;
    if (t->len == 0)
        return 0;
    if (xfer__is_device(t->local) || xfer__is_device(r))
        return t->op == XFER_OP_WRITE ? xfer__cuda_memcpy(r, t->local, t->len)
                                      : xfer__cuda_memcpy(t->local, r, t->len);
    if (t->op == XFER_OP_WRITE)
        memmove((void *)(uintptr_t)t->remote, t->local, t->len);
    else
        memmove(t->local, (const void *)(uintptr_t)t->remote, t->len);
    return 0;
}

/* Fills and validates task t from request r; returns 0 or the INVALID error code. */
/* What the previous request of a submit resolved to; the next one, usually in the same local
 * buffer and the same remote buffer, reuses it after a range check instead of two searches. */
struct submit_hint {
    struct xfer_mr *mr;           /* local registration, or NULL */
    const struct xfer_desc *desc; /* remote descriptor of buf, or NULL */
    int buf;                      /* index of its buffer */
};

/* xfer_desc_find_buf(d, addr, len) through the hint h: the same answer (the last buffer
 * starting at or below addr, when it holds the range), without the search when h's buffer is
 * that one. */
static int find_buf(struct submit_hint *h, const struct xfer_desc *d, uint64_t addr, uint64_t len) {
    if (h->desc == d) {
        const struct xfer_desc_buf *x = &d->buf[h->buf];
        uint64_t off = addr - x->addr;
        if (addr >= x->addr && off <= x->len && len <= x->len - off &&
            ((size_t)h->buf + 1 == d->n_buf || d->buf[h->buf + 1].addr > addr))
            return h->buf;
    }
    int i = xfer_desc_find_buf(d, addr, len);
    if (i >= 0) {
        h->desc = d;
        h->buf = i;
    }
    return i;
}

static int task_prepare(struct xfer_batch *b, struct xfer_task *t, const struct xfer_request *r,
                        uint64_t now, struct submit_hint *h) {
    memset(t, 0, sizeof(*t));
    t->batch = b;
    t->op = r->op;
    t->local = r->local;
    t->remote = r->remote_addr;
    t->len = r->length;
    t->seg = r->seg;
    t->submit_ns = now;
    t->deadline_ns = now + (uint64_t)b->eng->timeout_ms * 1000000ull;
    atomic_init(&t->status, XFER_STATUS_PENDING);
    if (!r->seg || (r->op != XFER_OP_READ && r->op != XFER_OP_WRITE) || (!r->local && r->length))
        return -CM_EINVALID_PARAMS;
    if ((uint64_t)(uintptr_t)r->local + r->length < (uint64_t)(uintptr_t)r->local)
        return -CM_EINVALID_PARAMS;
    t->rbuf_index = find_buf(h, r->seg->desc, t->remote, t->len);
    if (t->rbuf_index < 0)
        return -CM_EINVALID_PARAMS;
    t->rbuf = &r->seg->desc->buf[t->rbuf_index];
    t->tp_seg = r->seg->tp_seg;
    /* The local registration: the previous request's when it holds this one too (a batch of
     * small objects usually sits in one buffer), else looked up. */
    struct xfer_mr *mr = h->mr;
    uint64_t a = (uint64_t)(uintptr_t)r->local;
    if (r->length == 0)
        mr = NULL;
    else if (!mr || a < mr->addr || a - mr->addr > mr->len || r->length > mr->len - (a - mr->addr))
        mr = h->mr = xfer__mr_find(b->eng, r->local, r->length);
    t->lmr = mr;
    return 0;
}

/* Hands tasks[0..n) (all for transport tp) to it, failing them when it refuses. */
static void dispatch(struct xfer_transport *tp, struct xfer_task **tasks, size_t n) {
    struct xfer_batch *b = tasks[0]->batch;
    if (xfer__has_progress(tp)) /* before submit: a waiter may reap these tasks inline */
        atomic_fetch_or_explicit(&b->progress_slots, 1u << tp->slot, memory_order_relaxed);
    int rc = tp->ops->submit(tp, tasks, n);
    if (rc < 0)
        for (size_t i = 0; i < n; i++)
            xfer__task_done(tasks[i], rc, 0);
}

#define SUBMIT_CHUNK 256

/* Submits requests; see xfer.h. */
int xfer_batch_submit(struct xfer_batch *b, const struct xfer_request *reqs, size_t n,
                      size_t *first_id) {
    pthread_mutex_lock(&b->lock);
    if (n > b->cap - b->n) {
        pthread_mutex_unlock(&b->lock);
        return -ENOSPC;
    }
    size_t first = b->n;
    /* Slots are not zeroed at allocation and keep their last status after a reset: mark the
     * reserved ones WAITING before another thread's status or sweep can see them in b->n. */
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&b->tasks[first + i].status, XFER_STATUS_WAITING,
                              memory_order_relaxed);
    b->n += n;
    pthread_mutex_unlock(&b->lock);
    if (first_id)
        *first_id = first;

    uint64_t now = cm_mono_ns();
    struct xfer_task *group[SUBMIT_CHUNK];
    struct xfer_transport *gtp = NULL;
    struct submit_hint hint = {NULL, NULL, 0};
    size_t gn = 0;
    for (size_t i = 0; i < n; i++) {
        struct xfer_task *t = &b->tasks[first + i];
        t->id = (uint32_t)(first + i);
        int rc = task_prepare(b, t, &reqs[i], now, &hint);
        if (rc < 0) {
            t->seg = NULL;
            task_finish(t, XFER_STATUS_INVALID, rc, 0, 0);
            continue;
        }
        atomic_fetch_add_explicit(&t->seg->refs, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
        if (t->len == 0 || t->seg->local) {
            xfer__task_done(t, local_copy(t), t->len);
            continue;
        }
        struct xfer_transport *tp = t->seg->tp;
        if (gn && (tp != gtp || gn == SUBMIT_CHUNK)) {
            dispatch(gtp, group, gn);
            gn = 0;
        }
        gtp = tp;
        group[gn++] = t;
    }
    if (gn)
        dispatch(gtp, group, gn);
    return 0;
}

/* Marks pending tasks past their deadline as TIMEOUT; returns the earliest pending deadline. */
static uint64_t sweep(struct xfer_batch *b, size_t n) {
    uint64_t now = cm_mono_ns(), next = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        struct xfer_task *t = &b->tasks[i];
        if (atomic_load(&t->status) != XFER_STATUS_PENDING)
            continue;
        if (t->deadline_ns <= now)
            task_finish(t, XFER_STATUS_TIMEOUT, -ETIMEDOUT, 0, 0);
        else if (t->deadline_ns < next)
            next = t->deadline_ns;
    }
    return next;
}

/* Reads a task's status; see xfer.h. */
int xfer_batch_status(struct xfer_batch *b, size_t id, struct xfer_task_status *st) {
    pthread_mutex_lock(&b->lock);
    size_t n = b->n;
    pthread_mutex_unlock(&b->lock);
    if (id >= n)
        return -EINVAL;
    struct xfer_task *t = &b->tasks[id];
    unsigned slots = atomic_load_explicit(&b->progress_slots, memory_order_relaxed);
    if (slots && atomic_load(&t->status) == XFER_STATUS_PENDING)
        xfer__engine_progress(b->eng, slots); /* a status poller reaps inline, too */
    if (atomic_load(&t->status) == XFER_STATUS_PENDING && cm_mono_ns() >= t->deadline_ns)
        task_finish(t, XFER_STATUS_TIMEOUT, -ETIMEDOUT, 0, 0);
    pthread_mutex_lock(&b->lock);
    st->status = atomic_load(&t->status);
    st->transferred = t->bytes;
    st->error = t->error;
    pthread_mutex_unlock(&b->lock);
    return 0;
}

/* Empties a finished batch; see xfer.h. */
int xfer_batch_reset(struct xfer_batch *b) {
    pthread_mutex_lock(&b->lock);
    int rc = 0;
    if (!batch_idle(b))
        rc = -EBUSY;
    else
        b->n = b->n_done = 0;
    if (rc == 0)
        atomic_store_explicit(&b->progress_slots, 0, memory_order_relaxed);
    pthread_mutex_unlock(&b->lock);
    return rc;
}

/* Number of tasks submitted; see xfer.h. */
size_t xfer_batch_count(const struct xfer_batch *b) {
    struct xfer_batch *mb = (struct xfer_batch *)b;
    pthread_mutex_lock(&mb->lock);
    size_t n = mb->n;
    pthread_mutex_unlock(&mb->lock);
    return n;
}

/* How long xfer_batch_wait polls transports inline before sleeping (MC_XFER_WAIT_POLL_US,
 * default 1000 us; 0 = never). Read once. */
static uint64_t xfer_wait_poll_ns(void) {
    static _Atomic int64_t cached = -1;
    int64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        v = (int64_t)xfer__env_u64("MC_XFER_WAIT_POLL_US", 1000) * 1000;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return (uint64_t)v;
}

/* Waits for every task to be terminal; see xfer.h. */
int xfer_batch_wait(struct xfer_batch *b, int timeout_ms, size_t *failed_ids, size_t max_failed,
                    size_t *n_failed) {
    uint64_t start = cm_mono_ns();
    uint64_t until = timeout_ms < 0 ? UINT64_MAX : start + (uint64_t)timeout_ms * 1000000ull;
    uint64_t poll_end = start + xfer_wait_poll_ns();
    pthread_mutex_lock(&b->lock);
    for (;;) {
        size_t n = b->n;
        if (batch_idle(b))
            break;
        pthread_mutex_unlock(&b->lock);
        uint64_t next = sweep(b, n);
        /* Inline progress: while transports that can reap on this thread have work in flight,
         * poll them here (up to MC_XFER_WAIT_POLL_US) instead of sleeping until their
         * completion thread wakes us; deadlines are still swept on every pass. */
        unsigned slots = atomic_load_explicit(&b->progress_slots, memory_order_relaxed);
        int outstanding = 0;
        if (slots && cm_mono_ns() < poll_end)
            outstanding = xfer__engine_progress(b->eng, slots);
        pthread_mutex_lock(&b->lock);
        if (batch_idle(b))
            break;
        uint64_t now = cm_mono_ns();
        if (now >= until) {
            pthread_mutex_unlock(&b->lock);
            return -ETIMEDOUT;
        }
        if (outstanding > 0 && now < poll_end && now < next)
            continue; /* b->lock held, as at the loop top */
        if (next <= now)
            continue; /* a deadline passed while polling: sweep it now */
        uint64_t wake = next < until ? next : until;
        if (wake - now > 100000000ull)
            wake = now + 100000000ull; /* re-check at least every 100 ms */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t abs_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + (wake - now);
        ts.tv_sec = (time_t)(abs_ns / 1000000000ull);
        ts.tv_nsec = (long)(abs_ns % 1000000000ull);
        pthread_cond_timedwait(&b->cond, &b->lock, &ts);
    }
    size_t nf = 0, n = b->n;
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&b->tasks[i].status) != XFER_STATUS_COMPLETED) {
            if (failed_ids && nf < max_failed)
                failed_ids[nf] = i;
            nf++;
        }
    pthread_mutex_unlock(&b->lock);
    if (n_failed)
        *n_failed = nf;
    return nf ? -CM_ETRANSFER_FAIL : 0;
}

/* Name of a status; see xfer.h. */
const char *xfer_status_name(int status) {
    static const char *const names[] = {"WAITING",   "PENDING", "INVALID", "CANCELED",
                                        "COMPLETED", "TIMEOUT", "FAILED"};
    return status >= 0 && status <= XFER_STATUS_FAILED ? names[status] : "UNKNOWN";
}
