/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot catalog, embedded or in Redis (see srv_snapcat.h). */
#include "common/fmacros.h"

#include "server/srv_redis_conn.h"
#include "server/srv_snapcat.h"

#include "common/cm_mem.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SRV_SNAPCAT_IO_MS 2000 /* bound on a connect and on each call */

struct srv_snapcat {
    int redis;
    char dir[4096];
    char index_key[512], latest_key[512];
    struct ha_uri uri; /* the Redis catalog's server */
};

int srv_snapcat_is_id(const char *s) {
    static const char form[] = "dddddddd_dddddd_ddd";
    if (strlen(s) != sizeof(form) - 1)
        return 0;
    for (size_t i = 0; form[i]; i++)
        if (form[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != form[i])
            return 0;
    return 1;
}

/* Runs one command; returns the reply (caller frees) or NULL with err filled. */
static redisReply *snapcat_cmd(const struct srv_snapcat *cat, char *err, size_t errlen, int argc,
                               const char **argv) {
    redisContext *rc =
        srv_redis_connect(&cat->uri, SRV_SNAPCAT_IO_MS, "snapshot catalog", err, errlen);
    if (!rc)
        return NULL;
    redisReply *r = redisCommandArgv(rc, argc, argv, NULL);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "snapshot catalog: Redis %s failed: %s", argv[0],
                 r ? r->str : rc->errstr);
        freeReplyObject(r);
        r = NULL;
    }
    redisFree(rc);
    return r;
}

int srv_snapcat_open(const char *type, const char *connstring, const char *dir, const char *cluster,
                     struct srv_snapcat **out, char *err, size_t errlen) {
    struct srv_snapcat *cat = cm_calloc(1, sizeof(*cat));
    snprintf(cat->dir, sizeof(cat->dir), "%s", dir);
    if (strcmp(type, "redis") == 0) {
        cat->redis = 1;
        snprintf(cat->index_key, sizeof(cat->index_key), "mooncake-store/{%s}/snapshot/index",
                 cluster);
        snprintf(cat->latest_key, sizeof(cat->latest_key), "mooncake-store/{%s}/snapshot/latest",
                 cluster);
        const char *ping[] = {"PING"};
        redisReply *r = NULL;
        if (!connstring[0])
            snprintf(err, errlen,
                     "snapshot_catalog_store_type redis needs "
                     "snapshot_catalog_store_connstring");
        else if (srv_redis_uri_parse(connstring, "snapshot_catalog_store_connstring", &cat->uri,
                                     err, errlen) == 0)
            r = snapcat_cmd(cat, err, errlen, 1, ping);
        if (!r) {
            cm_free(cat);
            return -1;
        }
        freeReplyObject(r);
    } else if (type[0] && strcmp(type, "embedded") != 0 && strcmp(type, "payload") != 0) {
        snprintf(err, errlen, "unknown snapshot_catalog_store_type '%s' (embedded or redis)", type);
        cm_free(cat);
        return -1;
    }
    *out = cat;
    return 0;
}

void srv_snapcat_close(struct srv_snapcat *cat) {
    cm_free(cat);
}

/* Writes the embedded latest marker atomically (temporary file, fsync, rename). */
static int snapcat_write_latest(const struct srv_snapcat *cat, const char *id, char *err,
                                size_t errlen) {
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof(tmp), "%s/.latest.txt.tmp", cat->dir);
    snprintf(path, sizeof(path), "%s/latest.txt", cat->dir);
    if (!id) {
        if (unlink(path) < 0 && errno != ENOENT)
            goto fail;
        return 0;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        goto fail;
    char line[SRV_SNAPCAT_ID_LEN + 1];
    int n = snprintf(line, sizeof(line), "%s\n", id);
    int ok = write(fd, line, (size_t)n) == n && fsync(fd) == 0;
    close(fd);
    if (ok && rename(tmp, path) == 0)
        return 0;
fail:
    snprintf(err, errlen, "snapshot catalog: cannot write %s: %s", path, strerror(errno));
    return -1;
}

static int snapcat_read_latest(const struct srv_snapcat *cat, char *id) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/latest.txt", cat->dir);
    FILE *f = fopen(path, "re");
    id[0] = 0;
    if (!f)
        return 0;
    if (fgets(id, SRV_SNAPCAT_ID_LEN, f))
        id[strcspn(id, "\r\n")] = 0;
    fclose(f);
    if (!srv_snapcat_is_id(id))
        id[0] = 0;
    return id[0] != 0;
}

