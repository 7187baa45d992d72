/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the typed configuration table: defaults, per-type parsing and bounds with
 * Redis 7 error texts, immutability, apply hooks, CONFIG GET globbing, redis.conf parsing
 * (quotes, comments, bad lines) and command-line forms.
 */
#include "common/fmacros.h"

#include "common/cm_config.h"
#include "common/cm_mem.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int v_daemonize;
static long long v_maxclients, v_memory, v_port;
static double v_ratio;
static char *v_pass, *v_dir, *v_save;
static int v_policy;
static int apply_calls;

static const char *const policies[] = {"lru", "lfu", "random", NULL};

static int apply_ratio(const struct cm_cfg_entry *e, char *err, size_t errlen) {
    apply_calls++;
    if (*(double *)e->ptr == 0.5) {
        snprintf(err, errlen, "0.5 is reserved");
        return -1;
    }
    return 0;
}

static int apply_dir(const struct cm_cfg_entry *e, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    apply_calls++;
    return strcmp(*(char **)e->ptr, "/forbidden") == 0 ? -1 : 0;
}

static const struct cm_cfg_entry entries[] = {
    {.name = "daemonize",
     .type = CM_CFG_BOOL,
     .ptr = &v_daemonize,
     .dflt = "no",
     .help = "run in background"},
    {.name = "maxclients",
     .type = CM_CFG_INT,
     .ptr = &v_maxclients,
     .min = 1,
     .max = 100,
     .dflt = "10",
     .help = "client limit"},
    {.name = "global_segment_size",
     .alias = "memory",
     .type = CM_CFG_MEMORY,
     .ptr = &v_memory,
     .min = 1024,
     .max = 1LL << 40,
     .dflt = "1gb",
     .flags = CM_CFG_IMMUTABLE},
    {.name = "port",
     .type = CM_CFG_INT,
     .ptr = &v_port,
     .min = 0,
     .max = 65535,
     .dflt = "6379",
     .flags = CM_CFG_IMMUTABLE},
    {.name = "eviction_high_watermark_ratio",
     .alias = "eviction-high-watermark-ratio",
     .type = CM_CFG_DOUBLE,
     .ptr = &v_ratio,
     .dmin = 0.0,
     .dmax = 1.0,
     .dflt = "0.95",
     .apply = apply_ratio},
    {.name = "requirepass",
     .type = CM_CFG_STRING,
     .ptr = &v_pass,
     .dflt = "",
     .flags = CM_CFG_SENSITIVE},
    {.name = "dir", .type = CM_CFG_STRING, .ptr = &v_dir, .dflt = "./", .apply = apply_dir},
    {.name = "save", .type = CM_CFG_STRING, .ptr = &v_save, .dflt = NULL},
    {.name = "maxmemory-policy",
     .type = CM_CFG_ENUM,
     .ptr = &v_policy,
     .dflt = "lru",
     .enum_names = policies},
};

static struct cm_config cfg;
static char err[512];

static void setup(void) {
    apply_calls = 0;
    err[0] = '\0';
    cr_assert_eq(
        cm_config_init(&cfg, entries, sizeof(entries) / sizeof(entries[0]), err, sizeof(err)), 0,
        "%s", err);
}

static void teardown(void) {
    cm_config_fini(&cfg);
}

TestSuite(cm_config, .init = setup, .fini = teardown);

static int set(const char *name, const char *value) {
    err[0] = '\0';
    return cm_config_set(&cfg, name, value, 0, err, sizeof(err));
}

Test(cm_config, defaults) {
    cr_assert_eq(v_daemonize, 0);
    cr_assert_eq(v_maxclients, 10);
    cr_assert_eq(v_memory, 1LL << 30);
    cr_assert_eq(v_port, 6379);
    cr_assert_float_eq(v_ratio, 0.95, 1e-12);
    cr_assert_str_eq(v_pass, "");
    cr_assert_str_eq(v_dir, "./");
    cr_assert_null(v_save);
    cr_assert_eq(v_policy, 0);
    char out[64];
    cr_assert_eq(cm_config_get(&cfg, "global_segment_size", out, sizeof(out)), 10);
    cr_assert_str_eq(out, "1073741824");
    cm_config_get(&cfg, "daemonize", out, sizeof(out));
    cr_assert_str_eq(out, "no");
    cm_config_get(&cfg, "EVICTION-HIGH-WATERMARK-RATIO", out, sizeof(out));
    cr_assert_str_eq(out, "0.95");
    cm_config_get(&cfg, "maxmemory_policy", out, sizeof(out));
    cr_assert_str_eq(out, "lru");
    cm_config_get(&cfg, "save", out, sizeof(out));
    cr_assert_str_eq(out, "");
    cr_assert_eq(cm_config_get(&cfg, "nope", out, sizeof(out)), -ENOENT);
    cr_assert_eq(cm_config_get(&cfg, "global_segment_size", out, 4), -ENOSPC);
}

