/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file crescent/transfer.h
 * @brief libcrescent transfer engine API: move bytes between registered memory of processes
 * over shm, tcp, fabric (libfabric) or rdma (ibverbs), in batches of READ/WRITE requests.
 *
 * Covers Mooncake's transfer_engine_c.h: engines, transports, memory registration, segment
 * descriptors (a compact, versioned, checksummed byte blob; the planned MC.MOUNT command of
 * the distributed store will carry it, see docs/transfer.md), a
 * peer-to-peer descriptor fetch by host:port, segments, batches. See docs/transfer.md.
 *
 * Errors: functions return 0 (or a non-negative count) on success and a negative code on
 * failure: a -errno value from <errno.h>, or one of the -CRESCENT_XFER_E* codes below (task
 * error fields use the same codes). crescent_xfer_strerror() describes any of them,
 * crescent_xfer_err_name() names it, and crescent_xfer_last_error() says which peer and which
 * step failed in the last failed open on the calling thread.
 * Thread safety: all functions are thread-safe unless noted; one batch may be submitted to and
 * waited on from several threads. Ownership is stated per function.
 */
#ifndef CRESCENT_CLIENT_CRESCENT_TRANSFER_H
#define CRESCENT_CLIENT_CRESCENT_TRANSFER_H

#include "crescent/crescent_export.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct crescent_xfer_engine;  /**< an engine (opaque) */
struct crescent_xfer_segment; /**< an opened remote segment (opaque) */
struct crescent_xfer_batch;   /**< a batch of tasks (opaque) */

/** Request opcodes (Mooncake OPCODE_READ / OPCODE_WRITE). */
enum crescent_xfer_op {
    CRESCENT_XFER_READ = 0, /**< remote -> local */
    CRESCENT_XFER_WRITE = 1 /**< local -> remote */
};

/** Task status (Mooncake transfer_status values). */
enum crescent_xfer_status {
    CRESCENT_XFER_WAITING = 0,   /**< not submitted */
    CRESCENT_XFER_PENDING = 1,   /**< in flight */
    CRESCENT_XFER_INVALID = 2,   /**< rejected before transfer (terminal) */
    CRESCENT_XFER_CANCELED = 3,  /**< canceled (terminal) */
    CRESCENT_XFER_COMPLETED = 4, /**< done (terminal) */
    CRESCENT_XFER_TIMEOUT = 5,   /**< transfer timeout passed (terminal) */
    CRESCENT_XFER_FAILED = 6     /**< transport or peer error (terminal) */
};

/**
 * @name Error codes
 * Every project-specific code the transfer API returns (negated, like -errno values); the
 * values are stable. Anything else a function returns is a -errno value.
 * @{
 */
#define CRESCENT_XFER_EINTERNAL_ERROR  4096 /**< internal error (a bug; please report it) */
#define CRESCENT_XFER_EINVALID_VERSION 4102 /**< descriptor or peer of another format version */
#define CRESCENT_XFER_EINVALID_PARAMS                      \
    4105 /**< request refused: NULL segment or buffer, bad \
              op, or remote range outside the peer's       \
              remote-visible buffers (task error of an     \
              INVALID task, or the peer's refusal) */
#define CRESCENT_XFER_ETRANSFER_FAIL                      \
    4116 /**< a batch finished with a task not COMPLETED, \
              or a device copy failed */
#define CRESCENT_XFER_EUNAVAILABLE                      \
    4125 /**< the transport cannot do it in its current \
              state (fault transport's injected failures) */
#define CRESCENT_XFER_ENOT_SUPPORTED                       \
    4126 /**< transport not compiled in, no transport both \
              sides have, or operation not supported */
#define CRESCENT_XFER_EPROTOCOL                            \
    4127 /**< the peer broke the wire protocol (e.g. it is \
              not a Crescent transfer listener) */
#define CRESCENT_XFER_ECORRUPT                             \
    4128 /**< descriptor bytes fail their magic, length or \
              checksum checks */
