/* SPDX-License-Identifier: Apache-2.0 */
/* Server commands: COMMAND, CONFIG, INFO, TIME, SHUTDOWN. */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_cmdstat.h"
#include "server/srv_db.h"
#include "server/srv_defer.h"
#include "server/srv_ha.h"
#include "server/srv_offload.h"
#include "server/srv_pool_kv.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"
#include "server/srv_snapshot.h"

#include "common/cm_atomic.h"
#include "common/cm_glob.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "redis-compat/resp_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

/* ---------------------------------------------------------------- COMMAND */

static void srv_reply_flags(struct srv_client *c, unsigned flags) {
    long n = 0;
    for (int i = 0; i < RC_CMD_NFLAGS; i++)
        n += (flags >> i) & 1u;
    resp_add_set_hdr(&c->out, c->proto, n);
    for (int i = 0; i < RC_CMD_NFLAGS; i++)
        if ((flags >> i) & 1u)
            resp_add_simple(&c->out, rc_flag_name(i));
}

static void srv_reply_command_info(struct srv_client *c, const struct rc_command_info *ci) {
    resp_add_array_hdr(&c->out, 10);
    resp_add_bulk_cstr(&c->out, ci->name);
    resp_add_int(&c->out, ci->arity);
    srv_reply_flags(c, ci->flags);
    resp_add_int(&c->out, ci->first_key);
    resp_add_int(&c->out, ci->last_key);
    resp_add_int(&c->out, ci->step);
    long ncat = 0;
    for (int i = 0; i < RC_ACL_NCATEGORIES; i++)
        ncat += (ci->acl_categories >> i) & 1u;
    resp_add_set_hdr(&c->out, c->proto, ncat);
    for (int i = 0; i < RC_ACL_NCATEGORIES; i++)
        if ((ci->acl_categories >> i) & 1u) {
            char cat[48];
            snprintf(cat, sizeof(cat), "@%s", rc_acl_category_name(i));
            resp_add_simple(&c->out, cat);
        }
    resp_add_set_hdr(&c->out, c->proto, 0); /* tips */
    resp_add_array_hdr(&c->out, 0);         /* key specifications */
    resp_add_array_hdr(&c->out, ci->nsub);
    for (int i = 0; i < ci->nsub; i++)
        srv_reply_command_info(c, &ci->subcommands[i]);
}

static void srv_reply_command_doc(struct srv_client *c, const struct rc_command_info *ci) {
    resp_add_map_hdr(&c->out, c->proto, ci->nsub ? 5 : 4);
    resp_add_bulk_cstr(&c->out, "summary");
    resp_add_bulk_cstr(&c->out, ci->summary ? ci->summary : "");
    resp_add_bulk_cstr(&c->out, "since");
    resp_add_bulk_cstr(&c->out, ci->since ? ci->since : "");
    resp_add_bulk_cstr(&c->out, "group");
    resp_add_bulk_cstr(&c->out, ci->group ? ci->group : "");
    resp_add_bulk_cstr(&c->out, "complexity");
    resp_add_bulk_cstr(&c->out, ci->complexity ? ci->complexity : "");
    if (ci->nsub) {
        resp_add_bulk_cstr(&c->out, "subcommands");
        resp_add_map_hdr(&c->out, c->proto, ci->nsub);
        for (int i = 0; i < ci->nsub; i++) {
            resp_add_bulk_cstr(&c->out, ci->subcommands[i].name);
            srv_reply_command_doc(c, &ci->subcommands[i]);
        }
    }
}

/* The table entries of commands this server serves. */
static const struct rc_command_info *srv_info_at(size_t i) {
    size_t n;
    const struct rc_command_info *t = rc_command_table(&n);
    return i < n ? &t[i] : NULL;
}

