/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the libcrescent store client (client/include/crescent/store.h): the store
 * object, the master connection (cli_master.c), segments, staging buffer and peers
 * (cli_store.c), data paths (cli_put.c, cli_get.c), metrics and error names (cli_err.c),
 * arena-built replies of the hot commands (cli_reply.c) and their compact form (cli_compact.c).
 * Locking: mu guards the main master connection; seg_mu the segment list and the registered
 * buffers; peer_mu the opened peer segments; stage_mu the staging chunks. The ping thread has
 * its own connection. Counters are atomics.
 */
#ifndef CRESCENT_CLIENT_STORE_CLI_STORE_H
#define CRESCENT_CLIENT_STORE_CLI_STORE_H

#include "crescent/store.h"
#include "crescent/transfer.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CLI_MAX_SEGS  64         /* segments one store may mount */
#define CLI_MAX_REPL  8          /* replicas per object (the master's limit) */
#define CLI_KEY_MAX   65535      /* longest key */
#define CLI_CHUNK_MAX (4u << 20) /* staging chunk size cap */
#define CLI_IFACES    4          /* metrics interfaces: local, shm, tcp, other */

/* A segment this store mounted. */
struct cli_seg {
    char *name;  /* segment name */
    void *base;  /* start */
    size_t size; /* bytes */
    bool owned;  /* allocated by the store (freed at destroy) */
    bool shared; /* allocated with crescent_xfer_alloc_shared */
};

/* A peer segment opened from a replica descriptor blob (or endpoint). */
struct cli_peer {
    char *name;                        /* segment name */
    void *desc;                        /* descriptor bytes (copy) */
    size_t desc_len;                   /* bytes */
    struct crescent_xfer_segment *seg; /* opened segment */
    struct cli_peer *next;             /* list */
    int refs;                          /* transfers using it (under peer_mu) */
    bool dead;                         /* unlinked: closed when refs drops to 0 */
};

/* A caller buffer registered for zero-copy calls. */
struct cli_reg {
    uintptr_t addr; /* start */
    size_t len;     /* bytes */
};

/* One replica from a descriptor reply. */
struct cli_replica {
    char segment[256];  /* segment name */
    char endpoint[128]; /* transport endpoint */
    char protocol[16];  /* transport protocol */
    const char *desc;   /* descriptor blob (points into the reply) */
    size_t desc_len;    /* bytes */
    uint64_t addr;      /* absolute address */
    uint64_t size;      /* bytes */
    bool complete;      /* COMPLETE */
    bool memory;        /* MEMORY */
};

struct crescent_store {
    char host[256]; /* master host (changed by -NOTLEADER and the leader view: addr_mu) */
    int port;       /* master port (likewise) */
    pthread_mutex_t addr_mu;
    _Atomic uint32_t
        master_gen;            /* +1 whenever host:port changes (a put that spans one is redone) */
    struct cli_leader *leader; /* HA address forms: the leader view (cli_leader.c), or NULL */
    uint32_t failover_ms;      /* how long one call waits for a leader (HA forms) */
    uint32_t timeout_ms;       /* master timeout */
    uint64_t poll_ns;          /* how long a master reply is polled for before blocking */
    char client_id[33];        /* 32 hex digits */
    char *hostname;            /* local host (MC.REGISTER) */
    char protocol[16];         /* transfer protocol */
    char endpoint[128];        /* the engine's listener */
    crescent_store_log_cb *log_cb;
    void *log_arg;

    pthread_mutex_t mu; /* main master connection */
    redisContext *rc;   /* main connection, NULL when broken */
    bool want_compact;  /* ask for compact replies (CRESCENT_STORE_REPLY_FORMAT is not "full") */
    bool rc_compact;    /* rc returns compact replies (MC.REPLYFORMAT COMPACT accepted; mu) */

    struct crescent_xfer_engine *eng;

    pthread_mutex_t seg_mu;
    struct cli_seg segs[CLI_MAX_SEGS];
    size_t n_segs;
    unsigned seg_seq;     /* next generated segment number */
    struct cli_reg *regs; /* registered caller buffers */
    size_t n_regs, cap_regs;

