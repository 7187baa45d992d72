/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Store reads and queries: get / get_into and their batch forms (MC.(BATCH)GETREPLICAS, then
 * the best replica: own segments by memcpy first, then the others in the master's order; a
 * read that ends after the lease fails with LEASE_EXPIRED), is_exist, get_size, remove,
 * batch_remove, remove_by_regex, remove_all, batch_replica_clear, get_replica_desc.
 */
#include "common/fmacros.h"

#include "client/store/cli_dummy.h"
#include "client/store/cli_store.h"
#include "common/cm_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a get reply says of one key: its readable replicas, lease and promotion hint. */
struct cli_got {
    struct cli_replica reps[CLI_MAX_REPL];
    int n;       /* replicas */
    int64_t ttl; /* lease_ttl_ms */
    bool promote;
};

/* Fills *g from a full MC.GETREPLICAS map. Returns 0 or a negative code (the key's error). */
static int cli_got_map(const redisReply *map, struct cli_got *g) {
    int err = cli__reply_err(map);
    if (err < 0) {
        return err;
    }
    const redisReply *ttl = cli__field(map, "lease_ttl_ms");
    const redisReply *promote = cli__field(map, "promote"); /* the master's admission count */
    g->n = cli__parse_replicas(cli__field(map, "replicas"), g->reps, CLI_MAX_REPL);
    if (g->n < 0 || ttl == NULL || ttl->type != REDIS_REPLY_INTEGER) {
        return g->n < 0 ? g->n : cli_fail(CRESCENT_STORE_ERPC_FAIL, "get: malformed reply");
    }
    g->ttl = ttl->integer;
    g->promote = promote != NULL && promote->type == REDIS_REPLY_INTEGER && promote->integer == 1;
    return 0;
}

/* Fills *g from element e of compact reply c (lease_ttl_ms, promote, then 4 integers per
 * replica). Returns 0 or a negative code. */
static int cli_got_compact(const struct cli_creply *c, const redisReply *e, struct cli_got *g) {
    g->n = cli__creply_replicas(c, e, 2, true, g->reps, CLI_MAX_REPL);
    if (g->n < 0) {
        return g->n;
    }
    g->ttl = e->element[0]->integer;
    g->promote = e->element[1]->integer == 1;
    return 0;
}

/* Reads the object described by g (requested at t0_ms) into buf (cap bytes), or into a new
 * malloc'ed buffer when alloc is not NULL. Returns the size or a negative code. */
static int64_t cli_read_got(struct crescent_store *st, const char *key, struct cli_got *g,
                            uint64_t t0_ms, void *buf, size_t cap, void **alloc, bool zero_copy) {
    struct cli_replica *reps = g->reps;
    int n = g->n, err;
    if (n == 0) {
        return cli_fail(CRESCENT_STORE_EOBJECT_NOT_FOUND, "get: no readable replica");
    }
    uint64_t size = reps[0].size;
    unsigned char trailer[CLI_TRAILER];
    if (st->checksum && size < CLI_TRAILER) {
        return cli_fail(CRESCENT_STORE_ECHECKSUM_MISMATCH,
                        "get: object of %llu bytes has no "
                        "checksum trailer",
                        (unsigned long long)size);
    }
    size -= st->checksum ? CLI_TRAILER : 0;
    if (alloc != NULL) {
        buf = *alloc = malloc(size ? size : 1);
        if (buf == NULL) {
            return -ENOMEM;
        }
    } else if (size > cap) {
        return cli_fail(CRESCENT_STORE_EBUFFER_OVERFLOW,
                        "get_into: object of %llu bytes, buffer "
                        "of %zu",
                        (unsigned long long)size, cap);
    }
    int order[CLI_MAX_REPL], k = 0;
    for (int pass = 0; pass < 2; pass++) { /* own segments first */
        for (int i = 0; i < n; i++) {
            if (cli__is_own_segment(st, reps[i].segment) == (pass == 0)) {
                order[k++] = i;
            }
        }
    }
    err = -CRESCENT_STORE_ETRANSFER_FAIL;
    for (int i = 0; i < n && err < 0; i++) {
        if (reps[order[i]].memory) {
            err = cli__read_replica(st, &reps[order[i]], buf, size, zero_copy,
                                    st->checksum ? trailer : NULL);
        }
    }
    bool from_disk = false;
    for (int i = 0; i < n && err < 0; i++) {
        if (!reps[i].memory && strcmp(reps[i].protocol, "offload") == 0) {
            err = cli__ssd_read(st, &reps[i], key, buf, size, zero_copy,
                                st->checksum ? trailer : NULL);
            from_disk = err == 0;
        }
    }
    if (err == 0 && st->checksum) {
        err = cli__trailer_check(trailer, buf, size);
    }
    if (err == 0 && from_disk && g->promote) {
        cli__ssd_promote(st, key, buf, size, st->checksum ? trailer : NULL);
    }
    if (err == 0 && cm_mono_ms() > t0_ms + (uint64_t)g->ttl) {
        err = cli_fail(CRESCENT_STORE_ELEASE_EXPIRED, "get: the read outlived its %lld ms lease",
                       (long long)g->ttl);
    }
    if (err < 0 && alloc != NULL) {
        free(*alloc);
        *alloc = NULL;
    }
    return err < 0 ? err : (int64_t)size;
}

