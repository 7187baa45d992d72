/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Set-up shared by the SSD-tier tests on the integration harness (tests/offload/): a master with
 * --enable_offload on a temporary tier directory, its removal afterwards, and the
 * pseudo-random value bytes the tests write and check.
 */
#ifndef CRESCENT_TESTS_OFFLOAD_OFFLOAD_UTIL_H
#define CRESCENT_TESTS_OFFLOAD_OFFLOAD_UTIL_H

#include <hiredis/hiredis.h>
#include <stddef.h>

/*
 * Starts it_srv with --memory memory and, through a config file, enable_offload on the tier
 * directory dir (dirlen bytes), followed by the config lines conf_extra ("" for none); connects
 * it_c. An empty dir is first created with mkdtemp(3) from the template tmpl
 * ("/tmp/crescent-x.XXXXXX"), a non-empty one is reused (a restart on the same tier). When
 * another process answered on the port picked for it_srv, starts it again (5 tries). Skips the
 * test against a Redis target (crescent-only); fails it when the directory cannot be made.
 */
void off_server_start(char *dir, size_t dirlen, const char *tmpl, const char *memory,
                      const char *conf_extra);

/* it_teardown(), then removes the tier directory dir (when set) and empties dir. */
void off_teardown(char *dir);

/* Stops it_srv with SIGKILL (no clean shutdown), closes it_c and keeps the tier's directory
 * (it_server_stop then removes only the server's working directory). */
void off_kill_hard(void);

/* One numeric field of INFO everything (fails the test when it is missing). */
long long off_info(redisContext *c, const char *field);

/*
 * Several numeric fields of one INFO everything reply, so they are read at one moment: out[k]
 * is fields[k] (fails the test when one is missing).
 */
void off_info_many(redisContext *c, const char *const *fields, long long *out, int n);

/*
 * Waits until the master's offload write queue is empty (INFO offload_write_queue_keys 0, the
 * writes in progress finished), so counters and disk figures are settled. Fails the test after
 * 120 s.
 */
void off_wait_queue(redisContext *c);

/* The usual length of key i's value: 1,000 to 7,000 bytes, spread pseudo-randomly. */
size_t off_value_len(int i);

/* Fills buf with the n pseudo-random bytes of key i's value of generation gen; returns n. */
size_t off_value_bytes(int i, int gen, size_t n, char *buf);

#endif
