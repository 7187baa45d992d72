/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Durable file replacement in storage/ (the offset layout's journal compaction, the bucket
 * layout's meta files): the new file is synced before its rename and the directory after it,
 * seen in the real system calls (a child run under strace), and a failed sync fails the
 * replacement cleanly: the error is returned, the old file stays in place, every stored value
 * reads back, also after a reopen. When only the directory's sync fails, the new file is in
 * place: a bucket-layout put whose record it lists succeeds, and its value is there at once,
 * after a crash (a copy of the directory) and after a reopen. The syncs are made to fail
 * through link-time wrappers (-Wl,--wrap=fsync,--wrap=fdatasync, tests/unit/storage/module.mk).
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "storage/sto_int.h"
#include "tests/unit/storage/sto_test.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NKEYS    40
#define MAXV     (9 * 1024)
#define ENV_MODE "CRESCENT_STO_DURABLE_CHILD" /* "<offset|bucket>:<dir>": run as strace's child */

/* ---------------------------------------------------------------- sync fault injection */

enum fail_what {
    FAIL_NONE, /* every sync runs */
    FAIL_FILE, /* a sync of a regular file fails with EIO (not run) */
    FAIL_DIR,  /* a sync of a directory fails with EIO (not run) */
};

static enum fail_what fail_what;
static int n_pass;   /* syncs of the fail_what kind still let through before the failures */
static int n_failed; /* syncs failed so far */
static int n_dir_ok; /* directory syncs run so far */

int __real_fsync(int fd);
int __real_fdatasync(int fd);
int __wrap_fsync(int fd);
int __wrap_fdatasync(int fd);

/* Whether the sync of fd is to fail (and counts it); errno is EIO then. */
static bool injected(int fd) {
    struct stat st;
    if (fail_what == FAIL_NONE || fstat(fd, &st) < 0)
        return false;
    if ((S_ISDIR(st.st_mode) ? FAIL_DIR : FAIL_FILE) != fail_what)
        return false;
    if (n_pass > 0) {
        n_pass--;
        return false;
    }
    n_failed++;
    errno = EIO;
    return true;
}

int __wrap_fsync(int fd) {
    if (injected(fd))
        return -1;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
        n_dir_ok++;
    return __real_fsync(fd);
}

int __wrap_fdatasync(int fd) {
    return injected(fd) ? -1 : __real_fdatasync(fd);
}

/* ---------------------------------------------------------------- helpers */

static size_t len_of(int i) {
    return 1 + (size_t)(i * 2654435761u) % MAXV;
}

static void key_of(char *k, int i) {
    snprintf(k, 32, "dur-%d", i);
}

static int put_key(struct sto *s, int i, uint64_t seed) {
    static uint8_t v[MAXV];
    char k[32];
    key_of(k, i);
    sto_test_fill(v, len_of(i), seed);
    return sto_put_buf(s, k, strlen(k), v, len_of(i));
}

/* Checks key i: absent when seed is 0, else holding the value of seed, byte for byte. */
static void check_key(struct sto *s, int i, uint64_t seed, const char *when) {
    static uint8_t want[MAXV], got[MAXV];
    char k[32];
    key_of(k, i);
    ssize_t n = sto_get(s, k, strlen(k), got, sizeof(got));
    if (seed == 0) {
        cr_assert_eq(n, -CM_EOBJECT_NOT_FOUND, "%s: %s was removed, get returns %zd", when, k, n);
        return;
    }
    cr_assert_eq(n, (ssize_t)len_of(i), "%s: %s: get returns %zd, want %zu", when, k, n, len_of(i));
    sto_test_fill(want, len_of(i), seed);
    cr_assert_eq(memcmp(want, got, (size_t)n), 0, "%s: %s: bytes differ", when, k);
}

static void check_all(struct sto *s, const uint64_t *seed, int n, const char *when) {
    for (int i = 0; i < n; i++)
        check_key(s, i, seed[i], when);
}

static ino_t inode_of(const char *dir, const char *name) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    struct stat st;
    cr_assert_eq(stat(p, &st), 0, "stat %s: %s", p, strerror(errno));
    return st.st_ino;
}

