/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the pure election state machine (ha/ha_fsm.c), driven with hand-made events
 * and explicit clock values, and for the backend URI parser (ha/ha_uri.c).
 */
#include "common/fmacros.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "common/cm_errno.h"
#include "ha/ha.h"
#include "ha/ha_int.h"

#define LEASE 5000
#define RENEW 3000
#define RETRY 1000

static struct ha_fsm f;
static struct ha_fsm_output out;

static void init(bool observe, bool release_on_stop) {
    ha_fsm__init(&f, "me:1", LEASE, RENEW, RETRY, observe, release_on_stop);
}

static void feed(enum ha_fsm_event_type type, uint64_t now, uint64_t sent, uint64_t epoch,
                 const struct ha_view *view, int err) {
    struct ha_fsm_event ev = {
        .type = type, .now_ms = now, .sent_ms = sent, .epoch = epoch, .view = view, .err = err};
    ha_fsm__step(&f, &ev, &out);
}

static const struct ha_fsm_note *find_note(enum ha_fsm_note_type t) {
    for (int i = 0; i < out.nnotes; i++)
        if (out.notes[i].type == t)
            return &out.notes[i];
    return NULL;
}

/* Becomes leader with epoch 7: acquire sent at 90, answered at 100. */
static void lead(void) {
    init(false, true);
    feed(HA_EV_TICK, 0, 0, 0, NULL, 0);
    cr_assert_eq(out.op, HA_OP_ACQUIRE);
    feed(HA_EV_ACQUIRED, 100, 90, 7, NULL, 0);
}

Test(ha_fsm, acquire_sets_until_from_the_request_start) {
    const struct ha_fsm_note *n;

    lead();
    cr_assert_eq(f.state, HA_FSM_LEADER);
    n = find_note(HA_NOTE_STARTED_LEADING);
    cr_assert_not_null(n);
    cr_assert_eq(n->epoch, 7);
    cr_assert_eq(n->until_ms, 90 + RENEW);
    n = find_note(HA_NOTE_NEW_LEADER);
    cr_assert_not_null(n);
    cr_assert_str_eq(n->holder, "me:1");
    cr_assert_eq(out.op, HA_OP_WAIT);
    cr_assert_eq(out.op_deadline_ms, 90 + RETRY);
    cr_assert(!out.watch);
}

Test(ha_fsm, renew_extends_until_and_bounds_the_call) {
    const struct ha_fsm_note *n;

    lead();
    feed(HA_EV_TICK, 1090, 0, 0, NULL, 0);
    cr_assert_eq(out.op, HA_OP_RENEW);
    cr_assert_eq(out.op_deadline_ms, 90 + RENEW, "a renew must end by until");
    feed(HA_EV_RENEWED, 1100, 1090, 0, NULL, 0);
    n = find_note(HA_NOTE_RENEWED);
    cr_assert_not_null(n);
    cr_assert_eq(n->until_ms, 1090 + RENEW);
    cr_assert_eq(out.op, HA_OP_WAIT);
    cr_assert_eq(out.op_deadline_ms, 1090 + RETRY);
}

Test(ha_fsm, failed_renews_step_down_exactly_at_until) {
    const struct ha_fsm_note *n;

    lead();
    feed(HA_EV_TICK, 1090, 0, 0, NULL, 0);
    feed(HA_EV_RENEW_FAILED, 1500, 1090, 0, NULL, -ETIMEDOUT);
    cr_assert_not_null(find_note(HA_NOTE_ERROR));
    cr_assert_eq(f.state, HA_FSM_LEADER);
    cr_assert_eq(out.op, HA_OP_WAIT);
    cr_assert_eq(out.op_deadline_ms, 1600, "a failed renew is retried soon");
    feed(HA_EV_TICK, 1600, 0, 0, NULL, 0);
    cr_assert_eq(out.op, HA_OP_RENEW);
    feed(HA_EV_RENEW_FAILED, 3089, 1600, 0, NULL, -ETIMEDOUT);
    cr_assert_eq(f.state, HA_FSM_LEADER, "still leader 1 ms before until");
    feed(HA_EV_TICK, 3090, 0, 0, NULL, 0);
    n = find_note(HA_NOTE_STOPPED_LEADING);
    cr_assert_not_null(n);
    cr_assert_str_eq(n->reason, "renew_deadline");
    cr_assert_eq(f.state, HA_FSM_FOLLOWER);
    cr_assert_eq(out.op, HA_OP_RELEASE);
    feed(HA_EV_RELEASED, 3100, 0, 0, NULL, 0);
    cr_assert_eq(out.op, HA_OP_WAIT);
    cr_assert_eq(out.op_deadline_ms, 3100 + RETRY);
}

