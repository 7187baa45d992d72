/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Store writes: put / put_parts / put_from / upsert / upsert_from and their batch forms.
 * Each is MC.(BATCH)PUTSTART (or UPSERTSTART) -> write every replica (cli_xfer.c) ->
 * MC.(BATCH)PUTEND, or the matching REVOKE when a transfer failed.
 */
#include "common/fmacros.h"

#include "client/store/cli_dummy.h"
#include "client/store/cli_store.h"
#include "common/cm_dec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_OPT_MAX 64 /* option arguments (8 + preferred segments, capped) */

struct cli_verbs {
    const char *start, *end, *revoke;    /* single-key commands */
    const char *bstart, *bend, *brevoke; /* batch commands */
};

static const struct cli_verbs cli_put_verbs = {"MC.PUTSTART",    "MC.PUTEND",
                                               "MC.PUTREVOKE",   "MC.BATCHPUTSTART",
                                               "MC.BATCHPUTEND", "MC.BATCHPUTREVOKE"};
static const struct cli_verbs cli_upsert_verbs = {"MC.UPSERTSTART",    "MC.UPSERTEND",
                                                  "MC.UPSERTREVOKE",   "MC.BATCHUPSERTSTART",
                                                  "MC.BATCHUPSERTEND", "MC.BATCHUPSERTREVOKE"};

static int cli_simple(struct crescent_store *st, const char *verb, const char *key) {
    const char *argv[] = {verb, st->client_id, key};
    redisReply *r;
    int rc = cli__cmd_fast(st, 3, argv, NULL, &r);
    if (rc == 0) {
        rc = cli__reply_err(r);
        cli__reply_free(r);
    }
    return rc;
}

static int cli_check_rc(const struct crescent_store_replicate_config *rc) {
    if (rc != NULL &&
        (rc->replica_num > CLI_MAX_REPL || rc->n_preferred_segments > CLI_OPT_MAX - 10 ||
         (rc->n_preferred_segments > 0 && rc->preferred_segments == NULL))) {
        return cli_fail(CRESCENT_STORE_EINVALID_PARAMS, "bad replicate config");
    }
    return 0;
}

static int cli_put_attempt(struct crescent_store *st, const struct cli_verbs *v, const char *key,
                           const struct cli_src *src,
                           const struct crescent_store_replicate_config *rc) {
    int err = cli__check_key(key);
    if (err < 0 || (err = cli_check_rc(rc)) < 0) {
        return err;
    }
    const char *argv[4 + CLI_OPT_MAX];
    size_t lens[4 + CLI_OPT_MAX];
    char size[24], nums[96];
    unsigned char trailer[CLI_TRAILER];
    struct cli_src with = *src;
    if (st->checksum) {
        cli__trailer_make(trailer, src);
        with.trailer = trailer;
        src = &with;
    }
    snprintf(size, sizeof(size), "%llu",
             (unsigned long long)(src->total + (st->checksum ? CLI_TRAILER : 0)));
    argv[0] = v->start;
    argv[1] = st->client_id;
    argv[2] = key;
    argv[3] = size;
    for (int i = 0; i < 4; i++) {
        lens[i] = strlen(argv[i]);
    }
    size_t argc = 4 + cli__opts_argv(rc, argv + 4, lens + 4, nums, sizeof(nums));
    redisReply *r;
    bool compact;
    if ((err = cli__cmd_hot(st, (int)argc, argv, lens, &r, &compact)) < 0) {
        return err;
    }
    struct cli_replica reps[CLI_MAX_REPL];
    struct cli_creply c = {0};
    err = cli__reply_err(r);
    int n = err;
    if (err == 0 && !compact) {
        n = cli__parse_replicas(r, reps, CLI_MAX_REPL);
    } else if (err == 0 && (n = cli__creply_open(r, &c)) == 0) {
        n = cli__creply_replicas(&c, c.elems, 0, false, reps, CLI_MAX_REPL);
    }
    if (n < 0) {
        cli__creply_close(st, &c);
        cli__reply_free(r);
        return n;
    }
    err = cli__write_replicas(st, reps, (size_t)n, src);
    cli__creply_close(st, &c);
    cli__reply_free(r);
    if (err < 0) {
        char keep[512];
        snprintf(keep, sizeof(keep), "%s", crescent_store_last_error());
        cli_simple(st, v->revoke, key);
        return cli_fail(-err, "%s", keep);
    }
    return cli_simple(st, v->end, key);
}

