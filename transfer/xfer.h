/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transfer engine: project-internal API (prefix xfer_). An engine owns a listener, the local
 * memory registrations, the installed transports and the remote segments it opened. Bytes move
 * in batches of READ/WRITE requests between a local address and a peer's registered memory.
 *
 * DESIGN
 *   - A peer is reached through its segment descriptor: a compact, versioned, checksummed blob
 *     (xfer_engine_export_desc) listing the peer's host identity, listen address, remote-visible
 *     buffers and, per installed transport, an endpoint blob and per-buffer keys. Any process can
 *     fetch it straight from the peer's listener (xfer_fetch_desc, Mooncake's P2PHANDSHAKE).
 *   - xfer_segment_open picks a transport for the peer: "shm" for a peer on the same host when
 *     installed on both sides, else the first of rdma, fabric, tcp that both sides have. A fault
 *     transport installed over the chosen one decorates it.
 *   - A batch is complete only when every task is terminal. The transfer timeout
 *     (MC_TRANSFER_TIMEOUT seconds, default 60) counts from submission; a task still pending at
 *     its deadline reads TIMEOUT. Every socket operation carries a deadline, so a dead peer never
 *     blocks a thread forever.
 *
 * Thread safety: every function here is thread-safe unless its comment says otherwise. Batches
 * may be submitted to and polled from several threads; a batch is freed by one thread once.
 */
#ifndef CRESCENT_TRANSFER_XFER_H
#define CRESCENT_TRANSFER_XFER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct xfer_engine;  /* one per process (or per role); opaque */
struct xfer_segment; /* an opened remote segment; opaque */
struct xfer_batch;   /* a set of tasks submitted together; opaque */

/* Request opcodes (values match Mooncake's OPCODE_READ / OPCODE_WRITE). */
enum xfer_op {
    XFER_OP_READ = 0, /* remote -> local */
    XFER_OP_WRITE = 1 /* local -> remote */
};

/* Task status (values match Mooncake's transfer_status codes). */
enum xfer_status {
    XFER_STATUS_WAITING = 0,   /* slot allocated, not submitted */
    XFER_STATUS_PENDING = 1,   /* submitted, not yet terminal */
    XFER_STATUS_INVALID = 2,   /* request rejected before it reached a transport (terminal) */
    XFER_STATUS_CANCELED = 3,  /* canceled (terminal) */
    XFER_STATUS_COMPLETED = 4, /* all bytes moved (terminal) */
    XFER_STATUS_TIMEOUT = 5,   /* transfer deadline passed (terminal) */
    XFER_STATUS_FAILED = 6     /* transport or peer error (terminal) */
};

/* True for statuses that never change again. */
static inline int xfer_status_terminal(int s) {
    return s >= XFER_STATUS_INVALID;
}

/* One transfer request of a batch. */
struct xfer_request {
    enum xfer_op op;          /* XFER_OP_READ or XFER_OP_WRITE */
    void *local;              /* local buffer (need not be registered for tcp/shm) */
    struct xfer_segment *seg; /* remote segment from xfer_segment_open */
    uint64_t remote_addr;     /* absolute address in the peer's address space, inside one of
                                 its remote-visible buffers (Mooncake target_offset) */
    uint64_t length;          /* bytes; 0 completes at once */
};

/* Per-task status snapshot. */
struct xfer_task_status {
    enum xfer_status status; /* see enum xfer_status */
    uint64_t transferred;    /* bytes moved when COMPLETED */
    int error;               /* negative code for INVALID/FAILED/TIMEOUT, else 0 */
};

/* Engine creation options; zero-initialise and set what you need. */
struct xfer_engine_opts {
    const char *local_name; /* free-form name for logs and descriptors (default: host:port) */
    const char *listen;     /* "host:port", "[v6]:port" or a bare host (port 0) to listen on;
                               NULL = MC_TCP_BIND_ADDRESS or 127.0.0.1, ephemeral port;
                               "" = no listener (initiator only) */
    uint32_t timeout_ms;    /* transfer timeout; 0 = MC_TRANSFER_TIMEOUT env or 60 s */
    uint32_t handshake_timeout_ms; /* connect + descriptor fetch of xfer_segment_open_addr;
                                      0 = MC_HANDSHAKE_CONNECT_TIMEOUT (s) or 5 s */
    int listen_later; /* bind at create (the address is known) but refuse connections until
                         xfer_engine_listen_start: install and register first */
};

