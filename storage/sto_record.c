/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Record and index-entry codec of the SSD tier and CRC-32C (sto_record.h). Pure: no I/O, no
 * allocation. CRC-32C uses the SSE4.2 crc32 instruction when the CPU has it and a
 * slicing-by-8 table otherwise.
 */
#include "common/fmacros.h"

#include "storage/sto_record.h"

#include "common/cm_errno.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

/* Header offsets of a record (STO_REC_HDR bytes). */
enum {
    REC_MAGIC = 0,
    REC_VERSION = 4,
    REC_HDRSIZE = 6,
    REC_FLAGS = 8,
    REC_KEYLEN = 10,
    REC_VALOFF = 12,
    REC_VALLEN = 16,
    REC_RECLEN = 24,
    REC_SEQ = 32,
    REC_VALCRC = 40,
    REC_HDRCRC = 44,
};

/* Offsets of an index entry (STO_ENT_HDR bytes). */
enum {
    ENT_MAGIC = 0,
    ENT_FLAGS = 4,
    ENT_KEYLEN = 6,
    ENT_VALOFF = 8,
    ENT_VALCRC = 12,
    ENT_VALLEN = 16,
    ENT_RECLEN = 24,
    ENT_SEQ = 32,
    ENT_RECOFF = 40,
    ENT_RESERVED = 48,
    ENT_CRC = 60,
};
_Static_assert(REC_HDRCRC + 4 == STO_REC_HDR, "record header layout");
_Static_assert(ENT_CRC + 4 == STO_ENT_HDR, "index entry layout");

/* ---------------------------------------------------------------- CRC-32C */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw;

/*
 * Hardware path: three independent crc32 streams over 3 x CRC_LANE bytes hide the instruction's
 * latency; their registers are joined with the linear maps "append CRC_LANE (or 2 x CRC_LANE)
 * zero bytes", kept as byte tables (crc_shift1, crc_shift2).
 */
#define CRC_LANE 4096u
static uint32_t crc_shift1[4][256], crc_shift2[4][256];

/* Raw register (no inversions) after appending n zero bytes, bit by bit (init only). */
static uint32_t crc_zeros(uint32_t c, size_t n) {
    for (size_t i = 0; i < n; i++)
        c = (c >> 8) ^ crc_table[0][c & 0xff];
    return c;
}

static void crc_shift_init(uint32_t t[4][256], size_t n) {
    uint32_t basis[32];
    for (int b = 0; b < 32; b++)
        basis[b] = crc_zeros(1u << b, n);
    for (int k = 0; k < 4; k++)
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t x = 0;
            for (int b = 0; b < 8; b++)
                if (v & (1u << b))
                    x ^= basis[8 * k + b];
            t[k][v] = x;
        }
}

