/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Networking of crescent-master: worker threads (one event loop each, SO_REUSEPORT listeners
 * so the kernel spreads connections), accept, request processing, idle timeout, kill requests,
 * shutdown, CLIENT LIST/KILL. Two backends move the bytes: epoll here (non-blocking reads into
 * the query buffer, replies written with writev in the before-sleep hook) and io_uring in
 * srv_net_uring.c (multishot accept and recv, batched sends), chosen at start-up.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_db.h"
#include "server/srv_defer.h"
#include "server/srv_net_int.h"
#include "server/srv_oplog.h"
#include "server/srv_pubsub.h"
#include "server/srv_server.h"

#include "common/cm_atomic.h"
#include "common/cm_ev.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "redis-compat/resp_write.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define SRV_READ_CHUNK     (16 * 1024)
#define SRV_DIRECT_MIN     (32 * 1024) /* SET values this big are read straight into the segment */
#define SRV_MAX_WRITE_LOOP (64u << 20) /* bytes written per client per event (fairness) */
#define SRV_URING_ENTRIES  1024        /* SQ slots per worker ring (the CQ has 4x) */

static struct srv_worker *srv_workers;
unsigned srv_nworkers;
static pthread_mutex_t srv_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srv_client *srv_registry;
static _Atomic uint64_t srv_next_client_id = 1;
/* Monotonic ms of each worker loop's last cron (0: not running); see srv_net_loop_lag_ms(). */
static _Atomic uint64_t srv_loop_alive[SRV_NET_MAX_WORKERS];
static _Atomic int srv_stopping;
int srv_net_uring;

static void srv_client_event_cb(struct cm_ev_loop *loop, int fd, unsigned mask, void *arg);

/* ---------------------------------------------------------------- listeners */

/* One address of --bind, resolved. */
struct srv_bind_addr {
    struct sockaddr_storage sa;
    socklen_t salen;
    int optional;  /* "-addr": skipped when the address is not available, as in Redis */
    char text[80]; /* host as given (brackets added for IPv6 in messages) */
};

static struct srv_bind_addr srv_binds[SRV_MAX_BINDS];
static int srv_nbinds;

/*
 * Resolves the space-separated --bind list into srv_binds: "*" and "0.0.0.0" mean every IPv4
 * address, "::" and "::*" every IPv6 address, "-" before an address makes it optional.
 * Returns 0 or a negative errno (-EINVAL with a logged reason).
 */
