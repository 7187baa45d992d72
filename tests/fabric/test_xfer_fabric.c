// SPDX-License-Identifier: Apache-2.0
/*
 * Two-process tests of the fabric transport over the real tcp;ofi_rxm provider on loopback
 * (libfabric fabtests style: one binary, server and client roles). The client re-executes
 * itself with --server, reads the server's listener address and buffer base from a pipe, then:
 *   integrity   random sizes 1 B .. 64 MiB, batches of 1 .. 1024, two submitting threads,
 *               write then read back and compare
 *   striping    the same over two domains per side with a 1 MiB striping threshold, plus warmup
 *   backpressure a 4-entry transmit queue: -FI_EAGAIN handled, 512-task batches intact
 *   oob         remote ranges outside the peer's buffer are INVALID, the rest complete
 *   peerkill    SIGKILL the server mid-batch: every task terminal (FAILED) within the timeout
 * Exit 0 pass, 1 fail, 77 skip (no tcp;ofi_rxm provider).
 */
#include "common/fmacros.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_time.h"
#include "transfer/efa/xfer_efa.h"
#include "transfer/xfer.h"
#include "transfer/xfer_int.h"

#define REMOTE_LEN (130u << 20) /* two 64 MiB halves + slack */
#define HALF       (64u << 20)

static int failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            failures++;                                                     \
        }                                                                   \
    } while (0)

/* ---- server role ---- */

static int run_server(const char *args) {
    struct xfer_engine_opts o = {.local_name = "fabric-test-server"};
    struct xfer_engine *eng;
    char addr[128];
    void *buf;
    int rc;

    if ((rc = xfer_engine_create(&o, &eng)) || (rc = xfer_engine_install(eng, "fabric", args))) {
        printf("ERR %d %s\n", rc, cm_strerror(rc));
        fflush(stdout);
        return 77;
    }
    if (posix_memalign(&buf, 4096, REMOTE_LEN))
        return 1;
    memset(buf, 0x5a, REMOTE_LEN);
    if ((rc = xfer_engine_register(eng, buf, REMOTE_LEN, "cpu:0", XFER_REG_REMOTE)) ||
        xfer_engine_local_addr(eng, addr, sizeof(addr)) < 0) {
        printf("ERR %d %s\n", rc, cm_strerror(rc));
        return 1;
    }
    printf("READY %s %" PRIu64 "\n", addr, (uint64_t)(uintptr_t)buf);
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) /* serve until the client closes our stdin */
        ;
    xfer_engine_unregister(eng, buf);
    xfer_engine_destroy(eng);
    free(buf);
    return 0;
}

/* ---- client helpers ---- */

struct server {
    pid_t pid;
    int to_child; /* its stdin */
    char addr[128];
    uint64_t base;
};

