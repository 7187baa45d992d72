# SPDX-License-Identifier: Apache-2.0
"""Replies wait for their op-log entries without stalling the event loop (tests/ha/test_oplog_hold.sh).

One HA master elected through a real etcd, its op-log in a real redis-server, one event loop.
The op-log's redis-server is SIGSTOPped; connection A pipelines a put (MC.PUTSTART + MC.PUTEND)
and a PING; later connection B sends a PING. B's PONG arrives at once (the loop goes on reading
while A's replies wait: before, the loop blocked until the store answered); none of A's replies
arrives while the store is stopped (the put's entry is not stored, and A's PING is queued behind
it); after SIGCONT all three arrive, in order, and the object is readable."""
import os
import select
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402
import test_master_ha as T  # noqa: E402
import test_oplog_stall as S  # noqa: E402

check = H.check


def readable(conn, seconds):
    """True when conn has reply bytes within seconds (none consumed; its buffer is empty)."""
    r, _, _ = select.select([conn.s], [], [], seconds)
    return bool(r)


def owner_pings(port, cid, stop):
    """The owner's heartbeat, every 0.5 s on its own connections, until stop is set: the
    client's TTL is 4 s and the store stays stopped about that long, so without it the owner
    could expire (its segment and the held object with it) on a slow machine."""
    while not stop.is_set():
        try:
            T.call1(port, "MC.PING", cid, timeout=1)
        except OSError:
            pass
        time.sleep(0.5)


def hold(redis, master, port, cid):
    a, b = T.Conn(port, timeout=30), T.Conn(port, timeout=5)
    check(a.call("PING") == "PONG" and b.call("PING") == "PONG", "both connections answer")
    stop = threading.Event()
    threading.Thread(target=owner_pings, args=(port, cid, stop), daemon=True).start()

    redis.pause()
    try:
        a.s.sendall(H.resp_command("MC.PUTSTART", cid, "held", 4096) +
                    H.resp_command("MC.PUTEND", cid, "held") + H.resp_command("PING"))
        time.sleep(1)  # A's commands ran in earlier loop iterations than B's PING
        t0 = time.monotonic()
        try:
            pong = b.call("PING")
        except OSError as e:  # before: the loop waited for the store, B timed out
            pong = repr(e)
        check(pong == "PONG", "another connection's PING answers while the store is "
              "stopped (%r after %.1f s)" % (pong, time.monotonic() - t0))
        check(not readable(a, 3), "no reply of the put's connection leaves before its "
              "entry is stored")
    finally:
        redis.resume()
    got = [a.read(), a.read(), a.read()]
    check(got[1:] == ["OK", "PONG"] and not isinstance(got[0], T.Err),
          "after SIGCONT the put's replies and the PING arrive in order (%r)" % (got,))
    stop.set()
    r = T.call1(port, "MC.QUERYKEY", "held")
    check(not isinstance(r, T.Err), "the put object is readable (%r)" % (r,))
    check(b.call("PING") == "PONG", "the other connection still answers")
    a.close()
    b.close()
    check(master.alive(), "the master is running")
    check("Sanitizer" not in open(master.log + ".err").read(), "no sanitizer report")


def main():
    return S.with_one_master("oplog-hold", hold)


if __name__ == "__main__":
    sys.exit(main())