static int srv_parse_binds(const char *list) {
    char copy[1024];
    snprintf(copy, sizeof(copy), "%s", list && *list ? list : "0.0.0.0");
    srv_nbinds = 0;
    for (char *save = NULL, *t = strtok_r(copy, " \t", &save); t;
         t = strtok_r(NULL, " \t", &save)) {
        if (srv_nbinds == SRV_MAX_BINDS) {
            cm_log(CM_LOG_WARNING, "net", "too many bind addresses (at most %d)", SRV_MAX_BINDS);
            return -EINVAL;
        }
        struct srv_bind_addr *b = &srv_binds[srv_nbinds];
        memset(b, 0, sizeof(*b));
        if (*t == '-') {
            b->optional = 1;
            t++;
        }
        const char *host = t;
        if (strcmp(t, "*") == 0)
            host = "0.0.0.0";
        else if (strcmp(t, "::*") == 0)
            host = "::";
        struct addrinfo hints = {
            .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
        struct addrinfo *res = NULL;
        int rc = getaddrinfo(host, NULL, &hints, &res);
        if (rc != 0 || !res) {
            cm_log(CM_LOG_WARNING, "net", "cannot resolve bind address %s: %s", t,
                   rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
            if (res)
                freeaddrinfo(res);
            return -EINVAL;
        }
        memcpy(&b->sa, res->ai_addr, res->ai_addrlen);
        b->salen = res->ai_addrlen;
        freeaddrinfo(res);
        snprintf(b->text, sizeof(b->text), b->sa.ss_family == AF_INET6 ? "[%s]" : "%s", host);
        srv_nbinds++;
    }
    return srv_nbinds > 0 ? 0 : -EINVAL;
}

/*
 * Listens on b:port. reuseport = 1 lets every worker own a listener on the same port; the
 * first is opened with reuseport = 0 as a probe, so a port another process holds fails with
 * EADDRINUSE as in Redis instead of silently sharing its connections. IPv6 sockets are
 * IPV6_V6ONLY (as in Redis), so "0.0.0.0 ::" binds both families side by side.
 */
static int srv_listen_tcp(const struct srv_bind_addr *b, int port, int backlog, int reuseport) {
    struct sockaddr_storage sa = b->sa;
    if (sa.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&sa)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)&sa)->sin_port = htons((uint16_t)port);
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (sa.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (reuseport)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, b->salen) < 0 || listen(fd, backlog) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

static int srv_listen_unix(const char *path, int perm, int backlog) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    strcpy(sa.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    if (perm) { /* the configured digits are octal, as in redis.conf */
        mode_t mode = 0;
        for (int scale = 1; perm > 0; perm /= 10, scale *= 8)
            mode += (mode_t)((perm % 10) * scale);
        chmod(path, mode);
    }
    return fd;
}

/* ---------------------------------------------------------------- client life cycle */

static void srv_fmt_addr(const struct sockaddr_storage *ss, char *out, size_t n) {
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        snprintf(out, n, "%s:%u", ip, ntohs(in->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        char ip[INET6_ADDRSTRLEN];
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(out, n, "[%s]:%u", ip, ntohs(in6->sin6_port)); /* as Redis prints it */
    } else {
        snprintf(out, n, "%s:0", srv_cfg.unixsocket ? srv_cfg.unixsocket : "");
    }
}

static int srv_is_loopback(const struct sockaddr_storage *ss) {
    if (ss->ss_family == AF_UNIX)
        return 1;
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    return 0;
}

static struct srv_client *srv_client_create(struct srv_worker *w, int fd, int is_unix) {
    struct srv_client *c = cm_calloc(1, sizeof(*c));
    c->id = cm_atomic_add_relaxed(&srv_next_client_id, 1);
    c->fd = fd;
    c->proto = 2;
    c->worker = w;
    c->authenticated = (srv_cfg.requirepass == NULL || srv_cfg.requirepass[0] == '\0');
    c->ctime_ms = c->last_ms = cm_mono_ms();
    if (is_unix)
        c->flags |= SRV_CLIENT_UNIX;
    cm_buf_init(&c->qbuf);
    cm_buf_init(&c->out);
    struct resp_limits lim;
    resp_limits_default(&lim);
    lim.max_bulk_len = (size_t)srv_cfg.proto_max_bulk_len;
    resp_parser_init(&c->parser, &lim);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        srv_fmt_addr(&ss, c->addr, sizeof(c->addr));
    sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        srv_fmt_addr(&ss, c->laddr, sizeof(c->laddr));
    c->wnext = w->clients;
    if (w->clients)
        w->clients->wprev = c;
    w->clients = c;
    w->nclients++;
    pthread_mutex_lock(&srv_registry_lock);
    c->gnext = srv_registry;
    if (srv_registry)
        srv_registry->gprev = c;
    srv_registry = c;
    pthread_mutex_unlock(&srv_registry_lock);
    cm_atomic_add_relaxed(&srv_stats.connected_clients, 1);
    return c;
}

/* Removes c from the global registry (once). Registry lock held. */
static void srv_registry_unlink(struct srv_client *c) {
    if (c->unregistered)
        return;
    c->unregistered = 1;
    if (c->gprev)
        c->gprev->gnext = c->gnext;
    else
        srv_registry = c->gnext;
    if (c->gnext)
        c->gnext->gprev = c->gprev;
    c->gprev = c->gnext = NULL;
    cm_atomic_sub_relaxed(&srv_stats.connected_clients, 1);
}

static void srv_client_release_refs(struct srv_client *c) {
    for (int i = c->ref_idx; i < c->nrefs; i++)
        srv_obj_unref(c->refs[i].obj);
    c->nrefs = c->ref_idx = 0;
    c->ref_sent = 0;
    c->out_ref_bytes = 0;
}

/* Takes c off w's held list. */
static void srv_held_unlink(struct srv_worker *w, struct srv_client *c) {
    struct srv_client **pp = &w->held;
    while (*pp && *pp != c)
        pp = &(*pp)->held_next;
    if (*pp)
        *pp = c->held_next;
    c->flags &= ~SRV_CLIENT_HELD;
    c->held_next = NULL;
    if (!w->held)
        cm_atomic_store_release(&w->has_held, 0);
}

void srv_net__client_detach(struct srv_client *c) {
    struct srv_worker *w = c->worker;
    if (!srv_net_uring) {
        cm_ev_set(w->loop, c->fd, 0, NULL, NULL);
        close(c->fd);
    }
    if (c->wprev)
        c->wprev->wnext = c->wnext;
    else
        w->clients = c->wnext;
    if (c->wnext)
        c->wnext->wprev = c->wprev;
    c->wprev = c->wnext = NULL;
    w->nclients--;
    if (c->flags & SRV_CLIENT_PENDING_WRITE) {
        struct srv_client **pp = &w->pending;
        while (*pp && *pp != c)
            pp = &(*pp)->pw_next;
        if (*pp)
            *pp = c->pw_next;
        c->flags &= ~SRV_CLIENT_PENDING_WRITE;
    }
    if (c->flags & SRV_CLIENT_HELD)
        srv_held_unlink(w, c);
    pthread_mutex_lock(&srv_registry_lock);
    srv_registry_unlink(c);
    pthread_mutex_unlock(&srv_registry_lock);
    srv_pubsub_client_gone(c);
    srv_defer__client_gone(c);
}

void srv_net__client_release(struct srv_client *c) {
    srv_client_release_refs(c);
    srv_uring__tx_free(c);
    if (c->big.obj)
        srv_obj_unref(c->big.obj);
    srv_multi_reset(c);
    srv_unwatch_all(c);
    resp_parser_fini(&c->parser);
    cm_buf_fini(&c->qbuf);
    cm_buf_fini(&c->out);
    cm_free(c->refs);
    cm_free(c->argv);
    cm_free(c->name);
    cm_free(c->lib_name);
    cm_free(c->lib_ver);
    cm_free(c);
}

/* Closes c. On epoll at once; on io_uring its memory waits for the requests in flight. */
static void srv_client_free(struct srv_client *c) {
    if (srv_net_uring) {
        srv_uring__close(c);
        return;
    }
    srv_net__client_detach(c);
    srv_net__client_release(c);
}

void srv_net__client_free(struct srv_client *c) {
    srv_client_free(c);
}

void srv_client_kill(struct srv_client *c) {
    cm_atomic_store_relaxed(&c->kill, 1);
    cm_ev_wake(c->worker->loop);
}

/* ---------------------------------------------------------------- output */

void srv_client_add_ref(struct srv_client *c, struct srv_obj *obj, const char *p, size_t len) {
    if (c->nrefs == c->refs_cap) {
        c->refs_cap = c->refs_cap ? c->refs_cap * 2 : 8;
        c->refs = cm_realloc(c->refs, (size_t)c->refs_cap * sizeof(*c->refs));
    }
    c->refs[c->nrefs++] = (struct srv_outref){c->out.len, obj, p, len};
    c->out_ref_bytes += len;
}

void srv_net__want_write(struct srv_client *c) {
    if (c->flags & SRV_CLIENT_PENDING_WRITE)
        return;
    c->flags |= SRV_CLIENT_PENDING_WRITE;
    c->pw_next = c->worker->pending;
    c->worker->pending = c;
}

/* Builds the iovec of what remains to be sent. */
static int srv_client_iov(struct srv_client *c, struct iovec *iov, int max) {
    int n = 0, ri = c->ref_idx;
    size_t pos = c->out_sent, rsent = c->ref_sent;
    while (n < max) {
        size_t next_at = ri < c->nrefs ? c->refs[ri].at : c->out.len;
        if (pos < next_at) {
            iov[n++] = (struct iovec){c->out.data + pos, next_at - pos};
            pos = next_at;
            continue;
        }
        if (ri >= c->nrefs)
            break;
        iov[n++] = (struct iovec){(char *)c->refs[ri].p + rsent, c->refs[ri].len - rsent};
        ri++;
        rsent = 0;
    }
    return n;
}

/* Advances the output position by n written bytes, dropping pins of values fully sent. */
static void srv_client_advance(struct srv_client *c, size_t n) {
    while (n > 0) {
        size_t next_at = c->ref_idx < c->nrefs ? c->refs[c->ref_idx].at : c->out.len;
        if (c->out_sent < next_at) {
            size_t k = next_at - c->out_sent < n ? next_at - c->out_sent : n;
            c->out_sent += k;
            n -= k;
            continue;
        }
        struct srv_outref *r = &c->refs[c->ref_idx];
        size_t k = r->len - c->ref_sent < n ? r->len - c->ref_sent : n;
        c->ref_sent += k;
        c->out_ref_bytes -= k;
        n -= k;
        if (c->ref_sent == r->len) {
            srv_obj_unref(r->obj);
            c->ref_idx++;
            c->ref_sent = 0;
        }
    }
    /* A zero-length ref at the current position is complete too. */
    while (c->ref_idx < c->nrefs && c->refs[c->ref_idx].len == 0 &&
           c->refs[c->ref_idx].at == c->out_sent) {
        srv_obj_unref(c->refs[c->ref_idx].obj);
        c->ref_idx++;
    }
    if (c->out_sent == c->out.len && c->ref_idx == c->nrefs) {
        c->out.len = 0;
        c->out_sent = 0;
        c->nrefs = c->ref_idx = 0;
        if (c->out.cap > (1u << 20)) { /* give back a big reply buffer */
            cm_buf_fini(&c->out);
            cm_buf_init(&c->out);
        }
    }
}

/* Writes what it can. Returns 0, or -1 when the client was freed. */
static int srv_client_flush(struct srv_client *c) {
    struct srv_worker *w = c->worker;
    size_t budget = SRV_MAX_WRITE_LOOP;
    while (srv_client_pending(c) > 0 && budget > 0) {
        struct iovec iov[64];
        int n = srv_client_iov(c, iov, 64);
        ssize_t wr = writev(c->fd, iov, n);
        if (wr < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            cm_log(CM_LOG_VERBOSE, "net", "write to client %s failed: %s", c->addr,
                   strerror(errno));
            srv_client_free(c);
            return -1;
        }
        cm_pcounter_add(&srv_stats.net_output_bytes, (uint64_t)wr);
        srv_client_advance(c, (size_t)wr);
        budget = (size_t)wr >= budget ? 0 : budget - (size_t)wr;
    }
    /* A suspended client whose input ended is not read again (the EOF would stay readable). */
    unsigned rd = (c->flags & SRV_CLIENT_INPUT_EOF) ? 0 : CM_EV_READ;
    if (srv_client_pending(c) == 0) {
        if (c->flags & SRV_CLIENT_CLOSE_AFTER_REPLY) {
            srv_client_free(c);
            return -1;
        }
        cm_ev_set(w->loop, c->fd, rd, rd ? srv_client_event_cb : NULL, c);
        return 0;
    }
    /* Keep reading while replies wait, as Redis does: a client may send its whole pipeline
     * before it reads anything. client-output-buffer-limit bounds what may pile up. */
    cm_ev_set(w->loop, c->fd, rd | CM_EV_WRITE, srv_client_event_cb, c);
    return 0;
}

/* ---------------------------------------------------------------- input */

static void srv_client_set_argv(struct srv_client *c) {
    struct resp_parser *p = &c->parser;
    if (p->argc > c->argv_cap) {
        c->argv_cap = p->argc < 16 ? 16 : p->argc;
        c->argv = cm_realloc(c->argv, (size_t)c->argv_cap * sizeof(*c->argv));
    }
    const char *base = c->qbuf.data + c->qpos;
    for (int i = 0; i < p->argc; i++)
        c->argv[i] = (struct srv_arg){resp_arg_ptr(p, base, i), p->argv[i].len};
    c->argc = p->argc;
}

/* ---------------------------------------------------------------- large SET values */

/*
 * Called when the parser waits for the rest of a request. If it is SET/PUT key <big value>
 * with the value as the last argument, allocates the value in the segment now and moves the
 * bytes received so far there, so the rest is read straight into place (one copy less than
 * going through the query buffer, as Redis does for big arguments). Returns 1 when started.
 */
static int srv_big_start(struct srv_client *c) {
    struct resp_parser *p = &c->parser;
    if (p->bulklen < SRV_DIRECT_MIN || p->multibulk != 1 || p->argc != 2 || p->inline_base ||
        !c->authenticated || (c->flags & SRV_CLIENT_MULTI))
        return 0;
    const char *base = c->qbuf.data + c->qpos;
    size_t n0 = p->argv[0].len;
    const char *a0 = base + p->argv[0].off;
    if (!((n0 == 3 && strncasecmp(a0, "set", 3) == 0) ||
          (n0 == 3 && strncasecmp(a0, "put", 3) == 0)))
        return 0;
    size_t vstart = p->pos; /* the value's first byte, relative to the request */
    size_t have = c->qbuf.len - c->qpos - vstart;
    if (have >= (size_t)p->bulklen)
        return 0;
    struct srv_obj *o;
    srv_db_rdlock();
    int rc = srv_obj_create(base + p->argv[1].off, p->argv[1].len, (size_t)p->bulklen,
                            (size_t)p->bulklen, &o);
    srv_db_rdunlock();
    if (rc < 0)
        return 0; /* the normal path will report the error */
    c->big.obj = o;
    c->big.dst = srv_obj_val(o);
    c->big.len = (size_t)p->bulklen;
    c->big.got = have;
    c->big.hdr_len = vstart;
    memcpy(c->big.dst, base + vstart, have);
    c->qbuf.len = c->qpos + vstart; /* the value bytes now live in the segment */
    return 1;
}

/* Runs the SET once the value and its CRLF are in. Returns 1 when done, 0 to wait. */
static int srv_big_finish(struct srv_client *c) {
    if (c->big.got < c->big.len || c->qbuf.len - c->qpos < c->big.hdr_len + 2)
        return 0;
    struct srv_obj *o = c->big.obj;
    c->big.obj = NULL;
    c->argc = 0;
    srv_db_rdlock();
    srv_set_prebuilt(c, o);
    srv_db_rdunlock();
    resp_parser_reset_request(&c->parser);
    c->qpos += c->big.hdr_len + 2; /* header, then the value's CRLF (not checked, like Redis) */
    return 1;
}

/* Parses and runs every complete command in the query buffer, up to one that suspends c
 * (srv_defer.h); nothing while c is suspended. Returns -1 if c was freed. */
static int srv_client_process(struct srv_client *c) {
    if (c->defer)
        return 0; /* input waits in qbuf until the deferred reply is in */
    if (c->big.obj && !srv_big_finish(c))
        return 0;
    while (c->qpos < c->qbuf.len && !c->defer) {
        if (c->flags & (SRV_CLIENT_CLOSE_AFTER_REPLY | SRV_CLIENT_CLOSE_ASAP))
            break;
        c->parser.auth_required = !c->authenticated;
        enum resp_result r =
            resp_parse_request(&c->parser, c->qbuf.data + c->qpos, c->qbuf.len - c->qpos);
        if (r == RESP_INCOMPLETE) {
            srv_big_start(c);
            break;
        }
        if (r == RESP_ERROR) {
            cm_log(CM_LOG_VERBOSE, "net", "protocol error from client %s: %s", c->addr,
                   c->parser.errstr);
            srv_reply_error(c, c->parser.errstr);
            c->flags |= SRV_CLIENT_CLOSE_AFTER_REPLY;
            c->qpos = c->qbuf.len;
            break;
        }
        size_t consumed = c->parser.consumed;
        if (c->parser.argc > 0) {
            srv_client_set_argv(c);
            c->defer_ok = 1;
            srv_dispatch(c);
            c->defer_ok = 0;
            c->argc = 0;
        }
        resp_parser_reset_request(&c->parser);
        c->qpos += consumed;
    }
    if (c->qpos > 0) {
        cm_buf_consume(&c->qbuf, c->qpos);
        c->qpos = 0;
    }
    if (cm_atomic_load_relaxed(&c->kill))
        c->flags |= SRV_CLIENT_CLOSE_ASAP;
    if ((c->flags & SRV_CLIENT_INPUT_EOF) && !c->defer) /* ran what came before the EOF */
        c->flags |= SRV_CLIENT_CLOSE_AFTER_REPLY;
    if (c->flags & SRV_CLIENT_CLOSE_ASAP) {
        srv_client_free(c);
        return -1;
    }
    if (srv_pubsub_obuf_over(c)) {
        cm_log(CM_LOG_WARNING, "net",
               "closing client %s: %zu bytes of output over client-output-buffer-limit", c->addr,
               srv_client_pending(c));
        srv_client_free(c);
        return -1;
    }
    if (srv_client_pending(c) > 0 || (c->flags & SRV_CLIENT_CLOSE_AFTER_REPLY))
        srv_net__want_write(c);
    return 0;
}

void srv_net__resume(struct srv_client *c) {
    srv_client_process(c); /* may close c */
}

/*
 * The peer ended its input (a half-close) while c is suspended: what it sent before still
 * runs once c resumes, then c closes after its replies. Nothing more is read.
 */
static void srv_client_input_eof(struct srv_client *c) {
    c->flags |= SRV_CLIENT_INPUT_EOF;
    cm_ev_set(c->worker->loop, c->fd, srv_client_pending(c) > 0 ? CM_EV_WRITE : 0,
              srv_client_pending(c) > 0 ? srv_client_event_cb : NULL, c);
}

/* Closes c when its query buffer passed client-query-buffer-limit. Returns -1 then, else 0. */
static int srv_client_check_qbuf(struct srv_client *c) {
    if (c->qbuf.len <= (size_t)srv_cfg.client_query_buffer_limit)
        return 0;
    cm_log(CM_LOG_WARNING, "net", "closing client %s: query buffer of %zu bytes over the limit",
           c->addr, c->qbuf.len);
    srv_client_free(c);
    return -1;
}

size_t srv_net__recv_want(struct srv_client *c) {
    size_t want = SRV_READ_CHUNK;
    if (c->parser.want > c->qbuf.len && c->parser.want - c->qbuf.len > want)
        want = c->parser.want - c->qbuf.len; /* read a big bulk in as few calls as possible */
    cm_buf_reserve(&c->qbuf, want);
    return want;
}

int srv_net__received(struct srv_client *c, size_t n) {
    c->qbuf.len += n;
    c->last_ms = cm_ev_now_ms(c->worker->loop);
    cm_pcounter_add(&srv_stats.net_input_bytes, (uint64_t)n);
    if (srv_client_check_qbuf(c) < 0)
        return -1;
    return srv_client_process(c);
}

int srv_net__feed(struct srv_client *c, const char *p, size_t n) {
    c->last_ms = cm_ev_now_ms(c->worker->loop);
    cm_pcounter_add(&srv_stats.net_input_bytes, (uint64_t)n);
    if (c->big.obj && c->big.got < c->big.len) {
        size_t k = c->big.len - c->big.got < n ? c->big.len - c->big.got : n;
        memcpy(c->big.dst + c->big.got, p, k);
        c->big.got += k;
        p += k;
        n -= k;
        if (c->big.got < c->big.len)
            return 0;
    }
    if (n > 0)
        cm_buf_append(&c->qbuf, p, n);
    if (srv_client_check_qbuf(c) < 0)
        return -1;
    return srv_client_process(c);
}

/* Socket events of a client: flush pending replies, then read and run new requests. */
static void srv_client_event_cb(struct cm_ev_loop *loop, int fd, unsigned mask, void *arg) {
    struct srv_client *c = arg;
    (void)loop;
    if (mask & CM_EV_WRITE) {
        if (c->flags & SRV_CLIENT_HELD) { /* HA: the output waits for the op-log */
            unsigned rd = (c->flags & SRV_CLIENT_INPUT_EOF) ? 0 : CM_EV_READ;
            cm_ev_set(loop, fd, rd, rd ? srv_client_event_cb : NULL, c);
        } else if (srv_client_flush(c) < 0) {
            return;
        }
    }
    if (!(mask & CM_EV_READ))
        return;
    if (c->big.obj && c->big.got < c->big.len) {
        ssize_t n = read(fd, c->big.dst + c->big.got, c->big.len - c->big.got);
        if (n <= 0) {
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
            srv_client_free(c);
            return;
        }
        c->big.got += (size_t)n;
        c->last_ms = cm_ev_now_ms(c->worker->loop);
        cm_pcounter_add(&srv_stats.net_input_bytes, (uint64_t)n);
        if (c->big.got < c->big.len)
            return;
    }
    size_t want = srv_net__recv_want(c);
    ssize_t n = read(fd, c->qbuf.data + c->qbuf.len, want);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n == 0 && c->defer) {
            srv_client_input_eof(c);
            return;
        }
        if (n == 0 && (c->flags & SRV_CLIENT_HELD)) { /* half-close: held replies go out first */
            c->flags |= SRV_CLIENT_INPUT_EOF | SRV_CLIENT_CLOSE_AFTER_REPLY;
            cm_ev_set(loop, fd, 0, NULL, NULL);
            return;
        }
        srv_client_free(c);
        return;
    }
    srv_net__received(c, (size_t)n);
}

