/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the one host:port parser (cm_net_hostport_parse) and its formatter. */
#include "common/fmacros.h"

#include "common/cm_net.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#define REQ CM_NET_PORT_REQUIRED

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

/* s (default port def) parses into want_host and want_port. */
static void accepts(const char *s, int def, const char *want_host, int want_port) {
    cr_assert_eq(parse(s, def), 0, "'%s' refused: %s", s, err);
    cr_assert_str_eq(host, want_host, "'%s'", s);
    cr_assert_eq(port, want_port, "'%s'", s);
}

/* s (default port def) is refused with the message want (NULL: any), outputs untouched. */
static void refuses(const char *s, int def, const char *want) {
    cr_assert_eq(parse(s, def), -EINVAL, "'%s' accepted", s);
    if (want != NULL)
        cr_assert_str_eq(err, want);
    cr_assert_str_eq(host, "untouched");
    cr_assert_eq(port, -7);
}

Test(cm_net_hostport, host_and_port) {
    accepts("127.0.0.1:50051", REQ, "127.0.0.1", 50051);
    accepts("master-0.example:1", REQ, "master-0.example", 1);
    accepts("h:65535", 9, "h", 65535);
    accepts("h:0", REQ, "h", 0); /* 0 is the caller's to refuse */
}

Test(cm_net_hostport, bracketed_v6) {
    accepts("[::1]:5000", REQ, "::1", 5000);
    accepts("[fe80::1%eth0]:80", REQ, "fe80::1%eth0", 80);
    accepts("[::ffff:10.0.0.1]:6379", REQ, "::ffff:10.0.0.1", 6379);
    accepts("[::1]", 4242, "::1", 4242); /* a default port applies */
}

Test(cm_net_hostport, unbracketed_v6_with_port_is_ambiguous) {
    refuses("::1:5000", REQ,
            "address '::1:5000' is ambiguous: an IPv6 address with a port goes in brackets, as "
            "in [::1]:5000");
    refuses("fe80::1:2", REQ,
            "address 'fe80::1:2' is ambiguous: an IPv6 address with a port goes in brackets, as "
            "in [::1]:5000");
    /* ::1 port 65000, not an address either: ambiguous even where a default port applies */
    refuses("::1:65000", 0,
            "address '::1:65000' is ambiguous: an IPv6 address with a port goes in brackets, as "
            "in [::1]:5000");
    refuses("a:b:80", REQ,
            "address 'a:b:80' is not host:port (an IPv6 address goes in brackets, as in "
            "[::1]:5000)");
}

Test(cm_net_hostport, bare_host_takes_the_default_port) {
    accepts("localhost", 50051, "localhost", 50051);
    accepts("::1", 0, "::1", 0);
    /* Where a default port applies, an unbracketed IPv6 address is all address. */
    accepts("fe80::1:2", 7, "fe80::1:2", 7);
    accepts("::1:5000", 7, "::1:5000", 7);
}

Test(cm_net_hostport, no_port_where_one_is_required) {
    refuses("localhost", REQ, "address 'localhost' has no port (want host:port)");
    refuses("[::1]", REQ, "address '[::1]' has no port (want host:port)");
    refuses("::1", REQ, NULL);
    cr_assert_not_null(strstr(err, "is ambiguous"));
}

Test(cm_net_hostport, malformed) {
    static const struct {
        const char *in, *msg; /* msg NULL: any message */
    } cases[] = {
        {"", "address '' is empty (want host:port)"},
        {":80", "address ':80' has no host (want host:port)"},
        {"h:", "address 'h:': port '' is not a number 0..65535"},
        {"h:70000", "address 'h:70000': port '70000' is not a number 0..65535"},
        {"h:+80", "address 'h:+80': port '+80' is not a number 0..65535"},
        {"h: 80", NULL},
        {"h:80x", NULL},
        {"h:000080", NULL},
        {"[::1]80", "address '[::1]80': only ':port' may follow ']'"},
        {"[::1]:", "address '[::1]:': port '' is not a number 0..65535"},
        {"[::1:80", "address '[::1:80': no ']' after '['"},
        {"[host]:80", "address '[host]:80': 'host' in brackets is not an IPv6 address"},
        {"[]:80", NULL},
        {"[fe80::1%]:80", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        refuses(cases[i].in, 1, cases[i].msg);
}

Test(cm_net_hostport, length_bounds_and_no_nul) {
    /* Only len bytes are read: the -NOTLEADER reply hands over part of a line. */
    const char *line = "10.1.2.3:6000 trailing";
    cr_assert_eq(cm_net_hostport_parse(line, 13, REQ, host, sizeof(host), &port, NULL, 0), 0);
    cr_assert_str_eq(host, "10.1.2.3");
    cr_assert_eq(port, 6000);
    char small[4];
    cr_assert_eq(cm_net_hostport_parse("abc:1", 5, 0, small, sizeof(small), &port, err, 64), 0);
    cr_assert_str_eq(small, "abc");
    cr_assert_eq(cm_net_hostport_parse("abcd:1", 6, 0, small, sizeof(small), &port, err, 64),
                 -EINVAL);
    cr_assert_str_eq(err, "address 'abcd:1': host longer than 3 bytes");
    char tiny[8]; /* a short err buffer is cut, still NUL-terminated */
    cr_assert_eq(cm_net_hostport_parse("x", 1, REQ, host, sizeof(host), &port, tiny, sizeof(tiny)),
                 -EINVAL);
    cr_assert_str_eq(tiny, "address");
}

Test(cm_net_hostport, format_round_trips) {
    char out[64];
    cr_assert_eq(cm_net_hostport_format(out, sizeof(out), "::1", 5000), 10);
    cr_assert_str_eq(out, "[::1]:5000");
    accepts(out, REQ, "::1", 5000);
    cm_net_hostport_format(out, sizeof(out), "10.0.0.7", 50051);
    cr_assert_str_eq(out, "10.0.0.7:50051");
    accepts(out, REQ, "10.0.0.7", 50051);
    cm_net_hostport_format(out, sizeof(out), "fe80::1:2", 7);
    accepts(out, REQ, "fe80::1:2", 7);
}
