/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bitmap commands over string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and
 * BITFIELD_RO, with Redis 7.0's semantics and errors. Bit 0 is the most significant bit of the
 * first byte. Writes grow the string with zero bytes through the string read-modify-write
 * (srv_string.h), so they respect --memory like SETRANGE; reads of big values pin the value and
 * scan it without the shard lock.
 *
 * DESIGN. BITFIELD runs its operations twice: a dry run in plan() on the old value plus a small
 * overlay of the bytes it writes (so it knows the replies and whether anything changes before
 * committing), then build() copies the old value and applies the overlay. That keeps the
 * read-modify-write contract (plan may run again if the key changes) and lets a BITFIELD that
 * changes nothing leave the key untouched, as Redis does.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_db.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"
#include "server/srv_string.h"

#include "common/cm_mem.h"
#include "common/cm_util.h"
#include "redis-compat/resp_write.h"

#include <stdint.h>
#include <string.h>

#define SRV_ERR_BIT_OFFSET "ERR bit offset is not an integer or out of range"
#define SRV_ERR_BIT_VALUE  "ERR bit is not an integer or out of range"
#define SRV_ERR_BF_TYPE                                                                         \
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but " \
    "i64 is."

/* ---------------------------------------------------------------- argument helpers */

/*
 * Parses argument i as a bit offset. With bits > 0 (BITFIELD) the form "#n" means n * bits.
 * The offset must address a byte below proto-max-bulk-len. Returns 0 or -1 (replied).
 */
static int srv_bit_offset(struct srv_client *c, int i, int bits, uint64_t *out) {
    const struct srv_arg *a = &c->argv[i];
    size_t skip = (bits > 0 && a->len > 0 && a->p[0] == '#') ? 1 : 0;
    long long v;
    if (cm_str2ll(a->p + skip, a->len - skip, &v) != 0) {
        srv_reply_error(c, SRV_ERR_BIT_OFFSET);
        return -1;
    }
    if (skip) /* wraps on overflow and is then rejected as negative, like Redis */
        v = (long long)((unsigned long long)v * (unsigned long long)bits);
    if (v < 0 || (v >> 3) >= srv_cfg.proto_max_bulk_len) {
        srv_reply_error(c, SRV_ERR_BIT_OFFSET);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* Parses argument i as BIT or BYTE (case-insensitive). Returns 0 or -1 (syntax error replied). */
static int srv_bit_unit(struct srv_client *c, int i, int *isbit) {
    if (srv_arg_is(c, i, "bit")) {
        *isbit = 1;
    } else if (srv_arg_is(c, i, "byte")) {
        *isbit = 0;
    } else {
        srv_reply_syntax_error(c);
        return -1;
    }
    return 0;
}

/* Clamps [*start, *end] (negative counts from the end) to total units. Returns 0 when empty. */
static int srv_bit_clamp(long long total, long long *start, long long *end) {
    if (*start < 0)
        *start += total;
    if (*end < 0)
        *end += total;
    if (*start < 0)
        *start = 0;
    if (*end < 0)
        *end = 0;
    if (*end >= total)
        *end = total - 1;
    return *start <= *end;
}

/* Mask of the bits of a byte at or after bit position s (0 = most significant). */
static unsigned char srv_mask_from(uint64_t s) {
    return (unsigned char)(0xffu >> (s & 7));
}

/* Mask of the bits of a byte at or before bit position e. */
static unsigned char srv_mask_upto(uint64_t e) {
    return (unsigned char)(0xffu << (7 - (e & 7)));
}

/* ---------------------------------------------------------------- counting and searching */

static uint64_t srv_popcount_bytes(const unsigned char *p, size_t n) {
    uint64_t count = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        count += (uint64_t)__builtin_popcountll(w);
    }
    for (; i < n; i++)
        count += (uint64_t)__builtin_popcount(p[i]);
    return count;
}

/* Number of set bits in bit positions [s, e] of p. */
static uint64_t srv_popcount_range(const unsigned char *p, uint64_t s, uint64_t e) {
    uint64_t sb = s >> 3, eb = e >> 3;
    unsigned char first = srv_mask_from(s), last = srv_mask_upto(e);
    if (sb == eb)
        return (uint64_t)__builtin_popcount(p[sb] & first & last);
    return (uint64_t)__builtin_popcount(p[sb] & first) +
           (uint64_t)__builtin_popcount(p[eb] & last) +
           srv_popcount_bytes(p + sb + 1, (size_t)(eb - sb - 1));
}

/* Position of the first bit equal to bit in bit positions [s, e] of p, or -1. */
static long long srv_find_bit(const unsigned char *p, uint64_t s, uint64_t e, int bit) {
    uint64_t sb = s >> 3, eb = e >> 3;
    uint64_t skip_word = bit ? 0 : UINT64_MAX;
    for (uint64_t i = sb; i <= eb; i++) {
        /* Whole words that cannot hold the bit are skipped eight bytes at a time. */
        while (i > sb && i + 8 <= eb) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w != skip_word)
                break;
            i += 8;
        }
        unsigned mask = 0xffu;
        if (i == sb)
            mask &= srv_mask_from(s);
        if (i == eb)
            mask &= srv_mask_upto(e);
        unsigned v = (bit ? p[i] : (unsigned char)~p[i]) & mask;
        if (v)
            return (long long)(i * 8 + (uint64_t)(__builtin_clz(v) - 24));
    }
    return -1;
}

