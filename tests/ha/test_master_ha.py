# SPDX-License-Identifier: Apache-2.0
"""HA mode of crescent-master: election on a real redis-server, a real etcd or the Kubernetes
Lease API double (arguments: redis | etcd [--oplog=etcd] | k8s URI, the last from
test_master_ha_k8s.sh), op-log in a real redis-server (or, with --oplog=etcd, in the etcd):
three masters, a writer driving MC.* commands, kill -9 of the leader twice and SIGSTOP of a
third leader past its lease. Checks: exactly one master serves at a time and every serving
epoch belongs to one master; standbys answer -NOTLEADER <leader host:port>; every put or remove
acknowledged before a fail-over is there (same segment and address) after it; replicas on a
segment whose owner stopped pinging are dropped after the grace period; a leader woken after
its lease ran out refuses writes. Exit 0 pass, 1 fail, 77 skip."""
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MASTER = H.MASTER
CLIENT_A = "a" * 31 + "1"
CLIENT_B = "b" * 31 + "2"
GRACE_S = 4  # client_live_ttl_sec: the remount grace period of a new leader
check, failures = H.check, H.failures


class Err(Exception):
    """An error reply (-CODE message)."""


def _read(f):
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed")
    t, rest = line[:1], line[1:-2]
    if t in (b"+", b"-"):
        s = rest.decode()
        return Err(s) if t == b"-" else s
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2].decode("latin-1")
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [_read(f) for _ in range(n)]
    raise ConnectionError("bad reply %r" % line)


class Conn:
    """One RESP2 connection; call() returns the reply, an Err for error replies."""

    def __init__(self, port, timeout=5):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.f = self.s.makefile("rb")

    def send(self, *args):
        self.s.sendall(H.resp_command(*args))

    def read(self):
        return _read(self.f)

    def call(self, *args):
        self.send(*args)
        return self.read()

    def close(self):
        self.s.close()


def call1(port, *args, timeout=5):
    c = Conn(port, timeout)
    try:
        return c.call(*args)
    finally:
        c.close()


def fields(flat):
    return dict(zip(flat[0::2], flat[1::2]))


class Master:
    """One crescent-master --enable_ha; memory None leaves --memory out (HA default: 0)."""

    def __init__(self, tmp, idx, backend, oplog_uri, cluster, memory=None):
        self.idx = idx
        self.port = H.free_port()
        self.http = H.free_port()
        self.log = os.path.join(tmp, "master%d.log" % idx)
        self.args = [MASTER, "--port", str(self.port), "--bind", "127.0.0.1", "--threads", "1",
                     "--metrics_port", str(self.http),
                     "--metrics_host", "127.0.0.1", "--enable_ha", "yes",
                     "--ha_backend_type", backend.kind,
                     "--ha_backend_connstring", backend.uri.split("://", 1)[1],
                     "--cluster_id", cluster, "--oplog_store", oplog_uri,
                     "--ha_state_dir", os.path.join(tmp, "state%d" % idx),
                     "--client_live_ttl_sec", str(GRACE_S), "--logfile", self.log]
        if memory is not None:
            self.args += ["--memory", memory]
        self.args += os.environ.get("CRESCENT_MASTER_ARGS", "").split()  # e.g. --loglevel verbose
        if os.environ.get("CRESCENT_IO_BACKEND"):  # make test runs both network backends
            self.args += ["--io-backend", os.environ["CRESCENT_IO_BACKEND"]]
        self.addr = "127.0.0.1:%d" % self.port
        self.proc = None

    def start(self):
        self.proc = H.spawn(self.args, open(self.log + ".err", "a"))  # sanitizer reports
        for _ in range(200):
            try:
                call1(self.port, "PING")
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("master %d did not start" % self.idx)

    def alive(self):
        return self.proc and self.proc.poll() is None

    def role(self):
        try:
            return call1(self.port, "ROLE", timeout=1)
        except (OSError, ConnectionError):
            return None

    def http_json(self, path):
        """(status, JSON object) of an admin HTTP route."""
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.http, path),
                                        timeout=2) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def info_ha(self):
        try:
            text = call1(self.port, "INFO", "ha")
        except (OSError, ConnectionError):
            return {}
        return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


