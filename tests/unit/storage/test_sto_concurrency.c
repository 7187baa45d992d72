/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storage/ under concurrent callers, for each backend: several threads put (single and batch),
 * get (single and batch), remove and scan keys of their own and keys they share. Every value
 * read is checked byte-exact (a thread's own keys against what it last wrote, shared keys
 * against the self-describing value they carry); afterwards the store is closed and the restart
 * scan must find exactly the surviving keys, byte-exact. Run once with room for everything and
 * once with a 1 MiB quota under fifo and lru eviction, where evictions race the gets (a key of a
 * thread's own may then also be gone, but never come back or read an older value).
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "tests/unit/storage/sto_test.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define OWN      16 /* keys of each thread's own */
#define SHARED   8  /* keys every thread writes */
#define OPS      1000
#define MAXV     (48 * 1024)

struct mode {
    enum sto_backend_kind kind;
    enum sto_evict_policy policy; /* NONE: room for everything */
};

static struct mode modes[] = {
    {STO_BACKEND_BUCKET, STO_EVICT_NONE},       {STO_BACKEND_FILE_PER_KEY, STO_EVICT_NONE},
    {STO_BACKEND_OFFSET, STO_EVICT_NONE},       {STO_BACKEND_BUCKET, STO_EVICT_LRU},
    {STO_BACKEND_FILE_PER_KEY, STO_EVICT_FIFO}, {STO_BACKEND_OFFSET, STO_EVICT_FIFO},
    {STO_BACKEND_OFFSET, STO_EVICT_LRU},
};

/* A value's length follows from its seed, which its first 8 bytes hold. */
static size_t len_of(uint64_t seed) {
    return 16 + (size_t)((seed * 2654435761u) % (MAXV - 16));
}

static void make_value(uint8_t *buf, uint64_t seed) {
    memcpy(buf, &seed, 8);
    sto_test_fill(buf + 8, len_of(seed) - 8, seed);
}

#define EXPECT(cond, ...)               \
    do {                                \
        if (!(cond)) {                  \
            sto_test_fail(__VA_ARGS__); \
            return false;               \
        }                               \
    } while (0)

/* Checks that n bytes read back for key are the value their seed makes; *seed gets it. */
static bool check_value(const uint8_t *buf, ssize_t n, const char *key, uint64_t *seed) {
    EXPECT(n >= 16, "%s: %zd bytes", key, n);
    memcpy(seed, buf, 8);
    EXPECT((size_t)n == len_of(*seed), "%s: length %zd for seed %llx", key, n,
           (unsigned long long)*seed);
    uint8_t *want = malloc(MAXV);
    make_value(want, *seed);
    bool same = memcmp(buf, want, (size_t)n) == 0;
    free(want);
    EXPECT(same, "%s: bytes differ", key);
    return true;
}

static void own_key(char *k, int t, int i) {
    snprintf(k, 32, "t%d-own-%d", t, i);
}

static void shared_key(char *k, int i) {
    snprintf(k, 32, "shared-%d", i);
}

struct worker {
    pthread_t tid;
    struct sto *s;
    int t;
    uint64_t own[OWN]; /* seed last written, 0 when absent */
    bool evicting;     /* the store evicts: an own key may vanish */
    unsigned rng;
};

static unsigned next_rand(unsigned *x) {
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* Picks a key (own or shared); *own_i is the own index or -1. */
static void pick(struct worker *w, char *k, int *own_i) {
    unsigned r = next_rand(&w->rng);
    if (r % 3 == 0) {
        shared_key(k, (int)((r / 3) % SHARED));
        *own_i = -1;
    } else {
        *own_i = (int)((r / 3) % OWN);
        own_key(k, w->t, *own_i);
    }
}

/* Checks one get result for key k. */
static bool check_get(struct worker *w, const char *k, int own_i, const uint8_t *buf, ssize_t n) {
    if (own_i >= 0 && w->evicting && n == -CM_EOBJECT_NOT_FOUND)
        w->own[own_i] = 0; /* evicted: gone for good until this thread writes it again */
    if (own_i >= 0 && w->own[own_i] == 0) {
        EXPECT(n == -CM_EOBJECT_NOT_FOUND, "%s: removed, yet %zd", k, n);
        return true;
    }
    if (own_i < 0 && n == -CM_EOBJECT_NOT_FOUND)
        return true; /* a shared key another thread removed */
    uint64_t seed;
    if (!check_value(buf, n, k, &seed))
        return false;
    if (own_i >= 0)
        EXPECT(seed == w->own[own_i], "%s: an older value", k);
    return true;
}

static void scan_count(const void *key, size_t klen, uint64_t size, void *arg) {
    (void)key;
    (void)klen;
    (void)size;
    (*(int *)arg)++;
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    uint8_t *v = malloc(MAXV), *got = malloc(4 * MAXV);
    uint64_t serial = 0;
    for (int op = 0; op < OPS; op++) {
        unsigned what = next_rand(&w->rng) % 10;
        char k[4][32];
        int oi[4];
        if (what < 3) { /* put */
            pick(w, k[0], &oi[0]);
            uint64_t seed = ((uint64_t)(w->t + 1) << 32) | ++serial;
            make_value(v, seed);
            int rc = sto_put_buf(w->s, k[0], strlen(k[0]), v, len_of(seed));
            if (rc != 0) {
                sto_test_fail("put %s: %d", k[0], rc);
                break;
            }
            if (oi[0] >= 0)
                w->own[oi[0]] = seed;
        } else if (what < 4) { /* batch put of distinct keys */
            struct sto_put_item it[3];
            uint8_t *vals = malloc(3 * MAXV);
            uint64_t seeds[3];
            int n = 0;
            for (int j = 0; j < 3; j++) {
                pick(w, k[n], &oi[n]);
                bool dup = false;
                for (int q = 0; q < n; q++)
                    dup |= strcmp(k[q], k[n]) == 0;
                if (dup)
                    continue;
                seeds[n] = ((uint64_t)(w->t + 1) << 32) | ++serial;
                make_value(vals + (size_t)n * MAXV, seeds[n]);
                it[n] = (struct sto_put_item){.key = k[n],
                                              .klen = strlen(k[n]),
                                              .value = vals + (size_t)n * MAXV,
                                              .len = len_of(seeds[n])};
                n++;
            }
            int ok = sto_batch_put(w->s, it, (size_t)n);
            if (ok != n) {
                sto_test_fail("batch put: %d of %d", ok, n);
                free(vals);
                break;
            }
            for (int j = 0; j < n; j++)
                if (oi[j] >= 0)
                    w->own[oi[j]] = seeds[j];
            free(vals);
        } else if (what < 6) { /* get */
            pick(w, k[0], &oi[0]);
            ssize_t n = sto_get(w->s, k[0], strlen(k[0]), got, MAXV);
            if (!check_get(w, k[0], oi[0], got, n))
                break;
        } else if (what < 8) { /* batch get, keys may repeat */
            struct sto_get_item it[4];
            for (int j = 0; j < 4; j++) {
                pick(w, k[j], &oi[j]);
                it[j] = (struct sto_get_item){
                    .key = k[j], .klen = strlen(k[j]), .buf = got + (size_t)j * MAXV, .cap = MAXV};
            }
            sto_batch_get(w->s, it, 4);
            bool good = true;
            for (int j = 0; j < 4 && good; j++)
                good = check_get(w, k[j], oi[j], it[j].buf, it[j].result);
            if (!good)
                break;
        } else if (what < 9) { /* remove */
            pick(w, k[0], &oi[0]);
            int rc = sto_remove(w->s, k[0], strlen(k[0]));
            int want = oi[0] >= 0 && !w->own[oi[0]] ? -CM_EOBJECT_NOT_FOUND : 0;
            bool either = oi[0] < 0 || (w->evicting && want == 0);
            if (rc != want && (!either || rc != -CM_EOBJECT_NOT_FOUND)) {
                sto_test_fail("remove %s: %d", k[0], rc);
                break;
            }
            if (oi[0] >= 0)
                w->own[oi[0]] = 0;
        } else { /* scan */
            int n = 0;
            uint64_t cur = 0;
            do {
                sto_scan(w->s, &cur, scan_count, &n);
            } while (cur != 0);
            if (n > NTHREADS * OWN + SHARED) {
                sto_test_fail("scan listed %d keys", n);
                break;
            }
        }
    }
    free(got);
    free(v);
    return NULL;
}

struct survivor {
    char key[32];
    uint64_t seed;
    int seen; /* times the restart scan listed it */
};

struct scan_check {
    struct survivor *sv;
    int n;
    int unknown;
};

static void scan_mark(const void *key, size_t klen, uint64_t size, void *arg) {
    struct scan_check *c = arg;
    for (int i = 0; i < c->n; i++) {
        if (strlen(c->sv[i].key) == klen && memcmp(c->sv[i].key, key, klen) == 0) {
            cr_assert_eq(size, len_of(c->sv[i].seed), "%s: scanned size", c->sv[i].key);
            c->sv[i].seen++;
            return;
        }
    }
    c->unknown++;
}

ParameterizedTestParameters(sto_concurrency, mixed_ops_then_restart) {
    return cr_make_param_array(struct mode, modes, sizeof(modes) / sizeof(modes[0]));
}

ParameterizedTest(struct mode *m, sto_concurrency, mixed_ops_then_restart, .timeout = 120) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, m->kind, 1);
    bool evicting = m->policy != STO_EVICT_NONE;
    if (evicting) {
        cfg.total_size_limit = 1 * MIB; /* about 40 values: evictions all the time */
        cfg.bucket_evict = cfg.offset_evict = m->policy;
        cfg.fpk_eviction = 1;
    }
    struct sto *s = sto_test_open(&cfg);
    struct worker w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t] = (struct worker){
            .s = s, .t = t, .evicting = evicting, .rng = 0x9e3779b9u * (unsigned)(t + 1)};
        cr_assert_eq(pthread_create(&w[t].tid, NULL, worker_main, &w[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(w[t].tid, NULL);
    cr_assert(!sto_test_failed(), "%s", sto_test_fail_msg());

    /* The survivors: each thread's own keys as it left them, the shared ones as read now. */
    struct survivor sv[NTHREADS * OWN + SHARED];
    int nsv = 0;
    uint8_t *got = malloc(MAXV);
    for (int t = 0; t < NTHREADS; t++) {
        for (int i = 0; i < OWN; i++) {
            char k[32];
            own_key(k, t, i);
            ssize_t n = sto_get(s, k, strlen(k), got, MAXV);
            cr_assert(check_get(&w[t], k, i, got, n), "%s", sto_test_fail_msg());
            if (w[t].own[i]) {
                snprintf(sv[nsv].key, sizeof(sv[nsv].key), "%s", k);
                sv[nsv++].seed = w[t].own[i];
            }
        }
    }
    for (int i = 0; i < SHARED; i++) {
        char k[32];
        shared_key(k, i);
        ssize_t n = sto_get(s, k, strlen(k), got, MAXV);
        if (n == -CM_EOBJECT_NOT_FOUND)
            continue;
        snprintf(sv[nsv].key, sizeof(sv[nsv].key), "%s", k);
        cr_assert(check_value(got, n, k, &sv[nsv].seed), "%s", sto_test_fail_msg());
        nsv++;
    }
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.keys, (uint64_t)nsv);
    if (evicting)
        cr_assert_gt(st.evictions, 0, "the quota made room by evicting");
    sto_close(s);

    /* The restart scan finds exactly the survivors, byte-exact. */
    s = sto_test_open(&cfg);
    sto_stats(s, &st);
    cr_assert_eq(st.keys, (uint64_t)nsv, "recovered %llu keys, %d survived",
                 (unsigned long long)st.keys, nsv);
    cr_assert_eq(st.torn + st.corrupt, 0);
    struct scan_check c = {.sv = sv, .n = nsv};
    uint64_t cur = 0;
    do {
        sto_scan(s, &cur, scan_mark, &c);
    } while (cur != 0);
    cr_assert_eq(c.unknown, 0, "the scan listed keys that were removed");
    for (int i = 0; i < nsv; i++) {
        cr_assert_eq(sv[i].seen, 1, "%s listed %d times", sv[i].key, sv[i].seen);
        ssize_t n = sto_get(s, sv[i].key, strlen(sv[i].key), got, MAXV);
        uint64_t seed = 0;
        cr_assert(check_value(got, n, sv[i].key, &seed), "after restart: %s", sto_test_fail_msg());
        cr_assert_eq(seed, sv[i].seed, "%s: after restart", sv[i].key);
    }
    for (int t = 0; t < NTHREADS; t++) {
        for (int i = 0; i < OWN; i++) {
            char k[32];
            own_key(k, t, i);
            if (!w[t].own[i])
                cr_assert_eq(sto_exists(s, k, strlen(k)), 0, "%s came back", k);
        }
    }
    sto_close(s);
    free(got);
    sto_test_rmdir(dir);
}
