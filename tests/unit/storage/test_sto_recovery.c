/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storage/ recovery and limits, for each backend: a child writing in a loop is killed with
 * SIGKILL and every put it completed is found again; hand-made torn records are skipped and
 * counted; flipped bytes are caught by the CRCs; quotas, key limits, the bucket layout's
 * physical (du-style) limit and the fifo and lru eviction policies.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "tests/unit/storage/sto_test.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static enum sto_backend_kind kinds[] = {STO_BACKEND_BUCKET, STO_BACKEND_FILE_PER_KEY,
                                        STO_BACKEND_OFFSET};

static size_t val_len(int i) {
    return (size_t)((i * 2654435761u) % (200 * 1024)) + 1;
}

/* The child: puts k0, k1, ... forever, reporting each completed index on fd. */
static void writer(const struct sto_config *cfg, int fd) {
    struct sto *s;
    char err[STO_ERR_LEN];
    if (sto_open(cfg, NULL, &s, err, sizeof(err)))
        _exit(2);
    uint8_t *v = malloc(200 * 1024 + 1);
    for (int i = 0;; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%d", i);
        sto_test_fill(v, val_len(i), (uint64_t)i);
        if (sto_put_buf(s, key, strlen(key), v, val_len(i)) != 0)
            _exit(3);
        if (write(fd, &i, sizeof(i)) != sizeof(i))
            _exit(4);
    }
}

ParameterizedTestParameters(sto_recovery, kill9) {
    return cr_make_param_array(enum sto_backend_kind, kinds, 3);
}

ParameterizedTest(enum sto_backend_kind *kind, sto_recovery, kill9, .timeout = 60) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, *kind, 1);
    cfg.bucket_keys_limit = 50;
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        writer(&cfg, p[1]);
    }
    close(p[1]);
    int last = -1, i;
    while (last < 150 && read(p[0], &i, sizeof(i)) == sizeof(i))
        last = i;
    cr_assert_eq(kill(pid, SIGKILL), 0);
    while (read(p[0], &i, sizeof(i)) == sizeof(i))
        last = i; /* puts that completed before the kill */
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFSIGNALED(status), "the writer died on its own: %d", status);
    close(p[0]);

    struct sto *s = sto_test_open(&cfg);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_geq(st.keys, (uint64_t)last + 1, "keys %llu, completed %d",
                  (unsigned long long)st.keys, last + 1);
    cr_assert_leq(st.keys, (uint64_t)last + 2); /* the one in flight may have landed */
    cr_assert_eq(st.corrupt, 0);
    uint8_t *v = malloc(200 * 1024 + 1), *b = malloc(200 * 1024 + 1);
    for (i = 0; i <= last; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%d", i);
        sto_test_fill(v, val_len(i), (uint64_t)i);
        cr_assert_eq(sto_get(s, key, strlen(key), b, 200 * 1024 + 1), (ssize_t)val_len(i), "%s",
                     key);
        cr_assert(memcmp(v, b, val_len(i)) == 0, "%s", key);
    }
    /* It keeps working: a new put and a second restart. */
    cr_assert_eq(sto_put_buf(s, "after", 5, "x", 1), 0);
    sto_close(s);
    s = sto_test_open(&cfg);
    sto_stats(s, &st);
    cr_assert_eq(st.torn, 0);
    cr_assert_eq(sto_exists(s, "after", 5), 1);
    sto_close(s);
    free(v);
    free(b);
    sto_test_rmdir(dir);
}

/* Writes n small objects and closes the store. */
static void populate(const struct sto_config *cfg, int n) {
    struct sto *s = sto_test_open(cfg);
    for (int i = 0; i < n; i++) {
        char key[32], val[64];
        snprintf(key, sizeof(key), "key-%d", i);
        snprintf(val, sizeof(val), "VALUE-%d-MARK", i);
        cr_assert_eq(sto_put_buf(s, key, strlen(key), val, strlen(val) + 1), 0);
    }
    sto_close(s);
}

/* Size of dir/name, or -1. */
static off_t fsize(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    struct stat st;
    return stat(p, &st) == 0 ? st.st_size : -1;
}

