#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Leader election through the Kubernetes Lease backend: crescent-elect processes against the
Lease API double (tests/ha/k8s_lease_server.py over TLS, kubeconfig with a bearer token), at
lease 2000 ms (leaseDurationSeconds is whole seconds), renew deadline 1200 ms, retry 300 ms.
Scenarios: one winner and growing epochs; hand-off after release (SIGTERM); three simultaneous
candidates; stop => prompt loss; kill -9 => a running observer reads no holder after the lease
and a standby leads within lease + retry; API outage (503, and a hanging API) => the leader
steps down by its renew deadline; leader SIGSTOPped past the lease => a new leader, and the
paused one steps down on SIGCONT without overlapping (checked from the until= figures); a dead
leader's Lease whose resourceVersion left the watch window (410 Expired as an ERROR event and as
a plain HTTP 410) is taken over by the standby and by a freshly started candidate; the Lease
deleted while candidates run (epochs keep growing, the loss is reported; --state-dir); wrong token
and unreachable API => one error line and exit 1. Exit 0 pass, 1 fail, 77 skip."""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LEASE, RENEW, RETRY = 2000, 1200, 300
TIMINGS = ["--lease-ms", str(LEASE), "--renew-ms", str(RENEW), "--retry-ms", str(RETRY),
           "--timeout-ms", "500", "--verbose"]
SLACK = 400  # scheduling slack on a loaded 2-core machine, ms
LATE = 150  # lateness allowed for a timer wake-up, ms
NS = "crescent-test"

check, failures = H.check, H.failures
all_elects = []


class K8sDouble:
    """The Lease API double with a CA and server certificate made by the openssl CLI."""
    kind = "k8s"
    uri = "k8s://"  # lease crescent-<cluster> in the kubeconfig's namespace

    def __init__(self, tmp, mode="503", extra=(), name=None):
        self.dir = os.path.join(tmp, "k8s-%s" % (name or mode))
        self.mode = mode
        self.extra = list(extra)
        self.token = "tok-%d" % os.getpid()
        self.proc = None
        self.port = None
        self.outage = False

    def start(self):
        d = self.dir
        H.make_test_certs(d, "127.0.0.1")
        port_file = os.path.join(d, "port")
        log = open(os.path.join(d, "double.log"), "a")
        self.proc = H.spawn([sys.executable, os.path.join(HERE, "k8s_lease_server.py"),
                             "--cert", os.path.join(d, "server.crt"),
                             "--key", os.path.join(d, "server.key"), "--token", self.token,
                             "--port-file", port_file, "--outage", self.mode] + self.extra, log)
        for _ in range(200):
            if os.path.exists(port_file):
                break
            if self.proc.poll() is not None:
                raise RuntimeError("the Lease API double exited")
            time.sleep(0.02)
        with open(port_file) as f:
            self.port = int(f.read())
        self.kubeconfig = self.write_kubeconfig("kubeconfig", self.token)

    def write_kubeconfig(self, name, token, port=None):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                    "clusters:\n- name: d\n  cluster:\n    server: https://127.0.0.1:%d\n"
                    "    certificate-authority: %s\n"
                    "contexts:\n- name: t\n  context:\n    cluster: d\n    user: u\n"
                    "    namespace: %s\n"
                    "users:\n- name: u\n  user:\n    token: %s\n"
                    % (port or self.port, os.path.join(self.dir, "ca.crt"), NS, token))
        return path

    def use(self):
        os.environ["KUBECONFIG"] = self.kubeconfig

    def requests(self):
        """How many requests the double has logged (needs --verbose)."""
        with open(os.path.join(self.dir, "double.log")) as f:
            return sum(1 for ln in f if '"GET ' in ln or '"PUT ' in ln or '"POST ' in ln)

    def pause(self):
        if not self.outage:
            self.outage = True
            os.kill(self.proc.pid, signal.SIGUSR1)

    def resume(self):
        if self.outage:
            self.outage = False
            os.kill(self.proc.pid, signal.SIGUSR1)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def ep(ln):
    return int(ln[2]["epoch"])


def test_one_winner_and_epochs(c):
    print("one candidate wins; epochs grow; hand-off after release; stop => prompt loss")
    a = c.elect("c1", "a:1").start()
    la = a.wait_for("LEADER", 3000)
    if not check(la is not None, "a leads"):
        return
    obs = c.elect("c1", "observer", ["--observe"]).start()
    ho = obs.wait_for("HOLDER", 3000)
    check(ho is not None and ho[2]["leader"] == "a:1" and ep(ho) == ep(la),
          "observer reads holder a:1 epoch %d (got %s)" % (ep(la), ho and ho[2]))
    b = c.elect("c1", "b:1").start()
    fb = b.wait_for("FOLLOWER", 3000)
    check(fb is not None and fb[2]["leader"] == "a:1", "b follows a:1")
    t_stop = H.mono_ms()
    rc = a.term()
    check(rc == 0, "a exits 0 on SIGTERM (rc=%s)" % rc)
    sd = a.wait_for("STEPPED_DOWN", 1000)
    check(sd is not None and sd[2].get("reason") == "stop" and sd[0] - t_stop < SLACK,
          "a steps down (reason=stop) promptly: %s ms" % (sd and sd[0] - t_stop))
    lb = b.wait_for("LEADER", 3000, after_ms=t_stop)
    check(lb is not None and lb[0] - t_stop < RETRY + SLACK,
          "b leads after the release, well before a lease: %s ms (watch)"
          % (lb and lb[0] - t_stop))
    check(lb is not None and ep(lb) > ep(la), "epoch grows: %d -> %s" % (ep(la), lb and ep(lb)))
    b.term()
    a2 = c.elect("c1", "a:1").start()
    la2 = a2.wait_for("LEADER", 3000)
    check(la2 is not None and lb is not None and ep(la2) > ep(lb),
          "epoch grows when a:1 comes back after b's release: %s" % (la2 and ep(la2)))
    a2.term()
    time.sleep(0.2)
    eps = [int(ln[2]["epoch"]) for ln in obs.lines() if ln[1] == "HOLDER"]
    check(eps == sorted(eps) and len(set(eps)) >= 3,
          "the observer saw epochs %s in order" % sorted(set(eps)))
    obs.term()


def test_three_candidates(c):
    H.scenario_three_candidates(c, LEASE + SLACK)


def test_kill9(c):
    print("leader kill -9: the lease reads as no holder after expiry; standby leads in "
          "lease + retry")
    a = c.elect("c4", "a:1").start()
    if not check(a.wait_for("LEADER", 3000) is not None, "a leads"):
        return
    obs = c.elect("c4", "observer", ["--observe"]).start()
    check(obs.wait_for("HOLDER", 3000, pred=lambda ln: ln[2]["leader"] == "a:1") is not None,
          "observer sees a:1")
    time.sleep(0.3)
    t_kill = H.mono_ms()
    a.kill9()
    # Expiry is judged by the observer's own clock since the Lease last changed (client-go).
    ho = obs.wait_for("HOLDER", LEASE + RETRY + 2 * SLACK, after_ms=t_kill,
                      pred=lambda ln: ln[2]["leader"] == "-")
    took = ho[0] - t_kill if ho else None
    check(ho is not None and LEASE - RETRY - 100 <= took <= LEASE + RETRY + SLACK,
          "observer reads no holder %s ms after kill -9 (lease %d)" % (took, LEASE))
    obs.term()
    a = c.elect("c4", "a:2").start()
    # A new candidate waits a full lease from its first read of the (dead) holder's Lease.
    la = a.wait_for("LEADER", 3 * LEASE)
    if not check(la is not None, "a:2 leads"):
        return
    b = c.elect("c4", "b:2").start()
    check(b.wait_for("FOLLOWER", 3000) is not None, "b:2 follows")
    time.sleep(0.3)
    t_kill = H.mono_ms()
    a.kill9()
    lb = b.wait_for("LEADER", LEASE + RETRY + 2 * SLACK, after_ms=t_kill)
    took = lb[0] - t_kill if lb else None
    check(lb is not None and took <= LEASE + RETRY + SLACK,
          "standby leads %s ms after kill -9 (bound %d + slack)" % (took, LEASE + RETRY))
    check(lb is not None and ep(lb) == ep(la) + 1, "epoch %d -> %s" % (ep(la), lb and ep(lb)))
    b.term()


def test_expired_window(c, backend, cluster):
    """Issue 13: a dead leader's Lease whose resourceVersion has left the API server's watch
    window (the double writes another object every 50 ms and keeps 8 events, so a version is
    too old after about 0.4 s). (a) The standby must still take over one lease after the last
    renew; (b) a candidate started on such a Lease must lead one lease after its first read."""
    print("watch window %s: a dead leader's Lease whose version left the window is taken over"
          % backend.expired)
    bound = 3 * LEASE  # the property is liveness: it must happen, at about lease + retry
    a = c.elect(cluster, "a:1").start()
    la = a.wait_for("LEADER", 3000)
    if not check(la is not None, "a leads"):
        return
    b = c.elect(cluster, "b:1").start()
    check(b.wait_for("FOLLOWER", 3000) is not None, "b follows")
    time.sleep(0.3)
    t_kill = H.mono_ms()
    n0 = backend.requests()
    a.kill9()
    lb = b.wait_for("LEADER", bound + SLACK, after_ms=t_kill)
    took_a = took = lb[0] - t_kill if lb else None
    n1 = backend.requests()
    check(lb is not None and took < bound,
          "(a) standby leads %s ms after kill -9 (lease %d, retry %d; bound %d)"
          % (took, LEASE, RETRY, bound))
    # b alone talks to the API meanwhile: about one read per retry period, and a watch or two;
    # a follower that re-watches a too-old version in a loop makes ~18 requests a second.
    rate = (n1 - n0) * 1000.0 / max(took or bound, 1)
    check(rate <= 3 * 1000.0 / RETRY, "the standby made %d requests in that time (%.1f/s, "
          "bound %.1f/s)" % (n1 - n0, rate, 3 * 1000.0 / RETRY))
    time.sleep(0.3)
    b.kill9()  # (b) runs whether or not (a) passed: the Lease is left by a dead holder
    time.sleep(1.0)  # b's last version leaves the window before the new candidate starts
    t0 = H.mono_ms()
    n = c.elect(cluster, "n:1").start()
    ln = n.wait_for("LEADER", bound + SLACK, after_ms=t0)
    took = ln[0] - t0 if ln else None
    check(ln is not None and took < bound,
          "(b) a candidate started on the dead holder's Lease leads after %s ms (bound %d)"
          % (took, bound))
    check(ln is not None and ep(ln) > ep(lb or la),
          "epoch grows: %d -> %s" % (ep(lb or la), ln and ep(ln)))
    FIGURES.append((backend.expired, took_a, took))
    n.term()


FIGURES = []


def delete_lease(backend, name):
    """DELETE the Lease as `kubectl delete lease` would; returns the HTTP status."""
    import ssl
    import urllib.request
    ctx = ssl.create_default_context(cafile=os.path.join(backend.dir, "ca.crt"))
    req = urllib.request.Request(
        "https://127.0.0.1:%d/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s"
        % (backend.port, NS, name), method="DELETE",
        headers={"Authorization": "Bearer " + backend.token})
    try:
        return urllib.request.urlopen(req, context=ctx, timeout=5).status
    except urllib.error.HTTPError as e:
        return e.code


def test_lease_deleted(c, backend):
    """Issue 14: the Lease is deleted (leaseTransitions would restart at 1) while candidates
    run: the next leader's epoch is above every epoch printed before and the loss is reported;
    then durably, a candidate restarted with the same --state-dir after another delete."""
    print("Lease deleted and recreated: epochs keep growing, the loss is logged; --state-dir")
    a = c.elect("d1", "a:1").start()
    la = a.wait_for("LEADER", 3000)
    if not check(la is not None, "a leads"):
        return
    b = c.elect("d1", "b:1").start()
    check(b.wait_for("FOLLOWER", 3000) is not None, "b follows")
    time.sleep(0.3)
    t_kill = H.mono_ms()
    a.kill9()
    lb = b.wait_for("LEADER", LEASE + RETRY + 2 * SLACK, after_ms=t_kill)
    if not check(lb is not None and ep(lb) > ep(la),
                 "b leads after a's kill -9, epoch %d -> %s" % (ep(la), lb and ep(lb))):
        b.term()
        return
    time.sleep(0.3)
    before = max(ep(ln) for e in (a, b) for ln in e.lines() if "epoch" in ln[2])
    t_del = H.mono_ms()
    check(delete_lease(backend, "crescent-d1") == 200, "Lease crescent-d1 deleted")
    lb2 = b.wait_for("LEADER", 8000, after_ms=t_del)
    check(lb2 is not None and ep(lb2) > before,
          "after the delete b leads again with epoch %s > %d (every epoch printed before)"
          % (lb2 and ep(lb2), before))
    dl = b.wait_for("DATA_LOSS", 3000, after_ms=t_del)
    check(dl is not None and int(dl[2]["floor"]) == before and int(dl[2]["stored"]) < before,
          "b reports DATA_LOSS %s" % (dl and dl[2]))
    errs = [x for x in b.raw().splitlines() if "ERROR: election backend lost data" in x]
    check(len(errs) == 1, "one ERROR line on stderr: %s" % errs[:2])
    b.term()
    state = os.path.join(c.tmp, "state-d2")
    p = c.elect("d2", "p:1", ["--state-dir", state]).start()
    lp = p.wait_for("LEADER", 3000)
    p.term()
    delete_lease(backend, "crescent-d2")
    q = c.elect("d2", "q:1", ["--state-dir", state]).start()
    lq = q.wait_for("LEADER", 8000)
    check(lq is not None and lp is not None and ep(lq) > ep(lp),
          "a candidate restarted with the same --state-dir after another delete leads with "
          "epoch %s > %s" % (lq and ep(lq), lp and ep(lp)))
    check(q.wait_for("DATA_LOSS", 3000) is not None, "and reports DATA_LOSS")
    q.term()


def test_backend_down(c, backend, cluster):
    print("API %s outage => the leader steps down by its renew deadline" % backend.mode)
    a = c.elect(cluster, "a:1").start()
    la = a.wait_for("LEADER", 3000)
    if not check(la is not None, "a leads"):
        return
    time.sleep(0.3)
    t_down = H.mono_ms()
    backend.pause()
    sd = a.wait_for("STEPPED_DOWN", RENEW + 2 * SLACK, after_ms=t_down)
    backend.resume()
    if not check(sd is not None, "a steps down while the API is down"):
        return
    until = max(int(ln[2]["until"]) for ln in a.lines()
                if ln[1] in ("LEADER", "RENEWED") and ln[0] <= sd[0])
    check(sd[2].get("reason") == "renew_deadline", "reason=renew_deadline (%s)" % sd[2])
    check(sd[0] <= until + LATE, "stepped down at %d, by its until %d (+%d ms)"
          % (sd[0], until, LATE))
    check(sd[0] - t_down <= RENEW + LATE, "within the renew deadline of the outage: %d ms"
          % (sd[0] - t_down))
    la2 = a.wait_for("LEADER", 2 * LEASE + SLACK, after_ms=sd[0])
    check(la2 is not None and ep(la2) > ep(la), "a leads again once the API is back "
          "(epoch %d -> %s)" % (ep(la), la2 and ep(la2)))
    a.term()


def test_sigstop(c):
    def lease_ended_first(a, lb):
        ua = max(int(ln[2]["until"]) for ln in a.lines() if ln[1] in ("LEADER", "RENEWED"))
        check(lb is not None and ua <= lb[0], "a's last until %d <= b's LEADER at %s" %
              (ua, lb and lb[0]))

    H.scenario_sigstop(c, LEASE, RETRY, SLACK, also=lease_ended_first)


def run_elect_once(extra_env, timeout=8):
    """Runs crescent-elect expecting it to fail at start: (rc, stderr lines, seconds)."""
    t0 = time.time()
    env = dict(os.environ, **extra_env)
    p = subprocess.run([H.ELECT, "--backend", "k8s://ns/l", "--cluster", "e", "--identity",
                        "x:1"] + TIMINGS, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, text=True, env=env)
    return p.returncode, p.stderr.splitlines(), time.time() - t0


def test_errors(c, backend):
    print("wrong token, unreachable API, bad URI: one error line and exit 1")
    bad = backend.write_kubeconfig("bad.kc", "wrong-token")
    rc, err, secs = run_elect_once({"KUBECONFIG": bad})
    check(rc == 1 and len(err) == 1 and "401 Unauthorized" in err[0] and secs < 3,
          "wrong token -> rc=%d in %.1f s: %s" % (rc, secs, err[:2]))
    dead = backend.write_kubeconfig("dead.kc", backend.token, port=H.free_port())
    rc, err, secs = run_elect_once({"KUBECONFIG": dead})
    check(rc == 1 and len(err) == 1 and "unreachable" in err[0] and secs < 3,
          "unreachable API -> rc=%d in %.1f s: %s" % (rc, secs, err[:2]))
    t0 = time.time()
    p = subprocess.run([H.ELECT, "--backend", "k8s://Bad_NS/x", "--cluster", "e",
                        "--identity", "x:1"], stderr=subprocess.PIPE, text=True, timeout=8)
    err = p.stderr.splitlines()
    check(p.returncode == 1 and len(err) == 1 and "k8s URI" in err[0],
          "bad namespace -> rc=%d: %s" % (p.returncode, err[:2]))
    nocfg = {"KUBECONFIG": "", "HOME": c.tmp, "KUBERNETES_SERVICE_HOST": ""}
    rc, err, secs = run_elect_once(nocfg)
    check(rc == 1 and len(err) == 1 and "no configuration" in err[0],
          "no kubeconfig and no service account -> rc=%d: %s" % (rc, err[:2]))


def main():
    if not shutil.which("openssl"):
        print("skip: openssl not installed")
        return 77
    if not os.access(H.ELECT, os.X_OK):
        print("missing %s" % H.ELECT)
        return 1
    tmp = H.TempDir("crescent-ha-k8s.")
    ok = False
    doubles = []
    try:
        t0 = time.time()
        backend = K8sDouble(tmp.path)
        hang = K8sDouble(tmp.path, "hang")
        churn = ["--churn-ms", "50", "--watch-window", "8", "--verbose"]
        window = K8sDouble(tmp.path, extra=churn + ["--expired", "event"], name="window-event")
        window410 = K8sDouble(tmp.path, extra=churn + ["--expired", "http"], name="window-http")
        window.expired, window410.expired = "ERROR event", "plain HTTP 410"
        doubles = [backend, hang, window, window410]
        for d in doubles:
            d.start()
        backend.use()
        c = H.ElectCtx(backend, tmp.path, TIMINGS, all_elects)
        for t in (test_one_winner_and_epochs, test_three_candidates, test_kill9, test_sigstop):
            t(c)
        test_lease_deleted(c, backend)
        test_backend_down(c, backend, "c5")
        hang.use()
        test_backend_down(c, hang, "c7")
        for w, cluster in ((window, "c8"), (window410, "c9")):
            w.use()
            test_expired_window(c, w, cluster)
        for form, a, b in FIGURES:
            print("  figures (%s): kill -9 -> standby leads %s ms; fresh candidate leads %s ms"
                  % (form, a, b))
        backend.use()
        test_errors(c, backend)
        H.check_no_overlap(all_elects)
        H.check_no_sanitizer(all_elects)
        print("k8s: %d failures in %.1f s" % (len(failures), time.time() - t0))
        ok = not failures
    finally:
        H.cleanup()
        for d in doubles:
            d.stop()
        if not ok:
            H.print_logs(all_elects)
        tmp.remove()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
