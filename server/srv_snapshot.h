/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Snapshots of the master's pool metadata (docs/ha.md, "Snapshots"): a thread that every
 * snapshot_interval_seconds (or on MC.SNAPSHOT) forks a copy-on-write child which writes the
 * pool (server/pool/pool_snap.c) under <dir>/mooncake_master_snapshot/<cluster_id>/<id>/,
 * publishes it in the catalog (srv_snapcat.c: embedded latest.txt or Redis ZSET + STRING) and
 * deletes the ones beyond snapshot_retention_count; and the restore at start-up, which loads
 * the newest snapshot that passes its checks and falls back to older ones.
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
    uint64_t restore_refused; /* snapshots found corrupt and skipped at start */
};

/*
 * Checks the snapshot settings of srv_cfg and, with enable_snapshot_restore, loads the newest
 * valid snapshot into the pool (call after srv_mc_start(), before serving); with
 * enable_snapshot, starts the snapshot thread. Returns 0, or -1 after logging why (bad
 * settings, no snapshot directory, an unreachable Redis catalog). Main thread, once.
 */
int srv_snapshot_start(void);

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
