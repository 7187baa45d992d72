/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool snapshots: the pool's durable state as one little-endian file with a CRC-32C trailer
 * (format in docs/ha.md, "Snapshot format"), written from a consistent view (the pool's lock,
 * or a forked copy-on-write child) and loaded into an empty pool. Allocators are not written:
 * each buffer's offset and length are, and loading rebuilds the allocators in one sorted pass
 * (cm_tlsf_build), so a snapshot restores the exact addresses clients hold data at.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "common/cm_tlsf.h"
#include "server/pool/pool_int.h"
#include "storage/sto_record.h"

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SNAP_MAGIC       "CRSNAP1\n"
#define SNAP_END         "CRSNAPE\n"
#define SNAP_VERSION     1u
#define SNAP_HEADER      64u
#define SNAP_TRAILER     24u
#define SNAP_BUF         (1u << 20)
#define SNAP_OF_HARD_PIN 1u

/* ---------------------------------------------------------------- writer */

struct snap_w {
    int fd;
    int err;
    uint32_t crc;
    uint64_t total;
    size_t len;
    uint8_t *buf;
};

static void snap_flush(struct snap_w *w) {
    size_t off = 0;
    while (off < w->len && !w->err) {
        ssize_t n = write(w->fd, w->buf + off, w->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            w->err = n < 0 ? -errno : -EIO;
        else
            off += (size_t)n;
    }
    w->crc = sto_crc32c(w->crc, w->buf, w->len);
    w->total += w->len;
    w->len = 0;
}

/* Makes room for n bytes (n <= SNAP_BUF) and returns where they go. */
static uint8_t *snap_room(struct snap_w *w, size_t n) {
    if (SNAP_BUF - w->len < n)
        snap_flush(w);
    return w->buf + w->len;
}

static void snap_put(struct snap_w *w, const void *p, size_t n) {
    const uint8_t *s = p;
    while (n > 0) {
        size_t k = n < SNAP_BUF ? n : SNAP_BUF;
        memcpy(snap_room(w, k), s, k);
        w->len += k;
        s += k;
        n -= k;
    }
}

/* Stores v little-endian in bytes (1, 2, 4 or 8) at d; returns the end. */
static inline uint8_t *snap_le(uint8_t *d, uint64_t v, int bytes) {
    uint64_t le = htole64(v);
    memcpy(d, &le, (size_t)bytes);
    return d + bytes;
}

static void snap_u(struct snap_w *w, uint64_t v, int bytes) {
    snap_le(snap_room(w, 8), v, bytes);
    w->len += (size_t)bytes;
}

static void snap_str(struct snap_w *w, const char *s) {
    size_t n = s ? strlen(s) : 0;
    snap_u(w, n, 2);
    snap_put(w, s, n);
}

/* The slot maps: file index of each client and segment slot (UINT32_MAX when not written). */
struct snap_maps {
    uint32_t *client_idx;
    uint32_t *seg_idx;
    uint32_t nclients, nsegs;
};

/* Numbers the clients and the segments (of known owners) in slot order. */
static void snap_index(const struct pool *p, struct snap_maps *m) {
    for (uint32_t i = 0; i < p->nclient_slots; i++)
        m->client_idx[i] = p->clients[i] ? m->nclients++ : UINT32_MAX;
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        const struct pool_seg *s = p->segs[i];
        /* A shared segment (the master's own) and its bytes do not outlive the process. */
        int known =
            s && s->alloc && s->owner < p->nclient_slots && m->client_idx[s->owner] != UINT32_MAX;
        m->seg_idx[i] = known ? m->nsegs++ : UINT32_MAX;
    }
}

static void snap_write_clients(struct snap_w *w, const struct pool *p, const struct snap_maps *m) {
    for (uint32_t i = 0; i < p->nclient_slots; i++) {
        const struct pool_client *c = p->clients[i];
        if (m->client_idx[i] == UINT32_MAX)
            continue;
        snap_put(w, c->id.b, sizeof(c->id.b));
        snap_str(w, c->host);
    }
}

