/* SPDX-License-Identifier: Apache-2.0 */
/* Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT. */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"

#include "common/cm_mem.h"
#include "redis-compat/resp_write.h"

#include <stdio.h>
#include <string.h>

void srv_ping_command(struct srv_client *c) {
    if (c->argc > 2) {
        srv_reply_wrong_arity(c, "ping");
        return;
    }
    if (c->ps && srv_pubsub_ping(c))
        return;
    if (c->argc == 2)
        resp_add_bulk(&c->out, c->argv[1].p, c->argv[1].len);
    else
        cm_buf_append(&c->out, "+PONG\r\n", 7);
}

void srv_echo_command(struct srv_client *c) {
    resp_add_bulk(&c->out, c->argv[1].p, c->argv[1].len);
}

/* Checks user/password against requirepass; the only user is "default". */
static int srv_check_password(const struct srv_arg *user, const struct srv_arg *pass) {
    if (user && !(user->len == 7 && memcmp(user->p, "default", 7) == 0))
        return 0;
    const char *pw = srv_cfg.requirepass ? srv_cfg.requirepass : "";
    if (!*pw)
        return 1; /* nopass: any password works for "default" */
    return strlen(pw) == pass->len && memcmp(pw, pass->p, pass->len) == 0;
}

void srv_auth_command(struct srv_client *c) {
    if (c->argc > 3) {
        srv_reply_syntax_error(c);
        return;
    }
    const char *pw = srv_cfg.requirepass ? srv_cfg.requirepass : "";
    if (c->argc == 2 && !*pw) {
        srv_reply_error(c, "ERR AUTH <password> called without any password configured for the "
                           "default user. Are you sure your configuration is correct?");
        return;
    }
    const struct srv_arg *user = c->argc == 3 ? &c->argv[1] : NULL;
    if (!srv_check_password(user, &c->argv[c->argc - 1])) {
        srv_reply_error(c, "WRONGPASS invalid username-password pair or user is disabled.");
        return;
    }
    c->authenticated = 1;
    srv_reply_ok(c);
}

static void srv_set_str(char **dst, const struct srv_arg *a) {
    cm_free(*dst);
    *dst = a->len ? cm_strndup(a->p, a->len) : NULL;
}

/* Client names may not contain spaces, newlines or special characters (Redis rule). */
static int srv_valid_name(const struct srv_arg *a) {
    for (size_t i = 0; i < a->len; i++)
        if (a->p[i] < '!' || a->p[i] > '~')
            return 0;
    return 1;
}

void srv_hello_command(struct srv_client *c) {
    long long ver = 0;
    int j = 1;
    if (c->argc >= 2) {
        if (srv_arg_ll(c, 1, &ver, "ERR Protocol version is not an integer or out of range") < 0)
            return;
        if (ver < 2 || ver > 3) {
            srv_reply_error(c, "NOPROTO unsupported protocol version");
            return;
        }
        j = 2;
    }
    const struct srv_arg *setname = NULL;
    for (; j < c->argc; j++) {
        int more = c->argc - j - 1;
        if (srv_arg_is(c, j, "auth") && more >= 2) {
            if (!srv_check_password(&c->argv[j + 1], &c->argv[j + 2])) {
                srv_reply_error(c, "WRONGPASS invalid username-password pair or user is disabled.");
                return;
            }
            c->authenticated = 1;
            j += 2;
        } else if (srv_arg_is(c, j, "setname") && more >= 1) {
            setname = &c->argv[++j];
            if (!srv_valid_name(setname)) {
                srv_reply_error(c, "ERR Client names cannot contain spaces, newlines or special "
                                   "characters.");
                return;
            }
        } else {
            srv_reply_errorf(c, "ERR Syntax error in HELLO option '%.*s'", (int)c->argv[j].len,
                             c->argv[j].p);
            return;
        }
    }
    if (!c->authenticated) {
        srv_reply_error(c, "NOAUTH HELLO must be called with the client already authenticated, "
                           "otherwise the HELLO AUTH <user> <pass> option can be used "
                           "to authenticate the client and select the RESP protocol version at "
                           "the same time");
        return;
    }
    if (setname)
        srv_set_str(&c->name, setname);
    if (ver)
        c->proto = (int)ver;
    resp_add_map_hdr(&c->out, c->proto, 7);
    resp_add_bulk_cstr(&c->out, "server");
    resp_add_bulk_cstr(&c->out, "redis");
    resp_add_bulk_cstr(&c->out, "version");
    resp_add_bulk_cstr(&c->out, SRV_REDIS_VERSION);
    resp_add_bulk_cstr(&c->out, "proto");
    resp_add_int(&c->out, c->proto);
    resp_add_bulk_cstr(&c->out, "id");
    resp_add_int(&c->out, (long long)c->id);
    resp_add_bulk_cstr(&c->out, "mode");
    resp_add_bulk_cstr(&c->out, "standalone");
    resp_add_bulk_cstr(&c->out, "role");
    resp_add_bulk_cstr(&c->out, "master");
    resp_add_bulk_cstr(&c->out, "modules");
    resp_add_array_hdr(&c->out, 0);
}

