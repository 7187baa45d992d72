/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shm transport: same-host zero-copy. The initiator reaches the target's registered memory
 * directly and copies once, in the submitting thread:
 *   - memfd-backed buffers (xfer_engine_alloc_shared) are mapped into the initiator: at
 *     open_segment it asks the target's Unix socket (abstract name in the endpoint blob) for each
 *     such buffer's memfd, received with SCM_RIGHTS, and mmaps it; transfers are then memcpy;
 *   - any other buffer is reached with cross-memory attach (process_vm_readv/writev) on the
 *     target's pid.
 * reachable() admits only peers with the same host identity (boot id, pid and net namespace).
 * The target serves the fd requests from one thread; each request is bounds-checked against its
 * remote-accessible registrations. Bounds of individual transfers are checked on the initiator
 * against the descriptor (the target's kernel-level protection is the Unix user boundary).
 */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include "transfer/core/xfer_pinned.h"

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define SHM_KEY_MEMFD 1 /* per-MR key byte: the buffer is memfd-backed */
#define SHM_CMA_CHUNK (1u << 30)

struct shm_ctx {
    struct xfer_transport *tp;
    int lfd;     /* abstract Unix listener */
    int wake[2]; /* stop pipe */
    pthread_t thr;
    char sun_path[64]; /* abstract name without the leading NUL */
    int use_memfd;     /* map memfd buffers (arg memfd=0 forces CMA) */
};

struct shm_seg {
    pid_t pid;
    uint32_t n_buf;
    void **map;      /* per desc buffer: mapped address of its first byte, or NULL */
    void **map_base; /* per desc buffer: mmap base to unmap */
    size_t *map_len;
};

/* Request: u64 addr, u64 len. Reply: i32 status, u32 pad, u64 memfd offset; fd attached. */
struct shm_req {
    uint64_t addr, len;
};
struct shm_rep {
    int32_t status;
    uint32_t pad;
    uint64_t off;
};

static void shm_serve_one(struct shm_ctx *c, int fd) {
    struct shm_req rq;
    struct shm_rep rp = {.status = -CM_EINVALID_PARAMS};
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 5000) != 1 || recv(fd, &rq, sizeof(rq), MSG_WAITALL) != sizeof(rq))
        return;
    struct xfer_mr *mr = NULL;
    int memfd = -1;
    if (xfer__mr_acquire_remote(c->tp->eng, rq.addr, rq.len, &mr) == 0) {
        if (mr->memfd >= 0) {
            memfd = fcntl(mr->memfd, F_DUPFD_CLOEXEC, 0);
            rp.off = mr->memfd_off + (rq.addr - mr->addr);
            rp.status = memfd >= 0 ? 0 : -EMFILE;
        }
        xfer__mr_release(c->tp->eng, mr);
    } else {
        cm_log_sparse(1000, CM_LOG_WARNING, "xfer", "shm: refused map of %llu bytes at 0x%llx",
                      (unsigned long long)rq.len, (unsigned long long)rq.addr);
    }
    struct iovec v = {&rp, sizeof(rp)};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    if (memfd >= 0) {
        m.msg_control = u.buf;
        m.msg_controllen = sizeof(u.buf);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
    }
    if (sendmsg(fd, &m, MSG_NOSIGNAL) < 0)
        cm_log(CM_LOG_VERBOSE, "xfer", "shm: reply failed: %s", cm_strerror(-errno));
    if (memfd >= 0)
        close(memfd);
}

static void *shm_accept_main(void *arg) {
    struct shm_ctx *c = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = c->lfd, .events = POLLIN},
                              {.fd = c->wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        if (p[1].revents)
            return NULL;
        int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        /* Only processes of our own user may ask (the abstract namespace has no permissions). */
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        struct timeval tv = {.tv_sec = 5}; /* a stalled client cannot hold this thread */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.uid == getuid())
            shm_serve_one(c, fd);
        close(fd);
    }
}

static socklen_t shm_addr(const char *name, struct sockaddr_un *sa) {
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    size_t n = strlen(name);
    memcpy(sa->sun_path + 1, name, n); /* abstract: leading NUL */
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* Asks the target for the memfd behind [addr, addr+len); maps it. Returns 0 or negative. */
static int shm_map(const char *name, uint64_t addr, uint64_t len, void **base, size_t *blen,
                   void **at) {
    struct sockaddr_un sa;
    socklen_t sl = shm_addr(name, &sa);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct shm_req rq = {addr, len};
    struct shm_rep rp;
    int rc = 0, memfd = -1;
    if (connect(fd, (struct sockaddr *)&sa, sl) < 0 ||
        send(fd, &rq, sizeof(rq), MSG_NOSIGNAL) != sizeof(rq))
        rc = -errno;
    if (rc == 0) {
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } u;
        struct iovec v = {&rp, sizeof(rp)};
        struct msghdr m = {
            .msg_iov = &v, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
        ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_WAITALL);
        struct cmsghdr *cm = n == sizeof(rp) ? CMSG_FIRSTHDR(&m) : NULL;
        if (n != sizeof(rp))
            rc = n < 0 ? -errno : -CM_EPROTOCOL;
        else if (rp.status < 0)
            rc = rp.status;
        else if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int)))
            rc = -CM_EPROTOCOL;
        else
            memcpy(&memfd, CMSG_DATA(cm), sizeof(int));
    }
    close(fd);
    if (rc < 0)
        return rc;
    long pg = sysconf(_SC_PAGESIZE);
    uint64_t aoff = rp.off & ~((uint64_t)pg - 1);
    size_t mlen = (size_t)(rp.off - aoff + len);
    void *p = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, (off_t)aoff);
    rc = p == MAP_FAILED ? -errno : 0;
    close(memfd);
    if (rc < 0)
        return rc;
    *base = p;
    *blen = mlen;
    *at = (char *)p + (rp.off - aoff);
    return 0;
}

