/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `crescent-bench store`: the store client benchmark. --operation serve contributes a segment
 * and waits; put / get / mixed run --threads threads of zero-copy put_from / get_into (their
 * batch forms with --batch_size > 1) on registered buffers for --duration seconds against
 * crescent-master, then print throughput and per-operation latency percentiles (one JSON line
 * with --json). Each thread cycles over a window of --keys keys; a put first removes the keys it
 * reuses (one MC.BATCHREMOVE per batch), which is counted neither in the latency nor in the
 * seconds the throughput divides by.
 */
#include "common/fmacros.h"

#include "crescent/store.h"
#include "transfer/bench/bench.h"

#include "common/cm_time.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define SB_LAT_CAP (1u << 20) /* latency samples kept per thread and operation */
#define SB_KEY_CAP 48         /* bytes per key name */

struct sb_opts {
    const char *master, *protocol, *operation, *hostname;
    uint64_t object_size, segment, local_buffer;
    unsigned batch, threads, replicas, keys;
    double duration;
    int verify, keep, json, same_node;
};

struct sb_lat {
    uint64_t *v; /* ns */
    size_t n;
};

struct sb_thread {
    pthread_t thr;
    unsigned idx;
    const struct sb_opts *o;
    struct crescent_store *st;
    char *buf;   /* registered: batch objects to write, then batch objects to read */
    char *names; /* the window's key names, SB_KEY_CAP bytes each (formatted once) */
    uint64_t put_ops, get_ops, put_bytes, get_bytes, errors, verify_fail;
    double secs;         /* measured run time, without the prefill and the untimed work */
    uint64_t untimed_ns; /* removing reused keys before a put (not counted in secs) */
    struct sb_lat put_lat, get_lat;
    char err[256];
};

static volatile sig_atomic_t sb_stop;

static void sb_on_signal(int sig) {
    (void)sig;
    sb_stop = 1;
}

static int sb_size(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) {
        return -EINVAL;
    }
    uint64_t m = 1;
    if (!strcasecmp(end, "k") || !strcasecmp(end, "kib") || !strcasecmp(end, "kb")) {
        m = 1ull << 10;
    } else if (!strcasecmp(end, "m") || !strcasecmp(end, "mib") || !strcasecmp(end, "mb")) {
        m = 1ull << 20;
    } else if (!strcasecmp(end, "g") || !strcasecmp(end, "gib") || !strcasecmp(end, "gb")) {
        m = 1ull << 30;
    } else if (*end && strcasecmp(end, "b")) {
        return -EINVAL;
    }
    *out = (uint64_t)(v * (double)m);
    return 0;
}

/* Name of key i of thread t's window. */
static const char *sb_key(const struct sb_thread *t, uint64_t i) {
    return t->names + i * SB_KEY_CAP;
}

static void sb_fill(char *p, uint64_t n, uint64_t seed) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (uint64_t i = 0; i + 8 <= n; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(p + i, &x, 8);
    }
    memset(p + (n & ~7ull), (int)(seed & 0xff), n & 7);
}

static void sb_record(struct sb_lat *l, uint64_t ns) {
    if (l->n < SB_LAT_CAP) {
        l->v[l->n++] = ns;
    }
}

/* One put of batch keys starting at window slot slot (round r). Returns 0 or a code. */
static int sb_put(struct sb_thread *t, uint64_t slot) {
    const struct sb_opts *o = t->o;
    const char *keys[256];
    const void *bufs[256];
    size_t sizes[256];
    int res[256];
    for (unsigned b = 0; b < o->batch; b++) {
        keys[b] = sb_key(t, (slot + b) % o->keys);
        bufs[b] = t->buf + (uint64_t)b * o->object_size;
        sizes[b] = o->object_size;
        if (o->verify) {
            sb_fill(t->buf + (uint64_t)b * o->object_size, o->object_size, (slot + b) % o->keys);
        }
    }
    uint64_t r0 = cm_mono_ns();
    if (o->batch == 1) {
        crescent_store_remove(t->st, keys[0], 1); /* the reused key; may be missing */
    } else {
        crescent_store_batch_remove(t->st, keys, o->batch, 1, res);
    }
    t->untimed_ns += cm_mono_ns() - r0;
    struct crescent_store_replicate_config rc = {.replica_num = o->replicas,
                                                 .prefer_same_node = o->same_node};
    uint64_t t0 = cm_mono_ns();
    int err = o->batch == 1
                  ? crescent_store_put_from(t->st, keys[0], bufs[0], sizes[0], &rc)
                  : crescent_store_batch_put_from(t->st, keys, bufs, sizes, o->batch, &rc, res);
    sb_record(&t->put_lat, cm_mono_ns() - t0);
    if (err == 0) {
        t->put_ops += o->batch;
        t->put_bytes += o->batch * o->object_size;
    }
    return err;
}

