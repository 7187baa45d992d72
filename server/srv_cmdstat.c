/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-command and per-error-code statistics, one table per thread. See srv_cmdstat.h.
 * A thread writes only its own table (plain load + store on relaxed atomics, no locked
 * instruction on the request path); readers add the tables up.
 */
#include "common/fmacros.h"

#include "server/srv_cmdstat.h"

#include "common/cm_atomic.h"
#include "common/cm_mem.h"

#include <pthread.h>
#include <string.h>

const uint64_t srv_lat_bounds_us[SRV_LAT_NBOUNDS] = {
    10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000};

struct srv_cmdstat_slot {
    _Atomic uint64_t calls, failed, rejected, ns;
    _Atomic uint64_t hist[SRV_LAT_NBUCKETS];
};

struct srv_cmdstat_tab {
    _Atomic uint64_t errors_sent;
    _Atomic uint64_t err[SRV_ERRSTAT_MAX];
    struct srv_cmdstat_slot cmd[];
};

/* Threads beyond this many (workers, the main thread, the HTTP thread) are not counted. */
#define SRV_CMDSTAT_TABS 512

static struct srv_cmdstat_tab *_Atomic srv_tabs[SRV_CMDSTAT_TABS];
static _Atomic unsigned srv_ntabs;
static size_t srv_ncmds;
static __thread struct srv_cmdstat_tab *srv_my_tab;
static __thread int srv_my_tab_full;

static pthread_mutex_t srv_err_lock = PTHREAD_MUTEX_INITIALIZER;
static char srv_err_names[SRV_ERRSTAT_MAX][48];
static _Atomic size_t srv_nerr_names;

void srv_cmdstat_init(size_t ncmds) {
    srv_ncmds = ncmds;
}

static struct srv_cmdstat_tab *srv_tab(void) {
    if (srv_my_tab || srv_my_tab_full)
        return srv_my_tab;
    unsigned i = atomic_fetch_add_explicit(&srv_ntabs, 1, memory_order_relaxed);
    if (i >= SRV_CMDSTAT_TABS) {
        srv_my_tab_full = 1;
        return NULL;
    }
    struct srv_cmdstat_tab *t =
        cm_calloc(1, sizeof(*t) + srv_ncmds * sizeof(struct srv_cmdstat_slot));
    atomic_store_explicit(&srv_tabs[i], t, memory_order_release);
    srv_my_tab = t;
    return t;
}

