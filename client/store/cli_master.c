/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store client's master side: hiredis connections to crescent-master (reconnect and one
 * retry on a broken connection; requests written in RESP by cli_format, replies read by
 * hiredis), error replies mapped to CRESCENT_STORE_E* codes, replica descriptor parsing (RESP2
 * flat maps), remount, and the 1 s ping thread that follows NEED_REMOUNT and a restarted master.
 * With an HA address form (cli_leader.c) a command that finds no leader waits for one up to the
 * fail-over window and is then sent again; the ping thread pings a new leader at once.
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"
#include "common/cm_dec.h"
#include "common/cm_time.h"

#include <errno.h>
#include <hiredis/sds.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_PING_MS 1000 /* ping period */

/* Opens a connection to the master with the store's timeout; NULL when it cannot connect.
 * Thread-safe. */
redisContext *cli__connect(struct crescent_store *st) {
    struct timeval tv = {st->timeout_ms / 1000, (st->timeout_ms % 1000) * 1000};
    char host[sizeof(st->host)];
    pthread_mutex_lock(&st->addr_mu);
    memcpy(host, st->host, sizeof(host));
    int port = st->port;
    pthread_mutex_unlock(&st->addr_mu);
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (c == NULL || c->err) {
        if (c != NULL) {
            cli_fail(CRESCENT_STORE_ERPC_FAIL, "master %s:%d: %s", host, port, c->errstr);
        }
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

/* Maps an error reply to a negative CRESCENT_STORE_E* code and records its text as the last
 * error; 0 for a non-error reply. Thread-safe. */
int cli__reply_err(const redisReply *r) {
    if (r->type != REDIS_REPLY_ERROR) {
        return 0;
    }
    size_t w = 0;
    while (w < r->len && r->str[w] != ' ') {
        w++;
    }
    return cli_fail(cli_err_from_name(r->str, w), "master: %.*s", (int)r->len, r->str);
}

/* redisCommandArgv with SIGPIPE blocked in the calling thread: hiredis writes with write(2),
 * so a master that vanished while a request was being written would otherwise kill the
 * application. A SIGPIPE the call raised is consumed; the call fails with EPIPE instead.
 * Thread-safe (the signal mask is per thread). */
struct cli_nopipe {
    sigset_t old, before;
};

static void cli_nopipe_begin(struct cli_nopipe *np) {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &np->old);
    sigpending(&np->before);
}

static void cli_nopipe_end(struct cli_nopipe *np) {
    sigset_t pipe_set, after;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&after);
    if (sigismember(&after, SIGPIPE) && !sigismember(&np->before, SIGPIPE)) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &np->old, NULL);
}

redisReply *cli__redis_argv(redisContext *c, int argc, const char **argv, const size_t *lens) {
    struct cli_nopipe np;
    cli_nopipe_begin(&np);
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    cli_nopipe_end(&np);
    return r;
}

/* Writes "<c><v>\r\n" (d has CM_DEC_ROOM + 3 bytes of room); returns the end. */
static inline char *cli_put_hdr(char *d, char c, size_t v) {
    *d++ = c;
    if (v < 100) { /* argument lengths: mostly one or two digits */
        if (v >= 10) {
            *d++ = (char)('0' + v / 10);
        }
        *d++ = (char)('0' + v % 10);
    } else {
        d += cm_dec_u64(d, v);
    }
    *d++ = '\r';
    *d++ = '\n';
    return d;
}

/* memcpy(d, a, n), with keys, numbers and the client id (4 to 32 bytes) as two overlapping
 * copies of a word or two instead of a call. */
static inline void cli_copy_arg(char *d, const char *a, size_t n) {
    if (n > 16 && n <= 32) {
        memcpy(d, a, 16);
        memcpy(d + n - 16, a + n - 16, 16);
    } else if (n >= 8 && n <= 16) {
        memcpy(d, a, 8);
        memcpy(d + n - 8, a + n - 8, 8);
    } else if (n >= 4 && n < 8) {
        memcpy(d, a, 4);
        memcpy(d + n - 4, a + n - 4, 4);
    } else {
        memcpy(d, a, n);
    }
}

/* The RESP request of argv (lens NULL: strlen) in one malloc'ed buffer of *len bytes, or NULL
 * when out of memory. hiredis's redisCommandArgv formats each argument through sdscatfmt,
 * which cost more than the rest of a 128-key batch request. */