    pthread_mutex_t peer_mu;
    struct cli_peer *peers;

    pthread_mutex_t stage_mu;
    pthread_cond_t stage_cv;
    char *stage;           /* staging buffer */
    size_t stage_size;     /* bytes */
    size_t chunk;          /* chunk size */
    uint32_t *free_chunks; /* stack of free chunk indexes */
    size_t n_free;

    pthread_t ping_thr;
    bool ping_started;
    pthread_mutex_t ping_mu;
    pthread_cond_t ping_cv;
    bool stop;
    bool ping_now;         /* ping at once (a new leader), under ping_mu */
    int health;            /* 0 healthy, 2 master unreachable (atomic) */
    redisContext *ping_rc; /* ping thread's connection */

    bool metrics_on;            /* MC_STORE_CLIENT_METRIC */
    bool bw_on;                 /* MC_STORE_CLIENT_METRIC_BANDWIDTH */
    unsigned metric_interval_s; /* MC_STORE_CLIENT_METRIC_INTERVAL */
    uint64_t last_report_ms;
    uint64_t last_rd, last_wr;
    struct crescent_store_metrics m; /* updated with atomics */
    bool checksum;                   /* MOONCAKE_STORE_CHECKSUM=1 */
    struct cli_dummy *dummy;         /* a dummy client's daemon link (cli_dummy.c), or NULL */
    struct cli_ssd *ssd;             /* the SSD tier (cli_ssd.c), or NULL */
    bool no_promote;                 /* the master refused promotion on hit (atomic) */
};

