/* SPDX-License-Identifier: Apache-2.0 */
/* Clock helpers: monotonic and wall time in ms/us/ns. All functions are thread-safe. */
#ifndef CRESCENT_COMMON_CM_TIME_H
#define CRESCENT_COMMON_CM_TIME_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds / microseconds / milliseconds. */
uint64_t cm_mono_ns(void);
uint64_t cm_mono_us(void);
uint64_t cm_mono_ms(void);

/*
 * CLOCK_MONOTONIC_COARSE in milliseconds: the time of the last timer tick (resolution 1 to 10
 * ms, the kernel's HZ), read without the TSC, so several times cheaper than cm_mono_ms(); for
 * coarse stamps such as LRU ages taken per command. Monotonic across threads; compare it only
 * with itself, never with cm_mono_ms().
 */
uint64_t cm_mono_coarse_ms(void);

/* CLOCK_REALTIME (Unix epoch) in microseconds / milliseconds. */
uint64_t cm_wall_us(void);
uint64_t cm_wall_ms(void);

/* Sleeps for ms milliseconds, resuming after signals. */
void cm_sleep_ms(uint64_t ms);

#endif