/* ---------------------------------------------------------------- accept */

static const char srv_denied_msg[] =
    "-DENIED Redis is running in protected mode because protected mode is enabled and no "
    "password is set for the default user. In this mode connections are only accepted from the "
    "loopback interface. If you want to connect from external computers to Redis you may adopt "
    "one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG "
    "SET protected-mode no' from the loopback interface by connecting to Redis from the same "
    "host the server is running, however MAKE SURE Redis is not publicly accessible from "
    "internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively "
    "you can just disable the protected mode by editing the Redis configuration file, and "
    "setting the protected mode option to 'no', and then restarting the server. 3) If you "
    "started the server manually just for testing, restart it with the '--protected-mode no' "
    "option. 4) Set up an authentication password for the default user. NOTE: You only need to "
    "do one of the above things in order for the server to start accepting connections from "
    "the outside.\r\n";

static void srv_reject(int fd, const char *msg, size_t len) {
    if (write(fd, msg, len) < 0) {
        /* best effort */
    }
    close(fd);
    cm_atomic_add_relaxed(&srv_stats.rejected_connections, 1);
}

struct srv_client *srv_net__accept_fd(struct srv_worker *w, int fd, int is_unix) {
    cm_atomic_add_relaxed(&srv_stats.total_connections, 1);
    if (cm_atomic_load_relaxed(&srv_stats.connected_clients) >= (uint64_t)srv_cfg.maxclients) {
        static const char msg[] = "-ERR max number of clients reached\r\n";
        srv_reject(fd, msg, sizeof(msg) - 1);
        return NULL;
    }
    if (srv_cfg.protected_mode && (!srv_cfg.requirepass || !*srv_cfg.requirepass) && !is_unix) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0 || !srv_is_loopback(&ss)) {
            srv_reject(fd, srv_denied_msg, sizeof(srv_denied_msg) - 1);
            return NULL;
        }
    }
    if (!is_unix) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (srv_cfg.tcp_keepalive > 0) {
            int idle = (int)srv_cfg.tcp_keepalive;
            setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
            setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        }
    }
    return srv_client_create(w, fd, is_unix);
}

