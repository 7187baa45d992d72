/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the TLSF offset allocator: exact fits, alignment, out-of-space, coalescing,
 * a 100k-operation randomized run that tracks every live interval, and a fragmentation figure
 * for a KV-cache-like mixed workload.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "common/cm_hash.h"
#include "common/cm_mem.h"
#include "common/cm_tlsf.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <stdlib.h>

#define KIB (1024ull)
#define MIB (1024ull * 1024)

Test(cm_tlsf, bad_arguments) {
    cr_assert_null(cm_tlsf_create(1024, 4));
    cr_assert_null(cm_tlsf_create(1024, 24));
    cr_assert_null(cm_tlsf_create(4, 8));
    cm_tlsf_destroy(NULL);
    struct cm_tlsf *t = cm_tlsf_create(1000, 64); /* rounded down to 960 */
    struct cm_tlsf_stats st;
    cm_tlsf_get_stats(t, &st);
    cr_assert_eq(st.size, 960);
    cr_assert_eq(st.free, 960);
    cr_assert_eq(st.largest_free, 960);
    cr_assert_eq(st.nfree_blocks, 1);
    cr_assert_eq(st.fragmentation, 0.0);
    cm_tlsf_free(t, 0);  /* ignored */
    cm_tlsf_free(t, 99); /* ignored */
    cr_assert_eq(cm_tlsf_check(t), 0);
    cm_tlsf_destroy(t);
}

Test(cm_tlsf, exact_fit_alignment_and_out_of_space) {
    struct cm_tlsf *t = cm_tlsf_create(1 * MIB, 64);
    uint64_t off = 12345;
    uint32_t h1 = cm_tlsf_alloc(t, 1, &off);
    cr_assert_gt(h1, 0);
    cr_assert_eq(off, 0);
    cr_assert_eq(cm_tlsf_block_size(t, h1), 64);
    uint32_t h2 = cm_tlsf_alloc(t, 65, &off);
    cr_assert_eq(off, 64);
    cr_assert_eq(cm_tlsf_block_size(t, h2), 128);
    cr_assert_eq(cm_tlsf_block_offset(t, h2), 64);
    uint32_t h0 = cm_tlsf_alloc(t, 0, &off); /* zero counts as one unit */
    cr_assert_eq(cm_tlsf_block_size(t, h0), 64);
    cr_assert_eq(off % 64, 0);
    /* The rest of the range, exactly: an exact fit for a size that is not a class boundary. */
    uint64_t rest = 1 * MIB - 256;
    uint32_t h3 = cm_tlsf_alloc(t, rest, &off);
    cr_assert_gt(h3, 0, "exact fit of the remaining %llu bytes", (unsigned long long)rest);
    cr_assert_eq(off, 256);
    cr_assert_eq(cm_tlsf_alloc(t, 1, &off), 0, "full");
    struct cm_tlsf_stats st;
    cm_tlsf_get_stats(t, &st);
    cr_assert_eq(st.used, 1 * MIB);
    cr_assert_eq(st.free, 0);
    cr_assert_eq(st.fragmentation, 0.0);
    cr_assert_eq(st.nallocs, 4);
    cr_assert_eq(cm_tlsf_check(t), 0);
    /* Free the middle one: a 128-byte hole; 129 bytes do not fit, 128 do. */
    cm_tlsf_free(t, h2);
    cm_tlsf_free(t, h2); /* double free is ignored */
    cr_assert_eq(cm_tlsf_block_size(t, h2), 0);
    cr_assert_eq(cm_tlsf_alloc(t, 129, &off), 0);
    uint32_t h4 = cm_tlsf_alloc(t, 128, &off);
    cr_assert_gt(h4, 0);
    cr_assert_eq(off, 64);
    cr_assert_eq(cm_tlsf_alloc(t, 2 * MIB, &off), 0, "larger than the range");
    cr_assert_eq(cm_tlsf_alloc(t, UINT64_MAX, &off), 0);
    cm_tlsf_free(t, h1);
    cm_tlsf_free(t, h4);
    cm_tlsf_free(t, h0);
    cm_tlsf_free(t, h3);
    cr_assert_eq(cm_tlsf_check(t), 0);
    cm_tlsf_get_stats(t, &st);
    cr_assert_eq(st.nfree_blocks, 1, "all neighbours coalesced");
    cr_assert_eq(st.largest_free, 1 * MIB);
    cr_assert_eq(st.used, 0);
    cm_tlsf_destroy(t);
}

