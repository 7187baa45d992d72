/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HA mode of crescent-master (see srv_ha.h): the elector and its callbacks, the recovery thread
 * (fence the op-log with the new epoch, replay it into a fresh pool, swap it in, serve), the
 * dispatch gate, ROLE and INFO's "ha" section.
 */
#include "common/fmacros.h"

#include "server/srv_ha.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_mc.h"
#include "server/srv_oplog.h"
#include "server/srv_server.h"
#include "server/srv_snapshot.h"

#include "common/cm_atomic.h"
#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_net.h"
#include "common/cm_time.h"
#include "ha/ha.h"
#include "redis-compat/resp_write.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define SRV_HA_RETRY_MS 1000 /* pause before retrying a failed recovery */
#define SRV_HA_TAIL_MS  200  /* a hot standby reads the op-log this often */

static const char *const srv_ha_state_names[] = {"starting", "standby", "recovering",
                                                 "leader_warmup", "serving"};

static struct {
    int on;
    struct ha_elector *e;
    char self[300];
    char uri[1024];
    _Atomic int state;
    _Atomic uint64_t serving_epoch;
    _Atomic uint64_t transitions;

    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    pthread_t thread;
    int thread_on, stopping;
    int want_lead;          /* the elector says we lead lead_epoch */
    int reset_pool;         /* stepped down: drop the deposed leader's pool */
    uint64_t lead_epoch;    /* epoch of our current leadership, 0 when none */
    uint64_t recovered;     /* epoch whose recovery finished */
    char leader[300];       /* last observed holder ("" = none) */
    uint64_t leader_epoch;  /* its epoch */
    uint64_t last_replayed; /* entries of the last replay */
    uint64_t last_recovery_ms;
    char snap_id[32];             /* snapshot the last recovery started from ("" = none) */
    uint64_t snap_seq;            /* its last included op-log sequence number */
    int last_hot;                 /* the last recovery replayed only the tail of a hot standby */
    uint64_t hot_rebuilds;        /* hot-standby states built (the first one included) */
    _Atomic uint64_t warm_seq;    /* the hot standby's applied sequence number (0: none) */
    _Atomic int64_t warm_read_ms; /* when it last read the log's end (monotonic ms) */
    struct srv_oplog_warm warm;   /* the hot standby's state (HA thread only) */
} srv_ha = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Commands a standby still runs (connection, introspection, configuration). */
static const char *const srv_ha_standby_cmds[] = {
    "ping", "auth",  "hello", "role", "info",   "client",   "command", "config",
    "quit", "reset", "echo",  "time", "select", "shutdown", NULL};

int srv_ha_enabled(void) {
    return srv_ha.on;
}

int srv_ha_allowed_on_standby(const char *name, unsigned flags) {
    (void)flags;
    for (const char *const *n = srv_ha_standby_cmds; *n; n++)
        if (strcmp(*n, name) == 0)
            return 1;
    return 0;
}

/* Sets the state and logs the transition (mu held or not: the state is atomic). */
static void srv_ha_set_state(int st, uint64_t epoch, const char *why) {
    int old = atomic_exchange(&srv_ha.state, st);
    if (old == st)
        return;
    atomic_fetch_add(&srv_ha.transitions, 1);
    cm_log(CM_LOG_NOTICE, "ha", "state %s -> %s (epoch %" PRIu64 "%s%s)", srv_ha_state_names[old],
           srv_ha_state_names[st], epoch, why ? ", " : "", why ? why : "");
}

uint64_t srv_ha_serving_epoch(void) {
    uint64_t ep = srv_ha.on ? atomic_load(&srv_ha.serving_epoch) : 0;
    return ep && atomic_load(&srv_ha.state) == SRV_HA_SERVING && srv_ha_lease_valid(ep) ? ep : 0;
}

int srv_ha_lease_valid(uint64_t epoch) {
    uint64_t ep = 0;
    return srv_ha.on && ha_elector_is_leader(srv_ha.e, &ep) && ep == epoch;
}

/* ---- elector callbacks (elector thread) -------------------------------------------------- */

static void srv_ha_on_started(uint64_t epoch, uint64_t until, void *arg) {
    (void)until;
    (void)arg;
    pthread_mutex_lock(&srv_ha.mu);
    srv_ha.want_lead = 1;
    srv_ha.lead_epoch = epoch;
    snprintf(srv_ha.leader, sizeof(srv_ha.leader), "%s", srv_ha.self);
    srv_ha.leader_epoch = epoch;
    srv_ha_set_state(SRV_HA_RECOVERING, epoch, "won the lease");
    pthread_cond_broadcast(&srv_ha.cv);
    pthread_mutex_unlock(&srv_ha.mu);
}