void srv_command_command(struct srv_client *c) {
    size_t n;
    rc_command_table(&n);
    if (c->argc == 1) {
        resp_add_array_hdr(&c->out, (long)n);
        for (size_t i = 0; i < n; i++)
            srv_reply_command_info(c, srv_info_at(i));
    } else if (srv_arg_is(c, 1, "count")) {
        resp_add_int(&c->out, (long long)n);
    } else if (srv_arg_is(c, 1, "list")) {
        long total = (long)n;
        for (size_t i = 0; i < n; i++)
            total += srv_info_at(i)->nsub;
        resp_add_array_hdr(&c->out, total);
        for (size_t i = 0; i < n; i++) {
            const struct rc_command_info *ci = srv_info_at(i);
            resp_add_bulk_cstr(&c->out, ci->name);
            for (int k = 0; k < ci->nsub; k++)
                resp_add_bulk_cstr(&c->out, ci->subcommands[k].name);
        }
    } else if (srv_arg_is(c, 1, "info")) {
        if (c->argc == 2) {
            resp_add_array_hdr(&c->out, (long)n);
            for (size_t i = 0; i < n; i++)
                srv_reply_command_info(c, srv_info_at(i));
            return;
        }
        resp_add_array_hdr(&c->out, c->argc - 2);
        for (int i = 2; i < c->argc; i++) {
            const struct rc_command_info *ci = rc_command_lookup(c->argv[i].p, c->argv[i].len);
            if (ci)
                srv_reply_command_info(c, ci);
            else
                resp_add_null_array(&c->out, c->proto);
        }
    } else if (srv_arg_is(c, 1, "docs")) {
        if (c->argc == 2) {
            resp_add_map_hdr(&c->out, c->proto, (long)n);
            for (size_t i = 0; i < n; i++) {
                resp_add_bulk_cstr(&c->out, srv_info_at(i)->name);
                srv_reply_command_doc(c, srv_info_at(i));
            }
            return;
        }
        long found = 0;
        for (int i = 2; i < c->argc; i++)
            found += rc_command_lookup(c->argv[i].p, c->argv[i].len) != NULL;
        resp_add_map_hdr(&c->out, c->proto, found);
        for (int i = 2; i < c->argc; i++) {
            const struct rc_command_info *ci = rc_command_lookup(c->argv[i].p, c->argv[i].len);
            if (!ci)
                continue;
            resp_add_bulk_cstr(&c->out, ci->name);
            srv_reply_command_doc(c, ci);
        }
    } else if (srv_arg_is(c, 1, "help")) {
        resp_add_array_hdr(&c->out, 5);
        resp_add_simple(&c->out,
                        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
        resp_add_simple(&c->out, "COUNT");
        resp_add_simple(&c->out, "INFO [<command-name> ...]");
        resp_add_simple(&c->out, "DOCS [<command-name> ...]");
        resp_add_simple(&c->out, "LIST");
    } else {
        srv_reply_errorf(c, "ERR unknown subcommand '%.*s'. Try COMMAND HELP.", (int)c->argv[1].len,
                         c->argv[1].p);
    }
}

/* ---------------------------------------------------------------- CONFIG */

struct srv_cfg_get_ctx {
    struct cm_buf buf;
    long n;
    const char **seen;
    int nseen;
};

static void srv_config_visit(const struct cm_cfg_entry *e, const char *value, void *arg) {
    struct srv_cfg_get_ctx *g = arg;
    for (int i = 0; i < g->nseen; i++)
        if (g->seen[i] == e->name)
            return;
    g->seen = cm_realloc(g->seen, (size_t)(g->nseen + 1) * sizeof(*g->seen));
    g->seen[g->nseen++] = e->name;
    resp_add_bulk_cstr(&g->buf, e->name);
    resp_add_bulk_cstr(&g->buf, value);
    g->n++;
}

static void srv_config_get(struct srv_client *c) {
    struct srv_cfg_get_ctx g = {.n = 0};
    cm_buf_init(&g.buf);
    for (int i = 2; i < c->argc; i++) {
        char pat[256];
        snprintf(pat, sizeof(pat), "%.*s", (int)c->argv[i].len, c->argv[i].p);
        cm_config_get_matching(&srv_config_table, pat, srv_config_visit, &g);
    }
    resp_add_map_hdr(&c->out, c->proto, g.n);
    cm_buf_append(&c->out, g.buf.data, g.buf.len);
    cm_buf_fini(&g.buf);
    cm_free(g.seen);
}

static void srv_config_set(struct srv_client *c) {
    if (c->argc % 2 != 0) {
        srv_reply_wrong_arity(c, "config|set");
        return;
    }
    for (int i = 2; i < c->argc; i += 2) {
        char name[256], err[512];
        char *value = cm_strndup(c->argv[i + 1].p, c->argv[i + 1].len);
        snprintf(name, sizeof(name), "%.*s", (int)c->argv[i].len, c->argv[i].p);
        int rc = cm_config_set(&srv_config_table, name, value, 0, err, sizeof(err));
        cm_free(value);
        if (rc < 0) {
            srv_reply_error(c, err);
            return;
        }
    }
    srv_reply_ok(c);
}

void srv_config_command(struct srv_client *c) {
    if (srv_arg_is(c, 1, "get")) {
        srv_config_get(c);
    } else if (srv_arg_is(c, 1, "set")) {
        srv_config_set(c);
    } else if (srv_arg_is(c, 1, "resetstat")) {
        srv_db_reset_stats();
        cm_pcounter_reset(&srv_stats.total_commands);
        srv_cmdstat_reset();
        cm_atomic_store_relaxed(&srv_stats.total_connections, 0);
        cm_atomic_store_relaxed(&srv_stats.rejected_connections, 0);
        cm_pcounter_reset(&srv_stats.net_input_bytes);
        cm_pcounter_reset(&srv_stats.net_output_bytes);
        srv_reply_ok(c);
    } else if (srv_arg_is(c, 1, "help")) {
        resp_add_array_hdr(&c->out, 4);
        resp_add_simple(&c->out, "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
        resp_add_simple(&c->out, "GET <pattern>");
        resp_add_simple(&c->out, "SET <directive> <value>");
        resp_add_simple(&c->out, "RESETSTAT");
    } else {
        srv_reply_errorf(c, "ERR unknown subcommand '%.*s'. Try CONFIG HELP.", (int)c->argv[1].len,
                         c->argv[1].p);
    }
}

/* ---------------------------------------------------------------- INFO */

static void srv_info_server(struct cm_buf *b) {
    struct utsname u;
    uname(&u);
    uint64_t up = (cm_mono_ms() - srv_start_mono_ms) / 1000;
    cm_buf_appendf(
        b,
        "# Server\r\nredis_version:%s\r\ncrescent_version:%s\r\nredis_mode:standalone\r\n"
        "os:%s %s %s\r\narch_bits:64\r\nmultiplexing_api:%s\r\nio_backend:%s\r\n"
        "process_id:%d\r\n"
        "run_id:%s\r\ntcp_port:%lld\r\nserver_time_usec:%llu\r\nuptime_in_seconds:%llu\r\n"
        "uptime_in_days:%llu\r\nhz:%lld\r\nio_threads_active:%u\r\nexecutable:%s\r\n"
        "config_file:%s\r\n\r\n",
        SRV_REDIS_VERSION, SRV_VERSION, u.sysname, u.release, u.machine,
        strcmp(srv_io_backend_name(), "uring") == 0 ? "io_uring" : "epoll", srv_io_backend_name(),
        (int)getpid(), srv_run_id, srv_cfg.port, (unsigned long long)cm_wall_us(),
        (unsigned long long)up, (unsigned long long)(up / 86400), srv_cfg.hz, srv_nworkers,
        srv_executable, srv_config_file);
}

static void srv_info_clients(struct cm_buf *b) {
    cm_buf_appendf(
        b,
        "# Clients\r\nconnected_clients:%llu\r\nmaxclients:%lld\r\nblocked_clients:%u\r\n"
        "tracking_clients:0\r\n\r\n",
        (unsigned long long)cm_atomic_load_relaxed(&srv_stats.connected_clients),
        srv_cfg.maxclients, srv_defer_pending());
}

static void srv_human(char *out, size_t n, double bytes) {
    const char *units = "BKMGTP";
    int u = 0;
    while (bytes >= 1024 && u < 5) {
        bytes /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, n, "%.0fB", bytes);
    else
        snprintf(out, n, "%.2f%c", bytes, units[u]);
}

/* Resident set size of this process in bytes (/proc/self/statm), 0 when unreadable. */
static uint64_t srv_rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, resident = 0;
    if (!f)
        return 0;
    int n = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    return n == 2 ? resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static void srv_info_memory(struct cm_buf *b) {
    struct srv_seg_stats ss;
    srv_seg_stats(srv_segment, &ss);
    uint64_t heap = cm_mem_used();
    uint64_t peak;
    uint64_t used = srv_db_used_memory(&peak);
    uint64_t rss = srv_rss_bytes();
    uint64_t sysmem = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char hu[32], hr[32], hp[32], hs[32], hm[32];
    srv_human(hu, sizeof(hu), (double)used);
    srv_human(hr, sizeof(hr), (double)rss);
    srv_human(hp, sizeof(hp), (double)peak);
    srv_human(hs, sizeof(hs), (double)sysmem);
    srv_human(hm, sizeof(hm), (double)ss.size);
    cm_buf_appendf(b,
                   "# Memory\r\nused_memory:%llu\r\nused_memory_human:%s\r\n"
                   "used_memory_rss:%llu\r\nused_memory_rss_human:%s\r\n"
                   "used_memory_peak:%llu\r\nused_memory_peak_human:%s\r\n"
                   "used_memory_peak_perc:%.2f%%\r\nused_memory_heap:%llu\r\n"
                   "used_memory_segment:%llu\r\nused_memory_peak_rss_kb:%ld\r\n"
                   "segment_resident:%llu\r\nsegment_reclaimed:%llu\r\n"
                   "total_system_memory:%llu\r\ntotal_system_memory_human:%s\r\n"
                   "maxmemory:%llu\r\nmaxmemory_human:%s\r\nmaxmemory_policy:allkeys-lru\r\n"
                   "mem_fragmentation_ratio:%.2f\r\nmem_allocator:%s\r\n\r\n",
                   (unsigned long long)used, hu, (unsigned long long)rss, hr,
                   (unsigned long long)peak, hp, peak ? 100.0 * (double)used / (double)peak : 0.0,
                   (unsigned long long)heap, (unsigned long long)ss.used, ru.ru_maxrss,
                   (unsigned long long)ss.resident, (unsigned long long)ss.reclaimed,
                   (unsigned long long)sysmem, hs, (unsigned long long)ss.size, hm,
                   used ? (double)rss / (double)used : 0.0, cm_mem_allocator_name());
}

static void srv_info_stats(struct cm_buf *b) {
    struct srv_db_stats ds;
    srv_db_get_stats(&ds);
    size_t psc, psp, pss;
    srv_pubsub_totals(&psc, &psp, &pss);
    cm_buf_appendf(
        b,
        "# Stats\r\ntotal_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
        "total_net_input_bytes:%llu\r\ntotal_net_output_bytes:%llu\r\nrejected_connections:%llu\r\n"
        "expired_keys:%llu\r\nevicted_keys:%llu\r\nkeyspace_hits:%llu\r\nkeyspace_misses:%llu\r\n"
        "pubsub_channels:%zu\r\npubsub_patterns:%zu\r\npubsubshard_channels:%zu\r\n"
        "total_error_replies:%llu\r\nunexpected_error_replies:0\r\n\r\n",
        (unsigned long long)cm_atomic_load_relaxed(&srv_stats.total_connections),
        (unsigned long long)cm_pcounter_read(&srv_stats.total_commands),
        (unsigned long long)cm_pcounter_read(&srv_stats.net_input_bytes),
        (unsigned long long)cm_pcounter_read(&srv_stats.net_output_bytes),
        (unsigned long long)cm_atomic_load_relaxed(&srv_stats.rejected_connections),
        (unsigned long long)ds.expired_keys, (unsigned long long)ds.evicted_keys,
        (unsigned long long)ds.keyspace_hits, (unsigned long long)ds.keyspace_misses, psc, psp, pss,
        (unsigned long long)cm_pcounter_read(&srv_stats.error_replies));
}

/* Formats a CPU time like Redis: seconds with six decimals. */
static void srv_info_cpu_line(struct cm_buf *b, const char *name, const struct timeval *tv) {
    cm_buf_appendf(b, "%s:%ld.%06ld\r\n", name, (long)tv->tv_sec, (long)tv->tv_usec);
}

/*
 * CPU time of the main thread (worker 0, whose thread id is the process id). From that thread
 * getrusage(RUSAGE_THREAD) is exact; from another worker it is read from /proc in clock ticks.
 * Returns 0, or -1 when neither works.
 */
static int srv_info_main_thread_cpu(struct timeval *sys, struct timeval *user) {
    struct rusage ru;
    if ((pid_t)syscall(SYS_gettid) == getpid()) {
        if (getrusage(RUSAGE_THREAD, &ru) != 0)
            return -1;
        *sys = ru.ru_stime;
        *user = ru.ru_utime;
        return 0;
    }
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)getpid());
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ut, st;
    /* After the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
     * utime stime. */
    if (!p ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0)
        hz = 100;
    user->tv_sec = (time_t)(ut / (unsigned long long)hz);
    user->tv_usec = (suseconds_t)(ut % (unsigned long long)hz * 1000000 / (unsigned long long)hz);
    sys->tv_sec = (time_t)(st / (unsigned long long)hz);
    sys->tv_usec = (suseconds_t)(st % (unsigned long long)hz * 1000000 / (unsigned long long)hz);
    return 0;
}

