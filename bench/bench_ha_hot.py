# SPDX-License-Identifier: Apache-2.0
"""Promotion time of a hot vs a cold standby (docs/ha.md, "Hot standby"): writes an op-log of N
object entries into a fresh redis-server list (as bench_ha_replay.py does), starts a leader on
it, then a standby with --ha_hot_standby yes or no; once the hot standby has applied the whole
log (a cold one: after 2 s), kill -9 of the leader; the standby's ha_last_recovery_ms (fence +
replay + pool swap) and ha_replayed_at_promotion are read once it serves. Prints one line per
round and the medians.

    python3 bench/bench_ha_hot.py [ROUNDS] [ENTRIES]
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ha"))
import bench_ha_replay as B  # noqa: E402
import ha_harness as H  # noqa: E402


def master(tmp, redis, cluster, name, hot):
    port = H.free_port()
    proc = H.spawn([B.MASTER, "--port", str(port), "--bind", "127.0.0.1", "--threads", "1",
                    "--metrics_port", "0", "--memory", "4mb", "--enable_ha", "yes",
                    "--ha_backend_connstring", redis.uri.split("://", 1)[1], "--cluster_id",
                    cluster, "--oplog_store", redis.uri, "--ha_hot_standby", hot, "--logfile",
                    os.path.join(tmp.path, "%s.log" % name)], open(os.devnull, "w"))
    return port, proc


def wait(port, pred, secs=120):
    st = {}
    t0 = time.time()
    while time.time() - t0 < secs:
        try:
            st = B.info_ha(port)
            if pred(st):
                return st
        except OSError:
            pass
        time.sleep(0.05)
    return st


def one(tmp, redis, r, n, hot):
    cluster = "hot%d%s" % (r, hot)
    B.fill(redis.port, "crescent/{%s}/oplog" % cluster, n)
    lport, leader = master(tmp, redis, cluster, "leader%d%s" % (r, hot), "no")
    wait(lport, lambda st: st.get("ha_state") == "serving")
    sport, standby = master(tmp, redis, cluster, "standby%d%s" % (r, hot), hot)
    if hot == "yes":
        wait(sport, lambda st: int(st.get("ha_standby_applied_seq", 0) or 0) >= n + 2)
    else:
        wait(sport, lambda st: st.get("ha_state") == "standby")
        time.sleep(2)
    leader.kill()
    leader.wait()
    st = wait(sport, lambda st: st.get("ha_state") == "serving")
    standby.kill()
    standby.wait()
    return int(st.get("ha_last_recovery_ms", -1)), st.get("ha_replayed_at_promotion")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    tmp = H.TempDir("crescent-bench-hot.")
    redis = H.RedisBackend(tmp.path)
    res = {"yes": [], "no": []}
    try:
        redis.start()
        for r in range(rounds):
            for hot in ("yes", "no"):
                ms, rep = one(tmp, redis, r, n, hot)
                res[hot].append(ms)
                print("round %d: hot standby %s: %s entries replayed at promotion, recovery %d ms"
                      % (r + 1, hot, rep, ms), flush=True)
        for hot in ("yes", "no"):
            print("median promotion (%d-entry log), hot standby %s: %d ms"
                  % (n + 2, hot, statistics.median(res[hot])))
    finally:
        H.cleanup()
        redis.stop()
        tmp.remove()


if __name__ == "__main__":
    main()
