#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stock redis-cli against the server: one-shot commands, --pipe mass insertion of 100,000 SETs,
# RESP3 (-3, HELLO 3 map shape), commands fed on stdin, an interactive session on a
# pseudo-terminal, key-space tools (--scan, --bigkeys, --stat ...), -x, the Unix socket and AUTH.
# Every output is compared with what redis-server 7.0 prints.
set -u
. "$(dirname "$0")/../lib/server.sh"

sock="$SRV_TMP/crescent.sock"
start_server --memory 256mb --unixsocket "$sock"

# --- one-shot commands (non-tty output is raw) ---
assert_eq "SET" "OK" "$(cli SET foo bar)"
assert_eq "GET" "bar" "$(cli GET foo)"
assert_eq "GET missing" "" "$(cli GET nosuchkey)"
assert_eq "GET missing --no-raw" "(nil)" "$(cli --no-raw GET nosuchkey)"
assert_eq "DEL" "(integer) 1" "$(cli --no-raw DEL foo)"
assert_eq "DEL again" "0" "$(cli DEL foo)"
assert_eq "EXISTS" "0" "$(cli EXISTS foo)"
assert_eq "INCR new" "1" "$(cli INCR counter)"
assert_eq "INCRBY" "(integer) 11" "$(cli --no-raw INCRBY counter 10)"
assert_eq "GET counter" '"11"' "$(cli --no-raw GET counter)"
assert_eq "TTL no expire" "-1" "$(cli TTL counter)"
assert_eq "TTL missing" "-2" "$(cli TTL nosuchkey)"
assert_eq "EXPIRE" "1" "$(cli EXPIRE counter 100)"
assert_eq "EXPIRE missing" "0" "$(cli EXPIRE nosuchkey 100)"
ttl=$(cli TTL counter)
[ "$ttl" = 100 ] || [ "$ttl" = 99 ] || fail "TTL after EXPIRE 100: expected 100 or 99, got '$ttl'"
assert_eq "SET EX" "OK" "$(cli SET tk v EX 50)"
ttl=$(cli TTL tk)
[ "$ttl" = 50 ] || [ "$ttl" = 49 ] || fail "TTL after SET EX 50: expected 50 or 49, got '$ttl'"
assert_eq "PERSIST" "1" "$(cli PERSIST tk)"
assert_eq "TTL after PERSIST" "-1" "$(cli TTL tk)"
cli SET foo bar >/dev/null
assert_eq "INCR on non-integer" "ERR value is not an integer or out of range" \
    "$(cli INCR foo 2>&1 | sed '/^$/d')"
assert_eq "INCR on non-integer --no-raw" "(error) ERR value is not an integer or out of range" \
    "$(cli --no-raw INCR foo 2>&1)"
assert_eq "unknown command" \
    "(error) ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' 'b' " \
    "$(cli --no-raw NOSUCHCMD a b 2>&1)"
assert_eq "wrong arity" "(error) ERR wrong number of arguments for 'get' command" \
    "$(cli --no-raw GET 2>&1)"
assert_eq "MSET" "OK" "$(cli MSET k1 v1 k2 v2 k3 v3)"
assert_eq "MGET" "$(printf '1) "v1"\n2) (nil)\n3) "v3"')" "$(cli --no-raw MGET k1 nokey k3)"
assert_eq "PING" "PONG" "$(cli PING)"
assert_eq "PING msg" "hello world" "$(cli PING 'hello world')"
assert_eq "ECHO" "x y" "$(cli ECHO 'x y')"

# -x: the last argument comes from stdin, binary-safe (NUL, CR, LF).
assert_eq "SET -x" "OK" "$(printf 'hello\0world\r\n' | cli -x SET bin)"
assert_eq "STRLEN bin" "13" "$(cli STRLEN bin)"
assert_eq "GET bin bytes" "$(printf 'hello\0world\r\n\n' | od -An -c)" \
    "$(cli --raw GET bin | od -An -c)"

# --- --pipe: 100,000 SET commands in RESP, all acknowledged ---
cli FLUSHALL >/dev/null
pipein="$SRV_TMP/pipe.txt"
awk 'BEGIN { for (i = 0; i < 100000; i++) { k = "key:" i; v = "value:" i;
    printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, length(v), v } }' \
    >"$pipein"
