/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Segment descriptor codec (pure, fuzzed). Layout, all little-endian:
 *
 *   header (24 bytes): u32 magic "CXSD", u16 version, u16 header length (24), u32 flags,
 *                      u32 total length, u32 CRC-32C of the whole blob with this field zero,
 *                      u32 reserved (0)
 *   body:  u16+bytes name, u16+bytes listen "host:port", 16 bytes host id, u32 pid,
 *          u64 instance,
 *          u8 transport count T; T x (u8+bytes name, u16+bytes endpoint blob),
 *          u32 buffer count B; B x (u64 addr, u64 len, u32 flags, u32 mr id,
 *                                   u8+bytes location, T x (u16+bytes key blob))
 *
 * Buffers are sorted by address and do not overlap. A decoder of version 1 refuses newer
 * versions (a version bump means an incompatible layout; compatible additions use flags).
 */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"

#include <errno.h>
#include <string.h>

#define DESC_HDR_LEN 24

/* ---- encoder ---- */

struct wr {
    uint8_t *buf; /* NULL while sizing */
    size_t cap, off;
};

static void wr_bytes(struct wr *w, const void *p, size_t n) {
    if (w->buf && w->off + n <= w->cap && n)
        memcpy(w->buf + w->off, p, n);
    w->off += n;
}
static void wr_u8(struct wr *w, uint8_t v) {
    wr_bytes(w, &v, 1);
}
static void wr_u16(struct wr *w, uint16_t v) {
    uint8_t b[2];
    xfer_put_u16(b, v);
    wr_bytes(w, b, 2);
}
static void wr_u32(struct wr *w, uint32_t v) {
    uint8_t b[4];
    xfer_put_u32(b, v);
    wr_bytes(w, b, 4);
}
static void wr_u64(struct wr *w, uint64_t v) {
    uint8_t b[8];
    xfer_put_u64(b, v);
    wr_bytes(w, b, 8);
}

/* Encodes a descriptor; see xfer_int.h. Thread-safe. */
ssize_t xfer_desc_encode(const struct xfer_desc_in *in, uint8_t *buf, size_t len) {
    size_t nl = in->name ? strlen(in->name) : 0, ll = in->listen ? strlen(in->listen) : 0;
    if (nl >= XFER_LNAME_MAX || ll >= XFER_HOSTPORT_MAX || in->n_tp > XFER_MAX_TRANSPORTS)
        return -EINVAL;
    for (int pass = 0; pass < 2; pass++) {
        struct wr w = {.buf = pass ? buf : NULL, .cap = len};
        uint8_t hdr[DESC_HDR_LEN] = {0};
        wr_bytes(&w, hdr, DESC_HDR_LEN);
        wr_u16(&w, (uint16_t)nl);
        wr_bytes(&w, in->name, nl);
        wr_u16(&w, (uint16_t)ll);
        wr_bytes(&w, in->listen, ll);
        wr_bytes(&w, in->host_id, XFER_HOST_ID_LEN);
        wr_u32(&w, in->pid);
        wr_u64(&w, in->instance);
        wr_u8(&w, (uint8_t)in->n_tp);
        for (uint32_t t = 0; t < in->n_tp; t++) {
            size_t tl = strlen(in->tp_name[t]);
            if (tl >= XFER_NAME_MAX || in->tp_ep_len[t] > XFER_EP_MAX)
                return -EINVAL;
            wr_u8(&w, (uint8_t)tl);
            wr_bytes(&w, in->tp_name[t], tl);
            wr_u16(&w, in->tp_ep_len[t]);
            wr_bytes(&w, in->tp_ep[t], in->tp_ep_len[t]);
        }
        wr_u32(&w, in->n_buf);
        for (uint32_t b = 0; b < in->n_buf; b++) {
            const struct xfer_mr *mr = in->bufs[b];
            size_t loc = strnlen(mr->location, XFER_LOC_MAX - 1);
            wr_u64(&w, mr->addr);
            wr_u64(&w, mr->len);
            wr_u32(&w, mr->flags);
            wr_u32(&w, mr->id);
            wr_u8(&w, (uint8_t)loc);
            wr_bytes(&w, mr->location, loc);
            for (uint32_t t = 0; t < in->n_tp; t++) {
                int s = in->tp_slot[t];
                uint16_t kl = mr->key_len[s];
                wr_u16(&w, kl);
                wr_bytes(&w, mr->key[s], kl);
            }
        }
        if (w.off > UINT32_MAX || w.off > XFER_DESC_MAX)
            return -EINVAL;
        if (!pass) {
            if (!buf || len < w.off)
                return (ssize_t)w.off;
            continue;
        }
        xfer_put_u32(buf, XFER_DESC_MAGIC);
        xfer_put_u16(buf + 4, XFER_DESC_VERSION);
        xfer_put_u16(buf + 6, DESC_HDR_LEN);
        xfer_put_u32(buf + 8, 0);
        xfer_put_u32(buf + 12, (uint32_t)w.off);
        xfer_put_u32(buf + 16, 0);
        xfer_put_u32(buf + 20, 0);
        xfer_put_u32(buf + 16, xfer_crc32c(0, buf, w.off));
        return (ssize_t)w.off;
    }
    return -EINVAL;
}