Test(cm_config, bad_default_is_reported) {
    static long long x;
    static const struct cm_cfg_entry bad[] = {
        {.name = "x", .type = CM_CFG_INT, .ptr = &x, .min = 0, .max = 5, .dflt = "9"}};
    struct cm_config c2;
    cr_assert_eq(cm_config_init(&c2, bad, 1, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "default of 'x' ('9'): argument must be between 0 and 5 inclusive");
}

Test(cm_config, bool_values) {
    cr_assert_eq(set("daemonize", "YES"), 0);
    cr_assert_eq(v_daemonize, 1);
    cr_assert_eq(set("daemonize", "no"), 0);
    cr_assert_eq(v_daemonize, 0);
    cr_assert_eq(set("daemonize", "true"), 0); /* Mooncake's spelling: --enable_ha=true */
    cr_assert_eq(v_daemonize, 1);
    cr_assert_eq(set("daemonize", "False"), 0);
    cr_assert_eq(v_daemonize, 0);
    cr_assert_eq(set("daemonize", "1"), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument 'daemonize') - "
                          "argument must be 'yes' or 'no'");
}

Test(cm_config, int_parse_and_bounds) {
    cr_assert_eq(set("maxclients", "100"), 0);
    cr_assert_eq(v_maxclients, 100);
    cr_assert_eq(set("maxclients", "abc"), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument 'maxclients') - "
                          "argument couldn't be parsed into an integer");
    cr_assert_eq(set("maxclients", "101"), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument 'maxclients') - "
                          "argument must be between 1 and 100 inclusive");
    cr_assert_eq(set("maxclients", "0"), -EINVAL);
    cr_assert_eq(set("maxclients", "1gb"), -EINVAL);
    cr_assert_eq(set("maxclients", "+5"), -EINVAL);
    cr_assert_eq(v_maxclients, 100, "failed sets leave the value");
    cr_assert_eq(set("MaxClients", "7"), 0);
    cr_assert_eq(v_maxclients, 7);
}

Test(cm_config, memory_values) {
    cr_assert_eq(cm_config_set(&cfg, "memory", "512mb", 1, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(v_memory, 512LL << 20);
    cr_assert_eq(cm_config_set(&cfg, "global-segment-size", "2GB", 1, err, sizeof(err)), 0);
    cr_assert_eq(v_memory, 2LL << 30);
    cr_assert_eq(cm_config_set(&cfg, "memory", "lots", 1, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument 'memory') - "
                          "argument must be a memory value");
    cr_assert_eq(cm_config_set(&cfg, "memory", "-5", 1, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument 'memory') - "
                          "argument must be a memory value");
    cr_assert_eq(cm_config_set(&cfg, "memory", "1000", 1, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument 'memory') - "
                          "argument must be between 1024 and 1099511627776 inclusive");
}

Test(cm_config, immutable_refused_at_runtime) {
    cr_assert_eq(set("port", "7000"), -EPERM);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument 'port') - can't "
                          "set immutable config");
    cr_assert_eq(v_port, 6379);
    cr_assert_eq(cm_config_set(&cfg, "port", "7000", 1, err, sizeof(err)), 0);
    cr_assert_eq(v_port, 7000);
}

Test(cm_config, unknown_name) {
    cr_assert_eq(set("foo", "1"), -ENOENT);
    cr_assert_str_eq(err, "ERR Unknown option or number of arguments for CONFIG SET - 'foo'");
}

Test(cm_config, double_values_and_apply_hook) {
    cr_assert_eq(set("eviction-high-watermark-ratio", "0.8"), 0);
    cr_assert_float_eq(v_ratio, 0.8, 1e-12);
    cr_assert_eq(apply_calls, 1);
    cr_assert_eq(set("eviction_high_watermark_ratio", "x"), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument "
                          "'eviction_high_watermark_ratio') - argument couldn't be parsed into a "
                          "double");
    cr_assert_eq(set("eviction_high_watermark_ratio", "1.5"), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument "
                          "'eviction_high_watermark_ratio') - argument must be between 0 and 1 "
                          "inclusive");
    cr_assert_eq(set("eviction_high_watermark_ratio", "0.5"), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument "
                          "'eviction_high_watermark_ratio') - 0.5 is reserved");
    cr_assert_float_eq(v_ratio, 0.8, 1e-12, "apply failure restores the old value");
    cr_assert_eq(apply_calls, 2);
    /* At startup the hook is not called. */
    cr_assert_eq(cm_config_set(&cfg, "eviction_high_watermark_ratio", "0.5", 1, err, sizeof(err)),
                 0);
    cr_assert_eq(apply_calls, 2);
}

