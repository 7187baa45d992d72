/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's dummy-client server (protocol in client/store/cli_dummy.h): an accept thread on
 * a Unix socket and one thread per dummy connection. A connection starts with HELLO carrying
 * the dummy's sealed memfd pool (SCM_RIGHTS); the daemon maps it and registers it with its
 * store (once per memfd, shared by the dummy's connections), then runs each request on the
 * store: zero-copy calls address the pool by offset, so
 * bytes move between peer segments and the dummy's memory with no copy here. Requests are
 * parsed by redis-compat's RESP request parser (multibulk only, bounded argument count and
 * size); a malformed one gets Redis's `-ERR Protocol error: ...` and the connection is closed. A
 * connection silent for the TTL is dropped too; when the last connection of a pool goes, the
 * pool is unregistered and unmapped.
 */
#include "common/fmacros.h"

#include "client/daemon/cli_d.h"
#include "client/store/cli_dummy.h"
#include "common/cm_buf.h"
#include "common/cm_log.h"
#include "common/cm_time.h"
#include "redis-compat/resp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLI_D_POLL_MS  200          /* TTL and stop checks */
#define CLI_D_MAX_ARGS (1u << 20)   /* arguments in one request */
#define CLI_D_MAX_BULK (1ull << 32) /* bytes in one argument (an inline value) */
#define CLI_D_MAX_FDS  8            /* fds taken from one recvmsg */
#define CLI_D_READ     (256u << 10) /* bytes read at a time */
#define CLI_D_MAX_REPL 8            /* replicas described */

struct cli_d_conn {
    struct cli_d_server *srv;
    int fd;                /* the dummy's connection */
    pthread_t thr;         /* its thread */
    unsigned id;           /* dummy number (logs) */
    long pid;              /* the dummy's pid (HELLO) */
    int hello_fd;          /* fd received, waiting for HELLO; -1 none */
    struct cli_d_pool *pl; /* its pool, NULL before HELLO */
    char *pool;            /* pl->base, NULL before HELLO */
    size_t pool_size;      /* bytes */
    char *in;              /* request bytes */
    size_t in_len, in_cap;
    size_t in_off;         /* start of the request being parsed */
    struct resp_parser rp; /* request parser */
    char errbuf[96];       /* a protocol error of our own */
    const char **argv;     /* parsed request (into in) */
    size_t *lens;
    size_t argc, arg_cap;
    size_t used;             /* bytes of the parsed request */
    struct cm_buf out;       /* reply */
    uint64_t last_ms;        /* last request, monotonic */
    bool done;               /* thread finished (joinable) */
    struct cli_d_conn *next; /* server list */
};

/* A dummy's pool, mapped and registered once however many connections the dummy opens
 * (identified by the memfd's device and inode). Guarded by the server's pool_mu. */
struct cli_d_pool {
    dev_t dev;
    ino_t ino;
    char *base;  /* mapping */
    size_t size; /* bytes */
    int refs;    /* connections using it */
    struct cli_d_pool *next;
};

struct cli_d_server {
    struct crescent_store *st;
    pthread_mutex_t pool_mu; /* guards pools */
    struct cli_d_pool *pools;
    int lfd; /* listener */
    unsigned ttl_ms;
    char name[128]; /* socket name (logs) */
    pthread_t accept_thr;
    pthread_mutex_t mu; /* guards conns */
    struct cli_d_conn *conns;
    bool stop; /* atomic */
    unsigned next_id;
    uint64_t n_dummies, n_expired, n_closed, n_requests, n_copied, n_zero, n_proto, n_conns;
};

