/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the one host:port parser (cm_net_hostport_parse) and its formatter. */
#include "common/fmacros.h"

#include "common/cm_net.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

static char host[64];
static int port;
static char err[256];

/* Parses the C string s with default port def; returns the parser's result. */
static int parse(const char *s, int def) {
    strcpy(host, "untouched");
    port = -7;
    err[0] = '\0';
    return cm_net_hostport_parse(s, strlen(s), def, host, sizeof(host), &port, err, sizeof(err));
}

Test(cm_net_hostport, host_and_port) {
    cr_assert_eq(parse("127.0.0.1:50051", CM_NET_PORT_REQUIRED), 0);
    cr_assert_str_eq(host, "127.0.0.1");
    cr_assert_eq(port, 50051);
    cr_assert_eq(parse("master-0.example:1", CM_NET_PORT_REQUIRED), 0);
    cr_assert_str_eq(host, "master-0.example");
    cr_assert_eq(port, 1);
    cr_assert_eq(parse("h:65535", 9), 0);
    cr_assert_eq(port, 65535);
    cr_assert_eq(parse("h:0", CM_NET_PORT_REQUIRED), 0); /* 0 is the caller's to refuse */
    cr_assert_eq(port, 0);
}

Test(cm_net_hostport, bracketed_v6) {
    cr_assert_eq(parse("[::1]:5000", CM_NET_PORT_REQUIRED), 0);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 5000);
    cr_assert_eq(parse("[fe80::1%eth0]:80", CM_NET_PORT_REQUIRED), 0);
    cr_assert_str_eq(host, "fe80::1%eth0");
    cr_assert_eq(port, 80);
    cr_assert_eq(parse("[::ffff:10.0.0.1]:6379", CM_NET_PORT_REQUIRED), 0);
    cr_assert_str_eq(host, "::ffff:10.0.0.1");
    cr_assert_eq(port, 6379);
    cr_assert_eq(parse("[::1]", 4242), 0); /* a default port applies */
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 4242);
}

Test(cm_net_hostport, unbracketed_v6_with_port_is_ambiguous) {
    cr_assert_eq(parse("::1:5000", CM_NET_PORT_REQUIRED), -EINVAL);
    cr_assert_str_eq(err, "address '::1:5000' is ambiguous: an IPv6 address with a port goes in "
                          "brackets, as in [::1]:5000");
    cr_assert_str_eq(host, "untouched");
    cr_assert_eq(port, -7);
    cr_assert_eq(parse("fe80::1:2", CM_NET_PORT_REQUIRED), -EINVAL);
    cr_assert_not_null(strstr(err, "is ambiguous"));
    cr_assert_eq(parse("::1:65000", 0), -EINVAL); /* ::1 port 65000: not an address either */
    cr_assert_not_null(strstr(err, "is ambiguous"));
    cr_assert_eq(parse("a:b:80", CM_NET_PORT_REQUIRED), -EINVAL);
    cr_assert_str_eq(err, "address 'a:b:80' is not host:port (an IPv6 address goes in brackets, "
                          "as in [::1]:5000)");
}

Test(cm_net_hostport, bare_host_takes_the_default_port) {
    cr_assert_eq(parse("localhost", 50051), 0);
    cr_assert_str_eq(host, "localhost");
    cr_assert_eq(port, 50051);
    cr_assert_eq(parse("::1", 0), 0);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 0);
    /* Where a default port applies, an unbracketed IPv6 address is all address. */
    cr_assert_eq(parse("fe80::1:2", 7), 0);
    cr_assert_str_eq(host, "fe80::1:2");
    cr_assert_eq(port, 7);
    cr_assert_eq(parse("::1:5000", 7), 0);
    cr_assert_str_eq(host, "::1:5000");
    cr_assert_eq(port, 7);
}

