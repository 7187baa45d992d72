/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Store error codes: the table of Mooncake's ErrorCode names the master sends as `-<NAME> msg`,
 * their CRESCENT_STORE_E* values, the per-thread last-error message, and the log callback.
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
    int code;
    const char *name;
} cli_errs[] = {
    {CRESCENT_STORE_EINTERNAL_ERROR, "INTERNAL_ERROR"},
    {CRESCENT_STORE_EBUFFER_OVERFLOW, "BUFFER_OVERFLOW"},
    {CRESCENT_STORE_ESEGMENT_NOT_FOUND, "SEGMENT_NOT_FOUND"},
    {CRESCENT_STORE_ESEGMENT_ALREADY_EXISTS, "SEGMENT_ALREADY_EXISTS"},
    {CRESCENT_STORE_ECLIENT_NOT_FOUND, "CLIENT_NOT_FOUND"},
    {CRESCENT_STORE_ENO_AVAILABLE_HANDLE, "NO_AVAILABLE_HANDLE"},
    {CRESCENT_STORE_EINVALID_KEY, "INVALID_KEY"},
    {CRESCENT_STORE_EINVALID_PARAMS, "INVALID_PARAMS"},
    {CRESCENT_STORE_EILLEGAL_CLIENT, "ILLEGAL_CLIENT"},
    {CRESCENT_STORE_EINVALID_WRITE, "INVALID_WRITE"},
    {CRESCENT_STORE_EINVALID_READ, "INVALID_READ"},
    {CRESCENT_STORE_EREPLICA_IS_NOT_READY, "REPLICA_IS_NOT_READY"},
    {CRESCENT_STORE_EOBJECT_NOT_FOUND, "OBJECT_NOT_FOUND"},
    {CRESCENT_STORE_EOBJECT_ALREADY_EXISTS, "OBJECT_ALREADY_EXISTS"},
    {CRESCENT_STORE_EOBJECT_HAS_LEASE, "OBJECT_HAS_LEASE"},
    {CRESCENT_STORE_ELEASE_EXPIRED, "LEASE_EXPIRED"},
    {CRESCENT_STORE_EOBJECT_HAS_REPLICATION_TASK, "OBJECT_HAS_REPLICATION_TASK"},
    {CRESCENT_STORE_EOBJECT_NO_REPLICATION_TASK, "OBJECT_NO_REPLICATION_TASK"},
    {CRESCENT_STORE_EREPLICA_NOT_FOUND, "REPLICA_NOT_FOUND"},
    {CRESCENT_STORE_EOBJECT_REPLICA_BUSY, "OBJECT_REPLICA_BUSY"},
    {CRESCENT_STORE_ETRANSFER_FAIL, "TRANSFER_FAIL"},
    {CRESCENT_STORE_ECHECKSUM_MISMATCH, "CHECKSUM_MISMATCH"},
    {CRESCENT_STORE_ERPC_FAIL, "RPC_FAIL"},
    {CRESCENT_STORE_EUNAVAILABLE_IN_CURRENT_STATUS, "UNAVAILABLE_IN_CURRENT_STATUS"},
    {CRESCENT_STORE_ENOT_SUPPORTED, "NOT_SUPPORTED"},
    {CRESCENT_STORE_EKEYS_ULTRA_LIMIT, "KEYS_ULTRA_LIMIT"},
    {CRESCENT_STORE_EUNABLE_OFFLOAD, "UNABLE_OFFLOAD"},
};

#define CLI_NERRS (sizeof(cli_errs) / sizeof(cli_errs[0]))

static __thread char cli_last_err[512];

/* Maps the code word of a master error reply (not NUL-terminated, len bytes) to a positive
 * CRESCENT_STORE_E* value; an unknown word (Redis's ERR, NOAUTH, ...) gives RPC_FAIL.
 * Thread-safe. */
int cli_err_from_name(const char *name, size_t len) {
    for (size_t i = 0; i < CLI_NERRS; i++) {
        if (strlen(cli_errs[i].name) == len && memcmp(cli_errs[i].name, name, len) == 0) {
            return cli_errs[i].code;
        }
    }
    return CRESCENT_STORE_ERPC_FAIL;
}

/* Records a message for crescent_store_last_error() on this thread and returns -err (err
 * positive), so callers can write `return cli_fail(E, "...")`. Thread-safe. */
int cli_fail(int err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cli_last_err, sizeof(cli_last_err), fmt, ap);
    va_end(ap);
    return -err;
}

/* Formats one line and hands it to the store's log callback, if any. Thread-safe as far as the
 * callback is. */
void cli_log(struct crescent_store *st, int level, const char *fmt, ...) {
    if (st == NULL || st->log_cb == NULL) {
        return;
    }
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    st->log_cb(level, line, st->log_arg);
}

/* Public: symbolic name of a store, transfer or errno code. Thread-safe. */
const char *crescent_store_err_name(int err) {
    for (size_t i = 0; i < CLI_NERRS; i++) {
        if (-cli_errs[i].code == err) {
            return cli_errs[i].name;
        }
    }
    return crescent_xfer_err_name(err);
}

/* Public: Mooncake's ErrorCode number of a store code, 0 for any other code. Thread-safe. */
int crescent_store_mooncake_code(int err) {
    if (err <= -CRESCENT_STORE_EBASE && err > -CRESCENT_STORE_EBASE - 5000) {
        return err + CRESCENT_STORE_EBASE;
    }
    return 0;
}

/* Public: the calling thread's last failure message. */
const char *crescent_store_last_error(void) {
    return cli_last_err;
}
