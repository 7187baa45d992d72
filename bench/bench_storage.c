/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sto-bench: drives storage/ for bench/bench-storage.sh. One mode per run, one result line:
 *   sto-bench write   DIR COUNT SIZE QD   batch puts of QD objects     -> "MBps <x>"
 *   sto-bench read    DIR COUNT SIZE QD   batch gets, in key order     -> "MBps <x>"
 *   sto-bench randread DIR COUNT SIZE QD OPS  random batch gets         -> "IOPS <x>"
 *   sto-bench mixed   DIR COUNT SIZE T OPS  T threads of random single gets (OPS in all) while
 *                                       one thread overwrites random keys -> "get_IOPS <x> puts_s
 * <y>" sto-bench fill    DIR COUNT SIZE      many small objects, then close sto-bench open    DIR
 * time of sto_open (the restart scan) -> "open_s <x>" The store configuration comes from the
 * environment (MOONCAKE_OFFLOAD_*), the path from DIR.
 */
#include "common/fmacros.h"

#include "common/cm_time.h"
#include "storage/sto.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sto *open_or_die(const char *dir) {
    struct sto *s;
    char err[STO_ERR_LEN];
    int rc = sto_open(NULL, dir, &s, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "sto-bench: %s\n", err);
        exit(1);
    }
    return s;
}

static void keyname(char *k, size_t cap, long i) {
    snprintf(k, cap, "obj-%08ld", i);
}

static void do_write(struct sto *s, long count, size_t size, int qd) {
    uint8_t *v = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
    memset(v, 0xab, size);
    struct sto_put_item *it = calloc((size_t)qd, sizeof(*it));
    char(*keys)[32] = calloc((size_t)qd, 32);
    uint64_t t0 = cm_mono_ns();
    for (long i = 0; i < count; i += qd) {
        int n = (int)(count - i < qd ? count - i : qd);
        for (int j = 0; j < n; j++) {
            keyname(keys[j], 32, i + j);
            it[j] = (struct sto_put_item){
                .key = keys[j], .klen = strlen(keys[j]), .value = v, .len = size};
        }
        if (sto_batch_put(s, it, (size_t)n) != n) {
            fprintf(stderr, "sto-bench: put failed: %d\n", it[0].result);
            exit(1);
        }
    }
    double sec = (double)(cm_mono_ns() - t0) / 1e9;
    printf("MBps %.1f\n", (double)count * (double)size / 1e6 / sec);
    free(keys);
    free(it);
    free(v);
}

static void do_read(struct sto *s, long count, size_t size, int qd, long ops) {
    size_t cap = (size + 4095) & ~(size_t)4095;
    uint8_t *buf = aligned_alloc(4096, cap * (size_t)qd);
    struct sto_get_item *it = calloc((size_t)qd, sizeof(*it));
    char(*keys)[32] = calloc((size_t)qd, 32);
    uint64_t x = 88172645463325252ull;
    long total = ops ? ops : count;
    uint64_t t0 = cm_mono_ns();
    for (long i = 0; i < total; i += qd) {
        int n = (int)(total - i < qd ? total - i : qd);
        for (int j = 0; j < n; j++) {
            long k = i + j;
            if (ops) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                k = (long)(x % (uint64_t)count);
            }
            keyname(keys[j], 32, k);
            it[j] = (struct sto_get_item){
                .key = keys[j], .klen = strlen(keys[j]), .buf = buf + cap * (size_t)j, .cap = cap};
        }
        if (sto_batch_get(s, it, (size_t)n) != n) {
            fprintf(stderr, "sto-bench: get failed: %zd\n", it[0].result);
            exit(1);
        }
    }
    double sec = (double)(cm_mono_ns() - t0) / 1e9;
    if (ops)
        printf("IOPS %.0f\n", (double)total / sec);
    else
        printf("MBps %.1f\n", (double)total * (double)size / 1e6 / sec);
    free(keys);
    free(it);
    free(buf);
}

/* The mixed mode's shared state. */
struct mixed {
    struct sto *s;
    long count, ops;
    size_t size;
    int stop; /* set when the readers are done (atomic) */
    long puts;
};

struct mixed_reader {
    struct mixed *m;
    pthread_t tid;
    uint64_t seed;
};

