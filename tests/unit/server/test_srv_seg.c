/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the embedded segment: slab classes, TLSF blocks, reuse, accounting and page
 * reclaim. */
#include "common/fmacros.h"

#include "server/srv_seg.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define SEG_SIZE (8u << 20)

static struct srv_seg *seg;

static void setup(void) {
    cr_assert_eq(srv_seg_create("test", SEG_SIZE, &seg), 0);
}

static void teardown(void) {
    srv_seg_destroy(seg);
}

TestSuite(srv_seg, .init = setup, .fini = teardown);

Test(srv_seg, small_values_use_slab_classes) {
    struct srv_block a, b;
    cr_assert_eq(srv_seg_alloc(seg, 64, &a), 0);
    cr_assert_eq(srv_seg_alloc(seg, 64, &b), 0);
    cr_assert_eq(srv_seg_block_capacity(seg, a.handle), 64);
    cr_assert_eq(srv_seg_block_capacity(seg, b.handle), 64);
    cr_assert_eq(srv_seg_ptr(seg, a.handle), a.ptr);
    cr_assert_eq(srv_seg_ptr(seg, b.handle), b.ptr);
    cr_assert_eq(b.ptr - a.ptr, 64, "consecutive slots of one slab");
    struct srv_block c;
    cr_assert_eq(srv_seg_alloc(seg, 65, &c), 0);
    cr_assert_eq(srv_seg_block_capacity(seg, c.handle), 80);
    struct srv_seg_stats st;
    srv_seg_stats(seg, &st);
    cr_assert_eq(st.nallocs, 3);
    cr_assert_eq(st.used, 2 * 65536, "two slabs reserved");
    srv_seg_free(seg, a.handle);
    srv_seg_free(seg, b.handle);
    srv_seg_free(seg, c.handle);
    srv_seg_stats(seg, &st);
    cr_assert_eq(st.used, 0, "empty slabs are returned");
    cr_assert_eq(st.nallocs, 0);
}

Test(srv_seg, large_values_are_tlsf_blocks) {
    struct srv_block a;
    cr_assert_eq(srv_seg_alloc(seg, 100000, &a), 0);
    cr_assert_geq(srv_seg_block_capacity(seg, a.handle), 100000);
    cr_assert_eq(srv_seg_ptr(seg, a.handle), a.ptr);
    memset(a.ptr, 0xab, 100000);
    srv_seg_free(seg, a.handle);
    cr_assert_eq(srv_seg_used(seg), 0);
}

Test(srv_seg, fills_then_reuses_everything) {
    static struct srv_block blk[200000];
    size_t n = 0;
    while (n < 200000 && srv_seg_alloc(seg, 48, &blk[n]) == 0) {
        memset(blk[n].ptr, (int)(n & 0xff), 48);
        n++;
    }
    cr_assert_gt(n, 100000, "an 8 MiB segment holds > 100k 48-byte values (got %zu)", n);
    cr_assert_lt(n, 200000);
    struct srv_block big;
    cr_assert_neq(srv_seg_alloc(seg, 1 << 20, &big), 0, "full segment refuses 1 MiB");
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq((unsigned char)blk[i].ptr[47], (unsigned char)(i & 0xff), "slot %zu intact",
                     i);
        srv_seg_free(seg, blk[i].handle);
    }
    cr_assert_eq(srv_seg_used(seg), 0);
    cr_assert_eq(srv_seg_alloc(seg, SEG_SIZE, &big), 0, "whole segment reusable after free");
    srv_seg_free(seg, big.handle);
}

/* ---------------------------------------------------------------- page reclaim */

static uint64_t resident(void) {
    struct srv_seg_stats st;
    srv_seg_stats(seg, &st);
    return st.resident;
}

static void check_fill(const struct srv_block *b, size_t len, int c) {
    for (size_t i = 0; i < len; i += 512)
        cr_assert_eq((unsigned char)b->ptr[i], (unsigned char)c, "byte %zu of a live block", i);
    cr_assert_eq((unsigned char)b->ptr[len - 1], (unsigned char)c);
}

