/* SPDX-License-Identifier: Apache-2.0 */
/*
 * I/O layer of the SSD tier: a few slots, each an io_uring ring with a registered, aligned
 * staging buffer (or only the buffer, for the pread/pwrite path). io_uring is used when
 * MOONCAKE_OFFLOAD_USE_URING is true and a probe ring can be created; otherwise (sysctl
 * kernel.io_uring_disabled, ENOSYS under old kernels or seccomp, EPERM in containers) the store
 * falls back to pread/pwrite and says why in its stats.
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "storage/sto_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads /proc/sys/kernel/io_uring_disabled (absent on older kernels: 0). */
static int uring_sysctl(void) {
    int fd = open("/proc/sys/kernel/io_uring_disabled", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char b[8] = {0};
    ssize_t n = read(fd, b, sizeof(b) - 1);
    close(fd);
    return n > 0 ? b[0] - '0' : 0;
}

/* Sets up slot sl's ring; returns 0 or the ring setup error. */
static int slot_ring(struct sto *s, struct sto_slot *sl) {
    int rc = io_uring_queue_init(STO_IO_DEPTH, &sl->ring, 0);
    if (rc < 0)
        return rc;
    sl->ring_ok = true;
    (void)s;
    return 0;
}

int sto__io_init(struct sto *s, char *err, size_t errlen) {
    size_t per = (size_t)(s->cfg.local_buffer_size / STO_IO_SLOTS) & ~(size_t)4095;
    if (per < (1u << 20))
        per = 1u << 20;
    s->uring = false;
    s->io_note = s->cfg.use_uring ? "" : "MOONCAKE_OFFLOAD_USE_URING is false";
    int sysctl = uring_sysctl();
    bool want = s->cfg.use_uring;
    if (want && sysctl == 2) {
        want = false;
        s->io_note = "io_uring disabled by kernel.io_uring_disabled=2";
    }
    for (unsigned i = 0; i < STO_IO_SLOTS; i++) {
        struct sto_slot *sl = &s->slots[i];
        pthread_mutex_init(&sl->mu, NULL);
        void *p = mmap(NULL, per, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            sto__err(err, errlen,
                     "cannot allocate %zu bytes of staging buffer "
                     "(MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES)",
                     per);
            return -ENOMEM;
        }
        sl->stage = p;
        sl->stage_len = per;
        if (!want)
            continue;
        int rc = slot_ring(s, sl);
        if (rc < 0) {
            want = false;
            if (rc == -ENOSYS)
                s->io_note = "io_uring unavailable: ENOSYS (kernel or seccomp)";
            else if (rc == -EPERM)
                s->io_note = sysctl == 1 ? "io_uring disabled by kernel.io_uring_disabled=1"
                                         : "io_uring unavailable: EPERM";
            else if (rc == -ENOMEM)
                s->io_note = "io_uring unavailable: ENOMEM (RLIMIT_MEMLOCK?)";
            else
                s->io_note = "io_uring unavailable: ring setup failed";
            for (unsigned j = 0; j < i; j++) {
                if (s->slots[j].ring_ok)
                    io_uring_queue_exit(&s->slots[j].ring);
                s->slots[j].ring_ok = s->slots[j].registered = false;
            }
        }
    }
    s->uring = want;
    return 0;
}

void sto__io_fini(struct sto *s) {
    for (unsigned i = 0; i < STO_IO_SLOTS; i++) {
        struct sto_slot *sl = &s->slots[i];
        if (sl->ring_ok)
            io_uring_queue_exit(&sl->ring);
        if (sl->stage)
            munmap(sl->stage, sl->stage_len);
        pthread_mutex_destroy(&sl->mu);
        memset(sl, 0, sizeof(*sl));
    }
}

/*
 * Registers the slot's staging buffer with its ring on first use: registration pins (and so
 * touches) every page, which is best kept out of sto_open() and away from unused slots.
 */
static struct sto_slot *slot_ready(struct sto *s, struct sto_slot *sl) {
    if (s->uring && sl->ring_ok && !sl->reg_tried) {
        sl->reg_tried = true;
        struct iovec iov = {.iov_base = sl->stage, .iov_len = sl->stage_len};
        sl->registered = io_uring_register_buffers(&sl->ring, &iov, 1) == 0;
    }
    return sl;
}

struct sto_slot *sto__slot_get(struct sto *s) {
    /* The lowest free slot: a single thread keeps using one ring and one registered buffer. */
    for (unsigned i = 0; i < STO_IO_SLOTS; i++) {
        struct sto_slot *sl = &s->slots[i];
        if (pthread_mutex_trylock(&sl->mu) == 0)
            return slot_ready(s, sl);
    }
    unsigned start = __atomic_fetch_add(&s->slot_rr, 1, __ATOMIC_RELAXED);
    struct sto_slot *sl = &s->slots[start % STO_IO_SLOTS];
    pthread_mutex_lock(&sl->mu);
    return slot_ready(s, sl);
}

void sto__slot_put(struct sto_slot *sl) {
    pthread_mutex_unlock(&sl->mu);
}

/* pread/pwrite path: each I/O to completion in turn. */
static int io_psync_cb(struct sto_iov *v, unsigned n, sto_io_done_cb *cb, void *arg);

static int io_psync(struct sto_iov *v, unsigned n) {
    return io_psync_cb(v, n, NULL, NULL);
}

/* pread/pwrite path; cb(arg, i) runs after each I/O. */
static int io_psync_cb(struct sto_iov *v, unsigned n, sto_io_done_cb *cb, void *arg) {
    int first = 0;
    for (unsigned i = 0; i < n; i++) {
        v[i].res = 0;
        size_t done = 0;
        while (done < v[i].len) {
            ssize_t r = v[i].write
                            ? pwrite(v[i].fd, v[i].buf + done, v[i].len - done, v[i].off + done)
                            : pread(v[i].fd, v[i].buf + done, v[i].len - done, v[i].off + done);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                v[i].res = r < 0 ? -errno : -ENODATA;
                break;
            }
            done += (size_t)r;
        }
        if (v[i].res && !first)
            first = v[i].res;
        if (cb)
            cb(arg, i);
    }
    return first;
}

