/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tcp transport. Target side: READ/WRITE requests arrive on the engine listener (opcodes
 * XFER_WIRE_TCP_READ/WRITE); each is bounds-checked against the registered, remote-accessible
 * buffers (anything else is refused and logged, never served) and the payload moves between
 * the connection and the registered buffer (large payloads straight, small ones through the
 * connection's buffers, whose replies go out together; see struct xfer_conn). Initiator side: a
 * pool of worker threads takes tasks from a queue in groups (same peer and direction, up to
 * TCP_GROUP_MAX requests and group_bytes of payload) and runs each group on a pooled connection
 * to the peer (one pool per segment): every request of the group in one sendmsg (gathering the
 * headers and the caller's buffers), then the replies in order through a read buffer (READ
 * payloads of 64 KiB and more straight into the caller's buffer). Every wait is bounded by the
 * task deadline. A batch of 128 small objects thus costs a handful of system calls on each side
 * instead of several per object; the wire format is unchanged.
 *
 * A peer runs at most peer_workers groups at once; its further tasks wait on a list of its own
 * ("parked"), so a stalled peer's backlog, however long, is never scanned again by workers
 * looking for another peer's task.
 *
 * Arguments: workers=N (default MC_TCP_WORKERS or 8), peer_workers=N most workers one peer may
 * occupy (default workers/2, so a stalled peer leaves the others served), max_idle=N idle
 * connections kept per peer (default 16), group_bytes=N most payload bytes in one group
 * (default MC_TCP_GROUP_BYTES or 1 MiB; a larger task still forms a group of its own), so large
 * batches spread over several connections while small objects share one.
 */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include "transfer/core/xfer_pinned.h"

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TCP_MAX_WORKERS 64
/* Most requests a worker sends on one connection before reading the replies. Their headers
 * (40 bytes each; a READ group sends nothing else) must fit in the socket buffers, since the
 * target answers while the initiator is still sending. */
#define TCP_GROUP_MAX 256
/* Reply read buffer of each worker. */
#define TCP_RBUF_CAP (256u << 10)
/* A refused WRITE with at most this much payload is drained to keep the connection. */
#define TCP_DRAIN_MAX (16ull << 20)

/* A FIFO of tasks linked through xfer_task.next. */
struct tcp_queue {
    struct xfer_task *head, *tail;
};

struct tcp_peer {
    char hostport[XFER_HOSTPORT_MAX];
    pthread_mutex_t lock;
    int idle[64]; /* idle connections */
    int n_idle;
    int max_idle;
    /* Under tcp_ctx.lock: */
    int busy;                /* groups being run for this peer */
    struct tcp_queue parked; /* its tasks taken off the queue while it was at peer_cap */
    struct tcp_peer *park_prev, *park_next; /* in tcp_ctx.parked while parked is not empty */
};

struct tcp_ctx {
    struct xfer_transport *tp;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct tcp_queue q;                    /* submitted tasks */
    struct tcp_peer *parked, *parked_tail; /* peers with parked tasks, oldest first */
    int stopping;
    int n_workers;
    int max_idle;
    int peer_cap;         /* most workers one peer may occupy */
    uint64_t group_bytes; /* most payload bytes in one group */
    int serving;          /* listener opcodes claimed */
    pthread_t workers[TCP_MAX_WORKERS];
    atomic_ulong next_id;
};

/* ---- target side ---- */

static int tcp_reply(struct xfer_conn *c, const struct xfer_wire_hdr *req, int32_t status,
                     void *payload, uint64_t len, uint64_t deadline) {
    struct xfer_wire_hdr h = {.op = req->op,
                              .flags = XFER_WIRE_F_REPLY,
                              .status = status,
                              .id = req->id,
                              .addr = req->addr,
                              .len = payload ? len : 0};
    uint8_t hb[XFER_WIRE_HDR_LEN];
    xfer_wire_encode(&h, hb);
    struct iovec v[2] = {{hb, sizeof(hb)}, {payload, (size_t)len}};
    return xfer__conn_write(c, v, payload && len ? 2 : 1, deadline);
}

/* Serves one READ or WRITE on a listener connection; see xfer_serve_cb. */
static int tcp_serve(struct xfer_transport *tp, struct xfer_conn *conn,
                     const struct xfer_wire_hdr *h) {
    struct xfer_engine *eng = tp->eng;
    uint64_t deadline = cm_mono_ns() + (uint64_t)xfer_engine_timeout_ms(eng) * 1000000ull;
    int write = h->op == XFER_WIRE_TCP_WRITE;
    if (h->op != XFER_WIRE_TCP_READ && !write)
        return -CM_EPROTOCOL;
    struct xfer_mr *mr = NULL;
    int rc = xfer__mr_acquire_remote(eng, h->addr, h->len, &mr);
    if (rc < 0) {
        cm_log_sparse(1000, CM_LOG_WARNING, "xfer",
                      "tcp: refused %s of %llu bytes at 0x%llx: not inside a remote-accessible "
                      "registration",
                      write ? "WRITE" : "READ", (unsigned long long)h->len,
                      (unsigned long long)h->addr);
        if (write) {
            if (h->len > TCP_DRAIN_MAX)
                return tcp_reply(conn, h, rc, NULL, 0, deadline) < 0 ? -ECONNRESET : -EINVAL;
            if (xfer__conn_drain(conn, h->len, deadline) < 0)
                return -ECONNRESET;
        }
        return tcp_reply(conn, h, rc, NULL, 0, deadline);
    }
    void *p = (void *)(uintptr_t)h->addr, *tok;
    if (write) {
        /* Device memory: receive into a staging buffer, then copy host-to-device. */
        void *in = xfer__stage_in(p, (size_t)h->len, &tok);
        if (!in) { /* out of memory: close the connection, the initiator sees a reset */
            xfer__mr_release(eng, mr);
            return -ENOMEM;
        }
        rc = xfer__conn_read(conn, in, (size_t)h->len, deadline);
        if (rc < 0) {
            xfer__stage_release(tok);
            xfer__mr_release(eng, mr);
            return rc;
        }
        rc = xfer__stage_in_done(p, in, (size_t)h->len, tok);
        xfer__mr_release(eng, mr);
        return tcp_reply(conn, h, rc, NULL, 0, deadline);
    }
    /* Device memory: copy device-to-host into a staging buffer and send that. */
    const void *out = xfer__stage_out(p, (size_t)h->len, &tok);
    if (!out) {
        xfer__mr_release(eng, mr);
        return tcp_reply(conn, h, -CM_ETRANSFER_FAIL, NULL, 0, deadline);
    }
    rc = tcp_reply(conn, h, 0, (void *)(uintptr_t)out, h->len, deadline);
    xfer__stage_release(tok);
    xfer__mr_release(eng, mr);
    return rc;
}

/* ---- initiator side ---- */

static int peer_get(struct tcp_peer *p, uint64_t deadline) {
    for (;;) {
        pthread_mutex_lock(&p->lock);
        int fd = p->n_idle ? p->idle[--p->n_idle] : -1;
        pthread_mutex_unlock(&p->lock);
        if (fd < 0)
            break;
        /* An idle connection with anything to read was closed (or broken) by the target. */
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 0) == 0)
            return fd;
        close(fd);
    }
    uint64_t now = cm_mono_ns(), cdl = now + 5000000000ull;
    return xfer__sock_connect(p->hostport, cdl < deadline ? cdl : deadline);
}