static void srv_ha_on_stopped(const char *reason, void *arg) {
    (void)arg;
    pthread_mutex_lock(&srv_ha.mu);
    uint64_t epoch = srv_ha.lead_epoch;
    srv_ha.want_lead = 0;
    srv_ha.lead_epoch = 0;
    atomic_store(&srv_ha.serving_epoch, 0);
    srv_oplog_deactivate();
    char why[64];
    snprintf(why, sizeof(why), "stepped down: %s", reason);
    srv_ha_set_state(SRV_HA_STANDBY, epoch, why);
    srv_ha.reset_pool = 1;
    pthread_cond_broadcast(&srv_ha.cv);
    pthread_mutex_unlock(&srv_ha.mu);
}

static void srv_ha_on_new_leader(const char *identity, uint64_t epoch, void *arg) {
    (void)arg;
    pthread_mutex_lock(&srv_ha.mu);
    snprintf(srv_ha.leader, sizeof(srv_ha.leader), "%s", identity);
    srv_ha.leader_epoch = epoch;
    if (strcmp(identity, srv_ha.self) != 0) {
        if (identity[0])
            cm_log(CM_LOG_NOTICE, "ha", "leader is %s (epoch %" PRIu64 ")", identity, epoch);
        if (atomic_load(&srv_ha.state) == SRV_HA_STARTING)
            srv_ha_set_state(SRV_HA_STANDBY, epoch, identity[0] ? "another master leads" : NULL);
    }
    pthread_mutex_unlock(&srv_ha.mu);
}

static void srv_ha_on_error(int err, const char *msg, void *arg) {
    (void)arg;
    cm_log(CM_LOG_WARNING, "ha", "election backend: %s (%s)", msg, cm_err_name(err));
}

static void srv_ha_on_data_loss(uint64_t stored, uint64_t floor, const char *msg, void *arg) {
    (void)stored;
    (void)floor;
    (void)arg;
    cm_log(CM_LOG_WARNING, "ha", "ERROR: %s", msg);
}

/* ---- recovery (recovery thread) ------------------------------------------------------------ */

/* True while the leadership of epoch is still wanted (mu held). */
static int srv_ha_still(uint64_t epoch) {
    return srv_ha.want_lead && srv_ha.lead_epoch == epoch && !srv_ha.stopping;
}

/* Logs a recovery problem once per new text (recovery thread only). */
static void srv_ha_log_once(const char *err) {
    static char last[768];
    if (strcmp(last, err) != 0)
        cm_log(CM_LOG_WARNING, "ha", "%s (retrying every %d ms)", err, SRV_HA_RETRY_MS);
    snprintf(last, sizeof(last), "%s", err);
}

/* True when this master keeps a hot standby (--ha_hot_standby with a store that can be tailed). */
static int srv_ha_hot(void) {
    return srv_cfg.ha_hot_standby && srv_oplog_enabled();
}

/* Drops the hot-standby state (HA thread). */
static void srv_ha_warm_drop(void) {
    srv_oplog_warm_free(&srv_ha.warm);
    atomic_store(&srv_ha.warm_seq, 0);
}

/*
 * Builds the hot-standby state as recovery would (newest usable snapshot, then the op-log after
 * it) without fencing. Returns 0 or -1 (logged once; retried on the next tick). HA thread.
 */
static int srv_ha_warm_build(void) {
    char err[768];
    uint64_t base = 0, first = 0;
    if (srv_oplog_bounds(&base, &first, err, sizeof(err)) != 0) {
        srv_ha_log_once(err);
        return -1;
    }
    struct pool *np = NULL;
    struct pool_snap_meta meta = {0};
    char id[32] = "";
    if (srv_snapshot_load_ha(base, first, &np, &meta, id, sizeof(id)) != 0)
        return -1;
    if (!np && base > 0)
        return -1; /* the log alone is not the state: recovery says why when it runs */
    if (!np && srv_mc_new_pool(&np) != 0)
        return -1;
    if (srv_oplog_warm_build(&srv_ha.warm, np, meta.last_seq, srv_mc_now(), err, sizeof(err)) !=
        0) {
        srv_ha_log_once(err);
        return -1;
    }
    snprintf(srv_ha.warm.snap_id, sizeof(srv_ha.warm.snap_id), "%s", id);
    cm_log(CM_LOG_NOTICE, "ha",
           "hot standby: state built up to op-log entry %" PRIu64 " (%s%s%" PRIu64
           " entries applied)",
           srv_ha.warm.seq, id[0] ? "snapshot " : "", id[0] ? id : "", srv_ha.warm.applied);
    pthread_mutex_lock(&srv_ha.mu);
    srv_ha.hot_rebuilds++;
    pthread_mutex_unlock(&srv_ha.mu);
    return 0;
}

