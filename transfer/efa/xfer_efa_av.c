// SPDX-License-Identifier: Apache-2.0
/*
 * fabric transport: address vectors, the endpoint blob and remote segments. The endpoint blob
 * in the descriptor is
 *   u8 version | u8 n | u8 flags (bit 0: FI_MR_VIRT_ADDR) | n x (u8 len | len bytes name)
 * with one fi_getname() address per domain. Peer addresses go into each domain's AV on first
 * use and are cached per domain (one entry per peer name) and per segment.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "transfer/efa/xfer_efa.h"

#define XFER_EFA_F_VIRT_ADDR 0x1u

/* Opens the domain's table AV. Returns 0 or a negative libfabric code. Not thread-safe. */
int xfer_efa__av_open(struct xfer_efa_domain *d) {
    struct fi_av_attr attr = {.type = FI_AV_TABLE};
    return fi_av_open(d->domain, &attr, &d->av, NULL);
}

/* Closes the AV and frees the address cache. Not thread-safe. */
void xfer_efa__av_close(struct xfer_efa_domain *d) {
    if (d->av)
        fi_close(&d->av->fid);
    d->av = NULL;
    cm_free(d->av_ents);
    d->av_ents = NULL;
    d->av_n = d->av_cap = 0;
}

/* Finds or inserts a peer name in domain d's AV. Returns 0 and sets *out, or a negative code. */
static int xfer_efa_av_insert(struct xfer_efa_domain *d, const uint8_t *name, size_t len,
                              fi_addr_t *out) {
    int rc = 0;

    pthread_mutex_lock(&d->av_lock);
    for (size_t i = 0; i < d->av_n; i++) {
        if (d->av_ents[i].len == len && memcmp(d->av_ents[i].name, name, len) == 0) {
            *out = d->av_ents[i].addr;
            goto out;
        }
    }
    if (d->av_n == d->av_cap) {
        size_t cap = d->av_cap ? d->av_cap * 2 : 16;
        struct xfer_efa_av_ent *e = cm_try_realloc(d->av_ents, cap * sizeof(*e));
        if (!e) {
            rc = -ENOMEM;
            goto out;
        }
        d->av_ents = e;
        d->av_cap = cap;
    }
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    int n = fi_av_insert(d->av, name, 1, &a, 0, NULL);
    if (n != 1 || a == FI_ADDR_NOTAVAIL) {
        cm_log(CM_LOG_WARNING, "xfer", "fabric: fi_av_insert on domain %d failed (%d)", d->index,
               n);
        rc = -CM_EUNREACHABLE;
        goto out;
    }
    memcpy(d->av_ents[d->av_n].name, name, len);
    d->av_ents[d->av_n].len = len;
    d->av_ents[d->av_n].addr = a;
    d->av_n++;
    *out = a;
out:
    pthread_mutex_unlock(&d->av_lock);
    return rc;
}

/*
 * Returns in *out the fi_addr_t of peer domain pd as seen from local domain ld, inserting it
 * into the AV on first use. Returns 0 or -CM_EUNREACHABLE / -ENOMEM. Thread-safe.
 */
int xfer_efa__av_resolve(struct xfer_efa_seg *s, int ld, int pd, fi_addr_t *out) {
    uint64_t a = atomic_load_explicit(&s->addr[ld][pd], memory_order_acquire);
    if (a != FI_ADDR_NOTAVAIL) {
        *out = a;
        return 0;
    }
    fi_addr_t fa;
    int rc = xfer_efa_av_insert(&s->efa->dom[ld], s->peer_name[pd], s->peer_name_len[pd], &fa);
    if (rc)
        return rc;
    atomic_store_explicit(&s->addr[ld][pd], fa, memory_order_release);
    *out = fa;
    return 0;
}

/*
 * local_info op: writes the endpoint blob (every domain's address) into buf, whose capacity
 * is *len on entry; sets *len to the bytes used. Returns 0 or -ENOSPC. Thread-safe.
 */
int xfer_efa__local_info(struct xfer_transport *tp, uint8_t *buf, size_t *len) {
    struct xfer_efa *efa = tp->ctx;
    size_t need = 3, off = 3;

    for (int i = 0; i < efa->n_dom; i++)
        need += 1 + efa->dom[i].name_len;
    if (need > *len || need > XFER_EP_MAX)
        return -ENOSPC;
    buf[0] = XFER_EFA_BLOB_VERSION;
    buf[1] = (uint8_t)efa->n_dom;
    buf[2] = (efa->dom[0].mr_mode & FI_MR_VIRT_ADDR) ? XFER_EFA_F_VIRT_ADDR : 0;
    for (int i = 0; i < efa->n_dom; i++) {
        buf[off++] = (uint8_t)efa->dom[i].name_len;
        memcpy(buf + off, efa->dom[i].name, efa->dom[i].name_len);
        off += efa->dom[i].name_len;
    }
    *len = off;
    return 0;
}

/*
 * open_segment op: decodes the peer's endpoint blob (desc->tp[tp_index]) into a segment
 * context. No address is inserted yet (first use or warmup does it). Returns 0 and sets
 * *seg_ctx (freed by close_segment), -CM_ECORRUPT for a malformed blob, -ENOMEM.
 * Thread-safe.
 */
