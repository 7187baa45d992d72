/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Minimal event loop: one loop per thread (CONTRIBUTING.md, "Concurrency"), on epoll or on
 * io_uring. An epoll loop offers file events (read/write interest per fd). An io_uring loop instead
 * lets its owner submit io_uring requests whose completions come back to a callback (struct
 * cm_ev_op); everything queued is submitted by the one io_uring_submit_and_wait of each
 * iteration. Both have a before-sleep hook, a periodic cron hook, and an eventfd so other
 * threads can wake the loop. A loop and everything registered on it belong to the thread
 * running cm_ev_run(); only cm_ev_wake() and cm_ev_stop() may be called from other threads.
 */
#ifndef CRESCENT_COMMON_CM_EV_H
#define CRESCENT_COMMON_CM_EV_H

#include <stddef.h>
#include <stdint.h>

#define CM_EV_READ  1u /* readable (or peer closed) */
#define CM_EV_WRITE 2u /* writable */

struct cm_ev_loop;
struct io_uring;
struct io_uring_sqe;

/* The kernel interface a loop runs on. */
enum cm_ev_backend {
    CM_EV_EPOLL, /* epoll_wait + file callbacks */
    CM_EV_URING  /* io_uring completions */
};

struct cm_ev_op;
/*
 * Called on the loop thread for each completion of an io_uring request whose user_data was op;
 * res and flags are the CQE's (IORING_CQE_F_MORE: a multishot request stays armed).
 */
typedef void cm_ev_op_cb(struct cm_ev_loop *loop, struct cm_ev_op *op, int res, unsigned flags);

/* Header of one io_uring request, embedded by its owner (container_of back to it). */
struct cm_ev_op {
    cm_ev_op_cb *cb;
};

/* Called when fd is ready; mask holds CM_EV_READ/CM_EV_WRITE bits. */
typedef void cm_ev_file_cb(struct cm_ev_loop *loop, int fd, unsigned mask, void *arg);
/* Called once per loop iteration before waiting, and by the cron every period_ms. */
typedef void cm_ev_hook_cb(struct cm_ev_loop *loop, void *arg);

/*
 * Creates a loop able to watch fds below max_fds. Returns NULL with errno set on failure.
 * Caller destroys it with cm_ev_destroy() after cm_ev_run() returned.
 */
struct cm_ev_loop *cm_ev_create(int max_fds);

/*
 * Checks that io_uring can run an event loop here: not disabled by
 * /proc/sys/kernel/io_uring_disabled, and the kernel has every feature the loop and the server
 * use (EXT_ARG waits, multishot accept and recv, provided-buffer rings, async cancel, sendmsg).
 * Returns 0, or -errno with a reason in why (NUL-terminated, at most n bytes). Any thread.
 */
int cm_ev_uring_probe(char *why, size_t n);

/*
 * Creates a loop on io_uring with an SQ of entries slots (the CQ is larger). The ring starts
 * disabled: the first cm_ev_run() enables it on its own thread (IORING_SETUP_SINGLE_ISSUER),
 * so requests may be queued (cm_ev_sqe) but nothing is submitted before then. Returns NULL
 * with errno set on failure. Destroy with cm_ev_destroy() on the thread that ran it.
 */
struct cm_ev_loop *cm_ev_create_uring(int max_fds, unsigned entries);

/* The backend of loop. Any thread. */
enum cm_ev_backend cm_ev_backend_of(const struct cm_ev_loop *loop);

/* The ring of an io_uring loop (NULL for epoll), for buffer-ring registration. Loop thread. */
struct io_uring *cm_ev_ring(struct cm_ev_loop *loop);

/*
 * A free SQE of an io_uring loop, with user_data set to op; submitted by the next wait of the
 * loop (or right away when the SQ was full, to make room). Never NULL. Loop thread only.
 */
struct io_uring_sqe *cm_ev_sqe(struct cm_ev_loop *loop, struct cm_ev_op *op);

/*
 * After cm_ev_run() returned: submits what is queued and hands completions to their ops until
 * done(arg) returns nonzero or timeout_ms pass, so requests in flight can finish before their
 * memory goes away. Returns 0, or -ETIME when time ran out. No-op on epoll. Loop thread only.
 */
int cm_ev_drain(struct cm_ev_loop *loop, int (*done)(void *arg), void *arg, unsigned timeout_ms);

/* Frees the loop; fds registered on it are not closed. NULL is fine. */
void cm_ev_destroy(struct cm_ev_loop *loop);

/*
 * Sets the interest mask of fd to mask (0 removes it) with cb/arg as its handler.
 * Returns 0 or -errno (-ERANGE when fd >= max_fds, -ENOTSUP on an io_uring loop).
 * Loop thread only.
 */
int cm_ev_set(struct cm_ev_loop *loop, int fd, unsigned mask, cm_ev_file_cb *cb, void *arg);

/* Installs the before-sleep hook. Loop thread only (or before cm_ev_run). */
void cm_ev_set_before_sleep(struct cm_ev_loop *loop, cm_ev_hook_cb *cb, void *arg);

/* Installs a cron hook run about every period_ms milliseconds. */
void cm_ev_set_cron(struct cm_ev_loop *loop, unsigned period_ms, cm_ev_hook_cb *cb, void *arg);

/* Installs a hook run on the loop thread after every cm_ev_wake() (coalesced). */
void cm_ev_set_wake_hook(struct cm_ev_loop *loop, cm_ev_hook_cb *cb, void *arg);

/* Runs the loop until cm_ev_stop(). Returns 0, or -errno if epoll/io_uring fails. */
int cm_ev_run(struct cm_ev_loop *loop);

/* Asks the loop to return from cm_ev_run() soon. Any thread; async-signal-safe. */
void cm_ev_stop(struct cm_ev_loop *loop);

/* Wakes the loop so its wake hook runs. Any thread; async-signal-safe. */
void cm_ev_wake(struct cm_ev_loop *loop);

/* Milliseconds of CLOCK_MONOTONIC cached at the start of the current iteration. */
uint64_t cm_ev_now_ms(const struct cm_ev_loop *loop);

#endif
