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

#include "common/cm_log.h"
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
    int task;           /* 0, 1 = copy, 2 = move in flight */
    int task_owner;     /* client number, 0 = orphaned */
    uint64_t seen_loss; /* loss_epoch at the last sync */
};

struct model {
    struct mkey keys[NKEYS];
    int alive[NCLIENTS + 1];
    int64_t last_ping[NCLIENTS + 1];
    int64_t now;
    uint64_t rng;
    uint64_t loss_epoch; /* bumped by every event that may drop replicas of any object */
    uint64_t starts, nospace, preempted, expired, vanished, tasks, task_ends; /* coverage */
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
    int lost_segments = m->loss_epoch != k->seen_loss;
    k->seen_loss = m->loss_epoch;
    if (rc == POOL_EOBJECT_NOT_FOUND) {
        if (k->state != M_ABSENT) {
            /* Eviction never takes hard-pinned, leased or copying objects; writes go only by
             * the sweep. Anything else needs a lost segment. */
            int zombie = k->state == M_INFLIGHT && m->now - k->start >= 600000;
            int protected_ =
                k->state == M_INFLIGHT ? !zombie : (k->hard || k->lease_until > m->now || k->task);
            cr_assert(!protected_ || lost_segments, "%s vanished without a cause", kname(i));
            m->vanished++;
        }
        k->state = M_ABSENT;
        k->task = 0;
        return;
    }
    cr_assert_eq(rc, 0);
    cr_assert_neq(k->state, M_ABSENT, "%s appeared from nowhere", kname(i));
    cr_assert_eq(info.size, k->size, "%s size", kname(i));
    cr_assert_eq(info.inflight, k->state == M_INFLIGHT, "%s in flight", kname(i));
    cr_assert_geq(info.nreplicas, 1);
    cr_assert_eq(info.hard_pinned, k->hard);
    if (info.task == 0)
        k->task = 0; /* revoked: its source or segments went away, or the sweep took it */
    cr_assert_eq(info.task, k->task, "%s task", kname(i));
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
    if (k->state == M_COMPLETE && k->task) {
        cr_assert_eq(rc, POOL_EOBJECT_HAS_REPLICATION_TASK);
        return;
    }
    if (rc == POOL_ENO_AVAILABLE_HANDLE) {
        m->nospace++;
        if ((upsert && k->state == M_COMPLETE) || preempt)
            k->state = M_ABSENT; /* the old value / zombie write went before the allocation */
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
    } else if (!force && k->task) {
        cr_assert_eq(rc, POOL_EOBJECT_HAS_REPLICATION_TASK);
    } else if (!force && (k->lease_until > m->now || k->hard)) {
        cr_assert_eq(rc, POOL_EOBJECT_HAS_LEASE);
    } else {
        cr_assert_eq(rc, 0);
        k->state = M_ABSENT;
        k->task = 0;
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
        if (!force && (k->lease_until > m->now || k->hard || k->task))
            continue;
        want++;
        k->state = M_ABSENT;
        k->task = 0;
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
    m->loss_epoch++;
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
    if (rep.clients_expired || rep.segments_unmounted)
        m->loss_epoch++;
    uint32_t expired = 0;
    for (int c = 1; c <= NCLIENTS; c++) {
        if (m->alive[c] && m->now - m->last_ping[c] > 10000) {
            m->alive[c] = 0;
            expired++;
            m->expired++;
            for (int i = 0; i < NKEYS; i++) {
                if (m->keys[i].state == M_INFLIGHT && m->keys[i].writer == c)
                    m->keys[i].writer = 0;
                if (m->keys[i].task && m->keys[i].task_owner == c)
                    m->keys[i].task_owner = 0;
            }
        }
    }
    cr_assert_eq(rep.clients_expired, expired);
    if (!m->alive[3] && mpick(m, 2) == 0)
        register_client(m, 3);
}

/* Starts a copy or a move of key i from its first replica to a random segment. */
static void op_task(struct model *m, int i, int c) {
    for (int j = 0; j < NKEYS && mpick(m, 4); j++) { /* mostly a readable key */
        if (m->keys[(i + j) % NKEYS].state == M_COMPLETE && !m->keys[(i + j) % NKEYS].task) {
            i = (i + j) % NKEYS;
            sync_key(m, i);
            break;
        }
    }
    struct mkey *k = &m->keys[i];
    struct pool_object_info info;
    const char *src = "seg1.0";
    if (pool_object_query(P, kname(i), 6, &info) == 0)
        src = info.replicas[0].segment;
    /* Mostly a segment that holds no replica of the key yet. */
    char tgt[32];
    uint32_t start = mpick(m, 2 * NCLIENTS);
    for (uint32_t t = 0; t < 2 * NCLIENTS; t++) {
        uint32_t s = (start + t) % (2 * NCLIENTS);
        snprintf(tgt, sizeof(tgt), "seg%u.%u", 1 + s / 2, s % 2);
        int held = 0;
        for (uint32_t r = 0; r < info.nreplicas && k->state == M_COMPLETE; r++)
            held |= strcmp(info.replicas[r].segment, tgt) == 0;
        if (!held || mpick(m, 8) == 0)
            break;
    }
    int move = (int)mpick(m, 2);
    struct pool_uuid id = pt_id(c);
    struct pool_copy_plan plan;
    const char *tgts[1] = {tgt};
    int rc = move ? pool_move_start(P, &id, kname(i), 6, src, tgt, m->now, &plan)
                  : pool_copy_start(P, &id, kname(i), 6, src, tgts, 1, m->now, &plan);
    if (move && strcmp(src, tgt) == 0) {
        cr_assert_eq(rc, POOL_EINVALID_PARAMS);
    } else if (!m->alive[c]) {
        cr_assert(rc == POOL_ECLIENT_NOT_FOUND || rc == POOL_EINVALID_PARAMS);
    } else if (k->state == M_ABSENT) {
        cr_assert_eq(rc, POOL_EOBJECT_NOT_FOUND);
    } else if (k->state == M_INFLIGHT) {
        cr_assert_eq(rc, POOL_EREPLICA_IS_NOT_READY);
    } else if (k->task) {
        cr_assert_eq(rc, POOL_EOBJECT_HAS_REPLICATION_TASK);
    } else if (rc == 0) {
        cr_assert_str_eq(plan.source.segment, src);
        cr_assert_str_eq(plan.targets[0].segment, tgt);
        cr_assert_eq(plan.targets[0].size, k->size);
        k->task = move ? 2 : 1;
        k->task_owner = c;
        m->tasks++;
    } else {
        cr_assert(rc == POOL_EOBJECT_ALREADY_EXISTS || rc == POOL_ESEGMENT_NOT_FOUND ||
                      rc == POOL_ENO_AVAILABLE_HANDLE || rc == POOL_EINVALID_PARAMS,
                  "%s task start: %s", kname(i), pool_err_name(rc));
    }
}

/* Ends or revokes a task (mostly of a key that has one), sometimes with the wrong call. */
static void op_task_end(struct model *m, int i, int c, int revoke) {
    for (int j = 0; j < NKEYS && mpick(m, 4); j++) {
        if (m->keys[(i + j) % NKEYS].task) {
            i = (i + j) % NKEYS;
            sync_key(m, i);
            if (m->keys[i].task_owner && mpick(m, 4))
                c = m->keys[i].task_owner;
            break;
        }
    }
    struct mkey *k = &m->keys[i];
    int move = k->task ? (k->task == 2) ^ (mpick(m, 8) == 0) : (int)mpick(m, 2);
    struct pool_object_info info;
    uint32_t targets = 0;
    if (pool_object_query(P, kname(i), 6, &info) == 0)
        for (uint32_t r = 0; r < info.nreplicas; r++)
            targets += info.replicas[r].status == POOL_REPLICA_PROCESSING;
    struct pool_uuid id = pt_id(c);
    int rc;
    if (move)
        rc = revoke ? pool_move_revoke(P, &id, kname(i), 6, m->now)
                    : pool_move_end(P, &id, kname(i), 6, m->now);
    else
        rc = revoke ? pool_copy_revoke(P, &id, kname(i), 6, m->now)
                    : pool_copy_end(P, &id, kname(i), 6, m->now);
    if (k->state == M_ABSENT) {
        cr_assert_eq(rc, POOL_EOBJECT_NOT_FOUND);
    } else if (!m->alive[c]) {
        cr_assert_eq(rc, POOL_ECLIENT_NOT_FOUND);
    } else if (!k->task || (k->task == 2) != move) {
        cr_assert_eq(rc, POOL_EOBJECT_NO_REPLICATION_TASK);
    } else if (k->task_owner != c) {
        cr_assert_eq(rc, POOL_EILLEGAL_CLIENT);
    } else if (!revoke && targets == 0) {
        cr_assert_eq(rc, POOL_EREPLICA_NOT_FOUND, "targets lost");
        k->task = 0;
    } else {
        cr_assert_eq(rc, 0, "%s task end: %s", kname(i), pool_err_name(rc));
        k->task = 0;
        m->task_ends++;
    }
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
    m->loss_epoch++;
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
    cm_log_open(NULL, 'T'); /* pool_check names the violated invariant on stderr */
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
        if (op < 22)
            op_start(&m, i, c, 0);
        else if (op < 31)
            op_start(&m, i, c, 1);
        else if (op < 49)
            op_end(&m, i, m.keys[i].writer && mpick(&m, 4) ? m.keys[i].writer : c, 0);
        else if (op < 53)
            op_end(&m, i, m.keys[i].writer ? m.keys[i].writer : c, 1);
        else if (op < 66)
            op_get(&m, i);
        else if (op < 73)
            op_remove(&m, i, (int)mpick(&m, 2));
        else if (op < 82)
            op_time(&m);
        else if (op < 84)
            op_regex(&m, (int)mpick(&m, 2));
        else if (op < 86)
            op_clear(&m, c);
        else if (op < 87)
            op_unmount(&m);
        else if (op < 93)
            op_task(&m, i, m.keys[i].task_owner && mpick(&m, 2) ? m.keys[i].task_owner : c);
        else if (op < 99)
            op_task_end(&m, i, m.keys[i].task_owner && mpick(&m, 4) ? m.keys[i].task_owner : c,
                        (int)mpick(&m, 3) == 0);
        else
            m.now += 1 + mpick(&m, 5);
        int rc = pool_check(P);
        cr_assert_eq(rc, 0, "invariants after step %d (seed %llu)", step, (unsigned long long)seed);
    }
    struct pool_stats st;
    pool_get_stats(P, &st);
    fprintf(stderr,
            "model seed %llu: %llu starts, %llu no-space, %llu pre-empted, %llu expiries, "
            "%llu vanished, %llu evicted, %llu copy/move started, %llu ended\n",
            (unsigned long long)seed, (unsigned long long)m.starts, (unsigned long long)m.nospace,
            (unsigned long long)m.preempted, (unsigned long long)m.expired,
            (unsigned long long)m.vanished, (unsigned long long)st.evicted,
            (unsigned long long)m.tasks, (unsigned long long)m.task_ends);
    cr_assert_gt(m.starts, 100);
    cr_assert_gt(m.tasks, 0);
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
    for (uint64_t seed = 1; seed <= 10; seed++)
        run_model(seed, 6000);
}
