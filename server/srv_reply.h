/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the command files: argument parsing and value replies. */
#ifndef CRESCENT_SERVER_SRV_REPLY_H
#define CRESCENT_SERVER_SRV_REPLY_H

#include "server/srv_client.h"
#include "server/srv_db.h"

/*
 * Values at least this long are sent by reference (pinned) instead of copied into the reply
 * buffer. 2 KiB, not larger: GET of 4 KiB values took 14.2 us of server CPU per request when
 * copied (a sixth of it in that memcpy, under perf) and 12.4 us by reference at P 1, 2.87 and
 * 2.65 us at P 16 (docs/benchmarks.md, "Reply copy threshold"); at 1 KiB the two are level.
 */
#define SRV_REF_THRESHOLD 2048

/* The exact OOM error Redis sends when maxmemory is reached. */
#define SRV_ERR_OOM     "OOM command not allowed when used memory > 'maxmemory'."
#define SRV_ERR_NOT_INT "ERR value is not an integer or out of range"

/*
 * Replies with o's value as a bulk string (copy or pinned reference). Shard lock held. An
 * offloaded value is read back from the SSD tier (srv_offload_reply).
 */
void srv_reply_value(struct srv_client *c, struct srv_obj *o);

/* 1 when argument i equals the lower-case word w, case-insensitively. */
int srv_arg_is(const struct srv_client *c, int i, const char *w);

/* Parses argument i as a long long; on failure replies msg (NULL: SRV_ERR_NOT_INT), returns -1. */
int srv_arg_ll(struct srv_client *c, int i, long long *out, const char *msg);

/* Replies with the error for a failed object allocation (err from srv_obj_create). */
void srv_reply_alloc_error(struct srv_client *c, int err);

/* Creates an object holding a copy of val; on failure replies the error and returns NULL. */
struct srv_obj *srv_obj_from(struct srv_client *c, const char *key, size_t klen, const char *val,
                             size_t vlen);

#endif
