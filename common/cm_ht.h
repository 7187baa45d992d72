/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Intrusive chained hash table. Callers embed struct cm_ht_node in their objects, compute the
 * hash themselves (cm_hash64) and recover the object with container_of. The table owns only
 * its bucket array; nodes belong to the caller. It grows by doubling at load factor 1.0 and
 * shrinks at load < 0.1 (never below the initial size), rehashing in one step.
 * cm_ht_scan() is a Redis-style reverse-binary cursor that survives resizes between calls.
 *
 * Threads: callers lock. Calls that change the table (insert, remove, reserve, clear, fini,
 * foreach, a scan whose callback removes) need exclusive access; cm_ht_find(), cm_ht_random()
 * and cm_ht_scan() with a callback that leaves the table alone may run on several threads at
 * once under a shared (read) lock. Resizing happens only in the changing calls, so it never
 * runs under such readers.
 */
#ifndef CRESCENT_COMMON_CM_HT_H
#define CRESCENT_COMMON_CM_HT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Embedded link; hash must be set by the caller before cm_ht_insert(). */
struct cm_ht_node {
    struct cm_ht_node *next;
    uint64_t hash;
};

/* Returns 1 when node's key equals (key, klen), 0 otherwise. */
typedef int cm_ht_eq_cb(const struct cm_ht_node *node, const void *key, size_t klen);

/* Visitor for scans, walks and clears. */
typedef void cm_ht_visit_cb(struct cm_ht_node *node, void *arg);

struct cm_ht {
    struct cm_ht_node **buckets; /* mask + 1 heads */
    size_t mask;                 /* bucket count - 1 (a power of two minus one) */
    size_t count;                /* nodes in the table */
    size_t min_mask;             /* mask of the initial size; shrinking stops there */
    _Atomic unsigned paused;     /* scans/walks running callbacks (no resizing meanwhile); atomic
                                  * because read-only scans under a shared lock count it at once */
};

/*
 * Initializes t with initial_buckets rounded up to a power of two (at least 4). Allocates the
 * bucket array with cm_calloc (aborts on OOM). Release with cm_ht_fini().
 */
void cm_ht_init(struct cm_ht *t, size_t initial_buckets);

/* Frees the bucket array only; nodes still linked are the caller's and are not touched. */
void cm_ht_fini(struct cm_ht *t);

/*
 * Grows the table to at least n buckets (a power of two) at once, so that inserting n nodes
 * does not resize on the way (bulk loads). Never shrinks; a no-op during a walk.
 */
void cm_ht_reserve(struct cm_ht *t, size_t n);

/*
 * Finds the first node whose hash equals hash and for which eq(node, key, klen) returns 1,
 * or NULL. O(1) expected.
 */
struct cm_ht_node *cm_ht_find(const struct cm_ht *t, uint64_t hash, const void *key, size_t klen,
                              cm_ht_eq_cb *eq);

/*
 * Links node (node->hash already set) at the head of its bucket. Does not check duplicates.
 * May grow the table (doubling when count reaches the bucket count); aborts on OOM.
 */
void cm_ht_insert(struct cm_ht *t, struct cm_ht_node *node);

/*
 * Unlinks node, which must be in t (a node not in t is ignored, costing a chain walk).
 * May shrink the table when the load drops below 0.1, never below the initial size.
 */
void cm_ht_remove(struct cm_ht *t, struct cm_ht_node *node);

/*
 * Visits every node of the bucket selected by cursor (start with 0) and returns the next
 * cursor, 0 when the scan is complete. Every node present in the table for the whole scan is
 * visited at least once, even if the table grows or shrinks between calls; some may be
 * visited twice. The callback may remove the node it is given (and only that node; the table
 * does not resize while the callback runs); nodes inserted during the scan may or may not be
 * visited. Several threads may scan one table at once under a shared lock when their callbacks
 * do not change it (see the top of this file).
 */
uint64_t cm_ht_scan(const struct cm_ht *t, uint64_t cursor, cm_ht_visit_cb *cb, void *arg);

/*
 * Returns a pseudo-random node (cm_rand64), or NULL when the table is empty. Nodes in long
 * chains are slightly less likely than others, as in Redis dictGetRandomKey.
 */
struct cm_ht_node *cm_ht_random(const struct cm_ht *t);

/*
 * Calls destroy(node, arg) on every node (destroy may free the node), leaves the table empty
 * and back at its initial size. destroy may be NULL. destroy must not touch the table.
 */
void cm_ht_clear(struct cm_ht *t, cm_ht_visit_cb *destroy, void *arg);

/*
 * Calls cb(node, arg) for every node, bucket by bucket. cb may remove the node it is given
 * but must not insert; the table does not resize during the walk, but may shrink once it ends,
 * so the caller needs exclusive access even when cb changes nothing.
 */
void cm_ht_foreach(struct cm_ht *t, cm_ht_visit_cb *cb, void *arg);

/* Number of nodes. */
static inline size_t cm_ht_count(const struct cm_ht *t) {
    return t->count;
}

/* Number of buckets. */
static inline size_t cm_ht_buckets(const struct cm_ht *t) {
    return t->mask + 1;
}

/*
 * Walks every node with loop variables: `size_t i; struct cm_ht_node *n, *tmp;
 * cm_ht_foreach_node(t, i, n, tmp) { ... }`. The body must not insert or remove nodes (a
 * removal may resize the table under the loop); use cm_ht_foreach() to remove while walking.
 */
#define cm_ht_foreach_node(t, i, n, tmp)   \
    for ((i) = 0; (i) <= (t)->mask; (i)++) \
        for ((n) = (t)->buckets[(i)]; (n) != NULL && (((tmp) = (n)->next), 1); (n) = (tmp))

#endif
