/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MC.* commands of the distributed store, part 1: client and segment lifecycle and the write
 * path (put / upsert start, end, revoke, with batch forms). Thin adapters over server/pool/:
 * parse, call the pool under its mutex, write the reply. A segment's DESC blob is checked with
 * the transfer engine's xfer_desc_inspect(). Wire protocol: docs/store.md.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_mc.h"
#include "server/srv_oplog.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"
#include "server/srv_snapshot.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "redis-compat/resp_write.h"
#include "transfer/xfer.h"

#include <errno.h>
#include <string.h>

#define SRV_MC_NAME_CAP (POOL_MAX_NAME_LEN + 1)

/* ---- clients ----------------------------------------------------------------------------- */

void srv_mc_register_command(struct srv_client *c) {
    struct pool_uuid id;
    char host[SRV_MC_NAME_CAP];
    if (srv_mc_arg_client(c, 1, &id) < 0 || srv_mc_arg_str(c, 2, "host", host, sizeof(host)) < 0)
        return;
    srv_mc_lock();
    int rc = pool_client_register(srv_mc_pool, &id, host, srv_mc_now());
    if (rc == 0)
        srv_oplog_log_register(&id, host);
    srv_mc_unlock();
    srv_mc_reply_status(c, rc);
}

void srv_mc_ping_command(struct srv_client *c) {
    struct pool_uuid id;
    if (srv_mc_arg_client(c, 1, &id) < 0)
        return;
    struct pool_ping_reply r;
    srv_mc_lock();
    pool_client_ping(srv_mc_pool, &id, srv_mc_now(), &r);
    srv_mc_unlock();
    resp_add_map_hdr(&c->out, c->proto, 2);
    srv_mc_add_field(c, "view_version");
    resp_add_int(&c->out, r.view_version);
    srv_mc_add_field(c, "status");
    srv_mc_add_field(c, r.status == POOL_CLIENT_OK ? "OK" : "NEED_REMOUNT");
}

/* ---- segments ---------------------------------------------------------------------------- */

/* Strings of one segment spec being parsed. */
struct srv_mc_spec_buf {
    char name[SRV_MC_NAME_CAP];
    char endpoint[SRV_MC_NAME_CAP];
    char protocol[SRV_MC_NAME_CAP];
};

/* Parses name, base and size at argv[i..i+2] into spec (strings in sb). */
static int srv_mc_parse_geometry(struct srv_client *c, int i, struct srv_mc_spec_buf *sb,
                                 struct pool_segment_spec *spec) {
    memset(spec, 0, sizeof(*spec));
    if (srv_mc_arg_str(c, i, "segment name", sb->name, sizeof(sb->name)) < 0 ||
        srv_mc_arg_u64(c, i + 1, "base", 1, 0, INT64_MAX, &spec->base) < 0 ||
        srv_mc_arg_u64(c, i + 2, "size", 0, POOL_MIN_SEGMENT, POOL_MAX_SEGMENT, &spec->size) < 0)
        return -1;
    if (spec->base + spec->size > (uint64_t)INT64_MAX) {
        srv_reply_error(c, "INVALID_PARAMS segment range beyond 2^63 - 1");
        return -1;
    }
    spec->name = sb->name;
    return 0;
}

#define SRV_MC_DESC_REGIONS 16 /* buffers looked at without an allocation */

/* 1 when [base, base + size) lies inside one of the n regions. */
static int srv_mc_regions_hold(const struct xfer_desc_region *r, size_t n, uint64_t base,
                               uint64_t size) {
    for (size_t k = 0; k < n; k++)
        if (base >= r[k].addr && size <= r[k].len && base - r[k].addr <= r[k].len - size)
            return 1;
    return 0;
}

/* Checks spec's descriptor with the transfer engine: it must decode (magic, version, CRC,
 * bounds) and register a buffer holding the whole segment. Replies the error and returns -1. */
