/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io_uring backend of the master's network path. DESIGN: each worker's loop (cm_ev on
 * io_uring) carries multishot accept on its listeners and one multishot recv per client, which
 * draws buffers from the worker's provided-buffer ring; received bytes are copied into the
 * query buffer (or straight into a big value's segment block) and the buffer goes back to the
 * ring at once. Replies accumulate in c->out as on epoll; the before-sleep hook moves each
 * client's output into its send state (struct srv_tx) and queues one send or sendmsg
 * (MSG_WAITALL), whose vector points at segment memory for values sent by reference. Those
 * values stay pinned until the completion says their bytes are out. All of it is submitted by
 * the loop's one io_uring_submit_and_wait per iteration. A closed client is shut down and its
 * requests cancelled; its memory goes when the last completion arrived.
 */
#include "common/fmacros.h"

#include "server/srv_db.h"
#include "server/srv_net_int.h"
#include "server/srv_oplog.h"
#include "server/srv_server.h"

#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_pcounter.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define SRV_PBUF_SIZE   (16u * 1024) /* bytes per provided receive buffer */
#define SRV_PBUF_COUNT  512u         /* buffers per worker (power of two): 8 MiB */
#define SRV_PBUF_GROUP  0            /* buffer group id (one ring per worker) */
#define SRV_SEND_IOV    1024         /* iovecs per sendmsg (UIO_MAXIOV) */
#define SRV_SEND_FLAGS  (MSG_NOSIGNAL | MSG_WAITALL)
#define SRV_DIRECT_RECV SRV_PBUF_SIZE /* big-value bytes still due that are read straight in */
#define SRV_SWEEP_MS    1000          /* srv_uring__sweep: period, and idle time it looks at */

#define srv_container_of(p, type, member) ((type *)(void *)((char *)(p)-offsetof(type, member)))

/* A worker's provided-buffer ring. */
struct srv_uring {
    struct io_uring_buf_ring *br;
    size_t br_bytes;
    char *bufs;
    unsigned mask;
    uint64_t swept_ms; /* last srv_uring__sweep */
    struct pollfd *pfd;
    struct srv_client **pcl;
    size_t pcap;
};

static void srv_uring_accept_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res,
                                unsigned flags);
static void srv_uring_recv_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res,
                              unsigned flags);
static void srv_uring_send_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res,
                              unsigned flags);
static void srv_uring_direct_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res,
                                unsigned flags);
static void srv_uring_qbuf_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res,
                              unsigned flags);
static void srv_uring_maybe_release(struct srv_client *c);

/* ---------------------------------------------------------------- buffer ring */

static void srv_uring_recycle(struct srv_uring *u, unsigned bid) {
    io_uring_buf_ring_add(u->br, u->bufs + (size_t)bid * SRV_PBUF_SIZE, SRV_PBUF_SIZE,
                          (unsigned short)bid, (int)u->mask, 0);
    io_uring_buf_ring_advance(u->br, 1);
}