Test(cm_tlsf, coalescing_both_sides) {
    struct cm_tlsf *t = cm_tlsf_create(64 * KIB, 8);
    uint32_t h[8];
    uint64_t off;
    for (int i = 0; i < 8; i++) {
        h[i] = cm_tlsf_alloc(t, 8 * KIB, &off);
        cr_assert_eq(off, (uint64_t)i * 8 * KIB);
    }
    struct cm_tlsf_stats st;
    cm_tlsf_free(t, h[1]);
    cm_tlsf_free(t, h[3]);
    cm_tlsf_get_stats(t, &st);
    cr_assert_eq(st.nfree_blocks, 2);
    cr_assert_eq(st.largest_free, 8 * KIB);
    cr_assert_float_eq(st.fragmentation, 0.5, 1e-9);
    cm_tlsf_free(t, h[2]); /* merges with both neighbours */
    cm_tlsf_get_stats(t, &st);
    cr_assert_eq(st.nfree_blocks, 1);
    cr_assert_eq(st.largest_free, 24 * KIB);
    cr_assert_eq(cm_tlsf_check(t), 0);
    uint32_t big = cm_tlsf_alloc(t, 24 * KIB, &off);
    cr_assert_gt(big, 0);
    cr_assert_eq(off, 8 * KIB);
    cm_tlsf_destroy(t);
}

struct live {
    uint32_t h;
    uint64_t off, len;
};

