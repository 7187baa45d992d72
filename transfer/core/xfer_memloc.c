/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Default memory-location hook for builds without transfer/core/xfer_cuda.c: all memory is host
 * memory ("cpu:0").
 */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include <errno.h>
#include <stdio.h>

#ifndef XFER_HAVE_CUDA_MEMLOC
/* Writes "cpu:0" into buf. Returns 0 or -ENOSPC. Thread-safe. */
int xfer__mem_location(const void *addr, char *buf, size_t len) {
    (void)addr;
    int n = snprintf(buf, len, "cpu:0");
    return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}
#endif
