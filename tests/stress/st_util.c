/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the stress programs: fatal checks, connections, INFO parsing, CRC32 and a
 * position-derived byte pattern that can be checked in any slice. */
#include "common/fmacros.h"

#include "tests/stress/st_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Prints "FAIL: <message>" to stdout and exits with status 1. Never returns; thread-safe
 * enough for a test (the first caller's message is the one that matters). */
void st_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stdout);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
    exit(1);
}

/* Returns a monotonic clock reading in milliseconds. Thread-safe. */
uint64_t st_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Opens a blocking TCP connection to host:port with TCP_NODELAY. When rcvbuf > 0 the receive
 * buffer is set to that size before connecting, so the window stays small. Returns the fd
 * (caller closes it); dies on any error. Thread-safe. */
int st_connect_raw(const char *host, int port, int rcvbuf) {
    struct sockaddr_in sa;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        st_die("socket: %s", strerror(errno));
    }
    if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) != 0) {
        st_die("SO_RCVBUF: %s", strerror(errno));
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        st_die("bad host address %s", host);
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        st_die("connect %s:%d: %s", host, port, strerror(errno));
    }
    return fd;
}

/* Connects a hiredis context to host:port with a 120 s I/O timeout (sanitizer builds are
 * slow). Returns the context (caller frees with redisFree); dies on error. Thread-safe. */
redisContext *st_connect(const char *host, int port) {
    struct timeval tv = {120, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (c == NULL || c->err) {
        st_die("connect %s:%d: %s", host, port, c ? c->errstr : "out of memory");
    }
    redisSetTimeout(c, tv);
    return c;
}

/* Runs one command (hiredis format string) and returns its reply, which the caller frees with
 * freeReplyObject. Dies on a connection error (never on an error reply). Not thread-safe for
 * one context. */
redisReply *st_command(redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL) {
        st_die("command '%s': connection error: %s", fmt, c->errstr);
    }
    return r;
}

/* Runs one command and dies unless its reply is the status (or bulk string) `status`. */
void st_expect_status(redisContext *c, const char *status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL) {
        st_die("command '%s': connection error: %s", fmt, c->errstr);
    }
    if ((r->type != REDIS_REPLY_STATUS && r->type != REDIS_REPLY_STRING) ||
        strcmp(r->str, status) != 0) {
        st_die("command '%s': expected %s, got type %d '%s'", fmt, status, r->type,
               r->str ? r->str : "");
    }
    freeReplyObject(r);
}

/* Returns the integer value of `field` in INFO `section`. Dies when the field is missing or
 * not an integer, printing the section. */
long long st_info_field(redisContext *c, const char *section, const char *field) {
    redisReply *r = st_command(c, "INFO %s", section);
    if (r->type != REDIS_REPLY_STRING) {
        st_die("INFO %s: not a bulk string (type %d '%s')", section, r->type, r->str ? r->str : "");
    }
    size_t flen = strlen(field);
    const char *p = r->str;
    while (p != NULL && *p != '\0') {
        if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
            char *end;
            errno = 0;
            long long v = strtoll(p + flen + 1, &end, 10);
            if (errno != 0 || end == p + flen + 1 || (*end != '\r' && *end != '\n')) {
                st_die("INFO %s: %s is not an integer", section, field);
            }
            freeReplyObject(r);
            return v;
        }
        p = strchr(p, '\n');
        if (p != NULL) {
            p++;
        }
    }
    st_die("INFO %s has no field %s; it says:\n%s", section, field, r->str);
}

static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        crc_table[i] = c;
    }
}

/* One xorshift64 step (shifts 13, 7, 17); see st_util.h. */
uint64_t st_rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Updates a CRC-32 (IEEE, as zlib) with buf; start with crc = 0. Thread-safe after the first
 * call has returned (the table is built on first use; call it once before starting threads). */
uint32_t st_crc32(uint32_t crc, const void *buf, size_t len) {
    const uint8_t *p = buf;
    if (crc_table[1] == 0) {
        crc_init();
    }
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
        crc = crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    }
    return ~crc;
}

static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint8_t pattern_byte(uint64_t pos, uint64_t seed) {
    uint64_t w = mix64((pos >> 3) ^ seed);
    return (uint8_t)(w >> ((pos & 7) * 8));
}

/* Fills buf with the pattern bytes at positions [offset, offset+len) of the stream `seed`:
 * each 8-byte word is a hash of its index, so any slice can be produced or checked alone. */
void st_pattern_fill(uint8_t *buf, size_t len, uint64_t offset, uint64_t seed) {
    size_t i = 0;
    while (i < len && ((offset + i) & 7) != 0) {
        buf[i] = pattern_byte(offset + i, seed);
        i++;
    }
    for (; i + 8 <= len; i += 8) {
        uint64_t w = mix64(((offset + i) >> 3) ^ seed);
        memcpy(buf + i, &w, 8); /* little-endian: byte k of w is position +k */
    }
    for (; i < len; i++) {
        buf[i] = pattern_byte(offset + i, seed);
    }
}

/* Checks buf against the pattern at [offset, offset+len). Returns -1 when every byte matches,
 * else the index in buf of the first mismatch. */
