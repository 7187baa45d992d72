/* SPDX-License-Identifier: Apache-2.0 */
/* Message and name lookup for the error-code table in cm_errno.h. */
#include "common/fmacros.h"

#include "common/cm_errno.h"

#include <errno.h>
#include <string.h>

static const char *const cm_err_msgs[] = {
#define CM_ERRNO_MSG_(name, msg) msg,
    CM_ERRNO_MAP(CM_ERRNO_MSG_)
#undef CM_ERRNO_MSG_
};

static const char *const cm_err_names[] = {
#define CM_ERRNO_NAME_(name, msg) #name,
    CM_ERRNO_MAP(CM_ERRNO_NAME_)
#undef CM_ERRNO_NAME_
};

const char *cm_strerror(int err) {
    if (err < 0)
        err = -err;
    if (err >= CM_ERRNO_BASE && err < CM_ERRNO_LAST_)
        return cm_err_msgs[err - CM_ERRNO_BASE];
    if (err > 0 && err < CM_ERRNO_BASE) {
        const char *s = strerrordesc_np(err);
        return s ? s : "unknown error";
    }
    return err == 0 ? "success" : "unknown error";
}

const char *cm_err_name(int err) {
    if (err < 0)
        err = -err;
    if (err >= CM_ERRNO_BASE && err < CM_ERRNO_LAST_)
        return cm_err_names[err - CM_ERRNO_BASE];
    if (err > 0 && err < CM_ERRNO_BASE) {
        const char *s = strerrorname_np(err);
        return s ? s : "UNKNOWN";
    }
    return err == 0 ? "OK" : "UNKNOWN";
}
