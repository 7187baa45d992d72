/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transfer engine internals shared by the core and the transports (transfer/{core,tcp,shm,
 * fault,efa,verbs}/). Not for other modules: they use transfer/xfer.h.
 *
 * HOW A TRANSPORT PLUGS IN
 *
 *   1. Define one `const struct xfer_transport_ops xfer_<name>_ops` (size = sizeof the struct,
 *      name = the install name, e.g. "fabric") and list it in transfer/core/xfer_registry.c,
 *      guarded by its build macro (XFER_HAVE_FABRIC, XFER_HAVE_VERBS; transfer/module.mk
 *      defines them when pkg-config finds libfabric / libibverbs and compiles the files in
 * transfer/efa/ and transfer/verbs/). Unsupported optional ops point at the shared xfer__no_* stubs
 *      (they return -ENOSYS) or are NULL; the core treats both the same.
 *
 *   2. The core calls the ops with the engine-side instance `struct xfer_transport *tp`:
 *        install(tp, args)      store your context in tp->ctx; args is "k=v,k=v" or NULL
 *                               (xfer__arg_* parse it). May register listener opcodes
 *                               (xfer__listener_handle). Return 0 or a negative code.
 *        uninstall(tp)          free tp->ctx; no task of yours is in flight any more.
 *        register_mem(tp, mr, key, &key_len)
 *                               called for every registration (and for existing ones when you
 *                               are installed late). Write up to XFER_KEY_MAX bytes of per-MR
 *                               keys (rkey, fi_mr_key, memfd id, ...) into key and set key_len
 *                               (0 = nothing); they go into the descriptor for this buffer.
 *                               Keep per-MR state in mr->tp_priv[tp->slot].
 *        unregister_mem(tp, mr) release what register_mem made.
 *        local_info(tp, buf, &len)
 *                               endpoint blob for the descriptor (address, GID/QPN, fi_getname,
 *                               socket name), at most XFER_EP_MAX bytes. -ENOSYS = this
 *                               transport does not appear in descriptors (the fault decorator).
 *        reachable(tp, desc, i) optional: 0 if a peer whose descriptor has this transport at
 *                               desc->tp[i] can be served (shm: same host only); else negative.
 *        open_segment(tp, seg, desc, i, &seg_ctx)
 *                               connect to the peer using desc->tp[i].ep and the per-buffer
 *                               keys desc->buf[b].key[i]; return your per-segment context.
 *        close_segment(tp, seg_ctx)
 *        submit(tp, tasks, n)   start n tasks (all for segments you opened). Asynchronous:
 *                               return 0 having taken every task, then complete EACH task
 *                               EXACTLY ONCE with xfer__task_done(task, err, bytes), from any
 *                               thread, possibly before submit returns. A negative return means
 *                               no task was taken (the core fails them). Respect
 *                               task->deadline_ns: every blocking wait (socket read, CQ poll)
 *                               must end by it and complete the task with -ETIMEDOUT.
 *        warmup_segment(tp, seg_ctx)   optional: pre-connect.
 *        progress(tp)           optional (NULL, or absent when ops->size ends before it): reap
 *                               whatever completions are ready, without blocking, on the
 *                               calling thread (xfer_batch_wait calls it instead of sleeping
 *                               while tasks it dispatched to you are pending). Return the number
 *                               of operations still outstanding (> 0: worth calling again soon),
 *                               0 when none, or a negative code. Must be thread-safe against
 *                               your own completion threads; keep those for when nobody waits.
 *
 *   3. Per task the core fills: op, local, remote, len, seg, tp_seg (your seg_ctx), rbuf (the
 *      peer buffer containing the remote range, with its keys), rbuf_index, lmr (the local
 *      registration containing [local, local+len) or NULL), deadline_ns. next, tp_priv[] and
 *      tp_u64[] are yours while you hold the task.
 *
 *   4. Helpers: xfer__sock_* (connect / full read / full write with deadlines),
 *      xfer__listener_handle (serve your own opcodes on the engine listener, e.g. for QP
 *      exchange), xfer__mr_acquire_remote (target-side bounds check), xfer__mem_location.
 */
