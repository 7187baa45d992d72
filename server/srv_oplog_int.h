/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the HA op-log (srv_oplog.c): the stores that keep the entries, behind one ops
 * table (srv_oplog_redis.c: a Redis list appended by a fencing Lua script; srv_oplog_etcd.c:
 * etcd keys written by transactions that compare the fence). Not for other files.
 */
#ifndef CRESCENT_SERVER_SRV_OPLOG_INT_H
#define CRESCENT_SERVER_SRV_OPLOG_INT_H

#include "ha/ha_backend.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Called by a store's scan for every entry in log order: data/len is the entry, where names it
 * for messages ("1870 of crescent/{kv1}/oplog"), hint says how to look at it with the store's
 * tool. Returns 0 to go on, -1 to stop the scan (err then filled by the callback).
 */
typedef int srv_oplog_scan_cb(void *arg, const char *data, size_t len, const char *where,
                              const char *hint);

/* One op-log store. Connections are used by one thread at a time. */
struct srv_oplog_store {
    const char *scheme; /* URI scheme: "redis", "etcd" */
    /*
     * Takes the parsed --oplog_store URI and the cluster id, checks that the store answers
     * (logs warnings about its durability). Returns 0, or -1 with one line in err. Once, at
     * start-up.
     */
    int (*open)(const struct ha_uri *u, const char *cluster, char *err, size_t errlen);
    /* Opens a connection; NULL with err filled when the store cannot be reached. */
    void *(*connect)(char *err, size_t errlen);
    void (*disconnect)(void *conn); /* NULL accepted */
    /*
     * Appends entries v[0..n) (sequence numbers first_seq, first_seq + 1, ...) written at
     * epoch, atomically with a check of the store's fence: refused when the fence holds a
     * higher epoch, with "FENCED" in err. n == 0 only raises the fence to epoch (a new leader's
     * first step). Returns 0 or -1 (err). Appending the same entries again is harmless.
     */
    int (*append)(void *conn, uint64_t epoch, uint64_t first_seq, const char *const *v,
                  const size_t *lens, size_t n, char *err, size_t errlen);
    /*
     * Optional (NULL: not supported): replaces the whole log with v[0..n) if the fence still
     * holds epoch, and clears the trim point (the new log is the whole state), atomically.
     * Returns 0, or -1 (err; "FENCED" when the fence moved on).
     */
    int (*compact)(void *conn, uint64_t epoch, const char *const *v, const size_t *lens, size_t n,
                   char *err, size_t errlen);
    /*
     * Removes every entry with a sequence number <= upto (entry upto was written at
     * upto_epoch; every entry of an older epoch has a lower sequence number) and raises the
     * store's trim point to upto, atomically with a check that the fence still holds epoch
     * (else -1 with "FENCED" in err). Returns 0 or -1 (err).
     */
    int (*trim)(void *conn, uint64_t epoch, uint64_t upto, uint64_t upto_epoch, char *err,
                size_t errlen);
    /*
     * Reads the trim point (*base: every entry <= it was removed; 0 = never trimmed) and the
     * sequence number of the first entry (*first, 0 when the log is empty or the first entry
     * cannot be parsed). Returns 0 or -1 (err).
     */
    int (*bounds)(void *conn, uint64_t *base, uint64_t *first, char *err, size_t errlen);
    /* Calls cb for every entry in log order. Returns 0, or -1 (store error in err, or cb's). */
    int (*scan)(void *conn, srv_oplog_scan_cb *cb, void *arg, char *err, size_t errlen);
    /*
     * A hot standby's read (srv_oplog_warm_tail): calls cb for up to max entries in log order,
     * starting at the last entry with a sequence number <= seq (key_epoch: that entry's epoch,
     * 0 = unknown) if it is still there, else at the first entry after it; with key_epoch 0
     * the etcd store starts at the log's first entry. Stores the trim point in *base (read in
     * the same view, or after the entries) and the log's length in *len (0 = unknown).
     * Returns the number of entries fed, or -1 (err).
     */
    long (*read_from)(void *conn, uint64_t seq, uint64_t key_epoch, size_t max,
                      srv_oplog_scan_cb *cb, void *arg, uint64_t *base, uint64_t *len, char *err,
                      size_t errlen);
    /* Where the log lives, for messages ("redis 127.0.0.1:6379 crescent/{kv1}/oplog"). */
    const char *(*describe)(void);
};

extern const struct srv_oplog_store srv_oplog_redis;
extern const struct srv_oplog_store srv_oplog_etcd;

#endif
