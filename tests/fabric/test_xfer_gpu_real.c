// SPDX-License-Identifier: Apache-2.0
/*
 * GPU memory on a real CUDA device (skips with 77 where libcudart or a device is missing, i.e.
 * on every CPU-only machine): device pointers are recognized as cuda:N, the pinned pool really
 * pins, the staging helpers move bytes to and from device memory, and the fabric transport
 * either registers device memory (provider with FI_HMEM) and moves bytes into it between two
 * engines of this process, or refuses it with -CM_ENOT_SUPPORTED. Prints what it saw.
 */
#include "common/fmacros.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cm_errno.h"
#include "transfer/core/xfer_pinned.h"
#include "transfer/xfer.h"
#include "transfer/xfer_int.h"

#define LEN (8u << 20)

static int failures;
#define CHECK(c, ...)                                                    \
    do {                                                                 \
        if (!(c)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c); \
            fprintf(stderr, __VA_ARGS__);                                \
            fprintf(stderr, "\n");                                       \
            failures++;                                                  \
        }                                                                \
    } while (0)

typedef int cuda_malloc_fn(void **, size_t);
typedef int cuda_free_fn(void *);

static void *cudart(void) {
    const char *env = getenv("XFER_CUDART_LIB");
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                        "libcudart.so.11.0"};
    if (env && *env)
        return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

/* Two engines in this process: write host bytes into device memory over fabric, read back. */
static void fabric_round_trip(void *dev, const char *host) {
    struct xfer_engine *srv = NULL, *cli = NULL;
    struct xfer_segment *seg = NULL;
    char addr[128], *back = calloc(1, LEN);
    int rc;

    if (xfer_engine_create(NULL, &srv) || xfer_engine_create(NULL, &cli) ||
        xfer_engine_install(srv, "fabric", NULL) || xfer_engine_install(cli, "fabric", NULL)) {
        printf("fabric: not available, skipped\n");
        goto out;
    }
    rc = xfer_engine_register(srv, dev, LEN, "*", XFER_REG_REMOTE);
    if (rc == -CM_ENOT_SUPPORTED) {
        printf("fabric: provider has no FI_HMEM: device memory refused (-CM_ENOT_SUPPORTED)\n");
        goto out;
    }
    CHECK(rc == 0, "register device memory with fabric: %s", cm_strerror(rc));
    if (rc)
        goto out;
    xfer_engine_local_addr(srv, addr, sizeof(addr));
    rc = xfer_segment_open_addr(cli, addr, &seg);
    CHECK(rc == 0, "segment open: %s", cm_strerror(rc));
    if (rc)
        goto unreg;
    struct xfer_request r = {XFER_OP_WRITE, (void *)host, seg, (uint64_t)(uintptr_t)dev, LEN};
    struct xfer_batch *b;
    xfer_batch_alloc(cli, 1, &b);
    xfer_batch_submit(b, &r, 1, NULL);
    rc = xfer_batch_wait(b, 20000, NULL, 0, NULL);
    xfer_batch_free(b);
    CHECK(rc == 0, "write into device memory: %s", cm_strerror(rc));
    r.op = XFER_OP_READ;
    r.local = back;
    xfer_batch_alloc(cli, 1, &b);
    xfer_batch_submit(b, &r, 1, NULL);
    rc = xfer_batch_wait(b, 20000, NULL, 0, NULL);
    xfer_batch_free(b);
    CHECK(rc == 0, "read from device memory: %s", cm_strerror(rc));
    CHECK(memcmp(back, host, LEN) == 0, "fabric round trip through device memory differs");
    printf("fabric: FI_HMEM registration and %u MiB round trip through device memory: %s\n",
           LEN >> 20, failures ? "FAILED" : "ok");
    xfer_segment_close(seg);
unreg:
    xfer_engine_unregister(srv, dev);
out:
    xfer_engine_destroy(cli);
    xfer_engine_destroy(srv);
    free(back);
}

int main(void) {
    int ndev = xfer__cuda_init();
    if (ndev <= 0) {
        printf("SKIP: %s\n", xfer__cuda_status());
        return 77;
    }
    void *h = cudart();
    cuda_malloc_fn *cmalloc = h ? (cuda_malloc_fn *)dlsym(h, "cudaMalloc") : NULL;
    cuda_free_fn *cfree = h ? (cuda_free_fn *)dlsym(h, "cudaFree") : NULL;
    void *dev = NULL;
    if (!cmalloc || !cfree || cmalloc(&dev, LEN) != 0 || !dev) {
        printf("SKIP: cudaMalloc unavailable (%s)\n", xfer__cuda_status());
        return 77;
    }
    printf("%s\n", xfer__cuda_status());

    char loc[XFER_LOC_MAX], *host = malloc(LEN);
    for (size_t i = 0; i < LEN; i++)
        host[i] = (char)(i * 31 + 1);
    xfer__mem_location(dev, loc, sizeof(loc));
    CHECK(strncmp(loc, "cuda:", 5) == 0, "device pointer located as %s", loc);
    xfer__mem_location(host, loc, sizeof(loc));
    CHECK(strcmp(loc, "cpu:0") == 0, "host pointer located as %s", loc);

    struct xfer_pinned_pool *pool = xfer__staging_pool();
    void *pb = xfer_pinned_get(pool, 4096);
    struct xfer_pinned_stats st;
    xfer_pinned_pool_stats(pool, &st);
    CHECK(st.pageable == 0, "staging buffer is not pinned");
    xfer_pinned_put(pool, pb);

    void *tok;
    void *in = xfer__stage_in(dev, LEN, &tok);
    CHECK(in && tok, "stage_in for device memory");
    if (in) {
        memcpy(in, host, LEN);
        CHECK(xfer__stage_in_done(dev, in, LEN, tok) == 0, "H2D copy");
    }
    const char *out = xfer__stage_out(dev, LEN, &tok);
    CHECK(out && memcmp(out, host, LEN) == 0, "D2H staging returns the bytes written");
    xfer__stage_release(tok);
    printf("staging helpers: %s\n", failures ? "FAILED" : "ok");

    fabric_round_trip(dev, host);
    cfree(dev);
    free(host);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
