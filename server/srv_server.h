/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process-wide state of crescent-master: the configuration values (fed by the config table in
 * srv_config.c), the worker threads, global counters and shutdown. Config values are written
 * at startup and by CONFIG SET under the exclusive keyspace lock; readers take no lock.
 */
#ifndef CRESCENT_SERVER_SRV_SERVER_H
#define CRESCENT_SERVER_SRV_SERVER_H

#include "common/cm_config.h"
#include "common/cm_pcounter.h"
#include "server/srv_seg.h"

#include <stdatomic.h>
#include <stdint.h>

#define SRV_VERSION       "0.1.0"
#define SRV_REDIS_VERSION "7.0.15" /* the Redis version whose behaviour we follow */

/* --io-backend values (order of the config enum). */
enum srv_io_backend {
    SRV_IO_AUTO,  /* io_uring when the start-up probe passes, else epoll */
    SRV_IO_EPOLL, /* epoll */
    SRV_IO_URING  /* io_uring, or fail to start */
};

struct srv_config {
    long long port;
    char *bind;
    char *unixsocket;
    long long unixsocketperm;
    long long threads;
    long long memory;
    long long maxclients;
    long long timeout;
    char *requirepass;
    int protected_mode;
    long long tcp_backlog;
    long long tcp_keepalive;
    char *logfile;
    int loglevel;
    double eviction_high_watermark_ratio;
    double eviction_ratio;
    long long default_kv_lease_ttl;
    long long client_live_ttl_sec;
    long long default_kv_soft_pin_ttl; /* ms */
    long long max_kv_soft_pin_ttl;     /* ms */
    int allow_evict_soft_pinned_objects;
    long long put_start_discard_timeout_sec;
    long long put_start_release_timeout_sec;
    int allocation_strategy; /* enum pool_strategy */
    long long proto_max_bulk_len;
    long long client_query_buffer_limit;
    long long client_output_buffer_limit; /* normal class hard limit (from the spec below) */
    char *client_obuf_spec;               /* client-output-buffer-limit (srv_pubsub.c) */
    char *notify_keyspace_events;
    int maxmemory_policy; /* index into srv_maxmemory_policies (srv_pubsub_int.h) */
    long long hz;
    char *save;
    int appendonly;
    int enable_ha;
    int embedded_segment_in_pool; /* mount the embedded segment into the pool (srv_pool_seg.h) */
    char *embedded_segment_protocols; /* its transports, "tcp,shm" */
    char *ha_backend_type;
    char *ha_backend_connstring;
    char *cluster_id;
    char *rpc_address;  /* HA: advertised host:port ("" = first bind address + port) */
    char *oplog_store;  /* HA: redis://host:port of the metadata op-log ("" = none) */
    char *ha_state_dir; /* HA: directory of the epoch floor file ("" = memory only) */
    int ha_hot_standby; /* HA: a standby tails the op-log into a warm pool */
    int enable_offload;
    int offload_on_evict;
    char *ssd_offload_path;
    int offload_force_evict;                 /* client SSD tiers (server/pool/pool_offload.c) */
    long long offloading_queue_limit;        /* ... */
    double offload_cap_ratio;                /* ... */
    int promotion_on_hit;                    /* ... */
    long long promotion_admission_threshold; /* ... */
    long long metrics_port;
    char *metrics_host;
    long long databases;
    int io_backend; /* enum srv_io_backend */
    /* Snapshots of the pool metadata (srv_snapshot.c) */
    int enable_snapshot;
    long long snapshot_interval_seconds;
    long long snapshot_child_timeout_seconds;
    long long snapshot_retention_count;
    char *snapshot_object_store_type;
    char *snapshot_catalog_store_type;
    char *snapshot_catalog_store_connstring;
    char *snapshot_local_path;
    int enable_snapshot_restore;
};

extern struct srv_config srv_cfg;
extern struct cm_config srv_config_table;

/* Global counters for INFO stats (relaxed atomics). */
struct srv_stats {
    _Atomic uint64_t total_connections;
    _Atomic uint64_t rejected_connections;
    struct cm_pcounter total_commands;
    struct cm_pcounter net_input_bytes;
    struct cm_pcounter net_output_bytes;
    _Atomic uint64_t connected_clients;
    struct cm_pcounter error_replies;
};
extern struct srv_stats srv_stats;

/* Life cycle, for /health: set to SERVING once every listener is up, STOPPING at shutdown. */
enum { SRV_STATE_STARTING = 0, SRV_STATE_SERVING = 1, SRV_STATE_STOPPING = 2 };
extern _Atomic int srv_state;

extern struct srv_seg *srv_segment;
extern uint64_t srv_start_wall_ms;
extern uint64_t srv_start_mono_ms;
extern unsigned srv_nworkers;
extern char srv_run_id[41];
extern char srv_executable[1024];
extern char srv_config_file[1024];

/* Builds the config table over srv_cfg and applies defaults. Returns 0 or -errno (err set). */
int srv_config_setup(char *err, size_t errlen);

/*
 * Fills the defaults that depend on other settings, once the file and the flags are parsed:
 * memory is 1gb, or 0 with enable_ha (an HA master keeps no values of its own: plain SET goes
 * to the pool, whose changes the op-log carries). Returns 1 when memory was set explicitly, 0
 * when the default was taken. Main thread, before anything reads srv_cfg.memory.
 */
int srv_config_resolve(void);

/* Current Unix time in milliseconds (cached per event-loop iteration where possible). */
int64_t srv_now_ms(void);

/* Starts workers and listeners and runs until shutdown. Returns the exit status. */
int srv_net_run(void);

/* Most event-loop threads (the bound of --threads). */
#define SRV_NET_MAX_WORKERS 256

/*
 * How long (ms) the slowest running event loop has gone without its periodic cron at monotonic
 * time now (cm_mono_ms()): about 1000 / hz when every loop is healthy, more while one is
 * blocked (a long command, an op-log store that does not answer). 0 before the loops run and
 * after they stop. Any thread.
 */
uint64_t srv_net_loop_lag_ms(uint64_t now);

/* "uring" or "epoll": the network backend running (valid once srv_net_run started). */
const char *srv_io_backend_name(void);

/* Asks every worker to stop (any thread, async-signal-safe). */
void srv_shutdown_request(void);

/* Lists every client in Redis CLIENT LIST format into out (filtered by id when id != 0). */
struct cm_buf;
struct srv_client;
void srv_clients_list(struct cm_buf *out, uint64_t only_id);
/* Formats one client's CLIENT LIST line (no newline). */
void srv_client_info_line(struct srv_client *c, struct cm_buf *out);

/* Kill filters for CLIENT KILL; returns the number of clients killed. */
struct srv_kill_filter {
    uint64_t id;      /* 0 = any */
    const char *addr; /* NULL = any */
    const char *laddr;
    int skipme; /* 1 = do not kill the caller */
    struct srv_client *me;
};
int srv_clients_kill(const struct srv_kill_filter *f);

#endif
