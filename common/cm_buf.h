/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Growable byte buffer: reply buffers, query buffers, scratch space. The data is not
 * NUL-terminated unless the caller appends a '\0'. Growth uses cm_realloc (aborts on OOM).
 * Not thread-safe: one owner at a time.
 */
#ifndef CRESCENT_COMMON_CM_BUF_H
#define CRESCENT_COMMON_CM_BUF_H

#include <stddef.h>

/* data[0..len) holds the bytes; cap is the allocated size of data (0 when data is NULL). */
struct cm_buf {
    char *data;
    size_t len;
    size_t cap;
};

/* Sets b to the empty buffer without allocating. */
void cm_buf_init(struct cm_buf *b);
/* Frees b's memory and leaves it empty (re-usable after cm_buf_init or as is). */
void cm_buf_fini(struct cm_buf *b);
/* Ensures cap >= len + extra; may move data (pointers into it become invalid). Aborts on OOM. */
void cm_buf_reserve(struct cm_buf *b, size_t extra);
/* Appends n bytes from p (p may be NULL when n is 0). Aborts on OOM. */
void cm_buf_append(struct cm_buf *b, const void *p, size_t n);
/* Appends printf-formatted text (no NUL is counted in len). Aborts on OOM. */
void cm_buf_appendf(struct cm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * Appends s[0..len) as a JSON string, quotes included: '"' and the backslash are escaped and each
 * byte outside printable ASCII is written as \u00XX, so any bytes give valid JSON. Aborts on OOM.
 */
void cm_buf_append_json_str(struct cm_buf *b, const char *s, size_t len);
/* Drops the first n bytes (n > len drops all), moving the rest to the front. */
void cm_buf_consume(struct cm_buf *b, size_t n);
/* Sets len to 0 and keeps the memory. */
void cm_buf_clear(struct cm_buf *b);

#endif
