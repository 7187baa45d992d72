/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pub/sub core: the subscription registry (channels, patterns, shard channels), message
 * delivery across event-loop threads through per-loop inboxes, and the output-buffer limits of
 * the normal and pubsub client classes (client-output-buffer-limit).
 *
 * DESIGN: PUBLISH encodes each message once in RESP2 form; a RESP3 subscriber gets the same
 * bytes with the leading '*' turned into '>' (a push). A subscriber of the publishing thread
 * gets the bytes appended to its output at once; one of another loop gets them through that
 * loop's inbox, drained by the loop's wake hook. A subscriber whose output passes its class's
 * limit is marked, gets no more messages and is closed by its own loop, as in Redis.
 */
#include "common/fmacros.h"

#include "server/srv_pubsub.h"

#include "server/srv_client.h"
#include "server/srv_net_int.h"
#include "server/srv_pubsub_int.h"
#include "server/srv_server.h"

#include "common/cm_atomic.h"
#include "common/cm_glob.h"
#include "common/cm_hash.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "common/cm_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static pthread_rwlock_t srv_ps_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct cm_ht srv_ps_tab[SRV_PS_NKINDS]; /* struct srv_ps_chan by name */
static int srv_ps_ready;
static __thread struct srv_worker *srv_ps_self;
_Atomic long srv_pubsub_nsubs;

/* ---------------------------------------------------------------- inboxes */

/* A message queued for a client of another loop: len bytes of the inbox buffer. */
struct srv_ps_item {
    struct srv_client *c; /* NULL once the client closed */
    size_t len;
};

/* Messages other threads queued for one loop's clients. */
struct srv_ps_inbox {
    pthread_mutex_t mu;
    struct cm_buf buf; /* queued bytes (mu) */
    struct srv_ps_item *items;
    size_t n, cap;
    /* Owned by the loop thread: the batch being delivered, swapped with the above. */
    struct cm_buf dbuf;
    struct srv_ps_item *ditems;
    size_t dcap;
};

static struct srv_ps_inbox *srv_ps_inboxes;
static unsigned srv_ps_ninboxes;

/* ---------------------------------------------------------------- output limits */

/* One class of client-output-buffer-limit. */
struct srv_obl {
    long long hard, soft, secs;
};

/* normal, replica (accepted, unused: Crescent has no replicas), pubsub. */
static struct srv_obl srv_obl_normal, srv_obl_replica, srv_obl_pubsub = {32 << 20, 8 << 20, 60};
static const char srv_obl_default[] = "normal 0 0 0 slave 268435456 67108864 60 "
                                      "pubsub 33554432 8388608 60";

/* Parses "class hard soft secs ..." into the three classes (only on success). 0 or -EINVAL. */
static int srv_obl_parse(const char *spec, char *err, size_t errlen) {
    struct srv_obl cls[3] = {srv_obl_normal, srv_obl_replica, srv_obl_pubsub};
    char copy[512], *words[32];
    int n = 0;
    snprintf(copy, sizeof(copy), "%s", spec ? spec : "");
    for (char *save = NULL, *t = strtok_r(copy, " \t", &save); t && n < 32;
         t = strtok_r(NULL, " \t", &save))
        words[n++] = t;
    long long one;
    if (n == 1 && cm_parse_memory(words[0], &one) == 0 && one >= 0) {
        cls[0].hard = one; /* Crescent's older form: the normal class's hard limit */
    } else {
        if (n == 0 || n % 4 != 0) {
            snprintf(err, errlen, "Wrong number of arguments in buffer limit configuration.");
            return -EINVAL;
        }
        for (int i = 0; i < n; i += 4) {
            int k = strcasecmp(words[i], "normal") == 0    ? 0
                    : strcasecmp(words[i], "slave") == 0   ? 1
                    : strcasecmp(words[i], "replica") == 0 ? 1
                    : strcasecmp(words[i], "pubsub") == 0  ? 2
                                                           : -1;
            long long h, s, t;
            if (k < 0) {
                snprintf(err, errlen,
                         "Invalid client class specified in buffer limit "
                         "configuration.");
                return -EINVAL;
            }
            if (cm_parse_memory(words[i + 1], &h) < 0 || cm_parse_memory(words[i + 2], &s) < 0 ||
                cm_str2ll(words[i + 3], strlen(words[i + 3]), &t) < 0 || h < 0 || s < 0 || t < 0) {
                snprintf(err, errlen,
                         "Error in hard, soft or soft_seconds setting in buffer "
                         "limit configuration.");
                return -EINVAL;
            }
            cls[k] = (struct srv_obl){h, s, t};
        }
    }
    srv_obl_normal = cls[0];
    srv_obl_replica = cls[1];
    srv_obl_pubsub = cls[2];
    srv_cfg.client_output_buffer_limit = srv_obl_normal.hard;
    return 0;
}

