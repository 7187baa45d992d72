/* SPDX-License-Identifier: Apache-2.0 */
/* Many concurrent connections: N clients (default 1000) connect at once, each answers PING,
 * then all run SET/GET/APPEND/GET/INCR on their own keys concurrently and every reply is
 * compared; INFO clients must count them and drop back when they leave. With -m LIMIT the
 * server was started with --maxclients LIMIT: LIMIT+extra connections, exactly LIMIT served,
 * the rest get Redis's "max number of clients reached" error and are closed.
 * With -c COUNT, COUNT short-lived connections come and go in several ways (clean close,
 * reset mid-request, close before reading the reply, close without a word, abandoned 1 MiB
 * argument); none of the partial requests may run and the client count returns to 1.
 * Usage: clients_1000 HOST PORT [-n N] [-m LIMIT] [-c COUNT] */
#include "common/fmacros.h"

#include "tests/stress/st_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/read.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define STEPS 6 /* PING, SET, GET, APPEND, GET, INCR */

struct conn {
    int fd;
    int idx;
    int step;     /* index of the request in flight; STEPS when done */
    int closed;   /* the server closed the connection */
    int rejected; /* got the max-clients error */
    char out[256];
    size_t out_len;
    size_t out_off;
    redisReader *rd;
};

static const char *host;
static int port;
static int ep;

static void conn_value(const struct conn *c, char *buf, size_t len) {
    snprintf(buf, len, "value-%d-%08x", c->idx, (unsigned)(c->idx * 2654435761u));
}

/* Formats the request for the current step into c->out. */
static void conn_prepare(struct conn *c) {
    char key[64], val[64], *cmd = NULL;
    int n = 0;
    snprintf(key, sizeof(key), "c1k:%d", c->idx);
    conn_value(c, val, sizeof(val));
    switch (c->step) {
    case 0:
        n = redisFormatCommand(&cmd, "PING");
        break;
    case 1:
        n = redisFormatCommand(&cmd, "SET %s %s", key, val);
        break;
    case 2:
    case 4:
        n = redisFormatCommand(&cmd, "GET %s", key);
        break;
    case 3:
        n = redisFormatCommand(&cmd, "APPEND %s -x", key);
        break;
    case 5:
        n = redisFormatCommand(&cmd, "INCR c1n:%d", c->idx);
        break;
    default:
        st_die("bad step %d", c->step);
    }
    if (n <= 0 || (size_t)n > sizeof(c->out)) {
        st_die("formatting step %d failed", c->step);
    }
    memcpy(c->out, cmd, (size_t)n);
    redisFreeCommand(cmd);
    c->out_len = (size_t)n;
    c->out_off = 0;
}

/* Checks the reply to the current step; dies with both values when it is wrong. */
static void conn_check(struct conn *c, redisReply *r) {
    char val[64], want[80];
    conn_value(c, val, sizeof(val));
    switch (c->step) {
    case 0:
        if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0) {
            return;
        }
        break;
    case 1:
        if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) {
            return;
        }
        break;
    case 2:
        if (r->type == REDIS_REPLY_STRING && strcmp(r->str, val) == 0) {
            return;
        }
        break;
    case 3:
        if (r->type == REDIS_REPLY_INTEGER && r->integer == (long long)strlen(val) + 2) {
            return;
        }
        break;
    case 4:
        snprintf(want, sizeof(want), "%s-x", val);
        if (r->type == REDIS_REPLY_STRING && strcmp(r->str, want) == 0) {
            return;
        }
        break;
    case 5:
        if (r->type == REDIS_REPLY_INTEGER && r->integer == 1) {
            return;
        }
        break;
    }
    st_die("client %d step %d: unexpected reply type %d '%s' (integer %lld)", c->idx, c->step,
           r->type, r->str ? r->str : "", r->integer);
}

static void set_events(struct conn *c, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
        st_die("epoll_ctl MOD: %s", strerror(errno));
    }
}

