/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma transport (prefix xfer_vrb_): ibverbs reliable-connected QPs. Private to
 * transfer/verbs/.
 *
 * DESIGN
 *   - One xfer_vrb_ctx per RDMA device (port MC_IB_PORT, GID index MC_GID_INDEX): PD, one CQ
 *     polled by a completion worker thread, and an async-event thread. Port down
 *     (IBV_EVENT_PORT_ERR) or IBV_EVENT_DEVICE_FATAL makes the context inactive: its endpoints
 *     are disconnected and its in-flight slices are failed over to another active context (once,
 *     within the task deadline) or failed. IBV_EVENT_PORT_ACTIVE reactivates it.
 *   - Memory is registered on every device; the key blob is u8 n | n x u32 rkey.
 *   - An endpoint is an RC QP from a local context to one (peer engine, peer device). It is
 *     created on first use: the initiator moves its QP to INIT, sends GID/LID/QPN/PSN/MTU to the
 *     peer's engine listener (opcode XFER_WIRE_RDMA_FIRST), the peer creates its QP, takes it
 *     INIT -> RTR -> RTS and answers with its own numbers; the initiator goes RTR -> RTS.
 *     Each context caches at most MC_MAX_EP_PER_CTX endpoints (default 256); creating one more
 *     evicts the least recently used idle one.
 *   - A task is split into MC_SLICE_SIZE (64 KiB) slices, one signaled RDMA WRITE/READ work
 *     request each, posted in chains; the task completes when its last slice does.
 *   - Every verbs call that is a library function (ibv_open_device, ibv_modify_qp, ...) is
 *     called directly so tests can replace it with -Wl,--wrap; the static-inline data-path
 *     calls go through xfer_vrb_sys.c (xfer_vrb__sys_*), which tests replace at link time.
 */
#ifndef CRESCENT_TRANSFER_VERBS_XFER_VRB_H
#define CRESCENT_TRANSFER_VERBS_XFER_VRB_H

#include "transfer/xfer_int.h"

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define XFER_VRB_MAX_DEVICES    16
#define XFER_VRB_SLICE_DEFAULT  (64u << 10) /* MC_SLICE_SIZE */
#define XFER_VRB_MAX_EP_DEFAULT 256         /* MC_MAX_EP_PER_CTX */
#define XFER_VRB_MAX_WR         256         /* send queue depth per QP */
#define XFER_VRB_CQ_DEPTH       4096
#define XFER_VRB_POST_CHAIN     32 /* work requests per ibv_post_send call */
#define XFER_VRB_BLOB_VERSION   1
#define XFER_VRB_OP_CONNECT     XFER_WIRE_RDMA_FIRST

struct xfer_vrb;
struct xfer_vrb_ctx;

/* QP connection data exchanged in the handshake (little endian on the wire, 32 bytes). */
struct xfer_vrb_qp_info {
    uint8_t gid[16];
    uint16_t lid;
    uint8_t mtu; /* enum ibv_mtu */
    uint8_t dev; /* device index the sender wants / used */
    uint32_t qpn;
    uint32_t psn;
    uint32_t reserved;
};
#define XFER_VRB_QP_INFO_LEN 32

/* Endpoint states. */
enum xfer_vrb_ep_state {
    XFER_VRB_EP_CONNECTED = 0, /* QP in RTS */
    XFER_VRB_EP_BROKEN = 1     /* disconnected (error completion, async event, eviction) */
};

/* An RC QP between a local context and one peer device. */
struct xfer_vrb_ep {
    struct xfer_vrb_ctx *ctx;
    uint64_t peer_instance; /* peer engine instance (0 for passive endpoints) */
    int peer_dev;
    int passive; /* created by the peer's handshake; we never post on it */
    struct ibv_qp *qp;
    atomic_int state;       /* enum xfer_vrb_ep_state */
    atomic_int refs;        /* posting threads + outstanding work requests */
    atomic_int wr_inflight; /* outstanding work requests (send queue slots) */
    pthread_mutex_t post_lock;
    uint64_t last_use_ns;
    struct xfer_vrb_ep *next; /* ctx list (most recently used first) */
};

/* One slice: one work request (or an accounting unit for a failed post). */
struct xfer_vrb_slice {
    struct xfer_vrb_ctx *ctx; /* the context it was posted on */
    struct xfer_vrb_ep *ep;
    struct xfer_task *task;
    uint64_t off; /* offset inside the task */
    uint32_t len;
    int retries;                        /* failovers so far */
    atomic_int accounted;               /* 1 once the task was told */
    struct xfer_vrb_slice *prev, *next; /* ctx in-flight list, or free list */
};

/* One RDMA device. */
struct xfer_vrb_ctx {
    struct xfer_vrb *vrb;
    int index;
    char name[IBV_SYSFS_NAME_MAX];
    struct ibv_context *ibv;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    uint8_t port;
    int gid_index;
    union ibv_gid gid;
    uint16_t lid;
    enum ibv_mtu mtu;
    int max_wr;
    atomic_int active;

    pthread_mutex_t ep_lock; /* guards eps, n_eps */
    struct xfer_vrb_ep *eps;
    size_t n_eps;

    pthread_mutex_t sl_lock;        /* guards the in-flight list */
    struct xfer_vrb_slice inflight; /* sentinel */

