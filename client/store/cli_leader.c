/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store client's master address forms (Mooncake's master_server_addr): "host:port" names
 * one master (an HA standby there redirects with -NOTLEADER); "redis://host:port",
 * "etcd://host:port[;host:port...]" and "k8s://[namespace/]lease" name the election backend of
 * an HA group of masters, whose record for cluster MC_STORE_CLUSTER_ID holds the leader's
 * advertised address. The leader view is an observe-only elector of ha/ (ha/ha.h): its thread
 * watches the record (etcd and Kubernetes watches; Redis is polled every retry period, 1 s)
 * and points the store at each new leader; cli__leader_resolve reads the record on demand when
 * a connection fails or a standby knows no leader. None of ha/ is exported from libcrescent.
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"
#include "common/cm_errno.h"
#include "common/cm_net.h"
#include "common/cm_time.h"
#include "ha/ha.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLI_DEFAULT_CLUSTER  "crescent" /* crescent-master's --cluster_id default */
#define CLI_FAILOVER_DEFAULT 30000      /* ms one call waits for a leader (HA forms) */
#define CLI_FAILOVER_POLL    200        /* ms between two looks at the record */

/* The leader view of a store given an HA address form. */
struct cli_leader {
    struct ha_elector *obs; /* observe-only elector: the watch thread and on-demand reads */
    char uri[1024];         /* the backend URI handed to ha/ (';' became ',') */
    char shown[1024];       /* the address as given, password masked: for messages */
    char cluster[256];      /* MC_STORE_CLUSTER_ID */
    uint64_t epoch;         /* epoch of the leader st points at (under st->addr_mu) */
};

/* Parses "host:port" or "[v6]:port" (len bytes of a; a port is required, 1..65535) into host
 * (cap bytes) and *port by the one address rule (common/cm_net.h: an unbracketed IPv6 address
 * with a port is refused as ambiguous). Returns 0, or -1 with one line in err (may be NULL). */
static int cli_addr_parse(const char *a, size_t len, char *host, size_t cap, int *port, char *err,
                          size_t errlen) {
    if (cm_net_hostport_parse(a, len, CM_NET_PORT_REQUIRED, host, cap, port, err, errlen) < 0) {
        return -1;
    }
    if (*port == 0) {
        if (err != NULL) {
            snprintf(err, errlen, "address '%.*s': port 0 is not a port (1..65535)",
                     (int)(len > 200 ? 200 : len), a);
        }
        return -1;
    }
    return 0;
}

/* Points st at "host:port" or "[v6]:port" (len bytes of a). Returns 0, or -1 when a is not
 * such an address (st unchanged). Thread-safe (takes addr_mu). */
int cli__set_master(struct crescent_store *st, const char *a, size_t len) {
    char host[sizeof(st->host)];
    int port;
    if (cli_addr_parse(a, len, host, sizeof(host), &port, NULL, 0) < 0) {
        return -1;
    }
    pthread_mutex_lock(&st->addr_mu);
    if (st->port != port || strcmp(st->host, host) != 0) {
        atomic_fetch_add(&st->master_gen, 1);
    }
    memcpy(st->host, host, sizeof(host));
    st->port = port;
    pthread_mutex_unlock(&st->addr_mu);
    return 0;
}

/* Wakes the ping thread at once (a new leader: ping it, remount if it asks). */
static void cli_ping_now(struct crescent_store *st) {
    pthread_mutex_lock(&st->ping_mu);
    st->ping_now = true;
    pthread_cond_broadcast(&st->ping_cv);
    pthread_mutex_unlock(&st->ping_mu);
}

/* Points st at the leader of view when it names one at least as new as the one st knows.
 * Returns 1 when the address changed, 0 when not, -1 when the view names no usable leader. */
static int cli_leader_take(struct crescent_store *st, const char *holder, uint64_t epoch) {
    struct cli_leader *l = st->leader;
    char host[sizeof(st->host)], old[sizeof(st->host) + 10];
    int port;
    if (holder[0] == '\0') {
        return -1;
    }
    char why[300];
    if (cli_addr_parse(holder, strlen(holder), host, sizeof(host), &port, why, sizeof(why)) < 0) {
        cli_log(st, 3, "store client %s: the election record names no leader: %s", st->client_id,
                why);
        return -1;
    }
    pthread_mutex_lock(&st->addr_mu);
    bool changed = false;
    if (epoch == 0 || epoch >= l->epoch) { /* else a stale read: a newer leader is known */
        changed = st->port != port || strcmp(st->host, host) != 0;
        if (changed) {
            atomic_fetch_add(&st->master_gen, 1);
        }
        if (st->port != 0) {
            cm_net_hostport_format(old, sizeof(old), st->host, st->port);
        } else {
            strcpy(old, "none");
        }
        memcpy(st->host, host, sizeof(host));
        st->port = port;
        l->epoch = epoch > l->epoch ? epoch : l->epoch;
    }
    pthread_mutex_unlock(&st->addr_mu);
    if (changed) {
        cli_log(st, 2, "store client %s: master leader %s (epoch %llu), was %s", st->client_id,
                holder, (unsigned long long)epoch, old);
    }
    return changed ? 1 : 0;
}

