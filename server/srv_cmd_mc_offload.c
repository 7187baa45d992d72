/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MC.* commands of the client SSD tiers: mount / unmount / query a client's local-disk
 * segment, fetch offload tasks, report offloaded (or re-registered) keys, report records the
 * client's disk dropped, fetch the records it should delete, promote a disk-only object back
 * to memory, and the offload counters. Thin adapters over server/pool/pool_offload.c,
 * under the pool mutex. Wire protocol: docs/store.md ("SSD tier").
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_mc.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"

#include "common/cm_mem.h"
#include "redis-compat/resp_write.h"

#include <string.h>

#define SRV_MC_FETCH_MAX 4096u /* tasks per MC.OFFLOADFETCH */

void srv_mc_mountdisk_command(struct srv_client *c) {
    struct pool_uuid id;
    char ep[POOL_MAX_NAME_LEN + 1];
    if (srv_mc_arg_client(c, 1, &id) < 0 || srv_mc_arg_str(c, 2, "endpoint", ep, sizeof(ep)) < 0)
        return;
    srv_mc_lock();
    int rc = pool_disk_mount(srv_mc_pool, &id, ep, srv_mc_now());
    srv_mc_unlock();
    srv_mc_reply_status(c, rc);
}

void srv_mc_unmountdisk_command(struct srv_client *c) {
    struct pool_uuid id;
    if (srv_mc_arg_client(c, 1, &id) < 0)
        return;
    srv_mc_lock();
    int rc = pool_disk_unmount(srv_mc_pool, &id, srv_mc_now());
    srv_mc_unlock();
    srv_mc_reply_status(c, rc);
}

void srv_mc_querydisk_command(struct srv_client *c) {
    struct pool_uuid id;
    if (srv_mc_arg_client(c, 1, &id) < 0)
        return;
    struct pool_disk_info info;
    srv_mc_lock();
    int rc = pool_disk_query(srv_mc_pool, &id, &info);
    if (rc == 0) {
        resp_add_map_hdr(&c->out, c->proto, 5);
        srv_mc_add_field(c, "endpoint");
        srv_mc_add_field(c, info.endpoint);
        srv_mc_add_field(c, "queued");
        resp_add_int(&c->out, (long long)info.queued);
        srv_mc_add_field(c, "removes");
        resp_add_int(&c->out, (long long)info.removes);
        srv_mc_add_field(c, "replicas");
        resp_add_int(&c->out, (long long)info.replicas);
        srv_mc_add_field(c, "bytes");
        resp_add_int(&c->out, (long long)info.bytes);
    }
    srv_mc_unlock();
    if (rc < 0)
        srv_mc_reply_err(c, rc);
}

void srv_mc_offloadfetch_command(struct srv_client *c) {
    struct pool_uuid id;
    uint64_t max;
    if (srv_mc_arg_client(c, 1, &id) < 0 ||
        srv_mc_arg_u64(c, 2, "max", 0, 1, SRV_MC_FETCH_MAX, &max) < 0)
        return;
    struct pool_offload_task *t = cm_malloc(max * sizeof(*t));
    srv_mc_lock();
    long n = pool_offload_fetch(srv_mc_pool, &id, (size_t)max, srv_mc_now(), t);
    int64_t lease_ms = srv_cfg.default_kv_lease_ttl;
    if (n >= 0) {
        resp_add_array_hdr(&c->out, n);
        for (long i = 0; i < n; i++) {
            resp_add_map_hdr(&c->out, c->proto, 4);
            srv_mc_add_field(c, "key");
            resp_add_bulk(&c->out, t[i].key, t[i].klen);
            srv_mc_add_field(c, "size");
            resp_add_int(&c->out, (long long)t[i].size);
            srv_mc_add_field(c, "replica");
            srv_mc_add_replica(c, &t[i].src);
            srv_mc_add_field(c, "lease_ttl_ms");
            resp_add_int(&c->out, (long long)lease_ms);
        }
    }
    srv_mc_unlock();
    cm_free(t);
    if (n < 0)
        srv_mc_reply_err(c, (int)n);
}