static uint32_t crc_shift(uint32_t t[4][256], uint32_t c) {
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
    crc_shift_init(crc_shift1, CRC_LANE);
    crc_shift_init(crc_shift2, 2 * CRC_LANE);
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_sw(uint32_t c, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c;
        c = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
            crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
            crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
            crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw_run(uint32_t c, const uint8_t *p,
                                                             size_t n) {
    uint64_t c64 = c;
    while (n >= 3 * CRC_LANE) {
        uint64_t a = c64, b = 0, d = 0;
        const uint8_t *p1 = p + CRC_LANE, *p2 = p + 2 * CRC_LANE;
        for (size_t i = 0; i < CRC_LANE; i += 8) {
            uint64_t w0, w1, w2;
            memcpy(&w0, p + i, 8);
            memcpy(&w1, p1 + i, 8);
            memcpy(&w2, p2 + i, 8);
            a = __builtin_ia32_crc32di(a, w0);
            b = __builtin_ia32_crc32di(b, w1);
            d = __builtin_ia32_crc32di(d, w2);
        }
        c64 = crc_shift(crc_shift2, (uint32_t)a) ^ crc_shift(crc_shift1, (uint32_t)b) ^ (uint32_t)d;
        p += 3 * CRC_LANE;
        n -= 3 * CRC_LANE;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    while (n--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

uint32_t sto_crc32c(uint32_t crc, const void *p, size_t n) {
    pthread_once(&crc_once, crc_init);
    uint32_t c = ~crc;
#if defined(__x86_64__)
    if (crc_hw)
        return ~crc_hw_run(c, p, n);
#endif
    return ~crc_sw(c, p, n);
}

/* ---------------------------------------------------------------- little-endian helpers */

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t get32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* ---------------------------------------------------------------- records */

int sto_rec_layout(struct sto_rec *r, uint32_t align) {
    if (align < 8 || (align & (align - 1)) || r->key_len == 0 || r->key_len > 4000 ||
        r->value_len > (UINT64_C(1) << 48))
        return -EINVAL;
    uint64_t head = STO_REC_HDR + (uint64_t)r->key_len;
    uint64_t voff = r->value_len < align ? head : (head + align - 1) & ~(uint64_t)(align - 1);
    r->value_off = (uint32_t)voff;
    r->rec_len = (voff + r->value_len + align - 1) & ~(uint64_t)(align - 1);
    return 0;
}

size_t sto_rec_encode(const struct sto_rec *r, uint8_t *out) {
    memset(out, 0, STO_REC_HDR);
    put32(out + REC_MAGIC, STO_REC_MAGIC);
    put16(out + REC_VERSION, STO_REC_VERSION);
    put16(out + REC_HDRSIZE, STO_REC_HDR);
    put16(out + REC_FLAGS, r->flags);
    put16(out + REC_KEYLEN, r->key_len);
    put32(out + REC_VALOFF, r->value_off);
    put64(out + REC_VALLEN, r->value_len);
    put64(out + REC_RECLEN, r->rec_len);
    put64(out + REC_SEQ, r->seq);
    put32(out + REC_VALCRC, r->value_crc);
    memcpy(out + STO_REC_HDR, r->key, r->key_len);
    uint32_t c = sto_crc32c(0, out, REC_HDRCRC);
    c = sto_crc32c(c, r->key, r->key_len);
    put32(out + REC_HDRCRC, c);
    return STO_REC_HDR + r->key_len;
}

/* Checks the sizes of a decoded header or entry for internal consistency. */
static int rec_sane(const struct sto_rec *r) {
    if (r->key_len == 0 || r->key_len > 4000)
        return 0;
    if (r->flags != STO_REC_PUT && r->flags != STO_REC_DEL)
        return 0;
    if (r->flags == STO_REC_DEL)
        return 1;
    if (r->value_off < STO_REC_HDR + (uint32_t)r->key_len || r->value_len > (UINT64_C(1) << 48))
        return 0;
    return r->rec_len >= r->value_off + r->value_len && r->rec_len <= (UINT64_C(1) << 49);
}

int sto_rec_decode(const uint8_t *in, size_t n, struct sto_rec *r) {
    if (n < STO_REC_HDR)
        return 0;
    if (get32(in + REC_MAGIC) != STO_REC_MAGIC || get16(in + REC_VERSION) != STO_REC_VERSION ||
        get16(in + REC_HDRSIZE) != STO_REC_HDR)
        return -CM_ECORRUPT;
    r->flags = get16(in + REC_FLAGS);
    r->key_len = get16(in + REC_KEYLEN);
    r->value_off = get32(in + REC_VALOFF);
    r->value_len = get64(in + REC_VALLEN);
    r->rec_len = get64(in + REC_RECLEN);
    r->seq = get64(in + REC_SEQ);
    r->value_crc = get32(in + REC_VALCRC);
    r->rec_off = 0;
    if (r->key_len == 0 || r->key_len > 4000)
        return -CM_ECORRUPT;
    if (n < STO_REC_HDR + (size_t)r->key_len)
        return 0;
    uint32_t c = sto_crc32c(0, in, REC_HDRCRC);
    c = sto_crc32c(c, in + STO_REC_HDR, r->key_len);
    if (c != get32(in + REC_HDRCRC) || r->flags != STO_REC_PUT || !rec_sane(r))
        return -CM_ECORRUPT;
    r->key = in + STO_REC_HDR;
    return (int)(STO_REC_HDR + r->key_len);
}

/* ---------------------------------------------------------------- index entries */

size_t sto_ent_size(const struct sto_rec *r) {
    return (STO_ENT_HDR + (size_t)r->key_len + 7) & ~(size_t)7;
}

size_t sto_ent_encode(const struct sto_rec *r, uint8_t *out) {
    size_t len = sto_ent_size(r);
    memset(out, 0, len);
    put32(out + ENT_MAGIC, STO_ENT_MAGIC);
    put16(out + ENT_FLAGS, r->flags);
    put16(out + ENT_KEYLEN, r->key_len);
    put32(out + ENT_VALOFF, r->value_off);
    put32(out + ENT_VALCRC, r->value_crc);
    put64(out + ENT_VALLEN, r->value_len);
    put64(out + ENT_RECLEN, r->rec_len);
    put64(out + ENT_SEQ, r->seq);
    put64(out + ENT_RECOFF, r->rec_off);
    memcpy(out + STO_ENT_HDR, r->key, r->key_len);
    uint32_t c = sto_crc32c(0, out, ENT_CRC);
    c = sto_crc32c(c, out + STO_ENT_HDR, len - STO_ENT_HDR);
    put32(out + ENT_CRC, c);
    return len;
}

int sto_ent_decode(const uint8_t *in, size_t n, struct sto_rec *r) {
    if (n < STO_ENT_HDR)
        return 0;
    if (get32(in + ENT_MAGIC) != STO_ENT_MAGIC)
        return -CM_ECORRUPT;
    r->flags = get16(in + ENT_FLAGS);
    r->key_len = get16(in + ENT_KEYLEN);
    r->value_off = get32(in + ENT_VALOFF);
    r->value_crc = get32(in + ENT_VALCRC);
    r->value_len = get64(in + ENT_VALLEN);
    r->rec_len = get64(in + ENT_RECLEN);
    r->seq = get64(in + ENT_SEQ);
    r->rec_off = get64(in + ENT_RECOFF);
    if (r->key_len == 0 || r->key_len > 4000)
        return -CM_ECORRUPT;
    size_t len = sto_ent_size(r);
    if (n < len)
        return 0;
    uint32_t c = sto_crc32c(0, in, ENT_CRC);
    c = sto_crc32c(c, in + STO_ENT_HDR, len - STO_ENT_HDR);
    if (c != get32(in + ENT_CRC) || !rec_sane(r) || get64(in + ENT_RESERVED) != 0)
        return -CM_ECORRUPT;
    r->key = in + STO_ENT_HDR;
    return (int)len;
}