/* One tick of a hot standby: build the state if there is none, else read the new entries. */
static void srv_ha_warm_tick(void) {
    char err[768];
    uint64_t n = 0;
    static uint64_t next_build; /* a failed build is retried after SRV_HA_RETRY_MS */
    if (!srv_ha.warm.p) {
        if (cm_mono_ms() < next_build)
            return;
        if (srv_ha_warm_build() != 0) {
            next_build = cm_mono_ms() + SRV_HA_RETRY_MS;
            return;
        }
    } else {
        int rc = srv_oplog_warm_tail(&srv_ha.warm, srv_mc_now(), &n, err, sizeof(err));
        if (rc == -2) {
            cm_log(CM_LOG_NOTICE, "ha", "hot standby: rebuilding the state: %s", err);
            srv_ha_warm_drop();
            return;
        }
        if (rc != 0) {
            srv_ha_log_once(err);
            return;
        }
    }
    atomic_store(&srv_ha.warm_seq, srv_ha.warm.seq);
    atomic_store(&srv_ha.warm_read_ms, srv_ha.warm.last_read_ms);
}

/*
 * The promotion of a hot standby, after the fence: reads the entries the standby has not
 * applied yet. Returns the pool (*n: entries applied, *loglen: the log's length for the
 * compaction's estimate), or NULL when the state cannot be used (dropped: recover in full) or
 * the store failed (*retry set). HA thread.
 */
static struct pool *srv_ha_warm_promote(uint64_t *n, uint64_t *loglen, int *retry) {
    char err[768];
    *retry = 0;
    if (!srv_ha.warm.p)
        return NULL;
    int rc = srv_oplog_warm_tail(&srv_ha.warm, srv_mc_now(), n, err, sizeof(err));
    if (rc == -1) {
        srv_ha_log_once(err);
        *retry = 1;
        return NULL;
    }
    if (rc != 0) {
        cm_log(CM_LOG_NOTICE, "ha", "hot standby state not usable, full recovery: %s", err);
        srv_ha_warm_drop();
        return NULL;
    }
    srv_oplog_warm_finish(&srv_ha.warm, *n);
    *loglen = srv_ha.warm.log_len ? srv_ha.warm.log_len : srv_ha.warm.applied;
    struct pool *p = srv_ha.warm.p;
    srv_ha.warm.p = NULL;
    return p;
}

/*
 * Fences the op-log at epoch, loads the newest usable snapshot (with enable_snapshot_restore),
 * replays the op-log entries after it into that pool (or into an empty one) and swaps it in,
 * then serves. Returns 0, or -1 (logged) to retry while the leadership lasts.
 */