/* Elector thread: the holder of the record changed. */
static void cli_leader_on_new(const char *identity, uint64_t epoch, void *arg) {
    struct crescent_store *st = arg;
    if (cli_leader_take(st, identity, epoch) == 1) {
        cli_ping_now(st);
    }
}

/* Elector thread: a backend error streak began (once per streak). */
static void cli_leader_on_error(int err, const char *msg, void *arg) {
    struct crescent_store *st = arg;
    cli_log(st, 3, "store client %s: election backend: %s (%s)", st->client_id, msg,
            cm_err_name(err));
}

/* Reads the election record now and points st at the leader it names. Returns 1 (address
 * changed), 0 (same leader), -EAGAIN (no leader recorded) or a negative code with the backend's
 * message (cli_fail). Thread-safe. */
int cli__leader_resolve(struct crescent_store *st) {
    struct ha_view view;
    char err[512];
    int rc = ha_elector_get_holder(st->leader->obs, &view, err, sizeof(err));
    if (rc < 0) {
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master %s: %s", st->leader->shown, err);
    }
    rc = cli_leader_take(st, view.holder, view.epoch);
    if (rc == 1) {
        cli_ping_now(st);
    }
    return rc < 0 ? -EAGAIN : rc;
}

/* During a fail-over (HA forms only): starts the window of window_ms at the first call
 * (*deadline 0); then, when resolve, reads the record (a new leader named: try again at once)
 * and, when pause, sleeps CLI_FAILOVER_POLL ms. Returns true to try again, false when st has no
 * leader view, the window has passed or the store is stopping. Thread-safe. */
bool cli__failover_wait(struct crescent_store *st, uint64_t *deadline, uint32_t window_ms,
                        bool resolve, bool pause) {
    if (st->leader == NULL || __atomic_load_n(&st->stop, __ATOMIC_RELAXED)) {
        return false;
    }
    uint64_t now = cm_mono_ms();
    if (*deadline == 0) {
        *deadline = now + window_ms;
    }
    if (now >= *deadline) {
        return false;
    }
    if (resolve && cli__leader_resolve(st) == 1) {
        return true;
    }
    if (pause) {
        uint64_t left = *deadline - now;
        usleep((useconds_t)(left < CLI_FAILOVER_POLL ? left : CLI_FAILOVER_POLL) * 1000);
    }
    return true;
}

/* The backend URI of an HA form for ha/: Mooncake's ';' between etcd endpoints becomes ','. */
static int cli_leader_uri(struct cli_leader *l, const char *master) {
    if (strlen(master) >= sizeof(l->uri)) {
        return cli_fail(EINVAL, "master address '%.64s...' is too long", l->shown);
    }
    strcpy(l->uri, master);
    for (char *p = l->uri; *p; p++) {
        *p = *p == ';' ? ',' : *p;
    }
    const char *env = getenv("MC_STORE_CLUSTER_ID");
    const char *c = env != NULL && env[0] != '\0' ? env : CLI_DEFAULT_CLUSTER;
    if (strlen(c) > 200 || strpbrk(c, " \t\r\n{}") != NULL) {
        return cli_fail(EINVAL,
                        "MC_STORE_CLUSTER_ID '%s' is not a cluster id (1..200 characters, no "
                        "spaces or braces)",
                        c);
    }
    strcpy(l->cluster, c);
    return 0;
}

/* Waits (up to the fail-over window) until the record names a leader. Returns 0 or a negative
 * code (cli_fail). */
static int cli_leader_first(struct crescent_store *st) {
    uint64_t deadline = cm_mono_ms() + st->failover_ms;
    for (;;) {
        int rc = cli__leader_resolve(st);
        if (rc >= 0) {
            return 0;
        }
        if (rc != -EAGAIN) {
            return rc;
        }
        uint64_t now = cm_mono_ms();
        if (now >= deadline) {
            return cli_fail(CRESCENT_STORE_ERPC_FAIL,
                            "master %s: no leader of cluster '%s' recorded within %u ms "
                            "(MC_STORE_CLUSTER_ID must be the masters' --cluster_id, a k8s:// "
                            "Lease theirs; is a master running?)",
                            st->leader->shown, st->leader->cluster, st->failover_ms);
        }
        uint64_t left = deadline - now;
        usleep((useconds_t)(left < CLI_FAILOVER_POLL ? left : CLI_FAILOVER_POLL) * 1000);
    }
}

