/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the transfer tests: a target process (forked, then exec'd) and data patterns. */
#include "common/fmacros.h"

#include "tests/transfer/xfer_test_util.h"

#include "transfer/xfer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Advances the xorshift32 state and returns it. */
uint32_t xt_rand(uint32_t *s) {
    uint32_t x = *s ? *s : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

/* Fills p with the pattern of seed. */
void xt_fill(void *p, size_t len, uint32_t seed) {
    uint8_t *b = p;
    uint32_t s = seed | 1;
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        uint32_t v = xt_rand(&s);
        memcpy(b + i, &v, 4);
    }
    for (; i < len; i++)
        b[i] = (uint8_t)xt_rand(&s);
}

static void target_main(const char *proto, const char *args, uint64_t len, int memfd, uint32_t seed,
                        int out, int ctl) {
    struct xfer_engine_opts eo = {.listen = "127.0.0.1:0", .local_name = "xt-target"};
    struct xfer_engine *eng;
    struct xt_target t = {0};
    if (xfer_engine_create(&eo, &eng) < 0 || xfer_engine_install(eng, proto, args) < 0)
        _exit(2);
    void *buf;
    if (memfd) {
        if (xfer_engine_alloc_shared(eng, len, &buf) < 0)
            _exit(2);
    } else {
        buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED)
            _exit(2);
    }
    xt_fill(buf, len, seed);
    static uint8_t priv[XT_PRIVATE_LEN];
    if (xfer_engine_register(eng, buf, len, "cpu:0", XFER_REG_REMOTE) < 0 ||
        xfer_engine_register(eng, priv, sizeof(priv), "cpu:0", 0) < 0)
        _exit(2);
    xfer_engine_local_addr(eng, t.addr, sizeof(t.addr));
    t.remote_addr = (uint64_t)(uintptr_t)buf;
    t.remote_len = len;
    t.private_addr = (uint64_t)(uintptr_t)priv;
    if (write(out, &t, sizeof(t)) != sizeof(t))
        _exit(2);
    char c;
    while (read(ctl, &c, 1) > 0 || errno == EINTR)
        ;
    xfer_engine_destroy(eng);
    for (size_t i = 0; i < sizeof(priv); i++)
        if (priv[i])
            _exit(3);
    _exit(0);
}

/* Parses one numeric argument of the target command line; exits 2 when it is not a number. */
static uint64_t target_arg(const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end)
        _exit(2);
    return v;
}

/* Runs the target when argv asks for it; see xfer_test_util.h. */
void xt_target_main(int argc, char *argv[]) {
    if (argc < 2 || strcmp(argv[1], XT_TARGET_ARG) != 0)
        return;
    if (argc != 9)
        _exit(2);
    target_main(argv[2], *argv[3] ? argv[3] : NULL, target_arg(argv[4]), (int)target_arg(argv[5]),
                (uint32_t)target_arg(argv[6]), (int)target_arg(argv[7]), (int)target_arg(argv[8]));
}

/* Starts a target; see xfer_test_util.h. */
int xt_spawn_target(const char *proto, const char *args, uint64_t len, int memfd, uint32_t seed,
                    struct xt_target *t) {
    int info[2], ctl[2];
    if (pipe2(info, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(ctl, O_CLOEXEC) < 0) {
        int e = -errno;
        close(info[0]);
        close(info[1]);
        return e;
    }
    char a_len[24], a_memfd[4], a_seed[12], a_out[12], a_ctl[12];
    snprintf(a_len, sizeof(a_len), "%llu", (unsigned long long)len);
    snprintf(a_memfd, sizeof(a_memfd), "%d", memfd ? 1 : 0);
    snprintf(a_seed, sizeof(a_seed), "%u", seed);
    snprintf(a_out, sizeof(a_out), "%d", info[1]);
    snprintf(a_ctl, sizeof(a_ctl), "%d", ctl[0]);
    char name[] = "xt-target", mode[] = XT_TARGET_ARG, none[] = "";
    char *argv[] = {name,  mode,  (char *)proto, args ? (char *)args : none, a_len, a_memfd, a_seed,
                    a_out, a_ctl, NULL};
    pid_t pid = xt_exec_self(argv, info[1], ctl[0]);
    close(info[1]);
    close(ctl[0]);
    if (pid < 0) {
        close(info[0]);
        close(ctl[1]);
        return pid;
    }
    ssize_t n = read(info[0], t, sizeof(*t));
    close(info[0]);
    t->pid = pid;
    t->ctl = ctl[1];
    if (n != sizeof(*t)) {
        close(ctl[1]);
        waitpid(pid, NULL, 0);
        return -EIO;
    }
    return 0;
}

/* Stops and reaps a target; see xfer_test_util.h. */
int xt_stop_target(struct xt_target *t) {
    int st = 0;
    if (t->ctl >= 0)
        close(t->ctl);
    t->ctl = -1;
    if (waitpid(t->pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