static void snap_write_segs(struct snap_w *w, const struct pool *p, const struct snap_maps *m,
                            int64_t now) {
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        const struct pool_seg *s = p->segs[i];
        if (m->seg_idx[i] == UINT32_MAX)
            continue;
        snap_str(w, s->name);
        snap_str(w, s->endpoint);
        snap_str(w, s->protocol);
        snap_u(w, s->desc_len, 4);
        snap_put(w, s->desc, s->desc_len);
        snap_u(w, s->base, 8);
        snap_u(w, s->size, 8);
        snap_u(w, m->client_idx[s->owner], 4);
        snap_u(w, (uint64_t)s->status, 1);
        snap_u(w, (uint64_t)(s->grace_until > now ? s->grace_until - now : 0), 8);
    }
}

/* A replica the snapshot keeps as part of its object. */
static int snap_rep_kept(const struct pool *p, const struct snap_maps *m,
                         const struct pool_rep *r) {
    return r->type == POOL_REPLICA_MEMORY && r->status == POOL_REPLICA_COMPLETE &&
           r->seg < p->nseg_slots && m->seg_idx[r->seg] != UINT32_MAX;
}

/* Objects whose write is not finished have no readable replica: their buffers are reserved. */
static uint32_t snap_obj_kept(const struct pool *p, const struct snap_maps *m,
                              const struct pool_obj *o) {
    uint32_t n = 0;
    if (o->flags & POOL_OF_INFLIGHT)
        return 0;
    for (uint32_t i = 0; i < o->nrep; i++)
        n += (uint32_t)snap_rep_kept(p, m, &pool__reps(o)[i]);
    return n;
}

static uint8_t *snap_enc_buffer(uint8_t *d, const struct pool *p, const struct snap_maps *m,
                                const struct pool_rep *r) {
    const struct pool_seg *s = p->segs[r->seg];
    d = snap_le(d, m->seg_idx[r->seg], 4);
    d = snap_le(d, cm_tlsf_block_offset(s->alloc, r->handle), 8);
    return snap_le(d, cm_tlsf_block_size(s->alloc, r->handle), 8);
}

/* Objects, each encoded straight into the buffer, then a zero key length as the end mark. */
static uint64_t snap_write_objects(struct snap_w *w, const struct pool *p,
                                   const struct snap_maps *m) {
    uint64_t n = 0;
    size_t i;
    struct cm_ht_node *hn, *tmp;
    cm_ht_foreach_node(&p->objects, i, hn, tmp) {
        const struct pool_obj *o = (const struct pool_obj *)hn;
        uint32_t nrep = snap_obj_kept(p, m, o);
        if (nrep == 0)
            continue;
        uint8_t *d = snap_room(w, 12u + o->klen + 20u * nrep), *start = d;
        d = snap_le(d, o->klen, 2);
        memcpy(d, o->key, o->klen);
        d = snap_le(d + o->klen, o->size, 8);
        *d++ = (o->flags & POOL_OF_HARD_PIN) ? SNAP_OF_HARD_PIN : 0;
        *d++ = (uint8_t)nrep;
        for (uint32_t k = 0; k < o->nrep; k++)
            if (snap_rep_kept(p, m, &pool__reps(o)[k]))
                d = snap_enc_buffer(d, p, m, &pool__reps(o)[k]);
        w->len += (size_t)(d - start);
        n++;
    }
    snap_u(w, 0, 2);
    return n;
}

static void snap_write_reserved_one(struct snap_w *w, const struct pool *p,
                                    const struct snap_maps *m, const struct pool_rep *r,
                                    uint64_t size, int64_t release_in) {
    uint8_t *d = snap_room(w, 37), *start = d;
    *d++ = 1;
    d = snap_enc_buffer(d, p, m, r);
    d = snap_le(d, size, 8);
    d = snap_le(d, (uint64_t)(release_in > 0 ? release_in : 0), 8);
    w->len += (size_t)(d - start);
}

/*
 * Buffers that stay reserved: those of writes in flight and copy targets (the objects of the
 * in-flight set), and discarded buffers; each with its remaining time before release.
 */
