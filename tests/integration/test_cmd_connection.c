/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for connection commands: PING, ECHO, HELLO (RESP2 via hiredis, RESP3 via raw
 * bytes), AUTH with and without requirepass, SELECT, QUIT, RESET and the CLIENT subcommands. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

TestSuite(connection, .init = it_setup, .fini = it_teardown, .timeout = 30);

Test(connection, ping) {
    IT_STATUS("PONG", it_c, "PING");
    IT_STR("hello", it_c, "PING hello");
    IT_STR("", it_c, "PING %s", "");
    IT_ERR("ERR wrong number of arguments for 'ping' command", it_c, "PING a b");
    IT_STATUS("PONG", it_c, "ping");
}

Test(connection, echo) {
    IT_STR("x", it_c, "ECHO x");
    IT_STR("a b", it_c, "ECHO %s", "a b");
    redisReply *r = it_cmd(it_c, "ECHO %b", "a\0b\r\nc", (size_t)6);
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert_eq(r->len, 6);
    cr_assert(memcmp(r->str, "a\0b\r\nc", 6) == 0);
    IT_ERR("ERR wrong number of arguments for 'echo' command", it_c, "ECHO");
    IT_ERR("ERR wrong number of arguments for 'echo' command", it_c, "ECHO a b");
}

static const redisReply *map_get(const redisReply *r, const char *key) {
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, key) == 0) {
            return r->element[i + 1];
        }
    }
    return NULL;
}

Test(connection, hello_resp2_fields) {
    redisReply *id = it_cmd(it_c, "CLIENT ID");
    IT_TYPE(id, REDIS_REPLY_INTEGER);
    redisReply *r = it_cmd(it_c, "HELLO 2");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 14, "HELLO 2 returns 7 field/value pairs, got %zu elements",
                 r->elements);
    const char *keys[] = {"server", "version", "proto", "id", "mode", "role", "modules"};
    for (size_t i = 0; i < 7; i++) {
        cr_assert_not_null(map_get(r, keys[i]), "HELLO reply lacks field %s", keys[i]);
    }
    cr_assert_eq(map_get(r, "server")->type, REDIS_REPLY_STRING);
    cr_assert_eq(map_get(r, "version")->type, REDIS_REPLY_STRING);
    cr_assert_eq(map_get(r, "proto")->type, REDIS_REPLY_INTEGER);
    cr_assert_eq(map_get(r, "proto")->integer, 2);
    cr_assert_eq(map_get(r, "id")->type, REDIS_REPLY_INTEGER);
    cr_assert_eq(map_get(r, "id")->integer, id->integer, "HELLO id equals CLIENT ID");
    cr_assert_str_eq(map_get(r, "mode")->str, "standalone");
    cr_assert_str_eq(map_get(r, "role")->str, "master");
    cr_assert_eq(map_get(r, "modules")->type, REDIS_REPLY_ARRAY);
    /* HELLO without a version reports the current protocol. */
    r = it_cmd(it_c, "HELLO");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(map_get(r, "proto")->integer, 2);
}

Test(connection, hello_errors) {
    IT_ERR("NOPROTO unsupported protocol version", it_c, "HELLO 4");
    IT_ERR("NOPROTO unsupported protocol version", it_c, "HELLO 1");
    IT_ERR("ERR Protocol version is not an integer or out of range", it_c, "HELLO x");
    IT_ERR("WRONGPASS invalid username-password pair or user is disabled.", it_c,
           "HELLO 3 AUTH nosuchuser pw");
    /* The connection is still RESP2 after the failed HELLO 3. */
    IT_STATUS("PONG", it_c, "PING");
}

Test(connection, hello_setname) {
    redisReply *r = it_cmd(it_c, "HELLO 2 SETNAME myname");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    IT_STR("myname", it_c, "CLIENT GETNAME");
    IT_ERR("ERR Client names cannot contain spaces, newlines or special characters.", it_c,
           "HELLO 2 SETNAME %s", "a b");
    IT_STR("myname", it_c, "CLIENT GETNAME");
}

