/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file crescent/store.h
 * @brief libcrescent store API: a client of the distributed store (Mooncake Store's C and
 * Python store APIs in C). It contributes memory segments to the pool, writes and reads
 * objects with the transfer engine, and talks to crescent-master over RESP (the MC.* commands,
 * docs/store.md). See docs/api/store.md.
 *
 * Errors: functions return 0 (or a non-negative count or size) on success and a negative code
 * on failure: one of the -CRESCENT_STORE_E* codes below (the master's `-<NAME> msg` replies
 * map onto them by name), a -CRESCENT_XFER_E* code from the transfer engine, or a -errno value.
 * crescent_store_err_name() names any of them and crescent_store_last_error() holds the last
 * failure's message on the calling thread (for a master error, the master's own text).
 * Thread safety: every function may be called from several threads at once on one store,
 * except crescent_store_destroy(). Keys are NUL-terminated strings of 1..65535 bytes.
 */
#ifndef CRESCENT_CLIENT_CRESCENT_STORE_H
#define CRESCENT_CLIENT_CRESCENT_STORE_H

#include "crescent/crescent_export.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct crescent_store; /**< a store client (opaque) */

/**
 * @name Error codes
 * Mooncake's ErrorCode names; each value is 5000 + |Mooncake's number| (returned negated), so
 * crescent_store_mooncake_code() recovers Mooncake's number. Stable.
 * @{
 */
#define CRESCENT_STORE_EBASE                          5000
#define CRESCENT_STORE_EINTERNAL_ERROR                5001 /**< internal error (-1) */
#define CRESCENT_STORE_EBUFFER_OVERFLOW               5010 /**< buffer too small (-10) */
#define CRESCENT_STORE_ESEGMENT_NOT_FOUND             5101 /**< no such segment (-101) */
#define CRESCENT_STORE_ESEGMENT_ALREADY_EXISTS        5102 /**< segment name taken (-102) */
#define CRESCENT_STORE_ECLIENT_NOT_FOUND              5103 /**< master forgot the client (-103) */
#define CRESCENT_STORE_ENO_AVAILABLE_HANDLE           5200 /**< no space in the pool (-200) */
#define CRESCENT_STORE_EINVALID_KEY                   5400 /**< empty or too long key (-400) */
#define CRESCENT_STORE_EINVALID_PARAMS                5600 /**< bad argument (-600) */
#define CRESCENT_STORE_EILLEGAL_CLIENT                5601 /**< not this client's (-601) */
#define CRESCENT_STORE_EINVALID_WRITE                 5700 /**< no write in flight (-700) */
#define CRESCENT_STORE_EINVALID_READ                  5701 /**< read refused (-701) */
#define CRESCENT_STORE_EREPLICA_IS_NOT_READY          5703 /**< being written (-703) */
#define CRESCENT_STORE_EOBJECT_NOT_FOUND              5704 /**< no such object (-704) */
#define CRESCENT_STORE_EOBJECT_ALREADY_EXISTS         5705 /**< key exists (-705) */
#define CRESCENT_STORE_EOBJECT_HAS_LEASE              5706 /**< leased or hard-pinned (-706) */
#define CRESCENT_STORE_ELEASE_EXPIRED                 5707 /**< read outlived its lease (-707) */
#define CRESCENT_STORE_EOBJECT_HAS_REPLICATION_TASK   5708 /**< copy/move running (-708) */
#define CRESCENT_STORE_EOBJECT_NO_REPLICATION_TASK    5709 /**< no copy/move (-709) */
#define CRESCENT_STORE_EREPLICA_NOT_FOUND             5710 /**< no such replica (-710) */
#define CRESCENT_STORE_EOBJECT_REPLICA_BUSY           5714 /**< write in flight (-714) */
#define CRESCENT_STORE_ETRANSFER_FAIL                 5800 /**< no replica transferred (-800) */
#define CRESCENT_STORE_ECHECKSUM_MISMATCH             5801 /**< bytes fail the checksum (-801) */
#define CRESCENT_STORE_ERPC_FAIL                      5900 /**< master unreachable or odd reply (-900) */
#define CRESCENT_STORE_EUNAVAILABLE_IN_CURRENT_STATUS 6010 /**< wrong state (-1010) */
#define CRESCENT_STORE_ENOT_SUPPORTED                 6012 /**< not supported (-1012) */
#define CRESCENT_STORE_EKEYS_ULTRA_LIMIT              6203 /**< offload queue full (-1203) */
#define CRESCENT_STORE_EUNABLE_OFFLOAD                6300 /**< master without enable_offload (-1300) */
/** @} */

