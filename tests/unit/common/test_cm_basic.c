/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cm_errno, cm_mem accounting, cm_time and cm_buf's JSON string escaper. */
#include "common/fmacros.h"

#include "common/cm_buf.h"
#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

Test(cm_errno, names_and_messages) {
    cr_assert_str_eq(cm_err_name(-CM_EOBJECT_NOT_FOUND), "OBJECT_NOT_FOUND");
    cr_assert_str_eq(cm_strerror(-CM_EOBJECT_NOT_FOUND), "object not found");
    cr_assert_str_eq(cm_err_name(-ENOENT), "ENOENT");
    cr_assert_str_eq(cm_err_name(0), "OK");
    cr_assert_str_eq(cm_err_name(-99999), "UNKNOWN");
    cr_assert_gt(CM_EINTERNAL_ERROR, 4095);
}

Test(cm_mem, accounting_follows_allocations) {
    size_t before = cm_mem_used();
    char *p = cm_malloc(1 << 20);
    memset(p, 1, 1 << 20);
    cr_assert_geq(cm_mem_used(), before + (1 << 20));
    p = cm_realloc(p, 2 << 20);
    cr_assert_geq(cm_mem_used(), before + (2 << 20));
    cm_free(p);
    cr_assert_eq(cm_mem_used(), before);
    cr_assert_null(cm_try_calloc(SIZE_MAX / 2, 4));
    char *s = cm_strndup("abcdef", 3);
    cr_assert_str_eq(s, "abc");
    cm_free(s);
}

Test(cm_time, monotonic_advances) {
    uint64_t a = cm_mono_ms();
    cm_sleep_ms(20);
    uint64_t b = cm_mono_ms();
    cr_assert_geq(b - a, 19);
    cr_assert_gt(cm_wall_ms(), 1700000000000ull);
}

Test(cm_buf, json_str_escapes_quotes_controls_and_high_bytes) {
    struct cm_buf b;
    cm_buf_init(&b);
    cm_buf_append_json_str(&b, "a\"b\\c\n\x01\xff\0z", 10);
    cm_buf_append(&b, "", 1);
    cr_assert_str_eq(b.data, "\"a\\\"b\\\\c\\u000a\\u0001\\u00ff\\u0000z\"");
    cm_buf_clear(&b);
    cm_buf_append_json_str(&b, "", 0);
    cr_assert_eq(b.len, 2);
    cr_assert_eq(memcmp(b.data, "\"\"", 2), 0);
    cm_buf_fini(&b);
}
