# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the Python package tests (tests/python/run.sh): a crescent-master on a free
loopback port, a `crescent-bench store --operation serve` peer contributing a tcp segment (so
reads and writes of a client without a segment of its own cross the transfer engine), and
Store clients. Binaries come from $CRESCENT_BUILD/bin; every process started here is killed at
the end of the session."""

import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("CRESCENT_BUILD") or os.path.join(ROOT, "build")
sys.path.insert(0, os.path.join(ROOT, "python"))

import crescent  # noqa: E402

LEASE_MS = 3000  # read lease of the test master: a remove right after a read meets it


_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    """Child processes get SIGKILL when pytest dies (a killed run leaves no server behind)."""
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class Master:
    """crescent-master on a free port; addr is "127.0.0.1:port"."""

    def __init__(self, tmp):
        self.log = os.path.join(tmp, "master.log")
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [os.path.join(BUILD, "bin", "crescent-master"), "--port", str(self.port),
                 "--bind", "127.0.0.1", "--metrics_port", "0", "--memory", "16mb",
                 # the stores' and the peer's segments are the pool's only ones
                 "--embedded_segment_in_pool", "no",
                 "--default_kv_lease_ttl", str(LEASE_MS)],
                stdout=open(self.log, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.proc.poll() is None:
                if ping(self.port):
                    self.addr = "127.0.0.1:%d" % self.port
                    return
                time.sleep(0.05)
            self.stop()
        raise RuntimeError("crescent-master did not start; log:\n" + open(self.log).read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class ServePeer:
    """`crescent-bench store --operation serve`: another process's segment in the pool."""

    def __init__(self, master, tmp, protocol="tcp", size="64m"):
        self.log = os.path.join(tmp, "peer.log")
        self.proc = subprocess.Popen(
            [os.path.join(BUILD, "bin", "crescent-bench"), "store", "--master", master.addr,
             "--operation", "serve", "--protocol", protocol, "--segment_size", size,
             "--duration", "3600"],
            stdout=open(self.log, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(r"^serving segment (\S+)", open(self.log).read(), re.M)
            if m:
                self.segment = m.group(1)
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("serve peer did not start; log:\n" + open(self.log).read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def assert_clean_log(path):
    """No sanitizer report in a process's log (sanitizer builds)."""
    text = open(path).read()
    assert not re.search(r"ERROR: (Address|Leak|Thread)Sanitizer|runtime error:", text), text


@pytest.fixture(scope="session")
def master(tmp_path_factory):
    m = Master(str(tmp_path_factory.mktemp("master")))
    yield m
    m.stop()
    assert m.proc.returncode in (0, -signal.SIGTERM), open(m.log).read()
    assert_clean_log(m.log)


@pytest.fixture(scope="session")
def peer(master, tmp_path_factory):
    p = ServePeer(master, str(tmp_path_factory.mktemp("peer")))
    yield p
    p.stop()
    assert_clean_log(p.log)


def make_store(master, segment=0):
    st = crescent.Store()
    assert st.setup("127.0.0.1", "P2PHANDSHAKE", segment, 4 << 20, "tcp", "", master.addr) == 0
    return st


@pytest.fixture
def store(master, peer):
    """A client without a segment of its own: its objects live on the serve peer (tcp)."""
    st = make_store(master)
    yield st
    st.remove_all(force=True)
    st.close()


@pytest.fixture
def owning_store(master, peer):
    """A client contributing a 16 MiB segment of its own (besides the peer's)."""
    st = make_store(master, 16 << 20)
    yield st
    st.remove_all(force=True)
    st.close()
