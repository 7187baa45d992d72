/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storage/ configuration tests: Mooncake's defaults, every alias, bad values with their exact
 * error text, the path rules, the record codec and CRC-32C, and the io_uring probe falling
 * back to pread/pwrite when io_uring_setup fails with ENOSYS or EPERM (a seccomp filter makes
 * it fail for real in the test process).
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "storage/sto_record.h"
#include "tests/unit/storage/sto_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

Test(sto_config, defaults_match_mooncake) {
    struct sto_config c;
    char err[STO_ERR_LEN];
    cr_assert_eq(sto_config_from_env(&c, err, sizeof(err)), 0);
    cr_assert_str_eq(c.path, "/data/file_storage");
    cr_assert_eq(c.backend, STO_BACKEND_BUCKET);
    cr_assert_eq(c.local_buffer_size, 1342177280ull);
    cr_assert_eq(c.scanmeta_keys_limit, 20000);
    cr_assert_eq(c.total_size_limit, 2199023255552ull);
    cr_assert_eq(c.total_keys_limit, 10000000);
    cr_assert_eq(c.heartbeat_interval_s, 10);
    cr_assert_eq(c.buffer_gc_interval_s, 1);
    cr_assert_eq(c.buffer_gc_ttl_ms, 5000);
    cr_assert_eq(c.use_uring, 0);
    cr_assert_eq(c.watermark_eviction, 1);
    cr_assert_float_eq(c.high_watermark, 0.90, 1e-9);
    cr_assert_float_eq(c.low_watermark, 0.80, 1e-9);
    cr_assert_eq(c.bucket_size_limit, 268435456ull);
    cr_assert_eq(c.bucket_keys_limit, 500);
    cr_assert_eq(c.bucket_max_total_size, 0);
    cr_assert_eq(c.bucket_max_physical, 0);
    cr_assert_eq(c.disk_scan_cache_ms, 500);
    cr_assert_eq(c.bucket_evict, STO_EVICT_NONE);
    cr_assert_eq(c.fpk_eviction, 1);
    cr_assert_str_eq(c.fsdir, "file_per_key_dir");
}

