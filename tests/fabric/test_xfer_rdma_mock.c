// SPDX-License-Identifier: Apache-2.0
/*
 * rdma transport logic without RDMA hardware: the exported ibverbs functions are replaced with
 * -Wl,--wrap=ibv_* mocks, and the static-inline data-path calls (query_port, post_send,
 * poll_cq) with this file's definitions of xfer_vrb__sys_*. The mock "NIC" executes RDMA WRITE
 * and READ work requests as memcpy inside this process, so two engines in one process move
 * real bytes through the real transport code: device discovery, MR registration, the QP
 * handshake and INIT -> RTR -> RTS, slicing into MC_SLICE_SIZE work requests, completion
 * handling and fail-over, endpoint cache eviction, and async events (port error, fatal device).
 */
#include "common/fmacros.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_time.h"
#include "transfer/verbs/xfer_vrb.h"

/* ---- mock device world (one per test process; Criterion forks per test) ---- */

#define MOCK_MAX_DEV 4
#define MOCK_MAX_QP  64
#define MOCK_MAX_WR  4096
#define MOCK_MAX_EVT 8

struct mock_cq {
    struct ibv_cq cq;
    pthread_mutex_t lock;
    struct ibv_wc wc[MOCK_MAX_WR];
    int head, n;
};

struct mock_ctx {
    struct ibv_context ctx;
    int dev;
    int pipe_w;
    pthread_mutex_t lock;
    struct ibv_async_event evt[MOCK_MAX_EVT];
    int n_evt;
};

struct mock_qp {
    struct ibv_qp qp;
    int states[8];
    int n_states;
    int destroyed;
};

struct mock_wr {
    uint64_t wr_id;
    int opcode;
    uint32_t len;
    uint64_t local, remote;
    uint32_t rkey;
    struct mock_cq *cq;
    int dev;
};

static struct {
    pthread_mutex_t lock;
    int ndev;
    struct ibv_device devs[MOCK_MAX_DEV];
    struct ibv_device *list[MOCK_MAX_DEV + 1];
    struct mock_qp *qps[MOCK_MAX_QP];
    int n_qp;
    int n_reg, n_dereg, last_access;
    uint32_t next_key;
    struct mock_wr log[MOCK_MAX_WR]; /* every posted WR, in order */
    int n_log;
    int fail_dev; /* WRs posted from this device complete with an error */
    int hold_dev; /* WRs posted from this device wait (in flight) */
    struct mock_wr held[MOCK_MAX_WR];
    int n_held;
    char warn[512];
} mock = {.lock = PTHREAD_MUTEX_INITIALIZER, .fail_dev = -1, .hold_dev = -1};

static void cq_push(struct mock_cq *cq, uint64_t wr_id, enum ibv_wc_status st, int opcode) {
    pthread_mutex_lock(&cq->lock);
    struct ibv_wc *w = &cq->wc[(cq->head + cq->n) % MOCK_MAX_WR];
    memset(w, 0, sizeof(*w));
    w->wr_id = wr_id;
    w->status = st;
    w->opcode = opcode == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ;
    cq->n++;
    pthread_mutex_unlock(&cq->lock);
}

struct ibv_device **__wrap_ibv_get_device_list(int *num);
struct ibv_device **__wrap_ibv_get_device_list(int *num) {
    for (int i = 0; i < mock.ndev; i++) {
        snprintf(mock.devs[i].name, sizeof(mock.devs[i].name), "mock%d", i);
        mock.list[i] = &mock.devs[i];
    }
    mock.list[mock.ndev] = NULL;
    if (num)
        *num = mock.ndev;
    return mock.list;
}

void __wrap_ibv_free_device_list(struct ibv_device **list);
void __wrap_ibv_free_device_list(struct ibv_device **list) {
    (void)list;
}

const char *__wrap_ibv_get_device_name(struct ibv_device *dev);
const char *__wrap_ibv_get_device_name(struct ibv_device *dev) {
    return dev->name;
}

