/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dummy clients, library side (cli_dummy.h has the protocol): a store created with cfg->daemon
 * owns no transfer engine and no segment. It creates a sealed memfd pool, hands its fd to the
 * crescent-client daemon with SCM_RIGHTS in the HELLO request, and forwards every store call
 * over the daemon's Unix socket; zero-copy calls pass offsets into the pool, which the daemon
 * has mapped and registered, so the bytes move between the peer segment and this process's
 * memory without a copy. Up to CLI_DUMMY_CONNS connections (opened as concurrent calls need
 * them, each with its own HELLO of the same pool, which the daemon maps once) carry one call
 * each at a time. A ping thread keeps every idle connection's TTL fresh (1 s) and reconnects
 * (with a new HELLO) after the daemon restarts.
 */
#include "common/fmacros.h"

#include "client/store/cli_dummy.h"
#include "client/store/cli_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CLI_DUMMY_PING_MS 1000
#define CLI_DUMMY_CONNS   4 /* connections to the daemon at most (calls in flight at once) */

/* One connection to the daemon; each said HELLO with the same pool. */
struct cli_dummy_conn {
    redisContext *c; /* NULL when not connected (or broken) */
    bool busy;       /* lent to a call */
};

struct cli_dummy {
    pthread_mutex_t mu; /* guards conns */
    pthread_cond_t cv;  /* a connection was given back */
    struct cli_dummy_conn conns[CLI_DUMMY_CONNS];
    struct sockaddr_un sa; /* daemon address */
    socklen_t salen;
    char spec[256];       /* the address as given (messages) */
    int pool_fd;          /* sealed memfd */
    char *pool;           /* its mapping */
    size_t pool_size;     /* bytes */
    uint32_t timeout_ms;  /* per-request timeout */
    pthread_t thr;        /* ping thread */
    bool thr_started;     /* thr runs */
    pthread_mutex_t p_mu; /* guards stop */
    pthread_cond_t p_cv;
    bool stop;
};

/* Public-to-the-library: see cli_dummy.h. */
int cli_dummy_sockaddr(const char *spec, struct sockaddr_un *sa, socklen_t *len) {
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    size_t n;
    if (spec == NULL || spec[0] == '\0') {
        return cli_fail(EINVAL, "daemon address is empty");
    }
    if (spec[0] == '/' || spec[0] == '@') {
        n = strlen(spec);
        if (n >= sizeof(sa->sun_path) || n < 2) {
            return cli_fail(EINVAL, "daemon socket '%s' is too long or empty", spec);
        }
        memcpy(sa->sun_path, spec, n);
        if (spec[0] == '@') {
            sa->sun_path[0] = '\0'; /* abstract namespace */
        } else {
            n++; /* the terminating NUL of a path name */
        }
    } else {
        const char *colon = strrchr(spec, ':');
        const char *p = colon != NULL ? colon + 1 : spec;
        char *end;
        errno = 0;
        long port = strtol(p, &end, 10);
        if (*p == '\0' || *end != '\0' || errno != 0 || port <= 0 || port > 65535) {
            return cli_fail(EINVAL, "daemon address '%s' is not [host:]port, @name or /path", spec);
        }
        n = 1 +
            (size_t)snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, CLI_DUMMY_SOCK_FMT, port);
    }
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    return 0;
}

/* Maps an error reply `-ERR <code> <message>` to its code (recording the message); other
 * replies give 0. */
static int cli_dummy_err(const redisReply *r) {
    if (r->type != REDIS_REPLY_ERROR) {
        return 0;
    }
    const char *s = r->str;
    if (strncmp(s, "ERR ", 4) == 0) {
        char *end;
        long code = strtol(s + 4, &end, 10);
        if (end != s + 4 && code < 0 && code > -100000) {
            return cli_fail((int)-code, "%s", *end == ' ' ? end + 1 : end);
        }
    }
    return cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon: %s", s);
}

/* Sends the whole of buf on fd, attaching fd_pass (when >= 0) to the first byte, without
 * SIGPIPE. Returns 0 or -errno. */
