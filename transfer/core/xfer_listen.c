/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Engine listener: one TCP socket per engine, one thread per accepted connection. Serves
 * descriptor fetches (Mooncake's P2PHANDSHAKE) and routes other opcodes to the transports that
 * claimed them (tcp READ/WRITE, rdma/fabric connection setup). xfer_fetch_desc is the client.
 *
 * Idle connections wait for the next header without a deadline; once a header arrived, every
 * payload read and reply write is bounded by the engine's transfer timeout. Stopping the
 * listener shuts every connection down and waits for its thread.
 *
 * Each connection reads through a buffer and holds small replies back until it would block
 * waiting for the next request (struct xfer_conn, see xfer_int.h): a pipelined run of requests
 * is answered with one send.
 */
#include "common/fmacros.h"

#include "transfer/core/xfer_engine_int.h"

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_net.h"
#include "common/cm_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LISTEN_MAX_CONNS 1024 /* connections (and threads) served at once */
#define CONN_IN_CAP      (128u << 10)
#define CONN_OUT_CAP     (128u << 10)

struct xfer_conn {
    int fd;
    uint32_t timeout_ms; /* bounds the send of held-back replies */
    struct xfer_rbuf rb;
    char *out; /* held-back replies (CONN_OUT_CAP bytes), or NULL: sent at once */
    size_t out_len;
};

struct lconn {
    int fd;
    struct xfer_conn io;
    pthread_t thr;
    struct xfer_listener *lis;
    struct lconn *next;
};

struct handler {
    xfer_serve_cb *cb;
    struct xfer_transport *tp;
};

struct xfer_listener {
    struct xfer_engine *eng;
    int fd;
    int wake[2]; /* pipe: stop signal for the accept thread */
    pthread_t thr;
    pthread_mutex_t lock; /* conns, n_conns, stopping */
    pthread_cond_t cond;
    struct lconn *conns;
    int n_conns;
    int stopping;
    int accepting;          /* listen(2) called and the accept thread runs */
    pthread_rwlock_t hlock; /* handlers; handlers run under the read lock */
    struct handler h[XFER_WIRE_OP_MAX + 1];
};

/* Sends the held-back replies. */
static int conn_flush(struct xfer_conn *c, uint64_t deadline) {
    if (c->out_len == 0)
        return 0;
    struct iovec v = {c->out, c->out_len};
    c->out_len = 0;
    return xfer__sock_writev(c->fd, &v, 1, deadline);
}

/* xfer_rbuf before_wait: nothing to read yet, so the held-back replies go out now. */
static int conn_before_wait(void *arg) {
    struct xfer_conn *c = arg;
    return conn_flush(c, cm_mono_ns() + (uint64_t)c->timeout_ms * 1000000ull);
}

/* Reads from the request stream; see xfer_int.h. */
int xfer__conn_read(struct xfer_conn *c, void *dst, size_t len, uint64_t deadline_ns) {
    return xfer__rbuf_read(c->fd, &c->rb, dst, len, deadline_ns);
}

/* Discards request bytes; see xfer_int.h. */
int xfer__conn_drain(struct xfer_conn *c, uint64_t len, uint64_t deadline_ns) {
    return xfer__rbuf_drain(c->fd, &c->rb, len, deadline_ns);
}

/* Queues or sends a reply; see xfer_int.h. */
int xfer__conn_write(struct xfer_conn *c, struct iovec *iov, int cnt, uint64_t deadline_ns) {
    size_t total = 0;
    for (int i = 0; i < cnt; i++)
        total += iov[i].iov_len;
    if (c->out && total <= XFER_CONN_COPY_MAX + XFER_WIRE_HDR_LEN) {
        if (c->out_len + total > CONN_OUT_CAP) {
            int rc = conn_flush(c, deadline_ns);
            if (rc < 0)
                return rc;
        }
        for (int i = 0; i < cnt; i++) {
            memcpy(c->out + c->out_len, iov[i].iov_base, iov[i].iov_len);
            c->out_len += iov[i].iov_len;
        }
        return 0;
    }
    struct iovec v[9];
    if (cnt > 8) {
        int rc = conn_flush(c, deadline_ns);
        return rc < 0 ? rc : xfer__sock_writev(c->fd, iov, cnt, deadline_ns);
    }
    int k = 0;
    if (c->out_len)
        v[k++] = (struct iovec){c->out, c->out_len};
    for (int i = 0; i < cnt; i++)
        v[k++] = iov[i];
    c->out_len = 0;
    return xfer__sock_writev(c->fd, v, k, deadline_ns);
}

/* Replies with a header carrying status and optional payload. */
static int reply(struct xfer_conn *c, const struct xfer_wire_hdr *req, int32_t status,
                 const void *payload, uint64_t len, uint64_t deadline) {
    struct xfer_wire_hdr h = {.op = req->op,
                              .flags = XFER_WIRE_F_REPLY,
                              .status = status,
                              .id = req->id,
                              .addr = req->addr,
                              .len = len};
    uint8_t hb[XFER_WIRE_HDR_LEN];
    xfer_wire_encode(&h, hb);
    struct iovec v[2] = {{hb, sizeof(hb)}, {(void *)payload, (size_t)len}};
    return xfer__conn_write(c, v, payload && len ? 2 : 1, deadline);
}

static int serve_desc(struct xfer_engine *eng, struct xfer_conn *c, const struct xfer_wire_hdr *h,
                      uint64_t deadline) {
    ssize_t n = xfer_engine_export_desc(eng, NULL, 0);
    void *buf = n > 0 ? cm_try_malloc((size_t)n) : NULL;
    if (buf)
        n = xfer_engine_export_desc(eng, buf, (size_t)n);
    int rc = n < 0 || !buf ? reply(c, h, n < 0 ? (int32_t)n : -ENOMEM, NULL, 0, deadline)
                           : reply(c, h, 0, buf, (uint64_t)n, deadline);
    cm_free(buf);
    return rc;
}

/* Serves one request after its header arrived. Returns 0 to keep the connection. */
static int serve_one(struct xfer_listener *lis, struct xfer_conn *c,
                     const struct xfer_wire_hdr *h) {
    struct xfer_engine *eng = lis->eng;
    uint64_t deadline = cm_mono_ns() + (uint64_t)eng->timeout_ms * 1000000ull;
    if (h->flags & XFER_WIRE_F_REPLY)
        return -CM_EPROTOCOL;
    if (h->op == XFER_WIRE_DESC_GET)
        return h->len ? -CM_EPROTOCOL : serve_desc(eng, c, h, deadline);
    if (h->op == XFER_WIRE_PING)
        return h->len ? -CM_EPROTOCOL : reply(c, h, 0, NULL, 0, deadline);
    pthread_rwlock_rdlock(&lis->hlock);
    struct handler hd = lis->h[h->op];
    int rc;
    if (hd.cb) {
        rc = hd.cb(hd.tp, c, h);
    } else {
        cm_log_sparse(1000, CM_LOG_VERBOSE, "xfer", "listener: opcode %u not served", h->op);
        reply(c, h, -CM_ENOT_SUPPORTED, NULL, 0, deadline);
        rc = -CM_ENOT_SUPPORTED; /* a payload may follow: drop the connection */
    }
    pthread_rwlock_unlock(&lis->hlock);
    return rc;
}

static void *conn_main(void *arg) {
    struct lconn *c = arg;
    struct xfer_listener *lis = c->lis;
    struct xfer_conn *io = &c->io;
    *io = (struct xfer_conn){.fd = c->fd, .timeout_ms = lis->eng->timeout_ms};
    io->rb.buf = cm_try_malloc(CONN_IN_CAP);
    io->rb.cap = io->rb.buf ? CONN_IN_CAP : 0; /* out of memory: unbuffered, still correct */
    io->rb.before_wait = conn_before_wait;
    io->rb.arg = io;
    io->out = cm_try_malloc(CONN_OUT_CAP);
    /* Idle pooled connections end after MC_TCP_IDLE_TIMEOUT seconds (default 300), so a peer
     * that vanished without a FIN does not hold this thread forever. */
    uint64_t idle = xfer__env_u64("MC_TCP_IDLE_TIMEOUT", 300);
    idle = idle ? idle : 300;
    for (;;) {
        uint8_t hb[XFER_WIRE_HDR_LEN];
        if (xfer__conn_read(io, hb, sizeof(hb), cm_mono_ns() + idle * 1000000000ull) < 0)
            break;
        struct xfer_wire_hdr h;
        int rc = xfer_wire_decode(hb, sizeof(hb), &h);
        if (rc < 0) {
            cm_log_sparse(1000, CM_LOG_VERBOSE, "xfer", "listener: bad header: %s",
                          cm_strerror(rc));
            break;
        }
        if (serve_one(lis, io, &h) < 0)
            break;
    }
    conn_flush(io, cm_mono_ns() + (uint64_t)io->timeout_ms * 1000000ull); /* refusals, say */
    cm_free(io->rb.buf);
    cm_free(io->out);
    io->rb.buf = io->out = NULL;
    pthread_mutex_lock(&lis->lock);
    shutdown(c->fd, SHUT_RDWR);
    if (!lis->stopping) {
        /* Unlink and free ourselves; stop() joins the ones still listed. */
        for (struct lconn **pp = &lis->conns; *pp; pp = &(*pp)->next)
            if (*pp == c) {
                *pp = c->next;
                break;
            }
        close(c->fd);
        pthread_detach(c->thr);
        cm_free(c);
    }
    lis->n_conns--;
    pthread_cond_broadcast(&lis->cond);
    pthread_mutex_unlock(&lis->lock);
    return NULL;
}

static void *accept_main(void *arg) {
    struct xfer_listener *lis = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = lis->fd, .events = POLLIN},
                              {.fd = lis->wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break;
        int fd = accept4(lis->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE)
                cm_sleep_ms(10);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        struct lconn *c = cm_try_calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->lis = lis;
        pthread_mutex_lock(&lis->lock);
        if (lis->stopping) {
            pthread_mutex_unlock(&lis->lock);
            close(fd);
            cm_free(c);
            break;
        }
        if (lis->n_conns >= LISTEN_MAX_CONNS) { /* one thread each: bound them */
            pthread_mutex_unlock(&lis->lock);
            cm_log_sparse(1000, CM_LOG_WARNING, "xfer", "listener: %d connections, refusing more",
                          LISTEN_MAX_CONNS);
            close(fd);
            cm_free(c);
            continue;
        }
        c->next = lis->conns;
        lis->conns = c;
        lis->n_conns++;
        if (pthread_create(&c->thr, NULL, conn_main, c) != 0) {
            lis->conns = c->next;
            lis->n_conns--;
            close(fd);
            cm_free(c);
        }
        pthread_mutex_unlock(&lis->lock);
    }
    return NULL;
}

