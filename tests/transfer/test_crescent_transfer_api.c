/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcrescent's public transfer API, linked against the shared library: a round trip through
 * crescent_xfer_*; batches reset and reused many times against a target process over tcp
 * and shm (every call after crescent_xfer_batch_wait returned must succeed at once); public
 * error constants and names; opts struct_size checks; the handshake timeout of open_addr; and
 * only crescent_* symbols exported.
 */
#include "common/fmacros.h"

#include "crescent/transfer.h"
#include "tests/transfer/xfer_test_util.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define TGT_LEN (1u << 20)

/* A target process: its listener address, its buffer address, and the pipes that drive it. */
struct tgt {
    pid_t pid;
    int ctl; /* closing it stops the target */
    char addr[128];
    uint64_t buf;
};

/* Child side: an engine with proto and one remote buffer; reports "addr buf", waits for EOF. */
static void tgt_main(const char *proto, int rep, int ctl) {
    struct crescent_xfer_engine *e;
    struct crescent_xfer_opts o = CRESCENT_XFER_OPTS_INIT;
    o.local_name = "api-reuse-target";
    char line[256];
    void *buf = NULL;
    if (crescent_xfer_engine_create(&o, &e) < 0 || crescent_xfer_install(e, proto, NULL) < 0 ||
        crescent_xfer_alloc_shared(e, TGT_LEN, &buf) < 0 ||
        crescent_xfer_register(e, buf, TGT_LEN, "cpu:0", CRESCENT_XFER_REMOTE) < 0 ||
        crescent_xfer_engine_local_addr(e, line, 128) < 0)
        _exit(2);
    size_t n = strlen(line);
    snprintf(line + n, sizeof(line) - n, " %llu\n", (unsigned long long)(uintptr_t)buf);
    if (write(rep, line, strlen(line)) < 0)
        _exit(2);
    close(rep);
    char c;
    while (read(ctl, &c, 1) > 0)
        ;
    crescent_xfer_unregister(e, buf);
    crescent_xfer_free_shared(e, buf);
    crescent_xfer_engine_destroy(e);
    _exit(0);
}

#define TGT_ARG "--api-target"

/* Runs this process as a target when argv asks for it (argv: name, TGT_ARG, proto, rep, ctl). */
static void tgt_run_if_asked(int argc, char *argv[]) {
    if (argc != 5 || strcmp(argv[1], TGT_ARG) != 0)
        return;
    tgt_main(argv[2], atoi(argv[3]), atoi(argv[4]));
}

/* Starts a target: this program run again (see xt_exec_self), not a forked copy. */
static void tgt_start(const char *proto, struct tgt *t) {
    int rep[2], ctl[2];
    cr_assert_eq(pipe2(rep, O_CLOEXEC), 0);
    cr_assert_eq(pipe2(ctl, O_CLOEXEC), 0);
    char name[] = "api-target", mode[] = TGT_ARG, a_proto[16], a_rep[12], a_ctl[12];
    snprintf(a_proto, sizeof(a_proto), "%s", proto);
    snprintf(a_rep, sizeof(a_rep), "%d", rep[1]);
    snprintf(a_ctl, sizeof(a_ctl), "%d", ctl[0]);
    char *argv[] = {name, mode, a_proto, a_rep, a_ctl, NULL};
    t->pid = xt_exec_self(argv, rep[1], ctl[0]);
    cr_assert_geq(t->pid, 0);
    close(rep[1]);
    close(ctl[0]);
    t->ctl = ctl[1];
    char line[256];
    ssize_t n = read(rep[0], line, sizeof(line) - 1);
    close(rep[0]);
    cr_assert_gt(n, 0, "target did not start");
    line[n] = '\0';
    unsigned long long b = 0;
    cr_assert_eq(sscanf(line, "%127s %llu", t->addr, &b), 2, "target said: %s", line);
    t->buf = b;
}

