// SPDX-License-Identifier: Apache-2.0
/*
 * fabric transport: configuration, provider discovery (fi_getinfo), per-NIC domain set-up and
 * tear-down, install/uninstall, and the ops table the registry lists as "fabric".
 */
#include "common/fmacros.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "transfer/core/xfer_pinned.h"
#include "transfer/efa/xfer_efa.h"

#define XFER_EFA_FI_VERSION FI_VERSION(1, 14)

/*
 * Fills cfg from the install arguments, then the environment, then defaults:
 * provider= (FI_PROVIDER, "tcp;ofi_rxm"), node=, domains=, cq_size=, stripe_threshold=
 * (MC_EFA_STRIPING_THRESHOLD, 2 MiB), inline_poll_us= (MC_EFA_INLINE_POLL_US, 50),
 * completion=delivery|provider (delivery, except provider for efa), busy_poll=0|1
 * (MC_EFA_BUSY_POLL; 1 for efa), tx_size= (transmit queue depth hint). Returns 0 or -EINVAL
 * for a malformed value.
 */
int xfer_efa__cfg_parse(const char *args, struct xfer_efa_cfg *cfg) {
    uint64_t v = 0;
    int rc;

    memset(cfg, 0, sizeof(*cfg));
    rc = xfer__arg_str(args, "provider", cfg->provider, sizeof(cfg->provider));
    if (rc < 0)
        return -EINVAL;
    if (rc == 0) {
        const char *env = getenv("FI_PROVIDER");
        snprintf(cfg->provider, sizeof(cfg->provider), "%s",
                 env && *env ? env : XFER_EFA_DEFAULT_PROVIDER);
    }
    if (xfer__arg_str(args, "node", cfg->node, sizeof(cfg->node)) < 0)
        return -EINVAL;
    cfg->stripe_threshold = xfer__env_u64("MC_EFA_STRIPING_THRESHOLD", XFER_EFA_STRIPE_DEFAULT);
    if ((rc = xfer__arg_u64(args, "stripe_threshold", &v)) < 0)
        return -EINVAL;
    if (rc)
        cfg->stripe_threshold = v;
    if (cfg->stripe_threshold == 0)
        cfg->stripe_threshold = XFER_EFA_STRIPE_DEFAULT;
    if ((rc = xfer__arg_u64(args, "domains", &v)) < 0 || (rc && v > XFER_EFA_MAX_DOMAINS))
        return -EINVAL;
    cfg->domains = rc ? (unsigned)v : 0;
    cfg->cq_size = 4096;
    if ((rc = xfer__arg_u64(args, "cq_size", &v)) < 0 || (rc && (v < 64 || v > (1u << 20))))
        return -EINVAL;
    if (rc)
        cfg->cq_size = v;
    /* Socket-based providers report transmit completion when bytes reach the socket buffer, so
     * they need FI_DELIVERY_COMPLETE for COMPLETED to mean "in the peer's memory". EFA
     * completes RMA writes only after the remote NIC acknowledged them, so its default stays
     * (FI_DELIVERY_COMPLETE would switch it to a slower emulated protocol). */
    char comp[16] = "";
    if (xfer__arg_str(args, "completion", comp, sizeof(comp)) < 0)
        return -EINVAL;
    if (!comp[0])
        cfg->delivery_complete = strncmp(cfg->provider, "efa", 3) != 0;
    else if (!strcmp(comp, "delivery") || !strcmp(comp, "provider"))
        cfg->delivery_complete = comp[0] == 'd';
    else
        return -EINVAL;
    /* Spinning progress threads pay off with many cores and a NIC (efa); on socket providers
     * they steal the CPU the kernel and the peer need, so those sleep on the CQ descriptor. */
    v = xfer__env_u64("MC_EFA_BUSY_POLL", strncmp(cfg->provider, "efa", 3) == 0);
    if (xfer__arg_u64(args, "busy_poll", &v) < 0)
        return -EINVAL;
    cfg->busy_poll = v != 0;
    v = 0;
    if (xfer__arg_u64(args, "tx_size", &v) < 0 || v > (1u << 20))
        return -EINVAL;
    cfg->tx_size = (size_t)v;
    v = xfer__env_u64("MC_EFA_INLINE_POLL_US", 50);
    if (xfer__arg_u64(args, "inline_poll_us", &v) < 0 || v > 1000000)
        return -EINVAL;
    cfg->inline_poll_ns = v * 1000;
    return 0;
}

