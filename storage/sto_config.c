/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Configuration of the SSD tier: Mooncake's defaults and its MOONCAKE_OFFLOAD_* environment
 * variables, with their aliases, as one table. A bad value is an error that names the variable.
 */
#include "common/fmacros.h"

#include "storage/sto.h"
#include "storage/sto_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum cfg_type { T_U64, T_BOOL, T_RATIO, T_STR, T_BACKEND, T_POLICY };

/* One variable: its name, an alias (or NULL), its type, bounds and field. */
struct cfg_var {
    const char *name;
    const char *alias;
    enum cfg_type type;
    uint64_t min, max;
    size_t off;
    size_t cap; /* T_STR: field size */
};

#define F(field) offsetof(struct sto_config, field)
#define U64MAX   ((uint64_t)INT64_MAX)

static const struct cfg_var vars[] = {
    {"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", NULL, T_STR, 0, 0, F(path), 4096},
    {"MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR", NULL, T_BACKEND, 0, 0, F(backend), 0},
    {"MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES", NULL, T_U64, 1 << 20, U64MAX, F(local_buffer_size),
     0},
    {"MOONCAKE_OFFLOAD_SCANMETA_ITERATOR_KEYS_LIMIT", "MOONCAKE_SCANMETA_ITERATOR_KEYS_LIMIT",
     T_U64, 1, U64MAX, F(scanmeta_keys_limit), 0},
    {"MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", NULL, T_U64, 1, U64MAX, F(total_size_limit), 0},
    {"MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT", NULL, T_U64, 1, U64MAX, F(total_keys_limit), 0},
    {"MOONCAKE_OFFLOAD_HEARTBEAT_INTERVAL_SECONDS", NULL, T_U64, 1, 86400, F(heartbeat_interval_s),
     0},
    {"MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_INTERVAL_SECONDS", NULL, T_U64, 1, 86400,
     F(buffer_gc_interval_s), 0},
    {"MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS", NULL, T_U64, 1, U64MAX, F(buffer_gc_ttl_ms), 0},
    {"MOONCAKE_OFFLOAD_USE_URING", "MOONCAKE_USE_URING", T_BOOL, 0, 0, F(use_uring), 0},
    {"MOONCAKE_OFFLOAD_ENABLE_DISK_WATERMARK_EVICTION", NULL, T_BOOL, 0, 0, F(watermark_eviction),
     0},
    {"MOONCAKE_OFFLOAD_DISK_EVICTION_HIGH_WATERMARK_RATIO",
     "MOONCAKE_DISK_EVICTION_HIGH_WATERMARK_RATIO", T_RATIO, 0, 0, F(high_watermark), 0},
    {"MOONCAKE_OFFLOAD_DISK_EVICTION_LOW_WATERMARK_RATIO",
     "MOONCAKE_DISK_EVICTION_LOW_WATERMARK_RATIO", T_RATIO, 0, 0, F(low_watermark), 0},
    {"MOONCAKE_OFFLOAD_BUCKET_SIZE_LIMIT_BYTES", NULL, T_U64, 4096, U64MAX, F(bucket_size_limit),
     0},
    {"MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT", NULL, T_U64, 1, 1000000, F(bucket_keys_limit), 0},
    {"MOONCAKE_OFFLOAD_BUCKET_MAX_TOTAL_SIZE", "MOONCAKE_BUCKET_MAX_TOTAL_SIZE", T_U64, 0, U64MAX,
     F(bucket_max_total_size), 0},
    {"MOONCAKE_OFFLOAD_BUCKET_MAX_PHYSICAL_BYTES", NULL, T_U64, 0, U64MAX, F(bucket_max_physical),
     0},
    {"MOONCAKE_OFFLOAD_DISK_SCAN_CACHE_MS", NULL, T_U64, 0, U64MAX, F(disk_scan_cache_ms), 0},
    {"MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY", "MOONCAKE_BUCKET_EVICTION_POLICY", T_POLICY, 0, 0,
     F(bucket_evict), 0},
    {"MOONCAKE_OFFLOAD_ENABLE_EVICTION", "ENABLE_EVICTION", T_BOOL, 0, 0, F(fpk_eviction), 0},
    {"MOONCAKE_OFFLOAD_FSDIR", NULL, T_STR, 0, 0, F(fsdir), 256},
    {"MOONCAKE_OFFSET_EVICTION_POLICY", NULL, T_POLICY, 0, 0, F(offset_evict), 0},
    {"MOONCAKE_OFFSET_RECORD_CRC", NULL, T_BOOL, 0, 0, F(record_crc), 0},
};

static const char *const backend_names[] = {
    [STO_BACKEND_BUCKET] = "bucket_storage_backend",
    [STO_BACKEND_FILE_PER_KEY] = "file_per_key_storage_backend",
    [STO_BACKEND_OFFSET] = "offset_allocator_storage_backend",
};

const char *sto_backend_name(enum sto_backend_kind kind) {
    return (unsigned)kind < 3 ? backend_names[kind] : "unknown";
}