static int live_cmp(const void *a, const void *b) {
    const struct live *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static void check_no_overlap(struct live *l, size_t n, uint64_t size) {
    struct live *c = cm_malloc(n * sizeof(*c) + 1);
    memcpy(c, l, n * sizeof(*c));
    qsort(c, n, sizeof(*c), live_cmp);
    for (size_t i = 0; i < n; i++) {
        cr_assert_leq(c[i].off + c[i].len, size);
        if (i > 0)
            cr_assert_leq(c[i - 1].off + c[i - 1].len, c[i].off, "overlap at %llu",
                          (unsigned long long)c[i].off);
    }
    cm_free(c);
}

/* Log-uniform size in [1, 1 MiB]. */
static uint64_t rand_size(void) {
    unsigned bits = (unsigned)(cm_rand64() % 21); /* 2^0 .. 2^20 */
    uint64_t base = 1ull << bits, len = base + cm_rand64() % base;
    return len > MIB ? MIB : len;
}

Test(cm_tlsf, randomized_100k_ops, .timeout = 10) {
    const uint64_t size = 64 * MIB;
    const uint32_t align = 64;
    struct cm_tlsf *t = cm_tlsf_create(size, align);
    struct live *l = cm_malloc(200000 * sizeof(*l));
    size_t n = 0, fails = 0;
    uint64_t live_bytes = 0;
    cm_rand_seed(99);
    for (int op = 1; op <= 100000; op++) {
        if (n > 0 && (cm_rand64() % 100) < 45) {
            size_t k = cm_rand64() % n;
            cm_tlsf_free(t, l[k].h);
            live_bytes -= l[k].len;
            l[k] = l[--n];
        } else {
            uint64_t len = rand_size(), off = 0;
            uint32_t h = cm_tlsf_alloc(t, len, &off);
            uint64_t rounded = (len + align - 1) & ~(uint64_t)(align - 1);
            if (h == 0) {
                /* Good fit may only fail when no free block reaches the next class. */
                struct cm_tlsf_stats st;
                cm_tlsf_get_stats(t, &st);
                cr_assert_lt(st.largest_free, rounded + rounded / 32 + align,
                             "failed %llu with largest free %llu", (unsigned long long)len,
                             (unsigned long long)st.largest_free);
                fails++;
                /* Evict something, as the server would. */
                if (n > 0) {
                    size_t k = cm_rand64() % n;
                    cm_tlsf_free(t, l[k].h);
                    live_bytes -= l[k].len;
                    l[k] = l[--n];
                }
                continue;
            }
            cr_assert_eq(off % align, 0);
            cr_assert_eq(cm_tlsf_block_size(t, h), rounded);
            l[n++] = (struct live){h, off, rounded};
            live_bytes += rounded;
        }
        if (op % 2000 == 0) {
            cr_assert_eq(cm_tlsf_check(t), 0, "invariants at op %d", op);
            check_no_overlap(l, n, size);
            struct cm_tlsf_stats st;
            cm_tlsf_get_stats(t, &st);
            cr_assert_eq(st.used, live_bytes);
            cr_assert_eq(st.nallocs, n);
        }
    }
    cr_assert_gt(fails, 0, "the run should reach out-of-space at times");
    for (size_t k = 0; k < n; k++)
        cm_tlsf_free(t, l[k].h);
    cr_assert_eq(cm_tlsf_check(t), 0);
    uint64_t off = 1;
    uint32_t all = cm_tlsf_alloc(t, size, &off);
    cr_assert_gt(all, 0, "whole range reusable after freeing everything");
    cr_assert_eq(off, 0);
    cm_tlsf_free(t, all);
    cm_free(l);
    cm_tlsf_destroy(t);
}

/*
 * KV-cache-like workload on a 1 GiB segment: 70% 512 KiB KV blocks, 20% 4-64 KiB, 10% 1-4 KiB,
 * filled until the first failure, then churned for 150k allocations. Eviction is oldest-first
 * (FIFO, what LRU degenerates to for write-once KV blocks) or a uniformly random victim (the
 * adversarial case for fragmentation). Returns the lowest utilization seen at a failure.
 */
static double run_workload(int random_evict) {
    const uint64_t size = 1024 * MIB;
    struct cm_tlsf *t = cm_tlsf_create(size, 64);
    enum { CAP = 1 << 16 };
    struct live *ring = cm_malloc(CAP * sizeof(*ring));
    size_t head = 0, tail = 0;
    cm_rand_seed(7);
    double fill_at_first_fail = 0, min_util = 1.0, sum_frag = 0;
    int samples = 0;
    for (int op = 0; op < 150000; op++) {
        unsigned r = (unsigned)(cm_rand64() % 100);
        uint64_t len = r < 70   ? 512 * KIB
                       : r < 90 ? 4 * KIB + cm_rand64() % (60 * KIB)
                                : 1 * KIB + cm_rand64() % (3 * KIB);
        uint64_t off;
        uint32_t h;
        while ((h = cm_tlsf_alloc(t, len, &off)) == 0) {
            struct cm_tlsf_stats st;
            cm_tlsf_get_stats(t, &st);
            double util = (double)st.used / (double)size;
            if (fill_at_first_fail == 0)
                fill_at_first_fail = util;
            if (util < min_util)
                min_util = util;
            cr_assert_neq(head, tail, "nothing left to evict");
            size_t victim = head;
            if (random_evict)
                victim = head + cm_rand64() % (tail - head);
            cm_tlsf_free(t, ring[victim % CAP].h);
            ring[victim % CAP] = ring[head % CAP];
            head++;
        }
        cr_assert_lt(tail - head, (size_t)CAP);
        ring[tail % CAP] = (struct live){h, off, len};
        tail++;
        if (op % 1000 == 999 && fill_at_first_fail > 0) {
            struct cm_tlsf_stats st;
            cm_tlsf_get_stats(t, &st);
            sum_frag += st.fragmentation;
            samples++;
        }
    }
    struct cm_tlsf_stats st;
    cm_tlsf_get_stats(t, &st);
    cr_assert_eq(cm_tlsf_check(t), 0);
    cr_log_info("tlsf mixed workload, %s eviction (1 GiB, 64 B align, 70%% 512 KiB / 20%% "
                "4-64 KiB / 10%% 1-4 KiB, 150k allocs): fill at first failure %.1f%%, lowest "
                "utilization at a failure %.1f%%, mean fragmentation %.3f; final %llu blocks, "
                "%llu free blocks, fragmentation %.3f",
                random_evict ? "random" : "FIFO", fill_at_first_fail * 100, min_util * 100,
                samples ? sum_frag / samples : 0.0, (unsigned long long)st.nallocs,
                (unsigned long long)st.nfree_blocks, st.fragmentation);
    cr_assert_gt(fill_at_first_fail, 0.95, "fill at first failure %.3f", fill_at_first_fail);
    cm_free(ring);
    cm_tlsf_destroy(t);
    return min_util;
}

Test(cm_tlsf, fragmentation_mixed_workload, .timeout = 10) {
    double fifo = run_workload(0);
    double rnd = run_workload(1);
    cr_assert_gt(fifo, 0.90, "FIFO utilization at failure %.3f", fifo);
    cr_assert_gt(rnd, 0.70, "random-eviction utilization at failure %.3f", rnd);
}

Test(cm_tlsf, many_small_blocks_reuse_records) {
    /* 100k 64-byte blocks: records grow once, then are recycled without new growth. */
    struct cm_tlsf *t = cm_tlsf_create(100000 * 64ull, 64);
    uint32_t *h = cm_malloc(100000 * sizeof(*h));
    uint64_t off;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 100000; i++) {
            h[i] = cm_tlsf_alloc(t, 64, &off);
            cr_assert_gt(h[i], 0);
        }
        cr_assert_eq(cm_tlsf_alloc(t, 1, &off), 0);
        cr_assert_eq(cm_tlsf_check(t), 0);
        for (int i = 0; i < 100000; i += 2)
            cm_tlsf_free(t, h[i]);
        for (int i = 1; i < 100000; i += 2)
            cm_tlsf_free(t, h[i]);
        struct cm_tlsf_stats st;
        cm_tlsf_get_stats(t, &st);
        cr_assert_eq(st.nfree_blocks, 1);
        cr_assert_eq(st.used, 0);
    }
    cm_free(h);
    cm_tlsf_destroy(t);
}

