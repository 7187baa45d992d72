# SPDX-License-Identifier: Apache-2.0
"""libcrescent follows the leader of an HA group given the group's election backend as its
master address (redis://host:port, etcd://host:port;host:port or k8s://ns/lease; arguments:
redis | etcd | k8s URI, the last from test_master_ha_k8s.sh). Three crescent-master --enable_ha
with the op-log in a real redis-server; tests/ha/client_follow (a C application on
libcrescent.so) puts and gets checksummed objects while the leader is killed with kill -9.
Checks: the application's calls go on through the new leader; every put reported OK is readable
afterwards with the right bytes; no get ever returned wrong bytes; the store logged the switch to
the new leader; its segment is mounted on the new leader (MC.SEGMENTS) after the remount grace
period (so it pings the new leader); a bad address (unknown scheme, bad cluster id, unreachable
backend, a cluster without a leader) fails create with a clear error within the stated window.
Exit 0 pass, 1 fail, 77 skip."""
import os
import queue
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402
import test_master_ha as T  # noqa: E402

APP = os.path.join(H.BUILD, "tests", "ha", "client_follow")
IO_TIMEOUT_S = 3  # ha/'s bound on one backend call (HA_DEFAULT_IO_TIMEOUT_MS)
check, failures = H.check, H.failures  # one list: H.stop_masters_and_check reports there too


def app_env(cluster):
    env = dict(os.environ, MC_STORE_CLUSTER_ID=cluster, MOONCAKE_STORE_CHECKSUM="1")
    return env


