/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the crescent-client tests (see daemon_test_util.h): daemon processes started on a
 * free port and stopped with SIGTERM or SIGKILL, and dummy client stores. */
#include "common/fmacros.h"

#include "tests/store/daemon_test_util.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *st_bin_dir(void) {
    const char *b = getenv("CRESCENT_BUILD");
    return b != NULL && *b ? b : "build";
}

/* A free loopback TCP port number (also used to name a dummy socket): st_free_port(). */
int st_daemon_free_port(void) {
    return st_free_port();
}

/* Runs crescent-client with argv (after the program name); stdout to *out_fd (a pipe read end)
 * when out_fd is not NULL, stderr to log. */
pid_t st_client_spawn(const char *const *args, int *out_fd, const char *log) {
    char bin[512];
    snprintf(bin, sizeof(bin), "%s/bin/crescent-client", st_bin_dir());
    const char *argv[48] = {bin};
    int n = 1;
    for (; args[n - 1] != NULL && n < 47; n++) {
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;
    int p[2];
    cr_assert(pipe(p) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(out_fd != NULL || fd < 0 ? p[1] : fd, 1);
        if (fd >= 0) {
            dup2(fd, 2);
        }
        close(p[0]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    if (out_fd != NULL) {
        *out_fd = p[0];
    } else { /* stdout goes nowhere: --help must not die of SIGPIPE */
        close(p[0]);
    }
    return pid;
}

/* Extra arguments every st_daemon_start_host() call adds (test_ssd.c); NULL = none. */
const char *const *st_daemon_extra;

/* st_daemon_start_host with more arguments (extra, NULL-terminated, at most 8; may be NULL);
 * keeps the readiness line in d->ready. */
static void st_daemon_start_all(struct st_daemon *d, const struct st_master *m, int port_no,
                                const char *host, const char *proto, const char *seg,
                                const char *ttl, const char *grace_ms, const char *const *extra) {
    memset(d, 0, sizeof(*d));
    for (int attempt = 0; attempt < 5; attempt++) {
        d->port = port_no != 0 ? port_no : st_daemon_free_port();
        snprintf(d->log, sizeof(d->log), "/tmp/crescent-daemon-test.%d.%d.log", (int)getpid(),
                 d->port);
        char port[16];
        snprintf(port, sizeof(port), "%d", d->port);
        const char *args[27] = {"--master",
                                m->addr,
                                "--protocol",
                                proto,
                                "--host",
                                host != NULL ? host : "127.0.0.1",
                                "--port",
                                port,
                                "--global_segment_size",
                                seg,
                                "--local_buffer_size",
                                "4mb",
                                "--client_live_ttl_sec",
                                ttl,
                                "--unmount_grace_ms",
                                grace_ms,
                                "--log-level",
                                "verbose"}; /* the rest: NULL */
        for (size_t k = 0, at = 18; extra != NULL && extra[k] != NULL && at + 1 < 27; k++) {
            args[at++] = extra[k];
        }
        int out;
        d->pid = st_client_spawn(args, &out, d->log);
        char line[1024] = "";
        size_t len = 0;
        long long deadline = st_now_ms() + 30000;
        while (strchr(line, '\n') == NULL && st_now_ms() < deadline && len + 1 < sizeof(line)) {
            struct pollfd p = {out, POLLIN, 0};
            if (poll(&p, 1, 200) > 0) {
                ssize_t n = read(out, line + len, sizeof(line) - 1 - len);
                if (n <= 0) {
                    break;
                }
                len += (size_t)n;
                line[len] = '\0';
            }
        }
        close(out);
        if (sscanf(line, "crescent-client ready: client %32s segment %255s", d->client_id,
                   d->segment) == 2) {
            snprintf(d->ready, sizeof(d->ready), "%s", line);
            return;
        }
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
    }
    cr_assert_fail("crescent-client did not become ready (log %s)", d->log);
}

/* Starts a daemon over proto with a seg-byte segment on --port port_no (0: a free one), host
 * identity host (--host; NULL = 127.0.0.1), dummy TTL ttl seconds, graceful unmount grace_ms;
 * waits for its readiness line. */
void st_daemon_start_host(struct st_daemon *d, const struct st_master *m, int port_no,
                          const char *host, const char *proto, const char *seg, const char *ttl,
                          const char *grace_ms) {
    st_daemon_start_all(d, m, port_no, host, proto, seg, ttl, grace_ms, st_daemon_extra);
}

/* st_daemon_start on a free port (TTL 10 s, grace 0) with up to 8 more arguments (extra,
 * NULL-terminated; NULL for none). */
void st_daemon_start_extra(struct st_daemon *d, const struct st_master *m, const char *proto,
                           const char *seg, const char *const *extra) {
    st_daemon_start_all(d, m, 0, NULL, proto, seg, "10", "0", extra);
}

/* st_daemon_start_host on 127.0.0.1. */
void st_daemon_start(struct st_daemon *d, const struct st_master *m, int port_no, const char *proto,
                     const char *seg, const char *ttl, const char *grace_ms) {
    st_daemon_start_host(d, m, port_no, NULL, proto, seg, ttl, grace_ms);
}

/* SIGTERM, waits for the exit; returns the exit status (-1 if it did not exit normally). Fails
 * the test on a sanitizer report in the daemon's log. */
int st_daemon_stop(struct st_daemon *d) {
    int status = 0, code = -1;
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        long long deadline = st_now_ms() + 30000;
        pid_t w;
        while ((w = waitpid(d->pid, &status, WNOHANG)) == 0 && st_now_ms() < deadline) {
            st_sleep_ms(20);
        }
        if (w == 0) {
            kill(d->pid, SIGKILL);
            waitpid(d->pid, &status, 0);
        } else if (WIFEXITED(status)) {
            code = WEXITSTATUS(status);
        }
        d->pid = 0;
    }
    bool bad = st_log_has_sanitizer_report(d->log);
    if (bad) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "cat %s >&2", d->log);
        cr_assert(system(cmd) >= 0);
    }
    unlink(d->log);
    cr_assert(!bad, "crescent-client's log holds a sanitizer report (above)");
    return code;
}

/* Kills the daemon with SIGKILL (no unmount) and removes its log. Safe on a dead one. */
void st_daemon_kill(struct st_daemon *d) {
    if (d->pid > 0) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        d->pid = 0;
        unlink(d->log);
    }
}

/* A dummy client store of daemon d with a pool-byte pool; fails the test when it cannot be
 * created. */
struct crescent_store *st_dummy(const struct st_daemon *d, size_t pool) {
    char port[16];
    snprintf(port, sizeof(port), "%d", d->port);
    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.daemon = port;
    cfg.local_buffer_size = pool;
    struct crescent_store *st = NULL;
    int r = crescent_store_create(NULL, &cfg, &st);
    cr_assert(r == 0, "dummy create: %s (%s)", crescent_store_err_name(r),
              crescent_store_last_error());
    return st;
}