static int srv_ha_recover(uint64_t epoch) {
    char err[768];
    uint64_t t0 = cm_mono_ms(), n = 0;
    struct pool *np = NULL;
    if (srv_oplog_enabled() && srv_oplog_fence(epoch, err, sizeof(err)) != 0) {
        cm_log(CM_LOG_WARNING, "ha", "cannot fence the op-log at epoch %" PRIu64 ": %s", epoch,
               err);
        return -1;
    }
    uint64_t base = 0, first = 0;
    if (srv_oplog_enabled() && srv_oplog_bounds(&base, &first, err, sizeof(err)) != 0) {
        cm_log(CM_LOG_WARNING, "ha", "cannot read the op-log's bounds: %s", err);
        return -1;
    }
    struct pool_snap_meta meta = {0};
    char id[32] = "";
    uint64_t loglen = 0;
    int retry = 0, hot = 0;
    if (srv_ha_hot() && (np = srv_ha_warm_promote(&n, &loglen, &retry)) != NULL) {
        hot = 1;
        meta.last_seq = srv_ha.warm.snap_seq;
        snprintf(id, sizeof(id), "%s", srv_ha.warm.snap_id);
        srv_ha_warm_drop();
        goto replayed;
    }
    if (retry)
        return -1; /* the store failed after the fence: keep the state, retry */
    srv_ha_warm_drop();
    if (srv_snapshot_load_ha(base, first, &np, &meta, id, sizeof(id)) != 0)
        return -1;
    if (!np && base > 0) {
        snprintf(err, sizeof(err),
                 "the op-log was trimmed up to entry %" PRIu64 " (what came before is only in "
                 "snapshots) and no snapshot with last_seq >= %" PRIu64 " can be loaded; "
                 "refusing to serve",
                 base, base);
        srv_ha_log_once(err);
        return -1;
    }
    if (!np && srv_mc_new_pool(&np) != 0)
        return -1;
    if (srv_oplog_enabled() &&
        srv_oplog_replay(np, srv_mc_now(), meta.last_seq, &n, err, sizeof(err)) != 0) {
        srv_ha_log_once(err);
        pool_destroy(np);
        return -1;
    }
    loglen = n;
replayed:;
    uint64_t kept = loglen;
    if (srv_oplog_compact(np, epoch, loglen, &kept, err, sizeof(err)) != 0)
        cm_log(CM_LOG_WARNING, "ha", "op-log not compacted (it stays as it was): %s", err);
    else if (kept != loglen)
        cm_log(CM_LOG_NOTICE, "ha", "op-log compacted: %" PRIu64 " entries -> %" PRIu64, loglen,
               kept);
    pthread_mutex_lock(&srv_ha.mu);
    if (!srv_ha_still(epoch) || !srv_ha_lease_valid(epoch)) {
        pthread_mutex_unlock(&srv_ha.mu);
        pool_destroy(np);
        return 0; /* lost the lease meanwhile: stopped_leading took over */
    }
    srv_ha_set_state(SRV_HA_LEADER_WARMUP, epoch, NULL);
    pool_clients_touch(np, srv_mc_now()); /* the owners' remount grace starts now */
    srv_mc_swap_pool(np);
    if (hot && srv_mc_reconfigure(err, sizeof(err)) != 0) /* built before a CONFIG SET */
        cm_log(CM_LOG_WARNING, "ha", "pool settings not applied: %s", err);
    srv_oplog_activate(epoch);
    srv_ha.last_replayed = n;
    srv_ha.last_hot = hot;
    srv_ha.last_recovery_ms = cm_mono_ms() - t0;
    snprintf(srv_ha.snap_id, sizeof(srv_ha.snap_id), "%s", id);
    srv_ha.snap_seq = meta.last_seq;
    if (srv_ha_lease_valid(epoch)) {
        atomic_store(&srv_ha.serving_epoch, epoch);
        char why[160];
        if (id[0])
            snprintf(why, sizeof(why),
                     "%ssnapshot %s (last_seq %" PRIu64 ") + %" PRIu64
                     " op-log entries replayed in %" PRIu64 " ms",
                     hot ? "hot standby: " : "", id, meta.last_seq, n, srv_ha.last_recovery_ms);
        else
            snprintf(why, sizeof(why), "%s%" PRIu64 " op-log entries replayed in %" PRIu64 " ms",
                     hot ? "hot standby: " : "", n, srv_ha.last_recovery_ms);
        srv_ha_set_state(SRV_HA_SERVING, epoch, why);
    } else {
        srv_oplog_deactivate();
    }
    pthread_mutex_unlock(&srv_ha.mu);
    return 0;
}

static void *srv_ha_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&srv_ha.mu);
    while (!srv_ha.stopping) {
        if (srv_ha.reset_pool && !srv_ha.want_lead) { /* a standby keeps no stale metadata */
            struct pool *np;
            srv_ha.reset_pool = 0;
            pthread_mutex_unlock(&srv_ha.mu);
            if (srv_mc_new_pool(&np) == 0)
                srv_mc_swap_pool(np);
            pthread_mutex_lock(&srv_ha.mu);
            continue;
        }
        if (!srv_ha.want_lead && srv_ha_hot()) { /* hot standby: follow the log */
            pthread_mutex_unlock(&srv_ha.mu);
            srv_ha_warm_tick();
            pthread_mutex_lock(&srv_ha.mu);
            if (srv_ha.want_lead || srv_ha.stopping || srv_ha.reset_pool)
                continue;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += SRV_HA_TAIL_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&srv_ha.cv, &srv_ha.mu, &ts);
            continue;
        }
        if (!srv_ha.want_lead || srv_ha.lead_epoch == srv_ha.recovered) {
            pthread_cond_wait(&srv_ha.cv, &srv_ha.mu);
            continue;
        }
        uint64_t epoch = srv_ha.lead_epoch;
        pthread_mutex_unlock(&srv_ha.mu);
        int rc = srv_ha_recover(epoch);
        pthread_mutex_lock(&srv_ha.mu);
        if (rc == 0) {
            srv_ha.recovered = epoch;
        } else if (srv_ha_still(epoch)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += SRV_HA_RETRY_MS / 1000;
            pthread_cond_timedwait(&srv_ha.cv, &srv_ha.mu, &ts);
        }
    }
    pthread_mutex_unlock(&srv_ha.mu);
    srv_ha_warm_drop();
    return NULL;
}