/* Adds n to a counter only this thread writes. */
static inline void srv_bump(_Atomic uint64_t *p, uint64_t n) {
    atomic_store_explicit(p, atomic_load_explicit(p, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static unsigned srv_lat_bucket(uint64_t us) {
    unsigned b = 0;
    while (b < SRV_LAT_NBOUNDS && us > srv_lat_bounds_us[b])
        b++;
    return b;
}

void srv_cmdstat_call(unsigned idx, uint64_t ns, int failed) {
    struct srv_cmdstat_tab *t = srv_tab();
    if (!t || idx >= srv_ncmds)
        return;
    struct srv_cmdstat_slot *s = &t->cmd[idx];
    srv_bump(&s->calls, 1);
    srv_bump(&s->ns, ns);
    if (failed)
        srv_bump(&s->failed, 1);
    srv_bump(&s->hist[srv_lat_bucket(ns / 1000)], 1);
}

void srv_cmdstat_reject(unsigned idx) {
    struct srv_cmdstat_tab *t = srv_tab();
    if (t && idx < srv_ncmds)
        srv_bump(&t->cmd[idx].rejected, 1);
}

/* Index of the error code name, adding it when new; -1 when the table is full. */
static int srv_err_index(const char *code, size_t len) {
    size_t n = atomic_load_explicit(&srv_nerr_names, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (strncmp(srv_err_names[i], code, len) == 0 && srv_err_names[i][len] == '\0')
            return (int)i;
    int idx = -1;
    pthread_mutex_lock(&srv_err_lock);
    n = atomic_load_explicit(&srv_nerr_names, memory_order_relaxed);
    for (size_t i = 0; i < n && idx < 0; i++)
        if (strncmp(srv_err_names[i], code, len) == 0 && srv_err_names[i][len] == '\0')
            idx = (int)i;
    if (idx < 0 && n < SRV_ERRSTAT_MAX) {
        memcpy(srv_err_names[n], code, len);
        srv_err_names[n][len] = '\0';
        atomic_store_explicit(&srv_nerr_names, n + 1, memory_order_release);
        idx = (int)n;
    }
    pthread_mutex_unlock(&srv_err_lock);
    return idx;
}

void srv_cmdstat_error(const char *msg, size_t len) {
    struct srv_cmdstat_tab *t = srv_tab();
    if (!t)
        return;
    srv_bump(&t->errors_sent, 1);
    size_t code = 0;
    while (code < len && code < sizeof(srv_err_names[0]) - 1 && msg[code] != ' ')
        code++;
    int i = srv_err_index(msg, code);
    if (i >= 0)
        srv_bump(&t->err[i], 1);
}

uint64_t srv_cmdstat_thread_errors(void) {
    struct srv_cmdstat_tab *t = srv_tab();
    return t ? atomic_load_explicit(&t->errors_sent, memory_order_relaxed) : 0;
}

static unsigned srv_tab_count(void) {
    unsigned n = atomic_load_explicit(&srv_ntabs, memory_order_relaxed);
    return n < SRV_CMDSTAT_TABS ? n : SRV_CMDSTAT_TABS;
}

void srv_cmdstat_read(unsigned idx, struct srv_cmdstat *out) {
    memset(out, 0, sizeof(*out));
    if (idx >= srv_ncmds)
        return;
    uint64_t ns = 0;
    for (unsigned k = 0; k < srv_tab_count(); k++) {
        struct srv_cmdstat_tab *t = atomic_load_explicit(&srv_tabs[k], memory_order_acquire);
        if (!t) /* slot claimed, table not yet published */
            continue;
        struct srv_cmdstat_slot *s = &t->cmd[idx];
        out->calls += atomic_load_explicit(&s->calls, memory_order_relaxed);
        out->failed += atomic_load_explicit(&s->failed, memory_order_relaxed);
        out->rejected += atomic_load_explicit(&s->rejected, memory_order_relaxed);
        ns += atomic_load_explicit(&s->ns, memory_order_relaxed);
        for (int b = 0; b < SRV_LAT_NBUCKETS; b++)
            out->hist[b] += atomic_load_explicit(&s->hist[b], memory_order_relaxed);
    }
    out->usec = ns / 1000;
}

size_t srv_cmdstat_nerrors(void) {
    return atomic_load_explicit(&srv_nerr_names, memory_order_acquire);
}

const char *srv_cmdstat_error_at(size_t i, uint64_t *count) {
    *count = 0;
    for (unsigned k = 0; k < srv_tab_count(); k++) {
        struct srv_cmdstat_tab *t = atomic_load_explicit(&srv_tabs[k], memory_order_acquire);
        if (t)
            *count += atomic_load_explicit(&t->err[i], memory_order_relaxed);
    }
    return srv_err_names[i];
}

static void srv_slot_zero(struct srv_cmdstat_slot *s) {
    atomic_store_explicit(&s->calls, 0, memory_order_relaxed);
    atomic_store_explicit(&s->failed, 0, memory_order_relaxed);
    atomic_store_explicit(&s->rejected, 0, memory_order_relaxed);
    atomic_store_explicit(&s->ns, 0, memory_order_relaxed);
    for (int b = 0; b < SRV_LAT_NBUCKETS; b++)
        atomic_store_explicit(&s->hist[b], 0, memory_order_relaxed);
}

void srv_cmdstat_reset(void) {
    for (unsigned k = 0; k < srv_tab_count(); k++) {
        struct srv_cmdstat_tab *t = atomic_load_explicit(&srv_tabs[k], memory_order_acquire);
        if (!t)
            continue;
        for (int i = 0; i < SRV_ERRSTAT_MAX; i++)
            atomic_store_explicit(&t->err[i], 0, memory_order_relaxed);
        /* errors_sent is left alone: a call in flight compares against it. */
        for (size_t i = 0; i < srv_ncmds; i++)
            srv_slot_zero(&t->cmd[i]);
    }
}
