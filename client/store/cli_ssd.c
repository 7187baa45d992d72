/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SSD tier of a real client (crescent_store_config.ssd_offload_path, crescent-client
 * --ssd_offload_path): a storage/ store (libsto) in that directory, a local-disk segment on the
 * master (MC.MOUNTDISK) named by this client's offload endpoint, a heartbeat thread that
 * drains the client's offload queue (MC.OFFLOADFETCH: copy each value from this client's own
 * segment memory to the store, then MC.OFFLOADDONE), re-registration of everything the
 * restart scan found, the deletion of records the master removed (MC.OFFLOADREMOVES), the
 * report of records the store dropped (MC.OFFLOADEVICTED), and the offload endpoint, where peers
 * ask this client to stage an offloaded value in a staging area registered with its transfer
 * engine. Readers use cli__ssd_read() when a key's only replicas are LOCAL_DISK and pull the staged
 * bytes with the transfer engine, like a memory replica (docs/storage.md, "Reads").
 *
 * Offload endpoint protocol: one TCP connection, requests in turn, integers little-endian;
 * every reply starts with an i64 status (0, or -errno / -CM_E* code: nothing follows):
 *   'S' u32 klen, key, u64 size  -> u64 id, u64 addr, u64 len, u32 crc32c, u32 gc_ttl_ms,
 *                                   u32 desc_len, desc (the owner engine's segment descriptor)
 *   'R' u64 id                   -> (status only: 0, or -ENOENT when unknown or freed by GC)
 *   'T'                          -> CLI_SSD_NSTATS u64 counters (cli_ssd_serve_stats order)
 * 'S' errors: not found, -EMSGSIZE (stored size differs), -EFBIG (larger than the staging
 * area), -ENOSPC (staging area full now: retry).
 *
 * DESIGN: the staging area is one buffer of MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES with at
 * most CLI_SSD_MAX_STAGED extents, first fit, under stage_mu. One server thread polls the
 * listener and the idle connections; a connection with a request waiting leaves the poll set
 * for a queue served by CLI_SSD_WORKERS worker threads, which run one request each and hand
 * the connection back (through the back pipe). A stage request reserves its extent under the
 * lock (marked filling, so the GC leaves it), reads the value from disk into it without the
 * lock, then publishes it: concurrent readers of one owner are staged in parallel. An extent
 * not released within
 * MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS is freed by the next sweep (every
 * MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_INTERVAL_SECONDS); the reader checks the CRC-32C, so bytes
 * overwritten after a GC are never returned as the value.
 *
 * Lost records: the store's eviction hook and a CRC failure on read append the key to a list
 * (under lost_mu, at most CLI_SSD_LOST_MAX keys); each heartbeat first deletes the records the
 * master asks for, then drains the offload queue, then reports the lost keys that are still
 * absent from the store (a key written again meanwhile is not reported). Only the heartbeat
 * thread writes records and deletes them for the master, so these steps do not race each
 * other; a CRC failure deletes its record on the reading thread and is reported like an
 * eviction, so the master ends up without the replica whichever comes first.
 *
 * Threads: the heartbeat thread, the server thread and the CLI_SSD_WORKERS workers are started
 * by cli__ssd_start() and joined by cli__ssd_stop(); sto is thread-safe. The heartbeat uses its own
 * master connection.
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"
#include "common/cm_errno.h"
#include "common/cm_time.h"
#include "storage/sto.h"
#include "storage/sto_record.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define CLI_SSD_FETCH       256 /* tasks per MC.OFFLOADFETCH */
#define CLI_SSD_REG_BATCH   256 /* keys per re-registration MC.OFFLOADDONE */
#define CLI_SSD_MAX_CONNS   64  /* peer connections served at once */
#define CLI_SSD_IO_MS       5000
#define CLI_SSD_MAX_STAGED  1024 /* staged extents at once */
#define CLI_SSD_ALIGN       ((size_t)64)
#define CLI_SSD_STAGE_REPLY 44 /* fixed part of a stage reply (status included) */
#define CLI_SSD_NSTATS      12
#define CLI_SSD_REMOVES     256   /* keys per MC.OFFLOADREMOVES */
#define CLI_SSD_LOST_BATCH  256   /* keys per MC.OFFLOADEVICTED */
#define CLI_SSD_LOST_MAX    65536 /* lost keys waiting for their report */
#define CLI_SSD_TRIES       4     /* stage attempts while the owner's staging area is full */
#define CLI_SSD_WORKERS     4     /* threads serving stage / release requests */

/* One staged extent of the staging area. */
struct cli_ssd_staged {
    uint64_t id;          /* the reader's handle (never 0) */
    size_t off, len;      /* extent in the staging area */
    uint64_t deadline_ms; /* freed by the GC after this (monotonic) */
    bool filling;         /* a worker is reading the value into it: not for the GC */
};

struct cli_ssd {
    struct sto *sto;
    char endpoint[128];
    int lfd;          /* listener */
    int wake[2];      /* pipe: stops the server thread */
    redisContext *rc; /* heartbeat thread's master connection */
    pthread_t hb_thr, srv_thr;
    bool hb_on, srv_on;

    /* Request workers (see DESIGN): connections with a request waiting, and those served. */
    pthread_t workers[CLI_SSD_WORKERS];
    unsigned n_workers;
    pthread_mutex_t q_mu;
    pthread_cond_t q_cv;
    int ready[CLI_SSD_MAX_CONNS]; /* fds to serve (FIFO) */
    size_t n_ready;
    int served[CLI_SSD_MAX_CONNS]; /* fds served, back to the poll set (-1: closed) */
    size_t n_served;
    bool q_stop;
    int back[2]; /* pipe: a worker served a connection */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    unsigned interval_ms;
    bool mounted; /* the master knows our disk */

    /* The staging area (under stage_mu, see DESIGN). */
    pthread_mutex_t stage_mu;
    void *stage;
    size_t stage_cap;
    bool stage_shared, stage_registered;
    uint64_t gc_ttl_ms, gc_interval_ms;
    struct cli_ssd_staged staged[CLI_SSD_MAX_STAGED]; /* sorted by off */
    size_t n_staged;
    uint64_t next_id;
    struct cli_ssd_stats stats; /* written by the server thread, read anywhere (atomics) */

    /* Records the store dropped, to report (see DESIGN). */
    pthread_mutex_t lost_mu;
    char **lost;
    size_t *lost_len;
    size_t n_lost, lost_cap;
    uint64_t lost_dropped; /* not listed: the list was full (under lost_mu) */
};

/* Adds v to a staging counter (relaxed atomics: cli__ssd_stats reads from other threads). */
#define CLI_SSD_ADD(field, v) __atomic_add_fetch(&(field), (uint64_t)(v), __ATOMIC_RELAXED)

/* ---- lost records ------------------------------------------------------------------------ */

/* Lists key (klen bytes) as lost, to report. Any thread; takes lost_mu only. */
static void cli_ssd_lost_add(struct cli_ssd *s, const void *key, size_t klen) {
    pthread_mutex_lock(&s->lost_mu);
    if (s->n_lost == s->lost_cap && s->lost_cap < CLI_SSD_LOST_MAX) {
        size_t cap = s->lost_cap ? 2 * s->lost_cap : 64;
        char **k = realloc(s->lost, cap * sizeof(*k));
        size_t *l = k ? realloc(s->lost_len, cap * sizeof(*l)) : NULL;
        if (k != NULL) {
            s->lost = k;
        }
        if (l != NULL) {
            s->lost_len = l;
            s->lost_cap = cap;
        }
    }
    char *copy = s->n_lost < s->lost_cap ? malloc(klen ? klen : 1) : NULL;
    if (copy == NULL) {
        s->lost_dropped++;
    } else {
        memcpy(copy, key, klen);
        s->lost[s->n_lost] = copy;
        s->lost_len[s->n_lost] = klen;
        s->n_lost++;
    }
    pthread_mutex_unlock(&s->lost_mu);
    CLI_SSD_ADD(s->stats.disk_lost, 1);
}

/* The store's eviction hook (runs under its exclusive lock: no store calls here). */
static void cli_ssd_evicted_cb(const void *key, size_t klen, uint64_t size, void *arg) {
    (void)size;
    cli_ssd_lost_add(arg, key, klen);
}

/* A read of key failed its CRC: the record is deleted and listed as lost. */
static void cli_ssd_corrupt(struct cli_ssd *s, const void *key, size_t klen) {
    if (sto_remove(s->sto, key, klen) == 0) {
        cli_ssd_lost_add(s, key, klen);
    }
}

/* ---- small I/O helpers ------------------------------------------------------------------- */

static void cli_ssd_le(unsigned char *d, uint64_t v, int n) {
    for (int i = 0; i < n; i++) {
        d[i] = (unsigned char)(v >> (8 * i));
    }
}

static uint64_t cli_ssd_get(const unsigned char *d, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) {
        v = (v << 8) | d[i];
    }
    return v;
}

