/* SPDX-License-Identifier: Apache-2.0 */
/* The table of compiled-in election backends, looked up by URI scheme. */
#include "common/fmacros.h"

#include <string.h>

#include "ha/ha.h"

static const struct ha_backend_ops *const ha_backends[] = {
    &ha_redis_ops,
#ifdef HA_HAVE_ETCD
    &ha_etcd_ops,
#endif
#ifdef HA_HAVE_K8S
    &ha_k8s_ops,
#endif
};

/* Returns the backend for scheme or NULL. Thread-safe. */
const struct ha_backend_ops *ha_backend_find(const char *scheme) {
    for (size_t i = 0; i < sizeof(ha_backends) / sizeof(ha_backends[0]); i++)
        if (strcmp(ha_backends[i]->scheme, scheme) == 0)
            return ha_backends[i];
    return NULL;
}
