/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the SSD tier's record and index-entry decoders (storage/sto_record.c). The
 * input is read as a bucket file (records back to back) and as a meta file (entries back to
 * back), as the restart scan does; whatever decodes must re-encode to the same bytes.
 */
#include "common/fmacros.h"

#include "storage/sto_record.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t out[STO_ENT_HDR + 4096];
    struct sto_rec r;
    for (size_t pos = 0; pos < size;) {
        int n = sto_rec_decode(data + pos, size - pos, &r);
        if (n <= 0)
            break;
        if (sto_rec_encode(&r, out) != (size_t)n || memcmp(out, data + pos, (size_t)n) != 0)
            __builtin_trap();
        if (r.rec_len == 0 || r.rec_len > size - pos)
            break;
        pos += (size_t)r.rec_len;
    }
    for (size_t pos = 0; pos < size;) {
        int n = sto_ent_decode(data + pos, size - pos, &r);
        if (n <= 0)
            break;
        if (sto_ent_encode(&r, out) != (size_t)n || memcmp(out, data + pos, (size_t)n) != 0)
            __builtin_trap();
        pos += (size_t)n;
    }
    return 0;
}