class App:
    """client_follow run MASTER, its stdout lines in a queue."""

    def __init__(self, master, cluster, tmp):
        self.err = open(os.path.join(tmp, "app.err"), "w+")
        self.p = subprocess.Popen([APP, "run", master], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err,
                                  env=app_env(cluster), text=True)
        H._children.append(self.p)  # killed by H.cleanup()
        self.lines = queue.Queue()
        self.progress = {}
        self.logs, self.fails, self.bad, self.gaps = [], [], [], []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            line = line.rstrip("\n")
            if line.startswith("PROGRESS "):
                self.progress = dict(kv.split("=") for kv in line.split()[1:])
                continue
            if line.startswith("LOG "):
                self.logs.append(line[4:])
            elif line.startswith("FAIL "):
                self.fails.append(line[5:])
            elif line.startswith("GAP "):
                self.gaps.append(tuple(int(x) for x in line.split()[1:]))
            elif line.startswith("BAD "):
                self.bad.append(line[4:])
            self.lines.put(line)
        self.lines.put(None)

    def expect(self, prefix, timeout=60):
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                return None
            if line.startswith(prefix):
                return line
        return None

    def acked(self):
        return int(self.progress.get("acked", 0))

    def last_ok_ms(self):
        return int(self.progress.get("ms", 0))

    def wait_acked(self, n, timeout=60):
        t0 = time.time()
        while time.time() - t0 < timeout and self.p.poll() is None:
            if self.acked() >= n:
                return True
            time.sleep(0.1)
        return False

    def send(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()


def create_case(label, master, cluster, window_ms, want, max_s, **env):
    """client_follow create: create must fail with error name want within max_s seconds."""
    t0 = time.time()
    r = subprocess.run([APP, "create", master, str(window_ms)], capture_output=True, text=True,
                       env=dict(app_env(cluster), **env), timeout=max_s + 30)
    took = time.time() - t0
    out = r.stdout.strip()
    check(r.returncode == 1 and out.startswith("CREATE %s " % want) and took <= max_s,
          "%s: create fails with %s in %.1f s (at most %.1f s): %s"
          % (label, want, took, max_s, out[:300]))
    return out


def dead_kubeconfig(tmp):
    """A copy of $KUBECONFIG whose API server is a port nothing listens on."""
    text = open(os.environ["KUBECONFIG"]).read()
    path = os.path.join(tmp, "dead-kubeconfig")
    with open(path, "w") as f:
        f.write(text.replace(":%s" % os.environ["K8S_PORT"], ":%d" % H.free_port()))
    return path


def bad_addresses(kind, master, cluster, tmp):
    print("bad master addresses")
    out = create_case("unknown scheme", "zk://127.0.0.1:2181", cluster, 1000, "EINVAL", 2)
    check("unknown scheme 'zk'" in out, "the message names the scheme")
    out = create_case("bad MC_STORE_CLUSTER_ID", master, "no such cluster", 1000, "EINVAL", 2)
    check("MC_STORE_CLUSTER_ID" in out, "the message names MC_STORE_CLUSTER_ID")
    if kind == "redis":
        dead = "redis://127.0.0.1:%d" % H.free_port()
    elif kind == "etcd":
        dead = "etcd://127.0.0.1:%d;127.0.0.1:%d" % (H.free_port(), H.free_port())
    if kind != "k8s":
        create_case("unreachable backend", dead, cluster, 1000, "RPC_FAIL", IO_TIMEOUT_S + 2)
        nobody, other = master, cluster + "-none"
    else:  # the API server comes from the kubeconfig; the URI names the Lease
        create_case("unreachable API server", master, cluster, 1000, "RPC_FAIL",
                    IO_TIMEOUT_S + 2, KUBECONFIG=dead_kubeconfig(tmp))
        nobody, other = master + "-none", cluster
    out = create_case("a cluster without a leader", nobody, other, 1500, "RPC_FAIL",
                      1.5 + IO_TIMEOUT_S + 2)
    check("no leader of cluster" in out, "the message says no leader is recorded")


def follow(cluster, master, tmp, kind):
    leader, epoch = cluster.start_and_lead(start=False)
    if leader is None:
        return
    print("application with master address %s" % master)
    app = App(master, cluster_id(), tmp)
    ready = app.expect("READY ", 60)
    check(ready is not None, "the application joined the pool: %s" % ready)
    if ready is None:
        return
    _, client_id, seg = ready.split()
    check(app.wait_acked(50), "it puts objects (%d acknowledged)" % app.acked())
    kills = 2 if kind == "redis" else 1
    for k in range(kills):
        old = leader
        before = app.acked()
        t_kill = H.mono_ms()
        print("kill -9 of the leader %s (%d puts acknowledged so far)" % (old.addr, before))
        old.proc.send_signal(signal.SIGKILL)
        old.proc.wait()
        leader, epoch, took = cluster.wait_leader(exclude=old)
        check(leader is not None, "a new leader %s serves after %.1f s (epoch %s)"
              % (leader.addr if leader else None, took or 0, epoch))
        if leader is None:
            return
        t1 = time.time()
        while time.time() - t1 < 60 and app.last_ok_ms() <= t_kill and app.p.poll() is None:
            time.sleep(0.1)
        ok = app.last_ok_ms() > t_kill and app.wait_acked(app.acked() + 50, timeout=60)
        gap = [b for a, b in app.gaps if t_kill < b]  # the first pause that ends after the kill
        check(ok,
              "puts go on through the new leader (%d acknowledged; the first after the kill "
              "at +%s ms)" % (app.acked(), gap[0] - t_kill if gap else "?"))
        time.sleep(T.GRACE_S + 1)  # past the remount grace: an owner that did not ping is gone
        switched = [l for l in app.logs if "master leader %s " % leader.addr in l]
        check(switched, "the store logged its switch to %s (%s)"
              % (leader.addr, (switched or app.logs or ["no log line"])[-1]))
        segs = T.call1(leader.port, "MC.SEGMENTS")
        mine = [T.fields(s) for s in segs if T.fields(s).get("name") == seg]
        check(len(mine) == 1 and mine[0].get("owner") == client_id,
              "its segment %s is mounted on the new leader, owned by %s: %s"
              % (seg, client_id, mine))
        old.start()  # back as a standby
    app.send("check")
    v = app.expect("VERIFY ", 120)
    check(v is not None, "the application read back every acknowledged object: %s" % v)
    if v:
        f = dict(kv.split("=") for kv in v.split()[1:])
        check(int(f["acked"]) > 100 and f["ok"] == f["acked"] and f["bad"] == "0" and
              f["missing"] == "0" and f["other"] == "0",
              "every put reported OK is there with the right bytes (%s)" % v)
        check(f["health"] == "0", "the store is healthy (health_check %s)" % f["health"])
    check(not app.bad, "no get returned wrong bytes (%s)" % app.bad[:3])
    put_fails = [f for f in app.fails if f.startswith("put ")]
    print("  (%d puts failed during %d fail-over(s): %s)" % (len(put_fails), kills,
                                                           "; ".join(put_fails[:4])))
    check(not put_fails, "no put failed across the fail-overs (one that spanned a fail-over is "
          "done again on the new leader)")
    app.send("quit")
    bye = app.expect("BYE", 60)
    try:
        app.p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        app.p.kill()
    check(bye is not None and app.p.returncode == 0, "the application exits cleanly (rc %s)"
          % app.p.returncode)
    app.err.seek(0)
    err = app.err.read()
    check("Sanitizer" not in err and "runtime error:" not in err,
          "no sanitizer report from the application")


def daemon_remount(tmp, backend, master):
    """Masters without an op-log (a new leader starts empty): crescent-client --master URI
    remounts its segment on the new leader."""
    print("crescent-client --master %s, masters without an op-log" % master)
    cid = cluster_id() + "-nolog"
    masters = [T.Master(tmp, i, backend, "", cid) for i in (11, 12)]
    cluster = T.Cluster(masters)
    leader, epoch = cluster.start_and_lead()
    if leader is None:
        return
    log = os.path.join(tmp, "daemon.log")
    d = subprocess.Popen([os.path.join(H.BUILD, "bin", "crescent-client"), "--master", master,
                          "--port", str(H.free_port()), "--global_segment_size", "16mb",
                          "--local_buffer_size", "1mb", "--logfile", log],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=app_env(cid))
    H._children.append(d)
    ready = d.stdout.readline().strip()
    check(ready.startswith("crescent-client ready: client "), "the daemon joined: %s" % ready)
    if not ready.startswith("crescent-client ready"):
        return
    seg = ready.split()[5]

    def mounted(m):
        try:
            return any(T.fields(s).get("name") == seg for s in T.call1(m.port, "MC.SEGMENTS"))
        except (OSError, ConnectionError):
            return False
    check(mounted(leader), "its segment %s is mounted on the leader" % seg)
    leader.proc.send_signal(signal.SIGKILL)
    leader.proc.wait()
    new, epoch, took = cluster.wait_leader(exclude=leader)
    check(new is not None, "a new leader serves after %.1f s (epoch %s)" % (took or 0, epoch))
    t0 = time.time()
    while new is not None and time.time() - t0 < 15 and not mounted(new):
        time.sleep(0.2)
    check(new is not None and mounted(new), "the daemon remounted %s on the empty new leader "
          "within %.1f s" % (seg, time.time() - t0))
    text = open(log).read() if os.path.exists(log) else ""
    check("remounted 1 segment" in text, "its log says so")
    d.send_signal(signal.SIGTERM)
    try:
        d.wait(timeout=30)
    except subprocess.TimeoutExpired:
        d.kill()
        d.wait()
    rest = d.stdout.read()
    check(d.returncode == 0, "the daemon exits 0 on SIGTERM (rc %s)" % d.returncode)
    check("Sanitizer" not in rest and "runtime error:" not in rest,
          "no sanitizer report from the daemon")
    H.stop_masters_and_check(masters, logs=(".err",))


def ipv6_leader(tmp, backend):
    """A leader whose first bind address is ::1 is recorded as [::1]:port, which the store
    client parses and follows; an unbracketed IPv6 rpc_address with a port is refused at
    start-up as ambiguous, and so is such a master address given to the store."""
    print("IPv6 leader address")
    port = H.free_port("::1")
    bad = T.Master(tmp, 21, backend, "", cluster_id() + "-v6bad")
    r = subprocess.run(bad.args + ["--rpc_address", "::1:%d" % port], capture_output=True,
                       text=True, timeout=30)
    check(r.returncode != 0 and "rpc_address: address '::1:%d' is ambiguous" % port in r.stderr,
          "--rpc_address ::1:%d is refused as ambiguous (rc %d): %s"
          % (port, r.returncode, r.stderr.strip()[-200:]))
    out = create_case("unbracketed IPv6 master address", "::1:%d" % port, cluster_id(), 1000,
                      "EINVAL", 2)
    check("is ambiguous: an IPv6 address with a port goes in brackets" in out,
          "the message says the address is ambiguous")
    cid = cluster_id() + "-v6"
    m = T.Master(tmp, 22, backend, "", cid)
    m.args += ["--bind", "::1 127.0.0.1"]  # the first bind address is the advertised one
    m.start()
    leader, epoch, _ = T.Cluster([m]).wait_leader()
    check(leader is m, "the ::1 master leads (epoch %s)" % epoch)
    view = m.info_ha()
    check(view.get("ha_leader") == "[::1]:%d" % m.port,
          "it is recorded bracketed: %s" % view.get("ha_leader"))
    r = subprocess.run([APP, "create", backend.uri, "3000"], capture_output=True, text=True,
                       env=app_env(cid), timeout=60)
    check(r.returncode == 0 and r.stdout.startswith("CREATE OK "),
          "the store client follows the record to [::1]:%d: %s" % (m.port, r.stdout.strip()))
    H.stop_masters_and_check([m], logs=(".err",))


def cluster_id():
    return "client-follow-%d" % os.getpid()


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "redis"
    skip = H.prerequisites(kind, (T.MASTER, APP))
    if skip is not None:
        return skip
    uri = sys.argv[2] if len(sys.argv) > 2 and "://" in sys.argv[2] else None
    with H.MasterRun("crescent-client-follow.", kind, uri) as run:
        run.log_tail = 3000
        run.dump.append(("application stderr", os.path.join(run.path, "app.err")))
        backend = run.backend
        master = backend.uri
        if kind == "etcd":  # Mooncake's form, endpoints separated by ';' (the first is down)
            master = "etcd://127.0.0.1:%d;%s" % (H.free_port(), master.split("://", 1)[1])
        run.masters = [T.Master(run.path, i, backend, run.redis.uri, cluster_id())
                       for i in (1, 2, 3)]
        cluster = T.Cluster(run.masters)
        for m in run.masters:
            m.start()
        t0 = time.time()
        bad_addresses(kind, master, cluster_id(), run.path)
        follow(cluster, master, run.path, kind)
        if kind == "redis":
            daemon_remount(run.path, backend, master)
            ipv6_leader(run.path, backend)
        run.finish("client follows the leader (%s)" % kind, t0, logs=(".err",))
    return 0 if run.ok else 1


if __name__ == "__main__":
    sys.exit(main())
