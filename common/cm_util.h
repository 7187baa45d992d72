/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Strict string <-> number conversions with Redis semantics (string2ll, string2ld, string2d,
 * ll2string, ld2string in human mode, memtoull). Inputs are (pointer, length) pairs and need
 * no NUL terminator. All functions are pure and thread-safe.
 */
#ifndef CRESCENT_COMMON_CM_UTIL_H
#define CRESCENT_COMMON_CM_UTIL_H

#include <stddef.h>

/* Longest text cm_ll2str() writes, including the NUL ("-9223372036854775808"). */
#define CM_LL_STR_SIZE 21
/* Buffer size that always fits cm_ld2str() output (Redis MAX_LONG_DOUBLE_CHARS). */
#define CM_LD_STR_SIZE 5120

/*
 * Parses a signed 64-bit decimal exactly like Redis string2ll: optional '-', then digits with
 * no leading zeros (except "0" itself), no '+', no spaces, nothing else ("-0" is rejected).
 * Returns 0 and stores *out (out may be NULL), -EINVAL for malformed text, -ERANGE on overflow.
 */
int cm_str2ll(const char *s, size_t n, long long *out);

/*
 * Parses a long double like Redis string2ld: strtold over the whole text; rejects empty input,
 * leading whitespace, trailing garbage, NaN and overflow/underflow to 0. "inf" is accepted.
 * Returns 0 or -EINVAL.
 */
int cm_str2ld(const char *s, size_t n, long double *out);

/* As cm_str2ld for double (Redis string2d). Returns 0 or -EINVAL. */
int cm_str2d(const char *s, size_t n, double *out);

/*
 * Writes v in decimal plus a NUL into buf. Returns the length (without NUL), or -ENOSPC when
 * cap is too small (CM_LL_STR_SIZE always suffices).
 */
int cm_ll2str(char *buf, size_t cap, long long v);

/*
 * Formats v as Redis does for INCRBYFLOAT replies: "%.17Lf", then trailing zeros and a
 * trailing '.' removed; "-0" becomes "0"; infinities print "inf" / "-inf". Returns the length
 * or -ENOSPC when cap is too small (CM_LD_STR_SIZE always suffices).
 */
int cm_ld2str(char *buf, size_t cap, long double v);

/*
 * Parses a memory size like Redis memtoull: decimal digits followed by an optional unit,
 * case-insensitive: b=1, k=1000, kb=1024, m=1000^2, mb=1024^2, g=1000^3, gb=1024^3
 * ("1gb", "512mb", "100k", "1024"). Rejects negative values, empty digits, unknown units and
 * values above LLONG_MAX. s is NUL-terminated. Returns 0 or -EINVAL / -ERANGE.
 */
int cm_parse_memory(const char *s, long long *out);

#endif