Test(connection_auth, config_set_requirepass, .init = it_setup, .fini = it_teardown,
     .timeout = 30) {
    IT_OK(it_c, "CONFIG SET requirepass newpw");
    IT_STATUS("PONG", it_c, "PING"); /* existing connections stay authenticated */
    redisContext *c2 = it_connect(&it_srv);
    IT_ERR("NOAUTH Authentication required.", c2, "PING");
    IT_OK(c2, "AUTH newpw");
    IT_OK(it_c, "CONFIG SET requirepass %s", "");
    redisContext *c3 = it_connect(&it_srv);
    IT_STATUS("PONG", c3, "PING");
    it_close(c3);
    it_close(c2);
}

static void raw_expect(int fd, const char *send, const char *want) {
    it_raw_send(fd, send, strlen(send));
    size_t len;
    char *got = it_raw_read(fd, &len);
    cr_assert(len == strlen(want) && memcmp(got, want, len) == 0, "raw %s: expected %s, got %s",
              send, want, got);
    free(got);
}

Test(connection, hello3_raw_resp3) {
    int fd = it_raw_open(it_srv.port);
    it_raw_send(fd, "HELLO 3\r\n", 9);
    size_t len;
    char *got = it_raw_read(fd, &len);
    cr_assert(strncmp(got, "%7\r\n", 4) == 0, "HELLO 3 replies with a 7-entry map: %s", got);
    cr_assert_not_null(strstr(got, "$6\r\nserver\r\n$"), "%s", got);
    cr_assert_not_null(strstr(got, "$5\r\nproto\r\n:3\r\n"), "%s", got);
    cr_assert_not_null(strstr(got, "$4\r\nmode\r\n$10\r\nstandalone\r\n"), "%s", got);
    cr_assert_not_null(strstr(got, "$4\r\nrole\r\n$6\r\nmaster\r\n"), "%s", got);
    cr_assert_not_null(strstr(got, "$7\r\nmodules\r\n*0\r\n"), "%s", got);
    free(got);
    raw_expect(fd, "PING\r\n", "+PONG\r\n");
    raw_expect(fd, "GET nosuchkey\r\n", "_\r\n");
    raw_expect(fd, "SET k v\r\n", "+OK\r\n");
    raw_expect(fd, "GET k\r\n", "$1\r\nv\r\n");
    raw_expect(fd, "INCRBYFLOAT f 1.5\r\n", "$3\r\n1.5\r\n");
    raw_expect(fd, "MGET k nosuch\r\n", "*2\r\n$1\r\nv\r\n_\r\n");
    raw_expect(fd, "HELLO 4\r\n", "-NOPROTO unsupported protocol version\r\n");
    /* Back to RESP2: a null is $-1 again. */
    it_raw_send(fd, "HELLO 2\r\n", 9);
    got = it_raw_read(fd, &len);
    cr_assert(strncmp(got, "*14\r\n", 5) == 0, "HELLO 2 replies with a flat array: %s", got);
    free(got);
    raw_expect(fd, "GET nosuchkey\r\n", "$-1\r\n");
    close(fd);
}

static void raw_expect_prefix(int fd, const char *send, const char *want) {
    it_raw_send(fd, send, strlen(send));
    size_t len;
    char *got = it_raw_read(fd, &len);
    cr_assert(strncmp(got, want, strlen(want)) == 0, "raw %s: expected %s..., got %s", send, want,
              got);
    free(got);
}