static void srv_accept_cb(struct cm_ev_loop *loop, int lfd, unsigned mask, void *arg) {
    struct srv_worker *w = arg;
    (void)mask;
    int is_unix = 0;
    for (int i = 0; i < w->nls; i++)
        if (w->ls[i].fd == lfd)
            is_unix = w->ls[i].is_unix;
    for (int i = 0; i < 64; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR)
                cm_log_sparse(1000, CM_LOG_WARNING, "net", "accept failed: %s", strerror(errno));
            return;
        }
        struct srv_client *c = srv_net__accept_fd(w, fd, is_unix);
        if (c && cm_ev_set(loop, fd, CM_EV_READ, srv_client_event_cb, c) < 0) {
            cm_log(CM_LOG_WARNING, "net", "fd %d out of range, closing client", fd);
            srv_client_free(c);
        }
    }
}

/* ---------------------------------------------------------------- worker hooks */

/*
 * The op-log refused or lost entries that replies of this iteration report (a deposed HA
 * leader): those replies must not reach their clients, so every client with output waiting
 * (held or not) is closed instead (it reconnects and finds the new leader).
 */
static void srv_drop_unsynced(struct srv_worker *w) {
    w->pending = NULL;
    w->held = NULL;
    cm_atomic_store_release(&w->has_held, 0);
    struct srv_client *c = w->clients, *next;
    for (; c; c = next) {
        next = c->wnext;
        c->flags &= ~(SRV_CLIENT_PENDING_WRITE | SRV_CLIENT_HELD);
        c->held_next = NULL;
        if (srv_client_pending(c) > 0)
            srv_client_free(c);
    }
}