static void cli_d_add(uint64_t *c, uint64_t v) {
    __atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

/* ---- replies ---- */

static void cli_d_int(struct cli_d_conn *c, int64_t v) {
    cm_buf_appendf(&c->out, ":%lld\r\n", (long long)v);
}

static void cli_d_bulk(struct cli_d_conn *c, const void *p, size_t n) {
    cm_buf_appendf(&c->out, "$%zu\r\n", n);
    cm_buf_append(&c->out, p, n);
    cm_buf_append(&c->out, "\r\n", 2);
}

static void cli_d_str(struct cli_d_conn *c, const char *s) {
    cli_d_bulk(c, s, strlen(s));
}

static void cli_d_arr(struct cli_d_conn *c, size_t n) {
    cm_buf_appendf(&c->out, "*%zu\r\n", n);
}

/* `-ERR <code> <message>`; CR and LF in the message become spaces. Returns code. */
static int cli_d_err(struct cli_d_conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int cli_d_err(struct cli_d_conn *c, int code, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++) {
        *p = *p == '\r' || *p == '\n' ? ' ' : *p;
    }
    cm_buf_appendf(&c->out, "-ERR %d %s\r\n", code, msg);
    return code;
}

/* The reply of a store call returning v: an integer, or the error with the store's message. */
static void cli_d_result(struct cli_d_conn *c, int64_t v) {
    if (v < 0) {
        cli_d_err(c, (int)v, "%s: %s", crescent_store_err_name((int)v),
                  crescent_store_last_error());
    } else {
        cli_d_int(c, v);
    }
}

/* ---- request parsing ---- */

/* Parses the next request at c->in + c->in_off with the RESP request parser
 * (redis-compat/resp.h): 1 complete (c->argv / c->lens / c->argc, each argument NUL-terminated
 * in place over its CR; c->used bytes), 0 need more bytes, -1 malformed (*err, Redis's text
 * starting with "ERR"). Requests must be multibulk: an inline command is malformed here. */
static int cli_d_parse(struct cli_d_conn *c, const char **err) {
    for (;;) {
        char *buf = c->in + c->in_off;
        size_t len = c->in_len - c->in_off;
        if (len == 0) {
            return 0;
        }
        if (buf[0] != '*') {
            unsigned char ch = (unsigned char)buf[0];
            snprintf(c->errbuf, sizeof(c->errbuf), "ERR Protocol error: expected '*', got '%c'",
                     ch >= 32 && ch < 127 ? ch : '?');
            *err = c->errbuf;
            return -1;
        }
        enum resp_result r = resp_parse_request(&c->rp, buf, len);
        if (r == RESP_INCOMPLETE) {
            return 0;
        }
        if (r == RESP_ERROR) {
            *err = c->rp.errstr;
            return -1;
        }
        if (c->rp.argc == 0) { /* "*0" or "*-1": nothing to run, as in Redis */
            c->in_off += c->rp.consumed;
            continue;
        }
        size_t argc = (size_t)c->rp.argc;
        if (argc > c->arg_cap) {
            const char **a = realloc(c->argv, argc * sizeof(*a));
            c->argv = a != NULL ? a : c->argv;
            size_t *l = a != NULL ? realloc(c->lens, argc * sizeof(*l)) : NULL;
            c->lens = l != NULL ? l : c->lens;
            if (a == NULL || l == NULL) {
                *err = "ERR Protocol error: out of memory for the arguments";
                return -1;
            }
            c->arg_cap = argc;
        }
        for (size_t i = 0; i < argc; i++) {
            c->argv[i] = resp_arg_ptr(&c->rp, buf, (int)i);
            c->lens[i] = c->rp.argv[i].len;
        }
        for (size_t i = 0; i < argc; i++) {
            ((char *)c->argv[i])[c->lens[i]] = '\0'; /* the CR after it, within the request */
        }
        c->argc = argc;
        c->used = c->rp.consumed;
        return 1;
    }
}

/* Strict decimal u64 of argument i. */
static bool cli_d_u64(const struct cli_d_conn *c, size_t i, uint64_t *v) {
    const char *s = c->argv[i];
    if (c->lens[i] == 0 || c->lens[i] > 20) {
        return false;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || s[0] == '-' || s[0] == '+') {
        return false;
    }
    *v = x;
    return true;
}

/* The pool range [off, off + size) of arguments i and i+1; NULL (and an error reply) when
 * either is not a number or the range leaves the pool. */
static char *cli_d_range(struct cli_d_conn *c, size_t i, uint64_t *size) {
    uint64_t off;
    if (!cli_d_u64(c, i, &off) || !cli_d_u64(c, i + 1, size)) {
        cli_d_err(c, -CRESCENT_STORE_EINVALID_PARAMS, "offset and size must be numbers");
        return NULL;
    }
    if (off > c->pool_size || *size > c->pool_size - off) {
        cli_d_err(c, -CRESCENT_STORE_EINVALID_PARAMS,
                  "range [%llu, +%llu) lies outside the %zu-byte pool", (unsigned long long)off,
                  (unsigned long long)*size, c->pool_size);
        return NULL;
    }
    return c->pool + off;
}

/* Decodes a replicate config at argument *i (advanced past it). preferred must hold
 * CLI_DUMMY_MAX_PREF names. Returns false after an error reply. */
static bool cli_d_rc(struct cli_d_conn *c, size_t *i, struct crescent_store_replicate_config *rc,
                     const char **preferred) {
    uint64_t f[CLI_DUMMY_RC_FIELDS];
    for (size_t k = 0; k < CLI_DUMMY_RC_FIELDS; k++) {
        if (*i + k >= c->argc || !cli_d_u64(c, *i + k, &f[k])) {
            cli_d_err(c, -CRESCENT_STORE_EINVALID_PARAMS, "malformed replicate config");
            return false;
        }
    }
    *i += CLI_DUMMY_RC_FIELDS;
    if (f[0] > 64 || f[5] > CLI_DUMMY_MAX_PREF || c->argc - *i < f[5]) {
        cli_d_err(c, -CRESCENT_STORE_EINVALID_PARAMS, "malformed replicate config");
        return false;
    }
    for (size_t k = 0; k < f[5]; k++) {
        preferred[k] = c->argv[*i + k];
    }
    *i += f[5];
    *rc = (struct crescent_store_replicate_config){
        .replica_num = (unsigned)f[0],
        .with_soft_pin = f[1] != 0,
        .soft_pin_ttl_ms = f[2],
        .with_hard_pin = f[3] != 0,
        .prefer_same_node = f[4] != 0,
        .preferred_segments = f[5] ? preferred : NULL,
        .n_preferred_segments = f[5],
    };
    return true;
}

/* ---- requests ---- */

/* Drops the connection's reference to its pool; the last one unregisters and unmaps it.
 * Returns true when the pool went away. */
static bool cli_d_release_pool(struct cli_d_conn *c) {
    struct cli_d_server *s = c->srv;
    struct cli_d_pool *pl = c->pl;
    bool gone = false;
    if (pl == NULL) {
        return false;
    }
    pthread_mutex_lock(&s->pool_mu);
    cli_d_add(&s->n_conns, (uint64_t)-1);
    if (--pl->refs == 0) {
        struct cli_d_pool **pp = &s->pools;
        while (*pp != pl) {
            pp = &(*pp)->next;
        }
        *pp = pl->next;
        crescent_store_unregister_buffer(s->st, pl->base);
        munmap(pl->base, pl->size);
        free(pl);
        cli_d_add(&s->n_dummies, (uint64_t)-1);
        gone = true;
    }
    pthread_mutex_unlock(&s->pool_mu);
    c->pl = NULL;
    c->pool = NULL;
    return gone;
}

/* Attaches the connection to the pool of memfd fd (sb its fstat): an existing one of the same
 * memfd, or a new mapping registered with the store. Returns 0 or a negative code after an
 * error reply. */
static int cli_d_attach_pool(struct cli_d_conn *c, int fd, const struct stat *sb, size_t size) {
    struct cli_d_server *s = c->srv;
    int rc = 0;
    pthread_mutex_lock(&s->pool_mu);
    struct cli_d_pool *pl = s->pools;
    while (pl != NULL && (pl->dev != sb->st_dev || pl->ino != sb->st_ino)) {
        pl = pl->next;
    }
    if (pl != NULL && pl->size != size) {
        rc =
            cli_d_err(c, -EINVAL, "HELLO: this pool was announced with %zu bytes before", pl->size);
    } else if (pl == NULL) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        pl = p != MAP_FAILED ? calloc(1, sizeof(*pl)) : NULL;
        if (p == MAP_FAILED || pl == NULL) {
            rc = cli_d_err(c, p == MAP_FAILED ? -errno : -ENOMEM, "HELLO: cannot map the pool: %s",
                           strerror(errno));
        } else if ((rc = crescent_store_register_buffer(s->st, p, size)) < 0) {
            cli_d_result(c, rc);
        } else {
            *pl = (struct cli_d_pool){sb->st_dev, sb->st_ino, p, size, 0, s->pools};
            s->pools = pl;
            cli_d_add(&s->n_dummies, 1);
        }
        if (rc < 0) {
            free(pl);
            pl = NULL;
            if (p != MAP_FAILED) {
                munmap(p, size);
            }
        }
    }
    if (rc == 0) {
        pl->refs++;
        cli_d_add(&s->n_conns, 1);
        c->pl = pl;
        c->pool = pl->base;
        c->pool_size = pl->size;
    }
    pthread_mutex_unlock(&s->pool_mu);
    return rc;
}