static int sb_get(struct sb_thread *t, uint64_t slot) {
    const struct sb_opts *o = t->o;
    const char *keys[256];
    void *bufs[256];
    size_t caps[256];
    int64_t res[256];
    char *in = t->buf + (uint64_t)o->batch * o->object_size;
    for (unsigned b = 0; b < o->batch; b++) {
        keys[b] = sb_key(t, (slot + b) % o->keys);
        bufs[b] = in + (uint64_t)b * o->object_size;
        caps[b] = o->object_size;
    }
    uint64_t t0 = cm_mono_ns();
    int err = 0;
    if (o->batch == 1) {
        int64_t n = crescent_store_get_into(t->st, keys[0], bufs[0], caps[0]);
        err = n < 0 ? (int)n : 0;
    } else {
        err = crescent_store_batch_get_into(t->st, keys, bufs, caps, o->batch, res);
    }
    sb_record(&t->get_lat, cm_mono_ns() - t0);
    if (err == 0) {
        t->get_ops += o->batch;
        t->get_bytes += o->batch * o->object_size;
        for (unsigned b = 0; o->verify && b < o->batch; b++) {
            sb_fill(t->buf, o->object_size, (slot + b) % o->keys); /* expected bytes */
            t->verify_fail += memcmp(t->buf, bufs[b], o->object_size) != 0;
        }
    }
    return err;
}

static void *sb_main(void *arg) {
    struct sb_thread *t = arg;
    const struct sb_opts *o = t->o;
    bool put = !strcmp(o->operation, "put"), mixed = !strcmp(o->operation, "mixed");
    if (!put) { /* readers need every key of the window */
        for (uint64_t s = 0; s < o->keys; s += o->batch) {
            if (sb_put(t, s) < 0) {
                t->errors++;
            }
        }
        t->put_ops = t->put_bytes = 0;
        t->put_lat.n = 0;
    }
    t->untimed_ns = 0;
    uint64_t start = cm_mono_ns(), end = start + (uint64_t)(o->duration * 1e9);
    for (uint64_t i = 0; !sb_stop && cm_mono_ns() < end; i++) {
        uint64_t slot = (i * o->batch) % o->keys;
        bool do_put = put || (mixed && (i & 1));
        int err = do_put ? sb_put(t, slot) : sb_get(t, slot);
        if (err < 0) {
            t->errors++;
            snprintf(t->err, sizeof(t->err), "%s: %s", crescent_store_err_name(err),
                     crescent_store_last_error());
        }
    }
    t->secs = (double)(cm_mono_ns() - start - t->untimed_ns) / 1e9;
    return NULL;
}

static int sb_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Merges the threads' samples of one operation; writes p50/p99 in µs. */
static void sb_pct(struct sb_thread *ts, unsigned n, bool put, double *p50, double *p99) {
    size_t total = 0;
    for (unsigned i = 0; i < n; i++) {
        total += put ? ts[i].put_lat.n : ts[i].get_lat.n;
    }
    *p50 = *p99 = 0;
    uint64_t *all = total ? malloc(total * sizeof(*all)) : NULL;
    if (all == NULL) {
        return;
    }
    size_t k = 0;
    for (unsigned i = 0; i < n; i++) {
        struct sb_lat *l = put ? &ts[i].put_lat : &ts[i].get_lat;
        memcpy(all + k, l->v, l->n * sizeof(*all));
        k += l->n;
    }
    qsort(all, total, sizeof(*all), sb_cmp);
    *p50 = (double)all[total / 2] / 1e3;
    *p99 = (double)all[(size_t)((double)total * 0.99) < total ? (size_t)((double)total * 0.99)
                                                              : total - 1] /
           1e3;
    free(all);
}

