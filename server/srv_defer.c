/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Deferred replies (srv_defer.h): the pool that runs deferred work, the per-worker inboxes of
 * completed deferrals, and their delivery on the owning loop.
 */
#include "common/fmacros.h"

#include "server/srv_defer.h"

#include "server/srv_client.h"
#include "server/srv_net_int.h"

#include "common/cm_atomic.h"
#include "common/cm_ev.h"
#include "common/cm_log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The pool: one FIFO of submitted deferrals, SRV_DEFER_THREADS threads started on first use. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct srv_defer *head, *tail;
    pthread_t threads[SRV_DEFER_THREADS];
    int started, stopping;
    unsigned delay_ms; /* CRESCENT_TEST_DEFER_DELAY_MS: tests widen the window of a deferral */
} srv_dp = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static _Atomic unsigned srv_defer_count; /* deferrals not yet delivered */

/* ---------------------------------------------------------------- suspending */

int srv_client_can_defer(const struct srv_client *c) {
    return c->defer_ok && !c->defer && !c->closing &&
           !(c->flags & (SRV_CLIENT_MULTI | SRV_CLIENT_CLOSE_ASAP));
}

int srv_client_defer(struct srv_client *c, struct srv_defer *d, srv_defer_done_cb *done) {
    if (!srv_client_can_defer(c))
        return -EAGAIN;
    memset(d, 0, sizeof(*d));
    d->done = done;
    d->c = c;
    d->w = c->worker;
    c->defer = d;
    c->defer_ok = 0; /* once per command */
    cm_atomic_add_relaxed(&srv_defer_count, 1u);
    return 0;
}

/* ---------------------------------------------------------------- completion */

void srv_defer_complete(struct srv_defer *d) {
    struct srv_worker *w = d->w;
    pthread_mutex_lock(&w->defer_mu);
    int wake = w->defer_head == NULL;
    d->next = NULL;
    if (w->defer_tail)
        w->defer_tail->next = d;
    else
        w->defer_head = d;
    w->defer_tail = d;
    pthread_mutex_unlock(&w->defer_mu);
    if (wake)
        cm_ev_wake(w->loop);
}

/* Calls d's done callback and resumes its client (loop thread). */
static void srv_defer_deliver(struct srv_defer *d) {
    struct srv_client *c = d->c;
    if (c)
        c->defer = NULL;
    cm_atomic_sub_relaxed(&srv_defer_count, 1u);
    d->done(d, c); /* frees d */
    if (c)
        srv_net__resume(c);
}

void srv_defer__drain(struct srv_worker *w) {
    pthread_mutex_lock(&w->defer_mu);
    struct srv_defer *d = w->defer_head;
    w->defer_head = w->defer_tail = NULL;
    pthread_mutex_unlock(&w->defer_mu);
    while (d) {
        struct srv_defer *next = d->next;
        srv_defer_deliver(d);
        d = next;
    }
}

void srv_defer__client_gone(struct srv_client *c) {
    if (!c->defer)
        return;
    c->defer->c = NULL; /* its work goes on; done drops the result */
    c->defer = NULL;
}

unsigned srv_defer_pending(void) {
    return cm_atomic_load_relaxed(&srv_defer_count);
}

/* ---------------------------------------------------------------- the pool */

/* Takes the head of the queue and, for a batch callback, the others queued with the same one
 * (pool mutex held). Returns how many are in ds. */
static unsigned srv_defer_take(struct srv_defer **ds) {
    struct srv_defer *d = srv_dp.head;
    srv_dp.head = d->next;
    ds[0] = d;
    unsigned n = 1;
    if (d->batch) {
        struct srv_defer **pp = &srv_dp.head;
        while (*pp && n < SRV_DEFER_BATCH) {
            if ((*pp)->batch == d->batch) {
                ds[n++] = *pp;
                *pp = (*pp)->next;
            } else {
                pp = &(*pp)->next;
            }
        }
    }
    srv_dp.tail = NULL;
    for (struct srv_defer *x = srv_dp.head; x; x = x->next)
        srv_dp.tail = x;
    return n;
}

static void *srv_defer_thread(void *arg) {
    (void)arg;
    struct srv_defer *ds[SRV_DEFER_BATCH];
    pthread_mutex_lock(&srv_dp.mu);
    for (;;) {
        while (!srv_dp.head && !srv_dp.stopping)
            pthread_cond_wait(&srv_dp.cv, &srv_dp.mu);
        if (!srv_dp.head)
            break; /* stopping and nothing queued */
        unsigned n = srv_defer_take(ds);
        unsigned delay = srv_dp.delay_ms;
        pthread_mutex_unlock(&srv_dp.mu);
        if (delay) {
            struct timespec ts = {delay / 1000, (long)(delay % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (ds[0]->batch)
            ds[0]->batch(ds, n);
        else
            ds[0]->work(ds[0]);
        for (unsigned i = 0; i < n; i++)
            srv_defer_complete(ds[i]);
        pthread_mutex_lock(&srv_dp.mu);
    }
    pthread_mutex_unlock(&srv_dp.mu);
    return NULL;
}

/* Starts the threads (pool mutex held). A thread that cannot start leaves fewer. */
static void srv_defer_start_pool(void) {
    const char *e = getenv("CRESCENT_TEST_DEFER_DELAY_MS");
    srv_dp.delay_ms = e ? (unsigned)strtoul(e, NULL, 10) : 0;
    for (int i = 0; i < SRV_DEFER_THREADS; i++) {
        int rc = pthread_create(&srv_dp.threads[i], NULL, srv_defer_thread, NULL);
        if (rc != 0) {
            cm_log(CM_LOG_WARNING, "net", "cannot start deferred-work thread: %s", strerror(rc));
            break;
        }
        srv_dp.started++;
    }
}

/* Queues d (work or batch set) for the pool. */
static void srv_defer_queue(struct srv_defer *d) {
    d->next = NULL;
    pthread_mutex_lock(&srv_dp.mu);
    if (!srv_dp.started && !srv_dp.stopping)
        srv_defer_start_pool();
    if (srv_dp.started == 0) { /* no thread (start failed, or after shutdown): run it here */
        pthread_mutex_unlock(&srv_dp.mu);
        if (d->batch)
            d->batch(&d, 1);
        else
            d->work(d);
        srv_defer_complete(d);
        return;
    }
    if (srv_dp.tail)
        srv_dp.tail->next = d;
    else
        srv_dp.head = d;
    srv_dp.tail = d;
    pthread_cond_signal(&srv_dp.cv);
    pthread_mutex_unlock(&srv_dp.mu);
}

void srv_defer_submit(struct srv_defer *d, srv_defer_work_cb *work) {
    d->work = work;
    d->batch = NULL;
    srv_defer_queue(d);
}

void srv_defer_submit_batch(struct srv_defer *d, srv_defer_batch_cb *batch) {
    d->work = NULL;
    d->batch = batch;
    srv_defer_queue(d);
}

void srv_defer_shutdown(struct srv_worker *workers, unsigned n) {
    pthread_mutex_lock(&srv_dp.mu);
    srv_dp.stopping = 1;
    int started = srv_dp.started;
    pthread_cond_broadcast(&srv_dp.cv);
    pthread_mutex_unlock(&srv_dp.mu);
    for (int i = 0; i < started; i++)
        pthread_join(srv_dp.threads[i], NULL);
    pthread_mutex_lock(&srv_dp.mu);
    srv_dp.started = 0;
    pthread_mutex_unlock(&srv_dp.mu);
    for (unsigned i = 0; workers && i < n; i++)
        if (workers[i].loop)
            srv_defer__drain(&workers[i]);
}
