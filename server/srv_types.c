/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Type dispatch for aggregate values (lists, sets, hashes, sorted sets): free, copy and name,
 * the destination store of the *STORE commands, and the memory guard of aggregate writes. The
 * payload structures and their commands live in srv_t_*.c.
 */
#include "common/fmacros.h"

#include "server/srv_db.h"
#include "server/srv_reply.h"
#include "server/srv_seg.h"
#include "server/srv_server.h"
#include "server/srv_t.h"

#include "common/cm_atomic.h"

#include <stddef.h>

void srv_type_free(enum srv_type type, void *payload) {
    void (*fn)(void *) = type == SRV_TYPE_LIST   ? srv_list_free
                         : type == SRV_TYPE_SET  ? srv_set_free
                         : type == SRV_TYPE_HASH ? srv_hash_free
                         : type == SRV_TYPE_ZSET ? srv_zset_free
                                                 : NULL;
    if (fn && payload)
        fn(payload);
}

void *srv_type_dup(enum srv_type type, const void *payload) {
    void *(*fn)(const void *) = type == SRV_TYPE_LIST   ? srv_list_dup
                                : type == SRV_TYPE_SET  ? srv_set_dup
                                : type == SRV_TYPE_HASH ? srv_hash_dup
                                : type == SRV_TYPE_ZSET ? srv_zset_dup
                                                        : NULL;
    return fn ? fn(payload) : NULL;
}

const char *srv_type_name(enum srv_type type) {
    static const char *const names[] = {"string", "list", "set", "hash", "zset"};
    return (unsigned)type <= SRV_TYPE_ZSET ? names[type] : "none";
}

/* ---------------------------------------------------------------- payload memory */

#define SRV_AGG_SLOTS 256

/* One counter per thread (first come, first served; threads beyond the last share it). */
struct srv_agg_slot {
    _Atomic int64_t bytes;
    char pad[64 - sizeof(int64_t)];
};

static struct srv_agg_slot srv_agg_slots[SRV_AGG_SLOTS] __attribute__((aligned(64)));
static _Atomic unsigned srv_agg_next_slot;
static _Thread_local struct srv_agg_slot *srv_agg_mine;

/* Adds delta to the calling thread's payload byte counter. Any thread. */
void srv__agg_mem_add(int64_t delta) {
    if (!srv_agg_mine) {
        unsigned i = cm_atomic_add_relaxed(&srv_agg_next_slot, 1u);
        srv_agg_mine = &srv_agg_slots[i < SRV_AGG_SLOTS ? i : SRV_AGG_SLOTS - 1];
    }
    cm_atomic_add_relaxed(&srv_agg_mine->bytes, delta);
}

/* Bytes held by aggregate payloads, all threads (approximate while writers run). */
uint64_t srv__agg_mem(void) {
    unsigned n = cm_atomic_load_relaxed(&srv_agg_next_slot);
    int64_t sum = 0;
    for (unsigned i = 0; i < n && i < SRV_AGG_SLOTS; i++)
        sum += cm_atomic_load_relaxed(&srv_agg_slots[i].bytes);
    return sum > 0 ? (uint64_t)sum : 0;
}

/* ---------------------------------------------------------------- memory guard */

/* Bytes of aggregate writes a thread may do between two memory checks. */
#define SRV_AGG_CHECK_BYTES 65536
/* Aggregate writes a thread may do between two memory checks. */
#define SRV_AGG_CHECK_CALLS 32

/* Public: see srv_t.h. */
void srv__t_store(const struct srv_arg *dst, struct srv_obj *no, int cls, const char *event) {
    struct srv_db_ref r;
    srv_db_lock(&r, dst->p, dst->len);
    struct srv_obj *old = srv_db_peek(&r, srv_now_ms());
    if (old && no)
        srv_db_replace(&r, old, no);
    else if (old)
        srv_db_unlink(&r, old);
    else if (no)
        srv_db_insert(&r, no);
    srv_db_unlock(&r);
    if (no)
        srv_notify(cls, event, dst->p, dst->len);
    else if (old)
        srv_notify(SRV_NOTIFY_GENERIC, "del", dst->p, dst->len);
}

/*
 * The memory guard of aggregate writes (see srv_t.h): aggregates live on the heap, so the
 * segment's own eviction never sees them; this evicts least recently used keys while the data
 * set (srv_db_mem_used: segment, records, payloads) is above --memory. Checks at most every
 * SRV_AGG_CHECK_CALLS calls or SRV_AGG_CHECK_BYTES bytes per thread, so usage may overshoot by
 * about that much per thread.
 */
int srv__agg_room(struct srv_client *c, size_t bytes) {
    static _Thread_local uint32_t calls;
    static _Thread_local size_t pending;
    pending += bytes;
    if (++calls < SRV_AGG_CHECK_CALLS && pending < SRV_AGG_CHECK_BYTES)
        return 0;
    calls = 0;
    pending = 0;
    if (!srv_segment)
        return 0;
    uint64_t limit = srv_seg_size(srv_segment);
    while (srv_db_mem_used() > limit) {
        if (srv_db_evict(srv_db_evict_ratio) == 0) {
            srv_reply_error(c, SRV_ERR_OOM);
            return -1;
        }
    }
    return 0;
}