#define CRESCENT_XFER_EUNREACHABLE                                                     \
    4132                              /**< the peer cannot be reached by the transport \
                                           (e.g. shm to another host) */
#define CRESCENT_XFER_ENO_DEVICE 4134 /**< no usable NIC or GPU device */
/** @} */

/** Registration flag: peers may read and write the buffer. */
#define CRESCENT_XFER_REMOTE 1u

/** One request. */
struct crescent_xfer_request {
    enum crescent_xfer_op op;          /**< READ or WRITE */
    void *local;                       /**< local buffer */
    struct crescent_xfer_segment *seg; /**< remote segment */
    uint64_t remote_addr; /**< absolute address in the peer's address space, inside one of
                               its remote-visible buffers (crescent_xfer_segment_buffer);
                               Mooncake's target_offset. Not an offset into the buffer. */
    uint64_t length;      /**< bytes */
};

/** Status of one task. */
struct crescent_xfer_task_status {
    enum crescent_xfer_status status; /**< see enum */
    uint64_t transferred;             /**< bytes moved when COMPLETED */
    int error;                        /**< negative code when not COMPLETED */
};

/**
 * Engine options. Initialise with CRESCENT_XFER_OPTS_INIT or crescent_xfer_opts_init(), which
 * set struct_size (and zero the rest = defaults), then set what you need. struct_size lets
 * the struct grow in later versions without breaking applications built against this one.
 */
struct crescent_xfer_opts {
    size_t struct_size;     /**< sizeof(struct crescent_xfer_opts) the caller was built with */
    const char *local_name; /**< name in descriptors and logs (default host:port) */
    const char *listen;     /**< "host:port", "[v6addr]:port" or a bare host (port 0); NULL =
                                 MC_TCP_BIND_ADDRESS or 127.0.0.1, port 0; "" = no listener */
    uint32_t timeout_ms;    /**< transfer timeout; 0 = MC_TRANSFER_TIMEOUT (s) or 60 s */
    uint32_t handshake_timeout_ms; /**< bound on crescent_xfer_segment_open_addr's connect and
                                        descriptor fetch; 0 = MC_HANDSHAKE_CONNECT_TIMEOUT (s)
                                        or 5 s */
};

/** Static initialiser of struct crescent_xfer_opts: struct_size set, everything default. */
#define CRESCENT_XFER_OPTS_INIT \
    { .struct_size = sizeof(struct crescent_xfer_opts) }

/** @brief Zeroes *opts and sets its struct_size (the defaults). */
CRESCENT_API void crescent_xfer_opts_init(struct crescent_xfer_opts *opts);

/**
 * @brief Creates an engine and starts its listener.
 * @param[in] opts options (NULL = defaults); struct_size must be set
 * @param[out] out the engine; destroy with crescent_xfer_engine_destroy()
 * @return 0, -EADDRINUSE, -EADDRNOTAVAIL, -ENOMEM, -EINVAL (malformed listen address, or
 * struct_size 0 or smaller than the first version of the struct), -E2BIG (struct_size larger
 * than this library knows, with a non-zero field this library does not know)
 */
CRESCENT_API int crescent_xfer_engine_create(const struct crescent_xfer_opts *opts,
                                             struct crescent_xfer_engine **out);

/** @brief Destroys an engine (NULL is fine). Free all batches first. Not thread-safe. */
CRESCENT_API void crescent_xfer_engine_destroy(struct crescent_xfer_engine *eng);

/** @brief Writes the listener's "host:port" to buf. @return length, -ENOTCONN, -ENOSPC */
CRESCENT_API int crescent_xfer_engine_local_addr(struct crescent_xfer_engine *eng, char *buf,
                                                 size_t len);

/**
 * @brief Installs a transport ("shm", "tcp", "fabric", "rdma", "fault") with "k=v,..." args.
 * @return 0, -EEXIST, a negative code when not compiled in or the transport's error
 */
