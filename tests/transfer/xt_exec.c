/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starts a helper process of a test as a fresh run of the test program (fork, then exec of
 * /proc/self/exe), never as a forked copy: a test process has threads (engine workers,
 * Criterion's), and a copy inherits whatever lock one of them held at the fork. Plain libc only,
 * so tests linked against the shared library alone can use it.
 */
#include "common/fmacros.h"

#include "tests/transfer/xfer_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* The environment without Criterion's BXFI_* variables (with BXFI_MAP set, BoxFort takes the
 * program for one of its test workers), or NULL when out of memory. The strings are environ's. */
static char **helper_env(void) {
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    char **env = malloc((n + 1) * sizeof(*env)); /* no libcm here: see the file comment */
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "BXFI_", 5) != 0)
            env[k++] = environ[i];
    env[k] = NULL;
    return env;
}

/* Forks and execs this program with argv; see xfer_test_util.h. */
pid_t xt_exec_self(char *const argv[], int keep_a, int keep_b) {
    char **env = helper_env();
    if (!env)
        return -ENOMEM;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) { /* async-signal-safe calls only until execve */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* the parent died before prctl */
            _exit(2);
        if ((keep_a >= 0 && fcntl(keep_a, F_SETFD, 0) < 0) ||
            (keep_b >= 0 && fcntl(keep_b, F_SETFD, 0) < 0))
            _exit(2);
        execve("/proc/self/exe", argv, env);
        _exit(127);
    }
    int e = errno;
    free(env);
    return pid < 0 ? -e : pid;
}
