/* SPDX-License-Identifier: Apache-2.0 */
/* Atomics over <stdatomic.h> with explicit memory orders (CONTRIBUTING.md, "Concurrency"). */
#ifndef CRESCENT_COMMON_CM_ATOMIC_H
#define CRESCENT_COMMON_CM_ATOMIC_H

#include <stdatomic.h>

#define cm_atomic_load_relaxed(p)     atomic_load_explicit((p), memory_order_relaxed)
#define cm_atomic_load_acquire(p)     atomic_load_explicit((p), memory_order_acquire)
#define cm_atomic_store_relaxed(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define cm_atomic_store_release(p, v) atomic_store_explicit((p), (v), memory_order_release)
#define cm_atomic_add_relaxed(p, v)   atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define cm_atomic_sub_relaxed(p, v)   atomic_fetch_sub_explicit((p), (v), memory_order_relaxed)
#define cm_atomic_add_acq_rel(p, v)   atomic_fetch_add_explicit((p), (v), memory_order_acq_rel)
#define cm_atomic_sub_acq_rel(p, v)   atomic_fetch_sub_explicit((p), (v), memory_order_acq_rel)
#define cm_atomic_cas(p, expected, desired)                                                   \
    atomic_compare_exchange_strong_explicit((p), (expected), (desired), memory_order_acq_rel, \
                                            memory_order_acquire)

#endif
