/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal structures of the pool metadata (server/pool/): object records, segment and client
 * slots, the in-flight set and the discarded-buffer list. Only the pool_*.c files include it.
 * Not thread-safe, like the pool itself.
 */
#ifndef CRESCENT_SERVER_POOL_POOL_INT_H
#define CRESCENT_SERVER_POOL_POOL_INT_H

#include "common/cm_ht.h"
#include "common/cm_tlsf.h"
#include "server/pool/pool.h"

#include <stddef.h>
#include <stdint.h>

#define POOL_NO_SLOT UINT32_MAX /* "no client" / "no segment" */

/* Object flags. */
enum {
    POOL_OF_INFLIGHT = 1u << 0,   /* a put/upsert is being written: replicas PROCESSING */
    POOL_OF_HARD_PIN = 1u << 1,   /* never evicted */
    POOL_OF_SOFT_PIN = 1u << 2,   /* evicted in the second pass until t_aux */
    POOL_OF_UPSERT = 1u << 3,     /* the write in flight came from an upsert */
    POOL_OF_TASK = 1u << 4,       /* a copy/move is in flight: its targets are PROCESSING */
    POOL_OF_MOVE = 1u << 5,       /* ... and it is a move (the source goes at its end) */
    POOL_OF_QUEUED = 1u << 6,     /* in a client's offload queue, not yet fetched */
    POOL_OF_OFFLOADING = 1u << 7, /* fetched by a client, its report pending (pool_offload.c) */
};

/* A replica inside an object record: 12 bytes. */
struct pool_rep {
    uint32_t seg;    /* segment slot (MEMORY); owner client slot (LOCAL_DISK) */
    uint32_t handle; /* allocator handle (MEMORY) */
    uint8_t type;    /* enum pool_replica_type */
    uint8_t status;  /* enum pool_replica_status */
    uint8_t rflags;  /* POOL_RF_* */
    uint8_t pad_;
};

/* Replica flags. */
enum {
    POOL_RF_MOVE_SRC = 1u << 0, /* the source of the move in flight */
};

/*
 * An object record: this 48-byte header, then the key bytes, then (4-aligned) nrep replicas,
 * in one cm_malloc block. The hash node must stay first.
 */
struct pool_obj {
    struct cm_ht_node hn; /* in pool->objects; hn.hash = key hash */
    int64_t lease_until;  /* read lease deadline, also the eviction order (last access); while
                             INFLIGHT with SOFT_PIN: the soft-pin TTL to apply at put end */
    int64_t t_aux;        /* INFLIGHT: put start time; else the soft-pin deadline */
    uint64_t size;        /* value bytes (every replica holds the whole value) */
    uint32_t writer;      /* client slot of the writer in flight, POOL_NO_SLOT when none */
    uint16_t klen;
    uint8_t nrep;
    uint8_t flags;
    char key[];
};

_Static_assert(sizeof(struct pool_obj) == 48, "object header is 48 bytes");
_Static_assert(sizeof(struct pool_rep) == 12, "replica is 12 bytes");

/* Replicas of o (after the key, 4-aligned). */
static inline struct pool_rep *pool__reps(const struct pool_obj *o) {
    size_t off = (sizeof(struct pool_obj) + o->klen + 3u) & ~(size_t)3u;
    return (struct pool_rep *)((char *)o + off);
}

/* A mounted segment. */
struct pool_seg {
    char *name;
    char *endpoint;
    char *protocol;
    void *desc;
    size_t desc_len;
    uint64_t gen; /* new with every name / transport change (pool_replica_desc.seg_gen) */
    uint64_t base;
    uint64_t size;
    uint32_t owner; /* client slot */
    uint32_t slot;
    uint32_t live_idx; /* index in pool->live */
    enum pool_seg_status status;
    int dying; /* marked for a batch unmount */
    int64_t grace_until;
    struct cm_tlsf *alloc;         /* the pool's own allocator; NULL for a shared segment */
    struct pool_seg_allocator ext; /* a shared segment's allocator (pool_segment_mount_shared) */
    uint64_t used;                 /* exact value bytes in the pool's live buffers */
    uint64_t nbuffers;             /* live buffers */
};

/* A known client. The hash node must stay first. */
struct pool_client {
    struct cm_ht_node hn; /* in pool->clients_by_id */
    struct pool_uuid id;
    char *host;
    int64_t last_ping;
    int64_t view_version;
    uint32_t slot;
    uint32_t nsegs;
    struct pool_disk *disk; /* the client's local-disk segment, NULL when none (pool_offload.c) */
    int local;              /* owns a shared segment: never expires */
};

/*
 * Membership of an object in the in-flight set (keyed by the object pointer): objects with a
 * write (POOL_OF_INFLIGHT) or a copy/move (POOL_OF_TASK) in flight, for the zombie sweep.
 */
struct pool_inflight {
    struct cm_ht_node hn;
    struct pool_obj *obj;
    int64_t since; /* when the write or task started */
};

/* A buffer no object points to any more, freed at release_at (zombie or superseded write). */
struct pool_discard {
    uint32_t seg;
    uint32_t handle;
    uint64_t size;
    int64_t release_at;
};

struct pool {
    struct pool_config cfg;
    uint64_t hash_seed;
    uint64_t rng;          /* splitmix64 state */
    struct cm_ht objects;  /* struct pool_obj */
    struct cm_ht inflight; /* struct pool_inflight */
    uint64_t meta_records; /* bytes of object records (pool_object_record_size sums) */

    struct pool_seg **segs; /* slots; NULL = free */
    uint32_t nseg_slots;
    uint32_t nsegs;
    uint32_t *live; /* slots of the nsegs mounted segments, dense, for uniform placement */