int xfer_efa__open_segment(struct xfer_transport *tp, struct xfer_segment *seg,
                           const struct xfer_desc *desc, int tp_index, void **seg_ctx) {
    const uint8_t *b = desc->tp[tp_index].ep;
    size_t len = desc->tp[tp_index].ep_len, off = 3;
    struct xfer_efa_seg *s;

    (void)seg;
    if (len < 3 || b[0] != XFER_EFA_BLOB_VERSION || b[1] < 1 || b[1] > XFER_EFA_MAX_DOMAINS)
        return -CM_ECORRUPT;
    if (!(s = cm_try_calloc(1, sizeof(*s))))
        return -ENOMEM;
    s->efa = tp->ctx;
    s->tp_index = tp_index;
    s->peer_n = b[1];
    s->peer_virt = (b[2] & XFER_EFA_F_VIRT_ADDR) != 0;
    for (int i = 0; i < s->peer_n; i++) {
        if (off >= len || b[off] == 0 || b[off] > XFER_EFA_NAME_MAX || off + 1 + b[off] > len) {
            cm_free(s);
            return -CM_ECORRUPT;
        }
        s->peer_name_len[i] = b[off];
        memcpy(s->peer_name[i], b + off + 1, b[off]);
        off += 1 + (size_t)b[off];
    }
    if (off != len) {
        cm_free(s);
        return -CM_ECORRUPT;
    }
    for (int l = 0; l < XFER_EFA_MAX_DOMAINS; l++)
        for (int p = 0; p < XFER_EFA_MAX_DOMAINS; p++)
            atomic_init(&s->addr[l][p], FI_ADDR_NOTAVAIL);
    s->seg = seg;
    *seg_ctx = s;
    return 0;
}

/*
 * close_segment op: frees the segment context. AV entries stay cached in the domains (other
 * segments of the same peer reuse them). Thread-safe.
 */
void xfer_efa__close_segment(struct xfer_transport *tp, void *seg_ctx) {
    (void)tp;
    cm_free(seg_ctx);
}

/* Warmup bookkeeping shared by the concurrent probe reads. */
struct xfer_efa_warm {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int remaining;
    int err;
};

static void xfer_efa_warm_done(void *arg, int err) {
    struct xfer_efa_warm *w = arg;
    pthread_mutex_lock(&w->lock);
    if (err && !w->err)
        w->err = err;
    if (--w->remaining == 0)
        pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* Finds a remote-visible buffer of the peer with a key blob for us; -1 when none. */
static int xfer_efa_probe_buf(const struct xfer_efa_seg *s, uint64_t *keys) {
    const struct xfer_desc *desc = s->seg->desc;
    for (uint32_t i = 0; i < desc->n_buf; i++) {
        const struct xfer_desc_buf *b = &desc->buf[i];
        if (b->len == 0 || strncmp(b->location, "cuda:", 5) == 0)
            continue;
        if (xfer_efa__key_decode(b->key[s->tp_index], b->key_len[s->tp_index], keys,
                                 XFER_EFA_MAX_DOMAINS) == s->peer_n)
            return (int)i;
    }
    return -1;
}

/*
 * warmup_segment op (Mooncake's warmupEfaSegment): inserts the address of every (local domain,
 * peer domain) pair and, when the peer exports a host buffer, connects all pairs concurrently
 * by posting one 1-byte fi_read per pair and waiting for all of them (bounded by the engine
 * timeout). Returns 0, or the first error (-ETIMEDOUT, -CM_ETRANSFER_FAIL, -CM_EUNREACHABLE).
 * Thread-safe.
 */
int xfer_efa__warmup_segment(struct xfer_transport *tp, void *seg_ctx) {
    struct xfer_efa_seg *s = seg_ctx;
    struct xfer_efa *efa = tp->ctx;
    uint64_t keys[XFER_EFA_MAX_DOMAINS];
    struct xfer_efa_warm w = {.remaining = 1};
    uint64_t deadline = cm_mono_ns() + (uint64_t)xfer_engine_timeout_ms(tp->eng) * 1000000ull;
    int buf = xfer_efa_probe_buf(s, keys), rc = 0;

    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    for (int l = 0; l < efa->n_dom && !rc; l++) {
        for (int p = 0; p < s->peer_n && !rc; p++) {
            fi_addr_t a;
            if ((rc = xfer_efa__av_resolve(s, l, p, &a)) || buf < 0)
                continue;
            const struct xfer_desc_buf *b = &s->seg->desc->buf[buf];
            struct xfer_efa_op *op =
                xfer_efa__op_get(&efa->dom[l], xfer_efa_warm_done, &w, 1, deadline);
            if (!op) {
                rc = -ENOMEM;
                break;
            }
            pthread_mutex_lock(&w.lock);
            w.remaining++;
            pthread_mutex_unlock(&w.lock);
            rc = xfer_efa__post(op, XFER_OP_READ, efa->dom[l].scratch, efa->dom[l].scratch_desc, a,
                                s->peer_virt ? b->addr : 0, keys[p]);
            if (rc) {
                xfer_efa__op_abort(op);
                xfer_efa_warm_done(&w, rc);
            }
        }
    }
    xfer_efa_warm_done(&w, 0); /* drop the initial reference */
    pthread_mutex_lock(&w.lock);
    while (w.remaining > 0)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    return rc ? rc : w.err;
}
