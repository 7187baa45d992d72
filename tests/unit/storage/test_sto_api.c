/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storage/ API tests, for each backend and both I/O paths: round trips from 1 B to 64 MiB,
 * batches, overwrite, remove, restart after a clean close, corrupt bytes caught by the CRC,
 * quotas and each eviction policy.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "tests/unit/storage/sto_test.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mode {
    enum sto_backend_kind kind;
    int uring;
};

static struct mode modes[] = {
    {STO_BACKEND_BUCKET, 0},       {STO_BACKEND_BUCKET, 1}, {STO_BACKEND_FILE_PER_KEY, 0},
    {STO_BACKEND_FILE_PER_KEY, 1}, {STO_BACKEND_OFFSET, 0}, {STO_BACKEND_OFFSET, 1},
};

ParameterizedTestParameters(sto, round_trip) {
    return cr_make_param_array(struct mode, modes, sizeof(modes) / sizeof(modes[0]));
}

/* Puts, gets and checks one object of len bytes (value derived from seed). */
static void put_get(struct sto *s, const char *key, size_t len, uint64_t seed) {
    uint8_t *v = malloc(len ? len : 1), *back = malloc(len + 1);
    sto_test_fill(v, len, seed);
    cr_assert_eq(sto_put_buf(s, key, strlen(key), v, len), 0, "put %s (%zu)", key, len);
    cr_assert_eq(sto_get_size(s, key, strlen(key)), (ssize_t)len);
    cr_assert_eq(sto_get(s, key, strlen(key), back + 1, len), (ssize_t)len, "get %s", key);
    cr_assert(memcmp(v, back + 1, len) == 0, "value of %s", key);
    free(v);
    free(back);
}

/* Checks key's value against seed. */
static void check(struct sto *s, const char *key, size_t len, uint64_t seed) {
    uint8_t *v = malloc(len ? len : 1), *back = malloc(len ? len : 1);
    sto_test_fill(v, len, seed);
    ssize_t got = sto_get(s, key, strlen(key), back, len);
    cr_assert_eq(got, (ssize_t)len, "get %s: %zd", key, got);
    cr_assert(memcmp(v, back, len) == 0, "value of %s", key);
    free(v);
    free(back);
}

static const size_t sizes[] = {1, 7, 511, 512, 4096, 4097, 65536, 1048576 + 3, 3 * MIB, 64 * MIB};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

ParameterizedTest(struct mode *m, sto, round_trip, .timeout = 60) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, m->kind, m->uring);
    struct sto *s = sto_test_open(&cfg);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_str_eq(st.backend, sto_backend_name(m->kind));
    if (m->uring && strcmp(st.io, "io_uring") != 0)
        cr_log_warn("io_uring not available here: %s", st.io_note);
    if (!m->uring)
        cr_assert_str_eq(st.io, "psync");
    char key[64];
    for (size_t i = 0; i < NSIZES; i++) {
        snprintf(key, sizeof(key), "obj-%zu", sizes[i]);
        put_get(s, key, sizes[i], i + 1);
    }
    /* Aligned buffers take the direct path. */
    uint8_t *al = aligned_alloc(4096, 8192), *v = malloc(8192);
    sto_test_fill(v, 8192, 99);
    cr_assert_eq(sto_put_buf(s, "aligned", 7, v, 8192), 0);
    cr_assert_eq(sto_get(s, "aligned", 7, al, 8192), 8192);
    cr_assert(memcmp(al, v, 8192) == 0);
    /* An empty value. */
    cr_assert_eq(sto_put(s, "empty", 5, NULL, 0), 0);
    cr_assert_eq(sto_get_size(s, "empty", 5), 0);
    cr_assert_eq(sto_get(s, "empty", 5, al, 0), 0);
    cr_assert_eq(sto_remove(s, "empty", 5), 0);
    /* Errors. */
    cr_assert_eq(sto_get(s, "obj-4096", 8, al, 4095), -ENOBUFS);
    cr_assert_eq(sto_get(s, "nope", 4, al, 10), -CM_EOBJECT_NOT_FOUND);
    cr_assert_eq(sto_put_buf(s, "", 0, v, 1), -EINVAL);
    cr_assert_eq(sto_exists(s, "obj-1", 5), 1);
    cr_assert_eq(sto_exists(s, "nope", 4), 0);
    /* Overwrite, remove. */
    put_get(s, "obj-7", 100, 1234);
    cr_assert_eq(sto_remove(s, "obj-511", 7), 0);
    cr_assert_eq(sto_remove(s, "obj-511", 7), -CM_EOBJECT_NOT_FOUND);
    cr_assert_eq(sto_exists(s, "obj-511", 7), 0);
    sto_stats(s, &st);
    cr_assert_eq(st.keys, NSIZES);
    sto_close(s);

    /* Restart: every object is back, removals and overwrites included. */
    s = sto_test_open(&cfg);
    sto_stats(s, &st);
    cr_assert_eq(st.keys, NSIZES, "keys after restart: %llu", (unsigned long long)st.keys);
    cr_assert_eq(st.recovered, NSIZES);
    cr_assert_eq(st.torn, 0);
    cr_assert_eq(st.corrupt, 0);
    for (size_t i = 0; i < NSIZES; i++) {
        snprintf(key, sizeof(key), "obj-%zu", sizes[i]);
        if (sizes[i] == 511)
            cr_assert_eq(sto_exists(s, key, strlen(key)), 0);
        else if (sizes[i] == 7)
            check(s, key, 100, 1234);
        else
            check(s, key, sizes[i], i + 1);
    }
    sto_close(s);
    free(al);
    free(v);
    sto_test_rmdir(dir);
}