static void srv_info_cpu(struct cm_buf *b) {
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    cm_buf_appendf(b, "# CPU\r\n");
    srv_info_cpu_line(b, "used_cpu_sys", &self.ru_stime);
    srv_info_cpu_line(b, "used_cpu_user", &self.ru_utime);
    srv_info_cpu_line(b, "used_cpu_sys_children", &children.ru_stime);
    srv_info_cpu_line(b, "used_cpu_user_children", &children.ru_utime);
    struct timeval msys, muser;
    if (srv_info_main_thread_cpu(&msys, &muser) == 0) {
        srv_info_cpu_line(b, "used_cpu_sys_main_thread", &msys);
        srv_info_cpu_line(b, "used_cpu_user_main_thread", &muser);
    }
    cm_buf_appendf(b, "\r\n");
}

static void srv_info_keyspace(struct cm_buf *b) {
    cm_buf_appendf(b, "# Keyspace\r\n");
    uint64_t keys = srv_db_size() + srv_pkv_count(); /* pool objects are keys too */
    if (keys)
        cm_buf_appendf(b, "db0:keys=%llu,expires=%llu,avg_ttl=0\r\n", (unsigned long long)keys,
                       (unsigned long long)srv_db_expires());
    cm_buf_appendf(b, "\r\n");
}

