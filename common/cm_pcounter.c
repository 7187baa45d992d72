/* SPDX-License-Identifier: Apache-2.0 */
/* Per-thread counter slots: see cm_pcounter.h. */
#include "common/fmacros.h"

#include "common/cm_pcounter.h"

static _Atomic unsigned cm_pcounter_next;
static __thread int cm_pcounter_mine = -1;

unsigned cm_pcounter_slot(void) {
    if (cm_pcounter_mine < 0)
        cm_pcounter_mine = (int)(cm_atomic_add_relaxed(&cm_pcounter_next, 1u) % CM_PCOUNTER_SLOTS);
    return (unsigned)cm_pcounter_mine;
}

uint64_t cm_pcounter_read(const struct cm_pcounter *c) {
    uint64_t sum = 0;
    for (int i = 0; i < CM_PCOUNTER_SLOTS; i++)
        sum += cm_atomic_load_relaxed((_Atomic uint64_t *)&c->slot[i].v);
    return sum;
}

void cm_pcounter_reset(struct cm_pcounter *c) {
    for (int i = 0; i < CM_PCOUNTER_SLOTS; i++)
        cm_atomic_store_relaxed(&c->slot[i].v, 0);
}