static void peer_put(struct tcp_peer *p, int fd) {
    pthread_mutex_lock(&p->lock);
    if (p->n_idle < p->max_idle) {
        p->idle[p->n_idle++] = fd;
        fd = -1;
    }
    pthread_mutex_unlock(&p->lock);
    if (fd >= 0)
        close(fd);
}

/* A worker's scratch space: the group's request headers and iovec, the reply read buffer. */
struct tcp_worker_buf {
    uint8_t hdr[TCP_GROUP_MAX][XFER_WIRE_HDR_LEN];
    struct iovec iov[2 * TCP_GROUP_MAX];
    struct xfer_rbuf rb;
};

/* Sends the requests of g[0..n) (headers, and the payloads of WRITEs) with as few sendmsg
 * calls as the socket takes. Device memory is staged and sent one request at a time. */
static int tcp_send_group(struct tcp_ctx *c, int fd, struct xfer_task **g, int n,
                          struct tcp_worker_buf *w, uint64_t dl) {
    int k = 0, rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        struct xfer_task *t = g[i];
        int write = t->op == XFER_OP_WRITE;
        struct xfer_wire_hdr h = {.op = write ? XFER_WIRE_TCP_WRITE : XFER_WIRE_TCP_READ,
                                  .id = atomic_fetch_add(&c->next_id, 1),
                                  .addr = t->remote,
                                  .len = t->len};
        t->tp_u64[0] = h.id;
        xfer_wire_encode(&h, w->hdr[i]);
        w->iov[k++] = (struct iovec){w->hdr[i], XFER_WIRE_HDR_LEN};
        if (!write || t->len == 0)
            continue;
        if (!xfer__is_device(t->local)) {
            w->iov[k++] = (struct iovec){t->local, (size_t)t->len};
            continue;
        }
        void *tok = NULL; /* device memory goes out through a staging buffer, now */
        const void *src = xfer__stage_out(t->local, (size_t)t->len, &tok);
        if (!src)
            return -CM_ETRANSFER_FAIL; /* OOM or a failed device copy */
        w->iov[k++] = (struct iovec){(void *)(uintptr_t)src, (size_t)t->len};
        rc = xfer__sock_writev(fd, w->iov, k, dl);
        xfer__stage_release(tok);
        k = 0;
    }
    return rc == 0 && k > 0 ? xfer__sock_writev(fd, w->iov, k, dl) : rc;
}

