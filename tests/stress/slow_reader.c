/* SPDX-License-Identifier: Apache-2.0 */
/* A reply in flight survives overwrite, DEL, FLUSHALL and eviction. A 64 MiB value with a
 * position-derived pattern is SET; two clients with small receive buffers GET it, one reading
 * slowly (64 KiB, then a pause) and one stalling completely; meanwhile another client
 * edits the value in place (SETRANGE in the middle, APPEND), overwrites the key, deletes it,
 * flushes the database and writes far more than the memory limit so eviction runs. Both readers
 * must then receive exactly the original bytes and the CRLF, and their connections (and the server)
 * must keep working. Then readers that vanish mid-reply (reset or close) while the value is
 * deleted, overwritten or flushed, eight times over: the memory they held must come back (a final
 * large SET fits). Usage: slow_reader HOST PORT [-s VALUE_MIB] [-f FILLER_MIB] [-l FINAL_MIB] */
#include "common/fmacros.h"

#include "tests/stress/st_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SEED_ORIG   0x0123456789ABCDEFull
#define SEED_OTHER  0xFEDCBA9876543210ull
#define SEED_FILLER 0x5555AAAA5555AAAAull
#define KEY         "sr:big"
#define CHUNK       (64 * 1024)

struct reader {
    const char *name;
    int fd;
    int stall;          /* 1: read the first chunk, then nothing until mutation ends */
    size_t size;        /* expected payload size */
    atomic_size_t got;  /* payload bytes received so far */
    atomic_int started; /* the header and first chunk arrived */
    const char *error;  /* set by the thread on failure */
    char detail[256];
};

static atomic_int mutating = 1;
static const char *host;
static int port;

static void sleep_ms(int ms) {
    usleep((useconds_t)ms * 1000);
}

