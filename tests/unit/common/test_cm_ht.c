/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cm_hash (distribution, determinism) and the intrusive hash table cm_ht. */
#include "common/fmacros.h"

#include "common/cm_atomic.h"
#include "common/cm_hash.h"
#include "common/cm_ht.h"
#include "common/cm_mem.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct item {
    struct cm_ht_node node;
    char key[24];
    size_t klen;
    int seen;
};

#define ITEM_OF(n) ((struct item *)((char *)(n)-offsetof(struct item, node)))

static int item_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct item *it = (const struct item *)((const char *)n - offsetof(struct item, node));
    return it->klen == klen && memcmp(it->key, key, klen) == 0;
}

static struct item *make_items(size_t n) {
    struct item *items = cm_calloc(n, sizeof(*items));
    for (size_t i = 0; i < n; i++) {
        items[i].klen = (size_t)snprintf(items[i].key, sizeof(items[i].key), "key:%zu", i);
        items[i].node.hash = cm_hash64(items[i].key, items[i].klen, 42);
    }
    return items;
}

Test(cm_hash, deterministic_and_seeded) {
    const char *s = "hello world";
    cr_assert_eq(cm_hash64(s, 11, 1), cm_hash64(s, 11, 1));
    cr_assert_neq(cm_hash64(s, 11, 1), cm_hash64(s, 11, 2));
    cr_assert_neq(cm_hash64(s, 11, 1), cm_hash64(s, 10, 1));
    cr_assert_neq(cm_hash64(NULL, 0, 0), cm_hash64("", 0, 1));
    /* Every length from 0 to 200 hashes differently, and flipping any bit changes the hash. */
    unsigned char buf[200];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 7);
    for (size_t n = 1; n <= sizeof(buf); n++) {
        uint64_t h = cm_hash64(buf, n, 9);
        cr_assert_neq(h, cm_hash64(buf, n - 1, 9), "len %zu", n);
        for (size_t bit = 0; bit < n * 8; bit += 5) {
            buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
            cr_assert_neq(h, cm_hash64(buf, n, 9), "len %zu bit %zu", n, bit);
            buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        }
    }
}

Test(cm_hash, avalanche) {
    /* Flipping one input bit flips about half of the output bits on average. */
    unsigned char buf[64] = {0};
    double total = 0;
    int trials = 0;
    for (size_t n = 1; n <= 64; n += 7) {
        for (size_t bit = 0; bit < n * 8; bit++) {
            uint64_t a = cm_hash64(buf, n, 0);
            buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
            uint64_t b = cm_hash64(buf, n, 0);
            buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
            total += __builtin_popcountll(a ^ b);
            trials++;
        }
    }
    double avg = total / trials;
    cr_assert(avg > 30.0 && avg < 34.0, "average flipped bits %.2f", avg);
}

Test(cm_hash, bucket_distribution) {
    /* Sequential keys spread evenly over 1024 buckets (chi-square well below 1200). */
    enum { NB = 1024, NK = 102400 };
    static unsigned counts[NB];
    char key[32];
    for (int i = 0; i < NK; i++) {
        int n = snprintf(key, sizeof(key), "user:%d", i);
        counts[cm_hash64(key, (size_t)n, 0) & (NB - 1)]++;
    }
    double exp = (double)NK / NB, chi = 0;
    for (int i = 0; i < NB; i++)
        chi += (counts[i] - exp) * (counts[i] - exp) / exp;
    cr_assert_lt(chi, 1200.0, "chi-square %.1f", chi);
}

Test(cm_hash, rand_differs_and_reseeds) {
    cm_rand_seed(5);
    uint64_t a = cm_rand64(), b = cm_rand64();
    cr_assert_neq(a, b);
    cm_rand_seed(5);
    cr_assert_eq(cm_rand64(), a);
    cr_assert_eq(cm_rand64(), b);
}