static void conn_open(struct conn *c, int idx, int send_now) {
    struct sockaddr_in sa;
    int one = 1;
    memset(c, 0, sizeof(*c));
    c->idx = idx;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c->fd < 0) {
        st_die("socket #%d: %s (raise ulimit -n)", idx, strerror(errno));
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &sa.sin_addr);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
        st_die("connect #%d: %s", idx, strerror(errno));
    }
    c->rd = redisReaderCreate();
    if (send_now) {
        conn_prepare(c);
    }
    struct epoll_event ev = {.events = send_now ? EPOLLOUT | EPOLLIN : EPOLLIN, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        st_die("epoll_ctl ADD: %s", strerror(errno));
    }
}

/* Sends pending output; returns once it is written or the socket is full. */
static void conn_flush(struct conn *c) {
    while (c->out_off < c->out_len) {
        ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0 && (errno == EAGAIN || errno == EINPROGRESS || errno == ENOTCONN)) {
            return;
        }
        if (n < 0 && (errno == ECONNRESET || errno == EPIPE)) {
            return; /* reading will see the close and the error line, if any */
        }
        if (n < 0) {
            st_die("client %d write: %s", c->idx, strerror(errno));
        }
        c->out_off += (size_t)n;
    }
    set_events(c, EPOLLIN);
}

/* Reads replies; advances the state machine up to `last_step`. Returns 1 when the connection
 * stops needing events (done with the phase, closed or rejected). */
static int conn_read(struct conn *c, int last_step, int maxclients_mode) {
    char buf[4096];
    for (;;) {
        ssize_t n = read(c->fd, buf, sizeof(buf));
        if (n < 0 && errno == EAGAIN) {
            return 0;
        }
        if (n <= 0) {
            if (n < 0 && errno != ECONNRESET) {
                st_die("client %d read: %s", c->idx, strerror(errno));
            }
            c->closed = 1;
            if (!maxclients_mode || !c->rejected) {
                st_die("client %d: server closed the connection at step %d", c->idx, c->step);
            }
            return 1;
        }
        redisReaderFeed(c->rd, buf, (size_t)n);
        void *rep;
        while (redisReaderGetReply(c->rd, &rep) == REDIS_OK && rep != NULL) {
            redisReply *r = rep;
            if (maxclients_mode && r->type == REDIS_REPLY_ERROR) {
                if (strcmp(r->str, "ERR max number of clients reached") != 0) {
                    st_die("client %d: expected 'ERR max number of clients reached', got '%s'",
                           c->idx, r->str);
                }
                c->rejected = 1;
                freeReplyObject(r);
                continue;
            }
            conn_check(c, r);
            freeReplyObject(r);
            c->step++;
            if (c->step > last_step) {
                return 1;
            }
            conn_prepare(c);
            conn_flush(c);
        }
    }
}

/* Runs the loop until every open connection has finished steps up to last_step. */
static void run_phase(struct conn *cs, int n, int last_step, int maxclients_mode, int budget_s) {
    struct epoll_event evs[256];
    int pending = 0;
    for (int i = 0; i < n; i++) {
        if (!cs[i].closed && cs[i].step <= last_step) {
            pending++;
            if (cs[i].out_off == cs[i].out_len) {
                conn_prepare(&cs[i]);
            }
            set_events(&cs[i], EPOLLIN | EPOLLOUT);
        }
    }
    uint64_t deadline = st_now_ms() + (uint64_t)budget_s * 1000;
    while (pending > 0) {
        if (st_now_ms() > deadline) {
            st_die("%d of %d connections did not finish step %d within %d s", pending, n, last_step,
                   budget_s);
        }
        int k = epoll_wait(ep, evs, 256, 1000);
        if (k < 0 && errno != EINTR) {
            st_die("epoll_wait: %s", strerror(errno));
        }
        for (int i = 0; i < k; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c->closed || c->step > last_step) {
                continue;
            }
            if (evs[i].events & EPOLLOUT) {
                conn_flush(c);
            }
            if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
                conn_read(c, last_step, maxclients_mode)) {
                pending--;
                set_events(c, 0);
            }
        }
    }
}

/* maxclients mode: reads without sending until `want` connections got the error and were
 * closed by the server (a request sent to a rejected connection could turn its close into a
 * reset that discards the error line). Returns the number rejected. */
