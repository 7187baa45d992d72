// SPDX-License-Identifier: Apache-2.0
/*
 * rdma transport: memory registration on every device. Device memory ("cuda:N") is registered
 * the same way: with GPUDirect RDMA (nvidia-peermem) ibv_reg_mr accepts device pointers. The key
 * blob in the descriptor is u8 n | n x u32 rkey (little endian), in device order.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "transfer/verbs/xfer_vrb.h"

/* Per-registration state (mr->tp_priv[slot]). */
struct xfer_vrb_mr {
    int n;
    struct ibv_mr *mr[XFER_VRB_MAX_DEVICES];
};

static void xfer_vrb_mr_free(struct xfer_vrb_mr *m) {
    for (int i = 0; i < m->n; i++)
        if (m->mr[i])
            ibv_dereg_mr(m->mr[i]);
    cm_free(m);
}

/*
 * register_mem op: ibv_reg_mr on every device (remote read/write when XFER_REG_REMOTE) and the
 * rkey blob. Returns 0, -ENOMEM or -errno from the first device that refused. Thread-safe.
 */
int xfer_vrb__register_mem(struct xfer_transport *tp, struct xfer_mr *mr, uint8_t *key,
                           size_t *key_len) {
    struct xfer_vrb *v = tp->ctx;
    struct xfer_vrb_mr *m = cm_try_calloc(1, sizeof(*m));
    int access = IBV_ACCESS_LOCAL_WRITE;

    if (!m)
        return -ENOMEM;
    if (mr->flags & XFER_REG_REMOTE)
        access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    for (int i = 0; i < v->n_ctx; i++) {
        void *addr = (void *)(uintptr_t)mr->addr;
        m->mr[i] = ibv_reg_mr_iova2(v->ctx[i].pd, addr, mr->len, (uintptr_t)addr, (unsigned)access);
        m->n = i + 1;
        if (!m->mr[i]) {
            int err = errno ? errno : EINVAL;
            cm_log(CM_LOG_WARNING, "xfer", "rdma: ibv_reg_mr of %llu B (%s) on %s: %s",
                   (unsigned long long)mr->len, mr->location, v->ctx[i].name, strerror(err));
            xfer_vrb_mr_free(m);
            return -err;
        }
    }
    key[0] = (uint8_t)v->n_ctx;
    for (int i = 0; i < v->n_ctx; i++)
        xfer_put_u32(key + 1 + 4 * i, m->mr[i]->rkey);
    *key_len = 1 + 4 * (size_t)v->n_ctx;
    mr->tp_priv[tp->slot] = m;
    return 0;
}

/* unregister_mem op: deregisters mr on every device. Returns 0. Thread-safe. */
int xfer_vrb__unregister_mem(struct xfer_transport *tp, struct xfer_mr *mr) {
    struct xfer_vrb_mr *m = mr->tp_priv[tp->slot];
    if (m)
        xfer_vrb_mr_free(m);
    mr->tp_priv[tp->slot] = NULL;
    return 0;
}

/* Local key of registration mr on context idx, or 0 when mr is not registered with us. */
uint32_t xfer_vrb__lkey(struct xfer_transport *tp, struct xfer_mr *mr, int idx) {
    struct xfer_vrb_mr *m = mr->tp_priv[tp->slot];
    return m && idx < m->n ? m->mr[idx]->lkey : 0;
}

/* Decodes an rkey blob into rkeys[0..max). Returns the count or -CM_ECORRUPT. Pure. */
int xfer_vrb__key_decode(const uint8_t *blob, size_t len, uint32_t *rkeys, int max) {
    if (!blob || len < 1 || blob[0] < 1 || blob[0] > max || len != 1 + 4 * (size_t)blob[0])
        return -CM_ECORRUPT;
    for (int i = 0; i < blob[0]; i++)
        rkeys[i] = xfer_get_u32(blob + 1 + 4 * i);
    return blob[0];
}
