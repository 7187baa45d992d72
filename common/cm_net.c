/* SPDX-License-Identifier: Apache-2.0 */
/* Socket helpers (see cm_net.h). */
#include "common/fmacros.h"

#include "common/cm_net.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

/* Public: see cm_net.h. */
int cm_net_tcp_bind(const char *host, int port, bool numeric_host) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags =
                                 AI_PASSIVE | AI_NUMERICSERV | (numeric_host ? AI_NUMERICHOST : 0)};
    struct addrinfo *ai = NULL;
    char ps[8];
    snprintf(ps, sizeof(ps), "%d", port);
    if (getaddrinfo(host, ps, &hints, &ai) != 0 || ai == NULL)
        return -EINVAL;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = fd < 0 ? -errno : 0;
    int one = 1;
    if (rc == 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
            rc = -errno;
    }
    freeaddrinfo(ai);
    if (rc < 0) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    return fd;
}
