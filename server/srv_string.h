/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read-modify-write of one string value, shared by the string commands (APPEND, SETRANGE, INCR
 * family in srv_cmd_string.c) and the bitmap commands (SETBIT, BITFIELD in srv_t_bitmap.c).
 */
#ifndef CRESCENT_SERVER_SRV_STRING_H
#define CRESCENT_SERVER_SRV_STRING_H

#include <stddef.h>

struct srv_client;

/*
 * A read-modify-write of the string at argv[1]. plan() sees the current value (old is NULL and
 * exists 0 when the key is absent; old is valid only during the call) and returns the new
 * length, or -1 after replying an error, or -2 to leave the key untouched. build() then writes
 * the new value into dst, which may equal old (in-place update, dst already holds oldlen
 * bytes) or be a fresh block of newlen bytes. When the key changes between the two calls, plan
 * runs again: it must recompute everything it leaves in arg.
 */
struct srv_rmw {
    long long (*plan)(struct srv_client *c, const char *old, size_t oldlen, int exists, void *arg);
    void (*build)(char *dst, const char *old, size_t oldlen, size_t newlen, void *arg);
    void *arg;
    size_t slack; /* extra capacity for values that tend to grow (APPEND) */
    int greedy;   /* when the value grows, leave as much room again (at most 1 MB), so values
                     grown a few bytes at a time (SETBIT at rising offsets) are not copied on
                     every call; dropped when that room does not fit in memory */
};

#define SRV_RMW_GREEDY_MAX (1u << 20)

/*
 * Runs rmw on the key in c->argv[1] (WRONGTYPE when it holds an aggregate). The new value keeps
 * the key's TTL; a write marks the key modified for WATCH. Returns the new length, -1 on error
 * (replied; an allocation failure replies Redis's OOM error), or -2 when plan() left the key
 * alone (the old length is then in *oldlen_out). Keyspace lock held (shared or exclusive), no
 * shard lock. Loop thread of c.
 */
long long srv__rmw_run(struct srv_client *c, const struct srv_rmw *rmw, size_t *oldlen_out);

#endif
