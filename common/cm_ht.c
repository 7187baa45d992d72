/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Intrusive chained hash table (see cm_ht.h). Resizing rehashes the whole table at once; the
 * scan cursor walks bucket indexes in bit-reversed order, which keeps its promise across
 * power-of-two resizes (the technique of Redis dictScan).
 */
#include "common/fmacros.h"

#include "common/cm_ht.h"

#include "common/cm_atomic.h"
#include "common/cm_hash.h"
#include "common/cm_mem.h"

#include <stdbool.h>

static size_t cm_ht_round_pow2(size_t n) {
    size_t s = 4;
    while (s < n && s < ((size_t)1 << (sizeof(size_t) * 8 - 2)))
        s <<= 1;
    return s;
}

void cm_ht_init(struct cm_ht *t, size_t initial_buckets) {
    size_t n = cm_ht_round_pow2(initial_buckets);
    t->buckets = cm_calloc(n, sizeof(*t->buckets));
    t->mask = n - 1;
    t->min_mask = n - 1;
    t->count = 0;
    atomic_init(&t->paused, 0);
}

void cm_ht_fini(struct cm_ht *t) {
    cm_free(t->buckets);
    t->buckets = NULL;
    t->mask = 0;
    t->count = 0;
}

/*
 * The resize pause. Relaxed is enough: the counter only has to add up when readers under a
 * shared lock change it at once; a resize is decided under exclusive access, whose lock
 * already orders it after every reader's cm_ht_resume().
 */
static inline void cm_ht_pause(struct cm_ht *t) {
    cm_atomic_add_relaxed(&t->paused, 1u);
}

static inline void cm_ht_resume(struct cm_ht *t) {
    cm_atomic_sub_relaxed(&t->paused, 1u);
}

static inline bool cm_ht_is_paused(const struct cm_ht *t) {
    return cm_atomic_load_relaxed(&t->paused) != 0;
}

static void cm_ht_resize(struct cm_ht *t, size_t nbuckets) {
    struct cm_ht_node **nb = cm_calloc(nbuckets, sizeof(*nb));
    size_t nmask = nbuckets - 1;
    for (size_t i = 0; i <= t->mask; i++) {
        struct cm_ht_node *n = t->buckets[i], *next;
        for (; n; n = next) {
            next = n->next;
            size_t b = n->hash & nmask;
            n->next = nb[b];
            nb[b] = n;
        }
    }
    cm_free(t->buckets);
    t->buckets = nb;
    t->mask = nmask;
}

void cm_ht_reserve(struct cm_ht *t, size_t n) {
    size_t want = t->mask + 1;
    while (want < n && want < SIZE_MAX / 4)
        want *= 2;
    if (want > t->mask + 1 && !cm_ht_is_paused(t))
        cm_ht_resize(t, want);
}

struct cm_ht_node *cm_ht_find(const struct cm_ht *t, uint64_t hash, const void *key, size_t klen,
                              cm_ht_eq_cb *eq) {
    for (struct cm_ht_node *n = t->buckets[hash & t->mask]; n; n = n->next)
        if (n->hash == hash && eq(n, key, klen))
            return n;
    return NULL;
}

void cm_ht_insert(struct cm_ht *t, struct cm_ht_node *node) {
    if (t->count >= t->mask + 1 && !cm_ht_is_paused(t) && t->mask < SIZE_MAX / 4)
        cm_ht_resize(t, (t->mask + 1) * 2);
    size_t b = node->hash & t->mask;
    node->next = t->buckets[b];
    t->buckets[b] = node;
    t->count++;
}

static bool cm_ht_unlink(struct cm_ht *t, struct cm_ht_node *node) {
    struct cm_ht_node **pp = &t->buckets[node->hash & t->mask];
    for (; *pp; pp = &(*pp)->next) {
        if (*pp == node) {
            *pp = node->next;
            node->next = NULL;
            t->count--;
            return true;
        }
    }
    return false;
}

static void cm_ht_maybe_shrink(struct cm_ht *t) {
    if (!cm_ht_is_paused(t) && t->mask > t->min_mask && t->count * 10 < t->mask + 1) {
        size_t n = cm_ht_round_pow2(t->count);
        if (n < t->min_mask + 1)
            n = t->min_mask + 1;
        cm_ht_resize(t, n);
    }
}

void cm_ht_remove(struct cm_ht *t, struct cm_ht_node *node) {
    if (cm_ht_unlink(t, node))
        cm_ht_maybe_shrink(t);
}

static uint64_t cm_ht_rev(uint64_t v) {
    v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
    v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
    v = ((v >> 4) & 0x0f0f0f0f0f0f0f0full) | ((v & 0x0f0f0f0f0f0f0f0full) << 4);
    return __builtin_bswap64(v);
}

uint64_t cm_ht_scan(const struct cm_ht *t, uint64_t cursor, cm_ht_visit_cb *cb, void *arg) {
    /* The callback may modify the table through its own pointer; resizing is paused meanwhile
     * so that the chain being walked stays intact. Only the counter is written, atomically:
     * readers scanning at once under a shared lock must not lose each other's counts. */
    struct cm_ht *mt = (struct cm_ht *)t;
    uint64_t mask = t->mask;
    struct cm_ht_node *n = t->buckets[cursor & mask], *next;
    cm_ht_pause(mt);
    for (; n; n = next) {
        next = n->next;
        cb(n, arg);
    }
    cm_ht_resume(mt);
    /* Increment the reversed cursor over the bits covered by the mask at call time. */
    cursor |= ~mask;
    cursor = cm_ht_rev(cursor);
    cursor++;
    return cm_ht_rev(cursor);
}

struct cm_ht_node *cm_ht_random(const struct cm_ht *t) {
    if (t->count == 0)
        return NULL;
    struct cm_ht_node *head = NULL;
    for (int tries = 0; tries < 64 && !head; tries++)
        head = t->buckets[cm_rand64() & t->mask];
    if (!head) {
        /* Sparse table: walk from a random bucket to the next non-empty one. */
        size_t b = cm_rand64() & t->mask;
        while (!(head = t->buckets[b]))
            b = (b + 1) & t->mask;
    }
    size_t len = 0;
    for (struct cm_ht_node *n = head; n; n = n->next)
        len++;
    size_t pick = cm_rand64() % len;
    while (pick--)
        head = head->next;
    return head;
}

void cm_ht_foreach(struct cm_ht *t, cm_ht_visit_cb *cb, void *arg) {
    cm_ht_pause(t); /* no resize while walking */
    for (size_t i = 0; i <= t->mask; i++) {
        struct cm_ht_node *n = t->buckets[i], *next;
        for (; n; n = next) {
            next = n->next;
            cb(n, arg);
        }
    }
    cm_ht_resume(t);
    cm_ht_maybe_shrink(t);
}

void cm_ht_clear(struct cm_ht *t, cm_ht_visit_cb *destroy, void *arg) {
    for (size_t i = 0; i <= t->mask; i++) {
        struct cm_ht_node *n = t->buckets[i], *next;
        t->buckets[i] = NULL;
        for (; n; n = next) {
            next = n->next;
            if (destroy)
                destroy(n, arg);
        }
    }
    t->count = 0;
    if (t->mask != t->min_mask) {
        cm_free(t->buckets);
        t->buckets = cm_calloc(t->min_mask + 1, sizeof(*t->buckets));
        t->mask = t->min_mask;
    }
}