Test(ha_fsm, late_renew_answer_after_a_pause_steps_down) {
    lead();
    feed(HA_EV_TICK, 1090, 0, 0, NULL, 0);
    /* The process was stopped between sending at 1090 and reading the answer at 9000. */
    feed(HA_EV_RENEWED, 9000, 1090, 0, NULL, 0);
    cr_assert_null(find_note(HA_NOTE_RENEWED), "no renew is reported past until");
    cr_assert_not_null(find_note(HA_NOTE_STOPPED_LEADING));
    cr_assert_eq(f.state, HA_FSM_FOLLOWER);
    cr_assert_eq(out.op, HA_OP_RELEASE);
}

Test(ha_fsm, wakeup_after_pause_steps_down_before_anything_else) {
    lead();
    feed(HA_EV_TICK, 60000, 0, 0, NULL, 0);
    cr_assert_not_null(find_note(HA_NOTE_STOPPED_LEADING));
    cr_assert_eq(out.op, HA_OP_RELEASE);
}

Test(ha_fsm, acquire_answered_too_late_is_given_back) {
    init(false, true);
    feed(HA_EV_TICK, 0, 0, 0, NULL, 0);
    feed(HA_EV_ACQUIRED, 5000, 1000, 9, NULL, 0);
    cr_assert_eq(f.state, HA_FSM_FOLLOWER);
    cr_assert_null(find_note(HA_NOTE_STARTED_LEADING));
    cr_assert_eq(out.op, HA_OP_RELEASE);
}

Test(ha_fsm, lost_lease_steps_down_and_looks_again) {
    lead();
    feed(HA_EV_TICK, 1090, 0, 0, NULL, 0);
    feed(HA_EV_RENEW_LOST, 1100, 1090, 0, NULL, -CM_ENOT_LEADER);
    cr_assert_str_eq(find_note(HA_NOTE_STOPPED_LEADING)->reason, "lease_lost");
    cr_assert_eq(out.op, HA_OP_ACQUIRE);
}

Test(ha_fsm, follower_reports_each_holder_once_and_wakes_at_expiry) {
    struct ha_view v = {.holder = "other:1", .epoch = 3, .ttl_ms = 200};
    const struct ha_fsm_note *n;

    init(false, true);
    feed(HA_EV_TICK, 0, 0, 0, NULL, 0);
    feed(HA_EV_BUSY, 10, 0, 0, &v, 0);
    n = find_note(HA_NOTE_NEW_LEADER);
    cr_assert_not_null(n);
    cr_assert_str_eq(n->holder, "other:1");
    cr_assert_eq(n->epoch, 3);
    cr_assert_eq(out.op, HA_OP_WAIT);
    cr_assert(out.watch);
    cr_assert_eq(out.watch_epoch, 3);
    cr_assert_eq(out.op_deadline_ms, 10 + 200 + 5, "wake just after the holder's lease ends");
    feed(HA_EV_TICK, 215, 0, 0, NULL, 0);
    cr_assert_eq(out.op, HA_OP_ACQUIRE);
    v.ttl_ms = 4000;
    feed(HA_EV_BUSY, 220, 0, 0, &v, 0);
    cr_assert_null(find_note(HA_NOTE_NEW_LEADER), "same holder, same epoch: no report");
    cr_assert_eq(out.op_deadline_ms, 220 + RETRY);
    v.epoch = 4;
    feed(HA_EV_BUSY, 300, 0, 0, &v, 0);
    cr_assert_not_null(find_note(HA_NOTE_NEW_LEADER), "a new epoch is a new term");
}

Test(ha_fsm, errors_are_reported_then_cleared) {
    struct ha_view v = {.holder = "other:1", .epoch = 3, .ttl_ms = -1};

    init(false, true);
    feed(HA_EV_TICK, 0, 0, 0, NULL, 0);
    feed(HA_EV_ACQUIRE_FAILED, 10, 0, 0, NULL, -CM_EUNREACHABLE);
    cr_assert_eq(find_note(HA_NOTE_ERROR)->err, -CM_EUNREACHABLE);
    cr_assert_eq(out.op, HA_OP_WAIT);
    cr_assert(!out.watch);
    feed(HA_EV_BUSY, 1020, 0, 0, &v, 0);
    cr_assert_not_null(find_note(HA_NOTE_ERROR_CLEARED));
    feed(HA_EV_BUSY, 2020, 0, 0, &v, 0);
    cr_assert_null(find_note(HA_NOTE_ERROR_CLEARED));
}

Test(ha_fsm, stop_releases_by_default) {
    lead();
    feed(HA_EV_STOP, 500, 0, 0, NULL, 0);
    cr_assert_str_eq(find_note(HA_NOTE_STOPPED_LEADING)->reason, "stop");
    cr_assert_eq(out.op, HA_OP_RELEASE);
    feed(HA_EV_RELEASED, 510, 0, 0, NULL, 0);
    cr_assert_eq(out.op, HA_OP_EXIT);
    cr_assert_eq(f.state, HA_FSM_STOPPED);
    feed(HA_EV_TICK, 600, 0, 0, NULL, 0);
    cr_assert_eq(out.op, HA_OP_EXIT);
}