/* Binds a socket to spec (listen(2) comes in xfer__listener_accept_start); writes the
 * advertised "host:port" to adv. Returns the socket or a negative code. */
static int bind_only(const char *spec, char *adv, size_t advlen) {
    char host[256];
    uint16_t p;
    if (xfer__split_hostport(spec, host, sizeof(host), &p) < 0)
        return -EINVAL;
    int fd = cm_net_tcp_bind(host, p, false);
    if (fd < 0)
        return fd;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    uint16_t bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                    : ((struct sockaddr_in *)&ss)->sin_port);
    const char *ah = host;
    char hn[256];
    if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0) {
        if (gethostname(hn, sizeof(hn)) == 0)
            ah = hn;
    }
    snprintf(adv, advlen, strchr(ah, ':') ? "[%s]:%u" : "%s:%u", ah, bound);
    return fd;
}

/*
 * Starts the engine listener on spec ("host:port"); with later, binds only (peers are refused
 * until xfer__listener_accept_start). Returns 0 or a negative code.
 */
int xfer__listener_start(struct xfer_engine *eng, const char *spec, int later) {
    struct xfer_listener *lis = cm_try_calloc(1, sizeof(*lis));
    if (!lis)
        return -ENOMEM;
    lis->eng = eng;
    lis->wake[0] = lis->wake[1] = -1;
    int fd = bind_only(spec, eng->addr, sizeof(eng->addr));
    if (fd < 0) {
        cm_free(lis);
        eng->addr[0] = '\0';
        return fd;
    }
    lis->fd = fd;
    if (pipe2(lis->wake, O_CLOEXEC) < 0) {
        int e = -errno;
        close(fd);
        cm_free(lis);
        return e;
    }
    pthread_mutex_init(&lis->lock, NULL);
    pthread_cond_init(&lis->cond, NULL);
    pthread_rwlock_init(&lis->hlock, NULL);
    eng->lis = lis;
    if (later)
        return 0;
    int rc = xfer__listener_accept_start(eng);
    if (rc < 0) {
        eng->lis = NULL;
        pthread_rwlock_destroy(&lis->hlock);
        pthread_cond_destroy(&lis->cond);
        pthread_mutex_destroy(&lis->lock);
        close(fd);
        close(lis->wake[0]);
        close(lis->wake[1]);
        cm_free(lis);
    }
    return rc;
}