/* The canonical text of the three classes, as CONFIG GET shows it. Caller frees. */
static char *srv_obl_text(void) {
    char buf[256];
    snprintf(buf, sizeof(buf), "normal %lld %lld %lld slave %lld %lld %lld pubsub %lld %lld %lld",
             srv_obl_normal.hard, srv_obl_normal.soft, srv_obl_normal.secs, srv_obl_replica.hard,
             srv_obl_replica.soft, srv_obl_replica.secs, srv_obl_pubsub.hard, srv_obl_pubsub.soft,
             srv_obl_pubsub.secs);
    return cm_strdup(buf);
}

int srv_pubsub_apply_obl(const struct cm_cfg_entry *e, char *err, size_t errlen) {
    char **var = e->ptr;
    if (srv_obl_parse(*var, err, errlen) < 0)
        return -1;
    cm_free(*var);
    *var = srv_obl_text();
    return 0;
}

int srv_pubsub_obuf_over(struct srv_client *c) {
    const struct srv_obl *l =
        (c->ps && srv_pubsub__nsubs(c) > 0) ? &srv_obl_pubsub : &srv_obl_normal;
    size_t used = srv_client_pending(c);
    if (l->hard > 0 && used > (size_t)l->hard)
        return 1;
    if (l->soft <= 0 || used <= (size_t)l->soft) {
        if (c->ps)
            c->ps->soft_since_ms = 0;
        return 0;
    }
    if (!c->ps)
        return l->secs == 0; /* normal clients keep no soft-limit clock: only 0 s applies */
    uint64_t now = cm_mono_ms();
    if (c->ps->soft_since_ms == 0) {
        c->ps->soft_since_ms = now;
        return l->secs == 0;
    }
    return now - c->ps->soft_since_ms >= (uint64_t)l->secs * 1000;
}

/* ---------------------------------------------------------------- set-up */

int srv_pubsub_init(unsigned nworkers, char *err, size_t errlen) {
    if (srv_obl_parse(srv_obl_default, err, errlen) < 0 ||
        srv_obl_parse(srv_cfg.client_obuf_spec, err, errlen) < 0)
        return -EINVAL;
    cm_free(srv_cfg.client_obuf_spec);
    srv_cfg.client_obuf_spec = srv_obl_text();
    srv_notify__publish = srv_pubsub_publish;
    int rc = srv_pubsub__config_init(err, errlen);
    if (rc < 0)
        return rc;
    if (!srv_ps_ready) {
        for (int k = 0; k < SRV_PS_NKINDS; k++)
            cm_ht_init(&srv_ps_tab[k], 64);
        srv_ps_ready = 1;
    }
    srv_ps_inboxes = cm_calloc(nworkers ? nworkers : 1, sizeof(*srv_ps_inboxes));
    srv_ps_ninboxes = nworkers;
    for (unsigned i = 0; i < nworkers; i++) {
        pthread_mutex_init(&srv_ps_inboxes[i].mu, NULL);
        cm_buf_init(&srv_ps_inboxes[i].buf);
        cm_buf_init(&srv_ps_inboxes[i].dbuf);
    }
    return 0;
}