static int srv_mc_check_desc(struct srv_client *c, const struct pool_segment_spec *spec) {
    struct xfer_desc_summary sum;
    struct xfer_desc_region stack[SRV_MC_DESC_REGIONS], *reg = stack;
    int rc = xfer_desc_inspect(spec->desc, spec->desc_len, &sum, reg, SRV_MC_DESC_REGIONS);
    if (rc == 0 && sum.n_buffers > SRV_MC_DESC_REGIONS) {
        reg = cm_malloc(sum.n_buffers * sizeof(*reg));
        rc = xfer_desc_inspect(spec->desc, spec->desc_len, &sum, reg, sum.n_buffers);
    }
    int ok = rc == 0 && srv_mc_regions_hold(reg, sum.n_buffers, spec->base, spec->size);
    if (reg != stack)
        cm_free(reg);
    if (rc < 0) {
        srv_reply_errorf(c, "INVALID_PARAMS DESC is not a transfer engine segment descriptor (%s)",
                         rc == -CM_EINVALID_VERSION ? "unknown version" : "corrupt or truncated");
        return -1;
    }
    if (!ok) {
        srv_reply_errorf(c,
                         "INVALID_PARAMS segment [0x%llx, 0x%llx) is not inside a buffer "
                         "registered in its DESC (%u buffers)",
                         (unsigned long long)spec->base,
                         (unsigned long long)(spec->base + spec->size), sum.n_buffers);
        return -1;
    }
    return 0;
}

/* Checks a descriptor blob argument (spec's base and size already parsed): at most 64 KiB,
 * and a descriptor holding the segment when not empty. */
static int srv_mc_parse_desc(struct srv_client *c, int i, struct pool_segment_spec *spec) {
    if (c->argv[i].len > POOL_MAX_DESC_LEN) {
        srv_reply_error(c, "INVALID_PARAMS descriptor longer than 65536 bytes");
        return -1;
    }
    spec->desc = c->argv[i].len ? c->argv[i].p : NULL;
    spec->desc_len = c->argv[i].len;
    return spec->desc_len ? srv_mc_check_desc(c, spec) : 0;
}

void srv_mc_mount_command(struct srv_client *c) {
    struct pool_uuid id;
    struct srv_mc_spec_buf sb;
    struct pool_segment_spec spec;
    if (srv_mc_arg_client(c, 1, &id) < 0 || srv_mc_parse_geometry(c, 2, &sb, &spec) < 0)
        return;
    for (int i = 5; i < c->argc; i += 2) {
        if (i + 1 >= c->argc) {
            srv_reply_syntax_error(c);
            return;
        }
        if (srv_arg_is(c, i, "endpoint")) {
            if (srv_mc_arg_str(c, i + 1, "endpoint", sb.endpoint, sizeof(sb.endpoint)) < 0)
                return;
            spec.endpoint = sb.endpoint;
        } else if (srv_arg_is(c, i, "protocol")) {
            if (srv_mc_arg_str(c, i + 1, "protocol", sb.protocol, sizeof(sb.protocol)) < 0)
                return;
            spec.protocol = sb.protocol[0] ? sb.protocol : NULL;
        } else if (srv_arg_is(c, i, "desc")) {
            if (srv_mc_parse_desc(c, i + 1, &spec) < 0)
                return;
        } else {
            srv_reply_syntax_error(c);
            return;
        }
    }
    srv_mc_lock();
    int rc = pool_segment_mount(srv_mc_pool, &id, &spec, srv_mc_now());
    if (rc == 0)
        srv_oplog_log_mount(srv_mc_pool, spec.name);
    srv_mc_unlock();
    srv_mc_reply_status(c, rc);
}