/* Socket-based providers need a source address; EFA and friends pick their NICs themselves. */
static int xfer_efa_wants_node(const char *prov) {
    return strstr(prov, "tcp") || strstr(prov, "sockets") || strstr(prov, "udp");
}

static void xfer_efa_default_node(struct xfer_efa *efa, char *node, size_t len) {
    char hp[XFER_HOSTPORT_MAX], host[XFER_HOSTPORT_MAX];
    uint16_t port;

    snprintf(node, len, "127.0.0.1");
    if (xfer_engine_local_addr(efa->tp->eng, hp, sizeof(hp)) < 0 ||
        xfer__split_hostport(hp, host, sizeof(host), &port) < 0)
        return;
    if (strcmp(host, "0.0.0.0") != 0 && strcmp(host, "::") != 0 && host[0])
        snprintf(node, len, "%s", host);
}

static int xfer_efa_getinfo(struct xfer_efa *efa, int want_hmem) {
    struct fi_info *hints = fi_allocinfo();
    char node[XFER_HOSTPORT_MAX];
    int rc;

    if (!hints)
        return -ENOMEM;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_RMA | (want_hmem ? FI_HMEM : 0);
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                  FI_MR_ENDPOINT | (want_hmem ? FI_MR_HMEM : 0);
    hints->domain_attr->threading = FI_THREAD_SAFE;
    if (efa->cfg.tx_size)
        hints->tx_attr->size = efa->cfg.tx_size;
    /* COMPLETED must mean "in the peer's memory": a later read through another domain (another
     * connection) or a reader told by the master must see the bytes. */
    if (efa->cfg.delivery_complete)
        hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    hints->fabric_attr->prov_name = strdup(efa->cfg.provider);
    if (efa->cfg.node[0])
        snprintf(node, sizeof(node), "%s", efa->cfg.node);
    else if (xfer_efa_wants_node(efa->cfg.provider))
        xfer_efa_default_node(efa, node, sizeof(node));
    else
        node[0] = 0;
    rc = fi_getinfo(XFER_EFA_FI_VERSION, node[0] ? node : NULL, NULL, node[0] ? FI_SOURCE : 0,
                    hints, &efa->infos);
    fi_freeinfo(hints);
    return rc;
}

static int xfer_efa_domain_open(struct xfer_efa *efa, int index, const struct fi_info *info) {
    struct xfer_efa_domain *d = &efa->dom[index];
    int rc;

    d->efa = efa;
    d->index = index;
    pthread_mutex_init(&d->ep_lock, NULL);
    pthread_mutex_init(&d->av_lock, NULL);
    pthread_mutex_init(&d->op_lock, NULL);
    d->inflight.next = d->inflight.prev = &d->inflight;
    d->info = fi_dupinfo(info);
    if (!d->info)
        return -ENOMEM;
    d->mr_mode = info->domain_attr->mr_mode;
    d->hmem = (info->caps & FI_HMEM) != 0;
    d->max_msg = info->ep_attr->max_msg_size ? info->ep_attr->max_msg_size : SIZE_MAX;
    if ((rc = fi_fabric(d->info->fabric_attr, &d->fabric, NULL)))
        return rc;
    if ((rc = fi_domain(d->fabric, d->info, &d->domain, NULL)))
        return rc;
    if ((rc = xfer_efa__av_open(d)) || (rc = xfer_efa__cq_open(d)) || (rc = xfer_efa__ep_open(d)))
        return rc;
    rc = xfer_efa__mr_reg(d, d->scratch, sizeof(d->scratch), FI_READ | FI_WRITE, "cpu:0",
                          &d->scratch_mr);
    if (rc)
        return rc;
    d->scratch_desc = fi_mr_desc(d->scratch_mr);
    return xfer_efa__progress_start(d);
}

/*
 * Closes one domain in dependency order: progress thread, endpoint (the provider forgets every
 * op), the op pool, scratch MR, CQ, AV, domain, fabric. Safe on a partially opened domain.
 * Not thread-safe; nothing may use the domain any more.
 */
void xfer_efa__domain_close(struct xfer_efa_domain *d) {
    if (!d->efa)
        return;
    xfer_efa__progress_stop(d);
    if (d->ep)
        fi_close(&d->ep->fid);
    d->ep = NULL;
    xfer_efa__ops_release(d);
    if (d->scratch_mr)
        fi_close(&d->scratch_mr->fid);
    if (d->cq)
        fi_close(&d->cq->fid);
    xfer_efa__av_close(d);
    if (d->domain)
        fi_close(&d->domain->fid);
    if (d->fabric)
        fi_close(&d->fabric->fid);
    fi_freeinfo(d->info);
    pthread_mutex_destroy(&d->ep_lock);
    pthread_mutex_destroy(&d->av_lock);
    pthread_mutex_destroy(&d->op_lock);
    memset(d, 0, sizeof(*d));
}

