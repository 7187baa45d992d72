/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The election state machine (CONTRIBUTING.md, "Layout"): events in, notifications and one
 * operation out. It holds the safety rule: a leader acts as leader only while now < until, where
 * until is the monotonic instant before its last successful renew (or acquire) request plus the
 * renew deadline; the moment that fails it reports stopped_leading and releases best effort.
 */
#include "common/fmacros.h"

#include <string.h>

#include "ha/ha_int.h"

#define HA_RENEW_ERROR_RETRY_MS 100 /* a failed renew is retried this soon (within until) */
#define HA_EXPIRY_SLACK_MS      5   /* a follower wakes this long after the holder's ttl ends */

static uint64_t min_u64(uint64_t a, uint64_t b) {
    return a < b ? a : b;
}

static struct ha_fsm_note *add_note(struct ha_fsm_output *out, enum ha_fsm_note_type type) {
    struct ha_fsm_note *n;

    if (out->nnotes >= HA_FSM_MAX_NOTES)
        return NULL; /* cannot happen: no step adds more than three notes */
    n = &out->notes[out->nnotes++];
    memset(n, 0, sizeof(*n));
    n->type = type;
    return n;
}

static void note_error(struct ha_fsm *f, int err, struct ha_fsm_output *out) {
    struct ha_fsm_note *n = add_note(out, HA_NOTE_ERROR);

    if (n)
        n->err = err;
    f->in_error = true;
}

static void clear_error(struct ha_fsm *f, struct ha_fsm_output *out) {
    if (!f->in_error)
        return;
    f->in_error = false;
    add_note(out, HA_NOTE_ERROR_CLEARED);
}

/* Reports a holder change (or the first view) through HA_NOTE_NEW_LEADER. */
static void report_holder(struct ha_fsm *f, const char *holder, uint64_t epoch,
                          struct ha_fsm_output *out) {
    struct ha_fsm_note *n;

    if (f->holder_known && strcmp(f->holder, holder) == 0 && f->holder_epoch == epoch)
        return;
    f->holder_known = true;
    f->holder_epoch = epoch;
    strncpy(f->holder, holder, sizeof(f->holder) - 1);
    f->holder[sizeof(f->holder) - 1] = '\0';
    n = add_note(out, HA_NOTE_NEW_LEADER);
    if (n) {
        n->holder = f->holder;
        n->epoch = epoch;
    }
}

/* Follower: wait a retry period (or until the holder's lease ends, if sooner), then campaign. */
static void follower_wait(struct ha_fsm *f, uint64_t now, const struct ha_view *view,
                          struct ha_fsm_output *out) {
    uint64_t wait = f->retry_ms;

    if (view && view->holder[0] && view->ttl_ms >= 0)
        wait = min_u64(wait, (uint64_t)view->ttl_ms + HA_EXPIRY_SLACK_MS);
    out->op = HA_OP_WAIT;
    out->op_deadline_ms = now + wait;
    out->watch = view != NULL;
    out->watch_epoch = view ? view->epoch : 0;
}

static void step_down(struct ha_fsm *f, const char *reason, struct ha_fsm_output *out) {
    struct ha_fsm_note *n = add_note(out, HA_NOTE_STOPPED_LEADING);

    if (n) {
        n->reason = reason;
        n->epoch = f->epoch;
    }
    f->state = HA_FSM_FOLLOWER;
    f->until_ms = 0;
}

/* Leader: step down when the deadline passed, renew when due, else sleep until the next due. */
static void leader_tick(struct ha_fsm *f, uint64_t now, struct ha_fsm_output *out) {
    if (now >= f->until_ms) {
        step_down(f, "renew_deadline", out);
        out->op = HA_OP_RELEASE;
        return;
    }
    if (now >= f->next_renew_ms) {
        out->op = HA_OP_RENEW;
        out->op_deadline_ms = f->until_ms;
        return;
    }
    out->op = HA_OP_WAIT;
    out->op_deadline_ms = min_u64(f->next_renew_ms, f->until_ms);
}

static void on_acquired(struct ha_fsm *f, const struct ha_fsm_event *ev,
                        struct ha_fsm_output *out) {
    struct ha_fsm_note *n;
    uint64_t until = ev->sent_ms + f->renew_deadline_ms;

    clear_error(f, out);
    if (ev->now_ms >= until) {
        /* The answer came too late to act on; give the lease back and campaign again. */
        out->op = HA_OP_RELEASE;
        return;
    }
    f->state = HA_FSM_LEADER;
    f->epoch = ev->epoch;
    f->until_ms = until;
    f->next_renew_ms = ev->sent_ms + f->retry_ms;
    n = add_note(out, HA_NOTE_STARTED_LEADING);
    if (n) {
        n->epoch = f->epoch;
        n->until_ms = until;
    }
    report_holder(f, f->self, f->epoch, out);
    leader_tick(f, ev->now_ms, out);
}

