/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transfer engine core: creation, transports, memory registration, descriptor export and
 * segment open/close with transport selection.
 */
#include "common/fmacros.h"

#include "transfer/core/xfer_engine_int.h"

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

/* Creates an engine; see xfer.h. */
int xfer_engine_create(const struct xfer_engine_opts *opts, struct xfer_engine **out) {
    struct xfer_engine_opts none = {0};
    if (!opts)
        opts = &none;
    *out = NULL;
    struct xfer_engine *eng = cm_try_calloc(1, sizeof(*eng));
    if (!eng)
        return -ENOMEM;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&eng->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&eng->mr_lock, &ra);
    pthread_rwlockattr_destroy(&ra);

    eng->timeout_ms = opts->timeout_ms;
    if (!eng->timeout_ms) {
        uint64_t s = xfer__env_u64("MC_TRANSFER_TIMEOUT", XFER_DEFAULT_TIMEOUT_MS / 1000);
        eng->timeout_ms = s == 0 || s > 86400 ? XFER_DEFAULT_TIMEOUT_MS : (uint32_t)s * 1000;
    }
    eng->handshake_ms = opts->handshake_timeout_ms;
    if (!eng->handshake_ms) {
        uint64_t s =
            xfer__env_u64("MC_HANDSHAKE_CONNECT_TIMEOUT", XFER_DEFAULT_HANDSHAKE_MS / 1000);
        eng->handshake_ms = s == 0 || s > 3600 ? XFER_DEFAULT_HANDSHAKE_MS : (uint32_t)s * 1000;
    }
    xfer__host_id(eng->host_id);
    if (getrandom(&eng->instance, sizeof(eng->instance), 0) != sizeof(eng->instance))
        eng->instance = cm_mono_ns() ^ ((uint64_t)getpid() << 32);
    eng->next_mr_id = 1;

    /* Default listener: MC_TCP_BIND_ADDRESS (host, ephemeral port) or loopback. */
    char bind_def[XFER_HOSTPORT_MAX];
    const char *bind_env = getenv("MC_TCP_BIND_ADDRESS");
    snprintf(bind_def, sizeof(bind_def), strchr(bind_env ? bind_env : "", ':') ? "[%s]:0" : "%s:0",
             bind_env && *bind_env ? bind_env : "127.0.0.1");
    const char *listen = opts->listen ? opts->listen : bind_def;
    if (*listen) {
        int rc = xfer__listener_start(eng, listen, opts->listen_later);
        if (rc < 0) {
            xfer_engine_destroy(eng);
            return rc;
        }
    }
    const char *nm = opts->local_name && *opts->local_name ? opts->local_name
                     : *eng->addr                          ? eng->addr
                                                           : "initiator";
    size_t nl = strnlen(nm, sizeof(eng->name) - 1);
    memcpy(eng->name, nm, nl);
    eng->name[nl] = '\0';
    *out = eng;
    return 0;
}

static void unregister_all(struct xfer_engine *eng);
static void close_detached(struct xfer_segment *segs);

/* Starts accepting on a listen_later listener; see xfer.h. */
int xfer_engine_listen_start(struct xfer_engine *eng) {
    return eng->lis ? xfer__listener_accept_start(eng) : 0;
}

