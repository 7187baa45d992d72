/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-client, the standalone real client (docs/store.md, "The crescent-client daemon"):
 * cli_d_main.c parses the command line, creates the store that contributes the global segment,
 * prints the readiness line and unmounts gracefully on SIGTERM / SIGINT; cli_d_serve.c serves
 * dummy clients on a Unix socket (protocol in client/store/cli_dummy.h); cli_d_http.c is the
 * admin HTTP server (/metrics, /metrics/summary, /health) and cli_d_metrics.c renders its
 * Prometheus exposition.
 */
#ifndef CRESCENT_CLIENT_DAEMON_CLI_D_H
#define CRESCENT_CLIENT_DAEMON_CLI_D_H

#include "common/cm_buf.h"
#include "crescent/store.h"

#include <stdbool.h>
#include <stdint.h>

/* Kept equal to crescent-master's SRV_VERSION (server/srv_server.h). */
#define CLI_D_VERSION "0.1.0"

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

/* ---- admin HTTP (cli_d_http.c, cli_d_metrics.c) ---- */

/* The daemon's life, as /health reports it (cli_d_http_ctx.state, read atomically). */
enum cli_d_state { CLI_D_STARTING = 0, CLI_D_SERVING = 1, CLI_D_STOPPING = 2 };

/* What the admin server reads. Everything must outlive the server except dummies, which
 * cli_d_http_forget_dummies detaches first. */
struct cli_d_http_ctx {
    struct crescent_store *st;    /* the daemon's store */
    struct cli_d_server *dummies; /* the dummy-client server, or NULL */
    const char *master;           /* --master, as given */
    const char *protocol;         /* --protocol */
    uint64_t local_buffer_size;   /* --local_buffer_size (bytes) */
    uint64_t start_ms;            /* cm_mono_ms() at start */
    const int *state;             /* enum cli_d_state, written by the main thread */
};

/* One of the daemon's segments as the admin server sees it: its own size, and the master's
 * record of it (MC.QUERYSEGMENT) when the master answered. */
struct cli_d_seg_view {
    char name[256];
    uint64_t size;   /* bytes contributed */
    bool known;      /* the master answered for this segment */
    bool mounted;    /* the master lists it with status OK */
    uint64_t used;   /* bytes of values in it (when mounted) */
    char status[32]; /* the master's status, NOT_MOUNTED, or UNKNOWN (master unreachable) */
};

struct cli_d_http; /* the admin server (opaque) */

/*
 * Starts the admin HTTP server on host:port (a numeric IPv4 / IPv6 address) with its own
 * libmicrohttpd thread. port 0: nothing starts, returns 0 with *out NULL. A host that is not
 * an address, or a port that cannot be bound (in use, no permission), is logged at WARNING,
 * *out is NULL and -errno is returned: the daemon goes on without the server. Copies *ctx.
 * Main thread, once.
 */
int cli_d_http_start(const struct cli_d_http_ctx *ctx, const char *host, int port,
                     struct cli_d_http **out);

/* The TCP port the server listens on (0 for NULL). */
int cli_d_http_port(const struct cli_d_http *h);

/* Makes the server stop reading the dummy-client server (before cli_d_serve_stop frees it);
 * its counters are reported as zero from then on. NULL is fine. Thread-safe. */
void cli_d_http_forget_dummies(struct cli_d_http *h);

/* Stops the server, joins its thread, closes its master connection and frees h. NULL is fine.
 * Main thread. */
void cli_d_http_stop(struct cli_d_http *h);

/*
 * Appends the Prometheus text exposition (format 0.0.4) of the daemon to out: transfer
 * counters per transport, dummy-client counters (dummies may be NULL: reported as zero), the
 * segments in segs[0..n) and process figures. Names start with crescent_client_. Any thread.
 */
void cli_d_metrics_render(const struct cli_d_http_ctx *ctx, struct cli_d_server *dummies,
                          const struct cli_d_seg_view *segs, size_t n, bool master_ok,
                          struct cm_buf *out);

/* Appends the human-readable /metrics/summary text (a few lines) to out. Any thread. */
void cli_d_metrics_summary(const struct cli_d_http_ctx *ctx, struct cli_d_server *dummies,
                           const struct cli_d_seg_view *segs, size_t n, bool master_ok,
                           struct cm_buf *out);

#endif