static off_t size_of(const char *dir, const char *name) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    struct stat st;
    cr_assert_eq(stat(p, &st), 0, "stat %s: %s", p, strerror(errno));
    return st.st_size;
}

static bool exists(const char *dir, const char *name) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* Reads a whole file (test-sized) into a malloc buffer; *len gets its size. */
static uint8_t *slurp(const char *dir, const char *name, size_t *len) {
    char p[4200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f, "open %s: %s", p, strerror(errno));
    uint8_t *b = malloc(1 << 20);
    *len = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

static void compact_every_flush(void) {
    __atomic_store_n(&sto__offset_compact_min, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sto__offset_compact_ratio, 0, __ATOMIC_RELAXED);
}

static uint64_t compactions(void) {
    return __atomic_load_n(&sto__offset_compactions, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- strace */

/*
 * strace's child: replaces files the way the layout does in service. Offset: the compaction at
 * open, one after a removal, one at close. Bucket: a bucket sealed when full, its meta rewritten
 * after a removal, the open bucket sealed at close. Exits 0, or the step that failed.
 */
static void child_run(const char *mode) {
    const char *dir = strchr(mode, ':');
    if (!dir)
        _exit(10);
    bool offset = strncmp(mode, "offset:", 7) == 0;
    struct sto_config cfg;
    sto_config_defaults(&cfg);
    snprintf(cfg.path, sizeof(cfg.path), "%s", dir + 1);
    cfg.backend = offset ? STO_BACKEND_OFFSET : STO_BACKEND_BUCKET;
    cfg.use_uring = 0;
    cfg.local_buffer_size = 8 * MIB;
    cfg.total_size_limit = 64 * MIB;
    cfg.bucket_keys_limit = 16;
    compact_every_flush();
    struct sto *s;
    char err[STO_ERR_LEN];
    if (sto_open(&cfg, NULL, &s, err, sizeof(err)))
        _exit(11);
    for (int i = 0; i < 20; i++)
        if (put_key(s, i, (uint64_t)i + 1))
            _exit(12);
    char k[32];
    key_of(k, 3);
    if (sto_remove(s, k, strlen(k)))
        _exit(13);
    sto_close(s);
    _exit(0);
}

/* Runs before Criterion: the strace run of this program does child_run's work only. */
__attribute__((constructor)) static void child_hook(void) {
    const char *mode = getenv(ENV_MODE);
    if (mode)
        child_run(mode);
}

/*
 * Runs this program under strace (syncs and renames, fds shown with their paths) doing
 * child_run(mode:dir) and returns the trace (caller frees) or skips when strace cannot run.
 */
static char *trace_child(const char *mode, const char *dir) {
    char *tdir = sto_test_mkdir();
    char out[4200], errf[4200], self[4096], env[4200];
    snprintf(out, sizeof(out), "%s/trace", tdir);
    snprintf(errf, sizeof(errf), "%s/stderr", tdir);
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    cr_assert_gt(n, 0, "readlink /proc/self/exe");
    self[n] = '\0';
    snprintf(env, sizeof(env), "%s:%s", mode, dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork");
    if (pid == 0) {
        setenv(ENV_MODE, env, 1);
        int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        execlp("strace", "strace", "-f", "-qq", "-y", "-e",
               "trace=fsync,fdatasync,rename,renameat,renameat2", "-o", out, self, (char *)NULL);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    char why[512] = "";
    FILE *ef = fopen(errf, "r");
    if (ef) {
        why[fread(why, 1, sizeof(why) - 1, ef)] = '\0';
        fclose(ef);
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        cr_skip_test("strace cannot run here");
    if (strstr(why, "strace: ") && strstr(why, "ptrace")) /* no ptrace in this sandbox */
        cr_skip_test("strace cannot trace here: %s", why);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s child: status %#x %s", mode, st, why);
    FILE *f = fopen(out, "r");
    cr_assert_not_null(f, "no trace at %s", out);
    char *text = calloc(1, 1 << 20);
    size_t len = fread(text, 1, (1 << 20) - 1, f);
    text[len] = '\0';
    fclose(f);
    sto_test_rmdir(tdir);
    return text;
}

/* The path strace printed for the fd of a sync line ("fsync(5</a/b>) = 0"), or "". */
static void sync_path(const char *line, char *out, size_t cap) {
    const char *a = strchr(line, '<'), *b = a ? strchr(a, '>') : NULL;
    out[0] = '\0';
    if (a && b)
        snprintf(out, cap, "%.*s", (int)(b - a - 1), a + 1);
}

/*
 * Checks the trace: every rename of "<x>.tmp" over "<x>" in dir succeeded, came after a sync of
 * dir/<x>.tmp (since the previous rename) and is followed directly by an fsync of dir. Returns
 * the number of renames.
 */
static int check_trace(char *text, const char *dir) {
    int renames = 0;
    char synced[4200] = "";
    bool want_dir_sync = false;
    char last_rename[300] = "";
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char path[4200];
        bool is_sync = strstr(line, "fsync(") || strstr(line, "fdatasync(");
        if (is_sync) {
            sync_path(line, path, sizeof(path));
            if (want_dir_sync) {
                cr_assert(strstr(line, "fsync(") && strcmp(path, dir) == 0 && strstr(line, ") = 0"),
                          "after the rename of %s the next sync is not an fsync of %s: %s",
                          last_rename, dir, line);
                want_dir_sync = false;
            }
            snprintf(synced, sizeof(synced), "%s", path);
            continue;
        }
        if (!strstr(line, "rename"))
            continue;
        cr_assert(!want_dir_sync, "rename of %s without a directory fsync before: %s", last_rename,
                  line);
        const char *q1 = strchr(line, '"'), *q2 = q1 ? strchr(q1 + 1, '"') : NULL;
        cr_assert(q1 && q2, "cannot parse %s", line);
        snprintf(last_rename, sizeof(last_rename), "%.*s", (int)(q2 - q1 - 1), q1 + 1);
        size_t l = strlen(last_rename);
        cr_assert(l > 4 && strcmp(last_rename + l - 4, ".tmp") == 0, "unexpected rename: %s", line);
        cr_assert(strstr(line, ") = 0"), "rename failed: %s", line);
        char want[4600];
        snprintf(want, sizeof(want), "%s/%s", dir, last_rename);
        cr_assert_str_eq(synced, want, "rename without a sync of the new file first: %s", line);
        synced[0] = '\0';
        want_dir_sync = true;
        renames++;
    }
    cr_assert(!want_dir_sync, "the last rename (%s) has no directory fsync after it", last_rename);
    return renames;
}

/* Offset layout: the compactions (at open, after a removal, at close) sync in the right order. */
Test(sto_durable, offset_compaction_syncs_around_rename, .timeout = 60) {
    char *dir = sto_test_mkdir();
    char *text = trace_child("offset", dir);
    int renames = check_trace(text, dir);
    cr_assert_geq(renames, 3, "journal replacements traced: %d, want open + removal + close",
                  renames);
    free(text);
    sto_test_rmdir(dir);
}

/* Bucket layout: sealing a full bucket, rewriting a meta after a removal, sealing at close. */
Test(sto_durable, bucket_meta_syncs_around_rename, .timeout = 60) {
    char *dir = sto_test_mkdir();
    char *text = trace_child("bucket", dir);
    int renames = check_trace(text, dir);
    cr_assert_geq(renames, 3, "meta replacements traced: %d, want seal + removal + close", renames);
    free(text);
    sto_test_rmdir(dir);
}

/* ---------------------------------------------------------------- failing syncs */

static struct sto *open_offset(struct sto_config *cfg, const char *dir) {
    sto_test_config(cfg, dir, STO_BACKEND_OFFSET, 0);
    cfg->total_size_limit = 64 * MIB;
    return sto_test_open(cfg);
}

/* A new offset-layout store in a new *dir that compacts at every flush, holding keys
 * 0..NKEYS-1 with the values of seeds base, base + 1, ... (recorded in seed[]). */
static struct sto *open_offset_filled(struct sto_config *cfg, char **dir, uint64_t *seed,
                                      uint64_t base) {
    compact_every_flush();
    *dir = sto_test_mkdir();
    struct sto *s = open_offset(cfg, *dir);
    for (int i = 0; i < NKEYS; i++) {
        seed[i] = base + (uint64_t)i;
        cr_assert_eq(put_key(s, i, seed[i]), 0);
    }
    return s;
}

#define JOURNAL "kv_cache.journal"

/*
 * Offset layout, the new journal's sync fails: the removal that triggered the compaction
 * reports -EIO (its DEL entry is appended all the same), the old journal stays in place with no
 * temporary left, every value reads back, puts and overwrites go on; a close (whose compaction
 * fails too) and a reopen lose nothing; once syncs work again compactions do too.
 */
Test(sto_durable, offset_compaction_file_sync_fails, .timeout = 60) {
    char *dir;
    struct sto_config cfg;
    uint64_t seed[NKEYS + 1] = {0};
    struct sto *s = open_offset_filled(&cfg, &dir, seed, 100);
    ino_t ino = inode_of(dir, JOURNAL);
    uint64_t c0 = compactions();

    fail_what = FAIL_FILE;
    n_failed = 0;
    char k[32];
    key_of(k, 0);
    int rc = sto_remove(s, k, strlen(k));
    cr_assert_eq(rc, -EIO, "remove during a failing compaction: %d", rc);
    seed[0] = 0;
    cr_assert_geq(n_failed, 1, "the new journal was never synced");
    cr_assert_eq(compactions(), c0, "a failed compaction counted");
    cr_assert_eq(inode_of(dir, JOURNAL), ino, "the journal was replaced");
    cr_assert(!exists(dir, JOURNAL ".tmp"), "the temporary journal was left behind");
    check_all(s, seed, NKEYS, "after the failed compaction");

    /* The store goes on: a new key, an overwrite (whose flush fails to compact again). */
    seed[NKEYS] = 7;
    cr_assert_eq(put_key(s, NKEYS, seed[NKEYS]), 0);
    seed[1] = 999;
    cr_assert_eq(put_key(s, 1, seed[1]), 0);
    check_all(s, seed, NKEYS + 1, "after puts with failing compactions");
    sto_close(s);
    cr_assert_eq(inode_of(dir, JOURNAL), ino, "the journal was replaced at close");

    fail_what = FAIL_NONE;
    s = sto_test_open(&cfg);
    check_all(s, seed, NKEYS + 1, "after a reopen");
    key_of(k, 2);
    uint64_t c1 = compactions();
    cr_assert_eq(sto_remove(s, k, strlen(k)), 0);
    seed[2] = 0;
    cr_assert_eq(compactions(), c1 + 1, "no compaction once syncs work");
    sto_close(s);
    s = sto_test_open(&cfg);
    check_all(s, seed, NKEYS + 1, "after the second reopen");
    sto_close(s);
    sto_test_rmdir(dir);
}

/*
 * Offset layout, the directory's sync after the rename fails: the error is returned, but the
 * new journal is in place and the store appends to it (not to the old, unlinked one), so a
 * later put survives a reopen.
 */
Test(sto_durable, offset_compaction_dir_sync_fails, .timeout = 60) {
    char *dir;
    struct sto_config cfg;
    uint64_t seed[NKEYS + 1] = {0};
    struct sto *s = open_offset_filled(&cfg, &dir, seed, 300);
    ino_t ino = inode_of(dir, JOURNAL);
    uint64_t c0 = compactions();

    fail_what = FAIL_DIR;
    n_failed = 0;
    char k[32];
    key_of(k, 0);
    int rc = sto_remove(s, k, strlen(k));
    fail_what = FAIL_NONE;
    cr_assert_eq(rc, -EIO, "remove whose compaction's directory sync failed: %d", rc);
    seed[0] = 0;
    cr_assert_eq(n_failed, 1, "directory syncs failed: %d", n_failed);
    cr_assert_eq(compactions(), c0 + 1, "the renamed journal is not counted as a compaction");
    cr_assert_neq(inode_of(dir, JOURNAL), ino, "the new journal is not in place");

    off_t before = size_of(dir, JOURNAL);
    seed[NKEYS] = 11;
    cr_assert_eq(put_key(s, NKEYS, seed[NKEYS]), 0);
    cr_assert_gt(size_of(dir, JOURNAL), before, "the put's entry did not reach the journal");
    check_all(s, seed, NKEYS + 1, "after the failed directory sync");
    sto_close(s);
    s = sto_test_open(&cfg);
    check_all(s, seed, NKEYS + 1, "after a reopen");
    sto_close(s);
    sto_test_rmdir(dir);
}

/* The name of the only "*.meta" file in dir (fails the test unless there is exactly one). */
static void only_meta(const char *dir, char *out, size_t cap) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l > 5 && strcmp(de->d_name + l - 5, ".meta") == 0) {
            snprintf(out, cap, "%s", de->d_name);
            n++;
        }
    }
    closedir(d);
    cr_assert_eq(n, 1, "meta files in %s: %d", dir, n);
}

/*
 * Bucket layout, meta syncs fail: a removal's meta rewrite and the seal of a full bucket report
 * -EIO, the old meta file stays as it was, the put that would have sealed fails cleanly (its key
 * absent, the others intact); once syncs work the next put seals and the close writes the meta
 * that failed, so a reopen holds every value and not the removed key.
 */
Test(sto_durable, bucket_meta_sync_fails, .timeout = 60) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_BUCKET, 0);
    cfg.bucket_keys_limit = 16;
    struct sto *s = sto_test_open(&cfg);
    uint64_t seed[32] = {0};
    for (int i = 0; i < 20; i++) { /* bucket 0 sealed with keys 0..15, bucket 1 open */
        seed[i] = 500 + (uint64_t)i;
        cr_assert_eq(put_key(s, i, seed[i]), 0);
    }
    char meta[300];
    only_meta(dir, meta, sizeof(meta));
    ino_t ino = inode_of(dir, meta);
    size_t len0, len1;
    uint8_t *m0 = slurp(dir, meta, &len0);

    fail_what = FAIL_FILE;
    n_failed = 0;
    char k[32];
    key_of(k, 0);
    int rc = sto_remove(s, k, strlen(k));
    cr_assert_eq(rc, -EIO, "remove whose meta rewrite fails: %d", rc);
    seed[0] = 0;
    cr_assert_geq(n_failed, 1, "the new meta file was never synced");
    cr_assert_eq(inode_of(dir, meta), ino, "the meta file was replaced");
    uint8_t *m1 = slurp(dir, meta, &len1);
    cr_assert(len1 == len0 && memcmp(m0, m1, len0) == 0, "the old meta file changed");
    free(m1);
    char tmp[320];
    snprintf(tmp, sizeof(tmp), "%s.tmp", meta);
    cr_assert(!exists(dir, tmp), "the temporary meta file was left behind");

    for (int i = 20; i < 31; i++) { /* bucket 1 gets its 15th record */
        seed[i] = 500 + (uint64_t)i;
        cr_assert_eq(put_key(s, i, seed[i]), 0, "put %d", i);
    }
    rc = put_key(s, 31, 531); /* its 16th seals it: the meta write fails */
    cr_assert_eq(rc, -EIO, "put that seals a bucket while syncs fail: %d", rc);
    check_all(s, seed, 32, "after the failed syncs");

    fail_what = FAIL_NONE;
    seed[31] = 532;
    cr_assert_eq(put_key(s, 31, seed[31]), 0);
    check_all(s, seed, 32, "after syncs work again");
    sto_close(s);
    s = sto_test_open(&cfg);
    check_all(s, seed, 32, "after a reopen");
    sto_close(s);
    free(m0);
    sto_test_rmdir(dir);
}

