/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Typed configuration table (see cm_config.h): parsing and bounds checking per type, CONFIG
 * SET/GET with Redis 7 error texts, a redis.conf reader with sdssplitargs-style quoting, and a
 * redis-server-style command line parser.
 */
#include "common/fmacros.h"

#include "common/cm_config.h"

#include "common/cm_glob.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define CM_CFG_REASON_MAX 512
#define CM_CFG_MAX_ARGS   64
#define CM_CFG_MAX_FILE   (16u << 20)

union cm_cfg_val {
    int i;
    long long ll;
    double d;
    char *s;
};

static void cm_cfg_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cm_cfg_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Case-insensitive comparison where '-' equals '_'. */
static bool cm_cfg_name_eq(const char *a, const char *b) {
    for (;; a++, b++) {
        int x = tolower((unsigned char)*a), y = tolower((unsigned char)*b);
        if (x == '-')
            x = '_';
        if (y == '-')
            y = '_';
        if (x != y)
            return false;
        if (x == '\0')
            return true;
    }
}

const struct cm_cfg_entry *cm_config_find(const struct cm_config *c, const char *name) {
    for (size_t i = 0; i < c->n; i++) {
        const struct cm_cfg_entry *e = &c->entries[i];
        if (cm_cfg_name_eq(e->name, name) || (e->alias && cm_cfg_name_eq(e->alias, name)))
            return e;
    }
    return NULL;
}

static int cm_cfg_parse_enum(const struct cm_cfg_entry *e, const char *value, union cm_cfg_val *v,
                             char *reason, size_t rlen) {
    for (int i = 0; e->enum_names[i]; i++) {
        if (!strcasecmp(e->enum_names[i], value)) {
            v->i = i;
            return 0;
        }
    }
    size_t len = (size_t)snprintf(reason, rlen, "argument(s) must be one of the following: ");
    for (int i = 0; e->enum_names[i] && len < rlen; i++)
        len += (size_t)snprintf(reason + len, rlen - len, "%s%s", i ? ", " : "", e->enum_names[i]);
    return -EINVAL;
}

/* Parses value for e into v; on error writes the Redis reason text (no prefix). */
static int cm_cfg_parse(const struct cm_cfg_entry *e, const char *value, union cm_cfg_val *v,
                        char *reason, size_t rlen) {
    switch (e->type) {
    case CM_CFG_BOOL:
        /* yes/no as Redis writes them; true/false as Mooncake's (gflags) users do. */
        if (!strcasecmp(value, "yes") || !strcasecmp(value, "true"))
            v->i = 1;
        else if (!strcasecmp(value, "no") || !strcasecmp(value, "false"))
            v->i = 0;
        else
            return snprintf(reason, rlen, "argument must be 'yes' or 'no'"), -EINVAL;
        return 0;
    case CM_CFG_INT:
    case CM_CFG_MEMORY:
        if (e->type == CM_CFG_INT && cm_str2ll(value, strlen(value), &v->ll) != 0)
            return snprintf(reason, rlen, "argument couldn't be parsed into an integer"), -EINVAL;
        if (e->type == CM_CFG_MEMORY && cm_parse_memory(value, &v->ll) != 0)
            return snprintf(reason, rlen, "argument must be a memory value"), -EINVAL;
        if (v->ll < e->min || v->ll > e->max)
            return snprintf(reason, rlen, "argument must be between %lld and %lld inclusive",
                            e->min, e->max),
                   -EINVAL;
        return 0;
    case CM_CFG_DOUBLE:
        if (cm_str2d(value, strlen(value), &v->d) != 0)
            return snprintf(reason, rlen, "argument couldn't be parsed into a double"), -EINVAL;
        if (v->d < e->dmin || v->d > e->dmax)
            return snprintf(reason, rlen, "argument must be between %g and %g inclusive", e->dmin,
                            e->dmax),
                   -EINVAL;
        return 0;
    case CM_CFG_STRING:
        v->s = cm_strdup(value);
        return 0;
    case CM_CFG_ENUM:
        return cm_cfg_parse_enum(e, value, v, reason, rlen);
    }
    snprintf(reason, rlen, "bad config type");
    return -EINVAL;
}

