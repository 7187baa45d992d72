/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pub/sub commands (SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBE forms, PUBLISH,
 * SPUBLISH, PUBSUB), RESP2 subscriber mode, keyspace notifications (notify-keyspace-events),
 * the KV object events of the pool and the maxmemory-policy setting. The registry and delivery
 * live in srv_pubsub.c.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_pubsub.h"
#include "server/srv_pubsub_int.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"

#include "common/cm_atomic.h"
#include "common/cm_glob.h"
#include "common/cm_mem.h"
#include "redis-compat/resp_write.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- subscribe replies */

/* ["subscribe", name, count]: a push in RESP3, an array in RESP2. name NULL = nil. */
static void srv_ps_reply(struct srv_client *c, const char *what, const char *name, size_t nlen,
                         long count) {
    resp_add_push_hdr(&c->out, c->proto, 3);
    resp_add_bulk_cstr(&c->out, what);
    if (name)
        resp_add_bulk(&c->out, name, nlen);
    else
        resp_add_null(&c->out, c->proto);
    resp_add_int(&c->out, count);
}

/* What the reply counts: channels + patterns, or shard channels. */
static long srv_ps_count(const struct srv_client *c, int kind) {
    int sub, psub, ssub;
    srv_pubsub__counts(c, &sub, &psub, &ssub);
    return kind == SRV_PS_SHARD ? ssub : sub + psub;
}

static void srv_ps_subscribe(struct srv_client *c, int kind, const char *what) {
    srv_pubsub__wrlock();
    for (int i = 1; i < c->argc; i++) {
        srv_pubsub__add(c, kind, c->argv[i].p, c->argv[i].len);
        srv_ps_reply(c, what, c->argv[i].p, c->argv[i].len, srv_ps_count(c, kind));
    }
    srv_pubsub__unlock();
}

static void srv_ps_unsubscribe(struct srv_client *c, int kind, const char *what) {
    srv_pubsub__wrlock();
    if (c->argc > 1) {
        for (int i = 1; i < c->argc; i++) {
            srv_pubsub__remove(c, kind, c->argv[i].p, c->argv[i].len);
            srv_ps_reply(c, what, c->argv[i].p, c->argv[i].len, srv_ps_count(c, kind));
        }
        srv_pubsub__unlock();
        return;
    }
    struct cm_buf names;
    cm_buf_init(&names);
    size_t n = srv_pubsub__names(c, kind, &names);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        memcpy(&len, names.data + off, sizeof(len));
        const char *name = names.data + off + sizeof(len);
        srv_pubsub__remove(c, kind, name, len);
        srv_ps_reply(c, what, name, len, srv_ps_count(c, kind));
        off += sizeof(len) + len;
    }
    if (n == 0)
        srv_ps_reply(c, what, NULL, 0, srv_ps_count(c, kind));
    srv_pubsub__unlock();
    cm_buf_fini(&names);
}

void srv_subscribe_command(struct srv_client *c) {
    srv_ps_subscribe(c, SRV_PS_CHANNEL, "subscribe");
}

void srv_psubscribe_command(struct srv_client *c) {
    srv_ps_subscribe(c, SRV_PS_PATTERN, "psubscribe");
}

void srv_ssubscribe_command(struct srv_client *c) {
    srv_ps_subscribe(c, SRV_PS_SHARD, "ssubscribe");
}

void srv_unsubscribe_command(struct srv_client *c) {
    srv_ps_unsubscribe(c, SRV_PS_CHANNEL, "unsubscribe");
}

void srv_punsubscribe_command(struct srv_client *c) {
    srv_ps_unsubscribe(c, SRV_PS_PATTERN, "punsubscribe");
}

void srv_sunsubscribe_command(struct srv_client *c) {
    srv_ps_unsubscribe(c, SRV_PS_SHARD, "sunsubscribe");
}

void srv_publish_command(struct srv_client *c) {
    long n = srv_pubsub_publish(c->argv[1].p, c->argv[1].len, c->argv[2].p, c->argv[2].len, 0);
    resp_add_int(&c->out, n);
}

void srv_spublish_command(struct srv_client *c) {
    long n = srv_pubsub_publish(c->argv[1].p, c->argv[1].len, c->argv[2].p, c->argv[2].len, 1);
    resp_add_int(&c->out, n);
}

/* ---------------------------------------------------------------- PUBSUB */

/* Visitor state of PUBSUB CHANNELS. */
struct srv_ps_list {
    const char *pat;
    size_t plen;
    struct cm_buf out;
    long n;
};

static void srv_ps_list_cb(struct cm_ht_node *node, void *arg) {
    struct srv_ps_list *l = arg;
    const struct srv_ps_chan *ch = (const struct srv_ps_chan *)node;
    if (l->pat && !cm_glob_match(l->pat, l->plen, ch->name, ch->len, 0))
        return;
    resp_add_bulk(&l->out, ch->name, ch->len);
    l->n++;
}