/*
 * Copies the store's files (not its lock) from dir into a new directory and returns it: what a
 * crash right now would leave behind, to be opened beside the running store.
 */
static char *crash_copy(const char *dir) {
    char *copy = sto_test_mkdir();
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *de;
    static uint8_t buf[1 << 16];
    while ((de = readdir(d)) != NULL) {
        char from[4200], to[4200];
        snprintf(from, sizeof(from), "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(from, &st) < 0 || !S_ISREG(st.st_mode) || strcmp(de->d_name, "sto.lock") == 0)
            continue;
        snprintf(to, sizeof(to), "%s/%s", copy, de->d_name);
        int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        cr_assert(in >= 0 && out >= 0, "copy %s: %s", from, strerror(errno));
        ssize_t n;
        while ((n = read(in, buf, sizeof(buf))) > 0)
            cr_assert_eq(write(out, buf, (size_t)n), n);
        close(in);
        close(out);
    }
    closedir(d);
    return copy;
}

/* Checks key k: absent when want is NULL, else holding want's len bytes. */
static void check_val(struct sto *s, const char *k, const uint8_t *want, size_t len,
                      const char *when) {
    static uint8_t got[MAXV];
    ssize_t n = sto_get(s, k, strlen(k), got, sizeof(got));
    if (!want) {
        cr_assert_eq(n, -CM_EOBJECT_NOT_FOUND, "%s: %s: get returns %zd, want not found", when, k,
                     n);
        return;
    }
    cr_assert_eq(n, (ssize_t)len, "%s: %s: get returns %zd, want %zu", when, k, n, len);
    cr_assert_eq(memcmp(want, got, len), 0, "%s: %s: bytes differ", when, k);
}

/*
 * Bucket layout, a commit into a sealed bucket whose meta rewrite's directory sync fails (the
 * review's case): a batch overwrites k0 (its flush seals the open bucket, syncs pass) and puts
 * "new", still in flight in that bucket, whose meta rewrite then renames but cannot sync the
 * directory. The new meta lists "new", so the put succeeds: it reads back at once, in a copy
 * of the directory taken right away (a crash), and after a close and reopen; the bucket was
 * left dirty, so the close writes its meta again and syncs the directory.
 */
Test(sto_durable, bucket_sealed_commit_dir_sync_fails, .timeout = 60) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_BUCKET, 0);
    cfg.bucket_keys_limit = 16;
    struct sto *s = sto_test_open(&cfg);
    static uint8_t v[5][4096], v0[4096], vn[4096];
    const char *keys[5] = {"k0", "k1", "k2", "k3", "k4"};
    for (int i = 0; i < 5; i++) {
        sto_test_fill(v[i], sizeof(v[i]), 100 + (uint64_t)i);
        cr_assert_eq(sto_put_buf(s, keys[i], 2, v[i], sizeof(v[i])), 0);
    }
    sto_test_fill(v0, sizeof(v0), 900);
    sto_test_fill(vn, sizeof(vn), 901);
    struct sto_put_item it[2] = {{"k0", 2, v0, sizeof(v0), 1}, {"new", 3, vn, sizeof(vn), 1}};
    fail_what = FAIL_DIR;
    n_pass = 1; /* the flush after k0's overwrite seals the bucket; the next one fails */
    n_failed = 0;
    sto_batch_put(s, it, 2);
    fail_what = FAIL_NONE;
    n_pass = 0;
    cr_assert_geq(n_failed, 1, "no directory sync failed");
    cr_assert_eq(it[0].result, 0, "overwrite of k0: %d", it[0].result);
    cr_assert_eq(it[1].result, 0, "put whose meta is in place (directory sync failed): %d",
                 it[1].result);

    char *copy = crash_copy(dir);
    struct sto_config ccfg;
    sto_test_config(&ccfg, copy, STO_BACKEND_BUCKET, 0);
    ccfg.bucket_keys_limit = 16;
    for (int round = 0; round < 3; round++) {
        const char *when = round == 0 ? "right after" : round == 1 ? "after a crash" : "reopened";
        struct sto *t = round == 1 ? sto_test_open(&ccfg) : s;
        check_val(t, "k0", v0, sizeof(v0), when);
        check_val(t, "new", vn, sizeof(vn), when);
        for (int i = 1; i < 5; i++)
            check_val(t, keys[i], v[i], sizeof(v[i]), when);
        if (round == 1) { /* then a clean close and a reopen of the store itself */
            sto_close(t);
            n_dir_ok = 0;
            sto_close(s);
            cr_assert_eq(n_dir_ok, 1, "the close synced the directory %d times, want once",
                         n_dir_ok);
            s = sto_test_open(&cfg);
        }
    }
    sto_close(s);
    sto_test_rmdir(copy);
    sto_test_rmdir(dir);
}

