# SPDX-License-Identifier: Apache-2.0
"""Chaos run of HA masters (tests/ha/store_chaos.sh BACKEND SECONDS): three crescent-master
--enable_ha with the election and the op-log in one real redis-server or etcd (k8s: elections
on the Lease API double at $CRESCENT_CHAOS_K8S_URI, set by store_chaos.sh, the op-log in a real
redis-server), two segment
owners pinging, a writer putting objects all the time; every 2-6 s the leader is killed with
kill -9 (then restarted) or SIGSTOPped past its lease (then resumed). After each fail-over every
object acknowledged so far is looked up on the new leader (same segment and address). Prints
fail-overs, acknowledged puts, lost objects (must be 0), overlapping leaders (must be 0) and the
serving-again time p50 / max. Exit 0 when nothing was lost and nothing overlapped."""
import os
import random
import signal
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402
import test_master_ha as T  # noqa: E402


def setup(port):
    for cid, seg, base in ((T.CLIENT_A, "segA", 1 << 40), (T.CLIENT_B, "segB", 3 << 40)):
        T.call1(port, "MC.REGISTER", cid, "host-" + seg)
        r = T.call1(port, "MC.MOUNT", cid, seg, base, 1 << 40, "endpoint", "127.0.0.1:1")
        if r != "OK":
            raise RuntimeError("mount %s: %r" % (seg, r))


def lost_on(leader, writer):
    """Acknowledged keys (snapshot) missing or moved on leader."""
    acked = list(writer.acked.items())
    c = T.Conn(leader.port, timeout=10)
    lost = []
    for key, reps in acked:
        r = c.call("MC.QUERYKEY", key)
        if isinstance(r, T.Err):
            lost.append(key)
            continue
        got = sorted((T.fields(d)["segment"], T.fields(d)["addr"]) for d in T.fields(r)["replicas"])
        if got != reps:
            lost.append(key)
    c.close()
    return lost, len(acked)


def observer(cluster, stop):
    while not stop.is_set():
        cluster.observe()
        time.sleep(0.2)


def run(cluster, seconds, rng):
    for m in cluster.masters:
        m.start()
    leader, _, _ = cluster.wait_leader()
    setup(leader.port)
    writer = T.Writer(cluster)
    stop = threading.Event()
    threads = [threading.Thread(target=writer.loop, daemon=True),
               threading.Thread(target=T.ping_loop, args=(cluster, T.CLIENT_A, stop), daemon=True),
               threading.Thread(target=T.ping_loop, args=(cluster, T.CLIENT_B, stop), daemon=True),
               threading.Thread(target=observer, args=(cluster, stop), daemon=True)]
    for t in threads:
        t.start()
    failovers, times, lost_all, checked = 0, [], set(), 0
    deadline = time.time() + seconds
    while time.time() < deadline:
        time.sleep(rng.uniform(2, 6))
        leader, _, _ = cluster.wait_leader()
        if leader is None:
            print("no leader within 30 s")
            break
        kind = "kill" if rng.random() < 0.7 else "stop"
        t0 = time.time()
        if kind == "kill":
            leader.proc.kill()
            leader.proc.wait()
        else:
            os.kill(leader.proc.pid, signal.SIGSTOP)
        new, epoch, _ = cluster.wait_leader(exclude=leader)
        took = time.time() - t0
        if kind == "stop":
            os.kill(leader.proc.pid, signal.SIGCONT)
        else:
            leader.start()
        if new is None:
            print("%s of the leader: no new leader within 30 s" % kind)
            break
        failovers += 1
        times.append(took)
        lost, n = lost_on(new, writer)
        lost_all.update(lost)
        checked = n
        print("%4d %-4s epoch %d serving again after %.2f s; %d acknowledged, %d lost"
              % (failovers, kind, epoch, took, n, len(lost)), flush=True)
    writer.stop.set()
    stop.set()
    overlaps = getattr(cluster, "overlaps", 0) + sum(
        1 for ms in cluster.serving.values() if len(ms) != 1)
    print("fail-overs: %d" % failovers)
    print("acknowledged puts: %d (checked after the last fail-over: %d)"
          % (len(writer.acked), checked))
    print("lost objects: %d%s" % (len(lost_all), (" %s" % sorted(lost_all)[:5]) if lost_all else ""))
    print("overlapping leaders: %d" % overlaps)
    if times:
        print("serving again: p50 %.2f s, max %.2f s" % (statistics.median(times), max(times)))
    return 0 if failovers and not lost_all and not overlaps else 1


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("redis", "etcd", "k8s"):
        print("usage: store_chaos.py redis|etcd|k8s SECONDS [SEED]")
        return 2
    k8s_uri = os.environ.get("CRESCENT_CHAOS_K8S_URI")
    if sys.argv[1] == "k8s" and not k8s_uri:
        print("k8s: run through store_chaos.sh, which starts the Lease API double")
        return 2
    kind, seconds = sys.argv[1], float(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else int(time.time())
    print("seed %d" % seed)
    tmp = H.TempDir("crescent-store-chaos.")
    oplog = H.RedisBackend(tmp.path) if kind == "k8s" else None
    backend = H.make_backend(kind, tmp.path, k8s_uri if kind == "k8s" else None)
    masters = []
    rc = 1
    try:
        backend.start()
        if oplog:
            oplog.start()
        masters = [T.Master(tmp.path, i, backend, (oplog or backend).uri, T.CLUSTER)
                   for i in (1, 2, 3)]
        rc = run(T.Cluster(masters), seconds, random.Random(seed))
    finally:
        H.cleanup()
        backend.stop()
        if oplog:
            oplog.stop()
        if rc != 0:
            for m in masters:
                if os.path.exists(m.log):
                    print("---- master %d" % m.idx)
                    print(open(m.log).read()[-4000:], end="")
        if os.environ.get("CRESCENT_KEEP_TMP"):
            print("logs kept in %s" % tmp.path)
        else:
            tmp.remove()
    return rc


if __name__ == "__main__":
    sys.exit(main())
