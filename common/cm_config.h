/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One typed configuration table (CONTRIBUTING.md, "Layout") that feeds command-line flags, a
 * redis.conf-style file and CONFIG GET/SET. Each entry points at the program's own variable,
 * carries bounds, a default, flags and an optional apply hook. Error texts follow Redis 7 so that
 * RESP replies can be sent verbatim (with a leading '-'). Not thread-safe: the owner (the server's
 * main thread) serializes every call; readers of the variables need their own synchronization if
 * they run on other threads.
 */
#ifndef CRESCENT_COMMON_CM_CONFIG_H
#define CRESCENT_COMMON_CM_CONFIG_H

#include <stddef.h>
#include <stdio.h>

enum cm_cfg_type {
    CM_CFG_BOOL,   /* int 0/1; text yes/no */
    CM_CFG_INT,    /* long long within [min, max] */
    CM_CFG_MEMORY, /* long long bytes within [min, max]; accepts 1gb, 512mb, 100k */
    CM_CFG_DOUBLE, /* double within [dmin, dmax] */
    CM_CFG_STRING, /* char *, owned by the table (cm_strdup'ed; freed by set and fini) */
    CM_CFG_ENUM    /* int index into enum_names */
};

#define CM_CFG_IMMUTABLE 1u /* settable only at startup (file, argv); CONFIG SET refuses */
#define CM_CFG_SENSITIVE 2u /* value hidden in logs */

struct cm_cfg_entry {
    const char *name;  /* canonical name: Mooncake's underscore names or Redis names */
    const char *alias; /* optional second name (e.g. the hyphen form), or NULL */
    enum cm_cfg_type type;
    unsigned flags;                /* CM_CFG_IMMUTABLE | CM_CFG_SENSITIVE */
    void *ptr;                     /* the program's variable (BOOL and ENUM are int) */
    long long min, max;            /* INT/MEMORY bounds, inclusive */
    double dmin, dmax;             /* DOUBLE bounds, inclusive */
    const char *dflt;              /* default as text, parsed at init (NULL: 0 / NULL) */
    const char *const *enum_names; /* NULL-terminated names for ENUM */
    /* Optional; called after a runtime (CONFIG SET) change. Nonzero rejects the change, the
     * old value is restored and err (NUL-terminated by the hook) becomes the reason. */
    int (*apply)(const struct cm_cfg_entry *e, char *err, size_t errlen);
    const char *help; /* one line for --help */
};

struct cm_config {
    const struct cm_cfg_entry *entries;
    size_t n;
};

/*
 * Binds c to entries[0..n) (the array must outlive c) and stores every default in its
 * variable. STRING variables are overwritten without being freed (they must not hold heap
 * memory yet). Returns 0, or -EINVAL with a message in err for a malformed table or default.
 */
int cm_config_init(struct cm_config *c, const struct cm_cfg_entry *entries, size_t n, char *err,
                   size_t errlen);

/* Frees the STRING values the table owns and sets those variables to NULL. */
void cm_config_fini(struct cm_config *c);

/*
 * Finds an entry by canonical name or alias; case-insensitive, '-' and '_' equivalent.
 * Returns NULL when unknown.
 */
const struct cm_cfg_entry *cm_config_find(const struct cm_config *c, const char *name);

/*
 * Parses value and stores it in name's variable. at_startup != 0 allows IMMUTABLE entries and
 * skips apply hooks; at_startup == 0 is CONFIG SET: immutable entries are refused and apply
 * runs after the store (restoring the old value when it fails). Returns 0, or a negative code
 * with Redis 7 text (without the leading '-') in err:
 *   -ENOENT "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
 *   -EPERM  "ERR CONFIG SET failed (possibly related to argument 'x') - can't set immutable
 *            config"
 *   -EINVAL "ERR CONFIG SET failed (possibly related to argument 'x') - <reason>", reason one
 *           of "argument couldn't be parsed into an integer", "argument must be between 1 and
 *           100 inclusive", "argument must be a memory value", "argument must be 'yes' or
 *           'no'", "argument couldn't be parsed into a double", "argument(s) must be one of
 *           the following: a, b", or the apply hook's text.
 * 'x' is the name as the caller spelled it.
 */
int cm_config_set(struct cm_config *c, const char *name, const char *value, int at_startup,
                  char *err, size_t errlen);

/*
 * Writes name's current value as text into out (memory as bytes, double with %g, bool yes/no,
 * enum by name, string as is, NULL string as ""). Returns the length, -ENOENT for an unknown
 * name or -ENOSPC when outlen is too small (out then holds a truncated, terminated value).
 */
int cm_config_get(const struct cm_config *c, const char *name, char *out, size_t outlen);

/* Visitor for cm_config_get_matching; e->name is the name that matched, value its text. */
typedef void cm_config_visit_cb(const struct cm_cfg_entry *e, const char *value, void *arg);

/*
 * CONFIG GET: calls cb once per entry whose canonical name or alias matches the glob pattern
 * (case-insensitive, cm_glob_match). A pattern without glob characters is an exact lookup with
 * '-' == '_'. When only the alias matched, cb receives a copy of the entry whose name is the
 * alias (and alias the canonical name). Returns the number of entries reported.
 */
size_t cm_config_get_matching(const struct cm_config *c, const char *pattern,
                              cm_config_visit_cb *cb, void *arg);

/*
 * Loads redis.conf-style text: one "name value..." directive per line, '#' comments, blank
 * lines, quoting as in Redis sdssplitargs ("..." with \n \r \t \b \a \\ \" \xHH escapes,
 * '...' with \'). Several words are joined with one space for STRING entries; other types
 * take exactly one. Applies entries at startup (immutable allowed, no apply hooks) in order;
 * stops at the first error. Returns 0 or -EINVAL with "line N ('<line>'): <reason>" in err,
 * reasons as in cm_config_set or "Bad directive or wrong number of arguments",
 * "Unbalanced quotes in configuration line".
 */
int cm_config_load_string(struct cm_config *c, const char *text, char *err, size_t errlen);

/*
 * Reads the file at path and loads it with cm_config_load_string. Returns 0, -errno when the
 * file cannot be read ("can't open config file '<path>': <strerror>"), or -EINVAL.
 */
int cm_config_load_file(struct cm_config *c, const char *path, char *err, size_t errlen);

/*
 * Parses a command line like redis-server: a first argument not starting with "--" is a
 * config file, loaded first; then "--name value", "--name=value" and "--name v1 v2" (words
 * up to the next "--" option, joined with spaces); a BOOL given without value means yes.
 * Returns 0; 1 when "--help" or "-h" was seen and 2 for "--version" or "-v" (parsing stops,
 * the caller prints); negative with a message in err on the first error.
 */
int cm_config_parse_argv(struct cm_config *c, int argc, char **argv, char *err, size_t errlen);

/* Prints one line per entry ("--name <type>  help (default: x)") to out. */
void cm_config_print_help(const struct cm_config *c, FILE *out);

#endif