struct ibv_context *__wrap_ibv_open_device(struct ibv_device *dev);
struct ibv_context *__wrap_ibv_open_device(struct ibv_device *dev) {
    struct mock_ctx *m = calloc(1, sizeof(*m));
    int p[2];
    if (pipe(p))
        return NULL;
    m->ctx.async_fd = p[0];
    m->pipe_w = p[1];
    m->dev = (int)(dev - mock.devs);
    pthread_mutex_init(&m->lock, NULL);
    return &m->ctx;
}

int __wrap_ibv_close_device(struct ibv_context *c);
int __wrap_ibv_close_device(struct ibv_context *c) {
    struct mock_ctx *m = (struct mock_ctx *)c;
    close(m->ctx.async_fd);
    close(m->pipe_w);
    free(m);
    return 0;
}

int __wrap_ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a);
int __wrap_ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a) {
    (void)c;
    memset(a, 0, sizeof(*a));
    a->max_qp_wr = 64; /* small send queue: exercises backpressure */
    return 0;
}

int __wrap_ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid);
int __wrap_ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid) {
    (void)port, (void)index;
    memset(gid, 0, sizeof(*gid));
    gid->raw[15] = (uint8_t)(((struct mock_ctx *)c)->dev + 1);
    return 0;
}

int xfer_vrb__sys_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr) {
    (void)port;
    memset(attr, 0, sizeof(*attr));
    attr->state = IBV_PORT_ACTIVE;
    attr->lid = (uint16_t)(((struct mock_ctx *)c)->dev + 1);
    attr->active_mtu = IBV_MTU_4096;
    attr->link_layer = IBV_LINK_LAYER_INFINIBAND;
    return 0;
}

struct ibv_pd *__wrap_ibv_alloc_pd(struct ibv_context *c);
struct ibv_pd *__wrap_ibv_alloc_pd(struct ibv_context *c) {
    struct ibv_pd *pd = calloc(1, sizeof(*pd));
    pd->context = c;
    return pd;
}

int __wrap_ibv_dealloc_pd(struct ibv_pd *pd);
int __wrap_ibv_dealloc_pd(struct ibv_pd *pd) {
    free(pd);
    return 0;
}

struct ibv_cq *__wrap_ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context,
                                    struct ibv_comp_channel *ch, int vec);
struct ibv_cq *__wrap_ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context,
                                    struct ibv_comp_channel *ch, int vec) {
    (void)cqe, (void)cq_context, (void)ch, (void)vec;
    struct mock_cq *m = calloc(1, sizeof(*m));
    m->cq.context = c;
    pthread_mutex_init(&m->lock, NULL);
    return &m->cq;
}

int __wrap_ibv_destroy_cq(struct ibv_cq *cq);
int __wrap_ibv_destroy_cq(struct ibv_cq *cq) {
    free(cq);
    return 0;
}

int xfer_vrb__sys_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
    struct mock_cq *m = (struct mock_cq *)cq;
    int k = 0;
    pthread_mutex_lock(&m->lock);
    while (k < n && m->n > 0) {
        wc[k++] = m->wc[m->head];
        m->head = (m->head + 1) % MOCK_MAX_WR;
        m->n--;
    }
    pthread_mutex_unlock(&m->lock);
    return k;
}

struct ibv_qp *__wrap_ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a);
struct ibv_qp *__wrap_ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a) {
    struct mock_qp *m = calloc(1, sizeof(*m));
    pthread_mutex_lock(&mock.lock);
    m->qp.qp_num = 100 + (uint32_t)mock.n_qp;
    mock.qps[mock.n_qp++] = m;
    pthread_mutex_unlock(&mock.lock);
    m->qp.context = pd->context;
    m->qp.pd = pd;
    m->qp.send_cq = a->send_cq;
    m->qp.recv_cq = a->recv_cq;
    m->qp.qp_type = a->qp_type;
    m->qp.state = IBV_QPS_RESET;
    return &m->qp;
}