static int span_cmp(const void *a, const void *b) {
    const struct cm_tlsf_span *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* cm_tlsf_build: an allocator rebuilt from the spans of another holds the same blocks. */
Test(cm_tlsf, build_from_spans_matches_the_original) {
    struct cm_tlsf *a = cm_tlsf_create(4 * MIB, 64);
    enum { N = 2000 };
    uint32_t h[N];
    uint64_t off[N], len[N];
    for (int i = 0; i < N; i++) {
        len[i] = 1 + cm_rand64() % 3000;
        h[i] = cm_tlsf_alloc(a, len[i], &off[i]);
        cr_assert_neq(h[i], 0);
    }
    for (int i = 0; i < N; i += 3) /* holes */
        cm_tlsf_free(a, h[i]), h[i] = 0;
    struct cm_tlsf_span spans[N];
    uint32_t n = 0;
    for (int i = 0; i < N; i++)
        if (h[i])
            spans[n++] = (struct cm_tlsf_span){off[i], len[i]};
    qsort(spans, n, sizeof(spans[0]), span_cmp);
    uint32_t hb[N];
    int err = 1;
    struct cm_tlsf *b = cm_tlsf_build(4 * MIB, 64, spans, n, hb, &err);
    cr_assert_not_null(b);
    cr_assert_eq(err, 0);
    cr_assert_eq(cm_tlsf_check(b), 0);
    struct cm_tlsf_stats sa, sb;
    cm_tlsf_get_stats(a, &sa);
    cm_tlsf_get_stats(b, &sb);
    cr_assert_eq(sb.used, sa.used);
    cr_assert_eq(sb.nallocs, sa.nallocs);
    cr_assert_eq(sb.nfree_blocks, sa.nfree_blocks);
    cr_assert_eq(sb.largest_free, sa.largest_free);
    for (uint32_t k = 0; k < n; k++) {
        cr_assert_eq(cm_tlsf_block_offset(b, hb[k]), spans[k].off);
        cr_assert_eq(cm_tlsf_block_size(b, hb[k]), (spans[k].len + 63) & ~63ull);
    }
    for (uint32_t k = 0; k < n; k++)
        cm_tlsf_free(b, hb[k]);
    cr_assert_eq(cm_tlsf_check(b), 0);
    cm_tlsf_get_stats(b, &sb);
    cr_assert_eq(sb.used, 0);
    cr_assert_eq(sb.nfree_blocks, 1);
    cm_tlsf_destroy(a);
    cm_tlsf_destroy(b);
}

Test(cm_tlsf, build_refuses_bad_spans) {
    uint32_t h[2];
    int err = 0;
    struct cm_tlsf_span overlap[] = {{0, 128}, {64, 64}};
    cr_assert_null(cm_tlsf_build(1 * MIB, 64, overlap, 2, h, &err));
    cr_assert_eq(err, -CM_ECORRUPT);
    struct cm_tlsf_span unsorted[] = {{4096, 64}, {0, 64}};
    cr_assert_null(cm_tlsf_build(1 * MIB, 64, unsorted, 2, h, &err));
    cr_assert_eq(err, -CM_ECORRUPT);
    struct cm_tlsf_span outside[] = {{1 * MIB - 64, 128}};
    cr_assert_null(cm_tlsf_build(1 * MIB, 64, outside, 1, h, &err));
    cr_assert_eq(err, -CM_ECORRUPT);
    struct cm_tlsf_span unaligned[] = {{8, 64}};
    cr_assert_null(cm_tlsf_build(1 * MIB, 64, unaligned, 1, h, &err));
    cr_assert_eq(err, -EINVAL);
    struct cm_tlsf_span whole[] = {{0, 1 * MIB}};
    struct cm_tlsf *t = cm_tlsf_build(1 * MIB, 64, whole, 1, h, &err);
    cr_assert_not_null(t);
    cr_assert_eq(cm_tlsf_check(t), 0);
    uint64_t o;
    cr_assert_eq(cm_tlsf_alloc(t, 64, &o), 0); /* full */
    cm_tlsf_free(t, h[0]);
    cr_assert_neq(cm_tlsf_alloc(t, 1 * MIB, &o), 0);
    cm_tlsf_destroy(t);
}

/* cm_tlsf_alloc_at: carving exact ranges (in any order) matches what was asked, refuses
       overlaps and bad ranges, and frees back to one block. */
Test(cm_tlsf, alloc_at_exact_ranges) {
    struct cm_tlsf *t = cm_tlsf_create(64 * KIB, 64);
    uint64_t offs[] = {4096, 0, 8192, 65536 - 128, 1024, 30000 / 64 * 64};
    uint64_t lens[] = {100, 64, 4096, 128, 200, 64};
    uint32_t h[6];
    for (int i = 0; i < 6; i++) {
        h[i] = cm_tlsf_alloc_at(t, offs[i], lens[i]);
        cr_assert_neq(h[i], 0, "range %d refused", i);
        cr_assert_eq(cm_tlsf_block_offset(t, h[i]), offs[i]);
        cr_assert_eq(cm_tlsf_block_size(t, h[i]), (lens[i] + 63) / 64 * 64);
        cr_assert_eq(cm_tlsf_check(t), 0);
    }
    cr_assert_eq(cm_tlsf_alloc_at(t, 4096 + 64, 64), 0);    /* inside an allocated block */
    cr_assert_eq(cm_tlsf_alloc_at(t, 4032, 128), 0);        /* straddles into one */
    cr_assert_eq(cm_tlsf_alloc_at(t, 100, 64), 0);          /* misaligned */
    cr_assert_eq(cm_tlsf_alloc_at(t, 64 * KIB, 64), 0);     /* beyond the end */
    cr_assert_eq(cm_tlsf_alloc_at(t, 65536 - 192, 128), 0); /* runs into the last block */
    uint64_t off;
    uint32_t more = cm_tlsf_alloc(t, 64, &off); /* ordinary allocation still works */
    cr_assert_neq(more, 0);
    cm_tlsf_free(t, more);
    for (int i = 0; i < 6; i++) {
        cm_tlsf_free(t, h[i]);
        cr_assert_eq(cm_tlsf_check(t), 0);
    }
    struct cm_tlsf_stats st;
    cm_tlsf_get_stats(t, &st);
    cr_assert_eq(st.used, 0);
    cr_assert_eq(st.nfree_blocks, 1);
    cm_tlsf_destroy(t);
}
