/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command dispatch (Redis processCommand order): lookup, arity, authentication, MULTI queueing,
 * the keyspace lock, the call. Also MULTI/EXEC/DISCARD/WATCH/UNWATCH, which are dispatch state.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_cmdstat.h"
#include "server/srv_db.h"
#include "server/srv_ha.h"
#include "server/srv_pubsub.h"
#include "server/srv_server.h"
#include "server/srv_watch.h"

#include "common/cm_atomic.h"
#include "common/cm_hash.h"
#include "common/cm_ht.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "redis-compat/resp_write.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- the table */

/* Commands that must run alone (multi-key atomicity) or that touch no key at all. */
static const char *const srv_exclusive_cmds[] = {
    "mset",        "msetnx",     "rename",     "renamenx",    "copy",        "exec",
    "flushall",    "flushdb",    "config",     "lmove",       "rpoplpush",   "lmpop",
    "smove",       "sunion",     "sinter",     "sdiff",       "sunionstore", "sinterstore",
    "sdiffstore",  "sintercard", "zunion",     "zinter",      "zdiff",       "zunionstore",
    "zinterstore", "zdiffstore", "zintercard", "zrangestore", "zmpop",       NULL};
/* Multi-key string commands: BITOP reads its sources and writes the destination at one instant,
 * LCS reads both keys at one instant. */
static const char *const srv_exclusive_string_cmds[] = {"bitop", "lcs", NULL};
static const char *const srv_nolock_cmds[] = {
    "ping", "echo", "hello", "auth",    "select",  "quit",     "reset",  "client", "command",
    "info", "time", "multi", "discard", "unwatch", "shutdown", "dbsize", NULL};

