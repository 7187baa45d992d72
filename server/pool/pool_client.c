/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool clients: registration, heartbeats and expiry. A client that stays silent for
 * client_live_ttl is forgotten: its segments are unmounted (their replicas dropped, objects
 * left with none erased) and its unfinished puts lose their writer; its next ping is answered
 * NEED_REMOUNT, exactly as for a client never seen.
 */
#include "common/fmacros.h"

#include "common/cm_hash.h"
#include "common/cm_mem.h"
#include "server/pool/pool_int.h"

#include <string.h>

static uint64_t pool_uuid_hash(const struct pool *p, const struct pool_uuid *id) {
    return cm_hash64(id->b, sizeof(id->b), p->hash_seed);
}

static int pool_client_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    (void)klen;
    return memcmp(((const struct pool_client *)n)->id.b, key, 16) == 0;
}

/* Finds a known client by id, or NULL. */
struct pool_client *pool__client_find(const struct pool *p, const struct pool_uuid *id) {
    if (!id)
        return NULL;
    return (struct pool_client *)cm_ht_find(&p->clients_by_id, pool_uuid_hash(p, id), id->b, 16,
                                            pool_client_eq);
}

static uint32_t pool_client_slot(struct pool *p) {
    for (uint32_t i = 0; i < p->nclient_slots; i++)
        if (!p->clients[i])
            return i;
    uint32_t n = p->nclient_slots ? 2 * p->nclient_slots : 8;
    p->clients = cm_realloc(p->clients, n * sizeof(*p->clients));
    memset(p->clients + p->nclient_slots, 0, (n - p->nclient_slots) * sizeof(*p->clients));
    uint32_t slot = p->nclient_slots;
    p->nclient_slots = n;
    return slot;
}

/* Registers or refreshes a client; see pool.h. host is copied. */
int pool_client_register(struct pool *p, const struct pool_uuid *id, const char *host,
                         int64_t now) {
    if (!id || !host || !host[0] || strlen(host) > POOL_MAX_NAME_LEN)
        return POOL_EINVALID_PARAMS;
    struct pool_client *c = pool__client_find(p, id);
    if (c) {
        if (strcmp(c->host, host) != 0) {
            cm_free(c->host);
            c->host = cm_strdup(host);
        }
        c->last_ping = now;
        c->view_version = p->cfg.view_version;
        return POOL_OK;
    }
    c = cm_calloc(1, sizeof(*c));
    c->id = *id;
    c->host = cm_strdup(host);
    c->last_ping = now;
    c->view_version = p->cfg.view_version;
    c->slot = pool_client_slot(p);
    c->hn.hash = pool_uuid_hash(p, id);
    cm_ht_insert(&p->clients_by_id, &c->hn);
    p->clients[c->slot] = c;
    p->nclients++;
    return POOL_OK;
}

/* Heartbeat; see pool.h. Always returns 0. */
int pool_client_ping(struct pool *p, const struct pool_uuid *id, int64_t now,
                     struct pool_ping_reply *out) {
    struct pool_client *c = pool__client_find(p, id);
    out->view_version = p->cfg.view_version;
    if (!c) {
        out->status = POOL_CLIENT_NEED_REMOUNT;
        return POOL_OK;
    }
    if (now > c->last_ping)
        c->last_ping = now;
    out->status = POOL_CLIENT_OK;
    return POOL_OK;
}

/* Returns 1 when id is known. */
int pool_client_exists(const struct pool *p, const struct pool_uuid *id) {
    return pool__client_find(p, id) != NULL;
}

static void pool_client_free(struct pool *p, struct pool_client *c) {
    cm_ht_remove(&p->clients_by_id, &c->hn);
    p->clients[c->slot] = NULL;
    p->nclients--;
    pool__disk_free(c->disk);
    cm_free(c->host);
    cm_free(c);
}

static void pool_orphan_cb(struct cm_ht_node *n, void *arg) {
    struct pool_inflight *f = (struct pool_inflight *)n;
    uint32_t slot = *(const uint32_t *)arg;
    if (f->obj->writer == slot)
        f->obj->writer = POOL_NO_SLOT;
}

/*
 * Expires client c: drops its LOCAL_DISK replicas, unmounts all its segments in one pass over the
 * objects, detaches it from the puts it left unfinished (they become zombies for the sweep) and
 * forgets it. c is invalid afterwards.
 */
void pool__client_expire(struct pool *p, struct pool_client *c) {
    pool__disk_client_gone(p, c);
    int any = 0;
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        struct pool_seg *s = p->segs[i];
        if (s && s->owner == c->slot) {
            s->dying = 1;
            any = 1;
        }
    }
    if (any)
        pool__unmount_dying(p);
    uint32_t slot = c->slot;
    cm_ht_foreach(&p->inflight, pool_orphan_cb, &slot);
    pool_client_free(p, c);
}

/* Frees every client record (pool teardown). */
void pool__clients_fini(struct pool *p) {
    for (uint32_t i = 0; i < p->nclient_slots; i++)
        if (p->clients[i])
            pool_client_free(p, p->clients[i]);
    cm_free(p->clients);
    p->clients = NULL;
    p->nclient_slots = 0;
}
