# SPDX-License-Identifier: Apache-2.0
# redis-py (Debian python3-redis) against the server: strings, MSET/MGET, counters, TTLs,
# SCAN iteration, MULTI/EXEC and plain pipelines, binary-safe values, WATCH with a retry loop
# (also under contention from threads), INFO/CONFIG/CLIENT and other server commands, a
# shared connection pool and the Unix socket. Usage: redis_py.py PORT [SOCKET].
# Exits 0 only when every assertion holds.
import sys
import threading
import time

import redis


def check(what, expected, got):
    if expected != got:
        raise AssertionError(f"{what}: expected {expected!r}, got {got!r}")


def test_strings(r):
    check("set", True, r.set("s:a", "1"))
    check("get", b"1", r.get("s:a"))
    check("get missing", None, r.get("s:missing"))
    check("set nx existing", None, r.set("s:a", "2", nx=True))
    check("set xx existing", True, r.set("s:a", "2", xx=True))
    check("set xx missing", None, r.set("s:new", "2", xx=True))
    check("set get", b"2", r.set("s:a", "3", get=True))
    check("mset", True, r.mset({"s:m1": "x", "s:m2": b"y", "s:m3": 3}))
    check("mget", [b"x", b"y", None, b"3"], r.mget(["s:m1", "s:m2", "s:nope", "s:m3"]))
    check("incr", 1, r.incr("s:ctr"))
    check("incrby", 11, r.incr("s:ctr", 10))
    check("decr", 10, r.decr("s:ctr"))
    check("get ctr", b"10", r.get("s:ctr"))
    try:
        r.incr("s:m1")
        raise AssertionError("incr on non-integer did not raise")
    except redis.exceptions.ResponseError as e:
        check("incr error", "value is not an integer or out of range", str(e))
    check("append", 4, r.append("s:m1", "abc"))
    check("strlen", 4, r.strlen("s:m1"))
    check("exists", 2, r.exists("s:m1", "s:m2", "s:nope"))
    check("delete", 2, r.delete("s:m1", "s:m2", "s:nope"))
    check("exists after delete", 0, r.exists("s:m1"))


def test_ttl(r):
    r.set("t:a", "v")
    check("ttl none", -1, r.ttl("t:a"))
    check("ttl missing", -2, r.ttl("t:missing"))
    check("expire", True, r.expire("t:a", 100))
    ttl = r.ttl("t:a")
    if ttl not in (99, 100):
        raise AssertionError(f"ttl after expire 100: {ttl}")
    pttl = r.pttl("t:a")
    if not 98000 < pttl <= 100000:
        raise AssertionError(f"pttl after expire 100: {pttl}")
    check("persist", True, r.persist("t:a"))
    check("ttl after persist", -1, r.ttl("t:a"))
    check("set px", True, r.set("t:short", "v", px=300))
    check("get before expiry", b"v", r.get("t:short"))
    deadline = time.time() + 10
    while r.get("t:short") is not None and time.time() < deadline:
        time.sleep(0.05)
    check("get after expiry", None, r.get("t:short"))
    check("exists after expiry", 0, r.exists("t:short"))


def test_scan(r):
    r.flushall()
    expected = {f"scan:{i}".encode() for i in range(1000)}
    r.mset({k: b"v" for k in expected})
    r.set("other:1", "v")
    got = set(r.scan_iter(match="scan:*", count=100))
    check("scan_iter match", expected, got)
    check("scan_iter all", len(expected) + 1, len(set(r.scan_iter(count=50))))
    check("dbsize", 1001, r.dbsize())
    check("keys pattern", {b"other:1"}, set(r.keys("other:*")))