static void snap_write_reserved(struct snap_w *w, const struct pool *p, const struct snap_maps *m,
                                int64_t now) {
    size_t i;
    struct cm_ht_node *hn, *tmp;
    cm_ht_foreach_node(&p->inflight, i, hn, tmp) {
        const struct pool_obj *o = ((const struct pool_inflight *)hn)->obj;
        int whole = snap_obj_kept(p, m, o) == 0;
        int64_t release =
            ((o->flags & POOL_OF_INFLIGHT) ? o->t_aux : now) + p->cfg.put_start_release_timeout_ms;
        for (uint32_t k = 0; k < o->nrep; k++) {
            const struct pool_rep *r = &pool__reps(o)[k];
            if (r->type == POOL_REPLICA_MEMORY && r->seg < p->nseg_slots &&
                m->seg_idx[r->seg] != UINT32_MAX && (whole || !snap_rep_kept(p, m, r)))
                snap_write_reserved_one(w, p, m, r, o->size, release - now);
        }
    }
    for (size_t k = 0; k < p->ndiscards; k++) {
        const struct pool_discard *d = &p->discards[k];
        struct pool_rep r = {.seg = d->seg, .handle = d->handle};
        if (d->seg < p->nseg_slots && m->seg_idx[d->seg] != UINT32_MAX)
            snap_write_reserved_one(w, p, m, &r, d->size, d->release_at - now);
    }
    snap_u(w, 0, 1);
}

/* Writes the pool as a snapshot; see pool.h. */
int pool_snapshot_write(const struct pool *p, int64_t now, int fd, struct pool_snap_meta *meta) {
    struct snap_w w = {.fd = fd, .buf = cm_malloc(SNAP_BUF)};
    struct snap_maps m = {.client_idx = cm_calloc(p->nclient_slots + 1, sizeof(uint32_t)),
                          .seg_idx = cm_calloc(p->nseg_slots + 1, sizeof(uint32_t))};
    snap_index(p, &m);
    snap_put(&w, SNAP_MAGIC, 8);
    snap_u(&w, SNAP_VERSION, 4);
    snap_u(&w, SNAP_HEADER, 4);
    snap_u(&w, meta->epoch, 8);
    snap_u(&w, meta->last_seq, 8);
    snap_u(&w, (uint64_t)meta->created_ms, 8);
    snap_u(&w, (uint64_t)p->cfg.view_version, 8);
    snap_u(&w, m.nclients, 4);
    snap_u(&w, m.nsegs, 4);
    snap_u(&w, cm_ht_count(&p->objects), 8); /* a bound: the objects end with a mark */
    snap_write_clients(&w, p, &m);
    snap_write_segs(&w, p, &m, now);
    meta->objects = snap_write_objects(&w, p, &m);
    if (meta->epoch == 0)
        snap_write_reserved(&w, p, &m, now);
    else /* HA: the op-log carries no write in flight; entries after the snapshot may place
            objects in those buffers (a put that ends after the fork), so none is reserved */
        snap_u(&w, 0, 1);
    snap_flush(&w);
    uint64_t body = w.total;
    uint32_t crc = w.crc;
    snap_put(&w, SNAP_END, 8);
    snap_u(&w, body, 8);
    snap_u(&w, crc, 4);
    snap_u(&w, 0, 4);
    snap_flush(&w);
    meta->bytes = w.total;
    cm_free(m.client_idx);
    cm_free(m.seg_idx);
    cm_free(w.buf);
    return w.err;
}

/* ---------------------------------------------------------------- reader */

struct snap_r {
    const uint8_t *p;
    size_t len, pos;
    char *err;
    size_t errlen;
    int failed;
};

static void snap_fail(struct snap_r *r, const char *fmt, ...) {
    if (r->failed)
        return;
    r->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
}

static const uint8_t *snap_take(struct snap_r *r, size_t n, const char *what) {
    if (r->failed)
        return NULL;
    if (n > r->len - r->pos) {
        snap_fail(r, "snapshot truncated in %s at byte %zu", what, r->pos);
        return NULL;
    }
    const uint8_t *q = r->p + r->pos;
    r->pos += n;
    return q;
}

