/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the crescent-client tests: a crescent-client daemon process on a free port (its
 * readiness line parsed), stopped with SIGTERM (exit status returned, its log checked for
 * sanitizer reports) or SIGKILL, and dummy client stores created against it. Criterion
 * assertions report failures; every process started here gets SIGKILL when the test dies. */
#ifndef CRESCENT_TESTS_STORE_DAEMON_TEST_UTIL_H
#define CRESCENT_TESTS_STORE_DAEMON_TEST_UTIL_H

#include "crescent/store.h"
#include "tests/store/store_test_util.h"

#include <stdbool.h>
#include <sys/types.h>

/* A crescent-client process under test. */
struct st_daemon {
    pid_t pid;
    int port;           /* --port: the dummy socket @crescent_client_<port>.sock */
    char client_id[33]; /* from the readiness line */
    char segment[256];
    char log[256];
    char ready[1024]; /* the readiness line */
};

/* Extra arguments (NULL-terminated, at most 4) appended to the next daemons' command lines;
 * NULL = none. */
extern const char *const *st_daemon_extra;

int st_daemon_free_port(void);
pid_t st_client_spawn(const char *const *args, int *out_fd, const char *log);
void st_daemon_start(struct st_daemon *d, const struct st_master *m, int port_no, const char *proto,
                     const char *seg, const char *ttl, const char *grace_ms);
void st_daemon_start_host(struct st_daemon *d, const struct st_master *m, int port_no,
                          const char *host, const char *proto, const char *seg, const char *ttl,
                          const char *grace_ms);
void st_daemon_start_extra(struct st_daemon *d, const struct st_master *m, const char *proto,
                           const char *seg, const char *const *extra);
int st_daemon_stop(struct st_daemon *d);
void st_daemon_kill(struct st_daemon *d);
struct crescent_store *st_dummy(const struct st_daemon *d, size_t pool);

#endif
