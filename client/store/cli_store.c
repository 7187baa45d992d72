/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store client object: create / destroy, configuration and environment, the transfer
 * engine, segments (global segment and caller memory: register + MC.MOUNT), caller buffers
 * registered for zero-copy calls, opened peer segments, the staging buffer of the copying
 * calls, health and metrics (per-interface counters and the periodic summary line).
 */
#include "common/fmacros.h"

#include "client/store/cli_dummy.h"
#include "client/store/cli_store.h"
#include "common/cm_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/random.h>

#define CLI_DEFAULT_LOCAL_BUFFER (16u << 20)

static void cli_peer_free(struct cli_peer *p);

/* Public: zeroes *cfg and sets struct_size. */
void crescent_store_config_init(struct crescent_store_config *cfg) {
    if (cfg != NULL) {
        memset(cfg, 0, sizeof(*cfg));
        cfg->struct_size = sizeof(*cfg);
    }
}

static bool cli_env_bool(const char *name, bool def) {
    const char *v = getenv(name);
    if (v == NULL) {
        return def;
    }
    if (!strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
        !strcasecmp(v, "on") || !strcasecmp(v, "enable")) {
        return true;
    }
    if (!strcasecmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
        !strcasecmp(v, "off") || !strcasecmp(v, "disable")) {
        return false;
    }
    return def;
}

#define CLI_POLL_US_DEFAULT 250
#define CLI_POLL_US_MAX     1000000

/* CRESCENT_STORE_POLL_US: microseconds a master reply is polled for before the caller blocks
 * (default CLI_POLL_US_DEFAULT, 0 = block at once). Returns 0, or -EINVAL for a value that is
 * not a whole number up to CLI_POLL_US_MAX. */
static int cli_env_poll(struct crescent_store *st) {
    const char *v = getenv("CRESCENT_STORE_POLL_US");
    char *end;
    unsigned long us = CLI_POLL_US_DEFAULT;
    if (v != NULL) {
        errno = 0;
        us = strtoul(v, &end, 10);
        if (errno != 0 || v[0] < '0' || v[0] > '9' || *end != '\0' || us > CLI_POLL_US_MAX) {
            return cli_fail(EINVAL,
                            "CRESCENT_STORE_POLL_US: '%s' is not a number of microseconds "
                            "from 0 to %d",
                            v, CLI_POLL_US_MAX);
        }
    }
    st->poll_ns = (uint64_t)us * 1000;
    return 0;
}

static int cli_client_id(struct crescent_store *st) {
    unsigned char b[16];
    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
        return cli_fail(errno ? errno : EIO, "getrandom failed");
    }
    for (int i = 0; i < 16; i++) {
        snprintf(st->client_id + 2 * i, 3, "%02x", b[i]);
    }
    return 0;
}

static int cli_engine(struct crescent_store *st, const struct crescent_store_config *cfg) {
    struct crescent_xfer_opts o = CRESCENT_XFER_OPTS_INIT;
    char listen[300];
    /* A bare host name or IPv4 address listens on an ephemeral port. */
    bool bare = strchr(st->hostname, ':') == NULL;
    snprintf(listen, sizeof(listen), bare ? "%s:0" : "%s", st->hostname);
    o.listen = listen;
    int rc = crescent_xfer_engine_create(&o, &st->eng);
    if (rc < 0) {
        return cli_fail(-rc, "transfer engine: %s", crescent_xfer_strerror(rc));
    }
    char args[300] = "";
    if (cfg->device_names != NULL && cfg->device_names[0] != '\0') {
        snprintf(args, sizeof(args), "devices=%s", cfg->device_names);
        for (char *p = args; *p; p++) {
            *p = *p == ',' ? ';' : *p;
        }
    }
    if (strcmp(st->protocol, "shm") == 0) {
        rc = crescent_xfer_install(st->eng, "shm", NULL);
        if (rc == 0) {
            rc = crescent_xfer_install(st->eng, "tcp", NULL); /* other hosts */
        }
    } else if (strcmp(st->protocol, "tcp") == 0) {
        rc = crescent_xfer_install(st->eng, "tcp", NULL);
    } else {
        rc = crescent_xfer_install(st->eng, st->protocol, args[0] ? args : NULL);
    }
    if (rc < 0) {
        return cli_fail(-rc, "transport %s: %s", st->protocol, crescent_xfer_strerror(rc));
    }
    rc = crescent_xfer_engine_local_addr(st->eng, st->endpoint, sizeof(st->endpoint));
    return rc < 0 ? cli_fail(-rc, "transfer engine has no listener") : 0;
}

