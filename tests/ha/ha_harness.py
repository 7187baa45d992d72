# SPDX-License-Identifier: Apache-2.0
"""Test harness for leader election: starts a real redis-server or etcd on free loopback ports,
runs crescent-elect processes, parses their transition lines and checks that leader intervals
never overlap; the verdict helper (check, failures) and the candidate bookkeeping and scenarios
that the election scripts share; for the master-HA scripts and benches the run frame
(MasterRun: backends up, then everything down and the temporary directory gone), the end-of-run
checks and log dumps, and one bench master start-up (bench_master). Used by
tests/ha/test_election.py, k8s_election.py, chaos.py, test_elect_cli.py, the test_master_ha*.py
scripts, test_client_follow.py, bench_ha_snapshot.py and bench/bench_ha_*.py."""
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
# RESP request encoding (tests/lib/resp_util.py); the HA tests and benches use it as H.resp_command.
from resp_util import resp_command  # noqa: E402,F401

BUILD = os.environ.get("CRESCENT_BUILD", os.path.abspath("build"))
ELECT = os.path.join(BUILD, "bin", "crescent-elect")
MASTER = os.path.join(BUILD, "bin", "crescent-master")
_children = []


def free_port(host="127.0.0.1"):
    """A TCP port nothing listens on right now, on host (IPv4 or IPv6 literal)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def mono_ms():
    return int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1000)


def cleanup():
    for p in _children:
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
            except OSError:
                pass
            p.wait()


def _on_signal(sig, frame):
    cleanup()
    sys.exit(128 + sig)


signal.signal(signal.SIGTERM, _on_signal)


def spawn(args, out, err=None, **kw):
    p = subprocess.Popen(args, stdout=out, stderr=err or subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, **kw)
    _children.append(p)
    return p


def bracketed(host):
    """host as it goes before ":port": an IPv6 literal in brackets."""
    return "[%s]" % host if ":" in host else host


class _ServerBackend:
    """A backend server process of ours (self.proc): stop (even when paused), pause, resume."""
    host = "127.0.0.1"  # the address it serves clients on (a subclass may say ::1)

    def __init__(self, tmp):
        self.tmp = tmp
        self.port = None
        self.proc = None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)


class RedisBackend(_ServerBackend):
    kind = "redis"

    def start(self, port=None):
        for _ in range(5):
            self.port = port or free_port(self.host)
            log = open(os.path.join(self.tmp, "redis.log"), "a")
            self.proc = spawn(["redis-server", "--port", str(self.port), "--bind", self.host,
                               "--save", "", "--appendonly", "no", "--dir", self.tmp], log)
            for _ in range(100):
                if self.proc.poll() is not None:
                    break
                if self.ping():
                    return
                time.sleep(0.05)
            self.stop()
        raise RuntimeError("redis-server on %s did not start" % self.host)

    def ping(self):
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    @property
    def uri(self):
        return "redis://%s:%d" % (bracketed(self.host), self.port)

    def command(self, *args):
        """Sends one command; returns the raw reply bytes (first read)."""
        with socket.create_connection((self.host, self.port), timeout=2) as s:
            s.sendall(resp_command(*args))
            return s.recv(4096)

    def enable_auth(self, user, password):
        """Adds an ACL user with all permissions; returns its URI."""
        self.command("ACL", "SETUSER", user, "on", ">" + password, "~*", "&*", "+@all")
        return "redis://%s:%s@%s:%d" % (user, password, bracketed(self.host), self.port)

    def restart_empty(self):
        """kill -9 and start again on the same port without data (no persistence)."""
        self.stop()
        self.start(self.port)


class EtcdBackend(_ServerBackend):
    """One etcd member serving clients on host (peers always on 127.0.0.1); its data and log
    files in tmp are named after name."""
    kind = "etcd"
    name = "etcd"

    def start(self, ports=None):
        for attempt in range(5):
            self.port, peer = ports or (free_port(self.host), free_port())
            self.peer = peer
            data = os.path.join(self.tmp, "%s-data-%d" % (self.name, attempt))
            shutil.rmtree(data, ignore_errors=True)
            self.data = data
            log = open(os.path.join(self.tmp, "%s.log" % self.name), "a")
            c, p = self._http(), "http://127.0.0.1:%d" % peer
            # Short raft ticks so that 1 s leases are honoured (etcd's minimum lease TTL is
            # 1.5 election timeouts, rounded up to whole seconds).
            self.proc = spawn(["etcd", "--name", "t", "--data-dir", data,
                               "--listen-client-urls", c, "--advertise-client-urls", c,
                               "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
                               "--initial-cluster", "t=" + p, "--heartbeat-interval", "10",
                               "--election-timeout", "100", "--log-level", "error"], log)
            for _ in range(200):
                if self.proc.poll() is not None:
                    break
                if self.ping():
                    return
                time.sleep(0.05)
            self.stop()
        raise RuntimeError("etcd on %s did not start" % self.host)

    def _http(self, path=""):
        return "http://%s:%d%s" % (bracketed(self.host), self.port, path)

    def ping(self):
        try:
            r = urllib.request.urlopen(self._http("/health"), timeout=0.5)
            return b"true" in r.read()
        except OSError:
            return False

    @property
    def uri(self):
        return "etcd://%s:%d" % (bracketed(self.host), self.port)

    def post(self, path, body):
        req = urllib.request.Request(self._http("/v3/" + path), data=body.encode(),
                                     method="POST")
        return urllib.request.urlopen(req, timeout=2).read()

    def enable_auth(self, user, password):
        """Creates root (with the given password) and turns authentication on; returns the URI.
        Anonymous requests fail from then on."""
        self.post("auth/user/add", '{"name":"%s","password":"%s"}' % (user, password))
        self.post("auth/user/grant", '{"user":"%s","role":"root"}' % user)
        self.post("auth/enable", "{}")
        return "etcd://%s:%s@%s:%d" % (user, password, bracketed(self.host), self.port)

    def restart_empty(self):
        """kill -9, delete the data directory and start a new one-member cluster on the same
        ports (an etcd rebuilt from nothing)."""
        self.stop()
        shutil.rmtree(self.data, ignore_errors=True)
        self.start((self.port, self.peer))


class ExternalBackend:
    """A backend started by someone else (k8s double from tests/ha/k8s_env.sh)."""

    def __init__(self, kind, uri):
        self.kind = kind
        self.uri = uri

    def start(self):
        pass

    def stop(self):
        pass


def make_backend(kind, tmp, uri=None):
    if uri:
        return ExternalBackend(kind, uri)
    if kind == "redis":
        return RedisBackend(tmp)
    if kind == "etcd":
        return EtcdBackend(tmp)
    raise SystemExit("unknown backend %s" % kind)


def parse_line(line):
    """'<ms> KIND k=v ...' -> (ms, KIND, {k: v}) or None."""
    parts = line.split()
    if len(parts) < 2 or not parts[0].isdigit():
        return None
    kv = {}
    for p in parts[2:]:
        if "=" in p:
            k, v = p.split("=", 1)
            kv[k] = v
    return int(parts[0]), parts[1], kv


class Elect:
    """One crescent-elect process whose stdout goes to a file."""

    def __init__(self, tmp, backend, cluster, identity, timings, extra=(), name=None):
        self.name = name or identity
        self.identity = identity
        self.path = os.path.join(tmp, "%s.out" % self.name.replace(":", "_"))
        self.args = [ELECT, "--backend", backend.uri, "--cluster", cluster,
                     "--identity", identity] + list(timings) + list(extra)
        self.proc = None
        self.runs = 0

    def start(self):
        out = open(self.path, "a")
        self.proc = spawn(self.args, out)
        self.runs += 1
        out.close()
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def term(self, timeout=5):
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill9(self):
        self.signal(signal.SIGKILL)
        self.proc.wait()

    def lines(self):
        try:
            with open(self.path) as f:
                raw = f.read().splitlines()
        except FileNotFoundError:
            return []
        return [x for x in (parse_line(r) for r in raw) if x]

    def raw(self):
        try:
            with open(self.path) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def wait_for(self, kind, timeout_ms, after_ms=0, pred=None):
        deadline = mono_ms() + timeout_ms
        while True:
            for ln in self.lines():
                if ln[1] == kind and ln[0] >= after_ms and (pred is None or pred(ln)):
                    return ln
            if mono_ms() > deadline:
                return None
            time.sleep(0.01)


def intervals(lines, name):
    """Leader terms from one process's lines: (start_ms, end_ms, epoch, name), where end is the
    last promised until, cut short at a STEPPED_DOWN or a restart (a LEADER line ends the
    previous term too)."""
    out = []
    cur = None
    for ms, kind, kv in lines:
        if kind == "LEADER":
            if cur:
                out.append(cur)
            cur = [ms, int(kv["until"]), int(kv["epoch"]), name]
        elif kind == "RENEWED" and cur:
            cur[1] = max(cur[1], int(kv["until"]))
        elif kind == "STEPPED_DOWN" and cur:
            cur[1] = min(cur[1], ms)
            out.append(cur)
            cur = None
    if cur:
        out.append(cur)
    return [tuple(x) for x in out]


def check_overlap(all_intervals, tolerance_ms=0):
    """Returns a list of overlapping pairs (by more than tolerance_ms) between different
    terms."""
    ivs = sorted(all_intervals)
    bad = []
    for i in range(len(ivs)):
        for j in range(i + 1, len(ivs)):
            a, b = ivs[i], ivs[j]
            if b[0] >= a[1] - tolerance_ms:
                continue
            if a[2] == b[2] and a[3] == b[3]:
                continue
            bad.append((a, b))
    return bad


def check_epochs(all_intervals):
    """Returns pairs of consecutive terms (by start time) whose epochs do not grow."""
    ivs = sorted(set((s, e, ep) for s, e, ep, _ in all_intervals))
    return [(a, b) for a, b in zip(ivs, ivs[1:]) if b[2] <= a[2]]


def make_test_certs(d, ip):
    """Makes, with the openssl CLI in directory d (created if needed), a test CA (ca.crt,
    ca.key) and a server certificate for the IP address ip signed by it (server.crt,
    server.key), valid two days. Raises CalledProcessError when openssl fails."""
    os.makedirs(d, exist_ok=True)

    def ossl(*a):
        subprocess.run(["openssl"] + list(a), cwd=d, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ossl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj",
         "/CN=crescent-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ossl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=" + ip)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                % ip)
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "server.ext")


class TempDir:
    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=prefix)

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)


# ---- verdicts, candidates and scenarios shared by the election scripts ----

failures = []


def check(cond, msg):
    """Prints "ok" or "FAIL" with msg; a failure is kept in failures. Returns cond."""
    print("  %s %s" % ("ok  " if cond else "FAIL", msg), flush=True)
    if not cond:
        failures.append(msg)
    return cond


class ElectCtx:
    """Starts crescent-elect candidates against one backend with fixed timings, names their
    logs in start order, and appends each (cluster, Elect) to elects (a list the caller may
    share) for the end-of-run checks."""

    def __init__(self, backend, tmp, timings, elects):
        self.backend = backend
        self.tmp = tmp
        self.timings = timings
        self.elects = elects
        self.n = 0

    def elect(self, cluster, identity, extra=()):
        self.n += 1
        e = Elect(self.tmp, self.backend, cluster, identity, self.timings, extra,
                  name="%02d-%s" % (self.n, identity))
        self.elects.append((cluster, e))
        return e


def check_no_overlap(elects):
    """Checks, over every (cluster, Elect) of elects, that no two leader terms of a cluster
    overlap and that epochs grow from term to term."""
    by_cluster = {}
    for cluster, e in elects:
        by_cluster.setdefault(cluster, []).extend(intervals(e.lines(), e.name))
    total = sum(len(v) for v in by_cluster.values())
    bad = [p for v in by_cluster.values() for p in check_overlap(v, 0)]
    check(not bad, "no overlapping leader intervals across %d terms %s" % (total, bad[:3]))
    ebad = [p for v in by_cluster.values() for p in check_epochs(v)]
    check(not ebad, "epochs grow from term to term in every cluster %s" % ebad[:3])


def check_no_sanitizer(elects):
    """Checks that no crescent-elect log of elects holds a sanitizer report."""
    san = [e.name for _, e in elects if "Sanitizer" in e.raw() or "runtime error:" in e.raw()]
    check(not san, "no sanitizer report in any crescent-elect log %s" % san)


def print_logs(elects):
    """Prints every crescent-elect log of elects (after a failure)."""
    for _, e in elects:
        print("---- %s" % e.name)
        print(e.raw(), end="")


def scenario_three_candidates(c, settle_ms):
    """Three candidates started together in cluster c3: after settle_ms exactly one leads and
    the other two follow it."""
    print("three simultaneous candidates => exactly one winner")
    es = [c.elect("c3", "n%d:1" % i) for i in range(3)]
    for e in es:
        e.start()
    time.sleep(settle_ms / 1000.0)
    leaders = [e for e in es if any(ln[1] == "LEADER" for ln in e.lines())]
    check(len(leaders) == 1, "exactly one LEADER among 3 (got %d)" % len(leaders))
    if len(leaders) == 1:
        win = leaders[0].identity
        others = [e for e in es if e is not leaders[0]]
        check(all(any(ln[1] == "FOLLOWER" and ln[2]["leader"] == win for ln in e.lines())
                  for e in others), "both others report FOLLOWER leader=%s" % win)
    for e in es:
        e.term()


def scenario_sigstop(c, lease_ms, retry_ms, slack_ms, also=None):
    """The leader of cluster c6 is SIGSTOPped longer than the lease: the standby leads within
    lease + retry; after SIGCONT the old leader steps down at once and never renews. also(a,
    lb), when given, adds checks on the old leader a and the standby's LEADER line lb."""
    print("leader SIGSTOPped longer than the lease: a new leader; no overlap after SIGCONT")
    a = c.elect("c6", "a:1").start()
    if not check(a.wait_for("LEADER", 3000) is not None, "a leads"):
        return
    b = c.elect("c6", "b:1").start()
    check(b.wait_for("FOLLOWER", 3000) is not None, "b follows")
    time.sleep(0.3)
    t_stop = mono_ms()
    a.signal(signal.SIGSTOP)
    lb = b.wait_for("LEADER", lease_ms + retry_ms + 2 * slack_ms, after_ms=t_stop)
    check(lb is not None, "b leads while a is stopped (%s ms)" % (lb and lb[0] - t_stop))
    time.sleep(0.5)
    t_cont = mono_ms()
    a.signal(signal.SIGCONT)
    sd = a.wait_for("STEPPED_DOWN", 2000, after_ms=t_stop)
    check(sd is not None and sd[2].get("reason") in ("renew_deadline", "lease_lost")
          and sd[0] - t_cont < slack_ms,
          "a steps down %s ms after SIGCONT (%s)" % (sd and sd[0] - t_cont, sd and sd[2]))
    check(not any(ln[1] == "RENEWED" and ln[0] >= t_cont for ln in a.lines()),
          "a never renews after SIGCONT")
    if also is not None:
        also(a, lb)
    time.sleep(0.3)
    a.term()
    b.term()