CRESCENT_API int crescent_xfer_install(struct crescent_xfer_engine *eng, const char *name,
                                       const char *args);

/** @brief Uninstalls a transport. @return 0 or -ENOENT */
CRESCENT_API int crescent_xfer_uninstall(struct crescent_xfer_engine *eng, const char *name);

/**
 * @brief Registers [addr, addr+len) with every transport.
 * @param[in] location "cpu:0", "cuda:0", or "*" / NULL to detect
 * @param[in] flags CRESCENT_XFER_REMOTE to let peers access it
 * @return 0, -EINVAL, -EEXIST (overlap), transport errors. Memory stays the caller's.
 */
CRESCENT_API int crescent_xfer_register(struct crescent_xfer_engine *eng, void *addr, size_t len,
                                        const char *location, unsigned flags);

/** @brief Unregisters the region starting at addr. @return 0 or -ENOENT */
CRESCENT_API int crescent_xfer_unregister(struct crescent_xfer_engine *eng, void *addr);

/**
 * @brief Allocates memfd-backed memory that same-host peers map directly (shm zero-copy).
 * @return 0 and *out; free with crescent_xfer_free_shared() after unregistering
 */
CRESCENT_API int crescent_xfer_alloc_shared(struct crescent_xfer_engine *eng, size_t len,
                                            void **out);

/** @brief Frees crescent_xfer_alloc_shared() memory. @return 0 or -ENOENT */
CRESCENT_API int crescent_xfer_free_shared(struct crescent_xfer_engine *eng, void *addr);

/**
 * @brief Encodes the engine's segment descriptor into buf.
 * @return bytes written; with buf NULL the size needed; -ENOSPC when len is too small
 */
CRESCENT_API ssize_t crescent_xfer_export_desc(struct crescent_xfer_engine *eng, void *buf,
                                               size_t len);

/**
 * @brief Fetches a peer's descriptor from its listener (peer-to-peer handshake).
 * @param[out] desc the blob; free with crescent_xfer_desc_free()
 * @return 0, -ETIMEDOUT, -ECONNREFUSED, protocol errors
 */
CRESCENT_API int crescent_xfer_fetch_desc(const char *hostport, uint32_t timeout_ms, void **desc,
                                          size_t *desc_len);

/** @brief Frees a descriptor from crescent_xfer_fetch_desc(). NULL is fine. */
CRESCENT_API void crescent_xfer_desc_free(void *desc);

/**
 * @brief Opens a remote segment from descriptor bytes (copied); picks shm for same-host peers,
 * else rdma, fabric, tcp in that order of preference among transports both sides have.
 * @return 0 and *out (close with crescent_xfer_segment_close()), or an error
 */
CRESCENT_API int crescent_xfer_segment_open(struct crescent_xfer_engine *eng, const void *desc,
                                            size_t desc_len, struct crescent_xfer_segment **out);

/**
 * @brief Fetches the descriptor from hostport ("host:port" or "[v6addr]:port") and opens it.
 * The fetch is bounded by the handshake timeout (opts.handshake_timeout_ms, default 5 s), not
 * the transfer timeout.
 * @return 0, -ETIMEDOUT (no connection or no answer within the handshake timeout),
 * -ECONNREFUSED, -EINVAL (malformed address), -CRESCENT_XFER_EPROTOCOL (not a Crescent
 * transfer listener), or crescent_xfer_segment_open()'s errors; crescent_xfer_last_error()
 * then names the peer and the failed step
 */
CRESCENT_API int crescent_xfer_segment_open_addr(struct crescent_xfer_engine *eng,
                                                 const char *hostport,
                                                 struct crescent_xfer_segment **out);

/** @brief Closes a segment (NULL is fine); in-flight tasks finish first. */
CRESCENT_API void crescent_xfer_segment_close(struct crescent_xfer_segment *seg);