Test(sto_recovery, torn_bucket_record, .timeout = 30) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_BUCKET, 0);
    cfg.bucket_keys_limit = 100;
    populate(&cfg, 10);
    /* A crash mid-write: the bucket was never sealed, its last record is cut short. */
    char p[1024];
    snprintf(p, sizeof(p), "%s/000000000000.meta", dir);
    cr_assert_eq(unlink(p), 0);
    off_t sz = fsize(dir, "000000000000.bucket");
    cr_assert_gt(sz, 0);
    snprintf(p, sizeof(p), "%s/000000000000.bucket", dir);
    cr_assert_eq(truncate(p, sz - 100), 0);
    struct sto *s = sto_test_open(&cfg);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.keys, 9);
    cr_assert_eq(st.torn, 1);
    cr_assert_eq(sto_exists(s, "key-9", 5), 0);
    char b[64];
    cr_assert_eq(sto_get(s, "key-8", 5, b, sizeof(b)), 13);
    cr_assert_str_eq(b, "VALUE-8-MARK");
    sto_close(s);
    sto_test_rmdir(dir);
}

Test(sto_recovery, torn_file_per_key_temporary, .timeout = 30) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_FILE_PER_KEY, 0);
    populate(&cfg, 5);
    char p[1024];
    snprintf(p, sizeof(p), "%s/file_per_key_dir/00/0123456789abcdef01234567.5.tmp", dir);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("half a record", f);
    fclose(f);
    struct sto *s = sto_test_open(&cfg);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.keys, 5);
    cr_assert_eq(st.torn, 1);
    cr_assert_eq(access(p, F_OK), -1);
    sto_close(s);
    sto_test_rmdir(dir);
}

Test(sto_recovery, torn_offset_journal, .timeout = 30) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_OFFSET, 0);
    populate(&cfg, 6);
    char p[1024];
    snprintf(p, sizeof(p), "%s/kv_cache.journal", dir);
    off_t sz = fsize(dir, "kv_cache.journal");
    cr_assert_gt(sz, 0);
    cr_assert_eq(truncate(p, sz - 10), 0); /* the last entry is cut */
    struct sto *s = sto_test_open(&cfg);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.keys, 5);
    cr_assert_eq(st.torn, 1);
    sto_close(s);
    /* The journal was compacted: the next open finds nothing torn. */
    s = sto_test_open(&cfg);
    sto_stats(s, &st);
    cr_assert_eq(st.keys, 5);
    cr_assert_eq(st.torn, 0);
    sto_close(s);
    sto_test_rmdir(dir);
}

ParameterizedTestParameters(sto_recovery, corrupt_value) {
    return cr_make_param_array(enum sto_backend_kind, kinds, 3);
}

ParameterizedTest(enum sto_backend_kind *kind, sto_recovery, corrupt_value, .timeout = 30) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, *kind, 0);
    populate(&cfg, 8);
    cr_assert_eq(sto_test_flip(dir, "VALUE-3-MARK", 12), 1);
    struct sto *s = sto_test_open(&cfg);
    char b[64];
    cr_assert_eq(sto_get(s, "key-3", 5, b, sizeof(b)), -CM_ECORRUPT);
    cr_assert_eq(sto_get(s, "key-4", 5, b, sizeof(b)), 13);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.corrupt, 1);
    sto_close(s);
    sto_test_rmdir(dir);
}

ParameterizedTestParameters(sto_recovery, corrupt_key) {
    return cr_make_param_array(enum sto_backend_kind, kinds, 3);
}

/* A flipped key byte: the record's (or entry's) header CRC fails at the restart scan. */
ParameterizedTest(enum sto_backend_kind *kind, sto_recovery, corrupt_key, .timeout = 30) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, *kind, 0);
    populate(&cfg, 8);
    /* The bucket and offset layouts keep the key in the metadata too: flip it there first. */
    if (*kind != STO_BACKEND_FILE_PER_KEY) {
        const char *meta = *kind == STO_BACKEND_BUCKET ? "000000000000.meta" : "kv_cache.journal";
        char p[1024];
        snprintf(p, sizeof(p), "%s/%s", dir, meta);
        char sub[1024];
        snprintf(sub, sizeof(sub), "%s/sub", dir);
        mkdir(sub, 0755);
        char q[1100];
        snprintf(q, sizeof(q), "%s/%s", sub, meta);
        cr_assert_eq(rename(p, q), 0);
        cr_assert_eq(sto_test_flip(sub, "key-5", 5), 1);
        cr_assert_eq(rename(q, p), 0);
        rmdir(sub);
    } else {
        cr_assert_eq(sto_test_flip(dir, "key-5", 5), 1);
    }
    struct sto *s = sto_test_open(&cfg);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_geq(st.corrupt + st.torn, 1);
    cr_assert_eq(sto_exists(s, "key-5", 5), *kind == STO_BACKEND_BUCKET);
    cr_assert_eq(sto_exists(s, "key-4", 5), 1);
    sto_close(s);
    sto_test_rmdir(dir);
}