static int server_start(struct server *s, const char *args) {
    int in[2], out[2];
    if (pipe(in) || pipe(out))
        return -1;
    s->pid = fork();
    if (s->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl("/proc/self/exe", "test_xfer_fabric", "--server", args ? args : "", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s->to_child = in[1];
    FILE *f = fdopen(out[0], "r");
    char line[512] = "";
    if (!fgets(line, sizeof(line), f)) {
        fclose(f);
        return -1;
    }
    fclose(f);
    if (strncmp(line, "ERR", 3) == 0) {
        fprintf(stderr, "server: %s", line);
        return -77;
    }
    if (sscanf(line, "READY %127s %" SCNu64, s->addr, &s->base) != 2)
        return -1;
    return 0;
}

static void server_stop(struct server *s) {
    int st;
    if (s->to_child >= 0)
        close(s->to_child);
    s->to_child = -1;
    waitpid(s->pid, &st, 0);
}

static uint64_t rnd(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* Log-uniform size in [1, max]. */
static uint64_t rnd_size(uint64_t *st, uint64_t max) {
    int bits = 64 - __builtin_clzll(max);
    uint64_t v = rnd(st) & ((1ull << (rnd(st) % (uint64_t)bits + 1)) - 1);
    return v == 0 ? 1 : v > max ? max : v;
}

static int run_batch(struct xfer_engine *eng, struct xfer_request *req, size_t n,
                     size_t *n_failed) {
    struct xfer_batch *b;
    int rc = xfer_batch_alloc(eng, n, &b);
    if (rc)
        return rc;
    if ((rc = xfer_batch_submit(b, req, n, NULL)) == 0)
        rc = xfer_batch_wait(b, -1, NULL, 0, n_failed);
    xfer_batch_free(b);
    return rc;
}

struct worker {
    struct xfer_engine *eng;
    struct xfer_segment *seg;
    uint64_t remote;
    uint8_t *src, *dst;
    uint64_t seed;
    int rounds;
    int errors;
    uint64_t bytes;
};

/* Rounds of: random batch of random sizes written, read back, compared. */
static void *worker_main(void *arg) {
    struct worker *w = arg;
    struct xfer_request *req = calloc(1024, sizeof(*req));

    for (int r = 0; r < w->rounds; r++) {
        size_t n = r == 0 ? 1 : (size_t)(rnd(&w->seed) % 1024) + 1;
        uint64_t off = 0;
        size_t k = 0;
        for (; k < n && off < HALF; k++) {
            uint64_t max = HALF - off;
            uint64_t len = r == 0 ? HALF : rnd_size(&w->seed, max > (8u << 20) ? (8u << 20) : max);
            req[k] =
                (struct xfer_request){XFER_OP_WRITE, w->src + off, w->seg, w->remote + off, len};
            off += len;
        }
        for (uint64_t i = 0; i < off; i += 8) {
            uint64_t v = rnd(&w->seed);
            memcpy(w->src + i, &v, off - i < 8 ? off - i : 8);
        }
        size_t nf = 0;
        int rc = run_batch(w->eng, req, k, &nf);
        if (rc) {
            fprintf(stderr, "write batch of %zu: %s (%zu failed)\n", k, cm_strerror(rc), nf);
            w->errors++;
            continue;
        }
        memset(w->dst, 0, off);
        for (size_t i = 0; i < k; i++) {
            req[i].op = XFER_OP_READ;
            req[i].local = w->dst + ((uint8_t *)req[i].local - w->src);
        }
        if ((rc = run_batch(w->eng, req, k, &nf))) {
            fprintf(stderr, "read batch of %zu: %s (%zu failed)\n", k, cm_strerror(rc), nf);
            w->errors++;
            continue;
        }
        if (memcmp(w->src, w->dst, off) != 0) {
            fprintf(stderr, "data mismatch in round %d (%zu tasks, %" PRIu64 " B)\n", r, k, off);
            w->errors++;
        }
        w->bytes += 2 * off;
    }
    free(req);
    return NULL;
}

static struct xfer_efa_stats *efa_stats(struct xfer_engine *eng) {
    struct xfer_transport *tp = xfer__engine_transport(eng, "fabric");
    return tp ? &((struct xfer_efa *)tp->ctx)->st : NULL;
}

static struct xfer_engine *client_engine(const char *args, uint32_t timeout_ms) {
    struct xfer_engine_opts o = {.local_name = "fabric-test-client", .timeout_ms = timeout_ms};
    struct xfer_engine *eng = NULL;
    int rc = xfer_engine_create(&o, &eng);
    if (rc == 0)
        rc = xfer_engine_install(eng, "fabric", args);
    if (rc) {
        fprintf(stderr, "client engine: %s\n", cm_strerror(rc));
        xfer_engine_destroy(eng);
        return NULL;
    }
    return eng;
}

/* Integrity with two submitting threads; args select domains/striping. */
static void test_integrity(const char *args, int warmup) {
    struct server srv;
    int rc = server_start(&srv, args);
    CHECK(rc == 0, "server start %d", rc);
    if (rc)
        return;
    struct xfer_engine *eng = client_engine(args, 20000);
    struct xfer_segment *seg = NULL;
    CHECK(eng != NULL, "client engine");
    if (!eng)
        goto out;
    rc = xfer_segment_open_addr(eng, srv.addr, &seg);
    CHECK(rc == 0, "segment open: %s", cm_strerror(rc));
    if (rc)
        goto out;
    CHECK(strcmp(xfer_segment_transport(seg), "fabric") == 0, "transport %s",
          xfer_segment_transport(seg));
    if (warmup) {
        uint64_t t0 = cm_mono_us();
        rc = xfer_segment_warmup(seg);
        CHECK(rc == 0, "warmup: %s", cm_strerror(rc));
        fprintf(stderr, "  warmup took %" PRIu64 " us\n", cm_mono_us() - t0);
    }
    struct worker w[2];
    pthread_t th[2];
    uint8_t *mem = NULL;
    if (posix_memalign((void **)&mem, 4096, 4ull * HALF))
        goto out;
    /* Local buffers: thread 0 registered (fast path), thread 1 unregistered. */
    rc = xfer_engine_register(eng, mem, 2ull * HALF, "cpu:0", 0);
    CHECK(rc == 0, "local register: %s", cm_strerror(rc));
    uint64_t t0 = cm_mono_us();
    for (int i = 0; i < 2; i++) {
        w[i] = (struct worker){.eng = eng,
                               .seg = seg,
                               .remote = srv.base + (uint64_t)i * HALF,
                               .src = mem + (size_t)(2 * i) * HALF,
                               .dst = mem + (size_t)(2 * i + 1) * HALF,
                               .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1),
                               .rounds = 6};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].errors == 0, "worker %d: %d errors", i, w[i].errors);
    }
    uint64_t us = cm_mono_us() - t0;
    if (warmup) { /* the striping run: tasks above 1 MiB went over both domains */
        struct xfer_efa_stats *st = efa_stats(eng);
        CHECK(st && atomic_load(&st->striped) > 0, "no striped task");
    }
    fprintf(stderr, "  %s: moved %.1f MiB in %.2f s\n", args[0] ? args : "default",
            (double)(w[0].bytes + w[1].bytes) / 1048576.0, (double)us / 1e6);
    xfer_engine_unregister(eng, mem);
    free(mem);
out:
    xfer_segment_close(seg);
    xfer_engine_destroy(eng);
    server_stop(&srv);
}

