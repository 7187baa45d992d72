/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-elect: campaign for (or observe) the leader lease of a cluster and print one line per
 * transition, first field CLOCK_MONOTONIC milliseconds, flushed at once:
 *   <ms> LEADER epoch=N until=<ms>     <ms> RENEWED epoch=N until=<ms>   (--verbose)
 *   <ms> FOLLOWER leader=X epoch=N     <ms> STEPPED_DOWN reason=R
 *   <ms> HOLDER leader=X epoch=N       (--observe; X is "-" when nobody holds the lease)
 *   <ms> DATA_LOSS stored=N floor=M    (--verbose: the backend's epoch record fell below M)
 * until is the monotonic instant after which this process no longer acts as leader without
 * another renew. SIGTERM / SIGINT release the lease and exit 0; start-up failures exit 1, usage
 * errors 2, a missing feature (-CM_ENOT_SUPPORTED: Redis without EVAL, ...) 3. help() is the
 * manual.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cm_errno.h"
#include "common/cm_time.h"
#include "ha/ha.h"

/* Kept equal to crescent-master's SRV_VERSION (server/srv_server.h); tests/ha/test_elect_cli.sh
   compares the two --version lines. */
#define ELECT_VERSION "0.1.0"

/* Exit statuses (documented in --help and docs/ha.md). */
enum {
    ELECT_EXIT_OK = 0,          /* stopped by SIGTERM / SIGINT, or --help / --version */
    ELECT_EXIT_START = 1,       /* could not start: bad URI or timings, backend down, auth */
    ELECT_EXIT_USAGE = 2,       /* bad command line */
    ELECT_EXIT_UNSUPPORTED = 3, /* a needed feature is missing (Redis without EVAL, ...) */
};

struct elect_opts {
    const char *identity;
    bool verbose;
    bool observe;
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: crescent-elect --backend URI --cluster ID --identity HOST:PORT\n"
            "                      [--lease-ms N] [--renew-ms N] [--retry-ms N] [--timeout-ms N]\n"
            "                      [--verbose[=BOOL]] [--observe[=BOOL]] [--keep-lease[=BOOL]]\n"
            "                      [--state-dir DIR]\n"
            "       crescent-elect --help | --version\n");
}