static void srv_uring_arm_accept(struct srv_listener *l) {
    l->accept_op.cb = srv_uring_accept_cb;
    struct io_uring_sqe *sqe = cm_ev_sqe(l->w->loop, &l->accept_op);
    io_uring_prep_multishot_accept(sqe, l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int srv_uring__worker_init(struct srv_worker *w) {
    struct srv_uring *u = cm_calloc(1, sizeof(*u));
    w->ur = u;
    u->mask = (unsigned)io_uring_buf_ring_mask(SRV_PBUF_COUNT);
    u->br_bytes = SRV_PBUF_COUNT * sizeof(struct io_uring_buf);
    /* Kernel-shared memory: mapped, not from the allocator (not in INFO used_memory). */
    void *br = mmap(NULL, u->br_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *bufs = mmap(NULL, (size_t)SRV_PBUF_COUNT * SRV_PBUF_SIZE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (br == MAP_FAILED || bufs == MAP_FAILED) {
        int err = -errno;
        if (br != MAP_FAILED)
            munmap(br, u->br_bytes);
        if (bufs != MAP_FAILED)
            munmap(bufs, (size_t)SRV_PBUF_COUNT * SRV_PBUF_SIZE);
        return err;
    }
    u->br = br;
    u->bufs = bufs;
    struct io_uring_buf_reg reg = {
        .ring_addr = (unsigned long)br, .ring_entries = SRV_PBUF_COUNT, .bgid = SRV_PBUF_GROUP};
    int rc = io_uring_register_buf_ring(cm_ev_ring(w->loop), &reg, 0);
    if (rc < 0)
        return rc;
    io_uring_buf_ring_init(u->br);
    for (unsigned i = 0; i < SRV_PBUF_COUNT; i++)
        io_uring_buf_ring_add(u->br, u->bufs + (size_t)i * SRV_PBUF_SIZE, SRV_PBUF_SIZE,
                              (unsigned short)i, (int)u->mask, (int)i);
    io_uring_buf_ring_advance(u->br, SRV_PBUF_COUNT);
    for (int i = 0; i < w->nls; i++)
        srv_uring_arm_accept(&w->ls[i]);
    return 0;
}

void srv_uring__worker_fini(struct srv_worker *w) {
    struct srv_uring *u = w->ur;
    if (!u)
        return;
    if (u->br)
        munmap(u->br, u->br_bytes);
    if (u->bufs)
        munmap(u->bufs, (size_t)SRV_PBUF_COUNT * SRV_PBUF_SIZE);
    cm_free(u->pfd);
    cm_free(u->pcl);
    cm_free(u);
    w->ur = NULL;
}

/* ---------------------------------------------------------------- accept and receive */

static void srv_uring_accept_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res,
                                unsigned flags) {
    struct srv_listener *l = srv_container_of(op, struct srv_listener, accept_op);
    (void)loop;
    if (res >= 0 && l->w->stopping) {
        close(res);
        return;
    }
    if (res >= 0) {
        struct srv_client *c = srv_net__accept_fd(l->w, res, l->is_unix);
        if (c)
            srv_uring__start_client(c);
    } else if (res != -ECANCELED && res != -EAGAIN && res != -EINTR) {
        cm_log_sparse(1000, CM_LOG_WARNING, "net", "accept failed: %s", strerror(-res));
    }
    if (!(flags & IORING_CQE_F_MORE) && res != -ECANCELED && !l->w->stopping)
        srv_uring_arm_accept(l);
}

static void srv_uring_arm_recv(struct srv_client *c) {
    c->recv_op.cb = srv_uring_recv_cb;
    struct io_uring_sqe *sqe = cm_ev_sqe(c->worker->loop, &c->recv_op);
    io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = SRV_PBUF_GROUP;
    c->recv_armed = 1;
    c->inflight++;
}

/*
 * The rest of a big SET value is read straight into its segment block (as on epoll), not
 * through the buffer ring: a plain recv into the block, repeated until the value is in.
 */
static void srv_uring_arm_direct(struct srv_client *c) {
    c->recv_op.cb = srv_uring_direct_cb;
    struct io_uring_sqe *sqe = cm_ev_sqe(c->worker->loop, &c->recv_op);
    io_uring_prep_recv(sqe, c->fd, c->big.dst + c->big.got, c->big.len - c->big.got, 0);
    c->recv_armed = 1;
    c->inflight++;
}

static int srv_uring_want_direct(const struct srv_client *c) {
    return c->big.obj && c->big.len - c->big.got >= SRV_DIRECT_RECV;
}

/*
 * A client that sent a big value reads with one-shot recvs into its query buffer (the epoll
 * path's reads, as requests): a multishot recv would have pulled up to half a MiB of the next
 * value through the ring (copied again) before its cancellation took effect.
 */
static void srv_uring_arm_qbuf(struct srv_client *c) {
    size_t want = srv_net__recv_want(c);
    c->recv_op.cb = srv_uring_qbuf_cb;
    struct io_uring_sqe *sqe = cm_ev_sqe(c->worker->loop, &c->recv_op);
    io_uring_prep_recv(sqe, c->fd, c->qbuf.data + c->qbuf.len, want, 0);
    c->recv_armed = 1;
    c->inflight++;
}

/* Arms the next receive of c: into a big value, into the query buffer, or from the ring. */
static void srv_uring_arm_input(struct srv_client *c) {
    if (c->big.obj && c->big.got < c->big.len && (c->recv_oneshot || srv_uring_want_direct(c)))
        srv_uring_arm_direct(c);
    else if (c->recv_oneshot)
        srv_uring_arm_qbuf(c);
    else
        srv_uring_arm_recv(c);
}

/* Completion of a one-shot recv into the query buffer or into a big value: 0 to go on, -1
 * when c is gone or closing. */
/*
 * End of input while replies are still queued: a client that sent its last request and shut its
 * write side (half-close) gets them, then the connection closes. The request and the EOF can
 * come in one batch of completions, before the replies went out (on epoll the EOF comes with a
 * later read, after the reply was written). A suspended client (srv_defer.h) first runs what
 * it sent before the EOF, once resumed. Returns 1 when it took over, 0 to close now.
 */
static int srv_uring_eof_with_replies(struct srv_client *c) {
    if (c->defer) { /* suspended: the rest of its input runs first (srv_client_process) */
        c->flags |= SRV_CLIENT_INPUT_EOF;
        return 1;
    }
    if (c->out.len == 0 && c->nrefs == 0 && !(c->tx && c->tx->busy))
        return 0;
    c->flags |= SRV_CLIENT_CLOSE_AFTER_REPLY;
    if (srv_oplog_enabled()) /* HA: replies leave after the op-log sync of before-sleep */
        srv_net__want_write(c);
    else
        srv_uring__flush(c);
    return 1;
}

static int srv_uring_oneshot_done(struct srv_client *c, int res, int *retry) {
    c->recv_armed = 0;
    c->inflight--;
    *retry = 0;
    if (c->closing) {
        srv_uring_maybe_release(c);
        return -1;
    }
    if (res == -EAGAIN || res == -EINTR) {
        *retry = 1;
        return -1;
    }
    if (res == 0 && srv_uring_eof_with_replies(c))
        return -1;
    if (res <= 0) {
        if (res < 0)
            cm_log(CM_LOG_VERBOSE, "net", "read from client %s failed: %s", c->addr,
                   strerror(-res));
        srv_net__client_free(c);
        return -1;
    }
    return 0;
}

static void srv_uring_qbuf_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res,
                              unsigned flags) {
    struct srv_client *c = srv_container_of(op, struct srv_client, recv_op);
    int retry;
    (void)loop;
    (void)flags;
    if (srv_uring_oneshot_done(c, res, &retry) < 0) {
        if (retry)
            srv_uring_arm_qbuf(c);
        return;
    }
    if (srv_net__received(c, (size_t)res) < 0)
        return;
    srv_uring_arm_input(c);
}

void srv_uring__start_client(struct srv_client *c) {
    c->send_op.cb = srv_uring_send_cb;
    c->recv_oneshot = 0;
    srv_uring_arm_recv(c);
}

/* Frees c once it is closed and nothing of it is in flight. */
static void srv_uring_maybe_release(struct srv_client *c) {
    if (!c->closing || c->inflight > 0)
        return;
    struct srv_worker *w = c->worker;
    srv_net__client_release(c);
    w->nclosing--;
}

static void srv_uring_recv_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res,
                              unsigned flags) {
    struct srv_client *c = srv_container_of(op, struct srv_client, recv_op);
    struct srv_uring *u = c->worker->ur;
    (void)loop;
    if (!(flags & IORING_CQE_F_MORE)) {
        c->recv_armed = 0;
        c->recv_cancel = 0;
        c->inflight--;
    }
    int has_buf = (flags & IORING_CQE_F_BUFFER) != 0;
    unsigned bid = flags >> IORING_CQE_BUFFER_SHIFT;
    if (c->closing) {
        if (has_buf)
            srv_uring_recycle(u, bid);
        srv_uring_maybe_release(c);
        return;
    }
    if (res > 0 && has_buf) {
        int rc = srv_net__feed(c, u->bufs + (size_t)bid * SRV_PBUF_SIZE, (size_t)res);
        srv_uring_recycle(u, bid);
        if (rc < 0)
            return; /* c was closed (and maybe freed) */
    } else {
        if (has_buf)
            srv_uring_recycle(u, bid);
        if (res == 0 && srv_uring_eof_with_replies(c))
            return;
        if (res == 0 ||
            (res < 0 && res != -ENOBUFS && res != -EAGAIN && res != -EINTR && res != -ECANCELED)) {
            if (res < 0)
                cm_log(CM_LOG_VERBOSE, "net", "read from client %s failed: %s", c->addr,
                       strerror(-res));
            srv_net__client_free(c);
            return;
        }
    }
    if (srv_uring_want_direct(c) || c->recv_oneshot) { /* end the multishot recv first */
        c->recv_oneshot = 1;
        if (!c->recv_armed)
            srv_uring_arm_input(c);
        else if (!c->recv_cancel) {
            c->recv_cancel = 1;
            io_uring_prep_cancel64(cm_ev_sqe(c->worker->loop, NULL),
                                   (uint64_t)(uintptr_t)&c->recv_op, 0);
        }
        return;
    }
    if (!c->recv_armed)
        srv_uring_arm_recv(c);
}

static void srv_uring_direct_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res,
                                unsigned flags) {
    struct srv_client *c = srv_container_of(op, struct srv_client, recv_op);
    int retry;
    (void)loop;
    (void)flags;
    if (srv_uring_oneshot_done(c, res, &retry) < 0) {
        if (retry)
            srv_uring_arm_direct(c);
        return;
    }
    c->big.got += (size_t)res;
    c->last_ms = cm_ev_now_ms(c->worker->loop);
    cm_pcounter_add(&srv_stats.net_input_bytes, (uint64_t)res);
    if (c->big.got < c->big.len) {
        srv_uring_arm_direct(c);
        return;
    }
    c->recv_oneshot = 1;
    if (srv_net__feed(c, "", 0) < 0) /* runs the SET once the CRLF is in */
        return;
    srv_uring_arm_input(c);
}

