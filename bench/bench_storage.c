/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sto-bench: drives storage/ for bench/bench-storage.sh. One mode per run, one result line:
 *   sto-bench write   DIR COUNT SIZE QD   batch puts of QD objects     -> "MBps <x>"
 *   sto-bench read    DIR COUNT SIZE QD   batch gets, in key order     -> "MBps <x>"
 *   sto-bench randread DIR COUNT SIZE QD OPS  random batch gets         -> "IOPS <x>"
 *   sto-bench fill    DIR COUNT SIZE      many small objects, then close
 *   sto-bench open    DIR                 time of sto_open (the restart scan) -> "open_s <x>"
 * The store configuration comes from the environment (MOONCAKE_OFFLOAD_*), the path from DIR.
 */
#include "common/fmacros.h"

#include "common/cm_time.h"
#include "storage/sto.h"

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

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: sto-bench write|read|randread|fill|open DIR [COUNT SIZE QD OPS]\n");
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
    sto_close(s);
    return 0;
}