static int shm_install(struct xfer_transport *tp, const char *args) {
    uint64_t memfd = 1;
    if (xfer__arg_u64(args, "memfd", &memfd) < 0)
        return -EINVAL;
    struct shm_ctx *c = cm_try_calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->tp = tp;
    c->use_memfd = memfd != 0;
    c->wake[0] = c->wake[1] = -1;
    snprintf(c->sun_path, sizeof(c->sun_path), "crescent-xfer-shm-%d-%016llx", (int)getpid(),
             (unsigned long long)xfer__engine_instance(tp->eng));
    struct sockaddr_un sa;
    socklen_t sl = shm_addr(c->sun_path, &sa);
    c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = c->lfd < 0 ? -errno : 0;
    if (rc == 0 && (bind(c->lfd, (struct sockaddr *)&sa, sl) < 0 || listen(c->lfd, 64) < 0))
        rc = -errno;
    if (rc == 0 && pipe2(c->wake, O_CLOEXEC) < 0)
        rc = -errno;
    if (rc == 0 && pthread_create(&c->thr, NULL, shm_accept_main, c) != 0)
        rc = -EAGAIN;
    if (rc < 0) {
        if (c->lfd >= 0)
            close(c->lfd);
        if (c->wake[0] >= 0)
            close(c->wake[0]), close(c->wake[1]);
        cm_free(c);
        return rc;
    }
    tp->ctx = c;
    return 0;
}

static void shm_uninstall(struct xfer_transport *tp) {
    struct shm_ctx *c = tp->ctx;
    if (!c)
        return;
    ssize_t w = write(c->wake[1], "x", 1);
    (void)w;
    pthread_join(c->thr, NULL);
    close(c->lfd);
    close(c->wake[0]);
    close(c->wake[1]);
    cm_free(c);
    tp->ctx = NULL;
}

static int shm_register(struct xfer_transport *tp, struct xfer_mr *mr, uint8_t *key,
                        size_t *key_len) {
    (void)tp;
    key[0] = mr->memfd >= 0 ? SHM_KEY_MEMFD : 0;
    *key_len = 1;
    return 0;
}

static int shm_unregister(struct xfer_transport *tp, struct xfer_mr *mr) {
    (void)tp, (void)mr;
    return 0;
}

/* Endpoint blob: u32 pid, then the abstract socket name. */
static int shm_local_info(struct xfer_transport *tp, uint8_t *buf, size_t *len) {
    struct shm_ctx *c = tp->ctx;
    size_t n = strlen(c->sun_path);
    if (*len < 4 + n)
        return -ENOSPC;
    xfer_put_u32(buf, (uint32_t)getpid());
    memcpy(buf + 4, c->sun_path, n);
    *len = 4 + n;
    return 0;
}

static int shm_reachable(struct xfer_transport *tp, const struct xfer_desc *d, int i) {
    (void)i;
    return memcmp(d->host_id, xfer__engine_host_id(tp->eng), XFER_HOST_ID_LEN) == 0
               ? 0
               : -CM_EUNREACHABLE;
}

static void shm_close_segment(struct xfer_transport *tp, void *seg_ctx) {
    struct shm_seg *s = seg_ctx;
    (void)tp;
    if (!s)
        return;
    for (uint32_t b = 0; b < s->n_buf; b++)
        if (s->map_base[b])
            munmap(s->map_base[b], s->map_len[b]);
    cm_free(s->map);
    cm_free(s->map_base);
    cm_free(s->map_len);
    cm_free(s);
}

