/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric transport (prefix xfer_efa_): libfabric FI_EP_RDM + FI_RMA. EFA on AWS, tcp;ofi_rxm on
 * any host, any other RMA-capable provider by name. Private to transfer/efa/.
 *
 * DESIGN
 *   - One xfer_efa_domain per NIC (fi_getinfo result with a distinct domain name, or the same
 *     one opened again with domains=N to emulate several NICs on loopback): its own fabric,
 *     domain, AV (FI_AV_TABLE), CQ, one RDM endpoint and one progress thread that reads the CQ.
 *     The progress thread also drives the provider for RMA that peers aim at us (manual
 *     progress providers such as ofi_rxm need somebody to call into the CQ).
 *   - Memory is registered in every domain (fi_mr_regattr; FI_HMEM_CUDA for "cuda:N" memory
 *     when the provider has FI_HMEM); the descriptor key blob carries one key per domain.
 *   - The endpoint blob lists every domain's fi_getname() address. A segment keeps a lazily
 *     filled (local domain x peer domain) table of fi_addr_t: addresses are inserted into the
 *     AV on first use; xfer_efa__warmup_segment() inserts and connects all pairs at once by
 *     posting one tiny fi_read per pair concurrently.
 *   - A task of at most stripe_threshold bytes (MC_EFA_STRIPING_THRESHOLD, 2 MiB) is one
 *     fi_write/fi_read on one domain (round robin); a larger one is cut into one chunk per
 *     domain (striping). Posts are serialized per endpoint; -FI_EAGAIN is backpressure: drive
 *     the CQ, then retry, until the task's deadline.
 *   - Each posted operation is an xfer_efa_op from a per-domain pool, linked on the domain's
 *     in-flight list. A completion or the task deadline (checked by the progress thread)
 *     accounts the op exactly once; an op that expired stays linked until the provider reports
 *     it (or the endpoint closes), so the provider never writes into freed state.
 */
#ifndef CRESCENT_TRANSFER_EFA_XFER_EFA_H
#define CRESCENT_TRANSFER_EFA_XFER_EFA_H

#include "transfer/xfer_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define XFER_EFA_MAX_DOMAINS      30         /* fits 30 x 8-byte keys in XFER_KEY_MAX */
#define XFER_EFA_NAME_MAX         64         /* fi_getname bytes per domain */
#define XFER_EFA_STRIPE_DEFAULT   (2u << 20) /* MC_EFA_STRIPING_THRESHOLD default */
#define XFER_EFA_STRIPE_ALIGN     4096u      /* stripe chunks start on this boundary */
#define XFER_EFA_CQ_BATCH         32         /* completions read per fi_cq_read */
#define XFER_EFA_DEFAULT_PROVIDER "tcp;ofi_rxm"
#define XFER_EFA_BLOB_VERSION     1

struct xfer_efa_domain;
struct xfer_efa_op;

/*
 * Called once per op when it is accounted, with op->arg: err 0, -ETIMEDOUT or a negative failure
 * code. It must not touch the op (a late completion may recycle it).
 */
typedef void xfer_efa_op_cb(void *arg, int err);

/* One posted fi_write/fi_read (or warmup read). */
struct xfer_efa_op {
    struct fi_context2 fi_ctx; /* must stay first: the provider's per-op context */
    struct xfer_efa_domain *dom;
    struct xfer_efa_op *prev, *next; /* in-flight list, or free list (next only) */
    xfer_efa_op_cb *cb;
    void *arg; /* the task, or the warmup state */
    uint64_t len;
    uint64_t deadline_ns;  /* 0 = none */
    struct fid_mr *tmp_mr; /* on-the-fly local registration (FI_MR_LOCAL), closed on free */
    atomic_int accounted;  /* 1 once cb ran (completion or deadline) */
};

/* Transport configuration (install args override the environment). */
struct xfer_efa_cfg {
    char provider[64];         /* provider= / FI_PROVIDER / "tcp;ofi_rxm" */
    char node[64];             /* node= (source address for fi_getinfo), "" = provider's pick */
    uint64_t stripe_threshold; /* stripe_threshold= / MC_EFA_STRIPING_THRESHOLD */
    unsigned domains;          /* domains= : 0 = every NIC found; N > found repeats them */
    size_t cq_size;            /* cq_size= */
    uint64_t inline_poll_ns;   /* inline_poll_us= / MC_EFA_INLINE_POLL_US (50), 0 = off */
    int delivery_complete;     /* completion=delivery|provider (see xfer_efa__cfg_parse) */
    int busy_poll;             /* busy_poll= / MC_EFA_BUSY_POLL: spin while ops are in flight */
    size_t tx_size;            /* tx_size= : transmit queue depth hint, 0 = provider default */
};

/* Counters (tests, INFO). */
struct xfer_efa_stats {
    atomic_ulong ops_posted; /* fi_write/fi_read accepted */
    atomic_ulong eagain;     /* -FI_EAGAIN answers (backpressure) */
    atomic_ulong striped;    /* tasks striped over several domains */
    atomic_ulong op_errors;  /* error completions */
    atomic_ulong expired;    /* ops accounted by deadline */
};

/* One NIC: fabric, domain, AV, CQ, endpoint, progress thread. */
struct xfer_efa_domain {
    struct xfer_efa *efa;
    int index;
    struct fi_info *info; /* a dup of the fi_getinfo entry */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    uint64_t mr_mode; /* negotiated domain_attr->mr_mode */
    int hmem;         /* FI_HMEM negotiated */
    size_t max_msg;   /* ep_attr->max_msg_size */
    uint8_t name[XFER_EFA_NAME_MAX];
    size_t name_len;

    pthread_mutex_t ep_lock; /* serializes posts on ep */