int __wrap_ibv_destroy_qp(struct ibv_qp *qp);
int __wrap_ibv_destroy_qp(struct ibv_qp *qp) {
    ((struct mock_qp *)qp)->destroyed = 1; /* kept for the assertions; freed at exit */
    return 0;
}

int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask);
int __wrap_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask) {
    struct mock_qp *m = (struct mock_qp *)qp;
    static const int next[] = {
        [IBV_QPS_RESET] = IBV_QPS_INIT, [IBV_QPS_INIT] = IBV_QPS_RTR, [IBV_QPS_RTR] = IBV_QPS_RTS};
    if (!(mask & IBV_QP_STATE))
        return EINVAL;
    if (a->qp_state != IBV_QPS_ERR &&
        (qp->state > IBV_QPS_RTR || next[qp->state] != (int)a->qp_state))
        return EINVAL; /* illegal transition */
    if (a->qp_state == IBV_QPS_RTR && (!(mask & IBV_QP_DEST_QPN) || a->dest_qp_num < 100))
        return EINVAL;
    qp->state = a->qp_state;
    if (m->n_states < 8)
        m->states[m->n_states++] = a->qp_state;
    return 0;
}

struct ibv_mr *__wrap_ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
                                       unsigned int access);
struct ibv_mr *__wrap_ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
                                       unsigned int access) {
    (void)iova;
    struct ibv_mr *mr = calloc(1, sizeof(*mr));
    pthread_mutex_lock(&mock.lock);
    mr->pd = pd;
    mr->addr = addr;
    mr->length = len;
    mr->lkey = ++mock.next_key;
    mr->rkey = 0x1000 + mock.next_key;
    mock.n_reg++;
    mock.last_access = (int)access;
    pthread_mutex_unlock(&mock.lock);
    return mr;
}

int __wrap_ibv_dereg_mr(struct ibv_mr *mr);
int __wrap_ibv_dereg_mr(struct ibv_mr *mr) {
    pthread_mutex_lock(&mock.lock);
    mock.n_dereg++;
    pthread_mutex_unlock(&mock.lock);
    free(mr);
    return 0;
}

int xfer_vrb__sys_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
    struct mock_ctx *mc = (struct mock_ctx *)qp->context;
    if (qp->state != IBV_QPS_RTS) {
        *bad = wr;
        return EINVAL;
    }
    for (; wr; wr = wr->next) {
        struct mock_wr w = {wr->wr_id,
                            wr->opcode,
                            wr->sg_list[0].length,
                            wr->sg_list[0].addr,
                            wr->wr.rdma.remote_addr,
                            wr->wr.rdma.rkey,
                            (struct mock_cq *)qp->send_cq,
                            mc->dev};
        pthread_mutex_lock(&mock.lock);
        if (mock.n_log < MOCK_MAX_WR)
            mock.log[mock.n_log++] = w;
        int hold = mc->dev == mock.hold_dev && mock.n_held < MOCK_MAX_WR;
        if (hold)
            mock.held[mock.n_held++] = w;
        pthread_mutex_unlock(&mock.lock);
        if (hold)
            continue;
        if (mc->dev == mock.fail_dev) {
            cq_push(w.cq, w.wr_id, IBV_WC_REM_ACCESS_ERR, w.opcode);
            continue;
        }
        if (w.opcode == IBV_WR_RDMA_WRITE)
            memcpy((void *)(uintptr_t)w.remote, (void *)(uintptr_t)w.local, w.len);
        else
            memcpy((void *)(uintptr_t)w.local, (void *)(uintptr_t)w.remote, w.len);
        cq_push(w.cq, w.wr_id, IBV_WC_SUCCESS, w.opcode);
    }
    return 0;
}

int __wrap_ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *ev);
int __wrap_ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *ev) {
    struct mock_ctx *m = (struct mock_ctx *)c;
    char b;
    pthread_mutex_lock(&m->lock);
    if (m->n_evt == 0) {
        pthread_mutex_unlock(&m->lock);
        errno = EAGAIN;
        return -1;
    }
    *ev = m->evt[0];
    memmove(m->evt, m->evt + 1, sizeof(m->evt[0]) * (size_t)--m->n_evt);
    pthread_mutex_unlock(&m->lock);
    if (read(m->ctx.async_fd, &b, 1) < 0)
        return -1;
    return 0;
}