static struct srv_cmd srv_cmds[] = {
#define RC_COMMAND(ident, name, arity, flags, ...) \
    {name, srv_##ident##_command, arity, flags, 0, NULL, 0},
#define RC_SUBCOMMAND(...)
#include "redis-compat/commands.def"
#undef RC_COMMAND
#undef RC_SUBCOMMAND
};
#define SRV_NCMDS (sizeof(srv_cmds) / sizeof(srv_cmds[0]))

/* Open-addressing lookup table keyed by lower-case name. */
#define SRV_CMD_SLOTS 512
static const struct srv_cmd *srv_cmd_slots[SRV_CMD_SLOTS];

static uint64_t srv_cmd_hash(const char *name, size_t len) {
    char low[64];
    for (size_t i = 0; i < len; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    return cm_hash64(low, len, 0x9e3779b97f4a7c15ull);
}

static int srv_in_list(const char *name, const char *const *list) {
    for (; *list; list++)
        if (strcmp(name, *list) == 0)
            return 1;
    return 0;
}

void srv_cmd_init(void) {
    for (size_t i = 0; i < SRV_NCMDS; i++) {
        struct srv_cmd *c = &srv_cmds[i];
        c->info = rc_command_lookup(c->name, strlen(c->name));
        c->idx = (unsigned)i;
        if (srv_in_list(c->name, srv_exclusive_cmds) ||
            srv_in_list(c->name, srv_exclusive_string_cmds))
            c->srvflags |= SRV_CMD_EXCLUSIVE;
        if (srv_in_list(c->name, srv_nolock_cmds))
            c->srvflags |= SRV_CMD_NOLOCK;
        if (strncmp(c->name, "mc.", 3) == 0) /* the pool has its own mutex (srv_mc.h) */
            c->srvflags |= SRV_CMD_NOLOCK;
        if (c->flags & RC_CMD_PUBSUB) /* the pub/sub registry has its own lock */
            c->srvflags |= SRV_CMD_NOLOCK;
        if (srv_ha_allowed_on_standby(c->name, c->flags))
            c->srvflags |= SRV_CMD_HA_OK;
        uint64_t h = srv_cmd_hash(c->name, strlen(c->name));
        for (size_t k = 0;; k++) {
            size_t slot = (h + k) & (SRV_CMD_SLOTS - 1);
            if (!srv_cmd_slots[slot]) {
                srv_cmd_slots[slot] = c;
                break;
            }
        }
    }
    srv_cmdstat_init(SRV_NCMDS);
}

const struct srv_cmd *srv_cmd_lookup(const char *name, size_t len) {
    if (len == 0 || len >= 64)
        return NULL;
    uint64_t h = srv_cmd_hash(name, len);
    for (size_t k = 0; k < SRV_CMD_SLOTS; k++) {
        const struct srv_cmd *c = srv_cmd_slots[(h + k) & (SRV_CMD_SLOTS - 1)];
        if (!c)
            return NULL;
        if (strlen(c->name) == len && strncasecmp(c->name, name, len) == 0)
            return c;
    }
    return NULL;
}

size_t srv_cmd_count(void) {
    return SRV_NCMDS;
}

const struct srv_cmd *srv_cmd_at(size_t idx) {
    return &srv_cmds[idx];
}

/* ---------------------------------------------------------------- replies */

void srv_reply_error(struct srv_client *c, const char *msg) {
    size_t len = strlen(msg);
    resp_add_error(&c->out, msg, len);
    cm_pcounter_add(&srv_stats.error_replies, 1);
    srv_cmdstat_error(msg, len);
}

void srv_reply_errorf(struct srv_client *c, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    srv_reply_error(c, msg);
}

void srv_reply_ok(struct srv_client *c) {
    cm_buf_append(&c->out, "+OK\r\n", 5);
}

void srv_reply_syntax_error(struct srv_client *c) {
    srv_reply_error(c, "ERR syntax error");
}

void srv_reply_wrong_arity(struct srv_client *c, const char *name) {
    srv_reply_errorf(c, "ERR wrong number of arguments for '%s' command", name);
}

/* Rejects the command (cmd NULL when unknown); inside MULTI the transaction is then aborted at
 * EXEC. */
static void srv_reject(struct srv_client *c, const struct srv_cmd *cmd, const char *msg) {
    if (cmd)
        srv_cmdstat_reject(cmd->idx);
    if (c->flags & SRV_CLIENT_MULTI)
        c->flags |= SRV_CLIENT_DIRTY_EXEC;
    srv_reply_error(c, msg);
}

static void srv_reject_unknown(struct srv_client *c) {
    char args[256] = "";
    size_t used = 0;
    for (int i = 1; i < c->argc && used < 128; i++) {
        int room = 128 - (int)used;
        int n = snprintf(args + used, sizeof(args) - used, "'%.*s' ",
                         (int)(c->argv[i].len < (size_t)room ? c->argv[i].len : (size_t)room),
                         c->argv[i].p);
        if (n < 0)
            break;
        used += (size_t)n;
        if (used >= sizeof(args))
            used = sizeof(args) - 1;
    }
    char msg[512];
    snprintf(msg, sizeof(msg), "ERR unknown command '%.*s', with args beginning with: %s",
             (int)(c->argv[0].len < 128 ? c->argv[0].len : 128), c->argv[0].p, args);
    srv_reject(c, NULL, msg);
}

/* ---------------------------------------------------------------- MULTI queue */

static void srv_queue_command(struct srv_client *c, const struct srv_cmd *cmd) {
    if (c->mq_len == c->mq_cap) {
        c->mq_cap = c->mq_cap ? c->mq_cap * 2 : 8;
        c->mq = cm_realloc(c->mq, (size_t)c->mq_cap * sizeof(*c->mq));
    }
    struct srv_queued *q = &c->mq[c->mq_len++];
    size_t total = 0;
    for (int i = 0; i < c->argc; i++)
        total += c->argv[i].len;
    q->cmd = cmd;
    q->argc = c->argc;
    q->lens = cm_malloc((size_t)c->argc * sizeof(size_t));
    q->data = cm_malloc(total ? total : 1);
    size_t off = 0;
    for (int i = 0; i < c->argc; i++) {
        q->lens[i] = c->argv[i].len;
        memcpy(q->data + off, c->argv[i].p, c->argv[i].len);
        off += c->argv[i].len;
    }
    cm_buf_append(&c->out, "+QUEUED\r\n", 9);
}

void srv_multi_reset(struct srv_client *c) {
    for (int i = 0; i < c->mq_len; i++) {
        cm_free(c->mq[i].lens);
        cm_free(c->mq[i].data);
    }
    cm_free(c->mq);
    c->mq = NULL;
    c->mq_len = c->mq_cap = 0;
    c->flags &= ~(SRV_CLIENT_MULTI | SRV_CLIENT_DIRTY_EXEC);
}

void srv_unwatch_all(struct srv_client *c) {
    srv_watch_remove_all(c);
}

/* ---------------------------------------------------------------- dispatch */

static int srv_arity_ok(const struct srv_cmd *cmd, int argc) {
    return cmd->arity > 0 ? argc == cmd->arity : argc >= -cmd->arity;
}

void srv_call(struct srv_client *c, const struct srv_cmd *cmd) {
    c->cmd = cmd;
    c->last_cmd = cmd->name;
    if (cmd->info && cmd->info->nsub > 0 && c->argc >= 2) {
        const struct rc_command_info *sub =
            rc_subcommand_lookup(cmd->info, c->argv[1].p, c->argv[1].len);
        if (sub)
            c->last_cmd = sub->name;
    }
    uint64_t errors = srv_cmdstat_thread_errors();
    uint64_t t0 = cm_mono_ns();
    cmd->proc(c);
    uint64_t ns = cm_mono_ns() - t0;
    srv_cmdstat_call(cmd->idx, ns, srv_cmdstat_thread_errors() != errors);
    cm_pcounter_add(&srv_stats.total_commands, 1);
}

static int srv_is_multi_ctl(const struct srv_cmd *cmd) {
    const char *n = cmd->name;
    return strcmp(n, "exec") == 0 || strcmp(n, "discard") == 0 || strcmp(n, "multi") == 0 ||
           strcmp(n, "watch") == 0 || strcmp(n, "quit") == 0 || strcmp(n, "reset") == 0;
}

/* Checks a container's subcommand and its arity. Returns 1 to go on, 0 when rejected. */
static int srv_subcommand_ok(struct srv_client *c, const struct srv_cmd *cmd) {
    const struct srv_arg *a = &c->argv[1];
    if (a->len == 4 && strncasecmp(a->p, "help", 4) == 0)
        return 1;
    const struct rc_command_info *sub = rc_subcommand_lookup(cmd->info, a->p, a->len);
    char msg[512], upper[32];
    if (!sub) {
        size_t n = strlen(cmd->name);
        for (size_t i = 0; i <= n && i < sizeof(upper); i++)
            upper[i] = (char)toupper((unsigned char)cmd->name[i]);
        snprintf(msg, sizeof(msg), "ERR unknown subcommand '%.*s'. Try %s HELP.",
                 (int)(a->len < 128 ? a->len : 128), a->p, upper);
        srv_reject(c, cmd, msg);
        return 0;
    }
    if (!rc_arity_ok(sub->arity, c->argc)) {
        snprintf(msg, sizeof(msg), "ERR wrong number of arguments for '%s' command", sub->name);
        srv_reject(c, cmd, msg);
        return 0;
    }
    return 1;
}

void srv_dispatch(struct srv_client *c) {
    const struct srv_cmd *cmd = srv_cmd_lookup(c->argv[0].p, c->argv[0].len);
    if (!cmd) {
        srv_reject_unknown(c);
        return;
    }
    if (!srv_arity_ok(cmd, c->argc)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "ERR wrong number of arguments for '%s' command", cmd->name);
        srv_reject(c, cmd, msg);
        return;
    }
    if (cmd->info && cmd->info->nsub > 0 && c->argc >= 2 && !srv_subcommand_ok(c, cmd))
        return;
    if (!c->authenticated && !(cmd->flags & RC_CMD_NO_AUTH)) {
        srv_reject(c, cmd, "NOAUTH Authentication required.");
        return;
    }
    char psmsg[256];
    if (c->ps && srv_pubsub_refuse(c, cmd, psmsg, sizeof(psmsg))) {
        srv_reject(c, cmd, psmsg);
        return;
    }
    if (srv_ha_gate(c, cmd)) /* HA standby: -NOTLEADER */
        return;
    if ((c->flags & SRV_CLIENT_MULTI) && !srv_is_multi_ctl(cmd)) {
        if (cmd->flags & RC_CMD_NO_MULTI) {
            srv_reject(c, cmd, "ERR Command not allowed inside a transaction");
            return;
        }
        srv_queue_command(c, cmd);
        return;
    }
    if (cmd->srvflags & SRV_CMD_NOLOCK) {
        srv_call(c, cmd);
    } else if (cmd->srvflags & SRV_CMD_EXCLUSIVE) {
        srv_db_wrlock();
        srv_call(c, cmd);
        srv_db_wrunlock();
    } else {
        srv_db_rdlock();
        srv_call(c, cmd);
        srv_db_rdunlock();
    }
}

/* ---------------------------------------------------------------- MULTI/EXEC/WATCH */

void srv_multi_command(struct srv_client *c) {
    if (c->flags & SRV_CLIENT_MULTI) {
        srv_reply_error(c, "ERR MULTI calls can not be nested");
        return;
    }
    c->flags |= SRV_CLIENT_MULTI;
    srv_reply_ok(c);
}

void srv_discard_command(struct srv_client *c) {
    if (!(c->flags & SRV_CLIENT_MULTI)) {
        srv_reply_error(c, "ERR DISCARD without MULTI");
        return;
    }
    srv_multi_reset(c);
    srv_unwatch_all(c);
    srv_reply_ok(c);
}

/* 1 when a watched key changed since WATCH (or expired). Exclusive lock held. */
static int srv_watch_broken(struct srv_client *c) {
    if (cm_atomic_load_relaxed(&c->watch_dirty))
        return 1;
    int64_t now = srv_now_ms();
    for (int i = 0; i < c->nwatched; i++) /* lazy expiry of watched keys touches them */
        srv_db_exists(c->watched[i].key, c->watched[i].klen, now);
    return cm_atomic_load_relaxed(&c->watch_dirty) != 0;
}

void srv_exec_command(struct srv_client *c) {
    if (!(c->flags & SRV_CLIENT_MULTI)) {
        srv_reply_error(c, "ERR EXEC without MULTI");
        return;
    }
    if (c->flags & SRV_CLIENT_DIRTY_EXEC) {
        srv_reply_error(c, "EXECABORT Transaction discarded because of previous errors.");
        srv_multi_reset(c);
        srv_unwatch_all(c);
        return;
    }
    if (srv_watch_broken(c)) {
        resp_add_null_array(&c->out, c->proto);
        srv_multi_reset(c);
        srv_unwatch_all(c);
        return;
    }
    c->defer_ok = 0; /* queued commands run synchronously, inside the transaction */
    struct srv_queued *mq = c->mq;
    int n = c->mq_len;
    c->mq = NULL;
    c->mq_len = c->mq_cap = 0;
    c->flags &= ~SRV_CLIENT_MULTI;
    srv_unwatch_all(c);
    resp_add_array_hdr(&c->out, n);
    int saved_argc = c->argc;
    struct srv_arg *saved_argv = c->argv;
    for (int i = 0; i < n; i++) {
        struct srv_arg argv[mq[i].argc > 0 ? mq[i].argc : 1];
        size_t off = 0;
        for (int k = 0; k < mq[i].argc; k++) {
            argv[k] = (struct srv_arg){mq[i].data + off, mq[i].lens[k]};
            off += mq[i].lens[k];
        }
        c->argc = mq[i].argc;
        c->argv = argv;
        srv_call(c, mq[i].cmd);
        cm_free(mq[i].lens);
        cm_free(mq[i].data);
    }
    c->argc = saved_argc;
    c->argv = saved_argv;
    cm_free(mq);
}

void srv_watch_command(struct srv_client *c) {
    if (c->flags & SRV_CLIENT_MULTI) {
        srv_reply_error(c, "ERR WATCH inside MULTI is not allowed");
        return;
    }
    int64_t now = srv_now_ms();
    for (int i = 1; i < c->argc; i++) {
        srv_db_exists(c->argv[i].p, c->argv[i].len, now); /* drop it now if already expired */
        srv_watch_add(c, c->argv[i].p, c->argv[i].len);
    }
    srv_reply_ok(c);
}

void srv_unwatch_command(struct srv_client *c) {
    srv_unwatch_all(c);
    srv_reply_ok(c);
}