void srv_select_command(struct srv_client *c) {
    long long db;
    if (srv_arg_ll(c, 1, &db, NULL) < 0)
        return;
    if (db != 0) {
        srv_reply_error(c, "ERR DB index is out of range");
        return;
    }
    srv_reply_ok(c);
}

void srv_quit_command(struct srv_client *c) {
    srv_reply_ok(c);
    c->flags |= SRV_CLIENT_CLOSE_AFTER_REPLY;
}

void srv_reset_command(struct srv_client *c) {
    srv_pubsub_client_gone(c);
    srv_multi_reset(c);
    srv_unwatch_all(c);
    cm_free(c->name);
    c->name = NULL;
    c->proto = 2;
    c->authenticated = (srv_cfg.requirepass == NULL || srv_cfg.requirepass[0] == '\0');
    resp_add_simple(&c->out, "RESET");
}

/* ---------------------------------------------------------------- CLIENT */

static void srv_client_kill_cmd(struct srv_client *c) {
    struct srv_kill_filter f = {.skipme = 1, .me = c};
    if (c->argc == 3) { /* old form: CLIENT KILL addr */
        char addr[128];
        snprintf(addr, sizeof(addr), "%.*s", (int)c->argv[2].len, c->argv[2].p);
        f.addr = addr;
        f.skipme = 0;
        if (srv_clients_kill(&f) == 0)
            srv_reply_error(c, "ERR No such client");
        else
            srv_reply_ok(c);
        return;
    }
    char addr[128] = "", laddr[128] = "";
    for (int j = 2; j < c->argc; j += 2) {
        if (j + 1 >= c->argc) {
            srv_reply_syntax_error(c);
            return;
        }
        const struct srv_arg *v = &c->argv[j + 1];
        if (srv_arg_is(c, j, "id")) {
            long long id;
            if (srv_arg_ll(c, j + 1, &id, "ERR client-id should be greater than 0") < 0)
                return;
            if (id <= 0) {
                srv_reply_error(c, "ERR client-id should be greater than 0");
                return;
            }
            f.id = (uint64_t)id;
        } else if (srv_arg_is(c, j, "addr")) {
            snprintf(addr, sizeof(addr), "%.*s", (int)v->len, v->p);
            f.addr = addr;
        } else if (srv_arg_is(c, j, "laddr")) {
            snprintf(laddr, sizeof(laddr), "%.*s", (int)v->len, v->p);
            f.laddr = laddr;
        } else if (srv_arg_is(c, j, "skipme")) {
            if (srv_arg_is(c, j + 1, "yes"))
                f.skipme = 1;
            else if (srv_arg_is(c, j + 1, "no"))
                f.skipme = 0;
            else {
                srv_reply_syntax_error(c);
                return;
            }
        } else if (srv_arg_is(c, j, "user")) {
            if (!srv_arg_is(c, j + 1, "default")) {
                srv_reply_errorf(c, "ERR No such user '%.*s'", (int)v->len, v->p);
                return;
            }
        } else if (srv_arg_is(c, j, "type")) {
            if (!srv_arg_is(c, j + 1, "normal")) {
                resp_add_int(&c->out, 0); /* no replicas or pub/sub clients here */
                return;
            }
        } else {
            srv_reply_syntax_error(c);
            return;
        }
    }
    resp_add_int(&c->out, srv_clients_kill(&f));
}

/* CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]. Returns -1 if replied. */
static int srv_client_list_args(struct srv_client *c, struct cm_buf *b) {
    int j = 2, any_id = 0;
    while (j < c->argc) {
        if (srv_arg_is(c, j, "type") && j + 1 < c->argc) {
            if (!srv_arg_is(c, j + 1, "normal") && !srv_arg_is(c, j + 1, "master") &&
                !srv_arg_is(c, j + 1, "replica") && !srv_arg_is(c, j + 1, "pubsub")) {
                srv_reply_errorf(c, "ERR Unknown client type '%.*s'", (int)c->argv[j + 1].len,
                                 c->argv[j + 1].p);
                return -1;
            }
            if (!srv_arg_is(c, j + 1, "normal"))
                return 0; /* no such clients here */
            j += 2;
        } else if (srv_arg_is(c, j, "id") && j + 1 < c->argc) {
            for (j++; j < c->argc; j++) {
                long long id;
                if (srv_arg_ll(c, j, &id, "ERR Invalid client ID") < 0)
                    return -1;
                if (id <= 0) {
                    srv_reply_error(c, "ERR Invalid client ID");
                    return -1;
                }
                srv_clients_list(b, (uint64_t)id);
                any_id = 1;
            }
        } else {
            srv_reply_syntax_error(c);
            return -1;
        }
    }
    if (!any_id)
        srv_clients_list(b, 0);
    return 0;
}

static void srv_reply_text(struct srv_client *c, struct cm_buf *b) {
    resp_add_verbatim(&c->out, c->proto, b->data ? b->data : "", b->len, "txt");
}

void srv_client_command(struct srv_client *c) {
    if (srv_arg_is(c, 1, "id")) {
        resp_add_int(&c->out, (long long)c->id);
    } else if (srv_arg_is(c, 1, "setname")) {
        if (!srv_valid_name(&c->argv[2])) {
            srv_reply_error(
                c, "ERR Client names cannot contain spaces, newlines or special characters.");
            return;
        }
        srv_set_str(&c->name, &c->argv[2]);
        srv_reply_ok(c);
    } else if (srv_arg_is(c, 1, "getname")) {
        if (c->name)
            resp_add_bulk_cstr(&c->out, c->name);
        else
            resp_add_null(&c->out, c->proto);
    } else if (srv_arg_is(c, 1, "setinfo")) {
        if (!srv_valid_name(&c->argv[3])) {
            srv_reply_errorf(c, "ERR %.*s cannot contain spaces, newlines or special characters.",
                             (int)c->argv[2].len, c->argv[2].p);
            return;
        }
        if (srv_arg_is(c, 2, "lib-name"))
            srv_set_str(&c->lib_name, &c->argv[3]);
        else if (srv_arg_is(c, 2, "lib-ver"))
            srv_set_str(&c->lib_ver, &c->argv[3]);
        else {
            srv_reply_errorf(c, "ERR Unrecognized option '%.*s'", (int)c->argv[2].len,
                             c->argv[2].p);
            return;
        }
        srv_reply_ok(c);
    } else if (srv_arg_is(c, 1, "list") || srv_arg_is(c, 1, "info")) {
        struct cm_buf b;
        cm_buf_init(&b);
        if (srv_arg_is(c, 1, "info")) {
            srv_client_info_line(c, &b);
            cm_buf_append(&b, "\n", 1);
        } else if (srv_client_list_args(c, &b) < 0) {
            cm_buf_fini(&b);
            return;
        }
        srv_reply_text(c, &b);
        cm_buf_fini(&b);
    } else if (srv_arg_is(c, 1, "kill")) {
        srv_client_kill_cmd(c);
    } else if (srv_arg_is(c, 1, "help")) {
        static const char *const lines[] = {
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ID",
            "    Return the ID of the current connection.",
            "GETNAME",
            "    Return the name of the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "SETINFO <LIB-NAME|LIB-VER> <value>",
            "    Set client library name or version.",
            "LIST",
            "    Return information about client connections.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port> | KILL <option> <value> [...]",
            "    Kill connections."};
        resp_add_array_hdr(&c->out, (long)(sizeof(lines) / sizeof(lines[0])));
        for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
            resp_add_simple(&c->out, lines[i]);
    } else {
        srv_reply_errorf(c, "ERR unknown subcommand '%.*s'. Try CLIENT HELP.", (int)c->argv[1].len,
                         c->argv[1].p);
    }
}
