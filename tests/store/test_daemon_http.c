/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-client's admin HTTP server (--enable_http_server) against real processes: /metrics
 * passes promtool check metrics and its transfer, dummy and segment figures move by exactly
 * the bytes a dummy client wrote and read; /health answers 200 with the master up and 503 (master
 * unreachable) after it is killed, 200 after its restart, 503 "stopping" between SIGTERM and
 * exit; scrapes under a dummy load parse and never go back; bad requests get 400 / 404 / 405 and
 * the daemon goes on;
 * --http_port 0 and the default (off) open no TCP listener; a busy port is logged and the daemon
 * serves without the admin server; SIGTERM with the server running exits 0.
 */
#include "common/fmacros.h"

#include "crescent/store.h"
#include "tests/store/daemon_test_util.h"
#include "tests/store/store_test_util.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1u << 20)

static struct st_master master;

static void setup(void) {
    st_master_start(&master, "--client_live_ttl_sec 3");
}

static void teardown(void) {
    st_master_stop(&master);
}

TestSuite(daemon_http, .init = setup, .fini = teardown, .timeout = 180);

/* ---- a small HTTP client: raw requests, the status and body of the answer ---- */

struct reply {
    int status;
    char head[2048];
    char *body; /* malloc'd, NUL-terminated */
};

/* Sends raw bytes to 127.0.0.1:port and reads the answer until the server closes. */
static void http_raw(int port, const char *req, struct reply *out) {
    memset(out, 0, sizeof(*out));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect to :%d", port);
    cr_assert(send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t n;
    bool head = strncmp(req, "HEAD ", 5) == 0;
    while ((n = recv(fd, buf + len, cap - len - 1, 0)) > 0) {
        len += (size_t)n;
        buf[len] = '\0';
        if (cap - len < 4096) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        /* Done when Content-Length bytes follow the headers (the server may keep the
         * connection open a while after an error answer). */
        const char *eoh = strstr(buf, "\r\n\r\n"), *cl = strcasestr(buf, "\r\nContent-Length:");
        if (eoh != NULL && cl != NULL && cl < eoh &&
            (head || len - (size_t)(eoh + 4 - buf) >= strtoull(cl + 17, NULL, 10))) {
            break;
        }
    }
    close(fd);
    buf[len] = '\0';
    if (len == 0) { /* closed without an answer */
        out->body = buf;
        return;
    }
    cr_assert(sscanf(buf, "HTTP/1.%*d %d", &out->status) == 1, "no status line: '%.200s'", buf);
    char *end = strstr(buf, "\r\n\r\n");
    cr_assert_not_null(end, "no end of headers");
    snprintf(out->head, sizeof(out->head), "%.*s", (int)(end - buf), buf);
    out->body = strdup(end + 4);
    free(buf);
}

static void http_get(int port, const char *path, struct reply *out) {
    char req[512];
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
             path);
    http_raw(port, req, out);
}

/* The value of the sample "name" (labels included, as written) in an exposition; -1 if absent. */
static double sample(const char *text, const char *name) {
    size_t nl = strlen(name);
    for (const char *p = text; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, name, nl) == 0 && p[nl] == ' ') {
            return strtod(p + nl + 1, NULL);
        }
    }
    return -1;
}

/* promtool check metrics on text: its exit status. */
static int promtool(const char *text) {
    char path[128], cmd[300];
    snprintf(path, sizeof(path), "/tmp/crescent-dhttp.%d.prom", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "promtool check metrics < %s >&2", path);
    int rc = system(cmd);
    unlink(path);
    return rc;
}

/* Scrapes /metrics (200, the Prometheus content type, promtool clean). */
static char *scrape(int port) {
    struct reply r;
    http_get(port, "/metrics", &r);
    cr_assert_eq(r.status, 200, "/metrics: %d %s", r.status, r.body);
    cr_assert(strstr(r.head, "text/plain; version=0.0.4") != NULL, "content type: %s", r.head);
    cr_assert_eq(promtool(r.body), 0, "promtool check metrics refused:\n%s", r.body);
    return r.body;
}