/* Writes or reads exactly n bytes on a blocking socket. Returns 0 or -errno (-ECONNRESET when
 * the peer closed the connection). */
static int cli_ssd_full(int fd, void *buf, size_t n, bool wr) {
    char *p = buf;
    while (n > 0) {
        ssize_t k = wr ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return k == 0 ? -ECONNRESET : -errno;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void cli_ssd_timeouts(int fd) {
    struct timeval tv = {.tv_sec = CLI_SSD_IO_MS / 1000, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- the staging area (server thread only) ----------------------------------------------- */

/* Allocates the registered staging area (MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES bytes; memfd
 * memory with the shm transport, so same-host readers map it). Returns 0 or a negative code. */
static int cli_ssd_stage_init(struct crescent_store *st, struct cli_ssd *s, uint64_t size,
                              uint64_t ttl_ms, uint64_t gc_interval_s) {
    s->stage_cap = (size_t)size;
    s->gc_ttl_ms = ttl_ms;
    s->gc_interval_ms = gc_interval_s * 1000;
    if (strcmp(st->protocol, "shm") == 0 &&
        crescent_xfer_alloc_shared(st->eng, s->stage_cap, &s->stage) == 0) {
        s->stage_shared = true;
    } else {
        void *p =
            mmap(NULL, s->stage_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            return cli_fail(ENOMEM,
                            "ssd: cannot allocate the %zu-byte staging buffer "
                            "(MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES)",
                            s->stage_cap);
        }
        s->stage = p;
    }
    int rc = crescent_xfer_register(st->eng, s->stage, s->stage_cap, "cpu:0", CRESCENT_XFER_REMOTE);
    if (rc < 0) {
        return cli_fail(-rc, "ssd: register the staging buffer: %s", crescent_xfer_strerror(rc));
    }
    s->stage_registered = true;
    return 0;
}

static void cli_ssd_stage_fini(struct crescent_store *st, struct cli_ssd *s) {
    if (s->stage == NULL) {
        return;
    }
    if (s->stage_registered) {
        crescent_xfer_unregister(st->eng, s->stage);
    }
    if (s->stage_shared) {
        crescent_xfer_free_shared(st->eng, s->stage);
    } else {
        munmap(s->stage, s->stage_cap);
    }
    s->stage = NULL;
}

/* Finds room for len bytes (first fit between the staged extents, which are sorted by
 * offset). Returns the index the new extent goes to and its offset in *off, or -1. */
static long cli_ssd_stage_fit(const struct cli_ssd *s, size_t len, size_t *off) {
    if (s->n_staged == CLI_SSD_MAX_STAGED) {
        return -1;
    }
    size_t at = 0;
    for (size_t i = 0; i <= s->n_staged; i++) {
        size_t next = i < s->n_staged ? s->staged[i].off : s->stage_cap;
        if (next >= at && next - at >= len) {
            *off = at;
            return (long)i;
        }
        if (i < s->n_staged) {
            at = (s->staged[i].off + s->staged[i].len + CLI_SSD_ALIGN - 1) & ~(CLI_SSD_ALIGN - 1);
        }
    }
    return -1;
}

static void cli_ssd_stage_drop(struct cli_ssd *s, size_t i) {
    CLI_SSD_ADD(s->stats.in_use, -(uint64_t)s->staged[i].len);
    CLI_SSD_ADD(s->stats.live, -(uint64_t)1);
    memmove(&s->staged[i], &s->staged[i + 1], (s->n_staged - i - 1) * sizeof(s->staged[0]));
    s->n_staged--;
}

/* Frees every staged extent whose TTL has passed (the reader never released it). stage_mu
 * held. */
static void cli_ssd_stage_gc(struct crescent_store *st, struct cli_ssd *s) {
    uint64_t now = cm_mono_ms();
    for (size_t i = 0; i < s->n_staged;) {
        if (now >= s->staged[i].deadline_ms && !s->staged[i].filling) {
            cli_log(st, 3,
                    "store client %s: staging buffer %llu not released within %llu ms, freed",
                    st->client_id, (unsigned long long)s->staged[i].id,
                    (unsigned long long)s->gc_ttl_ms);
            cli_ssd_stage_drop(s, i);
            CLI_SSD_ADD(s->stats.gc_freed, 1);
        } else {
            i++;
        }
    }
}

/* ---- the offload endpoint server ---------------------------------------------------------- */

/* Sends a bare status reply. Returns 0 or -1 (close the connection). */
static int cli_ssd_status(int fd, int64_t status) {
    unsigned char b[8];
    cli_ssd_le(b, (uint64_t)status, 8);
    return cli_ssd_full(fd, b, 8, true) < 0 ? -1 : 0;
}

/*
 * 'S': stages key (the reader expects `want` bytes) in the staging area. Errors go back as a
 * status: -CM_EOBJECT_NOT_FOUND-style codes from sto, -EMSGSIZE (size differs), -EFBIG (larger
 * than the whole area), -ENOSPC (area or extent table full now: retry).
 */
static int cli_ssd_serve_stage(struct crescent_store *st, struct cli_ssd *s, int fd) {
    unsigned char hdr[4], w[8];
    if (cli_ssd_full(fd, hdr, 4, false) < 0) {
        return -1;
    }
    uint32_t klen = (uint32_t)cli_ssd_get(hdr, 4);
    char key[STO_KEY_MAX];
    if (klen == 0 || klen > STO_KEY_MAX || cli_ssd_full(fd, key, klen, false) < 0 ||
        cli_ssd_full(fd, w, 8, false) < 0) {
        return -1;
    }
    uint64_t want = cli_ssd_get(w, 8);
    ssize_t size = sto_get_size(s->sto, key, klen);
    if (size < 0) {
        return cli_ssd_status(fd, size);
    }
    if ((uint64_t)size != want) {
        return cli_ssd_status(fd, -EMSGSIZE);
    }
    if ((size_t)size > s->stage_cap) {
        return cli_ssd_status(fd, -EFBIG);
    }
    size_t off = 0, len = (size_t)size ? (size_t)size : 1;
    pthread_mutex_lock(&s->stage_mu);
    long at = cli_ssd_stage_fit(s, len, &off);
    if (at < 0) {
        cli_ssd_stage_gc(st, s);
        at = cli_ssd_stage_fit(s, len, &off);
    }
    if (at < 0) {
        pthread_mutex_unlock(&s->stage_mu);
        CLI_SSD_ADD(s->stats.refused_full, 1);
        return cli_ssd_status(fd, -ENOSPC);
    }
    struct cli_ssd_staged e = {.id = ++s->next_id,
                               .off = off,
                               .len = len,
                               .deadline_ms = cm_mono_ms() + s->gc_ttl_ms,
                               .filling = true};
    memmove(&s->staged[at + 1], &s->staged[at], (s->n_staged - (size_t)at) * sizeof(e));
    s->staged[at] = e;
    s->n_staged++;
    CLI_SSD_ADD(s->stats.in_use, e.len);
    CLI_SSD_ADD(s->stats.live, 1);
    pthread_mutex_unlock(&s->stage_mu);
    char *dst = (char *)s->stage + off;
    ssize_t n = sto_get(s->sto, key, klen, dst, (size_t)size); /* the extent is ours alone */
    if (n == -CM_ECORRUPT) {
        cli_ssd_corrupt(s, key, klen);
        n = -CM_EOBJECT_NOT_FOUND; /* the reader sees the record gone, as after the report */
    }
    bool ok = n == size;
    uint32_t crc = ok ? sto_crc32c(0, dst, (size_t)size) : 0; /* before the GC may see it */
    pthread_mutex_lock(&s->stage_mu);
    for (size_t i = 0; i < s->n_staged; i++) {
        if (s->staged[i].id == e.id) {
            if (!ok) {
                cli_ssd_stage_drop(s, i);
            } else {
                s->staged[i].filling = false;
                s->staged[i].deadline_ms = cm_mono_ms() + s->gc_ttl_ms;
            }
            break;
        }
    }
    pthread_mutex_unlock(&s->stage_mu);
    if (!ok) {
        return cli_ssd_status(fd, n < 0 ? n : -EIO);
    }
    CLI_SSD_ADD(s->stats.staged, 1);
    CLI_SSD_ADD(s->stats.staged_bytes, size);
    ssize_t dlen = crescent_xfer_export_desc(st->eng, NULL, 0);
    unsigned char *r = dlen > 0 ? malloc(CLI_SSD_STAGE_REPLY + (size_t)dlen) : NULL;
    if (r == NULL ||
        crescent_xfer_export_desc(st->eng, r + CLI_SSD_STAGE_REPLY, (size_t)dlen) < 0) {
        free(r);
        return cli_ssd_status(fd, -ENOMEM); /* the extent goes with the GC */
    }
    cli_ssd_le(r, 0, 8);
    cli_ssd_le(r + 8, e.id, 8);
    cli_ssd_le(r + 16, (uint64_t)(uintptr_t)dst, 8);
    cli_ssd_le(r + 24, (uint64_t)size, 8);
    cli_ssd_le(r + 32, crc, 4);
    cli_ssd_le(r + 36, s->gc_ttl_ms > UINT32_MAX ? UINT32_MAX : s->gc_ttl_ms, 4);
    cli_ssd_le(r + 40, (uint64_t)dlen, 4);
    int rc = cli_ssd_full(fd, r, CLI_SSD_STAGE_REPLY + (size_t)dlen, true);
    free(r);
    return rc < 0 ? -1 : 0;
}

/* 'R': releases staged extent id. Status 0, or -ENOENT (unknown, released or freed by GC). */
static int cli_ssd_serve_release(struct cli_ssd *s, int fd) {
    unsigned char b[8];
    if (cli_ssd_full(fd, b, 8, false) < 0) {
        return -1;
    }
    uint64_t id = cli_ssd_get(b, 8);
    int found = 0;
    pthread_mutex_lock(&s->stage_mu);
    for (size_t i = 0; i < s->n_staged && !found; i++) {
        if (s->staged[i].id == id && !s->staged[i].filling) {
            cli_ssd_stage_drop(s, i);
            found = 1;
        }
    }
    pthread_mutex_unlock(&s->stage_mu);
    if (found) {
        CLI_SSD_ADD(s->stats.released, 1);
    }
    return cli_ssd_status(fd, found ? 0 : -ENOENT);
}

/* 'T': the staging counters (status 0, then CLI_SSD_NSTATS u64). */
static int cli_ssd_serve_stats(struct crescent_store *st, int fd) {
    struct cli_ssd_stats c;
    cli__ssd_stats(st, &c);
    const uint64_t v[CLI_SSD_NSTATS] = {c.capacity,  c.in_use,     c.live,         c.staged,
                                        c.released,  c.gc_freed,   c.refused_full, c.staged_bytes,
                                        c.disk_keys, c.disk_bytes, c.disk_lost,    c.disk_removed};
    unsigned char b[8 + 8 * CLI_SSD_NSTATS];
    cli_ssd_le(b, 0, 8);
    for (int i = 0; i < CLI_SSD_NSTATS; i++) {
        cli_ssd_le(b + 8 + 8 * i, v[i], 8);
    }
    return cli_ssd_full(fd, b, sizeof(b), true) < 0 ? -1 : 0;
}

/* Serves one request on fd. Returns 0, or -1 when the connection should close. */
static int cli_ssd_serve_one(struct crescent_store *st, struct cli_ssd *s, int fd) {
    unsigned char op;
    if (cli_ssd_full(fd, &op, 1, false) < 0) {
        return -1;
    }
    switch (op) {
    case 'S':
        return cli_ssd_serve_stage(st, s, fd);
    case 'R':
        return cli_ssd_serve_release(s, fd);
    case 'T':
        return cli_ssd_serve_stats(st, fd);
    default:
        return -1;
    }
}

/* Worker thread: serves one request per connection taken from the ready queue, then hands
 * the connection back to the server thread (or -1 when it closed it). */
static void *cli_ssd_worker_main(void *arg) {
    struct crescent_store *st = arg;
    struct cli_ssd *s = st->ssd;
    pthread_mutex_lock(&s->q_mu);
    for (;;) {
        while (s->n_ready == 0 && !s->q_stop) {
            pthread_cond_wait(&s->q_cv, &s->q_mu);
        }
        if (s->q_stop) {
            break; /* what is still queued is closed by cli__ssd_stop */
        }
        int fd = s->ready[0];
        memmove(&s->ready[0], &s->ready[1], --s->n_ready * sizeof(s->ready[0]));
        pthread_mutex_unlock(&s->q_mu);
        if (cli_ssd_serve_one(st, s, fd) < 0) {
            close(fd);
            fd = -1;
        }
        pthread_mutex_lock(&s->q_mu);
        s->served[s->n_served++] = fd;
        char c = 1;
        ssize_t w = write(s->back[1], &c, 1); /* a full pipe already holds a wakeup */
        (void)w;
    }
    pthread_mutex_unlock(&s->q_mu);
    return NULL;
}

/* Server thread: takes the connections handed back by the workers into the poll set p (n
 * entries); returns how many connections left the system (closed by a worker). */
static size_t cli_ssd_take_back(struct cli_ssd *s, struct pollfd *p, size_t *n) {
    char drain[64];
    while (read(s->back[0], drain, sizeof(drain)) > 0) {
    }
    size_t closed = 0;
    pthread_mutex_lock(&s->q_mu);
    for (size_t i = 0; i < s->n_served; i++) {
        if (s->served[i] < 0) {
            closed++;
        } else {
            p[(*n)++] = (struct pollfd){.fd = s->served[i], .events = POLLIN};
        }
    }
    s->n_served = 0;
    pthread_mutex_unlock(&s->q_mu);
    return closed;
}

/* Server thread: moves connection i of the poll set (a request is waiting) to the workers. */
static void cli_ssd_hand_over(struct cli_ssd *s, struct pollfd *p, size_t *n, size_t i) {
    pthread_mutex_lock(&s->q_mu);
    s->ready[s->n_ready++] = p[i].fd;
    pthread_cond_signal(&s->q_cv);
    pthread_mutex_unlock(&s->q_mu);
    p[i] = p[--*n];
}

static void *cli_ssd_server_main(void *arg) {
    struct crescent_store *st = arg;
    struct cli_ssd *s = st->ssd;
    struct pollfd p[CLI_SSD_MAX_CONNS + 3];
    size_t n = 3, conns = 0; /* conns: accepted and open, polled here or with a worker */
    p[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
    p[1] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
    p[2] = (struct pollfd){.fd = s->back[0], .events = POLLIN};
    for (;;) {
        /* While something is staged, wake every GC interval to free what outlived its TTL. */
        pthread_mutex_lock(&s->stage_mu);
        int timeout = s->n_staged > 0 ? (int)s->gc_interval_ms : -1;
        pthread_mutex_unlock(&s->stage_mu);
        if (poll(p, n, timeout) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (p[0].revents) {
            break;
        }
        pthread_mutex_lock(&s->stage_mu);
        cli_ssd_stage_gc(st, s);
        pthread_mutex_unlock(&s->stage_mu);
        for (size_t i = 3; i < n;) {
            if (p[i].revents) {
                cli_ssd_hand_over(s, p, &n, i); /* p[i] is now another entry */
            } else {
                i++;
            }
        }
        if (p[2].revents) {
            conns -= cli_ssd_take_back(s, p, &n);
        }
        if ((p[1].revents & POLLIN) && conns < CLI_SSD_MAX_CONNS) {
            int fd = accept(s->lfd, NULL, NULL);
            if (fd >= 0) {
                cli_ssd_timeouts(fd);
                p[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
                conns++;
            }
        }
    }
    for (size_t i = 3; i < n; i++) {
        close(p[i].fd);
    }
    return NULL;
}

/* Listens on host (the part of local_hostname before any ':') at an ephemeral port. */
static int cli_ssd_listen(struct crescent_store *st, struct cli_ssd *s) {
    char host[256];
    snprintf(host, sizeof(host), "%s", st->hostname);
    char *colon = strchr(host, ':');
    if (colon != NULL) {
        *colon = '\0';
    }
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, NULL, &hints, &ai) != 0 || ai == NULL) {
        return cli_fail(EINVAL, "ssd: cannot resolve local host '%s'", host);
    }
    struct sockaddr_in sa;
    memcpy(&sa, ai->ai_addr, sizeof(sa));
    freeaddrinfo(ai);
    sa.sin_port = 0;
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t sl = sizeof(sa);
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(s->lfd, 64) < 0 || getsockname(s->lfd, (struct sockaddr *)&sa, &sl) < 0) {
        return cli_fail(errno, "ssd: offload listener on %s: %s", host, strerror(errno));
    }
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
    snprintf(s->endpoint, sizeof(s->endpoint), "%s:%u", ip, (unsigned)ntohs(sa.sin_port));
    return 0;
}

/* ---- master side: mount, re-register, drain ---------------------------------------------- */

static int cli_ssd_cmd(struct crescent_store *st, struct cli_ssd *s, int argc, const char **argv,
                       const size_t *lens, redisReply **out) {
    return cli__command(st, &s->rc, argc, argv, lens, out);
}

/* Collects keys of the scan into a batch of MC.OFFLOADDONE arguments. */
struct cli_ssd_reg {
    struct crescent_store *st;
    struct cli_ssd *s;
    char **keys;
    size_t *klens;
    uint64_t *sizes;
    size_t n;
    size_t cap;
};

static void cli_ssd_scan_cb(const void *key, size_t klen, uint64_t size, void *arg) {
    struct cli_ssd_reg *g = arg;
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        g->keys = realloc(g->keys, g->cap * sizeof(*g->keys));
        g->klens = realloc(g->klens, g->cap * sizeof(*g->klens));
        g->sizes = realloc(g->sizes, g->cap * sizeof(*g->sizes));
        if (g->keys == NULL || g->klens == NULL || g->sizes == NULL) {
            abort(); /* as cm_malloc: a daemon out of memory stops */
        }
    }
    g->keys[g->n] = malloc(klen ? klen : 1);
    if (g->keys[g->n] == NULL) {
        abort();
    }
    memcpy(g->keys[g->n], key, klen);
    g->klens[g->n] = klen;
    g->sizes[g->n] = size;
    g->n++;
}

/*
 * 1 when a report's result e says the master will never use this disk record: the object was
 * removed or replaced since its task was fetched (OBJECT_NOT_FOUND), or a re-registered key
 * holds another live value (OBJECT_ALREADY_EXISTS).
 */
static bool cli_ssd_refused(const redisReply *e) {
    static const char *const codes[] = {"OBJECT_NOT_FOUND ", "OBJECT_ALREADY_EXISTS "};
    if (e->type != REDIS_REPLY_ERROR) {
        return false;
    }
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (e->len >= strlen(codes[i]) && memcmp(e->str, codes[i], strlen(codes[i])) == 0) {
            return true;
        }
    }
    return false;
}

/* Sends MC.OFFLOADDONE for keys[0..n) with their sizes; records the master refused for good
 * (cli_ssd_refused) are deleted. Returns the number accepted or a
 * negative code (the command failed as a whole). */
static long cli_ssd_done(struct crescent_store *st, struct cli_ssd *s, char *const *keys,
                         const size_t *klens, const uint64_t *sizes, size_t n) {
    size_t argc = 2 + 2 * n;
    const char **argv = calloc(argc, sizeof(*argv));
    size_t *lens = calloc(argc, sizeof(*lens));
    char(*nums)[24] = calloc(n ? n : 1, sizeof(*nums));
    if (argv == NULL || lens == NULL || nums == NULL) {
        free(argv);
        free(lens);
        free(nums);
        return -ENOMEM;
    }
    argv[0] = "MC.OFFLOADDONE";
    lens[0] = strlen(argv[0]);
    argv[1] = st->client_id;
    lens[1] = strlen(st->client_id);
    for (size_t i = 0; i < n; i++) {
        snprintf(nums[i], sizeof(nums[i]), "%llu", (unsigned long long)sizes[i]);
        argv[2 + 2 * i] = keys[i];
        lens[2 + 2 * i] = klens[i];
        argv[3 + 2 * i] = nums[i];
        lens[3 + 2 * i] = strlen(nums[i]);
    }
    redisReply *r;
    int rc = cli_ssd_cmd(st, s, (int)argc, argv, lens, &r);
    free(argv);
    free(lens);
    free(nums);
    if (rc < 0) {
        return rc;
    }
    long ok = 0;
    if ((rc = cli__reply_err(r)) == 0 && r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements && i < n; i++) {
            const redisReply *e = r->element[i];
            ok += e->type != REDIS_REPLY_ERROR;
            if (cli_ssd_refused(e)) {
                sto_remove(s->sto, keys[i], klens[i]); /* no object of the master uses it */
            }
        }
    }
    freeReplyObject(r);
    return rc < 0 ? rc : ok;
}

/* MC.MOUNTDISK, then re-registers every key of the store. Returns 0 or a negative code. */
static int cli_ssd_mount(struct crescent_store *st, struct cli_ssd *s) {
    const char *argv[] = {"MC.MOUNTDISK", st->client_id, s->endpoint};
    redisReply *r;
    int rc = cli_ssd_cmd(st, s, 3, argv, NULL, &r);
    if (rc < 0) {
        return rc;
    }
    rc = cli__reply_err(r);
    freeReplyObject(r);
    if (rc < 0) {
        return rc;
    }
    struct cli_ssd_reg g = {.st = st, .s = s};
    uint64_t cursor = 0;
    do {
        sto_scan(s->sto, &cursor, cli_ssd_scan_cb, &g);
    } while (cursor != 0);
    long accepted = 0;
    for (size_t i = 0; i < g.n && rc == 0; i += CLI_SSD_REG_BATCH) {
        size_t k = g.n - i < CLI_SSD_REG_BATCH ? g.n - i : CLI_SSD_REG_BATCH;
        long a = cli_ssd_done(st, s, g.keys + i, g.klens + i, g.sizes + i, k);
        rc = a < 0 ? (int)a : 0;
        accepted += a > 0 ? a : 0;
    }
    for (size_t i = 0; i < g.n; i++) {
        free(g.keys[i]);
    }
    free(g.keys);
    free(g.klens);
    free(g.sizes);
    if (rc == 0) {
        s->mounted = true;
        cli_log(st, 2,
                "store client %s: SSD tier mounted at %s, %zu objects found, %ld "
                "re-registered",
                st->client_id, s->endpoint, g.n, accepted);
    }
    return rc;
}

/* The bytes of [addr, addr + size) when they lie in one of this client's segments, or NULL. */
static const void *cli_ssd_own_bytes(struct crescent_store *st, uint64_t addr, uint64_t size) {
    const void *p = NULL;
    pthread_mutex_lock(&st->seg_mu);
    for (size_t i = 0; i < st->n_segs && p == NULL; i++) {
        uint64_t base = (uint64_t)(uintptr_t)st->segs[i].base;
        if (addr >= base && size <= st->segs[i].size && addr - base <= st->segs[i].size - size) {
            p = (const void *)(uintptr_t)addr;
        }
    }
    pthread_mutex_unlock(&st->seg_mu);
    return p;
}

/*
 * One drain step: fetches up to CLI_SSD_FETCH tasks, writes each value from this client's own
 * segment to the store and reports the ones written within the task's read lease (after it
 * the master may have reused the buffer, so a later copy is dropped). Returns the number of tasks
 * fetched, or a negative code.
 */
static long cli_ssd_drain_once(struct crescent_store *st, struct cli_ssd *s) {
    char max[16];
    snprintf(max, sizeof(max), "%d", CLI_SSD_FETCH);
    const char *argv[] = {"MC.OFFLOADFETCH", st->client_id, max};
    redisReply *r;
    uint64_t t0 = cm_mono_ms(); /* the leases of the tasks start after this */
    int rc = cli_ssd_cmd(st, s, 3, argv, NULL, &r);
    if (rc < 0) {
        return rc;
    }
    if ((rc = cli__reply_err(r)) < 0 || r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return rc < 0 ? rc : -CRESCENT_STORE_ERPC_FAIL;
    }
    size_t n = r->elements, ok = 0;
    char **keys = calloc(n ? n : 1, sizeof(*keys));
    size_t *klens = calloc(n ? n : 1, sizeof(*klens));
    uint64_t *sizes = calloc(n ? n : 1, sizeof(*sizes));
    for (size_t i = 0; keys && klens && sizes && i < n; i++) {
        const redisReply *t = r->element[i], *k = cli__field(t, "key");
        struct cli_replica rep;
        if (k == NULL || k->type != REDIS_REPLY_STRING ||
            cli__parse_replica(cli__field(t, "replica"), &rep) < 0) {
            continue;
        }
        const void *src = cli_ssd_own_bytes(st, rep.addr, rep.size);
        if (src == NULL) {
            cli_log(st, 3, "store client %s: offload task outside own segments", st->client_id);
            continue;
        }
        const redisReply *ttl = cli__field(t, "lease_ttl_ms");
        rc = sto_put_buf(s->sto, k->str, k->len, src, rep.size);
        if (rc == 0 && (ttl == NULL || ttl->type != REDIS_REPLY_INTEGER ||
                        cm_mono_ms() - t0 >= (uint64_t)ttl->integer)) {
            /* The lease ran out during the copy: the buffer may have been reused. */
            cli_log(st, 3, "store client %s: offload copy outlived its lease, not reported",
                    st->client_id);
            sto_remove(s->sto, k->str, k->len);
            continue;
        }
        if (rc < 0) {
            cli_log(st, 3, "store client %s: SSD write of a %llu-byte value failed: %s",
                    st->client_id, (unsigned long long)rep.size, strerror(-rc));
            continue;
        }
        keys[ok] = k->str;
        klens[ok] = k->len;
        sizes[ok] = rep.size;
        ok++;
    }
    long done = ok ? cli_ssd_done(st, s, keys, klens, sizes, ok) : 0;
    free(keys);
    free(klens);
    free(sizes);
    freeReplyObject(r);
    return done < 0 ? done : (long)n;
}

/*
 * Deletes the records the master asks for (MC.OFFLOADREMOVES, up to CLI_SSD_REMOVES keys).
 * Returns the number of keys received, or a negative code.
 */
static long cli_ssd_removes_once(struct crescent_store *st, struct cli_ssd *s) {
    char max[16];
    snprintf(max, sizeof(max), "%d", CLI_SSD_REMOVES);
    const char *argv[] = {"MC.OFFLOADREMOVES", st->client_id, max};
    redisReply *r;
    int rc = cli_ssd_cmd(st, s, 3, argv, NULL, &r);
    if (rc < 0) {
        return rc;
    }
    if ((rc = cli__reply_err(r)) < 0 || r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return rc < 0 ? rc : -CRESCENT_STORE_ERPC_FAIL;
    }
    size_t n = r->elements;
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = r->element[i];
        if (k->type == REDIS_REPLY_STRING && sto_remove(s->sto, k->str, k->len) == 0) {
            CLI_SSD_ADD(s->stats.disk_removed, 1);
        }
    }
    freeReplyObject(r);
    return (long)n;
}

