/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The zero-copy batch read fast path: for the keys of one MC.BATCHGETREPLICAS reply, replicas
 * in the store's own segments are copied at once and one remote replica per other key is read
 * in a single transfer batch (instead of one batch per key). Keys whose transfer failed are
 * left to the per-key path, which tries their other replicas.
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"
#include "common/cm_time.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct cli_fast {
    struct cli_replica rep; /* the replica read */
    struct cli_peer *peer;  /* its peer, NULL for an own segment */
    int64_t ttl;            /* lease_ttl_ms */
};

/* Classifies key i: an error or a size in results[i], or a remote read to queue (returns 1). */
static int cli_fast_prepare(struct crescent_store *st, const redisReply *map, void *buf, size_t cap,
                            struct cli_fast *f, int64_t *result) {
    int err = cli__reply_err(map);
    const redisReply *ttl = cli__field(map, "lease_ttl_ms");
    struct cli_replica reps[CLI_MAX_REPL];
    int n = err < 0 ? err : cli__parse_replicas(cli__field(map, "replicas"), reps, CLI_MAX_REPL);
    if (n <= 0 || ttl == NULL || ttl->type != REDIS_REPLY_INTEGER) {
        *result = n < 0 ? n : CLI_FALLBACK; /* malformed or empty: the per-key path decides */
        return 0;
    }
    f->ttl = ttl->integer;
    if (reps[0].size > cap) {
        *result = cli_fail(CRESCENT_STORE_EBUFFER_OVERFLOW, "batch_get_into: buffer too small");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (reps[i].memory && cli__is_own_segment(st, reps[i].segment)) {
            uint64_t t0 = cm_mono_us();
            memcpy(buf, (const void *)(uintptr_t)reps[i].addr, reps[i].size);
            cli__count(st, false, 0, reps[i].size, cm_mono_us() - t0);
            *result = (int64_t)reps[i].size;
            return 0;
        }
    }
    for (int i = 0; i < n; i++) {
        if (reps[i].memory && cli__peer_open(st, &reps[i], &f->peer) == 0) {
            f->rep = reps[i];
            f->rep.desc = NULL; /* points into the reply; not needed any more */
            f->rep.desc_len = 0;
            return 1;
        }
    }
    *result = CLI_FALLBACK;
    return 0;
}

/* Reads the keys of reply r (n maps) into bufs; results[i] is the size, a negative code, or
 * CLI_FALLBACK for keys the caller must read one by one. Returns 0 or -ENOMEM. */
int cli__batch_read_fast(struct crescent_store *st, const redisReply *r, size_t n,
                         void *const *bufs, const size_t *caps, int64_t *results, uint64_t t0_ms) {
    struct cli_fast *f = calloc(n, sizeof(*f));
    struct crescent_xfer_request *reqs = calloc(n, sizeof(*reqs));
    size_t *idx = calloc(n, sizeof(*idx));
    if (f == NULL || reqs == NULL || idx == NULL) {
        free(f);
        free(reqs);
        free(idx);
        return -ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (cli_fast_prepare(st, r->element[i], bufs[i], caps[i], &f[i], &results[i])) {
            reqs[m] = (struct crescent_xfer_request){CRESCENT_XFER_READ, bufs[i], f[i].peer->seg,
                                                     f[i].rep.addr, f[i].rep.size};
            idx[m++] = i;
        }
    }
    struct crescent_xfer_batch *b = NULL;
    uint64_t us0 = cm_mono_us();
    int rc = m > 0 ? crescent_xfer_batch_alloc(st->eng, m, &b) : 0;
    if (rc == 0 && m > 0 && (rc = crescent_xfer_batch_submit(b, reqs, m, NULL)) == 0) {
        size_t nf = 0;
        crescent_xfer_batch_wait(b, -1, NULL, 0, &nf);
    }
    uint64_t us = cm_mono_us() - us0;
    for (size_t j = 0; j < m; j++) {
        size_t i = idx[j];
        struct crescent_xfer_task_status ts = {.status = CRESCENT_XFER_FAILED};
        if (rc == 0) {
            crescent_xfer_batch_status(b, j, &ts);
        }
        bool ok = ts.status == CRESCENT_XFER_COMPLETED;
        if (ok) {
            cli__count(st, false, cli__iface(f[i].peer->seg), f[i].rep.size, us);
        }
        cli__peer_put(st, f[i].peer, !ok);
        results[i] = ok ? (int64_t)f[i].rep.size : CLI_FALLBACK;
    }
    crescent_xfer_batch_free(b);
    for (size_t i = 0; i < n; i++) {
        if (results[i] >= 0 && cm_mono_ms() > t0_ms + (uint64_t)f[i].ttl) {
            results[i] =
                cli_fail(CRESCENT_STORE_ELEASE_EXPIRED, "batch get: the read outlived its lease");
        }
    }
    free(f);
    free(reqs);
    free(idx);
    return 0;
}