/* Registration flags. */
enum xfer_reg_flags {
    XFER_REG_REMOTE = 1u << 0 /* peers may read and write this buffer */
};

/* Largest exported descriptor xfer_engine_export_desc produces (bytes). */
#define XFER_DESC_MAX (4u << 20)

/* Default transfer timeout when neither opts nor MC_TRANSFER_TIMEOUT set one. */
#define XFER_DEFAULT_TIMEOUT_MS 60000u

/* Default handshake timeout when neither opts nor MC_HANDSHAKE_CONNECT_TIMEOUT set one. */
#define XFER_DEFAULT_HANDSHAKE_MS 5000u

/*
 * Creates an engine. The listener (unless opts->listen is "") starts at once and serves
 * descriptor fetches; installed transports add their request types to it. Returns 0 and sets
 * *out, or a negative code (-EADDRINUSE, -EINVAL for a malformed listen address, -ENOMEM).
 * Caller destroys with xfer_engine_destroy.
 */
int xfer_engine_create(const struct xfer_engine_opts *opts, struct xfer_engine **out);

/*
 * Starts accepting connections on the listener of an engine created with listen_later (a
 * no-op otherwise). Until then peers connecting to its address are refused. Returns 0 or
 * -errno from listen(2) (-EADDRINUSE when another socket took an explicit port meanwhile).
 * Call after installing transports and registering memory; calling it again is a no-op.
 */
int xfer_engine_listen_start(struct xfer_engine *eng);

/*
 * Destroys an engine: stops the listener, closes open segments, uninstalls transports and drops
 * registrations. All batches must have been freed. NULL is accepted. Not thread-safe against
 * other calls on the same engine.
 */
void xfer_engine_destroy(struct xfer_engine *eng);

/*
 * Writes the listener's "host:port" into buf (NUL-terminated). Returns the string length, or
 * -ENOTCONN when the engine has no listener, -ENOSPC when len is too small.
 */
int xfer_engine_local_addr(struct xfer_engine *eng, char *buf, size_t len);

/* Returns the engine's transfer timeout in milliseconds. */
uint32_t xfer_engine_timeout_ms(const struct xfer_engine *eng);

/*
 * Installs the transport called name ("shm", "tcp", "fabric", "rdma", "fault") with an optional
 * comma-separated "key=value" argument string (NULL for defaults; see docs/transfer.md).
 * Memory already registered is registered with the new transport too. Returns 0, -EEXIST when
 * installed already, -CM_ENOT_SUPPORTED when not compiled in, or the transport's install error.
 * Install transports before exporting the descriptor that peers will use.
 */
int xfer_engine_install(struct xfer_engine *eng, const char *name, const char *args);

/* Uninstalls a transport; segments using it are closed first. Returns 0 or -ENOENT. */
int xfer_engine_uninstall(struct xfer_engine *eng, const char *name);

/*
 * Lists the names of the transports compiled into this build, comma-separated, into buf.
 * Returns the string length or -ENOSPC.
 */
int xfer_transports_available(char *buf, size_t len);

/*
 * Registers [addr, addr+len) under a location tag ("cpu:0", "cuda:0", "*" = detect) with every
 * installed transport. With XFER_REG_REMOTE, peers may read and write it and it appears in the
 * exported descriptor. Overlapping registrations are refused with -EEXIST. Returns 0 or a
 * negative code. The memory must stay valid until xfer_engine_unregister.
 */
int xfer_engine_register(struct xfer_engine *eng, void *addr, size_t len, const char *location,
                         unsigned flags);

/*
 * Unregisters the region that starts at addr. Peers' requests arriving afterwards are refused;
 * the call waits for those already being served from it (each ends by its deadline). Returns 0
 * or -ENOENT.
 */
int xfer_engine_unregister(struct xfer_engine *eng, void *addr);