/* ---------------------------------------------------------------- SETBIT, GETBIT */

struct srv_setbit_arg {
    uint64_t offset;
    int on;
    int old; /* the bit before the command (the reply) */
};

static long long srv_setbit_plan(struct srv_client *c, const char *old, size_t oldlen, int exists,
                                 void *arg) {
    struct srv_setbit_arg *a = arg;
    uint64_t byte = a->offset >> 3;
    (void)c;
    a->old = byte < oldlen ? ((unsigned char)old[byte] >> (7 - (a->offset & 7))) & 1 : 0;
    if (exists && byte < oldlen && a->old == a->on)
        return -2; /* nothing changes: the key is not touched */
    return (long long)(byte + 1 > oldlen ? byte + 1 : oldlen);
}

static void srv_setbit_build(char *dst, const char *old, size_t oldlen, size_t newlen, void *arg) {
    struct srv_setbit_arg *a = arg;
    if (old && dst != old)
        memcpy(dst, old, oldlen);
    if (newlen > oldlen)
        memset(dst + oldlen, 0, newlen - oldlen);
    unsigned char bit = (unsigned char)(0x80u >> (a->offset & 7));
    unsigned char *b = (unsigned char *)dst + (a->offset >> 3);
    *b = a->on ? (unsigned char)(*b | bit) : (unsigned char)(*b & ~bit);
}

void srv_setbit_command(struct srv_client *c) {
    struct srv_setbit_arg a = {0};
    long long on;
    if (srv_bit_offset(c, 2, 0, &a.offset) < 0 || srv_arg_ll(c, 3, &on, SRV_ERR_BIT_VALUE) < 0)
        return;
    if (on != 0 && on != 1) {
        srv_reply_error(c, SRV_ERR_BIT_VALUE);
        return;
    }
    a.on = (int)on;
    struct srv_rmw rmw = {srv_setbit_plan, srv_setbit_build, &a, 0, 1};
    size_t oldlen;
    long long rc = srv__rmw_run(c, &rmw, &oldlen);
    if (rc >= 0) /* -2: the bit already had that value, no event (as Redis 7.0) */
        srv_notify(SRV_NOTIFY_STRING, "setbit", c->argv[1].p, c->argv[1].len);
    if (rc != -1)
        resp_add_int(&c->out, a.old);
}

void srv_getbit_command(struct srv_client *c) {
    uint64_t offset;
    if (srv_bit_offset(c, 2, 0, &offset) < 0)
        return;
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    if (o && o->type != SRV_TYPE_STRING) {
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
    } else {
        int bit = 0;
        if (o && (offset >> 3) < o->vlen)
            bit = ((unsigned char)srv_obj_val(o)[offset >> 3] >> (7 - (offset & 7))) & 1;
        resp_add_int(&c->out, bit);
    }
    srv_db_unlock(&r);
    if (!o)
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[1].p, c->argv[1].len);
}

/* ---------------------------------------------------------------- BITCOUNT, BITPOS */

/*
 * Looks up argv[1] for a bit read. Returns the pinned string object (release with
 * srv_obj_unref), or NULL when the key is missing (*missing = 1) or holds another type
 * (WRONGTYPE replied, *missing = 0).
 */