Test(connection, resp3_reply_types) {
    int fd = it_raw_open(it_srv.port);
    it_raw_send(fd, "HELLO 3\r\n", 9);
    size_t len;
    free(it_raw_read(fd, &len));
    raw_expect(fd, "CONFIG GET maxclients\r\n", "%1\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n");
    raw_expect(fd, "INFO keyspace\r\n", "=16\r\ntxt:# Keyspace\r\n\r\n");
    raw_expect_prefix(fd, "CLIENT INFO\r\n", "=");
    raw_expect(fd, "CLIENT GETNAME\r\n", "_\r\n");
    raw_expect(fd, "SET a b GET\r\n", "_\r\n");
    raw_expect(fd, "TTL nosuch\r\n", ":-2\r\n");
    raw_expect_prefix(fd, "COMMAND DOCS get\r\n", "%1\r\n$3\r\nget\r\n%");
    raw_expect_prefix(fd, "COMMAND INFO get\r\n", "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~");
    raw_expect(fd, "COMMAND INFO nosuch\r\n", "*1\r\n_\r\n");
    raw_expect(fd, "WATCH a\r\n", "+OK\r\n");
    IT_OK(it_c, "SET a changed");
    raw_expect(fd, "MULTI\r\n", "+OK\r\n");
    raw_expect(fd, "GET a\r\n", "+QUEUED\r\n");
    raw_expect(fd, "EXEC\r\n", "_\r\n");
    close(fd);
}

Test(connection, reset_returns_to_resp2) {
    int fd = it_raw_open(it_srv.port);
    it_raw_send(fd, "HELLO 3\r\n", 9);
    size_t len;
    free(it_raw_read(fd, &len));
    raw_expect(fd, "GET nosuchkey\r\n", "_\r\n");
    raw_expect(fd, "RESET\r\n", "+RESET\r\n");
    raw_expect(fd, "GET nosuchkey\r\n", "$-1\r\n");
    close(fd);
}

Test(connection, auth_without_password) {
    IT_ERR("ERR AUTH <password> called without any password configured for the default user. "
           "Are you sure your configuration is correct?",
           it_c, "AUTH x");
    IT_ERR("WRONGPASS invalid username-password pair or user is disabled.", it_c, "AUTH a b");
    IT_ERR("ERR wrong number of arguments for 'auth' command", it_c, "AUTH");
    IT_ERR("ERR syntax error", it_c, "AUTH a b c");
}

Test(connection_auth, with_requirepass, .fini = it_teardown, .timeout = 30) {
    struct it_opts o = {.requirepass = "s3cret"};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    IT_ERR("NOAUTH Authentication required.", it_c, "GET x");
    IT_ERR("NOAUTH Authentication required.", it_c, "SET x 1");
    IT_ERR("WRONGPASS invalid username-password pair or user is disabled.", it_c, "AUTH bad");
    IT_ERR("WRONGPASS invalid username-password pair or user is disabled.", it_c,
           "AUTH default bad");
    IT_ERR("NOAUTH Authentication required.", it_c, "GET x");
    IT_OK(it_c, "AUTH s3cret");
    IT_NIL(it_c, "GET x");
    /* A second connection authenticates with the two-argument form and with HELLO. */
    redisContext *c2 = it_connect(&it_srv);
    IT_ERR("NOAUTH Authentication required.", c2, "PING");
    IT_OK(c2, "AUTH default s3cret");
    IT_STATUS("PONG", c2, "PING");
    it_close(c2);
    redisContext *c3 = it_connect(&it_srv);
    IT_ERR("WRONGPASS invalid username-password pair or user is disabled.", c3,
           "HELLO 2 AUTH default wrong");
    redisReply *r = it_cmd(c3, "HELLO 2 AUTH default s3cret");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    IT_STATUS("PONG", c3, "PING");
    /* HELLO without AUTH on an unauthenticated connection. */
    redisContext *c4 = it_connect(&it_srv);
    IT_ERR("NOAUTH HELLO must be called with the client already authenticated, otherwise the "
           "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
           "the RESP protocol version at the same time",
           c4, "HELLO 3");
    IT_ERR("NOAUTH Authentication required.", c4, "CLIENT ID");
    it_close(c4);
    /* RESET de-authenticates when the default user has a password. */
    IT_STATUS("RESET", c3, "RESET");
    IT_ERR("NOAUTH Authentication required.", c3, "GET x");
    it_close(c3);
}