static void sb_usage(FILE *f) {
    fprintf(f,
            "usage: crescent-bench store --master host:port [options]\n"
            "  --operation put|get|mixed|serve  (default put; serve: contribute a segment and\n"
            "                               wait --duration seconds or until SIGTERM)\n"
            "  --protocol tcp|shm|fabric|rdma  transfer protocol (default tcp)\n"
            "  --object_size N[k|m|g]       bytes per object (default 1m)\n"
            "  --batch_size N               keys per call, 1..256 (default 1)\n"
            "  --threads N                  (default 1)\n"
            "  --duration S                 seconds (default 5)\n"
            "  --replica_num N              1..8 (default 1)\n"
            "  --prefer_same_node           place replicas on this host's segments first\n"
            "  --local_hostname H[:port]    this client's host (MC.REGISTER) and transfer\n"
            "                               listener (default 127.0.0.1)\n"
            "  --keys N                     keys per thread, cycled (default 64)\n"
            "  --segment_size N[k|m|g]      this process's global segment (default 0; serve: 1g)\n"
            "  --local_buffer_size N        staging buffer (default 16m)\n"
            "  --verify                     check every byte read\n"
            "  --keep                       leave the objects in the store at the end\n"
            "  --json                       one JSON line with the results (with bytes\n"
            "                               moved per interface: local, shm, tcp, other)\n");
}

static int sb_parse(int argc, char **argv, struct sb_opts *o) {
    static const struct option lo[] = {{"master", 1, 0, 'm'},
                                       {"protocol", 1, 0, 'p'},
                                       {"object_size", 1, 0, 's'},
                                       {"batch_size", 1, 0, 'b'},
                                       {"threads", 1, 0, 't'},
                                       {"duration", 1, 0, 'd'},
                                       {"replica_num", 1, 0, 'r'},
                                       {"operation", 1, 0, 'o'},
                                       {"keys", 1, 0, 'k'},
                                       {"segment_size", 1, 0, 'g'},
                                       {"local_buffer_size", 1, 0, 'l'},
                                       {"verify", 0, 0, 'v'},
                                       {"keep", 0, 0, 'K'},
                                       {"json", 0, 0, 'j'},
                                       {"prefer_same_node", 0, 0, 'n'},
                                       {"local_hostname", 1, 0, 'H'},
                                       {"help", 0, 0, 'h'},
                                       {0, 0, 0, 0}};
    *o = (struct sb_opts){.protocol = "tcp",
                          .operation = "put",
                          .object_size = 1 << 20,
                          .batch = 1,
                          .threads = 1,
                          .replicas = 1,
                          .keys = 64,
                          .duration = 5,
                          .segment = UINT64_MAX};
    int c, bad = 0;
    uint64_t v;
    optind = 1;
    while (!bad && (c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'm':
            o->master = optarg;
            break;
        case 'p':
            o->protocol = optarg;
            break;
        case 'o':
            o->operation = optarg;
            break;
        case 's':
            bad = sb_size(optarg, &o->object_size) < 0 || !o->object_size;
            break;
        case 'g':
            bad = sb_size(optarg, &o->segment) < 0;
            break;
        case 'l':
            bad = sb_size(optarg, &o->local_buffer) < 0;
            break;
        case 'b':
            v = strtoull(optarg, NULL, 10), bad = !v || v > 256, o->batch = (unsigned)v;
            break;
        case 't':
            v = strtoull(optarg, NULL, 10), bad = !v || v > 1024, o->threads = (unsigned)v;
            break;
        case 'r':
            v = strtoull(optarg, NULL, 10), bad = !v || v > 8, o->replicas = (unsigned)v;
            break;
        case 'k':
            v = strtoull(optarg, NULL, 10), bad = !v, o->keys = (unsigned)v;
            break;
        case 'd':
            o->duration = strtod(optarg, NULL), bad = !(o->duration > 0);
            break;
        case 'v':
            o->verify = 1;
            break;
        case 'K':
            o->keep = 1;
            break;
        case 'j':
            o->json = 1;
            break;
        case 'n':
            o->same_node = 1;
            break;
        case 'H':
            o->hostname = optarg;
            break;
        case 'h':
            sb_usage(stdout);
            exit(0);
        default:
            bad = 1;
        }
    }
    if (!bad && (o->master == NULL || optind != argc ||
                 (strcmp(o->operation, "put") && strcmp(o->operation, "get") &&
                  strcmp(o->operation, "mixed") && strcmp(o->operation, "serve")))) {
        bad = 1;
    }
    if (!bad && o->keys % o->batch) {
        o->keys += o->batch - o->keys % o->batch; /* whole batches */
    }
    if (o->segment == UINT64_MAX) {
        o->segment = !strcmp(o->operation, "serve") ? 1ull << 30 : 0;
    }
    return bad ? -EINVAL : 0;
}

