/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-master: a Redis-compatible cache whose values live in an embedded, memfd-backed
 * segment. main() reads the configuration (file, then flags), creates the segment and keyspace
 * and runs the worker threads until SHUTDOWN, SIGTERM or SIGINT.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_db.h"
#include "server/srv_ha.h"
#include "server/srv_http.h"
#include "server/srv_mc.h"
#include "server/srv_offload.h"
#include "server/srv_pool_kv.h"
#include "server/srv_pool_seg.h"
#include "server/srv_pubsub.h"
#include "server/srv_server.h"
#include "server/srv_snapshot.h"

#include "common/cm_hash.h"
#include "common/cm_log.h"
#include "common/cm_time.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct srv_stats srv_stats;
_Atomic int srv_state;
struct srv_seg *srv_segment;
uint64_t srv_start_wall_ms;
uint64_t srv_start_mono_ms;
char srv_run_id[41];
char srv_executable[1024];
char srv_config_file[1024];

static void srv_on_signal(int sig) {
    (void)sig;
    srv_shutdown_request();
}

static void srv_on_sighup(int sig) {
    (void)sig;
    cm_log_reopen();
}

static void srv_signals(void) {
    struct sigaction sa = {0};
    sa.sa_handler = srv_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = srv_on_sighup;
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

static void srv_usage(void) {
    printf("Usage: crescent-master [/path/to/crescent.conf] [--name value ...]\n\n"
           "A Redis-compatible cache (RESP2/RESP3) whose values live in an embedded memory\n"
           "segment. Every option can be given as a flag (--name value or --name=value), as a\n"
           "line 'name value' in the configuration file, or with CONFIG SET at run time.\n\n"
           "Options:\n");
    cm_config_print_help(&srv_config_table, stdout);
}

/* Raises RLIMIT_NOFILE to fit maxclients, like Redis does. */
static void srv_raise_fd_limit(void) {
    struct rlimit rl;
    rlim_t want = (rlim_t)srv_cfg.maxclients + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
        rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/*
 * The default number of event-loop threads (--threads 0): on a small host the loops must leave
 * room for the clients that share it, so 1 thread up to 2 usable cores; above that half the
 * cores, at most SRV_MAX_AUTO_THREADS (the metadata shards and the kernel's network stack stop
 * scaling long before the core count of a large host). Usable cores are those of the process's
 * CPU affinity mask (containers, taskset).
 */
#define SRV_MAX_AUTO_THREADS 8
static unsigned srv_default_threads(void) {
    cpu_set_t set;
    long ncpu = 0;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        ncpu = CPU_COUNT(&set);
    if (ncpu <= 0)
        ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu <= 2)
        return 1;
    long t = ncpu / 2;
    return (unsigned)(t > SRV_MAX_AUTO_THREADS ? SRV_MAX_AUTO_THREADS : t);
}

static int srv_startup(int argc, char **argv) {
    char err[512];
    if (srv_config_setup(err, sizeof(err)) < 0) {
        fprintf(stderr, "crescent-master: %s\n", err);
        return 1;
    }
    int rc = cm_config_parse_argv(&srv_config_table, argc, argv, err, sizeof(err));
    if (rc == 1) {
        srv_usage();
        exit(0);
    }
    if (rc == 2) {
        printf("crescent-master %s (Redis %s compatible)\n", SRV_VERSION, SRV_REDIS_VERSION);
        exit(0);
    }
    if (rc < 0) {
        fprintf(stderr, "crescent-master: %s\n", err);
        return 1;
    }
    if (argc > 1 && strncmp(argv[1], "--", 2) != 0)
        snprintf(srv_config_file, sizeof(srv_config_file), "%s", argv[1]);
    if (cm_log_open(srv_cfg.logfile, 'M') < 0) {
        fprintf(stderr, "crescent-master: cannot open log file %s\n", srv_cfg.logfile);
        return 1;
    }
    cm_log_set_level((enum cm_log_level)srv_cfg.loglevel);
    if (srv_config_resolve() && srv_cfg.enable_ha && srv_cfg.memory > 0)
        cm_log(CM_LOG_WARNING, "server",
               "enable_ha with memory %lld: values SET into the embedded segment are not in the "
               "op-log and are lost on fail-over (without --memory an HA master keeps none, and "
               "SET places values in the pool)",
               srv_cfg.memory);
    if (srv_cfg.memory > 0 && srv_cfg.memory < (1 << 20)) {
        fprintf(stderr, "crescent-master: memory must be 0 (no embedded segment) or at least "
                        "1mb\n");
        return 1;
    }
    if (srv_cfg.ssd_offload_path[0] && srv_cfg.memory == 0) {
        fprintf(stderr, "crescent-master: ssd_offload_path is the SSD tier of the embedded "
                        "segment and needs memory > 0\n");
        return 1;
    }
    if (srv_cfg.ssd_offload_path[0] && !srv_cfg.enable_offload) {
        fprintf(stderr, "crescent-master: ssd_offload_path needs enable_offload\n");
        return 1;
    }
    srv_db_high_watermark = srv_cfg.eviction_high_watermark_ratio;
    srv_db_evict_ratio = srv_cfg.eviction_ratio;
    srv_nworkers = srv_cfg.threads > 0 ? (unsigned)srv_cfg.threads : srv_default_threads();
    if (srv_pubsub_init(srv_nworkers, err, sizeof(err)) < 0) {
        fprintf(stderr, "crescent-master: %s\n", err);
        return 1;
    }
    return 0;
}

/*
 * jemalloc's start-up options (read before the first allocation; the MALLOC_CONF environment
 * variable still overrides them; ignored when the server is built without jemalloc): the heap
 * on transparent huge pages. The pool's metadata then sits on 2 MiB pages, so the fork() of a
 * snapshot copies one page-table entry where it copied 512 and the pool is held locked for a
 * fraction of the time (docs/snapshots.md, "Costs"). A write to a shared huge page after the
 * fork copies only its 4 KiB (the kernel splits the mapping), so copy-on-write stays small.
 */
extern const char *malloc_conf;
const char *malloc_conf = "thp:always,metadata_thp:always";

int main(int argc, char **argv) {
    if (srv_startup(argc, argv) != 0)
        return 1;
    srv_start_wall_ms = cm_wall_ms();
    srv_start_mono_ms = cm_mono_ms();
    for (int i = 0; i < 40; i++)
        srv_run_id[i] = "0123456789abcdef"[cm_rand64() & 15];
    ssize_t n = readlink("/proc/self/exe", srv_executable, sizeof(srv_executable) - 1);
    srv_executable[n > 0 ? n : 0] = '\0';
    srv_raise_fd_limit();
    srv_signals();
    int rc = srv_cfg.memory > 0
                 ? srv_seg_create("crescent-master", (uint64_t)srv_cfg.memory, &srv_segment)
                 : 0;
    if (rc < 0) {
        cm_log(CM_LOG_WARNING, "server", "cannot create the %lld-byte segment: %s", srv_cfg.memory,
               strerror(-rc));
        return 1;
    }
    srv_db_init(srv_segment);
    char err[768];
    if (srv_offload_start(err, sizeof(err)) < 0) {
        fprintf(stderr, "crescent-master: %s\n", err);
        cm_log(CM_LOG_WARNING, "server", "%s", err);
        return 1;
    }
    srv_cmd_init();
    if (srv_mc_start() < 0)
        return 1;
    if (srv_snapshot_start() < 0)
        return 1;
    if (srv_pseg_start() < 0)
        return 1;
    if (srv_ha_start(err, sizeof(err)) < 0) {
        cm_log(CM_LOG_WARNING, "ha", "cannot start HA mode: %s", err);
        fprintf(stderr, "crescent-master: cannot start HA mode: %s\n", err);
        return 1;
    }
    cm_log(CM_LOG_NOTICE, "server",
           "crescent-master %s (Redis %s compatible), pid %d, segment %lld bytes, port %lld",
           SRV_VERSION, SRV_REDIS_VERSION, (int)getpid(), srv_cfg.memory, srv_cfg.port);
    srv_http_start(srv_cfg.metrics_host, (int)srv_cfg.metrics_port);
    int status = srv_net_run();
    srv_http_stop();
    srv_ha_stop();
    srv_snapshot_stop();
    srv_pkv_stop();
    srv_pseg_stop();
    srv_mc_stop();
    cm_log(CM_LOG_NOTICE, "server", "shutting down");
    srv_offload_stop();
    srv_db_fini();
    srv_offload_close();
    srv_seg_destroy(srv_segment);
    cm_config_fini(&srv_config_table);
    cm_log(CM_LOG_NOTICE, "server", "bye");
    return status;
}
