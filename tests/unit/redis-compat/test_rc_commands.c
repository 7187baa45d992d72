/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the command table: lookups, arities, flags, containers, metadata. */
#include "common/fmacros.h"

#include "redis-compat/rc_commands.h"

#include <criterion/criterion.h>
#include <string.h>

#define LOOKUP(s) rc_command_lookup(s, strlen(s))

/* commands.def must work with an includer's own macros, as the server binds handlers. */
static const char *const def_names[] = {
#define RC_COMMAND(id, name, ...)            name,
#define RC_SUBCOMMAND(parent, id, name, ...) name,
#include "redis-compat/commands.def"
#undef RC_COMMAND
#undef RC_SUBCOMMAND
};

static const int def_is_top[] = {
#define RC_COMMAND(...)    1,
#define RC_SUBCOMMAND(...) 0,
#include "redis-compat/commands.def"
#undef RC_COMMAND
#undef RC_SUBCOMMAND
};

Test(rc_commands, every_def_entry_is_found) {
    size_t n = sizeof(def_names) / sizeof(def_names[0]);
    cr_assert_geq(n, 82, "the 82 commands of the original brief at least");
    for (size_t i = 0; i < n; i++) {
        const struct rc_command_info *c = LOOKUP(def_names[i]);
        cr_assert_not_null(c, "%s", def_names[i]);
        cr_assert_str_eq(c->name, def_names[i]);
    }
}

Test(rc_commands, table_is_sorted_and_counts) {
    size_t n;
    const struct rc_command_info *t = rc_command_table(&n);
    size_t ntop = 0;
    for (size_t i = 0; i < sizeof(def_is_top) / sizeof(def_is_top[0]); i++)
        ntop += (size_t)def_is_top[i];
    cr_assert_eq(n, ntop);
    cr_assert_geq(n, 65);
    for (size_t i = 1; i < n; i++)
        cr_assert_lt(strcmp(t[i - 1].name, t[i].name), 0);
}

Test(rc_commands, lookup_is_case_insensitive_and_length_bounded) {
    const struct rc_command_info *c = rc_command_lookup("GETxyz", 3);
    cr_assert_not_null(c);
    cr_assert_str_eq(c->name, "get");
    cr_assert_eq(LOOKUP("gEt"), c);
    cr_assert_null(LOOKUP("ge"));
    cr_assert_null(LOOKUP("gets"));
    cr_assert_null(LOOKUP(""));
    cr_assert_null(LOOKUP("nosuchcommand"));
}

