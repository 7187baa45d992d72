/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for the listening side: --bind with IPv6, several addresses and wildcards
 * (hiredis and redis-cli over ::1), CLIENT LIST addresses in Redis's [ip]:port form, the
 * start-up line naming every address and the Unix socket, and INFO's io_backend field. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(net, .fini = it_teardown, .timeout = 60);

/* Connects to host:port with hiredis; fails the test on error. Caller frees with it_close. */
static redisContext *connect_host(const char *host, int port) {
    struct timeval tv = {10, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    cr_assert(c != NULL && !c->err, "connect to %s port %d: %s", host, port,
              c != NULL ? c->errstr : "NULL");
    redisSetTimeout(c, tv);
    return c;
}

/* Returns a malloc'd copy of the server log (caller frees). */
static char *read_log(const struct it_server *s) {
    FILE *f = fopen(s->log, "r");
    cr_assert_not_null(f, "open %s", s->log);
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The value of field name in the CLIENT INFO line of c (static buffer). */
static const char *client_field(redisContext *c, const char *name) {
    static char val[128];
    redisReply *r = it_cmd(c, "CLIENT INFO");
    IT_TYPE(r, REDIS_REPLY_STRING);
    char key[64];
    snprintf(key, sizeof(key), " %s=", name);
    const char *p = strstr(r->str, key);
    cr_assert_not_null(p, "CLIENT INFO lacks %s: %s", name, r->str);
    p += strlen(key);
    size_t n = strcspn(p, " \n");
    snprintf(val, sizeof(val), "%.*s", (int)n, p);
    return val;
}

Test(net, bind_ipv6_loopback) {
    struct it_opts o = {.bind = "::1"};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    IT_STATUS("PONG", it_c, "PING");
    IT_OK(it_c, "SET v6 yes");
    IT_STR("yes", it_c, "GET v6");
    char want[64];
    snprintf(want, sizeof(want), "[::1]:%d", it_srv.port);
    cr_assert_str_eq(client_field(it_c, "laddr"), want);
    const char *addr = client_field(it_c, "addr");
    cr_assert(strncmp(addr, "[::1]:", 6) == 0, "addr %s is not [::1]:port", addr);
    /* CLIENT KILL takes the same form. */
    redisContext *k = connect_host("::1", it_srv.port);
    IT_OK(k, "CLIENT SETNAME victim");
    char victim[64];
    snprintf(victim, sizeof(victim), "%s", client_field(k, "addr"));
    IT_OK(it_c, "CLIENT KILL %s", victim);
    redisReply *r = redisCommand(k, "PING");
    cr_assert(r == NULL, "killed client still answered");
    it_close(k);
    /* IPv6 only: nothing on 127.0.0.1. */
    struct timeval tv = {2, 0};
    redisContext *v4 = redisConnectWithTimeout("127.0.0.1", it_srv.port, tv);
    cr_assert(v4 == NULL || v4->err, "127.0.0.1 reachable with --bind ::1");
    redisFree(v4);
}

Test(net, redis_cli_ipv6) {
    struct it_opts o = {.bind = "::1"};
    it_server_start(&it_srv, &o);
    char cmd[256];
    snprintf(cmd, sizeof(cmd),
             "redis-cli -h ::1 -p %d set cli v6 && redis-cli -h ::1 -p %d get cli", it_srv.port,
             it_srv.port);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char out[256] = "";
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    cr_assert_eq(pclose(p), 0, "redis-cli failed: %s", out);
    cr_assert_str_eq(out, "OK\nv6\n");
}

Test(net, bind_two_addresses) {
    struct it_opts o = {.bind = "127.0.0.1 ::1"};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    redisContext *v6 = connect_host("::1", it_srv.port);
    IT_OK(it_c, "SET both 1");
    IT_STR("1", v6, "GET both");
    cr_assert(strncmp(client_field(it_c, "addr"), "127.0.0.1:", 10) == 0);
    cr_assert(strncmp(client_field(v6, "addr"), "[::1]:", 6) == 0);
    it_close(v6);
    if (it_target_is_crescent()) {
        char *log = read_log(&it_srv);
        char want[128];
        snprintf(want, sizeof(want), "ready to accept connections on 127.0.0.1:%d, [::1]:%d",
                 it_srv.port, it_srv.port);
        cr_assert_not_null(strstr(log, want), "start-up line lacks '%s':\n%s", want, log);
        free(log);
    }
}

Test(net, bind_wildcards) {
    struct it_opts o = {.bind = "* ::"};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv); /* 127.0.0.1 */
    redisContext *v6 = connect_host("::1", it_srv.port);
    IT_OK(v6, "SET wild 1");
    IT_STR("1", it_c, "GET wild");
    it_close(v6);
}

Test(net, bind_invalid_address_fails) {
    IT_CRESCENT_ONLY();
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s/bin/crescent-master --port 1 --bind 'not..an..address' 2>&1",
             getenv("CRESCENT_BUILD") ? getenv("CRESCENT_BUILD") : "build");
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char out[2048] = "";
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    cr_assert_neq(st, 0, "server started with a bad bind address: %s", out);
    cr_assert_not_null(strstr(out, "not..an..address"), "no reason given: %s", out);
}

