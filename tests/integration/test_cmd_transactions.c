/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for transactions: MULTI, EXEC, DISCARD, WATCH and UNWATCH, with queued
 * replies, queue-time and run-time errors, and optimistic locking across two clients. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(transactions, .init = it_setup, .fini = it_teardown, .timeout = 30);

Test(transactions, multi_exec_queues) {
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET a 1");
    IT_STATUS("QUEUED", it_c, "INCR a");
    IT_STATUS("QUEUED", it_c, "GET a");
    IT_STATUS("QUEUED", it_c, "GET missing");
    redisReply *r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4);
    cr_assert(r->element[0]->type == REDIS_REPLY_STATUS && strcmp(r->element[0]->str, "OK") == 0);
    cr_assert(r->element[1]->type == REDIS_REPLY_INTEGER && r->element[1]->integer == 2);
    cr_assert(r->element[2]->type == REDIS_REPLY_STRING && strcmp(r->element[2]->str, "2") == 0);
    cr_assert_eq(r->element[3]->type, REDIS_REPLY_NIL);
    /* Empty transaction. */
    IT_OK(it_c, "MULTI");
    r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 0);
}

Test(transactions, isolation_from_other_clients) {
    redisContext *c2 = it_connect(&it_srv);
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET iso 1");
    IT_NIL(c2, "GET iso"); /* nothing runs before EXEC */
    redisReply *r = it_cmd(it_c, "EXEC");
    cr_assert_eq(r->elements, 1);
    IT_STR("1", c2, "GET iso");
    it_close(c2);
}

Test(transactions, exec_discard_without_multi) {
    IT_ERR("ERR EXEC without MULTI", it_c, "EXEC");
    IT_ERR("ERR DISCARD without MULTI", it_c, "DISCARD");
}

Test(transactions, discard) {
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET a 1");
    IT_OK(it_c, "DISCARD");
    IT_INT(0, it_c, "EXISTS a");
    IT_ERR("ERR EXEC without MULTI", it_c, "EXEC");
}

Test(transactions, nested_multi) {
    IT_OK(it_c, "MULTI");
    IT_ERR("ERR MULTI calls can not be nested", it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET a 1");
    redisReply *r = it_cmd(it_c, "EXEC"); /* the nested MULTI does not abort */
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 1);
    IT_STR("1", it_c, "GET a");
}

Test(transactions, queue_time_errors_abort) {
    IT_OK(it_c, "MULTI");
    IT_ERR("ERR wrong number of arguments for 'set' command", it_c, "SET a");
    IT_STATUS("QUEUED", it_c, "SET b 2");
    IT_ERR("EXECABORT Transaction discarded because of previous errors.", it_c, "EXEC");
    IT_INT(0, it_c, "EXISTS b");
    IT_OK(it_c, "MULTI");
    IT_ERR("ERR unknown command 'foo', with args beginning with: 'bar' ", it_c, "foo bar");
    IT_STATUS("QUEUED", it_c, "SET b 2");
    IT_ERR("EXECABORT Transaction discarded because of previous errors.", it_c, "EXEC");
    IT_INT(0, it_c, "EXISTS b");
    IT_ERR("ERR EXEC without MULTI", it_c, "EXEC"); /* the transaction is over */
}

Test(transactions, run_time_errors_do_not_abort) {
    IT_OK(it_c, "SET s x");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "INCR n");
    IT_STATUS("QUEUED", it_c, "INCR s");
    IT_STATUS("QUEUED", it_c, "SET k v EX 0");
    IT_STATUS("QUEUED", it_c, "INCR n");
    redisReply *r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4);
    cr_assert_eq(r->element[0]->integer, 1);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_ERROR);
    cr_assert_str_eq(r->element[1]->str, "ERR value is not an integer or out of range");
    cr_assert_eq(r->element[2]->type, REDIS_REPLY_ERROR);
    cr_assert_str_eq(r->element[2]->str, "ERR invalid expire time in 'set' command");
    cr_assert_eq(r->element[3]->integer, 2);
}

Test(transactions, watch_modified_by_other_client) {
    redisContext *c2 = it_connect(&it_srv);
    IT_OK(it_c, "SET w 1");
    IT_OK(it_c, "WATCH w");
    IT_OK(c2, "SET w 2");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET w 3");
    redisReply *r = it_cmd(it_c, "EXEC");
    cr_assert_eq(r->type, REDIS_REPLY_NIL, "EXEC after a watched key changed is a null array");
    IT_STR("2", it_c, "GET w");
    /* The failed EXEC unwatched everything: the next transaction runs. */
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET w 4");
    r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    IT_STR("4", it_c, "GET w");
    it_close(c2);
}

