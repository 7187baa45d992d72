# SPDX-License-Identifier: Apache-2.0
"""Replay time of a new HA leader (make bench-ha-replay): writes an op-log of N object
entries (one client, one 1 TiB segment, N P entries of 4 KiB objects at increasing addresses)
into a fresh redis-server list, starts one crescent-master --enable_ha on it and reads INFO ha:
ha_last_recovery_ms (fence + replay + pool swap) and oplog_replayed. Prints one line per round
and the median.

    python3 bench/bench_ha_replay.py [ROUNDS] [ENTRIES]
"""
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ha"))
import ha_harness as H  # noqa: E402

MASTER = os.path.join(H.BUILD, "bin", "crescent-master")
CID = "d" * 32


cmd = H.resp_command


def fill(port, key, n):
    """RPUSHes the log in chunks over one pipelined connection."""
    base = 1 << 30
    entries = [b"1 1 R %s host" % CID.encode(),
               b"1 2 M %s seg %d %d 127.0.0.1:1 tcp %%" % (CID.encode(), base, 1 << 40)]
    entries += [b"1 %d P obj%08d 4096 0 0 1 seg %d" % (i + 3, i, base + i * 4096)
                for i in range(n)]
    with socket.create_connection(("127.0.0.1", port)) as s:
        f = s.makefile("rb")
        chunks = 0
        for i in range(0, len(entries), 1000):
            s.sendall(cmd("RPUSH", key, *entries[i:i + 1000]))
            chunks += 1
        for _ in range(chunks):
            f.readline()


def info_ha(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(cmd("INFO", "ha"))
        data = b""
        while not data.endswith(b"\r\n\r\n") or data.count(b"\r\n") < 3:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return dict(l.split(":", 1) for l in data.decode().split("\r\n") if ":" in l)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    tmp = H.TempDir("crescent-bench-replay.")
    redis = H.RedisBackend(tmp.path)
    times = []
    try:
        redis.start()
        hp = redis.uri.split("://", 1)[1]
        for r in range(rounds):
            cluster = "replay%d" % r
            fill(redis.port, "crescent/{%s}/oplog" % cluster, n)
            port = H.free_port()
            proc = H.spawn([MASTER, "--port", str(port), "--bind", "127.0.0.1", "--threads", "1",
                            "--metrics_port", "0", "--memory", "4mb", "--enable_ha", "yes",
                            "--ha_backend_connstring", hp, "--cluster_id", cluster,
                            "--oplog_store", redis.uri, "--logfile",
                            os.path.join(tmp.path, "m%d.log" % r)], open(os.devnull, "w"))
            st = {}
            for _ in range(600):
                try:
                    st = info_ha(port)
                    if st.get("ha_state") == "serving":
                        break
                except OSError:
                    pass
                time.sleep(0.05)
            ms = int(st.get("ha_last_recovery_ms", -1))
            times.append(ms)
            print("round %d: %s entries replayed, recovery %d ms (state %s)"
                  % (r + 1, st.get("oplog_replayed"), ms, st.get("ha_state")), flush=True)
            proc.kill()
            proc.wait()
        print("median recovery of %d entries: %d ms" % (n + 2, statistics.median(times)))
    finally:
        H.cleanup()
        redis.stop()
        tmp.remove()


if __name__ == "__main__":
    main()
