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
#include "transfer/xfer_int.h"

#include <errno.h>
#include <string.h>

/* Copies len bytes starting at offset off of the concatenated parts (then the trailer, if
 * any) into dst. */
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
    if (len > 0 && src->trailer != NULL && off < CLI_TRAILER) {
        memcpy(dst, src->trailer + off, len < CLI_TRAILER - off ? len : CLI_TRAILER - off);
    }
}

/* Fills the checksum trailer t of src's value. */
void cli__trailer_make(unsigned char *t, const struct cli_src *src) {
    uint32_t crc = 0;
    for (size_t i = 0; i < src->n; i++) {
        crc = xfer_crc32c(crc, src->parts[i], src->sizes[i]);
    }
    memset(t, 0, CLI_TRAILER);
    memcpy(t, "CRSCSUM1", 8);
    for (int i = 0; i < 4; i++) {
        t[8 + i] = (unsigned char)(crc >> (8 * i));
    }
}

/* Checks the trailer t against len bytes of value. Returns 0 or -CHECKSUM_MISMATCH. */
int cli__trailer_check(const unsigned char *t, const void *value, uint64_t len) {
    uint32_t want = 0, crc = xfer_crc32c(0, value, len);
    for (int i = 0; i < 4; i++) {
        want |= (uint32_t)t[8 + i] << (8 * i);
    }
    if (memcmp(t, "CRSCSUM1", 8) != 0 || want != crc) {
        return cli_fail(CRESCENT_STORE_ECHECKSUM_MISMATCH,
                        "get: the value fails its checksum (MOONCAKE_STORE_CHECKSUM=1)");
    }
    return 0;
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
    struct cli_peer *peer;             /* opened peer (a reference) */
    struct crescent_xfer_segment *seg; /* peer->seg */
};

static int cli_write_remote(struct crescent_store *st, struct cli_remote *rem, size_t n,
                            const struct cli_src *src) {
    struct crescent_xfer_request reqs[CLI_MAX_REPL];
    uint64_t t0 = cm_mono_us();
    int rc = 0;
    uint64_t all = src->total + (src->trailer != NULL ? CLI_TRAILER : 0);
    if (src->zero_copy) {
        struct crescent_xfer_request zr[2 * CLI_MAX_REPL];
        size_t k = 0;
        char *chunk = NULL;
        if (src->trailer != NULL) { /* the trailer goes from registered staging memory */
            cli__stage_get(st, &chunk);
            memcpy(chunk, src->trailer, CLI_TRAILER);
        }
        for (size_t i = 0; i < n; i++) {
            zr[k++] = (struct crescent_xfer_request){CRESCENT_XFER_WRITE, (void *)src->parts[0],
                                                     rem[i].seg, rem[i].r->addr, src->total};
            if (chunk != NULL) {
                zr[k++] = (struct crescent_xfer_request){CRESCENT_XFER_WRITE, chunk, rem[i].seg,
                                                         rem[i].r->addr + src->total, CLI_TRAILER};
            }
        }
        rc = cli_run(st, zr, k);
        if (chunk != NULL) {
            cli__stage_put(st, chunk);
        }
    } else {
        char *chunk;
        size_t cs = cli__stage_get(st, &chunk);
        for (uint64_t off = 0; off < all && rc == 0; off += cs) {
            uint64_t len = all - off < cs ? all - off : cs;
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
        cli__count(st, true, cli__iface(rem[i].seg), all, us);
    }
    return rc;
}

/* Writes src into every replica of reps. Returns 0, or a negative code when any replica could
 * not be written (the caller revokes the write). Thread-safe. */
int cli__write_replicas(struct crescent_store *st, const struct cli_replica *reps, size_t n,
                        const struct cli_src *src) {
    struct cli_remote rem[CLI_MAX_REPL];
    size_t nrem = 0;
    uint64_t all = src->total + (src->trailer != NULL ? CLI_TRAILER : 0);
    for (size_t i = 0; i < n && i < CLI_MAX_REPL; i++) {
        if (reps[i].size < all) {
            return cli_fail(CRESCENT_STORE_EINVALID_PARAMS, "replica on %s smaller than the value",
                            reps[i].segment);
        }
        if (cli__is_own_segment(st, reps[i].segment)) {
            uint64_t t0 = cm_mono_us();
            cli_gather(src, 0, (char *)(uintptr_t)reps[i].addr, all);
            cli__count(st, true, 0, all, cm_mono_us() - t0);
            continue;
        }
        int rc = cli__peer_open(st, &reps[i], &rem[nrem].peer);
        if (rc < 0) {
            for (size_t j = 0; j < nrem; j++) {
                cli__peer_put(st, rem[j].peer, false);
            }
            return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "put: %s", crescent_store_last_error());
        }
        rem[nrem].seg = rem[nrem].peer->seg;
        rem[nrem++].r = &reps[i];
    }
    int rc = nrem > 0 ? cli_write_remote(st, rem, nrem, src) : 0;
    for (size_t i = 0; i < nrem; i++) {
        cli__peer_put(st, rem[i].peer, rc < 0);
    }
    if (rc < 0) {
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "put: transfer failed: %s",
                        crescent_xfer_strerror(rc));
    }
    return 0;
}

/* Reads the trailer that follows size bytes of r into trailer, through a staging chunk. */
static int cli_read_trailer(struct crescent_store *st, const struct cli_replica *r,
                            struct crescent_xfer_segment *seg, uint64_t size,
                            unsigned char *trailer) {
    char *chunk;
    cli__stage_get(st, &chunk);
    struct crescent_xfer_request q = {CRESCENT_XFER_READ, chunk, seg, r->addr + size, CLI_TRAILER};
    int rc = cli_run(st, &q, 1);
    memcpy(trailer, chunk, CLI_TRAILER);
    cli__stage_put(st, chunk);
    return rc;
}

/* Reads size bytes of replica r into dst (and, when trailer is not NULL, the CLI_TRAILER bytes
 * after them into trailer). Returns 0 or a negative code (the peer is dropped from the cache
 * after a failed transfer). Thread-safe. */
int cli__read_replica(struct crescent_store *st, const struct cli_replica *r, void *dst,
                      uint64_t size, bool zero_copy, unsigned char *trailer) {
    uint64_t t0 = cm_mono_us();
    uint64_t all = size + (trailer != NULL ? CLI_TRAILER : 0);
    if (cli__is_own_segment(st, r->segment)) {
        memcpy(dst, (const void *)(uintptr_t)r->addr, size);
        if (trailer != NULL) {
            memcpy(trailer, (const void *)(uintptr_t)(r->addr + size), CLI_TRAILER);
        }
        cli__count(st, false, 0, all, cm_mono_us() - t0);
        return 0;
    }
    struct cli_peer *peer;
    int rc = cli__peer_open(st, r, &peer);
    if (rc < 0) {
        return rc;
    }
    struct crescent_xfer_segment *seg = peer->seg;
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
    if (rc == 0 && trailer != NULL) {
        rc = cli_read_trailer(st, r, seg, size, trailer);
    }
    int iface = cli__iface(seg);
    cli__peer_put(st, peer, rc < 0);
    if (rc < 0) {
        return cli_fail(CRESCENT_STORE_ETRANSFER_FAIL, "read from %s: %s", r->segment,
                        crescent_xfer_strerror(rc));
    }
    cli__count(st, false, iface, all, cm_mono_us() - t0);
    return 0;
}