/* A put runs start -> write -> end against the master. When the master changed meanwhile (an
 * HA fail-over: the new leader never saw this put's start and answers its end with
 * OBJECT_NOT_FOUND, or the old one refused it), the put failed as a whole and is done again
 * from the start on the new master, up to CLI_PUT_RETRIES times; a redo that finds the key
 * complete with exactly these bytes succeeds (the first attempt's end was stored, its reply
 * lost). Any other failure, and any failure of the attempt after the last change, is returned
 * as it is. */
#define CLI_PUT_RETRIES 3

/* Whether key holds exactly the bytes of src (read back; the rare case of a put redone after a
 * fail-over that finds its key complete: the earlier attempt's end reached the old leader and
 * was stored, only its reply was lost). */
static bool cli_put_landed(struct crescent_store *st, const char *key, const struct cli_src *src) {
    void *got = NULL;
    size_t size = 0;
    if (crescent_store_get(st, key, &got, &size) != 0) {
        return false;
    }
    bool same = size == src->total;
    const unsigned char *p = got;
    for (size_t i = 0; same && i < src->n; p += src->sizes[i], i++) {
        same = src->sizes[i] == 0 || memcmp(p, src->parts[i], src->sizes[i]) == 0;
    }
    crescent_store_free(got);
    return same;
}

static int cli_put_one(struct crescent_store *st, const struct cli_verbs *v, const char *key,
                       const struct cli_src *src,
                       const struct crescent_store_replicate_config *rc) {
    for (int attempt = 0;; attempt++) {
        uint32_t gen = atomic_load(&st->master_gen);
        int err = cli_put_attempt(st, v, key, src, rc);
        if (attempt > 0 && err == -CRESCENT_STORE_EOBJECT_ALREADY_EXISTS &&
            cli_put_landed(st, key, src)) {
            return 0; /* the earlier attempt was stored after all */
        }
        if (err == 0 || attempt >= CLI_PUT_RETRIES || atomic_load(&st->master_gen) == gen) {
            return err;
        }
        cli_log(st, 2, "store client %s: %s of '%s' spanned a change of master (%s); done again",
                st->client_id, v->start, key, crescent_store_last_error());
    }
}

/* Public: see store.h. */
int crescent_store_put_parts(struct crescent_store *st, const char *key, const void *const *parts,
                             const size_t *sizes, size_t n,
                             const struct crescent_store_replicate_config *rc) {
    if (st == NULL || (n > 0 && (parts == NULL || sizes == NULL))) {
        return cli_fail(EINVAL, "put: NULL argument");
    }
    if (st->dummy != NULL) {
        return cli_dummy_put_parts(st, key, parts, sizes, n, rc);
    }
    struct cli_src src = {parts, sizes, n, 0, false, NULL};
    for (size_t i = 0; i < n; i++) {
        if (parts[i] == NULL && sizes[i] > 0) {
            return cli_fail(EINVAL, "put: NULL part");
        }
        src.total += sizes[i];
    }
    return cli_put_one(st, &cli_put_verbs, key, &src, rc);
}

/* Public: see store.h. */
int crescent_store_put(struct crescent_store *st, const char *key, const void *value, size_t size,
                       const struct crescent_store_replicate_config *rc) {
    if (value == NULL && size > 0) {
        return cli_fail(EINVAL, "put: NULL value");
    }
    return crescent_store_put_parts(st, key, &value, &size, 1, rc);
}

static int cli_from(struct crescent_store *st, const struct cli_verbs *v, const char *key,
                    const void *buf, size_t size,
                    const struct crescent_store_replicate_config *rc) {
    if (st == NULL || buf == NULL) {
        return cli_fail(EINVAL, "put_from: NULL argument");
    }
    if (st->dummy != NULL) {
        return cli_dummy_put_from(st, key, buf, size, rc, v != &cli_put_verbs);
    }
    if (!cli__is_registered(st, buf, size)) {
        return cli_fail(CRESCENT_STORE_EINVALID_PARAMS,
                        "put_from: buffer is not inside a registered buffer");
    }
    struct cli_src src = {&buf, &size, 1, size, true, NULL};
    return cli_put_one(st, v, key, &src, rc);
}

