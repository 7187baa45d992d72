/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the transfer segment-descriptor decoder (xfer_desc_decode). */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct xfer_desc *d = NULL;
    /* Also try with a valid checksum, so the fuzzer reaches the body parser. */
    uint8_t *copy = size >= 24 && size <= (1u << 20) ? malloc(size) : NULL;
    if (xfer_desc_decode(data, size, &d) == 0) {
        for (uint32_t i = 0; i < d->n_buf; i++)
            (void)xfer_desc_find_buf(d, d->buf[i].addr, d->buf[i].len);
        xfer_desc_free(d);
    }
    if (copy) {
        memcpy(copy, data, size);
        xfer_put_u32(copy, XFER_DESC_MAGIC);
        xfer_put_u16(copy + 4, XFER_DESC_VERSION);
        xfer_put_u16(copy + 6, 24);
        xfer_put_u32(copy + 12, (uint32_t)size);
        xfer_put_u32(copy + 16, 0);
        xfer_put_u32(copy + 20, 0);
        xfer_put_u32(copy + 16, xfer_crc32c(0, copy, size));
        if (xfer_desc_decode(copy, size, &d) == 0) {
            for (uint32_t i = 0; i < d->n_buf; i++)
                if (xfer_desc_find_buf(d, d->buf[i].addr, d->buf[i].len) != (int)i)
                    __builtin_trap();
            xfer_desc_free(d);
        }
        free(copy);
    }
    return 0;
}