static void cli_d_hello(struct cli_d_conn *c) {
    uint64_t ver, size, pid;
    int fd = c->hello_fd;
    c->hello_fd = -1;
    struct stat sb;
    int seals = fd >= 0 ? fcntl(fd, F_GET_SEALS) : -1;
    if (c->argc != 4 || !cli_d_u64(c, 1, &ver) || !cli_d_u64(c, 2, &size) ||
        !cli_d_u64(c, 3, &pid)) {
        cli_d_err(c, -EINVAL, "HELLO takes version pool_size pid");
    } else if (ver != CLI_DUMMY_VERSION) {
        cli_d_err(c, -EINVAL, "HELLO: protocol version %llu, this daemon speaks %d",
                  (unsigned long long)ver, CLI_DUMMY_VERSION);
    } else if (c->pool != NULL) {
        cli_d_err(c, -EINVAL, "HELLO: this connection has a pool already");
    } else if (fd < 0) {
        cli_d_err(c, -EBADF, "HELLO: no file descriptor attached (SCM_RIGHTS)");
    } else if (size == 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
               (uint64_t)sb.st_size < size || seals < 0 || !(seals & F_SEAL_SHRINK)) {
        cli_d_err(c, -EBADF,
                  "HELLO: the attached fd is not a memfd of at least %llu bytes sealed "
                  "against shrinking (F_SEAL_SHRINK)",
                  (unsigned long long)size);
    } else if (cli_d_attach_pool(c, fd, &sb, size) == 0) {
        c->pid = (long)pid;
        char seg[256] = "";
        crescent_store_segment_name(c->srv->st, 0, seg, sizeof(seg));
        cli_d_arr(c, 2);
        cli_d_str(c, crescent_store_client_id(c->srv->st));
        cli_d_str(c, seg);
        cm_log(CM_LOG_VERBOSE, "daemon", "dummy connection %u (pid %ld): a %zu-byte pool", c->id,
               c->pid, c->pool_size);
    }
    if (fd >= 0) {
        close(fd);
    }
}