#ifndef CRESCENT_TRANSFER_XFER_INT_H
#define CRESCENT_TRANSFER_XFER_INT_H

#include "transfer/core/xfer_wire.h"
#include "transfer/xfer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define XFER_MAX_TRANSPORTS 8    /* installed at once, and listed in one descriptor */
#define XFER_NAME_MAX       16   /* transport name incl. NUL */
#define XFER_LOC_MAX        32   /* location tag incl. NUL ("cpu:0", "cuda:3") */
#define XFER_KEY_MAX        256  /* per-MR key blob per transport */
#define XFER_EP_MAX         1024 /* endpoint blob per transport */
#define XFER_HOSTPORT_MAX   280  /* "host:port" incl. NUL */
#define XFER_LNAME_MAX      256  /* engine local name incl. NUL */
#define XFER_HOST_ID_LEN    16   /* same-host identity (boot id + namespaces) */

struct xfer_transport;
struct xfer_task;
struct xfer_mr;
struct xfer_desc;

/* Transport operations table (libfabric / Redis ConnectionType shape). */
struct xfer_transport_ops {
    size_t size;      /* sizeof(struct xfer_transport_ops) the transport was built with */
    const char *name; /* install name: "shm", "tcp", "fabric", "rdma", "fault" */
    int (*install)(struct xfer_transport *tp, const char *args);
    void (*uninstall)(struct xfer_transport *tp);
    int (*register_mem)(struct xfer_transport *tp, struct xfer_mr *mr, uint8_t *key,
                        size_t *key_len);
    int (*unregister_mem)(struct xfer_transport *tp, struct xfer_mr *mr);
    int (*local_info)(struct xfer_transport *tp, uint8_t *buf, size_t *len);
    int (*reachable)(struct xfer_transport *tp, const struct xfer_desc *desc, int tp_index);
    int (*open_segment)(struct xfer_transport *tp, struct xfer_segment *seg,
                        const struct xfer_desc *desc, int tp_index, void **seg_ctx);
    void (*close_segment)(struct xfer_transport *tp, void *seg_ctx);
    int (*submit)(struct xfer_transport *tp, struct xfer_task **tasks, size_t n);
    int (*warmup_segment)(struct xfer_transport *tp, void *seg_ctx);
    int (*progress)(struct xfer_transport *tp);
};

/* An installed transport: the engine's instance of one ops table. */
struct xfer_transport {
    const struct xfer_transport_ops *ops;
    struct xfer_engine *eng;
    void *ctx;                        /* the transport's state, set by install */
    int slot;                         /* index in the engine table; mr->tp_priv[slot] */
    char wire_name[XFER_NAME_MAX];    /* name matched in peer descriptors (default: ops->name) */
    struct xfer_transport *decorates; /* fault: the transport it wraps; else NULL */
    int uninstalling;                 /* core: being uninstalled, no new segment may pick it */
};

/* A local memory registration. Fields are read-only for transports except tp_priv[slot]. */
struct xfer_mr {
    uint64_t addr;
    uint64_t len;
    unsigned flags;              /* XFER_REG_* */
    char location[XFER_LOC_MAX]; /* "cpu:0", "cuda:0" */
    int memfd;                   /* backing memfd (xfer_engine_alloc_shared) or -1 */
    uint64_t memfd_off;          /* offset of addr inside that memfd */
    uint32_t id;                 /* engine-unique registration id */
    void *tp_priv[XFER_MAX_TRANSPORTS];
    uint8_t key[XFER_MAX_TRANSPORTS][XFER_KEY_MAX];
    uint16_t key_len[XFER_MAX_TRANSPORTS];
    atomic_int refs; /* target-side requests being served from it (core-owned) */
};

/* ---- decoded segment descriptor ---- */

