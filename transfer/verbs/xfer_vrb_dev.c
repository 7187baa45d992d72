// SPDX-License-Identifier: Apache-2.0
/*
 * rdma transport: device discovery and per-device contexts (PD, CQ, port attributes, GID),
 * activation state and round-robin context choice.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "transfer/verbs/xfer_vrb.h"

/*
 * True when name is listed in filter, separated by ';' (install args already use ',') or ','
 * (NULL or "" = every device).
 */
static int xfer_vrb_wanted(const char *filter, const char *name) {
    if (!filter || !*filter)
        return 1;
    size_t n = strlen(name);
    for (const char *p = filter; *p;) {
        size_t l = strcspn(p, ",;");
        const char *e = p[l] ? p + l : NULL;
        if (l == n && strncmp(p, name, n) == 0)
            return 1;
        p += l + (e ? 1 : 0);
    }
    return 0;
}

static int xfer_vrb_ctx_open(struct xfer_vrb *v, struct xfer_vrb_ctx *c, struct ibv_device *dev) {
    struct ibv_device_attr dattr;
    struct ibv_port_attr pattr;
    int rc;

    memset(c, 0, sizeof(*c));
    c->vrb = v;
    c->index = v->n_ctx;
    c->port = v->port;
    c->gid_index = v->gid_index;
    snprintf(c->name, sizeof(c->name), "%s", ibv_get_device_name(dev));
    pthread_mutex_init(&c->ep_lock, NULL);
    pthread_mutex_init(&c->sl_lock, NULL);
    c->inflight.next = c->inflight.prev = &c->inflight;
    if (!(c->ibv = ibv_open_device(dev)))
        return -errno ? -errno : -ENODEV;
    if ((rc = ibv_query_device(c->ibv, &dattr)))
        return -rc;
    c->max_wr = dattr.max_qp_wr < XFER_VRB_MAX_WR ? dattr.max_qp_wr : XFER_VRB_MAX_WR;
    if (c->max_wr < 1)
        return -ENODEV;
    memset(&pattr, 0, sizeof(pattr));
    if ((rc = xfer_vrb__sys_query_port(c->ibv, c->port, &pattr)))
        return -rc;
    c->lid = pattr.lid;
    c->mtu = pattr.active_mtu;
    if (ibv_query_gid(c->ibv, c->port, c->gid_index, &c->gid) != 0 &&
        pattr.link_layer == IBV_LINK_LAYER_ETHERNET)
        return -ENODEV; /* RoCE needs a GID */
    if (!(c->pd = ibv_alloc_pd(c->ibv)))
        return -ENOMEM;
    if (!(c->cq = ibv_create_cq(c->ibv, XFER_VRB_CQ_DEPTH, NULL, NULL, 0)))
        return -ENOMEM;
    atomic_store(&c->active, pattr.state == IBV_PORT_ACTIVE);
    atomic_store(&c->psn_seed, (unsigned long)(c->index + 1) * 7919u);
    if (!atomic_load(&c->active))
        cm_log(CM_LOG_WARNING, "xfer", "rdma: %s port %u is not active", c->name, c->port);
    return xfer_vrb__workers_start(c);
}

/*
 * Closes one context: stops its workers, destroys its endpoints, fails what is still in
 * flight on it, and releases CQ, PD and the device. Safe on a partially opened context. Not
 * thread-safe; the transport is being uninstalled.
 */
void xfer_vrb__ctx_close(struct xfer_vrb_ctx *c) {
    if (!c->vrb)
        return;
    xfer_vrb__workers_stop(c);
    atomic_store(&c->active, 0);
    xfer_vrb__slices_drop(c); /* drops their endpoint references */
    xfer_vrb__eps_destroy(c);
    if (c->cq)
        ibv_destroy_cq(c->cq);
    if (c->pd)
        ibv_dealloc_pd(c->pd);
    if (c->ibv)
        ibv_close_device(c->ibv);
    pthread_mutex_destroy(&c->ep_lock);
    pthread_mutex_destroy(&c->sl_lock);
    memset(c, 0, sizeof(*c));
}

/*
 * Discovers RDMA devices (those named in filter, or all) and opens a context per device.
 * Returns 0 when at least one context opened, -CM_ENO_DEVICE ("no RDMA devices" is logged)
 * otherwise. Not thread-safe (install).
 */
int xfer_vrb__devices_open(struct xfer_vrb *v, const char *filter) {
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);

    if (!list || n <= 0) {
        if (list)
            ibv_free_device_list(list);
        cm_log(CM_LOG_WARNING, "xfer", "rdma: no RDMA devices");
        return -CM_ENO_DEVICE;
    }
    for (int i = 0; i < n && v->n_ctx < XFER_VRB_MAX_DEVICES; i++) {
        const char *name = ibv_get_device_name(list[i]);
        if (!xfer_vrb_wanted(filter, name))
            continue;
        struct xfer_vrb_ctx *c = &v->ctx[v->n_ctx];
        int rc = xfer_vrb_ctx_open(v, c, list[i]);
        if (rc) {
            cm_log(CM_LOG_WARNING, "xfer", "rdma: cannot use %s: %s", name, cm_strerror(rc));
            xfer_vrb__ctx_close(c);
            continue;
        }
        v->n_ctx++;
    }
    ibv_free_device_list(list);
    if (v->n_ctx == 0) {
        cm_log(CM_LOG_WARNING, "xfer", "rdma: no RDMA devices usable (%d found)", n);
        return -CM_ENO_DEVICE;
    }
    return 0;
}

/*
 * Marks a context inactive after a port error or fatal device event: new work avoids it, its
 * endpoints are disconnected and its in-flight slices fail over or fail. Thread-safe.
 */
void xfer_vrb__ctx_deactivate(struct xfer_vrb_ctx *c, const char *why) {
    if (atomic_exchange(&c->active, 0))
        cm_log(CM_LOG_WARNING, "xfer", "rdma: %s inactive: %s", c->name, why);
    xfer_vrb__eps_disconnect(c);
    xfer_vrb__slices_fail_ctx(c);
}

/*
 * Picks an active context round robin, skipping avoid (-1 = none). Returns its index or -1
 * when none is active. Thread-safe.
 */
int xfer_vrb__pick_ctx(struct xfer_vrb *v, int avoid) {
    unsigned long start = atomic_fetch_add(&v->rr, 1);
    for (int i = 0; i < v->n_ctx; i++) {
        int k = (int)((start + (unsigned long)i) % (unsigned long)v->n_ctx);
        if (k != avoid && atomic_load(&v->ctx[k].active))
            return k;
    }
    return -1;
}
