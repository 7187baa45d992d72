// SPDX-License-Identifier: Apache-2.0
/*
 * rdma transport (ibverbs RC): configuration, install/uninstall, the endpoint blob, remote
 * segments, and the ops table the registry lists as "rdma". Without an RDMA device install
 * fails with -CM_ENO_DEVICE after logging "rdma: no RDMA devices".
 *
 * Settings (install args override the environment): devices= (device names separated by ';',
 * default all), MC_IB_PORT / port= (1), MC_GID_INDEX / gid_index= (0), MC_SLICE_SIZE /
 * slice_size= (64 KiB), MC_MAX_EP_PER_CTX / max_eps= (256).
 *
 * Endpoint blob: u8 version | u8 n devices | n x (u8 len | device name).
 */
#include "common/fmacros.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "transfer/verbs/xfer_vrb.h"

static int xfer_vrb_setting(const char *args, const char *key, const char *env, uint64_t def,
                            uint64_t lo, uint64_t hi, uint64_t *out) {
    uint64_t v = xfer__env_u64(env, def);
    int rc = xfer__arg_u64(args, key, &v);
    if (rc < 0 || v < lo || v > hi)
        return -EINVAL;
    *out = v;
    return 0;
}

static void xfer_vrb_uninstall(struct xfer_transport *tp) {
    struct xfer_vrb *v = tp->ctx;
    if (!v)
        return;
    xfer__listener_unhandle(tp->eng, XFER_VRB_OP_CONNECT, XFER_VRB_OP_CONNECT);
    for (int i = 0; i < XFER_VRB_MAX_DEVICES; i++)
        xfer_vrb__ctx_close(&v->ctx[i]);
    xfer_vrb__slices_release(v);
    pthread_mutex_destroy(&v->pool_lock);
    cm_free(v);
    tp->ctx = NULL;
}

static int xfer_vrb_install(struct xfer_transport *tp, const char *args) {
    struct xfer_vrb *v = cm_try_calloc(1, sizeof(*v));
    char filter[256] = "";
    uint64_t port, gid, slice, eps;
    int rc;

    if (!v)
        return -ENOMEM;
    v->tp = tp;
    tp->ctx = v;
    pthread_mutex_init(&v->pool_lock, NULL);
    if (xfer_vrb_setting(args, "port", "MC_IB_PORT", 1, 1, 255, &port) ||
        xfer_vrb_setting(args, "gid_index", "MC_GID_INDEX", 0, 0, 255, &gid) ||
        xfer_vrb_setting(args, "slice_size", "MC_SLICE_SIZE", XFER_VRB_SLICE_DEFAULT, 1, 1u << 30,
                         &slice) ||
        xfer_vrb_setting(args, "max_eps", "MC_MAX_EP_PER_CTX", XFER_VRB_MAX_EP_DEFAULT, 1, 1u << 20,
                         &eps) ||
        xfer__arg_str(args, "devices", filter, sizeof(filter)) < 0) {
        rc = -EINVAL;
        goto fail;
    }
    v->port = (uint8_t)port;
    v->gid_index = (int)gid;
    v->slice_size = slice;
    v->max_eps = (size_t)eps;
    if ((rc = xfer_vrb__devices_open(v, filter)))
        goto fail;
    rc = xfer__listener_handle(tp->eng, XFER_VRB_OP_CONNECT, XFER_VRB_OP_CONNECT,
                               xfer_vrb__serve_connect, tp);
    if (rc && rc != -ENOTCONN)
        goto fail;
    cm_log(CM_LOG_NOTICE, "xfer", "rdma: %d device(s), first %s, slice %llu B, %zu endpoints/ctx",
           v->n_ctx, v->ctx[0].name, (unsigned long long)v->slice_size, v->max_eps);
    return 0;
fail:
    xfer_vrb_uninstall(tp);
    return rc;
}

