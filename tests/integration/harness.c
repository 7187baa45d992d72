/* SPDX-License-Identifier: Apache-2.0 */
/* Integration-test harness: server process management (free loopback port, fork/exec, readiness
 * by PING, log capture, sanitizer scan, kill), hiredis helpers with descriptive failure
 * messages, a raw RESP reader, and the Criterion main() and report hooks shared by every
 * tests/integration/test_cmd_*.c binary. See harness.h. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct it_server it_srv;
redisContext *it_c;

static redisReply **kept;
static size_t kept_n, kept_cap;
static redisContext *conns[64]; /* extra connections, closed by it_teardown() if still open */
static int servers_started;

/* ---------------------------------------------------------------- target selection */

/* Returns true when CRESCENT_TEST_SERVER=redis selects the stock redis-server as target.
 * Thread-safe (reads the environment only). */
bool it_target_is_redis(void) {
    const char *t = getenv("CRESCENT_TEST_SERVER");
    return t != NULL && strcmp(t, "redis") == 0;
}

/* Returns true when the target is crescent-master (the default). Thread-safe. */
bool it_target_is_crescent(void) {
    return !it_target_is_redis();
}

static void master_path(char *buf, size_t cap) {
    const char *b = getenv("CRESCENT_BUILD");
    snprintf(buf, cap, "%s/bin/crescent-master", b != NULL && *b ? b : "build");
}

/* ---------------------------------------------------------------- time */

/* Returns a monotonic clock reading in milliseconds. Thread-safe. */
long long it_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps for ms milliseconds, resuming after signals. Thread-safe. */
void it_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------- server process */

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof(a);
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind: %s", strerror(errno));
    cr_assert(getsockname(fd, (struct sockaddr *)&a, &l) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void log_path(struct it_server *s) {
    const char *d = getenv("CRESCENT_IT_LOGDIR");
    servers_started++;
    if (d != NULL && criterion_current_test != NULL) {
        snprintf(s->log, sizeof(s->log), "%s/%s.%s.%d.log", d, criterion_current_test->category,
                 criterion_current_test->name, servers_started);
    } else {
        snprintf(s->log, sizeof(s->log), "%s/server.log", s->dir);
    }
    s->log_owned = true;
}

#define ARGV_MAX 40

static int build_argv(const char **argv, char bufs[][32], const struct it_server *s,
                      const struct it_opts *o, const char *master, const char *conf) {
    int n = 0;
    snprintf(bufs[0], 32, "%d", s->port);
    if (it_target_is_redis()) {
        argv[n++] = "redis-server";
        if (o != NULL && o->conf != NULL) {
            argv[n++] = conf;
        }
        argv[n++] = "--port";
        argv[n++] = bufs[0];
        argv[n++] = "--bind";
        argv[n++] = o != NULL && o->bind != NULL ? o->bind : "127.0.0.1";
        argv[n++] = "--save";
        argv[n++] = "";
        argv[n++] = "--appendonly";
        argv[n++] = "no";
        argv[n++] = "--dir";
        argv[n++] = s->dir;
        argv[n++] = "--daemonize";
        argv[n++] = "no";
        if (o != NULL && o->memory != NULL) {
            argv[n++] = "--maxmemory";
            argv[n++] = o->memory;
        }
    } else {
        argv[n++] = master;
        if (o != NULL && o->conf != NULL) {
            argv[n++] = conf;
        }
        argv[n++] = "--port";
        argv[n++] = bufs[0];
        argv[n++] = "--bind";
        argv[n++] = o != NULL && o->bind != NULL ? o->bind : "127.0.0.1";
        argv[n++] = "--metrics_port"; /* no admin HTTP: many servers run at once */
        argv[n++] = "0";
        argv[n++] = "--memory";
        argv[n++] = o != NULL && o->memory != NULL ? o->memory : "64mb";
        /* The network backend under test (make test runs the suites on both). */
        const char *be = getenv("CRESCENT_IO_BACKEND");
        if (be != NULL && *be != '\0') {
            argv[n++] = "--io-backend";
            argv[n++] = be;
        }
    }
    if (o != NULL && o->requirepass != NULL) {
        argv[n++] = "--requirepass";
        argv[n++] = o->requirepass;
    }
    if (o != NULL && o->maxclients > 0) {
        snprintf(bufs[1], 32, "%d", o->maxclients);
        argv[n++] = "--maxclients";
        argv[n++] = bufs[1];
    }
    if (o != NULL && o->unixsocket != NULL) {
        argv[n++] = "--unixsocket";
        argv[n++] = o->unixsocket;
    }
    if (o != NULL && o->timeout > 0) {
        snprintf(bufs[2], 32, "%d", o->timeout);
        argv[n++] = "--timeout";
        argv[n++] = bufs[2];
    }
    /* Extra flags for every server, e.g. CRESCENT_TEST_ARGS="--threads 4" (space-separated). */
    static char extra[512];
    const char *e = getenv("CRESCENT_TEST_ARGS");
    if (e != NULL) {
        snprintf(extra, sizeof(extra), "%s", e);
        for (char *save = NULL, *t = strtok_r(extra, " ", &save); t != NULL && n < ARGV_MAX - 1;
             t = strtok_r(NULL, " ", &save)) {
            argv[n++] = t;
        }
    }
    argv[n] = NULL;
    return n;
}

static pid_t spawn(const struct it_server *s, const char **argv) {
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) {
            dup2(nul, 0);
            close(nul);
        }
        if (chdir(s->dir) != 0) {
            _exit(126);
        }
        execvp(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

/* Whether INFO's process_id on c is pid. A server that refuses INFO (NOAUTH before AUTH) cannot
 * say and counts as ours. */
static bool answered_by(redisContext *c, pid_t pid) {
    redisReply *r = redisCommand(c, "INFO server");
    bool ours = true;
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "process_id:");
        ours = p == NULL || atol(p + strlen("process_id:")) == (long)pid;
    }
    freeReplyObject(r);
    return ours;
}