Test(sto_limits, keys_limit_and_quota_without_eviction, .timeout = 30) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_BUCKET, 0);
    cfg.total_keys_limit = 5;
    cfg.bucket_evict = STO_EVICT_NONE;
    struct sto *s = sto_test_open(&cfg);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(sto_put_buf(s, &"abcde"[i], 1, "v", 1), 0);
    cr_assert_eq(sto_put_buf(s, "z", 1, "v", 1), -EDQUOT);
    cr_assert_eq(sto_remove(s, "a", 1), 0);
    cr_assert_eq(sto_put_buf(s, "z", 1, "v", 1), 0);
    sto_close(s);
    cfg.total_keys_limit = 100;
    cfg.total_size_limit = 10000;
    s = sto_test_open(&cfg);
    uint8_t big[12000] = {0};
    cr_assert_eq(sto_put_buf(s, "big", 3, big, sizeof(big)), -EFBIG);
    cr_assert_eq(sto_put_buf(s, "m1", 2, big, 4000), 0);
    cr_assert_eq(sto_put_buf(s, "m2", 2, big, 4000), 0);
    cr_assert_eq(sto_put_buf(s, "m3", 2, big, 4000), -EDQUOT);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.quota_bytes, 10000);
    cr_assert_eq(st.evictions, 0);
    sto_close(s);
    sto_test_rmdir(dir);
}

Test(sto_limits, bucket_quota_defaults_to_90_percent_of_disk) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_BUCKET, 0);
    cfg.total_size_limit = UINT64_C(1) << 62;
    struct sto *s = sto_test_open(&cfg);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_gt(st.quota_bytes, 0);
    cr_assert_lt(st.quota_bytes, UINT64_C(1) << 62);
    sto_close(s);
    cfg.bucket_max_total_size = 5000000;
    s = sto_test_open(&cfg);
    sto_stats(s, &st);
    cr_assert_eq(st.quota_bytes, 5000000);
    sto_close(s);
    sto_test_rmdir(dir);
}

/* Physical bytes of the files in dir (du: st_blocks * 512). */
static uint64_t du(const char *dir) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    uint64_t sum = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char p[4096];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_blocks * 512;
    }
    closedir(d);
    return sum;
}

#define PHYS_LIMIT (2 * MIB)
#define PHYS_VAL   (64 * KIB)
#define PHYS_REC   (72 * KIB) /* a 64 KiB value's record, header and alignment included */
#define PHYS_SLACK (64 * KIB) /* meta files written since the last scan */

/* A bucket store with a 1 GiB byte quota, 256 KiB buckets and the given physical limit. */
static struct sto *phys_open(struct sto_config *cfg, const char *dir, uint64_t limit,
                             enum sto_evict_policy pol, uint64_t cache_ms) {
    sto_test_config(cfg, dir, STO_BACKEND_BUCKET, 0);
    cfg->total_size_limit = 1024 * MIB;
    cfg->bucket_max_total_size = 1024 * MIB;
    cfg->bucket_size_limit = 256 * KIB;
    cfg->bucket_max_physical = limit;
    cfg->bucket_evict = pol;
    cfg->disk_scan_cache_ms = cache_ms;
    return sto_test_open(cfg);
}

/* 100 puts of 64 KiB against a 2 MiB physical limit under fifo: all succeed, the oldest are
 * evicted, the newest read back, and the directory never holds more than limit + one record
 * + slack. */