static int xfer_vrb_local_info(struct xfer_transport *tp, uint8_t *buf, size_t *len) {
    struct xfer_vrb *v = tp->ctx;
    size_t off = 2;
    for (int i = 0; i < v->n_ctx; i++) {
        size_t n = strnlen(v->ctx[i].name, sizeof(v->ctx[i].name));
        if (off + 1 + n > *len)
            return -ENOSPC;
        buf[off] = (uint8_t)n;
        memcpy(buf + off + 1, v->ctx[i].name, n);
        off += 1 + n;
    }
    buf[0] = XFER_VRB_BLOB_VERSION;
    buf[1] = (uint8_t)v->n_ctx;
    *len = off;
    return 0;
}

/*
 * open_segment op: records the peer's device count, engine instance and listener (for the QP
 * handshake). Endpoints are created on first use. Returns 0, -CM_ECORRUPT, -ENOMEM, or
 * -CM_EUNREACHABLE when the peer has no listener. Thread-safe.
 */
int xfer_vrb__open_segment(struct xfer_transport *tp, struct xfer_segment *seg,
                           const struct xfer_desc *desc, int tp_index, void **seg_ctx) {
    const uint8_t *b = desc->tp[tp_index].ep;
    size_t len = desc->tp[tp_index].ep_len;
    if (len < 2 || b[0] != XFER_VRB_BLOB_VERSION || b[1] < 1 || b[1] > XFER_VRB_MAX_DEVICES)
        return -CM_ECORRUPT;
    if (!desc->listen[0])
        return -CM_EUNREACHABLE;
    struct xfer_vrb_seg *s = cm_try_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->vrb = tp->ctx;
    s->seg = seg;
    s->tp_index = tp_index;
    s->peer_n = b[1];
    s->peer_instance = desc->instance;
    snprintf(s->peer_listen, sizeof(s->peer_listen), "%s", desc->listen);
    *seg_ctx = s;
    return 0;
}

/* close_segment op: frees the segment context (cached endpoints stay). Thread-safe. */
void xfer_vrb__close_segment(struct xfer_transport *tp, void *seg_ctx) {
    (void)tp;
    cm_free(seg_ctx);
}

/*
 * warmup_segment op: connects an endpoint from every active device to its peer device now
 * (QP creation and handshake), so the first batch does not pay for it. Returns 0 or the first
 * connect error. Thread-safe.
 */
static int xfer_vrb_warmup_segment(struct xfer_transport *tp, void *seg_ctx) {
    struct xfer_vrb *v = tp->ctx;
    struct xfer_vrb_seg *s = seg_ctx;
    uint64_t deadline = cm_mono_ns() + (uint64_t)xfer_engine_timeout_ms(tp->eng) * 1000000ull;
    int first = 0;
    for (int i = 0; i < v->n_ctx; i++) {
        struct xfer_vrb_ep *ep;
        if (!atomic_load(&v->ctx[i].active))
            continue;
        int rc = xfer_vrb__ep_get(s, &v->ctx[i], i % s->peer_n, deadline, &ep);
        if (rc == 0)
            xfer_vrb__ep_put(ep);
        else if (!first)
            first = rc;
    }
    return first;
}

/* The rdma transport's ops table, listed in transfer/core/xfer_registry.c. */
const struct xfer_transport_ops xfer_rdma_ops = {
    .size = sizeof(struct xfer_transport_ops),
    .name = "rdma",
    .install = xfer_vrb_install,
    .uninstall = xfer_vrb_uninstall,
    .register_mem = xfer_vrb__register_mem,
    .unregister_mem = xfer_vrb__unregister_mem,
    .local_info = xfer_vrb_local_info,
    .reachable = NULL,
    .open_segment = xfer_vrb__open_segment,
    .close_segment = xfer_vrb__close_segment,
    .submit = xfer_vrb__submit,
    .warmup_segment = xfer_vrb_warmup_segment,
};