/* Polls until the server answers PING with any reply (PONG or NOAUTH) and INFO's process_id is
 * its own (when INFO answers), it exits, or 30 s pass.
 * The probe connection then QUITs and waits for the server to close it.
 * Returns 1 when ready, 0 when the process exited (e.g. port taken), -1 on timeout. */
static int wait_ready(struct it_server *s) {
    /* A readiness wait, not a timing check: a restart that scans an offload directory on a
     * saturated 2-core machine (or under ASan) may need more than 10 s. */
    long long deadline = it_now_ms() + 30000;
    while (it_now_ms() < deadline) {
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->pid = 0;
            return 0;
        }
        struct timeval tv = {0, 200000}, reply_tv = {2, 0};
        redisContext *c = redisConnectWithTimeout(s->host, s->port, tv);
        if (c != NULL && !c->err) {
            redisSetTimeout(c, reply_tv);
            redisReply *r = redisCommand(c, "PING");
            if (r != NULL && !answered_by(c, s->pid)) {
                /* Another process holds the port (picked free, taken before our server bound
                 * it): keep waiting; our server fails to bind and exits, then a new port. */
                freeReplyObject(r);
                r = NULL;
            } else if (r != NULL) {
                /* Leave with QUIT and wait for the server's close, so that this probe is no
                 * longer counted as a client when the test starts (maxclients, CLIENT LIST). */
                freeReplyObject(r);
                freeReplyObject(redisCommand(c, "QUIT"));
                void *eof = NULL;
                if (redisGetReply(c, &eof) == REDIS_OK) {
                    freeReplyObject(eof);
                }
                redisFree(c);
                return 1;
            }
        }
        redisFree(c);
        it_sleep_ms(10);
    }
    return -1;
}

static void dump_file(const char *path, const char *title) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    fprintf(stderr, "----- %s (%s) -----\n", title, path);
    char line[1024];
    while (fgets(line, sizeof(line), f) != NULL) {
        fputs(line, stderr);
    }
    fprintf(stderr, "----- end of %s -----\n", title);
    fclose(f);
}

