/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Type dispatch for aggregate values (lists, sets, hashes, sorted sets): free, copy and name.
 * The payload structures and their commands live in srv_t_*.c.
 */
#include "common/fmacros.h"

#include "server/srv_db.h"
#include "server/srv_t.h"

#include <stddef.h>

void srv_type_free(enum srv_type type, void *payload) {
    void (*fn)(void *) = type == SRV_TYPE_LIST   ? srv_list_free
                         : type == SRV_TYPE_SET  ? srv_set_free
                         : type == SRV_TYPE_HASH ? srv_hash_free
                         : type == SRV_TYPE_ZSET ? srv_zset_free
                                                 : NULL;
    if (fn && payload)
        fn(payload);
}

void *srv_type_dup(enum srv_type type, const void *payload) {
    void *(*fn)(const void *) = type == SRV_TYPE_LIST   ? srv_list_dup
                                : type == SRV_TYPE_SET  ? srv_set_dup
                                : type == SRV_TYPE_HASH ? srv_hash_dup
                                : type == SRV_TYPE_ZSET ? srv_zset_dup
                                                        : NULL;
    return fn ? fn(payload) : NULL;
}

const char *srv_type_name(enum srv_type type) {
    static const char *const names[] = {"string", "list", "set", "hash", "zset"};
    return (unsigned)type <= SRV_TYPE_ZSET ? names[type] : "none";
}