/*
 * Allocates len bytes of memfd-backed shared memory (page-aligned), which the shm transport
 * hands to same-host peers by file descriptor so they map it and copy once. The memory is not
 * registered; register it like any other buffer. Returns 0 and sets *out, or a negative code.
 * Free with xfer_engine_free_shared.
 */
int xfer_engine_alloc_shared(struct xfer_engine *eng, size_t len, void **out);

/*
 * Declares [addr, addr+len) as a MAP_SHARED mapping of memfd fd from offset 0, made by the
 * caller (the master's embedded segment), so the shm transport hands the fd to same-host peers
 * as for xfer_engine_alloc_shared memory. The engine keeps a duplicate of fd; the mapping stays
 * the caller's (never unmapped by the engine). Call before registering the range. Returns 0 or
 * -EINVAL, -errno (dup failed), -ENOMEM. Forget it with xfer_engine_free_shared (which then only
 * closes the duplicate).
 */
int xfer_engine_adopt_shared(struct xfer_engine *eng, void *addr, size_t len, int fd);

/* Frees memory from xfer_engine_alloc_shared (unregister it first). Returns 0 or -ENOENT. */
int xfer_engine_free_shared(struct xfer_engine *eng, void *addr);

/*
 * Encodes the engine's segment descriptor into buf. With buf == NULL it returns the size needed;
 * with len too small, -ENOSPC. Returns the number of bytes written (or needed), or a negative
 * code. The descriptor reflects the registrations and transports at the time of the call.
 */
ssize_t xfer_engine_export_desc(struct xfer_engine *eng, void *buf, size_t len);

/*
 * Fetches a peer engine's descriptor from its listener at "host:port" within timeout_ms
 * (0 = the engine default, 5 s at most for the connect). On success returns 0 and sets *desc
 * (caller frees with cm_free) and *desc_len. Errors: -ETIMEDOUT, -ECONNREFUSED,
 * -CM_EPROTOCOL, -CM_ECORRUPT.
 */
int xfer_fetch_desc(const char *hostport, uint32_t timeout_ms, void **desc, size_t *desc_len);

/*
 * Message describing the last failure of xfer_fetch_desc, xfer_segment_open or
 * xfer_segment_open_addr on the calling thread ("transfer peer 10.0.0.2:15001: waiting for the
 * descriptor reply: no answer within 5000 ms"); "" before any. Static per-thread buffer,
 * overwritten by the next failure. Thread-safe.
 */
const char *xfer_last_error(void);

/* What a descriptor says, for code that stores or routes descriptors (MC.MOUNT checks DESC). */
struct xfer_desc_summary {
    char name[256];         /* engine local name */
    char listen[280];       /* "host:port" of its listener, "" when none */
    uint32_t pid;           /* owner process id */
    uint64_t instance;      /* random per engine instance */
    uint32_t n_transports;  /* entries used in transports[] */
    char transports[8][16]; /* transport names ("shm", "tcp", ...) */
    uint32_t n_buffers;     /* remote-visible buffers (all of them, even beyond max_regions) */
};

/* One remote-visible buffer of a descriptor. */
struct xfer_desc_region {
    uint64_t addr;
    uint64_t len;
    char location[32];
};

/*
 * Verifies and summarises descriptor bytes without opening anything: fills *out and the first
 * max_regions buffers (sorted by address) into regions (may be NULL). Returns 0, or
 * -CM_ECORRUPT / -CM_EINVALID_VERSION / -ENOMEM. Pure; thread-safe.
 */
int xfer_desc_inspect(const void *desc, size_t desc_len, struct xfer_desc_summary *out,
                      struct xfer_desc_region *regions, size_t max_regions);

/*
 * Opens a remote segment from its descriptor bytes: decodes and verifies it, picks a transport
 * and connects as that transport requires. The descriptor bytes are copied. Returns 0 and sets
 * *out, or -CM_ECORRUPT (bad blob), -CM_ENOT_SUPPORTED (no common transport) or the transport's
 * error. Close with xfer_segment_close.
 */
int xfer_segment_open(struct xfer_engine *eng, const void *desc, size_t desc_len,
                      struct xfer_segment **out);

/*
 * Fetches the descriptor from hostport and opens it (xfer_fetch_desc + xfer_segment_open).
 * The fetch is bounded by the engine's handshake timeout (not the transfer timeout): a peer
 * that does not answer fails with -ETIMEDOUT within it. On failure xfer_last_error() names
 * the peer and the step that failed.
 */
