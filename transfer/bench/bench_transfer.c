/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `crescent-bench transfer`: the transfer engine benchmark (Mooncake's transfer_engine_bench).
 * A target registers a buffer and serves until SIGTERM; an initiator opens it by host:port and
 * runs batches of READ or WRITE from --threads threads for --duration seconds, then prints
 * throughput and per-batch latency percentiles (per operation when --batch_size is 1).
 */
#include "common/fmacros.h"

#include "transfer/bench/bench.h"
#include "transfer/xfer.h"

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_time.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

struct bopts {
    const char *mode, *protocol, *listen, *target, *unit, *operation, *proto_args;
    uint64_t block, batch, buffer;
    int threads, verify, json, shm_memfd;
    double duration;
};

struct bthread {
    pthread_t thr;
    int idx;
    struct bopts *o;
    struct xfer_engine *eng;
    struct xfer_segment *seg;
    uint8_t *local;  /* this thread's local region */
    uint64_t remote; /* this thread's remote region */
    uint64_t span;   /* bytes per batch */
    uint64_t bytes, batches, errors, verify_fail;
    uint64_t *lat; /* per-batch latency, ns */
    size_t n_lat, cap_lat;
};

static int parse_size(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -EINVAL;
    uint64_t m = 1;
    if (!*end || !strcasecmp(end, "b"))
        m = 1;
    else if (!strcasecmp(end, "k") || !strcasecmp(end, "kib") || !strcasecmp(end, "kb"))
        m = 1ull << 10;
    else if (!strcasecmp(end, "m") || !strcasecmp(end, "mib") || !strcasecmp(end, "mb"))
        m = 1ull << 20;
    else if (!strcasecmp(end, "g") || !strcasecmp(end, "gib") || !strcasecmp(end, "gb"))
        m = 1ull << 30;
    else
        return -EINVAL;
    *out = (uint64_t)(v * (double)m);
    return 0;
}

/* Pattern byte for remote address offset off (verify mode). */
static inline uint8_t pattern(uint64_t off) {
    return (uint8_t)((off * 2654435761u) >> 13);
}

static void fill_pattern(uint8_t *p, uint64_t base_off, uint64_t len) {
    for (uint64_t i = 0; i < len; i++)
        p[i] = pattern(base_off + i);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: crescent-bench transfer --mode target|initiator|memcpy [options]\n"
            "  (memcpy: single-thread memcpy baseline with the initiator's access pattern)\n"
            "  --protocol shm|tcp|fabric|rdma   transport (default tcp)\n"
            "  --listen host:port               target listen address (default 127.0.0.1:0)\n"
            "  --target host:port               initiator: the target to use\n"
            "  --operation read|write           (default read)\n"
            "  --block_size N                   bytes per request (default 64K; K/M/G suffixes)\n"
            "  --batch_size N                   requests per batch (default 128)\n"
            "  --threads N                      initiator threads (default 1)\n"
            "  --duration S                     seconds (default 10)\n"
            "  --buffer_size N                  registered buffer per side (default 256M)\n"
            "  --report_unit GB|GiB|Gb|MB|MiB|Mb  (default GB)\n"
            "  --verify                         check data (target fills a pattern)\n"
            "  --json                           print a final one-line JSON result\n"
            "  --shm_memfd 0|1                  target: memfd-backed buffer (default 1)\n"
            "  --protocol_args k=v,...          transport install arguments\n");
}

static double unit_div(const char *u, int *bits) {
    *bits = 0;
    if (!strcmp(u, "GB"))
        return 1e9;
    if (!strcmp(u, "GiB"))
        return 1073741824.0;
    if (!strcmp(u, "MB"))
        return 1e6;
    if (!strcmp(u, "MiB"))
        return 1048576.0;
    *bits = 1;
    if (!strcmp(u, "Gb"))
        return 1e9;
    if (!strcmp(u, "Mb"))
        return 1e6;
    return 0;
}