void __wrap_ibv_ack_async_event(struct ibv_async_event *ev);
void __wrap_ibv_ack_async_event(struct ibv_async_event *ev) {
    (void)ev;
}

/* Flushes held WRs of dev with IBV_WC_WR_FLUSH_ERR, as a QP in the error state would. */
static void mock_flush_held(int dev) {
    pthread_mutex_lock(&mock.lock);
    for (int i = 0; i < mock.n_held; i++)
        if (mock.held[i].dev == dev && mock.held[i].cq)
            cq_push(mock.held[i].cq, mock.held[i].wr_id, IBV_WC_WR_FLUSH_ERR, mock.held[i].opcode);
    mock.n_held = 0;
    mock.hold_dev = -1;
    pthread_mutex_unlock(&mock.lock);
}

static void mock_event(struct xfer_vrb_ctx *c, enum ibv_event_type type) {
    struct mock_ctx *m = (struct mock_ctx *)c->ibv;
    pthread_mutex_lock(&m->lock);
    m->evt[m->n_evt].event_type = type;
    m->evt[m->n_evt].element.port_num = 1;
    m->n_evt++;
    pthread_mutex_unlock(&m->lock);
    cr_assert_eq(write(m->pipe_w, "e", 1), 1);
}

static void log_cb(enum cm_log_level level, const char *subsys, const char *line, void *arg) {
    (void)subsys, (void)arg;
    if (level >= CM_LOG_WARNING && strlen(mock.warn) + strlen(line) + 2 < sizeof(mock.warn)) {
        strcat(mock.warn, line);
        strcat(mock.warn, "\n");
    }
}

/* ---- helpers over the public engine API ---- */

struct pair {
    struct xfer_engine *srv, *cli;
    struct xfer_segment *seg;
    uint8_t *remote, *local;
    size_t len;
};

static struct xfer_vrb *vrb_of(struct xfer_engine *eng) {
    struct xfer_transport *tp = xfer__engine_transport(eng, "rdma");
    cr_assert_not_null(tp);
    return tp->ctx;
}

static void pair_open(struct pair *p, int ndev, const char *args, size_t len) {
    struct xfer_engine_opts o = {.timeout_ms = 3000};
    int rc;
    mock.ndev = ndev;
    p->len = len;
    cr_assert_eq(xfer_engine_create(&o, &p->srv), 0);
    cr_assert_eq(xfer_engine_create(&o, &p->cli), 0);
    rc = xfer_engine_install(p->srv, "rdma", args);
    cr_assert_eq(rc, 0, "install: %s", cm_strerror(rc));
    cr_assert_eq(xfer_engine_install(p->cli, "rdma", args), 0);
    p->remote = aligned_alloc(4096, len);
    p->local = aligned_alloc(4096, len);
    memset(p->remote, 0, len);
    for (size_t i = 0; i < len; i++)
        p->local[i] = (uint8_t)(i * 7 + 3);
    cr_assert_eq(xfer_engine_register(p->srv, p->remote, len, "cpu:0", XFER_REG_REMOTE), 0);
    cr_assert_eq(xfer_engine_register(p->cli, p->local, len, "cpu:0", 0), 0);
    char addr[128];
    cr_assert_gt(xfer_engine_local_addr(p->srv, addr, sizeof(addr)), 0);
    rc = xfer_segment_open_addr(p->cli, addr, &p->seg);
    cr_assert_eq(rc, 0, "open: %s", cm_strerror(rc));
    cr_assert_str_eq(xfer_segment_transport(p->seg), "rdma");
}

static void pair_close(struct pair *p) {
    xfer_segment_close(p->seg);
    xfer_engine_unregister(p->cli, p->local);
    xfer_engine_unregister(p->srv, p->remote);
    xfer_engine_destroy(p->cli);
    xfer_engine_destroy(p->srv);
    free(p->remote);
    free(p->local);
}

