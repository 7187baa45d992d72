/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the word-at-a-time decimal formatter and parser in cm_dec.h, checked against
 * snprintf / a digit-by-digit reference over edge values and a pseudo-random sweep. */
#include "common/fmacros.h"

#include "common/cm_dec.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Formats v both ways and checks text, length and that nothing past CM_DEC_ROOM changed. */
static void check_u64(uint64_t v) {
    char want[32], got[CM_DEC_ROOM + 8];
    int wn = snprintf(want, sizeof(want), "%" PRIu64, v);
    memset(got, '#', sizeof(got));
    size_t n = cm_dec_u64(got, v);
    cr_assert_eq(n, (size_t)wn, "length of %" PRIu64, v);
    cr_assert(memcmp(got, want, n) == 0, "text of %" PRIu64 ": %.*s", v, (int)n, got);
    for (size_t i = CM_DEC_ROOM; i < sizeof(got); i++)
        cr_assert_eq(got[i], '#', "wrote past the room for %" PRIu64, v);
}

/* Parses the text of v followed by tail, with the buffer ending right after it. */
static void check_parse(uint64_t v, const char *tail) {
    char buf[64];
    int len = snprintf(buf, sizeof(buf), "%" PRIu64 "%s", v, tail);
    char want[32];
    int digits = snprintf(want, sizeof(want), "%" PRIu64, v);
    uint64_t got = 12345;
    size_t n = cm_dec_parse(buf, buf + len, &got);
    cr_assert_eq(n, (size_t)digits, "digits of %" PRIu64 "%s", v, tail);
    cr_assert_eq(got, v, "value of %" PRIu64 "%s", v, tail);
}

Test(cm_dec, format_edges) {
    uint64_t p = 1;
    for (int k = 0; k < 20; k++, p *= 10) {
        check_u64(p);
        check_u64(p - 1);
        check_u64(p + 1);
        check_u64(p * 9 + (p - 1));
    }
    check_u64(0);
    check_u64(UINT64_MAX);
    check_u64(INT64_MAX);
    check_u64(140737488355328ull); /* a typical heap address */
}

Test(cm_dec, format_random) {
    for (int i = 0; i < 200000; i++) {
        uint64_t v = rng();
        check_u64(v >> (rng() % 64));
    }
}

Test(cm_dec, format_signed) {
    char got[CM_DEC_ROOM];
    cr_assert_eq(cm_dec_i64(got, -1), 2);
    cr_assert(memcmp(got, "-1", 2) == 0);
    cr_assert_eq(cm_dec_i64(got, INT64_MIN), 20);
    cr_assert(memcmp(got, "-9223372036854775808", 20) == 0);
    cr_assert_eq(cm_dec_i64(got, 4096), 4);
    cr_assert(memcmp(got, "4096", 4) == 0);
}

Test(cm_dec, parse_edges) {
    const char *tails[] = {"", "\r\n", "\r\n:12345678\r\n", "x", "-99999999"};
    uint64_t p = 1;
    for (int k = 0; k < 19; k++, p *= 10) {
        for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
            check_parse(p, tails[t]);
            check_parse(p - 1, tails[t]);
            check_parse(p * 9 + (p - 1), tails[t]);
        }
    }
    check_parse(UINT64_MAX, "\r\n");
}

Test(cm_dec, parse_random) {
    for (int i = 0; i < 200000; i++)
        check_parse(rng() >> (rng() % 64), (i & 1) ? "\r\n*4\r\n:1\r\n" : "\r");
}

Test(cm_dec, parse_stops) {
    uint64_t v = 7;
    cr_assert_eq(cm_dec_parse("", "", &v), 0);
    cr_assert_eq(v, 0);
    cr_assert_eq(cm_dec_parse("abcdefghij", "abcdefghij" + 10, &v), 0);
    cr_assert_eq(v, 0);
    const char *s = "00042\r\n";
    cr_assert_eq(cm_dec_parse(s, s + strlen(s), &v), 5);
    cr_assert_eq(v, 42);
    s = "123:456789012"; /* ':' is the byte after '9' */
    cr_assert_eq(cm_dec_parse(s, s + strlen(s), &v), 3);
    cr_assert_eq(v, 123);
    s = "12/3"; /* '/' is the byte before '0' */
    cr_assert_eq(cm_dec_parse(s, s + strlen(s), &v), 2);
    cr_assert_eq(v, 12);
    s = "1234567\xff"; /* a high byte right after a full word's worth but one */
    cr_assert_eq(cm_dec_parse(s, s + strlen(s), &v), 7);
    cr_assert_eq(v, 1234567);
    char many[40];
    memset(many, '9', sizeof(many));
    cr_assert(cm_dec_parse(many, many + sizeof(many), &v) > 18); /* too long: the caller refuses */
}
