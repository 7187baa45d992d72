/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The distributed store's pool metadata: clients, segments, objects, replicas, leases, pins,
 * allocation strategies, zombie puts and eviction. This is the pure core the MC.* command
 * handlers adapt: no sockets, no threads, no clock of its own (every call that needs the time
 * takes `now`, int64 milliseconds on any monotonic clock, non-decreasing across calls).
 *
 * DESIGN. Objects live in one intrusive hash table (common/cm_ht.h); an object record is a
 * 48-byte header, the key bytes and 12 bytes per replica, in one allocation. Each mounted
 * segment owns a TLSF offset allocator (common/cm_tlsf.h) over [0, size); a MEMORY replica is
 * (segment slot, allocator handle), its address base + offset. Eviction samples the table with
 * a persistent scan cursor into a small pool of candidates (as Redis's eviction pool does) and
 * drops the one with the oldest lease, so each victim costs O(sample) work, not a full scan.
 *
 * Errors: functions return 0 (or a count) on success and a negative enum pool_err code on
 * failure; the codes carry Mooncake's ErrorCode names and values.
 *
 * Thread contract: a struct pool is not thread-safe. Every call on one pool must be serialised
 * by the caller (one mutex around the pool, or one pool per shard with its own lock). Strings
 * and descriptors handed out point into the pool and stay valid only until the next call that
 * mutates it; copy them while still holding the lock. The pool never calls back into the
 * caller except through the eviction hook (pool_evict_cb), which must not call the pool.
 */
#ifndef CRESCENT_SERVER_POOL_POOL_H
#define CRESCENT_SERVER_POOL_POOL_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

struct pool;

/* ------------------------------------------------------------------------------------------ */
/* Error codes                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* X(NAME, value, message): Mooncake's ErrorCode names and numbers (include/types.h). */
#define POOL_ERR_MAP(X)                                                      \
    X(INTERNAL_ERROR, -1, "internal error")                                  \
    X(SEGMENT_NOT_FOUND, -101, "segment not found")                          \
    X(SEGMENT_ALREADY_EXISTS, -102, "segment already exists")                \
    X(CLIENT_NOT_FOUND, -103, "client not found")                            \
    X(NO_AVAILABLE_HANDLE, -200, "no space available in any segment")        \
    X(INVALID_KEY, -400, "invalid key")                                      \
    X(INVALID_PARAMS, -600, "invalid parameters")                            \
    X(ILLEGAL_CLIENT, -601, "client does not own this segment or object")    \
    X(INVALID_WRITE, -700, "object is not being written")                    \
    X(INVALID_READ, -701, "invalid read")                                    \
    X(INVALID_REPLICA, -702, "invalid replica")                              \
    X(REPLICA_IS_NOT_READY, -703, "replica is not ready")                    \
    X(OBJECT_NOT_FOUND, -704, "object not found")                            \
    X(OBJECT_ALREADY_EXISTS, -705, "object already exists")                  \
    X(OBJECT_HAS_LEASE, -706, "object has a lease")                          \
    X(LEASE_EXPIRED, -707, "lease expired")                                  \
    X(OBJECT_HAS_REPLICATION_TASK, -708, "object has a replication task")    \
    X(OBJECT_NO_REPLICATION_TASK, -709, "object has no replication task")    \
    X(REPLICA_NOT_FOUND, -710, "replica not found")                          \
    X(REPLICA_ALREADY_EXISTS, -711, "replica already exists")                \
    X(OBJECT_REPLICA_BUSY, -714, "object is being written")                  \
    X(UNAVAILABLE_IN_CURRENT_STATUS, -1010, "unavailable in current status") \
    X(NOT_SUPPORTED, -1012, "not supported")                                 \
    X(KEYS_ULTRA_LIMIT, -1203, "offload queue is full")                      \
    X(UNABLE_OFFLOAD, -1300, "offload is not enabled on the master")         \
    /* EOL */

enum pool_err {
    POOL_OK = 0, /* success */
#define POOL_ERR_ENUM_(name, value, msg) POOL_E##name = (value),
    POOL_ERR_MAP(POOL_ERR_ENUM_)
#undef POOL_ERR_ENUM_
};

/* Static Mooncake name of err ("OBJECT_NOT_FOUND", "OK"), or "UNKNOWN". Thread-safe. */
const char *pool_err_name(int err);

/* Static one-line message for err, or "unknown error". Thread-safe. */
const char *pool_strerror(int err);

/* ------------------------------------------------------------------------------------------ */
/* Limits and enums                                                                            */
/* ------------------------------------------------------------------------------------------ */

#define POOL_MAX_REPLICAS    8                /* replica_num upper bound */
#define POOL_MAX_KEY_LEN     65535u           /* bytes */
#define POOL_MIN_SEGMENT     1024ull          /* Mooncake MIN_SEGMENT_SIZE */
#define POOL_MAX_SEGMENT     (1ull << 40)     /* Mooncake MAX_SEGMENT_SIZE, 1 TiB */
#define POOL_MAX_OBJECT_SIZE POOL_MAX_SEGMENT /* larger values cannot fit anywhere */
#define POOL_MAX_NAME_LEN    1024u            /* segment and host names, endpoints */
#define POOL_MAX_DESC_LEN    65536u           /* transport descriptor blob */

/* Replica placement policy (Mooncake --allocation_strategy). */
enum pool_strategy {
    POOL_STRATEGY_RANDOM = 0,           /* random start, consecutive scan (default) */
    POOL_STRATEGY_FREE_RATIO_FIRST = 1, /* emptiest segment (highest free ratio) first */
    POOL_STRATEGY_LOCAL_FIRST = 2,      /* writer's host first, then random */
};

/* Replica kinds (Mooncake ReplicaType). */
enum pool_replica_type {
    POOL_REPLICA_MEMORY = 0,     /* a buffer in a mounted segment */
    POOL_REPLICA_DISK = 1,       /* shared file system (declared, not implemented) */
    POOL_REPLICA_LOCAL_DISK = 2, /* on a client's SSD tier (pool_offload.c); read via its owner */
};

/* Replica states (Mooncake ReplicaStatus values). */
enum pool_replica_status {
    POOL_REPLICA_PROCESSING = 2, /* allocated, being written; not readable */
    POOL_REPLICA_COMPLETE = 3,   /* readable */
};

/* Segment states (Mooncake SegmentStatus values). */
enum pool_seg_status {
    POOL_SEG_OK = 1,                    /* readable and allocatable */
    POOL_SEG_GRACEFULLY_UNMOUNTING = 4, /* readable, no new allocations */
    POOL_SEG_UNMOUNTING = 5,            /* being torn down (transient inside one call) */
};

/* Client states returned by ping (Mooncake ClientStatus values). */
enum pool_client_status {
    POOL_CLIENT_OK = 1,           /* known and alive */
    POOL_CLIENT_NEED_REMOUNT = 2, /* unknown or expired: register and remount every segment */
};

/* A client id (Mooncake UUID, 16 bytes). */
struct pool_uuid {
    uint8_t b[16];
};

/* ------------------------------------------------------------------------------------------ */
/* Pool configuration, creation                                                                */
/* ------------------------------------------------------------------------------------------ */

/* What the eviction hook learns about a victim before it is dropped. */
struct pool_evict_event {
    const char *key; /* not NUL-terminated; valid during the callback only */
    size_t klen;
    uint64_t size; /* value size in bytes */
    uint32_t nreplicas;
    int soft_pinned; /* evicted in the second pass */
};

/* Return values of pool_evict_cb. */
enum pool_evict_action {
    POOL_EVICT_DROP = 0, /* drop the object (the default) */
    POOL_EVICT_KEEP = 1, /* keep it this cycle (e.g. queued for offload); counted as skipped */
};

/*
 * Offload-on-evict hook: called once per victim, before its replicas are freed. Returns an
 * enum pool_evict_action. Must not call into the pool.
 */
typedef int pool_evict_cb(void *arg, const struct pool_evict_event *ev);

/* Object events the pool reports to its owner (KV events, docs/operations.md). */
enum pool_event_kind {
    POOL_EVENT_STORED,    /* put or upsert end: the object is readable on these segments */
    POOL_EVENT_REMOVED,   /* removed by a call, or its last replica went with its client/segment */
    POOL_EVENT_EVICTED,   /* dropped by eviction */
    POOL_EVENT_OFFLOADED, /* a client's SSD tier holds it now (a LOCAL_DISK replica was added) */
};

/* One object event; everything is valid during the callback only. */
struct pool_event {
    enum pool_event_kind kind;
    const char *key; /* not NUL-terminated */
    size_t klen;
    uint64_t size;           /* value size in bytes */
    const char *const *segs; /* names of the segments holding a memory replica */
    uint32_t nsegs;          /* 0 for removed/evicted objects whose replicas are gone */
};

/*
 * Event hook: called under whatever serializes pool calls (the owner's mutex), once per event,
 * as the change happens. Must be quick and must not call into the pool; the owner queues the
 * event and acts on it after releasing its mutex.
 */
typedef void pool_event_cb(void *arg, const struct pool_event *ev);

/*
 * Segment-drop hook: called once for every segment that goes away (unmount, a graceful unmount
 * completed, its owner expired), before its replicas are dropped; name is valid during the
 * call only. Must not call into the pool. The master's op-log records the drop through it.
 */
typedef void pool_seg_drop_cb(void *arg, const char *name);

/* Pool settings; fill with pool_config_default() and override. Times are milliseconds. */
struct pool_config {
    int64_t client_live_ttl_ms;           /* 10000: silent clients expire */
    int64_t kv_lease_ttl_ms;              /* 10000: read lease (default_kv_lease_ttl) */
    int64_t kv_soft_pin_ttl_ms;           /* 1800000: default soft-pin TTL */
    int64_t max_kv_soft_pin_ttl_ms;       /* 86400000: upper bound for a request's TTL */
    int allow_evict_soft_pinned;          /* 1: second eviction pass may take soft pins */
    double eviction_ratio;                /* 0.05: share of objects evicted per cycle */
    double eviction_high_watermark_ratio; /* 0.90: used/total that triggers eviction */
    int64_t put_start_discard_timeout_ms; /* 30000: a newer put may pre-empt after this */
    int64_t put_start_release_timeout_ms; /* 600000: the sweep frees zombie puts after this */
    enum pool_strategy strategy;          /* POOL_STRATEGY_RANDOM */
    uint32_t alloc_align;                 /* 64: buffer alignment (power of two, >= 8) */
    uint32_t evict_sample;                /* 16: objects examined per victim */
    int64_t view_version;                 /* returned by ping (the master's view) */
    uint64_t seed;                        /* PRNG and hash seed; 0 = random */
    pool_evict_cb *on_evict;              /* optional offload-on-evict hook */
    void *on_evict_arg;
    pool_event_cb *on_event; /* optional object-event hook */
    void *on_event_arg;
    /* Client SSD tiers (pool_offload.c; Mooncake's flags of the same names). */
    int enable_offload;                     /* 0: clients may mount local-disk segments */
    int offload_on_evict;                   /* 0: queue at eviction instead of at put end */
    int offload_force_evict;                /* 0: victims beyond the per-cycle cap are dropped */
    uint32_t offloading_queue_limit;        /* 50000: tasks per client queue (1..1e8) */
    double offload_cap_ratio;               /* 0.5: per-cycle cap = queue limit x ratio */
    int promotion_on_hit;                   /* 0: readers may promote disk-only objects to memory */
    uint32_t promotion_admission_threshold; /* 2: disk-only reads before a reader promotes */
    pool_seg_drop_cb *on_seg_drop;          /* optional segment-drop hook */
    void *on_seg_drop_arg;
};

/* Fills cfg with Mooncake's defaults (above). */
void pool_config_default(struct pool_config *cfg);

/*
 * Creates an empty pool. Returns 0 and *out, or POOL_EINVALID_PARAMS for out-of-range
 * settings (ratios outside [0, 1], non-positive TTLs, a bad alignment). Memory comes from
 * cm_malloc (aborts on OOM). The caller destroys it with pool_destroy().
 */
int pool_create(const struct pool_config *cfg, struct pool **out);

/*
 * Replaces the run-time settings of p (TTLs, timeouts, eviction ratios, strategy, soft-pin
 * rules) with those of cfg; alloc_align, seed, view_version and the eviction hook stay as
 * created. Returns 0 or POOL_EINVALID_PARAMS (then nothing changes). New TTLs apply to leases,
 * pins and deadlines granted afterwards and to the next expiry checks.
 */
int pool_reconfigure(struct pool *p, const struct pool_config *cfg);

/* Frees every object, segment and client record. NULL is accepted. */
void pool_destroy(struct pool *p);

/* ------------------------------------------------------------------------------------------ */
/* Clients                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/*
 * Registers client id on host (the name the local_first strategy compares with segment
 * owners' hosts), or refreshes it: idempotent, marks it alive at now. host is copied.
 * Returns 0 or POOL_EINVALID_PARAMS (NULL/empty/too long host).
 */
int pool_client_register(struct pool *p, const struct pool_uuid *id, const char *host, int64_t now);

/* Ping reply (Mooncake PingResponse). */
struct pool_ping_reply {
    int64_t view_version;
    enum pool_client_status status;
};

/*
 * Heartbeat. A known client is refreshed and answered POOL_CLIENT_OK; an unknown client
 * (never registered, or expired and forgotten) gets POOL_CLIENT_NEED_REMOUNT and should call
 * pool_client_register() and pool_segment_remount(). Always returns 0.
 */
int pool_client_ping(struct pool *p, const struct pool_uuid *id, int64_t now,
                     struct pool_ping_reply *out);

/* Returns 1 when id is a known (live) client, 0 otherwise. */
int pool_client_exists(const struct pool *p, const struct pool_uuid *id);

/* ------------------------------------------------------------------------------------------ */
/* Segments                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/*
 * An allocator a segment may share with its owner instead of the pool's own TLSF: the master's
 * embedded segment, whose space also holds the values of the Redis keyspace. The pool calls it
 * under its own serialisation; the owner makes it safe against its other users. Handles are
 * nonzero; offsets are relative to the segment base.
 */
struct pool_seg_allocator {
    /* Allocates len bytes; returns a handle and the offset in *off, or 0 when nothing fits. */
    uint32_t (*alloc)(void *arg, uint64_t len, uint64_t *off);
    void (*free)(void *arg, uint32_t handle);           /* frees a live handle */
    uint64_t (*offset)(void *arg, uint32_t handle);     /* offset of a live handle */
    uint64_t (*block_size)(void *arg, uint32_t handle); /* its capacity (>= len asked) */
    uint64_t (*used)(void *arg); /* bytes allocated by every user of the space, the pool's too */
    void *arg;
};

/* Input of a mount: the memory a client contributes. Strings and blob are copied. */
struct pool_segment_spec {
    const char *name;     /* unique across the pool, e.g. "host:port" */
    uint64_t base;        /* address of the region in the owner's address space */
    uint64_t size;        /* bytes, POOL_MIN_SEGMENT..POOL_MAX_SEGMENT */
    const char *endpoint; /* transport endpoint ("10.0.0.1:12345"); may be NULL */
    const char *protocol; /* "tcp", "rdma", "efa", "shm"...; NULL = "tcp" */
    const void *desc;     /* opaque transport descriptor (rkeys, fabric address); may be NULL */
    size_t desc_len;
};

/* A segment as reported by pool_segment_query(); strings point into the pool. */
struct pool_segment_info {
    const char *name;
    struct pool_uuid owner;
    const char *owner_host;
    uint64_t base;
    uint64_t size;
    const char *endpoint;
    const char *protocol;
    const void *desc;
    size_t desc_len;
    enum pool_seg_status status;
    uint64_t used;       /* sum of the sizes of the buffers allocated in it */
    uint64_t allocated;  /* the allocator's view: used rounded up to alloc_align per buffer */
    uint64_t nbuffers;   /* live buffers (replicas plus discarded zombie buffers) */
    int64_t grace_until; /* GRACEFULLY_UNMOUNTING: when the unmount completes */
};

/*
 * Mounts spec for client: creates the segment's allocator. Idempotent: mounting the same name
 * with the same owner, base and size again returns 0 (endpoint, protocol and descriptor are
 * refreshed). Errors: POOL_ECLIENT_NOT_FOUND (client not registered), POOL_EINVALID_PARAMS
 * (empty or long name, size out of range, base + size overflows, overlap with another segment
 * of the same client), POOL_ESEGMENT_ALREADY_EXISTS (the name is taken by another client or
 * with another geometry).
 */
int pool_segment_mount(struct pool *p, const struct pool_uuid *client,
                       const struct pool_segment_spec *spec, int64_t now);

/*
 * Mounts spec for client as pool_segment_mount() does, but with buffers from alloc (copied)
 * instead of a TLSF of the pool's own: the space is shared with another user (the master's
 * keyspace). Such a segment reports the allocator's used() as its used and allocated bytes, and
 * that figure drives the high-watermark eviction and free_ratio_first; snapshots leave it and
 * its replicas out (its bytes do not outlive the process); pool_object_restore() refuses it.
 * Its owner becomes a local client that never expires. Mounting it again refreshes the
 * transport. Errors as pool_segment_mount(), plus POOL_EINVALID_PARAMS for an incomplete alloc.
 */
int pool_segment_mount_shared(struct pool *p, const struct pool_uuid *client,
                              const struct pool_segment_spec *spec,
                              const struct pool_seg_allocator *alloc, int64_t now);

/*
 * Remounts every segment in specs[0..n) after a NEED_REMOUNT (mount for each, idempotent) and
 * marks the client alive. Stops at and returns the first error; the ones before stay mounted.
 */
int pool_segment_remount(struct pool *p, const struct pool_uuid *client,
                         const struct pool_segment_spec *specs, size_t n, int64_t now);

/*
 * Unmounts segment name now: every replica on it is dropped, objects left with none are
 * erased, and its allocator is destroyed. Errors: POOL_ESEGMENT_NOT_FOUND,
 * POOL_EILLEGAL_CLIENT (client does not own it). O(objects).
 */
int pool_segment_unmount(struct pool *p, const struct pool_uuid *client, const char *name,
                         int64_t now);

/*
 * Starts a graceful unmount: the segment takes no new allocation, existing replicas stay
 * readable until removed or evicted; pool_tick() completes the unmount once the segment is
 * empty or at now + grace_ms (grace_ms >= 0). Errors as pool_segment_unmount(), plus
 * POOL_EUNAVAILABLE_IN_CURRENT_STATUS when it is already unmounting.
 */
int pool_segment_unmount_graceful(struct pool *p, const struct pool_uuid *client, const char *name,
                                  int64_t grace_ms, int64_t now);

/* Fills *out for segment name. Returns 0 or POOL_ESEGMENT_NOT_FOUND. */
int pool_segment_query(const struct pool *p, const char *name, struct pool_segment_info *out);

/* Visitor for pool_segment_foreach(); info is valid during the call. */
typedef void pool_segment_visit_cb(void *arg, const struct pool_segment_info *info);

/* Calls cb for every mounted segment, in slot order. cb must not call the pool. */
void pool_segment_foreach(const struct pool *p, pool_segment_visit_cb *cb, void *arg);

/*
 * Returns 0 when [addr, addr + len) lies inside segment name, POOL_ESEGMENT_NOT_FOUND or
 * POOL_EINVALID_PARAMS otherwise: the check for descriptors reported by clients.
 */
int pool_segment_check_range(const struct pool *p, const char *name, uint64_t addr, uint64_t len);

/* ------------------------------------------------------------------------------------------ */
/* Objects                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Placement and pinning of a put (Mooncake ReplicateConfig). */
struct pool_put_config {
    uint32_t replica_num;                  /* 1..POOL_MAX_REPLICAS, each on its own segment */
    int with_soft_pin;                     /* evicted only in the second pass */
    int64_t soft_pin_ttl_ms;               /* 0 = kv_soft_pin_ttl_ms; <= max_kv_soft_pin_ttl */
    int with_hard_pin;                     /* never evicted; set at creation only */
    int prefer_same_node;                  /* segments owned by the writer's host first */
    const char *const *preferred_segments; /* names tried first, in order */
    size_t npreferred;
};

/* Fills c with one replica, no pins, no preferences. */
void pool_put_config_default(struct pool_put_config *c);

/* One replica as handed to clients (Mooncake Replica::Descriptor); strings point into the pool. */
struct pool_replica_desc {
    enum pool_replica_type type;
    enum pool_replica_status status;
    const char *segment;  /* segment name */
    const char *endpoint; /* segment's transport endpoint ("" when none) */
    const char *protocol;
    const void *seg_desc; /* segment's transport descriptor blob */
    size_t seg_desc_len;
    uint64_t seg_gen; /* never 0; equal only while segment, endpoint, protocol and seg_desc
                         are the same (reply writers may cache what they render of them) */
    uint64_t addr;    /* absolute: segment base + buffer offset */
    uint64_t size;    /* value size */
};

/*
 * Put start: allocates replica_num PROCESSING buffers of size bytes on distinct segments (best
 * effort: at least one), honouring preferred_segments, then prefer_same_node, then the pool's
 * strategy. When nothing fits it evicts (pool_evict) and retries once. Fills out[0..*nout)
 * (out has room for POOL_MAX_REPLICAS). Errors: POOL_ECLIENT_NOT_FOUND, POOL_EINVALID_PARAMS
 * (empty/long key, size 0 or > POOL_MAX_OBJECT_SIZE, replica_num 0 or too big, soft-pin TTL
 * above the maximum), POOL_EOBJECT_ALREADY_EXISTS (readable, or another put started less than
 * put_start_discard_timeout ago; an older unfinished put is pre-empted and its buffers are
 * freed after put_start_release_timeout), POOL_ENO_AVAILABLE_HANDLE.
 */
int pool_put_start(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                   uint64_t size, const struct pool_put_config *cfg, int64_t now,
                   struct pool_replica_desc *out, size_t *nout);

/*
 * Put end: the writer's PROCESSING replicas become COMPLETE (readable); the soft pin starts.
 * Errors: POOL_EOBJECT_NOT_FOUND, POOL_EILLEGAL_CLIENT (not the writer), POOL_EINVALID_WRITE
 * (no write in flight).
 */
int pool_put_end(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                 int64_t now);

/*
 * Put revoke: frees the PROCESSING buffers of the writer's put and erases the object. Errors
 * as pool_put_end().
 */
int pool_put_revoke(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                    int64_t now);

/*
 * Upsert start: a missing key is a put start. A readable object of the same size with no
 * active lease is rewritten in place: its replicas go back to PROCESSING with the same
 * addresses. Otherwise (other size, or a reader holds a lease) the old buffers are released
 * (after the lease when there is one) and new ones allocated with cfg. Pins stay as they were
 * (hard pin is immutable; with_soft_pin renews the soft pin). Errors as pool_put_start(), but
 * a write in flight younger than the discard timeout gives POOL_EOBJECT_REPLICA_BUSY and a
 * copy/move in flight POOL_EOBJECT_HAS_REPLICATION_TASK. If a reallocation finds no space the
 * old value is gone (POOL_ENO_AVAILABLE_HANDLE).
 */
int pool_upsert_start(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                      uint64_t size, const struct pool_put_config *cfg, int64_t now,
                      struct pool_replica_desc *out, size_t *nout);

/* Upsert end: same as pool_put_end(). */
int pool_upsert_end(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                    int64_t now);

/* Upsert revoke: same as pool_put_revoke() (the old value was being overwritten: it is gone). */
int pool_upsert_revoke(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                       int64_t now);

/*
 * Returns 1 when key has a readable replica (and grants or extends its read lease, as
 * Mooncake's ExistKey does), 0 when it does not exist or is still being written, or
 * POOL_EINVALID_PARAMS for a bad key.
 */
int pool_exist(struct pool *p, const void *key, size_t klen, int64_t now);

/*
 * Get replica list: fills out[0..*nout) with the readable replicas (room for
 * POOL_MAX_REPLICAS) and grants a read lease: lease_until = max(lease_until, now + ttl).
 * *lease_ttl_ms (may be NULL) receives the TTL. Errors: POOL_EOBJECT_NOT_FOUND,
 * POOL_EREPLICA_IS_NOT_READY (being written), POOL_EINVALID_PARAMS.
 */
int pool_get_replicas(struct pool *p, const void *key, size_t klen, int64_t now,
                      struct pool_replica_desc *out, size_t *nout, int64_t *lease_ttl_ms);

/* An object as seen by an administrator (no lease granted); see pool_object_query(). */
struct pool_object_info {
    uint64_t size;
    uint32_t nreplicas;
    int inflight; /* a put/upsert is being written */
    int task;     /* 0, or 1 = a copy / 2 = a move in flight */
    int hard_pinned;
    int64_t soft_pin_until; /* 0 when not soft-pinned (meaningful once written) */
    int64_t lease_until;    /* read lease deadline (<= now: none) */
    struct pool_replica_desc replicas[POOL_MAX_REPLICAS];
};

/*
 * Admin read of key: fills *out without granting a lease or touching eviction order.
 * Returns 0, POOL_EOBJECT_NOT_FOUND or POOL_EINVALID_PARAMS.
 */
int pool_object_query(const struct pool *p, const void *key, size_t klen,
                      struct pool_object_info *out);

/*
 * Removes key and frees its buffers. Errors: POOL_EOBJECT_NOT_FOUND,
 * POOL_EREPLICA_IS_NOT_READY (a write is in flight: revoke it instead, even with force),
 * POOL_EOBJECT_HAS_REPLICATION_TASK (a copy/move in flight, unless force; force frees its
 * targets too), POOL_EOBJECT_HAS_LEASE (an active read lease, or a hard pin, unless force).
 */
int pool_remove(struct pool *p, const void *key, size_t klen, int force, int64_t now);

/*
 * Removes every key matching the POSIX extended regular expression pattern (unanchored, as
 * regexec does; keys may hold any byte). Skips writes in flight, and leased, hard-pinned or
 * copying/moving objects unless force. Returns the number removed, or POOL_EINVALID_PARAMS for a
 * bad pattern. O(objects).
 */
long pool_remove_regex(struct pool *p, const char *pattern, int force, int64_t now);

/*
 * The key-matching rule of pool_remove_regex() and pool_keys_regex(): 1 when re (compiled with
 * REG_EXTENDED) matches within the whole of key's klen bytes (any byte, NUL included; no NUL
 * needed after them), else 0. regexec gets a NUL-terminated copy, because sanitizers' regexec
 * reads up to a NUL even under REG_STARTEND: on the stack for keys under 256 bytes, else a
 * heap copy freed before return. Thread-safe (re is only read).
 */
int pool_key_regex_match(const regex_t *re, const void *key, size_t klen);

/* Visitor for pool_keys_regex(); key is valid during the call only. */
typedef void pool_key_visit_cb(void *arg, const char *key, size_t klen);

/*
 * Calls cb for every readable key (no write in flight) matching the POSIX extended regular
 * expression pattern (unanchored). Grants no lease. cb must not call the pool. Returns the
 * number of keys visited or POOL_EINVALID_PARAMS for a bad pattern. O(objects).
 */
long pool_keys_regex(const struct pool *p, const char *pattern, pool_key_visit_cb *cb, void *arg);

/* Removes every object (same skipping rules as pool_remove_regex). Returns the count. */
long pool_remove_all(struct pool *p, int force, int64_t now);

/* ---- Redis views (pool_redis.c): what plain DEL, FLUSHALL, SCAN and DBSIZE do -------------- */

/*
 * Redis DEL of key: removes the object at once even when it is leased or hard-pinned; the
 * buffers of a leased object stay reserved (not reused) until its lease ends, so a reader in
 * flight still reads the old bytes. Errors: POOL_EOBJECT_NOT_FOUND, POOL_EINVALID_PARAMS,
 * POOL_EREPLICA_IS_NOT_READY (a write in flight: the key is not readable yet),
 * POOL_EOBJECT_HAS_REPLICATION_TASK (a copy/move in flight: its client is writing the targets).
 */
int pool_unlink(struct pool *p, const void *key, size_t klen, int64_t now);

/* pool_unlink() of every object it may take (skips writes and copies/moves in flight). Returns
 * the number removed. O(objects). */
long pool_unlink_all(struct pool *p, int64_t now);

/*
 * One SCAN step over the readable keys: calls cb for the keys of the buckets from cursor (0 to
 * start) until at least count objects were looked at, and returns the next cursor, 0 when the
 * scan is complete. Every key readable for the whole scan is visited at least once (some may
 * be visited twice), whatever the table does between calls. Grants no lease; cb must not call
 * the pool.
 */
uint64_t pool_scan(const struct pool *p, uint64_t cursor, size_t count, pool_key_visit_cb *cb,
                   void *arg);

/* Number of objects, readable or being written. O(1). */
uint64_t pool_object_count(const struct pool *p);

/* Number of readable objects (no write in flight). O(writes in flight). */
uint64_t pool_readable_count(const struct pool *p);

/*
 * Batch replica clear: for each keys[i], drops the replicas that live on segments owned by
 * client (only segment_name when it is non-NULL and non-empty); an object left with none is
 * erased. Objects being written, copied/moved or under an active lease are left alone. cleared[i]
 * (may be NULL) is set to 1 when keys[i] lost a replica, else 0. Returns the number of keys cleared
 * or POOL_ECLIENT_NOT_FOUND, POOL_ESEGMENT_NOT_FOUND, POOL_EILLEGAL_CLIENT (segment_name is not the
 * client's).
 */
long pool_batch_replica_clear(struct pool *p, const struct pool_uuid *client,
                              const void *const *keys, const size_t *klens, size_t n,
                              const char *segment_name, int64_t now, uint8_t *cleared);

/* One replica of an object being restored: the segment and the absolute address. */
struct pool_restore_replica {
    const char *segment;
    uint64_t addr;
};

/*
 * Restores a readable object as a log recorded it: key with COMPLETE MEMORY replicas of size
 * bytes at exactly reps[i].addr in mounted segment reps[i].segment (the op-log replay of a new
 * leader). hard_pin pins it; soft_pin_ms > 0 soft-pins it until now + soft_pin_ms. An existing
 * readable object under key is replaced (its buffers freed first). Errors:
 * POOL_EINVALID_PARAMS (bad key, size, n = 0 or > POOL_MAX_REPLICAS, a segment named twice),
 * POOL_ESEGMENT_NOT_FOUND, POOL_EOBJECT_REPLICA_BUSY (a write or copy/move of key in flight),
 * POOL_EINVALID_REPLICA (an address outside its segment, misaligned, or overlapping a live
 * buffer); after an error the key does not exist. O(replicas) when objects are restored in
 * increasing address order per segment.
 */
int pool_object_restore(struct pool *p, const void *key, size_t klen, uint64_t size, int hard_pin,
                        int64_t soft_pin_ms, const struct pool_restore_replica *reps, size_t n,
                        int64_t now);

/*
 * Marks every known client alive at now (as if each had just pinged): a new HA leader calls it
 * when it starts serving a replayed pool, so the owners' remount grace period (the client live
 * TTL) starts then, not when the replay began.
 */
void pool_clients_touch(struct pool *p, int64_t now);

/* ------------------------------------------------------------------------------------------ */
/* Replica copy and move (client-executed)                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Buffers of a copy/move: read the source, write the targets, then end (or revoke) it. */
struct pool_copy_plan {
    struct pool_replica_desc source;
    struct pool_replica_desc targets[POOL_MAX_REPLICAS];
    size_t ntargets;
};

/*
 * Copy start: allocates PROCESSING buffers for key on every segment in tgt_segments and names
 * the readable replica on src_segment as the source; client executes the copy. Until the copy
 * ends the object is not evicted, upserted or removed without force. All or nothing.
 * Errors: POOL_EINVALID_PARAMS (no or too many targets, a repeated target), POOL_ECLIENT_NOT_FOUND,
 * POOL_EOBJECT_NOT_FOUND, POOL_EREPLICA_IS_NOT_READY (being written),
 * POOL_EOBJECT_HAS_REPLICATION_TASK (a copy/move is already in flight), POOL_EREPLICA_NOT_FOUND
 * (no readable replica on src_segment), POOL_ESEGMENT_NOT_FOUND (a target),
 * POOL_EOBJECT_ALREADY_EXISTS (a target already holds a replica), POOL_ENO_AVAILABLE_HANDLE.
 */
int pool_copy_start(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                    const char *src_segment, const char *const *tgt_segments, size_t ntgt,
                    int64_t now, struct pool_copy_plan *out);

/*
 * Copy end: the targets become readable. Errors: POOL_EOBJECT_NOT_FOUND,
 * POOL_ECLIENT_NOT_FOUND, POOL_EOBJECT_NO_REPLICATION_TASK (no copy in flight),
 * POOL_EILLEGAL_CLIENT (another client started it), POOL_EREPLICA_NOT_FOUND (every target
 * segment was unmounted meanwhile; the task is revoked, the source stays).
 */
int pool_copy_end(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                  int64_t now);

/* Copy revoke: frees the targets. Errors as pool_copy_end(). */
int pool_copy_revoke(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                     int64_t now);

/*
 * Move start: as a copy to one target, except that move end also drops the source replica
 * (its buffer is kept until a reader's lease ends). src and tgt must differ.
 */
int pool_move_start(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                    const char *src_segment, const char *tgt_segment, int64_t now,
                    struct pool_copy_plan *out);

/* Move end: the target becomes readable and the source goes. Errors as pool_copy_end(). */
int pool_move_end(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                  int64_t now);

/* Move revoke: frees the target; the source stays. Errors as pool_copy_end(). */
int pool_move_revoke(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                     int64_t now);

/* ------------------------------------------------------------------------------------------ */
/* Client SSD tiers: local-disk segments and offload queues (pool_offload.c)                  */
/* ------------------------------------------------------------------------------------------ */

/*
 * A client with an SSD tier mounts one local-disk segment. With enable_offload the pool queues
 * objects for the client that owns the segment of their memory replica: at put end, or, with
 * offload_on_evict, when eviction picks them (the victim then stays in memory until offloaded;
 * beyond the per-cycle cap of offloading_queue_limit x offload_cap_ratio it stays too, or is
 * dropped with offload_force_evict). The client fetches tasks, copies the bytes from its own
 * segment to its disk and reports each success; the pool then adds a LOCAL_DISK replica owned
 * by that client. Eviction of an object with a LOCAL_DISK replica frees only its memory
 * replicas; an object left with LOCAL_DISK replicas only is read through their owner.
 */

/* Counters of the offload machinery (pool-wide). */
struct pool_offload_stats {
    uint64_t disks;           /* mounted local-disk segments */
    uint64_t queued;          /* tasks pushed onto client queues since creation */
    uint64_t fetched;         /* tasks handed to clients */
    uint64_t done;            /* LOCAL_DISK replicas added (including re-registrations) */
    uint64_t queue_full;      /* pushes refused by a full queue (KEYS_ULTRA_LIMIT) */
    uint64_t cap_kept;        /* victims kept in memory beyond the per-cycle cap */
    uint64_t force_evicted;   /* victims dropped beyond the cap (offload_force_evict) */
    uint64_t disk_replicas;   /* LOCAL_DISK replicas now */
    uint64_t promoted;        /* promotions started (pool_promote_start) */
    uint64_t disk_reads;      /* reads of disk-only objects counted (pool_offload_read_hit) */
    uint64_t disk_evicted;    /* LOCAL_DISK replicas dropped on their owner's report */
    uint64_t removes_queued;  /* disk records queued for deletion by their owner */
    uint64_t removes_fetched; /* ... handed to the owner (pool_disk_remove_fetch) */
    uint64_t removes_dropped; /* ... not queued: the owner's removal queue was full */
};

/* Fills *st. O(clients). */
void pool_offload_get_stats(const struct pool *p, struct pool_offload_stats *st);

/*
 * Mounts client's local-disk segment; endpoint (copied, 1..POOL_MAX_NAME_LEN bytes) is where
 * readers ask the client for its offloaded bytes, and names the segment in descriptors.
 * Mounting again refreshes the endpoint (a restarted client re-mounts). Errors:
 * POOL_ECLIENT_NOT_FOUND, POOL_EUNABLE_OFFLOAD (enable_offload is off), POOL_EINVALID_PARAMS.
 */
int pool_disk_mount(struct pool *p, const struct pool_uuid *client, const char *endpoint,
                    int64_t now);

/*
 * Unmounts client's local-disk segment: its queue is discarded and every LOCAL_DISK replica it
 * owns is dropped (objects left with none are erased). Errors: POOL_ECLIENT_NOT_FOUND,
 * POOL_ESEGMENT_NOT_FOUND (none mounted). O(objects).
 */
int pool_disk_unmount(struct pool *p, const struct pool_uuid *client, int64_t now);

/* A client's local-disk segment as seen by an administrator; endpoint points into the pool. */
struct pool_disk_info {
    const char *endpoint;
    uint64_t queued;   /* tasks waiting in its queue */
    uint64_t removes;  /* disk records waiting to be deleted by the client */
    uint64_t replicas; /* LOCAL_DISK replicas it owns */
    uint64_t bytes;    /* their value bytes */
};

/* Fills *out for client. Errors: POOL_ECLIENT_NOT_FOUND, POOL_ESEGMENT_NOT_FOUND. */
int pool_disk_query(const struct pool *p, const struct pool_uuid *client,
                    struct pool_disk_info *out);

/* One offload task: copy size bytes at src (a MEMORY replica on one of the client's own
 * segments) to the client's disk under key. key points into the pool. */
struct pool_offload_task {
    const char *key;
    size_t klen;
    uint64_t size;
    struct pool_replica_desc src;
};

/*
 * Pops up to max tasks from client's queue into out[0..n) and returns n. Entries whose object
 * is gone, being written, already on this client's disk or without a readable MEMORY replica on
 * the client's segments are skipped. Each returned object gets a read lease (kv_lease_ttl), so
 * its buffer is neither evicted nor reused while the client copies it (a copy that outlives the
 * lease must not be reported), and a pending report that pool_offload_done() checks. Errors:
 * POOL_ECLIENT_NOT_FOUND, POOL_ESEGMENT_NOT_FOUND (no local-disk segment), POOL_EINVALID_PARAMS.
 */
long pool_offload_fetch(struct pool *p, const struct pool_uuid *client, size_t max, int64_t now,
                        struct pool_offload_task *out);

/*
 * Records that client holds key (size bytes) on its disk: adds a COMPLETE LOCAL_DISK replica
 * owned by client. For a key this client fetched, only if the object fetched is still the
 * key's value (not removed, replaced or rewritten in place since): else
 * POOL_EOBJECT_NOT_FOUND. For a key not fetched (the re-registration of a restart scan), a
 * missing key is created with that replica alone, and a live value the client did not fetch
 * answers POOL_EOBJECT_ALREADY_EXISTS (a disk copy never overrides it). Idempotent. Other
 * errors: POOL_ECLIENT_NOT_FOUND, POOL_ESEGMENT_NOT_FOUND (no local-disk segment),
 * POOL_EINVALID_PARAMS (bad key, size 0), POOL_EINVALID_REPLICA (another size, or no room for
 * one more replica), POOL_EREPLICA_IS_NOT_READY (a write is in flight),
 * POOL_EOBJECT_HAS_REPLICATION_TASK.
 */
int pool_offload_done(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                      uint64_t size, int64_t now);

/*
 * Records that client's storage backend dropped key's record (its eviction, quota, or a CRC
 * failure on read): the object's LOCAL_DISK replica owned by client is dropped, and the object
 * is erased when no replica is left (as when a client expires). Errors: POOL_ECLIENT_NOT_FOUND,
 * POOL_ESEGMENT_NOT_FOUND (no local-disk segment), POOL_EINVALID_PARAMS (bad key),
 * POOL_EOBJECT_NOT_FOUND, POOL_EILLEGAL_CLIENT (only other clients hold it on disk),
 * POOL_EREPLICA_NOT_FOUND (no LOCAL_DISK replica at all).
 */
int pool_offload_evicted(struct pool *p, const struct pool_uuid *client, const void *key,
                         size_t klen, int64_t now);

/* A disk record its owner should delete; key is a cm_malloc copy the caller frees. */
struct pool_disk_remove {
    char *key;
    size_t klen;
};

/*
 * Disk record removals: when an object with a LOCAL_DISK replica is removed, replaced or loses
 * that replica for any reason other than its owner's report or the owner's disk going, the key
 * is queued for the owner (at most offloading_queue_limit keys per owner, deduplicated; beyond
 * that stats.removes_dropped counts it). Fetching a task for the key or a report that the client
 * holds it again cancels the removal. This pops up to max queued keys into out[0..n) (the
 * caller frees each key with cm_free) and returns n. Errors: POOL_ECLIENT_NOT_FOUND,
 * POOL_ESEGMENT_NOT_FOUND, POOL_EINVALID_PARAMS.
 */
long pool_disk_remove_fetch(struct pool *p, const struct pool_uuid *client, size_t max, int64_t now,
                            struct pool_disk_remove *out);

/*
 * Counts one read (a granted MC.GETREPLICAS) of the object key when it is disk-only: it has a
 * LOCAL_DISK replica and no COMPLETE MEMORY replica. The count lives in the object's first
 * LOCAL_DISK replica, restarts at 0 when a promotion starts and does not move while a
 * promotion (or another copy) is in flight. Returns 1 when the caller should tell this reader
 * to promote the object: promotion_on_hit is on and the count has reached
 * promotion_admission_threshold (every later read says so until a promotion starts); else 0.
 * stats.disk_reads counts every read of a disk-only object. Not thread-safe.
 */
int pool_offload_read_hit(struct pool *p, const void *key, size_t klen);

/*
 * Promotion on hit: with promotion_on_hit, a client that has just read a disk-only object (all
 * its replicas LOCAL_DISK) may give it a memory replica again. Allocates one PROCESSING MEMORY
 * buffer (placement as a one-replica put, evicting once when nothing fits) and describes it in
 * *out; the client writes the value there and completes it with pool_copy_end() (or gives up
 * with pool_copy_revoke()), as a copy. Errors: POOL_EINVALID_PARAMS, POOL_ECLIENT_NOT_FOUND,
 * POOL_EUNAVAILABLE_IN_CURRENT_STATUS (promotion_on_hit off), POOL_EOBJECT_NOT_FOUND,
 * POOL_EREPLICA_IS_NOT_READY, POOL_EOBJECT_HAS_REPLICATION_TASK, POOL_EOBJECT_ALREADY_EXISTS (a
 * memory replica exists), POOL_EREPLICA_NOT_FOUND (no LOCAL_DISK replica),
 * POOL_ENO_AVAILABLE_HANDLE.
 */
int pool_promote_start(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                       int64_t now, struct pool_replica_desc *out);

/* ------------------------------------------------------------------------------------------ */
/* Housekeeping, eviction, statistics                                                          */
/* ------------------------------------------------------------------------------------------ */

/* What one pool_tick() did. */
struct pool_tick_report {
    uint32_t clients_expired;
    uint32_t zombies_released; /* puts and copies/moves older than the release timeout */
    uint32_t discarded_freed;  /* pre-empted / superseded buffers released */
    uint32_t segments_unmounted;
    uint64_t objects_evicted;
};

/*
 * Periodic work, meant to run every ~1 s (tests call it with any clock): expires clients
 * silent for client_live_ttl (their segments are unmounted, replicas dropped, objects with
 * none erased; their unfinished puts and copies become ownerless zombies), releases zombie
 * puts, abandoned copies/moves and discarded buffers whose time has come, completes graceful
 * unmounts, and evicts when the pool is above the high watermark or an allocation failed since the
 * last tick. report may be NULL.
 */
void pool_tick(struct pool *p, int64_t now, struct pool_tick_report *report);

/*
 * One eviction cycle across every mounted segment: evicts about eviction_ratio of the objects
 * (more when far above the watermark), at least need_bytes of values, oldest lease first;
 * never an object that is leased, hard-pinned or being written; soft-pinned objects only in a
 * second pass when the first did not free enough (need_bytes, or down to the watermark).
 * Returns the number of objects evicted.
 */
uint64_t pool_evict(struct pool *p, int64_t now, uint64_t need_bytes);

/*
 * Evicts objects that hold a memory replica on segment name, with the rules and order of
 * pool_evict(), until need_bytes of their values were freed there (a shared segment whose other
 * user needs room). Returns the number of objects evicted (0 when name is not mounted).
 */
uint64_t pool_evict_segment(struct pool *p, const char *name, int64_t now, uint64_t need_bytes);

/* Pool-wide counters. */
struct pool_stats {
    uint64_t objects;
    uint64_t inflight;       /* objects with a write in flight */
    uint64_t segments;       /* mounted */
    uint64_t clients;        /* known */
    uint64_t capacity;       /* bytes in mounted segments */
    uint64_t used;           /* value bytes in buffers (replicas and discarded buffers) */
    uint64_t allocated;      /* allocator bytes (rounded) */
    uint64_t discarded;      /* buffers waiting for their release time */
    uint64_t evicted;        /* objects evicted since creation */
    uint64_t evict_skipped;  /* victims the eviction hook kept */
    uint64_t evict_examined; /* objects looked at by eviction sampling since creation */
    uint64_t meta_bytes;     /* object records + hash buckets (the per-object metadata cost) */
};

/* Fills *st. O(segments). */
void pool_get_stats(const struct pool *p, struct pool_stats *st);

/*
 * Checks every invariant (replicas on distinct, mounted segments and inside them; per-segment
 * used bytes equal the sum of its buffers; allocators consistent; no object without replicas;
 * counters). Returns 0 or POOL_EINTERNAL_ERROR and logs the first violation. O(objects); for
 * tests and debugging.
 */
int pool_check(const struct pool *p);

/* ------------------------------------------------------------------------------------------ */
/* Snapshots (pool_snap.c; the file format is in docs/ha.md, "Snapshot format")                */
/* ------------------------------------------------------------------------------------------ */

/* What a snapshot says about itself, beside the pool. */
struct pool_snap_meta {
    uint64_t epoch;     /* leader epoch (fencing token) of the writer; 0 without HA */
    uint64_t last_seq;  /* last op-log sequence number the snapshot includes; 0 = none */
    int64_t created_ms; /* wall-clock (Unix) milliseconds when it was written */
    uint64_t objects;   /* objects in it */
    uint64_t bytes;     /* file size */
};

/*
 * Writes the pool to fd as a snapshot: clients, segments (with their transport descriptors),
 * every object with a complete replica (leases and soft pins are not kept: restored objects
 * are ordinary cache entries, as in Mooncake), and the buffers that must stay reserved (writes
 * and copies in flight, discarded buffers) with their remaining release time. The file ends
 * with a CRC-32C trailer. With meta->epoch != 0 (an HA leader's snapshot) no buffer is kept
 * reserved: the op-log after the snapshot may place objects in them (a put that ends after it),
 * as a replay of the log alone would. meta->epoch, last_seq and created_ms are written; objects and
 * bytes are filled in. Allocates one 1 MiB buffer; safe in a forked child. Returns 0 or a negative
 * errno (the write failed). Reads the pool only: hold the pool's lock (or be a forked copy).
 */
int pool_snapshot_write(const struct pool *p, int64_t now, int fd, struct pool_snap_meta *meta);

/*
 * Loads a snapshot written by pool_snapshot_write() from the len bytes at buf into the empty
 * pool p (just created: no clients, segments or objects): registers the clients, mounts the
 * segments, rebuilds each segment's allocator with the saved buffer offsets (cm_tlsf_build),
 * inserts the objects with COMPLETE replicas and re-arms the reserved buffers relative to now.
 * Every client counts as alive at now. Fills *meta. Returns 0, -EINVAL when p is not empty, or
 * -CM_ECORRUPT with a one-line reason in err (bad magic, unknown version, CRC mismatch,
 * truncation, an index or length out of range, duplicate keys or overlapping buffers). After a
 * failure p holds part of the snapshot: destroy it.
 */
int pool_snapshot_load(struct pool *p, const void *buf, size_t len, int64_t now,
                       struct pool_snap_meta *meta, char *err, size_t errlen);

/* Bytes of the record of an object with klen key bytes and nrep replicas (before malloc
 * rounding). */
size_t pool_object_record_size(size_t klen, uint32_t nrep);

#endif