/* Runs one request; returns the task status. */
static int run1(struct pair *p, enum xfer_op op, size_t off, size_t len, int *err) {
    struct xfer_request r = {op, p->local + off, p->seg, (uint64_t)(uintptr_t)(p->remote + off),
                             len};
    struct xfer_batch *b;
    struct xfer_task_status st;
    cr_assert_eq(xfer_batch_alloc(p->cli, 1, &b), 0);
    cr_assert_eq(xfer_batch_submit(b, &r, 1, NULL), 0);
    xfer_batch_wait(b, 10000, NULL, 0, NULL);
    xfer_batch_status(b, 0, &st);
    xfer_batch_free(b);
    if (err)
        *err = st.error;
    return st.status;
}

static void setup(void) {
    cm_log_set_callback(log_cb, NULL);
    cm_log_set_level(CM_LOG_VERBOSE);
}

TestSuite(rdma_mock, .init = setup, .timeout = 30);

/* ---- tests ---- */

Test(rdma_mock, no_devices_is_reported) {
    struct xfer_engine *eng;
    mock.ndev = 0;
    cr_assert_eq(xfer_engine_create(NULL, &eng), 0);
    int rc = xfer_engine_install(eng, "rdma", NULL);
    cr_assert_eq(rc, -CM_ENO_DEVICE, "install: %s", cm_strerror(rc));
    cr_assert_not_null(strstr(mock.warn, "no RDMA devices"), "log: %s", mock.warn);
    cr_assert_null(xfer__engine_transport(eng, "rdma"));
    xfer_engine_destroy(eng);
}

Test(rdma_mock, discovery_and_registration) {
    struct xfer_engine *eng;
    static uint8_t buf[1 << 16];
    mock.ndev = 3;
    cr_assert_eq(xfer_engine_create(NULL, &eng), 0);
    cr_assert_eq(xfer_engine_install(eng, "rdma", "devices=mock0;mock2"), 0);
    struct xfer_vrb *v = vrb_of(eng);
    cr_assert_eq(v->n_ctx, 2);
    cr_assert_str_eq(v->ctx[0].name, "mock0");
    cr_assert_str_eq(v->ctx[1].name, "mock2");
    cr_assert_eq(v->ctx[1].lid, 3);
    cr_assert_eq(v->slice_size, XFER_VRB_SLICE_DEFAULT);
    cr_assert(atomic_load(&v->ctx[0].active));
    cr_assert_eq(xfer_engine_register(eng, buf, sizeof(buf), "cpu:0", XFER_REG_REMOTE), 0);
    cr_assert_eq(mock.n_reg, 2, "one MR per device");
    cr_assert(mock.last_access & IBV_ACCESS_REMOTE_WRITE);
    cr_assert(mock.last_access & IBV_ACCESS_REMOTE_READ);
    cr_assert_eq(xfer_engine_unregister(eng, buf), 0);
    cr_assert_eq(mock.n_dereg, 2);
    xfer_engine_destroy(eng);
}