/* A tiny transmit queue: -FI_EAGAIN is backpressure, every task still completes intact. */
static void test_backpressure(void) {
    struct server srv;
    int rc = server_start(&srv, "");
    CHECK(rc == 0, "server start %d", rc);
    if (rc)
        return;
    struct xfer_engine *eng = client_engine("tx_size=4,inline_poll_us=0", 10000);
    struct xfer_segment *seg = NULL;
    uint8_t *mem = NULL;
    enum { N = 512, BLK = 16384 };
    if (!eng || xfer_segment_open_addr(eng, srv.addr, &seg) != 0 ||
        posix_memalign((void **)&mem, 4096, 2 * N * BLK)) {
        CHECK(0, "setup");
        goto out;
    }
    for (size_t i = 0; i < N * BLK; i++)
        mem[i] = (uint8_t)(i * 131 + 7);
    struct xfer_request *req = calloc(N, sizeof(*req));
    for (int i = 0; i < N; i++)
        req[i] = (struct xfer_request){XFER_OP_WRITE, mem + (size_t)i * BLK, seg,
                                       srv.base + (uint64_t)i * BLK, BLK};
    size_t nf = 0;
    rc = run_batch(eng, req, N, &nf);
    CHECK(rc == 0, "write batch: %s (%zu failed)", cm_strerror(rc), nf);
    for (int i = 0; i < N; i++) {
        req[i].op = XFER_OP_READ;
        req[i].local = mem + (size_t)(N + i) * BLK;
    }
    rc = run_batch(eng, req, N, &nf);
    CHECK(rc == 0, "read batch: %s (%zu failed)", cm_strerror(rc), nf);
    CHECK(memcmp(mem, mem + (size_t)N * BLK, (size_t)N * BLK) == 0, "data mismatch");
    struct xfer_efa_stats *st = efa_stats(eng);
    unsigned long eagain = st ? atomic_load(&st->eagain) : 0;
    fprintf(stderr, "  %lu -FI_EAGAIN answers, %lu ops posted\n", eagain,
            st ? atomic_load(&st->ops_posted) : 0);
    CHECK(eagain > 0, "no backpressure seen (tx_size not honoured?)");
    free(req);
out:
    xfer_segment_close(seg);
    xfer_engine_destroy(eng);
    free(mem);
    server_stop(&srv);
}