Test(ha_fsm, stop_can_keep_the_lease) {
    init(false, false);
    feed(HA_EV_TICK, 0, 0, 0, NULL, 0);
    feed(HA_EV_ACQUIRED, 100, 90, 7, NULL, 0);
    feed(HA_EV_STOP, 500, 0, 0, NULL, 0);
    cr_assert_not_null(find_note(HA_NOTE_STOPPED_LEADING));
    cr_assert_eq(out.op, HA_OP_EXIT);
}

Test(ha_fsm, observer_reads_and_reports_no_holder) {
    struct ha_view v = {.holder = "", .epoch = 5, .ttl_ms = -1};

    init(true, true);
    feed(HA_EV_TICK, 0, 0, 0, NULL, 0);
    cr_assert_eq(out.op, HA_OP_READ_VIEW);
    feed(HA_EV_VIEW, 5, 0, 0, &v, 0);
    cr_assert_str_eq(find_note(HA_NOTE_NEW_LEADER)->holder, "");
    cr_assert_eq(out.op, HA_OP_WAIT);
    feed(HA_EV_TICK, 1005, 0, 0, NULL, 0);
    cr_assert_eq(out.op, HA_OP_READ_VIEW, "an observer never campaigns");
}

Test(ha_uri, redis_with_credentials_and_db) {
    struct ha_uri u;
    char err[256];

    cr_assert_eq(ha_uri_parse("redis://al%40ice:p%3Ass@127.0.0.1:6379/2", &u, err, sizeof(err)), 0,
                 "%s", err);
    cr_assert_str_eq(u.scheme, "redis");
    cr_assert_str_eq(u.user, "al@ice");
    cr_assert_str_eq(u.password, "p:ss");
    cr_assert_eq(u.nhosts, 1);
    cr_assert_str_eq(u.hosts[0], "127.0.0.1:6379");
    cr_assert_str_eq(u.path, "2");
}

Test(ha_uri, etcd_endpoints) {
    struct ha_uri u;
    char err[256];

    cr_assert_eq(ha_uri_parse("etcd://a:1,b:2;[::1]:3", &u, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(u.nhosts, 3);
    cr_assert_str_eq(u.hosts[1], "b:2");
    cr_assert_str_eq(u.hosts[2], "[::1]:3");
    cr_assert_str_eq(u.path, "");
}

Test(ha_uri, k8s_authority_is_not_validated) {
    struct ha_uri u;
    char err[256];

    cr_assert_eq(ha_uri_parse("k8s://ns/lease", &u, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(u.hosts[0], "ns");
    cr_assert_str_eq(u.path, "lease");
    cr_assert_eq(ha_uri_parse("k8s:///ns/lease", &u, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(u.nhosts, 0);
    cr_assert_str_eq(u.path, "ns/lease");
}

Test(ha_uri, bad_uris_say_why) {
    static const char *const bad[] = {
        "",
        "redis",
        "redis:/x",
        "REDIS://a:1",
        "redis://",
        "redis://a",
        "redis://a:0",
        "redis://a:1x",
        "etcd://a:1,",
        "etcd://,a:1",
        "redis://a:99999",
        "redis://u:%zz@a:1",
        "etcd://a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i:9",
    };
    struct ha_uri u;
    char err[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        cr_assert_eq(ha_uri_parse(bad[i], &u, err, sizeof(err)), -CM_EBAD_URI, "%s", bad[i]);
        cr_assert(strstr(err, "URI") != NULL, "message for '%s': %s", bad[i], err);
    }
}

Test(ha_backend, lookup_by_scheme) {
    cr_assert_eq(ha_backend_find("redis"), &ha_redis_ops);
    cr_assert_eq(ha_backend_find("etcd"), &ha_etcd_ops);
    cr_assert_null(ha_backend_find("zookeeper"));
}

Test(ha_elector, bad_config_is_refused_with_a_message) {
    struct ha_elector_config c = {.uri = "redis://127.0.0.1:1",
                                  .cluster_id = "x",
                                  .identity = "me:1",
                                  .lease_ms = 1000,
                                  .renew_deadline_ms = 2000,
                                  .retry_ms = 100};
    struct ha_elector *e;
    char err[256];

    cr_assert_eq(ha_elector_create(&c, &e, err, sizeof(err)), -EINVAL);
    cr_assert(strstr(err, "renew deadline") != NULL, "%s", err);
    cr_assert_null(e);
    c.renew_deadline_ms = 600;
    c.uri = "nope://a:1";
    cr_assert_eq(ha_elector_create(&c, &e, err, sizeof(err)), -CM_EBAD_URI);
    cr_assert(strstr(err, "nope") != NULL, "%s", err);
}
