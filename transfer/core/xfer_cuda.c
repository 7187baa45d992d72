// SPDX-License-Identifier: Apache-2.0
/*
 * CUDA detection for the transfer engine: loads libcudart with dlopen on first use and answers
 * "is this pointer device memory?" with cudaPointerGetAttributes. Nothing links against CUDA,
 * so the same binary runs without it (every address is then cpu). Built against
 * cuda_runtime_api.h only when HAVE_CUDA=1 (XFER_HAVE_CUDA); otherwise the stubs at the end.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "transfer/core/xfer_pinned.h"
#include "transfer/xfer_int.h"

#if defined(XFER_HAVE_CUDA) && XFER_HAVE_CUDA

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>

/* The libcudart entry points we use, resolved with dlsym. */
struct xfer_cudart {
    void *handle;
    cudaError_t (*get_device_count)(int *);
    cudaError_t (*pointer_get_attributes)(struct cudaPointerAttributes *, const void *);
    cudaError_t (*memcpy_fn)(void *, const void *, size_t, enum cudaMemcpyKind);
    cudaError_t (*malloc_host)(void **, size_t);
    cudaError_t (*free_host)(void *);
    cudaError_t (*get_last_error)(void);
    int ndev;
    const char *status;
    char status_buf[64];
};

static struct xfer_cudart xfer_cuda;
static pthread_once_t xfer_cuda_once = PTHREAD_ONCE_INIT;

static void *xfer_cuda_open_lib(void) {
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                        "libcudart.so.11.0"};
    const char *env = getenv("XFER_CUDART_LIB");
    if (env && *env)
        return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

#define XFER_CUDA_SYM(field, name)                                  \
    do {                                                            \
        *(void **)&xfer_cuda.field = dlsym(xfer_cuda.handle, name); \
        if (!xfer_cuda.field)                                       \
            goto missing;                                           \
    } while (0)

static void xfer_cuda_load(void) {
    xfer_cuda.handle = xfer_cuda_open_lib();
    if (!xfer_cuda.handle) {
        xfer_cuda.status = "libcudart not found";
        return;
    }
    XFER_CUDA_SYM(get_device_count, "cudaGetDeviceCount");
    XFER_CUDA_SYM(pointer_get_attributes, "cudaPointerGetAttributes");
    XFER_CUDA_SYM(memcpy_fn, "cudaMemcpy");
    XFER_CUDA_SYM(malloc_host, "cudaMallocHost");
    XFER_CUDA_SYM(free_host, "cudaFreeHost");
    XFER_CUDA_SYM(get_last_error, "cudaGetLastError");
    if (xfer_cuda.get_device_count(&xfer_cuda.ndev) != cudaSuccess || xfer_cuda.ndev <= 0) {
        xfer_cuda.get_last_error();
        xfer_cuda.ndev = 0;
        xfer_cuda.status = "no CUDA devices";
        return;
    }
    snprintf(xfer_cuda.status_buf, sizeof(xfer_cuda.status_buf), "cuda: %d device(s)",
             xfer_cuda.ndev);
    xfer_cuda.status = xfer_cuda.status_buf;
    return;
missing:
    /* The library stays loaded: unloading CUDA runtimes at run time is not safe. */
    xfer_cuda.ndev = 0;
    xfer_cuda.status = "libcudart lacks a required symbol";
}

/*
 * Loads libcudart once and returns the device count (0 when unusable). Thread-safe
 * (pthread_once).
 */
int xfer__cuda_init(void) {
    pthread_once(&xfer_cuda_once, xfer_cuda_load);
    return xfer_cuda.ndev;
}

/* Describes the CUDA state in one static line. Thread-safe. */
const char *xfer__cuda_status(void) {
    xfer__cuda_init();
    return xfer_cuda.status;
}

/*
 * Classifies addr as device or host memory. An error from cudaPointerGetAttributes (older
 * runtimes fail on plain host pointers) means cpu; the sticky error is cleared. Thread-safe.
 */
