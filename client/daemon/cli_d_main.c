/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-client: the standalone real client (Mooncake's mooncake_client). It registers with
 * crescent-master, contributes --global_segment_size bytes to the pool, keeps a
 * --local_buffer_size staging buffer, follows NEED_REMOUNT (the store's ping thread) and serves
 * co-located dummy clients on the abstract Unix socket @crescent_client_<port>.sock; with
 * --enable_http_server it serves /metrics and /health on --http_host:--http_port (cli_d_http.c).
 * Once the segment is mounted, the socket listens and the admin server (when enabled and
 * bound) answers, it prints one line on stdout,
 *   crescent-client ready: client <id> segment <name> <bytes> bytes at <master>, dummy socket <s>
 * followed by ", admin http <host>:<port>" when the admin server runs, and on SIGTERM / SIGINT
 * it closes the dummies, unmounts gracefully (MC.GRACEFULUNMOUNT, then waits until the master
 * has dropped the segment) and exits 0. Start-up failures exit 1, usage errors 2. help() is
 * the manual.
 */
#include "common/fmacros.h"

#include "client/daemon/cli_d.h"
#include "client/store/cli_dummy.h"
#include "client/store/cli_store.h"
#include "common/cm_log.h"
#include "common/cm_time.h"
#include "common/cm_util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

enum { CLI_D_EXIT_OK = 0, CLI_D_EXIT_START = 1, CLI_D_EXIT_USAGE = 2 };

struct cli_d_opts {
    const char *master;
    const char *protocol;
    const char *device_names;
    const char *host;
    long port;
    uint64_t global_segment_size;
    uint64_t local_buffer_size;
    const char *ssd_offload_path;
    long ttl_sec;
    long grace_ms;
    const char *logfile;
    int log_level;
    bool http;             /* --enable_http_server */
    const char *http_host; /* --http_host */
    long http_port;        /* --http_port, 0 = off */
};

static void usage(FILE *f) {
    fprintf(f, "usage: crescent-client [--master ADDR] [--protocol tcp|shm|fabric|rdma]\n"
               "                       [--device_names LIST] [--host HOST] [--port N]\n"
               "                       [--global_segment_size SIZE] [--local_buffer_size SIZE]\n"
               "                       [--ssd_offload_path DIR] [--client_live_ttl_sec N]\n"
               "                       [--unmount_grace_ms N] [--logfile PATH] [--log-level L]\n"
               "                       [--enable_http_server [BOOL]] [--http_host HOST]\n"
               "                       [--http_port N]\n"
               "       crescent-client --help | --version\n");
}

static void help(void) {
    usage(stdout);
    printf(
        "\n"
        "The standalone store client of a Crescent pool (Mooncake's mooncake_client): registers\n"
        "with crescent-master, contributes a memory segment to the pool, and serves the\n"
        "applications of this host as dummy clients (libcrescent with cfg.daemon set): they\n"
        "share a memfd pool with the daemon, which runs every store call for them and moves\n"
        "the bytes straight between the pool and the peers' segments.\n"
        "\n"
        "Options:\n"
        "  --master ADDR              crescent-master: HOST:PORT (default 127.0.0.1:50051),\n"
        "                             or the election backend of an HA group of masters,\n"
        "                             redis://HOST:PORT, etcd://HOST:PORT[;HOST:PORT...] or\n"
        "                             k8s://[NAMESPACE/]LEASE, whose leader is followed\n"
        "                             (cluster id: $MC_STORE_CLUSTER_ID, default crescent);\n"
        "                             --master_server_address is an alias\n"
        "  --protocol P               transfer protocol: tcp (default), shm, fabric, rdma\n"
        "  --device_names LIST        NICs for fabric / rdma, comma-separated (default any)\n"
        "  --host HOST                this host's identity, advertised to the master (same-node\n"
        "                             placement) and used as the transfer listener address;\n"
        "                             HOST:PORT fixes the listener's port (default 127.0.0.1)\n"
        "  --port N                   dummy clients connect to the abstract Unix socket\n"
        "                             @crescent_client_N.sock (default 50052)\n"
        "  --global_segment_size SIZE bytes contributed to the pool, e.g. 4gb, \"512 MB\", 0 for\n"
        "                             none (default 4gb)\n"
        "  --local_buffer_size SIZE   staging buffer of the copying calls (default 16mb)\n"
        "  --ssd_offload_path DIR     this client's SSD tier (created when its parent exists):\n"
        "                             values the master queues are written there and stay\n"
        "                             readable through this client (master: enable_offload)\n"
        "  --client_live_ttl_sec N    a dummy silent this long is dropped and its pool released\n"
        "                             (default 10); --client_ttl is an alias\n"
        "  --unmount_grace_ms N       on SIGTERM, how long the segment stays readable after\n"
        "                             MC.GRACEFULUNMOUNT (default 1000)\n"
        "  --enable_http_server [BOOL] serve /metrics (Prometheus), /metrics/summary and\n"
        "                             /health over HTTP (default false, or\n"
        "                             MOONCAKE_ENABLE_CLIENT_HTTP_SERVER); --noenable_http_server\n"
        "                             turns it off\n"
        "  --http_host HOST           the admin server's address (default 0.0.0.0; :: for IPv6)\n"
        "  --http_port N              the admin server's port (default 9300; 0 disables it)\n"
        "  --logfile PATH             log file (default stderr)\n"
        "  --log-level L              debug, verbose, notice (default), warning\n"
        "  -h, --help                 this text\n"
        "  --version                  the version\n"
        "\n"
        "Once the segment is mounted, the dummy socket listens and the admin server (when\n"
        "enabled) answers, one line goes to stdout:\n"
        "  crescent-client ready: client ID segment NAME BYTES bytes at MASTER, dummy socket S\n"
        "with \", admin http HOST:PORT\" at the end when the admin server runs. A port that\n"
        "cannot be bound is logged and the daemon runs without the admin server.\n"
        "SIGTERM / SIGINT: dummies are disconnected, the segment is unmounted gracefully, exit 0.\n"
        "Exit status: 0 after SIGTERM / SIGINT, 1 could not start, 2 bad command line.\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "crescent-client: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    usage(stderr);
    return CLI_D_EXIT_USAGE;
}

/* "4gb", "4 GB", "512MiB" (binary multiples for kb/mb/gb/kib/...), plain bytes. */
static int parse_size(const char *name, const char *s, uint64_t *out) {
    char b[64];
    size_t n = 0;
    for (const char *p = s; *p && n + 1 < sizeof(b); p++) {
        if (*p != ' ' && !((*p == 'i' || *p == 'I') && p > s && (p[1] == 'b' || p[1] == 'B'))) {
            b[n++] = *p;
        }
    }
    b[n] = '\0';
    long long v;
    if (strlen(s) >= sizeof(b) || cm_parse_memory(b, &v) < 0) {
        return usage_error("%s: '%s' is not a size (e.g. 4gb, 512mb, 1048576)", name, s);
    }
    *out = (uint64_t)v;
    return 0;
}

static int parse_long(const char *name, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi) {
        return usage_error("%s: '%s' is not an integer in %ld..%ld", name, s, lo, hi);
    }
    *out = v;
    return 0;
}

/* An existing directory, or a path whose parent directory exists. */
static int check_ssd_path(const char *s) {
    struct stat sb;
    if (*s == '\0' || strlen(s) >= PATH_MAX) {
        return usage_error("--ssd_offload_path: empty or too long");
    }
    if (stat(s, &sb) == 0) {
        return S_ISDIR(sb.st_mode) ? 0
                                   : usage_error("--ssd_offload_path: '%s' is not a directory", s);
    }
    char parent[PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", s);
    char *slash = strrchr(parent, '/');
    if (slash == NULL) {
        strcpy(parent, ".");
    } else {
        slash[slash == parent ? 1 : 0] = '\0';
    }
    if (stat(parent, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        return usage_error("--ssd_offload_path: '%s' does not exist and neither does its "
                           "parent directory",
                           s);
    }
    return 0;
}

enum {
    OPT_MASTER = 256,
    OPT_PROTOCOL,
    OPT_DEVICES,
    OPT_HOST,
    OPT_PORT,
    OPT_GSEG,
    OPT_LBUF,
    OPT_SSD,
    OPT_TTL,
    OPT_GRACE,
    OPT_LOGFILE,
    OPT_LOGLEVEL,
    OPT_VERSION,
    OPT_HTTP,
    OPT_NOHTTP,
    OPT_HTTP_HOST,
    OPT_HTTP_PORT,
};

static const struct option cli_d_longopts[] = {
    {"master", required_argument, NULL, OPT_MASTER},
    {"master_server_address", required_argument, NULL, OPT_MASTER},
    {"protocol", required_argument, NULL, OPT_PROTOCOL},
    {"device_names", required_argument, NULL, OPT_DEVICES},
    {"host", required_argument, NULL, OPT_HOST},
    {"port", required_argument, NULL, OPT_PORT},
    {"global_segment_size", required_argument, NULL, OPT_GSEG},
    {"local_buffer_size", required_argument, NULL, OPT_LBUF},
    {"ssd_offload_path", required_argument, NULL, OPT_SSD},
    {"client_live_ttl_sec", required_argument, NULL, OPT_TTL},
    {"client_ttl", required_argument, NULL, OPT_TTL},
    {"unmount_grace_ms", required_argument, NULL, OPT_GRACE},
    {"logfile", required_argument, NULL, OPT_LOGFILE},
    {"log-level", required_argument, NULL, OPT_LOGLEVEL},
    {"log_level", required_argument, NULL, OPT_LOGLEVEL},
    {"enable_http_server", optional_argument, NULL, OPT_HTTP},
    {"noenable_http_server", no_argument, NULL, OPT_NOHTTP},
    {"http_host", required_argument, NULL, OPT_HTTP_HOST},
    {"http_port", required_argument, NULL, OPT_HTTP_PORT},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* --master: HOST:PORT, or an HA group's election backend (redis://, etcd://, k8s://; the
 * store checks the rest). Returns 0 or the usage error's exit status. */
static int cli_d_master_ok(const char *v) {
    const char *sep = strstr(v, "://");
    if (sep == NULL) {
        return strchr(v, ':') ? 0 : usage_error("--master: '%s' is not HOST:PORT", v);
    }
    size_t n = (size_t)(sep - v);
    if ((n == 5 && !strncmp(v, "redis", 5)) || (n == 4 && !strncmp(v, "etcd", 4)) ||
        (n == 3 && !strncmp(v, "k8s", 3))) {
        return 0;
    }
    return usage_error("--master: unknown scheme in '%s' (HOST:PORT, redis://HOST:PORT, "
                       "etcd://HOST:PORT[;HOST:PORT...] or k8s://[NAMESPACE/]LEASE)",
                       v);
}

/* gflags' booleans: true / false, 1 / 0, yes / no, t / f, y / n (any case). -1 otherwise. */
static int parse_bool(const char *s) {
    static const char *const yes[] = {"true", "1", "yes", "t", "y"}, *const no[] = {"false", "0",
                                                                                    "no", "f", "n"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!strcasecmp(s, yes[i])) {
            return 1;
        }
        if (!strcasecmp(s, no[i])) {
            return 0;
        }
    }
    return -1;
}

static int parse_value(int c, const char *v, struct cli_d_opts *o) {
    int b;
    switch (c) {
    case OPT_HTTP:
        b = v == NULL ? 1 : parse_bool(v);
        o->http = b == 1;
        return b >= 0 ? 0 : usage_error("--enable_http_server: '%s' is not true or false", v);
    case OPT_NOHTTP:
        o->http = false;
        return 0;
    case OPT_HTTP_HOST:
        o->http_host = v;
        return 0;
    case OPT_HTTP_PORT:
        return parse_long("--http_port", v, 0, 65535, &o->http_port);
    case OPT_MASTER:
        o->master = v;
        return cli_d_master_ok(v);
    case OPT_PROTOCOL:
        o->protocol = v;
        return !strcmp(v, "tcp") || !strcmp(v, "shm") || !strcmp(v, "fabric") || !strcmp(v, "rdma")
                   ? 0
                   : usage_error("--protocol: '%s' is not tcp, shm, fabric or rdma", v);
    case OPT_DEVICES:
        o->device_names = v;
        return 0;
    case OPT_HOST:
        o->host = v;
        return *v ? 0 : usage_error("--host: empty");
    case OPT_PORT:
        return parse_long("--port", v, 1, 65535, &o->port);
    case OPT_GSEG:
        return parse_size("--global_segment_size", v, &o->global_segment_size);
    case OPT_LBUF:
        return parse_size("--local_buffer_size", v, &o->local_buffer_size);
    case OPT_SSD:
        o->ssd_offload_path = v;
        return check_ssd_path(v);
    case OPT_TTL:
        return parse_long("--client_live_ttl_sec", v, 1, 86400, &o->ttl_sec);
    case OPT_GRACE:
        return parse_long("--unmount_grace_ms", v, 0, 3600000, &o->grace_ms);
    case OPT_LOGFILE:
        o->logfile = v;
        return 0;
    case OPT_LOGLEVEL:
        o->log_level = cm_log_level_parse(v);
        return o->log_level >= 0
                   ? 0
                   : usage_error("--log-level: '%s' is not debug, verbose, notice or warning", v);
    default:
        return usage_error("unknown option");
    }
}

static int parse_args(int argc, char **argv, struct cli_d_opts *o) {
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", cli_d_longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            help();
            exit(CLI_D_EXIT_OK);
        case OPT_VERSION:
            printf("crescent-client %s\n", CLI_D_VERSION);
            exit(CLI_D_EXIT_OK);
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        case '?':
            return optopt == 0 ? usage_error("unknown option '%s'", argv[optind - 1])
                               : usage_error("unknown option '-%c'", optopt);
        case OPT_HTTP: /* "--enable_http_server false" means what it says, too */
            if (optarg == NULL && optind < argc && parse_bool(argv[optind]) >= 0) {
                optarg = argv[optind++];
            }
            /* fall through */
        default:
            if (parse_value(c, optarg, o) != 0) {
                return CLI_D_EXIT_USAGE;
            }
        }
    }
    if (optind < argc) {
        return usage_error("unexpected argument '%s'", argv[optind]);
    }
    if (o->global_segment_size != 0 && o->global_segment_size < 1024) {
        return usage_error("--global_segment_size: at least 1024 bytes (or 0 for none)");
    }
    return 0;
}

static void cli_d_log_cb(int level, const char *line, void *arg) {
    (void)arg;
    cm_log((enum cm_log_level)level, "client", "%s", line);
}

/* MC.GRACEFULUNMOUNT of every segment, then waits (pinging on) until the master has dropped
 * them or grace + 3 s have passed; crescent_store_destroy unmounts whatever is left. */
static void cli_d_graceful_unmount(struct crescent_store *st, long grace_ms) {
    char grace[24], names[64][256];
    size_t n = 0;
    snprintf(grace, sizeof(grace), "%ld", grace_ms);
    while (n < 64 && crescent_store_segment_name(st, n, names[n], sizeof(names[n])) == 0) {
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        const char *argv[] = {"MC.GRACEFULUNMOUNT", crescent_store_client_id(st), names[i], grace};
        redisReply *r;
        int rc = cli__cmd(st, 4, argv, NULL, &r);
        if (rc == 0) {
            rc = cli__reply_err(r);
            freeReplyObject(r);
        }
        cm_log(rc == 0 ? CM_LOG_NOTICE : CM_LOG_WARNING, "daemon", "graceful unmount of %s: %s",
               names[i], rc == 0 ? "started" : crescent_store_last_error());
    }
    uint64_t deadline = cm_mono_ms() + (uint64_t)grace_ms + 3000;
    for (size_t i = 0; i < n; i++) {
        while (cm_mono_ms() < deadline) {
            const char *argv[] = {"MC.QUERYSEGMENT", names[i]};
            redisReply *r;
            if (cli__cmd(st, 2, argv, NULL, &r) < 0) {
                break; /* master gone: nothing to wait for */
            }
            bool gone = cli__reply_err(r) == -CRESCENT_STORE_ESEGMENT_NOT_FOUND;
            freeReplyObject(r);
            if (gone) {
                cm_log(CM_LOG_NOTICE, "daemon", "segment %s unmounted", names[i]);
                break;
            }
            cm_sleep_ms(50);
        }
    }
}

int main(int argc, char **argv) {
    struct cli_d_opts o = {
        .master = "127.0.0.1:50051",
        .protocol = "tcp",
        .host = "127.0.0.1",
        .port = 50052,
        .global_segment_size = 4ull << 30,
        .ttl_sec = 10,
        .grace_ms = 1000,
        .log_level = CM_LOG_NOTICE,
        .http_host = "0.0.0.0",
        .http_port = 9300,
    };
    const char *env_http = getenv("MOONCAKE_ENABLE_CLIENT_HTTP_SERVER");
    if (env_http != NULL && *env_http != '\0') {
        int b = parse_bool(env_http);
        if (b < 0) {
            return usage_error("MOONCAKE_ENABLE_CLIENT_HTTP_SERVER: '%s' is not true or false",
                               env_http);
        }
        o.http = b == 1;
    }
    int rc = parse_args(argc, argv, &o);
    if (rc != 0) {
        return rc;
    }
    uint64_t start_ms = cm_mono_ms();
    cm_log_set_level((enum cm_log_level)o.log_level);
    if (cm_log_open(o.logfile, 'C') < 0) {
        fprintf(stderr, "crescent-client: cannot open log file '%s'\n", o.logfile);
        return CLI_D_EXIT_START;
    }
    /* Every thread inherits the mask; the main thread takes the signals with sigwait. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.local_hostname = o.host;
    cfg.protocol = o.protocol;
    cfg.device_names = o.device_names;
    cfg.global_segment_size = o.global_segment_size;
    cfg.local_buffer_size = o.local_buffer_size;
    cfg.log_cb = cli_d_log_cb;
    if (o.ssd_offload_path != NULL && mkdir(o.ssd_offload_path, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "crescent-client: --ssd_offload_path %s: %s\n", o.ssd_offload_path,
                strerror(errno));
        return CLI_D_EXIT_START;
    }
    cfg.ssd_offload_path = o.ssd_offload_path;
    struct crescent_store *st = NULL;
    rc = crescent_store_create(o.master, &cfg, &st);
    if (rc < 0) {
        fprintf(stderr, "crescent-client: cannot join the pool at %s: %s (%s)\n", o.master,
                crescent_store_err_name(rc), crescent_store_last_error());
        return CLI_D_EXIT_START;
    }
    char spec[24];
    snprintf(spec, sizeof(spec), "%ld", o.port);
    struct cli_d_server *srv = NULL;
    rc = cli_d_serve_start(st, spec, (unsigned)o.ttl_sec * 1000u, &srv);
    if (rc < 0) {
        fprintf(stderr, "crescent-client: dummy socket @" CLI_DUMMY_SOCK_FMT ": %s\n", o.port,
                rc == -EADDRINUSE ? "in use (another crescent-client on this --port?)"
                                  : strerror(-rc));
        crescent_store_destroy(st);
        return CLI_D_EXIT_START;
    }
    if (o.ssd_offload_path != NULL) {
        cm_log(CM_LOG_NOTICE, "daemon", "SSD tier in %s, offload endpoint %s", o.ssd_offload_path,
               cli__ssd_endpoint(st));
    }
    int state = CLI_D_STARTING;
    struct cli_d_http *http = NULL;
    if (o.http) {
        struct cli_d_http_ctx hc = {
            .st = st,
            .dummies = srv,
            .master = o.master,
            .protocol = o.protocol,
            .local_buffer_size = st->stage_size,
            .start_ms = start_ms,
            .state = &state,
        };
        cli_d_http_start(&hc, o.http_host, (int)o.http_port, &http); /* failures are logged */
    }
    __atomic_store_n(&state, CLI_D_SERVING, __ATOMIC_RELEASE);
    char seg[256] = "-", admin[300] = "";
    crescent_store_segment_name(st, 0, seg, sizeof(seg));
    if (http != NULL) {
        snprintf(admin, sizeof(admin),
                 strchr(o.http_host, ':') ? ", admin http [%s]:%d" : ", admin http %s:%d",
                 o.http_host, cli_d_http_port(http));
    }
    printf("crescent-client ready: client %s segment %s %llu bytes at %s, dummy socket "
           "@" CLI_DUMMY_SOCK_FMT "%s\n",
           crescent_store_client_id(st), seg, (unsigned long long)o.global_segment_size, o.master,
           o.port, admin);
    fflush(stdout);
    cm_log(CM_LOG_NOTICE, "daemon", "ready: client %s, segment %s, protocol %s",
           crescent_store_client_id(st), seg, o.protocol);

    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    cm_log(CM_LOG_NOTICE, "daemon", "signal %d: disconnecting dummies, unmounting", sig);
    __atomic_store_n(&state, CLI_D_STOPPING, __ATOMIC_RELEASE); /* /health answers 503 */
    cli_d_http_forget_dummies(http);
    cli_d_serve_stop(srv);
    cli_d_graceful_unmount(st, o.grace_ms);
    cli_d_http_stop(http);
    crescent_store_destroy(st);
    cm_log(CM_LOG_NOTICE, "daemon", "bye");
    return CLI_D_EXIT_OK;
}
