/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the master's network layer shared by srv_net.c (listeners, client life cycle,
 * request processing, the epoll backend) and srv_net_uring.c (the io_uring backend): the
 * worker and listener structures and the srv_net__ entry points. Not for other modules.
 */
#ifndef CRESCENT_SERVER_SRV_NET_INT_H
#define CRESCENT_SERVER_SRV_NET_INT_H

#include "common/cm_ev.h"
#include "server/srv_client.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define SRV_MAX_BINDS 16 /* addresses in --bind */

struct srv_worker;
struct srv_uring;

/* A listening socket owned by one worker. */
struct srv_listener {
    int fd;
    int is_unix;
    struct srv_worker *w;
    struct cm_ev_op accept_op; /* io_uring: multishot accept */
};

/* One event-loop thread and the clients it owns. */
struct srv_worker {
    unsigned id;
    pthread_t thread;
    struct cm_ev_loop *loop;
    struct srv_listener ls[SRV_MAX_BINDS + 1]; /* one per --bind address, then the Unix one */
    int nls;
    struct srv_client *clients;
    struct srv_client *pending;
    struct srv_client *held; /* HA: clients whose output waits for the op-log */
    _Atomic int has_held;    /* held is not empty: op-log progress wakes this loop */
    unsigned nclients;
    struct srv_uring *ur; /* io_uring backend state, NULL on epoll */
    unsigned nclosing;    /* io_uring: clients closed whose requests are still in flight */
    int stopping;         /* the loop ended: accepted connections are closed at once */
    /* Completed deferrals waiting for the loop (srv_defer.c); other threads append. */
    pthread_mutex_t defer_mu;
    struct srv_defer *defer_head, *defer_tail;
};

/*
 * The reply being sent on the io_uring backend: the client's output buffer and value
 * references moved here at submit time (so new replies can pile up in c->out meanwhile), as
 * an iovec; obj[i] is the pinned value behind iov[i] (NULL for buffer bytes), unpinned when
 * the send completion says iov[i] is out.
 */
struct srv_tx {
    struct cm_buf buf;
    struct srv_outref *refs;
    int refs_cap;
    struct iovec *iov;
    struct srv_obj **obj;
    int niov, iov_cap, idx; /* idx: first iovec not fully sent */
    struct msghdr msg;
    int busy; /* a send is in flight */
};

/* True when the process runs the io_uring backend (set once at start-up). */
extern int srv_net_uring;

/* Accepted fd: applies maxclients and protected mode (rejecting with Redis's replies), sets
 * TCP options and creates the client. Returns the client, or NULL when fd was rejected
 * (and closed). Worker thread. */
struct srv_client *srv_net__accept_fd(struct srv_worker *w, int fd, int is_unix);

/* Takes n received bytes: straight into a big value being read, then into the query buffer;
 * runs complete requests. Returns 0, or -1 when c was closed (do not touch it). */
int srv_net__feed(struct srv_client *c, const char *p, size_t n);

/* Reserves room at the end of c's query buffer for the next read; returns how much to read. */
size_t srv_net__recv_want(struct srv_client *c);

/* n bytes were read into the query buffer's spare room: counts them, runs complete requests.
 * Returns 0, or -1 when c was closed (do not touch it). */
int srv_net__received(struct srv_client *c, size_t n);

/* Queues c for a flush in the before-sleep hook. */
void srv_net__want_write(struct srv_client *c);

/* Closes c (either backend): srv_client_free of srv_net.c. */
void srv_net__client_free(struct srv_client *c);

/* Takes c off its worker, the pending-write list and the registry (once). */
void srv_net__client_detach(struct srv_client *c);

/* Frees c's memory and drops its pins (after detach; on io_uring once nothing is in flight). */
void srv_net__client_release(struct srv_client *c);

/* A suspended client's deferral completed (its reply is in c->out): parses and runs its
 * buffered input, queues the output. c may be closed (and freed) on return. Loop thread. */
void srv_net__resume(struct srv_client *c);

/* ---- srv_defer.c ---- */

/* Delivers w's completed deferrals: done callbacks, then the clients resume. Loop thread (or
 * the main thread at shutdown, once the loop ended). */
void srv_defer__drain(struct srv_worker *w);

/* c is closing: its deferral (if any) loses its client, the result will be dropped. */
void srv_defer__client_gone(struct srv_client *c);

/* ---- srv_net_uring.c ---- */

/* Registers w's provided-buffer ring and arms multishot accept on its listeners. 0 or -errno. */
int srv_uring__worker_init(struct srv_worker *w);
/* Frees what srv_uring__worker_init allocated (after the loop was destroyed). */
void srv_uring__worker_fini(struct srv_worker *w);
/* Starts receiving on a new client. */
void srv_uring__start_client(struct srv_client *c);
/* Sends c's pending output unless a send is in flight. */
void srv_uring__flush(struct srv_client *c);
/* Closes c: detaches it, cancels its requests; memory goes when they completed. */
void srv_uring__close(struct srv_client *c);
/* Once a second (called from the cron): cancels the multishot recv of idle clients whose
 * socket already reports its end, so the re-armed recv reads it. Loop thread. */
void srv_uring__sweep(struct srv_worker *w, uint64_t now);
/* Frees a client's send state (release time). */
void srv_uring__tx_free(struct srv_client *c);

#endif