/** @brief Name of the transport serving the segment ("shm", "tcp", "local", ...). */
CRESCENT_API const char *crescent_xfer_segment_transport(const struct crescent_xfer_segment *seg);

/** @brief The peer's index-th remote-visible buffer. @return 0 or -ENOENT */
CRESCENT_API int crescent_xfer_segment_buffer(const struct crescent_xfer_segment *seg, size_t index,
                                              uint64_t *addr, uint64_t *len);

/** @brief Pre-connects to the segment. @return 0 or -ENOSYS when nothing to do */
CRESCENT_API int crescent_xfer_segment_warmup(struct crescent_xfer_segment *seg);

/** @brief Allocates a batch of capacity tasks. Free with crescent_xfer_batch_free(). */
CRESCENT_API int crescent_xfer_batch_alloc(struct crescent_xfer_engine *eng, size_t capacity,
                                           struct crescent_xfer_batch **out);

/** @brief Frees a batch; never blocks (memory of unfinished tasks is released later). */
CRESCENT_API void crescent_xfer_batch_free(struct crescent_xfer_batch *b);

/**
 * @brief Submits n requests; task ids are *first_id .. *first_id + n - 1.
 * @return 0 (invalid requests become INVALID tasks) or -ENOSPC (batch full; nothing submitted)
 */
CRESCENT_API int crescent_xfer_batch_submit(struct crescent_xfer_batch *b,
                                            const struct crescent_xfer_request *reqs, size_t n,
                                            size_t *first_id);

/** @brief Reads a task's status. @return 0 or -EINVAL */
CRESCENT_API int crescent_xfer_batch_status(struct crescent_xfer_batch *b, size_t id,
                                            struct crescent_xfer_task_status *st);

/**
 * @brief Waits for every task to be terminal and released by its transport (timeout_ms -1:
 * until then; bounded by the transfer timeout, which counts from submission). After it
 * returns 0 or -CRESCENT_XFER_ETRANSFER_FAIL, reset, free, status and segment close all
 * succeed at once.
 * @return 0 all COMPLETED; -CRESCENT_XFER_ETRANSFER_FAIL all terminal, some not completed (ids
 * in failed_ids, count in *n_failed); -ETIMEDOUT still pending at timeout_ms
 */
CRESCENT_API int crescent_xfer_batch_wait(struct crescent_xfer_batch *b, int timeout_ms,
                                          size_t *failed_ids, size_t max_failed, size_t *n_failed);

/**
 * @brief Empties a batch for reuse. Once crescent_xfer_batch_wait() has returned 0 or
 * -CRESCENT_XFER_ETRANSFER_FAIL, no task is in flight and this always succeeds.
 * @return 0, or -EBUSY when tasks are still in flight (no successful wait since they were
 * submitted)
 */
CRESCENT_API int crescent_xfer_batch_reset(struct crescent_xfer_batch *b);

/** @brief Static name of a status ("COMPLETED"). */
CRESCENT_API const char *crescent_xfer_status_name(int status);

/** @brief Static message for a negative error code (-errno or -CRESCENT_XFER_E*). */
CRESCENT_API const char *crescent_xfer_strerror(int err);

/**
 * @brief Static symbolic name of a negative error code: "CRESCENT_XFER_EINVALID_PARAMS" for
 * the codes above, "ETIMEDOUT" etc. for -errno values, "UNKNOWN" otherwise.
 */
CRESCENT_API const char *crescent_xfer_err_name(int err);

/**
 * @brief Message for the last failed crescent_xfer_fetch_desc(), crescent_xfer_segment_open()
 * or crescent_xfer_segment_open_addr() on the calling thread, naming the peer (address or
 * name) and the failed step, e.g. "transfer peer 10.0.0.2:15001: waiting for the descriptor
 * reply: no answer within 5000 ms". "" before any failure. Per-thread static buffer,
 * overwritten by the next failure.
 */
CRESCENT_API const char *crescent_xfer_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
