/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of ha/: the election state machine (ha_fsm.c) and helpers shared by the backends.
 * The state machine is pure: it never reads a clock or does I/O. The glue (ha_elector.c) feeds it
 * events stamped with CLOCK_MONOTONIC milliseconds and performs the one operation it asks for.
 */
#ifndef CRESCENT_HA_HA_INT_H
#define CRESCENT_HA_HA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ha/ha_backend.h"

enum ha_fsm_state {
    HA_FSM_FOLLOWER, /* campaigning (or observing), not leading */
    HA_FSM_LEADER,   /* leading until fsm->until_ms */
    HA_FSM_STOPPED,  /* stop handled; the thread exits */
};

enum ha_fsm_event_type {
    HA_EV_TICK,           /* a wait ended (deadline reached or the backend saw a change) */
    HA_EV_ACQUIRED,       /* try_acquire returned 0; epoch set */
    HA_EV_BUSY,           /* try_acquire returned -EBUSY; view set */
    HA_EV_ACQUIRE_FAILED, /* try_acquire failed; err set */
    HA_EV_RENEWED,        /* renew returned 0 */
    HA_EV_RENEW_LOST,     /* renew returned -CM_ENOT_LEADER */
    HA_EV_RENEW_FAILED,   /* renew failed otherwise; err set */
    HA_EV_VIEW,           /* get_holder returned 0; view set */
    HA_EV_VIEW_FAILED,    /* get_holder failed; err set */
    HA_EV_RELEASED,       /* release finished (whatever its result) */
    HA_EV_STOP,           /* ha_elector_stop was called */
};

struct ha_fsm_event {
    enum ha_fsm_event_type type;
    uint64_t now_ms;            /* monotonic time when the event is fed */
    uint64_t sent_ms;           /* ACQUIRED/RENEWED: monotonic time before the request was sent */
    uint64_t epoch;             /* ACQUIRED */
    const struct ha_view *view; /* BUSY, VIEW */
    int err;                    /* *_FAILED */
};

enum ha_fsm_note_type {
    HA_NOTE_STARTED_LEADING, /* epoch, until_ms */
    HA_NOTE_RENEWED,         /* epoch, until_ms */
    HA_NOTE_STOPPED_LEADING, /* reason */
    HA_NOTE_NEW_LEADER,      /* holder, epoch */
    HA_NOTE_ERROR,           /* err: a backend error (the glue reports it once per streak) */
    HA_NOTE_ERROR_CLEARED,   /* the backend answered again */
};

struct ha_fsm_note {
    enum ha_fsm_note_type type;
    uint64_t epoch;
    uint64_t until_ms;
    const char *reason; /* static string */
    const char *holder; /* points into the fsm; valid until the next step */
    int err;
};

enum ha_fsm_op {
    HA_OP_ACQUIRE,   /* call try_acquire(lease_ms), bounded by io timeout */
    HA_OP_RENEW,     /* call renew(lease_ms); it must finish by op_deadline_ms */
    HA_OP_RELEASE,   /* call release */
    HA_OP_READ_VIEW, /* call get_holder */
    HA_OP_WAIT,      /* wait until op_deadline_ms; may use wait_change(watch_epoch) if watch */
    HA_OP_EXIT,      /* leave the thread */
};

#define HA_FSM_MAX_NOTES 4

struct ha_fsm_output {
    int nnotes;
    struct ha_fsm_note notes[HA_FSM_MAX_NOTES]; /* to deliver in order, before the op */
    enum ha_fsm_op op;
    uint64_t op_deadline_ms; /* WAIT: wake-up instant; RENEW: the call must end by then */
    bool watch;              /* WAIT: the backend may be watched for a change */
    uint64_t watch_epoch;    /* WAIT: the epoch last seen */
};

struct ha_fsm {
    enum ha_fsm_state state;
    uint64_t lease_ms, renew_deadline_ms, retry_ms;
    bool observe_only;
    bool release_on_stop;
    bool stopping;     /* STOP seen; exit after the pending release */
    uint64_t epoch;    /* our epoch while leader */
    uint64_t until_ms; /* leader: act as leader only while now < until_ms */
    uint64_t next_renew_ms;
    bool in_error;         /* an error streak is open */
    char holder[256];      /* last holder reported through HA_NOTE_NEW_LEADER */
    uint64_t holder_epoch; /* its epoch */
    bool holder_known;     /* a view was reported at least once */
    char self[256];        /* this candidate's identity */
};

/* Initialises f as a follower (nothing reported yet) for candidate `self`. Timings in ms; no
   checks. */
void ha_fsm__init(struct ha_fsm *f, const char *self, uint64_t lease_ms, uint64_t renew_deadline_ms,
                  uint64_t retry_ms, bool observe_only, bool release_on_stop);

/*
 * Feeds one event and fills *out with the notifications to deliver and the single operation to
 * perform next. The first call should be a HA_EV_TICK. Pure: no I/O, no clock, no allocation.
 * Not thread-safe (one caller).
 */
void ha_fsm__step(struct ha_fsm *f, const struct ha_fsm_event *ev, struct ha_fsm_output *out);

/* Returns a static name for a state ("FOLLOWER", ...). */
const char *ha_fsm__state_name(enum ha_fsm_state s);

/* Fills buf with n random bytes as 2n hex characters plus NUL (buf has 2n+1 bytes); uses
   getrandom. Returns 0 or -errno. Thread-safe. */
int ha__random_hex(char *buf, size_t n);

/* snprintf into err if err is not NULL and errlen > 0; returns code (for `return ha__err(...)`). */
int ha__err(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