/* Public: see store.h. */
int crescent_store_put_from(struct crescent_store *st, const char *key, const void *buf,
                            size_t size, const struct crescent_store_replicate_config *rc) {
    return cli_from(st, &cli_put_verbs, key, buf, size, rc);
}

/* Public: see store.h. */
int crescent_store_upsert_from(struct crescent_store *st, const char *key, const void *buf,
                               size_t size, const struct crescent_store_replicate_config *rc) {
    return cli_from(st, &cli_upsert_verbs, key, buf, size, rc);
}

/* Public: see store.h. */
int crescent_store_upsert(struct crescent_store *st, const char *key, const void *value,
                          size_t size, const struct crescent_store_replicate_config *rc) {
    if (st == NULL || (value == NULL && size > 0)) {
        return cli_fail(EINVAL, "upsert: NULL argument");
    }
    if (st->dummy != NULL) {
        return cli_dummy_put(st, key, value, size, rc, 1);
    }
    struct cli_src src = {&value, &size, 1, size, false, NULL};
    return cli_put_one(st, &cli_upsert_verbs, key, &src, rc);
}

/* Sends bend (or brevoke) for the keys whose ok[i] matches want; per-key errors of the end go
 * to results. */
static void cli_batch_finish(struct crescent_store *st, const char *verb, const char *const *keys,
                             size_t n, const int *results, bool want_ok, int *out) {
    const char **argv = malloc((n + 2) * sizeof(*argv));
    size_t *idx = malloc(n * sizeof(*idx));
    size_t argc = 2, m = 0;
    if (argv == NULL || idx == NULL) {
        free(argv);
        free(idx);
        return;
    }
    argv[0] = verb;
    argv[1] = st->client_id;
    for (size_t i = 0; i < n; i++) {
        if ((results[i] == 0) == want_ok) {
            argv[argc++] = keys[i];
            idx[m++] = i;
        }
    }
    redisReply *r;
    if (m > 0 && cli__cmd_fast(st, (int)argc, argv, NULL, &r) == 0) {
        for (size_t j = 0; want_ok && j < m; j++) {
            const redisReply *e =
                r->type == REDIS_REPLY_ARRAY && j < r->elements ? r->element[j] : r;
            int err = cli__reply_err(e);
            if (err < 0) {
                out[idx[j]] = err;
            }
        }
        cli__reply_free(r);
    }
    free(argv);
    free(idx);
}