/*
 * Makes the bound listener socket accept: listen(2) and the accept thread. Returns 0 (also when
 * already accepting) or a negative code (-EADDRINUSE when another socket started listening on
 * the same explicit port meanwhile). Not thread-safe against xfer__listener_stop.
 */
int xfer__listener_accept_start(struct xfer_engine *eng) {
    struct xfer_listener *lis = eng->lis;
    if (lis->accepting)
        return 0;
    if (listen(lis->fd, 512) < 0)
        return -errno;
    if (pthread_create(&lis->thr, NULL, accept_main, lis) != 0)
        return -EAGAIN;
    lis->accepting = 1;
    return 0;
}

/* Stops the listener: no new connections, every open one shut down and joined. */
void xfer__listener_stop(struct xfer_engine *eng) {
    struct xfer_listener *lis = eng->lis;
    if (!lis)
        return;
    if (lis->accepting) {
        ssize_t w = write(lis->wake[1], "x", 1);
        (void)w;
        pthread_join(lis->thr, NULL);
    }
    pthread_mutex_lock(&lis->lock);
    lis->stopping = 1;
    for (struct lconn *c = lis->conns; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR);
    while (lis->n_conns > 0)
        pthread_cond_wait(&lis->cond, &lis->lock);
    pthread_mutex_unlock(&lis->lock);
    while (lis->conns) {
        struct lconn *c = lis->conns;
        lis->conns = c->next;
        pthread_join(c->thr, NULL);
        close(c->fd);
        cm_free(c);
    }
    close(lis->fd);
    close(lis->wake[0]);
    close(lis->wake[1]);
    pthread_rwlock_destroy(&lis->hlock);
    pthread_cond_destroy(&lis->cond);
    pthread_mutex_destroy(&lis->lock);
    cm_free(lis);
    eng->lis = NULL;
}

