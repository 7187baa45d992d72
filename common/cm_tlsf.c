/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLSF offset allocator (see cm_tlsf.h).
 *
 * DESIGN: every block, free or allocated, is a 32-byte record in one growable array indexed
 * by handle (index 0 is the nil sentinel). Records link to their physical neighbours and, when
 * free, into a doubly-linked list per size class. Sizes are counted in align units u; class
 * (fl, sl) is fl = 0, sl = u for u < 32, otherwise fl = msb(u) - 4 and sl = the 5 bits below
 * the msb. Allocation rounds u up to the next class boundary so the head of the first
 * non-empty class at or above it always fits (found with two find-first-set operations).
 * Unused records form a free list through next_free, so steady state never calls malloc.
 */
#include "common/fmacros.h"

#include "common/cm_tlsf.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#define CM_TLSF_SL_LOG     5
#define CM_TLSF_SL_COUNT   (1u << CM_TLSF_SL_LOG)
#define CM_TLSF_FL_COUNT   64
#define CM_TLSF_NIL        0u
#define CM_TLSF_LIVE       1u /* size_flags: record describes a block */
#define CM_TLSF_FREE       2u /* size_flags: block is free (on a class list) */
#define CM_TLSF_FLAGS      3u
#define CM_TLSF_EXACT_SCAN 8 /* blocks examined in the request's own class as a last resort */

struct cm_tlsf_rec {
    uint64_t off;        /* offset of the block */
    uint64_t size_flags; /* size in bytes (a multiple of align >= 8) | CM_TLSF_* flags */
    uint32_t prev_phys;  /* neighbour at lower offset, or nil */
    uint32_t next_phys;  /* neighbour at higher offset, or nil */
    uint32_t prev_free;  /* class list links while free; next_free links unused records */
    uint32_t next_free;
};

_Static_assert(sizeof(struct cm_tlsf_rec) == CM_TLSF_RECORD_BYTES, "record size");

struct cm_tlsf {
    uint64_t size;
    uint64_t used;
    uint32_t align_shift;
    uint32_t nallocs;
    uint32_t nfree;
    uint32_t first;      /* record of the block at offset 0 */
    uint32_t rec_cap;    /* records allocated */
    uint32_t rec_hwm;    /* records ever handed out (indexes < rec_hwm were used) */
    uint32_t rec_unused; /* head of the unused-record list */
    uint32_t hint;       /* block of the last cm_tlsf_alloc_at (a start for the next walk) */
    struct cm_tlsf_rec *recs;
    uint64_t fl_bitmap;
    uint32_t sl_bitmap[CM_TLSF_FL_COUNT];
    uint32_t heads[CM_TLSF_FL_COUNT][CM_TLSF_SL_COUNT];
};

static inline uint64_t cm_tlsf_size(const struct cm_tlsf_rec *r) {
    return r->size_flags & ~(uint64_t)CM_TLSF_FLAGS;
}

static inline bool cm_tlsf_is_free(const struct cm_tlsf_rec *r) {
    return (r->size_flags & CM_TLSF_FREE) != 0;
}

/* Class of a size in align units. */
static inline void cm_tlsf_mapping(uint64_t u, unsigned *fl, unsigned *sl) {
    if (u < CM_TLSF_SL_COUNT) {
        *fl = 0;
        *sl = (unsigned)u;
    } else {
        unsigned msb = 63u - (unsigned)__builtin_clzll(u);
        *fl = msb - (CM_TLSF_SL_LOG - 1);
        *sl = (unsigned)(u >> (msb - CM_TLSF_SL_LOG)) - CM_TLSF_SL_COUNT;
    }
}

