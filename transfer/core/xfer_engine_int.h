/* SPDX-License-Identifier: Apache-2.0 */
/* Engine and batch structures private to transfer/core/ (transports use xfer_int.h only). */
#ifndef CRESCENT_TRANSFER_CORE_XFER_ENGINE_INT_H
#define CRESCENT_TRANSFER_CORE_XFER_ENGINE_INT_H

#include "transfer/xfer_int.h"

#include <pthread.h>
#include <stdatomic.h>

struct xfer_listener;

/* A memfd-backed allocation from xfer_engine_alloc_shared. */
struct xfer_shared {
    void *addr;
    size_t len;
    int fd;
    int borrowed; /* xfer_engine_adopt_shared: the mapping is the caller's */
    struct xfer_shared *next;
};

struct xfer_engine {
    char name[XFER_LNAME_MAX];
    char addr[XFER_HOSTPORT_MAX]; /* advertised listener "host:port", "" when none */
    uint32_t timeout_ms;
    uint32_t handshake_ms; /* xfer_segment_open_addr's fetch bound */
    uint8_t host_id[XFER_HOST_ID_LEN];
    uint64_t instance;

    pthread_mutex_t lock; /* recursive: transports, segments, shared allocations */
    struct xfer_transport *tp[XFER_MAX_TRANSPORTS];
    struct xfer_segment *segs;
    struct xfer_shared *shared;

    pthread_rwlock_t mr_lock; /* writer-preferring; guards mrs */
    struct xfer_mr **mrs;     /* sorted by addr */
    size_t n_mr, cap_mr;
    uint32_t next_mr_id;

    struct xfer_listener *lis;
};

struct xfer_batch {
    struct xfer_engine *eng;
    size_t cap;
    size_t n;      /* tasks submitted (under lock) */
    size_t n_done; /* tasks terminal (under lock) */
    pthread_mutex_t lock;
    pthread_cond_t cond;        /* signalled when a task becomes terminal */
    atomic_long refs;           /* 1 for the owner + 1 per task held by a transport */
    atomic_uint progress_slots; /* engine slots of dispatched-to transports with a progress op */
    struct xfer_task tasks[];
};

/* Listener (xfer_listen.c). */
int xfer__listener_start(struct xfer_engine *eng, const char *listen, int later);
int xfer__listener_accept_start(struct xfer_engine *eng);
void xfer__listener_stop(struct xfer_engine *eng);

/*
 * Inline progress (xfer_engine.c): calls the progress op of the installed transports whose slot
 * bit is set in slots. Returns the sum of their outstanding operations (> 0: call again), 0 when
 * none, or -EBUSY when another thread is doing it right now (one inline reaper at a time).
 * Never blocks. Thread-safe.
 */
int xfer__engine_progress(struct xfer_engine *eng, unsigned slots);

/* True when tp implements the optional progress op. */
int xfer__has_progress(const struct xfer_transport *tp);

/* Segment reference counting (xfer_engine.c). */
void xfer__segment_unref(struct xfer_segment *seg);

#endif