static int cli_batch_put(struct crescent_store *st, const char *const *keys,
                         const void *const *bufs, const size_t *sizes, size_t n,
                         const struct crescent_store_replicate_config *rc, int *results,
                         bool zero_copy) {
    if (st == NULL || keys == NULL || bufs == NULL || sizes == NULL || results == NULL || n == 0) {
        return cli_fail(EINVAL, "batch put: NULL argument or no keys");
    }
    int err = cli_check_rc(rc);
    size_t reg = zero_copy && err == 0 ? cli__registered_prefix(st, bufs, sizes, n) : n;
    for (size_t i = 0; i < n && err == 0; i++) {
        err = cli__check_key(keys[i]);
        if (err == 0 && bufs[i] == NULL) {
            err = cli_fail(EINVAL, "batch put: NULL buffer");
        }
        if (err == 0 && i == reg) { /* the first buffer outside every registration */
            err = cli_fail(CRESCENT_STORE_EINVALID_PARAMS,
                           "batch put_from: buffer %zu is not "
                           "registered",
                           i);
        }
    }
    if (err < 0) {
        return err;
    }
    /* Every entry used is written below: no zeroing (a third of a batch's memset). */
    size_t argc = 3 + 2 * n + CLI_OPT_MAX;
    const char **argv = malloc(argc * sizeof(*argv));
    size_t *lens = malloc(argc * sizeof(*lens));
    char(*num)[CM_DEC_ROOM] = malloc((n + 1) * sizeof(*num));
    if (argv == NULL || lens == NULL || num == NULL) {
        free(argv);
        free(lens);
        free(num);
        return -ENOMEM;
    }
    argv[0] = "MC.BATCHPUTSTART";
    lens[0] = 16;
    argv[1] = st->client_id;
    lens[1] = strlen(st->client_id);
    argv[2] = num[n];
    lens[2] = cm_dec_u64(num[n], n);
    /* The sizes in decimal; a run of equal sizes (the usual batch) shares one text. */
    uint64_t extra = st->checksum ? CLI_TRAILER : 0, prev = 0;
    const char *prev_txt = NULL;
    size_t prev_len = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t size = sizes[i] + extra;
        if (prev_txt == NULL || size != prev) {
            prev = size;
            prev_txt = num[i];
            prev_len = cm_dec_u64(num[i], size);
        }
        argv[3 + 2 * i] = keys[i];
        lens[3 + 2 * i] = strlen(keys[i]);
        argv[4 + 2 * i] = prev_txt;
        lens[4 + 2 * i] = prev_len;
    }
    char nums[96];
    argc = 3 + 2 * n;
    argc += cli__opts_argv(rc, argv + argc, lens + argc, nums, sizeof(nums));
    redisReply *r;
    bool compact;
    err = cli__cmd_hot(st, (int)argc, argv, lens, &r, &compact);
    free(argv);
    free(lens);
    free(num);
    if (err < 0) {
        return err;
    }
    struct cli_creply c;
    const redisReply *elems;
    if ((err = cli__batch_reply_open(st, r, compact, n, "batch put", &c, &elems)) < 0) {
        return err;
    }
    if (zero_copy && !st->checksum) {
        err = compact ? cli__batch_write_compact(st, &c, n, bufs, sizes, results)
                      : cli__batch_write_fast(st, r, n, bufs, sizes, results);
        cli__creply_close(st, &c);
        cli__reply_free(r);
        if (err < 0) {
            return err;
        }
        for (size_t i = 0; i < n; i++) {
            if (results[i] == -CRESCENT_STORE_ETRANSFER_FAIL) {
                cli_batch_finish(st, "MC.BATCHPUTREVOKE", &keys[i], 1, &results[i], false, results);
            }
        }
        r = NULL;
    }
    for (size_t i = 0; r != NULL && i < n; i++) {
        struct cli_replica reps[CLI_MAX_REPL];
        int k = cli__reply_err(elems->element[i]);
        if (k == 0) {
            k = compact ? cli__creply_replicas(&c, elems->element[i], 0, false, reps, CLI_MAX_REPL)
                        : cli__parse_replicas(elems->element[i], reps, CLI_MAX_REPL);
        }
        if (k >= 0) {
            struct cli_src src = {&bufs[i], &sizes[i], 1, sizes[i], zero_copy, NULL};
            unsigned char trailer[CLI_TRAILER];
            if (st->checksum) {
                cli__trailer_make(trailer, &src);
                src.trailer = trailer;
            }
            k = cli__write_replicas(st, reps, (size_t)k, &src);
            results[i] = k < 0 ? k : 0;
            if (k < 0) {
                results[i] = k;
                cli_batch_finish(st, "MC.BATCHPUTREVOKE", &keys[i], 1, &results[i], false, results);
            }
        } else {
            results[i] = k;
        }
    }
    cli__creply_close(st, &c);
    cli__reply_free(r);
    cli_batch_finish(st, "MC.BATCHPUTEND", keys, n, results, true, results);
    for (size_t i = 0; i < n; i++) {
        if (results[i] < 0) {
            return results[i];
        }
    }
    return 0;
}

/* Public: see store.h. */
int crescent_store_batch_put_from(struct crescent_store *st, const char *const *keys,
                                  const void *const *bufs, const size_t *sizes, size_t n,
                                  const struct crescent_store_replicate_config *rc, int *results) {
    if (st != NULL && st->dummy != NULL) {
        return cli_dummy_batch_put_from(st, keys, bufs, sizes, n, rc, results);
    }
    return cli_batch_put(st, keys, bufs, sizes, n, rc, results, true);
}

/* Public: see store.h. */
int crescent_store_batch_put(struct crescent_store *st, const char *const *keys,
                             const void *const *values, const size_t *sizes, size_t n,
                             const struct crescent_store_replicate_config *rc, int *results) {
    if (st != NULL && st->dummy != NULL) {
        return cli_dummy_batch_put(st, keys, values, sizes, n, rc, results);
    }
    return cli_batch_put(st, keys, values, sizes, n, rc, results, false);
}
