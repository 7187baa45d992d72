# SPDX-License-Identifier: Apache-2.0
"""crescent-elect's command line and error reporting, against real processes: stray arguments,
--version, --help, boolean flag values, a backend that accepts but never answers (timeout
message), a Redis-protocol server without EVAL (crescent-master: refused at start-up, exit 3;
a server that loses EVAL later: no Lua source in the log), and elections over IPv6 with a real
redis-server (and etcd when installed) bound to ::1. Run by tests/ha/test_elect_cli.sh."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402

MASTER = os.path.join(H.BUILD, "bin", "crescent-master")
TIMINGS = ["--lease-ms", "1000", "--renew-ms", "600", "--retry-ms", "200"]
check, failures = H.check, H.failures


def run(args, timeout=20):
    """Runs crescent-elect to completion: (rc, stdout, stderr lines, seconds); rc is -1 when
    it was still running after timeout seconds (then killed). A sanitizer report on stderr is
    a failure of its own."""
    t0 = time.time()
    try:
        p = subprocess.run([H.ELECT] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=timeout, text=True)
    except subprocess.TimeoutExpired as e:
        def text(x):
            return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
        return -1, text(e.stdout), text(e.stderr).splitlines(), time.time() - t0
    if "Sanitizer" in p.stderr or "runtime error:" in p.stderr:
        check(False, "sanitizer report from %s: %s" % (args, p.stderr[-2000:]))
    return p.returncode, p.stdout, p.stderr.splitlines(), time.time() - t0


def base(uri, ident="a:1"):
    return ["--backend", uri, "--cluster", "cli", "--identity", ident]


def test_stray_argument():
    print("a stray positional argument is named, with the synopsis, exit 2")
    for args, word in ((base("redis://127.0.0.1:1") + ["extra"], "extra"),
                       (["stray"] + base("redis://127.0.0.1:1"), "stray")):
        rc, out, err, _ = run(args)
        check(rc == 2 and err and err[0] == "crescent-elect: unexpected argument '%s'" % word
              and any("usage: crescent-elect" in x for x in err)
              and any("--help" in x for x in err)
              and not any("required" in x for x in err) and out == "",
              "%s -> rc=%d %s" % (args, rc, err[:1]))
    rc, _, err, _ = run(base("redis://127.0.0.1:1") + ["--observe", "false"])
    check(rc == 2 and err and err[0] == "crescent-elect: unexpected argument 'false' "
          "(a flag takes its value as --flag=false)", "--observe false -> rc=%d %s" % (rc, err[:1]))
    rc, _, err, _ = run(["--backend", "redis://127.0.0.1:1", "--cluster", "c"])
    check(rc == 2 and err and err[0] == "crescent-elect: --backend, --cluster and --identity "
          "are required", "missing --identity -> rc=%d %s" % (rc, err[:1]))
    rc, _, err, _ = run(base("redis://127.0.0.1:1") + ["--bogus"])
    check(rc == 2 and err and err[0] == "crescent-elect: unknown option '--bogus'",
          "--bogus -> rc=%d %s" % (rc, err[:1]))
    rc, _, err, _ = run(["--verbose", "-vx"] + base("redis://127.0.0.1:1"))
    check(rc == 2 and err and err[0] == "crescent-elect: unknown option '-x'",
          "-vx -> rc=%d %s" % (rc, err[:1]))
    rc, _, err, _ = run(["--version=1"])
    check(rc == 2 and err and err[0] == "crescent-elect: option '--version=1' takes no value",
          "--version=1 -> rc=%d %s" % (rc, err[:1]))
    rc, _, err, _ = run(["--cluster", "c", "--identity", "a:1", "--backend"])
    check(rc == 2 and err and err[0] == "crescent-elect: option '--backend' needs a value",
          "--backend without value -> rc=%d %s" % (rc, err[:1]))


def test_version():
    print("--version prints the version crescent-master prints, exit 0")
    rc, out, err, _ = run(["--version"])
    check(rc == 0 and re.fullmatch(r"crescent-elect \d+\.\d+\.\d+\n", out) is not None
          and not err, "crescent-elect --version -> rc=%d %r" % (rc, out))
    if os.access(MASTER, os.X_OK):
        m = subprocess.run([MASTER, "--version"], stdout=subprocess.PIPE, text=True, timeout=10)
        want = m.stdout.split()[1] if len(m.stdout.split()) > 1 else "?"
        check(out == "crescent-elect %s\n" % want,
              "same version as crescent-master (%r)" % m.stdout.strip())


def test_help():
    print("--help documents options, defaults, backends and credentials, output, exit codes")
    rc, out, err, _ = run(["--help"])
    check(rc == 0 and not err, "--help exits 0 with nothing on stderr (rc=%d)" % rc)
    for want in ("usage: crescent-elect", "Options:", "Backends:", "Output", "Exit status:",
                 "(default 5000)", "(default 3000)", "(default 1000)",
                 "<ms> LEADER epoch=N until=<ms>", "<ms> RENEWED epoch=N until=<ms>",
                 "<ms> FOLLOWER leader=X epoch=N", "<ms> STEPPED_DOWN reason=R",
                 "<ms> HOLDER leader=X epoch=N", "stop, lease_lost or renew_deadline",
                 "redis://[user:password@]host:port[/db]", "etcd://[user:password@]host:port",
                 "TLS (https, client certificates) is not supported", "auth/authenticate",
                 "k8s://", "--version", "[::1]", "\n  0  ", "\n  1  ", "\n  2  ", "\n  3  ",
                 "yes/no, true/false"):
        check(want in out, "--help mentions %r" % want.strip())
    # The lines the help promises are the lines the code prints.
    src = open(os.path.join(os.path.dirname(H.BUILD), "ha", "crescent_elect.c")).read() \
        if os.path.exists(os.path.join(os.path.dirname(H.BUILD), "ha", "crescent_elect.c")) \
        else None
    if src:
        for fmt in ("LEADER epoch=%llu until=%llu", "RENEWED epoch=%llu until=%llu",
                    "FOLLOWER leader=%s epoch=%llu", "STEPPED_DOWN reason=%s",
                    "HOLDER leader=%s epoch=%llu"):
            check(fmt in src, "the source prints %r" % fmt)


class SilentListener:
    """Accepts TCP connections and never answers (nor closes them)."""

    def __init__(self, family=socket.AF_INET, host="127.0.0.1"):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        for c in self.conns:
            c.close()
        self.sock.close()


def test_timeout_message():
    print("a backend that accepts but never answers: 'timed out after N ms talking to H:P'")
    ls = SilentListener()
    try:
        rc, out, err, secs = run(base("redis://127.0.0.1:%d" % ls.port) + TIMINGS
                                 + ["--timeout-ms", "400"])
        want = "timed out after 400 ms talking to 127.0.0.1:%d" % ls.port
        check(rc == 1 and len(err) == 1 and want in err[0] and "temporarily" not in err[0]
              and secs < 10, "rc=%d in %.1f s: %s" % (rc, secs, err[:2]))
    finally:
        ls.close()


def test_timeout_at_run_time(tmp):
    print("a backend that stops answering while we lead: the stderr line says timed out")
    b = H.RedisBackend(tmp)
    b.start()
    try:
        e = H.Elect(tmp, b, "rt", "rt:1", TIMINGS + ["--timeout-ms", "300"], name="rt").start()
        check(e.wait_for("LEADER", 5000) is not None, "leads")
        b.pause()
        ok = e.wait_for("STEPPED_DOWN", 5000) is not None
        deadline = time.time() + 5
        while time.time() < deadline and "ETIMEDOUT" not in e.raw():
            time.sleep(0.05)
        b.resume()
        err = [x for x in e.raw().splitlines() if x.startswith("crescent-elect:")]
        want = re.compile(r"^crescent-elect: redis: \w+: timed out after \d+ ms talking to "
                          r"127\.0\.0\.1:%d \(ETIMEDOUT\)$" % b.port)
        # Other lines may follow (e.g. "renew deadline passed"), depending on timing.
        check(ok and any(want.match(x) for x in err)
              and not any("temporarily" in x for x in err),
              "steps down; error lines %s" % err[:3])
        e.term()
    finally:
        b.stop()


def start_master(tmp):
    """Starts crescent-master (no EVAL) on a free port; returns (proc, port) or None."""
    for _ in range(5):
        port = H.free_port()
        log = open(os.path.join(tmp, "master.log"), "a")
        p = H.spawn([MASTER, "--port", str(port), "--bind", "127.0.0.1"], log)
        for _ in range(300):
            if p.poll() is not None:
                break
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return p, port
            except OSError:
                time.sleep(0.1)
        p.kill()
        p.wait()
    return None


def test_no_eval_master(tmp):
    print("crescent-master as the backend (no EVAL): one line, exit 3, at start-up")
    if not os.access(MASTER, os.X_OK):
        check(False, "%s not built" % MASTER)
        return
    got = start_master(tmp)
    check(got is not None, "crescent-master started")
    if not got:
        return
    p, port = got
    try:
        rc, out, err, secs = run(base("redis://127.0.0.1:%d" % port) + TIMINGS, timeout=15)
        check(rc == 3 and len(err) == 1 and "does not support EVAL" in err[0]
              and "127.0.0.1:%d" % port in err[0] and "redis.call" not in err[0]
              and secs < 10 and out == "",
              "rc=%d in %.1f s: %s" % (rc, secs, err[:3]))
    finally:
        p.kill()
        p.wait()


class LosesEvalServer:
    """A RESP server that answers PING and the start-up probe (EVAL "return 1" 0) but rejects
    every other EVAL the way Redis rejects an unknown command, echoing the arguments."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _read_cmd(f):
        line = f.readline()
        if not line.startswith(b"*"):
            return None
        args = []
        for _ in range(int(line[1:])):
            n = int(f.readline()[1:])
            args.append(f.read(n + 2)[:-2].decode())
        return args

    def _serve(self, c):
        f = c.makefile("rwb")
        try:
            while True:
                args = self._read_cmd(f)
                if args is None:
                    return
                if args[0].upper() == "PING":
                    f.write(b"+PONG\r\n")
                elif args[:3] == ["EVAL", "return 1", "0"]:
                    f.write(b":1\r\n")
                else:
                    echo = " ".join("'%s'" % a for a in args[1:])[:128].replace("\n", " ")
                    f.write(("-ERR unknown command '%s', with args beginning with: %s\r\n"
                             % (args[0], echo)).encode())
                f.flush()
        except (OSError, ValueError):
            return
        finally:
            c.close()

    def close(self):
        self.sock.close()


