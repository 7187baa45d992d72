/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Snapshots of the pool metadata: the snapshot thread, the forked writer, retention and the
 * restore at start-up (see srv_snapshot.h; the file format is pool_snap.c's).
 *
 * A snapshot holds the pool mutex only around fork(): the child owns a copy-on-write image of
 * the pool at that instant and writes it without any lock while the parent keeps serving. The
 * child never logs or takes a lock (only the one snapshot buffer is allocated); it reports its
 * counts through a pipe and leaves with _exit().
 */
#include "common/fmacros.h"

#include "server/srv_snapshot.h"

#include "common/cm_buf.h"
#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "server/srv_ha.h"
#include "server/srv_mc.h"
#include "server/srv_oplog.h"
#include "server/srv_server.h"
#include "server/srv_snapcat.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SNAP_MAX_LISTED 256

static char snap_dir[4096]; /* <base>/mooncake_master_snapshot/<cluster_id> */
static struct srv_snapcat *snap_cat;
static pthread_t snap_thread;
static int snap_thread_on;
static pthread_mutex_t snap_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t snap_cv;
static int snap_stopping, snap_requested;
static struct srv_snapshot_stats snap_stats;

/* ---------------------------------------------------------------- paths */

static int snap_mkdirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    return mkdir(buf, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

static int snap_rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void snap_rmtree(const char *path) {
    nftw(path, snap_rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static int snap_cluster_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '_' || s[i] == '.' || s[i] == '-' || (s[i] >= '0' && s[i] <= '9') ||
              (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
            return 0;
    return 1;
}

/* Local time YYYYMMDD_HHMMSS_mmm of wall-clock ms. */
static void snap_make_id(int64_t ms, char *id) {
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    char buf[96];
    snprintf(buf, sizeof(buf), "%04d%02d%02d_%02d%02d%02d_%03d", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
    memcpy(id, buf, SRV_SNAPCAT_ID_LEN - 1);
    id[SRV_SNAPCAT_ID_LEN - 1] = 0;
}

/* ---------------------------------------------------------------- the child */

static int snap_write_all(int fd, const void *p, size_t n) {
    const char *s = p;
    while (n > 0) {
        ssize_t k = write(fd, s, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Runs in the forked child: writes metadata and descriptor.txt into tmp, reports meta. */
static void snap_child(const char *tmp, int report_fd, int64_t created_ms, uint64_t epoch,
                       uint64_t last_seq) {
    char path[4352];
    snprintf(path, sizeof(path), "%s/metadata", tmp);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    struct pool_snap_meta meta = {.created_ms = created_ms, .epoch = epoch, .last_seq = last_seq};
    if (fd < 0 || pool_snapshot_write(srv_mc_pool, srv_mc_now(), fd, &meta) != 0 || fsync(fd) != 0)
        _exit(1);
    close(fd);
    snprintf(path, sizeof(path), "%s/descriptor.txt", tmp);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    char line[128];
    int n = snprintf(line, sizeof(line), "%llu|%llu|%lld\n", (unsigned long long)meta.last_seq,
                     (unsigned long long)meta.epoch, (long long)created_ms);
    if (fd < 0 || snap_write_all(fd, line, (size_t)n) != 0 || fsync(fd) != 0)
        _exit(1);
    close(fd);
    _exit(snap_write_all(report_fd, &meta, sizeof(meta)) == 0 ? 0 : 1);
}

/* ---------------------------------------------------------------- the parent */

/* Waits for the child up to the configured timeout; kills it after. 0 when it succeeded. */
static int snap_wait_child(pid_t pid) {
    int64_t deadline = (int64_t)cm_mono_ms() + srv_cfg.snapshot_child_timeout_seconds * 1000;
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
        if (r < 0 && errno != EINTR)
            return -1;
        if ((int64_t)cm_mono_ms() > deadline) {
            cm_log(CM_LOG_WARNING, "snapshot", "snapshot child %d ran past %llds: killed", (int)pid,
                   srv_cfg.snapshot_child_timeout_seconds);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(2000);
    }
}

/* Deletes the snapshots beyond the retention count (oldest first), catalog entry first. */
static void snap_retain(void) {
    char(*ids)[SRV_SNAPCAT_ID_LEN] = cm_malloc(SNAP_MAX_LISTED * SRV_SNAPCAT_ID_LEN);
    char err[256];
    int n = srv_snapcat_list(snap_cat, ids, SNAP_MAX_LISTED, err, sizeof(err));
    if (n < 0)
        cm_log(CM_LOG_WARNING, "snapshot", "retention skipped: %s", err);
    /* ids: the latest first, then newest first; keep the first retention_count. */
    for (int i = (int)srv_cfg.snapshot_retention_count; i < n; i++) {
        if (srv_snapcat_forget(snap_cat, ids[i], err, sizeof(err)) != 0) {
            cm_log(CM_LOG_WARNING, "snapshot", "cannot forget snapshot %s: %s", ids[i], err);
            continue;
        }
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", snap_dir, ids[i]);
        snap_rmtree(path);
        cm_log(CM_LOG_VERBOSE, "snapshot", "deleted snapshot %s (retention %lld)", ids[i],
               srv_cfg.snapshot_retention_count);
    }
    cm_free(ids);
}

/* Records the outcome (ok: 1 written, 0 failed, -1 skipped: not the serving leader). */
static void snap_done(int ok, const char *id, const struct pool_snap_meta *meta, uint64_t ms,
                      uint64_t pause_us) {
    pthread_mutex_lock(&snap_mu);
    snap_stats.in_progress = 0;
    if (ok < 0) {
        pthread_mutex_unlock(&snap_mu);
        return;
    }
    snap_stats.last_ok = ok;
    snap_stats.last_duration_ms = ms;
    snap_stats.last_pause_us = pause_us;
    if (ok) {
        snap_stats.ok++;
        snprintf(snap_stats.last_id, sizeof(snap_stats.last_id), "%s", id);
        snap_stats.last_objects = meta->objects;
        snap_stats.last_bytes = meta->bytes;
    } else {
        snap_stats.failed++;
    }
    pthread_mutex_unlock(&snap_mu);
}

/* Reads <snap_dir>/<id>/descriptor.txt (last_seq|epoch|created_ms). Returns 0 or -1. */
static int snap_descriptor(const char *id, uint64_t *last_seq, uint64_t *epoch) {
    char path[4352];
    snprintf(path, sizeof(path), "%s/%s/descriptor.txt", snap_dir, id);
    FILE *f = fopen(path, "re");
    unsigned long long s = 0, e = 0;
    int ok = f && fscanf(f, "%llu|%llu|", &s, &e) == 2;
    if (f)
        fclose(f);
    *last_seq = s;
    *epoch = e;
    return ok ? 0 : -1;
}

/*
 * HA mode, after retention: trims the op-log up to the last_seq of the oldest snapshot still
 * kept, so that falling back from a corrupt newer snapshot to any kept one still finds every
 * entry after it. Skipped (logged) when a kept snapshot's descriptor cannot be read or it was
 * written without HA. The trim is fenced at epoch: a deposed leader's is refused.
 */
static void snap_trim_oplog(uint64_t epoch) {
    char(*ids)[SRV_SNAPCAT_ID_LEN] = cm_malloc(SNAP_MAX_LISTED * SRV_SNAPCAT_ID_LEN);
    char err[512];
    int n = srv_snapcat_list(snap_cat, ids, SNAP_MAX_LISTED, err, sizeof(err));
    uint64_t upto = UINT64_MAX, upto_epoch = 0;
    if (n > (int)srv_cfg.snapshot_retention_count)
        n = (int)srv_cfg.snapshot_retention_count;
    for (int i = 0; i < n && upto; i++) {
        uint64_t seq, ep;
        if (snap_descriptor(ids[i], &seq, &ep) != 0 || ep == 0) {
            cm_log(CM_LOG_WARNING, "snapshot",
                   "op-log not trimmed: snapshot %s has no readable HA descriptor", ids[i]);
            upto = 0;
        } else if (seq < upto) {
            upto = seq;
            upto_epoch = ep;
        }
    }
    cm_free(ids);
    if (n <= 0 || upto == 0 || upto == UINT64_MAX)
        return;
    if (srv_oplog_trim(epoch, upto, upto_epoch, err, sizeof(err)) != 0)
        cm_log(CM_LOG_WARNING, "snapshot", "op-log not trimmed up to entry %" PRIu64 ": %s", upto,
               err);
    else
        cm_log(CM_LOG_VERBOSE, "snapshot", "op-log trimmed up to entry %" PRIu64, upto);
}

/*
 * The snapshot point, under the pool mutex just before fork(): without HA (0, 0); in HA mode
 * the serving epoch and the op-log's last assigned sequence number. Returns -1 when this
 * master does not serve as leader (standbys take no snapshots).
 */
static int snap_point(uint64_t *epoch, uint64_t *seq) {
    *epoch = *seq = 0;
    if (!srv_ha_enabled())
        return 0;
    *epoch = srv_ha_serving_epoch();
    if (!*epoch)
        return -1;
    if (srv_oplog_enabled() && srv_oplog_snapshot_point(*epoch, seq) != 0)
        return -1;
    return 0;
}

/* Forks the writer, waits, publishes; logs one line either way. */
static void snap_take(void) {
    uint64_t t0 = cm_mono_ms();
    int64_t created = (int64_t)cm_wall_ms();
    char id[SRV_SNAPCAT_ID_LEN], tmp[4224], final[4224], err[256];
    snap_make_id(created, id);
    snprintf(tmp, sizeof(tmp), "%s/.tmp-%s", snap_dir, id);
    snprintf(final, sizeof(final), "%s/%s", snap_dir, id);
    struct pool_snap_meta meta = {0};
    int pfd[2] = {-1, -1}, ok = 0;
    uint64_t pause_us = 0;
    snap_rmtree(tmp);
    if (mkdir(tmp, 0755) < 0 || pipe2(pfd, O_CLOEXEC) < 0) {
        cm_log(CM_LOG_WARNING, "snapshot", "cannot prepare %s: %s", tmp, strerror(errno));
        goto out;
    }
    uint64_t l0 = cm_mono_us(), epoch, seq;
    srv_mc_lock();
    if (snap_point(&epoch, &seq) != 0) {
        srv_mc_unlock();
        cm_log(CM_LOG_VERBOSE, "snapshot", "no snapshot: this master does not serve as leader");
        snap_rmtree(tmp);
        close(pfd[0]);
        close(pfd[1]);
        snap_done(-1, id, &meta, 0, 0);
        return;
    }
    pid_t pid = fork();
    if (pid == 0)
        snap_child(tmp, pfd[1], created, epoch, seq); /* never returns */
    srv_mc_unlock();
    pause_us = cm_mono_us() - l0;
    close(pfd[1]);
    pfd[1] = -1;
    if (pid < 0) {
        cm_log(CM_LOG_WARNING, "snapshot", "fork failed: %s", strerror(errno));
        goto out;
    }
    if (snap_wait_child(pid) != 0 || read(pfd[0], &meta, sizeof(meta)) != sizeof(meta)) {
        cm_log(CM_LOG_WARNING, "snapshot",
               "snapshot %s failed: the child could not write it "
               "(disk full or not writable?)",
               id);
        goto out;
    }
    if (epoch && srv_oplog_enabled() && srv_oplog_wait_durable(epoch, seq) != 0) {
        cm_log(CM_LOG_WARNING, "snapshot",
               "snapshot %s dropped: op-log entries up to %" PRIu64
               " it includes were not stored (leadership of epoch %" PRIu64 " lost)",
               id, seq, epoch);
        goto out;
    }
    if (rename(tmp, final) != 0) {
        cm_log(CM_LOG_WARNING, "snapshot", "cannot rename %s: %s", tmp, strerror(errno));
        goto out;
    }
    if (srv_snapcat_publish(snap_cat, id, created, err, sizeof(err)) != 0) {
        cm_log(CM_LOG_WARNING, "snapshot", "snapshot %s written but not published: %s", id, err);
        snap_rmtree(final);
        goto out;
    }
    ok = 1;
    cm_log(CM_LOG_NOTICE, "snapshot",
           "snapshot %s: %llu objects, %llu bytes in %llu ms (pool locked %llu us for fork)", id,
           (unsigned long long)meta.objects, (unsigned long long)meta.bytes,
           (unsigned long long)(cm_mono_ms() - t0), (unsigned long long)pause_us);
    snap_retain();
    if (epoch && srv_oplog_enabled())
        snap_trim_oplog(epoch);
out:
    if (!ok)
        snap_rmtree(tmp);
    if (pfd[0] >= 0)
        close(pfd[0]);
    if (pfd[1] >= 0)
        close(pfd[1]);
    snap_done(ok, id, &meta, cm_mono_ms() - t0, pause_us);
}

static void *snap_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&snap_mu);
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)srv_cfg.snapshot_interval_seconds;
        while (!snap_stopping && !snap_requested)
            if (pthread_cond_timedwait(&snap_cv, &snap_mu, &until) == ETIMEDOUT)
                break;
        if (snap_stopping)
            break;
        snap_requested = 0;
        snap_stats.in_progress = 1;
        pthread_mutex_unlock(&snap_mu);
        snap_take();
        pthread_mutex_lock(&snap_mu);
    }
    pthread_mutex_unlock(&snap_mu);
    return NULL;
}

/* ---------------------------------------------------------------- restore */

/* Maps <snap_dir>/<id>/metadata read-only into *map / *len. 0, else logs the refusal. */
static int snap_map(const char *id, void **map, size_t *len) {
    char path[4352];
    snprintf(path, sizeof(path), "%s/%s/metadata", snap_dir, id);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        cm_log(CM_LOG_WARNING, "snapshot", "snapshot %s refused: cannot open %s: %s", id, path,
               strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *map =
        st.st_size > 0 ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    if (*map == MAP_FAILED) {
        cm_log(CM_LOG_WARNING, "snapshot", "snapshot %s refused: %s is empty or unreadable", id,
               path);
        return -1;
    }
    *len = (size_t)st.st_size;
    madvise(*map, *len, MADV_SEQUENTIAL);
    return 0;
}

/* Counts a restored snapshot and logs it. */
static void snap_restored(const char *id, const struct pool_snap_meta *meta, uint64_t t0) {
    pthread_mutex_lock(&snap_mu);
    snprintf(snap_stats.restored_id, sizeof(snap_stats.restored_id), "%s", id);
    snap_stats.restored_objects = meta->objects;
    snap_stats.restored_seq = meta->last_seq;
    snap_stats.restore_ms = cm_mono_ms() - t0;
    pthread_mutex_unlock(&snap_mu);
    cm_log(CM_LOG_NOTICE, "snapshot",
           "restored snapshot %s: %llu objects in %llu ms; clients have client_live_ttl_sec "
           "to ping again before their segments are dropped",
           id, (unsigned long long)meta->objects, (unsigned long long)snap_stats.restore_ms);
}

/* Loads snapshot id; 0 on success, else logs why it was refused. */
static int snap_restore_one(const char *id) {
    char err[256] = "";
    uint64_t t0 = cm_mono_ms();
    void *map;
    size_t len;
    if (snap_map(id, &map, &len) != 0)
        return -1;
    struct pool_snap_meta meta;
    int rc = srv_mc_restore(map, len, &meta, err, sizeof(err));
    munmap(map, len);
    if (rc != 0) {
        cm_log(CM_LOG_WARNING, "snapshot", "snapshot %s refused: %s", id, err);
        return -1;
    }
    snap_restored(id, &meta, t0);
    return 0;
}

/* Counts a snapshot refused by the HA recovery (the recovery thread; INFO reads the count). */
static void snap_refused(void) {
    pthread_mutex_lock(&snap_mu);
    snap_stats.restore_refused++;
    pthread_mutex_unlock(&snap_mu);
}

/*
 * HA: checks the header of the snapshot at map (epoch and last_seq at bytes 16 and 24, before
 * the whole file is read) against the op-log's trim point base and first entry first. Returns
 * NULL when usable, else why not (in buf).
 */
static const char *snap_ha_usable(const void *map, size_t len, uint64_t base, uint64_t first,
                                  char *buf, size_t buflen) {
    uint64_t epoch, seq;
    if (len < 32)
        return "shorter than its header";
    memcpy(&epoch, (const char *)map + 16, 8);
    memcpy(&seq, (const char *)map + 24, 8);
    epoch = le64toh(epoch);
    seq = le64toh(seq);
    if (epoch == 0)
        return "written without HA (epoch 0): the op-log does not continue it";
    if (seq < base || (first && seq + 1 < first)) {
        snprintf(buf, buflen,
                 "its last_seq %" PRIu64 " is older than the op-log (trimmed up to entry %" PRIu64
                 ", first entry %" PRIu64 "): entries %" PRIu64 "..%" PRIu64 " are gone (a gap)",
                 seq, base, first, seq + 1, (base > first ? base + 1 : first) - 1);
        return buf;
    }
    return NULL;
}

int srv_snapshot_load_ha(uint64_t base, uint64_t first, struct pool **out,
                         struct pool_snap_meta *meta, char *id, size_t idlen) {
    *out = NULL;
    if (!snap_cat || !srv_cfg.enable_snapshot_restore)
        return 0;
    char(*ids)[SRV_SNAPCAT_ID_LEN] = cm_malloc(SNAP_MAX_LISTED * SRV_SNAPCAT_ID_LEN);
    char err[512];
    int n = srv_snapcat_list(snap_cat, ids, SNAP_MAX_LISTED, err, sizeof(err));
    if (n < 0) {
        cm_log(CM_LOG_WARNING, "snapshot", "cannot list snapshots: %s%s", err,
               base ? "" : "; replaying the whole op-log");
        cm_free(ids);
        return base ? -1 : 0;
    }
    for (int i = 0; i < n && !*out; i++) {
        uint64_t t0 = cm_mono_ms();
        void *map;
        size_t len;
        if (snap_map(ids[i], &map, &len) != 0) {
            snap_refused();
            continue;
        }
        const char *why = snap_ha_usable(map, len, base, first, err, sizeof(err));
        struct pool *np = NULL;
        if (!why && srv_mc_new_pool(&np) != 0) {
            munmap(map, len);
            break;
        }
        if (!why && pool_snapshot_load(np, map, len, srv_mc_now(), meta, err, sizeof(err)) != 0)
            why = err;
        munmap(map, len);
        if (why) {
            cm_log(CM_LOG_WARNING, "snapshot", "snapshot %s refused: %s%s", ids[i], why,
                   i + 1 < n ? "; trying the previous one" : "");
            if (np)
                pool_destroy(np);
            snap_refused();
            continue;
        }
        *out = np;
        snprintf(id, idlen, "%s", ids[i]);
        snap_restored(ids[i], meta, t0);
    }
    if (!*out)
        cm_log(CM_LOG_NOTICE, "snapshot", "no usable snapshot among %d in %s: %s", n, snap_dir,
               base ? "the op-log alone is incomplete" : "replaying the whole op-log");
    cm_free(ids);
    return 0;
}

static void snap_restore(void) {
    char(*ids)[SRV_SNAPCAT_ID_LEN] = cm_malloc(SNAP_MAX_LISTED * SRV_SNAPCAT_ID_LEN);
    char err[256];
    int n = srv_snapcat_list(snap_cat, ids, SNAP_MAX_LISTED, err, sizeof(err));
    if (n < 0)
        cm_log(CM_LOG_WARNING, "snapshot", "cannot list snapshots: %s", err);
    else if (n == 0)
        cm_log(CM_LOG_NOTICE, "snapshot", "no snapshot in %s: starting empty", snap_dir);
    int i = 0;
    for (; i < n; i++) {
        if (snap_restore_one(ids[i]) == 0)
            break;
        snap_stats.restore_refused++;
    }
    if (n > 0 && i == n)
        cm_log(CM_LOG_WARNING, "snapshot",
               "none of the %d snapshots in %s is valid: starting "
               "empty",
               n, snap_dir);
    cm_free(ids);
}

/* ---------------------------------------------------------------- lifecycle */

static int snap_check_config(void) {
    const char *base = srv_cfg.snapshot_local_path[0] ? srv_cfg.snapshot_local_path
                                                      : getenv("MOONCAKE_SNAPSHOT_LOCAL_PATH");
    const char *store = srv_cfg.snapshot_object_store_type;
    if (store[0] && strcmp(store, "local") != 0) {
        cm_log(CM_LOG_WARNING, "snapshot",
               "snapshot_object_store_type '%s' is not supported: only local", store);
        return -1;
    }
    if (!base || !base[0] || base[0] != '/') {
        cm_log(CM_LOG_WARNING, "snapshot",
               "snapshots need an absolute directory: set MOONCAKE_SNAPSHOT_LOCAL_PATH or "
               "--snapshot_local_path");
        return -1;
    }
    if (!snap_cluster_ok(srv_cfg.cluster_id)) {
        cm_log(CM_LOG_WARNING, "snapshot",
               "cluster_id '%s' is not a valid name ([A-Za-z0-9_.-], at most 128)",
               srv_cfg.cluster_id);
        return -1;
    }
    snprintf(snap_dir, sizeof(snap_dir), "%s/mooncake_master_snapshot/%s", base,
             srv_cfg.cluster_id);
    int rc = snap_mkdirs(snap_dir);
    if (rc < 0) {
        cm_log(CM_LOG_WARNING, "snapshot", "cannot create %s: %s", snap_dir, strerror(-rc));
        return -1;
    }
    return 0;
}

int srv_snapshot_start(void) {
    if (!srv_cfg.enable_snapshot && !srv_cfg.enable_snapshot_restore)
        return 0;
    if (snap_check_config() != 0)
        return -1;
    char err[256];
    if (srv_snapcat_open(srv_cfg.snapshot_catalog_store_type,
                         srv_cfg.snapshot_catalog_store_connstring, snap_dir, srv_cfg.cluster_id,
                         &snap_cat, err, sizeof(err)) != 0) {
        cm_log(CM_LOG_WARNING, "snapshot", "%s", err);
        return -1;
    }
    if (srv_cfg.enable_snapshot_restore && !srv_cfg.enable_ha)
        snap_restore(); /* HA: the new leader's recovery loads it (srv_snapshot_load_ha) */
    if (!srv_cfg.enable_snapshot)
        return 0;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&snap_cv, &ca);
    pthread_condattr_destroy(&ca);
    snap_stats.enabled = 1;
    int rc = pthread_create(&snap_thread, NULL, snap_main, NULL);
    if (rc != 0) {
        cm_log(CM_LOG_WARNING, "snapshot", "cannot start the snapshot thread: %s", strerror(rc));
        return -1;
    }
    snap_thread_on = 1;
    cm_log(CM_LOG_NOTICE, "snapshot", "snapshots every %llds into %s (%s catalog, keep %lld)",
           srv_cfg.snapshot_interval_seconds, snap_dir,
           strcmp(srv_cfg.snapshot_catalog_store_type, "redis") == 0 ? "redis" : "embedded",
           srv_cfg.snapshot_retention_count);
    return 0;
}

void srv_snapshot_stop(void) {
    if (snap_thread_on) {
        pthread_mutex_lock(&snap_mu);
        snap_stopping = 1;
        pthread_cond_signal(&snap_cv);
        pthread_mutex_unlock(&snap_mu);
        pthread_join(snap_thread, NULL);
        snap_thread_on = 0;
    }
    srv_snapcat_close(snap_cat);
    snap_cat = NULL;
}

int srv_snapshot_request(void) {
    if (!snap_thread_on)
        return -EINVAL;
    pthread_mutex_lock(&snap_mu);
    int busy = snap_requested || snap_stats.in_progress;
    if (!busy) {
        snap_requested = 1;
        pthread_cond_signal(&snap_cv);
    }
    pthread_mutex_unlock(&snap_mu);
    return busy ? -EBUSY : 0;
}

void srv_snapshot_stats(struct srv_snapshot_stats *out) {
    pthread_mutex_lock(&snap_mu);
    *out = snap_stats;
    pthread_mutex_unlock(&snap_mu);
}

void srv_snapshot_info(struct cm_buf *b) {
    struct srv_snapshot_stats st;
    struct srv_oplog_stats os = {0};
    srv_snapshot_stats(&st);
    if (srv_oplog_enabled() && st.restored_id[0])
        srv_oplog_get_stats(&os);
    cm_buf_appendf(b,
                   "# Snapshot\r\nsnapshot_enabled:%d\r\nsnapshot_in_progress:%d\r\n"
                   "snapshot_ok:%llu\r\nsnapshot_failed:%llu\r\nsnapshot_last_id:%s\r\n"
                   "snapshot_last_status:%s\r\nsnapshot_last_duration_ms:%llu\r\n"
                   "snapshot_last_pause_us:%llu\r\nsnapshot_last_objects:%llu\r\n"
                   "snapshot_last_bytes:%llu\r\nsnapshot_restored_id:%s\r\n"
                   "snapshot_restored_objects:%llu\r\nsnapshot_restore_ms:%llu\r\n"
                   "snapshot_restore_refused:%llu\r\nsnapshot_restored_seq:%llu\r\n"
                   "snapshot_restored_oplog_replayed:%llu\r\n\r\n",
                   st.enabled, st.in_progress, (unsigned long long)st.ok,
                   (unsigned long long)st.failed, st.last_id,
                   st.ok + st.failed == 0 ? "none"
                   : st.last_ok           ? "ok"
                                          : "err",
                   (unsigned long long)st.last_duration_ms, (unsigned long long)st.last_pause_us,
                   (unsigned long long)st.last_objects, (unsigned long long)st.last_bytes,
                   st.restored_id, (unsigned long long)st.restored_objects,
                   (unsigned long long)st.restore_ms, (unsigned long long)st.restore_refused,
                   (unsigned long long)st.restored_seq, (unsigned long long)os.replayed);
}