static void cli_d_put_from(struct cli_d_conn *c, bool inline_value) {
    struct crescent_store_replicate_config rc;
    const char *pref[CLI_DUMMY_MAX_PREF];
    size_t i = inline_value ? 4 : 5;
    uint64_t upsert, size;
    if (c->argc < i || !cli_d_u64(c, i - 1, &upsert)) {
        cli_d_err(c, -EINVAL, "%s: wrong number of arguments", c->argv[0]);
        return;
    }
    const char *buf = inline_value ? c->argv[2] : cli_d_range(c, 2, &size);
    if (buf == NULL || !cli_d_rc(c, &i, &rc, pref)) {
        return;
    }
    if (i != c->argc) {
        cli_d_err(c, -EINVAL, "%s: wrong number of arguments", c->argv[0]);
        return;
    }
    int r;
    if (inline_value) {
        size = c->lens[2];
        r = upsert ? crescent_store_upsert(c->srv->st, c->argv[1], buf, size, &rc)
                   : crescent_store_put(c->srv->st, c->argv[1], buf, size, &rc);
        cli_d_add(&c->srv->n_copied, size);
    } else {
        r = upsert ? crescent_store_upsert_from(c->srv->st, c->argv[1], buf, size, &rc)
                   : crescent_store_put_from(c->srv->st, c->argv[1], buf, size, &rc);
        cli_d_add(&c->srv->n_zero, r == 0 ? size : 0);
    }
    cli_d_result(c, r);
}

static void cli_d_get(struct cli_d_conn *c) {
    if (c->argc != 2) {
        cli_d_err(c, -EINVAL, "GET: wrong number of arguments");
        return;
    }
    void *v = NULL;
    size_t n = 0;
    int r = crescent_store_get(c->srv->st, c->argv[1], &v, &n);
    if (r < 0) {
        cli_d_result(c, r);
    } else {
        cli_d_bulk(c, v, n);
        cli_d_add(&c->srv->n_copied, n);
    }
    crescent_store_free(v);
}