static struct srv_obj *srv_bit_read_key(struct srv_client *c, int *missing) {
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    *missing = o == NULL;
    if (o && o->type != SRV_TYPE_STRING) {
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
        o = NULL;
    } else if (o) {
        srv_obj_ref(o); /* pinned values are never modified in place */
    }
    srv_db_unlock(&r);
    if (*missing)
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[1].p, c->argv[1].len);
    return o;
}

/*
 * BITCOUNT's range arguments for a string of len bytes: sets the bit range [*s, *e] and returns
 * 1, returns 0 for an empty range (reply 0), -1 on error (replied).
 */
static int srv_bitcount_range(struct srv_client *c, long long len, uint64_t *s, uint64_t *e) {
    long long start = 0, end = len - 1;
    int isbit = 0;
    if (c->argc == 4 || c->argc == 5) {
        if (srv_arg_ll(c, 2, &start, NULL) < 0 || srv_arg_ll(c, 3, &end, NULL) < 0)
            return -1;
        if (start < 0 && end < 0 && start > end)
            return 0;
        if (c->argc == 5 && srv_bit_unit(c, 4, &isbit) < 0)
            return -1;
        if (!srv_bit_clamp(isbit ? len * 8 : len, &start, &end))
            return 0;
    } else if (c->argc != 2) {
        srv_reply_syntax_error(c);
        return -1;
    }
    if (start > end)
        return 0;
    *s = isbit ? (uint64_t)start : (uint64_t)start * 8;
    *e = isbit ? (uint64_t)end : (uint64_t)end * 8 + 7;
    return 1;
}

void srv_bitcount_command(struct srv_client *c) {
    int missing;
    struct srv_obj *o = srv_bit_read_key(c, &missing);
    if (!o) {
        if (missing)
            resp_add_int(&c->out, 0);
        return;
    }
    uint64_t s, e;
    int rc = srv_bitcount_range(c, (long long)o->vlen, &s, &e);
    if (rc == 0)
        resp_add_int(&c->out, 0);
    else if (rc > 0)
        resp_add_int(&c->out, (long long)srv_popcount_range((unsigned char *)srv_obj_val(o), s, e));
    srv_obj_unref(o);
}

/*
 * BITPOS's range arguments (argv[3..5]) for a string of len bytes: sets [*s, *e] in bits and
 * *end_given. Returns 1, 0 for an empty range (reply -1), -1 on error (replied).
 */
static int srv_bitpos_range(struct srv_client *c, long long len, uint64_t *s, uint64_t *e,
                            int *end_given) {
    long long start = 0, end = len - 1;
    int isbit = 0;
    *end_given = 0;
    if (c->argc >= 4 && c->argc <= 6) {
        if (srv_arg_ll(c, 3, &start, NULL) < 0)
            return -1;
        if (c->argc == 6 && srv_bit_unit(c, 5, &isbit) < 0)
            return -1;
        if (c->argc >= 5) {
            if (srv_arg_ll(c, 4, &end, NULL) < 0)
                return -1;
            *end_given = 1;
        } else {
            end = isbit ? len * 8 + 7 : len - 1;
        }
        if (!srv_bit_clamp(isbit ? len * 8 : len, &start, &end))
            return 0;
    } else if (c->argc != 3) {
        srv_reply_syntax_error(c);
        return -1;
    }
    if (start > end)
        return 0;
    *s = isbit ? (uint64_t)start : (uint64_t)start * 8;
    *e = isbit ? (uint64_t)end : (uint64_t)end * 8 + 7;
    return 1;
}

void srv_bitpos_command(struct srv_client *c) {
    long long bit;
    if (srv_arg_ll(c, 2, &bit, NULL) < 0)
        return;
    if (bit != 0 && bit != 1) {
        srv_reply_error(c, "ERR The bit argument must be 1 or 0.");
        return;
    }
    int missing;
    struct srv_obj *o = srv_bit_read_key(c, &missing);
    if (!o) {
        if (missing) /* an absent key is an infinite run of zero bits */
            resp_add_int(&c->out, bit ? -1 : 0);
        return;
    }
    uint64_t s, e;
    int end_given;
    int rc = srv_bitpos_range(c, (long long)o->vlen, &s, &e, &end_given);
    if (rc == 0) {
        resp_add_int(&c->out, -1);
    } else if (rc > 0) {
        long long pos = srv_find_bit((unsigned char *)srv_obj_val(o), s, e, (int)bit);
        /* Looking for a clear bit without an explicit end, the string continues with zeros. */
        if (pos < 0 && bit == 0 && !end_given)
            pos = (long long)e + 1;
        resp_add_int(&c->out, pos);
    }
    srv_obj_unref(o);
}