Test(net, ready_line_names_unix_socket) {
    IT_CRESCENT_ONLY();
    char path[128];
    snprintf(path, sizeof(path), "/tmp/crescent-net-%d.sock", (int)getpid());
    struct it_opts o = {.unixsocket = path};
    it_server_start(&it_srv, &o);
    char *log = read_log(&it_srv);
    char want[256];
    snprintf(want, sizeof(want), "ready to accept connections on 127.0.0.1:%d, unix:%s (",
             it_srv.port, path);
    cr_assert_not_null(strstr(log, want), "start-up line lacks '%s':\n%s", want, log);
    free(log);
    unlink(path);
}

Test(net, info_io_backend) {
    IT_CRESCENT_ONLY();
    it_server_start(&it_srv, NULL);
    it_c = it_connect(&it_srv);
    redisReply *r = it_cmd(it_c, "INFO server");
    IT_TYPE(r, REDIS_REPLY_STRING);
    const char *want = getenv("CRESCENT_IO_BACKEND");
    if (want != NULL && *want != '\0' && strcmp(want, "auto") != 0) {
        char line[64];
        snprintf(line, sizeof(line), "io_backend:%s\r\n", want);
        cr_assert_not_null(strstr(r->str, line), "INFO server lacks %s: %s", line, r->str);
    } else {
        cr_assert(strstr(r->str, "io_backend:uring\r\n") || strstr(r->str, "io_backend:epoll\r\n"),
                  "INFO server lacks io_backend: %s", r->str);
    }
    redisReply *g = it_cmd(it_c, "CONFIG GET io-backend");
    IT_TYPE(g, REDIS_REPLY_ARRAY);
    cr_assert_eq(g->elements, 2);
    cr_assert_str_eq(g->element[1]->str, want != NULL && *want != '\0' ? want : "auto");
    IT_ERR_PREFIX("ERR CONFIG SET failed", it_c, "CONFIG SET io-backend epoll");
}

Test(net, io_backend_bad_value_fails) {
    IT_CRESCENT_ONLY();
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s/bin/crescent-master --port 1 --io-backend kqueue 2>&1",
             getenv("CRESCENT_BUILD") ? getenv("CRESCENT_BUILD") : "build");
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char out[2048] = "";
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    cr_assert_neq(pclose(p), 0, "server started with --io-backend kqueue: %s", out);
    cr_assert_not_null(strstr(out, "io-backend"), "no reason given: %s", out);
}

Test(net, kill_and_replies_across_threads) {
    /* Four event loops: connections land on different workers, so CLIENT KILL crosses threads
     * (the victim's own loop closes it) and big replies are written by several loops at once. */
    struct it_opts o = {.conf = it_target_is_crescent() ? "threads 4\n" : NULL};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    enum { N = 8 };
    redisContext *v[N];
    long long ids[N];
    static char big[300000];
    memset(big, 'q', sizeof(big));
    IT_OK(it_c, "SET big %b", big, sizeof(big));
    for (int i = 0; i < N; i++) {
        v[i] = connect_host("127.0.0.1", it_srv.port);
        redisReply *r = it_cmd(v[i], "CLIENT ID");
        IT_TYPE(r, REDIS_REPLY_INTEGER);
        ids[i] = r->integer;
        redisAppendCommand(v[i], "GET big");
        redisAppendCommand(v[i], "GET big");
    }
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 2; k++) {
            void *rv = NULL;
            cr_assert_eq(redisGetReply(v[i], &rv), REDIS_OK, "GET big on connection %d", i);
            redisReply *r = rv;
            cr_assert(r->type == REDIS_REPLY_STRING && r->len == sizeof(big) &&
                          memcmp(r->str, big, sizeof(big)) == 0,
                      "connection %d got a wrong value", i);
            freeReplyObject(r);
        }
    }
    for (int i = 0; i < N; i++) {
        IT_INT(1, it_c, "CLIENT KILL ID %lld", ids[i]);
    }
    for (int i = 0; i < N; i++) {
        redisReply *r = redisCommand(v[i], "PING");
        cr_assert(r == NULL, "killed connection %d still answered", i);
        it_close(v[i]);
    }
    IT_STATUS("PONG", it_c, "PING");
}
