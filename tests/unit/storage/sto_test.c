/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the storage/ tests (sto_test.h). */
#include "common/fmacros.h"

#include "tests/unit/storage/sto_test.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

char *sto_test_mkdir(void) {
    char *d = strdup("/var/tmp/crescent-sto.XXXXXX");
    cr_assert_not_null(mkdtemp(d), "mkdtemp");
    return d;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

void sto_test_rmdir(char *dir) {
    if (!dir)
        return;
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

void sto_test_config(struct sto_config *cfg, const char *dir, enum sto_backend_kind kind,
                     int uring) {
    sto_config_defaults(cfg);
    snprintf(cfg->path, sizeof(cfg->path), "%s", dir);
    cfg->backend = kind;
    cfg->use_uring = uring;
    cfg->local_buffer_size = 8 * MIB;
    cfg->total_size_limit = 256 * MIB;
    cfg->bucket_size_limit = 4 * MIB;
    cfg->bucket_keys_limit = 16;
}

void sto_test_fill(uint8_t *buf, size_t len, uint64_t seed) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < len; i++) {
        if ((i & 7) == 0) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        buf[i] = (uint8_t)(x >> ((i & 7) * 8));
    }
}

static const void *flip_pat;
static size_t flip_plen;
static int flipped;

static int flip_cb(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)f;
    if (flipped || flag != FTW_F || st->st_size == 0)
        return 0;
    int fd = open(p, O_RDWR);
    if (fd < 0)
        return 0;
    uint8_t *m = mmap(NULL, (size_t)st->st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
        uint8_t *hit = memmem(m, (size_t)st->st_size, flip_pat, flip_plen);
        if (hit) {
            hit[flip_plen / 2] ^= 0x5a;
            flipped = 1;
            msync(m, (size_t)st->st_size, MS_SYNC);
        }
        munmap(m, (size_t)st->st_size);
    }
    close(fd);
    return 0;
}

int sto_test_flip(const char *dir, const void *pat, size_t plen) {
    flip_pat = pat;
    flip_plen = plen;
    flipped = 0;
    nftw(dir, flip_cb, 16, FTW_PHYS);
    return flipped;
}

struct sto *sto_test_open(const struct sto_config *cfg) {
    struct sto *s = NULL;
    char err[STO_ERR_LEN];
    int rc = sto_open(cfg, NULL, &s, err, sizeof(err));
    cr_assert_eq(rc, 0, "sto_open: %d %s", rc, err);
    return s;
}

/*
 * Under ASan: the Criterion runner itself (libcriterion 2.4, not the tests) leaks 48 bytes when
 * a suite mixes parameterized and plain tests; that report would fail the suite. Only
 * allocations made inside libcriterion are suppressed.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:libcriterion.so\n";
}

static pthread_mutex_t sto_test_fail_mu = PTHREAD_MUTEX_INITIALIZER;
static char sto_test_fail_text[256];
static bool sto_test_fail_seen;

/* Public: see sto_test.h. */
void sto_test_fail(const char *fmt, ...) {
    pthread_mutex_lock(&sto_test_fail_mu);
    if (!sto_test_fail_seen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(sto_test_fail_text, sizeof(sto_test_fail_text), fmt, ap);
        va_end(ap);
        __atomic_store_n(&sto_test_fail_seen, true, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sto_test_fail_mu);
}

/* Public: see sto_test.h. */
bool sto_test_failed(void) {
    return __atomic_load_n(&sto_test_fail_seen, __ATOMIC_ACQUIRE);
}

/* Public: see sto_test.h. */
const char *sto_test_fail_msg(void) {
    return sto_test_fail_text;
}

/* Public: see sto_test.h. */
void sto_test_fail_reset(void) {
    pthread_mutex_lock(&sto_test_fail_mu);
    sto_test_fail_text[0] = '\0';
    __atomic_store_n(&sto_test_fail_seen, false, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sto_test_fail_mu);
}