/* The address to reach a server bound to the list bind (first entry; wildcards -> loopback). */
static void set_host(struct it_server *s, const char *bind) {
    char first[64] = "127.0.0.1";
    if (bind != NULL) {
        sscanf(bind, "%63s", first);
    }
    const char *h = first[0] == '-' ? first + 1 : first;
    if (strcmp(h, "*") == 0 || strcmp(h, "0.0.0.0") == 0) {
        h = "127.0.0.1";
    } else if (strcmp(h, "::") == 0 || strcmp(h, "::*") == 0) {
        h = "::1";
    }
    snprintf(s->host, sizeof(s->host), "%s", h);
}

/* Starts the server under test with the given options on a free loopback port, retrying with
 * another port if the process exits early, and waits until it answers PING. Fails the current
 * test (Criterion assertion) when it cannot start; s must be stopped with it_server_stop(). The
 * child gets SIGKILL if the test process dies. Not thread-safe. */
void it_server_start(struct it_server *s, const struct it_opts *opts) {
    char master[512];
    memset(s, 0, sizeof(*s));
    master_path(master, sizeof(master));
    snprintf(s->dir, sizeof(s->dir), "/tmp/crescent-it.XXXXXX");
    cr_assert(mkdtemp(s->dir) != NULL, "mkdtemp: %s", strerror(errno));
    log_path(s);
    set_host(s, opts != NULL ? opts->bind : NULL);
    char conf[300];
    snprintf(conf, sizeof(conf), "%s/server.conf", s->dir);
    if (opts != NULL && opts->conf != NULL) {
        FILE *f = fopen(conf, "w");
        cr_assert_not_null(f, "%s: %s", conf, strerror(errno));
        fputs(opts->conf, f);
        fclose(f);
    }
    for (int attempt = 0; attempt < 5; attempt++) {
        const char *argv[ARGV_MAX];
        char bufs[3][32];
        s->port = free_port();
        build_argv(argv, bufs, s, opts, master, conf);
        s->pid = spawn(s, argv);
        int rc = wait_ready(s);
        if (rc == 1) {
            return;
        }
        if (rc < 0) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
            s->pid = 0;
            dump_file(s->log, "server log");
            cr_assert_fail("server %s on port %d did not answer PING within 30 s", argv[0],
                           s->port);
        }
    }
    dump_file(s->log, "server log");
    cr_assert_fail("server failed to start 5 times (see log above)");
}

static bool log_has_sanitizer_report(const char *path) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return false;
    }
    char line[1024];
    bool bad = false;
    while (!bad && fgets(line, sizeof(line), f) != NULL) {
        bad = strstr(line, "ERROR: AddressSanitizer") != NULL ||
              strstr(line, "ERROR: LeakSanitizer") != NULL ||
              strstr(line, "WARNING: ThreadSanitizer") != NULL ||
              strstr(line, "runtime error:") != NULL;
    }
    fclose(f);
    return bad;
}

/* Stops the server (SIGTERM, then SIGKILL after 5 s), removes its working directory and fails
 * the current test if the server's log holds a sanitizer report. Safe on a stopped server.
 * Not thread-safe. */
void it_server_stop(struct it_server *s) {
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        long long deadline = it_now_ms() + 5000;
        int st;
        while (waitpid(s->pid, &st, WNOHANG) == 0) {
            if (it_now_ms() > deadline) {
                kill(s->pid, SIGKILL);
                waitpid(s->pid, &st, 0);
                break;
            }
            it_sleep_ms(5);
        }
        s->pid = 0;
    }
    if (s->dir[0] != '\0') {
        char cmd[512];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
        if (system(cmd) != 0) {
            fprintf(stderr, "harness: could not remove %s\n", s->dir);
        }
        s->dir[0] = '\0';
    }
    if (s->log[0] != '\0' && log_has_sanitizer_report(s->log)) {
        dump_file(s->log, "server log");
        cr_assert_fail("sanitizer report in the server log");
    }
}

/* Opens a hiredis connection to s with 10 s connect and I/O timeouts. Fails the current test on
 * error. The caller closes it with it_close(); it_teardown() closes any left open (e.g. after a
 * failed assertion). */