static uint32_t cm_tlsf_rec_get(struct cm_tlsf *t) {
    uint32_t i = t->rec_unused;
    if (i != CM_TLSF_NIL) {
        t->rec_unused = t->recs[i].next_free;
        return i;
    }
    if (t->rec_hwm == t->rec_cap) {
        if (t->rec_cap >= UINT32_MAX / 2)
            return CM_TLSF_NIL;
        t->rec_cap *= 2;
        t->recs = cm_realloc(t->recs, (size_t)t->rec_cap * sizeof(*t->recs));
    }
    return t->rec_hwm++;
}

static void cm_tlsf_rec_put(struct cm_tlsf *t, uint32_t i) {
    t->recs[i].size_flags = 0;
    t->recs[i].next_free = t->rec_unused;
    t->rec_unused = i;
}

static void cm_tlsf_list_insert(struct cm_tlsf *t, uint32_t i) {
    struct cm_tlsf_rec *r = &t->recs[i];
    unsigned fl, sl;
    cm_tlsf_mapping(cm_tlsf_size(r) >> t->align_shift, &fl, &sl);
    uint32_t head = t->heads[fl][sl];
    r->size_flags |= CM_TLSF_FREE;
    r->prev_free = CM_TLSF_NIL;
    r->next_free = head;
    if (head != CM_TLSF_NIL)
        t->recs[head].prev_free = i;
    t->heads[fl][sl] = i;
    t->sl_bitmap[fl] |= 1u << sl;
    t->fl_bitmap |= 1ull << fl;
    t->nfree++;
}

static void cm_tlsf_list_remove(struct cm_tlsf *t, uint32_t i) {
    struct cm_tlsf_rec *r = &t->recs[i];
    unsigned fl, sl;
    cm_tlsf_mapping(cm_tlsf_size(r) >> t->align_shift, &fl, &sl);
    if (r->prev_free != CM_TLSF_NIL)
        t->recs[r->prev_free].next_free = r->next_free;
    else
        t->heads[fl][sl] = r->next_free;
    if (r->next_free != CM_TLSF_NIL)
        t->recs[r->next_free].prev_free = r->prev_free;
    if (t->heads[fl][sl] == CM_TLSF_NIL) {
        t->sl_bitmap[fl] &= ~(1u << sl);
        if (t->sl_bitmap[fl] == 0)
            t->fl_bitmap &= ~(1ull << fl);
    }
    r->size_flags &= ~(uint64_t)CM_TLSF_FREE;
    r->prev_free = r->next_free = CM_TLSF_NIL;
    t->nfree--;
}

struct cm_tlsf *cm_tlsf_create(uint64_t size, uint32_t align) {
    if (align < 8 || (align & (align - 1)) != 0 || size < align)
        return NULL;
    struct cm_tlsf *t = cm_calloc(1, sizeof(*t));
    t->align_shift = (uint32_t)__builtin_ctz(align);
    t->size = size & ~((uint64_t)align - 1);
    t->rec_cap = 64;
    t->recs = cm_calloc(t->rec_cap, sizeof(*t->recs));
    t->rec_hwm = 1; /* record 0 is the nil sentinel */
    t->first = cm_tlsf_rec_get(t);
    struct cm_tlsf_rec *r = &t->recs[t->first];
    r->off = 0;
    r->size_flags = t->size | CM_TLSF_LIVE;
    cm_tlsf_list_insert(t, t->first);
    return t;
}

void cm_tlsf_destroy(struct cm_tlsf *t) {
    if (!t)
        return;
    cm_free(t->recs);
    cm_free(t);
}

/* Head of the first non-empty class at or above (fl, sl), or nil. */
static uint32_t cm_tlsf_search(const struct cm_tlsf *t, unsigned fl, unsigned sl) {
    if (fl >= CM_TLSF_FL_COUNT)
        return CM_TLSF_NIL;
    uint32_t slmap = t->sl_bitmap[fl] & (~0u << sl);
    if (slmap == 0) {
        if (fl + 1 >= CM_TLSF_FL_COUNT)
            return CM_TLSF_NIL;
        uint64_t flmap = t->fl_bitmap & (~0ull << (fl + 1));
        if (flmap == 0)
            return CM_TLSF_NIL;
        fl = (unsigned)__builtin_ctzll(flmap);
        slmap = t->sl_bitmap[fl];
    }
    return t->heads[fl][__builtin_ctz(slmap)];
}