/* Reads exactly len bytes; returns 0 or -1 (closed or error). */
static int read_full(int fd, uint8_t *buf, size_t len) {
    while (len > 0) {
        ssize_t n = read(fd, buf, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static void *reader_main(void *arg) {
    struct reader *r = arg;
    char hdr[64], want[64];
    size_t h = 0;
    uint8_t *buf = malloc(CHUNK);
    snprintf(want, sizeof(want), "$%zu\r\n", r->size);
    /* The bulk header, byte by byte so nothing of the payload is consumed. */
    while (h < sizeof(hdr) - 1) {
        if (read_full(r->fd, (uint8_t *)hdr + h, 1) != 0) {
            r->error = "connection closed while reading the bulk header";
            goto out;
        }
        h++;
        if (h >= 2 && hdr[h - 2] == '\r' && hdr[h - 1] == '\n') {
            break;
        }
    }
    hdr[h] = '\0';
    if (strcmp(hdr, want) != 0) {
        snprintf(r->detail, sizeof(r->detail), "expected header %s got %.60s", want, hdr);
        r->error = "wrong bulk header";
        goto out;
    }
    size_t off = 0;
    while (off < r->size) {
        size_t n = r->size - off < CHUNK ? r->size - off : CHUNK;
        if (read_full(r->fd, buf, n) != 0) {
            snprintf(r->detail, sizeof(r->detail), "after %zu of %zu payload bytes", off, r->size);
            r->error = "connection closed mid-payload";
            goto out;
        }
        int64_t bad = st_pattern_check(buf, n, off, SEED_ORIG);
        if (bad >= 0) {
            uint8_t exp[1];
            st_pattern_fill(exp, 1, off + (uint64_t)bad, SEED_ORIG);
            int other = 0;
            uint8_t alt[1];
            st_pattern_fill(alt, 1, off + (uint64_t)bad, SEED_OTHER);
            other = alt[0] == buf[bad];
            snprintf(r->detail, sizeof(r->detail),
                     "payload byte %zu: expected 0x%02x, got 0x%02x%s", off + (size_t)bad, exp[0],
                     buf[bad], other ? " (matches the overwriting value)" : "");
            r->error = "corrupted payload";
            goto out;
        }
        off += n;
        atomic_store(&r->got, off);
        atomic_store(&r->started, 1);
        if (atomic_load(&mutating)) {
            if (r->stall) {
                while (atomic_load(&mutating)) {
                    sleep_ms(10);
                }
            } else {
                sleep_ms(5);
            }
        }
    }
    uint8_t crlf[2];
    if (read_full(r->fd, crlf, 2) != 0 || crlf[0] != '\r' || crlf[1] != '\n') {
        r->error = "payload not followed by CRLF";
        goto out;
    }
    /* The same connection still works. */
    st_write_all(r->fd, "*1\r\n$4\r\nPING\r\n", 14);
    uint8_t pong[7];
    if (read_full(r->fd, pong, 7) != 0 || memcmp(pong, "+PONG\r\n", 7) != 0) {
        r->error = "PING on the reader connection after the reply did not give +PONG";
        goto out;
    }
out:
    atomic_store(&r->started, 1);
    free(buf);
    return NULL;
}

static void expect_int(redisContext *c, long long want, const char *fmt, const char *key) {
    redisReply *r = st_command(c, fmt, key);
    if (r->type != REDIS_REPLY_INTEGER || r->integer != want) {
        st_die("%s %s: expected %lld, got type %d '%s' %lld", fmt, key, want, r->type,
               r->str ? r->str : "", r->integer);
    }
    freeReplyObject(r);
}

/* SET key value on the raw connection (no copy of the value); dies unless +OK. */
static void set_value(int raw, const char *key, const uint8_t *v, size_t len) {
    const void *argv[3] = {"SET", key, v};
    size_t lens[3] = {3, strlen(key), len};
    char line[256];
    st_send_command(raw, 3, argv, lens);
    st_read_line(raw, line, sizeof(line));
    if (strcmp(line, "+OK") != 0) {
        st_die("SET %s (%zu bytes): expected +OK, got '%s'", key, len, line);
    }
}

/* SET key value, retrying for up to 10 s while the server answers OOM (memory held by
 * replies of closed connections is released asynchronously). Dies on any other reply. */
static void set_value_retry(int raw, const char *key, const uint8_t *v, size_t len,
                            const char *what) {
    const void *argv[3] = {"SET", key, v};
    size_t lens[3] = {3, strlen(key), len};
    char line[256];
    uint64_t deadline = st_now_ms() + 10000;
    for (;;) {
        st_send_command(raw, 3, argv, lens);
        st_read_line(raw, line, sizeof(line));
        if (strcmp(line, "+OK") == 0) {
            return;
        }
        if (strcmp(line, "-" ST_OOM_ERROR) != 0 || st_now_ms() > deadline) {
            st_die("%s: SET %s (%zu bytes): expected +OK, got '%s'%s", what, key, len, line,
                   line[0] == '-' ? " (memory of dropped readers not released?)" : "");
        }
        sleep_ms(100);
    }
}

/* GET key on the raw connection; dies unless it holds the pattern `seed` of len bytes. */
static void check_value(int raw, const char *key, size_t len, uint64_t seed) {
    const void *argv[2] = {"GET", key};
    size_t lens[2] = {3, strlen(key)};
    char line[256], want[64];
    st_send_command(raw, 2, argv, lens);
    st_read_line(raw, line, sizeof(line));
    snprintf(want, sizeof(want), "$%zu", len);
    if (strcmp(line, want) != 0) {
        st_die("GET %s: expected a %zu-byte bulk string, got '%s'", key, len, line);
    }
    uint8_t *buf = malloc(len + 2);
    st_read_full(raw, buf, len + 2);
    int64_t bad = st_pattern_check(buf, len, 0, seed);
    if (bad >= 0) {
        st_die("GET %s: byte %lld differs from what was SET", key, (long long)bad);
    }
    if (buf[len] != '\r' || buf[len + 1] != '\n') {
        st_die("GET %s: payload not followed by CRLF", key);
    }
    free(buf);
}

/* In-place edits of the value being sent: SETRANGE in the middle (not yet sent), APPEND. */
static void edit_in_place(redisContext *c, size_t size) {
    size_t mid = size / 2, n = 1 << 20;
    uint8_t *patch = malloc(n);
    st_pattern_fill(patch, n, mid, SEED_OTHER);
    redisReply *r = st_command(c, "SETRANGE %s %lld %b", KEY, (long long)mid, patch, n);
    if (r->type != REDIS_REPLY_INTEGER || r->integer != (long long)size) {
        st_die("SETRANGE %s %zu <1 MiB>: expected %zu, got type %d '%s' %lld", KEY, mid, size,
               r->type, r->str ? r->str : "", r->integer);
    }
    freeReplyObject(r);
    r = st_command(c, "APPEND %s tail", KEY);
    if (r->type != REDIS_REPLY_INTEGER || r->integer != (long long)size + 4) {
        st_die("APPEND %s tail: expected %zu, got type %d '%s' %lld", KEY, size + 4, r->type,
               r->str ? r->str : "", r->integer);
    }
    freeReplyObject(r);
    r = st_command(c, "GETRANGE %s %lld %lld", KEY, (long long)mid, (long long)(mid + n - 1));
    if (r->type != REDIS_REPLY_STRING || (size_t)r->len != n || memcmp(r->str, patch, n) != 0) {
        st_die("GETRANGE after SETRANGE: the patched 1 MiB does not read back");
    }
    freeReplyObject(r);
    r = st_command(c, "GETRANGE %s -8 -1", KEY);
    uint8_t want[8];
    st_pattern_fill(want, 4, size - 4, SEED_ORIG);
    memcpy(want + 4, "tail", 4);
    if (r->type != REDIS_REPLY_STRING || r->len != 8 || memcmp(r->str, want, 8) != 0) {
        st_die("GETRANGE -8 -1 after APPEND: wrong bytes");
    }
    freeReplyObject(r);
    free(patch);
}

static void mutate(redisContext *c, int raw, size_t size, size_t filler_mib) {
    uint64_t t = st_now_ms();
    edit_in_place(c, size);
    printf("SETRANGE and APPEND on the value in flight: %llu ms\n",
           (unsigned long long)(st_now_ms() - t));
    t = st_now_ms();
    uint8_t *other = malloc(size);
    st_pattern_fill(other, size, 0, SEED_OTHER);
    set_value(raw, KEY, other, size);
    check_value(raw, KEY, size, SEED_OTHER);
    expect_int(c, 1, "DEL %s", KEY);
    expect_int(c, 0, "EXISTS %s", KEY);
    set_value(raw, KEY, other, size);
    st_expect_status(c, "OK", "FLUSHALL");
    expect_int(c, 0, "EXISTS %s", KEY);
    free(other);
    printf("overwrite, GET, DEL, SET, FLUSHALL: %llu ms\n", (unsigned long long)(st_now_ms() - t));

    /* Filler: 1 MiB values, pipelined 8 at a time, far beyond the memory limit. */
    t = st_now_ms();
    size_t mib = 1 << 20;
    uint8_t *fill = malloc(mib);
    st_pattern_fill(fill, mib, 0, SEED_FILLER);
    for (size_t i = 0; i < filler_mib; i += 8) {
        size_t batch = filler_mib - i < 8 ? filler_mib - i : 8;
        for (size_t j = 0; j < batch; j++) {
            char key[64];
            snprintf(key, sizeof(key), "sr:fill:%zu", i + j);
            const void *argv[3] = {"SET", key, fill};
            size_t lens[3] = {3, strlen(key), mib};
            st_send_command(raw, 3, argv, lens);
        }
        for (size_t j = 0; j < batch; j++) {
            char line[256];
            st_read_line(raw, line, sizeof(line));
            if (strcmp(line, "+OK") != 0) {
                st_die("filler SET sr:fill:%zu (1 MiB, %zu MiB written so far): expected +OK, "
                       "got '%s'",
                       i + j, i, line);
            }
        }
    }
    free(fill);
    char last[64];
    snprintf(last, sizeof(last), "sr:fill:%zu", filler_mib - 1);
    check_value(raw, last, mib, SEED_FILLER);
    printf("filler %zu MiB: %llu ms\n", filler_mib, (unsigned long long)(st_now_ms() - t));
}

/* Readers that disappear mid-reply must not keep their value's memory. */
static void dropped_readers(redisContext *c, int raw, size_t size, size_t final_mib) {
    uint64_t t = st_now_ms();
    uint8_t *v = malloc(size);
    const char *get = "*2\r\n$3\r\nGET\r\n$7\r\nsr:leak\r\n";
    for (int i = 0; i < 8; i++) {
        char what[64];
        snprintf(what, sizeof(what), "dropped reader round %d", i);
        st_pattern_fill(v, size, 0, SEED_ORIG ^ (uint64_t)i);
        set_value_retry(raw, "sr:leak", v, size, what);
        int fd = st_connect_raw(host, port, 16 * 1024);
        st_write_all(fd, get, strlen(get));
        uint8_t *head = malloc(CHUNK);
        st_read_full(fd, head, CHUNK); /* the reply is under way */
        free(head);
        struct linger lg = {1, 0};
        switch (i % 3) {
        case 0: /* value deleted, then the reader resets */
            expect_int(c, 1, "DEL %s", "sr:leak");
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
            close(fd);
            break;
        case 1: /* the reader closes, then the value is overwritten */
            close(fd);
            break;
        case 2: /* the reader resets, then everything is flushed */
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
            close(fd);
            st_expect_status(c, "OK", "FLUSHALL");
            break;
        }
    }
    st_expect_status(c, "OK", "FLUSHALL");
    free(v);
    size_t final = final_mib << 20;
    uint8_t *f = malloc(final);
    st_pattern_fill(f, final, 0, SEED_OTHER);
    set_value_retry(raw, "sr:final", f, final, "after 8 dropped readers");
    free(f);
    check_value(raw, "sr:final", final, SEED_OTHER);
    expect_int(c, 1, "DEL %s", "sr:final");
    printf("8 dropped readers, then a %zu MiB SET: %llu ms\n", final_mib,
           (unsigned long long)(st_now_ms() - t));
}

/* Reads a bulk string of exactly len bytes into buf (with its CRLF); dies otherwise. */
static void read_bulk(int fd, uint8_t *buf, size_t len, const char *what) {
    char line[64], want[64];
    st_read_line(fd, line, sizeof(line));
    snprintf(want, sizeof(want), "$%zu", len);
    if (strcmp(line, want) != 0) {
        st_die("%s: expected bulk header %s, got '%s'", what, want, line);
    }
    st_read_full(fd, buf, len + 2);
    if (buf[len] != '\r' || buf[len + 1] != '\n') {
        st_die("%s: bulk not followed by CRLF", what);
    }
}

/* An LRANGE reply of 64 x 1 MiB elements in flight while the list is edited, popped, deleted
 * and flushed and the freed memory is reused: the reply must hold the original elements. */
static void list_in_flight(redisContext *c, int raw) {
    const size_t n = 64, el = 1 << 20;
    uint8_t *buf = malloc(el + 2);
    uint64_t t = st_now_ms();
    for (size_t i = 0; i < n; i++) {
        st_pattern_fill(buf, el, 0, SEED_ORIG + i);
        const void *argv[3] = {"RPUSH", "sr:list", buf};
        size_t lens[3] = {5, 7, el};
        char line[64], want[64];
        st_send_command(raw, 3, argv, lens);
        st_read_line(raw, line, sizeof(line));
        snprintf(want, sizeof(want), ":%zu", i + 1);
        if (strcmp(line, want) != 0) {
            st_die("RPUSH sr:list element %zu: expected %s, got '%s'", i, want, line);
        }
    }
    int fd = st_connect_raw(host, port, 16 * 1024);
    const char *lrange = "*4\r\n$6\r\nLRANGE\r\n$7\r\nsr:list\r\n$1\r\n0\r\n$2\r\n-1\r\n";
    st_write_all(fd, lrange, strlen(lrange));
    char line[64];
    st_read_line(fd, line, sizeof(line));
    if (strcmp(line, "*64") != 0) {
        st_die("LRANGE sr:list 0 -1: expected *64, got '%s'", line);
    }
    read_bulk(fd, buf, el, "LRANGE element 0");
    if (st_pattern_check(buf, el, 0, SEED_ORIG) >= 0) {
        st_die("LRANGE element 0 differs from what was pushed");
    }
    /* The reply is under way: change everything it refers to. */
    st_pattern_fill(buf, el, 0, SEED_OTHER);
    st_expect_status(c, "OK", "LSET sr:list 10 %b", buf, el);
    st_expect_status(c, "OK", "LSET sr:list 63 %b", buf, el);
    redisReply *r = st_command(c, "LPOP sr:list 5");
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 5) {
        st_die("LPOP sr:list 5: expected 5 elements, got type %d", r->type);
    }
    freeReplyObject(r);
    expect_int(c, 59, "LLEN %s", "sr:list");
    expect_int(c, 1, "DEL %s", "sr:list");
    for (size_t i = 0; i < n; i++) {
        r = st_command(c, "RPUSH sr:list2 %b", buf, el);
        freeReplyObject(r);
    }
    st_expect_status(c, "OK", "FLUSHALL");
    for (size_t i = 0; i < n; i++) {
        r = st_command(c, "RPUSH sr:list3 %b", buf, el);
        freeReplyObject(r);
    }
    /* Now the rest of the reply. */
    for (size_t i = 1; i < n; i++) {
        char what[48];
        snprintf(what, sizeof(what), "LRANGE element %zu", i);
        read_bulk(fd, buf, el, what);
        int64_t bad = st_pattern_check(buf, el, 0, SEED_ORIG + i);
        if (bad >= 0) {
            st_die("LRANGE element %zu in flight: byte %lld differs from what was pushed (list "
                   "edited, popped, deleted, flushed meanwhile)",
                   i, (long long)bad);
        }
    }
    st_write_all(fd, "*1\r\n$4\r\nPING\r\n", 14);
    st_read_line(fd, line, sizeof(line));
    if (strcmp(line, "+PONG") != 0) {
        st_die("PING after the LRANGE reply: '%s'", line);
    }
    close(fd);
    st_expect_status(c, "OK", "FLUSHALL");
    free(buf);
    printf("LRANGE of 64 x 1 MiB in flight across LSET, LPOP, DEL, FLUSHALL: %llu ms\n",
           (unsigned long long)(st_now_ms() - t));
}

int main(int argc, char **argv) {
    size_t size_mib = 64, filler_mib = 512, final_mib = 128;
    if (argc < 3) {
        fprintf(stderr, "usage: %s HOST PORT [-s VALUE_MIB] [-f FILLER_MIB]\n", argv[0]);
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-s") == 0) {
            size_mib = (size_t)atol(argv[i + 1]);
        } else if (strcmp(argv[i], "-f") == 0) {
            filler_mib = (size_t)atol(argv[i + 1]);
        } else if (strcmp(argv[i], "-l") == 0) {
            final_mib = (size_t)atol(argv[i + 1]);
        }
    }
    size_t size = size_mib << 20;
    uint64_t t0 = st_now_ms();
    redisContext *c = st_connect(host, port);
    int raw = st_connect_raw(host, port, 0);
    uint8_t *orig = malloc(size);
    st_pattern_fill(orig, size, 0, SEED_ORIG);
    set_value(raw, KEY, orig, size);
    free(orig);
    expect_int(c, (long long)size, "STRLEN %s", KEY);
    long long evicted0 = st_info_field(c, "stats", "evicted_keys");

    struct reader rd[2] = {{.name = "slow reader", .stall = 0},
                           {.name = "stalled reader", .stall = 1}};
    pthread_t th[2];
    const char *get = "*2\r\n$3\r\nGET\r\n$6\r\n" KEY "\r\n";
    for (int i = 0; i < 2; i++) {
        rd[i].size = size;
        rd[i].fd = st_connect_raw(host, port, 16 * 1024);
        st_write_all(rd[i].fd, get, strlen(get));
        pthread_create(&th[i], NULL, reader_main, &rd[i]);
    }
    /* Mutate only once both replies are on their way. */
    for (int i = 0; i < 2; i++) {
        while (!atomic_load(&rd[i].started)) {
            sleep_ms(1);
        }
        if (rd[i].error != NULL) {
            st_die("%s: %s %s", rd[i].name, rd[i].error, rd[i].detail);
        }
    }
    uint64_t t1 = st_now_ms();
    mutate(c, raw, size, filler_mib);
    size_t got_slow = atomic_load(&rd[0].got), got_stalled = atomic_load(&rd[1].got);
    atomic_store(&mutating, 0);
    uint64_t t2 = st_now_ms();
    long long evicted = st_info_field(c, "stats", "evicted_keys") - evicted0;
    printf("mutations (overwrite, DEL, FLUSHALL, %zu MiB filler) took %llu ms; readers had %zu "
           "and %zu of %zu bytes; evicted_keys +%lld\n",
           filler_mib, (unsigned long long)(t2 - t1), got_slow, got_stalled, size, evicted);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        if (rd[i].error != NULL) {
            st_die("%s: %s %s", rd[i].name, rd[i].error, rd[i].detail);
        }
        close(rd[i].fd);
    }
    if (got_stalled >= size) {
        st_die("the stalled reader had its whole reply before the mutations ended; the test "
               "proves nothing (socket buffers too large?)");
    }
    if (evicted <= 0) {
        st_die("INFO stats evicted_keys did not grow while writing %zu MiB of filler", filler_mib);
    }
    expect_int(c, 0, "EXISTS %s", KEY);
    redisReply *r = st_command(c, "DBSIZE");
    if (r->type != REDIS_REPLY_INTEGER || r->integer <= 0) {
        st_die("DBSIZE after filler: expected > 0, got %lld", r->integer);
    }
    freeReplyObject(r);
    dropped_readers(c, raw, size, final_mib);
    list_in_flight(c, raw);
    st_expect_status(c, "PONG", "PING");
    redisFree(c);
    close(raw);
    printf("slow_reader: both readers got all %zu bytes intact; total %llu ms\n", size,
           (unsigned long long)(st_now_ms() - t0));
    return 0;
}