int xfer_segment_open_addr(struct xfer_engine *eng, const char *hostport,
                           struct xfer_segment **out);

/*
 * Closes a segment. Waits for tasks still in flight against it to complete (each ends by its
 * transfer deadline); the handle is invalid after the call. NULL is accepted.
 */
void xfer_segment_close(struct xfer_segment *seg);

/* Name of the transport the segment uses ("shm", "tcp", ...); static string. */
const char *xfer_segment_transport(const struct xfer_segment *seg);

/* The peer's local name from its descriptor; valid while the segment is open. */
const char *xfer_segment_peer_name(const struct xfer_segment *seg);

/*
 * Reads the peer's index-th remote-visible buffer (sorted by address) from the segment's
 * descriptor. Returns 0, or -ENOENT past the last one.
 */
int xfer_segment_buffer(const struct xfer_segment *seg, size_t index, uint64_t *addr,
                        uint64_t *len);

/*
 * Pre-establishes connections to the segment (transport warmup_segment hook), so the first
 * batch does not pay for it. Returns 0, or -ENOSYS when the transport has nothing to warm up.
 */
int xfer_segment_warmup(struct xfer_segment *seg);

/*
 * Allocates a batch with room for capacity tasks (1 .. 1 << 20). Returns 0 and sets *out, or
 * -EINVAL / -ENOMEM. Free with xfer_batch_free.
 */
int xfer_batch_alloc(struct xfer_engine *eng, size_t capacity, struct xfer_batch **out);

/*
 * Frees a batch. Tasks may still be in flight (after a wait timeout): the memory is released
 * when the last of them completes, so the call never blocks. The caller must not touch the
 * local buffers of unfinished tasks' until they are known to be idle (at most one transfer
 * timeout later). NULL is accepted.
 */
void xfer_batch_free(struct xfer_batch *b);

/*
 * Submits n requests as tasks [first, first+n) of the batch, where first is the number of tasks
 * submitted before; *first_id (optional) receives it. Each task completes exactly once.
 * Invalid requests (NULL segment, zero-length overflow, remote range outside the peer's
 * remote-visible buffers) become INVALID tasks; the call still succeeds. Returns 0, or -ENOSPC
 * when the batch has no room for n more tasks (nothing submitted).
 */
int xfer_batch_submit(struct xfer_batch *b, const struct xfer_request *reqs, size_t n,
                      size_t *first_id);

/*
 * Reads task id's status into *st. A pending task past its deadline reads TIMEOUT from then on.
 * Returns 0 or -EINVAL for an id not submitted.
 */
int xfer_batch_status(struct xfer_batch *b, size_t id, struct xfer_task_status *st);

/*
 * Waits up to timeout_ms (-1 = until every task is terminal, which the transfer timeout bounds)
 * for all submitted tasks to become terminal and be handed back by their transports (a task the
 * deadline sweep marked TIMEOUT may still be held briefly). After it returns 0 or
 * -CM_ETRANSFER_FAIL nothing is in flight: reset, free and segment close succeed at once.
 * Returns 0 when all COMPLETED;
 * -CM_ETRANSFER_FAIL when all are terminal and some did not complete (their ids, up to
 * max_failed, go to failed_ids and *n_failed gets the full count; both may be NULL/0);
 * -ETIMEDOUT when timeout_ms passed with tasks still pending.
 */
int xfer_batch_wait(struct xfer_batch *b, int timeout_ms, size_t *failed_ids, size_t max_failed,
                    size_t *n_failed);

/*
 * Empties a batch for reuse (no allocation): every task must be terminal and released by its
 * transport, which is always the case once xfer_batch_wait returned 0 or -CM_ETRANSFER_FAIL.
 * Returns 0, or -EBUSY when tasks may still be in flight (no successful wait since the last
 * submit).
 */
int xfer_batch_reset(struct xfer_batch *b);

/* Number of tasks submitted to the batch so far. */
size_t xfer_batch_count(const struct xfer_batch *b);

/* Name of a status ("COMPLETED"). */
const char *xfer_status_name(int status);

#endif