static void cm_cfg_load(const struct cm_cfg_entry *e, union cm_cfg_val *v) {
    switch (e->type) {
    case CM_CFG_BOOL:
    case CM_CFG_ENUM:
        v->i = *(int *)e->ptr;
        break;
    case CM_CFG_INT:
    case CM_CFG_MEMORY:
        v->ll = *(long long *)e->ptr;
        break;
    case CM_CFG_DOUBLE:
        v->d = *(double *)e->ptr;
        break;
    case CM_CFG_STRING:
        v->s = *(char **)e->ptr;
        break;
    }
}

static void cm_cfg_store(const struct cm_cfg_entry *e, const union cm_cfg_val *v) {
    switch (e->type) {
    case CM_CFG_BOOL:
    case CM_CFG_ENUM:
        *(int *)e->ptr = v->i;
        break;
    case CM_CFG_INT:
    case CM_CFG_MEMORY:
        *(long long *)e->ptr = v->ll;
        break;
    case CM_CFG_DOUBLE:
        *(double *)e->ptr = v->d;
        break;
    case CM_CFG_STRING:
        *(char **)e->ptr = v->s;
        break;
    }
}

int cm_config_init(struct cm_config *c, const struct cm_cfg_entry *entries, size_t n, char *err,
                   size_t errlen) {
    char reason[CM_CFG_REASON_MAX];
    c->entries = entries;
    c->n = n;
    for (size_t i = 0; i < n; i++) {
        const struct cm_cfg_entry *e = &entries[i];
        union cm_cfg_val v;
        if (!e->name || !e->ptr || (e->type == CM_CFG_ENUM && !e->enum_names)) {
            cm_cfg_err(err, errlen, "config entry %zu is malformed", i);
            return -EINVAL;
        }
        memset(&v, 0, sizeof(v));
        if (e->dflt && cm_cfg_parse(e, e->dflt, &v, reason, sizeof(reason)) != 0) {
            cm_cfg_err(err, errlen, "default of '%s' ('%s'): %s", e->name, e->dflt, reason);
            return -EINVAL;
        }
        cm_cfg_store(e, &v);
    }
    return 0;
}

void cm_config_fini(struct cm_config *c) {
    for (size_t i = 0; i < c->n; i++) {
        const struct cm_cfg_entry *e = &c->entries[i];
        if (e->type == CM_CFG_STRING) {
            cm_free(*(char **)e->ptr);
            *(char **)e->ptr = NULL;
        }
    }
}

/*
 * Sets e from value. Returns 0, or negative with the bare reason in reason (no "ERR" prefix).
 */
static int cm_cfg_set_entry(const struct cm_cfg_entry *e, const char *value, int at_startup,
                            char *reason, size_t rlen) {
    union cm_cfg_val nv, old;
    if ((e->flags & CM_CFG_IMMUTABLE) && !at_startup) {
        snprintf(reason, rlen, "can't set immutable config");
        return -EPERM;
    }
    int rc = cm_cfg_parse(e, value, &nv, reason, rlen);
    if (rc != 0)
        return rc;
    cm_cfg_load(e, &old);
    cm_cfg_store(e, &nv);
    if (!at_startup && e->apply) {
        reason[0] = '\0';
        if (e->apply(e, reason, rlen) != 0) {
            cm_cfg_store(e, &old);
            if (e->type == CM_CFG_STRING)
                cm_free(nv.s);
            if (reason[0] == '\0')
                snprintf(reason, rlen, "the new value was rejected");
            return -EINVAL;
        }
    }
    if (e->type == CM_CFG_STRING)
        cm_free(old.s);
    if (!at_startup)
        cm_log(CM_LOG_NOTICE, "config", "CONFIG SET %s %s", e->name,
               (e->flags & CM_CFG_SENSITIVE) ? "(hidden)" : value);
    return 0;
}

int cm_config_set(struct cm_config *c, const char *name, const char *value, int at_startup,
                  char *err, size_t errlen) {
    char reason[CM_CFG_REASON_MAX];
    const struct cm_cfg_entry *e = cm_config_find(c, name);
    if (!e) {
        cm_cfg_err(err, errlen, "ERR Unknown option or number of arguments for CONFIG SET - '%s'",
                   name);
        return -ENOENT;
    }
    int rc = cm_cfg_set_entry(e, value, at_startup, reason, sizeof(reason));
    if (rc != 0)
        cm_cfg_err(err, errlen, "ERR CONFIG SET failed (possibly related to argument '%s') - %s",
                   name, reason);
    return rc;
}