/*
 * Bucket layout, the put that fills the open bucket seals it and only the directory sync of
 * the new meta fails: the meta listing the put's record is in place, so the put returns 0 and
 * the bucket is sealed (the next put opens another). Its value reads back at once, in a copy of
 * the directory taken right away (a crash), and after a close and reopen.
 */
Test(sto_durable, bucket_seal_dir_sync_fails, .timeout = 60) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_BUCKET, 0);
    cfg.bucket_keys_limit = 16;
    struct sto *s = sto_test_open(&cfg);
    uint64_t seed[18] = {0};
    for (int i = 0; i < 15; i++) {
        seed[i] = 700 + (uint64_t)i;
        cr_assert_eq(put_key(s, i, seed[i]), 0);
    }
    fail_what = FAIL_DIR;
    n_failed = 0;
    seed[15] = 715;
    int rc = put_key(s, 15, seed[15]); /* the 16th record seals the bucket */
    fail_what = FAIL_NONE;
    cr_assert_eq(n_failed, 1, "directory syncs failed: %d", n_failed);
    cr_assert_eq(rc, 0, "put whose meta is in place (directory sync failed): %d", rc);
    char meta[300];
    only_meta(dir, meta, sizeof(meta));
    check_all(s, seed, 16, "right after");

    char *copy = crash_copy(dir);
    struct sto_config ccfg;
    sto_test_config(&ccfg, copy, STO_BACKEND_BUCKET, 0);
    ccfg.bucket_keys_limit = 16;
    struct sto *t = sto_test_open(&ccfg);
    check_all(t, seed, 16, "after a crash");
    sto_close(t);

    seed[16] = 716; /* the sealed bucket takes no more: a second bucket file appears */
    cr_assert_eq(put_key(s, 16, seed[16]), 0);
    cr_assert(exists(dir, "000000000001.bucket"), "the bucket was not sealed");
    check_all(s, seed, 17, "after the next put");
    sto_close(s);
    s = sto_test_open(&cfg);
    check_all(s, seed, 17, "after a reopen");
    sto_close(s);
    sto_test_rmdir(copy);
    sto_test_rmdir(dir);
}

