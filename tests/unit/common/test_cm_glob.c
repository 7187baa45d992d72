/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for cm_glob_match: fixed cases with Redis's answers, a differential test against
 * a naive recursive matcher written from Redis's documented semantics, and a blow-up pattern.
 */
#include "common/fmacros.h"

#include "common/cm_glob.h"
#include "common/cm_hash.h"

#include <criterion/criterion.h>
#include <string.h>

static int m(const char *p, const char *s, int nocase) {
    return cm_glob_match(p, strlen(p), s, strlen(s), nocase);
}

Test(cm_glob, basic_cases) {
    cr_assert_eq(m("*", "anything", 0), 1);
    cr_assert_eq(m("*", "", 0), 0); /* Redis quirk: empty string matches only "" */
    cr_assert_eq(m("", "", 0), 1);
    cr_assert_eq(m("", "a", 0), 0);
    cr_assert_eq(m("h?llo", "hello", 0), 1);
    cr_assert_eq(m("h?llo", "hllo", 0), 0);
    cr_assert_eq(m("h*llo", "heeeello", 0), 1);
    cr_assert_eq(m("h*llo", "hllo", 0), 1);
    cr_assert_eq(m("h[ae]llo", "hallo", 0), 1);
    cr_assert_eq(m("h[ae]llo", "hillo", 0), 0);
    cr_assert_eq(m("h[^e]llo", "hallo", 0), 1);
    cr_assert_eq(m("h[^e]llo", "hello", 0), 0);
    cr_assert_eq(m("h[a-b]llo", "hbllo", 0), 1);
    cr_assert_eq(m("h[b-a]llo", "hallo", 0), 1); /* reversed range */
    cr_assert_eq(m("h[a-b]llo", "hcllo", 0), 0);
    cr_assert_eq(m("h\\*llo", "h*llo", 0), 1);
    cr_assert_eq(m("h\\*llo", "hello", 0), 0);
    cr_assert_eq(m("a*", "a", 0), 1);
    cr_assert_eq(m("a**b*", "ab", 0), 1);
    cr_assert_eq(m("*a*b", "xxaxxbxb", 0), 1);
    cr_assert_eq(m("*a*b", "xxaxxbxbc", 0), 0);
    cr_assert_eq(m("HELLO", "hello", 1), 1);
    cr_assert_eq(m("HELLO", "hello", 0), 0);
    cr_assert_eq(m("[A-C]x", "bx", 1), 1);
    cr_assert_eq(m("[\\]]", "]", 0), 1);
    cr_assert_eq(m("[]", "]", 0), 0);   /* ']' right after '[' closes an empty class */
    cr_assert_eq(m("[abc", "b", 0), 1); /* unterminated class takes the rest */
    cr_assert_eq(m("[", "[", 0), 0);
    cr_assert_eq(m("[^", "x", 0), 1);
    cr_assert_eq(m("a\\", "a\\", 0), 1); /* trailing backslash is literal */
    /* Answers checked against redis-server 7.0 KEYS. */
    cr_assert_eq(m("[a-]", "]", 0), 1); /* range 'a'..']' swapped, then unterminated */
    cr_assert_eq(m("[a-]", "b", 0), 0);
    cr_assert_eq(m("[^]", "x", 0), 1);
    cr_assert_eq(m("[B-a]", "[", 0), 1);
    cr_assert_eq(m("[B-a]", "x", 0), 0);
    cr_assert_eq(m("maxmemory*", "maxmemory-policy", 1), 1);
    /* Length-delimited: bytes after the given lengths are ignored, NULs are ordinary bytes. */
    cr_assert_eq(cm_glob_match("a?c", 3, "a\0c", 3, 0), 1);
    cr_assert_eq(cm_glob_match("abcdef", 2, "abXX", 2, 0), 1);
}

/* Naive recursive reference: exponential, used only on short inputs. */
static int fold(int c, int nocase) {
    return nocase && c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int ref(const char *p, int pl, const char *s, int sl, int nocase) {
    while (pl && sl) {
        if (*p == '*') {
            while (pl >= 2 && p[1] == '*') {
                p++;
                pl--;
            }
            if (pl == 1)
                return 1;
            for (; sl; s++, sl--)
                if (ref(p + 1, pl - 1, s, sl, nocase))
                    return 1;
            return 0;
        } else if (*p == '?') {
            s++;
            sl--;
        } else if (*p == '[') {
            int neg, match = 0;
            p++;
            pl--;
            neg = pl > 0 && *p == '^';
            if (neg) {
                p++;
                pl--;
            }
            for (;;) {
                if (pl >= 2 && *p == '\\') {
                    p++;
                    pl--;
                    if (*p == *s)
                        match = 1;
                } else if (pl == 0) {
                    p--;
                    pl++;
                    break;
                } else if (*p == ']') {
                    break;
                } else if (pl >= 3 && p[1] == '-') {
                    int a = p[0], b = p[2], c = *s;
                    if (a > b) {
                        int t = a;
                        a = b;
                        b = t;
                    }
                    if (fold(c, nocase) >= fold(a, nocase) && fold(c, nocase) <= fold(b, nocase))
                        match = 1;
                    p += 2;
                    pl -= 2;
                } else if (fold(*p, nocase) == fold(*s, nocase)) {
                    match = 1;
                }
                p++;
                pl--;
            }
            if (neg)
                match = !match;
            if (!match)
                return 0;
            s++;
            sl--;
        } else {
            if (*p == '\\' && pl >= 2) {
                p++;
                pl--;
            }
            if (fold(*p, nocase) != fold(*s, nocase))
                return 0;
            s++;
            sl--;
        }
        p++;
        pl--;
        if (sl == 0) {
            while (pl && *p == '*') {
                p++;
                pl--;
            }
            break;
        }
    }
    return pl == 0 && sl == 0;
}

Test(cm_glob, differential_against_reference) {
    static const char pchars[] = "ab*?[]^-\\A";
    static const char schars[] = "abB-]^\\*";
    char p[12], s[12];
    cm_rand_seed(1234);
    int matches = 0;
    for (int iter = 0; iter < 200000; iter++) {
        uint64_t r = cm_rand64();
        int pl = (int)(r % 9), sl = (int)((r >> 8) % 9), nocase = (int)((r >> 16) & 1);
        for (int i = 0; i < pl; i++)
            p[i] = pchars[cm_rand64() % (sizeof(pchars) - 1)];
        for (int i = 0; i < sl; i++)
            s[i] = schars[cm_rand64() % (sizeof(schars) - 1)];
        p[pl] = s[sl] = '\0';
        int want = ref(p, pl, s, sl, nocase);
        int got = cm_glob_match(p, (size_t)pl, s, (size_t)sl, nocase);
        cr_assert_eq(got, want, "pattern '%s' string '%s' nocase %d: got %d want %d", p, s, nocase,
                     got, want);
        matches += got;
    }
    cr_assert_gt(matches, 1000); /* the generator produces plenty of positive cases */
}

Test(cm_glob, no_exponential_blowup, .timeout = 2) {
    /* Redis's classic abusive pattern: 30 "a*" pairs against 1000 'a' then a 'b'. */
    char pat[128], str[1100];
    size_t pl = 0;
    for (int i = 0; i < 30; i++) {
        pat[pl++] = 'a';
        pat[pl++] = '*';
    }
    pat[pl++] = 'c';
    memset(str, 'a', 1000);
    str[1000] = 'b';
    cr_assert_eq(cm_glob_match(pat, pl, str, 1001, 0), 0);
    pat[pl - 1] = 'b';
    cr_assert_eq(cm_glob_match(pat, pl, str, 1001, 0), 1);
}