static int64_t cli_get_one(struct crescent_store *st, const char *key, void *buf, size_t cap,
                           void **alloc, bool zero_copy) {
    int err = cli__check_key(key);
    if (err < 0) {
        return err;
    }
    const char *argv[] = {"MC.GETREPLICAS", key};
    int64_t n = -CRESCENT_STORE_ELEASE_EXPIRED;
    /* A read that outlived its lease is discarded and done once more under a fresh lease: a
     * replica whose owner died can hold the first attempt until the transfer times out, and by
     * then the master has usually dropped it from the replica list. */
    for (int attempt = 0; attempt < 2 && n == -CRESCENT_STORE_ELEASE_EXPIRED; attempt++) {
        uint64_t t0 = cm_mono_ms();
        redisReply *r;
        bool compact;
        if ((err = cli__cmd_hot(st, 2, argv, NULL, &r, &compact)) < 0) {
            return err;
        }
        struct cli_got g;
        struct cli_creply c = {0};
        if (!compact) {
            err = cli_got_map(r, &g);
        } else if ((err = cli__reply_err(r)) == 0 && (err = cli__creply_open(r, &c)) == 0) {
            err = cli_got_compact(&c, c.elems, &g);
        }
        n = err < 0 ? err : cli_read_got(st, key, &g, t0, buf, cap, alloc, zero_copy);
        cli__creply_close(st, &c);
        cli__reply_free(r);
    }
    return n;
}

/* Public: see store.h. */
int crescent_store_get(struct crescent_store *st, const char *key, void **value, size_t *size) {
    if (st == NULL || value == NULL || size == NULL) {
        return cli_fail(EINVAL, "get: NULL argument");
    }
    *value = NULL;
    *size = 0;
    if (st->dummy != NULL) {
        return cli_dummy_get(st, key, value, size);
    }
    int64_t n = cli_get_one(st, key, NULL, 0, value, false);
    if (n < 0) {
        return (int)n;
    }
    *size = (size_t)n;
    return 0;
}

/* Public: see store.h. */
void crescent_store_free(void *p) {
    free(p);
}

/* Public: see store.h. */
int64_t crescent_store_get_into(struct crescent_store *st, const char *key, void *buf, size_t cap) {
    if (st == NULL || buf == NULL) {
        return cli_fail(EINVAL, "get_into: NULL argument");
    }
    if (st->dummy != NULL) {
        return cli_dummy_get_into(st, key, buf, cap);
    }
    if (!cli__is_registered(st, buf, cap)) {
        return cli_fail(CRESCENT_STORE_EINVALID_PARAMS,
                        "get_into: buffer is not inside a registered buffer");
    }
    return cli_get_one(st, key, buf, cap, NULL, true);
}

