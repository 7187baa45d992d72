/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The master's metrics in the Prometheus text exposition format (0.0.4): names prefixed
 * crescent_, units in the names, counters ending in _total. Every figure comes from counters
 * the workers already keep, so a scrape costs the same with ten keys or ten million.
 */
#include "common/fmacros.h"

#include "server/srv_cmd.h"
#include "server/srv_cmdstat.h"
#include "server/srv_db.h"
#include "server/srv_ha.h"
#include "server/srv_http.h"
#include "server/srv_offload.h"
#include "server/srv_server.h"
#include "server/srv_snapshot.h"

#include "common/cm_atomic.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

/* Writes the HELP and TYPE lines of a metric family. */
static void srv_family(struct cm_buf *b, const char *name, const char *type, const char *help) {
    cm_buf_appendf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void srv_metric_u64(struct cm_buf *b, const char *name, const char *type, const char *help,
                           uint64_t v) {
    srv_family(b, name, type, help);
    cm_buf_appendf(b, "%s %llu\n", name, (unsigned long long)v);
}

static uint64_t srv_rss_bytes(void) {
    unsigned long long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%llu %llu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void srv_metrics_process(struct cm_buf *b) {
    srv_family(b, "crescent_info", "gauge", "Version of the master; always 1.");
    cm_buf_appendf(b, "crescent_info{version=\"%s\",redis_version=\"%s\"} 1\n", SRV_VERSION,
                   SRV_REDIS_VERSION);
    srv_metric_u64(b, "crescent_uptime_seconds", "gauge", "Seconds since the master started.",
                   (cm_mono_ms() - srv_start_mono_ms) / 1000);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    srv_family(b, "crescent_cpu_seconds_total", "counter", "CPU time of the master process.");
    cm_buf_appendf(b, "crescent_cpu_seconds_total{mode=\"user\"} %ld.%06ld\n",
                   (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
    cm_buf_appendf(b, "crescent_cpu_seconds_total{mode=\"system\"} %ld.%06ld\n",
                   (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
    srv_metric_u64(b, "crescent_worker_threads", "gauge", "Event-loop threads serving RESP.",
                   srv_nworkers);
}

static void srv_metrics_memory(struct cm_buf *b) {
    struct srv_seg_stats ss;
    srv_seg_stats(srv_segment, &ss);
    uint64_t heap = cm_mem_used();
    srv_metric_u64(b, "crescent_memory_used_bytes", "gauge",
                   "Memory used by the data set: heap plus segment blocks (INFO used_memory).",
                   heap + ss.used);
    srv_metric_u64(b, "crescent_memory_heap_bytes", "gauge", "Heap bytes allocated.", heap);
    srv_metric_u64(b, "crescent_memory_max_bytes", "gauge",
                   "The memory budget (--memory, INFO maxmemory).", ss.size);
    srv_metric_u64(b, "crescent_memory_rss_bytes", "gauge", "Resident set size of the process.",
                   srv_rss_bytes());
    srv_family(b, "crescent_segments", "gauge", "Mounted memory segments.");
    cm_buf_appendf(b, "crescent_segments 1\n");
    srv_family(b, "crescent_segment_size_bytes", "gauge", "Size of each segment.");
    cm_buf_appendf(b, "crescent_segment_size_bytes{segment=\"embedded\"} %llu\n",
                   (unsigned long long)ss.size);
    srv_family(b, "crescent_segment_used_bytes", "gauge", "Bytes allocated in each segment.");
    cm_buf_appendf(b, "crescent_segment_used_bytes{segment=\"embedded\"} %llu\n",
                   (unsigned long long)ss.used);
    srv_metric_u64(b, "crescent_pool_clients", "gauge",
                   "Clients contributing segments to the pool (the store is planned).", 0);
}

static void srv_metrics_keyspace(struct cm_buf *b) {
    struct srv_db_stats ds;
    srv_db_get_stats(&ds);
    srv_metric_u64(b, "crescent_keys", "gauge", "Keys in the keyspace.", srv_db_size());
    srv_metric_u64(b, "crescent_keys_with_expiry", "gauge", "Keys with a time to live.",
                   srv_db_expires());
    srv_metric_u64(b, "crescent_expired_keys_total", "counter", "Keys removed by expiry.",
                   ds.expired_keys);
    srv_metric_u64(b, "crescent_evicted_keys_total", "counter", "Keys removed by eviction.",
                   ds.evicted_keys);
    srv_metric_u64(b, "crescent_eviction_cycles_total", "counter", "Eviction cycles run.",
                   ds.eviction_cycles);
    srv_metric_u64(b, "crescent_keyspace_hits_total", "counter", "Lookups that found a key.",
                   ds.keyspace_hits);
    srv_metric_u64(b, "crescent_keyspace_misses_total", "counter", "Lookups that found no key.",
                   ds.keyspace_misses);
}

static void srv_metrics_net(struct cm_buf *b) {
    srv_metric_u64(b, "crescent_connected_clients", "gauge", "Open RESP connections.",
                   cm_atomic_load_relaxed(&srv_stats.connected_clients));
    srv_metric_u64(b, "crescent_connections_received_total", "counter",
                   "RESP connections accepted.",
                   cm_atomic_load_relaxed(&srv_stats.total_connections));
    srv_metric_u64(b, "crescent_connections_rejected_total", "counter",
                   "RESP connections refused (maxclients).",
                   cm_atomic_load_relaxed(&srv_stats.rejected_connections));
    srv_metric_u64(b, "crescent_net_input_bytes_total", "counter", "Bytes read from clients.",
                   cm_pcounter_read(&srv_stats.net_input_bytes));
    srv_metric_u64(b, "crescent_net_output_bytes_total", "counter", "Bytes written to clients.",
                   cm_pcounter_read(&srv_stats.net_output_bytes));
}

/* Per-command counters and the latency histogram; commands never called are left out. */
static void srv_metrics_commands(struct cm_buf *b) {
    struct cm_buf calls, failed, rejected, hist;
    cm_buf_init(&calls);
    cm_buf_init(&failed);
    cm_buf_init(&rejected);
    cm_buf_init(&hist);
    for (size_t i = 0; i < srv_cmd_count(); i++) {
        struct srv_cmdstat st;
        srv_cmdstat_read((unsigned)i, &st);
        if (st.calls == 0 && st.rejected == 0)
            continue;
        const char *name = srv_cmd_at(i)->name;
        cm_buf_appendf(&calls, "crescent_commands_total{cmd=\"%s\"} %llu\n", name,
                       (unsigned long long)st.calls);
        cm_buf_appendf(&failed, "crescent_command_failed_total{cmd=\"%s\"} %llu\n", name,
                       (unsigned long long)st.failed);
        cm_buf_appendf(&rejected, "crescent_command_rejected_total{cmd=\"%s\"} %llu\n", name,
                       (unsigned long long)st.rejected);
        uint64_t cum = 0;
        for (int k = 0; k < SRV_LAT_NBUCKETS; k++) {
            cum += st.hist[k];
            if (k < SRV_LAT_NBOUNDS)
                cm_buf_appendf(&hist,
                               "crescent_command_duration_seconds_bucket{cmd=\"%s\",le=\"%g\"} "
                               "%llu\n",
                               name, (double)srv_lat_bounds_us[k] / 1e6, (unsigned long long)cum);
            else
                cm_buf_appendf(&hist,
                               "crescent_command_duration_seconds_bucket{cmd=\"%s\",le=\"+Inf\"} "
                               "%llu\n",
                               name, (unsigned long long)cum);
        }
        cm_buf_appendf(&hist, "crescent_command_duration_seconds_sum{cmd=\"%s\"} %.6f\n", name,
                       (double)st.usec / 1e6);
        cm_buf_appendf(&hist, "crescent_command_duration_seconds_count{cmd=\"%s\"} %llu\n", name,
                       (unsigned long long)cum);
    }
    srv_family(b, "crescent_commands_total", "counter", "Calls of each command.");
    cm_buf_append(b, calls.data, calls.len);
    srv_family(b, "crescent_command_failed_total", "counter",
               "Calls of each command that replied with an error.");
    cm_buf_append(b, failed.data, failed.len);
    srv_family(b, "crescent_command_rejected_total", "counter",
               "Calls refused before they ran (arity, authentication, syntax of the call).");
    cm_buf_append(b, rejected.data, rejected.len);
    srv_family(b, "crescent_command_duration_seconds", "histogram",
               "Time each command spent in its handler.");
    cm_buf_append(b, hist.data, hist.len);
    cm_buf_fini(&calls);
    cm_buf_fini(&failed);
    cm_buf_fini(&rejected);
    cm_buf_fini(&hist);
}

static void srv_metrics_errors(struct cm_buf *b) {
    srv_family(b, "crescent_errors_total", "counter",
               "Error replies by error code (the first word: ERR, WRONGTYPE, OOM, ...).");
    for (size_t i = 0; i < srv_cmdstat_nerrors(); i++) {
        uint64_t n;
        const char *code = srv_cmdstat_error_at(i, &n);
        cm_buf_appendf(b, "crescent_errors_total{code=\"");
        for (const char *p = code; *p; p++) /* label values escape \, " and newline */
            if (*p == '\n')
                cm_buf_append(b, "\\n", 2);
            else
                cm_buf_appendf(b, "%s%c", (*p == '\\' || *p == '"') ? "\\" : "", *p);
        cm_buf_appendf(b, "\"} %llu\n", (unsigned long long)n);
    }
}

/* Snapshots (srv_snapshot.c) and HA mode (srv_ha.c). */
static void srv_metrics_ha(struct cm_buf *b) {
    struct srv_snapshot_stats ss;
    srv_snapshot_stats(&ss);
    srv_family(b, "crescent_snapshots_total", "counter", "Snapshots of the pool metadata written.");
    cm_buf_appendf(b, "crescent_snapshots_total{result=\"ok\"} %llu\n", (unsigned long long)ss.ok);
    cm_buf_appendf(b, "crescent_snapshots_total{result=\"failed\"} %llu\n",
                   (unsigned long long)ss.failed);
    srv_family(b, "crescent_snapshot_last_duration_seconds", "gauge",
               "Fork to publish of the last snapshot.");
    cm_buf_appendf(b, "crescent_snapshot_last_duration_seconds %.3f\n",
                   (double)ss.last_duration_ms / 1e3);
    srv_family(b, "crescent_snapshot_last_pause_seconds", "gauge",
               "How long the pool was locked around fork() for the last snapshot.");
    cm_buf_appendf(b, "crescent_snapshot_last_pause_seconds %.6f\n",
                   (double)ss.last_pause_us / 1e6);
    srv_metric_u64(b, "crescent_snapshot_last_objects", "gauge", "Objects in the last snapshot.",
                   ss.last_objects);
    srv_metric_u64(b, "crescent_snapshot_restored_objects", "gauge",
                   "Objects loaded from a snapshot at start.", ss.restored_objects);
    if (!srv_ha_enabled())
        return;
    struct srv_ha_view v;
    srv_ha_get_view(&v);
    srv_metric_u64(b, "crescent_ha_serving", "gauge",
                   "1 when this master is the serving leader with a valid lease.",
                   (uint64_t)(v.serving != 0));
    srv_metric_u64(b, "crescent_ha_epoch", "gauge", "Epoch of the current or last known leader.",
                   v.epoch);
}

void srv_metrics_render(struct cm_buf *out) {
    srv_metrics_process(out);
    srv_metrics_memory(out);
    srv_metrics_keyspace(out);
    srv_metrics_net(out);
    srv_metrics_commands(out);
    srv_metrics_errors(out);
    srv_offload_metrics(out);
    srv_metrics_ha(out);
}
