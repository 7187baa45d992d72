/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the RESP2/RESP3 reply reader. The first byte picks a chunk size; the
 * rest is a reply stream, read whole and in chunks: both runs must produce the same replies
 * (compared through a canonical re-encoding with the writer) and the same error state.
 */
#include "common/fmacros.h"

#include "common/cm_buf.h"
#include "redis-compat/resp.h"
#include "redis-compat/resp_write.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Canonical encoding of a reply tree (RESP3 framing, exact bytes of every string). */
static void encode(const struct resp_reply *r, struct cm_buf *out) {
    cm_buf_appendf(out, "%c", r->prefix);
    switch (r->type) {
    case RESP_REPLY_INTEGER:
    case RESP_REPLY_BOOL:
        resp_add_int(out, r->integer);
        break;
    case RESP_REPLY_NIL:
        break;
    default:
        if (r->str) {
            if (r->type == RESP_REPLY_VERBATIM)
                cm_buf_append(out, r->vtype, 3);
            resp_add_bulk(out, r->str, r->len);
        }
        break;
    }
    if (r->elements || r->n) {
        resp_add_array_hdr(out, (long)r->n);
        for (size_t i = 0; i < r->n; i++)
            encode(&r->elements[i], out);
    }
}

static void run(const uint8_t *data, size_t n, size_t chunk, struct cm_buf *out) {
    struct resp_reader rd;
    resp_reader_init(&rd);
    size_t fed = 0;
    for (;;) {
        struct resp_reply *rep;
        int rc = resp_reader_get(&rd, &rep);
        if (rc == 1) {
            encode(rep, out);
            resp_reply_free(rep);
            continue;
        }
        if (rc < 0) {
            cm_buf_appendf(out, "E%d", rc);
            break;
        }
        if (fed == n)
            break;
        size_t k = n - fed < chunk ? n - fed : chunk;
        if (resp_reader_feed(&rd, data + fed, k) != 0)
            abort();
        fed += k;
    }
    resp_reader_fini(&rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry point. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    size_t chunk = 1 + (data[0] & 0x0f);
    data++;
    size--;
    struct cm_buf a, b;
    cm_buf_init(&a);
    cm_buf_init(&b);
    run(data, size, size ? size : 1, &a);
    run(data, size, chunk, &b);
    if (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len) != 0))
        abort();
    cm_buf_fini(&a);
    cm_buf_fini(&b);
    return 0;
}