Test(sto_config, names_and_aliases) {
    struct sto_config c;
    char err[STO_ERR_LEN];
    setenv("MOONCAKE_USE_URING", "1", 1);
    setenv("MOONCAKE_SCANMETA_ITERATOR_KEYS_LIMIT", "77", 1);
    setenv("MOONCAKE_BUCKET_MAX_TOTAL_SIZE", "12345", 1);
    setenv("MOONCAKE_BUCKET_EVICTION_POLICY", "lru", 1);
    setenv("ENABLE_EVICTION", "false", 1);
    setenv("MOONCAKE_DISK_EVICTION_HIGH_WATERMARK_RATIO", "0.7", 1);
    setenv("MOONCAKE_DISK_EVICTION_LOW_WATERMARK_RATIO", "0.5", 1);
    setenv("MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR", "offset_allocator_storage_backend", 1);
    cr_assert_eq(sto_config_from_env(&c, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(c.use_uring, 1);
    cr_assert_eq(c.scanmeta_keys_limit, 77);
    cr_assert_eq(c.bucket_max_total_size, 12345);
    cr_assert_eq(c.bucket_evict, STO_EVICT_LRU);
    cr_assert_eq(c.fpk_eviction, 0);
    cr_assert_float_eq(c.high_watermark, 0.7, 1e-9);
    cr_assert_float_eq(c.low_watermark, 0.5, 1e-9);
    cr_assert_eq(c.backend, STO_BACKEND_OFFSET);
    /* The MOONCAKE_OFFLOAD_ name wins over its alias. */
    setenv("MOONCAKE_OFFLOAD_USE_URING", "false", 1);
    setenv("MOONCAKE_OFFLOAD_SCANMETA_ITERATOR_KEYS_LIMIT", "5", 1);
    setenv("MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY", "fifo", 1);
    setenv("MOONCAKE_OFFLOAD_ENABLE_EVICTION", "true", 1);
    cr_assert_eq(sto_config_from_env(&c, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(c.use_uring, 0);
    cr_assert_eq(c.scanmeta_keys_limit, 5);
    cr_assert_eq(c.bucket_evict, STO_EVICT_FIFO);
    cr_assert_eq(c.fpk_eviction, 1);
}

/* Sets name=value, expects sto_config_from_env and sto_open to fail with exactly want. */
static void bad(const char *name, const char *value, const char *want) {
    struct sto_config c;
    char err[STO_ERR_LEN];
    setenv(name, value, 1);
    cr_assert_eq(sto_config_from_env(&c, err, sizeof(err)), -EINVAL, "%s=%s", name, value);
    cr_assert_str_eq(err, want);
    struct sto *s = NULL;
    cr_assert_eq(sto_open(NULL, "/tmp", &s, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, want);
    cr_assert_null(s);
    unsetenv(name);
}

Test(sto_config, bad_values_name_the_variable) {
    bad("MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT", "ten",
        "MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT: invalid value \"ten\" (expected an integer from 1 "
        "to 9223372036854775807)");
    bad("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", "-5",
        "MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES: invalid value \"-5\" (expected an integer "
        "from 1 to 9223372036854775807)");
    bad("MOONCAKE_OFFLOAD_USE_URING", "maybe",
        "MOONCAKE_OFFLOAD_USE_URING: invalid value \"maybe\" (expected true, false, 1 or 0)");
    bad("MOONCAKE_USE_URING", "2",
        "MOONCAKE_USE_URING: invalid value \"2\" (expected true, false, 1 or 0)");
    bad("MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY", "random",
        "MOONCAKE_OFFLOAD_BUCKET_EVICTION_POLICY: invalid value \"random\" (expected none, fifo "
        "or lru)");
    bad("MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR", "nvme_kv_storage_backend",
        "MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR: invalid value \"nvme_kv_storage_backend\" "
        "(expected bucket_storage_backend, file_per_key_storage_backend or "
        "offset_allocator_storage_backend)");
    bad("MOONCAKE_OFFLOAD_DISK_EVICTION_HIGH_WATERMARK_RATIO", "1.5",
        "MOONCAKE_OFFLOAD_DISK_EVICTION_HIGH_WATERMARK_RATIO: invalid value \"1.5\" (expected "
        "a ratio in (0, 1])");
    bad("MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT", "0",
        "MOONCAKE_OFFLOAD_BUCKET_KEYS_LIMIT: invalid value \"0\" (expected an integer from 1 to "
        "1000000)");
    bad("MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES", "1k",
        "MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES: invalid value \"1k\" (expected an integer "
        "from 1048576 to 9223372036854775807)");
    bad("MOONCAKE_OFFLOAD_FSDIR", "a/b",
        "MOONCAKE_OFFLOAD_FSDIR: invalid value \"a/b\" (expected a single directory name)");
    bad("MOONCAKE_OFFLOAD_BUCKET_MAX_PHYSICAL_BYTES", "2M",
        "MOONCAKE_OFFLOAD_BUCKET_MAX_PHYSICAL_BYTES: invalid value \"2M\" (expected an integer "
        "from 0 to 9223372036854775807)");
    bad("MOONCAKE_OFFLOAD_DISK_SCAN_CACHE_MS", "-1",
        "MOONCAKE_OFFLOAD_DISK_SCAN_CACHE_MS: invalid value \"-1\" (expected an integer from 0 "
        "to 9223372036854775807)");
    bad("MOONCAKE_OFFLOAD_DISK_EVICTION_LOW_WATERMARK_RATIO", "0.95",
        "MOONCAKE_OFFLOAD_DISK_EVICTION_LOW_WATERMARK_RATIO: 0.95 is above the high watermark "
        "0.9");
}

/* Expects sto_open(path) to fail with -EINVAL and exactly want. */
static void bad_path(const char *path, const char *want) {
    struct sto_config c;
    sto_config_defaults(&c);
    char err[STO_ERR_LEN];
    struct sto *s = NULL;
    cr_assert_eq(sto_open(&c, path, &s, err, sizeof(err)), -EINVAL, "%s", path);
    cr_assert_str_eq(err, want);
}

Test(sto_config, path_rules) {
    char *dir = sto_test_mkdir();
    char p[600], want[2048];
    bad_path("relative/dir", "storage path \"relative/dir\" is not absolute");
    snprintf(p, sizeof(p), "%s/absent", dir);
    snprintf(want, sizeof(want), "storage path \"%s\" does not exist (No such file or directory)",
             p);
    bad_path(p, want);
    snprintf(p, sizeof(p), "%s/../x", dir);
    snprintf(want, sizeof(want), "storage path \"%s\" contains \".\" or \"..\"", p);
    bad_path(p, want);
    snprintf(p, sizeof(p), "%s/./", dir);
    snprintf(want, sizeof(want), "storage path \"%s\" contains \".\" or \"..\"", p);
    bad_path(p, want);
    char real[256], link[256];
    snprintf(real, sizeof(real), "%s/real", dir);
    snprintf(link, sizeof(link), "%s/link", dir);
    cr_assert_eq(mkdir(real, 0755), 0);
    cr_assert_eq(symlink(real, link), 0);
    snprintf(want, sizeof(want), "storage path \"%s\" contains a symlink (%s)", link, link);
    bad_path(link, want);
    snprintf(p, sizeof(p), "%s/sub", link);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(want, sizeof(want), "storage path \"%s\" contains a symlink (%s)", p, link);
    bad_path(p, want);
    snprintf(p, sizeof(p), "%s/file", dir);
    FILE *f = fopen(p, "w");
    fclose(f);
    snprintf(want, sizeof(want), "storage path \"%s\" is not a directory", p);
    bad_path(p, want);
    /* A good path works; a second store on it is refused. */
    struct sto_config c;
    sto_test_config(&c, real, STO_BACKEND_BUCKET, 0);
    struct sto *s = sto_test_open(&c), *s2 = NULL;
    char err[STO_ERR_LEN];
    cr_assert_eq(sto_open(&c, NULL, &s2, err, sizeof(err)), -EBUSY);
    sto_close(s);
    sto_test_rmdir(dir);
}

/* Bit-at-a-time CRC-32C, the reference for the table and hardware paths. */
static uint32_t crc_ref(uint32_t c, const uint8_t *p, size_t n) {
    c = ~c;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    }
    return ~c;
}

Test(sto_record, crc32c_matches_reference) {
    size_t cap = 100000;
    uint8_t *b = malloc(cap);
    sto_test_fill(b, cap, 7);
    srand(1);
    for (int t = 0; t < 500; t++) {
        size_t off = (size_t)rand() % 64, n = (size_t)rand() % (cap - 64);
        uint32_t seed = (uint32_t)rand();
        cr_assert_eq(sto_crc32c(seed, b + off, n), crc_ref(seed, b + off, n), "n=%zu", n);
    }
    free(b);
}

Test(sto_record, crc32c_and_codec) {
    cr_assert_eq(sto_crc32c(0, "123456789", 9), 0xe3069283u);
    cr_assert_eq(sto_crc32c(sto_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
    uint8_t buf[STO_REC_HDR + 16];
    struct sto_rec r = {.flags = STO_REC_PUT,
                        .key_len = 5,
                        .key = (const uint8_t *)"hello",
                        .value_len = 5000,
                        .seq = 42,
                        .value_crc = 7};
    cr_assert_eq(sto_rec_layout(&r, 512), 0);
    cr_assert_eq(r.value_off, 512);
    cr_assert_eq(r.rec_len, 512 + 5120);
    struct sto_rec small = r;
    small.value_len = 10;
    cr_assert_eq(sto_rec_layout(&small, 512), 0);
    cr_assert_eq(small.value_off, STO_REC_HDR + 5);
    cr_assert_eq(small.rec_len, 512);
    size_t n = sto_rec_encode(&r, buf);
    cr_assert_eq(n, STO_REC_HDR + 5);
    struct sto_rec d;
    cr_assert_eq(sto_rec_decode(buf, n - 1, &d), 0);
    cr_assert_eq(sto_rec_decode(buf, n, &d), (int)n);
    cr_assert_eq(d.seq, 42);
    cr_assert_eq(d.value_len, 5000);
    cr_assert(memcmp(d.key, "hello", 5) == 0);
    for (size_t i = 0; i < n; i++) {
        buf[i] ^= 1;
        int rc = sto_rec_decode(buf, n, &d);
        /* a larger key length asks for more bytes; everything else fails the checks */
        cr_assert(rc == -CM_ECORRUPT || (i == 11 && rc == 0), "flip at %zu: %d", i, rc);
        buf[i] ^= 1;
    }
    uint8_t ent[STO_ENT_HDR + 16];
    r.rec_off = 1 << 20;
    size_t en = sto_ent_encode(&r, ent);
    cr_assert_eq(en, sto_ent_size(&r));
    cr_assert_eq(sto_ent_decode(ent, en, &d), (int)en);
    cr_assert_eq(d.rec_off, 1 << 20);
    cr_assert_eq(sto_ent_decode(ent, en - 1, &d), 0);
    ent[20] ^= 4;
    cr_assert_eq(sto_ent_decode(ent, en, &d), -CM_ECORRUPT);
}

/* Installs a seccomp filter that fails io_uring_setup with err. */
static void block_uring(int err) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
    cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    cr_assert_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
}

/* Opens a store with io_uring requested and checks it runs on psync with note, and works. */
static void expect_fallback(const char *note) {
    char *dir = sto_test_mkdir();
    struct sto_config c;
    sto_test_config(&c, dir, STO_BACKEND_BUCKET, 1);
    struct sto *s = sto_test_open(&c);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_str_eq(st.io, "psync");
    cr_assert_str_eq(st.io_note, note);
    cr_assert_eq(sto_put_buf(s, "k", 1, "value", 5), 0);
    char b[8];
    cr_assert_eq(sto_get(s, "k", 1, b, sizeof(b)), 5);
    cr_assert(memcmp(b, "value", 5) == 0);
    sto_close(s);
    sto_test_rmdir(dir);
}

Test(sto_io, falls_back_on_enosys) {
    block_uring(ENOSYS);
    expect_fallback("io_uring unavailable: ENOSYS (kernel or seccomp)");
}

Test(sto_io, falls_back_on_eperm) {
    block_uring(EPERM);
    expect_fallback("io_uring unavailable: EPERM");
}

Test(sto_io, each_path_on_request) {
    char *dir = sto_test_mkdir();
    struct sto_config c;
    sto_test_config(&c, dir, STO_BACKEND_BUCKET, 0);
    struct sto *s = sto_test_open(&c);
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_str_eq(st.io, "psync");
    cr_assert_str_eq(st.io_note, "MOONCAKE_OFFLOAD_USE_URING is false");
    sto_close(s);
    c.use_uring = 1;
    s = sto_test_open(&c);
    sto_stats(s, &st);
    if (strcmp(st.io, "io_uring") != 0) {
        sto_close(s);
        sto_test_rmdir(dir);
        cr_skip_test("io_uring unavailable here: %s", st.io_note);
    }
    cr_assert_str_eq(st.io_note, "");
    cr_assert_eq(st.registered_buffers, 0, "registered on first use only");
    cr_assert_eq(sto_put_buf(s, "k", 1, "v", 1), 0);
    sto_stats(s, &st);
    cr_assert_eq(st.registered_buffers, 1);
    sto_close(s);
    sto_test_rmdir(dir);
}
