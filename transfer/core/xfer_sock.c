/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Socket helpers with deadlines: every wait is a poll() bounded by an absolute CLOCK_MONOTONIC
 * deadline, so a dead or stalled peer never blocks a thread forever.
 */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include "common/cm_net.h"
#include "common/cm_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Splits an address by the one rule of cm_net_hostport_parse(), port 0 by default; see
 * xfer_int.h. Thread-safe. */
int xfer__split_hostport(const char *hp, char *host, size_t hostlen, uint16_t *port) {
    int p;
    if (!hp || cm_net_hostport_parse(hp, strlen(hp), 0, host, hostlen, &p, NULL, 0) < 0)
        return -EINVAL;
    *port = (uint16_t)p;
    return 0;
}

/* Milliseconds left until deadline_ns for poll(): -1 without a deadline, 0 when passed. */
static int ms_left(uint64_t deadline_ns) {
    if (!deadline_ns)
        return -1;
    uint64_t now = cm_mono_ns();
    if (now >= deadline_ns)
        return 0;
    uint64_t ms = (deadline_ns - now + 999999) / 1000000;
    return ms > 60000000 ? 60000000 : (int)ms;
}

/* Waits for events on fd until deadline. Returns 0 or -ETIMEDOUT / -errno. */
static int wait_fd(int fd, short events, uint64_t deadline_ns) {
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int left = ms_left(deadline_ns);
        if (left == 0 && deadline_ns)
            return -ETIMEDOUT;
        int n = poll(&p, 1, left);
        if (n > 0)
            return 0;
        if (n == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

/* Connects to hostport by deadline; see xfer_int.h. Thread-safe. */
int xfer__sock_connect(const char *hostport, uint64_t deadline_ns) {
    char host[256], port[8];
    uint16_t p;
    if (xfer__split_hostport(hostport, host, sizeof(host), &p) < 0 || p == 0)
        return -EINVAL;
    snprintf(port, sizeof(port), "%u", p);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
        return -EINVAL;
    int rc = -ECONNREFUSED;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
            freeaddrinfo(ai);
            return fd;
        }
        if (errno == EINPROGRESS) {
            rc = wait_fd(fd, POLLOUT, deadline_ns);
            if (rc == 0) {
                int err = 0;
                socklen_t sl = sizeof(err);
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl);
                if (err == 0) {
                    freeaddrinfo(ai);
                    return fd;
                }
                rc = -err;
            }
        } else {
            rc = -errno;
        }
        close(fd);
    }
    freeaddrinfo(ai);
    return rc;
}

/* Advances iov past n bytes; returns the new start index. */
static int iov_advance(struct iovec *iov, int cnt, int i, size_t n) {
    while (i < cnt && n >= iov[i].iov_len) {
        n -= iov[i].iov_len;
        i++;
    }
    if (i < cnt) {
        iov[i].iov_base = (char *)iov[i].iov_base + n;
        iov[i].iov_len -= n;
    }
    return i;
}

/* Reads the whole iovec by deadline; see xfer_int.h. Thread-safe per fd owner. */
int xfer__sock_readv(int fd, struct iovec *iov, int cnt, uint64_t deadline_ns) {
    int i = iov_advance(iov, cnt, 0, 0);
    while (i < cnt) {
        ssize_t n = readv(fd, iov + i, cnt - i > IOV_MAX ? IOV_MAX : cnt - i);
        if (n > 0) {
            i = iov_advance(iov, cnt, i, (size_t)n);
            continue;
        }
        if (n == 0)
            return -ECONNRESET;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        int rc = wait_fd(fd, POLLIN, deadline_ns);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Writes the whole iovec by deadline (MSG_NOSIGNAL); see xfer_int.h. */
int xfer__sock_writev(int fd, struct iovec *iov, int cnt, uint64_t deadline_ns) {
    int i = iov_advance(iov, cnt, 0, 0);
    while (i < cnt) {
        struct msghdr m = {.msg_iov = iov + i,
                           .msg_iovlen = (size_t)(cnt - i > IOV_MAX ? IOV_MAX : cnt - i)};
        ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (n >= 0) {
            i = iov_advance(iov, cnt, i, (size_t)n);
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return errno == EPIPE ? -ECONNRESET : -errno;
        int rc = wait_fd(fd, POLLOUT, deadline_ns);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Reads and discards len bytes by deadline; see xfer_int.h. */
int xfer__sock_drain(int fd, uint64_t len, uint64_t deadline_ns) {
    char scratch[16384];
    while (len) {
        size_t n = len < sizeof(scratch) ? (size_t)len : sizeof(scratch);
        struct iovec v = {scratch, n};
        int rc = xfer__sock_readv(fd, &v, 1, deadline_ns);
        if (rc < 0)
            return rc;
        len -= n;
    }
    return 0;
}

/* Reads len bytes into dst through rb (see xfer_int.h). Thread-safe per reader owner. */
int xfer__rbuf_read(int fd, struct xfer_rbuf *rb, void *dst, size_t len, uint64_t deadline_ns) {
    char *d = dst;
    size_t take = rb->len < len ? rb->len : len;
    memcpy(d, rb->buf + rb->off, take);
    rb->off += take;
    rb->len -= take;
    d += take;
    len -= take;
    if (rb->len == 0)
        rb->off = 0;
    while (len > 0) {
        /* The buffer is empty: the rest of dst first, whatever follows into the buffer, so a
         * run of small messages costs one read per buffer-full rather than one per message. */
        size_t ahead = len >= (64u << 10) && rb->cap > 64 ? 64 : rb->cap; /* a header or so */
        struct iovec v[2] = {{d, len}, {rb->buf, ahead}};
        ssize_t n = readv(fd, v, rb->cap ? 2 : 1);
        if (n > 0) {
            if ((size_t)n > len) {
                rb->off = 0;
                rb->len = (size_t)n - len;
                n = (ssize_t)len;
            }
            d += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return -ECONNRESET;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        if (rb->before_wait) {
            int rc = rb->before_wait(rb->arg);
            if (rc < 0)
                return rc;
        }
        int rc = wait_fd(fd, POLLIN, deadline_ns);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Reads and discards len bytes through rb (see xfer_int.h). */
int xfer__rbuf_drain(int fd, struct xfer_rbuf *rb, uint64_t len, uint64_t deadline_ns) {
    char scratch[16384];
    while (len) {
        size_t n = len < sizeof(scratch) ? (size_t)len : sizeof(scratch);
        int rc = xfer__rbuf_read(fd, rb, scratch, n, deadline_ns);
        if (rc < 0)
            return rc;
        len -= n;
    }
    return 0;
}
