/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the store client tests: a crescent-master process on a free loopback port that can
 * be killed and restarted on the same port, peer client processes (forked, each a store with a
 * global segment, killed with SIGKILL), and a hiredis connection for checking the master's view
 * (MC.QUERYKEY, MC.SEGMENTS). */
#ifndef CRESCENT_TESTS_STORE_STORE_TEST_UTIL_H
#define CRESCENT_TESTS_STORE_STORE_TEST_UTIL_H

#include "crescent/store.h"

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A master process under test. */
struct st_master {
    pid_t pid;         /* process, 0 when stopped */
    int port;          /* RESP port */
    char addr[64];     /* "127.0.0.1:port" */
    char log[256];     /* its log file */
    const char *extra; /* extra flags, space-separated (copied at start) */
};

/* A forked peer client contributing a segment. */
struct st_peer {
    pid_t pid; /* process */
    int ctl;   /* write end of its control pipe; closing it ends the peer */
    char client_id[33];
    char segment[256]; /* its global segment's name */
};

void st_master_start(struct st_master *m, const char *extra);
void st_master_restart(struct st_master *m);
void st_master_kill(struct st_master *m);
void st_master_stop(struct st_master *m);
void st_peer_start(struct st_peer *p, const struct st_master *m, const char *proto,
                   uint64_t seg_size);
void st_peer_kill(struct st_peer *p);
redisContext *st_redis(const struct st_master *m);
redisReply *st_cmd(redisContext *c, const char *fmt, ...);
const redisReply *st_field(const redisReply *map, const char *name);
int st_replica_segments(redisContext *c, const char *key, char segs[][256], int max);
long long st_segments_used(redisContext *c);
struct crescent_store *st_store(const struct st_master *m, const char *proto, uint64_t seg_size);
void st_fill(void *buf, size_t len, unsigned seed);
long long st_now_ms(void);
int st_free_port(void);
void st_sleep_ms(long ms);
/* True when the log at path holds an AddressSanitizer, LeakSanitizer or UBSan report. */
bool st_log_has_sanitizer_report(const char *path);

/* Asserts (Criterion) that a crescent_store_* call succeeded (returned >= 0), naming the error. */
#define OK(call)                                                                     \
    do {                                                                             \
        int64_t rc_ = (call);                                                        \
        cr_assert(rc_ >= 0, "%s: %s (%s)", #call, crescent_store_err_name((int)rc_), \
                  crescent_store_last_error());                                      \
    } while (0)

/* Asserts that a crescent_store_* call failed with -code. */
#define ERR(code, call)                                                               \
    do {                                                                              \
        int64_t rc_ = (call);                                                         \
        cr_assert_eq(rc_, -(code), "%s: got %lld %s (%s)", #call, (long long)rc_,     \
                     crescent_store_err_name((int)rc_), crescent_store_last_error()); \
    } while (0)

#endif
