/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for generic error replies: unknown commands (Redis 7.0 wording, argument
 * preview limit, CR/LF replaced), wrong arity for commands and subcommands, unknown subcommands,
 * and that the connection stays usable after each error. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(errors, .init = it_setup, .fini = it_teardown, .timeout = 30);

Test(errors, unknown_command) {
    IT_ERR("ERR unknown command 'foo', with args beginning with: 'a' 'b' ", it_c, "foo a b");
    IT_ERR("ERR unknown command 'foo', with args beginning with: ", it_c, "foo");
    IT_ERR("ERR unknown command 'FOO', with args beginning with: 'a' ", it_c, "FOO a");
    IT_ERR("ERR unknown command '', with args beginning with: ", it_c, "%s", "");
    IT_STATUS("PONG", it_c, "PING");
}

Test(errors, unknown_command_newlines_replaced) {
    IT_ERR("ERR unknown command 'a b', with args beginning with: 'c' ", it_c, "%s c", "a\nb");
    IT_ERR("ERR unknown command 'foo', with args beginning with: 'x y' ", it_c, "foo %s", "x\ny");
    IT_ERR("ERR unknown command 'foo', with args beginning with: 'x  y' ", it_c, "foo %s",
           "x\r\ny");
}

Test(errors, unknown_command_args_preview_limit) {
    /* Arguments are appended while the preview is shorter than 128 bytes. */
    IT_ERR("ERR unknown command 'foo', with args beginning with: '1' '2' '3' '4' '5' '6' '7' "
           "'8' '9' '10' '11' '12' '13' '14' '15' '16' '17' '18' '19' '20' '21' '22' '23' "
           "'24' '25' '26' '27' '28' ",
           it_c,
           "foo 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 "
           "30 31 32 33 34 35 36 37 38 39 40");
    char arg[201];
    memset(arg, 'x', 200);
    arg[200] = '\0';
    char want[256];
    snprintf(want, sizeof(want), "ERR unknown command 'foo', with args beginning with: '%.128s' ",
             arg);
    IT_ERR(want, it_c, "foo %s y", arg);
}

Test(errors, wrong_arity) {
    IT_ERR("ERR wrong number of arguments for 'get' command", it_c, "GET");
    IT_ERR("ERR wrong number of arguments for 'get' command", it_c, "GET a b");
    IT_ERR("ERR wrong number of arguments for 'get' command", it_c, "get");
    IT_ERR("ERR wrong number of arguments for 'set' command", it_c, "SET a");
    IT_ERR("ERR wrong number of arguments for 'incr' command", it_c, "INCR");
    IT_ERR("ERR wrong number of arguments for 'strlen' command", it_c, "STRLEN a b");
    IT_ERR("ERR wrong number of arguments for 'ttl' command", it_c, "TTL a b");
    IT_ERR("ERR wrong number of arguments for 'client' command", it_c, "CLIENT");
    IT_ERR("ERR wrong number of arguments for 'config' command", it_c, "CONFIG");
    IT_ERR("ERR wrong number of arguments for 'client|getname' command", it_c,
           "CLIENT GETNAME a b");
    IT_ERR("ERR wrong number of arguments for 'config|get' command", it_c, "CONFIG GET");
    IT_STATUS("PONG", it_c, "PING");
}

Test(errors, unknown_subcommand) {
    IT_ERR("ERR unknown subcommand 'foo'. Try CLIENT HELP.", it_c, "CLIENT foo");
    IT_ERR("ERR unknown subcommand 'foo'. Try CONFIG HELP.", it_c, "CONFIG foo");
    IT_ERR("ERR unknown subcommand 'foo'. Try COMMAND HELP.", it_c, "COMMAND foo");
    IT_ERR("ERR unknown subcommand 'foo'. Try OBJECT HELP.", it_c, "OBJECT foo");
    IT_ERR("ERR unknown subcommand 'foo'. Try MEMORY HELP.", it_c, "MEMORY foo");
}

Test(errors, error_stats_in_info) {
    IT_ERR_PREFIX("ERR unknown command", it_c, "nosuchcmd");
    IT_ERR_PREFIX("ERR wrong number", it_c, "GET");
    redisReply *r = it_cmd(it_c, "INFO stats");
    const char *p = strstr(r->str, "\r\ntotal_error_replies:");
    cr_assert_not_null(p, "INFO stats has total_error_replies: %s", r->str);
    cr_assert_geq(atoll(p + 22), 2);
    p = strstr(r->str, "\r\nunexpected_error_replies:");
    cr_assert_not_null(p, "INFO stats has unexpected_error_replies");
}

Test(errors, pipelined_errors_keep_order) {
    cr_assert_eq(redisAppendCommand(it_c, "SET a 1"), REDIS_OK);
    cr_assert_eq(redisAppendCommand(it_c, "nosuch"), REDIS_OK);
    cr_assert_eq(redisAppendCommand(it_c, "GET a"), REDIS_OK);
    cr_assert_eq(redisAppendCommand(it_c, "INCR a b"), REDIS_OK);
    cr_assert_eq(redisAppendCommand(it_c, "INCR a"), REDIS_OK);
    int types[] = {REDIS_REPLY_STATUS, REDIS_REPLY_ERROR, REDIS_REPLY_STRING, REDIS_REPLY_ERROR,
                   REDIS_REPLY_INTEGER};
    for (int i = 0; i < 5; i++) {
        void *rv;
        cr_assert_eq(redisGetReply(it_c, &rv), REDIS_OK);
        it_keep(rv);
        IT_TYPE((redisReply *)rv, types[i]);
    }
}
