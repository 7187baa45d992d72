/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for keyspace eviction (server/srv_db.c) over a real embedded segment: sampled LRU
 * keeps recently used keys, pinned values are never evicted, allocation past the segment evicts.
 * The WATCH registry and aggregate types are stubbed out below.
 */
#include "common/fmacros.h"

#include "server/srv_db.h"
#include "server/srv_offload.h"
#include "server/srv_pool_seg.h"
#include "server/srv_t.h"
#include "server/srv_watch.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- stubs */

void srv_watch_touch(const char *key, size_t klen) {
    (void)key;
    (void)klen;
}

void srv_watch_touch_existing(int64_t now_ms) {
    (void)now_ms;
}

/* No pool here: the segment holds keys only. */
uint64_t srv_pseg_evict(uint64_t need) {
    (void)need;
    return 0;
}

uint64_t srv__agg_mem(void) {
    return 0;
}

void srv_type_free(enum srv_type type, void *payload) {
    (void)type;
    (void)payload;
}

/* No SSD tier here: nothing is ever offloaded, so only srv_offload_enabled() is called. */
int srv_offload_enabled(void) {
    return 0;
}

uint64_t srv_offload_keys(void) {
    return 0;
}

int srv_offload_write(const struct srv_obj *o, const void *val, uint32_t *gen) {
    (void)o, (void)val, (void)gen;
    abort();
}

int srv_offload_read(const struct srv_obj *o, void *buf) {
    (void)o, (void)buf;
    abort();
}

void srv_offload_forget(const struct srv_obj *o, int promoted) {
    (void)o, (void)promoted;
    abort();
}

uint32_t srv_offload_move(const struct srv_obj *o, const struct srv_obj *n) {
    (void)o, (void)n;
    abort();
}

void srv_offload_set_expire(const struct srv_obj *o) {
    (void)o;
    abort();
}

char *srv_offload_scratch(const struct srv_obj *o) {
    (void)o;
    abort();
}

/* ---------------------------------------------------------------- helpers */

#define SEG_SIZE (16u << 20)

static struct srv_seg *seg;

static void setup(void) {
    cr_assert_eq(srv_seg_create("test-db", SEG_SIZE, &seg), 0);
    cr_assert_eq(srv_db_init(seg), 0);
    srv_db_register_thread(0);
}

static void teardown(void) {
    srv_db_fini();
    srv_seg_destroy(seg);
}

TestSuite(srv_db_evict, .init = setup, .fini = teardown, .timeout = 60);

static size_t key_of(char *buf, size_t n, int i) {
    return (size_t)snprintf(buf, n, "key:%d", i);
}

/* SETs key i to vlen bytes of (i & 0xff); returns 0 or the srv_obj_create error. */
static int put(int i, size_t vlen) {
    char k[32];
    size_t kl = key_of(k, sizeof(k), i);
    struct srv_obj *o;
    int rc = srv_obj_create(k, kl, vlen, vlen, &o);
    if (rc != 0)
        return rc;
    memset(srv_obj_val(o), i & 0xff, vlen);
    struct srv_db_ref r;
    srv_db_rdlock();
    srv_db_lock(&r, k, kl);
    struct srv_obj *old = srv_db_peek(&r, 0);
    if (old)
        srv_db_replace(&r, old, o);
    else
        srv_db_insert(&r, o);
    srv_db_unlock(&r);
    srv_db_rdunlock();
    return 0;
}

/* Looks key i up; touch = 1 updates its LRU clock (GET), 0 does not. pin = 1 pins it. */
static struct srv_obj *lookup(int i, int touch, int pin) {
    char k[32];
    size_t kl = key_of(k, sizeof(k), i);
    struct srv_db_ref r;
    srv_db_lock(&r, k, kl);
    struct srv_obj *o = touch ? srv_db_find(&r, 0) : srv_db_peek(&r, 0);
    if (o && pin)
        srv_obj_ref(o);
    srv_db_unlock(&r);
    return o;
}

/* Calls srv_db_evict(ratio) until at least want keys went or nothing more is evictable. */
static uint64_t evict_at_least(uint64_t want, double ratio) {
    uint64_t total = 0;
    while (total < want) {
        srv_db_rdlock();
        uint64_t n = srv_db_evict(ratio);
        srv_db_rdunlock();
        if (n == 0)
            break;
        total += n;
    }
    return total;
}

