/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the transfer tests: a target process (forked, then exec'd) and data patterns. */
#ifndef CRESCENT_TESTS_TRANSFER_XFER_TEST_UTIL_H
#define CRESCENT_TESTS_TRANSFER_XFER_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a target reports back. */
struct xt_target {
    pid_t pid;
    int ctl;              /* write end of the control pipe; closing it stops the target */
    char addr[64];        /* listener host:port */
    uint64_t remote_addr; /* remote-accessible buffer */
    uint64_t remote_len;
    uint64_t private_addr; /* registered, not remote-accessible (XT_PRIVATE_LEN bytes) */
};

#define XT_PRIVATE_LEN 65536

/* argv[1] of a test program run as a target by xt_spawn_target. */
#define XT_TARGET_ARG "--xt-target"

/*
 * Runs this test program again as a helper process: fork, then exec of /proc/self/exe with argv
 * (Criterion's BXFI_* variables left out of the environment), so the helper holds none of the
 * locks the caller's threads may hold. Descriptors keep_a and keep_b (-1: none) stay open in the
 * helper; any other O_CLOEXEC descriptor closes. The helper dies with the caller
 * (PR_SET_PDEATHSIG). Returns its pid or a negative errno. In tests/transfer/xt_exec.c, which
 * needs libc only.
 */
pid_t xt_exec_self(char *const argv[], int keep_a, int keep_b);

/*
 * Runs this process as a target (never returns) when argv[1] is XT_TARGET_ARG; returns at once
 * otherwise. Call it first thing in main of a program that uses xt_spawn_target.
 */
void xt_target_main(int argc, char *argv[]);

/*
 * Starts a target process: an engine listening on 127.0.0.1:0 with transport proto installed
 * (args may be NULL), a remote buffer of len bytes (memfd-backed when memfd) filled with
 * xt_fill(seed), and a private registered buffer that stays zero. Returns 0 and fills *t, or a
 * negative errno. The target is this test program run again (fork, then exec of /proc/self/exe
 * with XT_TARGET_ARG), so it starts with no lock held by the caller's threads; the program's
 * main must call xt_target_main first. The target exits with 0 when its control pipe closes and
 * its private buffer is still zero, 3 otherwise, 2 when it could not start. Dies with the parent
 * (PR_SET_PDEATHSIG).
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
