// SPDX-License-Identifier: Apache-2.0
/*
 * rdma transport: the per-context endpoint cache. Active endpoints are found by (peer engine
 * instance, peer device); a miss creates an RC QP and runs the handshake with the peer's
 * listener. At most max_eps endpoints (active + passive) are kept per context: creating one
 * more evicts the least recently used endpoint that has no work in flight. Broken endpoints
 * leave the cache at once and are destroyed when their last reference drops.
 * Endpoint reference counts are guarded by the context's ep_lock.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "transfer/verbs/xfer_vrb.h"

static void xfer_vrb_ep_destroy(struct xfer_vrb_ep *ep) {
    if (ep->qp)
        ibv_destroy_qp(ep->qp);
    pthread_mutex_destroy(&ep->post_lock);
    cm_free(ep);
}

static void xfer_vrb_unlink(struct xfer_vrb_ctx *c, struct xfer_vrb_ep *ep) {
    for (struct xfer_vrb_ep **pp = &c->eps; *pp; pp = &(*pp)->next) {
        if (*pp == ep) {
            *pp = ep->next;
            c->n_eps--;
            ep->next = NULL;
            return;
        }
    }
}

/* With ep_lock held: unlinks the LRU idle endpoint if the cache is full; returns it or NULL. */
static struct xfer_vrb_ep *xfer_vrb_evict_locked(struct xfer_vrb_ctx *c) {
    struct xfer_vrb_ep *victim = NULL;
    if (c->n_eps < c->vrb->max_eps)
        return NULL;
    for (struct xfer_vrb_ep *ep = c->eps; ep; ep = ep->next)
        if (atomic_load(&ep->refs) == 0)
            victim = ep; /* the list is MRU first: the last idle one is the LRU */
    if (victim) {
        xfer_vrb_unlink(c, victim);
        atomic_store(&victim->state, XFER_VRB_EP_BROKEN);
        atomic_fetch_add(&c->vrb->st.eps_evicted, 1);
    }
    return victim;
}

static void xfer_vrb_insert(struct xfer_vrb_ctx *c, struct xfer_vrb_ep *ep) {
    pthread_mutex_lock(&c->ep_lock);
    struct xfer_vrb_ep *victim = xfer_vrb_evict_locked(c);
    ep->next = c->eps;
    c->eps = ep;
    c->n_eps++;
    pthread_mutex_unlock(&c->ep_lock);
    atomic_fetch_add(&c->vrb->st.eps_created, 1);
    if (victim) {
        cm_log(CM_LOG_VERBOSE, "xfer", "rdma: %s: endpoint cache full (%zu), evicted one", c->name,
               c->vrb->max_eps);
        xfer_vrb_ep_destroy(victim);
    }
}

static struct xfer_vrb_ep *xfer_vrb_ep_new(struct xfer_vrb_ctx *c) {
    struct xfer_vrb_ep *ep = cm_try_calloc(1, sizeof(*ep));
    if (!ep)
        return NULL;
    ep->ctx = c;
    pthread_mutex_init(&ep->post_lock, NULL);
    atomic_init(&ep->state, XFER_VRB_EP_CONNECTED);
    atomic_init(&ep->refs, 0);
    atomic_init(&ep->wr_inflight, 0);
    ep->last_use_ns = cm_mono_ns();
    return ep;
}

/*
 * Caches a QP the peer's handshake created on context c (passive: we never post on it, but it
 * counts against the cache and can be evicted). Returns 0 or -ENOMEM. Thread-safe.
 */
int xfer_vrb__ep_add_passive(struct xfer_vrb_ctx *c, struct ibv_qp *qp) {
    struct xfer_vrb_ep *ep = xfer_vrb_ep_new(c);
    if (!ep)
        return -ENOMEM;
    ep->qp = qp;
    ep->passive = 1;
    xfer_vrb_insert(c, ep);
    return 0;
}

