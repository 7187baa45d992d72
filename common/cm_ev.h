/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Minimal epoll event loop: one loop per thread (CONTRIBUTING.md, "Concurrency"). File events
 * (read/write interest per fd), a before-sleep hook, a periodic cron hook, and an eventfd so other
 * threads can wake the loop. A loop and everything registered on it belong to the thread running
 * cm_ev_run(); only cm_ev_wake() and cm_ev_stop() may be called from other threads.
 */
#ifndef CRESCENT_COMMON_CM_EV_H
#define CRESCENT_COMMON_CM_EV_H

#include <stdint.h>

#define CM_EV_READ  1u /* readable (or peer closed) */
#define CM_EV_WRITE 2u /* writable */

struct cm_ev_loop;

/* Called when fd is ready; mask holds CM_EV_READ/CM_EV_WRITE bits. */
typedef void cm_ev_file_cb(struct cm_ev_loop *loop, int fd, unsigned mask, void *arg);
/* Called once per loop iteration before waiting, and by the cron every period_ms. */
typedef void cm_ev_hook_cb(struct cm_ev_loop *loop, void *arg);

/*
 * Creates a loop able to watch fds below max_fds. Returns NULL with errno set on failure.
 * Caller destroys it with cm_ev_destroy() after cm_ev_run() returned.
 */
struct cm_ev_loop *cm_ev_create(int max_fds);

/* Frees the loop; fds registered on it are not closed. NULL is fine. */
void cm_ev_destroy(struct cm_ev_loop *loop);

/*
 * Sets the interest mask of fd to mask (0 removes it) with cb/arg as its handler.
 * Returns 0 or -errno (-ERANGE when fd >= max_fds). Loop thread only.
 */
int cm_ev_set(struct cm_ev_loop *loop, int fd, unsigned mask, cm_ev_file_cb *cb, void *arg);

/* Installs the before-sleep hook. Loop thread only (or before cm_ev_run). */
void cm_ev_set_before_sleep(struct cm_ev_loop *loop, cm_ev_hook_cb *cb, void *arg);

/* Installs a cron hook run about every period_ms milliseconds. */
void cm_ev_set_cron(struct cm_ev_loop *loop, unsigned period_ms, cm_ev_hook_cb *cb, void *arg);

/* Installs a hook run on the loop thread after every cm_ev_wake() (coalesced). */
void cm_ev_set_wake_hook(struct cm_ev_loop *loop, cm_ev_hook_cb *cb, void *arg);

/* Runs the loop until cm_ev_stop(). Returns 0, or -errno if epoll fails. */
int cm_ev_run(struct cm_ev_loop *loop);

/* Asks the loop to return from cm_ev_run() soon. Any thread; async-signal-safe. */
void cm_ev_stop(struct cm_ev_loop *loop);

/* Wakes the loop so its wake hook runs. Any thread; async-signal-safe. */
void cm_ev_wake(struct cm_ev_loop *loop);

/* Milliseconds of CLOCK_MONOTONIC cached at the start of the current iteration. */
uint64_t cm_ev_now_ms(const struct cm_ev_loop *loop);

#endif
