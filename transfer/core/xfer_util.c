/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers shared by the core and the transports: "k=v" argument parsing, environment
 * numbers, the same-host identity, CRC-32C, the -ENOSYS stubs for optional ops, and the
 * per-thread message of the last failed connect or handshake (xfer_last_error).
 */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Finds key in args; sets *val / *vlen to the value. Returns 1 found, 0 absent. */
static int arg_find(const char *args, const char *key, const char **val, size_t *vlen) {
    size_t klen = strlen(key);
    const char *p = args;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
            *val = p + klen + 1;
            *vlen = n - klen - 1;
            return 1;
        }
        if (n == klen && strncmp(p, key, klen) == 0) {
            *val = p + klen;
            *vlen = 0;
            return 1;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* Copies the value of key from "k=v,k=v" args into buf; see xfer_int.h. Thread-safe. */
int xfer__arg_str(const char *args, const char *key, char *buf, size_t len) {
    const char *v;
    size_t n;
    if (!arg_find(args, key, &v, &n))
        return 0;
    if (n >= len)
        return -ENOSPC;
    memcpy(buf, v, n);
    buf[n] = '\0';
    return 1;
}

/* Parses an unsigned argument (decimal or 0x hex); see xfer_int.h. Thread-safe. */
int xfer__arg_u64(const char *args, const char *key, uint64_t *v) {
    char buf[32], *end;
    int rc = xfer__arg_str(args, key, buf, sizeof(buf));
    if (rc <= 0)
        return rc == -ENOSPC ? -EINVAL : rc;
    errno = 0;
    unsigned long long x = strtoull(buf, &end, 0);
    if (errno || end == buf || *end || buf[0] == '-')
        return -EINVAL;
    *v = x;
    return 1;
}

/* Parses a floating-point argument; see xfer_int.h. Thread-safe. */
int xfer__arg_double(const char *args, const char *key, double *v) {
    char buf[32], *end;
    int rc = xfer__arg_str(args, key, buf, sizeof(buf));
    if (rc <= 0)
        return rc == -ENOSPC ? -EINVAL : rc;
    errno = 0;
    double x = strtod(buf, &end);
    if (errno || end == buf || *end)
        return -EINVAL;
    *v = x;
    return 1;
}

/* Reads an unsigned environment variable, def when unset or malformed. Thread-safe. */
uint64_t xfer__env_u64(const char *name, uint64_t def) {
    const char *s = getenv(name);
    char *end;
    if (!s || !*s || *s == '-')
        return def;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    return errno || *end ? def : x;
}

/* FNV-1a 64-bit over len bytes, continuing from h. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t len) {
    const uint8_t *b = p;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/*
 * Computes this process's same-host identity: the kernel boot id plus the inodes of the pid and
 * network namespaces (shm needs both: process_vm_* across pid namespaces fails, and the Unix
 * socket lives in the network namespace). Thread-safe.
 */
void xfer__host_id(uint8_t out[XFER_HOST_ID_LEN]) {
    char boot[64] = {0};
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, boot, sizeof(boot) - 1);
        (void)n;
        close(fd);
    }
    struct stat st;
    uint64_t ns[2] = {0, 0};
    if (stat("/proc/self/ns/pid", &st) == 0)
        ns[0] = st.st_ino;
    if (stat("/proc/self/ns/net", &st) == 0)
        ns[1] = st.st_ino;
    uint64_t a = fnv1a(0xcbf29ce484222325ull, boot, strlen(boot));
    a = fnv1a(a, ns, sizeof(ns));
    uint64_t b = fnv1a(a ^ 0x5bd1e995ull, ns, sizeof(ns));
    b = fnv1a(b, boot, strlen(boot));
    xfer_put_u64(out, a);
    xfer_put_u64(out + 8, b);
}

static uint32_t crc32c_table[256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void crc32c_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc32c_table[i] = c;
    }
}

/* CRC-32C of buf, continuing from crc (0 to start). Thread-safe. */
uint32_t xfer_crc32c(uint32_t crc, const void *buf, size_t len) {
    pthread_once(&crc32c_once, crc32c_init);
    const uint8_t *p = buf;
    crc = ~crc;
    for (size_t i = 0; i < len; i++)
        crc = crc32c_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* -ENOSYS stub for transports without per-MR registration. */
int xfer__no_register_mem(struct xfer_transport *tp, struct xfer_mr *mr, uint8_t *key,
                          size_t *key_len) {
    (void)tp, (void)mr, (void)key;
    *key_len = 0;
    return -ENOSYS;
}

/* -ENOSYS stub for transports without per-MR registration. */
int xfer__no_unregister_mem(struct xfer_transport *tp, struct xfer_mr *mr) {
    (void)tp, (void)mr;
    return -ENOSYS;
}

/* -ENOSYS stub for transports that do not appear in descriptors. */
int xfer__no_local_info(struct xfer_transport *tp, uint8_t *buf, size_t *len) {
    (void)tp, (void)buf;
    *len = 0;
    return -ENOSYS;
}

/* -ENOSYS stub for transports with nothing to warm up. */
int xfer__no_warmup_segment(struct xfer_transport *tp, void *seg_ctx) {
    (void)tp, (void)seg_ctx;
    return -ENOSYS;
}

/* ---- per-thread message of the last failed connect/handshake ---- */

static _Thread_local char xfer_last_err[XFER_ERRMSG_MAX];

/* Records a message for xfer_last_error on this thread; see xfer_int.h. */
void xfer__set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(xfer_last_err, sizeof(xfer_last_err), fmt, ap);
    va_end(ap);
}

/* Message of this thread's last failed call; see xfer.h. */
const char *xfer_last_error(void) {
    return xfer_last_err;
}