int xfer__mem_locate(const void *addr, struct xfer_mem_loc *loc) {
    struct cudaPointerAttributes attr;

    loc->kind = XFER_MEM_CPU;
    loc->device = 0;
    if (!addr || xfer__cuda_init() == 0)
        return 0;
    memset(&attr, 0, sizeof(attr));
    if (xfer_cuda.pointer_get_attributes(&attr, addr) != cudaSuccess) {
        xfer_cuda.get_last_error();
        return 0;
    }
    if (attr.type == cudaMemoryTypeDevice) {
        loc->kind = XFER_MEM_CUDA;
        loc->device = attr.device;
    }
    return 0;
}

/* Copies between host and device memory in either direction (synchronous). Thread-safe. */
int xfer__cuda_memcpy(void *dst, const void *src, size_t len) {
    if (len == 0)
        return 0;
    if (xfer__cuda_init() == 0) {
        memcpy(dst, src, len);
        return 0;
    }
    if (xfer_cuda.memcpy_fn(dst, src, len, cudaMemcpyDefault) != cudaSuccess) {
        xfer_cuda.get_last_error();
        return -CM_ETRANSFER_FAIL;
    }
    return 0;
}

/*
 * Allocates pinned host memory, or pageable memory when CUDA is unusable or pinning fails
 * (*pinned tells which). Returns NULL on OOM. Caller frees with xfer__host_free.
 */
void *xfer__host_alloc(size_t len, int *pinned) {
    void *p = NULL;
    *pinned = 0;
    if (xfer__cuda_init() > 0) {
        if (xfer_cuda.malloc_host(&p, len) == cudaSuccess && p) {
            *pinned = 1;
            return p;
        }
        xfer_cuda.get_last_error();
    }
    return cm_try_malloc(len ? len : 1);
}

/* Frees a buffer from xfer__host_alloc. NULL is accepted. */
void xfer__host_free(void *buf, int pinned) {
    if (!buf)
        return;
    if (pinned)
        xfer_cuda.free_host(buf);
    else
        cm_free(buf);
}

#else /* !XFER_HAVE_CUDA: CUDA compiled out, every address is host memory. */

/* CUDA is compiled out: no devices. Thread-safe. */
int xfer__cuda_init(void) {
    return 0;
}

/* CUDA is compiled out. Thread-safe. */
const char *xfer__cuda_status(void) {
    return "compiled out";
}

/* Without CUDA every address is cpu:0. Thread-safe. */
int xfer__mem_locate(const void *addr, struct xfer_mem_loc *loc) {
    (void)addr;
    loc->kind = XFER_MEM_CPU;
    loc->device = 0;
    return 0;
}

/* Without CUDA a copy is memcpy. Thread-safe. */
int xfer__cuda_memcpy(void *dst, const void *src, size_t len) {
    if (len)
        memcpy(dst, src, len);
    return 0;
}

/* Without CUDA host memory is pageable (*pinned = 0). Caller frees with xfer__host_free. */
void *xfer__host_alloc(size_t len, int *pinned) {
    *pinned = 0;
    return cm_try_malloc(len ? len : 1);
}

/* Frees a buffer from xfer__host_alloc. NULL is accepted. */
void xfer__host_free(void *buf, int pinned) {
    (void)pinned;
    cm_free(buf);
}

#endif

/*
 * Writes the location tag of addr ("cpu:0", "cuda:1") into buf: the engine's hook declared in
 * transfer/xfer_int.h. Returns 0 or -ENOSPC. Thread-safe.
 */
int xfer__mem_location(const void *addr, char *buf, size_t len) {
    struct xfer_mem_loc loc;
    xfer__mem_locate(addr, &loc);
    int n = snprintf(buf, len, "%s:%d", loc.kind == XFER_MEM_CUDA ? "cuda" : "cpu", loc.device);
    if (n < 0 || (size_t)n >= len)
        return -ENOSPC;
    return 0;
}
