/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A light pipelined RESP load generator for bench/bench-mc.sh: like redis-benchmark -P, but it
 * only finds where each reply ends (no reply objects), so a reply's shape costs the client
 * little and the server's rate shows. Single thread, blocking sends, poll() for replies.
 *
 *   bench_mc_load PORT CONNECTIONS PIPELINE REQUESTS COMMAND [ARG ...]
 *
 * Prints "<requests/s> <error replies>" on stdout; exits 1 on a connection error.
 */
#include "common/fmacros.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
    int fd;
    long pending; /* replies still expected for the batch in flight */
    char *buf;
    size_t len, cap;
};

/* End of the RESP value starting at b[pos], or -1 when incomplete. */
static long skip_value(const char *b, size_t len, size_t pos) {
    if (pos >= len)
        return -1;
    const char *nl = memchr(b + pos, '\n', len - pos);
    if (!nl)
        return -1;
    size_t line_end = (size_t)(nl - b) + 1;
    long long n = atoll(b + pos + 1);
    switch (b[pos]) {
    case '$':
    case '=':
    case '!':
        if (n < 0)
            return (long)line_end;
        return line_end + (size_t)n + 2 <= len ? (long)(line_end + (size_t)n + 2) : -1;
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
        long long items = (b[pos] == '%' || b[pos] == '|') ? 2 * n : n;
        size_t p = line_end;
        for (long long i = 0; i < items; i++) {
            long e = skip_value(b, len, p);
            if (e < 0)
                return -1;
            p = (size_t)e;
        }
        return (long)p;
    }
    default: /* + - : , _ # ( */
        return (long)line_end;
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s PORT CONNECTIONS PIPELINE REQUESTS COMMAND [ARG ...]\n",
                argv[0]);
        return 2;
    }
    int port = atoi(argv[1]), nconn = atoi(argv[2]), pipe = atoi(argv[3]);
    long total = atol(argv[4]);
    if (nconn < 1 || pipe < 1 || total < 1)
        return 2;
    char req[4096];
    size_t rl = (size_t)snprintf(req, sizeof(req), "*%d\r\n", argc - 5);
    for (int i = 5; i < argc; i++)
        rl += (size_t)snprintf(req + rl, sizeof(req) - rl, "$%zu\r\n%s\r\n", strlen(argv[i]),
                               argv[i]);
    char *batch = malloc(rl * (size_t)pipe);
    for (int i = 0; i < pipe; i++)
        memcpy(batch + rl * (size_t)i, req, rl);
    struct conn *cs = calloc((size_t)nconn, sizeof(*cs));
    struct pollfd *pfd = calloc((size_t)nconn, sizeof(*pfd));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    long sent = 0, done = 0, errors = 0;
    double t0 = now_s();
    for (int i = 0; i < nconn; i++) {
        cs[i].fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(cs[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(cs[i].fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            perror("connect");
            return 1;
        }
        cs[i].cap = 1 << 16;
        cs[i].buf = malloc(cs[i].cap);
        pfd[i] = (struct pollfd){.fd = cs[i].fd, .events = POLLIN};
    }
    for (int i = 0; i < nconn && sent < total; i++) {
        long k = total - sent < pipe ? total - sent : pipe;
        if (send(cs[i].fd, batch, rl * (size_t)k, 0) != (ssize_t)(rl * (size_t)k))
            return 1;
        cs[i].pending = k;
        sent += k;
    }
    while (done < total) {
        if (poll(pfd, (nfds_t)nconn, 10000) <= 0) {
            fprintf(stderr, "bench_mc_load: no reply for 10 s\n");
            return 1;
        }
        for (int i = 0; i < nconn; i++) {
            struct conn *c = &cs[i];
            if (!(pfd[i].revents & POLLIN))
                continue;
            if (c->cap - c->len < 4096) {
                c->cap *= 2;
                c->buf = realloc(c->buf, c->cap);
            }
            ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
            if (n <= 0) {
                fprintf(stderr, "bench_mc_load: connection closed\n");
                return 1;
            }
            c->len += (size_t)n;
            size_t pos = 0;
            long e;
            while (c->pending > 0 && (e = skip_value(c->buf, c->len, pos)) >= 0) {
                errors += c->buf[pos] == '-';
                pos = (size_t)e;
                c->pending--;
                done++;
            }
            memmove(c->buf, c->buf + pos, c->len - pos);
            c->len -= pos;
            if (c->pending == 0 && sent < total) {
                long k = total - sent < pipe ? total - sent : pipe;
                if (send(c->fd, batch, rl * (size_t)k, 0) != (ssize_t)(rl * (size_t)k))
                    return 1;
                c->pending = k;
                sent += k;
            }
        }
    }
    double dt = now_s() - t0;
    printf("%.2f %ld\n", (double)total / dt, errors);
    return 0;
}
