/* SPDX-License-Identifier: Apache-2.0 */
/*
 * make bench-daemon: what a dummy client costs. One master, daemon A holding 64 objects of
 * 1 MiB in its segment, daemon B; over tcp and shm it times put_from and get_into of those
 * objects (64 MiB a round, median of 7 rounds) by
 *   direct   an application with its own store (registered buffer, engine in-process),
 *   dummy@B  a dummy client of daemon B (B's engine moves the bytes into the dummy's pool),
 *   dummy@A  a dummy client of daemon A (the replica is in A's own segment: one memcpy),
 * and prints one line per row, plus the copies counted by the daemons. Figures, not a test: it
 * asserts only that the bytes are right and that the dummies' zero-copy calls copied nothing.
 */
#include "common/fmacros.h"

#include "crescent/store.h"
#include "tests/store/daemon_test_util.h"
#include "tests/store/store_test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB    (1u << 20)
#define NKEYS  64
#define ROUNDS 7

static struct st_master master;

static void setup(void) {
    st_master_start(&master, "--client_live_ttl_sec 10");
}

static void teardown(void) {
    st_master_stop(&master);
}

TestSuite(bench_daemon, .init = setup, .fini = teardown, .timeout = 600);

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One row: ROUNDS rounds of NKEYS put_from (fresh keys) and NKEYS get_into; medians in GB/s. */
static void row(const char *proto, const char *mode, struct crescent_store *st, char *buf,
                const char *seg_a) {
    const char *pref[] = {seg_a};
    struct crescent_store_replicate_config on_a = {
        .replica_num = 1, .preferred_segments = pref, .n_preferred_segments = 1};
    double put[ROUNDS], get[ROUNDS];
    char *src = buf, *dst = buf + MIB;
    st_fill(src, MIB, 42);
    for (int r = 0; r < ROUNDS; r++) {
        char key[64];
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long long t0 = ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
        for (int i = 0; i < NKEYS; i++) {
            snprintf(key, sizeof(key), "%s-%s-%d-%d", proto, mode, r, i);
            cr_assert_eq(crescent_store_put_from(st, key, src, MIB, &on_a), 0, "%s",
                         crescent_store_last_error());
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long long t1 = ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
        for (int i = 0; i < NKEYS; i++) {
            snprintf(key, sizeof(key), "%s-%s-%d-%d", proto, mode, r, i);
            cr_assert_eq(crescent_store_get_into(st, key, dst, MIB), MIB);
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long long t2 = ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
        cr_assert(memcmp(src, dst, MIB) == 0);
        put[r] = (double)NKEYS * MIB / (double)(t1 - t0) / 1000.0;
        get[r] = (double)NKEYS * MIB / (double)(t2 - t1) / 1000.0;
        snprintf(key, sizeof(key), "^%s-%s-%d-", proto, mode, r);
        cr_assert_eq(crescent_store_remove_by_regex(st, key, 1), NKEYS);
    }
    qsort(put, ROUNDS, sizeof(double), cmp_double);
    qsort(get, ROUNDS, sizeof(double), cmp_double);
    printf("bench-daemon %-4s %-8s 1 MiB x %d: put_from %6.2f GB/s (%.2f..%.2f)  get_into %6.2f "
           "GB/s (%.2f..%.2f)\n",
           proto, mode, NKEYS, put[ROUNDS / 2], put[0], put[ROUNDS - 1], get[ROUNDS / 2], get[0],
           get[ROUNDS - 1]);
    fflush(stdout);
}

static void bench(const char *proto) {
    struct st_daemon a, b;
    st_daemon_start(&a, &master, 0, proto, "256mb", "10", "100");
    st_daemon_start(&b, &master, 0, proto, "16mb", "10", "100");
    struct crescent_store *direct = st_store(&master, proto, 0);
    char *buf = malloc(2 * MIB);
    cr_assert_eq(crescent_store_register_buffer(direct, buf, 2 * MIB), 0);
    row(proto, "direct", direct, buf, a.segment);
    crescent_store_destroy(direct);
    free(buf);
    struct st_daemon *ds[] = {&b, &a};
    const char *names[] = {"dummy@B", "dummy@A"};
    for (int k = 0; k < 2; k++) {
        struct crescent_store *du = st_dummy(ds[k], 2 * MIB);
        struct crescent_store_daemon_stats s0, s1;
        cr_assert_eq(crescent_store_daemon_stats(du, &s0), 0);
        row(proto, names[k], du, crescent_store_dummy_pool(du, NULL), a.segment);
        cr_assert_eq(crescent_store_daemon_stats(du, &s1), 0);
        printf("bench-daemon %-4s %-8s daemon counters: copied %llu B, staged %llu B, zero-copy "
               "%llu B\n",
               proto, names[k], (unsigned long long)(s1.copied_bytes - s0.copied_bytes),
               (unsigned long long)(s1.staging_bytes - s0.staging_bytes),
               (unsigned long long)(s1.zero_copy_bytes - s0.zero_copy_bytes));
        cr_assert_eq(s1.copied_bytes, s0.copied_bytes);
        cr_assert_eq(s1.staging_bytes, s0.staging_bytes);
        crescent_store_destroy(du);
    }
    cr_assert_eq(st_daemon_stop(&a), 0);
    cr_assert_eq(st_daemon_stop(&b), 0);
}

Test(bench_daemon, tcp) {
    bench("tcp");
}

Test(bench_daemon, shm) {
    bench("shm");
}
