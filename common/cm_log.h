/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leveled logging (CONTRIBUTING.md, "Logging"). One line per event:
 *   pid:role dd Mon yyyy hh:mm:ss.mmm <level-char> subsys: message
 * with Redis's level characters (. DEBUG, - VERBOSE, * NOTICE, # WARNING). The level is tested
 * before formatting. By default nothing is written anywhere, so libraries never print: programs
 * call cm_log_open() (stderr or a file); libcrescent users may install a callback instead.
 * Thread-safe: each line is one write(2).
 */
#ifndef CRESCENT_COMMON_CM_LOG_H
#define CRESCENT_COMMON_CM_LOG_H

#include "common/cm_time.h"

#include <stdarg.h>

enum cm_log_level {
    CM_LOG_DEBUG = 0,   /* developer detail */
    CM_LOG_VERBOSE = 1, /* per-connection events, protocol errors */
    CM_LOG_NOTICE = 2,  /* lifecycle: start, stop, config changes */
    CM_LOG_WARNING = 3, /* something failed and was handled */
    CM_LOG_NONE = 4     /* logging off */
};

/* Callback type for a user-installed sink; line has no trailing newline. */
typedef void cm_log_cb(enum cm_log_level level, const char *subsys, const char *line, void *arg);

extern int cm_log_min_level; /* lines below this level are dropped before formatting */

/*
 * Directs the log to path (appended), or to stderr when path is NULL or "" ; role is one
 * character for the line prefix ('M' master, 'C' client, 'E' elect). Returns 0 or -errno; on
 * error the previous sink stays. Not thread-safe against concurrent cm_log_open calls.
 */
int cm_log_open(const char *path, char role);

/* Reopens the current log file (after logrotate; called on SIGHUP). Returns 0 or -errno. */
int cm_log_reopen(void);

/* Installs a callback sink instead of a file (NULL removes it). Not thread-safe. */
void cm_log_set_callback(cm_log_cb *cb, void *arg);

/* Sets the minimum level. */
void cm_log_set_level(enum cm_log_level level);

/* Parses "debug", "verbose", "notice", "warning" (Redis's names); returns the level or -EINVAL. */
int cm_log_level_parse(const char *name);

/* Name of a level ("notice"). */
const char *cm_log_level_name(enum cm_log_level level);

/* Formats and writes one line; use the cm_log() macro, which checks the level first. */
void cm_log_write(enum cm_log_level level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define cm_log(level, subsys, ...)                        \
    do {                                                  \
        if ((int)(level) >= cm_log_min_level)             \
            cm_log_write((level), (subsys), __VA_ARGS__); \
    } while (0)

/* Logs at most once every interval_ms from this call site. */
#define cm_log_sparse(interval_ms, level, subsys, ...)                                         \
    do {                                                                                       \
        static _Thread_local unsigned long long cm_log_last_;                                  \
        unsigned long long cm_log_now_ = cm_mono_ms();                                         \
        if ((int)(level) >= cm_log_min_level && cm_log_now_ - cm_log_last_ >= (interval_ms)) { \
            cm_log_last_ = cm_log_now_;                                                        \
            cm_log_write((level), (subsys), __VA_ARGS__);                                      \
        }                                                                                      \
    } while (0)

#endif