static uint64_t snap_get(struct snap_r *r, int bytes, const char *what) {
    const uint8_t *q = snap_take(r, (size_t)bytes, what);
    uint64_t v = 0;
    for (int i = bytes - 1; q && i >= 0; i--)
        v = (v << 8) | q[i];
    return v;
}

/* Reads a u16-length string into a NUL-terminated heap copy (NULL after a failure). */
static char *snap_get_str(struct snap_r *r, const char *what) {
    size_t n = (size_t)snap_get(r, 2, what);
    const uint8_t *q = snap_take(r, n, what);
    if (!q)
        return NULL;
    if (n > POOL_MAX_NAME_LEN || memchr(q, 0, n)) {
        snap_fail(r, "snapshot has a bad %s at byte %zu", what, r->pos - n);
        return NULL;
    }
    char *s = cm_malloc(n + 1);
    memcpy(s, q, n);
    s[n] = 0;
    return s;
}

/* A buffer to re-reserve: where it lies, and who gets the handle (a replica in an object
   record, or when handle is NULL, reserved buffer number idx). */
struct snap_span {
    uint32_t seg;
    uint64_t off, len;
    uint32_t *handle;
    size_t idx;
};

struct snap_load {
    struct snap_r r;
    struct pool *p;
    int64_t now;
    uint32_t nclients, nsegs;
    struct pool_uuid *ids;
    uint32_t *seg_slot; /* file index -> pool slot */
    struct snap_span *spans;
    size_t nspans, spans_cap;
    struct pool_discard *reserved;
    size_t nreserved, reserved_cap;
};

static int snap_check_frame(struct snap_r *r, struct pool_snap_meta *meta) {
    if (r->len < SNAP_HEADER + SNAP_TRAILER || memcmp(r->p, SNAP_MAGIC, 8) != 0) {
        snap_fail(r, "not a Crescent snapshot (bad magic or too short: %zu bytes)", r->len);
        return -1;
    }
    const uint8_t *t = r->p + r->len - SNAP_TRAILER;
    struct snap_r tr = {.p = t, .len = SNAP_TRAILER};
    uint64_t body = (snap_take(&tr, 8, "trailer"), snap_get(&tr, 8, "trailer"));
    uint32_t crc = (uint32_t)snap_get(&tr, 4, "trailer");
    if (memcmp(t, SNAP_END, 8) != 0 || body != r->len - SNAP_TRAILER) {
        snap_fail(r, "snapshot truncated or extended: no valid trailer at byte %zu",
                  r->len - SNAP_TRAILER);
        return -1;
    }
    uint32_t got = sto_crc32c(0, r->p, (size_t)body);
    if (got != crc) {
        snap_fail(r, "snapshot checksum mismatch (crc32c %08x, trailer says %08x)", got, crc);
        return -1;
    }
    r->len = (size_t)body;
    r->pos = 8;
    uint32_t version = (uint32_t)snap_get(r, 4, "header");
    uint32_t hlen = (uint32_t)snap_get(r, 4, "header");
    if (version != SNAP_VERSION || hlen != SNAP_HEADER) {
        snap_fail(r, "snapshot version %u (header %u bytes) is not supported (want %u)", version,
                  hlen, SNAP_VERSION);
        return -1;
    }
    meta->epoch = snap_get(r, 8, "header");
    meta->last_seq = snap_get(r, 8, "header");
    meta->created_ms = (int64_t)snap_get(r, 8, "header");
    (void)snap_get(r, 8, "header"); /* the writer's view version: informational */
    meta->bytes = r->len + SNAP_TRAILER;
    return 0;
}

static void snap_load_clients(struct snap_load *L) {
    L->ids = cm_calloc(L->nclients + 1, sizeof(*L->ids));
    for (uint32_t i = 0; i < L->nclients && !L->r.failed; i++) {
        const uint8_t *id = snap_take(&L->r, 16, "client id");
        char *host = snap_get_str(&L->r, "client host");
        if (id && host) {
            memcpy(L->ids[i].b, id, 16);
            if (pool__client_find(L->p, &L->ids[i]) ||
                pool_client_register(L->p, &L->ids[i], host, L->now) != POOL_OK)
                snap_fail(&L->r, "snapshot client %u is a duplicate or invalid", i);
        }
        cm_free(host);
    }
}