/* Formats e's value; returns the untruncated length like snprintf. */
static int cm_cfg_format(const struct cm_cfg_entry *e, char *out, size_t outlen) {
    union cm_cfg_val v;
    cm_cfg_load(e, &v);
    switch (e->type) {
    case CM_CFG_BOOL:
        return snprintf(out, outlen, "%s", v.i ? "yes" : "no");
    case CM_CFG_INT:
    case CM_CFG_MEMORY:
        return snprintf(out, outlen, "%lld", v.ll);
    case CM_CFG_DOUBLE:
        return snprintf(out, outlen, "%g", v.d);
    case CM_CFG_STRING:
        return snprintf(out, outlen, "%s", v.s ? v.s : "");
    case CM_CFG_ENUM: {
        int n = 0;
        while (e->enum_names[n])
            n++;
        return snprintf(out, outlen, "%s", v.i >= 0 && v.i < n ? e->enum_names[v.i] : "");
    }
    }
    return snprintf(out, outlen, "%s", "");
}

int cm_config_get(const struct cm_config *c, const char *name, char *out, size_t outlen) {
    const struct cm_cfg_entry *e = cm_config_find(c, name);
    if (!e)
        return -ENOENT;
    int len = cm_cfg_format(e, out, outlen);
    return (size_t)len >= outlen ? -ENOSPC : len;
}

static void cm_cfg_report(const struct cm_cfg_entry *e, int by_alias, cm_config_visit_cb *cb,
                          void *arg) {
    char small[256];
    char *buf = small;
    int len = cm_cfg_format(e, small, sizeof(small));
    if ((size_t)len >= sizeof(small)) {
        buf = cm_malloc((size_t)len + 1);
        cm_cfg_format(e, buf, (size_t)len + 1);
    }
    if (by_alias) {
        struct cm_cfg_entry tmp = *e;
        tmp.name = e->alias;
        tmp.alias = e->name;
        cb(&tmp, buf, arg);
    } else {
        cb(e, buf, arg);
    }
    if (buf != small)
        cm_free(buf);
}

size_t cm_config_get_matching(const struct cm_config *c, const char *pattern,
                              cm_config_visit_cb *cb, void *arg) {
    size_t plen = strlen(pattern), count = 0;
    if (!strpbrk(pattern, "*?[")) {
        const struct cm_cfg_entry *e = cm_config_find(c, pattern);
        if (!e)
            return 0;
        cm_cfg_report(e, !cm_cfg_name_eq(e->name, pattern), cb, arg);
        return 1;
    }
    for (size_t i = 0; i < c->n; i++) {
        const struct cm_cfg_entry *e = &c->entries[i];
        if (cm_glob_match(pattern, plen, e->name, strlen(e->name), 1))
            cm_cfg_report(e, 0, cb, arg);
        else if (e->alias && cm_glob_match(pattern, plen, e->alias, strlen(e->alias), 1))
            cm_cfg_report(e, 1, cb, arg);
        else
            continue;
        count++;
    }
    return count;
}

/* ---------------------------------------------------------------- config file ------------ */

