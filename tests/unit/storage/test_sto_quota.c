/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storage/'s byte quota and key limit, for each backend: an overwrite counts no new key and only
 * the growth of its value, alone or in a batch (twice the same key in one batch too), so it
 * succeeds at the limits without evicting; a batch whose new key evicts the object an
 * overwrite of the same batch replaces still ends at the key limit; and several threads doing
 * single and batch puts and removes under a small quota and key limit never take the totals past
 * either limit (sampled by a thread of its own, checked again against a scan and after a restart),
 * while overwrites of keys that stay at their size always succeed.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "tests/unit/storage/sto_test.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mode {
    enum sto_backend_kind kind;
    enum sto_evict_policy policy;
};

static struct mode modes[] = {
    {STO_BACKEND_BUCKET, STO_EVICT_NONE},       {STO_BACKEND_FILE_PER_KEY, STO_EVICT_NONE},
    {STO_BACKEND_OFFSET, STO_EVICT_NONE},       {STO_BACKEND_BUCKET, STO_EVICT_LRU},
    {STO_BACKEND_FILE_PER_KEY, STO_EVICT_FIFO}, {STO_BACKEND_OFFSET, STO_EVICT_FIFO},
};

/* A configuration with the mode's policy, watermarks off (the limits are the hard ones). */
static void mode_config(struct sto_config *cfg, const char *dir, const struct mode *m,
                        uint64_t quota, uint64_t keys) {
    sto_test_config(cfg, dir, m->kind, 0);
    cfg->total_size_limit = quota;
    cfg->total_keys_limit = keys;
    cfg->watermark_eviction = 0;
    cfg->bucket_evict = m->policy;
    cfg->fpk_eviction = m->policy != STO_EVICT_NONE;
    cfg->offset_evict = m->policy;
}

static void key_of(char *k, const char *pfx, int i) {
    snprintf(k, 32, "%s-%03d", pfx, i);
}

struct scan_sum {
    uint64_t keys, bytes;
};

static void scan_add(const void *key, size_t klen, uint64_t size, void *arg) {
    (void)key;
    (void)klen;
    struct scan_sum *c = arg;
    c->keys++;
    c->bytes += size;
}

static struct scan_sum scan_all(struct sto *s) {
    struct scan_sum c = {0};
    uint64_t cur = 0;
    do
        sto_scan(s, &cur, scan_add, &c);
    while (cur != 0);
    return c;
}

/* Puts n keys <prefix><i> of len bytes, key i's value made from seed i, through scratch buffer
 * v (at least len bytes); fails the test on any error. */
static void fill_keys(struct sto *s, const char *prefix, int n, uint8_t *v, size_t len) {
    char k[32];
    for (int i = 0; i < n; i++) {
        key_of(k, prefix, i);
        sto_test_fill(v, len, (uint64_t)i);
        cr_assert_eq(sto_put_buf(s, k, strlen(k), v, len), 0, "fill %d", i);
    }
}

/* ------------------------------------------------------------ overwrites at the limits */

ParameterizedTestParameters(quota, overwrite_at_key_limit) {
    return cr_make_param_array(struct mode, modes, sizeof(modes) / sizeof(modes[0]));
}

/* At the key limit, overwrites (single, batch, a key twice in one batch) succeed and evict
 * nothing; the key count stays put; only a new key needs room. */