/* ---- start / stop ---------------------------------------------------------------------------- */

/* The election URI from --ha_backend_type and --ha_backend_connstring (Mooncake's forms: a
   bare "host:port" list, ';' or ',' separated, or a full URI). */
static int srv_ha_backend_uri(char *err, size_t errlen) {
    const char *type = srv_cfg.ha_backend_type, *conn = srv_cfg.ha_backend_connstring;
    if (strcmp(type, "redis") != 0 && strcmp(type, "etcd") != 0 && strcmp(type, "k8s") != 0) {
        snprintf(err, errlen, "ha_backend_type must be etcd, redis or k8s, not '%s'", type);
        return -1;
    }
    if (!conn[0] && strcmp(type, "k8s") != 0) {
        snprintf(err, errlen, "enable_ha needs ha_backend_connstring (the %s endpoint)", type);
        return -1;
    }
    if (strstr(conn, "://"))
        snprintf(srv_ha.uri, sizeof(srv_ha.uri), "%s", conn);
    else
        snprintf(srv_ha.uri, sizeof(srv_ha.uri), "%s://%s", type, conn);
    for (char *p = srv_ha.uri; *p; p++)
        if (*p == ';')
            *p = ',';
    return 0;
}

/* --rpc_address, or the first --bind address (the host name for a wildcard) and --port, always
 * written so that cm_net_hostport_parse() reads it back (an IPv6 host in brackets): clients and
 * standbys parse it from the election record and -NOTLEADER. Returns 0, or -1 with one line in
 * err when rpc_address is not host:port. */
static int srv_ha_identity(char *err, size_t errlen) {
    if (srv_cfg.rpc_address && srv_cfg.rpc_address[0]) {
        const char *a = srv_cfg.rpc_address;
        char host[256], why[300];
        int port = -1;
        if (cm_net_hostport_parse(a, strlen(a), CM_NET_PORT_REQUIRED, host, sizeof(host), &port,
                                  why, sizeof(why)) != 0 ||
            port == 0) {
            snprintf(err, errlen, "rpc_address: %s", port == 0 ? "port 0 is not a port" : why);
            return -1;
        }
        cm_net_hostport_format(srv_ha.self, sizeof(srv_ha.self), host, port);
        return 0;
    }
    char first[256] = "";
    sscanf(srv_cfg.bind, "%255s", first);
    const char *h = first[0] == '-' ? first + 1 : first;
    char host[256];
    if (!h[0] || strcmp(h, "*") == 0 || strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0 ||
        strcmp(h, "::*") == 0) {
        if (gethostname(host, sizeof(host)) != 0)
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = '\0';
        h = host;
    }
    cm_net_hostport_format(srv_ha.self, sizeof(srv_ha.self), h, (int)srv_cfg.port);
    return 0;
}