static int cm_cfg_hex(int c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Reads one double-quoted token body at *pp (just after the quote) into *op. */
static int cm_cfg_dquoted(const char **pp, char **op) {
    const char *p = *pp;
    char *o = *op;
    for (;; p++) {
        if (*p == '\0')
            return -EINVAL;
        if (*p == '\\' && p[1] == 'x' && cm_cfg_hex((unsigned char)p[2]) >= 0 &&
            cm_cfg_hex((unsigned char)p[3]) >= 0) {
            *o++ = (char)(cm_cfg_hex((unsigned char)p[2]) * 16 + cm_cfg_hex((unsigned char)p[3]));
            p += 3;
        } else if (*p == '\\' && p[1]) {
            p++;
            switch (*p) {
            case 'n':
                *o++ = '\n';
                break;
            case 'r':
                *o++ = '\r';
                break;
            case 't':
                *o++ = '\t';
                break;
            case 'b':
                *o++ = '\b';
                break;
            case 'a':
                *o++ = '\a';
                break;
            default:
                *o++ = *p;
                break;
            }
        } else if (*p == '"') {
            break;
        } else {
            *o++ = *p;
        }
    }
    *pp = p;
    *op = o;
    return 0;
}

/* Reads one single-quoted token body at *pp (just after the quote) into *op. */
static int cm_cfg_squoted(const char **pp, char **op) {
    const char *p = *pp;
    char *o = *op;
    for (;; p++) {
        if (*p == '\0')
            return -EINVAL;
        if (*p == '\\' && p[1] == '\'') {
            p++;
            *o++ = '\'';
        } else if (*p == '\'') {
            break;
        } else {
            *o++ = *p;
        }
    }
    *pp = p;
    *op = o;
    return 0;
}

/*
 * Splits line into words as Redis sdssplitargs does, writing NUL-terminated words into out
 * (at least strlen(line) + 1 bytes per... total 2 * strlen(line) + 2 suffices) and pointers
 * into argv. Returns the word count or -EINVAL for unbalanced quotes / too many words.
 */
static int cm_cfg_split(const char *line, char *out, char **argv, int maxargs) {
    const char *p = line;
    char *o = out;
    int argc = 0;
    for (;;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p)
            return argc;
        if (argc == maxargs)
            return -EINVAL;
        argv[argc++] = o;
        while (*p && !isspace((unsigned char)*p)) {
            if (*p == '"' || *p == '\'') {
                const char *q = p + 1;
                int rc = *p == '"' ? cm_cfg_dquoted(&q, &o) : cm_cfg_squoted(&q, &o);
                /* The closing quote must be followed by a space or the end. */
                if (rc != 0 || (q[1] && !isspace((unsigned char)q[1])))
                    return -EINVAL;
                p = q + 1;
                break;
            }
            *o++ = *p++;
        }
        *o++ = '\0';
    }
}

/* Applies one directive; on error writes the reason. */
static int cm_cfg_directive(struct cm_config *c, int argc, char **argv, char *reason, size_t rlen) {
    const struct cm_cfg_entry *e = cm_config_find(c, argv[0]);
    if (!e || argc < 2 || (argc > 2 && e->type != CM_CFG_STRING)) {
        snprintf(reason, rlen, "Bad directive or wrong number of arguments");
        return -EINVAL;
    }
    if (argc == 2)
        return cm_cfg_set_entry(e, argv[1], 1, reason, rlen);
    size_t total = 0;
    for (int i = 1; i < argc; i++)
        total += strlen(argv[i]) + 1;
    char *joined = cm_malloc(total), *o = joined;
    for (int i = 1; i < argc; i++) {
        size_t l = strlen(argv[i]);
        memcpy(o, argv[i], l);
        o += l;
        *o++ = i + 1 < argc ? ' ' : '\0';
    }
    int rc = cm_cfg_set_entry(e, joined, 1, reason, rlen);
    cm_free(joined);
    return rc;
}

int cm_config_load_string(struct cm_config *c, const char *text, char *err, size_t errlen) {
    char reason[CM_CFG_REASON_MAX];
    char *argv[CM_CFG_MAX_ARGS];
    const char *p = text;
    int lineno = 0, rc = 0;
    while (*p && rc == 0) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lineno++;
        char *line = cm_strndup(p, len);
        p += len + (nl ? 1 : 0);
        /* Trim like Redis: spaces, tabs, CR, LF on both ends. */
        char *s = line, *end = line + len;
        while (*s && strchr(" \t\r\n", *s))
            s++;
        while (end > s && strchr(" \t\r\n", end[-1]))
            *--end = '\0';
        if (*s == '#' || *s == '\0') {
            cm_free(line);
            continue;
        }
        char *words = cm_malloc(2 * len + 2);
        int argc = cm_cfg_split(s, words, argv, CM_CFG_MAX_ARGS);
        if (argc < 0) {
            snprintf(reason, sizeof(reason), "Unbalanced quotes in configuration line");
            rc = -EINVAL;
        } else if (argc > 0) {
            rc = cm_cfg_directive(c, argc, argv, reason, sizeof(reason));
        }
        if (rc != 0)
            cm_cfg_err(err, errlen, "line %d ('%.120s'): %s", lineno, s, reason);
        cm_free(words);
        cm_free(line);
    }
    return rc;
}