/* Queues v[i]'s remaining bytes on the ring. */
static void prep(struct sto_slot *sl, struct io_uring_sqe *sqe, struct sto_iov *x, unsigned i) {
    uint8_t *b = x->buf + x->done;
    unsigned len = (unsigned)(x->len - x->done > (1u << 30) ? (1u << 30) : x->len - x->done);
    uint64_t off = x->off + x->done;
    if (x->fixed && sl->registered) {
        if (x->write)
            io_uring_prep_write_fixed(sqe, x->fd, b, len, off, 0);
        else
            io_uring_prep_read_fixed(sqe, x->fd, b, len, off, 0);
    } else if (x->write) {
        io_uring_prep_write(sqe, x->fd, b, len, off);
    } else {
        io_uring_prep_read(sqe, x->fd, b, len, off);
    }
    io_uring_sqe_set_data64(sqe, i);
}

/*
 * io_uring path: submit what the ring takes, reap, continue short transfers. v[0..started)
 * are already in flight (sto__io_start).
 */
static int io_uring_run(struct sto_slot *sl, struct sto_iov *v, unsigned n, unsigned started,
                        sto_io_done_cb *cb, void *arg) {
    unsigned next = started, inflight = started, left = n;
    int first = 0;
    unsigned *redo = NULL, nredo = 0;
    redo = cm_malloc(sizeof(*redo) * (n ? n : 1));
    for (unsigned i = started; i < n; i++)
        v[i].res = 0, v[i].done = 0;
    while (left > 0) {
        while (inflight < STO_IO_DEPTH && (nredo > 0 || next < n)) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&sl->ring);
            if (!sqe)
                break;
            unsigned i = nredo > 0 ? redo[--nredo] : next++;
            prep(sl, sqe, &v[i], i);
            inflight++;
        }
        int rc = io_uring_submit_and_wait(&sl->ring, 1);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
            first = first ? first : rc;
            break;
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&sl->ring, head, cqe) {
            seen++;
            unsigned i = (unsigned)io_uring_cqe_get_data64(cqe);
            struct sto_iov *x = &v[i];
            inflight--;
            if (cqe->res == -EAGAIN || cqe->res == -EINTR) {
                redo[nredo++] = i;
            } else if (cqe->res <= 0) {
                x->res = cqe->res < 0 ? cqe->res : -ENODATA;
                first = first ? first : x->res;
                left--;
                if (cb)
                    cb(arg, i);
            } else {
                x->done += (size_t)cqe->res;
                if (x->done < x->len) {
                    redo[nredo++] = i;
                } else {
                    left--;
                    if (cb)
                        cb(arg, i);
                }
            }
        }
        io_uring_cq_advance(&sl->ring, seen);
    }
    cm_free(redo);
    return first;
}

