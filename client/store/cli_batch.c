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

/* Runs reqs[0..m) as one transfer batch and sets ok[j] for those that completed (told by the
 * wait's list of failed tasks rather than one status call, two locks, per task). Returns the
 * microseconds it took. */
static uint64_t cli_batch_run(struct crescent_store *st, const struct crescent_xfer_request *reqs,
                              size_t m, bool *ok) {
    struct crescent_xfer_batch *b = NULL;
    uint64_t us0 = cm_mono_us();
    int rc = m > 0 ? crescent_xfer_batch_alloc(st->eng, m, &b) : 0;
    if (rc == 0 && m > 0) {
        rc = crescent_xfer_batch_submit(b, reqs, m, NULL);
    }
    size_t nf = 0, *failed = NULL;
    if (rc == 0 && m > 0) {
        failed = malloc(m * sizeof(*failed));
        rc = crescent_xfer_batch_wait(b, -1, failed, failed != NULL ? m : 0, &nf);
    }
    uint64_t us = cm_mono_us() - us0;
    if (rc == 0 || (rc == -CRESCENT_XFER_ETRANSFER_FAIL && failed != NULL && nf <= m)) {
        for (size_t j = 0; j < m; j++) {
            ok[j] = true;
        }
        for (size_t k = 0; rc != 0 && k < nf; k++) {
            ok[failed[k]] = false;
        }
    } else {
        for (size_t j = 0; j < m; j++) { /* no list: ask each task */
            struct crescent_xfer_task_status ts = {.status = CRESCENT_XFER_FAILED};
            if (b != NULL) {
                crescent_xfer_batch_status(b, j, &ts);
            }
            ok[j] = ts.status == CRESCENT_XFER_COMPLETED;
        }
    }
    free(failed);
    crescent_xfer_batch_free(b);
    return us;
}

/* Writes the zero-copy values of a MC.BATCHPUTSTART reply r (n per-key elements) with one
 * transfer batch. results[i]: 0, the key's put-start error, or -TRANSFER_FAIL (the caller
 * revokes those). Returns 0 or -ENOMEM. */
int cli__batch_write_fast(struct crescent_store *st, const redisReply *r, size_t n,
                          const void *const *bufs, const size_t *sizes, int *results) {
    size_t cap = n * CLI_MAX_REPL;
    struct crescent_xfer_request *reqs = calloc(cap, sizeof(*reqs));
    struct cli_peer **peers = malloc(cap * sizeof(*peers));
    size_t *owner = malloc(cap * sizeof(*owner));
    bool *ok = malloc(cap * sizeof(*ok));
    if (reqs == NULL || peers == NULL || owner == NULL || ok == NULL) {
        free(reqs);
        free(peers);
        free(owner);
        free(ok);
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
    uint64_t us = cli_batch_run(st, reqs, m, ok);
    for (size_t j = 0; j < m; j++) {
        if (ok[j]) {
            cli__count(st, true, cli__iface(peers[j]->seg), reqs[j].length, us);
        } else {
            results[owner[j]] =
                cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "batch put: transfer to a replica failed");
        }
        cli__peer_put(st, peers[j], !ok[j]);
    }
    free(reqs);
    free(peers);
    free(owner);
    free(ok);
    return 0;
}

/* The compact form of one batch-get key i: an error or a size in *result (own segment: copied
 * now), or a remote read queued in *req (returns 1, *seg its segment index). */
static int cli_compact_prepare(struct crescent_store *st, struct cli_creply *c, size_t i, void *buf,
                               size_t cap, struct crescent_xfer_request *req, size_t *seg,
                               int64_t *ttl, int64_t *result) {
    const redisReply *e = c->elems->element[i];
    int n = cli__creply_count(c, e, 2);
    if (n <= 0) {
        *result = n < 0 ? n : CLI_FALLBACK; /* an error, or no replica: the per-key path */
        return 0;
    }
    redisReply *const *v = e->element + 2; /* segment, type, addr, size per replica */
    *ttl = e->element[0]->integer;
    uint64_t size = (uint64_t)v[3]->integer;
    if (size > cap) {
        *result = cli_fail(CRESCENT_STORE_EBUFFER_OVERFLOW, "batch_get_into: buffer too small");
        return 0;
    }
    for (int j = 0; j < n; j++, v += 4) {
        if (v[1]->integer == 0 && cli__cseg_own(st, c, (size_t)v[0]->integer)) {
            uint64_t t0 = cm_mono_us();
            memcpy(buf, (const void *)(uintptr_t)v[2]->integer, size);
            cli__count(st, false, 0, size, cm_mono_us() - t0);
            *result = (int64_t)size;
            return 0;
        }
    }
    v = e->element + 2;
    for (int j = 0; j < n; j++, v += 4) {
        struct cli_peer *p;
        if (v[1]->integer == 0 && (p = cli__cseg_peer(st, c, (size_t)v[0]->integer)) != NULL) {
            *req = (struct crescent_xfer_request){CRESCENT_XFER_READ, buf, p->seg,
                                                  (uint64_t)v[2]->integer, size};
            *seg = (size_t)v[0]->integer;
            return 1;
        }
    }
    *result = CLI_FALLBACK;
    return 0;
}

