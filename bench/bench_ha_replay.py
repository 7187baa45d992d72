# SPDX-License-Identifier: Apache-2.0
"""Replay time of a new HA leader (make bench-ha-replay): writes an op-log of N object
entries (one client, one 1 TiB segment, N P entries of 4 KiB objects at increasing addresses)
into a fresh redis-server list, starts one crescent-master --enable_ha on it and reads INFO ha:
ha_last_recovery_ms (fence + replay + pool swap) and oplog_replayed. The master is a cold
standby (--ha_hot_standby no): a hot one would apply the log before it leads, replaying nothing. Prints one line per round
and the median.

    python3 bench/bench_ha_replay.py [ROUNDS] [ENTRIES]
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ha"))
import ha_harness as H  # noqa: E402


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    times = []
    with H.MasterRun("crescent-bench-replay.") as run:
        for r in range(rounds):
            cluster = "replay%d" % r
            H.push_list(run.redis.port, "crescent/{%s}/oplog" % cluster, H.bench_oplog(n))
            proc, port = H.bench_master(run.path, run.redis, cluster, "m%d" % r,
                                          ["--ha_hot_standby", "no"])
            st = H.wait_info(port, "ha", lambda st: st.get("ha_state") == "serving", 30)
            ms = int(st.get("ha_last_recovery_ms", -1))
            times.append(ms)
            print("round %d: %s entries replayed, recovery %d ms (state %s)"
                  % (r + 1, st.get("oplog_replayed"), ms, st.get("ha_state")), flush=True)
            proc.kill()
            proc.wait()
        print("median recovery of %d entries: %d ms" % (n + 2, statistics.median(times)))
        run.ok = True


if __name__ == "__main__":
    main()
