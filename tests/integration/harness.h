/* SPDX-License-Identifier: Apache-2.0 */
/* Integration-test harness: starts the server under test (crescent-master, or redis-server when
 * CRESCENT_TEST_SERVER=redis) on a free loopback port (plus the flags in CRESCENT_TEST_ARGS),
 * connects with hiredis (CRESCENT_IO_BACKEND=epoll|uring adds --io-backend to crescent-master),
 * offers reply checks that print the command and the reply on failure, and a raw-socket RESP reader
 * for replies hiredis 0.14 cannot parse (RESP3). Every test binary links harness.c, which also
 * provides main() (exit 77 when the server binary is missing) and dumps the server's log for each
 * failed test. */
#ifndef CRESCENT_TESTS_INTEGRATION_HARNESS_H
#define CRESCENT_TESTS_INTEGRATION_HARNESS_H

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define IT_MSG_MAX 1024 /* size of a failure-message buffer */

/* Options for it_server_start(); zero/NULL fields mean "server default". */
struct it_opts {
    const char *requirepass; /* --requirepass */
    int maxclients;          /* --maxclients */
    int timeout;             /* --timeout (seconds) */
    const char *memory;      /* crescent --memory / redis --maxmemory (e.g. "64mb") */
    const char *unixsocket;  /* --unixsocket path */
    const char *conf;        /* redis.conf-style text, written to a file passed as first arg */
    const char *bind;        /* --bind list (default "127.0.0.1"); the harness connects to the
                                first address ("*"/"0.0.0.0" -> 127.0.0.1, "::" -> ::1) */
};

/* One server process under test. */
struct it_server {
    pid_t pid;      /* child process id, 0 when not running */
    int port;       /* loopback TCP port it listens on */
    char host[64];  /* address the harness connects to (127.0.0.1 unless opts.bind says) */
    char log[512];  /* file receiving the server's stdout and stderr */
    char dir[256];  /* private working directory */
    bool log_owned; /* log file is ours to remove */
};

/* The per-test server and connection set up by it_setup() (used as Criterion .init). */
extern struct it_server it_srv;
extern redisContext *it_c;

bool it_target_is_redis(void);
bool it_target_is_crescent(void);
void it_server_start(struct it_server *s, const struct it_opts *opts);
void it_server_stop(struct it_server *s);
redisContext *it_connect(const struct it_server *s);
void it_close(redisContext *c);
void it_setup(void);
void it_teardown(void);

void it_keep(redisReply *r);
redisReply *it_cmd(redisContext *c, const char *fmt, ...);
redisReply *it_cmdargv(redisContext *c, int argc, const char **argv, const size_t *lens);
const char *it_reply_str(const redisReply *r, char *buf, size_t cap);
/* Value of field name in a RESP2 flat map reply (MC.* replies); fails the test when m is not a
 * flat map or the field is absent. it_field_int / it_field_str also check the value's type. */
const redisReply *it_field(const redisReply *m, const char *name);
long long it_field_int(const redisReply *m, const char *name);
const char *it_field_str(const redisReply *m, const char *name);
void it_sleep_ms(long ms);
long long it_now_ms(void);

bool it_check_status(char *msg, const char *want, redisContext *c, const char *fmt, ...);
bool it_check_int(char *msg, long long want, redisContext *c, const char *fmt, ...);
bool it_check_str(char *msg, const char *want, redisContext *c, const char *fmt, ...);
bool it_check_nil(char *msg, redisContext *c, const char *fmt, ...);
bool it_check_err(char *msg, const char *want, redisContext *c, const char *fmt, ...);
bool it_check_err_prefix(char *msg, const char *want, redisContext *c, const char *fmt, ...);

int it_raw_open(int port);
void it_raw_send(int fd, const char *bytes, size_t len);
char *it_raw_read(int fd, size_t *len);

/* Assertions that run one command and check its reply; on failure they print the command, the
 * expected and the received reply. The reply is freed. */
#define IT_OK(c, ...) IT_STATUS("OK", c, __VA_ARGS__)
#define IT_STATUS(want, c, ...)                                                   \
    do {                                                                          \
        char it_m_[IT_MSG_MAX];                                                   \
        cr_assert(it_check_status(it_m_, (want), (c), __VA_ARGS__), "%s", it_m_); \
    } while (0)
#define IT_INT(want, c, ...)                                                   \
    do {                                                                       \
        char it_m_[IT_MSG_MAX];                                                \
        cr_assert(it_check_int(it_m_, (want), (c), __VA_ARGS__), "%s", it_m_); \
    } while (0)
#define IT_STR(want, c, ...)                                                   \
    do {                                                                       \
        char it_m_[IT_MSG_MAX];                                                \
        cr_assert(it_check_str(it_m_, (want), (c), __VA_ARGS__), "%s", it_m_); \
    } while (0)
#define IT_NIL(c, ...)                                                 \
    do {                                                               \
        char it_m_[IT_MSG_MAX];                                        \
        cr_assert(it_check_nil(it_m_, (c), __VA_ARGS__), "%s", it_m_); \
    } while (0)
#define IT_ERR(want, c, ...)                                                   \
    do {                                                                       \
        char it_m_[IT_MSG_MAX];                                                \
        cr_assert(it_check_err(it_m_, (want), (c), __VA_ARGS__), "%s", it_m_); \
    } while (0)
#define IT_ERR_PREFIX(want, c, ...)                                                   \
    do {                                                                              \
        char it_m_[IT_MSG_MAX];                                                       \
        cr_assert(it_check_err_prefix(it_m_, (want), (c), __VA_ARGS__), "%s", it_m_); \
    } while (0)

/* Asserts that reply r has type t (REDIS_REPLY_*), printing the reply otherwise. */
#define IT_TYPE(r, t)                                                                     \
    do {                                                                                  \
        char it_b_[IT_MSG_MAX];                                                           \
        cr_assert((r) != NULL && (r)->type == (t), "reply type %d expected, got %s", (t), \
                  it_reply_str((r), it_b_, sizeof(it_b_)));                               \
    } while (0)

/* Skips the current test when the target is redis-server (crescent-only behaviour). */
#define IT_CRESCENT_ONLY()                           \
    do {                                             \
        if (it_target_is_redis())                    \
            cr_skip_test("crescent-only behaviour"); \
    } while (0)

#endif