static int cli_batch_get(struct crescent_store *st, const char *const *keys, size_t n,
                         void *const *bufs, const size_t *caps, void **values, int64_t *results) {
    const char **argv = malloc((n + 1) * sizeof(*argv));
    if (argv == NULL) {
        return -ENOMEM;
    }
    argv[0] = "MC.BATCHGETREPLICAS";
    for (size_t i = 0; i < n; i++) {
        argv[i + 1] = keys[i];
    }
    uint64_t t0 = cm_mono_ms();
    redisReply *r;
    bool compact;
    int err = cli__cmd_hot(st, (int)n + 1, argv, NULL, &r, &compact);
    free(argv);
    if (err < 0) {
        return err;
    }
    struct cli_creply c;
    const redisReply *elems;
    if ((err = cli__batch_reply_open(st, r, compact, n, "batch get", &c, &elems)) < 0) {
        return err;
    }
    int first = 0;
    bool fast = values == NULL && !st->checksum;
    if (fast) {
        err = compact ? cli__batch_read_compact(st, &c, n, bufs, caps, results, t0)
                      : cli__batch_read_fast(st, r, n, bufs, caps, results, t0);
        cli__creply_drop_peers(st, &c); /* failed peers are forgotten before the retries */
    }
    for (size_t i = 0; i < n && err == 0; i++) {
        if (fast && results[i] != CLI_FALLBACK) {
            /* done by the fast path */
        } else {
            struct cli_got g;
            int k = compact ? cli_got_compact(&c, elems->element[i], &g)
                            : cli_got_map(elems->element[i], &g);
            if (k < 0) {
                results[i] = k;
            } else if (values != NULL) {
                results[i] = cli_read_got(st, keys[i], &g, t0, NULL, 0, &values[i], false);
            } else {
                results[i] = cli_read_got(st, keys[i], &g, t0, bufs[i], caps[i], NULL, true);
            }
        }
        if (results[i] < 0 && first == 0) {
            first = (int)results[i];
        }
    }
    cli__creply_close(st, &c);
    cli__reply_free(r);
    return err < 0 ? err : first;
}

static int cli_check_keys(const char *const *keys, size_t n) {
    if (keys == NULL || n == 0) {
        return cli_fail(EINVAL, "batch: NULL keys or no keys");
    }
    for (size_t i = 0; i < n; i++) {
        int err = cli__check_key(keys[i]);
        if (err < 0) {
            return err;
        }
    }
    return 0;
}

/* Public: see store.h. */
int crescent_store_batch_get_into(struct crescent_store *st, const char *const *keys,
                                  void *const *bufs, const size_t *caps, size_t n,
                                  int64_t *results) {
    if (st == NULL || bufs == NULL || caps == NULL || results == NULL) {
        return cli_fail(EINVAL, "batch_get_into: NULL argument");
    }
    if (st->dummy != NULL) {
        return cli_dummy_batch_get_into(st, keys, bufs, caps, n, results);
    }
    int err = cli_check_keys(keys, n);
    size_t reg = err == 0 ? cli__registered_prefix(st, (const void *const *)bufs, caps, n) : n;
    if (err == 0 && reg < n) { /* buffer reg is NULL or outside every registration */
        err = cli_fail(CRESCENT_STORE_EINVALID_PARAMS,
                       "batch_get_into: buffer %zu is not registered", reg);
    }
    return err < 0 ? err : cli_batch_get(st, keys, n, bufs, caps, NULL, results);
}

/* Public: see store.h. */
int crescent_store_batch_get(struct crescent_store *st, const char *const *keys, size_t n,
                             void **values, size_t *sizes, int64_t *results) {
    if (st == NULL || values == NULL || sizes == NULL || results == NULL) {
        return cli_fail(EINVAL, "batch_get: NULL argument");
    }
    int err = cli_check_keys(keys, n);
    if (err < 0) {
        return err;
    }
    memset(values, 0, n * sizeof(*values));
    if (st->dummy != NULL) {
        return cli_dummy_batch_get(st, keys, n, values, sizes, results);
    }
    err = cli_batch_get(st, keys, n, NULL, NULL, values, results);
    for (size_t i = 0; i < n; i++) {
        sizes[i] = results[i] > 0 ? (size_t)results[i] : 0;
    }
    return err;
}

/* Runs a command whose reply is an integer; returns it, or a negative code. */
static int64_t cli_int_cmd(struct crescent_store *st, int argc, const char **argv) {
    redisReply *r;
    int err = cli__cmd_fast(st, argc, argv, NULL, &r);
    if (err < 0) {
        return err;
    }
    int64_t v = cli__reply_err(r);
    if (v == 0) {
        v = r->type == REDIS_REPLY_INTEGER
                ? r->integer
                : cli_fail(CRESCENT_STORE_ERPC_FAIL, "master: expected an integer");
    }
    cli__reply_free(r);
    return v;
}