/* Opens the leader view of an HA form: checks the URI, opens the backend (reachability and
 * credentials are checked here, bounded by ha/'s 3 s I/O timeout), waits for a recorded leader
 * and points st at it. Returns 0 or a negative code (cli_fail). */
static int cli_leader_open(struct crescent_store *st, const char *master, const char *shown) {
    st->leader = calloc(1, sizeof(*st->leader));
    if (st->leader == NULL) {
        return cli_fail(ENOMEM, "out of memory");
    }
    snprintf(st->leader->shown, sizeof(st->leader->shown), "%s", shown);
    int rc = cli_leader_uri(st->leader, master);
    if (rc < 0) {
        return rc;
    }
    struct ha_elector_config cfg = {
        .uri = st->leader->uri,
        .cluster_id = st->leader->cluster,
        .identity = "crescent-store-client",
        .observe_only = true,
        .new_leader = cli_leader_on_new,
        .error = cli_leader_on_error,
        .arg = st,
    };
    char err[512];
    rc = ha_elector_create(&cfg, &st->leader->obs, err, sizeof(err));
    if (rc < 0) {
        bool bad = rc == -CM_EBAD_URI || rc == -EINVAL;
        return cli_fail(bad ? EINVAL : CRESCENT_STORE_ERPC_FAIL, "master address '%s': %s", shown,
                        err);
    }
    rc = cli_leader_first(st);
    if (rc < 0) {
        return rc;
    }
    rc = ha_elector_start(st->leader->obs);
    return rc < 0 ? cli_fail(-rc, "master %s: cannot start the leader watch", shown) : 0;
}

/* Copies the address in into out (cap bytes) with the password of "scheme://user:password@"
 * replaced by "***", so messages and logs never show it. */
static void cli_mask_password(const char *in, char *out, size_t cap) {
    const char *auth = strstr(in, "://");
    auth = auth != NULL ? auth + 3 : in;
    const char *slash = strchr(auth, '/'), *at = strchr(auth, '@');
    const char *colon = at != NULL ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (at == NULL || (slash != NULL && slash < at) || colon == NULL) {
        snprintf(out, cap, "%s", in);
        return;
    }
    snprintf(out, cap, "%.*s***%s", (int)(colon + 1 - in), in, at);
}

/* Parses the master address (any form above) into st; for an HA form opens the leader view
 * (st->leader) and points st at the current leader, waiting up to the fail-over window for one.
 * failover_ms 0 takes the default. Returns 0, -EINVAL (malformed address, unknown scheme, bad
 * MC_STORE_CLUSTER_ID) or -CRESCENT_STORE_ERPC_FAIL (backend unreachable, no leader); the
 * message names the cause. Called once from create. */
int cli__master_open(struct crescent_store *st, const char *master, uint32_t failover_ms) {
    st->failover_ms = failover_ms != 0 ? failover_ms : CLI_FAILOVER_DEFAULT;
    const char *sep = strstr(master, "://");
    if (sep == NULL) {
        char why[300], host[sizeof(st->host)];
        int port;
        if (cli_addr_parse(master, strlen(master), host, sizeof(host), &port, why, sizeof(why)) <
            0) {
            return cli_fail(EINVAL, "master %s", why);
        }
        return cli__set_master(st, master, strlen(master));
    }
    char shown[1024];
    cli_mask_password(master, shown, sizeof(shown));
    size_t sl = (size_t)(sep - master);
    if (!((sl == 5 && memcmp(master, "redis", 5) == 0) ||
          (sl == 4 && memcmp(master, "etcd", 4) == 0) ||
          (sl == 3 && memcmp(master, "k8s", 3) == 0))) {
        return cli_fail(EINVAL,
                        "master address '%s': unknown scheme '%.*s' (use host:port, "
                        "redis://host:port, etcd://host:port[;host:port...] or "
                        "k8s://[namespace/]lease)",
                        shown, (int)(sl < 32 ? sl : 32), master);
    }
    return cli_leader_open(st, master, shown);
}

/* Stops the leader watch and frees the leader view (NULL view accepted). Called from destroy
 * before the ping thread stops. */
void cli__master_close(struct crescent_store *st) {
    if (st->leader != NULL) {
        ha_elector_destroy(st->leader->obs);
        free(st->leader);
        st->leader = NULL;
    }
}

/* The backend address of st's leader view as given, password masked, for messages ("" without
 * one). */
const char *cli__leader_desc(const struct crescent_store *st) {
    return st->leader != NULL ? st->leader->shown : "";
}
