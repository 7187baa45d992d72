// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in libcudart for tests on hosts without a GPU: implements the few runtime entry
 * points transfer/core/xfer_cuda.c resolves with dlsym, with "device memory" that is ordinary
 * heap memory remembered in a table. Tests load it through XFER_CUDART_LIB and allocate device
 * memory with fake_cuda_malloc(). Environment: FAKE_CUDA_DEVICES (default 1),
 * FAKE_CUDA_PIN_FAIL=1 makes cudaMallocHost fail (pageable fallback).
 */
#include "common/fmacros.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_MAX_ALLOC 64

/* Layout-compatible with struct cudaPointerAttributes (CUDA 11+). */
struct fake_ptr_attr {
    int type; /* 0 unregistered, 1 host, 2 device, 3 managed */
    int device;
    void *device_pointer;
    void *host_pointer;
};

static struct {
    pthread_mutex_t lock;
    struct {
        char *p;
        size_t len;
        int dev;
    } a[FAKE_MAX_ALLOC];
    int n;
    int last_error;
    long memcpy_calls;
} fake = {.lock = PTHREAD_MUTEX_INITIALIZER};

int cudaGetDeviceCount(int *n);
int cudaGetDeviceCount(int *n) {
    const char *e = getenv("FAKE_CUDA_DEVICES");
    *n = e ? atoi(e) : 1;
    if (*n <= 0) {
        fake.last_error = 100; /* cudaErrorNoDevice */
        return 100;
    }
    return 0;
}

int cudaPointerGetAttributes(struct fake_ptr_attr *attr, const void *ptr);
int cudaPointerGetAttributes(struct fake_ptr_attr *attr, const void *ptr) {
    memset(attr, 0, sizeof(*attr));
    pthread_mutex_lock(&fake.lock);
    for (int i = 0; i < fake.n; i++) {
        if ((const char *)ptr >= fake.a[i].p && (const char *)ptr < fake.a[i].p + fake.a[i].len) {
            attr->type = 2;
            attr->device = fake.a[i].dev;
            attr->device_pointer = (void *)(uintptr_t)ptr;
        }
    }
    pthread_mutex_unlock(&fake.lock);
    return 0;
}

int cudaMemcpy(void *dst, const void *src, size_t len, int kind);
int cudaMemcpy(void *dst, const void *src, size_t len, int kind) {
    (void)kind;
    memcpy(dst, src, len);
    __atomic_add_fetch(&fake.memcpy_calls, 1, __ATOMIC_RELAXED);
    return 0;
}

int cudaMallocHost(void **p, size_t len);
int cudaMallocHost(void **p, size_t len) {
    const char *e = getenv("FAKE_CUDA_PIN_FAIL");
    if (e && *e == '1') {
        fake.last_error = 2; /* cudaErrorMemoryAllocation */
        return 2;
    }
    *p = malloc(len);
    return *p ? 0 : 2;
}

int cudaFreeHost(void *p);
int cudaFreeHost(void *p) {
    free(p);
    return 0;
}

int cudaGetLastError(void);
int cudaGetLastError(void) {
    int e = fake.last_error;
    fake.last_error = 0;
    return e;
}

/* Test helpers (not CUDA API): "device" memory on device dev, and the memcpy count. */
void *fake_cuda_malloc(size_t len, int dev);
void *fake_cuda_malloc(size_t len, int dev) {
    void *p = malloc(len);
    pthread_mutex_lock(&fake.lock);
    if (fake.n < FAKE_MAX_ALLOC) {
        fake.a[fake.n].p = p;
        fake.a[fake.n].len = len;
        fake.a[fake.n].dev = dev;
        fake.n++;
    }
    pthread_mutex_unlock(&fake.lock);
    return p;
}

void fake_cuda_free(void *p);
void fake_cuda_free(void *p) {
    pthread_mutex_lock(&fake.lock);
    for (int i = 0; i < fake.n; i++)
        if (fake.a[i].p == p)
            fake.a[i] = fake.a[--fake.n];
    pthread_mutex_unlock(&fake.lock);
    free(p);
}

long fake_cuda_memcpy_calls(void);
long fake_cuda_memcpy_calls(void) {
    return __atomic_load_n(&fake.memcpy_calls, __ATOMIC_RELAXED);
}

int cudaMalloc(void **p, size_t len);
int cudaMalloc(void **p, size_t len) {
    *p = fake_cuda_malloc(len, 0);
    return *p ? 0 : 2;
}

int cudaFree(void *p);
int cudaFree(void *p) {
    fake_cuda_free(p);
    return 0;
}
