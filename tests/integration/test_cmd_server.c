/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for server commands: COMMAND (COUNT/INFO/DOCS/LIST), CONFIG GET/SET/
 * RESETSTAT, INFO sections, DBSIZE, FLUSHALL, FLUSHDB, TIME, MEMORY USAGE and OBJECT. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TestSuite(server, .init = it_setup, .fini = it_teardown, .timeout = 30);

static const redisReply *pair_get(const redisReply *r, const char *key) {
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, key) == 0) {
            return r->element[i + 1];
        }
    }
    return NULL;
}

static bool has_flag(const redisReply *flags, const char *f) {
    for (size_t i = 0; i < flags->elements; i++) {
        if (strcmp(flags->element[i]->str, f) == 0) {
            return true;
        }
    }
    return false;
}

Test(server, command_count_matches_command_and_list) {
    redisReply *count = it_cmd(it_c, "COMMAND COUNT");
    IT_TYPE(count, REDIS_REPLY_INTEGER);
    cr_assert_gt(count->integer, 20, "a useful command table");
    redisReply *all = it_cmd(it_c, "COMMAND");
    IT_TYPE(all, REDIS_REPLY_ARRAY);
    cr_assert_eq((long long)all->elements, count->integer, "COMMAND has COMMAND COUNT entries");
    redisReply *list = it_cmd(it_c, "COMMAND LIST");
    IT_TYPE(list, REDIS_REPLY_ARRAY);
    long long top = 0;
    bool saw_get = false, saw_set = false;
    for (size_t i = 0; i < list->elements; i++) {
        IT_TYPE(list->element[i], REDIS_REPLY_STRING);
        top += strchr(list->element[i]->str, '|') == NULL;
        saw_get |= strcmp(list->element[i]->str, "get") == 0;
        saw_set |= strcmp(list->element[i]->str, "set") == 0;
    }
    cr_assert(saw_get && saw_set, "COMMAND LIST names get and set in lower case");
    cr_assert_eq(top, count->integer, "COMMAND LIST has COMMAND COUNT top-level names");
    IT_ERR("ERR wrong number of arguments for 'command|count' command", it_c, "COMMAND COUNT x");
    IT_ERR("ERR unknown subcommand 'foo'. Try COMMAND HELP.", it_c, "COMMAND foo");
}

Test(server, command_list_includes_subcommands) {
    redisReply *list = it_cmd(it_c, "COMMAND LIST");
    IT_TYPE(list, REDIS_REPLY_ARRAY);
    bool client_list = false, config_get = false;
    for (size_t i = 0; i < list->elements; i++) {
        client_list |= strcmp(list->element[i]->str, "client|list") == 0;
        config_get |= strcmp(list->element[i]->str, "config|get") == 0;
    }
    cr_assert(client_list && config_get, "Redis 7 COMMAND LIST names subcommands (client|list)");
}

Test(server, command_info_shape) {
    redisReply *r = it_cmd(it_c, "COMMAND INFO get set nosuchcommand");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 3);
    const redisReply *get = r->element[0];
    IT_TYPE(get, REDIS_REPLY_ARRAY);
    cr_assert_geq(get->elements, 10, "Redis 7 COMMAND INFO entries have 10 fields");
    cr_assert_str_eq(get->element[0]->str, "get");
    cr_assert_eq(get->element[1]->integer, 2, "get arity");
    IT_TYPE(get->element[2], REDIS_REPLY_ARRAY);
    cr_assert(has_flag(get->element[2], "readonly"), "get is readonly");
    cr_assert_eq(get->element[3]->integer, 1, "first key");
    cr_assert_eq(get->element[4]->integer, 1, "last key");
    cr_assert_eq(get->element[5]->integer, 1, "key step");
    IT_TYPE(get->element[6], REDIS_REPLY_ARRAY); /* ACL categories */
    const redisReply *set = r->element[1];
    cr_assert_str_eq(set->element[0]->str, "set");
    cr_assert_eq(set->element[1]->integer, -3, "set arity");
    cr_assert(has_flag(set->element[2], "write"), "set is a write command");
    cr_assert_eq(r->element[2]->type, REDIS_REPLY_NIL, "unknown command gives a null entry");
    r = it_cmd(it_c, "COMMAND INFO MGET");
    cr_assert_eq(r->elements, 1);
    cr_assert_str_eq(r->element[0]->element[0]->str, "mget");
    cr_assert_eq(r->element[0]->element[4]->integer, -1, "mget last key is -1");
}

