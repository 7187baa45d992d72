/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offset layout's journal under concurrent writers: several threads put (single and
 * batch), overwrite and remove keys of their own while the journal is compacted at every flush
 * (sto__offset_compact_min and _ratio set to 0) or often, so compactions run between other
 * threads' reservations and commits. Afterwards every key must be in its last acknowledged
 * state, byte-exact: in a copy of the files taken before the close (a crash there), and after
 * a close and reopen; a second round on the reopened store (its allocator rebuilt from the
 * journal) and a second restart must hold too. A variant kills a writing child with SIGKILL:
 * every acknowledged operation must survive, and a key whose last operation was in flight must
 * be in the state before or after it.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "storage/sto_int.h"
#include "tests/unit/storage/sto_test.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NTHREADS 4
#define KEYS     16 /* keys of each thread */
#define OPS      1500
#define MAXV     (12 * 1024)

/* A value's length follows from its seed, which its first 8 bytes hold. */
static size_t len_of(uint64_t seed) {
    return 8 + (size_t)((seed * 2654435761u) % (MAXV - 8));
}

static void make_value(uint8_t *buf, uint64_t seed) {
    memcpy(buf, &seed, 8);
    sto_test_fill(buf + 8, len_of(seed) - 8, seed);
}

static void key_of(char *k, int t, int i) {
    snprintf(k, 32, "j%d-%d", t, i);
}

/* One operation, as a writer reports it: start (done 0) or completion (done 1). */
struct op_note {
    int8_t t, i, done, pad;
    uint32_t pad2;
    uint64_t seed; /* the value put, 0 for a removal */
};

struct writer {
    pthread_t tid;
    struct sto *s;
    int t;
    uint64_t seed[KEYS]; /* last acknowledged value, 0 when absent */
    unsigned rng;
    int fd;        /* -1, or where start and completion notes go (the SIGKILL variant) */
    int round;     /* seeds are unique across rounds */
    char err[160]; /* the first failure */
};

