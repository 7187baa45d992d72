/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Large SET values: crescent reads a big final SET/PUT argument straight into segment memory.
 * These tests send such requests in small pieces, mixed with pipelined commands, and check
 * every byte comes back (they pass against redis-server too).
 */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(bigvalues, .init = it_setup, .fini = it_teardown, .timeout = 60);

static char *pattern(size_t n, unsigned seed) {
    char *v = malloc(n);
    for (size_t i = 0; i < n; i++)
        v[i] = (char)((i * 2654435761u + seed) >> 13);
    return v;
}

/* Sends req in chunks of `chunk` bytes with short pauses, so the server sees partial values. */
static void send_slowly(int fd, const char *req, size_t len, size_t chunk) {
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        it_raw_send(fd, req + off, n);
        if ((off / chunk) % 8 == 0)
            usleep(500);
    }
}

Test(bigvalues, dribbled_set_then_pipelined_get) {
    const size_t n = 300000;
    char *v = pattern(n, 7);
    char hdr[128];
    int hl = snprintf(hdr, sizeof(hdr), "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%zu\r\n", n);
    const char tail[] = "\r\n*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n*1\r\n$4\r\nPING\r\n";
    size_t len = (size_t)hl + n + sizeof(tail) - 1;
    char *req = malloc(len);
    memcpy(req, hdr, (size_t)hl);
    memcpy(req + hl, v, n);
    memcpy(req + hl + n, tail, sizeof(tail) - 1);
    int fd = it_raw_open(it_srv.port);
    send_slowly(fd, req, len, 4096);
    char want_hdr[64];
    int wl = snprintf(want_hdr, sizeof(want_hdr), "+OK\r\n$%zu\r\n", n);
    size_t want_len = (size_t)wl + n + 2 + 7;
    char *got = malloc(want_len);
    size_t have = 0;
    while (have < want_len) {
        ssize_t r = read(fd, got + have, want_len - have);
        cr_assert_gt(r, 0, "server closed early after %zu of %zu bytes", have, want_len);
        have += (size_t)r;
    }
    cr_assert_eq(memcmp(got, want_hdr, (size_t)wl), 0, "SET then GET header: %.20s", got);
    cr_assert_eq(memcmp(got + wl, v, n), 0, "value bytes intact");
    cr_assert_eq(memcmp(got + wl + n, "\r\n+PONG\r\n", 9), 0, "trailing CRLF and PONG");
    close(fd);
    free(got);
    free(req);
    free(v);
}

Test(bigvalues, sizes_around_the_direct_read_threshold) {
    static const size_t sizes[] = {32767, 32768, 32769, 65536, 1 << 20, 3 << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i];
        char *v = pattern(n, (unsigned)i);
        const char *argv[] = {i % 2 ? "PUT" : "SET", "k", v};
        size_t lens[] = {3, 1, n};
        if (i % 2 && !it_target_is_crescent())
            argv[0] = "SET"; /* PUT is crescent's own verb */
        redisReply *r = it_cmdargv(it_c, 3, argv, lens);
        cr_assert_eq(r->type, REDIS_REPLY_STATUS, "%s of %zu bytes", argv[0], n);
        r = it_cmd(it_c, "GET k");
        cr_assert_eq(r->type, REDIS_REPLY_STRING);
        cr_assert_eq(r->len, n);
        cr_assert_eq(memcmp(r->str, v, n), 0, "value of %zu bytes intact", n);
        free(v);
    }
}

Test(bigvalues, big_set_with_options_and_inside_multi) {
    const size_t n = 100000;
    char *v = pattern(n, 3);
    const char *argv[] = {"SET", "kx", v, "PX", "100000"};
    size_t lens[] = {3, 2, n, 2, 6};
    redisReply *r = it_cmdargv(it_c, 5, argv, lens);
    cr_assert_eq(r->type, REDIS_REPLY_STATUS);
    IT_INT(1, it_c, "EXISTS kx");
    r = it_cmd(it_c, "PTTL kx");
    cr_assert_gt(r->integer, 90000);
    IT_OK(it_c, "MULTI");
    const char *argv2[] = {"SET", "km", v};
    size_t lens2[] = {3, 2, n};
    r = it_cmdargv(it_c, 3, argv2, lens2);
    cr_assert_str_eq(r->str, "QUEUED");
    r = it_cmd(it_c, "EXEC");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    r = it_cmd(it_c, "STRLEN km");
    cr_assert_eq(r->integer, (long long)n);
    free(v);
}
