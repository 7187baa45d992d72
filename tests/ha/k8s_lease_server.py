#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test double of the Kubernetes API for coordination.k8s.io/v1 Leases (no real API server can
run in the test environment). Implements what the crescent k8s election backend uses, with the
real API's JSON shapes and status codes: GET/POST/PUT/DELETE of namespaced Leases, list, watch
(newline-delimited watch events, fieldSelector=metadata.name=..., resourceVersion, timeoutSeconds),
optimistic concurrency on metadata.resourceVersion (409 Conflict Status), 404 NotFound Status,
bearer-token authentication (401), over TLS. Python 3 standard library only.

Closer to a real API server than a toy:
- resourceVersions are opaque strings of a global counter that starts past 2^31 and advances by
  random steps (never contiguous), as etcd revisions shared by all resources do;
- the watch window is bounded (--watch-window events, as the apiserver's watch cache): a watch
  from a version older than the window is answered like the watch cache does, HTTP 200 with one
  ERROR event carrying a 410 Expired Status "too old resource version: X (Y)" (or, with
  --expired http, a plain HTTP 410 with that Status); --churn-ms N writes an unrelated object
  every N ms (a node heartbeat Lease in kube-node-lease), so versions of an idle Lease leave the
  window as they do in a busy cluster;
- an update without metadata.resourceVersion is refused with 422 Invalid (Lease does not allow
  unconditional update), a create with one with 400 BadRequest; malformed JSON or a malformed MicroTime is 400 BadRequest; semantic
  errors (leaseDurationSeconds <= 0, bad names) are 422 Invalid.

Also: --readonly-token (reads allowed, writes answered 403 Forbidden as RBAC would),
--client-ca (client certificates signed by that CA authenticate without a token) and
--request-log FILE (one line "METHOD PATH?QUERY" per request received, appended and flushed as
it arrives, so tests can compare what a client asks for with an RBAC Role).

Fault injection: SIGUSR1 toggles outage mode; in outage mode every request gets 503 (default) or
hangs until the outage ends (--outage hang). SIGUSR2 drops every open watch stream. SIGHUP
empties the watch window (every earlier version becomes too old).

Usage: k8s_lease_server.py --cert C --key K --token T [--port-file F] [--outage 503|hang]
                           [--readonly-token R] [--client-ca CA] [--watch-window N]
                           [--churn-ms N] [--expired event|http] [--request-log F]
Prints "READY <port>" on stdout once listening (and writes the port to --port-file).
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import ssl
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

GROUP = "coordination.k8s.io"
API_VERSION = GROUP + "/v1"
ITEM_RE = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases/([^/]+)$")
COLL_RE = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases$")
DNS_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
RV_START = (1 << 31) + 12345  # resourceVersions start past 2^31 (clients must not parse them)


def now_rfc3339():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code, reason, message, details=None):
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
          "message": message, "reason": reason, "code": code}
    if details is not None:
        st["details"] = details
    return st


class Store:
    """Leases by (namespace, name), a global resourceVersion counter and the event history."""

    def __init__(self):
        self.cond = threading.Condition()
        self.leases = {}
        self.rv = RV_START
        self.events = []  # (rv, type, object): the watch window, oldest first
        self.window = 1000  # --watch-window
        self.compacted = 0  # versions up to this one have left the window
        self.outage = False
        self.generation = 0  # bumped by SIGUSR2 to drop watches

    def bump(self, typ, obj):
        self.rv += random.randint(1, 97)  # other resources share the counter: gaps
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.events.append((self.rv, typ, json.loads(json.dumps(obj))))
        if len(self.events) > self.window:
            self.compacted = self.events[-self.window - 1][0]
            del self.events[:-self.window]
        self.cond.notify_all()

    def oldest(self):
        """The oldest version a watch can resume from, as the watch cache computes it: a
        watch from rv is served when rv >= oldest - 1."""
        return self.events[0][0] if self.events else self.compacted + 1

    def compact(self):
        self.compacted = self.rv
        self.events = []
        self.cond.notify_all()