void srv_mc_remount_command(struct srv_client *c) {
    struct pool_uuid id;
    if ((c->argc - 2) % 6 != 0) {
        srv_reply_wrong_arity(c, "mc.remount");
        return;
    }
    if (srv_mc_arg_client(c, 1, &id) < 0)
        return;
    size_t n = (size_t)(c->argc - 2) / 6;
    struct pool_segment_spec *specs = cm_calloc(n, sizeof(*specs));
    struct srv_mc_spec_buf *sb = cm_malloc(n * sizeof(*sb));
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        int i = 2 + (int)k * 6;
        rc = srv_mc_parse_geometry(c, i, &sb[k], &specs[k]);
        if (rc == 0)
            rc = srv_mc_arg_str(c, i + 3, "endpoint", sb[k].endpoint, sizeof(sb[k].endpoint));
        if (rc == 0)
            rc = srv_mc_arg_str(c, i + 4, "protocol", sb[k].protocol, sizeof(sb[k].protocol));
        if (rc == 0)
            rc = srv_mc_parse_desc(c, i + 5, &specs[k]);
        specs[k].endpoint = sb[k].endpoint[0] ? sb[k].endpoint : NULL;
        specs[k].protocol = sb[k].protocol[0] ? sb[k].protocol : NULL;
    }
    if (rc == 0) {
        srv_mc_lock();
        rc = pool_segment_remount(srv_mc_pool, &id, specs, n, srv_mc_now());
        for (size_t k = 0; k < n; k++) /* the ones before a failure stay mounted */
            srv_oplog_log_mount(srv_mc_pool, specs[k].name);
        srv_mc_unlock();
        srv_mc_reply_status(c, rc);
    }
    cm_free(specs);
    cm_free(sb);
}

void srv_mc_unmount_command(struct srv_client *c) {
    struct pool_uuid id;
    char name[SRV_MC_NAME_CAP];
    if (srv_mc_arg_client(c, 1, &id) < 0 ||
        srv_mc_arg_str(c, 2, "segment name", name, sizeof(name)) < 0)
        return;
    srv_mc_lock();
    int rc = pool_segment_unmount(srv_mc_pool, &id, name, srv_mc_now());
    srv_mc_unlock();
    srv_mc_reply_status(c, rc);
}

void srv_mc_gracefulunmount_command(struct srv_client *c) {
    struct pool_uuid id;
    char name[SRV_MC_NAME_CAP];
    uint64_t grace;
    if (srv_mc_arg_client(c, 1, &id) < 0 ||
        srv_mc_arg_str(c, 2, "segment name", name, sizeof(name)) < 0 ||
        srv_mc_arg_u64(c, 3, "grace period", 0, 0, INT64_MAX / 2, &grace) < 0)
        return;
    srv_mc_lock();
    int rc = pool_segment_unmount_graceful(srv_mc_pool, &id, name, (int64_t)grace, srv_mc_now());
    if (rc == 0)
        srv_oplog_log_graceful(name, (int64_t)grace);
    srv_mc_unlock();
    srv_mc_reply_status(c, rc);
}

void srv_mc_querysegment_command(struct srv_client *c) {
    char name[SRV_MC_NAME_CAP];
    if (srv_mc_arg_str(c, 1, "segment name", name, sizeof(name)) < 0)
        return;
    struct pool_segment_info info;
    srv_mc_lock();
    int rc = pool_segment_query(srv_mc_pool, name, &info);
    if (rc == 0)
        srv_mc_add_segment(c, &info);
    srv_mc_unlock();
    if (rc < 0)
        srv_mc_reply_err(c, rc);
}

/* pool_segment_foreach visitor: counts, then writes. */
struct srv_mc_seg_walk {
    struct srv_client *c;
    long n;
};

static void srv_mc_seg_count(void *arg, const struct pool_segment_info *info) {
    (void)info;
    ((struct srv_mc_seg_walk *)arg)->n++;
}

static void srv_mc_seg_emit(void *arg, const struct pool_segment_info *info) {
    srv_mc_add_segment(((struct srv_mc_seg_walk *)arg)->c, info);
}

void srv_mc_segments_command(struct srv_client *c) {
    struct srv_mc_seg_walk w = {c, 0};
    srv_mc_lock();
    pool_segment_foreach(srv_mc_pool, srv_mc_seg_count, &w);
    resp_add_array_hdr(&c->out, w.n);
    pool_segment_foreach(srv_mc_pool, srv_mc_seg_emit, &w);
    srv_mc_unlock();
}

void srv_mc_serviceready_command(struct srv_client *c) {
    resp_add_bulk(&c->out, SRV_VERSION, strlen(SRV_VERSION));
}

