/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storage/: the SSD tier, a local key -> bytes store on a file system with three layouts
 * (bucket files, one file per key, one preallocated file with an offset allocator) behind one
 * API. It knows nothing of the master or the network. Every record carries its key, sizes and
 * CRC-32C checksums, so a restart scan rebuilds the index of every completed object and counts
 * torn or corrupt records. I/O goes through io_uring (registered buffers, O_DIRECT, batched
 * submission) or pread/pwrite. Configuration comes from Mooncake's MOONCAKE_OFFLOAD_*
 * environment variables (docs/storage.md).
 *
 * Thread safety: a struct sto may be used from any number of threads at once. Lookups and
 * reads (get, get_size, exists, scan, stats) run in parallel under a shared lock and do their
 * I/O in parallel; puts are serialized among themselves but their data I/O runs beside reads;
 * remove and eviction take the lock exclusively (waiting for reads in flight). sto_close()
 * must not race with any other call.
 *
 * Memory: index metadata comes from cm_malloc (aborts on OOM, as in every daemon of the
 * project); staging buffers are allocated at open and a failure there is returned as -ENOMEM.
 */
#ifndef CRESCENT_STORAGE_STO_H
#define CRESCENT_STORAGE_STO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Longest key in bytes (the record header stores it in 16 bits; kept well below). */
#define STO_KEY_MAX 4000u

/* Room for the error text of sto_open() / sto_config_from_env(). */
#define STO_ERR_LEN 256

/* Storage layout (MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR). */
enum sto_backend_kind {
    STO_BACKEND_BUCKET,       /* bucket_storage_backend: many objects per bucket file + .meta */
    STO_BACKEND_FILE_PER_KEY, /* file_per_key_storage_backend: one file per object */
    STO_BACKEND_OFFSET,       /* offset_allocator_storage_backend: one preallocated file */
};

/* Which objects eviction removes first. */
enum sto_evict_policy {
    STO_EVICT_NONE, /* never evict: a put over quota fails with -EDQUOT */
    STO_EVICT_FIFO, /* oldest put first */
    STO_EVICT_LRU,  /* least recently read (or written) first */
};

/* Every setting, one field per environment variable (docs/storage.md lists them). */
struct sto_config {
    char path[4096];                    /* MOONCAKE_OFFLOAD_FILE_STORAGE_PATH */
    enum sto_backend_kind backend;      /* MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR */
    uint64_t local_buffer_size;         /* MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES */
    uint64_t scanmeta_keys_limit;       /* MOONCAKE_OFFLOAD_SCANMETA_ITERATOR_KEYS_LIMIT */
    uint64_t total_size_limit;          /* MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES */
    uint64_t total_keys_limit;          /* MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT */
    uint64_t heartbeat_interval_s;      /* MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS (planned) */
    uint64_t buffer_gc_interval_s;      /* MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_INTERVAL_SECONDS */
    uint64_t buffer_gc_ttl_ms;          /* MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS */
    int use_uring;                      /* MOONCAKE_OFFLOAD_USE_URING */
    int watermark_eviction;             /* MOONCAKE_OFFLOAD_ENABLE_DISK_WATERMARK_EVICTION */
    double high_watermark;              /* MOONCAKE_OFFLOAD_DISK_EVICTION_HIGH_WATERMARK_RATIO */
    double low_watermark;               /* MOONCAKE_OFFLOAD_DISK_EVICTION_LOW_WATERMARK_RATIO */
    uint64_t bucket_size_limit;         /* MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES */
    uint64_t bucket_keys_limit;         /* MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT */
    uint64_t bucket_max_total_size;     /* MOONCAKE_OFFLOAD_BUCKET_MAX_TOTAL_SIZE (0: 90% disk) */
    uint64_t bucket_max_physical;       /* MOONCAKE_OFFLOAD_BUCKET_MAX_PHYSICAL_BYTES, 0 = off */
    uint64_t disk_scan_cache_ms;        /* MOONCAKE_OFFLOAD_DISK_SCAN_CACHE_MS */
    enum sto_evict_policy bucket_evict; /* MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY */
    int fpk_eviction;                   /* MOONCAKE_OFFLOAD_ENABLE_EVICTION (file-per-key: fifo) */
    char fsdir[256];                    /* MOONCAKE_OFFLOAD_FSDIR */
    enum sto_evict_policy offset_evict; /* MOONCAKE_OFFSET_EVICTION_POLICY */
    int record_crc;                     /* MOONCAKE_OFFSET_RECORD_CRC (checked on get) */
};

/* Counters and gauges, a snapshot (sto_stats()). */
struct sto_stats {
    uint64_t bytes;       /* value bytes of live objects */
    uint64_t keys;        /* live objects */
    uint64_t quota_bytes; /* effective byte quota (limits and 90 %-of-disk rule applied) */
    uint64_t disk_bytes;  /* bytes the layout occupies on disk (records, padding, metadata) */
    uint64_t reserved_bytes, reserved_keys; /* value growth and new keys of puts in flight */
    uint64_t puts, gets, removes;
    uint64_t evictions;     /* objects removed by eviction */
    uint64_t recovered;     /* objects found by the restart scan */
    uint64_t torn;          /* incomplete records found by the restart scan (skipped) */
    uint64_t corrupt;       /* records failing a CRC or a sanity check (scan and get) */
    const char *backend;    /* descriptor name, static */
    const char *io;         /* "io_uring" or "psync", static */
    const char *io_note;    /* why io_uring is not in use ("" when it is), static */
    int direct_io;          /* 1 when files are opened with O_DIRECT */
    int registered_buffers; /* 1 once a staging buffer is registered (on first I/O) */
};