def test_eval_lost_later(tmp):
    print("a server that rejects the election's scripts: clear line, no Lua source")
    srv = LosesEvalServer()
    try:
        e = H.Elect(tmp, H.ExternalBackend("redis", "redis://127.0.0.1:%d" % srv.port), "lost",
                    "l:1", TIMINGS, name="lost").start()
        deadline = time.time() + 5
        while time.time() < deadline and "NOT_SUPPORTED" not in e.raw():
            time.sleep(0.05)
        time.sleep(0.5)  # a few more retries
        raw = e.raw()
        err = [x for x in raw.splitlines() if x.startswith("crescent-elect:")]
        check(len(err) == 1 and "does not support EVAL" in err[0]
              and err[0].endswith("(NOT_SUPPORTED)"), "one error line: %s" % err[:3])
        check("redis.call" not in raw and "KEYS[1]" not in raw, "no Lua source in the output")
        e.term()
    finally:
        srv.close()


def test_bool_flags(tmp):
    print("boolean flags take =yes/no, =true/false, =on/off, =1/0")
    b = H.RedisBackend(tmp)
    b.start()
    try:
        rc, _, err, _ = run(base(b.uri) + ["--keep-lease=maybe"])
        check(rc == 2 and err and err[0] == "crescent-elect: --keep-lease wants yes/no, "
              "true/false, on/off or 1/0, got 'maybe'", "--keep-lease=maybe -> rc=%d %s"
              % (rc, err[:1]))
        v = H.Elect(tmp, b, "bool", "v:1", TIMINGS, ["--verbose=true"], name="verbose").start()
        check(v.wait_for("RENEWED", 5000) is not None, "--verbose=true prints RENEWED")
        q = H.Elect(tmp, b, "bool", "q:1", TIMINGS, ["--observe=false", "--verbose=0"],
                    name="quiet").start()
        check(q.wait_for("FOLLOWER", 5000) is not None, "--observe=false campaigns (FOLLOWER)")
        o = H.Elect(tmp, b, "bool", "o:1", TIMINGS, ["--observe=yes"], name="obs").start()
        check(o.wait_for("HOLDER", 5000, pred=lambda ln: ln[2].get("leader") == "v:1")
              is not None, "--observe=yes prints HOLDER leader=v:1")
        v.term()
        time.sleep(0.3)
        check(not any(ln[1] == "RENEWED" for ln in q.lines()), "--verbose=0: no RENEWED")
        # Default timings (5 s lease): the kept lease is still there when we look.
        k = H.Elect(tmp, b, "keep", "k:1", [], ["--keep-lease=TRUE"], name="keep").start()
        check(k.wait_for("LEADER", 5000) is not None, "--keep-lease=TRUE leads")
        k.term()
        check(b"k:1" in b.command("HGET", "crescent/{keep}/master_view", "leader"),
              "--keep-lease=TRUE keeps the lease after SIGTERM")
        q.term()
        o.term()
    finally:
        b.stop()