/* ---------------------------------------------------------------- BITOP */

enum srv_bitop { SRV_BITOP_AND, SRV_BITOP_OR, SRV_BITOP_XOR, SRV_BITOP_NOT };

/* Combines the n sources into res (maxlen bytes); missing sources are NULL (empty). */
static void srv_bitop_compute(enum srv_bitop op, struct srv_obj **src, int n, unsigned char *res,
                              size_t maxlen) {
    size_t len0 = src[0] ? src[0]->vlen : 0;
    if (len0)
        memcpy(res, srv_obj_val(src[0]), len0);
    memset(res + len0, 0, maxlen - len0);
    if (op == SRV_BITOP_NOT) {
        for (size_t j = 0; j < maxlen; j++)
            res[j] = (unsigned char)~res[j];
        return;
    }
    for (int i = 1; i < n; i++) {
        size_t len = src[i] ? src[i]->vlen : 0;
        const unsigned char *p = len ? (const unsigned char *)srv_obj_val(src[i]) : NULL;
        if (op == SRV_BITOP_AND) {
            for (size_t j = 0; j < len; j++)
                res[j] &= p[j];
            memset(res + len, 0, maxlen - len); /* AND with the zero padding */
        } else if (op == SRV_BITOP_OR) {
            for (size_t j = 0; j < len; j++)
                res[j] |= p[j];
        } else {
            for (size_t j = 0; j < len; j++)
                res[j] ^= p[j];
        }
    }
}

/* Stores o (owned) under key, replacing any value and TTL; sends "set". */
static void srv_bitop_store(const struct srv_arg *key, struct srv_obj *o) {
    struct srv_db_ref r;
    srv_db_lock(&r, o->key, o->klen);
    struct srv_obj *old = srv_db_find(&r, srv_now_ms());
    if (old)
        srv_db_replace(&r, old, o);
    else
        srv_db_insert(&r, o);
    srv_db_unlock(&r);
    srv_notify(SRV_NOTIFY_STRING, "set", key->p, key->len);
}

/* Deletes key (BITOP with only empty sources); "del" when it existed. */
static void srv_bitop_delete(const struct srv_arg *key) {
    struct srv_db_ref r;
    srv_db_lock(&r, key->p, key->len);
    struct srv_obj *old = srv_db_find(&r, srv_now_ms());
    if (old)
        srv_db_unlink(&r, old);
    srv_db_unlock(&r);
    if (old)
        srv_notify(SRV_NOTIFY_GENERIC, "del", key->p, key->len);
}

/* Pins the n source keys from argv[3]. Returns 0, or -1 after WRONGTYPE (nothing pinned). */
static int srv_bitop_sources(struct srv_client *c, struct srv_obj **src, int n) {
    int64_t now = srv_now_ms();
    for (int i = 0; i < n; i++) {
        struct srv_db_ref r;
        srv_db_lock(&r, c->argv[3 + i].p, c->argv[3 + i].len);
        struct srv_obj *o = srv_db_find(&r, now);
        int wrong = o && o->type != SRV_TYPE_STRING;
        if (o && !wrong)
            srv_obj_ref(o);
        srv_db_unlock(&r);
        if (!o)
            srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[3 + i].p, c->argv[3 + i].len);
        if (wrong) {
            for (int k = 0; k < i; k++)
                if (src[k])
                    srv_obj_unref(src[k]);
            srv_reply_error(c, SRV_ERR_WRONGTYPE);
            return -1;
        }
        src[i] = o;
    }
    return 0;
}