/* Reads t's reply (and a READ's payload into t->local) through rb. Returns 0 or a negative
 * code; *sync says whether the connection is still at a message boundary (refusals keep it
 * usable). */
static int tcp_recv_reply(int fd, struct xfer_rbuf *rb, struct xfer_task *t, int *sync) {
    uint8_t hb[XFER_WIRE_HDR_LEN];
    const uint8_t *h = hb;
    int rc;
    *sync = 0;
    if (rb->len >= XFER_WIRE_HDR_LEN) { /* already buffered: decoded where it lies */
        h = (const uint8_t *)rb->buf + rb->off;
        rb->off += XFER_WIRE_HDR_LEN;
        rb->len -= XFER_WIRE_HDR_LEN;
        if (rb->len == 0)
            rb->off = 0; /* as xfer__rbuf_read; the bytes stay until the next read */
    } else if ((rc = xfer__rbuf_read(fd, rb, hb, sizeof(hb), t->deadline_ns)) < 0) {
        return rc;
    }
    struct xfer_wire_hdr rh;
    rc = xfer_wire_decode(h, XFER_WIRE_HDR_LEN, &rh);
    if (rc < 0)
        return rc;
    uint8_t op = t->op == XFER_OP_WRITE ? XFER_WIRE_TCP_WRITE : XFER_WIRE_TCP_READ;
    if (!(rh.flags & XFER_WIRE_F_REPLY) || rh.id != t->tp_u64[0] || rh.op != op)
        return -CM_EPROTOCOL;
    if (rh.status < 0) {
        *sync = rh.len == 0;
        return rh.status;
    }
    if (t->op == XFER_OP_READ) {
        if (rh.len != t->len)
            return -CM_EPROTOCOL;
        void *tok; /* device memory is received through a staging buffer */
        void *in = xfer__stage_in(t->local, (size_t)t->len, &tok);
        if (!in)
            return -ENOMEM; /* the payload is still on the wire: not in sync */
        rc = xfer__rbuf_read(fd, rb, in, (size_t)t->len, t->deadline_ns);
        if (rc < 0) {
            xfer__stage_release(tok);
            return rc;
        }
        *sync = 1;
        return xfer__stage_in_done(t->local, in, (size_t)t->len, tok);
    } else if (rh.len != 0) {
        return -CM_EPROTOCOL;
    }
    *sync = 1;
    return 0;
}

/* Unlinks x (whose predecessor is prev, NULL at the head) from q. */
static void tq_unlink(struct tcp_queue *q, struct xfer_task *prev, struct xfer_task *x) {
    if (prev)
        prev->next = x->next;
    else
        q->head = x->next;
    if (q->tail == x)
        q->tail = prev;
}

/* Appends t to q. */
static void tq_push(struct tcp_queue *q, struct xfer_task *t) {
    t->next = NULL;
    if (q->tail)
        q->tail->next = t;
    else
        q->head = t;
    q->tail = t;
}