Test(cm_ht, insert_find_remove_grow_shrink) {
    enum { N = 10000 };
    struct item *items = make_items(N);
    struct cm_ht t;
    cm_ht_init(&t, 5);
    cr_assert_eq(cm_ht_buckets(&t), 8);
    for (size_t i = 0; i < N; i++)
        cm_ht_insert(&t, &items[i].node);
    cr_assert_eq(t.count, N);
    cr_assert_eq(cm_ht_buckets(&t), 16384);
    for (size_t i = 0; i < N; i++) {
        struct cm_ht_node *n =
            cm_ht_find(&t, items[i].node.hash, items[i].key, items[i].klen, item_eq);
        cr_assert_eq(n, &items[i].node, "key %zu", i);
    }
    cr_assert_null(cm_ht_find(&t, cm_hash64("nope", 4, 42), "nope", 4, item_eq));
    for (size_t i = 0; i < N - 10; i++)
        cm_ht_remove(&t, &items[i].node);
    cr_assert_eq(t.count, 10);
    cr_assert_eq(cm_ht_buckets(&t), 32, "shrunk to %zu", cm_ht_buckets(&t));
    cr_assert_null(cm_ht_find(&t, items[0].node.hash, items[0].key, items[0].klen, item_eq));
    cr_assert_eq(
        cm_ht_find(&t, items[N - 1].node.hash, items[N - 1].key, items[N - 1].klen, item_eq),
        &items[N - 1].node);
    for (size_t i = N - 10; i < N; i++)
        cm_ht_remove(&t, &items[i].node);
    cr_assert_eq(t.count, 0);
    cr_assert_eq(cm_ht_buckets(&t), 8, "never below the initial size");
    cm_ht_fini(&t);
    cm_free(items);
}

static void mark_seen(struct cm_ht_node *n, void *arg) {
    (void)arg;
    ITEM_OF(n)->seen++;
}

struct scan_ctx {
    struct cm_ht *t;
    struct item *items;
    size_t next_insert, n_total, removed;
};

Test(cm_ht, scan_survives_grow_and_shrink) {
    enum { N = 4000 };
    struct item *items = make_items(N);
    struct cm_ht t;
    cm_ht_init(&t, 4);
    /* The first 1000 stay for the whole scan; others are added then removed during it. */
    for (size_t i = 0; i < 1000; i++)
        cm_ht_insert(&t, &items[i].node);
    uint64_t cur = 0;
    size_t steps = 0, added = 1000;
    do {
        cur = cm_ht_scan(&t, cur, mark_seen, NULL);
        steps++;
        if (steps % 3 == 0 && added < N) { /* grow */
            for (int k = 0; k < 50 && added < N; k++)
                cm_ht_insert(&t, &items[added++].node);
        }
        if (added == N && steps % 2 == 0) { /* then shrink */
            for (size_t i = 1000; i < N; i++)
                cm_ht_remove(&t, &items[i].node);
        }
    } while (cur != 0);
    for (size_t i = 0; i < 1000; i++)
        cr_assert_geq(items[i].seen, 1, "item %zu not returned", i);
    cm_ht_fini(&t);
    cm_free(items);
}

static void remove_self(struct cm_ht_node *n, void *arg) {
    struct cm_ht *t = arg;
    ITEM_OF(n)->seen++;
    cm_ht_remove(t, n);
}

Test(cm_ht, scan_callback_may_remove_visited_node) {
    enum { N = 3000 };
    struct item *items = make_items(N);
    struct cm_ht t;
    cm_ht_init(&t, 4);
    for (size_t i = 0; i < N; i++)
        cm_ht_insert(&t, &items[i].node);
    uint64_t cur = 0;
    do
        cur = cm_ht_scan(&t, cur, remove_self, &t);
    while (cur != 0);
    cr_assert_eq(t.count, 0);
    for (size_t i = 0; i < N; i++)
        cr_assert_eq(items[i].seen, 1, "item %zu seen %d", i, items[i].seen);
    cm_ht_fini(&t);
    cm_free(items);
}

Test(cm_ht, foreach_clear_random) {
    enum { N = 500 };
    struct item *items = make_items(N);
    struct cm_ht t;
    cm_ht_init(&t, 4);
    cr_assert_null(cm_ht_random(&t));
    for (size_t i = 0; i < N; i++)
        cm_ht_insert(&t, &items[i].node);
    cm_ht_foreach(&t, mark_seen, NULL);
    size_t i, walked = 0;
    struct cm_ht_node *n, *tmp;
    cm_ht_foreach_node(&t, i, n, tmp) {
        walked++;
    }
    cr_assert_eq(walked, N);
    for (size_t k = 0; k < N; k++)
        cr_assert_eq(items[k].seen, 1);
    /* Random picks hit many different nodes. */
    for (int k = 0; k < 5000; k++) {
        struct cm_ht_node *r = cm_ht_random(&t);
        cr_assert_not_null(r);
        ITEM_OF(r)->seen++;
    }
    size_t hit = 0;
    for (size_t k = 0; k < N; k++)
        hit += items[k].seen > 1;
    cr_assert_gt(hit, N * 9 / 10, "random touched only %zu of %d", hit, N);
    /* A sparse big table still returns its one element. */
    cm_ht_foreach(&t, remove_self, &t);
    cr_assert_eq(t.count, 0);
    cm_ht_insert(&t, &items[7].node);
    cr_assert_eq(cm_ht_random(&t), &items[7].node);
    for (size_t k = 0; k < N; k++)
        items[k].seen = 0;
    for (size_t k = 0; k < N; k++)
        if (k != 7)
            cm_ht_insert(&t, &items[k].node);
    cm_ht_clear(&t, mark_seen, NULL);
    cr_assert_eq(t.count, 0);
    cr_assert_eq(cm_ht_buckets(&t), 4);
    for (size_t k = 0; k < N; k++)
        cr_assert_eq(items[k].seen, 1);
    cm_ht_fini(&t);
    cm_free(items);
}