ParameterizedTest(struct mode *m, quota, overwrite_at_key_limit) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    mode_config(&cfg, dir, m, 4 * MIB, 8);
    struct sto *s = sto_test_open(&cfg);
    uint8_t v[1000];
    char k[32];
    fill_keys(s, "k", 8, v, sizeof(v));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 8; i++) {
            key_of(k, "k", i);
            sto_test_fill(v, sizeof(v), (uint64_t)(100 * round + i));
            cr_assert_eq(sto_put_buf(s, k, strlen(k), v, sizeof(v)), 0, "overwrite %d", i);
        }
    }
    char bk[9][32];
    struct sto_put_item it[9];
    for (int i = 0; i < 9; i++) {
        key_of(bk[i], "k", i < 8 ? i : 3); /* k-003 twice */
        it[i] = (struct sto_put_item){bk[i], strlen(bk[i]), v, sizeof(v), 1};
    }
    cr_assert_eq(sto_batch_put(s, it, 9), 9);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(it[i].result, 0, "batch item %d: %d", i, it[i].result);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.keys, 8);
    cr_assert_eq(st.bytes, 8 * sizeof(v));
    cr_assert_eq(st.evictions, 0);
    cr_assert_eq(st.reserved_keys, 0);
    /* a new key at the limit */
    int rc = sto_put_buf(s, "new", 3, v, sizeof(v));
    sto_stats(s, &st);
    if (m->policy == STO_EVICT_NONE) {
        cr_assert_eq(rc, -EDQUOT);
        cr_assert_eq(st.evictions, 0);
    } else {
        cr_assert_eq(rc, 0);
        cr_assert_eq(st.evictions, 1);
    }
    cr_assert_eq(st.keys, 8);
    sto_close(s);
    s = sto_test_open(&cfg);
    sto_stats(s, &st);
    cr_assert_eq(st.keys, 8);
    cr_assert_eq(st.bytes, 8 * sizeof(v));
    sto_close(s);
    sto_test_rmdir(dir);
}

static struct mode evict_modes[] = {
    {STO_BACKEND_BUCKET, STO_EVICT_LRU},
    {STO_BACKEND_FILE_PER_KEY, STO_EVICT_FIFO},
    {STO_BACKEND_OFFSET, STO_EVICT_FIFO},
};

ParameterizedTestParameters(quota, batch_overwrites_first_victim) {
    return cr_make_param_array(struct mode, evict_modes,
                               sizeof(evict_modes) / sizeof(evict_modes[0]));
}

/* At the key limit, a batch overwrites the first victim and adds a new key: making room for
 * the new key evicts the object the overwrite replaces, so the overwrite adds a key after all;
 * publishing it must make room again rather than go past the limit. */
ParameterizedTest(struct mode *m, quota, batch_overwrites_first_victim) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    mode_config(&cfg, dir, m, 4 * MIB, 8);
    struct sto *s = sto_test_open(&cfg);
    uint8_t v[1000];
    char k[32];
    sto_test_fill(v, sizeof(v), 7);
    for (int i = 0; i < 8; i++) {
        key_of(k, "k", i);
        cr_assert_eq(sto_put_buf(s, k, strlen(k), v, sizeof(v)), 0, "fill %d", i);
    }
    struct sto_put_item it[2] = {{"k-000", 5, v, sizeof(v), 1}, {"new", 3, v, sizeof(v), 1}};
    cr_assert_eq(sto_batch_put(s, it, 2), 2);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.keys, 8, "keys %llu", (unsigned long long)st.keys);
    cr_assert_eq(st.bytes, 8 * sizeof(v));
    cr_assert_eq(st.evictions, 2);
    cr_assert_eq(sto_get_size(s, "k-000", 5), (ssize_t)sizeof(v));
    cr_assert_eq(sto_get_size(s, "new", 3), (ssize_t)sizeof(v));
    struct scan_sum c = scan_all(s);
    cr_assert_eq(c.keys, 8);
    sto_close(s);
    sto_test_rmdir(dir);
}

static struct mode byte_modes[] = {
    /* the offset layout's quota is its file's size, which records (headers, alignment) fill
     * before their values fill the quota */
    {STO_BACKEND_BUCKET, STO_EVICT_NONE},
    {STO_BACKEND_FILE_PER_KEY, STO_EVICT_NONE},
    {STO_BACKEND_BUCKET, STO_EVICT_FIFO},
    {STO_BACKEND_FILE_PER_KEY, STO_EVICT_FIFO},
};

ParameterizedTestParameters(quota, overwrite_at_byte_quota) {
    return cr_make_param_array(struct mode, byte_modes, sizeof(byte_modes) / sizeof(byte_modes[0]));
}