void srv_pubsub_thread_init(struct srv_worker *w) {
    srv_ps_self = w;
}

/* ---------------------------------------------------------------- registry */

static int srv_ps_chan_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct srv_ps_chan *ch = (const struct srv_ps_chan *)n;
    return ch->len == klen && memcmp(ch->name, key, klen) == 0;
}

static int srv_ps_member_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    (void)klen;
    return ((const struct srv_ps_member *)n)->ch == key;
}

static uint64_t srv_ps_ptr_hash(const void *p) {
    return cm_hash64(&p, sizeof(p), 0x51ed27u);
}

struct srv_ps_chan *srv_pubsub__find(int kind, const char *name, size_t len) {
    return (struct srv_ps_chan *)cm_ht_find(&srv_ps_tab[kind], cm_hash64(name, len, 0), name, len,
                                            srv_ps_chan_eq);
}

size_t srv_pubsub__count(int kind) {
    return cm_ht_count(&srv_ps_tab[kind]);
}

/* Visits every node of t without touching it (cm_ht_foreach writes t, which readers sharing
 * the registry lock must not do). cb must not change t. */
static void srv_ps_walk(const struct cm_ht *t, cm_ht_visit_cb *cb, void *arg) {
    for (size_t i = 0; i <= t->mask; i++)
        for (struct cm_ht_node *n = t->buckets[i]; n; n = n->next)
            cb(n, arg);
}

void srv_pubsub__foreach(int kind, cm_ht_visit_cb *cb, void *arg) {
    srv_ps_walk(&srv_ps_tab[kind], cb, arg);
}

void srv_pubsub_totals(size_t *channels, size_t *patterns, size_t *shard_channels) {
    *channels = *patterns = *shard_channels = 0;
    if (!srv_ps_ready)
        return;
    srv_pubsub__rdlock();
    *channels = cm_ht_count(&srv_ps_tab[SRV_PS_CHANNEL]);
    *patterns = cm_ht_count(&srv_ps_tab[SRV_PS_PATTERN]);
    *shard_channels = cm_ht_count(&srv_ps_tab[SRV_PS_SHARD]);
    srv_pubsub__unlock();
}

void srv_pubsub__rdlock(void) {
    pthread_rwlock_rdlock(&srv_ps_lock);
}

void srv_pubsub__wrlock(void) {
    pthread_rwlock_wrlock(&srv_ps_lock);
}

void srv_pubsub__unlock(void) {
    pthread_rwlock_unlock(&srv_ps_lock);
}

int srv_pubsub__nsubs(const struct srv_client *c) {
    if (!c->ps)
        return 0;
    return (int)(cm_ht_count(&c->ps->mine[SRV_PS_CHANNEL]) +
                 cm_ht_count(&c->ps->mine[SRV_PS_PATTERN]) +
                 cm_ht_count(&c->ps->mine[SRV_PS_SHARD]));
}

void srv_pubsub__counts(const struct srv_client *c, int *sub, int *psub, int *ssub) {
    *sub = c->ps ? (int)cm_ht_count(&c->ps->mine[SRV_PS_CHANNEL]) : 0;
    *psub = c->ps ? (int)cm_ht_count(&c->ps->mine[SRV_PS_PATTERN]) : 0;
    *ssub = c->ps ? (int)cm_ht_count(&c->ps->mine[SRV_PS_SHARD]) : 0;
}

int srv_pubsub_subscribed(const struct srv_client *c) {
    return srv_pubsub__nsubs(c) > 0;
}

void srv_pubsub_counts(const struct srv_client *c, int *sub, int *psub, int *ssub) {
    srv_pubsub__rdlock(); /* c->ps changes only under the exclusive lock */
    srv_pubsub__counts(c, sub, psub, ssub);
    srv_pubsub__unlock();
}

