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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ha"))
import ha_harness as H  # noqa: E402


def wait(port, pred, secs=120):
    return H.wait_info(port, "ha", pred, secs)


def one(tmp, redis, r, n, hot):
    cluster = "hot%d%s" % (r, hot)
    H.push_list(redis.port, "crescent/{%s}/oplog" % cluster, H.bench_oplog(n))
    leader, lport = H.bench_master(tmp.path, redis, cluster, "leader%d%s" % (r, hot),
                                   ["--ha_hot_standby", "no"])
    wait(lport, lambda st: st.get("ha_state") == "serving")
    standby, sport = H.bench_master(tmp.path, redis, cluster, "standby%d%s" % (r, hot),
                                    ["--ha_hot_standby", hot])
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
    res = {"yes": [], "no": []}
    with H.MasterRun("crescent-bench-hot.") as run:
        for r in range(rounds):
            for hot in ("yes", "no"):
                ms, rep = one(run.tmp, run.redis, r, n, hot)
                res[hot].append(ms)
                print("round %d: hot standby %s: %s entries replayed at promotion, recovery %d ms"
                      % (r + 1, hot, rep, ms), flush=True)
        for hot in ("yes", "no"):
            print("median promotion (%d-entry log), hot standby %s: %d ms"
                  % (n + 2, hot, statistics.median(res[hot])))
        run.ok = True


if __name__ == "__main__":
    main()
