// SPDX-License-Identifier: Apache-2.0
/*
 * GPU memory support without a GPU: CUDA detection when libcudart cannot be loaded (dlopen
 * failure => everything is cpu), and, with the stand-in runtime tests/fabric/mocks/fake_cudart.c
 * loaded through XFER_CUDART_LIB, device-pointer recognition, host/device copies and the pinned
 * staging pool (pinned allocation, pageable fallback, bounded cache, oversize buffers), and tcp
 * and shm transfers from/to fake device memory going through that pool.
 * Builds without CUDA headers test the compiled-out stubs.
 */
#include "common/fmacros.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cm_errno.h"
#include "transfer/core/xfer_pinned.h"
#include "transfer/xfer_int.h"

TestSuite(gpu, .timeout = 20);

Test(gpu, cudart_missing_means_cpu) {
    setenv("XFER_CUDART_LIB", "/nonexistent/libcudart.so", 1);
    cr_assert_eq(xfer__cuda_init(), 0);
#ifdef XFER_HAVE_CUDA
    cr_assert_str_eq(xfer__cuda_status(), "libcudart not found");
#else
    cr_assert_str_eq(xfer__cuda_status(), "compiled out");
#endif
    char loc[XFER_LOC_MAX];
    int x = 0;
    cr_assert_eq(xfer__mem_location(&x, loc, sizeof(loc)), 0);
    cr_assert_str_eq(loc, "cpu:0");
    cr_assert_eq(xfer__mem_location(&x, loc, 3), -ENOSPC);
    int pinned = 1;
    void *h = xfer__host_alloc(4096, &pinned);
    cr_assert_not_null(h);
    cr_assert_eq(pinned, 0, "pageable without CUDA");
    xfer__host_free(h, pinned);
    char a[16] = "abc", b[16];
    cr_assert_eq(xfer__cuda_memcpy(b, a, 4), 0);
    cr_assert_str_eq(b, "abc");
}

Test(gpu, pool_bounds_without_cuda) {
    struct xfer_pinned_pool *p;
    struct xfer_pinned_stats st;
    setenv("XFER_CUDART_LIB", "/nonexistent/libcudart.so", 1);
    cr_assert_eq(xfer_pinned_pool_create(0, 2, &p), -EINVAL);
    cr_assert_eq(xfer_pinned_pool_create(1 << 20, 2, &p), 0);
    void *b[3];
    for (int i = 0; i < 3; i++) {
        b[i] = xfer_pinned_get(p, 1000);
        cr_assert_not_null(b[i]);
        cr_assert_eq((uintptr_t)b[i] % 64, 0);
        memset(b[i], i, 1 << 20); /* the whole buffer is usable */
    }
    for (int i = 0; i < 3; i++)
        xfer_pinned_put(p, b[i]);
    xfer_pinned_pool_stats(p, &st);
    cr_assert_eq(st.allocs, 3);
    cr_assert_eq(st.pageable, 3);
    cr_assert_eq(st.cached, 2, "bounded cache");
    cr_assert_eq(st.frees, 1, "freed when the pool is full");
    cr_assert_eq(st.outstanding, 0);
    void *again = xfer_pinned_get(p, 1 << 20);
    xfer_pinned_pool_stats(p, &st);
    cr_assert_eq(st.hits, 1);
    void *big = xfer_pinned_get(p, 3 << 20);
    cr_assert_not_null(big);
    memset(big, 1, 3 << 20);
    xfer_pinned_put(p, big);
    xfer_pinned_put(p, again);
    xfer_pinned_put(p, NULL);
    xfer_pinned_pool_stats(p, &st);
    cr_assert_eq(st.allocs, 4);
    cr_assert_eq(st.frees, 2, "oversize buffers are never cached");
    cr_assert_eq(st.cached, 2);
    xfer_pinned_pool_destroy(p);
    xfer_pinned_pool_destroy(NULL);
}

#if defined(XFER_HAVE_CUDA) && defined(FAKE_CUDART)

