/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcrescent's public transfer API, linked against the shared library: a local round trip
 * through crescent_xfer_*, and only crescent_* symbols exported.
 */
#include "common/fmacros.h"

#include "crescent/transfer.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

Test(crescent_transfer, tcp_round_trip_between_two_engines) {
    struct crescent_xfer_engine *t, *i;
    struct crescent_xfer_opts o = {.local_name = "api-target"};
    cr_assert_eq(crescent_xfer_engine_create(&o, &t), 0);
    struct crescent_xfer_opts oi = {.listen = ""};
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