Test(connection, select_db) {
    IT_OK(it_c, "SELECT 0");
    IT_ERR("ERR DB index is out of range", it_c, "SELECT -1");
    IT_ERR("ERR DB index is out of range", it_c, "SELECT 100000");
    IT_ERR("ERR value is not an integer or out of range", it_c, "SELECT x");
    IT_ERR("ERR wrong number of arguments for 'select' command", it_c, "SELECT");
    if (it_target_is_redis()) {
        /* Redis has 16 databases; crescent has db 0 only (documented difference). */
        IT_OK(it_c, "SELECT 15");
        IT_ERR("ERR DB index is out of range", it_c, "SELECT 16");
    } else {
        IT_ERR("ERR DB index is out of range", it_c, "SELECT 1");
    }
}

Test(connection, quit_closes) {
    IT_OK(it_c, "QUIT");
    redisReply *r = redisCommand(it_c, "PING");
    cr_assert_null(r, "the connection is closed after QUIT");
}

Test(connection, reset) {
    IT_OK(it_c, "CLIENT SETNAME before");
    IT_OK(it_c, "MULTI");
    IT_STATUS("RESET", it_c, "RESET");
    IT_NIL(it_c, "CLIENT GETNAME");
    IT_ERR("ERR EXEC without MULTI", it_c, "EXEC");
    IT_STATUS("PONG", it_c, "PING");
}

Test(connection, client_id) {
    redisReply *a = it_cmd(it_c, "CLIENT ID");
    IT_TYPE(a, REDIS_REPLY_INTEGER);
    cr_assert_gt(a->integer, 0);
    redisContext *c2 = it_connect(&it_srv);
    redisReply *b = it_cmd(c2, "CLIENT ID");
    IT_TYPE(b, REDIS_REPLY_INTEGER);
    cr_assert_gt(b->integer, a->integer, "client ids increase");
    it_close(c2);
    IT_ERR("ERR wrong number of arguments for 'client|id' command", it_c, "CLIENT ID x");
}

Test(connection, client_names) {
    IT_NIL(it_c, "CLIENT GETNAME");
    IT_OK(it_c, "CLIENT SETNAME worker-1");
    IT_STR("worker-1", it_c, "CLIENT GETNAME");
    IT_ERR("ERR Client names cannot contain spaces, newlines or special characters.", it_c,
           "CLIENT SETNAME %s", "a b");
    IT_ERR("ERR Client names cannot contain spaces, newlines or special characters.", it_c,
           "CLIENT SETNAME %s", "a\nb");
    IT_STR("worker-1", it_c, "CLIENT GETNAME");
    IT_OK(it_c, "CLIENT SETNAME %s", "");
    IT_NIL(it_c, "CLIENT GETNAME");
    IT_ERR("ERR wrong number of arguments for 'client|getname' command", it_c, "CLIENT GETNAME x");
    IT_ERR("ERR wrong number of arguments for 'client|setname' command", it_c, "CLIENT SETNAME");
    IT_ERR("ERR unknown subcommand 'foo'. Try CLIENT HELP.", it_c, "CLIENT foo");
}