/* Moves the queue's first task t to the parked tasks of its peer p. Lock held. */
static void tcp_park(struct tcp_ctx *c, struct tcp_peer *p, struct xfer_task *t) {
    tq_unlink(&c->q, NULL, t);
    if (!p->parked.head) { /* list p after the peers parked before it */
        p->park_prev = c->parked_tail;
        p->park_next = NULL;
        if (c->parked_tail)
            c->parked_tail->park_next = p;
        else
            c->parked = p;
        c->parked_tail = p;
    }
    tq_push(&p->parked, t);
}

/* Takes p off the list of peers with parked tasks (its parked queue just emptied). Lock held. */
static void tcp_unlist(struct tcp_ctx *c, struct tcp_peer *p) {
    if (p->park_prev)
        p->park_prev->park_next = p->park_next;
    else
        c->parked = p->park_next;
    if (p->park_next)
        p->park_next->park_prev = p->park_prev;
    else
        c->parked_tail = p->park_prev;
    p->park_prev = p->park_next = NULL;
}

/*
 * Takes q's first task plus more of the same peer and opcode from q, up to TCP_GROUP_MAX tasks
 * and group_bytes of payload (one direction per group, so neither side can block the other),
 * and counts the group in its peer's busy. Lock held; q not empty. Returns the count.
 */
static int tcp_take_group(struct tcp_ctx *c, struct tcp_queue *q, struct xfer_task **g) {
    struct xfer_task *t = q->head, *prev = NULL, *x;
    tq_unlink(q, NULL, t);
    ((struct tcp_peer *)t->tp_seg)->busy++;
    int n = 0, scanned = 0;
    uint64_t bytes = t->len;
    g[n++] = t;
    for (x = q->head; x && n < TCP_GROUP_MAX && scanned < 2 * TCP_GROUP_MAX; scanned++) {
        struct xfer_task *next = x->next;
        if (x->tp_seg == t->tp_seg && x->op == t->op && bytes + x->len <= c->group_bytes) {
            tq_unlink(q, prev, x);
            g[n++] = x;
            bytes += x->len;
        } else {
            prev = x;
        }
        x = next;
    }
    return n;
}

/*
 * Pops the next group into g; returns its size, 0 when nothing is eligible. A peer runs at most
 * peer_cap groups at once, so a stalled peer leaves workers to the others. Parked tasks come
 * first (they are older than the queue's): the oldest parked peer below the cap gives a group.
 * Otherwise the queue's head gives one; a head task whose peer is at the cap moves to that
 * peer's parked tasks, so no task is passed over twice however many of a stalled peer's tasks
 * are queued ahead of another peer's. Lock held.
 */
static int tcp_pop_group(struct tcp_ctx *c, struct xfer_task **g) {
    for (struct tcp_peer *p = c->parked; p; p = p->park_next)
        if (p->busy < c->peer_cap) {
            int n = tcp_take_group(c, &p->parked, g);
            if (!p->parked.head)
                tcp_unlist(c, p);
            return n;
        }
    struct xfer_task *t;
    while ((t = c->q.head)) {
        struct tcp_peer *p = t->tp_seg;
        if (p->busy < c->peer_cap && !p->parked.head)
            return tcp_take_group(c, &c->q, g);
        tcp_park(c, p, t);
    }
    return 0;
}

/* Runs a group on one pooled connection: all requests out, then the replies in order. */
static void tcp_run_group(struct tcp_ctx *c, struct xfer_task **g, int n,
                          struct tcp_worker_buf *w) {
    struct tcp_peer *p = g[0]->tp_seg;
    int res[TCP_GROUP_MAX], broken = 0, sync = 1;
    uint64_t dl = g[0]->deadline_ns;
    for (int i = 1; i < n; i++)
        dl = g[i]->deadline_ns < dl ? g[i]->deadline_ns : dl;
    int fd = cm_mono_ns() >= dl ? -ETIMEDOUT : peer_get(p, dl);
    for (int i = 0; i < n; i++)
        res[i] = fd < 0 ? fd : -ECANCELED;
    if (fd >= 0) {
        int rc = tcp_send_group(c, fd, g, n, w, dl);
        if (rc < 0) {
            broken = 1;
            for (int i = 0; i < n; i++)
                res[i] = rc;
        }
        w->rb.off = w->rb.len = 0;
        for (int i = 0; i < n && !broken; i++) {
            res[i] = tcp_recv_reply(fd, &w->rb, g[i], &sync);
            if (!sync) {
                broken = 1;
                for (int k = i + 1; k < n; k++)
                    res[k] = res[i];
            }
        }
        if (broken || w->rb.len != 0) /* bytes nobody asked for: out of step, drop it */
            close(fd);
        else
            peer_put(p, fd);
    }
    for (int i = 0; i < n; i++) {
        if (res[i] < 0)
            cm_log_sparse(1000, CM_LOG_VERBOSE, "xfer", "tcp: task to %s failed: %s", p->hostport,
                          cm_strerror(res[i]));
    }
    xfer__tasks_done(g, res, (size_t)n); /* one batch lock for the group, not one per task */
}

