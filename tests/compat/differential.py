# SPDX-License-Identifier: Apache-2.0
# Differential test: the same pseudo-random sequence of string, bitmap, LCS, key-space, list,
# hash, set and sorted-set commands (valid and invalid arguments, wrong types, MULTI/EXEC/DISCARD
# blocks) goes to the server under test and to a reference redis-server 7.0; every reply must
# be byte-identical, except that replies whose order Redis leaves unspecified (SMEMBERS, HGETALL,
# KEYS, ...) are compared sorted and TTL-like replies may differ by the time between the two
# servers' clock readings. With PROTO 3 both connections speak RESP3 (HELLO 3), so its types are
# compared too. Lex-range commands use keys whose members all have score 0 (Redis leaves other
# cases unspecified).
# Usage: differential.py PORT REF_PORT [COUNT [SEED [PROTO]]].
import os
import random
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
# RESP request encoding (tests/lib/resp_util.py); protocol.py and pubsub.py import it from here too.
from resp_util import resp_command  # noqa: E402,F401

TIMEOUT = 60


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("server closed the connection")
            self.buf += d
        i = self.buf.index(b"\r\n")
        line, self.buf = self.buf[:i], self.buf[i + 2:]
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise ConnectionError("server closed the connection")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def reply(self):
        """Returns (raw bytes, parsed) of one RESP2/RESP3 reply; parsed arrays, sets and maps
        (flattened) are lists."""
        line = self._line()
        t = line[:1]
        if t in (b"+", b"-", b":", b",", b"#", b"("):
            return line + b"\r\n", line
        if t == b"_":
            return line + b"\r\n", None
        if t in (b"$", b"="):
            n = int(line[1:])
            if n < 0:
                return line + b"\r\n", None
            data = self._exact(n + 2)
            return line + b"\r\n" + data, data[:-2]
        if t in (b"*", b"~", b"%", b">"):
            n = int(line[1:])
            if n < 0:
                return line + b"\r\n", None
            raw, items = line + b"\r\n", []
            for _ in range(2 * n if t == b"%" else n):
                r, p = self.reply()
                raw += r
                items.append(p)
            return raw, items
        raise ValueError(f"bad reply line {line!r}")

    def call(self, args):
        self.s.sendall(resp_command(*args))
        return self.reply()


def b(x):
    return x if isinstance(x, bytes) else str(x).encode()


