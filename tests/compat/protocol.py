# SPDX-License-Identifier: Apache-2.0
# Raw-socket RESP robustness: malformed requests get Redis 7.0's exact protocol error and the
# connection is closed, while the server keeps serving new connections; inline commands, empty
# lines, quoting, fragmented and pipelined requests, large arguments and RESP3 framing work.
# Usage: protocol.py PORT [PORT_WITH_PASSWORD PASSWORD [PORT_WITH_TIMEOUT_1S]].
# Exits 0 only if every check holds.
import os
import random
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from differential import resp_command as cmd  # noqa: E402

PORT = 0
TIMEOUT = 20.0  # generous: sanitizer builds are slow


def fail(msg):
    raise AssertionError(msg)


def connect(port=None):
    s = socket.create_connection(("127.0.0.1", port or PORT), timeout=TIMEOUT)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until_close(s):
    """Reads until the peer closes; fails if it stays open for TIMEOUT seconds."""
    out = b""
    deadline = time.time() + TIMEOUT
    while True:
        s.settimeout(max(0.1, deadline - time.time()))
        try:
            d = s.recv(65536)
        except socket.timeout:
            fail(f"connection still open after {TIMEOUT}s; received {out[:200]!r}")
        except ConnectionResetError:
            return out, True
        if not d:
            return out, False
        out += d


def read_exact(s, n):
    out = b""
    while len(out) < n:
        d = s.recv(n - len(out))
        if not d:
            fail(f"connection closed after {len(out)} of {n} bytes: {out[:200]!r}")
        out += d
    return out


def read_line(s):
    out = b""
    while not out.endswith(b"\r\n"):
        d = s.recv(1)
        if not d:
            fail(f"connection closed mid-line: {out!r}")
        out += d
    return out


def read_reply(s):
    """Reads one RESP2/RESP3 reply and returns its raw bytes."""
    line = read_line(s)
    t = line[:1]
    if t in (b"+", b"-", b":", b"_", b",", b"#", b"("):
        return line
    if t in (b"$", b"=", b"!"):
        n = int(line[1:-2])
        return line if n < 0 else line + read_exact(s, n + 2)
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(line[1:-2])
        if n < 0:
            return line
        if t in (b"%", b"|"):
            n *= 2
        return line + b"".join(read_reply(s) for _ in range(n))
    fail(f"unexpected reply type: {line!r}")


def assert_no_more(s, wait=0.1):
    s.settimeout(wait)
    try:
        d = s.recv(65536)
    except socket.timeout:
        return
    finally:
        s.settimeout(TIMEOUT)
    fail(f"unexpected extra bytes or close: {d[:200]!r}")


def check_alive(port=None):
    s = connect(port)
    s.sendall(b"*1\r\n$4\r\nPING\r\n")
    got = read_reply(s)
    s.close()
    if got not in (b"+PONG\r\n", b"-NOAUTH Authentication required.\r\n"):
        fail(f"server not serving after a protocol error: PING gave {got!r}")


def expect_error_close(name, data, expected, port=None, prefix=b""):
    """Sends data; the reply must be prefix + expected error line, then the server closes."""
    s = connect(port)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may close before taking everything (big requests)
    got, reset = read_until_close(s)
    s.close()
    want = prefix + expected + b"\r\n"
    if got != want:
        fail(f"{name}: expected {want!r} then close, got {got[:300]!r}")
    check_alive(port)
    print(f"ok   {name}{' (reset)' if reset else ''}")


def expect_replies(name, data, expected, chunks=None):
    """Sends data (optionally in pieces) and compares the replies byte for byte."""
    s = connect()
    if chunks:
        for piece in chunks(data):
            s.sendall(piece)
    else:
        s.sendall(data)
    got = read_exact(s, len(expected))
    if got != expected:
        fail(f"{name}: expected {expected[:300]!r}, got {got[:300]!r}")
    assert_no_more(s)
    s.close()
    print(f"ok   {name}")


def bulk(v):
    return b"$%d\r\n%s\r\n" % (len(v), v)