/* Public: see store.h. */
int crescent_store_is_exist(struct crescent_store *st, const char *key) {
    int err = st == NULL ? cli_fail(EINVAL, "is_exist: NULL store") : cli__check_key(key);
    if (err < 0) {
        return err;
    }
    if (st->dummy != NULL) {
        return (int)cli_dummy_key_int(st, "EXIST", key);
    }
    const char *argv[] = {"MC.EXIST", key};
    return (int)cli_int_cmd(st, 2, argv);
}

/* Runs a batch command (argv[0] and the keys) whose reply has one integer (or error) per key. */
static int cli_batch_ints(struct crescent_store *st, const char **argv, size_t argc, size_t n,
                          int *results) {
    redisReply *r;
    int err = cli__cmd_fast(st, (int)argc, argv, NULL, &r);
    if (err < 0) {
        return err;
    }
    if ((err = cli__reply_err(r)) == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != n)) {
        err = cli_fail(CRESCENT_STORE_ERPC_FAIL, "master: expected %zu results", n);
    }
    for (size_t i = 0; i < n && err == 0; i++) {
        const redisReply *e = r->element[i];
        int k = cli__reply_err(e);
        results[i] = k < 0 ? k : e->type == REDIS_REPLY_INTEGER ? (int)e->integer : 0;
    }
    cli__reply_free(r);
    return err;
}

/* Public: see store.h. */
int crescent_store_batch_is_exist(struct crescent_store *st, const char *const *keys, size_t n,
                                  int *results) {
    if (st == NULL || results == NULL) {
        return cli_fail(EINVAL, "batch_is_exist: NULL argument");
    }
    int err = cli_check_keys(keys, n);
    if (err == 0 && st->dummy != NULL) {
        return cli_dummy_batch_is_exist(st, keys, n, results);
    }
    const char **argv = err == 0 ? malloc((n + 1) * sizeof(*argv)) : NULL;
    if (argv == NULL) {
        return err < 0 ? err : -ENOMEM;
    }
    argv[0] = "MC.BATCHEXIST";
    memcpy(argv + 1, keys, n * sizeof(*keys));
    err = cli_batch_ints(st, argv, n + 1, n, results);
    free(argv);
    return err;
}

/* Public: see store.h. */
int64_t crescent_store_get_size(struct crescent_store *st, const char *key) {
    int err = st == NULL ? cli_fail(EINVAL, "get_size: NULL store") : cli__check_key(key);
    if (err < 0) {
        return err;
    }
    if (st->dummy != NULL) {
        return cli_dummy_key_int(st, "SIZE", key);
    }
    const char *argv[] = {"MC.QUERYKEY", key};
    redisReply *r;
    if ((err = cli__cmd_fast(st, 2, argv, NULL, &r)) < 0) {
        return err;
    }
    int64_t v = cli__reply_err(r);
    const redisReply *sz = cli__field(r, "size");
    if (v == 0) {
        v = sz != NULL && sz->type == REDIS_REPLY_INTEGER
                ? sz->integer - (st->checksum && sz->integer >= CLI_TRAILER ? CLI_TRAILER : 0)
                : cli_fail(CRESCENT_STORE_ERPC_FAIL, "get_size: malformed reply");
    }
    cli__reply_free(r);
    return v;
}

/* Public: see store.h. */
int crescent_store_remove(struct crescent_store *st, const char *key, int force) {
    int err = st == NULL ? cli_fail(EINVAL, "remove: NULL store") : cli__check_key(key);
    if (err < 0) {
        return err;
    }
    if (st->dummy != NULL) {
        return (int)cli_dummy_remove(st, "REMOVE", key, force);
    }
    const char *argv[] = {"MC.REMOVE", key, "FORCE"};
    redisReply *r;
    if ((err = cli__cmd_fast(st, force ? 3 : 2, argv, NULL, &r)) < 0) {
        return err;
    }
    err = cli__reply_err(r);
    cli__reply_free(r);
    return err;
}