/* Writes c's output (either backend). c may be closed on return. */
static void srv_flush_now(struct srv_client *c) {
    if (srv_net_uring)
        srv_uring__flush(c);
    else
        srv_client_flush(c);
}

/*
 * HA: c's output (all of it, including what earlier iterations left) may leave only once the
 * op-log entry need is stored: c goes on w's held list, its need_seq raised to need.
 */
static void srv_hold(struct srv_worker *w, struct srv_client *c, uint64_t need) {
    if (c->need_seq < need)
        c->need_seq = need;
    if (c->flags & SRV_CLIENT_HELD)
        return;
    c->flags |= SRV_CLIENT_HELD;
    c->held_next = w->held;
    w->held = c;
}

/*
 * Releases the held clients whose entries the op-log has stored (their output is written) and
 * closes, without their replies, those whose entries it refused or dropped (a deposed leader).
 * has_held is set before the op-log is read, so a move after the read wakes the loop again.
 */
static void srv_held_drain(struct srv_worker *w) {
    if (!w->held)
        return;
    atomic_store(&w->has_held, 1);
    uint64_t durable, failed;
    srv_oplog_progress(&durable, &failed);
    struct srv_client **pp = &w->held;
    while (*pp) {
        struct srv_client *c = *pp;
        if (durable < c->need_seq && failed < c->need_seq) {
            pp = &c->held_next;
            continue;
        }
        *pp = c->held_next; /* off the list before c may be closed */
        c->held_next = NULL;
        c->flags &= ~SRV_CLIENT_HELD;
        if (durable >= c->need_seq) {
            c->need_seq = 0;
            srv_flush_now(c);
        } else {
            srv_client_free(c);
        }
    }
    if (!w->held)
        cm_atomic_store_release(&w->has_held, 0);
}