static int ready_port(const struct st_daemon *d) {
    const char *p = strstr(d->ready, ", admin http 127.0.0.1:");
    cr_assert_not_null(p, "no admin http in the readiness line: %s", d->ready);
    return atoi(p + strlen(", admin http 127.0.0.1:"));
}

static void start_http(struct st_daemon *d, const char *seg, int port) {
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    const char *extra[] = {
        "--enable_http_server", "--http_host", "127.0.0.1", "--http_port", ps, NULL};
    st_daemon_start_extra(d, &master, "tcp", seg, extra);
}

static bool file_has(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    char line[1024];
    bool found = false;
    while (f != NULL && !found && fgets(line, sizeof(line), f) != NULL) {
        found = strstr(line, needle) != NULL;
    }
    if (f != NULL) {
        fclose(f);
    }
    return found;
}

/* TCP sockets of process pid in LISTEN state (/proc/net/tcp{,6} inodes owned by its fds). */
static int listeners(pid_t pid) {
    char inodes[64][48];
    int ni = 0;
    const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (int f = 0; f < 2; f++) {
        FILE *fp = fopen(files[f], "r");
        char line[512];
        while (fp != NULL && fgets(line, sizeof(line), fp) != NULL) {
            char st[8], ino[32];
            if (sscanf(line, " %*s %*s %*s %7s %*s %*s %*s %*s %*s %31s", st, ino) == 2 &&
                strcmp(st, "0A") == 0 && ni < 64) {
                snprintf(inodes[ni++], sizeof(inodes[0]), "socket:[%s]", ino);
            }
        }
        if (fp != NULL) {
            fclose(fp);
        }
    }
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        char p[400], target[64];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        ssize_t l = readlink(p, target, sizeof(target) - 1);
        if (l <= 0) {
            continue;
        }
        target[l] = '\0';
        for (int i = 0; i < ni; i++) {
            n += strcmp(target, inodes[i]) == 0;
        }
    }
    closedir(d);
    return n;
}

/* ---- tests ---- */

/* /metrics and /health of a daemon whose dummy writes to its own segment (local memcpy) and
 * to a second daemon's (tcp); then the master dies. */
