/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the redis.conf parser (cm_config_load_string) over a table with every
 * entry type. Checks: the call returns 0 or -EINVAL, an error always comes with a "line N"
 * message, every value stays within its bounds and reads back through cm_config_get.
 */
#include "common/fmacros.h"

#include "common/cm_config.h"
#include "common/cm_mem.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int f_bool, f_enum;
static long long f_int, f_mem;
static double f_dbl;
static char *f_str, *f_str2;
static const char *const f_names[] = {"alpha", "beta", "gamma", NULL};

static const struct cm_cfg_entry f_entries[] = {
    {.name = "flag", .alias = "flag-alias", .type = CM_CFG_BOOL, .ptr = &f_bool, .dflt = "no"},
    {.name = "count", .type = CM_CFG_INT, .ptr = &f_int, .min = -5, .max = 1000, .dflt = "1"},
    {.name = "mem_size",
     .alias = "mem-size",
     .type = CM_CFG_MEMORY,
     .ptr = &f_mem,
     .min = 0,
     .max = 1LL << 40,
     .dflt = "1mb",
     .flags = CM_CFG_IMMUTABLE},
    {.name = "ratio", .type = CM_CFG_DOUBLE, .ptr = &f_dbl, .dmin = 0, .dmax = 1, .dflt = "0.5"},
    {.name = "name", .type = CM_CFG_STRING, .ptr = &f_str, .dflt = "x"},
    {.name = "save", .type = CM_CFG_STRING, .ptr = &f_str2, .dflt = NULL},
    {.name = "mode", .type = CM_CFG_ENUM, .ptr = &f_enum, .dflt = "beta", .enum_names = f_names},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct cm_config c;
    char err[256], out[64];
    if (cm_config_init(&c, f_entries, sizeof(f_entries) / sizeof(f_entries[0]), err, sizeof(err)) !=
        0)
        abort();
    char *text = cm_malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    err[0] = '\0';
    int rc = cm_config_load_string(&c, text, err, sizeof(err));
    if (rc != 0 && (rc != -EINVAL || strncmp(err, "line ", 5) != 0))
        abort();
    if (f_bool != 0 && f_bool != 1)
        abort();
    if (f_int < -5 || f_int > 1000 || f_mem < 0 || f_mem > (1LL << 40) || !(f_dbl >= 0) ||
        f_dbl > 1 || f_enum < 0 || f_enum > 2 || !f_str)
        abort();
    for (size_t i = 0; i < c.n; i++)
        if (cm_config_get(&c, f_entries[i].name, out, sizeof(out)) == -ENOENT)
            abort();
    cm_free(text);
    cm_config_fini(&c);
    return 0;
}