    pthread_t cq_thread, ev_thread;
    int threads;
    atomic_int stop;
    atomic_ulong psn_seed;
};

/* Counters for tests and INFO. */
struct xfer_vrb_stats {
    atomic_ulong eps_created;
    atomic_ulong eps_evicted;
    atomic_ulong slices_posted;
    atomic_ulong slices_failed_over;
    atomic_ulong slices_failed;
    atomic_ulong async_events;
};

/* The transport context (tp->ctx). */
struct xfer_vrb {
    struct xfer_transport *tp;
    int n_ctx;
    struct xfer_vrb_ctx ctx[XFER_VRB_MAX_DEVICES];
    uint64_t slice_size; /* MC_SLICE_SIZE */
    size_t max_eps;      /* MC_MAX_EP_PER_CTX */
    uint8_t port;        /* MC_IB_PORT */
    int gid_index;       /* MC_GID_INDEX */
    atomic_ulong rr;
    pthread_mutex_t pool_lock;
    struct xfer_vrb_slice *free_slices;
    struct xfer_vrb_stats st;
};

/* Per-segment context. */
struct xfer_vrb_seg {
    struct xfer_vrb *vrb;
    struct xfer_segment *seg;
    int tp_index;
    int peer_n; /* peer devices */
    uint64_t peer_instance;
    char peer_listen[XFER_HOSTPORT_MAX];
};

/* ---- xfer_vrb_sys.c: the static-inline verbs calls, out of line (tests replace them) ---- */
int xfer_vrb__sys_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr);
int xfer_vrb__sys_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int xfer_vrb__sys_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

/* ---- xfer_vrb_dev.c ---- */
int xfer_vrb__devices_open(struct xfer_vrb *v, const char *filter);
void xfer_vrb__ctx_close(struct xfer_vrb_ctx *c);
void xfer_vrb__ctx_deactivate(struct xfer_vrb_ctx *c, const char *why);
int xfer_vrb__pick_ctx(struct xfer_vrb *v, int avoid);

/* ---- xfer_vrb_mr.c ---- */
int xfer_vrb__register_mem(struct xfer_transport *tp, struct xfer_mr *mr, uint8_t *key,
                           size_t *key_len);
int xfer_vrb__unregister_mem(struct xfer_transport *tp, struct xfer_mr *mr);
int xfer_vrb__key_decode(const uint8_t *blob, size_t len, uint32_t *rkeys, int max);
uint32_t xfer_vrb__lkey(struct xfer_transport *tp, struct xfer_mr *mr, int idx);

/* ---- xfer_vrb_qp.c ---- */
int xfer_vrb__qp_create(struct xfer_vrb_ctx *c, struct ibv_qp **out);
int xfer_vrb__qp_to_init(struct xfer_vrb_ctx *c, struct ibv_qp *qp);
int xfer_vrb__qp_to_rtr(struct xfer_vrb_ctx *c, struct ibv_qp *qp,
                        const struct xfer_vrb_qp_info *peer);
int xfer_vrb__qp_to_rts(struct ibv_qp *qp, uint32_t psn);
void xfer_vrb__qp_info_encode(const struct xfer_vrb_qp_info *in, uint8_t *out);
void xfer_vrb__qp_info_decode(const uint8_t *in, struct xfer_vrb_qp_info *out);
int xfer_vrb__serve_connect(struct xfer_transport *tp, struct xfer_conn *conn,
                            const struct xfer_wire_hdr *h);

/* ---- xfer_vrb_ep.c ---- */
int xfer_vrb__ep_get(struct xfer_vrb_seg *s, struct xfer_vrb_ctx *c, int peer_dev,
                     uint64_t deadline_ns, struct xfer_vrb_ep **out);
void xfer_vrb__ep_put(struct xfer_vrb_ep *ep);
int xfer_vrb__ep_add_passive(struct xfer_vrb_ctx *c, struct ibv_qp *qp);
void xfer_vrb__eps_disconnect(struct xfer_vrb_ctx *c);
void xfer_vrb__ep_break(struct xfer_vrb_ctx *c, struct ibv_qp *qp);
void xfer_vrb__eps_destroy(struct xfer_vrb_ctx *c);

/* ---- xfer_vrb_post.c ---- */
int xfer_vrb__submit(struct xfer_transport *tp, struct xfer_task **tasks, size_t n);
void xfer_vrb__slice_done(struct xfer_vrb_slice *sl, int err);
void xfer_vrb__slices_fail_ctx(struct xfer_vrb_ctx *c);
void xfer_vrb__slices_drop(struct xfer_vrb_ctx *c);
void xfer_vrb__slices_release(struct xfer_vrb *v);

/* ---- xfer_vrb_cq.c ---- */
int xfer_vrb__workers_start(struct xfer_vrb_ctx *c);
void xfer_vrb__workers_stop(struct xfer_vrb_ctx *c);
void xfer_vrb__handle_async(struct xfer_vrb_ctx *c, const struct ibv_async_event *ev);

/* ---- xfer_vrb_transport.c ---- */
int xfer_vrb__open_segment(struct xfer_transport *tp, struct xfer_segment *seg,
                           const struct xfer_desc *desc, int tp_index, void **seg_ctx);
void xfer_vrb__close_segment(struct xfer_transport *tp, void *seg_ctx);

#endif
