/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An application of the HA client tests (tests/ha/test_client_follow.py), linked with
 * libcrescent.so like any application. Two modes:
 *   client_follow run MASTER       puts and gets checksummed objects until told to stop
 *   client_follow create MASTER MS create with failover_timeout_ms MS and report how it went
 * run prints "READY <client-id> <segment>", then "PROGRESS acked=N failed=F gets=G getfail=H
 * ms=<monotonic ms of the last acknowledged put>" every 100 ms, "GAP <ms> <ms>" when two
 * acknowledged puts are 500 ms or more apart (a fail-over), "FAIL put|get <i> <code> <msg>"
 * per failed call, "BAD <key> ..." for a get whose bytes are wrong and "LOG <line>" for the
 * library's log lines. On "check" from stdin it stops putting, reads back every acknowledged
 * object and prints "VERIFY acked=N ok=M bad=B missing=X other=O health=H"; on "quit" it
 * destroys the store and exits 0. create prints "CREATE <code> <ms> <message>" and exits 0
 * when the store was created, 1 otherwise.
 */
#include "common/fmacros.h"

#include "crescent/store.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CF_MAX_KEYS 200000
#define CF_MAX_SIZE 4096
#define CF_PAUSE_US 2000 /* between puts: about 400 puts/s, far below the segment's size */

static atomic_int cf_state; /* 0 putting, 1 check requested, 2 quit requested */
static pthread_mutex_t cf_out_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t cf_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void cf_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cf_say(const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&cf_out_mu);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    pthread_mutex_unlock(&cf_out_mu);
}

static void cf_log(int level, const char *line, void *arg) {
    (void)level;
    (void)arg;
    cf_say("LOG %s\n", line);
}

/* FNV-1a over n bytes. */
static uint32_t cf_sum(const unsigned char *p, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 16777619u;
    }
    return h;
}

/* Object i: its size, and its bytes (pseudo-random from i) ending in their checksum. */
static size_t cf_value(unsigned i, unsigned char *v) {
    size_t size = 64 + (size_t)(i * 7919u % (CF_MAX_SIZE - 64));
    uint64_t x = 0x9e3779b97f4a7c15ull * (i + 1);
    for (size_t k = 0; k + 4 < size; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v[k] = (unsigned char)x;
    }
    uint32_t s = cf_sum(v, size - 4);
    memcpy(v + size - 4, &s, 4);
    return size;
}