def test_pipelines(r):
    r.delete("p:ctr")
    p = r.pipeline()  # MULTI ... EXEC
    p.set("p:a", "1").incr("p:ctr").incr("p:ctr").get("p:a").get("p:nope")
    check("transaction pipeline", [True, 1, 2, b"1", None], p.execute())
    p = r.pipeline(transaction=False)
    for i in range(2000):
        p.set(f"p:k{i}", f"v{i}")
    check("plain pipeline sets", [True] * 2000, p.execute())
    p = r.pipeline(transaction=False)
    for i in range(2000):
        p.get(f"p:k{i}")
    check("plain pipeline gets", [f"v{i}".encode() for i in range(2000)], p.execute())
    # An error inside MULTI/EXEC is returned in place, the other commands still run.
    p = r.pipeline()
    p.set("p:s", "x").incr("p:s").get("p:s")
    res = p.execute(raise_on_error=False)
    check("exec with error: set", True, res[0])
    if not isinstance(res[1], redis.exceptions.ResponseError):
        raise AssertionError(f"exec with error: incr gave {res[1]!r}")
    check("exec with error: get", b"x", res[2])


def test_binary(r):
    values = {
        "b:nul": b"a\x00b\x00\x00c",
        "b:crlf": b"line1\r\nline2\r\n\r\n",
        "b:all": bytes(range(256)) * 4,
        "b:resp": b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\ny\r\n",
        "b:empty": b"",
        "b:big": bytes((i * 7 + i // 251) & 0xFF for i in range(1 << 20)),
    }
    for k, v in values.items():
        check(f"set {k}", True, r.set(k, v))
    for k, v in values.items():
        check(f"get {k}", v, r.get(k))
        check(f"strlen {k}", len(v), r.strlen(k))
    key = b"bin\x00key\r\n\xff"
    check("binary key set", True, r.set(key, b"\x00"))
    check("binary key get", b"\x00", r.get(key))
    check("binary key mget", [b"\x00", values["b:crlf"]], r.mget([key, "b:crlf"]))


def test_watch(r, port, sock):
    r.set("w:ctr", 0)
    other = redis.Redis(host="127.0.0.1", port=port)
    # A write by another client between WATCH and EXEC aborts the transaction.
    with r.pipeline() as p:
        p.watch("w:ctr")
        cur = int(p.get("w:ctr"))
        other.set("w:ctr", 100)
        p.multi()
        p.set("w:ctr", cur + 1)
        try:
            p.execute()
            raise AssertionError("EXEC succeeded although the watched key changed")
        except redis.exceptions.WatchError:
            pass
    check("watched key keeps other's write", b"100", r.get("w:ctr"))

    # Retry loop: the first attempt is disturbed, the second succeeds.
    attempts = 0
    with r.pipeline() as p:
        while True:
            try:
                attempts += 1
                p.watch("w:ctr")
                cur = int(p.get("w:ctr"))
                if attempts == 1:
                    other.incr("w:ctr")
                p.multi()
                p.set("w:ctr", cur * 2)
                p.execute()
                break
            except redis.exceptions.WatchError:
                continue
    check("watch retry attempts", 2, attempts)
    check("watch retry result", b"202", r.get("w:ctr"))

    # UNWATCH (pipeline reset) then EXEC succeeds.
    with r.pipeline() as p:
        p.watch("w:ctr")
        other.incr("w:ctr")
        p.unwatch()
        p.multi()
        p.incr("w:ctr")
        check("exec after unwatch", [204], p.execute())

    # Optimistic increments from 4 threads (own connections, one of them on the Unix socket).
    r.set("w:race", 0)
    per_thread = 50
    errors = []

    def worker(idx):
        try:
            if idx == 0 and sock:
                c = redis.Redis(unix_socket_path=sock)
            else:
                c = redis.Redis(host="127.0.0.1", port=port)

            def incr(pipe):
                v = int(pipe.get("w:race"))
                pipe.multi()
                pipe.set("w:race", v + 1)

            for _ in range(per_thread):
                c.transaction(incr, "w:race")
        except Exception as e:  # reported by the main thread
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    check("watch race errors", [], errors)
    check("watch race total", str(4 * per_thread).encode(), r.get("w:race"))


def test_server_commands(r, port):
    r.set("sv:a", "hello")
    info = r.info()
    for field in ("redis_version", "connected_clients", "used_memory", "uptime_in_seconds"):
        if field not in info:
            raise AssertionError(f"INFO has no {field}")
    if not isinstance(info["connected_clients"], int) or info["connected_clients"] < 1:
        raise AssertionError(f"INFO connected_clients: {info['connected_clients']!r}")
    if "db0" not in info or info["db0"].get("keys", 0) < 1:
        raise AssertionError(f"INFO keyspace db0: {info.get('db0')!r}")
    stats = r.info("stats")
    for field in ("evicted_keys", "expired_keys", "total_commands_processed", "keyspace_hits"):
        if not isinstance(stats.get(field), int):
            raise AssertionError(f"INFO stats {field}: {stats.get(field)!r}")
    check("CONFIG GET maxmemory", {"maxmemory": str(256 << 20)}, r.config_get("maxmemory"))
    check("client_setname", True, r.client_setname("py-test"))
    check("client_getname", "py-test", r.client_getname())
    me = [c for c in r.client_list() if c.get("name") == "py-test"]
    check("client_list has py-test", 1, len(me))
    check("client_id", int(me[0]["id"]), r.client_id())
    check("type string", b"string", r.type("sv:a"))
    check("type none", b"none", r.type("sv:nokey"))
    check("rename", True, r.rename("sv:a", "sv:b"))
    r.set("sv:other", "1")
    check("renamenx existing", False, r.renamenx("sv:b", "sv:other"))
    check("getex", b"hello", r.getex("sv:b", ex=50))
    if r.ttl("sv:b") not in (49, 50):
        raise AssertionError(f"ttl after getex ex=50: {r.ttl('sv:b')}")
    check("getdel", b"hello", r.getdel("sv:b"))
    check("getdel gone", None, r.get("sv:b"))
    secs, usecs = r.time()
    if abs(secs - time.time()) > 5 or not 0 <= usecs < 1000000:
        raise AssertionError(f"TIME: {secs} {usecs}")
    r.set("sv:m", b"x" * 1000)
    usage = r.memory_usage("sv:m")
    if not isinstance(usage, int) or usage < 1000:
        raise AssertionError(f"MEMORY USAGE of a 1000-byte value: {usage!r}")
    if r.randomkey() is None:
        raise AssertionError("RANDOMKEY returned nil with keys present")
    check("echo", b"hi", r.echo("hi"))
    # health_check_interval makes redis-py PING before reusing an idle connection.
    h = redis.Redis(host="127.0.0.1", port=port, health_check_interval=1)
    check("health-checked set", True, h.set("sv:h", "1"))
    time.sleep(1.2)
    check("health-checked get", b"1", h.get("sv:h"))

    # A shared connection pool used by 8 threads.
    pool = redis.ConnectionPool(host="127.0.0.1", port=port, max_connections=8)
    errors = []

    def work(t):
        try:
            c = redis.Redis(connection_pool=pool)
            for i in range(200):
                c.set(f"pool:{t}:{i}", i)
                if c.get(f"pool:{t}:{i}") != str(i).encode():
                    errors.append(f"thread {t} key {i}")
                    return
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    check("pool errors", [], errors)
    check("pool keys", 1600, len(list(r.scan_iter(match="pool:*", count=500))))


def test_unix_socket(sock):
    if not sock:
        return
    u = redis.Redis(unix_socket_path=sock, decode_responses=True)
    check("unix ping", True, u.ping())
    check("unix set", True, u.set("u:a", "über"))
    check("unix get decoded", "über", u.get("u:a"))


def main():
    port = int(sys.argv[1])
    sock = sys.argv[2] if len(sys.argv) > 2 else None
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=60)
    check("ping", True, r.ping())
    r.flushall()
    for name, fn in (
        ("strings", lambda: test_strings(r)),
        ("ttl", lambda: test_ttl(r)),
        ("scan", lambda: test_scan(r)),
        ("pipelines", lambda: test_pipelines(r)),
        ("binary", lambda: test_binary(r)),
        ("watch", lambda: test_watch(r, port, sock)),
        ("server commands", lambda: test_server_commands(r, port)),
        ("unix socket", lambda: test_unix_socket(sock)),
    ):
        start = time.time()
        fn()
        print(f"ok   {name} ({time.time() - start:.2f}s)")
    print(f"redis_py: all checks passed (redis-py {redis.__version__})")


if __name__ == "__main__":
    main()
