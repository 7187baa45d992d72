// SPDX-License-Identifier: Apache-2.0
/*
 * rdma transport (ibverbs RC): the ops table the registry lists as "rdma". This first cut only
 * discovers devices: without an RDMA device install fails with -CM_ENO_DEVICE and logs
 * "no RDMA devices".
 */
#include "common/fmacros.h"

#include <errno.h>

#include <infiniband/verbs.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "transfer/xfer_int.h"

static int xfer_vrb_install(struct xfer_transport *tp, const char *args) {
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);

    (void)tp;
    (void)args;
    if (list)
        ibv_free_device_list(list);
    if (n <= 0) {
        cm_log(CM_LOG_WARNING, "xfer", "rdma: no RDMA devices");
        return -CM_ENO_DEVICE;
    }
    cm_log(CM_LOG_WARNING, "xfer", "rdma: data path not built yet");
    return -CM_ENOT_SUPPORTED;
}

static void xfer_vrb_uninstall(struct xfer_transport *tp) {
    (void)tp;
}

static int xfer_vrb_open_segment(struct xfer_transport *tp, struct xfer_segment *seg,
                                 const struct xfer_desc *desc, int tp_index, void **seg_ctx) {
    (void)tp, (void)seg, (void)desc, (void)tp_index, (void)seg_ctx;
    return -CM_ENOT_SUPPORTED;
}

static void xfer_vrb_close_segment(struct xfer_transport *tp, void *seg_ctx) {
    (void)tp, (void)seg_ctx;
}

static int xfer_vrb_submit(struct xfer_transport *tp, struct xfer_task **tasks, size_t n) {
    (void)tp, (void)tasks, (void)n;
    return -CM_ENOT_SUPPORTED;
}

/* The rdma transport's ops table, listed in transfer/core/xfer_registry.c. */
const struct xfer_transport_ops xfer_rdma_ops = {
    .size = sizeof(struct xfer_transport_ops),
    .name = "rdma",
    .install = xfer_vrb_install,
    .uninstall = xfer_vrb_uninstall,
    .register_mem = xfer__no_register_mem,
    .unregister_mem = xfer__no_unregister_mem,
    .local_info = xfer__no_local_info,
    .open_segment = xfer_vrb_open_segment,
    .close_segment = xfer_vrb_close_segment,
    .submit = xfer_vrb_submit,
    .warmup_segment = xfer__no_warmup_segment,
};
