/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration table of crescent-master: every flag, redis.conf directive and CONFIG
 * GET/SET parameter, with Mooncake's names where they exist and Redis's elsewhere.
 */
#include "common/fmacros.h"

#include "server/srv_db.h"
#include "server/srv_mc.h"
#include "server/srv_pubsub_int.h"
#include "server/srv_server.h"

#include "common/cm_log.h"
#include "common/cm_time.h"

#include <limits.h>
#include <stdio.h>

struct srv_config srv_cfg;
struct cm_config srv_config_table;

/*
 * Redis 7.0 parameters that tune encodings and background work Crescent does not have (its
 * aggregates use one encoding whatever their size). CONFIG SET accepts them with Redis's
 * bounds and errors and CONFIG GET returns what was set, so tuning scripts and redis.conf files
 * written for Redis keep working; nothing reads them.
 */
static struct {
    long long hash_max_listpack_entries;
    long long hash_max_listpack_value;
    long long list_max_listpack_size;
    long long list_compress_depth;
    long long set_max_intset_entries;
    long long zset_max_listpack_entries;
    long long zset_max_listpack_value;
    long long stream_node_max_bytes;
    long long stream_node_max_entries;
    long long hll_sparse_max_bytes;
    int activerehashing;
    int lazyfree_lazy_eviction;
    int lazyfree_lazy_expire;
    int lazyfree_lazy_server_del;
    int lazyfree_lazy_user_del;
    int lazyfree_lazy_user_flush;
} srv_compat;

static const char *const srv_loglevels[] = {"debug",   "verbose", "notice",
                                            "warning", "nothing", NULL};

static const char *const srv_io_backends[] = {"auto", "epoll", "uring", NULL};

static int srv_apply_eviction(const struct cm_cfg_entry *e, char *err, size_t errlen) {
    (void)e;
    srv_db_high_watermark = srv_cfg.eviction_high_watermark_ratio;
    srv_db_evict_ratio = srv_cfg.eviction_ratio;
    return srv_mc_reconfigure(err, errlen);
}

static int srv_apply_pool(const struct cm_cfg_entry *e, char *err, size_t errlen) {
    (void)e;
    return srv_mc_reconfigure(err, errlen);
}

/* Mooncake --allocation_strategy values, in enum pool_strategy order. */
static const char *const srv_strategies[] = {"random", "free_ratio_first", "local_first", NULL};

static int srv_apply_loglevel(const struct cm_cfg_entry *e, char *err, size_t errlen) {
    (void)e;
    (void)err;
    (void)errlen;
    cm_log_set_level((enum cm_log_level)srv_cfg.loglevel);
    return 0;
}

#define INT_ENTRY(n, a, fl, var, lo, hi, def, h) \
    { n, a, CM_CFG_INT, fl, &srv_cfg.var, lo, hi, 0, 0, def, NULL, NULL, h }
#define MEM_ENTRY(n, a, fl, var, lo, hi, def, h) \
    { n, a, CM_CFG_MEMORY, fl, &srv_cfg.var, lo, hi, 0, 0, def, NULL, NULL, h }
#define STR_ENTRY(n, a, fl, var, def, h) \
    { n, a, CM_CFG_STRING, fl, &srv_cfg.var, 0, 0, 0, 0, def, NULL, NULL, h }
#define BOOL_ENTRY(n, a, fl, var, def, h) \
    { n, a, CM_CFG_BOOL, fl, &srv_cfg.var, 0, 1, 0, 0, def, NULL, NULL, h }
#define POOL_INT(n, a, var, lo, hi, def, h) \
    { n, a, CM_CFG_INT, 0, &srv_cfg.var, lo, hi, 0, 0, def, NULL, srv_apply_pool, h }
#define DBL_ENTRY(n, a, fl, var, lo, hi, def, apply, h) \
    { n, a, CM_CFG_DOUBLE, fl, &srv_cfg.var, 0, 0, lo, hi, def, NULL, apply, h }

/* Entries over srv_compat (accepted, not used). */
#define COMPAT_INT(n, a, var, lo, hi, def) \
    { n, a, CM_CFG_INT, 0, &srv_compat.var, lo, hi, 0, 0, def, NULL, NULL, COMPAT_HELP }
#define COMPAT_MEM(n, a, var, lo, hi, def) \
    { n, a, CM_CFG_MEMORY, 0, &srv_compat.var, lo, hi, 0, 0, def, NULL, NULL, COMPAT_HELP }
