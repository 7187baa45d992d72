/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the pure transfer codecs: segment descriptor encode/decode round trip and
 * corruption detection, wire header validation, buffer lookup, "k=v" argument parsing.
 */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static struct xfer_mr mrs[3];
static struct xfer_mr *mrp[3] = {&mrs[0], &mrs[1], &mrs[2]};
static const uint8_t hid[XFER_HOST_ID_LEN] = {1, 2,  3,  4,  5,  6,  7,  8,
                                              9, 10, 11, 12, 13, 14, 15, 16};

/* Encodes a descriptor with two transports and three buffers into a fresh buffer. */
static uint8_t *make_desc(size_t *len) {
    memset(mrs, 0, sizeof(mrs));
    for (int i = 0; i < 3; i++) {
        mrs[i].addr = 0x10000ull * (uint64_t)(i + 1);
        mrs[i].len = 0x1000ull * (uint64_t)(i + 1);
        mrs[i].flags = XFER_REG_REMOTE;
        mrs[i].id = (uint32_t)(i + 7);
        snprintf(mrs[i].location, sizeof(mrs[i].location), "cpu:%d", i);
        mrs[i].key_len[2] = 3;
        memcpy(mrs[i].key[2], "abc", 3);
        mrs[i].key_len[5] = (uint16_t)(i == 1 ? 0 : 8);
        memset(mrs[i].key[5], 0x40 + i, 8);
    }
    static const uint8_t ep0[] = "127.0.0.1:1234";
    static const uint8_t ep1[] = {0, 1, 2, 3, 4};
    struct xfer_desc_in in = {.name = "engine-a",
                              .listen = "127.0.0.1:1234",
                              .host_id = hid,
                              .pid = 4242,
                              .instance = 0x1122334455667788ull,
                              .n_tp = 2,
                              .tp_name = {"tcp", "shm"},
                              .tp_ep = {ep0, ep1},
                              .tp_ep_len = {14, 5},
                              .n_buf = 3,
                              .bufs = mrp,
                              .tp_slot = {2, 5}};
    ssize_t need = xfer_desc_encode(&in, NULL, 0);
    cr_assert_gt(need, 24);
    uint8_t *buf = cm_malloc((size_t)need);
    cr_assert_eq(xfer_desc_encode(&in, buf, (size_t)need), need);
    *len = (size_t)need;
    return buf;
}

Test(xfer_desc, round_trip) {
    size_t len;
    uint8_t *buf = make_desc(&len);
    struct xfer_desc *d;
    cr_assert_eq(xfer_desc_decode(buf, len, &d), 0);
    cr_assert_str_eq(d->name, "engine-a");
    cr_assert_str_eq(d->listen, "127.0.0.1:1234");
    cr_assert_eq(memcmp(d->host_id, hid, sizeof(hid)), 0);
    cr_assert_eq(d->pid, 4242);
    cr_assert_eq(d->instance, 0x1122334455667788ull);
    cr_assert_eq(d->n_tp, 2);
    cr_assert_str_eq(d->tp[0].name, "tcp");
    cr_assert_eq(d->tp[0].ep_len, 14);
    cr_assert_eq(memcmp(d->tp[0].ep, "127.0.0.1:1234", 14), 0);
    cr_assert_str_eq(d->tp[1].name, "shm");
    cr_assert_eq(d->tp[1].ep_len, 5);
    cr_assert_eq(d->n_buf, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(d->buf[i].addr, mrs[i].addr);
        cr_assert_eq(d->buf[i].len, mrs[i].len);
        cr_assert_eq(d->buf[i].mr_id, mrs[i].id);
        cr_assert_str_eq(d->buf[i].location, mrs[i].location);
        cr_assert_eq(d->buf[i].key_len[0], 3);
        cr_assert_eq(memcmp(d->buf[i].key[0], "abc", 3), 0);
        cr_assert_eq(d->buf[i].key_len[1], i == 1 ? 0 : 8);
    }
    cr_assert_eq(xfer_desc_find_tp(d, "shm"), 1);
    cr_assert_eq(xfer_desc_find_tp(d, "rdma"), -1);
    /* Buffer lookup: inside, at the edges, across the end, in a gap. */
    cr_assert_eq(xfer_desc_find_buf(d, 0x10000, 0x1000), 0);
    cr_assert_eq(xfer_desc_find_buf(d, 0x10fff, 1), 0);
    cr_assert_eq(xfer_desc_find_buf(d, 0x10fff, 2), -1);
    cr_assert_eq(xfer_desc_find_buf(d, 0x20000 + 0x1000, 0x1000), 1);
    cr_assert_eq(xfer_desc_find_buf(d, 0x30000 + 0x2000, 0x1001), -1);
    cr_assert_eq(xfer_desc_find_buf(d, 0x0ffff, 1), -1);
    cr_assert_eq(xfer_desc_find_buf(d, 0x15000, 1), -1);
    cr_assert_eq(xfer_desc_find_buf(d, UINT64_MAX, 2), -1);
    xfer_desc_free(d);
    cm_free(buf);
}