redisContext *it_connect(const struct it_server *s) {
    struct timeval tv = {10, 0};
    redisContext *c = redisConnectWithTimeout(s->host, s->port, tv);
    cr_assert(c != NULL && !c->err, "connect to %s port %d: %s", s->host, s->port,
              c != NULL ? c->errstr : "NULL");
    redisSetTimeout(c, tv);
    for (size_t i = 0; i < sizeof(conns) / sizeof(conns[0]); i++) {
        if (conns[i] == NULL) {
            conns[i] = c;
            break;
        }
    }
    return c;
}

/* Closes a connection opened with it_connect() (redisFree) and forgets it. NULL is ignored. */
void it_close(redisContext *c) {
    for (size_t i = 0; c != NULL && i < sizeof(conns) / sizeof(conns[0]); i++) {
        if (conns[i] == c) {
            conns[i] = NULL;
        }
    }
    redisFree(c);
}

/* Criterion .init: starts it_srv with default options and connects it_c. Not thread-safe. */
void it_setup(void) {
    it_server_start(&it_srv, NULL);
    it_c = it_connect(&it_srv);
}

/* Criterion .fini: frees kept replies, closes it_c and stops it_srv. Not thread-safe. */
void it_teardown(void) {
    for (size_t i = 0; i < kept_n; i++) {
        freeReplyObject(kept[i]);
    }
    free(kept);
    kept = NULL;
    kept_n = kept_cap = 0;
    if (it_c != NULL) {
        it_close(it_c);
        it_c = NULL;
    }
    for (size_t i = 0; i < sizeof(conns) / sizeof(conns[0]); i++) {
        if (conns[i] != NULL) {
            redisFree(conns[i]);
            conns[i] = NULL;
        }
    }
    it_server_stop(&it_srv);
}

/* ---------------------------------------------------------------- commands and replies */

/* Registers r to be freed by it_teardown(); takes ownership. NULL is ignored. */
void it_keep(redisReply *r) {
    if (r == NULL) {
        return;
    }
    if (kept_n == kept_cap) {
        kept_cap = kept_cap ? kept_cap * 2 : 64;
        kept = realloc(kept, kept_cap * sizeof(*kept));
        cr_assert(kept != NULL);
    }
    kept[kept_n++] = r;
}

/* Runs one command (hiredis format string) and returns its reply, which it_teardown() frees.
 * Fails the test on a connection error. */
redisReply *it_cmd(redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    cr_assert(r != NULL, "command '%s': connection error %s", fmt, c->errstr);
    it_keep(r);
    return r;
}

/* Runs one command given as an argument vector; the reply is freed by it_teardown(). */
redisReply *it_cmdargv(redisContext *c, int argc, const char **argv, const size_t *lens) {
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    cr_assert(r != NULL, "command %s: connection error %s", argv[0], c->errstr);
    it_keep(r);
    return r;
}

static size_t put_escaped(char *buf, size_t cap, size_t pos, const char *s, size_t len) {
    for (size_t i = 0; i < len && pos + 5 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (isprint(ch) && ch != '"' && ch != '\\') {
            buf[pos++] = (char)ch;
        } else {
            pos += (size_t)snprintf(buf + pos, cap - pos, "\\x%02x", ch);
        }
    }
    if (len > 0 && pos + 5 >= cap) {
        pos = cap - 5;
        memcpy(buf + pos, "...", 4);
        pos += 3;
    }
    buf[pos] = '\0';
    return pos;
}