/* Finds a free block of at least u units: good fit first, then a short exact-class walk. */
static uint32_t cm_tlsf_find(const struct cm_tlsf *t, uint64_t u) {
    unsigned fl, sl;
    uint64_t ur = u;
    if (u >= CM_TLSF_SL_COUNT) {
        unsigned msb = 63u - (unsigned)__builtin_clzll(u);
        ur = u + (1ull << (msb - CM_TLSF_SL_LOG)) - 1;
    }
    cm_tlsf_mapping(ur, &fl, &sl);
    uint32_t i = cm_tlsf_search(t, fl, sl);
    if (i != CM_TLSF_NIL || ur == u)
        return i;
    cm_tlsf_mapping(u, &fl, &sl);
    i = t->heads[fl][sl];
    for (int n = 0; n < CM_TLSF_EXACT_SCAN && i != CM_TLSF_NIL; n++) {
        if ((cm_tlsf_size(&t->recs[i]) >> t->align_shift) >= u)
            return i;
        i = t->recs[i].next_free;
    }
    return CM_TLSF_NIL;
}

uint32_t cm_tlsf_alloc(struct cm_tlsf *t, uint64_t len, uint64_t *offset) {
    uint64_t align = 1ull << t->align_shift;
    if (len > t->size)
        return CM_TLSF_NIL;
    if (len == 0)
        len = align;
    uint64_t req = (len + align - 1) & ~(align - 1);
    uint32_t i = cm_tlsf_find(t, req >> t->align_shift);
    if (i == CM_TLSF_NIL)
        return CM_TLSF_NIL;
    uint64_t bsize = cm_tlsf_size(&t->recs[i]);
    uint32_t rest = CM_TLSF_NIL;
    if (bsize > req) {
        rest = cm_tlsf_rec_get(t); /* may move t->recs: take pointers after this */
        if (rest == CM_TLSF_NIL)
            return CM_TLSF_NIL;
    }
    cm_tlsf_list_remove(t, i);
    struct cm_tlsf_rec *b = &t->recs[i];
    if (rest != CM_TLSF_NIL) {
        struct cm_tlsf_rec *r = &t->recs[rest];
        r->off = b->off + req;
        r->size_flags = (bsize - req) | CM_TLSF_LIVE;
        r->prev_phys = i;
        r->next_phys = b->next_phys;
        if (b->next_phys != CM_TLSF_NIL)
            t->recs[b->next_phys].prev_phys = rest;
        b->next_phys = rest;
        b->size_flags = req | CM_TLSF_LIVE;
        cm_tlsf_list_insert(t, rest);
    }
    t->used += req;
    t->nallocs++;
    *offset = b->off;
    return i;
}

/*
 * Splits the free tail block i (the highest block, free, not listed) at span sp: a free gap
 * before it, the span itself allocated, and the rest as the new tail. Returns the new tail
 * record (nil when the span ends the range) or sets *h to nil when a record can't be had.
 */