void srv_mc_offloaddone_command(struct srv_client *c) {
    struct pool_uuid id;
    if (srv_mc_arg_client(c, 1, &id) < 0)
        return;
    if ((c->argc - 2) % 2 != 0) {
        srv_reply_syntax_error(c);
        return;
    }
    int npairs = (c->argc - 2) / 2;
    uint64_t *sizes = cm_malloc((size_t)(npairs ? npairs : 1) * sizeof(*sizes));
    for (int i = 0; i < npairs; i++) {
        if (srv_mc_arg_u64(c, 3 + 2 * i, "size", 0, 1, POOL_MAX_OBJECT_SIZE, &sizes[i]) < 0) {
            cm_free(sizes);
            return;
        }
    }
    resp_add_array_hdr(&c->out, npairs);
    srv_mc_lock();
    int64_t now = srv_mc_now();
    for (int i = 0; i < npairs; i++) {
        const struct srv_arg *k = &c->argv[2 + 2 * i];
        int rc = pool_offload_done(srv_mc_pool, &id, k->p, k->len, sizes[i], now);
        if (rc < 0)
            srv_mc_add_err(c, rc);
        else
            resp_add_simple(&c->out, "OK");
    }
    srv_mc_unlock();
    cm_free(sizes);
}

void srv_mc_offloadevicted_command(struct srv_client *c) {
    struct pool_uuid id;
    if (srv_mc_arg_client(c, 1, &id) < 0)
        return;
    int n = c->argc - 2;
    resp_add_array_hdr(&c->out, n);
    srv_mc_lock();
    int64_t now = srv_mc_now();
    for (int i = 0; i < n; i++) {
        const struct srv_arg *k = &c->argv[2 + i];
        srv_mc_add_status(c, pool_offload_evicted(srv_mc_pool, &id, k->p, k->len, now));
    }
    srv_mc_unlock();
}

void srv_mc_offloadremoves_command(struct srv_client *c) {
    struct pool_uuid id;
    uint64_t max;
    if (srv_mc_arg_client(c, 1, &id) < 0 ||
        srv_mc_arg_u64(c, 2, "max", 0, 1, SRV_MC_FETCH_MAX, &max) < 0)
        return;
    struct pool_disk_remove *r = cm_malloc(max * sizeof(*r));
    srv_mc_lock();
    long n = pool_disk_remove_fetch(srv_mc_pool, &id, (size_t)max, srv_mc_now(), r);
    srv_mc_unlock();
    if (n < 0) {
        srv_mc_reply_err(c, (int)n);
    } else {
        resp_add_array_hdr(&c->out, n);
        for (long i = 0; i < n; i++) {
            resp_add_bulk(&c->out, r[i].key, r[i].klen);
            cm_free(r[i].key);
        }
    }
    cm_free(r);
}

void srv_mc_promotestart_command(struct srv_client *c) {
    struct pool_uuid id;
    if (srv_mc_arg_client(c, 1, &id) < 0)
        return;
    struct pool_replica_desc d;
    srv_mc_lock();
    int rc = pool_promote_start(srv_mc_pool, &id, c->argv[2].p, c->argv[2].len, srv_mc_now(), &d);
    if (rc == 0)
        srv_mc_add_replica(c, &d);
    srv_mc_unlock();
    if (rc < 0)
        srv_mc_reply_err(c, rc);
}

void srv_mc_offloadstats_command(struct srv_client *c) {
    struct pool_offload_stats st;
    srv_mc_lock();
    pool_offload_get_stats(srv_mc_pool, &st);
    srv_mc_unlock();
    const struct {
        const char *name;
        uint64_t v;
    } f[] = {{"disks", st.disks},
             {"queued", st.queued},
             {"fetched", st.fetched},
             {"done", st.done},
             {"queue_full", st.queue_full},
             {"cap_kept", st.cap_kept},
             {"force_evicted", st.force_evicted},
             {"disk_replicas", st.disk_replicas},
             {"promoted", st.promoted},
             {"disk_reads", st.disk_reads},
             {"disk_evicted", st.disk_evicted},
             {"removes_queued", st.removes_queued},
             {"removes_fetched", st.removes_fetched},
             {"removes_dropped", st.removes_dropped}};
    size_t n = sizeof(f) / sizeof(f[0]);
    resp_add_map_hdr(&c->out, c->proto, (long)n);
    for (size_t i = 0; i < n; i++) {
        srv_mc_add_field(c, f[i].name);
        resp_add_int(&c->out, (long long)f[i].v);
    }
}