Test(xfer_desc, inspect_summary) {
    size_t len;
    uint8_t *buf = make_desc(&len);
    struct xfer_desc_summary sm;
    struct xfer_desc_region rg[2];
    cr_assert_eq(xfer_desc_inspect(buf, len, &sm, rg, 2), 0);
    cr_assert_str_eq(sm.name, "engine-a");
    cr_assert_str_eq(sm.listen, "127.0.0.1:1234");
    cr_assert_eq(sm.pid, 4242);
    cr_assert_eq(sm.n_transports, 2);
    cr_assert_str_eq(sm.transports[1], "shm");
    cr_assert_eq(sm.n_buffers, 3);
    cr_assert_eq(rg[1].addr, 0x20000);
    cr_assert_eq(rg[1].len, 0x2000);
    cr_assert_str_eq(rg[1].location, "cpu:1");
    buf[30] ^= 1;
    cr_assert_eq(xfer_desc_inspect(buf, len, &sm, NULL, 0), -CM_ECORRUPT);
    cm_free(buf);
}

Test(xfer_desc, every_flipped_byte_is_rejected) {
    size_t len;
    uint8_t *buf = make_desc(&len);
    for (size_t i = 0; i < len; i++) {
        struct xfer_desc *d = NULL;
        buf[i] ^= 0x5a;
        int rc = xfer_desc_decode(buf, len, &d);
        cr_assert_lt(rc, 0, "flip at %zu accepted", i);
        cr_assert_null(d);
        buf[i] ^= 0x5a;
    }
    for (size_t l = 0; l < len; l++) {
        struct xfer_desc *d = NULL;
        cr_assert_lt(xfer_desc_decode(buf, l, &d), 0, "truncation to %zu accepted", l);
    }
    cm_free(buf);
}

Test(xfer_desc, version_and_magic_errors) {
    size_t len;
    uint8_t *buf = make_desc(&len);
    struct xfer_desc *d;
    xfer_put_u16(buf + 4, 2);
    cr_assert_eq(xfer_desc_decode(buf, len, &d), -CM_EINVALID_VERSION);
    xfer_put_u16(buf + 4, 1);
    buf[0] = 'X';
    cr_assert_eq(xfer_desc_decode(buf, len, &d), -CM_ECORRUPT);
    cm_free(buf);
}

Test(xfer_desc, small_buffer_reports_size) {
    size_t len;
    uint8_t *buf = make_desc(&len);
    struct xfer_desc_in in = {.name = "x", .listen = "", .host_id = hid};
    uint8_t small[8];
    ssize_t need = xfer_desc_encode(&in, small, sizeof(small));
    cr_assert_gt(need, (ssize_t)sizeof(small));
    cm_free(buf);
}

