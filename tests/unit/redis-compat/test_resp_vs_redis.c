/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Differential test of the request parser against a real redis-server: random request
 * streams (multibulk and inline ECHO/PING, quoting, binary payloads, empty requests, and
 * corruptions that trigger protocol errors) are sent to redis-server, and its replies must
 * equal the replies predicted from our parser's view of the same bytes. Skipped when
 * redis-server is not installed.
 */
#include "common/fmacros.h"

#include "common/cm_buf.h"
#include "redis-compat/resp.h"
#include "redis-compat/resp_write.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t redis_pid;
static int redis_port;

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &l) < 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static int connect_redis(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)redis_port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void start_redis(void) {
    if (system("command -v redis-server >/dev/null 2>&1") != 0)
        cr_skip_test("redis-server not installed");
    redis_port = free_port();
    cr_assert_gt(redis_port, 0);
    char port[16];
    snprintf(port, sizeof(port), "%d", redis_port);
    redis_pid = fork();
    cr_assert_geq(redis_pid, 0);
    if (redis_pid == 0) {
        /* Dies with the test process, even if a failed assertion skips .fini. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--loglevel", "warning", "--logfile", "/dev/null",
               (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) {
        int fd = connect_redis();
        if (fd >= 0) {
            close(fd);
            return;
        }
        usleep(10000);
    }
    cr_assert_fail("redis-server did not start on port %d", redis_port);
}

static void stop_redis(void) {
    if (redis_pid > 0) {
        kill(redis_pid, SIGTERM);
        waitpid(redis_pid, NULL, 0);
        redis_pid = 0;
    }
}

/* Sends the stream, half-closes, and reads every reply byte until redis closes. */
static void redis_roundtrip(const struct cm_buf *in, struct cm_buf *out) {
    int fd = connect_redis();
    cr_assert_geq(fd, 0);
    size_t off = 0;
    while (off < in->len) {
        ssize_t n = send(fd, in->data + off, in->len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break; /* redis closed after a protocol error */
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    char tmp[65536];
    ssize_t n;
    while ((n = recv(fd, tmp, sizeof(tmp), 0)) > 0)
        cm_buf_append(out, tmp, (size_t)n);
    close(fd);
}

static int arg_is(const struct resp_parser *p, const char *buf, int i, const char *s) {
    return p->argv[i].len == strlen(s) && strncasecmp(resp_arg_ptr(p, buf, i), s, strlen(s)) == 0;
}

/* Replies redis must give, predicted from our parser (ECHO and PING only). */
static void predict(const struct cm_buf *in, struct cm_buf *out) {
    struct resp_parser p;
    resp_parser_init(&p, NULL);
    size_t pos = 0;
    for (;;) {
        const char *buf = in->data + pos;
        enum resp_result rc = resp_parse_request(&p, buf, in->len - pos);
        if (rc == RESP_INCOMPLETE)
            break;
        if (rc == RESP_ERROR) {
            resp_add_error(out, p.errstr, strlen(p.errstr));
            break;
        }
        pos += p.consumed;
        if (p.argc == 0)
            continue;
        if (arg_is(&p, buf, 0, "echo")) {
            if (p.argc == 2)
                resp_add_bulk(out, resp_arg_ptr(&p, buf, 1), p.argv[1].len);
            else
                resp_add_error(out, "wrong number of arguments for 'echo' command", 44);
        } else if (arg_is(&p, buf, 0, "ping")) {
            if (p.argc == 1)
                resp_add_simple(out, "PONG");
            else if (p.argc == 2)
                resp_add_bulk(out, resp_arg_ptr(&p, buf, 1), p.argv[1].len);
            else
                resp_add_error(out, "wrong number of arguments for 'ping' command", 44);
        } else {
            resp_add_error(out, "unknown command", 15);
        }
    }
    resp_parser_fini(&p);
}

/* Redis's "unknown command '...', with args ..." texts are reduced to "ERR unknown command". */
static void normalise(const struct cm_buf *in, struct cm_buf *out) {
    struct resp_reader r;
    resp_reader_init(&r);
    resp_reader_feed(&r, in->data, in->len);
    struct resp_reply *rep;
    while (resp_reader_get(&r, &rep) == 1) {
        if (rep->type == RESP_REPLY_ERROR && strncmp(rep->str, "ERR unknown command", 19) == 0)
            resp_add_error(out, "unknown command", 15);
        else if (rep->type == RESP_REPLY_ERROR)
            resp_add_error(out, rep->str, rep->len);
        else if (rep->type == RESP_REPLY_BULK)
            resp_add_bulk(out, rep->str, rep->len);
        else if (rep->type == RESP_REPLY_STRING)
            resp_add_simple(out, rep->str);
        else
            cm_buf_append(out, "?", 1);
        resp_reply_free(rep);
    }
    cr_assert_eq(r.err, 0, "redis reply unreadable: %s", r.errstr);
    resp_reader_fini(&r);
}

static unsigned rnd(unsigned n) {
    return (unsigned)(random() % n);
}

static void gen_inline_token(struct cm_buf *s) {
    static const char *const pieces[] = {"a",   "Z9",   " ",  "\\x41", "\\x4",  "\\n", "\\\"",
                                         "\\'", "\\\\", "\t", "'",     "\"",    "x\r", "\\z",
                                         "-",   "*",    "$3", "\\xZZ", "\\x0a", "é"};
    int q = rnd(3); /* 0 bare, 1 double, 2 single quotes */
    if (q == 1)
        cm_buf_append(s, "\"", 1);
    else if (q == 2)
        cm_buf_append(s, "'", 1);
    int n = rnd(5);
    for (int i = 0; i < n; i++) {
        const char *pc = pieces[rnd(sizeof(pieces) / sizeof(pieces[0]))];
        if (q == 0 && rnd(4))
            pc = "ab";
        cm_buf_append(s, pc, strlen(pc));
    }
    if (q == 1 && rnd(8))
        cm_buf_append(s, "\"", 1);
    else if (q == 2 && rnd(8))
        cm_buf_append(s, "'", 1);
}

static void gen_request(struct cm_buf *s) {
    static const char *const verbs[] = {"ECHO", "echo", "Echo", "PING", "ping"};
    const char *verb = verbs[rnd(5)];
    int nargs = rnd(10) < 8 ? 1 : (int)rnd(3);
    switch (rnd(6)) {
    case 0:
    case 1: { /* multibulk with a binary payload */
        cm_buf_appendf(s, "*%d\r\n$%zu\r\n%s\r\n", nargs + 1, strlen(verb), verb);
        for (int i = 0; i < nargs; i++) {
            char val[40];
            size_t n = rnd(sizeof(val));
            for (size_t j = 0; j < n; j++)
                val[j] = (char)(rnd(4) ? 'a' + rnd(26) : rnd(256));
            cm_buf_appendf(s, "$%zu\r\n", n);
            cm_buf_append(s, val, n);
            cm_buf_append(s, "\r\n", 2);
        }
        break;
    }
    case 2: /* inline with quoting */
        cm_buf_appendf(s, "%s%s", rnd(4) ? "" : "  ", verb);
        for (int i = 0; i < nargs; i++) {
            cm_buf_append(s, rnd(3) ? " " : "\t ", rnd(3) ? 1 : 2);
            gen_inline_token(s);
        }
        cm_buf_append(s, rnd(4) ? "\r\n" : "\n", rnd(4) ? 2 : 1);
        break;
    case 3: { /* empty requests */
        static const char *const e[] = {"\r\n", "\n", "*0\r\n", "*-1\r\n", "   \r\n"};
        const char *x = e[rnd(5)];
        cm_buf_append(s, x, strlen(x));
        break;
    }
    case 4: { /* broken headers */
        static const char *const b[] = {
            "*1\r\n$-1\r\n",
            "*x\r\n",
            "*1\r\n:4\r\nPING\r\n",
            "*1\r\n$4x\r\nPING\r\n",
            "*1\r\n$+4\r\n",
            "*01\r\n",
            "*1\r\n$04\r\nPING\r\n",
            "*1\r\n\r\n",
            "*3000000000\r\n",
            "*1\r\n$536870913\r\n",
            "*2\r\n$4\r\nECHO\r\n$-5\r\n",
        };
        const char *x = b[rnd(sizeof(b) / sizeof(b[0]))];
        cm_buf_append(s, x, strlen(x));
        break;
    }
    default: /* Redis quirks: unchecked bytes after CR and after payloads */
        cm_buf_appendf(s, "*2\r%c$4\r%cECHO%c%c$1\r\nq\r\n", 'a' + rnd(26), 'a' + rnd(26),
                       'A' + rnd(26), 'A' + rnd(26));
        break;
    }
}

Test(resp_vs_redis, random_streams_match_redis_7, .init = start_redis, .fini = stop_redis,
     .timeout = 60) {
    srandom((unsigned)time(NULL));
    unsigned seed = (unsigned)random();
    srandom(seed);
    int cases = 400;
    size_t total = 0, errors = 0;
    for (int c = 0; c < cases; c++) {
        struct cm_buf in, got, want, norm;
        cm_buf_init(&in);
        cm_buf_init(&got);
        cm_buf_init(&want);
        cm_buf_init(&norm);
        int nreq = 1 + (int)rnd(5);
        for (int i = 0; i < nreq; i++)
            gen_request(&in);
        /* always end with a PING so that a stream that stays incomplete is visible */
        cm_buf_append(&in, "*1\r\n$4\r\nPING\r\n", 14);
        redis_roundtrip(&in, &got);
        predict(&in, &want);
        normalise(&got, &norm);
        cr_assert(norm.len == want.len &&
                      (want.len == 0 || memcmp(norm.data, want.data, want.len) == 0),
                  "seed %u case %d: input %zu bytes\n%.*s\nredis: %.*s\nours:  %.*s", seed, c,
                  in.len, (int)in.len, in.data, (int)norm.len, norm.data, (int)want.len, want.data);
        total += norm.len;
        errors += norm.len && memmem(norm.data, norm.len, "-ERR Protocol error", 19) != NULL;
        cm_buf_fini(&in);
        cm_buf_fini(&got);
        cm_buf_fini(&want);
        cm_buf_fini(&norm);
    }
    cr_log_info("%d streams, %zu reply bytes compared, %zu ended in a protocol error", cases, total,
                errors);
    cr_assert_gt(total, (size_t)cases * 7, "too few replies compared");
    cr_assert_gt(errors, 0);
}
