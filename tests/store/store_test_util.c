/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the store client tests (see store_test_util.h). Criterion assertions report
 * failures; every process started here gets SIGKILL when the test process dies. */
#include "common/fmacros.h"

#include "tests/store/store_test_util.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Monotonic milliseconds. */
long long st_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps ms milliseconds. */
void st_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* A free loopback TCP port number (nothing listens on it right now). */
int st_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof(a);
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    cr_assert(getsockname(fd, (struct sockaddr *)&a, &l) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static pid_t st_spawn(struct st_master *m) {
    const char *b = getenv("CRESCENT_BUILD");
    char bin[512], port[16], extra[512];
    snprintf(bin, sizeof(bin), "%s/bin/crescent-master", b != NULL && *b ? b : "build");
    snprintf(port, sizeof(port), "%d", m->port);
    snprintf(extra, sizeof(extra), "%s", m->extra != NULL ? m->extra : "");
    const char *argv[40] = {bin, "--port",   port,  "--bind", "127.0.0.1", "--metrics_port",
                            "0", "--memory", "16mb"};
    int n = 9;
    for (char *save = NULL, *t = strtok_r(extra, " ", &save); t != NULL && n < 38;
         t = strtok_r(NULL, " ", &save)) {
        argv[n++] = t;
    }
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(m->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static bool st_ready(struct st_master *m) {
    long long deadline = st_now_ms() + 10000;
    while (st_now_ms() < deadline) {
        if (waitpid(m->pid, NULL, WNOHANG) == m->pid) {
            m->pid = 0;
            return false;
        }
        struct timeval tv = {0, 200000};
        redisContext *c = redisConnectWithTimeout("127.0.0.1", m->port, tv);
        redisReply *r = c != NULL && !c->err ? redisCommand(c, "PING") : NULL;
        freeReplyObject(r);
        redisFree(c);
        if (r != NULL) {
            return true;
        }
        st_sleep_ms(20);
    }
    return false;
}

/* Starts crescent-master ($CRESCENT_BUILD/bin) with extra flags on a free port. */
void st_master_start(struct st_master *m, const char *extra) {
    memset(m, 0, sizeof(*m));
    m->extra = extra;
    snprintf(m->log, sizeof(m->log), "/tmp/crescent-store-test.%d.log", (int)getpid());
    for (int attempt = 0; attempt < 5; attempt++) {
        m->port = st_free_port();
        m->pid = st_spawn(m);
        if (st_ready(m)) {
            snprintf(m->addr, sizeof(m->addr), "127.0.0.1:%d", m->port);
            return;
        }
        if (m->pid > 0) {
            kill(m->pid, SIGKILL);
            waitpid(m->pid, NULL, 0);
        }
    }
    cr_assert_fail("crescent-master did not start (log %s)", m->log);
}

/* Kills the master with SIGKILL (no clean shutdown). */
void st_master_kill(struct st_master *m) {
    if (m->pid > 0) {
        kill(m->pid, SIGKILL);
        waitpid(m->pid, NULL, 0);
        m->pid = 0;
    }
}

/* Starts the master again on the same port (it starts empty). */
void st_master_restart(struct st_master *m) {
    for (int attempt = 0; attempt < 50; attempt++) {
        m->pid = st_spawn(m);
        if (st_ready(m)) {
            return;
        }
        st_sleep_ms(100); /* the port may linger briefly */
    }
    cr_assert_fail("crescent-master did not restart on port %d", m->port);
}

bool st_log_has_sanitizer_report(const char *path) {
    FILE *f = fopen(path, "r");
    char line[1024];
    bool bad = false;
    while (f != NULL && !bad && fgets(line, sizeof(line), f) != NULL) {
        bad = strstr(line, "ERROR: AddressSanitizer") != NULL ||
              strstr(line, "ERROR: LeakSanitizer") != NULL || strstr(line, "runtime error:");
    }
    if (f != NULL) {
        fclose(f);
    }
    return bad;
}

/* Stops the master (SIGTERM, SIGKILL after 5 s), fails the test when its log holds a sanitizer
 * report, and removes the log. */
void st_master_stop(struct st_master *m) {
    if (m->pid > 0) {
        kill(m->pid, SIGTERM);
        long long deadline = st_now_ms() + 5000;
        while (waitpid(m->pid, NULL, WNOHANG) == 0 && st_now_ms() < deadline) {
            st_sleep_ms(10);
        }
        st_master_kill(m);
    }
    bool bad = st_log_has_sanitizer_report(m->log);
    if (bad) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "cat %s >&2", m->log);
        cr_assert(system(cmd) >= 0);
    }
    unlink(m->log);
    cr_assert(!bad, "crescent-master's log holds a sanitizer report (above)");
}

static void st_peer_main(const struct st_master *m, const char *proto, uint64_t seg_size, int out,
                         int ctl) {
    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.protocol = proto;
    cfg.global_segment_size = seg_size;
    cfg.local_buffer_size = 1 << 20;
    struct crescent_store *st;
    int rc = crescent_store_create(m->addr, &cfg, &st);
    char line[512] = "";
    if (rc == 0) {
        char seg[256] = "";
        crescent_store_segment_name(st, 0, seg, sizeof(seg));
        snprintf(line, sizeof(line), "%s %s\n", crescent_store_client_id(st), seg);
    } else {
        snprintf(line, sizeof(line), "error %d %s\n", rc, crescent_store_last_error());
    }
    if (write(out, line, strlen(line)) < 0) {
        _exit(1);
    }
    char c;
    while (read(ctl, &c, 1) > 0) {
    }
    crescent_store_destroy(st);
    _exit(0);
}

/* Forks a peer client with a seg_size-byte global segment over proto and waits until it is
 * mounted. */
void st_peer_start(struct st_peer *p, const struct st_master *m, const char *proto,
                   uint64_t seg_size) {
    int up[2], ctl[2];
    cr_assert(pipe(up) == 0 && pipe(ctl) == 0);
    memset(p, 0, sizeof(*p));
    p->pid = fork();
    cr_assert(p->pid >= 0);
    if (p->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(up[0]);
        close(ctl[1]);
        st_peer_main(m, proto, seg_size, up[1], ctl[0]);
    }
    close(up[1]);
    close(ctl[0]);
    p->ctl = ctl[1];
    char line[512] = "";
    ssize_t n = read(up[0], line, sizeof(line) - 1);
    close(up[0]);
    cr_assert(n > 0, "peer did not report");
    line[n] = '\0';
    cr_assert(sscanf(line, "%32s %255s", p->client_id, p->segment) == 2 &&
                  strcmp(p->client_id, "error") != 0,
              "peer failed: %s", line);
}

/* Kills a peer with SIGKILL (no unmount). Safe on a dead peer. */
void st_peer_kill(struct st_peer *p) {
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        close(p->ctl);
        p->pid = 0;
    }
}