/* Active side of the handshake: sends our record, reads the peer's. */
static int xfer_vrb_handshake(struct xfer_vrb_seg *s, const struct xfer_vrb_qp_info *mine,
                              struct xfer_vrb_qp_info *peer, uint64_t deadline) {
    uint8_t hb[XFER_WIRE_HDR_LEN], ib[XFER_VRB_QP_INFO_LEN];
    struct xfer_wire_hdr h = {.version = XFER_WIRE_VERSION,
                              .op = XFER_VRB_OP_CONNECT,
                              .id = 1,
                              .len = XFER_VRB_QP_INFO_LEN};
    int fd = xfer__sock_connect(s->peer_listen, deadline), rc;

    if (fd < 0)
        return fd;
    xfer_wire_encode(&h, hb);
    xfer_vrb__qp_info_encode(mine, ib);
    struct iovec out[2] = {{hb, sizeof(hb)}, {ib, sizeof(ib)}};
    if ((rc = xfer__sock_writev(fd, out, 2, deadline)))
        goto done;
    struct iovec in = {hb, sizeof(hb)};
    if ((rc = xfer__sock_readv(fd, &in, 1, deadline)))
        goto done;
    if ((rc = xfer_wire_decode(hb, sizeof(hb), &h)) < 0)
        goto done;
    rc = 0;
    if (!(h.flags & XFER_WIRE_F_REPLY) || h.op != XFER_VRB_OP_CONNECT) {
        rc = -CM_EPROTOCOL;
    } else if (h.status < 0) {
        rc = h.status;
    } else if (h.len != XFER_VRB_QP_INFO_LEN) {
        rc = -CM_EPROTOCOL;
    } else {
        struct iovec pin = {ib, sizeof(ib)};
        if ((rc = xfer__sock_readv(fd, &pin, 1, deadline)) == 0)
            xfer_vrb__qp_info_decode(ib, peer);
    }
done:
    close(fd);
    return rc;
}

/* Creates and connects an endpoint from context c to peer device pd. */
static int xfer_vrb_connect(struct xfer_vrb_seg *s, struct xfer_vrb_ctx *c, int pd,
                            uint64_t deadline, struct xfer_vrb_ep **out) {
    struct xfer_vrb_qp_info mine, peer;
    struct xfer_vrb_ep *ep = xfer_vrb_ep_new(c);
    int rc;

    if (!ep)
        return -ENOMEM;
    ep->peer_instance = s->peer_instance;
    ep->peer_dev = pd;
    if ((rc = xfer_vrb__qp_create(c, &ep->qp)) || (rc = xfer_vrb__qp_to_init(c, ep->qp)))
        goto fail;
    memset(&mine, 0, sizeof(mine));
    memcpy(mine.gid, c->gid.raw, 16);
    mine.lid = c->lid;
    mine.mtu = (uint8_t)c->mtu;
    mine.dev = (uint8_t)pd;
    mine.qpn = ep->qp->qp_num;
    mine.psn = (uint32_t)(atomic_fetch_add(&c->psn_seed, 7777) & 0xffffffu);
    if ((rc = xfer_vrb_handshake(s, &mine, &peer, deadline)) ||
        (rc = xfer_vrb__qp_to_rtr(c, ep->qp, &peer)) ||
        (rc = xfer_vrb__qp_to_rts(ep->qp, mine.psn)))
        goto fail;
    ep->peer_dev = peer.dev;
    *out = ep;
    return 0;
fail:
    cm_log(CM_LOG_WARNING, "xfer", "rdma: connecting %s to %s dev %d: %s", c->name, s->peer_listen,
           pd, cm_strerror(rc));
    xfer_vrb_ep_destroy(ep);
    return rc;
}

/*
 * Returns a connected endpoint from context c to peer device peer_dev of segment s, with one
 * reference for the caller (drop it with xfer_vrb__ep_put). Creates it on a cache miss (network
 * handshake, bounded by deadline_ns and 5 s). Returns 0, or -CM_ENO_DEVICE when c is inactive,
 * or the connect error. Thread-safe.
 */