static int settle_rejections(int want, int budget_s) {
    struct epoll_event evs[256];
    int rejected = 0;
    uint64_t deadline = st_now_ms() + (uint64_t)budget_s * 1000;
    while (rejected < want && st_now_ms() < deadline) {
        int k = epoll_wait(ep, evs, 256, 200);
        for (int i = 0; i < k; i++) {
            struct conn *c = evs[i].data.ptr;
            if (!c->closed && conn_read(c, 0, 1)) {
                set_events(c, 0);
                rejected++;
            }
        }
    }
    return rejected;
}

static long long wait_clients(redisContext *ctl, long long want, int budget_s) {
    long long got = 0;
    uint64_t deadline = st_now_ms() + (uint64_t)budget_s * 1000;
    do {
        got = st_info_field(ctl, "clients", "connected_clients");
        if (got == want) {
            return got;
        }
        usleep(100 * 1000);
    } while (st_now_ms() < deadline);
    return got;
}

static void close_reset(int fd) {
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

/* Opens and drops `count` connections in five ways, then checks nothing partial ran. */
static void churn(int count) {
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    static const char partial[] = "*3\r\n$3\r\nSET\r\n$8\r\nchurn:k1\r\n$100\r\npart";
    static const char get[] = "*2\r\n$3\r\nGET\r\n$5\r\nc1k:0\r\n";
    static const char big_hdr[] = "*3\r\n$3\r\nSET\r\n$8\r\nchurn:k2\r\n$2097152\r\n";
    char *big = calloc(1, 1 << 20);
    redisContext *ctl = st_connect(host, port);
    st_expect_status(ctl, "OK", "SET c1k:0 %b", big, (size_t)(64 * 1024));
    uint64_t t0 = st_now_ms();
    for (int i = 0; i < count; i++) {
        int fd = st_connect_raw(host, port, 0);
        char buf[16];
        switch (i % 5) {
        case 0: /* clean: PING, PONG, close */
            st_write_all(fd, ping, sizeof(ping) - 1);
            st_read_full(fd, buf, 7);
            if (memcmp(buf, "+PONG\r\n", 7) != 0) {
                st_die("churn %d: PING reply '%.7s'", i, buf);
            }
            close(fd);
            break;
        case 1: /* reset in the middle of a request */
            st_write_all(fd, partial, sizeof(partial) - 1);
            close_reset(fd);
            break;
        case 2: /* a 64 KiB reply nobody reads */
            st_write_all(fd, get, sizeof(get) - 1);
            close(fd);
            break;
        case 3: /* connect and leave */
            close(fd);
            break;
        case 4: /* 1 MiB of a 2 MiB argument, then gone */
            if (i % 50 == 4) {
                st_write_all(fd, big_hdr, sizeof(big_hdr) - 1);
                st_write_all(fd, big, 1 << 20);
            }
            close_reset(fd);
            break;
        }
    }
    uint64_t t1 = st_now_ms();
    long long cc = wait_clients(ctl, 1, 30);
    if (cc != 1) {
        redisReply *cl = st_command(ctl, "CLIENT LIST");
        fprintf(stderr, "CLIENT LIST:\n%s\n", cl->type == REDIS_REPLY_STRING ? cl->str : "?");
        freeReplyObject(cl);
        st_die("connected_clients after %d short connections: expected 1, got %lld", count, cc);
    }
    redisReply *r = st_command(ctl, "EXISTS churn:k1 churn:k2");
    if (r->type != REDIS_REPLY_INTEGER || r->integer != 0) {
        st_die("a partial request from a dropped connection was executed (EXISTS gave %lld)",
               r->integer);
    }
    freeReplyObject(r);
    st_expect_status(ctl, "PONG", "PING");
    redisFree(ctl);
    free(big);
    printf("clients_1000: %d short-lived connections in %llu ms; client count back to 1\n", count,
           (unsigned long long)(t1 - t0));
}

int main(int argc, char **argv) {
    int n = 1000, limit = 0, churn_count = 0;
    if (argc < 3) {
        fprintf(stderr, "usage: %s HOST PORT [-n N] [-m MAXCLIENTS]\n", argv[0]);
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-n") == 0) {
            n = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "-m") == 0) {
            limit = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "-c") == 0) {
            churn_count = atoi(argv[i + 1]);
        }
    }
    ep = epoll_create1(0);
    uint64_t t0 = st_now_ms();
    if (churn_count > 0) {
        churn(churn_count);
        return 0;
    }

    if (limit > 0) {
        /* maxclients: a control connection holds one slot, so LIMIT-1 of n are served. */
        redisContext *ctl = st_connect(host, port);
        struct conn *cs = calloc((size_t)n, sizeof(*cs));
        for (int i = 0; i < n; i++) {
            conn_open(&cs[i], i, 0);
        }
        settle_rejections(n - limit + 1, 20);
        run_phase(cs, n, 0, 1, 120);
        int served = 0, rejected = 0;
        for (int i = 0; i < n; i++) {
            served += cs[i].step > 0;
            rejected += cs[i].rejected && cs[i].closed;
        }
        long long cc = st_info_field(ctl, "clients", "connected_clients");
        printf("maxclients %d: %d served, %d rejected and closed, connected_clients %lld\n", limit,
               served, rejected, cc);
        if (served != limit - 1 || rejected != n - served || cc != limit) {
            st_die("maxclients %d with %d connections + 1: expected %d served, %d rejected, "
                   "connected_clients %d; got %d, %d, %lld",
                   limit, n, limit - 1, n - limit + 1, limit, served, rejected, cc);
        }
        for (int i = 0; i < n; i++) {
            close(cs[i].fd);
            redisReaderFree(cs[i].rd);
        }
        free(cs);
        /* Slots come back once the clients leave. */
        if (wait_clients(ctl, 1, 30) != 1) {
            st_die("connected_clients did not drop back to 1 after closing");
        }
        st_expect_status(ctl, "PONG", "PING");
        redisFree(ctl);
        printf("clients_1000: maxclients checks passed in %llu ms\n",
               (unsigned long long)(st_now_ms() - t0));
        return 0;
    }

    struct conn *cs = calloc((size_t)n, sizeof(*cs));
    for (int i = 0; i < n; i++) {
        conn_open(&cs[i], i, 1);
    }
    run_phase(cs, n, 0, 0, 120); /* all connected and answered PING */
    uint64_t t1 = st_now_ms();
    redisContext *ctl = st_connect(host, port);
    long long cc = wait_clients(ctl, n + 1, 30);
    if (cc != n + 1) {
        st_die("INFO clients connected_clients: expected %d, got %lld", n + 1, cc);
    }
    run_phase(cs, n, STEPS - 1, 0, 120); /* the command sequence, all clients at once */
    uint64_t t2 = st_now_ms();
    redisReply *r = st_command(ctl, "DBSIZE");
    if (r->type != REDIS_REPLY_INTEGER || r->integer != 2LL * n) {
        st_die("DBSIZE: expected %d, got %lld", 2 * n, r->integer);
    }
    freeReplyObject(r);
    /* Spot-check from a fresh connection. */
    char want[80];
    conn_value(&cs[n - 1], want, sizeof(want));
    strcat(want, "-x");
    r = st_command(ctl, "GET c1k:%d", n - 1);
    if (r->type != REDIS_REPLY_STRING || strcmp(r->str, want) != 0) {
        st_die("GET c1k:%d: expected %s", n - 1, want);
    }
    freeReplyObject(r);
    for (int i = 0; i < n; i++) {
        close(cs[i].fd);
        redisReaderFree(cs[i].rd);
    }
    free(cs);
    cc = wait_clients(ctl, 1, 30);
    if (cc != 1) {
        st_die("connected_clients after closing %d connections: expected 1, got %lld", n, cc);
    }
    redisFree(ctl);
    printf("clients_1000: %d connections: connect+PING %llu ms, %d commands each %llu ms, "
           "total %llu ms\n",
           n, (unsigned long long)(t1 - t0), STEPS - 1, (unsigned long long)(t2 - t1),
           (unsigned long long)(st_now_ms() - t0));
    close(ep);
    return 0;
}
