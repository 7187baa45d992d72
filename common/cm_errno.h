/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Project error codes: one X-macro table generates the enum, cm_strerror() and cm_err_name()
 * (CONTRIBUTING.md, "Errors"). Functions return 0 or a negative code: -errno for system errors,
 * -CM_E* for the codes below, whose values start at 4096, above the errno range. The names follow
 * Mooncake's ErrorCode so that RESP error replies read "-OBJECT_NOT_FOUND ...".
 */
#ifndef CRESCENT_COMMON_CM_ERRNO_H
#define CRESCENT_COMMON_CM_ERRNO_H

#define CM_ERRNO_BASE 4096

/* X(NAME, message) */
#define CM_ERRNO_MAP(X)                                               \
    X(INTERNAL_ERROR, "internal error")                               \
    X(BUFFER_OVERFLOW, "buffer overflow")                             \
    X(SEGMENT_NOT_FOUND, "segment not found")                         \
    X(SEGMENT_ALREADY_EXISTS, "segment already exists")               \
    X(CLIENT_NOT_FOUND, "client not found")                           \
    X(NO_AVAILABLE_HANDLE, "no space available in any segment")       \
    X(INVALID_VERSION, "invalid version")                             \
    X(INVALID_KEY, "invalid key")                                     \
    X(WRITE_FAIL, "write failed")                                     \
    X(INVALID_PARAMS, "invalid parameters")                           \
    X(ILLEGAL_CLIENT, "illegal client")                               \
    X(INVALID_WRITE, "invalid write")                                 \
    X(INVALID_READ, "invalid read")                                   \
    X(INVALID_REPLICA, "invalid replica")                             \
    X(REPLICA_IS_NOT_READY, "replica is not ready")                   \
    X(OBJECT_NOT_FOUND, "object not found")                           \
    X(OBJECT_ALREADY_EXISTS, "object already exists")                 \
    X(OBJECT_HAS_LEASE, "object has a lease")                         \
    X(LEASE_EXPIRED, "lease expired")                                 \
    X(REPLICA_NOT_FOUND, "replica not found")                         \
    X(TRANSFER_FAIL, "transfer failed")                               \
    X(CHECKSUM_MISMATCH, "checksum mismatch")                         \
    X(RPC_FAIL, "rpc failed")                                         \
    X(RPC_TIMEOUT, "rpc timed out")                                   \
    X(ETCD_OPERATION_ERROR, "etcd operation failed")                  \
    X(ETCD_KEY_NOT_EXIST, "etcd key does not exist")                  \
    X(ETCD_TRANSACTION_FAIL, "etcd transaction failed")               \
    X(K8S_LEASE_OPERATION_ERROR, "kubernetes lease operation failed") \
    X(K8S_LEASE_NOT_FOUND, "kubernetes lease not found")              \
    X(UNAVAILABLE_IN_CURRENT_STATUS, "unavailable in current status") \
    X(NOT_SUPPORTED, "not supported")                                 \
    X(PROTOCOL, "protocol error")                                     \
    X(CORRUPT, "corrupt data (bad magic, version or checksum)")       \
    X(NOT_LEADER, "not the leader")                                   \
    X(AUTH, "authentication failed")                                  \
    X(BAD_URI, "malformed URI")                                       \
    X(UNREACHABLE, "backend unreachable")                             \
    X(OOM, "out of memory")                                           \
    X(NO_DEVICE, "no such device")                                    \
    /* EOL */

enum cm_errno {
    CM_ERRNO_FIRST_ = CM_ERRNO_BASE - 1,
#define CM_ERRNO_ENUM_(name, msg) CM_E##name,
    CM_ERRNO_MAP(CM_ERRNO_ENUM_)
#undef CM_ERRNO_ENUM_
        CM_ERRNO_LAST_
};

/*
 * Returns a static message for err, which may be negative or positive: errno values map to
 * strerror's text, CM_E* codes to the table above, anything else to "unknown error".
 * Thread-safe; the string is never freed.
 */
const char *cm_strerror(int err);

/*
 * Returns the static symbolic name of err ("OBJECT_NOT_FOUND", "ENOENT", ...), or "UNKNOWN".
 * Thread-safe.
 */
const char *cm_err_name(int err);

#endif