static int cli_stage_init(struct crescent_store *st, uint64_t size) {
    st->stage_size = size ? size : CLI_DEFAULT_LOCAL_BUFFER;
    st->chunk = st->stage_size < CLI_CHUNK_MAX ? st->stage_size : CLI_CHUNK_MAX;
    size_t n = st->stage_size / st->chunk;
    void *p =
        mmap(NULL, st->stage_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    st->free_chunks = calloc(n, sizeof(*st->free_chunks));
    if (p == MAP_FAILED || st->free_chunks == NULL) {
        if (p != MAP_FAILED) {
            munmap(p, st->stage_size);
        }
        return cli_fail(ENOMEM, "cannot allocate the %zu-byte local buffer", st->stage_size);
    }
    st->stage = p;
    for (size_t i = 0; i < n; i++) {
        st->free_chunks[i] = (uint32_t)i;
    }
    st->n_free = n;
    int rc = crescent_xfer_register(st->eng, st->stage, st->stage_size, "cpu:0", 0);
    return rc < 0 ? cli_fail(-rc, "register local buffer: %s", crescent_xfer_strerror(rc)) : 0;
}

static int cli_init(struct crescent_store *st, const char *master,
                    const struct crescent_store_config *cfg) {
    const char *proto = cfg->protocol ? cfg->protocol : "tcp";
    if (strlen(proto) >= sizeof(st->protocol)) {
        return cli_fail(EINVAL, "unknown protocol '%s'", proto);
    }
    strcpy(st->protocol, proto);
    st->hostname = strdup(cfg->local_hostname ? cfg->local_hostname : "127.0.0.1");
    st->timeout_ms = cfg->master_timeout_ms ? cfg->master_timeout_ms : 5000;
    st->log_cb = cfg->log_cb;
    st->log_arg = cfg->log_arg;
    st->metrics_on = cli_env_bool("MC_STORE_CLIENT_METRIC", true);
    st->bw_on = cli_env_bool("MC_STORE_CLIENT_METRIC_BANDWIDTH", true);
    const char *iv = getenv("MC_STORE_CLIENT_METRIC_INTERVAL");
    st->metric_interval_s = iv ? (unsigned)strtoul(iv, NULL, 10) : 0;
    st->last_report_ms = cm_mono_ms();
    st->checksum = cli_env_bool("MOONCAKE_STORE_CHECKSUM", false);
    if (st->hostname == NULL) {
        return -ENOMEM;
    }
    int rc;
    if ((rc = cli_env_poll(st)) < 0 || (rc = cli_client_id(st)) < 0 ||
        (rc = cli__master_open(st, master, cfg->failover_timeout_ms)) < 0 ||
        (rc = cli_engine(st, cfg)) < 0 || (rc = cli_stage_init(st, cfg->local_buffer_size)) < 0) {
        return rc;
    }
    const char *fmt = getenv("CRESCENT_STORE_REPLY_FORMAT"); /* "full": no compact replies */
    st->want_compact = fmt == NULL || strcasecmp(fmt, "full") != 0;
    st->rc = cli__connect(st);
    if (st->rc != NULL) {
        cli__negotiate(st, &st->rc); /* an I/O error leaves rc NULL: reconnected on first use */
    }
    if (st->rc == NULL && st->leader == NULL) { /* HA forms: MC.REGISTER waits for a leader */
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master %s unreachable", master);
    }
    const char *reg[] = {"MC.REGISTER", st->client_id, st->hostname};
    redisReply *r;
    if ((rc = cli__cmd(st, 3, reg, NULL, &r)) < 0) {
        return rc;
    }
    rc = cli__reply_err(r);
    freeReplyObject(r);
    if (rc == 0 && cfg->global_segment_size > 0) {
        rc = crescent_store_mount_segment(st, NULL, cfg->global_segment_size, NULL);
    }
    if (rc == 0 && cfg->ssd_offload_path != NULL && cfg->ssd_offload_path[0] != '\0') {
        rc = cli__ssd_start(st, cfg->ssd_offload_path);
    }
    return rc < 0 ? rc : cli__ping_start(st);
}

/* Public: see store.h. */
int crescent_store_create(const char *master, const struct crescent_store_config *cfg,
                          struct crescent_store **out) {
    struct crescent_store_config def = CRESCENT_STORE_CONFIG_INIT;
    if (out != NULL) {
        *out = NULL;
    }
    if ((master == NULL &&
         (cfg == NULL || cfg->struct_size < sizeof(def) || cfg->daemon == NULL)) ||
        out == NULL) {
        return cli_fail(EINVAL, "crescent_store_create: NULL master or out");
    }
    if (cfg == NULL) {
        cfg = &def;
    } else if (cfg->struct_size < offsetof(struct crescent_store_config, log_cb)) {
        return cli_fail(EINVAL, "crescent_store_config: struct_size not set");
    }
    if (cfg->struct_size < sizeof(def)) { /* an older caller: later fields default */
        memcpy(&def, cfg, cfg->struct_size);
        def.struct_size = sizeof(def);
        cfg = &def;
    }
    struct crescent_store *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        return -ENOMEM;
    }
    pthread_mutex_init(&st->mu, NULL);
    pthread_mutex_init(&st->addr_mu, NULL);
    pthread_mutex_init(&st->seg_mu, NULL);
    pthread_mutex_init(&st->peer_mu, NULL);
    pthread_mutex_init(&st->stage_mu, NULL);
    pthread_cond_init(&st->stage_cv, NULL);
    pthread_mutex_init(&st->ping_mu, NULL);
    pthread_cond_init(&st->ping_cv, NULL);
    int rc =
        cfg->daemon != NULL ? cli_dummy_create(st, cfg->daemon, cfg) : cli_init(st, master, cfg);
    if (rc < 0) {
        char keep[512];
        snprintf(keep, sizeof(keep), "%s", crescent_store_last_error());
        crescent_store_destroy(st);
        return cli_fail(-rc, "%s", keep);
    }
    *out = st;
    return 0;
}

