/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Glob matcher (see cm_glob.h). Every pattern element other than '*' consumes exactly one
 * byte, so remembering only the most recent '*' and retrying from one byte further on failure
 * is complete: an earlier '*' could only absorb bytes that the later one absorbs equally well.
 */
#include "common/fmacros.h"

#include "common/cm_glob.h"

#include <stdbool.h>

/* Bytes compare as signed char, as Redis compares char values (this matters for ranges). */
static int cm_glob_fold(int c, int nocase) {
    if (nocase && c >= 'A' && c <= 'Z')
        return c + ('a' - 'A');
    return c;
}

/*
 * Matches byte c against the class starting just after '[' at pat[*pi]; advances *pi past the
 * class (to its ']' + 1, or to plen when unterminated).
 */
static bool cm_glob_class(const char *pat, size_t plen, size_t *pi, int c, int nocase) {
    size_t i = *pi;
    bool neg = false, match = false;
    if (i < plen && pat[i] == '^') {
        neg = true;
        i++;
    }
    for (;;) {
        if (i + 1 < plen && pat[i] == '\\') {
            i++;
            if ((signed char)pat[i] == c)
                match = true;
        } else if (i >= plen) {
            break; /* unterminated: the class ends with the pattern */
        } else if (pat[i] == ']') {
            break;
        } else if (i + 2 < plen && pat[i + 1] == '-') {
            int lo = (signed char)pat[i], hi = (signed char)pat[i + 2], x = c;
            if (lo > hi) {
                int tmp = lo;
                lo = hi;
                hi = tmp;
            }
            lo = cm_glob_fold(lo, nocase);
            hi = cm_glob_fold(hi, nocase);
            x = cm_glob_fold(x, nocase);
            if (x >= lo && x <= hi)
                match = true;
            i += 2;
        } else if (cm_glob_fold((signed char)pat[i], nocase) == cm_glob_fold(c, nocase)) {
            match = true;
        }
        i++;
    }
    *pi = i < plen ? i + 1 : plen;
    return neg ? !match : match;
}

/* Matches one non-'*' element at pat[*pi] against byte c and advances *pi past it. */
static bool cm_glob_one(const char *pat, size_t plen, size_t *pi, int c, int nocase) {
    size_t i = *pi;
    switch (pat[i]) {
    case '?':
        *pi = i + 1;
        return true;
    case '[':
        *pi = i + 1;
        return cm_glob_class(pat, plen, pi, c, nocase);
    case '\\':
        if (i + 1 < plen)
            i++;
        /* fall through */
    default:
        *pi = i + 1;
        return cm_glob_fold((signed char)pat[i], nocase) == cm_glob_fold(c, nocase);
    }
}

int cm_glob_match(const char *pat, size_t plen, const char *s, size_t slen, int nocase) {
    size_t pi = 0, si = 0;
    size_t star_pi = 0, star_si = 0;
    bool have_star = false;

    if (slen == 0)
        return plen == 0;
    while (si < slen) {
        if (pi < plen && pat[pi] == '*') {
            while (pi < plen && pat[pi] == '*')
                pi++;
            if (pi == plen)
                return 1;
            have_star = true;
            star_pi = pi;
            star_si = si;
            continue;
        }
        size_t next = pi;
        if (pi < plen && cm_glob_one(pat, plen, &next, (signed char)s[si], nocase)) {
            pi = next;
            si++;
            continue;
        }
        if (!have_star)
            return 0;
        pi = star_pi;
        si = ++star_si;
    }
    while (pi < plen && pat[pi] == '*')
        pi++;
    return pi == plen;
}