class Gen:
    def __init__(self, rnd):
        self.r = rnd

    def pick(self, *xs):
        return self.r.choice(xs)

    def key(self, kind=None):
        kind = kind or self.pick("s", "l", "h", "t", "z")
        return f"{kind}{self.r.randrange(4)}"

    def val(self):
        return self.pick("a", "b", "c", "d", "e", "f", "", "0", "1", "-1", "10", "1.5", "-2.5",
                         "abc", "x y", "9223372036854775807", "-9223372036854775808",
                         "3.0e2", "inf", "nan", "00", " 1", str(self.r.randrange(-50, 50)),
                         "v" * self.r.randrange(1, 60))

    def int_(self):
        return self.pick("0", "1", "2", "3", "-1", "-2", "-100", "100", "5", "7",
                         "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                         "abc", "1.5", "")

    def idx(self):
        return self.pick("0", "1", "2", "-1", "-2", "3", "10", "-10", "100", "-100", "x")

    def score(self):
        return self.pick("0", "1", "2", "1.5", "-1", "3", "10", "-inf", "+inf", "inf", "1e3",
                         "0.1", "0.30000000000000004", "1e-5", "nan", "abc", "(1", "(2", "[a")

    def lex(self):
        return self.pick("-", "+", "[a", "[c", "(b", "(e", "[", "a", "[f")

    def members(self, lo=1, hi=3):
        return [self.pick("a", "b", "c", "d", "e", "f") for _ in range(self.r.randint(lo, hi))]

    def bkey(self):
        """Mostly string keys (bitmaps), now and then another kind (WRONGTYPE)."""
        return self.key(self.pick("s", "s", "s", "s", "s", "l", "h"))

    def bitoff(self):
        return self.pick("0", "1", "5", "7", "8", "15", "31", "63", "100", "1000", "-1", "x",
                         "4294967296", "#1", str(self.r.randrange(0, 200)))

    def unit(self):
        return self.pick("BIT", "BYTE", "bit", "x")

    def bftype(self):
        return self.pick("u1", "u4", "u8", "i8", "i5", "u16", "i16", "i32", "u63", "i64", "u64",
                         "i0", "x8", "i")

    def bitfield_ops(self, ro=False):
        ops = []
        for _ in range(self.r.randint(0, 4)):
            kind = self.pick("GET", "GET", "SET", "INCRBY", "OVERFLOW", "BAD") if not ro else \
                self.pick("GET", "GET", "GET", "SET")
            off = self.pick("0", "1", "3", "8", "13", "#1", "#2", "100", "-1", "x")
            if kind == "GET":
                ops += ["GET", self.bftype(), off]
            elif kind in ("SET", "INCRBY"):
                ops += [kind, self.bftype(), off,
                        self.pick("0", "1", "-1", "100", "127", "128", "-129", "255", "256",
                                  "9223372036854775807", "-9223372036854775808", "x")]
            elif kind == "OVERFLOW":
                ops += ["OVERFLOW", self.pick("WRAP", "SAT", "FAIL", "fail", "bad")]
            else:
                ops += [self.pick("FOO", "GET")]
        return ops

    def command(self):
        """Returns (args, mode): mode 'exact', 'sorted' (unordered array) or 'pairs'."""
        r, k, v = self.r, self.key, self.val
        choices = [
            # strings and key space
            lambda: ["SET", k(), v()] + self.pick([], ["NX"], ["XX"], ["GET"], ["EX", "1000"],
                                                   ["PX", "900000"], ["KEEPTTL"], ["EX", "0"],
                                                   ["EX", "-5"], ["NX", "XX"], ["EX"]),
            lambda: ["GET", k()],
            lambda: ["GETSET", k(), v()],
            lambda: ["GETDEL", k()],
            lambda: ["GETEX", k()] + self.pick([], ["EX", "2000"], ["PERSIST"], ["PX", "0"]),
            lambda: ["APPEND", k(), v()],
            lambda: ["STRLEN", k()],
            lambda: ["SETRANGE", k(), self.pick("0", "1", "5", "-1", "x", "20"), v()],
            lambda: ["GETRANGE", k(), self.idx(), self.idx()],
            lambda: ["INCR", k()],
            lambda: ["DECR", k()],
            lambda: ["INCRBY", k(), self.int_()],
            lambda: ["DECRBY", k(), self.int_()],
            lambda: ["INCRBYFLOAT", k(), self.pick("1", "0.1", "-1.5", "1e3", "abc", "inf",
                                                   "5.0e3", "-0")],
            lambda: ["SETNX", k(), v()],
            lambda: ["MSET", k(), v(), k(), v()],
            lambda: ["MSETNX", k(), v(), k(), v()],
            lambda: ["MGET", k(), k(), k()],
            lambda: ["EXISTS", k(), k()],
            lambda: ["DEL", k()],
            lambda: ["UNLINK", k(), k()],
            lambda: ["TYPE", k()],
            lambda: ["RENAME", k(), k()],
            lambda: ["RENAMENX", k(), k()],
            lambda: ["COPY", k(), k()] + self.pick([], ["REPLACE"]),
            lambda: ["PERSIST", k()],
            lambda: ["EXPIRE", k(), self.pick("1000", "2000", "abc", "1000000")] +
                    self.pick([], ["NX"], ["XX"], ["GT"], ["LT"], ["NX", "XX"]),
            lambda: ["PEXPIRE", k(), self.pick("1500000", "-1", "x")],
            lambda: ["TTL", k()],
            lambda: ["EXPIRETIME", k()],
            lambda: ["DBSIZE"],
            lambda: ["KEYS", self.pick("*", "s*", "?1", "[lh]*", "z[0-1]")],
            lambda: ["TOUCH", k(), k()],
            # lists
            lambda: [self.pick("LPUSH", "RPUSH"), k("l")] + self.members(),
            lambda: [self.pick("LPUSHX", "RPUSHX"), k()] + self.members(1, 2),
            lambda: [self.pick("LPOP", "RPOP"), k("l")] + self.pick([], ["2"], ["0"], ["-1"]),
            lambda: ["LLEN", k()],
            lambda: ["LRANGE", k("l"), self.idx(), self.idx()],
            lambda: ["LINDEX", k("l"), self.idx()],
            lambda: ["LSET", k("l"), self.idx(), v()],
            lambda: ["LREM", k("l"), self.pick("0", "1", "-1", "2"), self.pick("a", "b", "c")],
            lambda: ["LTRIM", k("l"), self.idx(), self.idx()],
            lambda: ["LINSERT", k("l"), self.pick("BEFORE", "AFTER", "x"), self.pick("a", "b"),
                     v()],
            lambda: ["LPOS", k("l"), self.pick("a", "b", "c")] +
                    self.pick([], ["RANK", "-1"], ["COUNT", "0"], ["RANK", "2", "COUNT", "2"],
                              ["MAXLEN", "2"], ["RANK", "0"]),
            lambda: ["LMOVE", k("l"), k("l"), self.pick("LEFT", "RIGHT"),
                     self.pick("LEFT", "RIGHT")],
            lambda: ["RPOPLPUSH", k("l"), k("l")],
            # hashes
            lambda: ["HSET", k("h"), self.pick("f1", "f2", "f3"), v()] +
                    self.pick([], ["f4", "x"]),
            lambda: ["HSETNX", k("h"), self.pick("f1", "f5"), v()],
            lambda: ["HGET", k("h"), self.pick("f1", "f2", "f9")],
            lambda: ["HMGET", k("h"), "f1", "f2", "f9"],
            lambda: ["HDEL", k("h"), self.pick("f1", "f2"), "f3"],
            lambda: ["HLEN", k()],
            lambda: ["HEXISTS", k("h"), self.pick("f1", "f4")],
            lambda: ["HINCRBY", k("h"), self.pick("f1", "n"), self.int_()],
            lambda: ["HINCRBYFLOAT", k("h"), self.pick("f2", "n"), self.pick("1.5", "x", "1e2")],
            lambda: ["HSTRLEN", k("h"), self.pick("f1", "f9")],
            # sets
            lambda: ["SADD", k("t")] + self.members(),
            lambda: ["SREM", k("t")] + self.members(1, 2),
            lambda: ["SCARD", k()],
            lambda: ["SISMEMBER", k("t"), self.pick("a", "b", "z")],
            lambda: ["SMISMEMBER", k("t"), "a", "b", "z"],
            lambda: [self.pick("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"), k("t"), k("t"),
                     k("t")],
            lambda: ["SINTERCARD", "2", k("t"), k("t")] + self.pick([], ["LIMIT", "1"]),
            lambda: ["SMOVE", k("t"), k("t"), self.pick("a", "b")],
            # sorted sets
            lambda: ["ZADD", k("z")] + self.pick([], ["NX"], ["XX"], ["GT"], ["LT"], ["CH"],
                                                 ["XX", "CH"], ["NX", "GT"]) +
                    [self.score(), self.pick("a", "b", "c", "d")] +
                    self.pick([], [self.score(), "e"]),
            lambda: ["ZADD", k("z"), "INCR", self.score(), self.pick("a", "b")],
            lambda: ["ZREM", k("z"), self.pick("a", "b"), "q"],
            lambda: ["ZCARD", k()],
            lambda: ["ZSCORE", k("z"), self.pick("a", "b", "q")],
            lambda: ["ZMSCORE", k("z"), "a", "q", "c"],
            lambda: ["ZINCRBY", k("z"), self.score(), self.pick("a", "b")],
            lambda: [self.pick("ZRANK", "ZREVRANK"), k("z"), self.pick("a", "b", "q")],
            lambda: ["ZRANGE", k("z"), self.idx(), self.idx()] + self.pick([], ["WITHSCORES"],
                                                                         ["REV"]),
            lambda: ["ZRANGE", k("z"), self.score(), self.score(), "BYSCORE"] +
                    self.pick([], ["WITHSCORES"], ["LIMIT", "0", "2"], ["REV"]),
            lambda: ["ZRANGEBYSCORE", k("z"), self.score(), self.score()] +
                    self.pick([], ["WITHSCORES"], ["LIMIT", "1", "1"]),
            lambda: ["ZREVRANGEBYSCORE", k("z"), self.score(), self.score()],
            lambda: ["ZCOUNT", k("z"), self.score(), self.score()],
            lambda: ["ZLEXCOUNT", k("y"), self.lex(), self.lex()],
            lambda: ["ZRANGEBYLEX", k("y"), self.lex(), self.lex()],
            lambda: [self.pick("ZPOPMIN", "ZPOPMAX"), k("z")] + self.pick([], ["2"], ["0"],
                                                                          ["-1"]),
            lambda: ["ZREMRANGEBYRANK", k("z"), self.idx(), self.idx()],
            lambda: ["ZREMRANGEBYSCORE", k("z"), self.score(), self.score()],
            lambda: ["ZREMRANGEBYLEX", k("y"), self.lex(), self.lex()],
            lambda: [self.pick("ZUNIONSTORE", "ZINTERSTORE"), k("z"), "2", k("z"), k("z")] +
                    self.pick([], ["WEIGHTS", "2", "0.5"], ["AGGREGATE", "MAX"],
                              ["AGGREGATE", "MIN"], ["WEIGHTS", "1"]),
            # more strings, expiry and multi-key forms
            lambda: ["SET", k(), v()] + self.pick(["EXAT", "4102444800"], ["EXAT", "0"],
                                                  ["PXAT", "4102444800000"], ["PXAT", "x"]),
            lambda: ["SETEX", k(), self.pick("100", "0", "-1", "x"), v()],
            lambda: ["PSETEX", k(), self.pick("100000", "0", "x"), v()],
            lambda: ["EXPIREAT", k(), self.pick("4102444800", "x", "1")] +
                    self.pick([], ["GT"], ["LT"], ["XX"]),
            lambda: ["PEXPIRETIME", k()],
            lambda: ["HMSET", k("h"), "f1", v(), "f2", v()],
            lambda: ["LMPOP", self.pick("1", "2", "0", "x"), k("l"), k("l"),
                     self.pick("LEFT", "RIGHT", "UP")] + self.pick([], ["COUNT", "2"],
                                                                   ["COUNT", "0"]),
            lambda: ["ZMPOP", self.pick("1", "2"), k("z"), k("z"), self.pick("MIN", "MAX")] +
                    self.pick([], ["COUNT", "2"]),
            lambda: ["ZRANGESTORE", k("z"), k("z"), self.idx(), self.idx()],
            lambda: ["ZRANGE", k("y"), self.lex(), self.lex(), "BYLEX"] +
                    self.pick([], ["LIMIT", "0", "1"], ["REV"]),
            lambda: ["ZREVRANGEBYLEX", k("y"), self.lex(), self.lex()],
            lambda: ["ZREVRANGE", k("z"), self.idx(), self.idx()] + self.pick([], ["WITHSCORES"]),
            lambda: [self.pick("ZUNION", "ZINTER", "ZDIFF"), "2", k("z"), k("z")] +
                    self.pick([], ["WITHSCORES"]),
            lambda: [self.pick("ZDIFFSTORE"), k("z"), "2", k("z"), k("z")],
            lambda: ["ZINTERCARD", "2", k("z"), k("z")] + self.pick([], ["LIMIT", "1"]),
            lambda: ["SRANDMEMBER", k("t"), "0"],
            lambda: ["SPOP", k("t"), "0"],
            # sorted sets whose members all have score 0 (lex ranges are defined only then)
            lambda: ["ZADD", k("y"), "0", self.pick("a", "b", "c", "d", "e", "f")],
            # bitmaps and LCS (string keys; other kinds give WRONGTYPE)
            lambda: ["SETBIT", self.bkey(), self.bitoff(),
                     self.pick("0", "1", "1", "2", "-1", "x")],
            lambda: ["GETBIT", self.bkey(), self.bitoff()],
            lambda: ["BITCOUNT", self.bkey()] + self.pick([], [self.idx(), self.idx()],
                                                          [self.idx(), self.idx(), self.unit()],
                                                          [self.idx()]),
            lambda: ["BITPOS", self.bkey(), self.pick("0", "1", "1", "2", "x")] +
                    self.pick([], [self.idx()], [self.idx(), self.idx()],
                              [self.idx(), self.idx(), self.unit()]),
            lambda: ["BITOP", self.pick("AND", "OR", "XOR", "NOT", "and", "nand"), self.bkey()] +
                    [self.bkey() for _ in range(self.r.randint(1, 3))],
            lambda: ["BITFIELD", self.bkey()] + self.bitfield_ops(),
            lambda: ["BITFIELD_RO", self.bkey()] + self.bitfield_ops(ro=True),
            lambda: ["LCS", self.bkey(), self.bkey()] + self.pick(
                [], ["LEN"], ["IDX"], ["IDX", "WITHMATCHLEN"], ["IDX", "MINMATCHLEN", "2"],
                ["IDX", "MINMATCHLEN", "x", "WITHMATCHLEN"], ["LEN", "IDX"], ["FOO"],
                ["MINMATCHLEN"]),
            # unordered replies
            lambda: ("sorted", ["SMEMBERS", k("t")]),
            lambda: ("sorted", [self.pick("SINTER", "SUNION", "SDIFF"), k("t"), k("t")]),
            lambda: ("sorted", [self.pick("HKEYS", "HVALS"), k("h")]),
            lambda: ("pairs", ["HGETALL", k("h")]),
        ]
        got = r.choice(choices)()
        if isinstance(got, tuple):
            mode, args = got
        else:
            mode, args = "exact", got
        # Now and then a wrong argument count: arity and syntax errors must match too.
        random_without_count = args[0] in ("SPOP", "SRANDMEMBER")  # random once cut short
        if r.random() < 0.04 and len(args) > 1 and not random_without_count:
            args = args[:r.randrange(1, len(args))]
        elif r.random() < 0.02:
            args = args + [self.pick("x", "1", "WITHSCORES", "COUNT")]
        if args and args[0] == "KEYS":
            mode = "sorted"
        return [b(a) for a in args], mode


def canon(parsed, mode):
    if mode == "sorted" and isinstance(parsed, list):
        return sorted(parsed, key=repr)
    if mode == "pairs" and isinstance(parsed, list):
        return sorted(zip(parsed[0::2], parsed[1::2]), key=repr)
    return parsed


def ttl_close(args, a, b_):
    """TTL-like replies may differ by the time between the two servers' clocks readings."""
    slack = {b"TTL": 1, b"EXPIRETIME": 1, b"PTTL": 1000, b"PEXPIRETIME": 1000}.get(args[0])
    if slack is None or not a.startswith(b":") or not b_.startswith(b":"):
        return False
    try:
        return abs(int(a[1:]) - int(b_[1:])) <= slack
    except ValueError:
        return False


def main():
    port, ref_port = int(sys.argv[1]), int(sys.argv[2])
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    resp3 = len(sys.argv) > 5 and sys.argv[5] == "3"
    test, ref = Conn(port), Conn(ref_port)
    for c in (test, ref):
        if resp3:
            c.call([b"HELLO", b"3"])
        c.call([b"FLUSHALL"])
    gen = Gen(random.Random(seed))
    mismatches, by_cmd, history = 0, {}, []
    rnd = random.Random(seed * 7919)
    in_multi = 0
    for i in range(count):
        # Transactions: MULTI, a few queued commands (or a bad one), then EXEC or DISCARD.
        if in_multi == 0 and rnd.random() < 0.03:
            args, mode, in_multi = [b"MULTI"], "exact", rnd.randint(2, 4)
        elif in_multi == 1:
            args, mode, in_multi = [rnd.choice([b"EXEC", b"EXEC", b"DISCARD"])], "exact", 0
        else:
            args, mode = gen.command()
            if in_multi > 1:
                in_multi -= 1
                # Unordered replies inside EXEC cannot be canonicalised, and clock-dependent
                # ones (TTL, PEXPIRETIME, ...) would need the slack ttl_close gives them alone.
                if mode != "exact" or args[0] in (b"TTL", b"PTTL", b"EXPIRETIME", b"PEXPIRETIME"):
                    args, mode = [b"GET", args[1] if len(args) > 1 else b"s0"], "exact"
            elif rnd.random() < 0.002:
                args = [rnd.choice([b"EXEC", b"DISCARD", b"WATCH", b"UNWATCH"])]
        raw_t, parsed_t = test.call(args)
        raw_r, parsed_r = ref.call(args)
        history = (history + [(args, raw_r)])[-200:]
        if raw_t == raw_r:
            continue
        if mode != "exact" and canon(parsed_t, mode) == canon(parsed_r, mode):
            continue
        if ttl_close(args, raw_t.strip(), raw_r.strip()):
            continue
        mismatches += 1
        by_cmd[args[0].decode()] = by_cmd.get(args[0].decode(), 0) + 1
        if mismatches <= 40:
            keys = set(args[1:])
            print(f"MISMATCH #{mismatches} at command {i}: {b' '.join(args)!r}")
            # Earlier commands on the same keys since the last resynchronisation, for context.
            for h_args, h_raw in [h for h in history[:-1] if keys & set(h[0][1:])][-6:]:
                print(f"      after {b' '.join(h_args)!r} -> {h_raw[:60]!r}")
            print(f"    redis-server: {raw_r[:300]!r}\n    under test:   {raw_t[:300]!r}")
        # Resynchronise the data set so one difference does not cascade.
        for c in (test, ref):
            if in_multi:
                c.call([b"DISCARD"])
            c.call([b"FLUSHALL"])
        in_multi = 0
        history = []
    summary = ", ".join(f"{k} {v}" for k, v in sorted(by_cmd.items(), key=lambda x: -x[1]))
    print(f"differential: {count} commands (seed {seed}, RESP{3 if resp3 else 2}), "
          f"{mismatches} mismatches"
          f"{': ' + summary if summary else ''}")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