static size_t fmt_reply(const redisReply *r, char *buf, size_t cap, size_t pos) {
    if (pos + 8 >= cap) {
        return pos;
    }
    if (r == NULL) {
        return pos + (size_t)snprintf(buf + pos, cap - pos, "(no reply)");
    }
    switch (r->type) {
    case REDIS_REPLY_STATUS:
        pos += (size_t)snprintf(buf + pos, cap - pos, "+");
        return put_escaped(buf, cap, pos, r->str, r->len);
    case REDIS_REPLY_ERROR:
        pos += (size_t)snprintf(buf + pos, cap - pos, "-");
        return put_escaped(buf, cap, pos, r->str, r->len);
    case REDIS_REPLY_INTEGER:
        return pos + (size_t)snprintf(buf + pos, cap - pos, "(integer) %lld", r->integer);
    case REDIS_REPLY_NIL:
        return pos + (size_t)snprintf(buf + pos, cap - pos, "(nil)");
    case REDIS_REPLY_STRING:
        pos += (size_t)snprintf(buf + pos, cap - pos, "\"");
        pos = put_escaped(buf, cap, pos, r->str, r->len);
        return pos + (size_t)snprintf(buf + pos, cap > pos ? cap - pos : 0, "\"");
    case REDIS_REPLY_ARRAY:
        pos += (size_t)snprintf(buf + pos, cap - pos, "[");
        for (size_t i = 0; i < r->elements && pos + 8 < cap; i++) {
            if (i > 0) {
                pos += (size_t)snprintf(buf + pos, cap - pos, ", ");
            }
            pos = fmt_reply(r->element[i], buf, cap, pos);
        }
        return pos + (size_t)snprintf(buf + pos, cap > pos ? cap - pos : 0, "]");
    default:
        return pos + (size_t)snprintf(buf + pos, cap - pos, "(type %d)", r->type);
    }
}

/* Formats r for a failure message into buf (cap bytes, truncated with "..."); returns buf. */
const char *it_reply_str(const redisReply *r, char *buf, size_t cap) {
    buf[0] = '\0';
    fmt_reply(r, buf, cap, 0);
    buf[cap - 1] = '\0';
    return buf;
}

/* Writes "command [arg arg ...]" into msg, rendering the RESP request hiredis built from fmt
 * (so %b and every other hiredis conversion are described exactly, non-printables escaped). */
static void describe(char *msg, const char *fmt, va_list ap) {
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    size_t pos = (size_t)snprintf(msg, IT_MSG_MAX, "command [");
    const size_t lim = IT_MSG_MAX / 2;
    if (len < 0) {
        snprintf(msg + pos, IT_MSG_MAX - pos, "(bad format %s)]", fmt);
        return;
    }
    const char *p = cmd, *end = cmd + len;
    long argc = strtol(p + 1, NULL, 10);
    p = strchr(p, '\n') + 1;
    for (long i = 0; i < argc && p < end && pos + 8 < lim; i++) {
        size_t alen = (size_t)strtoul(p + 1, NULL, 10);
        p = strchr(p, '\n') + 1;
        if (i > 0) {
            msg[pos++] = ' ';
        }
        size_t show = alen > 100 ? 100 : alen;
        pos = put_escaped(msg, lim, pos, p, show);
        if (show < alen && pos + 24 < lim) {
            pos += (size_t)snprintf(msg + pos, lim - pos, "...(%zu bytes)", alen);
        }
        p += alen + 2;
    }
    snprintf(msg + pos, IT_MSG_MAX - pos, "]");
    redisFreeCommand(cmd);
}

/* Runs the command; returns the reply (caller frees) and writes its description into msg. */
static redisReply *run_v(char *msg, redisContext *c, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    describe(msg, fmt, ap2);
    va_end(ap2);
    redisReply *r = redisvCommand(c, fmt, ap);
    if (r == NULL) {
        size_t n = strlen(msg);
        snprintf(msg + n, IT_MSG_MAX - n, " connection error: %s", c->errstr);
    }
    return r;
}

static bool finish(char *msg, bool ok, const char *want, redisReply *r) {
    if (!ok) {
        size_t n = strlen(msg);
        char got[IT_MSG_MAX / 2];
        snprintf(msg + n, IT_MSG_MAX - n, ": expected %s, got %s", want,
                 it_reply_str(r, got, sizeof(got)));
    }
    freeReplyObject(r);
    return ok;
}

/* The it_check_* functions run one command (hiredis format plus arguments), compare the reply
 * with the expectation, free the reply and return true on a match; otherwise they write a
 * description (command, expected, got) into msg (IT_MSG_MAX bytes) and return false. */
