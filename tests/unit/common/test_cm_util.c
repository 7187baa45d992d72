/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the strict Redis-compatible number parsers and formatters in cm_util. */
#include "common/fmacros.h"

#include "common/cm_util.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int ll(const char *s, long long *v) {
    return cm_str2ll(s, strlen(s), v);
}

Test(cm_util, str2ll_accepts) {
    long long v = 5;
    cr_assert_eq(ll("0", &v), 0);
    cr_assert_eq(v, 0);
    cr_assert_eq(ll("123", &v), 0);
    cr_assert_eq(v, 123);
    cr_assert_eq(ll("-1", &v), 0);
    cr_assert_eq(v, -1);
    cr_assert_eq(ll("9223372036854775807", &v), 0);
    cr_assert_eq(v, LLONG_MAX);
    cr_assert_eq(ll("-9223372036854775808", &v), 0);
    cr_assert_eq(v, LLONG_MIN);
    cr_assert_eq(cm_str2ll("12xyz", 2, &v), 0);
    cr_assert_eq(v, 12);
    cr_assert_eq(cm_str2ll("7", 1, NULL), 0);
}

Test(cm_util, str2ll_rejects) {
    long long v = 77;
    const char *bad[] = {"",   "-",   "+1",   " 1",  "1 ",  "01", "-0",
                         "00", "1.0", "0x10", "1e3", "--1", "abc"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(ll(bad[i], &v), -EINVAL, "'%s'", bad[i]);
    cr_assert_eq(ll("9223372036854775808", &v), -ERANGE);
    cr_assert_eq(ll("-9223372036854775809", &v), -ERANGE);
    cr_assert_eq(ll("99999999999999999999999", &v), -ERANGE);
    cr_assert_eq(cm_str2ll("1\0002", 3, &v), -EINVAL);
    cr_assert_eq(v, 77, "output untouched on error");
}

Test(cm_util, str2ld_and_str2d) {
    long double ld;
    double d;
    cr_assert_eq(cm_str2ld("1.5", 3, &ld), 0);
    cr_assert_eq(ld, 1.5L);
    cr_assert_eq(cm_str2ld("-3e2", 4, &ld), 0);
    cr_assert_eq(ld, -300.0L);
    cr_assert_eq(cm_str2ld("inf", 3, &ld), 0);
    cr_assert(isinf(ld));
    cr_assert_eq(cm_str2ld("10", 1, &ld), 0);
    cr_assert_eq(ld, 1.0L);
    cr_assert_eq(cm_str2ld("nan", 3, &ld), -EINVAL);
    cr_assert_eq(cm_str2ld(" 1", 2, &ld), -EINVAL);
    cr_assert_eq(cm_str2ld("1 ", 2, &ld), -EINVAL);
    cr_assert_eq(cm_str2ld("", 0, &ld), -EINVAL);
    cr_assert_eq(cm_str2ld("1x", 2, &ld), -EINVAL);
    cr_assert_eq(cm_str2ld("1e999999", 8, &ld), -EINVAL);
    cr_assert_eq(cm_str2d("2.25", 4, &d), 0);
    cr_assert_eq(d, 2.25);
    cr_assert_eq(cm_str2d("1e400", 5, &d), -EINVAL);
    cr_assert_eq(cm_str2d("-nan", 4, &d), -EINVAL);
    cr_assert_eq(cm_str2d("\t3", 2, &d), -EINVAL);
    cr_assert_eq(cm_str2d("3\0", 2, &d), -EINVAL);
}

Test(cm_util, ll2str) {
    char buf[CM_LL_STR_SIZE];
    long long cases[] = {0, 1, -1, 9, 10, 99, 100, 12345, -987654321, LLONG_MAX, LLONG_MIN};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[32];
        int wl = snprintf(want, sizeof(want), "%lld", cases[i]);
        cr_assert_eq(cm_ll2str(buf, sizeof(buf), cases[i]), wl);
        cr_assert_str_eq(buf, want);
    }
    for (long long v = -1000; v <= 100000; v += 7) {
        char want[32];
        snprintf(want, sizeof(want), "%lld", v);
        cm_ll2str(buf, sizeof(buf), v);
        cr_assert_str_eq(buf, want);
    }
    cr_assert_eq(cm_ll2str(buf, 3, 100), -ENOSPC);
    cr_assert_eq(cm_ll2str(buf, 4, 100), 3);
}

Test(cm_util, ld2str_like_incrbyfloat) {
    char buf[CM_LD_STR_SIZE];
    cr_assert_eq(cm_ld2str(buf, sizeof(buf), 10.5L), 4);
    cr_assert_str_eq(buf, "10.5");
    cm_ld2str(buf, sizeof(buf), 3.0L);
    cr_assert_str_eq(buf, "3");
    cm_ld2str(buf, sizeof(buf), -0.0L);
    cr_assert_str_eq(buf, "0");
    cm_ld2str(buf, sizeof(buf), 5.0e3L);
    cr_assert_str_eq(buf, "5000");
    cm_ld2str(buf, sizeof(buf), 10.5L + 0.1L); /* Redis: INCRBYFLOAT mykey 0.1 on 10.50 */
    cr_assert_str_eq(buf, "10.6");
    cm_ld2str(buf, sizeof(buf), -1.25L);
    cr_assert_str_eq(buf, "-1.25");
    cm_ld2str(buf, sizeof(buf), (long double)INFINITY);
    cr_assert_str_eq(buf, "inf");
    cm_ld2str(buf, sizeof(buf), -(long double)INFINITY);
    cr_assert_str_eq(buf, "-inf");
    cr_assert_eq(cm_ld2str(buf, 4, 10.5L), -ENOSPC);
}

Test(cm_util, parse_memory) {
    long long v;
    cr_assert_eq(cm_parse_memory("1024", &v), 0);
    cr_assert_eq(v, 1024);
    cr_assert_eq(cm_parse_memory("1gb", &v), 0);
    cr_assert_eq(v, 1073741824LL);
    cr_assert_eq(cm_parse_memory("1G", &v), 0);
    cr_assert_eq(v, 1000000000LL);
    cr_assert_eq(cm_parse_memory("512MB", &v), 0);
    cr_assert_eq(v, 512LL << 20);
    cr_assert_eq(cm_parse_memory("100k", &v), 0);
    cr_assert_eq(v, 100000);
    cr_assert_eq(cm_parse_memory("100Kb", &v), 0);
    cr_assert_eq(v, 102400);
    cr_assert_eq(cm_parse_memory("3m", &v), 0);
    cr_assert_eq(v, 3000000);
    cr_assert_eq(cm_parse_memory("7b", &v), 0);
    cr_assert_eq(v, 7);
    cr_assert_eq(cm_parse_memory("0", &v), 0);
    cr_assert_eq(v, 0);
    const char *bad[] = {"", "-1", "1tb", "gb", "1 gb", " 1", "1.5gb", "+1", "1gbx"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(cm_parse_memory(bad[i], &v), -EINVAL, "'%s'", bad[i]);
    cr_assert_eq(cm_parse_memory("9223372036854775808", &v), -ERANGE);
    cr_assert_eq(cm_parse_memory("9000000000gb", &v), -ERANGE);
}