static void help(void) {
    usage(stdout);
    printf("\n"
           "Campaigns for the leader lease of cluster ID in a shared backend (or, with --observe,\n"
           "only watches who holds it) and prints one line per transition until SIGTERM/SIGINT.\n"
           "\n"
           "Options:\n"
           "  -b, --backend URI     where the lease lives (see Backends)\n"
           "  -c, --cluster ID      lease namespace in the backend: 1..200 characters, no spaces\n"
           "                        or braces\n"
           "  -i, --identity H:P    this candidate's advertised address, printed by the others\n"
           "                        (not needed with --observe)\n"
           "  --lease-ms N          lease written to the backend (default 5000)\n"
           "  --renew-ms N          renew deadline: a leader stops leading this long after the\n"
           "                        start of its last successful renew (default 3000)\n"
           "  --retry-ms N          renew / campaign / poll period (default 1000)\n"
           "  --timeout-ms N        bound on one backend call (default 3000)\n"
           "                        Timings are 1..3600000 ms with retry < renew < lease.\n"
           "  -v, --verbose[=BOOL]  also print RENEWED lines (default no)\n"
           "  -o, --observe[=BOOL]  never campaign; print HOLDER lines (default no)\n"
           "  --keep-lease[=BOOL]   on SIGTERM/SIGINT keep the lease instead of releasing it\n"
           "                        (default no)\n"
           "  --state-dir DIR       keep the highest epoch seen in DIR/ha-epoch-<cluster>, so\n"
           "                        epochs never go backwards across restarts of this\n"
           "                        candidate or a backend that lost its data (default: none,\n"
           "                        the floor lives in memory only)\n"
           "  -h, --help            print this help and exit 0\n"
           "  --version             print \"crescent-elect " ELECT_VERSION "\" and exit 0\n"
           "  BOOL is yes/no, true/false, on/off or 1/0; a flag without a value means yes.\n"
           "\n"
           "Backends:\n"
           "  redis://[user:password@]host:port[/db]\n"
           "      One Redis server (2.6 or later: the election runs Lua scripts with EVAL; a\n"
           "      server without EVAL is refused at start-up, exit 3). With a password it sends\n"
           "      AUTH [user] password. Plain TCP only: TLS is not supported.\n"
           "  etcd://[user:password@]host:port[,host:port...]\n"
           "      etcd 3.4+ v3 JSON gateway over plain HTTP; endpoints are tried in turn. With a\n"
           "      user, it authenticates with etcd's user/password (auth/authenticate token).\n"
           "      TLS (https, client certificates) is not supported.\n"
           "  k8s://[namespace/]lease-name   (or k8s:// for crescent-<cluster>)\n"
           "      A coordination.k8s.io/v1 Lease. API server and credentials come from\n"
           "      $KUBECONFIG, the pod's service account, or ~/.kube/config (token, client\n"
           "      certificate, cluster CA; exec and auth-provider plugins are not supported).\n"
           "  Hosts may be names, IPv4 or bracketed IPv6 addresses (redis://[::1]:6379,\n"
           "  etcd://[::1]:2379). user and password may be %%-escaped; they are visible to other\n"
           "  local users in the process list.\n"
           "\n"
           "Output (stdout, one line per transition, flushed at once; <ms> and until are\n"
           "CLOCK_MONOTONIC milliseconds, comparable across processes on one host):\n"
           "  <ms> LEADER epoch=N until=<ms>        this process leads\n"
           "  <ms> RENEWED epoch=N until=<ms>       after every successful renew (--verbose)\n"
           "  <ms> FOLLOWER leader=X epoch=N        another candidate X leads\n"
           "  <ms> STEPPED_DOWN reason=R            R is stop, lease_lost or renew_deadline\n"
           "  <ms> HOLDER leader=X epoch=N          --observe only: holder changed (X is - for\n"
           "                                        nobody)\n"
           "  <ms> DATA_LOSS stored=S floor=F       --verbose: the backend's epoch record S is\n"
           "                                        below the floor F (it lost data; stderr\n"
           "                                        says what to check)\n"
           "  until: after this instant the process no longer acts as leader without another\n"
           "  renew. Epochs grow strictly from one leadership to the next (fencing tokens).\n"
           "  Backend errors at run time go to stderr as \"crescent-elect: <message> (<CODE>)\",\n"
           "  once per change of error, and the elector keeps retrying.\n"
           "\n"
           "Exit status:\n"
           "  0  stopped by SIGTERM or SIGINT (the lease is released unless --keep-lease);\n"
           "     also after --help and --version\n"
           "  1  could not start: bad URI or timings, backend unreachable or timed out,\n"
           "     credentials rejected (one line on stderr)\n"
           "  2  usage error: unknown option, bad value, missing or unexpected argument\n"
           "  3  a feature the election needs is missing: a Redis-protocol server without\n"
           "     EVAL (such as crescent-master), or a kubeconfig user with only an exec or\n"
           "     auth-provider plugin\n");
}

/* Prints a usage error and the synopsis on stderr; returns ELECT_EXIT_USAGE. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
    va_list ap;

    fprintf(stderr, "crescent-elect: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    usage(stderr);
    fprintf(stderr, "Try 'crescent-elect --help' for more information.\n");
    return ELECT_EXIT_USAGE;
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

/* Reads a boolean word (yes/no, true/false, on/off, 1/0, any case). Returns 0 or -1. */
static int bool_word(const char *s, bool *out) {
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
            *out = strcasecmp(s, yes[i]) == 0;
            return 0;
        }
    }
    return -1;
}

/* Parses an optional boolean flag value: NULL (the flag alone) is yes. Returns 0 or -1. */
static int parse_bool(const char *name, const char *s, bool *out) {
    if (!s) {
        *out = true;
        return 0;
    }
    if (bool_word(s, out) == 0)
        return 0;
    fprintf(stderr, "crescent-elect: --%s wants yes/no, true/false, on/off or 1/0, got '%s'\n",
            name, s);
    return -1;
}

