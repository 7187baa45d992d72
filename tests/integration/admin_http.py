#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""crescent-master's admin HTTP server against real clients: /metrics scraped while redis-py
writes, checked with Prometheus's own parser (promtool check metrics) and against the values
the workload must produce; /health, /role, /leader, /query_key, /get_all_segments and paged
/get_all_keys; bad requests answered 400 / 404 / 405.

Usage: admin_http.py RESP_PORT HTTP_PORT"""
import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import redis

RESP, HTTP = int(sys.argv[1]), int(sys.argv[2])
BASE = "http://127.0.0.1:%d" % HTTP


def get(path, method="GET"):
    req = urllib.request.Request(BASE + path, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read()


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def samples(text):
    """Parses the exposition into {(name, frozenset(labels)): value}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, value = line.rsplit(" ", 1)
        labels = frozenset()
        if "{" in name_labels:
            name, rest = name_labels.split("{", 1)
            labels = frozenset(
                tuple(kv.split("=", 1)) for kv in rest.rstrip("}").replace('"', "").split(",")
            )
        else:
            name = name_labels
        out[(name, labels)] = float(value)
    return out


def promtool(text):
    p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=60)
    # promtool exits 0 when the exposition parses; lint notes go to stdout/stderr.
    check(p.returncode == 0, "promtool check metrics: %s %s" % (p.stdout, p.stderr))


r = redis.Redis(host="127.0.0.1", port=RESP)
r.flushall()

# Scrape while four writers run, and validate every scrape with promtool.
N, WRITERS = 2000, 4
stop = threading.Event()


def writer(w):
    c = redis.Redis(host="127.0.0.1", port=RESP)
    p = c.pipeline(transaction=False)
    for i in range(N):
        p.set("w%d:%d" % (w, i), "x" * 100)
        if i % 100 == 99:
            p.execute()
    p.execute()


threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
for t in threads:
    t.start()
scrapes = 0
while any(t.is_alive() for t in threads) or scrapes < 3:
    status, ctype, body = get("/metrics")
    check(status == 200, "/metrics status %d" % status)
    check(ctype.startswith("text/plain; version=0.0.4"), "content type %r" % ctype)
    promtool(body.decode())
    scrapes += 1
for t in threads:
    t.join()

# Values the workload fixes exactly.
r.lpush("w0:0:list", "a")
try:
    r.lpush("w0:0", "b")  # WRONGTYPE
except redis.ResponseError:
    pass
try:
    r.execute_command("GET")  # arity: rejected
except redis.ResponseError:
    pass
m = samples(get("/metrics")[2].decode())
set_calls = m[("crescent_commands_total", frozenset({("cmd", "set")}))]
check(set_calls == N * WRITERS, "commands_total{set} = %s, want %d" % (set_calls, N * WRITERS))
check(m[("crescent_command_failed_total", frozenset({("cmd", "lpush")}))] == 1, "lpush failed 1")
check(m[("crescent_command_rejected_total", frozenset({("cmd", "get")}))] == 1, "get rejected 1")
check(m[("crescent_errors_total", frozenset({("code", "WRONGTYPE")}))] == 1, "WRONGTYPE once")
check(m[("crescent_keys", frozenset())] == r.dbsize(), "keys == DBSIZE")
inf = m[("crescent_command_duration_seconds_bucket", frozenset({("cmd", "set"), ("le", "+Inf")}))]
check(inf == set_calls, "histogram +Inf bucket %s == calls %s" % (inf, set_calls))
check(m[("crescent_command_duration_seconds_count", frozenset({("cmd", "set")}))] == set_calls,
      "histogram count")
info = r.info("memory")
check(m[("crescent_memory_max_bytes", frozenset())] == info["maxmemory"], "maxmemory")
check(m[("crescent_connected_clients", frozenset())] >= 1, "connected clients")
check(m[("crescent_segment_used_bytes", frozenset({("segment", "embedded")}))] > 0, "segment used")

# /health, /role, /leader, /get_all_segments
status, ctype, body = get("/health")
h = json.loads(body)
check(status == 200 and h["ready"] is True and h["state"] == "serving", "/health %s" % body)
check(json.loads(get("/role")[2])["role"] == "leader", "/role")
check(json.loads(get("/leader")[2])["leader"] == "127.0.0.1:%d" % RESP, "/leader")
segs = json.loads(get("/get_all_segments")[2])["segments"]
check(len(segs) == 1 and segs[0]["name"] == "embedded" and segs[0]["used"] > 0, "segments")

# /query_key: a binary key (URL-encoded), a missing key, a missing parameter.
r.set(b"k\x00\xff \"q\"", b"12345")
r.pexpire(b"k\x00\xff \"q\"", 100000)
status, _, body = get("/query_key?key=k%00%FF%20%22q%22")
check(status == 200, "query_key status %d %s" % (status, body))
q = json.loads(body)
check(q["key"] == "k\x00\xff \"q\"", "key round trip %r" % q["key"])
check(q["size"] == 5 and q["type"] == "string", "size/type %s" % body)
check(0 < q["ttl_ms"] <= 100000, "ttl %s" % body)
check(q["replicas"][0]["status"] == "COMPLETE" and q["replicas"][0]["type"] == "MEMORY", "replica")
status, _, body = get("/query_key?key=nope")
check(status == 404 and json.loads(body)["error"] == "OBJECT_NOT_FOUND", "missing key 404")
check(get("/query_key")[0] == 400, "query_key without key: 400")

# /get_all_keys pages through every key exactly once.
seen, cursor, pages = [], "0", 0
while True:
    status, _, body = get("/get_all_keys?count=1000&cursor=" + cursor)
    check(status == 200, "get_all_keys %d" % status)
    page = json.loads(body)
    seen += page["keys"]
    pages += 1
    cursor = page["cursor"]
    if page["done"]:
        break
    check(pages < 1000, "get_all_keys terminates")
check(len(seen) == r.dbsize() and len(set(seen)) == len(seen),
      "get_all_keys saw %d distinct of %d" % (len(set(seen)), r.dbsize()))
check(pages > 1, "several pages")

# Bad requests.
check(get("/get_all_keys?count=0")[0] == 400, "count=0: 400")
check(get("/get_all_keys?count=10001")[0] == 400, "count too big: 400")
check(get("/get_all_keys?cursor=-1")[0] == 400, "negative cursor: 400")
check(get("/nope")[0] == 404, "unknown path: 404")
check(get("/metrics", method="POST")[0] == 405, "POST: 405")
check(r.ping(), "RESP still serves")
print("admin_http: ok (%d scrapes checked by promtool)" % scrapes)
