/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the pool snapshot loader (server/pool/pool_snap.c). The input is taken as
 * a snapshot body and sealed with a valid trailer (length and CRC-32C), so the fuzzer reaches
 * the parser instead of stopping at the checksum. Whatever loads must pass pool_check(); a
 * refusal must leave a pool that pool_destroy() frees cleanly (ASan checks both).
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "server/pool/pool.h"
#include "storage/sto_record.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size + 24);
    memcpy(buf, data, size);
    if (size >= 8)
        memcpy(buf, "CRSNAP1\n", 8); /* past the magic, most of the time */
    uint32_t crc = sto_crc32c(0, buf, size);
    memcpy(buf + size, "CRSNAPE\n", 8);
    for (int i = 0; i < 8; i++)
        buf[size + 8 + i] = (uint8_t)((uint64_t)size >> (8 * i));
    for (int i = 0; i < 4; i++)
        buf[size + 16 + i] = (uint8_t)(crc >> (8 * i));
    memset(buf + size + 20, 0, 4);
    struct pool_config cfg;
    pool_config_default(&cfg);
    cfg.seed = 1;
    struct pool *p;
    if (pool_create(&cfg, &p) != 0)
        __builtin_trap();
    struct pool_snap_meta meta;
    char err[256];
    if (pool_snapshot_load(p, buf, size + 24, 1000, &meta, err, sizeof(err)) == 0 &&
        pool_check(p) != 0)
        __builtin_trap();
    pool_destroy(p);
    free(buf);
    return 0;
}
