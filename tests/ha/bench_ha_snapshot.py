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
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402

MASTER = os.path.join(H.BUILD, "bin", "crescent-master")
CID = b"d" * 32
BASE = 1 << 30


def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def push(port, key, entries):
    """RPUSHes entries in chunks of 1000 over one pipelined connection."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        f = s.makefile("rb")
        chunks = 0
        for i in range(0, len(entries), 1000):
            s.sendall(cmd("RPUSH", key, *entries[i:i + 1000]))
            chunks += 1
        for _ in range(chunks):
            f.readline()


def call(port, *args):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(cmd(*args))
        data = b""
        while True:
            chunk = s.recv(65536)
            data += chunk
            if not chunk or (data[:1] != b"$" and data.endswith(b"\r\n")):
                break
            if data[:1] == b"$":
                n = int(data[1:data.index(b"\r\n")])
                if len(data) >= data.index(b"\r\n") + 2 + n + 2:
                    break
    return data


def info(port, section):
    text = call(port, "INFO", section).decode()
    return dict(l.split(":", 1) for l in text.split("\r\n") if ":" in l)


def cpu_ms(pid):
    """User + system CPU time of process pid so far (ms): on a shared machine a steadier figure
    than wall time."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 // os.sysconf("SC_CLK_TCK")


def start(tmp, redis, cluster, name):
    port = H.free_port()
    hp = redis.uri.split("://", 1)[1]
    proc = H.spawn([MASTER, "--port", str(port), "--bind", "127.0.0.1", "--threads", "1",
                    "--metrics_port", "0", "--memory", "4mb", "--enable_ha", "yes",
                    "--ha_backend_connstring", hp, "--cluster_id", cluster,
                    "--oplog_store", redis.uri, "--enable_snapshot", "yes",
                    "--enable_snapshot_restore", "yes", "--snapshot_interval_seconds", "3600",
                    "--snapshot_local_path", os.path.join(tmp, "snaps"),
                    "--snapshot_catalog_store_type", "redis",
                    "--snapshot_catalog_store_connstring", hp,
                    "--logfile", os.path.join(tmp, name + ".log")], open(os.devnull, "w"))
    for _ in range(6000):
        try:
            if info(port, "ha").get("ha_state") == "serving":
                return proc, port
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("master %s did not serve" % name)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    objects = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    tail = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    tmp = H.TempDir("crescent-bench-hasnap.")
    redis = H.RedisBackend(tmp.path)
    times, cpus = [], []
    try:
        redis.start()
        for r in range(rounds):
            cluster = "hasnap%d" % r
            key = "crescent/{%s}/oplog" % cluster
            log = [b"1 1 R %s host" % CID, b"1 2 M %s seg %d %d 127.0.0.1:1 tcp %%"
                   % (CID, BASE, 1 << 40)]
            log += [b"1 %d P obj%08d 4096 0 0 1 seg %d" % (i + 3, i, BASE + i * 4096)
                    for i in range(objects)]
            push(redis.port, key, log)
            a, pa = start(tmp.path, redis, cluster, "a%d" % r)
            epoch = int(info(pa, "ha")["ha_epoch"])
            call(pa, "MC.SNAPSHOT")
            while info(pa, "snapshot").get("snapshot_ok") != "1":
                time.sleep(0.05)
            seq0 = objects + 2
            push(redis.port, key, [b"%d %d P tail%08d 4096 0 0 1 seg %d"
                                   % (epoch, seq0 + 1 + i, i, BASE + (objects + i) * 4096)
                                   for i in range(tail)])
            a.terminate()
            a.wait()
            b, pb = start(tmp.path, redis, cluster, "b%d" % r)
            st, ss, cpu = info(pb, "ha"), info(pb, "snapshot"), cpu_ms(b.pid)
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
    finally:
        H.cleanup()
        redis.stop()
        tmp.remove()


if __name__ == "__main__":
    main()