static void srv_ps_channels(struct srv_client *c, int kind) {
    struct srv_ps_list l = {NULL, 0, {0}, 0};
    if (c->argc > 3) {
        srv_reply_wrong_arity(c, kind == SRV_PS_SHARD ? "pubsub|shardchannels" : "pubsub|channels");
        return;
    }
    if (c->argc == 3) {
        l.pat = c->argv[2].p;
        l.plen = c->argv[2].len;
    }
    cm_buf_init(&l.out);
    srv_pubsub__rdlock();
    srv_pubsub__foreach(kind, srv_ps_list_cb, &l);
    srv_pubsub__unlock();
    resp_add_array_hdr(&c->out, l.n);
    cm_buf_append(&c->out, l.out.data, l.out.len);
    cm_buf_fini(&l.out);
}

static void srv_ps_numsub(struct srv_client *c, int kind) {
    resp_add_array_hdr(&c->out, (long)(c->argc - 2) * 2);
    srv_pubsub__rdlock();
    for (int i = 2; i < c->argc; i++) {
        const struct srv_ps_chan *ch = srv_pubsub__find(kind, c->argv[i].p, c->argv[i].len);
        resp_add_bulk(&c->out, c->argv[i].p, c->argv[i].len);
        resp_add_int(&c->out, ch ? (long long)ch->n : 0);
    }
    srv_pubsub__unlock();
}

static const char *const srv_ps_help[] = {
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
    NULL};

void srv_pubsub_command(struct srv_client *c) {
    if (srv_arg_is(c, 1, "channels")) {
        srv_ps_channels(c, SRV_PS_CHANNEL);
    } else if (srv_arg_is(c, 1, "shardchannels")) {
        srv_ps_channels(c, SRV_PS_SHARD);
    } else if (srv_arg_is(c, 1, "numsub")) {
        srv_ps_numsub(c, SRV_PS_CHANNEL);
    } else if (srv_arg_is(c, 1, "shardnumsub")) {
        srv_ps_numsub(c, SRV_PS_SHARD);
    } else if (srv_arg_is(c, 1, "numpat")) {
        srv_pubsub__rdlock();
        size_t n = srv_pubsub__count(SRV_PS_PATTERN);
        srv_pubsub__unlock();
        resp_add_int(&c->out, (long long)n);
    } else if (srv_arg_is(c, 1, "help") && c->argc == 2) {
        long n = 0;
        while (srv_ps_help[n])
            n++;
        resp_add_array_hdr(&c->out, n);
        for (long i = 0; i < n; i++)
            resp_add_simple(&c->out, srv_ps_help[i]);
    } else {
        srv_reply_errorf(c,
                         "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try "
                         "PUBSUB HELP.",
                         (int)(c->argv[1].len < 128 ? c->argv[1].len : 128), c->argv[1].p);
    }
}

/* ---------------------------------------------------------------- subscriber mode */

int srv_pubsub_refuse(struct srv_client *c, const struct srv_cmd *cmd, char *msg, size_t len) {
    if (c->proto != 2 || !c->ps || srv_pubsub__nsubs(c) == 0)
        return 0;
    static const char *const ok[] = {
        "subscribe",    "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe",
        "sunsubscribe", "ping",       "quit",       "reset",       NULL};
    for (int i = 0; ok[i]; i++)
        if (strcmp(cmd->name, ok[i]) == 0)
            return 0;
    const char *name = cmd->name;
    if (cmd->info && cmd->info->nsub > 0 && c->argc >= 2) {
        const struct rc_command_info *sub =
            rc_subcommand_lookup(cmd->info, c->argv[1].p, c->argv[1].len);
        if (sub)
            name = sub->name;
    }
    snprintf(msg, len,
             "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
             "RESET are allowed in this context",
             name);
    return 1;
}

int srv_pubsub_ping(struct srv_client *c) {
    if (c->proto != 2 || !c->ps || srv_pubsub__nsubs(c) == 0)
        return 0;
    resp_add_array_hdr(&c->out, 2);
    resp_add_bulk(&c->out, "pong", 4);
    if (c->argc == 2)
        resp_add_bulk(&c->out, c->argv[1].p, c->argv[1].len);
    else
        resp_add_bulk(&c->out, "", 0);
    return 1;
}

/* ---------------------------------------------------------------- keyspace notifications */

/* Classes of "A" (Redis's NOTIFY_ALL: everything but K, E, m and n). */
#define SRV_NOTIFY_ALL                                                                             \
    (SRV_NOTIFY_GENERIC | SRV_NOTIFY_STRING | SRV_NOTIFY_LIST | SRV_NOTIFY_SET | SRV_NOTIFY_HASH | \
     SRV_NOTIFY_ZSET | SRV_NOTIFY_EXPIRED | SRV_NOTIFY_EVICTED | SRV_NOTIFY_STREAM |               \
     SRV_NOTIFY_MODULE)

