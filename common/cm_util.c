/* SPDX-License-Identifier: Apache-2.0 */
/* Strict string <-> number conversions matching Redis's util.c behaviour (see cm_util.h). */
#include "common/fmacros.h"

#include "common/cm_util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int cm_str2ll(const char *s, size_t n, long long *out) {
    size_t i = 0;
    int neg = 0;
    unsigned long long v;

    if (n == 0)
        return -EINVAL;
    if (n == 1 && s[0] == '0') {
        if (out)
            *out = 0;
        return 0;
    }
    if (s[0] == '-') {
        neg = 1;
        i = 1;
        if (n == 1)
            return -EINVAL;
    }
    if (s[i] < '1' || s[i] > '9')
        return -EINVAL;
    v = (unsigned long long)(s[i++] - '0');
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return -ERANGE;
        if (out)
            *out = (long long)(0 - v);
    } else {
        if (v > (unsigned long long)LLONG_MAX)
            return -ERANGE;
        if (out)
            *out = (long long)v;
    }
    return 0;
}

int cm_str2ld(const char *s, size_t n, long double *out) {
    char buf[CM_LD_STR_SIZE];
    char *end;
    if (n == 0 || n >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    long double v = strtold(buf, &end);
    if (isspace((unsigned char)buf[0]) || (size_t)(end - buf) != n || errno == EINVAL || isnan(v) ||
        (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO)))
        return -EINVAL;
    if (out)
        *out = v;
    return 0;
}

int cm_str2d(const char *s, size_t n, double *out) {
    char buf[CM_LD_STR_SIZE];
    char *end;
    if (n == 0 || n >= sizeof(buf))
        return -EINVAL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    double v = strtod(buf, &end);
    if (isspace((unsigned char)buf[0]) || (size_t)(end - buf) != n || isnan(v) ||
        (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)))
        return -EINVAL;
    if (out)
        *out = v;
    return 0;
}

static const char cm_digit_pairs[201] = "00010203040506070809"
                                        "10111213141516171819"
                                        "20212223242526272829"
                                        "30313233343536373839"
                                        "40414243444546474849"
                                        "50515253545556575859"
                                        "60616263646566676869"
                                        "70717273747576777879"
                                        "80818283848586878889"
                                        "90919293949596979899";

static int cm_u64_digits(unsigned long long v) {
    int d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

int cm_ll2str(char *buf, size_t cap, long long v) {
    int neg = v < 0;
    unsigned long long u = neg ? 0 - (unsigned long long)v : (unsigned long long)v;
    int len = cm_u64_digits(u) + neg;
    if ((size_t)len + 1 > cap)
        return -ENOSPC;
    buf[len] = '\0';
    int pos = len - 1;
    while (u >= 100) {
        unsigned i = (unsigned)(u % 100) * 2;
        u /= 100;
        buf[pos--] = cm_digit_pairs[i + 1];
        buf[pos--] = cm_digit_pairs[i];
    }
    if (u < 10) {
        buf[pos--] = (char)('0' + u);
    } else {
        unsigned i = (unsigned)u * 2;
        buf[pos--] = cm_digit_pairs[i + 1];
        buf[pos--] = cm_digit_pairs[i];
    }
    if (neg)
        buf[0] = '-';
    return len;
}

int cm_ld2str(char *buf, size_t cap, long double v) {
    int l;
    if (isinf(v)) {
        if (cap < 5)
            return -ENOSPC;
        l = v > 0 ? 3 : 4;
        memcpy(buf, v > 0 ? "inf" : "-inf", (size_t)l + 1);
        return l;
    }
    l = snprintf(buf, cap, "%.17Lf", v);
    if (l < 0 || (size_t)l + 1 > cap)
        return -ENOSPC;
    if (strchr(buf, '.')) {
        char *p = buf + l - 1;
        while (*p == '0') {
            p--;
            l--;
        }
        if (*p == '.')
            l--;
        buf[l] = '\0';
    }
    if (l == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        buf[1] = '\0';
        l = 1;
    }
    return l;
}

int cm_parse_memory(const char *s, long long *out) {
    const char *u = s;
    unsigned long long mul, v = 0;

    while (*u >= '0' && *u <= '9')
        u++;
    if (u == s)
        return -EINVAL; /* no digits, a sign or garbage */
    if (*u == '\0' || !strcasecmp(u, "b"))
        mul = 1;
    else if (!strcasecmp(u, "k"))
        mul = 1000;
    else if (!strcasecmp(u, "kb"))
        mul = 1024;
    else if (!strcasecmp(u, "m"))
        mul = 1000ull * 1000;
    else if (!strcasecmp(u, "mb"))
        mul = 1024ull * 1024;
    else if (!strcasecmp(u, "g"))
        mul = 1000ull * 1000 * 1000;
    else if (!strcasecmp(u, "gb"))
        mul = 1024ull * 1024 * 1024;
    else
        return -EINVAL;
    for (const char *p = s; p < u; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    if (v > (unsigned long long)LLONG_MAX / mul)
        return -ERANGE;
    *out = (long long)(v * mul);
    return 0;
}