/** Log callback: one line (no newline); level 0 debug, 1 verbose, 2 notice, 3 warning. */
typedef void crescent_store_log_cb(int level, const char *line, void *arg);

/**
 * Store configuration (Mooncake's setup() arguments). Initialise with
 * CRESCENT_STORE_CONFIG_INIT or crescent_store_config_init(); zero fields take defaults.
 */
struct crescent_store_config {
    size_t struct_size;            /**< sizeof(struct crescent_store_config) of the caller */
    const char *local_hostname;    /**< host (or host:port) for the transfer listener and the
                                        master's same-node placement; NULL = "127.0.0.1" */
    const char *protocol;          /**< transfer protocol: "tcp" (default), "shm", "rdma",
                                        "fabric" */
    const char *device_names;      /**< NIC names for rdma/fabric ("" = any) */
    uint64_t global_segment_size;  /**< bytes contributed to the pool; 0 = none */
    uint64_t local_buffer_size;    /**< staging buffer of the copying calls; 0 = 16 MiB */
    const char *tenant;            /**< tenant id; NULL = "default" (accepted, not yet sent) */
    uint32_t master_timeout_ms;    /**< master connect/command timeout; 0 = 5000 */
    crescent_store_log_cb *log_cb; /**< log sink (metrics summary, warnings); NULL = silent */
    void *log_arg;                 /**< passed to log_cb */
    const char *daemon;            /**< a crescent-client daemon on this host: the store becomes
                                        a dummy client forwarding every call to it ("[host:]port"
                                        = the daemon's --port, "@name" an abstract socket, "/path"
                                        a socket file); NULL = a real client. The master argument
                                        is then ignored and local_buffer_size sizes the shared
                                        memory pool (crescent_store_dummy_pool) */
    const char *ssd_offload_path;  /**< a directory for this client's SSD tier (a real client
                                        with a global segment; the master needs
                                        enable_offload): values the master queues are copied
                                        there and stay readable through this client after
                                        eviction (docs/storage.md, "The pool tier"); NULL or
                                        "" = none. MOONCAKE_OFFLOAD_* variables tune it */
    uint32_t failover_timeout_ms;  /**< with an HA master address (redis://, etcd://, k8s://):
                                        how long create and each call wait for a leader during
                                        a fail-over before failing; 0 = 30000 */
};

/** Static initialiser of struct crescent_store_config. */
#define CRESCENT_STORE_CONFIG_INIT \
    { .struct_size = sizeof(struct crescent_store_config) }

/** @brief Zeroes *cfg and sets its struct_size. */
CRESCENT_API void crescent_store_config_init(struct crescent_store_config *cfg);

/** Replicate config (Mooncake ReplicateConfig). Zero = one replica, no pins. */
struct crescent_store_replicate_config {
    unsigned replica_num;                  /**< 1..8 (0 = 1); best effort: at least one lands */
    int with_soft_pin;                     /**< soft pin (evicted only in a second pass) */
    uint64_t soft_pin_ttl_ms;              /**< soft-pin TTL; 0 = the master's default */
    int with_hard_pin;                     /**< never evicted, removable only with force */
    int prefer_same_node;                  /**< try segments of this host first */
    const char *const *preferred_segments; /**< segment names tried first, in order */
    size_t n_preferred_segments;           /**< entries in preferred_segments */
};

/** Replica descriptor (crescent_store_get_replica_desc). */
struct crescent_store_replica {
    char segment[256];  /**< segment name */
    char endpoint[128]; /**< the segment's transport endpoint */
    char protocol[16];  /**< the segment's protocol */
    int complete;       /**< 1 COMPLETE, 0 PROCESSING */
    int is_memory;      /**< 1 for a MEMORY replica */
    uint64_t addr;      /**< absolute address in the owner */
    uint64_t size;      /**< bytes */
};

