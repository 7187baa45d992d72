/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Redis command table, generated from the JSON files in redis-compat/commands/ into commands.def
 * (handler binding: the server includes it with its own RC_COMMAND / RC_SUBCOMMAND macros)
 * and commands_meta.def (ACL categories and COMMAND DOCS arguments, used here). The
 * functions below serve COMMAND COUNT / INFO / DOCS / LIST and arity checks.
 */
#ifndef CRESCENT_REDIS_COMPAT_RC_COMMANDS_H
#define CRESCENT_REDIS_COMPAT_RC_COMMANDS_H

#include <stddef.h>

/* Command flags (Redis CMD_* names, in the order COMMAND INFO prints them). */
enum {
    RC_CMD_WRITE = 1u << 0,              /* may modify the dataset */
    RC_CMD_READONLY = 1u << 1,           /* only reads keys */
    RC_CMD_DENYOOM = 1u << 2,            /* refused when over maxmemory */
    RC_CMD_MODULE = 1u << 3,             /* implemented by a module (unused) */
    RC_CMD_ADMIN = 1u << 4,              /* administrative */
    RC_CMD_PUBSUB = 1u << 5,             /* pub/sub related */
    RC_CMD_NOSCRIPT = 1u << 6,           /* not allowed in scripts */
    RC_CMD_BLOCKING = 1u << 7,           /* may block the client */
    RC_CMD_LOADING = 1u << 8,            /* allowed while loading */
    RC_CMD_STALE = 1u << 9,              /* allowed on a stale replica */
    RC_CMD_SKIP_MONITOR = 1u << 10,      /* not shown by MONITOR */
    RC_CMD_SKIP_SLOWLOG = 1u << 11,      /* not logged to SLOWLOG */
    RC_CMD_ASKING = 1u << 12,            /* cluster ASKING semantics */
    RC_CMD_FAST = 1u << 13,              /* O(1) or O(log N) */
    RC_CMD_NO_AUTH = 1u << 14,           /* allowed before AUTH */
    RC_CMD_MAY_REPLICATE = 1u << 15,     /* may propagate */
    RC_CMD_NO_MANDATORY_KEYS = 1u << 16, /* key arguments are optional */
    RC_CMD_NO_ASYNC_LOADING = 1u << 17,  /* refused during async loading */
    RC_CMD_NO_MULTI = 1u << 18,          /* not allowed inside MULTI */
    RC_CMD_MOVABLEKEYS = 1u << 19,       /* key positions depend on arguments */
    RC_CMD_ALLOW_BUSY = 1u << 20,        /* allowed while a script is busy */
};
#define RC_CMD_NFLAGS 21

/* ACL categories (Redis @names), derived flags included (@write, @read, @fast, @slow...). */
enum {
    RC_ACL_KEYSPACE = 1u << 0,
    RC_ACL_READ = 1u << 1,
    RC_ACL_WRITE = 1u << 2,
    RC_ACL_SET = 1u << 3,
    RC_ACL_SORTEDSET = 1u << 4,
    RC_ACL_LIST = 1u << 5,
    RC_ACL_HASH = 1u << 6,
    RC_ACL_STRING = 1u << 7,
    RC_ACL_BITMAP = 1u << 8,
    RC_ACL_HYPERLOGLOG = 1u << 9,
    RC_ACL_GEO = 1u << 10,
    RC_ACL_STREAM = 1u << 11,
    RC_ACL_PUBSUB = 1u << 12,
    RC_ACL_ADMIN = 1u << 13,
    RC_ACL_FAST = 1u << 14,
    RC_ACL_SLOW = 1u << 15,
    RC_ACL_BLOCKING = 1u << 16,
    RC_ACL_DANGEROUS = 1u << 17,
    RC_ACL_CONNECTION = 1u << 18,
    RC_ACL_TRANSACTION = 1u << 19,
    RC_ACL_SCRIPTING = 1u << 20,
};
#define RC_ACL_NCATEGORIES 21

/* COMMAND DOCS argument types (Redis names with '-' as '_'). */
enum rc_arg_type {
    RC_ARG_TYPE_STRING,
    RC_ARG_TYPE_INTEGER,
    RC_ARG_TYPE_DOUBLE,
    RC_ARG_TYPE_KEY,
    RC_ARG_TYPE_PATTERN,
    RC_ARG_TYPE_UNIX_TIME,
    RC_ARG_TYPE_PURE_TOKEN,
    RC_ARG_TYPE_ONEOF,
    RC_ARG_TYPE_BLOCK,
};

/* COMMAND DOCS argument flags. */
enum {
    RC_ARG_FLAG_OPTIONAL = 1u << 0,
    RC_ARG_FLAG_MULTIPLE = 1u << 1,
    RC_ARG_FLAG_MULTIPLE_TOKEN = 1u << 2,
};

/*
 * One COMMAND DOCS argument. Arguments are a flat pre-order list: an entry of type ONEOF or
 * BLOCK is followed by its children, which have depth + 1.
 */
struct rc_command_arg {
    const char *name;
    enum rc_arg_type type;
    const char *token; /* NULL when the argument has no token */
    unsigned flags;    /* RC_ARG_FLAG_* */
    int depth;
    int key_spec_index; /* -1 unless type is KEY */
};

/* One command or subcommand. All pointers are static; nothing is ever freed. */
struct rc_command_info {
    const char *name; /* "get"; subcommands: "config|get" */
    int arity;        /* Redis convention: -N means at least N arguments (name included) */
    unsigned flags;   /* RC_CMD_* */
    int first_key, last_key, step;
    const char *group, *summary, *since, *complexity;
    const struct rc_command_info *subcommands; /* containers only, sorted by name */
    int nsub;
    /* Added beyond the original interface. */
    const char *subname;                  /* "get" for "config|get"; == name at top level */
    const struct rc_command_info *parent; /* container, or NULL */
    unsigned acl_categories;              /* RC_ACL_* */
    const struct rc_command_arg *args;    /* COMMAND DOCS arguments (nargs entries) */
    int nargs;
};

/*
 * Returns the top-level commands sorted by name and stores their number in *n. The table
 * is built on first use (thread-safe, pthread_once) and never freed.
 */
const struct rc_command_info *rc_command_table(size_t *n);

/*
 * Finds a top-level command by name, case-insensitively (name need not be NUL-terminated).
 * A "container|sub" name finds the subcommand. Returns NULL if unknown. Thread-safe, O(1).
 */
const struct rc_command_info *rc_command_lookup(const char *name, size_t len);

/* Finds a subcommand of container by name, case-insensitively, or NULL. Thread-safe. */
const struct rc_command_info *rc_subcommand_lookup(const struct rc_command_info *container,
                                                   const char *name, size_t len);

/* 1 if argc (command name included) satisfies arity, else 0. */
static inline int rc_arity_ok(int arity, int argc) {
    return arity > 0 ? argc == arity : argc >= -arity;
}

/* Name of flag bit i (0 <= i < RC_CMD_NFLAGS), e.g. "readonly", as COMMAND INFO shows it. */
const char *rc_flag_name(int i);

/* Name of ACL category bit i (0 <= i < RC_ACL_NCATEGORIES), without '@', e.g. "keyspace". */
const char *rc_acl_category_name(int i);

/* Redis's name of an argument type, e.g. "pure-token". */
const char *rc_arg_type_name(enum rc_arg_type t);

#endif
