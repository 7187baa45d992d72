# SPDX-License-Identifier: Apache-2.0
"""Snapshots in HA mode (docs/ha.md, "Snapshots and the op-log"): three crescent-master
--enable_ha with the election and the op-log in a real redis-server (or, with the argument
etcd, both in a real etcd) and the snapshot catalog in the redis-server. The leader takes
snapshots on MC.SNAPSHOT, each recording the op-log position it includes; the log is trimmed up
to the oldest snapshot kept; a new leader (kill -9 of the old one) loads the newest snapshot and
replays only the entries after it; a corrupt newest snapshot makes the next leader fall back to
the previous one; a restart of every master restores too; with no usable snapshot and a trimmed
log the leader refuses to serve (-LOADING) until a snapshot is back. Every acknowledged object
is checked after each step (same segments and addresses; removes stay removed).
Exit 0 pass, 1 fail, 77 skip."""
import os
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402
import test_master_ha as T  # noqa: E402

check = T.check


class SnapMaster(T.Master):
    """A master of test_master_ha with snapshots on (Redis catalog, shared directory)."""

    def __init__(self, tmp, idx, backend, oplog_uri, cluster, redis):
        super().__init__(tmp, idx, backend, oplog_uri, cluster)
        self.args += ["--enable_snapshot", "yes", "--enable_snapshot_restore", "yes",
                      "--snapshot_local_path", os.path.join(tmp, "snaps"),
                      "--snapshot_interval_seconds", "3600", "--snapshot_retention_count", "2",
                      "--snapshot_catalog_store_type", "redis",
                      "--snapshot_catalog_store_connstring", "127.0.0.1:%d" % redis.port,
                      "--loglevel", "verbose"]
        # the checks below are about the full recovery's choice of snapshot (hot standbys with
        # snapshots and trimming: test_master_ha_hot.py)
        self.args += ["--ha_hot_standby", "no"]

    def info(self, section):
        try:
            text = T.call1(self.port, "INFO", section)
        except (OSError, ConnectionError):
            return {}
        return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)

    def logtext(self):
        return open(self.log).read() if os.path.exists(self.log) else ""


def redis_lines(redis, *args):
    """A short reply of redis as a list of its lines without the RESP type lines."""
    raw = redis.command(*args).decode("latin-1").split("\r\n")
    return [x for x in raw if x and x[0] not in "*$:"]


def redis_int(redis, *args):
    return int(redis.command(*args).split(b"\r\n")[0][1:])


def catalog(redis):
    base = "mooncake-store/{%s}/snapshot/" % T.CLUSTER
    ids = redis_lines(redis, "ZRANGE", base + "index", "0", "-1")
    latest = redis_lines(redis, "GET", base + "latest")
    return ids, latest[0] if latest else None


def descriptor(tmp, sid):
    path = os.path.join(tmp, "snaps", "mooncake_master_snapshot", T.CLUSTER, sid,
                        "descriptor.txt")
    seq, epoch, _ = open(path).read().strip().split("|")
    return int(seq), int(epoch)


def metadata_path(tmp, sid):
    return os.path.join(tmp, "snaps", "mooncake_master_snapshot", T.CLUSTER, sid, "metadata")


def snapshot(leader, count_before):
    """MC.SNAPSHOT on the leader; waits until INFO snapshot counts it. Returns its id."""
    r = T.call1(leader.port, "MC.SNAPSHOT")
    check(r == "Snapshot started", "MC.SNAPSHOT on the leader: %r" % r)
    for _ in range(200):
        st = leader.info("snapshot")
        if int(st.get("snapshot_ok", 0)) > count_before and st.get("snapshot_in_progress") == "0":
            return st.get("snapshot_last_id")
        time.sleep(0.05)
    check(False, "the snapshot was written (%s)" % leader.info("snapshot"))
    return None


def puts(writer, leader, prefix, n, removes):
    """n puts (every third with two replicas), then removes every removes-th of them."""
    for i in range(n):
        writer.run_once("%s%04d" % (prefix, i), replicas=2 if i % 3 == 0 else 1)
    c = T.Conn(leader.port)
    for i in range(0, n, removes):
        key = "%s%04d" % (prefix, i)
        if c.call("MC.REMOVE", key) == "OK":
            writer.removed.add(key)
    c.close()


def kill_leader(cluster, leader):
    leader.proc.kill()
    leader.proc.wait()
    new, epoch, took = cluster.wait_leader(exclude=leader)
    check(new is not None, "a new leader serves after kill -9 (epoch %s, %.1f s)"
          % (epoch, took or 0))
    return new, epoch