/* Out-of-bounds remote ranges are INVALID; valid neighbours complete. */
static void test_oob(void) {
    struct server srv;
    int rc = server_start(&srv, "");
    CHECK(rc == 0, "server start %d", rc);
    if (rc)
        return;
    struct xfer_engine *eng = client_engine("", 5000);
    struct xfer_segment *seg = NULL;
    static uint8_t buf[8192];
    if (!eng || xfer_segment_open_addr(eng, srv.addr, &seg) != 0) {
        CHECK(0, "setup");
        goto out;
    }
    struct xfer_request req[4] = {
        {XFER_OP_WRITE, buf, seg, srv.base, 4096},                    /* ok */
        {XFER_OP_WRITE, buf, seg, srv.base + REMOTE_LEN - 100, 4096}, /* straddles the end */
        {XFER_OP_READ, buf, seg, srv.base + REMOTE_LEN + 4096, 16},   /* past the end */
        {XFER_OP_READ, buf, seg, srv.base - 4096, 16},                /* before the start */
    };
    struct xfer_batch *b;
    size_t failed[4], nf = 0;
    xfer_batch_alloc(eng, 4, &b);
    xfer_batch_submit(b, req, 4, NULL);
    rc = xfer_batch_wait(b, 10000, failed, 4, &nf);
    CHECK(rc == -CM_ETRANSFER_FAIL, "wait %s", cm_strerror(rc));
    CHECK(nf == 3, "failed %zu", nf);
    struct xfer_task_status st;
    xfer_batch_status(b, 0, &st);
    CHECK(st.status == XFER_STATUS_COMPLETED && st.transferred == 4096, "task 0 %s",
          xfer_status_name(st.status));
    for (size_t i = 1; i < 4; i++) {
        xfer_batch_status(b, i, &st);
        CHECK(st.status == XFER_STATUS_INVALID, "task %zu %s", i, xfer_status_name(st.status));
    }
    xfer_batch_free(b);
out:
    xfer_segment_close(seg);
    xfer_engine_destroy(eng);
    server_stop(&srv);
}