static void cli_d_get_into(struct cli_d_conn *c) {
    uint64_t cap;
    char *buf = c->argc == 4 ? cli_d_range(c, 2, &cap) : NULL;
    if (c->argc != 4) {
        cli_d_err(c, -EINVAL, "GETINTO: wrong number of arguments");
    }
    if (buf != NULL) {
        int64_t r = crescent_store_get_into(c->srv->st, c->argv[1], buf, cap);
        cli_d_add(&c->srv->n_zero, r > 0 ? (uint64_t)r : 0);
        cli_d_result(c, r);
    }
}

/* BPUTFROM n RC (key off size)*n and BGETINTO n (key off cap)*n. */
static void cli_d_batch(struct cli_d_conn *c, bool put) {
    struct crescent_store_replicate_config rc = {0};
    const char *pref[CLI_DUMMY_MAX_PREF];
    uint64_t n;
    size_t i = 2;
    if (c->argc < 2 || !cli_d_u64(c, 1, &n) || n == 0 || n > CLI_D_MAX_ARGS / 3) {
        cli_d_err(c, -EINVAL, "%s: bad key count", c->argv[0]);
        return;
    }
    if (put && !cli_d_rc(c, &i, &rc, pref)) {
        return;
    }
    if (c->argc - i != 3 * n) {
        cli_d_err(c, -EINVAL, "%s: wrong number of arguments", c->argv[0]);
        return;
    }
    const char **keys = calloc(n, sizeof(*keys));
    void **bufs = calloc(n, sizeof(*bufs));
    size_t *sizes = calloc(n, sizeof(*sizes));
    int *r32 = calloc(n, sizeof(*r32));
    int64_t *r64 = calloc(n, sizeof(*r64));
    bool ok = keys && bufs && sizes && r32 && r64;
    if (!ok) {
        cli_d_err(c, -ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < n && ok; k++, i += 3) {
        uint64_t sz;
        keys[k] = c->argv[i];
        bufs[k] = cli_d_range(c, i + 1, &sz);
        sizes[k] = sz;
        ok = bufs[k] != NULL;
    }
    if (ok) {
        if (put) {
            crescent_store_batch_put_from(c->srv->st, keys, (const void *const *)bufs, sizes, n,
                                          &rc, r32);
        } else {
            crescent_store_batch_get_into(c->srv->st, keys, bufs, sizes, n, r64);
        }
        cli_d_arr(c, n);
        for (size_t k = 0; k < n; k++) {
            int64_t v = put ? r32[k] : r64[k];
            cli_d_int(c, v);
            cli_d_add(&c->srv->n_zero, v >= 0 ? (put ? sizes[k] : (uint64_t)v) : 0);
        }
    }
    free(keys);
    free(bufs);
    free(sizes);
    free(r32);
    free(r64);
}

/* BEXIST key... and REPLICACLEAR segment key... */
static void cli_d_batch_keys(struct cli_d_conn *c, bool clear) {
    size_t first = clear ? 2 : 1;
    if (c->argc <= first) {
        cli_d_err(c, -EINVAL, "%s: wrong number of arguments", c->argv[0]);
        return;
    }
    size_t n = c->argc - first;
    int *res = calloc(n, sizeof(*res));
    if (res == NULL) {
        cli_d_err(c, -ENOMEM, "out of memory");
        return;
    }
    const char *const *keys = c->argv + first;
    int r = clear ? crescent_store_batch_replica_clear(c->srv->st, keys, n, c->argv[1], res)
                  : crescent_store_batch_is_exist(c->srv->st, keys, n, res);
    if (r < 0) {
        cli_d_result(c, r);
    } else {
        cli_d_arr(c, n);
        for (size_t k = 0; k < n; k++) {
            cli_d_int(c, res[k]);
        }
    }
    free(res);
}

static void cli_d_replica_desc(struct cli_d_conn *c) {
    if (c->argc != 3) {
        cli_d_err(c, -EINVAL, "REPLICADESC: wrong number of arguments");
        return;
    }
    struct crescent_store_replica reps[CLI_D_MAX_REPL];
    int n = crescent_store_get_replica_desc(c->srv->st, c->argv[1], reps, CLI_D_MAX_REPL);
    if (n < 0) {
        cli_d_result(c, n);
        return;
    }
    n = n < CLI_D_MAX_REPL ? n : CLI_D_MAX_REPL;
    cli_d_arr(c, (size_t)n);
    for (int k = 0; k < n; k++) {
        cli_d_arr(c, 7);
        cli_d_str(c, reps[k].segment);
        cli_d_str(c, reps[k].endpoint);
        cli_d_str(c, reps[k].protocol);
        cli_d_int(c, reps[k].complete);
        cli_d_int(c, reps[k].is_memory);
        cli_d_int(c, (int64_t)reps[k].addr);
        cli_d_int(c, (int64_t)reps[k].size);
    }
}

static void cli_d_stats_reply(struct cli_d_conn *c) {
    struct crescent_store_daemon_stats s;
    cli_d_serve_stats(c->srv, &s);
    const uint64_t *v = (const uint64_t *)&s;
    cli_d_arr(c, CLI_DUMMY_STATS_FIELDS);
    for (size_t k = 0; k < CLI_DUMMY_STATS_FIELDS; k++) {
        cli_d_int(c, (int64_t)v[k]);
    }
}

/* REMOVE key force, REMOVEREGEX pattern force, REMOVEALL force. */
static void cli_d_remove(struct cli_d_conn *c, int kind) {
    uint64_t force;
    size_t want = kind == 2 ? 2 : 3;
    if (c->argc != want || !cli_d_u64(c, want - 1, &force)) {
        cli_d_err(c, -EINVAL, "%s: wrong arguments", c->argv[0]);
        return;
    }
    struct crescent_store *st = c->srv->st;
    int64_t r = kind == 0   ? crescent_store_remove(st, c->argv[1], force != 0)
                : kind == 1 ? crescent_store_remove_by_regex(st, c->argv[1], force != 0)
                            : crescent_store_remove_all(st, force != 0);
    cli_d_result(c, r);
}

/* Runs the parsed request, appending its reply to c->out. */
static void cli_d_dispatch(struct cli_d_conn *c) {
    const char *v = c->argv[0];
    struct crescent_store *st = c->srv->st;
    cli_d_add(&c->srv->n_requests, 1);
    if (!strcasecmp(v, "HELLO")) {
        cli_d_hello(c);
    } else if (!strcasecmp(v, "PING")) {
        cli_d_int(c, crescent_store_health_check(st));
    } else if (!strcasecmp(v, "STATS")) {
        cli_d_stats_reply(c);
    } else if (c->pool == NULL) {
        cli_d_err(c, -EINVAL, "%s before HELLO: hand over the pool first", v);
    } else if (!strcasecmp(v, "PUTFROM") || !strcasecmp(v, "PUT")) {
        cli_d_put_from(c, v[3] == '\0');
    } else if (!strcasecmp(v, "GETINTO")) {
        cli_d_get_into(c);
    } else if (!strcasecmp(v, "GET")) {
        cli_d_get(c);
    } else if (!strcasecmp(v, "BPUTFROM") || !strcasecmp(v, "BGETINTO")) {
        cli_d_batch(c, v[1] == 'P' || v[1] == 'p');
    } else if ((!strcasecmp(v, "EXIST") || !strcasecmp(v, "SIZE")) && c->argc == 2) {
        cli_d_result(c, v[0] == 'E' || v[0] == 'e' ? crescent_store_is_exist(st, c->argv[1])
                                                   : crescent_store_get_size(st, c->argv[1]));
    } else if (!strcasecmp(v, "BEXIST") || !strcasecmp(v, "REPLICACLEAR")) {
        cli_d_batch_keys(c, v[0] == 'R' || v[0] == 'r');
    } else if (!strcasecmp(v, "REMOVE") || !strcasecmp(v, "REMOVEREGEX") ||
               !strcasecmp(v, "REMOVEALL")) {
        cli_d_remove(c, c->lens[0] == 6 ? 0 : c->lens[0] == 11 ? 1 : 2);
    } else if (!strcasecmp(v, "REPLICADESC")) {
        cli_d_replica_desc(c);
    } else {
        cli_d_err(c, -EINVAL, "unknown request '%.64s' or wrong number of arguments", v);
    }
}

/* ---- connections ---- */

static bool cli_d_send(struct cli_d_conn *c) {
    size_t off = 0;
    while (off < c->out.len) {
        ssize_t n = send(c->fd, c->out.data + off, c->out.len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        off += (size_t)n;
    }
    cm_buf_clear(&c->out);
    return true;
}

/* Reads what is there (taking attached fds); false at EOF, error or out of memory. */
static bool cli_d_recv(struct cli_d_conn *c) {
    if (c->in_cap - c->in_len < CLI_D_READ) {
        size_t cap = c->in_cap ? 2 * c->in_cap : 2 * CLI_D_READ;
        char *p = realloc(c->in, cap);
        if (p == NULL) {
            cm_log(CM_LOG_WARNING, "daemon", "dummy %u: out of memory for a request", c->id);
            return false;
        }
        c->in = p;
        c->in_cap = cap;
    }
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(CLI_D_MAX_FDS * sizeof(int))];
    } cm;
    struct iovec iov = {c->in + c->in_len, c->in_cap - c->in_len - 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b};
    m.msg_controllen = sizeof(cm.b);
    ssize_t n = recvmsg(c->fd, &m, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) {
        return true;
    }
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); n >= 0 && h != NULL; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
            if (c->hello_fd < 0 && c->pool == NULL) {
                c->hello_fd = fd; /* for the HELLO in these bytes */
            } else {
                close(fd);
            }
        }
    }
    if (n <= 0) {
        return false;
    }
    c->in_len += (size_t)n;
    return true;
}

