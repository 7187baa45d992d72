/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-client, the standalone real client (docs/store.md, "The crescent-client daemon"):
 * cli_d_main.c parses the command line, creates the store that contributes the global segment,
 * prints the readiness line and unmounts gracefully on SIGTERM / SIGINT; cli_d_serve.c serves
 * dummy clients on a Unix socket (protocol in client/store/cli_dummy.h).
 */
#ifndef CRESCENT_CLIENT_DAEMON_CLI_D_H
#define CRESCENT_CLIENT_DAEMON_CLI_D_H

#include "crescent/store.h"

struct cli_d_server; /* the dummy-client server (opaque) */

/*
 * Listens on the Unix socket named by spec (cli_dummy_sockaddr forms: "port", "@name",
 * "/path"; a socket file already there is replaced, any other file is left and bind fails) and
 * serves dummy clients of st from an accept thread and one thread per dummy connection. A
 * connection silent for ttl_ms is dropped; a pool whose last connection went is unregistered
 * and unmapped. Returns 0 and *out, or -errno
 * (-EADDRINUSE: another daemon holds the name). st must outlive the server.
 */
int cli_d_serve_start(struct crescent_store *st, const char *spec, unsigned ttl_ms,
                      struct cli_d_server **out);

/* Stops accepting, closes every dummy connection (releasing its pool), joins the threads and
 * frees s. NULL is fine. Not thread-safe against itself. */
void cli_d_serve_stop(struct cli_d_server *s);

/* Fills *out with the server's counters (the daemon_stats of a dummy). Thread-safe. */
void cli_d_serve_stats(struct cli_d_server *s, struct crescent_store_daemon_stats *out);

#endif
