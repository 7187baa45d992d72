/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Randomized model test of the pool: random sequences of puts, upserts, ends, revokes, reads,
 * removals, regex removals, batch replica clears, unmounts, client expiry and ticks, checked
 * against a simple model of every key and against pool_check()'s invariants (replicas on
 * distinct mounted segments and inside them, used bytes equal to the sum of the buffers, no
 * object without replicas). Objects may vanish only for a reason the model knows (eviction,
 * a lost segment, the zombie sweep); nothing may appear that the model does not expect.
 */
#include "common/fmacros.h"

#include "tests/unit/pool/pool_test.h"

#define NKEYS    48
#define NCLIENTS 3
#define SEG_SIZE (256 * 1024ull)

enum { M_ABSENT, M_INFLIGHT, M_COMPLETE };

struct mkey {
    int state;
    int writer; /* client number, 0 = orphaned */
    uint64_t size;
    int64_t start;       /* put start time */
    int64_t lease_until; /* read lease */
    int hard;
};

struct model {
    struct mkey keys[NKEYS];
    int alive[NCLIENTS + 1];
    int64_t last_ping[NCLIENTS + 1];
    int64_t now;
    uint64_t rng;
    uint64_t starts, nospace, preempted, expired, vanished; /* coverage counters */
};

static uint64_t mrand(struct model *m) {
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

static uint32_t mpick(struct model *m, uint32_t n) {
    return (uint32_t)(mrand(m) % n);
}

static const char *kname(int i) {
    static char buf[NKEYS][16];
    snprintf(buf[i], sizeof(buf[i]), "key:%02d", i);
    return buf[i];
}

static void mount_client(struct model *m, int c) {
    char name[32];
    for (int s = 0; s < 2; s++) {
        snprintf(name, sizeof(name), "seg%d.%d", c, s);
        int rc = pt_mount(c, name, 0x100000000ull * (uint64_t)(s + 1), SEG_SIZE, m->now);
        cr_assert_eq(rc, 0, "mount %s: %s", name, pool_err_name(rc));
    }
}

static void register_client(struct model *m, int c) {
    pt_client(c, c == 3 ? "hostB" : "hostA", m->now);
    m->alive[c] = 1;
    m->last_ping[c] = m->now;
    mount_client(m, c);
}

/*
 * Reconciles key i with the pool before an operation: an object may have vanished (evicted,
 * its segments lost, swept as a zombie), but never appear or change size behind the model.
 */
static void sync_key(struct model *m, int i) {
    struct mkey *k = &m->keys[i];
    struct pool_object_info info;
    int rc = pool_object_query(P, kname(i), strlen(kname(i)), &info);
    if (rc == POOL_EOBJECT_NOT_FOUND) {
        m->vanished += k->state != M_ABSENT;
        k->state = M_ABSENT;
        return;
    }
    cr_assert_eq(rc, 0);
    cr_assert_neq(k->state, M_ABSENT, "%s appeared from nowhere", kname(i));
    cr_assert_eq(info.size, k->size, "%s size", kname(i));
    cr_assert_eq(info.inflight, k->state == M_INFLIGHT, "%s in flight", kname(i));
    cr_assert_geq(info.nreplicas, 1);
    cr_assert_eq(info.hard_pinned, k->hard);
}

static void op_start(struct model *m, int i, int c, int upsert) {
    struct mkey *k = &m->keys[i];
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    cfg.replica_num = 1 + mpick(m, 3);
    cfg.with_hard_pin = mpick(m, 16) == 0;
    cfg.with_soft_pin = mpick(m, 4) == 0;
    uint64_t size = mpick(m, 4) == 0 && k->state == M_COMPLETE ? k->size : 1 + mpick(m, 30000);
    struct pool_uuid id = pt_id(c);
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd = 0;
    int rc = upsert ? pool_upsert_start(P, &id, kname(i), 6, size, &cfg, m->now, d, &nd)
                    : pool_put_start(P, &id, kname(i), 6, size, &cfg, m->now, d, &nd);
    if (!m->alive[c]) {
        cr_assert_eq(rc, POOL_ECLIENT_NOT_FOUND);
        return;
    }
    int preempt = k->state == M_INFLIGHT && m->now - k->start >= 30000;
    m->preempted += preempt && rc == 0;
    if (k->state == M_INFLIGHT && !preempt) {
        cr_assert_eq(rc, upsert ? POOL_EOBJECT_REPLICA_BUSY : POOL_EOBJECT_ALREADY_EXISTS);
        return;
    }
    if (k->state == M_COMPLETE && !upsert) {
        cr_assert_eq(rc, POOL_EOBJECT_ALREADY_EXISTS);
        return;
    }
    if (rc == POOL_ENO_AVAILABLE_HANDLE) {
        m->nospace++;
        if (upsert && k->state == M_COMPLETE)
            k->state = M_ABSENT; /* a reallocating upsert drops the old value first */
        sync_key(m, i);          /* an upsert that reallocates drops the old value first */
        return;
    }
    cr_assert_eq(rc, 0, "%s start: %s", kname(i), pool_err_name(rc));
    /* An in-place upsert keeps the replicas the object had. */
    int in_place = upsert && k->state == M_COMPLETE && k->size == size && k->lease_until <= m->now;
    cr_assert_geq(nd, 1);
    if (!in_place)
        cr_assert_leq(nd, cfg.replica_num);
    for (size_t a = 0; a < nd; a++) {
        cr_assert_eq(d[a].size, size);
        cr_assert_eq(pool_segment_check_range(P, d[a].segment, d[a].addr, size), 0);
        for (size_t b = 0; b < a; b++)
            cr_assert_str_neq(d[a].segment, d[b].segment, "distinct segments");
    }
    m->starts++;
    if (!in_place)
        k->hard = (upsert && k->state == M_COMPLETE) ? k->hard : cfg.with_hard_pin;
    k->state = M_INFLIGHT;
    k->writer = c;
    k->size = size;
    k->start = m->now;
    k->lease_until = 0;
}

static void op_end(struct model *m, int i, int c, int revoke) {
    struct mkey *k = &m->keys[i];
    struct pool_uuid id = pt_id(c);
    int rc = revoke ? pool_put_revoke(P, &id, kname(i), 6, m->now)
                    : pool_put_end(P, &id, kname(i), 6, m->now);
    if (k->state == M_ABSENT) {
        cr_assert_eq(rc, POOL_EOBJECT_NOT_FOUND);
    } else if (!m->alive[c]) {
        cr_assert_eq(rc, POOL_ECLIENT_NOT_FOUND);
    } else if (k->state == M_COMPLETE) {
        cr_assert_eq(rc, POOL_EINVALID_WRITE);
    } else if (k->writer != c) {
        cr_assert_eq(rc, POOL_EILLEGAL_CLIENT);
    } else {
        cr_assert_eq(rc, 0, "%s end: %s", kname(i), pool_err_name(rc));
        k->state = revoke ? M_ABSENT : M_COMPLETE;
        k->lease_until = 0;
    }
}

static void op_get(struct model *m, int i) {
    struct mkey *k = &m->keys[i];
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t nd;
    int rc = pt_get(kname(i), m->now, d, &nd);
    if (k->state == M_ABSENT) {
        cr_assert_eq(rc, POOL_EOBJECT_NOT_FOUND);
    } else if (k->state == M_INFLIGHT) {
        cr_assert_eq(rc, POOL_EREPLICA_IS_NOT_READY);
    } else {
        cr_assert_eq(rc, 0);
        cr_assert_geq(nd, 1);
        if (k->lease_until < m->now + 10000)
            k->lease_until = m->now + 10000;
    }
}

static void op_remove(struct model *m, int i, int force) {
    struct mkey *k = &m->keys[i];
    int rc = pt_remove(kname(i), force, m->now);
    if (k->state == M_ABSENT) {
        cr_assert_eq(rc, POOL_EOBJECT_NOT_FOUND);
    } else if (k->state == M_INFLIGHT) {
        cr_assert_eq(rc, POOL_EREPLICA_IS_NOT_READY);
    } else if (!force && (k->lease_until > m->now || k->hard)) {
        cr_assert_eq(rc, POOL_EOBJECT_HAS_LEASE);
    } else {
        cr_assert_eq(rc, 0);
        k->state = M_ABSENT;
    }
}

/* Removes keys whose number ends in digit r; checks the count against the model. */
static void op_regex(struct model *m, int force) {
    int r = (int)mpick(m, 10);
    char pattern[32];
    snprintf(pattern, sizeof(pattern), "^key:[0-9]%d$", r);
    long want = 0;
    for (int i = 0; i < NKEYS; i++) {
        sync_key(m, i);
        struct mkey *k = &m->keys[i];
        if (i % 10 != r || k->state != M_COMPLETE)
            continue;
        if (!force && (k->lease_until > m->now || k->hard))
            continue;
        want++;
        k->state = M_ABSENT;
    }
    cr_assert_eq(pool_remove_regex(P, pattern, force, m->now), want);
}

static void op_clear(struct model *m, int c) {
    const void *keys[NKEYS];
    size_t klens[NKEYS];
    for (int i = 0; i < NKEYS; i++) {
        keys[i] = kname(i);
        klens[i] = 6;
    }
    struct pool_uuid id = pt_id(c);
    long rc = pool_batch_replica_clear(P, &id, keys, klens, NKEYS, NULL, m->now, NULL);
    cr_assert(m->alive[c] ? rc >= 0 : rc == POOL_ECLIENT_NOT_FOUND);
}

/* Advances the clock; client 3 sometimes falls silent long enough to expire. */
static void op_time(struct model *m) {
    m->now += mpick(m, 4) == 0 ? 15000 : mpick(m, 3000);
    for (int c = 1; c <= NCLIENTS; c++) {
        if (!m->alive[c])
            continue;
        if (c == 3 && mpick(m, 3) == 0)
            continue; /* silent this time */
        struct pool_uuid id = pt_id(c);
        struct pool_ping_reply r;
        pool_client_ping(P, &id, m->now, &r);
        cr_assert_eq(r.status, POOL_CLIENT_OK);
        m->last_ping[c] = m->now;
    }
    struct pool_tick_report rep;
    pool_tick(P, m->now, &rep);
    uint32_t expired = 0;
    for (int c = 1; c <= NCLIENTS; c++) {
        if (m->alive[c] && m->now - m->last_ping[c] > 10000) {
            m->alive[c] = 0;
            expired++;
            m->expired++;
            for (int i = 0; i < NKEYS; i++)
                if (m->keys[i].state == M_INFLIGHT && m->keys[i].writer == c)
                    m->keys[i].writer = 0;
        }
    }
    cr_assert_eq(rep.clients_expired, expired);
    if (!m->alive[3] && mpick(m, 2) == 0)
        register_client(m, 3);
}

static void op_unmount(struct model *m) {
    int c = 1 + (int)mpick(m, NCLIENTS);
    if (!m->alive[c])
        return;
    char name[32];
    snprintf(name, sizeof(name), "seg%d.%d", c, (int)mpick(m, 2));
    struct pool_uuid id = pt_id(c);
    int rc = mpick(m, 2) ? pool_segment_unmount(P, &id, name, m->now)
                         : pool_segment_unmount_graceful(P, &id, name, 5000, m->now);
    /* Gone after a graceful unmount completed, or still gracefully unmounting. */
    cr_assert(rc == 0 || rc == POOL_ESEGMENT_NOT_FOUND || rc == POOL_EUNAVAILABLE_IN_CURRENT_STATUS,
              "unmount %s: %s", name, pool_err_name(rc));
    /* Remount later through a NEED_REMOUNT-style remount of everything (idempotent). */
    char a[32], b[32];
    snprintf(a, sizeof(a), "seg%d.0", c);
    snprintf(b, sizeof(b), "seg%d.1", c);
    struct pool_segment_spec specs[2] = {
        {.name = a, .base = 0x100000000ull, .size = SEG_SIZE},
        {.name = b, .base = 0x200000000ull, .size = SEG_SIZE},
    };
    rc = pool_segment_remount(P, &id, specs, 2, m->now);
    cr_assert_eq(rc, 0, "remount: %s", pool_err_name(rc));
    m->last_ping[c] = m->now; /* a remount counts as a sign of life */
}

static void run_model(uint64_t seed, int steps) {
    struct model m;
    memset(&m, 0, sizeof(m));
    m.rng = seed * 0x9e3779b97f4a7c15ull + 1;
    struct pool_config pc;
    pool_config_default(&pc);
    pc.seed = seed;
    pc.strategy = (enum pool_strategy)(seed % 3);
    pt_create(&pc);
    for (int c = 1; c <= NCLIENTS; c++)
        register_client(&m, c);
    for (int step = 0; step < steps; step++) {
        int i = (int)mpick(&m, NKEYS);
        int c = 1 + (int)mpick(&m, NCLIENTS);
        sync_key(&m, i);
        uint32_t op = mpick(&m, 100);
        if (op < 25)
            op_start(&m, i, c, 0);
        else if (op < 35)
            op_start(&m, i, c, 1);
        else if (op < 55)
            op_end(&m, i, m.keys[i].writer && mpick(&m, 4) ? m.keys[i].writer : c, 0);
        else if (op < 60)
            op_end(&m, i, m.keys[i].writer ? m.keys[i].writer : c, 1);
        else if (op < 75)
            op_get(&m, i);
        else if (op < 83)
            op_remove(&m, i, (int)mpick(&m, 2));
        else if (op < 92)
            op_time(&m);
        else if (op < 94)
            op_regex(&m, (int)mpick(&m, 2));
        else if (op < 96)
            op_clear(&m, c);
        else if (op < 97)
            op_unmount(&m);
        else
            m.now += 1;
        int rc = pool_check(P);
        cr_assert_eq(rc, 0, "invariants after step %d (seed %llu)", step, (unsigned long long)seed);
    }
    struct pool_stats st;
    pool_get_stats(P, &st);
    fprintf(stderr,
            "model seed %llu: %llu starts, %llu no-space, %llu pre-empted, %llu expiries, "
            "%llu vanished, %llu evicted\n",
            (unsigned long long)seed, (unsigned long long)m.starts, (unsigned long long)m.nospace,
            (unsigned long long)m.preempted, (unsigned long long)m.expired,
            (unsigned long long)m.vanished, (unsigned long long)st.evicted);
    cr_assert_gt(m.starts, 100);
    /* Drain: past every timeout with everyone alive, then remove everything. */
    for (int c = 1; c <= NCLIENTS; c++)
        if (!m.alive[c])
            register_client(&m, c);
    m.now += 700000;
    pt_ping(NCLIENTS, m.now);
    pool_tick(P, m.now, NULL);
    pool_remove_all(P, 1, m.now);
    pool_get_stats(P, &st);
    cr_assert_eq(st.objects, 0);
    cr_assert_eq(st.inflight, 0);
    cr_assert_eq(st.discarded, 0);
    cr_assert_eq(st.used, 0, "no leaked buffer (seed %llu)", (unsigned long long)seed);
    cr_assert_eq(st.allocated, 0, "allocators empty (seed %llu)", (unsigned long long)seed);
    cr_assert_eq(pool_check(P), 0);
    pt_destroy();
}

Test(pool_model, random_sequences_keep_the_invariants, .timeout = 120) {
    for (uint64_t seed = 1; seed <= 6; seed++)
        run_model(seed, 4000);
}