static int snapcat_cmp_desc(const void *a, const void *b) {
    return -strcmp(a, b);
}

/* The snapshot directories in dir, newest first. */
static int snapcat_scan(const struct srv_snapcat *cat, char (*ids)[SRV_SNAPCAT_ID_LEN], int max) {
    DIR *d = opendir(cat->dir);
    int n = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max)
        if (srv_snapcat_is_id(e->d_name)) /* 19 characters */
            memcpy(ids[n++], e->d_name, strlen(e->d_name) + 1);
    closedir(d);
    qsort(ids, (size_t)n, SRV_SNAPCAT_ID_LEN, snapcat_cmp_desc);
    return n;
}

static const char snapcat_publish_lua[] = "redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1]) "
                                          "redis.call('SET', KEYS[2], ARGV[1]) return 1";
static const char snapcat_forget_lua[] =
    "redis.call('ZREM', KEYS[1], ARGV[1]) "
    "if redis.call('GET', KEYS[2]) == ARGV[1] then "
    "  local top = redis.call('ZREVRANGE', KEYS[1], 0, 0) "
    "  if #top > 0 then redis.call('SET', KEYS[2], top[1]) else redis.call('DEL', KEYS[2]) end "
    "end return 1";

int srv_snapcat_publish(struct srv_snapcat *cat, const char *id, int64_t created_ms, char *err,
                        size_t errlen) {
    if (!cat->redis)
        return snapcat_write_latest(cat, id, err, errlen);
    char score[32];
    snprintf(score, sizeof(score), "%lld", (long long)created_ms);
    const char *argv[] = {"EVAL", snapcat_publish_lua, "2", cat->index_key, cat->latest_key, id,
                          score};
    redisReply *r = snapcat_cmd(cat, err, errlen, 7, argv);
    freeReplyObject(r);
    return r ? 0 : -1;
}

int srv_snapcat_forget(struct srv_snapcat *cat, const char *id, char *err, size_t errlen) {
    if (!cat->redis) {
        char latest[SRV_SNAPCAT_ID_LEN];
        if (!snapcat_read_latest(cat, latest) || strcmp(latest, id) != 0)
            return 0;
        char ids[2][SRV_SNAPCAT_ID_LEN];
        int n = snapcat_scan(cat, ids, 2), k = n > 0 && strcmp(ids[0], id) == 0;
        return snapcat_write_latest(cat, k < n ? ids[k] : NULL, err, errlen);
    }
    const char *argv[] = {"EVAL", snapcat_forget_lua, "2", cat->index_key, cat->latest_key, id};
    redisReply *r = snapcat_cmd(cat, err, errlen, 6, argv);
    freeReplyObject(r);
    return r ? 0 : -1;
}

/* Appends id to ids[0..*n) unless it is already there. */
static void snapcat_add(char (*ids)[SRV_SNAPCAT_ID_LEN], int *n, int max, const char *id) {
    for (int i = 0; i < *n; i++)
        if (strcmp(ids[i], id) == 0)
            return;
    if (*n < max && srv_snapcat_is_id(id))
        snprintf(ids[(*n)++], SRV_SNAPCAT_ID_LEN, "%s", id);
}

int srv_snapcat_list(struct srv_snapcat *cat, char (*ids)[SRV_SNAPCAT_ID_LEN], int max, char *err,
                     size_t errlen) {
    int n = 0;
    if (!cat->redis) {
        char latest[SRV_SNAPCAT_ID_LEN];
        if (snapcat_read_latest(cat, latest))
            snapcat_add(ids, &n, max, latest);
        char(*all)[SRV_SNAPCAT_ID_LEN] = cm_malloc((size_t)max * SRV_SNAPCAT_ID_LEN);
        int m = snapcat_scan(cat, all, max);
        for (int i = 0; i < m; i++)
            snapcat_add(ids, &n, max, all[i]);
        cm_free(all);
        return n;
    }
    const char *get[] = {"GET", cat->latest_key};
    redisReply *r = snapcat_cmd(cat, err, errlen, 2, get);
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_STRING)
        snapcat_add(ids, &n, max, r->str);
    freeReplyObject(r);
    const char *range[] = {"ZREVRANGE", cat->index_key, "0", "-1"};
    r = snapcat_cmd(cat, err, errlen, 4, range);
    if (!r)
        return -1;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING)
            snapcat_add(ids, &n, max, r->element[i]->str);
    freeReplyObject(r);
    return n;
}