/*
 * Bucket layout, a put whose record does not fit the open bucket seals it first (before its
 * own record is written) and only that meta's directory sync fails: the meta is in place, so
 * the bucket is sealed and the put goes on in a new bucket and returns 0. Every value reads
 * back at once, in a copy of the directory taken right away (a crash), and after a reopen.
 */
Test(sto_durable, bucket_alloc_seal_dir_sync_fails, .timeout = 60) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_BUCKET, 0);
    /* records of 3,000-byte values take 3 to 4 KiB (aligned): two fit, a third does not */
    cfg.bucket_size_limit = 9000;
    struct sto *s = sto_test_open(&cfg);
    static uint8_t v[3][3000];
    const char *keys[3] = {"a0", "a1", "a2"};
    for (int i = 0; i < 3; i++)
        sto_test_fill(v[i], sizeof(v[i]), 300 + (uint64_t)i);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(sto_put_buf(s, keys[i], 2, v[i], sizeof(v[i])), 0);
    cr_assert(!exists(dir, "000000000000.meta"), "the first bucket was sealed early");
    fail_what = FAIL_DIR;
    n_failed = 0;
    int rc = sto_put_buf(s, keys[2], 2, v[2], sizeof(v[2]));
    fail_what = FAIL_NONE;
    cr_assert_eq(n_failed, 1, "directory syncs failed: %d", n_failed);
    cr_assert_eq(rc, 0, "put after a seal whose directory sync failed: %d", rc);
    cr_assert(exists(dir, "000000000000.meta"), "the first bucket has no meta file");
    cr_assert(exists(dir, "000000000001.bucket"), "the put did not go to a new bucket");

    char *copy = crash_copy(dir);
    struct sto_config ccfg = cfg;
    snprintf(ccfg.path, sizeof(ccfg.path), "%s", copy);
    struct sto *t = sto_test_open(&ccfg);
    for (int i = 0; i < 3; i++) {
        check_val(s, keys[i], v[i], sizeof(v[i]), "right after");
        check_val(t, keys[i], v[i], sizeof(v[i]), "after a crash");
    }
    sto_close(t);
    sto_close(s);
    s = sto_test_open(&cfg);
    for (int i = 0; i < 3; i++)
        check_val(s, keys[i], v[i], sizeof(v[i]), "after a reopen");
    sto_close(s);
    sto_test_rmdir(copy);
    sto_test_rmdir(dir);
}
