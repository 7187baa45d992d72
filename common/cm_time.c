/* SPDX-License-Identifier: Apache-2.0 */
/* Clock helpers over clock_gettime(). */
#include "common/fmacros.h"

#include "common/cm_time.h"

#include <errno.h>
#include <time.h>

static uint64_t cm_clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t cm_mono_ns(void) {
    return cm_clock_ns(CLOCK_MONOTONIC);
}

uint64_t cm_mono_us(void) {
    return cm_clock_ns(CLOCK_MONOTONIC) / 1000;
}

uint64_t cm_mono_ms(void) {
    return cm_clock_ns(CLOCK_MONOTONIC) / 1000000;
}

uint64_t cm_mono_coarse_ms(void) {
    return cm_clock_ns(CLOCK_MONOTONIC_COARSE) / 1000000;
}

uint64_t cm_wall_us(void) {
    return cm_clock_ns(CLOCK_REALTIME) / 1000;
}

uint64_t cm_wall_ms(void) {
    return cm_clock_ns(CLOCK_REALTIME) / 1000000;
}

void cm_sleep_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}
