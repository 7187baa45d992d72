/* SPDX-License-Identifier: Apache-2.0 */
/* cm_ev.h: the parts common to both backends, and the epoll backend (level-triggered; the wake
 * channel is an eventfd). The io_uring backend is cm_ev_uring.c. */
#include "common/fmacros.h"

#include "common/cm_ev.h"
#include "common/cm_ev_int.h"

#include "common/cm_atomic.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct cm_ev_loop *cm_ev_create(int max_fds) {
    struct cm_ev_loop *l = cm_calloc(1, sizeof(*l));
    l->wakefd = -1;
    l->max_fds = max_fds;
    l->files = cm_calloc((size_t)max_fds, sizeof(*l->files));
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->epfd < 0 || l->wakefd < 0) {
        int saved = errno;
        cm_ev_destroy(l);
        errno = saved;
        return NULL;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = -1};
    epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev);
    l->now_ms = cm_mono_ms();
    return l;
}

void cm_ev_destroy(struct cm_ev_loop *loop) {
    if (!loop)
        return;
    if (loop->ops)
        loop->ops->fini(loop);
    if (loop->epfd >= 0)
        close(loop->epfd);
    if (loop->wakefd >= 0)
        close(loop->wakefd);
    cm_free(loop->files);
    cm_free(loop);
}

int cm_ev_set(struct cm_ev_loop *loop, int fd, unsigned mask, cm_ev_file_cb *cb, void *arg) {
    if (loop->ops)
        return -ENOTSUP;
    if (fd < 0 || fd >= loop->max_fds)
        return -ERANGE;
    struct cm_ev_file *f = &loop->files[fd];
    struct epoll_event ev = {.events = 0, .data.fd = fd};
    if (mask & CM_EV_READ)
        ev.events |= EPOLLIN;
    if (mask & CM_EV_WRITE)
        ev.events |= EPOLLOUT;
    int op = f->mask == 0 ? EPOLL_CTL_ADD : (mask == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD);
    if (f->mask == 0 && mask == 0)
        return 0;
    if (f->mask != mask && epoll_ctl(loop->epfd, op, fd, &ev) < 0)
        return -errno;
    f->mask = mask;
    f->cb = cb;
    f->arg = arg;
    return 0;
}

void cm_ev_set_before_sleep(struct cm_ev_loop *loop, cm_ev_hook_cb *cb, void *arg) {
    loop->before_sleep = cb;
    loop->before_sleep_arg = arg;
}

void cm_ev_set_cron(struct cm_ev_loop *loop, unsigned period_ms, cm_ev_hook_cb *cb, void *arg) {
    loop->cron = cb;
    loop->cron_arg = arg;
    loop->cron_period_ms = period_ms ? period_ms : 100;
    loop->next_cron_ms = cm_mono_ms() + loop->cron_period_ms;
}

void cm_ev_set_wake_hook(struct cm_ev_loop *loop, cm_ev_hook_cb *cb, void *arg) {
    loop->wake_hook = cb;
    loop->wake_arg = arg;
}

void cm_ev_stop(struct cm_ev_loop *loop) {
    cm_atomic_store_release(&loop->stop, 1);
    cm_ev_wake(loop);
}

void cm_ev_wake(struct cm_ev_loop *loop) {
    uint64_t one = 1;
    if (write(loop->wakefd, &one, sizeof(one)) < 0) {
        /* counter saturated: a wake is pending anyway */
    }
}

uint64_t cm_ev_now_ms(const struct cm_ev_loop *loop) {
    return loop->now_ms;
}

void cm_ev__wake_fired(struct cm_ev_loop *loop) {
    uint64_t v;
    if (read(loop->wakefd, &v, sizeof(v)) < 0) {
        /* spurious wake */
    }
    if (loop->wake_hook)
        loop->wake_hook(loop, loop->wake_arg);
}

enum cm_ev_backend cm_ev_backend_of(const struct cm_ev_loop *loop) {
    return loop->ops ? CM_EV_URING : CM_EV_EPOLL;
}

static void cm_ev_dispatch(struct cm_ev_loop *loop, int n) {
    for (int i = 0; i < n; i++) {
        struct epoll_event *e = &loop->events[i];
        if (e->data.fd < 0) {
            cm_ev__wake_fired(loop);
            continue;
        }
        int fd = e->data.fd;
        struct cm_ev_file *f = &loop->files[fd];
        unsigned mask = 0;
        if (e->events & (EPOLLIN | EPOLLERR | EPOLLHUP))
            mask |= CM_EV_READ;
        if (e->events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            mask |= CM_EV_WRITE;
        mask &= f->mask ? f->mask : 0;
        if (mask && f->cb)
            f->cb(loop, fd, mask, f->arg);
    }
}

int cm_ev_run(struct cm_ev_loop *loop) {
    if (loop->ops)
        return loop->ops->run(loop);
    while (!cm_atomic_load_acquire(&loop->stop)) {
        if (loop->before_sleep)
            loop->before_sleep(loop, loop->before_sleep_arg);
        int timeout = -1;
        if (loop->cron) {
            uint64_t now = cm_mono_ms();
            timeout = loop->next_cron_ms > now ? (int)(loop->next_cron_ms - now) : 0;
        }
        int n = epoll_wait(loop->epfd, loop->events, 256, timeout);
        if (n < 0 && errno != EINTR)
            return -errno;
        loop->now_ms = cm_mono_ms();
        if (n > 0)
            cm_ev_dispatch(loop, n);
        if (loop->cron && loop->now_ms >= loop->next_cron_ms) {
            loop->next_cron_ms = loop->now_ms + loop->cron_period_ms;
            loop->cron(loop, loop->cron_arg);
        }
    }
    return 0;
}