def have_ipv6():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def free_port6():
    return H.free_port("::1")


class Redis6(H.RedisBackend):
    """redis-server bound to ::1 only."""
    host = "::1"


def elect_pair(tmp, backend, tag):
    a = H.Elect(tmp, backend, tag, "[::1]:7001", TIMINGS, name=tag + "-a").start()
    got = a.wait_for("LEADER", 8000)
    b = H.Elect(tmp, backend, tag, "[::1]:7002", TIMINGS, name=tag + "-b").start()
    fol = b.wait_for("FOLLOWER", 8000, pred=lambda ln: ln[2].get("leader") == "[::1]:7001")
    a.term()
    took = b.wait_for("LEADER", 8000)
    b.term()
    return got, fol, took, a, b


def test_ipv6_uri_errors():
    print("IPv6 addresses must be bracketed and valid: one 'bad URI' line, exit 1")
    for uri, want in (("redis://::1:6379", "an IPv6 address goes in brackets"),
                      ("etcd://127.0.0.1:2379,::1:2379", "an IPv6 address goes in brackets"),
                      ("redis://[]:6379", "is not an IPv6 address"),
                      ("redis://[::1::2]:6379", "is not an IPv6 address"),
                      ("redis://[localhost]:6379", "is not an IPv6 address"),
                      ("etcd://[::1]", "is not [addr]:port")):
        rc, _, err, _ = run(base(uri))
        check(rc == 1 and len(err) == 1 and "bad URI" in err[0] and want in err[0],
              "%s -> rc=%d %s" % (uri, rc, err[:1]))