Test(xfer_wire, round_trip_and_validation) {
    struct xfer_wire_hdr h = {.op = XFER_WIRE_TCP_WRITE, .id = 99, .addr = 0xdeadbeef, .len = 77};
    uint8_t b[XFER_WIRE_HDR_LEN];
    xfer_wire_encode(&h, b);
    struct xfer_wire_hdr o;
    cr_assert_eq(xfer_wire_decode(b, sizeof(b), &o), XFER_WIRE_HDR_LEN);
    cr_assert_eq(o.op, XFER_WIRE_TCP_WRITE);
    cr_assert_eq(o.id, 99);
    cr_assert_eq(o.addr, 0xdeadbeef);
    cr_assert_eq(o.len, 77);
    cr_assert_eq(o.status, 0);
    cr_assert_eq(xfer_wire_decode(b, sizeof(b) - 1, &o), -EAGAIN);
    b[4] = 2;
    cr_assert_eq(xfer_wire_decode(b, sizeof(b), &o), -CM_EINVALID_VERSION);
    b[4] = 1;
    b[5] = 0;
    cr_assert_eq(xfer_wire_decode(b, sizeof(b), &o), -CM_EPROTOCOL);
    b[5] = XFER_WIRE_OP_MAX + 1;
    cr_assert_eq(xfer_wire_decode(b, sizeof(b), &o), -CM_EPROTOCOL);
    h.len = XFER_WIRE_MAX_LEN + 1;
    xfer_wire_encode(&h, b);
    cr_assert_eq(xfer_wire_decode(b, sizeof(b), &o), -CM_EPROTOCOL);
    h.len = 1;
    h.status = -5; /* a request may not carry a status */
    xfer_wire_encode(&h, b);
    cr_assert_eq(xfer_wire_decode(b, sizeof(b), &o), -CM_EPROTOCOL);
    h.flags = XFER_WIRE_F_REPLY;
    xfer_wire_encode(&h, b);
    cr_assert_eq(xfer_wire_decode(b, sizeof(b), &o), XFER_WIRE_HDR_LEN);
    cr_assert_eq(o.status, -5);
    b[0] ^= 1;
    cr_assert_eq(xfer_wire_decode(b, sizeof(b), &o), -CM_EPROTOCOL);
}

Test(xfer_args, parse) {
    char v[16];
    uint64_t u;
    double d;
    const char *a = "inner=tcp,fail_after=3,rate=0.25,flag,big=0x10";
    cr_assert_eq(xfer__arg_str(a, "inner", v, sizeof(v)), 1);
    cr_assert_str_eq(v, "tcp");
    cr_assert_eq(xfer__arg_u64(a, "fail_after", &u), 1);
    cr_assert_eq(u, 3);
    cr_assert_eq(xfer__arg_u64(a, "big", &u), 1);
    cr_assert_eq(u, 16);
    cr_assert_eq(xfer__arg_double(a, "rate", &d), 1);
    cr_assert_float_eq(d, 0.25, 1e-9);
    cr_assert_eq(xfer__arg_str(a, "flag", v, sizeof(v)), 1);
    cr_assert_str_eq(v, "");
    cr_assert_eq(xfer__arg_str(a, "fail", v, sizeof(v)), 0);
    cr_assert_eq(xfer__arg_u64(a, "inner", &u), -EINVAL);
    cr_assert_eq(xfer__arg_u64(NULL, "inner", &u), 0);
    cr_assert_eq(xfer__arg_str(a, "inner", v, 3), -ENOSPC);
    char host[64];
    uint16_t port;
    cr_assert_eq(xfer__split_hostport("[::1]:80", host, sizeof(host), &port), 0);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 80);
    cr_assert_eq(xfer__split_hostport("a:70000", host, sizeof(host), &port), -EINVAL);
    /* A bare host has the default port 0 (a listener then takes an ephemeral port). */
    cr_assert_eq(xfer__split_hostport("nohost", host, sizeof(host), &port), 0);
    cr_assert_str_eq(host, "nohost");
    cr_assert_eq(port, 0);
    cr_assert_eq(xfer__split_hostport("", host, sizeof(host), &port), -EINVAL);
    /* A bare IPv6 address is a host without a port; a v6 host with a port needs brackets. */
    cr_assert_eq(xfer__split_hostport("::1", host, sizeof(host), &port), 0);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 0);
    cr_assert_eq(xfer__split_hostport("fe80::1:2", host, sizeof(host), &port), 0);
    cr_assert_str_eq(host, "fe80::1:2");
    cr_assert_eq(port, 0);
    cr_assert_eq(xfer__split_hostport("::1:65000", host, sizeof(host), &port), -EINVAL);
    cr_assert_eq(xfer__split_hostport("[::1]80", host, sizeof(host), &port), -EINVAL);
    cr_assert_eq(xfer__split_hostport("[::1]:", host, sizeof(host), &port), -EINVAL);
}

Test(xfer_crc, known_vector) {
    /* CRC-32C("123456789") = 0xe3069283 */
    cr_assert_eq(xfer_crc32c(0, "123456789", 9), 0xe3069283u);
}