/*
 * Backstop for a multishot recv that stays silent after its socket was reset or closed (seen
 * on 6.18: data with IORING_CQE_F_MORE, then no completion for the peer's reset, the client
 * left behind). Once a second, one poll(2) over the clients idle for a second whose multishot
 * recv is armed; one whose socket reports an error, hang-up or end of input gets that recv
 * cancelled: its -ECANCELED completion re-arms it, and the new recv reads the end.
 */
void srv_uring__sweep(struct srv_worker *w, uint64_t now) {
    struct srv_uring *u = w->ur;
    if (!u || now - u->swept_ms < SRV_SWEEP_MS)
        return;
    u->swept_ms = now;
    size_t n = 0;
    for (struct srv_client *c = w->clients; c; c = c->wnext) {
        if (!c->recv_armed || c->recv_cancel || c->recv_oneshot || c->closing ||
            c->last_ms + SRV_SWEEP_MS > now)
            continue;
        if (n == u->pcap) {
            u->pcap = u->pcap ? u->pcap * 2 : 64;
            u->pfd = cm_realloc(u->pfd, u->pcap * sizeof(*u->pfd));
            u->pcl = cm_realloc(u->pcl, u->pcap * sizeof(*u->pcl));
        }
        u->pfd[n] = (struct pollfd){.fd = c->fd, .events = POLLRDHUP};
        u->pcl[n++] = c;
    }
    if (n == 0 || poll(u->pfd, (nfds_t)n, 0) <= 0)
        return;
    for (size_t i = 0; i < n; i++) {
        struct srv_client *c = u->pcl[i];
        if (!(u->pfd[i].revents & (POLLERR | POLLHUP | POLLRDHUP)))
            continue;
        cm_log_sparse(1000, CM_LOG_NOTICE, "net",
                      "client %s: socket ended, its receive did not complete; re-arming", c->addr);
        c->recv_cancel = 1;
        io_uring_prep_cancel64(cm_ev_sqe(w->loop, NULL), (uint64_t)(uintptr_t)&c->recv_op, 0);
    }
}

