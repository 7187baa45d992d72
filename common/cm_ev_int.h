/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of cm_ev shared by its two backends: the loop structure (epoll fields, and the
 * io_uring ring when the loop runs on io_uring) and the backend entry points of cm_ev_uring.c.
 * Only common/cm_ev*.c include this.
 */
#ifndef CRESCENT_COMMON_CM_EV_INT_H
#define CRESCENT_COMMON_CM_EV_INT_H

#include "common/cm_ev.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

struct io_uring;
struct cm_ev_loop;

/* Entry points of a loop backend other than epoll (CONTRIBUTING.md, "Layout": size first). Kept as
 * a table so that cm_ev.o does not pull cm_ev_uring.o (and liburing) into binaries that never use
 * it. */
struct cm_ev_backend_ops {
    size_t size;
    int (*run)(struct cm_ev_loop *loop);   /* cm_ev_run() */
    void (*fini)(struct cm_ev_loop *loop); /* cm_ev_destroy(), before the common part */
};

struct cm_ev_file {
    unsigned mask;
    cm_ev_file_cb *cb;
    void *arg;
};

struct cm_ev_loop {
    int epfd; /* -1 on io_uring */
    int wakefd;
    int max_fds;
    _Atomic int stop;
    uint64_t now_ms;
    uint64_t next_cron_ms;
    unsigned cron_period_ms;
    cm_ev_hook_cb *before_sleep, *cron, *wake_hook;
    void *before_sleep_arg, *cron_arg, *wake_arg;
    struct cm_ev_file *files;
    struct epoll_event events[256];
    /* io_uring backend (cm_ev_uring.c) */
    const struct cm_ev_backend_ops *ops; /* NULL on epoll */
    struct io_uring *ring;
    struct cm_ev_op wake_op; /* multishot poll on wakefd */
    int ring_enabled;        /* created disabled; enabled by the thread that runs the loop */
};

/* Runs the wake hook after draining the eventfd (both backends). */
void cm_ev__wake_fired(struct cm_ev_loop *loop);

#endif