/* ---- writes ------------------------------------------------------------------------------ */

typedef int srv_mc_start_fn(struct pool *p, const struct pool_uuid *client, const void *key,
                            size_t klen, uint64_t size, const struct pool_put_config *cfg,
                            int64_t now, struct pool_replica_desc *out, size_t *nout);
typedef int srv_mc_key_fn(struct pool *p, const struct pool_uuid *client, const void *key,
                          size_t klen, int64_t now);

/* MC.PUTSTART / MC.UPSERTSTART client key size [options]. */
static void srv_mc_write_start(struct srv_client *c, srv_mc_start_fn *fn) {
    struct pool_uuid id;
    uint64_t size;
    struct pool_put_config cfg;
    if (srv_mc_arg_client(c, 1, &id) < 0 ||
        srv_mc_arg_u64(c, 3, "size", 0, 1, POOL_MAX_OBJECT_SIZE, &size) < 0 ||
        srv_mc_parse_put_options(c, 4, &cfg) < 0)
        return;
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t n = 0;
    srv_mc_lock();
    int rc = fn(srv_mc_pool, &id, c->argv[2].p, c->argv[2].len, size, &cfg, srv_mc_now(), d, &n);
    if (rc == 0 && srv_mc_compact(c)) { /* [element, segment table] */
        struct srv_mc_segtab t;
        srv_mc_segtab_init(&t);
        resp_add_array_hdr(&c->out, 2);
        srv_mc_compact_put(c, &t, d, n);
        srv_mc_segtab_write(c, &t);
    } else if (rc == 0) {
        srv_mc_add_replicas(c, d, n);
    }
    if (fn == pool_upsert_start) /* the old value is no longer readable */
        srv_oplog_log_key(srv_mc_pool, c->argv[2].p, c->argv[2].len);
    srv_mc_unlock();
    if (rc < 0)
        srv_mc_reply_err(c, rc);
    srv_mc_put_config_free(&cfg);
}

/* MC.BATCH{PUT,UPSERT}START client numkeys key size [key size ...] [options]. */
static void srv_mc_batch_start(struct srv_client *c, srv_mc_start_fn *fn) {
    struct pool_uuid id;
    uint64_t nkeys;
    struct pool_put_config cfg;
    if (srv_mc_arg_client(c, 1, &id) < 0 ||
        srv_mc_arg_u64(c, 2, "numkeys", 0, 1, (uint64_t)(c->argc - 3) / 2, &nkeys) < 0)
        return;
    int opts = 3 + 2 * (int)nkeys;
    uint64_t *sizes = cm_malloc(nkeys * sizeof(uint64_t));
    for (uint64_t k = 0; k < nkeys; k++) {
        if (srv_mc_arg_u64(c, 4 + 2 * (int)k, "size", 0, 1, POOL_MAX_OBJECT_SIZE, &sizes[k]) < 0) {
            cm_free(sizes);
            return;
        }
    }
    if (srv_mc_parse_put_options(c, opts, &cfg) < 0) {
        cm_free(sizes);
        return;
    }
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    struct srv_mc_segtab t, *tp = srv_mc_compact(c) ? &t : NULL;
    srv_mc_segtab_init(&t);
    if (tp != NULL) /* compact: [elements, segment table] */
        resp_add_array_hdr(&c->out, 2);
    resp_add_array_hdr(&c->out, (long)nkeys);
    srv_mc_lock();
    int64_t now = srv_mc_now();
    for (uint64_t k = 0; k < nkeys; k++) {
        const struct srv_arg *key = &c->argv[3 + 2 * k];
        size_t n = 0;
        int rc = fn(srv_mc_pool, &id, key->p, key->len, sizes[k], &cfg, now, d, &n);
        if (rc == 0 && tp != NULL)
            srv_mc_compact_put(c, tp, d, n);
        else if (rc == 0)
            srv_mc_add_replicas(c, d, n);
        else
            srv_mc_add_err(c, rc);
        if (fn == pool_upsert_start)
            srv_oplog_log_key(srv_mc_pool, key->p, key->len);
    }
    if (tp != NULL)
        srv_mc_segtab_write(c, tp);
    srv_mc_unlock();
    srv_mc_put_config_free(&cfg);
    cm_free(sizes);
}