    struct pool_client **clients; /* slots; NULL = free */
    uint32_t nclient_slots;
    uint32_t nclients;
    struct cm_ht clients_by_id;

    struct pool_discard *discards;
    size_t ndiscards, discards_cap;

    uint64_t evict_cursor; /* cm_ht_scan cursor, persists across cycles */
    int need_evict;        /* an allocation failed since the last tick */
    uint64_t evicted, evict_skipped, evict_examined;

    uint64_t offload_cycle; /* victims queued in the current eviction cycle */
    int disk_quiet;         /* LOCAL_DISK replicas leaving now queue no record removal */
    struct pool_offload_stats ostats;
};

/* Block operations of a segment: its own TLSF, or the shared allocator. */
static inline uint64_t pool__blk_off(const struct pool_seg *s, uint32_t h) {
    return s->alloc ? cm_tlsf_block_offset(s->alloc, h) : s->ext.offset(s->ext.arg, h);
}
static inline uint64_t pool__blk_size(const struct pool_seg *s, uint32_t h) {
    return s->alloc ? cm_tlsf_block_size(s->alloc, h) : s->ext.block_size(s->ext.arg, h);
}
static inline void pool__blk_free(struct pool_seg *s, uint32_t h) {
    if (s->alloc)
        cm_tlsf_free(s->alloc, h);
    else
        s->ext.free(s->ext.arg, h);
}
/* Bytes in use in s as eviction and placement see them: a shared segment counts its other
 * user's bytes too. */
static inline uint64_t pool__seg_pressure(const struct pool_seg *s) {
    return s->alloc ? s->used : s->ext.used(s->ext.arg);
}

/* pool.c */
uint64_t pool__rand(struct pool *p);
uint64_t pool__key_hash(const struct pool *p, const void *key, size_t klen);
struct pool_obj *pool__obj_find(const struct pool *p, const void *key, size_t klen, uint64_t hash);

/*
 * Finds the complete object for key into *o: POOL_OK, POOL_EOBJECT_NOT_FOUND (no object), or
 * POOL_EREPLICA_IS_NOT_READY (its write is still in flight; *o is set all the same).
 */
int pool__obj_find_ready(const struct pool *p, const void *key, size_t klen, struct pool_obj **o);
/* The record of a new object: key, size and nrep replicas (copied from reps, or left for the
 * caller when reps is NULL); no flags, writer or lease. Linked into the table and counted. */
struct pool_obj *pool__obj_new(struct pool *p, const void *key, size_t klen, uint64_t hash,
                               uint64_t size, uint32_t nrep, const struct pool_rep *reps);
void pool__obj_unlink(struct pool *p, struct pool_obj *o);
void pool__obj_destroy(struct pool *p, struct pool_obj *o);
void pool__obj_retire(struct pool *p, struct pool_obj *o, int64_t release_at, int64_t now);
void pool__rep_free(struct pool *p, const struct pool_rep *r, uint64_t size);
void pool__rep_free_of(struct pool *p, const struct pool_obj *o, const struct pool_rep *r);
void pool__drop_reps_if(struct pool *p, struct pool_obj *o,
                        int (*pred)(const struct pool *, const struct pool_rep *, void *),
                        void *arg);
void pool__inflight_add(struct pool *p, struct pool_obj *o, unsigned flag, int64_t now);
void pool__inflight_del(struct pool *p, struct pool_obj *o);
void pool__discard_add(struct pool *p, const struct pool_rep *r, uint64_t size, int64_t release_at);
void pool__emit(struct pool *p, enum pool_event_kind kind, const struct pool_obj *o);
void pool__fill_desc(const struct pool *p, const struct pool_obj *o, const struct pool_rep *r,
                     struct pool_replica_desc *d);

/* pool_offload.c */
struct pool_disk;
void pool__fill_disk_desc(const struct pool *p, const struct pool_obj *o, const struct pool_rep *r,
                          struct pool_replica_desc *d);
const struct pool_disk *pool__disk_of_slot(const struct pool *p, uint32_t client_slot);
int pool__has_disk_rep(const struct pool_obj *o);
int pool__has_mem_rep(const struct pool_obj *o);
void pool__offload_put_end(struct pool *p, struct pool_obj *o);
int pool__offload_victim(struct pool *p, struct pool_obj *o);
void pool__disk_client_gone(struct pool *p, struct pool_client *c);
void pool__disk_free(struct pool_disk *d);
void pool__disk_rep_gone(struct pool *p, const struct pool_rep *r, uint64_t size, const char *key,
                         size_t klen);
void pool__offload_obj_moved(struct pool *p, const char *key, size_t klen, uintptr_t from,
                             struct pool_obj *to);

/* pool_copy.c */
struct pool_obj *pool__obj_grow(struct pool *p, struct pool_obj *o, uint32_t extra);

/* pool_client.c */
struct pool_client *pool__client_find(const struct pool *p, const struct pool_uuid *id);
void pool__client_expire(struct pool *p, struct pool_client *c);
void pool__clients_fini(struct pool *p);

/* pool_copy.c */
void pool__task_revoke(struct pool *p, struct pool_obj *o);

/* pool_evict.c */
int pool__evictable(const struct pool_obj *o, int64_t now, int soft_ok);

/* pool_seg.c */
struct pool_seg *pool__seg_find(const struct pool *p, const char *name);
int pool__seg_alloc(struct pool *p, struct pool_seg *s, uint64_t size, struct pool_rep *r);
void pool__unmount_dying(struct pool *p);
int pool__place(struct pool *p, const struct pool_client *writer, uint64_t size,
                const struct pool_put_config *cfg, struct pool_rep *reps);
void pool__segs_fini(struct pool *p);

#endif