int srv_pubsub__add(struct srv_client *c, int kind, const char *name, size_t len) {
    if (!c->ps) {
        c->ps = cm_calloc(1, sizeof(*c->ps));
        for (int k = 0; k < SRV_PS_NKINDS; k++)
            cm_ht_init(&c->ps->mine[k], 4);
    }
    uint64_t h = cm_hash64(name, len, 0);
    struct srv_ps_chan *ch =
        (struct srv_ps_chan *)cm_ht_find(&srv_ps_tab[kind], h, name, len, srv_ps_chan_eq);
    if (ch && cm_ht_find(&c->ps->mine[kind], srv_ps_ptr_hash(ch), ch, 0, srv_ps_member_eq))
        return 0;
    if (!ch) {
        ch = cm_calloc(1, sizeof(*ch) + len + 1);
        memcpy(ch->name, name, len);
        ch->len = len;
        ch->hn.hash = h;
        cm_ht_insert(&srv_ps_tab[kind], &ch->hn);
    }
    if (ch->n == ch->cap) {
        ch->cap = ch->cap ? ch->cap * 2 : 4;
        ch->subs = cm_realloc(ch->subs, ch->cap * sizeof(*ch->subs));
    }
    ch->subs[ch->n++] = c;
    struct srv_ps_member *m = cm_malloc(sizeof(*m));
    m->ch = ch;
    m->hn.hash = srv_ps_ptr_hash(ch);
    cm_ht_insert(&c->ps->mine[kind], &m->hn);
    cm_atomic_add_relaxed(&srv_pubsub_nsubs, 1);
    return 1;
}

/* Unlinks membership m of c (kind) and frees the channel when it has no subscriber left. */
static void srv_ps_unlink(struct srv_client *c, int kind, struct srv_ps_member *m) {
    struct srv_ps_chan *ch = m->ch;
    for (uint32_t i = 0; i < ch->n; i++) {
        if (ch->subs[i] == c) {
            memmove(&ch->subs[i], &ch->subs[i + 1], (ch->n - i - 1) * sizeof(*ch->subs));
            ch->n--;
            break;
        }
    }
    cm_ht_remove(&c->ps->mine[kind], &m->hn);
    cm_free(m);
    cm_atomic_sub_relaxed(&srv_pubsub_nsubs, 1);
    if (ch->n == 0) {
        cm_ht_remove(&srv_ps_tab[kind], &ch->hn);
        cm_free(ch->subs);
        cm_free(ch);
    }
}

int srv_pubsub__remove(struct srv_client *c, int kind, const char *name, size_t len) {
    if (!c->ps)
        return 0;
    struct srv_ps_chan *ch = srv_pubsub__find(kind, name, len);
    if (!ch)
        return 0;
    struct srv_ps_member *m = (struct srv_ps_member *)cm_ht_find(
        &c->ps->mine[kind], srv_ps_ptr_hash(ch), ch, 0, srv_ps_member_eq);
    if (!m)
        return 0;
    srv_ps_unlink(c, kind, m);
    return 1;
}

/* Collects the names of c's subscriptions of one kind (for UNSUBSCRIBE without arguments). */
struct srv_ps_names {
    struct cm_buf *out;
    size_t n;
};

static void srv_ps_name_cb(struct cm_ht_node *node, void *arg) {
    struct srv_ps_names *nm = arg;
    const struct srv_ps_chan *ch = ((struct srv_ps_member *)node)->ch;
    cm_buf_append(nm->out, &ch->len, sizeof(ch->len));
    cm_buf_append(nm->out, ch->name, ch->len);
    nm->n++;
}

size_t srv_pubsub__names(struct srv_client *c, int kind, struct cm_buf *out) {
    struct srv_ps_names nm = {out, 0};
    if (c->ps)
        cm_ht_foreach(&c->ps->mine[kind], srv_ps_name_cb, &nm);
    return nm.n;
}

/* ---------------------------------------------------------------- delivery */

