/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small socket helpers shared by the servers, the transfer engine and the client library: a TCP
 * socket bound to a host and port (SO_REUSEADDR, close-on-exec), ready for listen(2), and the one
 * parser (and formatter) of "host:port" addresses that every address setting goes through.
 */
#ifndef CRESCENT_COMMON_CM_NET_H
#define CRESCENT_COMMON_CM_NET_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Resolves host (NULL = any address) and port with getaddrinfo (numeric_host: host must be an
 * IPv4 or IPv6 literal), opens a blocking close-on-exec TCP socket of the first result's
 * family, sets SO_REUSEADDR and binds it. Returns the socket (the caller closes it), -EINVAL
 * when host does not resolve (or is not numeric), or -errno of socket(2) / bind(2).
 * Thread-safe.
 */
int cm_net_tcp_bind(const char *host, int port, bool numeric_host);

/* cm_net_hostport_parse()'s default_port when a port must be given. */
#define CM_NET_PORT_REQUIRED (-1)

/*
 * Splits the len bytes at s (no NUL needed) into host (hostlen bytes, NUL-terminated, without
 * brackets) and *port. The one rule for addresses in Crescent:
 *   - "host:port" (a name or an IPv4 address) and "[v6]:port" (an IPv6 address in brackets,
 *     optionally with a %zone) carry a port of 0..65535, decimal digits only;
 *   - "host" and "[v6]" carry none: *port becomes default_port, or, when default_port is
 *     CM_NET_PORT_REQUIRED, the address is refused ("no port");
 *   - an unbracketed string with two or more ':' is an IPv6 literal. When a default port
 *     applies and the whole string is an IPv6 address, it is that address without a port
 *     ("::1", "fe80::1:2"). Otherwise it is refused as ambiguous: "::1:5000" could be ::1
 *     port 5000 or the address ::1:5000, so an IPv6 address with a port must be written
 *     "[::1]:5000" (where a default port applies "::1:5000" is the address ::1:5000).
 * Port 0 is accepted; callers for whom 0 means nothing refuse it themselves. Returns 0, or
 * -EINVAL with one line in err (errlen bytes; err may be NULL) that quotes the address and
 * says what is wrong. host is written only on success. Thread-safe, no allocation.
 */
int cm_net_hostport_parse(const char *s, size_t len, int default_port, char *host, size_t hostlen,
                          int *port, char *err, size_t errlen);

/*
 * Writes host and port into out (outlen bytes, always NUL-terminated) as "host:port", or as
 * "[host]:port" when host contains ':' (an IPv6 address), the form cm_net_hostport_parse() reads
 * back. Returns the length snprintf(3) returns (>= outlen: truncated). Thread-safe.
 */
int cm_net_hostport_format(char *out, size_t outlen, const char *host, int port);

#endif