int64_t st_pattern_check(const uint8_t *buf, size_t len, uint64_t offset, uint64_t seed) {
    uint8_t tmp[4096];
    for (size_t done = 0; done < len;) {
        size_t n = len - done < sizeof(tmp) ? len - done : sizeof(tmp);
        st_pattern_fill(tmp, n, offset + done, seed);
        if (memcmp(tmp, buf + done, n) != 0) {
            for (size_t i = 0; i < n; i++) {
                if (tmp[i] != buf[done + i]) {
                    return (int64_t)(done + i);
                }
            }
        }
        done += n;
    }
    return -1;
}

#define ST_VALUE_HDR 16

static uint64_t value_seed(uint64_t key, uint32_t version) {
    return (key << 32) ^ version ^ 0xA5A5A5A5A5A5A5A5ull;
}

/* Builds a self-checking value of len bytes (len >= 20) for key and version. Layout,
 * little-endian: u64 key id, u32 version, u32 total length, payload (pattern derived from key
 * and version), u32 CRC-32 of everything before it. Thread-safe once st_crc32 ran once. */
void st_value_build(uint8_t *buf, size_t len, uint64_t key, uint32_t version) {
    uint32_t len32 = (uint32_t)len;
    memcpy(buf, &key, 8);
    memcpy(buf + 8, &version, 4);
    memcpy(buf + 12, &len32, 4);
    st_pattern_fill(buf + ST_VALUE_HDR, len - ST_VALUE_HDR - 4, 0, value_seed(key, version));
    uint32_t crc = st_crc32(0, buf, len - 4);
    memcpy(buf + len - 4, &crc, 4);
}

/* Checks a value made by st_value_build for `key`. Returns NULL when it is intact (and stores
 * its version when version is not NULL), else a description of the damage. */
const char *st_value_verify(const uint8_t *buf, size_t len, uint64_t key, uint32_t *version) {
    uint64_t k;
    uint32_t ver, len32, crc;
    if (len < ST_VALUE_HDR + 4) {
        return "shorter than a value header";
    }
    memcpy(&k, buf, 8);
    memcpy(&ver, buf + 8, 4);
    memcpy(&len32, buf + 12, 4);
    memcpy(&crc, buf + len - 4, 4);
    if (st_crc32(0, buf, len - 4) != crc) {
        return "CRC-32 mismatch";
    }
    if (k != key) {
        return "value belongs to another key";
    }
    if (len32 != len) {
        return "length in the header differs from the reply length";
    }
    if (st_pattern_check(buf + ST_VALUE_HDR, len - ST_VALUE_HDR - 4, 0, value_seed(key, ver)) >=
        0) {
        return "payload differs from the pattern (with a matching CRC)";
    }
    if (version != NULL) {
        *version = ver;
    }
    return NULL;
}

/* Writes all of buf to a blocking fd; dies on error. */
void st_write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            st_die("write: %s", n < 0 ? strerror(errno) : "wrote 0 bytes");
        }
        p += n;
        len -= (size_t)n;
    }
}

/* Reads exactly len bytes from a blocking fd; dies on error or when the peer closes first. */
void st_read_full(int fd, void *buf, size_t len) {
    char *p = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t n = read(fd, p + done, len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            st_die("read: %s after %zu of %zu bytes", n < 0 ? strerror(errno) : "connection closed",
                   done, len);
        }
        done += (size_t)n;
    }
}

/* Reads one CRLF-terminated line (one byte per read, so nothing after it is consumed) into
 * buf, NUL-terminated without the CRLF. Returns its length; dies on EOF or when it exceeds
 * cap - 1 bytes. */
size_t st_read_line(int fd, char *buf, size_t cap) {
    size_t n = 0;
    for (;;) {
        if (n + 1 >= cap) {
            st_die("reply line longer than %zu bytes", cap);
        }
        st_read_full(fd, buf + n, 1);
        n++;
        if (n >= 2 && buf[n - 2] == '\r' && buf[n - 1] == '\n') {
            buf[n - 2] = '\0';
            return n - 2;
        }
    }
}

/* Sends one RESP multibulk request of argc arguments with writev, without copying the
 * arguments (large values go to the socket directly). Dies on error. */
void st_send_command(int fd, int argc, const void *const *argv, const size_t *lens) {
    char hdr[16][32], head[32];
    struct iovec iov[1 + 16 * 3];
    int k = 0;
    if (argc < 1 || argc > 16) {
        st_die("st_send_command: %d arguments", argc);
    }
    iov[k++] = (struct iovec){head, (size_t)snprintf(head, sizeof(head), "*%d\r\n", argc)};
    for (int i = 0; i < argc; i++) {
        int h = snprintf(hdr[i], sizeof(hdr[i]), "$%zu\r\n", lens[i]);
        iov[k++] = (struct iovec){hdr[i], (size_t)h};
        iov[k++] = (struct iovec){(void *)argv[i], lens[i]};
        iov[k++] = (struct iovec){(void *)"\r\n", 2};
    }
    struct iovec *v = iov;
    while (k > 0) {
        ssize_t n = writev(fd, v, k);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            st_die("writev: %s", n < 0 ? strerror(errno) : "wrote 0 bytes");
        }
        while (k > 0 && (size_t)n >= v->iov_len) {
            n -= (ssize_t)v->iov_len;
            v++;
            k--;
        }
        if (k > 0) {
            v->iov_base = (char *)v->iov_base + n;
            v->iov_len -= (size_t)n;
        }
    }
}