Test(server, command_docs_shape) {
    redisReply *r = it_cmd(it_c, "COMMAND DOCS get");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 2, "one name/doc pair");
    cr_assert_str_eq(r->element[0]->str, "get");
    const redisReply *doc = r->element[1];
    IT_TYPE(doc, REDIS_REPLY_ARRAY);
    const redisReply *summary = pair_get(doc, "summary");
    cr_assert_not_null(summary, "COMMAND DOCS has a summary");
    cr_assert_eq(summary->type, REDIS_REPLY_STRING);
    cr_assert_gt(summary->len, 0);
    const redisReply *group = pair_get(doc, "group");
    cr_assert_not_null(group);
    cr_assert_str_eq(group->str, "string");
    cr_assert_not_null(pair_get(doc, "since"));
    r = it_cmd(it_c, "COMMAND DOCS nosuchcommand");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 0, "unknown commands are left out of COMMAND DOCS");
}

Test(server, config_get_set) {
    redisReply *r = it_cmd(it_c, "CONFIG GET maxclients");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 2);
    cr_assert_str_eq(r->element[0]->str, "maxclients");
    cr_assert_str_eq(r->element[1]->str, "10000");
    IT_OK(it_c, "CONFIG SET maxclients 500");
    r = it_cmd(it_c, "CONFIG GET maxclients");
    cr_assert_str_eq(r->element[1]->str, "500");
    IT_OK(it_c, "CONFIG SET timeout 7");
    r = it_cmd(it_c, "CONFIG GET timeout");
    cr_assert_eq(r->elements, 2);
    cr_assert_str_eq(r->element[1]->str, "7");
    IT_OK(it_c, "CONFIG SET timeout 0 maxclients 600"); /* Redis 7 multi-parameter form */
    r = it_cmd(it_c, "CONFIG GET timeout maxclients");
    cr_assert_eq(r->elements, 4);
    cr_assert_str_eq(pair_get(r, "timeout")->str, "0");
    cr_assert_str_eq(pair_get(r, "maxclients")->str, "600");
    r = it_cmd(it_c, "CONFIG GET nosuchoption");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 0);
    r = it_cmd(it_c, "CONFIG GET maxclien*");
    cr_assert_eq(r->elements, 2, "glob patterns match option names");
    if (it_target_is_crescent()) {
        /* The log names the value too, except for secrets. */
        IT_OK(it_c, "CONFIG SET requirepass s3cret");
        IT_OK(it_c, "AUTH s3cret");
        char log[16384] = "";
        FILE *f = fopen(it_srv.log, "r");
        cr_assert_not_null(f);
        size_t n = fread(log, 1, sizeof(log) - 1, f);
        log[n] = '\0';
        fclose(f);
        cr_assert_not_null(strstr(log, "CONFIG SET maxclients 500"), "log: %s", log);
        cr_assert_not_null(strstr(log, "CONFIG SET requirepass (hidden)"), "log: %s", log);
        cr_assert_null(strstr(log, "s3cret"), "log: %s", log);
    }
}