Test(daemon_http, metrics_move_and_health_follows_the_master) {
    struct st_daemon a, b;
    start_http(&a, "16mb", st_daemon_free_port());
    int port = ready_port(&a);
    st_daemon_start_extra(&b, &master, "tcp", "16mb", NULL);
    cr_assert(file_has(a.log, "admin HTTP on 127.0.0.1:"), "no admin HTTP line in the log");

    struct reply h;
    http_get(port, "/health", &h);
    cr_assert_eq(h.status, 200, "/health: %d %s", h.status, h.body);
    cr_assert(strstr(h.head, "application/json") != NULL);
    cr_assert(strstr(h.body, "\"state\":\"serving\",\"ready\":true") != NULL, "%s", h.body);
    cr_assert(strstr(h.body, "\"master_connected\":true,\"segments_mounted\":true") != NULL, "%s",
              h.body);
    cr_assert(strstr(h.body, a.segment) != NULL && strstr(h.body, a.client_id) != NULL, "%s",
              h.body);
    free(h.body);

    char *m0 = scrape(port);
    char name[512];
    snprintf(name, sizeof(name), "crescent_client_segment_size_bytes{segment=\"%s\"}", a.segment);
    cr_assert_eq(sample(m0, name), 16.0 * MIB, "%s", m0);
    snprintf(name, sizeof(name), "crescent_client_segment_used_bytes{segment=\"%s\"}", a.segment);
    cr_assert_eq(sample(m0, name), 0);
    cr_assert_eq(sample(m0, "crescent_client_master_connected"), 1);
    cr_assert_eq(sample(m0, "crescent_client_dummies"), 0);
    cr_assert_eq(sample(m0, "crescent_client_transfer_write_bytes_total{transport=\"local\"}"), 0);
    cr_assert_eq(sample(m0, "crescent_client_transfer_write_bytes_total{transport=\"tcp\"}"), 0);
    free(m0);

    /* A dummy of a: 1 MiB + 3 onto a's segment, 2 MiB + 7 onto b's; both read back. */
    struct crescent_store *du = st_dummy(&a, 8 * MIB);
    char *pool = crescent_store_dummy_pool(du, NULL);
    const char *on_a[] = {a.segment}, *on_b[] = {b.segment};
    struct crescent_store_replicate_config ra = {
        .replica_num = 1, .preferred_segments = on_a, .n_preferred_segments = 1};
    struct crescent_store_replicate_config rb = ra;
    rb.preferred_segments = on_b;
    size_t la = MIB + 3, lb = 2 * MIB + 7;
    st_fill(pool, la + lb, 5);
    OK(crescent_store_put_from(du, "on-a", pool, la, &ra));
    OK(crescent_store_put_from(du, "on-b", pool + la, lb, &rb));
    cr_assert_eq(crescent_store_get_into(du, "on-a", pool + 4 * MIB, 2 * MIB), (int64_t)la);
    cr_assert_eq(crescent_store_get_into(du, "on-b", pool + 4 * MIB, 3 * MIB), (int64_t)lb);

    char *m1 = scrape(port);
    cr_assert_eq(sample(m1, "crescent_client_transfer_write_bytes_total{transport=\"local\"}"),
                 (double)la, "%s", m1);
    cr_assert_eq(sample(m1, "crescent_client_transfer_write_bytes_total{transport=\"tcp\"}"),
                 (double)lb);
    cr_assert_eq(sample(m1, "crescent_client_transfer_read_bytes_total{transport=\"local\"}"),
                 (double)la);
    cr_assert_eq(sample(m1, "crescent_client_transfer_read_bytes_total{transport=\"tcp\"}"),
                 (double)lb);
    cr_assert_geq(
        sample(m1, "crescent_client_transfer_write_duration_seconds_count{transport=\"tcp\"}"), 1);
    cr_assert_geq(
        sample(m1, "crescent_client_transfer_read_duration_seconds_count{transport=\"local\"}"), 1);
    cr_assert_gt(
        sample(m1, "crescent_client_transfer_write_duration_seconds_sum{transport=\"tcp\"}"), 0);
    cr_assert_eq(sample(m1, "crescent_client_dummy_zero_copy_bytes_total"), 2.0 * (la + lb));
    cr_assert_eq(sample(m1, "crescent_client_dummy_copied_bytes_total"), 0);
    cr_assert_eq(sample(m1, "crescent_client_staging_bytes_total"), 0);
    cr_assert_eq(sample(m1, "crescent_client_dummies"), 1);
    cr_assert_geq(sample(m1, "crescent_client_dummy_requests_total"), 5);
    cr_assert_eq(sample(m1, name), (double)la, "used bytes of %s:\n%s", a.segment, m1);
    free(m1);

    /* The copying call of a dummy is counted as copied, and staged for a remote replica. */
    OK(crescent_store_put(du, "copied", "0123456789", 10, &rb));
    char *m2 = scrape(port);
    cr_assert_eq(sample(m2, "crescent_client_dummy_copied_bytes_total"), 10);
    cr_assert_eq(sample(m2, "crescent_client_staging_bytes_total"), 10);
    free(m2);

    struct reply s;
    http_get(port, "/metrics/summary", &s);
    cr_assert_eq(s.status, 200);
    cr_assert(strstr(s.body, "transfer tcp: read 2097159 bytes") != NULL, "%s", s.body);
    free(s.body);
    crescent_store_destroy(du);
    st_daemon_kill(&b);

    /* The master dies: /health turns 503 within the ping period, /metrics still parses. */
    st_master_kill(&master);
    long long deadline = st_now_ms() + 15000;
    do {
        st_sleep_ms(200);
        http_get(port, "/health", &h);
        if (h.status != 503) {
            free(h.body);
        }
    } while (h.status != 503 && st_now_ms() < deadline);
    cr_assert_eq(h.status, 503, "/health stayed %d with the master dead", h.status);
    cr_assert(strstr(h.body, "\"ready\":false") != NULL, "%s", h.body);
    cr_assert(strstr(h.body, "\"master_connected\":false,\"segments_mounted\":false") != NULL, "%s",
              h.body);
    cr_assert(strstr(h.body, "\"status\":\"UNKNOWN\"") != NULL, "%s", h.body);
    free(h.body);
    char *m3 = scrape(port);
    cr_assert_eq(sample(m3, "crescent_client_master_connected"), 0);
    cr_assert_eq(sample(m3, name), -1, "used bytes reported with the master dead");
    free(m3);

    /* The master is back: the daemon remounts and /health turns 200 again. */
    st_master_restart(&master);
    deadline = st_now_ms() + 15000;
    do {
        st_sleep_ms(200);
        http_get(port, "/health", &h);
        if (h.status != 200) {
            free(h.body);
        }
    } while (h.status != 200 && st_now_ms() < deadline);
    cr_assert_eq(h.status, 200, "/health stayed %d after the master came back", h.status);
    free(h.body);
    cr_assert_eq(st_daemon_stop(&a), 0);
}