/* Routes opcodes [first, last] to cb; see xfer_int.h. */
int xfer__listener_handle(struct xfer_engine *eng, uint8_t first, uint8_t last, xfer_serve_cb *cb,
                          struct xfer_transport *tp) {
    struct xfer_listener *lis = eng->lis;
    if (!lis)
        return -ENOTCONN;
    if (first > last || last > XFER_WIRE_OP_MAX || first < 16)
        return -EINVAL;
    pthread_rwlock_wrlock(&lis->hlock);
    for (int op = first; op <= last; op++)
        if (lis->h[op].cb) {
            pthread_rwlock_unlock(&lis->hlock);
            return -EBUSY;
        }
    for (int op = first; op <= last; op++)
        lis->h[op] = (struct handler){cb, tp};
    pthread_rwlock_unlock(&lis->hlock);
    return 0;
}

/* Removes the routes for [first, last]; waits for handlers running on them to return. */
void xfer__listener_unhandle(struct xfer_engine *eng, uint8_t first, uint8_t last) {
    struct xfer_listener *lis = eng->lis;
    if (!lis)
        return;
    pthread_rwlock_wrlock(&lis->hlock);
    for (int op = first; op <= last && op <= XFER_WIRE_OP_MAX; op++)
        lis->h[op] = (struct handler){NULL, NULL};
    pthread_rwlock_unlock(&lis->hlock);
}