Test(cm_config, string_values_owned) {
    cr_assert_eq(set("requirepass", "s3cret"), 0);
    cr_assert_str_eq(v_pass, "s3cret");
    cr_assert_eq(set("dir", "/tmp"), 0);
    cr_assert_str_eq(v_dir, "/tmp");
    char *before = v_dir;
    cr_assert_eq(set("dir", "/forbidden"), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument 'dir') - the new "
                          "value was rejected");
    cr_assert_eq(v_dir, before);
    cr_assert_str_eq(v_dir, "/tmp");
    char big[600];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cr_assert_eq(set("save", big), 0);
    cr_assert_eq(strlen(v_save), 599);
}

Test(cm_config, enum_values) {
    cr_assert_eq(set("maxmemory-policy", "LFU"), 0);
    cr_assert_eq(v_policy, 1);
    char out[32];
    cm_config_get(&cfg, "maxmemory-policy", out, sizeof(out));
    cr_assert_str_eq(out, "lfu");
    cr_assert_eq(set("maxmemory-policy", "fifo"), -EINVAL);
    cr_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to argument "
                          "'maxmemory-policy') - argument(s) must be one of the following: lru, "
                          "lfu, random");
}

struct got {
    char names[16][64];
    char values[16][64];
    int n;
};

static void collect(const struct cm_cfg_entry *e, const char *value, void *arg) {
    struct got *g = arg;
    snprintf(g->names[g->n], sizeof(g->names[0]), "%s", e->name);
    snprintf(g->values[g->n], sizeof(g->values[0]), "%s", value);
    g->n++;
}

Test(cm_config, get_matching_glob) {
    struct got g = {0};
    cr_assert_eq(cm_config_get_matching(&cfg, "max*", collect, &g), 2);
    cr_assert_str_eq(g.names[0], "maxclients");
    cr_assert_str_eq(g.values[0], "10");
    cr_assert_str_eq(g.names[1], "maxmemory-policy");
    cr_assert_str_eq(g.values[1], "lru");
    memset(&g, 0, sizeof(g));
    cr_assert_eq(cm_config_get_matching(&cfg, "mem*", collect, &g), 1);
    cr_assert_str_eq(g.names[0], "memory", "reported under the alias that matched");
    cr_assert_str_eq(g.values[0], "1073741824");
    memset(&g, 0, sizeof(g));
    cr_assert_eq(cm_config_get_matching(&cfg, "*", collect, &g), 9);
    memset(&g, 0, sizeof(g));
    cr_assert_eq(cm_config_get_matching(&cfg, "EVICTION*", collect, &g), 1);
    cr_assert_str_eq(g.names[0], "eviction_high_watermark_ratio");
    memset(&g, 0, sizeof(g));
    cr_assert_eq(cm_config_get_matching(&cfg, "maxmemory_policy", collect, &g), 1);
    cr_assert_str_eq(g.names[0], "maxmemory-policy");
    cr_assert_eq(cm_config_get_matching(&cfg, "nothing*", collect, &g), 0);
    cr_assert_eq(cm_config_get_matching(&cfg, "nothing", collect, &g), 0);
    memset(&g, 0, sizeof(g));
    cr_assert_eq(cm_config_get_matching(&cfg, "*[tx]", collect, &g), 1);
    cr_assert_str_eq(g.names[0], "port");
    cr_assert_str_eq(g.values[0], "6379");
}