/* One object of a batch put. */
struct sto_put_item {
    const void *key;
    size_t klen;
    const void *value;
    size_t len;
    int result; /* out: 0 or a negative error */
};

/* One object of a batch get. */
struct sto_get_item {
    const void *key;
    size_t klen;
    void *buf;      /* receives the value */
    size_t cap;     /* bytes at buf */
    ssize_t result; /* out: value length, or a negative error */
};

/* Scan visitor: called with each live key (valid during the call only) and its size. */
typedef void sto_scan_cb(const void *key, size_t klen, uint64_t size, void *arg);

struct sto;

/* Fills cfg with Mooncake's defaults (docs/storage.md). Never fails. */
void sto_config_defaults(struct sto_config *cfg);

/*
 * Fills cfg with the defaults, then applies every MOONCAKE_OFFLOAD_* variable (and its alias)
 * that is set. Returns 0, or -EINVAL with err (errlen bytes, NUL-terminated) holding a message
 * that names the variable, its value and what was expected. Thread-safe as getenv() is.
 */
int sto_config_from_env(struct sto_config *cfg, char *err, size_t errlen);

/*
 * Opens (creating files as needed) the store at path, or at cfg->path when path is NULL; with
 * cfg NULL the configuration is read from the environment first. The path must be absolute,
 * exist, be a directory and contain no symlink and no "." or ".." component. Runs the restart
 * scan, which rebuilds the index from what is on disk. On success stores the handle in *out
 * (close with sto_close()) and returns 0; on failure returns a negative code (-EINVAL for
 * configuration and path errors, -errno from the file system, -ENOMEM) and writes a message to
 * err. Not thread-safe with respect to another open of the same directory (one store per
 * directory; a lock file enforces it: -EBUSY).
 */
int sto_open(const struct sto_config *cfg, const char *path, struct sto **out, char *err,
             size_t errlen);

/* Seals open buckets, writes metadata, frees everything. NULL is accepted. */
void sto_close(struct sto *s);

/*
 * Stores the concatenation of iov[0..iovcnt) under key (1..STO_KEY_MAX bytes), replacing any
 * older value. Returns 0 once the record is written and indexed; -EINVAL for a bad key,
 * -EFBIG when the value exceeds the byte quota, -EDQUOT when the quota is full and the
 * eviction policy is none (or nothing can be evicted), -ENOSPC when the backend has no room,
 * -errno on I/O errors. The caller keeps ownership of the buffers.
 */
int sto_put(struct sto *s, const void *key, size_t klen, const struct iovec *iov, int iovcnt);

/* sto_put() with one buffer. */
int sto_put_buf(struct sto *s, const void *key, size_t klen, const void *value, size_t len);

/*
 * Puts n objects with their writes submitted together (queue depth up to the batch size).
 * Returns the number of items that succeeded; each item's result says why one failed.
 */
int sto_batch_put(struct sto *s, struct sto_put_item *items, size_t n);

/*
 * Copies key's value into buf (cap bytes) and returns its length. Returns -CM_EOBJECT_NOT_FOUND
 * when absent, -ENOBUFS when cap is smaller than the value (nothing copied: ask sto_get_size()),
 * -CM_ECORRUPT when the bytes read fail their CRC (counted in stats.corrupt), -errno on I/O
 * errors. Under the lru policy a get counts as a use.
 */
ssize_t sto_get(struct sto *s, const void *key, size_t klen, void *buf, size_t cap);

/* Gets n objects with their reads submitted together. Returns how many succeeded. */
int sto_batch_get(struct sto *s, struct sto_get_item *items, size_t n);

/* Returns the value length of key, or -CM_EOBJECT_NOT_FOUND. No I/O. */
ssize_t sto_get_size(struct sto *s, const void *key, size_t klen);

/* Returns 1 when key is stored, 0 otherwise. No I/O. */
int sto_exists(struct sto *s, const void *key, size_t klen);

/* Removes key. Returns 0 or -CM_EOBJECT_NOT_FOUND (or -errno when metadata cannot be written). */
int sto_remove(struct sto *s, const void *key, size_t klen);

/*
 * Visits up to MOONCAKE_OFFLOAD_SCANMETA_ITERATOR_KEYS_LIMIT live keys per call, starting at
 * *cursor (0 to begin), and stores the next cursor (0 when done). Keys present for the whole
 * scan are visited at least once. The callback runs under the shared lock: it must not call
 * back into the store. Returns the number of keys visited.
 */
int sto_scan(struct sto *s, uint64_t *cursor, sto_scan_cb *cb, void *arg);

/*
 * Eviction hook: called for each object the store's own eviction removes (quota, watermark,
 * key limit, no room in the offset file), never for sto_remove(). It runs under the store's
 * exclusive lock, on the thread whose put evicted: it must not call back into the store.
 */
typedef void sto_evict_cb(const void *key, size_t klen, uint64_t size, void *arg);

/*
 * Installs (cb NULL: removes) the eviction hook. Call before the store is shared between
 * threads (not synchronized with puts in flight).
 */
void sto_set_evict_cb(struct sto *s, sto_evict_cb *cb, void *arg);

/* Fills *st. */
void sto_stats(struct sto *s, struct sto_stats *st);

/* Returns the descriptor name of kind ("bucket_storage_backend", ...). */
const char *sto_backend_name(enum sto_backend_kind kind);

#endif