static int shm_open_segment(struct xfer_transport *tp, struct xfer_segment *seg,
                            const struct xfer_desc *d, int i, void **seg_ctx) {
    struct shm_ctx *c = tp->ctx;
    (void)seg;
    const struct xfer_desc_tp *e = &d->tp[i];
    char name[64];
    if (e->ep_len < 5 || (size_t)e->ep_len - 4 >= sizeof(name) ||
        memchr(e->ep + 4, 0, e->ep_len - 4))
        return -CM_ECORRUPT;
    memcpy(name, e->ep + 4, e->ep_len - 4u);
    name[e->ep_len - 4] = '\0';
    struct shm_seg *s = cm_try_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->pid = (pid_t)xfer_get_u32(e->ep);
    s->n_buf = d->n_buf;
    size_t nb = d->n_buf ? d->n_buf : 1;
    s->map = cm_try_calloc(nb, sizeof(void *));
    s->map_base = cm_try_calloc(nb, sizeof(void *));
    s->map_len = cm_try_calloc(nb, sizeof(size_t));
    if (!s->map || !s->map_base || !s->map_len) {
        shm_close_segment(tp, s);
        return -ENOMEM;
    }
    for (uint32_t b = 0; b < d->n_buf && c->use_memfd; b++) {
        const struct xfer_desc_buf *x = &d->buf[b];
        if (x->key_len[i] < 1 || x->key[i][0] != SHM_KEY_MEMFD)
            continue;
        int rc = shm_map(name, x->addr, x->len, &s->map_base[b], &s->map_len[b], &s->map[b]);
        if (rc < 0)
            cm_log(CM_LOG_VERBOSE, "xfer", "shm: cannot map buffer 0x%llx of %s (%s): using CMA",
                   (unsigned long long)x->addr, d->name, cm_strerror(rc));
    }
    *seg_ctx = s;
    return 0;
}

/* Copies with process_vm_readv/writev between local (host memory) and the peer, looping over
 * partial transfers. */
static int shm_cma(pid_t pid, struct xfer_task *t, char *local) {
    uint64_t done = 0;
    while (done < t->len) {
        size_t n = t->len - done > SHM_CMA_CHUNK ? SHM_CMA_CHUNK : (size_t)(t->len - done);
        struct iovec l = {local + done, n};
        struct iovec r = {(void *)(uintptr_t)(t->remote + done), n};
        ssize_t k = t->op == XFER_OP_READ ? process_vm_readv(pid, &l, 1, &r, 1, 0)
                                          : process_vm_writev(pid, &l, 1, &r, 1, 0);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno == ESRCH ? -ECONNRESET : -errno;
        }
        if (k == 0)
            return -EIO;
        done += (uint64_t)k;
    }
    return 0;
}

static int shm_submit(struct xfer_transport *tp, struct xfer_task **tasks, size_t n) {
    (void)tp;
    struct shm_seg *last = NULL;
    int dead = 0;
    for (size_t i = 0; i < n; i++) {
        struct xfer_task *t = tasks[i];
        struct shm_seg *s = t->tp_seg;
        if (s != last) { /* a mapped memfd outlives its owner: check the peer is alive */
            dead = kill(s->pid, 0) < 0 && errno == ESRCH;
            last = s;
        }
        if (dead) {
            xfer__task_done(t, -ECONNRESET, 0);
            continue;
        }
        if (strncmp(t->rbuf->location, "cuda", 4) == 0) {
            /* The peer's device memory is out of reach of CMA and memfd maps: use tcp. */
            xfer__task_done(t, -CM_ENOT_SUPPORTED, 0);
            continue;
        }
        void *m = (uint32_t)t->rbuf_index < s->n_buf ? s->map[t->rbuf_index] : NULL;
        /* Local device memory is copied through a staging buffer (a no-op for host memory):
         * READ lands in the buffer and goes host-to-device, WRITE is copied device-to-host first.
         */
        void *tok;
        char *l = t->op == XFER_OP_READ
                      ? xfer__stage_in(t->local, (size_t)t->len, &tok)
                      : (char *)(uintptr_t)xfer__stage_out(t->local, (size_t)t->len, &tok);
        if (!l) {
            xfer__task_done(t, -CM_ETRANSFER_FAIL, 0);
            continue;
        }
        int rc = 0;
        if (m) {
            char *p = (char *)m + (t->remote - t->rbuf->addr);
            if (t->op == XFER_OP_READ)
                memcpy(l, p, t->len);
            else
                memcpy(p, l, t->len);
        } else {
            rc = shm_cma(s->pid, t, l);
        }
        if (t->op == XFER_OP_READ && rc == 0)
            rc = xfer__stage_in_done(t->local, l, (size_t)t->len, tok);
        else
            xfer__stage_release(tok);
        xfer__task_done(t, rc, rc == 0 ? t->len : 0);
    }
    return 0;
}

const struct xfer_transport_ops xfer_shm_ops = {
    .size = sizeof(struct xfer_transport_ops),
    .name = "shm",
    .install = shm_install,
    .uninstall = shm_uninstall,
    .register_mem = shm_register,
    .unregister_mem = shm_unregister,
    .local_info = shm_local_info,
    .reachable = shm_reachable,
    .open_segment = shm_open_segment,
    .close_segment = shm_close_segment,
    .submit = shm_submit,
    .warmup_segment = xfer__no_warmup_segment,
};
