/* SPDX-License-Identifier: Apache-2.0 */
/* Argument parsing and value-reply helpers for the command handlers. */
#include "common/fmacros.h"

#include "server/srv_reply.h"

#include "server/srv_offload.h"

#include "common/cm_errno.h"
#include "common/cm_util.h"
#include "redis-compat/resp_write.h"

#include <string.h>
#include <strings.h>

void srv_reply_value(struct srv_client *c, struct srv_obj *o) {
    if (srv_obj_offloaded(o) && srv_offload_reply(c, o))
        return;
    if (o->vlen < SRV_REF_THRESHOLD) {
        resp_add_bulk(&c->out, srv_obj_val(o), o->vlen);
        return;
    }
    srv_obj_ref(o);
    resp_add_bulk_hdr(&c->out, o->vlen);
    srv_client_add_ref(c, o, srv_obj_val(o), o->vlen);
    cm_buf_append(&c->out, "\r\n", 2);
}

int srv_arg_is(const struct srv_client *c, int i, const char *w) {
    size_t n = strlen(w);
    return c->argv[i].len == n && strncasecmp(c->argv[i].p, w, n) == 0;
}

int srv_arg_ll(struct srv_client *c, int i, long long *out, const char *msg) {
    if (cm_str2ll(c->argv[i].p, c->argv[i].len, out) != 0) {
        srv_reply_error(c, msg ? msg : SRV_ERR_NOT_INT);
        return -1;
    }
    return 0;
}

void srv_reply_alloc_error(struct srv_client *c, int err) {
    if (err == -CM_EOOM)
        srv_reply_error(c, SRV_ERR_OOM);
    else
        srv_reply_errorf(c, "ERR %s", cm_strerror(err));
}

struct srv_obj *srv_obj_from(struct srv_client *c, const char *key, size_t klen, const char *val,
                             size_t vlen) {
    struct srv_obj *o;
    int rc = srv_obj_create(key, klen, vlen, vlen, &o);
    if (rc < 0) {
        srv_reply_alloc_error(c, rc);
        return NULL;
    }
    memcpy(srv_obj_val(o), val, vlen);
    return o;
}
