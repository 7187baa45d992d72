# SPDX-License-Identifier: Apache-2.0
"""Plain Redis commands on HA masters (docs/ha.md, "Plain Redis commands"): two
crescent-master --enable_ha started without --memory (so they keep no values of their own),
elections and op-log in a real redis-server, one libcrescent process contributing a real
segment (seg_owner.py). SET of 1 B, 4 KiB and 1 MiB values, an overwrite with another size,
DEL and GETDEL on the leader; kill -9 of the leader; the new leader's GET returns the same
bytes and the deleted keys stay gone. The new leader SETs and DELs in turn, then FLUSHALL on a
third leadership; every change survives the next kill -9. Also: CONFIG GET memory and INFO
memory say 0, SET before any segment is mounted answers -NO_AVAILABLE_HANDLE, the op-log
registers the master's own pool client, and an explicit --memory with HA logs a warning.
Argument: redis (default) or etcd (elections and op-log in etcd). Exit 0 pass, 1 fail, 77 skip."""
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402
import test_master_ha as T  # noqa: E402  (Conn, Master, Cluster, check)

check, Conn, Err, call1 = T.check, T.Conn, T.Err, T.call1
CLUSTER = "ha-plain-%d" % os.getpid()


def ping_loop(masters, client, stop):
    """The segment owner's heartbeat on whichever master leads."""
    while not stop.is_set():
        for m in masters:
            if m.alive():
                try:
                    call1(m.port, "MC.PING", client, timeout=0.3)
                except (OSError, ConnectionError):
                    pass
        time.sleep(0.5)


def latin(b):
    return b.decode("latin-1")  # T.Conn returns bulk strings decoded as latin-1


def check_values(port, want, gone, label):
    """GET of every key in want returns its bytes; every key in gone is nil; DBSIZE counts."""
    c = Conn(port, timeout=15)
    for k, v in sorted(want.items()):
        got = c.call("GET", k)
        check(got == latin(v), "%s: GET %s returns the %d bytes SET before (got %s)"
              % (label, k, len(v), "nil" if got is None else
                 ("%d bytes" % len(got) if isinstance(got, str) else repr(got))))
    for k in sorted(gone):
        r = c.call("GET", k)
        check(r is None, "%s: %s stays gone (%r)" % (label, k, r if r is None else str(r)[:40]))
    n = c.call("DBSIZE")
    check(n == len(want), "%s: DBSIZE %r == %d" % (label, n, len(want)))
    c.close()


def fail_over(cluster, leader, label):
    """kill -9 of leader; returns the next serving master (None on failure)."""
    leader.proc.kill()
    leader.proc.wait()
    t0 = time.time()
    new, ep, _ = cluster.wait_leader(exclude=leader)
    check(new is not None, "%s: another master serves (epoch %s, %.1f s after kill -9)"
          % (label, ep, time.time() - t0))
    return new


def explicit_memory_warns(tmp, backend, oplog_uri):
    """An HA master given --memory explicitly says at start that those values are lost."""
    m = T.Master(tmp, 9, backend, oplog_uri, CLUSTER + "-explicit", memory="4mb")
    m.start()
    text = ""
    for _ in range(50):
        text = open(m.log).read()
        if "not in the op-log" in text:
            break
        time.sleep(0.1)
    m.proc.terminate()
    m.proc.wait()
    check("enable_ha with memory 4194304: values SET into the embedded segment are not in the "
          "op-log and are lost on fail-over" in text, "--memory 4mb with HA logs a warning")
    conf = os.path.join(tmp, "explicit.conf")  # memory from a file counts as set too
    with open(conf, "w") as f:
        f.write("memory 2mb\n")
    base = ["--enable_ha", "yes", "--ha_backend_connstring", "127.0.0.1:1"]  # exits: no backend
    out = subprocess.run([T.MASTER, conf] + base, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=30).stdout
    ok = "enable_ha with memory 2097152: values SET" in out
    check(ok, "memory 2mb from a config file with HA logs the warning%s"
          % ("" if ok else " (%r)" % out[-300:]))
    out = subprocess.run([T.MASTER] + base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=30).stdout
    ok = "cannot start HA mode" in out and "not in the op-log" not in out
    check(ok, "no warning without --memory%s" % ("" if ok else " (%r)" % out[-300:]))