Test(srv_seg, reclaim_punches_free_blocks_only) {
    enum { MB = 1 << 20 };
    struct srv_block b[4];
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(srv_seg_alloc(seg, MB, &b[i]), 0);
        memset(b[i].ptr, 'a' + i, MB);
    }
    cr_assert_geq(resident(), 4u * MB);
    cr_assert_eq(srv_seg_reclaim(seg, 0), 0, "nothing free yet");
    srv_seg_free(seg, b[0].handle);
    srv_seg_free(seg, b[2].handle);
    cr_assert_eq(srv_seg_reclaim(seg, 60000), 0, "freed pages are kept for min_age_ms");
    uint64_t punched = srv_seg_reclaim(seg, 0);
    /* Each freed 1 MiB block holds at least 15 whole 64 KiB granules. */
    cr_assert_geq(punched, 2u * 15 * 65536, "punched %llu", (unsigned long long)punched);
    cr_assert_leq(punched, 2u * MB + 2 * 65536);
    cr_assert_leq(resident(), 2u * MB + 4 * 65536, "resident %llu", (unsigned long long)resident());
    check_fill(&b[1], MB, 'b');
    check_fill(&b[3], MB, 'd');
    cr_assert_eq(srv_seg_reclaim(seg, 0), 0, "punched granules are not punched again");
    struct srv_seg_stats st;
    srv_seg_stats(seg, &st);
    cr_assert_eq(st.reclaimed, punched);
    srv_seg_free(seg, b[1].handle);
    srv_seg_free(seg, b[3].handle);
    srv_seg_reclaim(seg, 0);
    cr_assert_eq(resident(), 0, "an empty segment holds no pages");
}

Test(srv_seg, reclaim_returns_empty_slabs) {
    /* Two slabs of 64-byte slots: the first emptied, the second kept with one live slot. */
    enum { PER_SLAB = 65536 / 64 };
    static struct srv_block s[2 * PER_SLAB];
    for (int i = 0; i < 2 * PER_SLAB; i++) {
        cr_assert_eq(srv_seg_alloc(seg, 64, &s[i]), 0);
        memset(s[i].ptr, 'x', 64);
    }
    for (int i = 0; i < 2 * PER_SLAB - 1; i++)
        srv_seg_free(seg, s[i].handle);
    cr_assert_geq(srv_seg_reclaim(seg, 0), 65536, "the emptied slab's whole granule goes back");
    check_fill(&s[2 * PER_SLAB - 1], 64, 'x');
    srv_seg_free(seg, s[2 * PER_SLAB - 1].handle);
}

static atomic_int stop_reclaim;

static void *reclaim_loop(void *arg) {
    (void)arg;
    while (!atomic_load(&stop_reclaim))
        srv_seg_reclaim(seg, 0);
    return NULL;
}

Test(srv_seg, reclaim_races_allocation_without_losing_bytes) {
    /* One thread punches whatever is free, as fast as it can; this one allocates, writes,
     * checks and frees blocks of 64 to 576 KiB. A punch that hit a live block would zero it. */
    pthread_t t;
    pthread_create(&t, NULL, reclaim_loop, NULL);
    struct srv_block live[8] = {0};
    size_t lens[8] = {0};
    uint64_t rng = 88172645463325252ull;
    for (int round = 0; round < 3000; round++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        int slot = (int)(rng % 8);
        if (lens[slot]) {
            check_fill(&live[slot], lens[slot], 1 + slot);
            srv_seg_free(seg, live[slot].handle);
        }
        lens[slot] = 65536 + (size_t)(rng >> 20) % (512 << 10);
        cr_assert_eq(srv_seg_alloc(seg, lens[slot], &live[slot]), 0);
        memset(live[slot].ptr, 1 + slot, lens[slot]);
    }
    atomic_store(&stop_reclaim, 1);
    pthread_join(t, NULL);
    for (int i = 0; i < 8; i++) {
        check_fill(&live[i], lens[i], 1 + i);
        srv_seg_free(seg, live[i].handle);
    }
}

Test(srv_seg, background_reclaimer_runs_and_stops) {
    struct srv_block b;
    cr_assert_eq(srv_seg_alloc(seg, 1 << 20, &b), 0);
    memset(b.ptr, 1, 1 << 20);
    cr_assert_eq(srv_seg_start_reclaimer(seg, 10, 0, NULL), 0);
    cr_assert_eq(srv_seg_start_reclaimer(seg, 10, 0, NULL), -EALREADY);
    srv_seg_free(seg, b.handle);
    for (int i = 0; i < 200 && resident() > 0; i++)
        usleep(10 * 1000);
    cr_assert_eq(resident(), 0, "the reclaimer returned the freed block's pages");
    srv_seg_stop_reclaimer(seg); /* teardown's srv_seg_destroy also stops it */
}