int srv_ha_start(char *err, size_t errlen) {
    if (!srv_cfg.enable_ha)
        return 0;
    if (srv_ha_backend_uri(err, errlen) != 0)
        return -1;
    if (srv_ha_identity(err, errlen) != 0)
        return -1;
    if (srv_cfg.oplog_store[0]) {
        if (srv_oplog_open(srv_cfg.oplog_store, srv_cfg.cluster_id, err, errlen) != 0)
            return -1;
    } else {
        cm_log(CM_LOG_WARNING, "ha",
               "enable_ha without oplog_store: a new leader starts with an empty pool");
    }
    struct ha_elector_config cfg = {
        .uri = srv_ha.uri,
        .cluster_id = srv_cfg.cluster_id,
        .identity = srv_ha.self,
        .state_dir = srv_cfg.ha_state_dir[0] ? srv_cfg.ha_state_dir : NULL,
        .started_leading = srv_ha_on_started,
        .stopped_leading = srv_ha_on_stopped,
        .new_leader = srv_ha_on_new_leader,
        .error = srv_ha_on_error,
        .data_loss = srv_ha_on_data_loss,
    };
    if (ha_elector_create(&cfg, &srv_ha.e, err, errlen) != 0) {
        srv_oplog_close();
        return -1;
    }
    srv_ha.on = 1;
    int rc = pthread_create(&srv_ha.thread, NULL, srv_ha_main, NULL);
    if (rc == 0) {
        srv_ha.thread_on = 1;
        rc = ha_elector_start(srv_ha.e);
    }
    if (rc != 0) {
        snprintf(err, errlen, "cannot start HA threads: %s", strerror(rc < 0 ? -rc : rc));
        srv_ha_stop();
        return -1;
    }
    cm_log(CM_LOG_NOTICE, "ha", "HA mode: cluster %s, backend %s, advertised as %s, op-log %s",
           srv_cfg.cluster_id, srv_cfg.ha_backend_type, srv_ha.self,
           srv_oplog_enabled() ? "on" : "off");
    return 0;
}

void srv_ha_stop(void) {
    if (!srv_ha.on)
        return;
    ha_elector_destroy(srv_ha.e); /* a leader steps down (callback) and releases its lease */
    srv_ha.e = NULL;
    if (srv_ha.thread_on) {
        pthread_mutex_lock(&srv_ha.mu);
        srv_ha.stopping = 1;
        pthread_cond_broadcast(&srv_ha.cv);
        pthread_mutex_unlock(&srv_ha.mu);
        pthread_join(srv_ha.thread, NULL);
        srv_ha.thread_on = 0;
    }
    srv_oplog_close();
    srv_ha.on = 0;
}

/* ---- gate, ROLE, INFO ------------------------------------------------------------------------ */

int srv_ha_gate(struct srv_client *c, const struct srv_cmd *cmd) {
    if (!srv_ha.on || (cmd->srvflags & SRV_CMD_HA_OK))
        return 0;
    int st = atomic_load(&srv_ha.state);
    uint64_t ep = atomic_load(&srv_ha.serving_epoch);
    if (st == SRV_HA_SERVING && ep && srv_ha_lease_valid(ep))
        return 0;
    if (st == SRV_HA_RECOVERING || st == SRV_HA_LEADER_WARMUP) {
        srv_reply_error(c, "LOADING Crescent is replaying the op-log of the new leader");
        return 1;
    }
    char leader[300];
    pthread_mutex_lock(&srv_ha.mu);
    snprintf(leader, sizeof(leader), "%s", srv_ha.leader);
    pthread_mutex_unlock(&srv_ha.mu);
    if (!leader[0] || strcmp(leader, srv_ha.self) == 0)
        srv_reply_error(c, "NOTLEADER none (no other leader known yet)");
    else
        srv_reply_errorf(c, "NOTLEADER %s", leader);
    return 1;
}

void srv_role_command(struct srv_client *c) {
    int st = srv_ha.on ? atomic_load(&srv_ha.state) : SRV_HA_SERVING;
    uint64_t ep = atomic_load(&srv_ha.serving_epoch);
    if (st == SRV_HA_SERVING && (!srv_ha.on || srv_ha_lease_valid(ep))) {
        resp_add_array_hdr(&c->out, 3);
        resp_add_bulk_cstr(&c->out, "master");
        resp_add_int(&c->out, (long long)ep);
        resp_add_array_hdr(&c->out, 0);
        return;
    }
    char leader[300];
    uint64_t lep;
    pthread_mutex_lock(&srv_ha.mu);
    snprintf(leader, sizeof(leader), "%s", srv_ha.leader);
    lep = srv_ha.leader_epoch;
    pthread_mutex_unlock(&srv_ha.mu);
    char host[300];
    int port;
    if (cm_net_hostport_parse(leader, strlen(leader), CM_NET_PORT_REQUIRED, host, sizeof(host),
                              &port, NULL, 0) != 0) { /* none known ("") */
        snprintf(host, sizeof(host), "%s", leader);
        port = 0;
    }
    resp_add_array_hdr(&c->out, 5);
    resp_add_bulk_cstr(&c->out, "slave");
    resp_add_bulk_cstr(&c->out, host);
    resp_add_int(&c->out, port);
    resp_add_bulk_cstr(&c->out, srv_ha_state_names[st == SRV_HA_SERVING ? SRV_HA_STANDBY : st]);
    resp_add_int(&c->out, (long long)lep);
}