/* client key: +OK or the pool's error. */
static void srv_mc_key_op(struct srv_client *c, srv_mc_key_fn *fn) {
    struct pool_uuid id;
    if (srv_mc_arg_client(c, 1, &id) < 0)
        return;
    srv_mc_lock();
    int rc = fn(srv_mc_pool, &id, c->argv[2].p, c->argv[2].len, srv_mc_now());
    if (rc == 0)
        srv_oplog_log_key(srv_mc_pool, c->argv[2].p, c->argv[2].len);
    srv_mc_unlock();
    srv_mc_reply_status(c, rc);
}

/* client key [key ...]: one +OK or error per key. */
static void srv_mc_batch_key_op(struct srv_client *c, srv_mc_key_fn *fn) {
    struct pool_uuid id;
    if (srv_mc_arg_client(c, 1, &id) < 0)
        return;
    resp_add_array_hdr(&c->out, c->argc - 2);
    srv_mc_lock();
    int64_t now = srv_mc_now();
    for (int i = 2; i < c->argc; i++) {
        int rc = fn(srv_mc_pool, &id, c->argv[i].p, c->argv[i].len, now);
        srv_mc_add_status(c, rc);
        if (rc == 0)
            srv_oplog_log_key(srv_mc_pool, c->argv[i].p, c->argv[i].len);
    }
    srv_mc_unlock();
}

void srv_mc_putstart_command(struct srv_client *c) {
    srv_mc_write_start(c, pool_put_start);
}

void srv_mc_upsertstart_command(struct srv_client *c) {
    srv_mc_write_start(c, pool_upsert_start);
}

void srv_mc_batchputstart_command(struct srv_client *c) {
    srv_mc_batch_start(c, pool_put_start);
}

void srv_mc_batchupsertstart_command(struct srv_client *c) {
    srv_mc_batch_start(c, pool_upsert_start);
}

void srv_mc_putend_command(struct srv_client *c) {
    srv_mc_key_op(c, pool_put_end);
}

void srv_mc_putrevoke_command(struct srv_client *c) {
    srv_mc_key_op(c, pool_put_revoke);
}

void srv_mc_upsertend_command(struct srv_client *c) {
    srv_mc_key_op(c, pool_upsert_end);
}

void srv_mc_upsertrevoke_command(struct srv_client *c) {
    srv_mc_key_op(c, pool_upsert_revoke);
}

void srv_mc_batchputend_command(struct srv_client *c) {
    srv_mc_batch_key_op(c, pool_put_end);
}

void srv_mc_batchputrevoke_command(struct srv_client *c) {
    srv_mc_batch_key_op(c, pool_put_revoke);
}

void srv_mc_batchupsertend_command(struct srv_client *c) {
    srv_mc_batch_key_op(c, pool_upsert_end);
}

void srv_mc_batchupsertrevoke_command(struct srv_client *c) {
    srv_mc_batch_key_op(c, pool_upsert_revoke);
}

void srv_mc_copyend_command(struct srv_client *c) {
    srv_mc_key_op(c, pool_copy_end);
}

void srv_mc_copyrevoke_command(struct srv_client *c) {
    srv_mc_key_op(c, pool_copy_revoke);
}

void srv_mc_moveend_command(struct srv_client *c) {
    srv_mc_key_op(c, pool_move_end);
}

void srv_mc_moverevoke_command(struct srv_client *c) {
    srv_mc_key_op(c, pool_move_revoke);
}

/* ---- snapshots --------------------------------------------------------------------------- */

void srv_mc_snapshot_command(struct srv_client *c) {
    int rc = srv_snapshot_request();
    if (rc == -EINVAL)
        srv_reply_error(c, "ERR snapshots are not enabled (start with --enable_snapshot yes)");
    else if (rc == -EBUSY)
        srv_reply_error(c, "ERR a snapshot is already in progress");
    else
        resp_add_simple(&c->out, "Snapshot started");
}