/* SIGKILL the peer mid-batch: every task terminal, none COMPLETED after the kill is pending. */
static void test_peerkill(void) {
    struct server srv;
    int rc = server_start(&srv, "");
    CHECK(rc == 0, "server start %d", rc);
    if (rc)
        return;
    const uint32_t timeout_ms = 4000;
    struct xfer_engine *eng = client_engine("", timeout_ms);
    struct xfer_segment *seg = NULL;
    uint8_t *mem = NULL;
    if (!eng || xfer_segment_open_addr(eng, srv.addr, &seg) != 0 ||
        posix_memalign((void **)&mem, 4096, 64u << 20)) {
        CHECK(0, "setup");
        goto out;
    }
    memset(mem, 1, 64u << 20);
    xfer_engine_register(eng, mem, 64u << 20, "cpu:0", 0);
    enum { N = 512 };
    struct xfer_request *req = calloc(N, sizeof(*req));
    for (int i = 0; i < N; i++)
        req[i] = (struct xfer_request){XFER_OP_WRITE, mem + (size_t)(i % 64) * (1u << 20), seg,
                                       srv.base + (uint64_t)(i % 128) * (1u << 20), 1u << 20};
    struct xfer_batch *b;
    xfer_batch_alloc(eng, N, &b);
    uint64_t t0 = cm_mono_ms();
    xfer_batch_submit(b, req, N / 2, NULL);
    kill(srv.pid, SIGKILL);
    xfer_batch_submit(b, req + N / 2, N / 2, NULL);
    size_t nf = 0;
    rc = xfer_batch_wait(b, (int)timeout_ms + 3000, NULL, 0, &nf);
    uint64_t took = cm_mono_ms() - t0;
    CHECK(rc == -CM_ETRANSFER_FAIL, "wait: %s", cm_strerror(rc));
    CHECK(took <= timeout_ms + 1000, "took %" PRIu64 " ms", took);
    size_t n_failed = 0, n_timeout = 0, n_ok = 0, n_pending = 0;
    for (size_t i = 0; i < N; i++) {
        struct xfer_task_status st;
        xfer_batch_status(b, i, &st);
        n_failed += st.status == XFER_STATUS_FAILED;
        n_timeout += st.status == XFER_STATUS_TIMEOUT;
        n_ok += st.status == XFER_STATUS_COMPLETED;
        n_pending += !xfer_status_terminal(st.status);
    }
    fprintf(stderr,
            "  peerkill: %zu completed, %zu failed, %zu timeout, %zu pending in %" PRIu64 " ms\n",
            n_ok, n_failed, n_timeout, n_pending, took);
    CHECK(n_pending == 0, "%zu pending", n_pending);
    /* tcp;ofi_rxm sees the connection reset and fails the tasks at once; other providers
     * (FI_PROVIDER=shm) may only notice at the deadline, which must still hold. */
    const char *prov = getenv("FI_PROVIDER");
    int socket_prov = !prov || !*prov || strstr(prov, "tcp") != NULL;
    CHECK((n_failed > 0 || !socket_prov) && n_failed + n_ok + n_timeout == N, "failed %zu",
          n_failed);
    xfer_batch_free(b);
    free(req);
    xfer_engine_unregister(eng, mem);
out:
    xfer_segment_close(seg);
    xfer_engine_destroy(eng);
    free(mem);
    server_stop(&srv);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* bench BLOCK BATCH SECONDS [write|read]: engine loop comparable to raw_fi_write (one line). */
static int run_bench(uint64_t block, size_t batch, double secs, int is_read) {
    struct server srv;
    if (server_start(&srv,
                     getenv("XFER_BENCH_SERVER_ARGS") ? getenv("XFER_BENCH_SERVER_ARGS") : "") != 0)
        return 1;
    struct xfer_engine *eng = client_engine(
        getenv("XFER_BENCH_CLIENT_ARGS") ? getenv("XFER_BENCH_CLIENT_ARGS") : "", 20000);
    struct xfer_segment *seg = NULL;
    uint8_t *mem = NULL;
    if (!eng || xfer_segment_open_addr(eng, srv.addr, &seg) != 0 ||
        posix_memalign((void **)&mem, 4096, block * batch))
        return 1;
    xfer_engine_register(eng, mem, block * batch, "cpu:0", 0);
    xfer_segment_warmup(seg);
    struct xfer_request *req = calloc(batch, sizeof(*req));
    for (size_t i = 0; i < batch; i++)
        req[i] = (struct xfer_request){is_read ? XFER_OP_READ : XFER_OP_WRITE, mem + i * block, seg,
                                       srv.base + i * block, block};
    size_t cap = 1 << 16, n = 0;
    uint64_t *lat = malloc(cap * sizeof(*lat)), bytes = 0;
    uint64_t t0 = cm_mono_ns(), end = t0 + (uint64_t)(secs * 1e9), t = t0;
    uint64_t ph[4] = {0, 0, 0, 0};
    while (t < end) {
        uint64_t b0 = cm_mono_ns();
        if (getenv("XFER_BENCH_PHASES")) {
            struct xfer_batch *bb;
            uint64_t a = cm_mono_ns();
            xfer_batch_alloc(eng, batch, &bb);
            uint64_t b1 = cm_mono_ns();
            xfer_batch_submit(bb, req, batch, NULL);
            uint64_t b2 = cm_mono_ns();
            if (xfer_batch_wait(bb, -1, NULL, 0, NULL) != 0)
                return 1;
            uint64_t b3 = cm_mono_ns();
            xfer_batch_free(bb);
            ph[0] += b1 - a, ph[1] += b2 - b1, ph[2] += b3 - b2, ph[3] += cm_mono_ns() - b3;
        } else if (run_batch(eng, req, batch, NULL) != 0) {
            return 1;
        }
        t = cm_mono_ns();
        if (n == cap)
            lat = realloc(lat, (cap *= 2) * sizeof(*lat));
        lat[n++] = t - b0;
        bytes += block * batch;
    }
    qsort(lat, n, sizeof(*lat), cmp_u64);
    if (getenv("XFER_BENCH_PHASES"))
        fprintf(stderr, "phases (us/batch): alloc %.2f submit %.2f wait %.2f free %.2f\n",
                (double)ph[0] / 1e3 / (double)n, (double)ph[1] / 1e3 / (double)n,
                (double)ph[2] / 1e3 / (double)n, (double)ph[3] / 1e3 / (double)n);
    printf("{\"tool\":\"xfer-fabric\",\"block_size\":%" PRIu64 ",\"batch_size\":%zu,"
           "\"GBps\":%.4f,\"p50_us\":%.2f,\"p99_us\":%.2f}\n",
           block, batch, (double)bytes / ((double)(t - t0) / 1e9) / 1e9, (double)lat[n / 2] / 1e3,
           (double)lat[n * 99 / 100] / 1e3);
    free(lat);
    free(req);
    xfer_engine_unregister(eng, mem);
    xfer_segment_close(seg);
    xfer_engine_destroy(eng);
    free(mem);
    server_stop(&srv);
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (getenv("XFER_TEST_LOG")) {
        cm_log_open(NULL, 'T');
        cm_log_set_level(CM_LOG_VERBOSE);
    }
    if (argc >= 2 && strcmp(argv[1], "--server") == 0)
        return run_server(argc >= 3 ? argv[2] : "");
    if (argc >= 5 && strcmp(argv[1], "bench") == 0)
        return run_bench(strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0), atof(argv[4]),
                         argc >= 6 && strcmp(argv[5], "read") == 0);

    /* Skip cleanly when the provider is missing. */
    struct xfer_engine *probe = client_engine("", 1000);
    if (!probe) {
        printf("SKIP: no tcp;ofi_rxm libfabric provider\n");
        return 77;
    }
    xfer_engine_destroy(probe);

    const char *only = argc >= 2 ? argv[1] : "";
    if (!*only || !strcmp(only, "integrity")) {
        fprintf(stderr, "integrity (1 domain)\n");
        test_integrity("", 0);
    }
    if (!*only || !strcmp(only, "striping")) {
        fprintf(stderr, "striping (2 domains, threshold 1 MiB, warmup)\n");
        test_integrity("domains=2,stripe_threshold=1048576", 1);
    }
    if (!*only || !strcmp(only, "backpressure")) {
        fprintf(stderr, "backpressure (tx_size=4)\n");
        test_backpressure();
    }
    if (!*only || !strcmp(only, "oob")) {
        fprintf(stderr, "out of bounds\n");
        test_oob();
    }
    if (!*only || !strcmp(only, "peerkill")) {
        fprintf(stderr, "peer killed mid-batch\n");
        test_peerkill();
    }
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