/* Four dummy threads put and get 256 KiB objects while /metrics is scraped: every scrape
 * parses, and every counter of one scrape is at least its value in the previous one. */
struct load {
    struct crescent_store *du;
    char *buf; /* this thread's quarter of the pool */
    int id;
    bool *stop;
    int rounds;
};

static void *load_main(void *arg) {
    struct load *l = arg;
    char key[32];
    while (!__atomic_load_n(l->stop, __ATOMIC_RELAXED)) {
        snprintf(key, sizeof(key), "load-%d-%d", l->id, l->rounds % 8);
        if (crescent_store_upsert_from(l->du, key, l->buf, 256 << 10, NULL) < 0 ||
            crescent_store_get_into(l->du, key, l->buf + (512 << 10), 512 << 10) != 256 << 10) {
            break;
        }
        l->rounds++;
    }
    return NULL;
}

static const char *const counters[] = {
    "crescent_client_transfer_write_bytes_total{transport=\"local\"}",
    "crescent_client_transfer_read_bytes_total{transport=\"local\"}",
    "crescent_client_transfer_write_duration_seconds_count{transport=\"local\"}",
    "crescent_client_dummy_zero_copy_bytes_total",
    "crescent_client_dummy_requests_total",
};

Test(daemon_http, scrapes_under_load) {
    struct st_daemon a;
    start_http(&a, "16mb", st_daemon_free_port());
    int port = ready_port(&a);
    struct crescent_store *du = st_dummy(&a, 4 * MIB);
    char *pool = crescent_store_dummy_pool(du, NULL);
    bool stop = false;
    struct load l[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        l[i] = (struct load){du, pool + (size_t)i * MIB, i, &stop, 0};
        st_fill(l[i].buf, 256 << 10, (unsigned)i);
        cr_assert_eq(pthread_create(&t[i], NULL, load_main, &l[i]), 0);
    }
    double prev[5] = {0};
    for (int k = 0; k < 10; k++) {
        char *m = scrape(port);
        for (int c = 0; c < 5; c++) {
            double v = sample(m, counters[c]);
            cr_assert_geq(v, prev[c], "%s went back from %g to %g", counters[c], prev[c], v);
            prev[c] = v;
        }
        free(m);
    }
    __atomic_store_n(&stop, true, __ATOMIC_RELAXED);
    int rounds = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        rounds += l[i].rounds;
    }
    cr_assert_gt(rounds, 0, "no load ran");
    char *m = scrape(port);
    cr_assert_geq(sample(m, counters[3]), 2.0 * rounds * (256 << 10), "%s", m);
    free(m);
    crescent_store_destroy(du);
    cr_assert_eq(st_daemon_stop(&a), 0);
}

/* From SIGTERM until the daemon exits, /health answers 503 with state "stopping": a segment
 * holding a value keeps the graceful unmount waiting for --unmount_grace_ms. */