Test(server, config_errors) {
    IT_ERR("ERR Unknown option or number of arguments for CONFIG SET - 'nosuchoption'", it_c,
           "CONFIG SET nosuchoption 1");
    IT_ERR("ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument "
           "couldn't be parsed into an integer",
           it_c, "CONFIG SET maxclients x");
    IT_ERR("ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be "
           "between 0 and 2147483647 inclusive",
           it_c, "CONFIG SET timeout -1");
    IT_ERR("ERR wrong number of arguments for 'config|set' command", it_c, "CONFIG SET timeout");
    IT_ERR("ERR wrong number of arguments for 'config|get' command", it_c, "CONFIG GET");
    IT_ERR("ERR unknown subcommand 'foo'. Try CONFIG HELP.", it_c, "CONFIG foo");
}

static long long info_field(redisContext *c, const char *section, const char *field) {
    redisReply *r = it_cmd(c, "INFO %s", section);
    IT_TYPE(r, REDIS_REPLY_STRING);
    char pat[128];
    snprintf(pat, sizeof(pat), "\r\n%s:", field);
    const char *p = strstr(r->str, pat);
    cr_assert_not_null(p, "INFO %s has %s: %s", section, field, r->str);
    return strtoll(p + strlen(pat), NULL, 10);
}

/* Polls INFO clients until connected_clients equals want (closes are processed asynchronously,
 * e.g. the harness's readiness probe) or 2 s pass; returns the last value. */
static long long wait_connected(long long want) {
    long long n = -1;
    for (long long start = it_now_ms(); it_now_ms() - start < 2000; it_sleep_ms(20)) {
        n = info_field(it_c, "clients", "connected_clients");
        if (n == want) {
            break;
        }
    }
    return n;
}

Test(server, config_resetstat) {
    IT_OK(it_c, "SET k v");
    IT_STR("v", it_c, "GET k");
    IT_NIL(it_c, "GET missing");
    cr_assert_geq(info_field(it_c, "stats", "keyspace_hits"), 1);
    cr_assert_geq(info_field(it_c, "stats", "keyspace_misses"), 1);
    IT_OK(it_c, "CONFIG RESETSTAT");
    cr_assert_eq(info_field(it_c, "stats", "keyspace_hits"), 0);
    cr_assert_eq(info_field(it_c, "stats", "keyspace_misses"), 0);
    IT_STR("v", it_c, "GET k");
    cr_assert_eq(info_field(it_c, "stats", "keyspace_hits"), 1);
}

Test(server, info_sections) {
    redisReply *r = it_cmd(it_c, "INFO");
    IT_TYPE(r, REDIS_REPLY_STRING);
    const char *sections[] = {"# Server\r\n", "# Clients\r\n", "# Memory\r\n", "# Stats\r\n",
                              "# Keyspace\r\n"};
    for (size_t i = 0; i < 5; i++) {
        cr_assert_not_null(strstr(r->str, sections[i]), "INFO has %s", sections[i]);
    }
    r = it_cmd(it_c, "INFO server");
    cr_assert(strncmp(r->str, "# Server\r\n", 10) == 0, "%s", r->str);
    cr_assert_not_null(strstr(r->str, "\r\nredis_version:"), "tools read redis_version");
    cr_assert_null(strstr(r->str, "# Clients"), "only the requested section");
    char tcp[64];
    snprintf(tcp, sizeof(tcp), "\r\ntcp_port:%d\r\n", it_srv.port);
    cr_assert_not_null(strstr(r->str, tcp), "INFO server has %s", tcp + 2);
    cr_assert_eq(wait_connected(1), 1);
    redisContext *c2 = it_connect(&it_srv);
    IT_STATUS("PONG", c2, "PING");
    cr_assert_eq(wait_connected(2), 2);
    it_close(c2);
    cr_assert_gt(info_field(it_c, "memory", "used_memory"), 0);
    cr_assert_gt(info_field(it_c, "stats", "total_commands_processed"), 0);
    cr_assert_gt(info_field(it_c, "stats", "total_connections_received"), 0);
    r = it_cmd(it_c, "INFO server clients");
    cr_assert_not_null(strstr(r->str, "# Server\r\n"));
    cr_assert_not_null(strstr(r->str, "# Clients\r\n"));
    cr_assert_null(strstr(r->str, "# Memory"));
    const char *groups[] = {"all", "default", "everything"};
    for (size_t i = 0; i < 3; i++) {
        r = it_cmd(it_c, "INFO %s", groups[i]);
        cr_assert_not_null(strstr(r->str, "# Server\r\n"), "INFO %s", groups[i]);
        cr_assert_not_null(strstr(r->str, "# Keyspace\r\n"), "INFO %s", groups[i]);
    }
    r = it_cmd(it_c, "INFO nosuchsection");
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert_eq(r->len, 0, "unknown section gives an empty string: %s", r->str);
}

