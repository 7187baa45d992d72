/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keyspace notifications (Redis notifyKeyspaceEvent): the enabled classes and the message
 * builder. Kept apart from the pub/sub core so that keyspace code (srv_db.c) links without the
 * network layer; srv_pubsub_init() plugs the publisher in.
 */
#include "common/fmacros.h"

#include "server/srv_pubsub.h"

#include "common/cm_atomic.h"
#include "common/cm_mem.h"

#include <string.h>

_Atomic int srv_notify_flags;

/* The publisher (srv_pubsub_publish once pub/sub is set up); NULL: notifications go nowhere. */
srv_notify_publish_fn *srv_notify__publish;

void srv_notify__send(int type, const char *event, const char *key, size_t klen) {
    int flags = cm_atomic_load_relaxed(&srv_notify_flags);
    if (!(flags & type) || !srv_notify__publish)
        return;
    char stack[256];
    size_t elen = strlen(event);
    size_t need = 32 + (klen > elen ? klen : elen);
    char *ch = need <= sizeof(stack) ? stack : cm_malloc(need);
    if (flags & SRV_NOTIFY_KEYSPACE) {
        memcpy(ch, "__keyspace@0__:", 15);
        memcpy(ch + 15, key, klen);
        srv_notify__publish(ch, 15 + klen, event, elen, 0);
    }
    if (flags & SRV_NOTIFY_KEYEVENT) {
        memcpy(ch, "__keyevent@0__:", 15);
        memcpy(ch + 15, event, elen);
        srv_notify__publish(ch, 15 + elen, key, klen, 0);
    }
    if (ch != stack)
        cm_free(ch);
}