static void snap_load_seg(struct snap_load *L, uint32_t i) {
    struct snap_r *r = &L->r;
    char *name = snap_get_str(r, "segment name"), *ep = snap_get_str(r, "segment endpoint");
    char *proto = snap_get_str(r, "segment protocol");
    size_t dlen = (size_t)snap_get(r, 4, "segment descriptor");
    const uint8_t *desc =
        dlen <= POOL_MAX_DESC_LEN ? snap_take(r, dlen, "segment descriptor") : NULL;
    struct pool_segment_spec spec = {
        .name = name, .endpoint = ep, .protocol = proto, .desc = desc, .desc_len = dlen};
    spec.base = snap_get(r, 8, "segment");
    spec.size = snap_get(r, 8, "segment");
    uint32_t owner = (uint32_t)snap_get(r, 4, "segment");
    unsigned status = (unsigned)snap_get(r, 1, "segment");
    int64_t grace = (int64_t)snap_get(r, 8, "segment");
    if (!r->failed) {
        if (dlen > POOL_MAX_DESC_LEN || owner >= L->nclients || grace < 0 ||
            (status != POOL_SEG_OK && status != POOL_SEG_GRACEFULLY_UNMOUNTING) ||
            pool__seg_find(L->p, name) || pool_segment_mount(L->p, &L->ids[owner], &spec, L->now))
            snap_fail(r, "snapshot segment %u (%s) is invalid or a duplicate", i, name);
    }
    if (!r->failed) {
        struct pool_seg *s = pool__seg_find(L->p, name);
        L->seg_slot[i] = s->slot;
        if (status == POOL_SEG_GRACEFULLY_UNMOUNTING) {
            s->status = POOL_SEG_GRACEFULLY_UNMOUNTING;
            s->grace_until = L->now + grace;
        }
    }
    cm_free(name);
    cm_free(ep);
    cm_free(proto);
}

static void snap_span_add(struct snap_load *L, uint32_t seg, uint64_t off, uint64_t len,
                          uint32_t *handle, size_t idx) {
    if (L->nspans == L->spans_cap) {
        L->spans_cap = L->spans_cap ? 2 * L->spans_cap : 1024;
        L->spans = cm_realloc(L->spans, L->spans_cap * sizeof(*L->spans));
    }
    L->spans[L->nspans++] = (struct snap_span){seg, off, len, handle, idx};
}

/* Reads one buffer reference (segment index, offset, length) into a span (see snap_span). */
static void snap_get_buffer(struct snap_load *L, uint32_t *seg_slot, uint32_t *handle, size_t idx) {
    uint32_t seg = (uint32_t)snap_get(&L->r, 4, "buffer");
    uint64_t off = snap_get(&L->r, 8, "buffer"), len = snap_get(&L->r, 8, "buffer");
    if (L->r.failed)
        return;
    if (seg >= L->nsegs || len == 0) {
        snap_fail(&L->r, "snapshot buffer at byte %zu names segment %u of %u", L->r.pos - 20, seg,
                  L->nsegs);
        return;
    }
    *seg_slot = L->seg_slot[seg];
    snap_span_add(L, L->seg_slot[seg], off, len, handle, idx);
}

/* Loads one object; returns 0 at the end mark or after a failure, else 1. */
static int snap_load_object(struct snap_load *L) {
    struct snap_r *r = &L->r;
    size_t klen = (size_t)snap_get(r, 2, "object key");
    if (klen == 0)
        return 0;
    const uint8_t *key = snap_take(r, klen, "object key");
    uint64_t size = snap_get(r, 8, "object");
    unsigned flags = (unsigned)snap_get(r, 1, "object");
    unsigned nrep = (unsigned)snap_get(r, 1, "object");
    if (r->failed)
        return 0;
    uint64_t hash = pool__key_hash(L->p, key, klen);
    if (nrep == 0 || nrep > POOL_MAX_REPLICAS || size == 0 || size > POOL_MAX_OBJECT_SIZE ||
        pool__obj_find(L->p, key, klen, hash)) {
        snap_fail(r, "snapshot object at byte %zu is invalid or a duplicate", r->pos);
        return 0;
    }
    /* Linked at once, even if a replica below fails to parse: destroy frees it. */
    struct pool_obj *o = pool__obj_new(L->p, key, klen, hash, size, nrep, NULL);
    o->flags = (flags & SNAP_OF_HARD_PIN) ? POOL_OF_HARD_PIN : 0;
    struct pool_rep *reps = pool__reps(o);
    for (unsigned k = 0; k < nrep; k++) {
        reps[k] = (struct pool_rep){.type = POOL_REPLICA_MEMORY, .status = POOL_REPLICA_COMPLETE};
        snap_get_buffer(L, &reps[k].seg, &reps[k].handle, 0);
        for (unsigned j = 0; j < k && !r->failed; j++)
            if (reps[j].seg == reps[k].seg)
                snap_fail(r, "snapshot object has two replicas on one segment");
    }
    return !r->failed;
}