static uint32_t cm_tlsf_carve(struct cm_tlsf *t, uint32_t i, uint64_t off, uint64_t len,
                              uint32_t *h) {
    uint64_t end = t->recs[i].off + cm_tlsf_size(&t->recs[i]);
    if (off > t->recs[i].off) { /* leave [tail.off, off) as a free gap */
        uint32_t b = cm_tlsf_rec_get(t);
        if (b == CM_TLSF_NIL)
            return *h = CM_TLSF_NIL;
        t->recs[b] = (struct cm_tlsf_rec){
            .off = off, .size_flags = (end - off) | CM_TLSF_LIVE, .prev_phys = i};
        t->recs[i].size_flags = (off - t->recs[i].off) | CM_TLSF_LIVE;
        t->recs[i].next_phys = b;
        cm_tlsf_list_insert(t, i);
        i = b;
    }
    t->used += len;
    t->nallocs++;
    *h = i;
    if (off + len == end)
        return CM_TLSF_NIL;
    uint32_t rest = cm_tlsf_rec_get(t);
    if (rest == CM_TLSF_NIL)
        return *h = CM_TLSF_NIL;
    t->recs[rest] = (struct cm_tlsf_rec){
        .off = off + len, .size_flags = (end - off - len) | CM_TLSF_LIVE, .prev_phys = i};
    t->recs[i].size_flags = len | CM_TLSF_LIVE;
    t->recs[i].next_phys = rest;
    return rest;
}

struct cm_tlsf *cm_tlsf_build(uint64_t size, uint32_t align, const struct cm_tlsf_span *spans,
                              uint32_t n, uint32_t *handles, int *err) {
    struct cm_tlsf *t = cm_tlsf_create(size, align);
    if (!t) {
        *err = -EINVAL;
        return NULL;
    }
    uint64_t mask = (uint64_t)align - 1, cursor = 0;
    uint32_t tail = t->first;
    cm_tlsf_list_remove(t, tail); /* the tail stays off the lists while carving */
    for (uint32_t k = 0; k < n; k++) {
        uint64_t len = spans[k].len ? (spans[k].len + mask) & ~mask : align;
        if ((spans[k].off & mask) != 0 || spans[k].off < cursor || tail == CM_TLSF_NIL ||
            spans[k].len > t->size || spans[k].off > t->size - len) {
            cm_tlsf_destroy(t);
            *err = (spans[k].off & mask) != 0 ? -EINVAL : -CM_ECORRUPT;
            return NULL;
        }
        tail = cm_tlsf_carve(t, tail, spans[k].off, len, &handles[k]);
        if (handles[k] == CM_TLSF_NIL) {
            cm_tlsf_destroy(t);
            *err = -ENOMEM;
            return NULL;
        }
        cursor = spans[k].off + len;
    }
    if (tail != CM_TLSF_NIL)
        cm_tlsf_list_insert(t, tail);
    *err = 0;
    return t;
}

/* The block that contains offset off (< t->size), walking from the hint. */
static uint32_t cm_tlsf_block_at(const struct cm_tlsf *t, uint64_t off) {
    uint32_t i = t->hint;
    if (i == CM_TLSF_NIL || i >= t->rec_hwm || !(t->recs[i].size_flags & CM_TLSF_LIVE))
        i = t->first;
    while (t->recs[i].off > off)
        i = t->recs[i].prev_phys;
    while (off - t->recs[i].off >= cm_tlsf_size(&t->recs[i]))
        i = t->recs[i].next_phys;
    return i;
}

/* Links record n, a new live block [off, off + size), right after block i. */
static void cm_tlsf_link_after(struct cm_tlsf *t, uint32_t i, uint32_t n, uint64_t off,
                               uint64_t size) {
    struct cm_tlsf_rec *b = &t->recs[i], *r = &t->recs[n];
    r->off = off;
    r->size_flags = size | CM_TLSF_LIVE;
    r->prev_phys = i;
    r->next_phys = b->next_phys;
    r->prev_free = r->next_free = CM_TLSF_NIL;
    if (b->next_phys != CM_TLSF_NIL)
        t->recs[b->next_phys].prev_phys = n;
    b->next_phys = n;
}

