/* SPDX-License-Identifier: Apache-2.0 */
/* Transfer wire header codec (pure; see xfer_wire.h for the layout). */
#include "common/fmacros.h"

#include "transfer/core/xfer_wire.h"

#include "common/cm_errno.h"

#include <errno.h>

/* Encodes h into out; see xfer_wire.h. Thread-safe. */
void xfer_wire_encode(const struct xfer_wire_hdr *h, uint8_t out[XFER_WIRE_HDR_LEN]) {
    xfer_put_u32(out, XFER_WIRE_MAGIC);
    out[4] = h->version ? h->version : XFER_WIRE_VERSION;
    out[5] = h->op;
    xfer_put_u16(out + 6, h->flags);
    xfer_put_u32(out + 8, (uint32_t)h->status);
    xfer_put_u32(out + 12, 0);
    xfer_put_u64(out + 16, h->id);
    xfer_put_u64(out + 24, h->addr);
    xfer_put_u64(out + 32, h->len);
}

/* Decodes and validates a header; see xfer_wire.h for the errors. Thread-safe. */
int xfer_wire_decode(const uint8_t *buf, size_t len, struct xfer_wire_hdr *h) {
    if (len < XFER_WIRE_HDR_LEN)
        return -EAGAIN;
    if (xfer_get_u32(buf) != XFER_WIRE_MAGIC)
        return -CM_EPROTOCOL;
    if (buf[4] != XFER_WIRE_VERSION)
        return -CM_EINVALID_VERSION;
    h->version = buf[4];
    h->op = buf[5];
    h->flags = xfer_get_u16(buf + 6);
    h->status = (int32_t)xfer_get_u32(buf + 8);
    h->id = xfer_get_u64(buf + 16);
    h->addr = xfer_get_u64(buf + 24);
    h->len = xfer_get_u64(buf + 32);
    if (h->op == 0 || h->op > XFER_WIRE_OP_MAX || (h->flags & ~XFER_WIRE_F_MASK) ||
        xfer_get_u32(buf + 12) != 0 || h->len > XFER_WIRE_MAX_LEN)
        return -CM_EPROTOCOL;
    /* Statuses are 0 or negative error codes; requests carry 0. */
    if (h->status > 0 || (!(h->flags & XFER_WIRE_F_REPLY) && h->status != 0))
        return -CM_EPROTOCOL;
    return XFER_WIRE_HDR_LEN;
}