/*
 * Reports the lost records (MC.OFFLOADEVICTED) that are still absent from the store, in
 * batches of CLI_SSD_LOST_BATCH. A batch the master did not answer goes back on the list.
 * Returns 0 or the negative code of the failed command.
 */
static int cli_ssd_report_lost(struct crescent_store *st, struct cli_ssd *s) {
    pthread_mutex_lock(&s->lost_mu);
    char **keys = s->lost;
    size_t *lens = s->lost_len, n = s->n_lost;
    s->lost = NULL;
    s->lost_len = NULL;
    s->n_lost = s->lost_cap = 0;
    pthread_mutex_unlock(&s->lost_mu);
    const char **argv = calloc(2 + CLI_SSD_LOST_BATCH, sizeof(*argv));
    size_t *alen = calloc(2 + CLI_SSD_LOST_BATCH, sizeof(*alen));
    int rc = argv == NULL || alen == NULL ? -ENOMEM : 0;
    size_t i = 0;
    while (rc == 0 && i < n) {
        argv[0] = "MC.OFFLOADEVICTED";
        alen[0] = strlen(argv[0]);
        argv[1] = st->client_id;
        alen[1] = strlen(st->client_id);
        size_t argc = 2, j = i;
        for (; j < n && argc < 2 + CLI_SSD_LOST_BATCH; j++) {
            if (!sto_exists(s->sto, keys[j], lens[j])) { /* else written again since */
                argv[argc] = keys[j];
                alen[argc++] = lens[j];
            }
        }
        redisReply *r = NULL;
        if (argc > 2 && (rc = cli_ssd_cmd(st, s, (int)argc, argv, alen, &r)) == 0) {
            rc = cli__reply_err(r); /* per-key errors (already gone, ...) need nothing */
            freeReplyObject(r);
        }
        if (rc == 0) {
            for (; i < j; i++) {
                free(keys[i]);
            }
        }
    }
    for (; i < n; i++) { /* not reported: back on the list for the next beat */
        cli_ssd_lost_add(s, keys[i], lens[i]);
        __atomic_sub_fetch(&s->stats.disk_lost, 1, __ATOMIC_RELAXED);
        free(keys[i]);
    }
    free(keys);
    free(lens);
    free(argv);
    free(alen);
    return rc;
}