static void cli_seg_release(struct crescent_store *st, struct cli_seg *s) {
    if (s->base != NULL) {
        crescent_xfer_unregister(st->eng, s->base);
        if (s->owned && s->shared) {
            crescent_xfer_free_shared(st->eng, s->base);
        } else if (s->owned) {
            munmap(s->base, s->size);
        }
    }
    free(s->name);
    memset(s, 0, sizeof(*s));
}

/* Public: see store.h. */
void crescent_store_destroy(struct crescent_store *st) {
    if (st == NULL) {
        return;
    }
    cli__ssd_stop(st);
    cli__ping_stop(st);
    cli__master_close(st); /* after the threads that may read the leader record */
    cli_dummy_destroy(st);
    for (size_t i = 0; i < st->n_segs; i++) {
        if (st->rc != NULL) {
            const char *argv[] = {"MC.UNMOUNT", st->client_id, st->segs[i].name};
            redisReply *r = cli__redis_argv(st->rc, 3, argv, NULL);
            freeReplyObject(r);
        }
    }
    while (st->peers != NULL) {
        struct cli_peer *p = st->peers;
        st->peers = p->next;
        cli_peer_free(p);
    }
    for (size_t i = 0; i < st->n_segs; i++) {
        cli_seg_release(st, &st->segs[i]);
    }
    for (size_t i = 0; i < st->n_regs; i++) {
        crescent_xfer_unregister(st->eng, (void *)st->regs[i].addr);
    }
    if (st->stage != NULL) {
        crescent_xfer_unregister(st->eng, st->stage);
        munmap(st->stage, st->stage_size);
    }
    crescent_xfer_engine_destroy(st->eng);
    redisFree(st->rc);
    free(st->regs);
    free(st->free_chunks);
    free(st->hostname);
    pthread_mutex_destroy(&st->mu);
    pthread_mutex_destroy(&st->addr_mu);
    pthread_mutex_destroy(&st->seg_mu);
    pthread_mutex_destroy(&st->peer_mu);
    pthread_mutex_destroy(&st->stage_mu);
    pthread_cond_destroy(&st->stage_cv);
    pthread_mutex_destroy(&st->ping_mu);
    pthread_cond_destroy(&st->ping_cv);
    free(st);
}

