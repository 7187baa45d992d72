/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replies of the hot store commands (get replicas, put start / end, batch forms) built in one
 * arena per reply instead of hiredis's one calloc per value and one malloc per string: a
 * 128-key MC.BATCHPUTSTART reply is about 2,300 values, and freeing them one by one cost
 * more than the rest of the call. The values are ordinary redisReply structs, so the parsing
 * code reads them as any reply; only cli__reply_free() may free them (never freeReplyObject).
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define CLI_BLK_MIN (4u << 10) /* first block */
#define CLI_BLK_MAX (1u << 20) /* blocks double up to this, unless one value needs more */

/* One arena block. The first block of a reply holds the root value at data[0] and keeps the
 * chain: next lists the later blocks, cur is the block allocations come from. */
struct cli_blk {
    struct cli_blk *next; /* later blocks (first block: the newest) */
    struct cli_blk *cur;  /* first block only: the block being filled */
    size_t used, cap;     /* bytes of data */
    _Alignas(16) char data[];
};

static struct cli_blk *cli_blk_new(size_t need, size_t prev_cap) {
    size_t cap = prev_cap * 2 < CLI_BLK_MIN ? CLI_BLK_MIN : prev_cap * 2;
    cap = cap > CLI_BLK_MAX ? CLI_BLK_MAX : cap;
    cap = cap < need ? need : cap;
    struct cli_blk *b = malloc(sizeof(*b) + cap);
    if (b != NULL) {
        *b = (struct cli_blk){.cur = b, .cap = cap};
    }
    return b;
}

static void cli_blk_chain_free(struct cli_blk *b) {
    while (b != NULL) {
        struct cli_blk *next = b->next;
        free(b);
        b = next;
    }
}

static void *cli_blk_alloc(struct cli_blk *first, size_t n) {
    n = (n + 15) & ~(size_t)15;
    struct cli_blk *c = first->cur;
    if (c->cap - c->used < n) {
        if ((c = cli_blk_new(n, c->cap)) == NULL) {
            return NULL;
        }
        c->next = first->next;
        first->next = c;
        first->cur = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

static struct cli_blk *cli_blk_of(const redisReply *root) {
    return (struct cli_blk *)(void *)((char *)root - offsetof(struct cli_blk, data));
}

/* A zeroed value of extra trailing bytes' room in the reply of task, linked into its parent
 * (the root value starts a new arena). NULL when out of memory. */
static redisReply *cli_value(const redisReadTask *task, int type, size_t extra, void **more) {
    struct cli_blk *first;
    if (task->parent == NULL) {
        if ((first = cli_blk_new(sizeof(redisReply) + extra + 32, 0)) == NULL) {
            return NULL;
        }
    } else {
        const redisReadTask *t = task->parent;
        while (t->parent != NULL) {
            t = t->parent;
        }
        first = cli_blk_of(t->obj);
    }
    redisReply *r = cli_blk_alloc(first, sizeof(*r));
    *more = extra > 0 && r != NULL ? cli_blk_alloc(first, extra) : NULL;
    if (r == NULL || (extra > 0 && *more == NULL)) {
        if (task->parent == NULL) {
            cli_blk_chain_free(first);
        }
        return NULL;
    }
    memset(r, 0, sizeof(*r));
    r->type = type;
    if (task->parent != NULL) {
        redisReply *parent = task->parent->obj;
        parent->element[task->idx] = r;
    }
    return r;
}

static void *cli_create_string(const redisReadTask *task, char *str, size_t len) {
    void *buf;
    redisReply *r = cli_value(task, task->type, len + 1, &buf);
    if (r != NULL) {
        memcpy(buf, str, len);
        ((char *)buf)[len] = '\0';
        r->str = buf;
        r->len = len;
    }
    return r;
}

static void *cli_create_array(const redisReadTask *task, int elements) {
    void *buf = NULL;
    size_t n = elements > 0 ? (size_t)elements : 0;
    redisReply *r = cli_value(task, REDIS_REPLY_ARRAY, n * sizeof(redisReply *), &buf);
    if (r != NULL) {
        r->element = buf;
        r->elements = n;
    }
    return r;
}

static void *cli_create_integer(const redisReadTask *task, long long value) {
    void *unused;
    redisReply *r = cli_value(task, REDIS_REPLY_INTEGER, 0, &unused);
    if (r != NULL) {
        r->integer = value;
    }
    return r;
}

static void *cli_create_nil(const redisReadTask *task) {
    void *unused;
    return cli_value(task, REDIS_REPLY_NIL, 0, &unused);
}

static void cli_free_object(void *obj) {
    cli__reply_free(obj);
}

/* Reply functions of the arena; hiredis calls freeObject only for a root value. */
redisReplyObjectFunctions cli__arena_fns = {
    .createString = cli_create_string,
    .createArray = cli_create_array,
    .createInteger = cli_create_integer,
    .createNil = cli_create_nil,
    .freeObject = cli_free_object,
};

/* Frees a reply from cli__cmd_fast() (NULL is fine). Thread-safe. */
void cli__reply_free(redisReply *r) {
    if (r == NULL) {
        return;
    }
    cli_blk_chain_free(cli_blk_of(r));
}
