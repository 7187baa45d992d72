/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the embedded segment: slab classes, TLSF blocks, reuse and accounting. */
#include "common/fmacros.h"

#include "server/srv_seg.h"

#include <criterion/criterion.h>
#include <string.h>

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