/**
 * @brief Connects to the master, creates the transfer engine, allocates and mounts the global
 * segment and the local buffer, and starts the ping thread.
 * @param[in] master "host:port" of crescent-master, or the election backend of an HA group of
 * masters: "redis://host:port", "etcd://host:port[;host:port...]" or "k8s://[namespace/]lease";
 * the leader is read from the record of cluster $MC_STORE_CLUSTER_ID (default "crescent") and
 * followed across fail-overs (docs/store.md, "Master address")
 * @param[in] cfg configuration (NULL = defaults)
 * @param[out] out the store; destroy with crescent_store_destroy()
 * @return 0, -EINVAL (NULL or malformed argument, unknown scheme), -ENOMEM,
 * -CRESCENT_STORE_ERPC_FAIL (master or election backend unreachable, no leader recorded within
 * failover_timeout_ms), a master error, or a transfer engine error
 */
CRESCENT_API int crescent_store_create(const char *master, const struct crescent_store_config *cfg,
                                       struct crescent_store **out);

/**
 * @brief Stops the ping thread, unmounts every segment (best effort), frees everything.
 * NULL is fine. Not thread-safe: no other call on st may run or follow.
 */
CRESCENT_API void crescent_store_destroy(struct crescent_store *st);

/**
 * @brief Health: 0 healthy, 1 not set up (st NULL), 2 master unreachable (last ping failed).
 */
CRESCENT_API int crescent_store_health_check(struct crescent_store *st);

/** @brief The 32-hex-digit client id the store registered with. Owned by st. */
CRESCENT_API const char *crescent_store_client_id(const struct crescent_store *st);

/**
 * @brief Registers [addr, addr+size) with the engine and mounts it as a segment of the pool.
 * The memory stays the caller's and must outlive the mount.
 * @param[in] name segment name (NULL = "<client id>-<n>"); copied
 * @return 0, -EINVAL, -EEXIST (overlaps a registration), master errors
 */
CRESCENT_API int crescent_store_mount_segment(struct crescent_store *st, void *addr, size_t size,
                                              const char *name);

/**
 * @brief Unmounts a segment mounted by this store (its replicas are dropped) and unregisters it.
 * @return 0, -CRESCENT_STORE_ESEGMENT_NOT_FOUND, master errors
 */
CRESCENT_API int crescent_store_unmount_segment(struct crescent_store *st, const char *name);

/** @brief Writes the name of the index-th mounted segment to buf. @return 0, -ENOENT, -ENOSPC */
CRESCENT_API int crescent_store_segment_name(struct crescent_store *st, size_t index, char *buf,
                                             size_t len);

/**
 * @brief Registers a caller buffer for put_from / get_into (zero-copy).
 * @return 0, -EINVAL, -EEXIST, transfer engine errors
 */
CRESCENT_API int crescent_store_register_buffer(struct crescent_store *st, void *addr, size_t size);

/** @brief Unregisters a buffer. @return 0 or -ENOENT */
CRESCENT_API int crescent_store_unregister_buffer(struct crescent_store *st, void *addr);

/**
 * @brief Copying put: stages value through the local buffer into every replica.
 * @param[in] rc replicate config (NULL = one replica)
 * @return 0, -CRESCENT_STORE_EOBJECT_ALREADY_EXISTS, -ENO_AVAILABLE_HANDLE, -EINVALID_PARAMS,
 * -ETRANSFER_FAIL (no replica could be written; the write is revoked), ...
 */
CRESCENT_API int crescent_store_put(struct crescent_store *st, const char *key, const void *value,
                                    size_t size, const struct crescent_store_replicate_config *rc);

/** @brief Copying put of the concatenation of n parts. @return as crescent_store_put() */
CRESCENT_API int crescent_store_put_parts(struct crescent_store *st, const char *key,
                                          const void *const *parts, const size_t *sizes, size_t n,
                                          const struct crescent_store_replicate_config *rc);

/**
 * @brief Zero-copy put from a registered buffer (crescent_store_register_buffer).
 * @return as crescent_store_put(); -CRESCENT_STORE_EINVALID_PARAMS when buf is not inside a
 * registered buffer
 */
CRESCENT_API int crescent_store_put_from(struct crescent_store *st, const char *key,
                                         const void *buf, size_t size,
                                         const struct crescent_store_replicate_config *rc);

/** @brief Copying upsert: put, or overwrite an existing object. @return as put */
CRESCENT_API int crescent_store_upsert(struct crescent_store *st, const char *key,
                                       const void *value, size_t size,
                                       const struct crescent_store_replicate_config *rc);