Test(daemon_http, health_is_503_while_stopping) {
    struct st_daemon a;
    int hp = st_daemon_free_port();
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", hp);
    const char *extra[] = {"--enable_http_server", "--http_host", "127.0.0.1", "--http_port", ps,
                           "--unmount_grace_ms",   "4000",        NULL};
    st_daemon_start_extra(&a, &master, "tcp", "4mb", extra);
    struct crescent_store *du = st_dummy(&a, MIB);
    const char *on_a[] = {a.segment};
    struct crescent_store_replicate_config ra = {
        .replica_num = 1, .preferred_segments = on_a, .n_preferred_segments = 1};
    OK(crescent_store_put(du, "keeps-it-mounted", "v", 1, &ra));
    crescent_store_destroy(du);
    kill(a.pid, SIGTERM);
    struct reply r = {0};
    bool stopping = false;
    long long deadline = st_now_ms() + 3000;
    while (!stopping && st_now_ms() < deadline) {
        http_get(hp, "/health", &r);
        stopping = r.status == 503 && strstr(r.body, "\"state\":\"stopping\"") != NULL;
        if (!stopping) {
            free(r.body);
            st_sleep_ms(50);
        }
    }
    cr_assert(stopping, "no 503 stopping after SIGTERM");
    free(r.body);
    a.pid = -a.pid; /* st_daemon_stop would signal again; wait here */
    int status;
    cr_assert_eq(waitpid(-a.pid, &status, 0), -a.pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    a.pid = 0;
    cr_assert_eq(st_daemon_stop(&a), -1); /* checks the log for sanitizer reports */
}

/* Bad requests are answered and the daemon goes on serving. */
Test(daemon_http, bad_requests) {
    struct st_daemon a;
    start_http(&a, "4mb", st_daemon_free_port());
    int port = ready_port(&a);
    struct reply r;
    http_raw(port, "GARBAGE\r\n\r\n", &r); /* libmicrohttpd closes without an answer */
    cr_assert(r.status == 0 || r.status == 400, "a one-word request line: %d", r.status);
    free(r.body);
    http_raw(port, "GET /health\r\n\r\n", &r);
    cr_assert_eq(r.status, 400, "no HTTP version: %d", r.status);
    free(r.body);
    http_raw(port, "GET /health HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", &r);
    cr_assert_eq(r.status, 400, "a header line without a colon: %d", r.status);
    free(r.body);
    http_raw(port, "GET /health HTTP/7.1\r\nHost: x\r\n\r\n", &r);
    cr_assert_eq(r.status, 505, "HTTP/7.1: %d", r.status);
    free(r.body);
    http_get(port, "/metrics?debug=1", &r);
    cr_assert_eq(r.status, 400);
    cr_assert(strstr(r.body, "\"error\":\"INVALID_PARAMS\"") != NULL, "%s", r.body);
    free(r.body);
    http_get(port, "/nope", &r);
    cr_assert_eq(r.status, 404);
    free(r.body);
    http_raw(port,
             "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"
             "abc",
             &r);
    cr_assert_eq(r.status, 405);
    free(r.body);
    http_raw(port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &r);
    cr_assert_eq(r.status, 200);
    free(r.body);
    char huge[16384];
    memset(huge, 'a', sizeof(huge));
    memcpy(huge, "GET /", 5);
    snprintf(huge + sizeof(huge) - 40, 40, " HTTP/1.1\r\nHost: x\r\n\r\n");
    http_raw(port, huge, &r);
    cr_assert(r.status == 414 || r.status == 400 || r.status == 404, "long URL: %d", r.status);
    free(r.body);
    http_get(port, "/health", &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    free(r.body);
    cr_assert_eq(st_daemon_stop(&a), 0);
}

/* Off by default and with --http_port 0: no TCP listener beyond the transfer engine's; a busy
 * port is logged and the daemon serves its dummies anyway. */
Test(daemon_http, off_port_zero_and_busy_port) {
    struct st_daemon plain, zero, on;
    st_daemon_start_extra(&plain, &master, "tcp", "4mb", NULL);
    const char *z[] = {"--enable_http_server", "yes", "--http_port", "0", NULL};
    st_daemon_start_extra(&zero, &master, "tcp", "4mb", z);
    start_http(&on, "4mb", st_daemon_free_port());
    cr_assert(strstr(plain.ready, "admin http") == NULL, "%s", plain.ready);
    cr_assert(strstr(zero.ready, "admin http") == NULL, "%s", zero.ready);
    int base = listeners(plain.pid);
    cr_assert_geq(base, 1, "the transfer listener");
    cr_assert_eq(listeners(zero.pid), base, "--http_port 0 opened a listener");
    cr_assert_eq(listeners(on.pid), base + 1, "the admin server's listener");
    cr_assert(!file_has(zero.log, "admin HTTP"));

    /* on's port is taken: a second daemon says so and serves dummies without the server. */
    struct st_daemon busy;
    int port = ready_port(&on);
    start_http(&busy, "4mb", port);
    cr_assert(strstr(busy.ready, "admin http") == NULL, "%s", busy.ready);
    char want[128];
    snprintf(want, sizeof(want),
             "admin HTTP server not started: cannot listen on 127.0.0.1:%d (Address already in "
             "use)",
             port);
    cr_assert(file_has(busy.log, want), "no warning in %s", busy.log);
    struct crescent_store *du = st_dummy(&busy, MIB);
    OK(crescent_store_put(du, "still-serving", "yes", 3, NULL));
    crescent_store_destroy(du);
    cr_assert_eq(listeners(busy.pid), base);

    /* Mooncake's environment variable turns it on; the command line wins over it. */
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", st_daemon_free_port());
    setenv("MOONCAKE_ENABLE_CLIENT_HTTP_SERVER", "true", 1);
    const char *env_on[] = {"--http_host", "127.0.0.1", "--http_port", ps, NULL};
    struct st_daemon e;
    st_daemon_start_extra(&e, &master, "tcp", "4mb", env_on);
    unsetenv("MOONCAKE_ENABLE_CLIENT_HTTP_SERVER");
    cr_assert_eq(ready_port(&e), atoi(ps));
    cr_assert_eq(st_daemon_stop(&e), 0);
    const char *off[] = {"--enable_http_server", "false", "--http_port", "1", NULL};
    struct st_daemon f;
    st_daemon_start_extra(&f, &master, "tcp", "4mb", off);
    cr_assert(strstr(f.ready, "admin http") == NULL);
    cr_assert_eq(st_daemon_stop(&f), 0);
    cr_assert_eq(st_daemon_stop(&busy), 0);
    cr_assert_eq(st_daemon_stop(&on), 0);
    cr_assert_eq(st_daemon_stop(&zero), 0);
    cr_assert_eq(st_daemon_stop(&plain), 0);
}

/* MC_STORE_CLIENT_METRIC=0 (no collection): /metrics answers 503, as Mooncake's client;
 * /health is unaffected. */
Test(daemon_http, metrics_off_answers_503) {
    setenv("MC_STORE_CLIENT_METRIC", "0", 1);
    struct st_daemon a;
    start_http(&a, "4mb", st_daemon_free_port());
    unsetenv("MC_STORE_CLIENT_METRIC");
    int port = ready_port(&a);
    struct reply r;
    http_get(port, "/metrics", &r);
    cr_assert_eq(r.status, 503);
    cr_assert(strstr(r.body, "MC_STORE_CLIENT_METRIC=0") != NULL, "%s", r.body);
    free(r.body);
    http_get(port, "/health", &r);
    cr_assert_eq(r.status, 200, "%s", r.body);
    free(r.body);
    cr_assert_eq(st_daemon_stop(&a), 0);
}

static int run_status(const char *const *args) {
    char log[256];
    snprintf(log, sizeof(log), "/tmp/crescent-dhttp-cli.%d.log", (int)getpid());
    pid_t pid = st_client_spawn(args, NULL, log);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    unlink(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The admin flags' bad values exit 2. */
Test(daemon_http, command_line) {
    const char *b[] = {"--enable_http_server=maybe", NULL};
    cr_assert_eq(run_status(b), 2);
    const char *p[] = {"--http_port", "65536", NULL};
    cr_assert_eq(run_status(p), 2);
    const char *n[] = {"--http_port", "-1", NULL};
    cr_assert_eq(run_status(n), 2);
    setenv("MOONCAKE_ENABLE_CLIENT_HTTP_SERVER", "perhaps", 1);
    const char *v[] = {"--master", "127.0.0.1:1", NULL};
    cr_assert_eq(run_status(v), 2);
    unsetenv("MOONCAKE_ENABLE_CLIENT_HTTP_SERVER");
}