Test(connection, client_list_and_info) {
    redisReply *id = it_cmd(it_c, "CLIENT ID");
    IT_OK(it_c, "CLIENT SETNAME lister");
    redisContext *c2 = it_connect(&it_srv);
    redisReply *id2 = it_cmd(c2, "CLIENT ID");
    char want[64];
    snprintf(want, sizeof(want), "id=%lld addr=127.0.0.1:", id->integer);
    redisReply *info = it_cmd(it_c, "CLIENT INFO");
    cr_assert_eq(info->type, REDIS_REPLY_STRING, "CLIENT INFO is a bulk string");
    cr_assert(strncmp(info->str, want, strlen(want)) == 0, "CLIENT INFO: %s", info->str);
    cr_assert_not_null(strstr(info->str, " name=lister "), "%s", info->str);
    cr_assert_not_null(strstr(info->str, " cmd=client|info"), "%s", info->str);
    cr_assert_eq(info->str[info->len - 1], '\n', "CLIENT INFO ends with a newline");
    /* The harness's readiness probe connection may still be closing: poll for two lines. */
    redisReply *list = NULL;
    int lines = 0;
    for (long long start = it_now_ms(); it_now_ms() - start < 2000; it_sleep_ms(20)) {
        list = it_cmd(it_c, "CLIENT LIST");
        cr_assert_eq(list->type, REDIS_REPLY_STRING);
        lines = 0;
        for (const char *p = list->str; *p; p++) {
            lines += *p == '\n';
        }
        if (lines == 2) {
            break;
        }
    }
    cr_assert_eq(lines, 2, "two clients, two lines: %s", list->str);
    cr_assert_not_null(strstr(list->str, want), "%s", list->str);
    snprintf(want, sizeof(want), "id=%lld addr=127.0.0.1:", id2->integer);
    cr_assert_not_null(strstr(list->str, want), "%s", list->str);
    redisReply *one = it_cmd(it_c, "CLIENT LIST ID %lld", id2->integer);
    snprintf(want, sizeof(want), "id=%lld ", id2->integer);
    cr_assert(strncmp(one->str, want, strlen(want)) == 0, "CLIENT LIST ID: %s", one->str);
    cr_assert_null(strstr(one->str, "lister"), "only the requested client: %s", one->str);
    it_close(c2);
}

static void client_addr(redisContext *c, char *out, size_t cap) {
    redisReply *r = it_cmd(c, "CLIENT INFO");
    cr_assert(r->type == REDIS_REPLY_STRING);
    const char *a = strstr(r->str, "addr=");
    cr_assert_not_null(a);
    a += 5;
    snprintf(out, cap, "%.*s", (int)strcspn(a, " "), a);
}

Test(connection, client_kill) {
    redisContext *c2 = it_connect(&it_srv);
    redisReply *id2 = it_cmd(c2, "CLIENT ID");
    IT_INT(1, it_c, "CLIENT KILL ID %lld", id2->integer);
    cr_assert_null(redisCommand(c2, "PING"), "killed client's connection is closed");
    it_close(c2);
    IT_INT(0, it_c, "CLIENT KILL ID 999999");
    IT_ERR("ERR client-id should be greater than 0", it_c, "CLIENT KILL ID x");

    redisContext *c3 = it_connect(&it_srv);
    char addr[64];
    client_addr(c3, addr, sizeof(addr));
    IT_INT(1, it_c, "CLIENT KILL ADDR %s", addr);
    cr_assert_null(redisCommand(c3, "PING"));
    it_close(c3);
    IT_INT(0, it_c, "CLIENT KILL ADDR %s", addr);

    redisContext *c4 = it_connect(&it_srv);
    client_addr(c4, addr, sizeof(addr));
    IT_OK(it_c, "CLIENT KILL %s", addr); /* old form: one address argument */
    cr_assert_null(redisCommand(c4, "PING"));
    it_close(c4);
    IT_ERR("ERR No such client", it_c, "CLIENT KILL %s", addr);
    IT_STATUS("PONG", it_c, "PING");
}

Test(connection, client_setinfo) {
    if (it_target_is_redis()) {
        /* CLIENT SETINFO appeared in Redis 7.2; 7.0 rejects it. */
        IT_ERR("ERR unknown subcommand 'setinfo'. Try CLIENT HELP.", it_c,
               "CLIENT setinfo LIB-NAME mylib");
        return;
    }
    IT_OK(it_c, "CLIENT SETINFO LIB-NAME mylib");
    IT_OK(it_c, "CLIENT SETINFO LIB-VER 1.2.3");
    redisReply *info = it_cmd(it_c, "CLIENT INFO");
    cr_assert_not_null(strstr(info->str, "lib-name=mylib"), "%s", info->str);
    cr_assert_not_null(strstr(info->str, "lib-ver=1.2.3"), "%s", info->str);
}