/* Op-log progress hook (writer thread, op-log mutex held): wakes the loops holding replies. */
static void srv_oplog_progress_wake(void) {
    if (cm_atomic_load_acquire(&srv_stopping))
        return;
    for (unsigned i = 0; srv_workers && i < srv_nworkers; i++)
        if (atomic_load(&srv_workers[i].has_held))
            cm_ev_wake(srv_workers[i].loop);
}

/* End of a loop iteration: the replies it produced leave, or wait for the op-log (HA). */
static void srv_before_sleep(struct cm_ev_loop *loop, void *arg) {
    struct srv_worker *w = arg;
    (void)loop;
    uint64_t need = 0;
    if (srv_oplog_take_need(&need) < 0) { /* HA: metadata these replies report was not stored */
        srv_drop_unsynced(w);
        return;
    }
    while (w->pending) {
        struct srv_client *c = w->pending;
        w->pending = c->pw_next;
        c->flags &= ~SRV_CLIENT_PENDING_WRITE;
        if (need == 0 && !(c->flags & SRV_CLIENT_HELD))
            srv_flush_now(c);
        else
            srv_hold(w, c, need);
    }
    srv_held_drain(w);
}

static void srv_check_kills(struct cm_ev_loop *loop, void *arg) {
    struct srv_worker *w = arg;
    (void)loop;
    struct srv_client *c = w->clients, *next;
    for (; c; c = next) {
        next = c->wnext;
        if (cm_atomic_load_relaxed(&c->kill))
            srv_client_free(c);
    }
}

/* Wake hook: replies the op-log released, messages other threads published for this loop's
 * clients, then kill requests. */
static void srv_wake(struct cm_ev_loop *loop, void *arg) {
    srv_held_drain(arg);
    srv_pubsub_drain(arg);
    srv_defer__drain(arg);
    srv_check_kills(loop, arg);
}

/* How long the slowest running loop has gone without its cron; see srv_server.h. */
uint64_t srv_net_loop_lag_ms(uint64_t now) {
    uint64_t lag = 0;
    for (unsigned i = 0; i < SRV_NET_MAX_WORKERS; i++) {
        uint64_t t = cm_atomic_load_relaxed(&srv_loop_alive[i]);
        if (t != 0 && now > t && now - t > lag)
            lag = now - t;
    }
    return lag;
}

static void srv_cron(struct cm_ev_loop *loop, void *arg) {
    struct srv_worker *w = arg;
    uint64_t now = cm_ev_now_ms(loop);
    if (w->id < SRV_NET_MAX_WORKERS)
        cm_atomic_store_relaxed(&srv_loop_alive[w->id], cm_mono_ms());
    srv_check_kills(loop, arg);
    if (srv_net_uring)
        srv_uring__sweep(w, now);
    if (srv_cfg.timeout > 0) {
        struct srv_client *c = w->clients, *next;
        for (; c; c = next) {
            next = c->wnext;
            if (now - c->last_ms > (uint64_t)srv_cfg.timeout * 1000 && srv_client_pending(c) == 0 &&
                !(c->flags & SRV_CLIENT_MULTI) && !srv_pubsub_subscribed(c) && !c->defer) {
                cm_log(CM_LOG_VERBOSE, "net", "closing idle client %s", c->addr);
                srv_client_free(c);
            }
        }
    }
    srv_db_rdlock();
    srv_db_active_expire(w->id, srv_nworkers, 1000, srv_now_ms());
    srv_db_rdunlock();
    if (cm_atomic_load_relaxed(&srv_stopping))
        cm_ev_stop(loop);
}

static int srv_worker_drained(void *arg) {
    struct srv_worker *w = arg;
    return w->nclosing == 0;
}

static void *srv_worker_main(void *arg) {
    struct srv_worker *w = arg;
    srv_db_register_thread(w->id);
    srv_pubsub_thread_init(w);
    if (w->id < SRV_NET_MAX_WORKERS)
        cm_atomic_store_relaxed(&srv_loop_alive[w->id], cm_mono_ms());
    int rc = cm_ev_run(w->loop);
    if (w->id < SRV_NET_MAX_WORKERS)
        cm_atomic_store_relaxed(&srv_loop_alive[w->id], 0);
    if (rc < 0)
        cm_log(CM_LOG_WARNING, "net", "event loop %u failed: %s", w->id, strerror(-rc));
    /* Close this worker's clients on its own thread; on io_uring let their requests finish. */
    w->stopping = 1;
    while (w->clients)
        srv_client_free(w->clients);
    if (cm_ev_drain(w->loop, srv_worker_drained, w, 2000) < 0)
        cm_log(CM_LOG_WARNING, "net", "%u connections still busy at exit", w->nclosing);
    if (rc < 0)
        srv_shutdown_request();
    return NULL;
}

