/* SPDX-License-Identifier: Apache-2.0 */
/*
 * file_per_key_storage_backend: one record per file under
 * <path>/<MOONCAKE_OFFLOAD_FSDIR>/<2 hex>/<24 hex>, the name derived from two hashes of the key
 * (the record inside names the key, checked at open). A put writes "<name>.<seq>.tmp" and
 * renames it into place, so a file under its final name is always complete; a temporary found
 * at open is a torn write (counted and deleted). The restart scan reads each file's header and
 * checks its CRC and size; value CRCs are checked on every get.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "common/cm_hash.h"
#include "common/cm_mem.h"
#include "storage/sto_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FPK_SEED 0x46504b2d4e414d45ull

/* Relative path of key's file: "<fsdir>/<2 hex>/<24 hex>". */
static void fpk_name(const struct sto *s, const uint8_t *key, size_t klen, char *out, size_t cap) {
    uint64_t h = cm_hash64(key, klen, FPK_SEED);
    uint32_t c = sto_crc32c(0, key, klen);
    snprintf(out, cap, "%s/%02x/%016llx%08x", s->cfg.fsdir, (unsigned)(h >> 56),
             (unsigned long long)h, c);
}

/* Checks one file found at open; indexes it or counts and deletes it. */
static void fpk_check(struct sto *s, int dfd, const char *dname, const char *fname, uint8_t *buf) {
    size_t fl = strlen(fname);
    char rel[512];
    snprintf(rel, sizeof(rel), "%s/%s", dname, fname);
    if (fl > 4 && !strcmp(fname + fl - 4, ".tmp")) {
        sto__count_torn(s, 1);
        unlinkat(dfd, fname, 0);
        return;
    }
    int fd = openat(dfd, fname, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    ssize_t got = fstat(fd, &st) == 0 ? pread(fd, buf, STO_REC_HDR + STO_KEY_MAX, 0) : -1;
    close(fd);
    struct sto_rec r;
    int n = got > 0 ? sto_rec_decode(buf, (size_t)got, &r) : -CM_ECORRUPT;
    char want[512];
    if (n > 0)
        fpk_name(s, r.key, r.key_len, want, sizeof(want));
    if (n <= 0 || strcmp(want + strlen(s->cfg.fsdir) + 1, rel) != 0 ||
        (uint64_t)st.st_size < r.rec_len) {
        if (n > 0 && (uint64_t)st.st_size < r.rec_len)
            sto__count_torn(s, 1);
        else
            sto__count_corrupt(s, 1);
        unlinkat(dfd, fname, 0);
        return;
    }
    r.rec_off = 0;
    struct sto_ent *kept, *old = sto__recovered(s, &r, 0, &kept);
    if (old)
        sto__ent_free(old);
}

static int fpk_open(struct sto *s, char *err, size_t errlen) {
    if (mkdirat(s->dirfd, s->cfg.fsdir, 0755) < 0 && errno != EEXIST) {
        int e = errno;
        return sto__err(err, errlen, "cannot create %s/%s: %s", s->dir, s->cfg.fsdir, strerror(e)),
               -e;
    }
    uint8_t *buf = cm_malloc(STO_REC_HDR + STO_KEY_MAX);
    for (unsigned i = 0; i < 256; i++) {
        char d[300];
        snprintf(d, sizeof(d), "%s/%02x", s->cfg.fsdir, i);
        if (mkdirat(s->dirfd, d, 0755) < 0 && errno != EEXIST) {
            int e = errno;
            cm_free(buf);
            return sto__err(err, errlen, "cannot create %s/%s: %s", s->dir, d, strerror(e)), -e;
        }
        int dfd = openat(s->dirfd, d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
        if (!dir) {
            if (dfd >= 0)
                close(dfd);
            continue;
        }
        struct dirent *de;
        char dname[8];
        snprintf(dname, sizeof(dname), "%02x", i);
        while ((de = readdir(dir)) != NULL) {
            if (de->d_name[0] != '.')
                fpk_check(s, dirfd(dir), dname, de->d_name, buf);
        }
        closedir(dir);
    }
    cm_free(buf);
    return 0;
}

static void fpk_close(struct sto *s) {
    (void)s;
}

static int fpk_alloc(struct sto *s, struct sto_wr *w) {
    char name[512];
    fpk_name(s, w->rec.key, w->rec.key_len, name, sizeof(name));
    snprintf(w->tmp, sizeof(w->tmp), "%s.%llx.tmp", strrchr(name, '/') + 1,
             (unsigned long long)w->rec.seq);
    char rel[600];
    snprintf(rel, sizeof(rel), "%.*s/%s", (int)(strrchr(name, '/') - name), name, w->tmp);
    int fd = sto__open_file(s, rel, O_WRONLY | O_CREAT | O_TRUNC, true);
    if (fd < 0)
        return fd;
    if (fallocate(fd, 0, 0, (off_t)w->rec.rec_len) < 0) {
        /* optional: the write extends the file instead */
    }
    w->fd = fd;
    w->off = 0;
    return 0;
}

/* Relative path of w's temporary file. */
static void tmp_path(const struct sto *s, const struct sto_wr *w, char *out, size_t cap) {
    char name[512];
    fpk_name(s, w->rec.key, w->rec.key_len, name, sizeof(name));
    snprintf(out, cap, "%.*s/%s", (int)(strrchr(name, '/') - name), name, w->tmp);
}

static void fpk_abort(struct sto *s, struct sto_wr *w) {
    char rel[600];
    tmp_path(s, w, rel, sizeof(rel));
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    unlinkat(s->dirfd, rel, 0);
}

static int fpk_commit(struct sto *s, struct sto_wr *w, struct sto_ent *e) {
    (void)e;
    char rel[600], name[512];
    tmp_path(s, w, rel, sizeof(rel));
    fpk_name(s, w->rec.key, w->rec.key_len, name, sizeof(name));
    close(w->fd);
    w->fd = -1;
    if (renameat(s->dirfd, rel, s->dirfd, name) < 0)
        return -errno; /* abort() removes the temporary */
    return 0;
}

static void fpk_release(struct sto *s, struct sto_ent *e, bool replaced) {
    if (replaced) /* the rename already replaced the file */
        return;
    char name[512];
    fpk_name(s, e->key, e->klen, name, sizeof(name));
    unlinkat(s->dirfd, name, 0);
}

static int fpk_flush(struct sto *s) {
    (void)s;
    return 0;
}

static int fpk_get_fd(struct sto *s, const struct sto_ent *e) {
    char name[512];
    fpk_name(s, e->key, e->klen, name, sizeof(name));
    return sto__open_file(s, name, O_RDONLY, true);
}

static void fpk_put_fd(struct sto *s, const struct sto_ent *e, int fd) {
    (void)s;
    (void)e;
    close(fd);
}

const struct sto_backend_ops sto__fpk_ops = {
    .size = sizeof(struct sto_backend_ops),
    .name = "file_per_key_storage_backend",
    .open = fpk_open,
    .close = fpk_close,
    .alloc = fpk_alloc,
    .abort = fpk_abort,
    .commit = fpk_commit,
    .release = fpk_release,
    .flush = fpk_flush,
    .get_fd = fpk_get_fd,
    .put_fd = fpk_put_fd,
};
