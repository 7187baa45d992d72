/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-client's metrics for the admin HTTP server: the Prometheus text exposition (format
 * 0.0.4; names prefixed crescent_client_, units in the names, counters ending in _total) and
 * the /metrics/summary text. Transfer figures come from the store's counters
 * (crescent_store_metrics: bytes, transfers and summed latency per transport), dummy figures
 * from the dummy-client server, segment figures from the caller (the master's record). Reads
 * counters only; any thread.
 */
#include "common/fmacros.h"

#include "client/daemon/cli_d.h"
#include "client/store/cli_store.h"
#include "common/cm_time.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

/* Transports in crescent_store_metrics order. */
static const char *const cli_d_transports[4] = {"local", "shm", "tcp", "other"};

static void cli_d_family(struct cm_buf *b, const char *name, const char *type, const char *help) {
    cm_buf_appendf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void cli_d_u64(struct cm_buf *b, const char *name, const char *type, const char *help,
                      uint64_t v) {
    cli_d_family(b, name, type, help);
    cm_buf_appendf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* A label value: backslash, double quote and newline escaped. */
static void cli_d_label(struct cm_buf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '\n') {
            cm_buf_append(b, "\\n", 2);
        } else {
            cm_buf_appendf(b, "%s%c", *s == '\\' || *s == '"' ? "\\" : "", *s);
        }
    }
}

static uint64_t cli_d_rss_bytes(void) {
    unsigned long long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%llu %llu", &size, &resident) != 2) {
        resident = 0;
    }
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void cli_d_metrics_process(const struct cli_d_http_ctx *ctx, bool master_ok,
                                  struct cm_buf *b) {
    cli_d_family(b, "crescent_client_info", "gauge",
                 "The daemon's version, client id and transfer protocol; always 1.");
    cm_buf_appendf(b, "crescent_client_info{version=\"%s\",client_id=\"", CLI_D_VERSION);
    cli_d_label(b, crescent_store_client_id(ctx->st));
    cm_buf_appendf(b, "\",protocol=\"");
    cli_d_label(b, ctx->protocol);
    cm_buf_appendf(b, "\"} 1\n");
    cli_d_u64(b, "crescent_client_uptime_seconds", "gauge", "Seconds since the daemon started.",
              (cm_mono_ms() - ctx->start_ms) / 1000);
    cli_d_u64(b, "crescent_client_master_connected", "gauge",
              "1 when the master answers (ping thread and this scrape), else 0.", master_ok);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    cli_d_family(b, "crescent_client_cpu_seconds_total", "counter",
                 "CPU time of the daemon process.");
    cm_buf_appendf(b, "crescent_client_cpu_seconds_total{mode=\"user\"} %ld.%06ld\n",
                   (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
    cm_buf_appendf(b, "crescent_client_cpu_seconds_total{mode=\"system\"} %ld.%06ld\n",
                   (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
    cli_d_u64(b, "crescent_client_memory_rss_bytes", "gauge",
              "Resident set size of the daemon (segment pages it has touched included).",
              cli_d_rss_bytes());
}

/* One per-transport family: v[0..4) under label transport. */
static void cli_d_per_transport(struct cm_buf *b, const char *name, const char *type,
                                const char *help, const uint64_t *v) {
    cli_d_family(b, name, type, help);
    for (int i = 0; i < 4; i++) {
        cm_buf_appendf(b, "%s{transport=\"%s\"} %llu\n", name, cli_d_transports[i],
                       (unsigned long long)v[i]);
    }
}

/* A summary without quantiles: the summed latency (µs in us[]) and the transfer count. */
static void cli_d_duration(struct cm_buf *b, const char *name, const char *help, const uint64_t *us,
                           const uint64_t *ops) {
    cli_d_family(b, name, "summary", help);
    for (int i = 0; i < 4; i++) {
        cm_buf_appendf(b, "%s_sum{transport=\"%s\"} %llu.%06llu\n", name, cli_d_transports[i],
                       (unsigned long long)(us[i] / 1000000),
                       (unsigned long long)(us[i] % 1000000));
        cm_buf_appendf(b, "%s_count{transport=\"%s\"} %llu\n", name, cli_d_transports[i],
                       (unsigned long long)ops[i]);
    }
}

static void cli_d_metrics_transfer(const struct cli_d_http_ctx *ctx, struct cm_buf *b) {
    struct crescent_store_metrics m;
    crescent_store_metrics(ctx->st, &m);
    cli_d_per_transport(b, "crescent_client_transfer_read_bytes_total", "counter",
                        "Bytes read from replicas, by transport (local: a memcpy from this "
                        "daemon's own segment).",
                        m.read_bytes);
    cli_d_per_transport(b, "crescent_client_transfer_write_bytes_total", "counter",
                        "Bytes written to replicas, by transport.", m.write_bytes);
    cli_d_duration(b, "crescent_client_transfer_read_duration_seconds",
                   "Time spent in replica reads, by transport; _count is the number of reads.",
                   m.read_us, m.read_ops);
    cli_d_duration(b, "crescent_client_transfer_write_duration_seconds",
                   "Time spent in replica writes, by transport; _count is the number of writes.",
                   m.write_us, m.write_ops);
    cli_d_u64(b, "crescent_client_staging_bytes_total", "counter",
              "Bytes copied through the local staging buffer (the copying calls).",
              m.staging_bytes);
    cli_d_u64(b, "crescent_client_local_buffer_size_bytes", "gauge",
              "Size of the staging buffer (--local_buffer_size).", ctx->local_buffer_size);
    cli_d_u64(b, "crescent_client_remounts_total", "counter",
              "Segment remounts after NEED_REMOUNT or a master restart.", m.remounts);
    cli_d_u64(b, "crescent_client_master_reconnects_total", "counter",
              "Reconnections of the store to the master.", m.master_reconnects);
}

/* The SSD tier's staging area (docs/storage.md, "Reads"): only with --ssd_offload_path. */
static void cli_d_metrics_offload(const struct cli_d_http_ctx *ctx, struct cm_buf *b) {
    struct cli_ssd_stats o;
    if (cli__ssd_stats(ctx->st, &o) < 0) {
        return;
    }
    cli_d_u64(b, "crescent_client_offload_staging_capacity_bytes", "gauge",
              "Size of the SSD tier's staging area (MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES).",
              o.capacity);
    cli_d_u64(b, "crescent_client_offload_staging_bytes", "gauge",
              "Bytes staged now for peers' reads of offloaded values.", o.in_use);
    cli_d_u64(b, "crescent_client_offload_staged_total", "counter",
              "Offloaded values staged for peers' reads.", o.staged);
    cli_d_u64(b, "crescent_client_offload_staged_bytes_total", "counter",
              "Bytes staged for peers' reads.", o.staged_bytes);
    cli_d_u64(b, "crescent_client_offload_staging_released_total", "counter",
              "Staged values released by their reader.", o.released);
    cli_d_u64(b, "crescent_client_offload_staging_gc_freed_total", "counter",
              "Staged values freed by the GC (not released within "
              "MOONCAKE_OFFLOAD_CLIENT_BUFFER_GC_TTL_MS).",
              o.gc_freed);
    cli_d_u64(b, "crescent_client_offload_staging_refused_total", "counter",
              "Stage requests refused because the staging area was full.", o.refused_full);
    cli_d_u64(b, "crescent_client_offload_disk_keys", "gauge",
              "Objects in the SSD tier's store now.", o.disk_keys);
    cli_d_u64(b, "crescent_client_offload_disk_bytes", "gauge",
              "Value bytes of the objects in the SSD tier's store now.", o.disk_bytes);
    cli_d_u64(b, "crescent_client_offload_disk_lost_total", "counter",
              "Records the store dropped by itself (eviction, CRC failure), reported to the "
              "master (MC.OFFLOADEVICTED).",
              o.disk_lost);
    cli_d_u64(b, "crescent_client_offload_disk_removed_total", "counter",
              "Records deleted because the master removed their objects (MC.OFFLOADREMOVES).",
              o.disk_removed);
}

static void cli_d_metrics_dummies(struct cli_d_server *dummies, struct cm_buf *b) {
    struct crescent_store_daemon_stats s = {0};
    if (dummies != NULL) {
        cli_d_serve_stats(dummies, &s);
    }
    cli_d_u64(b, "crescent_client_dummies", "gauge",
              "Dummy clients attached now (distinct memory pools).", s.dummies);
    cli_d_u64(b, "crescent_client_dummy_connections", "gauge", "Dummy connections open now.",
              s.connections);
    cli_d_u64(b, "crescent_client_dummy_connections_expired_total", "counter",
              "Dummy connections dropped after --client_live_ttl_sec of silence.",
              s.dummies_expired);
    cli_d_u64(b, "crescent_client_dummy_connections_closed_total", "counter",
              "Dummy connections closed by the dummy (exit, crash, destroy).", s.dummies_closed);
    cli_d_u64(b, "crescent_client_dummy_requests_total", "counter",
              "Requests served to dummy clients.", s.requests);
    cli_d_u64(b, "crescent_client_dummy_copied_bytes_total", "counter",
              "Payload bytes that crossed the dummy socket (the copying calls).", s.copied_bytes);
    cli_d_u64(b, "crescent_client_dummy_zero_copy_bytes_total", "counter",
              "Bytes moved straight between a segment and a dummy's pool.", s.zero_copy_bytes);
    cli_d_u64(b, "crescent_client_dummy_protocol_errors_total", "counter",
              "Malformed dummy requests refused.", s.protocol_errors);
}

static void cli_d_metrics_segments(const struct cli_d_seg_view *segs, size_t n, struct cm_buf *b) {
    cli_d_u64(b, "crescent_client_segments", "gauge", "Segments this daemon contributes.", n);
    cli_d_family(b, "crescent_client_segment_size_bytes", "gauge", "Size of each segment.");
    for (size_t i = 0; i < n; i++) {
        cm_buf_appendf(b, "crescent_client_segment_size_bytes{segment=\"");
        cli_d_label(b, segs[i].name);
        cm_buf_appendf(b, "\"} %llu\n", (unsigned long long)segs[i].size);
    }
    cli_d_family(b, "crescent_client_segment_mounted", "gauge",
                 "1 when the master lists the segment with status OK, else 0.");
    for (size_t i = 0; i < n; i++) {
        cm_buf_appendf(b, "crescent_client_segment_mounted{segment=\"");
        cli_d_label(b, segs[i].name);
        cm_buf_appendf(b, "\"} %d\n", segs[i].mounted ? 1 : 0);
    }
    cli_d_family(b, "crescent_client_segment_used_bytes", "gauge",
                 "Bytes of values in each segment, as the master counts them (absent while "
                 "the segment is not mounted or the master does not answer).");
    for (size_t i = 0; i < n; i++) {
        if (segs[i].mounted) {
            cm_buf_appendf(b, "crescent_client_segment_used_bytes{segment=\"");
            cli_d_label(b, segs[i].name);
            cm_buf_appendf(b, "\"} %llu\n", (unsigned long long)segs[i].used);
        }
    }
}

/* Public: see cli_d.h. */
void cli_d_metrics_render(const struct cli_d_http_ctx *ctx, struct cli_d_server *dummies,
                          const struct cli_d_seg_view *segs, size_t n, bool master_ok,
                          struct cm_buf *out) {
    cli_d_metrics_process(ctx, master_ok, out);
    cli_d_metrics_transfer(ctx, out);
    cli_d_metrics_offload(ctx, out);
    cli_d_metrics_dummies(dummies, out);
    cli_d_metrics_segments(segs, n, out);
}

/* Public: see cli_d.h. */
void cli_d_metrics_summary(const struct cli_d_http_ctx *ctx, struct cli_d_server *dummies,
                           const struct cli_d_seg_view *segs, size_t n, bool master_ok,
                           struct cm_buf *out) {
    struct crescent_store_metrics m;
    crescent_store_metrics(ctx->st, &m);
    cm_buf_appendf(out, "crescent-client %s: client %s, master %s (%s), protocol %s, up %llu s\n",
                   CLI_D_VERSION, crescent_store_client_id(ctx->st), ctx->master,
                   master_ok ? "connected" : "unreachable", ctx->protocol,
                   (unsigned long long)((cm_mono_ms() - ctx->start_ms) / 1000));
    for (int i = 0; i < 4; i++) {
        uint64_t r = m.read_ops[i], w = m.write_ops[i];
        if (r + w == 0) {
            continue;
        }
        cm_buf_appendf(out,
                       "transfer %s: read %llu bytes in %llu ops (avg %llu us), write %llu bytes "
                       "in %llu ops (avg %llu us)\n",
                       cli_d_transports[i], (unsigned long long)m.read_bytes[i],
                       (unsigned long long)r, (unsigned long long)(r ? m.read_us[i] / r : 0),
                       (unsigned long long)m.write_bytes[i], (unsigned long long)w,
                       (unsigned long long)(w ? m.write_us[i] / w : 0));
    }
    for (size_t i = 0; i < n; i++) {
        cm_buf_appendf(out, "segment %s: %llu bytes, %s", segs[i].name,
                       (unsigned long long)segs[i].size, segs[i].status);
        if (segs[i].mounted) {
            cm_buf_appendf(out, ", %llu used", (unsigned long long)segs[i].used);
        }
        cm_buf_append(out, "\n", 1);
    }
    struct crescent_store_daemon_stats s = {0};
    if (dummies != NULL) {
        cli_d_serve_stats(dummies, &s);
    }
    cm_buf_appendf(out,
                   "dummies: %llu attached, %llu connections, %llu requests, %llu bytes zero-copy, "
                   "%llu bytes copied; staging %llu bytes\n",
                   (unsigned long long)s.dummies, (unsigned long long)s.connections,
                   (unsigned long long)s.requests, (unsigned long long)s.zero_copy_bytes,
                   (unsigned long long)s.copied_bytes, (unsigned long long)m.staging_bytes);
}
