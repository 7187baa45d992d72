/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deferred replies: a command handler suspends its client, slow work (a disk read, a transfer
 * from another host) runs off the event loop, and the reply is appended on the owning loop
 * later, so the loop's other clients go on meanwhile.
 *
 * DESIGN. A handler that wants to finish later embeds a struct srv_defer in its own job and
 * calls srv_client_defer(): the client is suspended (its further pipelined commands stay in the
 * query buffer, unparsed, so replies keep their order) and the job is bound to the client's
 * worker. The handler then either hands the job to the server's small thread pool with
 * srv_defer_submit() (the work callback runs there; blocking is fine) or starts the work some
 * other way and calls srv_defer_complete() from any thread when it is done. Completion puts the
 * job on its worker's inbox and wakes the loop (cm_ev_wake); the loop's wake hook calls the
 * job's done callback on the loop thread, which appends the reply (or, when the client went
 * away meanwhile: disconnected, CLIENT KILL, timeout, shutdown, gets NULL and only frees the
 * job), and then the client resumes: its buffered input is parsed and run as usual.
 *
 * Rules for handlers: take no lock across the deferral (no shard lock, no pool mutex); copy or
 * pin what the work needs (the command's arguments point into the query buffer, which moves);
 * re-validate on the loop what may have changed meanwhile; append the whole reply in done,
 * nothing in the handler after a successful srv_client_defer(). A handler defers at most once
 * per command; inside MULTI/EXEC, or when not dispatched from the network loop,
 * srv_client_defer() refuses and the handler does its work synchronously as before.
 *
 * Threads: srv_client_defer() on the client's loop thread (inside its command handler);
 * srv_defer_submit() and srv_defer_complete() from any thread; callbacks as documented below.
 * The pool starts on first use with SRV_DEFER_THREADS threads and is stopped by
 * srv_defer_shutdown() after the event loops ended.
 */
#ifndef CRESCENT_SERVER_SRV_DEFER_H
#define CRESCENT_SERVER_SRV_DEFER_H

struct srv_client;
struct srv_worker;
struct srv_defer;

/* Threads of the deferred-work pool (blocking disk reads and transfers; see docs/storage.md). */
#define SRV_DEFER_THREADS 8
/* Deferrals one pool thread takes together for a batch callback. */
#define SRV_DEFER_BATCH 16

/* Runs on a pool thread: the slow part. Must not touch the client. */
typedef void srv_defer_work_cb(struct srv_defer *d);

/* As srv_defer_work_cb for n deferrals submitted with the same callback, done together. */
typedef void srv_defer_batch_cb(struct srv_defer **ds, unsigned n);

/*
 * Runs on the owning loop thread once the work is complete. c is the suspended client, still
 * suspended until the callback returns: append its reply to c->out. c is NULL when the client
 * is gone: drop the result. Either way the callback owns d (and the job around it) and frees
 * it. It must not close c or run commands on it; the loop resumes c afterwards.
 */
typedef void srv_defer_done_cb(struct srv_defer *d, struct srv_client *c);

/* A deferral, embedded by the handler in its job (container_of back to it). */
struct srv_defer {
    srv_defer_work_cb *work;
    srv_defer_batch_cb *batch;
    srv_defer_done_cb *done;
    struct srv_client *c;   /* loop thread only: the suspended client, NULL once it is gone */
    struct srv_worker *w;   /* the loop that resumes it */
    struct srv_defer *next; /* pool queue / loop inbox */
};

/*
 * 1 when the command now running on c may be deferred: dispatched by the network loop (not
 * inside EXEC or a nested call), not inside MULTI, not already deferred, c not closing.
 */
int srv_client_can_defer(const struct srv_client *c);

/*
 * Suspends c until d completes, binding d to c's loop; done runs there afterwards. Returns 0,
 * or -EAGAIN when the command cannot be deferred (srv_client_can_defer() is 0): nothing
 * changed, do the work synchronously. Loop thread, inside c's command handler.
 */
int srv_client_defer(struct srv_client *c, struct srv_defer *d, srv_defer_done_cb *done);

/* Runs work(d) on a pool thread, then completes d. d must be deferred. Any thread. */
void srv_defer_submit(struct srv_defer *d, srv_defer_work_cb *work);

/*
 * As srv_defer_submit, but the pool thread that takes d also takes the other deferrals queued
 * with the same batch callback (up to SRV_DEFER_BATCH) and runs them in one batch call: for
 * work whose cost is a round trip that many can share (disk reads submitted together).
 */
void srv_defer_submit_batch(struct srv_defer *d, srv_defer_batch_cb *batch);

/* Hands a deferred d back to its loop, whose wake hook calls d->done. Any thread; once. */
void srv_defer_complete(struct srv_defer *d);

/*
 * Stops the pool: queued work still runs (its results are dropped: every client is gone by
 * then), the threads are joined, and every worker's completed deferrals get their done call
 * with a NULL client. Main thread, after the event loops ended and their clients were closed,
 * before the loops are destroyed and before the keyspace is freed.
 */
void srv_defer_shutdown(struct srv_worker *workers, unsigned n);

/* Deferrals waiting for their work or their done call (INFO: blocked_clients). Any thread. */
unsigned srv_defer_pending(void);

#endif
