/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leader election for an HA group of masters. An elector campaigns for one lease in a shared
 * backend chosen by URI scheme (redis://, etcd://, k8s://), renews it while it leads, and reports
 * transitions through callbacks. Epochs grow strictly across leaderships and serve as fencing
 * tokens.
 *
 * DESIGN: ha_fsm.c is a pure state machine (events in, actions out); ha_elector.c is the glue:
 * one thread per elector that runs backend calls with deadlines and feeds their results to the
 * state machine. A leader considers itself leader only while its own CLOCK_MONOTONIC says
 * now < (start of the last successful renew request) + renew_deadline; the backend lease
 * (lease_ms) must outlast that, so lease_ms > renew_deadline_ms is required.
 */
#ifndef CRESCENT_HA_HA_H
#define CRESCENT_HA_HA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ha/ha_backend.h"

#define HA_DEFAULT_LEASE_MS          5000 /* backend lease duration */
#define HA_DEFAULT_RENEW_DEADLINE_MS 3000 /* leader gives up this long after its last renew */
#define HA_DEFAULT_RETRY_MS          1000 /* renew / campaign / poll period */
#define HA_DEFAULT_IO_TIMEOUT_MS     3000 /* bound on any single backend call */

struct ha_elector;

/* Called on the elector thread when this candidate becomes leader; until_ms is the monotonic
   instant (ms) after which it stops acting as leader unless it renews. */
typedef void ha_started_leading_cb(uint64_t epoch, uint64_t until_ms, void *arg);
/* Called on the elector thread after each successful renew (new until_ms). */
typedef void ha_renewed_cb(uint64_t epoch, uint64_t until_ms, void *arg);
/* Called on the elector thread when this candidate stops leading; reason is a static string:
   "stop", "lease_lost", "renew_deadline". */
typedef void ha_stopped_leading_cb(const char *reason, void *arg);
/* Called on the elector thread when the observed holder changes (including to this candidate,
   and to "" = no holder). */
typedef void ha_new_leader_cb(const char *identity, uint64_t epoch, void *arg);
/* Called on the elector thread when a backend error starts or changes (not once per retry);
   msg is one line. */
typedef void ha_error_cb(int err, const char *msg, void *arg);
/* Called on the elector thread once when the backend is found to have lost data: its record of
   the highest epoch (stored_epoch) is below the highest epoch this candidate has seen (floor).
   msg is one line saying what the operator should check. */
typedef void ha_data_loss_cb(uint64_t stored_epoch, uint64_t floor, const char *msg, void *arg);

struct ha_elector_config {
    const char *uri;            /* backend URI, e.g. "redis://127.0.0.1:6379/0" */
    const char *cluster_id;     /* namespace of the lease within the backend */
    const char *identity;       /* this candidate's advertised host:port */
    uint64_t lease_ms;          /* 0 = HA_DEFAULT_LEASE_MS */
    uint64_t renew_deadline_ms; /* 0 = HA_DEFAULT_RENEW_DEADLINE_MS; must be < lease_ms */
    uint64_t retry_ms;          /* 0 = HA_DEFAULT_RETRY_MS; must be < renew_deadline_ms */
    int io_timeout_ms;          /* 0 = HA_DEFAULT_IO_TIMEOUT_MS */
    bool observe_only;          /* never campaign; only report holder changes */
    bool keep_lease_on_stop;    /* stop does not release the lease (default: release) */
    /* Directory where the highest epoch seen is kept (file ha-epoch-<cluster>, written with
       fsync before this candidate leads with a new epoch), so that epochs never go backwards
       for a candidate restarted with the same directory, even if the backend lost its data.
       Created if missing. NULL = kept in memory only. */
    const char *state_dir;
    ha_started_leading_cb *started_leading; /* each callback may be NULL */
    ha_renewed_cb *renewed;
    ha_stopped_leading_cb *stopped_leading;
    ha_new_leader_cb *new_leader;
    ha_error_cb *error;
    ha_data_loss_cb *data_loss;
    void *arg; /* passed to every callback */
};

/* Counters for metrics; see ha_elector_get_stats. */
struct ha_elector_stats {
    uint64_t epoch_floor;      /* highest epoch seen (own terms, holders, the state file) */
    uint64_t data_loss_events; /* times the backend was found below the floor */
    bool data_loss;            /* the backend is below the floor right now */
};

/*
 * Validates cfg, parses the URI, opens the backend (which checks that it is reachable and that
 * credentials work) and returns a stopped elector in *out. Returns 0; -CM_EBAD_URI for a bad
 * URI or unknown scheme, -EINVAL for bad timings, -CM_EUNREACHABLE / -ETIMEDOUT / -CM_EAUTH from
 * the backend, -CM_ENOT_SUPPORTED when it lacks a needed feature (a Redis server without EVAL),
 * -errno or -CM_ECORRUPT for a state_dir that cannot be used or an epoch file that cannot be
 * read; err (errlen bytes) then holds one line. Strings in cfg are copied. Caller frees
 * with ha_elector_destroy. Thread-safe.
 */
int ha_elector_create(const struct ha_elector_config *cfg, struct ha_elector **out, char *err,
                      size_t errlen);

/*
 * Starts the elector thread, which campaigns (or observes). Returns 0, -EALREADY if already
 * started, or -errno if the thread cannot be created. Call from one controlling thread.
 */
int ha_elector_start(struct ha_elector *e);

/*
 * Stops the elector: a leader reports stopped_leading("stop") and, unless keep_lease_on_stop,
 * releases its lease (bounded by the I/O timeout). Returns once the thread has exited (at most
 * one backend call later). Returns 0; calling it on a stopped elector is a no-op. Must not be
 * called from a callback. Call from the controlling thread.
 */
int ha_elector_stop(struct ha_elector *e);

/* Stops (if needed) and frees e; NULL is accepted. Call from the controlling thread. */
void ha_elector_destroy(struct ha_elector *e);

/*
 * Returns true when this candidate leads right now by its own clock (now < until), and then
 * stores the epoch in *epoch (may be NULL). Thread-safe; cheap enough to call per request.
 */
bool ha_elector_is_leader(struct ha_elector *e, uint64_t *epoch);

/*
 * Asks the backend who holds the lease. An expired lease reads as no holder (view->holder "").
 * Uses a separate backend connection, so it may be called from any thread (calls serialise on a
 * lock) while the elector runs. Returns 0 or a negative backend error (err filled).
 */
int ha_elector_get_holder(struct ha_elector *e, struct ha_view *view, char *err, size_t errlen);

/*
 * Blocks up to timeout_ms until the holder or epoch this elector observes differs from epoch
 * (needs a started elector). Returns 0 when changed (view filled if not NULL), -ETIMEDOUT, or
 * -ESHUTDOWN if the elector stopped. Thread-safe.
 */
int ha_elector_wait_for_change(struct ha_elector *e, uint64_t epoch, int timeout_ms,
                               struct ha_view *view);

/* Fills *st with the elector's counters. Thread-safe. */
void ha_elector_get_stats(struct ha_elector *e, struct ha_elector_stats *st);

/* Returns the backend ops for scheme, or NULL when unknown or not compiled in. Thread-safe. */
const struct ha_backend_ops *ha_backend_find(const char *scheme);

#endif