# ---- master-HA scripts and benches: the run frame, end-of-run checks, bench masters ----


def prerequisites(kind, paths=(), side_redis=True):
    """None when the tools of a master-HA run are there (redis-server for a side Redis or a
    redis backend, etcd for an etcd backend) and every file in paths exists; else prints why
    and returns the exit status: 77 (skip) for a missing tool, 1 for a missing file."""
    tools = (("redis-server",) if side_redis or kind == "redis" else ()) + \
        (("etcd",) if kind == "etcd" else ())
    for tool in tools:
        if not shutil.which(tool):
            print("skip: %s not installed" % tool)
            return 77
    for path in paths:
        if not os.path.exists(path):
            print("missing %s" % path)
            return 1
    return None


def stop_masters_and_check(masters, logs=("", ".err")):
    """The end of every master-HA script: a clean shutdown of the masters still running (their
    leak reports, if any), then no sanitizer report in their logs (files m.log + each suffix)."""
    for m in masters:
        if m.alive():
            m.proc.terminate()
            m.proc.wait()
    text = "".join(open(m.log + x).read() for m in masters for x in logs
                   if os.path.exists(m.log + x))
    check("Sanitizer" not in text and "runtime error:" not in text,
          "no sanitizer report from the masters")


def print_master_logs(masters, tail=6000):
    """After a failure: the end of every master's log."""
    for m in masters:
        if os.path.exists(m.log):
            print("---- master %d" % m.idx)
            print(open(m.log).read()[-tail:], end="")


