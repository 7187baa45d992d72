/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exercises the elector library API against a live backend (run by tests/ha/test_election.py):
 *   ha_api_probe URI CLUSTER
 * Two electors in one process: A starts first and must lead; B must observe A through
 * ha_elector_wait_for_change and ha_elector_get_holder; after A stops (releasing the lease) B
 * must lead with a greater epoch, and get_holder must name B. Prints one line per check and
 * exits 0 when all hold, 1 otherwise.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_time.h"
#include "ha/ha.h"

static int failures;

static void check(int cond, const char *what) {
    printf("%s %s\n", cond ? "ok  " : "FAIL", what);
    if (!cond)
        failures++;
}

static struct ha_elector *make(const char *uri, const char *cluster, const char *id) {
    struct ha_elector_config c = {.uri = uri,
                                  .cluster_id = cluster,
                                  .identity = id,
                                  .lease_ms = 1000,
                                  .renew_deadline_ms = 600,
                                  .retry_ms = 200,
                                  .io_timeout_ms = 300};
    struct ha_elector *e;
    char err[512];

    if (ha_elector_create(&c, &e, err, sizeof(err))) {
        printf("FAIL create: %s\n", err);
        return NULL;
    }
    return e;
}

/* Waits up to ms for e to lead; returns its epoch or 0. */
static uint64_t wait_leading(struct ha_elector *e, int ms) {
    uint64_t end = cm_mono_ms() + (uint64_t)ms, epoch = 0;

    while (cm_mono_ms() < end) {
        if (ha_elector_is_leader(e, &epoch))
            return epoch;
        cm_sleep_ms(10);
    }
    return 0;
}

int main(int argc, char **argv) {
    struct ha_elector *a, *b;
    struct ha_view v;
    uint64_t ea, eb;
    char err[512];
    int rc;

    if (argc != 3) {
        fprintf(stderr, "usage: ha_api_probe URI CLUSTER\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    a = make(argv[1], argv[2], "probe-a:1");
    b = make(argv[1], argv[2], "probe-b:1");
    if (!a || !b)
        return 1;
    check(ha_elector_wait_for_change(b, 0, 10, NULL) == -ESHUTDOWN,
          "wait_for_change on a stopped elector says ESHUTDOWN");
    check(ha_elector_start(a) == 0, "start a");
    check(ha_elector_start(a) == -EALREADY, "second start is EALREADY");
    ea = wait_leading(a, 3000);
    check(ea > 0, "a leads");
    check(ha_elector_start(b) == 0, "start b");
    rc = ha_elector_wait_for_change(b, 0, 3000, &v);
    check(rc == 0 && strcmp(v.holder, "probe-a:1") == 0 && v.epoch == ea,
          "b's wait_for_change reports a and its epoch");
    check(!ha_elector_is_leader(b, NULL), "b does not lead");
    rc = ha_elector_get_holder(b, &v, err, sizeof(err));
    check(rc == 0 && strcmp(v.holder, "probe-a:1") == 0 && v.epoch == ea,
          "get_holder names a with its epoch");
    check(ha_elector_wait_for_change(b, ea, 100, NULL) == -ETIMEDOUT,
          "wait_for_change times out while nothing changes");
    ha_elector_stop(a);
    check(!ha_elector_is_leader(a, NULL), "a stopped: not leader");
    rc = ha_elector_wait_for_change(b, ea, 3000, &v);
    check(rc == 0, "b sees the change after a releases");
    eb = wait_leading(b, 3000);
    check(eb > ea, "b leads with a greater epoch");
    struct ha_elector_stats st;
    ha_elector_get_stats(b, &st);
    check(st.epoch_floor == eb && st.data_loss_events == 0 && !st.data_loss,
          "b's stats: floor = its epoch, no data loss");
    rc = ha_elector_get_holder(a, &v, err, sizeof(err));
    check(rc == 0 && strcmp(v.holder, "probe-b:1") == 0 && v.epoch == eb,
          "get_holder (from a stopped elector) names b");
    ha_elector_destroy(b);
    rc = ha_elector_get_holder(a, &v, err, sizeof(err));
    check(rc == 0 && v.holder[0] == '\0', "after b's release the holder reads as none");
    ha_elector_destroy(a);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