Test(sto_limits, physical_limit_evicts_fifo, .timeout = 60) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    struct sto *s = phys_open(&cfg, dir, PHYS_LIMIT, STO_EVICT_FIFO, 500);
    uint8_t *v = malloc(PHYS_VAL), *b = malloc(PHYS_VAL);
    char key[16];
    uint64_t peak = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "p%d", i);
        sto_test_fill(v, PHYS_VAL, (uint64_t)i);
        cr_assert_eq(sto_put_buf(s, key, strlen(key), v, PHYS_VAL), 0, "put %d", i);
        uint64_t d = du(dir);
        if (d > peak)
            peak = d;
    }
    cr_assert_leq(peak, PHYS_LIMIT + PHYS_REC + PHYS_SLACK, "peak %llu", (unsigned long long)peak);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_gt(st.evictions, 60);
    cr_assert_eq(st.evictions + st.keys, 100);
    cr_assert_eq(sto_exists(s, "p0", 2), 0);
    cr_assert_eq(sto_get(s, "p99", 3, b, PHYS_VAL), (ssize_t)PHYS_VAL);
    sto_test_fill(v, PHYS_VAL, 99);
    cr_assert_eq(memcmp(v, b, PHYS_VAL), 0);
    sto_close(s);
    free(v);
    free(b);
    sto_test_rmdir(dir);
}

/* Eviction off: puts fill the physical limit, then fail with the byte quota's -EDQUOT; a
 * record larger than the limit is -EFBIG. Scan cache 0: every put scans. */
Test(sto_limits, physical_limit_refuses_without_eviction, .timeout = 60) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    struct sto *s = phys_open(&cfg, dir, PHYS_LIMIT, STO_EVICT_NONE, 0);
    uint8_t *v = calloc(1, 3 * MIB);
    char key[16];
    int ok = 0, rc = 0;
    for (int i = 0; i < 100 && rc == 0; i++) {
        snprintf(key, sizeof(key), "n%d", i);
        rc = sto_put_buf(s, key, strlen(key), v, PHYS_VAL);
        ok += rc == 0;
    }
    cr_assert_eq(rc, -EDQUOT);
    cr_assert_geq(ok, 20);
    cr_assert_lt(ok, 32);
    cr_assert_leq(du(dir), PHYS_LIMIT + PHYS_SLACK, "du %llu", (unsigned long long)du(dir));
    cr_assert_eq(sto_put_buf(s, "again", 5, v, PHYS_VAL), -EDQUOT);
    cr_assert_eq(sto_put_buf(s, "huge", 4, v, 3 * MIB), -EFBIG);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.evictions, 0);
    cr_assert_eq(st.keys, (uint64_t)ok);
    cr_assert_eq(sto_exists(s, "n0", 2), 1);
    /* removing a whole bucket's objects gives its space back */
    for (int i = 0; i < 8; i++) {
        snprintf(key, sizeof(key), "n%d", i);
        cr_assert_eq(sto_remove(s, key, strlen(key)), 0);
    }
    cr_assert_eq(sto_put_buf(s, "after", 5, v, PHYS_VAL), 0);
    sto_close(s);
    free(v);
    sto_test_rmdir(dir);
}

/* Limit 0 (the default): the same 100 puts keep everything, beyond 2 MiB on disk. */
Test(sto_limits, physical_limit_zero_is_off, .timeout = 60) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    struct sto *s = phys_open(&cfg, dir, 0, STO_EVICT_NONE, 500);
    uint8_t *v = calloc(1, PHYS_VAL);
    char key[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "z%d", i);
        cr_assert_eq(sto_put_buf(s, key, strlen(key), v, PHYS_VAL), 0, "put %d", i);
    }
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.keys, 100);
    cr_assert_eq(st.evictions, 0);
    cr_assert_gt(du(dir), 100 * PHYS_VAL);
    sto_close(s);
    free(v);
    sto_test_rmdir(dir);
}

struct pol {
    enum sto_backend_kind kind;
    enum sto_evict_policy policy;
};

static struct pol pols[] = {
    {STO_BACKEND_BUCKET, STO_EVICT_FIFO},       {STO_BACKEND_BUCKET, STO_EVICT_LRU},
    {STO_BACKEND_FILE_PER_KEY, STO_EVICT_FIFO}, {STO_BACKEND_OFFSET, STO_EVICT_FIFO},
    {STO_BACKEND_OFFSET, STO_EVICT_LRU},
};