Test(connection, client_kill_filters) {
    redisContext *c2 = it_connect(&it_srv);
    redisContext *c3 = it_connect(&it_srv);
    IT_STATUS("PONG", c2, "PING");
    IT_STATUS("PONG", c3, "PING");
    IT_INT(2, it_c, "CLIENT KILL USER default SKIPME yes");
    cr_assert_null(redisCommand(c2, "PING"));
    cr_assert_null(redisCommand(c3, "PING"));
    it_close(c2);
    it_close(c3);
    IT_STATUS("PONG", it_c, "PING");
    IT_ERR("ERR syntax error", it_c, "CLIENT KILL ADDR 1.1.1.1:1 SKIPME maybe");
    IT_ERR("ERR syntax error", it_c, "CLIENT KILL ID 5 foo bar");
    IT_INT(0, it_c, "CLIENT KILL LADDR 127.0.0.1:1");
}

Test(connection_limits, maxclients, .fini = it_teardown, .timeout = 30) {
    struct it_opts o = {.maxclients = 2};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    IT_STATUS("PONG", it_c, "PING");
    redisContext *c2 = NULL;
    for (long long start = it_now_ms();; it_sleep_ms(20)) { /* earlier closes are asynchronous */
        c2 = it_connect(&it_srv);
        redisReply *p = redisCommand(c2, "PING");
        bool ok = p != NULL && p->type == REDIS_REPLY_STATUS;
        freeReplyObject(p);
        if (ok) {
            break;
        }
        it_close(c2);
        cr_assert_lt(it_now_ms() - start, 2000, "second client accepted under maxclients 2");
    }
    redisContext *c3 = it_connect(&it_srv);
    redisReply *r = redisCommand(c3, "PING");
    cr_assert(r != NULL && r->type == REDIS_REPLY_ERROR &&
                  strcmp(r->str, "ERR max number of clients reached") == 0,
              "third client over maxclients 2 is refused with an error");
    freeReplyObject(r);
    it_close(c3);
    it_close(c2);
    /* CONFIG SET maxclients applies at run time. */
    IT_OK(it_c, "CONFIG SET maxclients 3");
    long long deadline = it_now_ms() + 2000;
    for (;;) { /* c2's close may not be processed yet */
        c2 = it_connect(&it_srv);
        c3 = it_connect(&it_srv);
        r = redisCommand(c3, "PING");
        bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        it_close(c3);
        if (ok || it_now_ms() > deadline) {
            cr_assert(ok, "with maxclients 3 the third client is accepted");
            break;
        }
        it_close(c2);
        it_sleep_ms(20);
    }
    it_close(c2);
}

Test(connection_limits, idle_timeout, .fini = it_teardown, .timeout = 30) {
    struct it_opts o = {.timeout = 1};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    IT_STATUS("PONG", it_c, "PING");
    int fd = it_raw_open(it_srv.port);
    it_raw_send(fd, "PING\r\n", 6);
    size_t len;
    free(it_raw_read(fd, &len));
    long long start = it_now_ms();
    bool closed = false;
    while (!closed && it_now_ms() - start < 5000) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        char b;
        closed = poll(&p, 1, 100) == 1 && recv(fd, &b, 1, 0) == 0;
    }
    long long waited = it_now_ms() - start;
    close(fd);
    cr_assert(closed, "idle client is closed after timeout 1");
    cr_assert_geq(waited, 900, "not before the timeout: %lld ms", waited);
}

Test(connection_limits, unixsocket, .fini = it_teardown, .timeout = 30) {
    char path[128];
    snprintf(path, sizeof(path), "/tmp/crescent-it-%d.sock", (int)getpid());
    struct it_opts o = {.unixsocket = path};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    struct timeval tv = {5, 0};
    redisContext *u = redisConnectUnixWithTimeout(path, tv);
    cr_assert(u != NULL && !u->err, "connect to %s: %s", path, u ? u->errstr : "NULL");
    IT_STATUS("PONG", u, "PING");
    IT_OK(u, "SET via unix");
    IT_STR("unix", it_c, "GET via"); /* same keyspace as TCP */
    it_close(u);
    unlink(path);
}
