/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the storage/ tests: temporary store directories, configurations per
 * backend and I/O path, deterministic values, byte flipping in files.
 */
#ifndef CRESCENT_TESTS_UNIT_STORAGE_STO_TEST_H
#define CRESCENT_TESTS_UNIT_STORAGE_STO_TEST_H

#include "storage/sto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KIB (1024ull)
#define MIB (1024ull * 1024)

/* Creates a fresh directory under /var/tmp (a real disk file system); caller frees with
 * sto_test_rmdir. Returns a static-lifetime-free heap string. */
char *sto_test_mkdir(void);
/* Removes dir recursively and frees the string. */
void sto_test_rmdir(char *dir);
/* A configuration for tests: defaults, small staging buffer, the given backend and I/O path. */
void sto_test_config(struct sto_config *cfg, const char *dir, enum sto_backend_kind kind,
                     int uring);
/* Fills buf with len bytes derived from seed. */
void sto_test_fill(uint8_t *buf, size_t len, uint64_t seed);
/* Flips one byte in the first occurrence of pat (plen bytes) in any file under dir; returns 1
 * when a byte was flipped. */
int sto_test_flip(const char *dir, const void *pat, size_t plen);
/* Opens a store and fails the test on error. */
struct sto *sto_test_open(const struct sto_config *cfg);

/* The first failure any thread notes (Criterion's asserts belong to the test's own thread):
 * sto_test_fail records it (later ones are dropped), sto_test_failed says whether one was,
 * sto_test_fail_msg returns its text, sto_test_fail_reset clears it. Thread-safe. */
void sto_test_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool sto_test_failed(void);
const char *sto_test_fail_msg(void);
void sto_test_fail_reset(void);

#endif