ParameterizedTestParameters(sto_limits, eviction) {
    return cr_make_param_array(struct pol, pols, sizeof(pols) / sizeof(pols[0]));
}

/* The eviction hook's record: evicted keys joined with ',' and their total size. */
struct evicted {
    char keys[256];
    uint64_t bytes;
    int n;
};

static void evicted_cb(const void *key, size_t klen, uint64_t size, void *arg) {
    struct evicted *e = arg;
    size_t at = strlen(e->keys);
    snprintf(e->keys + at, sizeof(e->keys) - at, "%s%.*s", e->n ? "," : "", (int)klen,
             (const char *)key);
    e->bytes += size;
    e->n++;
}

/* Quota 10 objects of 1000 B, watermarks 0.9 / 0.5: the 10th put evicts down to half; the
 * eviction hook hears of every victim (and not of a plain remove). */
ParameterizedTest(struct pol *pl, sto_limits, eviction, .timeout = 30) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, pl->kind, 0);
    cfg.total_size_limit = 10000;
    cfg.high_watermark = 0.9;
    cfg.low_watermark = 0.5;
    cfg.bucket_evict = cfg.offset_evict = pl->policy;
    cfg.fpk_eviction = 1;
    if (pl->kind == STO_BACKEND_OFFSET)
        cfg.total_size_limit = 1 << 20; /* the data file; quota below via keys */
    struct sto *s = sto_test_open(&cfg);
    uint8_t v[1000] = {1};
    char key[16];
    if (pl->kind == STO_BACKEND_OFFSET) {
        sto_close(s);
        cfg.total_keys_limit = 10;
        s = sto_test_open(&cfg);
    }
    struct evicted ev = {.n = 0};
    sto_set_evict_cb(s, evicted_cb, &ev);
    for (int i = 0; i < 9; i++) {
        snprintf(key, sizeof(key), "e%d", i);
        cr_assert_eq(sto_put_buf(s, key, strlen(key), v, sizeof(v)), 0);
    }
    char b[1000];
    cr_assert_eq(sto_get(s, "e0", 2, b, sizeof(b)), 1000); /* e0 is now the most recent use */
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.evictions, 0);
    for (int i = 9; i < 11; i++) {
        snprintf(key, sizeof(key), "e%d", i);
        cr_assert_eq(sto_put_buf(s, key, strlen(key), v, sizeof(v)), 0);
    }
    sto_stats(s, &st);
    cr_assert_gt(st.evictions, 0);
    cr_assert_leq(st.keys, 10);
    cr_assert_eq(sto_exists(s, "e10", 3), 1);
    cr_assert_eq((uint64_t)ev.n, st.evictions, "hook calls: %d (%s)", ev.n, ev.keys);
    cr_assert_eq(ev.bytes, 1000 * (uint64_t)ev.n);
    if (pl->policy == STO_EVICT_LRU) { /* e0 was read after e1 was written */
        cr_assert_eq(sto_exists(s, "e0", 2), 1);
        cr_assert_eq(sto_exists(s, "e1", 2), 0);
        cr_assert_eq(strncmp(ev.keys, "e1", 2) || (ev.keys[2] != ',' && ev.keys[2]), 0,
                     "first victim: %s", ev.keys);
    } else {
        cr_assert_eq(sto_exists(s, "e0", 2), 0, "the oldest object goes first");
        cr_assert_eq(strncmp(ev.keys, "e0", 2) || (ev.keys[2] != ',' && ev.keys[2]), 0,
                     "first victim: %s", ev.keys);
    }
    int before = ev.n;
    cr_assert_eq(sto_remove(s, "e10", 3), 0);
    cr_assert_eq(ev.n, before, "a plain remove is no eviction");
    uint64_t keys = st.keys - 1;
    sto_close(s);
    s = sto_test_open(&cfg);
    sto_stats(s, &st);
    cr_assert_eq(st.keys, keys, "evictions survive a restart");
    cr_assert_eq(sto_exists(s, pl->policy == STO_EVICT_LRU ? "e1" : "e0", 2), 0);
    sto_close(s);
    sto_test_rmdir(dir);
}
