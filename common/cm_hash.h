/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Non-cryptographic hashing and a fast per-thread PRNG. cm_hash64() is a multiply-mix hash
 * (128-bit products folded to 64 bits) for hash tables and sharding; it is not a MAC and must
 * not be relied on against adversaries that know the seed. cm_rand64() is a splitmix64 stream
 * per thread, seeded from getrandom(2).
 */
#ifndef CRESCENT_COMMON_CM_HASH_H
#define CRESCENT_COMMON_CM_HASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * Hashes n bytes at p with seed. Deterministic for a given (bytes, seed) on every platform of
 * the same endianness (little-endian reads). p may be NULL when n is 0. Thread-safe, no state.
 */
uint64_t cm_hash64(const void *p, size_t n, uint64_t seed);

/*
 * Returns 64 pseudo-random bits from a thread-local splitmix64 generator, seeded on first use
 * in each thread from getrandom(2) (falling back to time and addresses). Not for secrets.
 * Thread-safe (no shared state).
 */
uint64_t cm_rand64(void);

/* Reseeds the calling thread's generator (tests use it for reproducible sequences). */
void cm_rand_seed(uint64_t seed);

#endif