static int cli_dummy_send_fd(int fd, const char *buf, size_t len, int fd_pass) {
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } cm;
    memset(&cm, 0, sizeof(cm));
    struct iovec iov = {(void *)buf, len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd_pass >= 0) {
        m.msg_control = cm.b;
        m.msg_controllen = sizeof(cm.b);
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd_pass, sizeof(int));
    }
    size_t off = 0;
    while (off < len) {
        ssize_t n =
            off == 0 ? sendmsg(fd, &m, MSG_NOSIGNAL) : send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -(n < 0 ? errno : EPIPE);
        }
        off += (size_t)n;
    }
    return 0;
}

/* Connects to the daemon and says HELLO with the pool's fd; *out is the connection. Returns 0
 * or a negative code (-CRESCENT_STORE_ERPC_FAIL when the daemon is unreachable). */
static int cli_dummy_connect(struct crescent_store *st, redisContext **out) {
    struct cli_dummy *d = st->dummy;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return cli_fail(errno, "socket: %s", strerror(errno));
    }
    if (connect(fd, (struct sockaddr *)&d->sa, d->salen) != 0) {
        int e = errno;
        close(fd);
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon %s unreachable: %s", d->spec,
                        strerror(e));
    }
    char ver[16], size[24], pid[16];
    snprintf(ver, sizeof(ver), "%d", CLI_DUMMY_VERSION);
    snprintf(size, sizeof(size), "%zu", d->pool_size);
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    const char *argv[] = {"HELLO", ver, size, pid};
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, 4, argv, NULL);
    int rc = len < 0 ? -ENOMEM : cli_dummy_send_fd(fd, cmd, (size_t)len, d->pool_fd);
    free(cmd);
    redisContext *c = rc == 0 ? redisConnectFd(fd) : NULL;
    if (c == NULL || c->err) {
        redisFree(c);
        if (c == NULL) {
            close(fd);
        }
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon %s: HELLO not sent", d->spec);
    }
    struct timeval tv = {d->timeout_ms / 1000, (d->timeout_ms % 1000) * 1000};
    redisSetTimeout(c, tv);
    redisReply *r = NULL;
    if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL) {
        rc = cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon %s: no HELLO reply (%s)", d->spec,
                      c->errstr);
    } else if ((rc = cli_dummy_err(r)) == 0) {
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
            r->element[0]->type == REDIS_REPLY_STRING && r->element[0]->len == 32) {
            memcpy(st->client_id, r->element[0]->str, 32);
            st->client_id[32] = '\0';
        } else {
            rc = cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon %s: odd HELLO reply", d->spec);
        }
    }
    freeReplyObject(r);
    if (rc < 0) {
        redisFree(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* Lends a connection: an idle connected one, else an idle unconnected slot (the caller
 * connects it), else waits for one to be given back. */
static struct cli_dummy_conn *cli_dummy_take(struct cli_dummy *d) {
    struct cli_dummy_conn *pick = NULL;
    pthread_mutex_lock(&d->mu);
    while (pick == NULL) {
        struct cli_dummy_conn *unconnected = NULL;
        for (size_t i = 0; i < CLI_DUMMY_CONNS && pick == NULL; i++) {
            struct cli_dummy_conn *k = &d->conns[i];
            if (!k->busy && k->c != NULL) {
                pick = k;
            } else if (!k->busy && unconnected == NULL) {
                unconnected = k;
            }
        }
        pick = pick != NULL ? pick : unconnected;
        if (pick == NULL) {
            pthread_cond_wait(&d->cv, &d->mu);
        }
    }
    pick->busy = true;
    pthread_mutex_unlock(&d->mu);
    return pick;
}

static void cli_dummy_give(struct cli_dummy *d, struct cli_dummy_conn *k) {
    pthread_mutex_lock(&d->mu);
    k->busy = false;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* Sends one request on the lent connection k (connecting it first when needed) and returns
 * the reply in *out; a broken connection is closed. Returns 0 or -CRESCENT_STORE_ERPC_FAIL. */
static int cli_dummy_request(struct crescent_store *st, struct cli_dummy_conn *k, int argc,
                             const char **argv, const size_t *lens, redisReply **out) {
    struct cli_dummy *d = st->dummy;
    int rc = k->c == NULL ? cli_dummy_connect(st, &k->c) : 0;
    redisReply *r = NULL;
    if (rc == 0) {
        /* Sent with MSG_NOSIGNAL (hiredis's write(2) would raise SIGPIPE in the application
         * when the daemon is gone); hiredis only reads the reply. */
        char *cmd = NULL;
        int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
        if (len < 0 || cli_dummy_send_fd(k->c->fd, cmd, (size_t)len, -1) < 0 ||
            redisGetReply(k->c, (void **)&r) != REDIS_OK) {
            r = NULL;
        }
        free(cmd);
        if (r == NULL) {
            rc = cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon %s: %s", d->spec,
                          k->c->err ? k->c->errstr : "connection lost");
            redisFree(k->c);
            k->c = NULL;
        }
    }
    *out = r;
    return rc;
}

/* Sends one request on a lent connection and returns its reply in *out (the caller frees it);
 * connects first when needed. Returns 0 or a negative code (-CRESCENT_STORE_ERPC_FAIL, or the
 * error reply's code). Thread-safe: up to CLI_DUMMY_CONNS calls run at once. */
static int cli_dummy_call(struct crescent_store *st, int argc, const char **argv,
                          const size_t *lens, redisReply **out) {
    struct cli_dummy *d = st->dummy;
    struct cli_dummy_conn *k = cli_dummy_take(d);
    redisReply *r = NULL;
    int rc = cli_dummy_request(st, k, argc, argv, lens, &r);
    cli_dummy_give(d, k);
    *out = NULL;
    if (rc < 0) {
        __atomic_store_n(&st->health, 2, __ATOMIC_RELAXED);
        return rc;
    }
    if ((rc = cli_dummy_err(r)) < 0) {
        freeReplyObject(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* A request whose reply is an integer: returns it or a negative code. */
static int64_t cli_dummy_int(struct crescent_store *st, int argc, const char **argv,
                             const size_t *lens) {
    redisReply *r;
    int rc = cli_dummy_call(st, argc, argv, lens, &r);
    if (rc < 0) {
        return rc;
    }
    int64_t v = r->type == REDIS_REPLY_INTEGER
                    ? r->integer
                    : cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon: expected an integer");
    freeReplyObject(r);
    return v;
}

/* A request whose reply is an array of n integers, copied to out32 or out64. Returns 0 when
 * every one is >= 0 (or when !first_fail), else the first negative one; or a negative code for
 * the request. */
static int cli_dummy_ints(struct crescent_store *st, int argc, const char **argv,
                          const size_t *lens, size_t n, int *out32, int64_t *out64,
                          bool first_fail) {
    redisReply *r;
    int rc = cli_dummy_call(st, argc, argv, lens, &r);
    if (rc < 0) {
        return rc;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n) {
        freeReplyObject(r);
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon: expected %zu results", n);
    }
    for (size_t i = 0; i < n; i++) {
        int64_t v = r->element[i]->type == REDIS_REPLY_INTEGER ? r->element[i]->integer
                                                               : -CRESCENT_STORE_ERPC_FAIL;
        if (out32 != NULL) {
            out32[i] = (int)v;
        } else {
            out64[i] = v;
        }
        if (v < 0 && rc == 0 && first_fail) {
            rc = (int)v;
        }
    }
    freeReplyObject(r);
    return rc;
}

/* Argument vector under construction; numbers live in num. */
struct cli_dargs {
    const char **argv;
    size_t *lens;
    char (*num)[24];
    size_t argc, nnum, cap;
};

static int cli_dargs_init(struct cli_dargs *a, size_t cap) {
    a->argv = calloc(cap, sizeof(*a->argv));
    a->lens = calloc(cap, sizeof(*a->lens));
    a->num = calloc(cap, sizeof(*a->num));
    a->argc = a->nnum = 0;
    a->cap = cap;
    return a->argv && a->lens && a->num ? 0 : cli_fail(ENOMEM, "out of memory");
}

static void cli_dargs_fini(struct cli_dargs *a) {
    free(a->argv);
    free(a->lens);
    free(a->num);
}

static void cli_dargs_str(struct cli_dargs *a, const char *s, size_t len) {
    a->argv[a->argc] = s;
    a->lens[a->argc++] = len;
}

static void cli_dargs_u64(struct cli_dargs *a, uint64_t v) {
    int n = snprintf(a->num[a->nnum], 24, "%llu", (unsigned long long)v);
    cli_dargs_str(a, a->num[a->nnum++], (size_t)n);
}

/* Arguments the replicate config takes. */
static size_t cli_dargs_rc_count(const struct crescent_store_replicate_config *rc) {
    size_t np = rc != NULL && rc->preferred_segments != NULL ? rc->n_preferred_segments : 0;
    return CLI_DUMMY_RC_FIELDS + (np < CLI_DUMMY_MAX_PREF ? np : CLI_DUMMY_MAX_PREF);
}

static void cli_dargs_rc(struct cli_dargs *a, const struct crescent_store_replicate_config *rc) {
    struct crescent_store_replicate_config z = {0};
    if (rc == NULL) {
        rc = &z;
    }
    size_t np = cli_dargs_rc_count(rc) - CLI_DUMMY_RC_FIELDS;
    cli_dargs_u64(a, rc->replica_num);
    cli_dargs_u64(a, rc->with_soft_pin != 0);
    cli_dargs_u64(a, rc->soft_pin_ttl_ms);
    cli_dargs_u64(a, rc->with_hard_pin != 0);
    cli_dargs_u64(a, rc->prefer_same_node != 0);
    cli_dargs_u64(a, np);
    for (size_t i = 0; i < np; i++) {
        const char *s = rc->preferred_segments[i] != NULL ? rc->preferred_segments[i] : "";
        cli_dargs_str(a, s, strlen(s));
    }
}

static int cli_dargs_key(struct cli_dargs *a, const char *key) {
    int rc = cli__check_key(key);
    if (rc == 0) {
        cli_dargs_str(a, key, strlen(key));
    }
    return rc;
}

/* Public-to-the-library: 1 when [p, p+len) lies inside the pool. */
int cli_dummy_in_pool(struct crescent_store *st, const void *p, size_t len) {
    struct cli_dummy *d = st->dummy;
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)d->pool;
    return p != NULL && a >= b && len <= d->pool_size && a - b <= d->pool_size - len;
}

static int cli_dummy_pool_off(struct crescent_store *st, const void *p, size_t len,
                              const char *what, uint64_t *off) {
    if (!cli_dummy_in_pool(st, p, len)) {
        return cli_fail(CRESCENT_STORE_EINVALID_PARAMS,
                        "%s: a dummy client's buffer must lie inside its pool "
                        "(crescent_store_dummy_pool)",
                        what);
    }
    *off = (uint64_t)((const char *)p - st->dummy->pool);
    return 0;
}

/* PING on every idle connection (the daemon's TTL is per connection; a busy one is alive), or
 * on a new one when none is connected (after a daemon restart). Sets st->health. */
static void cli_dummy_ping_all(struct crescent_store *st) {
    struct cli_dummy *d = st->dummy;
    const char *argv[] = {"PING"};
    bool any = false;
    int health = 0;
    for (size_t i = 0; i < CLI_DUMMY_CONNS; i++) {
        struct cli_dummy_conn *k = &d->conns[i];
        pthread_mutex_lock(&d->mu);
        bool take = k->c != NULL && !k->busy;
        any = any || k->c != NULL;
        k->busy = k->busy || take;
        pthread_mutex_unlock(&d->mu);
        if (take) {
            redisReply *r = NULL;
            int rc = cli_dummy_request(st, k, 1, argv, NULL, &r);
            health = rc < 0 || r->type != REDIS_REPLY_INTEGER || r->integer != 0 ? 2 : health;
            freeReplyObject(r);
            cli_dummy_give(d, k);
        }
    }
    if (!any) {
        health = cli_dummy_int(st, 1, argv, NULL) == 0 ? 0 : 2;
    }
    __atomic_store_n(&st->health, health, __ATOMIC_RELAXED);
}

static void *cli_dummy_ping_main(void *arg) {
    struct crescent_store *st = arg;
    struct cli_dummy *d = st->dummy;
    pthread_mutex_lock(&d->p_mu);
    while (!d->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += CLI_DUMMY_PING_MS / 1000;
        pthread_cond_timedwait(&d->p_cv, &d->p_mu, &ts);
        if (d->stop) {
            break;
        }
        pthread_mutex_unlock(&d->p_mu);
        cli_dummy_ping_all(st);
        pthread_mutex_lock(&d->p_mu);
    }
    pthread_mutex_unlock(&d->p_mu);
    return NULL;
}

static int cli_dummy_pool(struct cli_dummy *d, uint64_t size) {
    d->pool_size = size ? size : CLI_DUMMY_DEFAULT_POOL;
    d->pool_fd = memfd_create("crescent-dummy-pool", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (d->pool_fd < 0) {
        return cli_fail(errno, "memfd_create: %s", strerror(errno));
    }
    /* Sealed against shrinking, so the daemon's mapping can never fault (SIGBUS). */
    if (ftruncate(d->pool_fd, (off_t)d->pool_size) != 0 ||
        fcntl(d->pool_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        return cli_fail(errno, "dummy pool of %zu bytes: %s", d->pool_size, strerror(errno));
    }
    void *p = mmap(NULL, d->pool_size, PROT_READ | PROT_WRITE, MAP_SHARED, d->pool_fd, 0);
    if (p == MAP_FAILED) {
        return cli_fail(errno, "dummy pool mmap: %s", strerror(errno));
    }
    d->pool = p;
    return 0;
}

/* Public-to-the-library: see cli_dummy.h. Sets up st->dummy; on failure the caller destroys
 * st (cli_dummy_destroy frees what was made). */
int cli_dummy_create(struct crescent_store *st, const char *daemon,
                     const struct crescent_store_config *cfg) {
    if (cfg->global_segment_size != 0) {
        return cli_fail(EINVAL, "a dummy client mounts no segment: give the daemon "
                                "--global_segment_size instead of global_segment_size");
    }
    struct cli_dummy *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        return -ENOMEM;
    }
    st->dummy = d;
    d->pool_fd = -1;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    pthread_mutex_init(&d->p_mu, NULL);
    pthread_cond_init(&d->p_cv, NULL);
    snprintf(d->spec, sizeof(d->spec), "%s", daemon);
    d->timeout_ms = cfg->master_timeout_ms ? cfg->master_timeout_ms : 30000;
    st->log_cb = cfg->log_cb;
    st->log_arg = cfg->log_arg;
    int rc = cli_dummy_sockaddr(daemon, &d->sa, &d->salen);
    if (rc == 0) {
        rc = cli_dummy_pool(d, cfg->local_buffer_size);
    }
    if (rc == 0) {
        rc = cli_dummy_connect(st, &d->conns[0].c);
    }
    if (rc == 0) {
        rc = -pthread_create(&d->thr, NULL, cli_dummy_ping_main, st);
        d->thr_started = rc == 0;
    }
    return rc;
}

/* Public-to-the-library: stops the ping thread, closes the connection (the daemon then drops
 * the pool) and unmaps the pool. */
void cli_dummy_destroy(struct crescent_store *st) {
    struct cli_dummy *d = st->dummy;
    if (d == NULL) {
        return;
    }
    if (d->thr_started) {
        pthread_mutex_lock(&d->p_mu);
        d->stop = true;
        pthread_cond_broadcast(&d->p_cv);
        pthread_mutex_unlock(&d->p_mu);
        pthread_join(d->thr, NULL);
    }
    for (size_t i = 0; i < CLI_DUMMY_CONNS; i++) {
        redisFree(d->conns[i].c);
    }
    if (d->pool != NULL) {
        munmap(d->pool, d->pool_size);
    }
    if (d->pool_fd >= 0) {
        close(d->pool_fd);
    }
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->p_mu);
    pthread_cond_destroy(&d->p_cv);
    free(d);
    st->dummy = NULL;
}

/* Public: see store.h. */
void *crescent_store_dummy_pool(struct crescent_store *st, size_t *size) {
    if (size != NULL) {
        *size = st != NULL && st->dummy != NULL ? st->dummy->pool_size : 0;
    }
    return st != NULL && st->dummy != NULL ? st->dummy->pool : NULL;
}

/* Public: see store.h. */
int crescent_store_daemon_stats(struct crescent_store *st,
                                struct crescent_store_daemon_stats *out) {
    if (st == NULL || out == NULL || st->dummy == NULL) {
        return cli_fail(EINVAL, "daemon_stats: NULL argument or not a dummy client");
    }
    uint64_t v[CLI_DUMMY_STATS_FIELDS] = {0};
    const char *argv[] = {"STATS"};
    redisReply *r;
    int rc = cli_dummy_call(st, 1, argv, NULL, &r);
    if (rc < 0) {
        return rc;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != CLI_DUMMY_STATS_FIELDS) {
        freeReplyObject(r);
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon: odd STATS reply");
    }
    for (size_t i = 0; i < CLI_DUMMY_STATS_FIELDS; i++) {
        v[i] = r->element[i]->type == REDIS_REPLY_INTEGER ? (uint64_t)r->element[i]->integer : 0;
    }
    freeReplyObject(r);
    *out =
        (struct crescent_store_daemon_stats){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
    return 0;
}

/* Public-to-the-library: health of a dummy: 2 when the daemon (or its master) is unreachable. */
int cli_dummy_health(struct crescent_store *st) {
    return __atomic_load_n(&st->health, __ATOMIC_RELAXED);
}

/* Public-to-the-library: copying put / upsert, the value inline. */
int cli_dummy_put(struct crescent_store *st, const char *key, const void *value, size_t size,
                  const struct crescent_store_replicate_config *rc, int upsert) {
    if (value == NULL && size > 0) {
        return cli_fail(EINVAL, "put: NULL value");
    }
    struct cli_dargs a;
    int err = cli_dargs_init(&a, 4 + cli_dargs_rc_count(rc));
    if (err == 0) {
        cli_dargs_str(&a, "PUT", 3);
        err = cli_dargs_key(&a, key);
    }
    if (err == 0) {
        cli_dargs_str(&a, value != NULL ? value : "", size);
        cli_dargs_u64(&a, upsert != 0);
        cli_dargs_rc(&a, rc);
        err = (int)cli_dummy_int(st, (int)a.argc, a.argv, a.lens);
    }
    cli_dargs_fini(&a);
    return err < 0 ? err : 0;
}

/* Public-to-the-library: put of the concatenated parts. */
int cli_dummy_put_parts(struct crescent_store *st, const char *key, const void *const *parts,
                        const size_t *sizes, size_t n,
                        const struct crescent_store_replicate_config *rc) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (parts[i] == NULL && sizes[i] > 0) {
            return cli_fail(EINVAL, "put: NULL part");
        }
        total += sizes[i];
    }
    char *v = malloc(total ? total : 1);
    if (v == NULL) {
        return cli_fail(ENOMEM, "put_parts: out of memory");
    }
    for (size_t i = 0, off = 0; i < n; off += sizes[i], i++) {
        if (sizes[i] > 0) {
            memcpy(v + off, parts[i], sizes[i]);
        }
    }
    int rc2 = cli_dummy_put(st, key, v, total, rc, 0);
    free(v);
    return rc2;
}

/* Public-to-the-library: zero-copy put / upsert from the pool. */
int cli_dummy_put_from(struct crescent_store *st, const char *key, const void *buf, size_t size,
                       const struct crescent_store_replicate_config *rc, int upsert) {
    uint64_t off = 0;
    int err = cli_dummy_pool_off(st, buf, size, "put_from", &off);
    struct cli_dargs a = {0};
    if (err == 0) {
        err = cli_dargs_init(&a, 5 + cli_dargs_rc_count(rc));
    }
    if (err == 0) {
        cli_dargs_str(&a, "PUTFROM", 7);
        err = cli_dargs_key(&a, key);
    }
    if (err == 0) {
        cli_dargs_u64(&a, off);
        cli_dargs_u64(&a, size);
        cli_dargs_u64(&a, upsert != 0);
        cli_dargs_rc(&a, rc);
        err = (int)cli_dummy_int(st, (int)a.argc, a.argv, a.lens);
    }
    cli_dargs_fini(&a);
    return err < 0 ? err : 0;
}

/* Public-to-the-library: copying get, the value inline. */
int cli_dummy_get(struct crescent_store *st, const char *key, void **value, size_t *size) {
    int err = cli__check_key(key);
    if (err < 0) {
        return err;
    }
    const char *argv[] = {"GET", key};
    redisReply *r;
    if ((err = cli_dummy_call(st, 2, argv, NULL, &r)) < 0) {
        return err;
    }
    if (r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon: expected a value");
    }
    *size = r->len;
    *value = r->len > 0 ? malloc(r->len) : NULL;
    if (r->len > 0 && *value == NULL) {
        *size = 0;
        freeReplyObject(r);
        return cli_fail(ENOMEM, "get: out of memory");
    }
    if (r->len > 0) {
        memcpy(*value, r->str, r->len);
    }
    freeReplyObject(r);
    return 0;
}

/* Public-to-the-library: zero-copy get into the pool. */
int64_t cli_dummy_get_into(struct crescent_store *st, const char *key, void *buf, size_t cap) {
    uint64_t off = 0;
    int err = cli_dummy_pool_off(st, buf, cap, "get_into", &off);
    if (err == 0) {
        err = cli__check_key(key);
    }
    if (err < 0) {
        return err;
    }
    char o[24], c[24];
    snprintf(o, sizeof(o), "%llu", (unsigned long long)off);
    snprintf(c, sizeof(c), "%zu", cap);
    const char *argv[] = {"GETINTO", key, o, c};
    return cli_dummy_int(st, 4, argv, NULL);
}

/* Appends "key offset length" for each of the n ranges (bufs[i], lens[i]), which must lie in
 * the dummy's pool; what names the call in errors. Returns 0 or the first error. */
static int cli_dargs_ranges(struct crescent_store *st, struct cli_dargs *a, const char *const *keys,
                            const void *const *bufs, const size_t *lens, size_t n,
                            const char *what) {
    int err = 0;
    for (size_t i = 0; i < n && err == 0; i++) {
        uint64_t off = 0;
        err = cli_dummy_pool_off(st, bufs[i], lens[i], what, &off);
        if (err == 0 && (err = cli_dargs_key(a, keys[i])) == 0) {
            cli_dargs_u64(a, off);
            cli_dargs_u64(a, lens[i]);
        }
    }
    return err;
}

/* Public-to-the-library: batch zero-copy put from the pool. */
int cli_dummy_batch_put_from(struct crescent_store *st, const char *const *keys,
                             const void *const *bufs, const size_t *sizes, size_t n,
                             const struct crescent_store_replicate_config *rc, int *results) {
    if (keys == NULL || bufs == NULL || sizes == NULL || results == NULL || n == 0) {
        return cli_fail(EINVAL, "batch_put_from: NULL argument or no keys");
    }
    struct cli_dargs a;
    int err = cli_dargs_init(&a, 2 + cli_dargs_rc_count(rc) + 3 * n);
    if (err == 0) {
        cli_dargs_str(&a, "BPUTFROM", 8);
        cli_dargs_u64(&a, n);
        cli_dargs_rc(&a, rc);
    }
    if (err == 0) {
        err = cli_dargs_ranges(st, &a, keys, (const void *const *)bufs, sizes, n, "batch_put_from");
    }
    if (err == 0) {
        err = cli_dummy_ints(st, (int)a.argc, a.argv, a.lens, n, results, NULL, true);
    }
    cli_dargs_fini(&a);
    return err;
}

/* Public-to-the-library: batch copying put, one inline put per key. */
int cli_dummy_batch_put(struct crescent_store *st, const char *const *keys,
                        const void *const *values, const size_t *sizes, size_t n,
                        const struct crescent_store_replicate_config *rc, int *results) {
    if (keys == NULL || values == NULL || sizes == NULL || results == NULL) {
        return cli_fail(EINVAL, "batch_put: NULL argument");
    }
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        results[i] = cli_dummy_put(st, keys[i], values[i], sizes[i], rc, 0);
        first = first == 0 ? results[i] : first;
    }
    return first;
}

/* Public-to-the-library: batch zero-copy get into the pool. */
int cli_dummy_batch_get_into(struct crescent_store *st, const char *const *keys, void *const *bufs,
                             const size_t *caps, size_t n, int64_t *results) {
    if (keys == NULL || bufs == NULL || caps == NULL || results == NULL || n == 0) {
        return cli_fail(EINVAL, "batch_get_into: NULL argument or no keys");
    }
    struct cli_dargs a;
    int err = cli_dargs_init(&a, 2 + 3 * n);
    if (err == 0) {
        cli_dargs_str(&a, "BGETINTO", 8);
        cli_dargs_u64(&a, n);
    }
    if (err == 0) {
        err = cli_dargs_ranges(st, &a, keys, (const void *const *)bufs, caps, n, "batch_get_into");
    }
    if (err == 0) {
        err = cli_dummy_ints(st, (int)a.argc, a.argv, a.lens, n, NULL, results, true);
    }
    cli_dargs_fini(&a);
    return err;
}

/* Public-to-the-library: batch copying get, one inline get per key. */
int cli_dummy_batch_get(struct crescent_store *st, const char *const *keys, size_t n, void **values,
                        size_t *sizes, int64_t *results) {
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        values[i] = NULL;
        sizes[i] = 0;
        int rc = cli_dummy_get(st, keys[i], &values[i], &sizes[i]);
        results[i] = rc < 0 ? rc : (int64_t)sizes[i];
        first = first == 0 && rc < 0 ? rc : first;
    }
    return first;
}

/* Public-to-the-library: "EXIST" / "SIZE" of one key. */
int64_t cli_dummy_key_int(struct crescent_store *st, const char *verb, const char *key) {
    int err = cli__check_key(key);
    if (err < 0) {
        return err;
    }
    const char *argv[] = {verb, key};
    return cli_dummy_int(st, 2, argv, NULL);
}

/* Public-to-the-library: batch is_exist. */
int cli_dummy_batch_is_exist(struct crescent_store *st, const char *const *keys, size_t n,
                             int *results) {
    if (keys == NULL || results == NULL || n == 0) {
        return cli_fail(EINVAL, "batch_is_exist: NULL argument or no keys");
    }
    struct cli_dargs a;
    int err = cli_dargs_init(&a, 1 + n);
    if (err == 0) {
        cli_dargs_str(&a, "BEXIST", 6);
    }
    for (size_t i = 0; i < n && err == 0; i++) {
        err = cli_dargs_key(&a, keys[i]);
    }
    if (err == 0) {
        err = cli_dummy_ints(st, (int)a.argc, a.argv, a.lens, n, results, NULL, false);
    }
    cli_dargs_fini(&a);
    return err;
}

/* Public-to-the-library: "REMOVE key", "REMOVEREGEX pattern" or "REMOVEALL" (arg NULL). */
int64_t cli_dummy_remove(struct crescent_store *st, const char *verb, const char *arg, int force) {
    const char *f = force ? "1" : "0";
    const char *argv[] = {verb, arg != NULL ? arg : f, f};
    return cli_dummy_int(st, arg != NULL ? 3 : 2, argv, NULL);
}

/* Public-to-the-library: batch_replica_clear on the daemon's segments. */
int cli_dummy_replica_clear(struct crescent_store *st, const char *const *keys, size_t n,
                            const char *segment, int *results) {
    if (keys == NULL || results == NULL || n == 0) {
        return cli_fail(EINVAL, "batch_replica_clear: NULL argument or no keys");
    }
    struct cli_dargs a;
    int err = cli_dargs_init(&a, 2 + n);
    if (err == 0) {
        cli_dargs_str(&a, "REPLICACLEAR", 12);
        cli_dargs_str(&a, segment != NULL ? segment : "", segment != NULL ? strlen(segment) : 0);
    }
    for (size_t i = 0; i < n && err == 0; i++) {
        err = cli_dargs_key(&a, keys[i]);
    }
    if (err == 0) {
        err = cli_dummy_ints(st, (int)a.argc, a.argv, a.lens, n, results, NULL, false);
    }
    cli_dargs_fini(&a);
    return err;
}

static uint64_t cli_dummy_u64(const redisReply *r) {
    return r->type == REDIS_REPLY_INTEGER ? (uint64_t)r->integer : 0;
}

static void cli_dummy_strf(char *dst, size_t cap, const redisReply *r) {
    snprintf(dst, cap, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
}

/* Public-to-the-library: replica descriptors of key. */
int cli_dummy_replica_desc(struct crescent_store *st, const char *key,
                           struct crescent_store_replica *out, size_t max) {
    int err = cli__check_key(key);
    if (err < 0) {
        return err;
    }
    char m[24];
    snprintf(m, sizeof(m), "%zu", max);
    const char *argv[] = {"REPLICADESC", key, m};
    redisReply *r;
    if ((err = cli_dummy_call(st, 3, argv, NULL, &r)) < 0) {
        return err;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        freeReplyObject(r);
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "daemon: expected replicas");
    }
    size_t n = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 7) {
            continue;
        }
        if (n < max && out != NULL) {
            struct crescent_store_replica *o = &out[n];
            memset(o, 0, sizeof(*o));
            cli_dummy_strf(o->segment, sizeof(o->segment), e->element[0]);
            cli_dummy_strf(o->endpoint, sizeof(o->endpoint), e->element[1]);
            cli_dummy_strf(o->protocol, sizeof(o->protocol), e->element[2]);
            o->complete = (int)cli_dummy_u64(e->element[3]);
            o->is_memory = (int)cli_dummy_u64(e->element[4]);
            o->addr = cli_dummy_u64(e->element[5]);
            o->size = cli_dummy_u64(e->element[6]);
        }
        n++;
    }
    freeReplyObject(r);
    return (int)n;
}