static int tgt_stop(struct tgt *t) {
    close(t->ctl);
    int st = 0;
    cr_assert_eq(waitpid(t->pid, &st, 0), t->pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define REUSE_ROUNDS 200
#define REUSE_TASKS  8
#define REUSE_BLOCK  4096

/*
 * Reuses one batch for REUSE_ROUNDS write-then-read rounds against a target process: after
 * every crescent_xfer_batch_wait that returned 0, reset must return 0 at once (no retry), and
 * the bytes read back must be the bytes written that round.
 */
static void reset_reuse(const char *proto) {
    struct tgt t;
    tgt_start(proto, &t);
    struct crescent_xfer_engine *e;
    struct crescent_xfer_opts o = CRESCENT_XFER_OPTS_INIT;
    o.listen = "";
    cr_assert_eq(crescent_xfer_engine_create(&o, &e), 0);
    cr_assert_eq(crescent_xfer_install(e, proto, NULL), 0);
    struct crescent_xfer_segment *seg;
    int rc = crescent_xfer_segment_open_addr(e, t.addr, &seg);
    cr_assert_eq(rc, 0, "open %s: %s", t.addr, crescent_xfer_strerror(rc));
    cr_assert_str_eq(crescent_xfer_segment_transport(seg), proto);
    static uint8_t out[REUSE_TASKS * REUSE_BLOCK], in[REUSE_TASKS * REUSE_BLOCK];
    struct crescent_xfer_request w[REUSE_TASKS], r[REUSE_TASKS];
    for (int i = 0; i < REUSE_TASKS; i++) {
        uint64_t ra = t.buf + (uint64_t)i * REUSE_BLOCK * 3; /* spread over the buffer */
        w[i] = (struct crescent_xfer_request){.op = CRESCENT_XFER_WRITE,
                                              .local = out + i * REUSE_BLOCK,
                                              .seg = seg,
                                              .remote_addr = ra,
                                              .length = REUSE_BLOCK};
        r[i] = w[i];
        r[i].op = CRESCENT_XFER_READ;
        r[i].local = in + i * REUSE_BLOCK;
    }
    struct crescent_xfer_batch *b;
    cr_assert_eq(crescent_xfer_batch_alloc(e, REUSE_TASKS, &b), 0);
    for (int round = 0; round < REUSE_ROUNDS; round++) {
        memset(out, round & 0xff, sizeof(out));
        out[round % sizeof(out)] ^= 0x5a;
        memset(in, 0xee, sizeof(in));
        size_t first = 99;
        cr_assert_eq(crescent_xfer_batch_submit(b, w, REUSE_TASKS, &first), 0);
        cr_assert_eq(first, 0, "round %d: batch not empty after reset", round);
        rc = crescent_xfer_batch_wait(b, -1, NULL, 0, NULL);
        cr_assert_eq(rc, 0, "%s round %d write: %s", proto, round, crescent_xfer_strerror(rc));
        rc = crescent_xfer_batch_reset(b);
        cr_assert_eq(rc, 0, "%s round %d: reset after write wait: %d", proto, round, rc);
        cr_assert_eq(crescent_xfer_batch_submit(b, r, REUSE_TASKS, &first), 0);
        cr_assert_eq(first, 0);
        rc = crescent_xfer_batch_wait(b, -1, NULL, 0, NULL);
        cr_assert_eq(rc, 0, "%s round %d read: %s", proto, round, crescent_xfer_strerror(rc));
        struct crescent_xfer_task_status st;
        cr_assert_eq(crescent_xfer_batch_status(b, REUSE_TASKS - 1, &st), 0);
        cr_assert_eq(st.status, CRESCENT_XFER_COMPLETED);
        cr_assert_eq(st.transferred, REUSE_BLOCK);
        rc = crescent_xfer_batch_reset(b);
        cr_assert_eq(rc, 0, "%s round %d: reset after read wait: %d", proto, round, rc);
        cr_assert_eq(memcmp(in, out, sizeof(in)), 0, "%s round %d: data differs", proto, round);
    }
    /* Right after a wait, free and close go through too (nothing in flight). */
    cr_assert_eq(crescent_xfer_batch_submit(b, w, REUSE_TASKS, NULL), 0);
    cr_assert_eq(crescent_xfer_batch_wait(b, -1, NULL, 0, NULL), 0);
    crescent_xfer_batch_free(b);
    crescent_xfer_segment_close(seg);
    crescent_xfer_engine_destroy(e);
    cr_assert_eq(tgt_stop(&t), 0);
}

Test(crescent_transfer, batch_reset_and_reuse_after_wait_tcp) {
    reset_reuse("tcp");
}

Test(crescent_transfer, batch_reset_and_reuse_after_wait_shm) {
    reset_reuse("shm");
}

Test(crescent_transfer, tcp_round_trip_between_two_engines) {
    struct crescent_xfer_engine *t, *i;
    struct crescent_xfer_opts o = CRESCENT_XFER_OPTS_INIT;
    o.local_name = "api-target";
    cr_assert_eq(crescent_xfer_engine_create(&o, &t), 0);
    struct crescent_xfer_opts oi;
    crescent_xfer_opts_init(&oi);
    oi.listen = "";
    cr_assert_eq(crescent_xfer_engine_create(&oi, &i), 0);
    cr_assert_eq(crescent_xfer_install(t, "tcp", NULL), 0);
    cr_assert_eq(crescent_xfer_install(i, "tcp", NULL), 0);
    char *remote = calloc(1, 1 << 20), *local = malloc(1 << 20);
    memset(local, 7, 1 << 20);
    cr_assert_eq(crescent_xfer_register(t, remote, 1 << 20, "cpu:0", CRESCENT_XFER_REMOTE), 0);
    char addr[64];
    cr_assert_gt(crescent_xfer_engine_local_addr(t, addr, sizeof(addr)), 0);
    void *d;
    size_t dl;
    cr_assert_eq(crescent_xfer_fetch_desc(addr, 2000, &d, &dl), 0);
    struct crescent_xfer_segment *seg;
    cr_assert_eq(crescent_xfer_segment_open(i, d, dl, &seg), 0);
    crescent_xfer_desc_free(d);
    cr_assert_str_eq(crescent_xfer_segment_transport(seg), "tcp");
    uint64_t ra, rl;
    cr_assert_eq(crescent_xfer_segment_buffer(seg, 0, &ra, &rl), 0);
    cr_assert_eq(ra, (uint64_t)(uintptr_t)remote);
    struct crescent_xfer_request r[2] = {{CRESCENT_XFER_WRITE, local, seg, ra, 1 << 20},
                                         {CRESCENT_XFER_READ, local, seg, ra + rl, 1}};
    struct crescent_xfer_batch *b;
    cr_assert_eq(crescent_xfer_batch_alloc(i, 2, &b), 0);
    cr_assert_eq(crescent_xfer_batch_submit(b, r, 2, NULL), 0);
    size_t failed[2], nf;
    cr_assert_eq(crescent_xfer_batch_wait(b, 5000, failed, 2, &nf), -CRESCENT_XFER_ETRANSFER_FAIL);
    cr_assert_eq(nf, 1);
    cr_assert_eq(failed[0], 1);
    struct crescent_xfer_task_status st;
    cr_assert_eq(crescent_xfer_batch_status(b, 0, &st), 0);
    cr_assert_eq(st.status, CRESCENT_XFER_COMPLETED);
    cr_assert_str_eq(crescent_xfer_status_name(st.status), "COMPLETED");
    cr_assert_eq(crescent_xfer_batch_status(b, 1, &st), 0);
    cr_assert_eq(st.status, CRESCENT_XFER_INVALID);
    cr_assert_str_eq(crescent_xfer_strerror(-CRESCENT_XFER_ETRANSFER_FAIL), "transfer failed");
    cr_assert_eq(memcmp(remote, local, 1 << 20), 0);
    crescent_xfer_batch_free(b);
    crescent_xfer_segment_close(seg);
    crescent_xfer_engine_destroy(i);
    crescent_xfer_engine_destroy(t);
    free(remote);
    free(local);
}

Test(crescent_transfer, only_public_symbols_exported) {
    void *h = dlopen("libcrescent.so.0", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h, "libcrescent.so.0 not loaded: %s", dlerror());
    cr_assert_not_null(dlsym(h, "crescent_xfer_engine_create"));
    cr_assert_null(dlsym(h, "xfer_engine_create"));
    cr_assert_null(dlsym(h, "xfer__task_done"));
    cr_assert_null(dlsym(h, "cm_malloc"));
    dlclose(h);
}

/* The codes the API returns are the public CRESCENT_XFER_E* constants, and carry their names. */
Test(crescent_transfer, error_codes_have_public_names) {
    struct crescent_xfer_engine *e;
    struct crescent_xfer_opts o = CRESCENT_XFER_OPTS_INIT;
    cr_assert_eq(crescent_xfer_engine_create(&o, &e), 0);
    cr_assert_eq(crescent_xfer_install(e, "nosuch", NULL), -CRESCENT_XFER_ENOT_SUPPORTED);
    cr_assert_str_eq(crescent_xfer_err_name(-CRESCENT_XFER_ENOT_SUPPORTED),
                     "CRESCENT_XFER_ENOT_SUPPORTED");
    cr_assert_eq(crescent_xfer_install(e, "tcp", NULL), 0);
    char *buf = calloc(1, 8192);
    cr_assert_eq(crescent_xfer_register(e, buf, 4096, NULL, CRESCENT_XFER_REMOTE), 0);
    ssize_t n = crescent_xfer_export_desc(e, NULL, 0);
    cr_assert_gt(n, 0);
    char *d = malloc((size_t)n);
    cr_assert_eq(crescent_xfer_export_desc(e, d, (size_t)n), n);
    struct crescent_xfer_segment *seg;
    d[n - 1] ^= 1;
    cr_assert_eq(crescent_xfer_segment_open(e, d, (size_t)n, &seg), -CRESCENT_XFER_ECORRUPT);
    cr_assert_str_eq(crescent_xfer_err_name(-CRESCENT_XFER_ECORRUPT), "CRESCENT_XFER_ECORRUPT");
    cr_assert_not_null(strstr(crescent_xfer_last_error(), "descriptor"), "%s",
                       crescent_xfer_last_error());
    d[n - 1] ^= 1;
    cr_assert_eq(crescent_xfer_segment_open(e, d, (size_t)n, &seg), 0);
    /* A request outside the remote buffer: an INVALID task with EINVALID_PARAMS; the batch
     * fails with ETRANSFER_FAIL. */
    struct crescent_xfer_request r = {.op = CRESCENT_XFER_READ,
                                      .local = buf + 4096,
                                      .seg = seg,
                                      .remote_addr = (uint64_t)(uintptr_t)buf + 4000,
                                      .length = 200};
    struct crescent_xfer_batch *b;
    cr_assert_eq(crescent_xfer_batch_alloc(e, 1, &b), 0);
    cr_assert_eq(crescent_xfer_batch_submit(b, &r, 1, NULL), 0);
    int rc = crescent_xfer_batch_wait(b, -1, NULL, 0, NULL);
    cr_assert_eq(rc, -CRESCENT_XFER_ETRANSFER_FAIL);
    cr_assert_str_eq(crescent_xfer_err_name(rc), "CRESCENT_XFER_ETRANSFER_FAIL");
    struct crescent_xfer_task_status st;
    cr_assert_eq(crescent_xfer_batch_status(b, 0, &st), 0);
    cr_assert_eq(st.status, CRESCENT_XFER_INVALID);
    cr_assert_eq(st.error, -CRESCENT_XFER_EINVALID_PARAMS, "task error %d", st.error);
    cr_assert_eq(st.error, -4105); /* the number issue 7 saw, now with a name */
    cr_assert_str_eq(crescent_xfer_err_name(st.error), "CRESCENT_XFER_EINVALID_PARAMS");
    cr_assert_str_eq(crescent_xfer_strerror(st.error), "invalid parameters");
    cr_assert_eq(crescent_xfer_batch_reset(b), 0);
    crescent_xfer_batch_free(b);
    /* errno values keep their errno names. */
    cr_assert_str_eq(crescent_xfer_err_name(-ETIMEDOUT), "ETIMEDOUT");
    cr_assert_str_eq(crescent_xfer_err_name(-CRESCENT_XFER_EPROTOCOL), "CRESCENT_XFER_EPROTOCOL");
    cr_assert_str_eq(crescent_xfer_err_name(-CRESCENT_XFER_EUNREACHABLE),
                     "CRESCENT_XFER_EUNREACHABLE");
    cr_assert_str_eq(crescent_xfer_err_name(-CRESCENT_XFER_EINVALID_VERSION),
                     "CRESCENT_XFER_EINVALID_VERSION");
    cr_assert_str_eq(crescent_xfer_err_name(-CRESCENT_XFER_ENO_DEVICE), "CRESCENT_XFER_ENO_DEVICE");
    cr_assert_str_eq(crescent_xfer_err_name(-CRESCENT_XFER_EUNAVAILABLE),
                     "CRESCENT_XFER_EUNAVAILABLE");
    cr_assert_str_eq(crescent_xfer_err_name(-CRESCENT_XFER_EINTERNAL_ERROR),
                     "CRESCENT_XFER_EINTERNAL_ERROR");
    crescent_xfer_segment_close(seg);
    crescent_xfer_engine_destroy(e);
    free(d);
    free(buf);
}

/* struct_size: required, and a newer caller's struct is accepted when its extra fields are 0. */
Test(crescent_transfer, opts_struct_size_is_checked) {
    struct crescent_xfer_engine *e = NULL;
    struct crescent_xfer_opts o = {.listen = ""}; /* struct_size unset */
    cr_assert_eq(crescent_xfer_engine_create(&o, &e), -EINVAL);
    cr_assert_null(e);
    cr_assert_not_null(strstr(crescent_xfer_last_error(), "struct_size"));
    o.struct_size = sizeof(size_t) + 2 * sizeof(char *); /* ends before timeout_ms */
    cr_assert_eq(crescent_xfer_engine_create(&o, &e), -EINVAL);
    /* The first published layout (up to timeout_ms) is accepted. */
    o.struct_size = offsetof(struct crescent_xfer_opts, timeout_ms) + sizeof(uint32_t);
    o.handshake_timeout_ms = 1; /* beyond struct_size: ignored */
    cr_assert_eq(crescent_xfer_engine_create(&o, &e), 0);
    crescent_xfer_engine_destroy(e);
    struct {
        struct crescent_xfer_opts o;
        uint64_t future;
    } big;
    memset(&big, 0, sizeof(big));
    big.o.struct_size = sizeof(big);
    big.o.listen = "";
    cr_assert_eq(crescent_xfer_engine_create(&big.o, &e), 0);
    crescent_xfer_engine_destroy(e);
    big.future = 1;
    cr_assert_eq(crescent_xfer_engine_create(&big.o, &e), -E2BIG);
    crescent_xfer_opts_init(&o);
    cr_assert_eq(o.struct_size, sizeof(o));
    cr_assert_null(o.listen);
    cr_assert_eq(o.timeout_ms, 0);
    cr_assert_eq(crescent_xfer_engine_create(NULL, &e), 0);
    crescent_xfer_engine_destroy(e);
}

/* crescent_xfer_segment_open_addr on a port that listens but never answers: -ETIMEDOUT within
 * the handshake timeout, and a message naming the peer. */
Test(crescent_transfer, open_addr_handshake_timeout) {
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(lfd, 4), 0);
    socklen_t sl = sizeof(sa);
    cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sa.sin_port));
    struct crescent_xfer_opts o = CRESCENT_XFER_OPTS_INIT;
    o.listen = "";
    o.handshake_timeout_ms = 200;
    struct crescent_xfer_engine *e;
    cr_assert_eq(crescent_xfer_engine_create(&o, &e), 0);
    cr_assert_eq(crescent_xfer_install(e, "tcp", NULL), 0);
    struct crescent_xfer_segment *seg;
    cr_assert_eq(crescent_xfer_segment_open_addr(e, addr, &seg), -ETIMEDOUT);
    const char *msg = crescent_xfer_last_error();
    cr_assert_not_null(strstr(msg, addr), "%s", msg);
    cr_assert_not_null(strstr(msg, "no answer within 200 ms"), "%s", msg);
    crescent_xfer_engine_destroy(e);
    close(lfd);
}

/* The target processes are this program run again: they must not start Criterion. */
int main(int argc, char *argv[]) {
    tgt_run_if_asked(argc, argv);
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true))
        result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return result;
}
