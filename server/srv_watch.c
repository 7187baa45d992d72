/* SPDX-License-Identifier: Apache-2.0 */
/* WATCH registry: a hash table of watched keys, each with the list of clients watching it. */
#include "common/fmacros.h"

#include "server/srv_watch.h"

#include "server/srv_client.h"
#include "server/srv_db.h"

#include "common/cm_atomic.h"
#include "common/cm_hash.h"
#include "common/cm_ht.h"
#include "common/cm_mem.h"

#include <pthread.h>
#include <string.h>

struct srv_watcher {
    struct srv_client *c;
    struct srv_watcher *next;
};

struct srv_watch_key {
    struct cm_ht_node node;
    struct srv_watcher *watchers;
    size_t klen;
    char key[];
};

static pthread_mutex_t srv_watch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cm_ht srv_watch_table;
static int srv_watch_ready;
static _Atomic uint64_t srv_watch_count; /* watched keys */

static int srv_watch_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct srv_watch_key *w = (const struct srv_watch_key *)n;
    return w->klen == klen && memcmp(w->key, key, klen) == 0;
}

static uint64_t srv_watch_hash(const char *key, size_t klen) {
    return cm_hash64(key, klen, 0x5bd1e995u);
}

void srv_watch_add(struct srv_client *c, const char *key, size_t klen) {
    for (int i = 0; i < c->nwatched; i++)
        if (c->watched[i].klen == klen && memcmp(c->watched[i].key, key, klen) == 0)
            return;
    c->watched = cm_realloc(c->watched, (size_t)(c->nwatched + 1) * sizeof(*c->watched));
    c->watched[c->nwatched].key = cm_strndup(key, klen);
    c->watched[c->nwatched].klen = klen;
    c->nwatched++;
    uint64_t h = srv_watch_hash(key, klen);
    pthread_mutex_lock(&srv_watch_lock);
    if (!srv_watch_ready) {
        cm_ht_init(&srv_watch_table, 64);
        srv_watch_ready = 1;
    }
    struct srv_watch_key *w =
        (struct srv_watch_key *)cm_ht_find(&srv_watch_table, h, key, klen, srv_watch_eq);
    if (!w) {
        w = cm_malloc(sizeof(*w) + klen);
        w->node.hash = h;
        w->watchers = NULL;
        w->klen = klen;
        memcpy(w->key, key, klen);
        cm_ht_insert(&srv_watch_table, &w->node);
        cm_atomic_add_relaxed(&srv_watch_count, 1);
    }
    struct srv_watcher *wc = cm_malloc(sizeof(*wc));
    wc->c = c;
    wc->next = w->watchers;
    w->watchers = wc;
    pthread_mutex_unlock(&srv_watch_lock);
}

void srv_watch_remove_all(struct srv_client *c) {
    if (c->nwatched > 0) {
        pthread_mutex_lock(&srv_watch_lock);
        for (int i = 0; i < c->nwatched; i++) {
            const char *key = c->watched[i].key;
            size_t klen = c->watched[i].klen;
            struct srv_watch_key *w = (struct srv_watch_key *)cm_ht_find(
                &srv_watch_table, srv_watch_hash(key, klen), key, klen, srv_watch_eq);
            if (!w)
                continue;
            for (struct srv_watcher **pp = &w->watchers; *pp; pp = &(*pp)->next) {
                if ((*pp)->c == c) {
                    struct srv_watcher *dead = *pp;
                    *pp = dead->next;
                    cm_free(dead);
                    break;
                }
            }
            if (!w->watchers) {
                cm_ht_remove(&srv_watch_table, &w->node);
                cm_free(w);
                cm_atomic_sub_relaxed(&srv_watch_count, 1);
            }
        }
        pthread_mutex_unlock(&srv_watch_lock);
    }
    for (int i = 0; i < c->nwatched; i++)
        cm_free(c->watched[i].key);
    cm_free(c->watched);
    c->watched = NULL;
    c->nwatched = 0;
    cm_atomic_store_relaxed(&c->watch_dirty, 0);
}

/* Flags w's watchers. Watch lock held. */
static void srv_watch_flag(struct srv_watch_key *w) {
    for (struct srv_watcher *wc = w->watchers; wc; wc = wc->next)
        cm_atomic_store_relaxed(&wc->c->watch_dirty, 1);
}

void srv_watch_touch(const char *key, size_t klen) {
    if (cm_atomic_load_relaxed(&srv_watch_count) == 0)
        return;
    uint64_t h = srv_watch_hash(key, klen);
    pthread_mutex_lock(&srv_watch_lock);
    struct srv_watch_key *w =
        (struct srv_watch_key *)cm_ht_find(&srv_watch_table, h, key, klen, srv_watch_eq);
    if (w)
        srv_watch_flag(w);
    pthread_mutex_unlock(&srv_watch_lock);
}

void srv_watch_touch_existing(int64_t now_ms) {
    if (cm_atomic_load_relaxed(&srv_watch_count) == 0)
        return;
    /* Copy the keys first: checking existence takes shard locks (order shard -> watch). */
    pthread_mutex_lock(&srv_watch_lock);
    size_t n = srv_watch_table.count, k = 0, b;
    char **keys = cm_calloc(n ? n : 1, sizeof(*keys));
    size_t *lens = cm_calloc(n ? n : 1, sizeof(*lens));
    struct cm_ht_node *nd, *tmp;
    cm_ht_foreach_node(&srv_watch_table, b, nd, tmp) {
        struct srv_watch_key *w = (struct srv_watch_key *)nd;
        keys[k] = cm_strndup(w->key, w->klen);
        lens[k++] = w->klen;
    }
    pthread_mutex_unlock(&srv_watch_lock);
    for (size_t i = 0; i < k; i++) {
        if (srv_db_exists(keys[i], lens[i], now_ms))
            srv_watch_touch(keys[i], lens[i]);
        cm_free(keys[i]);
    }
    cm_free(keys);
    cm_free(lens);
}