static char *cli_format(int argc, const char **argv, const size_t *lens, size_t *len) {
    size_t total = 32 + CM_DEC_ROOM, stack[64], *own = NULL;
    if (lens == NULL) { /* measured once, for the size and the copy */
        own = argc <= 64 ? stack : malloc((size_t)argc * sizeof(*own));
        if (own == NULL) {
            return NULL;
        }
        for (int i = 0; i < argc; i++) {
            own[i] = strlen(argv[i]);
        }
        lens = own;
    }
    for (int i = 0; i < argc; i++) {
        total += lens[i] + 32;
    }
    char *buf = malloc(total), *d = buf;
    if (buf != NULL) {
        d = cli_put_hdr(d, '*', (size_t)argc);
        for (int i = 0; i < argc; i++) {
            size_t n = lens[i];
            d = cli_put_hdr(d, '$', n);
            cli_copy_arg(d, argv[i], n);
            d += n;
            *d++ = '\r';
            *d++ = '\n';
        }
        *len = (size_t)(d - buf);
    }
    if (own != stack) {
        free(own);
    }
    return buf;
}

#define CLI_MAX_REDIRECTS 100  /* -NOTLEADER / -LOADING answers followed per command (host:port) */
#define CLI_REDIRECT_WAIT 200  /* ms before asking again when no leader is known */
#define CLI_PING_WINDOW   1000 /* ms a ping waits for a leader (HA forms); the next ping retries */

/*
 * HA masters (docs/ha.md): a standby answers "-NOTLEADER host:port" (or "-NOTLEADER none ..."
 * while no leader is known) and a leader replaying its op-log "-LOADING ...". Points st at the
 * named leader and returns 0 (ask again at once), returns CLI_REDIRECT_WAIT with *unknown set
 * when the standby names nobody (ask again after a pause; with an HA address form, after a look
 * at the election record), or -1 for any other reply. A refused command was not executed, so
 * repeating it is safe.
 */
static int cli_redirect(struct crescent_store *st, const redisReply *r, bool *unknown) {
    *unknown = false;
    if (r->type != REDIS_REPLY_ERROR)
        return -1;
    if (r->len >= 8 && memcmp(r->str, "LOADING ", 8) == 0)
        return CLI_REDIRECT_WAIT;
    if (r->len < 10 || memcmp(r->str, "NOTLEADER ", 10) != 0)
        return -1;
    const char *a = r->str + 10, *end = r->str + r->len;
    const char *sp = memchr(a, ' ', (size_t)(end - a));
    if (cli__set_master(st, a, (size_t)((sp != NULL ? sp : end) - a)) == 0)
        return 0;
    *unknown = true; /* "none": the standby knows no leader yet */
    return CLI_REDIRECT_WAIT;
}

/* Whether to ask again after a redirect: with a host:port address up to CLI_MAX_REDIRECTS
 * times (pausing wait_ms), with an HA form within the fail-over window (pausing after the
 * third redirect in a row, so two masters naming each other cannot spin). */
static bool cli_follow(struct crescent_store *st, int wait_ms, bool unknown, int *redirects,
                       uint64_t *deadline, uint32_t window_ms) {
    if (st->leader == NULL) {
        if ((*redirects)++ >= CLI_MAX_REDIRECTS)
            return false;
        if (wait_ms > 0)
            usleep((useconds_t)wait_ms * 1000);
        return true;
    }
    bool pause = wait_ms > 0 || ++*redirects > 3;
    return cli__failover_wait(st, deadline, window_ms, unknown, pause);
}

/* HA forms: drops *slot when it is connected to another master than st's current address (the
 * leader view moved on), so the next command goes to the new leader at once. */
static void cli_drop_stale(struct crescent_store *st, redisContext **slot) {
    if (st->leader == NULL || *slot == NULL || (*slot)->tcp.host == NULL)
        return;
    pthread_mutex_lock(&st->addr_mu);
    bool stale = (*slot)->tcp.port != st->port || strcmp((*slot)->tcp.host, st->host) != 0;
    pthread_mutex_unlock(&st->addr_mu);
    if (stale) {
        redisFree(*slot);
        *slot = NULL;
    }
}