Test(transactions, watch_null_array_raw) {
    int fd = it_raw_open(it_srv.port);
    redisContext *c2 = it_connect(&it_srv);
    it_raw_send(fd, "WATCH w\r\n", 9);
    size_t len;
    char *got = it_raw_read(fd, &len);
    cr_assert_str_eq(got, "+OK\r\n");
    free(got);
    IT_OK(c2, "SET w 2");
    it_raw_send(fd, "MULTI\r\nPING\r\n", 13);
    free(it_raw_read(fd, &len));
    free(it_raw_read(fd, &len));
    it_raw_send(fd, "EXEC\r\n", 6);
    got = it_raw_read(fd, &len);
    cr_assert_str_eq(got, "*-1\r\n", "RESP2 null array on the wire");
    free(got);
    it_close(c2);
    close(fd);
}

Test(transactions, watch_missing_key_created) {
    redisContext *c2 = it_connect(&it_srv);
    IT_OK(it_c, "WATCH nk");
    IT_OK(c2, "SET nk 1");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "GET nk");
    cr_assert_eq(it_cmd(it_c, "EXEC")->type, REDIS_REPLY_NIL);
    /* Deleting a watched key aborts too. */
    IT_OK(it_c, "WATCH nk");
    IT_INT(1, c2, "DEL nk");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "PING");
    cr_assert_eq(it_cmd(it_c, "EXEC")->type, REDIS_REPLY_NIL);
    /* So does FLUSHALL of a watched, existing key. */
    IT_OK(it_c, "SET fk 1");
    IT_OK(it_c, "WATCH fk");
    IT_OK(c2, "FLUSHALL");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "PING");
    cr_assert_eq(it_cmd(it_c, "EXEC")->type, REDIS_REPLY_NIL);
    it_close(c2);
}

Test(transactions, watch_key_expired_aborts) {
    IT_OK(it_c, "SET e v PX 100");
    IT_OK(it_c, "WATCH e");
    long long start = it_now_ms();
    for (;;) { /* wait until the key is gone, without touching it from this client */
        redisContext *c2 = it_connect(&it_srv);
        redisReply *r = redisCommand(c2, "PTTL e");
        long long t = r != NULL ? r->integer : 0;
        freeReplyObject(r);
        it_close(c2);
        if (t == -2 || it_now_ms() - start > 3000) {
            break;
        }
        it_sleep_ms(20);
    }
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET e w");
    cr_assert_eq(it_cmd(it_c, "EXEC")->type, REDIS_REPLY_NIL,
                 "a watched key that expired fails EXEC");
    IT_NIL(it_c, "GET e");
}

Test(transactions, watch_own_write_aborts) {
    IT_OK(it_c, "SET w 1");
    IT_OK(it_c, "WATCH w");
    IT_OK(it_c, "SET w 2");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET w 3");
    cr_assert_eq(it_cmd(it_c, "EXEC")->type, REDIS_REPLY_NIL);
    IT_STR("2", it_c, "GET w");
}

Test(transactions, watch_unrelated_and_unwatch) {
    redisContext *c2 = it_connect(&it_srv);
    IT_OK(it_c, "WATCH a b");
    IT_OK(c2, "SET other 1");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET a 1");
    redisReply *r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 1);
    IT_OK(it_c, "WATCH a");
    IT_OK(it_c, "UNWATCH");
    IT_OK(c2, "SET a 2");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET a 3");
    r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    IT_STR("3", it_c, "GET a");
    /* DISCARD also unwatches. */
    IT_OK(it_c, "WATCH a");
    IT_OK(it_c, "MULTI");
    IT_OK(it_c, "DISCARD");
    IT_OK(c2, "SET a 4");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "GET a");
    r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_str_eq(r->element[0]->str, "4");
    it_close(c2);
}

Test(transactions, watch_errors) {
    IT_ERR("ERR wrong number of arguments for 'watch' command", it_c, "WATCH");
    IT_OK(it_c, "MULTI");
    IT_ERR("ERR WATCH inside MULTI is not allowed", it_c, "WATCH a");
    IT_STATUS("QUEUED", it_c, "SET a 1");
    redisReply *r = it_cmd(it_c, "EXEC"); /* the refused WATCH does not abort */
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 1);
    IT_OK(it_c, "UNWATCH");
}

Test(transactions, quit_and_reset_inside_multi_run_at_once) {
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "SET q 1");
    IT_OK(it_c, "QUIT");
    cr_assert_null(redisCommand(it_c, "PING"), "QUIT inside MULTI closes the connection");
    redisContext *c2 = it_connect(&it_srv);
    IT_INT(0, c2, "EXISTS q");
    IT_OK(c2, "MULTI");
    IT_STATUS("QUEUED", c2, "SET q 1");
    IT_STATUS("RESET", c2, "RESET");
    IT_ERR("ERR EXEC without MULTI", c2, "EXEC");
    IT_INT(0, c2, "EXISTS q");
    it_close(c2);
}
