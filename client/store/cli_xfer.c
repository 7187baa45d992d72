/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Moving the bytes of one object: writing a value into its replicas and reading one replica.
 * A replica in one of this store's own segments is a plain memcpy; others go through the
 * transfer engine, straight from / into the caller's registered buffer (zero-copy) or through
 * a chunk of the staging buffer (copying calls; counted in staging_bytes).
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"
#include "common/cm_time.h"

#include <errno.h>
#include <string.h>

/* Copies len bytes starting at offset off of the concatenated parts into dst. */
static void cli_gather(const struct cli_src *src, uint64_t off, char *dst, uint64_t len) {
    for (size_t i = 0; i < src->n && len > 0; i++) {
        if (off >= src->sizes[i]) {
            off -= src->sizes[i];
            continue;
        }
        uint64_t take = src->sizes[i] - off < len ? src->sizes[i] - off : len;
        memcpy(dst, (const char *)src->parts[i] + off, take);
        dst += take;
        len -= take;
        off = 0;
    }
}

/* Runs n requests in one batch and waits. Returns 0 or a negative code. */
static int cli_run(struct crescent_store *st, const struct crescent_xfer_request *reqs, size_t n) {
    struct crescent_xfer_batch *b;
    int rc = crescent_xfer_batch_alloc(st->eng, n, &b);
    if (rc < 0) {
        return rc;
    }
    rc = crescent_xfer_batch_submit(b, reqs, n, NULL);
    if (rc == 0) {
        size_t nf = 0;
        rc = crescent_xfer_batch_wait(b, -1, NULL, 0, &nf);
    }
    crescent_xfer_batch_free(b);
    return rc;
}

struct cli_remote {
    const struct cli_replica *r;       /* replica */
    struct crescent_xfer_segment *seg; /* opened peer */
};

static int cli_write_remote(struct crescent_store *st, struct cli_remote *rem, size_t n,
                            const struct cli_src *src) {
    struct crescent_xfer_request reqs[CLI_MAX_REPL];
    uint64_t t0 = cm_mono_us();
    int rc = 0;
    if (src->zero_copy) {
        for (size_t i = 0; i < n; i++) {
            reqs[i] = (struct crescent_xfer_request){CRESCENT_XFER_WRITE, (void *)src->parts[0],
                                                     rem[i].seg, rem[i].r->addr, src->total};
        }
        rc = cli_run(st, reqs, n);
    } else {
        char *chunk;
        size_t cs = cli__stage_get(st, &chunk);
        for (uint64_t off = 0; off < src->total && rc == 0; off += cs) {
            uint64_t len = src->total - off < cs ? src->total - off : cs;
            cli_gather(src, off, chunk, len);
            __atomic_fetch_add(&st->m.staging_bytes, len, __ATOMIC_RELAXED);
            for (size_t i = 0; i < n; i++) {
                reqs[i] = (struct crescent_xfer_request){CRESCENT_XFER_WRITE, chunk, rem[i].seg,
                                                         rem[i].r->addr + off, len};
            }
            rc = cli_run(st, reqs, n);
        }
        cli__stage_put(st, chunk);
    }
    uint64_t us = cm_mono_us() - t0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        cli__count(st, true, cli__iface(rem[i].seg), src->total, us);
    }
    return rc;
}

/* Writes src into every replica of reps. Returns 0, or a negative code when any replica could
 * not be written (the caller revokes the write). Thread-safe. */
int cli__write_replicas(struct crescent_store *st, const struct cli_replica *reps, size_t n,
                        const struct cli_src *src) {
    struct cli_remote rem[CLI_MAX_REPL];
    size_t nrem = 0;
    for (size_t i = 0; i < n && i < CLI_MAX_REPL; i++) {
        if (reps[i].size < src->total) {
            return cli_fail(CRESCENT_STORE_EINVALID_PARAMS, "replica on %s smaller than the value",
                            reps[i].segment);
        }
        if (cli__is_own_segment(st, reps[i].segment)) {
            uint64_t t0 = cm_mono_us();
            cli_gather(src, 0, (char *)(uintptr_t)reps[i].addr, src->total);
            cli__count(st, true, 0, src->total, cm_mono_us() - t0);
            continue;
        }
        int rc = cli__peer_open(st, &reps[i], &rem[nrem].seg);
        if (rc < 0) {
            return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "put: %s", crescent_store_last_error());
        }
        rem[nrem++].r = &reps[i];
    }
    if (nrem == 0) {
        return 0;
    }
    int rc = cli_write_remote(st, rem, nrem, src);
    if (rc < 0) {
        for (size_t i = 0; i < nrem; i++) {
            cli__peer_drop(st, rem[i].r->segment);
        }
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "put: transfer failed: %s",
                        crescent_xfer_strerror(rc));
    }
    return 0;
}

/* Reads size bytes of replica r into dst. Returns 0 or a negative code (the peer is dropped
 * from the cache after a failed transfer). Thread-safe. */
int cli__read_replica(struct crescent_store *st, const struct cli_replica *r, void *dst,
                      uint64_t size, bool zero_copy) {
    uint64_t t0 = cm_mono_us();
    if (cli__is_own_segment(st, r->segment)) {
        memcpy(dst, (const void *)(uintptr_t)r->addr, size);
        cli__count(st, false, 0, size, cm_mono_us() - t0);
        return 0;
    }
    struct crescent_xfer_segment *seg;
    int rc = cli__peer_open(st, r, &seg);
    if (rc < 0) {
        return rc;
    }
    if (zero_copy) {
        struct crescent_xfer_request q = {CRESCENT_XFER_READ, dst, seg, r->addr, size};
        rc = cli_run(st, &q, 1);
    } else {
        char *chunk;
        size_t cs = cli__stage_get(st, &chunk);
        for (uint64_t off = 0; off < size && rc == 0; off += cs) {
            uint64_t len = size - off < cs ? size - off : cs;
            struct crescent_xfer_request q = {CRESCENT_XFER_READ, chunk, seg, r->addr + off, len};
            rc = cli_run(st, &q, 1);
            if (rc == 0) {
                memcpy((char *)dst + off, chunk, len);
                __atomic_fetch_add(&st->m.staging_bytes, len, __ATOMIC_RELAXED);
            }
        }
        cli__stage_put(st, chunk);
    }
    if (rc < 0) {
        cli__peer_drop(st, r->segment);
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "read from %s: %s", r->segment,
                        crescent_xfer_strerror(rc));
    }
    cli__count(st, false, cli__iface(seg), size, cm_mono_us() - t0);
    return 0;
}