static int run_target(struct bopts *o) {
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGTERM);
    sigaddset(&ss, SIGINT);
    pthread_sigmask(SIG_BLOCK, &ss, NULL);
    /* The port refuses connections until the buffer is registered (listen_later): a peer
     * that connects as soon as the port opens always finds the buffer. */
    struct xfer_engine_opts eo = {.listen = o->listen ? o->listen : "127.0.0.1:0",
                                  .listen_later = 1};
    struct xfer_engine *eng;
    int rc = xfer_engine_create(&eo, &eng);
    if (rc < 0) {
        fprintf(stderr, "transfer: engine: %s\n", cm_strerror(rc));
        return 1;
    }
    rc = xfer_engine_install(eng, o->protocol, o->proto_args);
    if (rc < 0) {
        fprintf(stderr, "transfer: install %s: %s\n", o->protocol, cm_strerror(rc));
        xfer_engine_destroy(eng);
        return rc == -CM_ENOT_SUPPORTED ? 77 : 1;
    }
    void *buf = NULL;
    int shared = !strcmp(o->protocol, "shm") && o->shm_memfd;
    if (shared)
        rc = xfer_engine_alloc_shared(eng, o->buffer, &buf);
    else {
        buf = mmap(NULL, o->buffer, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        rc = buf == MAP_FAILED ? -errno : 0;
    }
    if (rc < 0) {
        fprintf(stderr, "transfer: buffer: %s\n", cm_strerror(rc));
        xfer_engine_destroy(eng);
        return 1;
    }
    if (o->verify)
        fill_pattern(buf, 0, o->buffer);
    else
        memset(buf, 0x5a, o->buffer);
    rc = xfer_engine_register(eng, buf, o->buffer, "cpu:0", XFER_REG_REMOTE);
    if (rc == 0)
        rc = xfer_engine_listen_start(eng);
    if (rc < 0) {
        fprintf(stderr, "transfer: register: %s\n", cm_strerror(rc));
        xfer_engine_destroy(eng);
        return 1;
    }
    char addr[300];
    xfer_engine_local_addr(eng, addr, sizeof(addr));
    printf("ready: listening on %s, protocol %s, buffer %llu bytes registered\n", addr, o->protocol,
           (unsigned long long)o->buffer);
    fflush(stdout);
    int sig;
    sigwait(&ss, &sig);
    xfer_engine_unregister(eng, buf);
    if (shared)
        xfer_engine_free_shared(eng, buf);
    else
        munmap(buf, o->buffer);
    xfer_engine_destroy(eng);
    return 0;
}

static void lat_push(struct bthread *t, uint64_t ns) {
    if (t->n_lat == t->cap_lat) {
        size_t nc = t->cap_lat ? t->cap_lat * 2 : 4096;
        uint64_t *n = realloc(t->lat, nc * sizeof(*n));
        if (!n)
            return;
        t->lat = n;
        t->cap_lat = nc;
    }
    t->lat[t->n_lat++] = ns;
}