/* ---------------------------------------------------------------- send */

static void srv_tx_add_iov(struct srv_tx *tx, const char *p, size_t len, struct srv_obj *obj) {
    if (tx->niov == tx->iov_cap) {
        tx->iov_cap = tx->iov_cap ? tx->iov_cap * 2 : 16;
        tx->iov = cm_realloc(tx->iov, (size_t)tx->iov_cap * sizeof(*tx->iov));
        tx->obj = cm_realloc(tx->obj, (size_t)tx->iov_cap * sizeof(*tx->obj));
    }
    tx->iov[tx->niov] = (struct iovec){(void *)p, len};
    tx->obj[tx->niov] = obj;
    tx->niov++;
}

/* Moves c's pending output (buffer and value references) into its send state as an iovec. */
static void srv_uring_stage(struct srv_client *c) {
    struct srv_tx *tx = c->tx;
    if (!tx)
        tx = c->tx = cm_calloc(1, sizeof(*tx));
    struct cm_buf b = tx->buf;
    tx->buf = c->out;
    c->out = b;
    struct srv_outref *refs = tx->refs;
    int cap = tx->refs_cap, nrefs = c->nrefs;
    tx->refs = c->refs;
    tx->refs_cap = c->refs_cap;
    c->refs = refs;
    c->refs_cap = cap;
    c->nrefs = c->ref_idx = 0;
    c->ref_sent = 0;
    c->out_ref_bytes = 0;
    c->out_sent = 0;
    tx->niov = tx->idx = 0;
    size_t pos = 0, total = tx->buf.len;
    for (int i = 0; i < nrefs; i++) {
        struct srv_outref *r = &tx->refs[i];
        if (r->at > pos)
            srv_tx_add_iov(tx, tx->buf.data + pos, r->at - pos, NULL);
        pos = r->at;
        srv_tx_add_iov(tx, r->p, r->len, r->obj);
        total += r->len;
    }
    if (tx->buf.len > pos)
        srv_tx_add_iov(tx, tx->buf.data + pos, tx->buf.len - pos, NULL);
    c->tx_bytes = total;
}

