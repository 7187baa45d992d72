/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the transfer wire header decoder; decoded headers must re-encode exactly. */
#include "common/fmacros.h"

#include "transfer/core/xfer_wire.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct xfer_wire_hdr h;
    if (xfer_wire_decode(data, size, &h) == XFER_WIRE_HDR_LEN) {
        uint8_t out[XFER_WIRE_HDR_LEN];
        xfer_wire_encode(&h, out);
        if (memcmp(out, data, XFER_WIRE_HDR_LEN) != 0)
            __builtin_trap();
    }
    return 0;
}