static void srv_info_crescent(struct cm_buf *b) {
    struct srv_seg_stats ss;
    srv_seg_stats(srv_segment, &ss);
    struct srv_db_stats ds;
    srv_db_get_stats(&ds);
    cm_buf_appendf(b,
                   "# Crescent\r\nsegment_size:%llu\r\nsegment_used:%llu\r\n"
                   "segment_largest_free:%llu\r\nsegment_blocks:%llu\r\n"
                   "segment_fragmentation:%.4f\r\nsegment_memfd:%d\r\n"
                   "eviction_high_watermark_ratio:%.2f\r\neviction_ratio:%.2f\r\n"
                   "eviction_cycles:%llu\r\nworker_threads:%u\r\n\r\n",
                   (unsigned long long)ss.size, (unsigned long long)ss.used,
                   (unsigned long long)ss.largest_free, (unsigned long long)ss.nallocs,
                   ss.fragmentation, ss.memfd, srv_cfg.eviction_high_watermark_ratio,
                   srv_cfg.eviction_ratio, (unsigned long long)ds.eviction_cycles, srv_nworkers);
}

static void srv_info_commandstats(struct cm_buf *b) {
    cm_buf_appendf(b, "# Commandstats\r\n");
    for (size_t i = 0; i < srv_cmd_count(); i++) {
        struct srv_cmdstat st;
        srv_cmdstat_read((unsigned)i, &st);
        if (st.calls == 0 && st.rejected == 0)
            continue;
        cm_buf_appendf(b,
                       "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,"
                       "failed_calls=%llu\r\n",
                       srv_cmd_at(i)->name, (unsigned long long)st.calls,
                       (unsigned long long)st.usec,
                       st.calls ? (double)st.usec / (double)st.calls : 0.0,
                       (unsigned long long)st.rejected, (unsigned long long)st.failed);
    }
    cm_buf_appendf(b, "\r\n");
}