/* The reserved buffers become discards; their handles are filled in by snap_build(). */
static void snap_load_reserved(struct snap_load *L) {
    while (!L->r.failed && snap_get(&L->r, 1, "reserved buffers") == 1) {
        if (L->nreserved == L->reserved_cap) {
            L->reserved_cap = L->reserved_cap ? 2 * L->reserved_cap : 64;
            L->reserved = cm_realloc(L->reserved, L->reserved_cap * sizeof(*L->reserved));
        }
        size_t idx = L->nreserved++;
        struct pool_discard *d = &L->reserved[idx];
        memset(d, 0, sizeof(*d));
        snap_get_buffer(L, &d->seg, &d->handle, idx);
        d->size = snap_get(&L->r, 8, "reserved buffer");
        d->release_at = L->now + (int64_t)(snap_get(&L->r, 8, "reserved buffer") & INT32_MAX);
    }
}

/* A sort entry: segment slot (high 24 bits) and offset (low 40 bits), and the span index. */
struct snap_ord {
    uint64_t key;
    uint64_t idx;
};

/*
 * Orders the spans by segment, then offset: an LSD radix sort on 11-bit digits of the key (a
 * comparison sort of a million spans took a third of the load). Returns the order (caller
 * frees), or NULL with the load failed when a key does not fit.
 */
static struct snap_ord *snap_order(struct snap_load *L) {
    size_t n = L->nspans;
    struct snap_ord *a = cm_malloc((n + 1) * sizeof(*a)), *b = cm_malloc((n + 1) * sizeof(*b));
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++) {
        const struct snap_span *s = &L->spans[i];
        if (s->seg >= (1u << 24) || s->off >= POOL_MAX_SEGMENT) {
            snap_fail(&L->r, "snapshot buffer offset %llu is out of range",
                      (unsigned long long)s->off);
            cm_free(b);
            cm_free(a);
            return NULL;
        }
        a[i] = (struct snap_ord){((uint64_t)s->seg << 40) | s->off, i};
        max |= a[i].key;
    }
    size_t count[2048];
    for (unsigned shift = 0; shift < 64 && (max >> shift) != 0; shift += 11) {
        memset(count, 0, sizeof(count));
        for (size_t i = 0; i < n; i++)
            count[(a[i].key >> shift) & 2047]++;
        for (size_t d = 0, sum = 0; d < 2048; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            b[count[(a[i].key >> shift) & 2047]++] = a[i];
        struct snap_ord *t = a;
        a = b;
        b = t;
    }
    cm_free(b);
    return a;
}

