/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Backend URI parsing (scheme://[user[:password]@]host:port[,host:port...][/path], a host being a
 * name, an IPv4 address or a bracketed IPv6 address) and small helpers shared by the election
 * backends: error formatting and random owner tokens.
 */
#include "common/fmacros.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/cm_errno.h"
#include "ha/ha_int.h"

/* Formats one line into err (when given) and returns code. Thread-safe. */
int ha__err(char *err, size_t errlen, int code, const char *fmt, ...) {
    va_list ap;

    if (err && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Fills buf (2n+1 bytes) with n random bytes in hex. Returns 0 or -errno. Thread-safe. */
int ha__random_hex(char *buf, size_t n) {
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[64];
    size_t i;
    ssize_t r;

    if (n > sizeof(raw))
        return -EINVAL;
    do {
        r = getrandom(raw, n, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    if ((size_t)r != n)
        return -EIO;
    for (i = 0; i < n; i++) {
        buf[2 * i] = hex[raw[i] >> 4];
        buf[2 * i + 1] = hex[raw[i] & 15];
    }
    buf[2 * n] = '\0';
    return 0;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Copies [s, s+len) into dst (cap bytes) decoding %XX escapes. Returns 0 or -1. */
static int copy_decoded(char *dst, size_t cap, const char *s, size_t len) {
    size_t i, o = 0;

    for (i = 0; i < len; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            int hi, lo;
            if (i + 2 >= len)
                return -1;
            hi = hexval((unsigned char)s[i + 1]);
            lo = hexval((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = hi * 16 + lo;
            i += 2;
        }
        if (o + 1 >= cap)
            return -1;
        dst[o++] = (char)c;
    }
    dst[o] = '\0';
    return 0;
}

/*
 * Checks one "host:port" or "[v6]:port" entry: the bracketed form must hold an IPv6 address
 * (inet_pton), an unbracketed host must not contain ':', ports must be 1..65535.
 */
static int check_host_port(const char *h, char *err, size_t errlen) {
    const char *colon;
    char *end;
    long port;

    if (h[0] == '[') {
        const char *rb = strchr(h, ']');
        char v6[64];
        struct in6_addr a;
        if (!rb || rb[1] != ':')
            return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: '%s' is not [addr]:port", h);
        snprintf(v6, sizeof(v6), "%.*s", (int)(rb - h - 1), h + 1);
        if ((size_t)(rb - h - 1) >= sizeof(v6) || inet_pton(AF_INET6, v6, &a) != 1)
            return ha__err(err, errlen, -CM_EBAD_URI,
                           "bad URI: '%.*s' in '%s' is not an IPv6 address", (int)(rb - h - 1),
                           h + 1, h);
        colon = rb + 1;
    } else {
        colon = strrchr(h, ':');
        if (!colon || colon == h)
            return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: '%s' is not host:port", h);
        if (memchr(h, ':', (size_t)(colon - h)))
            return ha__err(err, errlen, -CM_EBAD_URI,
                           "bad URI: '%s': an IPv6 address goes in brackets, as in [::1]:6379", h);
    }
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || errno || port < 1 || port > 65535)
        return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: bad port in '%s'", h);
    return 0;
}

static int parse_hosts(const char *s, size_t len, bool need_port, struct ha_uri *out, char *err,
                       size_t errlen) {
    size_t i = 0;

    while (i < len) {
        size_t j = i;
        while (j < len && s[j] != ',' && s[j] != ';')
            j++;
        if (j == i)
            return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: empty host");
        if (out->nhosts >= (int)(sizeof(out->hosts) / sizeof(out->hosts[0])))
            return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: more than 8 hosts");
        if (j - i >= sizeof(out->hosts[0]))
            return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: host too long");
        memcpy(out->hosts[out->nhosts], s + i, j - i);
        out->hosts[out->nhosts][j - i] = '\0';
        if (need_port) {
            int rc = check_host_port(out->hosts[out->nhosts], err, errlen);
            if (rc)
                return rc;
        }
        out->nhosts++;
        i = j + 1;
        if (j < len && i == len)
            return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: empty host");
    }
    return 0;
}

/*
 * Parses uri into *out (zeroed first). The scheme is lower-cased letters, digits and '+'; for
 * "redis" and "etcd" every host needs a port in 1..65535 and at least one host is required; for
 * other schemes the authority is split on ',' but not validated (it may be empty, as in
 * "k8s:///ns/lease"). user and password may be %-escaped. Returns 0 or -CM_EBAD_URI with one line
 * in err. Thread-safe.
 */
int ha_uri_parse(const char *uri, struct ha_uri *out, char *err, size_t errlen) {
    const char *p, *auth, *auth_end, *at, *slash;
    size_t n;
    bool strict;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!uri || !*uri)
        return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: empty");
    p = strstr(uri, "://");
    if (!p)
        return ha__err(err, errlen, -CM_EBAD_URI,
                       "bad URI '%s': expected scheme://host:port (redis://, etcd://, k8s://)",
                       uri);
    n = (size_t)(p - uri);
    if (n == 0 || n >= sizeof(out->scheme))
        return ha__err(err, errlen, -CM_EBAD_URI, "bad URI '%s': bad scheme", uri);
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)uri[i];
        if (!islower(c) && !isdigit(c) && c != '+')
            return ha__err(err, errlen, -CM_EBAD_URI, "bad URI '%s': bad scheme", uri);
        out->scheme[i] = (char)c;
    }
    auth = p + 3;
    slash = strchr(auth, '/');
    auth_end = slash ? slash : auth + strlen(auth);
    if (slash && strlen(slash + 1) >= sizeof(out->path))
        return ha__err(err, errlen, -CM_EBAD_URI, "bad URI '%s': path too long", uri);
    if (slash)
        strcpy(out->path, slash + 1);
    at = NULL;
    for (const char *q = auth; q < auth_end; q++)
        if (*q == '@')
            at = q;
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        const char *uend = colon ? colon : at;
        if (copy_decoded(out->user, sizeof(out->user), auth, (size_t)(uend - auth)) ||
            (colon && copy_decoded(out->password, sizeof(out->password), colon + 1,
                                   (size_t)(at - colon - 1))))
            return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: bad or too long user/password");
        auth = at + 1;
    }
    strict = strcmp(out->scheme, "redis") == 0 || strcmp(out->scheme, "etcd") == 0;
    if (strict && auth == auth_end)
        return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: no host:port after %s://", out->scheme);
    rc = parse_hosts(auth, (size_t)(auth_end - auth), strict, out, err, errlen);
    if (rc) {
        memset(out->password, 0, sizeof(out->password));
        return rc;
    }
    return 0;
}