class MasterRun(contextlib.AbstractContextManager):
    """The frame of a master-HA script or bench: a temporary directory (prefix), a side
    redis-server (self.redis: op-log, snapshot catalog; with side_redis False only when kind is
    redis, then the backend itself) and the election backend (self.backend: kind redis, etcd,
    or uri for one started elsewhere). Entering starts them; leaving, also on an exception,
    runs the at_exit callables (latest first), stops every master in self.masters that still
    runs (SIGCONT, SIGTERM, SIGKILL after 10 s) and every process spawn() started, stops the
    backends, prints the masters' logs (log_tail characters each) and the (title, path) files of
    dump unless self.ok, and removes the directory. The script sets self.ok when it passed."""

    def __init__(self, prefix, kind="redis", uri=None, side_redis=True):
        self.tmp = TempDir(prefix)
        self.path = self.tmp.path
        self.redis = RedisBackend(self.path) if side_redis or kind == "redis" else None
        self.backend = make_backend(kind, self.path, uri) if kind != "redis" else self.redis
        self.masters = []
        self.at_exit = []
        self.dump = []
        self.log_tail = 6000
        self.ok = False

    def __enter__(self):
        try:
            if self.redis is not None:
                self.redis.start()
            if self.backend is not self.redis:
                self.backend.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def finish(self, label, t0, cluster=None, logs=("", ".err")):
        """The verdict at the end of a run that went through: cluster.check_one_serving() when
        cluster is given, the clean shutdown and sanitizer check of self.masters
        (stop_masters_and_check with logs), one line "<label>: N failures in S s" (t0 from
        time.time()); sets self.ok when no check has failed."""
        if cluster is not None:
            cluster.check_one_serving()
        stop_masters_and_check(self.masters, logs)
        print("%s: %d failures in %.1f s" % (label, len(failures), time.time() - t0))
        self.ok = not failures

    def close(self):
        for f in reversed(self.at_exit):
            f()
        for m in self.masters:
            if m.alive():
                os.kill(m.proc.pid, signal.SIGCONT)
                m.proc.terminate()
                try:
                    m.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    m.proc.kill()
                    m.proc.wait()
        cleanup()
        if self.redis is not None:
            self.redis.stop()
        if self.backend is not self.redis:
            self.backend.stop()
        if not self.ok:
            print_master_logs(self.masters, self.log_tail)
            for title, path in self.dump:
                if os.path.exists(path):
                    print("---- %s" % title)
                    print(open(path).read()[-12000:], end="")
        self.tmp.remove()