STORE = Store()
ARGS = None
REQUEST_LOG = None  # (lock, file) with --request-log


def details(name):
    return {"name": name, "group": GROUP, "kind": "leases"}


def validate(obj, ns, name_from_path):
    """Returns None or a 4xx Status, following apiserver validation for Leases."""
    if not isinstance(obj, dict):
        return status(400, "BadRequest", "the body of the request was in an unknown format")
    if obj.get("kind", "Lease") != "Lease" or obj.get("apiVersion", API_VERSION) != API_VERSION:
        return status(400, "BadRequest", "the API version in the data (%s) does not match the "
                      "expected API version (%s)" % (obj.get("apiVersion"), API_VERSION))
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return status(422, "Invalid", "Lease.coordination.k8s.io is invalid: metadata: Required value")
    name = md.get("name", "")
    if md.get("namespace", ns) != ns:
        return status(400, "BadRequest", "the namespace of the provided object does not match "
                      "the namespace sent on the request")
    if name_from_path is not None and name != name_from_path:
        return status(400, "BadRequest", "the name of the object (%s) does not match the name on "
                      "the URL (%s)" % (name, name_from_path))
    if not name or not DNS_RE.match(name) or len(name) > 253:
        return status(422, "Invalid", 'Lease.coordination.k8s.io "%s" is invalid: metadata.name: '
                      "Invalid value" % name, details(name))
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        return status(400, "BadRequest", "spec must be an object")
    d = spec.get("leaseDurationSeconds")
    if d is not None and (not isinstance(d, int) or d <= 0):
        return status(422, "Invalid", 'Lease.coordination.k8s.io "%s" is invalid: '
                      "spec.leaseDurationSeconds: Invalid value: %r: must be greater than 0"
                      % (name, d), details(name))
    t = spec.get("leaseTransitions")
    if t is not None and (not isinstance(t, int) or t < 0):
        return status(422, "Invalid", 'Lease.coordination.k8s.io "%s" is invalid: '
                      "spec.leaseTransitions: Invalid value: %r: must be greater than or equal "
                      "to 0" % (name, t), details(name))
    for f in ("acquireTime", "renewTime"):
        v = spec.get(f)
        if v is not None and not (isinstance(v, str) and
                                  re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$", v)):
            return status(400, "BadRequest", "spec.%s: MicroTime must look like "
                          "2006-01-02T15:04:05.000000Z, got %r" % (f, v))
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # one write per response (handle_one_request flushes): no Nagle stalls

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt, *args):
        if ARGS.verbose:
            sys.stderr.write("k8s-double: " + (fmt % args) + "\n")

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        try:
            return json.loads(self.raw_body or b"null")
        except ValueError as e:
            self.json_error = ("the body of the request was in an unknown format: %s" % e)
            return ValueError

    def gate(self):
        """Auth and outage handling; returns True when the request may proceed. Always consumes
        the request body so that the kept-alive connection stays in sync."""
        n = int(self.headers.get("Content-Length") or 0)
        self.raw_body = self.rfile.read(n) if n else b""
        if REQUEST_LOG:
            with REQUEST_LOG[0]:
                REQUEST_LOG[1].write("%s %s\n" % (self.command, self.path))
                REQUEST_LOG[1].flush()
        if STORE.outage:
            if ARGS.outage == "hang":
                with STORE.cond:
                    end = time.monotonic() + 60
                    while STORE.outage and time.monotonic() < end:
                        STORE.cond.wait(0.5)
            else:
                self.send_json(503, status(503, "ServiceUnavailable",
                                           "the server is currently unable to handle the request"))
                return False
        auth = self.headers.get("Authorization", "")
        if auth == "Bearer " + ARGS.token:
            return True
        if ARGS.readonly_token and auth == "Bearer " + ARGS.readonly_token:
            if self.command in ("GET", "HEAD"):
                return True
            kind, ns, name, _ = self.route()
            verb = {"POST": "create", "PUT": "update", "DELETE": "delete"}.get(self.command,
                                                                               "patch")
            self.send_json(403, status(
                403, "Forbidden", 'leases.coordination.k8s.io "%s" is forbidden: User '
                '"system:serviceaccount:%s:readonly" cannot %s resource "leases" in API group '
                '"coordination.k8s.io" in the namespace "%s"' % (name or "", ns, verb, ns),
                details(name or "")))
            return False
        # A client certificate signed by --client-ca authenticates too (kubeconfig
        # client-certificate / client-key), when no bearer token is sent.
        if not auth and ARGS.client_ca and self.connection.getpeercert():
            return True
        self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        return False

    def route(self):
        u = urlsplit(self.path)
        m = ITEM_RE.match(u.path)
        if m:
            return "item", m.group(1), m.group(2), parse_qs(u.query)
        m = COLL_RE.match(u.path)
        if m:
            return "coll", m.group(1), None, parse_qs(u.query)
        return None, None, None, None

    def not_found_path(self):
        self.send_json(404, status(404, "NotFound", "the server could not find the requested "
                                   "resource"))

    # --- verbs ---------------------------------------------------------------------------

    def do_GET(self):
        if not self.gate():
            return
        kind, ns, name, q = self.route()
        if kind == "item":
            if q.get("watch", ["false"])[0] in ("true", "1"):
                return self.watch(ns, name, q)
            with STORE.cond:
                obj = STORE.leases.get((ns, name))
                obj = json.loads(json.dumps(obj)) if obj else None
            if obj is None:
                return self.send_json(404, status(404, "NotFound", 'leases.coordination.k8s.io '
                                                  '"%s" not found' % name, details(name)))
            return self.send_json(200, obj)
        if kind == "coll":
            fs = q.get("fieldSelector", [""])[0]
            only = None
            if fs:
                m = re.match(r"^metadata\.name(==?)(.+)$", fs)
                if not m:
                    return self.send_json(400, status(400, "BadRequest", "unable to parse "
                                                      "requirement: %s" % fs))
                only = m.group(2)
            if q.get("watch", ["false"])[0] in ("true", "1"):
                return self.watch(ns, only, q)
            with STORE.cond:
                items = [json.loads(json.dumps(o)) for (n, _), o in sorted(STORE.leases.items())
                         if n == ns and (only is None or o["metadata"]["name"] == only)]
                rv = str(STORE.rv)
            return self.send_json(200, {"kind": "LeaseList", "apiVersion": API_VERSION,
                                        "metadata": {"resourceVersion": rv}, "items": items})
        self.not_found_path()

    def do_POST(self):
        if not self.gate():
            return
        kind, ns, _, _ = self.route()
        obj = self.read_body()
        if kind != "coll":
            return self.not_found_path() if kind is None else self.send_json(
                405, status(405, "MethodNotAllowed", "the server does not allow this method on "
                            "the requested resource"))
        if obj is ValueError:
            return self.send_json(400, status(400, "BadRequest", self.json_error))
        err = validate(obj, ns, None)
        if err:
            return self.send_json(err["code"], err)
        name = obj["metadata"]["name"]
        with STORE.cond:
            if (ns, name) in STORE.leases:
                return self.send_json(409, status(409, "AlreadyExists", 'leases.coordination.k8s.io'
                                                  ' "%s" already exists' % name, details(name)))
            md = obj["metadata"]
            if md.get("resourceVersion"):
                return self.send_json(400, status(400, "BadRequest", "resourceVersion should not "
                                                  "be set on objects to be created"))
            md["namespace"] = ns
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now_rfc3339()
            obj["apiVersion"], obj["kind"] = API_VERSION, "Lease"
            obj.setdefault("spec", {})
            STORE.leases[(ns, name)] = obj
            STORE.bump("ADDED", obj)
            out = json.loads(json.dumps(obj))
        self.send_json(201, out)

    def do_PUT(self):
        if not self.gate():
            return
        kind, ns, name, _ = self.route()
        obj = self.read_body()
        if kind != "item":
            return self.not_found_path()
        if obj is ValueError:
            return self.send_json(400, status(400, "BadRequest", self.json_error))
        err = validate(obj, ns, name)
        if err:
            return self.send_json(err["code"], err)
        with STORE.cond:
            cur = STORE.leases.get((ns, name))
            if cur is None:
                return self.send_json(404, status(404, "NotFound", 'leases.coordination.k8s.io '
                                                  '"%s" not found' % name, details(name)))
            rv = obj["metadata"].get("resourceVersion")
            if not rv:
                return self.send_json(422, status(
                    422, "Invalid", 'Lease.coordination.k8s.io "%s" is invalid: '
                    "metadata.resourceVersion: Invalid value: 0x0: must be specified for an "
                    "update" % name, details(name)))
            if rv != cur["metadata"]["resourceVersion"]:
                return self.send_json(409, status(
                    409, "Conflict", 'Operation cannot be fulfilled on leases.coordination.k8s.io'
                    ' "%s": the object has been modified; please apply your changes to the latest'
                    " version and try again" % name, details(name)))
            md = obj["metadata"]
            for k in ("uid", "creationTimestamp"):
                md[k] = cur["metadata"][k]
            md["namespace"] = ns
            obj["apiVersion"], obj["kind"] = API_VERSION, "Lease"
            obj.setdefault("spec", {})
            if obj["spec"] == cur.get("spec") and md.get("labels") == cur["metadata"].get("labels"):
                out = json.loads(json.dumps(cur))  # no-op update keeps the resourceVersion
            else:
                STORE.leases[(ns, name)] = obj
                STORE.bump("MODIFIED", obj)
                out = json.loads(json.dumps(obj))
        self.send_json(200, out)

    def do_DELETE(self):
        if not self.gate():
            return
        kind, ns, name, _ = self.route()
        if kind != "item":
            return self.not_found_path()
        with STORE.cond:
            cur = STORE.leases.pop((ns, name), None)
            if cur is None:
                return self.send_json(404, status(404, "NotFound", 'leases.coordination.k8s.io '
                                                  '"%s" not found' % name, details(name)))
            STORE.bump("DELETED", cur)
        self.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Success", "details": details(name)})

    # --- watch ---------------------------------------------------------------------------

    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def watch(self, ns, only, q):
        """Streams watch events for leases in ns (only the one named `only` when given)."""
        try:
            since = int(q.get("resourceVersion", ["0"])[0] or 0)
        except ValueError:
            return self.send_json(400, status(400, "BadRequest", "invalid resourceVersion"))
        timeout = min(int(q.get("timeoutSeconds", ["1800"])[0]), 1800)
        with STORE.cond:
            oldest = STORE.oldest()
        expired = None
        if since and since < oldest - 1:
            # The watch cache's answer (staging/.../cacher/watch_cache.go): Expired, 410.
            expired = status(410, "Expired", "too old resource version: %d (%d)"
                             % (since, oldest - 1))
            if ARGS.expired == "http":
                return self.send_json(410, expired)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        end = time.monotonic() + timeout

        def match(o):
            return o["metadata"]["namespace"] == ns and (only is None or
                                                          o["metadata"]["name"] == only)
        try:
            with STORE.cond:
                gen = STORE.generation
                if expired:
                    pending = [("ERROR", expired)]
                    end = 0
                elif since == 0:  # no resourceVersion: synthetic ADDED for what exists now
                    pending = [("ADDED", json.loads(json.dumps(o))) for o in STORE.leases.values()
                               if match(o)]
                    since = STORE.rv
                else:
                    pending = []
            while True:
                for typ, o in pending:
                    self.chunk({"type": typ, "object": o})
                pending = []
                with STORE.cond:
                    while True:
                        new = [(rv, t, o) for rv, t, o in STORE.events if rv > since]
                        if new or STORE.generation != gen or STORE.outage:
                            break
                        left = end - time.monotonic()
                        if left <= 0:
                            break
                        STORE.cond.wait(min(left, 0.5))
                    if STORE.generation != gen or STORE.outage or (not new and
                                                                   time.monotonic() >= end):
                        break
                    for rv, t, o in new:
                        since = rv
                        if match(o):
                            pending.append((t, o))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        self.close_connection = True


