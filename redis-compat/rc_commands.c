/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command table built from the generated commands.def / commands_meta.def: static arrays
 * linked together once (pthread_once) plus an open-addressing hash on the lower-cased name
 * for O(1) case-insensitive lookup.
 */
#include "common/fmacros.h"

#include "redis-compat/rc_commands.h"

#include <pthread.h>
#include <string.h>

/* Every command and subcommand in commands.def order (containers before their subs). */
static struct rc_command_info all_cmds[] = {
#define RC_COMMAND(id, name, arity, flags, fk, lk, st, group, summary, since, cx) \
    {name, arity, flags, fk, lk, st, group, summary, since, cx, NULL, 0, NULL, NULL, 0, NULL, 0},
#define RC_SUBCOMMAND(parent, id, name, arity, flags, fk, lk, st, group, summary, since, cx) \
    {name, arity, flags, fk, lk, st, group, summary, since, cx, NULL, 0, NULL, NULL, 0, NULL, 0},
#include "redis-compat/commands.def"
#undef RC_COMMAND
#undef RC_SUBCOMMAND
};
#define NCMDS (sizeof(all_cmds) / sizeof(all_cmds[0]))

static const unsigned char is_sub[] = {
#define RC_COMMAND(...)    0,
#define RC_SUBCOMMAND(...) 1,
#include "redis-compat/commands.def"
#undef RC_COMMAND
#undef RC_SUBCOMMAND
};

/* ACL bits in the same order as all_cmds (commands_meta.def has one RC_META per command). */
static const struct {
    const char *fullname;
    unsigned acl;
} metas[] = {
#define RC_META(owner, fullname, acl) {fullname, acl},
#define RC_ARG(...)
#include "redis-compat/commands_meta.def"
#undef RC_META
#undef RC_ARG
};

/* All arguments; arg_owner[i] is the index in all_cmds of the command args[i] belongs to. */
static const struct rc_command_arg all_args[] = {
#define RC_META(...)
#define RC_ARG(owner, depth, name, type, token, flags, ksi) {name, type, token, flags, depth, ksi},
#include "redis-compat/commands_meta.def"
#undef RC_META
#undef RC_ARG
};
static const signed char arg_is_meta_marker[] = {
#define RC_META(...) 1,
#define RC_ARG(...)  0,
#include "redis-compat/commands_meta.def"
#undef RC_META
#undef RC_ARG
};

_Static_assert(sizeof(metas) / sizeof(metas[0]) == NCMDS, "one RC_META per command");
_Static_assert(sizeof(is_sub) == NCMDS, "commands.def consistency");

/* Top-level commands are copied here so that the table is one contiguous, sorted array. */
static struct rc_command_info top_cmds[NCMDS];
static size_t ntop;
static struct rc_command_info sub_cmds[NCMDS];

#define HASH_SIZE 1024 /* power of two, > 2 * NCMDS */
_Static_assert(HASH_SIZE > 2 * NCMDS, "grow HASH_SIZE");
static const struct rc_command_info *hash_tab[HASH_SIZE];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static unsigned hash_lower(const char *s, size_t len) {
    unsigned h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z')
            c |= 0x20;
        h = (h ^ c) * 16777619u;
    }
    return h;
}

static int eq_nocase(const char *a, size_t alen, const char *b) {
    size_t i = 0;
    for (; i < alen; i++) {
        unsigned char c = (unsigned char)a[i];
        if (c >= 'A' && c <= 'Z')
            c |= 0x20;
        if (b[i] == '\0' || c != (unsigned char)b[i])
            return 0;
    }
    return b[i] == '\0';
}

static void hash_add(const struct rc_command_info *ci) {
    unsigned h = hash_lower(ci->name, strlen(ci->name)) & (HASH_SIZE - 1);
    while (hash_tab[h])
        h = (h + 1) & (HASH_SIZE - 1);
    hash_tab[h] = ci;
}

static void build(void) {
    /* Attach metadata and arguments (both files list commands in the same order). */
    size_t ci = 0, a = 0, nmarkers = sizeof(arg_is_meta_marker);
    for (size_t k = 0, argi = 0; k < nmarkers; k++) {
        if (arg_is_meta_marker[k]) {
            ci = a++;
            all_cmds[ci].acl_categories = metas[ci].acl;
            all_cmds[ci].args = &all_args[argi];
        } else {
            all_cmds[ci].nargs++;
            argi++;
        }
    }
    /* Split into a sorted top-level array and per-container subcommand slices. */
    size_t nsub = 0;
    for (size_t i = 0; i < NCMDS; i++) {
        if (is_sub[i])
            continue;
        struct rc_command_info *t = &top_cmds[ntop++];
        *t = all_cmds[i];
        t->subname = t->name;
        size_t j = i + 1;
        if (j < NCMDS && is_sub[j])
            t->subcommands = &sub_cmds[nsub];
        for (; j < NCMDS && is_sub[j]; j++) {
            struct rc_command_info *s = &sub_cmds[nsub++];
            *s = all_cmds[j];
            s->parent = t;
            s->subname = strchr(s->name, '|') + 1;
            t->nsub++;
        }
    }
    for (size_t i = 0; i < ntop; i++)
        hash_add(&top_cmds[i]);
    for (size_t i = 0; i < nsub; i++)
        hash_add(&sub_cmds[i]);
}

/* See rc_commands.h. */
const struct rc_command_info *rc_command_table(size_t *n) {
    pthread_once(&once, build);
    *n = ntop;
    return top_cmds;
}

/* See rc_commands.h. */
const struct rc_command_info *rc_command_lookup(const char *name, size_t len) {
    pthread_once(&once, build);
    unsigned h = hash_lower(name, len) & (HASH_SIZE - 1);
    for (const struct rc_command_info *c; (c = hash_tab[h]) != NULL; h = (h + 1) & (HASH_SIZE - 1))
        if (eq_nocase(name, len, c->name))
            return c;
    return NULL;
}

/* See rc_commands.h. */
const struct rc_command_info *rc_subcommand_lookup(const struct rc_command_info *container,
                                                   const char *name, size_t len) {
    for (int i = 0; i < container->nsub; i++)
        if (eq_nocase(name, len, container->subcommands[i].subname))
            return &container->subcommands[i];
    return NULL;
}

static const char *const flag_names[RC_CMD_NFLAGS] = {
    "write",         "readonly",          "denyoom",          "module",   "admin",
    "pubsub",        "noscript",          "blocking",         "loading",  "stale",
    "skip_monitor",  "skip_slowlog",      "asking",           "fast",     "no_auth",
    "may_replicate", "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys",
    "allow_busy",
};

static const char *const acl_names[RC_ACL_NCATEGORIES] = {
    "keyspace", "read",   "write",       "set",       "sortedset",  "list",        "hash",
    "string",   "bitmap", "hyperloglog", "geo",       "stream",     "pubsub",      "admin",
    "fast",     "slow",   "blocking",    "dangerous", "connection", "transaction", "scripting",
};

/* See rc_commands.h. */
const char *rc_flag_name(int i) {
    return i >= 0 && i < RC_CMD_NFLAGS ? flag_names[i] : "unknown";
}

/* See rc_commands.h. */
const char *rc_acl_category_name(int i) {
    return i >= 0 && i < RC_ACL_NCATEGORIES ? acl_names[i] : "unknown";
}

/* See rc_commands.h. */
const char *rc_arg_type_name(enum rc_arg_type t) {
    static const char *const names[] = {"string",    "integer",    "double", "key",  "pattern",
                                        "unix-time", "pure-token", "oneof",  "block"};
    return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}