/* A hiredis connection to the master. */
redisContext *st_redis(const struct st_master *m) {
    redisContext *c = redisConnect("127.0.0.1", m->port);
    cr_assert(c != NULL && !c->err);
    return c;
}

/* Runs a command; the caller frees the reply. Fails the test on a connection error. */
redisReply *st_cmd(redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    cr_assert(r != NULL, "command %s: %s", fmt, c->errstr);
    return r;
}

/* Field of a RESP2 flat map. */
const redisReply *st_field(const redisReply *map, const char *name) {
    if (map == NULL || map->type != REDIS_REPLY_ARRAY) {
        return NULL;
    }
    for (size_t i = 0; i + 1 < map->elements; i += 2) {
        if (map->element[i]->type == REDIS_REPLY_STRING &&
            strcmp(map->element[i]->str, name) == 0) {
            return map->element[i + 1];
        }
    }
    return NULL;
}

/* The segments holding key's replicas (MC.QUERYKEY); -1 when the key is missing. */
int st_replica_segments(redisContext *c, const char *key, char segs[][256], int max) {
    redisReply *r = st_cmd(c, "MC.QUERYKEY %s", key);
    if (r->type == REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        return -1;
    }
    const redisReply *reps = st_field(r, "replicas");
    cr_assert(reps != NULL && reps->type == REDIS_REPLY_ARRAY);
    int n = 0;
    for (size_t i = 0; i < reps->elements && n < max; i++, n++) {
        const redisReply *s = st_field(reps->element[i], "segment");
        snprintf(segs[n], 256, "%s", s != NULL ? s->str : "?");
    }
    freeReplyObject(r);
    return n;
}

/* Sum of `used` over MC.SEGMENTS. */
long long st_segments_used(redisContext *c) {
    redisReply *r = st_cmd(c, "MC.SEGMENTS");
    cr_assert(r->type == REDIS_REPLY_ARRAY);
    long long used = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *u = st_field(r->element[i], "used");
        cr_assert(u != NULL && u->type == REDIS_REPLY_INTEGER);
        used += u->integer;
    }
    freeReplyObject(r);
    return used;
}

/* A store in this process; fails the test when it cannot be created. */
struct crescent_store *st_store(const struct st_master *m, const char *proto, uint64_t seg_size) {
    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.protocol = proto;
    cfg.global_segment_size = seg_size;
    struct crescent_store *st = NULL;
    int rc = crescent_store_create(m->addr, &cfg, &st);
    cr_assert(rc == 0, "crescent_store_create: %s (%s)", crescent_store_err_name(rc),
              crescent_store_last_error());
    return st;
}

/* Fills buf with a pattern that depends on seed and position. */
void st_fill(void *buf, size_t len, unsigned seed) {
    unsigned char *p = buf;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}