/* Public: see store.h. */
int crescent_store_batch_remove(struct crescent_store *st, const char *const *keys, size_t n,
                                int force, int *results) {
    if (st == NULL || results == NULL) {
        return cli_fail(EINVAL, "batch_remove: NULL argument");
    }
    int err = cli_check_keys(keys, n);
    const char **argv = err == 0 ? malloc((n + 3) * sizeof(*argv)) : NULL;
    if (argv == NULL) {
        return err < 0 ? err : -ENOMEM;
    }
    char num[24];
    snprintf(num, sizeof(num), "%zu", n);
    argv[0] = "MC.BATCHREMOVE";
    argv[1] = num;
    memcpy(argv + 2, keys, n * sizeof(*keys));
    argv[n + 2] = "FORCE";
    err = cli_batch_ints(st, argv, n + 2 + (force != 0), n, results);
    free(argv);
    for (size_t i = 0; i < n && err == 0; i++) {
        err = results[i] < 0 ? results[i] : 0;
    }
    return err;
}

/* Public: see store.h. */
int64_t crescent_store_remove_by_regex(struct crescent_store *st, const char *pattern, int force) {
    if (st == NULL || pattern == NULL) {
        return cli_fail(EINVAL, "remove_by_regex: NULL argument");
    }
    if (st->dummy != NULL) {
        return cli_dummy_remove(st, "REMOVEREGEX", pattern, force);
    }
    const char *argv[] = {"MC.REMOVEBYREGEX", pattern, "FORCE"};
    return cli_int_cmd(st, force ? 3 : 2, argv);
}

/* Public: see store.h. */
int64_t crescent_store_remove_all(struct crescent_store *st, int force) {
    if (st == NULL) {
        return cli_fail(EINVAL, "remove_all: NULL store");
    }
    if (st->dummy != NULL) {
        return cli_dummy_remove(st, "REMOVEALL", NULL, force);
    }
    const char *argv[] = {"MC.REMOVEALL", "FORCE"};
    return cli_int_cmd(st, force ? 2 : 1, argv);
}

/* Public: see store.h. */
int crescent_store_batch_replica_clear(struct crescent_store *st, const char *const *keys, size_t n,
                                       const char *segment, int *results) {
    if (st == NULL || results == NULL) {
        return cli_fail(EINVAL, "batch_replica_clear: NULL argument");
    }
    int err = cli_check_keys(keys, n);
    if (err == 0 && st->dummy != NULL) {
        return cli_dummy_replica_clear(st, keys, n, segment, results);
    }
    const char **argv = err == 0 ? malloc((n + 3) * sizeof(*argv)) : NULL;
    if (argv == NULL) {
        return err < 0 ? err : -ENOMEM;
    }
    argv[0] = "MC.BATCHREPLICACLEAR";
    argv[1] = st->client_id;
    argv[2] = segment != NULL ? segment : "";
    memcpy(argv + 3, keys, n * sizeof(*keys));
    err = cli_batch_ints(st, argv, n + 3, n, results);
    free(argv);
    return err;
}

/* Public: see store.h. */
int crescent_store_get_replica_desc(struct crescent_store *st, const char *key,
                                    struct crescent_store_replica *out, size_t max) {
    int err = st == NULL || (out == NULL && max > 0) ? cli_fail(EINVAL, "get_replica_desc: NULL "
                                                                        "argument")
                                                     : cli__check_key(key);
    if (err < 0) {
        return err;
    }
    if (st->dummy != NULL) {
        return cli_dummy_replica_desc(st, key, out, max);
    }
    const char *argv[] = {"MC.QUERYKEY", key};
    redisReply *r;
    if ((err = cli__cmd_fast(st, 2, argv, NULL, &r)) < 0) {
        return err;
    }
    struct cli_replica reps[CLI_MAX_REPL];
    int n = cli__reply_err(r);
    if (n == 0) {
        n = cli__parse_replicas(cli__field(r, "replicas"), reps, CLI_MAX_REPL);
    }
    for (int i = 0; i < n && (size_t)i < max; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        memcpy(out[i].segment, reps[i].segment, sizeof(out[i].segment));
        memcpy(out[i].endpoint, reps[i].endpoint, sizeof(out[i].endpoint));
        memcpy(out[i].protocol, reps[i].protocol, sizeof(out[i].protocol));
        out[i].complete = reps[i].complete;
        out[i].is_memory = reps[i].memory;
        out[i].addr = reps[i].addr;
        out[i].size = reps[i].size;
    }
    cli__reply_free(r);
    return n;
}