/* Appends a message (RESP2 bytes) to c's output on c's thread, enforcing the output limit. */
static void srv_ps_append(struct srv_client *c, const char *p, size_t n) {
    if (c->ps->killed || cm_atomic_load_relaxed(&c->kill))
        return;
    size_t at = c->out.len;
    cm_buf_append(&c->out, p, n);
    if (c->proto == 3)
        c->out.data[at] = '>';
    if (srv_pubsub_obuf_over(c)) {
        cm_log(CM_LOG_WARNING, "pubsub",
               "client id=%llu addr=%s scheduled to be closed ASAP for overcoming of output "
               "buffer limits (%zu bytes pending)",
               (unsigned long long)c->id, c->addr, srv_client_pending(c));
        c->ps->killed = 1;
        c->flags |= SRV_CLIENT_CLOSE_ASAP;
        srv_client_kill(c);
        return;
    }
    srv_net__want_write(c);
}

/* Queues a message for c on its loop's inbox (another thread). Registry lock held. */
static void srv_ps_enqueue(struct srv_client *c, const char *p, size_t n) {
    struct srv_ps_inbox *ib = &srv_ps_inboxes[c->worker->id];
    pthread_mutex_lock(&ib->mu);
    int wake = ib->n == 0;
    if (ib->n == ib->cap) {
        ib->cap = ib->cap ? ib->cap * 2 : 64;
        ib->items = cm_realloc(ib->items, ib->cap * sizeof(*ib->items));
    }
    ib->items[ib->n++] = (struct srv_ps_item){c, n};
    cm_buf_append(&ib->buf, p, n);
    pthread_mutex_unlock(&ib->mu);
    if (wake)
        cm_ev_wake(c->worker->loop);
}

/* Delivers one encoded message to c, from any thread. Registry lock held (shared). */
static void srv_ps_deliver(struct srv_client *c, const char *p, size_t n) {
    if (c->worker == srv_ps_self)
        srv_ps_append(c, p, n);
    else
        srv_ps_enqueue(c, p, n);
}

void srv_pubsub_drain(struct srv_worker *w) {
    if (!srv_ps_inboxes || w->id >= srv_ps_ninboxes)
        return;
    struct srv_ps_inbox *ib = &srv_ps_inboxes[w->id];
    pthread_mutex_lock(&ib->mu);
    size_t n = ib->n;
    struct cm_buf tb = ib->buf;
    ib->buf = ib->dbuf;
    ib->dbuf = tb;
    struct srv_ps_item *ti = ib->items;
    size_t tc = ib->cap;
    ib->items = ib->ditems;
    ib->cap = ib->dcap;
    ib->ditems = ti;
    ib->dcap = tc;
    ib->n = 0;
    /* The registry may drop c while we deliver without the inbox lock: closes happen only on
     * this thread, and delivering never closes a client, so the batch stays valid. */
    pthread_mutex_unlock(&ib->mu);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        if (ib->ditems[i].c)
            srv_ps_append(ib->ditems[i].c, ib->dbuf.data + off, ib->ditems[i].len);
        off += ib->ditems[i].len;
    }
    ib->dbuf.len = 0;
    if (ib->dbuf.cap > (1u << 20)) {
        cm_buf_fini(&ib->dbuf);
        cm_buf_init(&ib->dbuf);
    }
}

/* Which client and kind srv_ps_drop_cb unlinks. */
struct srv_ps_drop {
    struct srv_client *c;
    int kind;
};

static void srv_ps_drop_cb(struct cm_ht_node *node, void *arg) {
    struct srv_ps_drop *d = arg;
    srv_ps_unlink(d->c, d->kind, (struct srv_ps_member *)node);
}

void srv_pubsub__remove_all(struct srv_client *c, int kind) {
    struct srv_ps_drop d = {c, kind};
    if (c->ps)
        cm_ht_foreach(&c->ps->mine[kind], srv_ps_drop_cb, &d);
}

