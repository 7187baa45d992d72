// SPDX-License-Identifier: Apache-2.0
/*
 * fabric transport: memory registration. Every engine registration is registered in each
 * domain; the key blob that goes into the segment descriptor is
 *   u8 n | n x u64 key (little endian), one key per domain, in domain order.
 * Device memory ("cuda:N" location) is registered with FI_HMEM_CUDA when the provider
 * negotiated FI_HMEM; otherwise it is refused.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "transfer/efa/xfer_efa.h"

/*
 * Registers [addr, addr+len) in domain d with the given access bits; location "cuda:N" selects
 * the CUDA HMEM interface. Binds and enables the MR when the provider wants FI_MR_ENDPOINT.
 * Returns 0 and sets *out (close with fi_close), -CM_ENOT_SUPPORTED for device memory without
 * FI_HMEM, or a negative libfabric code. Thread-safe.
 */
int xfer_efa__mr_reg(struct xfer_efa_domain *d, void *addr, size_t len, uint64_t access,
                     const char *location, struct fid_mr **out) {
    struct iovec iov = {.iov_base = addr, .iov_len = len ? len : 1};
    struct fi_mr_attr attr;
    int rc;

    memset(&attr, 0, sizeof(attr));
    attr.mr_iov = &iov;
    attr.iov_count = 1;
    attr.access = access;
    attr.iface = FI_HMEM_SYSTEM;
    if (location && strncmp(location, "cuda:", 5) == 0) {
        if (!d->hmem)
            return -CM_ENOT_SUPPORTED;
        attr.iface = FI_HMEM_CUDA;
        attr.device.cuda = atoi(location + 5);
    }
    if (!(d->mr_mode & FI_MR_PROV_KEY))
        attr.requested_key = atomic_fetch_add(&d->efa->next_key, 1);
    rc = fi_mr_regattr(d->domain, &attr, 0, out);
    if (rc)
        return rc;
    if (d->mr_mode & FI_MR_ENDPOINT) {
        if ((rc = fi_mr_bind(*out, &d->ep->fid, 0)) || (rc = fi_mr_enable(*out))) {
            fi_close(&(*out)->fid);
            *out = NULL;
            return rc;
        }
    }
    return 0;
}

static void xfer_efa_mr_free(struct xfer_efa_mr *m) {
    for (int i = 0; i < m->n; i++)
        if (m->mr[i])
            fi_close(&m->mr[i]->fid);
    cm_free(m);
}

/*
 * register_mem op: registers mr in every domain and writes the key blob (u8 n, n x u64 keys).
 * Returns 0, -ENOMEM, -CM_ENOT_SUPPORTED (device memory the provider cannot register) or
 * -CM_EINTERNAL_ERROR for other provider refusals. Thread-safe.
 */
int xfer_efa__register_mem(struct xfer_transport *tp, struct xfer_mr *mr, uint8_t *key,
                           size_t *key_len) {
    struct xfer_efa *efa = tp->ctx;
    struct xfer_efa_mr *m = cm_try_calloc(1, sizeof(*m));
    uint64_t access = FI_READ | FI_WRITE;

    if (!m)
        return -ENOMEM;
    if (mr->flags & XFER_REG_REMOTE)
        access |= FI_REMOTE_READ | FI_REMOTE_WRITE;
    for (int i = 0; i < efa->n_dom; i++) {
        struct xfer_efa_domain *d = &efa->dom[i];
        int rc = xfer_efa__mr_reg(d, (void *)(uintptr_t)mr->addr, mr->len, access, mr->location,
                                  &m->mr[i]);
        m->n = i + 1;
        if (rc) {
            cm_log(CM_LOG_WARNING, "xfer", "fabric: fi_mr_reg of %llu B (%s) on domain %d: %s",
                   (unsigned long long)mr->len, mr->location, i,
                   rc == -CM_ENOT_SUPPORTED ? "device memory needs FI_HMEM" : fi_strerror(-rc));
            m->mr[i] = NULL;
            xfer_efa_mr_free(m);
            return rc == -CM_ENOT_SUPPORTED || rc == -FI_ENOMEM ? (rc == -FI_ENOMEM ? -ENOMEM : rc)
                                                                : -CM_EINTERNAL_ERROR;
        }
        m->desc[i] = fi_mr_desc(m->mr[i]);
        m->key[i] = fi_mr_key(m->mr[i]);
    }
    key[0] = (uint8_t)efa->n_dom;
    for (int i = 0; i < efa->n_dom; i++)
        for (int b = 0; b < 8; b++)
            key[1 + i * 8 + b] = (uint8_t)(m->key[i] >> (8 * b));
    *key_len = 1 + (size_t)efa->n_dom * 8;
    mr->tp_priv[tp->slot] = m;
    return 0;
}

/* unregister_mem op: closes the per-domain MRs of mr. Returns 0. Thread-safe. */
int xfer_efa__unregister_mem(struct xfer_transport *tp, struct xfer_mr *mr) {
    struct xfer_efa_mr *m = mr->tp_priv[tp->slot];
    if (m)
        xfer_efa_mr_free(m);
    mr->tp_priv[tp->slot] = NULL;
    return 0;
}

/*
 * Decodes a peer's key blob into keys[0..max). Returns the number of keys, or -CM_ECORRUPT for
 * a malformed blob. Pure.
 */
int xfer_efa__key_decode(const uint8_t *blob, size_t len, uint64_t *keys, int max) {
    if (!blob || len < 1)
        return -CM_ECORRUPT;
    int n = blob[0];
    if (n < 1 || n > max || len != 1 + (size_t)n * 8)
        return -CM_ECORRUPT;
    for (int i = 0; i < n; i++) {
        uint64_t k = 0;
        for (int b = 0; b < 8; b++)
            k |= (uint64_t)blob[1 + i * 8 + b] << (8 * b);
        keys[i] = k;
    }
    return n;
}
