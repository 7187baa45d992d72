/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Snapshots of the master's pool metadata (docs/ha.md, "Snapshots"): a thread that every
 * snapshot_interval_seconds (or on MC.SNAPSHOT) forks a copy-on-write child which writes the
 * pool (server/pool/pool_snap.c) under <dir>/mooncake_master_snapshot/<cluster_id>/<id>/,
 * publishes it in the catalog (srv_snapcat.c: embedded latest.txt or Redis ZSET + STRING) and
 * deletes the ones beyond snapshot_retention_count; and the restore at start-up, which loads
 * the newest snapshot that passes its checks and falls back to older ones. In HA mode only the
 * serving leader takes snapshots (each records the op-log position it includes, and the log is
 * trimmed up to the oldest one kept), and a new leader loads one before replaying the op-log
 * entries after it (docs/ha.md, "Snapshots and the op-log").
 */
#ifndef CRESCENT_SERVER_SRV_SNAPSHOT_H
#define CRESCENT_SERVER_SRV_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

/* What INFO and /metrics show about snapshots (a copy; see srv_snapshot_stats()). */
struct srv_snapshot_stats {
    int enabled;
    int in_progress;
    uint64_t ok, failed;       /* snapshots written / failed since start */
    char last_id[32];          /* newest snapshot written by this process ("" none) */
    int last_ok;               /* 1 when the last attempt succeeded */
    uint64_t last_duration_ms; /* fork to publish */
    uint64_t last_pause_us;    /* how long the pool was locked around fork() */
    uint64_t last_objects, last_bytes;
    char restored_id[32]; /* snapshot loaded at start ("" none) */
    uint64_t restored_objects;
    uint64_t restore_ms;      /* time to read and load it */
    uint64_t restore_refused; /* snapshots found corrupt (or, HA, unusable) and skipped */
    uint64_t restored_seq;    /* last op-log sequence number of the restored snapshot */
};

/*
 * Checks the snapshot settings of srv_cfg and, with enable_snapshot_restore, loads the newest
 * valid snapshot into the pool (call after srv_mc_start(), before serving); with
 * enable_snapshot, starts the snapshot thread. Returns 0, or -1 after logging why (bad
 * settings, no snapshot directory, an unreachable Redis catalog). Main thread, once.
 */
int srv_snapshot_start(void);

struct pool;
struct pool_snap_meta;

/*
 * HA recovery (srv_ha.c): with enable_snapshot_restore, lists the catalog (latest first) and
 * loads into a new pool (*out) the first snapshot that passes its checks, was written by an HA
 * leader (epoch > 0) and leaves no gap before the op-log: its last_seq must be >= base (the
 * store's trim point) and >= first - 1 (first: the log's first entry, 0 = empty). Each refused
 * one is logged with the reason and the previous one tried. Fills *meta and id. Returns 0 with
 * *out NULL when none is usable (or restore is off), or -1 when the catalog cannot be listed
 * and base > 0 (the log alone is incomplete: retry). HA recovery thread; the caller owns *out.
 */
int srv_snapshot_load_ha(uint64_t base, uint64_t first, struct pool **out,
                         struct pool_snap_meta *meta, char *id, size_t idlen);

/* Stops the snapshot thread (waits for a running child). Main thread, before srv_mc_stop(). */
void srv_snapshot_stop(void);

/*
 * Asks the snapshot thread for a snapshot now. Returns 0, -EINVAL when snapshots are not
 * enabled, -EBUSY when one is already running or requested. Any thread.
 */
int srv_snapshot_request(void);

/* Copies the counters into *out. Any thread. */
void srv_snapshot_stats(struct srv_snapshot_stats *out);

struct cm_buf;

/* Appends INFO's "# Snapshot" section (snapshot_* fields, docs/ha.md) to b. Any thread. */
void srv_snapshot_info(struct cm_buf *b);

#endif