Test(cm_ht, reserve_sizes_once_for_a_bulk_load) {
    struct cm_ht t;
    cm_ht_init(&t, 4);
    cm_ht_reserve(&t, 1000);
    cr_assert_eq(cm_ht_buckets(&t), 1024);
    struct item *items = make_items(1000);
    for (size_t i = 0; i < 1000; i++)
        cm_ht_insert(&t, &items[i].node);
    cr_assert_eq(cm_ht_buckets(&t), 1024, "no resize while loading");
    for (size_t i = 0; i < 1000; i++)
        cr_assert_eq(cm_ht_find(&t, items[i].node.hash, items[i].key, items[i].klen, item_eq),
                     &items[i].node);
    cm_ht_reserve(&t, 10); /* never shrinks */
    cr_assert_eq(cm_ht_buckets(&t), 1024);
    cm_ht_reserve(&t, 1025); /* grows with the nodes in place */
    cr_assert_eq(cm_ht_buckets(&t), 2048);
    for (size_t i = 0; i < 1000; i++)
        cr_assert_eq(cm_ht_find(&t, items[i].node.hash, items[i].key, items[i].klen, item_eq),
                     &items[i].node);
    cm_ht_fini(&t);
    cm_free(items);
}

/*
 * Readers sharing a lock scan one table at once (storage/sto.c: sto_scan under a shard's read
 * lock). The resize pause they take must come back to zero, or the table never resizes again.
 */
struct scan_reader {
    const struct cm_ht *t;
    size_t visited;
};

static void count_node(struct cm_ht_node *n, void *arg) {
    (void)n;
    ((struct scan_reader *)arg)->visited++;
}

static void *scan_reader_main(void *arg) {
    struct scan_reader *r = arg;
    for (int round = 0; round < 300; round++) {
        uint64_t cur = 0;
        do
            cur = cm_ht_scan(r->t, cur, count_node, r);
        while (cur != 0);
    }
    return NULL;
}

Test(cm_ht, concurrent_read_only_scans_leave_resizing_on) {
    enum { N = 4096, LIVE = 256, THREADS = 4, ROUNDS = 8 };
    struct item *items = make_items(N);
    struct cm_ht t;
    cm_ht_init(&t, 4);
    for (size_t i = 0; i < LIVE; i++)
        cm_ht_insert(&t, &items[i].node);
    cr_assert_eq(cm_ht_buckets(&t), LIVE);
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t th[THREADS];
        struct scan_reader r[THREADS];
        for (int k = 0; k < THREADS; k++) {
            r[k] = (struct scan_reader){&t, 0};
            cr_assert_eq(pthread_create(&th[k], NULL, scan_reader_main, &r[k]), 0);
        }
        for (int k = 0; k < THREADS; k++) {
            pthread_join(th[k], NULL);
            cr_assert_eq(r[k].visited, (size_t)300 * LIVE, "thread %d visited %zu", k,
                         r[k].visited);
        }
        cr_assert_eq(cm_atomic_load_relaxed(&t.paused), 0, "round %d left the pause at %u", round,
                     (unsigned)cm_atomic_load_relaxed(&t.paused));
    }
    /* Still resizes both ways: 4096 nodes grow it to 4096 buckets; removals shrink it below a
     * load of 0.1 (to 512 buckets at 409 nodes, then to 64 at 51). */
    for (size_t i = LIVE; i < N; i++)
        cm_ht_insert(&t, &items[i].node);
    cr_assert_eq(cm_ht_buckets(&t), N, "grew to %zu", cm_ht_buckets(&t));
    for (size_t i = 16; i < N; i++)
        cm_ht_remove(&t, &items[i].node);
    cr_assert_eq(cm_ht_buckets(&t), 64, "shrunk to %zu", cm_ht_buckets(&t));
    cm_ht_fini(&t);
    cm_free(items);
}
