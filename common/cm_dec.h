/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decimal integers for the hot RESP paths (the store client's requests and compact replies,
 * the master's compact replies): formatting and parsing eight digits at a time with a few
 * multiplications on one 64-bit word, instead of one division or one multiply-add per digit.
 * On the store's 4 KiB batch path digits were a third of the client's instructions per object.
 * Header-only (static inline); no validation beyond "is a digit": callers check lengths, signs
 * and ranges as their protocol requires (cm_util.h has the strict Redis-compatible parsers).
 */
#ifndef CRESCENT_COMMON_CM_DEC_H
#define CRESCENT_COMMON_CM_DEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Room cm_dec_u64 / cm_dec_i64 need at dst: they may store up to 8 bytes past a short number
 * (whole words), never past dst + CM_DEC_ROOM. */
#define CM_DEC_ROOM 24

/* Eight bytes at p as a little-endian word (byte p[0] lowest). */
static inline uint64_t cm_dec_load8(const char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* Stores w at p as a little-endian word. */
static inline void cm_dec_store8(char *p, uint64_t w) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    memcpy(p, &w, 8);
}

/* The eight decimal digits of v < 10^8 as byte values 0..9, most significant digit in the
 * lowest byte (so the word, stored little-endian plus '0' per byte, is the text). */
static inline uint64_t cm_dec_split8(uint32_t v) {
    uint64_t x = (v / 10000) | ((uint64_t)(v % 10000) << 32); /* two 4-digit halves */
    uint64_t q = ((x * 10486) >> 20) & 0x0000007F0000007Full; /* each half / 100 */
    x = q | ((x - q * 100) << 16);                            /* four 2-digit lanes */
    q = ((x * 103) >> 10) & 0x000F000F000F000Full;            /* each lane / 10 */
    return q | ((x - q * 10) << 8);                           /* eight 1-digit bytes */
}

/* Writes 1 <= v < 10^8 at dst (8 bytes stored); returns its length. */
static inline size_t cm_dec_head8(char *dst, uint32_t v) {
    uint64_t x = cm_dec_split8(v);
    unsigned zeros = (unsigned)__builtin_ctzll(x) / 8; /* leading zero digits */
    cm_dec_store8(dst, (x >> (8 * zeros)) + 0x3030303030303030ull);
    return 8 - zeros;
}

/* Writes v in decimal at dst, which has CM_DEC_ROOM bytes of room (no NUL); returns the
 * length, 1 to 20. */
static inline size_t cm_dec_u64(char *dst, uint64_t v) {
    if (v < 10) {
        dst[0] = (char)('0' + v);
        return 1;
    }
    if (v < 100000000u)
        return cm_dec_head8(dst, (uint32_t)v);
    uint64_t lo = v % 100000000u, hi = v / 100000000u;
    size_t n;
    if (hi < 100000000u) {
        n = cm_dec_head8(dst, (uint32_t)hi);
    } else {
        n = cm_dec_head8(dst, (uint32_t)(hi / 100000000u));
        cm_dec_store8(dst + n, cm_dec_split8((uint32_t)(hi % 100000000u)) + 0x3030303030303030ull);
        n += 8;
    }
    cm_dec_store8(dst + n, cm_dec_split8((uint32_t)lo) + 0x3030303030303030ull);
    return n + 8;
}

/* cm_dec_u64 for a signed value ('-' first when negative); returns the length, 1 to 20. */
static inline size_t cm_dec_i64(char *dst, int64_t v) {
    if (v >= 0)
        return cm_dec_u64(dst, (uint64_t)v);
    dst[0] = '-';
    return 1 + cm_dec_u64(dst + 1, 0 - (uint64_t)v);
}

/* The value of eight digit bytes 0..9 (most significant lowest), as cm_dec_split8 makes. */
static inline uint32_t cm_dec_join8(uint64_t d) {
    d = d * 10 + (d >> 8); /* each 16-bit lane: its two digits' value in the low byte */
    d = (((d & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
         (((d >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >>
        32;
    return (uint32_t)d;
}

/* Per byte of w: zero when the byte is an ASCII digit. Exact up to the first non-digit byte
 * (counting from the lowest), which is all cm_dec_parse looks at. */
static inline uint64_t cm_dec_nondigits(uint64_t w) {
    uint64_t a = w & 0xF0F0F0F0F0F0F0F0ull;
    uint64_t b = (w + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull;
    return (a ^ 0x3030303030303030ull) | (b ^ 0x3030303030303030ull);
}

/*
 * Reads the run of ASCII digits at p (up to end). Returns how many digits it holds and their
 * value in *v (modulo 2^64: the caller rejects runs too long for its range; a run past 24 digits
 * is counted no further). Unsigned, no sign, leading zeros taken as they are.
 */
static inline size_t cm_dec_parse(const char *p, const char *end, uint64_t *v) {
    static const uint64_t pow10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
    uint64_t x = 0;
    size_t n = 0;
    while (end - p >= 8) {
        uint64_t w = cm_dec_load8(p);
        uint64_t bad = cm_dec_nondigits(w);
        if (bad == 0) {
            x = x * 100000000u + cm_dec_join8(w - 0x3030303030303030ull);
            p += 8;
            n += 8;
            if (n > 24)
                break;
            continue;
        }
        unsigned k = (unsigned)__builtin_ctzll(bad) / 8;
        if (k > 0)
            x = x * pow10[k] + cm_dec_join8((w - 0x3030303030303030ull) << (8 * (8 - k)));
        *v = x;
        return n + k;
    }
    while (p < end && n <= 24 && (unsigned char)(*p - '0') < 10) {
        x = x * 10 + (uint64_t)(*p - '0');
        p++;
        n++;
    }
    *v = x;
    return n;
}

#endif