Test(rdma_mock, qp_states_slicing_and_data) {
    struct pair p;
    int err;
    pair_open(&p, 1, "slice_size=65536", 4u << 20);
    size_t len = (1u << 20) + 5;
    cr_assert_eq(run1(&p, XFER_OP_WRITE, 4096, len, &err), XFER_STATUS_COMPLETED, "%d", err);
    cr_assert_eq(memcmp(p.remote + 4096, p.local + 4096, len), 0);
    cr_assert_eq(mock.n_log, 17, "1 MiB + 5 B in 64 KiB slices = 17 WRs, got %d", mock.n_log);
    for (int i = 0; i < 17; i++) {
        cr_assert_eq(mock.log[i].opcode, IBV_WR_RDMA_WRITE);
        cr_assert_eq(mock.log[i].len, i < 16 ? 65536u : 5u);
        cr_assert_eq(mock.log[i].remote, (uint64_t)(uintptr_t)p.remote + 4096 + 65536ull * i);
        cr_assert_eq(mock.log[i].local, (uint64_t)(uintptr_t)p.local + 4096 + 65536ull * i);
    }
    /* Two QPs (active + passive), each INIT -> RTR -> RTS. */
    cr_assert_eq(mock.n_qp, 2);
    for (int q = 0; q < 2; q++) {
        cr_assert_eq(mock.qps[q]->n_states, 3);
        cr_assert_eq(mock.qps[q]->states[0], IBV_QPS_INIT);
        cr_assert_eq(mock.qps[q]->states[1], IBV_QPS_RTR);
        cr_assert_eq(mock.qps[q]->states[2], IBV_QPS_RTS);
    }
    /* Read back into a cleared local range: RDMA READ slices. */
    memset(p.local, 0, 8u << 10);
    memset(p.remote, 0xab, 8u << 10);
    mock.n_log = 0;
    cr_assert_eq(run1(&p, XFER_OP_READ, 0, 8u << 10, &err), XFER_STATUS_COMPLETED);
    cr_assert_eq(mock.n_log, 1);
    cr_assert_eq(mock.log[0].opcode, IBV_WR_RDMA_READ);
    for (int i = 0; i < 8192; i++)
        cr_assert_eq(p.local[i], 0xab);
    /* A large transfer (more slices than send-queue slots) still completes: backpressure. */
    mock.n_log = 0;
    cr_assert_eq(run1(&p, XFER_OP_WRITE, 0, 4u << 20, &err), XFER_STATUS_COMPLETED);
    cr_assert_eq(mock.n_log, 64);
    cr_assert_eq(mock.n_qp, 2, "endpoint reused");
    pair_close(&p);
}

Test(rdma_mock, warmup_connects_every_device) {
    struct pair p;
    int err;
    pair_open(&p, 2, NULL, 1u << 20);
    struct xfer_vrb *v = vrb_of(p.cli);
    cr_assert_eq(mock.n_qp, 0, "nothing connected before first use");
    cr_assert_eq(xfer_segment_warmup(p.seg), 0);
    cr_assert_eq(mock.n_qp, 4, "one active + one passive QP per device");
    cr_assert_eq(atomic_load(&v->st.eps_created), 2);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(mock.qps[i]->qp.state, IBV_QPS_RTS);
    cr_assert_eq(run1(&p, XFER_OP_WRITE, 0, 4096, &err), XFER_STATUS_COMPLETED);
    cr_assert_eq(run1(&p, XFER_OP_WRITE, 0, 4096, &err), XFER_STATUS_COMPLETED);
    cr_assert_eq(mock.n_qp, 4, "transfers reuse the warmed-up endpoints");
    pair_close(&p);
}

Test(rdma_mock, qp_fatal_breaks_only_that_endpoint) {
    struct pair p;
    int err;
    pair_open(&p, 1, NULL, 1u << 20);
    struct xfer_vrb *v = vrb_of(p.cli);
    cr_assert_eq(run1(&p, XFER_OP_WRITE, 0, 4096, &err), XFER_STATUS_COMPLETED);
    struct ibv_async_event ev = {.event_type = IBV_EVENT_QP_FATAL};
    ev.element.qp = &mock.qps[0]->qp; /* the client's active QP */
    xfer_vrb__handle_async(&v->ctx[0], &ev);
    cr_assert(atomic_load(&v->ctx[0].active), "the device stays active");
    cr_assert(mock.qps[0]->destroyed, "the idle broken endpoint is gone");
    cr_assert_eq(v->ctx[0].n_eps, 0, "it left the cache");
    cr_assert_eq(run1(&p, XFER_OP_WRITE, 0, 4096, &err), XFER_STATUS_COMPLETED);
    cr_assert_eq(atomic_load(&v->st.eps_created), 2, "a new endpoint replaced the broken one");
    pair_close(&p);
}