static void xfer_efa_uninstall(struct xfer_transport *tp) {
    struct xfer_efa *efa = tp->ctx;
    if (!efa)
        return;
    for (int i = 0; i < efa->n_dom; i++)
        xfer_efa__domain_close(&efa->dom[i]);
    fi_freeinfo(efa->infos);
    cm_free(efa);
    tp->ctx = NULL;
}

/* Picks the distinct (fabric, domain) entries of the fi_getinfo list, at most max of them. */
static int xfer_efa_pick(struct fi_info *infos, const struct fi_info **out, int max) {
    int n = 0;
    for (struct fi_info *i = infos; i && n < max; i = i->next) {
        int dup = 0;
        for (int j = 0; j < n && !dup; j++)
            dup = !strcmp(out[j]->domain_attr->name, i->domain_attr->name) &&
                  !strcmp(out[j]->fabric_attr->name, i->fabric_attr->name);
        if (!dup)
            out[n++] = i;
    }
    return n;
}

static int xfer_efa_install(struct xfer_transport *tp, const char *args) {
    const struct fi_info *pick[XFER_EFA_MAX_DOMAINS];
    struct xfer_efa *efa = cm_try_calloc(1, sizeof(*efa));
    int rc, found, want;

    if (!efa)
        return -ENOMEM;
    efa->tp = tp;
    tp->ctx = efa;
    atomic_init(&efa->next_key, 1);
    if ((rc = xfer_efa__cfg_parse(args, &efa->cfg)))
        goto fail;
    rc = -FI_ENODATA;
    if (xfer__cuda_init() > 0)
        rc = xfer_efa_getinfo(efa, 1);
    if (rc)
        rc = xfer_efa_getinfo(efa, 0);
    if (rc) {
        cm_log(CM_LOG_WARNING, "xfer", "fabric: no libfabric provider \"%s\" with FI_RMA: %s",
               efa->cfg.provider, fi_strerror(-rc));
        rc = -CM_ENO_DEVICE;
        goto fail;
    }
    found = xfer_efa_pick(efa->infos, pick, XFER_EFA_MAX_DOMAINS);
    want = efa->cfg.domains ? (int)efa->cfg.domains : found;
    for (int i = 0; i < want; i++) {
        if ((rc = xfer_efa_domain_open(efa, i, pick[i % found]))) {
            efa->n_dom = i + 1;
            cm_log(CM_LOG_WARNING, "xfer", "fabric: opening domain %s failed: %s",
                   pick[i % found]->domain_attr->name, fi_strerror(rc < 0 ? -rc : rc));
            rc = rc == -FI_ENOMEM ? -ENOMEM : -CM_ENO_DEVICE;
            goto fail;
        }
    }
    efa->n_dom = want;
    cm_log(CM_LOG_NOTICE, "xfer",
           "fabric: provider %s, %d domain(s) (first %s), stripe >%llu B, %s, progress %s, "
           "mr_mode 0x%llx",
           pick[0]->fabric_attr->prov_name, want, pick[0]->domain_attr->name,
           (unsigned long long)efa->cfg.stripe_threshold,
           efa->cfg.delivery_complete ? "delivery-complete" : "provider completion",
           efa->cfg.busy_poll         ? "busy"
           : efa->dom[0].wait_fd >= 0 ? "fd wait"
                                      : "poll+sleep",
           (unsigned long long)efa->dom[0].mr_mode);
    return 0;
fail:
    xfer_efa_uninstall(tp);
    return rc;
}

/* The fabric transport's ops table, listed in transfer/core/xfer_registry.c. */
const struct xfer_transport_ops xfer_fabric_ops = {
    .size = sizeof(struct xfer_transport_ops),
    .name = "fabric",
    .install = xfer_efa_install,
    .uninstall = xfer_efa_uninstall,
    .register_mem = xfer_efa__register_mem,
    .unregister_mem = xfer_efa__unregister_mem,
    .local_info = xfer_efa__local_info,
    .reachable = NULL,
    .open_segment = xfer_efa__open_segment,
    .close_segment = xfer_efa__close_segment,
    .submit = xfer_efa__submit,
    .warmup_segment = xfer_efa__warmup_segment,
    .progress = xfer_efa__progress,
};