/* The error of a command that found no master: with an HA form, after the fail-over window. */
static int cli_no_master(struct crescent_store *st, const char *why, uint32_t window_ms) {
    char host[sizeof(st->host)];
    pthread_mutex_lock(&st->addr_mu); /* the leader view may move it meanwhile */
    memcpy(host, st->host, sizeof(host));
    int port = st->port;
    pthread_mutex_unlock(&st->addr_mu);
    if (st->leader == NULL)
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master %s:%d %s", host, port, why);
    return cli_fail(CRESCENT_STORE_ERPC_FAIL,
                    "master: no leader reachable through %s within %u ms (last tried %s:%d: %s)",
                    cli__leader_desc(st), window_ms, host, port, why);
}

#define CLI_RP_MAX (256u << 10) /* an arena reply still incomplete past this goes to hiredis */

/* Whether hiredis's reader of c holds no partly read reply (idle, or waiting for a new one). */
static bool cli_reader_idle(const redisReader *rd) {
    return rd->reply == NULL && (rd->ridx == -1 || (rd->ridx == 0 && rd->rstack[0].type == -1));
}

/* Writes the pending request of c. Returns false with c->err set on an I/O error. */
static bool cli_flush(redisContext *c) {
    int done = 0;
    do {
        if (redisBufferWrite(c, &done) != REDIS_OK) {
            return false;
        }
    } while (!done);
    return true;
}

/* A gap this long between two polls means the thread was descheduled: another task wants
 * this CPU, and a poll that went on would take turns with it instead of sleeping. */
#define CLI_POLL_GAP_NS 50000

/*
 * Waits up to poll_ns for c's socket to become readable without sleeping: poll(2) with a zero
 * timeout, over and over. A master answers most requests within tens of microseconds, while a
 * thread that blocks and is woken again pays the scheduler's wake-up (on a virtual machine,
 * hundreds of microseconds when the vCPU has halted); past poll_ns the caller's blocking read
 * takes over. The CPU is not yielded between polls: sched_yield() hands it to any other
 * runnable task for that task's whole time slice, and a thread that is running, not sleeping,
 * gets no wake-up preemption when its reply comes (measured: 4 ms per call beside a busy
 * thread on the same CPU). Instead, a poll that finds the thread was descheduled in between
 * (CLI_POLL_GAP_NS) ends the wait, so the thread blocks and the other task runs.
 * CRESCENT_STORE_POLL_US sets poll_ns (docs/store.md).
 */
static void cli_poll_spin(redisContext *c, uint64_t poll_ns) {
    if (poll_ns == 0) {
        return;
    }
    uint64_t prev = cm_mono_ns(), end = prev + poll_ns;
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    while (poll(&p, 1, 0) == 0) {
        uint64_t now = cm_mono_ns();
        if (now >= end || now - prev > CLI_POLL_GAP_NS) {
            return;
        }
        prev = now;
    }
}

/* Writes the pending request of c and reads one reply with cli__resp_parse straight out of
 * hiredis's input buffer (hiredis's reader, with the arena functions c's reader holds, takes
 * over for a reply that parser leaves alone or that grows past CLI_RP_MAX), polling up to
 * poll_ns before each blocking read. Returns the reply, or NULL with c->err set. */
static void *cli_read_arena(redisContext *c, uint64_t poll_ns) {
    if (!cli_flush(c)) {
        return NULL;
    }
    redisReader *rd = c->reader;
    struct cli_rscan sc;
    cli__resp_scan_init(&sc);
    bool tried = false; /* parsed once: later reads only scan until the reply is complete */
    while (cli_reader_idle(rd)) {
        if (rd->len > rd->pos) {
            redisReply *r;
            ssize_t k;
            if (!tried) {
                k = cli__resp_parse(rd->buf + rd->pos, rd->len - rd->pos, &r);
                tried = true;
            } else {
                int got = cli__resp_scan(&sc, rd->buf + rd->pos, rd->len - rd->pos);
                k = got < 0 ? -1 : got == 0 ? 0 : cli__resp_parse(rd->buf + rd->pos, sc.off, &r);
            }
            if (k > 0) {
                rd->pos += (size_t)k;
                if (rd->pos >= 1024) { /* as hiredis's reader does */
                    sdsrange(rd->buf, (ssize_t)rd->pos, -1);
                    rd->pos = 0;
                    rd->len = sdslen(rd->buf);
                }
                return r;
            }
            if (k < 0 || rd->len - rd->pos > CLI_RP_MAX) {
                break;
            }
        }
        cli_poll_spin(c, poll_ns);
        if (redisBufferRead(c) != REDIS_OK) {
            return NULL;
        }
    }
    void *r = NULL;
    return redisGetReply(c, &r) == REDIS_OK ? r : NULL;
}