void sto__io_start(struct sto *s, struct sto_slot *sl, struct sto_iov *v, unsigned i) {
    v[i].res = 0;
    v[i].done = 0;
    if (!(s->uring && sl->ring_ok)) {
        io_psync(&v[i], 1);
        return;
    }
    struct io_uring_sqe *sqe = io_uring_get_sqe(&sl->ring);
    prep(sl, sqe, &v[i], i);
    io_uring_submit(&sl->ring);
}

int sto__io_finish(struct sto *s, struct sto_slot *sl, struct sto_iov *v, unsigned n,
                   unsigned started) {
    if (!(s->uring && sl->ring_ok)) {
        int first = started < n ? io_psync(v + started, n - started) : 0;
        for (unsigned i = 0; i < started; i++)
            if (v[i].res)
                return v[i].res;
        return first;
    }
    return io_uring_run(sl, v, n, started, NULL, NULL);
}

int sto__io_run_cb(struct sto *s, struct sto_slot *sl, struct sto_iov *v, unsigned n,
                   sto_io_done_cb *cb, void *arg) {
    if (n == 0)
        return 0;
    if (s->uring && sl->ring_ok)
        return io_uring_run(sl, v, n, 0, cb, arg);
    return io_psync_cb(v, n, cb, arg);
}

int sto__io_run(struct sto *s, struct sto_slot *sl, struct sto_iov *v, unsigned n) {
    return sto__io_run_cb(s, sl, v, n, NULL, NULL);
}

int sto__open_file(struct sto *s, const char *name, int flags, bool direct) {
    int extra = O_CLOEXEC | (direct && s->direct ? O_DIRECT : 0);
    int fd = openat(s->dirfd, name, flags | extra, 0644);
    return fd < 0 ? -errno : fd;
}

int sto__read_all(int fd, uint8_t **out, size_t *len) {
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    uint8_t *b = cm_malloc((size_t)st.st_size + 1);
    size_t done = 0;
    while (done < (size_t)st.st_size) {
        ssize_t r = pread(fd, b + done, (size_t)st.st_size - done, (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    *out = b;
    *len = done;
    return 0;
}

int sto__write_atomic(struct sto *s, const char *name, const void *data, size_t len,
                      bool *replaced) {
    if (replaced)
        *replaced = false;
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s.tmp", name);
    int fd = sto__open_file(s, tmp, O_WRONLY | O_CREAT | O_TRUNC, false);
    if (fd < 0)
        return fd;
    size_t done = 0;
    int rc = 0;
    while (done < len) {
        ssize_t w = write(fd, (const uint8_t *)data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            break;
        }
        done += (size_t)w;
    }
    /* The contents reach the disk before the new name does: a rename that outlives a power
     * loss never puts an empty or partial file in place of the old one. */
    if (rc == 0 && fdatasync(fd) < 0)
        rc = -errno;
    close(fd);
    if (rc == 0 && renameat(s->dirfd, tmp, s->dirfd, name) < 0)
        rc = -errno;
    if (rc) {
        unlinkat(s->dirfd, tmp, 0);
        return rc;
    }
    if (replaced)
        *replaced = true;
    /* The rename itself is durable once the directory is. */
    return fsync(s->dirfd) < 0 ? -errno : 0;
}