static void *tcp_worker(void *arg) {
    struct tcp_ctx *c = arg;
    struct xfer_task *g[TCP_GROUP_MAX];
    struct tcp_worker_buf *w = NULL; /* scratch space, allocated at the worker's first group: */
    char *rbuf = NULL;               /* an engine that only serves never pays for it */
    for (;;) {
        pthread_mutex_lock(&c->lock);
        int n = 0;
        while (!c->stopping && (n = tcp_pop_group(c, g)) == 0)
            pthread_cond_wait(&c->cond, &c->lock);
        if (n == 0) {
            pthread_mutex_unlock(&c->lock);
            break;
        }
        if (c->q.head || c->parked)
            pthread_cond_signal(&c->cond); /* more queued: hand it to the next worker */
        pthread_mutex_unlock(&c->lock);
        struct tcp_peer *p = g[0]->tp_seg;
        if (!w && (w = cm_try_calloc(1, sizeof(*w))) != NULL)
            rbuf = cm_try_malloc(TCP_RBUF_CAP);
        if (w) {
            w->rb = (struct xfer_rbuf){.buf = rbuf, .cap = rbuf ? TCP_RBUF_CAP : 0};
            tcp_run_group(c, g, n, w); /* completes the tasks; p lives while the segment is open */
        } else {
            for (int i = 0; i < n; i++) /* no scratch space: out of memory at start-up */
                xfer__task_done(g[i], -ENOMEM, 0);
        }
        pthread_mutex_lock(&c->lock);
        p->busy--;
        if (c->q.head || p->parked.head)
            pthread_cond_signal(&c->cond); /* tasks of p may be eligible again */
        pthread_mutex_unlock(&c->lock);
    }
    cm_free(rbuf);
    cm_free(w);
    return NULL;
}

static int tcp_submit(struct xfer_transport *tp, struct xfer_task **tasks, size_t n) {
    struct tcp_ctx *c = tp->ctx;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < n; i++)
        tq_push(&c->q, tasks[i]);
    /* One worker: it takes a group and wakes the next one while tasks remain, so a batch
     * that fits one group does not wake every worker to find nothing. */
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

static int tcp_open_segment(struct xfer_transport *tp, struct xfer_segment *seg,
                            const struct xfer_desc *d, int i, void **seg_ctx) {
    struct tcp_ctx *c = tp->ctx;
    (void)seg;
    const struct xfer_desc_tp *e = &d->tp[i];
    if (e->ep_len == 0 || e->ep_len >= XFER_HOSTPORT_MAX || memchr(e->ep, 0, e->ep_len))
        return -CM_ECORRUPT;
    struct tcp_peer *p = cm_try_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    memcpy(p->hostport, e->ep, e->ep_len);
    p->max_idle = c->max_idle;
    pthread_mutex_init(&p->lock, NULL);
    *seg_ctx = p;
    return 0;
}

static void tcp_close_segment(struct xfer_transport *tp, void *seg_ctx) {
    struct tcp_peer *p = seg_ctx;
    struct tcp_ctx *c = tp->ctx;
    if (!p)
        return;
    /* A worker completes a group's tasks (waking the waiter, who may close the segment at
     * once) and only then drops p->busy: wait for that last touch of p before freeing it. The
     * window is a few instructions, so a short sleep-poll is enough (no condition variable that
     * could steal a worker's wake-up). */
    for (;;) {
        pthread_mutex_lock(&c->lock);
        int busy = p->busy;
        pthread_mutex_unlock(&c->lock);
        if (busy == 0)
            break;
        cm_sleep_ms(1);
    }
    while (p->n_idle)
        close(p->idle[--p->n_idle]);
    pthread_mutex_destroy(&p->lock);
    cm_free(p);
}

