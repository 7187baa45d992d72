/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-command statistics (calls, failed and rejected calls, time, a latency histogram) and error
 * counts by error code, for INFO commandstats / errorstats and the Prometheus /metrics page.
 * Each thread counts into its own table (no shared cache line on the request path); readers sum
 * the tables. Counters are relaxed atomics: a reader running beside writers sees recent values.
 */
#ifndef CRESCENT_SERVER_SRV_CMDSTAT_H
#define CRESCENT_SERVER_SRV_CMDSTAT_H

#include <stddef.h>
#include <stdint.h>

/* Latency histogram: buckets with these upper bounds (microseconds), plus one for +Inf. */
#define SRV_LAT_NBOUNDS  15
#define SRV_LAT_NBUCKETS (SRV_LAT_NBOUNDS + 1)
extern const uint64_t srv_lat_bounds_us[SRV_LAT_NBOUNDS];

/* At most this many distinct error codes are counted (Redis keeps 128). */
#define SRV_ERRSTAT_MAX 128

/* Sums over all threads for one command. */
struct srv_cmdstat {
    uint64_t calls;    /* completed calls */
    uint64_t failed;   /* calls that replied with an error */
    uint64_t rejected; /* refused before the call (arity, auth, unknown subcommand, ...) */
    uint64_t usec;     /* total time in the handler */
    uint64_t hist[SRV_LAT_NBUCKETS]; /* calls per latency bucket (not cumulative) */
};

/* Sizes the tables for ncmds commands (indexes 0..ncmds-1). Call once before the workers start. */
void srv_cmdstat_init(size_t ncmds);

/* Counts one call of command idx that took ns nanoseconds; failed = it replied an error. */
void srv_cmdstat_call(unsigned idx, uint64_t ns, int failed);

/* Counts a call of command idx refused before it ran. */
void srv_cmdstat_reject(unsigned idx);

/*
 * Counts an error reply by its code: the text up to the first space ("ERR", "WRONGTYPE"), as
 * Redis's errorstats. Codes past SRV_ERRSTAT_MAX distinct ones are not counted. Any thread.
 */
void srv_cmdstat_error(const char *msg, size_t len);

/* Number of error replies sent by the calling thread so far (to tell whether a call failed). */
uint64_t srv_cmdstat_thread_errors(void);

/* Sums command idx over all threads into out. Any thread. */
void srv_cmdstat_read(unsigned idx, struct srv_cmdstat *out);

/* Number of distinct error codes seen; srv_cmdstat_error_at() names the i-th and its count. */
size_t srv_cmdstat_nerrors(void);
const char *srv_cmdstat_error_at(size_t i, uint64_t *count);

/* Zeroes every counter (CONFIG RESETSTAT). Error code names stay known. */
void srv_cmdstat_reset(void);

#endif
