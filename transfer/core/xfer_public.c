/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcrescent's exported transfer API (client/include/crescent/transfer.h): thin wrappers over
 * transfer/xfer.h. The public structs mirror the internal ones field for field; the static
 * assertions below keep them in step.
 */
#include "common/fmacros.h"

#include "crescent/transfer.h"
#include "transfer/xfer.h"
#include "transfer/xfer_int.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#define SAME_LAYOUT(pub, in, f) \
    _Static_assert(offsetof(struct pub, f) == offsetof(struct in, f), #pub "." #f)
_Static_assert(sizeof(struct crescent_xfer_request) == sizeof(struct xfer_request), "request");
SAME_LAYOUT(crescent_xfer_request, xfer_request, op);
SAME_LAYOUT(crescent_xfer_request, xfer_request, local);
SAME_LAYOUT(crescent_xfer_request, xfer_request, seg);
SAME_LAYOUT(crescent_xfer_request, xfer_request, remote_addr);
SAME_LAYOUT(crescent_xfer_request, xfer_request, length);
_Static_assert(sizeof(struct crescent_xfer_task_status) == sizeof(struct xfer_task_status), "st");
SAME_LAYOUT(crescent_xfer_task_status, xfer_task_status, transferred);
SAME_LAYOUT(crescent_xfer_task_status, xfer_task_status, error);
/* Public error codes: the CM_E* codes the transfer engine returns (X: public suffix, CM name). */
#define XFER_PUBLIC_ERRORS(X)                     \
    X(INTERNAL_ERROR, INTERNAL_ERROR)             \
    X(INVALID_VERSION, INVALID_VERSION)           \
    X(INVALID_PARAMS, INVALID_PARAMS)             \
    X(TRANSFER_FAIL, TRANSFER_FAIL)               \
    X(UNAVAILABLE, UNAVAILABLE_IN_CURRENT_STATUS) \
    X(NOT_SUPPORTED, NOT_SUPPORTED)               \
    X(PROTOCOL, PROTOCOL)                         \
    X(CORRUPT, CORRUPT)                           \
    X(UNREACHABLE, UNREACHABLE)                   \
    X(NO_DEVICE, NO_DEVICE)
#define SAME_CODE(pub, cm) _Static_assert(CRESCENT_XFER_E##pub == CM_E##cm, #pub);
XFER_PUBLIC_ERRORS(SAME_CODE)
#undef SAME_CODE
_Static_assert(CRESCENT_XFER_REMOTE == XFER_REG_REMOTE, "flag");
_Static_assert(CRESCENT_XFER_FAILED == (int)XFER_STATUS_FAILED, "status");
_Static_assert(CRESCENT_XFER_WRITE == (int)XFER_OP_WRITE, "op");

#define ENG(e) ((struct xfer_engine *)(e))
#define SEG(s) ((struct xfer_segment *)(s))
#define BAT(b) ((struct xfer_batch *)(b))

/* The first published layout of struct crescent_xfer_opts ends after timeout_ms. */
#define OPTS_MIN_SIZE (offsetof(struct crescent_xfer_opts, timeout_ms) + sizeof(uint32_t))

/* Initialises options to the defaults; see crescent/transfer.h. */
CRESCENT_API void crescent_xfer_opts_init(struct crescent_xfer_opts *opts) {
    memset(opts, 0, sizeof(*opts));
    opts->struct_size = sizeof(*opts);
}

/*
 * Copies the caller's options (struct_size bytes of them) into *o, defaults for fields the
 * caller's version does not have. Returns 0, -EINVAL (size unset or too small) or -E2BIG (a
 * newer caller set a field this library does not know).
 */
static int opts_import(const struct crescent_xfer_opts *in, struct crescent_xfer_opts *o) {
    memset(o, 0, sizeof(*o));
    if (!in)
        return 0;
    size_t n = in->struct_size;
    if (n < OPTS_MIN_SIZE)
        return -EINVAL;
    for (size_t i = sizeof(*o); i < n; i++)
        if (((const unsigned char *)in)[i])
            return -E2BIG;
    memcpy(o, in, n < sizeof(*o) ? n : sizeof(*o));
    return 0;
}

/* Exported wrapper of xfer_engine_create; see crescent/transfer.h. */
CRESCENT_API int crescent_xfer_engine_create(const struct crescent_xfer_opts *opts,
                                             struct crescent_xfer_engine **out) {
    struct crescent_xfer_opts p;
    *out = NULL;
    int rc = opts_import(opts, &p);
    if (rc < 0) {
        xfer__set_error("crescent_xfer_engine_create: opts.struct_size %zu is %s",
                        opts->struct_size,
                        rc == -EINVAL ? "unset or too small (use CRESCENT_XFER_OPTS_INIT)"
                                      : "larger than this library knows, with unknown fields set");
        return rc;
    }
    struct xfer_engine_opts o = {.local_name = p.local_name,
                                 .listen = p.listen,
                                 .timeout_ms = p.timeout_ms,
                                 .handshake_timeout_ms = p.handshake_timeout_ms};
    return xfer_engine_create(&o, (struct xfer_engine **)out);
}

/* Exported wrapper of xfer_engine_destroy. */
CRESCENT_API void crescent_xfer_engine_destroy(struct crescent_xfer_engine *eng) {
    xfer_engine_destroy(ENG(eng));
}

/* Exported wrapper of xfer_engine_local_addr. */
CRESCENT_API int crescent_xfer_engine_local_addr(struct crescent_xfer_engine *eng, char *buf,
                                                 size_t len) {
    return xfer_engine_local_addr(ENG(eng), buf, len);
}

/* Exported wrapper of xfer_engine_install. */
CRESCENT_API int crescent_xfer_install(struct crescent_xfer_engine *eng, const char *name,
                                       const char *args) {
    return xfer_engine_install(ENG(eng), name, args);
}

/* Exported wrapper of xfer_engine_uninstall. */
CRESCENT_API int crescent_xfer_uninstall(struct crescent_xfer_engine *eng, const char *name) {
    return xfer_engine_uninstall(ENG(eng), name);
}

/* Exported wrapper of xfer_engine_register. */
CRESCENT_API int crescent_xfer_register(struct crescent_xfer_engine *eng, void *addr, size_t len,
                                        const char *location, unsigned flags) {
    return xfer_engine_register(ENG(eng), addr, len, location, flags);
}

/* Exported wrapper of xfer_engine_unregister. */
CRESCENT_API int crescent_xfer_unregister(struct crescent_xfer_engine *eng, void *addr) {
    return xfer_engine_unregister(ENG(eng), addr);
}

/* Exported wrapper of xfer_engine_alloc_shared. */
CRESCENT_API int crescent_xfer_alloc_shared(struct crescent_xfer_engine *eng, size_t len,
                                            void **out) {
    return xfer_engine_alloc_shared(ENG(eng), len, out);
}

/* Exported wrapper of xfer_engine_free_shared. */
CRESCENT_API int crescent_xfer_free_shared(struct crescent_xfer_engine *eng, void *addr) {
    return xfer_engine_free_shared(ENG(eng), addr);
}

/* Exported wrapper of xfer_engine_export_desc. */
CRESCENT_API ssize_t crescent_xfer_export_desc(struct crescent_xfer_engine *eng, void *buf,
                                               size_t len) {
    return xfer_engine_export_desc(ENG(eng), buf, len);
}

/* Exported wrapper of xfer_fetch_desc; the caller frees with crescent_xfer_desc_free. */
CRESCENT_API int crescent_xfer_fetch_desc(const char *hostport, uint32_t timeout_ms, void **desc,
                                          size_t *desc_len) {
    return xfer_fetch_desc(hostport, timeout_ms, desc, desc_len);
}

/* Frees a fetched descriptor (allocated with cm_malloc). */
CRESCENT_API void crescent_xfer_desc_free(void *desc) {
    cm_free(desc);
}

/* Exported wrapper of xfer_segment_open. */
CRESCENT_API int crescent_xfer_segment_open(struct crescent_xfer_engine *eng, const void *desc,
                                            size_t desc_len, struct crescent_xfer_segment **out) {
    return xfer_segment_open(ENG(eng), desc, desc_len, (struct xfer_segment **)out);
}

/* Exported wrapper of xfer_segment_open_addr. */
CRESCENT_API int crescent_xfer_segment_open_addr(struct crescent_xfer_engine *eng,
                                                 const char *hostport,
                                                 struct crescent_xfer_segment **out) {
    return xfer_segment_open_addr(ENG(eng), hostport, (struct xfer_segment **)out);
}

/* Exported wrapper of xfer_segment_close. */
CRESCENT_API void crescent_xfer_segment_close(struct crescent_xfer_segment *seg) {
    xfer_segment_close(SEG(seg));
}

/* Exported wrapper of xfer_segment_transport. */
CRESCENT_API const char *crescent_xfer_segment_transport(const struct crescent_xfer_segment *seg) {
    return xfer_segment_transport((const struct xfer_segment *)seg);
}

/* Exported wrapper of xfer_segment_buffer. */
CRESCENT_API int crescent_xfer_segment_buffer(const struct crescent_xfer_segment *seg, size_t index,
                                              uint64_t *addr, uint64_t *len) {
    return xfer_segment_buffer((const struct xfer_segment *)seg, index, addr, len);
}

/* Exported wrapper of xfer_segment_warmup. */
CRESCENT_API int crescent_xfer_segment_warmup(struct crescent_xfer_segment *seg) {
    return xfer_segment_warmup(SEG(seg));
}

/* Exported wrapper of xfer_batch_alloc. */
CRESCENT_API int crescent_xfer_batch_alloc(struct crescent_xfer_engine *eng, size_t capacity,
                                           struct crescent_xfer_batch **out) {
    return xfer_batch_alloc(ENG(eng), capacity, (struct xfer_batch **)out);
}

/* Exported wrapper of xfer_batch_free. */
CRESCENT_API void crescent_xfer_batch_free(struct crescent_xfer_batch *b) {
    xfer_batch_free(BAT(b));
}

/* Exported wrapper of xfer_batch_submit (the request layouts are identical). */
CRESCENT_API int crescent_xfer_batch_submit(struct crescent_xfer_batch *b,
                                            const struct crescent_xfer_request *reqs, size_t n,
                                            size_t *first_id) {
    return xfer_batch_submit(BAT(b), (const struct xfer_request *)reqs, n, first_id);
}

/* Exported wrapper of xfer_batch_status. */
CRESCENT_API int crescent_xfer_batch_status(struct crescent_xfer_batch *b, size_t id,
                                            struct crescent_xfer_task_status *st) {
    return xfer_batch_status(BAT(b), id, (struct xfer_task_status *)st);
}

/* Exported wrapper of xfer_batch_wait. */
CRESCENT_API int crescent_xfer_batch_wait(struct crescent_xfer_batch *b, int timeout_ms,
                                          size_t *failed_ids, size_t max_failed, size_t *n_failed) {
    return xfer_batch_wait(BAT(b), timeout_ms, failed_ids, max_failed, n_failed);
}

/* Exported wrapper of xfer_batch_reset. */
CRESCENT_API int crescent_xfer_batch_reset(struct crescent_xfer_batch *b) {
    return xfer_batch_reset(BAT(b));
}

/* Exported wrapper of xfer_status_name. */
CRESCENT_API const char *crescent_xfer_status_name(int status) {
    return xfer_status_name(status);
}

/* Exported wrapper of cm_strerror. */
CRESCENT_API const char *crescent_xfer_strerror(int err) {
    return cm_strerror(err);
}

/* Symbolic name of an error code; see crescent/transfer.h. */
CRESCENT_API const char *crescent_xfer_err_name(int err) {
    int e = err < 0 ? -err : err;
#define NAME_OF(pub, cm) \
    if (e == CM_E##cm)   \
        return "CRESCENT_XFER_E" #pub;
    XFER_PUBLIC_ERRORS(NAME_OF)
#undef NAME_OF
    return e < CM_ERRNO_BASE ? cm_err_name(err) : "UNKNOWN";
}

/* Exported wrapper of xfer_last_error. */
CRESCENT_API const char *crescent_xfer_last_error(void) {
    return xfer_last_error();
}