def scenario(tmp, backend, oplog, owner_box):
    masters = [T.Master(tmp, i, backend, oplog.uri, CLUSTER) for i in (1, 2)]
    cluster = T.Cluster(masters)
    leader, epoch = cluster.start_and_lead()
    if leader is None:
        return cluster
    print("an HA master started without --memory keeps no values of its own")
    check(call1(leader.port, "CONFIG", "GET", "memory") == ["memory", "0"],
          "CONFIG GET memory is 0")
    info = call1(leader.port, "INFO", "memory")
    check("maxmemory:0\r" in info, "INFO memory says maxmemory:0")
    r = call1(leader.port, "SET", "early", "x")
    check(isinstance(r, Err) and str(r).startswith("NO_AVAILABLE_HANDLE"),
          "SET with no client segment mounted: %r" % r)

    owner = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__),
                                                           "seg_owner.py"),
                              leader.addr, str(32 << 20)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=T.lib_env())
    owner_box.append(owner)
    cid = owner.stdout.readline().strip()
    check(len(cid) == 32, "a libcrescent process mounts a 32 MiB segment (client %s)" % cid)
    if len(cid) != 32:
        print(owner.stderr.read()[-2000:])
        return cluster
    stop = threading.Event()
    pinger = threading.Thread(target=ping_loop, args=(masters, cid, stop), daemon=True)
    pinger.start()
    owner_box.append(stop)

    print("SET, overwrite, DEL and GETDEL on the leader")
    rnd = random.Random(7)
    want = {"v1": b"\x00", "v4k": rnd.randbytes(4096), "v1m": rnd.randbytes(1 << 20),
            "key with spaces\t%": rnd.randbytes(100)}
    gone = set()
    c = Conn(leader.port, timeout=15)
    for k, v in want.items():
        check(c.call("SET", k, v) == "OK", "SET %r (%d bytes)" % (k, len(v)))
    check(c.call("SET", "vover", rnd.randbytes(4096)) == "OK", "SET vover 4 KiB")
    want["vover"] = rnd.randbytes(10000)
    check(c.call("SET", "vover", want["vover"]) == "OK", "SET vover again, 10000 bytes")
    check(c.call("SET", "vdel", "bye") == "OK" and c.call("DEL", "vdel") == 1, "SET then DEL vdel")
    check(c.call("SET", "vgd", "once") == "OK" and c.call("GETDEL", "vgd") == "once",
          "SET then GETDEL vgd")
    check(c.call("SET", "vunl", "u") == "OK" and c.call("UNLINK", "vunl") == 1,
          "SET then UNLINK vunl")
    gone |= {"vdel", "vgd", "vunl", "early"}
    check(c.call("MC.EXIST", "v1m") == 1, "the values are pool objects (MC.EXIST v1m)")
    c.close()
    check_values(leader.port, want, gone, "on the leader")

    print("kill -9 of the leader: the new one serves the same bytes")
    second = fail_over(cluster, leader, "first fail-over")
    if second is None:
        return cluster
    check_values(second.port, want, gone, "after kill -9")
    entries = oplog.entries()
    check(any(e.split(" ")[2:5:2] == ["R", "crescent-master"] for e in entries),
          "the op-log registers the master's own pool client (%d entries)" % len(entries))

    print("the new leader writes and deletes; its writes survive the next kill -9")
    c = Conn(second.port, timeout=15)
    want["v2new"] = rnd.randbytes(4096)
    check(c.call("SET", "v2new", want["v2new"]) == "OK", "SET v2new on the new leader")
    want["v4k"] = rnd.randbytes(4096)
    check(c.call("SET", "v4k", want["v4k"]) == "OK", "overwrite v4k (same size) on the new leader")
    check(c.call("DEL", "v1") == 1, "DEL v1 (written by the old leader) on the new leader")
    del want["v1"]
    gone.add("v1")
    c.close()
    regs = sum(e.split(" ")[2:5:2] == ["R", "crescent-master"] for e in oplog.entries())
    check(regs >= 2, "the new leader registered its own pool client too (%d R entries)" % regs)
    leader.start()  # the old leader comes back as a standby
    time.sleep(1.0)
    third = fail_over(cluster, second, "second fail-over")
    if third is None:
        return cluster
    check_values(third.port, want, gone, "after the second kill -9")

    print("FLUSHALL on the third leadership stays done")
    check(call1(third.port, "FLUSHALL") == "OK", "FLUSHALL")
    gone |= set(want)
    want = {}
    second.start()
    time.sleep(1.0)
    fourth = fail_over(cluster, third, "third fail-over")
    if fourth is not None:
        check_values(fourth.port, want, gone, "after FLUSHALL and kill -9")
    return cluster


class RedisLog:
    def __init__(self, redis):
        self.redis, self.uri = redis, redis.uri
        self.key = "crescent/{%s}/oplog" % CLUSTER

    def entries(self):
        c = Conn(self.redis.port)
        try:
            return c.call("LRANGE", self.key, 0, -1)
        finally:
            c.close()


class EtcdLog:
    def __init__(self, etcd):
        self.etcd, self.uri = etcd, etcd.uri
        self.prefix = "crescent/{%s}/oplog/" % CLUSTER

    def entries(self):
        import base64
        import json
        end = self.prefix[:-1] + chr(ord(self.prefix[-1]) + 1)
        body = dict(key=T.b64(self.prefix), range_end=T.b64(end))
        kvs = json.loads(self.etcd.post("kv/range", json.dumps(body))).get("kvs", [])
        return [base64.b64decode(kv["value"]).decode("latin-1") for kv in kvs]


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "redis"
    skip = H.prerequisites(kind, (T.MASTER,), side_redis=False)
    if skip is not None:
        return skip
    owner_box = []

    def stop_owners():
        for x in owner_box:
            if isinstance(x, threading.Event):
                x.set()
            elif x.poll() is None:
                x.stdin.close()
                try:
                    x.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    x.kill()
                    x.wait()

    with H.MasterRun("crescent-ha-plain.", kind, side_redis=False) as run:
        run.at_exit.append(stop_owners)
        backend = run.backend
        oplog = EtcdLog(backend) if kind == "etcd" else RedisLog(backend)
        t0 = time.time()
        explicit_memory_warns(run.path, backend, oplog.uri)
        cluster = scenario(run.path, backend, oplog, owner_box)
        run.masters = cluster.masters
        run.finish("plain commands on HA masters (%s)" % kind, t0, cluster)
    return 0 if run.ok else 1


if __name__ == "__main__":
    sys.exit(main())