struct srv_errstat {
    const char *code;
    uint64_t count;
};

static int srv_errstat_cmp(const void *a, const void *b) {
    return strcmp(((const struct srv_errstat *)a)->code, ((const struct srv_errstat *)b)->code);
}

static void srv_info_errorstats(struct cm_buf *b) {
    cm_buf_appendf(b, "# Errorstats\r\n");
    struct srv_errstat e[SRV_ERRSTAT_MAX];
    size_t n = srv_cmdstat_nerrors();
    for (size_t i = 0; i < n; i++)
        e[i].code = srv_cmdstat_error_at(i, &e[i].count);
    qsort(e, n, sizeof(e[0]), srv_errstat_cmp); /* Redis lists codes in byte order */
    for (size_t i = 0; i < n; i++)
        if (e[i].count)
            cm_buf_appendf(b, "errorstat_%s:count=%llu\r\n", e[i].code,
                           (unsigned long long)e[i].count);
    cm_buf_appendf(b, "\r\n");
}

/* Sections in Redis's order; "extra" ones are printed for INFO all/everything or by name only. */
static const struct {
    const char *name;
    void (*fn)(struct cm_buf *b);
    int extra;
} srv_info_sections[] = {
    {"server", srv_info_server, 0},
    {"clients", srv_info_clients, 0},
    {"memory", srv_info_memory, 0},
    {"stats", srv_info_stats, 0},
    {"cpu", srv_info_cpu, 0},
    {"commandstats", srv_info_commandstats, 1},
    {"errorstats", srv_info_errorstats, 0},
    {"keyspace", srv_info_keyspace, 0},
    {"crescent", srv_info_crescent, 0},
    {"snapshot", srv_snapshot_info, 0},
    {"offload", srv_offload_info, 0},
    {"ha", srv_ha_info, 0},
};
#define SRV_NSECTIONS (sizeof(srv_info_sections) / sizeof(srv_info_sections[0]))