Test(server, info_keyspace) {
    redisReply *r = it_cmd(it_c, "INFO keyspace");
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert_str_eq(r->str, "# Keyspace\r\n", "empty keyspace lists no db");
    IT_OK(it_c, "SET a 1");
    IT_OK(it_c, "SET b 2");
    IT_OK(it_c, "SET c 3 EX 100");
    r = it_cmd(it_c, "INFO keyspace");
    const char *want = "# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=";
    cr_assert(strncmp(r->str, want, strlen(want)) == 0, "%s", r->str);
    const char *p = r->str + strlen(want);
    while (*p >= '0' && *p <= '9') {
        p++;
    }
    cr_assert_str_eq(p, "\r\n", "avg_ttl is a number ending the line: %s", r->str);
}

Test(server, dbsize_flush) {
    IT_INT(0, it_c, "DBSIZE");
    IT_OK(it_c, "MSET a 1 b 2 c 3");
    IT_INT(3, it_c, "DBSIZE");
    IT_OK(it_c, "FLUSHDB");
    IT_INT(0, it_c, "DBSIZE");
    IT_OK(it_c, "MSET a 1 b 2");
    IT_OK(it_c, "FLUSHALL");
    IT_INT(0, it_c, "DBSIZE");
    IT_NIL(it_c, "GET a");
    IT_OK(it_c, "SET a 1");
    IT_OK(it_c, "FLUSHALL ASYNC");
    IT_INT(0, it_c, "DBSIZE");
    IT_OK(it_c, "SET a 1");
    IT_OK(it_c, "FLUSHDB SYNC");
    IT_INT(0, it_c, "DBSIZE");
    IT_ERR("ERR syntax error", it_c, "FLUSHDB x");
    IT_ERR("ERR syntax error", it_c, "FLUSHALL x");
    IT_ERR("ERR wrong number of arguments for 'dbsize' command", it_c, "DBSIZE x");
}

Test(server, time) {
    redisReply *r = it_cmd(it_c, "TIME");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 2);
    IT_TYPE(r->element[0], REDIS_REPLY_STRING);
    IT_TYPE(r->element[1], REDIS_REPLY_STRING);
    long long secs = atoll(r->element[0]->str);
    long long usec = atoll(r->element[1]->str);
    long long now = (long long)time(NULL);
    cr_assert(secs >= now - 2 && secs <= now + 2, "TIME seconds %lld vs %lld", secs, now);
    cr_assert(usec >= 0 && usec < 1000000, "microseconds %lld", usec);
    IT_ERR("ERR wrong number of arguments for 'time' command", it_c, "TIME x");
}

Test(server, memory_usage) {
    IT_OK(it_c, "SET small v");
    char big[10000];
    memset(big, 'x', sizeof(big));
    IT_OK(it_c, "SET big %b", big, sizeof(big));
    redisReply *s = it_cmd(it_c, "MEMORY USAGE small");
    IT_TYPE(s, REDIS_REPLY_INTEGER);
    cr_assert_gt(s->integer, 0);
    redisReply *b = it_cmd(it_c, "MEMORY USAGE big SAMPLES 0");
    IT_TYPE(b, REDIS_REPLY_INTEGER);
    cr_assert_geq(b->integer, 10000, "usage covers the value");
    cr_assert_gt(b->integer, s->integer);
    IT_NIL(it_c, "MEMORY USAGE missing");
    IT_ERR("ERR value is not an integer or out of range", it_c, "MEMORY USAGE small SAMPLES x");
    IT_ERR("ERR unknown subcommand 'foo'. Try MEMORY HELP.", it_c, "MEMORY foo");
}

