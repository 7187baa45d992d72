/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SSD tier of a real client (crescent_store_config.ssd_offload_path, crescent-client
 * --ssd_offload_path): a storage/ store (libsto) in that directory, a local-disk segment on the
 * master (MC.MOUNTDISK) named by this client's offload endpoint, a heartbeat thread that
 * drains the client's offload queue (MC.OFFLOADFETCH: copy each value from this client's own
 * segment memory to the store, then MC.OFFLOADDONE), re-registration of everything the
 * restart scan found, and a small TCP server on the offload endpoint that answers peers'
 * reads of offloaded values. Readers use cli__ssd_read() when a key's only replicas are
 * LOCAL_DISK.
 *
 * Offload read protocol (one TCP connection, any number of requests in turn): request = 'G',
 * key length (u32 little-endian), key bytes; reply = a signed 64-bit little-endian length
 * (negative: -errno or -CRESCENT_STORE_E* code; no payload), then that many value bytes.
 *
 * Threads: the heartbeat thread and the server thread are started by cli__ssd_start() and
 * joined by cli__ssd_stop(); sto is thread-safe. The heartbeat uses its own master connection.
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"
#include "common/cm_time.h"
#include "storage/sto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CLI_SSD_FETCH     256 /* tasks per MC.OFFLOADFETCH */
#define CLI_SSD_REG_BATCH 256 /* keys per re-registration MC.OFFLOADDONE */
#define CLI_SSD_MAX_CONNS 64  /* peer connections served at once */
#define CLI_SSD_IO_MS     5000

struct cli_ssd {
    struct sto *sto;
    char endpoint[128];
    int lfd;          /* listener */
    int wake[2];      /* pipe: stops the server thread */
    redisContext *rc; /* heartbeat thread's master connection */
    pthread_t hb_thr, srv_thr;
    bool hb_on, srv_on;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    unsigned interval_ms;
    bool mounted; /* the master knows our disk */
};

/* ---- small I/O helpers ------------------------------------------------------------------- */

static void cli_ssd_le64(unsigned char *d, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        d[i] = (unsigned char)(v >> (8 * i));
    }
}

static uint64_t cli_ssd_get64(const unsigned char *d) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | d[i];
    }
    return v;
}

/* Writes or reads exactly n bytes on a blocking socket. Returns 0 or -errno. */
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

/* ---- the offload read server ------------------------------------------------------------- */

/* Serves one request on fd. Returns 0, or -1 when the connection should close. */
static int cli_ssd_serve_one(struct cli_ssd *s, int fd) {
    unsigned char hdr[5];
    if (cli_ssd_full(fd, hdr, 5, false) < 0 || hdr[0] != 'G') {
        return -1;
    }
    uint32_t klen =
        (uint32_t)hdr[1] | (uint32_t)hdr[2] << 8 | (uint32_t)hdr[3] << 16 | (uint32_t)hdr[4] << 24;
    if (klen == 0 || klen > STO_KEY_MAX) {
        return -1;
    }
    char key[STO_KEY_MAX];
    if (cli_ssd_full(fd, key, klen, false) < 0) {
        return -1;
    }
    ssize_t size = sto_get_size(s->sto, key, klen);
    char *val = NULL;
    ssize_t n = size;
    if (size >= 0) {
        val = malloc(size ? (size_t)size : 1);
        n = val ? sto_get(s->sto, key, klen, val, (size_t)size) : -ENOMEM;
    }
    unsigned char len[8];
    cli_ssd_le64(len, (uint64_t)(int64_t)n);
    int rc = cli_ssd_full(fd, len, 8, true);
    if (rc == 0 && n > 0) {
        rc = cli_ssd_full(fd, val, (size_t)n, true);
    }
    free(val);
    return rc < 0 ? -1 : 0;
}

