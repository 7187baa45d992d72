/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the stress programs in tests/stress/: fatal checks, raw and hiredis
 * connections to the server under test, INFO parsing, a xorshift generator, CRC32 and a seekable
 * byte pattern. */
#ifndef CRESCENT_TESTS_STRESS_ST_UTIL_H
#define CRESCENT_TESTS_STRESS_ST_UTIL_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

/* The exact error Redis 7.0 returns for a write when nothing can be freed. */
#define ST_OOM_ERROR "OOM command not allowed when used memory > 'maxmemory'."

void st_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

uint64_t st_now_ms(void);

int st_connect_raw(const char *host, int port, int rcvbuf);

redisContext *st_connect(const char *host, int port);

redisReply *st_command(redisContext *c, const char *fmt, ...);

void st_expect_status(redisContext *c, const char *status, const char *fmt, ...);

long long st_info_field(redisContext *c, const char *section, const char *field);

/* Advances the xorshift64 state *s (not 0) and returns the new value. Not thread-safe for
 * one state; give each thread its own. */
uint64_t st_rng_next(uint64_t *s);

uint32_t st_crc32(uint32_t crc, const void *buf, size_t len);

void st_pattern_fill(uint8_t *buf, size_t len, uint64_t offset, uint64_t seed);

int64_t st_pattern_check(const uint8_t *buf, size_t len, uint64_t offset, uint64_t seed);

void st_value_build(uint8_t *buf, size_t len, uint64_t key, uint32_t version);

const char *st_value_verify(const uint8_t *buf, size_t len, uint64_t key, uint32_t *version);

void st_write_all(int fd, const void *buf, size_t len);

void st_read_full(int fd, void *buf, size_t len);

size_t st_read_line(int fd, char *buf, size_t cap);

void st_send_command(int fd, int argc, const void *const *argv, const size_t *lens);

#endif /* CRESCENT_TESTS_STRESS_ST_UTIL_H */
