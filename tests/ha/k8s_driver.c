/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test driver for the Kubernetes Lease backend alone (ha_k8s_ops, without the elector): opens
 * the backend and runs the operations named on the command line, printing one line each, so
 * shell tests can check conflicts, epochs, expiry and watches step by step.
 *
 *   k8s_driver URI CLUSTER IDENTITY OP...
 *   OP: acquire:LEASE_MS | renew:LEASE_MS | release | holder | wait:TIMEOUT_MS | sleep:MS
 *   output: "OP rc=NAME [epoch=N] [wrote_at=MS] [holder=X] [ttl=MS] [ms=ELAPSED] [err=...]"
 * Exit status: 0 when every operation ran (whatever it returned), 2 when open failed.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_time.h"
#include "ha/ha_backend.h"

static const char *rc_name(int rc) {
    return rc == 0 ? "OK" : cm_err_name(rc);
}

static void print_view(const struct ha_view *v) {
    printf(" holder=%s epoch=%llu ttl=%lld", v->holder[0] ? v->holder : "-",
           (unsigned long long)v->epoch, (long long)v->ttl_ms);
}

static void run_op(const struct ha_backend_ops *o, void *st, const char *op) {
    char err[512] = "";
    struct ha_view view = {0};
    uint64_t t0 = cm_mono_ms(), epoch = 0;
    const char *colon = strchr(op, ':');
    long arg = colon ? strtol(colon + 1, NULL, 10) : 0;
    int rc;
    if (strncmp(op, "acquire", 7) == 0) {
        rc = o->try_acquire(st, (uint64_t)arg, &epoch, &view, err, sizeof(err));
        printf("acquire rc=%s", rc_name(rc));
        if (rc == 0)
            printf(" epoch=%llu", (unsigned long long)epoch);
        if (rc == 0 && view.sent_ms) /* when the winning write was sent, from the call's start */
            printf(" wrote_at=%llu", (unsigned long long)(view.sent_ms - t0));
        else if (rc == -EBUSY)
            print_view(&view);
    } else if (strncmp(op, "renew", 5) == 0) {
        rc = o->renew(st, (uint64_t)arg, err, sizeof(err));
        printf("renew rc=%s", rc_name(rc));
    } else if (strcmp(op, "release") == 0) {
        rc = o->release(st, err, sizeof(err));
        printf("release rc=%s", rc_name(rc));
    } else if (strcmp(op, "holder") == 0) {
        rc = o->get_holder(st, &view, err, sizeof(err));
        printf("holder rc=%s", rc_name(rc));
        if (rc == 0)
            print_view(&view);
    } else if (strncmp(op, "wait", 4) == 0) {
        rc = o->wait_change(st, 0, (int)arg);
        if (rc == -EAGAIN) { /* a poll: sleep out the wait, as the elector does */
            uint64_t spent = cm_mono_ms() - t0;
            if (spent < (uint64_t)arg)
                cm_sleep_ms((uint64_t)arg - spent);
        }
        printf("wait rc=%s", rc_name(rc));
        err[0] = '\0';
    } else if (strncmp(op, "sleep", 5) == 0) {
        cm_sleep_ms((uint64_t)arg);
        printf("sleep rc=OK");
        rc = 0;
    } else {
        printf("unknown-op %s\n", op);
        return;
    }
    printf(" ms=%llu", (unsigned long long)(cm_mono_ms() - t0));
    if (rc != 0 && rc != -EBUSY && err[0])
        printf(" err=%s", err);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s URI CLUSTER IDENTITY OP...\n", argv[0]);
        return 2;
    }
    struct ha_uri uri;
    char err[512];
    if (ha_uri_parse(argv[1], &uri, err, sizeof(err)) < 0) {
        printf("open rc=BAD_URI err=%s\n", err);
        return 2;
    }
    const struct ha_backend_ops *o = &ha_k8s_ops;
    void *st = NULL;
    int rc = o->open(&uri, argv[2], argv[3], 2000, &st, err, sizeof(err));
    if (rc < 0) {
        printf("open rc=%s err=%s\n", rc_name(rc), err);
        return 2;
    }
    printf("open rc=OK\n");
    fflush(stdout);
    for (int i = 4; i < argc; i++)
        run_op(o, st, argv[i]);
    o->close(st);
    return 0;
}
