/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private helpers shared by the aggregate type modules (srv_t_list.c, srv_t_set.c,
 * srv_t_hash.c, srv_t_zset.c): heap byte strings, member hashing, the typed key lookup that
 * replies WRONGTYPE, and the payload free/dup entry points called by srv_types.c.
 */
#ifndef CRESCENT_SERVER_SRV_T_H
#define CRESCENT_SERVER_SRV_T_H

#include "server/srv_client.h"
#include "server/srv_db.h"
#include "server/srv_pubsub.h"
#include "server/srv_server.h"

#include "common/cm_hash.h"
#include "common/cm_mem.h"

#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Seed of the member hash tables of sets, hashes and sorted sets. */
#define SRV_T_HASH_SEED 0x6a09e667f3bcc909ull

/*
 * Bytes the aggregate payloads hold (their share of the heap), kept in per-thread slots like
 * cm_mem: srv__agg_mem_add() adjusts the calling thread's slot, srv__agg_mem() sums them.
 */
void srv__agg_mem_add(int64_t delta);
uint64_t srv__agg_mem(void);

/* cm_malloc for payload parts, counted in srv__agg_mem() by usable size (aborts on OOM). */
static inline void *srv_t_alloc(size_t n) {
    void *p = cm_malloc(n);
    srv__agg_mem_add((int64_t)malloc_usable_size(p));
    return p;
}

/* cm_free for what srv_t_alloc() returned (NULL is ignored). */
static inline void srv_t_free(void *p) {
    if (!p)
        return;
    srv__agg_mem_add(-(int64_t)malloc_usable_size(p));
    cm_free(p);
}

/* A heap byte string (list elements, set members): length then bytes, no terminator. */
struct srv_t_str {
    size_t len;
    char p[];
};

/* Copies n bytes at p into a new string (aborts on OOM). Free with srv_t_free(). */
static inline struct srv_t_str *srv_t_str_new(const char *p, size_t n) {
    struct srv_t_str *s = srv_t_alloc(sizeof(*s) + n);
    s->len = n;
    if (n)
        memcpy(s->p, p, n);
    return s;
}

/* Hash of a member for the cm_ht tables of the aggregate types. */
static inline uint64_t srv_t_hash(const char *p, size_t n) {
    return cm_hash64(p, n, SRV_T_HASH_SEED);
}

/*
 * Locks the shard of argv[argi] into r and finds its object. When the key holds another type
 * than type, unlocks, replies WRONGTYPE and sets *bad (the caller returns). Otherwise returns
 * the object or NULL with the shard still locked (the caller unlocks). read = 1 counts a
 * keyspace hit or miss and sends "keymiss" on a miss, as Redis does for read lookups.
 */
static inline struct srv_obj *srv_t_find_at(struct srv_client *c, struct srv_db_ref *r, int argi,
                                            enum srv_type type, int read, int *bad) {
    srv_db_lock(r, c->argv[argi].p, c->argv[argi].len);
    struct srv_obj *o = srv_db_find(r, srv_now_ms());
    *bad = 0;
    if (o && o->type != type) {
        srv_db_unlock(r);
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
        *bad = 1;
        return NULL;
    }
    if (read)
        srv_db_count_hit(o != NULL);
    if (read && !o)
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[argi].p, c->argv[argi].len);
    return o;
}

/* srv_t_find_at for the usual key position, argv[1]. */
static inline struct srv_obj *srv_t_find(struct srv_client *c, struct srv_db_ref *r,
                                         enum srv_type type, int read, int *bad) {
    return srv_t_find_at(c, r, 1, type, read, bad);
}

/* Member bytes of a table node (for MATCH). */
typedef void srv_scan_key_cb(const struct cm_ht_node *n, const char **p, size_t *len);
/* Replies the element(s) of one node. */
typedef void srv_scan_emit_cb(struct srv_client *c, const struct cm_ht_node *n);

