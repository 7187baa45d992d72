/* SPDX-License-Identifier: Apache-2.0 */
/* fault transport (placeholder while the implementation lands). */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include <errno.h>

static int stub_install(struct xfer_transport *tp, const char *args) {
    (void)tp, (void)args;
    return -ENOSYS;
}
static void stub_uninstall(struct xfer_transport *tp) {
    (void)tp;
}
static int stub_open(struct xfer_transport *tp, struct xfer_segment *seg, const struct xfer_desc *d,
                     int i, void **ctx) {
    (void)tp, (void)seg, (void)d, (void)i, (void)ctx;
    return -ENOSYS;
}
static void stub_close(struct xfer_transport *tp, void *ctx) {
    (void)tp, (void)ctx;
}
static int stub_submit(struct xfer_transport *tp, struct xfer_task **t, size_t n) {
    (void)tp, (void)t, (void)n;
    return -ENOSYS;
}

const struct xfer_transport_ops xfer_fault_ops = {
    .size = sizeof(struct xfer_transport_ops),
    .name = "fault",
    .install = stub_install,
    .uninstall = stub_uninstall,
    .open_segment = stub_open,
    .close_segment = stub_close,
    .submit = stub_submit,
};