/* ---- decoder ---- */

struct rd {
    const uint8_t *p;
    size_t len, off;
    int bad;
};

static const uint8_t *rd_take(struct rd *r, size_t n) {
    if (r->bad || r->len - r->off < n) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = r->p + r->off;
    r->off += n;
    return p;
}
static uint8_t rd_u8(struct rd *r) {
    const uint8_t *p = rd_take(r, 1);
    return p ? p[0] : 0;
}
static uint16_t rd_u16(struct rd *r) {
    const uint8_t *p = rd_take(r, 2);
    return p ? xfer_get_u16(p) : 0;
}
static uint32_t rd_u32(struct rd *r) {
    const uint8_t *p = rd_take(r, 4);
    return p ? xfer_get_u32(p) : 0;
}
static uint64_t rd_u64(struct rd *r) {
    const uint8_t *p = rd_take(r, 8);
    return p ? xfer_get_u64(p) : 0;
}
/* Copies a length-prefixed string of at most cap-1 bytes without NULs into out. */
static void rd_str(struct rd *r, size_t n, char *out, size_t cap) {
    const uint8_t *p = rd_take(r, n);
    if (!p)
        return;
    if (n >= cap || memchr(p, 0, n)) {
        r->bad = 1;
        return;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}

/* Decodes and verifies an encoded descriptor; see xfer_int.h. Thread-safe. */
int xfer_desc_decode(const void *buf, size_t len, struct xfer_desc **out) {
    const uint8_t *b = buf;
    *out = NULL;
    if (!buf || len < DESC_HDR_LEN || len > XFER_DESC_MAX)
        return -CM_ECORRUPT;
    if (xfer_get_u32(b) != XFER_DESC_MAGIC)
        return -CM_ECORRUPT;
    if (xfer_get_u16(b + 4) != XFER_DESC_VERSION)
        return -CM_EINVALID_VERSION;
    if (xfer_get_u16(b + 6) != DESC_HDR_LEN || xfer_get_u32(b + 12) != len ||
        xfer_get_u32(b + 20) != 0)
        return -CM_ECORRUPT;
    uint32_t want = xfer_get_u32(b + 16);
    uint8_t zero[4] = {0};
    uint32_t crc = xfer_crc32c(0, b, 16);
    crc = xfer_crc32c(crc, zero, 4);
    crc = xfer_crc32c(crc, b + 20, len - 20);
    if (crc != want)
        return -CM_ECORRUPT;

    /* One allocation: struct, raw copy; buffers are sized after the transport list. */
    struct xfer_desc *d = cm_try_calloc(1, sizeof(*d) + len);
    if (!d)
        return -ENOMEM;
    d->raw = (uint8_t *)(d + 1);
    d->raw_len = len;
    memcpy(d->raw, b, len);
    d->version = XFER_DESC_VERSION;
    d->flags = xfer_get_u32(b + 8);

    struct rd r = {.p = d->raw, .len = len, .off = DESC_HDR_LEN};
    rd_str(&r, rd_u16(&r), d->name, sizeof(d->name));
    rd_str(&r, rd_u16(&r), d->listen, sizeof(d->listen));
    const uint8_t *hid = rd_take(&r, XFER_HOST_ID_LEN);
    if (hid)
        memcpy(d->host_id, hid, XFER_HOST_ID_LEN);
    d->pid = rd_u32(&r);
    d->instance = rd_u64(&r);
    d->n_tp = rd_u8(&r);
    if (d->n_tp > XFER_MAX_TRANSPORTS)
        r.bad = 1;
    for (uint32_t t = 0; t < d->n_tp && !r.bad; t++) {
        rd_str(&r, rd_u8(&r), d->tp[t].name, sizeof(d->tp[t].name));
        d->tp[t].ep_len = rd_u16(&r);
        if (d->tp[t].ep_len > XFER_EP_MAX)
            r.bad = 1;
        d->tp[t].ep = rd_take(&r, d->tp[t].ep_len);
        if (!r.bad && (d->tp[t].name[0] == '\0' || xfer_desc_find_tp(d, d->tp[t].name) != (int)t))
            r.bad = 1; /* empty or duplicate transport name */
    }
    d->n_buf = rd_u32(&r);
    /* Each buffer takes at least 25 + 2*T bytes: bound the count before allocating. */
    if (r.bad || d->n_buf > (len - r.off) / (25 + 2 * d->n_tp)) {
        cm_free(d);
        return -CM_ECORRUPT;
    }
    d->buf = d->n_buf ? cm_try_calloc(d->n_buf, sizeof(*d->buf)) : NULL;
    if (d->n_buf && !d->buf) {
        cm_free(d);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < d->n_buf && !r.bad; i++) {
        struct xfer_desc_buf *x = &d->buf[i];
        x->addr = rd_u64(&r);
        x->len = rd_u64(&r);
        x->flags = rd_u32(&r);
        x->mr_id = rd_u32(&r);
        rd_str(&r, rd_u8(&r), x->location, sizeof(x->location));
        for (uint32_t t = 0; t < d->n_tp && !r.bad; t++) {
            x->key_len[t] = rd_u16(&r);
            if (x->key_len[t] > XFER_KEY_MAX)
                r.bad = 1;
            x->key[t] = x->key_len[t] ? rd_take(&r, x->key_len[t]) : NULL;
        }
        if (x->len == 0 || x->addr + x->len < x->addr)
            r.bad = 1;
        if (i > 0 && d->buf[i - 1].addr + d->buf[i - 1].len > x->addr)
            r.bad = 1; /* unsorted or overlapping */
    }
    if (r.bad || r.off != len) {
        xfer_desc_free(d);
        return -CM_ECORRUPT;
    }
    *out = d;
    return 0;
}

/* Frees a decoded descriptor; NULL is accepted. */
void xfer_desc_free(struct xfer_desc *d) {
    if (!d)
        return;
    cm_free(d->buf);
    cm_free(d);
}

/* Binary search for the buffer holding [addr, addr+len); see xfer_int.h. */
int xfer_desc_find_buf(const struct xfer_desc *d, uint64_t addr, uint64_t len) {
    size_t lo = 0, hi = d->n_buf;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->buf[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const struct xfer_desc_buf *x = &d->buf[lo - 1];
    uint64_t off = addr - x->addr;
    if (off > x->len || len > x->len - off)
        return -1;
    return (int)(lo - 1);
}

/* Index of transport name in d->tp, or -1. */
int xfer_desc_find_tp(const struct xfer_desc *d, const char *name) {
    for (uint32_t t = 0; t < d->n_tp; t++)
        if (strcmp(d->tp[t].name, name) == 0)
            return (int)t;
    return -1;
}

/* Summarises a descriptor; see xfer.h. */
int xfer_desc_inspect(const void *desc, size_t desc_len, struct xfer_desc_summary *out,
                      struct xfer_desc_region *regions, size_t max_regions) {
    struct xfer_desc *d;
    int rc = xfer_desc_decode(desc, desc_len, &d);
    if (rc < 0)
        return rc;
    _Static_assert(sizeof(out->name) == XFER_LNAME_MAX, "name size");
    _Static_assert(sizeof(out->listen) == XFER_HOSTPORT_MAX, "listen size");
    _Static_assert(sizeof(out->transports[0]) == XFER_NAME_MAX, "transport name size");
    _Static_assert(sizeof(regions->location) == XFER_LOC_MAX, "location size");
    memset(out, 0, sizeof(*out));
    memcpy(out->name, d->name, sizeof(out->name));
    memcpy(out->listen, d->listen, sizeof(out->listen));
    out->pid = d->pid;
    out->instance = d->instance;
    out->n_transports = d->n_tp;
    for (uint32_t t = 0; t < d->n_tp; t++)
        memcpy(out->transports[t], d->tp[t].name, XFER_NAME_MAX);
    out->n_buffers = d->n_buf;
    for (size_t i = 0; regions && i < max_regions && i < d->n_buf; i++) {
        regions[i].addr = d->buf[i].addr;
        regions[i].len = d->buf[i].len;
        memcpy(regions[i].location, d->buf[i].location, XFER_LOC_MAX);
    }
    xfer_desc_free(d);
    return 0;
}
