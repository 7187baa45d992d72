/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Micro-benchmarks for common/ data structures: cm_hash64 throughput, cm_ht insert/find/remove
 * with 1M nodes, and cm_tlsf alloc/free latency under a mixed steady-state workload with 1M
 * live blocks. Prints one line per measurement (ns/op or GB/s). Run with `make bench-common`.
 */
#include "common/fmacros.h"

#include "common/cm_hash.h"
#include "common/cm_ht.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "common/cm_tlsf.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t sink;

static void bench_hash(void) {
    static const size_t sizes[] = {8, 16, 32, 64, 256, 4096, 65536};
    char *buf = cm_malloc(65536);
    memset(buf, 0x5a, 65536);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i], iters = (64u << 20) / n;
        uint64_t h = 0, t0 = cm_mono_ns();
        for (size_t k = 0; k < iters; k++)
            h += cm_hash64(buf, n, h);
        uint64_t dt = cm_mono_ns() - t0;
        sink = h;
        printf("cm_hash64 %6zu B: %7.1f ns/hash %6.2f GB/s\n", n, (double)dt / (double)iters,
               (double)n * (double)iters / (double)dt);
    }
    cm_free(buf);
}

struct obj {
    struct cm_ht_node node;
    uint64_t key;
};

static int obj_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    (void)klen;
    const struct obj *o = (const struct obj *)((const char *)n - offsetof(struct obj, node));
    return o->key == *(const uint64_t *)key;
}

static void bench_ht(void) {
    enum { N = 1000000 };
    struct obj *objs = cm_malloc(N * sizeof(*objs));
    struct cm_ht t;
    cm_ht_init(&t, 16);
    for (size_t i = 0; i < N; i++) {
        objs[i].key = i * 7919;
        objs[i].node.hash = cm_hash64(&objs[i].key, 8, 0);
    }
    uint64_t t0 = cm_mono_ns();
    for (size_t i = 0; i < N; i++)
        cm_ht_insert(&t, &objs[i].node);
    uint64_t t1 = cm_mono_ns();
    size_t found = 0;
    for (size_t i = 0; i < N; i++) {
        uint64_t k = ((i * 2654435761u) % N) * 7919;
        found += cm_ht_find(&t, cm_hash64(&k, 8, 0), &k, 8, obj_eq) != NULL;
    }
    uint64_t t2 = cm_mono_ns();
    for (size_t i = 0; i < N; i++)
        cm_ht_remove(&t, &objs[i].node);
    uint64_t t3 = cm_mono_ns();
    printf("cm_ht 1M nodes: insert %.1f ns (with growth), find %.1f ns (hash included, %zu hits), "
           "remove %.1f ns (with shrink)\n",
           (double)(t1 - t0) / N, (double)(t2 - t1) / N, found, (double)(t3 - t2) / N);
    cm_ht_fini(&t);
    cm_free(objs);
}

static void bench_tlsf(void) {
    enum { LIVE = 1000000, OPS = 2000000 };
    const uint64_t size = 256ull << 30; /* abstract: nothing is mapped; ~57% gets used */
    struct cm_tlsf *t = cm_tlsf_create(size, 64);
    uint32_t *h = cm_malloc(LIVE * sizeof(*h));
    uint64_t off;
    cm_rand_seed(3);
    uint64_t t0 = cm_mono_ns();
    for (size_t i = 0; i < LIVE; i++) {
        uint64_t r = cm_rand64();
        uint64_t len = (r & 3) == 0 ? 512 * 1024 : 1024 + (r >> 8) % (64 * 1024);
        h[i] = cm_tlsf_alloc(t, len, &off);
    }
    uint64_t t1 = cm_mono_ns();
    for (size_t k = 0; k < OPS; k++) {
        size_t i = cm_rand64() % LIVE;
        cm_tlsf_free(t, h[i]);
        uint64_t r = cm_rand64();
        uint64_t len = (r & 3) == 0 ? 512 * 1024 : 1024 + (r >> 8) % (64 * 1024);
        h[i] = cm_tlsf_alloc(t, len, &off);
    }
    uint64_t t2 = cm_mono_ns();
    struct cm_tlsf_stats st;
    cm_tlsf_get_stats(t, &st);
    printf(
        "cm_tlsf 1M live blocks on a 256 GiB range: fill %.1f ns/alloc, steady state %.1f ns per "
        "free+alloc pair; %llu free blocks, fragmentation %.3f, metadata %.1f MiB\n",
        (double)(t1 - t0) / LIVE, (double)(t2 - t1) / OPS, (unsigned long long)st.nfree_blocks,
        st.fragmentation,
        (double)(st.nallocs + st.nfree_blocks) * CM_TLSF_RECORD_BYTES / (1 << 20));
    cm_free(h);
    cm_tlsf_destroy(t);
}

int main(void) {
    bench_hash();
    bench_ht();
    bench_tlsf();
    return 0;
}
