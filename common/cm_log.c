/* SPDX-License-Identifier: Apache-2.0 */
/* Log sink: formats a line into a stack buffer and writes it with one write(2). */
#include "common/fmacros.h"

#include "common/cm_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int cm_log_min_level = CM_LOG_NOTICE;

static int cm_log_fd = -1;
static char cm_log_role = '-';
static char cm_log_path[4096];
static cm_log_cb *cm_log_user_cb;
static void *cm_log_user_arg;

static const char *const cm_log_names[] = {"debug", "verbose", "notice", "warning", "nothing"};
static const char cm_log_chars[] = {'.', '-', '*', '#', ' '};

int cm_log_open(const char *path, char role) {
    int fd = STDERR_FILENO;
    if (path && *path) {
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return -errno;
        snprintf(cm_log_path, sizeof(cm_log_path), "%s", path);
    } else {
        cm_log_path[0] = '\0';
    }
    int old = cm_log_fd;
    cm_log_fd = fd;
    cm_log_role = role;
    if (old > STDERR_FILENO)
        close(old);
    return 0;
}

int cm_log_reopen(void) {
    if (cm_log_path[0] == '\0')
        return 0;
    char path[sizeof(cm_log_path)];
    memcpy(path, cm_log_path, sizeof(path));
    return cm_log_open(path, cm_log_role);
}

void cm_log_set_callback(cm_log_cb *cb, void *arg) {
    cm_log_user_cb = cb;
    cm_log_user_arg = arg;
}

void cm_log_set_level(enum cm_log_level level) {
    cm_log_min_level = (int)level;
}

int cm_log_level_parse(const char *name) {
    for (int i = 0; i <= CM_LOG_NONE; i++)
        if (strcasecmp(name, cm_log_names[i]) == 0)
            return i;
    return -EINVAL;
}

const char *cm_log_level_name(enum cm_log_level level) {
    return (unsigned)level <= CM_LOG_NONE ? cm_log_names[level] : "unknown";
}

void cm_log_write(enum cm_log_level level, const char *subsys, const char *fmt, ...) {
    if (cm_log_fd < 0 && !cm_log_user_cb)
        return;
    int saved = errno;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (cm_log_user_cb) {
        cm_log_user_cb(level, subsys, msg, cm_log_user_arg);
        errno = saved;
        return;
    }
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    char ts[64];
    strftime(ts, sizeof(ts), "%d %b %Y %H:%M:%S", &tm);
    char line[1200];
    int n = snprintf(line, sizeof(line), "%d:%c %s.%03d %c %s: %s\n", (int)getpid(), cm_log_role,
                     ts, (int)(tv.tv_usec / 1000), cm_log_chars[level & 3], subsys, msg);
    if (n > (int)sizeof(line) - 1) {
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    if (write(cm_log_fd, line, (size_t)n) < 0) {
        /* nowhere to report a failing log */
    }
    errno = saved;
}
