/* SPDX-License-Identifier: Apache-2.0 */
/* Growable byte buffer (see cm_buf.h). Capacity grows geometrically so appends are amortised O(1).
 */
#include "common/fmacros.h"

#include "common/cm_buf.h"
#include "common/cm_mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Empty buffer, no allocation. Not thread-safe. */
void cm_buf_init(struct cm_buf *b) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

/* Frees the data with cm_free and resets b to empty. Not thread-safe. */
void cm_buf_fini(struct cm_buf *b) {
    cm_free(b->data);
    cm_buf_init(b);
}

/*
 * Grows the allocation so that at least extra more bytes fit: doubles up to 1 GiB steps,
 * then grows by the need plus 1 GiB. Aborts on OOM or size overflow (cm_realloc policy).
 */
void cm_buf_reserve(struct cm_buf *b, size_t extra) {
    if (b->cap - b->len >= extra)
        return;
    size_t need = b->len + extra;
    if (need < b->len)
        abort(); /* size_t overflow: no allocator could satisfy it */
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        size_t step = cap < ((size_t)1 << 30) ? cap : ((size_t)1 << 30);
        cap = cap + step < cap ? need : cap + step;
    }
    b->data = cm_realloc(b->data, cap);
    b->cap = cap;
}

/* Appends n bytes. The source must not point into b's own data if growth may occur. */
void cm_buf_append(struct cm_buf *b, const void *p, size_t n) {
    if (n == 0)
        return;
    cm_buf_reserve(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

/* Appends formatted text; formats once into the free space and retries once if too small. */
void cm_buf_appendf(struct cm_buf *b, const char *fmt, ...) {
    va_list ap;
    size_t avail = b->cap - b->len;
    va_start(ap, fmt);
    int n = vsnprintf(avail ? b->data + b->len : NULL, avail, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= avail) {
        cm_buf_reserve(b, (size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

/* Escapes byte by byte; see cm_buf.h. */
void cm_buf_append_json_str(struct cm_buf *b, const char *s, size_t len) {
    cm_buf_append(b, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            cm_buf_appendf(b, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            cm_buf_appendf(b, "\\u%04x", ch);
        else
            cm_buf_append(b, &s[i], 1);
    }
    cm_buf_append(b, "\"", 1);
}

/* Drops the first n bytes with memmove. O(len - n). */
void cm_buf_consume(struct cm_buf *b, size_t n) {
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

/* Empties b, keeping the allocation for reuse. */
void cm_buf_clear(struct cm_buf *b) {
    b->len = 0;
}
