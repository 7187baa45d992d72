# SPDX-License-Identifier: Apache-2.0
"""Recovery time of a new HA leader from a snapshot plus the op-log tail (docs/ha.md,
"Snapshots and the op-log"; not part of make test). Per round: a fresh redis-server list holds
an op-log of one client, one 1 TiB segment and OBJECTS P entries (4 KiB objects at increasing
addresses); master A (--enable_ha, snapshots in a temporary directory, Redis catalog) replays
it, takes a snapshot on MC.SNAPSHOT (the log is trimmed to nothing), then TAIL more P entries
are pushed after it and A is stopped (SIGTERM: it releases the lease); master B then recovers:
loads the snapshot and replays the tail. Prints B's ha_last_recovery_ms (fence + snapshot load
+ tail replay + pool swap), snapshot_restore_ms and the entries replayed; then the median.

    CRESCENT_BUILD=build python3 tests/ha/bench_ha_snapshot.py ROUNDS OBJECTS TAIL
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402

call = H.call_raw


def cpu_ms(pid):
    """User + system CPU time of process pid so far (ms): on a shared machine a steadier figure
    than wall time."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 // os.sysconf("SC_CLK_TCK")


def start(tmp, redis, cluster, name):
    hp = redis.uri.split("://", 1)[1]
    proc, port = H.bench_master(tmp, redis, cluster, name, [
        "--enable_snapshot", "yes", "--enable_snapshot_restore", "yes",
        "--snapshot_interval_seconds", "3600", "--ha_hot_standby", "no", "--snapshot_local_path", os.path.join(tmp, "snaps"),
        "--snapshot_catalog_store_type", "redis", "--snapshot_catalog_store_connstring", hp])
    st = H.wait_info(port, "ha", lambda st: st.get("ha_state") == "serving", 300)
    if st.get("ha_state") != "serving":
        raise RuntimeError("master %s did not serve" % name)
    return proc, port


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    objects = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    tail = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    times, cpus = [], []
    with H.MasterRun("crescent-bench-hasnap.") as run:
        redis = run.redis
        for r in range(rounds):
            cluster = "hasnap%d" % r
            key = "crescent/{%s}/oplog" % cluster
            H.push_list(redis.port, key, H.bench_oplog(objects))
            a, pa = start(run.path, redis, cluster, "a%d" % r)
            epoch = int(H.info(pa, "ha")["ha_epoch"])
            call(pa, "MC.SNAPSHOT")
            while H.info(pa, "snapshot").get("snapshot_ok") != "1":
                time.sleep(0.05)
            seq0 = objects + 2
            H.push_list(redis.port, key, [b"%d %d P tail%08d 4096 0 0 1 seg %d"
                                          % (epoch, seq0 + 1 + i, i,
                                             H.BENCH_BASE + (objects + i) * 4096)
                                          for i in range(tail)])
            a.terminate()
            a.wait()
            b, pb = start(run.path, redis, cluster, "b%d" % r)
            st, ss, cpu = H.info(pb, "ha"), H.info(pb, "snapshot"), cpu_ms(b.pid)
            ms = int(st["ha_last_recovery_ms"])
            times.append(ms)
            cpus.append(cpu)
            print("round %d: snapshot %s (%s objects, loaded in %s ms) + %s op-log entries: "
                  "recovery %d ms (master B used %d ms of CPU from exec to serving)"
                  % (r + 1, st["ha_restored_snapshot"], ss["snapshot_restored_objects"],
                     ss["snapshot_restore_ms"], st["ha_replayed_after_snapshot"], ms, cpu),
                  flush=True)
            b.kill()
            b.wait()
            call(redis.port, "FLUSHALL")
        print("median recovery from a snapshot of %d objects + %d entries: %d ms (CPU %d ms)"
              % (objects, tail, statistics.median(times), statistics.median(cpus)))
        run.ok = True


if __name__ == "__main__":
    main()