/* Drops the consumed requests from the front of c->in; an empty buffer grown past 4 MiB by a
 * big inline value is freed. */
static void cli_d_compact(struct cli_d_conn *c) {
    if (c->in_off == c->in_len) {
        c->in_off = c->in_len = 0;
        if (c->in_cap > (4u << 20)) {
            free(c->in);
            c->in = NULL;
            c->in_cap = 0;
        }
    } else if (c->in_off > 0) {
        memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
        c->in_len -= c->in_off;
        c->in_off = 0;
    }
}

static void *cli_d_conn_main(void *arg) {
    struct cli_d_conn *c = arg;
    struct cli_d_server *s = c->srv;
    const char *why = "closed its connection";
    while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
        struct pollfd p = {c->fd, POLLIN, 0};
        int r = poll(&p, 1, CLI_D_POLL_MS);
        if (r == 0) {
            if (cm_mono_ms() - c->last_ms > s->ttl_ms) {
                why = "expired (no ping within client_live_ttl_sec)";
                cli_d_add(&s->n_expired, 1);
                break;
            }
            continue;
        }
        if (r < 0 || !cli_d_recv(c)) {
            if (r >= 0) {
                cli_d_add(&s->n_closed, 1);
            }
            break;
        }
        c->last_ms = cm_mono_ms(); /* any bytes count as life (a big inline value) */
        const char *err = NULL;
        int pr;
        bool alive = true;
        while (alive && (pr = cli_d_parse(c, &err)) == 1) {
            c->last_ms = cm_mono_ms();
            cli_d_dispatch(c);
            c->last_ms = cm_mono_ms();
            alive = cli_d_send(c);
            c->in_off += c->used;
        }
        cli_d_compact(c);
        if (alive && pr < 0) {
            cm_buf_appendf(&c->out, "-%s\r\n", err);
            cli_d_send(c);
            cli_d_add(&s->n_proto, 1);
            cm_log(CM_LOG_VERBOSE, "daemon", "dummy %u: %s", c->id, err);
            why = "sent a malformed request";
            cli_d_add(&s->n_closed, 1);
            break;
        }
        if (!alive) {
            cli_d_add(&s->n_closed, 1);
            break;
        }
    }
    if (c->pool != NULL) {
        long pid = c->pid;
        bool gone = cli_d_release_pool(c);
        cm_log(gone ? CM_LOG_NOTICE : CM_LOG_VERBOSE, "daemon",
               "dummy connection %u (pid %ld) %s%s", c->id, pid, why,
               gone ? "; its pool is released" : "");
    }
    if (c->hello_fd >= 0) {
        close(c->hello_fd);
        c->hello_fd = -1;
    }
    close(c->fd);
    c->fd = -1;
    __atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
    return NULL;
}