/** @brief Zero-copy upsert from a registered buffer. @return as put_from */
CRESCENT_API int crescent_store_upsert_from(struct crescent_store *st, const char *key,
                                            const void *buf, size_t size,
                                            const struct crescent_store_replicate_config *rc);

/**
 * @brief Copying get: reads the object into a new buffer.
 * @param[out] value malloc'ed bytes (free with crescent_store_free), NULL for size 0
 * @param[out] size object size
 * @return 0, -CRESCENT_STORE_EOBJECT_NOT_FOUND, -EREPLICA_IS_NOT_READY, -ELEASE_EXPIRED,
 * -ECHECKSUM_MISMATCH, -ETRANSFER_FAIL (every replica failed), -ENOMEM
 */
CRESCENT_API int crescent_store_get(struct crescent_store *st, const char *key, void **value,
                                    size_t *size);

/** @brief Frees a buffer returned by crescent_store_get() / crescent_store_batch_get(). */
CRESCENT_API void crescent_store_free(void *p);

/**
 * @brief Zero-copy get into a registered buffer.
 * @return object size (bytes read), -CRESCENT_STORE_EBUFFER_OVERFLOW (cap too small; nothing
 * read), -EINVALID_PARAMS (buf not registered), or as crescent_store_get()
 */
CRESCENT_API int64_t crescent_store_get_into(struct crescent_store *st, const char *key, void *buf,
                                             size_t cap);

/**
 * @brief Batch zero-copy put: one MC.BATCHPUTSTART for all keys, transfers, one end.
 * @param[out] results per-key result (0 or a negative code)
 * @return 0 when every key succeeded, else the first failure's code (see results); -EINVAL
 */
CRESCENT_API int crescent_store_batch_put_from(struct crescent_store *st, const char *const *keys,
                                               const void *const *bufs, const size_t *sizes,
                                               size_t n,
                                               const struct crescent_store_replicate_config *rc,
                                               int *results);

/** @brief Batch copying put. @return as crescent_store_batch_put_from() */
CRESCENT_API int crescent_store_batch_put(struct crescent_store *st, const char *const *keys,
                                          const void *const *values, const size_t *sizes, size_t n,
                                          const struct crescent_store_replicate_config *rc,
                                          int *results);

/**
 * @brief Batch zero-copy get (one MC.BATCHGETREPLICAS).
 * @param[out] results per key: bytes read or a negative code
 * @return 0 when every key succeeded, else the first failure's code
 */
CRESCENT_API int crescent_store_batch_get_into(struct crescent_store *st, const char *const *keys,
                                               void *const *bufs, const size_t *caps, size_t n,
                                               int64_t *results);

/**
 * @brief Batch copying get; values[i] is malloc'ed (crescent_store_free) or NULL on failure.
 * @return as crescent_store_batch_get_into()
 */
CRESCENT_API int crescent_store_batch_get(struct crescent_store *st, const char *const *keys,
                                          size_t n, void **values, size_t *sizes, int64_t *results);

/** @brief 1 readable, 0 missing (grants a read lease like Mooncake), or a negative code. */
CRESCENT_API int crescent_store_is_exist(struct crescent_store *st, const char *key);

/** @brief Per key 1 / 0 / negative into results. @return 0 or a negative code */
CRESCENT_API int crescent_store_batch_is_exist(struct crescent_store *st, const char *const *keys,
                                               size_t n, int *results);

/** @brief Object size, or a negative code (-CRESCENT_STORE_EOBJECT_NOT_FOUND). */
CRESCENT_API int64_t crescent_store_get_size(struct crescent_store *st, const char *key);

/**
 * @brief Removes an object; without force a leased or hard-pinned object gives
 * -CRESCENT_STORE_EOBJECT_HAS_LEASE. @return 0 or a negative code
 */
CRESCENT_API int crescent_store_remove(struct crescent_store *st, const char *key, int force);

/**
 * @brief Removes n objects with one MC.BATCHREMOVE. @param[out] results per key 0 or a
 * negative code (as crescent_store_remove). @return 0 when every key was removed, else the
 * first negative code (of the call or of a key)
 */
CRESCENT_API int crescent_store_batch_remove(struct crescent_store *st, const char *const *keys,
                                             size_t n, int force, int *results);

/**
 * @brief Removes keys matching a POSIX ERE: pool objects and, when the master's embedded segment
 * is in the pool, its keyspace strings (docs/store.md). @return count removed or a negative code
 */