Test(server, object_encoding_refcount) {
    IT_OK(it_c, "SET i 12345");
    IT_OK(it_c, "SET s hello");
    IT_OK(it_c, "SET r %s", "0123456789012345678901234567890123456789012345"); /* 46 bytes */
    IT_STR("int", it_c, "OBJECT ENCODING i");
    IT_STR("embstr", it_c, "OBJECT ENCODING s");
    IT_STR("raw", it_c, "OBJECT ENCODING r");
    IT_NIL(it_c, "OBJECT ENCODING missing");
    redisReply *rc = it_cmd(it_c, "OBJECT REFCOUNT s");
    IT_TYPE(rc, REDIS_REPLY_INTEGER);
    cr_assert_geq(rc->integer, 1);
    IT_NIL(it_c, "OBJECT REFCOUNT missing");
    IT_ERR("ERR unknown subcommand 'foo'. Try OBJECT HELP.", it_c, "OBJECT foo");
}

Test(server_memory, limit_evicts_or_refuses, .fini = it_teardown, .timeout = 30) {
    struct it_opts o = {.memory = "2mb"};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    enum { N = 400, SZ = 16384 };
    static char v[SZ];
    memset(v, 'm', sizeof(v));
    int ok = 0, oom = 0;
    for (int i = 0; i < N; i++) {
        redisReply *r = it_cmd(it_c, "SET mem:%d %b", i, v, (size_t)SZ);
        if (r->type == REDIS_REPLY_STATUS) {
            ok++;
        } else {
            IT_TYPE(r, REDIS_REPLY_ERROR);
            cr_assert_str_eq(r->str, "OOM command not allowed when used memory > 'maxmemory'.");
            oom++;
        }
    }
    redisReply *dbsize = it_cmd(it_c, "DBSIZE");
    cr_assert_lt(dbsize->integer, N, "6.4 MB of values do not all fit in 2 MB");
    if (it_target_is_redis()) {
        /* Redis's default maxmemory-policy is noeviction: writes are refused. */
        cr_assert_gt(oom, 0);
        cr_assert_eq(dbsize->integer, ok);
    } else {
        /* crescent is a cache: it evicts old objects and accepts every write. */
        cr_assert_eq(oom, 0, "%d writes refused", oom);
        cr_assert_gt(dbsize->integer, 0);
        redisReply *r = it_cmd(it_c, "GET mem:%d", N - 1);
        IT_TYPE(r, REDIS_REPLY_STRING);
        cr_assert_eq(r->len, SZ, "the newest value is readable after eviction");
        redisReply *info = it_cmd(it_c, "INFO stats");
        const char *p = strstr(info->str, "\r\nevicted_keys:");
        cr_assert_not_null(p, "INFO stats has evicted_keys");
        cr_assert_gt(atoll(p + 15), 0);
    }
}

Test(server_config_file, file_then_flags, .fini = it_teardown, .timeout = 30) {
    /* The configuration file comes first; flags given after it override it. */
    struct it_opts o = {.conf = "# test configuration\n"
                                "\n"
                                "maxclients 77\n"
                                "timeout 5\n",
                        .maxclients = 88};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    redisReply *r = it_cmd(it_c, "CONFIG GET timeout");
    cr_assert_eq(r->elements, 2);
    cr_assert_str_eq(r->element[1]->str, "5", "timeout from the file");
    r = it_cmd(it_c, "CONFIG GET maxclients");
    cr_assert_str_eq(r->element[1]->str, "88", "the flag overrides the file");
}