class Cluster:
    def __init__(self, masters):
        self.masters = masters
        self.serving = {}  # epoch -> master index, from every observation
        self.lock = threading.Lock()

    def observe(self):
        """Polls ROLE on every live master; returns the serving one or None. Records epochs."""
        found = []
        for m in self.masters:
            if not m.alive():
                continue
            r = m.role()
            if isinstance(r, list) and r and r[0] == "master":
                found.append((m, r[1]))
        with self.lock:
            for m, ep in found:
                self.serving.setdefault(ep, set()).add(m.idx)
        if len(found) > 1:
            self.overlaps = getattr(self, "overlaps", 0) + 1
        return found[0] if len(found) == 1 else None

    def check_one_serving(self):
        """The end-of-run check: no epoch was served by two masters and no observation found
        two serving at once."""
        bad = {ep: ms for ep, ms in self.serving.items() if len(ms) != 1}
        check(not bad and not getattr(self, "overlaps", 0),
              "no epoch served by two masters, never two serving at once (%s)" % self.serving)

    def start_and_lead(self, start=True):
        """Starts every master (unless start is False), waits for a leader and checks that one
        serves. Returns (leader, epoch): (None, None) when none did within 30 s."""
        for m in self.masters if start else ():
            m.start()
        leader, epoch, _ = self.wait_leader()
        check(leader is not None, "a leader serves (epoch %s)" % epoch)
        return leader, epoch

    def wait_leader(self, timeout=30, exclude=None):
        t0 = time.time()
        while time.time() - t0 < timeout:
            got = self.observe()
            if got and got[0] is not exclude:
                return got[0], got[1], time.time() - t0
            time.sleep(0.1)
        return None, None, None