def test_ipv6_redis(tmp):
    print("IPv6: redis://[::1]:P against redis-server --bind ::1")
    if not have_ipv6():
        print("  skip: ::1 is not available on this host")
        return
    b = Redis6(tmp)
    b.start()
    try:
        got, fol, took, a, bb = elect_pair(tmp, b, "v6")
        check(got is not None and fol is not None and took is not None
              and int(took[2]["epoch"]) > int(got[2]["epoch"]),
              "a leads, b follows a, b leads after a stops (epochs %s -> %s)"
              % (got and got[2].get("epoch"), took and took[2].get("epoch")))
        check(not [x for x in a.raw().splitlines() + bb.raw().splitlines()
                   if x.startswith("crescent-elect:")], "no error lines")
    finally:
        b.stop()
    port = free_port6()
    rc, _, err, _ = run(base("redis://[::1]:%d" % port))
    check(rc == 1 and len(err) == 1 and "[::1]:%d" % port in err[0]
          and "Connection refused" in err[0], "nothing on [::1]:%d -> %s" % (port, err[:1]))
    ls = SilentListener(socket.AF_INET6, "::1")
    try:
        rc, _, err, _ = run(base("redis://[::1]:%d" % ls.port) + ["--timeout-ms", "300"])
        check(rc == 1 and err and "timed out after 300 ms talking to [::1]:%d" % ls.port in err[0],
              "silent [::1] listener -> %s" % err[:1])
    finally:
        ls.close()


class Etcd6(H.EtcdBackend):
    """etcd serving clients on [::1] only (peers stay on 127.0.0.1)."""
    host = "::1"
    name = "etcd6"


def test_ipv6_etcd(tmp):
    print("IPv6: etcd://[::1]:P against etcd listening on http://[::1]:P")
    if not have_ipv6():
        print("  skip: ::1 is not available on this host")
        return
    if not shutil.which("etcd"):
        print("  skip: etcd not installed")
        return
    b = Etcd6(tmp)
    b.start()
    try:
        got, fol, took, _, _ = elect_pair(tmp, b, "v6e")
        check(got is not None and fol is not None and took is not None,
              "a leads, b follows a, b leads after a stops")
    finally:
        b.stop()