void srv_bitop_command(struct srv_client *c) {
    static const char *const names[] = {"and", "or", "xor", "not"};
    int op = -1;
    for (int i = 0; i < 4; i++)
        if (srv_arg_is(c, 1, names[i]))
            op = i;
    if (op < 0) {
        srv_reply_syntax_error(c);
        return;
    }
    if (op == SRV_BITOP_NOT && c->argc != 4) {
        srv_reply_error(c, "ERR BITOP NOT must be called with a single source key.");
        return;
    }
    int n = c->argc - 3;
    struct srv_obj **src = cm_calloc((size_t)n, sizeof(*src));
    if (srv_bitop_sources(c, src, n) < 0) {
        cm_free(src);
        return;
    }
    size_t maxlen = 0;
    for (int i = 0; i < n; i++)
        if (src[i] && src[i]->vlen > maxlen)
            maxlen = src[i]->vlen;
    const struct srv_arg *dst = &c->argv[2];
    struct srv_obj *res = NULL;
    int rc = 0;
    if (maxlen)
        rc = srv_obj_create(dst->p, dst->len, maxlen, maxlen, &res);
    if (rc == 0 && res)
        srv_bitop_compute((enum srv_bitop)op, src, n, (unsigned char *)srv_obj_val(res), maxlen);
    for (int i = 0; i < n; i++)
        if (src[i])
            srv_obj_unref(src[i]);
    cm_free(src);
    if (rc < 0) {
        srv_reply_alloc_error(c, rc);
        return;
    }
    if (res)
        srv_bitop_store(dst, res);
    else
        srv_bitop_delete(dst);
    resp_add_int(&c->out, (long long)maxlen);
}

/* ---------------------------------------------------------------- BITFIELD */

enum srv_bf_opcode { SRV_BF_GET, SRV_BF_SET, SRV_BF_INCRBY };
enum srv_bf_overflow { SRV_BF_WRAP, SRV_BF_SAT, SRV_BF_FAIL };

struct srv_bf_op {
    uint64_t offset;
    int64_t value; /* SET value or INCRBY increment */
    uint8_t opcode;
    uint8_t overflow;
    uint8_t bits;
    uint8_t sign;
};

struct srv_bf_result {
    long long value;
    int null; /* OVERFLOW FAIL stopped the operation */
};

/*
 * The bytes a BITFIELD dry run wrote live in an open-addressing table of uint64_t slots:
 * 0 is empty, otherwise (byte index + 1) << 8 | byte value.
 */
#define SRV_BF_SLOT_IDX(s) (((s) >> 8) - 1)
#define SRV_BF_SLOT_VAL(s) ((unsigned char)((s)&0xffu))

struct srv_bf {
    struct srv_bf_op *ops;
    int nops;
    uint64_t highest; /* highest bit any SET/INCRBY writes */
    int writes;       /* number of SET/INCRBY operations */
    struct srv_bf_result *res;
    uint64_t *slots;          /* the overlay (write path only) */
    size_t mask;              /* slots - 1, a power of two minus one */
    const unsigned char *old; /* the value under the overlay */
    size_t oldlen;
};

static size_t srv_bf_slot_of(const struct srv_bf *bf, uint64_t idx) {
    uint64_t h = idx * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h ^ (h >> 29)) & bf->mask;
    while (bf->slots[i] && SRV_BF_SLOT_IDX(bf->slots[i]) != idx)
        i = (i + 1) & bf->mask;
    return i;
}

/* Byte idx as the operations so far left it (zero beyond the old value). */
static unsigned char srv_bf_byte(const struct srv_bf *bf, uint64_t idx) {
    if (bf->slots) {
        uint64_t s = bf->slots[srv_bf_slot_of(bf, idx)];
        if (s)
            return SRV_BF_SLOT_VAL(s);
    }
    return idx < bf->oldlen ? bf->old[idx] : 0;
}

static void srv_bf_put(struct srv_bf *bf, uint64_t idx, unsigned char v) {
    bf->slots[srv_bf_slot_of(bf, idx)] = (idx + 1) << 8 | v;
}

/* Reads the bits-wide unsigned field at bit offset off (most significant bit first). */
static uint64_t srv_bf_get_raw(const struct srv_bf *bf, uint64_t off, unsigned bits) {
    unsigned char buf[9];
    uint64_t first = off >> 3;
    unsigned nbytes = (unsigned)(((off + bits - 1) >> 3) - first + 1);
    for (unsigned i = 0; i < nbytes; i++)
        buf[i] = srv_bf_byte(bf, first + i);
    uint64_t v = 0;
    for (unsigned j = 0; j < bits; j++) {
        uint64_t b = (off & 7) + j;
        v = (v << 1) | ((buf[b >> 3] >> (7 - (b & 7))) & 1u);
    }
    return v;
}