/* 1 when code says the master no longer knows this client's disk (restart or expiry). */
static bool cli_ssd_forgotten(long code) {
    return code == -CRESCENT_STORE_ESEGMENT_NOT_FOUND || code == -CRESCENT_STORE_ECLIENT_NOT_FOUND;
}

/*
 * One heartbeat: (re)mount when needed, delete the records the master removed, drain the
 * offload queue, report the records the store dropped. Deletions come first so that a key
 * removed and then written again is deleted before its new value is written.
 */
static void cli_ssd_heartbeat(struct crescent_store *st, struct cli_ssd *s) {
    if (!s->mounted && cli_ssd_mount(st, s) < 0) {
        return; /* the store's ping thread re-registers the client; retry next beat */
    }
    long n;
    do {
        n = cli_ssd_removes_once(st, s);
    } while (n == CLI_SSD_REMOVES);
    if (n >= 0) {
        do {
            n = cli_ssd_drain_once(st, s);
        } while (n == CLI_SSD_FETCH);
    }
    if (n >= 0) {
        n = cli_ssd_report_lost(st, s);
    }
    if (cli_ssd_forgotten(n)) {
        s->mounted = false; /* the master forgot us (restart or expiry): mount and re-scan */
    }
}

static void *cli_ssd_hb_main(void *arg) {
    struct crescent_store *st = arg;
    struct cli_ssd *s = st->ssd;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        pthread_mutex_unlock(&s->mu);
        cli_ssd_heartbeat(st, s);
        pthread_mutex_lock(&s->mu);
        if (s->stop) {
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += s->interval_ms / 1000;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- life cycle -------------------------------------------------------------------------- */

/* Starts the SSD tier of st in directory path; see cli_store.h. */
int cli__ssd_start(struct crescent_store *st, const char *path) {
    struct sto_config cfg;
    char err[STO_ERR_LEN];
    if (sto_config_from_env(&cfg, err, sizeof(err)) < 0) {
        return cli_fail(EINVAL, "ssd_offload_path: %s", err);
    }
    struct cli_ssd *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return -ENOMEM;
    }
    s->lfd = -1;
    s->wake[0] = s->wake[1] = -1;
    s->back[0] = s->back[1] = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_init(&s->lost_mu, NULL);
    pthread_mutex_init(&s->stage_mu, NULL);
    pthread_mutex_init(&s->q_mu, NULL);
    pthread_cond_init(&s->q_cv, NULL);
    s->interval_ms = (unsigned)cfg.heartbeat_interval_s * 1000u;
    st->ssd = s;
    int rc = sto_open(&cfg, path, &s->sto, err, sizeof(err));
    if (rc < 0) {
        return cli_fail(-rc, "ssd_offload_path %s: %s", path, err);
    }
    sto_set_evict_cb(s->sto, cli_ssd_evicted_cb, s);
    if ((rc = cli_ssd_stage_init(st, s, cfg.local_buffer_size, cfg.buffer_gc_ttl_ms,
                                 cfg.buffer_gc_interval_s)) < 0 ||
        (rc = cli_ssd_listen(st, s)) < 0) {
        return rc;
    }
    if (pipe2(s->wake, O_CLOEXEC) < 0 || pipe2(s->back, O_CLOEXEC | O_NONBLOCK) < 0) {
        return cli_fail(errno, "ssd: pipe: %s", strerror(errno));
    }
    if ((rc = cli_ssd_mount(st, s)) < 0) {
        return rc;
    }
    for (; s->n_workers < CLI_SSD_WORKERS; s->n_workers++) {
        rc = pthread_create(&s->workers[s->n_workers], NULL, cli_ssd_worker_main, st);
        if (rc != 0) {
            return cli_fail(rc, "ssd: worker thread: %s", strerror(rc));
        }
    }
    if ((rc = pthread_create(&s->srv_thr, NULL, cli_ssd_server_main, st)) != 0) {
        return cli_fail(rc, "ssd: server thread: %s", strerror(rc));
    }
    s->srv_on = true;
    if ((rc = pthread_create(&s->hb_thr, NULL, cli_ssd_hb_main, st)) != 0) {
        return cli_fail(rc, "ssd: heartbeat thread: %s", strerror(rc));
    }
    s->hb_on = true;
    return 0;
}

/* Stops the SSD tier: joins the threads, unmounts the disk (best effort), closes the store. */
void cli__ssd_stop(struct crescent_store *st) {
    struct cli_ssd *s = st->ssd;
    if (s == NULL) {
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->hb_on) {
        pthread_join(s->hb_thr, NULL);
    }
    if (s->srv_on) {
        char c = 1;
        ssize_t w = write(s->wake[1], &c, 1);
        (void)w;
        pthread_join(s->srv_thr, NULL);
    }
    pthread_mutex_lock(&s->q_mu);
    s->q_stop = true;
    pthread_cond_broadcast(&s->q_cv);
    pthread_mutex_unlock(&s->q_mu);
    for (unsigned i = 0; i < s->n_workers; i++) {
        pthread_join(s->workers[i], NULL);
    }
    for (size_t i = 0; i < s->n_ready; i++) {
        close(s->ready[i]);
    }
    for (size_t i = 0; i < s->n_served; i++) {
        if (s->served[i] >= 0) {
            close(s->served[i]);
        }
    }
    if (s->mounted) {
        const char *argv[] = {"MC.UNMOUNTDISK", st->client_id};
        redisReply *r;
        if (cli_ssd_cmd(st, s, 2, argv, NULL, &r) == 0) {
            freeReplyObject(r);
        }
    }
    redisFree(s->rc);
    if (s->lfd >= 0) {
        close(s->lfd);
    }
    for (int i = 0; i < 2; i++) {
        if (s->wake[i] >= 0) {
            close(s->wake[i]);
        }
        if (s->back[i] >= 0) {
            close(s->back[i]);
        }
    }
    cli_ssd_stage_fini(st, s);
    sto_close(s->sto);
    for (size_t i = 0; i < s->n_lost; i++) {
        free(s->lost[i]);
    }
    free(s->lost);
    free(s->lost_len);
    pthread_mutex_destroy(&s->lost_mu);
    pthread_mutex_destroy(&s->stage_mu);
    pthread_mutex_destroy(&s->q_mu);
    pthread_cond_destroy(&s->q_cv);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    st->ssd = NULL;
}

/* Copies the staging counters of st's SSD tier; see cli_store.h. */
int cli__ssd_stats(const struct crescent_store *st, struct cli_ssd_stats *out) {
    memset(out, 0, sizeof(*out));
    if (st->ssd == NULL) {
        return -ENOENT;
    }
    const struct cli_ssd_stats *c = &st->ssd->stats;
    out->capacity = st->ssd->stage_cap;
    out->in_use = __atomic_load_n(&c->in_use, __ATOMIC_RELAXED);
    out->live = __atomic_load_n(&c->live, __ATOMIC_RELAXED);
    out->staged = __atomic_load_n(&c->staged, __ATOMIC_RELAXED);
    out->released = __atomic_load_n(&c->released, __ATOMIC_RELAXED);
    out->gc_freed = __atomic_load_n(&c->gc_freed, __ATOMIC_RELAXED);
    out->refused_full = __atomic_load_n(&c->refused_full, __ATOMIC_RELAXED);
    out->staged_bytes = __atomic_load_n(&c->staged_bytes, __ATOMIC_RELAXED);
    out->disk_lost = __atomic_load_n(&c->disk_lost, __ATOMIC_RELAXED);
    out->disk_removed = __atomic_load_n(&c->disk_removed, __ATOMIC_RELAXED);
    if (st->ssd->sto != NULL) {
        struct sto_stats ss;
        sto_stats(st->ssd->sto, &ss);
        out->disk_keys = ss.keys;
        out->disk_bytes = ss.bytes;
    }
    return 0;
}

/* The offload endpoint of st's SSD tier, or NULL. */
const char *cli__ssd_endpoint(const struct crescent_store *st) {
    return st->ssd ? st->ssd->endpoint : NULL;
}

/* Connects to host:port endpoint. Returns a socket or a negative code. */
static int cli_ssd_connect(const char *endpoint) {
    char host[128];
    snprintf(host, sizeof(host), "%s", endpoint);
    char *colon = strrchr(host, ':');
    if (colon == NULL) {
        return -EINVAL;
    }
    *colon = '\0';
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || ai == NULL) {
        return -EHOSTUNREACH;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        cli_ssd_timeouts(fd);
    }
    int rc = fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 ? -errno : 0;
    freeaddrinfo(ai);
    if (rc < 0) {
        if (fd >= 0) {
            close(fd);
        }
        return rc;
    }
    return fd;
}

