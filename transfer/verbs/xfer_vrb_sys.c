// SPDX-License-Identifier: Apache-2.0
/*
 * rdma transport: out-of-line wrappers for the verbs calls that <infiniband/verbs.h> defines as
 * static inline or macros (they dispatch through the provider's ops and cannot be wrapped with
 * -Wl,--wrap). Unit tests link their own definitions of these three functions instead of this
 * file; everything else calls libibverbs directly.
 */
#include "common/fmacros.h"

#include "transfer/verbs/xfer_vrb.h"

/* ibv_query_port, out of line. Returns 0 or an errno value (verbs convention). Thread-safe. */
int xfer_vrb__sys_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr) {
    return ibv_query_port(c, port, attr);
}

/* ibv_post_send, out of line. Returns 0 or an errno value; *bad names the first refused WR. */
int xfer_vrb__sys_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
    return ibv_post_send(qp, wr, bad);
}

/* ibv_poll_cq, out of line. Returns the number of completions or a negative value. */
int xfer_vrb__sys_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
    return ibv_poll_cq(cq, n, wc);
}
