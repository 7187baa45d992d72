/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crescent-master's life cycle: SHUTDOWN and SIGTERM end it cleanly (exit 0, Unix socket
 * removed), a config file given first is read and flags override it, and bad start-up input
 * (unknown flag, bad value, unreadable file, bad HA flags, enable_offload) fails with one clear
 * message and exit 1.
 * Crescent only: these start the binary directly.
 */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char bin[1024];

static void init(void) {
    const char *b = getenv("CRESCENT_BUILD");
    snprintf(bin, sizeof(bin), "%s/bin/crescent-master", b ? b : "build");
    if (!it_target_is_crescent() || access(bin, X_OK) != 0)
        cr_skip_test("crescent-master only");
}

TestSuite(lifecycle, .init = init, .timeout = 60);

/* Runs crescent-master with argv (NULL-terminated, without argv[0]); returns its exit status
 * and its output (stdout and stderr) in out. */
static int run_to_exit(const char *const *args, char *out, size_t outlen) {
    int pfd[2];
    cr_assert_eq(pipe(pfd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        const char *argv[16] = {bin};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t have = 0;
    ssize_t n;
    while (have < outlen - 1 && (n = read(pfd[0], out + have, outlen - 1 - have)) > 0)
        have += (size_t)n;
    out[have] = '\0';
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Waits up to 5 s for pid to exit; returns its exit status or -1. */
static int wait_exit(pid_t pid) {
    for (int i = 0; i < 500; i++) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        it_sleep_ms(10);
    }
    return -1;
}

Test(lifecycle, shutdown_command_exits_cleanly) {
    struct it_server s;
    char sock[300];
    snprintf(sock, sizeof(sock), "/tmp/crescent-lc-%d.sock", (int)getpid());
    struct it_opts o = {.unixsocket = sock};
    it_server_start(&s, &o);
    cr_assert_eq(access(sock, F_OK), 0, "unix socket exists while running");
    redisContext *c = it_connect(&s);
    redisReply *r = redisCommand(c, "SHUTDOWN NOSAVE");
    cr_assert_null(r, "SHUTDOWN closes the connection without a reply");
    redisFree(c);
    int st = wait_exit(s.pid);
    cr_assert_eq(st, 0, "exit status after SHUTDOWN: %d", st);
    s.pid = 0;
    cr_assert_neq(access(sock, F_OK), 0, "unix socket removed at exit");
    it_server_stop(&s);
}

Test(lifecycle, sigterm_exits_cleanly) {
    struct it_server s;
    it_server_start(&s, NULL);
    redisContext *c = it_connect(&s);
    redisReply *r = redisCommand(c, "SET k v");
    cr_assert_str_eq(r->str, "OK");
    freeReplyObject(r);
    kill(s.pid, SIGTERM);
    int st = wait_exit(s.pid);
    cr_assert_eq(st, 0, "exit status after SIGTERM: %d", st);
    s.pid = 0;
    redisFree(c);
    FILE *f = fopen(s.log, "r");
    cr_assert_not_null(f);
    char line[512];
    int bye = 0;
    while (fgets(line, sizeof(line), f))
        bye |= strstr(line, "bye") != NULL;
    fclose(f);
    cr_assert(bye, "log ends with the shutdown line");
    it_server_stop(&s);
}

Test(lifecycle, config_file_then_flags) {
    struct it_server s;
    struct it_opts o = {.conf = "# comment\nmaxclients 77\ntimeout 9\nloglevel verbose\n",
                        .maxclients = 88};
    it_server_start(&s, &o);
    redisContext *c = it_connect(&s);
    redisReply *r = redisCommand(c, "CONFIG GET maxclients");
    cr_assert_eq(r->elements, 2);
    cr_assert_str_eq(r->element[1]->str, "88", "flag overrides the file");
    freeReplyObject(r);
    r = redisCommand(c, "CONFIG GET timeout");
    cr_assert_str_eq(r->element[1]->str, "9", "value from the file");
    freeReplyObject(r);
    r = redisCommand(c, "CONFIG SET port 1");
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    cr_assert_str_eq(r->str, "ERR CONFIG SET failed (possibly related to argument 'port') - "
                             "can't set immutable config");
    freeReplyObject(r);
    redisFree(c);
    it_server_stop(&s);
}

Test(lifecycle, bad_startup_input_fails_clearly) {
    char out[1024];
    const char *unknown[] = {"--no-such-option", "1", NULL};
    cr_assert_eq(run_to_exit(unknown, out, sizeof(out)), 1);
    cr_assert_not_null(strstr(out, "no-such-option"), "names the option: %s", out);
    const char *badint[] = {"--maxclients", "lots", NULL};
    cr_assert_eq(run_to_exit(badint, out, sizeof(out)), 1);
    cr_assert_not_null(strstr(out, "maxclients"), "names the option: %s", out);
    const char *nofile[] = {"/nonexistent/crescent.conf", NULL};
    cr_assert_eq(run_to_exit(nofile, out, sizeof(out)), 1);
    cr_assert_not_null(strstr(out, "/nonexistent/crescent.conf"), "names the file: %s", out);
    const char *ha[] = {"--enable_ha", "yes", NULL};
    cr_assert_eq(run_to_exit(ha, out, sizeof(out)), 1);
    cr_assert_not_null(strstr(out, "enable_ha needs ha_backend_connstring"), "%s", out);
    const char *ha_down[] = {"--enable_ha", "yes", "--ha_backend_connstring", "127.0.0.1:1", NULL};
    cr_assert_eq(run_to_exit(ha_down, out, sizeof(out)), 1);
    cr_assert_not_null(strstr(out, "cannot start HA mode"), "%s", out);
    cr_assert_not_null(strstr(out, "127.0.0.1:1"), "names the backend: %s", out);
    const char *ha_type[] = {"--enable_ha", "yes", "--ha_backend_type", "zk", NULL};
    cr_assert_eq(run_to_exit(ha_type, out, sizeof(out)), 1);
    cr_assert_not_null(strstr(out, "ha_backend_type must be etcd, redis or k8s, not 'zk'"), "%s",
                       out);
    const char *oplog[] = {"--enable_ha", "yes",           "--ha_backend_connstring",
                           "127.0.0.1:1", "--oplog_store", "zk://127.0.0.1:1",
                           NULL};
    cr_assert_eq(run_to_exit(oplog, out, sizeof(out)), 1);
    cr_assert_not_null(strstr(out, "oplog_store: 'zk://127.0.0.1:1' is not supported"), "%s", out);
    const char *offload[] = {"--ssd_offload_path", "/tmp", NULL};
    cr_assert_eq(run_to_exit(offload, out, sizeof(out)), 1);
    cr_assert_not_null(strstr(out, "ssd_offload_path needs enable_offload"), "%s", out);
    /* HA with snapshots is accepted; this one stops at the snapshot directory it lacks */
    const char *ha_snap[] = {"--enable_ha", "yes", "--enable_snapshot", "yes", NULL};
    cr_assert_eq(run_to_exit(ha_snap, out, sizeof(out)), 1);
    cr_assert_not_null(strstr(out, "snapshots need an absolute directory"), "%s", out);
    const char *help[] = {"--help", NULL};
    cr_assert_eq(run_to_exit(help, out, sizeof(out)), 0);
    cr_assert_not_null(strstr(out, "Usage: crescent-master"), "%s", out);
}

Test(lifecycle, port_in_use_fails_clearly) {
    struct it_server s;
    it_server_start(&s, NULL);
    char port[16], out[1024];
    snprintf(port, sizeof(port), "%d", s.port);
    const char *same_port[] = {"--port", port, "--bind", "127.0.0.1", NULL};
    cr_assert_eq(run_to_exit(same_port, out, sizeof(out)), 1, "second master on a used port");
    cr_assert_not_null(strstr(out, "Address already in use"), "%s", out);
    const char *bad_bind[] = {"--port", port, "--bind", "203.0.113.1", NULL};
    cr_assert_eq(run_to_exit(bad_bind, out, sizeof(out)), 1);
    cr_assert_not_null(strstr(out, "could not listen"), "%s", out);
    it_server_stop(&s);
}