/* cli_err.c */
int cli_err_from_name(const char *name, size_t len);
int cli_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_log(struct crescent_store *st, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* cli_master.c */
redisContext *cli__connect(struct crescent_store *st);
/* redisCommandArgv with SIGPIPE blocked and consumed (cli_master.c). Thread-safe. */
redisReply *cli__redis_argv(redisContext *c, int argc, const char **argv, const size_t *lens);
int cli__command(struct crescent_store *st, redisContext **slot, int argc, const char **argv,
                 const size_t *lens, redisReply **out);
int cli__cmd(struct crescent_store *st, int argc, const char **argv, const size_t *lens,
             redisReply **out);
int cli__cmd_fast(struct crescent_store *st, int argc, const char **argv, const size_t *lens,
                  redisReply **out);
int cli__cmd_hot(struct crescent_store *st, int argc, const char **argv, const size_t *lens,
                 redisReply **out, bool *compact);
bool cli__negotiate(struct crescent_store *st, redisContext **slot);
int cli__reply_err(const redisReply *r);
const redisReply *cli__field(const redisReply *map, const char *name);
int cli__parse_replica(const redisReply *r, struct cli_replica *out);
int cli__parse_replicas(const redisReply *arr, struct cli_replica *out, size_t max);
int cli__remount(struct crescent_store *st, redisContext **slot);
int cli__ping_start(struct crescent_store *st);
void cli__ping_stop(struct crescent_store *st);

/* cli_leader.c: master address forms and the leader view of an HA group */
int cli__master_open(struct crescent_store *st, const char *master, uint32_t failover_ms);
void cli__master_close(struct crescent_store *st);
int cli__set_master(struct crescent_store *st, const char *a, size_t len);
int cli__leader_resolve(struct crescent_store *st);
bool cli__failover_wait(struct crescent_store *st, uint64_t *deadline, uint32_t window_ms,
                        bool resolve, bool pause);
const char *cli__leader_desc(const struct crescent_store *st);

/* cli_reply.c: replies in one arena (cli__cmd_fast) */
extern redisReplyObjectFunctions cli__arena_fns;
void cli__reply_free(redisReply *r);
ssize_t cli__resp_parse(const char *p, size_t n, redisReply **out);
#define CLI_RP_DEPTH 8            /* deepest nesting cli__resp_parse / cli__resp_scan take */
struct cli_rscan {                /* where a scan of a partly received reply stopped */
    size_t off;                   /* bytes of the reply scanned */
    int depth;                    /* open arrays */
    long long left[CLI_RP_DEPTH]; /* values still to come at each depth */
};
void cli__resp_scan_init(struct cli_rscan *sc);
int cli__resp_scan(struct cli_rscan *sc, const char *buf, size_t n);
/* cli_ssd.c: the SSD tier of a real client */
/* Opens the storage store at path (MOONCAKE_OFFLOAD_* settings from the environment), starts
 * the offload endpoint, mounts the local-disk segment, re-registers what the restart scan
 * found and starts the heartbeat. Returns 0 or a negative code (then cli__ssd_stop cleans up).
 * Called once from create, after the global segment is mounted. */
int cli__ssd_start(struct crescent_store *st, const char *path);
/* Joins the SSD threads, unmounts the local-disk segment (best effort), closes the store. */
void cli__ssd_stop(struct crescent_store *st);
/* Staging counters of an SSD tier (its offload endpoint's staging area). */
struct cli_ssd_stats {
    uint64_t capacity; /* bytes of the staging area (MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES) */
    uint64_t in_use;   /* bytes staged now */
    uint64_t live;     /* extents staged now */
    uint64_t staged;   /* stage requests served */
    uint64_t released; /* extents released by their reader */
    uint64_t gc_freed; /* extents freed by the GC (not released within the TTL) */
    uint64_t refused_full; /* stage requests refused: no room */
    uint64_t staged_bytes; /* bytes staged in all */
    uint64_t disk_keys;    /* objects in the store now */
    uint64_t disk_bytes;   /* their value bytes */
    uint64_t disk_lost;    /* records the store dropped (eviction, CRC failure), to report */
    uint64_t disk_removed; /* records deleted on the master's request (MC.OFFLOADREMOVES) */
};
/* Copies the staging counters of st's SSD tier into *out. Returns 0, or -ENOENT (all zero)
 * when st has no SSD tier. Thread-safe. */
int cli__ssd_stats(const struct crescent_store *st, struct cli_ssd_stats *out);
/* The offload endpoint ("ip:port") of st's SSD tier, or NULL when it has none. */
const char *cli__ssd_endpoint(const struct crescent_store *st);
/* Reads the value of key (size bytes, then the checksum trailer into trailer when not NULL)
 * from LOCAL_DISK replica r: from this client's own disk, or through r's owner, which stages it
 * in a buffer registered with its transfer engine; the bytes are pulled with the transfer
 * engine (straight into dst when zero_copy: dst is registered) and checked against the
 * owner's CRC-32C, then the staging buffer is released. A full staging area is retried a few
 * times, then fails with NO_AVAILABLE_HANDLE. Returns 0 or a negative code (cli_fail).
 * Thread-safe. */
int cli__ssd_read(struct crescent_store *st, const struct cli_replica *r, const char *key,
                  void *dst, uint64_t size, bool zero_copy, unsigned char *trailer);

/* Promotion on hit after a read of a disk-only object: asks the master for a memory replica
 * (MC.PROMOTESTART), writes value (size bytes, then trailer when not NULL) there and ends it
 * (MC.COPYEND, or MC.COPYREVOKE when the write fails). Best effort: failures are silent; a
 * master without promotion_on_hit is not asked again. Thread-safe. */
void cli__ssd_promote(struct crescent_store *st, const char *key, const void *value, uint64_t size,
                      const unsigned char *trailer);

/* cli_store.c */
bool cli__is_own_segment(struct crescent_store *st, const char *name);
bool cli__is_registered(struct crescent_store *st, const void *p, size_t len);
size_t cli__registered_prefix(struct crescent_store *st, const void *const *bufs,
                              const size_t *lens, size_t n);
int cli__peer_open(struct crescent_store *st, const struct cli_replica *r, struct cli_peer **out);
void cli__peer_put(struct crescent_store *st, struct cli_peer *p, bool failed);
size_t cli__stage_get(struct crescent_store *st, char **chunk);
void cli__stage_put(struct crescent_store *st, char *chunk);
int cli__iface(const struct crescent_xfer_segment *seg);
void cli__count(struct crescent_store *st, bool write, int iface, uint64_t bytes, uint64_t us);
void cli__metrics_tick(struct crescent_store *st);
int cli__check_key(const char *key);
size_t cli__opts_argv(const struct crescent_store_replicate_config *rc, const char **argv,
                      size_t *lens, char *numbuf, size_t numcap);

/* cli_xfer.c: moving bytes for one object */
struct cli_src {
    const void *const *parts;     /* value parts */
    const size_t *sizes;          /* part sizes */
    size_t n;                     /* parts */
    uint64_t total;               /* sum of sizes */
    bool zero_copy;               /* one registered part, no staging */
    const unsigned char *trailer; /* checksum trailer (CLI_TRAILER bytes) after the value, or
                                     NULL */
};
/* MOONCAKE_STORE_CHECKSUM=1: a value is stored followed by a 16-byte trailer, the magic
 * "CRSCSUM1", the CRC-32C of the value (little-endian u32) and 4 zero bytes. */
#define CLI_TRAILER 16
void cli__trailer_make(unsigned char *t, const struct cli_src *src);
int cli__trailer_check(const unsigned char *t, const void *value, uint64_t len);
int cli__write_replicas(struct crescent_store *st, const struct cli_replica *reps, size_t n,
                        const struct cli_src *src);
int cli__read_replica(struct crescent_store *st, const struct cli_replica *r, void *dst,
                      uint64_t size, bool zero_copy, unsigned char *trailer);

/* cli_compact.c: compact replies of the hot commands (docs/store.md "Compact replies") */
struct cli_cseg {           /* one segment of a compact reply's table */
    const redisReply *f[4]; /* name, endpoint, protocol, desc (point into the reply) */
    struct cli_peer *peer;  /* opened on first use (one reference), or NULL */
    int own;                /* 1 one of the store's segments, 0 not, -1 not known yet */
    int iface;              /* metrics interface of peer (-1 before it is opened) */
    bool open_failed;       /* opening the peer failed */
    bool failed;            /* a transfer through peer failed */
};
struct cli_creply {
    const redisReply *elems; /* the key's element, or a batch form's array of elements */
    struct cli_cseg *segs;   /* the segment table */
    size_t nsegs;
};
int cli__creply_open(const redisReply *r, struct cli_creply *c);
int cli__batch_reply_open(struct crescent_store *st, redisReply *r, bool compact, size_t n,
                          const char *what, struct cli_creply *c, const redisReply **elems);
int cli__creply_count(const struct cli_creply *c, const redisReply *e, size_t off);
int cli__creply_replicas(const struct cli_creply *c, const redisReply *e, size_t off, bool complete,
                         struct cli_replica *reps, size_t max);
bool cli__cseg_own(struct crescent_store *st, struct cli_creply *c, size_t i);
struct cli_peer *cli__cseg_peer(struct crescent_store *st, struct cli_creply *c, size_t i);
void cli__creply_drop_peers(struct crescent_store *st, struct cli_creply *c);
void cli__creply_close(struct crescent_store *st, struct cli_creply *c);

/* cli_batch.c: one transfer batch for the keys of a batch get */
#define CLI_FALLBACK INT64_MIN /* result of a key left to the per-key path */
int cli__batch_read_fast(struct crescent_store *st, const redisReply *r, size_t n,
                         void *const *bufs, const size_t *caps, int64_t *results, uint64_t t0_ms);
int cli__batch_write_fast(struct crescent_store *st, const redisReply *r, size_t n,
                          const void *const *bufs, const size_t *sizes, int *results);
int cli__batch_read_compact(struct crescent_store *st, struct cli_creply *c, size_t n,
                            void *const *bufs, const size_t *caps, int64_t *results,
                            uint64_t t0_ms);
int cli__batch_write_compact(struct crescent_store *st, struct cli_creply *c, size_t n,
                             const void *const *bufs, const size_t *sizes, int *results);

#endif
