/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the transfer tests: a forked target process and data patterns. */
#ifndef CRESCENT_TESTS_TRANSFER_XFER_TEST_UTIL_H
#define CRESCENT_TESTS_TRANSFER_XFER_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a forked target reports back. */
struct xt_target {
    pid_t pid;
    int ctl;              /* write end of the control pipe; closing it stops the target */
    char addr[64];        /* listener host:port */
    uint64_t remote_addr; /* remote-accessible buffer */
    uint64_t remote_len;
    uint64_t private_addr; /* registered, not remote-accessible (XT_PRIVATE_LEN bytes) */
};

#define XT_PRIVATE_LEN 65536

/*
 * Forks a target process: an engine listening on 127.0.0.1:0 with transport proto installed
 * (args may be NULL), a remote buffer of len bytes (memfd-backed when memfd) filled with
 * xt_pattern(seed), and a private registered buffer that stays zero. Returns 0 and fills *t.
 * The target exits with 0 when its control pipe closes and its private buffer is still zero,
 * 3 otherwise. Dies with the parent (PR_SET_PDEATHSIG).
 */
int xt_spawn_target(const char *proto, const char *args, uint64_t len, int memfd, uint32_t seed,
                    struct xt_target *t);

/* Closes the control pipe and reaps the target; returns its exit status or 128+signal. */
int xt_stop_target(struct xt_target *t);

/* Fills p with a deterministic pseudo-random pattern. */
void xt_fill(void *p, size_t len, uint32_t seed);

/* xorshift32 step. */
uint32_t xt_rand(uint32_t *s);

#endif