/* Reads key's value (size bytes, then the trailer when not NULL) from this client's own disk. */
static int cli_ssd_read_own(struct crescent_store *st, const char *key, void *dst, uint64_t size,
                            unsigned char *trailer) {
    uint64_t all = size + (trailer != NULL ? CLI_TRAILER : 0);
    char *whole = trailer != NULL ? malloc(all ? all : 1) : dst;
    if (whole == NULL) {
        return -ENOMEM;
    }
    ssize_t n = sto_get(st->ssd->sto, key, strlen(key), whole, all);
    if (n == -CM_ECORRUPT) {
        cli_ssd_corrupt(st->ssd, key, strlen(key));
    }
    if (n >= 0 && (uint64_t)n == all && trailer != NULL) {
        memcpy(dst, whole, size);
        memcpy(trailer, whole + size, CLI_TRAILER);
    }
    if (trailer != NULL) {
        free(whole);
    }
    if (n < 0 || (uint64_t)n != all) {
        return cli_fail(CRESCENT_STORE_EOBJECT_NOT_FOUND, "ssd read of own disk: %s",
                        n < 0 ? strerror((int)-n) : "size mismatch");
    }
    return 0;
}

/* A stage reply: where the owner staged the bytes. */
struct cli_ssd_grant {
    uint64_t id, addr, len, ttl_ms;
    uint32_t crc;
    unsigned char *desc; /* malloc'ed */
    size_t desc_len;
};

