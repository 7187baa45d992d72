/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-elect: campaign for (or observe) the leader lease of a cluster and print one line per
 * transition, first field CLOCK_MONOTONIC milliseconds, flushed at once:
 *   <ms> LEADER epoch=N until=<ms>     <ms> RENEWED epoch=N until=<ms>   (--verbose)
 *   <ms> FOLLOWER leader=X epoch=N     <ms> STEPPED_DOWN reason=R
 *   <ms> HOLDER leader=X epoch=N       (--observe; X is "-" when nobody holds the lease)
 *   <ms> DATA_LOSS stored=N floor=M    (--verbose: the backend's epoch record fell below M)
 * until is the monotonic instant after which this process no longer acts as leader without
 * another renew. SIGTERM / SIGINT release the lease and exit 0.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_time.h"
#include "ha/ha.h"

struct elect_opts {
    const char *identity;
    bool verbose;
    bool observe;
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: crescent-elect --backend URI --cluster ID --identity HOST:PORT\n"
            "                      [--lease-ms N] [--renew-ms N] [--retry-ms N] [--timeout-ms N]\n"
            "                      [--verbose] [--observe] [--keep-lease] [--state-dir DIR]\n"
            "  URI: redis://[user:password@]host:port[/db] | etcd://host:port[,host:port...]"
            " | k8s://...\n"
            "  defaults: lease 5000 ms, renew deadline 3000 ms, retry 1000 ms\n");
}

static void on_started(uint64_t epoch, uint64_t until, void *arg) {
    (void)arg;
    printf("%llu LEADER epoch=%llu until=%llu\n", (unsigned long long)cm_mono_ms(),
           (unsigned long long)epoch, (unsigned long long)until);
    fflush(stdout);
}

static void on_renewed(uint64_t epoch, uint64_t until, void *arg) {
    const struct elect_opts *o = arg;

    if (!o->verbose)
        return;
    printf("%llu RENEWED epoch=%llu until=%llu\n", (unsigned long long)cm_mono_ms(),
           (unsigned long long)epoch, (unsigned long long)until);
    fflush(stdout);
}

static void on_stopped(const char *reason, void *arg) {
    (void)arg;
    printf("%llu STEPPED_DOWN reason=%s\n", (unsigned long long)cm_mono_ms(), reason);
    fflush(stdout);
}

static void on_new_leader(const char *identity, uint64_t epoch, void *arg) {
    const struct elect_opts *o = arg;

    if (o->observe)
        printf("%llu HOLDER leader=%s epoch=%llu\n", (unsigned long long)cm_mono_ms(),
               identity[0] ? identity : "-", (unsigned long long)epoch);
    else if (identity[0] && strcmp(identity, o->identity) != 0)
        printf("%llu FOLLOWER leader=%s epoch=%llu\n", (unsigned long long)cm_mono_ms(), identity,
               (unsigned long long)epoch);
    else
        return;
    fflush(stdout);
}

/* The backend lost data (its epoch record fell below ours): always on stderr, and as a
   transition line with --verbose. */
static void on_data_loss(uint64_t stored, uint64_t floor, const char *msg, void *arg) {
    const struct elect_opts *o = arg;

    fprintf(stderr, "crescent-elect: ERROR: %s\n", msg);
    fflush(stderr);
    if (!o->verbose)
        return;
    printf("%llu DATA_LOSS stored=%llu floor=%llu\n", (unsigned long long)cm_mono_ms(),
           (unsigned long long)stored, (unsigned long long)floor);
    fflush(stdout);
}

static void on_error(int err, const char *msg, void *arg) {
    (void)arg;
    fprintf(stderr, "crescent-elect: %s (%s)\n", msg, cm_err_name(err));
    fflush(stderr);
}

static int parse_ms(const char *name, const char *s, uint64_t *out) {
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (!*s || *end || errno || v == 0 || v > 3600ULL * 1000) {
        fprintf(stderr, "crescent-elect: --%s wants milliseconds in 1..3600000, got '%s'\n", name,
                s);
        return -1;
    }
    *out = v;
    return 0;
}

enum { OPT_LEASE = 256, OPT_RENEW, OPT_RETRY, OPT_TIMEOUT, OPT_KEEP, OPT_STATE_DIR };

static const struct option elect_longopts[] = {
    {"backend", required_argument, NULL, 'b'},
    {"cluster", required_argument, NULL, 'c'},
    {"identity", required_argument, NULL, 'i'},
    {"lease-ms", required_argument, NULL, OPT_LEASE},
    {"renew-ms", required_argument, NULL, OPT_RENEW},
    {"retry-ms", required_argument, NULL, OPT_RETRY},
    {"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
    {"verbose", no_argument, NULL, 'v'},
    {"observe", no_argument, NULL, 'o'},
    {"keep-lease", no_argument, NULL, OPT_KEEP},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_args(int argc, char **argv, struct ha_elector_config *cfg, struct elect_opts *o) {
    uint64_t t;
    int c;

    while ((c = getopt_long(argc, argv, "b:c:i:voh", elect_longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            cfg->uri = optarg;
            break;
        case 'c':
            cfg->cluster_id = optarg;
            break;
        case 'i':
            cfg->identity = optarg;
            break;
        case OPT_LEASE:
            if (parse_ms("lease-ms", optarg, &cfg->lease_ms))
                return 2;
            break;
        case OPT_RENEW:
            if (parse_ms("renew-ms", optarg, &cfg->renew_deadline_ms))
                return 2;
            break;
        case OPT_RETRY:
            if (parse_ms("retry-ms", optarg, &cfg->retry_ms))
                return 2;
            break;
        case OPT_TIMEOUT:
            if (parse_ms("timeout-ms", optarg, &t))
                return 2;
            cfg->io_timeout_ms = (int)t;
            break;
        case 'v':
            o->verbose = true;
            break;
        case 'o':
            o->observe = true;
            break;
        case OPT_KEEP:
            cfg->keep_lease_on_stop = true;
            break;
        case OPT_STATE_DIR:
            cfg->state_dir = optarg;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc || !cfg->uri || !cfg->cluster_id || (!cfg->identity && !o->observe)) {
        fprintf(stderr, "crescent-elect: --backend, --cluster and --identity are required\n");
        usage(stderr);
        return 2;
    }
    if (!cfg->identity)
        cfg->identity = "observer";
    o->identity = cfg->identity;
    cfg->observe_only = o->observe;
    return 0;
}

int main(int argc, char **argv) {
    struct ha_elector_config cfg = {0};
    struct elect_opts o = {0};
    struct ha_elector *e;
    sigset_t set;
    char err[512];
    int rc, sig;

    rc = parse_args(argc, argv, &cfg, &o);
    if (rc)
        return rc;
    cfg.started_leading = on_started;
    cfg.renewed = on_renewed;
    cfg.stopped_leading = on_stopped;
    cfg.new_leader = on_new_leader;
    cfg.error = on_error;
    cfg.data_loss = on_data_loss;
    cfg.arg = &o;

    /* The elector thread inherits this mask, so only sigwait below sees these signals. */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    rc = ha_elector_create(&cfg, &e, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "crescent-elect: %s\n", err);
        return 1;
    }
    rc = ha_elector_start(e);
    if (rc) {
        fprintf(stderr, "crescent-elect: cannot start: %s\n", cm_strerror(rc));
        ha_elector_destroy(e);
        return 1;
    }
    sigwait(&set, &sig);
    ha_elector_destroy(e); /* stops; a leader releases its lease unless --keep-lease */
    return 0;
}