bool it_check_status(char *msg, const char *want, redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = run_v(msg, c, fmt, ap);
    va_end(ap);
    char w[256];
    snprintf(w, sizeof(w), "+%s", want);
    return finish(msg, r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, want) == 0, w, r);
}

/* See it_check_status(): expects an integer reply equal to want. */
bool it_check_int(char *msg, long long want, redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = run_v(msg, c, fmt, ap);
    va_end(ap);
    char w[64];
    snprintf(w, sizeof(w), "(integer) %lld", want);
    return finish(msg, r && r->type == REDIS_REPLY_INTEGER && r->integer == want, w, r);
}

/* See it_check_status(): expects a bulk string equal to the C string want. */
bool it_check_str(char *msg, const char *want, redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = run_v(msg, c, fmt, ap);
    va_end(ap);
    char w[256];
    snprintf(w, sizeof(w), "\"%s\"", want);
    bool ok = r && r->type == REDIS_REPLY_STRING && r->len == strlen(want) &&
              memcmp(r->str, want, r->len) == 0;
    return finish(msg, ok, w, r);
}

/* See it_check_status(): expects a null bulk reply. */
bool it_check_nil(char *msg, redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = run_v(msg, c, fmt, ap);
    va_end(ap);
    return finish(msg, r && r->type == REDIS_REPLY_NIL, "(nil)", r);
}

/* See it_check_status(): expects an error reply whose text (without '-') equals want. */
bool it_check_err(char *msg, const char *want, redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = run_v(msg, c, fmt, ap);
    va_end(ap);
    char w[512];
    snprintf(w, sizeof(w), "-%s", want);
    return finish(msg, r && r->type == REDIS_REPLY_ERROR && strcmp(r->str, want) == 0, w, r);
}

/* See it_check_status(): expects an error reply whose text starts with want. */
bool it_check_err_prefix(char *msg, const char *want, redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = run_v(msg, c, fmt, ap);
    va_end(ap);
    char w[512];
    snprintf(w, sizeof(w), "-%s...", want);
    bool ok = r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, want, strlen(want)) == 0;
    return finish(msg, ok, w, r);
}

/* ---------------------------------------------------------------- raw RESP */

/* Opens a plain blocking TCP connection to 127.0.0.1:port for raw RESP exchanges. Fails the
 * test on error; the caller closes the fd. */
int it_raw_open(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect: %s", strerror(errno));
    return fd;
}

/* Writes all len bytes to fd; fails the test on error. */
void it_raw_send(int fd, const char *bytes, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, bytes, len);
        cr_assert(n > 0, "write: %s", strerror(errno));
        bytes += n;
        len -= (size_t)n;
    }
}

/* Length of the complete RESP2/RESP3 value at buf, 0 if more bytes are needed, -1 if bad. */
static long resp_value_len(const char *buf, size_t len) {
    if (len < 3) {
        return 0;
    }
    const char *nl = memchr(buf, '\n', len);
    if (nl == NULL) {
        return 0;
    }
    long head = nl - buf + 1;
    long long n = strtoll(buf + 1, NULL, 10);
    switch (buf[0]) {
    case '+':
    case '-':
    case ':':
    case '_':
    case '#':
    case ',':
    case '(':
        return head;
    case '$':
    case '!':
    case '=':
        if (n < 0) {
            return head;
        }
        return (size_t)head + (size_t)n + 2 <= len ? head + (long)n + 2 : 0;
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
        long pos = head;
        long long items = buf[0] == '%' || buf[0] == '|' ? n * 2 : n;
        for (long long i = 0; i < items; i++) {
            long l = resp_value_len(buf + pos, len - (size_t)pos);
            if (l <= 0) {
                return l;
            }
            pos += l;
        }
        if (buf[0] == '|') { /* an attribute precedes the actual value */
            long l = resp_value_len(buf + pos, len - (size_t)pos);
            return l <= 0 ? l : pos + l;
        }
        return pos;
    }
    default:
        return -1;
    }
}