static const struct {
    char ch;
    int flag;
} srv_notify_letters[] = {
    {'g', SRV_NOTIFY_GENERIC},  {'$', SRV_NOTIFY_STRING},   {'l', SRV_NOTIFY_LIST},
    {'s', SRV_NOTIFY_SET},      {'h', SRV_NOTIFY_HASH},     {'z', SRV_NOTIFY_ZSET},
    {'x', SRV_NOTIFY_EXPIRED},  {'e', SRV_NOTIFY_EVICTED},  {'t', SRV_NOTIFY_STREAM},
    {'d', SRV_NOTIFY_MODULE},   {'K', SRV_NOTIFY_KEYSPACE}, {'E', SRV_NOTIFY_KEYEVENT},
    {'m', SRV_NOTIFY_KEY_MISS}, {'n', SRV_NOTIFY_NEW},
};
#define SRV_NLETTERS (sizeof(srv_notify_letters) / sizeof(srv_notify_letters[0]))

/* Redis's letters to flags; -1 for an unknown letter. */
static int srv_notify_parse(const char *s) {
    int flags = 0;
    for (; s && *s; s++) {
        if (*s == 'A') {
            flags |= SRV_NOTIFY_ALL;
            continue;
        }
        size_t i = 0;
        while (i < SRV_NLETTERS && srv_notify_letters[i].ch != *s)
            i++;
        if (i == SRV_NLETTERS)
            return -1;
        flags |= srv_notify_letters[i].flag;
    }
    return flags;
}

/* Flags back to letters, in Redis's order ("A" for all the classes it covers). Caller frees. */
static char *srv_notify_text(int flags) {
    char out[32];
    size_t n = 0;
    int all = (flags & SRV_NOTIFY_ALL) == SRV_NOTIFY_ALL;
    if (all)
        out[n++] = 'A';
    for (size_t i = 0; i < SRV_NLETTERS; i++) {
        int f = srv_notify_letters[i].flag;
        if (f == SRV_NOTIFY_NEW)
            continue; /* accepted, never shown: Redis 7.0 prints no 'n' either */
        if ((flags & f) && !(all && (f & SRV_NOTIFY_ALL)))
            out[n++] = srv_notify_letters[i].ch;
    }
    out[n] = '\0';
    return cm_strdup(out);
}

int srv_pubsub_apply_notify(const struct cm_cfg_entry *e, char *err, size_t errlen) {
    char **var = e->ptr;
    int flags = srv_notify_parse(*var);
    if (flags < 0) {
        snprintf(err, errlen, "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.");
        return -1;
    }
    cm_free(*var);
    *var = srv_notify_text(flags);
    cm_atomic_store_relaxed(&srv_notify_flags, flags);
    return 0;
}

const char *const srv_maxmemory_policies[] = {"volatile-lru",   "volatile-lfu", "volatile-random",
                                              "volatile-ttl",   "allkeys-lru",  "allkeys-lfu",
                                              "allkeys-random", "noeviction",   NULL};

int srv_pubsub_apply_policy(const struct cm_cfg_entry *e, char *err, size_t errlen) {
    (void)e;
    if (srv_cfg.maxmemory_policy == 4) /* allkeys-lru */
        return 0;
    snprintf(err, errlen,
             "maxmemory-policy '%s' is not supported: Crescent always evicts the least recently "
             "used keys (allkeys-lru)",
             srv_maxmemory_policies[srv_cfg.maxmemory_policy]);
    return -1;
}

int srv_pubsub__config_init(char *err, size_t errlen) {
    struct cm_cfg_entry e = {.ptr = &srv_cfg.notify_keyspace_events};
    char why[128];
    if (srv_pubsub_apply_notify(&e, why, sizeof(why)) < 0 ||
        srv_pubsub_apply_policy(&e, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "%s", why);
        return -EINVAL;
    }
    return 0;
}

/* ---------------------------------------------------------------- KV events */

static const char *const srv_kv_names[] = {"stored", "removed", "evicted", "offloaded"};

/* Appends p with ' ', '%' and bytes outside '!'..'~' as %XX, so fields split on spaces. */
static void srv_kv_escape(struct cm_buf *b, const char *p, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch > ' ' && ch < 0x7f && ch != '%') {
            cm_buf_append(b, &p[i], 1);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            cm_buf_append(b, e, 3);
        }
    }
}

void srv_kv_event(enum srv_kv_event ev, const char *key, size_t klen, uint64_t size,
                  const char *const *segs, unsigned nsegs) {
    if (cm_atomic_load_relaxed(&srv_pubsub_nsubs) == 0)
        return;
    char ch[300];
    int chlen =
        snprintf(ch, sizeof(ch), "__crescent__:kv@%s",
                 srv_cfg.cluster_id && *srv_cfg.cluster_id ? srv_cfg.cluster_id : "crescent");
    if (chlen < 0 || (size_t)chlen >= sizeof(ch))
        chlen = (int)sizeof(ch) - 1;
    struct cm_buf b;
    cm_buf_init(&b);
    cm_buf_appendf(&b, "%s ", srv_kv_names[ev]);
    srv_kv_escape(&b, key, klen);
    cm_buf_appendf(&b, " %llu", (unsigned long long)size);
    for (unsigned i = 0; i < nsegs; i++) {
        cm_buf_append(&b, " ", 1);
        srv_kv_escape(&b, segs[i], strlen(segs[i]));
    }
    srv_pubsub_publish(ch, (size_t)chlen, b.data, b.len, 0);
    cm_buf_fini(&b);
}