void srv_ha_get_view(struct srv_ha_view *v) {
    int st = atomic_load(&srv_ha.state);
    uint64_t sep = atomic_load(&srv_ha.serving_epoch);
    if (st == SRV_HA_SERVING && !srv_ha_lease_valid(sep))
        st = SRV_HA_STANDBY;
    v->serving = st == SRV_HA_SERVING;
    v->state = srv_ha_state_names[st];
    pthread_mutex_lock(&srv_ha.mu);
    snprintf(v->leader, sizeof(v->leader), "%s", srv_ha.leader);
    v->epoch = srv_ha.leader_epoch;
    pthread_mutex_unlock(&srv_ha.mu);
}

void srv_ha_info(struct cm_buf *b) {
    cm_buf_appendf(b, "# HA\r\nha_enabled:%d\r\n", srv_ha.on);
    if (!srv_ha.on) {
        cm_buf_appendf(b, "\r\n");
        return;
    }
    int st = atomic_load(&srv_ha.state);
    uint64_t sep = atomic_load(&srv_ha.serving_epoch);
    if (st == SRV_HA_SERVING && !srv_ha_lease_valid(sep))
        st = SRV_HA_STANDBY; /* the lease ran out; the elector reports it shortly */
    pthread_mutex_lock(&srv_ha.mu);
    cm_buf_appendf(b,
                   "ha_state:%s\r\nha_epoch:%" PRIu64 "\r\nha_leader:%s\r\nha_self:%s\r\n"
                   "ha_cluster_id:%s\r\nha_backend_type:%s\r\nha_transitions:%" PRIu64 "\r\n"
                   "ha_last_recovery_ms:%" PRIu64 "\r\nha_restored_snapshot:%s\r\n"
                   "ha_restored_snapshot_seq:%" PRIu64 "\r\nha_replayed_after_snapshot:%" PRIu64
                   "\r\n",
                   srv_ha_state_names[st], srv_ha.leader_epoch, srv_ha.leader, srv_ha.self,
                   srv_cfg.cluster_id, srv_cfg.ha_backend_type, atomic_load(&srv_ha.transitions),
                   srv_ha.last_recovery_ms, srv_ha.snap_id, srv_ha.snap_seq, srv_ha.last_replayed);
    uint64_t wseq = atomic_load(&srv_ha.warm_seq);
    int64_t wread = atomic_load(&srv_ha.warm_read_ms);
    cm_buf_appendf(b,
                   "ha_hot_standby:%s\r\nha_standby_applied_seq:%" PRIu64
                   "\r\nha_standby_lag_ms:%" PRId64 "\r\nha_standby_rebuilds:%" PRIu64
                   "\r\nha_last_promotion:%s\r\nha_replayed_at_promotion:%" PRIu64 "\r\n",
                   srv_ha_hot() ? "yes" : "no", wseq,
                   wseq ? (int64_t)cm_mono_ms() - wread : (int64_t)-1, srv_ha.hot_rebuilds,
                   srv_ha.recovered ? (srv_ha.last_hot ? "hot" : "cold") : "none",
                   srv_ha.last_replayed);
    pthread_mutex_unlock(&srv_ha.mu);
    struct srv_oplog_stats os;
    srv_oplog_get_stats(&os);
    cm_buf_appendf(
        b,
        "oplog_enabled:%d\r\noplog_appended:%" PRIu64 "\r\noplog_batches:%" PRIu64
        "\r\noplog_max_batch:%" PRIu64 "\r\noplog_failed:%" PRIu64 "\r\noplog_replayed:%" PRIu64
        "\r\noplog_durable_seq:%" PRIu64 "\r\noplog_compactions:%" PRIu64
        "\r\noplog_compacted:%" PRIu64 "\r\noplog_skipped:%" PRIu64 "\r\noplog_trims:%" PRIu64
        "\r\noplog_trimmed_to:%" PRIu64 "\r\n\r\n",
        srv_oplog_enabled(), os.appended, os.batches, os.max_batch, os.failed, os.replayed,
        os.durable, os.compactions, os.compacted, os.skipped, os.trims, os.trimmed_to);
}