static void *mixed_read_main(void *arg) {
    struct mixed_reader *r = arg;
    size_t cap = (r->m->size + 4095) & ~(size_t)4095;
    uint8_t *buf = aligned_alloc(4096, cap);
    uint64_t x = r->seed;
    for (long i = 0; i < r->m->ops; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char k[32];
        keyname(k, sizeof(k), (long)(x % (uint64_t)r->m->count));
        if (sto_get(r->m->s, k, strlen(k), buf, cap) < 0) {
            fprintf(stderr, "sto-bench: get %s failed\n", k);
            exit(1);
        }
    }
    free(buf);
    return NULL;
}

static void *mixed_write_main(void *arg) {
    struct mixed *m = arg;
    uint8_t *v = aligned_alloc(4096, (m->size + 4095) & ~(size_t)4095);
    memset(v, 0xcd, m->size);
    uint64_t x = 0x2545f4914f6cdd1dull;
    while (!__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char k[32];
        keyname(k, sizeof(k), (long)(x % (uint64_t)m->count));
        if (sto_put_buf(m->s, k, strlen(k), v, m->size) != 0) {
            fprintf(stderr, "sto-bench: put %s failed\n", k);
            exit(1);
        }
        m->puts++;
    }
    free(v);
    return NULL;
}

/* threads readers doing ops random gets in all, beside one writer overwriting random keys. */
static void do_mixed(struct sto *s, long count, size_t size, int threads, long ops) {
    struct mixed m = {.s = s, .count = count, .size = size, .ops = ops / threads};
    struct mixed_reader *r = calloc((size_t)threads, sizeof(*r));
    pthread_t w;
    uint64_t t0 = cm_mono_ns();
    pthread_create(&w, NULL, mixed_write_main, &m);
    for (int i = 0; i < threads; i++) {
        r[i] = (struct mixed_reader){.m = &m, .seed = 88172645463325252ull + (uint64_t)i * 7919};
        pthread_create(&r[i].tid, NULL, mixed_read_main, &r[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(r[i].tid, NULL);
    double sec = (double)(cm_mono_ns() - t0) / 1e9;
    __atomic_store_n(&m.stop, 1, __ATOMIC_RELEASE);
    pthread_join(w, NULL);
    printf("get_IOPS %.0f puts_s %.0f\n", (double)(m.ops * threads) / sec, (double)m.puts / sec);
    free(r);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr,
                "usage: sto-bench write|read|randread|mixed|fill|open DIR [COUNT SIZE QD OPS]\n");
        return 2;
    }
    const char *mode = argv[1], *dir = argv[2];
    long count = argc > 3 ? atol(argv[3]) : 0;
    size_t size = argc > 4 ? (size_t)atol(argv[4]) : 0;
    int qd = argc > 5 ? atoi(argv[5]) : 1;
    long ops = argc > 6 ? atol(argv[6]) : 0;
    if (!strcmp(mode, "open")) {
        uint64_t t0 = cm_mono_ns();
        struct sto *s = open_or_die(dir);
        double sec = (double)(cm_mono_ns() - t0) / 1e9;
        struct sto_stats st;
        sto_stats(s, &st);
        printf("open_s %.3f keys %llu\n", sec, (unsigned long long)st.keys);
        sto_close(s);
        return 0;
    }
    struct sto *s = open_or_die(dir);
    struct sto_stats st;
    sto_stats(s, &st);
    /* Warm-up outside the timing, as fio's set-up is: the first I/O call registers the ring's
     * staging buffer. */
    char one[1];
    sto_get(s, "warm-up", 7, one, sizeof(one));
    sto_stats(s, &st);
    fprintf(stderr, "sto-bench: %s io=%s direct=%d registered=%d %s\n", st.backend, st.io,
            st.direct_io, st.registered_buffers, st.io_note);
    if (!strcmp(mode, "write"))
        do_write(s, count, size, qd);
    else if (!strcmp(mode, "fill"))
        do_write(s, count, size, qd > 1 ? qd : 64);
    else if (!strcmp(mode, "read"))
        do_read(s, count, size, qd, 0);
    else if (!strcmp(mode, "randread"))
        do_read(s, count, size, qd, ops);
    else if (!strcmp(mode, "mixed"))
        do_mixed(s, count, size, qd, ops);
    sto_close(s);
    return 0;
}