enum { OPT_LEASE = 256, OPT_RENEW, OPT_RETRY, OPT_TIMEOUT, OPT_KEEP, OPT_VERSION, OPT_STATE_DIR };

static const struct option elect_longopts[] = {
    {"backend", required_argument, NULL, 'b'},
    {"cluster", required_argument, NULL, 'c'},
    {"identity", required_argument, NULL, 'i'},
    {"lease-ms", required_argument, NULL, OPT_LEASE},
    {"renew-ms", required_argument, NULL, OPT_RENEW},
    {"retry-ms", required_argument, NULL, OPT_RETRY},
    {"timeout-ms", required_argument, NULL, OPT_TIMEOUT},
    {"verbose", optional_argument, NULL, 'v'},
    {"observe", optional_argument, NULL, 'o'},
    {"keep-lease", optional_argument, NULL, OPT_KEEP},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* Handles one timing or boolean option; returns 0 or -1 after printing why. */
static int parse_value(int c, struct ha_elector_config *cfg, struct elect_opts *o) {
    uint64_t t;

    switch (c) {
    case OPT_LEASE:
        return parse_ms("lease-ms", optarg, &cfg->lease_ms);
    case OPT_RENEW:
        return parse_ms("renew-ms", optarg, &cfg->renew_deadline_ms);
    case OPT_RETRY:
        return parse_ms("retry-ms", optarg, &cfg->retry_ms);
    case OPT_TIMEOUT:
        if (parse_ms("timeout-ms", optarg, &t))
            return -1;
        cfg->io_timeout_ms = (int)t;
        return 0;
    case 'v':
        return parse_bool("verbose", optarg, &o->verbose);
    case 'o':
        return parse_bool("observe", optarg, &o->observe);
    case OPT_STATE_DIR:
        cfg->state_dir = optarg;
        return 0;
    default: /* OPT_KEEP */
        return parse_bool("keep-lease", optarg, &cfg->keep_lease_on_stop);
    }
}

static int parse_args(int argc, char **argv, struct ha_elector_config *cfg, struct elect_opts *o) {
    int c;

    opterr = 0; /* unknown options are reported below, with the synopsis */
    while ((c = getopt_long(argc, argv, ":b:c:i:voh", elect_longopts, NULL)) != -1) {
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
        case 'h':
            help();
            exit(ELECT_EXIT_OK);
        case OPT_VERSION:
            printf("crescent-elect %s\n", ELECT_VERSION);
            exit(ELECT_EXIT_OK);
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        case '?': /* glibc: optopt 0 = unknown long option (already stepped past) */
            if (optopt == 0)
                return usage_error("unknown option '%s'", argv[optind - 1]);
            if (optopt == 'h' || optopt == OPT_VERSION)
                return usage_error("option '%s' takes no value", argv[optind - 1]);
            return usage_error("unknown option '-%c'", optopt);
        default:
            if (parse_value(c, cfg, o))
                return ELECT_EXIT_USAGE;
            break;
        }
    }
    if (optind < argc) {
        bool b;
        if (bool_word(argv[optind], &b) == 0)
            return usage_error("unexpected argument '%s' (a flag takes its value as --flag=%s)",
                               argv[optind], argv[optind]);
        return usage_error("unexpected argument '%s'", argv[optind]);
    }
    if (!cfg->uri || !cfg->cluster_id || (!cfg->identity && !o->observe))
        return usage_error("%s are required", o->observe ? "--backend and --cluster"
                                                         : "--backend, --cluster and --identity");
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
        return rc == -CM_ENOT_SUPPORTED ? ELECT_EXIT_UNSUPPORTED : ELECT_EXIT_START;
    }
    rc = ha_elector_start(e);
    if (rc) {
        fprintf(stderr, "crescent-elect: cannot start: %s\n", cm_strerror(rc));
        ha_elector_destroy(e);
        return ELECT_EXIT_START;
    }
    sigwait(&set, &sig);
    ha_elector_destroy(e); /* stops; a leader releases its lease unless --keep-lease */
    return ELECT_EXIT_OK;
}
