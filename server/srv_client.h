/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A client connection: query buffer and parser, argv of the command being run, and the output
 * queue. Output is one byte buffer plus "references": ranges of segment memory (pinned object
 * values) inserted at given offsets of the buffer and sent with writev, so large values go to
 * the socket without a copy. On the io_uring backend the output in flight moves to a separate
 * send state (struct srv_tx) until its completion. A client belongs to the worker thread that
 * accepted it; other threads only set its kill flag (srv_client_kill). A command may suspend
 * the client while slow work runs elsewhere (srv_defer.h); its later commands wait until then.
 */
#ifndef CRESCENT_SERVER_SRV_CLIENT_H
#define CRESCENT_SERVER_SRV_CLIENT_H

#include "common/cm_buf.h"
#include "common/cm_ev.h"
#include "redis-compat/resp.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct srv_obj;
struct srv_worker;
struct srv_cmd;
struct srv_tx;
struct srv_ps_client;
struct srv_defer;

/* Client flags. */
#define SRV_CLIENT_CLOSE_AFTER_REPLY 0x01u /* flush the output, then close */
#define SRV_CLIENT_CLOSE_ASAP        0x02u /* close without flushing */
#define SRV_CLIENT_MULTI             0x04u /* inside MULTI */
#define SRV_CLIENT_DIRTY_EXEC        0x08u /* a queued command failed: EXEC aborts */
#define SRV_CLIENT_PENDING_WRITE     0x10u /* on the worker's pending-write list */
#define SRV_CLIENT_UNIX              0x20u /* connected over the Unix socket */
#define SRV_CLIENT_INPUT_EOF         0x40u /* the peer ended its input while suspended */
#define SRV_CLIENT_HELD              0x80u /* HA: output waits for the op-log (worker's held list) */
#define SRV_CLIENT_MC_COMPACT        0x100u /* MC.REPLYFORMAT COMPACT (srv_cmd_mc_compact.c) */

/* One argument of the command being run (points into the query buffer or MULTI storage). */
struct srv_arg {
    const char *p;
    size_t len;
};

/* A value sent by reference: obj is pinned until its bytes are written. */
struct srv_outref {
    size_t at; /* offset in out where these bytes go */
    struct srv_obj *obj;
    const char *p;
    size_t len;
};

/* A command queued by MULTI: arguments stored in one buffer. */
struct srv_queued {
    const struct srv_cmd *cmd;
    int argc;
    size_t *lens;
    char *data;
};

/* A key watched by WATCH (the registry in srv_watch.c holds the reverse mapping). */
struct srv_watched {
    char *key;
    size_t klen;
};

/*
 * A large SET/PUT value being read straight into segment memory: the request's header bytes
 * (up to the value) stay in the query buffer, the value bytes go to obj's block.
 */
struct srv_bigarg {
    struct srv_obj *obj; /* NULL when not in use */
    char *dst;           /* obj's value bytes */
    size_t len, got;     /* value length, bytes received */
    size_t hdr_len;      /* request bytes before the value, at qbuf + qpos */
};

struct srv_client {
    uint64_t id;
    int fd;
    unsigned flags;
    int proto;         /* 2 or 3 */
    int authenticated; /* 1 when no password is set or AUTH succeeded */
    _Atomic int kill;  /* set by CLIENT KILL from any thread */
    struct srv_worker *worker;
    char *name;     /* CLIENT SETNAME, NULL when none */
    char *lib_name; /* CLIENT SETINFO */
    char *lib_ver;
    char addr[64];  /* peer ip:port */
    char laddr[64]; /* local ip:port */
    uint64_t ctime_ms, last_ms;
    const char *last_cmd; /* name of the last command run */

    struct cm_buf qbuf; /* unparsed input starts at qpos */
    size_t qpos;
    struct resp_parser parser;

    int argc; /* the command being run */
    struct srv_arg *argv;
    int argv_cap;
    const struct srv_cmd *cmd;

    struct cm_buf out; /* reply bytes; out_sent already written */
    size_t out_sent;
    struct srv_outref *refs;
    int nrefs, refs_cap, ref_idx;
    size_t ref_sent;
    size_t out_ref_bytes; /* bytes pending in refs */

    struct srv_bigarg big;

    struct srv_queued *mq; /* MULTI queue */
    int mq_len, mq_cap;
    struct srv_watched *watched;
    int nwatched;
    _Atomic int watch_dirty; /* a watched key was modified: EXEC aborts */

    struct srv_client *wprev, *wnext; /* worker's client list */
    struct srv_client *gprev, *gnext; /* global registry */
    int unregistered;                 /* out of the registry (registry lock) */
    struct srv_client *pw_next;       /* worker's pending-write list */
    struct srv_client *held_next;     /* worker's held list (SRV_CLIENT_HELD) */
    uint64_t need_seq; /* HA: op-log entry that everything in the output needs stored */

    /* io_uring backend (srv_net_uring.c): requests in flight and the reply being sent. */
    struct cm_ev_op recv_op, send_op;
    unsigned inflight; /* requests whose last completion has not arrived */
    int recv_armed;    /* a recv is in flight (multishot, or straight into a big value) */
    int recv_cancel;   /* the multishot recv is being cancelled (big value follows) */
    int recv_oneshot;  /* sent a big value: read with one-shot recvs into qbuf (no ring copy) */
    int closing;       /* closed; memory goes when inflight drops to 0 */
    struct srv_tx *tx; /* NULL until the first send */
    size_t tx_bytes;   /* bytes of tx not yet sent */

    struct srv_ps_client *ps; /* pub/sub subscriptions (srv_pubsub.c), NULL when none yet */

    /* Deferred replies (srv_defer.h): while defer is set the client is suspended, its
     * further input waits unparsed in qbuf. defer_ok: the running command may defer. */
    struct srv_defer *defer;
    int defer_ok;
};

/* Bytes waiting to be written (including a send in flight on io_uring). */
static inline size_t srv_client_pending(const struct srv_client *c) {
    return (c->out.len - c->out_sent) + c->out_ref_bytes + c->tx_bytes;
}

/*
 * Appends a reference to len bytes at p, pinned by obj (the caller already took the pin, which
 * the client drops after writing). The bulk header must already be in c->out; the caller
 * appends the trailing CRLF after this call.
 */
void srv_client_add_ref(struct srv_client *c, struct srv_obj *obj, const char *p, size_t len);

/* Error reply through the one path that counts errors and flags a failing MULTI queue. */
void srv_reply_error(struct srv_client *c, const char *msg);
void srv_reply_errorf(struct srv_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Frequent replies. */
void srv_reply_ok(struct srv_client *c);
void srv_reply_syntax_error(struct srv_client *c);
void srv_reply_wrong_arity(struct srv_client *c, const char *name);

/* Asks the owning worker to close c (any thread). */
void srv_client_kill(struct srv_client *c);

#endif