/* Destroys an engine; see xfer.h. */
void xfer_engine_destroy(struct xfer_engine *eng) {
    if (!eng)
        return;
    xfer__listener_stop(eng);
    /* Detach the open segments under the lock, close them outside it: a close waits for the
     * segment's tasks in flight (up to their deadlines), and must not hold up other threads
     * still finishing calls that take the engine lock. */
    pthread_mutex_lock(&eng->lock);
    struct xfer_segment *segs = eng->segs;
    eng->segs = NULL;
    pthread_mutex_unlock(&eng->lock);
    close_detached(segs);
    unregister_all(eng);
    /* Decorators first (they reference their inner transport), then the rest. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = XFER_MAX_TRANSPORTS - 1; i >= 0; i--) {
            struct xfer_transport *tp = eng->tp[i];
            if (tp && (pass == 1 || tp->decorates)) {
                tp->ops->uninstall(tp);
                cm_free(tp);
                eng->tp[i] = NULL;
            }
        }
    while (eng->shared) {
        struct xfer_shared *s = eng->shared;
        eng->shared = s->next;
        if (!s->borrowed)
            munmap(s->addr, s->len);
        close(s->fd);
        cm_free(s);
    }
    cm_free(eng->mrs);
    pthread_rwlock_destroy(&eng->mr_lock);
    pthread_mutex_destroy(&eng->lock);
    cm_free(eng);
}

/* Copies the advertised listener address; see xfer.h. */
int xfer_engine_local_addr(struct xfer_engine *eng, char *buf, size_t len) {
    if (!*eng->addr)
        return -ENOTCONN;
    size_t n = strlen(eng->addr);
    if (n >= len)
        return -ENOSPC;
    memcpy(buf, eng->addr, n + 1);
    return (int)n;
}

/* Returns the transfer timeout; see xfer.h. */
uint32_t xfer_engine_timeout_ms(const struct xfer_engine *eng) {
    return eng->timeout_ms;
}

/* Same-host identity of the engine. Thread-safe (immutable). */
const uint8_t *xfer__engine_host_id(const struct xfer_engine *eng) {
    return eng->host_id;
}

/* Random instance id of the engine. Thread-safe (immutable). */
uint64_t xfer__engine_instance(const struct xfer_engine *eng) {
    return eng->instance;
}

/* ---- transports ---- */

/* True when tp's ops table is recent enough to have the optional progress op and sets it. */
int xfer__has_progress(const struct xfer_transport *tp) {
    return tp->ops->size >= offsetof(struct xfer_transport_ops, progress) + sizeof(void *) &&
           tp->ops->progress != NULL;
}

/*
 * Calls the progress op of the transports in slots under a try-lock of the engine lock (the
 * transports stay installed while it runs; a busy lock means someone else is installing or
 * reaping: -EBUSY, the caller sleeps instead). Returns the outstanding-op sum, 0, or -EBUSY.
 * Thread-safe; never blocks.
 */
int xfer__engine_progress(struct xfer_engine *eng, unsigned slots) {
    if (pthread_mutex_trylock(&eng->lock) != 0)
        return -EBUSY;
    int out = 0;
    for (int i = 0; i < XFER_MAX_TRANSPORTS; i++) {
        struct xfer_transport *tp = eng->tp[i];
        if (!(slots & (1u << i)) || !tp || !xfer__has_progress(tp))
            continue;
        int rc = tp->ops->progress(tp);
        if (rc > 0)
            out += rc;
    }
    pthread_mutex_unlock(&eng->lock);
    return out;
}

/* Installed transport by install name, or NULL. Takes the engine lock briefly. */
struct xfer_transport *xfer__engine_transport(struct xfer_engine *eng, const char *name) {
    struct xfer_transport *found = NULL;
    pthread_mutex_lock(&eng->lock);
    for (int i = 0; i < XFER_MAX_TRANSPORTS && !found; i++)
        if (eng->tp[i] && strcmp(eng->tp[i]->ops->name, name) == 0)
            found = eng->tp[i];
    pthread_mutex_unlock(&eng->lock);
    return found;
}

static int register_with(struct xfer_transport *tp, struct xfer_mr *mr);
static void unregister_with(struct xfer_transport *tp, struct xfer_mr *mr);

/* Installs a transport; see xfer.h. */
int xfer_engine_install(struct xfer_engine *eng, const char *name, const char *args) {
    const struct xfer_transport_ops *ops = xfer__transport_find(name);
    if (!ops)
        return -CM_ENOT_SUPPORTED;
    if (ops->size < offsetof(struct xfer_transport_ops, warmup_segment) || !ops->install ||
        !ops->uninstall || !ops->open_segment || !ops->close_segment || !ops->submit)
        return -EINVAL;
    pthread_mutex_lock(&eng->lock);
    int slot = -1, rc = 0;
    for (int i = 0; i < XFER_MAX_TRANSPORTS; i++) {
        if (eng->tp[i] && eng->tp[i]->ops == ops)
            rc = -EEXIST;
        if (!eng->tp[i] && slot < 0)
            slot = i;
    }
    if (rc == 0 && slot < 0)
        rc = -ENOSPC;
    struct xfer_transport *tp = rc ? NULL : cm_try_calloc(1, sizeof(*tp));
    if (rc == 0 && !tp)
        rc = -ENOMEM;
    if (rc) {
        pthread_mutex_unlock(&eng->lock);
        return rc;
    }
    tp->ops = ops;
    tp->eng = eng;
    tp->slot = slot;
    snprintf(tp->wire_name, sizeof(tp->wire_name), "%s", ops->name);
    eng->tp[slot] = tp; /* visible to a decorator's xfer__engine_ensure of another slot */
    rc = ops->install(tp, args);
    if (rc < 0) {
        eng->tp[slot] = NULL;
        pthread_mutex_unlock(&eng->lock);
        cm_free(tp);
        cm_log(CM_LOG_WARNING, "xfer", "install %s failed: %s", name, cm_strerror(rc));
        return rc;
    }
    pthread_rwlock_wrlock(&eng->mr_lock);
    for (size_t i = 0; i < eng->n_mr && rc == 0; i++) {
        rc = register_with(tp, eng->mrs[i]);
        if (rc < 0)
            while (i-- > 0)
                unregister_with(tp, eng->mrs[i]);
    }
    pthread_rwlock_unlock(&eng->mr_lock);
    if (rc < 0) {
        eng->tp[slot] = NULL;
        ops->uninstall(tp);
        cm_free(tp);
    }
    pthread_mutex_unlock(&eng->lock);
    return rc;
}

/* Installed instance of name, installing it with args when absent; see xfer_int.h. */
int xfer__engine_ensure(struct xfer_engine *eng, const char *name, const char *args,
                        struct xfer_transport **out) {
    pthread_mutex_lock(&eng->lock);
    struct xfer_transport *tp = xfer__engine_transport(eng, name);
    int rc = 0;
    if (!tp) {
        rc = xfer_engine_install(eng, name, args);
        tp = rc == 0 ? xfer__engine_transport(eng, name) : NULL;
    }
    pthread_mutex_unlock(&eng->lock);
    *out = tp;
    return rc;
}

/* Closes the segments of list (linked through next; already off the engine list). */
static void close_detached(struct xfer_segment *segs) {
    while (segs) {
        struct xfer_segment *next = segs->next;
        xfer_segment_close(segs); /* not on the engine list any more: only waits and frees */
        segs = next;
    }
}

/*
 * Uninstalls a transport; see xfer.h. Decorators of it go first. Its segments are taken off the
 * engine list under the lock and closed outside it (a close waits for tasks in flight, up to
 * their deadlines); meanwhile the transport is marked uninstalling so no new segment picks it.
 */
int xfer_engine_uninstall(struct xfer_engine *eng, const char *name) {
    pthread_mutex_lock(&eng->lock);
    struct xfer_transport *tp = xfer__engine_transport(eng, name);
    if (!tp || tp->uninstalling) {
        pthread_mutex_unlock(&eng->lock);
        return -ENOENT;
    }
    tp->uninstalling = 1;
    const char *decos[XFER_MAX_TRANSPORTS];
    int nd = 0;
    for (int i = 0; i < XFER_MAX_TRANSPORTS; i++)
        if (eng->tp[i] && eng->tp[i]->decorates == tp)
            decos[nd++] = eng->tp[i]->ops->name; /* static strings */
    struct xfer_segment *mine = NULL, **pp = &eng->segs;
    while (*pp) {
        struct xfer_segment *s = *pp;
        if (s->tp == tp) {
            *pp = s->next;
            s->next = mine;
            mine = s;
        } else {
            pp = &s->next;
        }
    }
    pthread_mutex_unlock(&eng->lock);
    for (int i = 0; i < nd; i++)
        xfer_engine_uninstall(eng, decos[i]);
    close_detached(mine);

    pthread_mutex_lock(&eng->lock);
    pthread_rwlock_wrlock(&eng->mr_lock);
    for (size_t i = 0; i < eng->n_mr; i++)
        unregister_with(tp, eng->mrs[i]);
    pthread_rwlock_unlock(&eng->mr_lock);
    eng->tp[tp->slot] = NULL;
    tp->ops->uninstall(tp);
    cm_free(tp);
    pthread_mutex_unlock(&eng->lock);
    return 0;
}

/* ---- memory registration ---- */

static int register_with(struct xfer_transport *tp, struct xfer_mr *mr) {
    size_t klen = 0;
    mr->key_len[tp->slot] = 0;
    mr->tp_priv[tp->slot] = NULL;
    if (!tp->ops->register_mem)
        return 0;
    int rc = tp->ops->register_mem(tp, mr, mr->key[tp->slot], &klen);
    if (rc == -ENOSYS)
        return 0;
    if (rc < 0)
        return rc;
    mr->key_len[tp->slot] = (uint16_t)(klen > XFER_KEY_MAX ? XFER_KEY_MAX : klen);
    return 0;
}

static void unregister_with(struct xfer_transport *tp, struct xfer_mr *mr) {
    if (tp->ops->unregister_mem)
        tp->ops->unregister_mem(tp, mr);
    mr->key_len[tp->slot] = 0;
    mr->tp_priv[tp->slot] = NULL;
}

/* Index of the first MR with addr >= a (mr_lock held). */
static size_t mr_lower(struct xfer_engine *eng, uint64_t a) {
    size_t lo = 0, hi = eng->n_mr;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (eng->mrs[mid]->addr < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* MR containing [a, a+len) (mr_lock held), or NULL. */
static struct xfer_mr *mr_lookup(struct xfer_engine *eng, uint64_t a, uint64_t len) {
    size_t i = mr_lower(eng, a + 1); /* first MR starting after a */
    if (i == 0)
        return NULL;
    struct xfer_mr *mr = eng->mrs[i - 1];
    uint64_t off = a - mr->addr;
    if (off > mr->len || len > mr->len - off)
        return NULL;
    return mr;
}

/* Registers memory; see xfer.h. */
int xfer_engine_register(struct xfer_engine *eng, void *addr, size_t len, const char *location,
                         unsigned flags) {
    uint64_t a = (uint64_t)(uintptr_t)addr;
    if (!addr || len == 0 || a + len < a || (flags & ~XFER_REG_REMOTE))
        return -EINVAL;
    struct xfer_mr *mr = cm_try_calloc(1, sizeof(*mr));
    if (!mr)
        return -ENOMEM;
    mr->addr = a;
    mr->len = len;
    mr->flags = flags;
    mr->memfd = -1;
    if (!location || !*location || strcmp(location, "*") == 0)
        xfer__mem_location(addr, mr->location, sizeof(mr->location));
    else
        snprintf(mr->location, sizeof(mr->location), "%s", location);

    pthread_mutex_lock(&eng->lock);
    for (struct xfer_shared *s = eng->shared; s; s = s->next) {
        uint64_t sa = (uint64_t)(uintptr_t)s->addr;
        if (a >= sa && a + len <= sa + s->len) {
            mr->memfd = s->fd;
            mr->memfd_off = a - sa;
        }
    }
    pthread_rwlock_wrlock(&eng->mr_lock);
    size_t pos = mr_lower(eng, a);
    int rc = 0;
    if ((pos < eng->n_mr && eng->mrs[pos]->addr < a + len) ||
        (pos > 0 && eng->mrs[pos - 1]->addr + eng->mrs[pos - 1]->len > a))
        rc = -EEXIST;
    if (rc == 0 && eng->n_mr == eng->cap_mr) {
        size_t ncap = eng->cap_mr ? eng->cap_mr * 2 : 16;
        struct xfer_mr **n = cm_try_realloc(eng->mrs, ncap * sizeof(*n));
        if (!n)
            rc = -ENOMEM;
        else
            eng->mrs = n, eng->cap_mr = ncap;
    }
    int done = 0; /* slots [0, done) are registered; on failure, slot done is the one that failed */
    for (; rc == 0 && done < XFER_MAX_TRANSPORTS; done++)
        if (eng->tp[done] && (rc = register_with(eng->tp[done], mr)) < 0)
            break;
    if (rc < 0) {
        while (done-- > 0) /* only the ones that succeeded; never the slot that failed */
            if (eng->tp[done])
                unregister_with(eng->tp[done], mr);
        pthread_rwlock_unlock(&eng->mr_lock);
        pthread_mutex_unlock(&eng->lock);
        cm_free(mr);
        return rc;
    }
    mr->id = eng->next_mr_id++;
    memmove(eng->mrs + pos + 1, eng->mrs + pos, (eng->n_mr - pos) * sizeof(*eng->mrs));
    eng->mrs[pos] = mr;
    eng->n_mr++;
    pthread_rwlock_unlock(&eng->mr_lock);
    pthread_mutex_unlock(&eng->lock);
    return 0;
}

/* Unregisters the region starting at addr; see xfer.h. */
int xfer_engine_unregister(struct xfer_engine *eng, void *addr) {
    uint64_t a = (uint64_t)(uintptr_t)addr;
    pthread_mutex_lock(&eng->lock);
    pthread_rwlock_wrlock(&eng->mr_lock);
    size_t pos = mr_lower(eng, a);
    if (pos >= eng->n_mr || eng->mrs[pos]->addr != a) {
        pthread_rwlock_unlock(&eng->mr_lock);
        pthread_mutex_unlock(&eng->lock);
        return -ENOENT;
    }
    struct xfer_mr *mr = eng->mrs[pos];
    memmove(eng->mrs + pos, eng->mrs + pos + 1, (eng->n_mr - pos - 1) * sizeof(*eng->mrs));
    eng->n_mr--;
    pthread_rwlock_unlock(&eng->mr_lock);
    /* No new request can find it now; wait for those being served (each ends by its deadline). */
    while (atomic_load_explicit(&mr->refs, memory_order_acquire) > 0)
        cm_sleep_ms(1);
    for (int i = 0; i < XFER_MAX_TRANSPORTS; i++)
        if (eng->tp[i])
            unregister_with(eng->tp[i], mr);
    pthread_mutex_unlock(&eng->lock);
    cm_free(mr);
    return 0;
}

static void unregister_all(struct xfer_engine *eng) {
    while (eng->n_mr)
        xfer_engine_unregister(eng, (void *)(uintptr_t)eng->mrs[0]->addr);
}

/* Target-side bounds check taking a reference on the MR; see xfer_int.h. */
int xfer__mr_acquire_remote(struct xfer_engine *eng, uint64_t addr, uint64_t len,
                            struct xfer_mr **out) {
    pthread_rwlock_rdlock(&eng->mr_lock);
    struct xfer_mr *mr = addr + len < addr ? NULL : mr_lookup(eng, addr, len);
    if (mr && (mr->flags & XFER_REG_REMOTE))
        atomic_fetch_add_explicit(&mr->refs, 1, memory_order_acq_rel);
    pthread_rwlock_unlock(&eng->mr_lock);
    if (!mr || !(mr->flags & XFER_REG_REMOTE))
        return -CM_EINVALID_PARAMS;
    if (out)
        *out = mr;
    return 0;
}

/* Drops a reference taken by xfer__mr_acquire_remote; see xfer_int.h. */
void xfer__mr_release(struct xfer_engine *eng, struct xfer_mr *mr) {
    (void)eng;
    atomic_fetch_sub_explicit(&mr->refs, 1, memory_order_acq_rel);
}

/* Local MR lookup; see xfer_int.h. */
struct xfer_mr *xfer__mr_find(struct xfer_engine *eng, const void *addr, uint64_t len) {
    uint64_t a = (uint64_t)(uintptr_t)addr;
    pthread_rwlock_rdlock(&eng->mr_lock);
    struct xfer_mr *mr = a + len < a ? NULL : mr_lookup(eng, a, len);
    pthread_rwlock_unlock(&eng->mr_lock);
    return mr;
}

/* Allocates memfd-backed shared memory; see xfer.h. */
int xfer_engine_alloc_shared(struct xfer_engine *eng, size_t len, void **out) {
    long pg = sysconf(_SC_PAGESIZE);
    if (len == 0)
        return -EINVAL;
    len = (len + (size_t)pg - 1) & ~((size_t)pg - 1);
    int fd = memfd_create("crescent-xfer", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)len) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = -errno;
        close(fd);
        return e;
    }
    struct xfer_shared *s = cm_try_calloc(1, sizeof(*s));
    if (!s) {
        munmap(p, len);
        close(fd);
        return -ENOMEM;
    }
    s->addr = p;
    s->len = len;
    s->fd = fd;
    pthread_mutex_lock(&eng->lock);
    s->next = eng->shared;
    eng->shared = s;
    pthread_mutex_unlock(&eng->lock);
    *out = p;
    return 0;
}

/* Adopts a caller's memfd mapping; see xfer.h. */
int xfer_engine_adopt_shared(struct xfer_engine *eng, void *addr, size_t len, int fd) {
    if (!addr || len == 0 || fd < 0)
        return -EINVAL;
    struct xfer_shared *s = cm_try_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (s->fd < 0) {
        int e = -errno;
        cm_free(s);
        return e;
    }
    s->addr = addr;
    s->len = len;
    s->borrowed = 1;
    pthread_mutex_lock(&eng->lock);
    s->next = eng->shared;
    eng->shared = s;
    pthread_mutex_unlock(&eng->lock);
    return 0;
}

/* Frees shared memory; see xfer.h. */
int xfer_engine_free_shared(struct xfer_engine *eng, void *addr) {
    pthread_mutex_lock(&eng->lock);
    for (struct xfer_shared **pp = &eng->shared; *pp; pp = &(*pp)->next) {
        struct xfer_shared *s = *pp;
        if (s->addr == addr) {
            *pp = s->next;
            pthread_mutex_unlock(&eng->lock);
            if (!s->borrowed)
                munmap(s->addr, s->len);
            close(s->fd);
            cm_free(s);
            return 0;
        }
    }
    pthread_mutex_unlock(&eng->lock);
    return -ENOENT;
}

/* ---- descriptor ---- */

/* Encodes the engine's descriptor; see xfer.h. */
ssize_t xfer_engine_export_desc(struct xfer_engine *eng, void *buf, size_t len) {
    struct xfer_desc_in in = {.name = eng->name,
                              .listen = eng->addr,
                              .host_id = eng->host_id,
                              .pid = (uint32_t)getpid(),
                              .instance = eng->instance};
    uint8_t *eps = cm_try_malloc((size_t)XFER_MAX_TRANSPORTS * XFER_EP_MAX);
    if (!eps)
        return -ENOMEM;
    pthread_mutex_lock(&eng->lock);
    for (int i = 0; i < XFER_MAX_TRANSPORTS; i++) {
        struct xfer_transport *tp = eng->tp[i];
        if (!tp || tp->decorates || !tp->ops->local_info)
            continue;
        size_t el = XFER_EP_MAX;
        uint8_t *ep = eps + (size_t)in.n_tp * XFER_EP_MAX;
        if (tp->ops->local_info(tp, ep, &el) < 0)
            continue;
        in.tp_name[in.n_tp] = tp->wire_name;
        in.tp_ep[in.n_tp] = ep;
        in.tp_ep_len[in.n_tp] = (uint16_t)(el > XFER_EP_MAX ? XFER_EP_MAX : el);
        in.tp_slot[in.n_tp] = i;
        in.n_tp++;
    }
    pthread_rwlock_rdlock(&eng->mr_lock);
    struct xfer_mr **bufs = cm_try_calloc(eng->n_mr ? eng->n_mr : 1, sizeof(*bufs));
    ssize_t rc = -ENOMEM;
    if (bufs) {
        for (size_t i = 0; i < eng->n_mr; i++)
            if (eng->mrs[i]->flags & XFER_REG_REMOTE)
                bufs[in.n_buf++] = eng->mrs[i];
        in.bufs = bufs;
        rc = xfer_desc_encode(&in, buf, len);
        if (rc > 0 && buf && (size_t)rc > len)
            rc = -ENOSPC;
    }
    pthread_rwlock_unlock(&eng->mr_lock);
    pthread_mutex_unlock(&eng->lock);
    cm_free(bufs);
    cm_free(eps);
    return rc;
}

/* ---- segments ---- */

/* Transport preference for remote peers, best first. */
static const char *const tp_order[] = {"shm", "rdma", "fabric", "tcp"};

/* Tries to open seg with the installed transport whose wire name is name. */
static int try_open(struct xfer_engine *eng, struct xfer_segment *seg, const char *name) {
    int di = xfer_desc_find_tp(seg->desc, name);
    if (di < 0)
        return -CM_ENOT_SUPPORTED;
    struct xfer_transport *tp = NULL, *deco = NULL;
    for (int i = 0; i < XFER_MAX_TRANSPORTS; i++)
        if (eng->tp[i] && !eng->tp[i]->decorates && !eng->tp[i]->uninstalling &&
            strcmp(eng->tp[i]->wire_name, name) == 0)
            tp = eng->tp[i];
    if (!tp)
        return -CM_ENOT_SUPPORTED;
    if (tp->ops->reachable && tp->ops->reachable(tp, seg->desc, di) < 0)
        return -CM_EUNREACHABLE;
    for (int i = 0; i < XFER_MAX_TRANSPORTS; i++)
        if (eng->tp[i] && eng->tp[i]->decorates == tp && !eng->tp[i]->uninstalling)
            deco = eng->tp[i];
    struct xfer_transport *use = deco ? deco : tp;
    int rc = use->ops->open_segment(use, seg, seg->desc, di, &seg->tp_seg);
    if (rc < 0)
        return rc;
    seg->tp = use;
    seg->desc_tp = di;
    return 0;
}

/* Opens a segment from its descriptor; see xfer.h. */
int xfer_segment_open(struct xfer_engine *eng, const void *desc, size_t desc_len,
                      struct xfer_segment **out) {
    *out = NULL;
    struct xfer_segment *seg = cm_try_calloc(1, sizeof(*seg));
    if (!seg)
        return -ENOMEM;
    int rc = xfer_desc_decode(desc, desc_len, &seg->desc);
    if (rc < 0) {
        xfer__set_error("transfer segment descriptor (%zu bytes): %s", desc_len, cm_strerror(rc));
        cm_free(seg);
        return rc;
    }
    seg->eng = eng;
    seg->desc_tp = -1;
    atomic_init(&seg->refs, 1);
    pthread_mutex_lock(&eng->lock);
    if (seg->desc->instance == eng->instance) {
        seg->local = 1;
        rc = 0;
    } else {
        rc = -CM_ENOT_SUPPORTED;
        for (size_t i = 0; i < sizeof(tp_order) / sizeof(tp_order[0]) && rc < 0; i++) {
            int r = try_open(eng, seg, tp_order[i]);
            if (r != -CM_ENOT_SUPPORTED && r != -CM_EUNREACHABLE)
                rc = r;
            if (r == 0)
                rc = 0;
            else if (r != -CM_ENOT_SUPPORTED)
                cm_log(CM_LOG_VERBOSE, "xfer", "segment %s: %s unusable: %s", seg->desc->name,
                       tp_order[i], cm_strerror(r));
        }
        /* Any other transport both sides have (out-of-tree names). */
        for (uint32_t t = 0; t < seg->desc->n_tp && rc == -CM_ENOT_SUPPORTED; t++)
            if (try_open(eng, seg, seg->desc->tp[t].name) == 0)
                rc = 0;
    }
    if (rc < 0) {
        pthread_mutex_unlock(&eng->lock);
        xfer__set_error("transfer peer %s (%s): opening the segment: %s", seg->desc->name,
                        *seg->desc->listen ? seg->desc->listen : "no listener",
                        rc == -CM_ENOT_SUPPORTED ? "no transport installed on both sides"
                                                 : cm_strerror(rc));
        xfer_desc_free(seg->desc);
        cm_free(seg);
        return rc;
    }
    seg->next = eng->segs;
    eng->segs = seg;
    pthread_mutex_unlock(&eng->lock);
    *out = seg;
    return 0;
}

/* Fetches a descriptor from hostport and opens it; see xfer.h. */
int xfer_segment_open_addr(struct xfer_engine *eng, const char *hostport,
                           struct xfer_segment **out) {
    void *d = NULL;
    size_t dl = 0;
    uint32_t ms = eng->handshake_ms < eng->timeout_ms ? eng->handshake_ms : eng->timeout_ms;
    int rc = xfer_fetch_desc(hostport, ms, &d, &dl);
    if (rc < 0)
        return rc;
    rc = xfer_segment_open(eng, d, dl, out);
    cm_free(d);
    return rc;
}

/* Drops one reference; the last one closes the transport side and frees the segment. */
void xfer__segment_unref(struct xfer_segment *seg) {
    if (atomic_fetch_sub_explicit(&seg->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (seg->tp)
        seg->tp->ops->close_segment(seg->tp, seg->tp_seg);
    xfer_desc_free(seg->desc);
    cm_free(seg);
}

/* Closes a segment; see xfer.h. */
void xfer_segment_close(struct xfer_segment *seg) {
    if (!seg)
        return;
    struct xfer_engine *eng = seg->eng;
    pthread_mutex_lock(&eng->lock);
    for (struct xfer_segment **pp = &eng->segs; *pp; pp = &(*pp)->next)
        if (*pp == seg) {
            *pp = seg->next;
            break;
        }
    pthread_mutex_unlock(&eng->lock);
    /* Tasks in flight hold references; they end by their deadline. Closing the transport side
     * under them (or after the transport is gone, in engine destroy) would be unsafe. */
    while (atomic_load_explicit(&seg->refs, memory_order_acquire) > 1)
        cm_sleep_ms(1);
    xfer__segment_unref(seg);
}

/* Name of the segment's transport; see xfer.h. */
const char *xfer_segment_transport(const struct xfer_segment *seg) {
    return seg->local ? "local" : seg->tp->ops->name;
}

/* Peer name from the descriptor; see xfer.h. */
const char *xfer_segment_peer_name(const struct xfer_segment *seg) {
    return seg->desc->name;
}

/* Warms up the segment's transport; see xfer.h. */
int xfer_segment_warmup(struct xfer_segment *seg) {
    if (seg->local || !seg->tp->ops->warmup_segment)
        return -ENOSYS;
    return seg->tp->ops->warmup_segment(seg->tp, seg->tp_seg);
}

/* Reads a remote buffer of the segment's descriptor; see xfer.h. */
int xfer_segment_buffer(const struct xfer_segment *seg, size_t index, uint64_t *addr,
                        uint64_t *len) {
    if (index >= seg->desc->n_buf)
        return -ENOENT;
    *addr = seg->desc->buf[index].addr;
    *len = seg->desc->buf[index].len;
    return 0;
}