static void *fake_sym(const char *name) {
    void *h = dlopen(FAKE_CUDART, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    void *s = dlsym(h, name);
    cr_assert_not_null(s);
    return s;
}

Test(gpu, fake_runtime_device_pointers) {
    setenv("XFER_CUDART_LIB", FAKE_CUDART, 1);
    setenv("FAKE_CUDA_DEVICES", "2", 1);
    cr_assert_eq(xfer__cuda_init(), 2);
    cr_assert_str_eq(xfer__cuda_status(), "cuda: 2 device(s)");
    void *(*dmalloc)(size_t, int) = (void *(*)(size_t, int))fake_sym("fake_cuda_malloc");
    long (*ncopies)(void) = (long (*)(void))fake_sym("fake_cuda_memcpy_calls");
    char *dev = dmalloc(1 << 16, 1);
    char host[64], loc[XFER_LOC_MAX];
    struct xfer_mem_loc l;
    cr_assert_eq(xfer__mem_location(dev + 100, loc, sizeof(loc)), 0);
    cr_assert_str_eq(loc, "cuda:1");
    xfer__mem_locate(dev, &l);
    cr_assert_eq(l.kind, XFER_MEM_CUDA);
    cr_assert_eq(l.device, 1);
    cr_assert_eq(xfer__mem_location(host, loc, sizeof(loc)), 0);
    cr_assert_str_eq(loc, "cpu:0");
    cr_assert(xfer__is_device(dev));
    cr_assert(!xfer__is_device(host));
    struct xfer_pinned_pool *pool = xfer__staging_pool();
    cr_assert_not_null(pool);
    cr_assert_eq(pool, xfer__staging_pool(), "one process-wide pool");
    cr_assert_eq(xfer_pinned_pool_buf_size(pool), XFER_STAGING_BUF);
    /* Staging copies go through cudaMemcpy. */
    memcpy(host, "device bytes", 13);
    long before = ncopies();
    cr_assert_eq(xfer__cuda_memcpy(dev, host, 13), 0);
    memset(host, 0, sizeof(host));
    cr_assert_eq(xfer__cuda_memcpy(host, dev, 13), 0);
    cr_assert_str_eq(host, "device bytes");
    cr_assert_eq(ncopies() - before, 2);
}

Test(gpu, fake_runtime_staging_helpers) {
    setenv("XFER_CUDART_LIB", FAKE_CUDART, 1);
    cr_assert_eq(xfer__cuda_init(), 1);
    void *(*dmalloc)(size_t, int) = (void *(*)(size_t, int))fake_sym("fake_cuda_malloc");
    long (*ncopies)(void) = (long (*)(void))fake_sym("fake_cuda_memcpy_calls");
    size_t len = (5u << 20) + 3; /* larger than a pool buffer: a one-off staging buffer */
    char *dev = dmalloc(len, 0), *host = malloc(len);
    void *tok;
    for (size_t i = 0; i < len; i++)
        host[i] = (char)(i * 13);
    /* Host memory: no staging, no token. */
    cr_assert_eq(xfer__stage_out(host, len, &tok), host);
    cr_assert_null(tok);
    cr_assert_eq(xfer__stage_in(host, len, &tok), host);
    cr_assert_null(tok);
    cr_assert_eq(xfer__stage_in_done(host, host, len, tok), 0);
    /* Receive into device memory through a staging buffer. */
    long c0 = ncopies();
    char *in = xfer__stage_in(dev, len, &tok);
    cr_assert_not_null(in);
    cr_assert_neq(in, dev);
    memcpy(in, host, len); /* "the socket" */
    cr_assert_eq(xfer__stage_in_done(dev, in, len, tok), 0);
    cr_assert_eq(memcmp(dev, host, len), 0);
    /* Send from device memory through a staging buffer. */
    const char *out = xfer__stage_out(dev, len, &tok);
    cr_assert_not_null(tok);
    cr_assert_neq(out, dev);
    cr_assert_eq(memcmp(out, host, len), 0);
    xfer__stage_release(tok);
    cr_assert_eq(ncopies() - c0, 2);
    struct xfer_pinned_stats st;
    xfer_pinned_pool_stats(xfer__staging_pool(), &st);
    cr_assert_eq(st.outstanding, 0);
    free(host);
}

Test(gpu, fake_runtime_pinned_and_fallback) {
    struct xfer_pinned_pool *p;
    struct xfer_pinned_stats st;
    setenv("XFER_CUDART_LIB", FAKE_CUDART, 1);
    cr_assert_eq(xfer__cuda_init(), 1);
    cr_assert_eq(xfer_pinned_pool_create(4096, 1, &p), 0);
    void *a = xfer_pinned_get(p, 4096);
    setenv("FAKE_CUDA_PIN_FAIL", "1", 1);
    void *b = xfer_pinned_get(p, 4096);
    cr_assert_not_null(a);
    cr_assert_not_null(b, "pageable fallback when pinning fails");
    xfer_pinned_pool_stats(p, &st);
    cr_assert_eq(st.allocs, 2);
    cr_assert_eq(st.pageable, 1);
    xfer_pinned_put(p, a);
    xfer_pinned_put(p, b);
    xfer_pinned_pool_stats(p, &st);
    cr_assert_eq(st.cached, 1);
    cr_assert_eq(st.frees, 1);
    xfer_pinned_pool_destroy(p);
}

#ifdef XFER_HAVE_FABRIC
/* Device memory is registered with fabric only where the provider has FI_HMEM (not tcp). */
Test(gpu, fabric_refuses_device_memory_without_hmem) {
    setenv("XFER_CUDART_LIB", FAKE_CUDART, 1);
    cr_assert_eq(xfer__cuda_init(), 1);
    void *(*dmalloc)(size_t, int) = (void *(*)(size_t, int))fake_sym("fake_cuda_malloc");
    struct xfer_engine *eng;
    cr_assert_eq(xfer_engine_create(NULL, &eng), 0);
    if (xfer_engine_install(eng, "fabric", NULL) != 0) {
        xfer_engine_destroy(eng);
        cr_skip_test("no tcp;ofi_rxm provider");
    }
    char *dev = dmalloc(1 << 20, 0);
    static char host[1 << 16];
    int rc = xfer_engine_register(eng, dev, 1 << 20, "*", XFER_REG_REMOTE);
    cr_assert_eq(rc, -CM_ENOT_SUPPORTED, "register device memory: %d", rc);
    cr_assert_eq(xfer_engine_register(eng, host, sizeof(host), "*", XFER_REG_REMOTE), 0);
    xfer_engine_unregister(eng, host);
    xfer_engine_destroy(eng);
}
#endif

/* Runs one batch of a single request and returns the task's final status. */
static int one_xfer(struct xfer_engine *eng, struct xfer_segment *seg, enum xfer_op op, void *local,
                    uint64_t remote, uint64_t len) {
    struct xfer_batch *b;
    cr_assert_eq(xfer_batch_alloc(eng, 1, &b), 0);
    struct xfer_request r = {
        .op = op, .local = local, .seg = seg, .remote_addr = remote, .length = len};
    size_t first, nf = 0;
    cr_assert_eq(xfer_batch_submit(b, &r, 1, &first), 0);
    xfer_batch_wait(b, 10000, NULL, 0, &nf);
    struct xfer_task_status st;
    cr_assert_eq(xfer_batch_status(b, first, &st), 0);
    xfer_batch_free(b);
    return (int)st.status;
}

/*
 * tcp or shm between two engines of this process, with the initiator's local buffer (and, for
 * tcp, also the target's registered buffer) in fake device memory: the bytes must arrive
 * intact and go through the staging pool (one cudaMemcpy and one staging buffer per transfer).
 */
static void staged_roundtrip(const char *proto, int shared) {
    setenv("XFER_CUDART_LIB", FAKE_CUDART, 1);
    cr_assert_eq(xfer__cuda_init(), 1);
    void *(*dmalloc)(size_t, int) = (void *(*)(size_t, int))fake_sym("fake_cuda_malloc");
    void (*dfree)(void *) = (void (*)(void *))fake_sym("fake_cuda_free");
    long (*ncopies)(void) = (long (*)(void))fake_sym("fake_cuda_memcpy_calls");
    struct xfer_pinned_pool *pool = xfer__staging_pool();
    struct xfer_pinned_stats s0, s1;
    const size_t len = 300000; /* not a multiple of anything */
    struct xfer_engine *tgt, *ini;
    cr_assert_eq(xfer_engine_create(NULL, &tgt), 0);
    struct xfer_engine_opts io = {.listen = ""};
    cr_assert_eq(xfer_engine_create(&io, &ini), 0);
    cr_assert_eq(xfer_engine_install(tgt, proto, NULL), 0);
    cr_assert_eq(xfer_engine_install(ini, proto, NULL), 0);
    char *remote = NULL;
    if (shared)
        cr_assert_eq(xfer_engine_alloc_shared(tgt, len, (void **)&remote), 0);
    else
        remote = malloc(len);
    for (size_t i = 0; i < len; i++)
        remote[i] = (char)(i * 7 + 1);
    cr_assert_eq(xfer_engine_register(tgt, remote, len, "*", XFER_REG_REMOTE), 0);
    char addr[64];
    cr_assert_gt(xfer_engine_local_addr(tgt, addr, sizeof(addr)), 0);
    struct xfer_segment *seg;
    cr_assert_eq(xfer_segment_open_addr(ini, addr, &seg), 0);
    cr_assert_str_eq(xfer_segment_transport(seg), proto);

    char *dev = dmalloc(len, 0), *host = malloc(len);
    cr_assert(xfer__is_device(dev));
    /* Host memory on both sides: no staging at all. */
    long c0 = ncopies();
    xfer_pinned_pool_stats(pool, &s0);
    cr_assert_eq(one_xfer(ini, seg, XFER_OP_READ, host, (uint64_t)(uintptr_t)remote, len),
                 XFER_STATUS_COMPLETED);
    cr_assert_eq(memcmp(host, remote, len), 0);
    xfer_pinned_pool_stats(pool, &s1);
    cr_assert_eq(ncopies() - c0, 0, "host memory is not staged");
    cr_assert_eq(s1.gets - s0.gets, 0);

    /* READ into device memory: received into a staging buffer, then one host-to-device copy. */
    memset(dev, 0, len);
    c0 = ncopies();
    xfer_pinned_pool_stats(pool, &s0);
    cr_assert_eq(one_xfer(ini, seg, XFER_OP_READ, dev, (uint64_t)(uintptr_t)remote, len),
                 XFER_STATUS_COMPLETED);
    cr_assert_eq(memcmp(dev, remote, len), 0, "%s READ into device memory", proto);
    xfer_pinned_pool_stats(pool, &s1);
    cr_assert_eq(ncopies() - c0, 1);
    cr_assert_eq(s1.gets - s0.gets, 1);
    cr_assert_eq(s1.outstanding, 0);

    /* WRITE from device memory: one device-to-host copy into a staging buffer, then sent. */
    for (size_t i = 0; i < len; i++)
        dev[i] = (char)(i * 13 + 5);
    c0 = ncopies();
    xfer_pinned_pool_stats(pool, &s0);
    cr_assert_eq(one_xfer(ini, seg, XFER_OP_WRITE, dev, (uint64_t)(uintptr_t)remote, len),
                 XFER_STATUS_COMPLETED);
    cr_assert_eq(memcmp(dev, remote, len), 0, "%s WRITE from device memory", proto);
    xfer_pinned_pool_stats(pool, &s1);
    cr_assert_eq(ncopies() - c0, 1);
    cr_assert_eq(s1.gets - s0.gets, 1);
    cr_assert_eq(s1.outstanding, 0);

    if (strcmp(proto, "tcp") == 0) {
        /* The target's registered buffer in device memory: tcp stages on the target side. */
        char *tdev = dmalloc(len, 0);
        for (size_t i = 0; i < len; i++)
            tdev[i] = (char)(i * 3 + 9);
        cr_assert_eq(xfer_engine_register(tgt, tdev, len, "*", XFER_REG_REMOTE), 0);
        struct xfer_segment *seg2;
        cr_assert_eq(xfer_segment_open_addr(ini, addr, &seg2), 0);
        uint64_t ba, bl;
        int found = 0;
        for (size_t i = 0; xfer_segment_buffer(seg2, i, &ba, &bl) == 0; i++)
            found |= ba == (uint64_t)(uintptr_t)tdev && bl == len;
        cr_assert(found, "the device buffer is in the descriptor");
        c0 = ncopies();
        xfer_pinned_pool_stats(pool, &s0);
        cr_assert_eq(one_xfer(ini, seg2, XFER_OP_READ, host, (uint64_t)(uintptr_t)tdev, len),
                     XFER_STATUS_COMPLETED);
        cr_assert_eq(memcmp(host, tdev, len), 0, "tcp READ of target device memory");
        cr_assert_eq(ncopies() - c0, 1, "target stages device-to-host");
        for (size_t i = 0; i < len; i++)
            host[i] = (char)(i * 11 + 2);
        cr_assert_eq(one_xfer(ini, seg2, XFER_OP_WRITE, host, (uint64_t)(uintptr_t)tdev, len),
                     XFER_STATUS_COMPLETED);
        cr_assert_eq(memcmp(host, tdev, len), 0, "tcp WRITE into target device memory");
        cr_assert_eq(ncopies() - c0, 2, "target stages host-to-device");
        /* Device memory on both sides: two copies per transfer (one per side). */
        cr_assert_eq(one_xfer(ini, seg2, XFER_OP_READ, dev, (uint64_t)(uintptr_t)tdev, len),
                     XFER_STATUS_COMPLETED);
        cr_assert_eq(memcmp(dev, tdev, len), 0);
        cr_assert_eq(ncopies() - c0, 4);
        /* The target puts its staging buffer back right after sending the reply. */
        for (int i = 0; i < 1000; i++) {
            xfer_pinned_pool_stats(pool, &s1);
            if (s1.outstanding == 0)
                break;
            usleep(1000);
        }
        cr_assert_eq(s1.gets - s0.gets, 4);
        cr_assert_eq(s1.outstanding, 0);
        xfer_segment_close(seg2);
        xfer_engine_unregister(tgt, tdev);
        dfree(tdev);
    } else {
        /* shm cannot reach the peer's device memory (CMA and memfd maps see host memory only). */
        char *tdev = dmalloc(4096, 0);
        cr_assert_eq(xfer_engine_register(tgt, tdev, 4096, "*", XFER_REG_REMOTE), 0);
        struct xfer_segment *seg2;
        cr_assert_eq(xfer_segment_open_addr(ini, addr, &seg2), 0);
        cr_assert_eq(one_xfer(ini, seg2, XFER_OP_READ, host, (uint64_t)(uintptr_t)tdev, 4096),
                     XFER_STATUS_FAILED);
        xfer_segment_close(seg2);
        xfer_engine_unregister(tgt, tdev);
        dfree(tdev);
    }
    xfer_segment_close(seg);
    xfer_engine_destroy(ini);
    xfer_engine_unregister(tgt, remote);
    if (shared)
        cr_assert_eq(xfer_engine_free_shared(tgt, remote), 0);
    else
        free(remote);
    xfer_engine_destroy(tgt);
    dfree(dev);
    free(host);
}

Test(gpu, fake_runtime_tcp_stages_device_memory) {
    staged_roundtrip("tcp", 0);
}

Test(gpu, fake_runtime_shm_stages_device_memory_cma) {
    staged_roundtrip("shm", 0);
}

Test(gpu, fake_runtime_shm_stages_device_memory_memfd) {
    staged_roundtrip("shm", 1);
}

/* A segment opened from the engine's own descriptor copies in-process: through cudaMemcpy when
 * either side is device memory, plain memmove otherwise. */
Test(gpu, fake_runtime_local_segment_device_copy) {
    setenv("XFER_CUDART_LIB", FAKE_CUDART, 1);
    cr_assert_eq(xfer__cuda_init(), 1);
    void *(*dmalloc)(size_t, int) = (void *(*)(size_t, int))fake_sym("fake_cuda_malloc");
    long (*ncopies)(void) = (long (*)(void))fake_sym("fake_cuda_memcpy_calls");
    struct xfer_engine *eng;
    cr_assert_eq(xfer_engine_create(NULL, &eng), 0);
    cr_assert_eq(xfer_engine_install(eng, "tcp", NULL), 0);
    const size_t len = 65536;
    char *tdev = dmalloc(len, 0), *host = malloc(len), *host2 = malloc(len);
    for (size_t i = 0; i < len; i++)
        tdev[i] = (char)(i * 5 + 3);
    cr_assert_eq(xfer_engine_register(eng, tdev, len, "*", XFER_REG_REMOTE), 0);
    cr_assert_eq(xfer_engine_register(eng, host2, len, "*", XFER_REG_REMOTE), 0);
    uint8_t desc[8192];
    ssize_t dl = xfer_engine_export_desc(eng, desc, sizeof(desc));
    cr_assert_gt(dl, 0);
    struct xfer_segment *seg;
    cr_assert_eq(xfer_segment_open(eng, desc, (size_t)dl, &seg), 0);
    long c0 = ncopies();
    cr_assert_eq(one_xfer(eng, seg, XFER_OP_READ, host, (uint64_t)(uintptr_t)tdev, len),
                 XFER_STATUS_COMPLETED);
    cr_assert_eq(memcmp(host, tdev, len), 0);
    cr_assert_eq(ncopies() - c0, 1, "device side copied with cudaMemcpy");
    cr_assert_eq(one_xfer(eng, seg, XFER_OP_WRITE, host, (uint64_t)(uintptr_t)host2, len),
                 XFER_STATUS_COMPLETED);
    cr_assert_eq(memcmp(host2, tdev, len), 0);
    cr_assert_eq(ncopies() - c0, 1, "host to host is a plain copy");
    xfer_segment_close(seg);
    xfer_engine_unregister(eng, tdev);
    xfer_engine_unregister(eng, host2);
    xfer_engine_destroy(eng);
    free(host);
    free(host2);
}

Test(gpu, fake_runtime_without_devices) {
    setenv("XFER_CUDART_LIB", FAKE_CUDART, 1);
    setenv("FAKE_CUDA_DEVICES", "0", 1);
    cr_assert_eq(xfer__cuda_init(), 0);
    cr_assert_str_eq(xfer__cuda_status(), "no CUDA devices");
    char loc[XFER_LOC_MAX];
    int x;
    xfer__mem_location(&x, loc, sizeof(loc));
    cr_assert_str_eq(loc, "cpu:0");
}

#endif
