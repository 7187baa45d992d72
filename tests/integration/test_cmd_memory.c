/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Integration tests for INFO memory: the Redis fields are present with sane values, RSS agrees
 * with /proc/PID/status, and FLUSHALL gives the memory of 200 MB of values back to the kernel
 * within a bounded time (the master punches free segment pages out of its memfd).
 */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024LL * 1024)

static void setup_512mb(void) {
    struct it_opts o = {.memory = "512mb"};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
}

TestSuite(memory, .init = setup_512mb, .fini = it_teardown, .timeout = 120);

/* The text after "field:" in INFO memory, copied into out (empty when absent). */
static void info_str(const char *field, char *out, size_t cap) {
    redisReply *r = it_cmd(it_c, "INFO memory");
    IT_TYPE(r, REDIS_REPLY_STRING);
    char pat[128];
    snprintf(pat, sizeof(pat), "\r\n%s:", field);
    const char *p = strstr(r->str, pat);
    out[0] = '\0';
    if (!p)
        return;
    p += strlen(pat);
    size_t n = strcspn(p, "\r\n");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

static long long info_ll(const char *field) {
    char v[128];
    info_str(field, v, sizeof(v));
    cr_assert_neq(v[0], '\0', "INFO memory has %s", field);
    return strtoll(v, NULL, 10);
}

static double info_double(const char *field) {
    char v[128];
    info_str(field, v, sizeof(v));
    cr_assert_neq(v[0], '\0', "INFO memory has %s", field);
    return strtod(v, NULL);
}

/* VmRSS of the server process from /proc/PID/status, in bytes. */
static long long proc_rss(void) {
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)it_srv.pid);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "open %s", path);
    long long kb = -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
            break;
    fclose(f);
    cr_assert_geq(kb, 0, "VmRSS in %s", path);
    return kb * 1024;
}

/* INFO's used_memory_rss and VmRSS, read back to back, agree within 10 % or 8 MiB. */
static long long rss_checked(void) {
    long long info = info_ll("used_memory_rss");
    long long proc = proc_rss();
    long long diff = llabs(info - proc);
    cr_assert(diff <= 8 * MIB || diff * 10 <= proc, "used_memory_rss %lld vs VmRSS %lld", info,
              proc);
    return info;
}

/* SETs n keys prefix:<i> of len bytes each, pipelined; every reply must be OK. */
static void fill(const char *prefix, int n, size_t len) {
    char *val = malloc(len);
    cr_assert_not_null(val);
    for (int i = 0; i < n;) {
        int batch = n - i < 64 ? n - i : 64;
        for (int k = 0; k < batch; k++) {
            memset(val, 'a' + (i + k) % 26, len);
            cr_assert_eq(redisAppendCommand(it_c, "SET %s:%d %b", prefix, i + k, val, len),
                         REDIS_OK);
        }
        for (int k = 0; k < batch; k++) {
            redisReply *r = NULL;
            cr_assert_eq(redisGetReply(it_c, (void **)&r), REDIS_OK, "SET %s:%d", prefix, i + k);
            cr_assert(r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0,
                      "SET %s:%d answered %s", prefix, i + k,
                      r->type == REDIS_REPLY_ERROR ? r->str : "a non-OK reply");
            freeReplyObject(r);
        }
        i += batch;
    }
    free(val);
}

Test(memory, info_memory_fields) {
    IT_OK(it_c, "SET k v");
    long long used = info_ll("used_memory");
    long long peak = info_ll("used_memory_peak");
    long long rss = rss_checked();
    long long sys = info_ll("total_system_memory");
    cr_assert_gt(used, 0);
    cr_assert_geq(peak, used, "used_memory_peak %lld >= used_memory %lld", peak, used);
    cr_assert_gt(rss, 0);
    long long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    cr_assert_eq(sys, pages * page, "total_system_memory is the machine's memory");
    cr_assert_eq(info_ll("maxmemory"), 512 * MIB);
    char v[128];
    info_str("maxmemory_human", v, sizeof(v));
    cr_assert_str_eq(v, "512.00M");
    info_str("used_memory_human", v, sizeof(v));
    cr_assert_neq(v[0], '\0', "used_memory_human present");
    info_str("used_memory_rss_human", v, sizeof(v));
    cr_assert_neq(v[0], '\0', "used_memory_rss_human present");
    info_str("used_memory_peak_human", v, sizeof(v));
    cr_assert_neq(v[0], '\0', "used_memory_peak_human present");
    info_str("total_system_memory_human", v, sizeof(v));
    cr_assert_neq(v[0], '\0', "total_system_memory_human present");
    info_str("maxmemory_policy", v, sizeof(v));
    cr_assert_neq(v[0], '\0', "maxmemory_policy present");
    double frag = info_double("mem_fragmentation_ratio");
    cr_assert_gt(frag, 0.0);
    cr_assert(frag > (double)rss / (double)used * 0.5 && frag < (double)rss / (double)used * 2,
              "mem_fragmentation_ratio %.2f is about rss/used (%lld/%lld)", frag, rss, used);
    if (it_target_is_crescent()) {
        info_str("maxmemory_policy", v, sizeof(v));
        cr_assert_str_eq(v, "allkeys-lru");
        cr_assert_geq(info_ll("used_memory_segment"), 0);
        cr_assert_geq(info_ll("segment_resident"), 0);
        cr_assert_geq(info_ll("segment_reclaimed"), 0);
    }
}

Test(memory, peak_stays_after_delete) {
    fill("p", 20, MIB);
    long long before = info_ll("used_memory");
    cr_assert_geq(before, 20 * MIB);
    IT_INT(20, it_c, "DBSIZE");
    IT_OK(it_c, "FLUSHALL");
    long long after = info_ll("used_memory");
    long long peak = info_ll("used_memory_peak");
    cr_assert_lt(after, before - 15 * MIB, "used_memory fell after FLUSHALL: %lld -> %lld", before,
                 after);
    cr_assert_geq(peak, before, "used_memory_peak %lld keeps the high point %lld", peak, before);
}

Test(memory, flushall_returns_rss_to_the_kernel) {
    /* 200 MB of values: 160 x 1 MiB (segment blocks) and 40,000 x 1 KiB (slab slots). */
    fill("big", 160, MIB);
    fill("small", 40000, 1024);
    IT_INT(40160, it_c, "DBSIZE");
    long long full = rss_checked();
    cr_assert_geq(full, 190 * MIB, "RSS with 200 MB of values is %lld", full);
    IT_OK(it_c, "FLUSHALL");
    long long rss = full;
    long long start = it_now_ms();
    while (it_now_ms() - start < 10000) {
        rss = rss_checked();
        if (rss < 64 * MIB && rss < full / 2)
            break;
        it_sleep_ms(100);
    }
    cr_log_info("RSS %lld MiB with 200 MB of values, %lld MiB %lld ms after FLUSHALL", full / MIB,
                rss / MIB, it_now_ms() - start);
    cr_assert_lt(rss, 64 * MIB, "RSS after FLUSHALL: %lld bytes (was %lld)", rss, full);
    cr_assert_lt(rss, full / 2, "RSS after FLUSHALL: %lld bytes (was %lld)", rss, full);
    /* The memory is usable again: the same data fits and reads back. */
    fill("big", 160, MIB);
    IT_INT(160, it_c, "DBSIZE");
    redisReply *r = it_cmd(it_c, "GETRANGE big:7 0 3");
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert_str_eq(r->str, "hhhh");
}