def start_k8s_double6(tmp):
    """The Lease API double (k8s_lease_server.py) over TLS on [::1], with a CA and a server
    certificate for ::1 made by the openssl CLI; returns (proc, kubeconfig path)."""
    d = os.path.join(tmp, "k8s6")
    H.make_test_certs(d, "::1")
    port_file = os.path.join(d, "port")
    log = open(os.path.join(d, "double.log"), "a")
    proc = H.spawn([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "k8s_lease_server.py"),
                    "--host", "::1", "--cert", os.path.join(d, "server.crt"),
                    "--key", os.path.join(d, "server.key"), "--token", "tok6",
                    "--port-file", port_file], log)
    for _ in range(250):
        if os.path.exists(port_file) or proc.poll() is not None:
            break
        time.sleep(0.02)
    with open(port_file) as f:
        port = int(f.read())
    kc = os.path.join(d, "kubeconfig")
    with open(kc, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                "clusters:\n- name: d\n  cluster:\n    server: https://[::1]:%d\n"
                "    certificate-authority: %s\n"
                "contexts:\n- name: t\n  context:\n    cluster: d\n    user: u\n"
                "    namespace: v6\n"
                "users:\n- name: u\n  user:\n    token: tok6\n"
                % (port, os.path.join(d, "ca.crt")))
    return proc, kc


def test_ipv6_k8s(tmp):
    print("IPv6: k8s:// with the API server at https://[::1]:P (the Lease API double)")
    if not have_ipv6():
        print("  skip: ::1 is not available on this host")
        return
    if not shutil.which("openssl"):
        print("  skip: openssl not installed")
        return
    proc, kc = start_k8s_double6(tmp)
    old = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = kc
    try:
        k8s = H.ExternalBackend("k8s", "k8s://v6/crescent-v6")
        a = H.Elect(tmp, k8s, "v6k", "[::1]:7001", TIMINGS, name="v6k-a").start()
        got = a.wait_for("LEADER", 8000)
        b = H.Elect(tmp, k8s, "v6k", "[::1]:7002", TIMINGS, name="v6k-b").start()
        fol = b.wait_for("FOLLOWER", 8000, pred=lambda ln: ln[2].get("leader") == "[::1]:7001")
        a.term()
        took = b.wait_for("LEADER", 8000)
        b.term()
        check(got is not None and fol is not None and took is not None,
              "a leads, b follows a, b leads after a stops")
    finally:
        if old is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = old
        proc.kill()
        proc.wait()


def main():
    if not os.access(H.ELECT, os.X_OK):
        print("missing %s" % H.ELECT)
        return 1
    if not shutil.which("redis-server"):
        print("skip: redis-server not installed")
        return 77
    tmp = H.TempDir("crescent-elect-cli.")
    ok = False
    try:
        t0 = time.time()
        test_stray_argument()
        test_version()
        test_help()
        test_timeout_message()
        test_timeout_at_run_time(tmp.path)
        test_no_eval_master(tmp.path)
        test_eval_lost_later(tmp.path)
        test_bool_flags(tmp.path)
        test_ipv6_uri_errors()
        test_ipv6_redis(tmp.path)
        test_ipv6_etcd(tmp.path)
        test_ipv6_k8s(tmp.path)
        san = [n for n in os.listdir(tmp.path) if n.endswith(".out")
               and re.search(r"Sanitizer|runtime error:",
                             open(os.path.join(tmp.path, n), errors="replace").read())]
        check(not san, "no sanitizer report in any crescent-elect log %s" % san)
        print("elect-cli: %d failures in %.1f s" % (len(failures), time.time() - t0))
        ok = not failures
    finally:
        H.cleanup()
        if not ok:
            for name in sorted(os.listdir(tmp.path)):
                path = os.path.join(tmp.path, name)
                if name.endswith(".out") or name.endswith(".log"):
                    print("---- %s" % name)
                    with open(path, errors="replace") as f:
                        print(f.read()[-4000:], end="")
        tmp.remove()
    return 0 if ok else 1


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