/* Public: see store.h. */
int crescent_store_health_check(struct crescent_store *st) {
    return st == NULL ? 1 : __atomic_load_n(&st->health, __ATOMIC_RELAXED); /* dummies too */
}

/* Public: see store.h. */
const char *crescent_store_client_id(const struct crescent_store *st) {
    return st == NULL ? "" : st->client_id;
}

static int cli_mount_cmd(struct crescent_store *st, const struct cli_seg *s) {
    ssize_t dlen = crescent_xfer_export_desc(st->eng, NULL, 0);
    char *desc = dlen > 0 ? malloc((size_t)dlen) : NULL;
    if (desc == NULL || crescent_xfer_export_desc(st->eng, desc, (size_t)dlen) < 0) {
        free(desc);
        return cli_fail(ENOMEM, "mount: cannot export the segment descriptor");
    }
    char base[24], size[24];
    snprintf(base, sizeof(base), "%llu", (unsigned long long)(uintptr_t)s->base);
    snprintf(size, sizeof(size), "%llu", (unsigned long long)s->size);
    const char *argv[] = {"MC.MOUNT",   st->client_id, s->name,      base,   size, "ENDPOINT",
                          st->endpoint, "PROTOCOL",    st->protocol, "DESC", desc};
    size_t lens[11];
    for (int i = 0; i < 10; i++) {
        lens[i] = strlen(argv[i]);
    }
    lens[10] = (size_t)dlen;
    redisReply *r;
    int rc = cli__cmd(st, 11, argv, lens, &r);
    free(desc);
    if (rc == 0) {
        rc = cli__reply_err(r);
        freeReplyObject(r);
    }
    return rc;
}

static int cli_seg_alloc(struct crescent_store *st, struct cli_seg *s) {
    if (strcmp(st->protocol, "shm") == 0 &&
        crescent_xfer_alloc_shared(st->eng, s->size, &s->base) == 0) {
        s->shared = true;
    } else {
        void *p = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            return cli_fail(ENOMEM, "cannot allocate a %zu-byte segment", s->size);
        }
        s->base = p;
    }
    s->owned = true;
    return 0;
}

/* Public: see store.h. addr NULL allocates the memory (the global segment). */
int crescent_store_mount_segment(struct crescent_store *st, void *addr, size_t size,
                                 const char *name) {
    if (st == NULL || size == 0) {
        return cli_fail(EINVAL, "mount_segment: NULL store or size 0");
    }
    if (st->dummy != NULL) {
        return cli_fail(CRESCENT_STORE_ENOT_SUPPORTED,
                        "mount_segment: a dummy client mounts no segment (the daemon does)");
    }
    struct cli_seg s = {.base = addr, .size = size};
    pthread_mutex_lock(&st->seg_mu);
    unsigned seq = st->seg_seq++;
    bool full = st->n_segs == CLI_MAX_SEGS;
    pthread_mutex_unlock(&st->seg_mu);
    if (full) {
        return cli_fail(ENOSPC, "mount_segment: %d segments already mounted", CLI_MAX_SEGS);
    }
    char gen[64];
    snprintf(gen, sizeof(gen), "%s-%u", st->client_id, seq);
    s.name = strdup(name != NULL ? name : gen);
    int rc = s.name == NULL ? -ENOMEM : 0;
    if (rc == 0 && addr == NULL) {
        rc = cli_seg_alloc(st, &s);
    }
    if (rc == 0) {
        rc = crescent_xfer_register(st->eng, s.base, s.size, "cpu:0", CRESCENT_XFER_REMOTE);
        if (rc < 0) {
            cli_fail(-rc, "register segment: %s", crescent_xfer_strerror(rc));
            if (!s.owned) {
                s.base = NULL; /* not registered: nothing to release */
            }
        }
    }
    if (rc == 0) {
        rc = cli_mount_cmd(st, &s);
    }
    if (rc < 0) {
        cli_seg_release(st, &s);
        return rc;
    }
    pthread_mutex_lock(&st->seg_mu);
    st->segs[st->n_segs++] = s;
    pthread_mutex_unlock(&st->seg_mu);
    return 0;
}