Test(server_config_file, quoted_values, .fini = it_teardown, .timeout = 30) {
    struct it_opts o = {.conf = "requirepass \"pass word\"\n"};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    IT_ERR("NOAUTH Authentication required.", it_c, "GET x");
    IT_OK(it_c, "AUTH %s", "pass word");
    IT_NIL(it_c, "GET x");
}

Test(server, object_encoding_transitions) {
    IT_OK(it_c, "SET n 123");
    IT_INT(4, it_c, "APPEND n 4");
    /* Redis reports "raw" for strings modified in place (APPEND, SETRANGE); crescent derives the
     * encoding from the value alone (documented difference). */
    const char *modified_int = it_target_is_redis() ? "raw" : "int";
    const char *modified_short = it_target_is_redis() ? "raw" : "embstr";
    IT_STR(modified_int, it_c, "OBJECT ENCODING n");
    IT_STR("1234", it_c, "GET n");
    IT_OK(it_c, "SET m 10");
    IT_INT(11, it_c, "INCR m");
    IT_STR("int", it_c, "OBJECT ENCODING m");
    IT_OK(it_c, "SET neg -5");
    IT_STR("int", it_c, "OBJECT ENCODING neg");
    IT_OK(it_c, "SET big 12345678901234567890"); /* does not fit in a long */
    IT_STR("embstr", it_c, "OBJECT ENCODING big");
    IT_OK(it_c, "SET sp %s", " 1");
    IT_STR("embstr", it_c, "OBJECT ENCODING sp");
    IT_STR("1", it_c, "INCRBYFLOAT f 1");
    IT_STR(it_target_is_redis() ? "embstr" : "int", it_c, "OBJECT ENCODING f");
    IT_INT(3, it_c, "SETRANGE s 0 abc");
    IT_STR(modified_short, it_c, "OBJECT ENCODING s");
}

Test(server, info_commandstats_errorstats) {
    IT_OK(it_c, "CONFIG RESETSTAT");
    IT_OK(it_c, "SET k v");
    IT_OK(it_c, "SET k v");
    IT_ERR("WRONGTYPE Operation against a key holding the wrong kind of value", it_c, "LPUSH k x");
    IT_ERR("ERR wrong number of arguments for 'get' command", it_c, "GET");
    redisReply *r = it_cmd(it_c, "INFO commandstats");
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert(strncmp(r->str, "# Commandstats\r\n", 16) == 0, "%s", r->str);
    cr_assert_not_null(strstr(r->str, "\r\ncmdstat_set:calls=2,usec="), "%s", r->str);
    cr_assert_not_null(strstr(r->str, ",rejected_calls=0,failed_calls=0\r\n"), "%s", r->str);
    const char *lp = strstr(r->str, "cmdstat_lpush:calls=1,");
    cr_assert_not_null(lp, "%s", r->str);
    cr_assert(strncmp(strstr(lp, "rejected_calls="), "rejected_calls=0,failed_calls=1\r\n", 33) ==
                  0,
              "%s", lp);
    const char *get = strstr(r->str, "cmdstat_get:calls=0,");
    cr_assert_not_null(get, "a rejected call is listed with calls=0: %s", r->str);
    cr_assert(strncmp(strstr(get, "rejected_calls="), "rejected_calls=1,failed_calls=0\r\n", 33) ==
                  0,
              "%s", get);
    r = it_cmd(it_c, "INFO errorstats");
    cr_assert_str_eq(r->str,
                     "# Errorstats\r\nerrorstat_ERR:count=1\r\nerrorstat_WRONGTYPE:count=1\r\n");
    r = it_cmd(it_c, "INFO");
    cr_assert_null(strstr(r->str, "# Commandstats"), "not in the default set");
    cr_assert_not_null(strstr(r->str, "# Errorstats"), "in the default set");
    r = it_cmd(it_c, "INFO all");
    cr_assert_not_null(strstr(r->str, "# Commandstats"), "INFO all has it");
}