/* Queues the writes of one key's replicas (own segments by memcpy at once). Returns the number
 * of requests added, or a negative code. */
static int cli_fast_write_key(struct crescent_store *st, const redisReply *e, const void *buf,
                              size_t size, struct crescent_xfer_request *reqs,
                              struct cli_peer **peers) {
    struct cli_replica reps[CLI_MAX_REPL];
    int err = cli__reply_err(e);
    int n = err < 0 ? err : cli__parse_replicas(e, reps, CLI_MAX_REPL);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (reps[i].size < size) {
            err = cli_fail(CRESCENT_STORE_EINVALID_PARAMS, "replica smaller than the value");
        } else if (cli__is_own_segment(st, reps[i].segment)) {
            uint64_t t0 = cm_mono_us();
            memcpy((void *)(uintptr_t)reps[i].addr, buf, size);
            cli__count(st, true, 0, size, cm_mono_us() - t0);
        } else if (cli__peer_open(st, &reps[i], &peers[m]) == 0) {
            reqs[m] = (struct crescent_xfer_request){CRESCENT_XFER_WRITE, (void *)buf,
                                                     peers[m]->seg, reps[i].addr, size};
            m++;
        } else {
            err = cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "batch put: %s",
                           crescent_store_last_error());
        }
    }
    if (n < 0 || err < 0) {
        for (int j = 0; j < m; j++) {
            cli__peer_put(st, peers[j], false);
        }
        return n < 0 ? n : err;
    }
    return m;
}

/* Writes the zero-copy values of a MC.BATCHPUTSTART reply r (n per-key elements) with one
 * transfer batch. results[i]: 0, the key's put-start error, or -TRANSFER_FAIL (the caller
 * revokes those). Returns 0 or -ENOMEM. */
int cli__batch_write_fast(struct crescent_store *st, const redisReply *r, size_t n,
                          const void *const *bufs, const size_t *sizes, int *results) {
    size_t cap = n * CLI_MAX_REPL; /* entries [0, m) are written before they are read */
    struct crescent_xfer_request *reqs = malloc(cap * sizeof(*reqs));
    struct cli_peer **peers = malloc(cap * sizeof(*peers));
    size_t *owner = malloc(cap * sizeof(*owner));
    if (reqs == NULL || peers == NULL || owner == NULL) {
        free(reqs);
        free(peers);
        free(owner);
        return -ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int k = cli_fast_write_key(st, r->element[i], bufs[i], sizes[i], reqs + m, peers + m);
        results[i] = k < 0 ? k : 0;
        for (int j = 0; j < k; j++) {
            owner[m++] = i;
        }
    }
    struct crescent_xfer_batch *b = NULL;
    uint64_t us0 = cm_mono_us();
    int rc = m > 0 ? crescent_xfer_batch_alloc(st->eng, m, &b) : 0;
    if (rc == 0 && m > 0 && (rc = crescent_xfer_batch_submit(b, reqs, m, NULL)) == 0) {
        size_t nf = 0;
        crescent_xfer_batch_wait(b, -1, NULL, 0, &nf);
    }
    uint64_t us = cm_mono_us() - us0;
    for (size_t j = 0; j < m; j++) {
        struct crescent_xfer_task_status ts = {.status = CRESCENT_XFER_FAILED};
        if (rc == 0) {
            crescent_xfer_batch_status(b, j, &ts);
        }
        bool ok = ts.status == CRESCENT_XFER_COMPLETED;
        if (ok) {
            cli__count(st, true, cli__iface(peers[j]->seg), reqs[j].length, us);
        } else {
            results[owner[j]] =
                cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "batch put: transfer to a replica failed");
        }
        cli__peer_put(st, peers[j], !ok);
    }
    crescent_xfer_batch_free(b);
    free(reqs);
    free(peers);
    free(owner);
    return 0;
}