/* What SSCAN, HSCAN and ZSCAN need to know of their type. */
struct srv_scan_type {
    enum srv_type type;
    size_t ht_off;          /* offsetof(payload struct, its member table) */
    int per_node;           /* elements replied per member: 1 (SSCAN) or 2 (HSCAN, ZSCAN) */
    srv_scan_key_cb *key;   /* the bytes MATCH looks at */
    srv_scan_emit_cb *emit; /* replies one member's per_node elements */
};

/*
 * The whole of "xSCAN key cursor [MATCH pattern] [COUNT count]" for a key of type t->type:
 * parses the cursor (argv[2], like Redis 7.0), looks the key up (WRONGTYPE, cursor 0 and no
 * elements when missing), parses MATCH/COUNT, visits buckets from the cursor until COUNT
 * members were seen or the table ends, and replies [next cursor, elements]. Errors are
 * replied. Takes and releases the key's shard lock.
 */
void srv__scan_command(struct srv_client *c, const struct srv_scan_type *t);

/*
 * Fills out[0 .. count) with distinct random nodes of ht; count must be below the node
 * count. Shard lock held.
 */
void srv__pick_distinct(const struct cm_ht *ht, size_t count, const struct cm_ht_node **out);

/*
 * Parses the count of SRANDMEMBER/HRANDFIELD/ZRANDMEMBER (argv[2], -LLONG_MAX .. LLONG_MAX);
 * on error replies and returns -1.
 */
int srv__rand_count(struct srv_client *c, long long *count);

/*
 * Parses "numkeys key [key ...] WHERE [COUNT n]" of LMPOP/ZMPOP (argv[1] on), WHERE being w0
 * (*where = 0) or w1 (*where = 1); *count defaults to 1. Returns 0 or -1 after replying.
 */
int srv__mpop_args(struct srv_client *c, const char *w0, const char *w1, long long *numkeys,
                   int *where, long long *count);

/* Set payload access for the sorted-set operations (ZUNION and co. accept sets, score 1). */
typedef void srv_member_cb(const char *p, size_t n, void *arg);
void srv__set_foreach(const void *set, srv_member_cb *cb, void *arg);
int srv__set_has(const void *set, const char *p, size_t n);
size_t srv__set_card(const void *set);

/*
 * Puts no (an owned object for key dst, or NULL to delete) at dst, replacing any value and its
 * TTL, under dst's shard lock (taken and released here; the caller holds no lock). Sends
 * event of class cls when no is stored, "del" when NULL removed an existing key. The
 * destination half of the *STORE commands (SUNIONSTORE, ZUNIONSTORE, ...).
 */
void srv__t_store(const struct srv_arg *dst, struct srv_obj *no, int cls, const char *event);

/*
 * Memory guard, called by aggregate writes (the denyoom commands) before any shard lock is
 * taken, with the approximate number of bytes the command adds: when aggregate payloads plus
 * segment usage exceed --memory, evicts least recently used keys; if nothing is left to evict,
 * replies the OOM error and returns -1 (the command must not run). Returns 0 otherwise.
 * Transient heap (client buffers, replies in flight) does not count.
 */
int srv__agg_room(struct srv_client *c, size_t bytes);

/* Argument bytes of argv[first ..] (the size a write adds, roughly). */
static inline size_t srv_t_arg_bytes(const struct srv_client *c, int first) {
    size_t n = 0;
    for (int i = first; i < c->argc; i++)
        n += c->argv[i].len + 16;
    return n;
}

/*
 * Payload entry points for srv_types.c: free a payload and everything it owns, or build a
 * deep copy. Payloads are only touched under their key's shard lock (or by the last owner).
 */
void srv_list_free(void *p);
void *srv_list_dup(const void *p);
void srv_set_free(void *p);
void *srv_set_dup(const void *p);
void srv_hash_free(void *p);
void *srv_hash_dup(const void *p);
void srv_zset_free(void *p);
void *srv_zset_dup(const void *p);

#endif