static int tcp_warmup(struct xfer_transport *tp, void *seg_ctx) {
    struct tcp_peer *p = seg_ctx;
    (void)tp;
    int fd = peer_get(p, cm_mono_ns() + 5000000000ull);
    if (fd < 0)
        return fd;
    peer_put(p, fd);
    return 0;
}

static int tcp_local_info(struct xfer_transport *tp, uint8_t *buf, size_t *len) {
    char a[XFER_HOSTPORT_MAX];
    int n = xfer_engine_local_addr(tp->eng, a, sizeof(a));
    if (n < 0 || (size_t)n > *len)
        return n < 0 ? -ENOSYS : -ENOSPC; /* initiator-only engine: not reachable */
    memcpy(buf, a, (size_t)n);
    *len = (size_t)n;
    return 0;
}

/* Fails every task of q with -ECANCELED and empties q. */
static void tcp_cancel_all(struct tcp_queue *q) {
    while (q->head) {
        struct xfer_task *t = q->head;
        q->head = t->next;
        xfer__task_done(t, -ECANCELED, 0);
    }
    q->tail = NULL;
}

static void tcp_stop(struct tcp_ctx *c, int n) {
    pthread_mutex_lock(&c->lock);
    c->stopping = 1;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < n; i++)
        pthread_join(c->workers[i], NULL);
    while (c->parked) { /* workers are gone: whatever is parked or queued fails */
        struct tcp_peer *p = c->parked;
        tcp_unlist(c, p);
        tcp_cancel_all(&p->parked);
    }
    tcp_cancel_all(&c->q);
}

static int tcp_install(struct xfer_transport *tp, const char *args) {
    uint64_t workers = xfer__env_u64("MC_TCP_WORKERS", 8), idle = 16, cap = 0;
    uint64_t group_bytes = xfer__env_u64("MC_TCP_GROUP_BYTES", 1ull << 20);
    if (xfer__arg_u64(args, "workers", &workers) < 0 ||
        xfer__arg_u64(args, "max_idle", &idle) < 0 ||
        xfer__arg_u64(args, "peer_workers", &cap) < 0 ||
        xfer__arg_u64(args, "group_bytes", &group_bytes) < 0)
        return -EINVAL;
    if (workers == 0 || workers > TCP_MAX_WORKERS || idle > 64 || cap > workers || group_bytes == 0)
        return -EINVAL;
    if (cap == 0)
        cap = workers > 1 ? workers / 2 : 1;
    struct tcp_ctx *c = cm_try_calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->tp = tp;
    c->max_idle = (int)idle;
    c->peer_cap = (int)cap;
    c->group_bytes = group_bytes;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    for (c->n_workers = 0; c->n_workers < (int)workers; c->n_workers++)
        if (pthread_create(&c->workers[c->n_workers], NULL, tcp_worker, c) != 0) {
            tcp_stop(c, c->n_workers);
            cm_free(c);
            return -EAGAIN;
        }
    int rc = xfer__listener_handle(tp->eng, XFER_WIRE_TCP_READ, XFER_WIRE_TCP_WRITE, tcp_serve, tp);
    if (rc < 0 && rc != -ENOTCONN) {
        tcp_stop(c, c->n_workers);
        cm_free(c);
        return rc;
    }
    c->serving = rc == 0;
    tp->ctx = c;
    return 0;
}

static void tcp_uninstall(struct xfer_transport *tp) {
    struct tcp_ctx *c = tp->ctx;
    if (!c)
        return;
    if (c->serving)
        xfer__listener_unhandle(tp->eng, XFER_WIRE_TCP_READ, XFER_WIRE_TCP_WRITE);
    tcp_stop(c, c->n_workers);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    cm_free(c);
    tp->ctx = NULL;
}

const struct xfer_transport_ops xfer_tcp_ops = {
    .size = sizeof(struct xfer_transport_ops),
    .name = "tcp",
    .install = tcp_install,
    .uninstall = tcp_uninstall,
    .register_mem = xfer__no_register_mem,
    .unregister_mem = xfer__no_unregister_mem,
    .local_info = tcp_local_info,
    .reachable = NULL,
    .open_segment = tcp_open_segment,
    .close_segment = tcp_close_segment,
    .submit = tcp_submit,
    .warmup_segment = tcp_warmup,
};