Test(rc_commands, redis_arities_and_key_specs) {
    static const struct {
        const char *name;
        int arity, fk, lk, step;
    } want[] = {
        {"get", 2, 1, 1, 1},
        {"set", -3, 1, 1, 1},
        {"mset", -3, 1, -1, 2},
        {"mget", -2, 1, -1, 1},
        {"del", -2, 1, -1, 1},
        {"ping", -1, 0, 0, 0},
        {"hello", -1, 0, 0, 0},
        {"auth", -2, 0, 0, 0},
        {"rename", 3, 1, 2, 1},
        {"copy", -3, 1, 2, 1},
        {"expire", -3, 1, 1, 1},
        {"getex", -2, 1, 1, 1},
        {"scan", -2, 0, 0, 0},
        {"quit", -1, 0, 0, 0},
        {"reset", 1, 0, 0, 0},
        {"put", 3, 1, 1, 1},
        {"remove", -2, 1, -1, 1},
        {"watch", -2, 1, -1, 1},
        {"setex", 4, 1, 1, 1},
        {"client", -2, 0, 0, 0},
        {"config|get", -3, 0, 0, 0},
        {"config|set", -4, 0, 0, 0},
        {"memory|usage", -3, 2, 2, 1},
        {"object|encoding", 3, 2, 2, 1},
        {"client|setinfo", 4, 0, 0, 0},
        {"command", -1, 0, 0, 0},
        {"command|docs", -2, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const struct rc_command_info *c = LOOKUP(want[i].name);
        cr_assert_not_null(c, "%s", want[i].name);
        cr_assert_eq(c->arity, want[i].arity, "%s arity", want[i].name);
        cr_assert_eq(c->first_key, want[i].fk, "%s first", want[i].name);
        cr_assert_eq(c->last_key, want[i].lk, "%s last", want[i].name);
        cr_assert_eq(c->step, want[i].step, "%s step", want[i].name);
    }
    cr_assert(rc_arity_ok(2, 2));
    cr_assert_not(rc_arity_ok(2, 3));
    cr_assert(rc_arity_ok(-3, 5));
    cr_assert_not(rc_arity_ok(-3, 2));
}

Test(rc_commands, flags_and_acl_categories) {
    const struct rc_command_info *get = LOOKUP("get");
    cr_assert_eq(get->flags, RC_CMD_READONLY | RC_CMD_FAST);
    cr_assert_eq(get->acl_categories, RC_ACL_READ | RC_ACL_STRING | RC_ACL_FAST);
    cr_assert_str_eq(get->group, "string");
    cr_assert_str_eq(get->since, "1.0.0");
    cr_assert_str_eq(get->complexity, "O(1)");
    cr_assert_str_eq(get->summary, "Returns the string value of a key.");
    const struct rc_command_info *set = LOOKUP("set");
    cr_assert_eq(set->flags, RC_CMD_WRITE | RC_CMD_DENYOOM);
    cr_assert_eq(set->acl_categories, RC_ACL_WRITE | RC_ACL_STRING | RC_ACL_SLOW);
    const struct rc_command_info *keys = LOOKUP("keys");
    cr_assert(keys->acl_categories & RC_ACL_DANGEROUS);
    const struct rc_command_info *hello = LOOKUP("hello");
    cr_assert(hello->flags & RC_CMD_NO_AUTH);
    cr_assert(LOOKUP("shutdown")->flags & RC_CMD_NO_MULTI);
    cr_assert(LOOKUP("config|set")->acl_categories & RC_ACL_ADMIN);
    cr_assert_str_eq(rc_flag_name(1), "readonly");
    cr_assert_str_eq(rc_flag_name(13), "fast");
    cr_assert_str_eq(rc_flag_name(20), "allow_busy");
    cr_assert_str_eq(rc_acl_category_name(7), "string");
    cr_assert_str_eq(rc_acl_category_name(17), "dangerous");
}

Test(rc_commands, containers_and_subcommands) {
    const struct rc_command_info *cfg = LOOKUP("CONFIG");
    cr_assert_eq(cfg->nsub, 3);
    cr_assert_str_eq(cfg->subcommands[0].name, "config|get");
    cr_assert_str_eq(cfg->subcommands[0].subname, "get");
    cr_assert_eq(cfg->subcommands[0].parent, cfg);
    const struct rc_command_info *g = rc_subcommand_lookup(cfg, "GET", 3);
    cr_assert_eq(g, &cfg->subcommands[0]);
    cr_assert_eq(LOOKUP("config|GET"), g);
    cr_assert_null(rc_subcommand_lookup(cfg, "nope", 4));
    cr_assert_eq(LOOKUP("client")->nsub, 7);
    cr_assert_eq(LOOKUP("command")->nsub, 4);
    cr_assert_eq(LOOKUP("get")->nsub, 0);
    cr_assert_null(LOOKUP("get")->subcommands);
}

Test(rc_commands, docs_arguments) {
    const struct rc_command_info *set = LOOKUP("set");
    cr_assert_geq(set->nargs, 5);
    cr_assert_str_eq(set->args[0].name, "key");
    cr_assert_eq(set->args[0].type, RC_ARG_TYPE_KEY);
    cr_assert_eq(set->args[0].key_spec_index, 0);
    cr_assert_str_eq(set->args[2].name, "condition");
    cr_assert_eq(set->args[2].type, RC_ARG_TYPE_ONEOF);
    cr_assert_eq(set->args[2].flags, RC_ARG_FLAG_OPTIONAL);
    cr_assert_str_eq(set->args[3].token, "NX");
    cr_assert_eq(set->args[3].depth, 1);
    cr_assert_str_eq(rc_arg_type_name(RC_ARG_TYPE_PURE_TOKEN), "pure-token");
    const struct rc_command_info *get = LOOKUP("get");
    cr_assert_eq(get->nargs, 1);
    cr_assert_eq(LOOKUP("multi")->nargs, 0);
}