Test(cm_net_hostport, no_port_where_one_is_required) {
    cr_assert_eq(parse("localhost", CM_NET_PORT_REQUIRED), -EINVAL);
    cr_assert_str_eq(err, "address 'localhost' has no port (want host:port)");
    cr_assert_eq(parse("::1", CM_NET_PORT_REQUIRED), -EINVAL);
    cr_assert_not_null(strstr(err, "is ambiguous"));
    cr_assert_eq(parse("[::1]", CM_NET_PORT_REQUIRED), -EINVAL);
    cr_assert_str_eq(err, "address '[::1]' has no port (want host:port)");
}

Test(cm_net_hostport, malformed) {
    cr_assert_eq(parse("", 1), -EINVAL);
    cr_assert_str_eq(err, "address '' is empty (want host:port)");
    cr_assert_eq(parse(":80", 1), -EINVAL);
    cr_assert_str_eq(err, "address ':80' has no host (want host:port)");
    cr_assert_eq(parse("h:", 1), -EINVAL);
    cr_assert_str_eq(err, "address 'h:': port '' is not a number 0..65535");
    cr_assert_eq(parse("h:70000", 1), -EINVAL);
    cr_assert_str_eq(err, "address 'h:70000': port '70000' is not a number 0..65535");
    cr_assert_eq(parse("h:+80", 1), -EINVAL);
    cr_assert_eq(parse("h: 80", 1), -EINVAL);
    cr_assert_eq(parse("h:80x", 1), -EINVAL);
    cr_assert_eq(parse("h:000080", 1), -EINVAL);
    cr_assert_eq(parse("[::1]80", 1), -EINVAL);
    cr_assert_str_eq(err, "address '[::1]80': only ':port' may follow ']'");
    cr_assert_eq(parse("[::1]:", 1), -EINVAL);
    cr_assert_eq(parse("[::1:80", 1), -EINVAL);
    cr_assert_str_eq(err, "address '[::1:80': no ']' after '['");
    cr_assert_eq(parse("[host]:80", 1), -EINVAL);
    cr_assert_str_eq(err, "address '[host]:80': 'host' in brackets is not an IPv6 address");
    cr_assert_eq(parse("[]:80", 1), -EINVAL);
    cr_assert_eq(parse("[fe80::1%]:80", 1), -EINVAL);
    cr_assert_str_eq(host, "untouched");
}

Test(cm_net_hostport, length_bounds_and_no_nul) {
    /* Only len bytes are read: the -NOTLEADER reply hands over part of a line. */
    const char *line = "10.1.2.3:6000 trailing";
    cr_assert_eq(
        cm_net_hostport_parse(line, 13, CM_NET_PORT_REQUIRED, host, sizeof(host), &port, NULL, 0),
        0);
    cr_assert_str_eq(host, "10.1.2.3");
    cr_assert_eq(port, 6000);
    char small[4];
    cr_assert_eq(cm_net_hostport_parse("abc:1", 5, 0, small, sizeof(small), &port, err, 64), 0);
    cr_assert_str_eq(small, "abc");
    cr_assert_eq(cm_net_hostport_parse("abcd:1", 6, 0, small, sizeof(small), &port, err, 64),
                 -EINVAL);
    cr_assert_str_eq(err, "address 'abcd:1': host longer than 3 bytes");
    char tiny[8]; /* a short err buffer is cut, still NUL-terminated */
    cr_assert_eq(cm_net_hostport_parse("x", 1, -1, host, sizeof(host), &port, tiny, sizeof(tiny)),
                 -EINVAL);
    cr_assert_str_eq(tiny, "address");
}

Test(cm_net_hostport, format_round_trips) {
    char out[64];
    cr_assert_eq(cm_net_hostport_format(out, sizeof(out), "::1", 5000), 10);
    cr_assert_str_eq(out, "[::1]:5000");
    cr_assert_eq(parse(out, CM_NET_PORT_REQUIRED), 0);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(port, 5000);
    cm_net_hostport_format(out, sizeof(out), "10.0.0.7", 50051);
    cr_assert_str_eq(out, "10.0.0.7:50051");
    cm_net_hostport_format(out, sizeof(out), "fe80::1:2", 7);
    cr_assert_eq(parse(out, CM_NET_PORT_REQUIRED), 0);
    cr_assert_str_eq(host, "fe80::1:2");
    cr_assert_eq(port, 7);
}