/* Public: see store.h. */
int crescent_store_unmount_segment(struct crescent_store *st, const char *name) {
    if (st == NULL || name == NULL) {
        return cli_fail(EINVAL, "unmount_segment: NULL argument");
    }
    if (st->dummy != NULL) {
        return cli_fail(CRESCENT_STORE_ESEGMENT_NOT_FOUND, "unmount_segment: a dummy client "
                                                           "has no segment");
    }
    const char *argv[] = {"MC.UNMOUNT", st->client_id, name};
    redisReply *r;
    int rc = cli__cmd(st, 3, argv, NULL, &r);
    if (rc < 0) {
        return rc;
    }
    rc = cli__reply_err(r);
    freeReplyObject(r);
    pthread_mutex_lock(&st->seg_mu);
    for (size_t i = 0; i < st->n_segs; i++) {
        if (strcmp(st->segs[i].name, name) == 0) {
            cli_seg_release(st, &st->segs[i]);
            st->segs[i] = st->segs[--st->n_segs];
            memset(&st->segs[st->n_segs], 0, sizeof(st->segs[0]));
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&st->seg_mu);
    return rc;
}

/* Public: see store.h. */
int crescent_store_segment_name(struct crescent_store *st, size_t index, char *buf, size_t len) {
    if (st == NULL || buf == NULL) {
        return -EINVAL;
    }
    pthread_mutex_lock(&st->seg_mu);
    int rc = -ENOENT;
    if (index < st->n_segs) {
        rc = strlen(st->segs[index].name) < len ? 0 : -ENOSPC;
        if (rc == 0) {
            strcpy(buf, st->segs[index].name);
        }
    }
    pthread_mutex_unlock(&st->seg_mu);
    return rc;
}

/* True when name is one of this store's mounted segments. Thread-safe. */
bool cli__is_own_segment(struct crescent_store *st, const char *name) {
    pthread_mutex_lock(&st->seg_mu);
    bool own = false;
    for (size_t i = 0; i < st->n_segs && !own; i++) {
        own = strcmp(st->segs[i].name, name) == 0;
    }
    pthread_mutex_unlock(&st->seg_mu);
    return own;
}

/* Public: see store.h. */
int crescent_store_register_buffer(struct crescent_store *st, void *addr, size_t size) {
    if (st == NULL || addr == NULL || size == 0) {
        return cli_fail(EINVAL, "register_buffer: NULL argument or size 0");
    }
    if (st->dummy != NULL) { /* the pool is registered in the daemon already */
        return cli_dummy_in_pool(st, addr, size)
                   ? 0
                   : cli_fail(EINVAL, "register_buffer: a dummy client's buffers lie inside "
                                      "its pool (crescent_store_dummy_pool)");
    }
    pthread_mutex_lock(&st->seg_mu);
    int rc = 0;
    if (st->n_regs == st->cap_regs) {
        size_t cap = st->cap_regs ? 2 * st->cap_regs : 8;
        struct cli_reg *n = realloc(st->regs, cap * sizeof(*n));
        if (n == NULL) {
            rc = -ENOMEM;
        } else {
            st->regs = n;
            st->cap_regs = cap;
        }
    }
    if (rc == 0) {
        rc = crescent_xfer_register(st->eng, addr, size, "*", 0);
    }
    if (rc == 0) {
        st->regs[st->n_regs++] = (struct cli_reg){(uintptr_t)addr, size};
    }
    pthread_mutex_unlock(&st->seg_mu);
    return rc < 0 ? cli_fail(-rc, "register_buffer: %s", crescent_xfer_strerror(rc)) : 0;
}

/* Public: see store.h. */
int crescent_store_unregister_buffer(struct crescent_store *st, void *addr) {
    if (st == NULL) {
        return -EINVAL;
    }
    if (st->dummy != NULL) {
        return cli_dummy_in_pool(st, addr, 1) ? 0 : -ENOENT;
    }
    pthread_mutex_lock(&st->seg_mu);
    int rc = -ENOENT;
    for (size_t i = 0; i < st->n_regs; i++) {
        if (st->regs[i].addr == (uintptr_t)addr) {
            rc = crescent_xfer_unregister(st->eng, addr);
            st->regs[i] = st->regs[--st->n_regs];
            break;
        }
    }
    pthread_mutex_unlock(&st->seg_mu);
    return rc;
}

/* True when [p, p+len) lies inside one registered caller buffer or mounted segment.
 * Thread-safe. */
bool cli__is_registered(struct crescent_store *st, const void *p, size_t len) {
    uintptr_t a = (uintptr_t)p;
    bool ok = false;
    pthread_mutex_lock(&st->seg_mu);
    for (size_t i = 0; i < st->n_regs && !ok; i++) {
        ok = a >= st->regs[i].addr && len <= st->regs[i].len &&
             a - st->regs[i].addr <= st->regs[i].len - len;
    }
    for (size_t i = 0; i < st->n_segs && !ok; i++) {
        uintptr_t b = (uintptr_t)st->segs[i].base;
        ok = a >= b && len <= st->segs[i].size && a - b <= st->segs[i].size - len;
    }
    pthread_mutex_unlock(&st->seg_mu);
    return ok;
}

/* How many of bufs[0..n) (lens[i] bytes each) lie, one after another from the first, inside
 * registered buffers or mounted segments (n when all do; a NULL buffer counts as not inside):
 * cli__is_registered for a whole batch under one lock, each buffer tried first against the
 * region that held the previous one. Thread-safe. */
size_t cli__registered_prefix(struct crescent_store *st, const void *const *bufs,
                              const size_t *lens, size_t n) {
    uintptr_t lo = 0, hi = 0; /* the region last tried, [lo, hi); none yet while hi == 0 */
    size_t i = 0;
    pthread_mutex_lock(&st->seg_mu);
    for (; i < n; i++) {
        uintptr_t a = (uintptr_t)bufs[i];
        size_t len = lens[i];
        if (a != 0 && hi != 0 && a >= lo && len <= hi - lo && a - lo <= hi - lo - len) {
            continue;
        }
        bool ok = false;
        for (size_t k = 0; a != 0 && k < st->n_regs && !ok; k++) {
            ok = a >= st->regs[k].addr && len <= st->regs[k].len &&
                 a - st->regs[k].addr <= st->regs[k].len - len;
            lo = st->regs[k].addr;
            hi = lo + st->regs[k].len;
        }
        for (size_t k = 0; a != 0 && k < st->n_segs && !ok; k++) {
            uintptr_t b = (uintptr_t)st->segs[k].base;
            ok = a >= b && len <= st->segs[k].size && a - b <= st->segs[k].size - len;
            lo = b;
            hi = b + st->segs[k].size;
        }
        if (!ok) {
            break;
        }
    }
    pthread_mutex_unlock(&st->seg_mu);
    return i;
}

static void cli_peer_free(struct cli_peer *p) {
    crescent_xfer_segment_close(p->seg);
    free(p->name);
    free(p->desc);
    free(p);
}

/* Unlinks p from the cache (peer_mu held); returns true when nobody uses it any more. */
static bool cli_peer_unlink(struct crescent_store *st, struct cli_peer *p) {
    for (struct cli_peer **pp = &st->peers; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    p->dead = true;
    return p->refs == 0;
}

/* Opens (or finds in the cache) the peer segment of replica r: by its descriptor blob, else
 * by its endpoint. A cached segment opened from another descriptor is replaced. Returns 0 and
 * *out with a reference the caller drops with cli__peer_put(), or a negative code.
 * Thread-safe. */
int cli__peer_open(struct crescent_store *st, const struct cli_replica *r, struct cli_peer **out) {
    pthread_mutex_lock(&st->peer_mu);
    struct cli_peer *p = st->peers, *stale = NULL;
    while (p != NULL && strcmp(p->name, r->segment) != 0) {
        p = p->next;
    }
    if (p != NULL && p->desc_len == r->desc_len &&
        (r->desc_len == 0 || memcmp(p->desc, r->desc, r->desc_len) == 0)) {
        p->refs++;
        *out = p;
        pthread_mutex_unlock(&st->peer_mu);
        return 0;
    }
    if (p != NULL && cli_peer_unlink(st, p)) { /* remounted with a new descriptor */
        stale = p;
    }
    pthread_mutex_unlock(&st->peer_mu);
    if (stale != NULL) {
        cli_peer_free(stale);
    }
    struct crescent_xfer_segment *seg = NULL;
    int rc = r->desc_len > 0 ? crescent_xfer_segment_open(st->eng, r->desc, r->desc_len, &seg)
                             : crescent_xfer_segment_open_addr(st->eng, r->endpoint, &seg);
    if (rc < 0) {
        return cli_fail(-rc, "open segment %s: %s", r->segment, crescent_xfer_last_error());
    }
    p = calloc(1, sizeof(*p));
    if (p != NULL) {
        p->name = strdup(r->segment);
        p->desc = malloc(r->desc_len ? r->desc_len : 1);
    }
    if (p == NULL || p->name == NULL || p->desc == NULL) {
        if (p != NULL) {
            free(p->name);
            free(p->desc);
            free(p);
        }
        crescent_xfer_segment_close(seg);
        return -ENOMEM;
    }
    memcpy(p->desc, r->desc, r->desc_len);
    p->desc_len = r->desc_len;
    p->seg = seg;
    p->refs = 1;
    pthread_mutex_lock(&st->peer_mu);
    p->next = st->peers;
    st->peers = p;
    pthread_mutex_unlock(&st->peer_mu);
    *out = p;
    return 0;
}

/* Drops a reference from cli__peer_open(); failed forgets the peer (it is closed once nobody
 * uses it), so the next transfer opens it afresh. Thread-safe. */
void cli__peer_put(struct crescent_store *st, struct cli_peer *p, bool failed) {
    pthread_mutex_lock(&st->peer_mu);
    p->refs--;
    bool free_it = false;
    if (failed && !p->dead) {
        free_it = cli_peer_unlink(st, p);
    } else {
        free_it = p->dead && p->refs == 0;
    }
    pthread_mutex_unlock(&st->peer_mu);
    if (free_it) {
        cli_peer_free(p);
    }
}

/* Takes a staging chunk (waits for one); returns its size. Thread-safe. */
size_t cli__stage_get(struct crescent_store *st, char **chunk) {
    pthread_mutex_lock(&st->stage_mu);
    while (st->n_free == 0) {
        pthread_cond_wait(&st->stage_cv, &st->stage_mu);
    }
    *chunk = st->stage + (size_t)st->free_chunks[--st->n_free] * st->chunk;
    pthread_mutex_unlock(&st->stage_mu);
    return st->chunk;
}

/* Returns a staging chunk. Thread-safe. */
void cli__stage_put(struct crescent_store *st, char *chunk) {
    pthread_mutex_lock(&st->stage_mu);
    st->free_chunks[st->n_free++] = (uint32_t)((size_t)(chunk - st->stage) / st->chunk);
    pthread_cond_signal(&st->stage_cv);
    pthread_mutex_unlock(&st->stage_mu);
}

/* Metrics interface index of an opened segment: 1 shm, 2 tcp, 0 local, 3 other. */
int cli__iface(const struct crescent_xfer_segment *seg) {
    const char *t = seg != NULL ? crescent_xfer_segment_transport(seg) : "local";
    return !strcmp(t, "local") ? 0 : !strcmp(t, "shm") ? 1 : !strcmp(t, "tcp") ? 2 : 3;
}

/* Counts one transfer (when metrics are on). Thread-safe. */
void cli__count(struct crescent_store *st, bool write, int iface, uint64_t bytes, uint64_t us) {
    if (!st->metrics_on) {
        return;
    }
    struct crescent_store_metrics *m = &st->m;
    __atomic_fetch_add(write ? &m->write_bytes[iface] : &m->read_bytes[iface], bytes,
                       __ATOMIC_RELAXED);
    __atomic_fetch_add(write ? &m->write_ops[iface] : &m->read_ops[iface], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(write ? &m->write_us[iface] : &m->read_us[iface], us, __ATOMIC_RELAXED);
}

static uint64_t cli_sum(const uint64_t *v) {
    uint64_t s = 0;
    for (int i = 0; i < CLI_IFACES; i++) {
        s += __atomic_load_n(&v[i], __ATOMIC_RELAXED);
    }
    return s;
}

/* From the ping thread: writes the periodic summary line through the log callback every
 * MC_STORE_CLIENT_METRIC_INTERVAL seconds (0 = never). */
void cli__metrics_tick(struct crescent_store *st) {
    if (!st->metrics_on || st->metric_interval_s == 0) {
        return;
    }
    uint64_t now = cm_mono_ms();
    if (now - st->last_report_ms < (uint64_t)st->metric_interval_s * 1000) {
        return;
    }
    static const char *names[CLI_IFACES] = {"local", "shm", "tcp", "other"};
    char line[900];
    int n = snprintf(line, sizeof(line), "store client metrics:");
    for (int i = 0; i < CLI_IFACES; i++) {
        uint64_t rops = st->m.read_ops[i], wops = st->m.write_ops[i];
        if (rops + wops == 0) {
            continue;
        }
        n += snprintf(line + n, sizeof(line) - (size_t)n,
                      " %s read %llu B / %llu ops (avg %llu us) write %llu B / %llu ops (avg "
                      "%llu us);",
                      names[i], (unsigned long long)st->m.read_bytes[i], (unsigned long long)rops,
                      (unsigned long long)(rops ? st->m.read_us[i] / rops : 0),
                      (unsigned long long)st->m.write_bytes[i], (unsigned long long)wops,
                      (unsigned long long)(wops ? st->m.write_us[i] / wops : 0));
        if (n >= (int)sizeof(line)) {
            n = (int)sizeof(line) - 1;
        }
    }
    uint64_t rd = cli_sum(st->m.read_bytes), wr = cli_sum(st->m.write_bytes);
    if (st->bw_on) {
        double secs = (double)(now - st->last_report_ms) / 1000.0;
        snprintf(line + n, sizeof(line) - (size_t)n, " bandwidth read %.3f MB/s write %.3f MB/s",
                 (double)(rd - st->last_rd) / secs / 1e6, (double)(wr - st->last_wr) / secs / 1e6);
    }
    st->last_rd = rd;
    st->last_wr = wr;
    st->last_report_ms = now;
    cli_log(st, 2, "%s", line);
}

/* Public: see store.h. */
int crescent_store_metrics(struct crescent_store *st, struct crescent_store_metrics *out) {
    if (st == NULL || out == NULL) {
        return -EINVAL;
    }
    uint64_t *d = (uint64_t *)out;
    const uint64_t *s = (const uint64_t *)&st->m;
    for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++) {
        d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
    }
    return 0;
}

/* Checks a key: non-NULL, 1..65535 bytes. Returns 0 or a negative code. */
int cli__check_key(const char *key) {
    if (key == NULL) {
        return cli_fail(CRESCENT_STORE_EINVALID_PARAMS, "NULL key");
    }
    size_t n = strnlen(key, CLI_KEY_MAX + 1);
    if (n == 0 || n > CLI_KEY_MAX) {
        return cli_fail(CRESCENT_STORE_EINVALID_KEY, "key length %zu outside 1..%d", n,
                        CLI_KEY_MAX);
    }
    return 0;
}

/* Appends the MC.PUTSTART options of rc to argv/lens (numbuf holds the numbers; numcap bytes).
 * Returns the number of arguments added (at most 8 + n_preferred_segments). */
size_t cli__opts_argv(const struct crescent_store_replicate_config *rc, const char **argv,
                      size_t *lens, char *numbuf, size_t numcap) {
    size_t n = 0;
    if (rc == NULL) {
        return 0;
    }
    int w = snprintf(numbuf, numcap, "%u", rc->replica_num ? rc->replica_num : 1);
    argv[n++] = "REPLICAS";
    argv[n++] = numbuf;
    char *p = numbuf + w + 1;
    if (rc->with_soft_pin && rc->soft_pin_ttl_ms > 0) {
        w = snprintf(p, numcap - (size_t)(p - numbuf), "%llu",
                     (unsigned long long)rc->soft_pin_ttl_ms);
        argv[n++] = "SOFTPIN_TTL";
        argv[n++] = p;
        p += w + 1;
    } else if (rc->with_soft_pin) {
        argv[n++] = "SOFTPIN";
    }
    if (rc->with_hard_pin) {
        argv[n++] = "HARDPIN";
    }
    if (rc->prefer_same_node) {
        argv[n++] = "PREFER_SAME_NODE";
    }
    if (rc->n_preferred_segments > 0 && rc->preferred_segments != NULL) {
        snprintf(p, numcap - (size_t)(p - numbuf), "%zu", rc->n_preferred_segments);
        argv[n++] = "SEGMENTS";
        argv[n++] = p;
        for (size_t i = 0; i < rc->n_preferred_segments; i++) {
            argv[n++] = rc->preferred_segments[i];
        }
    }
    for (size_t i = 0; i < n; i++) {
        lens[i] = strlen(argv[i]);
    }
    return n;
}