/* Maps an 'S' error status from owner ep to a store error (cli_fail). */
static int cli_ssd_stage_err(const char *ep, int64_t status, uint64_t all) {
    switch (status) {
    case -ENOSPC:
        return cli_fail(CRESCENT_STORE_ENO_AVAILABLE_HANDLE,
                        "ssd owner %s: its staging buffer is full (%d tries); retry later, or "
                        "raise MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES there",
                        ep, CLI_SSD_TRIES);
    case -EFBIG:
        return cli_fail(CRESCENT_STORE_EBUFFER_OVERFLOW,
                        "ssd owner %s: a %llu-byte value exceeds its staging buffer "
                        "(MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES)",
                        ep, (unsigned long long)all);
    case -CM_EOBJECT_NOT_FOUND:
        return cli_fail(CRESCENT_STORE_EOBJECT_NOT_FOUND, "ssd owner %s: not on its disk", ep);
    default:
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "ssd owner %s: staging failed: %s", ep,
                        status == -EMSGSIZE ? "stored size differs" : strerror((int)-status));
    }
}

/* Sends 'S' for key (all bytes expected) on fd and reads the grant. Returns 0, a negative
 * status from the owner (g untouched), or INT64_MIN when the connection broke (-errno
 * in *io). */
static int64_t cli_ssd_stage(int fd, const char *key, uint64_t all, struct cli_ssd_grant *g,
                             int *io) {
    size_t klen = strlen(key);
    unsigned char hdr[5], sz[8], r[CLI_SSD_STAGE_REPLY];
    hdr[0] = 'S';
    cli_ssd_le(hdr + 1, klen, 4);
    cli_ssd_le(sz, all, 8);
    if ((*io = cli_ssd_full(fd, hdr, 5, true)) < 0 ||
        (*io = cli_ssd_full(fd, (void *)key, klen, true)) < 0 ||
        (*io = cli_ssd_full(fd, sz, 8, true)) < 0 || (*io = cli_ssd_full(fd, r, 8, false)) < 0) {
        return INT64_MIN;
    }
    int64_t status = (int64_t)cli_ssd_get(r, 8);
    if (status < 0) {
        return status;
    }
    if ((*io = cli_ssd_full(fd, r + 8, CLI_SSD_STAGE_REPLY - 8, false)) < 0) {
        return INT64_MIN;
    }
    g->id = cli_ssd_get(r + 8, 8);
    g->addr = cli_ssd_get(r + 16, 8);
    g->len = cli_ssd_get(r + 24, 8);
    g->crc = (uint32_t)cli_ssd_get(r + 32, 4);
    g->ttl_ms = cli_ssd_get(r + 36, 4);
    g->desc_len = (size_t)cli_ssd_get(r + 40, 4);
    g->desc = g->desc_len > 0 && g->desc_len <= (1u << 20) ? malloc(g->desc_len) : NULL;
    if (g->desc == NULL) {
        *io = -EPROTO;
        return INT64_MIN;
    }
    if ((*io = cli_ssd_full(fd, g->desc, g->desc_len, false)) < 0) {
        free(g->desc);
        g->desc = NULL;
        return INT64_MIN;
    }
    return 0;
}