static void cli_d_conn_free(struct cli_d_conn *c) {
    pthread_join(c->thr, NULL);
    free(c->in);
    free(c->argv);
    free(c->lens);
    resp_parser_fini(&c->rp);
    cm_buf_fini(&c->out);
    free(c);
}

/* Joins and frees finished connections (all when all is set, after closing them). */
static void cli_d_reap(struct cli_d_server *s, bool all) {
    pthread_mutex_lock(&s->mu);
    struct cli_d_conn **pp = &s->conns;
    while (*pp != NULL) {
        struct cli_d_conn *c = *pp;
        if (all || __atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
            *pp = c->next;
            cli_d_conn_free(c);
        } else {
            pp = &c->next;
        }
    }
    pthread_mutex_unlock(&s->mu);
}

static void *cli_d_accept_main(void *arg) {
    struct cli_d_server *s = arg;
    while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
        struct pollfd p = {s->lfd, POLLIN, 0};
        cli_d_reap(s, false);
        if (poll(&p, 1, CLI_D_POLL_MS) <= 0) {
            continue;
        }
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        struct cli_d_conn *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->srv = s;
        c->fd = fd;
        c->hello_fd = -1;
        c->last_ms = cm_mono_ms();
        c->id = ++s->next_id;
        cm_buf_init(&c->out);
        struct resp_limits lim;
        resp_limits_default(&lim);
        lim.max_bulk_len = CLI_D_MAX_BULK;
        lim.max_multibulk_len = CLI_D_MAX_ARGS;
        resp_parser_init(&c->rp, &lim);
        if (pthread_create(&c->thr, NULL, cli_d_conn_main, c) != 0) {
            close(fd);
            free(c);
            continue;
        }
        pthread_mutex_lock(&s->mu);
        c->next = s->conns;
        s->conns = c;
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

/* Public: see cli_d.h. */
int cli_d_serve_start(struct crescent_store *st, const char *spec, unsigned ttl_ms,
                      struct cli_d_server **out) {
    struct sockaddr_un sa;
    socklen_t salen;
    *out = NULL;
    if (cli_dummy_sockaddr(spec, &sa, &salen) < 0) {
        return -EINVAL;
    }
    struct cli_d_server *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return -ENOMEM;
    }
    s->st = st;
    s->ttl_ms = ttl_ms;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->pool_mu, NULL);
    snprintf(s->name, sizeof(s->name), "%s%s", sa.sun_path[0] == '\0' ? "@" : "",
             sa.sun_path[0] == '\0' ? sa.sun_path + 1 : sa.sun_path);
    struct stat sb;
    if (sa.sun_path[0] != '\0' && lstat(sa.sun_path, &sb) == 0 && S_ISSOCK(sb.st_mode)) {
        unlink(sa.sun_path); /* a stale socket file; anything else makes bind fail */
    }
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = s->lfd < 0 ? -errno : 0;
    if (rc == 0 && (bind(s->lfd, (struct sockaddr *)&sa, salen) != 0 || listen(s->lfd, 64) != 0)) {
        rc = -errno;
    }
    if (rc == 0) {
        rc = -pthread_create(&s->accept_thr, NULL, cli_d_accept_main, s);
    }
    if (rc < 0) {
        if (s->lfd >= 0) {
            close(s->lfd);
        }
        pthread_mutex_destroy(&s->mu);
        pthread_mutex_destroy(&s->pool_mu);
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* Public: see cli_d.h. */
void cli_d_serve_stop(struct cli_d_server *s) {
    if (s == NULL) {
        return;
    }
    __atomic_store_n(&s->stop, true, __ATOMIC_RELAXED);
    pthread_join(s->accept_thr, NULL);
    close(s->lfd);
    cli_d_reap(s, true); /* each thread sees stop within CLI_D_POLL_MS */
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->pool_mu);
    free(s);
}

/* Public: see cli_d.h. */
void cli_d_serve_stats(struct cli_d_server *s, struct crescent_store_daemon_stats *out) {
    struct crescent_store_metrics m;
    crescent_store_metrics(s->st, &m);
    *out = (struct crescent_store_daemon_stats){
        .dummies = __atomic_load_n(&s->n_dummies, __ATOMIC_RELAXED),
        .dummies_expired = __atomic_load_n(&s->n_expired, __ATOMIC_RELAXED),
        .dummies_closed = __atomic_load_n(&s->n_closed, __ATOMIC_RELAXED),
        .requests = __atomic_load_n(&s->n_requests, __ATOMIC_RELAXED),
        .copied_bytes = __atomic_load_n(&s->n_copied, __ATOMIC_RELAXED),
        .zero_copy_bytes = __atomic_load_n(&s->n_zero, __ATOMIC_RELAXED),
        .staging_bytes = m.staging_bytes,
        .protocol_errors = __atomic_load_n(&s->n_proto, __ATOMIC_RELAXED),
        .connections = __atomic_load_n(&s->n_conns, __ATOMIC_RELAXED),
    };
}