#define COMPAT_BOOL(n, var, def) \
    { n, NULL, CM_CFG_BOOL, 0, &srv_compat.var, 0, 1, 0, 0, def, NULL, NULL, COMPAT_HELP }
#define COMPAT_HELP "Redis 7.0 tuning parameter, accepted for compatibility and not used"

static const struct cm_cfg_entry srv_entries[] = {
    INT_ENTRY("port", NULL, CM_CFG_IMMUTABLE, port, 1, 65535, "50051", "RESP TCP port"),
    STR_ENTRY("bind", NULL, CM_CFG_IMMUTABLE, bind, "0.0.0.0",
              "addresses to listen on, space-separated (IPv4/IPv6, * = all IPv4, :: = all IPv6)"),
    STR_ENTRY("unixsocket", NULL, CM_CFG_IMMUTABLE, unixsocket, "",
              "also listen on this Unix socket path"),
    INT_ENTRY("unixsocketperm", NULL, CM_CFG_IMMUTABLE, unixsocketperm, 0, 777, "0",
              "permissions of the Unix socket, octal digits like 700 (0 = umask)"),
    INT_ENTRY("threads", "io-threads", CM_CFG_IMMUTABLE, threads, 0, 256, "0",
              "event-loop threads (0 = auto: 1 up to 2 cores, else half the cores, at most 8)"),
    MEM_ENTRY("memory", "maxmemory", CM_CFG_IMMUTABLE, memory, 0, LLONG_MAX, "1gb",
              "size of the embedded segment holding string values (0 = none: SET places values "
              "in the pool's client segments; otherwise at least 1mb; with enable_ha the "
              "default is 0)"),
    BOOL_ENTRY("embedded_segment_in_pool", "embedded-segment-in-pool", CM_CFG_IMMUTABLE,
               embedded_segment_in_pool, "yes",
               "mount the embedded segment into the distributed store's pool as master@host:port "
               "(library puts may land there; ignored with enable_ha)"),
    STR_ENTRY("embedded_segment_protocols", "embedded-segment-protocols", CM_CFG_IMMUTABLE,
              embedded_segment_protocols, "tcp,shm",
              "transports serving the embedded segment to library clients, comma-separated: "
              "tcp (always), shm, fabric, rdma"),
    INT_ENTRY("maxclients", NULL, 0, maxclients, 1, 1000000, "10000",
              "maximum simultaneous clients"),
    INT_ENTRY("timeout", NULL, 0, timeout, 0, INT_MAX, "0",
              "close idle clients after this many seconds (0 = never)"),
    STR_ENTRY("requirepass", NULL, CM_CFG_SENSITIVE, requirepass, "",
              "password of the default user (empty = none)"),
    BOOL_ENTRY("protected-mode", "protected_mode", 0, protected_mode, "yes",
               "without a password accept only loopback clients"),
    INT_ENTRY("tcp-backlog", "tcp_backlog", CM_CFG_IMMUTABLE, tcp_backlog, 1, 65535, "511",
              "listen(2) backlog"),
    INT_ENTRY("tcp-keepalive", "tcp_keepalive", 0, tcp_keepalive, 0, INT_MAX, "300",
              "TCP keepalive idle seconds (0 = off)"),
    STR_ENTRY("logfile", NULL, CM_CFG_IMMUTABLE, logfile, "", "log file (empty = stderr)"),
    {"loglevel", NULL, CM_CFG_ENUM, 0, &srv_cfg.loglevel, 0, 0, 0, 0, "notice", srv_loglevels,
     srv_apply_loglevel, "log verbosity"},
    DBL_ENTRY("eviction_high_watermark_ratio", "eviction-high-watermark-ratio", 0,
              eviction_high_watermark_ratio, 0.0, 1.0, "0.90", srv_apply_eviction,
              "evict when segment usage passes this ratio"),
    DBL_ENTRY("eviction_ratio", "eviction-ratio", 0, eviction_ratio, 0.0, 1.0, "0.05",
              srv_apply_eviction, "share of evictable objects freed per eviction cycle"),
    POOL_INT("default_kv_lease_ttl", NULL, default_kv_lease_ttl, 0, INT_MAX, "10000",
             "read lease granted by MC.GETREPLICAS / MC.EXIST, in milliseconds"),
    POOL_INT("default_kv_soft_pin_ttl", NULL, default_kv_soft_pin_ttl, 1, LLONG_MAX, "1800000",
             "soft-pin TTL of MC.PUTSTART ... SOFTPIN, in milliseconds"),
    POOL_INT("max_kv_soft_pin_ttl", NULL, max_kv_soft_pin_ttl, 1, LLONG_MAX, "86400000",
             "largest SOFTPIN_TTL a put may ask for, in milliseconds"),
    {"allow_evict_soft_pinned_objects", NULL, CM_CFG_BOOL, 0,
     &srv_cfg.allow_evict_soft_pinned_objects, 0, 1, 0, 0, "yes", NULL, srv_apply_pool,
     "pool eviction may take soft-pinned objects in its second pass"},
    POOL_INT("client_live_ttl_sec", "client_ttl", client_live_ttl_sec, 1, INT_MAX, "10",
             "seconds without MC.PING before a pool client is expired (Mooncake --client_ttl)"),
    POOL_INT("put_start_discard_timeout_sec", NULL, put_start_discard_timeout_sec, 0, INT_MAX, "30",
             "seconds after which an unfinished pool write may be pre-empted"),
    POOL_INT("put_start_release_timeout_sec", NULL, put_start_release_timeout_sec, 0, INT_MAX,
             "600", "seconds after which pre-empted or abandoned pool write buffers are freed"),
    {"allocation_strategy", NULL, CM_CFG_ENUM, 0, &srv_cfg.allocation_strategy, 0, 0, 0, 0,
     "random", srv_strategies, srv_apply_pool,
     "pool replica placement: random, free_ratio_first or local_first"},
    MEM_ENTRY("proto-max-bulk-len", "proto_max_bulk_len", CM_CFG_IMMUTABLE, proto_max_bulk_len,
              1024 * 1024, 2147483647LL, "512mb", "largest bulk string accepted"),
    MEM_ENTRY("client-query-buffer-limit", "client_query_buffer_limit", 0,
              client_query_buffer_limit, 1024 * 1024, LLONG_MAX, "1gb",
              "largest query buffer of a client"),
    {"client-output-buffer-limit", "client_output_buffer_limit", CM_CFG_STRING, 0,
     &srv_cfg.client_obuf_spec, 0, 0, 0, 0,
     "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", NULL,
     srv_pubsub_apply_obl,
     "output-buffer limits as in Redis: <class> <hard> <soft> <soft-seconds> for normal, "
     "slave and pubsub (a single size sets the normal hard limit)"},
    {"notify-keyspace-events", "notify_keyspace_events", CM_CFG_STRING, 0,
     &srv_cfg.notify_keyspace_events, 0, 0, 0, 0, "", NULL, srv_pubsub_apply_notify,
     "keyspace notifications: Redis's class letters (K E g $ l s h z x e t m d n A)"},
    {"maxmemory-policy", "maxmemory_policy", CM_CFG_ENUM, 0, &srv_cfg.maxmemory_policy, 0, 0, 0, 0,
     "allkeys-lru", srv_maxmemory_policies, srv_pubsub_apply_policy,
     "eviction policy; Crescent implements allkeys-lru only and refuses the other Redis values"},
    INT_ENTRY("hz", NULL, 0, hz, 1, 500, "10", "background task frequency"),
    STR_ENTRY("save", NULL, 0, save, "", "accepted for compatibility; Crescent never persists"),
    BOOL_ENTRY("appendonly", NULL, 0, appendonly, "no", "accepted for compatibility"),
    INT_ENTRY("databases", NULL, CM_CFG_IMMUTABLE, databases, 1, 1, "1", "always 1 (db 0)"),
    BOOL_ENTRY("enable_ha", "enable-ha", CM_CFG_IMMUTABLE, enable_ha, "no",
               "HA group member: elect a leader, standbys answer -NOTLEADER (docs/ha.md)"),
    STR_ENTRY("ha_backend_type", "ha-backend-type", CM_CFG_IMMUTABLE, ha_backend_type, "redis",
              "with enable_ha: election backend, redis, etcd or k8s"),
    STR_ENTRY("ha_backend_connstring", "ha-backend-connstring", CM_CFG_IMMUTABLE,
              ha_backend_connstring, "",
              "with enable_ha: election backend, host:port[;host:port...] or a full URI"),
    STR_ENTRY("cluster_id", "cluster-id", CM_CFG_IMMUTABLE, cluster_id, "crescent",
              "cluster name: election and op-log keys (enable_ha), snapshot directory, KV events "
              "channel __crescent__:kv@<cluster_id>"),
    STR_ENTRY("rpc_address", "rpc-address", CM_CFG_IMMUTABLE, rpc_address, "",
              "with enable_ha: advertised host:port (empty = first bind address and port)"),
    STR_ENTRY("oplog_store", "oplog-store", CM_CFG_IMMUTABLE, oplog_store, "",
              "with enable_ha: redis://host:port[/db] of the metadata op-log (empty = none)"),
    STR_ENTRY("ha_state_dir", "ha-state-dir", CM_CFG_IMMUTABLE, ha_state_dir, "",
              "with enable_ha: directory keeping the highest epoch seen (empty = memory only)"),
    BOOL_ENTRY("ha_hot_standby", "ha-hot-standby", CM_CFG_IMMUTABLE, ha_hot_standby, "yes",
               "with enable_ha and oplog_store: a standby keeps the leader's metadata, reading "
               "the op-log every 200 ms, so a promotion replays only the tail (docs/ha.md)"),
    BOOL_ENTRY("enable_offload", "enable-offload", CM_CFG_IMMUTABLE, enable_offload, "no",
               "the SSD tier: clients may mount local-disk segments (MC.MOUNTDISK); with "
               "ssd_offload_path, evicted strings of the embedded segment go to disk too "
               "(docs/storage.md)"),
    STR_ENTRY("ssd_offload_path", "ssd-offload-path", CM_CFG_IMMUTABLE, ssd_offload_path, "",
              "directory of the embedded segment's SSD tier (absolute, existing, no symlink); "
              "needs enable_offload"),
    {"offload_on_evict", "offload-on-evict", CM_CFG_BOOL, 0, &srv_cfg.offload_on_evict, 0, 1, 0, 0,
     "no", NULL, srv_apply_pool,
     "with enable_offload: client SSD tiers get objects at eviction, not at put end (the "
     "embedded segment always offloads at eviction)"},
    {"offload_force_evict", "offload-force-evict", CM_CFG_BOOL, 0, &srv_cfg.offload_force_evict, 0,
     1, 0, 0, "no", NULL, srv_apply_pool,
     "with offload_on_evict: drop victims beyond the per-cycle offload cap instead of keeping "
     "them"},
    POOL_INT("offloading_queue_limit", "offloading-queue-limit", offloading_queue_limit, 1,
             100000000, "50000", "offload tasks queued per client local-disk segment"),
    {"promotion_on_hit", "promotion-on-hit", CM_CFG_BOOL, 0, &srv_cfg.promotion_on_hit, 0, 1, 0, 0,
     "no", NULL, srv_apply_pool,
     "with enable_offload: readers may give disk-only objects a memory replica (MC.PROMOTESTART)"},
    POOL_INT("promotion_admission_threshold", "promotion-admission-threshold",
             promotion_admission_threshold, 1, 1000000, "2",
             "with promotion_on_hit: the read of a disk-only object that reaches this count tells "
             "its reader to promote it"),
    DBL_ENTRY("offload_cap_ratio", "offload-cap-ratio", 0, offload_cap_ratio, 0.0, 1.0, "0.5",
              srv_apply_pool, "per-cycle offload cap = offloading_queue_limit x this ratio"),
    {"io-backend", "io_backend", CM_CFG_ENUM, CM_CFG_IMMUTABLE, &srv_cfg.io_backend, 0, 0, 0, 0,
     "auto", srv_io_backends, NULL,
     "network backend: auto (io_uring when the kernel allows it, else epoll), epoll or uring"},
    INT_ENTRY("metrics_port", "metrics-port", CM_CFG_IMMUTABLE, metrics_port, 0, 65535, "9003",
              "admin HTTP port: /metrics, /health, ... (0 = off; a busy port is logged and "
              "skipped)"),
    STR_ENTRY("metrics_host", "metrics-host", CM_CFG_IMMUTABLE, metrics_host, "0.0.0.0",
              "address of the admin HTTP server"),
    BOOL_ENTRY("enable_snapshot", "enable-snapshot", CM_CFG_IMMUTABLE, enable_snapshot, "no",
               "write a snapshot of the pool metadata every snapshot_interval_seconds"),
    INT_ENTRY("snapshot_interval_seconds", "snapshot-interval-seconds", 0,
              snapshot_interval_seconds, 1, INT_MAX, "600", "seconds between two snapshots"),
    INT_ENTRY("snapshot_child_timeout_seconds", "snapshot-child-timeout-seconds", 0,
              snapshot_child_timeout_seconds, 1, INT_MAX, "300",
              "a snapshot child running longer is killed and the snapshot counted as failed"),
    INT_ENTRY("snapshot_retention_count", "snapshot-retention-count", 0, snapshot_retention_count,
              1, 1000, "2", "snapshots kept; older ones are deleted"),
    STR_ENTRY("snapshot_object_store_type", "snapshot_payload_store_type", CM_CFG_IMMUTABLE,
              snapshot_object_store_type, "local",
              "where snapshot files go: local (MOONCAKE_SNAPSHOT_LOCAL_PATH / "
              "snapshot_local_path); s3 is not supported"),
    STR_ENTRY("snapshot_catalog_store_type", "snapshot_catalog_backend_type", CM_CFG_IMMUTABLE,
              snapshot_catalog_store_type, "embedded",
              "which snapshots exist: embedded (latest.txt next to them) or redis"),
    STR_ENTRY("snapshot_catalog_store_connstring", "snapshot_catalog_backend_connstring",
              CM_CFG_IMMUTABLE, snapshot_catalog_store_connstring, "",
              "redis://[:password@]host:port[/db] of the Redis catalog"),
    STR_ENTRY("snapshot_local_path", "snapshot-local-path", CM_CFG_IMMUTABLE, snapshot_local_path,
              "", "snapshot directory (empty: $MOONCAKE_SNAPSHOT_LOCAL_PATH)"),
    BOOL_ENTRY("enable_snapshot_restore", "enable-snapshot-restore", CM_CFG_IMMUTABLE,
               enable_snapshot_restore, "no",
               "load the latest valid snapshot at start (the previous one when it is corrupt)"),
    COMPAT_INT("hash-max-listpack-entries", "hash-max-ziplist-entries", hash_max_listpack_entries,
               0, LONG_MAX, "512"),
    COMPAT_MEM("hash-max-listpack-value", "hash-max-ziplist-value", hash_max_listpack_value, 0,
               LONG_MAX, "64"),
    COMPAT_INT("list-max-listpack-size", "list-max-ziplist-size", list_max_listpack_size, INT_MIN,
               INT_MAX, "-2"),
    COMPAT_INT("list-compress-depth", NULL, list_compress_depth, 0, INT_MAX, "0"),
    COMPAT_INT("set-max-intset-entries", NULL, set_max_intset_entries, 0, LONG_MAX, "512"),
    COMPAT_INT("zset-max-listpack-entries", "zset-max-ziplist-entries", zset_max_listpack_entries,
               0, LONG_MAX, "128"),
    COMPAT_MEM("zset-max-listpack-value", "zset-max-ziplist-value", zset_max_listpack_value, 0,
               LONG_MAX, "64"),
    COMPAT_MEM("stream-node-max-bytes", NULL, stream_node_max_bytes, 0, LONG_MAX, "4096"),
    COMPAT_INT("stream-node-max-entries", NULL, stream_node_max_entries, 0, LLONG_MAX, "100"),
    COMPAT_MEM("hll-sparse-max-bytes", NULL, hll_sparse_max_bytes, 0, LONG_MAX, "3000"),
    COMPAT_BOOL("activerehashing", activerehashing, "yes"),
    COMPAT_BOOL("lazyfree-lazy-eviction", lazyfree_lazy_eviction, "no"),
    COMPAT_BOOL("lazyfree-lazy-expire", lazyfree_lazy_expire, "no"),
    COMPAT_BOOL("lazyfree-lazy-server-del", lazyfree_lazy_server_del, "no"),
    COMPAT_BOOL("lazyfree-lazy-user-del", lazyfree_lazy_user_del, "no"),
    COMPAT_BOOL("lazyfree-lazy-user-flush", lazyfree_lazy_user_flush, "no"),
};

/* srv_cfg.memory until the file or a flag sets it (the table's bounds refuse it from both). */
#define SRV_MEMORY_UNSET   (-1LL)
#define SRV_MEMORY_DEFAULT (1LL << 30) /* the entry's "1gb", without enable_ha */

int srv_config_setup(char *err, size_t errlen) {
    int rc = cm_config_init(&srv_config_table, srv_entries,
                            sizeof(srv_entries) / sizeof(srv_entries[0]), err, errlen);
    if (rc == 0)
        srv_cfg.memory = SRV_MEMORY_UNSET;
    return rc;
}

int srv_config_resolve(void) {
    if (srv_cfg.memory != SRV_MEMORY_UNSET)
        return 1;
    srv_cfg.memory = srv_cfg.enable_ha ? 0 : SRV_MEMORY_DEFAULT;
    return 0;
}

int64_t srv_now_ms(void) {
    return (int64_t)cm_wall_ms();
}