/* With the byte quota full, an overwrite needs room only for its growth. */
ParameterizedTest(struct mode *m, quota, overwrite_at_byte_quota) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    mode_config(&cfg, dir, m, 64 * KIB, 1000);
    struct sto *s = sto_test_open(&cfg);
    static uint8_t v[8 * KIB];
    char k[32];
    fill_keys(s, "b", 16, v, 4 * KIB);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.bytes, 64 * KIB);
    key_of(k, "b", 0);
    cr_assert_eq(sto_put_buf(s, k, strlen(k), v, 4 * KIB), 0, "same size");
    cr_assert_eq(sto_put_buf(s, k, strlen(k), v, 2 * KIB), 0, "smaller");
    key_of(k, "b", 1);
    cr_assert_eq(sto_put_buf(s, k, strlen(k), v, 6 * KIB), 0, "grows into the freed 2 KiB");
    char bk[3][32];
    struct sto_put_item it[3];
    for (int i = 0; i < 3; i++) {
        key_of(bk[i], "b", 2 + i);
        it[i] = (struct sto_put_item){bk[i], strlen(bk[i]), v, 4 * KIB, 1};
    }
    cr_assert_eq(sto_batch_put(s, it, 3), 3);
    sto_stats(s, &st);
    cr_assert_eq(st.bytes, 64 * KIB);
    cr_assert_eq(st.keys, 16);
    cr_assert_eq(st.evictions, 0);
    /* growth past the quota (b-001 is not the first victim: that is b-005) */
    key_of(k, "b", 1);
    int rc = sto_put_buf(s, k, strlen(k), v, 6 * KIB + 1);
    sto_stats(s, &st);
    if (m->policy == STO_EVICT_NONE) {
        cr_assert_eq(rc, -EDQUOT);
        cr_assert_eq(st.bytes, 64 * KIB);
    } else {
        cr_assert_eq(rc, 0);
        cr_assert_eq(st.evictions, 1);
    }
    cr_assert_leq(st.bytes, 64 * KIB);
    sto_close(s);
    sto_test_rmdir(dir);
}

/* ------------------------------------------------------------ threads under small limits */

#define NTHREADS 4
#define POOL     40 /* keys the threads share */
#define PINNED   2  /* keys per thread only overwritten, at their size, by that thread */
#define OPS      600
#define QUOTA    (96 * KIB)
#define KEYS     16
#define MAXV     (8 * KIB)

struct worker {
    pthread_t tid;
    int id;
    struct sto *s;
    const struct mode *m;
    unsigned rnd;
};

static bool stop_sampler;
static uint64_t quota_bytes, samples;