/* Sends the formatted request on *slot and reads one reply (built with fns when not NULL),
 * polling up to poll_ns for it before blocking. Returns the reply, or NULL on an I/O error
 * (then *slot is freed and NULL). */
static void *cli_roundtrip(redisContext **slot, const char *req, size_t flen,
                           redisReplyObjectFunctions *fns, uint64_t poll_ns) {
    redisReplyObjectFunctions *saved = (*slot)->reader->fn;
    if (fns != NULL) {
        (*slot)->reader->fn = fns;
    }
    void *r = NULL;
    struct cli_nopipe np;
    cli_nopipe_begin(&np);
    int ok = redisAppendFormattedCommand(*slot, req, flen) == REDIS_OK;
    if (ok && fns == &cli__arena_fns) {
        ok = (r = cli_read_arena(*slot, poll_ns)) != NULL;
    } else if (ok && (ok = cli_flush(*slot))) {
        if ((*slot)->reader->len == (*slot)->reader->pos) { /* nothing buffered to parse first */
            cli_poll_spin(*slot, poll_ns);
        }
        ok = redisGetReply(*slot, &r) == REDIS_OK && r != NULL;
    }
    cli_nopipe_end(&np);
    if (!ok) {
        cli_fail(CRESCENT_STORE_ERPC_FAIL, "%s", (*slot)->errstr);
        redisFree(*slot); /* with fns still set: it frees a partial reply of fns */
        *slot = NULL;
        return NULL;
    }
    (*slot)->reader->fn = saved;
    return r;
}

/* Asks a new main connection for compact replies (MC.REPLYFORMAT COMPACT, docs/store.md)
 * unless CRESCENT_STORE_REPLY_FORMAT=full; st->rc_compact records whether the master agreed (a
 * master without the command, a standby or a loading leader answer an error: full replies).
 * Returns false on an I/O error (then *slot is freed and NULL). Under st->mu (or in create). */
bool cli__negotiate(struct crescent_store *st, redisContext **slot) {
    static const char req[] = "*2\r\n$14\r\nMC.REPLYFORMAT\r\n$7\r\nCOMPACT\r\n";
    st->rc_compact = false;
    if (!st->want_compact) {
        return true;
    }
    redisReply *r = cli_roundtrip(slot, req, sizeof(req) - 1, NULL, st->poll_ns);
    if (r == NULL) {
        return false;
    }
    st->rc_compact = r->type == REDIS_REPLY_STATUS && r->len == 2 && memcmp(r->str, "OK", 2) == 0;
    freeReplyObject(r);
    return true;
}

/*
 * One command with the master side of fail-over: a broken connection is reopened and the
 * command sent again (once with a host:port address; with an HA form, after a look at the
 * election record, until window_ms has passed since the trouble began), -NOTLEADER and
 * -LOADING are followed (cli_redirect). A command whose answer was lost may have run on the
 * old leader; sent again, a non-idempotent one can then fail (a repeated MC.REMOVE gets
 * OBJECT_NOT_FOUND), but no success is ever reported that a master did not answer.
 */
static int cli_command_fns(struct crescent_store *st, redisContext **slot, int argc,
                           const char **argv, const size_t *lens, redisReply **out,
                           redisReplyObjectFunctions *fns, uint32_t window_ms) {
    *out = NULL;
    size_t flen = 0;
    char *req = cli_format(argc, argv, lens, &flen);
    if (req == NULL) {
        return cli_fail(ENOMEM, "master: out of memory for a request");
    }
    int redirects = 0, io_errors = 0;
    uint64_t deadline = 0; /* end of the fail-over window, from the first trouble */
    for (;;) {
        cli_drop_stale(st, slot);
        bool fresh = false;
        if (*slot == NULL) {
            *slot = cli__connect(st);
            if (*slot == NULL) {
                if (cli__failover_wait(st, &deadline, window_ms, true, true)) {
                    continue;
                }
                free(req);
                return cli_no_master(st, "unreachable", window_ms);
            }
            if (io_errors > 0 || redirects > 0 || slot == &st->rc) {
                __atomic_fetch_add(&st->m.master_reconnects, 1, __ATOMIC_RELAXED);
            }
            fresh = slot == &st->rc;
        }
        void *r = fresh && !cli__negotiate(st, slot)
                      ? NULL
                      : cli_roundtrip(slot, req, flen, fns, st->poll_ns);
        if (r == NULL) {
            io_errors++;
            /* Once at once (an idle connection the master closed), then as a fail-over. */
            if ((st->leader == NULL && io_errors < 2) ||
                (st->leader != NULL &&
                 (io_errors == 1 || cli__failover_wait(st, &deadline, window_ms, true, true)))) {
                continue;
            }
            char why[160];
            snprintf(why, sizeof(why), "lost the connection: %s", crescent_store_last_error());
            free(req);
            return cli_no_master(st, why, window_ms);
        }
        bool unknown;
        int wait_ms = cli_redirect(st, r, &unknown);
        if (wait_ms >= 0 && cli_follow(st, wait_ms, unknown, &redirects, &deadline, window_ms)) {
            if (fns != NULL)
                cli__reply_free(r);
            else
                freeReplyObject(r);
            redisFree(*slot); /* an HA standby or a recovering leader: ask again */
            *slot = NULL;
            continue;
        }
        *out = r; /* past the window a -NOTLEADER / -LOADING reply is the answer */
        free(req);
        return 0;
    }
}