/* Queues a send of what remains of c's send state. */
static void srv_uring_submit(struct srv_client *c) {
    struct srv_tx *tx = c->tx;
    int n = tx->niov - tx->idx;
    if (n > SRV_SEND_IOV)
        n = SRV_SEND_IOV;
    struct io_uring_sqe *sqe = cm_ev_sqe(c->worker->loop, &c->send_op);
    if (n == 1) {
        io_uring_prep_send(sqe, c->fd, tx->iov[tx->idx].iov_base, tx->iov[tx->idx].iov_len,
                           SRV_SEND_FLAGS);
    } else {
        memset(&tx->msg, 0, sizeof(tx->msg));
        tx->msg.msg_iov = &tx->iov[tx->idx];
        tx->msg.msg_iovlen = (size_t)n;
        io_uring_prep_sendmsg(sqe, c->fd, &tx->msg, SRV_SEND_FLAGS);
    }
    tx->busy = 1;
    c->inflight++;
}

void srv_uring__flush(struct srv_client *c) {
    if (c->closing || (c->tx && c->tx->busy))
        return; /* the send completion goes on */
    if (c->out.len == 0 && c->nrefs == 0) {
        if (c->flags & SRV_CLIENT_CLOSE_AFTER_REPLY)
            srv_net__client_free(c);
        return;
    }
    srv_uring_stage(c);
    srv_uring_submit(c);
}

