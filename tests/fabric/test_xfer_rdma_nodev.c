// SPDX-License-Identifier: Apache-2.0
/*
 * The rdma transport on a host without RDMA devices (every CI machine): installing it fails
 * with -CM_ENO_DEVICE and the log says "no RDMA devices"; segments then use another transport.
 * Skips (77) on a host that has RDMA devices: the mock test covers the logic, and the data path
 * awaits a hardware run.
 */
#include "common/fmacros.h"

#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "transfer/xfer.h"

static char warn[1024];

static void log_cb(enum cm_log_level level, const char *subsys, const char *line, void *arg) {
    (void)subsys, (void)arg;
    if (level >= CM_LOG_WARNING && strlen(warn) + strlen(line) + 2 < sizeof(warn)) {
        strcat(warn, line);
        strcat(warn, "\n");
    }
}

int main(void) {
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (list)
        ibv_free_device_list(list);
    if (n > 0) {
        printf("SKIP: %d RDMA device(s) present\n", n);
        return 77;
    }
    cm_log_set_callback(log_cb, NULL);
    cm_log_set_level(CM_LOG_VERBOSE);
    struct xfer_engine *eng;
    if (xfer_engine_create(NULL, &eng) != 0)
        return 1;
    int rc = xfer_engine_install(eng, "rdma", NULL);
    int ok = rc == -CM_ENO_DEVICE && strstr(warn, "rdma: no RDMA devices") != NULL;
    printf("install rdma: %s (%s); log: %s", cm_err_name(rc), cm_strerror(rc), warn);
    xfer_engine_destroy(eng);
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