/* Runs one command on *slot (connecting first when it is NULL); on a connection error the
 * connection is dropped, reopened and the command sent once more (with an HA address form:
 * until a leader answers or the fail-over window has passed); -NOTLEADER and -LOADING are
 * followed. *out is the reply (any type; the caller frees it with freeReplyObject). Returns 0 or
 * -CRESCENT_STORE_ERPC_FAIL. The caller serialises uses of *slot. */
int cli__command(struct crescent_store *st, redisContext **slot, int argc, const char **argv,
                 const size_t *lens, redisReply **out) {
    return cli_command_fns(st, slot, argc, argv, lens, out, NULL, st->failover_ms);
}

/* cli__command on the main connection under st->mu. Thread-safe. */
int cli__cmd(struct crescent_store *st, int argc, const char **argv, const size_t *lens,
             redisReply **out) {
    pthread_mutex_lock(&st->mu);
    int rc = cli__command(st, &st->rc, argc, argv, lens, out);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* cli__cmd with the reply built in one arena (cli_reply.c): the caller frees it with
 * cli__reply_free(), never freeReplyObject(). For the hot commands. Thread-safe. */
int cli__cmd_fast(struct crescent_store *st, int argc, const char **argv, const size_t *lens,
                  redisReply **out) {
    pthread_mutex_lock(&st->mu);
    int rc = cli_command_fns(st, &st->rc, argc, argv, lens, out, &cli__arena_fns, st->failover_ms);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* cli__cmd_fast for the commands with a compact reply form (MC.(BATCH)GETREPLICAS,
 * MC.(BATCH)PUTSTART, MC.(BATCH)UPSERTSTART): *compact tells whether the connection that
 * answered returns that form (cli_compact.c parses it). Thread-safe. */
int cli__cmd_hot(struct crescent_store *st, int argc, const char **argv, const size_t *lens,
                 redisReply **out, bool *compact) {
    pthread_mutex_lock(&st->mu);
    int rc = cli_command_fns(st, &st->rc, argc, argv, lens, out, &cli__arena_fns, st->failover_ms);
    *compact = rc == 0 && st->rc_compact;
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* Value of field name in a RESP2 flat map (field, value, ...) or RESP3 map; NULL if absent. */
const redisReply *cli__field(const redisReply *map, const char *name) {
    if (map == NULL || map->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }
    size_t nl = strlen(name);
    for (size_t i = 0; i + 1 < map->elements; i += 2) {
        const redisReply *k = map->element[i];
        if ((k->type == REDIS_REPLY_STRING || k->type == REDIS_REPLY_STATUS) && k->len == nl &&
            memcmp(k->str, name, nl) == 0) {
            return map->element[i + 1];
        }
    }
    return NULL;
}

static void cli_copy_str(char *dst, size_t cap, const redisReply *v) {
    dst[0] = '\0';
    if (v != NULL && (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS)) {
        size_t n = v->len < cap - 1 ? v->len : cap - 1;
        memcpy(dst, v->str, n);
        dst[n] = '\0';
    }
}

static bool cli_str_is(const redisReply *v, const char *s) {
    return v != NULL && (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS) &&
           v->len == strlen(s) && memcmp(v->str, s, v->len) == 0;
}

/* Parses one replica descriptor map into *out (desc points into r, valid while r lives): one
 * pass over its fields, each told apart by its length and first letter. Returns 0 or
 * -CRESCENT_STORE_ERPC_FAIL for a malformed descriptor. */
int cli__parse_replica(const redisReply *r, struct cli_replica *out) {
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master: malformed replica descriptor");
    }
    out->segment[0] = out->endpoint[0] = out->protocol[0] = '\0';
    out->desc = NULL;
    out->desc_len = 0;
    out->complete = out->memory = false;
    bool have_addr = false, have_size = false;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        if (k->type != REDIS_REPLY_STRING && k->type != REDIS_REPLY_STATUS) {
            continue;
        }
        const char *n = k->str;
        bool is_int = v->type == REDIS_REPLY_INTEGER;
        if (k->len == 4 && memcmp(n, "addr", 4) == 0 && is_int) {
            out->addr = (uint64_t)v->integer;
            have_addr = true;
        } else if (k->len == 4 && memcmp(n, "size", 4) == 0 && is_int) {
            out->size = (uint64_t)v->integer;
            have_size = true;
        } else if (k->len == 4 && memcmp(n, "type", 4) == 0) {
            out->memory = cli_str_is(v, "MEMORY");
        } else if (k->len == 4 && memcmp(n, "desc", 4) == 0 && v->type == REDIS_REPLY_STRING) {
            out->desc = v->str;
            out->desc_len = v->len;
        } else if (k->len == 6 && memcmp(n, "status", 6) == 0) {
            out->complete = cli_str_is(v, "COMPLETE");
        } else if (k->len == 7 && memcmp(n, "segment", 7) == 0) {
            cli_copy_str(out->segment, sizeof(out->segment), v);
        } else if (k->len == 8 && memcmp(n, "endpoint", 8) == 0) {
            cli_copy_str(out->endpoint, sizeof(out->endpoint), v);
        } else if (k->len == 8 && memcmp(n, "protocol", 8) == 0) {
            cli_copy_str(out->protocol, sizeof(out->protocol), v);
        }
    }
    if (!have_addr || !have_size) {
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master: malformed replica descriptor");
    }
    return 0;
}

/* Parses an array of replica descriptors (at most max). Returns the count or a negative
 * code. */
int cli__parse_replicas(const redisReply *arr, struct cli_replica *out, size_t max) {
    if (arr == NULL || arr->type != REDIS_REPLY_ARRAY) {
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master: expected a replica array");
    }
    size_t n = 0;
    for (size_t i = 0; i < arr->elements && n < max; i++) {
        int rc = cli__parse_replica(arr->element[i], &out[n]);
        if (rc < 0) {
            return rc;
        }
        n++;
    }
    return (int)n;
}

/* Registers the client again and remounts every segment over *slot (MC.REGISTER, then one
 * MC.REMOUNT). Returns 0 or a negative code. Caller serialises *slot. */
int cli__remount(struct crescent_store *st, redisContext **slot) {
    const char *reg[] = {"MC.REGISTER", st->client_id, st->hostname};
    redisReply *r;
    int rc = cli__command(st, slot, 3, reg, NULL, &r);
    if (rc < 0) {
        return rc;
    }
    rc = cli__reply_err(r);
    freeReplyObject(r);
    if (rc < 0) {
        return rc;
    }
    ssize_t dlen = crescent_xfer_export_desc(st->eng, NULL, 0);
    char *desc = dlen > 0 ? malloc((size_t)dlen) : NULL;
    if (desc == NULL || crescent_xfer_export_desc(st->eng, desc, (size_t)dlen) < 0) {
        free(desc);
        return cli_fail(ENOMEM, "remount: cannot export the segment descriptor");
    }
    pthread_mutex_lock(&st->seg_mu);
    size_t n = st->n_segs;
    const char **argv = calloc(2 + 6 * (n ? n : 1), sizeof(*argv));
    size_t *lens = calloc(2 + 6 * (n ? n : 1), sizeof(*lens));
    char(*nums)[2][24] = calloc(n ? n : 1, sizeof(*nums));
    size_t argc = 0;
    if (argv != NULL && lens != NULL && nums != NULL) {
        argv[argc] = "MC.REMOUNT";
        lens[argc++] = 10;
        argv[argc] = st->client_id;
        lens[argc++] = 32;
        for (size_t i = 0; i < n; i++) {
            snprintf(nums[i][0], 24, "%llu", (unsigned long long)(uintptr_t)st->segs[i].base);
            snprintf(nums[i][1], 24, "%llu", (unsigned long long)st->segs[i].size);
            const char *v[6] = {st->segs[i].name, nums[i][0],   nums[i][1],
                                st->endpoint,     st->protocol, desc};
            for (int k = 0; k < 6; k++) {
                argv[argc] = v[k];
                lens[argc++] = k == 5 ? (size_t)dlen : strlen(v[k]);
            }
        }
    }
    pthread_mutex_unlock(&st->seg_mu);
    rc = -ENOMEM;
    if (argv != NULL && lens != NULL && nums != NULL) {
        rc = 0;
        if (n > 0) {
            rc = cli__command(st, slot, (int)argc, argv, lens, &r);
            if (rc == 0) {
                rc = cli__reply_err(r);
                freeReplyObject(r);
            }
        }
    }
    free(argv);
    free(lens);
    free(nums);
    free(desc);
    if (rc == 0) {
        __atomic_fetch_add(&st->m.remounts, 1, __ATOMIC_RELAXED);
        cli_log(st, 2, "store client %s: remounted %zu segment(s)", st->client_id, n);
    }
    return rc;
}

/* One ping: MC.PING, and a remount on NEED_REMOUNT. Updates st->health. */
static void cli_ping_once(struct crescent_store *st) {
    const char *argv[] = {"MC.PING", st->client_id};
    redisReply *r;
    int rc = cli_command_fns(st, &st->ping_rc, 2, argv, NULL, &r, NULL, CLI_PING_WINDOW);
    if (rc < 0) {
        __atomic_store_n(&st->health, 2, __ATOMIC_RELAXED);
        return;
    }
    bool unknown;
    if (cli_redirect(st, r, &unknown) >= 0) { /* no leader serves yet: ask again next time */
        freeReplyObject(r);
        __atomic_store_n(&st->health, 2, __ATOMIC_RELAXED);
        return;
    }
    bool remount = false;
    if (r->type == REDIS_REPLY_ARRAY) {
        remount = cli_str_is(cli__field(r, "status"), "NEED_REMOUNT");
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* An unknown client (the master restarted) may also be refused outright. */
        remount = cli__reply_err(r) == -CRESCENT_STORE_ECLIENT_NOT_FOUND;
    }
    freeReplyObject(r);
    if (remount) {
        rc = cli__remount(st, &st->ping_rc);
        if (rc < 0) {
            cli_log(st, 3, "store client %s: remount failed: %s", st->client_id,
                    crescent_store_last_error());
        }
    }
    __atomic_store_n(&st->health, 0, __ATOMIC_RELAXED);
}

static void *cli_ping_main(void *arg) {
    struct crescent_store *st = arg;
    pthread_mutex_lock(&st->ping_mu);
    while (!st->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += CLI_PING_MS / 1000;
        if (!st->ping_now) { /* a new leader (cli_leader.c) is pinged at once */
            pthread_cond_timedwait(&st->ping_cv, &st->ping_mu, &ts);
        }
        st->ping_now = false;
        if (st->stop) {
            break;
        }
        pthread_mutex_unlock(&st->ping_mu);
        cli_ping_once(st);
        cli__metrics_tick(st);
        pthread_mutex_lock(&st->ping_mu);
    }
    pthread_mutex_unlock(&st->ping_mu);
    return NULL;
}

/* Starts the ping thread. Returns 0 or -errno. Called once from create. */
int cli__ping_start(struct crescent_store *st) {
    int rc = pthread_create(&st->ping_thr, NULL, cli_ping_main, st);
    if (rc != 0) {
        return -rc;
    }
    st->ping_started = true;
    return 0;
}

/* Stops and joins the ping thread and closes its connection. Called from destroy. */
void cli__ping_stop(struct crescent_store *st) {
    if (st->ping_started) {
        pthread_mutex_lock(&st->ping_mu);
        __atomic_store_n(&st->stop, true, __ATOMIC_RELAXED); /* read by cli__failover_wait */
        pthread_cond_broadcast(&st->ping_cv);
        pthread_mutex_unlock(&st->ping_mu);
        pthread_join(st->ping_thr, NULL);
        st->ping_started = false;
    }
    redisFree(st->ping_rc);
    st->ping_rc = NULL;
}