static void *cli_ssd_server_main(void *arg) {
    struct cli_ssd *s = arg;
    struct pollfd p[CLI_SSD_MAX_CONNS + 2];
    size_t n = 2;
    p[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
    p[1] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
    for (;;) {
        if (poll(p, n, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (p[0].revents) {
            break;
        }
        if ((p[1].revents & POLLIN) && n < CLI_SSD_MAX_CONNS + 2) {
            int fd = accept(s->lfd, NULL, NULL);
            if (fd >= 0) {
                cli_ssd_timeouts(fd);
                p[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
            }
        }
        for (size_t i = 2; i < n; i++) {
            if (p[i].revents && cli_ssd_serve_one(s, p[i].fd) < 0) {
                close(p[i].fd);
                p[i--] = p[--n];
            }
        }
    }
    for (size_t i = 2; i < n; i++) {
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

/* Sends MC.OFFLOADDONE for keys[0..n) with their sizes. Returns the number accepted or a
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
        for (size_t i = 0; i < r->elements; i++) {
            ok += r->element[i]->type != REDIS_REPLY_ERROR;
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

/* One heartbeat: (re)mount when needed, then drain the queue. */
static void cli_ssd_heartbeat(struct crescent_store *st, struct cli_ssd *s) {
    if (!s->mounted && cli_ssd_mount(st, s) < 0) {
        return; /* the store's ping thread re-registers the client; retry next beat */
    }
    long n;
    do {
        n = cli_ssd_drain_once(st, s);
    } while (n == CLI_SSD_FETCH);
    if (n == -CRESCENT_STORE_ESEGMENT_NOT_FOUND || n == -CRESCENT_STORE_ECLIENT_NOT_FOUND) {
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
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->interval_ms = (unsigned)cfg.heartbeat_interval_s * 1000u;
    st->ssd = s;
    int rc = sto_open(&cfg, path, &s->sto, err, sizeof(err));
    if (rc < 0) {
        return cli_fail(-rc, "ssd_offload_path %s: %s", path, err);
    }
    if ((rc = cli_ssd_listen(st, s)) < 0) {
        return rc;
    }
    if (pipe2(s->wake, O_CLOEXEC) < 0) {
        return cli_fail(errno, "ssd: pipe: %s", strerror(errno));
    }
    if ((rc = cli_ssd_mount(st, s)) < 0) {
        return rc;
    }
    if ((rc = pthread_create(&s->srv_thr, NULL, cli_ssd_server_main, s)) != 0) {
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
    }
    sto_close(s->sto);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    st->ssd = NULL;
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

/* Reads key's offloaded value (size bytes) from the SSD tier at endpoint; see cli_store.h. */
int cli__ssd_read(struct crescent_store *st, const char *endpoint, const char *key, void *dst,
                  uint64_t size) {
    size_t klen = strlen(key);
    if (st->ssd != NULL && strcmp(endpoint, st->ssd->endpoint) == 0) {
        ssize_t n = sto_get(st->ssd->sto, key, klen, dst, size);
        if (n < 0 || (uint64_t)n != size) {
            return cli_fail(CRESCENT_STORE_EOBJECT_NOT_FOUND, "ssd read of own disk: %s",
                            n < 0 ? strerror((int)-n) : "size mismatch");
        }
        return 0;
    }
    int fd = cli_ssd_connect(endpoint);
    if (fd < 0) {
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "ssd owner %s unreachable: %s", endpoint,
                        strerror(-fd));
    }
    unsigned char hdr[5] = {'G', (unsigned char)klen, (unsigned char)(klen >> 8),
                            (unsigned char)(klen >> 16), (unsigned char)(klen >> 24)};
    unsigned char len[8];
    int rc = cli_ssd_full(fd, hdr, 5, true);
    if (rc == 0) {
        rc = cli_ssd_full(fd, (void *)key, klen, true);
    }
    if (rc == 0) {
        rc = cli_ssd_full(fd, len, 8, false);
    }
    int64_t n = rc == 0 ? (int64_t)cli_ssd_get64(len) : 0;
    if (rc == 0 && n == (int64_t)size) {
        rc = cli_ssd_full(fd, dst, size, false);
    } else if (rc == 0) {
        rc = n < 0 ? (int)n : -EPROTO;
    }
    close(fd);
    if (rc < 0) {
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "ssd read from %s: %s", endpoint,
                        strerror(-rc));
    }
    return 0;
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