def scenario(tmp, cluster, oplog, redis, kind):
    masters = cluster.masters
    leader, epoch = cluster.start_and_lead()
    if leader is None:
        return
    T.setup_clients(leader.port)
    writer = T.Writer(cluster)
    stop = threading.Event()
    for cid in (T.CLIENT_A, T.CLIENT_B):
        threading.Thread(target=T.ping_loop, args=(cluster, cid, stop), daemon=True).start()

    print("snapshot on the leader: the op-log is trimmed, the catalog is readable")
    puts(writer, leader, "a", 300, 10)
    check(len(writer.acked) == 300, "300 puts acknowledged (%d)" % len(writer.acked))
    standby = next(m for m in masters if m is not leader)
    r = T.call1(standby.port, "MC.SNAPSHOT")
    check(isinstance(r, T.Err) and str(r).startswith("NOTLEADER"),
          "MC.SNAPSHOT on a standby: %r" % r)
    before = oplog.length()
    s1 = snapshot(leader, 0)
    after = oplog.length()
    seq1, ep1 = descriptor(tmp, s1)
    s1_copy = os.path.join(tmp, "s1-copy")  # put back later as an unusable (too old) snapshot
    shutil.copytree(os.path.dirname(metadata_path(tmp, s1)), s1_copy)
    check(ep1 == epoch and seq1 >= before, "snapshot %s records epoch %d and last_seq %d "
          "(log had %d entries)" % (s1, ep1, seq1, before))
    check(after < before and after <= 2, "op-log trimmed: %d -> %d entries" % (before, after))
    ids, latest = catalog(redis)
    check(ids == [s1] and latest == s1, "catalog: ZRANGE index %s, GET latest %s" % (ids, latest))
    info = leader.info("ha")
    check(info.get("oplog_trimmed_to") == str(seq1) and info.get("oplog_trims") == "1",
          "INFO ha: oplog_trimmed_to %s, oplog_trims %s" % (info.get("oplog_trimmed_to"),
                                                            info.get("oplog_trims")))
    check(oplog.trimmed() == seq1, "the store's trim point is %d (%s)" % (seq1, oplog.trimmed()))
    check(all(m.info("snapshot").get("snapshot_ok") == "0" for m in masters if m is not leader),
          "standbys took no snapshot")

    puts(writer, leader, "b", 150, 10)
    c = T.Conn(leader.port)  # a put in flight across the snapshot: it ends after the fork
    r1 = c.call("MC.PUTSTART", T.CLIENT_A, "inflight", 1000, "SEGMENTS", 1, "segA")
    wt = threading.Thread(target=writer.loop, daemon=True)  # group appends during the fork
    wt.start()
    time.sleep(0.3)
    n0 = writer.n
    s2 = snapshot(leader, 1)
    time.sleep(0.3)
    writer.stop.set()
    wt.join()
    writer.stop.clear()
    check(writer.n > n0, "a writer put objects while the snapshot was taken (%d)" % (writer.n - n0))
    r2 = c.call("MC.PUTEND", T.CLIENT_A, "inflight")
    c.close()
    check(isinstance(r1, list) and r2 == "OK", "a put started before the snapshot ends after it")
    if r2 == "OK":
        writer.acked["inflight"] = sorted((T.fields(d)["segment"], T.fields(d)["addr"])
                                          for d in r1)
    seq2, _ = descriptor(tmp, s2)
    ids, latest = catalog(redis)
    check(ids == [s1, s2] and latest == s2 and seq2 > seq1,
          "second snapshot %s (last_seq %d); catalog %s" % (s2, seq2, ids))
    check(oplog.trimmed() == seq1, "the log is kept from the oldest snapshot on (trim point %s)"
          % oplog.trimmed())
    puts(writer, leader, "c", 60, 6)  # the tail after the newest snapshot
    tail = oplog.length()

    print("kill -9 of the leader: the new one loads the newest snapshot and the tail")
    new, epoch2 = kill_leader(cluster, leader)
    if new is None:
        return
    info = new.info("ha")
    n_tail = int(info.get("ha_replayed_after_snapshot", -1))
    check(info.get("ha_restored_snapshot") == s2 and
          info.get("ha_restored_snapshot_seq") == str(seq2),
          "INFO ha: restored snapshot %s at seq %s" % (info.get("ha_restored_snapshot"),
                                                       info.get("ha_restored_snapshot_seq")))
    check(0 < n_tail < tail, "only the tail was replayed: %d of %d entries in the log"
          % (n_tail, tail))
    st = new.info("snapshot")
    check(st.get("snapshot_restored_id") == s2 and
          st.get("snapshot_restored_oplog_replayed") == str(n_tail),
          "INFO snapshot: restored %s, %s entries replayed" % (
              st.get("snapshot_restored_id"), st.get("snapshot_restored_oplog_replayed")))
    T.verify(new, writer, "snapshot + tail")
    puts(writer, new, "d", 30, 5)

    print("a corrupt newest snapshot: the next leader falls back to the previous one")
    path = metadata_path(tmp, s2)
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0x5A
    open(path, "wb").write(bytes(data))
    leader.start()  # the first leader comes back as a standby
    time.sleep(1.0)
    third, epoch3 = kill_leader(cluster, new)
    if third is None:
        return
    info = third.info("ha")
    check(info.get("ha_restored_snapshot") == s1,
          "it restored the previous snapshot %s (%s)" % (s1, info.get("ha_restored_snapshot")))
    check(("snapshot %s refused" % s2) in third.logtext(),
          "it logged that %s was refused" % s2)
    check(int(info.get("ha_replayed_after_snapshot", 0)) > n_tail,
          "it replayed the longer tail after %s (%s entries)" % (
              s1, info.get("ha_replayed_after_snapshot")))
    T.verify(third, writer, "fallback to the previous snapshot")
    new.start()

    print("a third snapshot, more puts, then every master restarts")
    s3 = snapshot(third, 0)
    seq3, _ = descriptor(tmp, s3)
    ids, latest = catalog(redis)
    check(ids == [s2, s3] and latest == s3, "retention keeps %s and %s (%s)" % (s2, s3, ids))
    check(not os.path.exists(metadata_path(tmp, s1)), "snapshot %s deleted" % s1)
    check(oplog.trimmed() == seq2, "trimmed up to the oldest kept snapshot %s: %s"
          % (seq2, oplog.trimmed()))
    puts(writer, third, "e", 30, 5)
    for m in masters:
        if m.alive():
            m.proc.kill()
            m.proc.wait()
    for m in masters:
        m.start()
    fourth, epoch4, _ = cluster.wait_leader()
    check(fourth is not None, "after a restart of every master a leader serves (epoch %s)"
          % epoch4)
    if fourth is None:
        return
    check(fourth.info("ha").get("ha_restored_snapshot") == s3,
          "it restored %s (%s)" % (s3, fourth.info("ha").get("ha_restored_snapshot")))
    T.verify(fourth, writer, "after a restart of every master")

    print("no usable snapshot and a trimmed log: refused until a snapshot is back")
    # s1 comes back as the catalog's latest: its last_seq is below the trim point (a gap)
    shutil.copytree(s1_copy, os.path.dirname(metadata_path(tmp, s1)))
    base = "mooncake-store/{%s}/snapshot/" % T.CLUSTER
    redis.command("ZADD", base + "index", "1", s1)
    redis.command("SET", base + "latest", s1)
    path3 = metadata_path(tmp, s3)
    good = open(path3, "rb").read()
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x5A
    open(path3, "wb").write(bytes(bad))
    fifth, refused = None, None
    fourth.proc.kill()
    fourth.proc.wait()
    t0 = time.time()
    while time.time() - t0 < 30 and refused is None:
        for m in masters:
            if m.alive() and "no snapshot with last_seq >=" in m.logtext():
                refused = m
        time.sleep(0.2)
    check(refused is not None, "a new leader logs that the log alone is incomplete")
    gap = "snapshot %s refused: its last_seq %d is older than the op-log" % (s1, seq1)
    check(refused is not None and gap in refused.logtext() and "(a gap)" in refused.logtext(),
          "it refused %s for the gap after its last_seq" % s1)
    if refused is not None:
        r = T.call1(refused.port, "MC.QUERYKEY", "a0001")
        check(isinstance(r, T.Err) and str(r).startswith("LOADING"),
              "it answers -LOADING meanwhile (%r)" % r)
    open(path3, "wb").write(good)
    fifth, epoch5, _ = cluster.wait_leader(exclude=fourth)
    check(fifth is not None and fifth is refused, "with the snapshot back it serves (epoch %s)"
          % epoch5)
    if fifth is not None:
        check(fifth.info("ha").get("ha_restored_snapshot") == s3,
              "it restored %s, not the older %s" % (s3, s1))
        T.verify(fifth, writer, "after the snapshot came back")
    stop.set()


class RedisOplog(T.RedisOplog):
    def trimmed(self):
        lines = redis_lines(self.redis, "GET", "crescent/{%s}/oplog_trimmed" % T.CLUSTER)
        return int(lines[0]) if lines else 0


class EtcdOplog(T.EtcdOplog):
    def trimmed(self):
        kvs = self._get("crescent/{%s}/oplog_trimmed" % T.CLUSTER)
        return int(T.base64.b64decode(kvs[0]["value"])) if kvs else 0


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "redis"
    skip = H.prerequisites(kind, (T.MASTER,))
    if skip is not None:
        return skip
    with H.MasterRun("crescent-ha-snap.", kind) as run:
        oplog = EtcdOplog(run.backend) if kind == "etcd" else RedisOplog(run.redis)
        run.masters = [SnapMaster(run.path, i, run.backend, oplog.uri, T.CLUSTER, run.redis)
                       for i in (1, 2, 3)]
        cluster = T.Cluster(run.masters)
        t0 = time.time()
        scenario(run.path, cluster, oplog, run.redis, kind)
        run.finish("master HA snapshots (%s)" % kind, t0, cluster)
    return 0 if run.ok else 1


if __name__ == "__main__":
    sys.exit(main())
