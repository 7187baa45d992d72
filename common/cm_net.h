/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small socket helpers shared by the servers and the transfer engine: a TCP socket bound to a
 * host and port (SO_REUSEADDR, close-on-exec), ready for listen(2).
 */
#ifndef CRESCENT_COMMON_CM_NET_H
#define CRESCENT_COMMON_CM_NET_H

#include <stdbool.h>

/*
 * Resolves host (NULL = any address) and port with getaddrinfo (numeric_host: host must be an
 * IPv4 or IPv6 literal), opens a blocking close-on-exec TCP socket of the first result's
 * family, sets SO_REUSEADDR and binds it. Returns the socket (the caller closes it), -EINVAL
 * when host does not resolve (or is not numeric), or -errno of socket(2) / bind(2).
 * Thread-safe.
 */
int cm_net_tcp_bind(const char *host, int port, bool numeric_host);

#endif