static void *initiator_thread(void *arg) {
    struct bthread *t = arg;
    struct bopts *o = t->o;
    struct xfer_batch *b;
    size_t bs = (size_t)o->batch;
    struct xfer_request *reqs = calloc(bs, sizeof(*reqs));
    uint8_t *scratch = o->verify ? malloc(t->span) : NULL;
    if (!reqs || xfer_batch_alloc(t->eng, bs, &b) < 0) {
        t->errors++;
        free(reqs);
        free(scratch);
        return NULL;
    }
    int op = !strcmp(o->operation, "write") ? XFER_OP_WRITE : XFER_OP_READ;
    for (size_t i = 0; i < bs; i++)
        reqs[i] = (struct xfer_request){.op = op,
                                        .local = t->local + i * o->block,
                                        .seg = t->seg,
                                        .remote_addr = t->remote + i * o->block,
                                        .length = o->block};
    uint64_t remote_base;
    uint64_t rlen;
    xfer_segment_buffer(t->seg, 0, &remote_base, &rlen);
    if (o->verify && op == XFER_OP_WRITE)
        fill_pattern(t->local, t->remote - remote_base, t->span);
    uint64_t end = cm_mono_ns() + (uint64_t)(o->duration * 1e9);
    while (cm_mono_ns() < end) {
        uint64_t t0 = cm_mono_ns();
        int rc = xfer_batch_submit(b, reqs, bs, NULL);
        if (rc == 0)
            rc = xfer_batch_wait(b, -1, NULL, 0, NULL);
        uint64_t t1 = cm_mono_ns();
        if (xfer_batch_reset(b) < 0) { /* never after a wait that returned: an engine bug */
            t->errors += 4;
            break;
        }
        if (rc < 0) {
            t->errors++;
            if (t->errors > 3)
                break;
            continue;
        }
        lat_push(t, t1 - t0);
        t->bytes += t->span;
        t->batches++;
        if (o->verify) {
            uint8_t *chk = t->local;
            if (op == XFER_OP_WRITE) { /* read back what we wrote */
                for (size_t i = 0; i < bs; i++)
                    reqs[i].op = XFER_OP_READ, reqs[i].local = scratch + i * o->block;
                if (xfer_batch_submit(b, reqs, bs, NULL) < 0 ||
                    xfer_batch_wait(b, -1, NULL, 0, NULL) < 0 || xfer_batch_reset(b) < 0) {
                    t->errors += 4;
                    break;
                }
                for (size_t i = 0; i < bs; i++)
                    reqs[i].op = XFER_OP_WRITE, reqs[i].local = t->local + i * o->block;
                chk = scratch;
            }
            uint64_t off = t->remote - remote_base;
            for (uint64_t i = 0; i < t->span; i++)
                if (chk[i] != pattern(off + i)) {
                    t->verify_fail++;
                    break;
                }
            if (op == XFER_OP_READ)
                memset(t->local, 0, t->span);
        }
    }
    xfer_batch_free(b);
    free(reqs);
    free(scratch);
    return NULL;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int run_initiator(struct bopts *o) {
    if (!o->target) {
        fprintf(stderr, "transfer: --target host:port is required\n");
        return 2;
    }
    struct xfer_engine_opts eo = {.listen = ""};
    struct xfer_engine *eng;
    int rc = xfer_engine_create(&eo, &eng);
    if (rc == 0)
        rc = xfer_engine_install(eng, o->protocol, o->proto_args);
    if (rc < 0) {
        fprintf(stderr, "transfer: %s: %s\n", o->protocol, cm_strerror(rc));
        xfer_engine_destroy(eng);
        return rc == -CM_ENOT_SUPPORTED ? 77 : 1;
    }
    struct xfer_segment *seg;
    rc = xfer_segment_open_addr(eng, o->target, &seg);
    if (rc < 0) {
        fprintf(stderr, "transfer: open %s: %s\n", o->target, cm_strerror(rc));
        xfer_engine_destroy(eng);
        return 1;
    }
    uint64_t raddr, rlen;
    if (xfer_segment_buffer(seg, 0, &raddr, &rlen) < 0) {
        fprintf(stderr, "transfer: target has no buffer\n");
        return 1;
    }
    uint64_t span = o->block * o->batch;
    if (span * (uint64_t)o->threads > rlen || span * (uint64_t)o->threads > o->buffer) {
        fprintf(stderr, "transfer: threads x batch x block (%llu) exceeds buffer (%llu)\n",
                (unsigned long long)(span * (uint64_t)o->threads),
                (unsigned long long)(rlen < o->buffer ? rlen : o->buffer));
        return 2;
    }
    uint8_t *local =
        mmap(NULL, o->buffer, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (local == MAP_FAILED)
        return 1;
    memset(local, 0, o->buffer);
    xfer_engine_register(eng, local, o->buffer, "cpu:0", 0);
    struct bthread *th = calloc((size_t)o->threads, sizeof(*th));
    uint64_t t0 = cm_mono_ns();
    for (int i = 0; i < o->threads; i++) {
        th[i] = (struct bthread){.idx = i,
                                 .o = o,
                                 .eng = eng,
                                 .seg = seg,
                                 .local = local + (uint64_t)i * span,
                                 .remote = raddr + (uint64_t)i * span,
                                 .span = span};
        pthread_create(&th[i].thr, NULL, initiator_thread, &th[i]);
    }
    uint64_t bytes = 0, batches = 0, errors = 0, vfail = 0;
    size_t n_lat = 0;
    for (int i = 0; i < o->threads; i++) {
        pthread_join(th[i].thr, NULL);
        bytes += th[i].bytes, batches += th[i].batches, errors += th[i].errors;
        vfail += th[i].verify_fail, n_lat += th[i].n_lat;
    }
    double secs = (double)(cm_mono_ns() - t0) / 1e9;
    uint64_t *lat = calloc(n_lat ? n_lat : 1, sizeof(*lat));
    size_t k = 0;
    for (int i = 0; i < o->threads; i++) {
        memcpy(lat + k, th[i].lat, th[i].n_lat * sizeof(*lat));
        k += th[i].n_lat;
        free(th[i].lat);
    }
    qsort(lat, n_lat, sizeof(*lat), cmp_u64);
    double p50 = n_lat ? (double)lat[n_lat / 2] / 1e3 : 0;
    double p99 =
        n_lat ? (double)lat[(n_lat * 99) / 100 < n_lat ? (n_lat * 99) / 100 : n_lat - 1] / 1e3 : 0;
    int bits;
    double div = unit_div(o->unit, &bits);
    double rate = (double)bytes * (bits ? 8 : 1) / secs / div;
    double gbps = (double)bytes / secs / 1e9;
    printf("protocol %s operation %s block %llu batch %llu threads %d: %.3f %s/s, "
           "%llu batches in %.2f s, latency p50 %.1f us p99 %.1f us (per %s), errors %llu%s\n",
           o->protocol, o->operation, (unsigned long long)o->block, (unsigned long long)o->batch,
           o->threads, rate, o->unit, (unsigned long long)batches, secs, p50, p99,
           o->batch == 1 ? "operation" : "batch", (unsigned long long)errors,
           o->verify ? (vfail ? ", VERIFY FAILED" : ", verified") : "");
    if (o->json)
        printf("{\"protocol\":\"%s\",\"operation\":\"%s\",\"block_size\":%llu,\"batch_size\":%llu,"
               "\"threads\":%d,\"GBps\":%.4f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"errors\":%llu,"
               "\"verify_failures\":%llu}\n",
               o->protocol, o->operation, (unsigned long long)o->block,
               (unsigned long long)o->batch, o->threads, gbps, p50, p99, (unsigned long long)errors,
               (unsigned long long)vfail);
    fflush(stdout);
    free(lat);
    free(th);
    xfer_engine_unregister(eng, local);
    xfer_segment_close(seg);
    xfer_engine_destroy(eng);
    munmap(local, o->buffer);
    return errors || vfail || !batches ? 1 : 0;
}

/* Baseline: single-thread memcpy with the initiator's access pattern (batch_size blocks of
 * block_size from one region into another, repeated), reported like a transfer run. */
static int run_memcpy(struct bopts *o) {
    uint64_t span = o->block * o->batch;
    uint8_t *src = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *dst = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (src == MAP_FAILED || dst == MAP_FAILED)
        return 1;
    memset(src, 0x5a, span);
    memset(dst, 0, span);
    struct bthread t = {.o = o};
    uint64_t bytes = 0, t0 = cm_mono_ns(), end = t0 + (uint64_t)(o->duration * 1e9);
    while (cm_mono_ns() < end) {
        uint64_t b0 = cm_mono_ns();
        for (uint64_t i = 0; i < o->batch; i++)
            memcpy(dst + i * o->block, src + i * o->block, o->block);
        __asm__ volatile("" ::"r"(dst) : "memory");
        lat_push(&t, cm_mono_ns() - b0);
        bytes += span;
    }
    double secs = (double)(cm_mono_ns() - t0) / 1e9;
    qsort(t.lat, t.n_lat, sizeof(*t.lat), cmp_u64);
    double p50 = t.n_lat ? (double)t.lat[t.n_lat / 2] / 1e3 : 0;
    double p99 = t.n_lat ? (double)t.lat[(t.n_lat * 99) / 100] / 1e3 : 0;
    double gbps = (double)bytes / secs / 1e9;
    printf("memcpy block %llu batch %llu: %.3f GB/s, latency p50 %.1f us p99 %.1f us\n",
           (unsigned long long)o->block, (unsigned long long)o->batch, gbps, p50, p99);
    if (o->json)
        printf("{\"protocol\":\"memcpy\",\"operation\":\"copy\",\"block_size\":%llu,"
               "\"batch_size\":%llu,\"threads\":1,\"GBps\":%.4f,\"p50_us\":%.2f,"
               "\"p99_us\":%.2f}\n",
               (unsigned long long)o->block, (unsigned long long)o->batch, gbps, p50, p99);
    free(t.lat);
    munmap(src, span);
    munmap(dst, span);
    return 0;
}

/* Entry point of `crescent-bench transfer`; see bench.h. */
int bench_transfer_main(int argc, char **argv) {
    struct bopts o = {.mode = NULL,
                      .protocol = "tcp",
                      .unit = "GB",
                      .operation = "read",
                      .block = 65536,
                      .batch = 128,
                      .buffer = 256ull << 20,
                      .threads = 1,
                      .duration = 10,
                      .shm_memfd = 1};
    static const struct option lo[] = {{"mode", 1, 0, 'm'},
                                       {"protocol", 1, 0, 'p'},
                                       {"listen", 1, 0, 'l'},
                                       {"target", 1, 0, 't'},
                                       {"block_size", 1, 0, 'b'},
                                       {"batch_size", 1, 0, 'B'},
                                       {"threads", 1, 0, 'T'},
                                       {"duration", 1, 0, 'd'},
                                       {"operation", 1, 0, 'o'},
                                       {"buffer_size", 1, 0, 's'},
                                       {"report_unit", 1, 0, 'u'},
                                       {"verify", 0, 0, 'v'},
                                       {"json", 0, 0, 'j'},
                                       {"shm_memfd", 1, 0, 'M'},
                                       {"protocol_args", 1, 0, 'a'},
                                       {"help", 0, 0, 'h'},
                                       {0, 0, 0, 0}};
    int c, bits;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'm':
            o.mode = optarg;
            break;
        case 'p':
            o.protocol = optarg;
            break;
        case 'l':
            o.listen = optarg;
            break;
        case 't':
            o.target = optarg;
            break;
        case 'b':
            bad = parse_size(optarg, &o.block) < 0 || !o.block;
            break;
        case 'B':
            bad = parse_size(optarg, &o.batch) < 0 || !o.batch || o.batch > (1u << 20);
            break;
        case 'T':
            o.threads = atoi(optarg), bad = o.threads < 1 || o.threads > 256;
            break;
        case 'd':
            o.duration = atof(optarg), bad = o.duration <= 0;
            break;
        case 'o':
            o.operation = optarg;
            break;
        case 's':
            bad = parse_size(optarg, &o.buffer) < 0 || !o.buffer;
            break;
        case 'u':
            o.unit = optarg;
            break;
        case 'v':
            o.verify = 1;
            break;
        case 'j':
            o.json = 1;
            break;
        case 'M':
            o.shm_memfd = atoi(optarg);
            break;
        case 'a':
            o.proto_args = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "transfer: bad option value: %s\n", optarg);
            return 2;
        }
    }
    if (!o.mode || (strcmp(o.operation, "read") && strcmp(o.operation, "write")) ||
        unit_div(o.unit, &bits) == 0) {
        usage(stderr);
        return 2;
    }
    if (getenv("CRESCENT_BENCH_LOG"))
        cm_log_open(NULL, 'B');
    if (!strcmp(o.mode, "target"))
        return run_target(&o);
    if (!strcmp(o.mode, "initiator"))
        return run_initiator(&o);
    if (!strcmp(o.mode, "memcpy"))
        return run_memcpy(&o);
    usage(stderr);
    return 2;
}