/* ---------------------------------------------------------------- start and stop */

void srv_shutdown_request(void) {
    cm_atomic_store_release(&srv_stopping, 1);
    cm_atomic_store_release(&srv_state, SRV_STATE_STOPPING);
    for (unsigned i = 0; srv_workers && i < srv_nworkers; i++)
        cm_ev_stop(srv_workers[i].loop);
}

/* Adds a listener to w (epoll: watched for accepts now; io_uring: armed by worker init). */
static void srv_worker_add_listener(struct srv_worker *w, int fd, int is_unix) {
    struct srv_listener *l = &w->ls[w->nls++];
    memset(l, 0, sizeof(*l));
    l->fd = fd;
    l->is_unix = is_unix;
    l->w = w;
    if (!srv_net_uring)
        cm_ev_set(w->loop, fd, CM_EV_READ, srv_accept_cb, w);
}

/* Probes every --bind address (plain bind, no SO_REUSEPORT) so a taken port fails as in Redis;
 * drops optional addresses that are not available. Returns 0 or -errno (logged). */
static int srv_probe_binds(void) {
    int rc = srv_parse_binds(srv_cfg.bind);
    if (rc < 0) {
        cm_log(CM_LOG_WARNING, "net", "invalid bind '%s'", srv_cfg.bind);
        return rc;
    }
    for (int i = 0; i < srv_nbinds; i++) {
        int probe = srv_listen_tcp(&srv_binds[i], (int)srv_cfg.port, 1, 0);
        if (probe >= 0) {
            close(probe);
            continue;
        }
        if (srv_binds[i].optional &&
            (probe == -EADDRNOTAVAIL || probe == -EAFNOSUPPORT || probe == -EPROTONOSUPPORT)) {
            cm_log(CM_LOG_NOTICE, "net", "skipping optional bind address %s: %s", srv_binds[i].text,
                   strerror(-probe));
            memmove(&srv_binds[i], &srv_binds[i + 1],
                    (size_t)(srv_nbinds - i - 1) * sizeof(srv_binds[0]));
            srv_nbinds--;
            i--;
            continue;
        }
        cm_log(CM_LOG_WARNING, "net", "could not listen on %s:%lld: %s", srv_binds[i].text,
               srv_cfg.port, strerror(-probe));
        return probe;
    }
    if (srv_nbinds == 0 && !(srv_cfg.unixsocket && *srv_cfg.unixsocket)) {
        cm_log(CM_LOG_WARNING, "net", "no bind address is available");
        return -EADDRNOTAVAIL;
    }
    return 0;
}

static int srv_workers_setup(void) {
    int maxfd = (int)srv_cfg.maxclients + 1024;
    srv_db_set_threads(srv_nworkers);
    int rc = srv_probe_binds();
    if (rc < 0)
        return rc;
    srv_workers = cm_calloc(srv_nworkers, sizeof(*srv_workers));
    srv_oplog_set_progress_hook(srv_oplog_progress_wake);
    for (unsigned i = 0; i < srv_nworkers; i++) {
        struct srv_worker *w = &srv_workers[i];
        w->id = i;
        pthread_mutex_init(&w->defer_mu, NULL);
        w->loop =
            srv_net_uring ? cm_ev_create_uring(maxfd, SRV_URING_ENTRIES) : cm_ev_create(maxfd);
        if (!w->loop) {
            int err = -errno;
            cm_log(CM_LOG_WARNING, "net", "cannot create event loop: %s", strerror(-err));
            return err;
        }
        for (int b = 0; b < srv_nbinds; b++) {
            int fd = srv_listen_tcp(&srv_binds[b], (int)srv_cfg.port, (int)srv_cfg.tcp_backlog, 1);
            if (fd < 0) {
                cm_log(CM_LOG_WARNING, "net", "could not listen on %s:%lld: %s", srv_binds[b].text,
                       srv_cfg.port, strerror(-fd));
                return fd;
            }
            srv_worker_add_listener(w, fd, 0);
        }
        cm_ev_set_before_sleep(w->loop, srv_before_sleep, w);
        cm_ev_set_cron(w->loop, (unsigned)(1000 / (srv_cfg.hz > 0 ? srv_cfg.hz : 10)), srv_cron, w);
        cm_ev_set_wake_hook(w->loop, srv_wake, w);
    }
    if (srv_cfg.unixsocket && *srv_cfg.unixsocket) {
        int fd = srv_listen_unix(srv_cfg.unixsocket, (int)srv_cfg.unixsocketperm,
                                 (int)srv_cfg.tcp_backlog);
        if (fd < 0) {
            cm_log(CM_LOG_WARNING, "net", "could not listen on unix socket %s: %s",
                   srv_cfg.unixsocket, strerror(-fd));
            return fd;
        }
        srv_worker_add_listener(&srv_workers[0], fd, 1);
    }
    for (unsigned i = 0; srv_net_uring && i < srv_nworkers; i++) {
        rc = srv_uring__worker_init(&srv_workers[i]);
        if (rc < 0) {
            cm_log(CM_LOG_WARNING, "net", "io_uring set-up failed: %s", strerror(-rc));
            return rc;
        }
    }
    return 0;
}