/* Rebuilds every segment's allocator from the spans, in (segment, offset) order. */
static void snap_build(struct snap_load *L) {
    struct snap_ord *ord = snap_order(L);
    if (!ord)
        return;
    struct cm_tlsf_span *tmp = cm_malloc((L->nspans + 1) * sizeof(*tmp));
    uint32_t *handles = cm_malloc((L->nspans + 1) * sizeof(*handles));
    for (size_t a = 0, b; a < L->nspans && !L->r.failed; a = b) {
        uint32_t seg = L->spans[ord[a].idx].seg;
        struct pool_seg *s = L->p->segs[seg];
        for (b = a; b < L->nspans && L->spans[ord[b].idx].seg == seg; b++)
            tmp[b - a] = (struct cm_tlsf_span){L->spans[ord[b].idx].off, L->spans[ord[b].idx].len};
        int err = 0;
        struct cm_tlsf *t =
            cm_tlsf_build(s->size, L->p->cfg.alloc_align, tmp, (uint32_t)(b - a), handles, &err);
        if (!t) {
            snap_fail(&L->r, "snapshot buffers of segment %s overlap or lie outside it (%s)",
                      s->name, cm_strerror(err));
            break;
        }
        cm_tlsf_destroy(s->alloc);
        s->alloc = t;
        s->nbuffers = b - a;
        for (size_t k = a; k < b; k++) {
            const struct snap_span *sp = &L->spans[ord[k].idx];
            if (sp->handle)
                *sp->handle = handles[k - a];
            else
                L->reserved[sp->idx].handle = handles[k - a];
        }
    }
    cm_free(tmp);
    cm_free(handles);
    cm_free(ord);
}

/* Sums the value bytes per segment (after the build, every handle is valid). */
static void snap_account(struct pool *p) {
    size_t i;
    struct cm_ht_node *hn, *tmp;
    cm_ht_foreach_node(&p->objects, i, hn, tmp) {
        const struct pool_obj *o = (const struct pool_obj *)hn;
        for (uint32_t k = 0; k < o->nrep; k++)
            p->segs[pool__reps(o)[k].seg]->used += o->size;
    }
    for (size_t k = 0; k < p->ndiscards; k++)
        p->segs[p->discards[k].seg]->used += p->discards[k].size;
}

/* Loads a snapshot into an empty pool; see pool.h. */
int pool_snapshot_load(struct pool *p, const void *buf, size_t len, int64_t now,
                       struct pool_snap_meta *meta, char *err, size_t errlen) {
    if (p->nclients || p->nsegs || cm_ht_count(&p->objects)) {
        snprintf(err, errlen, "the pool is not empty");
        return -EINVAL;
    }
    struct snap_load L = {
        .r = {.p = buf, .len = len, .err = err, .errlen = errlen}, .p = p, .now = now};
    memset(meta, 0, sizeof(*meta));
    if (snap_check_frame(&L.r, meta) == 0) {
        L.nclients = (uint32_t)snap_get(&L.r, 4, "header");
        L.nsegs = (uint32_t)snap_get(&L.r, 4, "header");
        uint64_t nobj = snap_get(&L.r, 8, "header");
        if (L.nsegs > len / 32 || L.nclients > len / 18 || nobj > len / 12) {
            snap_fail(&L.r, "snapshot header counts are out of range");
            L.nsegs = L.nclients = 0;
        }
        L.seg_slot = cm_calloc((size_t)L.nsegs + 1, sizeof(uint32_t));
        snap_load_clients(&L);
        for (uint32_t i = 0; i < L.nsegs && !L.r.failed; i++)
            snap_load_seg(&L, i);
        cm_ht_reserve(&p->objects, (size_t)(nobj < len / 32 ? nobj : len / 32));
        uint64_t loaded = 0;
        while (!L.r.failed && snap_load_object(&L))
            if (++loaded > nobj)
                snap_fail(&L.r, "snapshot has more objects than its header says (%llu)",
                          (unsigned long long)nobj);
        snap_load_reserved(&L);
        if (!L.r.failed && L.r.pos != L.r.len)
            snap_fail(&L.r, "snapshot has %zu unexpected bytes at %zu", L.r.len - L.r.pos, L.r.pos);
        if (!L.r.failed)
            snap_build(&L);
        for (size_t k = 0; k < L.nreserved && !L.r.failed; k++) {
            struct pool_discard *d = &L.reserved[k];
            struct pool_rep rr = {.seg = d->seg, .handle = d->handle};
            pool__discard_add(p, &rr, d->size, d->release_at);
        }
        if (!L.r.failed)
            snap_account(p);
        meta->objects = loaded;
    }
    cm_free(L.reserved);
    cm_free(L.ids);
    cm_free(L.seg_slot);
    cm_free(L.spans);
    return L.r.failed ? -CM_ECORRUPT : 0;
}