/* Bytes read + written through metrics interface i (0 local, 1 shm, 2 tcp, 3 other). */
static unsigned long long sb_iface_bytes(const struct crescent_store_metrics *m, int i) {
    return (unsigned long long)(m->read_bytes[i] + m->write_bytes[i]);
}

static void sb_report(const struct sb_opts *o, struct sb_thread *ts, double secs,
                      const struct crescent_store_metrics *m) {
    uint64_t po = 0, go = 0, pb = 0, gb = 0, err = 0, vf = 0;
    for (unsigned i = 0; i < o->threads; i++) {
        po += ts[i].put_ops, go += ts[i].get_ops, pb += ts[i].put_bytes, gb += ts[i].get_bytes;
        err += ts[i].errors, vf += ts[i].verify_fail;
    }
    double pp50, pp99, gp50, gp99;
    sb_pct(ts, o->threads, true, &pp50, &pp99);
    sb_pct(ts, o->threads, false, &gp50, &gp99);
    if (o->json) {
        printf("{\"operation\":\"%s\",\"protocol\":\"%s\",\"object_size\":%llu,\"batch_size\":%u,"
               "\"threads\":%u,\"replica_num\":%u,\"seconds\":%.3f,\"put_GBps\":%.4f,"
               "\"get_GBps\":%.4f,\"put_ops\":%llu,\"get_ops\":%llu,\"put_p50_us\":%.1f,"
               "\"put_p99_us\":%.1f,\"get_p50_us\":%.1f,\"get_p99_us\":%.1f,\"errors\":%llu,"
               "\"verify_failures\":%llu,\"local_bytes\":%llu,\"shm_bytes\":%llu,"
               "\"tcp_bytes\":%llu,\"other_bytes\":%llu}\n",
               o->operation, o->protocol, (unsigned long long)o->object_size, o->batch, o->threads,
               o->replicas, secs, (double)pb / secs / 1e9, (double)gb / secs / 1e9,
               (unsigned long long)po, (unsigned long long)go, pp50, pp99, gp50, gp99,
               (unsigned long long)err, (unsigned long long)vf, sb_iface_bytes(m, 0),
               sb_iface_bytes(m, 1), sb_iface_bytes(m, 2), sb_iface_bytes(m, 3));
    } else {
        printf("store %s over %s: %llu-byte objects, batch %u, %u thread(s), %u replica(s), "
               "%.2f s\n",
               o->operation, o->protocol, (unsigned long long)o->object_size, o->batch, o->threads,
               o->replicas, secs);
        printf("  put: %llu objects, %.3f GB/s, p50 %.1f us, p99 %.1f us (per call)\n",
               (unsigned long long)po, (double)pb / secs / 1e9, pp50, pp99);
        printf("  get: %llu objects, %.3f GB/s, p50 %.1f us, p99 %.1f us (per call)\n",
               (unsigned long long)go, (double)gb / secs / 1e9, gp50, gp99);
        printf("  errors %llu, verify failures %llu\n", (unsigned long long)err,
               (unsigned long long)vf);
    }
    for (unsigned i = 0; i < o->threads; i++) {
        if (ts[i].err[0]) {
            fprintf(stderr, "thread %u: last error %s\n", i, ts[i].err);
            break;
        }
    }
}