/* One transport listed in a descriptor. */
struct xfer_desc_tp {
    char name[XFER_NAME_MAX];
    const uint8_t *ep; /* endpoint blob (points into the decoded descriptor) */
    uint16_t ep_len;
};

/* One remote-visible buffer of a descriptor. */
struct xfer_desc_buf {
    uint64_t addr;
    uint64_t len;
    uint32_t flags; /* XFER_REG_* */
    uint32_t mr_id; /* the owner's xfer_mr.id */
    char location[XFER_LOC_MAX];
    const uint8_t *key[XFER_MAX_TRANSPORTS]; /* per desc->tp index; NULL when none */
    uint16_t key_len[XFER_MAX_TRANSPORTS];
};

/* A decoded descriptor; one allocation, freed with xfer_desc_free. */
struct xfer_desc {
    uint16_t version;
    uint32_t flags;
    char name[XFER_LNAME_MAX];      /* engine local name */
    char listen[XFER_HOSTPORT_MAX]; /* "host:port" of its listener, "" when none */
    uint8_t host_id[XFER_HOST_ID_LEN];
    uint32_t pid;
    uint64_t instance; /* random per engine; equal instance = same engine */
    uint32_t n_tp;
    struct xfer_desc_tp tp[XFER_MAX_TRANSPORTS];
    uint32_t n_buf;
    struct xfer_desc_buf *buf; /* sorted by addr, non-overlapping */
    uint8_t *raw;              /* a private copy of the encoded bytes */
    size_t raw_len;
};

/* Descriptor codec (transfer/core/xfer_desc.c; pure). */
#define XFER_DESC_MAGIC   0x44535843u /* "CXSD" as a little-endian u32 */
#define XFER_DESC_VERSION 1

/*
 * Decodes and verifies (magic, version, length, CRC-32C, field bounds, sorted buffers) an
 * encoded descriptor. Returns 0 and sets *out (free with xfer_desc_free), or -CM_ECORRUPT,
 * -CM_EINVALID_VERSION, -ENOMEM. The input is copied; it may be freed afterwards.
 */
int xfer_desc_decode(const void *buf, size_t len, struct xfer_desc **out);

/* Frees a decoded descriptor. NULL is accepted. */
void xfer_desc_free(struct xfer_desc *d);

/*
 * Returns the index of the buffer of d that contains [addr, addr+len), or -1. len 0 is
 * contained in a buffer when addr lies inside it or at its end. Pure; thread-safe.
 */
int xfer_desc_find_buf(const struct xfer_desc *d, uint64_t addr, uint64_t len);

/* Returns the index in d->tp of the transport named name, or -1. */
int xfer_desc_find_tp(const struct xfer_desc *d, const char *name);

/* CRC-32C (Castagnoli) of len bytes, continuing from crc (start with 0). */
uint32_t xfer_crc32c(uint32_t crc, const void *buf, size_t len);

/* Encoder input (the core builds it from the engine state). */
struct xfer_desc_in {
    const char *name;
    const char *listen;
    const uint8_t *host_id;
    uint32_t pid;
    uint64_t instance;
    uint32_t n_tp;
    const char *tp_name[XFER_MAX_TRANSPORTS];
    const uint8_t *tp_ep[XFER_MAX_TRANSPORTS];
    uint16_t tp_ep_len[XFER_MAX_TRANSPORTS];
    uint32_t n_buf;
    struct xfer_mr *const *bufs; /* keys taken from bufs[i]->key[tp_slot[j]] */
    int tp_slot[XFER_MAX_TRANSPORTS];
};

/*
 * Encodes in into buf (len bytes). Returns the encoded size; when buf is NULL or too small it
 * writes nothing and returns the size needed (callers compare). -EINVAL for oversize fields.
 */
ssize_t xfer_desc_encode(const struct xfer_desc_in *in, uint8_t *buf, size_t len);

/* ---- segments, batches, tasks ---- */

