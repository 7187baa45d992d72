# SPDX-License-Identifier: Apache-2.0
"""Put throughput of crescent-master's metadata path with and without HA (bench/bench-ha.sh).

Each put is MC.PUTSTART client key 4096 + MC.PUTEND client key (unique keys, one fake 64 GiB
segment: no bytes move, only metadata; the client never pings, so client_live_ttl_sec is
3600). CLIENTS processes each pipeline BATCH puts (all
PUTSTARTs, then all PUTENDs, then an ECHO marker) until PUTS puts are done. Modes, alternating
per round: "plain" (no HA), "ha" (--enable_ha with the redis backend and the op-log in the
same redis-server, one master, so it leads) and, with BENCH_HA_ETCD=1, "etcd" (election and
op-log in one etcd). Prints puts/s per run and the medians.

    python3 bench/bench_ha_put.py [ROUNDS] [PUTS] [CLIENTS] [BATCH]
"""
import multiprocessing
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ha"))
import ha_harness as H  # noqa: E402

MASTER = os.path.join(H.BUILD, "bin", "crescent-master")
CID = "c" * 32
MARK = b"$6\r\nMARK42\r\n"


cmd = H.resp_command


def roundtrip(s, req):
    s.sendall(req)
    buf = b""
    while not buf.endswith(MARK):
        chunk = s.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def worker(port, wid, n, batch, q):
    s = socket.create_connection(("127.0.0.1", port))
    errors, done = 0, 0
    while done < n:
        k = min(batch, n - done)
        keys = [b"k%d-%d" % (wid, done + i) for i in range(k)]
        req = b"".join(cmd("MC.PUTSTART", CID, key, 4096) for key in keys)
        req += b"".join(cmd("MC.PUTEND", CID, key) for key in keys) + cmd("ECHO", "MARK42")
        errors += roundtrip(s, req).count(b"\r\n-")
        done += k
    s.close()
    q.put(errors)


def load(port, puts, clients, batch):
    q = multiprocessing.Queue()
    per = puts // clients
    ps = [multiprocessing.Process(target=worker, args=(port, i, per, batch, q))
          for i in range(clients)]
    t0 = time.time()
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    dt = time.time() - t0
    errors = sum(q.get() for _ in ps)
    return per * clients / dt, errors


def start_master(tmp, args):
    port = H.free_port()
    proc = H.spawn([MASTER, "--port", str(port), "--bind", "127.0.0.1", "--threads", "1",
             "--metrics_port", "0", "--memory", "4mb", "--client_live_ttl_sec", "3600",
             "--logfile",
             os.path.join(tmp, "m%d.log" % port)] + args, open(os.devnull, "w"))
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(cmd("MC.REGISTER", CID, "h") +
                          cmd("MC.MOUNT", CID, "seg", 1 << 30, 64 << 30))
                r = s.recv(100)
                if r.startswith(b"+OK\r\n+OK"):
                    return port, proc
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("master did not serve")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    puts = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    tmp = H.TempDir("crescent-bench-ha.")
    redis = H.RedisBackend(tmp.path)
    modes = ("plain", "ha") + (("etcd",) if os.environ.get("BENCH_HA_ETCD") else ())
    res = {m: [] for m in modes}
    etcd = H.EtcdBackend(tmp.path) if "etcd" in modes else None
    try:
        redis.start()
        if etcd:
            etcd.start()
        for r in range(rounds):
            for mode in modes:
                args = []
                if mode != "plain":
                    store = redis if mode == "ha" else etcd
                    hp = store.uri.split("://", 1)[1]
                    args = ["--enable_ha", "yes", "--ha_backend_type", store.kind,
                            "--ha_backend_connstring", hp, "--cluster_id", "bench%d" % r,
                            "--oplog_store", store.uri]
                port, proc = start_master(tmp.path, args)
                rate, errors = load(port, puts, clients, batch)
                res[mode].append(rate)
                extra = ""
                if mode != "plain":
                    with socket.create_connection(("127.0.0.1", port)) as s:
                        info = roundtrip(s, cmd("INFO", "ha") + cmd("ECHO", "MARK42")).decode()
                    st = dict(l.split(":", 1) for l in info.split("\r\n") if ":" in l)
                    extra = "  op-log entries %s in %s appends (largest %s)" % (
                        st.get("oplog_appended"), st.get("oplog_batches"),
                        st.get("oplog_max_batch"))
                print("round %d %-5s %9.0f puts/s  errors %d%s" % (r + 1, mode, rate, errors,
                                                                  extra), flush=True)
                proc.kill()
                proc.wait()
        mp, mh = statistics.median(res["plain"]), statistics.median(res["ha"])
        print("median plain %.0f puts/s, ha+op-log %.0f puts/s, ratio %.2f" % (mp, mh, mh / mp))
        if etcd:
            me = statistics.median(res["etcd"])
            print("median ha+etcd op-log %.0f puts/s, ratio %.2f" % (me, me / mp))
    finally:
        H.cleanup()
        redis.stop()
        if etcd:
            etcd.stop()
        if not os.environ.get("BENCH_KEEP"):
            tmp.remove()
        else:
            print("kept", tmp.path)


if __name__ == "__main__":
    main()
