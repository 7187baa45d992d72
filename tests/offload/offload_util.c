/* SPDX-License-Identifier: Apache-2.0 */
/* Set-up shared by the SSD-tier tests (see offload_util.h). */
#include "common/fmacros.h"

#include "tests/offload/offload_util.h"

#include "tests/integration/harness.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/*
 * 1 when it_c talks to it_srv's own process (INFO server's process_id). The harness picks a
 * free port before the server listens on it, and a restart that first scans the tier can take
 * seconds on a loaded machine: meanwhile another program may take the port and answer.
 */
static int off_answered_by_ours(void) {
    redisReply *r = redisCommand(it_c, "INFO server");
    long long pid = -1;
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "process_id:");
        if (p)
            pid = strtoll(p + strlen("process_id:"), NULL, 10);
    }
    freeReplyObject(r);
    return pid == (long long)it_srv.pid;
}

/* Public: see offload_util.h. */
void off_server_start(char *dir, size_t dirlen, const char *tmpl, const char *memory,
                      const char *conf_extra) {
    if (it_target_is_redis())
        cr_skip_test("crescent-only: the SSD tier");
    if (!dir[0]) {
        snprintf(dir, dirlen, "%s", tmpl);
        cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    }
    char conf[512];
    snprintf(conf, sizeof(conf), "enable_offload yes\nssd_offload_path %s\n%s", dir, conf_extra);
    struct it_opts o = {.memory = memory, .conf = conf};
    for (int attempt = 1;; attempt++) {
        it_server_start(&it_srv, &o);
        it_c = it_connect(&it_srv);
        if (off_answered_by_ours())
            return;
        cr_assert_lt(attempt, 5, "port %d: another process answered, 5 times", it_srv.port);
        fprintf(stderr, "offload: another process answered on port %d; starting again\n",
                it_srv.port);
        it_close(it_c);
        it_c = NULL;
        it_server_stop(&it_srv);
    }
}

/* Public: see offload_util.h. */
void off_teardown(char *dir) {
    it_teardown();
    if (dir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
        dir[0] = '\0';
    }
}

/* Public: see offload_util.h. */
size_t off_value_len(int i) {
    return 1000 + (size_t)((unsigned)i * 2654435761u % 6001u);
}

/* Public: see offload_util.h. */
size_t off_value_bytes(int i, int gen, size_t n, char *buf) {
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + (uint64_t)gen * 7919u + 1;
    for (size_t k = 0; k < n; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[k] = (char)(x >> 24);
    }
    return n;
}

/* Public: see offload_util.h. */
void off_info_many(redisContext *c, const char *const *fields, long long *out, int n) {
    redisReply *r = redisCommand(c, "INFO everything");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "INFO: %s", r ? "bad reply" : c->errstr);
    for (int k = 0; k < n; k++) {
        char pat[128];
        snprintf(pat, sizeof(pat), "\r\n%s:", fields[k]);
        const char *p = strstr(r->str, pat);
        cr_assert_not_null(p, "INFO has %s", fields[k]);
        out[k] = strtoll(p + strlen(pat), NULL, 10);
    }
    freeReplyObject(r);
}

/* Public: see offload_util.h. */
long long off_info(redisContext *c, const char *field) {
    long long v;
    off_info_many(c, &field, &v, 1);
    return v;
}

/* Public: see offload_util.h. */
void off_wait_queue(redisContext *c) {
    long long deadline = it_now_ms() + 120000, n;
    while ((n = off_info(c, "offload_write_queue_keys")) != 0 && it_now_ms() < deadline)
        it_sleep_ms(20);
    cr_assert_eq(n, 0, "the offload write queue drains (%lld left)", n);
}

/* SIGKILL of it_server; see offload_util.h. */
void off_kill_hard(void) {
    it_close(it_c);
    it_c = NULL;
    kill(it_srv.pid, SIGKILL);
    waitpid(it_srv.pid, NULL, 0);
    it_srv.pid = 0;
    it_server_stop(&it_srv); /* removes the working directory only */
}