Test(rdma_mock, error_completion_fails_over_or_fails) {
    struct pair p;
    int err;
    pair_open(&p, 2, NULL, 1u << 20);
    struct xfer_vrb *v = vrb_of(p.cli);
    /* Every WR posted from device 0 completes with an error: tasks fail over to device 1. */
    mock.fail_dev = 0;
    for (int i = 0; i < 4; i++)
        cr_assert_eq(run1(&p, XFER_OP_WRITE, 0, 256u << 10, &err), XFER_STATUS_COMPLETED, "%d",
                     err);
    cr_assert_gt(atomic_load(&v->st.slices_failed_over), 0);
    cr_assert_eq(memcmp(p.remote, p.local, 256u << 10), 0);
    /* Both devices fail: the task fails. */
    mock.fail_dev = -2;
    pair_close(&p);
}

Test(rdma_mock, error_completion_single_device_fails) {
    struct pair p;
    int err;
    pair_open(&p, 1, NULL, 1u << 20);
    mock.fail_dev = 0;
    cr_assert_eq(run1(&p, XFER_OP_WRITE, 0, 128u << 10, &err), XFER_STATUS_FAILED);
    cr_assert_eq(err, -CM_ETRANSFER_FAIL);
    mock.fail_dev = -1;
    /* The broken endpoint is replaced by a new one. */
    cr_assert_eq(run1(&p, XFER_OP_WRITE, 0, 128u << 10, &err), XFER_STATUS_COMPLETED);
    pair_close(&p);
}

Test(rdma_mock, endpoint_cache_eviction) {
    enum { N = 3 };
    struct pair p[N];
    int err;
    mock.ndev = 1;
    /* Client engine shared: open N servers, one segment each, with max_eps=2. */
    struct xfer_engine_opts o = {.timeout_ms = 3000};
    struct xfer_engine *cli;
    static uint8_t local[65536];
    cr_assert_eq(xfer_engine_create(&o, &cli), 0);
    cr_assert_eq(xfer_engine_install(cli, "rdma", "max_eps=2"), 0);
    cr_assert_eq(xfer_engine_register(cli, local, sizeof(local), "cpu:0", 0), 0);
    for (int i = 0; i < N; i++) {
        char addr[128];
        cr_assert_eq(xfer_engine_create(&o, &p[i].srv), 0);
        cr_assert_eq(xfer_engine_install(p[i].srv, "rdma", NULL), 0);
        p[i].remote = aligned_alloc(4096, 65536);
        cr_assert_eq(xfer_engine_register(p[i].srv, p[i].remote, 65536, "cpu:0", XFER_REG_REMOTE),
                     0);
        xfer_engine_local_addr(p[i].srv, addr, sizeof(addr));
        cr_assert_eq(xfer_segment_open_addr(cli, addr, &p[i].seg), 0);
        p[i].cli = cli;
        p[i].local = local;
        cr_assert_eq(run1(&p[i], XFER_OP_WRITE, 0, 4096, &err), XFER_STATUS_COMPLETED);
    }
    struct xfer_vrb *v = vrb_of(cli);
    cr_assert_eq(atomic_load(&v->st.eps_created), 3);
    cr_assert_eq(atomic_load(&v->st.eps_evicted), 1);
    cr_assert_eq(v->ctx[0].n_eps, 2);
    /* The evicted (first) endpoint's QP was destroyed; going back reconnects. */
    cr_assert(mock.qps[0]->destroyed);
    cr_assert_eq(run1(&p[0], XFER_OP_WRITE, 0, 4096, &err), XFER_STATUS_COMPLETED);
    cr_assert_eq(atomic_load(&v->st.eps_created), 4);
    cr_assert_eq(atomic_load(&v->st.eps_evicted), 2);
    for (int i = 0; i < N; i++) {
        xfer_segment_close(p[i].seg);
        xfer_engine_unregister(p[i].srv, p[i].remote);
        xfer_engine_destroy(p[i].srv);
        free(p[i].remote);
    }
    xfer_engine_unregister(cli, local);
    xfer_engine_destroy(cli);
}

