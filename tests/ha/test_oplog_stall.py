# SPDX-License-Identifier: Apache-2.0
"""A stalled op-log store must not expire the pool's clients (tests/ha/test_oplog_stall.sh).

One HA master elected through a real etcd, its op-log in a real redis-server,
client_live_ttl_sec 4, one event loop. A client mounts a segment and an object is put. Then the
op-log's redis-server is SIGSTOPped and a put is sent: its reply waits for the op-log. The
owner's pings (MC.PING, each on its own connection, sent all along) are still read and run (the
event loop is not blocked by the op-log: replies are held, docs/ha.md), though their replies
also wait for the store; a plain PING on another connection answers during the stop. The store
stays stopped for twice the TTL. Once a stalled loop let the housekeeping thread expire the
owner meanwhile and drop its segment and every object on it (a chaos run lost 564,530 objects
that way); now after SIGCONT the put completes, the owner's ping answers OK, the segment and
both objects are there, and liveness never had to pause (the loop kept running)."""
import os
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402
import test_master_ha as T  # noqa: E402

check = H.check


def with_one_master(name, scenario):
    """Runs scenario(redis, master, port, cid) against one HA master elected through a real
    etcd, its op-log in a real redis-server, with client cid registered and segment segA
    mounted; cleans up and returns the exit status (77 when a tool is missing). Shared with
    test_oplog_hold.py."""
    for tool in ("redis-server", "etcd"):
        if not shutil.which(tool):
            print("skip: %s not installed" % tool)
            return 77
    tmp = H.TempDir("crescent-%s." % name)
    etcd, redis = H.EtcdBackend(tmp.path), H.RedisBackend(tmp.path)
    master = None
    try:
        etcd.start()
        redis.start()
        master = T.Master(tmp.path, 1, etcd, redis.uri, "%s-%d" % (name, os.getpid()))
        master.start()
        for _ in range(200):
            if T.call1(master.port, "ROLE")[0] == "master":
                break
            time.sleep(0.05)
        port, cid = master.port, T.CLIENT_A
        check(T.call1(port, "MC.REGISTER", cid, "host-a") == "OK", "register")
        check(T.call1(port, "MC.MOUNT", cid, "segA", 1 << 30, 64 << 20, "endpoint",
                      "127.0.0.1:1") == "OK", "mount segA")
        scenario(redis, master, port, cid)
    finally:
        if master and master.alive():
            master.proc.terminate()
            master.proc.wait()
        H.cleanup()
        redis.stop()
        etcd.stop()
        tmp.remove()
    print("%s: %d failures" % (name, len(H.failures)))
    return 1 if H.failures else 0


def stall(redis, master, port, cid):
    T.call1(port, "MC.PUTSTART", cid, "before", 4096)
    check(T.call1(port, "MC.PUTEND", cid, "before") == "OK", "put before the stall")

    stop = threading.Event()
    pings = []

    def pinger():  # the owner's heartbeat, every 0.5 s, each on its own connection
        while not stop.is_set():
            try:
                pings.append(T.call1(port, "MC.PING", cid, timeout=1))
            except OSError:
                pass
            time.sleep(0.5)

    threading.Thread(target=pinger, daemon=True).start()
    time.sleep(1)
    redis.pause()
    reply = []
    c = T.Conn(port, timeout=60)

    def put():
        c.send("MC.PUTSTART", cid, "during", 4096)
        reply.append(c.read())
        c.send("MC.PUTEND", cid, "during")
        reply.append(c.read())

    t = threading.Thread(target=put, daemon=True)
    t.start()
    pongs = []
    for _ in range(int(2 * T.GRACE_S)):  # the loop keeps serving while the store is stopped
        time.sleep(1)
        try:
            pongs.append(T.call1(port, "PING", timeout=5))
        except OSError as e:
            pongs.append(repr(e))
    check(not reply or len(reply) < 2, "the put waits for the stopped op-log store")
    check(pongs and all(p == "PONG" for p in pongs),
          "a plain PING answers all along the stop (%r)" % (pongs,))
    redis.resume()
    t.join(30)
    check(reply[-1:] == ["OK"], "the put completes once the store answers (%r)" % reply)
    time.sleep(1)
    stop.set()
    r = T.call1(port, "MC.PING", cid)
    check(isinstance(r, list) and "OK" in [str(x) for x in r],
          "the owner's ping answers OK, not NEED_REMOUNT (%r)" % (r,))
    segs = str(T.call1(port, "MC.SEGMENTS"))
    check("segA" in segs, "segA is still mounted")
    for key in ("before", "during"):
        r = T.call1(port, "MC.QUERYKEY", key)
        check(not isinstance(r, T.Err), "%s is still there (%r)" % (key, r))
    log = open(master.log).read()
    check("client liveness paused" not in log,
          "the loop was not stalled by the op-log: liveness never paused")
    check("Sanitizer" not in open(master.log + ".err").read(), "no sanitizer report")


def main():
    return with_one_master("oplog-stall", stall)


if __name__ == "__main__":
    sys.exit(main())
