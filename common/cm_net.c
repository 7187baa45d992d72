/* SPDX-License-Identifier: Apache-2.0 */
/* Socket helpers (see cm_net.h). */
#include "common/fmacros.h"

#include "common/cm_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Public: see cm_net.h. */
int cm_net_tcp_bind(const char *host, int port, bool numeric_host) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags =
                                 AI_PASSIVE | AI_NUMERICSERV | (numeric_host ? AI_NUMERICHOST : 0)};
    struct addrinfo *ai = NULL;
    char ps[8];
    snprintf(ps, sizeof(ps), "%d", port);
    if (getaddrinfo(host, ps, &hints, &ai) != 0 || ai == NULL)
        return -EINVAL;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -errno : 0;
    int one = 1;
    if (rc == 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
            rc = -errno;
    }
    freeaddrinfo(ai);
    if (rc < 0) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    return fd;
}

/* Formats "address '<s>'<fmt...>" into err (when given); returns -EINVAL. */
__attribute__((format(printf, 5, 6))) static int
cm_net_addr_err(char *err, size_t errlen, const char *s, size_t len, const char *fmt, ...) {
    if (err != NULL && errlen > 0) {
        int n = snprintf(err, errlen, "address '%.*s'", (int)(len > 200 ? 200 : len), s);
        if (n >= 0 && (size_t)n < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -EINVAL;
}

/* True when the len bytes at s are an IPv6 address, optionally followed by %zone. */
static bool cm_net_is_v6(const char *s, size_t len) {
    char buf[INET6_ADDRSTRLEN + 1];
    struct in6_addr a;
    const char *pct = memchr(s, '%', len);
    size_t al = pct != NULL ? (size_t)(pct - s) : len;
    if (al == 0 || al >= sizeof(buf) || (pct != NULL && pct + 1 == s + len))
        return false;
    memcpy(buf, s, al);
    buf[al] = '\0';
    return inet_pton(AF_INET6, buf, &a) == 1;
}

/* Reads the decimal port of the len bytes at p (1..5 digits, at most 65535) into *port. */
static bool cm_net_port(const char *p, size_t len, int *port) {
    int v = 0;
    if (len == 0 || len > 5)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    if (v > 65535)
        return false;
    *port = v;
    return true;
}

/* Public: see cm_net.h. */
int cm_net_hostport_parse(const char *s, size_t len, int default_port, char *host, size_t hostlen,
                          int *port, char *err, size_t errlen) {
    const char *end = s + len, *hs = s, *colon = NULL;
    size_t hl;
    if (len == 0)
        return cm_net_addr_err(err, errlen, s, len, " is empty (want host:port)");
    if (s[0] == '[') {
        const char *rb = memchr(s, ']', len);
        if (rb == NULL)
            return cm_net_addr_err(err, errlen, s, len, ": no ']' after '['");
        hs = s + 1;
        hl = (size_t)(rb - hs);
        if (!cm_net_is_v6(hs, hl))
            return cm_net_addr_err(err, errlen, s, len,
                                   ": '%.*s' in brackets is not an IPv6 address", (int)hl, hs);
        if (rb + 1 < end && rb[1] != ':')
            return cm_net_addr_err(err, errlen, s, len, ": only ':port' may follow ']'");
        colon = rb + 1 < end ? rb + 1 : NULL;
    } else {
        const char *first = memchr(s, ':', len);
        for (const char *q = s; q < end; q++)
            colon = *q == ':' ? q : colon;
        if (first != NULL && first != colon) { /* two or more ':': an IPv6 literal */
            if (default_port != CM_NET_PORT_REQUIRED && cm_net_is_v6(s, len)) {
                colon = NULL;
            } else if (cm_net_is_v6(s, len) || cm_net_is_v6(s, (size_t)(colon - s))) {
                return cm_net_addr_err(err, errlen, s, len,
                                       " is ambiguous: an IPv6 address with a port goes in "
                                       "brackets, as in [::1]:5000");
            } else {
                return cm_net_addr_err(err, errlen, s, len,
                                       " is not host:port (an IPv6 address goes in brackets, "
                                       "as in [::1]:5000)");
            }
        }
        hl = colon != NULL ? (size_t)(colon - s) : len;
        if (hl == 0)
            return cm_net_addr_err(err, errlen, s, len, " has no host (want host:port)");
    }
    int p = default_port;
    if (colon != NULL && !cm_net_port(colon + 1, (size_t)(end - colon - 1), &p))
        return cm_net_addr_err(err, errlen, s, len, ": port '%.*s' is not a number 0..65535",
                               (int)(end - colon - 1), colon + 1);
    if (colon == NULL && default_port == CM_NET_PORT_REQUIRED)
        return cm_net_addr_err(err, errlen, s, len, " has no port (want host:port)");
    if (hl >= hostlen)
        return cm_net_addr_err(err, errlen, s, len, ": host longer than %zu bytes", hostlen - 1);
    memcpy(host, hs, hl);
    host[hl] = '\0';
    *port = p;
    return 0;
}

/* Public: see cm_net.h. */
int cm_net_hostport_format(char *out, size_t outlen, const char *host, int port) {
    return snprintf(out, outlen, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host, port);
}
