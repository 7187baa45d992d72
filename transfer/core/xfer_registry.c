/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Registry of the transports compiled into this build. Optional transports are listed under
 * their build macros, which transfer/module.mk defines when the library is found.
 */
#include "common/fmacros.h"

#include "transfer/xfer_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef XFER_HAVE_FABRIC
extern const struct xfer_transport_ops xfer_fabric_ops;
#endif
#ifdef XFER_HAVE_VERBS
extern const struct xfer_transport_ops xfer_rdma_ops;
#endif

static const struct xfer_transport_ops *const xfer_registry[] = {
    &xfer_shm_ops,    &xfer_tcp_ops,
#ifdef XFER_HAVE_FABRIC
    &xfer_fabric_ops,
#endif
#ifdef XFER_HAVE_VERBS
    &xfer_rdma_ops,
#endif
    &xfer_fault_ops,
};

/*
 * Returns the ops table of the compiled-in transport called name, or NULL. Thread-safe (the
 * table is constant).
 */
const struct xfer_transport_ops *xfer__transport_find(const char *name) {
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof(xfer_registry) / sizeof(xfer_registry[0]); i++)
        if (strcmp(xfer_registry[i]->name, name) == 0)
            return xfer_registry[i];
    return NULL;
}

/*
 * Writes the comma-separated names of the compiled-in transports into buf. Returns the length
 * or -ENOSPC. Thread-safe.
 */
int xfer_transports_available(char *buf, size_t len) {
    size_t off = 0;
    for (size_t i = 0; i < sizeof(xfer_registry) / sizeof(xfer_registry[0]); i++) {
        int n = snprintf(buf + off, len > off ? len - off : 0, "%s%s", i ? "," : "",
                         xfer_registry[i]->name);
        if (n < 0 || off + (size_t)n >= len)
            return -ENOSPC;
        off += (size_t)n;
    }
    return (int)off;
}
