/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-thread statistics counters: each thread adds to its own cache line, readers sum the
 * slots. For counters bumped on every request (commands, bytes, hits), where one shared
 * atomic would bounce between cores. Thread-safe; reads are approximate while writers run.
 */
#ifndef CRESCENT_COMMON_CM_PCOUNTER_H
#define CRESCENT_COMMON_CM_PCOUNTER_H

#include "common/cm_atomic.h"

#include <stdint.h>

#define CM_PCOUNTER_SLOTS 32

struct cm_pcounter {
    struct {
        _Atomic uint64_t v;
        char pad[64 - sizeof(uint64_t)];
    } slot[CM_PCOUNTER_SLOTS];
};

/* This thread's slot index (assigned on first use, round robin). */
unsigned cm_pcounter_slot(void);

/* Adds n to c from the calling thread. */
static inline void cm_pcounter_add(struct cm_pcounter *c, uint64_t n) {
    cm_atomic_add_relaxed(&c->slot[cm_pcounter_slot()].v, n);
}

/* Sum over all threads. */
uint64_t cm_pcounter_read(const struct cm_pcounter *c);

/* Sets every slot to zero (CONFIG RESETSTAT). */
void cm_pcounter_reset(struct cm_pcounter *c);

#endif