ParameterizedTestParameters(sto, batch) {
    return cr_make_param_array(struct mode, modes, sizeof(modes) / sizeof(modes[0]));
}

static void count_cb(const void *key, size_t klen, uint64_t size, void *arg) {
    (void)key;
    (void)klen;
    (void)size;
    (*(uint64_t *)arg)++;
}

ParameterizedTest(struct mode *m, sto, batch, .timeout = 60) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, m->kind, m->uring);
    cfg.scanmeta_keys_limit = 7;
    struct sto *s = sto_test_open(&cfg);
    enum { N = 100 };
    struct sto_put_item pi[N];
    struct sto_get_item gi[N + 1];
    char keys[N][16];
    uint8_t *vals[N], *outs[N];
    for (int i = 0; i < N; i++) {
        size_t len = (size_t)(i * 7919 % 300000) + 1;
        snprintf(keys[i], sizeof(keys[i]), "b%d", i);
        vals[i] = malloc(len);
        outs[i] = malloc(len);
        sto_test_fill(vals[i], len, (uint64_t)i);
        pi[i] = (struct sto_put_item){
            .key = keys[i], .klen = strlen(keys[i]), .value = vals[i], .len = len};
    }
    cr_assert_eq(sto_batch_put(s, pi, N), N);
    for (int i = 0; i < N; i++)
        gi[i] = (struct sto_get_item){
            .key = keys[i], .klen = strlen(keys[i]), .buf = outs[i], .cap = pi[i].len};
    gi[N] = (struct sto_get_item){.key = "missing", .klen = 7, .buf = outs[0], .cap = 1};
    cr_assert_eq(sto_batch_get(s, gi, N + 1), N);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(gi[i].result, (ssize_t)pi[i].len, "item %d: %zd", i, gi[i].result);
        cr_assert(memcmp(vals[i], outs[i], pi[i].len) == 0, "item %d", i);
    }
    cr_assert_eq(gi[N].result, -CM_EOBJECT_NOT_FOUND);
    /* Scan in steps of MOONCAKE_OFFLOAD_SCANMETA_ITERATOR_KEYS_LIMIT keys. */
    uint64_t cursor = 0, total = 0;
    int calls = 0;
    do {
        int n = sto_scan(s, &cursor, count_cb, &total);
        cr_assert(n >= 0);
        calls++;
    } while (cursor != 0);
    cr_assert_eq(total, N, "no insert meanwhile: each key exactly once, across the shards");
    cr_assert_gt(calls, 1, "the scan took %d calls", calls);
    sto_close(s);
    for (int i = 0; i < N; i++) {
        free(vals[i]);
        free(outs[i]);
    }
    sto_test_rmdir(dir);
}