def bench_master(tmp, redis, cluster, name, extra=()):
    """Starts, without waiting, one crescent-master --enable_ha for a bench: loopback, one
    thread, no metrics port, 4 MiB of memory, election and op-log in redis (a RedisBackend),
    its log in tmp/<name>.log, stdout and stderr dropped, extra arguments last. Returns
    (proc, port)."""
    port = free_port()
    hp = redis.uri.split("://", 1)[1]
    proc = spawn([MASTER, "--port", str(port), "--bind", "127.0.0.1", "--threads", "1",
                  "--metrics_port", "0", "--memory", "4mb", "--enable_ha", "yes",
                  "--ha_backend_connstring", hp, "--cluster_id", cluster,
                  "--oplog_store", redis.uri, "--logfile", os.path.join(tmp, name + ".log")]
                 + list(extra), open(os.devnull, "w"))
    return proc, port


def call_raw(port, *args, timeout=30):
    """Sends one command to 127.0.0.1:port; returns the raw reply bytes (a whole bulk string,
    or up to the end of the first line for the other types)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(resp_command(*args))
        data = b""
        while True:
            chunk = s.recv(65536)
            data += chunk
            if not chunk or (data[:1] != b"$" and data.endswith(b"\r\n")):
                break
            if data[:1] == b"$" and b"\r\n" in data:
                n = int(data[1:data.index(b"\r\n")])
                if len(data) >= data.index(b"\r\n") + 2 + n + 2:
                    break
    return data


def info(port, section):
    """INFO section of the master on port as a dict (field -> text)."""
    text = call_raw(port, "INFO", section).decode()
    return dict(l.split(":", 1) for l in text.split("\r\n") if ":" in l)


def wait_info(port, section, pred, secs):
    """Reads INFO section every 50 ms until pred(fields) holds or secs have passed; returns the
    last fields read ({} when none could be)."""
    st = {}
    t0 = time.time()
    while time.time() - t0 < secs:
        try:
            st = info(port, section)
            if pred(st):
                return st
        except OSError:
            pass
        time.sleep(0.05)
    return st


BENCH_CLIENT = b"d" * 32
BENCH_BASE = 1 << 30


def bench_oplog(n):
    """The op-log of the benches: client BENCH_CLIENT registered, its 1 TiB segment "seg" at
    BENCH_BASE mounted, then n 4 KiB objects obj%08d at increasing addresses (epoch 1)."""
    log = [b"1 1 R %s host" % BENCH_CLIENT,
           b"1 2 M %s seg %d %d 127.0.0.1:1 tcp %%" % (BENCH_CLIENT, BENCH_BASE, 1 << 40)]
    log += [b"1 %d P obj%08d 4096 0 0 1 seg %d" % (i + 3, i, BENCH_BASE + i * 4096)
            for i in range(n)]
    return log


def push_list(port, key, entries):
    """RPUSHes entries to key of the redis-server on port, 1000 a command, pipelined over one
    connection."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        f = s.makefile("rb")
        chunks = 0
        for i in range(0, len(entries), 1000):
            s.sendall(resp_command("RPUSH", key, *entries[i:i + 1000]))
            chunks += 1
        for _ in range(chunks):
            f.readline()