/* Writes the low bits of v as the field at bit offset off into the overlay. */
static void srv_bf_set_raw(struct srv_bf *bf, uint64_t off, unsigned bits, uint64_t v) {
    unsigned char buf[9];
    uint64_t first = off >> 3;
    unsigned nbytes = (unsigned)(((off + bits - 1) >> 3) - first + 1);
    for (unsigned i = 0; i < nbytes; i++)
        buf[i] = srv_bf_byte(bf, first + i);
    for (unsigned j = 0; j < bits; j++) {
        uint64_t b = (off & 7) + j;
        unsigned char m = (unsigned char)(0x80u >> (b & 7));
        if ((v >> (bits - 1 - j)) & 1u)
            buf[b >> 3] |= m;
        else
            buf[b >> 3] &= (unsigned char)~m;
    }
    for (unsigned i = 0; i < nbytes; i++)
        srv_bf_put(bf, first + i, buf[i]);
}

static int64_t srv_bf_sign_extend(uint64_t v, unsigned bits) {
    if (bits < 64 && (v & (1ull << (bits - 1))))
        v |= UINT64_MAX << bits;
    return (int64_t)v;
}

/*
 * Overflow check of value + incr as an unsigned bits-wide field, with Redis's arithmetic.
 * Returns 0 when it fits, otherwise nonzero with the WRAP or SAT result in *limit.
 */
static int srv_bf_overflow_u(uint64_t value, int64_t incr, unsigned bits, int ow, uint64_t *limit) {
    uint64_t max = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    int64_t maxincr = (int64_t)(max - value);
    int64_t minincr = (int64_t)(0 - value);
    int over = value > max || (incr > 0 && incr > maxincr);
    int under = !over && incr < 0 && incr < minincr;
    if (!over && !under)
        return 0;
    if (ow == SRV_BF_WRAP)
        *limit = (value + (uint64_t)incr) & (bits == 64 ? UINT64_MAX : max);
    else if (ow == SRV_BF_SAT)
        *limit = over ? max : 0;
    return 1;
}

/* As srv_bf_overflow_u for a signed (two's complement) field. */
static int srv_bf_overflow_s(int64_t value, int64_t incr, unsigned bits, int ow, int64_t *limit) {
    int64_t max = bits == 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1);
    int64_t min = -max - 1;
    int64_t maxincr = (int64_t)((uint64_t)max - (uint64_t)value);
    int64_t minincr = (int64_t)((uint64_t)min - (uint64_t)value);
    int over =
        value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr);
    int under = !over && (value < min || (bits != 64 && incr < minincr) ||
                          (value < 0 && incr < 0 && incr < minincr));
    if (!over && !under)
        return 0;
    if (ow == SRV_BF_WRAP) {
        uint64_t sum = (uint64_t)value + (uint64_t)incr;
        *limit = srv_bf_sign_extend(bits == 64 ? sum : sum & ((1ull << bits) - 1), bits);
    } else if (ow == SRV_BF_SAT) {
        *limit = over ? max : min;
    }
    return 1;
}

/*
 * Runs one SET or INCRBY on the overlay; fills *res. Returns 1 when the stored value changed,
 * else 0 (also when OVERFLOW FAIL stopped it).
 */