CRESCENT_API int64_t crescent_store_remove_by_regex(struct crescent_store *st, const char *pattern,
                                                    int force);

/**
 * @brief Removes every pool object and every keyspace string MC.REMOVEALL sees (leased ones only
 * with force). @return count removed or a negative code
 */
CRESCENT_API int64_t crescent_store_remove_all(struct crescent_store *st, int force);

/**
 * @brief Drops the replicas of keys that live on this store's segments (only on segment when
 * not NULL/""). @param[out] results per key 1 (dropped) / 0 / negative. @return 0 or negative
 */
CRESCENT_API int crescent_store_batch_replica_clear(struct crescent_store *st,
                                                    const char *const *keys, size_t n,
                                                    const char *segment, int *results);

/**
 * @brief Describes an object's replicas (MC.QUERYKEY: every status, no lease).
 * @return number of replicas (up to max filled in out), or a negative code
 */
CRESCENT_API int crescent_store_get_replica_desc(struct crescent_store *st, const char *key,
                                                 struct crescent_store_replica *out, size_t max);

/** Client metrics (crescent_store_metrics). Interfaces: 0 local memcpy, 1 shm, 2 tcp, 3 other. */
struct crescent_store_metrics {
    uint64_t read_bytes[4];     /**< bytes read per interface */
    uint64_t write_bytes[4];    /**< bytes written per interface */
    uint64_t read_ops[4];       /**< read transfers per interface */
    uint64_t write_ops[4];      /**< write transfers per interface */
    uint64_t read_us[4];        /**< summed read latency per interface (µs) */
    uint64_t write_us[4];       /**< summed write latency per interface (µs) */
    uint64_t staging_bytes;     /**< bytes copied through the local staging buffer */
    uint64_t remounts;          /**< remounts after NEED_REMOUNT or a master restart */
    uint64_t master_reconnects; /**< reconnections to the master */
};

/**
 * @brief Copies the client metrics. With MC_STORE_CLIENT_METRIC=0 only staging_bytes,
 * remounts and master_reconnects are counted. @return 0 or -EINVAL
 */
CRESCENT_API int crescent_store_metrics(struct crescent_store *st,
                                        struct crescent_store_metrics *out);

/**
 * @brief A dummy client's shared memory pool (memfd, mapped by the daemon too): put_from /
 * get_into / the batch zero-copy calls of a dummy client take buffers inside it.
 * @param[out] size pool bytes (may be NULL)
 * @return the pool's base, or NULL (st NULL or a real client)
 */
CRESCENT_API void *crescent_store_dummy_pool(struct crescent_store *st, size_t *size);

/** Daemon statistics (crescent_store_daemon_stats), counted since the daemon started. */
struct crescent_store_daemon_stats {
    uint64_t dummies;         /**< dummy clients attached now (distinct pools) */
    uint64_t dummies_expired; /**< dummy connections dropped after client_live_ttl_sec of
                                   silence */
    uint64_t dummies_closed;  /**< dummy connections closed by the dummy (exit, crash, destroy) */
    uint64_t requests;        /**< requests served */
    uint64_t copied_bytes;    /**< payload bytes that crossed the dummy socket (the copying
                                   calls put / get / upsert / put_parts and their batches) */
    uint64_t zero_copy_bytes; /**< bytes moved straight between a segment and a dummy's pool */
    uint64_t staging_bytes;   /**< the daemon store's staging_bytes (crescent_store_metrics) */
    uint64_t protocol_errors; /**< malformed requests refused (each closes its connection) */
    uint64_t connections;     /**< dummy connections open now (a dummy opens up to 4, as its
                                   concurrent calls need them) */
};

/**
 * @brief Asks the daemon of a dummy client for its statistics.
 * @return 0, -EINVAL (NULL argument or a real client), -CRESCENT_STORE_ERPC_FAIL
 */
CRESCENT_API int crescent_store_daemon_stats(struct crescent_store *st,
                                             struct crescent_store_daemon_stats *out);

/** @brief Static symbolic name: "OBJECT_NOT_FOUND" for store codes, else the transfer API's. */
CRESCENT_API const char *crescent_store_err_name(int err);

/** @brief Mooncake's ErrorCode number for a store code (-704), or 0 for other codes. */
CRESCENT_API int crescent_store_mooncake_code(int err);

/** @brief The last failure's message on the calling thread ("" if none). Per-thread buffer. */
CRESCENT_API const char *crescent_store_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