/* Pulls the granted bytes with the transfer engine into dst (size bytes) and trailer, checks
 * the CRC-32C. Returns 0 or a negative code (cli_fail). */
static int cli_ssd_pull(struct crescent_store *st, const char *ep, const struct cli_ssd_grant *g,
                        void *dst, uint64_t size, bool zero_copy, unsigned char *trailer) {
    struct cli_replica rep;
    memset(&rep, 0, sizeof(rep));
    snprintf(rep.segment, sizeof(rep.segment), "offload-stage@%s", ep);
    rep.desc = (const char *)g->desc;
    rep.desc_len = g->desc_len;
    rep.addr = g->addr;
    rep.size = g->len;
    rep.complete = true;
    rep.memory = true;
    int rc = cli__read_replica(st, &rep, dst, size, zero_copy, trailer);
    if (rc < 0) {
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "ssd owner %s: pulling the staged bytes: %s",
                        ep, crescent_store_last_error());
    }
    uint32_t crc = sto_crc32c(0, dst, size);
    if (trailer != NULL) {
        crc = sto_crc32c(crc, trailer, CLI_TRAILER);
    }
    if (crc != g->crc) {
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL,
                        "ssd owner %s: staged bytes fail their CRC-32C (freed by the owner's GC "
                        "after MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS?)",
                        ep);
    }
    return 0;
}