static unsigned next_rand(unsigned *x) {
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* A put's result the mode allows: full limits refuse new keys only without eviction. */
static bool put_rc_ok(const struct mode *m, int rc) {
    if (rc == 0)
        return true;
    return m->policy == STO_EVICT_NONE && (rc == -EDQUOT || rc == -ENOSPC);
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    static uint8_t vals[NTHREADS][8][MAXV];
    uint8_t(*v)[MAXV] = vals[w->id];
    for (int j = 0; j < 8; j++)
        sto_test_fill(v[j], MAXV, (uint64_t)(w->id * 8 + j));
    char pk[32];
    for (int op = 0; op < OPS && !sto_test_failed(); op++) {
        unsigned r = next_rand(&w->rnd) % 10;
        char k[8][32];
        if (r < 2) { /* overwrite a pinned key of this thread at its size */
            int i = w->id * PINNED + (int)(next_rand(&w->rnd) % PINNED);
            key_of(pk, "pin", i);
            int rc = sto_put_buf(w->s, pk, strlen(pk), v[0], 1024);
            if (rc != 0) /* no growth, no new key (or room made by eviction) */
                sto_test_fail("thread %d: overwrite of %s: %d", w->id, pk, rc);
        } else if (r < 5) {
            key_of(k[0], "pool", (int)(next_rand(&w->rnd) % POOL));
            size_t len = 1 + next_rand(&w->rnd) % MAXV;
            int rc = sto_put_buf(w->s, k[0], strlen(k[0]), v[1], len);
            if (!put_rc_ok(w->m, rc))
                sto_test_fail("thread %d: put %s: %d", w->id, k[0], rc);
        } else if (r < 9) {
            struct sto_put_item it[8];
            unsigned n = 1 + next_rand(&w->rnd) % 8;
            for (unsigned j = 0; j < n; j++) {
                key_of(k[j], "pool", (int)(next_rand(&w->rnd) % POOL));
                size_t len = 1 + next_rand(&w->rnd) % MAXV;
                it[j] = (struct sto_put_item){k[j], strlen(k[j]), v[j], len, 1};
            }
            sto_batch_put(w->s, it, n);
            for (unsigned j = 0; j < n; j++)
                if (!put_rc_ok(w->m, it[j].result))
                    sto_test_fail("thread %d: batch put %s: %d", w->id, k[j], it[j].result);
        } else {
            key_of(k[0], "pool", (int)(next_rand(&w->rnd) % POOL));
            int rc = sto_remove(w->s, k[0], strlen(k[0]));
            if (rc != 0 && rc != -CM_EOBJECT_NOT_FOUND)
                sto_test_fail("thread %d: remove %s: %d", w->id, k[0], rc);
        }
    }
    return NULL;
}

/* Samples the totals while the workers run. */
static void *sampler_main(void *arg) {
    struct sto *s = arg;
    while (!__atomic_load_n(&stop_sampler, __ATOMIC_ACQUIRE) && !sto_test_failed()) {
        struct sto_stats st;
        sto_stats(s, &st);
        if (st.bytes > quota_bytes || st.keys > KEYS)
            sto_test_fail("sampled %llu bytes (quota %llu), %llu keys (limit %d)",
                          (unsigned long long)st.bytes, (unsigned long long)quota_bytes,
                          (unsigned long long)st.keys, KEYS);
        samples++;
        sched_yield();
    }
    return NULL;
}

ParameterizedTestParameters(quota, threads_under_limits) {
    return cr_make_param_array(struct mode, modes, sizeof(modes) / sizeof(modes[0]));
}

ParameterizedTest(struct mode *m, quota, threads_under_limits, .timeout = 300) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    /* the offset layout's file is its quota: roomy there, so that the key limit binds */
    mode_config(&cfg, dir, m, m->kind == STO_BACKEND_OFFSET ? 1 * MIB : QUOTA, KEYS);
    struct sto *s = sto_test_open(&cfg);
    struct sto_stats st;
    sto_stats(s, &st);
    quota_bytes = st.quota_bytes;
    static uint8_t pv[1024];
    char k[32];
    for (int i = 0; i < NTHREADS * PINNED; i++) {
        key_of(k, "pin", i);
        cr_assert_eq(sto_put_buf(s, k, strlen(k), pv, sizeof(pv)), 0);
    }
    sto_test_fail_reset();
    stop_sampler = false;
    samples = 0;
    pthread_t sampler;
    cr_assert_eq(pthread_create(&sampler, NULL, sampler_main, s), 0);
    struct worker w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t] = (struct worker){.id = t, .s = s, .m = m, .rnd = 0x9e3779b9u * (unsigned)(t + 1)};
        cr_assert_eq(pthread_create(&w[t].tid, NULL, worker_main, &w[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(w[t].tid, NULL);
    __atomic_store_n(&stop_sampler, true, __ATOMIC_RELEASE);
    pthread_join(sampler, NULL);
    cr_assert(!sto_test_failed(), "%s", sto_test_fail_msg());
    cr_assert_gt(samples, 0);
    sto_stats(s, &st);
    cr_assert_leq(st.bytes, quota_bytes);
    cr_assert_leq(st.keys, KEYS);
    cr_assert_eq(st.reserved_bytes, 0);
    cr_assert_eq(st.reserved_keys, 0);
    struct scan_sum c = scan_all(s);
    cr_assert_eq(c.keys, st.keys);
    cr_assert_eq(c.bytes, st.bytes);
    if (m->policy == STO_EVICT_NONE) /* pinned keys are never evicted */
        for (int i = 0; i < NTHREADS * PINNED; i++) {
            key_of(k, "pin", i);
            cr_assert_eq(sto_get_size(s, k, strlen(k)), (ssize_t)sizeof(pv), "%s", k);
        }
    sto_close(s);
    s = sto_test_open(&cfg);
    struct sto_stats st2;
    sto_stats(s, &st2);
    cr_assert_eq(st2.keys, st.keys);
    cr_assert_eq(st2.bytes, st.bytes);
    sto_close(s);
    sto_test_rmdir(dir);
}