out=$(timeout 120 redis-cli -h 127.0.0.1 -p "$SERVER_PORT" --pipe <"$pipein" 2>&1)
echo "$out"
echo "$out" | grep -qx 'errors: 0, replies: 100000' ||
    fail "--pipe: expected 'errors: 0, replies: 100000', got: $out"
assert_eq "DBSIZE after --pipe" "100000" "$(cli DBSIZE)"
assert_eq "GET key:0" "value:0" "$(cli GET key:0)"
assert_eq "GET key:99999" "value:99999" "$(cli GET key:99999)"
assert_eq "GET key:54321" "value:54321" "$(cli GET key:54321)"

# --- key-space tools: --scan, --bigkeys, --memkeys, --stat, --latency-history, -r ---
assert_eq "--scan count" "100000" "$(cli --scan | sort -u | wc -l)"
assert_eq "--scan --pattern" "11111" "$(cli --scan --pattern 'key:1*' | sort -u | wc -l)"
assert_eq "--scan --pattern exact" "key:77777" "$(cli --scan --pattern 'key:77777')"
cli SET big:one "$(head -c 3000 /dev/zero | tr '\0' a)" >/dev/null
out=$(timeout 120 redis-cli -h 127.0.0.1 -p "$SERVER_PORT" --bigkeys 2>&1)
echo "$out" | tail -9
echo "$out" | grep -qF "Biggest string found '\"big:one\"' has 3000 bytes" ||
    fail "--bigkeys: no 'Biggest string found '\"big:one\"' has 3000 bytes'"
echo "$out" | grep -qF "100001 strings with 1091890 bytes (100.00% of keys" ||
    fail "--bigkeys: no '100001 strings with 1091890 bytes (100.00% of keys'"
out=$(timeout 120 redis-cli -h 127.0.0.1 -p "$SERVER_PORT" --memkeys 2>&1)
echo "$out" | grep -qE "^100001 strings with [1-9][0-9]* bytes \(100.00% of keys" ||
    fail "--memkeys: no '100001 strings with N bytes (100.00% of keys' line; got: $(echo "$out" |
        tail -8)"
# --stat prints a header, then one row per interval: keys mem clients blocked requests conns.
out=$(timeout 3 stdbuf -oL redis-cli -h 127.0.0.1 -p "$SERVER_PORT" --stat -i 0.5 2>&1)
echo "$out" | head -3
row=$(echo "$out" | sed -n 3p)
[ "$(echo "$row" | awk '{ print $1 }')" = 100001 ] || fail "--stat: keys column is not 100001: $row"
echo "$row" | awk '{ exit !($3 >= 1 && $5 > 0) }' || fail "--stat: clients/requests not counted: $row"
out=$(timeout 3 stdbuf -oL redis-cli -h 127.0.0.1 -p "$SERVER_PORT" --latency-history -i 1 2>&1)
echo "$out" | awk 'NF == 4 && $4 > 0 { ok = 1 } END { exit !ok }' ||
    fail "--latency-history: no 'min max avg count' line with samples: $out"
assert_eq "-r 3 INCR" "$(printf '1\n2\n3')" "$(cli -r 3 INCR repeated)"
assert_eq "INFO keyspace" "db0:keys=100002,expires=0,avg_ttl=0" \
    "$(cli INFO keyspace | tr -d '\r' | grep '^db0:')"

# --- RESP3: HELLO 3 answers a map with Redis's seven fields ---
hello=$(cli -3 --no-raw HELLO 3)
echo "$hello"
keys=$(echo "$hello" | sed -n 's/^ *[0-9]*# "\([a-z]*\)" => .*/\1/p' | tr '\n' ' ')
assert_eq "HELLO 3 map keys" "server version proto id mode role modules " "$keys"
echo "$hello" | grep -qx '3# "proto" => (integer) 3' || fail "HELLO 3: proto is not (integer) 3"
echo "$hello" | grep -qE '^4# "id" => \(integer\) [0-9]+$' || fail "HELLO 3: id is not an integer"
echo "$hello" | grep -qx '5# "mode" => "standalone"' || fail "HELLO 3: mode is not standalone"
echo "$hello" | grep -qx '6# "role" => "master"' || fail "HELLO 3: role is not master"
echo "$hello" | grep -qE '^1# "server" => "[^"]+"$' || fail "HELLO 3: server is not a string"
# Raw output of the same map: key and value on one line.
assert_eq "HELLO 3 raw proto" "proto 3" "$(cli -3 HELLO 3 | grep '^proto')"
assert_eq "RESP3 nil" "(nil)" "$(cli -3 --no-raw GET nosuchkey)"
assert_eq "RESP3 MGET" "$(printf '1) "value:1"\n2) (nil)')" "$(cli -3 --no-raw MGET key:1 nokey)"
assert_eq "RESP3 INCR" "(integer) 1" "$(cli -3 --no-raw INCR r3counter)"