static int srv_bf_write(struct srv_bf *bf, const struct srv_bf_op *op, struct srv_bf_result *res) {
    uint64_t raw = srv_bf_get_raw(bf, op->offset, op->bits);
    int incr = op->opcode == SRV_BF_INCRBY;
    int over;
    uint64_t newraw;
    if (op->sign) {
        int64_t oldv = srv_bf_sign_extend(raw, op->bits), newv, lim = 0;
        if (incr) {
            over = srv_bf_overflow_s(oldv, op->value, op->bits, op->overflow, &lim);
            newv = over ? lim : (int64_t)((uint64_t)oldv + (uint64_t)op->value);
            res->value = newv;
        } else {
            over = srv_bf_overflow_s(op->value, 0, op->bits, op->overflow, &lim);
            newv = over ? lim : op->value;
            res->value = oldv;
        }
        newraw = (uint64_t)newv;
        res->null = over && op->overflow == SRV_BF_FAIL;
        if (res->null)
            return 0;
        srv_bf_set_raw(bf, op->offset, op->bits, newraw);
        return oldv != newv;
    }
    uint64_t newv, lim = 0;
    if (incr) {
        over = srv_bf_overflow_u(raw, op->value, op->bits, op->overflow, &lim);
        newv = over ? lim : raw + (uint64_t)op->value;
        res->value = (long long)newv;
    } else {
        over = srv_bf_overflow_u((uint64_t)op->value, 0, op->bits, op->overflow, &lim);
        newv = over ? lim : (uint64_t)op->value;
        res->value = (long long)raw;
    }
    res->null = over && op->overflow == SRV_BF_FAIL;
    if (res->null)
        return 0;
    srv_bf_set_raw(bf, op->offset, op->bits, newv);
    return raw != newv;
}

/* Runs every operation on the overlay. Returns the number of writes that changed a field. */
static int srv_bf_run(struct srv_bf *bf) {
    int changes = 0;
    for (int i = 0; i < bf->nops; i++) {
        const struct srv_bf_op *op = &bf->ops[i];
        struct srv_bf_result *res = &bf->res[i];
        if (op->opcode == SRV_BF_GET) {
            uint64_t raw = srv_bf_get_raw(bf, op->offset, op->bits);
            res->value = op->sign ? srv_bf_sign_extend(raw, op->bits) : (long long)raw;
            res->null = 0;
        } else {
            changes += srv_bf_write(bf, op, res);
        }
    }
    return changes;
}

static long long srv_bf_plan(struct srv_client *c, const char *old, size_t oldlen, int exists,
                             void *arg) {
    struct srv_bf *bf = arg;
    (void)c;
    memset(bf->slots, 0, (bf->mask + 1) * sizeof(*bf->slots));
    bf->old = (const unsigned char *)old;
    bf->oldlen = oldlen;
    size_t need = (size_t)(bf->highest >> 3) + 1;
    size_t newlen = exists && oldlen > need ? oldlen : need;
    int dirty = !exists || newlen != oldlen;
    int changes = srv_bf_run(bf);
    if (!dirty && !changes)
        return -2; /* nothing changes: the key is not touched */
    return (long long)newlen;
}

static void srv_bf_build(char *dst, const char *old, size_t oldlen, size_t newlen, void *arg) {
    struct srv_bf *bf = arg;
    if (old && dst != old)
        memcpy(dst, old, oldlen);
    if (newlen > oldlen)
        memset(dst + oldlen, 0, newlen - oldlen);
    for (size_t i = 0; i <= bf->mask; i++)
        if (bf->slots[i])
            dst[SRV_BF_SLOT_IDX(bf->slots[i])] = (char)SRV_BF_SLOT_VAL(bf->slots[i]);
}

/* Parses a bitfield type (i1..i64, u1..u63). Returns 0 or -1 (replied). */
static int srv_bf_type(struct srv_client *c, int i, struct srv_bf_op *op) {
    const struct srv_arg *a = &c->argv[i];
    long long bits;
    if (a->len < 2 || (a->p[0] != 'i' && a->p[0] != 'u') ||
        cm_str2ll(a->p + 1, a->len - 1, &bits) != 0 || bits < 1 ||
        bits > (a->p[0] == 'i' ? 64 : 63)) {
        srv_reply_error(c, SRV_ERR_BF_TYPE);
        return -1;
    }
    op->sign = a->p[0] == 'i';
    op->bits = (uint8_t)bits;
    return 0;
}

