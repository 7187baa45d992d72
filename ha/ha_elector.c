/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The elector: glue between the pure state machine (ha_fsm.c) and a backend. One thread per
 * elector performs the operation the state machine asks for, with deadlines (a renew is bounded
 * by the leader's until), stamps results with CLOCK_MONOTONIC and feeds them back. Callbacks run
 * on that thread; shared fields (leader flag, until, observed view) sit under e->lock.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "ha/ha.h"
#include "ha/ha_int.h"

struct ha_elector {
    struct ha_elector_config cfg; /* strings point at the copies below */
    char *uri, *cluster_id, *identity, *state_dir;
    char *state_path;     /* state_dir/ha-epoch-<cluster>, or NULL */
    uint64_t floor_saved; /* elector thread only: the floor last written to state_path */
    bool save_failed;     /* elector thread only: the last write of state_path failed */
    struct ha_uri parsed;
    const struct ha_backend_ops *ops;
    void *state;            /* the elector thread's backend handle */
    pthread_mutex_t qlock;  /* guards qstate */
    void *qstate;           /* backend handle for ha_elector_get_holder, opened lazily */
    struct ha_fsm fsm;      /* elector thread only */
    bool watch_unsupported; /* elector thread only */
    char last_err[512];     /* elector thread only: the error last reported */

    pthread_t thread;
    bool started; /* controlling thread only */

    pthread_mutex_t lock; /* guards the fields below */
    pthread_cond_t cond;  /* CLOCK_MONOTONIC; signalled on stop and on every view change */
    bool stop_req;
    bool exited;
    bool leader;
    uint64_t epoch, until_ms;
    char holder[256]; /* observed holder ("" none) */
    uint64_t holder_epoch;
    uint64_t view_seq; /* bumped on every observed change */
    uint64_t floor;    /* highest epoch seen; written by the elector thread */
    bool in_loss;      /* the backend's record is below floor */
    uint64_t loss_events;
};

static int elapsed_left(uint64_t deadline, uint64_t now) {
    if (deadline <= now)
        return 0;
    return deadline - now > (uint64_t)INT32_MAX ? INT32_MAX : (int)(deadline - now);
}

static void set_timeout(struct ha_elector *e, int ms) {
    const struct ha_backend_ops *o = e->ops;

    if (o->size >= offsetof(struct ha_backend_ops, set_timeout) + sizeof(o->set_timeout) &&
        o->set_timeout)
        o->set_timeout(e->state, ms < 1 ? 1 : ms);
}

static void timespec_at(struct timespec *ts, uint64_t mono_ms) {
    ts->tv_sec = (time_t)(mono_ms / 1000);
    ts->tv_nsec = (long)(mono_ms % 1000) * 1000000L;
}

/* Delivers the state machine's notes: shared fields first (under the lock), then callbacks. */
static void deliver_notes(struct ha_elector *e, const struct ha_fsm_output *out, const char *err) {
    const struct ha_elector_config *c = &e->cfg;

    for (int i = 0; i < out->nnotes; i++) {
        const struct ha_fsm_note *n = &out->notes[i];
        pthread_mutex_lock(&e->lock);
        switch (n->type) {
        case HA_NOTE_STARTED_LEADING:
        case HA_NOTE_RENEWED:
            e->leader = true;
            e->epoch = n->epoch;
            e->until_ms = n->until_ms;
            break;
        case HA_NOTE_STOPPED_LEADING:
            e->leader = false;
            e->until_ms = 0;
            break;
        case HA_NOTE_NEW_LEADER:
            snprintf(e->holder, sizeof(e->holder), "%s", n->holder);
            e->holder_epoch = n->epoch;
            e->view_seq++;
            pthread_cond_broadcast(&e->cond);
            break;
        default:
            break;
        }
        pthread_mutex_unlock(&e->lock);

        switch (n->type) {
        case HA_NOTE_STARTED_LEADING:
            cm_log(CM_LOG_NOTICE, "ha", "leading, epoch %llu", (unsigned long long)n->epoch);
            if (c->started_leading)
                c->started_leading(n->epoch, n->until_ms, c->arg);
            break;
        case HA_NOTE_RENEWED:
            if (c->renewed)
                c->renewed(n->epoch, n->until_ms, c->arg);
            break;
        case HA_NOTE_STOPPED_LEADING:
            cm_log(CM_LOG_NOTICE, "ha", "stopped leading: %s", n->reason);
            if (c->stopped_leading)
                c->stopped_leading(n->reason, c->arg);
            break;
        case HA_NOTE_NEW_LEADER:
            if (c->new_leader)
                c->new_leader(n->holder, n->epoch, c->arg);
            break;
        case HA_NOTE_ERROR:
            /* Once per streak of the same message, not once per retry. */
            if (strcmp(e->last_err, err) != 0) {
                snprintf(e->last_err, sizeof(e->last_err), "%s", err);
                cm_log(CM_LOG_WARNING, "ha", "%s", err);
                if (c->error)
                    c->error(n->err, err, c->arg);
            }
            break;
        case HA_NOTE_ERROR_CLEARED:
            if (e->last_err[0])
                cm_log(CM_LOG_NOTICE, "ha", "backend answers again");
            e->last_err[0] = '\0';
            break;
        }
    }
}

static bool stop_requested(struct ha_elector *e) {
    bool s;

    pthread_mutex_lock(&e->lock);
    s = e->stop_req;
    pthread_mutex_unlock(&e->lock);
    return s;
}

/* Sleeps on the condition variable until deadline or a stop request. */
static void cond_wait_until(struct ha_elector *e, uint64_t deadline) {
    struct timespec ts;

    timespec_at(&ts, deadline);
    pthread_mutex_lock(&e->lock);
    while (!e->stop_req && cm_mono_ms() < deadline)
        if (pthread_cond_timedwait(&e->cond, &e->lock, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&e->lock);
}

static void do_wait(struct ha_elector *e, const struct ha_fsm_output *out) {
    uint64_t now = cm_mono_ms();
    int left = elapsed_left(out->op_deadline_ms, now);

    if (left > 0 && out->watch && !e->watch_unsupported) {
        int rc = e->ops->wait_change(e->state, out->watch_epoch, left);
        if (rc == -ENOSYS)
            e->watch_unsupported = true;
        if (rc == 0 || rc == -ETIMEDOUT)
            return;
    }
    cond_wait_until(e, out->op_deadline_ms);
}

/* ---- epoch floor ------------------------------------------------------------------------ */

/* Reads the floor from e->state_path (absent file = 0). Returns 0 or a negative error. */
static int load_floor(struct ha_elector *e, char *err, size_t errlen) {
    unsigned long long v = 0;
    char buf[64] = "", *end;
    ssize_t n;
    int fd;

    if (mkdir(e->state_dir, 0700) != 0 && errno != EEXIST)
        return ha__err(err, errlen, -errno, "state dir %s: %s", e->state_dir, strerror(errno));
    fd = open(e->state_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return ha__err(err, errlen, -errno, "%s: %s", e->state_path, strerror(errno));
    }
    n = read(fd, buf, sizeof(buf) - 1);
    int read_errno = errno;
    close(fd);
    if (n < 0)
        return ha__err(err, errlen, -EIO, "%s: %s", e->state_path, strerror(read_errno));
    buf[n] = '\0';
    errno = 0;
    v = strtoull(buf, &end, 10);
    if (end == buf || errno || (*end && *end != '\n'))
        return ha__err(err, errlen, -CM_ECORRUPT,
                       "%s: not an epoch (want one decimal number); move it away to start afresh",
                       e->state_path);
    e->floor = e->floor_saved = v;
    return 0;
}

/* Writes the floor to e->state_path durably (temporary file, fsync, rename, fsync of the
   directory). Returns 0 or -errno. Elector thread only. */
static int save_floor(struct ha_elector *e, uint64_t floor) {
    char tmp[4200], line[32];
    int fd, len, rc = 0;

    snprintf(tmp, sizeof(tmp), "%s.tmp", e->state_path);
    len = snprintf(line, sizeof(line), "%llu\n", (unsigned long long)floor);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    if (write(fd, line, (size_t)len) != len || fsync(fd) != 0)
        rc = errno ? -errno : -EIO;
    close(fd);
    if (rc == 0 && rename(tmp, e->state_path) != 0)
        rc = -errno;
    if (rc == 0) {
        fd = open(e->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
            fsync(fd);
            close(fd);
        }
    } else {
        unlink(tmp);
    }
    return rc;
}

/* Raises the floor to epoch and, with a state dir, persists it before returning. */
static void raise_floor(struct ha_elector *e, uint64_t epoch) {
    pthread_mutex_lock(&e->lock);
    if (epoch > e->floor)
        e->floor = epoch;
    epoch = e->floor;
    pthread_mutex_unlock(&e->lock);
    if (!e->state_path || epoch <= e->floor_saved)
        return;
    int rc = save_floor(e, epoch);
    if (rc == 0) {
        e->floor_saved = epoch;
        e->save_failed = false;
    } else if (!e->save_failed) {
        char msg[4400];
        e->save_failed = true;
        snprintf(msg, sizeof(msg), "cannot save the epoch floor to %s: %s", e->state_path,
                 cm_strerror(rc));
        cm_log(CM_LOG_WARNING, "ha", "%s", msg);
        if (e->cfg.error)
            e->cfg.error(rc, msg, e->cfg.arg);
    }
}

/* What an operator should check when the backend of scheme lost data. */
static const char *loss_hint(const char *scheme) {
    if (strcmp(scheme, "redis") == 0)
        return "Redis restarted or failed over without its data: enable AOF (appendonly yes) or "
               "RDB snapshots, or use a dedicated Redis that keeps its data";
    if (strcmp(scheme, "etcd") == 0)
        return "etcd was wiped, rebuilt or restored from an old backup: check its data "
               "directory and members";
    if (strcmp(scheme, "k8s") == 0)
        return "the Lease was deleted (kubectl delete lease?) or its epoch annotation removed: "
               "do not delete it while its epochs are in use";
    return "check the backend's persistence";
}

/* Compares the backend's record of the highest epoch with the floor; reports a drop once. */
static void check_stored(struct ha_elector *e, const struct ha_view *view) {
    uint64_t floor;
    bool report = false;

    if (!view->stored_known)
        return;
    pthread_mutex_lock(&e->lock);
    floor = e->floor;
    if (view->stored_epoch < floor) {
        if (!e->in_loss) {
            e->in_loss = true;
            e->loss_events++;
            report = true;
        }
    } else {
        e->in_loss = false;
    }
    pthread_mutex_unlock(&e->lock);
    if (!report)
        return;
    char msg[700];
    snprintf(msg, sizeof(msg),
             "election backend lost data: it records epoch %llu but this candidate has seen "
             "epoch %llu; the next leadership takes epoch %llu or above. %s",
             (unsigned long long)view->stored_epoch, (unsigned long long)floor,
             (unsigned long long)floor + 1, loss_hint(e->ops->scheme));
    cm_log(CM_LOG_WARNING, "ha", "ERROR: %s", msg);
    if (e->cfg.data_loss)
        e->cfg.data_loss(view->stored_epoch, floor, msg, e->cfg.arg);
}

static void set_floor(struct ha_elector *e) {
    const struct ha_backend_ops *o = e->ops;
    uint64_t floor;

    if (o->size < offsetof(struct ha_backend_ops, set_epoch_floor) + sizeof(o->set_epoch_floor) ||
        !o->set_epoch_floor)
        return;
    pthread_mutex_lock(&e->lock);
    floor = e->floor;
    pthread_mutex_unlock(&e->lock);
    o->set_epoch_floor(e->state, floor);
}

/*
 * After an acquire or read: detects data loss, refuses an acquired epoch that is not above the
 * floor (a backend that ignores the floor; the lease is released), and raises the floor to
 * what was seen (persisted before a new leader acts).
 */
static void track_epochs(struct ha_elector *e, struct ha_fsm_event *ev, struct ha_view *view,
                         char *err, size_t errlen) {
    if (ev->type != HA_EV_ACQUIRED && ev->type != HA_EV_BUSY && ev->type != HA_EV_VIEW)
        return;
    check_stored(e, view);
    if (ev->type == HA_EV_ACQUIRED) {
        uint64_t floor;
        pthread_mutex_lock(&e->lock);
        floor = e->floor;
        pthread_mutex_unlock(&e->lock);
        if (ev->epoch <= floor) {
            char rerr[256];
            e->ops->release(e->state, rerr, sizeof(rerr));
            ev->type = HA_EV_ACQUIRE_FAILED;
            ev->err =
                ha__err(err, errlen, -CM_ECORRUPT,
                        "%s: acquired epoch %llu is not above the highest epoch seen "
                        "(%llu); released",
                        e->ops->scheme, (unsigned long long)ev->epoch, (unsigned long long)floor);
            return;
        }
        raise_floor(e, ev->epoch);
    } else if (view->holder[0] || view->epoch) {
        raise_floor(e, view->epoch);
    }
}

/* Performs one operation and fills ev with its result; err receives a message on failure. */
static void do_op(struct ha_elector *e, const struct ha_fsm_output *out, struct ha_fsm_event *ev,
                  struct ha_view *view, char *err, size_t errlen) {
    const struct ha_backend_ops *o = e->ops;
    int rc;

    memset(ev, 0, sizeof(*ev));
    err[0] = '\0';
    ev->sent_ms = cm_mono_ms();
    switch (out->op) {
    case HA_OP_ACQUIRE: {
        /* An answer later than the renew deadline could not be acted on: do not wait longer. */
        uint64_t bound = e->cfg.renew_deadline_ms;
        set_floor(e);
        set_timeout(e, bound < (uint64_t)e->cfg.io_timeout_ms ? (int)bound : e->cfg.io_timeout_ms);
        memset(view, 0, sizeof(*view));
        rc = o->try_acquire(e->state, e->cfg.lease_ms, &ev->epoch, view, err, errlen);
        ev->type = rc == 0 ? HA_EV_ACQUIRED : rc == -EBUSY ? HA_EV_BUSY : HA_EV_ACQUIRE_FAILED;
        /* Date the lease from the request that won it when the backend knows it (a k8s
           acquire may have waited on a read during an outage before its write). */
        if (rc == 0 && view->sent_ms > ev->sent_ms && view->sent_ms <= cm_mono_ms())
            ev->sent_ms = view->sent_ms;
        break;
    }
    case HA_OP_RENEW: {
        int left = elapsed_left(out->op_deadline_ms, ev->sent_ms);
        if (left <= 0) {
            rc = ha__err(err, errlen, -ETIMEDOUT, "%s: renew deadline passed", o->scheme);
        } else {
            set_timeout(e, left < e->cfg.io_timeout_ms ? left : e->cfg.io_timeout_ms);
            rc = o->renew(e->state, e->cfg.lease_ms, err, errlen);
        }
        ev->type = rc == 0                 ? HA_EV_RENEWED
                   : rc == -CM_ENOT_LEADER ? HA_EV_RENEW_LOST
                                           : HA_EV_RENEW_FAILED;
        break;
    }
    case HA_OP_RELEASE:
        set_timeout(e, e->cfg.io_timeout_ms);
        rc = o->release(e->state, err, errlen);
        if (rc)
            cm_log(CM_LOG_VERBOSE, "ha", "release: %s", err);
        ev->type = HA_EV_RELEASED;
        break;
    case HA_OP_READ_VIEW:
        set_timeout(e, e->cfg.io_timeout_ms);
        memset(view, 0, sizeof(*view));
        rc = o->get_holder(e->state, view, err, errlen);
        ev->type = rc == 0 ? HA_EV_VIEW : HA_EV_VIEW_FAILED;
        break;
    default: /* HA_OP_WAIT */
        do_wait(e, out);
        ev->type = HA_EV_TICK;
        rc = 0;
        break;
    }
    if (rc && !err[0])
        ha__err(err, errlen, rc, "%s: %s", o->scheme, cm_strerror(rc));
    ev->err = rc;
    ev->view = view;
    track_epochs(e, ev, view, err, errlen);
    ev->now_ms = cm_mono_ms();
}

static void *elector_main(void *arg) {
    struct ha_elector *e = arg;
    struct ha_fsm_event ev = {.type = HA_EV_TICK};
    struct ha_fsm_output out;
    struct ha_view view;
    char err[512] = "";
    bool stop_fed = false;

    ev.now_ms = cm_mono_ms();
    for (;;) {
        ha_fsm__step(&e->fsm, &ev, &out);
        deliver_notes(e, &out, err);
        if (!stop_fed && out.op != HA_OP_RELEASE && out.op != HA_OP_EXIT && stop_requested(e)) {
            /* Any pending op is dropped: the state machine already holds its result. */
            memset(&ev, 0, sizeof(ev));
            ev.type = HA_EV_STOP;
            ev.now_ms = cm_mono_ms();
            stop_fed = true;
            continue;
        }
        if (out.op == HA_OP_EXIT)
            break;
        do_op(e, &out, &ev, &view, err, sizeof(err));
    }
    pthread_mutex_lock(&e->lock);
    e->exited = true;
    e->leader = false;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* "DIR/ha-epoch-<cluster>" with every character of the cluster id other than [A-Za-z0-9._-]
   as '_'. Caller frees. */
static char *state_file_path(const char *dir, const char *cluster_id) {
    size_t n = strlen(dir) + strlen(cluster_id) + 16;
    char *p = cm_malloc(n);
    int off = snprintf(p, n, "%s/ha-epoch-", dir);

    for (const char *c = cluster_id; *c; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-';
        p[off++] = ok ? *c : '_';
    }
    p[off] = '\0';
    return p;
}

static int check_config(const struct ha_elector_config *c, char *err, size_t errlen) {
    if (!c->uri || !c->cluster_id || !c->identity)
        return ha__err(err, errlen, -EINVAL, "backend URI, cluster id and identity are required");
    if (!c->cluster_id[0] || strlen(c->cluster_id) > 200 || strpbrk(c->cluster_id, " \t\r\n{}"))
        return ha__err(err, errlen, -EINVAL,
                       "cluster id must be 1..200 characters without spaces or braces");
    if (!c->identity[0] || strlen(c->identity) > 255 || strpbrk(c->identity, " \t\r\n"))
        return ha__err(err, errlen, -EINVAL, "identity must be 1..255 characters without spaces");
    if (!(c->retry_ms < c->renew_deadline_ms && c->renew_deadline_ms < c->lease_ms))
        return ha__err(err, errlen, -EINVAL,
                       "timings must satisfy retry (%llu ms) < renew deadline (%llu ms) < lease "
                       "(%llu ms)",
                       (unsigned long long)c->retry_ms, (unsigned long long)c->renew_deadline_ms,
                       (unsigned long long)c->lease_ms);
    if (c->retry_ms < 10 || c->lease_ms > 3600 * 1000)
        return ha__err(err, errlen, -EINVAL, "retry period must be >= 10 ms, lease <= 1 h");
    return 0;
}

/* Creates a stopped elector; see ha.h for errors. Caller frees with ha_elector_destroy. */
int ha_elector_create(const struct ha_elector_config *cfg, struct ha_elector **out, char *err,
                      size_t errlen) {
    struct ha_elector_config c = *cfg;
    pthread_condattr_t ca;
    struct ha_elector *e;
    int rc;

    *out = NULL;
    if (!c.lease_ms)
        c.lease_ms = HA_DEFAULT_LEASE_MS;
    if (!c.renew_deadline_ms)
        c.renew_deadline_ms = HA_DEFAULT_RENEW_DEADLINE_MS;
    if (!c.retry_ms)
        c.retry_ms = HA_DEFAULT_RETRY_MS;
    if (c.io_timeout_ms <= 0)
        c.io_timeout_ms = HA_DEFAULT_IO_TIMEOUT_MS;
    rc = check_config(&c, err, errlen);
    if (rc)
        return rc;
    e = cm_calloc(1, sizeof(*e));
    rc = ha_uri_parse(c.uri, &e->parsed, err, errlen);
    if (rc)
        goto fail;
    e->ops = ha_backend_find(e->parsed.scheme);
    if (!e->ops) {
        rc = ha__err(err, errlen, -CM_EBAD_URI,
                     "bad URI: unknown or not compiled-in backend '%s' (use redis://, etcd://"
                     " or k8s://)",
                     e->parsed.scheme);
        goto fail;
    }
    e->uri = cm_strdup(c.uri);
    e->cluster_id = cm_strdup(c.cluster_id);
    e->identity = cm_strdup(c.identity);
    c.uri = e->uri;
    c.cluster_id = e->cluster_id;
    c.identity = e->identity;
    if (c.state_dir && c.state_dir[0]) {
        e->state_dir = cm_strdup(c.state_dir);
        c.state_dir = e->state_dir;
        e->state_path = state_file_path(e->state_dir, c.cluster_id);
        rc = load_floor(e, err, errlen);
        if (rc)
            goto fail;
    } else {
        c.state_dir = NULL;
    }
    e->cfg = c;
    rc =
        e->ops->open(&e->parsed, c.cluster_id, c.identity, c.io_timeout_ms, &e->state, err, errlen);
    if (rc)
        goto fail;
    ha_fsm__init(&e->fsm, c.identity, c.lease_ms, c.renew_deadline_ms, c.retry_ms, c.observe_only,
                 !c.keep_lease_on_stop);
    pthread_mutex_init(&e->lock, NULL);
    pthread_mutex_init(&e->qlock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cond, &ca);
    pthread_condattr_destroy(&ca);
    e->exited = true; /* not running yet */
    *out = e;
    return 0;
fail:
    memset(&e->parsed, 0, sizeof(e->parsed));
    cm_free(e->state_dir);
    cm_free(e->state_path);
    cm_free(e->uri);
    cm_free(e->cluster_id);
    cm_free(e->identity);
    cm_free(e);
    return rc;
}

/* Starts the elector thread. Returns 0, -EALREADY or -errno. Controlling thread only. */
int ha_elector_start(struct ha_elector *e) {
    int rc;

    if (e->started)
        return -EALREADY;
    pthread_mutex_lock(&e->lock);
    e->stop_req = false;
    e->exited = false;
    pthread_mutex_unlock(&e->lock);
    rc = pthread_create(&e->thread, NULL, elector_main, e);
    if (rc)
        return -rc;
    e->started = true;
    return 0;
}

/* Stops the elector thread (releasing the lease by default) and waits for it. Returns 0. */
int ha_elector_stop(struct ha_elector *e) {
    if (!e->started)
        return 0;
    pthread_mutex_lock(&e->lock);
    e->stop_req = true;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    pthread_join(e->thread, NULL);
    e->started = false;
    /* A restarted elector campaigns afresh. */
    ha_fsm__init(&e->fsm, e->cfg.identity, e->cfg.lease_ms, e->cfg.renew_deadline_ms,
                 e->cfg.retry_ms, e->cfg.observe_only, !e->cfg.keep_lease_on_stop);
    return 0;
}

/* Stops e if running, closes its backend handles and frees it. NULL is accepted. */
void ha_elector_destroy(struct ha_elector *e) {
    if (!e)
        return;
    ha_elector_stop(e);
    e->ops->close(e->state);
    if (e->qstate)
        e->ops->close(e->qstate);
    pthread_mutex_destroy(&e->lock);
    pthread_mutex_destroy(&e->qlock);
    pthread_cond_destroy(&e->cond);
    memset(&e->parsed, 0, sizeof(e->parsed));
    cm_free(e->state_dir);
    cm_free(e->state_path);
    cm_free(e->uri);
    cm_free(e->cluster_id);
    cm_free(e->identity);
    cm_free(e);
}

/* True while this candidate leads by its own monotonic clock; see ha.h. Thread-safe. */
bool ha_elector_is_leader(struct ha_elector *e, uint64_t *epoch) {
    bool lead;

    pthread_mutex_lock(&e->lock);
    lead = e->leader && cm_mono_ms() < e->until_ms;
    if (lead && epoch)
        *epoch = e->epoch;
    pthread_mutex_unlock(&e->lock);
    return lead;
}

/* Reads the holder through a second backend handle; see ha.h. Thread-safe. */
int ha_elector_get_holder(struct ha_elector *e, struct ha_view *view, char *err, size_t errlen) {
    int rc = 0;

    memset(view, 0, sizeof(*view));
    pthread_mutex_lock(&e->qlock);
    if (!e->qstate)
        rc = e->ops->open(&e->parsed, e->cfg.cluster_id, e->cfg.identity, e->cfg.io_timeout_ms,
                          &e->qstate, err, errlen);
    if (rc == 0)
        rc = e->ops->get_holder(e->qstate, view, err, errlen);
    pthread_mutex_unlock(&e->qlock);
    return rc;
}

/* Waits for the observed holder/epoch to change; see ha.h. Thread-safe. */
int ha_elector_wait_for_change(struct ha_elector *e, uint64_t epoch, int timeout_ms,
                               struct ha_view *view) {
    uint64_t deadline = cm_mono_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
    struct timespec ts;
    uint64_t seq;
    int rc = -ETIMEDOUT;

    timespec_at(&ts, deadline);
    pthread_mutex_lock(&e->lock);
    seq = e->view_seq;
    for (;;) {
        if ((e->view_seq && e->holder_epoch != epoch) || e->view_seq != seq) {
            rc = 0;
            break;
        }
        if (e->exited) {
            rc = -ESHUTDOWN;
            break;
        }
        if (pthread_cond_timedwait(&e->cond, &e->lock, &ts) == ETIMEDOUT)
            break;
    }
    if (rc == 0 && view) {
        memset(view, 0, sizeof(*view));
        snprintf(view->holder, sizeof(view->holder), "%s", e->holder);
        view->epoch = e->holder_epoch;
        view->ttl_ms = -1;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

/* Copies the counters under the lock; see ha.h. Thread-safe. */
void ha_elector_get_stats(struct ha_elector *e, struct ha_elector_stats *st) {
    pthread_mutex_lock(&e->lock);
    st->epoch_floor = e->floor;
    st->data_loss_events = e->loss_events;
    st->data_loss = e->in_loss;
    pthread_mutex_unlock(&e->lock);
}
