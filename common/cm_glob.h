/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Glob-style matching with the semantics of Redis stringmatchlen (KEYS, SCAN MATCH, CONFIG GET,
 * PSUBSCRIBE): '*' any run, '?' one byte, '[abc]', '[^a]', '[a-z]' classes, '\' escapes the next
 * byte. Pure and thread-safe.
 */
#ifndef CRESCENT_COMMON_CM_GLOB_H
#define CRESCENT_COMMON_CM_GLOB_H

#include <stddef.h>

/*
 * Returns 1 when the string (s, slen) matches the pattern (pat, plen), 0 otherwise; nocase
 * folds ASCII letters (escaped bytes inside a class still compare exactly, as in Redis).
 * Quirks kept from Redis: an empty string matches only the empty pattern (so "*" does not
 * match ""); an unterminated class takes the rest of the pattern as its set; a trailing '\'
 * matches a literal '\'. Runs in O(plen * slen) time and O(1) space (greedy matching with
 * back-tracking to the last '*' only), so hostile patterns cannot blow up.
 */
int cm_glob_match(const char *pat, size_t plen, const char *s, size_t slen, int nocase);

#endif