int xfer_vrb__ep_get(struct xfer_vrb_seg *s, struct xfer_vrb_ctx *c, int peer_dev,
                     uint64_t deadline_ns, struct xfer_vrb_ep **out) {
    if (!atomic_load(&c->active))
        return -CM_ENO_DEVICE;
    pthread_mutex_lock(&c->ep_lock);
    for (struct xfer_vrb_ep **pp = &c->eps; *pp; pp = &(*pp)->next) {
        struct xfer_vrb_ep *ep = *pp;
        if (!ep->passive && ep->peer_instance == s->peer_instance && ep->peer_dev == peer_dev &&
            atomic_load(&ep->state) == XFER_VRB_EP_CONNECTED) {
            *pp = ep->next; /* move to the front (MRU) */
            ep->next = c->eps;
            c->eps = ep;
            atomic_fetch_add(&ep->refs, 1);
            ep->last_use_ns = cm_mono_ns();
            pthread_mutex_unlock(&c->ep_lock);
            *out = ep;
            return 0;
        }
    }
    pthread_mutex_unlock(&c->ep_lock);
    uint64_t cap = cm_mono_ns() + 5000000000ull;
    struct xfer_vrb_ep *ep;
    int rc =
        xfer_vrb_connect(s, c, peer_dev, deadline_ns && deadline_ns < cap ? deadline_ns : cap, &ep);
    if (rc)
        return rc;
    atomic_store(&ep->refs, 1);
    xfer_vrb_insert(c, ep);
    *out = ep;
    return 0;
}

/*
 * Drops one reference; a broken endpoint that is no longer cached is destroyed with its last
 * reference. Thread-safe.
 */
void xfer_vrb__ep_put(struct xfer_vrb_ep *ep) {
    struct xfer_vrb_ctx *c = ep->ctx;
    int kill;
    pthread_mutex_lock(&c->ep_lock);
    kill = atomic_fetch_sub(&ep->refs, 1) == 1 && atomic_load(&ep->state) == XFER_VRB_EP_BROKEN &&
           !ep->passive;
    if (kill) {
        /* Still cached? Then it goes now; uncached broken ones are ours alone. */
        xfer_vrb_unlink(c, ep);
    }
    pthread_mutex_unlock(&c->ep_lock);
    if (kill)
        xfer_vrb_ep_destroy(ep);
}

/*
 * Disconnects every endpoint of c (port down, fatal device, shutdown): all are marked broken
 * and leave the cache; idle ones are destroyed now, busy ones with their last reference.
 * Thread-safe.
 */
void xfer_vrb__eps_disconnect(struct xfer_vrb_ctx *c) {
    struct xfer_vrb_ep *dead = NULL;
    pthread_mutex_lock(&c->ep_lock);
    struct xfer_vrb_ep *ep = c->eps, *next;
    c->eps = NULL;
    for (; ep; ep = next) {
        next = ep->next;
        atomic_store(&ep->state, XFER_VRB_EP_BROKEN);
        c->n_eps--;
        ep->next = NULL;
        if (atomic_load(&ep->refs) == 0 || ep->passive) {
            ep->next = dead;
            dead = ep;
        }
    }
    pthread_mutex_unlock(&c->ep_lock);
    for (; dead; dead = next) {
        next = dead->next;
        xfer_vrb_ep_destroy(dead);
    }
}

/*
 * Breaks the endpoint of c that owns qp (QP fatal event): it leaves the cache, and is destroyed
 * now when idle, else with its last reference. Thread-safe.
 */
void xfer_vrb__ep_break(struct xfer_vrb_ctx *c, struct ibv_qp *qp) {
    struct xfer_vrb_ep *dead = NULL;
    pthread_mutex_lock(&c->ep_lock);
    for (struct xfer_vrb_ep *ep = c->eps; ep; ep = ep->next) {
        if (ep->qp != qp)
            continue;
        atomic_store(&ep->state, XFER_VRB_EP_BROKEN);
        xfer_vrb_unlink(c, ep);
        if (atomic_load(&ep->refs) == 0 || ep->passive)
            dead = ep;
        break;
    }
    pthread_mutex_unlock(&c->ep_lock);
    if (dead)
        xfer_vrb_ep_destroy(dead);
}

/* Destroys every cached endpoint (context close; nothing is in flight). Not thread-safe. */
void xfer_vrb__eps_destroy(struct xfer_vrb_ctx *c) {
    xfer_vrb__eps_disconnect(c);
}