uint32_t cm_tlsf_alloc_at(struct cm_tlsf *t, uint64_t offset, uint64_t len) {
    uint64_t align = 1ull << t->align_shift;
    if (len == 0)
        len = align;
    uint64_t req = (len + align - 1) & ~(align - 1);
    if ((offset & (align - 1)) != 0 || offset >= t->size || req > t->size - offset)
        return CM_TLSF_NIL;
    uint32_t i = cm_tlsf_block_at(t, offset);
    uint64_t bo = t->recs[i].off, bsize = cm_tlsf_size(&t->recs[i]);
    if (!cm_tlsf_is_free(&t->recs[i]) || offset + req > bo + bsize)
        return CM_TLSF_NIL;
    uint32_t mid = CM_TLSF_NIL, rest = CM_TLSF_NIL;
    if (offset > bo && (mid = cm_tlsf_rec_get(t)) == CM_TLSF_NIL)
        return CM_TLSF_NIL;
    if (offset + req < bo + bsize && (rest = cm_tlsf_rec_get(t)) == CM_TLSF_NIL) {
        if (mid != CM_TLSF_NIL)
            cm_tlsf_rec_put(t, mid);
        return CM_TLSF_NIL;
    }
    cm_tlsf_list_remove(t, i);
    uint32_t h = i;
    if (mid != CM_TLSF_NIL) { /* i keeps [bo, offset) and stays free */
        t->recs[i].size_flags = (offset - bo) | CM_TLSF_LIVE;
        cm_tlsf_link_after(t, i, mid, offset, req);
        cm_tlsf_list_insert(t, i);
        h = mid;
    } else {
        t->recs[i].size_flags = req | CM_TLSF_LIVE;
    }
    if (rest != CM_TLSF_NIL) {
        cm_tlsf_link_after(t, h, rest, offset + req, bo + bsize - offset - req);
        cm_tlsf_list_insert(t, rest);
    }
    t->used += req;
    t->nallocs++;
    t->hint = h;
    return h;
}

static bool cm_tlsf_valid_alloc(const struct cm_tlsf *t, uint32_t h) {
    return h != CM_TLSF_NIL && h < t->rec_hwm &&
           (t->recs[h].size_flags & CM_TLSF_FLAGS) == CM_TLSF_LIVE;
}

/* Absorbs next (a free block right after i) into i and releases next's record. */
static void cm_tlsf_absorb(struct cm_tlsf *t, uint32_t i, uint32_t next) {
    struct cm_tlsf_rec *b = &t->recs[i], *n = &t->recs[next];
    b->size_flags += cm_tlsf_size(n);
    b->next_phys = n->next_phys;
    if (n->next_phys != CM_TLSF_NIL)
        t->recs[n->next_phys].prev_phys = i;
    cm_tlsf_rec_put(t, next);
}

void cm_tlsf_free(struct cm_tlsf *t, uint32_t handle) {
    if (!cm_tlsf_valid_alloc(t, handle))
        return;
    uint32_t i = handle;
    struct cm_tlsf_rec *b = &t->recs[i];
    t->used -= cm_tlsf_size(b);
    t->nallocs--;
    uint32_t next = b->next_phys, prev = b->prev_phys;
    if (next != CM_TLSF_NIL && cm_tlsf_is_free(&t->recs[next])) {
        cm_tlsf_list_remove(t, next);
        cm_tlsf_absorb(t, i, next);
    }
    if (prev != CM_TLSF_NIL && cm_tlsf_is_free(&t->recs[prev])) {
        cm_tlsf_list_remove(t, prev);
        cm_tlsf_absorb(t, prev, i);
        i = prev;
    }
    cm_tlsf_list_insert(t, i);
}

uint64_t cm_tlsf_block_size(const struct cm_tlsf *t, uint32_t handle) {
    return cm_tlsf_valid_alloc(t, handle) ? cm_tlsf_size(&t->recs[handle]) : 0;
}

uint64_t cm_tlsf_block_offset(const struct cm_tlsf *t, uint32_t handle) {
    return cm_tlsf_valid_alloc(t, handle) ? t->recs[handle].off : UINT64_MAX;
}