void srv_info_command(struct srv_client *c) {
    int dflt = c->argc == 1, all = 0;
    int want[SRV_NSECTIONS] = {0};
    for (int i = 1; i < c->argc; i++) {
        if (srv_arg_is(c, i, "all") || srv_arg_is(c, i, "everything"))
            all = 1;
        if (srv_arg_is(c, i, "default"))
            dflt = 1;
        for (size_t k = 0; k < SRV_NSECTIONS; k++)
            if (srv_arg_is(c, i, srv_info_sections[k].name))
                want[k] = 1;
    }
    struct cm_buf b;
    cm_buf_init(&b);
    for (size_t k = 0; k < SRV_NSECTIONS; k++)
        if (all || want[k] || (dflt && !srv_info_sections[k].extra))
            srv_info_sections[k].fn(&b);
    if (b.len >= 2)
        b.len -= 2; /* no blank line after the last section */
    resp_add_verbatim(&c->out, c->proto, b.data ? b.data : "", b.len, "txt");
    cm_buf_fini(&b);
}

/* ---------------------------------------------------------------- TIME, SHUTDOWN */

void srv_time_command(struct srv_client *c) {
    uint64_t us = cm_wall_us();
    resp_add_array_hdr(&c->out, 2);
    resp_add_bulk_ll(&c->out, (long long)(us / 1000000));
    resp_add_bulk_ll(&c->out, (long long)(us % 1000000));
}

void srv_shutdown_command(struct srv_client *c) {
    for (int i = 1; i < c->argc; i++) {
        if (srv_arg_is(c, i, "abort")) {
            srv_reply_error(c, "ERR No shutdown in progress.");
            return;
        }
        if (!srv_arg_is(c, i, "nosave") && !srv_arg_is(c, i, "save") && !srv_arg_is(c, i, "now") &&
            !srv_arg_is(c, i, "force")) {
            srv_reply_syntax_error(c);
            return;
        }
    }
    cm_log(CM_LOG_WARNING, "server", "User requested shutdown...");
    c->flags |= SRV_CLIENT_CLOSE_ASAP;
    srv_shutdown_request();
}