def toggle_outage(signum, frame):
    # Signal handlers run in the main thread between bytecodes; take the lock in a helper thread.
    def flip():
        with STORE.cond:
            STORE.outage = not STORE.outage
            STORE.cond.notify_all()
        sys.stderr.write("k8s-double: outage %s\n" % ("on" if STORE.outage else "off"))
    threading.Thread(target=flip, daemon=True).start()


def compact(signum, frame):
    def run():
        with STORE.cond:
            STORE.compact()
    threading.Thread(target=run, daemon=True).start()


def churn(period_s):
    """Renews a node heartbeat Lease in another namespace every period_s, as kubelets do: it
    moves the global resourceVersion and pushes idle versions out of the watch window."""
    ns, name = "kube-node-lease", "node-1"
    while True:
        time.sleep(period_s)
        with STORE.cond:
            if STORE.outage:
                continue
            obj = STORE.leases.get((ns, name))
            typ = "MODIFIED"
            if obj is None:
                typ = "ADDED"
                obj = {"apiVersion": API_VERSION, "kind": "Lease",
                       "metadata": {"name": name, "namespace": ns, "uid": str(uuid.uuid4()),
                                    "creationTimestamp": now_rfc3339()},
                       "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}}
            else:
                obj = json.loads(json.dumps(obj))
            obj["spec"]["renewTime"] = datetime.now(timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%S.%fZ")
            STORE.leases[(ns, name)] = obj
            STORE.bump(typ, obj)


def drop_watches(signum, frame):
    def bump():
        with STORE.cond:
            STORE.generation += 1
            STORE.cond.notify_all()
    threading.Thread(target=bump, daemon=True).start()


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--readonly-token", help="a token allowed to read only (403 on writes)")
    ap.add_argument("--client-ca", help="accept client certificates signed by this CA")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (IPv4 or IPv6)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--outage", choices=("503", "hang"), default="503")
    ap.add_argument("--watch-window", type=int, default=1000,
                    help="watch events kept (older versions answer 410 Expired)")
    ap.add_argument("--churn-ms", type=int, default=0,
                    help="write an unrelated object every N ms (0 = never)")
    ap.add_argument("--expired", choices=("event", "http"), default="event",
                    help="how a too-old watch is answered: ERROR event in HTTP 200, or HTTP 410")
    ap.add_argument("--request-log", help="append one 'METHOD PATH' line per request here")
    ap.add_argument("--verbose", action="store_true")
    ARGS = ap.parse_args()
    if ARGS.request_log:
        global REQUEST_LOG
        REQUEST_LOG = (threading.Lock(), open(ARGS.request_log, "a"))
    STORE.window = max(1, ARGS.watch_window)
    server_class = ThreadingHTTPServer
    if ":" in ARGS.host:
        class Server6(ThreadingHTTPServer):
            address_family = socket.AF_INET6
        server_class = Server6
    srv = server_class((ARGS.host, ARGS.port), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(ARGS.cert, ARGS.key)
    if ARGS.client_ca:
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(ARGS.client_ca)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    signal.signal(signal.SIGUSR1, toggle_outage)
    signal.signal(signal.SIGUSR2, drop_watches)
    signal.signal(signal.SIGHUP, compact)
    if ARGS.churn_ms > 0:
        threading.Thread(target=churn, args=(ARGS.churn_ms / 1000.0,), daemon=True).start()
    signal.signal(signal.SIGTERM, lambda s, f: os._exit(0))
    port = srv.server_address[1]
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, ARGS.port_file)
    print("READY %d" % port, flush=True)
    srv.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    main()
