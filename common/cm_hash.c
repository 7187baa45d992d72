/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cm_hash64: a multiply-mix hash. Input is consumed 48 bytes at a time in three independent
 * lanes (so the multiplier pipelines stay busy), then 16 bytes at a time, then a final
 * overlapping 16-byte (or shorter) read. Each step folds the 128-bit product of two
 * key-whitened words into 64 bits, which spreads every input bit over the whole state.
 * cm_rand64: thread-local splitmix64.
 */
#include "common/fmacros.h"

#include "common/cm_hash.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>

/* Odd constants with roughly half their bits set. */
#define CM_H_K0 0x9e3779b97f4a7c15ull
#define CM_H_K1 0xc2b2ae3d27d4eb4full
#define CM_H_K2 0x94d049bb133111ebull
#define CM_H_K3 0xd6e8feb86659fd93ull

static inline uint64_t cm_h_fold(uint64_t a, uint64_t b) {
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t cm_h_r64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t cm_h_r32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

uint64_t cm_hash64(const void *data, size_t n, uint64_t seed) {
    const uint8_t *p = data;
    size_t left = n;
    uint64_t s0 = cm_h_fold(seed ^ CM_H_K0, CM_H_K1 ^ (uint64_t)n);
    uint64_t a, b;

    if (left > 16) {
        if (left > 48) {
            uint64_t s1 = s0, s2 = s0;
            do {
                s0 = cm_h_fold(cm_h_r64(p) ^ CM_H_K1, cm_h_r64(p + 8) ^ s0);
                s1 = cm_h_fold(cm_h_r64(p + 16) ^ CM_H_K2, cm_h_r64(p + 24) ^ s1);
                s2 = cm_h_fold(cm_h_r64(p + 32) ^ CM_H_K3, cm_h_r64(p + 40) ^ s2);
                p += 48;
                left -= 48;
            } while (left > 48);
            s0 ^= s1 ^ s2;
        }
        while (left > 16) {
            s0 = cm_h_fold(cm_h_r64(p) ^ CM_H_K1, cm_h_r64(p + 8) ^ s0);
            p += 16;
            left -= 16;
        }
        /* Last 16 bytes of the input, overlapping what was consumed already. */
        a = cm_h_r64(p + left - 16);
        b = cm_h_r64(p + left - 8);
    } else if (left >= 4) {
        size_t mid = (left >> 3) << 2; /* 0 for 4..7 bytes, 4 for 8..16 */
        a = (cm_h_r32(p) << 32) | cm_h_r32(p + mid);
        b = (cm_h_r32(p + left - 4) << 32) | cm_h_r32(p + left - 4 - mid);
    } else if (left > 0) {
        a = ((uint64_t)p[0] << 16) | ((uint64_t)p[left >> 1] << 8) | p[left - 1];
        b = 0;
    } else {
        a = b = 0;
    }
    a ^= CM_H_K1;
    b ^= s0;
    uint64_t h = cm_h_fold(a, b);
    return cm_h_fold(h ^ CM_H_K0 ^ (uint64_t)n, CM_H_K2 ^ s0);
}

static _Thread_local uint64_t cm_rand_state;
static _Thread_local int cm_rand_ready;

void cm_rand_seed(uint64_t seed) {
    cm_rand_state = seed;
    cm_rand_ready = 1;
}

static void cm_rand_init(void) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&s;
    }
    cm_rand_seed(s);
}

uint64_t cm_rand64(void) {
    if (!cm_rand_ready)
        cm_rand_init();
    uint64_t z = (cm_rand_state += CM_H_K0);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