/* cli__batch_read_fast for a compact reply c of n keys: the segment table's peers are opened
 * once per segment (c holds them; the caller drops them with cli__creply_drop_peers before
 * reading the CLI_FALLBACK keys one by one). Returns 0 or -ENOMEM. */
int cli__batch_read_compact(struct crescent_store *st, struct cli_creply *c, size_t n,
                            void *const *bufs, const size_t *caps, int64_t *results,
                            uint64_t t0_ms) {
    struct crescent_xfer_request *reqs = calloc(n, sizeof(*reqs));
    size_t *idx = malloc(n * sizeof(*idx)), *seg = malloc(n * sizeof(*seg));
    int64_t *ttl = calloc(n, sizeof(*ttl));
    bool *ok = malloc(n * sizeof(*ok));
    int rc = reqs == NULL || idx == NULL || seg == NULL || ttl == NULL || ok == NULL ? -ENOMEM : 0;
    size_t m = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (cli_compact_prepare(st, c, i, bufs[i], caps[i], &reqs[m], &seg[m], &ttl[i],
                                &results[i])) {
            idx[m++] = i;
        }
    }
    uint64_t us = rc == 0 ? cli_batch_run(st, reqs, m, ok) : 0;
    for (size_t j = 0; j < m; j++) {
        struct cli_cseg *s = &c->segs[seg[j]];
        if (ok[j]) {
            cli__count(st, false, s->iface, reqs[j].length, us);
        } else {
            s->failed = true;
        }
        results[idx[j]] = ok[j] ? (int64_t)reqs[j].length : CLI_FALLBACK;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (results[i] >= 0 && cm_mono_ms() > t0_ms + (uint64_t)ttl[i]) {
            results[i] =
                cli_fail(CRESCENT_STORE_ELEASE_EXPIRED, "batch get: the read outlived its lease");
        }
    }
    free(reqs);
    free(idx);
    free(seg);
    free(ttl);
    free(ok);
    return rc;
}

/* Queues the writes of compact key i (own segments by memcpy at once) at reqs / segs. Returns
 * the number of requests added, or a negative code (then nothing is queued). */
static int cli_compact_write_key(struct crescent_store *st, struct cli_creply *c, size_t i,
                                 const void *buf, size_t size, struct crescent_xfer_request *reqs,
                                 size_t *segs) {
    const redisReply *e = c->elems->element[i];
    int n = cli__creply_count(c, e, 0);
    int m = 0;
    redisReply *const *v = e->element;
    for (int j = 0; j < n; j++, v += 4) {
        size_t s = (size_t)v[0]->integer;
        struct cli_peer *p;
        if ((uint64_t)v[3]->integer < size) {
            return cli_fail(CRESCENT_STORE_EINVALID_PARAMS, "replica smaller than the value");
        } else if (cli__cseg_own(st, c, s)) {
            uint64_t t0 = cm_mono_us();
            memcpy((void *)(uintptr_t)v[2]->integer, buf, size);
            cli__count(st, true, 0, size, cm_mono_us() - t0);
        } else if ((p = cli__cseg_peer(st, c, s)) != NULL) {
            reqs[m] = (struct crescent_xfer_request){CRESCENT_XFER_WRITE, (void *)buf, p->seg,
                                                     (uint64_t)v[2]->integer, size};
            segs[m++] = s;
        } else {
            return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "batch put: %s",
                            crescent_store_last_error());
        }
    }
    return n < 0 ? n : m;
}

/* cli__batch_write_fast for a compact MC.BATCHPUTSTART reply c of n keys (c holds the peers;
 * the caller closes it). Returns 0 or -ENOMEM. */
int cli__batch_write_compact(struct crescent_store *st, struct cli_creply *c, size_t n,
                             const void *const *bufs, const size_t *sizes, int *results) {
    /* Room for the replicas the reply lists (not n * CLI_MAX_REPL: zeroing that was a tenth of
     * a batch put's instructions). */
    size_t cap = 1;
    for (size_t i = 0; i < n; i++) {
        const redisReply *e = c->elems->element[i];
        cap += e->type == REDIS_REPLY_ARRAY ? e->elements / 4 : 0;
    }
    struct crescent_xfer_request *reqs = calloc(cap, sizeof(*reqs));
    size_t *seg = malloc(cap * sizeof(*seg)), *owner = malloc(cap * sizeof(*owner));
    bool *ok = malloc(cap * sizeof(*ok));
    int rc = reqs == NULL || seg == NULL || owner == NULL || ok == NULL ? -ENOMEM : 0;
    size_t m = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int k = cli_compact_write_key(st, c, i, bufs[i], sizes[i], reqs + m, seg + m);
        results[i] = k < 0 ? k : 0;
        for (int j = 0; j < k; j++) {
            owner[m++] = i;
        }
    }
    uint64_t us = rc == 0 ? cli_batch_run(st, reqs, m, ok) : 0;
    for (size_t j = 0; j < m; j++) {
        struct cli_cseg *s = &c->segs[seg[j]];
        if (ok[j]) {
            cli__count(st, true, s->iface, sizes[owner[j]], us); /* reqs[j].length */
        } else {
            s->failed = true;
            results[owner[j]] =
                cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "batch put: transfer to a replica failed");
        }
    }
    free(reqs);
    free(seg);
    free(owner);
    free(ok);
    return rc;
}
