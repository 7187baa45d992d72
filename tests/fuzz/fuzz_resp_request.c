/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the RESP request parser. The first input byte picks the limits and
 * the chunk size; the rest is a request stream. It is parsed twice, whole and fed in
 * chunks, and the two runs must agree request by request (arguments, consumed bytes,
 * error text). Argument offsets must stay inside the consumed bytes.
 */
#include "common/fmacros.h"

#include "common/cm_buf.h"
#include "redis-compat/resp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Appends a canonical rendering of each request (or the error) to out. */
static void run(const uint8_t *data, size_t n, size_t chunk, const struct resp_limits *lim,
                int auth, struct cm_buf *out) {
    struct resp_parser p;
    struct cm_buf q;
    resp_parser_init(&p, lim);
    p.auth_required = auth;
    cm_buf_init(&q);
    size_t fed = 0;
    for (;;) {
        enum resp_result rc = resp_parse_request(&p, q.data, q.len);
        if (rc == RESP_OK) {
            if (p.consumed == 0 || p.consumed > q.len)
                abort();
            cm_buf_appendf(out, "R%d:", p.argc);
            for (int i = 0; i < p.argc; i++) {
                const char *a = resp_arg_ptr(&p, q.data, i);
                if (!p.inline_base && p.argv[i].off + p.argv[i].len > p.consumed)
                    abort();
                cm_buf_appendf(out, "%zu:", p.argv[i].len);
                cm_buf_append(out, a, p.argv[i].len);
            }
            cm_buf_consume(&q, p.consumed);
            continue;
        }
        if (rc == RESP_ERROR) {
            cm_buf_appendf(out, "E:%s", p.errstr);
            cm_buf_fini(&q);
            resp_parser_fini(&p);
            return; /* what is left buffered depends on the chunking */
        }
        if (p.want && p.want <= q.len)
            abort(); /* the hint must be ahead of what we have */
        if (fed == n)
            break;
        size_t k = n - fed < chunk ? n - fed : chunk;
        cm_buf_append(&q, data + fed, k);
        fed += k;
    }
    cm_buf_appendf(out, "|left=%zu", q.len);
    cm_buf_fini(&q);
    resp_parser_fini(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry point. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    uint8_t ctl = data[0];
    data++;
    size--;
    struct resp_limits lim;
    resp_limits_default(&lim);
    if (ctl & 0x80) {
        lim.max_bulk_len = ctl & 0x0f;
        lim.max_multibulk_len = (ctl >> 4) & 0x07;
        lim.max_inline_len = 16 + (ctl & 0x1f);
    }
    size_t chunk = 1 + (ctl & 0x07);
    int auth = (ctl & 0x60) == 0x60;
    struct cm_buf whole, split;
    cm_buf_init(&whole);
    cm_buf_init(&split);
    run(data, size, size ? size : 1, &lim, auth, &whole);
    run(data, size, chunk, &lim, auth, &split);
    /*
     * Both runs must agree. The one legitimate difference: a "too big ... request/string"
     * error depends on how much is buffered while a line is still open (as in Redis), so
     * the chunked run may stop there while the whole run went on. Then the requests
     * before that error must still match.
     */
    static const char big[] = "E:ERR Protocol error: too big";
    const char *e = memmem(split.data, split.len, big, sizeof(big) - 1);
    size_t cmp = e ? (size_t)(e - split.data) : split.len;
    if (e ? (whole.len < cmp || memcmp(whole.data, split.data, cmp) != 0)
          : (whole.len != split.len || memcmp(whole.data, split.data, cmp) != 0))
        abort();
    cm_buf_fini(&whole);
    cm_buf_fini(&split);
    return 0;
}