static void srv_workers_teardown(void) {
    for (unsigned i = 0; srv_workers && i < srv_nworkers; i++) {
        struct srv_worker *w = &srv_workers[i];
        if (!w->loop)
            continue;
        if (!srv_net_uring) /* io_uring: the worker closed them (or never started) */
            while (w->clients)
                srv_client_free(w->clients);
        cm_ev_destroy(w->loop);
        for (int l = 0; l < w->nls; l++) {
            close(w->ls[l].fd);
            if (w->ls[l].is_unix)
                unlink(srv_cfg.unixsocket);
        }
        srv_uring__worker_fini(w);
    }
    cm_free(srv_workers);
    srv_workers = NULL;
}

/* The start-up line: every address listened on. */
static void srv_log_ready(void) {
    struct cm_buf b;
    cm_buf_init(&b);
    for (int i = 0; i < srv_nbinds; i++)
        cm_buf_appendf(&b, "%s%s:%lld", i ? ", " : "", srv_binds[i].text, srv_cfg.port);
    if (srv_cfg.unixsocket && *srv_cfg.unixsocket)
        cm_buf_appendf(&b, "%sunix:%s", srv_nbinds ? ", " : "", srv_cfg.unixsocket);
    cm_buf_append(&b, "", 1);
    cm_log(CM_LOG_NOTICE, "net", "ready to accept connections on %s (%u threads, %s)", b.data,
           srv_nworkers, srv_net_uring ? "io_uring" : "epoll");
    cm_buf_fini(&b);
}

const char *srv_io_backend_name(void) {
    return srv_net_uring ? "uring" : "epoll";
}

/* Picks the backend: --io-backend, and for auto the io_uring probe. 0 or -errno (logged). */
static int srv_choose_backend(void) {
    char why[256] = "";
    srv_net_uring = 0;
    if (srv_cfg.io_backend == SRV_IO_EPOLL)
        return 0;
    int rc = cm_ev_uring_probe(why, sizeof(why));
    if (rc == 0) {
        srv_net_uring = 1;
        return 0;
    }
    if (srv_cfg.io_backend == SRV_IO_URING) {
        cm_log(CM_LOG_WARNING, "net", "io-backend uring is not available: %s", why);
        return rc;
    }
    cm_log(CM_LOG_NOTICE, "net", "io_uring not available (%s); using epoll", why);
    return 0;
}

int srv_net_run(void) {
    if (srv_choose_backend() < 0)
        return 1;
    int rc = srv_workers_setup();
    if (rc < 0) {
        srv_workers_teardown();
        return 1;
    }
    cm_atomic_store_release(&srv_state, SRV_STATE_SERVING);
    srv_log_ready();
    for (unsigned i = 1; i < srv_nworkers; i++)
        pthread_create(&srv_workers[i].thread, NULL, srv_worker_main, &srv_workers[i]);
    srv_worker_main(&srv_workers[0]);
    srv_shutdown_request();
    for (unsigned i = 1; i < srv_nworkers; i++)
        pthread_join(srv_workers[i].thread, NULL);
    srv_defer_shutdown(srv_workers, srv_nworkers); /* before the loops and the keyspace go */
    srv_workers_teardown();
    return 0;
}

/* ---------------------------------------------------------------- CLIENT LIST / KILL */

void srv_client_info_line(struct srv_client *c, struct cm_buf *out) {
    uint64_t now = cm_mono_ms();
    char flags[8] = "N";
    int sub, psub, ssub;
    srv_pubsub_counts(c, &sub, &psub, &ssub);
    if (c->flags & SRV_CLIENT_MULTI)
        strcpy(flags, "x");
    else if (c->defer)
        strcpy(flags, "b"); /* suspended on a deferred reply, as Redis shows a blocked client */
    else if (sub + psub + ssub > 0)
        strcpy(flags, "P");
    cm_buf_appendf(out,
                   "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu flags=%s db=0 "
                   "sub=%d psub=%d ssub=%d multi=%d qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=0 "
                   "rbs=%zu rbp=0 obl=%zu oll=%d omem=%zu tot-mem=%zu events=r cmd=%s "
                   "user=default redir=-1 resp=%d lib-name=%s lib-ver=%s",
                   (unsigned long long)c->id, c->addr, c->laddr, c->fd, c->name ? c->name : "",
                   (unsigned long long)((now - c->ctime_ms) / 1000),
                   (unsigned long long)((now - c->last_ms) / 1000), flags, sub, psub, ssub,
                   (c->flags & SRV_CLIENT_MULTI) ? c->mq_len : -1, c->qbuf.len,
                   c->qbuf.cap - c->qbuf.len, c->qbuf.cap, c->out.len, c->nrefs, c->out_ref_bytes,
                   c->qbuf.cap + c->out.cap + sizeof(*c), c->last_cmd ? c->last_cmd : "NULL",
                   c->proto, c->lib_name ? c->lib_name : "", c->lib_ver ? c->lib_ver : "");
}

void srv_clients_list(struct cm_buf *out, uint64_t only_id) {
    pthread_mutex_lock(&srv_registry_lock);
    for (struct srv_client *c = srv_registry; c; c = c->gnext) {
        if (only_id && c->id != only_id)
            continue;
        srv_client_info_line(c, out);
        cm_buf_append(out, "\n", 1);
    }
    pthread_mutex_unlock(&srv_registry_lock);
}

int srv_clients_kill(const struct srv_kill_filter *f) {
    int killed = 0;
    pthread_mutex_lock(&srv_registry_lock);
    struct srv_client *next;
    for (struct srv_client *c = srv_registry; c; c = next) {
        next = c->gnext;
        if (f->id && c->id != f->id)
            continue;
        if (f->addr && strcmp(f->addr, c->addr) != 0)
            continue;
        if (f->laddr && strcmp(f->laddr, c->laddr) != 0)
            continue;
        if (f->skipme && c == f->me)
            continue;
        if (c == f->me) {
            c->flags |= SRV_CLIENT_CLOSE_AFTER_REPLY;
        } else {
            /* Gone from CLIENT LIST and INFO at once, like Redis; its own thread closes it. */
            srv_registry_unlink(c);
            srv_client_kill(c);
        }
        killed++;
    }
    pthread_mutex_unlock(&srv_registry_lock);
    return killed;
}