/* An opened remote segment. */
struct xfer_segment {
    struct xfer_engine *eng;
    struct xfer_transport *tp; /* the transport serving it (a decorator when installed) */
    void *tp_seg;              /* the transport's segment context */
    struct xfer_desc *desc;
    int desc_tp;               /* index in desc->tp of the wire transport; -1 for local */
    int local;                 /* the descriptor is this engine's own: memcpy path */
    atomic_int refs;           /* 1 for the open handle + 1 per task in flight */
    struct xfer_segment *next; /* engine list */
};

/* One task of a batch. */
struct xfer_task {
    /* Request, filled by the core; read-only for transports. */
    enum xfer_op op;
    uint32_t id; /* index in the batch */
    void *local;
    uint64_t remote;
    uint64_t len;
    struct xfer_segment *seg;
    void *tp_seg;                     /* seg->tp_seg of the transport that received it */
    const struct xfer_desc_buf *rbuf; /* peer buffer holding [remote, remote+len) */
    int rbuf_index;                   /* index of rbuf in seg->desc->buf */
    struct xfer_mr *lmr;              /* local registration holding the local range, or NULL */
    uint64_t submit_ns;               /* CLOCK_MONOTONIC at submission */
    uint64_t deadline_ns;             /* submit_ns + engine timeout */
    /* Scratch owned by the transport while it holds the task. */
    struct xfer_task *next;
    void *tp_priv[2];
    uint64_t tp_u64[2];
    /* Core state. */
    struct xfer_batch *batch;
    atomic_int status;    /* enum xfer_status */
    int error;            /* negative code when not COMPLETED */
    uint64_t bytes;       /* bytes moved */
    uint32_t fault_flags; /* XFER_FAULT_F_* set by the fault decorator */
};

/* Fault decorator flags on a task. */
#define XFER_FAULT_F_CORRUPT 0x1u /* report COMPLETED as FAILED */

/*
 * Completes a task: err 0 = COMPLETED with bytes moved, -ETIMEDOUT = TIMEOUT, any other
 * negative code = FAILED. Call exactly once per task a transport took. Thread-safe; may be
 * called from inside submit. The task must not be touched afterwards.
 */
void xfer__task_done(struct xfer_task *t, int err, uint64_t bytes);

/*
 * xfer__task_done(t[i], err[i], err[i] == 0 ? t[i]->len : 0) for each of t[0..n), taking the
 * batch lock once per run of consecutive tasks of one batch instead of once per task (a group
 * of small requests completes together). Same rules: none of the tasks may be touched
 * afterwards. Thread-safe.
 */
void xfer__tasks_done(struct xfer_task *const *t, const int *err, size_t n);

/* ---- engine internals used by transports ---- */

/* Transport registry lookup (transfer/core/xfer_registry.c). NULL when not compiled in. */
const struct xfer_transport_ops *xfer__transport_find(const char *name);

/* Returns the installed transport called name (install name), or NULL. */
struct xfer_transport *xfer__engine_transport(struct xfer_engine *eng, const char *name);

/*
 * Installs name for a decorator that needs its inner transport: returns the existing
 * instance or installs it with args. Returns 0 and sets *out, or a negative code.
 */
int xfer__engine_ensure(struct xfer_engine *eng, const char *name, const char *args,
                        struct xfer_transport **out);

/*
 * Target side: verifies that [addr, addr+len) lies inside one remote-accessible registration
 * and takes a reference on it (xfer_engine_unregister waits for references to drop, so the
 * memory stays registered while a request is served; other registrations are not blocked).
 * Returns 0 and sets *mr (when mr is not NULL), or -CM_EINVALID_PARAMS (refused; no reference).
 * Release with xfer__mr_release. Thread-safe.
 */
int xfer__mr_acquire_remote(struct xfer_engine *eng, uint64_t addr, uint64_t len,
                            struct xfer_mr **mr);

/* Drops the reference from xfer__mr_acquire_remote. */
void xfer__mr_release(struct xfer_engine *eng, struct xfer_mr *mr);

