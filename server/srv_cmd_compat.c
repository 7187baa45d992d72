/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small Redis 7.0 commands that scripts and tools call and whose answer follows from Crescent
 * having one database and no persistence: LASTSAVE (the start time, as Redis counts the data
 * set saved at startup), SWAPDB and MOVE (only database 0 exists), with Redis's errors.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"

#include "redis-compat/resp_write.h"

#include <limits.h>

/*
 * Parses argument i as a database index (an int). When it is not one, replies msg, or without
 * msg Redis's generic integer or int-range error. Returns 0, or -1 (replied).
 */
static int srv_db_index(struct srv_client *c, int i, const char *msg, long long *out) {
    if (srv_arg_ll(c, i, out, msg) < 0)
        return -1;
    if (*out < INT_MIN || *out > INT_MAX) {
        srv_reply_error(c, msg ? msg
                               : "ERR value is out of range, value must between -2147483648 and "
                                 "2147483647");
        return -1;
    }
    return 0;
}

void srv_lastsave_command(struct srv_client *c) {
    resp_add_int(&c->out, (long long)(srv_start_wall_ms / 1000));
}

void srv_swapdb_command(struct srv_client *c) {
    long long a, b;
    if (srv_db_index(c, 1, "ERR invalid first DB index", &a) < 0 ||
        srv_db_index(c, 2, "ERR invalid second DB index", &b) < 0)
        return;
    if (a != 0 || b != 0) {
        srv_reply_error(c, "ERR DB index is out of range");
        return;
    }
    srv_reply_ok(c); /* swapping db 0 with itself changes nothing */
}

void srv_move_command(struct srv_client *c) {
    long long db;
    if (srv_db_index(c, 2, NULL, &db) < 0)
        return;
    if (db != 0) {
        srv_reply_error(c, "ERR DB index is out of range");
        return;
    }
    srv_reply_error(c, "ERR source and destination objects are the same");
}