/* Sends the descriptor request on fd and reads the reply header into *h. Returns 0 or a code;
 * *step names what failed. */
static int desc_request(int fd, uint64_t deadline, struct xfer_wire_hdr *h, const char **step) {
    struct xfer_wire_hdr q = {.op = XFER_WIRE_DESC_GET, .id = 1};
    uint8_t hb[XFER_WIRE_HDR_LEN];
    xfer_wire_encode(&q, hb);
    struct iovec v = {hb, sizeof(hb)};
    *step = "sending the descriptor request";
    int rc = xfer__sock_writev(fd, &v, 1, deadline);
    if (rc < 0)
        return rc;
    *step = "waiting for the descriptor reply";
    v = (struct iovec){hb, sizeof(hb)};
    rc = xfer__sock_readv(fd, &v, 1, deadline);
    if (rc < 0)
        return rc;
    *step = "reading the reply: not a Crescent transfer listener?";
    rc = xfer_wire_decode(hb, sizeof(hb), h);
    if (rc < 0)
        return rc;
    if (!(h->flags & XFER_WIRE_F_REPLY) || h->op != XFER_WIRE_DESC_GET || h->id != 1)
        return -CM_EPROTOCOL;
    *step = "the peer refused the descriptor request";
    if (h->status < 0)
        return h->status;
    *step = "reading the reply: bad descriptor length";
    return h->len == 0 || h->len > XFER_DESC_MAX ? -CM_EPROTOCOL : 0;
}

/* Fetches a peer's descriptor from its listener; see xfer.h. */
int xfer_fetch_desc(const char *hostport, uint32_t timeout_ms, void **desc, size_t *desc_len) {
    if (!timeout_ms)
        timeout_ms = XFER_DEFAULT_TIMEOUT_MS;
    uint64_t now = cm_mono_ns();
    uint64_t deadline = now + (uint64_t)timeout_ms * 1000000ull;
    uint64_t cdead = now + (uint64_t)(timeout_ms < 5000 ? timeout_ms : 5000) * 1000000ull;
    *desc = NULL;
    *desc_len = 0;
    const char *step = "connecting";
    int rc = xfer__sock_connect(hostport, cdead), fd = rc;
    struct xfer_wire_hdr h = {0};
    void *buf = NULL;
    if (rc >= 0)
        rc = desc_request(fd, deadline, &h, &step);
    if (rc >= 0) {
        step = "reading the descriptor";
        buf = cm_try_malloc((size_t)h.len);
        rc = buf ? 0 : -ENOMEM;
    }
    if (rc >= 0) {
        struct iovec v = {buf, (size_t)h.len};
        rc = xfer__sock_readv(fd, &v, 1, deadline);
    }
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        cm_free(buf);
        if (rc == -ECONNRESET && fd >= 0)
            rc = -CM_EPROTOCOL; /* the peer hung up mid-handshake */
        if (rc == -ETIMEDOUT)
            xfer__set_error("transfer peer %s: %s: no answer within %u ms", hostport, step,
                            fd >= 0 ? timeout_ms : (timeout_ms < 5000 ? timeout_ms : 5000));
        else
            xfer__set_error("transfer peer %s: %s: %s", hostport, step, cm_strerror(rc));
        return rc;
    }
    *desc = buf;
    *desc_len = (size_t)h.len;
    return 0;
}