void sto_config_defaults(struct sto_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->path, sizeof(cfg->path), "%s", "/data/file_storage");
    cfg->backend = STO_BACKEND_BUCKET;
    cfg->local_buffer_size = 1342177280ull;
    cfg->scanmeta_keys_limit = 20000;
    cfg->total_size_limit = 2199023255552ull;
    cfg->total_keys_limit = 10000000;
    cfg->heartbeat_interval_s = 10;
    cfg->buffer_gc_interval_s = 1;
    cfg->buffer_gc_ttl_ms = 5000;
    cfg->use_uring = 0;
    cfg->watermark_eviction = 1;
    cfg->high_watermark = 0.90;
    cfg->low_watermark = 0.80;
    cfg->bucket_size_limit = 256ull << 20;
    cfg->bucket_keys_limit = 500;
    cfg->bucket_max_total_size = 0;
    cfg->bucket_max_physical = 0;
    cfg->disk_scan_cache_ms = 500;
    cfg->bucket_evict = STO_EVICT_NONE;
    cfg->fpk_eviction = 1;
    snprintf(cfg->fsdir, sizeof(cfg->fsdir), "%s", "file_per_key_dir");
    cfg->offset_evict = STO_EVICT_NONE;
    cfg->record_crc = 1;
}

char *sto__err(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return err;
}

/* Parses a decimal unsigned integer in [min, max]. Returns 0 or -EINVAL. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
    if (*s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, int *out) {
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i]))
            return *out = 1, 0;
        if (!strcasecmp(s, no[i]))
            return *out = 0, 0;
    }
    return -EINVAL;
}

static int parse_policy(const char *s, enum sto_evict_policy *out) {
    if (!strcasecmp(s, "none"))
        *out = STO_EVICT_NONE;
    else if (!strcasecmp(s, "fifo"))
        *out = STO_EVICT_FIFO;
    else if (!strcasecmp(s, "lru"))
        *out = STO_EVICT_LRU;
    else
        return -EINVAL;
    return 0;
}

/* Applies one variable's value; on error writes the message. */
static int apply(struct sto_config *cfg, const struct cfg_var *v, const char *name, const char *val,
                 char *err, size_t errlen) {
    char *field = (char *)cfg + v->off;
    switch (v->type) {
    case T_U64:
        if (parse_u64(val, v->min, v->max, (uint64_t *)field) == 0)
            return 0;
        sto__err(err, errlen, "%s: invalid value \"%s\" (expected an integer from %llu to %llu)",
                 name, val, (unsigned long long)v->min, (unsigned long long)v->max);
        return -EINVAL;
    case T_BOOL:
        if (parse_bool(val, (int *)field) == 0)
            return 0;
        sto__err(err, errlen, "%s: invalid value \"%s\" (expected true, false, 1 or 0)", name, val);
        return -EINVAL;
    case T_RATIO: {
        char *end;
        errno = 0;
        double d = strtod(val, &end);
        if (!errno && end != val && !*end && d > 0.0 && d <= 1.0) {
            *(double *)field = d;
            return 0;
        }
        sto__err(err, errlen, "%s: invalid value \"%s\" (expected a ratio in (0, 1])", name, val);
        return -EINVAL;
    }
    case T_STR:
        if (*val && strlen(val) < v->cap) {
            snprintf(field, v->cap, "%s", val);
            return 0;
        }
        sto__err(err, errlen, "%s: invalid value \"%s\" (expected 1 to %zu characters)", name, val,
                 v->cap - 1);
        return -EINVAL;
    case T_BACKEND:
        for (int k = 0; k < 3; k++) {
            if (!strcmp(val, backend_names[k])) {
                *(enum sto_backend_kind *)field = (enum sto_backend_kind)k;
                return 0;
            }
        }
        sto__err(err, errlen,
                 "%s: invalid value \"%s\" (expected bucket_storage_backend, "
                 "file_per_key_storage_backend or offset_allocator_storage_backend)",
                 name, val);
        return -EINVAL;
    case T_POLICY:
        if (parse_policy(val, (enum sto_evict_policy *)field) == 0)
            return 0;
        sto__err(err, errlen, "%s: invalid value \"%s\" (expected none, fifo or lru)", name, val);
        return -EINVAL;
    }
    return -EINVAL;
}

int sto_config_from_env(struct sto_config *cfg, char *err, size_t errlen) {
    sto_config_defaults(cfg);
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const struct cfg_var *v = &vars[i];
        const char *name = v->name;
        const char *val = getenv(name);
        if (!val && v->alias) {
            name = v->alias;
            val = getenv(name);
        }
        if (!val)
            continue;
        int rc = apply(cfg, v, name, val, err, errlen);
        if (rc)
            return rc;
    }
    if (cfg->low_watermark > cfg->high_watermark) {
        sto__err(err, errlen,
                 "MOONCAKE_OFFLOAD_DISK_EVICTION_LOW_WATERMARK_RATIO: %g is above the high "
                 "watermark %g",
                 cfg->low_watermark, cfg->high_watermark);
        return -EINVAL;
    }
    if (strchr(cfg->fsdir, '/') || !strcmp(cfg->fsdir, ".") || !strcmp(cfg->fsdir, "..")) {
        sto__err(err, errlen,
                 "MOONCAKE_OFFLOAD_FSDIR: invalid value \"%s\" (expected a single directory "
                 "name)",
                 cfg->fsdir);
        return -EINVAL;
    }
    return 0;
}
