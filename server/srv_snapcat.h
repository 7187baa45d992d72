/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot catalog: which snapshots exist and which one is the latest (Mooncake's
 * SnapshotCatalogStore). Two kinds:
 *   embedded  <dir>/latest.txt holds the latest id; the ids are the snapshot directories;
 *   redis     ZSET mooncake-store/{<cluster>}/snapshot/index (score = creation time in ms,
 *             member = id) and STRING mooncake-store/{<cluster>}/snapshot/latest, changed by
 *             Lua scripts so that both move together.
 * The snapshot files themselves are always in <dir>. Blocking calls (one Redis connection per
 * call, 2 s timeouts); used by the snapshot thread and by the restore at start-up only.
 */
#ifndef CRESCENT_SERVER_SRV_SNAPCAT_H
#define CRESCENT_SERVER_SRV_SNAPCAT_H

#include <stddef.h>
#include <stdint.h>

#define SRV_SNAPCAT_ID_LEN 32 /* ids are YYYYMMDD_HHMMSS_mmm (19 characters) */

struct srv_snapcat;

/*
 * Opens the catalog of kind type ("embedded", "" or "payload" for embedded; "redis") for the
 * snapshots in dir of cluster. For redis, connstring is redis://[[user]:password@]host:port[/db]
 * or host:port, and the server is pinged once. Returns 0 and *out, or -1 with a one-line
 * reason in err.
 */
int srv_snapcat_open(const char *type, const char *connstring, const char *dir, const char *cluster,
                     struct srv_snapcat **out, char *err, size_t errlen);

/* Closes the catalog. NULL is ignored. */
void srv_snapcat_close(struct srv_snapcat *cat);

/* Records id (created at created_ms, wall clock) as existing and as the latest. 0 or -1. */
int srv_snapcat_publish(struct srv_snapcat *cat, const char *id, int64_t created_ms, char *err,
                        size_t errlen);

/* Forgets id; when it was the latest, the newest remaining one becomes the latest. 0 or -1. */
int srv_snapcat_forget(struct srv_snapcat *cat, const char *id, char *err, size_t errlen);

/*
 * Lists up to max ids, the latest first, then the others newest first (ids sort by time).
 * Returns the count, or -1 with err filled.
 */
int srv_snapcat_list(struct srv_snapcat *cat, char (*ids)[SRV_SNAPCAT_ID_LEN], int max, char *err,
                     size_t errlen);

/* 1 when s has the form of a snapshot id (YYYYMMDD_HHMMSS_mmm), else 0. */
int srv_snapcat_is_id(const char *s);

#endif