/* Local registration containing [addr, addr+len), or NULL. Pointer valid while registered. */
struct xfer_mr *xfer__mr_find(struct xfer_engine *eng, const void *addr, uint64_t len);

/* Engine's same-host identity and instance id. */
const uint8_t *xfer__engine_host_id(const struct xfer_engine *eng);
uint64_t xfer__engine_instance(const struct xfer_engine *eng);

/* Same-host identity of this process: boot id + pid and net namespace inodes, hashed. */
void xfer__host_id(uint8_t out[XFER_HOST_ID_LEN]);

/*
 * A listener connection as its handlers see it. Reads are buffered (several requests and their
 * small payloads arrive in one read); replies of up to XFER_CONN_COPY_MAX bytes are held in an
 * output buffer and sent together when the connection would block waiting for the next request
 * (or the buffer fills), so a pipelined run of small requests costs a few system calls, not
 * several per request. Owned by the connection's thread; handlers use only the calls below.
 */
struct xfer_conn;
#define XFER_CONN_COPY_MAX (16u << 10)

/* Reads exactly len bytes of the request stream into dst by deadline_ns (held-back replies are
 * sent before any wait). Returns 0, -ETIMEDOUT, -ECONNRESET or -errno. */
int xfer__conn_read(struct xfer_conn *c, void *dst, size_t len, uint64_t deadline_ns);

/* Reads len bytes and discards them (a refused payload). Same returns as xfer__conn_read. */
int xfer__conn_drain(struct xfer_conn *c, uint64_t len, uint64_t deadline_ns);

/* Queues a reply (the whole iovec, in order after earlier replies): small ones are copied and
 * held back, larger ones go out at once with whatever was held. The caller's memory is not
 * referenced after the call. Returns 0 or a negative code (the connection is then unusable). */
int xfer__conn_write(struct xfer_conn *c, struct iovec *iov, int cnt, uint64_t deadline_ns);

/*
 * Handler for a listener opcode: called on the connection's thread after header h arrived on
 * c. Read the payload (xfer__conn_read), reply (xfer__conn_write), return 0 to keep the
 * connection or a negative code to close it (replies already queued are still sent).
 */
typedef int xfer_serve_cb(struct xfer_transport *tp, struct xfer_conn *c,
                          const struct xfer_wire_hdr *h);

/*
 * Routes listener opcodes [first, last] to cb. Returns 0, -EBUSY when one is taken, -ENOTCONN
 * without a listener. Removed again by xfer__listener_unhandle (call it in uninstall).
 */
int xfer__listener_handle(struct xfer_engine *eng, uint8_t first, uint8_t last, xfer_serve_cb *cb,
                          struct xfer_transport *tp);
void xfer__listener_unhandle(struct xfer_engine *eng, uint8_t first, uint8_t last);

/* ---- sockets with deadlines (transfer/core/xfer_sock.c) ---- */

/*
 * Connects a TCP socket to "host:port" by deadline_ns (CLOCK_MONOTONIC). Returns a non-blocking
 * fd with TCP_NODELAY set, or -ETIMEDOUT, -ECONNREFUSED, -EINVAL (bad address), -errno.
 */
int xfer__sock_connect(const char *hostport, uint64_t deadline_ns);

/*
 * Reads / writes the whole iovec by deadline_ns (0 = wait forever; only for idle listener
 * reads). The iovec array is modified. Returns 0, -ETIMEDOUT, -ECONNRESET (peer closed; EOF),
 * or -errno. Writes use MSG_NOSIGNAL.
 */
int xfer__sock_readv(int fd, struct iovec *iov, int cnt, uint64_t deadline_ns);
int xfer__sock_writev(int fd, struct iovec *iov, int cnt, uint64_t deadline_ns);

/* Reads len bytes and discards them (drains a refused payload). Same returns as readv. */
int xfer__sock_drain(int fd, uint64_t len, uint64_t deadline_ns);