# --- commands fed on stdin (interactive-style use; redis-cli sends COMMAND DOCS first) ---
out=$(printf 'SET a 1\nGET a\nINCR a\nGET nosuchkey\nDEL a\nSET "b c" "d e"\nGET "b c"\n' | cli)
assert_eq "stdin commands" "$(printf 'OK\n1\n2\n\n1\nOK\nd e')" "$out"
out=$(printf 'SET a 1\nINCR a\nGET nosuchkey\n' | cli --no-raw)
assert_eq "stdin commands --no-raw" "$(printf 'OK\n(integer) 2\n(nil)')" "$out"
out=$(printf 'HELLO 3\nGET a\n' | cli -3 --no-raw | tail -1)
assert_eq "stdin -3" '"2"' "$out"

# --- interactive mode on a pseudo-terminal (script(1), TERM=dumb so linenoise asks nothing) ---
# tty_cli ARGS... < lines: types each line into an interactive redis-cli, prints the session.
tty_cli() {
    local line
    {
        sleep 0.5
        while IFS= read -r line; do
            printf '%s\r' "$line"
            sleep 0.3
        done
        printf 'quit\r'
        sleep 0.5
    } | TERM=dumb timeout 30 script -qec "redis-cli -h 127.0.0.1 -p $SERVER_PORT $*" /dev/null |
        tr -d '\r'
}
cli DEL ia ih >/dev/null
out=$(printf 'SET ia 1\nGET ia\nINCR ia\nHGETALL nokey\nGET nokey\nHSET ih f v\n' | tty_cli)
echo "$out"
want="127.0.0.1:$SERVER_PORT> SET ia 1
OK
127.0.0.1:$SERVER_PORT> GET ia
\"1\"
127.0.0.1:$SERVER_PORT> INCR ia
(integer) 2
127.0.0.1:$SERVER_PORT> HGETALL nokey
(empty array)
127.0.0.1:$SERVER_PORT> GET nokey
(nil)
127.0.0.1:$SERVER_PORT> HSET ih f v
(integer) 1
127.0.0.1:$SERVER_PORT> quit"
assert_eq "interactive session" "$want" "$out"
out=$(printf 'HGETALL ih\n' | tty_cli -3)
assert_eq "interactive RESP3 map" "127.0.0.1:$SERVER_PORT> HGETALL ih
1# \"f\" => \"v\"
127.0.0.1:$SERVER_PORT> quit" "$out"

# --- the Unix socket ---
assert_eq "unix socket PING" "PONG" "$(redis-cli -s "$sock" PING)"
assert_eq "unix socket GET" "value:7" "$(redis-cli -s "$sock" GET key:7)"
assert_eq "unix socket SET" "OK" "$(redis-cli -s "$sock" SET viasock yes)"
assert_eq "TCP sees unix write" "yes" "$(cli GET viasock)"

# --- requirepass / AUTH ---
start_server --memory 64mb --requirepass s3cret
assert_eq "NOAUTH" "(error) NOAUTH Authentication required." "$(cli --no-raw GET x 2>&1)"
assert_eq "AUTH wrong" \
    "(error) WRONGPASS invalid username-password pair or user is disabled." \
    "$(cli --no-raw AUTH nope 2>&1)"
assert_eq "-a PING" "PONG" "$(cli -a s3cret --no-auth-warning PING)"
assert_eq "-a SET" "OK" "$(cli -a s3cret --no-auth-warning SET x 1)"
assert_eq "AUTH then GET on stdin" "$(printf 'OK\n1')" "$(printf 'AUTH s3cret\nGET x\n' | cli)"
echo "redis_cli: all checks passed"
