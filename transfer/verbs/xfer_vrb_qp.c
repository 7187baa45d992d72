// SPDX-License-Identifier: Apache-2.0
/*
 * rdma transport: RC queue pairs and their state machine RESET -> INIT -> RTR -> RTS, the
 * handshake record (GID, LID, QPN, PSN, MTU, device index; 32 bytes little endian), and the
 * passive side of the handshake served on the engine listener.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_time.h"
#include "transfer/verbs/xfer_vrb.h"

/*
 * Creates an RC QP on context c (send and receive CQ = the context CQ, max_wr send slots,
 * one SGE, selective signaling). Returns 0 and sets *out, or -errno. Thread-safe.
 */
int xfer_vrb__qp_create(struct xfer_vrb_ctx *c, struct ibv_qp **out) {
    struct ibv_qp_init_attr a;
    memset(&a, 0, sizeof(a));
    a.send_cq = c->cq;
    a.recv_cq = c->cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = (uint32_t)c->max_wr;
    a.cap.max_recv_wr = 1;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.sq_sig_all = 0;
    *out = ibv_create_qp(c->pd, &a);
    return *out ? 0 : (errno ? -errno : -ENOMEM);
}

/* RESET -> INIT with local write and remote read/write access. Returns 0 or -errno. */
int xfer_vrb__qp_to_init(struct xfer_vrb_ctx *c, struct ibv_qp *qp) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = c->port;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    int rc =
        ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    return rc ? -rc : 0;
}

/*
 * INIT -> RTR towards peer: path MTU is the smaller of both ports', the address is global
 * (GRH) when the peer sent a non-zero GID (RoCE, or IB across subnets). Returns 0 or -errno.
 */
int xfer_vrb__qp_to_rtr(struct xfer_vrb_ctx *c, struct ibv_qp *qp,
                        const struct xfer_vrb_qp_info *peer) {
    static const uint8_t zero[16];
    struct ibv_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = peer->mtu && peer->mtu < c->mtu ? (enum ibv_mtu)peer->mtu : c->mtu;
    a.dest_qp_num = peer->qpn;
    a.rq_psn = peer->psn;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 12;
    a.ah_attr.dlid = peer->lid;
    a.ah_attr.sl = 0;
    a.ah_attr.src_path_bits = 0;
    a.ah_attr.port_num = c->port;
    if (memcmp(peer->gid, zero, 16) != 0) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    int rc = ibv_modify_qp(qp, &a,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    return rc ? -rc : 0;
}

/* RTR -> RTS with send PSN psn and retry limits. Returns 0 or -errno. */
int xfer_vrb__qp_to_rts(struct ibv_qp *qp, uint32_t psn) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = psn;
    a.max_rd_atomic = 16;
    int rc = ibv_modify_qp(qp, &a,
                           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                               IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    return rc ? -rc : 0;
}

/* Encodes a handshake record into out[XFER_VRB_QP_INFO_LEN]. Pure. */
void xfer_vrb__qp_info_encode(const struct xfer_vrb_qp_info *in, uint8_t *out) {
    memset(out, 0, XFER_VRB_QP_INFO_LEN);
    memcpy(out, in->gid, 16);
    xfer_put_u16(out + 16, in->lid);
    out[18] = in->mtu;
    out[19] = in->dev;
    xfer_put_u32(out + 20, in->qpn);
    xfer_put_u32(out + 24, in->psn & 0xffffffu);
}

/* Decodes a handshake record. Pure. */
void xfer_vrb__qp_info_decode(const uint8_t *in, struct xfer_vrb_qp_info *out) {
    memset(out, 0, sizeof(*out));
    memcpy(out->gid, in, 16);
    out->lid = xfer_get_u16(in + 16);
    out->mtu = in[18];
    out->dev = in[19];
    out->qpn = xfer_get_u32(in + 20);
    out->psn = xfer_get_u32(in + 24) & 0xffffffu;
}

static int xfer_vrb_reply(struct xfer_conn *conn, const struct xfer_wire_hdr *req, int status,
                          const uint8_t *info, uint64_t deadline) {
    uint8_t hb[XFER_WIRE_HDR_LEN];
    struct xfer_wire_hdr h = {.version = XFER_WIRE_VERSION,
                              .op = req->op,
                              .flags = XFER_WIRE_F_REPLY,
                              .status = status,
                              .id = req->id,
                              .len = info ? XFER_VRB_QP_INFO_LEN : 0};
    xfer_wire_encode(&h, hb);
    struct iovec iov[2] = {{hb, sizeof(hb)}, {(void *)info, info ? XFER_VRB_QP_INFO_LEN : 0}};
    return xfer__conn_write(conn, iov, info ? 2 : 1, deadline);
}

/*
 * Listener handler for XFER_VRB_OP_CONNECT (passive side of the handshake): reads the peer's
 * record, creates a QP on the requested device (or another active one), takes it to RTS,
 * caches it as a passive endpoint and replies with our record. Returns 0 to keep the
 * connection, or a negative code to close it. Runs on a listener thread.
 */
int xfer_vrb__serve_connect(struct xfer_transport *tp, struct xfer_conn *conn,
                            const struct xfer_wire_hdr *h) {
    struct xfer_vrb *v = tp->ctx;
    uint64_t deadline = cm_mono_ns() + 5000000000ull;
    uint8_t buf[XFER_VRB_QP_INFO_LEN];
    struct xfer_vrb_qp_info peer, mine;
    struct ibv_qp *qp = NULL;
    int rc;

    if (h->len != XFER_VRB_QP_INFO_LEN)
        return -CM_EPROTOCOL;
    if ((rc = xfer__conn_read(conn, buf, sizeof(buf), deadline)))
        return rc;
    xfer_vrb__qp_info_decode(buf, &peer);
    int idx = peer.dev < v->n_ctx && atomic_load(&v->ctx[peer.dev].active)
                  ? peer.dev
                  : xfer_vrb__pick_ctx(v, -1);
    if (idx < 0)
        return xfer_vrb_reply(conn, h, -CM_ENO_DEVICE, NULL, deadline);
    struct xfer_vrb_ctx *c = &v->ctx[idx];
    memset(&mine, 0, sizeof(mine));
    mine.psn = (uint32_t)(atomic_fetch_add(&c->psn_seed, 7777) & 0xffffffu);
    if ((rc = xfer_vrb__qp_create(c, &qp)) || (rc = xfer_vrb__qp_to_init(c, qp)) ||
        (rc = xfer_vrb__qp_to_rtr(c, qp, &peer)) || (rc = xfer_vrb__qp_to_rts(qp, mine.psn))) {
        cm_log(CM_LOG_WARNING, "xfer", "rdma: passive QP on %s: %s", c->name, cm_strerror(rc));
        if (qp)
            ibv_destroy_qp(qp);
        return xfer_vrb_reply(conn, h, rc, NULL, deadline);
    }
    memcpy(mine.gid, c->gid.raw, 16);
    mine.lid = c->lid;
    mine.mtu = (uint8_t)c->mtu;
    mine.dev = (uint8_t)idx;
    mine.qpn = qp->qp_num;
    if ((rc = xfer_vrb__ep_add_passive(c, qp))) {
        ibv_destroy_qp(qp);
        return xfer_vrb_reply(conn, h, rc, NULL, deadline);
    }
    xfer_vrb__qp_info_encode(&mine, buf);
    return xfer_vrb_reply(conn, h, 0, buf, deadline);
}