/*
 * Buffered reader over a non-blocking socket: a read that finds the buffer empty asks the kernel
 * for the rest of the destination and up to cap more bytes in one readv(2), so the following
 * small messages (headers, 4 KiB payloads) come out of the buffer without a system call, while
 * large payloads still land straight in their destination. buf (cap bytes) belongs to the owner;
 * cap 0 reads unbuffered. before_wait (optional) runs before every blocking wait, e.g. to send
 * replies held back for coalescing; its negative return aborts the read.
 */
struct xfer_rbuf {
    char *buf;
    size_t cap;
    size_t off, len; /* unread bytes: buf[off, off + len) */
    int (*before_wait)(void *arg);
    void *arg;
};

/* Reads exactly len bytes into dst by deadline_ns. Same returns as xfer__sock_readv. */
int xfer__rbuf_read(int fd, struct xfer_rbuf *rb, void *dst, size_t len, uint64_t deadline_ns);

/* Reads len bytes through rb and discards them. Same returns as xfer__sock_readv. */
int xfer__rbuf_drain(int fd, struct xfer_rbuf *rb, uint64_t len, uint64_t deadline_ns);

/*
 * Splits "host:port" or "[v6addr]:port" into host (bracketless) and port, by the one address
 * rule of cm_net_hostport_parse() (common/cm_net.h) with 0 as the default port: a bare host,
 * "[v6]" or an unbracketed string that is a whole IPv6 address ("::1", "fe80::1") has port 0;
 * any other unbracketed host containing ':' is refused. Returns 0 or -EINVAL.
 */
int xfer__split_hostport(const char *hp, char *host, size_t hostlen, uint16_t *port);

/* ---- arguments, environment, memory location ---- */

/*
 * Looks key up in "k=v,k=v" args: copies the value into buf (NUL-terminated) and returns 1, or
 * returns 0 when absent, -ENOSPC when the value does not fit.
 */
int xfer__arg_str(const char *args, const char *key, char *buf, size_t len);
/* Numeric forms: return 1 and set *v, 0 when absent, -EINVAL when malformed. */
int xfer__arg_u64(const char *args, const char *key, uint64_t *v);
int xfer__arg_double(const char *args, const char *key, double *v);

/* Longest message xfer_last_error returns, NUL included. */
#define XFER_ERRMSG_MAX 320

/*
 * Records a printf-style message describing a failure for xfer_last_error on the calling
 * thread (say which peer and which step failed). Thread-safe (per-thread buffer).
 */
void xfer__set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Unsigned environment variable or def when unset or malformed. */
uint64_t xfer__env_u64(const char *name, uint64_t def);

/*
 * Location tag of addr ("cpu:0", "cuda:N") into buf. Implemented by transfer/core/xfer_cuda.c
 * when that file exists (module.mk then defines XFER_HAVE_CUDA_MEMLOC and the default in
 * xfer_memloc.c compiles out); the default says "cpu:0". Returns 0 or -ENOSPC.
 */
int xfer__mem_location(const void *addr, char *buf, size_t len);

/* ---- -ENOSYS stubs for optional ops ---- */
int xfer__no_register_mem(struct xfer_transport *tp, struct xfer_mr *mr, uint8_t *key,
                          size_t *key_len);
int xfer__no_unregister_mem(struct xfer_transport *tp, struct xfer_mr *mr);
int xfer__no_local_info(struct xfer_transport *tp, uint8_t *buf, size_t *len);
int xfer__no_warmup_segment(struct xfer_transport *tp, void *seg_ctx);

/*
 * Test hook of the fault transport: how many times unregister_mem was called for memory it
 * never registered (0 for any other transport). Thread-safe.
 */
uint64_t xfer__fault_bad_unregisters(struct xfer_transport *tp);

/* ---- built-in transports (registry entries) ---- */
extern const struct xfer_transport_ops xfer_tcp_ops;
extern const struct xfer_transport_ops xfer_shm_ops;
extern const struct xfer_transport_ops xfer_fault_ops;

#endif