void cm_tlsf_get_stats(const struct cm_tlsf *t, struct cm_tlsf_stats *st) {
    st->size = t->size;
    st->used = t->used;
    st->free = t->size - t->used;
    st->nallocs = t->nallocs;
    st->nfree_blocks = t->nfree;
    st->largest_free = 0;
    if (t->fl_bitmap != 0) {
        unsigned fl = 63u - (unsigned)__builtin_clzll(t->fl_bitmap);
        unsigned sl = 31u - (unsigned)__builtin_clz(t->sl_bitmap[fl]);
        for (uint32_t i = t->heads[fl][sl]; i != CM_TLSF_NIL; i = t->recs[i].next_free)
            if (cm_tlsf_size(&t->recs[i]) > st->largest_free)
                st->largest_free = cm_tlsf_size(&t->recs[i]);
    }
    st->fragmentation = st->free ? 1.0 - (double)st->largest_free / (double)st->free : 0.0;
}

static int cm_tlsf_check_lists(const struct cm_tlsf *t) {
    uint32_t listed = 0;
    for (unsigned fl = 0; fl < CM_TLSF_FL_COUNT; fl++) {
        if (((t->fl_bitmap >> fl) & 1) != (t->sl_bitmap[fl] != 0))
            return -CM_ECORRUPT;
        for (unsigned sl = 0; sl < CM_TLSF_SL_COUNT; sl++) {
            uint32_t i = t->heads[fl][sl], prev = CM_TLSF_NIL;
            if (((t->sl_bitmap[fl] >> sl) & 1) != (i != CM_TLSF_NIL))
                return -CM_ECORRUPT;
            for (; i != CM_TLSF_NIL; prev = i, i = t->recs[i].next_free) {
                const struct cm_tlsf_rec *r = &t->recs[i];
                unsigned f, s;
                if (i >= t->rec_hwm || (r->size_flags & CM_TLSF_FLAGS) != CM_TLSF_FLAGS ||
                    r->prev_free != prev || ++listed > t->nfree)
                    return -CM_ECORRUPT;
                cm_tlsf_mapping(cm_tlsf_size(r) >> t->align_shift, &f, &s);
                if (f != fl || s != sl)
                    return -CM_ECORRUPT;
            }
        }
    }
    return listed == t->nfree ? 0 : -CM_ECORRUPT;
}

int cm_tlsf_check(const struct cm_tlsf *t) {
    uint64_t off = 0, used = 0, mask = (1ull << t->align_shift) - 1;
    uint32_t nalloc = 0, nfree = 0, prev = CM_TLSF_NIL, steps = 0;
    bool prev_free = false;
    for (uint32_t i = t->first; i != CM_TLSF_NIL; prev = i, i = t->recs[i].next_phys) {
        const struct cm_tlsf_rec *r = &t->recs[i];
        uint64_t sz = cm_tlsf_size(r);
        if (i >= t->rec_hwm || ++steps >= t->rec_hwm || !(r->size_flags & CM_TLSF_LIVE) ||
            r->prev_phys != prev || r->off != off || sz == 0 || (sz & mask) != 0 ||
            sz > t->size - off)
            return -CM_ECORRUPT;
        if (cm_tlsf_is_free(r)) {
            if (prev_free)
                return -CM_ECORRUPT; /* two free neighbours were not merged */
            nfree++;
        } else {
            nalloc++;
            used += sz;
        }
        prev_free = cm_tlsf_is_free(r);
        off += sz;
    }
    if (off != t->size || used != t->used || nalloc != t->nallocs || nfree != t->nfree)
        return -CM_ECORRUPT;
    /* Every record is either in the block chain or on the unused list. */
    uint32_t unused = 0;
    for (uint32_t i = t->rec_unused; i != CM_TLSF_NIL; i = t->recs[i].next_free)
        if (i >= t->rec_hwm || t->recs[i].size_flags != 0 || ++unused > t->rec_hwm)
            return -CM_ECORRUPT;
    if (unused + steps + 1 != t->rec_hwm)
        return -CM_ECORRUPT;
    return cm_tlsf_check_lists(t);
}