/* ---------------------------------------------------------------- tests */

Test(srv_db_evict, prefers_least_recently_used_keys) {
    enum { N = 20000, TOUCHED = N / 4 };
    for (int i = 0; i < N; i++)
        cr_assert_eq(put(i, 100), 0);
    cr_assert_eq(srv_db_size(), N);
    usleep(50 * 1000); /* the LRU clock ticks every 16 ms */
    for (int i = 0; i < TOUCHED; i++)
        cr_assert_not_null(lookup(i * 4, 1, 0), "key %d present before eviction", i * 4);
    uint64_t evicted = evict_at_least(N / 2, 0.5);
    cr_assert_geq(evicted, N / 2);
    cr_assert_eq(srv_db_size(), N - evicted);
    int touched_left = 0, other_left = 0;
    for (int i = 0; i < N; i++) {
        if (!lookup(i, 0, 0))
            continue;
        if (i % 4 == 0)
            touched_left++;
        else
            other_left++;
    }
    cr_log_info("survivors: %d of %d touched keys, %d of %d others", touched_left, TOUCHED,
                other_left, N - TOUCHED);
    /* Exact LRU keeps all 5,000 touched keys; sampling must keep at least 90 % of them. */
    cr_assert_geq(touched_left, TOUCHED * 9 / 10, "only %d of %d recently used keys survived",
                  touched_left, TOUCHED);
    cr_assert_leq(other_left, (N - TOUCHED) / 2, "%d of %d idle keys survived", other_left,
                  N - TOUCHED);
}

Test(srv_db_evict, never_evicts_pinned_values) {
    enum { N = 5000, PINNED = 100 };
    /* The pinned keys are the oldest, the first that LRU would take. */
    for (int i = 0; i < N; i++)
        cr_assert_eq(put(i, 1000 + (size_t)i % 3000), 0);
    struct srv_obj *pins[PINNED];
    for (int i = 0; i < PINNED; i++)
        cr_assert_not_null(pins[i] = lookup(i, 0, 1));
    uint64_t evicted = evict_at_least(UINT64_MAX, 1.0);
    cr_assert_eq(evicted, N - PINNED, "evicted %llu", (unsigned long long)evicted);
    cr_assert_eq(srv_db_size(), PINNED);
    for (int i = 0; i < PINNED; i++) {
        struct srv_obj *o = lookup(i, 0, 0);
        cr_assert_eq(o, pins[i], "pinned key %d still linked", i);
        const unsigned char *v = (const unsigned char *)srv_obj_val(o);
        size_t vlen = 1000 + (size_t)i % 3000;
        cr_assert_eq(o->vlen, vlen);
        for (size_t k = 0; k < vlen; k++)
            cr_assert_eq(v[k], (unsigned)(i & 0xff), "key %d byte %zu", i, k);
    }
    for (int i = 0; i < PINNED; i++)
        srv_obj_unref(pins[i]);
    cr_assert_eq(evict_at_least(UINT64_MAX, 1.0), PINNED, "unpinned keys are evictable again");
    cr_assert_eq(srv_db_size(), 0);
    cr_assert_eq(srv_seg_used(seg), 0, "every block went back to the segment");
}

Test(srv_db_evict, allocation_past_the_segment_evicts) {
    /* 10x the segment in 4 KiB values: every write succeeds, memory stays within the limit. */
    enum { N = 10 * (SEG_SIZE / 4096) };
    for (int i = 0; i < N; i++) {
        cr_assert_eq(put(i, 4096), 0, "write %d", i);
        cr_assert_leq(srv_db_mem_used(), SEG_SIZE, "write %d: %llu bytes used", i,
                      (unsigned long long)srv_db_mem_used());
    }
    struct srv_db_stats st;
    srv_db_get_stats(&st);
    cr_assert_geq(st.evicted_keys, N - SEG_SIZE / 4096);
    cr_assert_eq(st.evicted_keys + srv_db_size(), N);
    cr_assert_not_null(lookup(N - 1, 0, 0), "the last key written survives");
}
