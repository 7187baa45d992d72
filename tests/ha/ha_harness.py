# SPDX-License-Identifier: Apache-2.0
"""Test harness for leader election: starts a real redis-server or etcd on free loopback ports,
runs crescent-elect processes, parses their transition lines and checks that leader intervals
never overlap. Used by tests/ha/test_election.py and tests/ha/chaos.py."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BUILD = os.environ.get("CRESCENT_BUILD", os.path.abspath("build"))
ELECT = os.path.join(BUILD, "bin", "crescent-elect")
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


class RedisBackend:
    kind = "redis"
    host = "127.0.0.1"  # the address redis-server binds and clients use (a subclass may say ::1)

    def __init__(self, tmp):
        self.tmp = tmp
        self.port = None
        self.proc = None

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
        return "redis://%s:%d" % (self._hostport_host(), self.port)

    def _hostport_host(self):
        return "[%s]" % self.host if ":" in self.host else self.host

    def command(self, *args):
        """Sends one command; returns the raw reply bytes (first read)."""
        req = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode()
            req += b"$%d\r\n%s\r\n" % (len(a), a)
        with socket.create_connection((self.host, self.port), timeout=2) as s:
            s.sendall(req)
            return s.recv(4096)

    def enable_auth(self, user, password):
        """Adds an ACL user with all permissions; returns its URI."""
        self.command("ACL", "SETUSER", user, "on", ">" + password, "~*", "&*", "+@all")
        return "redis://%s:%s@%s:%d" % (user, password, self._hostport_host(), self.port)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def restart_empty(self):
        """kill -9 and start again on the same port without data (no persistence)."""
        self.stop()
        self.start(self.port)


class EtcdBackend:
    kind = "etcd"

    def __init__(self, tmp):
        self.tmp = tmp
        self.port = None
        self.proc = None

    def start(self, ports=None):
        for attempt in range(5):
            self.port, peer = ports or (free_port(), free_port())
            self.peer = peer
            data = os.path.join(self.tmp, "etcd-data-%d" % attempt)
            shutil.rmtree(data, ignore_errors=True)
            self.data = data
            log = open(os.path.join(self.tmp, "etcd.log"), "a")
            c, p = "http://127.0.0.1:%d" % self.port, "http://127.0.0.1:%d" % peer
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
        raise RuntimeError("etcd did not start")

    def ping(self):
        try:
            r = urllib.request.urlopen("http://127.0.0.1:%d/health" % self.port, timeout=0.5)
            return b"true" in r.read()
        except OSError:
            return False

    @property
    def uri(self):
        return "etcd://127.0.0.1:%d" % self.port

    def post(self, path, body):
        req = urllib.request.Request("http://127.0.0.1:%d/v3/%s" % (self.port, path),
                                     data=body.encode(), method="POST")
        return urllib.request.urlopen(req, timeout=2).read()

    def enable_auth(self, user, password):
        """Creates root (with the given password) and turns authentication on; returns the URI.
        Anonymous requests fail from then on."""
        self.post("auth/user/add", '{"name":"%s","password":"%s"}' % (user, password))
        self.post("auth/user/grant", '{"user":"%s","role":"root"}' % user)
        self.post("auth/enable", "{}")
        return "etcd://%s:%s@127.0.0.1:%d" % (user, password, self.port)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()

    def pause(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

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


class TempDir:
    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=prefix)

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)