/* Reads a LOCAL_DISK replica through its owner; see cli_store.h. */
int cli__ssd_read(struct crescent_store *st, const struct cli_replica *r, const char *key,
                  void *dst, uint64_t size, bool zero_copy, unsigned char *trailer) {
    const char *ep = r->endpoint;
    if (st->ssd != NULL && strcmp(ep, st->ssd->endpoint) == 0) {
        return cli_ssd_read_own(st, key, dst, size, trailer);
    }
    uint64_t all = size + (trailer != NULL ? CLI_TRAILER : 0);
    int fd = cli_ssd_connect(ep);
    if (fd < 0) {
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "ssd owner %s unreachable: %s", ep,
                        strerror(-fd));
    }
    struct cli_ssd_grant g = {0};
    int io = 0;
    int64_t status = -ENOSPC;
    for (int i = 0; i < CLI_SSD_TRIES && status == -ENOSPC; i++) {
        if (i > 0) { /* the owner's staging area is full: let its readers release */
            usleep((useconds_t)(10000u << i));
        }
        status = cli_ssd_stage(fd, key, all, &g, &io);
    }
    if (status == INT64_MIN) {
        close(fd);
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL,
                        "ssd owner %s: connection lost while staging the value (%s; owner "
                        "died?)",
                        ep, strerror(-io));
    }
    if (status < 0) {
        close(fd);
        return cli_ssd_stage_err(ep, status, all);
    }
    int rc = g.len == all ? cli_ssd_pull(st, ep, &g, dst, size, zero_copy, trailer)
                          : cli_fail(CRESCENT_STORE_ETRANSFER_FAIL,
                                     "ssd owner %s: staged %llu bytes, expected %llu", ep,
                                     (unsigned long long)g.len, (unsigned long long)all);
    unsigned char rel[9], st8[8];
    rel[0] = 'R';
    cli_ssd_le(rel + 1, g.id, 8);
    if (cli_ssd_full(fd, rel, 9, true) == 0) { /* best effort: the GC frees it otherwise */
        (void)cli_ssd_full(fd, st8, 8, false);
    }
    close(fd);
    free(g.desc);
    return rc;
}

/* Promotes key back to memory after a disk read; see cli_store.h. */
void cli__ssd_promote(struct crescent_store *st, const char *key, const void *value, uint64_t size,
                      const unsigned char *trailer) {
    if (__atomic_load_n(&st->no_promote, __ATOMIC_RELAXED)) {
        return;
    }
    const char *argv[] = {"MC.PROMOTESTART", st->client_id, key};
    redisReply *r;
    if (cli__cmd(st, 3, argv, NULL, &r) < 0) {
        return;
    }
    int rc = cli__reply_err(r);
    if (rc == -CRESCENT_STORE_EUNAVAILABLE_IN_CURRENT_STATUS) {
        __atomic_store_n(&st->no_promote, true, __ATOMIC_RELAXED);
    }
    struct cli_replica rep;
    if (rc == 0 && cli__parse_replica(r, &rep) == 0) {
        const void *parts[1] = {value};
        size_t sizes[1] = {(size_t)size};
        struct cli_src src = {parts, sizes, 1, size, false, trailer};
        int w = cli__write_replicas(st, &rep, 1, &src);
        const char *end[] = {w == 0 ? "MC.COPYEND" : "MC.COPYREVOKE", st->client_id, key};
        redisReply *e;
        if (cli__cmd(st, 3, end, NULL, &e) == 0) {
            freeReplyObject(e);
        }
    }
    freeReplyObject(r);
}