void srv_pubsub_client_gone(struct srv_client *c) {
    if (!c->ps)
        return;
    srv_pubsub__wrlock();
    for (int k = 0; k < SRV_PS_NKINDS; k++)
        srv_pubsub__remove_all(c, k);
    struct srv_ps_client *ps = c->ps;
    c->ps = NULL; /* under the lock: CLIENT LIST on other threads reads it */
    srv_pubsub__unlock();
    if (srv_ps_inboxes && c->worker->id < srv_ps_ninboxes) {
        struct srv_ps_inbox *ib = &srv_ps_inboxes[c->worker->id];
        pthread_mutex_lock(&ib->mu);
        for (size_t i = 0; i < ib->n; i++)
            if (ib->items[i].c == c)
                ib->items[i].c = NULL;
        pthread_mutex_unlock(&ib->mu);
    }
    for (int k = 0; k < SRV_PS_NKINDS; k++)
        cm_ht_fini(&ps->mine[k]);
    cm_free(ps);
}

/* Encodes *<n> then the bulk strings parts[0..n) into b (RESP2 form). */
static void srv_ps_encode(struct cm_buf *b, int n, const char *const *parts, const size_t *lens) {
    cm_buf_appendf(b, "*%d\r\n", n);
    for (int i = 0; i < n; i++) {
        cm_buf_appendf(b, "$%zu\r\n", lens[i]);
        cm_buf_append(b, parts[i], lens[i]);
        cm_buf_append(b, "\r\n", 2);
    }
}

/* Visitor state of the pattern walk of a PUBLISH. */
struct srv_ps_pub {
    const char *ch, *msg;
    size_t chlen, mlen;
    long receivers;
    struct cm_buf enc;
};

static void srv_ps_pattern_cb(struct cm_ht_node *node, void *arg) {
    struct srv_ps_pub *pp = arg;
    const struct srv_ps_chan *pat = (const struct srv_ps_chan *)node;
    if (!cm_glob_match(pat->name, pat->len, pp->ch, pp->chlen, 0))
        return;
    pp->enc.len = 0;
    const char *parts[4] = {"pmessage", pat->name, pp->ch, pp->msg};
    size_t lens[4] = {8, pat->len, pp->chlen, pp->mlen};
    srv_ps_encode(&pp->enc, 4, parts, lens);
    for (uint32_t i = 0; i < pat->n; i++)
        srv_ps_deliver(pat->subs[i], pp->enc.data, pp->enc.len);
    pp->receivers += pat->n;
}

long srv_pubsub_publish(const char *ch, size_t chlen, const char *msg, size_t mlen, int shard) {
    if (!srv_ps_ready || cm_atomic_load_relaxed(&srv_pubsub_nsubs) == 0)
        return 0;
    struct srv_ps_pub pp = {.ch = ch, .msg = msg, .chlen = chlen, .mlen = mlen};
    cm_buf_init(&pp.enc);
    int kind = shard ? SRV_PS_SHARD : SRV_PS_CHANNEL;
    srv_pubsub__rdlock();
    struct srv_ps_chan *c = srv_pubsub__find(kind, ch, chlen);
    if (c) {
        const char *parts[3] = {shard ? "smessage" : "message", ch, msg};
        size_t lens[3] = {shard ? 8u : 7u, chlen, mlen};
        srv_ps_encode(&pp.enc, 3, parts, lens);
        for (uint32_t i = 0; i < c->n; i++)
            srv_ps_deliver(c->subs[i], pp.enc.data, pp.enc.len);
        pp.receivers += c->n;
    }
    if (!shard && cm_ht_count(&srv_ps_tab[SRV_PS_PATTERN]) > 0)
        srv_ps_walk(&srv_ps_tab[SRV_PS_PATTERN], srv_ps_pattern_cb, &pp);
    srv_pubsub__unlock();
    cm_buf_fini(&pp.enc);
    return pp.receivers;
}