static unsigned next_rand(unsigned *x) {
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

static void note(struct writer *w, int i, int done, uint64_t seed) {
    if (w->fd < 0)
        return;
    struct op_note n = {.t = (int8_t)w->t, .i = (int8_t)i, .done = (int8_t)done, .seed = seed};
    if (write(w->fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
        _exit(5);
}

static uint64_t new_seed(struct writer *w, uint64_t *serial) {
    return ((uint64_t)(w->round + 1) << 48) | ((uint64_t)(w->t + 1) << 32) | ++*serial;
}

/* Reads key i back and compares it with the acknowledged state; 0 when it matches. */
static int check_key(struct sto *s, int t, int i, uint64_t want, uint8_t *buf, char *err,
                     size_t errlen) {
    char k[32];
    key_of(k, t, i);
    ssize_t n = sto_get(s, k, strlen(k), buf, MAXV);
    if (want == 0) {
        if (n != -CM_EOBJECT_NOT_FOUND)
            return snprintf(err, errlen, "%s: removed, yet %zd", k, n), -1;
        return 0;
    }
    if (n != (ssize_t)len_of(want))
        return snprintf(err, errlen, "%s: %zd bytes, want %zu", k, n, len_of(want)), -1;
    uint64_t seed;
    memcpy(&seed, buf, 8);
    if (seed != want)
        return snprintf(err, errlen, "%s: value %llx, want %llx", k, (unsigned long long)seed,
                        (unsigned long long)want),
               -1;
    uint8_t *v = malloc(MAXV);
    make_value(v, want);
    int same = memcmp(v, buf, (size_t)n) == 0;
    free(v);
    if (!same)
        return snprintf(err, errlen, "%s: bytes differ", k), -1;
    return 0;
}

static void *writer_main(void *arg) {
    struct writer *w = arg;
    uint8_t *vals = malloc(3 * MAXV), *got = malloc(MAXV);
    uint64_t serial = 0;
    for (int op = 0; op < OPS && !w->err[0]; op++) {
        unsigned what = next_rand(&w->rng) % 10;
        int i = (int)(next_rand(&w->rng) % KEYS);
        char k[3][32];
        key_of(k[0], w->t, i);
        if (what < 4) { /* put or overwrite */
            uint64_t seed = new_seed(w, &serial);
            make_value(vals, seed);
            note(w, i, 0, seed);
            int rc = sto_put_buf(w->s, k[0], strlen(k[0]), vals, len_of(seed));
            if (rc) {
                snprintf(w->err, sizeof(w->err), "put %s: %d", k[0], rc);
                break;
            }
            w->seed[i] = seed;
            note(w, i, 1, seed);
        } else if (what < 6) { /* batch put of up to 3 distinct keys */
            struct sto_put_item it[3];
            int idx[3], n = 0;
            uint64_t seeds[3];
            for (int j = 0; j < 3; j++) {
                int x = (i + j * 5) % KEYS;
                idx[n] = x;
                key_of(k[n], w->t, x);
                seeds[n] = new_seed(w, &serial);
                make_value(vals + (size_t)n * MAXV, seeds[n]);
                it[n] = (struct sto_put_item){.key = k[n],
                                              .klen = strlen(k[n]),
                                              .value = vals + (size_t)n * MAXV,
                                              .len = len_of(seeds[n])};
                note(w, x, 0, seeds[n]);
                n++;
            }
            int ok = sto_batch_put(w->s, it, (size_t)n);
            if (ok != n) {
                snprintf(w->err, sizeof(w->err), "batch put: %d of %d", ok, n);
                break;
            }
            for (int j = 0; j < n; j++) {
                w->seed[idx[j]] = seeds[j];
                note(w, idx[j], 1, seeds[j]);
            }
        } else if (what < 9) { /* remove */
            note(w, i, 0, 0);
            int rc = sto_remove(w->s, k[0], strlen(k[0]));
            int want = w->seed[i] ? 0 : -CM_EOBJECT_NOT_FOUND;
            if (rc != want) {
                snprintf(w->err, sizeof(w->err), "remove %s: %d, want %d", k[0], rc, want);
                break;
            }
            w->seed[i] = 0;
            note(w, i, 1, 0);
        } else if (check_key(w->s, w->t, i, w->seed[i], got, w->err, sizeof(w->err))) {
            break;
        }
    }
    free(got);
    free(vals);
    return NULL;
}

/* Runs the writers of one round on s; fails the test on a writer's error. */
static void run_round(struct sto *s, struct writer *w, int round, int fd) {
    for (int t = 0; t < NTHREADS; t++) {
        w[t].s = s;
        w[t].t = t;
        w[t].round = round;
        w[t].fd = fd;
        w[t].rng = 0x9e3779b9u * (unsigned)(t + 1) + (unsigned)round * 7919u;
        w[t].err[0] = '\0';
        cr_assert_eq(pthread_create(&w[t].tid, NULL, writer_main, &w[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(w[t].tid, NULL);
    for (int t = 0; t < NTHREADS; t++)
        cr_assert(!w[t].err[0], "writer %d: %s", t, w[t].err);
}

/* Asserts every key of every writer is in its acknowledged state and the store holds no more. */
static void check_all(struct sto *s, const struct writer *w, const char *when) {
    uint8_t *got = malloc(MAXV);
    char err[160];
    uint64_t live = 0;
    for (int t = 0; t < NTHREADS; t++) {
        for (int i = 0; i < KEYS; i++) {
            cr_assert_eq(check_key(s, t, i, w[t].seed[i], got, err, sizeof(err)), 0, "%s: %s", when,
                         err);
            live += w[t].seed[i] != 0;
        }
    }
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.keys, live, "%s: %llu keys, want %llu", when, (unsigned long long)st.keys,
                 (unsigned long long)live);
    cr_assert_eq(st.torn + st.corrupt, 0, "%s: torn %llu corrupt %llu", when,
                 (unsigned long long)st.torn, (unsigned long long)st.corrupt);
    free(got);
}

static uint64_t compactions(void) {
    return __atomic_load_n(&sto__offset_compactions, __ATOMIC_RELAXED);
}

/*
 * Copies the store's files as they are now (the writers are done) to a fresh directory and
 * checks the copy, which is what a crash at this point would leave: close() does not get to
 * write or compact anything first.
 */
static void check_crash_copy(const struct sto_config *cfg, const struct writer *w) {
    char *copy = sto_test_mkdir();
    char cmd[8400];
    snprintf(cmd, sizeof(cmd), "cp '%s/kv_cache.data' '%s/kv_cache.journal' '%s/'", cfg->path,
             cfg->path, copy);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    struct sto_config c2 = *cfg;
    snprintf(c2.path, sizeof(c2.path), "%s", copy);
    struct sto *s = sto_test_open(&c2);
    check_all(s, w, "in a copy taken before the close");
    sto_close(s);
    sto_test_rmdir(copy);
}

Test(sto_journal, concurrent_writers_compactions_restart, .timeout = 180) {
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_OFFSET, 1);
    cfg.total_size_limit = 16 * MIB;
    static struct writer w[NTHREADS];
    memset(w, 0, sizeof(w));
    struct sto *s = sto_test_open(&cfg);
    /* Round 0 compacts at every flush; round 1 (on the reopened store, its allocator rebuilt
     * from the journal) once the journal outgrows 4 x 128 bytes per live object. */
    for (int round = 0; round < 2; round++) {
        __atomic_store_n(&sto__offset_compact_min, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&sto__offset_compact_ratio, round == 0 ? 0 : 4, __ATOMIC_RELAXED);
        uint64_t c0 = compactions();
        run_round(s, w, round, -1);
        uint64_t nc = compactions() - c0;
        cr_assert_geq(nc, round == 0 ? 1000 : 10, "round %d: %llu compactions", round,
                      (unsigned long long)nc);
        check_all(s, w, "before the restart");
        check_crash_copy(&cfg, w);
        sto_close(s);
        s = sto_test_open(&cfg);
        check_all(s, w, "after the restart");
    }
    sto_close(s);
    sto_test_rmdir(dir);
}

/* Single-threaded: each put, overwrite and removal is in the journal once it returns, even
 * when every flush compacts (a crash copy after each step holds it). */
Test(sto_journal, each_step_is_journaled, .timeout = 60) {
    __atomic_store_n(&sto__offset_compact_min, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sto__offset_compact_ratio, 0, __ATOMIC_RELAXED);
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_OFFSET, 0);
    cfg.total_size_limit = 16 * MIB;
    static struct writer w[NTHREADS];
    memset(w, 0, sizeof(w));
    struct sto *s = sto_test_open(&cfg);
    uint8_t *v = malloc(MAXV);
    uint64_t serial = 0;
    for (int step = 0; step < 3 * KEYS; step++) {
        int i = step % KEYS;
        char k[32];
        key_of(k, 0, i);
        if (step < 2 * KEYS) { /* first a put of each key, then an overwrite */
            uint64_t seed = new_seed(&w[0], &serial);
            make_value(v, seed);
            cr_assert_eq(sto_put_buf(s, k, strlen(k), v, len_of(seed)), 0);
            w[0].seed[i] = seed;
        } else {
            cr_assert_eq(sto_remove(s, k, strlen(k)), 0);
            w[0].seed[i] = 0;
        }
        if (i % 5 == 0 || i == KEYS - 1)
            check_crash_copy(&cfg, w);
    }
    free(v);
    sto_close(s);
    sto_test_rmdir(dir);
}

/* The child of the SIGKILL variant: writers reporting to fd, forever. */
static void child(const struct sto_config *cfg, int fd) {
    struct sto *s;
    char err[STO_ERR_LEN];
    if (sto_open(cfg, NULL, &s, err, sizeof(err)))
        _exit(2);
    static struct writer w[NTHREADS];
    for (int round = 0;; round++) {
        for (int t = 0; t < NTHREADS; t++) {
            w[t].s = s;
            w[t].t = t;
            w[t].round = round;
            w[t].fd = fd;
            w[t].rng = 0x85ebca6bu * (unsigned)(t + 1) + (unsigned)round * 7919u;
            if (pthread_create(&w[t].tid, NULL, writer_main, &w[t]))
                _exit(3);
        }
        for (int t = 0; t < NTHREADS; t++) {
            pthread_join(w[t].tid, NULL);
            if (w[t].err[0])
                _exit(4);
        }
    }
}

Test(sto_journal, concurrent_writers_kill9, .timeout = 180) {
    __atomic_store_n(&sto__offset_compact_min, 0, __ATOMIC_RELAXED); /* every flush compacts */
    __atomic_store_n(&sto__offset_compact_ratio, 0, __ATOMIC_RELAXED);
    char *dir = sto_test_mkdir();
    struct sto_config cfg;
    sto_test_config(&cfg, dir, STO_BACKEND_OFFSET, 1);
    cfg.total_size_limit = 16 * MIB;
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        child(&cfg, p[1]);
    }
    close(p[1]);
    /* Per key: the acknowledged state, and the one of an operation in flight (started, not
     * acknowledged), if any. */
    static uint64_t acked[NTHREADS][KEYS], pending[NTHREADS][KEYS];
    static int in_flight[NTHREADS][KEYS];
    memset(acked, 0, sizeof(acked));
    memset(in_flight, 0, sizeof(in_flight));
    struct op_note n;
    long done = 0;
    while (read(p[0], &n, sizeof(n)) == (ssize_t)sizeof(n)) {
        cr_assert(n.t >= 0 && n.t < NTHREADS && n.i >= 0 && n.i < KEYS);
        if (n.done) {
            acked[n.t][n.i] = n.seed;
            in_flight[n.t][n.i] = 0;
            done++;
        } else {
            pending[n.t][n.i] = n.seed;
            in_flight[n.t][n.i] = 1;
        }
        if (done == 3000)
            cr_assert_eq(kill(pid, SIGKILL), 0);
    }
    int status;
    waitpid(pid, &status, 0);
    close(p[0]);
    cr_assert(WIFSIGNALED(status), "the child died on its own: %d", status);

    struct sto *s = sto_test_open(&cfg);
    uint8_t *got = malloc(MAXV);
    char err[160];
    for (int t = 0; t < NTHREADS; t++) {
        for (int i = 0; i < KEYS; i++) {
            if (check_key(s, t, i, acked[t][i], got, err, sizeof(err)) == 0)
                continue;
            cr_assert(in_flight[t][i], "after SIGKILL: %s", err);
            cr_assert_eq(check_key(s, t, i, pending[t][i], got, err, sizeof(err)), 0,
                         "after SIGKILL, neither the acknowledged state nor the one in flight: "
                         "%s",
                         err);
        }
    }
    struct sto_stats st;
    sto_stats(s, &st);
    cr_assert_eq(st.corrupt, 0);
    sto_close(s);
    free(got);
    sto_test_rmdir(dir);
}
