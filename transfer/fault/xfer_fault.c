/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault transport: a decorator over another transport (the seed's FaultProxyTransport), for
 * tests of retry and failover paths. Installed as "fault" with
 *   inner=NAME          transport to wrap (default tcp; installed with inner_args when absent)
 *   submit_fail_rate=F  probability in [0,1] that a task fails at submission
 *   fail_after=N        after N submit calls every later task fails (0 = never)
 *   corrupt_rate=F      probability that a task the inner transport COMPLETED reads FAILED
 *   delay_us=N          sleep before every submit
 *   install_fail=1      the install itself fails (-CM_EUNAVAILABLE_IN_CURRENT_STATUS)
 *   register_fail=1     every memory registration fails (-CM_EUNAVAILABLE_IN_CURRENT_STATUS);
 *                       xfer__fault_bad_unregisters counts unregister calls for memory this
 *                       transport never registered (a core rollback bug)
 *   seed=N              random seed (default 1), for reproducible runs
 * The engine routes every segment that would use the inner transport through this one.
 */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct fault_ctx {
    struct xfer_transport *inner;
    double submit_fail_rate;
    double corrupt_rate;
    uint64_t fail_after;
    uint64_t delay_us;
    uint64_t register_fail;
    atomic_ulong bad_unregisters; /* unregister_mem for an MR we did not register */
    pthread_mutex_t lock;         /* rng, submits */
    uint64_t rng;
    uint64_t submits;
};

/* xorshift64* in [0, 1). */
static double fault_rand(struct fault_ctx *c) {
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (double)((c->rng * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

static int fault_install(struct xfer_transport *tp, const char *args) {
    char inner[XFER_NAME_MAX] = "tcp", iargs[256] = "";
    uint64_t fail = 0, seed = 1;
    struct fault_ctx *c = cm_try_calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    if (xfer__arg_str(args, "inner", inner, sizeof(inner)) < 0 ||
        xfer__arg_str(args, "inner_args", iargs, sizeof(iargs)) < 0 ||
        xfer__arg_double(args, "submit_fail_rate", &c->submit_fail_rate) < 0 ||
        xfer__arg_double(args, "corrupt_rate", &c->corrupt_rate) < 0 ||
        xfer__arg_u64(args, "fail_after", &c->fail_after) < 0 ||
        xfer__arg_u64(args, "delay_us", &c->delay_us) < 0 ||
        xfer__arg_u64(args, "install_fail", &fail) < 0 || xfer__arg_u64(args, "seed", &seed) < 0 ||
        xfer__arg_u64(args, "register_fail", &c->register_fail) < 0 ||
        strcmp(inner, "fault") == 0) {
        cm_free(c);
        return -EINVAL;
    }
    if (fail) {
        cm_free(c);
        return -CM_EUNAVAILABLE_IN_CURRENT_STATUS;
    }
    int rc = xfer__engine_ensure(tp->eng, inner, iargs[0] ? iargs : NULL, &c->inner);
    if (rc < 0) {
        cm_free(c);
        return rc;
    }
    c->rng = seed ? seed : 1;
    pthread_mutex_init(&c->lock, NULL);
    tp->decorates = c->inner;
    snprintf(tp->wire_name, sizeof(tp->wire_name), "%s", c->inner->wire_name);
    tp->ctx = c;
    return 0;
}

static void fault_uninstall(struct xfer_transport *tp) {
    struct fault_ctx *c = tp->ctx;
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    cm_free(c);
    tp->ctx = NULL;
}

static int fault_reachable(struct xfer_transport *tp, const struct xfer_desc *d, int i) {
    struct fault_ctx *c = tp->ctx;
    return c->inner->ops->reachable ? c->inner->ops->reachable(c->inner, d, i) : 0;
}

static int fault_open_segment(struct xfer_transport *tp, struct xfer_segment *seg,
                              const struct xfer_desc *d, int i, void **seg_ctx) {
    struct fault_ctx *c = tp->ctx;
    return c->inner->ops->open_segment(c->inner, seg, d, i, seg_ctx);
}

static void fault_close_segment(struct xfer_transport *tp, void *seg_ctx) {
    struct fault_ctx *c = tp->ctx;
    c->inner->ops->close_segment(c->inner, seg_ctx);
}

static int fault_warmup(struct xfer_transport *tp, void *seg_ctx) {
    struct fault_ctx *c = tp->ctx;
    return c->inner->ops->warmup_segment ? c->inner->ops->warmup_segment(c->inner, seg_ctx)
                                         : -ENOSYS;
}

/* Marks the MR as ours (or fails it with register_fail=1); no key. */
static int fault_register_mem(struct xfer_transport *tp, struct xfer_mr *mr, uint8_t *key,
                              size_t *key_len) {
    struct fault_ctx *c = tp->ctx;
    (void)key;
    *key_len = 0;
    if (c->register_fail)
        return -CM_EUNAVAILABLE_IN_CURRENT_STATUS;
    mr->tp_priv[tp->slot] = c; /* non-NULL: registered here */
    return 0;
}

static int fault_unregister_mem(struct xfer_transport *tp, struct xfer_mr *mr) {
    struct fault_ctx *c = tp->ctx;
    if (mr->tp_priv[tp->slot] != c)
        atomic_fetch_add(&c->bad_unregisters, 1);
    mr->tp_priv[tp->slot] = NULL;
    return 0;
}

/* Unregister calls for memory the fault transport never registered; see xfer_int.h. */
uint64_t xfer__fault_bad_unregisters(struct xfer_transport *tp) {
    struct fault_ctx *c = tp && tp->ops == &xfer_fault_ops ? tp->ctx : NULL;
    return c ? atomic_load(&c->bad_unregisters) : 0;
}

static int fault_submit(struct xfer_transport *tp, struct xfer_task **tasks, size_t n) {
    struct fault_ctx *c = tp->ctx;
    if (c->delay_us)
        usleep((useconds_t)c->delay_us);
    struct xfer_task *pass[256];
    size_t np = 0;
    pthread_mutex_lock(&c->lock);
    int dead = c->fail_after && c->submits >= c->fail_after;
    c->submits++;
    for (size_t i = 0; i < n; i++) {
        struct xfer_task *t = tasks[i];
        if (dead || (c->submit_fail_rate > 0 && fault_rand(c) < c->submit_fail_rate)) {
            t->tp_u64[0] = 1; /* failed here */
            continue;
        }
        t->tp_u64[0] = 0;
        if (c->corrupt_rate > 0 && fault_rand(c) < c->corrupt_rate)
            t->fault_flags |= XFER_FAULT_F_CORRUPT;
    }
    pthread_mutex_unlock(&c->lock);
    for (size_t i = 0; i < n; i++) {
        struct xfer_task *t = tasks[i];
        if (t->tp_u64[0]) {
            xfer__task_done(t, -EIO, 0);
            continue;
        }
        pass[np++] = t;
        if (np == sizeof(pass) / sizeof(pass[0]) || i == n - 1) {
            int rc = c->inner->ops->submit(c->inner, pass, np);
            for (size_t k = 0; rc < 0 && k < np; k++)
                xfer__task_done(pass[k], rc, 0);
            np = 0;
        }
    }
    if (np) {
        int rc = c->inner->ops->submit(c->inner, pass, np);
        for (size_t k = 0; rc < 0 && k < np; k++)
            xfer__task_done(pass[k], rc, 0);
    }
    return 0;
}

const struct xfer_transport_ops xfer_fault_ops = {
    .size = sizeof(struct xfer_transport_ops),
    .name = "fault",
    .install = fault_install,
    .uninstall = fault_uninstall,
    .register_mem = fault_register_mem,
    .unregister_mem = fault_unregister_mem,
    .local_info = xfer__no_local_info,
    .reachable = fault_reachable,
    .open_segment = fault_open_segment,
    .close_segment = fault_close_segment,
    .submit = fault_submit,
    .warmup_segment = fault_warmup,
};
