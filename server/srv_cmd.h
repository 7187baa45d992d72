/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command dispatch: the command table (bound from redis-compat/commands.def to the srv_*_command
 * handlers), lookup, arity/auth/MULTI checks, and the call under the keyspace lock.
 */
#ifndef CRESCENT_SERVER_SRV_CMD_H
#define CRESCENT_SERVER_SRV_CMD_H

#include "redis-compat/rc_commands.h"

#include <stddef.h>

struct srv_client;

typedef void srv_cmd_proc(struct srv_client *c);

/* Server-side command flags (in addition to the RC_CMD_* flags of the table). */
#define SRV_CMD_EXCLUSIVE 0x1u /* runs under the exclusive keyspace lock (multi-key atomic) */
#define SRV_CMD_NOLOCK    0x2u /* touches no key: runs without the keyspace lock */
#define SRV_CMD_HA_OK     0x4u /* runs on an HA standby too (srv_ha.h) */

struct srv_cmd {
    const char *name; /* lower case */
    srv_cmd_proc *proc;
    int arity;
    unsigned flags;    /* RC_CMD_* */
    unsigned srvflags; /* SRV_CMD_* */
    const struct rc_command_info *info;
    unsigned idx; /* position in the table, for srv_cmdstat */
};

/* Builds the lookup table. Call once before the workers start. */
void srv_cmd_init(void);

/* Finds a command by name (case-insensitive); NULL when unknown. Thread-safe after init. */
const struct srv_cmd *srv_cmd_lookup(const char *name, size_t len);

/* Number of top-level commands served. */
size_t srv_cmd_count(void);

/* The command at index idx (0 <= idx < srv_cmd_count()), in table order. */
const struct srv_cmd *srv_cmd_at(size_t idx);

/*
 * Runs the command in c->argc/c->argv: lookup, arity, AUTH and MULTI handling, locking,
 * statistics. Replies are appended to the client's output. Loop thread of c only.
 */
void srv_dispatch(struct srv_client *c);

/* Runs cmd for c without MULTI queueing (used by EXEC, which already holds the lock). */
void srv_call(struct srv_client *c, const struct srv_cmd *cmd);

/*
 * Plain SET of an object built by the caller (the network layer reads large values straight
 * into segment memory): takes ownership of o, replies +OK. Keyspace lock held (shared).
 */
struct srv_obj;
void srv_set_prebuilt(struct srv_client *c, struct srv_obj *o);

/* Frees a client's MULTI queue and watched keys. */
void srv_multi_reset(struct srv_client *c);
void srv_unwatch_all(struct srv_client *c);

/* Handlers, one per top-level command (named like Redis's getCommand for grep). */
#define RC_COMMAND(ident, ...) void srv_##ident##_command(struct srv_client *c);
#define RC_SUBCOMMAND(...)
#include "redis-compat/commands.def"
#undef RC_COMMAND
#undef RC_SUBCOMMAND

#endif