/* Parses the subcommands into bf (ops allocated with cm_malloc). Returns 0 or -1 (replied). */
static int srv_bf_parse(struct srv_client *c, struct srv_bf *bf) {
    int ow = SRV_BF_WRAP;
    bf->ops = cm_malloc((size_t)c->argc * sizeof(*bf->ops));
    for (int j = 2; j < c->argc; j++) {
        int rem = c->argc - j - 1;
        struct srv_bf_op op = {0};
        if (srv_arg_is(c, j, "get") && rem >= 2) {
            op.opcode = SRV_BF_GET;
        } else if (srv_arg_is(c, j, "set") && rem >= 3) {
            op.opcode = SRV_BF_SET;
        } else if (srv_arg_is(c, j, "incrby") && rem >= 3) {
            op.opcode = SRV_BF_INCRBY;
        } else if (srv_arg_is(c, j, "overflow") && rem >= 1) {
            j++;
            if (srv_arg_is(c, j, "wrap")) {
                ow = SRV_BF_WRAP;
            } else if (srv_arg_is(c, j, "sat")) {
                ow = SRV_BF_SAT;
            } else if (srv_arg_is(c, j, "fail")) {
                ow = SRV_BF_FAIL;
            } else {
                srv_reply_error(c, "ERR Invalid OVERFLOW type specified");
                return -1;
            }
            continue;
        } else {
            srv_reply_syntax_error(c);
            return -1;
        }
        op.overflow = (uint8_t)ow;
        if (srv_bf_type(c, j + 1, &op) < 0 || srv_bit_offset(c, j + 2, op.bits, &op.offset) < 0)
            return -1;
        if (op.opcode != SRV_BF_GET) {
            long long v;
            if (srv_arg_ll(c, j + 3, &v, NULL) < 0)
                return -1;
            op.value = v;
            bf->writes++;
            if (op.offset + op.bits - 1 > bf->highest)
                bf->highest = op.offset + op.bits - 1;
        }
        bf->ops[bf->nops++] = op;
        j += op.opcode == SRV_BF_GET ? 2 : 3;
    }
    return 0;
}

static void srv_bf_reply(struct srv_client *c, const struct srv_bf *bf) {
    resp_add_array_hdr(&c->out, bf->nops);
    for (int i = 0; i < bf->nops; i++) {
        if (bf->res[i].null)
            resp_add_null(&c->out, c->proto);
        else
            resp_add_int(&c->out, bf->res[i].value);
    }
}

/* BITFIELD with GET operations only: reads under the shard lock, creates nothing. */
static void srv_bf_read(struct srv_client *c, struct srv_bf *bf) {
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    if (o && o->type != SRV_TYPE_STRING) {
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
    } else {
        bf->old = o ? (const unsigned char *)srv_obj_val(o) : NULL;
        bf->oldlen = o ? o->vlen : 0;
        srv_bf_run(bf);
        srv_bf_reply(c, bf);
    }
    srv_db_unlock(&r);
    if (!o)
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[1].p, c->argv[1].len);
}

static void srv_bitfield_generic(struct srv_client *c, int readonly_cmd) {
    struct srv_bf bf = {0};
    if (srv_bf_parse(c, &bf) < 0) {
        cm_free(bf.ops);
        return;
    }
    bf.res = cm_calloc((size_t)(bf.nops ? bf.nops : 1), sizeof(*bf.res));
    if (bf.writes == 0) {
        srv_bf_read(c, &bf);
    } else if (readonly_cmd) {
        srv_reply_error(c, "ERR BITFIELD_RO only supports the GET subcommand");
    } else {
        /* Each write touches at most 9 bytes; keep the overlay at most half full. */
        size_t slots = 16;
        while (slots < (size_t)bf.writes * 18)
            slots *= 2;
        bf.slots = cm_malloc(slots * sizeof(*bf.slots));
        bf.mask = slots - 1;
        struct srv_rmw rmw = {srv_bf_plan, srv_bf_build, &bf, 0, 1};
        size_t oldlen;
        long long rc = srv__rmw_run(c, &rmw, &oldlen);
        if (rc != -1) {
            /* Redis 7.0: "setbit" when the key changed (not -2) through a SET/INCRBY that ran
             * (not failed by OVERFLOW FAIL) */
            int wrote = 0;
            for (int i = 0; i < bf.nops; i++)
                wrote |= bf.ops[i].opcode != SRV_BF_GET && !bf.res[i].null;
            if (wrote && rc >= 0)
                srv_notify(SRV_NOTIFY_STRING, "setbit", c->argv[1].p, c->argv[1].len);
            srv_bf_reply(c, &bf);
        }
        cm_free(bf.slots);
    }
    cm_free(bf.res);
    cm_free(bf.ops);
}

void srv_bitfield_command(struct srv_client *c) {
    srv_bitfield_generic(c, 0);
}

void srv_bitfield_ro_command(struct srv_client *c) {
    srv_bitfield_generic(c, 1);
}