int cm_config_load_file(struct cm_config *c, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        cm_cfg_err(err, errlen, "can't open config file '%s': %s", path, strerror(e));
        return -e;
    }
    size_t cap = 4096, len = 0;
    char *buf = cm_malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            if (cap >= CM_CFG_MAX_FILE) {
                fclose(f);
                cm_free(buf);
                cm_cfg_err(err, errlen, "config file '%s' is larger than %u bytes", path,
                           CM_CFG_MAX_FILE);
                return -EFBIG;
            }
            cap *= 2;
            buf = cm_realloc(buf, cap);
        }
    }
    int rerr = ferror(f) ? errno : 0;
    fclose(f);
    if (rerr) {
        cm_free(buf);
        cm_cfg_err(err, errlen, "can't read config file '%s': %s", path, strerror(rerr));
        return -rerr;
    }
    buf[len] = '\0';
    if (memchr(buf, '\0', len)) {
        cm_free(buf);
        cm_cfg_err(err, errlen, "config file '%s' contains a NUL byte", path);
        return -EINVAL;
    }
    int rc = cm_config_load_string(c, buf, err, errlen);
    cm_free(buf);
    return rc;
}

/* ---------------------------------------------------------------- command line ----------- */

static int cm_cfg_argv_option(struct cm_config *c, const char *opt, const char *value, char *err,
                              size_t errlen) {
    char reason[CM_CFG_REASON_MAX];
    const struct cm_cfg_entry *e = cm_config_find(c, opt);
    if (!e) {
        cm_cfg_err(err, errlen, "unknown option '--%s'", opt);
        return -ENOENT;
    }
    if (!value) {
        if (e->type != CM_CFG_BOOL) {
            cm_cfg_err(err, errlen, "option '--%s' needs a value", opt);
            return -EINVAL;
        }
        value = "yes";
    }
    int rc = cm_cfg_set_entry(e, value, 1, reason, sizeof(reason));
    if (rc != 0)
        cm_cfg_err(err, errlen, "--%s '%s': %s", opt, value, reason);
    return rc;
}

int cm_config_parse_argv(struct cm_config *c, int argc, char **argv, char *err, size_t errlen) {
    int i = 1;
    if (argc > 1 && strncmp(argv[1], "--", 2) != 0 && strcmp(argv[1], "-h") != 0 &&
        strcmp(argv[1], "-v") != 0) {
        int rc = cm_config_load_file(c, argv[1], err, errlen);
        if (rc != 0)
            return rc;
        i = 2;
    }
    while (i < argc) {
        const char *a = argv[i++];
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return 1;
        if (!strcmp(a, "--version") || !strcmp(a, "-v"))
            return 2;
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            cm_cfg_err(err, errlen, "unexpected argument '%s'", a);
            return -EINVAL;
        }
        const char *eq = strchr(a + 2, '=');
        int rc;
        if (eq) {
            char *opt = cm_strndup(a + 2, (size_t)(eq - a - 2));
            rc = cm_cfg_argv_option(c, opt, eq + 1, err, errlen);
            cm_free(opt);
        } else {
            /* Words up to the next "--" option form the value. */
            size_t total = 0;
            int j = i;
            for (; j < argc && strncmp(argv[j], "--", 2) != 0; j++)
                total += strlen(argv[j]) + 1;
            char *value = NULL;
            if (j > i) {
                value = cm_malloc(total);
                value[0] = '\0';
                for (int k = i; k < j; k++) {
                    if (k > i)
                        strcat(value, " ");
                    strcat(value, argv[k]);
                }
            }
            rc = cm_cfg_argv_option(c, a + 2, value, err, errlen);
            cm_free(value);
            i = j;
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

void cm_config_print_help(const struct cm_config *c, FILE *out) {
    static const char *const type_names[] = {"yes|no",   "<int>",  "<bytes>",
                                             "<number>", "<text>", "<choice>"};
    char dflt[256];
    for (size_t i = 0; i < c->n; i++) {
        const struct cm_cfg_entry *e = &c->entries[i];
        char opt[128];
        snprintf(opt, sizeof(opt), "--%s %s", e->name, type_names[e->type]);
        fprintf(out, "  %-44s %s", opt, e->help ? e->help : "");
        if (e->type == CM_CFG_ENUM) {
            fprintf(out, " (one of:");
            for (int k = 0; e->enum_names[k]; k++)
                fprintf(out, " %s", e->enum_names[k]);
            fprintf(out, ")");
        }
        if (e->dflt && e->dflt[0] && !(e->flags & CM_CFG_SENSITIVE)) {
            snprintf(dflt, sizeof(dflt), "%s", e->dflt);
            fprintf(out, " [default: %s]", dflt);
        }
        if (e->flags & CM_CFG_IMMUTABLE)
            fprintf(out, " [startup only]");
        fprintf(out, "\n");
    }
}