/* Skips n sent bytes of the send state, unpinning values that are fully out. */
static void srv_uring_advance(struct srv_tx *tx, size_t n) {
    while (tx->idx < tx->niov) {
        struct iovec *v = &tx->iov[tx->idx];
        if (v->iov_len > n) {
            v->iov_base = (char *)v->iov_base + n;
            v->iov_len -= n;
            return;
        }
        n -= v->iov_len;
        if (tx->obj[tx->idx])
            srv_obj_unref(tx->obj[tx->idx]);
        tx->idx++;
    }
}

/* Empties the send state after its last byte went out (keeps small buffers for reuse). */
static void srv_uring_tx_done(struct srv_tx *tx) {
    tx->niov = tx->idx = 0;
    if (tx->buf.cap > (1u << 20)) {
        cm_buf_fini(&tx->buf);
        cm_buf_init(&tx->buf);
    } else {
        cm_buf_clear(&tx->buf);
    }
}

static void srv_uring_send_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res,
                              unsigned flags) {
    struct srv_client *c = srv_container_of(op, struct srv_client, send_op);
    struct srv_tx *tx = c->tx;
    (void)loop;
    (void)flags;
    tx->busy = 0;
    c->inflight--;
    if (c->closing) {
        srv_uring_maybe_release(c);
        return;
    }
    if (res == -EAGAIN || res == -EINTR) {
        srv_uring_submit(c);
        return;
    }
    if (res < 0 || (res == 0 && c->tx_bytes > 0 && tx->iov[tx->idx].iov_len > 0)) {
        cm_log(CM_LOG_VERBOSE, "net", "write to client %s failed: %s", c->addr,
               res < 0 ? strerror(-res) : "connection closed");
        srv_net__client_free(c);
        return;
    }
    cm_pcounter_add(&srv_stats.net_output_bytes, (uint64_t)res);
    c->tx_bytes -= (size_t)res;
    srv_uring_advance(tx, (size_t)res);
    if (tx->idx < tx->niov) {
        srv_uring_submit(c);
        return;
    }
    srv_uring_tx_done(tx);
    if (c->out.len > 0 || c->nrefs > 0 || (c->flags & SRV_CLIENT_CLOSE_AFTER_REPLY))
        srv_net__want_write(c);
}

void srv_uring__tx_free(struct srv_client *c) {
    struct srv_tx *tx = c->tx;
    if (!tx)
        return;
    for (int i = tx->idx; i < tx->niov; i++)
        if (tx->obj[i])
            srv_obj_unref(tx->obj[i]);
    cm_buf_fini(&tx->buf);
    cm_free(tx->refs);
    cm_free(tx->iov);
    cm_free(tx->obj);
    cm_free(tx);
    c->tx = NULL;
    c->tx_bytes = 0;
}

/* ---------------------------------------------------------------- close */

void srv_uring__close(struct srv_client *c) {
    if (c->closing)
        return;
    struct srv_worker *w = c->worker;
    srv_net__client_detach(c);
    c->closing = 1;
    w->nclosing++;
    /* Shut down first so the peer sees the close now and requests waiting for the socket end;
     * cancel them too, then let go of the fd (requests keep their own file reference). */
    shutdown(c->fd, SHUT_RDWR);
    if (c->recv_armed)
        io_uring_prep_cancel64(cm_ev_sqe(w->loop, NULL), (uint64_t)(uintptr_t)&c->recv_op, 0);
    if (c->tx && c->tx->busy)
        io_uring_prep_cancel64(cm_ev_sqe(w->loop, NULL), (uint64_t)(uintptr_t)&c->send_op, 0);
    close(c->fd);
    c->fd = -1;
    srv_uring_maybe_release(c);
}