static int sb_serve(struct crescent_store *st, const struct sb_opts *o) {
    char seg[256] = "";
    crescent_store_segment_name(st, 0, seg, sizeof(seg));
    printf("serving segment %s (%llu bytes) for %.0f s\n", seg, (unsigned long long)o->segment,
           o->duration);
    fflush(stdout);
    uint64_t end = cm_mono_ns() + (uint64_t)(o->duration * 1e9);
    while (!sb_stop && cm_mono_ns() < end) {
        usleep(50000);
    }
    return 0;
}

/* Entry point of `crescent-bench store`; returns the exit status. */
int bench_store_main(int argc, char **argv) {
    struct sb_opts o;
    if (sb_parse(argc, argv, &o) < 0) {
        sb_usage(stderr);
        return 2;
    }
    signal(SIGINT, sb_on_signal);
    signal(SIGTERM, sb_on_signal);
    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.protocol = o.protocol;
    cfg.global_segment_size = o.segment;
    cfg.local_buffer_size = o.local_buffer;
    if (o.hostname != NULL) {
        cfg.local_hostname = o.hostname;
    }
    struct crescent_store *st;
    int rc = crescent_store_create(o.master, &cfg, &st);
    if (rc < 0) {
        fprintf(stderr, "crescent-bench store: %s: %s\n", crescent_store_err_name(rc),
                crescent_store_last_error());
        return 1;
    }
    if (!strcmp(o.operation, "serve")) {
        rc = sb_serve(st, &o);
        crescent_store_destroy(st);
        return rc;
    }
    struct sb_thread *ts = calloc(o.threads, sizeof(*ts));
    uint64_t span = 2ull * o.batch * o.object_size;
    for (unsigned i = 0; i < o.threads && ts != NULL; i++) {
        ts[i] = (struct sb_thread){.idx = i, .o = &o, .st = st};
        ts[i].buf = aligned_alloc(4096, (span + 4095) & ~4095ull);
        ts[i].names = malloc((size_t)o.keys * SB_KEY_CAP);
        for (unsigned k = 0; ts[i].names != NULL && k < o.keys; k++) {
            snprintf(ts[i].names + (size_t)k * SB_KEY_CAP, SB_KEY_CAP, "bench-%d-%u-%u",
                     (int)getpid(), i, k);
        }
        ts[i].put_lat.v = malloc(SB_LAT_CAP * sizeof(uint64_t));
        ts[i].get_lat.v = malloc(SB_LAT_CAP * sizeof(uint64_t));
        if (ts[i].buf == NULL || ts[i].names == NULL || ts[i].put_lat.v == NULL ||
            ts[i].get_lat.v == NULL || crescent_store_register_buffer(st, ts[i].buf, span) < 0) {
            fprintf(stderr, "crescent-bench store: out of memory\n");
            return 1;
        }
        sb_fill(ts[i].buf, span, i);
    }
    for (unsigned i = 0; i < o.threads; i++) {
        pthread_create(&ts[i].thr, NULL, sb_main, &ts[i]);
    }
    double secs = 0;
    for (unsigned i = 0; i < o.threads; i++) {
        pthread_join(ts[i].thr, NULL);
        secs = ts[i].secs > secs ? ts[i].secs : secs;
    }
    struct crescent_store_metrics m = {0};
    crescent_store_metrics(st, &m); /* every transfer of the run, the prefill included */
    sb_report(&o, ts, secs > 0 ? secs : 1e-9, &m);
    if (!o.keep) {
        char pat[64];
        snprintf(pat, sizeof(pat), "^bench-%d-", (int)getpid());
        crescent_store_remove_by_regex(st, pat, 1);
    }
    for (unsigned i = 0; i < o.threads; i++) {
        crescent_store_unregister_buffer(st, ts[i].buf);
        free(ts[i].buf);
        free(ts[i].names);
        free(ts[i].put_lat.v);
        free(ts[i].get_lat.v);
    }
    free(ts);
    crescent_store_destroy(st);
    return 0;
}
