/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Measures the pool's metadata bytes per object: puts N objects (64-byte keys, 64-byte values,
 * one replica) into one 1 GiB segment and prints the counted record + bucket bytes and the heap
 * growth per object (cm_mem_used, which includes the segment allocator's block records), and
 * the single-thread rate of put (start + end) and get replicas on that pool.
 * Run with `make bench-pool-memory` (jemalloc, as in the master); N is the first argument.
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "server/pool/pool.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    struct pool_config pc;
    pool_config_default(&pc);
    pc.seed = 1;
    struct pool *p;
    if (n <= 0 || pool_create(&pc, &p) != 0)
        return 2;
    struct pool_uuid id = {{1}};
    struct pool_segment_spec seg = {.name = "big", .base = 1ull << 32, .size = 1ull << 30};
    if (pool_client_register(p, &id, "host", 0) || pool_segment_mount(p, &id, &seg, 0))
        return 1;
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    size_t before = cm_mem_used();
    uint64_t t0 = cm_mono_ns();
    for (long i = 0; i < n; i++) {
        char key[65];
        struct pool_replica_desc d[POOL_MAX_REPLICAS];
        size_t nd;
        snprintf(key, sizeof(key), "%064ld", i);
        if (pool_put_start(p, &id, key, 64, 64, &cfg, 0, d, &nd) ||
            pool_put_end(p, &id, key, 64, 0)) {
            fprintf(stderr, "put %ld failed\n", i);
            return 1;
        }
    }
    uint64_t t1 = cm_mono_ns();
    size_t after = cm_mem_used();
    for (long i = 0; i < n; i++) {
        char key[65];
        struct pool_replica_desc d[POOL_MAX_REPLICAS];
        size_t nd;
        snprintf(key, sizeof(key), "%064ld", (i * 7919) % n);
        if (pool_get_replicas(p, key, 64, 1, d, &nd, NULL) != 0)
            return 1;
    }
    uint64_t t2 = cm_mono_ns();
    struct pool_stats st;
    pool_get_stats(p, &st);
    printf("pool metadata, %s, %ld objects (64-byte key, 1 replica): record %zu B, "
           "record+buckets %.1f B/object, heap %.1f B/object\n",
           cm_mem_allocator_name(), n, pool_object_record_size(64, 1),
           (double)st.meta_bytes / (double)n, (double)(after - before) / (double)n);
    printf("pool rate, 1 thread: %.2f M put/s (start + end), %.2f M get replicas/s\n",
           (double)n * 1e3 / (double)(t1 - t0), (double)n * 1e3 / (double)(t2 - t1));
    pool_destroy(p);
    return 0;
}
