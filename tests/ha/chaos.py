#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Chaos run for leader election (driven by tests/ha/chaos.sh): three crescent-elect processes
at the default timings (or those given) against one backend, with random kill -9 of the leader
and of others, SIGSTOP/SIGCONT of random processes, SIGTERM and restarts, for a given time.
Afterwards it checks from the processes' logs that leader intervals [LEADER time, last promised
until) never overlap, and prints the share of time with a leader and the failover times after
kill -9 of the leader (from the kill to the next LEADER line anywhere).

Clock tolerance: all processes print CLOCK_MONOTONIC of this host in whole milliseconds, so the
only tolerance is 1 ms of truncation. Exit 0 when there is no overlap, every kill -9 of the leader
is followed by a new leader within 4 leases, and the failover p50 meets
the target lease + retry + 500 ms; 1 otherwise."""
import argparse
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ha_harness as H  # noqa: E402

TOLERANCE_MS = 1


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Chaos:
    def __init__(self, args, backend, tmp):
        self.a = args
        self.backend = backend
        timings = ["--lease-ms", str(args.lease_ms), "--renew-ms", str(args.renew_ms),
                   "--retry-ms", str(args.retry_ms), "--verbose"]
        self.procs = [H.Elect(tmp, backend, args.cluster, "127.0.0.1:%d" % (7000 + i),
                              timings, name="n%d" % i) for i in range(3)]
        self.stopped = {}  # index -> resume time (ms)
        self.dead_since = {}  # index -> time it died (ms)
        self.failovers = []
        self.counts = {}
        self.rng = random.Random(args.seed)

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    def leader(self):
        """Index of the process that currently leads by its own log, or None."""
        now = H.mono_ms()
        for i, p in enumerate(self.procs):
            if not p.alive() or i in self.stopped:
                continue
            ivs = H.intervals(p.lines(), p.name)
            if ivs and ivs[-1][1] > now and ivs[-1][0] <= now:
                return i
        return None

    def tick(self):
        now = H.mono_ms()
        for i, t in list(self.stopped.items()):
            if now >= t:
                self.procs[i].signal(signal.SIGCONT)
                del self.stopped[i]
        for i, p in enumerate(self.procs):
            if not p.alive():
                since = self.dead_since.setdefault(i, now)
                if now - since >= self.a.restart_ms:
                    p.start()
                    self.dead_since.pop(i, None)
                    self.count("restart")

    def sleep(self, ms):
        end = H.mono_ms() + ms
        while H.mono_ms() < end:
            self.tick()
            time.sleep(0.02)

    def kill_leader(self, li):
        standbys = [i for i, p in enumerate(self.procs)
                    if i != li and p.alive() and i not in self.stopped]
        if not standbys:
            return
        t_kill = H.mono_ms()
        self.procs[li].kill9()
        self.dead_since[li] = t_kill
        self.count("kill9_leader")
        # No other chaos until someone leads again, so that the figure is a clean failover.
        deadline = t_kill + 4 * self.a.lease_ms
        while H.mono_ms() < deadline:
            for i in standbys:
                ln = self.procs[i].wait_for("LEADER", 0, after_ms=t_kill + 1)
                if ln:
                    self.failovers.append(ln[0] - t_kill)
                    return
            time.sleep(0.02)
        self.count("failover_timeout")

    def step(self):
        li = self.leader()
        r = self.rng.random()
        alive = [i for i, p in enumerate(self.procs) if p.alive() and i not in self.stopped]
        if li is not None and r < 0.45:
            self.kill_leader(li)
        elif r < 0.70 and alive:
            i = self.rng.choice(alive)
            # Pauses shorter and longer than the lease.
            dur = self.rng.uniform(0.2, 2.5) * self.a.lease_ms
            self.procs[i].signal(signal.SIGSTOP)
            self.stopped[i] = H.mono_ms() + int(dur)
            self.count("sigstop_leader" if i == li else "sigstop_other")
        elif r < 0.85 and alive:
            i = self.rng.choice(alive)
            self.procs[i].kill9()
            self.dead_since[i] = H.mono_ms()
            self.count("kill9_leader_unmeasured" if i == li else "kill9_other")
        elif alive:
            i = self.rng.choice(alive)
            self.procs[i].signal(signal.SIGTERM)
            self.count("sigterm")

    def run(self):
        for p in self.procs:
            p.start()
        t0 = H.mono_ms()
        end = t0 + self.a.seconds * 1000
        self.sleep(2 * self.a.lease_ms)
        while H.mono_ms() < end:
            self.step()
            self.sleep(int(self.rng.uniform(0.5, 2.0) * self.a.retry_ms * 2))
        t1 = H.mono_ms()
        for i in list(self.stopped):
            self.procs[i].signal(signal.SIGCONT)
        for p in self.procs:
            if p.alive():
                p.term()
        return t0, t1

    def report(self, t0, t1):
        ivs = []
        for p in self.procs:
            ivs.extend(H.intervals(p.lines(), p.name))
        bad = H.check_overlap(ivs, TOLERANCE_MS)
        epoch_bad = H.check_epochs(ivs)
        # Share of [t0, t1) covered by some leader interval.
        covered, cur = 0, t0
        for s, e, _, _ in sorted(ivs):
            s, e = max(s, cur), min(e, t1)
            if e > s:
                covered += e - s
                cur = e
        a = self.a
        target = a.lease_ms + a.retry_ms + 500
        p50 = percentile(self.failovers, 0.5)
        print("chaos: backend=%s duration=%.0fs processes=3 lease=%d renew=%d retry=%d seed=%s"
              % (self.backend.kind, (t1 - t0) / 1000.0, a.lease_ms, a.renew_ms, a.retry_ms,
                 a.seed))
        print("chaos: actions %s" % " ".join("%s=%d" % kv for kv in sorted(self.counts.items())))
        print("chaos: leader terms=%d overlaps=%d (clock tolerance %d ms)"
              % (len(ivs), len(bad), TOLERANCE_MS))
        for x, y in bad[:10]:
            print("chaos:   OVERLAP %s %s" % (x, y))
        print("chaos: epochs strictly increasing from term to term: %s"
              % ("yes" if not epoch_bad else "NO %s" % epoch_bad[:5]))
        print("chaos: leader share %.1f%% of %.0f s" % (100.0 * covered / max(1, t1 - t0),
                                                      (t1 - t0) / 1000.0))
        if self.failovers:
            print("chaos: failover after leader kill -9: n=%d p50=%.0f ms max=%d ms min=%d ms "
                  "(target p50 <= %d ms)" % (len(self.failovers), p50, max(self.failovers),
                                             min(self.failovers), target))
        else:
            print("chaos: no failover measured")
        # A live standby that does not lead within 4 leases of the leader's kill is a liveness
        # failure, whatever the p50 of the others.
        timeouts = self.counts.get("failover_timeout", 0)
        print("chaos: failovers with no new leader within 4 leases: %d" % timeouts)
        ok = not bad and not epoch_bad and (p50 is None or p50 <= target) and not timeouts
        print("chaos: %s" % ("PASS" if ok else "FAIL"))
        return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("backend", choices=["redis", "etcd", "k8s"])
    ap.add_argument("seconds", type=int)
    ap.add_argument("--uri", help="use a backend started elsewhere (k8s)")
    ap.add_argument("--cluster", default="chaos")
    ap.add_argument("--lease-ms", type=int, default=5000)
    ap.add_argument("--renew-ms", type=int, default=3000)
    ap.add_argument("--retry-ms", type=int, default=1000)
    ap.add_argument("--restart-ms", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the logs directory")
    a = ap.parse_args()
    if a.seed is None:
        a.seed = random.randrange(1 << 30)
    tmp = H.TempDir("crescent-chaos-%s." % a.backend)
    backend = H.make_backend(a.backend, tmp.path, a.uri)
    ok = False
    try:
        backend.start()
        c = Chaos(a, backend, tmp.path)
        t0, t1 = c.run()
        ok = c.report(t0, t1)
    finally:
        H.cleanup()
        backend.stop()
        if a.keep or not ok:
            print("chaos: logs kept in %s" % tmp.path)
        else:
            tmp.remove()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