static void *cf_stdin(void *arg) {
    (void)arg;
    char line[64];
    while (fgets(line, sizeof(line), stdin) != NULL) {
        if (strncmp(line, "check", 5) == 0) {
            atomic_store(&cf_state, 1);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }
    atomic_store(&cf_state, 2);
    return NULL;
}

struct cf_run {
    struct crescent_store *st;
    struct crescent_store_replicate_config rc;
    const char *segs[1];
    unsigned char *acked; /* 1 for each acknowledged object */
    unsigned n, n_acked, failed, gets, getfail;
    uint64_t last_ok_ms;
};

static void cf_key(char *key, size_t cap, unsigned i) {
    snprintf(key, cap, "cf-%d-%06u", (int)getpid(), i);
}

/* Reads object i and compares its bytes; returns 0 ok, 1 wrong bytes, 2 not found, or 3 for
 * any other failure. */
static int cf_check(struct crescent_store *st, unsigned i, unsigned char *want) {
    char key[64];
    cf_key(key, sizeof(key), i);
    size_t n = cf_value(i, want), got_n = 0;
    void *got = NULL;
    int rc = crescent_store_get(st, key, &got, &got_n);
    if (rc < 0) {
        cf_say("FAIL get %u %s %s\n", i, crescent_store_err_name(rc), crescent_store_last_error());
        return rc == -CRESCENT_STORE_EOBJECT_NOT_FOUND ? 2 : 3;
    }
    uint32_t sum = 0;
    if (got_n >= 4) {
        memcpy(&sum, (const char *)got + got_n - 4, 4);
    }
    int bad = got_n != n || memcmp(got, want, n) != 0 || cf_sum(got, got_n - 4) != sum;
    if (bad) {
        cf_say("BAD %s size %zu want %zu\n", key, got_n, n);
    }
    crescent_store_free(got);
    return bad;
}

static void cf_put_one(struct cf_run *r, unsigned char *v, unsigned char *tmp) {
    unsigned i = ++r->n;
    char key[64];
    cf_key(key, sizeof(key), i);
    size_t size = cf_value(i, v);
    int rc = crescent_store_put(r->st, key, v, size, &r->rc);
    if (rc == 0) {
        uint64_t now = cf_ms();
        if (r->last_ok_ms != 0 && now - r->last_ok_ms >= 500) {
            cf_say("GAP %llu %llu\n", (unsigned long long)r->last_ok_ms, (unsigned long long)now);
        }
        r->acked[i] = 1;
        r->n_acked++;
        r->last_ok_ms = now;
    } else {
        r->failed++;
        cf_say("FAIL put %u %s %s\n", i, crescent_store_err_name(rc), crescent_store_last_error());
    }
    if (i % 3 == 0) { /* read back an earlier acknowledged object */
        unsigned j = 1 + (unsigned)rand() % i;
        if (r->acked[j]) {
            r->gets++;
            r->getfail += cf_check(r->st, j, tmp) != 0;
        }
    }
}

static int cf_verify(struct cf_run *r, unsigned char *tmp) {
    unsigned ok = 0, bad = 0, missing = 0, other = 0;
    for (unsigned i = 1; i <= r->n; i++) {
        if (!r->acked[i]) {
            continue;
        }
        int c = cf_check(r->st, i, tmp);
        ok += c == 0;
        bad += c == 1;
        missing += c == 2;
        other += c == 3;
    }
    cf_say("VERIFY acked=%u ok=%u bad=%u missing=%u other=%u health=%d\n", r->n_acked, ok, bad,
           missing, other, crescent_store_health_check(r->st));
    return 0;
}

static int cf_run_mode(const char *master) {
    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.global_segment_size = 128u << 20; /* no eviction in the test's few 10,000 puts */
    cfg.local_buffer_size = 4u << 20;
    cfg.protocol = "tcp";
    cfg.log_cb = cf_log;
    struct cf_run r = {0};
    int rc = crescent_store_create(master, &cfg, &r.st);
    if (rc < 0) {
        cf_say("CREATE %s %s\n", crescent_store_err_name(rc), crescent_store_last_error());
        return 1;
    }
    char seg[256] = "";
    crescent_store_segment_name(r.st, 0, seg, sizeof(seg));
    r.segs[0] = seg;
    r.rc.replica_num = 1;
    r.rc.preferred_segments = r.segs; /* not the masters' embedded segments */
    r.rc.n_preferred_segments = 1;
    r.acked = calloc(CF_MAX_KEYS + 1, 1);
    unsigned char *v = malloc(CF_MAX_SIZE), *tmp = malloc(CF_MAX_SIZE);
    pthread_t in;
    pthread_create(&in, NULL, cf_stdin, NULL);
    cf_say("READY %s %s\n", crescent_store_client_id(r.st), seg);
    uint64_t last = 0;
    while (atomic_load(&cf_state) == 0 && r.n < CF_MAX_KEYS) {
        cf_put_one(&r, v, tmp);
        usleep(CF_PAUSE_US);
        if (cf_ms() - last >= 100) {
            last = cf_ms();
            cf_say("PROGRESS acked=%u failed=%u gets=%u getfail=%u ms=%llu\n", r.n_acked, r.failed,
                   r.gets, r.getfail, (unsigned long long)r.last_ok_ms);
        }
    }
    while (atomic_load(&cf_state) == 0) {
        usleep(10000);
    }
    if (atomic_load(&cf_state) == 1) {
        cf_verify(&r, tmp);
    }
    pthread_join(in, NULL);
    crescent_store_destroy(r.st);
    free(r.acked);
    free(v);
    free(tmp);
    cf_say("BYE\n");
    return 0;
}

static int cf_create_mode(const char *master, const char *ms) {
    struct crescent_store_config cfg = CRESCENT_STORE_CONFIG_INIT;
    cfg.global_segment_size = 1u << 20;
    cfg.local_buffer_size = 1u << 20;
    cfg.failover_timeout_ms = (uint32_t)strtoul(ms, NULL, 10);
    struct crescent_store *st = NULL;
    uint64_t t0 = cf_ms();
    int rc = crescent_store_create(master, &cfg, &st);
    cf_say("CREATE %s %llu %s\n", rc < 0 ? crescent_store_err_name(rc) : "OK",
           (unsigned long long)(cf_ms() - t0), rc < 0 ? crescent_store_last_error() : "");
    crescent_store_destroy(st);
    return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "run") == 0) {
        return cf_run_mode(argv[2]);
    }
    if (argc >= 4 && strcmp(argv[1], "create") == 0) {
        return cf_create_mode(argv[2], argv[3]);
    }
    fprintf(stderr, "usage: client_follow run MASTER | create MASTER FAILOVER_MS\n");
    return 2;
}