    pthread_mutex_t av_lock; /* guards the address cache */
    struct xfer_efa_av_ent *av_ents;
    size_t av_n, av_cap;

    pthread_mutex_t op_lock;     /* guards inflight and free lists */
    struct xfer_efa_op inflight; /* list head (sentinel) */
    struct xfer_efa_op *free_ops;
    atomic_long n_inflight;
    atomic_int pollers; /* submitters polling inline: the progress thread stays out of the way */
    _Atomic uint64_t last_inline_ns; /* end of the last inline poll (CLOCK_MONOTONIC) */

    pthread_t thread;
    int thread_started;
    int no_wait; /* the CQ has no wait object: poll with short sleeps */
    int wait_fd; /* FI_WAIT_FD descriptor of the CQ, or -1 (then fi_cq_sread) */
    atomic_int stop;

    /* Warmup scratch: a small registered local buffer fi_read lands in. */
    uint8_t scratch[64];
    struct fid_mr *scratch_mr;
    void *scratch_desc;
};

/* The transport context (tp->ctx). */
struct xfer_efa {
    struct xfer_transport *tp;
    struct xfer_efa_cfg cfg;
    struct fi_info *infos; /* fi_getinfo result list */
    int n_dom;
    struct xfer_efa_domain dom[XFER_EFA_MAX_DOMAINS];
    atomic_ulong next_key; /* requested keys when the provider lacks FI_MR_PROV_KEY */
    atomic_ulong rr;       /* round-robin domain choice for small tasks */
    struct xfer_efa_stats st;
};

/* Per-registration state (mr->tp_priv[slot]). */
struct xfer_efa_mr {
    int n;
    struct fid_mr *mr[XFER_EFA_MAX_DOMAINS];
    void *desc[XFER_EFA_MAX_DOMAINS];
    uint64_t key[XFER_EFA_MAX_DOMAINS];
};

/* Per-segment state (the segment context). */
struct xfer_efa_seg {
    struct xfer_efa *efa;
    struct xfer_segment *seg; /* the core's segment (its desc lists the peer buffers) */
    int tp_index;             /* index of our transport in the peer descriptor */
    int peer_n;               /* peer domains */
    int peer_virt;            /* peer addresses RMA by virtual address (FI_MR_VIRT_ADDR) */
    uint8_t peer_name[XFER_EFA_MAX_DOMAINS][XFER_EFA_NAME_MAX];
    size_t peer_name_len[XFER_EFA_MAX_DOMAINS];
    /* fi_addr_t per (local domain, peer domain); FI_ADDR_NOTAVAIL until first use. */
    _Atomic uint64_t addr[XFER_EFA_MAX_DOMAINS][XFER_EFA_MAX_DOMAINS];
};

/* An AV cache entry: a peer endpoint name and its fi_addr_t in this domain. */
struct xfer_efa_av_ent {
    uint8_t name[XFER_EFA_NAME_MAX];
    size_t len;
    fi_addr_t addr;
};

/* ---- xfer_efa_fabric.c ---- */
int xfer_efa__cfg_parse(const char *args, struct xfer_efa_cfg *cfg);
void xfer_efa__domain_close(struct xfer_efa_domain *d);

/* ---- xfer_efa_cq.c ---- */
int xfer_efa__cq_open(struct xfer_efa_domain *d);
int xfer_efa__progress_start(struct xfer_efa_domain *d);
void xfer_efa__progress_stop(struct xfer_efa_domain *d);
int xfer_efa__cq_drive(struct xfer_efa_domain *d);
struct xfer_efa_op *xfer_efa__op_get(struct xfer_efa_domain *d, xfer_efa_op_cb *cb, void *arg,
                                     uint64_t len, uint64_t deadline_ns);
void xfer_efa__op_abort(struct xfer_efa_op *op);
void xfer_efa__ops_release(struct xfer_efa_domain *d);

/* ---- xfer_efa_ep.c ---- */
int xfer_efa__ep_open(struct xfer_efa_domain *d);
int xfer_efa__post(struct xfer_efa_op *op, enum xfer_op opcode, void *local, void *desc,
                   fi_addr_t dest, uint64_t raddr, uint64_t rkey);
int xfer_efa__submit(struct xfer_transport *tp, struct xfer_task **tasks, size_t n);
/* progress op: reaps ready completions inline; returns the ops still in flight. Thread-safe. */
int xfer_efa__progress(struct xfer_transport *tp);

/* ---- xfer_efa_mr.c ---- */
int xfer_efa__register_mem(struct xfer_transport *tp, struct xfer_mr *mr, uint8_t *key,
                           size_t *key_len);
int xfer_efa__unregister_mem(struct xfer_transport *tp, struct xfer_mr *mr);
int xfer_efa__mr_reg(struct xfer_efa_domain *d, void *addr, size_t len, uint64_t access,
                     const char *location, struct fid_mr **out);
int xfer_efa__key_decode(const uint8_t *blob, size_t len, uint64_t *keys, int max);

/* ---- xfer_efa_av.c ---- */
int xfer_efa__av_open(struct xfer_efa_domain *d);
void xfer_efa__av_close(struct xfer_efa_domain *d);
int xfer_efa__av_resolve(struct xfer_efa_seg *s, int ld, int pd, fi_addr_t *out);
int xfer_efa__local_info(struct xfer_transport *tp, uint8_t *buf, size_t *len);
int xfer_efa__open_segment(struct xfer_transport *tp, struct xfer_segment *seg,
                           const struct xfer_desc *desc, int tp_index, void **seg_ctx);
void xfer_efa__close_segment(struct xfer_transport *tp, void *seg_ctx);
int xfer_efa__warmup_segment(struct xfer_transport *tp, void *seg_ctx);

#endif