static void on_renewed(struct ha_fsm *f, const struct ha_fsm_event *ev, struct ha_fsm_output *out) {
    struct ha_fsm_note *n;
    uint64_t until = ev->sent_ms + f->renew_deadline_ms;

    clear_error(f, out);
    if (until > f->until_ms)
        f->until_ms = until;
    if (ev->now_ms < f->until_ms) {
        n = add_note(out, HA_NOTE_RENEWED);
        if (n) {
            n->epoch = f->epoch;
            n->until_ms = f->until_ms;
        }
        f->next_renew_ms = ev->sent_ms + f->retry_ms;
    }
    leader_tick(f, ev->now_ms, out);
}

static void on_stop(struct ha_fsm *f, struct ha_fsm_output *out) {
    f->stopping = true;
    if (f->state == HA_FSM_LEADER) {
        step_down(f, "stop", out);
        if (f->release_on_stop) {
            out->op = HA_OP_RELEASE;
            return;
        }
    }
    f->state = HA_FSM_STOPPED;
    out->op = HA_OP_EXIT;
}

/* Events that only matter to a leader; a follower that gets one (cannot happen) re-campaigns. */
static void on_leader_event(struct ha_fsm *f, const struct ha_fsm_event *ev,
                            struct ha_fsm_output *out) {
    if (f->state != HA_FSM_LEADER) {
        follower_wait(f, ev->now_ms, NULL, out);
        return;
    }
    switch (ev->type) {
    case HA_EV_RENEWED:
        on_renewed(f, ev, out);
        break;
    case HA_EV_RENEW_LOST:
        clear_error(f, out);
        step_down(f, "lease_lost", out);
        out->op = HA_OP_ACQUIRE; /* learn the new holder at once */
        break;
    default: /* HA_EV_RENEW_FAILED */
        note_error(f, ev->err, out);
        f->next_renew_ms = ev->now_ms + min_u64(f->retry_ms, HA_RENEW_ERROR_RETRY_MS);
        leader_tick(f, ev->now_ms, out);
        break;
    }
}

/*
 * Initialises the state machine as a follower that has reported nothing yet. self is copied
 * (truncated to 255 bytes). Not thread-safe with respect to f.
 */
void ha_fsm__init(struct ha_fsm *f, const char *self, uint64_t lease_ms, uint64_t renew_deadline_ms,
                  uint64_t retry_ms, bool observe_only, bool release_on_stop) {
    memset(f, 0, sizeof(*f));
    f->state = HA_FSM_FOLLOWER;
    f->lease_ms = lease_ms;
    f->renew_deadline_ms = renew_deadline_ms;
    f->retry_ms = retry_ms;
    f->observe_only = observe_only;
    f->release_on_stop = release_on_stop;
    strncpy(f->self, self, sizeof(f->self) - 1);
}

/*
 * Advances the state machine by one event; see ha_int.h. Notes in out->notes point into f and
 * stay valid until the next call. Pure and not thread-safe.
 */
void ha_fsm__step(struct ha_fsm *f, const struct ha_fsm_event *ev, struct ha_fsm_output *out) {
    memset(out, 0, sizeof(*out));
    if (f->state == HA_FSM_STOPPED) {
        out->op = HA_OP_EXIT;
        return;
    }
    switch (ev->type) {
    case HA_EV_STOP:
        on_stop(f, out);
        break;
    case HA_EV_RELEASED:
        if (f->stopping) {
            f->state = HA_FSM_STOPPED;
            out->op = HA_OP_EXIT;
        } else {
            follower_wait(f, ev->now_ms, NULL, out);
        }
        break;
    case HA_EV_TICK:
        if (f->state == HA_FSM_LEADER)
            leader_tick(f, ev->now_ms, out);
        else
            out->op = f->observe_only ? HA_OP_READ_VIEW : HA_OP_ACQUIRE;
        break;
    case HA_EV_ACQUIRED:
        on_acquired(f, ev, out);
        break;
    case HA_EV_BUSY:
    case HA_EV_VIEW:
        clear_error(f, out);
        report_holder(f, ev->view->holder, ev->view->epoch, out);
        follower_wait(f, ev->now_ms, ev->view, out);
        break;
    case HA_EV_ACQUIRE_FAILED:
    case HA_EV_VIEW_FAILED:
        note_error(f, ev->err, out);
        follower_wait(f, ev->now_ms, NULL, out);
        break;
    case HA_EV_RENEWED:
    case HA_EV_RENEW_LOST:
    case HA_EV_RENEW_FAILED:
        on_leader_event(f, ev, out);
        break;
    }
}

/* Returns a static name for s. Thread-safe. */
const char *ha_fsm__state_name(enum ha_fsm_state s) {
    switch (s) {
    case HA_FSM_FOLLOWER:
        return "FOLLOWER";
    case HA_FSM_LEADER:
        return "LEADER";
    case HA_FSM_STOPPED:
        return "STOPPED";
    }
    return "UNKNOWN";
}