/* Reads exactly one complete RESP value from fd (5 s timeout) and returns its raw bytes,
 * NUL-terminated; *len receives the byte count and the caller frees the buffer with free().
 * Bytes after the value stay in the socket for the next call (it peeks, then consumes exactly
 * the value). Fails the test on timeout, EOF or malformed data. */
char *it_raw_read(int fd, size_t *len) {
    size_t cap = 4096;
    char *buf = malloc(cap);
    cr_assert(buf != NULL);
    long long deadline = it_now_ms() + 5000;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        long long left = deadline - it_now_ms();
        cr_assert(left > 0 && poll(&p, 1, (int)left) == 1, "raw read timed out");
        ssize_t n = recv(fd, buf, cap - 1, MSG_PEEK);
        cr_assert(n > 0, "raw read: EOF or error");
        long l = resp_value_len(buf, (size_t)n);
        cr_assert(l >= 0, "malformed RESP from server: %.*s", (int)n, buf);
        if (l > 0) {
            cr_assert_eq(recv(fd, buf, (size_t)l, MSG_WAITALL), l);
            buf[l] = '\0';
            *len = (size_t)l;
            return buf;
        }
        if ((size_t)n == cap - 1) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert(buf != NULL);
        } else {
            it_sleep_ms(1);
        }
    }
}

/* ---------------------------------------------------------------- runner */

static char logdir[256];

ReportHook(PRE_ALL)(struct criterion_test_set *set) {
    (void)set;
    snprintf(logdir, sizeof(logdir), "/tmp/crescent-itlogs.XXXXXX");
    if (mkdtemp(logdir) != NULL) {
        setenv("CRESCENT_IT_LOGDIR", logdir, 1);
    } else {
        logdir[0] = '\0';
    }
}

ReportHook(POST_TEST)(struct criterion_test_stats *stats) {
    if (logdir[0] == '\0') {
        return;
    }
    char pat[512];
    snprintf(pat, sizeof(pat), "%s/%s.%s.*.log", logdir, stats->test->category, stats->test->name);
    glob_t g;
    if (glob(pat, 0, NULL, &g) != 0) {
        return;
    }
    for (size_t i = 0; i < g.gl_pathc; i++) {
        if (stats->test_status == CR_STATUS_FAILED) {
            dump_file(g.gl_pathv[i], "server log of failed test");
        }
        unlink(g.gl_pathv[i]);
    }
    globfree(&g);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
    (void)stats;
    if (logdir[0] != '\0') {
        rmdir(logdir);
    }
}

/* Test-binary entry point: exits 77 (skip) when the server under test is not available, else
 * runs the Criterion tests. */
int main(int argc, char *argv[]) {
    if (it_target_is_crescent()) {
        char master[512];
        master_path(master, sizeof(master));
        if (access(master, X_OK) != 0) {
            printf("skip: %s not built (set CRESCENT_BUILD or CRESCENT_TEST_SERVER=redis)\n",
                   master);
            return 77;
        }
    }
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true)) {
        result = !criterion_run_all_tests(tests);
    }
    criterion_finalize(tests);
    return result;
}

const redisReply *it_field(const redisReply *m, const char *name) {
    char buf[IT_MSG_MAX];
    cr_assert(m != NULL && m->type == REDIS_REPLY_ARRAY && m->elements % 2 == 0,
              "flat map expected, got %s", it_reply_str(m, buf, sizeof(buf)));
    for (size_t i = 0; i + 1 < m->elements; i += 2)
        if (m->element[i]->type == REDIS_REPLY_STRING && strcmp(m->element[i]->str, name) == 0)
            return m->element[i + 1];
    cr_assert_fail("field %s missing in %s", name, it_reply_str(m, buf, sizeof(buf)));
    return NULL;
}

long long it_field_int(const redisReply *m, const char *name) {
    const redisReply *v = it_field(m, name);
    cr_assert_eq(v->type, REDIS_REPLY_INTEGER, "field %s is not an integer", name);
    return v->integer;
}

const char *it_field_str(const redisReply *m, const char *name) {
    const redisReply *v = it_field(m, name);
    cr_assert(v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS,
              "field %s is not a string", name);
    return v->str;
}