class Writer:
    """Puts keys through MC.PUTSTART/PUTEND on whichever master leads; records what was
    acknowledged (OK to PUTEND) with the replica addresses PUTSTART handed out."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.acked = {}    # key -> sorted [(segment, addr)]
        self.removed = set()
        self.n = 0
        self.errors = 0
        self.stop = threading.Event()
        self.conn = None
        self.port = None

    def _leader_conn(self):
        for m in self.cluster.masters:
            if m.alive():
                r = m.role()
                if isinstance(r, list) and r and r[0] == "master":
                    try:
                        self.conn = Conn(m.port)
                        self.port = m.port
                        return True
                    except OSError:
                        pass
        return False

    def put_one(self, key, segment=None, replicas=1, size=1000):
        args = ["MC.PUTSTART", CLIENT_A, key, size, "REPLICAS", replicas]
        if segment:
            args += ["SEGMENTS", 1, segment]
        r = self.conn.call(*args)
        if isinstance(r, Err):
            raise r
        reps = sorted((fields(d)["segment"], fields(d)["addr"]) for d in r)
        r = self.conn.call("MC.PUTEND", CLIENT_A, key)
        if isinstance(r, Err):
            raise r
        self.acked[key] = reps

    def run_once(self, key, **kw):
        """One put with fail-over handling; True when acknowledged."""
        for _ in range(400):
            if self.stop.is_set():
                return False
            try:
                if self.conn is None and not self._leader_conn():
                    time.sleep(0.05)
                    continue
                self.put_one(key, **kw)
                return True
            except Err as e:
                self.errors += 1
                if str(e).startswith(("NOTLEADER", "LOADING")):
                    self.conn.close()
                    self.conn = None
                    time.sleep(0.05)
                    continue
                self.last_error = str(e)
                return False  # e.g. OBJECT_ALREADY_EXISTS after an unacknowledged put
            except (OSError, ConnectionError):
                self.errors += 1
                if self.conn:
                    self.conn.close()
                self.conn = None
                return False  # the outcome of this put is unknown: not acknowledged
        return False

    def loop(self):
        while not self.stop.is_set():
            self.n += 1
            self.run_once("w%06d" % self.n, segment="segA")


def ping_loop(cluster, client, stop):
    """Keeps client alive on whichever master leads (the owner's heartbeat)."""
    while not stop.is_set():
        for m in cluster.masters:
            if m.alive():
                try:
                    call1(m.port, "MC.PING", client, timeout=0.3)  # a stopped one
                except (OSError, ConnectionError):
                    pass
        time.sleep(0.5)


def setup_clients(port):
    for cid, seg, base in ((CLIENT_A, "segA", 0x10000000), (CLIENT_B, "segB", 0x20000000)):
        check(call1(port, "MC.REGISTER", cid, "host-" + seg) == "OK", "register %s" % seg)
        r = call1(port, "MC.MOUNT", cid, seg, base, 64 << 20, "endpoint", "127.0.0.1:1")
        check(r == "OK", "mount %s: %r" % (seg, r))


def verify(leader, writer, label, b_present=True):
    """Every acknowledged key is readable with the same replicas (B's may be gone)."""
    c = Conn(leader.port)
    missing, wrong = [], []
    for key, reps in writer.acked.items():
        r = c.call("MC.QUERYKEY", key)
        if key in writer.removed:
            if not (isinstance(r, Err) and str(r).startswith("OBJECT_NOT_FOUND")):
                wrong.append((key, "removed but present"))
            continue
        if isinstance(r, Err):
            missing.append(key)
            continue
        got = sorted((fields(d)["segment"], fields(d)["addr"]) for d in fields(r)["replicas"])
        want = reps if b_present else [x for x in reps if x[0] != "segB"]
        if got != want:
            wrong.append((key, got, want))
    c.close()
    check(not missing, "%s: all %d acknowledged objects present (missing %s)"
          % (label, len(writer.acked) - len(writer.removed), missing[:5]))
    check(not wrong, "%s: same segments and addresses (%s)" % (label, wrong[:3]))


def evict_phase(leader, writer):
    """Big puts overflow segA, so older objects are evicted; the evicted ones are recorded as
    removed, so every later fail-over must keep them gone (their D entries replayed)."""
    print("eviction: big puts overflow segA; what was evicted stays gone after fail-overs")
    writer.stop.clear()  # the background loop has ended; run_once works again
    big = sum(writer.run_once("big%02d" % i, segment="segA", size=6 << 20) for i in range(12))
    check(big >= 1, "%d of 12 puts of 6 MiB acknowledged in a 64 MiB segment (the rest: %s)"
          % (big, getattr(writer, "last_error", "")))
    c = Conn(leader.port)
    gone, before = None, None
    for _ in range(60):  # the housekeeping tick evicts down to the watermark: wait until still
        gone = [k for k in writer.acked if k not in writer.removed and
                isinstance(c.call("MC.QUERYKEY", k), Err)]
        if gone == before:
            break
        before = gone
        time.sleep(1.0)
    c.close()
    check(len(gone) > 0, "%d objects were evicted to make room" % len(gone))
    writer.removed.update(gone)


def standby_errors(cluster, leader):
    for m in cluster.masters:
        if m is leader or not m.alive():
            continue
        t0 = time.time()  # a standby learns the leader at its next poll of the backend
        while time.time() - t0 < 20 and m.info_ha().get("ha_leader") != leader.addr:
            time.sleep(0.1)
        r = call1(m.port, "MC.QUERYKEY", "w000001")
        check(isinstance(r, Err) and str(r) == "NOTLEADER %s" % leader.addr,
              "standby %d answers -NOTLEADER %s (got %r)" % (m.idx, leader.addr, r))
        check(call1(m.port, "PING") == "PONG", "standby %d still answers PING" % m.idx)
        info = m.info_ha()
        check(info.get("ha_state") == "standby" and info.get("ha_leader") == leader.addr,
              "standby %d INFO ha: state standby, leader %s" % (m.idx, leader.addr))
        st, health = m.http_json("/health")
        check(st == 503 and health["role"] == "standby" and m.http_json("/leader")[1]["leader"]
              == leader.addr, "standby %d admin HTTP: /health 503 standby, /leader %s"
              % (m.idx, leader.addr))
    st, health = leader.http_json("/health")
    check(st == 200 and health["role"] == "leader" and health["state"] == "serving",
          "leader admin HTTP /health: 200, leader, serving (%s)" % health)


class RedisOplog:
    """The op-log as a Redis list, read and edited with plain commands."""

    def __init__(self, redis):
        self.redis = redis
        self.key = "crescent/{%s}/oplog" % CLUSTER
        self.uri = redis.uri

    compacts = True

    def first(self):
        return self.redis.command("LINDEX", self.key, "0").split(b"\r\n")[1]

    def length(self):
        return int(self.redis.command("LLEN", self.key)[1:].split(b"\r\n")[0])

    def last_seq(self):
        return int(self.redis.command("LINDEX", self.key, "-1").split(b"\r\n")[1].split()[1])

    def fence(self):
        return int(self.redis.command("GET", "crescent/{%s}/oplog_epoch" % CLUSTER)
                   .split(b"\r\n")[1])

    def add_garbage(self):
        self.redis.command("RPUSH", self.key, "garbage entry")

    def remove_garbage(self):
        self.redis.command("LREM", self.key, "1", "garbage entry")


def b64(s):
    return base64.b64encode(s.encode()).decode()


class EtcdOplog:
    """The op-log as etcd keys crescent/{c}/oplog/<epoch>/<seq>, through the JSON gateway."""

    def __init__(self, etcd):
        self.etcd = etcd
        self.prefix = "crescent/{%s}/oplog/" % CLUSTER
        self.garbage = self.prefix + "9" * 20 + "/" + "0" * 19 + "1"
        self.uri = etcd.uri

    compacts = False

    def length(self):
        end = self.prefix[:-1] + chr(ord(self.prefix[-1]) + 1)
        body = dict(key=b64(self.prefix), range_end=b64(end), count_only=True)
        return int(json.loads(self.etcd.post("kv/range", json.dumps(body))).get("count", 0))

    def _get(self, key, **kw):
        body = dict(key=b64(key), **kw)
        return json.loads(self.etcd.post("kv/range", json.dumps(body))).get("kvs", [])

    def first(self):
        end = self.prefix[:-1] + chr(ord(self.prefix[-1]) + 1)
        kvs = self._get(self.prefix, range_end=b64(end), limit=1)
        return base64.b64decode(kvs[0]["value"]) if kvs else b""

    def fence(self):
        kvs = self._get("crescent/{%s}/oplog_epoch" % CLUSTER)
        return int(base64.b64decode(kvs[0]["value"])) if kvs else 0

    def add_garbage(self):
        self.etcd.post("kv/put", json.dumps({"key": b64(self.garbage),
                                             "value": b64("garbage entry")}))

    def remove_garbage(self):
        self.etcd.post("kv/deleterange", json.dumps({"key": b64(self.garbage)}))


def lib_env():
    """The environment of a python3 that imports the crescent package of this build."""
    lib = os.path.join(H.BUILD, "lib", "libcrescent.so.0")
    env = dict(os.environ, CRESCENT_LIB=lib, PYTHONPATH=os.path.join(ROOT, "python"),
               PYTHONDONTWRITEBYTECODE="1")
    san = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout.split()
    pre = [w for w in san if "/lib" in w and any(x in w for x in ("asan", "ubsan", "tsan"))]
    if pre:  # a sanitizer build: its runtimes go first into python3, leak checks off
        env["LD_PRELOAD"] = " ".join(pre)
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def lib_follows(cluster, leader):
    """libcrescent pointed at a standby follows -NOTLEADER to the leader (lib_follow.py)."""
    standby = next(m for m in cluster.masters if m is not leader and m.alive())
    env = lib_env()
    key = "libcrescent-follows"
    p = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "lib_follow.py"),
                          standby.addr, key], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline().strip()  # "ok" once put and get went through
    r = call1(leader.port, "MC.EXIST", key) if line == "ok" else None
    try:
        out, err = p.communicate(input="", timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    check(line == "ok" and p.returncode == 0,
          "libcrescent given standby %s follows -NOTLEADER to %s (rc %s: %s %s)"
          % (standby.addr, leader.addr, p.returncode, line, err[-600:]))
    check(r == 1, "its object is on the leader (MC.EXIST %r)" % (r,))


def standbys_follow(cluster, leader, want, label):
    """Hot standbys: every live standby's INFO ha shows an applied op-log sequence number that
    reaches want (the leader's last stored entry) within a few reads."""
    standbys = [m for m in cluster.masters if m.alive() and m is not leader]
    seqs, deadline = {}, time.time() + 15
    while time.time() < deadline:
        seqs = {m.idx: int(m.info_ha().get("ha_standby_applied_seq", "0")) for m in standbys}
        if seqs and all(s >= want for s in seqs.values()):
            break
        time.sleep(0.2)
    check(want > 0 and seqs and all(s >= want for s in seqs.values()),
          "%s: the standbys' ha_standby_applied_seq %s reach the leader's entry %d"
          % (label, seqs, want))


def hot_promotion(m, oplog, label):
    """The new leader m was promoted from its hot-standby state: it replayed only the tail."""
    info, n = m.info_ha(), oplog.length()
    rep = int(info.get("ha_replayed_at_promotion", "-1"))
    check(info.get("ha_last_promotion") == "hot" and 0 <= rep and rep * 10 < n,
          "%s: promoted hot, %d entries replayed at promotion of %d in the log (%s ms)"
          % (label, rep, n, info.get("ha_last_recovery_ms")))


def scenario(cluster, oplog):
    masters = cluster.masters
    print("three masters elect one leader; standbys redirect")
    leader, epoch = cluster.start_and_lead()
    if leader is None:
        return
    standby_errors(cluster, leader)
    lib_follows(cluster, leader)
    setup_clients(leader.port)
    writer = Writer(cluster)
    stop_a, stop_b = threading.Event(), threading.Event()
    pa = threading.Thread(target=ping_loop, args=(cluster, CLIENT_A, stop_a), daemon=True)
    pb = threading.Thread(target=ping_loop, args=(cluster, CLIENT_B, stop_b), daemon=True)
    pa.start()
    pb.start()
    for i in range(50):  # some objects with a replica on B's segment too
        writer.run_once("two%03d" % i, replicas=2)
    for i in range(0, 50, 5):
        c = Conn(leader.port)
        r = c.call("MC.REMOVE", "two%03d" % i)
        c.close()
        if r == "OK":
            writer.removed.add("two%03d" % i)
    check(len(writer.acked) == 50 and len(writer.removed) == 10,
          "50 two-replica puts and 10 removes acknowledged")
    c = Conn(leader.port)  # a put sent with a half-close: its replies still come, after the sync
    c.send("MC.PUTSTART", CLIENT_A, "halfclose", 1000, "SEGMENTS", 1, "segA")
    c.send("MC.PUTEND", CLIENT_A, "halfclose")
    c.s.shutdown(socket.SHUT_WR)
    r1, r2 = c.read(), c.read()
    c.close()
    check(isinstance(r1, list) and r2 == "OK", "put then half-close: replies %r, %r" % (r1, r2))
    if r2 == "OK":
        writer.acked["halfclose"] = sorted((fields(d)["segment"], fields(d)["addr"]) for d in r1)
    odd = ["key with spaces", "100%", "caf\u00e9\tline\nend", "-", "%"]
    check(all(writer.run_once(k, segment="segA") for k in odd),
          "keys with spaces, %, tabs, newlines and non-ASCII bytes acknowledged")

    standbys_follow(cluster, leader, int(leader.info_ha().get("oplog_durable_seq", "0")),
                    "before the kill")

    print("kill -9 of the leader while the writer runs; B's owner stops pinging")
    wt = threading.Thread(target=writer.loop, daemon=True)
    wt.start()
    time.sleep(1.0)
    stop_b.set()  # B never comes back: its replicas must go after the grace period
    t_kill = time.time()
    leader.proc.kill()
    leader.proc.wait()
    new, epoch2, _ = cluster.wait_leader(exclude=leader)
    took = time.time() - t_kill
    check(new is not None and epoch2 > epoch, "new leader %s with a higher epoch %s > %s"
          % (new and new.addr, epoch2, epoch))
    print("    serving again %.1f s after kill -9 (lease 5 s)" % took)
    time.sleep(1.0)
    writer.stop.set()
    wt.join()
    check(len(writer.acked) > 66, "writer kept putting across the fail-over (%d acknowledged, "
          "%d errors)" % (len(writer.acked), writer.errors))
    if new is None:
        return
    verify(new, writer, "after kill -9")
    hot_promotion(new, oplog, "after kill -9")
    standby_errors(cluster, new)

    print("grace period: B's segment is dropped, A's objects stay")
    deadline = time.time() + GRACE_S + 15
    segs = None
    while time.time() < deadline:
        segs = [fields(s)["name"] for s in call1(new.port, "MC.SEGMENTS")]
        if "segB" not in segs:
            break
        time.sleep(0.2)
    check(segs == ["segA"], "only segA is mounted after the grace period (%s)" % segs)
    verify(new, writer, "after the grace period", b_present=False)

    evict_phase(new, writer)

    print("restart the old leader (standby), kill -9 the second leader")
    leader.start()
    time.sleep(1.0)
    before = oplog.length()
    new.proc.kill()
    new.proc.wait()
    third, epoch3, _ = cluster.wait_leader(exclude=new)
    check(third is not None and epoch3 > epoch2, "third leader with epoch %s > %s"
          % (epoch3, epoch2))
    if third is None:
        return
    if oplog.compacts:  # evictions left far more entries than objects: the log is rewritten
        info, after = third.info_ha(), oplog.length()
        check(info.get("oplog_compactions") == "1" and after * 2 <= before,
              "the third leader compacted the op-log: %d -> %d entries (%s)"
              % (before, after, info.get("oplog_compacted")))
        # the standby that tailed the old log sees it rewritten: it rebuilds and follows
        standbys_follow(cluster, third, oplog.last_seq(), "after the compaction")
    verify(third, writer, "after the second kill -9", b_present=False)
    new.start()

    print("SIGSTOP the leader past its lease: it refuses writes when it wakes")
    os.kill(third.proc.pid, signal.SIGSTOP)
    fourth, epoch4, _ = cluster.wait_leader(exclude=third)
    check(fourth is not None and epoch4 > epoch3, "fourth leader with epoch %s > %s"
          % (epoch4, epoch3))
    c = Conn(third.port, timeout=10)
    c.send("MC.PUTSTART", CLIENT_A, "after-stop", 1000)
    os.kill(third.proc.pid, signal.SIGCONT)
    r = c.read()
    c.close()
    check(isinstance(r, Err) and str(r).startswith(("NOTLEADER", "LOADING")),
          "the woken old leader refuses MC.PUTSTART (%r)" % r)
    if fourth is not None:
        verify(fourth, writer, "after SIGSTOP", b_present=False)
        hot_promotion(fourth, oplog, "after SIGSTOP")
        r = call1(fourth.port, "MC.QUERYKEY", "after-stop")
        check(isinstance(r, Err), "the refused put left nothing behind")
    stop_a.set()

    print("op-log: readable with the store's own tools, fenced at the newest epoch")
    first = oplog.first()
    # The first client registered is lib_follows()'s store (client A after a Redis compaction,
    # which keeps no client without a segment).
    check(first.split(b" ")[2:3] == [b"R"], "first entry registers a client (%r)" % first[:80])
    check(oplog.fence() == epoch4, "fence holds epoch %s (%s)" % (epoch4, oplog.fence()))
    if fourth is not None:
        corrupt_entry(cluster, oplog, fourth, writer)


def corrupt_entry(cluster, oplog, leader, writer):
    print("a corrupt op-log entry: the next leader refuses to serve until it is repaired")
    oplog.add_garbage()
    leader.proc.kill()
    leader.proc.wait()
    t0, refused = time.time(), None
    while time.time() - t0 < 30 and refused is None:
        for m in cluster.masters:
            text = open(m.log).read() if m.alive() else ""
            if "cannot be parsed: 'garbage entry'; refusing to serve" in text:
                refused = m
        time.sleep(0.2)
    check(refused is not None, "a new leader logs the entry it cannot apply")
    if refused is None:
        return
    r = call1(refused.port, "MC.QUERYKEY", "w000001")
    check(isinstance(r, Err) and str(r).startswith("LOADING"),
          "it answers -LOADING meanwhile (%r)" % r)
    check(refused.info_ha().get("ha_state") == "recovering", "INFO ha says recovering")
    oplog.remove_garbage()
    fixed, ep, _ = cluster.wait_leader(exclude=leader)
    check(fixed is refused, "after the repair it serves (epoch %s)" % ep)
    if fixed is not None:
        verify(fixed, writer, "after the repair", b_present=False)


CLUSTER = "ha-master-%d" % os.getpid()


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "redis"
    skip = H.prerequisites(kind, (MASTER,))
    if skip is not None:
        return skip
    uri = sys.argv[2] if len(sys.argv) > 2 and "://" in sys.argv[2] else None
    oplog_kind = "etcd" if "--oplog=etcd" in sys.argv else "redis"
    if oplog_kind == "etcd" and kind != "etcd":
        print("--oplog=etcd needs etcd elections")
        return 2
    with H.MasterRun("crescent-ha-master.", kind, uri) as run:
        backend = run.backend
        oplog = EtcdOplog(backend) if oplog_kind == "etcd" else RedisOplog(run.redis)
        run.masters = [Master(run.path, i, backend, oplog.uri, CLUSTER) for i in (1, 2, 3)]
        cluster = Cluster(run.masters)
        t0 = time.time()
        scenario(cluster, oplog)
        run.finish("master HA (%s, op-log %s)" % (kind, oplog_kind), t0, cluster)
    return 0 if run.ok else 1


if __name__ == "__main__":
    sys.exit(main())