def test_errors():
    pe = b"-ERR Protocol error: "
    expect_error_close("negative bulk length", b"*1\r\n$-5\r\n", pe + b"invalid bulk length")
    expect_error_close("bulk length $-1 in a request",
                       b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-1\r\n", pe + b"invalid bulk length")
    expect_error_close("empty bulk length", b"*1\r\n$\r\n", pe + b"invalid bulk length")
    expect_error_close("bulk length with sign", b"*1\r\n$+5\r\n", pe + b"invalid bulk length")
    expect_error_close("bulk length with space", b"*1\r\n$ 4\r\nPING\r\n",
                       pe + b"invalid bulk length")
    expect_error_close("bulk length over 512 MB", b"*1\r\n$536870913\r\n",
                       pe + b"invalid bulk length")
    expect_error_close("non-numeric multibulk length", b"*abc\r\n",
                       pe + b"invalid multibulk length")
    expect_error_close("empty multibulk length", b"*\r\n", pe + b"invalid multibulk length")
    expect_error_close("multibulk length with sign", b"*+1\r\n$4\r\nPING\r\n",
                       pe + b"invalid multibulk length")
    expect_error_close("multibulk length with leading zero", b"*01\r\n$4\r\nPING\r\n",
                       pe + b"invalid multibulk length")
    expect_error_close("multibulk length over INT_MAX", b"*2147483648\r\n",
                       pe + b"invalid multibulk length")
    expect_error_close("expected $", b"*1\r\nx\r\n", pe + b"expected '$', got 'x'")
    expect_error_close("nested array in request", b"*1\r\n*1\r\n", pe + b"expected '$', got '*'")
    expect_error_close("unbalanced double quotes", b'SET "a b\r\n',
                       pe + b"unbalanced quotes in request")
    expect_error_close("unbalanced single quotes", b"SET 'a b\r\n",
                       pe + b"unbalanced quotes in request")
    expect_error_close("closing quote followed by a char", b'SET k "a"b\r\n',
                       pe + b"unbalanced quotes in request")
    expect_error_close("inline request over 64 KB without newline", b"A" * 70000,
                       pe + b"too big inline request")
    expect_error_close("multibulk count line over 64 KB", b"*" + b"1" * 70000,
                       pe + b"too big mbulk count string")
    expect_error_close("bulk count line over 64 KB", b"*1\r\n$" + b"1" * 70000,
                       pe + b"too big bulk count string")
    # Replies to earlier pipelined commands are delivered before the error.
    expect_error_close("error after pipelined commands", b"PING\r\n" * 3 + b"*abc\r\n",
                       pe + b"invalid multibulk length", prefix=b"+PONG\r\n" * 3)
    expect_error_close("error after a complete SET",
                       cmd("SET", "pe:k", "v") + b"*1\r\n$-7\r\n", pe + b"invalid bulk length",
                       prefix=b"+OK\r\n")
    # Limits that are still valid: the server waits for more data instead of failing.
    for name, data in (("bulk length of exactly 512 MB", b"*1\r\n$536870912\r\n"),
                       ("multibulk length INT_MAX", b"*2147483647\r\n"),
                       ("multibulk header without the bulk line", b"*1\r\nx")):
        s = connect()
        s.sendall(data)
        assert_no_more(s, 0.5)
        s.close()
        print(f"ok   {name} waits for more")
    check_alive()


def test_auth_limits(port, password):
    pe = b"-ERR Protocol error: "
    expect_error_close("unauthenticated multibulk length", b"*11\r\n",
                       pe + b"unauthenticated multibulk length", port)
    expect_error_close("unauthenticated bulk length", b"*1\r\n$16385\r\n",
                       pe + b"unauthenticated bulk length", port)
    s = connect(port)
    s.sendall(cmd("GET", "x"))
    got = read_reply(s)
    if got != b"-NOAUTH Authentication required.\r\n":
        fail(f"GET before AUTH: {got!r}")
    s.sendall(cmd("AUTH", password) + cmd("MSET", *[f"a{i}" for i in range(20)]))
    got = read_reply(s) + read_reply(s)
    if got != b"+OK\r\n+OK\r\n":
        fail(f"AUTH then 21-argument MSET: {got!r}")
    s.close()
    print("ok   limits lifted after AUTH")


def test_inline():
    expect_replies("inline PING", b"PING\r\n", b"+PONG\r\n")
    expect_replies("inline PING with LF only", b"PING\n", b"+PONG\r\n")
    expect_replies("inline with spaces around", b"   PING   \r\n", b"+PONG\r\n")
    expect_replies("empty lines ignored", b"\r\n\r\n\n\nPING\r\n\r\nPING\r\n",
                   b"+PONG\r\n+PONG\r\n")
    expect_replies("empty multibulks ignored", b"*0\r\n*-1\r\n" + cmd("PING"), b"+PONG\r\n")
    expect_replies("inline quoted SET/GET", b'SET inl:k "a b c"\r\nGET inl:k\r\n',
                   b"+OK\r\n" + bulk(b"a b c"))
    expect_replies("inline escapes", b'SET inl:e "x\\x41\\n\\t\\"y"\r\nGET inl:e\r\n',
                   b"+OK\r\n" + bulk(b'xA\n\t"y'))
    expect_replies("inline single quotes", b"SET inl:s 'it\\'s'\r\nGET inl:s\r\n",
                   b"+OK\r\n" + bulk(b"it's"))
    expect_replies("inline empty string arg", b'SET inl:z ""\r\nSTRLEN inl:z\r\n',
                   b"+OK\r\n:0\r\n")
    expect_replies("inline mixed with multibulk",
                   b"SET inl:m 1\r\n" + cmd("INCR", "inl:m") + b"GET inl:m\r\n",
                   b"+OK\r\n:2\r\n" + bulk(b"2"))
    expect_replies("inline unknown command",
                   b"NOSUCHCMD a\r\nPING\r\n",
                   b"-ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' \r\n"
                   b"+PONG\r\n")
    expect_replies("multibulk arity error", cmd("GET") + cmd("PING"),
                   b"-ERR wrong number of arguments for 'get' command\r\n+PONG\r\n")


def test_framing():
    rnd = random.Random(7)

    def one_byte(data):
        return [data[i:i + 1] for i in range(len(data))]

    def random_pieces(data):
        out, i = [], 0
        while i < len(data):
            n = rnd.randint(1, 97)
            out.append(data[i:i + n])
            i += n
        return out

    req = cmd("SET", "fr:k", b"hello\r\nworld") + cmd("GET", "fr:k")
    expect_replies("one byte per send", req, b"+OK\r\n" + bulk(b"hello\r\nworld"),
                   chunks=one_byte)
    n = 2000
    req = b"".join(cmd("SET", f"fr:{i}", f"v{i}") for i in range(n))
    req += b"".join(cmd("GET", f"fr:{i}") for i in range(n))
    want = b"+OK\r\n" * n + b"".join(bulk(f"v{i}".encode()) for i in range(n))
    expect_replies(f"{2 * n} pipelined commands in random pieces", req, want,
                   chunks=random_pieces)
    big = bytes(rnd.getrandbits(8) for _ in range(1 << 20))
    expect_replies("1 MiB argument in random pieces",
                   cmd("SET", "fr:big", big) + cmd("GET", "fr:big") + cmd("STRLEN", "fr:big"),
                   b"+OK\r\n" + bulk(big) + b":%d\r\n" % len(big), chunks=random_pieces)
    args = []
    for i in range(5000):
        args += [f"mk{i}", f"mv{i}"]
    expect_replies("MSET with 10,001 arguments",
                   cmd("MSET", *args) + cmd("MGET", "mk0", "mk4999", "nokey"),
                   b"+OK\r\n*3\r\n" + bulk(b"mv0") + bulk(b"mv4999") + b"$-1\r\n")


def test_write_all_then_read():
    """A client that writes 100 MiB of requests before reading any of the 100 MiB of replies
    (what hiredis's blocking pipelining does) must not deadlock the connection: redis-server
    keeps reading and buffers the replies."""
    n = 1600
    v = bytes(range(256)) * 256  # 64 KiB
    one = cmd("SET", "wb:k", v) + cmd("GET", "wb:k")
    s = connect()
    s.settimeout(30)  # per send call: no progress for 30 s is a deadlock
    try:
        s.sendall(one * n)
    except socket.timeout:
        fail("write-all-then-read: the server stopped reading the 100 MiB of requests while "
             "its replies were not being read (deadlock; redis-server keeps reading)")
    want = (b"+OK\r\n" + bulk(v)) * n
    got = read_exact(s, len(want))
    if got != want:
        fail("write-all-then-read: replies differ")
    assert_no_more(s)
    s.close()
    print(f"ok   {n} x (SET+GET 64 KiB) written before reading")


def test_same_key_pipeline():
    """Replies queued on one connection keep the value they read even when later commands
    of the same pipeline overwrite, delete or flush it (same sizes, so memory gets reused)."""
    rnd = random.Random(11)
    for size in (1 << 20, 8 << 20):
        vals = [bytes([rnd.getrandbits(8)]) * 64 + rnd.randbytes(256) * (size // 256 - 1) +
                bytes(192) for _ in range(6)]
        req, want = b"", b""
        for v in vals:
            req += cmd("SET", "sk:k", v) + cmd("GET", "sk:k")
            want += b"+OK\r\n" + bulk(v)
        req += cmd("GET", "sk:k") + cmd("DEL", "sk:k") + cmd("GET", "sk:k")
        want += bulk(vals[-1]) + b":1\r\n$-1\r\n"
        req += cmd("SET", "sk:k", vals[0]) + cmd("GET", "sk:k") + cmd("FLUSHALL")
        req += cmd("SET", "sk:k", vals[1]) + cmd("GET", "sk:k")
        want += b"+OK\r\n" + bulk(vals[0]) + b"+OK\r\n+OK\r\n" + bulk(vals[1])
        req += cmd("SET", "sk:k", vals[2]) + cmd("GET", "sk:k") + cmd("APPEND", "sk:k", "xy")
        req += cmd("SETRANGE", "sk:k", 0, vals[3][:4096]) + cmd("GET", "sk:k")
        want += b"+OK\r\n" + bulk(vals[2]) + b":%d\r\n:%d\r\n" % (size + 2, size + 2)
        want += bulk(vals[3][:4096] + vals[2][4096:] + b"xy")
        s = connect()
        s.settimeout(30)  # per send call: no progress for 30 s is a deadlock
        try:
            s.sendall(req)
        except socket.timeout:
            fail(f"same-key pipeline of {size >> 20} MiB values: the server stopped reading "
                 f"the {len(req) >> 20} MiB of requests while its replies were not being read "
                 "(deadlock; redis-server keeps reading)")
        got = read_exact(s, len(want))
        if got != want:
            i = next(i for i in range(len(want)) if got[i] != want[i])
            fail(f"same-key pipeline of {size >> 20} MiB values: replies differ at byte {i} "
                 f"of {len(want)}")
        assert_no_more(s)
        s.close()
    print("ok   pipelined GET/SET/DEL/FLUSHALL/APPEND/SETRANGE of one key keep reply contents")


def test_idle_timeout(port):
    """--timeout 1: an idle client is closed, an active one is not."""
    idle = connect(port)
    busy = connect(port)
    start = time.time()
    for _ in range(10):
        busy.sendall(cmd("PING"))
        got = read_reply(busy)
        if got != b"+PONG\r\n":
            fail(f"active client under --timeout 1: PING gave {got!r}")
        time.sleep(0.3)
    busy.close()
    idle.settimeout(30)
    try:
        d = idle.recv(100)
    except socket.timeout:
        fail("idle client not closed within 30 s under --timeout 1")
    except ConnectionResetError:
        d = b""
    if d != b"":
        fail(f"idle client under --timeout 1 received {d!r} instead of a close")
    idle.close()
    check_alive(port)
    print(f"ok   --timeout 1 closed the idle client after {time.time() - start:.1f}s, "
          "kept the active one")


def test_resp3():
    s = connect()
    s.sendall(cmd("HELLO", "4"))
    got = read_reply(s)
    if got != b"-NOPROTO unsupported protocol version\r\n":
        fail(f"HELLO 4: {got!r}")
    s.sendall(cmd("HELLO", "3"))
    got = read_reply(s)
    if not got.startswith(b"%7\r\n$6\r\nserver\r\n"):
        fail(f"HELLO 3: not a 7-entry map starting with server: {got[:100]!r}")
    if b"$5\r\nproto\r\n:3\r\n" not in got:
        fail(f"HELLO 3: no proto 3: {got!r}")
    s.sendall(cmd("GET", "r3:nokey") + cmd("SET", "r3:k", "v") + cmd("GET", "r3:k") +
              cmd("MGET", "r3:k", "r3:nokey"))
    want = b"_\r\n+OK\r\n$1\r\nv\r\n*2\r\n$1\r\nv\r\n_\r\n"
    got = read_exact(s, len(want))
    if got != want:
        fail(f"RESP3 replies: expected {want!r}, got {got!r}")
    s.sendall(cmd("HELLO", "2") + cmd("GET", "r3:nokey"))
    got = read_reply(s)
    if not got.startswith(b"*14\r\n$6\r\nserver\r\n") or b"$5\r\nproto\r\n:2\r\n" not in got:
        fail(f"HELLO 2: {got[:120]!r}")
    got = read_reply(s)
    if got != b"$-1\r\n":
        fail(f"RESP2 nil after HELLO 2: {got!r}")
    s.close()
    print("ok   RESP3 HELLO and reply types")


def test_resp3_types():
    """RESP3 reply types of aggregate commands: maps, sets, doubles, nulls, nested pairs."""
    s = connect()
    s.sendall(cmd("HELLO", "3"))
    read_reply(s)
    steps = [
        (cmd("DEL", "t3:h", "t3:s", "t3:z"), None),
        (cmd("HSET", "t3:h", "f", "v"), b":1\r\n"),
        (cmd("HGETALL", "t3:h"), b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n"),
        (cmd("HGET", "t3:h", "nope"), b"_\r\n"),
        (cmd("HRANDFIELD", "t3:h", "1", "WITHVALUES"), b"*1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"),
        (cmd("SADD", "t3:s", "a"), b":1\r\n"),
        (cmd("SMEMBERS", "t3:s"), b"~1\r\n$1\r\na\r\n"),
        (cmd("SMISMEMBER", "t3:s", "a", "b"), b"*2\r\n:1\r\n:0\r\n"),
        (cmd("ZADD", "t3:z", "1.5", "m"), b":1\r\n"),
        (cmd("ZSCORE", "t3:z", "m"), b",1.5\r\n"),
        (cmd("ZSCORE", "t3:z", "nope"), b"_\r\n"),
        (cmd("ZRANGE", "t3:z", "0", "-1", "WITHSCORES"), b"*1\r\n*2\r\n$1\r\nm\r\n,1.5\r\n"),
        (cmd("ZADD", "t3:z", "2", "n"), b":1\r\n"),
        (cmd("ZINCRBY", "t3:z", "1", "m"), b",2.5\r\n"),
        (cmd("ZPOPMIN", "t3:z"), b"*2\r\n$1\r\nn\r\n,2\r\n"),
        (cmd("ZMSCORE", "t3:z", "m", "x"), b"*2\r\n,2.5\r\n_\r\n"),
        (cmd("CONFIG", "GET", "maxmemory"),
         b"%1\r\n$9\r\nmaxmemory\r\n$9\r\n268435456\r\n"),
    ]
    for req, want in steps:
        s.sendall(req)
        got = read_reply(s)
        if want is not None and got != want:
            fail(f"RESP3 {req.split(b'$')[1:3]!r}: expected {want!r}, got {got!r}")
    s.close()
    print("ok   RESP3 maps, sets, doubles and nulls of aggregate commands")


def test_quit_and_half_close():
    s = connect()
    s.sendall(cmd("SET", "q:k", "v") + cmd("QUIT") + cmd("SET", "q:k", "after-quit"))
    got, _ = read_until_close(s)
    if got != b"+OK\r\n+OK\r\n":
        fail(f"QUIT: expected +OK +OK then close, got {got!r}")
    s.close()
    # A client that shuts down its write side still receives its replies; repeated, because
    # the request and the end of input may reach the server in one batch (io_uring).
    for _ in range(200):
        s = connect()
        s.sendall(cmd("GET", "q:k"))
        s.shutdown(socket.SHUT_WR)
        got = read_reply(s)
        if got != bulk(b"v"):
            fail(f"GET then SHUT_WR: {got!r} (command after QUIT must not run)")
        s.close()
    # Abrupt disconnects mid-request leave the server healthy.
    for _ in range(50):
        s = connect()
        s.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\nq:ab\r\n$100\r\npartial")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()  # RST
    check_alive()
    s = connect()
    s.sendall(cmd("EXISTS", "q:ab"))
    if read_reply(s) != b":0\r\n":
        fail("a partial SET from a reset connection was executed")
    s.close()
    print("ok   QUIT, half-close, reset mid-request")


def main():
    global PORT
    PORT = int(sys.argv[1])
    tests = [test_errors, test_inline, test_framing, test_write_all_then_read,
             test_same_key_pipeline, test_resp3, test_resp3_types, test_quit_and_half_close]
    if len(sys.argv) > 3:
        tests.append(lambda: test_auth_limits(int(sys.argv[2]), sys.argv[3]))
    if len(sys.argv) > 4:
        tests.append(lambda: test_idle_timeout(int(sys.argv[4])))
    failed = 0
    for t in tests:  # a failing group is reported and the others still run
        try:
            t()
        except (AssertionError, OSError) as e:
            failed += 1
            print(f"FAIL {getattr(t, '__name__', 'test')}: {type(e).__name__}: {e}")
    check_alive()
    if failed:
        print(f"protocol: {failed} check group(s) failed")
        sys.exit(1)
    print("protocol: all checks passed")


if __name__ == "__main__":
    main()