/* Submits one write and waits until its WRs are posted (held by the mock). */
static struct xfer_batch *submit_held(struct pair *p, size_t len) {
    struct xfer_request r = {XFER_OP_WRITE, p->local, p->seg, (uint64_t)(uintptr_t)p->remote, len};
    struct xfer_batch *b;
    cr_assert_eq(xfer_batch_alloc(p->cli, 1, &b), 0);
    cr_assert_eq(xfer_batch_submit(b, &r, 1, NULL), 0);
    for (int i = 0; i < 2000 && mock.n_held == 0; i++)
        cm_sleep_ms(1);
    cr_assert_gt(mock.n_held, 0);
    return b;
}

Test(rdma_mock, port_error_fails_over) {
    struct pair p;
    struct xfer_task_status st;
    pair_open(&p, 2, NULL, 1u << 20);
    struct xfer_vrb *v = vrb_of(p.cli);
    v->rr = 0; /* next task starts on device 0 */
    mock.hold_dev = 0;
    struct xfer_batch *b = submit_held(&p, 512u << 10);
    cr_assert_eq(mock.held[0].dev, 0);
    mock_event(&v->ctx[0], IBV_EVENT_PORT_ERR);
    int rc = xfer_batch_wait(b, 5000, NULL, 0, NULL);
    cr_assert_eq(rc, 0, "wait: %s", cm_strerror(rc));
    xfer_batch_status(b, 0, &st);
    cr_assert_eq(st.status, XFER_STATUS_COMPLETED);
    cr_assert_eq(memcmp(p.remote, p.local, 512u << 10), 0);
    cr_assert(!atomic_load(&v->ctx[0].active), "device 0 inactive after port error");
    cr_assert_eq(v->ctx[0].n_eps, 0, "its endpoints are disconnected");
    cr_assert_gt(atomic_load(&v->st.slices_failed_over), 0);
    mock_flush_held(0); /* the dead QP's WRs flush; they were already accounted */
    xfer_batch_free(b);
    /* New work avoids the inactive device; PORT_ACTIVE brings it back. */
    mock.n_log = 0;
    int err;
    cr_assert_eq(run1(&p, XFER_OP_WRITE, 0, 4096, &err), XFER_STATUS_COMPLETED);
    cr_assert_eq(mock.log[0].dev, 1);
    mock_event(&v->ctx[0], IBV_EVENT_PORT_ACTIVE);
    for (int i = 0; i < 2000 && !atomic_load(&v->ctx[0].active); i++)
        cm_sleep_ms(1);
    cr_assert(atomic_load(&v->ctx[0].active));
    pair_close(&p);
}

Test(rdma_mock, device_fatal_fails_tasks) {
    struct pair p;
    struct xfer_task_status st;
    pair_open(&p, 1, NULL, 1u << 20);
    struct xfer_vrb *v = vrb_of(p.cli);
    mock.hold_dev = 0;
    struct xfer_batch *b = submit_held(&p, 256u << 10);
    uint64_t t0 = cm_mono_ms();
    mock_event(&v->ctx[0], IBV_EVENT_DEVICE_FATAL);
    int rc = xfer_batch_wait(b, 5000, NULL, 0, NULL);
    cr_assert_eq(rc, -CM_ETRANSFER_FAIL, "wait: %s", cm_strerror(rc));
    cr_assert_lt(cm_mono_ms() - t0, 2000, "failed promptly, not by timeout");
    xfer_batch_status(b, 0, &st);
    cr_assert_eq(st.status, XFER_STATUS_FAILED);
    cr_assert(!atomic_load(&v->ctx[0].active));
    mock_flush_held(0);
    xfer_batch_free(b);
    /* No active device left: new tasks fail at once. */
    int err;
    cr_assert_eq(run1(&p, XFER_OP_WRITE, 0, 4096, &err), XFER_STATUS_FAILED);
    cr_assert_eq(err, -CM_ENO_DEVICE);
    pair_close(&p);
}
