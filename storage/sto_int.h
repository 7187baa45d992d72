/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of storage/ shared between its files: the store, its index entries, the backend
 * ops table and the I/O layer (sto_io.c). Not for other modules.
 *
 * DESIGN: sto.c owns the index (STO_SHARDS hash tables of struct sto_ent, a key's shard chosen
 * by its hash), quotas and eviction; a backend only places records (alloc), makes them
 * durable-and-findable (commit), frees them (release) and finds them again at open (recover,
 * through sto__recovered()).
 * Locks, in the order they are taken: s->put_mu (one put at a time), an I/O slot, s->mu (every
 * change of the index, the accounting, the backend's state), a shard's rw (shared for lookups
 * and the reads of its entries, exclusive, under s->mu, to link or unlink one of them), s->lru_mu
 * (the eviction list; a leaf). A get takes only the shared locks of its keys' shards, so gets
 * of different shards and an index change in a third run side by side; a reader of a shard
 * keeps its entries (and their space) alive until it unlocks. Index changes stay serialised by
 * s->mu, so a backend sees the same one-writer world as before. A batch get locks its shards in
 * ascending order; a writer holds at most one shard lock.
 */
#ifndef CRESCENT_STORAGE_STO_INT_H
#define CRESCENT_STORAGE_STO_INT_H

#include "common/cm_ht.h"
#include "storage/sto.h"
#include "storage/sto_record.h"

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>

#define STO_IO_SLOTS 4u  /* staging buffers / rings per store */
#define STO_IO_DEPTH 64u /* ring entries */
#define STO_SHARDS   16u /* index shards (a power of two, at most 32: batch gets keep a mask) */

/* One stored object. Fields are fixed while it is indexed, except the lru links (lru_mu) and the
 * bucket links (s->mu). */
struct sto_ent {
    struct cm_ht_node hnode;
    struct sto_ent *lprev, *lnext; /* eviction order (head = first victim) */
    struct sto_ent *bprev, *bnext; /* bucket backend: the bucket's live entries */
    uint64_t seq;
    uint64_t rec_off; /* record offset in its file */
    uint64_t rec_len;
    uint64_t value_len;
    uint32_t value_off;
    uint32_t value_crc;
    uint64_t loc; /* backend-specific: bucket id, tlsf handle */
    uint16_t klen;
    uint8_t key[];
};

/* A record being written: filled by sto.c, placed by backend alloc(). */
struct sto_wr {
    struct sto_rec rec;
    int fd;       /* where to write (backend alloc) */
    uint64_t off; /* at which offset */
    uint64_t loc; /* backend-specific (bucket id, tlsf handle, tmp-file slot) */
    char tmp[64]; /* file-per-key: the temporary name */
    /* this write's share of s->res_bytes / s->res_keys while it is in flight (sto.c) */
    uint64_t res_bytes;
    uint64_t res_keys;
};

struct sto;

/* Layout backend: first field size (CONTRIBUTING.md, "Layout"). */
struct sto_backend_ops {
    size_t size;
    const char *name;
    /* Creates or opens the layout under s->dir and feeds every object found to sto__recovered. */
    int (*open)(struct sto *s, char *err, size_t errlen);
    /* Writes what close needs (seals) and frees the backend state. */
    void (*close)(struct sto *s);
    /* Reserves room for w->rec (rec_len set) and sets w->fd, w->off, w->loc. Under s->mu. */
    int (*alloc)(struct sto *s, struct sto_wr *w);
    /* Gives back a reservation whose write failed. Under s->mu. */
    void (*abort)(struct sto *s, struct sto_wr *w);
    /* Makes a written record findable after a restart; e is the new entry. Under s->mu and the
     * key's shard (exclusive). */
    int (*commit)(struct sto *s, struct sto_wr *w, struct sto_ent *e);
    /* Frees e's space. replaced: a newer record of the same key was just committed. Under s->mu
     * and e's shard (exclusive). */
    void (*release)(struct sto *s, struct sto_ent *e, bool replaced);
    /* Writes metadata that a series of release() calls left pending. Under s->mu. */
    int (*flush)(struct sto *s);
    /* Returns an fd to read e from (closed by put_fd). Under e's shard (shared) only: may run
     * beside any other callback but e's release. */
    int (*get_fd)(struct sto *s, const struct sto_ent *e);
    void (*put_fd)(struct sto *s, const struct sto_ent *e, int fd);
};

/* One ring and its staging buffer; a thread takes a slot for the length of one operation. */
struct sto_slot {
    pthread_mutex_t mu;
    struct io_uring ring;
    bool ring_ok;
    bool registered;
    bool reg_tried; /* registration is attempted on first use */
    uint8_t *stage; /* aligned, stage_len bytes */
    size_t stage_len;
};

/* One I/O of a batch. */
struct sto_iov {
    int fd;
    bool write;
    uint8_t *buf;
    size_t len;
    uint64_t off;
    bool fixed;  /* buf lies in the slot's registered staging buffer */
    int res;     /* out: 0 or -errno */
    size_t done; /* internal: bytes moved so far */
};

/* One shard of the index: the entries whose key hash picks it. */
struct sto_shard {
    pthread_rwlock_t rw;
    struct cm_ht ht;
} __attribute__((aligned(64)));

struct sto {
    struct sto_config cfg;
    char dir[4096];
    int dirfd;
    int lockfd;
    const struct sto_backend_ops *ops;
    void *be; /* backend state */
    uint32_t align;
    bool direct; /* O_DIRECT usable in dir */
    enum sto_evict_policy policy;
    uint64_t quota_bytes;

    pthread_mutex_t mu; /* index changes, accounting, backend state */
    pthread_mutex_t put_mu;
    pthread_mutex_t lru_mu;
    struct sto_shard shards[STO_SHARDS];
    struct sto_ent *lhead, *ltail;
    uint64_t next_seq;
    uint64_t bytes, keys, disk_bytes;
    /* what puts reserved and have not published yet: value growth and new keys, counted by
     * the quota and key limit besides bytes and keys */
    uint64_t res_bytes, res_keys;
    /* physical limit (bucket layout, MOONCAKE_OFFLOAD_BUCKET_MAX_PHYSICAL_BYTES): the last du-style
     * scan of dir, when it ran (CLOCK_MONOTONIC ns, 0 = never), record bytes reserved since */
    uint64_t phys_scanned, phys_scan_ns, phys_since;
    sto_evict_cb *evict_cb; /* sto_set_evict_cb() */
    void *evict_arg;

    /* counters (atomics through __atomic, relaxed) */
    uint64_t n_puts, n_gets, n_removes, n_evictions, n_recovered, n_torn, n_corrupt;

    /* I/O */
    bool uring;
    const char *io_note;
    struct sto_slot slots[STO_IO_SLOTS];
    unsigned slot_rr;
};

/*
 * The offset layout's journal compaction: a flush compacts once the journal is larger than
 * sto__offset_compact_min bytes (64 MiB) and sto__offset_compact_ratio (4) times 128 bytes per
 * live object. Tests set both to 0 to compact at every flush, and read sto__offset_compactions
 * (compactions so far, all stores of the process). All through __atomic, relaxed.
 */
extern uint64_t sto__offset_compact_min;
extern uint64_t sto__offset_compact_ratio;
extern uint64_t sto__offset_compactions;

/* Backends. */
extern const struct sto_backend_ops sto__bucket_ops;
extern const struct sto_backend_ops sto__fpk_ops;
extern const struct sto_backend_ops sto__offset_ops;

/*
 * Called by a backend's open() for every object it finds: inserts it into the index unless a
 * newer record (higher seq) of the key is there. Returns the entry that lost (the older one,
 * already unlinked, for the backend to release), or NULL. *kept receives the indexed entry.
 */
struct sto_ent *sto__recovered(struct sto *s, const struct sto_rec *r, uint64_t loc,
                               struct sto_ent **kept);

/*
 * Called by a backend's open() for a removal record (journal): drops the key's entry when it
 * is older than r->seq and returns it (unlinked, for the caller to free), or NULL.
 */
struct sto_ent *sto__recovered_del(struct sto *s, const struct sto_rec *r);

/* Returns a fresh sequence number (removal records). Under s->mu. */
uint64_t sto__next_seq(struct sto *s);

/* Frees an entry that is no longer indexed. */
void sto__ent_free(struct sto_ent *e);

/* Fills r with the PUT record that describes e (r->key points into e). */
void sto__ent_to_rec(const struct sto_ent *e, struct sto_rec *r);

/* Adds to the torn / corrupt counters (restart scan and reads). */
void sto__count_torn(struct sto *s, uint64_t n);
void sto__count_corrupt(struct sto *s, uint64_t n);

/* Formats an error message into err (printf-style). Returns err. */
char *sto__err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- sto_io.c ---- */

/* Sets up the slots: rings when cfg.use_uring and the probe succeeds, staging buffers. */
int sto__io_init(struct sto *s, char *err, size_t errlen);
/* Tears the slots down. */
void sto__io_fini(struct sto *s);
/* Takes a slot (blocks while all are busy); release with sto__slot_put. */
struct sto_slot *sto__slot_get(struct sto *s);
void sto__slot_put(struct sto_slot *sl);
/*
 * Runs n I/Os (all submitted before waiting on any) on the slot's ring, or with pread/pwrite.
 * Short transfers are continued. Returns 0 when all succeeded, else the first error; each
 * v[i].res holds its own status.
 */
int sto__io_run(struct sto *s, struct sto_slot *sl, struct sto_iov *v, unsigned n);
/* Called as each I/O of a run ends (v[i].res set), so callers overlap work with the rest. */
typedef void sto_io_done_cb(void *arg, unsigned i);
/* sto__io_run() calling cb(arg, i) as each v[i] completes. */
int sto__io_run_cb(struct sto *s, struct sto_slot *sl, struct sto_iov *v, unsigned n,
                   sto_io_done_cb *cb, void *arg);
/*
 * Starts v[i] at once (io_uring: queued and submitted; psync: done before returning). Only
 * v[0..started) may be started, in order, with started <= STO_IO_DEPTH; sto__io_finish(s, sl,
 * v, n, started) runs v[started..n) and waits for all, returning 0 or the first error.
 */
void sto__io_start(struct sto *s, struct sto_slot *sl, struct sto_iov *v, unsigned i);
int sto__io_finish(struct sto *s, struct sto_slot *sl, struct sto_iov *v, unsigned n,
                   unsigned started);
/*
 * Opens name relative to the store directory with flags plus O_CLOEXEC, and O_DIRECT when
 * direct is set and the file system supports it. Returns the fd or -errno.
 */
int sto__open_file(struct sto *s, const char *name, int flags, bool direct);
/* Reads a whole small file (metadata) into a cm_malloc buffer; *len gets its size. */
int sto__read_all(int fd, uint8_t **out, size_t *len);
/*
 * Replaces name (relative to the store directory) with data, atomically and durably: writes
 * "<name>.tmp", fdatasync()s it, renames it over name and fsync()s the directory. Once per file
 * replacement, never per record. Returns 0 or -errno. An error before the rename leaves name
 * as it was and removes the temporary; *replaced (may be NULL) says whether the rename
 * happened, which is also the case when only the directory's fsync failed (name then holds
 * the new, synced contents, but the rename may not survive a power loss). Callers hold s->mu
 * or run in open/close.
 */
int sto__write_atomic(struct sto *s, const char *name, const void *data, size_t len,
                      bool *replaced);

/* put_fd of a backend whose read fds are long-lived (one file per bucket, one preallocated
 * file): keeps the fd open, does nothing. */
void sto__put_fd_keep(struct sto *s, const struct sto_ent *e, int fd);

#endif
