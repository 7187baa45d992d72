# SPDX-License-Identifier: Apache-2.0
"""Hot standbys (docs/ha.md, "Hot standby") with snapshots and trimming: two crescent-master
--enable_ha, election and op-log in a real redis-server (or, with the argument etcd, both in a
real etcd), Redis snapshot catalog keeping one snapshot. The standby's INFO ha follows the
leader's op-log; a snapshot trims the log behind it (it keeps following); while the standby is
stopped (SIGSTOP) a snapshot trims the log past what it applied: it notices the gap, rebuilds
from the snapshot and the log, and follows again; kill -9 of the leader: the standby serves
after replaying only the tail, with every acknowledged object. Exit 0 pass, 1 fail, 77 skip."""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402
import test_master_ha as T  # noqa: E402
import test_master_ha_snapshot as S  # noqa: E402

check = T.check


class HotMaster(S.SnapMaster):
    """A snapshot master of test_master_ha_snapshot with hot standby on, one snapshot kept."""

    def __init__(self, *a):
        super().__init__(*a)
        self.args = [x for x in self.args if x not in ("--ha_hot_standby", "no")]
        i = self.args.index("--snapshot_retention_count")
        self.args[i + 1] = "1"


def applied(m):
    return int(m.info("ha").get("ha_standby_applied_seq", "0"))


def scenario(cluster, oplog):
    leader, epoch = cluster.start_and_lead()
    if leader is None:
        return
    standby = [m for m in cluster.masters if m is not leader][0]
    T.setup_clients(leader.port)
    writer = T.Writer(cluster)
    stop = threading.Event()
    threading.Thread(target=T.ping_loop, args=(cluster, T.CLIENT_A, stop), daemon=True).start()
    threading.Thread(target=T.ping_loop, args=(cluster, T.CLIENT_B, stop), daemon=True).start()

    print("the standby follows the leader's op-log")
    S.puts(writer, leader, "a", 200, 10)
    T.standbys_follow(cluster, leader, int(leader.info("ha")["oplog_durable_seq"]), "puts")
    check(standby.info("ha").get("ha_standby_rebuilds") == "1",
          "one state built (%s)" % standby.info("ha").get("ha_standby_rebuilds"))

    print("a snapshot trims the log behind the standby: it keeps following")
    S.snapshot(leader, 0)
    S.puts(writer, leader, "b", 100, 10)
    T.standbys_follow(cluster, leader, int(leader.info("ha")["oplog_durable_seq"]),
                      "after a trim behind it")
    check(standby.info("ha").get("ha_standby_rebuilds") == "1",
          "no rebuild (%s)" % standby.info("ha").get("ha_standby_rebuilds"))

    print("the log is trimmed past the stopped standby: it rebuilds and follows")
    os.kill(standby.proc.pid, signal.SIGSTOP)
    seen = int(leader.info("ha")["oplog_durable_seq"])
    S.puts(writer, leader, "c", 100, 10)
    S.snapshot(leader, 1)
    trimmed = int(leader.info("ha").get("oplog_trimmed_to", "0"))
    os.kill(standby.proc.pid, signal.SIGCONT)
    check(trimmed > seen, "trimmed to %d, past the standby's %d" % (trimmed, seen))
    S.puts(writer, leader, "d", 50, 10)
    T.standbys_follow(cluster, leader, int(leader.info("ha")["oplog_durable_seq"]),
                      "after a trim past it")
    check(standby.info("ha").get("ha_standby_rebuilds") == "2" and
          "hot standby: rebuilding the state" in standby.logtext(),
          "the standby noticed the gap and rebuilt its state (%s)"
          % standby.info("ha").get("ha_standby_rebuilds"))

    print("kill -9 of the leader: the standby replays only the tail")
    S.puts(writer, leader, "e", 30, 10)
    new, _ = S.kill_leader(cluster, leader)
    if new is None:
        return
    check(new is standby, "the standby leads")
    T.hot_promotion(new, oplog, "kill -9")
    T.verify(new, writer, "after the hot promotion")
    stop.set()


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "redis"
    skip = H.prerequisites(kind)
    if skip is not None:
        return skip
    with H.MasterRun("crescent-ha-hot.", kind) as run:
        oplog = S.EtcdOplog(run.backend) if kind == "etcd" else S.RedisOplog(run.redis)
        run.masters = [HotMaster(run.path, i, run.backend, oplog.uri, T.CLUSTER, run.redis)
                       for i in (1, 2)]
        cluster = T.Cluster(run.masters)
        t0 = time.time()
        scenario(cluster, oplog)
        run.finish("hot standby (%s)" % kind, t0, cluster)
    return 0 if run.ok else 1


if __name__ == "__main__":
    sys.exit(main())