Test(cm_config, load_string_quotes_comments) {
    const char *text = "# a comment\n"
                       "\n"
                       "   maxclients 42   \r\n"
                       "daemonize yes\n"
                       "requirepass \"pa ss\\x41\\n\"\n"
                       "dir '/it\\'s'\n"
                       "save 900 1 300 10\n"
                       "memory 2gb\n"
                       "port 1234\n"
                       "  # indented comment\n"
                       "maxmemory-policy random";
    cr_assert_eq(cm_config_load_string(&cfg, text, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(v_maxclients, 42);
    cr_assert_eq(v_daemonize, 1);
    cr_assert_str_eq(v_pass, "pa ssA\n");
    cr_assert_str_eq(v_dir, "/it's");
    cr_assert_str_eq(v_save, "900 1 300 10");
    cr_assert_eq(v_memory, 2LL << 30);
    cr_assert_eq(v_port, 1234, "immutable entries load from files");
    cr_assert_eq(v_policy, 2);
    cr_assert_eq(apply_calls, 0);
}

Test(cm_config, load_string_errors_carry_line) {
    cr_assert_eq(cm_config_load_string(&cfg, "maxclients 5\nmaxclients 0\n", err, sizeof(err)),
                 -EINVAL);
    cr_assert_str_eq(err, "line 2 ('maxclients 0'): argument must be between 1 and 100 inclusive");
    cr_assert_eq(v_maxclients, 5);
    cr_assert_eq(cm_config_load_string(&cfg, "# x\nbogus 1\n", err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "line 2 ('bogus 1'): Bad directive or wrong number of arguments");
    cr_assert_eq(cm_config_load_string(&cfg, "maxclients 1 2\n", err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "line 1 ('maxclients 1 2'): Bad directive or wrong number of arguments");
    cr_assert_eq(cm_config_load_string(&cfg, "maxclients\n", err, sizeof(err)), -EINVAL);
    cr_assert_eq(cm_config_load_string(&cfg, "\n\nrequirepass \"abc\n", err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "line 3 ('requirepass \"abc'): Unbalanced quotes in configuration line");
    cr_assert_eq(cm_config_load_string(&cfg, "requirepass \"abc\"def\n", err, sizeof(err)),
                 -EINVAL);
    cr_assert_eq(cm_config_load_string(&cfg, "requirepass 'abc\n", err, sizeof(err)), -EINVAL);
    cr_assert_eq(cm_config_load_string(&cfg, "daemonize maybe", err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "line 1 ('daemonize maybe'): argument must be 'yes' or 'no'");
}

Test(cm_config, load_file) {
    char path[] = "/tmp/cm-config-test-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char *text = "maxclients 33\nrequirepass \"\"\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cr_assert_eq(cm_config_load_file(&cfg, path, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(v_maxclients, 33);
    cr_assert_str_eq(v_pass, "");
    unlink(path);
    cr_assert_eq(cm_config_load_file(&cfg, path, err, sizeof(err)), -ENOENT);
    cr_assert(strstr(err, "can't open config file") != NULL, "%s", err);
}

Test(cm_config, parse_argv_forms) {
    char path[] = "/tmp/cm-config-argv-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "maxclients 20\nport 1000\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    const char *argv[] = {"prog",
                          path,
                          "--port",
                          "7001",
                          "--memory=64mb",
                          "--daemonize",
                          "--save",
                          "900",
                          "1",
                          "--maxmemory_policy",
                          "lfu",
                          "--eviction-high-watermark-ratio=0.5"};
    int argc = sizeof(argv) / sizeof(argv[0]);
    cr_assert_eq(cm_config_parse_argv(&cfg, argc, (char **)argv, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(v_maxclients, 20, "from the file");
    cr_assert_eq(v_port, 7001, "command line overrides the file");
    cr_assert_eq(v_memory, 64LL << 20);
    cr_assert_eq(v_daemonize, 1);
    cr_assert_str_eq(v_save, "900 1");
    cr_assert_eq(v_policy, 1);
    cr_assert_float_eq(v_ratio, 0.5, 1e-12);
    unlink(path);

    const char *help[] = {"prog", "--port", "1", "--help"};
    cr_assert_eq(cm_config_parse_argv(&cfg, 4, (char **)help, err, sizeof(err)), 1);
    const char *ver[] = {"prog", "-v"};
    cr_assert_eq(cm_config_parse_argv(&cfg, 2, (char **)ver, err, sizeof(err)), 2);
    const char *bad1[] = {"prog", "--bogus", "1"};
    cr_assert_eq(cm_config_parse_argv(&cfg, 3, (char **)bad1, err, sizeof(err)), -ENOENT);
    cr_assert_str_eq(err, "unknown option '--bogus'");
    const char *bad2[] = {"prog", "--maxclients", "--port", "5"};
    cr_assert_eq(cm_config_parse_argv(&cfg, 4, (char **)bad2, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "option '--maxclients' needs a value");
    const char *bad3[] = {"prog", "--maxclients=1000"};
    cr_assert_eq(cm_config_parse_argv(&cfg, 2, (char **)bad3, err, sizeof(err)), -EINVAL);
    cr_assert_str_eq(err, "--maxclients '1000': argument must be between 1 and 100 inclusive");
    const char *bad4[] = {"prog", "--port", "1", "stray"};
    cr_assert_eq(cm_config_parse_argv(&cfg, 4, (char **)bad4, err, sizeof(err)), -EINVAL);
    const char *bad5[] = {"prog", "/nonexistent/crescent.conf"};
    cr_assert_eq(cm_config_parse_argv(&cfg, 2, (char **)bad5, err, sizeof(err)), -ENOENT);
}

Test(cm_config, print_help_lists_entries) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cm_config_print_help(&cfg, f);
    fclose(f);
    cr_assert(strstr(buf, "--maxclients <int>") != NULL, "%s", buf);
    cr_assert(strstr(buf, "client limit [default: 10]") != NULL, "%s", buf);
    cr_assert(strstr(buf, "(one of: lru lfu random)") != NULL, "%s", buf);
    cr_assert(strstr(buf, "[startup only]") != NULL, "%s", buf);
    free(buf);
}
